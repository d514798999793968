package org.foldcp.cluster;

import java.lang.reflect.Constructor;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Resolves {@link LocalCluster} parameters of test methods to one cluster for the whole test run:
 * starting a cluster means launching executor JVMs, which is most of this module's time. The
 * cluster lives in the root store, so JUnit stops it (it is AutoCloseable) when the run ends.
 *
 * <p>A parameter annotated with {@link ClusterSettings} gets a cluster with those further Spark
 * settings. A JVM runs one SparkContext at a time, so asking for other settings than the running
 * cluster's stops it and starts one with them; the next test that asks for the plain cluster
 * starts that again. Each switch costs a cluster start.
 */
final class SharedCluster implements ParameterResolver {
  private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(SharedCluster.class);

  /** The cluster running now and the further settings it was started with. */
  private record Running(Map<String, String> settings, LocalCluster cluster) implements AutoCloseable {
    @Override
    public void close() {
      cluster.close();
    }
  }

  @Override
  public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
    return parameter.getParameter().getType() == LocalCluster.class;
  }

  @Override
  public LocalCluster resolveParameter(ParameterContext parameter, ExtensionContext context) {
    Map<String, String> settings = parameter.findAnnotation(ClusterSettings.class)
        .map(a -> supplied(a.value())).orElse(Map.of());
    ExtensionContext.Store store = context.getRoot().getStore(NAMESPACE);
    synchronized (SharedCluster.class) {
      Running running = store.get(Running.class, Running.class);
      if (running != null && running.settings().equals(settings)) {
        return running.cluster();
      }
      if (running != null) {
        store.remove(Running.class);
        running.close();
      }
      Running started = new Running(settings, LocalCluster.start(settings));
      store.put(Running.class, started);
      return started.cluster();
    }
  }

  private static Map<String, String> supplied(Class<? extends Supplier<Map<String, String>>> type) {
    try {
      Constructor<? extends Supplier<Map<String, String>>> constructor = type.getDeclaredConstructor();
      constructor.setAccessible(true);
      return Map.copyOf(constructor.newInstance().get());
    } catch (ReflectiveOperationException e) {
      throw new ParameterResolutionException("cannot get the cluster settings from " + type.getName()
          + " (it needs a no-argument constructor): " + e, e);
    }
  }
}
