// RUN: gptq-opt %s --gptq-export-entry-points | FileCheck %s

// CHECK-LABEL: func.func @entry
// CHECK-SAME: attributes {gptq.signature = (tensor<?xf32>, i64) -> tensor<?xf32>, llvm.emit_c_interface}
func.func @entry(%x: tensor<?xf32>, %n: i64) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}

// Private functions and declarations are not entry points.
// CHECK-LABEL: func.func private @helper
// CHECK-NOT: gptq.signature
func.func private @helper(%x: tensor<?xf32>) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}
// CHECK-LABEL: func.func private @external
// CHECK-NOT: gptq.signature
func.func private @external(%x: tensor<?xf32>) -> tensor<?xf32>

// Tensor arguments of entry points become read-only for bufferization; an
// explicit setting stays.
// CHECK-LABEL: func.func @writes
// CHECK-SAME: %{{.*}}: tensor<?xf32> {bufferization.writable = false}
// CHECK-SAME: %{{.*}}: i64,
// CHECK-SAME: %{{.*}}: tensor<?xf32> {bufferization.writable = true}
func.func @writes(%x: tensor<?xf32>, %n: i64, %y: tensor<?xf32> {bufferization.writable = true}) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}
