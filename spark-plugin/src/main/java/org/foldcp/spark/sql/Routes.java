package org.foldcp.spark.sql;

import org.foldcp.spark.barrier.BarrierRoute;
import org.foldcp.spark.route.RoutePlan.Kind;
import org.foldcp.spark.route.SingleRankRoute;
import org.foldcp.spark.route.TileRoute;
import org.foldcp.spark.shuffle.ShuffleRoute;

/** The TileRoute behind each route kind. */
public final class Routes {
  private Routes() {}

  /** A new route of {@code kind}. */
  public static TileRoute forKind(Kind kind) {
    switch (kind) {
      case SINGLE:
        return new SingleRankRoute();
      case BARRIER:
        return new BarrierRoute();
      case SHUFFLE:
        return new ShuffleRoute();
      default:
        throw new IllegalStateException("unhandled route kind " + kind);
    }
  }
}
