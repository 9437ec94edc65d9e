func.func @act_order_i32(%h: tensor<8x8xf32>) {
  %p = gptq.act_order %h : tensor<8x8xf32> -> tensor<8xi32>
  return
}
