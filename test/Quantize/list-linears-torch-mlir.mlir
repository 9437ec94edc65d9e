// Linear layers in the forms torch-mlir's linalg backend emits for
// nn.Linear (written by hand, small). Each case is its own module; the
// layers have no location names, so they are named linear.<index> and their
// blocks follow the data flow.
// RUN: gptq-opt %s --split-input-file --gptq-list-linears --verify-diagnostics -o /dev/null

// A 3-D input: the weight transposed by linalg.transpose, broadcast over the
// batch by a linalg.generic, then linalg.batch_matmul; dense_resource.
// expected-remark @+1 {{1 linear layer in 1 block}}
module {
  func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x2xf32> {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %b = tensor.dim %x, %c0 : tensor<?x?x4xf32>
    %w = arith.constant dense_resource<fc> : tensor<2x4xf32>
    %e0 = tensor.empty() : tensor<4x2xf32>
    %wt = linalg.transpose ins(%w : tensor<2x4xf32>) outs(%e0 : tensor<4x2xf32>) permutation = [1, 0]
    %e1 = tensor.empty(%b) : tensor<?x4x2xf32>
    %wb = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%wt : tensor<4x2xf32>) outs(%e1 : tensor<?x4x2xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<?x4x2xf32>
    %c1 = arith.constant 1 : index
    %s = tensor.dim %x, %c1 : tensor<?x?x4xf32>
    %e2 = tensor.empty(%b, %s) : tensor<?x?x2xf32>
    %acc = linalg.fill ins(%zero : f32) outs(%e2 : tensor<?x?x2xf32>) -> tensor<?x?x2xf32>
    // expected-remark-re @+1 {{linear layer 'linear.0' at loc({{.*}}list-linears-torch-mlir.mlir":{{[0-9]+}}:{{[0-9]+}}): 2 x 4, block 0, op linalg.batch_matmul, input %arg0, weight arith.constant{{$}}}}
    %y = linalg.batch_matmul ins(%x, %wb : tensor<?x?x4xf32>, tensor<?x4x2xf32>) outs(%acc : tensor<?x?x2xf32>) -> tensor<?x?x2xf32>
    return %y : tensor<?x?x2xf32>
  }
}
{-#
  dialect_resources: {
    builtin: {
      fc: "0x040000000000803f000000400000404000008040000080bf000000c0000040c0000080c0"
    }
  }
#-}

// -----

// What the remark says: the nn.Linear shape (out x in) of a weight stored
// out x in, read through transposing indexing maps of linalg.matmul.
// expected-remark @+1 {{1 linear layer in 1 block}}
module {
  func.func @forward(%x: tensor<?x4xf32>, %acc: tensor<?x3xf32>) -> tensor<?x3xf32> {
    %w = arith.constant dense<1.0> : tensor<3x4xf32>
    // expected-remark-re @+1 {{linear layer 'linear.0' at loc({{.*}}list-linears-torch-mlir.mlir":{{[0-9]+}}:{{[0-9]+}}): 3 x 4, block 0, op linalg.matmul, input %arg0, weight arith.constant{{$}}}}
    %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, %w : tensor<?x4xf32>, tensor<3x4xf32>) outs(%acc : tensor<?x3xf32>) -> tensor<?x3xf32>
    return %y : tensor<?x3xf32>
  }
}

// -----

// A plain linalg.matmul of the transpose of an ml_program.global: the
// layer is named after the global.
// expected-remark @+1 {{1 linear layer in 1 block}}
module {
  ml_program.global private @fc1_weight(dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>) : tensor<3x2xf32>
  func.func @forward(%x: tensor<?x2xf32>, %acc: tensor<?x3xf32>) -> tensor<?x3xf32> {
    %w = ml_program.global_load_const @fc1_weight : tensor<3x2xf32>
    %e = tensor.empty() : tensor<2x3xf32>
    %wt = linalg.transpose ins(%w : tensor<3x2xf32>) outs(%e : tensor<2x3xf32>) permutation = [1, 0]
    // expected-remark @+1 {{linear layer 'fc1_weight': 3 x 2, block 0, op linalg.matmul, input %arg0, weight @fc1_weight}}
    %y = linalg.matmul ins(%x, %wt : tensor<?x2xf32>, tensor<2x3xf32>) outs(%acc : tensor<?x3xf32>) -> tensor<?x3xf32>
    return %y : tensor<?x3xf32>
  }
}

// -----

