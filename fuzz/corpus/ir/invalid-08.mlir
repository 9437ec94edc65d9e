func.func @damped_cholesky_f64(%h: tensor<4x4xf64>, %p: f32) {
  %u, %ok = gptq.damped_cholesky %h percdamp(%p) : tensor<4x4xf64>
  return
}
