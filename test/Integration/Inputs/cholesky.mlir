// The upper factor of the damped inverse Hessian and the success flag.
func.func @factor(%h: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<i1>) {
  %p = arith.constant 0.01 : f32
  %u, %ok = gptq.damped_cholesky %h percdamp(%p) : tensor<?x?xf32>
  %okt = tensor.from_elements %ok : tensor<i1>
  return %u, %okt : tensor<?x?xf32>, tensor<i1>
}
