// The model passes' entry, when entry= is not given: @forward when the
// module has it, else the module's only public function with a body (as
// torch-mlir names it @torch_jit, JAX and IREE @main); otherwise an error
// that lists the functions.
// RUN: not gptq-opt %s --split-input-file --gptq-instrument-hessians 2>&1 | FileCheck %s
// RUN: not gptq-opt %s --split-input-file --gptq-outline-calibration-stages 2>&1 | FileCheck %s --check-prefix=OUTLINE

// CHECK-DAG: error: gptq-instrument-hessians: which function is the entry?
// CHECK-DAG: func.func @torch_jit({{.*}}) -> (tensor<3x5xf32>, tensor<4x4xf32>, tensor<i64>) attributes {gptq.hessians = [
// OUTLINE-DAG: func.func @torch_jit
// OUTLINE-DAG: module @stage_1_hessians
func.func private @helper(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  return %x : tensor<3x4xf32>
}
func.func @torch_jit(%x: tensor<3x4xf32>) -> tensor<3x5xf32> {
  %w = arith.constant dense<1.0> : tensor<4x5xf32>
  %h = func.call @helper(%x) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x5xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<3x5xf32>) -> tensor<3x5xf32>
  %y = linalg.matmul ins(%h, %w : tensor<3x4xf32>, tensor<4x5xf32>) outs(%acc : tensor<3x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// -----

// OUTLINE-DAG: error: gptq-outline-calibration-stages: which function is the entry? The module has 2 public functions with a body and no @forward (@main, @other): set the entry with entry=NAME
func.func @main(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  return %x : tensor<3x4xf32>
}
func.func @other(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  return %x : tensor<3x4xf32>
}

// -----

// OUTLINE-DAG: error: gptq-outline-calibration-stages: no public function with a body in the module to take as the entry (functions with a body: @inner; set the entry with entry=NAME)
func.func private @inner(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  return %x : tensor<3x4xf32>
}
