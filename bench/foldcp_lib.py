"""Our single-GPU C API (native/include/foldcp_trimul.h) through ctypes: the one binding every
bench script uses (torch_peers, job_peers, and through fold_team the CP and all-to-all peers).
A library from before the options struct (an A/B baseline) is called the way it was built."""
import ctypes

import torch

EPS = 1e-5


class Weights(ctypes.Structure):
    """foldcp_trimul_weights: D, direction, residual, eps, the 12 weight pointers, then the hidden
    width H (0 = D; a library from before it reads only the fields in front)."""
    _fields_ = [("dim", ctypes.c_int64), ("direction", ctypes.c_int), ("residual", ctypes.c_int),
                ("eps", ctypes.c_float)] + [(n, ctypes.POINTER(ctypes.c_float)) for n in (
                    "norm_in_weight", "norm_in_bias", "p_in_weight", "g_in_weight", "norm_out_weight",
                    "norm_out_bias", "p_out_weight", "g_out_weight", "p_in_bias", "g_in_bias", "p_out_bias",
                    "g_out_bias")] + [("hidden", ctypes.c_int64)]


class ForwardOptions(ctypes.Structure):
    """foldcp_forward_options (include/foldcp_trimul.h): struct_size, channel group, stage_ms."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("group", ctypes.c_int64),
                ("stage_ms", ctypes.POINTER(ctypes.c_float))]

    def __init__(self, group=0):
        super().__init__(ctypes.sizeof(ForwardOptions), group, ctypes.POINTER(ctypes.c_float)())


class Ours:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        L = self.lib
        # A library from before the options struct (the A/B baseline) has three forward entry
        # points and a forward without options; the plain forward is the same call otherwise.
        self.legacy = hasattr(L, "foldcp_trimul_forward_group")
        L.foldcp_last_error.restype = ctypes.c_char_p
        L.foldcp_trimul_workspace_size.argtypes = [ctypes.c_int64] * 3 + [ctypes.POINTER(ctypes.c_size_t)]
        L.foldcp_trimul_create.argtypes = [ctypes.POINTER(Weights), ctypes.POINTER(ctypes.c_void_p)]
        L.foldcp_trimul_destroy.argtypes = [ctypes.c_void_p]
        L.foldcp_trimul_forward.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                            ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_size_t] + (
                                                [] if self.legacy else [ctypes.POINTER(ForwardOptions)]) + [
                                                    ctypes.c_void_p]
        L.foldcp_trimul_channel_group.argtypes = [ctypes.c_int64] * 3 + [ctypes.c_size_t,
                                                                         ctypes.POINTER(ctypes.c_int64)]
        L.foldcp_trimul_workspace_size_group.argtypes = [ctypes.c_int64] * 4 + [ctypes.POINTER(ctypes.c_size_t)]

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"{what}: rc={rc}: {self.lib.foldcp_last_error().decode()}")

    def layer(self, p, direction, residual=False):
        D = p["norm_in.weight"].numel()
        H = p["p_in.weight"].shape[0] // 2  # p_in maps D -> 2H (a, then b)
        keep = {k: v.contiguous() for k, v in p.items()}
        ptr = lambda k: (ctypes.cast(keep[k].data_ptr(), ctypes.POINTER(ctypes.c_float)) if k in keep
                         else ctypes.POINTER(ctypes.c_float)())
        w = Weights(D, 0 if direction == "outgoing" else 1, 1 if residual else 0, EPS,
                    *[ptr(k) for k in ("norm_in.weight", "norm_in.bias", "p_in.weight", "g_in.weight",
                                       "norm_out.weight", "norm_out.bias", "p_out.weight", "g_out.weight",
                                       "p_in.bias", "g_in.bias", "p_out.bias", "g_out.bias")], H)
        h = ctypes.c_void_p()
        self.check(self.lib.foldcp_trimul_create(ctypes.byref(w), ctypes.byref(h)), "create")
        return h

    # The workspace functions count the channels of a, b and z: the layer's hidden width H (its D
    # where the layer has none of its own, as every layer of these benchmarks).
    def ws_bytes(self, B, N, H):
        n = ctypes.c_size_t()
        self.check(self.lib.foldcp_trimul_workspace_size(B, N, H, ctypes.byref(n)), "workspace_size")
        return n.value

    def channel_group(self, B, N, H, bytes_available):
        g = ctypes.c_int64()
        self.check(self.lib.foldcp_trimul_channel_group(B, N, H, ctypes.c_size_t(bytes_available),
                                                        ctypes.byref(g)), "channel_group")
        return g.value

    def ws_bytes_group(self, B, N, H, group):
        n = ctypes.c_size_t()
        self.check(self.lib.foldcp_trimul_workspace_size_group(B, N, H, group, ctypes.byref(n)),
                   "workspace_size_group")
        return n.value

    def _forward(self, h, x, mask_u8, out, ws, opts, what):
        """foldcp_trimul_forward on the current stream; opts: a ForwardOptions, or None (a legacy
        library's forward takes no options argument)."""
        if self.legacy and opts is not None:
            raise RuntimeError(f"{what}: this library predates the forward options")
        B, N = x.shape[0], x.shape[1]
        extra = [] if self.legacy else [ctypes.byref(opts) if opts is not None else None]
        self.check(self.lib.foldcp_trimul_forward(h, x.data_ptr(), mask_u8.data_ptr(), out.data_ptr(), B, N,
                                                  ws.data_ptr(), ws.numel(), *extra,
                                                  torch.cuda.current_stream().cuda_stream), what)
        return out

    def forward_group(self, h, x, mask_u8, out, ws, group):
        return self._forward(h, x, mask_u8, out, ws, ForwardOptions(group), "forward (channel group)")

    def stage_ms(self, h, x, mask_u8, out, ws):
        """One profiled forward (events around each stage, include/foldcp_trimul.h): the stage times
        in ms, or None for a library from before the options struct."""
        if self.legacy:
            return None
        ms = (ctypes.c_float * 3)(-1.0, -1.0, -1.0)
        opts = ForwardOptions(0)
        opts.stage_ms = ctypes.cast(ms, ctypes.POINTER(ctypes.c_float))
        self._forward(h, x, mask_u8, out, ws, opts, "forward (profiled)")
        torch.cuda.synchronize()
        return list(ms)

    def forward(self, h, x, mask_u8, out, ws):
        return self._forward(h, x, mask_u8, out, ws, None, "forward")
