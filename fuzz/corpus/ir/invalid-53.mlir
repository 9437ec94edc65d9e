func.func @group_index_i64(%n: index) {
  %g = gptq.group_index %n {config = #gptq.config<>} : tensor<?xi64>
  return
}
