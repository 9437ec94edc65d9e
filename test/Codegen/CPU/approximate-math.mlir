// RUN: gptq-opt %s --gptq-approximate-math | FileCheck %s

// math.exp of float32, scalar or vector, becomes arithmetic; other math ops
// and other types stay.
// CHECK-LABEL: func.func @exp
// CHECK-NOT: math.exp %{{.*}} : f32
// CHECK-NOT: math.exp %{{.*}} : vector<16xf32>
// CHECK: math.exp %{{.*}} : f64
// CHECK: math.log
func.func @exp(%x: f32, %v: vector<16xf32>, %d: f64) -> (f32, vector<16xf32>, f64, f32) {
  %a = math.exp %x : f32
  %b = math.exp %v : vector<16xf32>
  %c = math.exp %d : f64
  %l = math.log %x : f32
  return %a, %b, %c, %l : f32, vector<16xf32>, f64, f32
}

// math.erf and math.erfc of float32 (the exact GELU) become arithmetic too:
// no instruction or libm call is left for them.
// CHECK-LABEL: func.func @erf
// CHECK-NOT: math.erf
// CHECK: return
func.func @erf(%x: f32, %v: vector<8xf32>) -> (f32, vector<8xf32>, f32) {
  %a = math.erf %x : f32
  %b = math.erf %v : vector<8xf32>
  %c = math.erfc %x : f32
  return %a, %b, %c : f32, vector<8xf32>, f32
}
