// RUN: gptq-opt %s --gptq-outline-repeated-layers=min-ops=3 --split-input-file --mlir-print-debuginfo | FileCheck %s

// Three layers: one callee from the first, a call per layer. The constant
// all layers read is copied into the callee; each layer's weight is an
// argument; each op of the callee is located at its op in every layer.
// CHECK-LABEL: func.func @layers(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4xf32> {{.*}}, %[[W0:[^:]*]]: tensor<4xf32> {{.*}}, %[[W1:[^:]*]]: tensor<4xf32> {{.*}}, %[[W2:[^:]*]]: tensor<4xf32>
// CHECK-NEXT: %[[H0:.*]] = call @layers_layer(%[[X]], %[[W0]]) {no_inline}
// CHECK-NEXT: %[[H1:.*]] = call @layers_layer(%[[H0]], %[[W1]]) {no_inline}
// CHECK-NEXT: %[[H2:.*]] = call @layers_layer(%[[H1]], %[[W2]]) {no_inline}
// CHECK-NEXT: return %[[H2]]
// CHECK: func.func private @layers_layer(%[[A:[^:]*]]: tensor<4xf32> {{.*}}, %[[B:[^:]*]]: tensor<4xf32> {{.*}}) -> tensor<4xf32>
// CHECK-NEXT: %[[ONE:.*]] = arith.constant dense<1.000000e+00>
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[A]], %[[B]] {{.*}} loc(#[[MULS:.*]])
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[M]], %[[ONE]]
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[S]]
// CHECK-NEXT: return %[[T]]
// CHECK: #[[MUL0:.*]] = loc("{{.*}}":[[# @LINE + 6]]:
// CHECK: #[[MUL1:.*]] = loc("{{.*}}":[[# @LINE + 8]]:
// CHECK: #[[MUL2:.*]] = loc("{{.*}}":[[# @LINE + 10]]:
// CHECK: #[[MULS]] = loc(fused[#[[MUL0]], #[[MUL1]], #[[MUL2]]])
func.func @layers(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>, %w2: tensor<4xf32>) -> tensor<4xf32> {
  %one = arith.constant dense<1.0> : tensor<4xf32>
  %a0 = arith.mulf %x, %w0 : tensor<4xf32>
  %b0 = arith.addf %a0, %one : tensor<4xf32>
  %c0 = math.tanh %b0 : tensor<4xf32>
  %a1 = arith.mulf %c0, %w1 : tensor<4xf32>
  %b1 = arith.addf %a1, %one : tensor<4xf32>
  %c1 = math.tanh %b1 : tensor<4xf32>
  %a2 = arith.mulf %c1, %w2 : tensor<4xf32>
  %b2 = arith.addf %a2, %one : tensor<4xf32>
  %c2 = math.tanh %b2 : tensor<4xf32>
  return %c2 : tensor<4xf32>
}

// -----

// Constants that differ between layers are arguments; the constants move
// to the body's start, before the first call. The ops before and after the
// run stay where they were.
// CHECK-LABEL: func.func @per_layer_constants(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4xf32>
// CHECK-DAG: %[[TWO:.*]] = arith.constant dense<2.000000e+00>
// CHECK-DAG: %[[THREE:.*]] = arith.constant dense<3.000000e+00>
// CHECK: %[[E:.*]] = math.exp %[[X]]
// CHECK-NEXT: %[[H0:.*]] = call @per_layer_constants_layer(%[[E]], %[[TWO]]) {no_inline}
// CHECK-NEXT: %[[H1:.*]] = call @per_layer_constants_layer(%[[H0]], %[[THREE]]) {no_inline}
// CHECK-NEXT: %[[L:.*]] = math.log %[[H1]]
// CHECK-NEXT: return %[[L]]
// CHECK: func.func private @per_layer_constants_layer(%[[A:[^:]*]]: tensor<4xf32> {{.*}}, %[[C:[^:]*]]: tensor<4xf32>
// CHECK-NEXT: arith.mulf %[[A]], %[[C]]
func.func @per_layer_constants(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = math.exp %x : tensor<4xf32>
  %two = arith.constant dense<2.0> : tensor<4xf32>
  %a0 = arith.mulf %e, %two : tensor<4xf32>
  %b0 = math.tanh %a0 : tensor<4xf32>
  %c0 = math.sin %b0 : tensor<4xf32>
  %three = arith.constant dense<3.0> : tensor<4xf32>
  %a1 = arith.mulf %c0, %three : tensor<4xf32>
  %b1 = math.tanh %a1 : tensor<4xf32>
  %c1 = math.sin %b1 : tensor<4xf32>
  %l = math.log %c1 : tensor<4xf32>
  return %l : tensor<4xf32>
}

// -----

