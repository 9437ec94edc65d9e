// RUN: gptq-opt %s --gptq-specialize-constant-arguments --split-input-file | FileCheck %s
// RUN: gptq-opt %s --gptq-specialize-constant-arguments --canonicalize --symbol-dce --split-input-file | FileCheck %s --check-prefix=FOLD

// Every call passes false for %quant: the function's body takes the
// constant in place, the signature stays; canonicalization then keeps the
// branch that false chooses.
// CHECK-LABEL: func.func @same
// CHECK: call @k(%{{.*}}, %false)
// CHECK: call @k(%{{.*}}, %false)
// CHECK: func.func private @k(%[[X:.*]]: f32, %{{.*}}: i1) -> f32
// CHECK-NEXT: %[[F:.*]] = arith.constant false
// CHECK-NEXT: scf.if %[[F]]
// CHECK-NOT: func.func
// FOLD-LABEL: func.func private @k
// FOLD-NOT: scf.if
// FOLD: arith.addf
// FOLD-NOT: arith.mulf
func.func @same(%x: f32, %y: f32) -> (f32, f32) {
  %f = arith.constant false
  %a = func.call @k(%x, %f) : (f32, i1) -> f32
  %b = func.call @k(%y, %f) : (f32, i1) -> f32
  return %a, %b : f32, f32
}
func.func private @k(%x: f32, %quant: i1) -> f32 {
  %r = scf.if %quant -> f32 {
    %m = arith.mulf %x, %x : f32
    scf.yield %m : f32
  } else {
    %s = arith.addf %x, %x : f32
    scf.yield %s : f32
  }
  return %r : f32
}

// -----

// Three patterns that share %bits = 4: the function takes 4 in place;
// the calls that pass false or true for %t call a copy each that takes
// that constant as well, and the call that passes a value keeps the
// function (its %t stays an argument).
// CHECK-LABEL: func.func @patterns
// CHECK: call @[[FALSE:g_[0-9]+]](%{{.*}}, %false, %c4_i64)
// CHECK: call @[[TRUE:g_[0-9]+]](%{{.*}}, %true, %c4_i64)
// CHECK: call @g(%{{.*}}, %{{.*}}, %c4_i64)
// CHECK: func.func private @g(%{{.*}}: index, %[[T:.*]]: i1, %{{.*}}: i64)
// CHECK-NEXT: %[[B:.*]] = arith.constant 4 : i64
// CHECK: arith.select %[[T]]
// CHECK: arith.addi %{{.*}}, %[[B]]
// CHECK: func.func private @[[TRUE]](
// CHECK-NEXT: %[[T1:.*]] = arith.constant true
// CHECK-NEXT: %[[B1:.*]] = arith.constant 4 : i64
// CHECK: arith.select %[[T1]]
// CHECK: arith.addi %{{.*}}, %[[B1]]
// CHECK: func.func private @[[FALSE]](
// CHECK-NEXT: %[[T0:.*]] = arith.constant false
// FOLD-LABEL: func.func @patterns
// FOLD: %[[I:.*]] = call @g_0
// FOLD: func.func private @g(
// FOLD: func.func private @g_1(%[[N:.*]]: index,
// FOLD-NEXT: %[[C:.*]] = arith.constant 4 : i64
// FOLD-NEXT: %[[W:.*]] = arith.index_cast %[[N]]
// FOLD-NEXT: %[[S:.*]] = arith.addi %[[W]], %[[C]]
// FOLD-NEXT: return %[[S]]
// FOLD: func.func private @g_0(
// FOLD-NEXT: %[[C4:.*]] = arith.constant 4 : i64
// FOLD-NEXT: return %[[C4]]
func.func @patterns(%n: index, %v: i1) -> (i64, i64, i64) {
  %f = arith.constant false
  %t = arith.constant true
  %four = arith.constant 4 : i64
  %a = func.call @g(%n, %f, %four) : (index, i1, i64) -> i64
  %b = func.call @g(%n, %t, %four) : (index, i1, i64) -> i64
  %c = func.call @g(%n, %v, %four) : (index, i1, i64) -> i64
  return %a, %b, %c : i64, i64, i64
}
func.func private @g(%n: index, %t: i1, %bits: i64) -> i64 {
  %i = arith.index_cast %n : index to i64
  %z = arith.constant 0 : i64
  %s = arith.select %t, %i, %z : i64
  %r = arith.addi %s, %bits : i64
  return %r : i64
}

// -----

// Left alone: float constants (computed by the generated code, never at
// compile time), public functions, functions without a body, and a
// function whose address is taken.
// CHECK-LABEL: func.func @alone
// CHECK: func.func private @float(%[[X:.*]]: f32) -> f32
// CHECK-NEXT: math.exp %[[X]]
// CHECK: func.func @public(%[[P:.*]]: i1) -> i1
// CHECK-NEXT: return %[[P]]
// CHECK: func.func private @taken(%[[Q:.*]]: i1) -> i1
// CHECK-NEXT: return %[[Q]]
func.func @alone() -> (f32, i1, i1, i1) {
  %one = arith.constant 1.0 : f32
  %t = arith.constant true
  %e = func.call @float(%one) : (f32) -> f32
  %p = func.call @public(%t) : (i1) -> i1
  %d = func.call @declared(%t) : (i1) -> i1
  %q = func.call @taken(%t) : (i1) -> i1
  %ref = func.constant @taken : (i1) -> i1
  return %e, %p, %d, %q : f32, i1, i1, i1
}
func.func private @float(%x: f32) -> f32 {
  %e = math.exp %x : f32
  return %e : f32
}
func.func @public(%p: i1) -> i1 {
  return %p : i1
}
func.func private @declared(i1) -> i1
func.func private @taken(%q: i1) -> i1 {
  return %q : i1
}
