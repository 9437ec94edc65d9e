// RUN: gptq-opt %s --gptq-parallelize-linalg --split-input-file | FileCheck %s

// A row reduction: rows in parallel; the sum runs in a register, the output
// element is loaded once before the loop and stored once after it.
// CHECK-LABEL: func.func @row_sum
// CHECK-SAME: (%[[X:.*]]: memref<?x?xf32>, %[[S:.*]]: memref<?xf32>)
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK-NEXT: %[[INIT:.*]] = memref.load %[[S]][%[[I]]]
// CHECK-NEXT: %[[SUM:.*]] = scf.for %[[J:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32)
// CHECK-NEXT: %[[E:.*]] = memref.load %[[X]][%[[I]], %[[J]]]
// CHECK-NEXT: %[[N:.*]] = arith.addf %[[ACC]], %[[E]] : f32
// CHECK-NEXT: scf.yield %[[N]]
// CHECK: memref.store %[[SUM]], %[[S]][%[[I]]]
// CHECK-NOT: linalg.generic
func.func @row_sum(%x: memref<?x?xf32>, %s: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<?x?xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%e: f32, %acc: f32):
    %n = arith.addf %acc, %e : f32
    linalg.yield %n : f32
  }
  return
}

// -----

// Elementwise over three dimensions with a linalg.index: the two outer
// loops in parallel, the innermost (contiguous) one sequential.
// CHECK-LABEL: func.func @causal
// CHECK: scf.parallel (%[[B:.*]], %[[S:.*]]) =
// CHECK: scf.for %[[T:.*]] =
// CHECK: arith.cmpi ule, %[[T]], %[[S]] : index
// CHECK: memref.store
func.func @causal(%x: memref<?x?x?xf32>, %y: memref<?x?x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, s, t) -> (b, s, t)>, affine_map<(b, s, t) -> (b, s, t)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : memref<?x?x?xf32>) outs(%y : memref<?x?x?xf32>) {
  ^bb0(%e: f32, %o: f32):
    %s = linalg.index 1 : index
    %t = linalg.index 2 : index
    %visible = arith.cmpi ule, %t, %s : index
    %z = arith.constant 0.0 : f32
    %r = arith.select %visible, %e, %z : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Ops already inside a parallel region (the tiles of a kernel) are left
// for convert-linalg-to-loops; a fill outside one becomes a parallel loop.
// CHECK-LABEL: func.func @nested
// CHECK: scf.parallel
// CHECK: scf.forall
// CHECK: linalg.fill
func.func @nested(%a: memref<8x4xf32>, %b: memref<8x4xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%a : memref<8x4xf32>)
  scf.forall (%i) in (8) {
    %row = memref.subview %b[%i, 0] [1, 4] [1, 1] : memref<8x4xf32> to memref<4xf32, strided<[1], offset: ?>>
    linalg.fill ins(%z : f32) outs(%row : memref<4xf32, strided<[1], offset: ?>>)
  }
  return
}

// -----

// A short innermost loop (rotary embedding's pairs of 2): the loop around
// it joins the sequential ones, so that the two together span 64 elements
// (LLVM unrolls the pair and vectorizes the 32); only the outer loops are
// in parallel. A dynamic innermost loop is never joined.
// CHECK-LABEL: func.func @pairs
// CHECK: scf.parallel (%[[B:.*]], %[[H:.*]]) =
// CHECK-NEXT: scf.for %[[I:.*]] = %{{.*}} to %{{.*}}
// CHECK-NEXT: scf.for %[[P:.*]] = %{{.*}} to %{{.*}}
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[B]], %[[H]], %[[I]], %[[P]]]
// CHECK-LABEL: func.func @dynamic_inner
// CHECK: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) =
// CHECK-NEXT: scf.for
// CHECK-NOT: scf.for
func.func @pairs(%x: memref<?x12x32x2xf32>, %y: memref<?x12x32x2xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, h, i, p) -> (b, h, i, p)>, affine_map<(b, h, i, p) -> (b, h, i, p)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<?x12x32x2xf32>) outs(%y : memref<?x12x32x2xf32>) {
  ^bb0(%e: f32, %o: f32):
    %n = arith.negf %e : f32
    linalg.yield %n : f32
  }
  return
}
func.func @dynamic_inner(%x: memref<?x12x2x?xf32>, %y: memref<?x12x2x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, h, i, p) -> (b, h, i, p)>, affine_map<(b, h, i, p) -> (b, h, i, p)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<?x12x2x?xf32>) outs(%y : memref<?x12x2x?xf32>) {
  ^bb0(%e: f32, %o: f32):
    %n = arith.negf %e : f32
    linalg.yield %n : f32
  }
  return
}
