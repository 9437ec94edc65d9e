// RUN: gptq-opt %s --gptq-to-quant-types --split-input-file | FileCheck %s

// One grid per row: per-axis quantization along the output dimension, the
// codes as they are, a byte each, the storage range narrowed to 4 bits.
// CHECK-LABEL: func.func @per_axis_4_bits
// CHECK-NOT: gptq.
// CHECK: %[[CODES:.+]] = arith.constant dense<{{\[}}[0, 1, 2, 3, 4, 5, 6, 15], [7, 6, 5, 4, 3, 2, 1, 0]]> : tensor<2x8xi8>
// CHECK-NEXT: %[[Q:.+]] = quant.scast %[[CODES]] : tensor<2x8xi8> to tensor<2x8x!quant.uniform<u8<0:15>:f32:0, {5.000000e-01:8,2.500000e-01:15}>>
// CHECK-NEXT: %[[W:.+]] = quant.dcast %[[Q]] : tensor<2x8x!quant.uniform<u8<0:15>:f32:0, {5.000000e-01:8,2.500000e-01:15}>> to tensor<2x8xf32>
// CHECK-NEXT: return %[[W]]
func.func @per_axis_4_bits() -> tensor<2x8xf32> {
  %w = arith.constant dense<[[-162254320], [19088743]]> : tensor<2x1xi32>
  %c8 = arith.constant 8 : index
  %s = arith.constant dense<[[0.5], [0.25]]> : tensor<2x1xf32>
  %z = arith.constant dense<[[8.0], [15.0]]> : tensor<2x1xf32>
  %g = arith.constant dense<0> : tensor<8xi32>
  %codes = gptq.unpack %w columns %c8 bits 4 : tensor<2x1xi32> -> tensor<2x8xi8>
  %r = gptq.dequantize %codes, %s, %z, %g : tensor<2x8xi8>, tensor<2x1xf32>, tensor<8xi32> -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

// Groups of 4 columns: sub-channel quantization with blocks 1 x 4, the
// storage range narrowed to 2 bits.
// CHECK-LABEL: func.func @sub_channel_2_bits
// CHECK: %[[CODES:.+]] = arith.constant dense<{{\[}}[0, 1, 2, 3, 3, 2, 1, 0], [1, 1, 1, 1, 2, 2, 2, 2]]> : tensor<2x8xi8>
// CHECK-NEXT: %[[Q:.+]] = quant.scast %[[CODES]] : tensor<2x8xi8> to tensor<2x8x!quant.uniform<u8<0:3>:f32:{0:1, 1:4}, {{\{}}{5.000000e-01:2, 1.250000e-01:1}, {2.500000e-01:3, 1.000000e+00}}>>
// CHECK-NEXT: %[[W:.+]] = quant.dcast %[[Q]] : {{.*}} to tensor<2x8xf32>
// CHECK-NEXT: return %[[W]]
func.func @sub_channel_2_bits() -> tensor<2x8xf32> {
  %w = arith.constant dense<[[7140], [43605]]> : tensor<2x1xi32>
  %c8 = arith.constant 8 : index
  %s = arith.constant dense<[[0.5, 0.125], [0.25, 1.0]]> : tensor<2x2xf32>
  %z = arith.constant dense<[[2.0, 1.0], [3.0, 0.0]]> : tensor<2x2xf32>
  %g = arith.constant dense<[0, 0, 0, 0, 1, 1, 1, 1]> : tensor<8xi32>
  %codes = gptq.unpack %w columns %c8 bits 2 : tensor<2x1xi32> -> tensor<2x8xi8>
  %r = gptq.dequantize %codes, %s, %z, %g : tensor<2x8xi8>, tensor<2x2xf32>, tensor<8xi32> -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

// 3-bit codes straddle words; 11 columns in groups of 4 leave the last group
// short: the blocks are padded with the row's zero point of the last group
// (5) and the weight is a slice of them.
// CHECK-LABEL: func.func @padded_3_bits
// CHECK: %[[CODES:.+]] = arith.constant dense<{{\[}}[0, 1, 2, 3, 4, 5, 6, 7, 7, 6, 5, 5]]> : tensor<1x12xi8>
// CHECK-NEXT: %[[Q:.+]] = quant.scast %[[CODES]] : tensor<1x12xi8> to tensor<1x12x!quant.uniform<u8<0:7>:f32:{0:1, 1:4}, {{\{}}{1.000000e+00:4, 2.000000e+00:3, 5.000000e-01:5}}>>
// CHECK-NEXT: %[[D:.+]] = quant.dcast %[[Q]] : {{.*}} to tensor<1x12xf32>
// CHECK-NEXT: %[[W:.+]] = tensor.extract_slice %[[D]][0, 0] [1, 11] [1, 1] : tensor<1x12xf32> to tensor<1x11xf32>
// CHECK-NEXT: return %[[W]]
func.func @padded_3_bits() -> tensor<1x11xf32> {
  %w = arith.constant dense<[[2012923528, 1]]> : tensor<1x2xi32>
  %c11 = arith.constant 11 : index
  %s = arith.constant dense<[[1.0, 2.0, 0.5]]> : tensor<1x3xf32>
  %z = arith.constant dense<[[4.0, 3.0, 5.0]]> : tensor<1x3xf32>
  %g = arith.constant dense<[0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2]> : tensor<11xi32>
  %codes = gptq.unpack %w columns %c11 bits 3 : tensor<1x2xi32> -> tensor<1x11xi8>
  %r = gptq.dequantize %codes, %s, %z, %g : tensor<1x11xi8>, tensor<1x3xf32>, tensor<11xi32> -> tensor<1x11xf32>
  return %r : tensor<1x11xf32>
}

// -----

// 8 bits: u8 storage over its whole range. MLIR prints signless integers
// signed: the code 255 as -1, and the sub-channel zero points, which are kept
// in the storage type, too (200 as -56); the bits are the same.
// CHECK-LABEL: func.func @sub_channel_8_bits
// CHECK: %[[CODES:.+]] = arith.constant dense<{{\[}}[0, -1, 17, -56], [1, 2, 3, 4]]> : tensor<2x4xi8>
// CHECK-NEXT: quant.scast %[[CODES]] : tensor<2x4xi8> to tensor<2x4x!quant.uniform<u8:f32:{0:1, 1:2}, {{\{}}{5.000000e-01:-128, 2.000000e+00:-56}, {2.500000e-01, 1.000000e+00:-1}}>>
func.func @sub_channel_8_bits() -> tensor<2x4xf32> {
  %w = arith.constant dense<[[-938344704], [67305985]]> : tensor<2x1xi32>
  %c4 = arith.constant 4 : index
  %s = arith.constant dense<[[0.5, 2.0], [0.25, 1.0]]> : tensor<2x2xf32>
  %z = arith.constant dense<[[128.0, 200.0], [0.0, 255.0]]> : tensor<2x2xf32>
  %g = arith.constant dense<[0, 0, 1, 1]> : tensor<4xi32>
  %codes = gptq.unpack %w columns %c4 bits 8 : tensor<2x1xi32> -> tensor<2x4xi8>
  %r = gptq.dequantize %codes, %s, %z, %g : tensor<2x4xi8>, tensor<2x2xf32>, tensor<4xi32> -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

// Act-order: columns 1 and 3 are group 0, 0 and 2 group 1. The tensor holds
// the groups in blocks (codes 2, 4 | 1, 3), and a gather reads each column
// back from its place (2, 0, 3, 1). The constants come from dense_resource
// blobs; a constant that another op also reads stays.
// CHECK-LABEL: func.func @act_order
// CHECK-DAG: %[[SCALES:.+]] = arith.constant dense_resource<act.scales> : tensor<1x2xf32>
// CHECK-DAG: %[[CODES:.+]] = arith.constant dense<{{\[}}[2, 4, 1, 3]]> : tensor<1x4xi8>
// CHECK: %[[Q:.+]] = quant.scast %[[CODES]] : tensor<1x4xi8> to tensor<1x4x!quant.uniform<u8<0:7>:f32:{0:1, 1:2}, {{\{}}{1.000000e+00:1, 5.000000e-01:2}}>>
// CHECK-NEXT: %[[D:.+]] = quant.dcast %[[Q]] : {{.*}} to tensor<1x4xf32>
// CHECK-NEXT: %[[PLACES:.+]] = arith.constant dense<[2, 0, 3, 1]> : tensor<4xi32>
// CHECK-NEXT: %[[INIT:.+]] = tensor.empty() : tensor<1x4xf32>
// CHECK-NEXT: %[[W:.+]] = linalg.generic {{.*}} ins(%[[PLACES]] : tensor<4xi32>) outs(%[[INIT]] : tensor<1x4xf32>)
// CHECK-NEXT: ^bb0(%[[P:.+]]: i32, %{{.+}}: f32):
// CHECK-NEXT: %[[R:.+]] = linalg.index 0 : index
// CHECK-NEXT: %[[PI:.+]] = arith.index_cast %[[P]] : i32 to index
// CHECK-NEXT: %[[V:.+]] = tensor.extract %[[D]][%[[R]], %[[PI]]] : tensor<1x4xf32>
// CHECK-NEXT: linalg.yield %[[V]] : f32
// CHECK: return %[[W]], %[[SCALES]]
func.func @act_order() -> (tensor<1x4xf32>, tensor<1x2xf32>) {
  %w = arith.constant dense_resource<act.qweight> : tensor<1x1xi32>
  %c4 = arith.constant 4 : index
  %s = arith.constant dense_resource<act.scales> : tensor<1x2xf32>
  %z = arith.constant dense_resource<act.zeros> : tensor<1x2xf32>
  %g = arith.constant dense_resource<act.g_idx> : tensor<4xi32>
  %codes = gptq.unpack %w columns %c4 bits 3 : tensor<1x1xi32> -> tensor<1x4xi8>
  %r = gptq.dequantize %codes, %s, %z, %g : tensor<1x4xi8>, tensor<1x2xf32>, tensor<4xi32> -> tensor<1x4xf32>
  return %r, %s : tensor<1x4xf32>, tensor<1x2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      act.qweight: "0x04000000D1080000",
      act.scales: "0x040000000000803F0000003F",
      act.zeros: "0x040000000000803F00000040",
      act.g_idx: "0x0400000001000000000000000100000000000000"
    }
  }
#-}

// -----

// Two layers share their g_idx and column count; both are rewritten.
// CHECK-LABEL: func.func @shared_constants
// CHECK-NOT: gptq.
// CHECK-COUNT-2: quant.dcast
// CHECK-NOT: gptq.
func.func @shared_constants() -> (tensor<1x8xf32>, tensor<1x8xf32>) {
  %w = arith.constant dense<[[-162254320]]> : tensor<1x1xi32>
  %v = arith.constant dense<[[19088743]]> : tensor<1x1xi32>
  %c8 = arith.constant 8 : index
  %s = arith.constant dense<[[0.5]]> : tensor<1x1xf32>
  %z = arith.constant dense<[[8.0]]> : tensor<1x1xf32>
  %g = arith.constant dense<0> : tensor<8xi32>
  %a = gptq.unpack %w columns %c8 bits 4 : tensor<1x1xi32> -> tensor<1x8xi8>
  %b = gptq.unpack %v columns %c8 bits 4 : tensor<1x1xi32> -> tensor<1x8xi8>
  %ra = gptq.dequantize %a, %s, %z, %g : tensor<1x8xi8>, tensor<1x1xf32>, tensor<8xi32> -> tensor<1x8xf32>
  %rb = gptq.dequantize %b, %s, %z, %g : tensor<1x8xi8>, tensor<1x1xf32>, tensor<8xi32> -> tensor<1x8xf32>
  return %ra, %rb : tensor<1x8xf32>, tensor<1x8xf32>
}

// -----

// Not constant weights, or codes that gptq.unpack does not make: left alone.
// CHECK-LABEL: func.func @not_constant
// CHECK-NOT: quant.
// CHECK: gptq.unpack
// CHECK: gptq.dequantize
// CHECK: gptq.dequantize
// CHECK: gptq.unpack
// CHECK: gptq.dequantize
// CHECK-NOT: quant.
func.func @not_constant(%w: tensor<2x1xi32>, %s: tensor<2x1xf32>, %codes: tensor<2x8xi8>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
  %c8 = arith.constant 8 : index
  %z = arith.constant dense<[[8.0], [15.0]]> : tensor<2x1xf32>
  %g = arith.constant dense<0> : tensor<8xi32>
  %cs = arith.constant dense<[[0.5], [0.25]]> : tensor<2x1xf32>
  %cw = arith.constant dense<[[-162254320], [19088743]]> : tensor<2x1xi32>
  // The words are an argument.
  %a = gptq.unpack %w columns %c8 bits 4 : tensor<2x1xi32> -> tensor<2x8xi8>
  %ra = gptq.dequantize %a, %cs, %z, %g : tensor<2x8xi8>, tensor<2x1xf32>, tensor<8xi32> -> tensor<2x8xf32>
  // The codes are an argument.
  %rb = gptq.dequantize %codes, %cs, %z, %g : tensor<2x8xi8>, tensor<2x1xf32>, tensor<8xi32> -> tensor<2x8xf32>
  // The scales are an argument.
  %c = gptq.unpack %cw columns %c8 bits 4 : tensor<2x1xi32> -> tensor<2x8xi8>
  %rc = gptq.dequantize %c, %s, %z, %g : tensor<2x8xi8>, tensor<2x1xf32>, tensor<8xi32> -> tensor<2x8xf32>
  return %ra, %rb, %rc : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// Dynamic shapes are left alone.
// CHECK-LABEL: func.func @dynamic
// CHECK: gptq.dequantize
func.func @dynamic(%n: index) -> tensor<?x8xf32> {
  %w = arith.constant dense<[[-162254320], [19088743]]> : tensor<2x1xi32>
  %c8 = arith.constant 8 : index
  %s = arith.constant dense<[[0.5], [0.25]]> : tensor<2x1xf32>
  %z = arith.constant dense<[[8.0], [15.0]]> : tensor<2x1xf32>
  %g = arith.constant dense<0> : tensor<8xi32>
  %codes = gptq.unpack %w columns %c8 bits 4 : tensor<2x1xi32> -> tensor<?x8xi8>
  %r = gptq.dequantize %codes, %s, %z, %g : tensor<?x8xi8>, tensor<2x1xf32>, tensor<8xi32> -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
