// RUN: gptq-opt %s -split-input-file -verify-diagnostics

// Every message of the #gptq.config parser and of ConfigAttr::verify.

// expected-error @below {{expected bits in [2, 8], found 1}}
func.func @bits_low() attributes {c = #gptq.config<bits = 1>} { return }

// -----

// expected-error @below {{expected bits in [2, 8], found 9}}
func.func @bits_high() attributes {c = #gptq.config<bits = 9>} { return }

// -----

// expected-error @below {{expected group_size -1 or >= 1, found 0}}
func.func @group_size_zero() attributes {c = #gptq.config<group_size = 0>} { return }

// -----

// expected-error @below {{expected group_size -1 or >= 1, found -2}}
func.func @group_size_negative() attributes {c = #gptq.config<group_size = -2>} { return }

// -----

// expected-error @below {{expected a group_size >= 1 with static_groups}}
func.func @static_groups_per_row() attributes {c = #gptq.config<static_groups = true>} { return }

// -----

// expected-error @below {{expected percdamp in (0, 1), found 0.000000e+00}}
func.func @percdamp_zero() attributes {c = #gptq.config<percdamp = 0.0>} { return }

// -----

// expected-error @below {{expected percdamp in (0, 1), found 1.000000e+00}}
func.func @percdamp_one() attributes {c = #gptq.config<percdamp = 1.0>} { return }

// -----

// expected-error @below {{expected percdamp in (0, 1), found -5.000000e-01}}
func.func @percdamp_negative() attributes {c = #gptq.config<percdamp = -0.5>} { return }

// -----

// A NaN bit pattern is not in (0, 1) either.
// expected-error @below {{expected percdamp in (0, 1), found nan}}
func.func @percdamp_nan() attributes {c = #gptq.config<percdamp = 0x7FF8000000000000>} { return }

// -----

// The damping is computed in float32, where 1e-300 is 0.
// expected-error @below {{expected percdamp in [1.175494e-38, 1) as a float32, the type the damping is computed in; found 1.000000e-300, which is 0.000000e+00 in float32}}
func.func @percdamp_zero_in_f32() attributes {c = #gptq.config<percdamp = 1.0e-300>} { return }

// -----

// A subnormal float32 is refused too.
// expected-error @below {{expected percdamp in [1.175494e-38, 1) as a float32, the type the damping is computed in; found 1.000000e-40, which is 9.999946e-41 in float32}}
func.func @percdamp_subnormal_in_f32() attributes {c = #gptq.config<percdamp = 1.0e-40>} { return }

// -----

// Just below 1 in float64, 1 in float32.
// expected-error @below {{expected percdamp in [1.175494e-38, 1) as a float32, the type the damping is computed in; found a value that rounds to 1 in float32}}
func.func @percdamp_one_in_f32() attributes {c = #gptq.config<percdamp = 0.99999999999>} { return }

// -----

// expected-error @below {{expected block_size >= 1, found 0}}
func.func @block_size_zero() attributes {c = #gptq.config<block_size = 0>} { return }

// -----

// expected-error @below {{expected a finite mse_norm > 0, found 0.000000e+00}}
func.func @mse_norm_zero() attributes {c = #gptq.config<mse_norm = 0.0>} { return }

// -----

// expected-error @below {{expected a finite mse_norm > 0, found -2.400000e+00}}
func.func @mse_norm_negative() attributes {c = #gptq.config<mse_norm = -2.4>} { return }

// -----

// expected-error @below {{expected mse_grid >= 1, found 0}}
func.func @mse_grid_zero() attributes {c = #gptq.config<mse_grid = 0>} { return }

// -----

// expected-error @below {{expected mse_max_shrink in (0, 1], found 0.000000e+00}}
func.func @mse_max_shrink_zero() attributes {c = #gptq.config<mse_max_shrink = 0.0>} { return }

// -----

// expected-error @below {{expected mse_max_shrink in (0, 1], found 1.500000e+00}}
func.func @mse_max_shrink_high() attributes {c = #gptq.config<mse_max_shrink = 1.5>} { return }

// -----

// expected-error @below {{unknown key 'bitz' (expected one of bits, group_size, sym, act_order, static_groups, percdamp, block_size, mse, mse_norm, mse_grid, mse_max_shrink)}}
func.func @unknown_key() attributes {c = #gptq.config<bitz = 4>} { return }

// -----

// expected-error @below {{duplicate key 'bits'}}
func.func @duplicate_key() attributes {c = #gptq.config<bits = 4, bits = 5>} { return }

// -----

// A duplicate is an error even when both values agree.
// expected-error @below {{duplicate key 'sym'}}
func.func @duplicate_same_value() attributes {c = #gptq.config<sym = true, act_order = true, sym = true>} { return }

// -----

// expected-error @below {{expected 'true' or 'false', found 'yes'}}
func.func @bad_bool() attributes {c = #gptq.config<sym = yes>} { return }

// -----

// expected-error @below {{expected 'true' or 'false', found 'True'}}
func.func @bad_bool_case() attributes {c = #gptq.config<act_order = True>} { return }

// -----

// expected-error @below {{expected valid keyword}}
func.func @bool_as_integer() attributes {c = #gptq.config<mse = 1>} { return }

// -----

// expected-error @below {{expected integer value}}
func.func @fractional_bits() attributes {c = #gptq.config<bits = 4.5>} { return }

// -----

// expected-error @below {{expected '='}}
func.func @missing_equal() attributes {c = #gptq.config<bits 4>} { return }

// -----

// expected-error @below {{expected valid keyword}}
func.func @trailing_comma() attributes {c = #gptq.config<bits = 4,>} { return }

// -----

// expected-error @below {{expected '>'}}
func.func @missing_greater() attributes {c = #gptq.config<bits = 4 group_size = 8>} { return }

// -----

// expected-error @below {{expected '<'}}
func.func @missing_less() attributes {c = #gptq.config} { return }

// -----

// expected-error @below {{integer value too large}}
func.func @bits_overflow() attributes {c = #gptq.config<bits = 99999999999999999999>} { return }

// -----

// expected-error @below {{expected a finite mse_norm > 0, found INF}}
func.func @mse_norm_inf() attributes {c = #gptq.config<mse_norm = 0x7FF0000000000000>} { return }

// -----

// The MSE search computes in float32: parameters that vanish or overflow
// there are refused.
// expected-error @below {{expected an mse_norm that is a normal float32 (in [1.175494e-38, 3.402823e+38]), the type the search computes in; found 1.000000e-300}}
func.func @mse_norm_underflow() attributes {c = #gptq.config<mse_norm = 1.0e-300>} { return }

// -----

// expected-error @below {{expected an mse_norm that is a normal float32 (in [1.175494e-38, 3.402823e+38]), the type the search computes in; found 1.000000e+39}}
func.func @mse_norm_overflow() attributes {c = #gptq.config<mse_norm = 1.0e39>} { return }

// -----

// expected-error @below {{expected an mse_max_shrink that is a normal float32 (at least 1.175494e-38), the type the search computes in; found 1.000000e-300}}
func.func @mse_max_shrink_underflow() attributes {c = #gptq.config<mse_max_shrink = 1.0e-300>} { return }
