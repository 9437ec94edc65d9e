// RUN: gptq-opt %s --gptq-stage-uniform-reads --split-input-file | FileCheck %s
// RUN: gptq-opt %s --gptq-stage-uniform-reads="max-bytes=1024" --split-input-file | FileCheck %s --check-prefix=SMALL
// RUN: gptq-opt %s --gptq-stage-uniform-reads --canonicalize --split-input-file | FileCheck %s --check-prefix=FOLDED
// RUN: not gptq-opt %s --gptq-stage-uniform-reads="max-bytes=-1" --split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: gptq-stage-uniform-reads: max-bytes must be between 0 and 2147483647

// The quantize kernel's pattern: each thread (x) owns a row; inside, a loop
// over columns reads the matrix %u at indices that every thread shares
// (directly and through a subview), and %w at its own row. %u is staged in
// dynamic shared memory, copied by the block's threads in turn, behind a
// barrier; %w (read at a thread's index, and written; a fresh allocation,
// which %u cannot share memory with) is not.

// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[U:.*]]: memref<?x?xf32>, %[[N:.*]]: index)
// CHECK: %[[W:.*]] = memref.alloc
// CHECK: %[[D0:.*]] = memref.dim %[[U]], %{{.*}}
// CHECK: %[[D1:.*]] = memref.dim %[[U]], %{{.*}}
// CHECK: %[[COUNT:.*]] = arith.muli %{{.*}}, %[[D1]] : index
// CHECK: %[[BYTES:.*]] = arith.muli %[[COUNT]], %c4
// CHECK: %[[TOTAL:.*]] = arith.addi
// CHECK: %[[FITS:.*]] = arith.cmpi ule, %[[TOTAL]], %c232448
// CHECK: %[[ASK:.*]] = arith.select %[[FITS]], %[[TOTAL]], %{{.*}}
// CHECK: %[[ASK32:.*]] = arith.index_cast %[[ASK]] : index to i32
// CHECK: gpu.launch {{.*}} threads(%[[TX:.*]], %[[TY:.*]], %[[TZ:.*]]) in (%[[BX:.*]] = %{{.*}}, %[[BY:.*]] = %{{.*}}, %[[BZ:.*]] = %{{.*}}) dynamic_shared_memory_size %[[ASK32]]
// CHECK: scf.if %[[FITS]] {
// CHECK: %[[SMEM:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[COPY:.*]] = memref.view %[[SMEM]][%{{.*}}][%[[D0]], %[[D1]]] : memref<?xi8, #gpu.address_space<workgroup>> to memref<?x?xf32, #gpu.address_space<workgroup>>
// Consecutive threads take consecutive elements: thread tx + bx * (ty + by
// * tz) starts there and steps over bx * by * bz.
// CHECK: %[[T1:.*]] = arith.muli %[[BY]], %[[TZ]]
// CHECK: %[[T2:.*]] = arith.addi %[[TY]], %[[T1]]
// CHECK: %[[T3:.*]] = arith.muli %[[BX]], %[[T2]]
// CHECK: %[[FIRST:.*]] = arith.addi %[[TX]], %[[T3]]
// CHECK: %[[S1:.*]] = arith.muli %[[BY]], %[[BZ]]
// CHECK: %[[STEP:.*]] = arith.muli %[[BX]], %[[S1]]
// CHECK: scf.for %[[E:.*]] = %[[FIRST]] to %[[COUNT]] step %[[STEP]] {
// CHECK: %[[J:.*]] = arith.remui %[[E]], %[[D1]]
// CHECK: %[[I:.*]] = arith.divui %[[E]], %[[D1]]
// CHECK: %[[V:.*]] = memref.load %[[U]][%[[I]], %[[J]]] : memref<?x?xf32>
// CHECK: memref.store %[[V]], %[[COPY]][%[[I]], %[[J]]]
// CHECK: }
// CHECK: gpu.barrier
// CHECK: scf.for %[[C:.*]] =
// CHECK: memref.load %[[COPY]][%[[C]], %[[C]]] : memref<?x?xf32, #gpu.address_space<workgroup>>
// CHECK: %[[ROW:.*]] = memref.subview %[[COPY]][%[[C]], 0] [1, %{{.*}}] [1, 1] : memref<?x?xf32, #gpu.address_space<workgroup>> to memref<?xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>
// CHECK: memref.load %[[W]][%[[C]], %[[TX]]] : memref<?x?xf32>
// CHECK: memref.load %[[ROW]][%{{.*}}] : memref<?xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>
// CHECK: } else {
// Not staged: the same body on %u.
// CHECK: memref.load %[[U]][%{{.*}}, %{{.*}}] : memref<?x?xf32>
// CHECK: memref.subview %[[U]]
// CHECK: gpu.terminator

