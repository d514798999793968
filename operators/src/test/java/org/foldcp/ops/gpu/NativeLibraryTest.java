package org.foldcp.ops.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How NativeLibrary finds the library and what it says when it cannot (no GPU needed). */
class NativeLibraryTest {

  @Test
  void resourcePathFollowsOsArchAndName() {
    assertEquals("/" + System.getProperty("os.arch") + "/" + System.getProperty("os.name") + "/libfoldcp_jni.so",
        NativeLibrary.resourcePath());
  }

  @Test
  void missingResourceSaysTheJarWasBuiltWithoutNvcc() {
    NativeLibrary.Outcome o = NativeLibrary.locateAndLoad(NativeLibrary.class, "/amd64/Linux/libfoldcp_jni_absent.so", null);
    assertNull(o.from);
    assertNotNull(o.failure);
    String m = o.failure;
    if (System.getProperty("os.name").equals("Linux") && System.getProperty("os.arch").equals("amd64")) {
      assertTrue(m.startsWith("libfoldcp_jni.so is not in this build: no resource /amd64/Linux/libfoldcp_jni_absent.so"), m);
      assertTrue(m.contains("without nvcc") && m.contains("-Dfoldcp.native.path"), m);
    }
  }

  @Test
  void otherPlatformsAreNamed() {
    String m = NativeLibrary.missingMessage("/aarch64/Mac OS X/libfoldcp_jni.so", "Mac OS X", "aarch64");
    assertTrue(m.contains("not available for Mac OS X/aarch64") && m.contains("Linux on amd64"), m);
    String linux = NativeLibrary.missingMessage("/amd64/Linux/libfoldcp_jni.so", "Linux", "amd64");
    assertTrue(linux.contains("is not in this build"), linux);
  }

  @Test
  void overridePathThatDoesNotExist(@TempDir Path dir) {
    String p = dir.resolve("nothing.so").toString();
    NativeLibrary.Outcome o = NativeLibrary.locateAndLoad(NativeLibrary.class, NativeLibrary.resourcePath(), p);
    assertTrue(o.failure.contains("not found at -Dfoldcp.native.path=" + p), o.failure);
  }

  @Test
  void aFileThatCannotBeLoadedGivesTheLoaderMessage() {
    // An ELF executable (position-independent): glibc >= 2.30 refuses to dlopen it, with its own
    // message. (A file that is no ELF at all would work too, but makes the JVM print a stack-guard
    // warning.)
    Path exe = Path.of("/bin/true");
    Assumptions.assumeTrue(Files.isRegularFile(exe), "no /bin/true here");
    NativeLibrary.Outcome o = NativeLibrary.locateAndLoad(NativeLibrary.class, NativeLibrary.resourcePath(),
        exe.toString());
    Assumptions.assumeTrue(o.failure != null, "this C library loads executables with dlopen");
    String prefix = "could not load libfoldcp_jni.so (from " + exe + "): ";
    assertTrue(o.failure.startsWith(prefix), o.failure);
    assertTrue(o.failure.length() > prefix.length() + 5, "the dynamic loader's own words follow: " + o.failure);
  }

  @Test
  void unavailableReasonAgreesWithBundling() {
    String why = NativeLibrary.unavailableReason();
    if (!NativeLibrary.isBundled() && System.getProperty(NativeLibrary.PATH_PROPERTY) == null) {
      assertNotNull(why);
      assertTrue(why.contains("not in this build") || why.contains("not available for"), why);
    }
    assertEquals(why, NativeLibrary.unavailableReason(), "the outcome is remembered");
  }
}
