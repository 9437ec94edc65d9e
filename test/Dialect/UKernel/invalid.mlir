// RUN: gptq-opt %s -split-input-file -verify-diagnostics

// Every verifier message of UKernelOps.cpp.

func.func @mixed(%a: tensor<1x4x8xf32>, %b: tensor<1x8x4xf32>, %c: memref<1x4x4xf32>) {
  // expected-error @+1 {{expects all operands to be tensors or all to be buffers}}
  gptq_ukernel.matmul ins(%a, %b : tensor<1x4x8xf32>, tensor<1x8x4xf32>) outs(%c : memref<1x4x4xf32>)
  return
}

// -----

func.func @no_result(%a: tensor<1x4x8xf32>, %b: tensor<1x8x4xf32>, %c: tensor<1x4x4xf32>) {
  // expected-error @+1 {{on tensors returns one value of the type of outs}}
  gptq_ukernel.matmul ins(%a, %b : tensor<1x4x8xf32>, tensor<1x8x4xf32>) outs(%c : tensor<1x4x4xf32>)
  return
}

// -----

func.func @buffer_result(%a: memref<1x4x8xf32>, %b: memref<1x8x4xf32>, %c: memref<1x4x4xf32>) {
  // expected-error @+1 {{on buffers returns nothing}}
  %r = gptq_ukernel.matmul ins(%a, %b : memref<1x4x8xf32>, memref<1x8x4xf32>) outs(%c : memref<1x4x4xf32>) -> tensor<1x4x4xf32>
  return
}

// -----

