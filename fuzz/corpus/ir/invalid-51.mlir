func.func @group_index_constant_columns() {
  %c = arith.constant 64 : index
  %g = gptq.group_index %c {config = #gptq.config<group_size = 8>} : tensor<32xi32>
  return
}
