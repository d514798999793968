package org.foldcp.ops.io;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * A file written under a temporary name beside its target and renamed over the target only once
 * complete ({@link #commit}): a write that fails or is killed half way leaves the previous file
 * (or none) under the target's name, never a half-written one; closing without commit deletes
 * the temporary file.
 */
final class AtomicWrite implements AutoCloseable {
  private final Path target;
  private final Path temp;
  private final FileChannel channel;
  private boolean committed;

  private AtomicWrite(Path target, Path temp, FileChannel channel) {
    this.target = target;
    this.temp = temp;
    this.channel = channel;
  }

  static AtomicWrite open(Path target) {
    Path dir = target.toAbsolutePath().getParent();
    Path temp = null;
    try {
      temp = Files.createTempFile(dir, "." + target.getFileName() + ".", ".partial");
      return new AtomicWrite(target, temp, FileChannel.open(temp, StandardOpenOption.WRITE,
          StandardOpenOption.TRUNCATE_EXISTING));
    } catch (IOException e) {
      deleteQuietly(temp);
      throw new UncheckedIOException("creating a temporary file beside " + target, e);
    }
  }

  FileChannel channel() {
    return channel;
  }

  /** Makes the written bytes the target's content, in one rename. */
  void commit() {
    try {
      channel.force(false);
      channel.close();
      try {
        Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING); // a file system without atomic renames
      }
      committed = true;
    } catch (IOException e) {
      throw new UncheckedIOException("writing " + target, e);
    }
  }

  @Override
  public void close() {
    if (!committed) {
      try {
        channel.close();
      } catch (IOException ignored) {
        // the temporary file goes anyway
      }
      deleteQuietly(temp);
    }
  }

  private static void deleteQuietly(Path p) {
    if (p != null) {
      try {
        Files.deleteIfExists(p);
      } catch (IOException ignored) {
        // a stray temporary file, named as such, is all that is left
      }
    }
  }
}
