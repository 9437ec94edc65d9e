// The portable kernels of the gptq lowering library (see Library.mlir): the
// same functions as KernelsCPU.mlir, with the same results up to the order
// of floating-point sums, each written as one target-independent linalg op
// (a matrix product, a transpose, a gather) without tiles, vectors or task
// sizes, for a target's own schedule to tile and map. The GPU pipeline
// lowers them; the CPU pipeline takes them with `kernels=portable`, which
// is how they are tested against the reference on every machine.

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#mk = affine_map<(m, n, k) -> (k, m)>
#kn = affine_map<(m, n, k) -> (k, n)>
#mn = affine_map<(m, n, k) -> (m, n)>

module {

// The transpose of a matrix.
func.func private @__gptq_transpose(%a: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %a, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?xf32>
  %t = linalg.transpose ins(%a : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) permutation = [1, 0]
  return %t : tensor<?x?xf32>
}

// result[j, i] = (dead(p(j)) ? 0 : a[i, p(j)]), p(j) = %perm[j] with
// %useperm (else j), dead(c) = %usemask and %h[c, c] == 0.
func.func private @__gptq_transpose_gather(%a: tensor<?x?xf32>, %perm: tensor<?xi64>, %useperm: i1, %h: tensor<?x?xf32>, %usemask: i1) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %a, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?xf32>
  %t = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x?xf32>) {
  ^bb0(%o: f32):
    %j = linalg.index 0 : index
    %i = linalg.index 1 : index
    %pj = func.call @__gptq_perm_index(%perm, %useperm, %j) : (tensor<?xi64>, i1, index) -> index
    %v = tensor.extract %a[%i, %pj] : tensor<?x?xf32>
    %r = scf.if %usemask -> (f32) {
      %d = tensor.extract %h[%pj, %pj] : tensor<?x?xf32>
      %dead = arith.cmpf oeq, %d, %zero : f32
      %x = arith.select %dead, %zero, %v : f32
      scf.yield %x : f32
    } else {
      scf.yield %v : f32
    }
    linalg.yield %r : f32
  } -> tensor<?x?xf32>
  return %t : tensor<?x?xf32>
}

// result[r, c] = %ct[q(c), r], q(c) = %q[c] with %useq (else c).
func.func private @__gptq_transpose_gather_i8(%ct: tensor<?x?xi8>, %q: tensor<?xi64>, %useq: i1) -> tensor<?x?xi8> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cols = tensor.dim %ct, %c0 : tensor<?x?xi8>
  %rows = tensor.dim %ct, %c1 : tensor<?x?xi8>
  %e = tensor.empty(%rows, %cols) : tensor<?x?xi8>
  %t = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x?xi8>) {
  ^bb0(%x: i8):
    %r = linalg.index 0 : index
    %c = linalg.index 1 : index
    %qc = func.call @__gptq_perm_index(%q, %useq, %c) : (tensor<?xi64>, i1, index) -> index
    %v = tensor.extract %ct[%qc, %r] : tensor<?x?xi8>
    linalg.yield %v : i8
  } -> tensor<?x?xi8>
  return %t : tensor<?x?xi8>
}

// C - A @ B for A given transposed (%at is K x M, %b is K x N, %c is M x N);
// C + A @ B with %plus; with %zeroC, C's contents are not read. Every entry
// of C is computed: %lowerC (the caller reads only the lower triangle) and
// %lowerB (B is zero above its diagonal) let the CPU kernel skip work, and
// change nothing that the callers read.
func.func private @__gptq_gemm_sub(%c: tensor<?x?xf32>, %at: tensor<?x?xf32>, %b: tensor<?x?xf32>, %plus: i1, %lowerC: i1, %lowerB: i1, %zeroC: i1) -> tensor<?x?xf32> {
  %zero = arith.constant 0.0 : f32
  %init = scf.if %zeroC -> (tensor<?x?xf32>) {
    %z = linalg.fill ins(%zero : f32) outs(%c : tensor<?x?xf32>) -> tensor<?x?xf32>
    scf.yield %z : tensor<?x?xf32>
  } else {
    scf.yield %c : tensor<?x?xf32>
  }
  %r = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%at, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%init : tensor<?x?xf32>) {
  ^bb0(%a: f32, %bv: f32, %acc: f32):
    %p = arith.mulf %a, %bv : f32
    %s = arith.subf %acc, %p : f32
    %t = arith.addf %acc, %p : f32
    %v = arith.select %plus, %t, %s : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// A[i, j] = H[q(i), q(j)] for q = %qidx, with each diagonal entry that is
// zero (a dead input) set to 1, then %damp added to it.
func.func private @__gptq_reversed_hessian(%h: tensor<?x?xf32>, %qidx: tensor<?xi32>, %damp: f32) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %n = tensor.dim %h, %c0 : tensor<?x?xf32>
  %e = tensor.empty(%n, %n) : tensor<?x?xf32>
  %a = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x?xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %qi32 = tensor.extract %qidx[%i] : tensor<?xi32>
    %qj32 = tensor.extract %qidx[%j] : tensor<?xi32>
    %qi = arith.index_cast %qi32 : i32 to index
    %qj = arith.index_cast %qj32 : i32 to index
    %v = tensor.extract %h[%qi, %qj] : tensor<?x?xf32>
    %diag = arith.cmpi eq, %i, %j : index
    %dead = arith.cmpf oeq, %v, %zero : f32
    %v1 = arith.select %dead, %one, %v : f32
    %vd = arith.addf %v1, %damp : f32
    %r = arith.select %diag, %vd, %v : f32
    linalg.yield %r : f32
  } -> tensor<?x?xf32>
  return %a : tensor<?x?xf32>
}

// __gptq_find_params on a group of W^T (%xt is L x R): its linalg ops over
// every row at once.
func.func private @__gptq_group_grid(%xt: tensor<?x?xf32>, %maxq: f32, %sym: i1, %mse: i1, %norm: f32, %steps: index, %grid: f64) -> (tensor<?xf32>, tensor<?xf32>) {
  %s, %z = func.call @__gptq_find_params(%xt, %maxq, %sym, %mse, %norm, %steps, %grid) : (tensor<?x?xf32>, f32, i1, i1, f32, index, f64) -> (tensor<?xf32>, tensor<?xf32>)
  return %s, %z : tensor<?xf32>, tensor<?xf32>
}

// W1 of a task of the quantize-and-compensate column loop: that part of
// W^T itself, updated in place (no buffer per task).
func.func private @__gptq_block_rows(%wt: tensor<?x?xf32>, %i1: index, %r0: index, %cnt: index, %rc: index) -> tensor<?x?xf32> {
  %s = tensor.extract_slice %wt[%i1, %r0] [%cnt, %rc] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// One row (or column) per task: the target's schedule groups them.
func.func private @__gptq_chunk_quantize() -> index {
  %c = arith.constant 1 : index
  return %c : index
}

func.func private @__gptq_chunk_rows() -> index {
  %c = arith.constant 1 : index
  return %c : index
}

func.func private @__gptq_chunk_columns() -> index {
  %c = arith.constant 1 : index
  return %c : index
}

}
