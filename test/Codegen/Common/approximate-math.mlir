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

// tanh (the tanh GELU), cbrt, log1p and expm1 of float32 become arithmetic;
// sin, cos and log stay for the LLVM conversion.
// CHECK-LABEL: func.func @more
// CHECK-NOT: math.tanh
// CHECK-NOT: math.cbrt
// CHECK-NOT: math.log1p
// CHECK-NOT: math.expm1
// CHECK-DAG: math.sin
// CHECK-DAG: math.cos
// CHECK: return
func.func @more(%x: f32, %v: vector<8xf32>) -> (f32, vector<8xf32>, f32, f32, f32, f32, f32) {
  %a = math.tanh %x : f32
  %b = math.tanh %v : vector<8xf32>
  %c = math.cbrt %x : f32
  %d = math.log1p %x : f32
  %e = math.expm1 %x : f32
  %f = math.sin %x : f32
  %g = math.cos %x : f32
  return %a, %b, %c, %d, %e, %f, %g : f32, vector<8xf32>, f32, f32, f32, f32, f32
}

// asinh, acosh and atanh become log1p of an argument that does not cancel
// (itself approximated), with log(2 x) beyond 4096 for the first two.
// CHECK-LABEL: func.func @inverse_hyperbolic
// CHECK-NOT: math.asinh
// CHECK-NOT: math.acosh
// CHECK-NOT: math.atanh
// CHECK-NOT: math.log1p
// CHECK: arith.constant 4.096000e+03 : f32
// CHECK: math.log
// CHECK: math.copysign
// CHECK: return
func.func @inverse_hyperbolic(%x: f32, %v: vector<4xf32>) -> (f32, f32, vector<4xf32>) {
  %a = math.asinh %x : f32
  %b = math.acosh %x : f32
  %c = math.atanh %v : vector<4xf32>
  return %a, %b, %c : f32, f32, vector<4xf32>
}

// On bfloat16 and float16 they are computed in float32 and rounded back.
// CHECK-LABEL: func.func @narrow
// CHECK-NOT: math.erf
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: arith.extf %{{.*}} : vector<4xf16> to vector<4xf32>
// CHECK: arith.truncf %{{.*}} : vector<4xf32> to vector<4xf16>
func.func @narrow(%x: bf16, %v: vector<4xf16>) -> (bf16, vector<4xf16>) {
  %a = math.erf %x : bf16
  %b = math.atanh %v : vector<4xf16>
  return %a, %b : bf16, vector<4xf16>
}
