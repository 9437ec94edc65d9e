//===- Passes.td - GPTQ conversion passes ------------------*- tablegen -*-===//

#ifndef GPTQ_CONVERSION_PASSES_TD
#define GPTQ_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertGPTQToLinalg : Pass<"convert-gptq-to-linalg", "ModuleOp"> {
  let summary = "Lower gptq ops to linalg, scf, tensor and arith";
  let description = [{
    Replaces every gptq op by a call of its implementation, a shape-generic
    private function on tensors (`__gptq_*`) that the pass adds to the
    module: matrix products as `linalg.matmul`, elementwise work and
    reductions as `linalg.generic`, the sequential parts of GPTQ (the column
    loop inside a block, the diagonal blocks of the Cholesky factorization)
    as `scf.for` loops. The op's settings become constant arguments, so
    inlining (`inline`, as the pipelines do) specializes each call site.

    The damped Cholesky is a right-looking blocked factorization whose
    trailing updates are matrix products, with the inverse of the factor
    built block row by block row; quantize-and-compensate is the block loop
    of the reference with the lazy batch update as one matrix product.

    The algorithms are written once; the kernels they call (matrix
    products, transposes, gathers, and the rows per task of the parallel
    loops) come in two sets. `kernels=cpu` (the default) takes the CPU
    schedule's: register-tiled products on AVX-512 vectors, cache-blocked
    transposes, tasks of 32 or 64 rows. `kernels=portable` writes each
    kernel as one plain linalg op and makes every row its own task, for a
    target to tile and map (`gptq-lower-to-nvvm-pipeline` uses it); the
    results are the same up to the order of floating-point sums. With the
    CPU kernels the Hessian's product is a `gptq_ukernel.matmul`, which
    `gptq-lower-ukernels` makes a call of the microkernel library once
    buffers are placed (as the CPU pipeline does).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::gptq::ukernel::UKernelDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::vector::VectorDialect"
  ];
  let options = [
    Option<"choleskyBlock", "cholesky-block", "int64_t", /*default=*/"128",
           "Block size of the blocked Cholesky factorization">,
    Option<"kernels", "kernels", "std::string", /*default=*/"\"cpu\"",
           "The library's kernels: 'cpu', the CPU schedule's register-tiled "
           "matrix products, blocked transposes and task sizes; or "
           "'portable', each kernel one plain linalg op, for a target's own "
           "schedule (the GPU pipeline's)">,
    Option<"cpuIsa", "cpu-isa", "std::string", /*default=*/"\"host\"",
           "The instruction set the CPU kernels are written for: host (the "
           "CPU running the pass), generic (portable vector operations), "
           "avx2, avx512 or avx512-vnni; their table lookups and byte dot "
           "products are that set's instructions (KernelsX86.mlir)">,
    Option<"byteDots", "byte-dots", "std::string", /*default=*/"\"auto\"",
           "Whether the 4-bit decode kernel for groups of 128 columns "
           "multiplies codes and activations as bytes rather than looking "
           "weights up in tables: auto (where cpu-isa has AVX-512 VNNI), on "
           "(in portable operations without VNNI: for testing them on any "
           "CPU) or off">
  ];
}

def GPTQSelectKernelForms : Pass<"gptq-select-kernel-forms", "ModuleOp"> {
  let summary = "Give the CPU kernels' steps their x86 instructions";
  let description = [{
    The CPU kernels of the gptq lowering library write a few steps in
    portable vector operations, out of line (`no_inline`): the 16-entry
    table lookup of the 4-bit kernels (`__gptq_lut16`) and the byte dot
    product of the 4-bit decode kernel (`__gptq_dot4`). Their x86 forms
    (`KernelsX86.mlir`) are the instructions themselves, as
    `llvm.call_intrinsic`: one AVX-512 `vpermps`, or two AVX2 `vpermps` per
    half and a select, and AVX-512 VNNI's `vpdpbusd`. This pass gives each
    such function of the module the form of the instruction set `cpu-isa`
    names and lets it be inlined; the values are the same bit for bit.

    It runs once the module's buffers are placed
    (`gptq-lower-to-cpu-pipeline` runs it after the deallocation passes,
    which refuse an op of unknown memory effects, as
    `llvm.call_intrinsic` is).

    ```mlir
    func.func private @__gptq_lut16(%t: vector<16xf32>, %c: vector<16xi32>)
        -> vector<16xf32> attributes {no_inline} { ... portable ... }
    // with cpu-isa=avx512 becomes
    func.func private @__gptq_lut16(%t: vector<16xf32>, %c: vector<16xi32>)
        -> vector<16xf32> {
      %w = llvm.call_intrinsic "llvm.x86.avx512.permvar.sf.512"(%t, %c)
          : (vector<16xf32>, vector<16xi32>) -> vector<16xf32>
      return %w : vector<16xf32>
    }
    ```
  }];
  let options = [
    Option<"cpuIsa", "cpu-isa", "std::string", /*default=*/"\"host\"",
           "The instruction set: host (the CPU running the pass), generic "
           "(the portable forms stay), avx2, avx512 or avx512-vnni">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::vector::VectorDialect"
  ];
}

