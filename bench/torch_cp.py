"""The PyTorch context-parallel baseline of bench/cp_peers.py: one TriMul layer on a rank's token
tile, the two reshards (token -> channel -> token) as torch.distributed all_to_all over NCCL."""
import torch
import torch.distributed as dist
import torch.nn.functional as F

from fold_team import Placement
from foldcp_lib import EPS


def torch_cp_layer(x_t, m_t, pb, direction, cp0, cp1, rank, world):
    """One layer of the baseline on this rank's token tile (B, tr, tc, D) -> (B, tr, tc, D)."""
    B, tr, tc, D = x_t.shape
    Dl = D // world
    xn = F.layer_norm(x_t, (D,), pb["norm_in.weight"], pb["norm_in.bias"], EPS)
    ab = torch.sigmoid(F.linear(xn, pb["g_in.weight"], pb["g_in.bias"])) * F.linear(xn, pb["p_in.weight"],
                                                                                    pb["p_in.bias"])
    ab = ab * m_t.unsqueeze(-1)

    def to_channels(t):  # (B, tr, tc, D) token tile -> (B, N_t, N_t, D / world) for my channels
        send = t.reshape(B, tr, tc, world, Dl).permute(3, 0, 1, 2, 4).contiguous()
        recv = torch.empty_like(send)
        dist.all_to_all_single(recv, send, group=Placement.data_group)
        full = t.new_empty(B, cp0 * tr, cp1 * tc, Dl)
        for src in range(world):
            i, j = divmod(src, cp1)
            full[:, i * tr:(i + 1) * tr, j * tc:(j + 1) * tc] = recv[src]
        return full

    a, b = to_channels(ab[..., :D]), to_channels(ab[..., D:])
    eq = "bikc,bjkc->bijc" if direction == "outgoing" else "bkic,bkjc->bijc"
    z = torch.einsum(eq, a, b)
    send = torch.stack([z[:, (q // cp1) * tr:(q // cp1 + 1) * tr, (q % cp1) * tc:(q % cp1 + 1) * tc]
                        for q in range(world)]).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=Placement.data_group)  # recv[q]: channels q Dl .. of my token tile
    z_t = recv.permute(1, 2, 3, 0, 4).reshape(B, tr, tc, D)
    zn = F.layer_norm(z_t, (D,), pb["norm_out.weight"], pb["norm_out.bias"], EPS)
    return torch.sigmoid(F.linear(xn, pb["g_out.weight"], pb["g_out.bias"])) * F.linear(zn, pb["p_out.weight"],
                                                                                       pb["p_out.bias"])
