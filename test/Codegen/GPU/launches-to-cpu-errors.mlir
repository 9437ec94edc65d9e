// RUN: not gptq-opt %s --gptq-launches-to-cpu -o /dev/null 2>&1 | FileCheck %s

// An asynchronous launch (its token, dependencies) has no CPU form here.
// CHECK: gptq-launches-to-cpu: only synchronous launches without attributions or clusters run on the CPU
func.func @async() {
  %c1 = arith.constant 1 : index
  %t = gpu.launch async blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  return
}
