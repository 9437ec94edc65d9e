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

#endif // GPTQ_DIALECT_GPTQ_TRANSFORMS_PASSES_TD
