package org.foldcp.ops.gpu.feed;

import java.util.ArrayList;
import java.util.List;
import org.foldcp.ops.gpu.Closeables;
import org.foldcp.ops.gpu.DeviceBuffer;
import org.foldcp.ops.gpu.GpuDevice;
import org.foldcp.ops.gpu.GpuEvent;
import org.foldcp.ops.gpu.GpuStream;
import org.foldcp.ops.gpu.PinnedHostBuffer;

/**
 * Room on the device for one complex between its upload and its download: the pair tensor (the
 * stack runs on it in place), the mask, the non-finite scan's result, and the slot's own upload
 * and download streams: the copies of different complexes wait on no stream of each other's, only
 * on events (those that order one complex's upload, kernels and download, and the previous
 * whole-complex copy's in the same direction, {@link CopyChain}).
 *
 * <p>Buffers grow to the largest complex the slot has held and stay (no reallocation while the
 * shapes repeat). A slot is used by one thread at a time, between the feed's submit and the end
 * of its drain.
 */
final class DeviceSlot implements AutoCloseable {
  /** Bytes of the scan result: two uint64 (count, first key), see foldcp_nonfinite_scan. */
  static final long RESULT_BYTES = org.foldcp.ops.gpu.ScanResult.BYTES;

  final int index;
  private final GpuDevice device;
  final GpuStream up;
  final GpuStream down;
  /**
   * Timing events of the complex in the slot ({@link FeedTimeline}): before its first upload copy,
   * after its last (the compute stream waits for it), around its scan and layers on the compute
   * stream, and around its download (the start after the kernels and the download queued before).
   */
  final GpuEvent upStart;
  final GpuEvent uploaded;
  final GpuEvent computeStart;
  final GpuEvent computed;
  final GpuEvent downStart;
  final GpuEvent downloaded;
  final DeviceBuffer result;
  final PinnedHostBuffer resultHost;
  private DeviceBuffer x;
  private DeviceBuffer mask;
  /**
   * The pinned-cache span the slot's upload reads from, held until the slot is settled (its
   * upload has run): reachable, its memory cannot be freed under the DMA engine.
   */
  private PinnedCache.Span source;

  DeviceSlot(GpuDevice device, int index) {
    this.index = index;
    this.device = device;
    List<AutoCloseable> made = new ArrayList<>();
    try {
      up = add(made, GpuStream.create(device));
      down = add(made, GpuStream.create(device));
      upStart = add(made, GpuEvent.create(device, true, "slot " + index + " upload start"));
      uploaded = add(made, GpuEvent.create(device, true, "slot " + index + " uploaded"));
      computeStart = add(made, GpuEvent.create(device, true, "slot " + index + " compute start"));
      computed = add(made, GpuEvent.create(device, true, "slot " + index + " computed"));
      downStart = add(made, GpuEvent.create(device, true, "slot " + index + " download start"));
      downloaded = add(made, GpuEvent.create(device, true, "slot " + index + " downloaded"));
      result = add(made, DeviceBuffer.allocate(device, RESULT_BYTES, "slot " + index + " non-finite scan result"));
      resultHost = add(made, PinnedHostBuffer.allocate(device, RESULT_BYTES, "slot " + index + " scan result (host)"));
    } catch (RuntimeException e) {
      java.util.Collections.reverse(made);
      Closeables.closeAll(e, made.toArray(new AutoCloseable[0]));
      throw e;
    }
  }

  private static <T extends AutoCloseable> T add(List<AutoCloseable> made, T item) {
    made.add(item);
    return item;
  }

  /** Makes the slot hold a pair tensor of {@code xBytes} and a mask of {@code maskBytes} (0: none). */
  void ensure(long xBytes, long maskBytes) {
    if (x == null || x.bytes() < xBytes) {
      DeviceBuffer old = x;
      x = null;
      Closeables.closeAll(null, old);
      x = DeviceBuffer.allocate(device, xBytes, "feed slot " + index + " pair tensor");
    }
    if (maskBytes > 0 && (mask == null || mask.bytes() < maskBytes)) {
      DeviceBuffer old = mask;
      mask = null;
      Closeables.closeAll(null, old);
      mask = DeviceBuffer.allocate(device, maskBytes, "feed slot " + index + " mask");
    }
  }

  /** Holds {@code span} (null: none) until the slot is settled. */
  void holdSource(PinnedCache.Span span) {
    source = span;
  }

  DeviceBuffer x() {
    return x;
  }

  DeviceBuffer mask() {
    return mask;
  }

  /**
   * The intervals of the complex the slot holds, in milliseconds since {@code origin}; every event
   * of the slot has run (its download was waited for).
   */
  FeedTimeline.Span span(GpuEvent origin) {
    return new FeedTimeline.Span(upStart.millisSince(origin), uploaded.millisSince(origin),
        computeStart.millisSince(origin), computed.millisSince(origin), downStart.millisSince(origin),
        downloaded.millisSince(origin));
  }

  /** Device bytes the slot's tensors hold now. */
  long deviceBytes() {
    return (x == null ? 0 : x.bytes()) + (mask == null ? 0 : mask.bytes());
  }

  /** Waits for the slot's streams, then frees everything; idempotent through its parts. */
  @Override
  public void close() {
    RuntimeException e = Closeables.closeAll(null, up, down, downloaded, downStart, computed, computeStart, uploaded,
        upStart, mask, x, result, resultHost);
    if (e != null) {
      throw e;
    }
  }
}
