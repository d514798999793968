package org.foldcp.spark.plugin;

import com.codahale.metrics.MetricRegistry;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.resource.ResourceInformation;

/** A PluginContext for one executor, with the resources a test wants Spark to have assigned it. */
final class FakePluginContext implements PluginContext {
  private final String executorId;
  private final SparkConf conf;
  private final Map<String, ResourceInformation> resources;
  private final MetricRegistry metrics = new MetricRegistry();

  FakePluginContext(String executorId, SparkConf conf, Map<String, ResourceInformation> resources) {
    this.executorId = executorId;
    this.conf = conf;
    this.resources = resources;
  }

  static FakePluginContext withGpus(String executorId, int taskCpus, String... addresses) {
    SparkConf conf = new SparkConf(false).set("spark.task.cpus", Integer.toString(taskCpus));
    Map<String, ResourceInformation> res = addresses.length == 0 ? Map.of()
        : Map.of("gpu", new ResourceInformation("gpu", addresses));
    return new FakePluginContext(executorId, conf, res);
  }

  @Override
  public MetricRegistry metricRegistry() { return metrics; }

  @Override
  public SparkConf conf() { return conf; }

  @Override
  public String executorID() { return executorId; }

  @Override
  public String hostname() { return "test-host"; }

  @Override
  public Map<String, ResourceInformation> resources() { return resources; }

  @Override
  public void send(Object message) {
    throw new UnsupportedOperationException("the fold-cp executor plugin does not message the driver");
  }

  @Override
  public Object ask(Object message) {
    throw new UnsupportedOperationException("the fold-cp executor plugin does not message the driver");
  }
}
