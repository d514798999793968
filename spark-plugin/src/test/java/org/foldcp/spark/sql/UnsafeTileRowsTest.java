package org.foldcp.spark.sql;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.function.Function;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.Platform;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;

/**
 * The GPU feed's row ends without a GPU: tile rows read as bytes ({@link TileRowBytes}) and
 * output rows written in place ({@link UnsafeTileRows}) against the decoding path's encoder,
 * byte for byte.
 */
class UnsafeTileRowsTest {
  private static final Function<TileRecord, InternalRow> ENCODER = TileRows.encoder();

  private static TileRecord whole(String id, int n, int d, boolean masked, long seed) {
    return new TileRecord(id, n, 0, 0, PairTensor.random(1, n, d, seed, masked ? 0.25 : 0));
  }

  /** The bytes {@code in} hands over, copied through a direct buffer in blocks of {@code block} bytes. */
  private static byte[] pairThroughBlocks(TileRowBytes in, int block) {
    long bytes = in.pairBytes();
    long address = Platform.allocateMemory(block);
    try {
      byte[] got = new byte[(int) bytes];
      for (long off = 0; off < bytes; off += block) {
        int len = (int) Math.min(block, bytes - off);
        in.copyPair(off, address, len);
        Platform.copyMemory(null, address, got, Platform.BYTE_ARRAY_OFFSET + off, len);
      }
      return got;
    } finally {
      Platform.freeMemory(address);
    }
  }

  @Test
  void aWholeComplexRowIsReadAsItsBytesFromUnsafeAndGenericRows() {
    for (boolean masked : new boolean[] {true, false}) {
      TileRecord t = whole("7xyz", 9, 8, masked, 3);
      UnsafeRow unsafe = (UnsafeRow) ENCODER.apply(t).copy();
      byte[] pair = unsafe.getBinary(TileRows.PAIR);
      for (InternalRow row : new InternalRow[] {unsafe, TileRows.toRow(t)}) {
        TileRowBytes in = TileRowBytes.ofWholeComplex(row, TileRows.identityOrdinals());
        assertNotNull(in, "a whole complex");
        assertEquals("7xyz", in.complexId);
        assertEquals(9, in.n());
        assertEquals(8, in.dim());
        assertEquals(masked, in.hasMask());
        assertArrayEquals(pair, pairThroughBlocks(in, 40), "pair bytes in blocks of 40 (" + row.getClass() + ")");
        if (masked) {
          assertArrayEquals(unsafe.getBinary(TileRows.MASK), in.mask());
        }
      }
    }
  }

  @Test
  void tilesAndBandsAreLeftToTheDecodingPath() {
    PairTensor x = PairTensor.random(1, 6, 4, 1, 0);
    TileRecord band = new TileRecord("b", 6, 0, 0, x.window(0, 0, 3, 6));
    TileRecord tile = new TileRecord("t", 6, 3, 3, x.window(3, 3, 3, 3));
    assertNull(TileRowBytes.ofWholeComplex(ENCODER.apply(band), TileRows.identityOrdinals()));
    assertNull(TileRowBytes.ofWholeComplex(ENCODER.apply(tile), TileRows.identityOrdinals()));
  }

  @Test
  void aPairOfTheWrongSizeIsRefusedNamingTheComplex() {
    TileRecord t = whole("short", 4, 4, false, 5);
    GenericInternalRow row = (GenericInternalRow) TileRows.toRow(t);
    row.update(TileRows.PAIR, new byte[10]);
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> TileRowBytes.ofWholeComplex(row, TileRows.identityOrdinals()));
    assertTrue(e.getMessage().contains("pair bytes of complex 'short'") && e.getMessage().contains("= 128"),
        e.getMessage());
  }

  @Test
  void rowsWrittenInPlaceEqualTheEncodersByteForByteAndTheBufferIsReused() {
    UnsafeTileRows out = new UnsafeTileRows();
    for (TileRecord t : new TileRecord[] {whole("ä-7", 11, 8, true, 1), whole("b", 5, 4, false, 2),
        whole("a much longer complex id", 3, 32, true, 4)}) {
      UnsafeRow want = (UnsafeRow) ENCODER.apply(t).copy();
      byte[] pair = want.getBinary(TileRows.PAIR);
      byte[] mask = t.tile.hasMask() ? want.getBinary(TileRows.MASK) : null;
      out.begin(t.complexId, t.nTokens, t.dim(), pair.length, mask);
      long address = Platform.allocateMemory(pair.length);
      try {
        Platform.copyMemory(pair, Platform.BYTE_ARRAY_OFFSET, null, address, pair.length);
        int half = pair.length / 2;
        out.pairSink().copyPair(0, address, half); // in two pieces, as the feed hands blocks over
        out.pairSink().copyPair(half, address + half, pair.length - half);
      } finally {
        Platform.freeMemory(address);
      }
      UnsafeRow got = out.row();
      assertEquals(want, got, "the same UnsafeRow bytes as the decoding path's encoder for " + t);
      assertSameTile(t, TileRows.decode(got, TileRows.identityOrdinals()));
    }
  }

  @Test
  void rowsLaidOutInRawMemoryEqualTheEncodersByteForByte() {
    UnsafeTileRows out = new UnsafeTileRows();
    for (TileRecord t : new TileRecord[] {whole("ä-7", 11, 8, true, 1), whole("b", 5, 4, false, 2),
        whole("a much longer complex id", 3, 32, true, 4)}) {
      UnsafeRow want = (UnsafeRow) ENCODER.apply(t).copy();
      byte[] pair = want.getBinary(TileRows.PAIR);
      byte[] mask = t.tile.hasMask() ? want.getBinary(TileRows.MASK) : null;
      long bytes = UnsafeTileRows.rowBytes(t.complexId, pair.length, mask);
      long address = Platform.allocateMemory(bytes);
      try {
        Platform.setMemory(address, (byte) 0xAB, bytes); // stale bytes, as a reused pinned span holds
        long at = out.beginAt(address, t.complexId, t.nTokens, t.dim(), pair.length, mask);
        Platform.copyMemory(pair, Platform.BYTE_ARRAY_OFFSET, null, address + at, pair.length); // the download
        UnsafeRow got = out.row();
        assertEquals(null, got.getBaseObject(), "the row points into raw memory, not a copy");
        assertEquals(want, got, "the same UnsafeRow bytes as the decoding path's encoder for " + t);
        assertSameTile(t, TileRows.decode(got.copy(), TileRows.identityOrdinals()));
        assertThrows(IllegalStateException.class, out::pairSink, "the caller fills a raw row's pair bytes");
      } finally {
        Platform.freeMemory(address);
      }
    }
  }

  private static void assertSameTile(TileRecord want, TileRecord got) {
    assertEquals(want.complexId, got.complexId);
    assertEquals(want.nTokens, got.nTokens);
    assertTrue(want.tile.sameAs(got.tile), "values and mask");
    assertEquals(want.tile.hasMask(), got.tile.hasMask());
  }

  @Test
  void aSinkRefusesBytesOutsideThePair() {
    UnsafeTileRows out = new UnsafeTileRows();
    out.begin("x", 2, 4, 32, null);
    assertThrows(IndexOutOfBoundsException.class, () -> out.pairSink().copyPair(16, 0L, 17));
  }
}
