package org.foldcp.spark.plugin;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.KryoException;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.layer.WeightTensor;

/**
 * Kryo serializers for the layer classes. They write what the public constructors take and
 * read back through those constructors, so a deserialized layer is validated like a freshly
 * loaded one (names, shapes, finite values) and no reflection into final fields is needed.
 */
final class LayerSerializers {
  private LayerSerializers() {}

  static final class WeightTensorSerializer extends Serializer<WeightTensor> {
    /** Dimensions a tensor's shape may have on the wire (numpy's limit; weights have 1 or 2). */
    static final int MAX_RANK = 64;

    @Override
    public void write(Kryo kryo, Output output, WeightTensor t) {
      KryoReads.writeString(output, t.name());
      long[] shape = t.shape();
      output.writeVarInt(shape.length, true);
      output.writeLongs(shape);
      output.writeVarInt(t.values().length, true);
      output.writeFloats(t.values());
    }

    @Override
    public WeightTensor read(Kryo kryo, Input input, Class<WeightTensor> type) {
      String name = KryoReads.string(input, "WeightTensor name");
      long[] shape = input.readLongs(KryoReads.count(input, 0, MAX_RANK, "rank of WeightTensor '" + name + "'"));
      int count = KryoReads.count(input, 0, KryoReads.MAX_ARRAY, "value count of WeightTensor '" + name + "'");
      // the constructor checks the count against the shape, the values' allocation follows the stream
      return new WeightTensor(name, shape, KryoReads.floats(input, count));
    }
  }

  /**
   * D, the weight names with their values, and the digest. The digest is recomputed on read
   * and compared: ranks rely on equal digests meaning bit-identical weights.
   */
  static final class LayerWeightsSerializer extends Serializer<LayerWeights> {
    /** Tensors a layer may carry: the required and optional names. */
    private static final int NAMES = LayerWeights.REQUIRED.size() + LayerWeights.OPTIONAL.size();

    @Override
    public void write(Kryo kryo, Output output, LayerWeights w) {
      output.writeVarInt(w.dim(), true);
      output.writeVarInt(w.hidden(), true);
      List<String> names = w.names();
      output.writeVarInt(names.size(), true);
      for (String name : names) {
        float[] v = w.get(name);
        KryoReads.writeString(output, name);
        output.writeVarInt(v.length, true);
        output.writeFloats(v);
      }
      KryoReads.writeString(output, w.digest());
    }

    @Override
    public LayerWeights read(Kryo kryo, Input input, Class<LayerWeights> type) {
      int dim = KryoReads.count(input, 1, KryoReads.MAX_ARRAY, "D of LayerWeights");
      int hidden = KryoReads.count(input, 1, KryoReads.MAX_ARRAY, "H of LayerWeights");
      int count = KryoReads.count(input, 0, NAMES, "tensor count of LayerWeights");
      Map<String, WeightTensor> tensors = new LinkedHashMap<>();
      for (int q = 0; q < count; q++) {
        String name = KryoReads.string(input, "LayerWeights tensor name");
        long[] shape;
        try {
          shape = LayerWeights.expectedShape(name, dim, hidden);
        } catch (IllegalArgumentException e) {
          throw new KryoException("corrupt LayerWeights: " + e.getMessage(), e);
        }
        int n = KryoReads.count(input, 0, KryoReads.MAX_ARRAY, "value count of LayerWeights tensor '" + name + "'");
        long expected = 1;
        for (long side : shape) {
          expected *= side; // below 2^63: at most 2H * D with H, D < 2^31
        }
        if (n != expected) {
          // refused before reading: D^2 values claimed by a corrupt D would otherwise be read first
          throw KryoReads.corrupt("value count of LayerWeights tensor '" + name + "'", n,
              "must be " + expected + " for D = " + dim + ", H = " + hidden);
        }
        tensors.put(name, new WeightTensor(name, shape, KryoReads.floats(input, n)));
      }
      String digest = KryoReads.string(input, "LayerWeights digest");
      LayerWeights w = LayerWeights.fromTensors(tensors, "", dim);
      if (!w.digest().equals(digest)) {
        throw new KryoException("LayerWeights digest mismatch after deserialization: wrote " + digest
            + ", read back " + w.digest());
      }
      return w;
    }
  }

  static final class TriMulSpecSerializer extends Serializer<TriMulSpec> {
    TriMulSpecSerializer() {
      super(false, true); // immutable: Kryo.copy may share it
    }

    @Override
    public void write(Kryo kryo, Output output, TriMulSpec s) {
      KryoReads.writeString(output, s.direction().name());
      output.writeBoolean(s.residual());
      output.writeFloat(s.eps());
    }

    @Override
    public TriMulSpec read(Kryo kryo, Input input, Class<TriMulSpec> type) {
      String name = KryoReads.string(input, "TriMulSpec direction");
      Direction direction;
      try {
        direction = Direction.valueOf(name);
      } catch (IllegalArgumentException e) {
        throw KryoReads.corrupt("TriMulSpec direction", "'" + name + "'", "must be one of " + Arrays.toString(Direction.values()));
      }
      boolean residual = input.readBoolean();
      return new TriMulSpec(direction, residual, input.readFloat());
    }
  }

  static final class TriMulLayerSerializer extends Serializer<TriMulLayer> {
    @Override
    public void write(Kryo kryo, Output output, TriMulLayer layer) {
      kryo.writeObject(output, layer.spec());
      kryo.writeObject(output, layer.weights());
    }

    @Override
    public TriMulLayer read(Kryo kryo, Input input, Class<TriMulLayer> type) {
      TriMulSpec spec = kryo.readObject(input, TriMulSpec.class);
      return new TriMulLayer(spec, kryo.readObject(input, LayerWeights.class));
    }
  }

  /** The layers in order; Kryo's reference tracking writes weights shared by several layers once. */
  static final class LayerStackSerializer extends Serializer<LayerStack> {
    @Override
    public void write(Kryo kryo, Output output, LayerStack stack) {
      output.writeVarInt(stack.size(), true);
      for (TriMulLayer layer : stack.layers()) {
        kryo.writeObject(output, layer);
      }
    }

    @Override
    public LayerStack read(Kryo kryo, Input input, Class<LayerStack> type) {
      int size = KryoReads.count(input, 1, KryoReads.MAX_ARRAY, "layer count of LayerStack");
      // grows as layers arrive: the count alone must not size an allocation
      List<TriMulLayer> layers = new ArrayList<>(Math.min(size, 64));
      for (int l = 0; l < size; l++) {
        layers.add(kryo.readObject(input, TriMulLayer.class));
      }
      return new LayerStack(layers);
    }
  }
}
