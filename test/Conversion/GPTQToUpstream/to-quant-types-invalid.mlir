// RUN: gptq-opt %s --gptq-to-quant-types --split-input-file --verify-diagnostics

// The layer is named after its qweight resource.
func.func @fractional_zero() -> tensor<1x8xf32> {
  %w = arith.constant dense_resource<layers.0.wq.qweight> : tensor<1x1xi32>
  %c8 = arith.constant 8 : index
  %s = arith.constant dense<[[0.5]]> : tensor<1x1xf32>
  %z = arith.constant dense<[[7.5]]> : tensor<1x1xf32>
  %g = arith.constant dense<0> : tensor<8xi32>
  %codes = gptq.unpack %w columns %c8 bits 4 : tensor<1x1xi32> -> tensor<1x8xi8>
  // expected-error @+1 {{layer 'layers.0.wq': zero point 7.5 of row 0, group 0: expected an integer in the storage range [0, 15]}}
  %r = gptq.dequantize %codes, %s, %z, %g : tensor<1x8xi8>, tensor<1x1xf32>, tensor<8xi32> -> tensor<1x8xf32>
  return %r : tensor<1x8xf32>
}

{-#
  dialect_resources: {
    builtin: {
      layers.0.wq.qweight: "0x0400000010325476"
    }
  }
#-}

// -----

// Else after the op's location.
func.func @zero_out_of_range() -> tensor<1x8xf32> {
  %w = arith.constant dense<0> : tensor<1x1xi32>
  %c8 = arith.constant 8 : index
  %s = arith.constant dense<[[0.5, 0.5]]> : tensor<1x2xf32>
  %z = arith.constant dense<[[3.0, 8.0]]> : tensor<1x2xf32>
  %g = arith.constant dense<[0, 0, 0, 0, 1, 1, 1, 1]> : tensor<8xi32>
  %codes = gptq.unpack %w columns %c8 bits 3 : tensor<1x1xi32> -> tensor<1x8xi8>
  // expected-error @unknown {{layer 'layers.1.w2': zero point 8 of row 0, group 1: expected an integer in the storage range [0, 7]}}
  %r = gptq.dequantize %codes, %s, %z, %g : tensor<1x8xi8>, tensor<1x2xf32>, tensor<8xi32> -> tensor<1x8xf32> loc("layers.1.w2")
  return %r : tensor<1x8xf32>
}

// -----

func.func @zero_scale() -> tensor<2x8xf32> {
  %w = arith.constant dense<0> : tensor<2x1xi32>
  %c8 = arith.constant 8 : index
  %s = arith.constant dense<[[0.5], [0.0]]> : tensor<2x1xf32>
  %z = arith.constant dense<[[3.0], [3.0]]> : tensor<2x1xf32>
  %g = arith.constant dense<0> : tensor<8xi32>
  %codes = gptq.unpack %w columns %c8 bits 4 : tensor<2x1xi32> -> tensor<2x8xi8>
  // expected-error @+1 {{layer 'gptq.dequantize': scale 0 of row 1, group 0: a quantized type needs a positive finite scale}}
  %r = gptq.dequantize %codes, %s, %z, %g : tensor<2x8xi8>, tensor<2x1xf32>, tensor<8xi32> -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

func.func @negative_scale() -> tensor<1x8xf32> {
  %w = arith.constant dense<0> : tensor<1x1xi32>
  %c8 = arith.constant 8 : index
  %s = arith.constant dense<[[-0.5]]> : tensor<1x1xf32>
  %z = arith.constant dense<[[3.0]]> : tensor<1x1xf32>
  %g = arith.constant dense<0> : tensor<8xi32>
  %codes = gptq.unpack %w columns %c8 bits 4 : tensor<1x1xi32> -> tensor<1x8xi8>
  // expected-error @+1 {{scale -0.5 of row 0, group 0: a quantized type needs a positive finite scale}}
  %r = gptq.dequantize %codes, %s, %z, %g : tensor<1x8xi8>, tensor<1x1xf32>, tensor<8xi32> -> tensor<1x8xf32>
  return %r : tensor<1x8xf32>
}

// -----

func.func @nan_scale() -> tensor<1x8xf32> {
  %w = arith.constant dense<0> : tensor<1x1xi32>
  %c8 = arith.constant 8 : index
  %s = arith.constant dense<[[0x7FC00000]]> : tensor<1x1xf32>
  %z = arith.constant dense<[[3.0]]> : tensor<1x1xf32>
  %g = arith.constant dense<0> : tensor<8xi32>
  %codes = gptq.unpack %w columns %c8 bits 4 : tensor<1x1xi32> -> tensor<1x8xi8>
  // expected-error @+1 {{scale nan of row 0, group 0: a quantized type needs a positive finite scale}}
  %r = gptq.dequantize %codes, %s, %z, %g : tensor<1x8xi8>, tensor<1x1xf32>, tensor<8xi32> -> tensor<1x8xf32>
  return %r : tensor<1x8xf32>
}

// -----

func.func @g_idx_out_of_range() -> tensor<1x4xf32> {
  %w = arith.constant dense<0> : tensor<1x1xi32>
  %c4 = arith.constant 4 : index
  %s = arith.constant dense<[[0.5, 0.5]]> : tensor<1x2xf32>
  %z = arith.constant dense<[[3.0, 3.0]]> : tensor<1x2xf32>
  %g = arith.constant dense<[0, 1, 2, 0]> : tensor<4xi32>
  %codes = gptq.unpack %w columns %c4 bits 4 : tensor<1x1xi32> -> tensor<1x4xi8>
  // expected-error @+1 {{g_idx[2] = 2: expected 0 to 1}}
  %r = gptq.dequantize %codes, %s, %z, %g : tensor<1x4xi8>, tensor<1x2xf32>, tensor<4xi32> -> tensor<1x4xf32>
  return %r : tensor<1x4xf32>
}

// -----

// A resource without data (elided when the module was printed).
func.func @elided() -> tensor<1x8xf32> {
  %w = arith.constant dense_resource<__elided__> : tensor<1x1xi32>
  %c8 = arith.constant 8 : index
  %s = arith.constant dense<[[0.5]]> : tensor<1x1xf32>
  %z = arith.constant dense<[[3.0]]> : tensor<1x1xf32>
  %g = arith.constant dense<0> : tensor<8xi32>
  %codes = gptq.unpack %w columns %c8 bits 4 : tensor<1x1xi32> -> tensor<1x8xi8>
  // expected-error @+1 {{layer '__elided__': the data of a constant operand is missing or does not fit its type (an elided, undefined or short dense_resource)}}
  %r = gptq.dequantize %codes, %s, %z, %g : tensor<1x8xi8>, tensor<1x1xf32>, tensor<8xi32> -> tensor<1x8xf32>
  return %r : tensor<1x8xf32>
}

// -----

func.func @empty() -> tensor<0x8xf32> {
  %w = arith.constant dense<> : tensor<0x1xi32>
  %c8 = arith.constant 8 : index
  %s = arith.constant dense<> : tensor<0x1xf32>
  %z = arith.constant dense<> : tensor<0x1xf32>
  %g = arith.constant dense<0> : tensor<8xi32>
  %codes = gptq.unpack %w columns %c8 bits 4 : tensor<0x1xi32> -> tensor<0x8xi8>
  // expected-error @+1 {{weight 0 x 8 with 1 groups: a quantized type needs a non-empty tensor}}
  %r = gptq.dequantize %codes, %s, %z, %g : tensor<0x8xi8>, tensor<0x1xf32>, tensor<8xi32> -> tensor<0x8xf32>
  return %r : tensor<0x8xf32>
}

// -----

// A blob shorter than its type.
func.func @short_blob() -> tensor<1x8xf32> {
  %w = arith.constant dense_resource<x.qweight> : tensor<1x1xi32>
  %c8 = arith.constant 8 : index
  %s = arith.constant dense_resource<x.scales> : tensor<1x1xf32>
  %z = arith.constant dense<[[3.0]]> : tensor<1x1xf32>
  %g = arith.constant dense<0> : tensor<8xi32>
  %codes = gptq.unpack %w columns %c8 bits 4 : tensor<1x1xi32> -> tensor<1x8xi8>
  // expected-error @+1 {{layer 'x': the data of a constant operand is missing or does not fit its type}}
  %r = gptq.dequantize %codes, %s, %z, %g : tensor<1x8xi8>, tensor<1x1xf32>, tensor<8xi32> -> tensor<1x8xf32>
  return %r : tensor<1x8xf32>
}

{-#
  dialect_resources: {
    builtin: {
      x.qweight: "0x0400000010325476",
      x.scales: "0x040000000000"
    }
  }
#-}

// -----

// Four columns in group 0 and one in each of groups 1 to 3: blocks of four
// columns would take 16 for 7.
func.func @uneven_groups() -> tensor<1x7xf32> {
  %w = arith.constant dense<0> : tensor<1x1xi32>
  %c7 = arith.constant 7 : index
  %s = arith.constant dense<[[0.5, 0.5, 0.5, 0.5]]> : tensor<1x4xf32>
  %z = arith.constant dense<[[3.0, 3.0, 3.0, 3.0]]> : tensor<1x4xf32>
  %g = arith.constant dense<[0, 0, 0, 0, 1, 2, 3]> : tensor<7xi32>
  %codes = gptq.unpack %w columns %c7 bits 4 : tensor<1x1xi32> -> tensor<1x7xi8>
  // expected-error @+1 {{layer 'gptq.dequantize': 4 groups of up to 4 columns would pad the 7 input columns to 16 (more than twice): the groups are too uneven for blocks of one size}}
  %r = gptq.dequantize %codes, %s, %z, %g : tensor<1x7xi8>, tensor<1x4xf32>, tensor<7xi32> -> tensor<1x7xf32>
  return %r : tensor<1x7xf32>
}
