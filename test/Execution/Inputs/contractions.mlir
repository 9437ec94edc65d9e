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

func.func @q2(%x: tensor<?x?x?xf32>, %words: tensor<?x?xi32>, %s: tensor<?x?xf32>, %z: tensor<?x?xf32>, %g: tensor<?xi32>) -> tensor<?x?x?xf32> {
  %c2 = arith.constant 2 : index
  %k = tensor.dim %x, %c2 : tensor<?x?x?xf32>
  %codes = gptq.unpack %words columns %k bits 2 : tensor<?x?xi32> -> tensor<?x?xi8>
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

func.func @q5(%x: tensor<?x?x?xf32>, %words: tensor<?x?xi32>, %s: tensor<?x?xf32>, %z: tensor<?x?xf32>, %g: tensor<?xi32>) -> tensor<?x?x?xf32> {
  %c2 = arith.constant 2 : index
  %k = tensor.dim %x, %c2 : tensor<?x?x?xf32>
  %codes = gptq.unpack %words columns %k bits 5 : tensor<?x?xi32> -> tensor<?x?xi8>
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

func.func @q6(%x: tensor<?x?x?xf32>, %words: tensor<?x?xi32>, %s: tensor<?x?xf32>, %z: tensor<?x?xf32>, %g: tensor<?xi32>) -> tensor<?x?x?xf32> {
  %c2 = arith.constant 2 : index
  %k = tensor.dim %x, %c2 : tensor<?x?x?xf32>
  %codes = gptq.unpack %words columns %k bits 6 : tensor<?x?xi32> -> tensor<?x?xi8>
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

func.func @q7(%x: tensor<?x?x?xf32>, %words: tensor<?x?xi32>, %s: tensor<?x?xf32>, %z: tensor<?x?xf32>, %g: tensor<?xi32>) -> tensor<?x?x?xf32> {
  %c2 = arith.constant 2 : index
  %k = tensor.dim %x, %c2 : tensor<?x?x?xf32>
  %codes = gptq.unpack %words columns %k bits 7 : tensor<?x?xi32> -> tensor<?x?xi8>
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

// Causal attention as the importers write it: scores, a row maximum and
// exponentials that keep key t <= query s, their sum, the quotient, and the
// mixing of values. q, k, v: [batch, seq, heads, head size].
#aq = affine_map<(b, h, s, t, d) -> (b, s, h, d)>
#ak = affine_map<(b, h, s, t, d) -> (b, t, h, d)>
#as = affine_map<(b, h, s, t, d) -> (b, h, s, t)>
#row4 = affine_map<(b, h, s, t) -> (b, h, s, t)>
#red4 = affine_map<(b, h, s, t) -> (b, h, s)>
#ap = affine_map<(b, s, h, d, t) -> (b, h, s, t)>
#av = affine_map<(b, s, h, d, t) -> (b, t, h, d)>
#ao = affine_map<(b, s, h, d, t) -> (b, s, h, d)>
func.func @attention(%q: tensor<?x?x?x?xf32>, %k: tensor<?x?x?x?xf32>, %v: tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.25 : f32
  %b = tensor.dim %q, %c0 : tensor<?x?x?x?xf32>
  %s = tensor.dim %q, %c1 : tensor<?x?x?x?xf32>
  %h = tensor.dim %q, %c2 : tensor<?x?x?x?xf32>
  %d = tensor.dim %q, %c3 : tensor<?x?x?x?xf32>
  %se = tensor.empty(%b, %h, %s, %s) : tensor<?x?x?x?xf32>
  %sf = linalg.fill ins(%zero : f32) outs(%se : tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %scores = linalg.generic {indexing_maps = [#aq, #ak, #as], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>) outs(%sf : tensor<?x?x?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %a = arith.addf %acc, %m : f32
    linalg.yield %a : f32
  } -> tensor<?x?x?x?xf32>
  %me = tensor.empty(%b, %h, %s) : tensor<?x?x?xf32>
  %mf = linalg.fill ins(%ninf : f32) outs(%me : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %rowmax = linalg.generic {indexing_maps = [#row4, #red4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%scores : tensor<?x?x?x?xf32>) outs(%mf : tensor<?x?x?xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %visible = arith.cmpi ule, %j, %i : index
    %sc = arith.mulf %x, %scale : f32
    %masked = arith.select %visible, %sc, %ninf : f32
    %mx = arith.maximumf %acc, %masked : f32
    linalg.yield %mx : f32
  } -> tensor<?x?x?xf32>
  %ee = tensor.empty(%b, %h, %s, %s) : tensor<?x?x?x?xf32>
  %exp = linalg.generic {indexing_maps = [#row4, #red4, #row4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scores, %rowmax : tensor<?x?x?x?xf32>, tensor<?x?x?xf32>) outs(%ee : tensor<?x?x?x?xf32>) {
  ^bb0(%x: f32, %mx: f32, %out: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %visible = arith.cmpi ule, %j, %i : index
    %sc = arith.mulf %x, %scale : f32
    %c = arith.subf %sc, %mx : f32
    %e = math.exp %c : f32
    %p = arith.select %visible, %e, %zero : f32
    linalg.yield %p : f32
  } -> tensor<?x?x?x?xf32>
  %ze = tensor.empty(%b, %h, %s) : tensor<?x?x?xf32>
  %zf = linalg.fill ins(%zero : f32) outs(%ze : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %sum = linalg.generic {indexing_maps = [#row4, #red4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%exp : tensor<?x?x?x?xf32>) outs(%zf : tensor<?x?x?xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %a = arith.addf %acc, %x : f32
    linalg.yield %a : f32
  } -> tensor<?x?x?xf32>
  %pe = tensor.empty(%b, %h, %s, %s) : tensor<?x?x?x?xf32>
  %probs = linalg.generic {indexing_maps = [#row4, #red4, #row4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%exp, %sum : tensor<?x?x?x?xf32>, tensor<?x?x?xf32>) outs(%pe : tensor<?x?x?x?xf32>) {
  ^bb0(%x: f32, %z: f32, %out: f32):
    %p = arith.divf %x, %z : f32
    linalg.yield %p : f32
  } -> tensor<?x?x?x?xf32>
  %oe = tensor.empty(%b, %s, %h, %d) : tensor<?x?x?x?xf32>
  %of = linalg.fill ins(%zero : f32) outs(%oe : tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %out = linalg.generic {indexing_maps = [#ap, #av, #ao], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%probs, %v : tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>) outs(%of : tensor<?x?x?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %a = arith.addf %acc, %m : f32
    linalg.yield %a : f32
  } -> tensor<?x?x?x?xf32>
  return %out : tensor<?x?x?x?xf32>
}

// A linear layer on a weight stored in float16: y = x W^T, W widened to
// float32 (the matrix kernel widens it while it packs B).
func.func @h16(%x: tensor<?x?x?xf32>, %wh: tensor<?x?xf16>) -> tensor<?x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %w = arith.extf %wh : tensor<?x?xf16> to tensor<?x?xf32>
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

// The same on a weight stored in bfloat16, given as its bits (int16: .npy
// has no bfloat16).
func.func @hb16(%x: tensor<?x?x?xf32>, %bits: tensor<?x?xi16>) -> tensor<?x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %wh = arith.bitcast %bits : tensor<?x?xi16> to tensor<?x?xbf16>
  %w = arith.extf %wh : tensor<?x?xbf16> to tensor<?x?xf32>
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
