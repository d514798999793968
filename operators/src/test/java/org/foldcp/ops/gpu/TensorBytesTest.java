package org.foldcp.ops.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.Test;

/**
 * A tile's bytes cut into blocks whose edges fall anywhere in a row, as the pinned pool cuts them
 * (here over plain malloc'd memory): the values come back bit for bit, the mask as its 0/1 bytes
 * in row-major order, ones where the tensor has no mask.
 */
class TensorBytesTest {
  /** Copies {@code t}'s values out in blocks of {@code block} bytes, back in blocks of another size, into a new tensor. */
  private static PairTensor roundTrip(PairTensor t, long block, long backBlock) {
    long bytes = TensorBytes.valueBytes(t);
    long raw = HostCopy.allocateRaw(bytes);
    try {
      for (long off = 0; off < bytes; off += block) {
        TensorBytes.copyValues(t, off, raw + off, Math.min(block, bytes - off));
      }
      PairTensor back = PairTensor.zeros(t.batch(), t.rows(), t.cols(), t.dim());
      for (long off = 0; off < bytes; off += backBlock) {
        TensorBytes.takeValues(back, off, raw + off, Math.min(backBlock, bytes - off));
      }
      return back;
    } finally {
      HostCopy.freeRaw(raw);
    }
  }

  @Test
  void valuesSurviveBlocksThatCutRowsAnywhere() {
    PairTensor t = PairTensor.random(2, 7, 32, 11, 0.0); // rows of 7 * 32 * 2 = 448 bytes, 2 batches
    PairTensor tile = PairTensor.zeros(2, 5, 7, 32);
    for (int b = 0; b < 2; b++) {
      for (int i = 0; i < 5; i++) {
        System.arraycopy(t.row(b, i), 0, tile.row(b, i), 0, 7 * 32);
      }
    }
    for (long[] blocks : new long[][] {{448, 448}, {1000, 7}, {2, 4096}, {TensorBytes.valueBytes(tile), 333}}) {
      PairTensor back = roundTrip(tile, blocks[0], blocks[1]);
      assertTrue(back.sameAs(tile), "blocks of " + blocks[0] + " out and " + blocks[1] + " back");
    }
  }

  @Test
  void theMaskIsItsBytesInRowOrderAndOnesWithoutAMask() {
    PairTensor t = PairTensor.zeros(2, 3, 4, 32);
    byte[][] mask = new byte[6][4];
    for (int r = 0; r < 6; r++) {
      for (int j = 0; j < 4; j++) {
        mask[r][j] = (byte) ((r + j) % 3 == 0 ? 0 : 1);
      }
    }
    t.setMask(mask);
    long bytes = TensorBytes.maskBytes(t);
    assertEquals(24, bytes);
    byte[] got = new byte[(int) bytes];
    long raw = HostCopy.allocateRaw(bytes);
    try {
      for (long off = 0; off < bytes; off += 5) { // blocks of 5: edges inside rows of 4
        TensorBytes.copyMask(t, off, raw + off, Math.min(5, bytes - off));
      }
      HostCopy.fromAddress(raw, got, 0, bytes);
      byte[] want = new byte[24];
      for (int r = 0; r < 6; r++) {
        for (int j = 0; j < 4; j++) {
          want[r * 4 + j] = mask[r][j];
        }
      }
      assertArrayEquals(want, got);

      PairTensor unmasked = PairTensor.zeros(1, 3, 4, 32);
      assertFalse(unmasked.hasMask());
      TensorBytes.copyMask(unmasked, 2, raw, 9);
      byte[] ones = new byte[9];
      HostCopy.fromAddress(raw, ones, 0, 9);
      assertArrayEquals(new byte[] {1, 1, 1, 1, 1, 1, 1, 1, 1}, ones);
    } finally {
      HostCopy.freeRaw(raw);
    }
  }

  @Test
  void aRangeOutsideTheTensorIsRefused() {
    PairTensor t = PairTensor.zeros(1, 2, 2, 32);
    long raw = HostCopy.allocateRaw(1024);
    try {
      assertThrows(IndexOutOfBoundsException.class, () -> TensorBytes.copyValues(t, 200, raw, 100)); // 256 bytes in all
      assertThrows(IndexOutOfBoundsException.class, () -> TensorBytes.takeValues(t, -1, raw, 2));
      assertThrows(IndexOutOfBoundsException.class, () -> TensorBytes.copyMask(t, 3, raw, 2)); // 4 mask bytes
    } finally {
      HostCopy.freeRaw(raw);
    }
  }
}
