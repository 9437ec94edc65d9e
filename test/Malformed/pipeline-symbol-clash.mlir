// RUN: not gptq-opt %s --split-input-file --gptq-lower-to-cpu-pipeline 2>&1 | FileCheck %s

// Valid IR that defines functions with the names of library implementations:
// the lowering refuses the reserved prefix instead of calling them.

// CHECK: :[[@LINE+1]]:1: error: symbol '__gptq_act_order' uses the prefix '__gptq_' reserved for the gptq lowering library
func.func private @__gptq_act_order(%x: i32) -> i32 {
  return %x : i32
}
func.func @f(%h: tensor<4x4xf32>) -> tensor<4xi64> {
  %p = gptq.act_order %h : tensor<4x4xf32> -> tensor<4xi64>
  return %p : tensor<4xi64>
}

// -----

// The same signature as the library's, but public: still refused, where the
// pass would otherwise lower the op into a call of itself.
// CHECK: :[[@LINE+1]]:1: error: symbol '__gptq_act_order' uses the prefix '__gptq_' reserved for the gptq lowering library
func.func @__gptq_act_order(%h: tensor<?x?xf32>) -> tensor<?xi64> {
  %p = gptq.act_order %h : tensor<?x?xf32> -> tensor<?xi64>
  return %p : tensor<?xi64>
}

// -----

// Private, with the library's signature and a body: still the input's, not
// the library's (it was called instead of the library's implementation,
// and gptq.act_order returned what it returns).
// CHECK: :[[@LINE+1]]:1: error: symbol '__gptq_act_order' uses the prefix '__gptq_' reserved for the gptq lowering library
func.func private @__gptq_act_order(%h: tensor<?x?xf32>) -> tensor<?xi64> {
  %c = arith.constant 42 : i64
  %n = arith.constant 0 : index
  %d = tensor.dim %h, %n : tensor<?x?xf32>
  %r = tensor.splat %c[%d] : tensor<?xi64>
  return %r : tensor<?xi64>
}
func.func @f(%h: tensor<4x4xf32>) -> tensor<4xi64> {
  %p = gptq.act_order %h : tensor<4x4xf32> -> tensor<4xi64>
  return %p : tensor<4xi64>
}

// -----

// A declaration with the library's signature: refused, not bound to a
// symbol of the user's at link time.
// CHECK: :[[@LINE+1]]:1: error: symbol '__gptq_act_order' uses the prefix '__gptq_' reserved for the gptq lowering library
func.func private @__gptq_act_order(tensor<?x?xf32>) -> tensor<?xi64>
func.func @f(%h: tensor<4x4xf32>) -> tensor<4xi64> {
  %p = gptq.act_order %h : tensor<4x4xf32> -> tensor<4xi64>
  return %p : tensor<4xi64>
}
