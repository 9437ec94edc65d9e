// The CPU schedule's kernels of the gptq lowering library (see Library.mlir):
// register-tiled matrix products on AVX-512 vectors, cache-blocked
// transposes and gathers, and the chunk sizes that split parallel loops
// into tasks for the cores. The steps that have target instructions
// (__gptq_lut16, __gptq_dot4, __gptq_byte_dots) have their x86 forms in
// KernelsX86.mlir.

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
// The layout __gptq_matmul takes its operands A and B in: any batch and
// row strides, rows contiguous (a decode step's keys and values are the
// KV caches' heads, a cache's length apart, read in place).
#gptq_batch_strided = strided<[?, ?, 1], offset: ?>

module {

//===--------------------------------------------------------------------===//
// Matrix kernels
//===--------------------------------------------------------------------===//

// Transpose of a matrix, in 32 x 32 tiles so that both sides stay in cache;
// column blocks of the result are independent (scf.forall).
func.func private @__gptq_transpose(%a: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %a, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?xf32>
  %mt = arith.ceildivsi %m, %c32 : index
  %t = scf.forall (%it) in (%mt) shared_outs(%o = %e) -> (tensor<?x?xf32>) {
    %i = arith.muli %it, %c32 : index
    %mi = arith.subi %m, %i : index
    %ti = arith.minsi %mi, %c32 : index
    %cols = tensor.extract_slice %o[0, %i] [%n, %ti] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %filled = scf.for %j = %c0 to %n step %c32 iter_args(%oo = %cols) -> (tensor<?x?xf32>) {
      %nj = arith.subi %n, %j : index
      %tj = arith.minsi %nj, %c32 : index
      %src = tensor.extract_slice %a[%i, %j] [%ti, %tj] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %dst = tensor.extract_slice %oo[%j, 0] [%tj, %ti] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %tile = linalg.transpose ins(%src : tensor<?x?xf32>) outs(%dst : tensor<?x?xf32>) permutation = [1, 0]
      %oo2 = tensor.insert_slice %tile into %oo[%j, 0] [%tj, %ti] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
      scf.yield %oo2 : tensor<?x?xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %filled into %o[0, %i] [%n, %ti] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
    }
  }
  return %t : tensor<?x?xf32>
}

// %h + Y^T Y for a symmetric %h (the Hessian's update) on the microkernel
// library's matrix kernel (gptq_ukernel.matmul: Y read transposed as A, and
// as B, into %h), then the upper triangle copied from the lower one, so
// that a calibration stage's module compiles no matrix kernel of its own.
// The lower triangle is computed in blocks: 512 tokens (rows of Y) at a
// time, and in each, bands of 512 rows of %h: the band's part left of its diagonal block
// (a full product) and its diagonal block (only the tiles that reach the
// lower triangle). The kernel packs the band's columns of Y (512 x 512,
// 1 MiB: it stays in L2 while every 64-column panel of B passes) instead
// of all of Y's columns (for 8192 inputs and 4096 tokens, 128 MiB streamed
// from memory once per panel): 1.6x faster on a Llama-3.2-1B down
// projection's Hessian. Each element still adds the tokens in their order,
// from %h, as one product over all of Y does: the same bits (checked on
// 1100 inputs and 1000 tokens, and on stories260K's GPTQ).
func.func private @__gptq_add_gram(%h: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = tensor.dim %y, %c0 : tensor<?x?xf32>
  %c = tensor.dim %y, %c1 : tensor<?x?xf32>
  %y3 = tensor.expand_shape %y [[0, 1], [2]] output_shape [1, %t, %c] : tensor<?x?xf32> into tensor<1x?x?xf32>
  %h3 = tensor.expand_shape %h [[0, 1], [2]] output_shape [1, %c, %c] : tensor<?x?xf32> into tensor<1x?x?xf32>
  %tokens = arith.constant 512 : index
  %band = arith.constant 512 : index
  %r3 = scf.for %t0 = %c0 to %t step %tokens iter_args(%acc = %h3) -> (tensor<1x?x?xf32>) {
    %tleft = arith.subi %t, %t0 : index
    %len = arith.minsi %tleft, %tokens : index
    %ys = tensor.extract_slice %y3[0, %t0, 0] [1, %len, %c] [1, 1, 1] : tensor<1x?x?xf32> to tensor<1x?x?xf32>
    %acc2 = scf.for %i0 = %c0 to %c step %band iter_args(%a2 = %acc) -> (tensor<1x?x?xf32>) {
      %mleft = arith.subi %c, %i0 : index
      %ml = arith.minsi %mleft, %band : index
      %yi = tensor.extract_slice %ys[0, 0, %i0] [1, %len, %ml] [1, 1, 1] : tensor<1x?x?xf32> to tensor<1x?x?xf32>
      %left = arith.cmpi sgt, %i0, %c0 : index
      %a3 = scf.if %left -> (tensor<1x?x?xf32>) {
        %yl = tensor.extract_slice %ys[0, 0, 0] [1, %len, %i0] [1, 1, 1] : tensor<1x?x?xf32> to tensor<1x?x?xf32>
        %cl = tensor.extract_slice %a2[0, %i0, 0] [1, %ml, %i0] [1, 1, 1] : tensor<1x?x?xf32> to tensor<1x?x?xf32>
        %ul = gptq_ukernel.matmul ins(%yi, %yl : tensor<1x?x?xf32>, tensor<1x?x?xf32>) outs(%cl : tensor<1x?x?xf32>) {transpose_lhs} -> tensor<1x?x?xf32>
        %il = tensor.insert_slice %ul into %a2[0, %i0, 0] [1, %ml, %i0] [1, 1, 1] : tensor<1x?x?xf32> into tensor<1x?x?xf32>
        scf.yield %il : tensor<1x?x?xf32>
      } else {
        scf.yield %a2 : tensor<1x?x?xf32>
      }
      %cd = tensor.extract_slice %a3[0, %i0, %i0] [1, %ml, %ml] [1, 1, 1] : tensor<1x?x?xf32> to tensor<1x?x?xf32>
      %ud = gptq_ukernel.matmul ins(%yi, %yi : tensor<1x?x?xf32>, tensor<1x?x?xf32>) outs(%cd : tensor<1x?x?xf32>) {transpose_lhs, lower_result} -> tensor<1x?x?xf32>
      %id = tensor.insert_slice %ud into %a3[0, %i0, %i0] [1, %ml, %ml] [1, 1, 1] : tensor<1x?x?xf32> into tensor<1x?x?xf32>
      scf.yield %id : tensor<1x?x?xf32>
    }
    scf.yield %acc2 : tensor<1x?x?xf32>
  }
  %r = tensor.collapse_shape %r3 [[0, 1], [2]] : tensor<1x?x?xf32> into tensor<?x?xf32>
  %full = func.call @__gptq_mirror_lower(%r) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  return %full : tensor<?x?xf32>
}

// A square matrix with its strict upper triangle set from its lower one
// (h[i, j] = h[j, i] for i < j), in place: for each band of 32 rows, the
// part right of its diagonal block is the transpose of the column band
// below that block, which no band writes; in 32 x 32 tiles, bands in
// parallel (scf.forall). The diagonal blocks are left as they are.
func.func private @__gptq_mirror_lower(%h: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %n = tensor.dim %h, %c0 : tensor<?x?xf32>
  %nt = arith.ceildivsi %n, %c32 : index
  %r = scf.forall (%it) in (%nt) shared_outs(%o = %h) -> (tensor<?x?xf32>) {
    %i = arith.muli %it, %c32 : index
    %ni = arith.subi %n, %i : index
    %ti = arith.minsi %ni, %c32 : index
    %i1 = arith.addi %i, %ti : index
    %rest = arith.subi %n, %i1 : index
    %below = tensor.extract_slice %o[%i1, %i] [%rest, %ti] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %e = tensor.empty(%ti, %rest) : tensor<?x?xf32>
    %band = scf.for %j = %c0 to %rest step %c32 iter_args(%bb = %e) -> (tensor<?x?xf32>) {
      %nj = arith.subi %rest, %j : index
      %tj = arith.minsi %nj, %c32 : index
      %src = tensor.extract_slice %below[%j, 0] [%tj, %ti] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %dst = tensor.extract_slice %bb[0, %j] [%ti, %tj] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %tile = linalg.transpose ins(%src : tensor<?x?xf32>) outs(%dst : tensor<?x?xf32>) permutation = [1, 0]
      %bb2 = tensor.insert_slice %tile into %bb[0, %j] [%ti, %tj] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
      scf.yield %bb2 : tensor<?x?xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %band into %o[%i, %i1] [%ti, %rest] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
    }
  }
  return %r : tensor<?x?xf32>
}

// The transpose of a matrix whose columns are gathered and masked:
// result[j, i] = (dead(p(j)) ? 0 : a[i, p(j)]), p(j) = %perm[j] with
// %useperm (else j), dead(c) = %usemask and %h[c, c] == 0: gptq.permute of
// gptq.mask_dead_inputs, transposed, in one pass. Blocks of 32 rows of %a
// (columns of the result) in parallel: the block's rows stay in cache while
// the gather reads them in any column order. Without a permutation or mask,
// use __gptq_transpose.
func.func private @__gptq_transpose_gather(%a: tensor<?x?xf32>, %perm: tensor<?xi64>, %useperm: i1, %h: tensor<?x?xf32>, %usemask: i1) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %a, %c1 : tensor<?x?xf32>
  %de = tensor.empty(%n) : tensor<?xf32>
  %diag = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]} outs(%de : tensor<?xf32>) {
  ^bb0(%o: f32):
    %j = linalg.index 0 : index
    %pj = func.call @__gptq_perm_index(%perm, %useperm, %j) : (tensor<?xi64>, i1, index) -> index
    %d = scf.if %usemask -> (f32) {
      %hv = tensor.extract %h[%pj, %pj] : tensor<?x?xf32>
      scf.yield %hv : f32
    } else {
      scf.yield %one : f32
    }
    linalg.yield %d : f32
  } -> tensor<?xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?xf32>
  %mt = arith.ceildivsi %m, %c32 : index
  %t = scf.forall (%it) in (%mt) shared_outs(%o = %e) -> (tensor<?x?xf32>) {
    %i = arith.muli %it, %c32 : index
    %mi = arith.subi %m, %i : index
    %ti = arith.minsi %mi, %c32 : index
    %cols = tensor.extract_slice %o[0, %i] [%n, %ti] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    // Output row j (column p(j) of %a) in 32-element pieces: its source
    // column and mask are read once per row, not once per element.
    %filled = scf.for %j = %c0 to %n step %c1 iter_args(%oo = %cols) -> (tensor<?x?xf32>) {
      %pj = func.call @__gptq_perm_index(%perm, %useperm, %j) : (tensor<?xi64>, i1, index) -> index
      %d = tensor.extract %diag[%j] : tensor<?xf32>
      %dead = arith.cmpf oeq, %d, %zero : f32
      %row0 = tensor.extract_slice %oo[%j, 0] [1, %ti] [1, 1] : tensor<?x?xf32> to tensor<?xf32>
      %row = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]} outs(%row0 : tensor<?xf32>) {
      ^bb0(%x: f32):
        %ii = linalg.index 0 : index
        %ig = arith.addi %i, %ii : index
        %v = tensor.extract %a[%ig, %pj] : tensor<?x?xf32>
        %r = arith.select %dead, %zero, %v : f32
        linalg.yield %r : f32
      } -> tensor<?xf32>
      %oo2 = tensor.insert_slice %row into %oo[%j, 0] [1, %ti] [1, 1] : tensor<?xf32> into tensor<?x?xf32>
      scf.yield %oo2 : tensor<?x?xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %filled into %o[0, %i] [%n, %ti] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
    }
  }
  return %t : tensor<?x?xf32>
}

// The transpose of codes with the result's columns gathered:
// result[r, c] = %ct[q(c), r], q(c) = %q[c] with %useq (else c). Blocks of
// 32 result rows in parallel, in 32 x 32 tiles: a tile reads 32 bytes of
// each of 32 rows of %ct, which stay in cache (and in the TLB) while the
// tile is written.
func.func private @__gptq_transpose_gather_i8(%ct: tensor<?x?xi8>, %q: tensor<?xi64>, %useq: i1) -> tensor<?x?xi8> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %cols = tensor.dim %ct, %c0 : tensor<?x?xi8>
  %rows = tensor.dim %ct, %c1 : tensor<?x?xi8>
  %e = tensor.empty(%rows, %cols) : tensor<?x?xi8>
  %nrb = arith.ceildivsi %rows, %c32 : index
  %t = scf.forall (%rb) in (%nrb) shared_outs(%o = %e) -> (tensor<?x?xi8>) {
    %r0 = arith.muli %rb, %c32 : index
    %rleft = arith.subi %rows, %r0 : index
    %rn = arith.minsi %rleft, %c32 : index
    %dst = tensor.extract_slice %o[%r0, 0] [%rn, %cols] [1, 1] : tensor<?x?xi8> to tensor<?x?xi8>
    %filled = scf.for %c0t = %c0 to %cols step %c32 iter_args(%oo = %dst) -> (tensor<?x?xi8>) {
      %cleft = arith.subi %cols, %c0t : index
      %cn = arith.minsi %cleft, %c32 : index
      %tile0 = tensor.extract_slice %oo[0, %c0t] [%rn, %cn] [1, 1] : tensor<?x?xi8> to tensor<?x?xi8>
      %tile = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%tile0 : tensor<?x?xi8>) {
      ^bb0(%x: i8):
        %rr = linalg.index 0 : index
        %cc = linalg.index 1 : index
        %r = arith.addi %r0, %rr : index
        %c = arith.addi %c0t, %cc : index
        %qc = func.call @__gptq_perm_index(%q, %useq, %c) : (tensor<?xi64>, i1, index) -> index
        %v = tensor.extract %ct[%qc, %r] : tensor<?x?xi8>
        linalg.yield %v : i8
      } -> tensor<?x?xi8>
      %oo2 = tensor.insert_slice %tile into %oo[0, %c0t] [%rn, %cn] [1, 1] : tensor<?x?xi8> into tensor<?x?xi8>
      scf.yield %oo2 : tensor<?x?xi8>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %filled into %o[%r0, 0] [%rn, %cols] [1, 1] : tensor<?x?xi8> into tensor<?x?xi8>
    }
  }
  return %t : tensor<?x?xi8>
}

// C - A @ B for A given transposed (%at is K x M, %b is K x N, %c is M x N);
// C + A @ B with %plus; with %zeroC, C's contents are not read (the result
// is -A @ B, or A @ B).
// Register tiles of 6 x 64 (24 512-bit accumulators on AVX-512) start from
// C and accumulate outer products of a column of -A and a row of B. A is
// first packed, negated, into 6-row panels (M/6 x K x 6), and each 64-column
// panel of B into a K x 64 block, so that the inner loop reads both operands
// contiguously; partial tiles read zero padding and write masked. Column panels are independent (scf.forall). With %lowerC only
// tiles that reach the lower triangle of C are computed (the others are left
// as they are); with %lowerB, B is lower triangular and each panel starts at
// row j of B.
func.func private @__gptq_gemm_sub(%c: tensor<?x?xf32>, %at: tensor<?x?xf32>, %b: tensor<?x?xf32>, %plus: i1, %lowerC: i1, %lowerB: i1, %zeroC: i1) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c6 = arith.constant 6 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %k = tensor.dim %at, %c0 : tensor<?x?xf32>
  %m = tensor.dim %at, %c1 : tensor<?x?xf32>
  %n = tensor.dim %b, %c1 : tensor<?x?xf32>
  %mt = arith.ceildivsi %m, %c6 : index
  %ape = tensor.empty(%mt, %k) : tensor<?x?x6xf32>
  %ap = scf.forall (%t) in (%mt) shared_outs(%pa = %ape) -> (tensor<?x?x6xf32>) {
    %t6 = arith.muli %t, %c6 : index
    %slab0 = tensor.extract_slice %pa[%t, 0, 0] [1, %k, 6] [1, 1, 1] : tensor<?x?x6xf32> to tensor<?x6xf32>
    %slab = scf.for %kk = %c0 to %k step %c1 iter_args(%pb = %slab0) -> (tensor<?x6xf32>) {
      %v = vector.transfer_read %at[%kk, %t6], %zero : tensor<?x?xf32>, vector<6xf32>
      %nv0 = arith.negf %v : vector<6xf32>
      %nv = arith.select %plus, %v, %nv0 : vector<6xf32>
      %pb2 = vector.transfer_write %nv, %pb[%kk, %c0] {in_bounds = [true]} : vector<6xf32>, tensor<?x6xf32>
      scf.yield %pb2 : tensor<?x6xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %slab into %pa[%t, 0, 0] [1, %k, 6] [1, 1, 1] : tensor<?x6xf32> into tensor<?x?x6xf32>
    }
  }
  %nt = arith.ceildivsi %n, %c64 : index
  %r = scf.forall (%q) in (%nt) shared_outs(%cc = %c) -> (tensor<?x?xf32>) {
    // Panels in the order 0, nt-1, 1, nt-2, ...: with triangular C or B the
    // work of a panel falls linearly with its index, and contiguous chunks
    // of this order (how worksharing loops split) carry equal work.
    %half = arith.divui %q, %c2 : index
    %odd = arith.remui %q, %c2 : index
    %isodd = arith.cmpi ne, %odd, %c0 : index
    %back0 = arith.subi %nt, %half : index
    %back = arith.subi %back0, %c1 : index
    %jt = arith.select %isodd, %back, %half : index
    %j = arith.muli %jt, %c64 : index
    %left = arith.subi %n, %j : index
    %jn = arith.minsi %left, %c64 : index
    %p = tensor.extract_slice %cc[0, %j] [%m, %jn] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %false = arith.constant false
    %nq = arith.constant 0 : i64
    %nqw = tensor.empty() : tensor<0x0xi32>
    %nqf = tensor.empty() : tensor<0x0xf32>
    %nqg = tensor.empty() : tensor<0xi32>
    %nqwd = tensor.cast %nqw : tensor<0x0xi32> to tensor<?x?xi32>
    %nqfd = tensor.cast %nqf : tensor<0x0xf32> to tensor<?x?xf32>
    %nqgd = tensor.cast %nqg : tensor<0xi32> to tensor<?xi32>
    %nad = tensor.empty() : tensor<0x0xf32>
    %nadd = tensor.cast %nad : tensor<0x0xf32> to tensor<?x?xf32>
    %nh = tensor.empty() : tensor<0x0xbf16>
    %nhd = tensor.cast %nh : tensor<0x0xbf16> to tensor<?x?xbf16>
    %nf = tensor.empty() : tensor<0x0xf16>
    %nfd = tensor.cast %nf : tensor<0x0xf16> to tensor<?x?xf16>
    %rp = func.call @__gptq_gemm_panel(%p, %ap, %nadd, %false, %b, %j, %c0, %lowerC, %lowerB, %false, %zeroC, %false, %false, %nqwd, %nqfd, %nqfd, %nqgd, %nq, %nq, %nhd, %nfd) : (tensor<?x?xf32>, tensor<?x?x6xf32>, tensor<?x?xf32>, i1, tensor<?x?xf32>, index, index, i1, i1, i1, i1, i1, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>, i64, i64, tensor<?x?xbf16>, tensor<?x?xf16>) -> tensor<?x?xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %rp into %cc[0, %j] [%m, %jn] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
    }
  }
  return %r : tensor<?x?xf32>
}

