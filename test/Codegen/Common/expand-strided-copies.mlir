// RUN: gptq-opt %s --gptq-expand-strided-copies | FileCheck %s

// Copies with a strided side become linalg.copy; copies between identity
// layouts (memcpy) and rank-0 copies stay.
// CHECK-LABEL: func.func @copies
// CHECK-SAME: (%[[A:.*]]: memref<?x?xf32>, %[[B:.*]]: memref<?x?xf32>, %[[S:.*]]: memref<?x?xf32, strided<[?, 1], offset: ?>>, %[[X:.*]]: memref<f32>, %[[Y:.*]]: memref<f32>)
// CHECK: memref.copy %[[A]], %[[B]] : memref<?x?xf32> to memref<?x?xf32>
// CHECK: linalg.copy ins(%[[S]] : memref<?x?xf32, strided<[?, 1], offset: ?>>) outs(%[[A]] : memref<?x?xf32>)
// CHECK: linalg.copy ins(%[[A]] : memref<?x?xf32>) outs(%[[S]] : memref<?x?xf32, strided<[?, 1], offset: ?>>)
// CHECK: memref.copy %[[X]], %[[Y]] : memref<f32> to memref<f32>
// CHECK-NOT: memref.copy
func.func @copies(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %s: memref<?x?xf32, strided<[?, 1], offset: ?>>, %x: memref<f32>, %y: memref<f32>) {
  memref.copy %a, %b : memref<?x?xf32> to memref<?x?xf32>
  memref.copy %s, %a : memref<?x?xf32, strided<[?, 1], offset: ?>> to memref<?x?xf32>
  memref.copy %a, %s : memref<?x?xf32> to memref<?x?xf32, strided<[?, 1], offset: ?>>
  memref.copy %x, %y : memref<f32> to memref<f32>
  return
}
