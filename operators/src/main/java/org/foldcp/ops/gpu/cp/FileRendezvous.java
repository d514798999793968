package org.foldcp.ops.gpu.cp;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link Rendezvous} through a folder every rank can read and write (one machine, or a shared
 * file system): round k of rank r is the file {@code round-k.rank-r}, written under a temporary
 * name and renamed, so a reader never sees half a message. Used by the multi-process team tests
 * and by jobs that start their ranks without Spark.
 */
public final class FileRendezvous extends Rendezvous {
  private final Path dir;

  public FileRendezvous(Path dir, int rank, int size) {
    super(rank, size);
    this.dir = dir;
  }

  @Override
  public List<byte[]> allGather(byte[] mine, Duration timeout) {
    int k = nextRound();
    int rank = rank();
    int size = size();
    try {
      Files.createDirectories(dir);
      Path tmp = Files.createTempFile(dir, "round-" + k + ".rank-" + rank, ".tmp");
      Files.write(tmp, mine);
      try {
        Files.move(tmp, file(k, rank), StandardCopyOption.ATOMIC_MOVE);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(tmp, file(k, rank), StandardCopyOption.REPLACE_EXISTING);
      }
      long deadline = System.nanoTime() + timeout.toNanos();
      List<Integer> missing = new ArrayList<>();
      while (true) {
        missing.clear();
        for (int r = 0; r < size; r++) {
          if (!Files.exists(file(k, r))) {
            missing.add(r);
          }
        }
        if (missing.isEmpty()) {
          break;
        }
        if (System.nanoTime() > deadline) {
          throw new TeamException("rank(s) " + missing + " of " + size + " did not join the team within "
              + timeout.toMillis() + " ms (rendezvous round " + k + " in " + dir + "; this is rank " + rank + ")");
        }
        Thread.sleep(20);
      }
      List<byte[]> all = new ArrayList<>(size);
      for (int r = 0; r < size; r++) {
        all.add(Files.readAllBytes(file(k, r)));
      }
      return all;
    } catch (IOException e) {
      throw new UncheckedIOException("rendezvous in " + dir + " failed", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TeamException("interrupted while waiting for the team in " + dir, e);
    }
  }

  private Path file(int k, int r) {
    return dir.resolve("round-" + k + ".rank-" + r);
  }
}
