//===- Passes.td - Model-level quantization passes ---------*- tablegen -*-===//

#ifndef GPTQ_QUANTIZE_PASSES_TD
#define GPTQ_QUANTIZE_PASSES_TD

include "mlir/Pass/PassBase.td"

def GPTQListLinears : Pass<"gptq-list-linears", "ModuleOp"> {
  let summary = "Report the linear layers of a model as remarks";
  let description = [{
    Finds every linear layer of the module and reports it as a remark at
    its contraction; a remark on the module gives the count, or says that
    there is none. The IR is not changed.

    A linear layer is a linalg contraction (an op for which linalg infers
    contraction dimensions: `linalg.matmul`, also with transposing indexing
    maps, `linalg.batch_matmul`, `linalg.matvec`, a multiply-accumulate
    `linalg.generic`) of an activation with a constant two-dimensional
    float weight, reduced along the weight's input dimension. The weight is
    an `arith.constant` (`dense` or `dense_resource`) or an
    `ml_program.global_load_const` of an immutable `ml_program.global`,
    reached through any chain of `tensor.cast`, `linalg.transpose`,
    `linalg.broadcast` and `linalg.generic` ops that only copy, broadcast or
    transpose it. A contraction of two activations (attention scores) is not
    a linear layer, nor is one with a non-constant weight.

    A layer's name is its weight's location name when the weight feeds only
    this layer, else the contraction's location name, else the global's
    symbol name, else `linear.<index>` (program order) followed by the
    contraction's location. Its block is the `<i>` of a `layers.<i>.` name
    component when any layer of the module has one (layers without it are
    in no block); otherwise it is the number of linear layers on the longest
    data-flow path to the layer's activation.

    Each remark gives the name, the out x in shape (the nn.Linear layout),
    the block, the op, the value that feeds the layer (numbered as
    `gptq-opt` prints the module) and the weight's source, marked
    `(stored in x out)` when the contraction reads it transposed and
    `(also used elsewhere)` when other ops read it too (a classifier tied
    to the embeddings).

    ```mlir
    func.func @f(%x: tensor<?x64xf32>, %acc: tensor<?x64xf32>) -> tensor<?x64xf32> {
      %w = arith.constant dense<1.0> : tensor<64x64xf32> loc("layers.0.wq")
      %y = linalg.matmul indexing_maps = [
             affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
             affine_map<(m, n, k) -> (m, n)>]
           ins(%x, %w : tensor<?x64xf32>, tensor<64x64xf32>)
           outs(%acc : tensor<?x64xf32>) -> tensor<?x64xf32>
      return %y : tensor<?x64xf32>
    }
    ```

    gives the remarks

    ```
    f.mlir:3:10: remark: linear layer 'layers.0.wq': 64 x 64, block 0, op linalg.matmul, input %arg0, weight arith.constant
    f.mlir:0:0: remark: 1 linear layer in 1 block
    ```
  }];
}

def GPTQInstrumentHessians : Pass<"gptq-instrument-hessians", "ModuleOp"> {
  let summary = "Make the entry function also return its linear layers' Hessians";
  let description = [{
    Finds the linear layers of the entry function (as `gptq-list-linears`
    does, in the same order and with the same names) and makes the function
    also return, for each of them, the Hessian `H = 2/n * sum x x^T` of the
    inputs that reach the layer in this call, followed by `n`, the number of
    samples, once.

    For each layer, a zero `tensor<in x in x f32>` and a
    `gptq.hessian_accumulate` of the layer's input with count 0 are inserted
    before the contraction. The input is accumulated as it is when it is
    `[samples, tokens, in]` (the importer's `[batch, seq, dim]`) or
    `[tokens, in]` (one sample); a vector `[in]` is one sample of one token;
    with more dimensions, all but the last two are samples. The results
    come after the function's own: one Hessian per layer in the analysis'
    order, then the sample count of the first layer's input as
    `tensor<i64>`. The function gets the attribute
    `gptq.hessians = ["name", ...]`, the layer names in the order of the
    Hessian results, so that callers can map results to layers. With
    `include=REGEX` only the layers whose name matches are instrumented,
    and with `exclude=REGEX` those whose name matches are left out (a match
    anywhere in the name; anchor with `^` and `$`). Adding the
    Hessians of several calls (weighted by their counts, as
    `gptq.hessian_accumulate` does) gives the Hessian of all the samples.

    The pass fails with an error when the entry function is missing, is a
    declaration, has more than one block, is called from the module (its
    callers would no longer match its results), is already instrumented,
    or has no linear layer (or none that `include` and `exclude` select),
    when a pattern is not a valid regular expression; when a layer's input is not `f32`, is not
    read with the reduction dimension last, or is inside a nested region;
    and when two layers' inputs count different samples (`[tokens, in]`
    and `[samples, tokens, in]`, or different static sample counts).
    Layers in other functions are not instrumented.

    ```mlir
    func.func @forward(%x: tensor<2x8x64xf32>) -> tensor<2x8x32xf32>
    ```

    becomes

    ```mlir
    func.func @forward(%x: tensor<2x8x64xf32>)
        -> (tensor<2x8x32xf32>, tensor<64x64xf32>, tensor<i64>)
        attributes {gptq.hessians = ["layers.0.wq"]}
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"",
           "The function to instrument">,
    Option<"include", "include", "std::string", /*default=*/"\"\"",
           "Instrument only the layers whose name matches this regular "
           "expression (anywhere in the name; anchor it with ^ and $)">,
    Option<"exclude", "exclude", "std::string", /*default=*/"\"\"",
           "Leave out the layers whose name matches this regular "
           "expression">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gptq::GPTQDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // GPTQ_QUANTIZE_PASSES_TD
