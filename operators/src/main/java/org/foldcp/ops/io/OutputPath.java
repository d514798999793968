package org.foldcp.ops.io;

import java.nio.file.Files;
import java.nio.file.Path;
import org.foldcp.ops.InvalidInputException;

/**
 * The check every local output file gets before any work is done for it: a job that computes for
 * hours must not find out at the end that it cannot write its result. The target may exist (it is
 * replaced) but must not be a folder; its folder must exist and be writable.
 */
public final class OutputPath {
  private OutputPath() {}

  /**
   * Throws {@link InvalidInputException} naming {@code what}, the path and the rule unless
   * {@code target} can be written.
   */
  public static void requireWritable(Path target, String what) {
    Path abs = target.toAbsolutePath().normalize();
    InvalidInputException.require(!Files.isDirectory(abs), what, "'" + target + "'",
        "is a folder: name a file to write (for example " + target.resolve("out.npy") + ")");
    Path dir = abs.getParent();
    InvalidInputException.require(dir != null && Files.isDirectory(dir), what, "'" + target + "'",
        "its folder " + dir + " does not exist: create it first");
    InvalidInputException.require(Files.isWritable(dir), what, "'" + target + "'",
        "its folder " + dir + " is not writable by this user");
    InvalidInputException.require(!Files.exists(abs) || Files.isWritable(abs), what, "'" + target + "'",
        "exists and is not writable by this user");
  }
}
