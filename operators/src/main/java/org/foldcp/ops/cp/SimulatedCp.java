package org.foldcp.ops.cp;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.tensor.PairTensor;

/**
 * A context-parallel team simulated inside one JVM: cp {@link CpRank}s on cp threads, each with
 * its own tile and its own copy of the weights, exchanging payloads through a
 * {@link LocalExchange}. It proves the decomposition and the index maps before any network or
 * GPU is involved: its result equals the single-rank CPU backend bit for bit.
 */
public final class SimulatedCp implements AutoCloseable {
  private static final long EXCHANGE_TIMEOUT_MS = 600_000;

  private final CpGrid grid;
  private final int threadsPerRank;
  private final ExecutorService ranks;
  private long tokenToChannelBytes;
  private long channelToTokenBytes;

  public SimulatedCp(CpGrid grid, int threadsPerRank) {
    this.grid = grid;
    this.threadsPerRank = threadsPerRank;
    this.ranks = Executors.newFixedThreadPool(grid.size(), r -> {
      Thread t = new Thread(r, "simulated-cp-rank");
      t.setDaemon(true);
      return t;
    });
  }

  /** Every rank applies the same stack. */
  public PairTensor forward(PairTensor x, LayerStack stack) {
    return forward(x, Collections.nCopies(grid.size(), stack));
  }

  /**
   * Each rank brings its own copy of the stack, as separate processes would; the copies must be
   * bit-identical (checked by digest before anything runs).
   */
  public PairTensor forward(PairTensor x, List<LayerStack> perRank) {
    checkSameWeights(perRank, grid);
    CpuTriMul.validate(x, perRank.get(0).dim());
    ShardLayout layout = new ShardLayout(grid, x.n(), x.dim(), perRank.get(0).hidden());
    PairTensor[] tiles = Sharding.shard(x, layout);
    LocalExchange exchange = new LocalExchange(grid.size(), EXCHANGE_TIMEOUT_MS);
    List<Future<PairTensor>> results = new ArrayList<>();
    List<CpRank> members = new ArrayList<>();
    for (int r = 0; r < grid.size(); r++) {
      CpRank rank = new CpRank(layout, exchange.endpoint(r), threadsPerRank);
      members.add(rank);
      PairTensor tile = tiles[r];
      LayerStack stack = perRank.get(r);
      results.add(ranks.submit(() -> rank.forward(tile, stack)));
    }
    PairTensor[] out = new PairTensor[grid.size()];
    tokenToChannelBytes = 0;
    channelToTokenBytes = 0;
    try {
      for (int r = 0; r < out.length; r++) {
        out[r] = await(results.get(r), r);
        tokenToChannelBytes += members.get(r).tokenToChannelBytes();
        channelToTokenBytes += members.get(r).channelToTokenBytes();
      }
    } finally {
      members.forEach(CpRank::close);
    }
    return Sharding.unshard(out, layout, x.hasMask());
  }

  private static PairTensor await(Future<PairTensor> f, int rank) {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for simulated rank " + rank, e);
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof RuntimeException) {
        throw (RuntimeException) c;
      }
      throw new IllegalStateException("simulated rank " + rank + " failed: " + c, c);
    }
  }

  /** Bytes that crossed between different ranks in the last forward, first reshard (a and b). */
  public long tokenToChannelBytes() { return tokenToChannelBytes; }

  /** Bytes that crossed between different ranks in the last forward, second reshard (z). */
  public long channelToTokenBytes() { return channelToTokenBytes; }

  /** Fails unless every rank's stack has the same layers with bit-identical weights. */
  public static void checkSameWeights(List<LayerStack> perRank, CpGrid grid) {
    InvalidInputException.require(perRank.size() == grid.size(), "number of per-rank stacks", perRank.size(),
        "must equal cp = " + grid.size());
    LayerStack ref = perRank.get(0);
    for (int r = 1; r < perRank.size(); r++) {
      LayerStack s = perRank.get(r);
      InvalidInputException.require(s.size() == ref.size(), "layer count on rank " + r, s.size(),
          "every rank must run the same stack as rank 0 (" + ref.size() + " layers)");
      for (int l = 0; l < s.size(); l++) {
        TriMulLayer a = ref.get(l);
        TriMulLayer b = s.get(l);
        InvalidInputException.require(a.spec().equals(b.spec()), "spec of layer " + l + " on rank " + r, b.spec(),
            "every rank must run the spec of rank 0 (" + a.spec() + ")");
        InvalidInputException.require(a.weights().digest().equals(b.weights().digest()),
            "weight digest of layer " + l + " on rank " + r, b.weights().digest(),
            "every rank must hold bit-identical weights; rank 0 has " + a.weights().digest());
      }
    }
  }

  @Override
  public void close() {
    ranks.shutdownNow();
  }
}
