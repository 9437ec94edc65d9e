// Layer names and the output classifier in other frontends' modules.
// torch-mlir's ONNX importer names each op after its ONNX node
// (`/layers.0/attention/wq/MatMul`): the layer takes the node's scope
// (`layers.0.attention.wq`), whose `layers.<i>.` gives its block; the
// weight's generated initializer name (`onnx::MatMul_301`) and JAX's
// `jit(...)` scopes name nothing. Without `layers.<i>.` names, a layer
// after others whose result the function returns (through a bias and a
// soft cap, not through a residual sum) is the output classifier.
// RUN: gptq-opt %s --split-input-file --gptq-list-linears -o /dev/null 2>&1 | FileCheck %s

#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @torch_jit(%x: tensor<?x4xf32>) -> tensor<?x3xf32> {
    %zero = arith.constant 0.0 : f32
    %c0 = arith.constant 0 : index
    %n = tensor.dim %x, %c0 : tensor<?x4xf32>
    %w = arith.constant dense<0.5> : tensor<4x4xf32> loc("onnx::MatMul_301")
    %e = tensor.empty(%n) : tensor<?x4xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
    // CHECK: remark: loc("/layers.0/attention/wq/MatMul"): linear layer 'layers.0.attention.wq': 4 x 4, block 0, op linalg.matmul, input %arg0, weight arith.constant (stored in x out){{$}}
    %h = linalg.matmul ins(%x, %w : tensor<?x4xf32>, tensor<4x4xf32>) outs(%f : tensor<?x4xf32>) -> tensor<?x4xf32> loc("/layers.0/attention/wq/MatMul")
    %v = arith.constant dense<0.25> : tensor<4x3xf32> loc("onnx::MatMul_302")
    %e2 = tensor.empty(%n) : tensor<?x3xf32>
    %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<?x3xf32>) -> tensor<?x3xf32>
    // CHECK: remark: loc("/output/MatMul"): linear layer 'output': 3 x 4, no block, op linalg.matmul, input %{{[0-9]+}} (linalg.matmul), weight arith.constant (stored in x out) (output classifier){{$}}
    %y = linalg.matmul ins(%h, %v : tensor<?x4xf32>, tensor<4x3xf32>) outs(%f2 : tensor<?x3xf32>) -> tensor<?x3xf32> loc("/output/MatMul")
    return %y : tensor<?x3xf32>
  }
}
// CHECK: remark: 2 linear layers: 1 in 1 block, 1 in no block

// -----

#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
module {
  func.func @main(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x3xf32>) {
    %zero = arith.constant 0.0 : f32
    %w1 = arith.constant dense<0.5> : tensor<4x4xf32> loc("jit(<lambda>)")
    %e = tensor.empty() : tensor<8x4xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
    // CHECK: remark: linear layer 'linear.0' at {{.*}}: 4 x 4, block 0, op linalg.matmul, input %arg0, weight arith.constant (stored in x out){{$}}
    %h = linalg.matmul ins(%x, %w1 : tensor<8x4xf32>, tensor<4x4xf32>) outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
    // A residual sum: not a classifier.
    %w2 = arith.constant dense<0.5> : tensor<4x4xf32>
    // CHECK: remark: linear layer 'linear.1' at {{.*}}: 4 x 4, block 1, op linalg.matmul, input %{{[0-9]+}} (linalg.matmul), weight arith.constant (stored in x out){{$}}
    %g = linalg.matmul ins(%h, %w2 : tensor<8x4xf32>, tensor<4x4xf32>) outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
    %r = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%g, %x : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<8x4xf32>
    // A bias and a soft cap on the way to the result: the classifier.
    %w3 = arith.constant dense<0.25> : tensor<4x3xf32>
    %bias = arith.constant dense<0.1> : tensor<3xf32>
    %e3 = tensor.empty() : tensor<8x3xf32>
    %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x3xf32>) -> tensor<8x3xf32>
    // CHECK: remark: linear layer 'linear.2' at {{.*}}: 3 x 4, block 2, op linalg.matmul, input %{{[0-9]+}} (linalg.generic), weight arith.constant (stored in x out) (output classifier){{$}}
    %l = linalg.matmul ins(%r, %w3 : tensor<8x4xf32>, tensor<4x3xf32>) outs(%f3 : tensor<8x3xf32>) -> tensor<8x3xf32>
    %lb = linalg.generic {indexing_maps = [#map, #row, #map], iterator_types = ["parallel", "parallel"]} ins(%l, %bias : tensor<8x3xf32>, tensor<3xf32>) outs(%e3 : tensor<8x3xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      %t = math.tanh %s : f32
      linalg.yield %t : f32
    } -> tensor<8x3xf32>
    return %r, %lb : tensor<8x4xf32>, tensor<8x3xf32>
  }
}
// CHECK: remark: 3 linear layers in 3 blocks
