// RUN: gptq-opt %s --gptq-matmul-to-kernel | FileCheck %s
// RUN: gptq-opt %s --gptq-matmul-to-kernel="fuse-dequantize=false" | FileCheck %s --check-prefix=UNFUSED
// RUN: gptq-opt %s --gptq-matmul-to-kernel="fuse-widening=false" | FileCheck %s --check-prefix=UNWIDENED

// A batch matmul in the normal form with a zero-filled init: a call of the
// kernel on the fill's empty tensor (not read), B given transposed, the
// call kept out of line; the kernel and its panel are added once.
// CHECK-LABEL: func.func @zero_init
// CHECK-SAME: (%[[A:.*]]: tensor<1x?x64xf32>, %[[B:.*]]: tensor<1x32x64xf32>, %[[E:.*]]: tensor<1x?x32xf32>)
// CHECK-NOT: linalg.fill
// CHECK-DAG: %[[F:.*]] = arith.constant false
// CHECK-DAG: %[[T:.*]] = arith.constant true
// CHECK-DAG: %[[AD:.*]] = tensor.cast %[[A]] : tensor<1x?x64xf32> to tensor<?x?x?xf32>
// CHECK-DAG: %[[BD:.*]] = tensor.cast %[[B]] : tensor<1x32x64xf32> to tensor<?x?x?xf32>
// CHECK-DAG: %[[ED:.*]] = tensor.cast %[[E]] : tensor<1x?x32xf32> to tensor<?x?x?xf32>
// Flags: transA, transB, zeroC, lowerC, lowerA, quant.
// CHECK: %[[R:.*]] = call @__gptq_matmul(%[[AD]], %[[BD]], %[[ED]], %[[F]], %[[T]], %[[T]], %[[F]], %[[F]], %[[F]], %{{.*}}) {no_inline}
// CHECK: tensor.cast %[[R]] : tensor<?x?x?xf32> to tensor<1x?x32xf32>
func.func @zero_init(%a: tensor<1x?x64xf32>, %b: tensor<1x32x64xf32>, %e: tensor<1x?x32xf32>) -> tensor<1x?x32xf32> {
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  %r = linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%a, %b : tensor<1x?x64xf32>, tensor<1x32x64xf32>) outs(%f : tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  return %r : tensor<1x?x32xf32>
}

