// RUN: gptq-opt %s --gptq-map-parallel-loops-to-gpu --split-input-file | FileCheck %s
// RUN: not gptq-opt %s --gptq-map-parallel-loops-to-gpu="threads-x=64 threads-y=32" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TOOMANY
// RUN: gptq-opt %s --gptq-map-parallel-loops-to-gpu --split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: gptq-opt %s --gptq-map-parallel-loops-to-gpu="threads-long=64" --split-input-file | FileCheck %s --check-prefix=LONG64

// A 2-D loop: tiles of 8 x 32, the tile loop on blocks and the loop in a
// tile on threads, the last dimension on x; the nested loop runs
// sequentially in each thread.
// CHECK-LABEL: func.func @two_d
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[S8:.*]] = arith.muli %{{.*}}, %[[C8]] : index
// CHECK-DAG: %[[S32:.*]] = arith.muli %{{.*}}, %[[C32]] : index
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to ({{.*}}) step (%[[S8]], %[[S32]])
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to (%[[S8]], %[[S32]])
// CHECK: scf.if
// CHECK: scf.for
// CHECK-NOT: scf.parallel
// CHECK: memref.store
// CHECK: {mapping = [#gpu.loop_dim_map<processor = thread_y, {{.*}}>, #gpu.loop_dim_map<processor = thread_x, {{.*}}>]}
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_y, {{.*}}>, #gpu.loop_dim_map<processor = block_x, {{.*}}>]}
func.func @two_d(%m: memref<?x?x?xf32>, %a: index, %b: index, %c: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%a, %b) step (%c1, %c1) {
    scf.parallel (%k) = (%c0) to (%c) step (%c1) {
      memref.store %f, %m[%i, %j, %k] : memref<?x?x?xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

// A 1-D loop: 256 threads per block. Three dimensions or more: the last
// three on x, y, z; the others sequential.
// CHECK-LABEL: func.func @one_d
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[S:.*]] = arith.muli %{{.*}}, %[[C256]] : index
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to ({{.*}}) step (%[[S]])
// CHECK: {mapping = [#gpu.loop_dim_map<processor = thread_x, {{.*}}>]}
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x, {{.*}}>]}
// CHECK-LABEL: func.func @four_d
// CHECK: {mapping = [#gpu.loop_dim_map<processor = sequential, {{.*}}>, #gpu.loop_dim_map<processor = thread_z, {{.*}}>, #gpu.loop_dim_map<processor = thread_y, {{.*}}>, #gpu.loop_dim_map<processor = thread_x, {{.*}}>]}
// CHECK: {mapping = [#gpu.loop_dim_map<processor = sequential, {{.*}}>, #gpu.loop_dim_map<processor = block_z, {{.*}}>, #gpu.loop_dim_map<processor = block_y, {{.*}}>, #gpu.loop_dim_map<processor = block_x, {{.*}}>]}
func.func @one_d(%m: memref<?xf32>, %a: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%a) step (%c1) {
    memref.store %f, %m[%i] : memref<?xf32>
    scf.reduce
  }
  return
}
func.func @four_d(%m: memref<?x?x?x?xf32>, %a: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %j, %k, %l) = (%c0, %c0, %c0, %c0) to (%a, %a, %a, %a) step (%c1, %c1, %c1, %c1) {
    memref.store %f, %m[%i, %j, %k, %l] : memref<?x?x?x?xf32>
    scf.reduce
  }
  return
}

// -----

// A 1-D loop whose iterations run a loop marked gptq.long_iterations (a
// row of W through a block's column loop): 32 threads per block, so that
// the iterations spread over many blocks; with threads-long, that many.
// CHECK-LABEL: func.func @long_iterations
// CHECK: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[S:.*]] = arith.muli %{{.*}}, %[[C32]] : index
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to ({{.*}}) step (%[[S]])
// CHECK: {gptq.long_iterations}
// CHECK: {mapping = [#gpu.loop_dim_map<processor = thread_x, {{.*}}>]}
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x, {{.*}}>]}
// LONG64-LABEL: func.func @long_iterations
// LONG64: arith.constant 64 : index
// LONG64-NOT: arith.constant 32 : index
func.func @long_iterations(%m: memref<?x?xf32>, %a: index, %b: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%a) step (%c1) {
    scf.for %j = %c0 to %b step %c1 {
      memref.store %f, %m[%j, %i] : memref<?x?xf32>
    } {gptq.long_iterations}
    scf.reduce
  }
  return
}

// -----

