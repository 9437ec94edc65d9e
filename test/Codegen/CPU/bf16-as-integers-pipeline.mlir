// RUN: gptq-opt %s --gptq-lower-to-cpu-pipeline -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: not grep -E 'vector<[0-9x]+xbf16>' %t.mlir

// The CPU pipeline leaves no bfloat16 vector in the LLVM dialect: a
// product with a bfloat16 weight is a call of the microkernel library,
// which takes the stored weight as it is (its own bfloat16 loads move as
// i16: test/UKernels/build.test), so that LLVM never widens and narrows
// bfloat16 lanes through __truncsfbf2 (CPUs without AVX-512 BF16). A
// product of three rows by a weight read transposed (a linear layer at a
// decode step's shape) and a plain product both call it.
// CHECK-COUNT-2: llvm.call @gptq_uk_matmul_{{[a-z0-9_]+}}(
func.func @f(%x: tensor<3x20xf32>, %w: tensor<20x37xbf16>) -> tensor<3x37xf32> {
  %e = tensor.empty() : tensor<20x37xf32>
  %wf = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<20x37xbf16>) outs(%e : tensor<20x37xf32>) {
  ^bb0(%a: bf16, %b: f32):
    %c = arith.extf %a : bf16 to f32
    linalg.yield %c : f32
  } -> tensor<20x37xf32>
  %z = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<3x37xf32>
  %of = linalg.fill ins(%z : f32) outs(%o : tensor<3x37xf32>) -> tensor<3x37xf32>
  %r = linalg.matmul ins(%x, %wf : tensor<3x20xf32>, tensor<20x37xf32>) outs(%of : tensor<3x37xf32>) -> tensor<3x37xf32>
  return %r : tensor<3x37xf32>
}

#x = affine_map<(b, s, n, k) -> (b, s, k)>
#w = affine_map<(b, s, n, k) -> (n, k)>
#o = affine_map<(b, s, n, k) -> (b, s, n)>
func.func @linear(%x: tensor<1x3x20xf32>, %wh: tensor<37x20xbf16>) -> tensor<1x3x37xf32> {
  %z = arith.constant 0.0 : f32
  %w = arith.extf %wh : tensor<37x20xbf16> to tensor<37x20xf32>
  %e = tensor.empty() : tensor<1x3x37xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x3x37xf32>) -> tensor<1x3x37xf32>
  %r = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<1x3x20xf32>, tensor<37x20xf32>) outs(%f : tensor<1x3x37xf32>) {
  ^bb0(%a: f32, %bb: f32, %acc: f32):
    %p = arith.mulf %a, %bb : f32
    %q = arith.addf %acc, %p : f32
    linalg.yield %q : f32
  } -> tensor<1x3x37xf32>
  return %r : tensor<1x3x37xf32>
}
