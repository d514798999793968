package org.foldcp.spark.barrier;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.List;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The secret of one TCP team, which a connection must prove it holds before it counts as a peer.
 * Every rank draws a random share and announces it in the barrier allGather (never in a log);
 * the key is an HMAC over all shares in rank order, so no single rank chooses it and a stage
 * attempt's key dies with the attempt. With {@code spark.authenticate} the HMAC is keyed with
 * Spark's application secret, so a stranger who read the allGather off the wire still lacks it.
 *
 * <p>Proofs are HMAC-SHA256 over a handshake transcript that holds nonces of both sides: a
 * recorded handshake cannot be replayed. The key never leaves this object; toString hides it.
 */
final class TeamKey {
  static final int SHARE_BYTES = 32;
  static final int PROOF_BYTES = 32;
  private static final String HMAC = "HmacSHA256";
  /** The HMAC key when Spark has no application secret: the shares alone then make the key. */
  private static final byte[] NO_APP_SECRET = "fold-cp team key, no spark.authenticate".getBytes(StandardCharsets.UTF_8);
  private static final SecureRandom RANDOM = new SecureRandom();

  private final byte[] key;
  private final boolean appSecret;

  private TeamKey(byte[] key, boolean appSecret) {
    this.key = key;
    this.appSecret = appSecret;
  }

  /** A fresh random share for this rank. */
  static byte[] newShare() {
    return nonce(SHARE_BYTES);
  }

  static byte[] nonce(int bytes) {
    byte[] b = new byte[bytes];
    RANDOM.nextBytes(b);
    return b;
  }

  /**
   * The team's key from every rank's share (rank order) and the team id; {@code sparkSecret}:
   * Spark's application secret under spark.authenticate, else null.
   */
  static TeamKey of(List<byte[]> shares, String teamId, String sparkSecret) {
    boolean none = sparkSecret == null || sparkSecret.isEmpty();
    byte[] macKey = none ? NO_APP_SECRET : sparkSecret.getBytes(StandardCharsets.UTF_8);
    Mac mac = mac(macKey);
    mac.update(teamId.getBytes(StandardCharsets.UTF_8));
    for (int r = 0; r < shares.size(); r++) {
      byte[] share = shares.get(r);
      if (share == null || share.length != SHARE_BYTES) {
        throw new IllegalStateException("the team-key share of rank " + r + " has " + (share == null ? "no" : share.length)
            + " bytes, not " + SHARE_BYTES + ": that rank runs a different fold-cp version");
      }
      mac.update(share);
    }
    return new TeamKey(mac.doFinal(), !none);
  }

  /** Whether Spark's application secret went into the key (spark.authenticate). */
  boolean usesAppSecret() {
    return appSecret;
  }

  /** The proof that the side {@code role} of {@code transcript} holds this key. */
  byte[] proof(String role, byte[] transcript) {
    Mac mac = mac(key);
    mac.update(role.getBytes(StandardCharsets.UTF_8));
    mac.update((byte) 0);
    return mac.doFinal(transcript);
  }

  /** Checks a proof in constant time. */
  boolean verifies(String role, byte[] transcript, byte[] proof) {
    return MessageDigest.isEqual(proof(role, transcript), proof);
  }

  private static Mac mac(byte[] key) {
    try {
      Mac mac = Mac.getInstance(HMAC);
      mac.init(new SecretKeySpec(key, HMAC));
      return mac;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("this JVM has no " + HMAC + ", which every Java 17 JVM must have: " + e, e);
    }
  }

  @Override
  public String toString() {
    return "TeamKey(hidden" + (appSecret ? ", with Spark's application secret)" : ")");
  }
}
