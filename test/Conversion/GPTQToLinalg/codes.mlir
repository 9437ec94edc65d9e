// RUN: gptq-opt %s --convert-gptq-to-linalg --split-input-file | FileCheck %s

// CHECK-LABEL: func.func @dequantize
// CHECK: call @__gptq_dequantize
// CHECK-LABEL: func.func private @__gptq_dequantize
// CHECK: linalg.generic
// CHECK: arith.uitofp %{{.*}} : i8 to f32
// CHECK: arith.subf
// CHECK: arith.mulf
func.func @dequantize(%c: tensor<?x?xi8>, %s: tensor<?x?xf32>, %z: tensor<?x?xf32>, %g: tensor<?xi32>) -> tensor<?x?xf32> {
  %w = gptq.dequantize %c, %s, %z, %g : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32> -> tensor<?x?xf32>
  return %w : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @pack
// CHECK: %[[BITS:.*]] = arith.constant 3 : i64
// CHECK: %[[R:.*]] = call @__gptq_pack(%{{.*}}, %[[BITS]])
// CHECK: tensor.cast %[[R]] : tensor<?x?xi32> to tensor<2x3xi32>
// CHECK-LABEL: func.func private @__gptq_pack
// CHECK: arith.shli
// CHECK: arith.ori
func.func @pack(%c: tensor<2x32xi8>) -> tensor<2x3xi32> {
  %p = gptq.pack %c bits 3 : tensor<2x32xi8> -> tensor<2x3xi32>
  return %p : tensor<2x3xi32>
}

// -----

// CHECK-LABEL: func.func @unpack
// CHECK-SAME: (%[[P:.*]]: tensor<?x?xi32>, %[[N:.*]]: index)
// CHECK: %[[BITS:.*]] = arith.constant 4 : i64
// CHECK: call @__gptq_unpack(%[[P]], %[[N]], %[[BITS]])
// CHECK-LABEL: func.func private @__gptq_unpack
// CHECK: arith.shrui
// CHECK: arith.andi
func.func @unpack(%p: tensor<?x?xi32>, %n: index) -> tensor<?x?xi8> {
  %c = gptq.unpack %p columns %n bits 4 : tensor<?x?xi32> -> tensor<?x?xi8>
  return %c : tensor<?x?xi8>
}
