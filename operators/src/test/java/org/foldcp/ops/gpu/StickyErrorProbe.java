package org.foldcp.ops.gpu;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Properties;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;

/**
 * The process {@link StickyCudaErrorGpuTest} starts, since a sticky CUDA error poisons the CUDA
 * context of its process for good. Usage: {@code StickyErrorProbe FINDINGS_FILE}. In order, on GPU
 * 0, through our JNI binding ({@link NativeTriMul}) and the driver (JCuda):
 * <ol>
 *   <li>valid: a valid forward (B, N, D) = (1, 256, 32);
 *   <li>errors that are not sticky: a workspace smaller than the shape needs (the native check,
 *       a GpuException), a bogus address that is no device memory (the native check, an
 *       InvalidInputException), cuMemAlloc of 1 PiB (the driver's out of memory); then the valid
 *       forward again, which must still work;
 *   <li>illegalAddress: a forward of (8, 2048, 32) whose workspace is a lie: it starts inside a
 *       real allocation (so it passes the native check that it is device memory, which sees only
 *       its first byte) but only 2 MiB of it are real where the forward was told 4 GiB: the
 *       stage 1 kernel stores a and b past the end of the allocation, over more address space
 *       than this process has mapped in all, so some store hits an unmapped page;
 *   <li>after it, valid calls: the valid forward on its buffers made before, a layer created
 *       (cudaMalloc in our library), cuCtxSynchronize (the driver).
 * </ol>
 * Each step writes STEP.outcome (ok, or the exception's simple class name), STEP.message,
 * STEP.status ({@link GpuException#statusName()}) and STEP.sticky ({@link StickyCudaErrors#in},
 * or none) to the findings file, rewritten after every step, so a crash still leaves the steps
 * before it. Nothing is freed: after the sticky error the process can only end, which it does
 * through System.exit, as the executor plugin ends an executor after one (status 0 here: the
 * probe ran to its end).
 */
public final class StickyErrorProbe {
  static final int N = 256;
  static final int D = 32;
  static final int FAULT_B = 8;
  static final int FAULT_N = 2048;
  /** The real part of the lying workspace: enough that its start is device memory. */
  static final long REAL_WORKSPACE_BYTES = 2L << 20;

  private final Properties found = new Properties();
  private final Path file;

  private StickyErrorProbe(Path file) {
    this.file = file;
  }

  public static void main(String[] args) throws IOException {
    new StickyErrorProbe(Path.of(args[0])).run();
    System.exit(0);
  }

  private void run() throws IOException {
    NativeLibrary.load();
    GpuDevice dev = GpuDevice.open(0);
    long layer = NativeTriMul.createLayer(layer());
    DeviceBuffer x = DeviceBuffer.allocate(dev, (long) N * N * D * 2, "probe x");
    x.fill((byte) 0);
    long wsBytes = NativeTriMul.workspaceSize(1, N, D);
    DeviceBuffer ws = DeviceBuffer.allocate(dev, wsBytes, "probe workspace");
    GpuStream stream = GpuStream.create(dev);
    Runnable validForward = () -> NativeTriMul.forward(layer, x.address(), 0, x.address(), 1, N, ws.address(),
        wsBytes, D, stream.handle(), new float[3]);

    step("valid", validForward);
    step("smallWorkspace", () -> NativeTriMul.forward(layer, x.address(), 0, x.address(), 1, N, ws.address(),
        wsBytes / 2, D, stream.handle(), new float[3]));
    long bogus = 0x10000;  // 16-byte aligned, never device memory
    step("notDeviceMemory", () -> NativeTriMul.forward(layer, bogus, 0, bogus, 1, N, ws.address(), wsBytes,
        D, stream.handle(), new float[3]));
    step("outOfMemory", () -> DeviceBuffer.allocate(dev, 1L << 50, "more than any GPU has").close());
    step("validAfterNonSticky", validForward);

    long xBytes = (long) FAULT_B * FAULT_N * FAULT_N * D * 2;
    long claimed = NativeTriMul.workspaceSize(FAULT_B, FAULT_N, D);
    DeviceBuffer real = DeviceBuffer.allocate(dev, xBytes + REAL_WORKSPACE_BYTES, "fault x and 2 MiB of workspace");
    long lyingWorkspace = real.address() + xBytes;  // right after x: no overlap with it, as the native check wants
    found.setProperty("illegalAddress.workspace", "claimed " + claimed + " bytes, real " + REAL_WORKSPACE_BYTES);
    step("illegalAddress", () -> NativeTriMul.forward(layer, real.address(), 0, real.address(), FAULT_B,
        FAULT_N, lyingWorkspace, claimed, D, stream.handle(), new float[3]));

    step("validAfterSticky", validForward);
    step("createLayerAfterSticky", () -> NativeTriMul.createLayer(layer()));
    step("synchronizeAfterSticky", dev::synchronize);
  }

  private static TriMulLayer layer() {
    return new TriMulLayer(TriMulSpec.of(Direction.OUTGOING), LayerWeights.random(D, 7, true));
  }

  private void step(String name, Runnable call) throws IOException {
    try {
      call.run();
      found.setProperty(name + ".outcome", "ok");
    } catch (RuntimeException e) {
      found.setProperty(name + ".outcome", e.getClass().getSimpleName());
      found.setProperty(name + ".message", String.valueOf(e.getMessage()));
      found.setProperty(name + ".status", e instanceof GpuException g && g.statusName() != null ? g.statusName() : "");
      String sticky = StickyCudaErrors.in(e);
      found.setProperty(name + ".sticky", sticky == null ? "none" : sticky);
    }
    System.out.println(name + ": " + found.getProperty(name + ".outcome") + " "
        + found.getProperty(name + ".message", ""));
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    try (OutputStream out = Files.newOutputStream(tmp)) {
      found.store(out, "StickyErrorProbe findings");
    }
    Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
  }
}
