package org.foldcp.cluster;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Asks {@link SharedCluster} for a cluster started with further Spark settings
 * ({@link LocalCluster#start(Map)}), which {@link #value} supplies: a class, not constants, so
 * that a setting can be made at run time (a random spark.authenticate.secret). The class needs a
 * no-argument constructor and must supply equal maps each time, since SharedCluster reuses a
 * running cluster whose settings are equal.
 */
@Target(ElementType.PARAMETER)
@Retention(RetentionPolicy.RUNTIME)
@interface ClusterSettings {
  Class<? extends Supplier<Map<String, String>>> value();
}
