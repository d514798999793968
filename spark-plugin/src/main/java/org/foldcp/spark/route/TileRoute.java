package org.foldcp.spark.route;

import org.apache.spark.api.java.JavaRDD;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.tiles.TileRecord;

/**
 * A way to apply a layer stack to the pair tiles of many complexes. Input tiles may come in any
 * tiling (whole complexes or a CP layout); the output has one tile per (complex, rank) of the
 * plan's layout ({@code (0, 0, N, N)} per complex for the single route). Every route gives the
 * same values as the operator library's cp = 1 forward.
 */
public interface TileRoute {
  JavaRDD<TileRecord> run(JavaRDD<TileRecord> tiles, LayerStack stack, RoutePlan plan, RouteMetrics metrics);
}
