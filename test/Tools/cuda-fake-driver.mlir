// Compiled GPU code registers its kernels before it first launches one, in
// each form it is loaded in: gptq-run's JIT, gptq-run's compile cache (a
// shared library) and gptq-compile's executables. Against a driver that
// refuses every image (unittests/FakeCudaDriver, loaded through
// GPTQ_CUDA_DRIVER), each run gets as far as the driver's module load and
// fails there with the driver's error and nothing written. Without the
// registration a launch took a module that was never loaded, and crashed.
// REQUIRES: cuda-toolkit, ptxas
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import numpy; numpy.save('%t/x.npy', numpy.ones((4, 8), numpy.float32))"
// RUN: env GPTQ_CUDA_DRIVER=%gptq_obj/lib/libGPTQFakeCudaDriver.so GPTQ_MLIR_CACHE_DIR=%t/cache \
// RUN:   not gptq-run %s --device cuda --input %t/x.npy --output-dir %t/out 2>&1 | FileCheck %s
// RUN: not test -e %t/out
// The second run loads the compile cache's library.
// RUN: ls %t/cache | FileCheck %s --check-prefix=CACHED
// RUN: env GPTQ_CUDA_DRIVER=%gptq_obj/lib/libGPTQFakeCudaDriver.so GPTQ_MLIR_CACHE_DIR=%t/cache \
// RUN:   not gptq-run %s --device cuda --input %t/x.npy --output-dir %t/out 2>&1 | FileCheck %s
// RUN: not test -e %t/out
// RUN: gptq-compile %s --device cuda -o %t/double
// RUN: env GPTQ_CUDA_DRIVER=%gptq_obj/lib/libGPTQFakeCudaDriver.so \
// RUN:   not %t/double --input %t/x.npy --output-dir %t/out 2>&1 | FileCheck %s --check-prefix=AOT
// RUN: not test -e %t/out
// A driver library that does not exist is named in the error, before
// anything is compiled or written.
// RUN: env GPTQ_CUDA_DRIVER=%t/no-such-driver.so not gptq-run %s --device cuda --input %t/x.npy \
// RUN:   --output-dir %t/out 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not test -e %t/out

// MISSING: cannot load the CUDA driver ({{.*}}no-such-driver.so): {{.*}}no-such-driver.so: cannot open shared object file
// CHECK: gptq-run: error: cuda: cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (device 0)
// CACHED: main.so
// AOT: double: error: cuda: cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (device 0)

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x?xf32>) outs(%x : tensor<?x?xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
