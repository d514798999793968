package org.foldcp.ops.a2a;

import org.foldcp.ops.InvalidInputException;

/**
 * The shape of a sequence-parallel heads all-to-all over {@code world} ranks. Before a scatter
 * (after a gather) every rank holds {@code [batch, seqLocal, heads, headDim]}: all heads of its
 * own {@code seqLocal} positions. After a scatter every rank holds
 * {@code [batch, seq(), headsLocal(), headDim]}: its {@code heads/world} heads of all positions.
 * Row-major, contiguous. Odd sizes are fine; only the heads must split evenly.
 */
public record HeadsShape(int batch, int seqLocal, int heads, int headDim, int world) {
  /** The largest Java array the VMs we run on allocate reliably. */
  static final int MAX_ELEMENTS = Integer.MAX_VALUE - 8;

  public HeadsShape {
    InvalidInputException.require(batch >= 1, "B", batch, "must be >= 1");
    InvalidInputException.require(seqLocal >= 1, "S_local", seqLocal, "must be >= 1");
    InvalidInputException.require(heads >= 1, "H", heads, "must be >= 1");
    InvalidInputException.require(headDim >= 1, "Dh", headDim, "must be >= 1");
    InvalidInputException.require(world >= 1, "W", world, "must be >= 1");
    InvalidInputException.require(heads % world == 0, "H", heads,
        "must be divisible by the world size W = " + world + " (each rank owns H/W heads after the scatter)");
    // every index below is an int; world*seqLocal <= heads*seqLocal (heads >= world), so this bounds S too
    long elements = (long) batch * seqLocal * heads * headDim;
    InvalidInputException.require(elements <= MAX_ELEMENTS, "elements per rank B*S_local*H*Dh", elements,
        "must be at most " + MAX_ELEMENTS + " (one Java array per rank)");
  }

  /** The global sequence length S = W * S_local. */
  public int seq() {
    return world * seqLocal;
  }

  /** Heads each rank owns after the scatter, H/W. */
  public int headsLocal() {
    return heads / world;
  }

  /** Elements each rank holds: the same before and after, B*S_local*H*Dh = B*S*(H/W)*Dh. */
  public int elements() {
    return batch * seqLocal * heads * headDim;
  }

  /** Elements one rank sends one rank (itself included), in either direction: elements() / W. */
  public int blockElements() {
    return elements() / world;
  }

  @Override
  public String toString() {
    return "heads shape (B = " + batch + ", S_local = " + seqLocal + ", H = " + heads + ", Dh = " + headDim
        + ", W = " + world + ")";
  }
}
