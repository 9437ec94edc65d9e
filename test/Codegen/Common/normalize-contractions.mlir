// RUN: gptq-opt %s --gptq-normalize-contractions --split-input-file | FileCheck %s

// A linear layer of an importer: y[b, s, n] = sum_k x[b, s, k] W[n, k]. The
// activations' batch and sequence become the rows (no copy), the weight is
// read as [N, K] through the maps (no transpose), the zero fill is kept,
// and the result goes back to [B, S, N] by a reshape.
// CHECK-DAG: #[[$A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$BT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[$C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>, %[[W:.*]]: tensor<32x64xf32>)
// CHECK: %[[XF:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<?x?x64xf32> into tensor<?x64xf32>
// CHECK: %[[X3:.*]] = tensor.expand_shape %[[XF]] {{\[\[}}0, 1], [2]] {{.*}} into tensor<1x?x64xf32>
// CHECK: %[[W3:.*]] = tensor.expand_shape %[[W]] {{\[\[}}0, 1], [2]] {{.*}} into tensor<1x32x64xf32>
// CHECK: %[[Z:.*]] = linalg.fill {{.*}} -> tensor<1x?x32xf32>
// CHECK: %[[R:.*]] = linalg.batch_matmul indexing_maps = [#[[$A]], #[[$BT]], #[[$C]]] ins(%[[X3]], %[[W3]] : tensor<1x?x64xf32>, tensor<1x32x64xf32>) outs(%[[Z]] : tensor<1x?x32xf32>)
// CHECK: %[[R2:.*]] = tensor.collapse_shape %[[R]] {{\[\[}}0, 1], [2]] : tensor<1x?x32xf32> into tensor<?x32xf32>
// CHECK: %[[Y:.*]] = tensor.reshape %[[R2]]
// CHECK-SAME: -> tensor<?x?x32xf32>
// CHECK-NOT: linalg.generic
// CHECK: return %[[Y]]
#x = affine_map<(b, s, n, k) -> (b, s, k)>
#w = affine_map<(b, s, n, k) -> (n, k)>
#o = affine_map<(b, s, n, k) -> (b, s, n)>
func.func @linear(%x: tensor<?x?x64xf32>, %w: tensor<32x64xf32>) -> tensor<?x?x32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %b = tensor.dim %x, %c0 : tensor<?x?x64xf32>
  %s = tensor.dim %x, %c1 : tensor<?x?x64xf32>
  %e = tensor.empty(%b, %s) : tensor<?x?x32xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %r = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<?x?x64xf32>, tensor<32x64xf32>) outs(%f : tensor<?x?x32xf32>) {
  ^bb0(%a: f32, %bb: f32, %acc: f32):
    %p = arith.mulf %a, %bb : f32
    %q = arith.addf %acc, %p : f32
    linalg.yield %q : f32
  } -> tensor<?x?x32xf32>
  return %r : tensor<?x?x32xf32>
}

// -----

