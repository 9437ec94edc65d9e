// RUN: gptq-opt %s --split-input-file --gptq-strip-to-upstream --verify-diagnostics --allow-unregistered-dialect | FileCheck %s

// The gptq attributes go; the rest stays.
// CHECK-LABEL: module attributes {other.attr = 1 : i64} {
// CHECK: func.func @f(%{{.*}}: tensor<4xf32>) -> tensor<4xf32> attributes {other} {
module attributes {gptq.signature = "f", other.attr = 1 : i64} {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {gptq.library, other} {
    return %x : tensor<4xf32>
  }
}

// -----

func.func @f(%x: tensor<4x4xf32>) -> tensor<4xi64> {
  // expected-error @below {{'gptq.act_order' has no upstream form (gptq-to-quant-types rewrites only dequantizations of constant weights)}}
  %p = gptq.act_order %x : tensor<4x4xf32> -> tensor<4xi64>
  return %p : tensor<4xi64>
}

// -----

func.func @f() -> i1 {
  // expected-error @below {{an attribute of 'test.op' is from the gptq dialect}}
  %r = "test.op"() {config = #gptq.config<group_size = 8>} : () -> i1
  return %r : i1
}

