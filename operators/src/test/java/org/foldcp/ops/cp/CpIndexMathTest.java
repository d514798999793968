package org.foldcp.ops.cp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class CpIndexMathTest {
  @ParameterizedTest(name = "grid {0}x{1}, N={2}")
  // Grids of cp = 4, 6 and 8 as issue 15 runs them on GPUs (4x1, 2x2, 1x4; 6x1, 2x3, 3x2; 8x1, 2x4, 4x2).
  @CsvSource({"1,1,5", "2,1,7", "3,1,7", "4,1,16", "2,2,9", "1,4,10", "2,3,11", "3,2,6", "6,1,50", "8,1,65", "2,4,33",
      "4,2,100"})
  void tilesCoverThePaddedGridExactlyOnce(int cp0, int cp1, int n) {
    ShardLayout l = new ShardLayout(CpGrid.of(cp0, cp1), n, 24);
    assertTrue(l.paddedN() >= n && l.paddedN() % cp0 == 0 && l.paddedN() % cp1 == 0);
    int multiple = ShardLayout.lcm(cp0, cp1) * ShardLayout.GPU_TILE_MULTIPLE;
    assertTrue(l.paddedN() - n < multiple && l.paddedN() % multiple == 0, "pads less than one multiple");
    assertEquals(0, l.tileRows() % ShardLayout.GPU_TILE_MULTIPLE, "tile rows a multiple of 8 tokens");
    assertEquals(0, l.tileCols() % ShardLayout.GPU_TILE_MULTIPLE, "tile cols a multiple of 8 tokens");
    int[][] owner = new int[l.paddedN()][l.paddedN()];
    for (int[] row : owner) {
      java.util.Arrays.fill(row, -1);
    }
    for (int r = 0; r < cp0 * cp1; r++) {
      TileBounds t = l.tile(r);
      for (int i = t.row0; i < t.row0 + t.rows; i++) {
        for (int j = t.col0; j < t.col0 + t.cols; j++) {
          assertEquals(-1, owner[i][j], "token (" + i + ", " + j + ") in two tiles");
          owner[i][j] = r;
          assertEquals(r, l.tokenOwner(i, j));
        }
      }
    }
    for (int[] row : owner) {
      for (int o : row) {
        assertTrue(o >= 0, "every token has a tile");
      }
    }
  }

  @ParameterizedTest(name = "grid {0}x{1}, {2}")
  @CsvSource({"2,1,OUTGOING", "2,2,INCOMING", "2,3,OUTGOING", "1,4,INCOMING", "4,1,OUTGOING", "6,1,INCOMING",
      "3,2,OUTGOING", "8,1,INCOMING", "2,4,OUTGOING", "4,2,INCOMING"})
  void tokenToChannelDeliversEveryValueToItsOwnerOnce(int cp0, int cp1, Direction dir) {
    int d = 24;
    ShardLayout l = new ShardLayout(CpGrid.of(cp0, cp1), 7, d);
    int np = l.paddedN();
    int cp = cp0 * cp1;
    // Values encode (gi, gj, c); every owner must end up with exactly its channels, transposed for incoming.
    float[][][] owners = new float[cp][l.channelsPerRank()][np * np];
    int[] received = new int[cp];
    List<ReshardSegment> segs = TokenToChannel.segments(l);
    assertEquals(cp * cp, segs.size());
    for (ReshardSegment s : segs) {
      float[] payload = new float[(int) s.length()];
      TileBounds t = s.tokens;
      assertEquals(l.tile(s.src), t);
      for (int i = 0; i < t.rows; i++) {
        float[] values = new float[d * t.cols];
        for (int c = 0; c < d; c++) {
          for (int j = 0; j < t.cols; j++) {
            values[c * t.cols + j] = code(t.row0 + i, t.col0 + j, c);
          }
        }
        TokenToChannel.packRow(s, i, values, 0, payload, 0);
      }
      TokenToChannel.unpack(s, dir, payload, 0, owners[s.dst], np);
      received[s.dst] += (int) s.length();
    }
    for (int q = 0; q < cp; q++) {
      assertEquals(np * np * l.channelsPerRank(), received[q], "owner " + q + " receives its channels for every token");
      for (int cl = 0; cl < l.channelsPerRank(); cl++) {
        int c = l.firstChannel(q) + cl;
        assertEquals(q, l.channelOwner(c));
        for (int gi = 0; gi < np; gi++) {
          for (int gj = 0; gj < np; gj++) {
            int row = TokenToChannel.matrixRow(dir, gi, gj);
            int col = TokenToChannel.matrixCol(dir, gi, gj);
            assertEquals(code(gi, gj, c), owners[q][cl][row * np + col]);
          }
        }
      }
    }
  }

  @ParameterizedTest(name = "grid {0}x{1}")
  @CsvSource({"2,1", "2,2", "2,3", "1,4", "4,1", "6,1", "3,2", "8,1", "2,4", "4,2"})
  void channelToTokenDeliversEveryTokenAllChannels(int cp0, int cp1) {
    int d = 24;
    ShardLayout l = new ShardLayout(CpGrid.of(cp0, cp1), 9, d);
    int np = l.paddedN();
    int cp = cp0 * cp1;
    float[][][] z = new float[cp][l.channelsPerRank()][np * np];
    for (int q = 0; q < cp; q++) {
      for (int cl = 0; cl < l.channelsPerRank(); cl++) {
        for (int gi = 0; gi < np; gi++) {
          for (int gj = 0; gj < np; gj++) {
            z[q][cl][gi * np + gj] = code(gi, gj, l.firstChannel(q) + cl);
          }
        }
      }
    }
    for (int dst = 0; dst < cp; dst++) {
      TileBounds t = l.tile(dst);
      for (int i = 0; i < t.rows; i++) {
        float[] zt = new float[t.cols * d];
        java.util.Arrays.fill(zt, Float.NaN);
        for (int owner = 0; owner < cp; owner++) {
          ReshardSegment s = ChannelToToken.sentBy(l, owner).get(dst);
          assertEquals(owner, s.src);
          assertEquals(dst, s.dst);
          float[] payload = new float[(int) s.length()];
          ChannelToToken.pack(s, z[owner], np, payload);
          ChannelToToken.unpackRow(s, i, payload, zt, d);
        }
        for (int j = 0; j < t.cols; j++) {
          for (int c = 0; c < d; c++) {
            assertEquals(code(t.row0 + i, t.col0 + j, c), zt[j * d + c], "rank " + dst + " token row " + i);
          }
        }
      }
    }
  }

  private static float code(int gi, int gj, int c) {
    return gi * 10000f + gj * 100f + c;
  }

  @ParameterizedTest(name = "grid {0}x{1}, N={2}")
  @CsvSource({"2,1,7", "2,2,5", "2,3,13", "1,4,4", "6,1,9", "8,1,70", "2,4,17", "4,2,3"})
  void shardThenUnshardIsTheIdentityAndPaddingIsMasked(int cp0, int cp1, int n) {
    PairTensor x = PairTensor.random(2, n, 24, 3, 0.3);
    ShardLayout l = new ShardLayout(CpGrid.of(cp0, cp1), n, 24);
    PairTensor[] tiles = Sharding.shard(x, l);
    for (int r = 0; r < tiles.length; r++) {
      TileBounds t = l.tile(r);
      for (int i = 0; i < t.rows; i++) {
        for (int j = 0; j < t.cols; j++) {
          if (t.row0 + i >= n || t.col0 + j >= n) {
            assertTrue(!tiles[r].valid(1, i, j), "padding must be masked");
            assertEquals(0f, tiles[r].get(1, i, j, 2));
          } else {
            assertEquals(x.get(1, t.row0 + i, t.col0 + j, 2), tiles[r].get(1, i, j, 2));
          }
        }
      }
    }
    assertTrue(x.sameAs(Sharding.unshard(tiles, l, true)));
  }

  @Test
  void gridParsingAndErrors() {
    assertEquals(CpGrid.of(2, 3), CpGrid.parse("2x3"));
    assertEquals(CpGrid.oneD(4), CpGrid.parse(" 4 "));
    assertEquals("3x1", CpGrid.oneD(3).toString());
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> CpGrid.parse("two"));
    assertTrue(e.getMessage().contains("'two'") && e.getMessage().contains("like 2x2"), e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> CpGrid.oneD(0));
    assertTrue(e.getMessage().startsWith("cp = 0: ") && e.getMessage().contains(">= 1"), e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> CpGrid.of(2, 0));
    assertTrue(e.getMessage().startsWith("cp1 (grid columns) = 0"), e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> new ShardLayout(CpGrid.of(2, 2), 0, 8));
    assertTrue(e.getMessage().startsWith("N = 0: "), e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> new ShardLayout(CpGrid.of(2, 3), 8, 8));
    assertTrue(e.getMessage().contains("D = 8: must be divisible by cp = 6"), e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> new ShardLayout(CpGrid.of(2, 2), 8, 8).tile(4));
    assertTrue(e.getMessage().startsWith("rank = 4: must lie in [0, 4)"), e.getMessage());
  }

  @Test
  void teamRankMapGroupsHostsAndIsABijection() {
    List<TeamMember> gathered = List.of(TeamMember.parse("hostB:1"), TeamMember.parse("hostA:0"),
        TeamMember.parse("hostB:0"), TeamMember.parse("hostA:1"));
    TeamRankMap map = new TeamRankMap(CpGrid.of(2, 2), gathered);
    // logical order: hostA:0, hostA:1, hostB:0, hostB:1 -> team ranks 1, 3, 2, 0
    assertEquals(1, map.teamRank(0));
    assertEquals(3, map.teamRank(1));
    assertEquals(2, map.teamRank(2));
    assertEquals(0, map.teamRank(3));
    for (int r = 0; r < 4; r++) {
      assertEquals(r, map.logicalRank(map.teamRank(r)));
    }
    assertTrue(map.sameHost(0, 1) && map.sameHost(2, 3) && !map.sameHost(1, 2));
    assertEquals(2, map.hostCount());
    assertEquals("hostA:1", map.memberOfLogical(1).toString());
  }

  @Test
  void teamRankMapRefusesWrongSizeAndDuplicates() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> new TeamRankMap(CpGrid.oneD(4), List.of(new TeamMember("h", 0), new TeamMember("h", 1), new TeamMember("h", 2))));
    assertTrue(e.getMessage().startsWith("team size = 3: must equal cp = 4"), e.getMessage());
    e = assertThrows(InvalidInputException.class,
        () -> new TeamRankMap(CpGrid.oneD(2), List.of(new TeamMember("h", 0), new TeamMember("h", 0))));
    assertTrue(e.getMessage().contains("h:0") && e.getMessage().contains("one executor per GPU"), e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> TeamMember.parse("nohostdevice"));
    assertTrue(e.getMessage().contains("'nohostdevice'") && e.getMessage().contains("host:device"), e.getMessage());
  }
}
