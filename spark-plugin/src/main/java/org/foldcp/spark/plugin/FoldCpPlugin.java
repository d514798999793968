package org.foldcp.spark.plugin;

import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * The fold-cp Spark plugin, loaded with {@code spark.plugins=org.foldcp.spark.plugin.FoldCpPlugin}.
 * The driver side validates every {@code spark.foldcp.*} key before any job runs and hands the
 * validated settings to the executors; the executor side binds the executor's GPU and publishes
 * both through {@link ExecutorState}.
 */
public final class FoldCpPlugin implements SparkPlugin {
  @Override
  public DriverPlugin driverPlugin() {
    return new FoldCpDriverPlugin();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new FoldCpExecutorPlugin();
  }
}
