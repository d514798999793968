package org.foldcp.ops.cp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class LocalExchangeTest {
  @Test
  void everyRankReceivesWhatEachPeerSentIt() throws Exception {
    int cp = 3;
    LocalExchange ex = new LocalExchange(cp, 10_000);
    ExecutorService pool = Executors.newFixedThreadPool(cp);
    try {
      List<Future<float[][]>> got = new ArrayList<>();
      for (int r = 0; r < cp; r++) {
        ReshardTransport t = ex.endpoint(r);
        got.add(pool.submit(() -> {
          float[][] out = new float[cp][];
          for (int dst = 0; dst < cp; dst++) {
            out[dst] = new float[] {t.rank() * 10 + dst, dst};
          }
          float[][] first = t.allToAll(out);
          t.allToAll(new float[cp][1]); // a second round reuses the slots
          assertEquals(4L * 2 * (cp - 1), t.bytesSent() - 4L * (cp - 1));
          return first;
        }));
      }
      for (int r = 0; r < cp; r++) {
        float[][] in = got.get(r).get(10, TimeUnit.SECONDS);
        for (int src = 0; src < cp; src++) {
          assertArrayEquals(new float[] {src * 10 + r, r}, in[src]);
        }
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aFailedRankReleasesItsPeersWithTheCause() throws Exception {
    int cp = 3;
    LocalExchange ex = new LocalExchange(cp, 60_000);
    ExecutorService pool = Executors.newFixedThreadPool(cp);
    try {
      List<Future<?>> waiting = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        ReshardTransport t = ex.endpoint(r);
        waiting.add(pool.submit(() -> t.allToAll(new float[cp][1])));
      }
      Thread.sleep(100);
      ex.endpoint(2).abort(new IllegalStateException("rank 2 ran out of memory"));
      for (Future<?> f : waiting) {
        ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
            () -> f.get(10, TimeUnit.SECONDS));
        assertTrue(e.getCause().getMessage().contains("a peer failed"), e.getCause().getMessage());
      }
      // a rank arriving after the failure fails at once as well, naming the cause
      IllegalStateException late = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
          () -> ex.endpoint(0).allToAll(new float[cp][1]));
      assertTrue(late.getMessage().contains("rank 2 ran out of memory"), late.getMessage());
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aMissingRankMakesThePeersTimeOutInsteadOfHanging() {
    LocalExchange ex = new LocalExchange(2, 200);
    IllegalStateException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
        () -> ex.endpoint(0).allToAll(new float[2][1]));
    assertTrue(e.getMessage().contains("waited more than 200 ms"), e.getMessage());
  }
}
