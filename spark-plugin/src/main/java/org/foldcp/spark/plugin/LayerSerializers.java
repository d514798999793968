package org.foldcp.spark.plugin;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.KryoException;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import java.util.ArrayList;
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
    @Override
    public void write(Kryo kryo, Output output, WeightTensor t) {
      output.writeString(t.name());
      long[] shape = t.shape();
      output.writeVarInt(shape.length, true);
      output.writeLongs(shape);
      output.writeVarInt(t.values().length, true);
      output.writeFloats(t.values());
    }

    @Override
    public WeightTensor read(Kryo kryo, Input input, Class<WeightTensor> type) {
      String name = input.readString();
      long[] shape = input.readLongs(input.readVarInt(true));
      float[] values = input.readFloats(input.readVarInt(true));
      return new WeightTensor(name, shape, values);
    }
  }

  /**
   * D, the weight names with their values, and the digest. The digest is recomputed on read
   * and compared: ranks rely on equal digests meaning bit-identical weights.
   */
  static final class LayerWeightsSerializer extends Serializer<LayerWeights> {
    @Override
    public void write(Kryo kryo, Output output, LayerWeights w) {
      output.writeVarInt(w.dim(), true);
      List<String> names = w.names();
      output.writeVarInt(names.size(), true);
      for (String name : names) {
        float[] v = w.get(name);
        output.writeString(name);
        output.writeVarInt(v.length, true);
        output.writeFloats(v);
      }
      output.writeString(w.digest());
    }

    @Override
    public LayerWeights read(Kryo kryo, Input input, Class<LayerWeights> type) {
      int dim = input.readVarInt(true);
      int count = input.readVarInt(true);
      Map<String, WeightTensor> tensors = new LinkedHashMap<>();
      for (int q = 0; q < count; q++) {
        String name = input.readString();
        float[] values = input.readFloats(input.readVarInt(true));
        long[] shape;
        try {
          shape = LayerWeights.expectedShape(name, dim);
        } catch (IllegalArgumentException e) {
          throw new KryoException("corrupt LayerWeights: " + e.getMessage(), e);
        }
        tensors.put(name, new WeightTensor(name, shape, values));
      }
      String digest = input.readString();
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
      output.writeString(s.direction().name());
      output.writeBoolean(s.residual());
      output.writeFloat(s.eps());
    }

    @Override
    public TriMulSpec read(Kryo kryo, Input input, Class<TriMulSpec> type) {
      Direction direction = Direction.valueOf(input.readString());
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
      int size = input.readVarInt(true);
      List<TriMulLayer> layers = new ArrayList<>(size);
      for (int l = 0; l < size; l++) {
        layers.add(kryo.readObject(input, TriMulLayer.class));
      }
      return new LayerStack(layers);
    }
  }
}
