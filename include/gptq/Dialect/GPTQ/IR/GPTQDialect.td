//===- GPTQDialect.td - GPTQ dialect definition ------------*- tablegen -*-===//

#ifndef GPTQ_DIALECT_GPTQ_IR_GPTQDIALECT_TD
#define GPTQ_DIALECT_GPTQ_IR_GPTQDIALECT_TD

include "mlir/IR/OpBase.td"

def GPTQ_Dialect : Dialect {
  let name = "gptq";
  let cppNamespace = "::mlir::gptq";
  // The result shapes the ops reify are tensor.dim and arith ops.
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
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

    ## The `gptq.model` module attribute

    The importers record a model's hyper-parameters on its module, under the
    names that llama2.c and Hugging Face Llama configurations give them:

    ```mlir
    module attributes {gptq.model = {dim = 64 : i64, hidden_dim = 172 : i64,
                                     n_heads = 8 : i64, n_kv_heads = 4 : i64,
                                     n_layers = 5 : i64, seq_len = 512 : i64,
                                     vocab_size = 512 : i64}} {
      func.func @forward(%tokens: tensor<?x?xi32>) -> tensor<?x?x512xf32> { ... }
    }
    ```

    The attribute is optional; where present, the dialect verifies it
    whenever the module is parsed or verified:

    - it is allowed only on a `builtin.module`;
    - it is a dictionary with the seven keys `dim`, `hidden_dim`,
      `n_heads`, `n_kv_heads`, `n_layers`, `seq_len` and `vocab_size`, and
      optionally `head_dim`, each a positive `i64` integer, and
      optionally `rotary`, the order of each head's q and k features that
      the rotary embedding turns in pairs: `"pairs"` (llama2.c's, the
      default: features `2i` and `2i + 1`) or `"halves"` (Hugging Face's:
      features `i` and `i + head size / 2`, as `import-hf` keeps a
      checkpoint's tensors in place). A missing key and any other key are
      errors, so that a misspelled key cannot silently drop a check that
      depends on it;
    - `n_heads` is a multiple of `n_kv_heads` (grouped-query attention),
      and the head size is even (rotary embeddings turn pairs of channels).
      The head size is `head_dim` when the key is there (Gemma 2 and Qwen 3
      give one that is not `dim / n_heads`), else `dim / n_heads`, and then
      `dim` must be a multiple of `n_heads`. These hold for every llama2.c
      checkpoint (its reader refuses others) and every Hugging Face model
      that `import-hf` reads.

    The drivers read it with `gptq-run --describe`: `seq_len` bounds the
    sequences and `vocab_size` the token ids they pass to `@forward`. Other
    attributes whose names start with `gptq.` belong to the passes that set
    them and are not checked here.
  }];
  let discardableAttrs = (ins "::mlir::DictionaryAttr":$model);
  let hasOperationAttrVerify = 1;
  let useDefaultAttributePrinterParser = 1;
}

class GPTQ_Op<string mnemonic, list<Trait> traits = []>
    : Op<GPTQ_Dialect, mnemonic, traits>;

#endif // GPTQ_DIALECT_GPTQ_IR_GPTQDIALECT_TD
