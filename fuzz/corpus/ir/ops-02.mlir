func.func @damped_cholesky(%h: tensor<64x64xf32>, %d: tensor<?x?xf32>, %p: f32) -> (tensor<64x64xf32>, i1, tensor<?x?xf32>, i1) {
  %u, %ok = gptq.damped_cholesky %h percdamp(%p) : tensor<64x64xf32>
  %ud, %okd = gptq.damped_cholesky %d percdamp(%p) : tensor<?x?xf32>
  return %u, %ok, %ud, %okd : tensor<64x64xf32>, i1, tensor<?x?xf32>, i1
}
