package org.foldcp.spark.data;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.foldcp.ops.InvalidInputException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NpyDirectoryTest {
  private static final Configuration CONF = new Configuration();

  @TempDir
  Path dir;

  @Test
  void pairsWithAndWithoutMasksInIdOrderSkippingHiddenNames() throws IOException {
    DataSession.write(dir, "b", DataSession.complex(5, 1, true));
    DataSession.write(dir, "a", DataSession.complex(4, 2, false));
    Files.writeString(dir.resolve("_SUCCESS"), "");
    Files.writeString(dir.resolve(".a.npy.crc"), "x");
    Files.createDirectory(dir.resolve("_temporary"));

    List<ComplexFiles> got = NpyDirectory.list(CONF, DataSession.uri(dir));

    assertEquals(List.of("a", "b"), got.stream().map(ComplexFiles::id).toList());
    assertNull(got.get(0).mask());
    assertTrue(got.get(1).mask().endsWith("/b.mask.npy"), got.get(1).mask());
    assertEquals(Files.size(dir.resolve("b.npy")), got.get(1).pairBytes());
  }

  @Test
  void aMaskWithoutItsPairTensorIsNamed() {
    DataSession.write(dir, "a", DataSession.complex(4, 2, false));
    DataSession.write(dir, "b", DataSession.complex(4, 3, true));
    dir.resolve("b.npy").toFile().delete();

    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> NpyDirectory.list(CONF, DataSession.uri(dir)));
    assertTrue(e.getMessage().contains("b.mask.npy") && e.getMessage().contains("without b.npy")
        && e.getMessage().contains("needs its pair tensor"), e.getMessage());
  }

  @Test
  void otherFilesAndSubdirectoriesAreRefusedByName() throws IOException {
    DataSession.write(dir, "a", DataSession.complex(4, 2, false));
    Files.writeString(dir.resolve("notes.txt"), "x");
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> NpyDirectory.list(CONF, DataSession.uri(dir)));
    assertTrue(e.getMessage().contains("notes.txt") && e.getMessage().contains("only <id>.npy"), e.getMessage());

    Files.delete(dir.resolve("notes.txt"));
    Files.createDirectory(dir.resolve("more"));
    e = assertThrows(InvalidInputException.class, () -> NpyDirectory.list(CONF, DataSession.uri(dir)));
    assertTrue(e.getMessage().contains("more") && e.getMessage().contains("flat"), e.getMessage());
  }

  @Test
  void anEmptyOrMissingDirectoryIsAnError() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> NpyDirectory.list(CONF, DataSession.uri(dir)));
    assertTrue(e.getMessage().contains("holds no <id>.npy"), e.getMessage());
    e = assertThrows(InvalidInputException.class,
        () -> NpyDirectory.list(CONF, DataSession.uri(dir.resolve("absent"))));
    assertTrue(e.getMessage().contains("does not exist"), e.getMessage());
  }

  @Test
  void aFileNamedOnlyBySuffixHasNoId() throws IOException {
    Files.write(dir.resolve(".npy"), new byte[0]); // hidden: skipped
    DataSession.write(dir, "a", DataSession.complex(4, 2, false));
    Files.copy(dir.resolve("a.npy"), dir.resolve("x.mask.npy"));
    Files.copy(dir.resolve("a.npy"), dir.resolve("x.npy"));
    Files.copy(dir.resolve("a.npy"), dir.resolve("q.mask.mask.npy"));
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> NpyDirectory.list(CONF, DataSession.uri(dir)));
    assertTrue(e.getMessage().contains("q.mask.mask.npy") && e.getMessage().contains("without q.mask.npy"),
        e.getMessage());
  }
}
