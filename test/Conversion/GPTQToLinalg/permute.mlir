// RUN: gptq-opt %s --convert-gptq-to-linalg --split-input-file | FileCheck %s

// A permutation is a gather in a linalg.generic: the permuted index reads
// perm[j], the others pass through.

// CHECK-LABEL: func.func @columns
// CHECK-SAME: (%[[W:.*]]: tensor<4x8xf32>, %[[P:.*]]: tensor<8xi64>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: linalg.generic {{.*}} outs(%[[E]] : tensor<4x8xf32>)
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: %[[J:.*]] = linalg.index 1 : index
// CHECK: %[[PJ:.*]] = tensor.extract %[[P]][%[[J]]] : tensor<8xi64>
// CHECK: %[[PJI:.*]] = arith.index_cast %[[PJ]] : i64 to index
// CHECK: %[[V:.*]] = tensor.extract %[[W]][%[[I]], %[[PJI]]]
// CHECK: linalg.yield %[[V]]
func.func @columns(%w: tensor<4x8xf32>, %p: tensor<8xi64>) -> tensor<4x8xf32> {
  %r = gptq.permute %w by %p dims [1] : tensor<4x8xf32>, tensor<8xi64>
  return %r : tensor<4x8xf32>
}

// -----

// Both dimensions of a Hessian, with dynamic sizes.
// CHECK-LABEL: func.func @symmetric
// CHECK-SAME: (%[[H:.*]]: tensor<?x?xf32>, %[[P:.*]]: tensor<?xi64>)
// CHECK-DAG: %[[D0:.*]] = tensor.dim %[[H]], %c0
// CHECK-DAG: %[[D1:.*]] = tensor.dim %[[H]], %c1
// CHECK: tensor.empty(%[[D0]], %[[D1]])
// CHECK: %[[I:.*]] = linalg.index 0
// CHECK: tensor.extract %[[P]][%[[I]]]
// CHECK: %[[J:.*]] = linalg.index 1
// CHECK: tensor.extract %[[P]][%[[J]]]
func.func @symmetric(%h: tensor<?x?xf32>, %p: tensor<?xi64>) -> tensor<?x?xf32> {
  %r = gptq.permute %h by %p dims [0, 1] : tensor<?x?xf32>, tensor<?xi64>
  return %r : tensor<?x?xf32>
}

// -----

// The inverse permutation is computed first, then gathered with.
// CHECK-LABEL: func.func @inverse
// CHECK: %[[INV:.*]] = call @__gptq_invert_permutation
// CHECK: %[[INVS:.*]] = tensor.cast %[[INV]] : tensor<?xi64> to tensor<8xi64>
// CHECK: tensor.extract %[[INVS]]
// CHECK-LABEL: func.func private @__gptq_invert_permutation
// CHECK: scf.for
// CHECK: tensor.insert
func.func @inverse(%c: tensor<4x8xi8>, %p: tensor<8xi64>) -> tensor<4x8xi8> {
  %r = gptq.permute %c by %p inverse dims [1] : tensor<4x8xi8>, tensor<8xi64>
  return %r : tensor<4x8xi8>
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
