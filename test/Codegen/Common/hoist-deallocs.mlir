// RUN: gptq-opt %s --gptq-hoist-deallocs --split-input-file | FileCheck %s

// Each dealloc moves up to the last use of its buffer or an alias of it.
// CHECK-LABEL: func.func @two
// CHECK: %[[A:.*]] = memref.alloc
// CHECK: memref.store {{.*}}, %[[A]]
// CHECK: %[[V:.*]] = memref.subview %[[A]]
// CHECK: memref.load %[[V]]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK: %[[B:.*]] = memref.alloc
// CHECK: scf.for
// CHECK: memref.store {{.*}}, %[[B]]
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK: return
func.func @two(%n: index, %x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc(%n) : memref<?xf32>
  memref.store %x, %a[%c0] : memref<?xf32>
  %v = memref.subview %a[0] [1] [1] : memref<?xf32> to memref<1xf32, strided<[1]>>
  %y = memref.load %v[%c0] : memref<1xf32, strided<[1]>>
  %b = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    memref.store %y, %b[%i] : memref<?xf32>
  }
  %z = arith.addf %y, %x : f32
  memref.dealloc %a : memref<?xf32>
  memref.dealloc %b : memref<?xf32>
  return %z : f32
}

// -----

// A buffer carried through a loop is alive until the loop result's last use.
// CHECK-LABEL: func.func @carried
// CHECK: %[[A:.*]] = memref.alloc
// CHECK: %[[R:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[A]])
// CHECK: memref.load %[[R]]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK: arith.mulf
func.func @carried(%n: index, %x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc(%n) : memref<?xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%m = %a) -> (memref<?xf32>) {
    memref.store %x, %m[%i] : memref<?xf32>
    scf.yield %m : memref<?xf32>
  }
  %y = memref.load %r[%c0] : memref<?xf32>
  %z = arith.mulf %y, %y : f32
  memref.dealloc %a : memref<?xf32>
  return %z : f32
}

// -----

// A buffer whose alias is returned, or that is freed in another block, is
// left alone.
// CHECK-LABEL: func.func @escapes
// CHECK: %[[A:.*]] = memref.alloc
// CHECK: %[[B:.*]] = memref.alloc
// CHECK: memref.store
// CHECK: memref.store
// CHECK: scf.if
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK: memref.dealloc %[[A]]
// CHECK-NEXT: return %[[A]]
func.func @escapes(%n: index, %x: f32, %c: i1) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %a = memref.alloc(%n) : memref<?xf32>
  %b = memref.alloc(%n) : memref<?xf32>
  memref.store %x, %a[%c0] : memref<?xf32>
  memref.store %x, %b[%c0] : memref<?xf32>
  scf.if %c {
    memref.dealloc %b : memref<?xf32>
  }
  memref.dealloc %a : memref<?xf32>
  return %a : memref<?xf32>
}