def GPTQInsertRuntimeChecks
    : Pass<"gptq-insert-runtime-checks", "ModuleOp"> {
  let summary = "Check at run time what the gptq verifiers cannot check";
  let description = [{
    The verifiers check every shape relation of a gptq op whose sizes are
    static. This pass adds, before each gptq op, a `cf.assert` for each
    relation that involves a dynamic size (operand against operand, or a
    static result size against a dynamic operand), and for the data an op
    reads by index:

    | op | checked at run time |
    | --- | --- |
    | `hessian_accumulate` | H square; input features = H size |
    | `damped_cholesky` | H square |
    | `act_order` | H square; a static permutation length = H size |
    | `permute` | each permuted dimension = permutation length; entries in `[0, n)`, none repeated |
    | `mask_dead_inputs` | H square; W columns = H size |
    | `grid` | static result sizes: W rows, groups of W columns |
    | `quantize_blocks` | U square; W columns = U size; grids: rows = W rows, zeros as scales, group map length = W columns, its entries in `[0, groups)`; static result sizes |
    | `group_index` | column count not negative; permutation length = column count; the permutation, when read (act-order with dynamic groups); static result size |
    | `dequantize` | scales rows = code rows; zeros as scales; g_idx length = code columns, its entries in `[0, groups)`; static result sizes |
    | `pack` | static result sizes |
    | `unpack` | column count not negative and `ceil(columns * bits / 32)` = words per row; static result sizes |
    | `quantize_layer` | H square; W columns = H size; static result sizes |

    Permutations made by `gptq.act_order` are valid by construction and
    are not checked again. The data checks are single passes over the
    index vectors, outside any parallel loop.

    Each assert carries the op's location and a message that names the op
    and the relation, e.g. `gptq.dequantize: g_idx entry out of range
    [0, groups)`:

    ```mlir
    %ok = arith.cmpi eq, %rows, %scale_rows : index
    cf.assert %ok, "gptq.dequantize: expected scales rows to equal the code rows"
    ```

    The CPU pipeline runs this pass first, before `gptq.quantize_layer` is
    decomposed, and lowers the asserts with `gptq-assert-to-runtime`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::cf::ControlFlowDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def GPTQAssertToRuntime : Pass<"gptq-assert-to-runtime", "ModuleOp"> {
  let summary = "Lower cf.assert to a call of the gptq runtime";
  let description = [{
    Replaces each `cf.assert` by a branch to a call of
    `gptq_runtime_check_failed(message, fatal)` (`libGPTQRuntime.so`), where
    `message` is the assert's message prefixed with its source location
    (`file:line:col: `, taken from the innermost file location, so that an
    inlined assert names its own line; for a fused location of ops in
    several places, as an op of a layer that `gptq-outline-repeated-layers`
    outlined once for all layers, `one of file:line:col, file:line:col,
    ...: `). Upstream's lowering prints the message and aborts the process;
    the runtime instead returns the failure to the caller that ran the code
    through `gptq_runtime_call_checked` (the JIT turns it into an error, so
    `gptq-run` reports it, exits with status 1 and writes no results), and
    elsewhere prints `<program>: error: <message>` and exits with status 1.

    An assert nested in an OpenMP region passes `fatal = 1`: leaving a
    parallel region by a jump would leave the OpenMP runtime inconsistent,
    so the process exits there.

    ```mlir
    cf.assert %ok, "gptq.permute: permutation entry repeated"
    ```

    becomes (before `convert-to-llvm`)

    ```mlir
    cf.cond_br %ok, ^continue, ^failed
    ^failed:
      %m = llvm.mlir.addressof @__gptq_check_message_0 : !llvm.ptr
      %fatal = llvm.mlir.constant(0 : i32) : i32
      llvm.call @gptq_runtime_check_failed(%m, %fatal) : (!llvm.ptr, i32) -> ()
      llvm.unreachable
    ^continue:
    ```

    Run it after `scf` is lowered to `cf` (asserts in `scf` regions cannot
    be split into blocks) and before `convert-to-llvm`.
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::cf::ControlFlowDialect"
  ];
}

def GPTQDestinationsToResults
    : Pass<"gptq-destinations-to-results", "ModuleOp"> {
  let summary = "Turn memref arguments updated in place into tensor "
                "arguments and results";
  let description = [{
    The importers' `@prefill` and `@decode` update the KV caches in place:
    each cache is a memref argument, read as a tensor once
    (`bufferization.to_tensor %cache restrict writable`) and written back
    once before the return (`bufferization.materialize_in_destination
    %new in restrict writable %cache`), so that a step costs the new
    token's work only in our lowering. Compilers that take functions on
    tensors alone (IREE) cannot compile that form. This pass rewrites each
    such argument into a tensor argument of the same shape and element
    type and appends the tensor written back to the function's results,
    in argument order:

    ```mlir
    func.func @decode(%tokens: tensor<?xi32>, %position: i64,
                      %k: memref<5x?x4x?x8xf32>, %v: memref<5x?x4x?x8xf32>)
        -> tensor<?x?xf32>
    // becomes
    func.func @decode(%tokens: tensor<?xi32>, %position: i64,
                      %k: tensor<5x?x4x?x8xf32>, %v: tensor<5x?x4x?x8xf32>)
        -> (tensor<?x?xf32>, tensor<5x?x4x?x8xf32>, tensor<5x?x4x?x8xf32>)
    ```

    The caller passes the caches in and takes the updated ones back; the
    argument's `memref.dim`s become `tensor.dim`s. A memref argument with
    any other use (more than one read or write, a
    write not in the function's block, a function that is called), a
    layout other than the identity, or a function with more than one block
    is an error naming the argument and the use.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::tensor::TensorDialect"];
}

def GPTQPermuteToGather : Pass<"gptq-permute-to-gather", "ModuleOp"> {
  let summary = "Express gptq.permute as a gathering linalg.generic";
  let description = [{
    Rewrites every `gptq.permute` into a `linalg.generic` that gathers,
    `result[.., j, ..] = source[.., perm[j], ..]` along each permuted
    dimension (`tensor.extract` of the permutation and of the source): the
    form of an act-order model whose columns `gptq-quantize-model` sorted
    by group, for compilers without the gptq dialect. An `inverse`
    permutation is gathered by the inverse of its permutation, which must
    then be a constant; otherwise the pass fails with an error at the op.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def GPTQStripToUpstream : Pass<"gptq-strip-to-upstream", "ModuleOp"> {
  let summary = "Remove the gptq attributes; refuse gptq ops and types";
  let description = [{
    The last step of `gptq-to-upstream-pipeline`: removes every
    discardable attribute whose name starts with `gptq.` (`gptq.model`
    on the module, `gptq.library` on the lowering's functions, ...), and
    fails with an error at the first op of the gptq dialect, or op using a
    type or attribute of it, that is left. A module that names parameter
    archives (`gptq.parameters`) is refused: its weights are not in it
    (attach them first with `gptq-load-parameters`, or in `gptq-opt`
    write the output with `--embed-parameters`).
  }];
}

def GPTQToQuantTypes : Pass<"gptq-to-quant-types", "ModuleOp"> {
  let summary = "Express constant quantized weights with upstream quant types";
  let description = [{
    Rewrites every `gptq.dequantize` whose codes come from a `gptq.unpack`
    of a constant and whose scales, zeros and `g_idx` are constants (`dense`
    or `dense_resource`, static shapes: the weights of
    `gptq-quantize-model`) into the upstream `quant` dialect, so that MLIR
    compilers without the gptq dialect can consume the model: the codes as
    an integer constant, `quant.scast` to a tensor of a `!quant.uniform`
    type that holds the scales and zero points, and `quant.dcast` to f32.
    Upstream `-lower-quant-ops` lowers that to a `linalg.generic` computing
    `(code - zero_point) * scale`, the arithmetic of `gptq.dequantize`;
    `gptq-lower-to-cpu-pipeline` runs it first.

    The storage type is `u8` for every bit width, narrowed to
    `[0, 2^bits - 1]` (`u8<0:7>` for 3 bits, `u8<0:15>` for 4, `u8` for 8):
    a code per byte, the codes and zero points GPTQ's own. One group per row
    (`group-size=-1`, or groups as wide as the input) is per-axis
    quantization along the output dimension:

    ```mlir
    %codes = arith.constant dense<...> : tensor<64x64xi8>
    %q = quant.scast %codes : tensor<64x64xi8>
        to tensor<64x64x!quant.uniform<u8<0:15>:f32:0, {0.0123:8, ...}>>
    %w = quant.dcast %q : tensor<64x64x!quant.uniform<u8<0:15>:f32:0, {...}>>
        to tensor<64x64xf32>
    ```

    Groups are sub-channel quantization with block sizes `{0:1, 1:B}`, the
    scales and zero points `out x groups`. The tensor holds the groups side
    by side in blocks of `B` columns, `B` the largest group's column count;
    a column's place is its group's block and its rank among the group's
    columns. When `g_idx[j] = j / B` and the blocks fill the input exactly,
    that is the weight itself. When the last group is short (the input
    features are not a multiple of the group size), the blocks are padded
    with the row's zero point (dequantized 0) and a `tensor.extract_slice`
    cuts the weight out. With act-order (any other `g_idx`), a
    `linalg.generic` gathers each column back from its place
    (`W[r, j] = blocks[r, place[j]]`, the places an i32 constant).

    A weight the types cannot express is an error naming the layer (the
    qweight resource's name without `.qweight`, else the op's location
    name): a scale that is not positive and finite, a zero point that is not
    an integer in `[0, 2^bits - 1]`, a `g_idx` entry outside the groups,
    groups so uneven that blocks of the largest one's size would more than
    double the columns, a `dense_resource` without its data or shorter than
    its type, an empty weight. The pass fails then, and gptq-opt writes no
    output.
    Dequantizations of non-constant operands, or of codes that do not come
    from `gptq.unpack`, are left as they are.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::quant::QuantDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // GPTQ_CONVERSION_PASSES_TD
