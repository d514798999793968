package org.foldcp.cluster;

import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Resolves {@link LocalCluster} parameters of test methods to one cluster for the whole test run:
 * starting a cluster means launching executor JVMs, which is most of this module's time. The
 * cluster lives in the root store, so JUnit stops it (it is AutoCloseable) when the run ends.
 */
final class SharedCluster implements ParameterResolver {
  private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(SharedCluster.class);

  @Override
  public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
    return parameter.getParameter().getType() == LocalCluster.class;
  }

  @Override
  public LocalCluster resolveParameter(ParameterContext parameter, ExtensionContext context) {
    return context.getRoot().getStore(NAMESPACE)
        .getOrComputeIfAbsent(LocalCluster.class, key -> LocalCluster.start(), LocalCluster.class);
  }
}
