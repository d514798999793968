package org.foldcp.spark.barrier;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.CpRank;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.cp.Sharding;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;

/** One random complex and stack sharded for a 1-D CP team of threads, checked against the cp = 1 forward. */
record CpCase(PairTensor x, LayerStack stack, ShardLayout layout, PairTensor[] tiles) {
  static CpCase of(int ranks, int n, int d, long seed) {
    PairTensor x = PairTensor.random(1, n, d, seed, 0.15);
    LayerStack stack = LayerStack.randomAlternating(2, d, seed + 1, true);
    ShardLayout layout = new ShardLayout(CpGrid.oneD(ranks), n, d);
    return new CpCase(x, stack, layout, Sharding.shard(x, layout));
  }

  /** Rank {@code rank}'s output tile, its reshards over {@code transport}. */
  PairTensor forward(int rank, TcpTransport transport) {
    try (CpRank cp = new CpRank(layout, transport, 1)) {
      return cp.forward(tiles[rank], stack);
    }
  }

  /** The team's tiles, pasted together, equal the single-rank forward bit for bit. */
  void assertEqualsReference(PairTensor[] out) {
    try (CpuTriMul cpu = new CpuTriMul(1)) {
      assertTrue(Sharding.unshard(out, layout, true).sameAs(cpu.forward(x, stack)),
          "the team's result equals the single-rank reference");
    }
  }
}
