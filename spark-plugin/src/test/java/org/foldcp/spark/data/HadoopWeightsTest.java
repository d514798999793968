package org.foldcp.spark.data;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.io.SafeTensors;
import org.foldcp.ops.layer.LayerWeights;
import org.junit.jupiter.api.Test;

/** .safetensors weights through Hadoop's FileSystem, against the local reader on the same file. */
class HadoopWeightsTest extends DataSession {

  @Test
  void aLayerFromAHadoopUriEqualsTheLocalReadersAndErrorsNameTheUri() {
    Path file = dir.resolve("model.safetensors");
    Map<String, LayerWeights> layers = new LinkedHashMap<>();
    layers.put("m.layers.0.tri_mul_out.", LayerWeights.random(16, 1, true));
    layers.put("m.layers.0.tri_mul_in.", LayerWeights.random(16, 2, true));
    SafeTensors.writeLayers(file, layers, "BF16");
    String uri = file.toUri().toString();

    for (String prefix : layers.keySet()) {
      LayerWeights local = SafeTensors.readLayer(file, prefix, 16);
      LayerWeights hadoop = FoldCpData.readLayer(spark, uri, prefix, 16);
      assertEquals(local.names(), hadoop.names(), prefix);
      assertEquals(local.digest(), hadoop.digest(), prefix + ": the same values bit for bit");
    }

    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> FoldCpData.readLayer(spark, uri, "m.layers.1.tri_mul_out.", 16));
    assertTrue(e.getMessage().contains(uri) || e.getMessage().contains("m.layers.1"), e.getMessage());
    e = assertThrows(InvalidInputException.class,
        () -> FoldCpData.readLayer(spark, dir.resolve("absent.safetensors").toUri().toString(), "m.", 16));
    assertTrue(e.getMessage().contains("absent.safetensors") && e.getMessage().contains("does not exist"),
        e.getMessage());
  }
}
