package org.foldcp.ops.gpu.cp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.foldcp.ops.InvalidInputException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The parts of the NVSHMEM team that need no GPU: finding the library, the file rendezvous, the settings. */
class TeamPiecesTest {

  @Test
  void findsTheHostLibraryUnderAConfiguredHomeFirst(@TempDir Path dir) throws Exception {
    Path lib = dir.resolve("home/lib");
    Files.createDirectories(lib);
    Files.write(lib.resolve(NvshmemLibraries.HOST_LIBRARY), new byte[] {1});
    Path other = dir.resolve("env/lib");
    Files.createDirectories(other);
    Files.write(other.resolve(NvshmemLibraries.HOST_LIBRARY), new byte[] {1});
    NvshmemLibraries.Found f = NvshmemLibraries.find(dir.resolve("home").toString(),
        Map.of("NVSHMEM_HOME", dir.resolve("env").toString()), "", false);
    assertEquals(lib.resolve(NvshmemLibraries.HOST_LIBRARY).toAbsolutePath(), f.hostLibrary());
    NvshmemLibraries.Found viaEnv = NvshmemLibraries.find("", Map.of("NVSHMEM_HOME", dir.resolve("env").toString()), "",
        false);
    assertEquals(other.resolve(NvshmemLibraries.HOST_LIBRARY).toAbsolutePath(), viaEnv.hostLibrary());
  }

  @Test
  void findsItOnTheLibraryPathAndListsEveryPlaceWhenMissing(@TempDir Path dir) throws Exception {
    Files.write(dir.resolve(NvshmemLibraries.HOST_LIBRARY), new byte[] {1});
    NvshmemLibraries.Found f = NvshmemLibraries.find(null, Map.of(), "/nonexistent:" + dir, false);
    assertEquals(dir.resolve(NvshmemLibraries.HOST_LIBRARY).toAbsolutePath(), f.hostLibrary());

    NvshmemLibraries.Found none = NvshmemLibraries.find("/no/such/home", Map.of("NVSHMEM_HOME", "/no/env"),
        "/no/libpath", false);
    assertNull(none.hostLibrary());
    String m = none.failure();
    assertTrue(m.contains(NvshmemLibraries.HOST_LIBRARY) && m.contains("/no/such/home") && m.contains("/no/env")
        && m.contains("/no/libpath") && m.contains("nvidia-nvshmem-cu13") && m.contains("spark.foldcp.nvshmem.home"), m);
  }

