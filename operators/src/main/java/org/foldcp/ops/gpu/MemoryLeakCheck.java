package org.foldcp.ops.gpu;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The registry of live GPU handles: every device buffer, pinned host buffer, stream, event,
 * primary-context retain and native layer registers itself with the place it was allocated and
 * leaves when closed. Tests assert that nothing is left open; a long-running executor can log
 * {@link #report()} at shutdown. Allocation sites cost a stack trace per allocation, and GPU
 * allocations are rare (per shape, per layer), not per forward.
 */
public final class MemoryLeakCheck {
  private static final AtomicLong NEXT_ID = new AtomicLong(1);
  private static final Map<Long, OpenHandle> OPEN = new ConcurrentHashMap<>();

  private MemoryLeakCheck() {}

  /** One live handle: what it is, how many bytes it holds (0 if none), and where it was made. */
  public static final class OpenHandle {
    private final long id;
    private final String kind;
    private final long bytes;
    private final String description;
    private final Throwable site;

    OpenHandle(long id, String kind, long bytes, String description, Throwable site) {
      this.id = id;
      this.kind = kind;
      this.bytes = bytes;
      this.description = description;
      this.site = site;
    }

    public long id() { return id; }

    public String kind() { return kind; }

    public long bytes() { return bytes; }

    public String description() { return description; }

    @Override
    public String toString() {
      StringWriter sw = new StringWriter();
      sw.append(kind).append(" #").append(Long.toString(id)).append(" (").append(Long.toString(bytes))
          .append(" bytes, ").append(description).append(") allocated at\n");
      StackTraceElement[] st = site.getStackTrace();
      PrintWriter pw = new PrintWriter(sw);
      for (int k = 0; k < Math.min(st.length, 12); k++) {
        pw.println("    at " + st[k]);
      }
      pw.flush();
      return sw.toString();
    }
  }

  static long register(String kind, long bytes, String description) {
    long id = NEXT_ID.getAndIncrement();
    OPEN.put(id, new OpenHandle(id, kind, bytes, description, new Throwable("allocation site")));
    return id;
  }

  static void release(long id) {
    OPEN.remove(id);
  }

  /** A mark: handles registered after it have ids greater than it (see {@link #openHandlesSince}). */
  public static long mark() {
    return NEXT_ID.get() - 1;
  }

  /** Every handle still open, oldest first. */
  public static List<OpenHandle> openHandles() {
    return openHandlesSince(0);
  }

  /** The handles still open that were allocated after {@code mark} (from {@link #mark()}). */
  public static List<OpenHandle> openHandlesSince(long mark) {
    List<OpenHandle> out = new ArrayList<>();
    for (OpenHandle h : OPEN.values()) {
      if (h.id > mark) {
        out.add(h);
      }
    }
    out.sort(Comparator.comparingLong(OpenHandle::id));
    return out;
  }

  /** Bytes held by open handles of {@code kind} (e.g. "device buffer"). */
  public static long openBytes(String kind) {
    return openBytes(kind, "");
  }

  /** Bytes held by open handles of {@code kind} whose description starts with {@code prefix}. */
  public static long openBytes(String kind, String prefix) {
    long sum = 0;
    for (OpenHandle h : OPEN.values()) {
      if (h.kind.equals(kind) && h.description.startsWith(prefix)) {
        sum += h.bytes;
      }
    }
    return sum;
  }

  /** A readable list of open handles with their allocation sites ("no open GPU handles" if none). */
  public static String report() {
    List<OpenHandle> open = openHandles();
    if (open.isEmpty()) {
      return "no open GPU handles";
    }
    StringBuilder sb = new StringBuilder(open.size() + " open GPU handle(s):\n");
    for (OpenHandle h : open) {
      sb.append(h);
    }
    return sb.toString();
  }
}
