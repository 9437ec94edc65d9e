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

#endif // GPTQ_CONVERSION_PASSES_TD
