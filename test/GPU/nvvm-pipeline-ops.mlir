// Every gptq op through gptq-lower-to-nvvm-pipeline: the portable kernels,
// each outermost parallel loop a kernel of 256 or 8 x 32 threads, PTX for
// sm_90 (and, with ptxas, cubin). The quantize kernels divide with IEEE
// rounding (div.rn.f32): GPTQ's error step compounds across columns, so
// approximate division is never used.

// REQUIRES: cuda-toolkit
// The pipeline runs once per format; each prefix checks the same output.
// RUN: rm -rf %t && mkdir -p %t
// RUN: gptq-opt %s --gptq-lower-to-nvvm-pipeline="format=isa" -mlir-print-ir-after=gpu-kernel-outlining \
// RUN:   -o %t/isa.mlir 2> %t/outlined.mlir
// RUN: FileCheck %s < %t/isa.mlir
// RUN: FileCheck %s --check-prefix=MEM < %t/isa.mlir
// RUN: FileCheck %s --check-prefixes=PTX,NOAPPROX < %t/isa.mlir
// RUN: FileCheck %s --check-prefix=NOMALLOC < %t/isa.mlir
// RUN: FileCheck %s --check-prefix=TILED < %t/isa.mlir
// RUN: FileCheck %s --check-prefix=OUTLINED < %t/outlined.mlir
// RUN: FileCheck %s --check-prefix=ONEBLOCK < %t/outlined.mlir
// RUN: %if ptxas %{ gptq-opt %s --gptq-lower-to-nvvm-pipeline | FileCheck %s --check-prefix=CUBIN %}
// Everything lowers: the result translates to LLVM IR, whose constructors
// register the embedded kernels and whose host code launches them.
// RUN: mlir-translate --mlir-to-llvmir %t/isa.mlir | FileCheck %s --check-prefix=LLVMIR
// RUN: not gptq-opt %s --gptq-lower-to-nvvm-pipeline="format=text" -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADFORMAT

// After outlining no parallel loop is left on the host: every one became a
// kernel launch, with constant block sizes (8 x 32 threads for a 2-D loop,
// the last dimension on x; 256 for a 1-D one).
// OUTLINED-NOT: scf.parallel
// OUTLINED: gpu.func @hessian_kernel({{.*}}) kernel attributes {known_block_size = array<i32: 32, 8, 1>}
// The product X^T X: a tiled kernel of 4 warps (32 x 4 threads).
// OUTLINED: gpu.func @hessian_kernel({{.*}}) kernel attributes {known_block_size = array<i32: 32, 4, 1>}
// OUTLINED-NOT: scf.parallel
// OUTLINED: gpu.func @act_order_kernel({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// OUTLINED-NOT: scf.parallel
// The quantize-and-compensate loop, a row of W per thread running the
// block's column loop (gptq.long_iterations): blocks of 32 threads, so
// that the rows spread over the chip's multiprocessors.
// OUTLINED: gpu.func @quantize_kernel({{.*}}) kernel attributes {known_block_size = array<i32: 32, 1, 1>}
// OUTLINED: gpu.func @quantize_fixed_kernel({{.*}}) kernel attributes {known_block_size = array<i32: 32, 1, 1>}

// CHECK-LABEL: llvm.func @hessian(
// CHECK: gpu.launch_func @hessian_kernel
// CHECK-LABEL: llvm.func @cholesky(
// CHECK: gpu.launch_func
// CHECK-LABEL: llvm.func @act_order(
// CHECK: gpu.launch_func
// CHECK-LABEL: llvm.func @permute(
// CHECK: gpu.launch_func
// CHECK-LABEL: llvm.func @mask(
// CHECK: gpu.launch_func
// CHECK-LABEL: llvm.func @grid(
// CHECK: gpu.launch_func
// CHECK-LABEL: llvm.func @quantize(
// CHECK: gpu.launch_func
// CHECK-LABEL: llvm.func @quantize_fixed(
// CHECK: gpu.launch_func
// CHECK-LABEL: llvm.func @group_index(
// CHECK: gpu.launch_func
// CHECK-LABEL: llvm.func @dequantize(
// CHECK: gpu.launch_func
// CHECK-LABEL: llvm.func @pack3(
// CHECK: gpu.launch_func
// CHECK-LABEL: llvm.func @layer(
// CHECK: gpu.launch_func

