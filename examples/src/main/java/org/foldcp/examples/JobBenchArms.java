package org.foldcp.examples;

import java.util.List;
import java.util.function.DoubleSupplier;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.gpu.feed.HeapComplex;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.sql.FoldCp;
import org.foldcp.spark.sql.FoldCpOptions;

/** The arms of {@link JobBenchmark}: what one timed pass over all complexes runs, arm by arm. */
final class JobBenchArms {
  private JobBenchArms() {}

  /** One arm: a warm-up, then a timed pass over all complexes per call of {@link #pass}. */
  interface Arm {
    String name();

    double pass(); // seconds for all complexes
  }

  static Arm arm(String name, DoubleSupplier pass) {
    return new Arm() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public double pass() {
        return pass.getAsDouble();
      }
    };
  }

  /**
   * The backend's tensor forward per complex, the forwards alone timed (each tensor is made from
   * the complex's bytes just before its forward, outside the timing, so that the arm holds one
   * tensor at a time).
   */
  static Arm bareArm(TriMulBackend backend, LayerStack stack, List<HeapComplex> complexes) {
    return arm("bare", () -> {
      long nanos = 0;
      for (HeapComplex c : complexes) {
        PairTensor x = c.tensorOf(c.pair());
        long t0 = System.nanoTime();
        backend.forward(x, stack);
        nanos += System.nanoTime() - t0;
      }
      return nanos / 1e9;
    });
  }

  /**
   * The Spark job's forward stage: the cached complexes through FoldCp.apply into the no-op sink.
   * Its neighbour arm spark_scan sends the same cached rows to the same sink without fold-cp: what
   * a pass of Spark itself costs (the stage, its tasks, reading the cache), beside which the job's
   * own share can be read.
   */
  static Arm jobArm(Dataset<Row> in, LayerStack stack) {
    return arm("job", () -> timed(() -> FoldCp.apply(in, stack, FoldCpOptions.fromConf()).write().format("noop")
        .mode("overwrite").save()));
  }

  /** The wall-clock seconds that {@code body} takes. */
  static double timed(Runnable body) {
    long t0 = System.nanoTime();
    body.run();
    return (System.nanoTime() - t0) / 1e9;
  }
}
