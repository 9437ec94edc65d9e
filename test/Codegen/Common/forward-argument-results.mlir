// RUN: gptq-opt %s --gptq-forward-argument-results --split-input-file --allow-unregistered-dialect | FileCheck %s

// A private kernel that returns its output argument (through a cast) loses
// that result; the caller reads the buffer it passed, cast back to the
// result's type. The result that is a fresh buffer stays, and so does the
// call's no_inline attribute.
// CHECK-LABEL: func.func private @kernel
// CHECK-SAME: (%{{.*}}: memref<?xf32>, %{{.*}}: memref<?xf32>) -> memref<4xf32>
// CHECK: return %{{.*}} : memref<4xf32>
func.func private @kernel(%a: memref<?xf32>, %out: memref<?xf32>) -> (memref<4xf32>, memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %x = memref.load %a[%c0] : memref<?xf32>
  memref.store %x, %out[%c0] : memref<?xf32>
  %fresh = memref.alloc() : memref<4xf32>
  %cast = memref.cast %out : memref<?xf32> to memref<?xf32>
  return %fresh, %cast : memref<4xf32>, memref<?xf32>
}
// CHECK-LABEL: func.func @caller
// CHECK-SAME: (%[[A:.*]]: memref<?xf32>, %[[BUF:.*]]: memref<8xf32>)
// CHECK: %[[ARG:.*]] = memref.cast %[[BUF]] : memref<8xf32> to memref<?xf32>
// CHECK: %[[FRESH:.*]] = call @kernel(%[[A]], %[[ARG]]) {no_inline} : (memref<?xf32>, memref<?xf32>) -> memref<4xf32>
// CHECK: return %[[FRESH]], %[[ARG]]
func.func @caller(%a: memref<?xf32>, %buf: memref<8xf32>) -> (memref<4xf32>, memref<?xf32>) {
  %arg = memref.cast %buf : memref<8xf32> to memref<?xf32>
  %r:2 = call @kernel(%a, %arg) {no_inline} : (memref<?xf32>, memref<?xf32>) -> (memref<4xf32>, memref<?xf32>)
  return %r#0, %r#1 : memref<4xf32>, memref<?xf32>
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
