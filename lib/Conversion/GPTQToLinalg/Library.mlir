// The implementations that `convert-gptq-to-linalg` instantiates for gptq
// ops. Every function is shape-generic (dynamic sizes) and takes the op's
// settings as scalar arguments, which become constants once the call is
// inlined. Functions are named `__gptq_<what>`; the pass copies only those it
// calls into the module, as private functions.
//
// This file holds the algorithms, once for every target: the loops that
// carry GPTQ's dependences (the column loop of a block, the blocks of the
// factorization) as scf.for, the independent work as linalg ops and
// scf.forall. What a target tunes lives in a kernel file of the same
// functions: the matrix products (__gptq_gemm_sub), transposes and gathers,
// the pieces of a step of the blocked factorization (__gptq_factor_*: the
// diagonal block factored and inverted with the same operations in the same
// order in both files, the panel, the block row of the inverse), the orders
// of the factorization (__gptq_accumulate_inverse) and of the
// quantize-and-compensate loop (__gptq_left_looking), and the rows
// per task of the parallel loops (__gptq_chunk_*). KernelsCPU.mlir is the
// CPU schedule; KernelsPortable.mlir writes each kernel as plain linalg ops
// reading its operands in place, for the GPU pipeline.

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

module {

//===--------------------------------------------------------------------===//
// gptq.hessian_accumulate
//===--------------------------------------------------------------------===//

// H * n/(n+nb) + (2/(n+nb)) X^T X for X = [tokens, cols] holding nb samples.
func.func private @__gptq_hessian_accumulate(%x: tensor<?x?xf32>, %h: tensor<?x?xf32>, %n: i64, %nb: i64) -> (tensor<?x?xf32>, i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f64
  %n2 = arith.addi %n, %nb : i64
  %nf = arith.sitofp %n : i64 to f64
  %n2f = arith.sitofp %n2 : i64 to f64
  %keepd = arith.divf %nf, %n2f : f64
  %keep = arith.truncf %keepd : f64 to f32
  %q = arith.divf %two, %n2f : f64
  %sd = math.sqrt %q : f64
  %s = arith.truncf %sd : f64 to f32
  %t = tensor.dim %x, %c0 : tensor<?x?xf32>
  %c = tensor.dim %x, %c1 : tensor<?x?xf32>
  %ye = tensor.empty(%t, %c) : tensor<?x?xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x?xf32>) outs(%ye : tensor<?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %s, %a : f32
    linalg.yield %m : f32
  } -> tensor<?x?xf32>
  %he = tensor.empty(%c, %c) : tensor<?x?xf32>
  %hs = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<?x?xf32>) outs(%he : tensor<?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %keep : f32
    linalg.yield %m : f32
  } -> tensor<?x?xf32>
  // H + Y^T Y, on the kernel file's matrix kernel.
  %full = func.call @__gptq_add_gram(%hs, %y) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %full, %n2 : tensor<?x?xf32>, i64
}

//===--------------------------------------------------------------------===//
// gptq.damped_cholesky
//===--------------------------------------------------------------------===//

// L from the transposed form T = L^T that the unblocked factorizations
// (__gptq_chol_unblocked of the kernel files) work in: L[i, j] = T[j, i] on
// and below the diagonal, zero above (whatever T holds below its diagonal).
func.func private @__gptq_lower_of_transposed(%t: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %t, %c0 : tensor<?x?xf32>
  %e = tensor.empty(%n, %n) : tensor<?x?xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<?x?xf32>) outs(%e : tensor<?x?xf32>) {
  ^bb0(%v: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %upper = arith.cmpi ult, %i, %j : index
    %w = arith.select %upper, %zero, %v : f32
    linalg.yield %w : f32
  } -> tensor<?x?xf32>
  return %l : tensor<?x?xf32>
}

// Position i of a permuted index space: %perm[i] with %useperm, else i.
func.func private @__gptq_perm_index(%perm: tensor<?xi64>, %useperm: i1, %i: index) -> index {
  %r = scf.if %useperm -> (index) {
    %p = tensor.extract %perm[%i] : tensor<?xi64>
    %pi = arith.index_cast %p : i64 to index
    scf.yield %pi : index
  } else {
    scf.yield %i : index
  }
  return %r : index
}

// M = L^-1 for L = chol(A) (A is n x n, its lower triangle read) in A's
// lower triangle with zeros above, and whether each pivot was positive:
// the right-looking blocked Cholesky of A, with the block rows of M written
// over those of L once they are no longer needed:
// L[K,K] = chol(A[K,K]); M[K,K] = L[K,K]^-1;
// L[below,K] = A[below,K] M[K,K]^T; A[below,below] -= L[below,K] L[below,K]^T;
// M[K,0:K] = -M[K,K] (L[K,0:K] M[0:K,0:K]).
// Block row K of L is read only in step K, so M's block row K replaces it
// at the end of the step; the part of block row K right of the diagonal is
// zeroed, so that the finished rows hold exactly the lower triangular M.
// The step's pieces are kernel functions (__gptq_factor_*): the CPU kernels
// build them from their transposes and matrix kernel, skipping the upper
// triangles that are never read.
func.func private @__gptq_factor_row_by_row(%a0: tensor<?x?xf32>, %flags0: tensor<?xi1>, %nb: index) -> (tensor<?x?xf32>, tensor<?xi1>) {
  %c0 = arith.constant 0 : index
  %false = arith.constant false
  %true = arith.constant true
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %a0, %c0 : tensor<?x?xf32>
  %res:2 = scf.for %k = %c0 to %n step %nb iter_args(%a = %a0, %fl = %flags0) -> (tensor<?x?xf32>, tensor<?xi1>) {
    %left = arith.subi %n, %k : index
    %kb = arith.minsi %nb, %left : index
    %k2 = arith.addi %k, %kb : index
    %rest = arith.subi %n, %k2 : index
    // M[K,K] = chol(A[K,K])^-1 in the diagonal block's place (nothing
    // else in the step reads A[K,K]), M[K,K] again in a buffer of its own
    // and in the layout the kernel file's products read (the CPU's:
    // transposed), and the pivots' flags.
    %akk = tensor.extract_slice %a[%k, %k] [%kb, %kb] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %flk = tensor.extract_slice %fl[%k] [%kb] [1] : tensor<?xi1> to tensor<?xi1>
    %mkk, %mkkc, %fkk = func.call @__gptq_factor_diagonal(%akk, %flk, %false) : (tensor<?x?xf32>, tensor<?xi1>, i1) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi1>)
    %a1 = tensor.insert_slice %mkk into %a[%k, %k] [%kb, %kb] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
    %fl2 = tensor.insert_slice %fkk into %fl[%k] [%kb] [1] : tensor<?xi1> into tensor<?xi1>
    %haverest = arith.cmpi sgt, %rest, %c0 : index
    %a2 = scf.if %haverest -> (tensor<?x?xf32>) {
      // L21^T = M11 P^T, then A22 -= L21 L21^T on the lower triangle.
      %p = tensor.extract_slice %a1[%k2, %k] [%rest, %kb] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %l21t = func.call @__gptq_factor_panel(%mkkc, %p) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
      %a22 = tensor.extract_slice %a1[%k2, %k2] [%rest, %rest] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %a22n = func.call @__gptq_gemm_sub(%a22, %l21t, %l21t, %false, %true, %false, %false) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, i1, i1, i1, i1) -> tensor<?x?xf32>
      %a3 = tensor.insert_slice %a22n into %a1[%k2, %k2] [%rest, %rest] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
      // L21 into its place below the diagonal block, then zeros into the
      // block row right of it (the finished rows hold exactly the lower M).
      %pd = tensor.extract_slice %a3[%k2, %k] [%rest, %kb] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %l21 = func.call @__gptq_transpose_to(%l21t, %pd) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
      %a4 = tensor.insert_slice %l21 into %a3[%k2, %k] [%rest, %kb] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
      %up = tensor.extract_slice %a4[%k, %k2] [%kb, %rest] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %upz = linalg.fill ins(%zero : f32) outs(%up : tensor<?x?xf32>) -> tensor<?x?xf32>
      %a5 = tensor.insert_slice %upz into %a4[%k, %k2] [%kb, %rest] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
      scf.yield %a5 : tensor<?x?xf32>
    } else {
      scf.yield %a1 : tensor<?x?xf32>
    }
    %havek = arith.cmpi sgt, %k, %c0 : index
    %a6 = scf.if %havek -> (tensor<?x?xf32>) {
      // M[K, 0:K] = -M11 (L[K, 0:K] M[0:K, 0:K]); M[0:K, 0:K] is lower.
      %lrow = tensor.extract_slice %a2[%k, 0] [%kb, %k] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %mtl = tensor.extract_slice %a2[0, 0] [%k, %k] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %t = func.call @__gptq_factor_row_product(%lrow, %mtl) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
      %x = func.call @__gptq_factor_row_inverse(%mkkc, %t, %lrow) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
      %m3 = tensor.insert_slice %x into %a2[%k, 0] [%kb, %k] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
      scf.yield %m3 : tensor<?x?xf32>
    } else {
      scf.yield %a2 : tensor<?x?xf32>
    }
    scf.yield %a6, %fl2 : tensor<?x?xf32>, tensor<?xi1>
  }
  return %res#0, %res#1 : tensor<?x?xf32>, tensor<?xi1>
}

