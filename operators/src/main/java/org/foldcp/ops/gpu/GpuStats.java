package org.foldcp.ops.gpu;

/**
 * What a {@link GpuTriMul} has done since construction (a snapshot).
 *
 * @param forwards forward() calls that completed
 * @param layerRuns layer launches (a stack of 3 counts 3)
 * @param profiledLayerRuns of those, launches with stage times measured
 * @param uploads host-to-device transfers of a tensor's values or mask (each in pinned blocks)
 * @param downloads device-to-host transfers of an output tensor
 * @param bytesToDevice bytes of those uploads
 * @param bytesFromDevice bytes of those downloads
 * @param layersCreated native layers created (layer cache misses)
 * @param residentAllocations times the resident buffers (tensor, workspace) were allocated for a new (B, N, D)
 */
public record GpuStats(long forwards, long layerRuns, long profiledLayerRuns, long uploads, long downloads,
                       long bytesToDevice, long bytesFromDevice, long layersCreated, long residentAllocations) {}
