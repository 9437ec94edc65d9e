// What is not a linear layer, and a module without any.
// RUN: gptq-opt %s --split-input-file --gptq-list-linears --verify-diagnostics -o /dev/null

// Attention scores and their mixing with the values: contractions of two
// activations. A weight that is a function argument or a mutable global is
// not constant. Only the layer with the constant weight is listed.
// expected-remark @+1 {{1 linear layer in 1 block}}
module {
  ml_program.global private mutable @state(dense<0.0> : tensor<4x4xf32>) : tensor<4x4xf32>
  func.func @forward(%q: tensor<?x4xf32>, %k: tensor<?x4xf32>, %acc: tensor<?x?xf32>, %w: tensor<4x4xf32>, %acc4: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
    %scores = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%q, %k : tensor<?x4xf32>, tensor<?x4xf32>) outs(%acc : tensor<?x?xf32>) -> tensor<?x?xf32>
    %mixed = linalg.matmul ins(%scores, %k : tensor<?x?xf32>, tensor<?x4xf32>) outs(%acc4 : tensor<?x4xf32>) -> tensor<?x4xf32>
    %y = linalg.matmul ins(%mixed, %w : tensor<?x4xf32>, tensor<4x4xf32>) outs(%acc4 : tensor<?x4xf32>) -> tensor<?x4xf32>
    %s = ml_program.global_load @state : tensor<4x4xf32>
    %z = linalg.matmul ins(%mixed, %s : tensor<?x4xf32>, tensor<4x4xf32>) outs(%acc4 : tensor<?x4xf32>) -> tensor<?x4xf32>
    %c = arith.constant dense<2.0> : tensor<4x4xf32>
    // expected-remark @+1 {{linear layer 'linear.0'}}
    %o = linalg.matmul ins(%mixed, %c : tensor<?x4xf32>, tensor<4x4xf32>) outs(%acc4 : tensor<?x4xf32>) -> tensor<?x4xf32>
    return %y, %z, %o : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  }
}

// -----

// Two constants (foldable, no activation), an elementwise product with a
// constant and a contraction of integers are not linear layers either.
// expected-remark @+1 {{no linear layer found: no linalg contraction of an activation with a constant 2-D float weight}}
module {
  func.func @forward(%x: tensor<4x4xf32>, %acc: tensor<4x4xf32>, %xi: tensor<4x4xi32>, %acci: tensor<4x4xi32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xi32>) {
    %a = arith.constant dense<1.0> : tensor<4x4xf32>
    %b = arith.constant dense<2.0> : tensor<4x4xf32>
    %ab = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%acc : tensor<4x4xf32>) -> tensor<4x4xf32>
    %xa = linalg.mul ins(%x, %a : tensor<4x4xf32>, tensor<4x4xf32>) outs(%acc : tensor<4x4xf32>) -> tensor<4x4xf32>
    %ci = arith.constant dense<3> : tensor<4x4xi32>
    %xc = linalg.matmul ins(%xi, %ci : tensor<4x4xi32>, tensor<4x4xi32>) outs(%acci : tensor<4x4xi32>) -> tensor<4x4xi32>
    return %ab, %xa, %xc : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xi32>
  }
}
