// RUN: gptq-opt %s -split-input-file | FileCheck %s

// The gptq.model module attribute as the importers write it; every module
// here verifies and prints back unchanged.

// CHECK: module attributes {gptq.model = {dim = 64 : i64, hidden_dim = 172 : i64, n_heads = 8 : i64, n_kv_heads = 4 : i64, n_layers = 5 : i64, seq_len = 512 : i64, vocab_size = 512 : i64}}
module attributes {gptq.model = {dim = 64 : i64, hidden_dim = 172 : i64, n_heads = 8 : i64, n_kv_heads = 4 : i64, n_layers = 5 : i64, seq_len = 512 : i64, vocab_size = 512 : i64}} {
}

// -----

// Keys in any order; multi-query attention (one key/value head); head size 2.
// CHECK: module attributes {gptq.model = {dim = 4 : i64, hidden_dim = 6 : i64, n_heads = 2 : i64, n_kv_heads = 1 : i64, n_layers = 2 : i64, seq_len = 4 : i64, vocab_size = 6 : i64}}
module attributes {gptq.model = {vocab_size = 6 : i64, seq_len = 4 : i64, n_layers = 2 : i64, n_kv_heads = 1 : i64, n_heads = 2 : i64, hidden_dim = 6 : i64, dim = 4 : i64}} {
}

// -----

// Llama 2 7B's shape (multi-head, n_kv_heads = n_heads), beside another
// attribute of the dialect, which this verifier leaves alone.
// CHECK: module attributes {gptq.model = {dim = 4096 : i64, hidden_dim = 11008 : i64, n_heads = 32 : i64, n_kv_heads = 32 : i64, n_layers = 32 : i64, seq_len = 4096 : i64, vocab_size = 32000 : i64}}
// CHECK: func.func @f() attributes {gptq.signature = () -> ()}
module attributes {gptq.model = {dim = 4096 : i64, hidden_dim = 11008 : i64, n_heads = 32 : i64, n_kv_heads = 32 : i64, n_layers = 32 : i64, seq_len = 4096 : i64, vocab_size = 32000 : i64}} {
  func.func @f() attributes {gptq.signature = () -> ()} {
    return
  }
}

// -----

// A nested module may carry it too.
// CHECK: module {
// CHECK: module @inner attributes {gptq.model = {dim = 8 : i64, hidden_dim = 1 : i64, n_heads = 1 : i64, n_kv_heads = 1 : i64, n_layers = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64}}
module {
  module @inner attributes {gptq.model = {dim = 8 : i64, hidden_dim = 1 : i64, n_heads = 1 : i64, n_kv_heads = 1 : i64, n_layers = 1 : i64, seq_len = 1 : i64, vocab_size = 1 : i64}} {
  }
}

// -----

// An explicit head size (Gemma 2 and Qwen 3 give one): dim need not be a
// multiple of n_heads then, nor head_dim * n_heads equal dim.
// CHECK: module attributes {gptq.model = {dim = 100 : i64, head_dim = 32 : i64, hidden_dim = 64 : i64, n_heads = 3 : i64, n_kv_heads = 1 : i64, n_layers = 2 : i64, seq_len = 16 : i64, vocab_size = 32 : i64}}
module attributes {gptq.model = {dim = 100 : i64, head_dim = 32 : i64, hidden_dim = 64 : i64, n_heads = 3 : i64, n_kv_heads = 1 : i64, n_layers = 2 : i64, seq_len = 16 : i64, vocab_size = 32 : i64}} {
}

// -----

// Hugging Face's order of q and k features.
// CHECK: module attributes {gptq.model = {dim = 64 : i64, hidden_dim = 64 : i64, n_heads = 4 : i64, n_kv_heads = 4 : i64, n_layers = 1 : i64, rotary = "halves", seq_len = 16 : i64, vocab_size = 32 : i64}}
module attributes {gptq.model = {dim = 64 : i64, hidden_dim = 64 : i64, n_heads = 4 : i64, n_kv_heads = 4 : i64, n_layers = 1 : i64, rotary = "halves", seq_len = 16 : i64, vocab_size = 32 : i64}} {
}
