// RUN: gptq-opt %s -split-input-file -verify-diagnostics

// The verifiers' size arithmetic (packed words per row, groups per row)
// holds for any static size, however large: no signed overflow (which
// UBSan reported in the fuzzer build), the exact count in the message.

func.func @pack_words_huge(%c: tensor<2x4611686018427387904xi8>) {
  // 2^62 codes of 4 bits are 2^57 words (the product 2^64 overflows).
  // expected-error @below {{'gptq.pack' op expected packed words per row to be 576460752303423488, found 1}}
  %p = gptq.pack %c bits 4 : tensor<2x4611686018427387904xi8> -> tensor<2x1xi32>
  return
}

// -----

// The largest static column count, 8 bits a code: 2^61 words.
func.func @pack_words_largest(%c: tensor<1x9223372036854775807xi8>) -> tensor<1x2305843009213693952xi32> {
  %p = gptq.pack %c bits 8 : tensor<1x9223372036854775807xi8> -> tensor<1x2305843009213693952xi32>
  return %p : tensor<1x2305843009213693952xi32>
}

// -----

// A group size beyond the column count is one group, however large.
func.func @groups_huge_group_size(%w: tensor<4x2xf32>, %h: tensor<2x2xf32>) -> tensor<4x1xf32> {
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<group_size = 9223372036854775807>} : tensor<4x2xf32>, tensor<2x2xf32> -> tensor<4x2xi8>, tensor<4x1xf32>, tensor<2xi32>
  return %s : tensor<4x1xf32>
}

// -----

func.func @groups_huge_columns(%w: tensor<4x9223372036854775807xf32>, %h: tensor<9223372036854775807x9223372036854775807xf32>) {
  // (2^63 - 1) columns in groups of 2: 2^62 groups.
  // expected-error @below {{'gptq.quantize_layer' op expected scales columns (one per group) to be 4611686018427387904, found 1}}
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<group_size = 2>} : tensor<4x9223372036854775807xf32>, tensor<9223372036854775807x9223372036854775807xf32> -> tensor<4x9223372036854775807xi8>, tensor<4x1xf32>, tensor<9223372036854775807xi32>
  return
}
