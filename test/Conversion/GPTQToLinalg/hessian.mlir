// RUN: gptq-opt %s --convert-gptq-to-linalg | FileCheck %s
// RUN: gptq-opt %s --convert-gptq-to-linalg="kernels=portable" | FileCheck %s --check-prefix=PORTABLE

// A [samples, tokens, cols] batch is collapsed to [tokens, cols] and counts
// as `samples` samples; the implementation runs Y^T Y on the matrix kernel.

// CHECK-LABEL: func.func @batch3
// CHECK-SAME: (%[[X:.*]]: tensor<4x16x8xf32>, %[[H:.*]]: tensor<8x8xf32>, %[[N:.*]]: i64)
// CHECK-DAG: %[[NB:.*]] = arith.constant 4 : i64
// CHECK-DAG: %[[FLAT:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<4x16x8xf32> into tensor<64x8xf32>
// CHECK-DAG: %[[XD:.*]] = tensor.cast %[[FLAT]] : tensor<64x8xf32> to tensor<?x?xf32>
// CHECK-DAG: %[[HD:.*]] = tensor.cast %[[H]] : tensor<8x8xf32> to tensor<?x?xf32>
// CHECK: %[[R:.*]]:2 = call @__gptq_hessian_accumulate(%[[XD]], %[[HD]], %[[N]], %[[NB]])
// CHECK: %[[RS:.*]] = tensor.cast %[[R]]#0 : tensor<?x?xf32> to tensor<8x8xf32>
// CHECK: return %[[RS]], %[[R]]#1
func.func @batch3(%x: tensor<4x16x8xf32>, %h: tensor<8x8xf32>, %n: i64) -> (tensor<8x8xf32>, i64) {
  %r, %m = gptq.hessian_accumulate %x into %h count %n : tensor<4x16x8xf32>, tensor<8x8xf32>
  return %r, %m : tensor<8x8xf32>, i64
}

// CHECK-LABEL: func.func @tokens2
// CHECK: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK: call @__gptq_hessian_accumulate(%{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]])
func.func @tokens2(%x: tensor<?x?xf32>, %h: tensor<?x?xf32>, %n: i64) -> (tensor<?x?xf32>, i64) {
  %r, %m = gptq.hessian_accumulate %x into %h count %n : tensor<?x?xf32>, tensor<?x?xf32>
  return %r, %m : tensor<?x?xf32>, i64
}

// The implementation, added once as a private function: the running-average
// factors in f64, the scaled inputs, and Y^T Y accumulated into the scaled H
// by the kernel file's __gptq_add_gram: with the CPU kernels, the
// microkernel library's matrix kernel (Y given as A transposed and as B,
// accumulated), in blocks of 512 tokens and bands of 512 rows of H: the
// band left of its diagonal block (a full product, from the second band on)
// and the diagonal block (only the tiles that reach the lower triangle),
// each in place in H; then the lower triangle copied to the upper one. The portable kernels use the
// library's matrix kernel file instead (the GPU maps it).
// CHECK-LABEL: func.func private @__gptq_hessian_accumulate
// CHECK: arith.divf %{{.*}}, %{{.*}} : f64
// CHECK: math.sqrt %{{.*}} : f64
// CHECK: %[[Y:.*]] = linalg.generic
// CHECK: %[[HS:.*]] = linalg.generic
// CHECK: %[[FULL:.*]] = call @__gptq_add_gram(%[[HS]], %[[Y]])
// CHECK: return %[[FULL]]
// CHECK-LABEL: func.func private @__gptq_add_gram
// CHECK-SAME: (%[[H:.*]]: tensor<?x?xf32>, %[[YY:.*]]: tensor<?x?xf32>)
// CHECK: %[[Y3:.*]] = tensor.expand_shape %[[YY]]
// CHECK: %[[H3:.*]] = tensor.expand_shape %[[H]]
// CHECK: %[[L3:.*]] = scf.for %[[T0:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[H3]])
// CHECK: %[[YS:.*]] = tensor.extract_slice %[[Y3]][0, %[[T0]], 0]
// CHECK: scf.for %[[I0:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A2:.*]] = %[[ACC]])
// CHECK: %[[YI:.*]] = tensor.extract_slice %[[YS]][0, 0, %[[I0]]]
// CHECK: %[[A3:.*]] = scf.if
// CHECK: %[[YL:.*]] = tensor.extract_slice %[[YS]][0, 0, 0]
// CHECK: %[[CL:.*]] = tensor.extract_slice %[[A2]][0, %[[I0]], 0]
// CHECK: %[[UL:.*]] = gptq_ukernel.matmul ins(%[[YI]], %[[YL]] : tensor<1x?x?xf32>, tensor<1x?x?xf32>) outs(%[[CL]] : tensor<1x?x?xf32>) {transpose_lhs}
// CHECK: tensor.insert_slice %[[UL]] into %[[A2]][0, %[[I0]], 0]
// CHECK: %[[CD:.*]] = tensor.extract_slice %[[A3]][0, %[[I0]], %[[I0]]]
// CHECK: %[[UD:.*]] = gptq_ukernel.matmul ins(%[[YI]], %[[YI]] : tensor<1x?x?xf32>, tensor<1x?x?xf32>) outs(%[[CD]] : tensor<1x?x?xf32>) {lower_result, transpose_lhs}
// CHECK: tensor.insert_slice %[[UD]] into %[[A3]][0, %[[I0]], %[[I0]]]
// CHECK: %[[L:.*]] = tensor.collapse_shape %[[L3]]
// CHECK: %[[M:.*]] = call @__gptq_mirror_lower(%[[L]])
// CHECK: return %[[M]]
// CHECK-NOT: func.func private @__gptq_hessian_accumulate
// CHECK-NOT: @__gptq_gemm_sub
// PORTABLE-LABEL: func.func private @__gptq_add_gram
// PORTABLE-NOT: gptq_ukernel
// PORTABLE: %[[TRUE:.*]] = arith.constant true
// PORTABLE: %[[FALSE:.*]] = arith.constant false
// PORTABLE: call @__gptq_gemm_sub(%{{.*}}, %{{.*}}, %{{.*}}, %[[TRUE]], %[[TRUE]], %[[FALSE]], %[[FALSE]])
