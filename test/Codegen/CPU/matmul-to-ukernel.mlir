// RUN: gptq-opt %s --gptq-matmul-to-ukernel | FileCheck %s
// RUN: gptq-opt %s --gptq-matmul-to-ukernel="fuse-dequantize=false" | FileCheck %s --check-prefix=UNFUSED
// RUN: gptq-opt %s --gptq-matmul-to-ukernel="fuse-widening=false" | FileCheck %s --check-prefix=UNWIDENED

// A batch matmul in the normal form with a zero-filled init: the
// microkernel op on the fill's destination (zero_init: not read), B given
// transposed.
// CHECK-LABEL: func.func @zero_init
// CHECK-SAME: (%[[A:.*]]: tensor<1x?x64xf32>, %[[B:.*]]: tensor<1x32x64xf32>, %[[E:.*]]: tensor<1x?x32xf32>)
// CHECK-NOT: linalg.fill
// CHECK: %[[R:.*]] = gptq_ukernel.matmul ins(%[[A]], %[[B]] : tensor<1x?x64xf32>, tensor<1x32x64xf32>) outs(%[[E]] : tensor<1x?x32xf32>) {transpose_rhs, zero_init} -> tensor<1x?x32xf32>
// CHECK: return %[[R]]
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
// CHECK-SAME: (%[[AT:.*]]: tensor<2x9x4xf32>, %[[B:.*]]: tensor<2x9x6xf32>, %[[C:.*]]: tensor<2x4x6xf32>, %[[A:.*]]: tensor<2x4x9xf32>)
// CHECK: gptq_ukernel.matmul ins(%[[AT]], %[[B]] : {{.*}}) outs(%[[C]] : tensor<2x4x6xf32>) {transpose_lhs} ->
// CHECK: %[[ONES:.*]] = linalg.fill
// CHECK: gptq_ukernel.matmul ins(%[[A]], %[[B]] : {{.*}}) outs(%[[ONES]] : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
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
// fuse-dequantize (the default), the op takes the packed words, scales,
// zeros, group map and bit width, and the kernel dequantizes while it packs
// B; the float weight is never formed.
// CHECK-LABEL: func.func @quantized
// CHECK-SAME: (%[[A:.*]]: tensor<1x?x64xf32>, %[[W:.*]]: tensor<32x6xi32>, %[[S:.*]]: tensor<32x2xf32>, %[[Z:.*]]: tensor<32x2xf32>, %[[G:.*]]: tensor<64xi32>, %[[E:.*]]: tensor<1x?x32xf32>)
// CHECK-NOT: gptq.dequantize
// CHECK-NOT: gptq.unpack
// CHECK: gptq_ukernel.matmul ins(%[[A]] : tensor<1x?x64xf32>) packed(%[[W]], %[[S]], %[[Z]], %[[G]] : tensor<32x6xi32>, tensor<32x2xf32>, tensor<32x2xf32>, tensor<64xi32>) outs(%[[E]] : tensor<1x?x32xf32>) {bits = 3 : i64, transpose_rhs, zero_init}
// With fuse-dequantize=false, the weight is dequantized first and read like a float one.
// UNFUSED-LABEL: func.func @quantized
// UNFUSED: %[[W:.*]] = gptq.dequantize
// UNFUSED: %[[W3:.*]] = tensor.expand_shape %[[W]]
// UNFUSED: gptq_ukernel.matmul ins(%{{.*}}, %[[W3]] : tensor<1x?x64xf32>, tensor<1x32x64xf32>) outs(%{{.*}}) {transpose_rhs, zero_init}
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
// linalg): with fuse-widening (the default) the op takes the stored
// weight (bfloat16 or float16) and the kernel widens it while it packs B;
// the float32 copy is not formed, and its sizes come from the stored weight.
// CHECK-LABEL: func.func @widened
// CHECK-SAME: (%[[A:.*]]: tensor<1x?x64xf32>, %[[W:.*]]: tensor<?x64xbf16>, %[[H:.*]]: tensor<32x64xf16>, %[[E:.*]]: tensor<1x?x?xf32>, %[[E2:.*]]: tensor<1x?x32xf32>)
// CHECK-NOT: linalg.generic
// CHECK: %[[N:.*]] = tensor.dim %[[W]], %c0 : tensor<?x64xbf16>
// CHECK: gptq_ukernel.matmul ins(%[[A]] : tensor<1x?x64xf32>) half(%[[W]] : tensor<?x64xbf16>) outs(%[[E]] : tensor<1x?x?xf32>) {transpose_rhs, zero_init}
// CHECK: gptq_ukernel.matmul ins(%[[A]] : tensor<1x?x64xf32>) half(%[[H]] : tensor<32x64xf16>) outs(%[[E2]] : tensor<1x?x32xf32>) {transpose_rhs, zero_init}
// CHECK: return %{{.*}}, %{{.*}}, %[[N]]
// With fuse-widening=false, the weight is widened first and read like a float one.
// UNWIDENED-LABEL: func.func @widened
// UNWIDENED: %[[WF:.*]] = linalg.generic
// UNWIDENED: %[[HF:.*]] = linalg.generic
// UNWIDENED-NOT: half(
// UNWIDENED: gptq_ukernel.matmul ins(%{{.*}}, %{{.*}} : tensor<1x?x64xf32>, tensor<1x?x64xf32>)
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
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: half(
// CHECK: gptq_ukernel.matmul ins(%{{.*}}, %{{.*}} : tensor<1x?x64xf32>, tensor<1x32x64xf32>) outs(%{{.*}} : tensor<1x?x32xf32>) {transpose_rhs, zero_init}
// CHECK: gptq_ukernel.matmul ins(%{{.*}}, %{{.*}} : tensor<1x?x64xf32>, tensor<1x64x32xf32>) outs(%{{.*}} : tensor<1x?x32xf32>) {zero_init}
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
// them: lower_result for a result read only on and below the diagonal,
// lower_lhs for a left operand that is zero above it.
// CHECK-LABEL: func.func @causal
// CHECK: gptq_ukernel.matmul ins({{.*}}) outs({{.*}}) {lower_result} -> tensor<2x5x5xf32>
// CHECK: gptq_ukernel.matmul ins({{.*}}) outs({{.*}}) {lower_lhs} -> tensor<2x5x4xf32>
func.func @causal(%a: tensor<2x5x4xf32>, %b: tensor<2x4x5xf32>, %c: tensor<2x5x5xf32>, %p: tensor<2x5x5xf32>, %v: tensor<2x5x4xf32>, %o: tensor<2x5x4xf32>) -> (tensor<2x5x5xf32>, tensor<2x5x4xf32>) {
  %s = linalg.batch_matmul {gptq.lower_result} ins(%a, %b : tensor<2x5x4xf32>, tensor<2x4x5xf32>) outs(%c : tensor<2x5x5xf32>) -> tensor<2x5x5xf32>
  %m = linalg.batch_matmul {gptq.lower_lhs} ins(%p, %v : tensor<2x5x5xf32>, tensor<2x5x4xf32>) outs(%o : tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
  return %s, %m : tensor<2x5x5xf32>, tensor<2x5x4xf32>
}

// Not in the normal form (A broadcast over the batch) or not float32: left
// alone.
// CHECK-LABEL: func.func @others
// CHECK-NOT: gptq_ukernel
// CHECK-COUNT-2: linalg.batch_matmul
func.func @others(%a: tensor<4x9xf32>, %b: tensor<2x9x6xf32>, %ct: tensor<2x4x6xf32>, %ai: tensor<2x4x9xi32>, %bi: tensor<2x9x6xi32>, %ci: tensor<2x4x6xi32>) -> (tensor<2x4x6xf32>, tensor<2x4x6xi32>) {
  %r = linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
      ins(%a, %b : tensor<4x9xf32>, tensor<2x9x6xf32>) outs(%ct : tensor<2x4x6xf32>) -> tensor<2x4x6xf32>
  %s = linalg.batch_matmul ins(%ai, %bi : tensor<2x4x9xi32>, tensor<2x9x6xi32>) outs(%ci : tensor<2x4x6xi32>) -> tensor<2x4x6xi32>
  return %r, %s : tensor<2x4x6xf32>, tensor<2x4x6xi32>
}