// One 64-column panel of __gptq_gemm_sub and __gptq_matmul: %panel is
// C[:, j : j + 64] (or fewer columns), %ap the packed (-)A, or with %direct
// %ad the rows of A in place (row rowoff + i of %ad for row i of the panel;
// %ap is then empty). With %transB, %b
// is given transposed (N x K) and the panel's chunks of B are gathered from
// its rows. With %quant, B^T is the weight that gptq.dequantize of
// gptq.unpack gives for packed codes %qw (%qbits bits), scales and zeros
// given transposed (%qs and %qz are groups x N) and group map %qg,
// computed chunk by chunk while B is packed (the
// same operations as __gptq_unpack and __gptq_dequantize, so the same
// values), never stored whole; %b is not read. With %half (1: bfloat16,
// 2: float16), B^T is the weight %bh or %bf, widened while it is packed
// (__gptq_pack_widened); %b is not read.
// The panel's rows are rows %rowoff .. of C: %lowerC skips the tiles above
// column j's diagonal, %lowerA (A zero past the diagonal) stops each tile's
// K loop at its last row, %lowerB starts the panel at row j of B.
func.func private @__gptq_gemm_panel(%panel0: tensor<?x?xf32>, %ap: tensor<?x?x6xf32>, %ad: tensor<?x?xf32>, %direct: i1, %b: tensor<?x?xf32>, %j: index, %rowoff: index, %lowerC: i1, %lowerB: i1, %lowerA: i1, %zeroC: i1, %transB: i1, %quant: i1, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %qg: tensor<?xi32>, %qbits: i64, %half: i64, %bh: tensor<?x?xbf16>, %bf: tensor<?x?xf16>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %kc = arith.constant 1024 : index
  %zero = arith.constant 0.0 : f32
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %nohalf = arith.constant 0 : i64
  %widened = arith.cmpi ne, %half, %nohalf : i64
  %pm = tensor.dim %panel0, %c0 : tensor<?x?xf32>
  %pn = tensor.dim %panel0, %c1 : tensor<?x?xf32>
  %mt = arith.ceildivsi %pm, %c6 : index
  %kp = tensor.dim %ap, %c1 : tensor<?x?x6xf32>
  %kd = tensor.dim %ad, %c1 : tensor<?x?xf32>
  %k = arith.select %direct, %kd, %kp : index
  // With %direct, rows of A past its end (those of a last, partial tile)
  // read its last row; their results are never stored.
  %ma = tensor.dim %ad, %c0 : tensor<?x?xf32>
  %malast = arith.subi %ma, %c1 : index
  %mlast = arith.subi %pm, %c1 : index
  %nlast = arith.subi %pn, %c1 : index
  // The panel's rows are rows %rowoff .. of C (and of A).
  %jrel0 = arith.subi %j, %rowoff : index
  %jrel = arith.maxsi %jrel0, %c0 : index
  %jfloor = arith.divui %jrel, %c6 : index
  %i0 = arith.select %lowerC, %jfloor, %c0 : index
  %k0 = arith.select %lowerB, %j, %c0 : index
  %k0c = arith.minsi %k0, %k : index
  // With %lowerA, A is zero past column row: the panel's last row bounds K.
  %kendA0 = arith.addi %rowoff, %pm : index
  %kendA = arith.minsi %kendA0, %k : index
  %kend = arith.select %lowerA, %kendA, %k : index
  // With %zeroC, C's initial contents are ignored (C = -A @ B): the first
  // chunk's tiles start from zero instead of reading C, and only what no
  // chunk writes is filled with zeros (the rows above %lowerC's first tile,
  // or the whole panel when K is empty).
  %haschunk = arith.cmpi slt, %k0c, %kend : index
  %panel = scf.if %zeroC -> (tensor<?x?xf32>) {
    %pz = scf.if %haschunk -> (tensor<?x?xf32>) {
      %above0 = arith.muli %i0, %c6 : index
      %above = arith.minsi %above0, %pm : index
      %top = tensor.extract_slice %panel0[0, 0] [%above, %pn] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
      %topz = linalg.fill ins(%zero : f32) outs(%top : tensor<?x?xf32>) -> tensor<?x?xf32>
      %pt = tensor.insert_slice %topz into %panel0[0, 0] [%above, %pn] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
      scf.yield %pt : tensor<?x?xf32>
    } else {
      %pall = linalg.fill ins(%zero : f32) outs(%panel0 : tensor<?x?xf32>) -> tensor<?x?xf32>
      scf.yield %pall : tensor<?x?xf32>
    }
    scf.yield %pz : tensor<?x?xf32>
  } else {
    scf.yield %panel0 : tensor<?x?xf32>
  }
  // K in chunks of 1024 rows: a chunk of packed B (up to 256 KiB) stays in
  // L2 while the tiles of the panel go by, and each tile of C is read and
  // written once per chunk (with 128-row chunks, whose B fits L1, the
  // passes over C cost more than the misses to L2 save).
  %res = scf.for %kb = %k0c to %kend step %kc iter_args(%pc = %panel) -> (tensor<?x?xf32>) {
    %kleft = arith.subi %k, %kb : index
    %kn = arith.minsi %kleft, %kc : index
    %firstk = arith.cmpi eq, %kb, %k0c : index
    %fromzero = arith.andi %zeroC, %firstk : i1
    %bpe = tensor.empty(%kn) : tensor<?x64xf32>
    %bp = scf.if %quant -> (tensor<?x64xf32>) {
      %bpq = func.call @__gptq_pack_dequantized(%bpe, %qw, %qs, %qz, %qg, %qbits, %j, %kb) : (tensor<?x64xf32>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>, i64, index, index) -> tensor<?x64xf32>
      scf.yield %bpq : tensor<?x64xf32>
    } else {
    %bpf = scf.if %widened -> (tensor<?x64xf32>) {
      %bpw = func.call @__gptq_pack_widened(%bpe, %bh, %bf, %half, %j, %kb) : (tensor<?x64xf32>, tensor<?x?xbf16>, tensor<?x?xf16>, i64, index, index) -> tensor<?x64xf32>
      scf.yield %bpw : tensor<?x64xf32>
    } else {
    %bpft = scf.if %transB -> (tensor<?x64xf32>) {
      // B^T's rows j .. j + 63 in 16 x 16 blocks, each transposed in
      // registers: reads along contiguous rows of B^T.
      %bpt = scf.for %kk = %c0 to %kn step %c16 iter_args(%pb = %bpe) -> (tensor<?x64xf32>) {
        %krow = arith.addi %kk, %kb : index
        %pb3 = scf.for %cc = %c0 to %c64 step %c16 iter_args(%pbc = %pb) -> (tensor<?x64xf32>) {
          %brow = arith.addi %j, %cc : index
          %blk = vector.transfer_read %b[%brow, %krow], %zero : tensor<?x?xf32>, vector<16x16xf32>
          %blkt = vector.transpose %blk, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
          %pbw = vector.transfer_write %blkt, %pbc[%kk, %cc] {in_bounds = [false, true]} : vector<16x16xf32>, tensor<?x64xf32>
          scf.yield %pbw : tensor<?x64xf32>
        }
        scf.yield %pb3 : tensor<?x64xf32>
      }
      scf.yield %bpt : tensor<?x64xf32>
    } else {
      %bpn = scf.for %kk = %c0 to %kn step %c1 iter_args(%pb = %bpe) -> (tensor<?x64xf32>) {
        %krow = arith.addi %kk, %kb : index
        %v = vector.transfer_read %b[%krow, %j], %zero : tensor<?x?xf32>, vector<64xf32>
        %pb2 = vector.transfer_write %v, %pb[%kk, %c0] {in_bounds = [true]} : vector<64xf32>, tensor<?x64xf32>
        scf.yield %pb2 : tensor<?x64xf32>
      }
      scf.yield %bpn : tensor<?x64xf32>
    }
    scf.yield %bpft : tensor<?x64xf32>
    }
    scf.yield %bpf : tensor<?x64xf32>
    }
    // With %lowerA, tiles whose rows all lie before the chunk are skipped
    // and each tile stops at its last row's column.
    %kbrel0 = arith.subi %kb, %rowoff : index
    %kbrel = arith.maxsi %kbrel0, %c0 : index
    %ia0 = arith.divui %kbrel, %c6 : index
    %ia1 = arith.maxsi %ia0, %i0 : index
    %ia = arith.select %lowerA, %ia1, %i0 : index
    %ri = scf.for %it = %ia to %mt step %c1 iter_args(%ci = %pc) -> (tensor<?x?xf32>) {
      %i = arith.muli %it, %c6 : index
      %rowend0 = arith.addi %rowoff, %i : index
      %rowend1 = arith.addi %rowend0, %c6 : index
      %kendt0 = arith.subi %rowend1, %kb : index
      %kendt1 = arith.minsi %kendt0, %kn : index
      %kendt = arith.select %lowerA, %kendt1, %kn : index
      // C is read from memory once per tile, in rows far apart: fetch the
      // next tile's cache lines while this one computes.
      %cm = bufferization.to_buffer %ci read_only : tensor<?x?xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
      scf.for %pr = %c0 to %c6 step %c1 {
        %row0 = arith.addi %i, %c6 : index
        %row1 = arith.addi %row0, %pr : index
        %row = arith.minsi %row1, %mlast : index
        scf.for %pcol = %c0 to %c64 step %c16 {
          %col = arith.minsi %pcol, %nlast : index
          memref.prefetch %cm[%row, %col], read, locality<3>, data : memref<?x?xf32, strided<[?, ?], offset: ?>>
        }
      }
      %cv = scf.if %fromzero -> (vector<6x64xf32>) {
        %zv = arith.constant dense<0.0> : vector<6x64xf32>
        scf.yield %zv : vector<6x64xf32>
      } else {
        %cr = vector.transfer_read %ci[%i, %c0], %zero : tensor<?x?xf32>, vector<6x64xf32>
        scf.yield %cr : vector<6x64xf32>
      }
      // A's elements, broadcast straight from memory (one load each, no
      // shuffles competing with the multiply-adds): from its packed panel,
      // or with %direct from its rows in place.
      %acc = scf.if %direct -> (vector<6x64xf32>) {
        %ar = arith.addi %rowoff, %i : index
        %ar0 = arith.minsi %ar, %malast : index
        %arp1 = arith.addi %ar, %c1 : index
        %ar1 = arith.minsi %arp1, %malast : index
        %arp2 = arith.addi %ar, %c2 : index
        %ar2 = arith.minsi %arp2, %malast : index
        %arp3 = arith.addi %ar, %c3 : index
        %ar3 = arith.minsi %arp3, %malast : index
        %arp4 = arith.addi %ar, %c4 : index
        %ar4 = arith.minsi %arp4, %malast : index
        %arp5 = arith.addi %ar, %c5 : index
        %ar5 = arith.minsi %arp5, %malast : index
        %accd = scf.for %kk = %c0 to %kendt step %c1 iter_args(%acc = %cv) -> (vector<6x64xf32>) {
          %ka = arith.addi %kk, %kb : index
          %bv = vector.transfer_read %bp[%kk, %c0], %zero {in_bounds = [true]} : tensor<?x64xf32>, vector<64xf32>
          // The six rows of A read in place, one element of each.
          %a0 = tensor.extract %ad[%ar0, %ka] : tensor<?x?xf32>
          %a1 = tensor.extract %ad[%ar1, %ka] : tensor<?x?xf32>
          %a2 = tensor.extract %ad[%ar2, %ka] : tensor<?x?xf32>
          %a3 = tensor.extract %ad[%ar3, %ka] : tensor<?x?xf32>
          %a4 = tensor.extract %ad[%ar4, %ka] : tensor<?x?xf32>
          %a5 = tensor.extract %ad[%ar5, %ka] : tensor<?x?xf32>
          %b0 = vector.broadcast %a0 : f32 to vector<64xf32>
          %b1 = vector.broadcast %a1 : f32 to vector<64xf32>
          %b2 = vector.broadcast %a2 : f32 to vector<64xf32>
          %b3 = vector.broadcast %a3 : f32 to vector<64xf32>
          %b4 = vector.broadcast %a4 : f32 to vector<64xf32>
          %b5 = vector.broadcast %a5 : f32 to vector<64xf32>
          %r0 = vector.extract %acc[0] : vector<64xf32> from vector<6x64xf32>
          %r1 = vector.extract %acc[1] : vector<64xf32> from vector<6x64xf32>
          %r2 = vector.extract %acc[2] : vector<64xf32> from vector<6x64xf32>
          %r3 = vector.extract %acc[3] : vector<64xf32> from vector<6x64xf32>
          %r4 = vector.extract %acc[4] : vector<64xf32> from vector<6x64xf32>
          %r5 = vector.extract %acc[5] : vector<64xf32> from vector<6x64xf32>
          %f0 = math.fma %b0, %bv, %r0 : vector<64xf32>
          %f1 = math.fma %b1, %bv, %r1 : vector<64xf32>
          %f2 = math.fma %b2, %bv, %r2 : vector<64xf32>
          %f3 = math.fma %b3, %bv, %r3 : vector<64xf32>
          %f4 = math.fma %b4, %bv, %r4 : vector<64xf32>
          %f5 = math.fma %b5, %bv, %r5 : vector<64xf32>
          %o0 = vector.insert %f0, %acc [0] : vector<64xf32> into vector<6x64xf32>
          %o1 = vector.insert %f1, %o0 [1] : vector<64xf32> into vector<6x64xf32>
          %o2 = vector.insert %f2, %o1 [2] : vector<64xf32> into vector<6x64xf32>
          %o3 = vector.insert %f3, %o2 [3] : vector<64xf32> into vector<6x64xf32>
          %o4 = vector.insert %f4, %o3 [4] : vector<64xf32> into vector<6x64xf32>
          %o = vector.insert %f5, %o4 [5] : vector<64xf32> into vector<6x64xf32>
          scf.yield %o : vector<6x64xf32>
        }
        scf.yield %accd : vector<6x64xf32>
      } else {
        %accp = scf.for %kk = %c0 to %kendt step %c1 iter_args(%acc = %cv) -> (vector<6x64xf32>) {
          %ka = arith.addi %kk, %kb : index
          %bv = vector.transfer_read %bp[%kk, %c0], %zero {in_bounds = [true]} : tensor<?x64xf32>, vector<64xf32>
          %a0 = tensor.extract %ap[%it, %ka, %c0] : tensor<?x?x6xf32>
          %a1 = tensor.extract %ap[%it, %ka, %c1] : tensor<?x?x6xf32>
          %a2 = tensor.extract %ap[%it, %ka, %c2] : tensor<?x?x6xf32>
          %a3 = tensor.extract %ap[%it, %ka, %c3] : tensor<?x?x6xf32>
          %a4 = tensor.extract %ap[%it, %ka, %c4] : tensor<?x?x6xf32>
          %a5 = tensor.extract %ap[%it, %ka, %c5] : tensor<?x?x6xf32>
          %b0 = vector.broadcast %a0 : f32 to vector<64xf32>
          %b1 = vector.broadcast %a1 : f32 to vector<64xf32>
          %b2 = vector.broadcast %a2 : f32 to vector<64xf32>
          %b3 = vector.broadcast %a3 : f32 to vector<64xf32>
          %b4 = vector.broadcast %a4 : f32 to vector<64xf32>
          %b5 = vector.broadcast %a5 : f32 to vector<64xf32>
          %r0 = vector.extract %acc[0] : vector<64xf32> from vector<6x64xf32>
          %r1 = vector.extract %acc[1] : vector<64xf32> from vector<6x64xf32>
          %r2 = vector.extract %acc[2] : vector<64xf32> from vector<6x64xf32>
          %r3 = vector.extract %acc[3] : vector<64xf32> from vector<6x64xf32>
          %r4 = vector.extract %acc[4] : vector<64xf32> from vector<6x64xf32>
          %r5 = vector.extract %acc[5] : vector<64xf32> from vector<6x64xf32>
          %f0 = math.fma %b0, %bv, %r0 : vector<64xf32>
          %f1 = math.fma %b1, %bv, %r1 : vector<64xf32>
          %f2 = math.fma %b2, %bv, %r2 : vector<64xf32>
          %f3 = math.fma %b3, %bv, %r3 : vector<64xf32>
          %f4 = math.fma %b4, %bv, %r4 : vector<64xf32>
          %f5 = math.fma %b5, %bv, %r5 : vector<64xf32>
          %o0 = vector.insert %f0, %acc [0] : vector<64xf32> into vector<6x64xf32>
          %o1 = vector.insert %f1, %o0 [1] : vector<64xf32> into vector<6x64xf32>
          %o2 = vector.insert %f2, %o1 [2] : vector<64xf32> into vector<6x64xf32>
          %o3 = vector.insert %f3, %o2 [3] : vector<64xf32> into vector<6x64xf32>
          %o4 = vector.insert %f4, %o3 [4] : vector<64xf32> into vector<6x64xf32>
          %o = vector.insert %f5, %o4 [5] : vector<64xf32> into vector<6x64xf32>
          scf.yield %o : vector<6x64xf32>
        }
        scf.yield %accp : vector<6x64xf32>
      }
      %w = vector.transfer_write %acc, %ci[%i, %c0] : vector<6x64xf32>, tensor<?x?xf32>
      scf.yield %w : tensor<?x?xf32>
    }
    scf.yield %ri : tensor<?x?xf32>
  }
  return %res : tensor<?x?xf32>
}

// Batched matrix product for the model's contractions: the rows kernel
// for a few rows of A times a weight stored N x K (a decode step's
// shapes), the register-tiled kernel for everything else.
func.func private @__gptq_matmul(%a: tensor<?x?x?xf32> {bufferization.buffer_layout = #gptq_batch_strided}, %bm: tensor<?x?x?xf32> {bufferization.buffer_layout = #gptq_batch_strided}, %c: tensor<?x?x?xf32>, %transA: i1, %transB: i1, %zeroC: i1, %lowerC: i1, %lowerA: i1, %quant: i1, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %qg: tensor<?xi32>, %qbits: i64, %half: i64, %bh: tensor<?x?xbf16>, %bf: tensor<?x?xf16>) -> tensor<?x?x?xf32> {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %true = arith.constant true
  %m = tensor.dim %c, %c1 : tensor<?x?x?xf32>
  %few = arith.cmpi ule, %m, %c4 : index
  %plainA = arith.xori %transA, %true : i1
  %dense = arith.xori %quant, %true : i1
  %fullC = arith.xori %lowerC, %true : i1
  %fullA = arith.xori %lowerA, %true : i1
  %r1 = arith.andi %few, %plainA : i1
  %r2 = arith.andi %r1, %transB : i1
  %r3 = arith.andi %r2, %dense : i1
  %r4 = arith.andi %r3, %fullC : i1
  %rows = arith.andi %r4, %fullA : i1
  // A quantized weight whose groups are runs of a multiple of 16 columns in
  // order (not act-order's g_idx): the rows kernels' quantized forms (8
  // bits: runs of a multiple of 64; 4 bits: of 128, else of 16; 2 to 7
  // bits: of 32, with the chunk kernel of the width, which is written out
  // for the widths the module's calls give, ChunkKernels.h).
  %two = arith.constant 2 : i64
  %four = arith.constant 4 : i64
  %eight = arith.constant 8 : i64
  %is4 = arith.cmpi eq, %qbits, %four : i64
  %is8 = arith.cmpi eq, %qbits, %eight : i64
  %atleast2 = arith.cmpi uge, %qbits, %two : i64
  %atmost8 = arith.cmpi ule, %qbits, %eight : i64
  %widths = arith.andi %atleast2, %atmost8 : i1
  %q1 = arith.andi %r2, %quant : i1
  %q2 = arith.andi %q1, %widths : i1
  %q3 = arith.andi %q2, %fullC : i1
  %q4 = arith.andi %q3, %fullA : i1
  %runs, %runsize = scf.if %q4 -> (i1, index) {
    %ok, %size = func.call @__gptq_groups_in_runs(%qg) : (tensor<?xi32>) -> (i1, index)
    scf.yield %ok, %size : i1, index
  } else {
    %no = arith.constant false
    scf.yield %no, %c1 : i1, index
  }
  %r = scf.if %rows -> (tensor<?x?x?xf32>) {
    %v = func.call @__gptq_matmul_rows(%a, %bm, %c, %zeroC, %half, %bh, %bf) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>, i1, i64, tensor<?x?xbf16>, tensor<?x?xf16>) -> tensor<?x?x?xf32>
    scf.yield %v : tensor<?x?x?xf32>
  } else {
    %c0x = arith.constant 0 : index
    %c63 = arith.constant 63 : index
    %low64 = arith.andi %runsize, %c63 : index
    %runs64 = arith.cmpi eq, %low64, %c0x : index
    %q8runs = arith.andi %runs, %is8 : i1
    %q8 = arith.andi %q8runs, %runs64 : i1
    %q4runs = arith.andi %runs, %is4 : i1
    %vq = scf.if %q8 -> (tensor<?x?x?xf32>) {
      %l = func.call @__gptq_matmul_rows_q8(%a, %c, %zeroC, %qw, %qs, %qz, %runsize) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index) -> tensor<?x?x?xf32>
      scf.yield %l : tensor<?x?x?xf32>
    } else {
      %c31 = arith.constant 31 : index
      %c127 = arith.constant 127 : index
      %low32 = arith.andi %runsize, %c31 : index
      %runs32 = arith.cmpi eq, %low32, %c0x : index
      %low128 = arith.andi %runsize, %c127 : index
      %runs128 = arith.cmpi eq, %low128, %c0x : index
      %q4lut = arith.andi %q4runs, %runs128 : i1
      %qkruns = arith.andi %runs, %runs32 : i1
      %qkwidth = func.call @__gptq_chunk_widths(%qbits) : (i64) -> i1
      %qk = arith.andi %qkruns, %qkwidth : i1
      %vq4 = scf.if %q4lut -> (tensor<?x?x?xf32>) {
        // Byte dot products where the CPU multiplies bytes in one
        // instruction (the JIT's __gptq_byte_dots), else table lookups.
        %dots = func.call @__gptq_byte_dots() : () -> i1
        %l = scf.if %dots -> (tensor<?x?x?xf32>) {
          %d = func.call @__gptq_matmul_rows_q4_dot(%a, %c, %zeroC, %qw, %qs, %qz, %runsize) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index) -> tensor<?x?x?xf32>
          scf.yield %d : tensor<?x?x?xf32>
        } else {
          %t = func.call @__gptq_matmul_rows_q4_lut(%a, %c, %zeroC, %qw, %qs, %qz, %runsize) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index) -> tensor<?x?x?xf32>
          scf.yield %t : tensor<?x?x?xf32>
        }
        scf.yield %l : tensor<?x?x?xf32>
      } else {
        %vk = scf.if %qk -> (tensor<?x?x?xf32>) {
          %l = func.call @__gptq_matmul_rows_qk(%a, %c, %zeroC, %qw, %qs, %qz, %runsize, %qbits) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, i64) -> tensor<?x?x?xf32>
          scf.yield %l : tensor<?x?x?xf32>
        } else {
          %vn = scf.if %q4runs -> (tensor<?x?x?xf32>) {
            %l = func.call @__gptq_matmul_rows_q4(%a, %c, %zeroC, %qw, %qs, %qz, %runsize) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index) -> tensor<?x?x?xf32>
            scf.yield %l : tensor<?x?x?xf32>
          } else {
            %l = func.call @__gptq_matmul_tiles(%a, %bm, %c, %transA, %transB, %zeroC, %lowerC, %lowerA, %quant, %qw, %qs, %qz, %qg, %qbits, %half, %bh, %bf) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>, i1, i1, i1, i1, i1, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>, i64, i64, tensor<?x?xbf16>, tensor<?x?xf16>) -> tensor<?x?x?xf32>
            scf.yield %l : tensor<?x?x?xf32>
          }
          scf.yield %vn : tensor<?x?x?xf32>
        }
        scf.yield %vk : tensor<?x?x?xf32>
      }
      scf.yield %vq4 : tensor<?x?x?xf32>
    }
    scf.yield %vq : tensor<?x?x?xf32>
  }
  return %r : tensor<?x?x?xf32>
}

// Whether a quantized weight's groups (%qg, the group of each of its K
// columns) are runs of the same size, a multiple of 16, in column order
// (g_idx[k] = k / size, the last run possibly shorter), as
// gptq.quantize_layer writes them without act-order; and that size. Run at
// every call of a decode step's matrix product, so it reads 16 columns at a
// time and stops at the first that is out of place.
func.func private @__gptq_groups_in_runs(%qg: tensor<?xi32>) -> (i1, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c15 = arith.constant 15 : index
  %c16 = arith.constant 16 : index
  %zg = arith.constant 0 : i32
  %k = tensor.dim %qg, %c0 : tensor<?xi32>
  // The size: the columns of group 0 before the first of another.
  %size = scf.while (%kk = %c0) : (index) -> index {
    %inside = arith.cmpi ult, %kk, %k : index
    %more = scf.if %inside -> (i1) {
      %g = tensor.extract %qg[%kk] : tensor<?xi32>
      %first = arith.cmpi eq, %g, %zg : i32
      scf.yield %first : i1
    } else {
      %no = arith.constant false
      scf.yield %no : i1
    }
    scf.condition(%more) %kk : index
  } do {
  ^bb0(%kk: index):
    %next = arith.addi %kk, %c1 : index
    scf.yield %next : index
  }
  %low = arith.andi %size, %c15 : index
  %aligned = arith.cmpi eq, %low, %c0 : index
  %positive = arith.cmpi ugt, %size, %c0 : index
  %start = arith.andi %aligned, %positive : i1
  %size1 = arith.maxui %size, %c1 : index
  // Then every 16 columns (within one run, as the size is a multiple of
  // 16) against their group; lanes past K read as that group.
  %end:2 = scf.while (%kk = %c0, %all = %start) : (index, i1) -> (index, i1) {
    %inside = arith.cmpi ult, %kk, %k : index
    %go = arith.andi %inside, %all : i1
    scf.condition(%go) %kk, %all : index, i1
  } do {
  ^bb0(%kk: index, %ok: i1):
    %want = arith.divui %kk, %size1 : index
    %wi = arith.index_cast %want : index to i32
    %v = vector.transfer_read %qg[%kk], %wi : tensor<?xi32>, vector<16xi32>
    %w = vector.broadcast %wi : i32 to vector<16xi32>
    %same = arith.cmpi eq, %v, %w : vector<16xi32>
    %each = vector.reduction <and>, %same : vector<16xi1> into i1
    %next = arith.addi %kk, %c16 : index
    scf.yield %next, %each : index, i1
  }
  return %end#1, %size1 : i1, index
}

// The rows kernels: a few rows of A (M of them, a decode step's) times a
// weight stored N x K (the layout the model keeps, read in place, never
// packed), W read once. The float kernel, the 4-bit kernel for groups of
// a multiple of 128 columns, the 8-bit one and the chunk kernel of 2 to 7
// bits sum along K: lanes are consecutive columns of one row of W; the
// float, 4-bit and 8-bit kernels take one row at a time, four of its
// chunks into four sums (four independent FMA chains, one stream a
// thread), while a row of activations fits half of L1, and four rows at a
// time past that (as the chunk kernels always do); each output ends with
// a reduction of its lanes. Their sums are in another order than the tiled
// kernel's: they agree with it to rounding. The 4-bit kernel for groups of
// a multiple of 16 columns but not of 32 keeps the tiled kernel's order
// (lanes are outputs).

// A float32 weight (B^T = %bm[b], N x K), or one stored in half precision,
// %half as in __gptq_matmul (%bh bfloat16, %bf float16, one batch), widened
// in registers. A task takes 16 rows of W of one batch, one row at a time
// while K <= 4096 (__gptq_rows_f_rows: each thread reads its rows as one
// stream), else four at a time (__gptq_rows_k4).
func.func private @__gptq_matmul_rows(%a: tensor<?x?x?xf32>, %bm: tensor<?x?x?xf32>, %c: tensor<?x?x?xf32>, %zeroC: i1, %half: i64, %bh: tensor<?x?xbf16>, %bf: tensor<?x?xf16>) -> tensor<?x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %nb = tensor.dim %c, %c0 : tensor<?x?x?xf32>
  %m = tensor.dim %c, %c1 : tensor<?x?x?xf32>
  %n = tensor.dim %c, %c2 : tensor<?x?x?xf32>
  %k = tensor.dim %a, %c2 : tensor<?x?x?xf32>
  // One row of W at a time while a row of activations (K floats) fills at
  // most half of a 32 KiB L1 data cache, as the 4-bit kernel does; four
  // rows at a time past that, reading the activations once for four.
  %c4096 = arith.constant 4096 : index
  %byrow = arith.cmpi ule, %k, %c4096 : index
  %nt = arith.ceildivsi %n, %c16 : index
  %tasks = arith.muli %nb, %nt : index
  %r = scf.forall (%t) in (%tasks) shared_outs(%cc = %c) -> (tensor<?x?x?xf32>) {
    %bi = arith.divui %t, %nt : index
    %ti = arith.remui %t, %nt : index
    %j = arith.muli %ti, %c16 : index
    %left = arith.subi %n, %j : index
    %jn = arith.minsi %left, %c16 : index
    %blk0 = tensor.extract_slice %cc[%bi, 0, %j] [1, %m, %jn] [1, 1, 1] : tensor<?x?x?xf32> to tensor<?x?xf32>
    %blk = scf.if %byrow -> (tensor<?x?xf32>) {
      %b1 = func.call @__gptq_rows_f_rows(%a, %bm, %bi, %blk0, %j, %zeroC, %half, %bh, %bf) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, index, tensor<?x?xf32>, index, i1, i64, tensor<?x?xbf16>, tensor<?x?xf16>) -> tensor<?x?xf32>
      scf.yield %b1 : tensor<?x?xf32>
    } else {
      %quads = arith.ceildivsi %jn, %c4 : index
      %b4 = scf.for %qd = %c0 to %quads step %c1 iter_args(%o = %blk0) -> (tensor<?x?xf32>) {
        %r0 = arith.muli %qd, %c4 : index
        %o2 = func.call @__gptq_rows_k4(%a, %bm, %bi, %o, %r0, %j, %n, %zeroC, %half, %bh, %bf) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, index, tensor<?x?xf32>, index, index, index, i1, i64, tensor<?x?xbf16>, tensor<?x?xf16>) -> tensor<?x?xf32>
        scf.yield %o2 : tensor<?x?xf32>
      }
      scf.yield %b4 : tensor<?x?xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %blk into %cc[%bi, 0, %j] [1, %m, %jn] [1, 1, 1] : tensor<?x?xf32> into tensor<?x?x?xf32>
    }
  }
  return %r : tensor<?x?x?xf32>
}

// Columns %kk .. %kk + 15 of row %row of W as float32 (read in place from
// %bm[%bi], or widened from %bh / %bf as %half says); with %inb they are
// all before K, else those past it read as zeros.
func.func private @__gptq_rows_row16(%bm: tensor<?x?x?xf32>, %bi: index, %row: index, %kk: index, %inb: i1, %half: i64, %bh: tensor<?x?xbf16>, %bf: tensor<?x?xf16>) -> vector<16xf32> {
  %zero = arith.constant 0.0 : f32
  %zh = arith.constant 0.0 : bf16
  %zf = arith.constant 0.0 : f16
  %none = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %sixteen = arith.constant dense<16> : vector<16xi32>
  %ishalf = arith.cmpi ne, %half, %none : i64
  %isbf16 = arith.cmpi eq, %half, %one : i64
  %w = scf.if %ishalf -> (vector<16xf32>) {
    %h = scf.if %isbf16 -> (vector<16xf32>) {
      %raw = scf.if %inb -> (vector<16xbf16>) {
        %v = vector.transfer_read %bh[%row, %kk], %zh {in_bounds = [true]} : tensor<?x?xbf16>, vector<16xbf16>
        scf.yield %v : vector<16xbf16>
      } else {
        %v = vector.transfer_read %bh[%row, %kk], %zh : tensor<?x?xbf16>, vector<16xbf16>
        scf.yield %v : vector<16xbf16>
      }
      %bits = arith.bitcast %raw : vector<16xbf16> to vector<16xi16>
      %wide = arith.extui %bits : vector<16xi16> to vector<16xi32>
      %up = arith.shli %wide, %sixteen : vector<16xi32>
      %f = arith.bitcast %up : vector<16xi32> to vector<16xf32>
      scf.yield %f : vector<16xf32>
    } else {
      %raw = scf.if %inb -> (vector<16xf16>) {
        %v = vector.transfer_read %bf[%row, %kk], %zf {in_bounds = [true]} : tensor<?x?xf16>, vector<16xf16>
        scf.yield %v : vector<16xf16>
      } else {
        %v = vector.transfer_read %bf[%row, %kk], %zf : tensor<?x?xf16>, vector<16xf16>
        scf.yield %v : vector<16xf16>
      }
      %f = arith.extf %raw : vector<16xf16> to vector<16xf32>
      scf.yield %f : vector<16xf32>
    }
    scf.yield %h : vector<16xf32>
  } else {
    %f = scf.if %inb -> (vector<16xf32>) {
      %v = vector.transfer_read %bm[%bi, %row, %kk], %zero {in_bounds = [true]} : tensor<?x?x?xf32>, vector<16xf32>
      scf.yield %v : vector<16xf32>
    } else {
      %v = vector.transfer_read %bm[%bi, %row, %kk], %zero : tensor<?x?x?xf32>, vector<16xf32>
      scf.yield %v : vector<16xf32>
    }
    scf.yield %f : vector<16xf32>
  }
  return %w : vector<16xf32>
}

// Columns %kk .. %kk + 15 of four rows of W times those of A[%bi, %mm],
// added to %u0 .. %u3 (lanes past K, with %inb false, add zeros).
func.func private @__gptq_rows_k4_step(%a: tensor<?x?x?xf32>, %bm: tensor<?x?x?xf32>, %bi: index, %mm: index, %kk: index, %inb: i1, %row0: index, %row1: index, %row2: index, %row3: index, %half: i64, %bh: tensor<?x?xbf16>, %bf: tensor<?x?xf16>, %u0: vector<16xf32>, %u1: vector<16xf32>, %u2: vector<16xf32>, %u3: vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %x = scf.if %inb -> (vector<16xf32>) {
    %v = vector.transfer_read %a[%bi, %mm, %kk], %zero {in_bounds = [true]} : tensor<?x?x?xf32>, vector<16xf32>
    scf.yield %v : vector<16xf32>
  } else {
    %v = vector.transfer_read %a[%bi, %mm, %kk], %zero : tensor<?x?x?xf32>, vector<16xf32>
    scf.yield %v : vector<16xf32>
  }
  %w0 = func.call @__gptq_rows_row16(%bm, %bi, %row0, %kk, %inb, %half, %bh, %bf) : (tensor<?x?x?xf32>, index, index, index, i1, i64, tensor<?x?xbf16>, tensor<?x?xf16>) -> vector<16xf32>
  %w1 = func.call @__gptq_rows_row16(%bm, %bi, %row1, %kk, %inb, %half, %bh, %bf) : (tensor<?x?x?xf32>, index, index, index, i1, i64, tensor<?x?xbf16>, tensor<?x?xf16>) -> vector<16xf32>
  %w2 = func.call @__gptq_rows_row16(%bm, %bi, %row2, %kk, %inb, %half, %bh, %bf) : (tensor<?x?x?xf32>, index, index, index, i1, i64, tensor<?x?xbf16>, tensor<?x?xf16>) -> vector<16xf32>
  %w3 = func.call @__gptq_rows_row16(%bm, %bi, %row3, %kk, %inb, %half, %bh, %bf) : (tensor<?x?x?xf32>, index, index, index, i1, i64, tensor<?x?xbf16>, tensor<?x?xf16>) -> vector<16xf32>
  %f0 = math.fma %x, %w0, %u0 : vector<16xf32>
  %f1 = math.fma %x, %w1, %u1 : vector<16xf32>
  %f2 = math.fma %x, %w2, %u2 : vector<16xf32>
  %f3 = math.fma %x, %w3, %u3 : vector<16xf32>
  return %f0, %f1, %f2, %f3 : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
}

