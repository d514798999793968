package org.foldcp.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;

/** Progress: the bar's text, and the job group and step descriptions that the Spark UI shows. */
class JobProgressTest {
  @Test
  void barShowsStepsTasksAndTime() {
    assertEquals("fold-cp [>...........................] 0/4 [1/4] prepare | 0.0 s",
        JobProgress.bar(0, 4, "[1/4] prepare", 0, 0, 0));
    String mid = JobProgress.bar(2, 4, "[3/4] layer 1/2 outgoing", 1, 2, 12.34);
    assertEquals("fold-cp [#################>..........] 2/4 [3/4] layer 1/2 outgoing | tasks 1/2 | 12.3 s", mid);
    assertEquals("fold-cp [############################] 4/4 | 20.0 s", JobProgress.bar(4, 4, "[4/4] x", 0, 0, 20));
  }

  @Test
  void stepsAreSparkJobDescriptionsInTheJobGroupAndTheTerminalGetsABar() throws Exception {
    SparkSession spark = SparkSession.builder().config(TriMulJob.conf(JobOptions.parse(new String[] {"--master", "local[2]"})))
        .getOrCreate();
    List<String> seen = new CopyOnWriteArrayList<>();
    spark.sparkContext().addSparkListener(new SparkListener() {
      @Override
      public void onJobStart(SparkListenerJobStart start) {
        seen.add(start.properties().getProperty("spark.jobGroup.id") + " | "
            + start.properties().getProperty("spark.job.description"));
      }
    });
    StringWriter terminal = new StringWriter();
    try {
      JobOptions o = JobOptions.parse(new String[] {"--n", "16", "--dim", "8", "--layers", "2", "--complexes", "2", "--per-layer"});
      try (JobProgress p = JobProgress.start(spark, "test", 5, new PrintWriter(terminal))) {
        p.begin("first", "a Spark job");
        spark.range(10).count();
        p.end();
      }
      TriMulJob.run(spark, o);
      spark.sparkContext().listenerBus().waitUntilEmpty();
    } finally {
      spark.stop();
    }
    assertTrue(terminal.toString().contains("\rfold-cp [#####"), terminal.toString());
    assertTrue(seen.contains("fold-cp-trimul | fold-cp [1/5] first: a Spark job"), seen.toString());
    assertTrue(seen.stream().anyMatch(s -> s.startsWith("fold-cp-trimul | fold-cp [2/5] inputs: 2 complexes")), seen.toString());
    assertTrue(seen.stream().anyMatch(s -> s.startsWith("fold-cp-trimul | fold-cp [4/5] layer 2/2 incoming: 2 complexes, route single cp=1")),
        seen.toString());
  }
}
