package org.foldcp.spark.data;

import java.io.IOException;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.PathOutputCommitter;
import org.foldcp.spark.tiles.TileRecord;

/**
 * Writes each complex's output tiles as {@code <id>.npy} (float32) through Hadoop's output
 * committer, which Spark drives with its commit protocol ({@code saveAsNewAPIHadoopFile}): a task
 * writes into its attempt's work directory under {@code <dir>/_temporary}, only a committed task's
 * files are moved into {@code <dir>}, a failed or killed attempt's are deleted with it, and the
 * job's commit writes {@code _SUCCESS}. So {@code <dir>} never shows a half-written file, and a
 * retried task writes its files afresh. The committer is the one Hadoop configures for the
 * path's scheme (FileOutputCommitter, or e.g. an S3A committer where one is set up).
 *
 * <p>Records are (complex id, tile), each complex's tiles consecutive and sorted by (row0, col0)
 * ({@link NpyComplexWriter}).
 */
public final class NpyOutputFormat extends FileOutputFormat<String, TileRecord> {
  /** The rank of the written arrays: 4 for (1, N, N, D), 3 for (N, N, D). */
  static final String RANK = "foldcp.npy.output.rank";

  @Override
  public RecordWriter<String, TileRecord> getRecordWriter(TaskAttemptContext context) throws IOException {
    Path work = ((PathOutputCommitter) getOutputCommitter(context)).getWorkPath();
    return new NpyComplexWriter(work.getFileSystem(context.getConfiguration()), work,
        context.getConfiguration().getInt(RANK, 4));
  }
}
