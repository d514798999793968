package org.foldcp.ops.testing;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.foldcp.ops.InvalidInputException;

/**
 * A small, deterministic mutation fuzzer for the readers and decoders of untrusted bytes, and
 * the contract it checks on every input (docs/design.md section 7):
 *
 * <ul>
 *   <li>a call either returns or throws {@link InvalidInputException}: nothing else, no
 *       NullPointerException, ArrayIndexOutOfBounds, NegativeArraySize, OutOfMemoryError or
 *       StackOverflowError;</li>
 *   <li>the message has the form {@code what = value: rule} and stays short enough to read;</li>
 *   <li>the call finishes within a per-input deadline (no hang);</li>
 *   <li>the call allocates at most {@code allocBase + allocPerByte * input length} bytes (measured
 *       per thread by the JVM), so that a size field claiming 2^40 elements is refused before
 *       anything is allocated from it, and not merely before the heap runs out.</li>
 * </ul>
 *
 * <p>Inputs are derived from valid seeds by seeded mutations: input i of a run uses the random
 * stream {@code new SplittableRandom(mix(seed, i))}, so every failure is reported with the index
 * that reproduces it, and the failing bytes are also saved under {@code target/fuzz-failures/}.
 * System properties: {@code foldcp.fuzz.iterations} (random inputs per target, default given by
 * the test), {@code foldcp.fuzz.seed} (the base seed, default fixed).
 */
public final class Fuzz implements AutoCloseable {
  /** The byte values most likely to break a length, a sign or a terminator. */
  public static final byte[] INTERESTING_BYTES = {0, (byte) 0xff, 0x7f, (byte) 0x80};
  /** Integers for size, count and offset fields: boundaries of every width, and huge claims. */
  public static final long[] INTERESTING_LONGS = {
      0, 1, 2, 3, 7, 8, 9, 63, 64, 127, 128, 255, 256, 0x7fff, 0x8000, 0xffff, 0x10000,
      Integer.MAX_VALUE - 8, Integer.MAX_VALUE, 1L << 31, 0xffffffffL, 1L << 32, 1L << 40, 1L << 53,
      1L << 62, Long.MAX_VALUE, -1, -2, Integer.MIN_VALUE, Long.MIN_VALUE, 100_000_001L};
  private static final long DEFAULT_SEED = 0x5EEDF01DC0DEL;

  /** One call on one input: returns normally, or throws. */
  @FunctionalInterface
  public interface Call {
    void run() throws Exception;
  }

  private final String name;
  private final long timeoutMs;
  private final long allocBase;
  private final long allocPerByte;
  /** The first report of each distinct violation (by kind and place), with how often it was seen. */
  private final Map<String, String> failures = new LinkedHashMap<>();
  private final Map<String, Integer> failureCounts = new LinkedHashMap<>();
  private final Map<String, Integer> rules = new LinkedHashMap<>();
  private final List<Class<? extends Throwable>> alsoAccepted = new ArrayList<>();
  private ExecutorService worker = newWorker();
  private int inputs;
  private int calls;
  private int accepted;
  private int refused;
  private long maxNanos;
  private long maxAlloc;
  private final long started = System.nanoTime();

  /**
   * @param name the target, for messages and the failure folder
   * @param timeoutMs the per-input deadline
   * @param allocBase bytes any call may allocate whatever its input
   * @param allocPerByte further bytes per input byte
   */
  public Fuzz(String name, long timeoutMs, long allocBase, long allocPerByte) {
    this.name = name;
    this.timeoutMs = timeoutMs;
    this.allocBase = allocBase;
    this.allocPerByte = allocPerByte;
  }

  /**
   * Also accepts {@code type} as a refusal, without the message form: for decoders whose
   * framework has its own exception for a corrupt stream (Kryo's KryoException). Errors stay
   * violations whatever this says.
   */
  public Fuzz alsoAccept(Class<? extends Exception> type) {
    alsoAccepted.add(type);
    return this;
  }

