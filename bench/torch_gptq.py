"""PyTorch GPTQ quantize-and-compensate: the benchmark competitor.

Written from docs/gptq-semantics.md (sections 2 and 3) and laid out like
the public reference's ``GPTQ.fasterquant`` / ``Quantizer.find_params``:
per-row (or per row and group) min-max grid, asymmetric or symmetric, dead
inputs, act-order, static groups, relative damping, cholesky ->
cholesky_inverse -> upper cholesky, and the block loop with a per-column inner
loop and the lazy batch update of the columns right of the block.

It is a benchmark competitor and a cross-check, not part of the product. The
default arguments are the reference defaults (4 bits, per-row grid,
asymmetric, no act-order, no static groups, percdamp 0.01, block 128).

Command line (for a one-off run on .npy files):

    python bench/torch_gptq.py --weight W.npy --hessian H.npy --out Q.npy \
        --bits 4 --group-size 128 --act-order [--threads N]
"""

import argparse
import json
import time

import numpy as np
import torch


class Grid:
    """Per-row min-max grid (the reference's Quantizer, perchannel=True)."""

    def __init__(self, bits, sym):
        self.maxq = 2 ** bits - 1
        self.sym = sym
        self.scale = None
        self.zero = None

    def find_params(self, x):
        # x: [rows, k]; one grid per row.
        zeros = torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)
        xmin = torch.minimum(x.min(1)[0], zeros)
        xmax = torch.maximum(x.max(1)[0], zeros)
        if self.sym:
            xmax = torch.maximum(torch.abs(xmin), xmax)
            neg = xmin < 0
            if torch.any(neg):
                xmin[neg] = -xmax[neg]
        both0 = (xmin == 0) & (xmax == 0)
        xmin[both0] = -1
        xmax[both0] = +1
        scale = (xmax - xmin) / self.maxq
        if self.sym:
            zero = torch.full_like(scale, (self.maxq + 1) / 2)
        else:
            zero = torch.round(-xmin / scale)
        self.scale = scale.reshape(-1, 1)
        self.zero = zero.reshape(-1, 1)
        return self

    def copy(self):
        g = Grid.__new__(Grid)
        g.maxq, g.sym, g.scale, g.zero = self.maxq, self.sym, self.scale, self.zero
        return g


def quantize(x, scale, zero, maxq):
    """Dequantized value of x (any shape broadcasting against scale/zero)."""
    q = torch.clamp(torch.round(x / scale) + zero, 0, maxq)
    return scale * (q - zero)