// Later layers read a value from the middle of the first (where the first
// reads an argument): it is a result of the callee, and the later calls
// take the first call's.
// CHECK-LABEL: func.func @skip(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4xf32> {{.*}}, %[[Y:[^:]*]]: tensor<4xf32> {{.*}}, %[[W0:[^:]*]]: tensor<4xf32> {{.*}}, %[[W1:[^:]*]]: tensor<4xf32> {{.*}}, %[[W2:[^:]*]]: tensor<4xf32>
// CHECK-NEXT: %[[R0:.*]]:2 = call @skip_layer(%[[X]], %[[W0]], %[[Y]]) {no_inline}
// CHECK-NEXT: %[[R1:.*]]:2 = call @skip_layer(%[[R0]]#1, %[[W1]], %[[R0]]#0) {no_inline}
// CHECK-NEXT: %[[R2:.*]]:2 = call @skip_layer(%[[R1]]#1, %[[W2]], %[[R0]]#0) {no_inline}
// CHECK-NEXT: return %[[R2]]#1
// CHECK: func.func private @skip_layer(%[[A:[^:]*]]: tensor<4xf32> {{.*}}, %[[B:[^:]*]]: tensor<4xf32> {{.*}}, %[[C:[^:]*]]: tensor<4xf32> {{.*}}) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[A]], %[[B]]
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[M]], %[[C]]
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[S]]
// CHECK-NEXT: return %[[M]], %[[T]]
func.func @skip(%x: tensor<4xf32>, %y: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>, %w2: tensor<4xf32>) -> tensor<4xf32> {
  %a0 = arith.mulf %x, %w0 : tensor<4xf32>
  %b0 = arith.addf %a0, %y : tensor<4xf32>
  %c0 = math.tanh %b0 : tensor<4xf32>
  %a1 = arith.mulf %c0, %w1 : tensor<4xf32>
  %b1 = arith.addf %a1, %a0 : tensor<4xf32>
  %c1 = math.tanh %b1 : tensor<4xf32>
  %a2 = arith.mulf %c1, %w2 : tensor<4xf32>
  %b2 = arith.addf %a2, %a0 : tensor<4xf32>
  %c2 = math.tanh %b2 : tensor<4xf32>
  return %c2 : tensor<4xf32>
}

// -----

// The first layer reads its input twice where the later ones read two
// values: it is no segment of the run, which starts at the second layer.
// A region that reads a value from outside (the generic's weight) takes it
// as an argument too.
// CHECK-LABEL: func.func @first_differs(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4xf32> {{.*}}, %[[W0:[^:]*]]: tensor<4xf32> {{.*}}, %[[W1:[^:]*]]: tensor<4xf32> {{.*}}, %[[W2:[^:]*]]: tensor<4xf32>
// CHECK: %[[G0:.*]] = linalg.generic
// CHECK: %[[A0:.*]] = arith.addf %[[G0]], %[[X]]
// CHECK-NEXT: %[[C0:.*]] = math.tanh %[[A0]]
// CHECK-NEXT: %[[H1:.*]] = call @first_differs_layer(%[[C0]], %[[W1]], %[[G0]]) {no_inline}
// CHECK-NEXT: %[[H2:.*]] = call @first_differs_layer(%[[H1]], %[[W2]], %[[G0]]) {no_inline}
// CHECK-NEXT: return %[[H2]]
// CHECK: func.func private @first_differs_layer(%[[A:[^:]*]]: tensor<4xf32> {{.*}}, %[[W:[^:]*]]: tensor<4xf32> {{.*}}, %[[G:[^:]*]]: tensor<4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[A]] : tensor<4xf32>)
// CHECK: tensor.extract %[[W]]
// CHECK: arith.addf %{{.*}}, %[[G]]
#id = affine_map<(d0) -> (d0)>
func.func @first_differs(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>, %w2: tensor<4xf32>) -> tensor<4xf32> {
  %g0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%x : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %w = tensor.extract %w0[%i] : tensor<4xf32>
    %m = arith.mulf %in, %w : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %a0 = arith.addf %g0, %x : tensor<4xf32>
  %c0 = math.tanh %a0 : tensor<4xf32>
  %g1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%c0 : tensor<4xf32>) outs(%c0 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %w = tensor.extract %w1[%i] : tensor<4xf32>
    %m = arith.mulf %in, %w : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %a1 = arith.addf %g1, %g0 : tensor<4xf32>
  %c1 = math.tanh %a1 : tensor<4xf32>
  %g2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%c1 : tensor<4xf32>) outs(%c1 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %w = tensor.extract %w2[%i] : tensor<4xf32>
    %m = arith.mulf %in, %w : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %a2 = arith.addf %g2, %g0 : tensor<4xf32>
  %c2 = math.tanh %a2 : tensor<4xf32>
  return %c2 : tensor<4xf32>
}

// -----

