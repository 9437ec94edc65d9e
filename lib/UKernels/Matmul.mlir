// The matrix microkernel of the library (gptq_ukernel.matmul), as the
// library exports it: gptq-build-ukernels compiles this function, with the
// kernels it calls (KernelsCPU.mlir's __gptq_matmul and what that calls),
// once for each instruction set and form, under the name
// gptq_uk_matmul_<isa>_<dots|tables>. Its signature is the calling
// convention of include/gptq/Codegen/CPU/UKernelAbi.h, which the build
// checks: the operands as buffers (A, B and C with a unit inner stride, C
// possibly a block of a larger matrix; the rest dense), an operand the
// variant lacks empty; the variant as a flags word (bits 0 to 4: transpose
// A, transpose B, C not read, only C's lower triangle wanted, A lower
// triangular; bits 8 to 11 the packed weight's width, 0 for none; bits 12
// and 13 the half-precision weight's type, 1 bfloat16, 2 float16). The
// product is written into C in place.

#batch = strided<[?, ?, 1], offset: ?>

func.func @gptq_uk_matmul(%am: memref<?x?x?xf32, #batch>, %bm: memref<?x?x?xf32, #batch>, %cm: memref<?x?x?xf32, #batch>, %flags: i32, %qwm: memref<?x?xi32>, %qsm: memref<?x?xf32>, %qzm: memref<?x?xf32>, %qgm: memref<?xi32>, %bhm: memref<?x?xbf16>, %bfm: memref<?x?xf16>) {
  %a = bufferization.to_tensor %am restrict : memref<?x?x?xf32, #batch> to tensor<?x?x?xf32>
  %b = bufferization.to_tensor %bm restrict : memref<?x?x?xf32, #batch> to tensor<?x?x?xf32>
  %c = bufferization.to_tensor %cm restrict writable : memref<?x?x?xf32, #batch> to tensor<?x?x?xf32>
  %qw = bufferization.to_tensor %qwm restrict : memref<?x?xi32> to tensor<?x?xi32>
  %qs = bufferization.to_tensor %qsm restrict : memref<?x?xf32> to tensor<?x?xf32>
  %qz = bufferization.to_tensor %qzm restrict : memref<?x?xf32> to tensor<?x?xf32>
  %qg = bufferization.to_tensor %qgm restrict : memref<?xi32> to tensor<?xi32>
  %bh = bufferization.to_tensor %bhm restrict : memref<?x?xbf16> to tensor<?x?xbf16>
  %bf = bufferization.to_tensor %bfm restrict : memref<?x?xf16> to tensor<?x?xf16>

  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %two = arith.constant 2 : i32
  %four = arith.constant 4 : i32
  %eight = arith.constant 8 : i32
  %sixteen = arith.constant 16 : i32
  %twelve = arith.constant 12 : i32
  %fifteen = arith.constant 15 : i32
  %three = arith.constant 3 : i32
  %fTransA = arith.andi %flags, %one : i32
  %transA = arith.cmpi ne, %fTransA, %zero : i32
  %fTransB = arith.andi %flags, %two : i32
  %transB = arith.cmpi ne, %fTransB, %zero : i32
  %fZeroC = arith.andi %flags, %four : i32
  %zeroC = arith.cmpi ne, %fZeroC, %zero : i32
  %fLowerC = arith.andi %flags, %eight : i32
  %lowerC = arith.cmpi ne, %fLowerC, %zero : i32
  %fLowerA = arith.andi %flags, %sixteen : i32
  %lowerA = arith.cmpi ne, %fLowerA, %zero : i32
  %shiftedBits = arith.shrui %flags, %eight : i32
  %bits32 = arith.andi %shiftedBits, %fifteen : i32
  %bits = arith.extui %bits32 : i32 to i64
  %quant = arith.cmpi ne, %bits32, %zero : i32
  %shiftedHalf = arith.shrui %flags, %twelve : i32
  %half32 = arith.andi %shiftedHalf, %three : i32
  %half = arith.extui %half32 : i32 to i64

  %r = func.call @__gptq_matmul(%a, %b, %c, %transA, %transB, %zeroC, %lowerC, %lowerA, %quant, %qw, %qs, %qz, %qg, %bits, %half, %bh, %bf) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32>, i1, i1, i1, i1, i1, i1, tensor<?x?xi32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>, i64, i64, tensor<?x?xbf16>, tensor<?x?xf16>) -> tensor<?x?x?xf32>
  bufferization.materialize_in_destination %r in restrict writable %cm : (tensor<?x?x?xf32>, memref<?x?x?xf32, #batch>) -> ()
  return
}
