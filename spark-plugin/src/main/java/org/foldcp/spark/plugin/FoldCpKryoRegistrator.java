package org.foldcp.spark.plugin;

import com.esotericsoftware.kryo.Kryo;
import org.foldcp.spark.shuffle.RankMessage;
import org.foldcp.spark.tiles.TileKey;
import org.foldcp.spark.tiles.TileRecord;
import com.esotericsoftware.kryo.Serializer;
import org.apache.spark.serializer.KryoRegistrator;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.ReshardSegment;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.cp.TileBounds;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.layer.WeightTensor;
import org.foldcp.ops.tensor.PairTensor;

/**
 * Registers fold-cp's tensor, weight and CP classes with Spark's Kryo
 * ({@code spark.kryo.registrator=org.foldcp.spark.plugin.FoldCpKryoRegistrator}), so they
 * serialize compactly and work under {@code spark.kryo.registrationRequired=true}.
 *
 * <p>The classes have final fields and no no-arg constructors; each gets a serializer that goes
 * through its public constructor or factory (see {@link PairTensorSerializer}, {@link
 * LayerSerializers}, {@link CpSerializers}). Their array types are registered too, because
 * Spark serializes arrays of them (collect, broadcast of several layers), and so are the
 * primitive arrays they are made of, for jobs that ship rows or weights on their own.
 */
public final class FoldCpKryoRegistrator implements KryoRegistrator {
  @Override
  public void registerClasses(Kryo kryo) {
    register(kryo, PairTensor.class, new PairTensorSerializer());

    register(kryo, WeightTensor.class, new LayerSerializers.WeightTensorSerializer());
    register(kryo, LayerWeights.class, new LayerSerializers.LayerWeightsSerializer());
    register(kryo, TriMulSpec.class, new LayerSerializers.TriMulSpecSerializer());
    register(kryo, TriMulLayer.class, new LayerSerializers.TriMulLayerSerializer());
    register(kryo, LayerStack.class, new LayerSerializers.LayerStackSerializer());
    kryo.register(Direction.class); // Kryo's default for enums writes the ordinal
    kryo.register(Direction[].class);

    register(kryo, CpGrid.class, CpSerializers.cpGrid());
    register(kryo, TileBounds.class, CpSerializers.tileBounds());
    register(kryo, ReshardSegment.class, CpSerializers.reshardSegment());
    register(kryo, ShardLayout.class, CpSerializers.shardLayout());

    register(kryo, TileRecord.class, new RouteSerializers.TileRecordSerializer());
    register(kryo, TileKey.class, new RouteSerializers.TileKeySerializer());
    register(kryo, RankMessage.class, new RouteSerializers.RankMessageSerializer());

    for (Class<?> array : new Class<?>[] {
        short[].class, short[][].class, byte[].class, byte[][].class,
        float[].class, float[][].class, long[].class, int[].class}) {
      kryo.register(array);
    }
  }

  /** Registers {@code type} with {@code serializer}, and its array type with Kryo's default. */
  private static <T> void register(Kryo kryo, Class<T> type, Serializer<T> serializer) {
    kryo.register(type, serializer);
    kryo.register(java.lang.reflect.Array.newInstance(type, 0).getClass());
  }
}