  /** Random inputs per target: {@code foldcp.fuzz.iterations}, else {@code dflt}. */
  public static int iterations(int dflt) {
    return Integer.getInteger("foldcp.fuzz.iterations", dflt);
  }

  /** The random stream of input {@code index} of target {@code target}. */
  public static SplittableRandom rng(String target, int index) {
    long base = Long.getLong("foldcp.fuzz.seed", DEFAULT_SEED);
    return new SplittableRandom(base ^ (target.hashCode() * 0x9E3779B97F4A7C15L) ^ ((long) index << 20));
  }

  // ------------------------------------------------------------------ running inputs

  /**
   * Runs each call of {@code calls} on one input and checks the contract on each. {@code input}
   * is what the calls read (only for the failure report and the allocation bound).
   */
  public void check(int index, String how, byte[] input, Call... calls) {
    inputs++;
    this.calls += calls.length;
    long bound = allocBase + allocPerByte * (long) input.length;
    String label = name + " input #" + index + " (" + how + " " + input.length + " bytes)";
    long t0 = System.nanoTime();
    Future<Object[][]> result = worker.submit(() -> measured(calls));
    Object[][] rs;
    try {
      // the first input also pays for loading the classes of the code under test
      rs = result.get(inputs == 1 ? 6 * timeoutMs : timeoutMs, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      result.cancel(true);
      worker.shutdownNow(); // the stuck thread is a daemon; the next input gets a fresh one
      worker = newWorker();
      failure(label, input, "did not finish within " + timeoutMs + " ms (hang?)", null);
      return;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    } catch (ExecutionException e) {
      failure(label, input, "the harness failed", e.getCause());
      return;
    }
    maxNanos = Math.max(maxNanos, System.nanoTime() - t0);
    if (overBound(rs, bound)) {
      // The first use of a code path loads and links classes (Spark's, string concatenation
      // call sites) on this thread's account; an allocation the input causes recurs on a rerun.
      try {
        Object[][] again = worker.submit(() -> measured(calls)).get(timeoutMs, TimeUnit.MILLISECONDS);
        for (int c = 0; c < rs.length; c++) {
          rs[c][1] = Math.min((Long) rs[c][1], (Long) again[c][1]);
        }
      } catch (Exception e) {
        // keep the first measurement
      }
    }
    for (int c = 0; c < rs.length; c++) {
      String call = label + " call " + c;
      Throwable thrown = (Throwable) rs[c][0];
      long alloc = (Long) rs[c][1];
      maxAlloc = Math.max(maxAlloc, alloc);
      if (thrown == null) {
        accepted++;
      } else if (thrown instanceof InvalidInputException) {
        refused++;
        String msg = thrown.getMessage();
        String problem = messageProblem(msg);
        if (problem != null) {
          failure(call, input, problem + ": " + excerpt(msg, 600), null);
        } else {
          rules.merge(ruleOf(msg), 1, Integer::sum);
        }
      } else if (alsoAccepted.stream().anyMatch(a -> a.isInstance(thrown))) {
        refused++;
        rules.merge(thrown.getClass().getSimpleName() + ": " + ruleOf(" = : " + thrown.getMessage()), 1, Integer::sum);
      } else {
        failure(call, input, "threw " + thrown.getClass().getName() + " instead of InvalidInputException", thrown);
      }
      if (alloc > bound) {
        failure(call, input, "allocated " + alloc + " bytes, more than the bound " + bound + " = " + allocBase + " + "
            + allocPerByte + " * " + input.length + " input bytes (a size field trusted before it was checked?)"
            + (thrown == null ? "" : "; it ended with " + thrown), null);
      }
    }
  }

  private static boolean overBound(Object[][] rs, long bound) {
    for (Object[] r : rs) {
      if ((Long) r[1] > bound) {
        return true;
      }
    }
    return false;
  }

  /** Runs the calls one after the other on this (the worker) thread: {throwable or null, bytes allocated}. */
  private static Object[][] measured(Call[] calls) {
    Object[][] out = new Object[calls.length][];
    for (int c = 0; c < calls.length; c++) {
      long a0 = allocatedBytes();
      Throwable thrown = null;
      try {
        calls[c].run();
      } catch (Throwable t) { // the contract is about every throwable, errors included
        thrown = t;
      }
      long a1 = allocatedBytes();
      out[c] = new Object[] {thrown, a0 < 0 ? 0L : a1 - a0};
    }
    return out;
  }

  /** Bytes this thread has allocated so far, or -1 where the JVM cannot say. */
  private static long allocatedBytes() {
    java.lang.management.ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    if (mx instanceof com.sun.management.ThreadMXBean) {
      return ((com.sun.management.ThreadMXBean) mx).getCurrentThreadAllocatedBytes();
    }
    return -1;
  }

  /** Null when the message has the canonical form "what = value: rule", else what is wrong. */
  static String messageProblem(String msg) {
    if (msg == null) {
      return "an InvalidInputException without a message";
    }
    int eq = msg.indexOf(" = ");
    if (eq <= 0 || msg.indexOf(": ", eq + 3) < 0) {
      return "the message does not read 'what = value: rule'";
    }
    if (msg.length() > 4000) {
      return "the message is " + msg.length() + " characters long (the value should be shown as an excerpt)";
    }
    return null;
  }

  /** The rule part of a message with numbers and quoted or bracketed values blanked, to count distinct refusals. */
  private static String ruleOf(String msg) {
    int eq = msg.indexOf(" = ");
    String rule = msg.substring(msg.indexOf(": ", eq + 3) + 2);
    rule = rule.replaceAll("\\([^)]*\\)|\\[[^\\]]*\\]|'[^']*'|\"[^\"]*\"", "_").replaceAll("[0-9]+", "#");
    return rule.length() > 70 ? rule.substring(0, 70) : rule;
  }

  private void failure(String label, byte[] input, String what, Throwable t) {
    String key = signature(what, t);
    if (failureCounts.merge(key, 1, Integer::sum) > 1 || failures.size() >= 25) {
      return;
    }
    StringBuilder sb = new StringBuilder(label).append(": ").append(what);
    Path saved = save(label, input);
    sb.append("\n    input saved as ").append(saved == null ? "(could not save)" : saved.toString());
    sb.append("\n    first bytes (base64): ").append(Base64.getEncoder().encodeToString(
        Arrays.copyOf(input, Math.min(input.length, 300))));
    if (t != null) {
      sb.append("\n    ").append(t);
      StackTraceElement[] st = t.getStackTrace();
      for (int q = 0; q < Math.min(st.length, 14); q++) {
        sb.append("\n      at ").append(st[q]);
      }
    }
    failures.put(key, sb.toString());
  }

  /** Violations of one kind at one place count as one: the exception and its first frame in our code. */
  private static String signature(String what, Throwable t) {
    if (t == null) {
      return what.replaceAll("[0-9]+", "#");
    }
    String where = "";
    for (StackTraceElement e : t.getStackTrace()) {
      if (e.getClassName().startsWith("org.foldcp.")) {
        where = e.toString();
        break;
      }
    }
    return t.getClass().getName() + " at " + where;
  }

  private Path save(String label, byte[] input) {
    try {
      Path dir = Paths.get("target", "fuzz-failures", name);
      Files.createDirectories(dir);
      return Files.write(dir.resolve(label.replaceAll("[^A-Za-z0-9#]+", "_") + ".bin"), input).toAbsolutePath();
    } catch (IOException e) {
      return null;
    }
  }

  private static String excerpt(String s, int max) {
    return s.length() <= max ? s : s.substring(0, max) + "... (" + s.length() + " characters)";
  }

  /** Fails, listing every contract violation found, or prints the run's statistics. */
  public void assertClean() {
    String stats = summary();
    System.out.println(stats);
    if (!failures.isEmpty()) {
      StringBuilder sb = new StringBuilder();
      for (Map.Entry<String, String> f : failures.entrySet()) {
        sb.append("\n[").append(failureCounts.get(f.getKey())).append(" inputs] ").append(f.getValue());
      }
      fail(failures.size() + " distinct contract violations in " + stats + sb);
    }
  }

  public int inputs() {
    return inputs;
  }

  public int accepted() {
    return accepted;
  }

  public String summary() {
    long ms = (System.nanoTime() - started) / 1_000_000;
    StringBuilder sb = new StringBuilder("[fuzz] ").append(name).append(": ").append(inputs).append(" inputs, ")
        .append(calls).append(" calls (").append(accepted).append(" accepted, ").append(refused)
        .append(" refused) in ").append(ms).append(" ms; slowest input ")
        .append(maxNanos / 1_000_000).append(" ms, most allocated by one call ").append(maxAlloc / 1024)
        .append(" KiB; ").append(rules.size()).append(" distinct refusal texts");
    return sb.toString();
  }

  /** The distinct refusal rules seen (digits blanked) with their counts. */
  public Map<String, Integer> rules() {
    return rules;
  }

  @Override
  public void close() {
    worker.shutdownNow();
  }

  private ExecutorService newWorker() {
    return Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "fuzz-" + name);
      t.setDaemon(true); // default stack size, like the executor threads that run the readers
      return t;
    });
  }

  // ------------------------------------------------------------------ byte-level mutations

  /**
   * One to four stacked byte-level mutations of {@code in}, described in {@code how}. Positions
   * fall below {@code hotEnd} (the header, where bytes mean something) two times in three.
   */
  public static byte[] mutateBytes(byte[] in, int hotEnd, SplittableRandom rng, StringBuilder how) {
    byte[] b = in;
    int ops = 1 + rng.nextInt(4);
    for (int k = 0; k < ops; k++) {
      b = mutateOnce(b, hotEnd, rng, how);
    }
    return b;
  }

  private static byte[] mutateOnce(byte[] in, int hotEnd, SplittableRandom rng, StringBuilder how) {
    int op = rng.nextInt(10);
    if (in.length == 0) {
      op = 5; // only growth makes sense
    }
    switch (op) {
      case 0:
      case 1: {
        int at = position(in, hotEnd, rng);
        int bit = rng.nextInt(8);
        byte[] out = in.clone();
        out[at] ^= (byte) (1 << bit);
        how.append(" flip bit ").append(bit).append(" of byte ").append(at).append(';');
        return out;
      }
      case 2:
      case 3: {
        int at = position(in, hotEnd, rng);
        byte v = INTERESTING_BYTES[rng.nextInt(INTERESTING_BYTES.length)];
        byte[] out = in.clone();
        out[at] = v;
        how.append(String.format(" byte %d = 0x%02x;", at, v & 0xff));
        return out;
      }
      case 4: {
        int at = position(in, hotEnd, rng);
        byte[] out = in.clone();
        out[at] = (byte) rng.nextInt(256);
        how.append(" byte ").append(at).append(" random;");
        return out;
      }
      case 5: {
        byte[] tail = garbage(rng, 1 + (rng.nextInt(4) == 0 ? rng.nextInt(4096) : rng.nextInt(16)));
        how.append(" extend by ").append(tail.length).append(" bytes;");
        return concat(in, tail);
      }
      case 6: {
        int len = truncationLength(in.length, hotEnd, rng);
        how.append(" truncate to ").append(len).append(';');
        return Arrays.copyOf(in, len);
      }
      case 7: {
        int at = rng.nextInt(in.length + 1);
        byte[] ins = garbage(rng, 1 + rng.nextInt(8));
        how.append(" insert ").append(ins.length).append(" bytes at ").append(at).append(';');
        return concat(Arrays.copyOf(in, at), concat(ins, Arrays.copyOfRange(in, at, in.length)));
      }
      case 8: {
        int at = rng.nextInt(in.length);
        int len = 1 + rng.nextInt(Math.min(16, in.length - at));
        how.append(" delete ").append(len).append(" bytes at ").append(at).append(';');
        return concat(Arrays.copyOf(in, at), Arrays.copyOfRange(in, at + len, in.length));
      }
      default: {
        // an aligned little-endian 2, 4 or 8-byte field in the hot region gets an interesting value
        int width = new int[] {2, 4, 8}[rng.nextInt(3)];
        int span = Math.max(1, Math.min(hotEnd, in.length) - width + 1);
        int at = in.length < width ? 0 : rng.nextInt(span);
        long v = INTERESTING_LONGS[rng.nextInt(INTERESTING_LONGS.length)];
        byte[] out = in.clone();
        for (int q = 0; q < width && at + q < out.length; q++) {
          out[at + q] = (byte) (v >>> (8 * q));
        }
        how.append(" u").append(8 * width).append(" at ").append(at).append(" = ").append(v).append(';');
        return out;
      }
    }
  }

  private static int position(byte[] in, int hotEnd, SplittableRandom rng) {
    int hot = Math.min(hotEnd, in.length);
    return hot > 0 && rng.nextInt(3) != 0 ? rng.nextInt(hot) : rng.nextInt(in.length);
  }

  /**
   * A truncation length from one of the length classes: empty, a few bytes, inside the header,
   * at the header's end, inside the data, one byte short.
   */
  public static int truncationLength(int length, int hotEnd, SplittableRandom rng) {
    if (length == 0) {
      return 0;
    }
    int hot = Math.min(hotEnd, length);
    switch (rng.nextInt(6)) {
      case 0: return 0;
      case 1: return rng.nextInt(Math.min(length, 13));
      case 2: return hot > 0 ? rng.nextInt(hot) : 0;
      case 3: return Math.max(0, Math.min(length - 1, hot + rng.nextInt(3) - 1));
      case 4: return length - 1;
      default: return rng.nextInt(length);
    }
  }

  public static byte[] garbage(SplittableRandom rng, int n) {
    byte[] out = new byte[n];
    int style = rng.nextInt(3);
    for (int q = 0; q < n; q++) {
      out[q] = style == 0 ? (byte) rng.nextInt(256)
          : style == 1 ? INTERESTING_BYTES[rng.nextInt(INTERESTING_BYTES.length)] : (byte) (' ' + rng.nextInt(95));
    }
    return out;
  }

  /** One derived input and how it was made. */
  public record Input(String how, byte[] bytes) {}

  /**
   * The deterministic inputs every file fuzzer starts with, from one valid file: every truncation
   * up to 16 bytes past {@code headerEnd} (every header length class), then the file extended by
   * each of {@code extraLengths} bytes of each of {@link #INTERESTING_BYTES}.
   */
  public static List<Input> edges(String name, byte[] bytes, int headerEnd, int... extraLengths) {
    List<Input> out = new ArrayList<>();
    for (int len = 0; len <= Math.min(bytes.length - 1, headerEnd + 16); len++) {
      out.add(new Input("truncate " + name + " to " + len, Arrays.copyOf(bytes, len)));
    }
    for (int extra : extraLengths) {
      for (byte v : INTERESTING_BYTES) {
        byte[] tail = new byte[extra];
        Arrays.fill(tail, v);
        out.add(new Input("extend " + name + " by " + extra + " x " + v, concat(bytes, tail)));
      }
    }
    return out;
  }

  public static byte[] concat(byte[] a, byte[] b) {
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /** A random element of {@code values}. */
  @SafeVarargs
  public static <T> T pick(SplittableRandom rng, T... values) {
    return values[rng.nextInt(values.length)];
  }

  public static long interestingLong(SplittableRandom rng) {
    return INTERESTING_LONGS[rng.nextInt(INTERESTING_LONGS.length)];
  }
}
