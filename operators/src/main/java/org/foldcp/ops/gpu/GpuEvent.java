package org.foldcp.ops.gpu;

import jcuda.driver.CUevent_flags;
import jcuda.driver.JCudaDriver;

/**
 * A CUDA event (driver API): marks a point in a stream's work, so that the host can wait for it
 * or another stream can start after it. Made with timing off unless asked for (timing events cost
 * more to record and are only needed to measure GPU time).
 *
 * <p>Ownership: created by {@link #create}, destroyed by {@link #close()}; close it before its
 * device. Not thread-safe: one owner records and waits on it at a time.
 */
public final class GpuEvent implements AutoCloseable {
  private final GpuDevice device;
  private final RawHandles.EventHandle event;
  private final TrackedHandle handle;
  private boolean recorded;

  private GpuEvent(GpuDevice device, RawHandles.EventHandle event, String purpose) {
    this.device = device;
    this.event = event;
    this.handle = new TrackedHandle("event", 0, purpose + " on device " + device.ordinal());
  }

  /** An event on {@code device}; {@code timing} lets {@link #millisSince} measure between two events. */
  public static GpuEvent create(GpuDevice device, boolean timing, String purpose) {
    device.makeCurrent();
    RawHandles.EventHandle ev = new RawHandles.EventHandle();
    // blocking sync: a thread waiting on the event sleeps rather than spins (see GpuDevice.open)
    int flags = CUevent_flags.CU_EVENT_BLOCKING_SYNC
        | (timing ? CUevent_flags.CU_EVENT_DEFAULT : CUevent_flags.CU_EVENT_DISABLE_TIMING);
    CudaDriver.check(JCudaDriver.cuEventCreate(ev, flags), "cuEventCreate (" + purpose + ")");
    return new GpuEvent(device, ev, purpose);
  }

  /** Marks the end of the work queued on {@code stream} so far. */
  public void record(GpuStream stream) {
    ensureOpen();
    CudaDriver.check(JCudaDriver.cuEventRecord(event, stream.stream()), "cuEventRecord");
    recorded = true;
  }

  /** Makes later work queued on {@code stream} wait for this event (no host wait). */
  public void makeWait(GpuStream stream) {
    ensureOpen();
    CudaDriver.check(JCudaDriver.cuStreamWaitEvent(stream.stream(), event, 0), "cuStreamWaitEvent");
  }

  /** Waits on the host until the work before the last {@link #record} has run (at once if never recorded). */
  public void synchronize() {
    ensureOpen();
    if (recorded) {
      device.makeCurrent();
      CudaDriver.check(JCudaDriver.cuEventSynchronize(event), "cuEventSynchronize");
    }
  }

  /** Milliseconds of GPU time from {@code start} to this event; both timing events, both run. */
  public float millisSince(GpuEvent start) {
    ensureOpen();
    float[] ms = new float[1];
    CudaDriver.check(JCudaDriver.cuEventElapsedTime(ms, start.event, event), "cuEventElapsedTime");
    return ms[0];
  }

  private void ensureOpen() {
    if (handle.isClosed()) {
      throw new IllegalStateException("GpuEvent is closed");
    }
  }

  /** Destroys the event (the work it marks may still run; CUDA frees it once that is done). Idempotent. */
  @Override
  public void close() {
    handle.free(device, () -> CudaDriver.check(JCudaDriver.cuEventDestroy(event), "cuEventDestroy"));
  }
}
