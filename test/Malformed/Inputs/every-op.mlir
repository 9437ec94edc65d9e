// A valid module with every gptq op: the seed of mutants.test.
func.func @every_op(%x: tensor<2x8x16xf32>, %h0: tensor<16x16xf32>, %n0: i64, %w: tensor<4x16xf32>, %p: f32) -> (tensor<4x16xf32>, tensor<4x16xi8>, f32, i1) {
  %h, %n = gptq.hessian_accumulate %x into %h0 count %n0 : tensor<2x8x16xf32>, tensor<16x16xf32>
  %wm = gptq.mask_dead_inputs %w, %h : tensor<4x16xf32>, tensor<16x16xf32>
  %perm = gptq.act_order %h : tensor<16x16xf32> -> tensor<16xi64>
  %wp = gptq.permute %wm by %perm dims [1] : tensor<4x16xf32>, tensor<16xi64>
  %hp = gptq.permute %h by %perm dims [0, 1] : tensor<16x16xf32>, tensor<16xi64>
  %u, %ok = gptq.damped_cholesky %hp percdamp(%p) : tensor<16x16xf32>
  %s0, %z0 = gptq.grid %wp {config = #gptq.config<group_size = 8>} : tensor<4x16xf32> -> tensor<4x2xf32>
  %c16 = arith.constant 16 : index
  %g = gptq.group_index %c16 perm(%perm : tensor<16xi64>) {config = #gptq.config<group_size = 8, act_order = true>} : tensor<16xi32>
  %gs = gptq.group_index %c16 {config = #gptq.config<group_size = 8>} : tensor<16xi32>
  %c, %s, %z, %l = gptq.quantize_blocks %wp, %u {config = #gptq.config<group_size = 8, block_size = 4>} : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xi8>, tensor<4x2xf32>
  %c2, %s2, %z2, %l2 = gptq.quantize_blocks %wp, %u grid(%s0, %z0, %gs : tensor<4x2xf32>, tensor<4x2xf32>, tensor<16xi32>) {config = #gptq.config<group_size = 8, static_groups = true>} : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xi8>, tensor<4x2xf32>
  %co = gptq.permute %c by %perm inverse dims [1] : tensor<4x16xi8>, tensor<16xi64>
  %d = gptq.dequantize %co, %s, %z, %g : tensor<4x16xi8>, tensor<4x2xf32>, tensor<16xi32> -> tensor<4x16xf32>
  %pk = gptq.pack %co bits 3 : tensor<4x16xi8> -> tensor<4x2xi32>
  %up = gptq.unpack %pk columns %c16 bits 3 : tensor<4x2xi32> -> tensor<4x16xi8>
  %qc, %qs, %qz, %qg, %ql, %qok = gptq.quantize_layer %w, %h percdamp(%p) {config = #gptq.config<bits = 3, group_size = 8, sym = true, act_order = true, mse = true>} : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xi8>, tensor<4x2xf32>, tensor<16xi32>
  return %d, %up, %ql, %qok : tensor<4x16xf32>, tensor<4x16xi8>, f32, i1
}
