package org.foldcp.spark.udf;

import java.net.URI;
import org.apache.hadoop.fs.RawLocalFileSystem;

/**
 * The local disk under a scheme of its own, {@code lfs:}, mapped for a test session with
 * spark.hadoop.fs.lfs.impl: a path the JDK cannot open, so a weights file read under it was read
 * through Hadoop's FileSystem, as an hdfs: or s3a: one would be.
 */
public class RenamedLocalFileSystem extends RawLocalFileSystem {
  static final String SCHEME = "lfs";

  @Override
  public URI getUri() {
    return URI.create(SCHEME + ":///");
  }

  @Override
  public String getScheme() {
    return SCHEME;
  }
}
