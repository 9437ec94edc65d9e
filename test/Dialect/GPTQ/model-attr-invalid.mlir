// RUN: gptq-opt %s -split-input-file -verify-diagnostics

// Every message of the gptq.model verifier.

module {
  // expected-error @below {{'gptq.model' is a module attribute: expected it on a builtin.module, found it on 'func.func'}}
  func.func @f() attributes {gptq.model = {dim = 64 : i64, hidden_dim = 172 : i64, n_heads = 8 : i64, n_kv_heads = 4 : i64, n_layers = 5 : i64, seq_len = 512 : i64, vocab_size = 512 : i64}} {
    return
  }
}

// -----

// expected-error @below {{expected 'gptq.model' to be a dictionary, found [64, 172]}}
module attributes {gptq.model = [64, 172]} {
}

// -----

// expected-error @below {{'gptq.model' has unknown key 'n_head' (expected the keys dim, hidden_dim, n_heads, n_kv_heads, n_layers, seq_len, vocab_size, and optionally head_dim and rotary)}}
module attributes {gptq.model = {dim = 64 : i64, hidden_dim = 172 : i64, n_head = 8 : i64, n_heads = 8 : i64, n_kv_heads = 4 : i64, n_layers = 5 : i64, seq_len = 512 : i64, vocab_size = 512 : i64}} {
}

// -----

// expected-error @below {{'gptq.model' is missing key 'vocab_size' (expected the keys dim, hidden_dim, n_heads, n_kv_heads, n_layers, seq_len, vocab_size, and optionally head_dim and rotary)}}
module attributes {gptq.model = {dim = 64 : i64, hidden_dim = 172 : i64, n_heads = 8 : i64, n_kv_heads = 4 : i64, n_layers = 5 : i64, seq_len = 512 : i64}} {
}

// -----

// expected-error @below {{'gptq.model' is missing key 'dim'}}
module attributes {gptq.model = {}} {
}

// -----

// expected-error @below {{expected 'gptq.model' key 'seq_len' to be an i64 integer, found 512 : i32}}
module attributes {gptq.model = {dim = 64 : i64, hidden_dim = 172 : i64, n_heads = 8 : i64, n_kv_heads = 4 : i64, n_layers = 5 : i64, seq_len = 512 : i32, vocab_size = 512 : i64}} {
}

// -----

// expected-error @below {{expected 'gptq.model' key 'seq_len' to be an i64 integer, found 512 : index}}
module attributes {gptq.model = {dim = 64 : i64, hidden_dim = 172 : i64, n_heads = 8 : i64, n_kv_heads = 4 : i64, n_layers = 5 : i64, seq_len = 512 : index, vocab_size = 512 : i64}} {
}

// -----

// expected-error @below {{expected 'gptq.model' key 'dim' to be an i64 integer, found "64"}}
module attributes {gptq.model = {dim = "64", hidden_dim = 172 : i64, n_heads = 8 : i64, n_kv_heads = 4 : i64, n_layers = 5 : i64, seq_len = 512 : i64, vocab_size = 512 : i64}} {
}

// -----

// expected-error @below {{expected 'gptq.model' key 'hidden_dim' to be an i64 integer, found 1.720000e+02 : f64}}
module attributes {gptq.model = {dim = 64 : i64, hidden_dim = 172.0 : f64, n_heads = 8 : i64, n_kv_heads = 4 : i64, n_layers = 5 : i64, seq_len = 512 : i64, vocab_size = 512 : i64}} {
}

// -----

// expected-error @below {{expected 'gptq.model' key 'n_layers' to be positive, found 0}}
module attributes {gptq.model = {dim = 64 : i64, hidden_dim = 172 : i64, n_heads = 8 : i64, n_kv_heads = 4 : i64, n_layers = 0 : i64, seq_len = 512 : i64, vocab_size = 512 : i64}} {
}

// -----

// expected-error @below {{expected 'gptq.model' key 'vocab_size' to be positive, found -512}}
module attributes {gptq.model = {dim = 64 : i64, hidden_dim = 172 : i64, n_heads = 8 : i64, n_kv_heads = 4 : i64, n_layers = 5 : i64, seq_len = 512 : i64, vocab_size = -512 : i64}} {
}

// -----

// expected-error @below {{expected 'gptq.model' dim to be a multiple of n_heads, found dim = 64 and n_heads = 6}}
module attributes {gptq.model = {dim = 64 : i64, hidden_dim = 172 : i64, n_heads = 6 : i64, n_kv_heads = 3 : i64, n_layers = 5 : i64, seq_len = 512 : i64, vocab_size = 512 : i64}} {
}

// -----

// expected-error @below {{expected 'gptq.model' n_heads to be a multiple of n_kv_heads, found n_heads = 8 and n_kv_heads = 3}}
module attributes {gptq.model = {dim = 64 : i64, hidden_dim = 172 : i64, n_heads = 8 : i64, n_kv_heads = 3 : i64, n_layers = 5 : i64, seq_len = 512 : i64, vocab_size = 512 : i64}} {
}

// -----

// More key/value heads than heads.
// expected-error @below {{expected 'gptq.model' n_heads to be a multiple of n_kv_heads, found n_heads = 4 and n_kv_heads = 8}}
module attributes {gptq.model = {dim = 64 : i64, hidden_dim = 172 : i64, n_heads = 4 : i64, n_kv_heads = 8 : i64, n_layers = 5 : i64, seq_len = 512 : i64, vocab_size = 512 : i64}} {
}

// -----

// expected-error @below {{expected 'gptq.model' to give an even head size dim / n_heads, found 24 / 8 = 3}}
module attributes {gptq.model = {dim = 24 : i64, hidden_dim = 172 : i64, n_heads = 8 : i64, n_kv_heads = 4 : i64, n_layers = 5 : i64, seq_len = 512 : i64, vocab_size = 512 : i64}} {
}

// -----

// expected-error @below {{expected 'gptq.model' key 'head_dim' to be positive, found 0}}
module attributes {gptq.model = {dim = 64 : i64, head_dim = 0 : i64, hidden_dim = 172 : i64, n_heads = 8 : i64, n_kv_heads = 4 : i64, n_layers = 5 : i64, seq_len = 512 : i64, vocab_size = 512 : i64}} {
}

// -----

// expected-error @below {{expected 'gptq.model' to give an even head size, found head_dim = 9}}
module attributes {gptq.model = {dim = 64 : i64, head_dim = 9 : i64, hidden_dim = 172 : i64, n_heads = 8 : i64, n_kv_heads = 4 : i64, n_layers = 5 : i64, seq_len = 512 : i64, vocab_size = 512 : i64}} {
}

// -----

// expected-error @below {{expected 'gptq.model' n_heads to be a multiple of n_kv_heads, found n_heads = 6 and n_kv_heads = 4}}
module attributes {gptq.model = {dim = 96 : i64, head_dim = 32 : i64, hidden_dim = 172 : i64, n_heads = 6 : i64, n_kv_heads = 4 : i64, n_layers = 5 : i64, seq_len = 512 : i64, vocab_size = 512 : i64}} {
}

// -----

// expected-error @below {{expected 'gptq.model' key 'rotary' to be "pairs" or "halves", found "half"}}
module attributes {gptq.model = {dim = 64 : i64, hidden_dim = 64 : i64, n_heads = 4 : i64, n_kv_heads = 4 : i64, n_layers = 1 : i64, rotary = "half", seq_len = 16 : i64, vocab_size = 32 : i64}} {
}