// A single token: linalg.matvec of the weight with the activation vector.
// expected-remark @+1 {{1 linear layer in 1 block}}
module {
  func.func @forward(%x: tensor<4xf32>, %acc: tensor<3xf32>) -> tensor<3xf32> {
    %w = arith.constant dense<0.5> : tensor<3x4xf32>
    // expected-remark-re @+1 {{linear layer 'linear.0' at loc({{.*}}list-linears-torch-mlir.mlir":{{[0-9]+}}:{{[0-9]+}}): 3 x 4, block 0, op linalg.matvec, input %arg0, weight arith.constant{{$}}}}
    %y = linalg.matvec ins(%w, %x : tensor<3x4xf32>, tensor<4xf32>) outs(%acc : tensor<3xf32>) -> tensor<3xf32>
    return %y : tensor<3xf32>
  }
}

// -----

// A weight stored in x out (an ml_program.global) read by a contraction
// linalg.generic; a linalg.broadcast of a dense_resource weight feeding a
// batch_matmul. Two layers in sequence: the second one's block is 1.
// expected-remark @+1 {{2 linear layers in 2 blocks}}
module {
  ml_program.global private @proj(dense<1.0> : tensor<4x3xf32>) : tensor<4x3xf32>
  func.func @forward(%x: tensor<?x4xf32>, %acc: tensor<?x3xf32>, %acc2: tensor<2x?x2xf32>) -> tensor<2x?x2xf32> {
    %w = ml_program.global_load_const @proj : tensor<4x3xf32>
    // expected-remark @+1 {{linear layer 'proj': 3 x 4, block 0, op linalg.generic, input %arg0, weight @proj (stored in x out)}}
    %y = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<?x4xf32>, tensor<4x3xf32>) outs(%acc : tensor<?x3xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<?x3xf32>
    %c = arith.constant 1 : index
    %y2 = tensor.expand_shape %y [[0, 1], [2]] output_shape [2, %c, 3] : tensor<?x3xf32> into tensor<2x?x3xf32>
    %v = arith.constant dense_resource<out_proj> : tensor<3x2xf32>
    %e = tensor.empty() : tensor<2x3x2xf32>
    %vb = linalg.broadcast ins(%v : tensor<3x2xf32>) outs(%e : tensor<2x3x2xf32>) dimensions = [0]
    // expected-remark-re @+1 {{linear layer 'linear.1' at loc({{.*}}list-linears-torch-mlir.mlir":{{[0-9]+}}:{{[0-9]+}}): 2 x 3, block 1, op linalg.batch_matmul, input %expanded (tensor.expand_shape), weight arith.constant (stored in x out) (output classifier){{$}}}}
    %z = linalg.batch_matmul ins(%y2, %vb : tensor<2x?x3xf32>, tensor<2x3x2xf32>) outs(%acc2 : tensor<2x?x2xf32>) -> tensor<2x?x2xf32>
    return %z : tensor<2x?x2xf32>
  }
}
{-#
  dialect_resources: {
    builtin: {
      out_proj: "0x040000000000803f000000400000404000008040000080bf000000c0"
    }
  }
#-}

// -----

// torch-mlir's ONNX path (import-torch): the exporter stores the weight
// already transposed (in x out), so there is no linalg.transpose; the
// broadcasting linalg.generic and linalg.batch_matmul remain.
#bcast = affine_map<(d0, d1, d2) -> (d1, d2)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// expected-remark @+1 {{1 linear layer in 1 block}}
module {
  func.func @forward(%x: tensor<?x?x4xf32>, %acc: tensor<?x?x3xf32>) -> tensor<?x?x3xf32> {
    %c0 = arith.constant 0 : index
    %b = tensor.dim %x, %c0 : tensor<?x?x4xf32>
    %w = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [1.0, 2.0, 3.0]]> : tensor<4x3xf32>
    %e = tensor.empty(%b) : tensor<?x4x3xf32>
    %wb = linalg.generic {indexing_maps = [#bcast, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%w : tensor<4x3xf32>) outs(%e : tensor<?x4x3xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<?x4x3xf32>
    // expected-remark-re @+1 {{linear layer 'linear.0' at loc({{.*}}): 3 x 4, block 0, op linalg.batch_matmul, input %arg0, weight arith.constant (stored in x out){{$}}}}
    %y = linalg.batch_matmul ins(%x, %wb : tensor<?x?x4xf32>, tensor<?x4x3xf32>) outs(%acc : tensor<?x?x3xf32>) -> tensor<?x?x3xf32>
    return %y : tensor<?x?x3xf32>
  }
}
