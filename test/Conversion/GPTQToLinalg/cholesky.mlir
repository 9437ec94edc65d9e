// RUN: gptq-opt %s --convert-gptq-to-linalg=cholesky-block=32 | FileCheck %s
// RUN: gptq-opt %s --convert-gptq-to-linalg | FileCheck %s --check-prefix=DEFAULT
// RUN: gptq-opt %s --convert-gptq-to-linalg=kernels=portable | FileCheck %s --check-prefix=PORTABLE
// RUN: not gptq-opt %s --convert-gptq-to-linalg=kernels=gpu 2>&1 | FileCheck %s --check-prefix=BADKERNELS

// The same algorithm with the portable kernels: J H J as one gather, the
// products as one linalg.generic each, no vector ops.
// PORTABLE-LABEL: func.func private @__gptq_damped_cholesky
// PORTABLE: call @__gptq_reversed_hessian
// PORTABLE: call @__gptq_chol_unblocked
// PORTABLE: call @__gptq_gemm_sub
// PORTABLE-LABEL: func.func private @__gptq_reversed_hessian
// PORTABLE-NOT: vector.
// PORTABLE: linalg.generic
// PORTABLE: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<?x?xf32>
// The diagonal blocks: each step of the factorization two linalg ops (the
// pivot's row scaled, the later rows updated), the steps in one loop marked
// to run in one block of GPU threads; the inverse a column per task.
// PORTABLE-LABEL: func.func private @__gptq_chol_unblocked
// PORTABLE: scf.for
// PORTABLE: math.sqrt
// PORTABLE: linalg.generic {{.*}}iterator_types = ["parallel"]
// PORTABLE: arith.cmpf ogt
// PORTABLE: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// PORTABLE: } {gptq.one_block}
// PORTABLE-LABEL: func.func private @__gptq_trinv_unblocked
// PORTABLE: scf.forall
// PORTABLE: scf.for
// PORTABLE: scf.for
// PORTABLE: tensor.parallel_insert_slice
// PORTABLE-LABEL: func.func private @__gptq_gemm_sub
// PORTABLE-NOT: vector.
// PORTABLE: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// PORTABLE-NOT: vector.
// PORTABLE: return
// BADKERNELS: error: kernels must be 'cpu' or 'portable', found 'gpu'

// CHECK-LABEL: func.func @chol
// CHECK-SAME: (%[[H:.*]]: tensor<?x?xf32>, %[[P:.*]]: f32)
// CHECK-DAG: %[[NB:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[FALSE:.*]] = arith.constant false
// CHECK-DAG: %[[NOPERM:.*]] = tensor.empty() : tensor<0xi64>
// CHECK: %[[NP:.*]] = tensor.cast %[[NOPERM]]
// CHECK: %[[R:.*]]:2 = call @__gptq_damped_cholesky(%[[H]], %[[P]], %[[NB]], %[[NP]], %[[FALSE]])
// CHECK: return %[[R]]#0, %[[R]]#1
// DEFAULT-LABEL: func.func @chol
// DEFAULT: arith.constant 128 : index
func.func @chol(%h: tensor<?x?xf32>, %p: f32) -> (tensor<?x?xf32>, i1) {
  %u, %ok = gptq.damped_cholesky %h percdamp(%p) : tensor<?x?xf32>
  return %u, %ok : tensor<?x?xf32>, i1
}

// Static shapes are cast to the shape-generic implementation and back.
// CHECK-LABEL: func.func @static
// CHECK: %[[C:.*]] = tensor.cast %{{.*}} : tensor<16x16xf32> to tensor<?x?xf32>
// CHECK: %[[R:.*]]:2 = call @__gptq_damped_cholesky(%[[C]]
// CHECK: tensor.cast %[[R]]#0 : tensor<?x?xf32> to tensor<16x16xf32>
func.func @static(%h: tensor<16x16xf32>, %p: f32) -> (tensor<16x16xf32>, i1) {
  %u, %ok = gptq.damped_cholesky %h percdamp(%p) : tensor<16x16xf32>
  return %u, %ok : tensor<16x16xf32>, i1
}

// The blocked factorization: J H J formed in one buffer (through the
// permutation when one is folded in), a loop over diagonal blocks, each
// factored and inverted unblocked, the trailing update and the block rows of
// the inverse as calls of the GEMM kernel (the trailing update on the lower
// triangle), then the reversal in place.
// CHECK-LABEL: func.func private @__gptq_damped_cholesky
// CHECK: call @__gptq_perm_index
// CHECK: call @__gptq_reversed_hessian
// CHECK: scf.for
// CHECK: call @__gptq_chol_unblocked
// CHECK: call @__gptq_trinv_unblocked
// CHECK: tensor.insert_slice %{{.*}} : tensor<?xi1> into tensor<?xi1>
// CHECK: call @__gptq_gemm_sub({{.*}}, %false, %false, %true)
// CHECK: call @__gptq_gemm_sub({{.*}}, %true, %false, %false)
// CHECK: call @__gptq_gemm_sub({{.*}}, %false, %true, %true)
// The flag is the conjunction of the pivots' flags, read once at the end.
// CHECK: scf.for
// CHECK: arith.andi %{{.*}} : i1
// CHECK: scf.forall
// CHECK: tensor.extract_slice {{.*}} [2, %{{.*}}] [%{{.*}}, 1] : tensor<?x?xf32> to tensor<2x?xf32>

// The CPU kernels gather J H J by rows, 16 elements at a time.
// CHECK-LABEL: func.func private @__gptq_reversed_hessian
// CHECK: scf.forall
// CHECK: vector.gather {{.*}} : tensor<?x?xf32>, vector<16xi32>, vector<16xi1>, vector<16xf32> into vector<16xf32>

// A pivot that is not positive (or NaN) clears its column's flag.
// CHECK-LABEL: func.func private @__gptq_chol_unblocked
// CHECK: %[[POS:.*]] = arith.cmpf ogt
// CHECK: tensor.insert %[[POS]] into %{{.*}} : tensor<?xi1>
// CHECK: math.sqrt

// The kernel: packed operands, column panels in parallel, and register
// tiles of outer products in each panel.
// CHECK-LABEL: func.func private @__gptq_gemm_sub
// CHECK: vector.transfer_read {{.*}} vector<6xf32>
// CHECK: arith.negf {{.*}} : vector<6xf32>
// CHECK: scf.forall
// CHECK: call @__gptq_gemm_panel
// CHECK: tensor.parallel_insert_slice
// CHECK-LABEL: func.func private @__gptq_gemm_panel
// CHECK: scf.if
// CHECK: linalg.fill
// CHECK: vector.transfer_read {{.*}} vector<64xf32>
// CHECK: scf.for
// CHECK: vector.transfer_read {{.*}} vector<6x64xf32>
// CHECK: scf.for
// CHECK: tensor.extract {{.*}} : tensor<?x?x6xf32>
// CHECK: vector.broadcast {{.*}} : f32 to vector<64xf32>
// CHECK: math.fma {{.*}} : vector<64xf32>
// CHECK: vector.transfer_write {{.*}} : vector<6x64xf32>
