// RUN: gptq-opt %s -split-input-file | gptq-opt -split-input-file | FileCheck %s
// RUN: gptq-opt %s -split-input-file --mlir-print-op-generic | gptq-opt -split-input-file | FileCheck %s

// Printing and parsing of #gptq.config: every key, only the settings that
// differ from the reference defaults printed, and the printed form parses
// back to the same attribute. The invalid cases are in config-invalid.mlir.

// Defaults, whether omitted or spelled out, print as an empty config.
// CHECK-LABEL: func.func @defaults
// CHECK-SAME: c0 = #gptq.config<>
// CHECK-SAME: c1 = #gptq.config<>
// CHECK-SAME: c2 = #gptq.config<>
// CHECK-SAME: c3 = #gptq.config<>
func.func @defaults() attributes {
  c0 = #gptq.config<>,
  c1 = #gptq.config<bits = 4, group_size = -1, sym = false, act_order = false, static_groups = false, percdamp = 0.01, block_size = 128, mse = false, mse_norm = 2.4, mse_grid = 100, mse_max_shrink = 0.8>,
  c2 = #gptq.config<mse_max_shrink = 0.8, bits = 4>,
  c3 = #gptq.config<percdamp = 1.000000e-02>
} {
  return
}

// -----

// One key at a time, each set to a value other than its default.
// CHECK-LABEL: func.func @every_key
// CHECK-SAME: k00 = #gptq.config<bits = 2>
// CHECK-SAME: k01 = #gptq.config<bits = 8>
// CHECK-SAME: k02 = #gptq.config<group_size = 128>
// CHECK-SAME: k03 = #gptq.config<group_size = 1>
// CHECK-SAME: k04 = #gptq.config<sym = true>
// CHECK-SAME: k05 = #gptq.config<act_order = true>
// CHECK-SAME: k06 = #gptq.config<group_size = 32, static_groups = true>
// CHECK-SAME: k07 = #gptq.config<percdamp = 1.000000e-01>
// CHECK-SAME: k08 = #gptq.config<block_size = 1>
// CHECK-SAME: k09 = #gptq.config<mse = true>
// CHECK-SAME: k10 = #gptq.config<mse_norm = 3.000000e+00>
// CHECK-SAME: k11 = #gptq.config<mse_grid = 1>
// CHECK-SAME: k12 = #gptq.config<mse_max_shrink = 1.000000e+00>
// CHECK-SAME: k13 = #gptq.config<percdamp = 5.000000e-01>
func.func @every_key() attributes {
  k00 = #gptq.config<bits = 2>,
  k01 = #gptq.config<bits = 8>,
  k02 = #gptq.config<group_size = 128>,
  k03 = #gptq.config<group_size = 1>,
  k04 = #gptq.config<sym = true>,
  k05 = #gptq.config<act_order = true>,
  k06 = #gptq.config<group_size = 32, static_groups = true>,
  k07 = #gptq.config<percdamp = 0.1>,
  k08 = #gptq.config<block_size = 1>,
  k09 = #gptq.config<mse = true>,
  k10 = #gptq.config<mse_norm = 3.0>,
  k11 = #gptq.config<mse_grid = 1>,
  k12 = #gptq.config<mse_max_shrink = 1.0>,
  k13 = #gptq.config<percdamp = 5.000000e-01>
} {
  return
}

// -----

// Every key at once: printed in the canonical key order, whatever order it
// was written in.
// CHECK-LABEL: func.func @all_keys
// CHECK-SAME: all = #gptq.config<bits = 3, group_size = 64, sym = true, act_order = true, static_groups = true, percdamp = 2.500000e-02, block_size = 32, mse = true, mse_norm = 2.000000e+00, mse_grid = 50, mse_max_shrink = 5.000000e-01>
func.func @all_keys() attributes {
  all = #gptq.config<mse_max_shrink = 0.5, mse_grid = 50, mse_norm = 2.0, mse = true, block_size = 32, percdamp = 0.025, static_groups = true, act_order = true, sym = true, group_size = 64, bits = 3>
} {
  return
}

// -----

// A default value written next to a non-default one is dropped.
// CHECK-LABEL: func.func @mixed
// CHECK-SAME: m = #gptq.config<group_size = 128, act_order = true>
// CHECK-NOT: bits
func.func @mixed() attributes {
  m = #gptq.config<bits = 4, group_size = 128, sym = false, act_order = true, block_size = 128>
} {
  return
}

// -----

// The attribute on an op, in the attr-dict.
// CHECK-LABEL: func.func @on_op
// CHECK: gptq.grid %{{.*}} {config = #gptq.config<bits = 3, group_size = 16, mse = true, mse_grid = 20>}
func.func @on_op(%w: tensor<4x32xf32>) -> tensor<4x2xf32> {
  %s, %z = gptq.grid %w {config = #gptq.config<bits = 3, group_size = 16, mse = true, mse_grid = 20>} : tensor<4x32xf32> -> tensor<4x2xf32>
  return %s : tensor<4x2xf32>
}
