// RUN: gptq-opt %s --split-input-file --gptq-permute-to-gather --verify-diagnostics | FileCheck %s

// result[.., j] = source[.., perm[j]]: a gather along the permuted dim.
// CHECK-LABEL: func.func @columns(
// CHECK-SAME: %[[X:.*]]: tensor<?x4xf32>, %[[P:.*]]: tensor<4xi64>)
// CHECK: %[[G:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: %[[J:.*]] = linalg.index 1 : index
// CHECK: %[[PJ:.*]] = tensor.extract %[[P]][%[[J]]] : tensor<4xi64>
// CHECK: %[[K:.*]] = arith.index_cast %[[PJ]] : i64 to index
// CHECK: %[[V:.*]] = tensor.extract %[[X]][%[[I]], %[[K]]] : tensor<?x4xf32>
// CHECK: linalg.yield %[[V]] : f32
// CHECK-NOT: gptq.permute
// CHECK: return %[[G]]
func.func @columns(%x: tensor<?x4xf32>, %perm: tensor<4xi64>) -> tensor<?x4xf32> {
  %y = gptq.permute %x by %perm dims [1] : tensor<?x4xf32>, tensor<4xi64>
  return %y : tensor<?x4xf32>
}

// -----

// An inverse permutation gathers by the inverse of the constant.
// CHECK-LABEL: func.func @inverse(
// CHECK: %[[INV:.*]] = arith.constant dense<[2, 0, 3, 1]> : tensor<4xi64>
// CHECK: linalg.generic
// CHECK: tensor.extract %[[INV]]
func.func @inverse(%x: tensor<4xf32>) -> tensor<4xf32> {
  %perm = arith.constant dense<[1, 3, 0, 2]> : tensor<4xi64>
  %y = gptq.permute %x by %perm inverse dims [0] : tensor<4xf32>, tensor<4xi64>
  return %y : tensor<4xf32>
}

// -----

func.func @inverse_of_an_argument(%x: tensor<4xf32>, %perm: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @below {{an inverse permutation has an upstream form only with a constant permutation}}
  %y = gptq.permute %x by %perm inverse dims [0] : tensor<4xf32>, tensor<4xi64>
  return %y : tensor<4xf32>
}
