package org.foldcp.ops.gpu.cp;

import java.util.ArrayList;
import java.util.List;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.gpu.GpuTests;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.tensor.PairTensor;

/**
 * One case the rank processes of a team test run: the same inputs and layers are made from the
 * seed on every rank and in the test process. One line of text each, so a case list travels to
 * the rank processes as a file.
 *
 * @param layers  1: one layer of {@code direction}; 3: a residual stack out, in, out
 * @param skewRank  a rank that builds its weights from another seed (-1: none): the test of
 *     weights that differ across ranks
 * @param repeats  forwards in a row (the memory test; the fault tests, in which a rank dies among them)
 * @param reshard  fused into the epilogues, or the separate all-to-all
 * @param halt  a rank that dies during the forwards ({@link Halt#NONE}: none)
 * @param hidden  the layers' hidden width H (the channels the ranks split): {@code dim} unless {@link #withHidden}
 */
record CpCase(String name, String grid, Direction direction, int n, int dim, int batch, boolean mask,
    boolean biases, int layers, StoreRoute route, long seed, int skewRank, int repeats, Reshard reshard, Halt halt,
    int hidden) {

  CpCase(String name, String grid, Direction direction, int n, int dim, int batch, boolean mask, boolean biases,
      int layers, StoreRoute route, long seed, int skewRank, int repeats) {
    this(name, grid, direction, n, dim, batch, mask, biases, layers, route, seed, skewRank, repeats, Reshard.FUSED,
        Halt.NONE, dim);
  }

  /**
   * Rank {@code rank} of a team dies abruptly (Runtime.halt, like a killed executor JVM: no
   * cleanup, no finalize) once it has run {@code forwards} forwards of the case: at once, between
   * that forward and the next (its peers enter the next one alone), or, with {@code delayMs} > 0,
   * from a daemon thread that many ms later, wherever its forwards then are (kernels and signal
   * waits in flight). One line field: RANK:FORWARDS:DELAY_MS.
   */
  record Halt(int rank, int forwards, long delayMs) {
    static final Halt NONE = new Halt(-1, 0, 0);

    /** Whether rank {@code me}, having run {@code done} forwards, arms this halt now. */
    boolean armsAt(int me, int done) {
      return me == rank && done == forwards;
    }

    String text() {
      return rank + ":" + forwards + ":" + delayMs;
    }

    static Halt parse(String text) {
      String[] f = text.split(":");
      return new Halt(Integer.parseInt(f[0]), Integer.parseInt(f[1]), Long.parseLong(f[2]));
    }
  }

  /** The same case with the reshards unfused, under another name. */
  CpCase unfused(String newName) {
    return new CpCase(newName, grid, direction, n, dim, batch, mask, biases, layers, route, seed, skewRank, repeats,
        Reshard.UNFUSED, halt, hidden);
  }

  /** The same case with rank {@code h.rank()} dying as {@code h} says. */
  CpCase halting(Halt h) {
    return new CpCase(name, grid, direction, n, dim, batch, mask, biases, layers, route, seed, skewRank, repeats,
        reshard, h, hidden);
  }

  /** The same case with layers of hidden width {@code h} (a, b and z of h channels, split over the ranks). */
  CpCase withHidden(int h) {
    return new CpCase(name, grid, direction, n, dim, batch, mask, biases, layers, route, seed, skewRank, repeats,
        reshard, halt, h);
  }

  String line() {
    return String.join(" ", name, grid, direction.name(), "" + n, "" + dim, "" + batch, "" + mask, "" + biases,
        "" + layers, route.name(), "" + seed, "" + skewRank, "" + repeats, reshard.name(), halt.text(), "" + hidden);
  }

  static CpCase parse(String line) {
    String[] f = line.trim().split(" ");
    return new CpCase(f[0], f[1], Direction.valueOf(f[2]), Integer.parseInt(f[3]), Integer.parseInt(f[4]),
        Integer.parseInt(f[5]), Boolean.parseBoolean(f[6]), Boolean.parseBoolean(f[7]), Integer.parseInt(f[8]),
        StoreRoute.valueOf(f[9]), Long.parseLong(f[10]), Integer.parseInt(f[11]), Integer.parseInt(f[12]),
        Reshard.valueOf(f[13]), Halt.parse(f[14]), Integer.parseInt(f[15]));
  }

  CpGrid cpGrid() {
    return CpGrid.parse(grid);
  }

  /**
   * The whole input (B, N, N, D): 12% masked plus an empty row and column per batch element when
   * masked. It depends on the shape and mask only (not on the weights seed), so cases of one
   * shape share it and the test makes it once.
   */
  PairTensor input() {
    return GpuTests.input(batch, n, dim, inputKey().hashCode() & 0x7fffffffL, mask);
  }

  /** Cases with equal keys have equal inputs. */
  String inputKey() {
    return batch + "x" + n + "x" + dim + (mask ? "m" : "");
  }

  /** Where the test leaves this case's tile of rank {@code rank} (the rank reads it instead of making the input). */
  String tileFile(int rank) {
    return "in-" + inputKey() + "-" + grid + "-" + rank + ".bin";
  }

  /** The layer stack as rank {@code rank} builds it. */
  LayerStack stack(int rank) {
    long s = rank == skewRank ? seed + 1_000_003L : seed;
    if (layers == 1) {
      return LayerStack.of(new TriMulLayer(TriMulSpec.of(direction), LayerWeights.random(dim, hidden, s + 17, biases)));
    }
    List<TriMulLayer> ls = new ArrayList<>();
    for (int l = 0; l < layers; l++) {
      Direction d = l % 2 == 0 ? Direction.OUTGOING : Direction.INCOMING;
      ls.add(new TriMulLayer(TriMulSpec.of(d, true), LayerWeights.random(dim, hidden, s + 17 + 7919L * l, biases)));
    }
    return new LayerStack(ls);
  }
}
