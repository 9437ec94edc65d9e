// The x86 forms of the CPU kernels' target-dependent steps (KernelsCPU.mlir
// holds their portable forms, under the same names without the suffix).
// A form `<name>_dots` is taken when the library's functions are added, by
// the byte-dots option; the forms with target instructions, once the
// module's buffers are placed (gptq-select-kernel-forms: the deallocation
// passes take no op of unknown memory effects, as llvm.call_intrinsic is):
// `<name>_vnni` where the instruction set has AVX-512 VNNI, `<name>_avx512`
// on AVX-512, `<name>_avx2` on AVX2. Each form computes the same values as
// the portable one, bit for bit: lookups pick table entries, byte dot
// products are exact integers.

module {

// A lookup of %table at the low four bits of %code as AVX-512's 16-lane
// variable permute, vpermps, which reads only those bits: no mask.
func.func private @__gptq_lut16_avx512(%table: vector<16xf32>, %code: vector<16xi32>) -> vector<16xf32> {
  %w = llvm.call_intrinsic "llvm.x86.avx512.permvar.sf.512"(%table, %code) : (vector<16xf32>, vector<16xi32>) -> vector<16xf32>
  return %w : vector<16xf32>
}

// The same lookup as AVX2's 8-lane permutes: for each half of the codes,
// one permute of each half of the table at the codes' low three bits
// (which vpermps reads), and bit 3 choosing between them.
func.func private @__gptq_lut16_avx2(%table: vector<16xf32>, %code: vector<16xi32>) -> vector<16xf32> {
  %low = vector.extract_strided_slice %table {offsets = [0], sizes = [8], strides = [1]} : vector<16xf32> to vector<8xf32>
  %high = vector.extract_strided_slice %table {offsets = [8], sizes = [8], strides = [1]} : vector<16xf32> to vector<8xf32>
  %c0 = vector.extract_strided_slice %code {offsets = [0], sizes = [8], strides = [1]} : vector<16xi32> to vector<8xi32>
  %c1 = vector.extract_strided_slice %code {offsets = [8], sizes = [8], strides = [1]} : vector<16xi32> to vector<8xi32>
  %w0 = func.call @__gptq_lut16_avx2_half(%low, %high, %c0) : (vector<8xf32>, vector<8xf32>, vector<8xi32>) -> vector<8xf32>
  %w1 = func.call @__gptq_lut16_avx2_half(%low, %high, %c1) : (vector<8xf32>, vector<8xf32>, vector<8xi32>) -> vector<8xf32>
  %w = vector.shuffle %w0, %w1 [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] : vector<8xf32>, vector<8xf32>
  return %w : vector<16xf32>
}

func.func private @__gptq_lut16_avx2_half(%low: vector<8xf32>, %high: vector<8xf32>, %code: vector<8xi32>) -> vector<8xf32> {
  %eight = arith.constant dense<8> : vector<8xi32>
  %zero = arith.constant dense<0> : vector<8xi32>
  %fromLow = llvm.call_intrinsic "llvm.x86.avx2.permps"(%low, %code) : (vector<8xf32>, vector<8xi32>) -> vector<8xf32>
  %fromHigh = llvm.call_intrinsic "llvm.x86.avx2.permps"(%high, %code) : (vector<8xf32>, vector<8xi32>) -> vector<8xf32>
  %bit3 = arith.andi %code, %eight : vector<8xi32>
  %isHigh = arith.cmpi ne, %bit3, %zero : vector<8xi32>
  %w = arith.select %isHigh, %fromHigh, %fromLow : vector<8xi1>, vector<8xf32>
  return %w : vector<8xf32>
}

// The 4-bit decode kernel for groups of 128 columns multiplies codes and
// activations as bytes (__gptq_matmul_rows_q4_dot).
func.func private @__gptq_byte_dots_dots() -> i1 {
  %true = arith.constant true
  return %true : i1
}

// %acc plus, in each 32-bit lane, the four products of its bytes of %a
// (unsigned) and %b (signed): AVX-512 VNNI's vpdpbusd.
func.func private @__gptq_dot4_vnni(%acc: vector<16xi32>, %a: vector<16xi32>, %b: vector<16xi32>) -> vector<16xi32> {
  %ab = vector.bitcast %a : vector<16xi32> to vector<64xi8>
  %bb = vector.bitcast %b : vector<16xi32> to vector<64xi8>
  %r = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%acc, %ab, %bb) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
  return %r : vector<16xi32>
}

}
