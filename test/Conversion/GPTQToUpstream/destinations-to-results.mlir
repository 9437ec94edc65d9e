// RUN: gptq-opt %s --split-input-file --gptq-destinations-to-results --verify-diagnostics | FileCheck %s

// A cache updated in place becomes a tensor argument and an extra result;
// its memref.dim a tensor.dim.
// CHECK-LABEL: func.func @decode(
// CHECK-SAME: %[[X:.*]]: tensor<?xf32>, %[[C:.*]]: tensor<2x?xf32>) -> (tensor<?xf32>, tensor<2x?xf32>)
// CHECK: %[[N:.*]] = tensor.dim %[[C]], %{{.*}} : tensor<2x?xf32>
// CHECK: %[[NEW:.*]] = tensor.insert_slice %[[X]] into %[[C]]
// CHECK-NOT: bufferization
// CHECK: return %[[X]], %[[NEW]] : tensor<?xf32>, tensor<2x?xf32>
func.func @decode(%x: tensor<?xf32>, %cache: memref<2x?xf32>) -> tensor<?xf32> {
  %c1 = arith.constant 1 : index
  %t = bufferization.to_tensor %cache restrict writable : memref<2x?xf32> to tensor<2x?xf32>
  %n = memref.dim %cache, %c1 : memref<2x?xf32>
  %new = tensor.insert_slice %x into %t[0, 0] [1, %n] [1, 1] : tensor<?xf32> into tensor<2x?xf32>
  bufferization.materialize_in_destination %new in restrict writable %cache : (tensor<2x?xf32>, memref<2x?xf32>) -> ()
  return %x : tensor<?xf32>
}

// -----

// A function without memref arguments is left as it is.
// CHECK-LABEL: func.func @forward(%{{.*}}: tensor<4xf32>) -> tensor<4xf32>
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @below {{argument #0 of '@read_twice' ('memref<4xf32>'): used by 'bufferization.to_tensor'; expected one bufferization.to_tensor of it and one bufferization.materialize_in_destination into it, in the function's block}}
func.func @read_twice(%cache: memref<4xf32>) -> tensor<4xf32> {
  %a = bufferization.to_tensor %cache restrict writable : memref<4xf32> to tensor<4xf32>
  %b = bufferization.to_tensor %cache restrict writable : memref<4xf32> to tensor<4xf32>
  bufferization.materialize_in_destination %a in restrict writable %cache : (tensor<4xf32>, memref<4xf32>) -> ()
  return %b : tensor<4xf32>
}

// -----

// expected-error @below {{argument #0 of '@never_written' ('memref<4xf32>'): expected one bufferization.to_tensor of it and one bufferization.materialize_in_destination into it, found no write}}
func.func @never_written(%cache: memref<4xf32>) -> tensor<4xf32> {
  %a = bufferization.to_tensor %cache restrict writable : memref<4xf32> to tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// expected-error @below {{argument #0 of '@stored' ('memref<4xf32>'): used by 'memref.store'}}
func.func @stored(%cache: memref<4xf32>, %v: f32) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %a = bufferization.to_tensor %cache restrict writable : memref<4xf32> to tensor<4xf32>
  memref.store %v, %cache[%c0] : memref<4xf32>
  bufferization.materialize_in_destination %a in restrict writable %cache : (tensor<4xf32>, memref<4xf32>) -> ()
  return %a : tensor<4xf32>
}

// -----

// expected-error @below {{argument #0 of '@strided' ('memref<4xf32, strided<[2]>>'): a memref with a non-identity layout}}
func.func @strided(%cache: memref<4xf32, strided<[2]>>) -> tensor<4xf32> {
  %a = bufferization.to_tensor %cache restrict writable : memref<4xf32, strided<[2]>> to tensor<4xf32>
  bufferization.materialize_in_destination %a in restrict writable %cache : (tensor<4xf32>, memref<4xf32, strided<[2]>>) -> ()
  return %a : tensor<4xf32>
}

// -----

// expected-error @below {{argument #0 of '@callee' ('memref<4xf32>'): the function is called ('func.call'); only entry points are rewritten}}
func.func @callee(%cache: memref<4xf32>) -> tensor<4xf32> {
  %a = bufferization.to_tensor %cache restrict writable : memref<4xf32> to tensor<4xf32>
  bufferization.materialize_in_destination %a in restrict writable %cache : (tensor<4xf32>, memref<4xf32>) -> ()
  return %a : tensor<4xf32>
}
func.func @caller(%cache: memref<4xf32>) -> tensor<4xf32> {
  %r = func.call @callee(%cache) : (memref<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