// SMALL-LABEL: func.func @rows
// SMALL: arith.cmpi ule, %{{.*}}, %c1024
func.func @rows(%u: memref<?x?xf32>, %n: index) {
  %w = memref.alloc(%n, %n) : memref<?x?xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %cols = memref.dim %w, %c0 : memref<?x?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    scf.for %c = %c0 to %cols step %c1 {
      %d = memref.load %u[%c, %c] : memref<?x?xf32>
      %rest = arith.subi %cols, %c : index
      %row = memref.subview %u[%c, 0] [1, %rest] [1, 1] : memref<?x?xf32> to memref<?xf32, strided<[1], offset: ?>>
      %x = memref.load %w[%c, %tx] : memref<?x?xf32>
      %s = scf.for %k = %c0 to %rest step %c1 iter_args(%acc = %x) -> (f32) {
        %v = memref.load %row[%k] : memref<?xf32, strided<[1], offset: ?>>
        %p = arith.mulf %v, %d : f32
        %a = arith.subf %acc, %p : f32
        scf.yield %a : f32
      }
      memref.store %s, %w[%c, %tx] : memref<?x?xf32>
    }
    gpu.terminator
  }
  memref.dealloc %w : memref<?x?xf32>
  return
}

// -----

// Left alone: reads at a thread's own index (a row per thread), a matrix
// the launch also writes, and a matrix that a written one may share
// memory with (two function arguments).

// CHECK-LABEL: func.func @not_uniform
// CHECK-NOT: dynamic_shared_memory
// CHECK: return
func.func @not_uniform(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    // %a at the thread's row.
    %v = memref.load %a[%tx, %c0] : memref<?x?xf32>
    // %b uniformly, but %out (another argument) is written.
    %u = memref.load %b[%c0, %c0] : memref<?x?xf32>
    %s = arith.addf %v, %u : f32
    memref.store %s, %out[%tx] : memref<?xf32>
    gpu.terminator
  }
  return
}

// -----

// A uniform read of a matrix the launch writes elsewhere: the copy would
// miss the writes.

// CHECK-LABEL: func.func @written
// CHECK-NOT: dynamic_shared_memory
// CHECK: return
func.func @written(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %m = memref.alloc(%n) : memref<?x32xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %m[%c0, %c0] : memref<?x32xf32>
    %row = memref.subview %m[1, 0] [1, 32] [1, 1] : memref<?x32xf32> to memref<32xf32, strided<[1], offset: 32>>
    memref.store %v, %row[%tx] : memref<32xf32, strided<[1], offset: 32>>
    gpu.terminator
  }
  memref.dealloc %m : memref<?x32xf32>
  return
}

// -----

// Fresh allocations do not alias: %t is staged although %o is written.
// Static shapes: the sizes are constants, the total 16-byte aligned
// (3 x 5 x 4 bytes = 60, asked as 64).

// FOLDED-LABEL: func.func @fresh
// FOLDED: gpu.launch {{.*}} dynamic_shared_memory_size %c64_i32
// FOLDED-NOT: scf.if
// FOLDED: gpu.barrier
// CHECK-LABEL: func.func @fresh
// CHECK: %[[FITS:.*]] = arith.cmpi ule
// CHECK: gpu.launch {{.*}} dynamic_shared_memory_size
// CHECK: memref.view %{{.*}}[%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<3x5xf32, #gpu.address_space<workgroup>>
func.func @fresh() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %t = memref.alloc() : memref<3x5xf32>
  %o = memref.alloc() : memref<32xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %v = memref.load %t[%c1, %c1] : memref<3x5xf32>
    memref.store %v, %o[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}
