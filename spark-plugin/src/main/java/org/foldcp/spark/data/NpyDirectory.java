package org.foldcp.spark.data;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.foldcp.ops.InvalidInputException;

/**
 * The directory convention for complexes on any Hadoop file system: a flat directory of
 * {@code <id>.npy} pair tensors, (N, N, D) or (B, N, N, D) float32 or float16, each with an
 * optional {@code <id>.mask.npy}, (N, N) or (B, N, N), uint8, bool or float32 of 0 and 1. Names
 * that start with {@code _} or {@code .} are skipped, as Spark and Hadoop skip them
 * ({@code _SUCCESS}, {@code .crc} files, {@code _temporary}), so an output directory of
 * {@link NpyOutputFormat} reads back as input. Anything else is an error that names the file:
 * a file not ending in .npy, a subdirectory, a mask without its pair tensor, a directory with no
 * pair tensor at all. Only names are checked here (on the driver); shapes are checked where the
 * files are read.
 */
final class NpyDirectory {
  static final String PAIR_SUFFIX = ".npy";
  static final String MASK_SUFFIX = ".mask.npy";

  private NpyDirectory() {}

  /** The complexes in {@code dir}, in the order of their ids. */
  static List<ComplexFiles> list(Configuration conf, String dir) {
    Path path = new Path(dir);
    FileStatus[] entries;
    try {
      FileSystem fs = path.getFileSystem(conf);
      entries = fs.listStatus(path);
    } catch (FileNotFoundException e) {
      throw InvalidInputException.of("directory of complexes", dir, "does not exist");
    } catch (IOException e) {
      throw new UncheckedIOException("listing " + dir, e);
    }
    Map<String, FileStatus> pairs = new TreeMap<>();
    Map<String, FileStatus> masks = new TreeMap<>();
    for (FileStatus f : entries) {
      String name = f.getPath().getName();
      if (name.startsWith("_") || name.startsWith(".")) {
        continue;
      }
      String shown = f.getPath().toString();
      InvalidInputException.require(!f.isDirectory(), "entry of " + dir, shown,
          "a directory of complexes is flat: <id>.npy pair tensors and <id>.mask.npy masks, no subdirectories");
      InvalidInputException.require(name.endsWith(PAIR_SUFFIX), "file in " + dir, shown,
          "a directory of complexes holds only <id>.npy pair tensors and <id>.mask.npy masks (names starting with"
              + " _ or . are skipped)");
      if (name.endsWith(MASK_SUFFIX)) {
        masks.put(idOf(name, MASK_SUFFIX, shown), f);
      } else {
        pairs.put(idOf(name, PAIR_SUFFIX, shown), f);
      }
    }
    for (Map.Entry<String, FileStatus> m : masks.entrySet()) {
      InvalidInputException.require(pairs.containsKey(m.getKey()), "mask " + m.getValue().getPath(),
          "without " + m.getKey() + PAIR_SUFFIX, "a mask <id>.mask.npy needs its pair tensor <id>.npy in the same"
              + " directory");
    }
    InvalidInputException.require(!pairs.isEmpty(), "directory of complexes", dir,
        "holds no <id>.npy pair tensor");
    List<ComplexFiles> out = new ArrayList<>();
    for (Map.Entry<String, FileStatus> p : pairs.entrySet()) {
      FileStatus mask = masks.get(p.getKey());
      out.add(new ComplexFiles(p.getKey(), p.getValue().getPath().toString(),
          mask == null ? null : mask.getPath().toString(), p.getValue().getLen()));
    }
    return out;
  }

  private static String idOf(String name, String suffix, String shown) {
    String id = name.substring(0, name.length() - suffix.length());
    InvalidInputException.require(!id.isEmpty(), "file name", shown, "needs a complex id before " + suffix);
    return id;
  }
}