// Host buffers are managed memory: the arguments are copied into buffers
// made by mgpuMemAlloc with its last argument (host shared) true, freed
// on a stream.
// MEM-LABEL: llvm.func @hessian(
// MEM: %[[SHARED:.*]] = llvm.mlir.constant(1 : i8) : i8
// MEM: llvm.call @mgpuMemAlloc(%{{.*}}, %{{.*}}, %[[SHARED]]) : (i64, !llvm.ptr, i8) -> !llvm.ptr
// MEM: llvm.call @mgpuMemFree(
// MEM: llvm.call @mgpuStreamSynchronize(

// The kernels, as PTX for sm_90 (binaries precede the host functions).
// PTX: gpu.binary @hessian_kernel {{ *}}[#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, properties = {{.*}}, assembly = "{{.*}}.target sm_90

// The quantize-and-compensate loop's kernel (every block of columns for a
// chunk of rows): rounding to the grid and the error step with IEEE
// division.
// PTX: gpu.binary @quantize_kernel_{{[0-9]+}} {{.*}}cvt.rni.f32.f32{{.*}}div.rn.f32

// The matrix products (here the Hessian's X^T X) run on tensor cores
// (sm_90 here): each chunk of their operands staged in shared memory
// (st.shared, bar.sync), read back (ld.shared) as TF32 fragments for
// mma.sync m16n8k8, three per multiply (3xTF32) in each of a warp's 8
// tiles and 2 steps of a chunk: 48. (The CUDA-core kernels that
// tensor-cores=off gives are checked in test/Codegen/GPU.)
// TILED-LABEL: llvm.func @hessian(
// TILED: gpu.launch_func @hessian_kernel_{{[0-9]+}}::@hessian_kernel {{.*}} dynamic_shared_memory_size
// TILED: gpu.binary @hessian_kernel_{{[0-9]+}} {{.*}}.extern .shared .align 16 .b8 __dynamic_shmem__{{[0-9]+}}[];{{.*}}st.shared.b32{{.*}}bar.sync{{.*}}ld.shared.b32{{.*}}mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32

// No kernel allocates memory of its own (malloc on the device heap): the
// column loop works on W in place and the grids are computed before it.
// NOMALLOC-NOT: malloc
// NOAPPROX-NOT: div.approx
// NOAPPROX-NOT: div.full

// LLVMIR: @llvm.global_ctors
// LLVMIR: define {{.*}} @layer(
// LLVMIR: call ptr @mgpuModuleGetFunction(
// LLVMIR: call void @mgpuLaunchKernel(
// LLVMIR: call ptr @mgpuModuleLoadJIT(

// A cubin is an ELF image.
// CUBIN: gpu.binary @hessian_kernel {{ *}}[#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, properties = {{.*}}, bin = "\7FELF
// CUBIN: gpu.binary @layer_kernel{{.*}}bin = "\7FELF

// The factorization's diagonal blocks run on the GPU, each in one kernel
// of one block of 256 threads with barriers between the steps' loops; the
// host computes no square root.
// ONEBLOCK-LABEL: func.func @cholesky(
// ONEBLOCK-NOT: math.sqrt
// ONEBLOCK: return
// ONEBLOCK: gpu.func @cholesky_kernel({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 1, 1, 1>}
// ONEBLOCK-NOT: gpu.return
// ONEBLOCK: math.sqrt
// ONEBLOCK-NOT: gpu.return
// ONEBLOCK: gpu.barrier
// ONEBLOCK-NOT: gpu.return
// ONEBLOCK: arith.divf
// ONEBLOCK-NOT: gpu.return
// ONEBLOCK: gpu.barrier

// BADFORMAT: for the --format option: Cannot find option named 'text'

