//===- GPTQDialect.td - GPTQ dialect definition ------------*- tablegen -*-===//

#ifndef GPTQ_DIALECT_GPTQ_IR_GPTQDIALECT_TD
#define GPTQ_DIALECT_GPTQ_IR_GPTQDIALECT_TD

include "mlir/IR/OpBase.td"

def GPTQ_Dialect : Dialect {
  let name = "gptq";
  let cppNamespace = "::mlir::gptq";
  let summary = "GPTQ post-training weight quantization as compiler operations";
  let description = [{
    The `gptq` dialect expresses the GPTQ algorithm (Frantar et al., 2022) as
    tensor operations: accumulating the Hessian of a linear layer's
    calibration inputs, the damped Cholesky factorization that yields the
    upper factor of the inverse Hessian, the act-order permutation, the
    blocked quantize-and-compensate loop, and what a checkpoint needs around
    them (group indices, dequantization, bit packing).

    `gptq.quantize_layer` does a whole layer in one op; the
    `gptq-decompose-quantize-layer` pass expands it into the finer ops, and
    `convert-gptq-to-linalg` lowers those to linalg, scf, tensor and arith.

    The numerics follow the public reference implementation (the paper's
    `gptq.py`/`quant.py`) in its default mode: asymmetric min-max grids per
    row or per (row, group), round half to even, dampening relative to the
    mean of the Hessian diagonal, lazy batch updates of 128 columns.
  }];
  let useDefaultAttributePrinterParser = 1;
}

class GPTQ_Op<string mnemonic, list<Trait> traits = []>
    : Op<GPTQ_Dialect, mnemonic, traits>;

#endif // GPTQ_DIALECT_GPTQ_IR_GPTQDIALECT_TD
