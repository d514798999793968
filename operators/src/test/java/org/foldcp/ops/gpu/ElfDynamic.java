package org.foldcp.ops.gpu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

/**
 * Reads the exported symbols and the NEEDED libraries of a 64-bit little-endian ELF shared
 * library, as {@code nm -D --defined-only} and {@code readelf -d} show them, so tests need no
 * binutils on the machine that runs them.
 */
final class ElfDynamic {
  private static final int SHT_DYNAMIC = 6;
  private static final int SHT_DYNSYM = 11;
  private static final long DT_NEEDED = 1;

  final TreeSet<String> definedGlobals = new TreeSet<>();
  final List<String> needed = new ArrayList<>();

  private ElfDynamic() {}

  static ElfDynamic parse(byte[] file) {
    ByteBuffer b = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
    if (file.length < 64 || b.getInt(0) != 0x464c457f) {
      throw new IllegalArgumentException("not an ELF file");
    }
    if (file[4] != 2 || file[5] != 1) {
      throw new IllegalArgumentException("not a 64-bit little-endian ELF file");
    }
    long shoff = b.getLong(0x28);
    int shentsize = Short.toUnsignedInt(b.getShort(0x3A));
    int shnum = Short.toUnsignedInt(b.getShort(0x3C));
    ElfDynamic out = new ElfDynamic();
    for (int s = 0; s < shnum; s++) {
      int h = (int) (shoff + (long) s * shentsize);
      int type = b.getInt(h + 4);
      long off = b.getLong(h + 24);
      long size = b.getLong(h + 32);
      int link = b.getInt(h + 40);
      long entsize = b.getLong(h + 56);
      int lh = (int) (shoff + (long) link * shentsize);
      long strOff = b.getLong(lh + 24);
      if (type == SHT_DYNSYM) {
        for (long e = off; e + 24 <= off + size; e += entsize) {
          int name = b.getInt((int) e);
          int info = Byte.toUnsignedInt(b.get((int) e + 4));
          int shndx = Short.toUnsignedInt(b.getShort((int) e + 6));
          int bind = info >> 4;
          if (shndx != 0 && (bind == 1 || bind == 2) && name != 0) {
            out.definedGlobals.add(cString(file, (int) (strOff + name)));
          }
        }
      } else if (type == SHT_DYNAMIC) {
        for (long e = off; e + 16 <= off + size; e += 16) {
          long tag = b.getLong((int) e);
          long val = b.getLong((int) e + 8);
          if (tag == 0) {
            break;
          }
          if (tag == DT_NEEDED) {
            out.needed.add(cString(file, (int) (strOff + val)));
          }
        }
      }
    }
    return out;
  }

  private static String cString(byte[] f, int at) {
    int end = at;
    while (end < f.length && f[end] != 0) {
      end++;
    }
    return new String(f, at, end - at, StandardCharsets.US_ASCII);
  }
}
