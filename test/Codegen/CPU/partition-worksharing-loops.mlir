// RUN: gptq-opt %s --split-input-file --verify-diagnostics --gptq-partition-worksharing-loops | FileCheck %s

// A loop of one dimension: thread t of nt (libomp's numbers, not
// omp_get_thread_num's, which another OpenMP runtime loaded first would
// answer) runs iterations [t n / nt,
// (t + 1) n / nt) of the n = ceil((ub - lb) / s) (none below zero), each
// at lb + l s, with the loop's body; no worksharing loop is left.
// CHECK-DAG: func.func private @__kmpc_bound_thread_num(!llvm.ptr) -> i32
// CHECK-DAG: func.func private @__kmpc_bound_num_threads(!llvm.ptr) -> i32
// CHECK-LABEL: func.func @one
// CHECK-SAME: (%[[LB:.*]]: index, %[[UB:.*]]: index, %[[S:.*]]: index, %[[M:.*]]: memref<?xf32>)
// CHECK: omp.parallel {
// CHECK: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK: %[[SPAN:.*]] = arith.subi %[[UB]], %[[LB]] : index
// CHECK: %[[C:.*]] = arith.ceildivsi %[[SPAN]], %[[S]] : index
// CHECK: %[[N:.*]] = arith.maxsi %[[C]], %[[ZERO]] : index
// CHECK: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: %[[T32:.*]] = func.call @__kmpc_bound_thread_num(%[[NULL]]) : (!llvm.ptr) -> i32
// CHECK: %[[T:.*]] = arith.index_cast %[[T32]] : i32 to index
// CHECK: %[[NT32:.*]] = func.call @__kmpc_bound_num_threads(%[[NULL]]) : (!llvm.ptr) -> i32
// CHECK: %[[NT:.*]] = arith.index_cast %[[NT32]] : i32 to index
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: %[[NEXT:.*]] = arith.addi %[[T]], %[[ONE]] : index
// CHECK: %[[A:.*]] = arith.muli %[[T]], %[[N]] : index
// CHECK: %[[FIRST:.*]] = arith.divui %[[A]], %[[NT]] : index
// CHECK: %[[B:.*]] = arith.muli %[[NEXT]], %[[N]] : index
// CHECK: %[[LAST:.*]] = arith.divui %[[B]], %[[NT]] : index
// CHECK: scf.for %[[L:.*]] = %[[FIRST]] to %[[LAST]] step %[[ONE]] {
// CHECK: %[[LS:.*]] = arith.muli %[[L]], %[[S]] : index
// CHECK: %[[I:.*]] = arith.addi %[[LB]], %[[LS]] : index
// CHECK: memref.store %{{.*}}, %[[M]][%[[I]]] : memref<?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: omp.terminator
// CHECK-NOT: omp.wsloop
func.func @one(%lb: index, %ub: index, %s: index, %m: memref<?xf32>) {
  %x = arith.constant 1.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%lb) to (%ub) step (%s) {
        memref.store %x, %m[%i] : memref<?xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// -----

// Two dimensions, inclusive: the linear iteration l is (i, j) with j
// fastest, j = l mod nj, i = l / nj; an `if` clause stays.
// CHECK-LABEL: func.func @two
// CHECK-SAME: (%[[LB:.*]]: index, %[[UB:.*]]: index, %[[S:.*]]: index, %[[N:.*]]: index, %[[M:.*]]: memref<?x?xf32>, %[[IF:.*]]: i1)
// CHECK: omp.parallel if(%[[IF]]) {
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: arith.addi %[[UB]], %[[ONE]] : index
// CHECK: %[[NI:.*]] = arith.maxsi
// CHECK: %[[NEND:.*]] = arith.addi %[[N]], %[[ONE]] : index
// CHECK: %[[NSPAN:.*]] = arith.subi %[[NEND]], %[[LB]] : index
// CHECK: %[[NJ0:.*]] = arith.ceildivsi %[[NSPAN]], %[[S]] : index
// CHECK: %[[NJ:.*]] = arith.maxsi %[[NJ0]]
// CHECK: %[[TOTAL:.*]] = arith.muli %[[NI]], %[[NJ]] : index
// CHECK: scf.for %[[L:.*]] =
// CHECK: %[[J0:.*]] = arith.remui %[[L]], %[[NJ]] : index
// CHECK: %[[REST:.*]] = arith.divui %[[L]], %[[NJ]] : index
// CHECK: %[[JS:.*]] = arith.muli %[[J0]], %[[S]] : index
// CHECK: %[[J:.*]] = arith.addi %[[LB]], %[[JS]] : index
// CHECK: %[[IS:.*]] = arith.muli %[[REST]], %[[S]] : index
// CHECK: %[[I:.*]] = arith.addi %[[LB]], %[[IS]] : index
// CHECK: memref.store %{{.*}}, %[[M]][%[[I]], %[[J]]] : memref<?x?xf32>
func.func @two(%lb: index, %ub: index, %s: index, %n: index, %m: memref<?x?xf32>, %c: i1) {
  %x = arith.constant 1.0 : f32
  omp.parallel if(%c) {
    omp.wsloop {
      omp.loop_nest (%i, %j) : index = (%lb, %lb) to (%ub, %n) inclusive step (%s, %s) {
        memref.store %x, %m[%i, %j] : memref<?x?xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// -----

// A region nested in another's loop (libomp runs it on one thread) is
// shared out too, inside the outer loop's share.
// CHECK-LABEL: func.func @nested
// CHECK: omp.parallel {
// CHECK: func.call @__kmpc_bound_thread_num
// CHECK: scf.for
// CHECK: omp.parallel {
// CHECK: func.call @__kmpc_bound_thread_num
// CHECK: scf.for
// CHECK: memref.store
// CHECK-NOT: omp.wsloop
func.func @nested(%lb: index, %ub: index, %s: index, %m: memref<?x?xf32>) {
  %x = arith.constant 1.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%lb) to (%ub) step (%s) {
        omp.parallel {
          omp.wsloop {
            omp.loop_nest (%j) : index = (%lb) to (%ub) step (%s) {
              memref.store %x, %m[%i, %j] : memref<?x?xf32>
              omp.yield
            }
          }
          omp.terminator
        }
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// -----

// Loops that need the runtime (another schedule, a chunk) and regions of
// other shapes stay; a module without a loop to share gets no declarations.
// CHECK-LABEL: func.func @others
// CHECK-NOT: __kmpc_bound_thread_num
// CHECK: omp.wsloop schedule(dynamic)
// CHECK: omp.wsloop schedule(static = %{{.*}} : index)
// CHECK: arith.addi
// CHECK-NEXT: omp.wsloop {
func.func @others(%lb: index, %ub: index, %s: index) {
  omp.parallel {
    omp.wsloop schedule(dynamic) {
      omp.loop_nest (%i) : index = (%lb) to (%ub) step (%s) {
        omp.yield
      }
    }
    omp.terminator
  }
  omp.parallel {
    omp.wsloop schedule(static = %s : index) {
      omp.loop_nest (%i) : index = (%lb) to (%ub) step (%s) {
        omp.yield
      }
    }
    omp.terminator
  }
  omp.parallel {
    %x = arith.addi %ub, %ub : index
    omp.wsloop {
      omp.loop_nest (%i) : index = (%lb) to (%x) step (%s) {
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// -----

// The runtime's names taken by something else: an error at the definition.
// expected-error @below {{'__kmpc_bound_thread_num' is the OpenMP runtime's: expected a declaration of type (!llvm.ptr) -> i32}}
func.func @__kmpc_bound_thread_num() -> index {
  %c = arith.constant 0 : index
  return %c : index
}
func.func @loop(%lb: index, %ub: index, %s: index) {
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%lb) to (%ub) step (%s) {
        omp.yield
      }
    }
    omp.terminator
  }
  return
}
