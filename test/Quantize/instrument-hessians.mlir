// gptq-instrument-hessians on a model in import-llama2c's form
// (Inputs/llama2c-tiny.mlir): each of the 15 linear layers gets a zero
// Hessian and a gptq.hessian_accumulate of its [batch, seq, in] input, the
// function returns the Hessians after its logits, in the analysis' order,
// then the sample count, and names the layers in `gptq.hessians`.
// RUN: gptq-opt %S/Inputs/llama2c-tiny.mlir --gptq-instrument-hessians | FileCheck %s

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[TOKENS:.*]]: tensor<?x?xi32>)
// CHECK-SAME: -> (tensor<?x?x6xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x2xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<6x6xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x2xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<6x6xf32>, tensor<4x4xf32>, tensor<i64>)
// CHECK-SAME: attributes {gptq.hessians = ["layers.0.attention.wq", "layers.0.attention.wk", "layers.0.attention.wv", "layers.0.attention.wo", "layers.0.feed_forward.w1", "layers.0.feed_forward.w3", "layers.0.feed_forward.w2", "layers.1.attention.wq", "layers.1.attention.wk", "layers.1.attention.wv", "layers.1.attention.wo", "layers.1.feed_forward.w1", "layers.1.feed_forward.w3", "layers.1.feed_forward.w2", "output"]}

