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
