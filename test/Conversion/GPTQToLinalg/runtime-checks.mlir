// RUN: gptq-opt %s --split-input-file --gptq-insert-runtime-checks --canonicalize --cse | FileCheck %s

// Canonicalization and CSE only fold the constants and sizes the checks
// share.

// Every relation of dynamic sizes, then the range of the indices read.
// CHECK-LABEL: func.func @dequantize
// CHECK-SAME: (%[[C:.*]]: tensor<?x?xi8>, %[[S:.*]]: tensor<?x?xf32>, %[[Z:.*]]: tensor<?x?xf32>, %[[G:.*]]: tensor<?xi32>)
// CHECK-DAG: %[[TRUE:.*]] = arith.constant true
// CHECK-DAG: %[[CC:.*]] = tensor.dim %[[C]], %c1
// CHECK-DAG: %[[CR:.*]] = tensor.dim %[[C]], %c0
// CHECK: %[[SR:.*]] = tensor.dim %[[S]], %c0
// CHECK: %[[OK0:.*]] = arith.cmpi eq, %[[SR]], %[[CR]] : index
// CHECK: cf.assert %[[OK0]], "gptq.dequantize: expected scales rows to equal the code rows"
// CHECK: %[[ZR:.*]] = tensor.dim %[[Z]], %c0
// CHECK: %[[OK1:.*]] = arith.cmpi eq, %[[ZR]], %[[SR]] : index
// CHECK: cf.assert %[[OK1]], "gptq.dequantize: expected zeros rows to equal the scales rows"
// CHECK: %[[SC:.*]] = tensor.dim %[[S]], %c1
// CHECK: %[[ZC:.*]] = tensor.dim %[[Z]], %c1
// CHECK: %[[OK2:.*]] = arith.cmpi eq, %[[ZC]], %[[SC]] : index
// CHECK: cf.assert %[[OK2]], "gptq.dequantize: expected zeros columns to equal the scales columns"
// CHECK: %[[GL:.*]] = tensor.dim %[[G]], %c0
// CHECK: %[[OK3:.*]] = arith.cmpi eq, %[[GL]], %[[CC]] : index
// CHECK: cf.assert %[[OK3]], "gptq.dequantize: expected g_idx length to equal the code columns"
// CHECK: %[[GROUPS:.*]] = arith.index_cast %[[SC]] : index to i64
// CHECK: %[[IN:.*]] = scf.for %[[J:.*]] = %c0 to %[[GL]] step %c1 iter_args(%[[ACC:.*]] = %[[TRUE]]) -> (i1) {
// CHECK:   %[[E:.*]] = tensor.extract %[[G]][%[[J]]] : tensor<?xi32>
// CHECK:   %[[E64:.*]] = arith.extsi %[[E]] : i32 to i64
// CHECK:   %[[LT:.*]] = arith.cmpi ult, %[[E64]], %[[GROUPS]] : i64
// CHECK:   %[[A:.*]] = arith.andi %[[ACC]], %[[LT]] : i1
// CHECK:   scf.yield %[[A]] : i1
// CHECK: cf.assert %[[IN]], "gptq.dequantize: g_idx entry out of range [0, groups)"
// CHECK: gptq.dequantize %[[C]], %[[S]], %[[Z]], %[[G]]
func.func @dequantize(%c: tensor<?x?xi8>, %s: tensor<?x?xf32>, %z: tensor<?x?xf32>, %g: tensor<?xi32>) -> tensor<?x?xf32> {
  %w = gptq.dequantize %c, %s, %z, %g : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32> -> tensor<?x?xf32>
  return %w : tensor<?x?xf32>
}

// -----

// Static sizes are the verifier's; the indices are still checked.
// CHECK-LABEL: func.func @dequantize_static
// CHECK-NOT: expected
// CHECK: %[[IN:.*]] = scf.for
// CHECK: arith.cmpi ult, %{{.*}}, %c2_i64 : i64
// CHECK: cf.assert %[[IN]], "gptq.dequantize: g_idx entry out of range [0, groups)"
// CHECK-NOT: cf.assert
func.func @dequantize_static(%c: tensor<4x8xi8>, %s: tensor<4x2xf32>, %z: tensor<4x2xf32>, %g: tensor<8xi32>) -> tensor<4x8xf32> {
  %w = gptq.dequantize %c, %s, %z, %g : tensor<4x8xi8>, tensor<4x2xf32>, tensor<8xi32> -> tensor<4x8xf32>
  return %w : tensor<4x8xf32>
}

