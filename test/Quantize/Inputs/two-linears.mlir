// Two linear layers on [batch, seq, dim] activations, as import-llama2c
// writes them: fc1 (5 x 4), a ReLU, fc2 (3 x 5).
#x = affine_map<(b, s, o, i) -> (b, s, i)>
#w = affine_map<(b, s, o, i) -> (o, i)>
#y = affine_map<(b, s, o, i) -> (b, s, o)>
#id = affine_map<(b, s, o) -> (b, s, o)>
func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x3xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %batch = tensor.dim %x, %c0 : tensor<?x?x4xf32>
  %seq = tensor.dim %x, %c1 : tensor<?x?x4xf32>
  %w1 = arith.constant dense<[[0.5, -1.0, 0.25, 2.0], [1.5, 0.0, -0.5, 1.0],
                              [-2.0, 0.75, 1.0, 0.5], [0.1, 0.2, 0.3, 0.4],
                              [1.0, -1.0, 1.0, -1.0]]> : tensor<5x4xf32> loc("fc1")
  %e1 = tensor.empty(%batch, %seq) : tensor<?x?x5xf32>
  %a1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<?x?x5xf32>) -> tensor<?x?x5xf32>
  %y1 = linalg.generic {indexing_maps = [#x, #w, #y],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w1 : tensor<?x?x4xf32>, tensor<5x4xf32>) outs(%a1 : tensor<?x?x5xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x?x5xf32>
  %er = tensor.empty(%batch, %seq) : tensor<?x?x5xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%y1 : tensor<?x?x5xf32>) outs(%er : tensor<?x?x5xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<?x?x5xf32>
  %w2 = arith.constant dense<[[1.0, 0.5, -0.5, 2.0, 0.0], [0.25, -1.0, 1.0, 0.0, 1.5],
                              [-0.75, 0.5, 0.5, 1.0, -1.0]]> : tensor<3x5xf32> loc("fc2")
  %e2 = tensor.empty(%batch, %seq) : tensor<?x?x3xf32>
  %a2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<?x?x3xf32>) -> tensor<?x?x3xf32>
  %y2 = linalg.generic {indexing_maps = [#x, #w, #y],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%relu, %w2 : tensor<?x?x5xf32>, tensor<3x5xf32>) outs(%a2 : tensor<?x?x3xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x?x3xf32>
  return %y2 : tensor<?x?x3xf32>
}
