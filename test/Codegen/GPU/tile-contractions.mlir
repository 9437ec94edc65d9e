// RUN: gptq-opt %s --gptq-gpu-tile-contractions --split-input-file | FileCheck %s
// RUN: gptq-opt %s --gptq-gpu-tile-contractions="threads=8 results=2" --split-input-file | FileCheck %s --check-prefix=T8
// RUN: not gptq-opt %s --gptq-gpu-tile-contractions="threads=33" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not gptq-opt %s --gptq-gpu-tile-contractions="results=9" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: gptq-gpu-tile-contractions: threads must be between 1 and 32 and results between 1 and 8

// The portable kernels' product C -/+ A @ B with A given transposed
// (K x M): a launch of ceil(N/64) x ceil(M/64) blocks of 16 x 16 threads,
// 4 x 4 results each; shared memory for a 64 x 16 tile of A and a 16 x 64
// tile of B, each row padded by one (64 x 17 and 16 x 65 floats: 4352 and
// 4160 bytes).
#mk = affine_map<(m, n, k) -> (k, m)>
#kn = affine_map<(m, n, k) -> (k, n)>
#mn = affine_map<(m, n, k) -> (m, n)>

// CHECK-LABEL: func.func @gemm_sub
// CHECK-SAME: (%[[AT:[a-z0-9_]+]]: memref<?x?xf32>, %[[B:[a-z0-9_]+]]: memref<?x?xf32>, %[[C:[a-z0-9_]+]]: memref<?x?xf32>, %[[PLUS:[a-z0-9_]+]]: i1)
// CHECK-NOT: linalg.generic
// CHECK: %[[K:.*]] = memref.dim %[[AT]], %c0
// CHECK: %[[M:.*]] = memref.dim %[[AT]], %c1
// CHECK: %[[N:.*]] = memref.dim %[[B]], %c1
// CHECK: %[[GX:.*]] = arith.ceildivui %[[N]], %c64
// CHECK: %[[GY:.*]] = arith.ceildivui %[[M]], %c64
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GX]], %{{.*}} = %[[GY]], %{{.*}} = %c1{{.*}}) threads(%[[TX:.*]], %[[TY:.*]], %{{.*}}) in (%{{.*}} = %c16, %{{.*}} = %c16, %{{.*}} = %c1{{.*}}) dynamic_shared_memory_size %c8512_i32
// CHECK: %[[LT:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x17xf32, #gpu.address_space<workgroup>>
// CHECK: %[[RT:.*]] = memref.view %{{.*}}[%c4352][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<16x65xf32, #gpu.address_space<workgroup>>
// Sixteen accumulators, each starting from C.
// CHECK-COUNT-16: memref.load %[[C]]
// CHECK: scf.for %[[K0:[a-z0-9_]+]] = %{{.*}} to %[[K]] step %c16 iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// Four elements of each tile per thread; A^T is read along its rows (its
// last index, m, runs with the threads).
// CHECK-COUNT-4: memref.load %[[AT]]
// CHECK-COUNT-4: memref.load %[[B]]
// CHECK: gpu.barrier
// The chunk's part of the sums, in the order of k, with the op's body:
// four elements of each tile read, sixteen results updated.
// CHECK: scf.for %[[KK:[a-z0-9_]+]] =
// CHECK-COUNT-8: memref.load %{{.*}} : memref<{{64x17|16x65}}xf32, #gpu.address_space<workgroup>>
// CHECK-COUNT-16: arith.select %[[PLUS]]
// CHECK: gpu.barrier
// CHECK-COUNT-16: memref.store %{{.*}}, %[[C]]
// CHECK: gpu.terminator

// T8: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c8, %{{.*}} = %c8, %{{.*}} = %c1{{.*}}) dynamic_shared_memory_size %c1120_i32
func.func @gemm_sub(%at: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>, %plus: i1) {
  linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%at, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>) {
  ^bb0(%a: f32, %bv: f32, %acc: f32):
    %p = arith.mulf %a, %bv : f32
    %s = arith.subf %acc, %p : f32
    %t = arith.addf %acc, %p : f32
    %v = arith.select %plus, %t, %s : f32
    linalg.yield %v : f32
  }
  return
}

