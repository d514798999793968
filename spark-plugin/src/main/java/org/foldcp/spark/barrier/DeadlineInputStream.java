package org.foldcp.spark.barrier;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.concurrent.TimeUnit;

/**
 * A socket's input with one deadline for everything read through it: before each read the socket
 * timeout is set to the time left. A plain socket timeout bounds each read alone, so a peer that
 * sends one byte just before every timeout (a slow-loris) would hold a handshake forever.
 */
final class DeadlineInputStream extends FilterInputStream {
  private final Socket socket;
  private final long deadlineNanos;

  DeadlineInputStream(Socket socket, long deadlineNanos) throws IOException {
    this(socket, socket.getInputStream(), deadlineNanos);
  }

  private DeadlineInputStream(Socket socket, InputStream in, long deadlineNanos) {
    super(in);
    this.socket = socket;
    this.deadlineNanos = deadlineNanos;
  }

  private void arm() throws IOException {
    long left = TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
    if (left <= 0) {
      throw new SocketTimeoutException("the handshake deadline passed");
    }
    socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, left));
  }

  @Override
  public int read() throws IOException {
    arm();
    return super.read();
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    arm();
    return super.read(b, off, len);
  }
}
