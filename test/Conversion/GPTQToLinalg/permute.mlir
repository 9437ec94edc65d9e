// RUN: gptq-opt %s --convert-gptq-to-linalg --split-input-file | FileCheck %s

// Matrices of weights (f32) and codes (i8) are gathered by the library,
// blocks of rows in parallel; the flags say which dimensions are permuted.

// CHECK-LABEL: func.func @columns
// CHECK-SAME: (%[[W:.*]]: tensor<4x8xf32>, %[[P:.*]]: tensor<8xi64>)
// CHECK-DAG: %[[FALSE:.*]] = arith.constant false
// CHECK-DAG: %[[TRUE:.*]] = arith.constant true
// CHECK-DAG: %[[WD:.*]] = tensor.cast %[[W]] : tensor<4x8xf32> to tensor<?x?xf32>
// CHECK-DAG: %[[PD:.*]] = tensor.cast %[[P]] : tensor<8xi64> to tensor<?xi64>
// CHECK-DAG: %[[PD2:.*]] = tensor.cast %[[P]] : tensor<8xi64> to tensor<?xi64>
// CHECK: %[[R:.*]] = call @__gptq_gather_f32(%[[WD]], %[[PD]], %[[PD2]], %[[FALSE]], %[[TRUE]])
// CHECK: tensor.cast %[[R]] : tensor<?x?xf32> to tensor<4x8xf32>
// CHECK-LABEL: func.func private @__gptq_gather_f32
// CHECK: scf.forall
// CHECK: linalg.generic
// CHECK: scf.if
// CHECK: tensor.extract
// CHECK: tensor.parallel_insert_slice
func.func @columns(%w: tensor<4x8xf32>, %p: tensor<8xi64>) -> tensor<4x8xf32> {
  %r = gptq.permute %w by %p dims [1] : tensor<4x8xf32>, tensor<8xi64>
  return %r : tensor<4x8xf32>
}

// -----

// Both dimensions of a Hessian.
// CHECK-LABEL: func.func @symmetric
// CHECK: %[[TRUE:.*]] = arith.constant true
// CHECK: call @__gptq_gather_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[TRUE]], %[[TRUE]])
func.func @symmetric(%h: tensor<?x?xf32>, %p: tensor<?xi64>) -> tensor<?x?xf32> {
  %r = gptq.permute %h by %p dims [0, 1] : tensor<?x?xf32>, tensor<?xi64>
  return %r : tensor<?x?xf32>
}

// -----

// The inverse permutation is computed first, then gathered with.
// CHECK-LABEL: func.func @inverse
// CHECK: %[[INV:.*]] = call @__gptq_invert_permutation
// CHECK: %[[INVS:.*]] = tensor.cast %[[INV]] : tensor<?xi64> to tensor<8xi64>
// CHECK: %[[A:.*]] = tensor.cast %[[INVS]] : tensor<8xi64> to tensor<?xi64>
// CHECK: call @__gptq_gather_i8(%{{.*}}, %[[A]], %{{.*}}, %false, %true)
// CHECK-LABEL: func.func private @__gptq_invert_permutation
// CHECK: scf.for
// CHECK: tensor.insert
func.func @inverse(%c: tensor<4x8xi8>, %p: tensor<8xi64>) -> tensor<4x8xi8> {
  %r = gptq.permute %c by %p inverse dims [1] : tensor<4x8xi8>, tensor<8xi64>
  return %r : tensor<4x8xi8>
}

// -----

// Other tensors (here g_idx) become a gather in a linalg.generic: the
// permuted index reads perm[j].
// CHECK-LABEL: func.func @vector
// CHECK-SAME: (%[[G:.*]]: tensor<8xi32>, %[[P:.*]]: tensor<8xi64>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<8xi32>
// CHECK: linalg.generic {{.*}} outs(%[[E]] : tensor<8xi32>)
// CHECK: %[[J:.*]] = linalg.index 0 : index
// CHECK: %[[PJ:.*]] = tensor.extract %[[P]][%[[J]]] : tensor<8xi64>
// CHECK: %[[PJI:.*]] = arith.index_cast %[[PJ]] : i64 to index
// CHECK: %[[V:.*]] = tensor.extract %[[G]][%[[PJI]]]
// CHECK: linalg.yield %[[V]]
func.func @vector(%g: tensor<8xi32>, %p: tensor<8xi64>) -> tensor<8xi32> {
  %r = gptq.permute %g by %p dims [0] : tensor<8xi32>, tensor<8xi64>
  return %r : tensor<8xi32>
}

// -----

// act-order: a stable descending rank of the (dead-adjusted) diagonal.
// CHECK-LABEL: func.func @act_order
// CHECK: call @__gptq_act_order
// CHECK-LABEL: func.func private @__gptq_act_order
// CHECK: arith.cmpf oeq
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpi ult
func.func @act_order(%h: tensor<8x8xf32>) -> tensor<8xi64> {
  %p = gptq.act_order %h : tensor<8x8xf32> -> tensor<8xi64>
  return %p : tensor<8xi64>
}
