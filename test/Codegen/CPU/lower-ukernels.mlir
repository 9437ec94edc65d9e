// RUN: gptq-opt %s --gptq-lower-ukernels="cpu-isa=avx2" --split-input-file | FileCheck %s
// RUN: gptq-opt %s --gptq-lower-ukernels="cpu-isa=avx512-vnni" --split-input-file | FileCheck %s --check-prefix=VNNI
// RUN: gptq-opt %s --gptq-lower-ukernels="cpu-isa=avx512-vnni byte-dots=off" --split-input-file | FileCheck %s --check-prefix=TABLES
// RUN: gptq-opt %s --gptq-lower-ukernels="cpu-isa=generic byte-dots=on" --split-input-file | FileCheck %s --check-prefix=DOTS
// RUN: not gptq-opt %s --gptq-lower-ukernels="cpu-isa=sse9" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADISA
// RUN: not gptq-opt %s --gptq-lower-ukernels="byte-dots=maybe" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADDOTS

// Each microkernel op on buffers becomes a call of the library's build for
// the instruction set and decode form (declared once, private); the
// variant is the flags word: bit 1 transpose_rhs, bit 2 zero_init, bits 8
// to 11 the packed width, bits 12 and 13 the half-precision type (1 bf16,
// 2 f16). Operands are cast to the convention's dynamic types; those the
// variant lacks are empty buffers made at the function's entry.
// CHECK: func.func private @gptq_uk_matmul_avx2_tables(memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>, i32, memref<?x?xi32>, memref<?x?xf32>, memref<?x?xf32>, memref<?xi32>, memref<?x?xbf16>, memref<?x?xf16>)
// CHECK-NOT: func.func private @gptq_uk
// CHECK-LABEL: func.func @variants
// CHECK-SAME: (%[[A:.*]]: memref<1x8x64xf32>, %[[B:.*]]: memref<1x32x64xf32>, %[[C:.*]]: memref<1x8x32xf32>, %[[W:.*]]: memref<32x8xi32>, %[[S:.*]]: memref<32x2xf32>, %[[Z:.*]]: memref<32x2xf32>, %[[G:.*]]: memref<64xi32>, %[[H:.*]]: memref<32x64xbf16>, %[[F:.*]]: memref<32x64xf16>)
// The empty operands, at the entry.
// CHECK: memref.alloca() : memref<1x0x0xf32>
// CHECK: memref.alloca() : memref<0x0xi32>
// Float32 B, transposed, C not read: flags 6.
// CHECK: %[[AC:.*]] = memref.cast %[[A]] : memref<1x8x64xf32> to memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>
// CHECK: %[[BC:.*]] = memref.cast %[[B]] : memref<1x32x64xf32> to memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>
// CHECK: %[[CC:.*]] = memref.cast %[[C]] : memref<1x8x32xf32> to memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>
// CHECK: %[[F6:.*]] = arith.constant 6 : i32
// CHECK: call @gptq_uk_matmul_avx2_tables(%[[AC]], %[[BC]], %[[CC]], %[[F6]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// A 4-bit packed weight: flags 6 + 4 << 8.
// CHECK: %[[F1030:.*]] = arith.constant 1030 : i32
// CHECK: %[[WC:.*]] = memref.cast %[[W]] : memref<32x8xi32> to memref<?x?xi32>
// CHECK: %[[SC:.*]] = memref.cast %[[S]] : memref<32x2xf32> to memref<?x?xf32>
// CHECK: %[[ZC:.*]] = memref.cast %[[Z]] : memref<32x2xf32> to memref<?x?xf32>
// CHECK: %[[GC:.*]] = memref.cast %[[G]] : memref<64xi32> to memref<?xi32>
// CHECK: call @gptq_uk_matmul_avx2_tables(%{{.*}}, %{{.*}}, %{{.*}}, %[[F1030]], %[[WC]], %[[SC]], %[[ZC]], %[[GC]], %{{.*}}, %{{.*}})
// bfloat16 (1 << 12) and float16 (2 << 12) weights.
// CHECK: arith.constant 4102 : i32
// CHECK: %[[HC:.*]] = memref.cast %[[H]] : memref<32x64xbf16> to memref<?x?xbf16>
// CHECK: call @gptq_uk_matmul_avx2_tables({{.*}}, %[[HC]], %{{.*}})
// CHECK: arith.constant 8198 : i32
// CHECK: %[[FC:.*]] = memref.cast %[[F]] : memref<32x64xf16> to memref<?x?xf16>
// CHECK: call @gptq_uk_matmul_avx2_tables({{.*}}, %[[FC]])
// CHECK-NOT: gptq_ukernel.matmul
// VNNI: func.func private @gptq_uk_matmul_avx512_vnni_dots(
// VNNI-COUNT-4: call @gptq_uk_matmul_avx512_vnni_dots(
// TABLES: call @gptq_uk_matmul_avx512_vnni_tables(
// DOTS: call @gptq_uk_matmul_generic_dots(
// BADISA: error: cpu-isa must be host or one of generic, avx2, avx512, avx512-vnni, found 'sse9'
// BADDOTS: error: byte-dots must be auto, on or off, found 'maybe'
func.func @variants(%a: memref<1x8x64xf32>, %b: memref<1x32x64xf32>, %c: memref<1x8x32xf32>, %w: memref<32x8xi32>, %s: memref<32x2xf32>, %z: memref<32x2xf32>, %g: memref<64xi32>, %h: memref<32x64xbf16>, %f: memref<32x64xf16>) {
  gptq_ukernel.matmul ins(%a, %b : memref<1x8x64xf32>, memref<1x32x64xf32>) outs(%c : memref<1x8x32xf32>) {transpose_rhs, zero_init}
  gptq_ukernel.matmul ins(%a : memref<1x8x64xf32>) packed(%w, %s, %z, %g : memref<32x8xi32>, memref<32x2xf32>, memref<32x2xf32>, memref<64xi32>) outs(%c : memref<1x8x32xf32>) {bits = 4 : i64, transpose_rhs, zero_init}
  gptq_ukernel.matmul ins(%a : memref<1x8x64xf32>) half(%h : memref<32x64xbf16>) outs(%c : memref<1x8x32xf32>) {transpose_rhs, zero_init}
  gptq_ukernel.matmul ins(%a : memref<1x8x64xf32>) half(%f : memref<32x64xf16>) outs(%c : memref<1x8x32xf32>) {transpose_rhs, zero_init}
  return
}

