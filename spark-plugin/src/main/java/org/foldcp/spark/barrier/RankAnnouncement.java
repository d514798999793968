package org.foldcp.spark.barrier;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.spark.tiles.TileRecord;

/**
 * What one barrier task tells the others when the team forms (one allGather): its address (where
 * a TCP rank listens for its peers; a GPU rank's NVSHMEM member id), which executor it runs in, which complexes it holds (sorted by id) and which
 * layers it is about to apply (spec and weight digest per layer). Every rank receives every
 * announcement, so every rank reaches the same verdict on the team and its workload.
 */
public record RankAnnouncement(int rank, String address, String host, String executorId, List<ComplexShape> complexes,
                               List<LayerPrint> layers) implements Serializable {
  /** One layer as far as agreement goes: what it computes and a digest of its weights. */
  public record LayerPrint(String spec, String weightDigest) implements Serializable {}

  public RankAnnouncement {
    complexes = List.copyOf(complexes);
    layers = List.copyOf(layers);
  }

  public static RankAnnouncement of(int rank, String address, String host, String executorId,
                                    Collection<TileRecord> tiles, LayerStack stack) {
    List<ComplexShape> complexes = new ArrayList<>();
    for (TileRecord t : tiles) {
      complexes.add(new ComplexShape(t.complexId, t.nTokens, t.dim()));
    }
    complexes.sort(Comparator.comparing(ComplexShape::id));
    List<LayerPrint> layers = new ArrayList<>();
    for (TriMulLayer l : stack.layers()) {
      layers.add(new LayerPrint(l.spec().toString(), l.weights().digest()));
    }
    return new RankAnnouncement(rank, address, host, executorId, complexes, layers);
  }

  public boolean holds(String complexId) {
    return complexes.stream().anyMatch(c -> c.id().equals(complexId));
  }

  /** The form allGather carries: Base64 of the serialized record (complex ids may hold any character). */
  public String encode() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(this);
    } catch (IOException e) {
      throw new IllegalStateException("cannot serialize the announcement of rank " + rank + ": " + e, e);
    }
    return Base64.getEncoder().encodeToString(bytes.toByteArray());
  }

  public static RankAnnouncement decode(String message, int fromRank) {
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(Base64.getDecoder().decode(message)))) {
      return (RankAnnouncement) in.readObject();
    } catch (IOException | ClassNotFoundException | IllegalArgumentException | ClassCastException e) {
      throw new IllegalStateException("the team-formation message of rank " + fromRank
          + " is not a fold-cp rank announcement (a different fold-cp version on that executor?): " + e, e);
    }
  }
}
