"""A Mixtral-style mixture-of-experts block (a router, softmax top-2,
SwiGLU experts) written as linalg on tensors with routed dispatch, and its
NumPy reference.

    moe_block.py DIR

writes DIR/moe.mlir (@forward: tokens [T, 8] -> [T, 8]), DIR/x.npy (40
tokens), DIR/calib.npy (64 tokens), DIR/calib_skip3.npy (32 tokens none of
which the router sends to expert 3), DIR/ref.npy (the reference's output
for x) and DIR/weights.npz. The router's top-2 choices are counted per expert,
the (token, choice) pairs sorted by expert into the rows of one matrix, and
each expert's w1, w3 and w2 are contractions over its own rows only (a
tensor.extract_slice of dynamic offset and size): a forward does the routed
experts' work, not every expert's on every token, and each expert's
contraction reads exactly the tokens the router sends it, so calibration
gives each expert the Hessian of its routed tokens. All experts' w1 and w3
come before their w2, so that the layers of one sequential stage stay
together in program order.
"""
import sys
import numpy as np

d = sys.argv[1]
D, F, E, K = 8, 16, 4, 2
rng = np.random.default_rng(0)
wr = rng.standard_normal((E, D)).astype(np.float32)
w1 = (rng.standard_normal((E, F, D)) / 3).astype(np.float32)
w3 = (rng.standard_normal((E, F, D)) / 3).astype(np.float32)
w2 = (rng.standard_normal((E, D, F)) / 4).astype(np.float32)


def dense(a):
    return "dense<" + np.array2string(a, separator=", ", threshold=10**9, floatmode="unique", max_line_width=10**9).replace("\n", "") + ">"


def linear(name, x, w, out, rows, indim, outdim, idx):
    return f"""
    %w_{idx} = arith.constant {dense(w)} : tensor<{outdim}x{indim}xf32> loc("{name}")
    %e_{idx} = tensor.empty({rows}) : tensor<?x{outdim}xf32>
    %f_{idx} = linalg.fill ins(%zero : f32) outs(%e_{idx} : tensor<?x{outdim}xf32>) -> tensor<?x{outdim}xf32>
    %{out} = linalg.generic {{indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "reduction"]}} ins(%{x}, %w_{idx} : tensor<?x{indim}xf32>, tensor<{outdim}x{indim}xf32>) outs(%f_{idx} : tensor<?x{outdim}xf32>) {{
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    }} -> tensor<?x{outdim}xf32> loc("{name}")"""


experts = []
for e in range(E):
    p = f"layers.0.block_sparse_moe.experts.{e}"
    experts.append(f"""
    %off_{e}_i = tensor.extract %offsets[%c{e}] : tensor<{E}xindex>
    %cnt_{e}_i = tensor.extract %counts[%c{e}] : tensor<{E}xindex>
    %xe_{e} = tensor.extract_slice %xs[%off_{e}_i, 0] [%cnt_{e}_i, {D}] [1, 1] : tensor<?x{D}xf32> to tensor<?x{D}xf32>"""
    + linear(p + ".w1", f"xe_{e}", w1[e], f"h1_{e}", f"%cnt_{e}_i", D, F, f"w1_{e}")
    + linear(p + ".w3", f"xe_{e}", w3[e], f"h3_{e}", f"%cnt_{e}_i", D, F, f"w3_{e}")
    + f"""
    %ea_{e} = tensor.empty(%cnt_{e}_i) : tensor<?x{F}xf32>
    %act_{e} = linalg.generic {{indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}} ins(%h1_{e}, %h3_{e} : tensor<?x{F}xf32>, tensor<?x{F}xf32>) outs(%ea_{e} : tensor<?x{F}xf32>) {{
    ^bb0(%a: f32, %b: f32, %c: f32):
      %n = arith.negf %a : f32
      %xp = math.exp %n : f32
      %one = arith.constant 1.0 : f32
      %den = arith.addf %one, %xp : f32
      %sil = arith.divf %a, %den : f32
      %r = arith.mulf %sil, %b : f32
      linalg.yield %r : f32
    }} -> tensor<?x{F}xf32>""")
for e in range(E):
    p = f"layers.0.block_sparse_moe.experts.{e}"
    experts.append(
    linear(p + ".w2", f"act_{e}", w2[e], f"ye_{e}", f"%cnt_{e}_i", F, D, f"w2_{e}")
    + f"""
    %ys_{e + 1} = tensor.insert_slice %ye_{e} into %ys_{e}[%off_{e}_i, 0] [%cnt_{e}_i, {D}] [1, 1] : tensor<?x{D}xf32> into tensor<?x{D}xf32>""")

