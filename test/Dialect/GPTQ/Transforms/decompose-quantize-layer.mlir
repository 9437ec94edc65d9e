// RUN: gptq-opt %s --gptq-decompose-quantize-layer --split-input-file | FileCheck %s

// Per-row grids (the default): the grid comes from the weights before dead
// inputs are zeroed, and is fixed for the loop; no permutation.

// CHECK-LABEL: func.func @per_row
// CHECK-SAME: (%[[W:.*]]: tensor<8x16xf32>, %[[H:.*]]: tensor<16x16xf32>)
// CHECK-DAG: %[[P:.*]] = arith.constant 0.00999999977 : f32
// CHECK: %[[S:.*]], %[[Z:.*]] = gptq.grid %[[W]] {config = #gptq.config<>} : tensor<8x16xf32> -> tensor<8x1xf32>
// CHECK: %[[WM:.*]] = gptq.mask_dead_inputs %[[W]], %[[H]]
// CHECK: %[[U:.*]], %[[OK:.*]] = gptq.damped_cholesky %[[H]] percdamp(%[[P]])
// CHECK: %[[G:.*]] = gptq.group_index %{{.*}} {config = #gptq.config<>} : tensor<16xi32>
// CHECK: %[[C:.*]], %[[S2:.*]], %[[Z2:.*]], %[[L:.*]] = gptq.quantize_blocks %[[WM]], %[[U]] grid(%[[S]], %[[Z]], %[[G]] :
// CHECK-NOT: gptq.permute
// CHECK: return %[[C]], %[[S2]], %[[Z2]], %[[G]], %[[L]], %[[OK]]
func.func @per_row(%w: tensor<8x16xf32>, %h: tensor<16x16xf32>) -> (tensor<8x16xi8>, tensor<8x1xf32>, tensor<8x1xf32>, tensor<16xi32>, f32, i1) {
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<>} : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xi8>, tensor<8x1xf32>, tensor<16xi32>
  return %c, %s, %z, %g, %l, %ok : tensor<8x16xi8>, tensor<8x1xf32>, tensor<8x1xf32>, tensor<16xi32>, f32, i1
}

// -----

// act-order with dynamic groups: columns of W and rows and columns of H are
// permuted, the loop computes its grids, codes go back to the original
// order, and g_idx comes from the permutation. The percdamp operand
// replaces the config's.

// CHECK-LABEL: func.func @act_order_dynamic
// CHECK-SAME: (%[[W:.*]]: tensor<?x?xf32>, %[[H:.*]]: tensor<?x?xf32>, %[[P:.*]]: f32)
// CHECK-NOT: gptq.grid
// CHECK: %[[WM:.*]] = gptq.mask_dead_inputs %[[W]], %[[H]]
// CHECK: %[[PERM:.*]] = gptq.act_order %[[H]]
// CHECK: %[[WP:.*]] = gptq.permute %[[WM]] by %[[PERM]] dims [1]
// CHECK: %[[HP:.*]] = gptq.permute %[[H]] by %[[PERM]] dims [0, 1]
// CHECK: %[[U:.*]], %{{.*}} = gptq.damped_cholesky %[[HP]] percdamp(%[[P]])
// CHECK: %[[G:.*]] = gptq.group_index %{{.*}} perm(%[[PERM]] : tensor<?xi64>)
// CHECK: %[[C:[a-zA-Z0-9_]+]], {{.*}} = gptq.quantize_blocks %[[WP]], %[[U]] {config
// CHECK: %[[CO:.*]] = gptq.permute %[[C]] by %[[PERM]] inverse dims [1]
// CHECK: return %[[CO]],
func.func @act_order_dynamic(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>, %p: f32) -> (tensor<?x?xi8>, tensor<?xi32>) {
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h percdamp(%p) {config = #gptq.config<group_size = 4, act_order = true>} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32>
  return %c, %g : tensor<?x?xi8>, tensor<?xi32>
}

// -----

// Static groups with act-order: grids from the masked weights in original
// order; the loop maps each processed column to its original group through
// the permuted g_idx.

// CHECK-LABEL: func.func @static_groups
// CHECK: %[[WM:.*]] = gptq.mask_dead_inputs
// CHECK: %[[S:.*]], %[[Z:.*]] = gptq.grid %[[WM]]
// CHECK: %[[PERM:.*]] = gptq.act_order
// CHECK: %[[G:.*]] = gptq.group_index
// CHECK: %[[GM:.*]] = gptq.permute %[[G]] by %[[PERM]] dims [0]
// CHECK: gptq.quantize_blocks %{{.*}}, %{{.*}} grid(%[[S]], %[[Z]], %[[GM]] :
func.func @static_groups(%w: tensor<8x16xf32>, %h: tensor<16x16xf32>) -> tensor<8x16xi8> {
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<group_size = 4, act_order = true, static_groups = true>} : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xi8>, tensor<8x4xf32>, tensor<16xi32>
  return %c : tensor<8x16xi8>
}
