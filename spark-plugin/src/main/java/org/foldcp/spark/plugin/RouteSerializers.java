package org.foldcp.spark.plugin;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.KryoException;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.shuffle.RankMessage;
import org.foldcp.spark.tiles.TileKey;
import org.foldcp.spark.tiles.TileRecord;

/**
 * Kryo serializers for what the routes move between tasks: tiles with their place in the
 * complex, (complex, rank) keys, and the shuffle route's payload messages. Tiles go through
 * {@link PairTensorSerializer}; payloads as raw float arrays.
 */
final class RouteSerializers {
  private RouteSerializers() {}

  static final class TileRecordSerializer extends Serializer<TileRecord> {
    TileRecordSerializer() {
      super(false, true);
    }

    @Override
    public void write(Kryo kryo, Output output, TileRecord r) {
      KryoReads.writeString(output, r.complexId);
      output.writeVarInt(r.nTokens, true);
      output.writeVarInt(r.row0, true);
      output.writeVarInt(r.col0, true);
      kryo.writeObject(output, r.tile);
    }

    @Override
    public TileRecord read(Kryo kryo, Input input, Class<TileRecord> type) {
      String id = KryoReads.string(input, "TileRecord complex id");
      int n = input.readVarInt(true);
      int row0 = input.readVarInt(true);
      int col0 = input.readVarInt(true);
      PairTensor tile = kryo.readObject(input, PairTensor.class);
      // write never sends nulls: a null here is a corrupt stream, not a NullPointerException later
      if (tile == null) {
        throw new KryoException("corrupt TileRecord: null tile");
      }
      return new TileRecord(id, n, row0, col0, tile);
    }
  }

  static final class TileKeySerializer extends Serializer<TileKey> {
    TileKeySerializer() {
      super(false, true);
    }

    @Override
    public void write(Kryo kryo, Output output, TileKey k) {
      KryoReads.writeString(output, k.complexId);
      output.writeVarInt(k.rank, true);
    }

    @Override
    public TileKey read(Kryo kryo, Input input, Class<TileKey> type) {
      return new TileKey(KryoReads.string(input, "TileKey complex id"), input.readVarInt(true));
    }
  }

  static final class RankMessageSerializer extends Serializer<RankMessage> {
    RankMessageSerializer() {
      super(false, true);
    }

    @Override
    public void write(Kryo kryo, Output output, RankMessage m) {
      output.writeVarInt(m.src, true);
      output.writeBoolean(m.isTile());
      if (m.isTile()) {
        kryo.writeObject(output, m.tile);
      } else {
        output.writeVarInt(m.payload.length, true);
        output.writeFloats(m.payload);
      }
    }

    @Override
    public RankMessage read(Kryo kryo, Input input, Class<RankMessage> type) {
      int src = input.readVarInt(true);
      if (input.readBoolean()) {
        return RankMessage.tile(src, kryo.readObject(input, TileRecord.class));
      }
      int n = KryoReads.count(input, 0, KryoReads.MAX_ARRAY, "RankMessage payload length");
      return RankMessage.payload(src, KryoReads.floats(input, n));
    }
  }
}
