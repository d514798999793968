package org.foldcp.ops.io;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributeView;
import java.security.SecureRandom;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A file written under a temporary name beside its target and renamed over the target only once
 * complete ({@link #commit}): a write that fails or is killed half way leaves the previous file
 * (or none) under the target's name, never a half-written one; closing without commit deletes
 * the temporary file, and so does the JVM's shutdown (SIGTERM, SIGINT, System.exit) for every
 * temporary file still open, through one shutdown hook.
 *
 * <p>Modes: a new file gets what the process's umask gives (the temporary file is created without
 * explicit permissions, as every Unix tool's output is); a file written over keeps its old mode.
 */
final class AtomicWrite implements AutoCloseable {
  /** Temporary files being written now, deleted at JVM shutdown if still there. */
  private static final Set<Path> OPEN = ConcurrentHashMap.newKeySet();

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      for (Path p : OPEN) {
        deleteQuietly(p);
      }
    }, "fold-cp: remove unfinished output files"));
  }

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
    OutputPath.requireWritable(target, "output file");
    Path dir = target.toAbsolutePath().getParent();
    Path temp = null;
    try {
      for (int attempt = 0; temp == null; attempt++) {
        Path t = dir.resolve("." + target.getFileName() + "." + Long.toHexString(RANDOM.nextLong()) + ".partial");
        try {
          OPEN.add(t);
          Files.createFile(t); // no attributes: the umask decides the mode
          temp = t;
        } catch (FileAlreadyExistsException e) {
          OPEN.remove(t);
          if (attempt > 100) {
            throw e;
          }
        }
      }
      keepMode(target, temp);
      return new AtomicWrite(target, temp, FileChannel.open(temp, StandardOpenOption.WRITE,
          StandardOpenOption.TRUNCATE_EXISTING));
    } catch (IOException e) {
      deleteQuietly(temp);
      throw new UncheckedIOException("creating a temporary file beside " + target, e);
    }
  }

  private static final SecureRandom RANDOM = new SecureRandom();

  /** Gives {@code temp} the permissions of an existing {@code target} (POSIX file systems only). */
  private static void keepMode(Path target, Path temp) throws IOException {
    if (Files.exists(target) && Files.getFileStore(temp).supportsFileAttributeView(PosixFileAttributeView.class)) {
      Files.setPosixFilePermissions(temp, Files.getPosixFilePermissions(target));
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
      OPEN.remove(temp);
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
      OPEN.remove(p);
      try {
        Files.deleteIfExists(p);
      } catch (IOException ignored) {
        // a stray temporary file, named as such, is all that is left
      }
    }
  }
}
