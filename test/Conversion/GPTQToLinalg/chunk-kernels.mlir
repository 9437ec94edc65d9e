// RUN: gptq-opt %s --gptq-matmul-to-kernel --split-input-file | FileCheck %s

// The CPU kernels' chunk kernels (a decode step's product with a weight of
// 2 to 7 bits) are written out only for the widths that the module's
// matrix products take: here 3 and 6 bits (8 has its own kernel), and
// __gptq_chunk_widths says so to the kernel's dispatch.
// CHECK-LABEL: func.func @two_widths(
// CHECK-LABEL: func.func private @__gptq_chunk_widths(
// CHECK: %[[W3:.*]] = arith.constant 3 : i64
// CHECK: arith.cmpi eq, %{{.*}}, %[[W3]] : i64
// CHECK: %[[W6:.*]] = arith.constant 6 : i64
// CHECK: arith.cmpi eq, %{{.*}}, %[[W6]] : i64
// CHECK-NOT: arith.cmpi
// CHECK: return
// CHECK-DAG: func.func private @__gptq_chunk_step(
// CHECK-DAG: func.func private @__gptq_chunk_b3(
// CHECK-DAG: func.func private @__gptq_chunk_b6(
// CHECK-NOT: func.func private @__gptq_chunk_b{{[24578]}}(
func.func @two_widths(%a: tensor<1x?x64xf32>, %w3: tensor<32x6xi32>, %w6: tensor<32x12xi32>, %w8: tensor<32x16xi32>, %s: tensor<32x2xf32>, %z: tensor<32x2xf32>, %g: tensor<64xi32>, %e: tensor<1x?x32xf32>) -> (tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>) {
  %r3 = func.call @linear3(%a, %w3, %s, %z, %g, %e) : (tensor<1x?x64xf32>, tensor<32x6xi32>, tensor<32x2xf32>, tensor<32x2xf32>, tensor<64xi32>, tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  %r6 = func.call @linear6(%a, %w6, %s, %z, %g, %e) : (tensor<1x?x64xf32>, tensor<32x12xi32>, tensor<32x2xf32>, tensor<32x2xf32>, tensor<64xi32>, tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  %r8 = func.call @linear8(%a, %w8, %s, %z, %g, %e) : (tensor<1x?x64xf32>, tensor<32x16xi32>, tensor<32x2xf32>, tensor<32x2xf32>, tensor<64xi32>, tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  return %r3, %r6, %r8 : tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>
}
func.func @linear3(%a: tensor<1x?x64xf32>, %words: tensor<32x6xi32>, %s: tensor<32x2xf32>, %z: tensor<32x2xf32>, %g: tensor<64xi32>, %e: tensor<1x?x32xf32>) -> tensor<1x?x32xf32> {
  %c64 = arith.constant 64 : index
  %codes = gptq.unpack %words columns %c64 bits 3 : tensor<32x6xi32> -> tensor<32x64xi8>
  %w = gptq.dequantize %codes, %s, %z, %g : tensor<32x64xi8>, tensor<32x2xf32>, tensor<64xi32> -> tensor<32x64xf32>
  %w3 = tensor.expand_shape %w [[0, 1], [2]] output_shape [1, 32, 64] : tensor<32x64xf32> into tensor<1x32x64xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  %r = linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%a, %w3 : tensor<1x?x64xf32>, tensor<1x32x64xf32>) outs(%f : tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  return %r : tensor<1x?x32xf32>
}
func.func @linear6(%a: tensor<1x?x64xf32>, %words: tensor<32x12xi32>, %s: tensor<32x2xf32>, %z: tensor<32x2xf32>, %g: tensor<64xi32>, %e: tensor<1x?x32xf32>) -> tensor<1x?x32xf32> {
  %c64 = arith.constant 64 : index
  %codes = gptq.unpack %words columns %c64 bits 6 : tensor<32x12xi32> -> tensor<32x64xi8>
  %w = gptq.dequantize %codes, %s, %z, %g : tensor<32x64xi8>, tensor<32x2xf32>, tensor<64xi32> -> tensor<32x64xf32>
  %w3 = tensor.expand_shape %w [[0, 1], [2]] output_shape [1, 32, 64] : tensor<32x64xf32> into tensor<1x32x64xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  %r = linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%a, %w3 : tensor<1x?x64xf32>, tensor<1x32x64xf32>) outs(%f : tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  return %r : tensor<1x?x32xf32>
}
func.func @linear8(%a: tensor<1x?x64xf32>, %words: tensor<32x16xi32>, %s: tensor<32x2xf32>, %z: tensor<32x2xf32>, %g: tensor<64xi32>, %e: tensor<1x?x32xf32>) -> tensor<1x?x32xf32> {
  %c64 = arith.constant 64 : index
  %codes = gptq.unpack %words columns %c64 bits 8 : tensor<32x16xi32> -> tensor<32x64xi8>
  %w = gptq.dequantize %codes, %s, %z, %g : tensor<32x64xi8>, tensor<32x2xf32>, tensor<64xi32> -> tensor<32x64xf32>
  %w3 = tensor.expand_shape %w [[0, 1], [2]] output_shape [1, 32, 64] : tensor<32x64xf32> into tensor<1x32x64xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  %r = linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%a, %w3 : tensor<1x?x64xf32>, tensor<1x32x64xf32>) outs(%f : tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  return %r : tensor<1x?x32xf32>
}

// -----

// Float weights only: no chunk kernel, and no width has one.
// CHECK-LABEL: func.func @float_only(
// CHECK-LABEL: func.func private @__gptq_chunk_widths(
// CHECK-NOT: arith.cmpi
// CHECK: return %false : i1
// CHECK-NOT: func.func private @__gptq_chunk_b
func.func @float_only(%a: tensor<1x?x64xf32>, %b: tensor<1x32x64xf32>, %e: tensor<1x?x32xf32>) -> tensor<1x?x32xf32> {
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  %r = linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%a, %b : tensor<1x?x64xf32>, tensor<1x32x64xf32>) outs(%f : tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  return %r : tensor<1x?x32xf32>
}