// The same M in fewer, larger steps: each block row of M is the sum of
// products accumulated while the factorization goes right, so that a step
// is four parallel pieces (on a GPU, four kernels) whatever the number of
// blocks before it. With T[j, i] = sum over p of L[j, p] M[p, i] (whose
// block row K gives M[K, 0:K] = -M[K,K] T[K, 0:K]), the step of block K:
//   M11 = chol(A[K,K])^-1 into a buffer of its own, and I over A[K,K];
//   R = M11 A[:, K]^T, a block row of n columns: over A[0:K, K], where
//     -T[K, 0:K]^T has been accumulated, it is M[K, 0:K]; over A[K,K] = I,
//     M11; over A[below, K] (the updated A), L[below, K]^T;
//   block row K of A = R left of the diagonal block's end, zeros right of
//     it (where the accumulation for block row K starts);
//   A[:, below] -= R^T R[:, below]: rows below give A[below, below] -=
//     L[below, K] L[below, K]^T, rows above accumulate -T^T.
// Each entry receives the products of the other order in the same order
// (the accumulation runs in increasing p, as T's sum from zero, and
// -(M11 T) = M11 (-T) exactly), so the two orders give the same M. The
// upper triangle is left with the accumulations: the caller reads the
// lower one.
func.func private @__gptq_factor_accumulating(%a0: tensor<?x?xf32>, %flags0: tensor<?xi1>, %nb: index) -> (tensor<?x?xf32>, tensor<?xi1>) {
  %c0 = arith.constant 0 : index
  %false = arith.constant false
  %true = arith.constant true
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %a0, %c0 : tensor<?x?xf32>
  %res:2 = scf.for %k = %c0 to %n step %nb iter_args(%a = %a0, %fl = %flags0) -> (tensor<?x?xf32>, tensor<?xi1>) {
    %left = arith.subi %n, %k : index
    %kb = arith.minsi %nb, %left : index
    %k2 = arith.addi %k, %kb : index
    %rest = arith.subi %n, %k2 : index
    %akk = tensor.extract_slice %a[%k, %k] [%kb, %kb] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %flk = tensor.extract_slice %fl[%k] [%kb] [1] : tensor<?xi1> to tensor<?xi1>
    %ikk, %mkk, %fkk = func.call @__gptq_factor_diagonal(%akk, %flk, %true) : (tensor<?x?xf32>, tensor<?xi1>, i1) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi1>)
    %a1 = tensor.insert_slice %ikk into %a[%k, %k] [%kb, %kb] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
    %fl2 = tensor.insert_slice %fkk into %fl[%k] [%kb] [1] : tensor<?xi1> into tensor<?xi1>
    // R = M11 A[:, K]^T (kb x n).
    %colk = tensor.extract_slice %a1[0, %k] [%n, %kb] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %rb = func.call @__gptq_factor_panel(%mkk, %colk) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    // Block row K = [R[:, 0:k2] | 0].
    %rowk = tensor.extract_slice %a1[%k, 0] [%kb, %n] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %rown = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%rb : tensor<?x?xf32>) outs(%rowk : tensor<?x?xf32>) {
    ^bb0(%v: f32, %o: f32):
      %j = linalg.index 1 : index
      %in = arith.cmpi ult, %j, %k2 : index
      %w = arith.select %in, %v, %zero : f32
      linalg.yield %w : f32
    } -> tensor<?x?xf32>
    %a2 = tensor.insert_slice %rown into %a1[%k, 0] [%kb, %n] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
    %haverest = arith.cmpi sgt, %rest, %c0 : index
    %a3 = scf.if %haverest -> (tensor<?x?xf32>) {
      // A[:, below] -= R^T R[:, below].
      %cb = tensor.extract_slice %a2[0, %k2] [%n, %rest] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %rr = tensor.extract_slice %rb[0, %k2] [%kb, %rest] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %cn = func.call @__gptq_gemm_sub(%cb, %rb, %rr, %false, %false, %false, %false) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, i1, i1, i1, i1) -> tensor<?x?xf32>
      %a4 = tensor.insert_slice %cn into %a2[0, %k2] [%n, %rest] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
      scf.yield %a4 : tensor<?x?xf32>
    } else {
      scf.yield %a2 : tensor<?x?xf32>
    }
    scf.yield %a3, %fl2 : tensor<?x?xf32>, tensor<?xi1>
  }
  return %res#0, %res#1 : tensor<?x?xf32>, tensor<?xi1>
}

// U, upper, with (P H P^T with dead inputs set to 1, damped)^-1 = U^T U,
// where P is the permutation %perm (with %useperm; the identity otherwise),
// so that a symmetric permutation of H costs no pass of its own.
// U = J inv(chol(J H J)) J, where J reverses the order of the indices. One
// n x n buffer: J H J is formed in it, factored in place, replaced by the
// inverse of the factor block row by block row, and reversed in place.
func.func private @__gptq_damped_cholesky(%h: tensor<?x?xf32>, %percdamp: f32, %nb: index, %perm: tensor<?xi64>, %useperm: i1) -> (tensor<?x?xf32>, i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %true = arith.constant true
  %n = tensor.dim %h, %c0 : tensor<?x?xf32>
  %nm1 = arith.subi %n, %c1 : index
  // mean(diag(H)) with dead inputs counted as 1, summed in permuted order.
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    %pi = func.call @__gptq_perm_index(%perm, %useperm, %i) : (tensor<?xi64>, i1, index) -> index
    %v = tensor.extract %h[%pi, %pi] : tensor<?x?xf32>
    %dead = arith.cmpf oeq, %v, %zero : f32
    %w = arith.select %dead, %one, %v : f32
    %a = arith.addf %acc, %w : f32
    scf.yield %a : f32
  }
  %ni = arith.index_cast %n : index to i64
  %nf = arith.sitofp %ni : i64 to f32
  %mean = arith.divf %sum, %nf : f32
  %damp = arith.mulf %percdamp, %mean : f32
  // A = J (P H P^T + damp I) J, dead inputs set to 1 first: A[i, j] =
  // H[q(i), q(j)] with q(k) = P(n-1-k).
  %qe = tensor.empty(%n) : tensor<?xi32>
  %qidx = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]} outs(%qe : tensor<?xi32>) {
  ^bb0(%o: i32):
    %k = linalg.index 0 : index
    %rk = arith.subi %nm1, %k : index
    %pk = func.call @__gptq_perm_index(%perm, %useperm, %rk) : (tensor<?xi64>, i1, index) -> index
    %pki = arith.index_cast %pk : index to i32
    linalg.yield %pki : i32
  } -> tensor<?xi32>
  %rev = func.call @__gptq_reversed_hessian(%h, %qidx, %damp) : (tensor<?x?xf32>, tensor<?xi32>, f32) -> tensor<?x?xf32>
  // The kernel file chooses between two orders of the factorization
  // (__gptq_accumulate_inverse); both leave M = L^-1 in A's lower triangle.
  %flags0 = tensor.empty(%n) : tensor<?xi1>
  %accumulate = func.call @__gptq_accumulate_inverse() : () -> i1
  %res:2 = scf.if %accumulate -> (tensor<?x?xf32>, tensor<?xi1>) {
    %f:2 = func.call @__gptq_factor_accumulating(%rev, %flags0, %nb) : (tensor<?x?xf32>, tensor<?xi1>, index) -> (tensor<?x?xf32>, tensor<?xi1>)
    scf.yield %f#0, %f#1 : tensor<?x?xf32>, tensor<?xi1>
  } else {
    %f:2 = func.call @__gptq_factor_row_by_row(%rev, %flags0, %nb) : (tensor<?x?xf32>, tensor<?xi1>, index) -> (tensor<?x?xf32>, tensor<?xi1>)
    scf.yield %f#0, %f#1 : tensor<?x?xf32>, tensor<?xi1>
  }
  %ok = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %true) -> (i1) {
    %f = tensor.extract %res#1[%i] : tensor<?xi1>
    %acc2 = arith.andi %acc, %f : i1
    scf.yield %acc2 : i1
  }
  // U = J M J in place: element (p, j) trades places with (n-1-p, n-1-j),
  // row pairs in parallel, then the middle row of an odd n reversed. Only
  // M's lower triangle is read: zeros come in from above it.
  %npairs = arith.divui %n, %c2 : index
  %u0 = scf.forall (%pp) in (%npairs) shared_outs(%uo = %res#0) -> (tensor<?x?xf32>) {
    // Rows p and n-1-p as one strided slice.
    %twop = arith.muli %pp, %c2 : index
    %gap = arith.subi %nm1, %twop : index
    %pair = tensor.extract_slice %uo[%pp, 0] [2, %n] [%gap, 1] : tensor<?x?xf32> to tensor<2x?xf32>
    %sw = scf.for %j = %c0 to %n step %c1 iter_args(%pr = %pair) -> (tensor<2x?xf32>) {
      %rj = arith.subi %nm1, %j : index
      %a0 = tensor.extract %pr[%c0, %j] : tensor<2x?xf32>
      %b0 = tensor.extract %pr[%c1, %rj] : tensor<2x?xf32>
      // M[p, j] is read where j <= p, M[n-1-p, n-1-j] where j >= p.
      %alow = arith.cmpi ule, %j, %pp : index
      %blow = arith.cmpi uge, %j, %pp : index
      %a = arith.select %alow, %a0, %zero : f32
      %b = arith.select %blow, %b0, %zero : f32
      %pr1 = tensor.insert %b into %pr[%c0, %j] : tensor<2x?xf32>
      %pr2 = tensor.insert %a into %pr1[%c1, %rj] : tensor<2x?xf32>
      scf.yield %pr2 : tensor<2x?xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %sw into %uo[%pp, 0] [2, %n] [%gap, 1] : tensor<2x?xf32> into tensor<?x?xf32>
    }
  }
  %odd = arith.remui %n, %c2 : index
  %mid0 = arith.muli %npairs, %odd : index
  %nmid = arith.addi %mid0, %odd : index
  %u = scf.for %mid = %mid0 to %nmid step %c1 iter_args(%uu = %u0) -> (tensor<?x?xf32>) {
    %row = tensor.extract_slice %uu[%mid, 0] [1, %n] [1, 1] : tensor<?x?xf32> to tensor<?xf32>
    %mrev = scf.for %j = %c0 to %npairs step %c1 iter_args(%r = %row) -> (tensor<?xf32>) {
      %rj = arith.subi %nm1, %j : index
      // M[mid, n-1-j] lies above the diagonal (j < mid).
      %a = tensor.extract %r[%j] : tensor<?xf32>
      %r1 = tensor.insert %zero into %r[%j] : tensor<?xf32>
      %r2 = tensor.insert %a into %r1[%rj] : tensor<?xf32>
      scf.yield %r2 : tensor<?xf32>
    }
    %uu2 = tensor.insert_slice %mrev into %uu[%mid, 0] [1, %n] [1, 1] : tensor<?xf32> into tensor<?x?xf32>
    scf.yield %uu2 : tensor<?x?xf32>
  }
  return %u, %ok : tensor<?x?xf32>, i1
}

