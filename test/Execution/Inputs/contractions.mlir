// Contractions in the layouts models produce, for the matrix kernel's
// numerics test (contractions.test): sizes are dynamic and not multiples of
// the kernel's 6 x 64 tiles.
#x = affine_map<(b, s, n, k) -> (b, s, k)>
#w = affine_map<(b, s, n, k) -> (n, k)>
#o = affine_map<(b, s, n, k) -> (b, s, n)>
// y[b, s, n] = sum_k x[b, s, k] W[n, k]
func.func @linear(%x: tensor<?x?x?xf32>, %w: tensor<?x?xf32>) -> tensor<?x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %b = tensor.dim %x, %c0 : tensor<?x?x?xf32>
  %s = tensor.dim %x, %c1 : tensor<?x?x?xf32>
  %n = tensor.dim %w, %c0 : tensor<?x?xf32>
  %e = tensor.empty(%b, %s, %n) : tensor<?x?x?xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %r = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<?x?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?x?xf32>) {
  ^bb0(%a: f32, %bb: f32, %acc: f32):
    %p = arith.mulf %a, %bb : f32
    %q = arith.addf %acc, %p : f32
    linalg.yield %q : f32
  } -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

#p = affine_map<(b, s, h, d, t) -> (b, h, s, t)>
#v = affine_map<(b, s, h, d, t) -> (b, t, h, d)>
#out = affine_map<(b, s, h, d, t) -> (b, s, h, d)>
// out[b, s, h, d] = init[b, s, h, d] + sum_t p[b, h, s, t] v[b, t, h, d]
func.func @mix(%p: tensor<?x?x?x?xf32>, %v: tensor<?x?x?x?xf32>, %init: tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32> {
  %r = linalg.generic {indexing_maps = [#p, #v, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>) outs(%init : tensor<?x?x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x?x?x?xf32>
  return %r : tensor<?x?x?x?xf32>
}

// c + at^T b
func.func @matmul_at(%at: tensor<?x?xf32>, %b: tensor<?x?xf32>, %c: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%at, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%c : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// A linear layer on a quantized weight, as the model rewrite writes it:
// y[b, s, n] = sum_k x[b, s, k] dequantize(unpack(words))[n, k].
func.func @q3(%x: tensor<?x?x?xf32>, %words: tensor<?x?xi32>, %s: tensor<?x?xf32>, %z: tensor<?x?xf32>, %g: tensor<?xi32>) -> tensor<?x?x?xf32> {
  %c2 = arith.constant 2 : index
  %k = tensor.dim %x, %c2 : tensor<?x?x?xf32>
  %codes = gptq.unpack %words columns %k bits 3 : tensor<?x?xi32> -> tensor<?x?xi8>
  %w = gptq.dequantize %codes, %s, %z, %g : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32> -> tensor<?x?xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %b = tensor.dim %x, %c0 : tensor<?x?x?xf32>
  %sq = tensor.dim %x, %c1 : tensor<?x?x?xf32>
  %n = tensor.dim %w, %c0 : tensor<?x?xf32>
  %e = tensor.empty(%b, %sq, %n) : tensor<?x?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %r = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<?x?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?x?xf32>) {
  ^bb0(%a: f32, %bb: f32, %acc: f32):
    %p = arith.mulf %a, %bb : f32
    %q = arith.addf %acc, %p : f32
    linalg.yield %q : f32
  } -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

func.func @q8(%x: tensor<?x?x?xf32>, %words: tensor<?x?xi32>, %s: tensor<?x?xf32>, %z: tensor<?x?xf32>, %g: tensor<?xi32>) -> tensor<?x?x?xf32> {
  %c2 = arith.constant 2 : index
  %k = tensor.dim %x, %c2 : tensor<?x?x?xf32>
  %codes = gptq.unpack %words columns %k bits 8 : tensor<?x?xi32> -> tensor<?x?xi8>
  %w = gptq.dequantize %codes, %s, %z, %g : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32> -> tensor<?x?xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %b = tensor.dim %x, %c0 : tensor<?x?x?xf32>
  %sq = tensor.dim %x, %c1 : tensor<?x?x?xf32>
  %n = tensor.dim %w, %c0 : tensor<?x?xf32>
  %e = tensor.empty(%b, %sq, %n) : tensor<?x?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %r = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<?x?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?x?xf32>) {
  ^bb0(%a: f32, %bb: f32, %acc: f32):
    %p = arith.mulf %a, %bb : f32
    %q = arith.addf %acc, %p : f32
    linalg.yield %q : f32
  } -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}

func.func @q4(%x: tensor<?x?x?xf32>, %words: tensor<?x?xi32>, %s: tensor<?x?xf32>, %z: tensor<?x?xf32>, %g: tensor<?xi32>) -> tensor<?x?x?xf32> {
  %c2 = arith.constant 2 : index
  %k = tensor.dim %x, %c2 : tensor<?x?x?xf32>
  %codes = gptq.unpack %words columns %k bits 4 : tensor<?x?xi32> -> tensor<?x?xi8>
  %w = gptq.dequantize %codes, %s, %z, %g : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32> -> tensor<?x?xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %b = tensor.dim %x, %c0 : tensor<?x?x?xf32>
  %sq = tensor.dim %x, %c1 : tensor<?x?x?xf32>
  %n = tensor.dim %w, %c0 : tensor<?x?xf32>
  %e = tensor.empty(%b, %sq, %n) : tensor<?x?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %r = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : tensor<?x?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?x?xf32>) {
  ^bb0(%a: f32, %bb: f32, %acc: f32):
    %p = arith.mulf %a, %bb : f32
    %q = arith.addf %acc, %p : f32
    linalg.yield %q : f32
  } -> tensor<?x?x?xf32>
  return %r : tensor<?x?x?xf32>
}
