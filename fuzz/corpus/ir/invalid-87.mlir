func.func @damped_cholesky_factor_type(%h: tensor<4x4xf32>, %p: f32) {
  %u, %ok = "gptq.damped_cholesky"(%h, %p) : (tensor<4x4xf32>, f32) -> (tensor<?x4xf32>, i1)
  return
}
