// RUN: gptq-opt %s --canonicalize --split-input-file | FileCheck %s

// A permutation followed by its inverse is the original tensor, either way
// round.
// CHECK-LABEL: func.func @permute_inverse
// CHECK-SAME: (%[[W:.*]]: tensor<?x?xf32>, %[[P:.*]]: tensor<?xi64>)
// CHECK-NOT: gptq.permute
// CHECK: return %[[W]], %[[W]]
func.func @permute_inverse(%w: tensor<?x?xf32>, %p: tensor<?xi64>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %a = gptq.permute %w by %p dims [1] : tensor<?x?xf32>, tensor<?xi64>
  %b = gptq.permute %a by %p inverse dims [1] : tensor<?x?xf32>, tensor<?xi64>
  %c = gptq.permute %w by %p inverse dims [1] : tensor<?x?xf32>, tensor<?xi64>
  %d = gptq.permute %c by %p dims [1] : tensor<?x?xf32>, tensor<?xi64>
  return %b, %d : tensor<?x?xf32>, tensor<?x?xf32>
}

// -----

// Not folded: another permutation, other dimensions, or the same direction
// twice.
// CHECK-LABEL: func.func @permute_kept
// CHECK-COUNT-6: gptq.permute
// CHECK: return
func.func @permute_kept(%h: tensor<?x?xf32>, %p: tensor<?xi64>, %q: tensor<?xi64>) -> (tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %a = gptq.permute %h by %p dims [0, 1] : tensor<?x?xf32>, tensor<?xi64>
  %b = gptq.permute %a by %q inverse dims [0, 1] : tensor<?x?xf32>, tensor<?xi64>
  %c = gptq.permute %h by %p dims [1] : tensor<?x?xf32>, tensor<?xi64>
  %d = gptq.permute %c by %p inverse dims [0] : tensor<?x?xf32>, tensor<?xi64>
  %e = gptq.permute %h by %p dims [1] : tensor<?x?xf32>, tensor<?xi64>
  %f = gptq.permute %e by %p dims [1] : tensor<?x?xf32>, tensor<?xi64>
  return %b, %d, %f : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}
