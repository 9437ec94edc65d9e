func.func @act_order_not_square(%h: tensor<8x?xf32>) {
  %p = gptq.act_order %h : tensor<8x?xf32> -> tensor<8xi64>
  %h2 = tensor.empty() : tensor<8x7xf32>
  %p2 = gptq.act_order %h2 : tensor<8x7xf32> -> tensor<8xi64>
  return
}
