package org.foldcp.ops.gpu;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.foldcp.ops.layer.TriMulLayer;

/**
 * The native layers of one device, uploaded once and shared by everything that computes there
 * (the backend's own forward, the feed's pipeline and the CP ranks' plans: the CP library links
 * against the single-GPU library and takes its layers): keyed by the layer's identity
 * ({@link TriMulLayer#identity}: weights digest and spec), at most {@code maxEntries}, least recently used evicted.
 *
 * <p>Callers pin the layers they launch kernels with ({@link #acquire} / {@link #release}): a
 * forward from before its first launch until its kernels are queued, a CP plan for its life. A
 * pinned layer is never evicted; an eviction waits for the whole device first
 * ({@link GpuDevice#synchronize()}), since queued kernels on any stream may still read the layer.
 * {@link #close} frees every layer, for the owner closes the cache after all its users.
 */
public final class LayerCache implements AutoCloseable {
  /** How layers are made and freed ({@link #SINGLE_GPU}, the only native kind since issue 24). */
  public interface NativeLayers {
    long create(TriMulLayer layer);

    void destroy(long handle);
  }

  /** The single-GPU library's layers ({@link NativeTriMul}). */
  public static final NativeLayers SINGLE_GPU = new NativeLayers() {
    @Override
    public long create(TriMulLayer layer) {
      return NativeTriMul.createLayer(layer);
    }

    @Override
    public void destroy(long handle) {
      NativeTriMul.destroyLayer(handle);
    }
  };

  private final GpuDevice device;
  private final int maxEntries;
  private final NativeLayers api;
  private final LinkedHashMap<String, Entry> entries = new LinkedHashMap<>(16, 0.75f, true);
  private long created;
  private boolean closed;

  /** A native layer handle with its leak-tracker entry and how many holders pin it. */
  private static final class Entry {
    final long handle;
    final long trackId;
    int pins;

    Entry(long handle, long trackId) {
      this.handle = handle;
      this.trackId = trackId;
    }
  }

  public LayerCache(GpuDevice device, int maxEntries) {
    this(device, maxEntries, SINGLE_GPU);
  }

  /** At most {@code maxEntries} unpinned layers of {@code api}'s library on {@code device}. */
  public LayerCache(GpuDevice device, int maxEntries, NativeLayers api) {
    this.device = device;
    this.maxEntries = maxEntries;
    this.api = api;
  }

  public GpuDevice device() {
    return device;
  }

  /** Whose layers these are (the single-GPU library's or the CP library's). */
  public NativeLayers api() {
    return api;
  }

  /** The native layer of {@code layer} on this device, created (uploaded) on first use. */
  private long handle(TriMulLayer layer) {
    if (closed) {
      throw new IllegalStateException("the layer cache of GPU " + device.ordinal() + " is closed");
    }
    String key = layer.identity();
    Entry e = entries.get(key);
    if (e == null) {
      device.makeCurrent();
      long h = api.create(layer);
      long d = layer.dim();
      long hid = layer.hidden();
      // what foldcp_trimul_create holds: bf16 W1 [4H][D] and W3 [2D][max(D, H)], fp32 vectors 4D + 6H
      long bytes = (4 * hid * d + 2 * d * Math.max(d, hid)) * 2 + (4 * d + 6 * hid) * 4;
      e = new Entry(h, MemoryLeakCheck.register("native layer", bytes, layer.spec() + ", D=" + d + ", H=" + hid
          + ", digest " + layer.weights().digest().substring(0, 12)));
      entries.put(key, e);
      created++;
    }
    return e.handle;
  }

  /** The handles of a stack, in order (see {@link #handle}). */
  private long[] handles(List<TriMulLayer> stack) {
    long[] h = new long[stack.size()];
    for (int i = 0; i < h.length; i++) {
      h[i] = handle(stack.get(i));
    }
    return h;
  }

  /** The handles of a stack, pinned until {@link #release}: a CP plan keeps them for its life. */
  public synchronized long[] acquire(List<TriMulLayer> stack) {
    long[] h = handles(stack);
    for (TriMulLayer l : stack) {
      entries.get(l.identity()).pins++;
    }
    return h;
  }

  /** Unpins the layers of {@code stack} ({@link #acquire}); they stay cached, evictable again. */
  public synchronized void release(List<TriMulLayer> stack) {
    for (TriMulLayer l : stack) {
      Entry e = entries.get(l.identity());
      if (e != null && e.pins > 0) {
        e.pins--;
      }
    }
    trim();
  }

  /** Evicts least recently used unpinned layers beyond the limit, after the device has run what it was given. */
  public synchronized void trim() {
    if (entries.size() <= maxEntries || entries.values().stream().allMatch(e -> e.pins > 0)) {
      return; // nothing to evict: no wait for the device
    }
    device.synchronize();
    Iterator<Map.Entry<String, Entry>> it = entries.entrySet().iterator();
    while (entries.size() > maxEntries && it.hasNext()) {
      Entry e = it.next().getValue();
      if (e.pins == 0) {
        it.remove();
        destroy(e);
      }
    }
  }

  private void destroy(Entry e) {
    MemoryLeakCheck.release(e.trackId);
    device.setCurrent();
    api.destroy(e.handle);
  }

  /** Layers cached now. */
  public synchronized int size() {
    return entries.size();
  }

  /** Layers created (uploaded) since construction: cache misses. */
  public synchronized long created() {
    return created;
  }

  /**
   * Destroys every layer, pinned ones too (the owner closes the cache after everything that uses
   * it), once the device has run what it was given; later uses fail.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    List<AutoCloseable> steps = new ArrayList<>();
    if (!entries.isEmpty()) {
      steps.add(device::synchronize);
    }
    for (Entry e : entries.values()) {
      steps.add(() -> destroy(e));
    }
    entries.clear();
    RuntimeException first = Closeables.closeAll(null, steps.toArray(new AutoCloseable[0]));
    if (first != null) {
      throw first;
    }
  }
}
