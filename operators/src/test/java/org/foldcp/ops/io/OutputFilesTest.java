package org.foldcp.ops.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.gpu.GpuTests;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Output files as a user meets them: a bad path fails before any work with one message naming the
 * path and the rule; a write killed half way leaves no temporary file and the old file as it was;
 * new files get the umask's mode, files written over keep theirs.
 */
class OutputFilesTest {
  private static final PairTensor SMALL = PairTensor.random(1, 4, 8, 1, 0);

  @Test
  void aMissingFolderAndAFolderAreRefusedByName(@TempDir Path dir) throws IOException {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> Npy.writePair(dir.resolve("no/such/out.npy"), SMALL));
    assertTrue(e.getMessage().startsWith("output file = '" + dir.resolve("no/such/out.npy") + "': its folder ")
        && e.getMessage().contains("does not exist"), e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> Npy.writePair(dir, SMALL));
    assertTrue(e.getMessage().contains("is a folder: name a file to write"), e.getMessage());
    try (Stream<Path> left = Files.list(dir)) {
      assertEquals(0, left.count(), "nothing written");
    }
  }

  @Test
  void aReadOnlyFolderIsRefusedByName(@TempDir Path dir) throws IOException {
    Path ro = Files.createDirectory(dir.resolve("ro"));
    Files.setPosixFilePermissions(ro, PosixFilePermissions.fromString("r-xr-xr-x"));
    Assumptions.assumeFalse(Files.isWritable(ro), "this user (root?) may write into a read-only folder: the read-only"
        + " case cannot be seen here");
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> Npy.writePair(ro.resolve("out.npy"), SMALL));
    assertTrue(e.getMessage().contains("is not writable by this user"), e.getMessage());
  }

  @Test
  void newFilesGetTheUmasksModeAndFilesWrittenOverKeepTheirs(@TempDir Path dir) throws IOException {
    Path plain = Files.createFile(dir.resolve("made-by-the-os")); // the mode the umask gives
    Path out = dir.resolve("out.npy");
    Npy.writePair(out, SMALL);
    assertEquals(Files.getPosixFilePermissions(plain), Files.getPosixFilePermissions(out),
        "a new output file has the mode any new file gets here (not 0600)");
    Set<PosixFilePermission> custom = PosixFilePermissions.fromString("rw-r-----");
    Files.setPosixFilePermissions(out, custom);
    Npy.writePair(out, PairTensor.random(1, 4, 8, 2, 0));
    assertEquals(custom, Files.getPosixFilePermissions(out), "writing over a file keeps its mode");
  }

  /** SIGTERM to a JVM in the middle of writing a 256 MiB output: no temporary file, the old file unchanged. */
  @Test
  void aWriterKilledMidWriteLeavesNoPartialFileAndTheOldFileAsItWas(@TempDir Path dir) throws Exception {
    Path out = dir.resolve("out.npy");
    Npy.writePair(out, SMALL);
    byte[] old = Files.readAllBytes(out);
    Process p = GpuTests.testJvm(List.of(), List.of("-Xmx2g"), InterruptedWriter.class, List.of(out.toString()),
        dir.resolve("writer.log")).start();
    try {
      long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (partials(dir).isEmpty() && p.isAlive() && System.nanoTime() < until) {
        Thread.sleep(2);
      }
      assertTrue(!partials(dir).isEmpty(), "the writer got to write: " + Files.readString(dir.resolve("writer.log")));
      p.destroy(); // SIGTERM
      assertTrue(p.waitFor(30, TimeUnit.SECONDS), "the writer ends on SIGTERM");
      assertNotEquals(0, p.exitValue(), "killed, not finished");
    } finally {
      p.destroyForcibly();
    }
    assertEquals(List.of(), partials(dir), "no temporary file left: " + Files.readString(dir.resolve("writer.log")));
    assertArrayEquals(old, Files.readAllBytes(out), "the old file as it was");
  }

  private static List<Path> partials(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(f -> f.getFileName().toString().endsWith(".partial")).toList();
    }
  }
}
