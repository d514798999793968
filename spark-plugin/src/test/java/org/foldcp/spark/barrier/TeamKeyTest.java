package org.foldcp.spark.barrier;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import org.foldcp.ops.layer.LayerStack;
import org.junit.jupiter.api.Test;

/** The team key: made of every rank's share, keyed by Spark's secret under spark.authenticate, never shown. */
class TeamKeyTest {
  private static final byte[] T = "transcript".getBytes(java.nio.charset.StandardCharsets.UTF_8);

  @Test
  void ranksWithTheSameSharesAgreeAndAnyDifferenceBreaksTheProof() {
    List<byte[]> shares = List.of(TeamKey.newShare(), TeamKey.newShare());
    TeamKey a = TeamKey.of(shares, "app/stage-1.0", null);
    TeamKey b = TeamKey.of(List.of(shares.get(0).clone(), shares.get(1).clone()), "app/stage-1.0", null);
    assertTrue(b.verifies(Handshake.CONNECT, T, a.proof(Handshake.CONNECT, T)), "same shares, same key");
    assertFalse(b.verifies(Handshake.ACCEPT, T, a.proof(Handshake.CONNECT, T)), "a proof holds for its role only");
    for (TeamKey other : List.of(
        TeamKey.of(List.of(shares.get(1), shares.get(0)), "app/stage-1.0", null), // rank order matters
        TeamKey.of(shares, "app/stage-1.1", null), // another stage attempt
        TeamKey.of(shares, "app/stage-1.0", "spark-app-secret"))) { // spark.authenticate's secret
      assertFalse(other.verifies(Handshake.CONNECT, T, a.proof(Handshake.CONNECT, T)), other.toString());
    }
    assertTrue(TeamKey.of(shares, "app/stage-1.0", "spark-app-secret").usesAppSecret());
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> TeamKey.of(List.of(TeamKey.newShare(), new byte[3]), "t", null));
    assertTrue(e.getMessage().startsWith("the team-key share of rank 1 has 3 bytes, not 32"), e.getMessage());
  }

  @Test
  void neitherTheKeyNorAShareIsEverPrinted() {
    byte[] share = TeamKey.newShare();
    RankAnnouncement a = RankAnnouncement.of(0, "127.0.0.1:4000", "127.0.0.1", "exec-1", List.of(),
        LayerStack.randomAlternating(1, 4, 1, false)).withKeyShare(share);
    String shown = a.toString() + " " + TeamKey.of(List.of(share), "t", "s3cr3t-value");
    for (String form : List.of(HexFormat.of().formatHex(share), Base64.getEncoder().encodeToString(share),
        java.util.Arrays.toString(share), "s3cr3t-value")) {
      assertFalse(shown.contains(form), shown);
    }
    assertTrue(shown.contains("keyShare=(32 bytes, hidden)") && shown.contains("TeamKey(hidden, with Spark's"), shown);
    // the share travels in the allGather all the same
    assertTrue(java.util.Arrays.equals(share, RankAnnouncement.decode(a.encode(), 0).keyShare()));
  }
}
