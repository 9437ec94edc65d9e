// RUN: gptq-opt %s --gptq-forward-argument-results --split-input-file --allow-unregistered-dialect | FileCheck %s

// A private kernel that returns its output argument (through a cast) loses
// that result; the caller reads the buffer it passed, cast back to the
// result's type. The result that is a buffer the kernel allocates becomes
// its last argument, allocated by the caller. The call keeps its no_inline
// attribute.
// CHECK-LABEL: func.func private @kernel
// CHECK-SAME: (%{{.*}}: memref<?xf32>, %[[OUT:.*]]: memref<?xf32>, %[[FRESH:.*]]: memref<4xf32>)
// CHECK-NOT: ->
// CHECK-NOT: memref.alloc
// CHECK: memref.store %{{.*}}, %[[FRESH]]
// CHECK: return{{$}}
func.func private @kernel(%a: memref<?xf32>, %out: memref<?xf32>) -> (memref<4xf32>, memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %x = memref.load %a[%c0] : memref<?xf32>
  memref.store %x, %out[%c0] : memref<?xf32>
  %fresh = memref.alloc() : memref<4xf32>
  memref.store %x, %fresh[%c0] : memref<4xf32>
  %cast = memref.cast %out : memref<?xf32> to memref<?xf32>
  return %fresh, %cast : memref<4xf32>, memref<?xf32>
}
// CHECK-LABEL: func.func @caller
// CHECK-SAME: (%[[A:.*]]: memref<?xf32>, %[[BUF:.*]]: memref<8xf32>)
// CHECK: %[[ARG:.*]] = memref.cast %[[BUF]] : memref<8xf32> to memref<?xf32>
// CHECK: %[[NEW:.*]] = memref.alloc() : memref<4xf32>
// CHECK: call @kernel(%[[A]], %[[ARG]], %[[NEW]]) {no_inline} : (memref<?xf32>, memref<?xf32>, memref<4xf32>) -> ()
// CHECK: return %[[NEW]], %[[ARG]]
func.func @caller(%a: memref<?xf32>, %buf: memref<8xf32>) -> (memref<4xf32>, memref<?xf32>) {
  %arg = memref.cast %buf : memref<8xf32> to memref<?xf32>
  %r:2 = call @kernel(%a, %arg) {no_inline} : (memref<?xf32>, memref<?xf32>) -> (memref<4xf32>, memref<?xf32>)
  return %r#0, %r#1 : memref<4xf32>, memref<?xf32>
}

// -----

// A buffer sized from the arguments (a layer's output, as many rows as its
// input): each caller computes the size from its operands and allocates
// it, with the callee's alignment. A buffer whose size the callee reads
// from memory stays a result.
// CHECK-LABEL: func.func private @layer
// CHECK-SAME: (%[[X:.*]]: memref<?x4xf32>, %[[Y:.*]]: memref<?x4xf32>)
// CHECK-NOT: memref.alloc
// CHECK: "test.op"(%[[X]], %[[Y]])
// CHECK: return{{$}}
func.func private @layer(%x: memref<?x4xf32>) -> memref<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x4xf32>
  %y = memref.alloc(%n) {alignment = 64 : i64} : memref<?x4xf32>
  "test.op"(%x, %y) : (memref<?x4xf32>, memref<?x4xf32>) -> ()
  return %y : memref<?x4xf32>
}
// CHECK-LABEL: func.func private @loaded_size
// CHECK-SAME: -> memref<?xf32>
// CHECK: memref.alloc
func.func private @loaded_size(%s: memref<1xindex>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.load %s[%c0] : memref<1xindex>
  %y = memref.alloc(%n) : memref<?xf32>
  return %y : memref<?xf32>
}
// CHECK-LABEL: func.func @layers
// CHECK-SAME: (%[[X:.*]]: memref<?x4xf32>, %[[S:.*]]: memref<1xindex>)
// CHECK: %[[N0:.*]] = memref.dim %[[X]], %{{.*}} : memref<?x4xf32>
// CHECK: %[[Y0:.*]] = memref.alloc(%[[N0]]) {alignment = 64 : i64} : memref<?x4xf32>
// CHECK: call @layer(%[[X]], %[[Y0]]) : (memref<?x4xf32>, memref<?x4xf32>) -> ()
// CHECK: %[[N1:.*]] = memref.dim %[[Y0]], %{{.*}} : memref<?x4xf32>
// CHECK: %[[Y1:.*]] = memref.alloc(%[[N1]]) {alignment = 64 : i64} : memref<?x4xf32>
// CHECK: call @layer(%[[Y0]], %[[Y1]])
// CHECK: %[[L:.*]] = call @loaded_size(%[[S]]) : (memref<1xindex>) -> memref<?xf32>
// CHECK: return %[[Y1]], %[[L]]
func.func @layers(%x: memref<?x4xf32>, %s: memref<1xindex>) -> (memref<?x4xf32>, memref<?xf32>) {
  %y0 = call @layer(%x) : (memref<?x4xf32>) -> memref<?x4xf32>
  %y1 = call @layer(%y0) : (memref<?x4xf32>) -> memref<?x4xf32>
  %l = call @loaded_size(%s) : (memref<1xindex>) -> memref<?xf32>
  return %y1, %l : memref<?x4xf32>, memref<?xf32>
}

// -----

// Public functions keep their signatures (callers outside the module).
// CHECK-LABEL: func.func @entry
// CHECK-SAME: -> memref<?xf32>
// CHECK: return %{{.*}} : memref<?xf32>
func.func @entry(%out: memref<?xf32>) -> memref<?xf32> {
  return %out : memref<?xf32>
}

// -----

// A private function whose symbol is used other than by a call is left
// alone.
// CHECK-LABEL: func.func private @taken
// CHECK-SAME: -> memref<?xf32>
func.func private @taken(%out: memref<?xf32>) -> memref<?xf32> {
  return %out : memref<?xf32>
}
// CHECK-LABEL: func.func @user
// CHECK: "test.use_symbol"() {sym = @taken}
func.func @user() {
  "test.use_symbol"() {sym = @taken} : () -> ()
  return
}