// Each layer writes and reads its entry of a cache: the slices' static
// offsets differ (the layer's index) and become one index argument, the
// same for every slice that uses it.
// CHECK-LABEL: func.func @cache(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x4xf32> {{.*}}, %[[C:[^:]*]]: tensor<3x2x4xf32>
// CHECK: %[[I0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[R0:.*]]:2 = call @cache_layer(%[[X]], %[[C]], %[[I0]]) {no_inline}
// CHECK-NEXT: %[[I1:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[R1:.*]]:2 = call @cache_layer(%[[R0]]#1, %[[R0]]#0, %[[I1]]) {no_inline}
// CHECK-NEXT: %[[I2:.*]] = arith.constant 2 : index
// CHECK-NEXT: %[[R2:.*]]:2 = call @cache_layer(%[[R1]]#1, %[[R1]]#0, %[[I2]]) {no_inline}
// CHECK-NEXT: return %[[R2]]#1, %[[R2]]#0
// CHECK: func.func private @cache_layer(%[[A:[^:]*]]: tensor<2x4xf32> {{.*}}, %[[K:[^:]*]]: tensor<3x2x4xf32> {{.*}}, %[[I:[^:]*]]: index
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[A]]
// CHECK-NEXT: %[[W:.*]] = tensor.insert_slice %[[T]] into %[[K]][%[[I]], 0, 0] [1, 2, 4] [1, 1, 1]
// CHECK-NEXT: %[[E:.*]] = tensor.extract_slice %[[W]][%[[I]], 0, 0] [1, 2, 4] [1, 1, 1]
// CHECK-NEXT: %[[S:.*]] = math.sin %[[E]]
// CHECK-NEXT: return %[[W]], %[[S]]
func.func @cache(%x: tensor<2x4xf32>, %cache: tensor<3x2x4xf32>) -> (tensor<2x4xf32>, tensor<3x2x4xf32>) {
  %a0 = math.tanh %x : tensor<2x4xf32>
  %c0 = tensor.insert_slice %a0 into %cache[0, 0, 0] [1, 2, 4] [1, 1, 1] : tensor<2x4xf32> into tensor<3x2x4xf32>
  %r0 = tensor.extract_slice %c0[0, 0, 0] [1, 2, 4] [1, 1, 1] : tensor<3x2x4xf32> to tensor<2x4xf32>
  %s0 = math.sin %r0 : tensor<2x4xf32>
  %a1 = math.tanh %s0 : tensor<2x4xf32>
  %c1 = tensor.insert_slice %a1 into %c0[1, 0, 0] [1, 2, 4] [1, 1, 1] : tensor<2x4xf32> into tensor<3x2x4xf32>
  %r1 = tensor.extract_slice %c1[1, 0, 0] [1, 2, 4] [1, 1, 1] : tensor<3x2x4xf32> to tensor<2x4xf32>
  %s1 = math.sin %r1 : tensor<2x4xf32>
  %a2 = math.tanh %s1 : tensor<2x4xf32>
  %c2 = tensor.insert_slice %a2 into %c1[2, 0, 0] [1, 2, 4] [1, 1, 1] : tensor<2x4xf32> into tensor<3x2x4xf32>
  %r2 = tensor.extract_slice %c2[2, 0, 0] [1, 2, 4] [1, 1, 1] : tensor<3x2x4xf32> to tensor<2x4xf32>
  %s2 = math.sin %r2 : tensor<2x4xf32>
  return %s2, %c2 : tensor<2x4xf32>, tensor<3x2x4xf32>
}

// -----

// Nothing to outline: layers that differ in an attribute, and segments
// shorter than min-ops.
// CHECK-LABEL: func.func @differ(
// CHECK-NOT: call
// CHECK: return
// CHECK-LABEL: func.func @short(
// CHECK-NOT: call
// CHECK: return
// CHECK-NOT: func.func private
func.func @differ(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>) -> tensor<4xf32> {
  %a0 = arith.mulf %x, %w0 : tensor<4xf32>
  %b0 = arith.addf %a0, %x : tensor<4xf32>
  %c0 = math.tanh %b0 : tensor<4xf32>
  %a1 = arith.mulf %c0, %w1 fastmath<fast> : tensor<4xf32>
  %b1 = arith.addf %a1, %c0 : tensor<4xf32>
  %c1 = math.tanh %b1 : tensor<4xf32>
  return %c1 : tensor<4xf32>
}
func.func @short(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>) -> tensor<4xf32> {
  %a0 = arith.mulf %x, %w0 : tensor<4xf32>
  %b0 = math.tanh %a0 : tensor<4xf32>
  %a1 = arith.mulf %b0, %w1 : tensor<4xf32>
  %b1 = math.tanh %a1 : tensor<4xf32>
  return %b1 : tensor<4xf32>
}
