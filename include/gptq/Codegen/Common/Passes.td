//===- Passes.td - Codegen: passes of any target -----------*- tablegen -*-===//

#ifndef GPTQ_CODEGEN_COMMON_PASSES_TD
#define GPTQ_CODEGEN_COMMON_PASSES_TD

include "mlir/Pass/PassBase.td"

def GPTQExportEntryPoints : Pass<"gptq-export-entry-points", "ModuleOp"> {
  let summary = "Mark public functions as entry points callable with arrays";
  let description = [{
    Gives every public `func.func` with a body the attribute
    `llvm.emit_c_interface` (so that lowering to LLVM adds the C interface
    `_mlir_ciface_<name>` that takes memref descriptors) and records its
    signature as `gptq.signature = <function type>`, which survives lowering
    to the LLVM dialect. `gptq-run` uses the recorded signature to call
    functions of modules that are already in the LLVM dialect. Tensor
    arguments get `bufferization.writable = false` (unless they have the
    attribute already): callers pass arrays they keep, so bufferization
    copies where the function would write into one. The CPU pipeline runs
    this pass first.

    ```mlir
    func.func @f(%x: tensor<?xf32>) -> tensor<?xf32>
    // becomes
    func.func @f(%x: tensor<?xf32> {bufferization.writable = false})
        -> tensor<?xf32> attributes
        {gptq.signature = (tensor<?xf32>) -> tensor<?xf32>, llvm.emit_c_interface}
    ```
  }];
}

