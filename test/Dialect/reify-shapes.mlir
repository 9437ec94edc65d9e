// RUN: gptq-opt %s --resolve-ranked-shaped-type-result-dims --canonicalize --cse | FileCheck %s

// The ops give the sizes of their results in terms of their operands
// (ReifyRankedShapedTypeOpInterface): tensor.dim of a result becomes a
// dimension of an operand, or arithmetic on one.

// CHECK-LABEL: func.func @same_shape
// CHECK-SAME: (%[[W:[a-z0-9]+]]: tensor<?x?xf32>, %[[H:[a-z0-9]+]]: tensor<?x?xf32>, %[[P:[a-z0-9]+]]: tensor<?xi64>
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[HC:.*]] = tensor.dim %[[H]], %[[C1]]
// CHECK-DAG: %[[HR:.*]] = tensor.dim %[[H]], %[[C0]]
// CHECK-DAG: %[[WR:.*]] = tensor.dim %[[W]], %[[C0]]
// CHECK-DAG: %[[WC:.*]] = tensor.dim %[[W]], %[[C1]]
// CHECK: return %[[HC]], %[[HR]], %[[HR]], %[[WR]], %[[WC]]
func.func @same_shape(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>, %p: tensor<?xi64>, %x: tensor<?x?xf32>, %n: i64, %d: f32)
    -> (index, index, index, index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %u, %ok = gptq.damped_cholesky %h percdamp(%d) : tensor<?x?xf32>
  %perm = gptq.act_order %h : tensor<?x?xf32> -> tensor<?xi64>
  %h1, %n1 = gptq.hessian_accumulate %x into %h count %n : tensor<?x?xf32>, tensor<?x?xf32>
  %wp = gptq.permute %w by %p dims [1] : tensor<?x?xf32>, tensor<?xi64>
  %m = gptq.mask_dead_inputs %wp, %h : tensor<?x?xf32>, tensor<?x?xf32>
  %a = tensor.dim %u, %c1 : tensor<?x?xf32>
  %b = tensor.dim %perm, %c0 : tensor<?xi64>
  %c = tensor.dim %h1, %c0 : tensor<?x?xf32>
  %e = tensor.dim %m, %c0 : tensor<?x?xf32>
  %f = tensor.dim %m, %c1 : tensor<?x?xf32>
  return %a, %b, %c, %e, %f : index, index, index, index, index
}

// Grids: rows x ceil(cols / group size), one column for group_size = -1;
// given grids come back with their own shape.
// CHECK-LABEL: func.func @grids
// CHECK-SAME: (%[[W:[a-z0-9]+]]: tensor<?x?xf32>, %[[U:[a-z0-9]+]]: tensor<?x?xf32>, %[[S:[a-z0-9]+]]: tensor<?x?xf32>
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[COLS:.*]] = tensor.dim %[[W]], %[[C1]]
// CHECK: %[[G:.*]] = arith.ceildivui %[[COLS]], %[[C128]]
// CHECK: %[[SC:.*]] = tensor.dim %[[S]], %[[C1]]
// CHECK: return %[[G]], %[[C1]], %[[G]], %[[SC]], %[[G]]
func.func @grids(%w: tensor<?x?xf32>, %u: tensor<?x?xf32>, %s0: tensor<?x?xf32>, %z0: tensor<?x?xf32>, %g0: tensor<?xi32>, %h: tensor<?x?xf32>)
    -> (index, index, index, index, index) {
  %c1 = arith.constant 1 : index
  %s, %z = gptq.grid %w {config = #gptq.config<group_size = 128>} : tensor<?x?xf32> -> tensor<?x?xf32>
  %sr, %zr = gptq.grid %w {config = #gptq.config<>} : tensor<?x?xf32> -> tensor<?x?xf32>
  %codes, %qs, %qz, %loss = gptq.quantize_blocks %w, %u {config = #gptq.config<group_size = 128>}
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>
  %codes2, %fs, %fz, %loss2 = gptq.quantize_blocks %w, %u grid(%s0, %z0, %g0 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>)
      {config = #gptq.config<group_size = 128, static_groups = true>}
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>
  %lc, %ls, %lz, %lg, %ll, %lok = gptq.quantize_layer %w, %h {config = #gptq.config<group_size = 128, act_order = true>}
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32>
  %a = tensor.dim %s, %c1 : tensor<?x?xf32>
  %b = tensor.dim %zr, %c1 : tensor<?x?xf32>
  %c = tensor.dim %qs, %c1 : tensor<?x?xf32>
  %d = tensor.dim %fz, %c1 : tensor<?x?xf32>
  %e = tensor.dim %ls, %c1 : tensor<?x?xf32>
  return %a, %b, %c, %d, %e : index, index, index, index, index
}

// Codes: pack gives ceil(cols * bits / 32) words per row, unpack and
// group_index their column-count operands, dequantize the codes' shape.
// CHECK-LABEL: func.func @codes
// CHECK-SAME: (%[[C:[a-z0-9]+]]: tensor<?x?xi8>, %[[P:[a-z0-9]+]]: tensor<?x?xi32>, %[[N:[a-z0-9]+]]: index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[COLS:.*]] = tensor.dim %[[C]], %[[C1]]
// CHECK: %[[BITS:.*]] = arith.muli %[[COLS]], %[[C3]]
// CHECK: %[[WORDS:.*]] = arith.ceildivui %[[BITS]], %[[C32]]
// CHECK: return %[[WORDS]], %[[N]], %[[N]], %[[COLS]]
func.func @codes(%codes: tensor<?x?xi8>, %packed: tensor<?x?xi32>, %n: index, %s: tensor<?x?xf32>, %z: tensor<?x?xf32>, %g: tensor<?xi32>)
    -> (index, index, index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %p = gptq.pack %codes bits 3 : tensor<?x?xi8> -> tensor<?x?xi32>
  %u = gptq.unpack %packed columns %n bits 4 : tensor<?x?xi32> -> tensor<?x?xi8>
  %gi = gptq.group_index %n {config = #gptq.config<group_size = 32>} : tensor<?xi32>
  %w = gptq.dequantize %codes, %s, %z, %g : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32> -> tensor<?x?xf32>
  %a = tensor.dim %p, %c1 : tensor<?x?xi32>
  %b = tensor.dim %u, %c1 : tensor<?x?xi8>
  %c = tensor.dim %gi, %c0 : tensor<?xi32>
  %d = tensor.dim %w, %c1 : tensor<?x?xf32>
  return %a, %b, %c, %d : index, index, index, index
}
