package org.foldcp.ops.gpu;

import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUstream;
import jcuda.Pointer;

/**
 * How raw addresses and handles get out of JCuda objects, for the JNI calls into our kernels.
 *
 * <p>JCuda keeps the native value of every handle in the protected field/getter
 * {@code NativePointerObject.getNativePointer()} (plus {@code Pointer.getByteOffset()} for
 * pointers). Subclasses may call protected members on themselves, so we allocate through these
 * subclasses: {@code cuMemAlloc(new DevicePtr(), n)} fills the same native field as for a plain
 * {@link CUdeviceptr} (JCuda's JNI code sets fields declared in its base classes), and
 * {@link DevicePtr#address()} reads it back. No reflection, no JCuda internals beyond its public
 * class hierarchy, and no helper in our own native library (which may be absent while JCuda is
 * present). The address of a {@code CUdeviceptr} is the value a {@code void*} device pointer
 * has in the CUDA runtime; a {@code CUstream} is a {@code cudaStream_t}.
 */
final class RawHandles {
  private RawHandles() {}

  /** A device pointer whose raw address can be read. */
  static final class DevicePtr extends CUdeviceptr {
    long address() {
      return getNativePointer() + getByteOffset();
    }
  }

  /** A host pointer (cuMemAllocHost) whose raw address can be read, for bulk copies from Java. */
  static final class HostPtr extends Pointer {
    HostPtr() {}

    /** A pointer to memory JCuda did not allocate (to page-lock it with cuMemHostRegister). */
    HostPtr(long address) {
      super(address);
    }

    long address() {
      return getNativePointer() + getByteOffset();
    }
  }

  /** A stream whose raw handle ({@code CUstream} == {@code cudaStream_t}) can be read. */
  static final class StreamHandle extends CUstream {
    long handle() {
      return getNativePointer();
    }
  }

  /** An event whose raw handle can be read (for messages). */
  static final class EventHandle extends CUevent {
    long handle() {
      return getNativePointer();
    }
  }
}