def GPTQOutlineRepeatedLayers
    : Pass<"gptq-outline-repeated-layers", "ModuleOp"> {
  let summary = "Outline the repeated layers of a function into one function";
  let description = [{
    A model's layers repeat the same ops on other weights: a function's body
    inlines each of them, so lowering and LLVM's code generation do a layer's
    work once per layer. This pass finds, in the body of each function with
    one block, the longest run of consecutive segments of ops that are
    equivalent (the same ops, attributes and types, nested ops included;
    values computed inside a segment read where the first segment reads its
    own, and each value from outside the first segment matched to one value
    from outside the other), and replaces every segment by a call of one new
    private function, `@<function>_layer`, made from the first segment.
    Constants of the body are moved to its start and are not part of the
    segments: one that every segment reads in the same place is copied into
    the callee; other values from outside (the layer's input, its weights,
    dynamic sizes) are the callee's arguments, and the values that ops after
    a segment read are its results. The calls carry `no_inline`, so that the
    inliner of the lowering leaves them.

    Only runs of at least two segments of at least `min-ops` ops (constants
    not counted) are outlined, those that save the most ops first; a body
    without one is left as it is. The CPU pipeline runs this pass after
    `gptq-export-entry-points`; the results are those of the body as it
    was, since each call runs the same ops in the same order.

    ```mlir
    func.func @forward(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>) -> tensor<4xf32> {
      %a = arith.mulf %x, %w0 : tensor<4xf32>
      %b = math.tanh %a : tensor<4xf32>
      %c = arith.mulf %b, %w1 : tensor<4xf32>
      %d = math.tanh %c : tensor<4xf32>
      return %d : tensor<4xf32>
    }
    // becomes, with min-ops=2
    func.func @forward(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>) -> tensor<4xf32> {
      %0 = call @forward_layer(%x, %w0) {no_inline} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %1 = call @forward_layer(%0, %w1) {no_inline} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      return %1 : tensor<4xf32>
    }
    func.func private @forward_layer(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
      %0 = arith.mulf %arg0, %arg1 : tensor<4xf32>
      %1 = math.tanh %0 : tensor<4xf32>
      return %1 : tensor<4xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"minOps", "min-ops", "unsigned", /*default=*/"16",
           "The fewest ops (constants not counted) of a segment worth "
           "outlining">
  ];
}

def GPTQNormalizeContractions
    : Pass<"gptq-normalize-contractions", "func::FuncOp"> {
  let summary = "Rewrite float32 contractions as linalg.batch_matmul";
  let description = [{
    The target-independent half of the model codegen. Every float32 linalg
    op on tensors that is a contraction (two inputs, a multiply-add body,
    operand maps that are permutations of their loops, as
    `linalg::inferContractionDims` classifies them into batch, M, N and K
    loops, each class non-empty but batch) becomes one
    `linalg.batch_matmul` on 3-D operands: `[B, M, K]` (or `[B, K, M]`)
    times `[B, K, N]` (or `[B, N, K]`) into `[B, M, N]`, with the transposed
    forms expressed by the op's `indexing_maps`, so that neither a
    transposed activation nor a weight stored `out x in` is copied. Loops of
    a class are collapsed into one dimension (`tensor.collapse_shape`); an
    operand whose loops are in another order is transposed first
    (`linalg.transpose`), and the result is expanded (and transposed) back
    to the op's layout. A zero-filled init stays a `linalg.fill` of the new
    shape. Other ops, and contractions over other element types, are left
    alone.

    The loops of a class take the output's order, unless the output has to
    be transposed back anyway (its batch, M and N loops interleave, as in
    attention's mixing of values): then batch and M loops take the left
    operand's order and N loops the right one's, so that those are not
    copied. An operand that must be copied goes to whichever of its two
    layouts keeps its innermost loop innermost (keys become `[B, N, K]`,
    read transposed, rather than being scattered into `[B, K, N]`). A
    transpose that moves only loops of static size 1 becomes a
    `tensor.collapse_shape` and `tensor.expand_shape`, not a copy.

    Causal masks are recognized on the original op, from the ops around it,
    and recorded as unit attributes of the `linalg.batch_matmul` for the
    per-target schedule (`gptq-matmul-to-kernel`):
    - `gptq.lower_result` when N is one loop t and some M loop s is such
      that every reader of the result is a `linalg.generic` input whose
      value (through single-result arithmetic) reaches only the true side
      of an `arith.select` on `t <= s` (or `t < s`, `s >= t`, `s > t`) of
      the `linalg.index` of the loops that read those dimensions; shape
      queries are allowed. Attention's scores, read by the row maximum and
      the exponentials under the mask, are marked. Since the normal form's
      row index is at least s, the result's elements column <= row hold
      all that is read.
    - `gptq.lower_lhs` when K is one loop t and the left operand is zero
      wherever t > s for an M loop s: it is a `linalg.generic` (all loops
      parallel) that yields a causal select of +0.0, a quotient whose
      numerator is such a value, or an input that is zero past the same
      loops. Attention's probabilities (exponentials selected under the
      mask, divided by their sums) are marked. A row whose divisor is zero
      or NaN is not finite either way; a key past the mask with a value
      that is Inf or NaN no longer turns an earlier query's output to NaN.

    The importers' linear layers (`y[b, s, n] = sum_k x[b, s, k] W[n, k]`),
    attention scores and the mixing of values all take this form; so do
    `linalg.matmul` and `linalg.batch_matmul` with any of their maps.

    ```mlir
    %y = linalg.generic {indexing_maps = [(b, s, n, k) -> (b, s, k),
        (b, s, n, k) -> (n, k), (b, s, n, k) -> (b, s, n)], ...}
        ins(%x, %w : tensor<?x?x64xf32>, tensor<172x64xf32>) ...
    // becomes, on %x collapsed to tensor<1x?x64xf32> and %w expanded
    // to tensor<1x172x64xf32>
    linalg.batch_matmul indexing_maps = [(d0, d1, d2, d3) -> (d0, d1, d3),
        (d0, d1, d2, d3) -> (d0, d2, d3), (d0, d1, d2, d3) -> (d0, d1, d2)]
        ins(...) outs(... : tensor<1x?x172xf32>)
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def GPTQExpandStridedCopies : Pass<"gptq-expand-strided-copies"> {
  let summary = "Turn copies between strided memrefs into linalg.copy";
  let description = [{
    The LLVM lowering of `memref.copy` calls `memcpy` when both sides are
    contiguous, and otherwise the runtime function `memrefCopy`, which copies
    one element at a time. Bufferization leaves such copies where a slice of
    a matrix is written into another (block rows of a factor, panels of a
    transpose). This pass rewrites every `memref.copy` whose source or target
    has a layout other than the identity into `linalg.copy`, which
    `convert-linalg-to-loops` turns into loops whose innermost one runs
    along unit-stride rows and vectorizes. Copies between identity layouts
    are left for `memcpy`.

    ```mlir
    memref.copy %a, %b : memref<?x?xf32, strided<[?, 1], offset: ?>>
                    to memref<?x?xf32, strided<[?, 1], offset: ?>>
    // becomes
    linalg.copy ins(%a : ...) outs(%b : ...)
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
  let options = [
    Option<"identity", "identity", "bool", /*default=*/"false",
           "Also rewrite copies between identity layouts">
  ];
}

def GPTQForwardArgumentResults
    : Pass<"gptq-forward-argument-results", "ModuleOp"> {
  let summary = "Make a private function's results that return an "
                "argument's buffer, or a buffer it allocates, arguments that "
                "callers provide";
  let description = [{
    Run after bufferization, before buffer deallocation. A kernel that is
    called rather than inlined (the matrix kernel, `__gptq_matmul`) writes
    its output into the buffer of its output argument and returns it. The
    deallocation pipeline gives each returned buffer an owner, so a
    returned argument, which the callee does not own, would be cloned on
    every return: a copy of the whole output per call (262 MB for the
    classifier of a 32000-word vocabulary on 2048 tokens). This pass
    removes such results (the returned value is the argument, or a
    `memref.cast` of it) from private functions whose every use is a
    `func.call`, and each call's result becomes the call's own operand
    (cast back to the result's type where the types differ). Public
    functions keep their signatures.

    A result that is a buffer the function allocates (`memref.alloc` in its
    entry block, returned directly or through `memref.cast`) with sizes
    computed from its arguments alone becomes a trailing argument instead:
    each caller allocates the buffer before the call (computing the sizes
    from its operands) and reads it after. A model's outlined layer
    (`gptq-outline-repeated-layers`) returns its output this way; as a call
    result of unknown origin, the deallocation pipeline could not tell the
    buffer from the function's other buffers, and freed them all at the
    function's end behind a run-time alias check, so that every layer's
    output lived until the model returned. Allocated by the caller, it is
    freed after its last use.

    ```mlir
    func.func private @kernel(%a: memref<?xf32>, %out: memref<?xf32>) -> memref<?xf32> {
      ...
      return %out : memref<?xf32>
    }
    %r = call @kernel(%a, %buf) : (memref<?xf32>, memref<?xf32>) -> memref<?xf32>
    "use"(%r) : (memref<?xf32>) -> ()
    // becomes
    func.func private @kernel(%a: memref<?xf32>, %out: memref<?xf32>) {
      ...
      return
    }
    call @kernel(%a, %buf) : (memref<?xf32>, memref<?xf32>) -> ()
    "use"(%buf) : (memref<?xf32>) -> ()
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def GPTQHoistDeallocs : Pass<"gptq-hoist-deallocs"> {
  let summary = "Free each buffer right after its last use";
  let description = [{
    Buffer deallocation places `memref.dealloc` at the end of the block that
    allocated the buffer, so every temporary of a function lives until the
    function returns. This pass moves each `memref.dealloc` of a
    `memref.alloc` result in the same block up to just after the last
    operation of that block that uses the buffer or any of its aliases
    (subviews, casts, loop-carried and region results, found with the
    bufferization's buffer view flow analysis). The buffer is then free for
    later allocations of the same function: after a layer's Cholesky factor
    and transposed weights die, dequantization reuses their memory instead of
    mapping fresh pages. Buffers with an alias that a terminator of the
    block uses (returned or yielded) are left alone.

    ```mlir
    %a = memref.alloc(%n) : memref<?xf32>
    "use"(%a) : (memref<?xf32>) -> ()
    %b = memref.alloc(%n) : memref<?xf32>
    "use"(%b) : (memref<?xf32>) -> ()
    memref.dealloc %a : memref<?xf32>
    memref.dealloc %b : memref<?xf32>
    // becomes
    %a = memref.alloc(%n) : memref<?xf32>
    "use"(%a) : (memref<?xf32>) -> ()
    memref.dealloc %a : memref<?xf32>
    %b = memref.alloc(%n) : memref<?xf32>
    ...
    ```
  }];
}

def GPTQApproximateMath : Pass<"gptq-approximate-math"> {
  let summary = "Math functions as arithmetic where LLVM has no instruction "
                "for them or the C library's call would not vectorize";
  let description = [{
    Rewrites the `math` ops that the C library would otherwise compute one
    element at a time, or that LLVM IR cannot express at all, into `arith`
    (and `math` ops LLVM has instructions for), scalar or vector:

    - `math.exp`, `math.tanh`, `math.erf`, `math.erfc`, `math.log1p`,
      `math.expm1` and `math.cbrt` of float32 become upstream's polynomial
      approximations (a few ulp; `cbrt` 18): LLVM vectorizes them with the
      loop around them. Softmax and SiLU call `exp` once per element, GELU
      `tanh` or `erf` (the exact GELU of GPT-2, BERT and
      `torch.nn.GELU()`); LLVM IR has no instruction for `erf`, `erfc` or
      `cbrt`, and computes `log1p` and `expm1` as `log(1 + x)` and
      `exp(x) - 1`, which lose all precision near zero.
    - `math.asinh`, `math.acosh` and `math.atanh` become `log1p` of
      arguments that do not cancel (`asinh(x) = log1p(|x| + x^2 / (1 +
      sqrt(1 + x^2)))` with the sign of x, `acosh(1 + t) = log1p(t +
      sqrt(2 t + t^2))`, `atanh(x) = log1p(2 |x| / (1 - |x|)) / 2` with the
      sign of x), and `log(2 |x|)` beyond 4096 for the first two.
    - Any of these on float16 or bfloat16 is computed in float32 and
      rounded back.

    Other math ops (`sin`, `cos`, `log`, `exp2`, `powf`, `fpowi`, `rsqrt`,
    ...) are left to the LLVM conversion: instructions or intrinsics that
    become the C library's functions on the CPU (whose range reduction
    keeps rotary embeddings of long sequences exact). The CPU pipeline runs
    this pass on its loops before the LLVM conversion, and so does the GPU
    pipeline when it emulates kernels on the CPU; real GPU kernels take
    every math op from CUDA's libdevice instead.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def GPTQReinterpretDynamicExpandShapes
    : Pass<"gptq-reinterpret-dynamic-expand-shapes"> {
  let summary = "Write memref.expand_shape with several dynamic sizes in "
                "one group as a memref.reinterpret_cast";
  let description = [{
    MLIR 22's `expand-strided-metadata` crashes on a `memref.expand_shape`
    that splits one dimension into two or more dynamic sizes
    (`[[0, 1], [2]] output_shape [%a, %b, 8]`, as a `[tokens, dim]`
    tensor viewed as `[batch, seq, dim]` bufferizes). This pass rewrites
    each such op, and only those, as a `memref.reinterpret_cast` of the
    source's base buffer with the source's offset, the output sizes and
    the strides they imply (within a group, each size times the stride of
    the one after it, the innermost taking the source dimension's stride),
    which `expand-strided-metadata` then lowers. The pipelines run it just
    before that pass.

    ```mlir
    %e = memref.expand_shape %m [[0, 1], [2]] output_shape [%a, %b, 8]
        : memref<?x8xf32> into memref<?x?x8xf32>
    // becomes
    %base, %offset, %sizes:2, %strides:2 = memref.extract_strided_metadata %m
    %e = memref.reinterpret_cast %base to offset: [%offset],
        sizes: [%a, %b, 8], strides: [%s0, 8, 1] : memref<f32> to memref<?x?x8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

#endif // GPTQ_CODEGEN_COMMON_PASSES_TD
