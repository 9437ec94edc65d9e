// RUN: gptq-opt %s --convert-gptq-to-linalg --split-input-file | FileCheck %s

// The data movement of a decomposed quantize_layer folds into the passes the
// two big ops make anyway: the symmetric permutation of H into the
// Cholesky's reversal pass, the mask and column permutation of W and the
// inverse permutation of the codes into quantize_blocks' transposes. No
// gather, mask or inverse permutation is left.
// CHECK-LABEL: func.func @layer
// CHECK-SAME: (%[[W:.*]]: tensor<?x?xf32>, %[[H:.*]]: tensor<?x?xf32>
// CHECK-DAG: %[[TRUE:.*]] = arith.constant true
// CHECK-NOT: call @__gptq_
// CHECK: %[[P:.*]] = call @__gptq_act_order(%[[H]])
// CHECK-NOT: call @__gptq_
// CHECK: %[[U:.*]]:2 = call @__gptq_damped_cholesky(%[[H]], %{{.*}}, %{{.*}}, %[[P]], %[[TRUE]])
// CHECK-NOT: call @__gptq_
// CHECK: %[[Q:.*]]:4 = call @__gptq_quantize_blocks(%[[W]], %[[U]]#0, {{.*}}, %[[P]], %[[TRUE]], %[[H]], %[[TRUE]], %[[TRUE]])
// CHECK-NOT: call @__gptq_
// CHECK: return %[[Q]]#0
func.func @layer(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>, %d: f32) -> tensor<?x?xi8> {
  %m = gptq.mask_dead_inputs %w, %h : tensor<?x?xf32>, tensor<?x?xf32>
  %p = gptq.act_order %h : tensor<?x?xf32> -> tensor<?xi64>
  %wp = gptq.permute %m by %p dims [1] : tensor<?x?xf32>, tensor<?xi64>
  %hp = gptq.permute %h by %p dims [0, 1] : tensor<?x?xf32>, tensor<?xi64>
  %u, %ok = gptq.damped_cholesky %hp percdamp(%d) : tensor<?x?xf32>
  %c, %s, %z, %l = gptq.quantize_blocks %wp, %u {config = #gptq.config<group_size = 128, act_order = true>} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>
  %cp = gptq.permute %c by %p inverse dims [1] : tensor<?x?xi8>, tensor<?xi64>
  return %cp : tensor<?x?xi8>
}

// -----

// A producer with other uses stays (lowered on its own) and the consumer
// reads its source; codes permuted back by another permutation are not
// folded; a mask alone folds without a permutation.
// CHECK-LABEL: func.func @partial
// CHECK-SAME: (%[[W:.*]]: tensor<?x?xf32>, %[[H:.*]]: tensor<?x?xf32>, %{{.*}}: tensor<?x?xf32>, %[[P:.*]]: tensor<?xi64>, %[[P2:.*]]: tensor<?xi64>
// CHECK-DAG: %[[TRUE:.*]] = arith.constant true
// CHECK-DAG: %[[FALSE:.*]] = arith.constant false
// CHECK: %[[HP:.*]] = call @__gptq_gather_f32(%[[H]]
// CHECK: call @__gptq_damped_cholesky(%[[H]], %{{.*}}, %{{.*}}, %[[P]], %[[TRUE]])
// CHECK: %[[Q:.*]]:4 = call @__gptq_quantize_blocks(%[[W]], {{.*}}, %[[P]], %[[TRUE]], %{{.*}}, %[[FALSE]], %[[FALSE]])
// CHECK: %[[INV:.*]] = call @__gptq_invert_permutation(%[[P2]])
// CHECK: %[[CP:.*]] = call @__gptq_gather_i8(%[[Q]]#0, %[[INV]]
// CHECK: call @__gptq_quantize_blocks(%[[W]], {{.*}}, %[[TRUE]], %[[FALSE]])
// CHECK: return %[[HP]], %[[CP]]
func.func @partial(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>, %u: tensor<?x?xf32>, %p: tensor<?xi64>, %p2: tensor<?xi64>, %d: f32) -> (tensor<?x?xf32>, tensor<?x?xi8>, tensor<?x?xi8>) {
  %hp = gptq.permute %h by %p dims [0, 1] : tensor<?x?xf32>, tensor<?xi64>
  %f, %ok = gptq.damped_cholesky %hp percdamp(%d) : tensor<?x?xf32>
  %wp = gptq.permute %w by %p dims [1] : tensor<?x?xf32>, tensor<?xi64>
  %c, %s, %z, %l = gptq.quantize_blocks %wp, %f {config = #gptq.config<group_size = 64>} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>
  %cp = gptq.permute %c by %p2 inverse dims [1] : tensor<?x?xi8>, tensor<?xi64>
  %m = gptq.mask_dead_inputs %w, %h : tensor<?x?xf32>, tensor<?x?xf32>
  %c2, %s2, %z2, %l2 = gptq.quantize_blocks %m, %u {config = #gptq.config<group_size = 64>} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>
  return %hp, %cp, %c2 : tensor<?x?xf32>, tensor<?x?xi8>, tensor<?x?xi8>
}
