package org.foldcp.spark.gpu;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;
import org.foldcp.ops.StageTimes;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.tensor.PairTensor;

/**
 * Stand-ins for the GPU backend, so that the borrowing rules are tested on machines without a
 * GPU: a factory that records every backend it made, each counting its closes.
 */
public final class FakeGpus implements IntFunction<TriMulBackend> {
  private final List<Backend> made = new CopyOnWriteArrayList<>();

  /** Owners whose devices get fake backends from {@code gpus}, every device usable; for tests in other packages. */
  public static GpuOwners owners(String owner, FakeGpus gpus) {
    return new GpuOwners(owner, gpus, ordinal -> null);
  }

  @Override
  public TriMulBackend apply(int deviceOrdinal) {
    Backend b = new Backend(deviceOrdinal);
    made.add(b);
    return b;
  }

  /** The backends made so far, in order. */
  public List<Backend> made() {
    return made;
  }

  /**
   * A backend that returns its input and counts forwards (layers, and stack calls plain or with
   * stage times) and closes; asked for stage times, it reports {@link #STAGE_TIMES_PER_LAYER} per layer.
   */
  public static final class Backend implements TriMulBackend {
    /** The stage times a fake GPU "measures" for each layer: distinct, so that a swap of stages shows. */
    public static final StageTimes STAGE_TIMES_PER_LAYER = new StageTimes(1_000, 20_000, 300_000);

    private final int deviceOrdinal;
    private final AtomicInteger forwards = new AtomicInteger();
    private final AtomicInteger plainStackForwards = new AtomicInteger();
    private final AtomicInteger timedStackForwards = new AtomicInteger();
    private final AtomicInteger closes = new AtomicInteger();

    Backend(int deviceOrdinal) {
      this.deviceOrdinal = deviceOrdinal;
    }

    public int deviceOrdinal() { return deviceOrdinal; }

    public int forwards() { return forwards.get(); }

    public int closes() { return closes.get(); }

    /** Stack forwards without stage times. */
    public int plainStackForwards() { return plainStackForwards.get(); }

    /** Stack forwards that reported stage times. */
    public int timedStackForwards() { return timedStackForwards.get(); }

    @Override
    public String name() { return "gpu"; }

    @Override
    public PairTensor forward(PairTensor x, TriMulLayer layer, boolean allowNonFinite) {
      forwards.incrementAndGet();
      return x;
    }

    @Override
    public PairTensor forward(PairTensor x, LayerStack stack, boolean allowNonFinite) {
      plainStackForwards.incrementAndGet();
      return TriMulBackend.super.forward(x, stack, allowNonFinite);
    }

    @Override
    public PairTensor forward(PairTensor x, LayerStack stack, boolean allowNonFinite, StageTimes.Sink sink) {
      timedStackForwards.incrementAndGet();
      PairTensor y = TriMulBackend.super.forward(x, stack, allowNonFinite);
      StageTimes sum = StageTimes.ZERO;
      for (int l = 0; l < stack.layers().size(); l++) {
        sum = sum.plus(STAGE_TIMES_PER_LAYER);
      }
      sink.accept(sum);
      return y;
    }

    @Override
    public void close() {
      closes.incrementAndGet();
    }

    @Override
    public String toString() {
      return "fake GPU backend on device " + deviceOrdinal;
    }
  }
}
