// RUN: gptq-opt %s --gptq-launches-to-cpu | FileCheck %s

// A launch whose threads cannot see each other (no barrier, no shared
// memory, no atomics): one OpenMP region whose threads take the 3 x 2
// blocks in turn (thread i: blocks i, i + n, ...), each block's 4 x 2
// threads one after another (z, y, x), each in an alloca scope since it
// allocates on the stack. No team per block, no barrier declared. The
// launch is counted first, as the CUDA runtime counts a launch with blocks.

// CHECK-DAG: func.func private @omp_get_thread_num() -> i32
// CHECK-DAG: func.func private @omp_get_num_threads() -> i32
// CHECK-DAG: func.func private @gptq_runtime_count_launch()
// CHECK-NOT: GOMP_barrier
// CHECK-LABEL: func.func @apart
// CHECK-SAME: (%[[OUT:.*]]: memref<?xf32>)
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[NB:.*]] = arith.muli %[[C3]], %{{.*}} : index
// CHECK: %[[ANY:.*]] = arith.cmpi sgt, %[[NB]]
// CHECK: scf.if %[[ANY]] {
// CHECK-NEXT: func.call @gptq_runtime_count_launch() : () -> ()
// CHECK: %[[N:.*]] = arith.muli %[[C3]], %{{.*}} : index
// CHECK: omp.parallel {
// CHECK-NOT: num_threads
// CHECK: %[[I32:.*]] = func.call @omp_get_thread_num()
// CHECK: %[[I:.*]] = arith.index_cast %[[I32]]
// CHECK: %[[T32:.*]] = func.call @omp_get_num_threads()
// CHECK: %[[T:.*]] = arith.index_cast %[[T32]]
// CHECK: scf.for %[[B:.*]] = %[[I]] to %[[N]] step %[[T]] {
// CHECK: %[[BX:.*]] = arith.remui %[[B]], %[[C3]]
// CHECK: %[[R:.*]] = arith.divui %[[B]], %[[C3]]
// CHECK: %[[BY:.*]] = arith.remui %[[R]], %[[C2]]
// CHECK: scf.for %[[TZ:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[TY:.*]] = %{{.*}} to %[[C2]] step
// CHECK: scf.for %[[TX:.*]] = %{{.*}} to %[[C4]] step
// CHECK: memref.alloca_scope {
// CHECK: arith.muli %[[TY]], %[[C4]]
// CHECK: arith.muli %[[BY]], %[[C3]]
// CHECK: memref.alloca() : memref<1xf32>
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: omp.terminator
// CHECK-NOT: gpu.
// CHECK-NOT: omp.parallel
func.func @apart(%out: memref<?xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c3, %gy = %c2, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c2, %sz = %c1) {
    %lin0 = arith.muli %ty, %sx : index
    %lin = arith.addi %tx, %lin0 : index
    %blk0 = arith.muli %by, %gx : index
    %blk = arith.addi %bx, %blk0 : index
    %base = arith.muli %blk, %c8 : index
    %i = arith.addi %base, %lin : index
    %f = arith.index_cast %i : index to i32
    %x = arith.sitofp %f : i32 to f32
    %tmp = memref.alloca() : memref<1xf32>
    %c0 = arith.constant 0 : index
    memref.store %x, %tmp[%c0] : memref<1xf32>
    %y = memref.load %tmp[%c0] : memref<1xf32>
    memref.store %y, %out[%i] : memref<?xf32>
    gpu.terminator
  }
  return
}

// An atomic update lets threads see each other: a team per block.
// CHECK-LABEL: func.func @atomic
// CHECK: scf.for
// CHECK: omp.parallel num_threads
func.func @atomic(%out: memref<1xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %c0 = arith.constant 0 : index
    %one = arith.constant 1.0 : f32
    %old = memref.atomic_rmw addf %one, %out[%c0] : (f32, memref<1xf32>) -> f32
    gpu.terminator
  }
  return
}
