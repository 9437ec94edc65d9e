func.func @damped_cholesky_percdamp_f64(%h: tensor<4x4xf32>, %p: f64) {
  %u, %ok = "gptq.damped_cholesky"(%h, %p) : (tensor<4x4xf32>, f64) -> (tensor<4x4xf32>, i1)
  return
}
