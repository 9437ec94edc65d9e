// The layer's microkernels of the library (gptq_ukernel.damped_cholesky and
// gptq_ukernel.quantize_blocks), as the library exports them:
// gptq-build-ukernels compiles these functions, with the kernels they call
// (Library.mlir's __gptq_damped_cholesky and __gptq_quantize_blocks, and
// what those call), once for each instruction set, under the names
// gptq_uk_damped_cholesky_<isa> and gptq_uk_quantize_blocks_<isa>. Their
// signatures are the calling convention of
// include/gptq/Codegen/CPU/UKernelAbi.h, which the build checks: the
// operands as dense buffers (an operand the variant lacks empty), the
// variant as a flags word, the settings as scalars; the results are
// written into the buffers given for them, and the scalar result returned.

// Flags: bit 0, H is given before the symmetric permutation %pm.
func.func @gptq_uk_damped_cholesky(%hm: memref<?x?xf32>, %pm: memref<?xi64>, %fm: memref<?x?xf32>, %flags: i32, %percdamp: f32, %block: i64) -> i1 {
  %h = bufferization.to_tensor %hm restrict : memref<?x?xf32> to tensor<?x?xf32>
  %p = bufferization.to_tensor %pm restrict : memref<?xi64> to tensor<?xi64>
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %fPerm = arith.andi %flags, %one : i32
  %useperm = arith.cmpi ne, %fPerm, %zero : i32
  %nb = arith.index_cast %block : i64 to index
  // The flag as a constant in each branch: the kernel, inlined into each,
  // is specialized on it by canonicalization, so that no branch on it is left
  // whose two sides bufferize to buffers of different layouts.
  %true = arith.constant true
  %false = arith.constant false
  // Each branch writes its factor into %fm (a contiguous copy: a value
  // yielded out of the branches would have a buffer of any layout).
  %ok = scf.if %useperm -> (i1) {
    %f1, %ok1 = func.call @__gptq_damped_cholesky(%h, %percdamp, %nb, %p, %true) : (tensor<?x?xf32>, f32, index, tensor<?xi64>, i1) -> (tensor<?x?xf32>, i1)
    bufferization.materialize_in_destination %f1 in restrict writable %fm : (tensor<?x?xf32>, memref<?x?xf32>) -> ()
    scf.yield %ok1 : i1
  } else {
    %f0, %ok0 = func.call @__gptq_damped_cholesky(%h, %percdamp, %nb, %p, %false) : (tensor<?x?xf32>, f32, index, tensor<?xi64>, i1) -> (tensor<?x?xf32>, i1)
    bufferization.materialize_in_destination %f0 in restrict writable %fm : (tensor<?x?xf32>, memref<?x?xf32>) -> ()
    scf.yield %ok0 : i1
  }
  return %ok : i1
}

