package org.foldcp.spark.barrier;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The allGather of addresses and key shares for ranks that are threads of one test, with slots
 * the test can fill itself.
 */
final class ThreadRendezvous {
  private final AtomicReferenceArray<String> addresses;
  private final AtomicReferenceArray<byte[]> shares;
  private final CountDownLatch ready;

  ThreadRendezvous(int size) {
    this.addresses = new AtomicReferenceArray<>(size);
    this.shares = new AtomicReferenceArray<>(size);
    this.ready = new CountDownLatch(size);
  }

  /** Announces an address on behalf of a rank that will not take part itself. */
  void announce(int rank, String address) {
    announce(rank, address, TeamKey.newShare());
  }

  private void announce(int rank, String address, byte[] share) {
    addresses.set(rank, address);
    shares.set(rank, share);
    ready.countDown();
  }

  TcpTransport.Rendezvous forRank(int rank) {
    return (own, share) -> {
      announce(rank, own, share);
      try {
        if (!ready.await(20, TimeUnit.SECONDS)) {
          throw new IllegalStateException("test rendezvous: not every rank announced itself");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
      List<String> all = new ArrayList<>();
      List<byte[]> allShares = new ArrayList<>();
      for (int r = 0; r < addresses.length(); r++) {
        all.add(addresses.get(r));
        allShares.add(shares.get(r));
      }
      return new TcpTransport.Roster(all, TeamKey.of(allShares, "thread-rendezvous", null));
    };
  }
}