// Rows %j .. of W (as many as %blk's columns) of __gptq_matmul_rows's
// product for batch %bi, one at a time, for every row of A: a row's
// columns 64 at a time into four sums (16 columns each, four independent
// chains of FMAs), then the last one to three whole 16s one by one, then
// the columns after the last whole 16 (masked).
func.func private @__gptq_rows_f_rows(%a: tensor<?x?x?xf32>, %bm: tensor<?x?x?xf32>, %bi: index, %blk: tensor<?x?xf32>, %j: index, %zeroC: i1, %half: i64, %bh: tensor<?x?xbf16>, %bf: tensor<?x?xf16>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c48 = arith.constant 48 : index
  %c64 = arith.constant 64 : index
  %true = arith.constant true
  %false = arith.constant false
  %zv = arith.constant dense<0.0> : vector<16xf32>
  %m = tensor.dim %blk, %c0 : tensor<?x?xf32>
  %jn = tensor.dim %blk, %c1 : tensor<?x?xf32>
  %k = tensor.dim %a, %c2 : tensor<?x?x?xf32>
  %kb = arith.divui %k, %c16 : index
  %kw = arith.muli %kb, %c16 : index
  %k4 = arith.divui %k, %c64 : index
  %k64 = arith.muli %k4, %c64 : index
  %ragged = arith.cmpi ult, %kw, %k : index
  %res = scf.for %i = %c0 to %jn step %c1 iter_args(%o0 = %blk) -> (tensor<?x?xf32>) {
    %row = arith.addi %j, %i : index
    %o1 = scf.for %mm = %c0 to %m step %c1 iter_args(%o = %o0) -> (tensor<?x?xf32>) {
      %acc:4 = scf.for %kk = %c0 to %k64 step %c64 iter_args(%a0 = %zv, %a1 = %zv, %a2 = %zv, %a3 = %zv) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
        %kk1 = arith.addi %kk, %c16 : index
        %kk2 = arith.addi %kk, %c32 : index
        %kk3 = arith.addi %kk, %c48 : index
        %s0 = func.call @__gptq_rows_f_col(%a, %bm, %bi, %mm, %row, %kk, %true, %half, %bh, %bf, %a0) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, index, index, index, index, i1, i64, tensor<?x?xbf16>, tensor<?x?xf16>, vector<16xf32>) -> vector<16xf32>
        %s1 = func.call @__gptq_rows_f_col(%a, %bm, %bi, %mm, %row, %kk1, %true, %half, %bh, %bf, %a1) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, index, index, index, index, i1, i64, tensor<?x?xbf16>, tensor<?x?xf16>, vector<16xf32>) -> vector<16xf32>
        %s2 = func.call @__gptq_rows_f_col(%a, %bm, %bi, %mm, %row, %kk2, %true, %half, %bh, %bf, %a2) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, index, index, index, index, i1, i64, tensor<?x?xbf16>, tensor<?x?xf16>, vector<16xf32>) -> vector<16xf32>
        %s3 = func.call @__gptq_rows_f_col(%a, %bm, %bi, %mm, %row, %kk3, %true, %half, %bh, %bf, %a3) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, index, index, index, index, i1, i64, tensor<?x?xbf16>, tensor<?x?xf16>, vector<16xf32>) -> vector<16xf32>
        scf.yield %s0, %s1, %s2, %s3 : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
      }
      // The last one to three whole 16s, one sum each.
      %t0 = func.call @__gptq_rows_f_tail(%a, %bm, %bi, %mm, %row, %k64, %kw, %half, %bh, %bf, %acc#0) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, index, index, index, index, index, i64, tensor<?x?xbf16>, tensor<?x?xf16>, vector<16xf32>) -> vector<16xf32>
      %f1 = arith.addi %k64, %c16 : index
      %t1 = func.call @__gptq_rows_f_tail(%a, %bm, %bi, %mm, %row, %f1, %kw, %half, %bh, %bf, %acc#1) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, index, index, index, index, index, i64, tensor<?x?xbf16>, tensor<?x?xf16>, vector<16xf32>) -> vector<16xf32>
      %f2 = arith.addi %k64, %c32 : index
      %t2 = func.call @__gptq_rows_f_tail(%a, %bm, %bi, %mm, %row, %f2, %kw, %half, %bh, %bf, %acc#2) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, index, index, index, index, index, i64, tensor<?x?xbf16>, tensor<?x?xf16>, vector<16xf32>) -> vector<16xf32>
      // The columns after the last whole 16.
      %t3 = scf.if %ragged -> (vector<16xf32>) {
        %s = func.call @__gptq_rows_f_col(%a, %bm, %bi, %mm, %row, %kw, %false, %half, %bh, %bf, %acc#3) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, index, index, index, index, i1, i64, tensor<?x?xbf16>, tensor<?x?xf16>, vector<16xf32>) -> vector<16xf32>
        scf.yield %s : vector<16xf32>
      } else {
        scf.yield %acc#3 : vector<16xf32>
      }
      %o2 = func.call @__gptq_rows_put1(%o, %mm, %i, %zeroC, %t0, %t1, %t2, %t3) : (tensor<?x?xf32>, index, index, i1, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> tensor<?x?xf32>
      scf.yield %o2 : tensor<?x?xf32>
    }
    scf.yield %o1 : tensor<?x?xf32>
  }
  return %res : tensor<?x?xf32>
}

// Columns %kk .. %kk + 15 of row %row of W times those of A[%bi, %mm]
// added to %u if they are before %kw (the last whole 16); %u otherwise.
func.func private @__gptq_rows_f_tail(%a: tensor<?x?x?xf32>, %bm: tensor<?x?x?xf32>, %bi: index, %mm: index, %row: index, %kk: index, %kw: index, %half: i64, %bh: tensor<?x?xbf16>, %bf: tensor<?x?xf16>, %u: vector<16xf32>) -> vector<16xf32> {
  %true = arith.constant true
  %some = arith.cmpi ult, %kk, %kw : index
  %r = scf.if %some -> (vector<16xf32>) {
    %s = func.call @__gptq_rows_f_col(%a, %bm, %bi, %mm, %row, %kk, %true, %half, %bh, %bf, %u) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, index, index, index, index, i1, i64, tensor<?x?xbf16>, tensor<?x?xf16>, vector<16xf32>) -> vector<16xf32>
    scf.yield %s : vector<16xf32>
  } else {
    scf.yield %u : vector<16xf32>
  }
  return %r : vector<16xf32>
}

// Columns %kk .. %kk + 15 of row %row of W times those of A[%bi, %mm],
// added to %u (lanes past K, with %inb false, add zeros).
func.func private @__gptq_rows_f_col(%a: tensor<?x?x?xf32>, %bm: tensor<?x?x?xf32>, %bi: index, %mm: index, %row: index, %kk: index, %inb: i1, %half: i64, %bh: tensor<?x?xbf16>, %bf: tensor<?x?xf16>, %u: vector<16xf32>) -> vector<16xf32> {
  %zero = arith.constant 0.0 : f32
  %x = scf.if %inb -> (vector<16xf32>) {
    %v = vector.transfer_read %a[%bi, %mm, %kk], %zero {in_bounds = [true]} : tensor<?x?x?xf32>, vector<16xf32>
    scf.yield %v : vector<16xf32>
  } else {
    %v = vector.transfer_read %a[%bi, %mm, %kk], %zero : tensor<?x?x?xf32>, vector<16xf32>
    scf.yield %v : vector<16xf32>
  }
  %w = func.call @__gptq_rows_row16(%bm, %bi, %row, %kk, %inb, %half, %bh, %bf) : (tensor<?x?x?xf32>, index, index, index, i1, i64, tensor<?x?xbf16>, tensor<?x?xf16>) -> vector<16xf32>
  %f = math.fma %x, %w, %u : vector<16xf32>
  return %f : vector<16xf32>
}

// Rows %j + %r0 .. + 3 of __gptq_matmul_rows's product for batch %bi (those
// of them before N = %n; a missing row reads row N - 1 and is not written).
func.func private @__gptq_rows_k4(%a: tensor<?x?x?xf32>, %bm: tensor<?x?x?xf32>, %bi: index, %blk: tensor<?x?xf32>, %r0: index, %j: index, %n: index, %zeroC: i1, %half: i64, %bh: tensor<?x?xbf16>, %bf: tensor<?x?xf16>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %true = arith.constant true
  %false = arith.constant false
  %zv = arith.constant dense<0.0> : vector<16xf32>
  %m = tensor.dim %blk, %c0 : tensor<?x?xf32>
  %jn = tensor.dim %blk, %c1 : tensor<?x?xf32>
  %k = tensor.dim %a, %c2 : tensor<?x?x?xf32>
  %kb = arith.divui %k, %c16 : index
  %kw = arith.muli %kb, %c16 : index
  %ragged = arith.cmpi ult, %kw, %k : index
  %last = arith.subi %n, %c1 : index
  %b0 = arith.addi %j, %r0 : index
  %row0, %row1, %row2, %row3 = func.call @__gptq_rows_four(%b0, %last) : (index, index) -> (index, index, index, index)
  %res = scf.for %mm = %c0 to %m step %c1 iter_args(%o = %blk) -> (tensor<?x?xf32>) {
    %acc:4 = scf.for %kk = %c0 to %kw step %c16 iter_args(%a0 = %zv, %a1 = %zv, %a2 = %zv, %a3 = %zv) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
      %s:4 = func.call @__gptq_rows_k4_step(%a, %bm, %bi, %mm, %kk, %true, %row0, %row1, %row2, %row3, %half, %bh, %bf, %a0, %a1, %a2, %a3) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, index, index, index, i1, index, index, index, index, i64, tensor<?x?xbf16>, tensor<?x?xf16>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
      scf.yield %s#0, %s#1, %s#2, %s#3 : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
    }
    // The columns after the last whole 16.
    %fin:4 = scf.if %ragged -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
      %s:4 = func.call @__gptq_rows_k4_step(%a, %bm, %bi, %mm, %kw, %false, %row0, %row1, %row2, %row3, %half, %bh, %bf, %acc#0, %acc#1, %acc#2, %acc#3) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, index, index, index, i1, index, index, index, index, i64, tensor<?x?xbf16>, tensor<?x?xf16>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
      scf.yield %s#0, %s#1, %s#2, %s#3 : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
    } else {
      scf.yield %acc#0, %acc#1, %acc#2, %acc#3 : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
    }
    %o4 = func.call @__gptq_rows_put(%o, %mm, %r0, %jn, %zeroC, %fin#0, %fin#1, %fin#2, %fin#3) : (tensor<?x?xf32>, index, index, index, i1, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> tensor<?x?xf32>
    scf.yield %o4 : tensor<?x?xf32>
  }
  return %res : tensor<?x?xf32>
}

// __gptq_matmul_rows for a 4-bit weight W = dequantize(unpack(%qw)) whose
// groups are runs of %size columns, a multiple of 16
// (__gptq_groups_in_runs): W[n, k] = s * (code - z) with the row's scale
// and zero of the column's group, as __gptq_pack_dequantized computes it,
// in registers: a word of %qw holds eight columns' codes of one row; the
// words of 16 rows are transposed, so that each column's codes are a shift
// and mask of one vector.
func.func private @__gptq_matmul_rows_q4(%a: tensor<?x?x?xf32>, %c: tensor<?x?x?xf32>, %zeroC: i1, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %size: index) -> tensor<?x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %false = arith.constant false
  %nb = tensor.dim %c, %c0 : tensor<?x?x?xf32>
  %m = tensor.dim %c, %c1 : tensor<?x?x?xf32>
  %n = tensor.dim %c, %c2 : tensor<?x?x?xf32>
  %k = tensor.dim %a, %c2 : tensor<?x?x?xf32>
  %nt = arith.ceildivsi %n, %c64 : index
  %tasks = arith.muli %nb, %nt : index
  %kb = arith.divui %k, %c128 : index
  %kwhole = arith.muli %kb, %c128 : index
  %r = scf.forall (%t) in (%tasks) shared_outs(%cc = %c) -> (tensor<?x?x?xf32>) {
    %bi = arith.divui %t, %nt : index
    %ti = arith.remui %t, %nt : index
    %j = arith.muli %ti, %c64 : index
    %left = arith.subi %n, %j : index
    %jn = arith.minsi %left, %c64 : index
    %blk0 = tensor.extract_slice %cc[%bi, 0, %j] [1, %m, %jn] [1, 1, 1] : tensor<?x?x?xf32> to tensor<?x?xf32>
    %wide = arith.cmpi eq, %jn, %c64 : index
    %kw = arith.select %wide, %kwhole, %c0 : index
    %blk1 = scf.if %wide -> (tensor<?x?xf32>) {
      %w = func.call @__gptq_rows_q4_wide(%a, %bi, %blk0, %j, %kw, %zeroC, %qw, %qs, %qz, %size) : (tensor<?x?x?xf32>, index, tensor<?x?xf32>, index, index, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index) -> tensor<?x?xf32>
      scf.yield %w : tensor<?x?xf32>
    } else {
      scf.yield %blk0 : tensor<?x?xf32>
    }
    %started = arith.cmpi ugt, %kw, %c0 : index
    %zeroRest = arith.select %started, %false, %zeroC : i1
    %more = arith.cmpi ult, %kw, %k : index
    %blk2 = scf.if %more -> (tensor<?x?xf32>) {
      %subs = arith.ceildivsi %jn, %c16 : index
      %done = scf.for %sb = %c0 to %subs step %c1 iter_args(%o = %blk1) -> (tensor<?x?xf32>) {
        %off = arith.muli %sb, %c16 : index
        %sleft = arith.subi %jn, %off : index
        %sn = arith.minsi %sleft, %c16 : index
        %sub = tensor.extract_slice %o[0, %off] [%m, %sn] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
        %jj = arith.addi %j, %off : index
        %s2 = func.call @__gptq_rows_q4_narrow(%a, %bi, %sub, %jj, %kw, %zeroRest, %qw, %qs, %qz, %size) : (tensor<?x?x?xf32>, index, tensor<?x?xf32>, index, index, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index) -> tensor<?x?xf32>
        %o2 = tensor.insert_slice %s2 into %o[0, %off] [%m, %sn] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
        scf.yield %o2 : tensor<?x?xf32>
      }
      scf.yield %done : tensor<?x?xf32>
    } else {
      scf.yield %blk1 : tensor<?x?xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %blk2 into %cc[%bi, 0, %j] [1, %m, %jn] [1, 1, 1] : tensor<?x?xf32> into tensor<?x?x?xf32>
    }
  }
  return %r : tensor<?x?x?xf32>
}

// __gptq_matmul_rows_q4 over 64 rows of W (%j ..) and its first %kw columns
// (a multiple of 128, so 16 whole words of every row): the 64 rows' scales
// and zeros are first transposed into scratches (row g: group g's), then
// each step reads four 16 x 16 blocks of words, transposes them into a
// scratch (row w: word w of the 64 rows), and for each word's eight columns
// shifts, masks and dequantizes the 64 codes and takes one FMA per column.
// The rows' next words are prefetched, 64 streams being more than the
// hardware's prefetcher follows.
func.func private @__gptq_rows_q4_wide(%a: tensor<?x?x?xf32>, %bi: index, %blk: tensor<?x?xf32>, %j: index, %kw: index, %zeroC: i1, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %size: index) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %zw = arith.constant 0 : i32
  %four = arith.constant 4 : i32
  %zv = arith.constant dense<0.0> : vector<64xf32>
  %fifteen = arith.constant dense<15> : vector<64xi32>
  // Words ahead of the one read that each step prefetches (two steps).
  %wdist = arith.constant 32 : index
  %m = tensor.dim %blk, %c0 : tensor<?x?xf32>
  %groups = tensor.dim %qs, %c1 : tensor<?x?xf32>
  %nw = arith.divui %kw, %c8 : index
  %qwm = bufferization.to_buffer %qw read_only : tensor<?x?xi32> to memref<?x?xi32, strided<[?, ?], offset: ?>>
  // The grids of the groups the first %kw columns reach.
  %gl = arith.subi %kw, %c1 : index
  %glast = arith.divui %gl, %size : index
  %gused = arith.addi %glast, %c1 : index
  %ng = arith.minui %gused, %groups : index
  %gb = arith.ceildivsi %ng, %c16 : index
  %st0 = tensor.empty(%ng) : tensor<?x64xf32>
  %zt0 = tensor.empty(%ng) : tensor<?x64xf32>
  %grids:2 = scf.for %gi = %c0 to %gb step %c1 iter_args(%st = %st0, %zt = %zt0) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
    %g0 = arith.muli %gi, %c16 : index
    %inner:2 = scf.for %b = %c0 to %c4 step %c1 iter_args(%sa = %st, %za = %zt) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
      %off = arith.muli %b, %c16 : index
      %jb = arith.addi %j, %off : index
      %sb = vector.transfer_read %qs[%jb, %g0], %zero {in_bounds = [true, false]} : tensor<?x?xf32>, vector<16x16xf32>
      %zb = vector.transfer_read %qz[%jb, %g0], %zero {in_bounds = [true, false]} : tensor<?x?xf32>, vector<16x16xf32>
      %sbt = vector.transpose %sb, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
      %zbt = vector.transpose %zb, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
      %sa2 = vector.transfer_write %sbt, %sa[%g0, %off] {in_bounds = [false, true]} : vector<16x16xf32>, tensor<?x64xf32>
      %za2 = vector.transfer_write %zbt, %za[%g0, %off] {in_bounds = [false, true]} : vector<16x16xf32>, tensor<?x64xf32>
      scf.yield %sa2, %za2 : tensor<?x64xf32>, tensor<?x64xf32>
    }
    scf.yield %inner#0, %inner#1 : tensor<?x64xf32>, tensor<?x64xf32>
  }
  %res = scf.for %mm = %c0 to %m step %c1 iter_args(%o = %blk) -> (tensor<?x?xf32>) {
    %init = scf.if %zeroC -> (vector<64xf32>) {
      scf.yield %zv : vector<64xf32>
    } else {
      %cr = vector.transfer_read %o[%mm, %c0], %zero {in_bounds = [true]} : tensor<?x?xf32>, vector<64xf32>
      scf.yield %cr : vector<64xf32>
    }
    %firstw = arith.minui %wdist, %nw : index
    scf.for %r = %c0 to %c64 step %c1 {
      %row = arith.addi %j, %r : index
      scf.for %col = %c0 to %firstw step %c16 {
        memref.prefetch %qwm[%row, %col], read, locality<3>, data : memref<?x?xi32, strided<[?, ?], offset: ?>>
      }
    }
    %scr0 = tensor.empty() : tensor<16x64xi32>
    %accs:2 = scf.for %kk = %c0 to %kw step %c128 iter_args(%v = %init, %scr = %scr0) -> (vector<64xf32>, tensor<16x64xi32>) {
      %w0 = arith.divui %kk, %c8 : index
      %ahead = arith.addi %w0, %wdist : index
      %prefetch = arith.cmpi ult, %ahead, %nw : index
      %scr1 = scf.for %b = %c0 to %c4 step %c1 iter_args(%s = %scr) -> (tensor<16x64xi32>) {
        %off = arith.muli %b, %c16 : index
        %jb = arith.addi %j, %off : index
        %words = vector.transfer_read %qw[%jb, %w0], %zw {in_bounds = [true, true]} : tensor<?x?xi32>, vector<16x16xi32>
        scf.if %prefetch {
          scf.for %r = %c0 to %c16 step %c1 {
            %row = arith.addi %jb, %r : index
            memref.prefetch %qwm[%row, %ahead], read, locality<3>, data : memref<?x?xi32, strided<[?, ?], offset: ?>>
          }
        }
        %wt = vector.transpose %words, [1, 0] : vector<16x16xi32> to vector<16x16xi32>
        %s2 = vector.transfer_write %wt, %s[%c0, %off] {in_bounds = [true, true]} : vector<16x16xi32>, tensor<16x64xi32>
        scf.yield %s2 : tensor<16x64xi32>
      }
      %step = scf.for %wi = %c0 to %c16 step %c1 iter_args(%u = %v) -> (vector<64xf32>) {
        %wcol = arith.muli %wi, %c8 : index
        %col0 = arith.addi %kk, %wcol : index
        %g = arith.divui %col0, %size : index
        %sv = vector.transfer_read %grids#0[%g, %c0], %zero {in_bounds = [true]} : tensor<?x64xf32>, vector<64xf32>
        %zp = vector.transfer_read %grids#1[%g, %c0], %zero {in_bounds = [true]} : tensor<?x64xf32>, vector<64xf32>
        %word = vector.transfer_read %scr1[%wi, %c0], %zw {in_bounds = [true]} : tensor<16x64xi32>, vector<64xi32>
        // Eight columns in a loop of constant trip count (unrolled by
        // LLVM, its shifts constants).
        %sum = scf.for %i = %c0 to %c8 step %c1 iter_args(%x = %u) -> (vector<64xf32>) {
          %ii = arith.index_cast %i : index to i32
          %bit = arith.muli %ii, %four : i32
          %shv = vector.broadcast %bit : i32 to vector<64xi32>
          %sh = arith.shrui %word, %shv : vector<64xi32>
          %code = arith.andi %sh, %fifteen : vector<64xi32>
          %qf = arith.uitofp %code : vector<64xi32> to vector<64xf32>
          %d = arith.subf %qf, %zp : vector<64xf32>
          %w = arith.mulf %sv, %d : vector<64xf32>
          %ki = arith.addi %col0, %i : index
          %ai = tensor.extract %a[%bi, %mm, %ki] : tensor<?x?x?xf32>
          %ab = vector.broadcast %ai : f32 to vector<64xf32>
          %f = math.fma %ab, %w, %x : vector<64xf32>
          scf.yield %f : vector<64xf32>
        }
        scf.yield %sum : vector<64xf32>
      }
      scf.yield %step, %scr1 : vector<64xf32>, tensor<16x64xi32>
    }
    %o2 = vector.transfer_write %accs#0, %o[%mm, %c0] {in_bounds = [true]} : vector<64xf32>, tensor<?x?xf32>
    scf.yield %o2 : tensor<?x?xf32>
  }
  return %res : tensor<?x?xf32>
}

// __gptq_matmul_rows_q4 over up to 16 rows of W (%j .., as many as %blk's
// columns) and its columns from %k0 on (a multiple of 16): for 16 columns,
// the two words of codes of each row are read (masked) and transposed.
func.func private @__gptq_rows_q4_narrow(%a: tensor<?x?x?xf32>, %bi: index, %blk: tensor<?x?xf32>, %j: index, %k0: index, %zeroC: i1, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %size: index) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c4i = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %zw = arith.constant 0 : i32
  %zv = arith.constant dense<0.0> : vector<16xf32>
  %fifteen = arith.constant dense<15> : vector<16xi32>
  %m = tensor.dim %blk, %c0 : tensor<?x?xf32>
  %k = tensor.dim %a, %c2 : tensor<?x?x?xf32>
  %res = scf.for %mm = %c0 to %m step %c1 iter_args(%o = %blk) -> (tensor<?x?xf32>) {
    %init = scf.if %zeroC -> (vector<16xf32>) {
      scf.yield %zv : vector<16xf32>
    } else {
      %cr = vector.transfer_read %o[%mm, %c0], %zero : tensor<?x?xf32>, vector<16xf32>
      scf.yield %cr : vector<16xf32>
    }
    %acc = scf.for %kk = %k0 to %k step %c16 iter_args(%v = %init) -> (vector<16xf32>) {
      %w0 = arith.divui %kk, %c8 : index
      %words = vector.transfer_read %qw[%j, %w0], %zw : tensor<?x?xi32>, vector<16x2xi32>
      %wt = vector.transpose %words, [1, 0] : vector<16x2xi32> to vector<2x16xi32>
      %wlo = vector.extract %wt[0] : vector<16xi32> from vector<2x16xi32>
      %whi = vector.extract %wt[1] : vector<16xi32> from vector<2x16xi32>
      %g = arith.divui %kk, %size : index
      %sv = vector.transfer_read %qs[%j, %g], %zero {permutation_map = affine_map<(d0, d1) -> (d0)>} : tensor<?x?xf32>, vector<16xf32>
      %zp = vector.transfer_read %qz[%j, %g], %zero {permutation_map = affine_map<(d0, d1) -> (d0)>} : tensor<?x?xf32>, vector<16xf32>
      %kleft = arith.subi %k, %kk : index
      %kin = arith.minsi %kleft, %c16 : index
      %s = scf.for %i = %c0 to %kin step %c1 iter_args(%u = %v) -> (vector<16xf32>) {
        %upper = arith.cmpi uge, %i, %c8 : index
        %word = arith.select %upper, %whi, %wlo : vector<16xi32>
        %within = arith.andi %i, %c7 : index
        %bit = arith.muli %within, %c4i : index
        %biti = arith.index_cast %bit : index to i32
        %shv = vector.broadcast %biti : i32 to vector<16xi32>
        %sh = arith.shrui %word, %shv : vector<16xi32>
        %code = arith.andi %sh, %fifteen : vector<16xi32>
        %qf = arith.uitofp %code : vector<16xi32> to vector<16xf32>
        %d = arith.subf %qf, %zp : vector<16xf32>
        %w = arith.mulf %sv, %d : vector<16xf32>
        %ki = arith.addi %kk, %i : index
        %ai = tensor.extract %a[%bi, %mm, %ki] : tensor<?x?x?xf32>
        %ab = vector.broadcast %ai : f32 to vector<16xf32>
        %f = math.fma %ab, %w, %u : vector<16xf32>
        scf.yield %f : vector<16xf32>
      }
      scf.yield %s : vector<16xf32>
    }
    %o2 = vector.transfer_write %acc, %o[%mm, %c0] : vector<16xf32>, tensor<?x?xf32>
    scf.yield %o2 : tensor<?x?xf32>
  }
  return %res : tensor<?x?xf32>
}