//===--------------------------------------------------------------------===//
// gptq.act_order, gptq.permute, gptq.mask_dead_inputs
//===--------------------------------------------------------------------===//

// Stable descending argsort of diag(H), dead entries counted as 1.
func.func private @__gptq_act_order(%h: tensor<?x?xf32>) -> tensor<?xi64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %z64 = arith.constant 0 : i64
  %n = tensor.dim %h, %c0 : tensor<?x?xf32>
  %de = tensor.empty(%n) : tensor<?xf32>
  %d = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]} outs(%de : tensor<?xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %v = tensor.extract %h[%i, %i] : tensor<?x?xf32>
    %dead = arith.cmpf oeq, %v, %zero : f32
    %w = arith.select %dead, %one, %v : f32
    linalg.yield %w : f32
  } -> tensor<?xf32>
  // rank[j] = #{i : d[i] > d[j]} + #{i < j : d[i] == d[j]}, for blocks of
  // 64 columns j in parallel.
  %chunk = func.call @__gptq_chunk_columns() : () -> index
  %re = tensor.empty(%n) : tensor<?xi64>
  %nb = arith.ceildivsi %n, %chunk : index
  %rank = scf.forall (%b) in (%nb) shared_outs(%ro = %re) -> (tensor<?xi64>) {
    %j0 = arith.muli %b, %chunk : index
    %jleft = arith.subi %n, %j0 : index
    %jn = arith.minsi %jleft, %chunk : index
    %dj = tensor.extract_slice %d[%j0] [%jn] [1] : tensor<?xf32> to tensor<?xf32>
    %rs = tensor.extract_slice %ro[%j0] [%jn] [1] : tensor<?xi64> to tensor<?xi64>
    %rz = linalg.fill ins(%z64 : i64) outs(%rs : tensor<?xi64>) -> tensor<?xi64>
    %rk = linalg.generic {indexing_maps = [#row, #col, #row], iterator_types = ["parallel", "reduction"]}
        ins(%dj, %d : tensor<?xf32>, tensor<?xf32>) outs(%rz : tensor<?xi64>) {
    ^bb0(%vj: f32, %vi: f32, %acc: i64):
      %jl = linalg.index 0 : index
      %j = arith.addi %jl, %j0 : index
      %i = linalg.index 1 : index
      %gt = arith.cmpf ogt, %vi, %vj : f32
      %eq = arith.cmpf oeq, %vi, %vj : f32
      %before = arith.cmpi ult, %i, %j : index
      %tie = arith.andi %eq, %before : i1
      %in = arith.ori %gt, %tie : i1
      %inc = arith.extui %in : i1 to i64
      %a = arith.addi %acc, %inc : i64
      linalg.yield %a : i64
    } -> tensor<?xi64>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %rk into %ro[%j0] [%jn] [1] : tensor<?xi64> into tensor<?xi64>
    }
  }
  %pe = tensor.empty(%n) : tensor<?xi64>
  %perm = scf.for %j = %c0 to %n step %c1 iter_args(%p = %pe) -> (tensor<?xi64>) {
    %r = tensor.extract %rank[%j] : tensor<?xi64>
    %ri = arith.index_cast %r : i64 to index
    %jv = arith.index_cast %j : index to i64
    %p1 = tensor.insert %jv into %p[%ri] : tensor<?xi64>
    scf.yield %p1 : tensor<?xi64>
  }
  return %perm : tensor<?xi64>
}

// inv[perm[j]] = j.
func.func private @__gptq_invert_permutation(%perm: tensor<?xi64>) -> tensor<?xi64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %perm, %c0 : tensor<?xi64>
  %e = tensor.empty(%n) : tensor<?xi64>
  %inv = scf.for %j = %c0 to %n step %c1 iter_args(%p = %e) -> (tensor<?xi64>) {
    %r = tensor.extract %perm[%j] : tensor<?xi64>
    %ri = arith.index_cast %r : i64 to index
    %jv = arith.index_cast %j : index to i64
    %p1 = tensor.insert %jv into %p[%ri] : tensor<?xi64>
    scf.yield %p1 : tensor<?xi64>
  }
  return %inv : tensor<?xi64>
}

// W[:, i] = 0 where H[i, i] == 0; blocks of 32 rows in parallel.
func.func private @__gptq_mask_dead_inputs(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %chunk = func.call @__gptq_chunk_rows() : () -> index
  %zero = arith.constant 0.0 : f32
  %r = tensor.dim %w, %c0 : tensor<?x?xf32>
  %c = tensor.dim %w, %c1 : tensor<?x?xf32>
  %de = tensor.empty(%c) : tensor<?xf32>
  %diag = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]} outs(%de : tensor<?xf32>) {
  ^bb0(%o: f32):
    %j = linalg.index 0 : index
    %d = tensor.extract %h[%j, %j] : tensor<?x?xf32>
    linalg.yield %d : f32
  } -> tensor<?xf32>
  %e = tensor.empty(%r, %c) : tensor<?x?xf32>
  %nrb = arith.ceildivsi %r, %chunk : index
  %m = scf.forall (%rb) in (%nrb) shared_outs(%o = %e) -> (tensor<?x?xf32>) {
    %r0 = arith.muli %rb, %chunk : index
    %rleft = arith.subi %r, %r0 : index
    %rn = arith.minsi %rleft, %chunk : index
    %src = tensor.extract_slice %w[%r0, 0] [%rn, %c] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %dst = tensor.extract_slice %o[%r0, 0] [%rn, %c] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %blk = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%src, %diag : tensor<?x?xf32>, tensor<?xf32>) outs(%dst : tensor<?x?xf32>) {
    ^bb0(%v: f32, %d: f32, %out: f32):
      %dead = arith.cmpf oeq, %d, %zero : f32
      %x = arith.select %dead, %zero, %v : f32
      linalg.yield %x : f32
    } -> tensor<?x?xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %blk into %o[%r0, 0] [%rn, %c] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
    }
  }
  return %m : tensor<?x?xf32>
}

// Gathers of a matrix: result[i, j] = src[rows[i], cols[j]], each index map
// applied only where its flag is set; blocks of 32 rows in parallel.
func.func private @__gptq_gather_f32(%src: tensor<?x?xf32>, %rows: tensor<?xi64>, %cols: tensor<?xi64>, %userows: i1, %usecols: i1) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %chunk = func.call @__gptq_chunk_rows() : () -> index
  %m = tensor.dim %src, %c0 : tensor<?x?xf32>
  %n = tensor.dim %src, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%m, %n) : tensor<?x?xf32>
  %nrb = arith.ceildivsi %m, %chunk : index
  %g = scf.forall (%rb) in (%nrb) shared_outs(%o = %e) -> (tensor<?x?xf32>) {
    %r0 = arith.muli %rb, %chunk : index
    %rleft = arith.subi %m, %r0 : index
    %rn = arith.minsi %rleft, %chunk : index
    %dst = tensor.extract_slice %o[%r0, 0] [%rn, %n] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %blk = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%dst : tensor<?x?xf32>) {
    ^bb0(%out: f32):
      %il = linalg.index 0 : index
      %i = arith.addi %il, %r0 : index
      %j = linalg.index 1 : index
      %si = scf.if %userows -> (index) {
        %p = tensor.extract %rows[%i] : tensor<?xi64>
        %pi = arith.index_cast %p : i64 to index
        scf.yield %pi : index
      } else {
        scf.yield %i : index
      }
      %sj = scf.if %usecols -> (index) {
        %p = tensor.extract %cols[%j] : tensor<?xi64>
        %pj = arith.index_cast %p : i64 to index
        scf.yield %pj : index
      } else {
        scf.yield %j : index
      }
      %v = tensor.extract %src[%si, %sj] : tensor<?x?xf32>
      linalg.yield %v : f32
    } -> tensor<?x?xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %blk into %o[%r0, 0] [%rn, %n] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
    }
  }
  return %g : tensor<?x?xf32>
}

// The same for codes.
func.func private @__gptq_gather_i8(%src: tensor<?x?xi8>, %rows: tensor<?xi64>, %cols: tensor<?xi64>, %userows: i1, %usecols: i1) -> tensor<?x?xi8> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %chunk = func.call @__gptq_chunk_rows() : () -> index
  %m = tensor.dim %src, %c0 : tensor<?x?xi8>
  %n = tensor.dim %src, %c1 : tensor<?x?xi8>
  %e = tensor.empty(%m, %n) : tensor<?x?xi8>
  %nrb = arith.ceildivsi %m, %chunk : index
  %g = scf.forall (%rb) in (%nrb) shared_outs(%o = %e) -> (tensor<?x?xi8>) {
    %r0 = arith.muli %rb, %chunk : index
    %rleft = arith.subi %m, %r0 : index
    %rn = arith.minsi %rleft, %chunk : index
    %dst = tensor.extract_slice %o[%r0, 0] [%rn, %n] [1, 1] : tensor<?x?xi8> to tensor<?x?xi8>
    %blk = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%dst : tensor<?x?xi8>) {
    ^bb0(%out: i8):
      %il = linalg.index 0 : index
      %i = arith.addi %il, %r0 : index
      %j = linalg.index 1 : index
      %si = scf.if %userows -> (index) {
        %p = tensor.extract %rows[%i] : tensor<?xi64>
        %pi = arith.index_cast %p : i64 to index
        scf.yield %pi : index
      } else {
        scf.yield %i : index
      }
      %sj = scf.if %usecols -> (index) {
        %p = tensor.extract %cols[%j] : tensor<?xi64>
        %pj = arith.index_cast %p : i64 to index
        scf.yield %pj : index
      } else {
        scf.yield %j : index
      }
      %v = tensor.extract %src[%si, %sj] : tensor<?x?xi8>
      linalg.yield %v : i8
    } -> tensor<?x?xi8>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %blk into %o[%r0, 0] [%rn, %n] [1, 1] : tensor<?x?xi8> into tensor<?x?xi8>
    }
  }
  return %g : tensor<?x?xi8>
}

