// RUN: gptq-opt %s --gptq-assert-to-runtime | FileCheck %s

// Each assert becomes a branch to a call of the runtime with its message,
// prefixed with the innermost file location (every place of a fused
// location of several: an op of an outlined layer); equal messages share a
// global.
// Asserts in OpenMP regions pass fatal = 1. A symbol of the input keeps
// its name.

// CHECK-DAG: llvm.mlir.global private constant @[[$IN_PAR:__gptq_check_message_[0-9_]+]]("model.mlir:20:7: in a parallel region\00")
// CHECK-DAG: llvm.mlir.global private constant @[[$NO_LOC:__gptq_check_message_[0-9_]+]]("no location\00")
// CHECK-DAG: llvm.mlir.global private constant @[[$INLINED:__gptq_check_message_[0-9_]+]]("lib.mlir:7:9: inlined\00")
// CHECK-DAG: llvm.mlir.global private constant @[[$FIRST:__gptq_check_message_[0-9_]+]]("model.mlir:3:8: first relation\00")
// CHECK-DAG: llvm.mlir.global private constant @{{__gptq_check_message_[0-9_]+}}("one of model.mlir:30:5, model.mlir:60:5: in every layer\00")
// CHECK-DAG: llvm.mlir.global private constant @{{__gptq_check_message_[0-9_]+}}("model.mlir:40:5: fused in one place\00")
// CHECK-DAG: llvm.func @gptq_runtime_check_failed(!llvm.ptr, i32)
// CHECK-DAG: llvm.mlir.global private constant @__gptq_check_message_0("the input's\00")
// CHECK-LABEL: func.func @checks
// CHECK-SAME: (%[[A:.*]]: i1, %[[B:.*]]: i1)
// CHECK-NOT: cf.assert
// CHECK: cf.cond_br %[[A]], ^[[OK1:.*]], ^[[FAIL1:[^ ]*]]
// CHECK: ^[[FAIL1]]:
// CHECK-NEXT: %[[M1:.*]] = llvm.mlir.addressof @[[$FIRST]] : !llvm.ptr
// CHECK-NEXT: %[[F1:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT: llvm.call @gptq_runtime_check_failed(%[[M1]], %[[F1]]) : (!llvm.ptr, i32) -> ()
// CHECK-NEXT: llvm.unreachable
// CHECK: ^[[OK1]]:
// CHECK-NEXT: cf.cond_br %[[B]], ^[[OK2:.*]], ^[[FAIL2:[^ ]*]]
// CHECK: ^[[FAIL2]]:
// CHECK-NEXT: llvm.mlir.addressof @[[$INLINED]]
// CHECK: ^[[OK2]]:
// CHECK-NEXT: cf.cond_br %[[A]]
// CHECK: llvm.mlir.addressof @[[$FIRST]]
// CHECK: llvm.mlir.addressof @[[$NO_LOC]]
// CHECK: omp.parallel {
// CHECK: %[[M5:.*]] = llvm.mlir.addressof @[[$IN_PAR]] : !llvm.ptr
// CHECK-NEXT: %[[F5:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT: llvm.call @gptq_runtime_check_failed(%[[M5]], %[[F5]])
// CHECK-NEXT: llvm.unreachable
// CHECK: omp.terminator
llvm.mlir.global private constant @__gptq_check_message_0("the input's\00")
func.func @checks(%a: i1, %b: i1) {
  cf.assert %a, "first relation" loc("model.mlir":3:8)
  cf.assert %b, "inlined" loc(callsite("lib.mlir":7:9 at "model.mlir":12:5))
  cf.assert %a, "first relation" loc("model.mlir":3:8)
  cf.assert %b, "no location" loc(unknown)
  cf.assert %a, "in every layer" loc(fused["model.mlir":30:5, "model.mlir":60:5])
  cf.assert %a, "fused in one place" loc(fused["model.mlir":40:5, "layers.0.wq"])
  omp.parallel {
    cf.assert %a, "in a parallel region" loc("model.mlir":20:7)
    omp.terminator
  }
  return
}

// The CPU pipeline lowers asserts through the runtime, not with upstream's
// print-and-abort.
// RUN: gptq-opt %s --gptq-lower-to-cpu-pipeline | FileCheck %s --check-prefix=PIPELINE
// PIPELINE-NOT: abort
// PIPELINE: llvm.call @gptq_runtime_check_failed
// PIPELINE-NOT: abort

