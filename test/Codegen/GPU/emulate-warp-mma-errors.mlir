// RUN: not gptq-opt %s --split-input-file --gptq-emulate-warp-mma 2>&1 | FileCheck %s
// RUN: not gptq-opt %s --split-input-file --gptq-gpu-tile-contractions="tensor-cores=fp16" 2>&1 | FileCheck %s --check-prefix=OPTION

// What the emulation cannot run is an error naming the launch or the op,
// never a crash.

// OPTION: error: gptq-gpu-tile-contractions: tensor-cores must be off, tf32 or 3xtf32, found 'fp16'
func.func @threads(%n: index, %a: vector<4x1xf32>, %b: vector<2x1xf32>, %c: vector<2x2xf32>) {
  %c1 = arith.constant 1 : index
  // CHECK: error: gptq-emulate-warp-mma: a launch with nvgpu.mma.sync needs constant block and shared memory sizes and whole warps
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%u = %n, %v = %c1, %w = %c1) {
    %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
    gpu.terminator
  }
  return
}

// -----

func.func @partial_warp(%a: vector<4x1xf32>, %b: vector<2x1xf32>, %c: vector<2x2xf32>) {
  %c1 = arith.constant 1 : index
  %c48 = arith.constant 48 : index
  // CHECK: error: gptq-emulate-warp-mma: a launch with nvgpu.mma.sync needs constant block and shared memory sizes and whole warps
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%u = %c48, %v = %c1, %w = %c1) {
    %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
    gpu.terminator
  }
  return
}

// -----

func.func @f16(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%x = %c1, %y = %c1, %z = %c1) threads(%tx, %ty, %tz) in (%u = %c32, %v = %c1, %w = %c1) {
    // CHECK: error: gptq-emulate-warp-mma: only m16n8k8 with tf32Enabled and f32 fragments is emulated
    %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
    gpu.terminator
  }
  return
}
