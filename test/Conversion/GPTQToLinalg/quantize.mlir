// RUN: gptq-opt %s --convert-gptq-to-linalg --split-input-file | FileCheck %s

// Dynamic groups: no grid operands; the loop computes grids itself. The
// settings become constants: fixed = false, group size, block size, maxq.

// CHECK-LABEL: func.func @dynamic
// CHECK-DAG: %[[FALSE:.*]] = arith.constant false
// CHECK-DAG: %[[GS:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[BS:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[MAXQ:.*]] = arith.constant 7.000000e+00 : f32
// CHECK: call @__gptq_quantize_blocks(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[FALSE]], %[[GS]], %[[BS]], %[[MAXQ]],
func.func @dynamic(%w: tensor<?x?xf32>, %u: tensor<?x?xf32>) -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, f32) {
  %c, %s, %z, %l = gptq.quantize_blocks %w, %u {config = #gptq.config<bits = 3, group_size = 32, block_size = 64>} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>
  return %c, %s, %z, %l : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, f32
}

// The loop: W transposed, then blocks of columns in the order the kernel
// file chooses (__gptq_left_looking; the default kernels are the CPU's).
// CHECK-LABEL: func.func private @__gptq_quantize_blocks
// CHECK: call @__gptq_transpose
// CHECK: %[[LEFT:.*]] = call @__gptq_left_looking()
// CHECK: scf.if %[[LEFT]]
// CHECK: call @__gptq_quantize_left_looking
// CHECK: } else {
// CHECK: call @__gptq_quantize_right_looking
// CHECK-LABEL: func.func private @__gptq_left_looking
// CHECK: arith.constant false
// Left-looking: one parallel loop for the layer whose tasks (chunks of
// rows) run every block: give the block's columns the earlier columns'
// errors (two products: columns brought part way before, and the others),
// take the grids of the groups that start there row by row, and run the
// column loop.
// CHECK-LABEL: func.func private @__gptq_quantize_left_looking
// CHECK: scf.forall
// CHECK: scf.for
// CHECK: tensor.extract_slice %{{.*}}[%[[LI1:.*]], %[[LI1]]] [%[[LCNT:.*]], %[[LCNT]]] [1, 1]
// CHECK: call @__gptq_gemm_sub({{.*}}, %false, %false, %false, %false)
// CHECK: call @__gptq_gemm_sub({{.*}}, %false, %false, %false, %false)
// CHECK: scf.if
// CHECK: call @__gptq_row_params
// CHECK: call @__gptq_block_columns
// CHECK: tensor.parallel_insert_slice
// The reference's order: the grids of the groups that start in the block
// (from W as the block begins), then the column loop in tasks of rows, on
// W1 as the schedule gives it, and the lazy batch update through the GEMM
// kernel.
// CHECK-LABEL: func.func private @__gptq_quantize_right_looking
// CHECK: scf.for
// CHECK: scf.if
// CHECK: scf.for
// CHECK: call @__gptq_group_grid
// CHECK: tensor.extract_slice %{{.*}}[%[[I1:.*]], %[[I1]]] [%[[CNT:.*]], %[[CNT]]] [1, 1]
// CHECK: scf.forall
// CHECK: call @__gptq_block_rows
// CHECK: call @__gptq_block_columns
// CHECK: tensor.parallel_insert_slice
// CHECK: call @__gptq_gemm_sub
// The column loop reads U's block (its diagonal, then its row).
// CHECK-LABEL: func.func private @__gptq_block_columns
// CHECK-SAME: %[[UBLK:[^:]*]]: tensor<?x?xf32>, %{{[^:]*}}: tensor<?x?xf32>, %{{[^:]*}}: tensor<?x?xf32>, %{{[^:]*}}: index
// CHECK: scf.for
// CHECK: tensor.extract %[[UBLK]]
// CHECK: math.roundeven
// CHECK: arith.fptoui
// CHECK: tensor.extract_slice %[[UBLK]]

// -----

// Fixed grids (per row or static groups) pass their scales, zeros and
// group map, and fixed = true.
// CHECK-LABEL: func.func @fixed
// CHECK-SAME: (%[[W:.*]]: tensor<16x64xf32>, %[[U:.*]]: tensor<64x64xf32>, %[[S:.*]]: tensor<16x1xf32>, %[[Z:.*]]: tensor<16x1xf32>, %[[G:.*]]: tensor<64xi32>)
// CHECK-DAG: %[[TRUE:.*]] = arith.constant true
// CHECK-DAG: %[[SD:.*]] = tensor.cast %[[S]] : tensor<16x1xf32> to tensor<?x?xf32>
// CHECK-DAG: %[[GD:.*]] = tensor.cast %[[G]] : tensor<64xi32> to tensor<?xi32>
// CHECK: %[[R:.*]]:4 = call @__gptq_quantize_blocks(%{{.*}}, %{{.*}}, %[[SD]], %{{.*}}, %[[GD]], %[[TRUE]],
// CHECK: tensor.cast %[[R]]#0 : tensor<?x?xi8> to tensor<16x64xi8>
func.func @fixed(%w: tensor<16x64xf32>, %u: tensor<64x64xf32>, %s: tensor<16x1xf32>, %z: tensor<16x1xf32>, %g: tensor<64xi32>) -> (tensor<16x64xi8>, f32) {
  %c, %s2, %z2, %l = gptq.quantize_blocks %w, %u grid(%s, %z, %g : tensor<16x1xf32>, tensor<16x1xf32>, tensor<64xi32>) {config = #gptq.config<>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xi8>, tensor<16x1xf32>
  return %c, %l : tensor<16x64xi8>, f32
}

// -----

// Grids: one group of all columns for group_size = -1; sym and the MSE
// search settings (int(0.8 * 100) = 80 steps) as constants.
// CHECK-LABEL: func.func @grid_per_row
// CHECK-SAME: (%[[W:.*]]: tensor<?x?xf32>)
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[COLS:.*]] = tensor.dim %[[W]], %[[ONE]]
// CHECK-DAG: %[[GS:.*]] = arith.maxsi %[[COLS]], %[[ONE]]
// CHECK-DAG: %[[TRUE:.*]] = arith.constant true
// CHECK-DAG: %[[STEPS:.*]] = arith.constant 80 : index
// CHECK: call @__gptq_grid(%[[W]], %[[GS]], %{{.*}}, %[[TRUE]], %[[TRUE]], %{{.*}}, %[[STEPS]],
func.func @grid_per_row(%w: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %s, %z = gptq.grid %w {config = #gptq.config<sym = true, mse = true>} : tensor<?x?xf32> -> tensor<?x?xf32>
  return %s, %z : tensor<?x?xf32>, tensor<?x?xf32>
}
// CHECK-LABEL: func.func private @__gptq_grid
// CHECK: scf.for
// CHECK: call @__gptq_find_params
// CHECK-LABEL: func.func private @__gptq_find_params
// CHECK: arith.minimumf
// CHECK: arith.maximumf
// CHECK: call @__gptq_range_grid
// CHECK: scf.if
// CHECK: call @__gptq_shrunk_grid
// CHECK: call @__gptq_grid_error
// CHECK-LABEL: func.func private @__gptq_range_grid
// CHECK: call @__gptq_grid_of
// CHECK-LABEL: func.func private @__gptq_shrunk_grid
// CHECK: call @__gptq_grid_of
// CHECK-LABEL: func.func private @__gptq_grid_error
// CHECK: math.powf
// CHECK-LABEL: func.func private @__gptq_grid_of
// CHECK: math.roundeven

// -----

// g_idx modes: 0 for one group, 1 for j / group_size, 2 for invperm[j] /
// group_size (act-order with dynamic groups).
// CHECK-LABEL: func.func @group_index_modes
// CHECK-DAG: %[[M0:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[M1:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[M2:.*]] = arith.constant 2 : i32
// CHECK: call @__gptq_group_index(%{{.*}}, %{{.*}}, %[[M0]],
// CHECK: call @__gptq_group_index(%{{.*}}, %{{.*}}, %[[M1]],
// CHECK: call @__gptq_group_index(%{{.*}}, %{{.*}}, %[[M2]],
// CHECK: call @__gptq_group_index(%{{.*}}, %{{.*}}, %[[M1]],
func.func @group_index_modes(%n: index, %p: tensor<?xi64>) -> (tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) {
  %a = gptq.group_index %n {config = #gptq.config<>} : tensor<?xi32>
  %b = gptq.group_index %n {config = #gptq.config<group_size = 16>} : tensor<?xi32>
  %c = gptq.group_index %n perm(%p : tensor<?xi64>) {config = #gptq.config<group_size = 16, act_order = true>} : tensor<?xi32>
  %d = gptq.group_index %n perm(%p : tensor<?xi64>) {config = #gptq.config<group_size = 16, act_order = true, static_groups = true>} : tensor<?xi32>
  return %a, %b, %c, %d : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
}

// -----

// CHECK-LABEL: func.func @mask
// CHECK: call @__gptq_mask_dead_inputs
// CHECK-LABEL: func.func private @__gptq_mask_dead_inputs
// CHECK: arith.cmpf oeq
// CHECK: arith.select
func.func @mask(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = gptq.mask_dead_inputs %w, %h : tensor<?x?xf32>, tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
