//===- Passes.td - GPTQ transformation passes --------------*- tablegen -*-===//

#ifndef GPTQ_DIALECT_GPTQ_TRANSFORMS_PASSES_TD
#define GPTQ_DIALECT_GPTQ_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def GPTQDecomposeQuantizeLayer
    : Pass<"gptq-decompose-quantize-layer"> {
  let summary = "Expand gptq.quantize_layer into the finer gptq ops";
  let description = [{
    Rewrites each `gptq.quantize_layer` into the steps of the reference
    procedure, in its order:

    1. per-row grids from the original weights (`group_size = -1`);
    2. `gptq.mask_dead_inputs`;
    3. static group grids from the masked weights in original order;
    4. with `act_order`: `gptq.act_order` and `gptq.permute` of the weights'
       columns and the Hessian's rows and columns;
    5. `gptq.damped_cholesky`;
    6. `gptq.quantize_blocks`, with fixed grids for per-row and static
       groups (mapped to the processing order) or dynamic ones;
    7. codes back to the original column order, and `gptq.group_index`.

    ```mlir
    %codes, %s, %z, %g, %loss, %ok = gptq.quantize_layer %w, %h
        {config = #gptq.config<group_size = 128, act_order = true>} : ...
    ```

    becomes `gptq.act_order`, two `gptq.permute`, `gptq.damped_cholesky`,
    `gptq.quantize_blocks`, an inverse `gptq.permute` of the codes and
    `gptq.group_index`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

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

#endif // GPTQ_DIALECT_GPTQ_TRANSFORMS_PASSES_TD
