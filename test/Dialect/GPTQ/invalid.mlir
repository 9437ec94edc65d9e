// RUN: gptq-opt %s -split-input-file -verify-diagnostics

// Every verifier message of GPTQOps.cpp, and the type constraints of the
// ODS definitions.

//===----------------------------------------------------------------------===//
// gptq.hessian_accumulate
//===----------------------------------------------------------------------===//

func.func @hessian_accumulate_not_square(%x: tensor<8x64xf32>, %h: tensor<64x32xf32>, %n: i64) {
  // expected-error @below {{'gptq.hessian_accumulate' op expected hessian column count (square matrix) to be 64, found 32}}
  %h1, %n1 = gptq.hessian_accumulate %x into %h count %n : tensor<8x64xf32>, tensor<64x32xf32>
  return
}

// -----

func.func @hessian_accumulate_features(%x: tensor<8x16x32xf32>, %h: tensor<64x64xf32>, %n: i64) {
  // expected-error @below {{expected input feature count (hessian size) to be 64, found 32}}
  %h1, %n1 = gptq.hessian_accumulate %x into %h count %n : tensor<8x16x32xf32>, tensor<64x64xf32>
  return
}

// -----

func.func @hessian_accumulate_features_2d(%x: tensor<16x?xf32>, %h: tensor<?x8xf32>, %n: i64) {
  // The hessian size is known from its columns only: not checked.
  %h1, %n1 = gptq.hessian_accumulate %x into %h count %n : tensor<16x?xf32>, tensor<?x8xf32>
  %x2 = tensor.empty() : tensor<16x4xf32>
  %h2 = tensor.empty() : tensor<8x8xf32>
  // expected-error @below {{expected input feature count (hessian size) to be 8, found 4}}
  %h3, %n3 = gptq.hessian_accumulate %x2 into %h2 count %n : tensor<16x4xf32>, tensor<8x8xf32>
  return
}

// -----

func.func @hessian_accumulate_rank(%x: tensor<2x8x16x32xf32>, %h: tensor<32x32xf32>, %n: i64) {
  // expected-error @below {{operand #0 must be 2D/3D tensor of 32-bit float values, but got 'tensor<2x8x16x32xf32>'}}
  %h1, %n1 = gptq.hessian_accumulate %x into %h count %n : tensor<2x8x16x32xf32>, tensor<32x32xf32>
  return
}

// -----

func.func @hessian_accumulate_f16(%x: tensor<8x32xf16>, %h: tensor<32x32xf32>, %n: i64) {
  // expected-error @below {{operand #0 must be 2D/3D tensor of 32-bit float values, but got 'tensor<8x32xf16>'}}
  %h1, %n1 = gptq.hessian_accumulate %x into %h count %n : tensor<8x32xf16>, tensor<32x32xf32>
  return
}

// -----

func.func @hessian_accumulate_count_i32(%x: tensor<8x32xf32>, %h: tensor<32x32xf32>, %n: i32) {
  // expected-error @below {{operand #2 must be 64-bit signless integer, but got 'i32'}}
  %h1, %n1 = "gptq.hessian_accumulate"(%x, %h, %n) : (tensor<8x32xf32>, tensor<32x32xf32>, i32) -> (tensor<32x32xf32>, i64)
  return
}

// -----

func.func @hessian_accumulate_result_type(%x: tensor<8x32xf32>, %h: tensor<32x32xf32>, %n: i64) {
  // expected-error @below {{failed to verify that all of {hessian, result} have same type}}
  %h1, %n1 = "gptq.hessian_accumulate"(%x, %h, %n) : (tensor<8x32xf32>, tensor<32x32xf32>, i64) -> (tensor<?x?xf32>, i64)
  return
}

// -----

//===----------------------------------------------------------------------===//
// gptq.damped_cholesky
//===----------------------------------------------------------------------===//

func.func @damped_cholesky_not_square(%h: tensor<4x5xf32>, %p: f32) {
  // expected-error @below {{'gptq.damped_cholesky' op expected hessian column count (square matrix) to be 4, found 5}}
  %u, %ok = gptq.damped_cholesky %h percdamp(%p) : tensor<4x5xf32>
  return
}

// -----

func.func @damped_cholesky_f64(%h: tensor<4x4xf64>, %p: f32) {
  // expected-error @below {{operand #0 must be 2D tensor of 32-bit float values, but got 'tensor<4x4xf64>'}}
  %u, %ok = gptq.damped_cholesky %h percdamp(%p) : tensor<4x4xf64>
  return
}

// -----

