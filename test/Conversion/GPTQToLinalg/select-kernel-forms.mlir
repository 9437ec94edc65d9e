// RUN: gptq-opt %s --gptq-select-kernel-forms="cpu-isa=avx512-vnni" | FileCheck %s --check-prefix=VNNI
// RUN: gptq-opt %s --gptq-select-kernel-forms="cpu-isa=avx512" | FileCheck %s --check-prefix=AVX512
// RUN: gptq-opt %s --gptq-select-kernel-forms="cpu-isa=avx2" | FileCheck %s --check-prefix=AVX2
// RUN: gptq-opt %s --gptq-select-kernel-forms="cpu-isa=generic" | FileCheck %s --check-prefix=GENERIC
// RUN: not gptq-opt %s --gptq-select-kernel-forms="cpu-isa=sse9" 2>&1 | FileCheck %s --check-prefix=BAD

// The CPU kernels' table lookup and byte dot product (portable bodies here
// stand in for KernelsCPU.mlir's) get the instruction set's form, and may
// then be inlined.

func.func private @__gptq_lut16(%t: vector<16xf32>, %c: vector<16xi32>) -> vector<16xf32> attributes {gptq.library, no_inline} {
  return %t : vector<16xf32>
}
func.func private @__gptq_dot4(%acc: vector<16xi32>, %a: vector<16xi32>, %b: vector<16xi32>) -> vector<16xi32> attributes {gptq.library, no_inline} {
  return %acc : vector<16xi32>
}
func.func @use(%t: vector<16xf32>, %c: vector<16xi32>) -> (vector<16xf32>, vector<16xi32>) {
  %w = func.call @__gptq_lut16(%t, %c) : (vector<16xf32>, vector<16xi32>) -> vector<16xf32>
  %d = func.call @__gptq_dot4(%c, %c, %c) : (vector<16xi32>, vector<16xi32>, vector<16xi32>) -> vector<16xi32>
  return %w, %d : vector<16xf32>, vector<16xi32>
}

// VNNI-LABEL: func.func private @__gptq_lut16
// VNNI-NOT: no_inline
// VNNI: llvm.call_intrinsic "llvm.x86.avx512.permvar.sf.512"
// VNNI-LABEL: func.func private @__gptq_dot4
// VNNI: vector.bitcast {{.*}} : vector<16xi32> to vector<64xi8>
// VNNI: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"

// AVX512-LABEL: func.func private @__gptq_lut16
// AVX512: llvm.call_intrinsic "llvm.x86.avx512.permvar.sf.512"
// AVX512-LABEL: func.func private @__gptq_dot4
// AVX512-SAME: no_inline
// AVX512-NEXT: return %arg0

// Two 8-lane permutes per half of the codes, bit 3 choosing.
// AVX2-LABEL: func.func private @__gptq_lut16
// AVX2-COUNT-2: call @__gptq_lut16_avx2_half
// AVX2-LABEL: func.func private @__gptq_dot4
// AVX2-SAME: no_inline
// AVX2-LABEL: func.func private @__gptq_lut16_avx2_half
// AVX2-SAME: gptq.library
// AVX2-COUNT-2: llvm.call_intrinsic "llvm.x86.avx2.permps"
// AVX2: arith.andi
// AVX2: arith.select

// GENERIC-NOT: llvm.call_intrinsic
// GENERIC-LABEL: func.func private @__gptq_lut16
// GENERIC-SAME: no_inline

// BAD: cpu-isa must be host or one of generic, avx2, avx512, avx512-vnni, found 'sse9'
