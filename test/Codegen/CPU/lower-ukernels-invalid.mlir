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

// -----

func.func @layer_tensors(%h: tensor<4x4xf32>, %d: f32, %e: tensor<4x4xf32>) -> (tensor<4x4xf32>, i1) {
  // expected-error @+1 {{'gptq_ukernel.damped_cholesky' op is still on tensors: bufferize before gptq-lower-ukernels}}
  %u, %ok = gptq_ukernel.damped_cholesky ins(%h : tensor<4x4xf32>) percdamp(%d) outs(%e : tensor<4x4xf32>) {block = 128 : i64} -> tensor<4x4xf32>, i1
  return %u, %ok : tensor<4x4xf32>, i1
}

// -----

// The library's symbols of the layer kernels are reserved too.
// expected-error @+1 {{symbol 'gptq_uk_quantize_blocks_avx2' is the microkernel library's; it must not be defined here}}
func.func @gptq_uk_quantize_blocks_avx2() {
  return
}
func.func @layer_clash(%w: memref<8x64xf32>, %u: memref<64x64xf32>, %c: memref<8x64xi8>, %s: memref<8x2xf32>) -> f32 {
  %l = gptq_ukernel.quantize_blocks ins(%w, %u : memref<8x64xf32>, memref<64x64xf32>) outs(%c, %s, %s : memref<8x64xi8>, memref<8x2xf32>, memref<8x2xf32>) {config = #gptq.config<group_size = 32>} -> f32
  return %l : f32
}