// __gptq_matmul_rows for a 4-bit weight whose groups are runs of a
// multiple of 128 columns (one M x K times K x N, one batch), in the order
// of K: a row's 16 words of codes for 128 columns (a chunk) are one vector
// (lane i: columns 8i .. 8i + 7), the activations of those columns are
// transposed to match (%xp[m, chunk, j, i] = A[0, m, 128 chunk + 8i + j]),
// and each shift of the words picks, for every lane, its column's weight
// from the row's 16-entry table of the group, T[q] = s * (q - z), the
// values __gptq_pack_dequantized computes. One row of W at a time
// (__gptq_rows_q4_lut_rows): each thread reads its rows as one stream in
// memory order. The same weights as the tiled kernel's, summed in another
// order: results agree to rounding.
func.func private @__gptq_matmul_rows_q4_lut(%a: tensor<?x?x?xf32>, %c: tensor<?x?x?xf32>, %zeroC: i1, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %size: index) -> tensor<?x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %c, %c1 : tensor<?x?x?xf32>
  %n = tensor.dim %c, %c2 : tensor<?x?x?xf32>
  %k = tensor.dim %a, %c2 : tensor<?x?x?xf32>
  %chunks = arith.ceildivsi %k, %c128 : index
  %xp0 = tensor.empty(%m, %chunks) : tensor<?x?x8x16xf32>
  %xp = scf.for %mm = %c0 to %m step %c1 iter_args(%x0 = %xp0) -> (tensor<?x?x8x16xf32>) {
    %x1 = scf.for %ch = %c0 to %chunks step %c1 iter_args(%x2 = %x0) -> (tensor<?x?x8x16xf32>) {
      %col = arith.muli %ch, %c128 : index
      %raw = vector.transfer_read %a[%c0, %mm, %col], %zero : tensor<?x?x?xf32>, vector<128xf32>
      %blk = vector.shape_cast %raw : vector<128xf32> to vector<16x8xf32>
      %t = vector.transpose %blk, [1, 0] : vector<16x8xf32> to vector<8x16xf32>
      %x3 = vector.transfer_write %t, %x2[%mm, %ch, %c0, %c0] {in_bounds = [true, true]} : vector<8x16xf32>, tensor<?x?x8x16xf32>
      scf.yield %x3 : tensor<?x?x8x16xf32>
    }
    scf.yield %x1 : tensor<?x?x8x16xf32>
  }
  // The group of each chunk, once a call: a division in every chunk would
  // cost as much as a few of its 32 vector instructions.
  %gmap = func.call @__gptq_chunk_groups(%chunks, %c128, %size) : (index, index, index) -> tensor<?xindex>
  // One row at a time while a row of activations (K floats) fills at most
  // half of a 32 KiB L1 data cache; past that, every row would read them
  // from L2 and the misses crowd out the weights' prefetches: four rows at
  // a time instead (__gptq_rows_q4_lut4), which reads them once for four.
  %c4096 = arith.constant 4096 : index
  %byrow = arith.cmpi ule, %k, %c4096 : index
  %nt = arith.ceildivsi %n, %c16 : index
  %r = scf.forall (%t) in (%nt) shared_outs(%cc = %c) -> (tensor<?x?x?xf32>) {
    %j = arith.muli %t, %c16 : index
    %left = arith.subi %n, %j : index
    %jn = arith.minsi %left, %c16 : index
    %blk0 = tensor.extract_slice %cc[0, 0, %j] [1, %m, %jn] [1, 1, 1] : tensor<?x?x?xf32> to tensor<?x?xf32>
    %blk = scf.if %byrow -> (tensor<?x?xf32>) {
      %b1 = func.call @__gptq_rows_q4_lut_rows(%xp, %gmap, %blk0, %j, %zeroC, %qw, %qs, %qz) : (tensor<?x?x8x16xf32>, tensor<?xindex>, tensor<?x?xf32>, index, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
      scf.yield %b1 : tensor<?x?xf32>
    } else {
      %quads = arith.ceildivsi %jn, %c4 : index
      %b4 = scf.for %qd = %c0 to %quads step %c1 iter_args(%o = %blk0) -> (tensor<?x?xf32>) {
        %r0 = arith.muli %qd, %c4 : index
        %o2 = func.call @__gptq_rows_q4_lut4(%xp, %gmap, %o, %r0, %j, %zeroC, %qw, %qs, %qz) : (tensor<?x?x8x16xf32>, tensor<?xindex>, tensor<?x?xf32>, index, index, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
        scf.yield %o2 : tensor<?x?xf32>
      }
      scf.yield %b4 : tensor<?x?xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %blk into %cc[0, 0, %j] [1, %m, %jn] [1, 1, 1] : tensor<?x?xf32> into tensor<?x?x?xf32>
    }
  }
  return %r : tensor<?x?x?xf32>
}

// The group of each of %chunks chunks of %width columns, for groups that
// are runs of %size columns (a multiple of %width): made once a call, so
// that a kernel's chunk reads its group instead of dividing.
func.func private @__gptq_chunk_groups(%chunks: index, %width: index, %size: index) -> tensor<?xindex> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %perg = arith.divui %size, %width : index
  %gm0 = tensor.empty(%chunks) : tensor<?xindex>
  %gmap = scf.for %ch = %c0 to %chunks step %c1 iter_args(%g0 = %gm0) -> (tensor<?xindex>) {
    %g = arith.divui %ch, %perg : index
    %g1 = tensor.insert %g into %g0[%ch] : tensor<?xindex>
    scf.yield %g1 : tensor<?xindex>
  }
  return %gmap : tensor<?xindex>
}

// Lane i of %table at the low four bits of %code[i], for every lane (a
// variable permute), in portable operations. Kept out of line until the module's buffers are
// placed: gptq-select-kernel-forms then gives it its x86 form, permutes
// (KernelsX86.mlir), for the instruction set the module is lowered for.
func.func private @__gptq_lut16(%table: vector<16xf32>, %codes: vector<16xi32>) -> vector<16xf32> attributes {no_inline} {
  %fifteen = arith.constant dense<15> : vector<16xi32>
  %code = arith.andi %codes, %fifteen : vector<16xi32>
  %i0 = vector.extract %code[0] : i32 from vector<16xi32>
  %i1 = vector.extract %code[1] : i32 from vector<16xi32>
  %i2 = vector.extract %code[2] : i32 from vector<16xi32>
  %i3 = vector.extract %code[3] : i32 from vector<16xi32>
  %i4 = vector.extract %code[4] : i32 from vector<16xi32>
  %i5 = vector.extract %code[5] : i32 from vector<16xi32>
  %i6 = vector.extract %code[6] : i32 from vector<16xi32>
  %i7 = vector.extract %code[7] : i32 from vector<16xi32>
  %i8 = vector.extract %code[8] : i32 from vector<16xi32>
  %i9 = vector.extract %code[9] : i32 from vector<16xi32>
  %i10 = vector.extract %code[10] : i32 from vector<16xi32>
  %i11 = vector.extract %code[11] : i32 from vector<16xi32>
  %i12 = vector.extract %code[12] : i32 from vector<16xi32>
  %i13 = vector.extract %code[13] : i32 from vector<16xi32>
  %i14 = vector.extract %code[14] : i32 from vector<16xi32>
  %i15 = vector.extract %code[15] : i32 from vector<16xi32>
  %x0 = arith.index_cast %i0 : i32 to index
  %x1 = arith.index_cast %i1 : i32 to index
  %x2 = arith.index_cast %i2 : i32 to index
  %x3 = arith.index_cast %i3 : i32 to index
  %x4 = arith.index_cast %i4 : i32 to index
  %x5 = arith.index_cast %i5 : i32 to index
  %x6 = arith.index_cast %i6 : i32 to index
  %x7 = arith.index_cast %i7 : i32 to index
  %x8 = arith.index_cast %i8 : i32 to index
  %x9 = arith.index_cast %i9 : i32 to index
  %x10 = arith.index_cast %i10 : i32 to index
  %x11 = arith.index_cast %i11 : i32 to index
  %x12 = arith.index_cast %i12 : i32 to index
  %x13 = arith.index_cast %i13 : i32 to index
  %x14 = arith.index_cast %i14 : i32 to index
  %x15 = arith.index_cast %i15 : i32 to index
  %v0 = vector.extract %table[%x0] : f32 from vector<16xf32>
  %v1 = vector.extract %table[%x1] : f32 from vector<16xf32>
  %v2 = vector.extract %table[%x2] : f32 from vector<16xf32>
  %v3 = vector.extract %table[%x3] : f32 from vector<16xf32>
  %v4 = vector.extract %table[%x4] : f32 from vector<16xf32>
  %v5 = vector.extract %table[%x5] : f32 from vector<16xf32>
  %v6 = vector.extract %table[%x6] : f32 from vector<16xf32>
  %v7 = vector.extract %table[%x7] : f32 from vector<16xf32>
  %v8 = vector.extract %table[%x8] : f32 from vector<16xf32>
  %v9 = vector.extract %table[%x9] : f32 from vector<16xf32>
  %v10 = vector.extract %table[%x10] : f32 from vector<16xf32>
  %v11 = vector.extract %table[%x11] : f32 from vector<16xf32>
  %v12 = vector.extract %table[%x12] : f32 from vector<16xf32>
  %v13 = vector.extract %table[%x13] : f32 from vector<16xf32>
  %v14 = vector.extract %table[%x14] : f32 from vector<16xf32>
  %v15 = vector.extract %table[%x15] : f32 from vector<16xf32>
  %w = vector.from_elements %v0, %v1, %v2, %v3, %v4, %v5, %v6, %v7, %v8, %v9, %v10, %v11, %v12, %v13, %v14, %v15 : vector<16xf32>
  return %w : vector<16xf32>
}

// The 4-bit table of row %row's group %g: T[q] = s * (q - z).
func.func private @__gptq_q4_table(%qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %row: index, %g: index) -> vector<16xf32> {
  %iota = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]> : vector<16xf32>
  %s = tensor.extract %qs[%row, %g] : tensor<?x?xf32>
  %z = tensor.extract %qz[%row, %g] : tensor<?x?xf32>
  %sv = vector.broadcast %s : f32 to vector<16xf32>
  %zv = vector.broadcast %z : f32 to vector<16xf32>
  %d = arith.subf %iota, %zv : vector<16xf32>
  %t = arith.mulf %sv, %d : vector<16xf32>
  return %t : vector<16xf32>
}

