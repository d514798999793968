package org.foldcp.ops.gpu.cp;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.foldcp.ops.gpu.DeviceBuffer;
import org.foldcp.ops.gpu.GpuDevice;
import org.foldcp.ops.gpu.MemoryLeakCheck;

/**
 * One rank of the heads all-to-all team test, as its own process. Usage as {@link CpTeamRank};
 * reads DIR/heads-cases.txt (one {@link HeadsCase} per line) and writes, per case,
 * res-CASE-RANK.txt ("route checks..." when every check held, else "FAIL what"), or
 * err-CASE-RANK.txt (exception class and message), then done-RANK.txt. Checks, bit for bit:
 * the scatter against the all-gathered and sliced inputs; gather(scatter(x)) == x; the
 * zero-copy path on device addresses (scatter into the plan's own buffer, gathered by a second
 * plan straight from there). A case with repeats also writes mem-CASE-RANK.txt: free device
 * memory before the plans, after the calls and after close, and Java handles left open.
 */
public final class HeadsRank {
  private HeadsRank() {}

  public static void main(String[] args) throws Exception {
    RankMain.main(args, "heads-cases.txt", HeadsCase::parse, HeadsCase::name, (dir, team, c) ->
        RankMain.write(dir.resolve("res-" + c.name() + "-" + team.rank() + ".txt"), run(team, c, dir)));
  }

  private static String run(NvshmemTeam team, HeadsCase c, Path dir) throws IOException {
    int rank = team.rank();
    int world = team.size();
    int[] x = c.input(rank, world);
    // The skew case must fail at construction on every rank; its reference does not exist (the
    // ranks' shapes differ), and computing it here would skip the collective on this rank only.
    int[] want = c.skewRank() >= 0 ? null : c.scattered(rank, world);
    long mark = MemoryLeakCheck.mark();
    long before = RankMain.quiescentFreeBytes(team);
    List<String> failures = new ArrayList<>();
    String route;
    long afterCalls;
    try (HeadsAllToAll a2a = new HeadsAllToAll(team, c.shape(rank, world), c.dtype(), c.route());
        HeadsAllToAll back = new HeadsAllToAll(team, c.shape(rank, world), c.dtype(), c.route())) {
      route = a2a.route().label() + " " + a2a.bytesSentPerCall();
      for (int k = 0; k < Math.max(1, c.repeats()); k++) {
        int[] y = c.dtype() == HeadsDtype.F32 ? bits(a2a.scatterHeads(floats(x))) : bits(a2a.scatterHeads(shorts(x)));
        int[] z = c.dtype() == HeadsDtype.F32 ? bits(a2a.gatherHeads(floats(y))) : bits(a2a.gatherHeads(shorts(y)));
        if (k == 0 || k == c.repeats() - 1) {
          if (!Arrays.equals(y, want)) {
            failures.add("call " + k + ": scatter differs from the sliced all-gather at element " + Arrays.mismatch(y, want));
          }
          if (!Arrays.equals(z, x)) {
            failures.add("call " + k + ": gather(scatter(x)) differs from x at element " + Arrays.mismatch(z, x));
          }
        }
      }
      // Zero copy on device addresses: scatter into a2a's own buffer; a second plan gathers from there.
      try (GpuDevice dev = GpuDevice.open(team.spec().device());
          DeviceBuffer in = DeviceBuffer.allocate(dev, a2a.tensorBytes(), "test input");
          DeviceBuffer out = DeviceBuffer.allocate(dev, a2a.tensorBytes(), "test output")) {
        byte[] raw = bytes(x, c.dtype());
        in.copyFromHost(0, raw, 0, raw.length);
        a2a.scatterHeads(in.address(), a2a.outputAddress());
        back.gatherHeads(a2a.outputAddress(), out.address());
        byte[] got = new byte[raw.length];
        out.copyToHost(0, got, 0, got.length);
        if (!Arrays.equals(got, raw)) {
          failures.add("zero copy: gather of the plan's own scatter buffer differs from x at byte " + Arrays.mismatch(got, raw));
        }
      }
      afterCalls = RankMain.quiescentFreeBytes(team);
    }
    long afterClose = RankMain.quiescentFreeBytes(team);
    if (c.repeats() > 1) {
      RankMain.write(dir.resolve("mem-" + c.name() + "-" + rank + ".txt"), before + " " + afterCalls + " " + afterClose + " "
          + MemoryLeakCheck.openHandlesSince(mark).size() + " " + team.info().heapUsed());
    }
    return failures.isEmpty() ? route + " scatter==reference gather(scatter)==x zero-copy-ok calls=" + c.repeats()
        : "FAIL " + String.join("; ", failures);
  }

  private static short[] shorts(int[] v) {
    short[] s = new short[v.length];
    for (int i = 0; i < v.length; i++) {
      s[i] = (short) v[i];
    }
    return s;
  }

  private static float[] floats(int[] v) {
    float[] f = new float[v.length];
    for (int i = 0; i < v.length; i++) {
      f[i] = Float.intBitsToFloat(v[i]);
    }
    return f;
  }

  private static int[] bits(short[] s) {
    int[] v = new int[s.length];
    for (int i = 0; i < s.length; i++) {
      v[i] = s[i] & 0xffff;
    }
    return v;
  }

  private static int[] bits(float[] f) {
    int[] v = new int[f.length];
    for (int i = 0; i < f.length; i++) {
      v[i] = Float.floatToRawIntBits(f[i]);
    }
    return v;
  }

  private static byte[] bytes(int[] v, HeadsDtype dtype) {
    java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(v.length * dtype.bytes()).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    for (int e : v) {
      if (dtype == HeadsDtype.F32) {
        b.putInt(e);
      } else {
        b.putShort((short) e);
      }
    }
    return b.array();
  }

}