@torch.no_grad()
def gptq_quantize(W, H, bits=4, group_size=-1, sym=False, act_order=False,
                  static_groups=False, percdamp=0.01, block_size=128):
    """Quantize W (rows x cols) against Hessian H (cols x cols).

    Returns (Q, loss): Q the dequantized weights in the original column order
    (float32, rows x cols), loss the reference's summed error
    sum over columns of |w - q|^2 / d^2 / 2.
    W and H are not modified.
    """
    W = torch.as_tensor(W).clone().float()
    H = torch.as_tensor(H).clone().float()
    rows, cols = W.shape
    grid = Grid(bits, sym)
    maxq = grid.maxq

    # Step 1: per-row grid from the whole original W.
    if group_size == -1:
        grid.find_params(W)

    # Step 2: dead inputs.
    dead = torch.diag(H) == 0
    H[dead, dead] = 1
    W[:, dead] = 0

    # Step 3: static groups, from the original column order.
    groups = None
    if static_groups and group_size != -1:
        groups = []
        for g0 in range(0, cols, group_size):
            groups.append(Grid(bits, sym).find_params(W[:, g0:g0 + group_size]))

    # Step 4: act-order (stable descending sort; ties by ascending index).
    perm = None
    if act_order:
        perm = torch.from_numpy(
            np.argsort(-torch.diag(H).cpu().numpy(), kind="stable").copy()).to(W.device)
        W = W[:, perm]
        H = H[perm][:, perm]
        invperm = torch.argsort(perm)

    Losses = torch.zeros_like(W)
    Q = torch.zeros_like(W)

    # Step 5: damping relative to mean(diag(H)).
    damp = percdamp * torch.mean(torch.diag(H))
    idx = torch.arange(cols, device=H.device)
    H[idx, idx] += damp

    # Step 6: L = chol(H); Hinv = chol_inverse(L); U = chol(Hinv, upper).
    L = torch.linalg.cholesky(H)
    Hinv = torch.cholesky_inverse(L)
    U = torch.linalg.cholesky(Hinv, upper=True)
    del H, L, Hinv

    # Step 7: block loop.
    for i1 in range(0, cols, block_size):
        i2 = min(i1 + block_size, cols)
        count = i2 - i1
        W1 = W[:, i1:i2].clone()
        Q1 = torch.zeros_like(W1)
        Err1 = torch.zeros_like(W1)
        Losses1 = torch.zeros_like(W1)
        U1 = U[i1:i2, i1:i2]
        for i in range(count):
            c = i1 + i
            w = W1[:, i]
            d = U1[i, i]
            if group_size != -1:
                if groups is None:
                    if c % group_size == 0:
                        # Outer W: lazy updates of earlier blocks, not the
                        # in-block updates of this block (reference behaviour).
                        grid.find_params(W[:, c:c + group_size])
                else:
                    g = (int(perm[c]) if perm is not None else c) // group_size
                    grid = groups[g]
            q = quantize(w.unsqueeze(1), grid.scale, grid.zero, maxq).flatten()
            Q1[:, i] = q
            Losses1[:, i] = (w - q) ** 2 / d ** 2
            err = (w - q) / d
            W1[:, i:] -= err.unsqueeze(1).matmul(U1[i, i:].unsqueeze(0))
            Err1[:, i] = err
        Q[:, i1:i2] = Q1
        Losses[:, i1:i2] = Losses1 / 2
        # Lazy batch update of the columns right of the block.
        W[:, i2:] -= Err1.matmul(U[i1:i2, i2:])

    # Step 8: back to the original column order.
    if act_order:
        Q = Q[:, invperm]
    return Q, float(torch.sum(Losses).item())


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weight", required=True)
    ap.add_argument("--hessian", required=True)
    ap.add_argument("--out", help="write the dequantized Q here (.npy)")
    ap.add_argument("--bits", type=int, default=4)
    ap.add_argument("--group-size", type=int, default=-1)
    ap.add_argument("--sym", action="store_true")
    ap.add_argument("--act-order", action="store_true")
    ap.add_argument("--static-groups", action="store_true")
    ap.add_argument("--percdamp", type=float, default=0.01)
    ap.add_argument("--block-size", type=int, default=128)
    ap.add_argument("--threads", type=int, default=0,
                    help="torch.set_num_threads(N) (0: leave as is)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--device", default="cpu",
                    help="torch device: cpu (default) or cuda (TF32 off, as "
                         "the reference's float32; timed after a "
                         "synchronize)")
    ap.add_argument("--json", action="store_true",
                    help="print one JSON line {seconds: [...], loss, threads}")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    cuda = a.device.startswith("cuda")
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    W = torch.from_numpy(np.load(a.weight).astype(np.float32)).to(a.device)
    H = torch.from_numpy(np.load(a.hessian).astype(np.float32)).to(a.device)
    times = []
    for _ in range(a.repeats):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        Q, loss = gptq_quantize(W, H, a.bits, a.group_size, a.sym, a.act_order,
                                a.static_groups, a.percdamp, a.block_size)
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    if a.out:
        np.save(a.out, Q.cpu().numpy())
    if a.json:
        print(json.dumps({"seconds": times, "loss": loss,
                          "threads": torch.get_num_threads()}))
    else:
        print(f"loss {loss:.6g}; seconds {', '.join(f'{t:.3f}' for t in times)}"
              f" (torch threads {torch.get_num_threads()})")


if __name__ == "__main__":
    main()