// A transposed, B as is, an init that is accumulated into (C + A B), and a
// fill with a value other than +0.0 is an init like any other.
// CHECK-LABEL: func.func @accumulate
// CHECK-DAG: %[[F:.*]] = arith.constant false
// CHECK-DAG: %[[T:.*]] = arith.constant true
// CHECK: call @__gptq_matmul(%{{.*}}, %{{.*}}, %{{.*}}, %[[T]], %[[F]], %[[F]], %[[F]], %[[F]], %[[F]],
// CHECK: %[[ONES:.*]] = linalg.fill
// CHECK: %[[OD:.*]] = tensor.cast %[[ONES]]
// CHECK: call @__gptq_matmul(%{{.*}}, %{{.*}}, %[[OD]], %[[F]], %[[F]], %[[F]], %[[F]], %[[F]], %[[F]],
func.func @accumulate(%at: tensor<2x9x4xf32>, %b: tensor<2x9x6xf32>, %c: tensor<2x4x6xf32>, %a: tensor<2x4x9xf32>) -> (tensor<2x4x6xf32>, tensor<2x4x6xf32>) {
  %r = linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%at, %b : tensor<2x9x4xf32>, tensor<2x9x6xf32>) outs(%c : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<2x4x6xf32>
  %ones = linalg.fill ins(%one : f32) outs(%e : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %s = linalg.batch_matmul ins(%a, %b : tensor<2x4x9xf32>, tensor<2x9x6xf32>) outs(%ones : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  return %r, %s : tensor<2x4x6xf32>, tensor<2x4x6xf32>
}

// A weight that gptq.dequantize makes from gptq.unpack's codes: with
// fuse-dequantize (the default), the kernel
// gets the packed words, scales, zeros, group map and bit width and
// dequantizes while it packs B; the float weight is never formed.
// CHECK-LABEL: func.func @quantized
// CHECK-SAME: (%[[A:.*]]: tensor<1x?x64xf32>, %[[W:.*]]: tensor<32x6xi32>, %[[S:.*]]: tensor<32x2xf32>, %[[Z:.*]]: tensor<32x2xf32>, %[[G:.*]]: tensor<64xi32>
// CHECK-NOT: gptq.dequantize
// CHECK-NOT: gptq.unpack
// CHECK-DAG: %[[F:.*]] = arith.constant false
// CHECK-DAG: %[[T:.*]] = arith.constant true
// CHECK-DAG: %[[BITS:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[WD:.*]] = tensor.cast %[[W]] : tensor<32x6xi32> to tensor<?x?xi32>
// CHECK-DAG: %[[SD:.*]] = tensor.cast %[[S]] : tensor<32x2xf32> to tensor<?x?xf32>
// CHECK-DAG: %[[ZD:.*]] = tensor.cast %[[Z]] : tensor<32x2xf32> to tensor<?x?xf32>
// CHECK-DAG: %[[GD:.*]] = tensor.cast %[[G]] : tensor<64xi32> to tensor<?xi32>
// CHECK: call @__gptq_matmul(%{{.*}}, %{{.*}}, %{{.*}}, %[[F]], %[[T]], %[[T]], %[[F]], %[[F]], %[[T]], %[[WD]], %[[SD]], %[[ZD]], %[[GD]], %[[BITS]], %c0_i64, %{{.*}}, %{{.*}})
// With fuse-dequantize=false, the weight is dequantized first and read like a float one.
// UNFUSED-LABEL: func.func @quantized
// UNFUSED: %[[W:.*]] = gptq.dequantize
// UNFUSED: %[[W3:.*]] = tensor.expand_shape %[[W]]
// UNFUSED: %[[WD:.*]] = tensor.cast %[[W3]]
// UNFUSED: call @__gptq_matmul(%{{.*}}, %[[WD]], %{{.*}}, %false, %true, %true, %false, %false, %false,
func.func @quantized(%a: tensor<1x?x64xf32>, %words: tensor<32x6xi32>, %s: tensor<32x2xf32>, %z: tensor<32x2xf32>, %g: tensor<64xi32>, %e: tensor<1x?x32xf32>) -> tensor<1x?x32xf32> {
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

// A weight stored in bfloat16 or float16 and widened by a linalg.generic
// of arith.extf (an import-hf module's weight, once elementwise ops are
// linalg): with fuse-widening (the default) the kernel gets the stored
// weight (kind 1: bfloat16, 2: float16) and widens it while it packs B; the
// float32 copy is not formed, and its sizes come from the stored weight.
// CHECK-LABEL: func.func @widened
// CHECK-SAME: (%[[A:.*]]: tensor<1x?x64xf32>, %[[W:.*]]: tensor<?x64xbf16>, %[[H:.*]]: tensor<32x64xf16>
// CHECK-NOT: arith.extf
// CHECK-NOT: linalg.generic
// CHECK-DAG: %[[K1:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[K2:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[N:.*]] = tensor.dim %[[W]], %c0
// CHECK-DAG: %[[WD:.*]] = tensor.cast %[[W]] : tensor<?x64xbf16> to tensor<?x?xbf16>
// CHECK: call @__gptq_matmul(%{{.*}}, %{{.*}}, %{{.*}}, %false, %true, %true, %false, %false, %false, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[K1]], %[[WD]], %{{.*}})
// CHECK: %[[HD:.*]] = tensor.cast %[[H]] : tensor<32x64xf16> to tensor<?x?xf16>
// CHECK: call @__gptq_matmul(%{{.*}}, %{{.*}}, %{{.*}}, %false, %true, %true, %false, %false, %false, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[K2]], %{{.*}}, %[[HD]])
// CHECK-NOT: linalg.generic
// CHECK: return %{{.*}}, %{{.*}}, %[[N]]
// With fuse-widening=false, the weight is widened first and read like a float one.
// UNWIDENED-LABEL: func.func @widened
// UNWIDENED: arith.extf
// UNWIDENED: call @__gptq_matmul(%{{.*}}, %{{.*}}, %{{.*}}, %false, %true, %true, %false, %false, %false, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c0_i64,
func.func @widened(%a: tensor<1x?x64xf32>, %w: tensor<?x64xbf16>, %h: tensor<32x64xf16>, %e: tensor<1x?x?xf32>, %e2: tensor<1x?x32xf32>) -> (tensor<1x?x?xf32>, tensor<1x?x32xf32>, index) {
  %c0 = arith.constant 0 : index
  %n0 = tensor.dim %w, %c0 : tensor<?x64xbf16>
  %we = tensor.empty(%n0) : tensor<?x64xf32>
  %wf = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<?x64xbf16>) outs(%we : tensor<?x64xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %x = arith.extf %in : bf16 to f32
    linalg.yield %x : f32
  } -> tensor<?x64xf32>
  %he = tensor.empty() : tensor<32x64xf32>
  %hf = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%h : tensor<32x64xf16>) outs(%he : tensor<32x64xf32>) {
  ^bb0(%in: f16, %out: f32):
    %x = arith.extf %in : f16 to f32
    linalg.yield %x : f32
  } -> tensor<32x64xf32>
  // A size read off the widened weight (it comes from the stored one).
  %n = tensor.dim %wf, %c0 : tensor<?x64xf32>
  %w3 = tensor.expand_shape %wf [[0, 1], [2]] output_shape [1, %n, 64] : tensor<?x64xf32> into tensor<1x?x64xf32>
  %h3 = tensor.expand_shape %hf [[0, 1], [2]] output_shape [1, 32, 64] : tensor<32x64xf32> into tensor<1x32x64xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x?x?xf32>) -> tensor<1x?x?xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  %r = linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%a, %w3 : tensor<1x?x64xf32>, tensor<1x?x64xf32>) outs(%f : tensor<1x?x?xf32>) -> tensor<1x?x?xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%a, %h3 : tensor<1x?x64xf32>, tensor<1x32x64xf32>) outs(%f2 : tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  return %r, %s, %n : tensor<1x?x?xf32>, tensor<1x?x32xf32>, index
}