// Mixing values in attention: out[b, s, h, d] = sum_t p[b, h, s, t] v[b, t, h, d].
// Batch loops (b, h) lead neither the right operand nor the output: v is
// transposed to [b, h, t, d] first, and the result [b, h, s, d] back to the
// output's order. An init that is not a fill is accumulated into.
// CHECK-LABEL: func.func @mix
// CHECK-SAME: (%[[P:.*]]: tensor<2x3x5x7xf32>, %[[V:.*]]: tensor<2x7x3x4xf32>, %[[I:.*]]: tensor<2x5x3x4xf32>)
// CHECK: %[[P3:.*]] = tensor.collapse_shape %[[P]] {{\[\[}}0, 1], [2], [3]] : tensor<2x3x5x7xf32> into tensor<6x5x7xf32>
// CHECK: %[[VT:.*]] = linalg.transpose ins(%[[V]] : tensor<2x7x3x4xf32>) outs(%{{.*}} : tensor<2x3x7x4xf32>) permutation = [0, 2, 1, 3]
// CHECK: %[[V3:.*]] = tensor.collapse_shape %[[VT]] {{\[\[}}0, 1], [2], [3]] : tensor<2x3x7x4xf32> into tensor<6x7x4xf32>
// CHECK: %[[IT:.*]] = linalg.transpose ins(%[[I]] : tensor<2x5x3x4xf32>) outs(%{{.*}} : tensor<2x3x5x4xf32>) permutation = [0, 2, 1, 3]
// CHECK: %[[I3:.*]] = tensor.collapse_shape %[[IT]]
// CHECK: %[[R:.*]] = linalg.batch_matmul ins(%[[P3]], %[[V3]] : tensor<6x5x7xf32>, tensor<6x7x4xf32>) outs(%[[I3]] : tensor<6x5x4xf32>)
// CHECK: %[[RE:.*]] = tensor.expand_shape %[[R]] {{\[\[}}0, 1], [2], [3]] output_shape [2, 3, 5, 4] : tensor<6x5x4xf32> into tensor<2x3x5x4xf32>
// CHECK: %[[Y:.*]] = linalg.transpose ins(%[[RE]] : tensor<2x3x5x4xf32>) outs(%{{.*}} : tensor<2x5x3x4xf32>) permutation = [0, 2, 1, 3]
// CHECK: return %[[Y]]
#p = affine_map<(b, s, h, d, t) -> (b, h, s, t)>
#v = affine_map<(b, s, h, d, t) -> (b, t, h, d)>
#out = affine_map<(b, s, h, d, t) -> (b, s, h, d)>
func.func @mix(%p: tensor<2x3x5x7xf32>, %v: tensor<2x7x3x4xf32>, %init: tensor<2x5x3x4xf32>) -> tensor<2x5x3x4xf32> {
  %r = linalg.generic {indexing_maps = [#p, #v, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<2x3x5x7xf32>, tensor<2x7x3x4xf32>) outs(%init : tensor<2x5x3x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x5x3x4xf32>
  return %r : tensor<2x5x3x4xf32>
}

// -----

// linalg.matmul with A given transposed ([K, M]): read through the maps.
// CHECK-DAG: #[[$AT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>
// CHECK-DAG: #[[$B:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-LABEL: func.func @matmul_at
// CHECK: linalg.batch_matmul indexing_maps = [#[[$AT]], #[[$B]], #{{.*}}] ins(%{{.*}}, %{{.*}} : tensor<1x9x4xf32>, tensor<1x9x6xf32>) outs(%{{.*}} : tensor<1x4x6xf32>)
// CHECK-NOT: linalg.matmul
func.func @matmul_at(%at: tensor<9x4xf32>, %b: tensor<9x6xf32>, %c: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %r = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%at, %b : tensor<9x4xf32>, tensor<9x6xf32>) outs(%c : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// -----

// Not contractions of float32, or not of the form: left alone.
// CHECK-LABEL: func.func @others
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xi32>, tensor<8x4xi32>)
// CHECK: linalg.generic
// CHECK: arith.maximumf
// CHECK: linalg.matvec
// CHECK-NOT: batch_matmul
func.func @others(%a: tensor<4x8xi32>, %b: tensor<8x4xi32>, %c: tensor<4x4xi32>, %x: tensor<4x8xf32>, %m: tensor<4xf32>, %v: tensor<8xf32>) -> (tensor<4x4xi32>, tensor<4xf32>, tensor<4xf32>) {
  %r = linalg.matmul ins(%a, %b : tensor<4x8xi32>, tensor<8x4xi32>) outs(%c : tensor<4x4xi32>) -> tensor<4x4xi32>
  %mx = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%m : tensor<4xf32>) {
  ^bb0(%e: f32, %acc: f32):
    %y = arith.maximumf %acc, %e : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %mv = linalg.matvec ins(%x, %v : tensor<4x8xf32>, tensor<8xf32>) outs(%m : tensor<4xf32>) -> tensor<4xf32>
  return %r, %mx, %mv : tensor<4x4xi32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Attention scores: s[b, h, q, t] = sum_d q[b, q, h, d] k[b, t, h, d]. Both
// operands need a copy to bring the heads next to the batch; the keys are
// copied into [b, h, t, d], which keeps their contiguous last dimension,
// and read transposed through the maps (not scattered into [b, h, d, t]).
// CHECK-DAG: #[[$A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[$BT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-LABEL: func.func @scores
// CHECK: %[[QT:.*]] = linalg.transpose ins(%{{.*}} : tensor<2x5x3x4xf32>) outs(%{{.*}} : tensor<2x3x5x4xf32>) permutation = [0, 2, 1, 3]
// CHECK: %[[KT:.*]] = linalg.transpose ins(%{{.*}} : tensor<2x7x3x4xf32>) outs(%{{.*}} : tensor<2x3x7x4xf32>) permutation = [0, 2, 1, 3]
// CHECK: linalg.batch_matmul indexing_maps = [#[[$A]], #[[$BT]], #{{.*}}] ins(%{{.*}}, %{{.*}} : tensor<6x5x4xf32>, tensor<6x7x4xf32>) outs(%{{.*}} : tensor<6x5x7xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: return
#sq = affine_map<(b, h, s, t, d) -> (b, s, h, d)>
#sk = affine_map<(b, h, s, t, d) -> (b, t, h, d)>
#so = affine_map<(b, h, s, t, d) -> (b, h, s, t)>
func.func @scores(%q: tensor<2x5x3x4xf32>, %k: tensor<2x7x3x4xf32>, %init: tensor<2x3x5x7xf32>) -> tensor<2x3x5x7xf32> {
  %r = linalg.generic {indexing_maps = [#sq, #sk, #so], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x5x3x4xf32>, tensor<2x7x3x4xf32>) outs(%init : tensor<2x3x5x7xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x3x5x7xf32>
  return %r : tensor<2x3x5x7xf32>
}

// -----

// Mixing with a repeat loop r between heads and queries (grouped-query
// attention's form): p[b, h, r, s, t], v[b, t, h, d], out[b, s, h, r, d].
// The output is transposed back in any case, so the rows (s, r) take the
// probabilities' order (r, s): p is only collapsed, never copied.
// CHECK-LABEL: func.func @mix_repeat
// CHECK-SAME: (%[[P:.*]]: tensor<2x3x2x5x7xf32>
// CHECK: %[[P3:.*]] = tensor.collapse_shape %[[P]] {{\[\[}}0, 1], [2, 3], [4]] : tensor<2x3x2x5x7xf32> into tensor<6x10x7xf32>
// CHECK: %[[VT:.*]] = linalg.transpose ins(%{{.*}} : tensor<2x7x3x4xf32>) outs(%{{.*}} : tensor<2x3x7x4xf32>) permutation = [0, 2, 1, 3]
// CHECK: linalg.batch_matmul ins(%[[P3]], %{{.*}} : tensor<6x10x7xf32>, tensor<6x7x4xf32>)
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x3x2x5x4xf32>) outs(%{{.*}} : tensor<2x5x3x2x4xf32>) permutation = [0, 3, 1, 2, 4]
#mp = affine_map<(b, s, h, r, d, t) -> (b, h, r, s, t)>
#mv = affine_map<(b, s, h, r, d, t) -> (b, t, h, d)>
#mo = affine_map<(b, s, h, r, d, t) -> (b, s, h, r, d)>
func.func @mix_repeat(%p: tensor<2x3x2x5x7xf32>, %v: tensor<2x7x3x4xf32>) -> tensor<2x5x3x2x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x5x3x2x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x5x3x2x4xf32>) -> tensor<2x5x3x2x4xf32>
  %r = linalg.generic {indexing_maps = [#mp, #mv, #mo], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<2x3x2x5x7xf32>, tensor<2x7x3x4xf32>) outs(%f : tensor<2x5x3x2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x5x3x2x4xf32>
  return %r : tensor<2x5x3x2x4xf32>
}

// -----

// A transpose that moves only loops of size 1 is a reshape: x[b, u, s, k]
// with a unit loop u, read as rows (b, s, u) in the output's order, is
// collapsed and expanded, not copied.
// CHECK-LABEL: func.func @unit_loop
// CHECK-NOT: linalg.transpose
// CHECK: %[[C:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3]] : tensor<2x1x5x4xf32> into tensor<2x5x4xf32>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[C]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 5, 1, 4] : tensor<2x5x4xf32> into tensor<2x5x1x4xf32>
// CHECK: linalg.batch_matmul
// CHECK-NOT: linalg.transpose
// CHECK: return
#ux = affine_map<(b, s, u, n, k) -> (b, u, s, k)>
#uw = affine_map<(b, s, u, n, k) -> (n, k)>
#uo = affine_map<(b, s, u, n, k) -> (b, s, u, n)>
func.func @unit_loop(%x: tensor<2x1x5x4xf32>, %w: tensor<3x4xf32>, %init: tensor<2x5x1x3xf32>) -> tensor<2x5x1x3xf32> {
  %r = linalg.generic {indexing_maps = [#ux, #uw, #uo], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<2x1x5x4xf32>, tensor<3x4xf32>) outs(%init : tensor<2x5x1x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x5x1x3xf32>
  return %r : tensor<2x5x1x3xf32>
}

// -----

// A causal mask. The scores are read only where key t <= query s (the
// maximum and the exponentials select them under `t <= s`), so the product
// is marked gptq.lower_result; the probabilities are a causal select of
// zero divided by the row sums, zero past the diagonal, so the mixing is
// marked gptq.lower_lhs.
// CHECK-LABEL: func.func @causal
// CHECK: linalg.batch_matmul {{.*}}{gptq.lower_result} ins
// CHECK: linalg.batch_matmul {gptq.lower_lhs} ins
#cq = affine_map<(h, s, t, d) -> (s, h, d)>
#ck = affine_map<(h, s, t, d) -> (t, h, d)>
#cs = affine_map<(h, s, t, d) -> (h, s, t)>
#r3 = affine_map<(h, s, t) -> (h, s, t)>
#m3 = affine_map<(h, s, t) -> (h, s)>
#cp = affine_map<(s, h, d, t) -> (h, s, t)>
#cv = affine_map<(s, h, d, t) -> (t, h, d)>
#co = affine_map<(s, h, d, t) -> (s, h, d)>
func.func @causal(%q: tensor<5x2x4xf32>, %k: tensor<5x2x4xf32>, %v: tensor<5x2x4xf32>) -> (tensor<5x2x4xf32>, tensor<2x5xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %se = tensor.empty() : tensor<2x5x5xf32>
  %sf = linalg.fill ins(%zero : f32) outs(%se : tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %scores = linalg.generic {indexing_maps = [#cq, #ck, #cs], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<5x2x4xf32>, tensor<5x2x4xf32>) outs(%sf : tensor<2x5x5xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %a = arith.addf %acc, %m : f32
    linalg.yield %a : f32
  } -> tensor<2x5x5xf32>
  %me = tensor.empty() : tensor<2x5xf32>
  %mf = linalg.fill ins(%ninf : f32) outs(%me : tensor<2x5xf32>) -> tensor<2x5xf32>
  %rowmax = linalg.generic {indexing_maps = [#r3, #m3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%scores : tensor<2x5x5xf32>) outs(%mf : tensor<2x5xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %visible = arith.cmpi ule, %j, %i : index
    %masked = arith.select %visible, %x, %ninf : f32
    %mx = arith.maximumf %acc, %masked : f32
    linalg.yield %mx : f32
  } -> tensor<2x5xf32>
  %ee = tensor.empty() : tensor<2x5x5xf32>
  %exp = linalg.generic {indexing_maps = [#r3, #m3, #r3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%scores, %rowmax : tensor<2x5x5xf32>, tensor<2x5xf32>) outs(%ee : tensor<2x5x5xf32>) {
  ^bb0(%x: f32, %mx: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %visible = arith.cmpi uge, %i, %j : index
    %c = arith.subf %x, %mx : f32
    %e = math.exp %c : f32
    %p = arith.select %visible, %e, %zero : f32
    linalg.yield %p : f32
  } -> tensor<2x5x5xf32>
  %ze = tensor.empty() : tensor<2x5xf32>
  %zf = linalg.fill ins(%zero : f32) outs(%ze : tensor<2x5xf32>) -> tensor<2x5xf32>
  %sum = linalg.generic {indexing_maps = [#r3, #m3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%exp : tensor<2x5x5xf32>) outs(%zf : tensor<2x5xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %a = arith.addf %acc, %x : f32
    linalg.yield %a : f32
  } -> tensor<2x5xf32>
  %pe = tensor.empty() : tensor<2x5x5xf32>
  %probs = linalg.generic {indexing_maps = [#r3, #m3, #r3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%exp, %sum : tensor<2x5x5xf32>, tensor<2x5xf32>) outs(%pe : tensor<2x5x5xf32>) {
  ^bb0(%x: f32, %z: f32, %out: f32):
    %p = arith.divf %x, %z : f32
    linalg.yield %p : f32
  } -> tensor<2x5x5xf32>
  %oe = tensor.empty() : tensor<5x2x4xf32>
  %of = linalg.fill ins(%zero : f32) outs(%oe : tensor<5x2x4xf32>) -> tensor<5x2x4xf32>
  %out = linalg.generic {indexing_maps = [#cp, #cv, #co], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%probs, %v : tensor<2x5x5xf32>, tensor<5x2x4xf32>) outs(%of : tensor<5x2x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %a = arith.addf %acc, %m : f32
    linalg.yield %a : f32
  } -> tensor<5x2x4xf32>
  return %out, %sum : tensor<5x2x4xf32>, tensor<2x5xf32>
}

// -----

// Not causal: the scores are also returned (read whole), and the mask of
// the probabilities keeps t >= s (the upper triangle). Neither product is
// marked.
// CHECK-LABEL: func.func @not_causal
// CHECK-NOT: gptq.lower
// CHECK: return
#cq = affine_map<(h, s, t, d) -> (s, h, d)>
#ck = affine_map<(h, s, t, d) -> (t, h, d)>
#cs = affine_map<(h, s, t, d) -> (h, s, t)>
#r3 = affine_map<(h, s, t) -> (h, s, t)>
#cp = affine_map<(s, h, d, t) -> (h, s, t)>
#cv = affine_map<(s, h, d, t) -> (t, h, d)>
#co = affine_map<(s, h, d, t) -> (s, h, d)>
func.func @not_causal(%q: tensor<5x2x4xf32>, %k: tensor<5x2x4xf32>, %v: tensor<5x2x4xf32>) -> (tensor<5x2x4xf32>, tensor<2x5x5xf32>) {
  %zero = arith.constant 0.0 : f32
  %se = tensor.empty() : tensor<2x5x5xf32>
  %sf = linalg.fill ins(%zero : f32) outs(%se : tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %scores = linalg.generic {indexing_maps = [#cq, #ck, #cs], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<5x2x4xf32>, tensor<5x2x4xf32>) outs(%sf : tensor<2x5x5xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %a = arith.addf %acc, %m : f32
    linalg.yield %a : f32
  } -> tensor<2x5x5xf32>
  %pe = tensor.empty() : tensor<2x5x5xf32>
  %probs = linalg.generic {indexing_maps = [#r3, #r3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%scores : tensor<2x5x5xf32>) outs(%pe : tensor<2x5x5xf32>) {
  ^bb0(%x: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %visible = arith.cmpi uge, %j, %i : index
    %p = arith.select %visible, %x, %zero : f32
    linalg.yield %p : f32
  } -> tensor<2x5x5xf32>
  %oe = tensor.empty() : tensor<5x2x4xf32>
  %of = linalg.fill ins(%zero : f32) outs(%oe : tensor<5x2x4xf32>) -> tensor<5x2x4xf32>
  %out = linalg.generic {indexing_maps = [#cp, #cv, #co], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%probs, %v : tensor<2x5x5xf32>, tensor<5x2x4xf32>) outs(%of : tensor<5x2x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %a = arith.addf %acc, %m : f32
    linalg.yield %a : f32
  } -> tensor<5x2x4xf32>
  return %out, %scores : tensor<5x2x4xf32>, tensor<2x5x5xf32>
}
