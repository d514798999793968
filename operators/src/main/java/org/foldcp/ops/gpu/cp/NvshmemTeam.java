package org.foldcp.ops.gpu.cp;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.foldcp.ops.InvalidInputException;

/**
 * This process's membership of an NVSHMEM team: one per process for the life of the process,
 * since NVSHMEM initialises only once. In Spark the executor owns it (a barrier stage forms it
 * the first time, later stages with the same members reuse it); tasks borrow it.
 *
 * <p>Forming ({@link #form}): the ranks meet through a {@link Rendezvous} twice, always (so that
 * teams sharing one stage-wide all-gather stay in step). Round 1 shares every rank's member id
 * and the team it already belongs to: when all belong to the team of exactly these members, that
 * team is reused (round 2 then carries nothing); when none belongs to any, round 2 carries the
 * unique id rank 0 made, and every rank initialises NVSHMEM with it (in a watchdog thread: if
 * NVSHMEM does not come up within the timeout the call fails instead of hanging, and the team is
 * marked broken). Any other mix (some ranks in another team) is an error on every rank, naming
 * those ranks: their processes must be restarted.
 *
 * <p>At process exit the team is finalized when no plan is open and every peer is still there
 * (bounded by the timeout; a team whose peers are gone is simply left, since NVSHMEM's finalize
 * would wait for them).
 */
public final class NvshmemTeam {
  private static final System.Logger LOG = System.getLogger(NvshmemTeam.class.getName());
  private static final AtomicReference<NvshmemTeam> CURRENT = new AtomicReference<>();
  private static String brokenReason;

  /** What a process needs to join: its GPU, the symmetric heap, the timeout, where NVSHMEM is. */
  public record Spec(int device, long heapBytes, Duration timeout, String nvshmemHome, String memberId) {
    public Spec {
      InvalidInputException.require(device >= 0, "device", device, "must be a CUDA device ordinal >= 0");
      InvalidInputException.require(heapBytes >= (64L << 20), "symmetric heap bytes", heapBytes,
          "must be at least 64 MiB (spark.foldcp.nvshmem.heapBytes)");
      InvalidInputException.require(timeout != null && !timeout.isNegative() && !timeout.isZero(), "team timeout",
          timeout, "must be positive (spark.foldcp.barrier.timeoutSeconds)");
      InvalidInputException.require(memberId != null && !memberId.isBlank(), "member id", memberId,
          "must name this process (e.g. executor id and host)");
    }
  }

  private final Spec spec;
  private final List<String> members;
  private final int rank;
  private final int size;
  private int openStacks;

  private NvshmemTeam(Spec spec, List<String> members, int rank, int size) {
    this.spec = spec;
    this.members = List.copyOf(members);
    this.rank = rank;
    this.size = size;
  }

  /** The team of this process, if it formed one. */
  public static NvshmemTeam current() {
    return CURRENT.get();
  }

  /**
   * Forms (or reuses) the team of the ranks meeting at {@code rendezvous}; collective: every
   * rank calls it. See the class comment for the protocol and its errors.
   */
  public static synchronized NvshmemTeam form(Spec spec, Rendezvous rendezvous) {
    if (brokenReason != null) {
      throw new TeamException("this process cannot join an NVSHMEM team: " + brokenReason
          + " (NVSHMEM initialises once per process; restart it)");
    }
    NativeCp.load(spec.nvshmemHome());
    NvshmemTeam have = CURRENT.get();
    String haveKey = have == null ? "" : have.key();
    List<byte[]> round1 = rendezvous.allGather(encode(spec.memberId(), haveKey, new byte[0]), spec.timeout());
    List<String> members = new ArrayList<>();
    List<String> keys = new ArrayList<>();
    for (byte[] m : round1) {
      Message msg = decode(m);
      members.add(msg.memberId);
      keys.add(msg.teamKey);
    }
    String wanted = String.join(",", members);
    List<Integer> inOther = new ArrayList<>();
    int inWanted = 0;
    for (int r = 0; r < keys.size(); r++) {
      if (keys.get(r).equals(wanted)) {
        inWanted++;
      } else if (!keys.get(r).isEmpty()) {
        inOther.add(r);
      }
    }
    if (inWanted == keys.size() && have != null && have.rank == rendezvous.rank()) {
      // round 2 all the same: the rendezvous may be one of several teams sharing a stage-wide
      // all-gather (a barrier stage of several teams), where every team must run the same rounds
      rendezvous.allGather(encode(spec.memberId(), haveKey, new byte[0]), spec.timeout());
      LOG.log(System.Logger.Level.INFO, () -> "fold-cp NVSHMEM team reused: rank " + have.rank + " of " + have.size
          + " (" + wanted + ")");
      return have;
    }
    if (inWanted > 0 || !inOther.isEmpty()) {
      throw new TeamException("the ranks of this barrier stage cannot form one NVSHMEM team: rank(s) "
          + (inOther.isEmpty() ? "(some)" : inOther) + " already belong to another team"
          + (have != null ? " (this process: " + have.members + ")" : "") + " and NVSHMEM initialises once per"
          + " process; the stage asks for [" + wanted + "]: restart those executors (a stage whose members change"
          + " needs fresh executors)");
    }
    byte[] uid = rendezvous.rank() == 0 ? NativeCp.uniqueId() : new byte[0];
    List<byte[]> round2 = rendezvous.allGather(encode(spec.memberId(), "", uid), spec.timeout());
    byte[] rootId = decode(round2.get(0)).uid;
    if (rootId.length != 128) {
      throw new TeamException("rank 0 sent a unique id of " + rootId.length + " bytes, not 128");
    }
    initWithWatchdog(spec, rootId, rendezvous.rank(), rendezvous.size());
    NvshmemTeam team = new NvshmemTeam(spec, members, rendezvous.rank(), rendezvous.size());
    CURRENT.set(team);
    Runtime.getRuntime().addShutdownHook(new Thread(NvshmemTeam::finalizeAtExit, "foldcp-nvshmem-finalize"));
    LOG.log(System.Logger.Level.INFO, () -> "fold-cp NVSHMEM team formed: rank " + team.rank + " of " + team.size
        + " on GPU " + spec.device() + ", heap " + (spec.heapBytes() >> 20) + " MiB, timeout "
        + spec.timeout().toMillis() + " ms, NVSHMEM " + NativeCp.nvshmemVersion() + " from "
        + NativeCp.hostLibrary() + " (" + wanted + ")");
    return team;
  }