func.func @damped_cholesky_percdamp_f64(%h: tensor<4x4xf32>, %p: f64) {
  // expected-error @below {{operand #1 must be 32-bit float, but got 'f64'}}
  %u, %ok = "gptq.damped_cholesky"(%h, %p) : (tensor<4x4xf32>, f64) -> (tensor<4x4xf32>, i1)
  return
}

// -----

func.func @damped_cholesky_ok_i8(%h: tensor<4x4xf32>, %p: f32) {
  // expected-error @below {{result #1 must be 1-bit signless integer, but got 'i8'}}
  %u, %ok = "gptq.damped_cholesky"(%h, %p) : (tensor<4x4xf32>, f32) -> (tensor<4x4xf32>, i8)
  return
}

// -----

//===----------------------------------------------------------------------===//
// gptq.act_order
//===----------------------------------------------------------------------===//

func.func @act_order_not_square(%h: tensor<8x?xf32>) {
  // The square check passes on a dynamic column count; this one is static.
  %p = gptq.act_order %h : tensor<8x?xf32> -> tensor<8xi64>
  %h2 = tensor.empty() : tensor<8x7xf32>
  // expected-error @below {{'gptq.act_order' op expected hessian column count (square matrix) to be 8, found 7}}
  %p2 = gptq.act_order %h2 : tensor<8x7xf32> -> tensor<8xi64>
  return
}

// -----

func.func @act_order_length(%h: tensor<8x8xf32>) {
  // expected-error @below {{'gptq.act_order' op expected permutation length (hessian size) to be 8, found 9}}
  %p = gptq.act_order %h : tensor<8x8xf32> -> tensor<9xi64>
  return
}

// -----