//===--------------------------------------------------------------------===//
// Grids
//===--------------------------------------------------------------------===//

// The min-max grid of a range [lo, hi] (the reference's find_params after
// its min and max): the range made symmetric with %sym, a zero range
// widened to [-1, 1]; returns scale, zero and the adjusted lo, hi.
func.func private @__gptq_range_grid(%lo: f32, %hi: f32, %maxq: f32, %sym: i1) -> (f32, f32, f32, f32) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %mone = arith.constant -1.0 : f32
  %alo = math.absf %lo : f32
  %shi = arith.maximumf %alo, %hi : f32
  %neg = arith.cmpf olt, %lo, %zero : f32
  %nshi = arith.negf %shi : f32
  %slo = arith.select %neg, %nshi, %lo : f32
  %hi1 = arith.select %sym, %shi, %hi : f32
  %lo1 = arith.select %sym, %slo, %lo : f32
  %lz = arith.cmpf oeq, %lo1, %zero : f32
  %hz = arith.cmpf oeq, %hi1, %zero : f32
  %both = arith.andi %lz, %hz : i1
  %lo2 = arith.select %both, %mone, %lo1 : f32
  %hi2 = arith.select %both, %one, %hi1 : f32
  %g:2 = func.call @__gptq_grid_of(%lo2, %hi2, %maxq, %sym) : (f32, f32, f32, i1) -> (f32, f32)
  return %g#0, %g#1, %lo2, %hi2 : f32, f32, f32, f32
}

// The grid of step %i of the MSE search: the range [lo, hi] shrunk by
// 1 - i / grid.
func.func private @__gptq_shrunk_grid(%lo: f32, %hi: f32, %i: index, %grid: f64, %maxq: f32, %sym: i1) -> (f32, f32) {
  %oned = arith.constant 1.0 : f64
  %ii = arith.index_cast %i : index to i64
  %if = arith.sitofp %ii : i64 to f64
  %frac = arith.divf %if, %grid : f64
  %pd = arith.subf %oned, %frac : f64
  %p = arith.truncf %pd : f64 to f32
  %lo1 = arith.mulf %p, %lo : f32
  %hi1 = arith.mulf %p, %hi : f32
  %g:2 = func.call @__gptq_grid_of(%lo1, %hi1, %maxq, %sym) : (f32, f32, f32, i1) -> (f32, f32)
  return %g#0, %g#1 : f32, f32
}

// Scale and zero of the grid over [lo, hi]; with %sym, the zero is the
// middle code.
func.func private @__gptq_grid_of(%lo: f32, %hi: f32, %maxq: f32, %sym: i1) -> (f32, f32) {
  %one = arith.constant 1.0 : f32
  %half = arith.constant 0.5 : f32
  %symzero0 = arith.addf %maxq, %one : f32
  %symzero = arith.mulf %symzero0, %half : f32
  %rng = arith.subf %hi, %lo : f32
  %scale = arith.divf %rng, %maxq : f32
  %nlo = arith.negf %lo : f32
  %zq = arith.divf %nlo, %scale : f32
  %za = math.roundeven %zq : f32
  %zero1 = arith.select %sym, %symzero, %za : f32
  return %scale, %zero1 : f32, f32
}

// |quantize(v) - v|^norm on the grid (s, z).
func.func private @__gptq_grid_error(%v: f32, %s: f32, %zz: f32, %maxq: f32, %norm: f32) -> f32 {
  %zero = arith.constant 0.0 : f32
  %t = arith.divf %v, %s : f32
  %rt = math.roundeven %t : f32
  %q0 = arith.addf %rt, %zz : f32
  %q1 = arith.maximumf %q0, %zero : f32
  %q2 = arith.minimumf %q1, %maxq : f32
  %q3 = arith.subf %q2, %zz : f32
  %q = arith.mulf %s, %q3 : f32
  %d = arith.subf %q, %v : f32
  %ad = math.absf %d : f32
  %pw = math.powf %ad, %norm : f32
  return %pw : f32
}

