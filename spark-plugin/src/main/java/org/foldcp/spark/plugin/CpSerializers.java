package org.foldcp.spark.plugin;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.ReshardSegment;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.cp.TileBounds;

/**
 * Kryo serializers for the context-parallel index classes: small immutable values, written as
 * their constructor arguments (varints) and rebuilt through the constructors, which re-check them.
 */
final class CpSerializers {
  private CpSerializers() {}

  static final class CpGridSerializer extends Serializer<CpGrid> {
    CpGridSerializer() {
      super(false, true);
    }

    @Override
    public void write(Kryo kryo, Output output, CpGrid g) {
      writeGrid(output, g);
    }

    @Override
    public CpGrid read(Kryo kryo, Input input, Class<CpGrid> type) {
      return readGrid(input);
    }
  }

  static final class TileBoundsSerializer extends Serializer<TileBounds> {
    TileBoundsSerializer() {
      super(false, true);
    }

    @Override
    public void write(Kryo kryo, Output output, TileBounds t) {
      writeTile(output, t);
    }

    @Override
    public TileBounds read(Kryo kryo, Input input, Class<TileBounds> type) {
      return readTile(input);
    }
  }

  static final class ReshardSegmentSerializer extends Serializer<ReshardSegment> {
    ReshardSegmentSerializer() {
      super(false, true);
    }

    @Override
    public void write(Kryo kryo, Output output, ReshardSegment s) {
      output.writeVarInt(s.src, true);
      output.writeVarInt(s.dst, true);
      writeTile(output, s.tokens);
      output.writeVarInt(s.channel0, true);
      output.writeVarInt(s.channels, true);
    }

    @Override
    public ReshardSegment read(Kryo kryo, Input input, Class<ReshardSegment> type) {
      int src = input.readVarInt(true);
      int dst = input.readVarInt(true);
      TileBounds tokens = readTile(input);
      int channel0 = input.readVarInt(true);
      return new ReshardSegment(src, dst, tokens, channel0, input.readVarInt(true));
    }
  }

  static final class ShardLayoutSerializer extends Serializer<ShardLayout> {
    ShardLayoutSerializer() {
      super(false, true);
    }

    @Override
    public void write(Kryo kryo, Output output, ShardLayout l) {
      writeGrid(output, l.grid());
      output.writeVarInt(l.n(), true);
      output.writeVarInt(l.dim(), true);
    }

    @Override
    public ShardLayout read(Kryo kryo, Input input, Class<ShardLayout> type) {
      CpGrid grid = readGrid(input);
      int n = input.readVarInt(true);
      return new ShardLayout(grid, n, input.readVarInt(true));
    }
  }

  private static void writeGrid(Output output, CpGrid g) {
    output.writeVarInt(g.rowGroups(), true);
    output.writeVarInt(g.colGroups(), true);
  }

  private static CpGrid readGrid(Input input) {
    int rowGroups = input.readVarInt(true);
    return CpGrid.of(rowGroups, input.readVarInt(true));
  }

  private static void writeTile(Output output, TileBounds t) {
    output.writeVarInt(t.row0, true);
    output.writeVarInt(t.col0, true);
    output.writeVarInt(t.rows, true);
    output.writeVarInt(t.cols, true);
  }

  private static TileBounds readTile(Input input) {
    int row0 = input.readVarInt(true);
    int col0 = input.readVarInt(true);
    int rows = input.readVarInt(true);
    return new TileBounds(row0, col0, rows, input.readVarInt(true));
  }
}