func.func @act_order_i32(%h: tensor<8x8xf32>) {
  // expected-error @below {{result #0 must be 1D tensor of 64-bit signless integer values, but got 'tensor<8xi32>'}}
  %p = gptq.act_order %h : tensor<8x8xf32> -> tensor<8xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// gptq.permute
//===----------------------------------------------------------------------===//

func.func @permute_no_dims(%w: tensor<4x8xf32>, %p: tensor<8xi64>) {
  // expected-error @below {{'gptq.permute' op expected at least one dimension to permute}}
  %r = gptq.permute %w by %p dims [] : tensor<4x8xf32>, tensor<8xi64>
  return
}

// -----

func.func @permute_dim_too_large(%w: tensor<4x8xf32>, %p: tensor<8xi64>) {
  // expected-error @below {{'gptq.permute' op expected dimensions in [0, 2), found 2}}
  %r = gptq.permute %w by %p dims [2] : tensor<4x8xf32>, tensor<8xi64>
  return
}

// -----

func.func @permute_dim_negative(%w: tensor<4x8xf32>, %p: tensor<8xi64>) {
  // expected-error @below {{'gptq.permute' op expected dimensions in [0, 2), found -1}}
  %r = gptq.permute %w by %p dims [-1] : tensor<4x8xf32>, tensor<8xi64>
  return
}

// -----

func.func @permute_rank0(%w: tensor<f32>, %p: tensor<1xi64>) {
  // expected-error @below {{'gptq.permute' op expected dimensions in [0, 0), found 0}}
  %r = gptq.permute %w by %p dims [0] : tensor<f32>, tensor<1xi64>
  return
}

// -----

func.func @permute_duplicate(%h: tensor<8x8xf32>, %p: tensor<8xi64>) {
  // expected-error @below {{'gptq.permute' op expected distinct dimensions, found 1 twice}}
  %r = gptq.permute %h by %p dims [1, 0, 1] : tensor<8x8xf32>, tensor<8xi64>
  return
}

// -----

func.func @permute_size(%w: tensor<4x8xf32>, %p: tensor<4xi64>) {
  // Dimension 0 has 4 entries, dimension 1 does not.
  // expected-error @below {{'gptq.permute' op expected size of permuted dimension 1 (permutation length) to be 4, found 8}}
  %r = gptq.permute %w by %p dims [0, 1] : tensor<4x8xf32>, tensor<4xi64>
  return
}

// -----

func.func @permute_perm_i32(%w: tensor<4x8xf32>, %p: tensor<8xi32>) {
  // expected-error @below {{operand #1 must be 1D tensor of 64-bit signless integer values, but got 'tensor<8xi32>'}}
  %r = gptq.permute %w by %p dims [1] : tensor<4x8xf32>, tensor<8xi32>
  return
}

// -----

func.func @permute_unranked(%w: tensor<*xf32>, %p: tensor<8xi64>) {
  // expected-error @below {{custom op 'gptq.permute' invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %r = gptq.permute %w by %p dims [1] : tensor<*xf32>, tensor<8xi64>
  return
}

// -----

func.func @permute_unranked_generic(%w: tensor<*xf32>, %p: tensor<8xi64>) {
  // expected-error @below {{operand #0 must be ranked tensor of any type values, but got 'tensor<*xf32>'}}
  %r = "gptq.permute"(%w, %p) <{dims = array<i64: 1>}> : (tensor<*xf32>, tensor<8xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @permute_result_type(%w: tensor<4x8xf32>, %p: tensor<8xi64>) {
  // expected-error @below {{failed to verify that all of {source, result} have same type}}
  %r = "gptq.permute"(%w, %p) <{dims = array<i64: 1>}> : (tensor<4x8xf32>, tensor<8xi64>) -> tensor<4x?xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// gptq.mask_dead_inputs
//===----------------------------------------------------------------------===//

func.func @mask_not_square(%w: tensor<4x8xf32>, %h: tensor<8x9xf32>) {
  // expected-error @below {{'gptq.mask_dead_inputs' op expected hessian column count (square matrix) to be 8, found 9}}
  %m = gptq.mask_dead_inputs %w, %h : tensor<4x8xf32>, tensor<8x9xf32>
  return
}

// -----

func.func @mask_columns(%w: tensor<4x8xf32>, %h: tensor<16x16xf32>) {
  // expected-error @below {{'gptq.mask_dead_inputs' op expected weight columns (hessian size) to be 16, found 8}}
  %m = gptq.mask_dead_inputs %w, %h : tensor<4x8xf32>, tensor<16x16xf32>
  return
}

// -----

func.func @mask_f16(%w: tensor<4x8xf16>, %h: tensor<8x8xf32>) {
  // expected-error @below {{operand #0 must be 2D tensor of 32-bit float values, but got 'tensor<4x8xf16>'}}
  %m = gptq.mask_dead_inputs %w, %h : tensor<4x8xf16>, tensor<8x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// gptq.grid
//===----------------------------------------------------------------------===//

func.func @grid_rows(%w: tensor<4x8xf32>) {
  // expected-error @below {{'gptq.grid' op expected scales rows to be 4, found 5}}
  %s, %z = gptq.grid %w {config = #gptq.config<>} : tensor<4x8xf32> -> tensor<5x1xf32>
  return
}

// -----

func.func @grid_per_row_columns(%w: tensor<4x?xf32>) {
  // One grid per row, whatever the column count.
  // expected-error @below {{'gptq.grid' op expected scales columns (one per group) to be 1, found 2}}
  %s, %z = gptq.grid %w {config = #gptq.config<>} : tensor<4x?xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @grid_group_columns(%w: tensor<4x65xf32>) {
  // 65 columns in groups of 32: 3 groups, the last of one column.
  // expected-error @below {{'gptq.grid' op expected scales columns (one per group) to be 3, found 2}}
  %s, %z = gptq.grid %w {config = #gptq.config<group_size = 32>} : tensor<4x65xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @grid_no_config(%w: tensor<4x8xf32>) {
  // expected-error @below {{'gptq.grid' op requires attribute 'config'}}
  %s, %z = gptq.grid %w : tensor<4x8xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @grid_config_not_config(%w: tensor<4x8xf32>) {
  // expected-error @below {{'gptq.grid' op attribute 'config' failed to satisfy constraint}}
  %s, %z = gptq.grid %w {config = 4 : i64} : tensor<4x8xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @grid_f16(%w: tensor<4x8xf16>) {
  // expected-error @below {{operand #0 must be 2D tensor of 32-bit float values, but got 'tensor<4x8xf16>'}}
  %s, %z = gptq.grid %w {config = #gptq.config<>} : tensor<4x8xf16> -> tensor<4x1xf32>
  return
}

// -----

func.func @grid_zeros_type(%w: tensor<4x8xf32>) {
  // expected-error @below {{failed to verify that all of {scales, zeros} have same type}}
  %s, %z = "gptq.grid"(%w) <{config = #gptq.config<>}> : (tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<?x1xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// gptq.quantize_blocks
//===----------------------------------------------------------------------===//

func.func @quantize_blocks_factor_square(%w: tensor<4x8xf32>, %u: tensor<8x7xf32>) {
  // expected-error @below {{'gptq.quantize_blocks' op expected factor column count (square matrix) to be 8, found 7}}
  %c, %s, %z, %l = gptq.quantize_blocks %w, %u {config = #gptq.config<group_size = 4>} : tensor<4x8xf32>, tensor<8x7xf32> -> tensor<4x8xi8>, tensor<4x2xf32>
  return
}

// -----

func.func @quantize_blocks_factor_size(%w: tensor<4x8xf32>, %u: tensor<16x16xf32>) {
  // expected-error @below {{'gptq.quantize_blocks' op expected weight columns (factor size) to be 16, found 8}}
  %c, %s, %z, %l = gptq.quantize_blocks %w, %u {config = #gptq.config<group_size = 4>} : tensor<4x8xf32>, tensor<16x16xf32> -> tensor<4x8xi8>, tensor<4x2xf32>
  return
}

// -----

func.func @quantize_blocks_codes_rows(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>) {
  // expected-error @below {{'gptq.quantize_blocks' op expected codes rows to be 4, found 3}}
  %c, %s, %z, %l = gptq.quantize_blocks %w, %u {config = #gptq.config<group_size = 4>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<3x8xi8>, tensor<4x2xf32>
  return
}

// -----

func.func @quantize_blocks_codes_columns(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>) {
  // expected-error @below {{'gptq.quantize_blocks' op expected codes columns to be 8, found 9}}
  %c, %s, %z, %l = gptq.quantize_blocks %w, %u {config = #gptq.config<group_size = 4>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x9xi8>, tensor<4x2xf32>
  return
}

// -----

func.func @quantize_blocks_partial_grid(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>, %s: tensor<4x1xf32>) {
  // expected-error @below {{'gptq.quantize_blocks' op expected scales, zeros and group map together}}
  %c, %s1, %z1, %l = "gptq.quantize_blocks"(%w, %u, %s) <{config = #gptq.config<>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x1xf32>) -> (tensor<4x8xi8>, tensor<4x1xf32>, tensor<4x1xf32>, f32)
  return
}

// -----

func.func @quantize_blocks_no_group_map(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>, %s: tensor<4x1xf32>) {
  // expected-error @below {{'gptq.quantize_blocks' op expected scales, zeros and group map together}}
  %c, %s1, %z1, %l = "gptq.quantize_blocks"(%w, %u, %s, %s) <{config = #gptq.config<>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>}> : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>) -> (tensor<4x8xi8>, tensor<4x1xf32>, tensor<4x1xf32>, f32)
  return
}

// -----

func.func @quantize_blocks_bad_segments(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>) {
  // expected-error @below {{'gptq.quantize_blocks' op operand count (2) does not match with the total size (3) specified in attribute 'operandSegmentSizes'}}
  %c, %s1, %z1, %l = "gptq.quantize_blocks"(%w, %u) <{config = #gptq.config<group_size = 4>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>}> : (tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xi8>, tensor<4x2xf32>, tensor<4x2xf32>, f32)
  return
}

// -----

func.func @quantize_blocks_per_row_needs_grid(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>) {
  // expected-error @below {{'gptq.quantize_blocks' op expected grid operands: grids are computed in the loop only for dynamic groups (group_size >= 1, no static_groups)}}
  %c, %s, %z, %l = gptq.quantize_blocks %w, %u {config = #gptq.config<>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>
  return
}

// -----

func.func @quantize_blocks_static_needs_grid(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>) {
  // expected-error @below {{'gptq.quantize_blocks' op expected grid operands: grids are computed in the loop only for dynamic groups}}
  %c, %s, %z, %l = gptq.quantize_blocks %w, %u {config = #gptq.config<group_size = 4, static_groups = true>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<4x2xf32>
  return
}

// -----

func.func @quantize_blocks_result_scales_rows(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>) {
  // expected-error @below {{'gptq.quantize_blocks' op expected result scales rows to be 4, found 2}}
  %c, %s, %z, %l = gptq.quantize_blocks %w, %u {config = #gptq.config<group_size = 4>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<2x2xf32>
  return
}

// -----

func.func @quantize_blocks_result_scales_columns(%w: tensor<4x9xf32>, %u: tensor<9x9xf32>) {
  // 9 columns in groups of 4: 3 groups.
  // expected-error @below {{'gptq.quantize_blocks' op expected result scales columns (one per group) to be 3, found 2}}
  %c, %s, %z, %l = gptq.quantize_blocks %w, %u {config = #gptq.config<group_size = 4>} : tensor<4x9xf32>, tensor<9x9xf32> -> tensor<4x9xi8>, tensor<4x2xf32>
  return
}

// -----

func.func @quantize_blocks_result_scales_type(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>, %s: tensor<4x1xf32>, %g: tensor<8xi32>) {
  // expected-error @below {{'gptq.quantize_blocks' op expected result scales of type 'tensor<4x1xf32>', found 'tensor<?x1xf32>'}}
  %c, %s1, %z1, %l = gptq.quantize_blocks %w, %u grid(%s, %s, %g : tensor<4x1xf32>, tensor<4x1xf32>, tensor<8xi32>) {config = #gptq.config<>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<?x1xf32>
  return
}

// -----

func.func @quantize_blocks_scales_rows(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>, %s: tensor<3x1xf32>, %g: tensor<8xi32>) {
  // expected-error @below {{'gptq.quantize_blocks' op expected scales rows to be 4, found 3}}
  %c, %s1, %z1, %l = gptq.quantize_blocks %w, %u grid(%s, %s, %g : tensor<3x1xf32>, tensor<3x1xf32>, tensor<8xi32>) {config = #gptq.config<>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<3x1xf32>
  return
}

// -----

func.func @quantize_blocks_group_map_length(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>, %s: tensor<4x2xf32>, %g: tensor<7xi32>) {
  // expected-error @below {{'gptq.quantize_blocks' op expected group map length (weight columns) to be 8, found 7}}
  %c, %s1, %z1, %l = gptq.quantize_blocks %w, %u grid(%s, %s, %g : tensor<4x2xf32>, tensor<4x2xf32>, tensor<7xi32>) {config = #gptq.config<group_size = 4, static_groups = true>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<4x2xf32>
  return
}

// -----

func.func @quantize_blocks_codes_i32(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>) {
  // expected-error @below {{result #0 must be 2D tensor of 8-bit signless integer values, but got 'tensor<4x8xi32>'}}
  %c, %s, %z, %l = gptq.quantize_blocks %w, %u {config = #gptq.config<group_size = 4>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi32>, tensor<4x2xf32>
  return
}

// -----

func.func @quantize_blocks_group_map_i64(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>, %s: tensor<4x1xf32>, %g: tensor<8xi64>) {
  // expected-error @below {{operand #4 must be 1D tensor of 32-bit signless integer values, but got 'tensor<8xi64>'}}
  %c, %s1, %z1, %l = gptq.quantize_blocks %w, %u grid(%s, %s, %g : tensor<4x1xf32>, tensor<4x1xf32>, tensor<8xi64>) {config = #gptq.config<>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// gptq.group_index
//===----------------------------------------------------------------------===//

func.func @group_index_needs_perm(%n: index) {
  // expected-error @below {{'gptq.group_index' op expected a permutation for act-order with dynamic groups}}
  %g = gptq.group_index %n {config = #gptq.config<group_size = 8, act_order = true>} : tensor<?xi32>
  return
}

// -----

func.func @group_index_constant_columns() {
  %c = arith.constant 64 : index
  // expected-error @below {{'gptq.group_index' op expected g_idx length (columns) to be 64, found 32}}
  %g = gptq.group_index %c {config = #gptq.config<group_size = 8>} : tensor<32xi32>
  return
}

// -----

func.func @group_index_perm_length(%n: index, %p: tensor<16xi64>) {
  // expected-error @below {{'gptq.group_index' op expected permutation length (g_idx length) to be 32, found 16}}
  %g = gptq.group_index %n perm(%p : tensor<16xi64>) {config = #gptq.config<group_size = 8, act_order = true>} : tensor<32xi32>
  return
}

// -----

func.func @group_index_i64(%n: index) {
  // expected-error @below {{result #0 must be 1D tensor of 32-bit signless integer values, but got 'tensor<?xi64>'}}
  %g = gptq.group_index %n {config = #gptq.config<>} : tensor<?xi64>
  return
}

// -----

func.func @group_index_columns_i64(%n: i64) {
  // expected-error @below {{operand #0 must be index, but got 'i64'}}
  %g = "gptq.group_index"(%n) <{config = #gptq.config<>}> : (i64) -> tensor<?xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// gptq.dequantize
//===----------------------------------------------------------------------===//

func.func @dequantize_result_rows(%c: tensor<4x8xi8>, %s: tensor<4x1xf32>, %g: tensor<8xi32>) {
  // expected-error @below {{'gptq.dequantize' op expected result rows to be 4, found 5}}
  %w = gptq.dequantize %c, %s, %s, %g : tensor<4x8xi8>, tensor<4x1xf32>, tensor<8xi32> -> tensor<5x8xf32>
  return
}

// -----

func.func @dequantize_result_columns(%c: tensor<4x8xi8>, %s: tensor<4x1xf32>, %g: tensor<8xi32>) {
  // expected-error @below {{'gptq.dequantize' op expected result columns to be 8, found 16}}
  %w = gptq.dequantize %c, %s, %s, %g : tensor<4x8xi8>, tensor<4x1xf32>, tensor<8xi32> -> tensor<4x16xf32>
  return
}

// -----

func.func @dequantize_scales_rows(%c: tensor<4x8xi8>, %s: tensor<2x1xf32>, %g: tensor<8xi32>) {
  // expected-error @below {{'gptq.dequantize' op expected scales rows to be 4, found 2}}
  %w = gptq.dequantize %c, %s, %s, %g : tensor<4x8xi8>, tensor<2x1xf32>, tensor<8xi32> -> tensor<4x8xf32>
  return
}

// -----

func.func @dequantize_g_idx_length(%c: tensor<4x8xi8>, %s: tensor<4x1xf32>, %g: tensor<9xi32>) {
  // expected-error @below {{'gptq.dequantize' op expected g_idx length (code columns) to be 8, found 9}}
  %w = gptq.dequantize %c, %s, %s, %g : tensor<4x8xi8>, tensor<4x1xf32>, tensor<9xi32> -> tensor<4x8xf32>
  return
}

// -----

func.func @dequantize_codes_i32(%c: tensor<4x8xi32>, %s: tensor<4x1xf32>, %g: tensor<8xi32>) {
  // expected-error @below {{operand #0 must be 2D tensor of 8-bit signless integer values, but got 'tensor<4x8xi32>'}}
  %w = gptq.dequantize %c, %s, %s, %g : tensor<4x8xi32>, tensor<4x1xf32>, tensor<8xi32> -> tensor<4x8xf32>
  return
}

// -----

func.func @dequantize_codes_ui8(%c: tensor<4x8xui8>, %s: tensor<4x1xf32>, %g: tensor<8xi32>) {
  // expected-error @below {{operand #0 must be 2D tensor of 8-bit signless integer values, but got 'tensor<4x8xui8>'}}
  %w = gptq.dequantize %c, %s, %s, %g : tensor<4x8xui8>, tensor<4x1xf32>, tensor<8xi32> -> tensor<4x8xf32>
  return
}

// -----

func.func @dequantize_zeros_type(%c: tensor<4x8xi8>, %s: tensor<4x1xf32>, %z: tensor<4x?xf32>, %g: tensor<8xi32>) {
  // expected-error @below {{failed to verify that all of {scales, zeros} have same type}}
  %w = "gptq.dequantize"(%c, %s, %z, %g) : (tensor<4x8xi8>, tensor<4x1xf32>, tensor<4x?xf32>, tensor<8xi32>) -> tensor<4x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// gptq.pack and gptq.unpack
//===----------------------------------------------------------------------===//

func.func @pack_rows(%c: tensor<4x8xi8>) {
  // expected-error @below {{'gptq.pack' op expected packed rows to be 4, found 2}}
  %p = gptq.pack %c bits 4 : tensor<4x8xi8> -> tensor<2x1xi32>
  return
}

// -----

func.func @pack_words(%c: tensor<4x11xi8>) {
  // 11 codes of 3 bits are 33 bits: two words.
  // expected-error @below {{'gptq.pack' op expected packed words per row to be 2, found 1}}
  %p = gptq.pack %c bits 3 : tensor<4x11xi8> -> tensor<4x1xi32>
  return
}

// -----

func.func @pack_bits_zero(%c: tensor<4x8xi8>) {
  // expected-error @below {{'gptq.pack' op attribute 'bits' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1 whose maximum value is 8}}
  %p = gptq.pack %c bits 0 : tensor<4x8xi8> -> tensor<4x1xi32>
  return
}

// -----

func.func @pack_bits_nine(%c: tensor<4x8xi8>) {
  // expected-error @below {{'gptq.pack' op attribute 'bits' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1 whose maximum value is 8}}
  %p = gptq.pack %c bits 9 : tensor<4x8xi8> -> tensor<4x3xi32>
  return
}

// -----

func.func @pack_words_i64(%c: tensor<4x8xi8>) {
  // expected-error @below {{result #0 must be 2D tensor of 32-bit signless integer values, but got 'tensor<4x1xi64>'}}
  %p = gptq.pack %c bits 4 : tensor<4x8xi8> -> tensor<4x1xi64>
  return
}

// -----

func.func @unpack_rows(%p: tensor<4x1xi32>, %n: index) {
  // expected-error @below {{'gptq.unpack' op expected codes rows to be 4, found 3}}
  %c = gptq.unpack %p columns %n bits 4 : tensor<4x1xi32> -> tensor<3x8xi8>
  return
}

// -----

func.func @unpack_words(%p: tensor<4x7xi32>, %n: index) {
  // expected-error @below {{'gptq.unpack' op expected packed words per row to be 8, found 7}}
  %c = gptq.unpack %p columns %n bits 4 : tensor<4x7xi32> -> tensor<4x64xi8>
  return
}

// -----

func.func @unpack_constant_columns(%p: tensor<4x?xi32>) {
  %n = arith.constant 10 : index
  // expected-error @below {{'gptq.unpack' op expected codes columns to be 10, found 8}}
  %c = gptq.unpack %p columns %n bits 4 : tensor<4x?xi32> -> tensor<4x8xi8>
  return
}

// -----

func.func @unpack_bits_range(%p: tensor<4x1xi32>, %n: index) {
  // expected-error @below {{'gptq.unpack' op attribute 'bits' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1 whose maximum value is 8}}
  %c = gptq.unpack %p columns %n bits 16 : tensor<4x1xi32> -> tensor<4x2xi8>
  return
}

// -----

func.func @unpack_codes_i32(%p: tensor<4x1xi32>, %n: index) {
  // expected-error @below {{result #0 must be 2D tensor of 8-bit signless integer values, but got 'tensor<4x8xi32>'}}
  %c = gptq.unpack %p columns %n bits 4 : tensor<4x1xi32> -> tensor<4x8xi32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// gptq.quantize_layer
//===----------------------------------------------------------------------===//

func.func @quantize_layer_not_square(%w: tensor<4x8xf32>, %h: tensor<8x9xf32>) {
  // expected-error @below {{'gptq.quantize_layer' op expected hessian column count (square matrix) to be 8, found 9}}
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<>} : tensor<4x8xf32>, tensor<8x9xf32> -> tensor<4x8xi8>, tensor<4x1xf32>, tensor<8xi32>
  return
}

// -----

func.func @quantize_layer_hessian_size(%w: tensor<4x8xf32>, %h: tensor<16x16xf32>) {
  // expected-error @below {{'gptq.quantize_layer' op expected weight columns (hessian size) to be 16, found 8}}
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<>} : tensor<4x8xf32>, tensor<16x16xf32> -> tensor<4x8xi8>, tensor<4x1xf32>, tensor<8xi32>
  return
}

// -----

func.func @quantize_layer_codes_rows(%w: tensor<4x8xf32>, %h: tensor<8x8xf32>) {
  // expected-error @below {{'gptq.quantize_layer' op expected codes rows to be 4, found 8}}
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<8x8xi8>, tensor<4x1xf32>, tensor<8xi32>
  return
}

// -----

func.func @quantize_layer_codes_columns(%w: tensor<4x8xf32>, %h: tensor<8x8xf32>) {
  // expected-error @below {{'gptq.quantize_layer' op expected codes columns to be 8, found 4}}
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x4xi8>, tensor<4x1xf32>, tensor<8xi32>
  return
}

// -----

func.func @quantize_layer_scales_rows(%w: tensor<4x8xf32>, %h: tensor<8x8xf32>) {
  // expected-error @below {{'gptq.quantize_layer' op expected scales rows to be 4, found 1}}
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<1x1xf32>, tensor<8xi32>
  return
}

// -----

func.func @quantize_layer_scales_per_row(%w: tensor<4x8xf32>, %h: tensor<8x8xf32>) {
  // expected-error @below {{'gptq.quantize_layer' op expected scales columns (one per group) to be 1, found 8}}
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<4x8xf32>, tensor<8xi32>
  return
}

// -----

func.func @quantize_layer_scales_groups(%w: tensor<4x8xf32>, %h: tensor<8x8xf32>) {
  // expected-error @below {{'gptq.quantize_layer' op expected scales columns (one per group) to be 2, found 1}}
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<group_size = 4, act_order = true>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>, tensor<8xi32>
  return
}

// -----

func.func @quantize_layer_g_idx_length(%w: tensor<4x8xf32>, %h: tensor<8x8xf32>) {
  // expected-error @below {{'gptq.quantize_layer' op expected g_idx length (weight columns) to be 8, found 4}}
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>, tensor<4xi32>
  return
}

// -----

func.func @quantize_layer_f16_weight(%w: tensor<4x8xf16>, %h: tensor<8x8xf32>) {
  // expected-error @below {{operand #0 must be 2D tensor of 32-bit float values, but got 'tensor<4x8xf16>'}}
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<>} : tensor<4x8xf16>, tensor<8x8xf32> -> tensor<4x8xi8>, tensor<4x1xf32>, tensor<8xi32>
  return
}

// -----

func.func @quantize_layer_bf16_hessian(%w: tensor<4x8xf32>, %h: tensor<8x8xbf16>) {
  // expected-error @below {{operand #1 must be 2D tensor of 32-bit float values, but got 'tensor<8x8xbf16>'}}
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<>} : tensor<4x8xf32>, tensor<8x8xbf16> -> tensor<4x8xi8>, tensor<4x1xf32>, tensor<8xi32>
  return
}

// -----

func.func @quantize_layer_percdamp_f64(%w: tensor<4x8xf32>, %h: tensor<8x8xf32>, %p: f64) {
  // expected-error @below {{operand #2 must be 32-bit float, but got 'f64'}}
  %c, %s, %z, %g, %l, %ok = "gptq.quantize_layer"(%w, %h, %p) <{config = #gptq.config<>, operandSegmentSizes = array<i32: 1, 1, 1, 0>}> : (tensor<4x8xf32>, tensor<8x8xf32>, f64) -> (tensor<4x8xi8>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<8xi32>, f32, i1)
  return
}

// -----

func.func @quantize_layer_codes_i32(%w: tensor<4x8xf32>, %h: tensor<8x8xf32>) {
  // expected-error @below {{result #0 must be 2D tensor of 8-bit signless integer values, but got 'tensor<4x8xi32>'}}
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xi32>, tensor<4x1xf32>, tensor<8xi32>
  return
}

// -----

func.func @quantize_layer_result_count(%w: tensor<4x8xf32>, %h: tensor<8x8xf32>) {
  // expected-error @below {{'gptq.quantize_layer' op expected 6 results}}
  %c, %s, %z, %g, %l = "gptq.quantize_layer"(%w, %h) <{config = #gptq.config<>}> : (tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xi8>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<8xi32>, f32)
  return
}

// -----

func.func @group_index_negative_columns() {
  %c = arith.constant -5 : index
  // expected-error @below {{'gptq.group_index' op expected a non-negative column count, found -5}}
  %g = gptq.group_index %c {config = #gptq.config<group_size = 8>} : tensor<?xi32>
  return
}

// -----

func.func @unpack_negative_columns(%p: tensor<4x1xi32>) {
  %c = arith.constant -3 : index
  // expected-error @below {{'gptq.unpack' op expected a non-negative column count, found -3}}
  %q = gptq.unpack %p columns %c bits 4 : tensor<4x1xi32> -> tensor<4x?xi8>
  return
}

// -----

//===----------------------------------------------------------------------===//
// ODS constraints reachable only in the generic form: results whose types
// must equal an operand's, and required attributes.
//===----------------------------------------------------------------------===//
func.func @damped_cholesky_factor_type(%h: tensor<4x4xf32>, %p: f32) {
  // expected-error @below {{'gptq.damped_cholesky' op failed to verify that all of {hessian, factor} have same type}}
  %u, %ok = "gptq.damped_cholesky"(%h, %p) : (tensor<4x4xf32>, f32) -> (tensor<?x4xf32>, i1)
  return
}

// -----

func.func @mask_result_type(%w: tensor<2x4xf32>, %h: tensor<4x4xf32>) {
  // expected-error @below {{'gptq.mask_dead_inputs' op failed to verify that all of {weight, result} have same type}}
  %m = "gptq.mask_dead_inputs"(%w, %h) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x?xf32>
  return
}

// -----

func.func @quantize_blocks_grid_types(%w: tensor<4x8xf32>, %u: tensor<8x8xf32>) {
  // expected-error @below {{'gptq.quantize_blocks' op failed to verify that all of {outScales, outZeros} have same type}}
  %c, %s1, %z1, %l = "gptq.quantize_blocks"(%w, %u) <{config = #gptq.config<group_size = 4>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0>}> : (tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xi8>, tensor<4x2xf32>, tensor<4x?xf32>, f32)
  return
}

// -----

func.func @quantize_layer_grid_types(%w: tensor<4x8xf32>, %h: tensor<8x8xf32>) {
  // expected-error @below {{'gptq.quantize_layer' op failed to verify that all of {scales, zeros} have same type}}
  %c, %s, %z, %g, %l, %ok = "gptq.quantize_layer"(%w, %h) <{config = #gptq.config<>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xi8>, tensor<4x1xf32>, tensor<?x1xf32>, tensor<8xi32>, f32, i1)
  return
}

// -----

func.func @permute_without_dims(%w: tensor<4x8xf32>, %p: tensor<8xi64>) {
  // expected-error @below {{'gptq.permute' op requires attribute 'dims'}}
  %r = "gptq.permute"(%w, %p) : (tensor<4x8xf32>, tensor<8xi64>) -> tensor<4x8xf32>
  return
}

// -----

func.func @pack_without_bits(%c: tensor<2x8xi8>) {
  // expected-error @below {{'gptq.pack' op requires attribute 'bits'}}
  %p = "gptq.pack"(%c) : (tensor<2x8xi8>) -> tensor<2x1xi32>
  return
}

// -----

func.func @unpack_without_bits(%p: tensor<2x1xi32>, %n: index) {
  // expected-error @below {{'gptq.unpack' op requires attribute 'bits'}}
  %c = "gptq.unpack"(%p, %n) : (tensor<2x1xi32>, index) -> tensor<2x8xi8>
  return
}