consts = "\n".join(f"    %c{i} = arith.constant {i} : index" for i in range(max(E, K) + 1))
module = f"""#x = affine_map<(t, o, i) -> (t, i)>
#w = affine_map<(t, o, i) -> (o, i)>
#y = affine_map<(t, o, i) -> (t, o)>
#id = affine_map<(t, f) -> (t, f)>
module {{
  func.func @forward(%x: tensor<?x{D}xf32>) -> tensor<?x{D}xf32> {{
    %zero = arith.constant 0.0 : f32
    %ninf = arith.constant 0xFF800000 : f32
{consts}
    %T = tensor.dim %x, %c0 : tensor<?x{D}xf32>
{linear("layers.0.block_sparse_moe.gate", "x", wr, "logits", "%T", D, E, "gate")}
    // Top-{K} of the router's logits per token: experts (by index) and
    // weights (softmax over all experts, then renormalized over the top-k,
    // as Mixtral does: the softmax of the top-k logits).
    %ex0 = tensor.empty(%T) : tensor<?x{K}xindex>
    %wt0 = tensor.empty(%T) : tensor<?x{K}xf32>
    %route:2 = scf.for %t = %c0 to %T step %c1 iter_args(%ex = %ex0, %wt = %wt0) -> (tensor<?x{K}xindex>, tensor<?x{K}xf32>) {{
      %m0:2 = scf.for %e = %c0 to %c{E} step %c1 iter_args(%best = %ninf, %bi = %c0) -> (f32, index) {{
        %l = tensor.extract %logits[%t, %e] : tensor<?x{E}xf32>
        %gt = arith.cmpf ogt, %l, %best : f32
        %nb = arith.select %gt, %l, %best : f32
        %ni = arith.select %gt, %e, %bi : index
        scf.yield %nb, %ni : f32, index
      }}
      %m1:2 = scf.for %e = %c0 to %c{E} step %c1 iter_args(%best = %ninf, %bi = %c0) -> (f32, index) {{
        %l = tensor.extract %logits[%t, %e] : tensor<?x{E}xf32>
        %gt = arith.cmpf ogt, %l, %best : f32
        %taken = arith.cmpi eq, %e, %m0#1 : index
        %nt = arith.xori %taken, %true : i1
        %ok = arith.andi %gt, %nt : i1
        %nb = arith.select %ok, %l, %best : f32
        %ni = arith.select %ok, %e, %bi : index
        scf.yield %nb, %ni : f32, index
      }}
      %d1 = arith.subf %m1#0, %m0#0 : f32
      %x1 = math.exp %d1 : f32
      %one = arith.constant 1.0 : f32
      %s = arith.addf %one, %x1 : f32
      %p0 = arith.divf %one, %s : f32
      %p1 = arith.divf %x1, %s : f32
      %ex1 = tensor.insert %m0#1 into %ex[%t, %c0] : tensor<?x{K}xindex>
      %ex2 = tensor.insert %m1#1 into %ex1[%t, %c1] : tensor<?x{K}xindex>
      %wt1 = tensor.insert %p0 into %wt[%t, %c0] : tensor<?x{K}xf32>
      %wt2 = tensor.insert %p1 into %wt1[%t, %c1] : tensor<?x{K}xf32>
      scf.yield %ex2, %wt2 : tensor<?x{K}xindex>, tensor<?x{K}xf32>
    }}
    // Tokens per expert, where each expert's rows start, and for each
    // (token, choice) pair its row in the expert-sorted order.
    %zc = arith.constant dense<0> : tensor<{E}xindex>
    %counts = scf.for %t = %c0 to %T step %c1 iter_args(%cn = %zc) -> (tensor<{E}xindex>) {{
      %cn2 = scf.for %j = %c0 to %c{K} step %c1 iter_args(%c = %cn) -> (tensor<{E}xindex>) {{
        %e = tensor.extract %route#0[%t, %j] : tensor<?x{K}xindex>
        %v = tensor.extract %c[%e] : tensor<{E}xindex>
        %v1 = arith.addi %v, %c1 : index
        %cc2 = tensor.insert %v1 into %c[%e] : tensor<{E}xindex>
        scf.yield %cc2 : tensor<{E}xindex>
      }}
      scf.yield %cn2 : tensor<{E}xindex>
    }}
    %scan:2 = scf.for %e = %c0 to %c{E} step %c1 iter_args(%o = %zc, %run = %c0) -> (tensor<{E}xindex>, index) {{
      %o2 = tensor.insert %run into %o[%e] : tensor<{E}xindex>
      %n = tensor.extract %counts[%e] : tensor<{E}xindex>
      %r2 = arith.addi %run, %n : index
      scf.yield %o2, %r2 : tensor<{E}xindex>, index
    }}
    %offsets = tensor.cast %scan#0 : tensor<{E}xindex> to tensor<{E}xindex>
    %P = arith.muli %T, %c{K} : index
    %row0 = tensor.empty(%T) : tensor<?x{K}xindex>
    %tok0 = tensor.empty(%P) : tensor<?xindex>
    %place:3 = scf.for %t = %c0 to %T step %c1 iter_args(%row = %row0, %tok = %tok0, %seen = %zc) -> (tensor<?x{K}xindex>, tensor<?xindex>, tensor<{E}xindex>) {{
      %r:3 = scf.for %j = %c0 to %c{K} step %c1 iter_args(%rw = %row, %tk = %tok, %sn = %seen) -> (tensor<?x{K}xindex>, tensor<?xindex>, tensor<{E}xindex>) {{
        %e = tensor.extract %route#0[%t, %j] : tensor<?x{K}xindex>
        %o = tensor.extract %offsets[%e] : tensor<{E}xindex>
        %k = tensor.extract %sn[%e] : tensor<{E}xindex>
        %at = arith.addi %o, %k : index
        %k1 = arith.addi %k, %c1 : index
        %sn2 = tensor.insert %k1 into %sn[%e] : tensor<{E}xindex>
        %rw2 = tensor.insert %at into %rw[%t, %j] : tensor<?x{K}xindex>
        %tk2 = tensor.insert %t into %tk[%at] : tensor<?xindex>
        scf.yield %rw2, %tk2, %sn2 : tensor<?x{K}xindex>, tensor<?xindex>, tensor<{E}xindex>
      }}
      scf.yield %r#0, %r#1, %r#2 : tensor<?x{K}xindex>, tensor<?xindex>, tensor<{E}xindex>
    }}
    // The tokens' rows in expert order (each token once per expert it goes to).
    %xs0 = tensor.empty(%P) : tensor<?x{D}xf32>
    %xs = linalg.generic {{indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}} outs(%xs0 : tensor<?x{D}xf32>) {{
    ^bb0(%o: f32):
      %r = linalg.index 0 : index
      %i = linalg.index 1 : index
      %t = tensor.extract %place#1[%r] : tensor<?xindex>
      %v = tensor.extract %x[%t, %i] : tensor<?x{D}xf32>
      linalg.yield %v : f32
    }} -> tensor<?x{D}xf32>
    %ys_0 = tensor.empty(%P) : tensor<?x{D}xf32>
{"".join(experts)}
    // Each token's output: its experts' rows, weighted.
    %out0 = tensor.empty(%T) : tensor<?x{D}xf32>
    %out = linalg.generic {{indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}} outs(%out0 : tensor<?x{D}xf32>) {{
    ^bb0(%o: f32):
      %t = linalg.index 0 : index
      %i = linalg.index 1 : index
      %r0 = tensor.extract %place#0[%t, %c0] : tensor<?x{K}xindex>
      %r1 = tensor.extract %place#0[%t, %c1] : tensor<?x{K}xindex>
      %y0 = tensor.extract %ys_{E}[%r0, %i] : tensor<?x{D}xf32>
      %y1 = tensor.extract %ys_{E}[%r1, %i] : tensor<?x{D}xf32>
      %g0 = tensor.extract %route#1[%t, %c0] : tensor<?x{K}xf32>
      %g1 = tensor.extract %route#1[%t, %c1] : tensor<?x{K}xf32>
      %a = arith.mulf %g0, %y0 : f32
      %b = arith.mulf %g1, %y1 : f32
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    }} -> tensor<?x{D}xf32>
    return %out : tensor<?x{D}xf32>
  }}
}}
"""
module = module.replace("    %ninf = arith.constant", "    %true = arith.constant true\n    %ninf = arith.constant", 1)
open(f"{d}/moe.mlir", "w").write(module)
x = rng.standard_normal((40, D)).astype(np.float32)
np.save(f"{d}/x.npy", x)
np.save(f"{d}/calib.npy", rng.standard_normal((64, D)).astype(np.float32))


def silu(v):
    return v / (1 + np.exp(-v))


def forward(x, w1, w3, w2):
    x = x.astype(np.float64)
    logits = x @ wr.T.astype(np.float64)
    top = np.argsort(-logits, axis=1, kind="stable")[:, :K]
    out = np.zeros_like(x)
    routed = [[] for _ in range(E)]
    for t in range(len(x)):
        l = logits[t, top[t]]
        p = np.exp(l - l.max()); p /= p.sum()
        for j, e in enumerate(top[t]):
            routed[e].append(t)
            h = silu(x[t] @ w1[e].T) * (x[t] @ w3[e].T)
            out[t] += p[j] * (h @ w2[e].T)
    return out, routed


ref, _ = forward(x, w1, w3, w2)
np.save(f"{d}/ref.npy", ref)
# 32 calibration tokens that the router never sends to expert 3.
pool = rng.standard_normal((400, D)).astype(np.float32)
_, pool_routed = forward(pool, w1, w3, w2)
np.save(f"{d}/calib_skip3.npy", np.delete(pool, pool_routed[3], axis=0)[:32])
np.savez(f"{d}/weights.npz", wr=wr, w1=w1, w3=w3, w2=w2)
