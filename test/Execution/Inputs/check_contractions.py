"""Makes inputs for contractions.mlir (mode ``make DIR``) and checks gptq-run's
results against float64 numpy (mode ``check DIR``): every entry within
1e-5 of the largest magnitude of its reference, and every element finite."""
import os
import sys

import numpy as np

CASES = {
    # name: (inputs, reference)
    "linear": (
        lambda r: [r.standard_normal((3, 5, 37)), r.standard_normal((70, 37))],
        lambda x, w: np.einsum("bsk,nk->bsn", x, w),
    ),
    "mix": (
        lambda r: [r.standard_normal((2, 3, 13, 11)), r.standard_normal((2, 11, 3, 7)),
                   r.standard_normal((2, 13, 3, 7))],
        lambda p, v, i: i + np.einsum("bhst,bthd->bshd", p, v),
    ),
    "matmul_at": (
        lambda r: [r.standard_normal((200, 131)), r.standard_normal((200, 65)),
                   r.standard_normal((131, 65))],
        lambda at, b, c: c + at.T @ b,
    ),
}


def main() -> int:
    mode, root = sys.argv[1], sys.argv[2]
    for name, (make, reference) in CASES.items():
        directory = os.path.join(root, name)
        if mode == "make":
            os.makedirs(directory, exist_ok=True)
            inputs = make(np.random.default_rng(7))
            for i, a in enumerate(inputs):
                np.save(os.path.join(directory, f"in{i}.npy"), a.astype(np.float32))
            continue
        inputs = [np.load(os.path.join(directory, f"in{i}.npy")).astype(np.float64)
                  for i in range(len(make(np.random.default_rng(7))))]
        want = reference(*inputs)
        got = np.load(os.path.join(directory, "out", "0.npy"))
        ok = got.shape == want.shape and bool(np.isfinite(got).all()) and \
            float(np.abs(got - want).max()) <= 1e-5 * float(np.abs(want).max())
        print(f"{name} {got.shape} ok {ok}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
