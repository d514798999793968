package org.foldcp.spark.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** One executor GPU per device and owner, closed with the owner. */
class GpuOwnersTest {
  private final FakeGpus gpus = new FakeGpus();

  @Test
  void oneGpuPerDeviceWhosePermitsAreFixedAtFirstUse() {
    GpuOwners owners = FakeGpus.owners("executor 7", gpus);
    ExecutorGpu three = owners.device(3, 2);
    assertSame(three, owners.device(3, 5));
    assertEquals(2, owners.device(3, 5).permits());
    assertNotSame(three, owners.device(4, 1));
    assertEquals(2, owners.size());
  }

  @Test
  void closingClosesEveryOpenedBackendOnceAndRefusesNewOnes() {
    GpuOwners owners = FakeGpus.owners("executor 7", gpus);
    owners.device(3, 1).borrow(Borrower.NONE).close();
    owners.device(4, 1); // made, never borrowed: nothing to open or close
    owners.close();
    owners.close();
    assertEquals(1, gpus.made().size());
    assertEquals(1, gpus.made().get(0).closes());
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> owners.device(3, 1));
    assertEquals("the GPUs of executor 7 are closed: it has shut down, and no task can borrow a GPU from it any more",
        e.getMessage());
  }

  @Test
  void closingTheDevicesKeepsTheOwnerUsable() {
    GpuOwners owners = FakeGpus.owners("this JVM", gpus);
    ExecutorGpu first = owners.device(0, 1);
    first.borrow(Borrower.NONE).close();
    owners.closeDevices();
    assertEquals(1, gpus.made().get(0).closes());
    assertEquals(0, owners.size());
    ExecutorGpu second = owners.device(0, 1);
    assertNotSame(first, second);
    second.borrow(Borrower.NONE).close();
    assertEquals(2, gpus.made().size());
  }
}
