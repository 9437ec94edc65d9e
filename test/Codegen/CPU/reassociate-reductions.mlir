// RUN: gptq-opt %s --gptq-reassociate-reductions | FileCheck %s

// The combiners of reductions may be reassociated (a maximum becomes the
// NaN-skipping maxnumf); elementwise ops, and the other ops of a
// reduction's body, keep their flags.
// CHECK-LABEL: func.func @softmax_parts
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: arith.maxnumf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NOT: fastmath
// CHECK-NOT: arith.maximumf
func.func @softmax_parts(%x: tensor<4x8xf32>, %m: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>) {
  %mx = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%m : tensor<4xf32>) {
  ^bb0(%e: f32, %acc: f32):
    %two = arith.constant 2.0 : f32
    %s = arith.mulf %e, %two : f32
    %y = arith.maximumf %acc, %s : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x8xf32>) outs(%m : tensor<4xf32>) {
  ^bb0(%e: f32, %acc: f32):
    %y = arith.addf %acc, %e : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %add = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%x : tensor<4x8xf32>) {
  ^bb0(%e: f32, %o: f32):
    %y = arith.addf %e, %e : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  return %mx, %sum, %add : tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>
}
