package org.foldcp.spark.sql;

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.SparkStrategy;
import scala.collection.immutable.Seq;

/** Plans {@link TriMulNode} as {@link TriMulExec}; the child is planned by the other strategies. */
public final class TriMulStrategy extends SparkStrategy {
  @Override
  public Seq<SparkPlan> apply(LogicalPlan plan) {
    if (!(plan instanceof TriMulNode)) {
      return Scala.seq();
    }
    TriMulNode node = (TriMulNode) plan;
    return Scala.seq(new TriMulExec(node.stack(), node.plan(), node.input(), node.output(), planLater(node.child())));
  }
}
