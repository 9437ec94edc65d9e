// The portable kernels of the gptq lowering library (see Library.mlir): the
// same functions as KernelsCPU.mlir, with the same results up to the order
// of floating-point sums, each written as one target-independent linalg op
// (a matrix product, a transpose, a gather) without tiles, vectors or task
// sizes, for a target's own schedule to tile and map. The GPU pipeline
// lowers them; the CPU pipeline takes them with `kernels=portable`, which
// is how they are tested against the reference on every machine.

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
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

// %h + Y^T Y for a symmetric %h (the Hessian's update) on the matrix
// kernel: Y is both A transposed and B. Only the tiles that reach the lower
// triangle are computed (half the work), and the upper triangle is then
// copied from the lower one: each element of Y^T Y is the same sum of the
// same products in the same order as its mirror image (a * b is b * a,
// exactly), so the result is what the whole product gives, bit for bit.
func.func private @__gptq_add_gram(%h: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %true = arith.constant true
  %false = arith.constant false
  %r = func.call @__gptq_gemm_sub(%h, %y, %y, %true, %true, %false, %false) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, i1, i1, i1, i1) -> tensor<?x?xf32>
  %full = func.call @__gptq_mirror_lower(%r) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  return %full : tensor<?x?xf32>
}

// A square matrix with its strict upper triangle set from its lower one
// (h[i, j] = h[j, i] for i < j).
func.func private @__gptq_mirror_lower(%h: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %ht = func.call @__gptq_transpose(%h) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<?x?xf32>) outs(%ht : tensor<?x?xf32>) {
  ^bb0(%l: f32, %u: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %lower = arith.cmpi uge, %i, %j : index
    %v = arith.select %lower, %l, %u : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
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

// The diagonal block of the blocked factorization: M = chol(A)^-1 (lower,
// zeros above; A's lower triangle is read) written into a buffer of its
// own (which the step's products read while they write the rest of A) and
// over A (with %unit, the identity over A instead), and whether each pivot
// was positive written into %flags.
// The whole block is one loop marked gptq.one_block (one iteration): the
// GPU schedule runs it in one block of threads, its steps' loops shared
// among the threads with barriers between, so a diagonal block is one
// kernel.
//
// The factorization works on T = A^T as the CPU kernel does
// (KernelsCPU.mlir), each step's independent updates one linalg op: row j
// of T divided by its pivot's root into a scratch row, then row j set from
// it and each later row i updated as T[i, k] - r[k] r[i] for k >= i. The
// inverse takes a column per task: column j of M is M[j, j] = 1 / L[j, j]
// and, below it, M[i, j] = -(sum over j <= p < i of L[i, p] M[p, j]) /
// L[i, i], each sum from zero in increasing p, with L[i, p] = T[p, i]. Every
// entry gets the CPU kernels' operations in their order.
func.func private @__gptq_factor_diagonal(%a: tensor<?x?xf32>, %flags: tensor<?xi1>, %unit: i1) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi1>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %n = tensor.dim %a, %c0 : tensor<?x?xf32>
  %te = tensor.empty(%n, %n) : tensor<?x?xf32>
  %re = tensor.empty(%n) : tensor<?xf32>
  %ce = tensor.empty(%n, %n) : tensor<?x?xf32>
  // One iteration (step %n, which canonicalization does not fold away).
  %res:5 = scf.for %once = %c0 to %n step %n iter_args(%tt = %te, %row0 = %re, %fl0 = %flags, %m = %a, %mc0 = %ce) -> (tensor<?x?xf32>, tensor<?xf32>, tensor<?xi1>, tensor<?x?xf32>, tensor<?x?xf32>) {
    %t0 = linalg.transpose ins(%m : tensor<?x?xf32>) outs(%tt : tensor<?x?xf32>) permutation = [1, 0]
    %r:3 = func.call @__gptq_chol_steps(%t0, %row0, %fl0) : (tensor<?x?xf32>, tensor<?xf32>, tensor<?xi1>) -> (tensor<?x?xf32>, tensor<?xf32>, tensor<?xi1>)
    %mc = func.call @__gptq_trinv_of_transposed(%r#0, %mc0) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    %mo = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%mc : tensor<?x?xf32>) outs(%m : tensor<?x?xf32>) {
    ^bb0(%v: f32, %o: f32):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %d = arith.cmpi eq, %i, %j : index
      %e = arith.select %d, %one, %zero : f32
      %w = arith.select %unit, %e, %v : f32
      linalg.yield %w : f32
    } -> tensor<?x?xf32>
    scf.yield %r#0, %r#1, %r#2, %mo, %mc : tensor<?x?xf32>, tensor<?xf32>, tensor<?xi1>, tensor<?x?xf32>, tensor<?x?xf32>
  } {gptq.one_block}
  return %res#3, %res#4, %res#2 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi1>
}

// The unblocked Cholesky's steps on T = A^T (see __gptq_factor_diagonal),
// with a scratch row and the pivots' flags.
func.func private @__gptq_chol_steps(%t0: tensor<?x?xf32>, %row0: tensor<?xf32>, %fl0: tensor<?xi1>) -> (tensor<?x?xf32>, tensor<?xf32>, tensor<?xi1>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %t0, %c0 : tensor<?x?xf32>
  %r:3 = scf.for %j = %c0 to %n step %c1 iter_args(%t = %t0, %row = %row0, %fl = %fl0) -> (tensor<?x?xf32>, tensor<?xf32>, tensor<?xi1>) {
    %tjj = tensor.extract %t[%j, %j] : tensor<?x?xf32>
    %d = math.sqrt %tjj : f32
    %len = arith.subi %n, %j : index
    %tj = tensor.extract_slice %t[%j, %j] [1, %len] [1, 1] : tensor<?x?xf32> to tensor<?xf32>
    %rj = tensor.extract_slice %row[%j] [%len] [1] : tensor<?xf32> to tensor<?xf32>
    %fj = tensor.extract_slice %fl[%j] [%len] [1] : tensor<?xi1> to tensor<?xi1>
    // r[k] = T[j, k] / d (the pivot itself: d); the pivot's flag.
    %s:2 = linalg.generic {indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]}
        ins(%tj : tensor<?xf32>) outs(%rj, %fj : tensor<?xf32>, tensor<?xi1>) {
    ^bb0(%v: f32, %o: f32, %f: i1):
      %k = linalg.index 0 : index
      %pivot = arith.cmpi eq, %k, %c0 : index
      %q = arith.divf %v, %d : f32
      %w = arith.select %pivot, %d, %q : f32
      %pos = arith.cmpf ogt, %v, %zero : f32
      %f2 = arith.select %pivot, %pos, %f : i1
      linalg.yield %w, %f2 : f32, i1
    } -> (tensor<?xf32>, tensor<?xi1>)
    %blk = tensor.extract_slice %t[%j, %j] [%len, %len] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %u = linalg.generic {indexing_maps = [#col, #row, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%s#0, %s#0 : tensor<?xf32>, tensor<?xf32>) outs(%blk : tensor<?x?xf32>) {
    ^bb0(%rk: f32, %ri: f32, %x: f32):
      %i = linalg.index 0 : index
      %k = linalg.index 1 : index
      %first = arith.cmpi eq, %i, %c0 : index
      %below = arith.cmpi ult, %k, %i : index
      %xy = arith.mulf %rk, %ri : f32
      %dd = arith.subf %x, %xy : f32
      %upd = arith.select %below, %x, %dd : f32
      %w = arith.select %first, %rk, %upd : f32
      linalg.yield %w : f32
    } -> tensor<?x?xf32>
    %t2 = tensor.insert_slice %u into %t[%j, %j] [%len, %len] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
    %row2 = tensor.insert_slice %s#0 into %row[%j] [%len] [1] : tensor<?xf32> into tensor<?xf32>
    %fl2 = tensor.insert_slice %s#1 into %fl[%j] [%len] [1] : tensor<?xi1> into tensor<?xi1>
    scf.yield %t2, %row2, %fl2 : tensor<?x?xf32>, tensor<?xf32>, tensor<?xi1>
  }
  return %r#0, %r#1, %r#2 : tensor<?x?xf32>, tensor<?xf32>, tensor<?xi1>
}

// M = L^-1 into %m (its contents are not read) for L = T^T on and below the
// diagonal, a column per task (see __gptq_factor_diagonal).
func.func private @__gptq_trinv_of_transposed(%t: tensor<?x?xf32>, %m: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %n = tensor.dim %t, %c0 : tensor<?x?xf32>
  %z = linalg.fill ins(%zero : f32) outs(%m : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = scf.forall (%j) in (%n) shared_outs(%mo = %z) -> (tensor<?x?xf32>) {
    %col = tensor.extract_slice %mo[0, %j] [%n, 1] [1, 1] : tensor<?x?xf32> to tensor<?xf32>
    %ljj = tensor.extract %t[%j, %j] : tensor<?x?xf32>
    %inv = arith.divf %one, %ljj : f32
    %col1 = tensor.insert %inv into %col[%j] : tensor<?xf32>
    %j1 = arith.addi %j, %c1 : index
    %colf = scf.for %i = %j1 to %n step %c1 iter_args(%cc = %col1) -> (tensor<?xf32>) {
      %acc = scf.for %p = %j to %i step %c1 iter_args(%sum = %zero) -> (f32) {
        %lip = tensor.extract %t[%p, %i] : tensor<?x?xf32>
        %mpj = tensor.extract %cc[%p] : tensor<?xf32>
        %xy = arith.mulf %lip, %mpj : f32
        %sum2 = arith.addf %sum, %xy : f32
        scf.yield %sum2 : f32
      }
      %lii = tensor.extract %t[%i, %i] : tensor<?x?xf32>
      %ns = arith.negf %acc : f32
      %v = arith.divf %ns, %lii : f32
      %cc2 = tensor.insert %v into %cc[%i] : tensor<?xf32>
      scf.yield %cc2 : tensor<?xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %colf into %mo[0, %j] [%n, 1] [1, 1] : tensor<?xf32> into tensor<?x?xf32>
    }
  }
  return %r : tensor<?x?xf32>
}

// L21^T = M11 P^T (M11 is kb x kb, P rest x kb), P read in place.
func.func private @__gptq_factor_panel(%mkk: tensor<?x?xf32>, %p: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %kb = tensor.dim %mkk, %c0 : tensor<?x?xf32>
  %rest = tensor.dim %p, %c0 : tensor<?x?xf32>
  %e = tensor.empty(%kb, %rest) : tensor<?x?xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%mkk, %p : tensor<?x?xf32>, tensor<?x?xf32>) outs(%z : tensor<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %x = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// The transpose of %src written into %dst (of the transposed shape).
func.func private @__gptq_transpose_to(%src: tensor<?x?xf32>, %dst: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %t = linalg.transpose ins(%src : tensor<?x?xf32>) outs(%dst : tensor<?x?xf32>) permutation = [1, 0]
  return %t : tensor<?x?xf32>
}

// L[K, 0:K] M[0:K, 0:K] (kb x k), both read in place.
func.func private @__gptq_factor_row_product(%lrow: tensor<?x?xf32>, %mtl: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %true = arith.constant true
  %kb = tensor.dim %lrow, %c0 : tensor<?x?xf32>
  %k = tensor.dim %mtl, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%kb, %k) : tensor<?x?xf32>
  %r = func.call @__gptq_product_from_zero(%e, %lrow, %mtl, %true) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, i1) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -M11 T written into %dst (its contents are not read; kb x k).
func.func private @__gptq_factor_row_inverse(%mkk: tensor<?x?xf32>, %t: tensor<?x?xf32>, %dst: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %false = arith.constant false
  %r = func.call @__gptq_product_from_zero(%dst, %mkk, %t, %false) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, i1) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// A B (with %plus) or -A B into %c (its contents are not read), A read as
// it lies (M x K): each sum from zero in the order of k, as
// __gptq_gemm_sub's with A given transposed.
func.func private @__gptq_product_from_zero(%c: tensor<?x?xf32>, %a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %plus: i1) -> tensor<?x?xf32> {
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%c : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%z : tensor<?x?xf32>) {
  ^bb0(%av: f32, %bv: f32, %acc: f32):
    %p = arith.mulf %av, %bv : f32
    %s = arith.subf %acc, %p : f32
    %t = arith.addf %acc, %p : f32
    %v = arith.select %plus, %t, %s : f32
    linalg.yield %v : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
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

// The quantize-and-compensate loop with each block's columns given the
// earlier columns' errors inside the block's parallel loop (see
// __gptq_quantize_blocks): one parallel loop, so one kernel, per block of
// columns, instead of a kernel for the block and a matrix product.
func.func private @__gptq_left_looking() -> i1 {
  %t = arith.constant true
  return %t : i1
}

// The factorization with M's block rows accumulated (see
// __gptq_damped_cholesky): four parallel pieces, so four kernels, per
// block of columns, instead of seven.
func.func private @__gptq_accumulate_inverse() -> i1 {
  %t = arith.constant true
  return %t : i1
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
