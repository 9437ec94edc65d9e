"""Export two small JAX models as StableHLO for gptq-opt and gptq-run.

Run with a Python that has JAX (`pip install "jax[cpu]"`; this script does
not need gptq_mlir, numpy 1 or 2 will do):

    python examples/jax/export.py mlp out/      # or: block out/

It writes, into out/:

    <name>.const.stablehlo.mlir  jax.jit(lambda x: apply(params, x)).lower(x):
                                 the weights are constants of @main
    <name>.args.stablehlo.mlir   jax.jit(apply).lower(params, x), printed with
                                 debug_info=True: the weights are arguments of
                                 @main, named like params['dense1']['kernel']
    <name>.params.safetensors    those weights, keyed by the same names
    x.npy, ref.npy               an input and JAX's output for it
    calib.npy                    calibration samples along dimension 0

The tools read StableHLO through iree-opt (pip install iree-base-compiler):

    gptq-run out/mlp.const.stablehlo.mlir --input out/x.npy --output-dir out/float
    gptq-opt out/mlp.const.stablehlo.mlir \\
        --gptq-quantize-model="bits=4 calibration=out/calib.npy calibration-batch=4" -o q.mlir
    gptq-opt out/mlp.args.stablehlo.mlir \\
        --gptq-quantize-model="bits=4 calibration=out/calib.npy calibration-batch=4 \\
        parameters=out/mlp.params.safetensors" -o q.args.mlir

(the block: calibration-batch=4 as well, its input being 4 x 8 x 32). The
args form keeps the weight arguments, unread: pass zeros for them.
"""

import json
import struct
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np


def dense_init(key, din, dout, bias=True):
    k1, k2 = jax.random.split(key)
    p = {"kernel": jax.random.normal(k1, (din, dout), jnp.float32) / jnp.sqrt(din)}
    if bias:
        p["bias"] = 0.1 * jax.random.normal(k2, (dout,), jnp.float32)
    return p


def dense(p, x):
    y = x @ p["kernel"]  # as flax's Dense: x[..., in] @ kernel[in, out]
    return y + p["bias"] if "bias" in p else y


def mlp_init(key):
    k1, k2 = jax.random.split(key)
    return {"dense1": dense_init(k1, 16, 32), "dense2": dense_init(k2, 32, 8)}


def mlp_apply(params, x):  # x: [B, 16]
    return dense(params["dense2"], jax.nn.gelu(dense(params["dense1"], x), approximate=False))


D, HEADS, FFN = 32, 4, 64


def rmsnorm(scale, x, eps=1e-6):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * scale


def block_init(key):
    ks = jax.random.split(key, 7)
    return {
        "attn_norm": {"scale": jnp.ones((D,), jnp.float32)},
        "attn": {n: dense_init(k, D, D, bias=False) for n, k in zip("qkvo", ks[:4])},
        "mlp_norm": {"scale": jnp.ones((D,), jnp.float32)},
        "mlp": {
            "gate": dense_init(ks[4], D, FFN, bias=False),
            "up": dense_init(ks[5], D, FFN, bias=False),
            "down": dense_init(ks[6], FFN, D, bias=False),
        },
    }


def block_apply(params, x):  # x: [B, S, D]; pre-norm, causal attention, SwiGLU
    b, s, _ = x.shape
    hd = D // HEADS
    a, m = params["attn"], params["mlp"]
    h = rmsnorm(params["attn_norm"]["scale"], x)
    q, k, v = (dense(a[n], h).reshape(b, s, HEADS, hd) for n in "qkv")
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.float32(np.sqrt(hd))
    scores = jnp.where(jnp.tril(jnp.ones((s, s), bool)), scores, jnp.finfo(jnp.float32).min)
    o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v).reshape(b, s, D)
    x = x + dense(a["o"], o)
    h = rmsnorm(params["mlp_norm"]["scale"], x)
    return x + dense(m["down"], jax.nn.silu(dense(m["gate"], h)) * dense(m["up"], h))


# name: (init, apply, input shape, calibration samples' shape)
MODELS = {
    "mlp": (mlp_init, mlp_apply, (4, 16), (64, 16)),
    "block": (block_init, block_apply, (4, 8, D), (32, 8, D)),
}


def write_safetensors(path, tensors):
    """safetensors without the package: the header's length (8 bytes, little
    endian), the JSON header, the data."""
    header, data = {}, bytearray()
    for name, value in tensors:
        value = np.ascontiguousarray(value, dtype=np.float32)
        offsets = [len(data), len(data) + value.nbytes]
        header[name] = {"dtype": "F32", "shape": list(value.shape), "data_offsets": offsets}
        data += value.tobytes()
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(text)) + text + bytes(data))


def export(name, out):
    init, apply, x_shape, calib_shape = MODELS[name]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    params = init(jax.random.PRNGKey(0))
    rng = np.random.default_rng(1)
    x = rng.standard_normal(x_shape, dtype=np.float32)
    calib = rng.standard_normal(calib_shape, dtype=np.float32)

    const = jax.jit(lambda x: apply(params, x)).lower(x)
    (out / f"{name}.const.stablehlo.mlir").write_text(const.as_text())
    args = jax.jit(apply).lower(params, x)
    (out / f"{name}.args.stablehlo.mlir").write_text(args.as_text(debug_info=True))
    # The arguments' location names, in their order: "params" + keystr(path).
    leaves, _ = jax.tree_util.tree_flatten_with_path(params)
    write_safetensors(out / f"{name}.params.safetensors",
                      [("params" + jax.tree_util.keystr(p), np.asarray(v)) for p, v in leaves])
    np.save(out / "x.npy", x)
    np.save(out / "calib.npy", calib)
    np.save(out / "ref.npy", np.asarray(jax.jit(apply)(params, x)))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in MODELS:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(MODELS)}}} OUTPUT_DIR")
    export(sys.argv[1], sys.argv[2])
