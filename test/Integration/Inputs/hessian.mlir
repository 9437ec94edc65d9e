// Three batches accumulated from an empty Hessian; returns H and the count.
func.func @accumulate3(%b1: tensor<?x?x?xf32>, %b2: tensor<?x?x?xf32>, %b3: tensor<?x?xf32>) -> (tensor<?x?xf32>, tensor<i64>) {
  %c1 = arith.constant 1 : index
  %cols = tensor.dim %b3, %c1 : tensor<?x?xf32>
  %zero = arith.constant 0.0 : f32
  %n0 = arith.constant 0 : i64
  %e = tensor.empty(%cols, %cols) : tensor<?x?xf32>
  %h0 = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %h1, %n1 = gptq.hessian_accumulate %b1 into %h0 count %n0 : tensor<?x?x?xf32>, tensor<?x?xf32>
  %h2, %n2 = gptq.hessian_accumulate %b2 into %h1 count %n1 : tensor<?x?x?xf32>, tensor<?x?xf32>
  %h3, %n3 = gptq.hessian_accumulate %b3 into %h2 count %n2 : tensor<?x?xf32>, tensor<?x?xf32>
  %nt = tensor.from_elements %n3 : tensor<i64>
  return %h3, %nt : tensor<?x?xf32>, tensor<i64>
}
