package org.foldcp.examples;

import java.util.ArrayList;
import java.util.List;
import org.foldcp.ops.gpu.Closeables;
import org.foldcp.ops.gpu.DeviceBuffer;
import org.foldcp.ops.gpu.GpuDevice;
import org.foldcp.ops.gpu.GpuEvent;
import org.foldcp.ops.gpu.GpuStream;
import org.foldcp.ops.gpu.GpuTriMul;
import org.foldcp.ops.gpu.NativeTriMul;
import org.foldcp.ops.gpu.PinnedHostBuffer;
import org.foldcp.ops.gpu.feed.HeapComplex;
import org.foldcp.ops.layer.LayerStack;

/**
 * What the device itself allows a job of whole complexes (docs/benchmarks.md, "The job against
 * the device's floor"), measured with no host path of ours in the way: the kernels alone, the DMA
 * alone, and both overlapped.
 * Every floor runs over the benchmark's own complexes (their bytes in pinned memory, their shape,
 * the same layer stack), so the job's share of a floor is a like-for-like ratio.
 *
 * <ul>
 *   <li>compute floor: the stack on complexes already on the device, back to back on one stream;</li>
 *   <li>copy floor: each complex pinned host -> device -> pinned host, uploads and downloads on two
 *       streams (the two directions overlap, as the DMA engines allow), no kernels;</li>
 *   <li>overlapped floor: upload, stack and download of successive complexes on three streams
 *       through three device buffers: the practical best for complexes that start and end on the
 *       host.</li>
 * </ul>
 */
final class DeviceFloors implements AutoCloseable {
  /** Device buffers the copy and overlapped floors rotate through (one per stage in flight). */
  private static final int SLOTS = 3;
  /** Pinned copies of the first complexes (the DMA rate does not depend on which bytes move). */
  private static final int HOST_COPIES = 2;

  private final GpuDevice device;
  private final int b;
  private final int n;
  /** The layers' hidden width H: the workspace's channels, and the forward's (ungrouped) channel group. */
  private final int h;
  private final long bytes;
  private final long[] layers;
  private final List<AutoCloseable> owned = new ArrayList<>();
  private final PinnedHostBuffer[] hostIn = new PinnedHostBuffer[HOST_COPIES];
  private final PinnedHostBuffer hostOut;
  private final DeviceBuffer[] dev = new DeviceBuffer[SLOTS];
  private final DeviceBuffer mask;
  private final DeviceBuffer ws;
  private final GpuStream up;
  private final GpuStream compute;
  private final GpuStream down;
  private final GpuEvent[] uploaded = new GpuEvent[SLOTS];
  private final GpuEvent[] computed = new GpuEvent[SLOTS];
  private final GpuEvent[] downloaded = new GpuEvent[SLOTS];

  DeviceFloors(GpuTriMul gpu, LayerStack stack, List<HeapComplex> complexes) {
    this.device = gpu.device();
    HeapComplex first = complexes.get(0);
    this.b = first.batch();
    this.n = first.n();
    this.h = stack.hidden();
    this.bytes = first.pairBytes();
    // pinned for the floors' life (released in close): no eviction frees them under their kernels
    this.layers = gpu.layerCache().acquire(stack.layers());
    owned.add(() -> gpu.layerCache().release(stack.layers()));
    try {
      for (int k = 0; k < HOST_COPIES; k++) {
        hostIn[k] = own(PinnedHostBuffer.allocate(device, bytes, "floor input " + k));
        HeapComplex c = complexes.get(k % complexes.size());
        c.copyPair(0, hostIn[k].address(), bytes);
      }
      hostOut = own(PinnedHostBuffer.allocate(device, bytes, "floor output"));
      for (int s = 0; s < SLOTS; s++) {
        dev[s] = own(DeviceBuffer.allocate(device, bytes, "floor slot " + s));
        uploaded[s] = own(GpuEvent.create(device, false, "floor uploaded " + s));
        computed[s] = own(GpuEvent.create(device, false, "floor computed " + s));
        downloaded[s] = own(GpuEvent.create(device, false, "floor downloaded " + s));
      }
      // a mask like the complexes' (positions masked), so the kernels take their masked path
      mask = first.hasMask() ? own(DeviceBuffer.allocate(device, first.maskBytes(), "floor mask")) : null;
      if (mask != null) {
        PinnedHostBuffer m = PinnedHostBuffer.allocate(device, first.maskBytes(), "floor mask (host)");
        try {
          first.copyMask(0, m.address(), first.maskBytes());
          mask.copyFromHost(0, m, 0, first.maskBytes());
        } finally {
          m.close();
        }
      }
      ws = own(DeviceBuffer.allocate(device, NativeTriMul.workspaceSize(b, n, h), "floor workspace"));
      up = own(GpuStream.create(device));
      compute = own(GpuStream.create(device));
      down = own(GpuStream.create(device));
      for (int s = 0; s < SLOTS; s++) {
        dev[s].copyFromHost(0, hostIn[s % HOST_COPIES], 0, bytes);
      }
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  private <T extends AutoCloseable> T own(T item) {
    owned.add(item);
    return item;
  }

  private void stack(DeviceBuffer x) {
    long m = mask == null ? 0 : mask.address();
    for (long layer : layers) {
      NativeTriMul.forward(layer, x.address(), m, x.address(), b, n, ws.address(), ws.bytes(), h, compute.handle(),
          null);
    }
  }

  /** Seconds for {@code count} complexes' stacks on device-resident input. */
  double compute(int count) {
    device.makeCurrent();
    compute.synchronize();
    long t0 = System.nanoTime();
    for (int c = 0; c < count; c++) {
      stack(dev[c % SLOTS]);
    }
    compute.synchronize();
    return (System.nanoTime() - t0) / 1e9;
  }

  /** Seconds for {@code count} complexes' pinned round trips, no kernels. */
  double copies(int count) {
    return pipeline(count, false);
  }

  /** Seconds for {@code count} complexes' round trips with the stack in between, all overlapped. */
  double overlapped(int count) {
    return pipeline(count, true);
  }

  private double pipeline(int count, boolean withStack) {
    device.makeCurrent();
    device.synchronize();
    long t0 = System.nanoTime();
    for (int c = 0; c < count; c++) {
      int s = c % SLOTS;
      if (c >= SLOTS) {
        downloaded[s].makeWait(up); // the slot's last complex has left it
      }
      dev[s].copyFromHostAsync(0, hostIn[c % HOST_COPIES], 0, bytes, up);
      uploaded[s].record(up);
      if (withStack) {
        uploaded[s].makeWait(compute);
        stack(dev[s]);
        computed[s].record(compute);
        computed[s].makeWait(down);
      } else {
        uploaded[s].makeWait(down);
      }
      dev[s].copyToHostAsync(0, hostOut, 0, bytes, down);
      downloaded[s].record(down);
    }
    down.synchronize();
    return (System.nanoTime() - t0) / 1e9;
  }

  @Override
  public void close() {
    List<AutoCloseable> steps = new ArrayList<>();
    steps.add(device::synchronize);
    for (int k = owned.size() - 1; k >= 0; k--) {
      steps.add(owned.get(k));
    }
    owned.clear();
    RuntimeException e = Closeables.closeAll(null, steps.toArray(new AutoCloseable[0]));
    if (e != null) {
      throw e;
    }
  }
}
