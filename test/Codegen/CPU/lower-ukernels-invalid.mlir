// RUN: gptq-opt %s --gptq-lower-ukernels="cpu-isa=avx2" --split-input-file --verify-diagnostics

// A symbol of the library's that the module defines is an error.
// expected-error @+1 {{symbol 'gptq_uk_matmul_avx2_tables' is the microkernel library's; it must not be defined here}}
func.func @gptq_uk_matmul_avx2_tables() {
  return
}
func.func @clash(%a: memref<1x8x64xf32>, %b: memref<1x32x64xf32>, %c: memref<1x8x32xf32>) {
  gptq_ukernel.matmul ins(%a, %b : memref<1x8x64xf32>, memref<1x32x64xf32>) outs(%c : memref<1x8x32xf32>) {transpose_rhs, zero_init}
  return
}

// -----

// The op on tensors: bufferization comes first.
func.func @tensors(%a: tensor<1x8x64xf32>, %b: tensor<1x32x64xf32>, %c: tensor<1x8x32xf32>) -> tensor<1x8x32xf32> {
  // expected-error @+1 {{'gptq_ukernel.matmul' op is still on tensors: bufferize before gptq-lower-ukernels}}
  %r = gptq_ukernel.matmul ins(%a, %b : tensor<1x8x64xf32>, tensor<1x32x64xf32>) outs(%c : tensor<1x8x32xf32>) {transpose_rhs, zero_init} -> tensor<1x8x32xf32>
  return %r : tensor<1x8x32xf32>
}