// Rows %j + %r0 .. + 3 of __gptq_matmul_rows_q4_lut's product (those of
// them before N; a missing row reads row N - 1 and is not written).
func.func private @__gptq_rows_q4_lut4(%xp: tensor<?x?x8x16xf32>, %gmap: tensor<?xindex>, %blk: tensor<?x?xf32>, %r0: index, %j: index, %zeroC: i1, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %zw = arith.constant 0 : i32
  %zv = arith.constant dense<0.0> : vector<16xf32>
  %m = tensor.dim %blk, %c0 : tensor<?x?xf32>
  %jn = tensor.dim %blk, %c1 : tensor<?x?xf32>
  %n = tensor.dim %qw, %c0 : tensor<?x?xi32>
  %chunks = tensor.dim %xp, %c1 : tensor<?x?x8x16xf32>
  %last = arith.subi %n, %c1 : index
  %b0 = arith.addi %j, %r0 : index
  %row0, %row1, %row2, %row3 = func.call @__gptq_rows_four(%b0, %last) : (index, index) -> (index, index, index, index)
  // Rows ahead of the first that each chunk prefetches.
  %pdist = arith.constant 8 : index
  %qwm = bufferization.to_buffer %qw read_only : tensor<?x?xi32> to memref<?x?xi32, strided<[?, ?], offset: ?>>
  %res = scf.for %mm = %c0 to %m step %c1 iter_args(%o = %blk) -> (tensor<?x?xf32>) {
    %acc:4 = scf.for %ch = %c0 to %chunks step %c1 iter_args(%a0 = %zv, %a1 = %zv, %a2 = %zv, %a3 = %zv) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
      %g = tensor.extract %gmap[%ch] : tensor<?xindex>
      %w0 = arith.muli %ch, %c16 : index
      %t0 = func.call @__gptq_q4_table(%qs, %qz, %row0, %g) : (tensor<?x?xf32>, tensor<?x?xf32>, index, index) -> vector<16xf32>
      %t1 = func.call @__gptq_q4_table(%qs, %qz, %row1, %g) : (tensor<?x?xf32>, tensor<?x?xf32>, index, index) -> vector<16xf32>
      %t2 = func.call @__gptq_q4_table(%qs, %qz, %row2, %g) : (tensor<?x?xf32>, tensor<?x?xf32>, index, index) -> vector<16xf32>
      %t3 = func.call @__gptq_q4_table(%qs, %qz, %row3, %g) : (tensor<?x?xf32>, tensor<?x?xf32>, index, index) -> vector<16xf32>
      scf.for %pr = %c0 to %c4 step %c1 {
        %ahead0 = arith.addi %b0, %pdist : index
        %ahead1 = arith.addi %ahead0, %pr : index
        %ahead = arith.minui %ahead1, %last : index
        memref.prefetch %qwm[%ahead, %w0], read, locality<3>, data : memref<?x?xi32, strided<[?, ?], offset: ?>>
      }
      %q0 = vector.transfer_read %qw[%row0, %w0], %zw : tensor<?x?xi32>, vector<16xi32>
      %q1 = vector.transfer_read %qw[%row1, %w0], %zw : tensor<?x?xi32>, vector<16xi32>
      %q2 = vector.transfer_read %qw[%row2, %w0], %zw : tensor<?x?xi32>, vector<16xi32>
      %q3 = vector.transfer_read %qw[%row3, %w0], %zw : tensor<?x?xi32>, vector<16xi32>
      // The eight columns of each lane's word, one call each (their shifts
      // constants once inlined).
      %j0 = arith.constant 0 : index
      %s0:4 = func.call @__gptq_rows_q4_lut_step(%xp, %mm, %ch, %j0, %q0, %q1, %q2, %q3, %t0, %t1, %t2, %t3, %a0, %a1, %a2, %a3) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
      %j1 = arith.constant 1 : index
      %s1:4 = func.call @__gptq_rows_q4_lut_step(%xp, %mm, %ch, %j1, %q0, %q1, %q2, %q3, %t0, %t1, %t2, %t3, %s0#0, %s0#1, %s0#2, %s0#3) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
      %j2 = arith.constant 2 : index
      %s2:4 = func.call @__gptq_rows_q4_lut_step(%xp, %mm, %ch, %j2, %q0, %q1, %q2, %q3, %t0, %t1, %t2, %t3, %s1#0, %s1#1, %s1#2, %s1#3) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
      %j3 = arith.constant 3 : index
      %s3:4 = func.call @__gptq_rows_q4_lut_step(%xp, %mm, %ch, %j3, %q0, %q1, %q2, %q3, %t0, %t1, %t2, %t3, %s2#0, %s2#1, %s2#2, %s2#3) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
      %j4 = arith.constant 4 : index
      %s4:4 = func.call @__gptq_rows_q4_lut_step(%xp, %mm, %ch, %j4, %q0, %q1, %q2, %q3, %t0, %t1, %t2, %t3, %s3#0, %s3#1, %s3#2, %s3#3) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
      %j5 = arith.constant 5 : index
      %s5:4 = func.call @__gptq_rows_q4_lut_step(%xp, %mm, %ch, %j5, %q0, %q1, %q2, %q3, %t0, %t1, %t2, %t3, %s4#0, %s4#1, %s4#2, %s4#3) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
      %j6 = arith.constant 6 : index
      %s6:4 = func.call @__gptq_rows_q4_lut_step(%xp, %mm, %ch, %j6, %q0, %q1, %q2, %q3, %t0, %t1, %t2, %t3, %s5#0, %s5#1, %s5#2, %s5#3) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
      %j7 = arith.constant 7 : index
      %s7:4 = func.call @__gptq_rows_q4_lut_step(%xp, %mm, %ch, %j7, %q0, %q1, %q2, %q3, %t0, %t1, %t2, %t3, %s6#0, %s6#1, %s6#2, %s6#3) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
      scf.yield %s7#0, %s7#1, %s7#2, %s7#3 : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
    }
    %o4 = func.call @__gptq_rows_put(%o, %mm, %r0, %jn, %zeroC, %acc#0, %acc#1, %acc#2, %acc#3) : (tensor<?x?xf32>, index, index, index, i1, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> tensor<?x?xf32>
    scf.yield %o4 : tensor<?x?xf32>
  }
  return %res : tensor<?x?xf32>
}

// Column %jj of each lane's word (of the 128 columns of chunk %ch) for
// four rows: __gptq_rows_q4_lut_col of words %q0 .. %q3 in tables
// %t0 .. %t3, added to %u0 .. %u3 (the activations read once, inlined).
func.func private @__gptq_rows_q4_lut_step(%xp: tensor<?x?x8x16xf32>, %mm: index, %ch: index, %jj: index, %q0: vector<16xi32>, %q1: vector<16xi32>, %q2: vector<16xi32>, %q3: vector<16xi32>, %t0: vector<16xf32>, %t1: vector<16xf32>, %t2: vector<16xf32>, %t3: vector<16xf32>, %u0: vector<16xf32>, %u1: vector<16xf32>, %u2: vector<16xf32>, %u3: vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
  %f0 = func.call @__gptq_rows_q4_lut_col(%xp, %mm, %ch, %jj, %q0, %t0, %u0) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
  %f1 = func.call @__gptq_rows_q4_lut_col(%xp, %mm, %ch, %jj, %q1, %t1, %u1) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
  %f2 = func.call @__gptq_rows_q4_lut_col(%xp, %mm, %ch, %jj, %q2, %t2, %u2) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
  %f3 = func.call @__gptq_rows_q4_lut_col(%xp, %mm, %ch, %jj, %q3, %t3, %u3) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
  return %f0, %f1, %f2, %f3 : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
}

// Rows %j .. of W (as many as %blk's columns) of __gptq_matmul_rows_q4_lut's
// product, one at a time, for every row of A: a row's chunks go four at a
// time into four sums (chunk c into sum c mod 4, four independent chains
// of FMAs); whole chunks are read in bounds, a last partial one masked.
// Each chunk prefetches the same words %ahead rows on (about 1 KiB on:
// with the rows one stream, the words about 16 chunks ahead).
func.func private @__gptq_rows_q4_lut_rows(%xp: tensor<?x?x8x16xf32>, %gmap: tensor<?xindex>, %blk: tensor<?x?xf32>, %j: index, %zeroC: i1, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c256 = arith.constant 256 : index
  %true = arith.constant true
  %zv = arith.constant dense<0.0> : vector<16xf32>
  %m = tensor.dim %blk, %c0 : tensor<?x?xf32>
  %jn = tensor.dim %blk, %c1 : tensor<?x?xf32>
  %chunks = tensor.dim %xp, %c1 : tensor<?x?x8x16xf32>
  %n = tensor.dim %qw, %c0 : tensor<?x?xi32>
  %wn = tensor.dim %qw, %c1 : tensor<?x?xi32>
  %last = arith.subi %n, %c1 : index
  %ahead = arith.ceildivui %c256, %wn : index
  %whole = arith.divui %wn, %c16 : index
  %quads = arith.divui %chunks, %c4 : index
  %full = arith.muli %quads, %c4 : index
  %qwm = bufferization.to_buffer %qw read_only : tensor<?x?xi32> to memref<?x?xi32, strided<[?, ?], offset: ?>>
  %res = scf.for %i = %c0 to %jn step %c1 iter_args(%o0 = %blk) -> (tensor<?x?xf32>) {
    %row = arith.addi %j, %i : index
    %below = arith.addi %row, %ahead : index
    %prow = arith.minui %below, %last : index
    %o1 = scf.for %mm = %c0 to %m step %c1 iter_args(%o = %o0) -> (tensor<?x?xf32>) {
      %acc:4 = scf.for %cq = %c0 to %quads step %c1 iter_args(%a0 = %zv, %a1 = %zv, %a2 = %zv, %a3 = %zv) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
        %ch0 = arith.muli %cq, %c4 : index
        %ch1 = arith.addi %ch0, %c1 : index
        %ch2 = arith.addi %ch0, %c2 : index
        %ch3 = arith.addi %ch0, %c3 : index
        %in3 = arith.cmpi ult, %ch3, %whole : index
        %s0 = func.call @__gptq_rows_q4_lut_chunk(%xp, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %ch0, %true, %a0) : (tensor<?x?x8x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, i1, vector<16xf32>) -> vector<16xf32>
        %s1 = func.call @__gptq_rows_q4_lut_chunk(%xp, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %ch1, %true, %a1) : (tensor<?x?x8x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, i1, vector<16xf32>) -> vector<16xf32>
        %s2 = func.call @__gptq_rows_q4_lut_chunk(%xp, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %ch2, %true, %a2) : (tensor<?x?x8x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, i1, vector<16xf32>) -> vector<16xf32>
        // Only the last quad's last chunk may be partial.
        %s3 = func.call @__gptq_rows_q4_lut_chunk(%xp, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %ch3, %in3, %a3) : (tensor<?x?x8x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, i1, vector<16xf32>) -> vector<16xf32>
        scf.yield %s0, %s1, %s2, %s3 : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
      }
      // The last one to three chunks, one sum each.
      %t0 = func.call @__gptq_rows_q4_lut_tail(%xp, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %full, %whole, %acc#0) : (tensor<?x?x8x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, index, vector<16xf32>) -> vector<16xf32>
      %f1 = arith.addi %full, %c1 : index
      %t1 = func.call @__gptq_rows_q4_lut_tail(%xp, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %f1, %whole, %acc#1) : (tensor<?x?x8x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, index, vector<16xf32>) -> vector<16xf32>
      %f2 = arith.addi %full, %c2 : index
      %t2 = func.call @__gptq_rows_q4_lut_tail(%xp, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %f2, %whole, %acc#2) : (tensor<?x?x8x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, index, vector<16xf32>) -> vector<16xf32>
      %o2 = func.call @__gptq_rows_put1(%o, %mm, %i, %zeroC, %t0, %t1, %t2, %acc#3) : (tensor<?x?xf32>, index, index, i1, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> tensor<?x?xf32>
      scf.yield %o2 : tensor<?x?xf32>
    }
    scf.yield %o1 : tensor<?x?xf32>
  }
  return %res : tensor<?x?xf32>
}

// Chunk %ch of __gptq_rows_q4_lut_rows's tail added to %u, if there is
// such a chunk (%u as it is otherwise); read in bounds if whole.
func.func private @__gptq_rows_q4_lut_tail(%xp: tensor<?x?x8x16xf32>, %gmap: tensor<?xindex>, %qwm: memref<?x?xi32, strided<[?, ?], offset: ?>>, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %row: index, %prow: index, %mm: index, %ch: index, %whole: index, %u: vector<16xf32>) -> vector<16xf32> {
  %c1 = arith.constant 1 : index
  %chunks = tensor.dim %xp, %c1 : tensor<?x?x8x16xf32>
  %some = arith.cmpi ult, %ch, %chunks : index
  %r = scf.if %some -> (vector<16xf32>) {
    %inb = arith.cmpi ult, %ch, %whole : index
    %s = func.call @__gptq_rows_q4_lut_chunk(%xp, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %ch, %inb, %u) : (tensor<?x?x8x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, i1, vector<16xf32>) -> vector<16xf32>
    scf.yield %s : vector<16xf32>
  } else {
    scf.yield %u : vector<16xf32>
  }
  return %r : vector<16xf32>
}

// Chunk %ch of row %row of W times the activations of row %mm of A
// (%xp), added to %u: the row's table of the chunk's group (%gmap), the
// chunk's 16 words (read in bounds with %inb, else masked at the row's
// end), and the eight columns of each lane's word; the same words of row
// %prow prefetched.
func.func private @__gptq_rows_q4_lut_chunk(%xp: tensor<?x?x8x16xf32>, %gmap: tensor<?xindex>, %qwm: memref<?x?xi32, strided<[?, ?], offset: ?>>, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %row: index, %prow: index, %mm: index, %ch: index, %inb: i1, %u: vector<16xf32>) -> vector<16xf32> {
  %c16 = arith.constant 16 : index
  %zw = arith.constant 0 : i32
  %w0 = arith.muli %ch, %c16 : index
  memref.prefetch %qwm[%prow, %w0], read, locality<3>, data : memref<?x?xi32, strided<[?, ?], offset: ?>>
  %g = tensor.extract %gmap[%ch] : tensor<?xindex>
  %t = func.call @__gptq_q4_table(%qs, %qz, %row, %g) : (tensor<?x?xf32>, tensor<?x?xf32>, index, index) -> vector<16xf32>
  %q = scf.if %inb -> (vector<16xi32>) {
    %r = vector.transfer_read %qw[%row, %w0], %zw {in_bounds = [true]} : tensor<?x?xi32>, vector<16xi32>
    scf.yield %r : vector<16xi32>
  } else {
    %r = vector.transfer_read %qw[%row, %w0], %zw : tensor<?x?xi32>, vector<16xi32>
    scf.yield %r : vector<16xi32>
  }
  // The eight columns of each lane's word, one call each (their shifts
  // constants once inlined).
  %j0 = arith.constant 0 : index
  %s0 = func.call @__gptq_rows_q4_lut_col(%xp, %mm, %ch, %j0, %q, %t, %u) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
  %j1 = arith.constant 1 : index
  %s1 = func.call @__gptq_rows_q4_lut_col(%xp, %mm, %ch, %j1, %q, %t, %s0) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
  %j2 = arith.constant 2 : index
  %s2 = func.call @__gptq_rows_q4_lut_col(%xp, %mm, %ch, %j2, %q, %t, %s1) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
  %j3 = arith.constant 3 : index
  %s3 = func.call @__gptq_rows_q4_lut_col(%xp, %mm, %ch, %j3, %q, %t, %s2) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
  %j4 = arith.constant 4 : index
  %s4 = func.call @__gptq_rows_q4_lut_col(%xp, %mm, %ch, %j4, %q, %t, %s3) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
  %j5 = arith.constant 5 : index
  %s5 = func.call @__gptq_rows_q4_lut_col(%xp, %mm, %ch, %j5, %q, %t, %s4) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
  %j6 = arith.constant 6 : index
  %s6 = func.call @__gptq_rows_q4_lut_col(%xp, %mm, %ch, %j6, %q, %t, %s5) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
  %j7 = arith.constant 7 : index
  %s7 = func.call @__gptq_rows_q4_lut_col(%xp, %mm, %ch, %j7, %q, %t, %s6) : (tensor<?x?x8x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
  return %s7 : vector<16xf32>
}

// Column %jj of each lane's word %q (of the 128 columns of chunk %ch):
// its code (the word shifted and masked) looked up in the table %t, times
// the activations %xp[%mm, %ch, %jj], added to %u.
func.func private @__gptq_rows_q4_lut_col(%xp: tensor<?x?x8x16xf32>, %mm: index, %ch: index, %jj: index, %q: vector<16xi32>, %t: vector<16xf32>, %u: vector<16xf32>) -> vector<16xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %four = arith.constant 4 : i32
  %fifteen = arith.constant dense<15> : vector<16xi32>
  %xv = vector.transfer_read %xp[%mm, %ch, %jj, %c0], %zero {in_bounds = [true]} : tensor<?x?x8x16xf32>, vector<16xf32>
  %ji = arith.index_cast %jj : index to i32
  %bit = arith.muli %ji, %four : i32
  %shv = vector.broadcast %bit : i32 to vector<16xi32>
  %e = arith.shrui %q, %shv : vector<16xi32>
  %w = func.call @__gptq_lut16(%t, %e) : (vector<16xf32>, vector<16xi32>) -> vector<16xf32>
  %f = math.fma %xv, %w, %u : vector<16xf32>
  return %f : vector<16xf32>
}

// __gptq_matmul_rows_q4_lut's product with integer dot products (AVX-512
// VNNI's vpdpbusd: 64 unsigned bytes times 64 signed bytes, each four summed
// into a 32-bit lane) instead of table lookups: about 40% fewer vector
// instructions per weight. Each row of activations is written once per
// call as integers: every eight columns of a chunk (lane i: columns 8i ..
// 8i + 7, the columns of one word of codes) share an exponent e, chosen
// so that their largest magnitude is below 2^22 * 2^e, and each column
// is v * 2^e with v its value rounded to an integer (24 significant bits
// at the lane's largest, as float32 keeps). Each v is three signed bytes,
// v = 2^16 p0 + 2^8 p1 + p2, laid out as the codes are unpacked: a word's
// low nibbles (columns 0, 2, 4, 6 of the lane) and high nibbles (1, 3, 5,
// 7), each one byte (__gptq_q4_dot_prep). A chunk of a row is then six dot
// products, P = sum code * v exactly in 32-bit lanes (at most 2^30), then
// s * (P * 2^e - z * X) of the chunk's group in float32, X the lane's sum
// of activations, as the 8-bit kernel computes it. Results agree with the
// table kernel's to float32 rounding. Run where the CPU has VNNI
// (__gptq_byte_dots); __gptq_dot4's portable body, several times slower
// than the table kernel, is there for tests on any CPU. One row at a time
// (each thread's rows one stream) while K <= 4096, four rows at a time
// past that.
func.func private @__gptq_matmul_rows_q4_dot(%a: tensor<?x?x?xf32>, %c: tensor<?x?x?xf32>, %zeroC: i1, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %size: index) -> tensor<?x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %c, %c1 : tensor<?x?x?xf32>
  %n = tensor.dim %c, %c2 : tensor<?x?x?xf32>
  %k = tensor.dim %a, %c2 : tensor<?x?x?xf32>
  %chunks = arith.ceildivsi %k, %c128 : index
  %xq0 = tensor.empty(%m, %chunks) : tensor<?x?x6x16xi32>
  %xe0 = tensor.empty(%m, %chunks) : tensor<?x?x16xf32>
  %xs0 = tensor.empty(%m, %chunks) : tensor<?x?x16xf32>
  %xps:3 = scf.for %mm = %c0 to %m step %c1 iter_args(%q0 = %xq0, %e0 = %xe0, %s0 = %xs0) -> (tensor<?x?x6x16xi32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
    %x1:3 = scf.for %ch = %c0 to %chunks step %c1 iter_args(%q2 = %q0, %e2 = %e0, %s2 = %s0) -> (tensor<?x?x6x16xi32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
      %col = arith.muli %ch, %c128 : index
      %raw = vector.transfer_read %a[%c0, %mm, %col], %zero : tensor<?x?x?xf32>, vector<128xf32>
      %blk = vector.shape_cast %raw : vector<128xf32> to vector<16x8xf32>
      %t = vector.transpose %blk, [1, 0] : vector<16x8xf32> to vector<8x16xf32>
      %p, %e, %s = func.call @__gptq_q4_dot_prep(%t) : (vector<8x16xf32>) -> (vector<6x16xi32>, vector<16xf32>, vector<16xf32>)
      %q3 = vector.transfer_write %p, %q2[%mm, %ch, %c0, %c0] {in_bounds = [true, true]} : vector<6x16xi32>, tensor<?x?x6x16xi32>
      %e3 = vector.transfer_write %e, %e2[%mm, %ch, %c0] {in_bounds = [true]} : vector<16xf32>, tensor<?x?x16xf32>
      %s3 = vector.transfer_write %s, %s2[%mm, %ch, %c0] {in_bounds = [true]} : vector<16xf32>, tensor<?x?x16xf32>
      scf.yield %q3, %e3, %s3 : tensor<?x?x6x16xi32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
    }
    scf.yield %x1#0, %x1#1, %x1#2 : tensor<?x?x6x16xi32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
  }
  %gmap = func.call @__gptq_chunk_groups(%chunks, %c128, %size) : (index, index, index) -> tensor<?xindex>
  // One row at a time while a row of activations as bytes and its lanes'
  // exponents and sums (5 K bytes) fill at most two thirds of a 32 KiB L1
  // cache; past that four rows at a time, which read them once for four
  // (as the table kernel does past K = 4096).
  %c4 = arith.constant 4 : index
  %c4096 = arith.constant 4096 : index
  %byrow = arith.cmpi ule, %k, %c4096 : index
  %nt = arith.ceildivsi %n, %c16 : index
  %r = scf.forall (%t) in (%nt) shared_outs(%cc = %c) -> (tensor<?x?x?xf32>) {
    %j = arith.muli %t, %c16 : index
    %left = arith.subi %n, %j : index
    %jn = arith.minsi %left, %c16 : index
    %blk0 = tensor.extract_slice %cc[0, 0, %j] [1, %m, %jn] [1, 1, 1] : tensor<?x?x?xf32> to tensor<?x?xf32>
    %blk = scf.if %byrow -> (tensor<?x?xf32>) {
      %b1 = func.call @__gptq_rows_q4_dot_rows(%xps#0, %xps#1, %xps#2, %gmap, %blk0, %j, %zeroC, %qw, %qs, %qz) : (tensor<?x?x6x16xi32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, tensor<?x?xf32>, index, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
      scf.yield %b1 : tensor<?x?xf32>
    } else {
      %quads = arith.ceildivsi %jn, %c4 : index
      %b4 = scf.for %qd = %c0 to %quads step %c1 iter_args(%o = %blk0) -> (tensor<?x?xf32>) {
        %r0 = arith.muli %qd, %c4 : index
        %o2 = func.call @__gptq_rows_q4_dot4(%xps#0, %xps#1, %xps#2, %gmap, %o, %r0, %j, %zeroC, %qw, %qs, %qz) : (tensor<?x?x6x16xi32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, tensor<?x?xf32>, index, index, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
        scf.yield %o2 : tensor<?x?xf32>
      }
      scf.yield %b4 : tensor<?x?xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %blk into %cc[0, 0, %j] [1, %m, %jn] [1, 1, 1] : tensor<?x?xf32> into tensor<?x?x?xf32>
    }
  }
  return %r : tensor<?x?x?xf32>
}

// One chunk of activations (%t[j, i] = column 8i + j) as
// __gptq_matmul_rows_q4_dot's integers: the bytes of v (rows p0 low, p0
// high, p1 low, p1 high, p2 low, p2 high: lane i's word holds the byte of
// columns 8i + 0, 2, 4, 6 or 8i + 1, 3, 5, 7, first in its low byte),
// each lane's 2^e, and each lane's sum of v * 2^e. A lane with an infinity
// or a NaN gets 2^e = NaN, so that its products are NaN as the float
// kernels' are; lanes of magnitude below 2^-105 (zero among them) count
// as zero.
func.func private @__gptq_q4_dot_prep(%t: vector<8x16xf32>) -> (vector<6x16xi32>, vector<16xf32>, vector<16xf32>) {
  %zf = arith.constant dense<0.0> : vector<16xf32>
  %zi = arith.constant dense<0> : vector<16xi32>
  %c8 = arith.constant dense<8> : vector<16xi32>
  %c16 = arith.constant dense<16> : vector<16xi32>
  %c23 = arith.constant dense<23> : vector<16xi32>
  %c24 = arith.constant dense<24> : vector<16xi32>
  %c22 = arith.constant dense<22> : vector<16xi32>
  %c21 = arith.constant dense<21> : vector<16xi32>
  %c255 = arith.constant dense<255> : vector<16xi32>
  %c275 = arith.constant dense<275> : vector<16xi32>
  %nan = arith.constant dense<0x7FC00000> : vector<16xf32>
  %lim = arith.constant dense<8388608.0> : vector<16xf32>
  %t0 = vector.extract %t[0] : vector<16xf32> from vector<8x16xf32>
  %t1 = vector.extract %t[1] : vector<16xf32> from vector<8x16xf32>
  %t2 = vector.extract %t[2] : vector<16xf32> from vector<8x16xf32>
  %t3 = vector.extract %t[3] : vector<16xf32> from vector<8x16xf32>
  %t4 = vector.extract %t[4] : vector<16xf32> from vector<8x16xf32>
  %t5 = vector.extract %t[5] : vector<16xf32> from vector<8x16xf32>
  %t6 = vector.extract %t[6] : vector<16xf32> from vector<8x16xf32>
  %t7 = vector.extract %t[7] : vector<16xf32> from vector<8x16xf32>
  // The lane's largest magnitude (NaN if any is), its biased exponent.
  %a0 = math.absf %t0 : vector<16xf32>
  %a1 = math.absf %t1 : vector<16xf32>
  %a2 = math.absf %t2 : vector<16xf32>
  %a3 = math.absf %t3 : vector<16xf32>
  %a4 = math.absf %t4 : vector<16xf32>
  %a5 = math.absf %t5 : vector<16xf32>
  %a6 = math.absf %t6 : vector<16xf32>
  %a7 = math.absf %t7 : vector<16xf32>
  %m01 = arith.maximumf %a0, %a1 : vector<16xf32>
  %m23 = arith.maximumf %a2, %a3 : vector<16xf32>
  %m45 = arith.maximumf %a4, %a5 : vector<16xf32>
  %m67 = arith.maximumf %a6, %a7 : vector<16xf32>
  %m03 = arith.maximumf %m01, %m23 : vector<16xf32>
  %m47 = arith.maximumf %m45, %m67 : vector<16xf32>
  %mx = arith.maximumf %m03, %m47 : vector<16xf32>
  %bits = arith.bitcast %mx : vector<16xf32> to vector<16xi32>
  %ex0 = arith.shrui %bits, %c23 : vector<16xi32>
  %ex = arith.maxsi %ex0, %c22 : vector<16xi32>
  // The lane's largest is below 2^(ex - 126): scaled by 2^(148 - ex), all
  // are below 2^22; 2^e = 2^(ex - 148) undoes it.
  %sb0 = arith.subi %c275, %ex : vector<16xi32>
  %sb = arith.shli %sb0, %c23 : vector<16xi32>
  %scale = arith.bitcast %sb : vector<16xi32> to vector<16xf32>
  %eb0 = arith.subi %ex, %c21 : vector<16xi32>
  %eb = arith.shli %eb0, %c23 : vector<16xi32>
  %ef = arith.bitcast %eb : vector<16xi32> to vector<16xf32>
  %special = arith.cmpi eq, %ex, %c255 : vector<16xi32>
  %e = arith.select %special, %nan, %ef : vector<16xi1>, vector<16xf32>
  %v0 = func.call @__gptq_q4_dot_int(%t0, %scale, %lim) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xi32>
  %v1 = func.call @__gptq_q4_dot_int(%t1, %scale, %lim) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xi32>
  %v2 = func.call @__gptq_q4_dot_int(%t2, %scale, %lim) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xi32>
  %v3 = func.call @__gptq_q4_dot_int(%t3, %scale, %lim) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xi32>
  %v4 = func.call @__gptq_q4_dot_int(%t4, %scale, %lim) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xi32>
  %v5 = func.call @__gptq_q4_dot_int(%t5, %scale, %lim) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xi32>
  %v6 = func.call @__gptq_q4_dot_int(%t6, %scale, %lim) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xi32>
  %v7 = func.call @__gptq_q4_dot_int(%t7, %scale, %lim) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xi32>
  // Each v's bytes, balanced: v = 2^16 p0 + 2^8 p1 + p2, each in [-128, 127].
  %d0:3 = func.call @__gptq_q4_dot_bytes(%v0) : (vector<16xi32>) -> (vector<16xi32>, vector<16xi32>, vector<16xi32>)
  %d1:3 = func.call @__gptq_q4_dot_bytes(%v1) : (vector<16xi32>) -> (vector<16xi32>, vector<16xi32>, vector<16xi32>)
  %d2:3 = func.call @__gptq_q4_dot_bytes(%v2) : (vector<16xi32>) -> (vector<16xi32>, vector<16xi32>, vector<16xi32>)
  %d3:3 = func.call @__gptq_q4_dot_bytes(%v3) : (vector<16xi32>) -> (vector<16xi32>, vector<16xi32>, vector<16xi32>)
  %d4:3 = func.call @__gptq_q4_dot_bytes(%v4) : (vector<16xi32>) -> (vector<16xi32>, vector<16xi32>, vector<16xi32>)
  %d5:3 = func.call @__gptq_q4_dot_bytes(%v5) : (vector<16xi32>) -> (vector<16xi32>, vector<16xi32>, vector<16xi32>)
  %d6:3 = func.call @__gptq_q4_dot_bytes(%v6) : (vector<16xi32>) -> (vector<16xi32>, vector<16xi32>, vector<16xi32>)
  %d7:3 = func.call @__gptq_q4_dot_bytes(%v7) : (vector<16xi32>) -> (vector<16xi32>, vector<16xi32>, vector<16xi32>)
  %p0lo = func.call @__gptq_q4_dot_word(%d0#0, %d2#0, %d4#0, %d6#0) : (vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>) -> vector<16xi32>
  %p0hi = func.call @__gptq_q4_dot_word(%d1#0, %d3#0, %d5#0, %d7#0) : (vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>) -> vector<16xi32>
  %p1lo = func.call @__gptq_q4_dot_word(%d0#1, %d2#1, %d4#1, %d6#1) : (vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>) -> vector<16xi32>
  %p1hi = func.call @__gptq_q4_dot_word(%d1#1, %d3#1, %d5#1, %d7#1) : (vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>) -> vector<16xi32>
  %p2lo = func.call @__gptq_q4_dot_word(%d0#2, %d2#2, %d4#2, %d6#2) : (vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>) -> vector<16xi32>
  %p2hi = func.call @__gptq_q4_dot_word(%d1#2, %d3#2, %d5#2, %d7#2) : (vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>) -> vector<16xi32>
  %w0 = arith.constant dense<0> : vector<6x16xi32>
  %w1 = vector.insert %p0lo, %w0 [0] : vector<16xi32> into vector<6x16xi32>
  %w2 = vector.insert %p0hi, %w1 [1] : vector<16xi32> into vector<6x16xi32>
  %w3 = vector.insert %p1lo, %w2 [2] : vector<16xi32> into vector<6x16xi32>
  %w4 = vector.insert %p1hi, %w3 [3] : vector<16xi32> into vector<6x16xi32>
  %w5 = vector.insert %p2lo, %w4 [4] : vector<16xi32> into vector<6x16xi32>
  %w6 = vector.insert %p2hi, %w5 [5] : vector<16xi32> into vector<6x16xi32>
  // The lane's sum of v (below 2^25, exact), times 2^e.
  %s01 = arith.addi %v0, %v1 : vector<16xi32>
  %s23 = arith.addi %v2, %v3 : vector<16xi32>
  %s45 = arith.addi %v4, %v5 : vector<16xi32>
  %s67 = arith.addi %v6, %v7 : vector<16xi32>
  %s03 = arith.addi %s01, %s23 : vector<16xi32>
  %s47 = arith.addi %s45, %s67 : vector<16xi32>
  %sv = arith.addi %s03, %s47 : vector<16xi32>
  %sf = arith.sitofp %sv : vector<16xi32> to vector<16xf32>
  %xs = arith.mulf %sf, %e : vector<16xf32>
  return %w6, %e, %xs : vector<6x16xi32>, vector<16xf32>, vector<16xf32>
}

// %x * %scale rounded to the nearest integer (ties to even); 0 where that
// is not below %lim in magnitude (an infinity or a NaN).
func.func private @__gptq_q4_dot_int(%x: vector<16xf32>, %scale: vector<16xf32>, %lim: vector<16xf32>) -> vector<16xi32> {
  %zf = arith.constant dense<0.0> : vector<16xf32>
  %y = arith.mulf %x, %scale : vector<16xf32>
  %r = math.roundeven %y : vector<16xf32>
  %a = math.absf %r : vector<16xf32>
  %ok = arith.cmpf olt, %a, %lim : vector<16xf32>
  %f = arith.select %ok, %r, %zf : vector<16xi1>, vector<16xf32>
  %v = arith.fptosi %f : vector<16xf32> to vector<16xi32>
  return %v : vector<16xi32>
}

// The balanced bytes of %v (|v| < 2^22): v = 2^16 p0 + 2^8 p1 + p2.
func.func private @__gptq_q4_dot_bytes(%v: vector<16xi32>) -> (vector<16xi32>, vector<16xi32>, vector<16xi32>) {
  %c8 = arith.constant dense<8> : vector<16xi32>
  %c128 = arith.constant dense<128> : vector<16xi32>
  %c255 = arith.constant dense<255> : vector<16xi32>
  %b0 = arith.addi %v, %c128 : vector<16xi32>
  %b1 = arith.andi %b0, %c255 : vector<16xi32>
  %p2 = arith.subi %b1, %c128 : vector<16xi32>
  %r0 = arith.subi %v, %p2 : vector<16xi32>
  %v1 = arith.shrsi %r0, %c8 : vector<16xi32>
  %b2 = arith.addi %v1, %c128 : vector<16xi32>
  %b3 = arith.andi %b2, %c255 : vector<16xi32>
  %p1 = arith.subi %b3, %c128 : vector<16xi32>
  %r1 = arith.subi %v1, %p1 : vector<16xi32>
  %p0 = arith.shrsi %r1, %c8 : vector<16xi32>
  return %p0, %p1, %p2 : vector<16xi32>, vector<16xi32>, vector<16xi32>
}

// The low bytes of %b0 .. %b3 as one word's bytes 0 .. 3.
func.func private @__gptq_q4_dot_word(%b0: vector<16xi32>, %b1: vector<16xi32>, %b2: vector<16xi32>, %b3: vector<16xi32>) -> vector<16xi32> {
  %c8 = arith.constant dense<8> : vector<16xi32>
  %c16 = arith.constant dense<16> : vector<16xi32>
  %c24 = arith.constant dense<24> : vector<16xi32>
  %c255 = arith.constant dense<255> : vector<16xi32>
  %l0 = arith.andi %b0, %c255 : vector<16xi32>
  %l1 = arith.andi %b1, %c255 : vector<16xi32>
  %l2 = arith.andi %b2, %c255 : vector<16xi32>
  %s1 = arith.shli %l1, %c8 : vector<16xi32>
  %s2 = arith.shli %l2, %c16 : vector<16xi32>
  %s3 = arith.shli %b3, %c24 : vector<16xi32>
  %o1 = arith.ori %l0, %s1 : vector<16xi32>
  %o2 = arith.ori %s2, %s3 : vector<16xi32>
  %w = arith.ori %o1, %o2 : vector<16xi32>
  return %w : vector<16xi32>
}

// Whether the 4-bit decode kernel for groups of 128 columns multiplies
// codes and activations as bytes (__gptq_matmul_rows_q4_dot) rather than
// looking weights up in tables (__gptq_matmul_rows_q4_lut): false here,
// true in its form with byte dot products (KernelsX86.mlir), which the
// library takes where the CPU has AVX-512 VNNI or a caller asks for them.
func.func private @__gptq_byte_dots() -> i1 {
  %false = arith.constant false
  return %false : i1
}

// %acc plus, in each 32-bit lane, the four products of its bytes of %a
// (unsigned) and %b (signed), in portable operations: exact, the sums of
// the kernel's lanes are below 2^31. Kept out of line until the module's
// buffers are placed: on AVX-512 VNNI gptq-select-kernel-forms then gives
// it its form as vpdpbusd (KernelsX86.mlir), the same integers.
func.func private @__gptq_dot4(%acc: vector<16xi32>, %a: vector<16xi32>, %b: vector<16xi32>) -> vector<16xi32> attributes {no_inline} {
  %ab = vector.bitcast %a : vector<16xi32> to vector<64xi8>
  %bb = vector.bitcast %b : vector<16xi32> to vector<64xi8>
  %aw = arith.extui %ab : vector<64xi8> to vector<64xi32>
  %bw = arith.extsi %bb : vector<64xi8> to vector<64xi32>
  %p = arith.muli %aw, %bw : vector<64xi32>
  %b0 = vector.shuffle %p, %p [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60] : vector<64xi32>, vector<64xi32>
  %b1 = vector.shuffle %p, %p [1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49, 53, 57, 61] : vector<64xi32>, vector<64xi32>
  %b2 = vector.shuffle %p, %p [2, 6, 10, 14, 18, 22, 26, 30, 34, 38, 42, 46, 50, 54, 58, 62] : vector<64xi32>, vector<64xi32>
  %b3 = vector.shuffle %p, %p [3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47, 51, 55, 59, 63] : vector<64xi32>, vector<64xi32>
  %s01 = arith.addi %b0, %b1 : vector<16xi32>
  %s23 = arith.addi %b2, %b3 : vector<16xi32>
  %s = arith.addi %s01, %s23 : vector<16xi32>
  %r = arith.addi %acc, %s : vector<16xi32>
  return %r : vector<16xi32>
}

// Rows %j .. of W (as many as %blk's columns) of
// __gptq_matmul_rows_q4_dot's product, one at a time, for every row of A,
// as __gptq_rows_q8_rows takes them (chunks four at a time into four sums,
// whole chunks read in bounds, rows about 1 KiB on prefetched).
func.func private @__gptq_rows_q4_dot_rows(%xq: tensor<?x?x6x16xi32>, %xe: tensor<?x?x16xf32>, %xs: tensor<?x?x16xf32>, %gmap: tensor<?xindex>, %blk: tensor<?x?xf32>, %j: index, %zeroC: i1, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c256 = arith.constant 256 : index
  %true = arith.constant true
  %zv = arith.constant dense<0.0> : vector<16xf32>
  %m = tensor.dim %blk, %c0 : tensor<?x?xf32>
  %jn = tensor.dim %blk, %c1 : tensor<?x?xf32>
  %chunks = tensor.dim %xe, %c1 : tensor<?x?x16xf32>
  %n = tensor.dim %qw, %c0 : tensor<?x?xi32>
  %wn = tensor.dim %qw, %c1 : tensor<?x?xi32>
  %last = arith.subi %n, %c1 : index
  %ahead = arith.ceildivui %c256, %wn : index
  %whole = arith.divui %wn, %c16 : index
  %quads = arith.divui %chunks, %c4 : index
  %full = arith.muli %quads, %c4 : index
  %qwm = bufferization.to_buffer %qw read_only : tensor<?x?xi32> to memref<?x?xi32, strided<[?, ?], offset: ?>>
  %res = scf.for %i = %c0 to %jn step %c1 iter_args(%o0 = %blk) -> (tensor<?x?xf32>) {
    %row = arith.addi %j, %i : index
    %below = arith.addi %row, %ahead : index
    %prow = arith.minui %below, %last : index
    %o1 = scf.for %mm = %c0 to %m step %c1 iter_args(%o = %o0) -> (tensor<?x?xf32>) {
      %acc:4 = scf.for %cq = %c0 to %quads step %c1 iter_args(%a0 = %zv, %a1 = %zv, %a2 = %zv, %a3 = %zv) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
        %ch0 = arith.muli %cq, %c4 : index
        %ch1 = arith.addi %ch0, %c1 : index
        %ch2 = arith.addi %ch0, %c2 : index
        %ch3 = arith.addi %ch0, %c3 : index
        %in3 = arith.cmpi ult, %ch3, %whole : index
        %s0 = func.call @__gptq_rows_q4_dot_chunk(%xq, %xe, %xs, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %ch0, %true, %a0) : (tensor<?x?x6x16xi32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, i1, vector<16xf32>) -> vector<16xf32>
        %s1 = func.call @__gptq_rows_q4_dot_chunk(%xq, %xe, %xs, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %ch1, %true, %a1) : (tensor<?x?x6x16xi32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, i1, vector<16xf32>) -> vector<16xf32>
        %s2 = func.call @__gptq_rows_q4_dot_chunk(%xq, %xe, %xs, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %ch2, %true, %a2) : (tensor<?x?x6x16xi32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, i1, vector<16xf32>) -> vector<16xf32>
        // Only the last quad's last chunk may be partial.
        %s3 = func.call @__gptq_rows_q4_dot_chunk(%xq, %xe, %xs, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %ch3, %in3, %a3) : (tensor<?x?x6x16xi32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, i1, vector<16xf32>) -> vector<16xf32>
        scf.yield %s0, %s1, %s2, %s3 : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
      }
      // The last one to three chunks, one sum each.
      %t0 = func.call @__gptq_rows_q4_dot_tail(%xq, %xe, %xs, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %full, %whole, %acc#0) : (tensor<?x?x6x16xi32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, index, vector<16xf32>) -> vector<16xf32>
      %f1 = arith.addi %full, %c1 : index
      %t1 = func.call @__gptq_rows_q4_dot_tail(%xq, %xe, %xs, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %f1, %whole, %acc#1) : (tensor<?x?x6x16xi32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, index, vector<16xf32>) -> vector<16xf32>
      %f2 = arith.addi %full, %c2 : index
      %t2 = func.call @__gptq_rows_q4_dot_tail(%xq, %xe, %xs, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %f2, %whole, %acc#2) : (tensor<?x?x6x16xi32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, index, vector<16xf32>) -> vector<16xf32>
      %o2 = func.call @__gptq_rows_put1(%o, %mm, %i, %zeroC, %t0, %t1, %t2, %acc#3) : (tensor<?x?xf32>, index, index, i1, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> tensor<?x?xf32>
      scf.yield %o2 : tensor<?x?xf32>
    }
    scf.yield %o1 : tensor<?x?xf32>
  }
  return %res : tensor<?x?xf32>
}

// Chunk %ch of __gptq_rows_q4_dot_rows's tail added to %u, if there is
// such a chunk (%u as it is otherwise); read in bounds if whole.
func.func private @__gptq_rows_q4_dot_tail(%xq: tensor<?x?x6x16xi32>, %xe: tensor<?x?x16xf32>, %xs: tensor<?x?x16xf32>, %gmap: tensor<?xindex>, %qwm: memref<?x?xi32, strided<[?, ?], offset: ?>>, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %row: index, %prow: index, %mm: index, %ch: index, %whole: index, %u: vector<16xf32>) -> vector<16xf32> {
  %c1 = arith.constant 1 : index
  %chunks = tensor.dim %xe, %c1 : tensor<?x?x16xf32>
  %some = arith.cmpi ult, %ch, %chunks : index
  %r = scf.if %some -> (vector<16xf32>) {
    %inb = arith.cmpi ult, %ch, %whole : index
    %s = func.call @__gptq_rows_q4_dot_chunk(%xq, %xe, %xs, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %ch, %inb, %u) : (tensor<?x?x6x16xi32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, i1, vector<16xf32>) -> vector<16xf32>
    scf.yield %s : vector<16xf32>
  } else {
    scf.yield %u : vector<16xf32>
  }
  return %r : vector<16xf32>
}

// Rows %j + %r0 .. + 3 of __gptq_matmul_rows_q4_dot's product (those of
// them before N; a missing row reads row N - 1 and is not written), for
// every row of A: each chunk's activations as bytes read once for the four
// rows, words masked at a row's end, the same words eight rows on
// prefetched (as __gptq_rows_q4_lut4).
func.func private @__gptq_rows_q4_dot4(%xq: tensor<?x?x6x16xi32>, %xe: tensor<?x?x16xf32>, %xs: tensor<?x?x16xf32>, %gmap: tensor<?xindex>, %blk: tensor<?x?xf32>, %r0: index, %j: index, %zeroC: i1, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %zw = arith.constant 0 : i32
  %zero = arith.constant 0.0 : f32
  %zv = arith.constant dense<0.0> : vector<16xf32>
  %m = tensor.dim %blk, %c0 : tensor<?x?xf32>
  %jn = tensor.dim %blk, %c1 : tensor<?x?xf32>
  %n = tensor.dim %qw, %c0 : tensor<?x?xi32>
  %chunks = tensor.dim %xe, %c1 : tensor<?x?x16xf32>
  %last = arith.subi %n, %c1 : index
  %b0 = arith.addi %j, %r0 : index
  %row0, %row1, %row2, %row3 = func.call @__gptq_rows_four(%b0, %last) : (index, index) -> (index, index, index, index)
  // Rows ahead of the first that each chunk prefetches.
  %pdist = arith.constant 8 : index
  %qwm = bufferization.to_buffer %qw read_only : tensor<?x?xi32> to memref<?x?xi32, strided<[?, ?], offset: ?>>
  %res = scf.for %mm = %c0 to %m step %c1 iter_args(%o = %blk) -> (tensor<?x?xf32>) {
    %acc:4 = scf.for %ch = %c0 to %chunks step %c1 iter_args(%a0 = %zv, %a1 = %zv, %a2 = %zv, %a3 = %zv) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
      %g = tensor.extract %gmap[%ch] : tensor<?xindex>
      %w0 = arith.muli %ch, %c16 : index
      scf.for %pr = %c0 to %c4 step %c1 {
        %ahead0 = arith.addi %b0, %pdist : index
        %ahead1 = arith.addi %ahead0, %pr : index
        %ahead = arith.minui %ahead1, %last : index
        memref.prefetch %qwm[%ahead, %w0], read, locality<3>, data : memref<?x?xi32, strided<[?, ?], offset: ?>>
      }
      %x = vector.transfer_read %xq[%mm, %ch, %c0, %c0], %zw {in_bounds = [true, true]} : tensor<?x?x6x16xi32>, vector<6x16xi32>
      %ev = vector.transfer_read %xe[%mm, %ch, %c0], %zero {in_bounds = [true]} : tensor<?x?x16xf32>, vector<16xf32>
      %xsum = vector.transfer_read %xs[%mm, %ch, %c0], %zero {in_bounds = [true]} : tensor<?x?x16xf32>, vector<16xf32>
      %q0 = vector.transfer_read %qw[%row0, %w0], %zw : tensor<?x?xi32>, vector<16xi32>
      %q1 = vector.transfer_read %qw[%row1, %w0], %zw : tensor<?x?xi32>, vector<16xi32>
      %q2 = vector.transfer_read %qw[%row2, %w0], %zw : tensor<?x?xi32>, vector<16xi32>
      %q3 = vector.transfer_read %qw[%row3, %w0], %zw : tensor<?x?xi32>, vector<16xi32>
      %s0 = func.call @__gptq_q4_dot_words(%q0, %x, %ev, %xsum, %qs, %qz, %row0, %g, %a0) : (vector<16xi32>, vector<6x16xi32>, vector<16xf32>, vector<16xf32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, vector<16xf32>) -> vector<16xf32>
      %s1 = func.call @__gptq_q4_dot_words(%q1, %x, %ev, %xsum, %qs, %qz, %row1, %g, %a1) : (vector<16xi32>, vector<6x16xi32>, vector<16xf32>, vector<16xf32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, vector<16xf32>) -> vector<16xf32>
      %s2 = func.call @__gptq_q4_dot_words(%q2, %x, %ev, %xsum, %qs, %qz, %row2, %g, %a2) : (vector<16xi32>, vector<6x16xi32>, vector<16xf32>, vector<16xf32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, vector<16xf32>) -> vector<16xf32>
      %s3 = func.call @__gptq_q4_dot_words(%q3, %x, %ev, %xsum, %qs, %qz, %row3, %g, %a3) : (vector<16xi32>, vector<6x16xi32>, vector<16xf32>, vector<16xf32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, vector<16xf32>) -> vector<16xf32>
      scf.yield %s0, %s1, %s2, %s3 : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
    }
    %o4 = func.call @__gptq_rows_put(%o, %mm, %r0, %jn, %zeroC, %acc#0, %acc#1, %acc#2, %acc#3) : (tensor<?x?xf32>, index, index, index, i1, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> tensor<?x?xf32>
    scf.yield %o4 : tensor<?x?xf32>
  }
  return %res : tensor<?x?xf32>
}

// Chunk %ch of row %row of W times the activations of row %mm of A, added
// to %u: the chunk's 16 words (read in bounds with %inb, else masked at the
// row's end; missing words are code 0 against activations 0) through
// __gptq_q4_dot_words; the same words of row %prow prefetched.
func.func private @__gptq_rows_q4_dot_chunk(%xq: tensor<?x?x6x16xi32>, %xe: tensor<?x?x16xf32>, %xs: tensor<?x?x16xf32>, %gmap: tensor<?xindex>, %qwm: memref<?x?xi32, strided<[?, ?], offset: ?>>, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %row: index, %prow: index, %mm: index, %ch: index, %inb: i1, %u: vector<16xf32>) -> vector<16xf32> {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %zw = arith.constant 0 : i32
  %zero = arith.constant 0.0 : f32
  %w0 = arith.muli %ch, %c16 : index
  memref.prefetch %qwm[%prow, %w0], read, locality<3>, data : memref<?x?xi32, strided<[?, ?], offset: ?>>
  %g = tensor.extract %gmap[%ch] : tensor<?xindex>
  %q = scf.if %inb -> (vector<16xi32>) {
    %r = vector.transfer_read %qw[%row, %w0], %zw {in_bounds = [true]} : tensor<?x?xi32>, vector<16xi32>
    scf.yield %r : vector<16xi32>
  } else {
    %r = vector.transfer_read %qw[%row, %w0], %zw : tensor<?x?xi32>, vector<16xi32>
    scf.yield %r : vector<16xi32>
  }
  %x = vector.transfer_read %xq[%mm, %ch, %c0, %c0], %zw {in_bounds = [true, true]} : tensor<?x?x6x16xi32>, vector<6x16xi32>
  %ev = vector.transfer_read %xe[%mm, %ch, %c0], %zero {in_bounds = [true]} : tensor<?x?x16xf32>, vector<16xf32>
  %xsum = vector.transfer_read %xs[%mm, %ch, %c0], %zero {in_bounds = [true]} : tensor<?x?x16xf32>, vector<16xf32>
  %r = func.call @__gptq_q4_dot_words(%q, %x, %ev, %xsum, %qs, %qz, %row, %g, %u) : (vector<16xi32>, vector<6x16xi32>, vector<16xf32>, vector<16xf32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, vector<16xf32>) -> vector<16xf32>
  return %r : vector<16xf32>
}

// The 16 words %q of a chunk of row %row (group %g) times the chunk's
// activations as bytes %x (their lanes' 2^e %ev and sums %xsum), added to
// %u: the words' low and high nibbles as bytes, the six dot products into
// P = sum code * v, then s * (P * 2^e - z * X).
func.func private @__gptq_q4_dot_words(%q: vector<16xi32>, %x: vector<6x16xi32>, %ev: vector<16xf32>, %xsum: vector<16xf32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %row: index, %g: index, %u: vector<16xf32>) -> vector<16xf32> {
  %zi = arith.constant dense<0> : vector<16xi32>
  %nib = arith.constant dense<252645135> : vector<16xi32>
  %c4 = arith.constant dense<4> : vector<16xi32>
  %c8 = arith.constant dense<8> : vector<16xi32>
  %c16v = arith.constant dense<16> : vector<16xi32>
  %lo = arith.andi %q, %nib : vector<16xi32>
  %q4 = arith.shrui %q, %c4 : vector<16xi32>
  %hi = arith.andi %q4, %nib : vector<16xi32>
  %x0 = vector.extract %x[0] : vector<16xi32> from vector<6x16xi32>
  %x1 = vector.extract %x[1] : vector<16xi32> from vector<6x16xi32>
  %x2 = vector.extract %x[2] : vector<16xi32> from vector<6x16xi32>
  %x3 = vector.extract %x[3] : vector<16xi32> from vector<6x16xi32>
  %x4 = vector.extract %x[4] : vector<16xi32> from vector<6x16xi32>
  %x5 = vector.extract %x[5] : vector<16xi32> from vector<6x16xi32>
  // Three independent chains of two, then 2^16 P0 + 2^8 P1 + P2.
  %d0 = func.call @__gptq_dot4(%zi, %lo, %x0) : (vector<16xi32>, vector<16xi32>, vector<16xi32>) -> vector<16xi32>
  %e0 = func.call @__gptq_dot4(%d0, %hi, %x1) : (vector<16xi32>, vector<16xi32>, vector<16xi32>) -> vector<16xi32>
  %d1 = func.call @__gptq_dot4(%zi, %lo, %x2) : (vector<16xi32>, vector<16xi32>, vector<16xi32>) -> vector<16xi32>
  %e1 = func.call @__gptq_dot4(%d1, %hi, %x3) : (vector<16xi32>, vector<16xi32>, vector<16xi32>) -> vector<16xi32>
  %d2 = func.call @__gptq_dot4(%zi, %lo, %x4) : (vector<16xi32>, vector<16xi32>, vector<16xi32>) -> vector<16xi32>
  %e2 = func.call @__gptq_dot4(%d2, %hi, %x5) : (vector<16xi32>, vector<16xi32>, vector<16xi32>) -> vector<16xi32>
  %h0 = arith.shli %e0, %c16v : vector<16xi32>
  %h1 = arith.shli %e1, %c8 : vector<16xi32>
  %h01 = arith.addi %h0, %h1 : vector<16xi32>
  %pi = arith.addi %h01, %e2 : vector<16xi32>
  %pf = arith.sitofp %pi : vector<16xi32> to vector<16xf32>
  %p = arith.mulf %pf, %ev : vector<16xf32>
  %r = func.call @__gptq_rows_q8_group(%p, %xsum, %qs, %qz, %row, %g, %u) : (vector<16xf32>, vector<16xf32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, vector<16xf32>) -> vector<16xf32>
  return %r : vector<16xf32>
}

// __gptq_matmul_rows for an 8-bit weight W = dequantize(unpack(%qw)) whose
// groups are runs of %size columns, a multiple of 64: sums along K like
// __gptq_matmul_rows_q4_lut. A row's 16 words for 64 columns are one vector
// (lane i: columns 4i .. 4i + 3, one byte each), the activations of those
// columns transposed once per call to match, byte j's scaled by 2^-8j; each
// byte is masked where it lies in the word (code * 2^8j), converted and
// multiplied into the lane's sum P with one FMA (x * code exactly), and at
// the end of the chunk the row's scale and zero of the chunk's group give
// s * (P - z * X), X the sum of the lane's activations, as the chunk
// kernels of 2 to 7 bits do (ChunkKernels.h). One row at a time while K <=
// 3072 (__gptq_rows_q8_rows: each thread reads its rows as one stream),
// else four rows at a time, rows eight ahead prefetched (__gptq_rows_q8_4).
func.func private @__gptq_matmul_rows_q8(%a: tensor<?x?x?xf32>, %c: tensor<?x?x?xf32>, %zeroC: i1, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %size: index) -> tensor<?x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %c, %c1 : tensor<?x?x?xf32>
  %n = tensor.dim %c, %c2 : tensor<?x?x?xf32>
  %k = tensor.dim %a, %c2 : tensor<?x?x?xf32>
  %chunks = arith.ceildivsi %k, %c64 : index
  // 1, 2^-8, 2^-16, 2^-24: byte j's column scale.
  %scalej = arith.constant dense<[[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [0.00390625, 0.00390625, 0.00390625, 0.00390625, 0.00390625, 0.00390625, 0.00390625, 0.00390625, 0.00390625, 0.00390625, 0.00390625, 0.00390625, 0.00390625, 0.00390625, 0.00390625, 0.00390625], [1.52587890625e-05, 1.52587890625e-05, 1.52587890625e-05, 1.52587890625e-05, 1.52587890625e-05, 1.52587890625e-05, 1.52587890625e-05, 1.52587890625e-05, 1.52587890625e-05, 1.52587890625e-05, 1.52587890625e-05, 1.52587890625e-05, 1.52587890625e-05, 1.52587890625e-05, 1.52587890625e-05, 1.52587890625e-05], [5.9604644775390625e-08, 5.9604644775390625e-08, 5.9604644775390625e-08, 5.9604644775390625e-08, 5.9604644775390625e-08, 5.9604644775390625e-08, 5.9604644775390625e-08, 5.9604644775390625e-08, 5.9604644775390625e-08, 5.9604644775390625e-08, 5.9604644775390625e-08, 5.9604644775390625e-08, 5.9604644775390625e-08, 5.9604644775390625e-08, 5.9604644775390625e-08, 5.9604644775390625e-08]]> : vector<4x16xf32>
  %xp0 = tensor.empty(%m, %chunks) : tensor<?x?x4x16xf32>
  %xs0 = tensor.empty(%m, %chunks) : tensor<?x?x16xf32>
  %xps:2 = scf.for %mm = %c0 to %m step %c1 iter_args(%x0 = %xp0, %s0 = %xs0) -> (tensor<?x?x4x16xf32>, tensor<?x?x16xf32>) {
    %x1:2 = scf.for %ch = %c0 to %chunks step %c1 iter_args(%x2 = %x0, %s2 = %s0) -> (tensor<?x?x4x16xf32>, tensor<?x?x16xf32>) {
      %col = arith.muli %ch, %c64 : index
      %raw = vector.transfer_read %a[%c0, %mm, %col], %zero : tensor<?x?x?xf32>, vector<64xf32>
      %blk = vector.shape_cast %raw : vector<64xf32> to vector<16x4xf32>
      %t = vector.transpose %blk, [1, 0] : vector<16x4xf32> to vector<4x16xf32>
      %t0 = vector.extract %t[0] : vector<16xf32> from vector<4x16xf32>
      %t1 = vector.extract %t[1] : vector<16xf32> from vector<4x16xf32>
      %t2 = vector.extract %t[2] : vector<16xf32> from vector<4x16xf32>
      %t3 = vector.extract %t[3] : vector<16xf32> from vector<4x16xf32>
      %p01 = arith.addf %t0, %t1 : vector<16xf32>
      %p23 = arith.addf %t2, %t3 : vector<16xf32>
      %sum = arith.addf %p01, %p23 : vector<16xf32>
      %scaled = arith.mulf %t, %scalej : vector<4x16xf32>
      %x3 = vector.transfer_write %scaled, %x2[%mm, %ch, %c0, %c0] {in_bounds = [true, true]} : vector<4x16xf32>, tensor<?x?x4x16xf32>
      %s3 = vector.transfer_write %sum, %s2[%mm, %ch, %c0] {in_bounds = [true]} : vector<16xf32>, tensor<?x?x16xf32>
      scf.yield %x3, %s3 : tensor<?x?x4x16xf32>, tensor<?x?x16xf32>
    }
    scf.yield %x1#0, %x1#1 : tensor<?x?x4x16xf32>, tensor<?x?x16xf32>
  }
  // The group of each chunk, once a call.
  %gmap = func.call @__gptq_chunk_groups(%chunks, %c64, %size) : (index, index, index) -> tensor<?xindex>
  // One row at a time while a row's transposed activations and their sums
  // (1.25 K floats) fill at most half of a 32 KiB L1 data cache, as the
  // 4-bit kernel does; four rows at a time past that.
  %c3072 = arith.constant 3072 : index
  %byrow = arith.cmpi ule, %k, %c3072 : index
  %nt = arith.ceildivsi %n, %c16 : index
  %r = scf.forall (%t) in (%nt) shared_outs(%cc = %c) -> (tensor<?x?x?xf32>) {
    %j = arith.muli %t, %c16 : index
    %left = arith.subi %n, %j : index
    %jn = arith.minsi %left, %c16 : index
    %blk0 = tensor.extract_slice %cc[0, 0, %j] [1, %m, %jn] [1, 1, 1] : tensor<?x?x?xf32> to tensor<?x?xf32>
    %blk = scf.if %byrow -> (tensor<?x?xf32>) {
      %b1 = func.call @__gptq_rows_q8_rows(%xps#0, %xps#1, %gmap, %blk0, %j, %zeroC, %qw, %qs, %qz) : (tensor<?x?x4x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, tensor<?x?xf32>, index, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
      scf.yield %b1 : tensor<?x?xf32>
    } else {
      %quads = arith.ceildivsi %jn, %c4 : index
      %b4 = scf.for %qd = %c0 to %quads step %c1 iter_args(%o = %blk0) -> (tensor<?x?xf32>) {
        %r0 = arith.muli %qd, %c4 : index
        %o2 = func.call @__gptq_rows_q8_4(%xps#0, %xps#1, %gmap, %o, %r0, %j, %zeroC, %qw, %qs, %qz) : (tensor<?x?x4x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, tensor<?x?xf32>, index, index, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
        scf.yield %o2 : tensor<?x?xf32>
      }
      scf.yield %b4 : tensor<?x?xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %blk into %cc[0, 0, %j] [1, %m, %jn] [1, 1, 1] : tensor<?x?xf32> into tensor<?x?x?xf32>
    }
  }
  return %r : tensor<?x?x?xf32>
}

// Rows %j + %r0 .. + 3 of __gptq_matmul_rows_q8's product (those of them
// before N; a missing row reads row N - 1 and is not written).
func.func private @__gptq_rows_q8_4(%xp: tensor<?x?x4x16xf32>, %xs: tensor<?x?x16xf32>, %gmap: tensor<?xindex>, %blk: tensor<?x?xf32>, %r0: index, %j: index, %zeroC: i1, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %zw = arith.constant 0 : i32
  %zero = arith.constant 0.0 : f32
  %zv = arith.constant dense<0.0> : vector<16xf32>
  %m = tensor.dim %blk, %c0 : tensor<?x?xf32>
  %jn = tensor.dim %blk, %c1 : tensor<?x?xf32>
  %n = tensor.dim %qw, %c0 : tensor<?x?xi32>
  %chunks = tensor.dim %xp, %c1 : tensor<?x?x4x16xf32>
  %last = arith.subi %n, %c1 : index
  %b0 = arith.addi %j, %r0 : index
  %row0, %row1, %row2, %row3 = func.call @__gptq_rows_four(%b0, %last) : (index, index) -> (index, index, index, index)
  %pdist = arith.constant 8 : index
  %qwm = bufferization.to_buffer %qw read_only : tensor<?x?xi32> to memref<?x?xi32, strided<[?, ?], offset: ?>>
  %res = scf.for %mm = %c0 to %m step %c1 iter_args(%o = %blk) -> (tensor<?x?xf32>) {
    %acc:4 = scf.for %ch = %c0 to %chunks step %c1 iter_args(%a0 = %zv, %a1 = %zv, %a2 = %zv, %a3 = %zv) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
      %g = tensor.extract %gmap[%ch] : tensor<?xindex>
      %w0 = arith.muli %ch, %c16 : index
      scf.for %pr = %c0 to %c4 step %c1 {
        %ahead0 = arith.addi %b0, %pdist : index
        %ahead1 = arith.addi %ahead0, %pr : index
        %ahead = arith.minui %ahead1, %last : index
        memref.prefetch %qwm[%ahead, %w0], read, locality<3>, data : memref<?x?xi32, strided<[?, ?], offset: ?>>
      }
      %q0 = vector.transfer_read %qw[%row0, %w0], %zw : tensor<?x?xi32>, vector<16xi32>
      %q1 = vector.transfer_read %qw[%row1, %w0], %zw : tensor<?x?xi32>, vector<16xi32>
      %q2 = vector.transfer_read %qw[%row2, %w0], %zw : tensor<?x?xi32>, vector<16xi32>
      %q3 = vector.transfer_read %qw[%row3, %w0], %zw : tensor<?x?xi32>, vector<16xi32>
      %j0 = arith.constant 0 : index
      %e0:4 = func.call @__gptq_rows_q8_step(%xp, %mm, %ch, %j0, %q0, %q1, %q2, %q3, %zv, %zv, %zv, %zv) : (tensor<?x?x4x16xf32>, index, index, index, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
      %j1 = arith.constant 1 : index
      %e1:4 = func.call @__gptq_rows_q8_step(%xp, %mm, %ch, %j1, %q0, %q1, %q2, %q3, %e0#0, %e0#1, %e0#2, %e0#3) : (tensor<?x?x4x16xf32>, index, index, index, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
      %j2 = arith.constant 2 : index
      %e2:4 = func.call @__gptq_rows_q8_step(%xp, %mm, %ch, %j2, %q0, %q1, %q2, %q3, %e1#0, %e1#1, %e1#2, %e1#3) : (tensor<?x?x4x16xf32>, index, index, index, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
      %j3 = arith.constant 3 : index
      %e3:4 = func.call @__gptq_rows_q8_step(%xp, %mm, %ch, %j3, %q0, %q1, %q2, %q3, %e2#0, %e2#1, %e2#2, %e2#3) : (tensor<?x?x4x16xf32>, index, index, index, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xi32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
      %xsum = vector.transfer_read %xs[%mm, %ch, %c0], %zero {in_bounds = [true]} : tensor<?x?x16xf32>, vector<16xf32>
      %n0 = func.call @__gptq_rows_q8_group(%e3#0, %xsum, %qs, %qz, %row0, %g, %a0) : (vector<16xf32>, vector<16xf32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, vector<16xf32>) -> vector<16xf32>
      %n1 = func.call @__gptq_rows_q8_group(%e3#1, %xsum, %qs, %qz, %row1, %g, %a1) : (vector<16xf32>, vector<16xf32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, vector<16xf32>) -> vector<16xf32>
      %n2 = func.call @__gptq_rows_q8_group(%e3#2, %xsum, %qs, %qz, %row2, %g, %a2) : (vector<16xf32>, vector<16xf32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, vector<16xf32>) -> vector<16xf32>
      %n3 = func.call @__gptq_rows_q8_group(%e3#3, %xsum, %qs, %qz, %row3, %g, %a3) : (vector<16xf32>, vector<16xf32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, vector<16xf32>) -> vector<16xf32>
      scf.yield %n0, %n1, %n2, %n3 : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
    }
    %o4 = func.call @__gptq_rows_put(%o, %mm, %r0, %jn, %zeroC, %acc#0, %acc#1, %acc#2, %acc#3) : (tensor<?x?xf32>, index, index, index, i1, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> tensor<?x?xf32>
    scf.yield %o4 : tensor<?x?xf32>
  }
  return %res : tensor<?x?xf32>
}

// Byte %jj of each lane's word (of the 64 columns of chunk %ch) for four
// rows (__gptq_rows_q8_col), added to %u0 .. %u3.
func.func private @__gptq_rows_q8_step(%xp: tensor<?x?x4x16xf32>, %mm: index, %ch: index, %jj: index, %q0: vector<16xi32>, %q1: vector<16xi32>, %q2: vector<16xi32>, %q3: vector<16xi32>, %u0: vector<16xf32>, %u1: vector<16xf32>, %u2: vector<16xf32>, %u3: vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
  %f0 = func.call @__gptq_rows_q8_col(%xp, %mm, %ch, %jj, %q0, %u0) : (tensor<?x?x4x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>) -> vector<16xf32>
  %f1 = func.call @__gptq_rows_q8_col(%xp, %mm, %ch, %jj, %q1, %u1) : (tensor<?x?x4x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>) -> vector<16xf32>
  %f2 = func.call @__gptq_rows_q8_col(%xp, %mm, %ch, %jj, %q2, %u2) : (tensor<?x?x4x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>) -> vector<16xf32>
  %f3 = func.call @__gptq_rows_q8_col(%xp, %mm, %ch, %jj, %q3, %u3) : (tensor<?x?x4x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>) -> vector<16xf32>
  return %f0, %f1, %f2, %f3 : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
}

// Byte %jj of each lane's word %q (of the 64 columns of chunk %ch), masked
// in place (code * 2^8jj), times the scaled activations %xp[%mm, %ch, %jj]
// (x * 2^-8jj), added to %u.
func.func private @__gptq_rows_q8_col(%xp: tensor<?x?x4x16xf32>, %mm: index, %ch: index, %jj: index, %q: vector<16xi32>, %u: vector<16xf32>) -> vector<16xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %eight = arith.constant 8 : i32
  %byte = arith.constant 255 : i32
  %xv = vector.transfer_read %xp[%mm, %ch, %jj, %c0], %zero {in_bounds = [true]} : tensor<?x?x4x16xf32>, vector<16xf32>
  %ji = arith.index_cast %jj : index to i32
  %bit = arith.muli %ji, %eight : i32
  %mask = arith.shli %byte, %bit : i32
  %maskv = vector.broadcast %mask : i32 to vector<16xi32>
  %d = arith.andi %q, %maskv : vector<16xi32>
  %w = arith.uitofp %d : vector<16xi32> to vector<16xf32>
  %f = math.fma %xv, %w, %u : vector<16xf32>
  return %f : vector<16xf32>
}

// %acc + s * (%p - z * %xsum), with row %row's scale and zero of group %g.
func.func private @__gptq_rows_q8_group(%p: vector<16xf32>, %xsum: vector<16xf32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %row: index, %g: index, %acc: vector<16xf32>) -> vector<16xf32> {
  %s = tensor.extract %qs[%row, %g] : tensor<?x?xf32>
  %z = tensor.extract %qz[%row, %g] : tensor<?x?xf32>
  %sv = vector.broadcast %s : f32 to vector<16xf32>
  %zv = vector.broadcast %z : f32 to vector<16xf32>
  %zx = arith.mulf %zv, %xsum : vector<16xf32>
  %centred = arith.subf %p, %zx : vector<16xf32>
  %r = math.fma %sv, %centred, %acc : vector<16xf32>
  return %r : vector<16xf32>
}

// Rows %j .. of W (as many as %blk's columns) of __gptq_matmul_rows_q8's
// product, one at a time, for every row of A, as __gptq_rows_q4_lut_rows
// takes them: a row's chunks four at a time into four sums, the last one
// to three one by one, whole chunks read in bounds, a last partial one
// masked; each chunk prefetches the same words %ahead rows on (about 1
// KiB on).
func.func private @__gptq_rows_q8_rows(%xp: tensor<?x?x4x16xf32>, %xs: tensor<?x?x16xf32>, %gmap: tensor<?xindex>, %blk: tensor<?x?xf32>, %j: index, %zeroC: i1, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c256 = arith.constant 256 : index
  %true = arith.constant true
  %zv = arith.constant dense<0.0> : vector<16xf32>
  %m = tensor.dim %blk, %c0 : tensor<?x?xf32>
  %jn = tensor.dim %blk, %c1 : tensor<?x?xf32>
  %chunks = tensor.dim %xp, %c1 : tensor<?x?x4x16xf32>
  %n = tensor.dim %qw, %c0 : tensor<?x?xi32>
  %wn = tensor.dim %qw, %c1 : tensor<?x?xi32>
  %last = arith.subi %n, %c1 : index
  %ahead = arith.ceildivui %c256, %wn : index
  %whole = arith.divui %wn, %c16 : index
  %quads = arith.divui %chunks, %c4 : index
  %full = arith.muli %quads, %c4 : index
  %qwm = bufferization.to_buffer %qw read_only : tensor<?x?xi32> to memref<?x?xi32, strided<[?, ?], offset: ?>>
  %res = scf.for %i = %c0 to %jn step %c1 iter_args(%o0 = %blk) -> (tensor<?x?xf32>) {
    %row = arith.addi %j, %i : index
    %below = arith.addi %row, %ahead : index
    %prow = arith.minui %below, %last : index
    %o1 = scf.for %mm = %c0 to %m step %c1 iter_args(%o = %o0) -> (tensor<?x?xf32>) {
      %acc:4 = scf.for %cq = %c0 to %quads step %c1 iter_args(%a0 = %zv, %a1 = %zv, %a2 = %zv, %a3 = %zv) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
        %ch0 = arith.muli %cq, %c4 : index
        %ch1 = arith.addi %ch0, %c1 : index
        %ch2 = arith.addi %ch0, %c2 : index
        %ch3 = arith.addi %ch0, %c3 : index
        %in3 = arith.cmpi ult, %ch3, %whole : index
        %s0 = func.call @__gptq_rows_q8_chunk(%xp, %xs, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %ch0, %true, %a0) : (tensor<?x?x4x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, i1, vector<16xf32>) -> vector<16xf32>
        %s1 = func.call @__gptq_rows_q8_chunk(%xp, %xs, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %ch1, %true, %a1) : (tensor<?x?x4x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, i1, vector<16xf32>) -> vector<16xf32>
        %s2 = func.call @__gptq_rows_q8_chunk(%xp, %xs, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %ch2, %true, %a2) : (tensor<?x?x4x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, i1, vector<16xf32>) -> vector<16xf32>
        // Only the last quad's last chunk may be partial.
        %s3 = func.call @__gptq_rows_q8_chunk(%xp, %xs, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %ch3, %in3, %a3) : (tensor<?x?x4x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, i1, vector<16xf32>) -> vector<16xf32>
        scf.yield %s0, %s1, %s2, %s3 : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
      }
      // The last one to three chunks, one sum each.
      %t0 = func.call @__gptq_rows_q8_tail(%xp, %xs, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %full, %whole, %acc#0) : (tensor<?x?x4x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, index, vector<16xf32>) -> vector<16xf32>
      %f1 = arith.addi %full, %c1 : index
      %t1 = func.call @__gptq_rows_q8_tail(%xp, %xs, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %f1, %whole, %acc#1) : (tensor<?x?x4x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, index, vector<16xf32>) -> vector<16xf32>
      %f2 = arith.addi %full, %c2 : index
      %t2 = func.call @__gptq_rows_q8_tail(%xp, %xs, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %f2, %whole, %acc#2) : (tensor<?x?x4x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, index, vector<16xf32>) -> vector<16xf32>
      %o2 = func.call @__gptq_rows_put1(%o, %mm, %i, %zeroC, %t0, %t1, %t2, %acc#3) : (tensor<?x?xf32>, index, index, i1, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> tensor<?x?xf32>
      scf.yield %o2 : tensor<?x?xf32>
    }
    scf.yield %o1 : tensor<?x?xf32>
  }
  return %res : tensor<?x?xf32>
}

// Chunk %ch of __gptq_rows_q8_rows's tail added to %u, if there is such a
// chunk (%u as it is otherwise); read in bounds if whole.
func.func private @__gptq_rows_q8_tail(%xp: tensor<?x?x4x16xf32>, %xs: tensor<?x?x16xf32>, %gmap: tensor<?xindex>, %qwm: memref<?x?xi32, strided<[?, ?], offset: ?>>, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %row: index, %prow: index, %mm: index, %ch: index, %whole: index, %u: vector<16xf32>) -> vector<16xf32> {
  %c1 = arith.constant 1 : index
  %chunks = tensor.dim %xp, %c1 : tensor<?x?x4x16xf32>
  %some = arith.cmpi ult, %ch, %chunks : index
  %r = scf.if %some -> (vector<16xf32>) {
    %inb = arith.cmpi ult, %ch, %whole : index
    %s = func.call @__gptq_rows_q8_chunk(%xp, %xs, %gmap, %qwm, %qw, %qs, %qz, %row, %prow, %mm, %ch, %inb, %u) : (tensor<?x?x4x16xf32>, tensor<?x?x16xf32>, tensor<?xindex>, memref<?x?xi32, strided<[?, ?], offset: ?>>, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, index, index, i1, vector<16xf32>) -> vector<16xf32>
    scf.yield %s : vector<16xf32>
  } else {
    scf.yield %u : vector<16xf32>
  }
  return %r : vector<16xf32>
}

// Chunk %ch of row %row of W times the activations of row %mm of A, added
// to %u: the chunk's 16 words (read in bounds with %inb, else masked at
// the row's end), the four bytes of each lane's word summed into P, then
// s * (P - z * X) of the chunk's group (%gmap), as __gptq_rows_q8_4
// computes each of its rows; the same words of row %prow prefetched.
func.func private @__gptq_rows_q8_chunk(%xp: tensor<?x?x4x16xf32>, %xs: tensor<?x?x16xf32>, %gmap: tensor<?xindex>, %qwm: memref<?x?xi32, strided<[?, ?], offset: ?>>, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %row: index, %prow: index, %mm: index, %ch: index, %inb: i1, %u: vector<16xf32>) -> vector<16xf32> {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %zw = arith.constant 0 : i32
  %zero = arith.constant 0.0 : f32
  %zv = arith.constant dense<0.0> : vector<16xf32>
  %w0 = arith.muli %ch, %c16 : index
  memref.prefetch %qwm[%prow, %w0], read, locality<3>, data : memref<?x?xi32, strided<[?, ?], offset: ?>>
  %g = tensor.extract %gmap[%ch] : tensor<?xindex>
  %q = scf.if %inb -> (vector<16xi32>) {
    %r = vector.transfer_read %qw[%row, %w0], %zw {in_bounds = [true]} : tensor<?x?xi32>, vector<16xi32>
    scf.yield %r : vector<16xi32>
  } else {
    %r = vector.transfer_read %qw[%row, %w0], %zw : tensor<?x?xi32>, vector<16xi32>
    scf.yield %r : vector<16xi32>
  }
  %j0 = arith.constant 0 : index
  %e0 = func.call @__gptq_rows_q8_col(%xp, %mm, %ch, %j0, %q, %zv) : (tensor<?x?x4x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>) -> vector<16xf32>
  %j1 = arith.constant 1 : index
  %e1 = func.call @__gptq_rows_q8_col(%xp, %mm, %ch, %j1, %q, %e0) : (tensor<?x?x4x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>) -> vector<16xf32>
  %j2 = arith.constant 2 : index
  %e2 = func.call @__gptq_rows_q8_col(%xp, %mm, %ch, %j2, %q, %e1) : (tensor<?x?x4x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>) -> vector<16xf32>
  %j3 = arith.constant 3 : index
  %e3 = func.call @__gptq_rows_q8_col(%xp, %mm, %ch, %j3, %q, %e2) : (tensor<?x?x4x16xf32>, index, index, index, vector<16xi32>, vector<16xf32>) -> vector<16xf32>
  %xsum = vector.transfer_read %xs[%mm, %ch, %c0], %zero {in_bounds = [true]} : tensor<?x?x16xf32>, vector<16xf32>
  %r = func.call @__gptq_rows_q8_group(%e3, %xsum, %qs, %qz, %row, %g, %u) : (vector<16xf32>, vector<16xf32>, tensor<?x?xf32>, tensor<?x?xf32>, index, index, vector<16xf32>) -> vector<16xf32>
  return %r : vector<16xf32>
}

// __gptq_matmul_rows for a weight of %bits bits, 2 to 7, W =
// dequantize(unpack(%qw)), whose groups are runs of %size columns, a
// multiple of 32: sums along K like the other rows kernels. A chunk is 512
// columns; lane i takes columns 32 i .. 32 i + 31 of it, whose codes are
// words %bits * i .. of the row's packed bit stream (no code straddles two
// lanes), and the activations are transposed once per call to match
// (%xp[m, chunk, t, i] = A[0, m, 512 chunk + 32 i + t]). Each lane's
// columns lie in one group: its scale and zero are gathered once a chunk
// from the row's grid (%gl[chunk, i]: lane i's group less the chunk's
// first). The codes are unpacked and dequantized in registers, s * (code -
// z) as the tiled kernel does, by the chunk kernel of the width
// (ChunkKernels.cpp); four rows at a time, tasks of 16 rows.
func.func private @__gptq_matmul_rows_qk(%a: tensor<?x?x?xf32>, %c: tensor<?x?x?xf32>, %zeroC: i1, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %size: index, %bits: i64) -> tensor<?x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %c, %c1 : tensor<?x?x?xf32>
  %n = tensor.dim %c, %c2 : tensor<?x?x?xf32>
  %k = tensor.dim %a, %c2 : tensor<?x?x?xf32>
  %chunks = arith.ceildivsi %k, %c512 : index
  %xp0 = tensor.empty(%m, %chunks) : tensor<?x?x32x16xf32>
  %xp = scf.for %mm = %c0 to %m step %c1 iter_args(%x0 = %xp0) -> (tensor<?x?x32x16xf32>) {
    %x1 = scf.for %ch = %c0 to %chunks step %c1 iter_args(%x2 = %x0) -> (tensor<?x?x32x16xf32>) {
      %col = arith.muli %ch, %c512 : index
      %raw = vector.transfer_read %a[%c0, %mm, %col], %zero : tensor<?x?x?xf32>, vector<512xf32>
      %blk = vector.shape_cast %raw : vector<512xf32> to vector<16x32xf32>
      %t = vector.transpose %blk, [1, 0] : vector<16x32xf32> to vector<32x16xf32>
      %x3 = vector.transfer_write %t, %x2[%mm, %ch, %c0, %c0] {in_bounds = [true, true]} : vector<32x16xf32>, tensor<?x?x32x16xf32>
      scf.yield %x3 : tensor<?x?x32x16xf32>
    }
    scf.yield %x1 : tensor<?x?x32x16xf32>
  }
  // %xs[m, chunk, i]: the sum of lane i's activations. Then each column t
  // of the lanes is scaled by 2^-o, o the bit its code starts at in its
  // word (unless the code straddles two words): the chunk kernel takes the
  // code where it lies in the word, masked but not shifted, which is
  // code * 2^o, and x * 2^-o times it is x * code exactly (%scales[t]).
  %width = arith.index_cast %bits : i64 to index
  %c32 = arith.constant 32 : index
  %c31 = arith.constant 31 : index
  %scales0 = tensor.empty() : tensor<32xf32>
  %scales = scf.for %tt = %c0 to %c32 step %c1 iter_args(%sc = %scales0) -> (tensor<32xf32>) {
    %bit = arith.muli %tt, %width : index
    %off = arith.andi %bit, %c31 : index
    %end = arith.addi %off, %width : index
    %straddles = arith.cmpi ugt, %end, %c32 : index
    %shift = arith.select %straddles, %c0, %off : index
    %c127 = arith.constant 127 : index
    %exp = arith.subi %c127, %shift : index
    %expi = arith.index_cast %exp : index to i32
    %c23 = arith.constant 23 : i32
    %bitsf = arith.shli %expi, %c23 : i32
    %scale = arith.bitcast %bitsf : i32 to f32
    %sc2 = tensor.insert %scale into %sc[%tt] : tensor<32xf32>
    scf.yield %sc2 : tensor<32xf32>
  }
  %xs0 = tensor.empty(%m, %chunks) : tensor<?x?x16xf32>
  %xps:2 = scf.for %mm = %c0 to %m step %c1 iter_args(%x0 = %xs0, %p0 = %xp) -> (tensor<?x?x16xf32>, tensor<?x?x32x16xf32>) {
    %x1:2 = scf.for %ch = %c0 to %chunks step %c1 iter_args(%x2 = %x0, %p2 = %p0) -> (tensor<?x?x16xf32>, tensor<?x?x32x16xf32>) {
      %zs = arith.constant dense<0.0> : vector<16xf32>
      %sum:2 = scf.for %tt = %c0 to %c32 step %c1 iter_args(%acc = %zs, %p3 = %p2) -> (vector<16xf32>, tensor<?x?x32x16xf32>) {
        %row = vector.transfer_read %p3[%mm, %ch, %tt, %c0], %zero {in_bounds = [true]} : tensor<?x?x32x16xf32>, vector<16xf32>
        %acc2 = arith.addf %acc, %row : vector<16xf32>
        %scale = tensor.extract %scales[%tt] : tensor<32xf32>
        %scalev = vector.broadcast %scale : f32 to vector<16xf32>
        %scaled = arith.mulf %row, %scalev : vector<16xf32>
        %p4 = vector.transfer_write %scaled, %p3[%mm, %ch, %tt, %c0] {in_bounds = [true]} : vector<16xf32>, tensor<?x?x32x16xf32>
        scf.yield %acc2, %p4 : vector<16xf32>, tensor<?x?x32x16xf32>
      }
      %x3 = vector.transfer_write %sum#0, %x2[%mm, %ch, %c0] {in_bounds = [true]} : vector<16xf32>, tensor<?x?x16xf32>
      scf.yield %x3, %sum#1 : tensor<?x?x16xf32>, tensor<?x?x32x16xf32>
    }
    scf.yield %x1#0, %x1#1 : tensor<?x?x16xf32>, tensor<?x?x32x16xf32>
  }
  %lanes = arith.constant dense<[0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448, 480]> : vector<16xi32>
  %sizei = arith.index_cast %size : index to i32
  %sizev = vector.broadcast %sizei : i32 to vector<16xi32>
  %gl0 = tensor.empty(%chunks) : tensor<?x16xi32>
  %gl = scf.for %ch = %c0 to %chunks step %c1 iter_args(%g0 = %gl0) -> (tensor<?x16xi32>) {
    %col = arith.muli %ch, %c512 : index
    %first = arith.divui %col, %size : index
    %coli = arith.index_cast %col : index to i32
    %firsti = arith.index_cast %first : index to i32
    %colv = vector.broadcast %coli : i32 to vector<16xi32>
    %firstv = vector.broadcast %firsti : i32 to vector<16xi32>
    %cols = arith.addi %colv, %lanes : vector<16xi32>
    %groups = arith.divui %cols, %sizev : vector<16xi32>
    %rel = arith.subi %groups, %firstv : vector<16xi32>
    %g1 = vector.transfer_write %rel, %g0[%ch, %c0] {in_bounds = [true]} : vector<16xi32>, tensor<?x16xi32>
    scf.yield %g1 : tensor<?x16xi32>
  }
  %nt = arith.ceildivsi %n, %c16 : index
  %r = scf.forall (%t) in (%nt) shared_outs(%cc = %c) -> (tensor<?x?x?xf32>) {
    %j = arith.muli %t, %c16 : index
    %left = arith.subi %n, %j : index
    %jn = arith.minsi %left, %c16 : index
    %blk0 = tensor.extract_slice %cc[0, 0, %j] [1, %m, %jn] [1, 1, 1] : tensor<?x?x?xf32> to tensor<?x?xf32>
    %quads = arith.ceildivsi %jn, %c4 : index
    %blk = scf.for %qd = %c0 to %quads step %c1 iter_args(%o = %blk0) -> (tensor<?x?xf32>) {
      %r0 = arith.muli %qd, %c4 : index
      %o2 = func.call @__gptq_rows_qk4(%xps#1, %xps#0, %gl, %o, %r0, %j, %zeroC, %qw, %qs, %qz, %size, %bits) : (tensor<?x?x32x16xf32>, tensor<?x?x16xf32>, tensor<?x16xi32>, tensor<?x?xf32>, index, index, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, index, i64) -> tensor<?x?xf32>
      scf.yield %o2 : tensor<?x?xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %blk into %cc[0, 0, %j] [1, %m, %jn] [1, 1, 1] : tensor<?x?xf32> into tensor<?x?x?xf32>
    }
  }
  return %r : tensor<?x?x?xf32>
}

// Rows %j + %r0 .. + 3 of __gptq_matmul_rows_qk's product (those of them
// before N; a missing row reads row N - 1 and is not written).
func.func private @__gptq_rows_qk4(%xp: tensor<?x?x32x16xf32>, %xs: tensor<?x?x16xf32>, %gl: tensor<?x16xi32>, %blk: tensor<?x?xf32>, %r0: index, %j: index, %zeroC: i1, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %size: index, %bits: i64) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %zi = arith.constant 0 : i32
  %zv = arith.constant dense<0.0> : vector<16xf32>
  %m = tensor.dim %blk, %c0 : tensor<?x?xf32>
  %jn = tensor.dim %blk, %c1 : tensor<?x?xf32>
  %n = tensor.dim %qw, %c0 : tensor<?x?xi32>
  %chunks = tensor.dim %xp, %c1 : tensor<?x?x32x16xf32>
  %last = arith.subi %n, %c1 : index
  %b0 = arith.addi %j, %r0 : index
  %row0, %row1, %row2, %row3 = func.call @__gptq_rows_four(%b0, %last) : (index, index) -> (index, index, index, index)
  %res = scf.for %mm = %c0 to %m step %c1 iter_args(%o = %blk) -> (tensor<?x?xf32>) {
    %acc:4 = scf.for %ch = %c0 to %chunks step %c1 iter_args(%a0 = %zv, %a1 = %zv, %a2 = %zv, %a3 = %zv) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
      %col = arith.muli %ch, %c512 : index
      %g = arith.divui %col, %size : index
      %rel = vector.transfer_read %gl[%ch, %c0], %zi {in_bounds = [true]} : tensor<?x16xi32>, vector<16xi32>
      %zf = arith.constant 0.0 : f32
      %xsum = vector.transfer_read %xs[%mm, %ch, %c0], %zf {in_bounds = [true]} : tensor<?x?x16xf32>, vector<16xf32>
      %s0 = func.call @__gptq_lane_grid(%qs, %row0, %g, %rel) : (tensor<?x?xf32>, index, index, vector<16xi32>) -> vector<16xf32>
      %s1 = func.call @__gptq_lane_grid(%qs, %row1, %g, %rel) : (tensor<?x?xf32>, index, index, vector<16xi32>) -> vector<16xf32>
      %s2 = func.call @__gptq_lane_grid(%qs, %row2, %g, %rel) : (tensor<?x?xf32>, index, index, vector<16xi32>) -> vector<16xf32>
      %s3 = func.call @__gptq_lane_grid(%qs, %row3, %g, %rel) : (tensor<?x?xf32>, index, index, vector<16xi32>) -> vector<16xf32>
      %z0 = func.call @__gptq_lane_grid(%qz, %row0, %g, %rel) : (tensor<?x?xf32>, index, index, vector<16xi32>) -> vector<16xf32>
      %z1 = func.call @__gptq_lane_grid(%qz, %row1, %g, %rel) : (tensor<?x?xf32>, index, index, vector<16xi32>) -> vector<16xf32>
      %z2 = func.call @__gptq_lane_grid(%qz, %row2, %g, %rel) : (tensor<?x?xf32>, index, index, vector<16xi32>) -> vector<16xf32>
      %z3 = func.call @__gptq_lane_grid(%qz, %row3, %g, %rel) : (tensor<?x?xf32>, index, index, vector<16xi32>) -> vector<16xf32>
      %e:4 = func.call @__gptq_chunk_step(%bits, %xp, %mm, %ch, %qw, %row0, %row1, %row2, %row3, %xsum, %s0, %s1, %s2, %s3, %z0, %z1, %z2, %z3, %a0, %a1, %a2, %a3) : (i64, tensor<?x?x32x16xf32>, index, index, tensor<?x?xi32>, index, index, index, index, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
      scf.yield %e#0, %e#1, %e#2, %e#3 : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
    }
    %o4 = func.call @__gptq_rows_put(%o, %mm, %r0, %jn, %zeroC, %acc#0, %acc#1, %acc#2, %acc#3) : (tensor<?x?xf32>, index, index, index, i1, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) -> tensor<?x?xf32>
    scf.yield %o4 : tensor<?x?xf32>
  }
  return %res : tensor<?x?xf32>
}

// Lane i of row %row of a grid (scales or zeros, N x groups): its entry at
// group %g + %rel[i] (%rel[i] < 16; zero past the row's end).
func.func private @__gptq_lane_grid(%grid: tensor<?x?xf32>, %row: index, %g: index, %rel: vector<16xi32>) -> vector<16xf32> {
  %zero = arith.constant 0.0 : f32
  // A lane permute, not 16 loads.
  %v = vector.transfer_read %grid[%row, %g], %zero : tensor<?x?xf32>, vector<16xf32>
  %w = func.call @__gptq_lut16(%v, %rel) : (vector<16xf32>, vector<16xi32>) -> vector<16xf32>
  return %w : vector<16xf32>
}

// Element [%mm, %i] of %blk set to the sum of the lanes of %a0 .. %a3 (a
// row's four sums), or incremented by it without %zeroC.
func.func private @__gptq_rows_put1(%blk: tensor<?x?xf32>, %mm: index, %i: index, %zeroC: i1, %a0: vector<16xf32>, %a1: vector<16xf32>, %a2: vector<16xf32>, %a3: vector<16xf32>) -> tensor<?x?xf32> {
  %p01 = arith.addf %a0, %a1 : vector<16xf32>
  %p23 = arith.addf %a2, %a3 : vector<16xf32>
  %p = arith.addf %p01, %p23 : vector<16xf32>
  %y = vector.reduction <add>, %p fastmath<reassoc> : vector<16xf32> into f32
  %v = scf.if %zeroC -> (f32) {
    scf.yield %y : f32
  } else {
    %old = tensor.extract %blk[%mm, %i] : tensor<?x?xf32>
    %sum = arith.addf %old, %y : f32
    scf.yield %sum : f32
  }
  %r = tensor.insert %v into %blk[%mm, %i] : tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// Rows %b0 .. %b0 + 3, each at most %last (a missing row reads the last
// one, and is not written).
func.func private @__gptq_rows_four(%b0: index, %last: index) -> (index, index, index, index) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %b1 = arith.addi %b0, %c1 : index
  %b2 = arith.addi %b0, %c2 : index
  %b3 = arith.addi %b0, %c3 : index
  %row0 = arith.minui %b0, %last : index
  %row1 = arith.minui %b1, %last : index
  %row2 = arith.minui %b2, %last : index
  %row3 = arith.minui %b3, %last : index
  return %row0, %row1, %row2, %row3 : index, index, index, index
}

// Row %mm's columns %r0 .. %r0 + 3 of %blk (those before its end) set to
// the sums of the lanes of %a0 .. %a3, or incremented by them without
// %zeroC.
func.func private @__gptq_rows_put(%blk: tensor<?x?xf32>, %mm: index, %r0: index, %jn: index, %zeroC: i1, %a0: vector<16xf32>, %a1: vector<16xf32>, %a2: vector<16xf32>, %a3: vector<16xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %y0 = vector.reduction <add>, %a0 fastmath<reassoc> : vector<16xf32> into f32
  %y1 = vector.reduction <add>, %a1 fastmath<reassoc> : vector<16xf32> into f32
  %y2 = vector.reduction <add>, %a2 fastmath<reassoc> : vector<16xf32> into f32
  %y3 = vector.reduction <add>, %a3 fastmath<reassoc> : vector<16xf32> into f32
  %ys = vector.from_elements %y0, %y1, %y2, %y3 : vector<4xf32>
  %left = arith.subi %jn, %r0 : index
  %cnt = arith.minui %left, %c4 : index
  %res = scf.for %i = %c0 to %cnt step %c1 iter_args(%o = %blk) -> (tensor<?x?xf32>) {
    %col = arith.addi %r0, %i : index
    %y = vector.extract %ys[%i] : f32 from vector<4xf32>
    %v = scf.if %zeroC -> (f32) {
      scf.yield %y : f32
    } else {
      %old = tensor.extract %o[%mm, %col] : tensor<?x?xf32>
      %sum = arith.addf %old, %y : f32
      scf.yield %sum : f32
    }
    %o2 = tensor.insert %v into %o[%mm, %col] : tensor<?x?xf32>
    scf.yield %o2 : tensor<?x?xf32>
  }
  return %res : tensor<?x?xf32>
}

// The register-tiled batched matrix product for the model's contractions
// (linalg.batch_matmul
// in the normal form of gptq-normalize-contractions): C[b] = A[b] @ B[b],
// or A[b] @ B[b] + C[b] without %zeroC. %a is B x M x K (B x K x M with
// %transA), %bm is B x K x N (B x N x K with %transB), %c is B x M x N. The
// register tiles and K chunks are those of __gptq_gemm_sub; A is read in
// place (with %transA it is first packed into 6-row panels); each task
// computes a 64-column panel of C over a range of its rows. Rows are split
// only as far as needed for about 16 tasks, so that a few wide panels still
// keep every core busy.
// With %quant (one batch), B is given as the packed codes and grids of a
// quantized weight, as gptq.unpack and gptq.dequantize take them (scales
// and zeros N x groups; see __gptq_gemm_panel), and %bm is not read.
// With %half (one batch, %transB), B^T is a weight stored in half
// precision, %bh (bfloat16, %half = 1) or %bf (float16, %half = 2), read
// in that type and widened to float32 while B is packed; %bm is not read.
// A causal mask's triangles (the normal form's gptq.lower_result and
// gptq.lower_lhs): with %lowerC only tiles that reach C[b, m, n] with
// n <= m are computed (the others keep C's contents, or zeros with
// %zeroC); with %lowerA, A[b, m, k] is zero for k > m, and each tile's
// K loop stops at its last row.
func.func private @__gptq_matmul_tiles(%a: tensor<?x?x?xf32>, %bm: tensor<?x?x?xf32>, %c: tensor<?x?x?xf32>, %transA: i1, %transB: i1, %zeroC: i1, %lowerC: i1, %lowerA: i1, %quant: i1, %qw: tensor<?x?xi32>, %qs: tensor<?x?xf32>, %qz: tensor<?x?xf32>, %qg: tensor<?xi32>, %qbits: i64, %half: i64, %bh: tensor<?x?xbf16>, %bf: tensor<?x?xf16>) -> tensor<?x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c6 = arith.constant 6 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %false = arith.constant false
  %true = arith.constant true
  %zero = arith.constant 0.0 : f32
  %nb = tensor.dim %c, %c0 : tensor<?x?x?xf32>
  %m = tensor.dim %c, %c1 : tensor<?x?x?xf32>
  %n = tensor.dim %c, %c2 : tensor<?x?x?xf32>
  %ka1 = tensor.dim %a, %c1 : tensor<?x?x?xf32>
  %ka2 = tensor.dim %a, %c2 : tensor<?x?x?xf32>
  %k = arith.select %transA, %ka1, %ka2 : index
  %mt = arith.ceildivsi %m, %c6 : index
  %nbmt = arith.muli %nb, %mt : index
  // A given transposed is packed into 6-row panels (columns of A^T in
  // place would be far apart); otherwise the tiles read its rows in place.
  %direct = arith.xori %transA, %true : i1
  %npack = arith.select %transA, %nbmt, %c0 : index
  %kpackd = arith.select %transA, %k, %c0 : index
  %ape = tensor.empty(%npack, %kpackd) : tensor<?x?x6xf32>
  %ap = scf.forall (%t) in (%npack) shared_outs(%pa = %ape) -> (tensor<?x?x6xf32>) {
    %bi = arith.divui %t, %mt : index
    %ti = arith.remui %t, %mt : index
    %t6 = arith.muli %ti, %c6 : index
    %slab0 = tensor.extract_slice %pa[%t, 0, 0] [1, %k, 6] [1, 1, 1] : tensor<?x?x6xf32> to tensor<?x6xf32>
    // With %lowerA the tile's sums stop at its last row's column, and so
    // does its packing.
    %t6end = arith.addi %t6, %c6 : index
    %kpackA = arith.minsi %t6end, %k : index
    %kpack = arith.select %lowerA, %kpackA, %k : index
    %slab = scf.for %kk = %c0 to %kpack step %c1 iter_args(%pb = %slab0) -> (tensor<?x6xf32>) {
      %v = vector.transfer_read %a[%bi, %kk, %t6], %zero {permutation_map = affine_map<(d0, d1, d2) -> (d2)>} : tensor<?x?x?xf32>, vector<6xf32>
      %pb2 = vector.transfer_write %v, %pb[%kk, %c0] {in_bounds = [true]} : vector<6xf32>, tensor<?x6xf32>
      scf.yield %pb2 : tensor<?x6xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %slab into %pa[%t, 0, 0] [1, %k, 6] [1, 1, 1] : tensor<?x6xf32> into tensor<?x?x6xf32>
    }
  }
  // Tasks: (batch, column panel, range of row tiles). Ranges hold at least
  // 16 tiles (96 rows), so that a task's packing of B stays cheap.
  %nt = arith.ceildivsi %n, %c64 : index
  %panels = arith.muli %nb, %nt : index
  %panels1 = arith.maxsi %panels, %c1 : index
  %want = arith.ceildivsi %c16, %panels1 : index
  %most0 = arith.divui %mt, %c16 : index
  %most = arith.maxsi %most0, %c1 : index
  %split0 = arith.minsi %want, %most : index
  %per0 = arith.ceildivsi %mt, %split0 : index
  %per = arith.maxsi %per0, %c1 : index
  %split = arith.ceildivsi %mt, %per : index
  %bstride = arith.muli %nt, %split : index
  %tasks = arith.muli %panels, %split : index
  // A quantized weight's grids, transposed once (groups x N), so that a
  // row of scales or zeros for 16 columns of B is one contiguous read.
  // They are small (N x K / group size): one thread, no parallel region.
  %qst, %qzt = scf.if %quant -> (tensor<?x?xf32>, tensor<?x?xf32>) {
    %gn = tensor.dim %qs, %c0 : tensor<?x?xf32>
    %gg = tensor.dim %qs, %c1 : tensor<?x?xf32>
    %ste = tensor.empty(%gg, %gn) : tensor<?x?xf32>
    %zte = tensor.empty(%gg, %gn) : tensor<?x?xf32>
    %t:2 = scf.for %gi = %c0 to %gg step %c1 iter_args(%st0 = %ste, %zt0 = %zte) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
      %rows:2 = scf.for %ni = %c0 to %gn step %c1 iter_args(%st1 = %st0, %zt1 = %zt0) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
        %sv = tensor.extract %qs[%ni, %gi] : tensor<?x?xf32>
        %zv = tensor.extract %qz[%ni, %gi] : tensor<?x?xf32>
        %st2 = tensor.insert %sv into %st1[%gi, %ni] : tensor<?x?xf32>
        %zt2 = tensor.insert %zv into %zt1[%gi, %ni] : tensor<?x?xf32>
        scf.yield %st2, %zt2 : tensor<?x?xf32>, tensor<?x?xf32>
      }
      scf.yield %rows#0, %rows#1 : tensor<?x?xf32>, tensor<?x?xf32>
    }
    scf.yield %t#0, %t#1 : tensor<?x?xf32>, tensor<?x?xf32>
  } else {
    scf.yield %qs, %qz : tensor<?x?xf32>, tensor<?x?xf32>
  }
  %kb1 = tensor.dim %bm, %c1 : tensor<?x?x?xf32>
  %kb2 = tensor.dim %bm, %c2 : tensor<?x?x?xf32>
  %r = scf.forall (%q) in (%tasks) shared_outs(%cc = %c) -> (tensor<?x?x?xf32>) {
    %bi = arith.divui %q, %bstride : index
    %rest = arith.remui %q, %bstride : index
    %pi = arith.divui %rest, %split : index
    %si = arith.remui %rest, %split : index
    %j = arith.muli %pi, %c64 : index
    %left = arith.subi %n, %j : index
    %jn = arith.minsi %left, %c64 : index
    %t0 = arith.muli %si, %per : index
    %tleft = arith.subi %mt, %t0 : index
    %tiles = arith.minsi %tleft, %per : index
    %r0 = arith.muli %t0, %c6 : index
    %rleft = arith.subi %m, %r0 : index
    %rows6 = arith.muli %tiles, %c6 : index
    %rows = arith.minsi %rleft, %rows6 : index
    %p = tensor.extract_slice %cc[%bi, %r0, %j] [1, %rows, %jn] [1, 1, 1] : tensor<?x?x?xf32> to tensor<?x?xf32>
    %bt0 = arith.muli %bi, %mt : index
    %at0 = arith.addi %bt0, %t0 : index
    %at0p = arith.select %transA, %at0, %c0 : index
    %tilesp = arith.select %transA, %tiles, %c0 : index
    %apb = tensor.extract_slice %ap[%at0p, 0, 0] [%tilesp, %kpackd, 6] [1, 1, 1] : tensor<?x?x6xf32> to tensor<?x?x6xf32>
    %ab = tensor.extract_slice %a[%bi, 0, 0] [1, %ka1, %ka2] [1, 1, 1] : tensor<?x?x?xf32> to tensor<?x?xf32>
    %bb = tensor.extract_slice %bm[%bi, 0, 0] [1, %kb1, %kb2] [1, 1, 1] : tensor<?x?x?xf32> to tensor<?x?xf32>
    %rp = func.call @__gptq_gemm_panel(%p, %apb, %ab, %direct, %bb, %j, %r0, %lowerC, %false, %lowerA, %zeroC, %transB, %quant, %qw, %qst, %qzt, %qg, %qbits, %half, %bh, %bf) : (tensor<?x?xf32>, tensor<?x?x6xf32>, tensor<?x?xf32>, i1, tensor<?x?xf32>, index, index, i1, i1, i1, i1, i1, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>, i64, i64, tensor<?x?xbf16>, tensor<?x?xf16>) -> tensor<?x?xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %rp into %cc[%bi, %r0, %j] [1, %rows, %jn] [1, 1, 1] : tensor<?x?xf32> into tensor<?x?x?xf32>
    }
  }
  return %r : tensor<?x?x?xf32>
}

// A chunk of rows k = kb .. of B = W^T, 64 columns n = j .. j + 63, for
// a weight W (N x K) stored in half precision: %bh (bfloat16) with %half = 1,
// %bf (float16) with %half = 2. Blocks of 16 x 16 of W's rows are read in
// their stored type, widened to float32 (exactly: a bfloat16 is the upper
// half of a float32's bits, a float16 widens with arith.extf) and
// transposed in registers, as the float32 weight's rows are packed; the
// float32 weight is never formed. Elements past W's edges are zero.
func.func private @__gptq_pack_widened(%bpe: tensor<?x64xf32>, %bh: tensor<?x?xbf16>, %bf: tensor<?x?xf16>, %half: i64, %j: index, %kb: index) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1 : i64
  %isbf16 = arith.cmpi eq, %half, %one : i64
  %zh = arith.constant 0.0 : bf16
  %zf = arith.constant 0.0 : f16
  %sixteen = arith.constant dense<16> : vector<16x16xi32>
  %kn = tensor.dim %bpe, %c0 : tensor<?x64xf32>
  %r = scf.for %kk = %c0 to %kn step %c16 iter_args(%pb = %bpe) -> (tensor<?x64xf32>) {
    %krow = arith.addi %kk, %kb : index
    %pb3 = scf.for %cc = %c0 to %c64 step %c16 iter_args(%pbc = %pb) -> (tensor<?x64xf32>) {
      %brow = arith.addi %j, %cc : index
      %blk = scf.if %isbf16 -> (vector<16x16xf32>) {
        %raw = vector.transfer_read %bh[%brow, %krow], %zh : tensor<?x?xbf16>, vector<16x16xbf16>
        %bits = arith.bitcast %raw : vector<16x16xbf16> to vector<16x16xi16>
        %wide = arith.extui %bits : vector<16x16xi16> to vector<16x16xi32>
        %up = arith.shli %wide, %sixteen : vector<16x16xi32>
        %v = arith.bitcast %up : vector<16x16xi32> to vector<16x16xf32>
        scf.yield %v : vector<16x16xf32>
      } else {
        %raw = vector.transfer_read %bf[%brow, %krow], %zf : tensor<?x?xf16>, vector<16x16xf16>
        %v = arith.extf %raw : vector<16x16xf16> to vector<16x16xf32>
        scf.yield %v : vector<16x16xf32>
      }
      %blkt = vector.transpose %blk, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
      %pbw = vector.transfer_write %blkt, %pbc[%kk, %cc] {in_bounds = [false, true]} : vector<16x16xf32>, tensor<?x64xf32>
      scf.yield %pbw : tensor<?x64xf32>
    }
    scf.yield %pb3 : tensor<?x64xf32>
  }
  return %r : tensor<?x64xf32>
}

// A chunk of 128 (or fewer) rows k = kb .. of B = W^T, 64 columns
// n = j .. j + 63, for the weight W = dequantize(unpack(%qw)) with its grids
// given transposed (%st and %zt are groups x N): W[n, k] = st[g, n] *
// (code[n, k] - zt[g, n]), g = %qg[k], the code's bits read from row n's
// little-endian bit stream as __gptq_unpack reads them (the next word only
// when the code straddles into it). Rows past N are zero.
// For each block of 16 columns n, the words that hold the chunk's codes
// (4 * bits of them for 128 rows k) are transposed in 16 x 16 blocks, so
// that word w of the 16 rows n is one vector: every code of the chunk is
// then a shift and mask of one or two such vectors, the same for all 16
// lanes, and its scale and zero are contiguous in the transposed grids.
// No gathers, no float transposes.
func.func private @__gptq_pack_dequantized(%bpe: tensor<?x64xf32>, %qw: tensor<?x?xi32>, %st: tensor<?x?xf32>, %zt: tensor<?x?xf32>, %qg: tensor<?xi32>, %bits: i64, %j: index, %kb: index) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c16 = arith.constant 16 : index
  %c31 = arith.constant 31 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %zw = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %w32 = arith.constant 32 : i32
  %kn = tensor.dim %bpe, %c0 : tensor<?x64xf32>
  %b = arith.index_cast %bits : i64 to index
  %b32 = arith.trunci %bits : i64 to i32
  %m0 = arith.shli %one, %b32 : i32
  %mask = arith.subi %m0, %one : i32
  %maskv = vector.broadcast %mask : i32 to vector<16xi32>
  %scr0 = tensor.empty() : tensor<32x16xi32>
  // The chunk is unpacked 128 rows at a time (the scratch holds the words
  // of 128 codes of 16 rows at 8 bits); each part's codes start at a word
  // boundary (kb is a multiple of 128).
  %c128 = arith.constant 128 : index
  %res:2 = scf.for %sb = %c0 to %kn step %c128 iter_args(%pbs = %bpe, %scrs = %scr0) -> (tensor<?x64xf32>, tensor<32x16xi32>) {
    %kbs = arith.addi %kb, %sb : index
    %knl = arith.subi %kn, %sb : index
    %kns = arith.minsi %knl, %c128 : index
    %bit0 = arith.muli %kbs, %b : index
    %w0 = arith.shrui %bit0, %c5 : index
    %cbits = arith.muli %kns, %b : index
    %nwc = arith.ceildivui %cbits, %c32 : index
    %part:2 = scf.for %cc = %c0 to %c64 step %c16 iter_args(%pb = %pbs, %scr = %scrs) -> (tensor<?x64xf32>, tensor<32x16xi32>) {
      %n0 = arith.addi %j, %cc : index
      // scr[w, l] = word w0 + w of row n0 + l (zero past the row's end).
      %scr1 = scf.for %wb = %c0 to %nwc step %c16 iter_args(%s = %scr) -> (tensor<32x16xi32>) {
        %wc = arith.addi %w0, %wb : index
        %blk = vector.transfer_read %qw[%n0, %wc], %zw : tensor<?x?xi32>, vector<16x16xi32>
        %blkt = vector.transpose %blk, [1, 0] : vector<16x16xi32> to vector<16x16xi32>
        %s2 = vector.transfer_write %blkt, %s[%wb, %c0] {in_bounds = [true, true]} : vector<16x16xi32>, tensor<32x16xi32>
        scf.yield %s2 : tensor<32x16xi32>
      }
      %pb2 = scf.for %kk = %c0 to %kns step %c1 iter_args(%p = %pb) -> (tensor<?x64xf32>) {
        %bit = arith.muli %kk, %b : index
        %w = arith.shrui %bit, %c5 : index
        %off = arith.andi %bit, %c31 : index
        %lo = vector.transfer_read %scr1[%w, %c0], %zw {in_bounds = [true]} : tensor<32x16xi32>, vector<16xi32>
        %offi = arith.index_cast %off : index to i32
        %offv = vector.broadcast %offi : i32 to vector<16xi32>
        %sh = arith.shrui %lo, %offv : vector<16xi32>
        %end = arith.addi %off, %b : index
        %straddles = arith.cmpi ugt, %end, %c32 : index
        %both = scf.if %straddles -> (vector<16xi32>) {
          %w1 = arith.addi %w, %c1 : index
          %hi = vector.transfer_read %scr1[%w1, %c0], %zw {in_bounds = [true]} : tensor<32x16xi32>, vector<16xi32>
          %up = arith.subi %w32, %offi : i32
          %upv = vector.broadcast %up : i32 to vector<16xi32>
          %hs = arith.shli %hi, %upv : vector<16xi32>
          %o = arith.ori %sh, %hs : vector<16xi32>
          scf.yield %o : vector<16xi32>
        } else {
          scf.yield %sh : vector<16xi32>
        }
        %code = arith.andi %both, %maskv : vector<16xi32>
        %qf = arith.uitofp %code : vector<16xi32> to vector<16xf32>
        %k = arith.addi %kbs, %kk : index
        %prow = arith.addi %sb, %kk : index
        %gi = tensor.extract %qg[%k] : tensor<?xi32>
        %g = arith.index_cast %gi : i32 to index
        %sc = vector.transfer_read %st[%g, %n0], %zero : tensor<?x?xf32>, vector<16xf32>
        %zp = vector.transfer_read %zt[%g, %n0], %zero : tensor<?x?xf32>, vector<16xf32>
        %d = arith.subf %qf, %zp : vector<16xf32>
        %v = arith.mulf %sc, %d : vector<16xf32>
        %p2 = vector.transfer_write %v, %p[%prow, %cc] {in_bounds = [true]} : vector<16xf32>, tensor<?x64xf32>
        scf.yield %p2 : tensor<?x64xf32>
      }
      scf.yield %pb2, %scr1 : tensor<?x64xf32>, tensor<32x16xi32>
    }
    scf.yield %part#0, %part#1 : tensor<?x64xf32>, tensor<32x16xi32>
  }
  return %res#0 : tensor<?x64xf32>
}

//===--------------------------------------------------------------------===//
// Data movement of gptq.damped_cholesky
//===--------------------------------------------------------------------===//

// A[i, j] = H[q(i), q(j)] for q = %qidx, with each diagonal entry that is
// zero (a dead input) set to 1, then %damp added to it. Blocks of 32 rows in
// parallel; each row is gathered from row q(i) of H 16 elements at a time,
// then its diagonal element is fixed.
func.func private @__gptq_reversed_hessian(%h: tensor<?x?xf32>, %qidx: tensor<?xi32>, %damp: f32) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %zi32 = arith.constant 0 : i32
  %zv16 = arith.constant dense<0.0> : vector<16xf32>
  %n = tensor.dim %h, %c0 : tensor<?x?xf32>
  %e = tensor.empty(%n, %n) : tensor<?x?xf32>
  %nrb = arith.ceildivsi %n, %c32 : index
  %rev = scf.forall (%rb) in (%nrb) shared_outs(%ro = %e) -> (tensor<?x?xf32>) {
    %r0 = arith.muli %rb, %c32 : index
    %rleft = arith.subi %n, %r0 : index
    %rn = arith.minsi %rleft, %c32 : index
    %rows = tensor.extract_slice %ro[%r0, 0] [%rn, %n] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %filled = scf.for %il = %c0 to %rn step %c1 iter_args(%rr = %rows) -> (tensor<?x?xf32>) {
      %i = arith.addi %r0, %il : index
      %qi32 = tensor.extract %qidx[%i] : tensor<?xi32>
      %qi = arith.index_cast %qi32 : i32 to index
      %row = scf.for %j0 = %c0 to %n step %c16 iter_args(%r2 = %rr) -> (tensor<?x?xf32>) {
        %jleft = arith.subi %n, %j0 : index
        %mask = vector.create_mask %jleft : vector<16xi1>
        %iv = vector.transfer_read %qidx[%j0], %zi32 : tensor<?xi32>, vector<16xi32>
        %g = vector.gather %h[%qi, %c0] [%iv], %mask, %zv16 : tensor<?x?xf32>, vector<16xi32>, vector<16xi1>, vector<16xf32> into vector<16xf32>
        %w = vector.transfer_write %g, %r2[%il, %j0] : vector<16xf32>, tensor<?x?xf32>
        scf.yield %w : tensor<?x?xf32>
      }
      %v = tensor.extract %row[%il, %i] : tensor<?x?xf32>
      %dead = arith.cmpf oeq, %v, %zero : f32
      %v1 = arith.select %dead, %one, %v : f32
      %vd = arith.addf %v1, %damp : f32
      %row2 = tensor.insert %vd into %row[%il, %i] : tensor<?x?xf32>
      scf.yield %row2 : tensor<?x?xf32>
    }
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %filled into %ro[%r0, 0] [%rn, %n] [1, 1] : tensor<?x?xf32> into tensor<?x?xf32>
    }
  }
  return %rev : tensor<?x?xf32>
}

//===--------------------------------------------------------------------===//
// The factorization's diagonal blocks
//===--------------------------------------------------------------------===//

// Unblocked Cholesky of a small SPD block (its lower triangle is read);
// returns L, lower with zeros above, and for each column whether its pivot
// was positive (false for a pivot that is not, or NaN). Right-looking on
// the transpose T = A^T, whose rows are A's columns: step j scales row j
// of T by 1/d and subtracts T[j, i] T[j, i:] from each later row i, so the
// inner loops run along contiguous rows (and vectorize). Every entry receives its updates in the same order, with the
// same roundings, as the dot-product form A[i, j] - sum_p L[i, p] L[j, p].
func.func private @__gptq_chol_unblocked(%a: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?xi1>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %a, %c0 : tensor<?x?xf32>
  %t0 = func.call @__gptq_transpose(%a) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %fe = tensor.empty(%n) : tensor<?xi1>
  %r:2 = scf.for %j = %c0 to %n step %c1 iter_args(%t = %t0, %fl = %fe) -> (tensor<?x?xf32>, tensor<?xi1>) {
    %tjj = tensor.extract %t[%j, %j] : tensor<?x?xf32>
    %pos = arith.cmpf ogt, %tjj, %zero : f32
    %fl2 = tensor.insert %pos into %fl[%j] : tensor<?xi1>
    %d = math.sqrt %tjj : f32
    %t1 = tensor.insert %d into %t[%j, %j] : tensor<?x?xf32>
    %j1 = arith.addi %j, %c1 : index
    %t2 = scf.for %k = %j1 to %n step %c1 iter_args(%tt = %t1) -> (tensor<?x?xf32>) {
      %v = tensor.extract %tt[%j, %k] : tensor<?x?xf32>
      %q = arith.divf %v, %d : f32
      %tt1 = tensor.insert %q into %tt[%j, %k] : tensor<?x?xf32>
      scf.yield %tt1 : tensor<?x?xf32>
    }
    %t3 = scf.for %i = %j1 to %n step %c1 iter_args(%tt = %t2) -> (tensor<?x?xf32>) {
      %lij = tensor.extract %tt[%j, %i] : tensor<?x?xf32>
      %row = scf.for %k = %i to %n step %c1 iter_args(%rr = %tt) -> (tensor<?x?xf32>) {
        %x = tensor.extract %rr[%i, %k] : tensor<?x?xf32>
        %y = tensor.extract %rr[%j, %k] : tensor<?x?xf32>
        %xy = arith.mulf %y, %lij : f32
        %dd = arith.subf %x, %xy : f32
        %rr1 = tensor.insert %dd into %rr[%i, %k] : tensor<?x?xf32>
        scf.yield %rr1 : tensor<?x?xf32>
      }
      scf.yield %row : tensor<?x?xf32>
    }
    scf.yield %t3, %fl2 : tensor<?x?xf32>, tensor<?xi1>
  }
  %l = func.call @__gptq_lower_of_transposed(%r#0) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  return %l, %r#1 : tensor<?x?xf32>, tensor<?xi1>
}

// Inverse of a small lower triangular matrix (lower triangular). Row i of
// the inverse is -(sum_p L[i, p] M[p, :]) / L[i, i] over p < i, accumulated
// row by row (contiguous, vectorizable); each entry sums the same terms in
// the same order as the dot-product form.
func.func private @__gptq_trinv_unblocked(%l: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %n = tensor.dim %l, %c0 : tensor<?x?xf32>
  %e = tensor.empty(%n, %n) : tensor<?x?xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %se = tensor.empty(%n) : tensor<?xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%m = %z) -> (tensor<?x?xf32>) {
    %lii = tensor.extract %l[%i, %i] : tensor<?x?xf32>
    %inv = arith.divf %one, %lii : f32
    %m1 = tensor.insert %inv into %m[%i, %i] : tensor<?x?xf32>
    %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<?xf32>) -> tensor<?xf32>
    %s = scf.for %p = %c0 to %i step %c1 iter_args(%acc = %s0) -> (tensor<?xf32>) {
      %lip = tensor.extract %l[%i, %p] : tensor<?x?xf32>
      %p1 = arith.addi %p, %c1 : index
      %acc2 = scf.for %j = %c0 to %p1 step %c1 iter_args(%aa = %acc) -> (tensor<?xf32>) {
        %mpj = tensor.extract %m1[%p, %j] : tensor<?x?xf32>
        %sj = tensor.extract %aa[%j] : tensor<?xf32>
        %xy = arith.mulf %lip, %mpj : f32
        %sj2 = arith.addf %sj, %xy : f32
        %aa1 = tensor.insert %sj2 into %aa[%j] : tensor<?xf32>
        scf.yield %aa1 : tensor<?xf32>
      }
      scf.yield %acc2 : tensor<?xf32>
    }
    %m2 = scf.for %j = %c0 to %i step %c1 iter_args(%mm = %m1) -> (tensor<?x?xf32>) {
      %sj = tensor.extract %s[%j] : tensor<?xf32>
      %ns = arith.negf %sj : f32
      %v = arith.divf %ns, %lii : f32
      %mm1 = tensor.insert %v into %mm[%i, %j] : tensor<?x?xf32>
      scf.yield %mm1 : tensor<?x?xf32>
    }
    scf.yield %m2 : tensor<?x?xf32>
  }
  return %r : tensor<?x?xf32>
}

// The pieces of a step of the blocked factorization (Library.mlir's
// __gptq_damped_cholesky), from the unblocked kernels above, the
// transposes and the matrix kernel.

// M = chol(A)^-1 of a diagonal block (with %unit, the identity instead),
// M^T for the step's products (the matrix kernel takes its left operand
// transposed), and the pivots' flags (the second operand's contents are
// not read).
func.func private @__gptq_factor_diagonal(%a: tensor<?x?xf32>, %flags: tensor<?xi1>, %unit: i1) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi1>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %l, %f = func.call @__gptq_chol_unblocked(%a) : (tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?xi1>)
  %m = func.call @__gptq_trinv_unblocked(%l) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %mt = func.call @__gptq_transpose(%m) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %first = scf.if %unit -> (tensor<?x?xf32>) {
    %i = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%a : tensor<?x?xf32>) {
    ^bb0(%o: f32):
      %r = linalg.index 0 : index
      %c = linalg.index 1 : index
      %d = arith.cmpi eq, %r, %c : index
      %v = arith.select %d, %one, %zero : f32
      linalg.yield %v : f32
    } -> tensor<?x?xf32>
    scf.yield %i : tensor<?x?xf32>
  } else {
    scf.yield %m : tensor<?x?xf32>
  }
  return %first, %mt, %f : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi1>
}

// L21^T = M11 P^T (%mkkt: M11^T).
func.func private @__gptq_factor_panel(%mkkt: tensor<?x?xf32>, %p: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %true = arith.constant true
  %false = arith.constant false
  %kb = tensor.dim %mkkt, %c0 : tensor<?x?xf32>
  %rest = tensor.dim %p, %c0 : tensor<?x?xf32>
  %pt = func.call @__gptq_transpose(%p) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %z = tensor.empty(%kb, %rest) : tensor<?x?xf32>
  %r = func.call @__gptq_gemm_sub(%z, %mkkt, %pt, %true, %false, %false, %true) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, i1, i1, i1, i1) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// The transpose of %src (%dst gives only its shape).
func.func private @__gptq_transpose_to(%src: tensor<?x?xf32>, %dst: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %t = func.call @__gptq_transpose(%src) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  return %t : tensor<?x?xf32>
}

// L[K, 0:K] M[0:K, 0:K], M lower.
func.func private @__gptq_factor_row_product(%lrow: tensor<?x?xf32>, %mtl: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %true = arith.constant true
  %false = arith.constant false
  %kb = tensor.dim %lrow, %c0 : tensor<?x?xf32>
  %k = tensor.dim %mtl, %c1 : tensor<?x?xf32>
  %lrowt = func.call @__gptq_transpose(%lrow) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %z = tensor.empty(%kb, %k) : tensor<?x?xf32>
  %r = func.call @__gptq_gemm_sub(%z, %lrowt, %mtl, %true, %false, %true, %true) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, i1, i1, i1, i1) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -M11 T (%mkkt: M11^T; %dst gives only its shape).
func.func private @__gptq_factor_row_inverse(%mkkt: tensor<?x?xf32>, %t: tensor<?x?xf32>, %dst: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %false = arith.constant false
  %true = arith.constant true
  %kb = tensor.dim %mkkt, %c0 : tensor<?x?xf32>
  %k = tensor.dim %t, %c1 : tensor<?x?xf32>
  %z = tensor.empty(%kb, %k) : tensor<?x?xf32>
  %r = func.call @__gptq_gemm_sub(%z, %mkkt, %t, %false, %false, %false, %true) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, i1, i1, i1, i1) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

//===--------------------------------------------------------------------===//
// Steps of gptq.quantize_blocks
//===--------------------------------------------------------------------===//

// __gptq_find_params on a group of W^T (%xt is L x R), in tasks of 64
// rows: each task's reductions run along its contiguous rows while the
// group's L x 64 part stays in cache.
func.func private @__gptq_group_grid(%xt: tensor<?x?xf32>, %maxq: f32, %sym: i1, %mse: i1, %norm: f32, %steps: index, %grid: f64) -> (tensor<?xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %chunk = arith.constant 64 : index
  %l = tensor.dim %xt, %c0 : tensor<?x?xf32>
  %r = tensor.dim %xt, %c1 : tensor<?x?xf32>
  %nch = arith.ceildivsi %r, %chunk : index
  %e = tensor.empty(%r) : tensor<?xf32>
  %res:2 = scf.forall (%ch) in (%nch) shared_outs(%so = %e, %zo = %e) -> (tensor<?xf32>, tensor<?xf32>) {
    %r0 = arith.muli %ch, %chunk : index
    %rleft = arith.subi %r, %r0 : index
    %rc = arith.minsi %rleft, %chunk : index
    %part = tensor.extract_slice %xt[0, %r0] [%l, %rc] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
    %sv, %zv = func.call @__gptq_find_params(%part, %maxq, %sym, %mse, %norm, %steps, %grid) : (tensor<?x?xf32>, f32, i1, i1, f32, index, f64) -> (tensor<?xf32>, tensor<?xf32>)
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %sv into %so[%r0] [%rc] [1] : tensor<?xf32> into tensor<?xf32>
      tensor.parallel_insert_slice %zv into %zo[%r0] [%rc] [1] : tensor<?xf32> into tensor<?xf32>
    }
  }
  return %res#0, %res#1 : tensor<?xf32>, tensor<?xf32>
}

// W1 of a task of the quantize-and-compensate column loop: rows %i1 ..
// %i1 + %cnt - 1 and columns %r0 .. %r0 + %rc - 1 of W^T, copied into a
// compact buffer. In W^T itself the part's rows lie a whole row of W^T
// apart and fall into the same few sets of the L1 cache; the copy (block x
// 64 floats) stays there for the whole column loop.
func.func private @__gptq_block_rows(%wt: tensor<?x?xf32>, %i1: index, %r0: index, %cnt: index, %rc: index) -> tensor<?x?xf32> {
  %s = tensor.extract_slice %wt[%i1, %r0] [%cnt, %rc] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
  %c = bufferization.alloc_tensor() copy(%s) : tensor<?x?xf32>
  return %c : tensor<?x?xf32>
}

//===--------------------------------------------------------------------===//
// Task sizes of the parallel loops
//===--------------------------------------------------------------------===//

// The quantize-and-compensate loop in the reference's order: each block's
// errors given to the later columns by one matrix product per block (the
// matrix kernel), see __gptq_quantize_blocks.
func.func private @__gptq_left_looking() -> i1 {
  %f = arith.constant false
  return %f : i1
}

// The factorization's order (see __gptq_damped_cholesky): row by row, whose
// products skip the triangles that are never read.
func.func private @__gptq_accumulate_inverse() -> i1 {
  %f = arith.constant false
  return %f : i1
}

// Rows of W per task of the quantize-and-compensate block loop: a task's
// part of the block (block x 64 floats) stays in cache for the whole column
// loop.
func.func private @__gptq_chunk_quantize() -> index {
  %c = arith.constant 64 : index
  return %c : index
}

// Rows per task of gathers, masks and dequantization.
func.func private @__gptq_chunk_rows() -> index {
  %c = arith.constant 32 : index
  return %c : index
}

// Columns per task of act-order's ranking.
func.func private @__gptq_chunk_columns() -> index {
  %c = arith.constant 64 : index
  return %c : index
}

}
