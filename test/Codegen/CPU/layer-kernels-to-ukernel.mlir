// RUN: gptq-opt %s --gptq-decompose-quantize-layer --gptq-layer-kernels-to-ukernel="cholesky-block=64" --canonicalize --cse | FileCheck %s
// RUN: not gptq-opt %s --gptq-layer-kernels-to-ukernel="cholesky-block=0" 2>&1 | FileCheck %s --check-prefix=BLOCK

// The CPU schedule of a layer: the factorization and quantize-and-compensate
// become the library's microkernel ops, with the data movement around them
// folded in as convert-gptq-to-linalg folds it: act-order's symmetric
// permutation of H into the factorization, the column permutation of W,
// its dead-input mask and the codes' inverse permutation into
// quantize-and-compensate. No gptq.permute, mask or kernel op is left.

// CHECK-LABEL: func.func @act_order
// CHECK-SAME: (%[[W:.*]]: tensor<?x?xf32>, %[[H:.*]]: tensor<?x?xf32>)
// CHECK: %[[PERM:.*]] = gptq.act_order %[[H]]
// CHECK: %[[N:.*]] = tensor.dim %[[H]], %c0
// CHECK: %[[E:.*]] = tensor.empty(%[[N]], %[[N]]) : tensor<?x?xf32>
// CHECK: %[[U:.*]], %[[OK:.*]] = gptq_ukernel.damped_cholesky ins(%[[H]] : tensor<?x?xf32>) permuted(%[[PERM]] : tensor<?xi64>) percdamp(%{{.*}}) outs(%[[E]] : tensor<?x?xf32>) {block = 64 : i64} -> tensor<?x?xf32>, i1
// CHECK: %[[COLS:.*]] = tensor.dim %[[W]], %c1
// CHECK: %[[G:.*]] = gptq.group_index %[[COLS]]
// CHECK: %[[ROWS:.*]] = tensor.dim %[[W]], %c0
// CHECK: %[[CODES:.*]] = tensor.empty(%[[ROWS]], %[[COLS]]) : tensor<?x?xi8>
// CHECK: %[[GROUPS:.*]] = arith.ceildivsi %[[COLS]], %c32
// CHECK: %[[S:.*]] = tensor.empty(%[[ROWS]], %[[GROUPS]]) : tensor<?x?xf32>
// CHECK: %[[R:.*]]:3, %[[LOSS:.*]] = gptq_ukernel.quantize_blocks ins(%[[W]], %[[U]] : tensor<?x?xf32>, tensor<?x?xf32>) permuted(%[[PERM]] : tensor<?xi64>) masked(%[[H]] : tensor<?x?xf32>) outs(%[[CODES]], %[[S]], %[[S]] : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>) {config = #gptq.config<group_size = 32, act_order = true>, permute_codes}
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[G]], %[[LOSS]], %[[OK]]
// CHECK-NOT: gptq.permute
// CHECK-NOT: gptq.mask_dead_inputs
// CHECK-NOT: gptq.damped_cholesky
// CHECK-NOT: gptq.quantize_blocks
func.func @act_order(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>) -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>, f32, i1) {
  %c, %s, %z, %g, %loss, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<bits = 4, group_size = 32, act_order = true>} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32>
  return %c, %s, %z, %g, %loss, %ok : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>, f32, i1
}

// Per-row grids are fixed: the kernel takes them with the group map, and
// its outs have their shape. Without act-order nothing is permuted.
// CHECK-LABEL: func.func @per_row
// CHECK: %[[SCALES:.*]], %[[ZEROS:.*]] = gptq.grid %{{.*}} {config = #gptq.config<bits = 3, sym = true>}
// CHECK: gptq_ukernel.damped_cholesky ins(%{{.*}} : tensor<64x64xf32>) percdamp(%{{.*}}) outs(%{{.*}} : tensor<64x64xf32>) {block = 64 : i64} -> tensor<64x64xf32>, i1
// CHECK: %[[MAP:.*]] = gptq.group_index
// CHECK: gptq_ukernel.quantize_blocks ins(%{{.*}}, %{{.*}} : tensor<8x64xf32>, tensor<64x64xf32>) grids(%[[SCALES]], %[[ZEROS]], %[[MAP]] : tensor<8x1xf32>, tensor<8x1xf32>, tensor<64xi32>) masked(%{{.*}} : tensor<64x64xf32>) outs(%{{.*}}, %{{.*}}, %{{.*}} : tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>) {config = #gptq.config<bits = 3, sym = true>} -> tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>, f32
func.func @per_row(%w: tensor<8x64xf32>, %h: tensor<64x64xf32>) -> (tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>, tensor<64xi32>, f32, i1) {
  %c, %s, %z, %g, %loss, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<bits = 3, sym = true>} : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xi8>, tensor<8x1xf32>, tensor<64xi32>
  return %c, %s, %z, %g, %loss, %ok : tensor<8x64xi8>, tensor<8x1xf32>, tensor<8x1xf32>, tensor<64xi32>, f32, i1
}

// A run-time width goes to the grids and to the kernel.
// CHECK-LABEL: func.func @run_time_bits
// CHECK-SAME: (%{{.*}}: tensor<8x64xf32>, %{{.*}}: tensor<64x64xf32>, %[[B:.*]]: i64)
// CHECK: gptq.grid %{{.*}} bits(%[[B]]) {config = #gptq.config<sym = true>}
// CHECK: gptq_ukernel.quantize_blocks ins({{.*}}) grids({{.*}}) masked({{.*}}) bits(%[[B]]) outs({{.*}}) {config = #gptq.config<sym = true>}
func.func @run_time_bits(%w: tensor<8x64xf32>, %h: tensor<64x64xf32>, %b: i64) -> (tensor<8x64xi8>, tensor<8x1xf32>) {
  %c, %s, %z, %g, %loss, %ok = gptq.quantize_layer %w, %h bits(%b) {config = #gptq.config<sym = true>} : tensor<8x64xf32>, tensor<64x64xf32> -> tensor<8x64xi8>, tensor<8x1xf32>, tensor<64xi32>
  return %c, %s : tensor<8x64xi8>, tensor<8x1xf32>
}

// BLOCK: error: cholesky-block must be >= 1, found 0
