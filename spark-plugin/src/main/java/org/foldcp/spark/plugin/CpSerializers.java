package org.foldcp.spark.plugin;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import java.util.function.BiConsumer;
import java.util.function.Function;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.ReshardSegment;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.cp.TileBounds;

/**
 * Kryo serializers for the context-parallel index classes: small immutable values, written as
 * their constructor arguments (varints) and rebuilt through the constructors, which re-check them.
 * Each class has a writer and a reader here; a value that holds another (a segment's tokens, a
 * layout's grid) writes it inline through the other's pair.
 */
final class CpSerializers {
  private CpSerializers() {}

  /** A serializer of non-null immutable values through a writer and a reader. */
  private static final class ValueSerializer<T> extends Serializer<T> {
    private final BiConsumer<Output, T> writer;
    private final Function<Input, T> reader;

    ValueSerializer(BiConsumer<Output, T> writer, Function<Input, T> reader) {
      super(false, true);
      this.writer = writer;
      this.reader = reader;
    }

    @Override
    public void write(Kryo kryo, Output output, T value) {
      writer.accept(output, value);
    }

    @Override
    public T read(Kryo kryo, Input input, Class<T> type) {
      return reader.apply(input);
    }
  }

  static Serializer<CpGrid> cpGrid() {
    return new ValueSerializer<>(CpSerializers::writeGrid, CpSerializers::readGrid);
  }

  static Serializer<TileBounds> tileBounds() {
    return new ValueSerializer<>(CpSerializers::writeTile, CpSerializers::readTile);
  }

  static Serializer<ReshardSegment> reshardSegment() {
    return new ValueSerializer<>(CpSerializers::writeSegment, CpSerializers::readSegment);
  }

  static Serializer<ShardLayout> shardLayout() {
    return new ValueSerializer<>(CpSerializers::writeLayout, CpSerializers::readLayout);
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

  private static void writeSegment(Output output, ReshardSegment s) {
    output.writeVarInt(s.src, true);
    output.writeVarInt(s.dst, true);
    writeTile(output, s.tokens);
    output.writeVarInt(s.channel0, true);
    output.writeVarInt(s.channels, true);
  }

  private static ReshardSegment readSegment(Input input) {
    int src = input.readVarInt(true);
    int dst = input.readVarInt(true);
    TileBounds tokens = readTile(input);
    int channel0 = input.readVarInt(true);
    return new ReshardSegment(src, dst, tokens, channel0, input.readVarInt(true));
  }

  private static void writeLayout(Output output, ShardLayout l) {
    writeGrid(output, l.grid());
    output.writeVarInt(l.n(), true);
    output.writeVarInt(l.dim(), true);
    output.writeVarInt(l.hidden(), true);
  }

  private static ShardLayout readLayout(Input input) {
    CpGrid grid = readGrid(input);
    int n = input.readVarInt(true);
    int dim = input.readVarInt(true);
    int hidden = input.readVarInt(true);
    return hidden == 0 ? ShardLayout.ofTiles(grid, n, dim) : new ShardLayout(grid, n, dim, hidden);
  }
}