// -----

// A permutation from the caller is checked in one pass that marks the
// entries seen; one made by gptq.act_order is not checked again.
// CHECK-LABEL: func.func @permute
// CHECK-SAME: (%[[W:.*]]: tensor<?x?xf32>, %[[H:.*]]: tensor<?x?xf32>, %[[P:.*]]: tensor<?xi64>)
// CHECK: %[[N:.*]] = tensor.dim %[[P]], %c0
// CHECK: %[[WC:.*]] = tensor.dim %[[W]], %c1
// CHECK: %[[OK:.*]] = arith.cmpi eq, %[[WC]], %[[N]] : index
// CHECK: cf.assert %[[OK]], "gptq.permute: expected the size of permuted dimension 1 to equal the permutation length"
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?xi8>
// CHECK: %[[SEEN0:.*]] = linalg.fill ins(%c0_i8 : i8) outs(%[[E]] : tensor<?xi8>)
// CHECK: %[[N64:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK: %[[R:.*]]:3 = scf.for %[[J:.*]] = %c0 to %[[N]] step %c1 iter_args(%[[SEEN:.*]] = %[[SEEN0]], %[[INR:.*]] = %true, %[[DIS:.*]] = %true)
// CHECK:   %[[X:.*]] = tensor.extract %[[P]][%[[J]]] : tensor<?xi64>
// CHECK:   %[[IN:.*]] = arith.cmpi ult, %[[X]], %[[N64]] : i64
// CHECK:   %[[AT0:.*]] = arith.select %[[IN]], %[[X]], %c0_i64 : i64
// CHECK:   %[[AT:.*]] = arith.index_cast %[[AT0]] : i64 to index
// CHECK:   %[[MARK:.*]] = tensor.extract %[[SEEN]][%[[AT]]] : tensor<?xi8>
// CHECK:   %[[FRESH:.*]] = arith.cmpi eq, %[[MARK]], %c0_i8 : i8
// CHECK:   %[[NEW:.*]] = arith.select %[[IN]], %c1_i8, %[[MARK]] : i8
// CHECK:   %[[SEEN2:.*]] = tensor.insert %[[NEW]] into %[[SEEN]][%[[AT]]] : tensor<?xi8>
// CHECK:   %[[INR2:.*]] = arith.andi %[[INR]], %[[IN]] : i1
// CHECK:   %[[OUT:.*]] = arith.cmpi uge, %[[X]], %[[N64]] : i64
// CHECK:   %[[OKJ:.*]] = arith.ori %[[FRESH]], %[[OUT]] : i1
// CHECK:   %[[DIS2:.*]] = arith.andi %[[DIS]], %[[OKJ]] : i1
// CHECK:   scf.yield %[[SEEN2]], %[[INR2]], %[[DIS2]]
// CHECK: cf.assert %[[R]]#1, "gptq.permute: permutation entry out of range [0, n)"
// CHECK: cf.assert %[[R]]#2, "gptq.permute: permutation entry repeated"
// CHECK: gptq.permute %[[W]] by %[[P]] dims [1]
// CHECK: cf.assert %{{.*}}, "gptq.act_order: expected a square hessian"
// CHECK: %[[ORDER:.*]] = gptq.act_order %[[H]]
// CHECK: cf.assert %{{.*}}, "gptq.permute: expected the size of permuted dimension 0 to equal the permutation length"
// CHECK: cf.assert %{{.*}}, "gptq.permute: expected the size of permuted dimension 1 to equal the permutation length"
// CHECK-NOT: scf.for
// CHECK: gptq.permute %[[H]] by %[[ORDER]] dims [0, 1]
func.func @permute(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>, %p: tensor<?xi64>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %a = gptq.permute %w by %p dims [1] : tensor<?x?xf32>, tensor<?xi64>
  %perm = gptq.act_order %h : tensor<?x?xf32> -> tensor<?xi64>
  %b = gptq.permute %h by %perm dims [0, 1] : tensor<?x?xf32>, tensor<?xi64>
  return %a, %b : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// The column count is not negative, and ceil(n * bits / 32) is the words per
// row, computed only when n * bits cannot overflow.
// CHECK-LABEL: func.func @unpack
// CHECK-SAME: (%[[P:.*]]: tensor<?x?xi32>, %[[N:.*]]: index)
// CHECK: %[[NN:.*]] = arith.cmpi sge, %[[N]], %c0 : index
// CHECK: cf.assert %[[NN]], "gptq.unpack: expected a non-negative column count"
// CHECK: %[[WORDS:.*]] = tensor.dim %[[P]], %c1
// CHECK: %[[BITS:.*]] = arith.muli %[[WORDS]], %c32 : index
// CHECK: %[[MOST:.*]] = arith.divui %[[BITS]], %c3 : index
// CHECK: %[[FITS:.*]] = arith.cmpi ule, %[[N]], %[[MOST]] : index
// CHECK: %[[NB:.*]] = arith.muli %[[N]], %c3 : index
// CHECK: %[[NEED:.*]] = arith.ceildivui %[[NB]], %c32 : index
// CHECK: %[[SAME:.*]] = arith.cmpi eq, %[[NEED]], %[[WORDS]] : index
// CHECK: %[[OK:.*]] = arith.andi %[[FITS]], %[[SAME]] : i1
// CHECK: cf.assert %[[OK]], "gptq.unpack: expected the packed words per row to equal ceil(columns * bits / 32)"
func.func @unpack(%p: tensor<?x?xi32>, %n: index) -> tensor<?x?xi8> {
  %c = gptq.unpack %p columns %n bits 3 : tensor<?x?xi32> -> tensor<?x?xi8>
  return %c : tensor<?x?xi8>
}

// -----

// Checked before decomposition, so that failures name gptq.quantize_layer; a
// static result size is checked against the operand it comes from.
// CHECK-LABEL: func.func @quantize_layer
// CHECK-SAME: (%[[W:.*]]: tensor<?x?xf32>, %[[H:.*]]: tensor<?x?xf32>)
// CHECK: cf.assert %{{.*}}, "gptq.quantize_layer: expected a square hessian"
// CHECK: cf.assert %{{.*}}, "gptq.quantize_layer: expected the weight columns to equal the hessian size"
// CHECK: %[[ROWS:.*]] = tensor.dim %[[W]], %c0
// CHECK: %[[OK:.*]] = arith.cmpi eq, %[[ROWS]], %c4 : index
// CHECK: cf.assert %[[OK]], "gptq.quantize_layer: expected scales rows to equal the weight rows"
// CHECK-NEXT: gptq.quantize_layer
func.func @quantize_layer(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>) -> (tensor<?x?xi8>, tensor<4x?xf32>, tensor<?xi32>) {
  %codes, %s, %z, %g, %loss, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<group_size = 128>} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<4x?xf32>, tensor<?xi32>
  return %codes, %s, %g : tensor<?x?xi8>, tensor<4x?xf32>, tensor<?xi32>
}