// -----

// A strided view the convention does not take (A and C with a non-unit
// inner stride) is copied into a new buffer; C's copy goes back after the
// call; both are freed. A block of a larger C (unit inner stride, an
// offset: a band of the Hessian) is passed as it is. The triangles and the
// accumulation are flags too: transpose_lhs 1, lower_result 8, lower_lhs 16.
// CHECK-LABEL: func.func @strided
// CHECK-SAME: (%[[A:.*]]: memref<2x4x4xf32, strided<[32, 8, 2]>>, %[[B:.*]]: memref<2x4x4xf32>, %[[C:.*]]: memref<2x4x4xf32, strided<[64, 16, 2], offset: 3>>, %[[D:.*]]: memref<2x4x4xf32, strided<[64, 16, 1], offset: 3>>)
// CHECK: %[[ACOPY:.*]] = memref.alloc(%{{.*}}, %{{.*}}, %{{.*}}) : memref<?x?x?xf32>
// CHECK: memref.copy %[[A]], %[[ACOPY]]
// CHECK: %[[CCOPY:.*]] = memref.alloc(%{{.*}}, %{{.*}}, %{{.*}}) : memref<?x?x?xf32>
// CHECK: memref.copy %[[C]], %[[CCOPY]]
// CHECK: %[[FLAGS:.*]] = arith.constant 25 : i32
// CHECK: call @gptq_uk_matmul_avx2_tables(%{{.*}}, %{{.*}}, %{{.*}}, %[[FLAGS]],
// CHECK-NEXT: memref.dealloc %[[ACOPY]]
// CHECK-NEXT: memref.copy %[[CCOPY]], %[[C]]
// CHECK-NEXT: memref.dealloc %[[CCOPY]]
// CHECK: %[[DC:.*]] = memref.cast %[[D]] : memref<2x4x4xf32, strided<[64, 16, 1], offset: 3>> to memref<?x?x?xf32, strided<[?, ?, 1], offset: ?>>
// CHECK-NOT: memref.copy
// CHECK: call @gptq_uk_matmul_avx2_tables(%{{.*}}, %{{.*}}, %[[DC]],
func.func @strided(%a: memref<2x4x4xf32, strided<[32, 8, 2]>>, %b: memref<2x4x4xf32>, %c: memref<2x4x4xf32, strided<[64, 16, 2], offset: 3>>, %d: memref<2x4x4xf32, strided<[64, 16, 1], offset: 3>>) {
  gptq_ukernel.matmul ins(%a, %b : memref<2x4x4xf32, strided<[32, 8, 2]>>, memref<2x4x4xf32>) outs(%c : memref<2x4x4xf32, strided<[64, 16, 2], offset: 3>>) {transpose_lhs, lower_result, lower_lhs}
  gptq_ukernel.matmul ins(%b, %b : memref<2x4x4xf32>, memref<2x4x4xf32>) outs(%d : memref<2x4x4xf32, strided<[64, 16, 1], offset: 3>>) {transpose_lhs, lower_result}
  return
}


// -----

