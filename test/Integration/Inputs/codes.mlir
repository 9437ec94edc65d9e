// Pack/unpack round trips for every width, and dequantization.
func.func @pack2(%c: tensor<?x?xi8>) -> (tensor<?x?xi32>, tensor<?x?xi8>) {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %c, %c1 : tensor<?x?xi8>
  %p = gptq.pack %c bits 2 : tensor<?x?xi8> -> tensor<?x?xi32>
  %u = gptq.unpack %p columns %n bits 2 : tensor<?x?xi32> -> tensor<?x?xi8>
  return %p, %u : tensor<?x?xi32>, tensor<?x?xi8>
}
func.func @pack3(%c: tensor<?x?xi8>) -> (tensor<?x?xi32>, tensor<?x?xi8>) {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %c, %c1 : tensor<?x?xi8>
  %p = gptq.pack %c bits 3 : tensor<?x?xi8> -> tensor<?x?xi32>
  %u = gptq.unpack %p columns %n bits 3 : tensor<?x?xi32> -> tensor<?x?xi8>
  return %p, %u : tensor<?x?xi32>, tensor<?x?xi8>
}
func.func @pack4(%c: tensor<?x?xi8>) -> (tensor<?x?xi32>, tensor<?x?xi8>) {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %c, %c1 : tensor<?x?xi8>
  %p = gptq.pack %c bits 4 : tensor<?x?xi8> -> tensor<?x?xi32>
  %u = gptq.unpack %p columns %n bits 4 : tensor<?x?xi32> -> tensor<?x?xi8>
  return %p, %u : tensor<?x?xi32>, tensor<?x?xi8>
}
func.func @pack5(%c: tensor<?x?xi8>) -> (tensor<?x?xi32>, tensor<?x?xi8>) {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %c, %c1 : tensor<?x?xi8>
  %p = gptq.pack %c bits 5 : tensor<?x?xi8> -> tensor<?x?xi32>
  %u = gptq.unpack %p columns %n bits 5 : tensor<?x?xi32> -> tensor<?x?xi8>
  return %p, %u : tensor<?x?xi32>, tensor<?x?xi8>
}
func.func @pack6(%c: tensor<?x?xi8>) -> (tensor<?x?xi32>, tensor<?x?xi8>) {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %c, %c1 : tensor<?x?xi8>
  %p = gptq.pack %c bits 6 : tensor<?x?xi8> -> tensor<?x?xi32>
  %u = gptq.unpack %p columns %n bits 6 : tensor<?x?xi32> -> tensor<?x?xi8>
  return %p, %u : tensor<?x?xi32>, tensor<?x?xi8>
}
func.func @pack7(%c: tensor<?x?xi8>) -> (tensor<?x?xi32>, tensor<?x?xi8>) {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %c, %c1 : tensor<?x?xi8>
  %p = gptq.pack %c bits 7 : tensor<?x?xi8> -> tensor<?x?xi32>
  %u = gptq.unpack %p columns %n bits 7 : tensor<?x?xi32> -> tensor<?x?xi8>
  return %p, %u : tensor<?x?xi32>, tensor<?x?xi8>
}
func.func @pack8(%c: tensor<?x?xi8>) -> (tensor<?x?xi32>, tensor<?x?xi8>) {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %c, %c1 : tensor<?x?xi8>
  %p = gptq.pack %c bits 8 : tensor<?x?xi8> -> tensor<?x?xi32>
  %u = gptq.unpack %p columns %n bits 8 : tensor<?x?xi32> -> tensor<?x?xi8>
  return %p, %u : tensor<?x?xi32>, tensor<?x?xi8>
}
func.func @dequantize(%c: tensor<?x?xi8>, %s: tensor<?x?xf32>, %z: tensor<?x?xf32>, %g: tensor<?xi32>) -> tensor<?x?xf32> {
  %w = gptq.dequantize %c, %s, %z, %g : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32> -> tensor<?x?xf32>
  return %w : tensor<?x?xf32>
}
