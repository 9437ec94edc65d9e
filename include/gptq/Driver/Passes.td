//===- Passes.td - Passes that run compiled code ------------*- tablegen -*-===//
//
// The passes that compile and run code while they transform a module (the
// JIT): calibration and quantization of a whole model, and attaching the
// weights of parameter archives.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_DRIVER_PASSES_TD
#define GPTQ_DRIVER_PASSES_TD

include "mlir/Pass/PassBase.td"

def GPTQQuantizeModel : Pass<"gptq-quantize-model", "ModuleOp"> {
  let summary = "GPTQ of every linear layer of a model, calibrated in the compiler";
  let description = [{
    Quantizes the linear layers of the entry function (`entry`; by
    default `forward`, or the module's only public function with a body,
    as torch-mlir's `@torch_jit` or JAX's `@main`; the layers of
    `gptq-list-linears`) and rewrites each weight
    to packed integer codes that `gptq.unpack` and `gptq.dequantize` turn
    back into the float weight the contraction reads.

    ```
    gptq-opt model.mlir --gptq-quantize-model="calibration=calib.npy bits=4 group-size=128 act-order=true" -o model.q.mlir
    ```

    **Calibration.** `calibration=FILE.npy` holds the entry's argument for
    every calibration sample along its first dimension (for an imported
    llama2.c model, `[windows, tokens]` int32 token ids, as
    `python -m gptq_mlir calib` writes them). The pass runs the model on
    them with the project's JIT, `calibration-batch` samples at a time, and
    accumulates each layer's Hessian with `gptq.hessian_accumulate`. It
    cuts the entry function into stages, one per group of layers that are
    calibrated together (a stage ends before the next group's first
    layer, so what crosses to the next stage is what its layers read),
    compiles each stage once (its weights and other
    large constants are arguments, so stages of the same shape share their
    code), and keeps the values that flow from one stage to the next for
    every sample: in memory up to `activation-memory` (bytes with K, M, G
    or T, or a percentage of physical memory; default 25%), beyond it in a
    scratch file in `$TMPDIR` (unlinked when made), read back one batch at
    a time; the output is the same wherever they were kept. A layer's
    weight is read as
    float32 only while its stage runs and its layers are quantized (a bf16
    or f16 weight widened by an `arith.extf`, as `import-hf` reads a
    checkpoint's tensors in place, is widened then), and released once the
    layer is quantized, with the pages of the parameter archive it was read
    from. The quantized layers (packed codes, scales, zeros, g_idx) go to a
    scratch file as they are made (in `$TMPDIR`, unlinked as soon as it is
    made, so nothing is left behind however the run ends; a full disk
    there is an error naming the layer), and the rewritten module's
    constants read it back through a mapping. So neither the float weights
    nor the quantized ones held in memory grow with the model's depth.

    `sequential` chooses the groups, as the reference's Llama driver does:

    | value | groups | each group is calibrated on |
    | --- | --- | --- |
    | `layers` (default) | layers at the same data-flow depth: in a Llama block q, k and v; o; w1 and w3; w2 | the outputs of all earlier groups, already quantized |
    | `blocks` | the layers of one `layers.<i>.` block | the outputs of all earlier blocks, already quantized |
    | `none` | all layers | the float model |

    Each stage becomes two functions. The first runs on every batch to
    accumulate its layers' Hessians (one accumulation for layers that read
    the same input, such as q, k and v) and keeps what the layers read; the
    second runs, once the layers are quantized, only the layers and what
    follows them on what was kept, to compute what the next stages read.
    Each op thus runs once per sample. Values are freed after their last
    reader has run. `dump-stages=FILE.mlir` writes the functions.
    `hessians=FILE.npz` takes the Hessians from a file instead
    (one `in x in` float32 array per layer, keyed by layer name, as
    `dump-hessians=FILE.npz` writes them) and runs nothing.

    **Quantization.** Every layer goes through `gptq.quantize_layer` with
    the configuration given by `bits`, `group-size`, `sym`, `act-order`,
    `static-groups`, `percdamp`, `block-size` and `mse` (the keys of
    `#gptq.config`). When a Hessian is not positive definite the
    dampening grows by `damp-step`, at most `max-attempts` times, as in
    `gptq-quantize-layer`. `method=rtn` rounds every weight to its nearest
    grid point instead (no calibration). Layers that calibration cannot
    reach (a contraction in a nested region, an input that is not f32) are
    rounded to nearest with a warning. `include=REGEX` and `exclude=REGEX`
    select layers by name. As in the reference, which quantizes only the
    layers of the transformer blocks, the output classifier stays float
    unless `classifier=true`: a layer outside the `layers.<i>.` blocks when
    the model's layers are named that way; in a module without such names
    (torch-mlir's or JAX's), a layer after other layers whose result the
    function returns, directly or through ops that combine it with no other
    value (an MLP's last layer too); or a layer whose weight other ops also
    read (a classifier tied to the token embeddings, whose embedding lookup
    then keeps the float table). `gptq-list-linears` marks it
    `(output classifier)`.

    **Mixtures of experts.** A mixture of experts whose dispatch sorts the
    (token, choice) pairs by expert and gives each expert a slice of the
    rows (`tensor.extract_slice` of dynamic offset and size, as `import-hf`
    writes Mixtral's block) calibrates each expert on exactly the tokens
    its router sends it: its Hessian is that of its rows, and its token
    count (the rows of its calibration inputs, all samples together) is in
    its progress line and the report's `tokens` (the report marks it
    `expert`, `gptq-list-linears` `(expert)`, and a summary line gives the
    fewest, median and most tokens of the experts). A layer that fewer than
    `min-tokens` tokens reached (default 1: an expert that the router never
    chose, whose Hessian of zeros would zero its weights) is rounded to
    nearest with a warning, method `rtn (too few tokens)`.
    The experts of a block are of one data-flow depth, so
    `sequential=layers` calibrates them together; `hessian-memory` (default
    1G) caps the Hessians one stage holds, cutting such a group into
    stages in program order with the same Hessians (layers of one depth
    do not read one another).
    `moe-calibration=all` calibrates every expert on all the rows of the
    dispatch instead (every token, once per expert it chose; one Hessian
    for all experts' first layers), as llm-compressor can: the stages
    compute each expert's layers over all rows and slice its routed rows
    back out for the block's output, so that what later layers see is the
    routed model's. The router stays float unless `routers=true`.

    **Rewrite.** Each quantized weight becomes `dense_resource` constants
    named after the layer: `<name>.qweight` (the codes of each output row
    packed into 32-bit words, `gptq.pack`'s layout), `<name>.scales` and
    `<name>.zeros` (float32, out x groups) and `<name>.g_idx` (int32, the
    group of each input column), with `gptq.unpack` and `gptq.dequantize`
    (and a `linalg.transpose` for weights stored in x out) in front of the
    original contraction. `format=float` writes the dequantized weights as
    float constants instead, and `format=quant` the upstream quant form of
    `gptq-to-quant-types` (no gptq op).

    **Weights as arguments.** A function that takes its weights as
    arguments (`jax.jit(apply).lower(params, x)`) is quantized with
    `parameters=FILE` (.safetensors or .npz): each tensor of the archive
    binds the argument whose location name is its name (JAX prints them,
    `loc("params['dense']['kernel']")`, with `as_text(debug_info=True)`), or
    `arg<i>` the argument at place i; every tensor must bind one, of its
    dtype and static shape. The pass reads the bound arguments as constants
    of the archive's values (in place), so calibration takes the one
    argument left; after the rewrite they are put back in their places,
    unread: the function keeps its signature, and the quantized weights
    (and the other bound values, biases or norms) are constants of the
    module.

    **Report.** A line per layer on stderr (name, out x in, the GPTQ error,
    the round-to-nearest error, the dampening used, seconds), a summary of
    layers that needed more dampening or fell back to round-to-nearest, and
    with `report=FILE.json` the same as JSON. The errors are
    `tr((W - Q) H (W - Q)^T) / 2`, the squared output error per calibration
    sample, for the GPTQ weights and for round-to-nearest weights of the
    same grid configuration. The summary line and the report's
    `peak_rss_bytes` give the process's peak resident memory.

    **Memory.** Before calibrating, the pass prints the memory it will
    hold at most, in the stage that holds the most: what is resident then
    (code, the module, the calibration data) plus the quantizer's code,
    the stage's constants other than layer weights (an embedding table),
    its layers' dequantized weights plus one layer's stored and float32
    weight, their Hessians (`in x in` float32 each), the largest layer's
    quantizer workspace (`in x in + out x in` float32 and the codes), the
    activations that cross into and out of the stage for all samples (at
    most `activation-memory`; their sizes followed from the samples', an
    expert's rows as an even share of its dispatch's), and one call's intermediate tensors (from a
    liveness walk over the stage's functions, dynamic sizes taken from the
    calibration batch and window; with a spilled batch read back). The
    report's `memory` object gives the parts, the budget, the most
    activations held and the bytes spilled.

    Errors stop the pass with a diagnostic naming the layer or file: no
    linear layer, calibration data whose dtype or shape does not fit the
    entry's argument (or that the model's own checks reject, such as token
    ids out of range: out of `[0, vocab)`, or of the `vocab_size` of the
    module's `gptq.model`), non-finite calibration activations, a Hessian that
    stays singular after escalation. Nothing is written then.

    **Files.** `report=`, `dump-hessians=` and `dump-stages=` must not name
    an input of the run (the module, its parameter archive,
    `calibration=`, `hessians=`) nor one another, compared as files through
    links and other spellings; in `gptq-opt` they are also checked against
    `-o`, and written with it after the last pass, or not at all.

    **What else it writes.** The pass compiles its calibration stages and
    quantizers with the project's JIT and caches the compiled code, one
    file per function, in `compile-cache=` (default `$GPTQ_MLIR_CACHE_DIR`,
    else `~/.cache/gptq-mlir`); `compile-cache=off` compiles afresh and
    writes nothing there. A cache that cannot be written is a warning on
    stderr, once per process, and the run goes on without it. Calibration
    activations beyond `activation-memory` wait in an unlinked temporary
    file (`$TMPDIR`, else `/tmp`). The report lines above go to stderr.

    From C++, `createQuantizeModelPass` (`gptq/Driver/QuantizeModel.h`)
    takes the calibration samples in memory instead of a file, fills the
    report as a struct, and writes the progress lines to a stream of the
    caller's (docs/pipelines.md).
  }];
  let options = [
    Option<"calibration", "calibration", "std::string", /*default=*/"\"\"",
           "Calibration samples: a .npy with the entry's argument for every "
           "sample along dimension 0">,
    Option<"bits", "bits", "int64_t", /*default=*/"4",
           "Bits per weight code, 2..8 (default 4)">,
    Option<"groupSize", "group-size", "int64_t", /*default=*/"-1",
           "Input columns per grid; -1 (default) for one grid per output row">,
    Option<"sym", "sym", "bool", /*default=*/"false",
           "Symmetric grids">,
    Option<"actOrder", "act-order", "bool", /*default=*/"false",
           "Quantize columns by descending Hessian diagonal">,
    Option<"staticGroups", "static-groups", "bool", /*default=*/"false",
           "Compute every group's grid before quantizing">,
    Option<"percdamp", "percdamp", "double", /*default=*/"0.01",
           "Dampening, a fraction of the mean Hessian diagonal (default 0.01)">,
    Option<"blockSize", "block-size", "int64_t", /*default=*/"128",
           "Columns per lazy batch update (default 128)">,
    Option<"mse", "mse", "bool", /*default=*/"false",
           "Search shrunken grids for the least error">,
    Option<"method", "method", "std::string", /*default=*/"\"gptq\"",
           "gptq (default), or rtn (round to nearest, no calibration)">,
    Option<"sequential", "sequential", "std::string",
           /*default=*/"\"layers\"",
           "layers (default: true-sequential groups), blocks, or none (all "
           "Hessians from the float model)">,
    Option<"include", "include", "std::string", /*default=*/"\"\"",
           "Quantize only the layers whose name matches this regular "
           "expression">,
    Option<"exclude", "exclude", "std::string", /*default=*/"\"\"",
           "Leave the layers whose name matches this regular expression "
           "float">,
    Option<"hessians", "hessians", "std::string", /*default=*/"\"\"",
           "Read the Hessians from this .npz (keyed by layer name) instead of "
           "calibrating">,
    Option<"dumpHessians", "dump-hessians", "std::string",
           /*default=*/"\"\"",
           "Write the Hessians used to this .npz (keyed by layer name)">,
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "Write the per-layer report to this JSON file">,
    Option<"dumpStages", "dump-stages", "std::string", /*default=*/"\"\"",
           "Write the calibration functions (two per stage) to this MLIR "
           "file">,
    Option<"entry", "entry", "std::string", /*default=*/"\"\"",
           "The function whose layers are quantized and that calibration "
           "runs (default: @forward, else the only public function with a "
           "body, as torch-mlir's @torch_jit or JAX's @main)">,
    Option<"calibrationBatch", "calibration-batch", "int64_t",
           /*default=*/"16", "Calibration samples per call of a stage (default 16)">,
    Option<"parameters", "parameters", "std::string", /*default=*/"\"\"",
           "A .safetensors or .npz archive of the values of the entry's "
           "weight arguments (a model lowered as jax.jit(apply).lower(params, "
           "x)): each tensor binds the argument of its location name, or "
           "arg<i> for the argument at place i; those arguments stay in the "
           "signature, unread, and their quantized (or float) values become "
           "constants of the module">,
    Option<"vocab", "vocab", "int64_t", /*default=*/"0",
           "Token ids of integer calibration samples lie in [0, vocab) "
           "(default: the module's gptq.model vocab_size, as our importers "
           "write it; a module from another frontend has none)">,
    Option<"activationMemory", "activation-memory", "std::string",
           /*default=*/"\"25%\"",
           "Calibration activations kept in memory at most: bytes (with K, M, "
           "G or T) or a percentage of physical memory (default 25%); the "
           "rest wait in a temporary file">,
    Option<"layerErrors", "layer-errors", "bool", /*default=*/"true",
           "Compute each layer's output error tr((W-Q)H(W-Q)^T)/2 and that of "
           "round to nearest on the same grids, for the progress lines and "
           "the report (two products of out x in by in x in on the matrix "
           "kernel per layer); false skips both">,
    Option<"routers", "routers", "bool", /*default=*/"false",
           "Also the routers of mixtures of experts (layers whose result is "
           "read element by element only, to choose each token's experts; "
           "float by default, as the reference tools leave them)">,
    Option<"moeCalibration", "moe-calibration", "std::string",
           /*default=*/"\"routed\"",
           "What calibrates each expert of a mixture of experts: routed "
           "(default: the tokens its router sends it) or all (every token of "
           "the block, as llm-compressor can; the outputs stay routed)">,
    Option<"hessianMemory", "hessian-memory", "std::string",
           /*default=*/"\"1G\"",
           "With sequential=layers, the most bytes of Hessians (in x in "
           "float32 per distinct input) one stage accumulates: a group of "
           "layers that needs more, such as all the experts of a block, is "
           "calibrated as several stages in program order, with the same "
           "Hessians (default 1G, or one input's when larger; bytes with K, "
           "M, G or T, or a percentage of physical memory; 0 for no "
           "limit)">,
    Option<"minTokens", "min-tokens", "int64_t", /*default=*/"1",
           "Layers whose calibration input held fewer rows (tokens) than "
           "this are rounded to nearest instead (default 1: those that no "
           "token reached, such as an expert the router never chose)">,
    Option<"classifier", "classifier", "bool", /*default=*/"false",
           "Also quantize the output classifier (layers outside the "
           "layers.<i>. blocks, or without such names the last layer whose "
           "result the function returns; and layers whose weight other ops "
           "read, such as a classifier tied to the embeddings)">,
    Option<"dampStep", "damp-step", "double", /*default=*/"0.01",
           "Added to percdamp for each retry when a Hessian is not positive "
           "definite (default 0.01)">,
    Option<"maxAttempts", "max-attempts", "unsigned", /*default=*/"100",
           "Attempts per layer at most, the first included (default 100)">,
    Option<"format", "format", "std::string", /*default=*/"\"packed\"",
           "packed (default: integer codes, scales, zeros, g_idx), float "
           "(dequantized weights) or quant (upstream quant types, as "
           "gptq-to-quant-types writes them)">,
    Option<"compileCache", "compile-cache", "std::string",
           /*default=*/"\"\"",
           "Where the compiled calibration stages and quantizers are cached: "
           "a folder, or off (compile afresh, write nothing); default "
           "$GPTQ_MLIR_CACHE_DIR, else ~/.cache/gptq-mlir "
           "(GPTQ_MLIR_CACHE_DIR=off disables it)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::gptq::GPTQDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::quant::QuantDialect",
                           "::mlir::tensor::TensorDialect"];
}

def GPTQLoadParameters : Pass<"gptq-load-parameters", "ModuleOp"> {
  let summary = "Attach the weights of the archives that gptq.parameters names";
  let description = [{
    A module whose weights stay in parameter archives (`import-hf`, and
    `import-llama2c --external-weights`, write such modules) names them in
    its `gptq.parameters` attribute; its `dense_resource` constants have no
    data until the archives are read. This pass maps each archive (an
    uncompressed `.npz`, a `.safetensors` file or a safetensors index),
    checks every array against the constants that use it, makes each array
    the blob of its resource, in place, and removes the attribute: the
    module is then what it would be with the weights written in it
    (docs/design.md, "Parameter archives").

    `gptq-opt` does this itself before the passes of its command line, and
    writes new weights back to an archive beside its output. Other drivers
    (upstream `mlir-opt` with the plugin, a pipeline built in C++) run this
    pass first:

    ```
    mlir-opt-22 --load-dialect-plugin=libGPTQPlugin.so --load-pass-plugin=libGPTQPlugin.so model.mlir \
        --pass-pipeline="builtin.module(gptq-load-parameters,gptq-quantize-model{bits=4})" --emit-bytecode -o model.q.mlirbc
    ```

    The output then holds every weight (bytecode keeps a large model's
    weights compact). Archive names are relative to the folder of
    `module-file`, by default the file the module was parsed from (its
    location), else the current directory. The mapping lives as long as the
    `MLIRContext`. An unreadable or malformed archive, a missing array, or
    an array of another dtype or shape than its use is an error naming the
    archive, the array and the use; a module without the attribute is left
    as it is.
  }];
  let options = [
    Option<"moduleFile", "module-file", "std::string", /*default=*/"\"\"",
           "The path the module was read from, against whose folder the "
           "archives' relative names resolve (default: the file of the "
           "module's location)">,
  ];
}

#endif // GPTQ_DRIVER_PASSES_TD
