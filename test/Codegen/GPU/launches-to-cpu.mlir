// RUN: gptq-opt %s --gptq-launches-to-cpu | FileCheck %s
// RUN: gptq-opt %s --gptq-launches-to-cpu="free-shared=false" | FileCheck %s --check-prefix=KEEP

// A launch of 3 x 2 blocks of 4 x 2 x 1 threads with 64 bytes of dynamic
// shared memory: loops over the blocks (z, y, x), a team of 8 OpenMP
// threads each, thread t = (t mod 4, t / 4 mod 2, t / 8); the shared
// memory a host buffer for all blocks in turn, the barrier the runtime's.

// CHECK-DAG: func.func private @omp_get_thread_num() -> i32
// CHECK-DAG: func.func private @GOMP_barrier()
// CHECK-LABEL: func.func @kernel
// CHECK-SAME: (%[[OUT:.*]]: memref<?xf32>)
// CHECK: %[[BUF:.*]] = memref.alloc(%{{.*}}) {alignment = 16 : i64} : memref<?xi8>
// CHECK: %[[N:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: scf.for %[[BZ:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[BY:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[BX:.*]] = %{{.*}} to %{{.*}} step
// CHECK: omp.parallel num_threads(%[[N]] : i32) {
// CHECK: %[[T32:.*]] = func.call @omp_get_thread_num() : () -> i32
// CHECK: %[[T:.*]] = arith.index_cast %[[T32]] : i32 to index
// CHECK: %[[TX:.*]] = arith.remui %[[T]], %c4
// CHECK: %[[R:.*]] = arith.divui %[[T]], %c4
// CHECK: %[[TY:.*]] = arith.remui %[[R]], %c2
// The shared view is a host memref.
// CHECK: %[[V:.*]] = memref.view %[[BUF]][%{{.*}}][] : memref<?xi8> to memref<16xf32>
// CHECK: memref.store %{{.*}}, %[[V]][%{{.*}}] : memref<16xf32>
// CHECK: func.call @GOMP_barrier() : () -> ()
// CHECK: memref.load %[[V]]
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: omp.terminator
// CHECK: memref.dealloc %[[BUF]]
// CHECK-NOT: gpu.
// KEEP-NOT: memref.dealloc
func.func @kernel(%out: memref<?xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c3, %gy = %c2, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c2, %sz = %c1)
             dynamic_shared_memory_size %c64 {
    %smem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %v = memref.view %smem[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<16xf32, #gpu.address_space<workgroup>>
    %lin0 = arith.muli %ty, %sx : index
    %lin = arith.addi %tx, %lin0 : index
    %f = arith.index_cast %lin : index to i32
    %x = arith.sitofp %f : i32 to f32
    memref.store %x, %v[%lin] : memref<16xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    // Each thread reads its neighbour's element: right only after the
    // barrier.
    %nb0 = arith.addi %lin, %c1 : index
    %nb = arith.remui %nb0, %c8 : index
    %y = memref.load %v[%nb] : memref<16xf32, #gpu.address_space<workgroup>>
    %blk0 = arith.muli %by, %gx : index
    %blk = arith.addi %bx, %blk0 : index
    %base = arith.muli %blk, %c8 : index
    %i = arith.addi %base, %lin : index
    memref.store %y, %out[%i] : memref<?xf32>
    gpu.terminator
  }
  return
}
