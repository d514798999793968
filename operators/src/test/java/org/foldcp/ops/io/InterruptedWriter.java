package org.foldcp.ops.io;

import java.nio.file.Path;
import org.foldcp.ops.tensor.PairTensor;

/**
 * A child JVM for {@link OutputFilesTest}: writes one large pair tensor (256 MiB of float32) over
 * the file named by its argument, slowly enough to be killed half way; prints "writing" first.
 */
public final class InterruptedWriter {
  private InterruptedWriter() {}

  public static void main(String[] args) {
    PairTensor t = PairTensor.zeros(1, 1024, 1024, 64);
    System.out.println("writing");
    System.out.flush();
    for (int k = 0; k < 20; k++) { // long enough to be caught writing; the test kills it in the first
      Npy.writePair(Path.of(args[0]), t, 4);
    }
    System.out.println("done");
  }
}
