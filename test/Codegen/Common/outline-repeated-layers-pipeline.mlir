// RUN: gptq-opt %s --gptq-lower-to-cpu-pipeline | FileCheck %s
// RUN: gptq-opt %s --pass-pipeline="builtin.module(gptq-lower-to-cpu-pipeline{outline-layers=false})" | FileCheck %s --check-prefix=INLINE

// The CPU pipeline compiles two layers of 16 ops as one function called
// twice (gptq-outline-repeated-layers, second in the pipeline); with
// outline-layers=false both stay inline.
// CHECK-LABEL: llvm.func @f(
// CHECK-COUNT-2: llvm.call @f_layer(
// CHECK: llvm.func @f_layer(
// INLINE-LABEL: llvm.func @f(
// INLINE-NOT: _layer
// INLINE: llvm.return
// INLINE-NOT: _layer
func.func @f(%x: tensor<64xf32>, %w0: tensor<64xf32>, %w1: tensor<64xf32>) -> tensor<64xf32> {
  %a0_0 = arith.mulf %x, %w0 : tensor<64xf32>
  %a0_1 = math.tanh %a0_0 : tensor<64xf32>
  %a0_2 = math.tanh %a0_1 : tensor<64xf32>
  %a0_3 = math.tanh %a0_2 : tensor<64xf32>
  %a0_4 = math.tanh %a0_3 : tensor<64xf32>
  %a0_5 = math.tanh %a0_4 : tensor<64xf32>
  %a0_6 = math.tanh %a0_5 : tensor<64xf32>
  %a0_7 = math.tanh %a0_6 : tensor<64xf32>
  %a0_8 = math.tanh %a0_7 : tensor<64xf32>
  %a0_9 = math.tanh %a0_8 : tensor<64xf32>
  %a0_10 = math.tanh %a0_9 : tensor<64xf32>
  %a0_11 = math.tanh %a0_10 : tensor<64xf32>
  %a0_12 = math.tanh %a0_11 : tensor<64xf32>
  %a0_13 = math.tanh %a0_12 : tensor<64xf32>
  %a0_14 = math.tanh %a0_13 : tensor<64xf32>
  %a0_15 = math.tanh %a0_14 : tensor<64xf32>
  %a1_0 = arith.mulf %a0_15, %w1 : tensor<64xf32>
  %a1_1 = math.tanh %a1_0 : tensor<64xf32>
  %a1_2 = math.tanh %a1_1 : tensor<64xf32>
  %a1_3 = math.tanh %a1_2 : tensor<64xf32>
  %a1_4 = math.tanh %a1_3 : tensor<64xf32>
  %a1_5 = math.tanh %a1_4 : tensor<64xf32>
  %a1_6 = math.tanh %a1_5 : tensor<64xf32>
  %a1_7 = math.tanh %a1_6 : tensor<64xf32>
  %a1_8 = math.tanh %a1_7 : tensor<64xf32>
  %a1_9 = math.tanh %a1_8 : tensor<64xf32>
  %a1_10 = math.tanh %a1_9 : tensor<64xf32>
  %a1_11 = math.tanh %a1_10 : tensor<64xf32>
  %a1_12 = math.tanh %a1_11 : tensor<64xf32>
  %a1_13 = math.tanh %a1_12 : tensor<64xf32>
  %a1_14 = math.tanh %a1_13 : tensor<64xf32>
  %a1_15 = math.tanh %a1_14 : tensor<64xf32>
  return %a1_15 : tensor<64xf32>
}
