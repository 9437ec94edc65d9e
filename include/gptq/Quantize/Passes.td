//===- Passes.td - Model-level quantization passes ---------*- tablegen -*-===//

#ifndef GPTQ_QUANTIZE_PASSES_TD
#define GPTQ_QUANTIZE_PASSES_TD

include "mlir/Pass/PassBase.td"

def GPTQListLinears : Pass<"gptq-list-linears", "ModuleOp"> {
  let summary = "Report the linear layers of a model as remarks";
  let description = [{
    Finds every linear layer of the module and reports it as a remark at
    its contraction; a remark on the module gives the count, or says that
    there is none. A module whose layers lie in several functions (an
    imported model's `forward`, `prefill` and `decode`) gets each
    function's layers and count in turn, the count at the function. The IR
    is not changed.

    A linear layer is a linalg contraction (an op for which linalg infers
    contraction dimensions: `linalg.matmul`, also with transposing indexing
    maps, `linalg.batch_matmul`, `linalg.matvec`, a multiply-accumulate
    `linalg.generic`) of an activation with a constant two-dimensional
    float weight, reduced along the weight's input dimension. The weight is
    an `arith.constant` (`dense` or `dense_resource`) or an
    `ml_program.global_load_const` (or `ml_program.global_load`) of an
    immutable `ml_program.global`,
    reached through any chain of `tensor.cast`, `linalg.transpose`,
    `linalg.broadcast` and `linalg.generic` ops that only copy, broadcast or
    transpose it. A contraction of two activations (attention scores) is not
    a linear layer, nor is one with a non-constant weight.

    A layer's name is its weight's location name when the weight feeds only
    this layer, else the contraction's location name, else the global's
    symbol name, else `linear.<index>` (program order) followed by the
    contraction's location; a name repeated within a function gets a
    `#<n>` suffix (functions name the weights they share alike). An ONNX
    node path, as torch-mlir's ONNX importer names each op
    (`/layers.0/attention/wq/MatMul`), gives its scope
    (`layers.0.attention.wq`); names a frontend generates (`onnx::MatMul_301`
    initializers, JAX's `jit(...)` scopes) are passed over. Its block is the `<i>` of a `layers.<i>.` name
    component when any layer of the module has one (layers without it are
    in no block); otherwise it is the number of linear layers on the longest
    data-flow path to the layer's activation.

    Each remark gives the name, the out x in shape (the nn.Linear layout),
    the block, the op, the value that feeds the layer (numbered as
    `gptq-opt` prints the module) and the weight's source, marked
    `(stored in x out)` when the contraction reads it transposed,
    `(also used elsewhere)` when other ops read it too (a classifier tied
    to the embeddings) and `(output classifier)` for the layer the model
    passes leave float by default: one in no block when blocks come from
    names; otherwise a layer after others whose result the function returns
    as it is, or through ops that combine it with no other value (a
    reshape, a bias, a soft cap; a residual sum does combine). In a mixture
    of experts, `(router)` marks a layer whose result is read element by
    element only (to choose each token's experts; also float by default),
    and `(expert)` a layer whose input is computed row by row from rows
    `[offset, offset + count)` of a matrix that other such slices read too
    (the tokens a dispatch sorted to one expert).

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
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The function to instrument (default: @forward, else the only "
           "public function with a body)">,
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

def GPTQOutlineCalibrationStages
    : Pass<"gptq-outline-calibration-stages", "ModuleOp"> {
  let summary = "Outline the calibration stages that gptq-quantize-model runs";
  let description = [{
    Cuts the entry function into the calibration stages of
    `gptq-quantize-model` and appends each stage's two functions to the
    module as nested modules: `stage_<k>_hessians`, whose `@stage` takes
    the stage's inputs, weights, running Hessians and sample count and
    returns the Hessians (`gptq.hessian_accumulate`), the count and what
    its layers read; and `stage_<k>_outputs`, whose `@stage` takes the
    stage's inputs and weights (the quantized ones, when the driver calls
    it) and what the first kept, and returns what later stages read (a
    stage that nothing later reads has none). They are the functions that
    `gptq-quantize-model` compiles and runs, and that its `dump-stages=`
    writes, named alike; the entry function is left as it is, except that
    a selected layer whose weight other ops also read gets a copy of its
    own. No code is compiled or run, and no calibration data is read.

    The layers are those `gptq-quantize-model` selects (`include=`,
    `exclude=`, `classifier=`); `sequential=` groups them as it does
    (`layers`, `blocks`, `none`). Layers that calibration cannot reach (a
    contraction in a nested region, an input that is not f32) belong to no
    stage. The pass fails with an error when the entry function is missing
    or is a declaration, when no layer is selected or none can be
    calibrated, when a pattern is not a valid regular expression, and when
    the entry cannot be cut so (a layer that comes before the layers of
    the group before it; a value other than a tensor or a pure computation
    that flows between stages).

    ```
    gptq-opt model.mlir --gptq-outline-calibration-stages="sequential=layers"
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The function to cut (default: @forward, else the only public "
           "function with a body)">,
    Option<"include", "include", "std::string", /*default=*/"\"\"",
           "Only the layers whose name matches this regular expression "
           "(anywhere in the name; anchor it with ^ and $)">,
    Option<"exclude", "exclude", "std::string", /*default=*/"\"\"",
           "Leave out the layers whose name matches this regular "
           "expression">,
    Option<"routers", "routers", "bool", /*default=*/"false",
           "Also the routers of mixtures of experts (layers whose result is "
           "read element by element only, to choose each token's experts; "
           "float by default, as the reference tools leave them)">,
    Option<"classifier", "classifier", "bool", /*default=*/"false",
           "Also the output classifier (layers outside the layers.<i>. "
           "blocks, or without such names the last layer whose result the "
           "function returns; and layers whose weight other ops read)">,
    Option<"sequential", "sequential", "std::string",
           /*default=*/"\"layers\"",
           "How layers are grouped into stages: layers (default), blocks "
           "or none, as gptq-quantize-model groups them">,

    Option<"moeCalibration", "moe-calibration", "std::string",
           /*default=*/"\"routed\"",
           "How the experts of a mixture of experts are calibrated, as "
           "gptq-quantize-model does: routed (default) or all">,

    Option<"hessianMemory", "hessian-memory", "std::string",
           /*default=*/"\"1G\"",
           "The most Hessian bytes one stage accumulates with "
           "sequential=layers, as gptq-quantize-model cuts its stages "
           "(default 1G; 0 for no limit)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gptq::GPTQDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // GPTQ_QUANTIZE_PASSES_TD
