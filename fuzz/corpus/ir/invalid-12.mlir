func.func @act_order_length(%h: tensor<8x8xf32>) {
  %p = gptq.act_order %h : tensor<8x8xf32> -> tensor<9xi64>
  return
}