// Not a plain widening (the generic also scales), or B not given
// transposed: the float32 weight is formed and read as usual.
// CHECK-LABEL: func.func @not_widened
// CHECK: arith.extf
// CHECK: arith.mulf
// CHECK: arith.extf
// CHECK: call @__gptq_matmul(%{{.*}}, %{{.*}}, %{{.*}}, %false, %true, %true, %false, %false, %false, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c0_i64,
// CHECK: call @__gptq_matmul(%{{.*}}, %{{.*}}, %{{.*}}, %false, %false, %true, %false, %false, %false, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c0_i64,
func.func @not_widened(%a: tensor<1x?x64xf32>, %w: tensor<32x64xbf16>, %wt: tensor<64x32xbf16>, %e: tensor<1x?x32xf32>) -> (tensor<1x?x32xf32>, tensor<1x?x32xf32>) {
  %we = tensor.empty() : tensor<32x64xf32>
  %wf = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<32x64xbf16>) outs(%we : tensor<32x64xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %x = arith.extf %in : bf16 to f32
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<32x64xf32>
  %wte = tensor.empty() : tensor<64x32xf32>
  %wtf = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%wt : tensor<64x32xbf16>) outs(%wte : tensor<64x32xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %x = arith.extf %in : bf16 to f32
    linalg.yield %x : f32
  } -> tensor<64x32xf32>
  %w3 = tensor.expand_shape %wf [[0, 1], [2]] output_shape [1, 32, 64] : tensor<32x64xf32> into tensor<1x32x64xf32>
  %wt3 = tensor.expand_shape %wtf [[0, 1], [2]] output_shape [1, 64, 32] : tensor<64x32xf32> into tensor<1x64x32xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  %r = linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%a, %w3 : tensor<1x?x64xf32>, tensor<1x32x64xf32>) outs(%f : tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  %s = linalg.batch_matmul ins(%a, %wt3 : tensor<1x?x64xf32>, tensor<1x64x32xf32>) outs(%f : tensor<1x?x32xf32>) -> tensor<1x?x32xf32>
  return %r, %s : tensor<1x?x32xf32>, tensor<1x?x32xf32>
}

