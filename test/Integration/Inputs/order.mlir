// act-order of a Hessian, the permuted weights, and the permutation undone.
func.func @order(%h: tensor<?x?xf32>, %w: tensor<?x?xf32>) -> (tensor<?xi64>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %p = gptq.act_order %h : tensor<?x?xf32> -> tensor<?xi64>
  %wp = gptq.permute %w by %p dims [1] : tensor<?x?xf32>, tensor<?xi64>
  %back = gptq.permute %wp by %p inverse dims [1] : tensor<?x?xf32>, tensor<?xi64>
  return %p, %wp, %back : tensor<?xi64>, tensor<?x?xf32>, tensor<?x?xf32>
}
