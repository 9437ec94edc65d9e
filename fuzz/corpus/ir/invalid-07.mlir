func.func @damped_cholesky_not_square(%h: tensor<4x5xf32>, %p: f32) {
  %u, %ok = gptq.damped_cholesky %h percdamp(%p) : tensor<4x5xf32>
  return
}
