package org.foldcp.spark.sql;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.foldcp.spark.barrier.BarrierRoute;
import org.foldcp.spark.route.RoutePlan.Kind;
import org.foldcp.spark.route.SingleRankRoute;
import org.foldcp.spark.shuffle.ShuffleRoute;
import org.junit.jupiter.api.Test;

class RoutesTest {
  @Test
  void everyKindHasItsRoute() {
    assertTrue(Routes.forKind(Kind.SINGLE) instanceof SingleRankRoute);
    assertTrue(Routes.forKind(Kind.BARRIER) instanceof BarrierRoute);
    assertTrue(Routes.forKind(Kind.SHUFFLE) instanceof ShuffleRoute);
  }
}