// Flags: bit 0 fixed grids (%sinm, %zinm, %gmapm), 1 symmetric, 2 the MSE
// search, 3 W given before the column permutation %pm, 4 the dead inputs
// of %hm masked, 5 the codes returned in W's column order.
func.func @gptq_uk_quantize_blocks(%wm: memref<?x?xf32>, %um: memref<?x?xf32>, %sinm: memref<?x?xf32>, %zinm: memref<?x?xf32>, %gmapm: memref<?xi32>, %pm: memref<?xi64>, %hm: memref<?x?xf32>, %cm: memref<?x?xi8>, %sm: memref<?x?xf32>, %zm: memref<?x?xf32>, %flags: i32, %gs64: i64, %bsz64: i64, %maxq: f32, %norm: f32, %steps64: i64, %grid: f64) -> f32 {
  %w = bufferization.to_tensor %wm restrict : memref<?x?xf32> to tensor<?x?xf32>
  %u = bufferization.to_tensor %um restrict : memref<?x?xf32> to tensor<?x?xf32>
  %sin = bufferization.to_tensor %sinm restrict : memref<?x?xf32> to tensor<?x?xf32>
  %zin = bufferization.to_tensor %zinm restrict : memref<?x?xf32> to tensor<?x?xf32>
  %gmap = bufferization.to_tensor %gmapm restrict : memref<?xi32> to tensor<?xi32>
  %p = bufferization.to_tensor %pm restrict : memref<?xi64> to tensor<?xi64>
  %h = bufferization.to_tensor %hm restrict : memref<?x?xf32> to tensor<?x?xf32>
  %zero = arith.constant 0 : i32
  %b0 = arith.constant 1 : i32
  %b1 = arith.constant 2 : i32
  %b2 = arith.constant 4 : i32
  %b3 = arith.constant 8 : i32
  %b4 = arith.constant 16 : i32
  %b5 = arith.constant 32 : i32
  %f0 = arith.andi %flags, %b0 : i32
  %fixed = arith.cmpi ne, %f0, %zero : i32
  %f1 = arith.andi %flags, %b1 : i32
  %sym = arith.cmpi ne, %f1, %zero : i32
  %f2 = arith.andi %flags, %b2 : i32
  %mse = arith.cmpi ne, %f2, %zero : i32
  %f3 = arith.andi %flags, %b3 : i32
  %permw = arith.cmpi ne, %f3, %zero : i32
  %f4 = arith.andi %flags, %b4 : i32
  %usemask = arith.cmpi ne, %f4, %zero : i32
  %f5 = arith.andi %flags, %b5 : i32
  %permcodes = arith.cmpi ne, %f5, %zero : i32
  %gs = arith.index_cast %gs64 : i64 to index
  %bsz = arith.index_cast %bsz64 : i64 to index
  %steps = arith.index_cast %steps64 : i64 to index
  // The variants gptq.quantize_layer makes (dead inputs masked; grids
  // computed or fixed; act-order's permutation of W and of the codes, or
  // none) with their flags as constants, each a copy of the kernel
  // specialized on them (inlined, then folded), so that no
  // branch on them is left whose two sides bufferize to buffers of
  // different layouts (which would make every later access to W strided
  // and the lazy batch update several times slower); any other variant
  // with the flags as they come.
  %true = arith.constant true
  %false = arith.constant false
  %structure = arith.constant 57 : i32
  %key32 = arith.andi %flags, %structure : i32
  %key = arith.index_cast %key32 : i32 to index
  // Each case writes its results into the outs (contiguous copies: values
  // yielded out of the cases would have buffers of any layout).
  %loss = scf.index_switch %key -> f32
  case 16 {
    %c16, %s16, %z16, %l16 = func.call @__gptq_quantize_blocks(%w, %u, %sin, %zin, %gmap, %false, %gs, %bsz, %maxq, %sym, %mse, %norm, %steps, %grid, %p, %false, %h, %true, %false) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>, i1, index, index, f32, i1, i1, f32, index, f64, tensor<?xi64>, i1, tensor<?x?xf32>, i1, i1) -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, f32)
    bufferization.materialize_in_destination %c16 in restrict writable %cm : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
    bufferization.materialize_in_destination %s16 in restrict writable %sm : (tensor<?x?xf32>, memref<?x?xf32>) -> ()
    bufferization.materialize_in_destination %z16 in restrict writable %zm : (tensor<?x?xf32>, memref<?x?xf32>) -> ()
    scf.yield %l16 : f32
  }
  case 17 {
    %c17, %s17, %z17, %l17 = func.call @__gptq_quantize_blocks(%w, %u, %sin, %zin, %gmap, %true, %gs, %bsz, %maxq, %sym, %mse, %norm, %steps, %grid, %p, %false, %h, %true, %false) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>, i1, index, index, f32, i1, i1, f32, index, f64, tensor<?xi64>, i1, tensor<?x?xf32>, i1, i1) -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, f32)
    bufferization.materialize_in_destination %c17 in restrict writable %cm : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
    bufferization.materialize_in_destination %s17 in restrict writable %sm : (tensor<?x?xf32>, memref<?x?xf32>) -> ()
    bufferization.materialize_in_destination %z17 in restrict writable %zm : (tensor<?x?xf32>, memref<?x?xf32>) -> ()
    scf.yield %l17 : f32
  }
  case 56 {
    %c56, %s56, %z56, %l56 = func.call @__gptq_quantize_blocks(%w, %u, %sin, %zin, %gmap, %false, %gs, %bsz, %maxq, %sym, %mse, %norm, %steps, %grid, %p, %true, %h, %true, %true) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>, i1, index, index, f32, i1, i1, f32, index, f64, tensor<?xi64>, i1, tensor<?x?xf32>, i1, i1) -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, f32)
    bufferization.materialize_in_destination %c56 in restrict writable %cm : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
    bufferization.materialize_in_destination %s56 in restrict writable %sm : (tensor<?x?xf32>, memref<?x?xf32>) -> ()
    bufferization.materialize_in_destination %z56 in restrict writable %zm : (tensor<?x?xf32>, memref<?x?xf32>) -> ()
    scf.yield %l56 : f32
  }
  case 57 {
    %c57, %s57, %z57, %l57 = func.call @__gptq_quantize_blocks(%w, %u, %sin, %zin, %gmap, %true, %gs, %bsz, %maxq, %sym, %mse, %norm, %steps, %grid, %p, %true, %h, %true, %true) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>, i1, index, index, f32, i1, i1, f32, index, f64, tensor<?xi64>, i1, tensor<?x?xf32>, i1, i1) -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, f32)
    bufferization.materialize_in_destination %c57 in restrict writable %cm : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
    bufferization.materialize_in_destination %s57 in restrict writable %sm : (tensor<?x?xf32>, memref<?x?xf32>) -> ()
    bufferization.materialize_in_destination %z57 in restrict writable %zm : (tensor<?x?xf32>, memref<?x?xf32>) -> ()
    scf.yield %l57 : f32
  }
  default {
    %c0, %s0, %z0, %l0 = func.call @__gptq_quantize_blocks(%w, %u, %sin, %zin, %gmap, %fixed, %gs, %bsz, %maxq, %sym, %mse, %norm, %steps, %grid, %p, %permw, %h, %usemask, %permcodes) : (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>, i1, index, index, f32, i1, i1, f32, index, f64, tensor<?xi64>, i1, tensor<?x?xf32>, i1, i1) -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, f32)
    bufferization.materialize_in_destination %c0 in restrict writable %cm : (tensor<?x?xi8>, memref<?x?xi8>) -> ()
    bufferization.materialize_in_destination %s0 in restrict writable %sm : (tensor<?x?xf32>, memref<?x?xf32>) -> ()
    bufferization.materialize_in_destination %z0 in restrict writable %zm : (tensor<?x?xf32>, memref<?x?xf32>) -> ()
    scf.yield %l0 : f32
  }
  return %loss : f32
}