// The layer's microkernels: calls of the instruction set's build, declared
// once each, with the variant as flags (the factorization's bit 0: H
// permuted; quantize-and-compensate's bits 0 fixed grids, 1 sym, 2 mse, 3
// W permuted, 4 masked, 5 codes unpermuted), the settings as scalars
// (group size, block size, maxq, the MSE search's norm, steps and grid),
// the operands a variant lacks as empty buffers; the scalar results
// replace the ops'.
// CHECK-DAG: func.func private @gptq_uk_damped_cholesky_avx2(memref<?x?xf32>, memref<?xi64>, memref<?x?xf32>, i32, f32, i64) -> i1
// CHECK-DAG: func.func private @gptq_uk_quantize_blocks_avx2(memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>, memref<?xi32>, memref<?xi64>, memref<?x?xf32>, memref<?x?xi8>, memref<?x?xf32>, memref<?x?xf32>, i32, i64, i64, f32, f32, i64, f64) -> f32
// CHECK-LABEL: func.func @layer
// CHECK-SAME: (%[[H:.*]]: memref<64x64xf32>, %[[P:.*]]: memref<64xi64>, %[[D:.*]]: f32,
// CHECK: %[[NOMAP:.*]] = memref.cast %{{.*}} : memref<0xi32> to memref<?xi32>
// CHECK: %[[NOGRID:.*]] = memref.cast %{{.*}} : memref<0x0xf32> to memref<?x?xf32>
// CHECK: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK: %[[B32:.*]] = arith.constant 32 : i64
// CHECK: %[[OK:.*]] = call @gptq_uk_damped_cholesky_avx2(%{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]], %[[D]], %[[B32]])
// CHECK: %[[F62:.*]] = arith.constant 62 : i32
// CHECK: %[[GS:.*]] = arith.constant 32 : i64
// CHECK: %[[BS:.*]] = arith.constant 128 : i64
// CHECK: %[[MAXQ:.*]] = arith.constant 7.000000e+00 : f32
// CHECK: %[[NORM:.*]] = arith.constant 2.400000e+00 : f32
// CHECK: %[[STEPS:.*]] = arith.constant 80 : i64
// CHECK: %[[GRID:.*]] = arith.constant 1.000000e+02 : f64
// CHECK: %[[L1:.*]] = call @gptq_uk_quantize_blocks_avx2(%{{.*}}, %{{.*}}, %[[NOGRID]], %[[NOGRID]], %[[NOMAP]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[F62]], %[[GS]], %[[BS]], %[[MAXQ]], %[[NORM]], %[[STEPS]], %[[GRID]])
// Per-row grids: fixed (flags 1), one column per group, 4 bits.
// CHECK: %[[F1:.*]] = arith.constant 1 : i32
// CHECK: %[[GS1:.*]] = arith.constant 1 : i64
// CHECK: arith.constant 1.500000e+01 : f32
// CHECK: %[[L2:.*]] = call @gptq_uk_quantize_blocks_avx2({{.*}}, %[[F1]], %[[GS1]],
// CHECK: return %[[OK]], %[[L1]], %[[L2]]
// CHECK-NOT: gptq_ukernel.
func.func @layer(%h: memref<64x64xf32>, %p: memref<64xi64>, %d: f32, %u: memref<64x64xf32>, %w: memref<8x64xf32>, %c: memref<8x64xi8>, %s: memref<8x2xf32>, %z: memref<8x2xf32>, %s1: memref<8x1xf32>, %map: memref<64xi32>) -> (i1, f32, f32) {
  %ok = gptq_ukernel.damped_cholesky ins(%h : memref<64x64xf32>) permuted(%p : memref<64xi64>) percdamp(%d) outs(%u : memref<64x64xf32>) {block = 32 : i64} -> i1
  %l1 = gptq_ukernel.quantize_blocks ins(%w, %u : memref<8x64xf32>, memref<64x64xf32>) permuted(%p : memref<64xi64>) masked(%h : memref<64x64xf32>) outs(%c, %s, %z : memref<8x64xi8>, memref<8x2xf32>, memref<8x2xf32>) {config = #gptq.config<bits = 3, group_size = 32, sym = true, mse = true>, permute_codes} -> f32
  %l2 = gptq_ukernel.quantize_blocks ins(%w, %u : memref<8x64xf32>, memref<64x64xf32>) grids(%s1, %s1, %map : memref<8x1xf32>, memref<8x1xf32>, memref<64xi32>) outs(%c, %s1, %s1 : memref<8x64xi8>, memref<8x1xf32>, memref<8x1xf32>) {config = #gptq.config<>} -> f32
  return %ok, %l1, %l2 : i1, f32, f32
}

// -----

// A run-time width: the kernel's maxq is 2^bits - 1, computed.
// CHECK-LABEL: func.func @run_time_bits
// CHECK-SAME: %[[B:[^:]*]]: i64)
// CHECK: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK: %[[CODES:.*]] = arith.shli %[[ONE]], %[[B]] : i64
// CHECK: %[[TOP:.*]] = arith.subi %[[CODES]], %[[ONE]] : i64
// CHECK: %[[MAXQ:.*]] = arith.sitofp %[[TOP]] : i64 to f32
// CHECK: call @gptq_uk_quantize_blocks_avx2({{.*}}, %[[MAXQ]], %{{.*}}, %{{.*}}, %{{.*}})
func.func @run_time_bits(%w: memref<8x64xf32>, %u: memref<64x64xf32>, %c: memref<8x64xi8>, %s: memref<8x2xf32>, %b: i64) -> f32 {
  %l = gptq_ukernel.quantize_blocks ins(%w, %u : memref<8x64xf32>, memref<64x64xf32>) bits(%b) outs(%c, %s, %s : memref<8x64xi8>, memref<8x2xf32>, memref<8x2xf32>) {config = #gptq.config<group_size = 32>} -> f32
  return %l : f32
}
