package org.foldcp.spark.udf;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.UnsupportedFileSystemException;
import org.apache.spark.SparkEnv;
import org.apache.spark.SparkFiles;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.spark.data.HadoopChannel;

/**
 * The {@code weights} argument of {@code foldcp_trimul} as this executor finds it: where the file
 * is ({@link #location()}, one spelling per file), which version (its length and modification
 * time, so that a file rewritten in place is read again instead of served stale from the cache;
 * the cost is one stat per call), and how to read it.
 *
 * <p>Two kinds of argument:
 * <ul>
 *   <li>a URI with a scheme ({@code file:/...}, {@code hdfs://...}, {@code s3a://...}, any scheme
 *       the executor's Hadoop configuration has a FileSystem for): read through Hadoop's
 *       FileSystem ({@link HadoopChannel}, positional reads), as the data source reads .npy files;
 *   <li>a plain path, local to the executor; a bare file name not in the working directory is
 *       looked up among the files shipped with the application (spark-submit --files,
 *       SparkContext.addFile), which is how a driver-side file reaches executors without shared
 *       storage.
 * </ul>
 * Local files are named by their real path as a file: URI, the form Hadoop gives the same file,
 * so that every spelling of one file shares one cache entry.
 */
final class WeightsFile {
  /**
   * "scheme:/": a URI for Hadoop. The slash keeps a relative file name with a colon in it
   * ("model:v2.safetensors") a local path, and two letters at least keep a Windows drive one.
   */
  private static final Pattern URI_WITH_SCHEME = Pattern.compile("^[A-Za-z][A-Za-z0-9+.-]+:/.*");

  /** Opens the file for positional reads. */
  private interface Opener {
    SeekableByteChannel open() throws IOException;
  }

  private final String location;
  private final long length;
  private final long modifiedMillis;
  private final Opener opener;

  private WeightsFile(String location, long length, long modifiedMillis, Opener opener) {
    this.location = location;
    this.length = length;
    this.modifiedMillis = modifiedMillis;
    this.opener = opener;
  }

  /** A file that cannot be opened, for keys made in tests of the cache. */
  static WeightsFile unopenable(String location, long length, long modifiedMillis) {
    return new WeightsFile(location, length, modifiedMillis, () -> {
      throw new IOException(location + " is a test key's file and cannot be opened");
    });
  }

  /**
   * Finds {@code weights} on this executor and reads its length and modification time; a URI
   * with a scheme through the file system {@code hadoop} names for it. Every bad argument is an
   * InvalidInputException naming it.
   */
  static WeightsFile resolve(String weights, Supplier<Configuration> hadoop) {
    InvalidInputException.require(weights != null && !weights.isBlank(), "weights",
        weights == null ? "null" : "'" + weights + "'", "must be the path or URI of a .safetensors file");
    return URI_WITH_SCHEME.matcher(weights).matches() ? onHadoop(weights, hadoop.get()) : local(weights);
  }

  private static WeightsFile onHadoop(String weights, Configuration conf) {
    org.apache.hadoop.fs.Path path;
    FileSystem fs;
    try {
      path = new org.apache.hadoop.fs.Path(weights);
      fs = path.getFileSystem(conf);
    } catch (UnsupportedFileSystemException e) {
      throw InvalidInputException.of("weights", "'" + weights + "'", "its scheme has no Hadoop FileSystem on "
          + where() + " (" + e.getMessage() + "): use file:, hdfs:, s3a: (with hadoop-aws on the class path) or"
          + " another scheme the executors' Hadoop configuration maps (spark.hadoop.fs.<scheme>.impl), or a local path");
    } catch (IllegalArgumentException e) { // a malformed URI, or a host that does not resolve
      throw InvalidInputException.of("weights", "'" + weights + "'", "Hadoop cannot open its file system: "
          + e.getMessage());
    } catch (IOException e) {
      throw new UncheckedIOException("opening the file system of the weights file " + weights, e);
    }
    FileStatus status;
    try {
      status = fs.getFileStatus(path);
    } catch (FileNotFoundException e) {
      throw InvalidInputException.of("weights file", "'" + weights + "'", "does not exist on " + where()
          + " (looked at " + fs.makeQualified(path) + ")");
    } catch (IOException e) {
      throw new UncheckedIOException("reading the status of the weights file " + weights, e);
    }
    InvalidInputException.require(status.isFile(), "weights file", "'" + weights + "'",
        "must be a regular .safetensors file, but " + status.getPath() + " is not (a directory?)");
    return new WeightsFile(status.getPath().toString(), status.getLen(), status.getModificationTime(),
        () -> HadoopChannel.open(fs, status));
  }

  private static WeightsFile local(String weights) {
    Path path;
    try {
      path = Path.of(weights);
    } catch (IllegalArgumentException e) { // also InvalidPathException, a subclass
      throw InvalidInputException.of("weights", "'" + weights + "'", "is not a valid file path (" + e.getMessage() + ")");
    }
    if (!Files.exists(path) && path.getParent() == null && SparkEnv.get() != null) {
      Path shipped = Path.of(SparkFiles.get(path.toString()));
      if (Files.exists(shipped)) {
        path = shipped;
      }
    }
    InvalidInputException.require(Files.exists(path), "weights file", "'" + weights + "'",
        "does not exist on " + where() + " (looked at " + path.toAbsolutePath()
            + (path.getParent() == null ? " and among the files shipped with the application" : "") + ")");
    InvalidInputException.require(Files.isRegularFile(path), "weights file", "'" + weights + "'",
        "must be a regular .safetensors file, but " + path.toAbsolutePath() + " is not (a directory?)");
    try {
      Path real = path.toRealPath();
      BasicFileAttributes a = Files.readAttributes(real, BasicFileAttributes.class);
      return new WeightsFile(new org.apache.hadoop.fs.Path(real.toUri()).toString(), a.size(),
          a.lastModifiedTime().to(TimeUnit.MILLISECONDS), () -> FileChannel.open(real, StandardOpenOption.READ));
    } catch (IOException e) {
      throw new UncheckedIOException("reading the attributes of the weights file " + path, e);
    }
  }

  private static String where() {
    SparkEnv env = SparkEnv.get();
    return env == null ? "this machine" : "executor " + env.executorId();
  }

  /** The file as one URI, e.g. "file:/models/m.safetensors" or "hdfs://nn:8020/models/m.safetensors". */
  String location() {
    return location;
  }

  /** A channel for positional reads; the caller closes it. */
  SeekableByteChannel open() {
    try {
      return opener.open();
    } catch (IOException e) {
      throw new UncheckedIOException("opening the weights file " + location, e);
    }
  }

  /** Same file, same version: the opener is not part of it. */
  @Override
  public boolean equals(Object o) {
    if (!(o instanceof WeightsFile)) {
      return false;
    }
    WeightsFile f = (WeightsFile) o;
    return f.location.equals(location) && f.length == length && f.modifiedMillis == modifiedMillis;
  }

  @Override
  public int hashCode() {
    return Objects.hash(location, length, modifiedMillis);
  }

  @Override
  public String toString() {
    return location + " (" + length + " bytes)";
  }
}
