// RUN: gptq-opt %s --gptq-managed-memory | FileCheck %s

// Host buffers become managed memory; arguments and constants are copied
// into managed buffers at the entry and freed before every return;
// allocations inside kernels are left alone.
// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[A:.*]]: memref<?xf32>, %[[N:.*]]: index)
// CHECK: %[[D:.*]] = memref.dim %[[A]], %{{.*}} : memref<?xf32>
// CHECK: %[[AC:.*]] = gpu.alloc  host_shared (%[[D]]) : memref<?xf32>
// CHECK: memref.copy %[[A]], %[[AC]]
// CHECK: %[[G:.*]] = memref.get_global @table : memref<4xf32>
// CHECK: %[[GC:.*]] = gpu.alloc  host_shared () : memref<4xf32>
// CHECK: memref.copy %[[G]], %[[GC]]
// CHECK: %[[B:.*]] = gpu.alloc  host_shared (%[[N]]) : memref<?xf32>
// CHECK: %[[T:.*]] = gpu.wait async
// CHECK: %[[T2:.*]] = gpu.dealloc async [%[[T]]] %[[B]] : memref<?xf32>
// CHECK: gpu.wait [%[[T2]]]
// CHECK: %[[R:.*]] = gpu.alloc  host_shared (%[[N]]) : memref<?xf32>
// CHECK: gpu.launch_func @k::@k {{.*}} args(%[[AC]] : memref<?xf32>, %[[GC]] : memref<4xf32>, %[[R]] : memref<?xf32>)
// CHECK: gpu.dealloc async [%{{.*}}] %[[GC]]
// CHECK: gpu.dealloc async [%{{.*}}] %[[AC]]
// CHECK: return %[[R]]
// A buffer that only gives a memref.reshape its shape stays on the host.
// CHECK-LABEL: func.func @shape
// CHECK: %[[S:.*]] = memref.alloc() : memref<2xindex>
// CHECK: memref.reshape %{{.*}}(%[[S]])
// CHECK: memref.dealloc %[[S]]
// CHECK: gpu.func @k
// CHECK: memref.alloc() : memref<8xf32>
module attributes {gpu.container_module} {
  func.func @f(%a: memref<?xf32>, %n: index) -> memref<?xf32> {
    %c1 = arith.constant 1 : index
    %b = memref.alloc(%n) : memref<?xf32>
    memref.dealloc %b : memref<?xf32>
    %r = memref.alloc(%n) : memref<?xf32>
    %g = memref.get_global @table : memref<4xf32>
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%a : memref<?xf32>, %g : memref<4xf32>, %r : memref<?xf32>)
    return %r : memref<?xf32>
  }
  func.func @shape(%m: index, %n: index) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %mn = arith.muli %m, %n : index
    %a = memref.alloc(%mn) : memref<?xf32>
    %s = memref.alloc() : memref<2xindex>
    memref.store %m, %s[%c0] : memref<2xindex>
    memref.store %n, %s[%c1] : memref<2xindex>
    %r = memref.reshape %a(%s) : (memref<?xf32>, memref<2xindex>) -> memref<?x?xf32>
    memref.dealloc %s : memref<2xindex>
    return %r : memref<?x?xf32>
  }
  memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
  gpu.module @k {
    gpu.func @k(%a: memref<?xf32>, %g: memref<4xf32>, %r: memref<?xf32>) kernel {
      %t = memref.alloc() : memref<8xf32>
      memref.dealloc %t : memref<8xf32>
      gpu.return
    }
  }
}
