// How layers are named and put into blocks.
// RUN: gptq-opt %s --split-input-file --gptq-list-linears --verify-diagnostics -o /dev/null

// The weight's location name; the contraction's when the weight is shared;
// a repeated name gets a suffix; `layers.<i>.` may follow a prefix, but
// must be a whole name component; layers without it are in no block.
// expected-remark @+1 {{5 linear layers: 2 in 2 blocks, 3 in no block}}
module {
  func.func @f(%x: tensor<2x4xf32>, %a: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
    %w0 = arith.constant dense<1.0> : tensor<4x4xf32> loc("model.layers.3.mlp.down_proj")
    // expected-remark @+1 {{linear layer 'model.layers.3.mlp.down_proj': 4 x 4, block 3,}}
    %y0 = linalg.matmul ins(%x, %w0 : tensor<2x4xf32>, tensor<4x4xf32>) outs(%a : tensor<2x4xf32>) -> tensor<2x4xf32>
    %w1 = arith.constant dense<1.0> : tensor<4x4xf32> loc("layers.12.fc")
    // expected-remark @+1 {{linear layer 'layers.12.fc': 4 x 4, block 12,}}
    %y1 = linalg.matmul ins(%x, %w1 : tensor<2x4xf32>, tensor<4x4xf32>) outs(%a : tensor<2x4xf32>) -> tensor<2x4xf32>
    %w2 = arith.constant dense<1.0> : tensor<4x4xf32> loc("sublayers.2.fc")
    // expected-remark @+1 {{linear layer 'sublayers.2.fc': 4 x 4, no block,}}
    %y2 = linalg.matmul ins(%x, %w2 : tensor<2x4xf32>, tensor<4x4xf32>) outs(%a : tensor<2x4xf32>) -> tensor<2x4xf32>
    %tied = arith.constant dense<1.0> : tensor<4x4xf32> loc("embed")
    // A name location carries no line: these remarks come at an unknown one.
    // expected-remark @unknown {{linear layer 'head': 4 x 4, no block, op linalg.matmul, input %arg0, weight arith.constant (stored in x out) (also used elsewhere)}}
    %y3 = linalg.matmul ins(%x, %tied : tensor<2x4xf32>, tensor<4x4xf32>) outs(%a : tensor<2x4xf32>) -> tensor<2x4xf32> loc("head")
    // expected-remark @unknown {{linear layer 'head#1': 4 x 4, no block,}}
    %y4 = linalg.matmul ins(%x, %tied : tensor<2x4xf32>, tensor<4x4xf32>) outs(%a : tensor<2x4xf32>) -> tensor<2x4xf32> loc("head")
    return %y0, %y1, %y2, %y3, %y4 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  }
}
