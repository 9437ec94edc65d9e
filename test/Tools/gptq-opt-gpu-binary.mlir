// gptq-opt serializes GPU kernels for NVIDIA GPUs: upstream's NVVM pipeline
// lowers a gpu.launch to an outlined kernel, then gpu-module-to-binary
// emits its PTX (isa) or assembles a cubin with the toolkit's ptxas (bin).
// The PTX divides with IEEE rounding (div.rn.f32), as GPTQ's error step
// needs, unless the module asks for approximate division.

// RUN: gptq-opt %s --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=isa" \
// RUN:   | FileCheck %s --check-prefix=PTX
// RUN: gptq-opt %s --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=isa" \
// RUN:   | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVM
// RUN: %if ptxas %{ gptq-opt %s --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90 cubin-features=+ptx80 cubin-format=bin" \
// RUN:   | FileCheck %s --check-prefix=CUBIN %}

// PTX: gpu.launch_func @scaled_error_kernel::@scaled_error_kernel
// PTX: gpu.binary @scaled_error_kernel
// PTX-SAME: #nvvm.target<chip = "sm_90", features = "+ptx80">
// PTX-SAME: .version 8.0
// PTX-SAME: .target sm_90
// PTX-SAME: .visible .entry scaled_error_kernel(
// PTX-SAME: div.rn.f32
// PTX-NOT: div.approx

// The host code loads the embedded image and launches the kernel through
// the mgpu* runtime functions (PTX is compiled by the driver at load).
// LLVM: @scaled_error_kernel_binary = internal constant
// LLVM: call ptr @mgpuModuleGetFunction(
// LLVM: call void @mgpuLaunchKernel(
// LLVM: call ptr @mgpuModuleLoadJIT(ptr @scaled_error_kernel_binary, i32 2)

// A cubin is an ELF image: its bytes start with "\7FELF".
// CUBIN: gpu.binary @scaled_error_kernel [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">, properties = {{.*}}, bin = "\7FELF

// err[i] = (w[i] - q[i]) / d[i] on one thread per element.
func.func @scaled_error(%w: memref<?xf32>, %q: memref<?xf32>, %d: memref<?xf32>,
                        %err: memref<?xf32>, %n: index) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %blocks = arith.ceildivui %n, %c128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %blocks, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %c128 : index
    %i = arith.addi %base, %tx : index
    %inside = arith.cmpi ult, %i, %n : index
    scf.if %inside {
      %wi = memref.load %w[%i] : memref<?xf32>
      %qi = memref.load %q[%i] : memref<?xf32>
      %di = memref.load %d[%i] : memref<?xf32>
      %diff = arith.subf %wi, %qi : f32
      %e = arith.divf %diff, %di : f32
      memref.store %e, %err[%i] : memref<?xf32>
    }
    gpu.terminator
  }
  return
}
