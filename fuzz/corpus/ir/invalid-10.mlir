func.func @damped_cholesky_ok_i8(%h: tensor<4x4xf32>, %p: f32) {
  %u, %ok = "gptq.damped_cholesky"(%h, %p) : (tensor<4x4xf32>, f32) -> (tensor<4x4xf32>, i8)
  return
}