// -----

// A run-time width lies in [2, 8].
// CHECK-LABEL: func.func @run_time_bits
// CHECK-SAME: %[[B:[^:]*]]: i64)
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[EIGHT:.*]] = arith.constant 8 : i64
// CHECK: %[[GE:.*]] = arith.cmpi sge, %[[B]], %[[TWO]] : i64
// CHECK: %[[LE:.*]] = arith.cmpi sle, %[[B]], %[[EIGHT]] : i64
// CHECK: %[[IN:.*]] = arith.andi %[[GE]], %[[LE]] : i1
// CHECK: cf.assert %[[IN]], "gptq.grid: expected bits in [2, 8]"
// CHECK-NEXT: gptq.grid %{{.*}} bits(%[[B]])
func.func @run_time_bits(%w: tensor<8x16xf32>, %b: i64) -> tensor<8x1xf32> {
  %s, %z = gptq.grid %w bits(%b) {config = #gptq.config<>} : tensor<8x16xf32> -> tensor<8x1xf32>
  return %s : tensor<8x1xf32>
}

// -----

// Static scales columns against the groups of dynamic weight columns.
// CHECK-LABEL: func.func @grid
// CHECK-SAME: (%[[W:.*]]: tensor<8x?xf32>)
// CHECK: %[[COLS:.*]] = tensor.dim %[[W]], %c1
// CHECK: %[[GROUPS:.*]] = arith.ceildivsi %[[COLS]], %c128 : index
// CHECK: %[[OK:.*]] = arith.cmpi eq, %[[GROUPS]], %c2 : index
// CHECK: cf.assert %[[OK]], "gptq.grid: expected scales columns to equal the number of groups"
// CHECK-NOT: cf.assert
func.func @grid(%w: tensor<8x?xf32>) -> tensor<8x2xf32> {
  %s, %z = gptq.grid %w {config = #gptq.config<group_size = 128>} : tensor<8x?xf32> -> tensor<8x2xf32>
  return %s : tensor<8x2xf32>
}

// -----

// A 3-D batch: its last dimension against the Hessian's.
// CHECK-LABEL: func.func @hessian
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x?xf32>, %[[H:.*]]: tensor<?x?xf32>
// CHECK-DAG: %[[HC:.*]] = tensor.dim %[[H]], %c1
// CHECK-DAG: %[[HR:.*]] = tensor.dim %[[H]], %c0
// CHECK: %[[SQ:.*]] = arith.cmpi eq, %[[HR]], %[[HC]] : index
// CHECK: cf.assert %[[SQ]], "gptq.hessian_accumulate: expected a square hessian"
// CHECK: %[[F:.*]] = tensor.dim %[[X]], %c2
// CHECK: %[[OK:.*]] = arith.cmpi eq, %[[F]], %[[HR]] : index
// CHECK: cf.assert %[[OK]], "gptq.hessian_accumulate: expected the input feature count to equal the hessian size"
func.func @hessian(%x: tensor<?x?x?xf32>, %h: tensor<?x?xf32>, %n: i64) -> tensor<?x?xf32> {
  %h1, %n1 = gptq.hessian_accumulate %x into %h count %n : tensor<?x?x?xf32>, tensor<?x?xf32>
  return %h1 : tensor<?x?xf32>
}

// -----

// group_index reads its permutation only for act-order with dynamic groups.
// CHECK-LABEL: func.func @group_index_static_groups
// CHECK: cf.assert %{{.*}}, "gptq.group_index: expected a non-negative column count"
// CHECK: cf.assert %{{.*}}, "gptq.group_index: expected the permutation length to equal the column count"
// CHECK-NOT: scf.for
// CHECK: gptq.group_index
func.func @group_index_static_groups(%n: index, %p: tensor<?xi64>) -> tensor<?xi32> {
  %g = gptq.group_index %n perm(%p : tensor<?xi64>) {config = #gptq.config<group_size = 2, act_order = true, static_groups = true>} : tensor<?xi32>
  return %g : tensor<?xi32>
}

// -----

// quantize_blocks' verifier does not compare zeros with scales: static
// sizes that differ fail at run time.
// CHECK-LABEL: func.func @quantize_blocks_zeros
// CHECK: cf.assert %false, "gptq.quantize_blocks: expected zeros columns to equal the scales columns"
// CHECK-NOT: zeros rows
func.func @quantize_blocks_zeros(%w: tensor<4x5xf32>, %u: tensor<5x5xf32>, %s: tensor<4x2xf32>, %z: tensor<4x1xf32>, %g: tensor<5xi32>) -> tensor<4x5xi8> {
  %codes, %s1, %z1, %loss = gptq.quantize_blocks %w, %u grid(%s, %z, %g : tensor<4x2xf32>, tensor<4x1xf32>, tensor<5xi32>) {config = #gptq.config<group_size = 2, static_groups = true>} : tensor<4x5xf32>, tensor<5x5xf32> -> tensor<4x5xi8>, tensor<4x2xf32>
  return %codes : tensor<4x5xi8>
}

// -----

// Fully static ops need no check.
// CHECK-LABEL: func.func @static
// CHECK-NOT: cf.assert
func.func @static(%w: tensor<4x8xf32>, %h: tensor<8x8xf32>, %x: tensor<3x8xf32>, %n: i64) -> (tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x2xf32>) {
  %m = gptq.mask_dead_inputs %w, %h : tensor<4x8xf32>, tensor<8x8xf32>
  %h1, %n1 = gptq.hessian_accumulate %x into %h count %n : tensor<3x8xf32>, tensor<8x8xf32>
  %s, %z = gptq.grid %w {config = #gptq.config<group_size = 4>} : tensor<4x8xf32> -> tensor<4x2xf32>
  return %m, %h1, %s : tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x2xf32>
}
