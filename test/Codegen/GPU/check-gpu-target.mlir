// gptq-lower-to-nvvm-pipeline refuses, before anything else, a target it
// cannot build for: one error naming the option, no output.
// RUN: rm -rf %t && mkdir -p %t/kit/nvvm/libdevice %t/kit/bin %t/nolib/bin %t/noptxas/nvvm/libdevice
// RUN: printf '#!/bin/sh\n' > %t/kit/bin/ptxas && chmod +x %t/kit/bin/ptxas
// RUN: gptq-opt %s --gptq-check-gpu-target="toolkit=%t/kit" | FileCheck %s --check-prefix=OK
// RUN: not gptq-opt %s --gptq-check-gpu-target="chip=sm_x1 toolkit=%t/kit" -o %t/out 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not gptq-opt %s --gptq-check-gpu-target="chip=sm_999 toolkit=%t/kit" -o %t/out 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not gptq-opt %s --gptq-check-gpu-target="features=+ptx80,avx toolkit=%t/kit" -o %t/out 2>&1 | FileCheck %s --check-prefix=FEATURES
// RUN: not gptq-opt %s --gptq-check-gpu-target="toolkit=%t/nolib" -o %t/out 2>&1 | FileCheck %s --check-prefix=LIBDEVICE
// RUN: not gptq-opt %s --gptq-check-gpu-target="toolkit=%t/noptxas" -o %t/out 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: gptq-opt %s --gptq-check-gpu-target="toolkit=%t/noptxas need-ptxas=false" | FileCheck %s --check-prefix=OK
// RUN: not gptq-opt %s --gptq-lower-to-nvvm-pipeline="chip=sm_x1" -o %t/out 2>&1 | FileCheck %s --check-prefix=PIPELINE
// RUN: not test -e %t/out

// OK: func.func @f
// CHIP: error: gptq-lower-to-nvvm-pipeline: chip 'sm_x1' is not an NVIDIA GPU architecture such as sm_90
// CHIP-NOT: see current operation
// UNKNOWN: error: gptq-lower-to-nvvm-pipeline: chip 'sm_999' is not a GPU architecture that LLVM's NVPTX backend knows ({{.*}}sm_90{{.*}})
// FEATURES: error: gptq-lower-to-nvvm-pipeline: features '+ptx80,avx' is not a list of PTX versions such as +ptx80
// LIBDEVICE: error: gptq-lower-to-nvvm-pipeline: the CUDA toolkit '{{.*}}nolib' has no {{.*}}nolib/nvvm/libdevice (the math functions of the kernels)
// PTXAS: error: gptq-lower-to-nvvm-pipeline: the CUDA toolkit '{{.*}}noptxas' has no {{.*}}noptxas/bin/ptxas to assemble cubin
// PIPELINE: error: gptq-lower-to-nvvm-pipeline: chip 'sm_x1'
func.func @f(%x: f32) -> f32 {
  return %x : f32
}
