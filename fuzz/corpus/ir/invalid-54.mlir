func.func @group_index_columns_i64(%n: i64) {
  %g = "gptq.group_index"(%n) <{config = #gptq.config<>}> : (i64) -> tensor<?xi32>
  return
}