  private static void initWithWatchdog(Spec spec, byte[] uid, int rank, int size) {
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Thread t = new Thread(() -> {
      try {
        NativeCp.teamInit(uid, rank, size, spec.device(), spec.heapBytes(), spec.timeout().toMillis());
      } catch (Throwable e) {
        failure.set(e);
      }
    }, "foldcp-nvshmem-init");
    t.setDaemon(true);
    t.start();
    try {
      t.join(spec.timeout().toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      brokenReason = "interrupted while NVSHMEM was initialising";
      throw new TeamException(brokenReason, e);
    }
    if (t.isAlive()) {
      brokenReason = "NVSHMEM init (rank " + rank + " of " + size + ") did not complete within "
          + spec.timeout().toMillis() + " ms although every rank exchanged the unique id: a peer died or cannot"
          + " connect";
      throw new TeamException(brokenReason);
    }
    Throwable e = failure.get();
    if (e != null) {
      brokenReason = "NVSHMEM init failed: " + e.getMessage();
      if (e instanceof RuntimeException re) {
        throw re;
      }
      throw new TeamException(brokenReason, e);
    }
  }

  /** This process's PE number. */
  public int rank() { return rank; }

  /** Number of PEs. */
  public int size() { return size; }

  /** The member ids in rank order. */
  public List<String> members() { return members; }

  public Spec spec() { return spec; }

  /** The identity of this team: its members in rank order. */
  public String key() {
    return String.join(",", members);
  }

  /** Heap bytes, bytes held by open plans, and whether a peer went missing. */
  public record Info(int rank, int size, long heapBytes, long heapUsed, boolean broken) {}

  public Info info() {
    long[] v = NativeCp.teamInfo();
    return new Info((int) v[0], (int) v[1], v[2], v[3], v[4] != 0);
  }

  /** A barrier over the team, bounded by the timeout; throws {@link TeamException} naming the missing ranks. */
  public void barrier() {
    NativeCp.teamBarrier();
  }

  synchronized void stackOpened() { openStacks++; }

  synchronized void stackClosed() { openStacks--; }

  /**
   * Finalizes NVSHMEM now (collective; every rank calls it, all plans closed). The process can
   * not join another team afterwards.
   */
  public static synchronized void finalizeTeam() {
    NvshmemTeam t = CURRENT.getAndSet(null);
    if (t == null) {
      return;
    }
    brokenReason = "its NVSHMEM team was finalized";
    NativeCp.teamFinalize();
  }

  private static void finalizeAtExit() {
    NvshmemTeam t = CURRENT.get();
    if (t == null || t.openStacks > 0) {
      return;
    }
    try {
      finalizeTeam();
    } catch (RuntimeException e) {
      System.err.println("fold-cp: NVSHMEM team left without finalize at exit: " + e.getMessage());
    }
  }

  private record Message(String memberId, String teamKey, byte[] uid) {}

  private static byte[] encode(String memberId, String teamKey, byte[] uid) {
    try (ByteArrayOutputStream bo = new ByteArrayOutputStream(); DataOutputStream out = new DataOutputStream(bo)) {
      out.writeUTF(memberId);
      out.writeUTF(teamKey);
      out.writeInt(uid.length);
      out.write(uid);
      out.flush();
      return bo.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Message decode(byte[] b) {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(b))) {
      String id = in.readUTF();
      String key = in.readUTF();
      byte[] uid = new byte[in.readInt()];
      in.readFully(uid);
      return new Message(id, key, uid);
    } catch (IOException e) {
      throw new TeamException("a rank sent an unreadable team message (" + b.length + " bytes): " + e.getMessage(), e);
    }
  }
}
