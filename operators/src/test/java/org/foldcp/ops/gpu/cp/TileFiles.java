package org.foldcp.ops.gpu.cp;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.foldcp.ops.tensor.PairTensor;

/**
 * Tiles between the test process and its rank processes: bf16 values (little-endian, row-major
 * [B][rows][cols][D]) followed by one mask byte per (b, row, col) (1 = valid).
 */
final class TileFiles {
  private TileFiles() {}

  static void write(Path p, PairTensor t) throws IOException {
    long values = t.elementCount();
    long tokens = (long) t.batch() * t.rows() * t.cols();
    ByteBuffer bb = ByteBuffer.allocate((int) (values * 2 + tokens)).order(ByteOrder.LITTLE_ENDIAN);
    for (int b = 0; b < t.batch(); b++) {
      for (int i = 0; i < t.rows(); i++) {
        short[] row = t.row(b, i);
        bb.asShortBuffer().put(row);
        bb.position(bb.position() + row.length * 2);
      }
    }
    for (int b = 0; b < t.batch(); b++) {
      for (int i = 0; i < t.rows(); i++) {
        byte[] m = t.maskRow(b, i);
        for (int j = 0; j < t.cols(); j++) {
          bb.put(m == null || m[j] != 0 ? (byte) 1 : (byte) 0);
        }
      }
    }
    writeAtomically(p, bb.array());
  }

  /** Writes under a temporary name and renames, so a process polling for {@code p} never reads half of it. */
  static void writeAtomically(Path p, byte[] bytes) throws IOException {
    Path tmp = p.resolveSibling(p.getFileName() + ".tmp");
    Files.write(tmp, bytes);
    Files.move(tmp, p, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
  }

  static PairTensor read(Path p, int batch, int rows, int cols, int dim) throws IOException {
    ByteBuffer bb = ByteBuffer.wrap(Files.readAllBytes(p)).order(ByteOrder.LITTLE_ENDIAN);
    PairTensor t = PairTensor.zeros(batch, rows, cols, dim);
    for (int b = 0; b < batch; b++) {
      for (int i = 0; i < rows; i++) {
        short[] row = t.row(b, i);
        bb.asShortBuffer().get(row);
        bb.position(bb.position() + row.length * 2);
      }
    }
    if (bb.remaining() >= (long) batch * rows * cols) {
      byte[][] mask = new byte[batch * rows][cols];
      for (byte[] m : mask) {
        bb.get(m);
      }
      t.setMask(mask);
    }
    return t;
  }
}