  @Test
  void fileRendezvousGathersInRankOrderRoundAfterRound(@TempDir Path dir) throws Exception {
    int size = 3;
    ExecutorService pool = Executors.newFixedThreadPool(size);
    try {
      List<Future<List<List<byte[]>>>> ranks = new ArrayList<>();
      for (int r = 0; r < size; r++) {
        int rank = r;
        ranks.add(pool.submit(() -> {
          FileRendezvous rv = new FileRendezvous(dir, rank, size);
          List<List<byte[]>> rounds = new ArrayList<>();
          for (int k = 0; k < 2; k++) {
            rounds.add(rv.allGather(("r" + rank + "k" + k).getBytes(StandardCharsets.UTF_8), Duration.ofSeconds(20)));
          }
          return rounds;
        }));
      }
      for (Future<List<List<byte[]>>> f : ranks) {
        List<List<byte[]>> rounds = f.get();
        for (int k = 0; k < 2; k++) {
          for (int r = 0; r < size; r++) {
            assertArrayEquals(("r" + r + "k" + k).getBytes(StandardCharsets.UTF_8), rounds.get(k).get(r));
          }
        }
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void fileRendezvousNamesTheRanksThatNeverCame(@TempDir Path dir) {
    FileRendezvous rv = new FileRendezvous(dir, 0, 3);
    TeamException e = assertThrows(TeamException.class, () -> rv.allGather(new byte[] {7}, Duration.ofMillis(200)));
    assertTrue(e.getMessage().contains("rank(s) [1, 2] of 3") && e.getMessage().contains("200 ms"), e.getMessage());
  }

  @Test
  void settingsAreCheckedWithTheirRule() {
    assertEquals(StoreRoute.PUT, StoreRoute.parse(" Put "));
    InvalidInputException bad = assertThrows(InvalidInputException.class, () -> StoreRoute.parse("nvlink"));
    assertTrue(bad.getMessage().contains("'nvlink'") && bad.getMessage().contains("auto, peer or put"), bad.getMessage());
    InvalidInputException heap = assertThrows(InvalidInputException.class,
        () -> new NvshmemTeam.Spec(0, 1L << 20, Duration.ofSeconds(5), null, "x"));
    assertTrue(heap.getMessage().contains("64 MiB"), heap.getMessage());
    assertThrows(InvalidInputException.class, () -> new NvshmemTeam.Spec(0, 1L << 30, Duration.ZERO, null, "x"));
    assertThrows(InvalidInputException.class, () -> new NvshmemTeam.Spec(-1, 1L << 30, Duration.ofSeconds(1), null, "x"));
    assertThrows(InvalidInputException.class, () -> new FileRendezvous(Path.of("."), 3, 3));
  }

  @Test
  void aCaseLineCarriesItsHaltAndTheHaltArmsOnlyOnItsRankAfterItsForward() {
    var plain = new CpCase("a", "2x1", org.foldcp.ops.layer.Direction.OUTGOING, 16, 32, 1, true, false, 1,
        StoreRoute.AUTO, 5, -1, 7);
    var halting = plain.halting(new CpCase.Halt(1, 2, 1_000));
    assertEquals(plain, CpCase.parse(plain.line()));
    assertEquals(halting, CpCase.parse(halting.line()), halting.line());
    assertEquals(CpCase.Halt.NONE, plain.halt());
    assertEquals(halting.halt(), halting.unfused("b").halt(), "the unfused twin keeps the halt");
    var wide = plain.withHidden(64);
    assertEquals(wide, CpCase.parse(wide.line()), wide.line());
    assertEquals(32, plain.stack(0).hidden(), "H = D unless a case says otherwise");
    assertEquals(64, wide.unfused("c").stack(1).hidden(), "the hidden width reaches every rank's layers");
    assertTrue(halting.halt().armsAt(1, 2), "rank 1 after forward 2");
    assertTrue(!halting.halt().armsAt(0, 2) && !halting.halt().armsAt(1, 1) && !halting.halt().armsAt(1, 3),
        "only rank 1, only once forward 2 returned");
    for (int rank = 0; rank < 2; rank++) {
      for (int done = 0; done < 8; done++) {
        assertTrue(!CpCase.Halt.NONE.armsAt(rank, done), "NONE never arms (rank " + rank + ", " + done + " forwards)");
      }
    }
  }

  @Test
  void theStackDigestCoversWeightsAndWhatTheKernelsBakeIn() {
    var a = new CpCase("a", "2x1", org.foldcp.ops.layer.Direction.OUTGOING, 16, 32, 1, false, false, 1,
        StoreRoute.AUTO, 5, -1, 1);
    var skewed = new CpCase("a", "2x1", org.foldcp.ops.layer.Direction.OUTGOING, 16, 32, 1, false, false, 1,
        StoreRoute.AUTO, 5, 1, 1);
    var incoming = new CpCase("a", "2x1", org.foldcp.ops.layer.Direction.INCOMING, 16, 32, 1, false, false, 1,
        StoreRoute.AUTO, 5, -1, 1);
    byte[] d0 = a.stack(0).digest();
    assertEquals(32, d0.length);
    assertArrayEquals(d0, a.stack(1).digest());
    assertTrue(!java.util.Arrays.equals(d0, skewed.stack(1).digest()), "other weights, other digest");
    assertTrue(!java.util.Arrays.equals(d0, incoming.stack(0).digest()), "other direction, other digest");
  }
}