// The reference's find_params on every weight row, given transposed: %xt
// is L x R (a group of L columns of R rows). Returns (scale, zero) per row.
func.func private @__gptq_find_params(%xt: tensor<?x?xf32>, %maxq: f32, %sym: i1, %mse: i1, %norm: f32, %steps: index, %grid: f64) -> (tensor<?xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %inf = arith.constant 0x7F800000 : f32
  %r = tensor.dim %xt, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%r) : tensor<?xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  // The reduction over the group's columns is the outer loop, so that the
  // inner loop runs along contiguous rows of %xt (and vectorizes).
  %mm:2 = linalg.generic {indexing_maps = [#id2, #col, #col], iterator_types = ["reduction", "parallel"]}
      ins(%xt : tensor<?x?xf32>) outs(%z, %z : tensor<?xf32>, tensor<?xf32>) {
  ^bb0(%v: f32, %lo: f32, %hi: f32):
    %lo1 = arith.minimumf %lo, %v : f32
    %hi1 = arith.maximumf %hi, %v : f32
    linalg.yield %lo1, %hi1 : f32, f32
  } -> (tensor<?xf32>, tensor<?xf32>)
  // Adjusted range, then scale and zero of the min-max grid.
  %g:4 = linalg.generic {indexing_maps = [#id1, #id1, #id1, #id1, #id1, #id1], iterator_types = ["parallel"]}
      ins(%mm#0, %mm#1 : tensor<?xf32>, tensor<?xf32>) outs(%e, %e, %e, %e : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
  ^bb0(%lo: f32, %hi: f32, %o0: f32, %o1: f32, %o2: f32, %o3: f32):
    %rg:4 = func.call @__gptq_range_grid(%lo, %hi, %maxq, %sym) : (f32, f32, f32, i1) -> (f32, f32, f32, f32)
    linalg.yield %rg#0, %rg#1, %rg#2, %rg#3 : f32, f32, f32, f32
  } -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>)
  %res:2 = scf.if %mse -> (tensor<?xf32>, tensor<?xf32>) {
    %binit = linalg.fill ins(%inf : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
    %best:3 = scf.for %i = %c0 to %steps step %c1 iter_args(%bs = %g#0, %bz = %g#1, %be = %binit) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
      %cand:2 = linalg.generic {indexing_maps = [#id1, #id1, #id1, #id1], iterator_types = ["parallel"]}
          ins(%g#2, %g#3 : tensor<?xf32>, tensor<?xf32>) outs(%e, %e : tensor<?xf32>, tensor<?xf32>) {
      ^bb0(%lo: f32, %hi: f32, %o0: f32, %o1: f32):
        %sg:2 = func.call @__gptq_shrunk_grid(%lo, %hi, %i, %grid, %maxq, %sym) : (f32, f32, index, f64, f32, i1) -> (f32, f32)
        linalg.yield %sg#0, %sg#1 : f32, f32
      } -> (tensor<?xf32>, tensor<?xf32>)
      %err = linalg.generic {indexing_maps = [#id2, #col, #col, #col], iterator_types = ["reduction", "parallel"]}
          ins(%xt, %cand#0, %cand#1 : tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>) outs(%z : tensor<?xf32>) {
      ^bb0(%v: f32, %s: f32, %zz: f32, %acc: f32):
        %pw = func.call @__gptq_grid_error(%v, %s, %zz, %maxq, %norm) : (f32, f32, f32, f32, f32) -> f32
        %a = arith.addf %acc, %pw : f32
        linalg.yield %a : f32
      } -> tensor<?xf32>
      %upd:3 = linalg.generic {indexing_maps = [#id1, #id1, #id1, #id1, #id1, #id1], iterator_types = ["parallel"]}
          ins(%err, %cand#0, %cand#1 : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>)
          outs(%bs, %bz, %be : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
      ^bb0(%er: f32, %cs: f32, %cz: f32, %os: f32, %oz: f32, %b: f32):
        %better = arith.cmpf olt, %er, %b : f32
        %ns = arith.select %better, %cs, %os : f32
        %nz = arith.select %better, %cz, %oz : f32
        %nb = arith.select %better, %er, %b : f32
        linalg.yield %ns, %nz, %nb : f32, f32, f32
      } -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>)
      scf.yield %upd#0, %upd#1, %upd#2 : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
    }
    scf.yield %best#0, %best#1 : tensor<?xf32>, tensor<?xf32>
  } else {
    scf.yield %g#0, %g#1 : tensor<?xf32>, tensor<?xf32>
  }
  return %res#0, %res#1 : tensor<?xf32>, tensor<?xf32>
}

// find_params of one row, column %row of %xt (L x R), in scalars: the same
// operations in the same order as __gptq_find_params, without temporaries
// (for a row's own task, as in a GPU thread).
func.func private @__gptq_row_params(%xt: tensor<?x?xf32>, %row: index, %maxq: f32, %sym: i1, %mse: i1, %norm: f32, %steps: index, %grid: f64) -> (f32, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %inf = arith.constant 0x7F800000 : f32
  %l = tensor.dim %xt, %c0 : tensor<?x?xf32>
  %mm:2 = scf.for %j = %c0 to %l step %c1 iter_args(%lo = %zero, %hi = %zero) -> (f32, f32) {
    %v = tensor.extract %xt[%j, %row] : tensor<?x?xf32>
    %lo1 = arith.minimumf %lo, %v : f32
    %hi1 = arith.maximumf %hi, %v : f32
    scf.yield %lo1, %hi1 : f32, f32
  }
  %g:4 = func.call @__gptq_range_grid(%mm#0, %mm#1, %maxq, %sym) : (f32, f32, f32, i1) -> (f32, f32, f32, f32)
  %res:2 = scf.if %mse -> (f32, f32) {
    %best:3 = scf.for %i = %c0 to %steps step %c1 iter_args(%bs = %g#0, %bz = %g#1, %be = %inf) -> (f32, f32, f32) {
      %cand:2 = func.call @__gptq_shrunk_grid(%g#2, %g#3, %i, %grid, %maxq, %sym) : (f32, f32, index, f64, f32, i1) -> (f32, f32)
      %err = scf.for %j = %c0 to %l step %c1 iter_args(%acc = %zero) -> (f32) {
        %v = tensor.extract %xt[%j, %row] : tensor<?x?xf32>
        %pw = func.call @__gptq_grid_error(%v, %cand#0, %cand#1, %maxq, %norm) : (f32, f32, f32, f32, f32) -> f32
        %a = arith.addf %acc, %pw : f32
        scf.yield %a : f32
      }
      %better = arith.cmpf olt, %err, %be : f32
      %ns = arith.select %better, %cand#0, %bs : f32
      %nz = arith.select %better, %cand#1, %bz : f32
      %nb = arith.select %better, %err, %be : f32
      scf.yield %ns, %nz, %nb : f32, f32, f32
    }
    scf.yield %best#0, %best#1 : f32, f32
  } else {
    scf.yield %g#0, %g#1 : f32, f32
  }
  return %res#0, %res#1 : f32, f32
}

// Grids of every (row, group) of w; groups of gs columns (the last may be
// short). Returns rows x groups scales and zeros.
func.func private @__gptq_grid(%w: tensor<?x?xf32>, %gs: index, %maxq: f32, %sym: i1, %mse: i1, %norm: f32, %steps: index, %grid: f64) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = tensor.dim %w, %c0 : tensor<?x?xf32>
  %c = tensor.dim %w, %c1 : tensor<?x?xf32>
  %ng = arith.ceildivsi %c, %gs : index
  %wt = func.call @__gptq_transpose(%w) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %e = tensor.empty(%ng, %r) : tensor<?x?xf32>
  %res:2 = scf.for %g = %c0 to %ng step %c1 iter_args(%s = %e, %z = %e) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
    %start = arith.muli %g, %gs : index
    %left = arith.subi %c, %start : index
    %len = arith.minsi %gs, %left : index
    %slice = tensor.extract_slice %wt[%start, 0] [%len, %r] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %sv, %zv = func.call @__gptq_find_params(%slice, %maxq, %sym, %mse, %norm, %steps, %grid) : (tensor<?x?xf32>, f32, i1, i1, f32, index, f64) -> (tensor<?xf32>, tensor<?xf32>)
    %s1 = tensor.insert_slice %sv into %s[%g, 0] [1, %r] [1, 1] : tensor<?xf32> into tensor<?x?xf32>
    %z1 = tensor.insert_slice %zv into %z[%g, 0] [1, %r] [1, 1] : tensor<?xf32> into tensor<?x?xf32>
    scf.yield %s1, %z1 : tensor<?x?xf32>, tensor<?x?xf32>
  }
  %st = func.call @__gptq_transpose(%res#0) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %zt = func.call @__gptq_transpose(%res#1) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  return %st, %zt : tensor<?x?xf32>, tensor<?x?xf32>
}

//===--------------------------------------------------------------------===//
// gptq.quantize_blocks
//===--------------------------------------------------------------------===//

// The column loop of a block on a chunk of rows (W1 = the block's columns
// of W^T for those rows, %cnt x %rc, sizes given as the callers computed
// them, which the CPU schedule's vector sizes are derived from): each
// column quantized with its group's grid (rows %roff.. of %sb, %zb), its
// error divided by U's diagonal, and the block's later columns compensated. Returns W1, the errors, the codes
// and the loss per row. The column loop is marked gptq.long_iterations:
// each task that runs it runs long, and the GPU schedule spreads such
// tasks over the chip in small blocks.
func.func private @__gptq_block_columns(%w1init: tensor<?x?xf32>, %err0: tensor<?x?xf32>, %cd0: tensor<?x?xi8>, %l0: tensor<?xf64>, %ublk: tensor<?x?xf32>, %sb: tensor<?x?xf32>, %zb: tensor<?x?xf32>, %roff: index, %gmap: tensor<?xi32>, %fixed: i1, %gs: index, %i1: index, %maxq: f32, %cnt: index, %rc: index) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xi8>, tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %halfd = arith.constant 0.5 : f64
  %in:4 = scf.for %i = %c0 to %cnt step %c1 iter_args(%w1 = %w1init, %errc = %err0, %cdc = %cd0, %lc = %l0) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xi8>, tensor<?xf64>) {
    %col = arith.addi %i1, %i : index
    %g = scf.if %fixed -> (index) {
      %gv = tensor.extract %gmap[%col] : tensor<?xi32>
      %gvi = arith.index_cast %gv : i32 to index
      scf.yield %gvi : index
    } else {
      %gi = arith.divsi %col, %gs : index
      scf.yield %gi : index
    }
    %srow = tensor.extract_slice %sb[%g, %roff] [1, %rc] [1, 1] : tensor<?x?xf32> to tensor<?xf32>
    %zrow = tensor.extract_slice %zb[%g, %roff] [1, %rc] [1, 1] : tensor<?x?xf32> to tensor<?xf32>
    %wrow = tensor.extract_slice %w1[%i, 0] [1, %rc] [1, 1] : tensor<?x?xf32> to tensor<?xf32>
    %crow0 = tensor.extract_slice %cdc[%i, 0] [1, %rc] [1, 1] : tensor<?x?xi8> to tensor<?xi8>
    %erow0 = tensor.extract_slice %errc[%i, 0] [1, %rc] [1, 1] : tensor<?x?xf32> to tensor<?xf32>
    %d = tensor.extract %ublk[%i, %i] : tensor<?x?xf32>
    %dd = arith.mulf %d, %d : f32
    %q:3 = linalg.generic {indexing_maps = [#id1, #id1, #id1, #id1, #id1, #id1], iterator_types = ["parallel"]}
        ins(%wrow, %srow, %zrow : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) outs(%crow0, %erow0, %lc : tensor<?xi8>, tensor<?xf32>, tensor<?xf64>) {
    ^bb0(%v: f32, %sc: f32, %zp: f32, %o0: i8, %o1: f32, %acc: f64):
      %t = arith.divf %v, %sc : f32
      %rt = math.roundeven %t : f32
      %q0 = arith.addf %rt, %zp : f32
      %q1 = arith.maximumf %q0, %zero : f32
      %q2 = arith.minimumf %q1, %maxq : f32
      %code = arith.fptoui %q2 : f32 to i8
      %q3 = arith.subf %q2, %zp : f32
      %deq = arith.mulf %sc, %q3 : f32
      %diff = arith.subf %v, %deq : f32
      %errv = arith.divf %diff, %d : f32
      %sq = arith.mulf %diff, %diff : f32
      %lv = arith.divf %sq, %dd : f32
      %lvd = arith.extf %lv : f32 to f64
      %lh = arith.mulf %lvd, %halfd : f64
      %acc1 = arith.addf %acc, %lh : f64
      linalg.yield %code, %errv, %acc1 : i8, f32, f64
    } -> (tensor<?xi8>, tensor<?xf32>, tensor<?xf64>)
    %cdc1 = tensor.insert_slice %q#0 into %cdc[%i, 0] [1, %rc] [1, 1] : tensor<?xi8> into tensor<?x?xi8>
    %errc1 = tensor.insert_slice %q#1 into %errc[%i, 0] [1, %rc] [1, 1] : tensor<?xf32> into tensor<?x?xf32>
    // W1[:, i:] -= err (outer) U[col, i1+i : i2], on the transposed block.
    %rest = arith.subi %cnt, %i : index
    %urow = tensor.extract_slice %ublk[%i, %i] [1, %rest] [1, 1] : tensor<?x?xf32> to tensor<?xf32>
    %w1tail = tensor.extract_slice %w1[%i, 0] [%rest, %rc] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %w1upd = linalg.generic {indexing_maps = [#row, #col, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%urow, %q#1 : tensor<?xf32>, tensor<?xf32>) outs(%w1tail : tensor<?x?xf32>) {
    ^bb0(%uv: f32, %ev: f32, %o: f32):
      %p = arith.mulf %ev, %uv : f32
      %nv = arith.subf %o, %p : f32
      linalg.yield %nv : f32
    } -> tensor<?x?xf32>
    %w1n = tensor.insert_slice %w1upd into %w1[%i, 0] [%rest, %rc] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
    scf.yield %w1n, %errc1, %cdc1, %q#2 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xi8>, tensor<?xf64>
  } {gptq.long_iterations}
  return %in#0, %in#1, %in#2, %in#3 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xi8>, tensor<?xf64>
}

// The reference's order: each block's column loop in chunks of rows, then
// the lazy batch update W[:, i2:] -= Err1 U[i1:i2, i2:], the kernel's
// W^T[i2:, :] -= U[i1:i2, i2:]^T Err1^T with U's block as the transposed
// left operand. Returns the codes (transposed), the grids (transposed) and
// the loss per row.
func.func private @__gptq_quantize_right_looking(%wt0: tensor<?x?xf32>, %codes0: tensor<?x?xi8>, %s0: tensor<?x?xf32>, %z0: tensor<?x?xf32>, %loss0: tensor<?xf64>, %u: tensor<?x?xf32>, %gmap: tensor<?xi32>, %fixed: i1, %gs: index, %bsz: index, %maxq: f32, %sym: i1, %mse: i1, %norm: f32, %steps: index, %grid: f64) -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %true = arith.constant true
  %false = arith.constant false
  %r = tensor.dim %wt0, %c1 : tensor<?x?xf32>
  %c = tensor.dim %wt0, %c0 : tensor<?x?xf32>
  %chunk = func.call @__gptq_chunk_quantize() : () -> index
  %nch = arith.ceildivsi %r, %chunk : index
  %notfixed = arith.xori %fixed, %true : i1
  %out:5 = scf.for %i1 = %c0 to %c step %bsz iter_args(%wo = %wt0, %codes = %codes0, %sg = %s0, %zg = %z0, %loss = %loss0) -> (tensor<?x?xf32>, tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf64>) {
    %left = arith.subi %c, %i1 : index
    %cnt = arith.minsi %bsz, %left : index
    %i2 = arith.addi %i1, %cnt : index
    // The grids of the groups that start in this block, from the outer W
    // as the block begins: the reference computes each at its group's
    // first column from W, which the block's own updates (made on its copy
    // W1) have not touched. Every row at once, before the column loop, as
    // the schedule splits them (__gptq_group_grid).
    %sb, %zb = scf.if %notfixed -> (tensor<?x?xf32>, tensor<?x?xf32>) {
      %gfirst0 = arith.ceildivsi %i1, %gs : index
      %gfirst = arith.muli %gfirst0, %gs : index
      %gr:2 = scf.for %col = %gfirst to %i2 step %gs iter_args(%sgi = %sg, %zgi = %zg) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
        %gi = arith.divsi %col, %gs : index
        %gleft = arith.subi %c, %col : index
        %glen = arith.minsi %gs, %gleft : index
        %slice = tensor.extract_slice %wo[%col, 0] [%glen, %r] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
        %sv, %zv = func.call @__gptq_group_grid(%slice, %maxq, %sym, %mse, %norm, %steps, %grid) : (tensor<?x?xf32>, f32, i1, i1, f32, index, f64) -> (tensor<?xf32>, tensor<?xf32>)
        %sn = tensor.insert_slice %sv into %sgi[%gi, 0] [1, %r] [1, 1] : tensor<?xf32> into tensor<?x?xf32>
        %zn = tensor.insert_slice %zv into %zgi[%gi, 0] [1, %r] [1, 1] : tensor<?xf32> into tensor<?x?xf32>
        scf.yield %sn, %zn : tensor<?x?xf32>, tensor<?x?xf32>
      }
      scf.yield %gr#0, %gr#1 : tensor<?x?xf32>, tensor<?x?xf32>
    } else {
      scf.yield %sg, %zg : tensor<?x?xf32>, tensor<?x?xf32>
    }
    %erre = tensor.empty(%cnt, %r) : tensor<?x?xf32>
    // U's block, which every task reads whole: a target may keep it close
    // to its threads (the GPU pipeline stages it in shared memory).
    %ublk = tensor.extract_slice %u[%i1, %i1] [%cnt, %cnt] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    // W1, the block's columns of W that the column loop updates, is the
    // schedule's choice (__gptq_block_rows): a compact copy of the chunk's
    // part, or that part of W itself, updated in place. Either way it goes
    // back into W, where nothing reads it again (the grids were taken
    // above, the lazy batch update reads the columns after the block).
    %blk:4 = scf.forall (%ch) in (%nch) shared_outs(%err = %erre, %cd = %codes, %wv = %wo, %ls = %loss) -> (tensor<?x?xf32>, tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xf64>) {
      %r0 = arith.muli %ch, %chunk : index
      %rleft = arith.subi %r, %r0 : index
      %rc = arith.minsi %rleft, %chunk : index
      %w1init = func.call @__gptq_block_rows(%wv, %i1, %r0, %cnt, %rc) : (tensor<?x?xf32>, index, index, index, index) -> tensor<?x?xf32>
      %errc0 = tensor.extract_slice %err[0, %r0] [%cnt, %rc] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %cdc0 = tensor.extract_slice %cd[%i1, %r0] [%cnt, %rc] [1, 1] : tensor<?x?xi8> to tensor<?x?xi8>
      %lc0 = tensor.extract_slice %ls[%r0] [%rc] [1] : tensor<?xf64> to tensor<?xf64>
      %in:4 = func.call @__gptq_block_columns(%w1init, %errc0, %cdc0, %lc0, %ublk, %sb, %zb, %r0, %gmap, %fixed, %gs, %i1, %maxq, %cnt, %rc) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xi8>, tensor<?xf64>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, index, tensor<?xi32>, i1, index, index, f32, index, index) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xi8>, tensor<?xf64>)
      scf.forall.in_parallel {
        tensor.parallel_insert_slice %in#1 into %err[0, %r0] [%cnt, %rc] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
        tensor.parallel_insert_slice %in#2 into %cd[%i1, %r0] [%cnt, %rc] [1, 1] : tensor<?x?xi8> into tensor<?x?xi8>
        tensor.parallel_insert_slice %in#0 into %wv[%i1, %r0] [%cnt, %rc] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
        tensor.parallel_insert_slice %in#3 into %ls[%r0] [%rc] [1] : tensor<?xf64> into tensor<?xf64>
      }
    }
    // Lazy batch update: W[:, i2:] -= Err1 @ U[i1:i2, i2:].
    %rest = arith.subi %c, %i2 : index
    %haverest = arith.cmpi sgt, %rest, %c0 : index
    %wn = scf.if %haverest -> (tensor<?x?xf32>) {
      %wt = tensor.extract_slice %blk#2[%i2, 0] [%rest, %r] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %ub = tensor.extract_slice %u[%i1, %i2] [%cnt, %rest] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %wt2 = func.call @__gptq_gemm_sub(%wt, %ub, %blk#0, %false, %false, %false, %false) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, i1, i1, i1, i1) -> tensor<?x?xf32>
      %wn1 = tensor.insert_slice %wt2 into %blk#2[%i2, 0] [%rest, %r] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
      scf.yield %wn1 : tensor<?x?xf32>
    } else {
      scf.yield %blk#2 : tensor<?x?xf32>
    }
    scf.yield %wn, %blk#1, %sb, %zb, %blk#3 : tensor<?x?xf32>, tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf64>
  }
  return %out#1, %out#2, %out#3, %out#4 : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf64>
}

// The same operations in another order: rows of W are independent once U
// is known, so the loop over chunks of rows is outermost (one parallel
// loop for the whole layer: on a GPU, one kernel), and each chunk runs
// every block in turn. A block's columns are first given the errors of
// every earlier column, then their grids are taken and the column loop
// runs; no product spans chunks. The chunk keeps the errors of all its
// columns (E^T, cols x rows). Each weight receives the products of the
// earlier columns' errors in increasing column order, as in the
// reference's order.
//
// A group's grid reads its columns as they are when the block where it
// starts begins. Where a group reaches past that block (a group size above
// the block size, or not dividing it), those columns are brought up to the
// block's start too, and later blocks continue from there: columns
// [i1, %dend) have received the errors of the columns below %dk, the later
// ones none.
func.func private @__gptq_quantize_left_looking(%wt0: tensor<?x?xf32>, %codes0: tensor<?x?xi8>, %s0: tensor<?x?xf32>, %z0: tensor<?x?xf32>, %loss0: tensor<?xf64>, %u: tensor<?x?xf32>, %gmap: tensor<?xi32>, %fixed: i1, %gs: index, %bsz: index, %maxq: f32, %sym: i1, %mse: i1, %norm: f32, %steps: index, %grid: f64) -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %true = arith.constant true
  %false = arith.constant false
  %r = tensor.dim %wt0, %c1 : tensor<?x?xf32>
  %c = tensor.dim %wt0, %c0 : tensor<?x?xf32>
  %ng = tensor.dim %s0, %c0 : tensor<?x?xf32>
  %chunk = func.call @__gptq_chunk_quantize() : () -> index
  %nch = arith.ceildivsi %r, %chunk : index
  %notfixed = arith.xori %fixed, %true : i1
  %et0 = tensor.empty(%c, %r) : tensor<?x?xf32>
  // W^T and E^T are worked on in place and never read after the loop: a
  // loop of one trip (step %c, which canonicalization does not fold away)
  // carries them, so that they stay outputs of the parallel loop. Unused,
  // they would be dropped from it, and each task would copy its part (on a
  // GPU, an allocation inside the kernel).
  %once:6 = scf.for %trip = %c0 to %c step %c iter_args(%codesi = %codes0, %wti = %wt0, %lossi = %loss0, %si = %s0, %zi = %z0, %eti = %et0) -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xf64>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
    %res:6 = scf.forall (%ch) in (%nch) shared_outs(%cd = %codesi, %wv = %wti, %ls = %lossi, %sgo = %si, %zgo = %zi, %ev = %eti) -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xf64>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
      %r0 = arith.muli %ch, %chunk : index
      %rleft = arith.subi %r, %r0 : index
      %rc = arith.minsi %rleft, %chunk : index
      // The chunk's columns of W^T, codes, loss, grids and errors.
      %wch = tensor.extract_slice %wv[0, %r0] [%c, %rc] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %cch = tensor.extract_slice %cd[0, %r0] [%c, %rc] [1, 1] : tensor<?x?xi8> to tensor<?x?xi8>
      %lch = tensor.extract_slice %ls[%r0] [%rc] [1] : tensor<?xf64> to tensor<?xf64>
      %sch = tensor.extract_slice %sgo[0, %r0] [%ng, %rc] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %zch = tensor.extract_slice %zgo[0, %r0] [%ng, %rc] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %ech = tensor.extract_slice %ev[0, %r0] [%c, %rc] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %out:8 = scf.for %i1 = %c0 to %c step %bsz iter_args(%wp = %wch, %cdc = %cch, %lsc = %lch, %sgc0 = %sch, %zgc0 = %zch, %epart = %ech, %dend = %c0, %dk = %c0) -> (tensor<?x?xf32>, tensor<?x?xi8>, tensor<?xf64>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index) {
        %left = arith.subi %c, %i1 : index
        %cnt = arith.minsi %bsz, %left : index
        %i2 = arith.addi %i1, %cnt : index
        // The end of the last group that starts in the block (i2 where none
        // does, or the grids are given).
        %last = arith.subi %i2, %c1 : index
        %lastg = arith.divsi %last, %gs : index
        %lasts = arith.muli %lastg, %gs : index
        %starts0 = arith.cmpi sge, %lasts, %i1 : index
        %starts = arith.andi %starts0, %notfixed : i1
        %gend0 = arith.addi %lasts, %gs : index
        %gend = arith.minsi %gend0, %c : index
        %gend1 = arith.select %starts, %gend, %i2 : index
        %ext = arith.maxsi %gend1, %i2 : index
        // Columns [i1, e) are brought up to the block's start: [i1, pe) from
        // the errors of columns dk .. i1 - 1, [pe, e) from all before i1.
        %e = arith.maxsi %ext, %dend : index
        %pe0 = arith.minsi %dend, %e : index
        %pe = arith.maxsi %pe0, %i1 : index
        %ncols = arith.subi %e, %i1 : index
        %npart = arith.subi %pe, %i1 : index
        %nfresh = arith.subi %e, %pe : index
        %nk = arith.subi %i1, %dk : index
        %ublk = tensor.extract_slice %u[%i1, %i1] [%cnt, %cnt] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
        %upart = tensor.extract_slice %u[%dk, %i1] [%nk, %npart] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
        %ufresh = tensor.extract_slice %u[0, %pe] [%i1, %nfresh] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
        // The errors of the columns before the block, and the columns that
        // the block brings up to date (in place).
        %eprev = tensor.extract_slice %epart[0, 0] [%i1, %rc] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
        %wp0 = tensor.extract_slice %wp[%i1, 0] [%ncols, %rc] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
        %ep = tensor.extract_slice %eprev[%dk, 0] [%nk, %rc] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
        %wa = tensor.extract_slice %wp0[0, 0] [%npart, %rc] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
        // W[j, r] -= sum over k of U[k, j] E[k, r], in increasing k: the
        // matrix kernel's own operations (the portable one's is not tiled
        // inside a parallel loop).
        %wa2 = func.call @__gptq_gemm_sub(%wa, %upart, %ep, %false, %false, %false, %false) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, i1, i1, i1, i1) -> tensor<?x?xf32>
        %wp1 = tensor.insert_slice %wa2 into %wp0[0, 0] [%npart, %rc] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
        %wb = tensor.extract_slice %wp1[%npart, 0] [%nfresh, %rc] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
        %wb2 = func.call @__gptq_gemm_sub(%wb, %ufresh, %eprev, %false, %false, %false, %false) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, i1, i1, i1, i1) -> tensor<?x?xf32>
        %wp2 = tensor.insert_slice %wb2 into %wp1[%npart, 0] [%nfresh, %rc] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
        // The grids of the groups that start in the block, row by row.
        %sgc, %zgc = scf.if %notfixed -> (tensor<?x?xf32>, tensor<?x?xf32>) {
          %gfirst0 = arith.ceildivsi %i1, %gs : index
          %gfirst = arith.muli %gfirst0, %gs : index
          %gr:2 = scf.for %col = %gfirst to %i2 step %gs iter_args(%sgi = %sgc0, %zgi = %zgc0) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
            %gi = arith.divsi %col, %gs : index
            %gleft = arith.subi %c, %col : index
            %glen = arith.minsi %gs, %gleft : index
            %off = arith.subi %col, %i1 : index
            %slice = tensor.extract_slice %wp2[%off, 0] [%glen, %rc] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
            %rows:2 = scf.for %row = %c0 to %rc step %c1 iter_args(%sr = %sgi, %zr = %zgi) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
              %sv, %zv = func.call @__gptq_row_params(%slice, %row, %maxq, %sym, %mse, %norm, %steps, %grid) : (tensor<?x?xf32>, index, f32, i1, i1, f32, index, f64) -> (f32, f32)
              %sr1 = tensor.insert %sv into %sr[%gi, %row] : tensor<?x?xf32>
              %zr1 = tensor.insert %zv into %zr[%gi, %row] : tensor<?x?xf32>
              scf.yield %sr1, %zr1 : tensor<?x?xf32>, tensor<?x?xf32>
            }
            scf.yield %rows#0, %rows#1 : tensor<?x?xf32>, tensor<?x?xf32>
          }
          scf.yield %gr#0, %gr#1 : tensor<?x?xf32>, tensor<?x?xf32>
        } else {
          scf.yield %sgc0, %zgc0 : tensor<?x?xf32>, tensor<?x?xf32>
        }
        %w1 = tensor.extract_slice %wp2[0, 0] [%cnt, %rc] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
        %cdc1 = tensor.extract_slice %cdc[%i1, 0] [%cnt, %rc] [1, 1] : tensor<?x?xi8> to tensor<?x?xi8>
        %eblk = tensor.extract_slice %epart[%i1, 0] [%cnt, %rc] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
        %in:4 = func.call @__gptq_block_columns(%w1, %eblk, %cdc1, %lsc, %ublk, %sgc, %zgc, %c0, %gmap, %fixed, %gs, %i1, %maxq, %cnt, %rc) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xi8>, tensor<?xf64>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, index, tensor<?xi32>, i1, index, index, f32, index, index) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xi8>, tensor<?xf64>)
        %wp3 = tensor.insert_slice %in#0 into %wp2[0, 0] [%cnt, %rc] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
        %wpn = tensor.insert_slice %wp3 into %wp[%i1, 0] [%ncols, %rc] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
        %epn = tensor.insert_slice %in#1 into %epart[%i1, 0] [%cnt, %rc] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
        %cdn = tensor.insert_slice %in#2 into %cdc[%i1, 0] [%cnt, %rc] [1, 1] : tensor<?x?xi8> into tensor<?x?xi8>
        // Columns [i2, e) have now received the errors of the columns below i1.
        scf.yield %wpn, %cdn, %in#3, %sgc, %zgc, %epn, %e, %i1 : tensor<?x?xf32>, tensor<?x?xi8>, tensor<?xf64>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index
      }
      scf.forall.in_parallel {
        tensor.parallel_insert_slice %out#1 into %cd[0, %r0] [%c, %rc] [1, 1] : tensor<?x?xi8> into tensor<?x?xi8>
        tensor.parallel_insert_slice %out#0 into %wv[0, %r0] [%c, %rc] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
        tensor.parallel_insert_slice %out#2 into %ls[%r0] [%rc] [1] : tensor<?xf64> into tensor<?xf64>
        tensor.parallel_insert_slice %out#3 into %sgo[0, %r0] [%ng, %rc] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
        tensor.parallel_insert_slice %out#4 into %zgo[0, %r0] [%ng, %rc] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
        tensor.parallel_insert_slice %out#5 into %ev[0, %r0] [%c, %rc] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
      }
    }
    scf.yield %res#0, %res#1, %res#2, %res#3, %res#4, %res#5 : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xf64>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
  }
  return %once#0, %once#3, %once#4, %once#2 : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf64>
}

