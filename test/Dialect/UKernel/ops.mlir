// RUN: gptq-opt %s | gptq-opt | FileCheck %s
// RUN: gptq-opt %s --mlir-print-op-generic | gptq-opt | FileCheck %s

// The matrix microkernel in each form of its right operand, on tensors
// (returning C) and on buffers (writing it), printed as parsed.

// CHECK-LABEL: func.func @tensors
// CHECK: gptq_ukernel.matmul ins(%{{.*}}, %{{.*}} : tensor<2x?x8xf32>, tensor<2x8x4xf32>) outs(%{{.*}} : tensor<2x?x4xf32>) -> tensor<2x?x4xf32>
// CHECK: gptq_ukernel.matmul ins(%{{.*}} : tensor<1x?x64xf32>) packed(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<32x8xi32>, tensor<32x2xf32>, tensor<32x2xf32>, tensor<64xi32>) outs(%{{.*}} : tensor<1x?x32xf32>) {bits = 4 : i64, transpose_rhs, zero_init} -> tensor<1x?x32xf32>
// CHECK: gptq_ukernel.matmul ins(%{{.*}} : tensor<1x?x64xf32>) half(%{{.*}} : tensor<32x64xbf16>) outs(%{{.*}} : tensor<1x?x32xf32>) {transpose_rhs} -> tensor<1x?x32xf32>
// CHECK: gptq_ukernel.matmul ins(%{{.*}}, %{{.*}} : tensor<2x8x?xf32>, tensor<2x4x8xf32>) outs(%{{.*}} : tensor<2x?x4xf32>) {lower_lhs, lower_result, transpose_lhs, transpose_rhs} -> tensor<2x?x4xf32>
func.func @tensors(%a: tensor<2x?x8xf32>, %b: tensor<2x8x4xf32>, %c: tensor<2x?x4xf32>, %x: tensor<1x?x64xf32>, %w: tensor<32x8xi32>, %s: tensor<32x2xf32>, %z: tensor<32x2xf32>, %g: tensor<64xi32>, %h: tensor<32x64xbf16>, %e: tensor<1x?x32xf32>, %at: tensor<2x8x?xf32>, %bt: tensor<2x4x8xf32>) -> (tensor<2x?x4xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<2x?x4xf32>) {
  %0 = gptq_ukernel.matmul ins(%a, %b : tensor<2x?x8xf32>, tensor<2x8x4xf32>) outs(%c : tensor<2x?x4xf32>) -> tensor<2x?x4xf32>
  %1 = gptq_ukernel.matmul ins(%x : tensor<1x?x64xf32>) packed(%w, %s, %z, %g : tensor<32x8xi32>, tensor<32x2xf32>, tensor<32x2xf32>, tensor<64xi32>) outs(%e : tensor<1x?x32xf32>) {bits = 4 : i64, transpose_rhs, zero_init} -> tensor<1x?x32xf32>
  %2 = gptq_ukernel.matmul ins(%x : tensor<1x?x64xf32>) half(%h : tensor<32x64xbf16>) outs(%e : tensor<1x?x32xf32>) {transpose_rhs} -> tensor<1x?x32xf32>
  %3 = gptq_ukernel.matmul ins(%at, %bt : tensor<2x8x?xf32>, tensor<2x4x8xf32>) outs(%c : tensor<2x?x4xf32>) {transpose_lhs, transpose_rhs, lower_result, lower_lhs} -> tensor<2x?x4xf32>
  return %0, %1, %2, %3 : tensor<2x?x4xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<2x?x4xf32>
}

// CHECK-LABEL: func.func @buffers
// CHECK: gptq_ukernel.matmul ins(%{{.*}} : memref<1x?x64xf32, strided<[?, 64, 1], offset: ?>>) half(%{{.*}} : memref<32x64xf16>) outs(%{{.*}} : memref<1x?x32xf32>) {transpose_rhs, zero_init}
// CHECK-NEXT: return
func.func @buffers(%x: memref<1x?x64xf32, strided<[?, 64, 1], offset: ?>>, %h: memref<32x64xf16>, %e: memref<1x?x32xf32>) {
  gptq_ukernel.matmul ins(%x : memref<1x?x64xf32, strided<[?, 64, 1], offset: ?>>) half(%h : memref<32x64xf16>) outs(%e : memref<1x?x32xf32>) {transpose_rhs, zero_init}
  return
}

// The layer's microkernels: the factorization (permuted or not) and
// quantize-and-compensate with computed grids, and with fixed grids, the
// folded permutation, mask and codes' order, on tensors and on buffers.

