package org.foldcp.spark.config;

import org.foldcp.ops.InvalidInputException;

/**
 * Spark's own settings that fold-cp's decisions read (the route chooser on the driver, the
 * barrier preflight), with their parsing in one place; fold-cp's keys live in {@link FoldCpConf}.
 */
public final class SparkKeys {
  public static final String MASTER = "spark.master";
  public static final String DYNAMIC_ALLOCATION = "spark.dynamicAllocation.enabled";
  public static final String TASK_CPUS = "spark.task.cpus";
  public static final String EXECUTOR_CORES = "spark.executor.cores";
  public static final String EXECUTOR_GPUS = "spark.executor.resource.gpu.amount";
  public static final String TASK_GPUS = "spark.task.resource.gpu.amount";
  /** Spark authenticates its RPC with an application secret; a TCP team then keys its handshake with it. */
  public static final String AUTHENTICATE = "spark.authenticate";
  /** Spark encrypts its RPC and block transfers; the TCP team's frames are not, so it stands aside. */
  public static final String NETWORK_CRYPTO = "spark.network.crypto.enabled";

  private SparkKeys() {}

  /** A Spark resource amount ("1", "0.5"); absent (null or blank) means none. */
  public static double resourceAmount(String key, String raw) {
    if (raw == null || raw.isBlank()) {
      return 0;
    }
    try {
      return Double.parseDouble(raw.trim());
    } catch (NumberFormatException e) {
      throw InvalidInputException.of(key, "'" + raw + "'", "must be a number");
    }
  }
}
