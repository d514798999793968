package org.foldcp.spark.plugin;

import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.foldcp.spark.config.FoldCpConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Validates the fold-cp configuration when the SparkContext starts, so that a typo or a bad
 * value fails the application at once (the exception propagates out of SparkSession creation)
 * rather than in the middle of a barrier stage.
 */
final class FoldCpDriverPlugin implements DriverPlugin {
  private static final Logger LOG = LoggerFactory.getLogger(FoldCpDriverPlugin.class);

  /**
   * @return every fold-cp key with its effective value; Spark ships this map to each executor
   *     plugin's init, so executors run with exactly the settings checked here
   */
  @Override
  public Map<String, String> init(SparkContext sc, PluginContext ctx) {
    FoldCpConf conf = FoldCpConf.from(ctx.conf());
    LOG.info("fold-cp settings: {}", conf.describe());
    return conf.asMap();
  }
}
