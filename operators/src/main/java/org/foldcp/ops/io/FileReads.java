package org.foldcp.ops.io;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.foldcp.ops.InvalidInputException;

/**
 * Positional channel I/O shared by the readers and writers of this package. Reads take any
 * SeekableByteChannel (a local FileChannel, or a channel over another file system's stream) and
 * name the source by its toString, so that messages show a Path or a URI as the caller has it.
 */
final class FileReads {
  private FileReads() {}

  /**
   * Fills {@code buf} from {@code position}. Sizes are checked against the file before any data is
   * read, so hitting the end here means the file shrank underneath us; it is still reported as a
   * truncated file rather than as a silent short read.
   */
  static void readFully(SeekableByteChannel ch, ByteBuffer buf, long position, Object file) {
    long pos = position;
    try {
      while (buf.hasRemaining()) {
        int n = ch.position(pos).read(buf);
        if (n < 0) {
          throw InvalidInputException.of("size of " + file, pos + " bytes",
              "the file ended while " + buf.remaining() + " more bytes were expected (truncated file)");
        }
        pos += n;
      }
    } catch (IOException e) {
      throw new UncheckedIOException("reading " + file + " at byte " + pos, e);
    }
  }

  /** Opens {@code file} for reading; a missing file is a bad input, not an I/O failure. */
  static FileChannel openRead(Path file) {
    try {
      return FileChannel.open(file, StandardOpenOption.READ);
    } catch (NoSuchFileException e) {
      throw InvalidInputException.of("file", file, "does not exist");
    } catch (IOException e) {
      throw new UncheckedIOException("opening " + file, e);
    }
  }

  /** Writes all of {@code buf} at the channel's current position. */
  static void writeFully(FileChannel ch, ByteBuffer buf, Path file) {
    try {
      while (buf.hasRemaining()) {
        ch.write(buf);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("writing " + file, e);
    }
  }

  static long size(SeekableByteChannel ch, Object file) {
    try {
      return ch.size();
    } catch (IOException e) {
      throw new UncheckedIOException("reading the size of " + file, e);
    }
  }

  /** A value from a header as an error message shows it: at most 200 characters. */
  static String shown(Object value) {
    return excerpt(String.valueOf(value), 200);
  }

  /** A short, printable excerpt of header text for error messages. */
  static String excerpt(String text, int max) {
    String oneLine = text.replace("\n", "\\n").replace("\r", "\\r");
    return oneLine.length() <= max ? oneLine : oneLine.substring(0, max) + "...";
  }
}
