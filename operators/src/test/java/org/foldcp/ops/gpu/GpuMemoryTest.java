package org.foldcp.ops.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Random;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Device memory: buffers, pinned staging, no growth over repeated forwards, nothing left after close. */
@Tag("gpu")
class GpuMemoryTest {

  @BeforeEach
  void needGpu() {
    GpuTests.assumeGpu();
  }

  @Test
  void hundredForwardsKeepFreeMemoryAndCloseLeavesNoHandles() {
    long mark = MemoryLeakCheck.mark();
    PairTensor x = GpuTests.input(1, 100, 128, 21, true);
    TriMulLayer layer = new TriMulLayer(TriMulSpec.of(Direction.INCOMING, true), LayerWeights.random(128, 22, true));
    GpuStats warm;
    try (GpuTriMul g = new GpuTriMul()) {
      PairTensor first = g.forward(x, layer); // warm-up: layer, resident buffers, staging, module loading
      g.forward(x, layer);
      warm = g.stats();
      long afterWarmUp = MemoryLeakCheck.mark();
      long free0 = g.device().memInfo().free();
      PairTensor last = null;
      for (int k = 0; k < 100; k++) {
        last = g.forward(x, layer);
      }
      long free1 = g.device().memInfo().free();
      assertEquals(free0, free1, "cuMemGetInfo free bytes before and after 100 forwards (after warm-up)");
      GpuTests.assertNoOpenHandlesSince(afterWarmUp, "100 forwards allocate nothing new");
      GpuStats s = g.stats();
      assertEquals(warm.layersCreated(), s.layersCreated());
      assertEquals(warm.residentAllocations(), s.residentAllocations());
      assertEquals(102, s.forwards());
      assertTrue(last.sameAs(first), "repeat forwards are bitwise equal");
      assertTrue(!MemoryLeakCheck.openHandlesSince(mark).isEmpty(), "while open, the backend holds handles");
    }
    GpuTests.assertNoOpenHandlesSince(mark, "after GpuTriMul.close()");
  }

  @Test
  void closeIsIdempotentAndUseAfterCloseFails() {
    long mark = MemoryLeakCheck.mark();
    GpuTriMul g = new GpuTriMul();
    g.forward(GpuTests.input(1, 8, 32, 1, false),
        new TriMulLayer(TriMulSpec.of(Direction.OUTGOING), LayerWeights.random(32, 1, false)));
    g.close();
    g.close();
    assertThrows(IllegalStateException.class, () -> g.forward(GpuTests.input(1, 8, 32, 1, false),
        new TriMulLayer(TriMulSpec.of(Direction.OUTGOING), LayerWeights.random(32, 1, false))));
    GpuTests.assertNoOpenHandlesSince(mark, "after close");
  }

  @Test
  void deviceAndPinnedBuffersRoundTrip() {
    long mark = MemoryLeakCheck.mark();
    try (GpuDevice dev = GpuDevice.open(0);
         GpuStream stream = GpuStream.create(dev);
         DeviceBuffer buf = DeviceBuffer.allocate(dev, 1 << 20, "round trip");
         PinnedHostBuffer pin = PinnedHostBuffer.allocate(dev, 1 << 20, "round trip staging")) {
      assertEquals(0, buf.address() % 256, "device memory is at least 256-byte aligned");
      buf.fill((byte) 0x5A);
      byte[] back = new byte[4096];
      buf.copyToHost(12345, back, 0, back.length);
      for (byte v : back) {
        assertEquals((byte) 0x5A, v);
      }
      byte[] data = new byte[1 << 20];
      new Random(3).nextBytes(data);
      ByteBuffer bb = pin.buffer();
      bb.put(data);
      buf.copyFromHostAsync(0, pin, 0, data.length, stream);
      ByteBuffer zero = pin.buffer();
      stream.synchronize();
      while (zero.hasRemaining()) {
        zero.put((byte) 0);
      }
      buf.copyToHostAsync(0, pin, 0, data.length, stream);
      stream.synchronize();
      byte[] got = new byte[data.length];
      pin.buffer().get(got);
      assertArrayEquals(data, got, "pinned -> device -> pinned");
      short s = pin.buffer().asShortBuffer().get(0);
      assertEquals((short) ((data[0] & 0xff) | (data[1] << 8)), s, "the pinned view is little-endian");
      assertThrows(IndexOutOfBoundsException.class, () -> buf.copyToHost((1 << 20) - 10, new byte[20], 0, 20));
      assertThrows(IndexOutOfBoundsException.class, () -> buf.copyFromHostAsync(0, pin, 1, 1 << 20, stream));
      assertEquals(4, MemoryLeakCheck.openHandlesSince(mark).size(), MemoryLeakCheck.report());
    }
    GpuTests.assertNoOpenHandlesSince(mark, "after the try-with-resources");
  }

  /**
   * A pinned buffer above 2 GiB (the GPU feed's pool for large complexes): page-locked malloc'd
   * memory, no ByteBuffer view, DMA to and from bytes beyond 2^31, freed at close.
   */
  @Test
  void aPinnedBufferAboveTwoGibIsRegisteredAndCopiesBeyondTheIntRange() {
    long mark = MemoryLeakCheck.mark();
    long bytes = (2L << 30) + (3L << 20);
    long at = (2L << 30) + 12345;
    try (GpuDevice dev = GpuDevice.open(0);
         GpuStream stream = GpuStream.create(dev);
         DeviceBuffer buf = DeviceBuffer.allocate(dev, 1 << 20, "beyond 2 GiB");
         PinnedHostBuffer pin = PinnedHostBuffer.allocate(dev, bytes, "above 2 GiB")) {
      assertEquals(bytes, pin.bytes());
      assertEquals(0, pin.address() % 4096, "page aligned");
      assertThrows(IllegalStateException.class, pin::buffer, "no ByteBuffer view above 2^31 - 1 bytes");
      byte[] data = new byte[1 << 20];
      new Random(5).nextBytes(data);
      HostCopy.toAddress(data, 0, pin.address() + at, data.length);
      buf.copyFromHostAsync(0, pin, at, data.length, stream);
      buf.copyToHostAsync(0, pin, 0, data.length, stream);
      stream.synchronize();
      byte[] got = new byte[data.length];
      HostCopy.fromAddress(pin.address(), got, 0, got.length);
      assertArrayEquals(data, got, "pinned[2 GiB + k] -> device -> pinned[0]");
      assertThrows(IndexOutOfBoundsException.class, () -> buf.copyToHostAsync(0, pin, bytes - 10, 20, stream));
    }
    GpuTests.assertNoOpenHandlesSince(mark, "after the try-with-resources");
  }

  @Test
  void useAfterCloseIsAnErrorNotACrash() {
    try (GpuDevice dev = GpuDevice.open(0)) {
      DeviceBuffer buf = DeviceBuffer.allocate(dev, 4096, "closed soon");
      PinnedHostBuffer pin = PinnedHostBuffer.allocate(dev, 4096, "closed soon");
      buf.close();
      pin.close();
      buf.close();
      assertThrows(IllegalStateException.class, buf::address);
      assertThrows(IllegalStateException.class, pin::buffer);
      assertThrows(IllegalStateException.class, () -> buf.fill((byte) 0));
    }
  }
}
