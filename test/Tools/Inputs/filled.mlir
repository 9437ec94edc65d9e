// A buffer of %n float32 ones: its size is the caller's to choose.
func.func @filled(%n: i64) -> tensor<?xf32> {
  %i = arith.index_cast %n : i64 to index
  %one = arith.constant 1.0 : f32
  %e = tensor.empty(%i) : tensor<?xf32>
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  return %f : tensor<?xf32>
}
