package org.foldcp.spark.barrier;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;

/**
 * The agreement every rank checks before any reshard: all ranks apply the same layers with
 * bit-identical weights, and they hold the same complexes, with the same N and D, so that they
 * run the same sequence of collective all-to-alls. A rank whose tile of a complex is all
 * padding (small N on a large grid) holds no tile of it: it joins that complex with a masked
 * tile of its own. Any disagreement fails on every rank, naming the rank and the value.
 */
public final class TeamWorkload {
  private TeamWorkload() {}

  /** The complexes the team runs, sorted by id, once the announcements agree. */
  public static List<ComplexShape> agree(List<RankAnnouncement> team, CpGrid grid) {
    checkSameLayers(team);
    Map<String, ComplexShape> union = new TreeMap<>();
    Map<String, Integer> firstHolder = new TreeMap<>();
    for (RankAnnouncement r : team) {
      for (ComplexShape c : r.complexes()) {
        ComplexShape seen = union.get(c.id());
        if (seen == null) {
          union.put(c.id(), c);
          firstHolder.put(c.id(), r.rank());
        } else if (!seen.equals(c)) {
          throw InvalidInputException.of("(N, D) of complex '" + c.id() + "' on rank " + r.rank(),
              "(" + c.nTokens() + ", " + c.dim() + ")", "every rank must see the same N and D for a complex; rank "
                  + firstHolder.get(c.id()) + " has (" + seen.nTokens() + ", " + seen.dim() + ")");
        }
      }
    }
    for (ComplexShape c : union.values()) {
      for (RankAnnouncement r : team) {
        boolean real = c.hasRealPositions(grid, r.rank());
        if (real && !r.holds(c.id())) {
          throw InvalidInputException.of("complex set of rank " + r.rank(), "no tile of complex " + c,
              "every rank must hold the complexes of the others (rank " + firstHolder.get(c.id()) + " holds this one),"
                  + " and rank " + r.rank() + "'s tile " + c.layout(grid).tile(r.rank()) + " of it holds real positions:"
                  + " the input tiles must cover the whole N x N grid of every complex");
        }
        if (!real && r.holds(c.id())) {
          throw new IllegalStateException("rank " + r.rank() + " holds a tile of complex " + c
              + " although its layout tile " + c.layout(grid).tile(r.rank()) + " is all padding");
        }
      }
    }
    return new ArrayList<>(union.values());
  }

  private static void checkSameLayers(List<RankAnnouncement> team) {
    List<RankAnnouncement.LayerPrint> ref = team.get(0).layers();
    for (RankAnnouncement r : team) {
      List<RankAnnouncement.LayerPrint> ls = r.layers();
      InvalidInputException.require(ls.size() == ref.size(), "layer count on rank " + r.rank(), ls.size(),
          "every rank must apply the stack of rank 0 (" + ref.size() + " layers)");
      for (int l = 0; l < ls.size(); l++) {
        InvalidInputException.require(ls.get(l).spec().equals(ref.get(l).spec()),
            "spec of layer " + l + " on rank " + r.rank(), ls.get(l).spec(),
            "every rank must run the spec of rank 0 (" + ref.get(l).spec() + ")");
        InvalidInputException.require(ls.get(l).weightDigest().equals(ref.get(l).weightDigest()),
            "weight digest of layer " + l + " on rank " + r.rank(), ls.get(l).weightDigest(),
            "every rank must hold bit-identical weights; rank 0 has " + ref.get(l).weightDigest());
      }
    }
  }
}
