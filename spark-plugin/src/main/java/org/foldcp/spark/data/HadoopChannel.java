package org.foldcp.spark.data;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.NonWritableChannelException;
import java.nio.channels.SeekableByteChannel;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A read-only SeekableByteChannel over a file of any Hadoop FileSystem (file:, hdfs:, s3a: where
 * its connector is on the class path), so that the operator library's .npy and .safetensors
 * readers, which read by position, read those files as they read local ones. Reads are positional
 * ({@code PositionedReadable}), which object stores serve as ranged GETs. Public for the SQL
 * function's weights (org.foldcp.spark.udf), which read .safetensors files through it.
 */
public final class HadoopChannel implements SeekableByteChannel {
  private final FSDataInputStream in;
  private final long size;
  private final String name;
  private long position;
  private boolean open = true;

  private HadoopChannel(FSDataInputStream in, long size, String name) {
    this.in = in;
    this.size = size;
    this.name = name;
  }

  /** Opens {@code file} for reading with the file system its scheme names in {@code conf}. */
  public static HadoopChannel open(Configuration conf, Path file) throws IOException {
    FileSystem fs = file.getFileSystem(conf);
    return open(fs, fs.getFileStatus(file));
  }

  /** Opens the file of {@code status} (as {@code fs} listed it: its length is the channel's size) without asking again. */
  public static HadoopChannel open(FileSystem fs, FileStatus status) throws IOException {
    return new HadoopChannel(fs.open(status.getPath()), status.getLen(), status.getPath().toString());
  }

  @Override
  public int read(ByteBuffer dst) throws IOException {
    requireOpen();
    if (position >= size) {
      return -1;
    }
    int want = (int) Math.min(dst.remaining(), size - position);
    if (dst.hasArray()) {
      in.readFully(position, dst.array(), dst.arrayOffset() + dst.position(), want);
      dst.position(dst.position() + want);
    } else {
      byte[] tmp = new byte[want];
      in.readFully(position, tmp, 0, want);
      dst.put(tmp);
    }
    position += want;
    return want;
  }

  @Override
  public int write(ByteBuffer src) {
    throw new NonWritableChannelException();
  }

  @Override
  public long position() {
    return position;
  }

  @Override
  public SeekableByteChannel position(long newPosition) {
    if (newPosition < 0) {
      throw new IllegalArgumentException("position " + newPosition + " in " + name + ": must be >= 0");
    }
    position = newPosition;
    return this;
  }

  @Override
  public long size() {
    return size;
  }

  @Override
  public SeekableByteChannel truncate(long newSize) {
    throw new NonWritableChannelException();
  }

  @Override
  public boolean isOpen() {
    return open;
  }

  @Override
  public void close() throws IOException {
    if (open) {
      open = false;
      in.close();
    }
  }

  private void requireOpen() throws ClosedChannelException {
    if (!open) {
      throw new ClosedChannelException();
    }
  }

  @Override
  public String toString() {
    return name;
  }
}