// The blocked quantize-and-compensate loop. With %fixed, column c uses grid
// %gmap[c] of (%sin, %zin); otherwise grids of %gs columns are computed at
// group starts from the outer W of the current block.
//
// With %permw, the weight operand is W before the column permutation %perm
// (and with %usemask before masking the dead inputs of %hmask); with
// %permcodes the codes come back in the column order before %perm. These
// fold gptq.mask_dead_inputs and gptq.permute around the op into the passes
// that transpose W and the codes anyway.
//
// The loop works on W^T (cols x rows): a column of W, its error and its
// codes are contiguous rows. Rows of W are independent once U is known, so
// each block is processed in chunks of __gptq_chunk_quantize() rows of W
// (scf.forall). The kernel file chooses between two orders of the same
// operations (__gptq_left_looking): the reference's, each block's errors
// applied to every later column at the end of the block (a matrix product
// per block, __gptq_quantize_right_looking), or each block's columns first
// given every earlier column's error, each chunk of rows running all the
// blocks (__gptq_quantize_left_looking), so that the layer's loop is one
// parallel loop.
// Each weight receives the same products in the same order either way.
func.func private @__gptq_quantize_blocks(%w: tensor<?x?xf32>, %u: tensor<?x?xf32>, %sin: tensor<?x?xf32>, %zin: tensor<?x?xf32>, %gmap: tensor<?xi32>, %fixed: i1, %gs: index, %bsz: index, %maxq: f32, %sym: i1, %mse: i1, %norm: f32, %steps: index, %grid: f64, %perm: tensor<?xi64>, %permw: i1, %hmask: tensor<?x?xf32>, %usemask: i1, %permcodes: i1) -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %zerod = arith.constant 0.0 : f64
  %r = tensor.dim %w, %c0 : tensor<?x?xf32>
  %c = tensor.dim %w, %c1 : tensor<?x?xf32>
  %gather = arith.ori %permw, %usemask : i1
  %wt0 = scf.if %gather -> (tensor<?x?xf32>) {
    %g = func.call @__gptq_transpose_gather(%w, %perm, %permw, %hmask, %usemask) : (tensor<?x?xf32>, tensor<?xi64>, i1, tensor<?x?xf32>, i1) -> tensor<?x?xf32>
    scf.yield %g : tensor<?x?xf32>
  } else {
    %t = func.call @__gptq_transpose(%w) : (tensor<?x?xf32>) -> tensor<?x?xf32>
    scf.yield %t : tensor<?x?xf32>
  }
  %s0, %z0 = scf.if %fixed -> (tensor<?x?xf32>, tensor<?x?xf32>) {
    %st = func.call @__gptq_transpose(%sin) : (tensor<?x?xf32>) -> tensor<?x?xf32>
    %zt = func.call @__gptq_transpose(%zin) : (tensor<?x?xf32>) -> tensor<?x?xf32>
    scf.yield %st, %zt : tensor<?x?xf32>, tensor<?x?xf32>
  } else {
    %ng = arith.ceildivsi %c, %gs : index
    %ge = tensor.empty(%ng, %r) : tensor<?x?xf32>
    %gz = linalg.fill ins(%zero : f32) outs(%ge : tensor<?x?xf32>) -> tensor<?x?xf32>
    scf.yield %gz, %gz : tensor<?x?xf32>, tensor<?x?xf32>
  }
  %codes0 = tensor.empty(%c, %r) : tensor<?x?xi8>
  %le = tensor.empty(%r) : tensor<?xf64>
  %loss0 = linalg.fill ins(%zerod : f64) outs(%le : tensor<?xf64>) -> tensor<?xf64>
  %leftlooking = func.call @__gptq_left_looking() : () -> i1
  %out:4 = scf.if %leftlooking -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf64>) {
    %o:4 = func.call @__gptq_quantize_left_looking(%wt0, %codes0, %s0, %z0, %loss0, %u, %gmap, %fixed, %gs, %bsz, %maxq, %sym, %mse, %norm, %steps, %grid) : (tensor<?x?xf32>, tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf64>, tensor<?x?xf32>, tensor<?xi32>, i1, index, index, f32, i1, i1, f32, index, f64) -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf64>)
    scf.yield %o#0, %o#1, %o#2, %o#3 : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf64>
  } else {
    %o:4 = func.call @__gptq_quantize_right_looking(%wt0, %codes0, %s0, %z0, %loss0, %u, %gmap, %fixed, %gs, %bsz, %maxq, %sym, %mse, %norm, %steps, %grid) : (tensor<?x?xf32>, tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf64>, tensor<?x?xf32>, tensor<?xi32>, i1, index, index, f32, i1, i1, f32, index, f64) -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf64>)
    scf.yield %o#0, %o#1, %o#2, %o#3 : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf64>
  }
  %lsum0 = tensor.empty() : tensor<f64>
  %lsumz = linalg.fill ins(%zerod : f64) outs(%lsum0 : tensor<f64>) -> tensor<f64>
  %lsum = linalg.generic {indexing_maps = [#id1, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%out#3 : tensor<?xf64>) outs(%lsumz : tensor<f64>) {
  ^bb0(%v: f64, %acc: f64):
    %a = arith.addf %acc, %v : f64
    linalg.yield %a : f64
  } -> tensor<f64>
  %lossd = tensor.extract %lsum[] : tensor<f64>
  %lossf = arith.truncf %lossd : f64 to f32
  // Codes in W's layout; with %permcodes, in the column order before %perm.
  %q = scf.if %permcodes -> (tensor<?xi64>) {
    %inv = func.call @__gptq_invert_permutation(%perm) : (tensor<?xi64>) -> tensor<?xi64>
    scf.yield %inv : tensor<?xi64>
  } else {
    scf.yield %perm : tensor<?xi64>
  }
  %codes = func.call @__gptq_transpose_gather_i8(%out#0, %q, %permcodes) : (tensor<?x?xi8>, tensor<?xi64>, i1) -> tensor<?x?xi8>
  // Fixed grids are returned as they came (the loop never writes them).
  %sout, %zout = scf.if %fixed -> (tensor<?x?xf32>, tensor<?x?xf32>) {
    scf.yield %sin, %zin : tensor<?x?xf32>, tensor<?x?xf32>
  } else {
    %st = func.call @__gptq_transpose(%out#1) : (tensor<?x?xf32>) -> tensor<?x?xf32>
    %zt = func.call @__gptq_transpose(%out#2) : (tensor<?x?xf32>) -> tensor<?x?xf32>
    scf.yield %st, %zt : tensor<?x?xf32>, tensor<?x?xf32>
  }
  return %codes, %sout, %zout, %lossf : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, f32
}

//===--------------------------------------------------------------------===//
// gptq.group_index, gptq.dequantize, gptq.pack, gptq.unpack
//===--------------------------------------------------------------------===//

// g_idx: 0 for mode 0, j / gs for mode 1, invperm[j] / gs for mode 2.
func.func private @__gptq_group_index(%cols: index, %perm: tensor<?xi64>, %mode: i32, %gs: index) -> tensor<?xi32> {
  %m2 = arith.constant 2 : i32
  %m0 = arith.constant 0 : i32
  %useinv = arith.cmpi eq, %mode, %m2 : i32
  %none = arith.cmpi eq, %mode, %m0 : i32
  %src = scf.if %useinv -> (tensor<?xi64>) {
    %inv = func.call @__gptq_invert_permutation(%perm) : (tensor<?xi64>) -> tensor<?xi64>
    scf.yield %inv : tensor<?xi64>
  } else {
    scf.yield %perm : tensor<?xi64>
  }
  %e = tensor.empty(%cols) : tensor<?xi32>
  %g = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]} outs(%e : tensor<?xi32>) {
  ^bb0(%o: i32):
    %j = linalg.index 0 : index
    %pos = scf.if %useinv -> (index) {
      %p = tensor.extract %src[%j] : tensor<?xi64>
      %pi = arith.index_cast %p : i64 to index
      scf.yield %pi : index
    } else {
      scf.yield %j : index
    }
    %q = arith.divsi %pos, %gs : index
    %qi = arith.index_cast %q : index to i32
    %v = arith.select %none, %m0, %qi : i32
    linalg.yield %v : i32
  } -> tensor<?xi32>
  return %g : tensor<?xi32>
}

func.func private @__gptq_dequantize(%codes: tensor<?x?xi8>, %s: tensor<?x?xf32>, %z: tensor<?x?xf32>, %g: tensor<?xi32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %chunk = func.call @__gptq_chunk_rows() : () -> index
  %r = tensor.dim %codes, %c0 : tensor<?x?xi8>
  %c = tensor.dim %codes, %c1 : tensor<?x?xi8>
  %e = tensor.empty(%r, %c) : tensor<?x?xf32>
  %nrb = arith.ceildivsi %r, %chunk : index
  %w = scf.forall (%rb) in (%nrb) shared_outs(%o = %e) -> (tensor<?x?xf32>) {
    %r0 = arith.muli %rb, %chunk : index
    %rleft = arith.subi %r, %r0 : index
    %rn = arith.minsi %rleft, %chunk : index
    %src = tensor.extract_slice %codes[%r0, 0] [%rn, %c] [1, 1] : tensor<?x?xi8> to tensor<?x?xi8>
    %dst = tensor.extract_slice %o[%r0, 0] [%rn, %c] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %blk = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%src, %g : tensor<?x?xi8>, tensor<?xi32>) outs(%dst : tensor<?x?xf32>) {
    ^bb0(%q: i8, %gi: i32, %out: f32):
      %il = linalg.index 0 : index
      %i = arith.addi %il, %r0 : index
      %gx = arith.index_cast %gi : i32 to index
      %sc = tensor.extract %s[%i, %gx] : tensor<?x?xf32>
      %zp = tensor.extract %z[%i, %gx] : tensor<?x?xf32>
      %qf = arith.uitofp %q : i8 to f32
      %d = arith.subf %qf, %zp : f32
      %v = arith.mulf %sc, %d : f32
      linalg.yield %v : f32
    } -> tensor<?x?xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %blk into %o[%r0, 0] [%rn, %c] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
    }
  }
  return %w : tensor<?x?xf32>
}