// -----

// C set by a fill just before the product (the portable kernels' products
// into a fresh result): the accumulators start from the fill's value, C is
// not read, and the fill goes: one launch, not two. A product reading a
// view of the filled buffer keeps its fill.
// CHECK-LABEL: func.func @filled
// CHECK-SAME: (%[[A:[a-z0-9_]+]]: memref<?x?xf32>, %[[B:[a-z0-9_]+]]: memref<?x?xf32>, %[[C:[a-z0-9_]+]]: memref<?x?xf32>, %[[V:[a-z0-9_]+]]: f32)
// CHECK-NOT: linalg.fill
// CHECK: gpu.launch
// CHECK-NOT: memref.load %[[C]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c16 iter_args(%{{.*}} = %[[V]], %{{.*}} = %[[V]],
// CHECK: memref.store %{{.*}}, %[[C]]
// CHECK-LABEL: func.func @filled_alias
// CHECK: linalg.fill
// CHECK: gpu.launch
func.func @filled(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>, %v: f32) {
  linalg.fill ins(%v : f32) outs(%c : memref<?x?xf32>)
  %c0 = arith.constant 0 : index
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>)
  return
}
func.func @filled_alias(%b: memref<?x?xf32>, %c: memref<8x8xf32>, %v: f32) {
  linalg.fill ins(%v : f32) outs(%c : memref<8x8xf32>)
  %a = memref.cast %c : memref<8x8xf32> to memref<?x?xf32>
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<8x8xf32>)
  return
}

// -----

// A named linalg.matmul: A (M x K) is read along k, so consecutive threads
// take consecutive k (element e of the tile: row e / 16, column e mod 16).

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:[a-z0-9_]+]]: memref<?x?xf32>,
// CHECK: gpu.launch
// CHECK: scf.for %[[K0:[a-z0-9_]+]] =
// CHECK: %[[J:.*]] = arith.remui %{{.*}}, %c16{{.*}} : index
// CHECK: %[[I:.*]] = arith.divui %{{.*}}, %c16{{.*}} : index
// CHECK: %[[AM:.*]] = arith.addi %{{.*}}, %[[I]] : index
// CHECK: %[[AK:.*]] = arith.addi %[[K0]], %[[J]] : index
// CHECK: memref.load %[[A]][%[[AM]], %[[AK]]]
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[I]], %[[J]]]
// CHECK-NOT: linalg.matmul
func.func @matmul(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) {
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>)
  return
}

// -----

// A batched product: each batch a z of the grid, the batch index of every
// load and store the block's z.

// CHECK-LABEL: func.func @batch
// CHECK-SAME: (%[[A:[a-z0-9_]+]]: memref<?x?x?xf32>,
// CHECK: %[[NB:.*]] = memref.dim %[[A]], %c0
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %[[BZ:[a-z0-9_]+]]) in (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %[[NB]])
// CHECK: memref.load %[[A]][%[[BZ]], %{{.*}}, %{{.*}}]
// CHECK-NOT: linalg.batch_matmul
func.func @batch(%a: memref<?x?x?xf32>, %b: memref<?x?x?xf32>, %c: memref<?x?x?xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<?x?x?xf32>, memref<?x?x?xf32>) outs(%c : memref<?x?x?xf32>)
  return
}

// -----

// Left alone: a product inside a parallel loop (it runs in a thread of its
// own kernel), an op reading its indices, and a reduction that is not a
// product of two matrices.

// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: gpu.launch
// CHECK: linalg.matmul
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK-NOT: gpu.launch
func.func @left_alone(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>, %v: memref<?xf32>, %s: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>)
    scf.reduce
  }
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %k = linalg.index 2 : index
    %ki = arith.index_cast %k : index to i32
    %kf = arith.sitofp %ki : i32 to f32
    %p = arith.mulf %x, %kf : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]}
      ins(%v : memref<?xf32>) outs(%s : memref<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %acc, %x : f32
    linalg.yield %r : f32
  }
  return
}
