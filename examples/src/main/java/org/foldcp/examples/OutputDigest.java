package org.foldcp.examples;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Collection;
import java.util.HexFormat;
import java.util.List;
import org.apache.spark.sql.Row;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.sql.FoldCp;

/**
 * A bit-exact identity of a job's whole output that does not depend on the route: each complex is
 * assembled from its tiles (however the route cut them) and its bf16 values are hashed in (b, i,
 * j, c) order, the complexes in id order. Two runs print the same digest exactly when every
 * output value of every complex has the same bits, which the double checksum beside it cannot
 * promise (its last digits depend on the order the rows came back in).
 */
final class OutputDigest {
  private OutputDigest() {}

  static String of(List<Row> rows, Collection<String> complexIdsInOrder) {
    MessageDigest sha;
    try {
      sha = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("this JVM has no SHA-256", e);
    }
    for (String id : complexIdsInOrder) {
      sha.update(id.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      PairTensor t = FoldCp.assemble(rows, id);
      byte[] buf = new byte[t.cols() * t.dim() * 2];
      for (int b = 0; b < t.batch(); b++) {
        for (int i = 0; i < t.rows(); i++) {
          short[] row = t.row(b, i);
          for (int k = 0; k < row.length; k++) {
            buf[2 * k] = (byte) row[k];
            buf[2 * k + 1] = (byte) (row[k] >>> 8);
          }
          sha.update(buf, 0, 2 * row.length);
        }
      }
    }
    return HexFormat.of().formatHex(sha.digest()).substring(0, 32);
  }
}
