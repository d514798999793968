package org.foldcp.spark.config;

import static org.foldcp.spark.config.FoldCpConf.CP;
import static org.foldcp.spark.config.FoldCpConf.CP_TRANSPORT;
import static org.foldcp.spark.config.FoldCpConf.GPU_ENABLED;
import static org.foldcp.spark.config.FoldCpConf.GRID;
import static org.foldcp.spark.config.FoldCpConf.ROUTE;

import java.util.Optional;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.spark.config.FoldCpConf.Route;
import org.foldcp.spark.config.FoldCpConf.Transport;

/**
 * The rules between {@link FoldCpConf}'s keys, checked once when a configuration is made so that
 * no route has to repeat them. Each error names the key whose setting gives way, its value, and
 * the rule with the other key's value.
 */
final class CrossKeyRules {
  private CrossKeyRules() {}

  /** Throws an InvalidInputException for the first rule {@code conf}'s settings break. */
  static void check(FoldCpConf conf) {
    Route route = conf.get(ROUTE);
    int cp = conf.get(CP);
    Optional<CpGrid> explicitGrid = conf.get(GRID);
    boolean gpuEnabled = conf.get(GPU_ENABLED);
    Transport transport = conf.get(CP_TRANSPORT);

    if (cp == 0 && explicitGrid.isPresent()) {
      throw reject(conf, GRID, "must be empty when " + CP.name()
          + " = auto: each complex gets its own cp, and its grid is cp x 1");
    }
    if (cp != 0 && explicitGrid.isPresent() && explicitGrid.get().size() != cp) {
      CpGrid g = explicitGrid.get();
      throw reject(conf, GRID,
          "cp0 * cp1 must equal " + CP.name() + ", but " + g.rowGroups() + " * " + g.colGroups() + " = " + g.size()
              + " and " + CP.name() + " = " + cp);
    }
    if (route == Route.GPU && !gpuEnabled) {
      throw reject(conf, ROUTE, "route gpu needs " + GPU_ENABLED.name() + " = true, but it is false");
    }
    if (transport == Transport.NVSHMEM && !gpuEnabled) {
      throw reject(conf, CP_TRANSPORT,
          "the NVSHMEM team runs its ranks on GPUs and needs " + GPU_ENABLED.name() + " = true, but it is false");
    }
    if (transport == Transport.NVSHMEM && (route == Route.CPU || route == Route.SHUFFLE)) {
      throw reject(conf, CP_TRANSPORT,
          "nvshmem is the transport of the barrier route's GPU team, but " + ROUTE.name() + " = " + route.label()
              + (route == Route.CPU ? " computes on the CPU" : " moves the reshards through Spark shuffles")
              + "; use route auto, gpu or barrier");
    }
    if (transport == Transport.TCP && route == Route.GPU && cp > 1) {
      throw reject(conf, CP_TRANSPORT,
          "the TCP team computes on the CPU, but " + ROUTE.name() + " = gpu runs the cp = " + cp + " ranks on GPUs;"
              + " use transport nvshmem (or auto) for GPU ranks, or route barrier for CPU ranks");
    }
  }

  private static InvalidInputException reject(FoldCpConf conf, ConfKey<?> key, String rule) {
    return key.reject(conf.asMap().get(key.name()), rule);
  }
}
