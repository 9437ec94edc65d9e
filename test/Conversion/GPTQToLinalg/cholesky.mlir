// RUN: gptq-opt %s --convert-gptq-to-linalg=cholesky-block=32 | FileCheck %s
// RUN: gptq-opt %s --convert-gptq-to-linalg | FileCheck %s --check-prefix=DEFAULT
// RUN: gptq-opt %s --convert-gptq-to-linalg=kernels=portable | FileCheck %s --check-prefix=PORTABLE
// RUN: not gptq-opt %s --convert-gptq-to-linalg=kernels=gpu 2>&1 | FileCheck %s --check-prefix=BADKERNELS

// The same algorithm with the portable kernels, in the accumulating order:
// J H J as one gather, the products as one linalg.generic each reading
// their operands in place, no vector ops.
// PORTABLE-LABEL: func.func private @__gptq_damped_cholesky
// PORTABLE: call @__gptq_reversed_hessian
// PORTABLE-LABEL: func.func private @__gptq_reversed_hessian
// PORTABLE-NOT: vector.
// PORTABLE: linalg.generic
// PORTABLE: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<?x?xf32>
// PORTABLE-LABEL: func.func private @__gptq_accumulate_inverse
// PORTABLE: arith.constant true
// A diagonal block in one loop marked to run in one block of GPU threads:
// A transposed, each step of the factorization two linalg ops (the pivot's
// row scaled, the later rows updated), the inverse a column per task into
// a buffer of its own, then it or the identity over A.
// PORTABLE-LABEL: func.func private @__gptq_factor_diagonal
// PORTABLE: scf.for
// PORTABLE: linalg.transpose
// PORTABLE: call @__gptq_chol_steps
// PORTABLE: call @__gptq_trinv_of_transposed
// PORTABLE: linalg.generic
// PORTABLE: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// PORTABLE: } {gptq.one_block}
// The panel L21^T = M11 P^T with P read transposed in place.
// PORTABLE-LABEL: func.func private @__gptq_factor_panel
// PORTABLE: linalg.fill
// PORTABLE: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]}
// PORTABLE-LABEL: func.func private @__gptq_gemm_sub
// PORTABLE-NOT: vector.
// PORTABLE: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// PORTABLE-NOT: vector.
// PORTABLE: return
// PORTABLE-LABEL: func.func private @__gptq_chol_steps
// PORTABLE: scf.for
// PORTABLE: math.sqrt
// PORTABLE: linalg.generic {{.*}}iterator_types = ["parallel"]
// PORTABLE: arith.cmpf ogt
// PORTABLE: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// PORTABLE-LABEL: func.func private @__gptq_trinv_of_transposed
// PORTABLE: scf.forall
// PORTABLE: scf.for
// PORTABLE: scf.for
// PORTABLE: tensor.parallel_insert_slice
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
// permutation when one is folded in), factored in the kernel file's order
// (the CPU's: row by row), the pivots' flags read once at the end, then
// the reversal in place.
// CHECK-LABEL: func.func private @__gptq_damped_cholesky
// CHECK: call @__gptq_perm_index
// CHECK: call @__gptq_reversed_hessian
// CHECK: %[[ACC:.*]] = call @__gptq_accumulate_inverse()
// CHECK: scf.if %[[ACC]]
// CHECK: call @__gptq_factor_accumulating
// CHECK: } else {
// CHECK: call @__gptq_factor_row_by_row
// The flag is the conjunction of the pivots' flags, read once at the end.
// CHECK: scf.for
// CHECK: arith.andi %{{.*}} : i1
// CHECK: scf.forall
// CHECK: tensor.extract_slice {{.*}} [2, %{{.*}}] [%{{.*}}, 1] : tensor<?x?xf32> to tensor<2x?xf32>
// The CPU kernels gather J H J by rows, 16 elements at a time.
// CHECK-LABEL: func.func private @__gptq_reversed_hessian
// CHECK: scf.forall
// CHECK: vector.gather {{.*}} : tensor<?x?xf32>, vector<16xi32>, vector<16xi1>, vector<16xf32> into vector<16xf32>
// CHECK-LABEL: func.func private @__gptq_accumulate_inverse
// CHECK: arith.constant false
// Accumulating (the portable kernels' order): per block the diagonal
// block (the identity left in its place), the block row R = M11 A[:, K]^T,
// block row K set from R, and one product for the trailing update and the
// accumulation.
// CHECK-LABEL: func.func private @__gptq_factor_accumulating
// CHECK: scf.for
// CHECK: call @__gptq_factor_diagonal({{.*}}, %true)
// CHECK: call @__gptq_factor_panel
// CHECK: linalg.generic
// CHECK: call @__gptq_gemm_sub({{.*}}, %false, %false, %false, %false)
// Row by row: the diagonal block, the panel, the trailing update on the
// lower triangle through the GEMM kernel, L21 into place, then the block
// row of the inverse.
// CHECK-LABEL: func.func private @__gptq_factor_row_by_row
// CHECK: scf.for
// CHECK: call @__gptq_factor_diagonal({{.*}}, %false)
// CHECK: tensor.insert_slice %{{.*}} : tensor<?xi1> into tensor<?xi1>
// CHECK: call @__gptq_factor_panel
// CHECK: call @__gptq_gemm_sub({{.*}}, %true, %false, %false)
// CHECK: call @__gptq_transpose_to
// CHECK: call @__gptq_factor_row_product
// CHECK: call @__gptq_factor_row_inverse

// The step's pieces from the unblocked kernels, transposes and the GEMM
// kernel: the diagonal block factored and inverted, the panel, the block
// row of the inverse (M lower: the kernel may skip its upper triangle).
// CHECK-LABEL: func.func private @__gptq_factor_diagonal
// CHECK: call @__gptq_chol_unblocked
// CHECK: call @__gptq_trinv_unblocked
// CHECK-LABEL: func.func private @__gptq_factor_panel
// CHECK: call @__gptq_gemm_sub({{.*}}, %true, %false, %false, %true)

// The kernel: packed operands, column panels in parallel, and register
// tiles of outer products in each panel.
// CHECK-LABEL: func.func private @__gptq_gemm_sub
// CHECK: vector.transfer_read {{.*}} vector<6xf32>
// CHECK: arith.negf {{.*}} : vector<6xf32>
// CHECK: scf.forall
// CHECK: call @__gptq_gemm_panel
// CHECK: tensor.parallel_insert_slice
// CHECK-LABEL: func.func private @__gptq_factor_row_product
// CHECK: call @__gptq_gemm_sub({{.*}}, %true, %false, %true, %true)
// CHECK-LABEL: func.func private @__gptq_factor_row_inverse
// CHECK: call @__gptq_gemm_sub({{.*}}, %false, %false, %false, %true)

// A pivot that is not positive (or NaN) clears its column's flag.
// CHECK-LABEL: func.func private @__gptq_chol_unblocked
// CHECK: %[[POS:.*]] = arith.cmpf ogt
// CHECK: tensor.insert %[[POS]] into %{{.*}} : tensor<?xi1>
// CHECK: math.sqrt

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