// The first layer: its input is the embedding gather's result.
// CHECK: %[[X0:.*]] = linalg.generic
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[EMPTY:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK: %[[H0:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: %[[N0:.*]] = arith.constant 0 : i64
// CHECK: %[[HQ:.*]], %[[NQ:.*]] = gptq.hessian_accumulate %[[X0]] into %[[H0]] count %[[N0]] : tensor<?x?x4xf32>, tensor<4x4xf32>
// CHECK-NEXT: %{{.*}} = linalg.generic {{.*}} ins(%[[X0]], %{{.*}} : tensor<?x?x4xf32>, tensor<4x4xf32>)
// The second layer reads the same input.
// CHECK: %[[HK:.*]], %{{.*}} = gptq.hessian_accumulate %[[X0]] into %{{.*}} count %{{.*}} : tensor<?x?x4xf32>, tensor<4x4xf32>
// CHECK: %[[HV:.*]], %{{.*}} = gptq.hessian_accumulate %[[X0]] into
// The output projection reads the attention's [batch, seq, 2].
// CHECK: %[[HO:.*]], %{{.*}} = gptq.hessian_accumulate %{{.*}} into %{{.*}} count %{{.*}} : tensor<?x?x2xf32>, tensor<2x2xf32>
// CHECK-COUNT-10: gptq.hessian_accumulate
// CHECK: %[[HOUT:.*]], %{{.*}} = gptq.hessian_accumulate %{{.*}} into %{{.*}} count %{{.*}} : tensor<?x?x4xf32>, tensor<4x4xf32>
// CHECK-NOT: gptq.hessian_accumulate
// CHECK: %[[N:.*]] = tensor.from_elements %[[NQ]] : tensor<i64>
// CHECK-NEXT: return %{{.*}}, %[[HQ]], %[[HK]], %[[HV]], %[[HO]], {{.*}}, %[[HOUT]], %[[N]] : tensor<?x?x6xf32>, tensor<4x4xf32>,

// include and exclude select layers by name (a regular expression searched
// anywhere in the name): here block 1 but its w1 and w3.
// RUN: gptq-opt %S/Inputs/llama2c-tiny.mlir --gptq-instrument-hessians='include=^layers\.1\. exclude=w[13]$' | FileCheck %s --check-prefix=SELECT
// SELECT: func.func @forward({{.*}}) -> (tensor<?x?x6xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x2xf32>, tensor<6x6xf32>, tensor<i64>)
// SELECT-SAME: attributes {gptq.hessians = ["layers.1.attention.wq", "layers.1.attention.wk", "layers.1.attention.wv", "layers.1.attention.wo", "layers.1.feed_forward.w2"]}
// SELECT-COUNT-5: gptq.hessian_accumulate
// SELECT-NOT: gptq.hessian_accumulate

// Another entry: a function with one linear layer among others without.
// RUN: gptq-opt %s --gptq-instrument-hessians="entry=main" | FileCheck %s --check-prefix=MAIN

// MAIN-LABEL: func.func @other(
// MAIN-SAME: -> tensor<3x5xf32> {
// MAIN-NOT: gptq.hessian_accumulate
// MAIN-LABEL: func.func @main(
// MAIN-SAME: %[[V:.*]]: tensor<4xf32>, %[[M:.*]]: tensor<3x4xf32>)
// MAIN-SAME: -> (tensor<5xf32>, tensor<4x4xf32>, tensor<i64>) attributes {gptq.hessians = ["proj"]}
// A vector input is one sample of one token.
// MAIN: %[[E:.*]] = tensor.expand_shape %[[V]] {{\[\[}}0, 1]] output_shape [1, 4] : tensor<4xf32> into tensor<1x4xf32>
// MAIN: %[[H:.*]], %[[N:.*]] = gptq.hessian_accumulate %[[E]] into %{{.*}} count %{{.*}} : tensor<1x4xf32>, tensor<4x4xf32>
// MAIN: linalg.matvec
// MAIN: %[[NT:.*]] = tensor.from_elements %[[N]] : tensor<i64>
// MAIN: return %{{.*}}, %[[H]], %[[NT]] : tensor<5xf32>, tensor<4x4xf32>, tensor<i64>

func.func @other(%x: tensor<3x4xf32>) -> tensor<3x5xf32> {
  %w = arith.constant dense<1.0> : tensor<5x4xf32> loc("elsewhere")
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

func.func @main(%v: tensor<4xf32>, %m: tensor<3x4xf32>) -> tensor<5xf32> {
  %w = arith.constant dense<2.0> : tensor<5x4xf32> loc("proj")
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<5xf32>) -> tensor<5xf32>
  %y = linalg.matvec ins(%w, %v : tensor<5x4xf32>, tensor<4xf32>)
       outs(%acc : tensor<5xf32>) -> tensor<5xf32>
  return %y : tensor<5xf32>
}

// A 4-D input [a, b, tokens, in]: all but the last two dimensions are samples.
// RUN: gptq-opt %s --gptq-instrument-hessians="entry=deep" | FileCheck %s --check-prefix=DEEP
// DEEP-LABEL: func.func @deep(
// DEEP-SAME: %[[X:.*]]: tensor<2x?x3x4xf32>) -> (tensor<2x?x3x5xf32>, tensor<4x4xf32>, tensor<i64>) attributes {gptq.hessians = ["deep.w"]}
// DEEP: %[[C:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2], [3]] : tensor<2x?x3x4xf32> into tensor<?x3x4xf32>
// DEEP: gptq.hessian_accumulate %[[C]] into %{{.*}} count %{{.*}} : tensor<?x3x4xf32>, tensor<4x4xf32>

func.func @deep(%x: tensor<2x?x3x4xf32>) -> tensor<2x?x3x5xf32> {
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c1 : tensor<2x?x3x4xf32>
  %w = arith.constant dense<1.0> : tensor<5x4xf32> loc("deep.w")
  %e = tensor.empty(%n) : tensor<2x?x3x5xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<2x?x3x5xf32>) -> tensor<2x?x3x5xf32>
  %y = linalg.generic {
      indexing_maps = [affine_map<(a, b, s, o, i) -> (a, b, s, i)>,
                       affine_map<(a, b, s, o, i) -> (o, i)>,
                       affine_map<(a, b, s, o, i) -> (a, b, s, o)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<2x?x3x4xf32>, tensor<5x4xf32>) outs(%acc : tensor<2x?x3x5xf32>) {
  ^bb0(%l: f32, %r: f32, %o: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x?x3x5xf32>
  return %y : tensor<2x?x3x5xf32>
}