func.func @lhs_rank(%a: tensor<4x8xf32>, %b: tensor<1x8x4xf32>, %c: tensor<1x4x4xf32>) {
  // expected-error @+1 {{expects ins of rank 3 and f32 elements, found 'tensor<4x8xf32>'}}
  %r = gptq_ukernel.matmul ins(%a, %b : tensor<4x8xf32>, tensor<1x8x4xf32>) outs(%c : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return
}

// -----

func.func @init_type(%a: tensor<1x4x8xf32>, %b: tensor<1x8x4xf32>, %c: tensor<1x4x4xf16>) {
  // expected-error @+1 {{expects outs of rank 3 and f32 elements, found 'tensor<1x4x4xf16>'}}
  %r = gptq_ukernel.matmul ins(%a, %b : tensor<1x4x8xf32>, tensor<1x8x4xf32>) outs(%c : tensor<1x4x4xf16>) -> tensor<1x4x4xf16>
  return
}

// -----

func.func @two_rhs(%a: tensor<1x4x8xf32>, %b: tensor<1x4x8xf32>, %h: tensor<4x8xbf16>, %c: tensor<1x4x4xf32>) {
  // expected-error @+1 {{expects exactly one right operand: a float32 matrix in ins, a packed weight or a half-precision weight}}
  %r = gptq_ukernel.matmul ins(%a, %b : tensor<1x4x8xf32>, tensor<1x4x8xf32>) half(%h : tensor<4x8xbf16>) outs(%c : tensor<1x4x4xf32>) {transpose_rhs} -> tensor<1x4x4xf32>
  return
}

// -----

func.func @no_rhs(%a: tensor<1x4x8xf32>, %c: tensor<1x4x4xf32>) {
  // expected-error @+1 {{expects exactly one right operand}}
  %r = gptq_ukernel.matmul ins(%a : tensor<1x4x8xf32>) outs(%c : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return
}

// -----

func.func @no_bits(%a: tensor<1x4x8xf32>, %w: tensor<4x1xi32>, %s: tensor<4x1xf32>, %g: tensor<8xi32>, %c: tensor<1x4x4xf32>) {
  // expected-error @+1 {{expects 'bits' exactly when the weight is packed}}
  %r = gptq_ukernel.matmul ins(%a : tensor<1x4x8xf32>) packed(%w, %s, %s, %g : tensor<4x1xi32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<8xi32>) outs(%c : tensor<1x4x4xf32>) {transpose_rhs} -> tensor<1x4x4xf32>
  return
}

// -----

func.func @bits_float(%a: tensor<1x4x8xf32>, %b: tensor<1x4x8xf32>, %c: tensor<1x4x4xf32>) {
  // expected-error @+1 {{expects 'bits' exactly when the weight is packed}}
  %r = gptq_ukernel.matmul ins(%a, %b : tensor<1x4x8xf32>, tensor<1x4x8xf32>) outs(%c : tensor<1x4x4xf32>) {bits = 4 : i64, transpose_rhs} -> tensor<1x4x4xf32>
  return
}

// -----

func.func @bits_range(%a: tensor<1x4x8xf32>, %w: tensor<4x1xi32>, %s: tensor<4x1xf32>, %g: tensor<8xi32>, %c: tensor<1x4x4xf32>) {
  // expected-error @+1 {{attribute 'bits' failed to satisfy constraint}}
  %r = gptq_ukernel.matmul ins(%a : tensor<1x4x8xf32>) packed(%w, %s, %s, %g : tensor<4x1xi32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<8xi32>) outs(%c : tensor<1x4x4xf32>) {bits = 9 : i64, transpose_rhs} -> tensor<1x4x4xf32>
  return
}

// -----

func.func @not_transposed(%a: tensor<1x4x8xf32>, %h: tensor<4x8xf16>, %c: tensor<1x4x4xf32>) {
  // expected-error @+1 {{expects a packed or half-precision weight given transposed ([N, K], transpose_rhs)}}
  %r = gptq_ukernel.matmul ins(%a : tensor<1x4x8xf32>) half(%h : tensor<4x8xf16>) outs(%c : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return
}

// -----

func.func @batch(%a: tensor<2x4x8xf32>, %b: tensor<2x8x4xf32>, %c: tensor<3x4x4xf32>) {
  // expected-error @+1 {{the batch sizes of ins and outs differ: 2 and 3}}
  %r = gptq_ukernel.matmul ins(%a, %b : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%c : tensor<3x4x4xf32>) -> tensor<3x4x4xf32>
  return
}

// -----

func.func @rows(%a: tensor<1x8x4xf32>, %b: tensor<1x8x4xf32>, %c: tensor<1x8x4xf32>) {
  // expected-error @+1 {{the rows of the product and of outs differ: 4 and 8}}
  %r = gptq_ukernel.matmul ins(%a, %b : tensor<1x8x4xf32>, tensor<1x8x4xf32>) outs(%c : tensor<1x8x4xf32>) {transpose_lhs} -> tensor<1x8x4xf32>
  return
}

// -----

func.func @inner(%a: tensor<1x4x8xf32>, %b: tensor<1x4x8xf32>, %c: tensor<1x4x8xf32>) {
  // expected-error @+1 {{the inner sizes of the operands differ: 8 and 4}}
  %r = gptq_ukernel.matmul ins(%a, %b : tensor<1x4x8xf32>, tensor<1x4x8xf32>) outs(%c : tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return
}

// -----

func.func @columns(%a: tensor<1x4x8xf32>, %b: tensor<1x8x6xf32>, %c: tensor<1x4x4xf32>) {
  // expected-error @+1 {{the columns of the product and of outs differ: 6 and 4}}
  %r = gptq_ukernel.matmul ins(%a, %b : tensor<1x4x8xf32>, tensor<1x8x6xf32>) outs(%c : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return
}

// -----

func.func @weight_batch(%a: tensor<2x4x8xf32>, %h: tensor<4x8xbf16>, %c: tensor<2x4x4xf32>) {
  // expected-error @+1 {{the batch size of a product with a weight and 1 differ: 2 and 1}}
  %r = gptq_ukernel.matmul ins(%a : tensor<2x4x8xf32>) half(%h : tensor<4x8xbf16>) outs(%c : tensor<2x4x4xf32>) {transpose_rhs} -> tensor<2x4x4xf32>
  return
}

// -----

func.func @words(%a: tensor<1x4x64xf32>, %w: tensor<4x9xi32>, %s: tensor<4x2xf32>, %g: tensor<64xi32>, %c: tensor<1x4x4xf32>) {
  // expected-error @+1 {{expects 8 words per row for 64 codes of 4 bits, found 9}}
  %r = gptq_ukernel.matmul ins(%a : tensor<1x4x64xf32>) packed(%w, %s, %s, %g : tensor<4x9xi32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<64xi32>) outs(%c : tensor<1x4x4xf32>) {bits = 4 : i64, transpose_rhs} -> tensor<1x4x4xf32>
  return
}

// -----

func.func @group_index(%a: tensor<1x4x64xf32>, %w: tensor<4x8xi32>, %s: tensor<4x2xf32>, %g: tensor<32xi32>, %c: tensor<1x4x4xf32>) {
  // expected-error @+1 {{the inner size and the group index's length differ: 64 and 32}}
  %r = gptq_ukernel.matmul ins(%a : tensor<1x4x64xf32>) packed(%w, %s, %s, %g : tensor<4x8xi32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<32xi32>) outs(%c : tensor<1x4x4xf32>) {bits = 4 : i64, transpose_rhs} -> tensor<1x4x4xf32>
  return
}

// -----

func.func @grids(%a: tensor<1x4x64xf32>, %w: tensor<4x8xi32>, %s: tensor<4x2xf32>, %z: tensor<4x3xf32>, %g: tensor<64xi32>, %c: tensor<1x4x4xf32>) {
  // expected-error @+1 {{the groups of the scales and of the zeros differ: 2 and 3}}
  %r = gptq_ukernel.matmul ins(%a : tensor<1x4x64xf32>) packed(%w, %s, %z, %g : tensor<4x8xi32>, tensor<4x2xf32>, tensor<4x3xf32>, tensor<64xi32>) outs(%c : tensor<1x4x4xf32>) {bits = 4 : i64, transpose_rhs} -> tensor<1x4x4xf32>
  return
}

// -----

func.func @word_type(%a: tensor<1x4x64xf32>, %w: tensor<4x8xi64>, %s: tensor<4x2xf32>, %g: tensor<64xi32>, %c: tensor<1x4x4xf32>) {
  // expected-error @+1 {{expects packed words of rank 2 and i32 elements, found 'tensor<4x8xi64>'}}
  %r = gptq_ukernel.matmul ins(%a : tensor<1x4x64xf32>) packed(%w, %s, %s, %g : tensor<4x8xi64>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<64xi32>) outs(%c : tensor<1x4x4xf32>) {bits = 4 : i64, transpose_rhs} -> tensor<1x4x4xf32>
  return
}

// -----

func.func @half_type(%a: tensor<1x4x8xf32>, %h: tensor<4x8xf32>, %c: tensor<1x4x4xf32>) {
  // expected-error @+1 {{expects a half-precision weight of rank 2 and bf16 or f16 elements, found 'tensor<4x8xf32>'}}
  %r = gptq_ukernel.matmul ins(%a : tensor<1x4x8xf32>) half(%h : tensor<4x8xf32>) outs(%c : tensor<1x4x4xf32>) {transpose_rhs} -> tensor<1x4x4xf32>
  return
}

// -----

// Only the generic form can leave out part of a packed weight.
func.func @grids_alone(%a: tensor<1x4x8xf32>, %b: tensor<1x4x8xf32>, %s: tensor<4x1xf32>, %c: tensor<1x4x4xf32>) {
  // expected-error @+1 {{has grids without a packed weight}}
  %r = "gptq_ukernel.matmul"(%a, %b, %s, %c) <{operandSegmentSizes = array<i32: 1, 1, 0, 1, 0, 0, 0, 1>, transpose_rhs}> : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<4x1xf32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return
}

// -----

func.func @packed_alone(%a: tensor<1x4x8xf32>, %w: tensor<4x1xi32>, %c: tensor<1x4x4xf32>) {
  // expected-error @+1 {{expects a packed weight with its scales, zeros and group index}}
  %r = "gptq_ukernel.matmul"(%a, %w, %c) <{operandSegmentSizes = array<i32: 1, 0, 1, 0, 0, 0, 0, 1>, bits = 4 : i64, transpose_rhs}> : (tensor<1x4x8xf32>, tensor<4x1xi32>, tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return
}

// -----

func.func @cholesky_mixed(%h: tensor<4x4xf32>, %d: f32, %e: memref<4x4xf32>) {
  // expected-error @+1 {{expects all operands to be tensors or all to be buffers}}
  %ok = gptq_ukernel.damped_cholesky ins(%h : tensor<4x4xf32>) percdamp(%d) outs(%e : memref<4x4xf32>) {block = 128 : i64} -> i1
  return
}

// -----

func.func @cholesky_no_factor(%h: tensor<4x4xf32>, %d: f32, %e: tensor<4x4xf32>) {
  // expected-error @+1 {{on tensors returns its outs and a scalar}}
  %ok = gptq_ukernel.damped_cholesky ins(%h : tensor<4x4xf32>) percdamp(%d) outs(%e : tensor<4x4xf32>) {block = 128 : i64} -> i1
  return
}

// -----

func.func @cholesky_buffer_factor(%h: memref<4x4xf32>, %d: f32, %e: memref<4x4xf32>) {
  // expected-error @+1 {{on buffers returns only its scalar result}}
  %u, %ok = gptq_ukernel.damped_cholesky ins(%h : memref<4x4xf32>) percdamp(%d) outs(%e : memref<4x4xf32>) {block = 128 : i64} -> tensor<4x4xf32>, i1
  return
}

// -----

func.func @cholesky_factor_type(%h: tensor<4x4xf32>, %d: f32, %e: tensor<4x4xf32>) {
  // expected-error @+1 {{returns a factor of the type of outs}}
  %u, %ok = gptq_ukernel.damped_cholesky ins(%h : tensor<4x4xf32>) percdamp(%d) outs(%e : tensor<4x4xf32>) {block = 128 : i64} -> tensor<?x?xf32>, i1
  return
}

// -----

func.func @cholesky_square(%h: tensor<4x5xf32>, %d: f32, %e: tensor<4x4xf32>) {
  // expected-error @+1 {{the rows and columns of the Hessian differ: 4 and 5}}
  %u, %ok = gptq_ukernel.damped_cholesky ins(%h : tensor<4x5xf32>) percdamp(%d) outs(%e : tensor<4x4xf32>) {block = 128 : i64} -> tensor<4x4xf32>, i1
  return
}

// -----

func.func @cholesky_outs_size(%h: tensor<4x4xf32>, %d: f32, %e: tensor<3x3xf32>) {
  // expected-error @+1 {{the sizes of the Hessian and of outs differ: 4 and 3}}
  %u, %ok = gptq_ukernel.damped_cholesky ins(%h : tensor<4x4xf32>) percdamp(%d) outs(%e : tensor<3x3xf32>) {block = 128 : i64} -> tensor<3x3xf32>, i1
  return
}

// -----

func.func @cholesky_perm(%h: tensor<4x4xf32>, %p: tensor<5xi64>, %d: f32, %e: tensor<4x4xf32>) {
  // expected-error @+1 {{the sizes of the Hessian and of the permutation differ: 4 and 5}}
  %u, %ok = gptq_ukernel.damped_cholesky ins(%h : tensor<4x4xf32>) permuted(%p : tensor<5xi64>) percdamp(%d) outs(%e : tensor<4x4xf32>) {block = 128 : i64} -> tensor<4x4xf32>, i1
  return
}

// -----

func.func @cholesky_block(%h: tensor<4x4xf32>, %d: f32, %e: tensor<4x4xf32>) {
  // expected-error @+1 {{attribute 'block' failed to satisfy constraint}}
  %u, %ok = gptq_ukernel.damped_cholesky ins(%h : tensor<4x4xf32>) percdamp(%d) outs(%e : tensor<4x4xf32>) {block = 0 : i64} -> tensor<4x4xf32>, i1
  return
}

// -----

func.func @quantize_outs(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x2xf32>) {
  // expected-error @+1 {{expects three outs: codes, scales and zeros}}
  %q:3 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) outs(%c, %s : tensor<8x64xi8>, tensor<8x2xf32>) {config = #gptq.config<group_size = 32>} -> tensor<8x64xi8>, tensor<8x2xf32>, f32
  return
}

// -----

func.func @quantize_codes_type(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi32>, %s: tensor<8x2xf32>) {
  // expected-error @+1 {{expects codes (outs #0) of rank 2 and i8 elements, found 'tensor<8x64xi32>'}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) outs(%c, %s, %s : tensor<8x64xi32>, tensor<8x2xf32>, tensor<8x2xf32>) {config = #gptq.config<group_size = 32>} -> tensor<8x64xi32>, tensor<8x2xf32>, tensor<8x2xf32>, f32
  return
}

// -----

func.func @quantize_factor(%w: tensor<8x64xf32>, %u: tensor<32x32xf32>, %c: tensor<8x64xi8>, %s: tensor<8x2xf32>) {
  // expected-error @+1 {{the weight's columns and the factor's size differ: 64 and 32}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<32x32xf32>) outs(%c, %s, %s : tensor<8x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>) {config = #gptq.config<group_size = 32>} -> tensor<8x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>, f32
  return
}

// -----

func.func @quantize_groups(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x3xf32>) {
  // expected-error @+1 {{the groups of the weight and of the scales differ: 2 and 3}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) outs(%c, %s, %s : tensor<8x64xi8>, tensor<8x3xf32>, tensor<8x3xf32>) {config = #gptq.config<group_size = 32>} -> tensor<8x64xi8>, tensor<8x3xf32>, tensor<8x3xf32>, f32
  return
}

// -----

func.func @quantize_per_row(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x1xf32>) {
  // expected-error @+1 {{expects fixed grids for per-row grids (group_size -1)}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) outs(%c, %s, %s : tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>) {config = #gptq.config<>} -> tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>, f32
  return
}

// -----

func.func @quantize_map(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x1xf32>, %g: tensor<32xi32>) {
  // expected-error @+1 {{the weight's columns and the group map's length differ: 64 and 32}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) grids(%s, %s, %g : tensor<8x1xf32>, tensor<8x1xf32>, tensor<32xi32>) outs(%c, %s, %s : tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>) {config = #gptq.config<>} -> tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>, f32
  return
}

// -----

func.func @quantize_permute_codes(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x2xf32>) {
  // expected-error @+1 {{has permute_codes without a permutation}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) outs(%c, %s, %s : tensor<8x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>) {config = #gptq.config<group_size = 32>, permute_codes} -> tensor<8x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>, f32
  return
}

// -----

func.func @quantize_mask(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x2xf32>, %h: tensor<32x32xf32>) {
  // expected-error @+1 {{the weight's columns and the Hessian's size differ: 64 and 32}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) masked(%h : tensor<32x32xf32>) outs(%c, %s, %s : tensor<8x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>) {config = #gptq.config<group_size = 32>} -> tensor<8x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>, f32
  return
}

// -----

func.func @cholesky_hessian_type(%h: tensor<4x4xf16>, %d: f32, %e: tensor<4x4xf32>) {
  // expected-error @+1 {{expects a Hessian of rank 2 and f32 elements, found 'tensor<4x4xf16>'}}
  %u, %ok = gptq_ukernel.damped_cholesky ins(%h : tensor<4x4xf16>) percdamp(%d) outs(%e : tensor<4x4xf32>) {block = 128 : i64} -> tensor<4x4xf32>, i1
  return
}

// -----

func.func @quantize_scales_type(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x2xf16>, %z: tensor<8x2xf32>) {
  // expected-error @+1 {{expects scales (outs #1) of rank 2 and f32 elements, found 'tensor<8x2xf16>'}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) outs(%c, %s, %z : tensor<8x64xi8>, tensor<8x2xf16>, tensor<8x2xf32>) {config = #gptq.config<group_size = 32>} -> tensor<8x64xi8>, tensor<8x2xf16>, tensor<8x2xf32>, f32
  return
}

// -----

func.func @quantize_zeros_type(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x2xf32>, %z: tensor<8x2xf16>) {
  // expected-error @+1 {{expects zeros (outs #2) of rank 2 and f32 elements, found 'tensor<8x2xf16>'}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) outs(%c, %s, %z : tensor<8x64xi8>, tensor<8x2xf32>, tensor<8x2xf16>) {config = #gptq.config<group_size = 32>} -> tensor<8x64xi8>, tensor<8x2xf32>, tensor<8x2xf16>, f32
  return
}

// -----

func.func @quantize_result_types(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x2xf32>) {
  // expected-error @+1 {{returns its outs' types}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) outs(%c, %s, %s : tensor<8x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>) {config = #gptq.config<group_size = 32>} -> tensor<?x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>, f32
  return
}

// -----

func.func @quantize_code_rows(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<4x64xi8>, %s: tensor<8x2xf32>) {
  // expected-error @+1 {{the rows of the weight and of the codes differ: 8 and 4}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) outs(%c, %s, %s : tensor<4x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>) {config = #gptq.config<group_size = 32>} -> tensor<4x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>, f32
  return
}

// -----

func.func @quantize_code_columns(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x32xi8>, %s: tensor<8x2xf32>) {
  // expected-error @+1 {{the columns of the weight and of the codes differ: 64 and 32}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) outs(%c, %s, %s : tensor<8x32xi8>, tensor<8x2xf32>, tensor<8x2xf32>) {config = #gptq.config<group_size = 32>} -> tensor<8x32xi8>, tensor<8x2xf32>, tensor<8x2xf32>, f32
  return
}

// -----

func.func @quantize_scale_rows(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<4x2xf32>) {
  // expected-error @+1 {{the rows of the weight and of the scales differ: 8 and 4}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) outs(%c, %s, %s : tensor<8x64xi8>, tensor<4x2xf32>, tensor<4x2xf32>) {config = #gptq.config<group_size = 32>} -> tensor<8x64xi8>, tensor<4x2xf32>, tensor<4x2xf32>, f32
  return
}

// -----

func.func @quantize_zero_rows(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x2xf32>, %z: tensor<4x2xf32>) {
  // expected-error @+1 {{the rows of the scales and of the zeros differ: 8 and 4}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) outs(%c, %s, %z : tensor<8x64xi8>, tensor<8x2xf32>, tensor<4x2xf32>) {config = #gptq.config<group_size = 32>} -> tensor<8x64xi8>, tensor<8x2xf32>, tensor<4x2xf32>, f32
  return
}

// -----

func.func @quantize_fixed_scales_type(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x1xf32>, %h: tensor<8x1xf16>, %g: tensor<64xi32>) {
  // expected-error @+1 {{expects fixed scales of rank 2 and f32 elements, found 'tensor<8x1xf16>'}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) grids(%h, %s, %g : tensor<8x1xf16>, tensor<8x1xf32>, tensor<64xi32>) outs(%c, %s, %s : tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>) {config = #gptq.config<>} -> tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>, f32
  return
}

// -----

func.func @quantize_fixed_zeros_type(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x1xf32>, %h: tensor<8x1xf16>, %g: tensor<64xi32>) {
  // expected-error @+1 {{expects fixed zeros of rank 2 and f32 elements, found 'tensor<8x1xf16>'}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) grids(%s, %h, %g : tensor<8x1xf32>, tensor<8x1xf16>, tensor<64xi32>) outs(%c, %s, %s : tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>) {config = #gptq.config<>} -> tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>, f32
  return
}

// -----

func.func @quantize_group_map_type(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x1xf32>, %g: tensor<64xi64>) {
  // expected-error @+1 {{expects a group map of rank 1 and i32 elements, found 'tensor<64xi64>'}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) grids(%s, %s, %g : tensor<8x1xf32>, tensor<8x1xf32>, tensor<64xi64>) outs(%c, %s, %s : tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>) {config = #gptq.config<>} -> tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>, f32
  return
}

// -----

func.func @quantize_fixed_rows(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x1xf32>, %f: tensor<4x1xf32>, %g: tensor<64xi32>) {
  // expected-error @+1 {{the rows of the fixed and the returned grids differ: 4 and 8}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) grids(%f, %f, %g : tensor<4x1xf32>, tensor<4x1xf32>, tensor<64xi32>) outs(%c, %s, %s : tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>) {config = #gptq.config<>} -> tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>, f32
  return
}

// -----

func.func @quantize_fixed_groups(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x1xf32>, %f: tensor<8x2xf32>, %g: tensor<64xi32>) {
  // expected-error @+1 {{the groups of the fixed and the returned grids differ: 2 and 1}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) grids(%f, %f, %g : tensor<8x2xf32>, tensor<8x2xf32>, tensor<64xi32>) outs(%c, %s, %s : tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>) {config = #gptq.config<>} -> tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>, f32
  return
}

// -----

func.func @quantize_perm_length(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x2xf32>, %p: tensor<32xi64>) {
  // expected-error @+1 {{the weight's columns and the permutation's length differ: 64 and 32}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) permuted(%p : tensor<32xi64>) outs(%c, %s, %s : tensor<8x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>) {config = #gptq.config<group_size = 32>} -> tensor<8x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>, f32
  return
}

// -----

func.func @quantize_mask_type(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x2xf32>, %h: tensor<64x64xf16>) {
  // expected-error @+1 {{expects a Hessian (masked) of rank 2 and f32 elements, found 'tensor<64x64xf16>'}}
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<64x64xf32>) masked(%h : tensor<64x64xf16>) outs(%c, %s, %s : tensor<8x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>) {config = #gptq.config<group_size = 32>} -> tensor<8x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>, f32
  return
}

// -----

// Fixed grids come whole: the custom syntax cannot say otherwise, the
// generic form can.
func.func @quantize_partial_grids(%w: tensor<8x64xf32>, %u: tensor<64x64xf32>, %c: tensor<8x64xi8>, %s: tensor<8x1xf32>) {
  // expected-error @+1 {{expects fixed grids as scales, zeros and a group map together}}
  %q:4 = "gptq_ukernel.quantize_blocks"(%w, %u, %s, %c, %s, %s) <{config = #gptq.config<>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 3>}> : (tensor<8x64xf32>, tensor<64x64xf32>, tensor<8x1xf32>, tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>) -> (tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>, f32)
  return
}
