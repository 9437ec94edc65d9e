// RUN: gptq-opt %s --gptq-reinterpret-dynamic-expand-shapes --split-input-file | FileCheck %s

// A dimension split into two dynamic sizes becomes a reinterpret_cast of
// the source's base: sizes as given, strides their suffix products (the
// innermost the source's), the offset the type's.
// CHECK-LABEL: func.func @two_dynamic
// CHECK-SAME: (%[[M:.*]]: memref<?x8xf32>, %[[A:.*]]: index, %[[B:.*]]: index)
// CHECK: %[[C8:.*]] = arith.constant 8 : index
// CHECK: %[[BASE:.*]], %{{.*}}, %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[M]]
// CHECK: %[[S:.*]] = arith.muli %[[B]], %[[C8]] : index
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%[[A]], %[[B]], 8], strides: [%[[S]], 8, 1] : memref<f32> to memref<?x?x8xf32>
// CHECK-NOT: memref.expand_shape
func.func @two_dynamic(%m: memref<?x8xf32>, %a: index, %b: index) -> memref<?x?x8xf32> {
  %e = memref.expand_shape %m [[0, 1], [2]] output_shape [%a, %b, 8] : memref<?x8xf32> into memref<?x?x8xf32>
  return %e : memref<?x?x8xf32>
}

// -----

// A strided source (a slice): its offset and its dimension's stride carry
// over.
// CHECK-LABEL: func.func @strided
// CHECK: %[[C16:.*]] = arith.constant 16 : index
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata
// CHECK: %[[S:.*]] = arith.muli %{{.*}}, %[[C16]] : index
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [%{{.*}}, %{{.*}}, 8], strides: [%[[S]], 16, 1]
func.func @strided(%m: memref<?x8xf32, strided<[16, 1], offset: ?>>, %a: index, %b: index) -> memref<?x?x8xf32, strided<[?, 16, 1], offset: ?>> {
  %e = memref.expand_shape %m [[0, 1], [2]] output_shape [%a, %b, 8] : memref<?x8xf32, strided<[16, 1], offset: ?>> into memref<?x?x8xf32, strided<[?, 16, 1], offset: ?>>
  return %e : memref<?x?x8xf32, strided<[?, 16, 1], offset: ?>>
}

// -----

// One dynamic size per group is left to expand-strided-metadata.
// CHECK-LABEL: func.func @one_dynamic
// CHECK: memref.expand_shape
// CHECK-NOT: memref.reinterpret_cast
func.func @one_dynamic(%m: memref<?x8xf32>, %a: index) -> memref<?x2x8xf32> {
  %e = memref.expand_shape %m [[0, 1], [2]] output_shape [%a, 2, 8] : memref<?x8xf32> into memref<?x2x8xf32>
  return %e : memref<?x2x8xf32>
}