func.func @hessian(%x: tensor<?x?x?xf32>, %h: tensor<?x?xf32>, %n: i64) -> (tensor<?x?xf32>, i64) {
  %h1, %n1 = gptq.hessian_accumulate %x into %h count %n : tensor<?x?x?xf32>, tensor<?x?xf32>
  return %h1, %n1 : tensor<?x?xf32>, i64
}

func.func @cholesky(%h: tensor<?x?xf32>, %p: f32) -> (tensor<?x?xf32>, i1) {
  %u, %ok = gptq.damped_cholesky %h percdamp(%p) : tensor<?x?xf32>
  return %u, %ok : tensor<?x?xf32>, i1
}

func.func @act_order(%h: tensor<?x?xf32>) -> tensor<?xi64> {
  %perm = gptq.act_order %h : tensor<?x?xf32> -> tensor<?xi64>
  return %perm : tensor<?xi64>
}

func.func @permute(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>, %perm: tensor<?xi64>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %wp = gptq.permute %w by %perm inverse dims [1] : tensor<?x?xf32>, tensor<?xi64>
  %hp = gptq.permute %h by %perm dims [0, 1] : tensor<?x?xf32>, tensor<?xi64>
  return %wp, %hp : tensor<?x?xf32>, tensor<?x?xf32>
}

func.func @mask(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %m = gptq.mask_dead_inputs %w, %h : tensor<?x?xf32>, tensor<?x?xf32>
  return %m : tensor<?x?xf32>
}

func.func @grid(%w: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %s, %z = gptq.grid %w {config = #gptq.config<group_size = 128, mse = true>} : tensor<?x?xf32> -> tensor<?x?xf32>
  return %s, %z : tensor<?x?xf32>, tensor<?x?xf32>
}

func.func @quantize(%w: tensor<?x?xf32>, %u: tensor<?x?xf32>) -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, f32) {
  %codes, %s, %z, %loss = gptq.quantize_blocks %w, %u {config = #gptq.config<group_size = 128>}
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>
  return %codes, %s, %z, %loss : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, f32
}

func.func @quantize_fixed(%w: tensor<?x?xf32>, %u: tensor<?x?xf32>, %s0: tensor<?x?xf32>, %z0: tensor<?x?xf32>, %g: tensor<?xi32>) -> (tensor<?x?xi8>, f32) {
  %codes, %s, %z, %loss = gptq.quantize_blocks %w, %u grid(%s0, %z0, %g : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>)
      {config = #gptq.config<group_size = 128, static_groups = true>}
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>
  return %codes, %loss : tensor<?x?xi8>, f32
}

func.func @group_index(%cols: index, %perm: tensor<?xi64>) -> tensor<?xi32> {
  %g = gptq.group_index %cols perm(%perm : tensor<?xi64>) {config = #gptq.config<group_size = 128, act_order = true>} : tensor<?xi32>
  return %g : tensor<?xi32>
}

func.func @dequantize(%codes: tensor<?x?xi8>, %s: tensor<?x?xf32>, %z: tensor<?x?xf32>, %g: tensor<?xi32>) -> tensor<?x?xf32> {
  %w = gptq.dequantize %codes, %s, %z, %g : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32> -> tensor<?x?xf32>
  return %w : tensor<?x?xf32>
}

func.func @pack3(%c: tensor<?x?xi8>) -> (tensor<?x?xi32>, tensor<?x?xi8>) {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %c, %c1 : tensor<?x?xi8>
  %p = gptq.pack %c bits 3 : tensor<?x?xi8> -> tensor<?x?xi32>
  %u = gptq.unpack %p columns %n bits 3 : tensor<?x?xi32> -> tensor<?x?xi8>
  return %p, %u : tensor<?x?xi32>, tensor<?x?xi8>
}

func.func @layer(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>) -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>, f32, i1) {
  %codes, %s, %z, %g, %loss, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<group_size = 128, act_order = true>}
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32>
  return %codes, %s, %z, %g, %loss, %ok : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>, f32, i1
}
