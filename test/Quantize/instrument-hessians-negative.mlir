// gptq-instrument-hessians refuses what it cannot instrument with one error
// and a pass failure: gptq-opt exits non-zero.

// No entry function.
// RUN: not gptq-opt %s --split-input-file --gptq-instrument-hessians="entry=missing" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: gptq-instrument-hessians: no function '@missing' in the module (functions with a body: @forward; set the entry with entry=NAME)

// Selection: a pattern that is not a regular expression, or one that
// leaves no layer.
// RUN: not gptq-opt %S/Inputs/llama2c-tiny.mlir --gptq-instrument-hessians='include=(' -o /dev/null 2>&1 | FileCheck %s --check-prefix=REGEX
// REGEX: error: gptq-instrument-hessians: include='(' is not a valid regular expression: parentheses not balanced
// RUN: not gptq-opt %S/Inputs/llama2c-tiny.mlir --gptq-instrument-hessians='exclude=.' -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: llama2c-tiny.mlir:19:3: error: gptq-instrument-hessians: none of the 15 linear layers of '@forward' is selected by include='' and exclude='.'

// The rest, one case per split; each error is one line (no op dump).
// RUN: not gptq-opt %s --split-input-file --gptq-instrument-hessians -o /dev/null 2>&1 | FileCheck %s --implicit-check-not="see current operation"

// CHECK: instrument-hessians-negative.mlir:[[@LINE+1]]:{{[0-9]+}}: error: gptq-instrument-hessians: no linear layer in '@forward': no linalg contraction of an activation with a constant 2-D float weight
func.func @forward(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x5xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<3x5xf32>) -> tensor<3x5xf32>
  %y = linalg.matmul ins(%a, %b : tensor<3x4xf32>, tensor<4x5xf32>)
       outs(%acc : tensor<3x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// -----

// CHECK: error: gptq-instrument-hessians: '@forward' is a declaration, expected a function with a body
func.func private @forward(%a: tensor<3x4xf32>) -> tensor<3x5xf32>

// -----

// CHECK: error: gptq-instrument-hessians: '@forward' is used in the module; its users would not match its new results
func.func @forward(%x: tensor<3x4xf32>) -> tensor<3x5xf32> {
  %w = arith.constant dense<1.0> : tensor<5x4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x5xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<3x5xf32>) -> tensor<3x5xf32>
  %y = linalg.matmul indexing_maps = [
         affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
         affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<3x4xf32>, tensor<5x4xf32>)
       outs(%acc : tensor<3x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}
func.func @caller(%x: tensor<3x4xf32>) -> tensor<3x5xf32> {
  %y = func.call @forward(%x) : (tensor<3x4xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// -----

// CHECK: error: gptq-instrument-hessians: '@forward' already has 'gptq.hessians' (instrumented twice)
func.func @forward(%x: tensor<3x4xf32>) -> tensor<3x5xf32> attributes {gptq.hessians = []} {
  %w = arith.constant dense<1.0> : tensor<5x4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x5xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<3x5xf32>) -> tensor<3x5xf32>
  %y = linalg.matmul indexing_maps = [
         affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
         affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<3x4xf32>, tensor<5x4xf32>)
       outs(%acc : tensor<3x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// -----

// The activation read transposed ([in, tokens]).
// CHECK: error: gptq-instrument-hessians: linear layer 'wt': its input is not read with the reduction dimension last
func.func @forward(%x: tensor<4x3xf32>) -> tensor<3x5xf32> {
  %w = arith.constant dense<1.0> : tensor<5x4xf32> loc("wt")
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x5xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<3x5xf32>) -> tensor<3x5xf32>
  %y = linalg.matmul indexing_maps = [
         affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (n, k)>,
         affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %w : tensor<4x3xf32>, tensor<5x4xf32>)
       outs(%acc : tensor<3x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// -----

// Inputs with different sample counts: one count cannot describe both.
// CHECK: error: gptq-instrument-hessians: linear layer 'second' has an input of one sample ([tokens, in]) but 'first' has 2 samples; one sample count is returned, so they must agree
func.func @forward(%x: tensor<2x3x4xf32>) -> tensor<6x5xf32> {
  %w1 = arith.constant dense<1.0> : tensor<4x4xf32> loc("first")
  %w2 = arith.constant dense<1.0> : tensor<5x4xf32> loc("second")
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2x3x4xf32>
  %a1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %y1 = linalg.generic {
      indexing_maps = [affine_map<(b, s, o, i) -> (b, s, i)>,
                       affine_map<(b, s, o, i) -> (o, i)>,
                       affine_map<(b, s, o, i) -> (b, s, o)>],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w1 : tensor<2x3x4xf32>, tensor<4x4xf32>) outs(%a1 : tensor<2x3x4xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3x4xf32>
  %flat = tensor.collapse_shape %y1 [[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
  %e2 = tensor.empty() : tensor<6x5xf32>
  %a2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<6x5xf32>) -> tensor<6x5xf32>
  %y2 = linalg.matmul indexing_maps = [
         affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
         affine_map<(m, n, k) -> (m, n)>]
       ins(%flat, %w2 : tensor<6x4xf32>, tensor<5x4xf32>)
       outs(%a2 : tensor<6x5xf32>) -> tensor<6x5xf32>
  return %y2 : tensor<6x5xf32>
}

// -----

// A layer inside a loop: its Hessian could not be returned as one value.
// CHECK: error: gptq-instrument-hessians: linear layer 'looped' is inside a nested region of '@forward', expected it in the function's body
func.func @forward(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%cur = %x) -> tensor<3x4xf32> {
    %w = arith.constant dense<1.0> : tensor<4x4xf32> loc("looped")
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<3x4xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
    %y = linalg.matmul indexing_maps = [
           affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
           affine_map<(m, n, k) -> (m, n)>]
         ins(%cur, %w : tensor<3x4xf32>, tensor<4x4xf32>)
         outs(%acc : tensor<3x4xf32>) -> tensor<3x4xf32>
    scf.yield %y : tensor<3x4xf32>
  }
  return %r : tensor<3x4xf32>
}
