// RUN: gptq-opt %s --gptq-bf16-as-integers --split-input-file | FileCheck %s

// A weight read at a matrix's edge: the masked load and its zero padding
// become i16, and the kernel's bitcast to i16 goes away.
// CHECK-LABEL: llvm.func @edge
// CHECK: %[[ZERO:.*]] = llvm.mlir.constant(dense<0> : vector<16xi16>) : vector<16xi16>
// CHECK: %[[V:.*]] = llvm.intr.masked.load %{{.*}}, %{{.*}}, %[[ZERO]] {{.*}} -> vector<16xi16>
// CHECK-NOT: llvm.bitcast
// CHECK: llvm.zext %[[V]] : vector<16xi16> to vector<16xi32>
// CHECK-NOT: bf16
llvm.func @edge(%p: !llvm.ptr, %m: vector<16xi1>) -> vector<16xi32> {
  %zero = llvm.mlir.constant(dense<0.0> : vector<16xbf16>) : vector<16xbf16>
  %v = llvm.intr.masked.load %p, %m, %zero {alignment = 2 : i32} : (!llvm.ptr, vector<16xi1>, vector<16xbf16>) -> vector<16xbf16>
  %b = llvm.bitcast %v : vector<16xbf16> to vector<16xi16>
  %w = llvm.zext %b : vector<16xi16> to vector<16xi32>
  llvm.return %w : vector<16xi32>
}

// -----

// Rows of a block gathered in an array that crosses blocks: the array, its
// zero constant and the block argument become i16; the loads too.
// CHECK-LABEL: llvm.func @rows
// CHECK: llvm.mlir.constant(dense<0> : vector<2x16xi16>) : !llvm.array<2 x vector<16xi16>>
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> vector<16xi16>
// CHECK: ^bb1(%[[A:.*]]: !llvm.array<2 x vector<16xi16>>):
// CHECK: llvm.extractvalue %[[A]][1] : !llvm.array<2 x vector<16xi16>>
// CHECK-NOT: bf16
llvm.func @rows(%p: !llvm.ptr, %c: i1) -> vector<16xi16> {
  %z = llvm.mlir.constant(dense<0.0> : vector<2x16xbf16>) : !llvm.array<2 x vector<16xbf16>>
  %r = llvm.load %p {alignment = 2 : i64} : !llvm.ptr -> vector<16xbf16>
  %a = llvm.insertvalue %r, %z[1] : !llvm.array<2 x vector<16xbf16>>
  llvm.cond_br %c, ^bb1(%a : !llvm.array<2 x vector<16xbf16>>), ^bb1(%z : !llvm.array<2 x vector<16xbf16>>)
^bb1(%x: !llvm.array<2 x vector<16xbf16>>):
  %e = llvm.extractvalue %x[1] : !llvm.array<2 x vector<16xbf16>>
  %i = llvm.bitcast %e : vector<16xbf16> to vector<16xi16>
  llvm.return %i : vector<16xi16>
}

// -----

// An op that computes with bfloat16 gets its bfloat16 back; a scalar lane
// moves as i16.
// CHECK-LABEL: llvm.func @compute
// CHECK: %[[V:.*]] = llvm.load %{{.*}} : !llvm.ptr -> vector<4xi16>
// CHECK: %[[B:.*]] = llvm.bitcast %[[V]] : vector<4xi16> to vector<4xbf16>
// CHECK: llvm.fpext %[[B]] : vector<4xbf16> to vector<4xf32>
// CHECK: %[[L:.*]] = llvm.extractelement %[[V]][%{{.*}} : i64] : vector<4xi16>
// CHECK: %[[S:.*]] = llvm.bitcast %[[L]] : i16 to bf16
// CHECK: llvm.fpext %[[S]] : bf16 to f32
llvm.func @compute(%p: !llvm.ptr, %i: i64) -> f32 {
  %v = llvm.load %p {alignment = 2 : i64} : !llvm.ptr -> vector<4xbf16>
  %w = llvm.fpext %v : vector<4xbf16> to vector<4xf32>
  %l = llvm.extractelement %v[%i : i64] : vector<4xbf16>
  %s = llvm.fpext %l : bf16 to f32
  %f = llvm.extractelement %w[%i : i64] : vector<4xf32>
  %r = llvm.fadd %f, %s : f32
  llvm.return %r : f32
}

// -----

// An array of bfloat16 vectors that a call takes cannot be bitcast: the
// function stays as it is.
// CHECK-LABEL: llvm.func @kept
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> vector<16xbf16>
// CHECK: llvm.call @take(%{{.*}}) : (!llvm.array<1 x vector<16xbf16>>) -> ()
llvm.func @take(!llvm.array<1 x vector<16xbf16>>)
llvm.func @kept(%p: !llvm.ptr) {
  %u = llvm.mlir.undef : !llvm.array<1 x vector<16xbf16>>
  %r = llvm.load %p {alignment = 2 : i64} : !llvm.ptr -> vector<16xbf16>
  %a = llvm.insertvalue %r, %u[0] : !llvm.array<1 x vector<16xbf16>>
  llvm.call @take(%a) : (!llvm.array<1 x vector<16xbf16>>) -> ()
  llvm.return
}