// A loop with a reduction (results) stays on the host, untouched.
// CHECK-LABEL: func.func @reduction
// CHECK: scf.parallel
// CHECK-NOT: mapping
// CHECK: return
func.func @reduction(%m: memref<?xf32>, %a: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %r = scf.parallel (%i) = (%c0) to (%a) step (%c1) init (%z) -> f32 {
    %v = memref.load %m[%i] : memref<?xf32>
    scf.reduce(%v : f32) {
    ^bb0(%x: f32, %y: f32):
      %s = arith.addf %x, %y : f32
      scf.reduce.return %s : f32
    }
  }
  return %r : f32
}

// TOOMANY: threads per block must be between 1 and 1024

// -----

// A loop marked gptq.one_block runs whole in one block of 256 threads: its
// scalar reads run in every thread alike, each parallel loop is shared
// among the threads (every 256th iteration of its linearized space, the
// last dimension fastest), with a barrier before it (none where only pure
// ops follow the last one) and one after it.
// CHECK-LABEL: func.func @one_block
// (%c1 and %c1_N are constants 1.)
// CHECK: %[[C256:[a-z0-9_]+]] = arith.constant 256 : index
// CHECK: gpu.launch blocks({{.*}}) in (%{{[a-z0-9]+}} = %c1{{(_[0-9]+)?}}, %{{[a-z0-9]+}} = %c1{{(_[0-9]+)?}}, %{{[a-z0-9]+}} = %c1{{(_[0-9]+)?}}) threads(%[[TX:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{[a-z0-9]+}} = %[[C256]], %{{[a-z0-9]+}} = %c1{{(_[0-9]+)?}}, %{{[a-z0-9]+}} = %c1{{(_[0-9]+)?}})
// CHECK: scf.for %[[J:[a-z0-9_]+]] =
// CHECK: %[[D:[a-z0-9_]+]] = memref.load %{{.*}}[%[[J]]]
// CHECK: gpu.barrier
// CHECK: scf.for %[[L:[a-z0-9_]+]] = %[[TX]] to %{{.*}} step %c256
// CHECK: %[[OFF:[a-z0-9_]+]] = arith.muli %[[L]], %c1
// CHECK: %[[IV:[a-z0-9_]+]] = arith.addi %[[J]], %[[OFF]]
// CHECK: memref.store %[[D]], %{{.*}}[%[[IV]]]
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: scf.for %[[L2:[a-z0-9_]+]] = %[[TX]] to %{{.*}} step %c256
// CHECK: arith.remui %[[L2]]
// CHECK: arith.divui %[[L2]]
// CHECK-NOT: scf.parallel
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}]
// CHECK: gpu.barrier
// CHECK: gpu.terminator
// CHECK-NOT: gptq.one_block
func.func @one_block(%v: memref<?xf32>, %w: memref<?xf32>, %m: memref<?x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %j = %c0 to %n step %c1 {
    %d = memref.load %v[%j] : memref<?xf32>
    scf.parallel (%k) = (%j) to (%n) step (%c1) {
      memref.store %d, %w[%k] : memref<?xf32>
      scf.reduce
    }
    %j1 = arith.addi %j, %c1 : index
    scf.parallel (%i, %k) = (%j1, %j) to (%n, %n) step (%c1, %c1) {
      %x = memref.load %w[%k] : memref<?xf32>
      scf.parallel (%z) = (%c0) to (%c1) step (%c1) {
        memref.store %x, %m[%i, %k] : memref<?x?xf32>
        scf.reduce
      }
      scf.reduce
    }
  } {gptq.one_block}
  return
}

// -----

// A marked loop that writes outside its parallel loops cannot run in every
// thread alike: a remark, and its parallel loops become kernels as usual.
// CHECK-LABEL: func.func @one_block_refused
// CHECK-NOT: gpu.launch
// CHECK: scf.for
// CHECK: memref.store
// CHECK: scf.parallel
// CHECK: {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK-NOT: gptq.one_block
// REMARK: remark: gptq-map-parallel-loops-to-gpu: the loop marked gptq.one_block runs as separate kernels: it holds 'memref.store' outside its parallel loops
func.func @one_block_refused(%v: memref<?xf32>, %w: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  scf.for %j = %c0 to %n step %c1 {
    memref.store %f, %v[%j] : memref<?xf32>
    scf.parallel (%k) = (%j) to (%n) step (%c1) {
      memref.store %f, %w[%k] : memref<?xf32>
      scf.reduce
    }
  } {gptq.one_block}
  return
}
