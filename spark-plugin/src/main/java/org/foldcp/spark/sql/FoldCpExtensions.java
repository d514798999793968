package org.foldcp.spark.sql;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.foldcp.spark.udf.FoldCpFunctions;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * What {@code spark.sql.extensions=org.foldcp.spark.sql.FoldCpExtensions} installs into every
 * session: the planner strategy that turns fold-cp's logical TriMul operator into its row-based
 * physical operator, and the SQL function {@code foldcp_trimul}. Spark instantiates this class by name with its no-argument constructor.
 */
public final class FoldCpExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectPlannerStrategy(new AbstractFunction1<SparkSession, org.apache.spark.sql.execution.SparkStrategy>() {
      @Override
      public org.apache.spark.sql.execution.SparkStrategy apply(SparkSession session) {
        return new TriMulStrategy();
      }
    });
    FoldCpFunctions.inject(extensions);
    return BoxedUnit.UNIT;
  }
}
