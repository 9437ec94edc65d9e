// A two-layer model in the form `import-llama2c` emits, trimmed by hand to
// what matters for finding linear layers: weights as dense_resource
// constants with NameLocs, linear layers as contraction linalg.generic ops
// with the weight stored out x in, attention scores and their mixing as
// contractions of two activations, and the output classifier tied to the
// token embeddings (also read by the embedding gather). Norms and RoPE are
// left out; dims are tiny (dim 4, kv dim 2, hidden 6, vocab 6).
#lin_x = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#lin_w = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#lin_y = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#score_q = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#score_k = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
#mix_p = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#mix_v = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#red = ["parallel", "parallel", "parallel", "reduction"]
#par = ["parallel", "parallel", "parallel"]
module attributes {gptq.model = {dim = 4 : i64, hidden_dim = 6 : i64, n_heads = 2 : i64, n_kv_heads = 1 : i64, n_layers = 2 : i64, seq_len = 4 : i64, vocab_size = 6 : i64}} {
  func.func @forward(%tokens: tensor<?x?xi32>) -> tensor<?x?x6xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %cst0 = arith.constant 0.0 : f32
    %batch = tensor.dim %tokens, %c0 : tensor<?x?xi32>
    %seq = tensor.dim %tokens, %c1 : tensor<?x?xi32>
    %emb = arith.constant dense_resource<tok_embeddings> : tensor<6x4xf32> loc("tok_embeddings")
    %empty0 = tensor.empty(%batch, %seq) : tensor<?x?x4xf32>
    %x0 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, #id3], iterator_types = #par} ins(%tokens : tensor<?x?xi32>) outs(%empty0 : tensor<?x?x4xf32>) {
    ^bb0(%tok: i32, %out: f32):
      %id = arith.index_cast %tok : i32 to index
      %col = linalg.index 2 : index
      %row = tensor.extract %emb[%id, %col] : tensor<6x4xf32>
      linalg.yield %row : f32
    } -> tensor<?x?x4xf32>
    // Block 0.
    %wq0 = arith.constant dense_resource<layers.0.attention.wq> : tensor<4x4xf32> loc("layers.0.attention.wq")
    %e_q0 = tensor.empty(%batch, %seq) : tensor<?x?x4xf32>
    %f_q0 = linalg.fill ins(%cst0 : f32) outs(%e_q0 : tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %q0 = linalg.generic {indexing_maps = [#lin_x, #lin_w, #lin_y], iterator_types = #red} ins(%x0, %wq0 : tensor<?x?x4xf32>, tensor<4x4xf32>) outs(%f_q0 : tensor<?x?x4xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x4xf32> loc("layers.0.attention.wq")
    %wk0 = arith.constant dense_resource<layers.0.attention.wk> : tensor<2x4xf32> loc("layers.0.attention.wk")
    %e_k0 = tensor.empty(%batch, %seq) : tensor<?x?x2xf32>
    %f_k0 = linalg.fill ins(%cst0 : f32) outs(%e_k0 : tensor<?x?x2xf32>) -> tensor<?x?x2xf32>
    %k0 = linalg.generic {indexing_maps = [#lin_x, #lin_w, #lin_y], iterator_types = #red} ins(%x0, %wk0 : tensor<?x?x4xf32>, tensor<2x4xf32>) outs(%f_k0 : tensor<?x?x2xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x2xf32> loc("layers.0.attention.wk")
    %wv0 = arith.constant dense_resource<layers.0.attention.wv> : tensor<2x4xf32> loc("layers.0.attention.wv")
    %e_v0 = tensor.empty(%batch, %seq) : tensor<?x?x2xf32>
    %f_v0 = linalg.fill ins(%cst0 : f32) outs(%e_v0 : tensor<?x?x2xf32>) -> tensor<?x?x2xf32>
    %v0 = linalg.generic {indexing_maps = [#lin_x, #lin_w, #lin_y], iterator_types = #red} ins(%x0, %wv0 : tensor<?x?x4xf32>, tensor<2x4xf32>) outs(%f_v0 : tensor<?x?x2xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x2xf32> loc("layers.0.attention.wv")
    %e_scores0 = tensor.empty(%batch, %seq, %seq) : tensor<?x?x?xf32>
    %f_scores0 = linalg.fill ins(%cst0 : f32) outs(%e_scores0 : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
    %scores0 = linalg.generic {indexing_maps = [#score_q, #score_k, #lin_y], iterator_types = #red} ins(%k0, %v0 : tensor<?x?x2xf32>, tensor<?x?x2xf32>) outs(%f_scores0 : tensor<?x?x?xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x?xf32>
    %e_attn0 = tensor.empty(%batch, %seq) : tensor<?x?x2xf32>
    %f_attn0 = linalg.fill ins(%cst0 : f32) outs(%e_attn0 : tensor<?x?x2xf32>) -> tensor<?x?x2xf32>
    %attn0 = linalg.generic {indexing_maps = [#mix_p, #mix_v, #lin_y], iterator_types = #red} ins(%scores0, %v0 : tensor<?x?x?xf32>, tensor<?x?x2xf32>) outs(%f_attn0 : tensor<?x?x2xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x2xf32>
    %wo0 = arith.constant dense_resource<layers.0.attention.wo> : tensor<4x2xf32> loc("layers.0.attention.wo")
    %e_o0 = tensor.empty(%batch, %seq) : tensor<?x?x4xf32>
    %f_o0 = linalg.fill ins(%cst0 : f32) outs(%e_o0 : tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %o0 = linalg.generic {indexing_maps = [#lin_x, #lin_w, #lin_y], iterator_types = #red} ins(%attn0, %wo0 : tensor<?x?x2xf32>, tensor<4x2xf32>) outs(%f_o0 : tensor<?x?x4xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x4xf32> loc("layers.0.attention.wo")
    %e_h0 = tensor.empty(%batch, %seq) : tensor<?x?x4xf32>
    %h0 = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = #par} ins(%x0, %o0 : tensor<?x?x4xf32>, tensor<?x?x4xf32>) outs(%e_h0 : tensor<?x?x4xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %r = arith.addf %a, %b : f32
      linalg.yield %r : f32
    } -> tensor<?x?x4xf32>
    %w1_0 = arith.constant dense_resource<layers.0.feed_forward.w1> : tensor<6x4xf32> loc("layers.0.feed_forward.w1")
    %e_g0 = tensor.empty(%batch, %seq) : tensor<?x?x6xf32>
    %f_g0 = linalg.fill ins(%cst0 : f32) outs(%e_g0 : tensor<?x?x6xf32>) -> tensor<?x?x6xf32>
    %g0 = linalg.generic {indexing_maps = [#lin_x, #lin_w, #lin_y], iterator_types = #red} ins(%h0, %w1_0 : tensor<?x?x4xf32>, tensor<6x4xf32>) outs(%f_g0 : tensor<?x?x6xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x6xf32> loc("layers.0.feed_forward.w1")
    %w3_0 = arith.constant dense_resource<layers.0.feed_forward.w3> : tensor<6x4xf32> loc("layers.0.feed_forward.w3")
    %e_u0 = tensor.empty(%batch, %seq) : tensor<?x?x6xf32>
    %f_u0 = linalg.fill ins(%cst0 : f32) outs(%e_u0 : tensor<?x?x6xf32>) -> tensor<?x?x6xf32>
    %u0 = linalg.generic {indexing_maps = [#lin_x, #lin_w, #lin_y], iterator_types = #red} ins(%h0, %w3_0 : tensor<?x?x4xf32>, tensor<6x4xf32>) outs(%f_u0 : tensor<?x?x6xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x6xf32> loc("layers.0.feed_forward.w3")
    %e_swiglu0 = tensor.empty(%batch, %seq) : tensor<?x?x6xf32>
    %swiglu0 = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = #par} ins(%g0, %u0 : tensor<?x?x6xf32>, tensor<?x?x6xf32>) outs(%e_swiglu0 : tensor<?x?x6xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %r = arith.mulf %a, %b : f32
      linalg.yield %r : f32
    } -> tensor<?x?x6xf32>
    %w2_0 = arith.constant dense_resource<layers.0.feed_forward.w2> : tensor<4x6xf32> loc("layers.0.feed_forward.w2")
    %e_d0 = tensor.empty(%batch, %seq) : tensor<?x?x4xf32>
    %f_d0 = linalg.fill ins(%cst0 : f32) outs(%e_d0 : tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %d0 = linalg.generic {indexing_maps = [#lin_x, #lin_w, #lin_y], iterator_types = #red} ins(%swiglu0, %w2_0 : tensor<?x?x6xf32>, tensor<4x6xf32>) outs(%f_d0 : tensor<?x?x4xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x4xf32> loc("layers.0.feed_forward.w2")
    %e_x1 = tensor.empty(%batch, %seq) : tensor<?x?x4xf32>
    %x1 = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = #par} ins(%h0, %d0 : tensor<?x?x4xf32>, tensor<?x?x4xf32>) outs(%e_x1 : tensor<?x?x4xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %r = arith.addf %a, %b : f32
      linalg.yield %r : f32
    } -> tensor<?x?x4xf32>
    // Block 1.
    %wq1 = arith.constant dense_resource<layers.1.attention.wq> : tensor<4x4xf32> loc("layers.1.attention.wq")
    %e_q1 = tensor.empty(%batch, %seq) : tensor<?x?x4xf32>
    %f_q1 = linalg.fill ins(%cst0 : f32) outs(%e_q1 : tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %q1 = linalg.generic {indexing_maps = [#lin_x, #lin_w, #lin_y], iterator_types = #red} ins(%x1, %wq1 : tensor<?x?x4xf32>, tensor<4x4xf32>) outs(%f_q1 : tensor<?x?x4xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x4xf32> loc("layers.1.attention.wq")
    %wk1 = arith.constant dense_resource<layers.1.attention.wk> : tensor<2x4xf32> loc("layers.1.attention.wk")
    %e_k1 = tensor.empty(%batch, %seq) : tensor<?x?x2xf32>
    %f_k1 = linalg.fill ins(%cst0 : f32) outs(%e_k1 : tensor<?x?x2xf32>) -> tensor<?x?x2xf32>
    %k1 = linalg.generic {indexing_maps = [#lin_x, #lin_w, #lin_y], iterator_types = #red} ins(%x1, %wk1 : tensor<?x?x4xf32>, tensor<2x4xf32>) outs(%f_k1 : tensor<?x?x2xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x2xf32> loc("layers.1.attention.wk")
    %wv1 = arith.constant dense_resource<layers.1.attention.wv> : tensor<2x4xf32> loc("layers.1.attention.wv")
    %e_v1 = tensor.empty(%batch, %seq) : tensor<?x?x2xf32>
    %f_v1 = linalg.fill ins(%cst0 : f32) outs(%e_v1 : tensor<?x?x2xf32>) -> tensor<?x?x2xf32>
    %v1 = linalg.generic {indexing_maps = [#lin_x, #lin_w, #lin_y], iterator_types = #red} ins(%x1, %wv1 : tensor<?x?x4xf32>, tensor<2x4xf32>) outs(%f_v1 : tensor<?x?x2xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x2xf32> loc("layers.1.attention.wv")
    %e_scores1 = tensor.empty(%batch, %seq, %seq) : tensor<?x?x?xf32>
    %f_scores1 = linalg.fill ins(%cst0 : f32) outs(%e_scores1 : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
    %scores1 = linalg.generic {indexing_maps = [#score_q, #score_k, #lin_y], iterator_types = #red} ins(%k1, %v1 : tensor<?x?x2xf32>, tensor<?x?x2xf32>) outs(%f_scores1 : tensor<?x?x?xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x?xf32>
    %e_attn1 = tensor.empty(%batch, %seq) : tensor<?x?x2xf32>
    %f_attn1 = linalg.fill ins(%cst0 : f32) outs(%e_attn1 : tensor<?x?x2xf32>) -> tensor<?x?x2xf32>
    %attn1 = linalg.generic {indexing_maps = [#mix_p, #mix_v, #lin_y], iterator_types = #red} ins(%scores1, %v1 : tensor<?x?x?xf32>, tensor<?x?x2xf32>) outs(%f_attn1 : tensor<?x?x2xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x2xf32>
    %wo1 = arith.constant dense_resource<layers.1.attention.wo> : tensor<4x2xf32> loc("layers.1.attention.wo")
    %e_o1 = tensor.empty(%batch, %seq) : tensor<?x?x4xf32>
    %f_o1 = linalg.fill ins(%cst0 : f32) outs(%e_o1 : tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %o1 = linalg.generic {indexing_maps = [#lin_x, #lin_w, #lin_y], iterator_types = #red} ins(%attn1, %wo1 : tensor<?x?x2xf32>, tensor<4x2xf32>) outs(%f_o1 : tensor<?x?x4xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x4xf32> loc("layers.1.attention.wo")
    %e_h1 = tensor.empty(%batch, %seq) : tensor<?x?x4xf32>
    %h1 = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = #par} ins(%x1, %o1 : tensor<?x?x4xf32>, tensor<?x?x4xf32>) outs(%e_h1 : tensor<?x?x4xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %r = arith.addf %a, %b : f32
      linalg.yield %r : f32
    } -> tensor<?x?x4xf32>
    %w1_1 = arith.constant dense_resource<layers.1.feed_forward.w1> : tensor<6x4xf32> loc("layers.1.feed_forward.w1")
    %e_g1 = tensor.empty(%batch, %seq) : tensor<?x?x6xf32>
    %f_g1 = linalg.fill ins(%cst0 : f32) outs(%e_g1 : tensor<?x?x6xf32>) -> tensor<?x?x6xf32>
    %g1 = linalg.generic {indexing_maps = [#lin_x, #lin_w, #lin_y], iterator_types = #red} ins(%h1, %w1_1 : tensor<?x?x4xf32>, tensor<6x4xf32>) outs(%f_g1 : tensor<?x?x6xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x6xf32> loc("layers.1.feed_forward.w1")
    %w3_1 = arith.constant dense_resource<layers.1.feed_forward.w3> : tensor<6x4xf32> loc("layers.1.feed_forward.w3")
    %e_u1 = tensor.empty(%batch, %seq) : tensor<?x?x6xf32>
    %f_u1 = linalg.fill ins(%cst0 : f32) outs(%e_u1 : tensor<?x?x6xf32>) -> tensor<?x?x6xf32>
    %u1 = linalg.generic {indexing_maps = [#lin_x, #lin_w, #lin_y], iterator_types = #red} ins(%h1, %w3_1 : tensor<?x?x4xf32>, tensor<6x4xf32>) outs(%f_u1 : tensor<?x?x6xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x6xf32> loc("layers.1.feed_forward.w3")
    %e_swiglu1 = tensor.empty(%batch, %seq) : tensor<?x?x6xf32>
    %swiglu1 = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = #par} ins(%g1, %u1 : tensor<?x?x6xf32>, tensor<?x?x6xf32>) outs(%e_swiglu1 : tensor<?x?x6xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %r = arith.mulf %a, %b : f32
      linalg.yield %r : f32
    } -> tensor<?x?x6xf32>
    %w2_1 = arith.constant dense_resource<layers.1.feed_forward.w2> : tensor<4x6xf32> loc("layers.1.feed_forward.w2")
    %e_d1 = tensor.empty(%batch, %seq) : tensor<?x?x4xf32>
    %f_d1 = linalg.fill ins(%cst0 : f32) outs(%e_d1 : tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %d1 = linalg.generic {indexing_maps = [#lin_x, #lin_w, #lin_y], iterator_types = #red} ins(%swiglu1, %w2_1 : tensor<?x?x6xf32>, tensor<4x6xf32>) outs(%f_d1 : tensor<?x?x4xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x4xf32> loc("layers.1.feed_forward.w2")
    %e_x2 = tensor.empty(%batch, %seq) : tensor<?x?x4xf32>
    %x2 = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = #par} ins(%h1, %d1 : tensor<?x?x4xf32>, tensor<?x?x4xf32>) outs(%e_x2 : tensor<?x?x4xf32>) {
    ^bb0(%a: f32, %b: f32, %out: f32):
      %r = arith.addf %a, %b : f32
      linalg.yield %r : f32
    } -> tensor<?x?x4xf32>
    // The classifier reads the token embeddings.
    %e_logits = tensor.empty(%batch, %seq) : tensor<?x?x6xf32>
    %f_logits = linalg.fill ins(%cst0 : f32) outs(%e_logits : tensor<?x?x6xf32>) -> tensor<?x?x6xf32>
    %logits = linalg.generic {indexing_maps = [#lin_x, #lin_w, #lin_y], iterator_types = #red} ins(%x2, %emb : tensor<?x?x4xf32>, tensor<6x4xf32>) outs(%f_logits : tensor<?x?x6xf32>) {
    ^bb0(%lhs: f32, %rhs: f32, %acc: f32):
      %prod = arith.mulf %lhs, %rhs : f32
      %sum = arith.addf %acc, %prod : f32
      linalg.yield %sum : f32
    } -> tensor<?x?x6xf32> loc("output")
    return %logits : tensor<?x?x6xf32>
  }
}
{-#
  dialect_resources: {
    builtin: {
      tok_embeddings: "0x04000000d7a3303fb81e053f0ad723be8fc2f5be0ad7a33c5c8f42be85eb113f14aec7becdcc4cbd7b142e3e85eb513f0ad7233cae47e1be5c8f023f8fc2753e000000bf85eb513fec51783f52b81e3fcdcc4c3f5c8fc2be1f85eb3ecdcc4c3fa470bd3e",
      layers.0.attention.wq: "0x040000008fc275bdcdcc4cbfb81e05beae47613ee17a543f7b146e3fcdcc4cbd48e13a3f8fc2f5bef6281c3fcdcccc3dec5178bfae47e13ecdcc4cbe6666263f7b14ae3e",
      layers.0.attention.wk: "0x04000000000080bf0ad723bca4703d3f5c8f02bf3333b3bea4703d3f52b81ebf295c0f3e",
      layers.0.attention.wv: "0x04000000b81e05bfd7a3703ff6281c3fcdccccbd3d0a57bfec51b8be0ad7a33c52b85e3f",
      layers.0.attention.wo: "0x0400000014ae47bfcdcccc3d85ebd13eec51b83dae47213f0ad7a33d7b146e3f3d0a573e",
      layers.0.feed_forward.w1: "0x04000000ec51383eae47e1bd5c8f423e1f856bbe9a99193e3d0ad7be52b81ebfae4721bf1f856b3e52b89e3ecdcc4cbd85eb51bfb81e053f0000403f9a99593f7b142e3fcdcc4c3f9a99593f0ad7a33dae4761be85ebd13e6666e6be52b81e3f3333333f",
      layers.0.feed_forward.w2: "0x04000000713d4a3fec51383e6666663f0ad7233ecdccccbd0ad7a33ea4707d3fe17a543f3d0a173f3d0a57bf1f856b3e8fc2f5bcb81e853ed7a3303f5c8f02bf1f85eb3eb81e45bf295c0fbf3d0a173fc3f5a8beae47213fcdcc4cbf8fc235bfcdcccc3e",
      layers.0.feed_forward.w3: "0x04000000c3f568bf9a99193e85eb513f295c8f3dec51b83e333373bf713d8a3e3d0a573e9a99193eae4761beb81e85be8fc2753f7b146ebf8fc275bf1f856b3fae4721bf000040bfe17a14bf9a99193f52b85e3f333373bf9a9919becdcc4cbf8fc2f5be",
      layers.1.attention.wq: "0x04000000295c0fbfe17a943e9a9999be0ad723bf0ad7233c1f856bbfcdcc4cbf48e17a3f9a9919bf295c8fbe1f85eb3e7b142e3f3d0a573fc3f528bf3333b33e7b146e3f",
      layers.1.attention.wk: "0x04000000ae4761bf3333b33ed7a3303f0ad7a3be000000bf5c8f423e8fc2f5bd666626bf",
      layers.1.attention.wv: "0x040000008fc275bdec5138be295c0f3e0ad7a33c5c8fc2bee17a94be7b142e3f000000bf",
      layers.1.attention.wo: "0x040000008fc2f53d48e17abf8fc2f53ec3f5a8bec3f568bfae47e1beb81e05bfc3f5683f",
      layers.1.feed_forward.w1: "0x040000009a9999be3d0ad7be295c8fbe0ad7633f713d8a3e8fc2753ef628dc3eae4761be7b142ebe9a99993e000080bf52b81ebfc3f5a8beb81e05bf713d8a3e8fc275be0000403f295c0f3e7b142ebecdcc4cbecdcccc3e0ad723be0ad7a33ec3f568bf",
      layers.1.feed_forward.w2: "0x04000000ae47e1bd8fc2f5be7b142ebf8fc2753d8fc2f5bc8fc2f53d5c8f023fb81e453f0ad723bc5c8fc2be295c8fbd52b81e3f0000403f52b81e3f52b81ebf0000803f713d8a3ee17a54bf6666e63eec51783fcdcc4cbeec51b83ea470bdbe85eb11bf",
      layers.1.feed_forward.w3: "0x04000000f628dc3e000080bf6666263f8fc2753dcdcc4cbf5c8f42bf9a99993e0000403fae47e1be8fc2753fcdcc4cbf8fc2353f3d0a57be3d0a57bf6666e6beec51b8bde17a143fec51383f48e13abf0ad7233d9a99993e52b89ebea4703d3fae47e1be"
    }
  }
#-}
