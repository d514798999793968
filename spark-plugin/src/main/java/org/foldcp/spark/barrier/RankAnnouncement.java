package org.foldcp.spark.barrier;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.spark.tiles.TileRecord;

/**
 * What one barrier task tells the others when the team forms (one allGather): its address (where
 * a TCP rank listens for its peers; a GPU rank's NVSHMEM member id), which executor it runs in,
 * which complexes it holds (sorted by id) and which layers it is about to apply (spec and weight
 * digest per layer), and a TCP rank's share of the team key ({@link TeamKey}; empty for a GPU
 * rank), which toString never shows. Every rank receives every announcement, so every rank
 * reaches the same verdict on the team and its workload.
 */
public record RankAnnouncement(int rank, String address, String host, String executorId, List<ComplexShape> complexes,
                               List<LayerPrint> layers, byte[] keyShare) implements Serializable {
  /** One layer as far as agreement goes: what it computes and a digest of its weights. */
  public record LayerPrint(String spec, String weightDigest) implements Serializable {}

  public RankAnnouncement {
    complexes = List.copyOf(complexes);
    layers = List.copyOf(layers);
    keyShare = keyShare.clone();
  }

  /** This announcement carrying a TCP rank's share of the team key. */
  RankAnnouncement withKeyShare(byte[] share) {
    return new RankAnnouncement(rank, address, host, executorId, complexes, layers, share);
  }

  @Override
  public byte[] keyShare() {
    return keyShare.clone();
  }

  /** Equal fields, the key share by content (a record compares arrays by identity). */
  @Override
  public boolean equals(Object o) {
    return o instanceof RankAnnouncement a && rank == a.rank && address.equals(a.address) && host.equals(a.host)
        && executorId.equals(a.executorId) && complexes.equals(a.complexes) && layers.equals(a.layers)
        && Arrays.equals(keyShare, a.keyShare);
  }

  @Override
  public int hashCode() {
    return Objects.hash(rank, address, host, executorId, complexes, layers) * 31 + Arrays.hashCode(keyShare);
  }

  /** Everything but the key share, which must not reach a log. */
  @Override
  public String toString() {
    return "RankAnnouncement[rank=" + rank + ", address=" + address + ", host=" + host + ", executorId=" + executorId
        + ", complexes=" + complexes + ", layers=" + layers + ", keyShare=(" + keyShare.length + " bytes, hidden)]";
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
    return new RankAnnouncement(rank, address, host, executorId, complexes, layers, new byte[0]);
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