// Row-wise little-endian bit streams of %bits-bit codes in 32-bit words.
func.func private @__gptq_pack(%codes: tensor<?x?xi8>, %bits: i64) -> tensor<?x?xi32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c31 = arith.constant 31 : index
  %c32 = arith.constant 32 : index
  %z64 = arith.constant 0 : i64
  %r = tensor.dim %codes, %c0 : tensor<?x?xi8>
  %c = tensor.dim %codes, %c1 : tensor<?x?xi8>
  %b = arith.index_cast %bits : i64 to index
  %nbits = arith.muli %c, %b : index
  %nw0 = arith.addi %nbits, %c31 : index
  %nw = arith.divui %nw0, %c32 : index
  %e = tensor.empty(%r, %nw) : tensor<?x?xi32>
  %p = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x?xi32>) {
  ^bb0(%o: i32):
    %i = linalg.index 0 : index
    %wi = linalg.index 1 : index
    %lobit = arith.muli %wi, %c32 : index
    %hibit = arith.addi %lobit, %c31 : index
    %first = arith.divui %lobit, %b : index
    %last0 = arith.divui %hibit, %b : index
    %last1 = arith.addi %last0, %c1 : index
    %last = arith.minui %last1, %c : index
    %word = scf.for %j = %first to %last step %c1 iter_args(%acc = %z64) -> (i64) {
      %q = tensor.extract %codes[%i, %j] : tensor<?x?xi8>
      %q64 = arith.extui %q : i8 to i64
      %jb = arith.muli %j, %b : index
      %jbi = arith.index_cast %jb : index to i64
      %lob = arith.index_cast %lobit : index to i64
      %off = arith.subi %jbi, %lob : i64
      %neg = arith.cmpi slt, %off, %z64 : i64
      %noff = arith.subi %z64, %off : i64
      %right = arith.shrui %q64, %noff : i64
      %offc = arith.maxsi %off, %z64 : i64
      %left = arith.shli %q64, %offc : i64
      %v = arith.select %neg, %right, %left : i64
      %a = arith.ori %acc, %v : i64
      scf.yield %a : i64
    }
    %mask = arith.constant 4294967295 : i64
    %wm = arith.andi %word, %mask : i64
    %w32 = arith.trunci %wm : i64 to i32
    linalg.yield %w32 : i32
  } -> tensor<?x?xi32>
  return %p : tensor<?x?xi32>
}