// The triangles of a causal mask, as gptq-normalize-contractions marks
// them: lowerC for a result read only on and below the diagonal, lowerA
// for a left operand that is zero above it.
// CHECK-LABEL: func.func @causal
// CHECK-DAG: %[[F:.*]] = arith.constant false
// CHECK-DAG: %[[T:.*]] = arith.constant true
// CHECK: call @__gptq_matmul(%{{.*}}, %{{.*}}, %{{.*}}, %[[F]], %[[F]], %[[F]], %[[T]], %[[F]], %[[F]],
// CHECK: call @__gptq_matmul(%{{.*}}, %{{.*}}, %{{.*}}, %[[F]], %[[F]], %[[F]], %[[F]], %[[T]], %[[F]],
func.func @causal(%a: tensor<2x5x4xf32>, %b: tensor<2x4x5xf32>, %c: tensor<2x5x5xf32>, %p: tensor<2x5x5xf32>, %v: tensor<2x5x4xf32>, %o: tensor<2x5x4xf32>) -> (tensor<2x5x5xf32>, tensor<2x5x4xf32>) {
  %s = linalg.batch_matmul {gptq.lower_result} ins(%a, %b : tensor<2x5x4xf32>, tensor<2x4x5xf32>) outs(%c : tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %m = linalg.batch_matmul {gptq.lower_lhs} ins(%p, %v : tensor<2x5x5xf32>, tensor<2x5x4xf32>) outs(%o : tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  return %s, %m : tensor<2x5x5xf32>, tensor<2x5x4xf32>
}

// Not in the normal form (A broadcast over the batch) or not float32: left
// alone.
// CHECK-LABEL: func.func @others
// CHECK: linalg.batch_matmul
// CHECK: linalg.batch_matmul
// CHECK-NOT: call
func.func @others(%a: tensor<4x9xf32>, %b: tensor<2x9x6xf32>, %ct: tensor<2x4x6xf32>, %ai: tensor<2x4x9xi32>, %bi: tensor<2x9x6xi32>, %ci: tensor<2x4x6xi32>) -> (tensor<2x4x6xf32>, tensor<2x4x6xi32>) {
  %r = linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%a, %b : tensor<4x9xf32>, tensor<2x9x6xf32>) outs(%ct : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %s = linalg.batch_matmul ins(%ai, %bi : tensor<2x4x9xi32>, tensor<2x9x6xi32>) outs(%ci : tensor<2x4x6xi32>) -> tensor<2x4x6xi32>
  return %r, %s : tensor<2x4x6xf32>, tensor<2x4x6xi32>
}

// CHECK-LABEL: func.func private @__gptq_matmul
// CHECK: scf.forall
// CHECK: scf.forall
// CHECK: call @__gptq_gemm_panel
// CHECK-LABEL: func.func private @__gptq_gemm_panel
// CHECK: call @__gptq_pack_dequantized
// CHECK: call @__gptq_pack_widened
// CHECK: vector.fma
// CHECK-DAG: func.func private @__gptq_pack_widened
// CHECK-DAG: func.func private @__gptq_pack_dequantized
// CHECK-NOT: func.func private @__gptq_matmul
