func.func @group_index_negative_columns() {
  %c = arith.constant -5 : index
  %g = gptq.group_index %c {config = #gptq.config<group_size = 8>} : tensor<?xi32>
  return
}