func.func private @__gptq_unpack(%packed: tensor<?x?xi32>, %cols: index, %bits: i64) -> tensor<?x?xi8> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %one = arith.constant 1 : i64
  %i32w = arith.constant 32 : i64
  %r = tensor.dim %packed, %c0 : tensor<?x?xi32>
  %nw = tensor.dim %packed, %c1 : tensor<?x?xi32>
  %b = arith.index_cast %bits : i64 to index
  %m0 = arith.shli %one, %bits : i64
  %mask = arith.subi %m0, %one : i64
  %e = tensor.empty(%r, %cols) : tensor<?x?xi8>
  %q = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<?x?xi8>) {
  ^bb0(%o: i8):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %bit = arith.muli %j, %b : index
    %w = arith.divui %bit, %c32 : index
    %off = arith.remui %bit, %c32 : index
    %lo = tensor.extract %packed[%i, %w] : tensor<?x?xi32>
    %lo64 = arith.extui %lo : i32 to i64
    %w1 = arith.addi %w, %c1 : index
    %hasnext = arith.cmpi ult, %w1, %nw : index
    %hi64 = scf.if %hasnext -> (i64) {
      %hi = tensor.extract %packed[%i, %w1] : tensor<?x?xi32>
      %h64 = arith.extui %hi : i32 to i64
      %hs = arith.shli %h64, %i32w : i64
      scf.yield %hs : i64
    } else {
      %z = arith.constant 0 : i64
      scf.yield %z : i64
    }
    %both = arith.ori %lo64, %hi64 : i64
    %offi = arith.index_cast %off : index to i64
    %sh = arith.shrui %both, %offi : i64
    %v = arith.andi %sh, %mask : i64
    %v8 = arith.trunci %v : i64 to i8
    linalg.yield %v8 : i8
  } -> tensor<?x?xi8>
  return %q : tensor<?x?xi8>
}

}
