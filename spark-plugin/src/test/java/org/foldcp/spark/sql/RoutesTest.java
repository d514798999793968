package org.foldcp.spark.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.foldcp.spark.route.RoutePlan.Kind;
import org.foldcp.spark.route.SingleRankRoute;
import org.foldcp.spark.route.TileRoute;
import org.junit.jupiter.api.Test;

class RoutesTest {
  @Test
  void singleIsTheCp1Route() {
    assertInstanceOf(SingleRankRoute.class, Routes.forKind(Kind.SINGLE));
    assertTrue(Routes.available(Kind.SINGLE));
  }

  @Test
  void cpRoutesAreBuiltByNameWhenPresent() {
    for (Kind kind : new Kind[] {Kind.BARRIER, Kind.SHUFFLE}) {
      if (Routes.available(kind)) {
        TileRoute r = Routes.forKind(kind);
        assertEquals(kind == Kind.BARRIER ? Routes.BARRIER_CLASS : Routes.SHUFFLE_CLASS, r.getClass().getName());
      }
    }
  }

  @Test
  void aRouteClassThatIsMissingOrWrongIsNamed() {
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> Routes.byName("org.foldcp.spark.nowhere.NoRoute", "barrier"));
    assertTrue(e.getMessage().startsWith("the barrier route needs org.foldcp.spark.nowhere.NoRoute, which is not in"
        + " this build"), e.getMessage());
    e = assertThrows(IllegalStateException.class, () -> Routes.byName(String.class.getName(), "shuffle"));
    assertEquals("java.lang.String does not implement " + TileRoute.class.getName(), e.getMessage());
    e = assertThrows(IllegalStateException.class, () -> Routes.byName(NoDefaultConstructor.class.getName(), "shuffle"));
    assertTrue(e.getMessage().contains("needs a public no-argument constructor"), e.getMessage());
  }

  /** A route Spark could not create by name. */
  public static final class NoDefaultConstructor implements TileRoute {
    public NoDefaultConstructor(int unused) {}

    @Override
    public org.apache.spark.api.java.JavaRDD<org.foldcp.spark.tiles.TileRecord> run(
        org.apache.spark.api.java.JavaRDD<org.foldcp.spark.tiles.TileRecord> tiles, org.foldcp.ops.layer.LayerStack stack,
        org.foldcp.spark.route.RoutePlan plan, org.foldcp.spark.route.RouteMetrics metrics) {
      return tiles;
    }
  }
}