// CHECK-LABEL: func.func @layer_tensors
// CHECK: gptq_ukernel.damped_cholesky ins(%{{.*}} : tensor<?x?xf32>) percdamp(%{{.*}}) outs(%{{.*}} : tensor<?x?xf32>) {block = 128 : i64} -> tensor<?x?xf32>, i1
// CHECK: gptq_ukernel.damped_cholesky ins(%{{.*}} : tensor<?x?xf32>) permuted(%{{.*}} : tensor<?xi64>) percdamp(%{{.*}}) outs(%{{.*}} : tensor<?x?xf32>) {block = 32 : i64} -> tensor<?x?xf32>, i1
// CHECK: gptq_ukernel.quantize_blocks ins(%{{.*}}, %{{.*}} : tensor<8x64xf32>, tensor<?x?xf32>) outs(%{{.*}}, %{{.*}}, %{{.*}} : tensor<8x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>) {config = #gptq.config<group_size = 32>} -> tensor<8x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>, f32
// CHECK: gptq_ukernel.quantize_blocks ins(%{{.*}}, %{{.*}} : tensor<8x64xf32>, tensor<?x?xf32>) grids(%{{.*}}, %{{.*}}, %{{.*}} : tensor<8x1xf32>, tensor<8x1xf32>, tensor<64xi32>) permuted(%{{.*}} : tensor<?xi64>) masked(%{{.*}} : tensor<?x?xf32>) outs(%{{.*}}, %{{.*}}, %{{.*}} : tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>) {config = #gptq.config<bits = 3, sym = true>, permute_codes} -> tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>, f32
func.func @layer_tensors(%h: tensor<?x?xf32>, %d: f32, %e: tensor<?x?xf32>, %p: tensor<?xi64>, %w: tensor<8x64xf32>, %c: tensor<8x64xi8>, %g: tensor<8x2xf32>, %s1: tensor<8x1xf32>, %map: tensor<64xi32>) -> (tensor<?x?xf32>, i1, tensor<?x?xf32>, i1, f32, f32) {
  %u, %ok = gptq_ukernel.damped_cholesky ins(%h : tensor<?x?xf32>) percdamp(%d) outs(%e : tensor<?x?xf32>) {block = 128 : i64} -> tensor<?x?xf32>, i1
  %u2, %ok2 = gptq_ukernel.damped_cholesky ins(%h : tensor<?x?xf32>) permuted(%p : tensor<?xi64>) percdamp(%d) outs(%e : tensor<?x?xf32>) {block = 32 : i64} -> tensor<?x?xf32>, i1
  %q:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<?x?xf32>) outs(%c, %g, %g : tensor<8x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>) {config = #gptq.config<group_size = 32>} -> tensor<8x64xi8>, tensor<8x2xf32>, tensor<8x2xf32>, f32
  %r:4 = gptq_ukernel.quantize_blocks ins(%w, %u : tensor<8x64xf32>, tensor<?x?xf32>) grids(%s1, %s1, %map : tensor<8x1xf32>, tensor<8x1xf32>, tensor<64xi32>) permuted(%p : tensor<?xi64>) masked(%h : tensor<?x?xf32>) outs(%c, %s1, %s1 : tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>) {config = #gptq.config<bits = 3, sym = true>, permute_codes} -> tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>, f32
  return %u, %ok, %u2, %ok2, %q#3, %r#3 : tensor<?x?xf32>, i1, tensor<?x?xf32>, i1, f32, f32
}

// A run-time width.
// CHECK-LABEL: func.func @run_time_bits
// CHECK: gptq_ukernel.quantize_blocks ins(%{{.*}}, %{{.*}} : memref<8x64xf32>, memref<?x?xf32>) bits(%{{.*}}) outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<8x64xi8>, memref<8x2xf32>, memref<8x2xf32>) {config = #gptq.config<group_size = 32>} -> f32
func.func @run_time_bits(%w: memref<8x64xf32>, %u: memref<?x?xf32>, %c: memref<8x64xi8>, %g: memref<8x2xf32>, %b: i64) -> f32 {
  %loss = gptq_ukernel.quantize_blocks ins(%w, %u : memref<8x64xf32>, memref<?x?xf32>) bits(%b) outs(%c, %g, %g : memref<8x64xi8>, memref<8x2xf32>, memref<8x2xf32>) {config = #gptq.config<group_size = 32>} -> f32
  return %loss : f32
}

// CHECK-LABEL: func.func @layer_buffers
// CHECK: %{{.*}} = gptq_ukernel.damped_cholesky ins(%{{.*}} : memref<?x?xf32>) percdamp(%{{.*}}) outs(%{{.*}} : memref<?x?xf32>) {block = 128 : i64} -> i1
// CHECK: %{{.*}} = gptq_ukernel.quantize_blocks ins(%{{.*}}, %{{.*}} : memref<8x64xf32>, memref<?x?xf32>) outs(%{{.*}}, %{{.*}}, %{{.*}} : memref<8x64xi8>, memref<8x2xf32>, memref<8x2xf32>) {config = #gptq.config<group_size = 32>} -> f32
func.func @layer_buffers(%h: memref<?x?xf32>, %d: f32, %e: memref<?x?xf32>, %w: memref<8x64xf32>, %c: memref<8x64xi8>, %g: memref<8x2xf32>) -> (i1, f32) {
  %ok = gptq_ukernel.damped_cholesky ins(%h : memref<?x?xf32>) percdamp(%d) outs(%e : memref<?x?xf32>) {block = 128 : i64} -> i1
  %loss = gptq_ukernel.quantize_blocks ins(%w, %e : memref<8x64xf32>, memref<?x?xf32>) outs(%c, %g, %g : memref<8x64xi8>, memref<8x2xf32>, memref<8x2xf32>) {config = #gptq.config<group_size = 32>} -> f32
  return %ok, %loss : i1, f32
}
