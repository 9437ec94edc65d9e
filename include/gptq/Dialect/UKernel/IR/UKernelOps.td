//===- UKernelOps.td - The CPU microkernel ops -------------*- tablegen -*-===//

#ifndef GPTQ_DIALECT_UKERNEL_IR_UKERNELOPS_TD
#define GPTQ_DIALECT_UKERNEL_IR_UKERNELOPS_TD

include "gptq/Dialect/UKernel/IR/UKernelDialect.td"
include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/CommonAttrConstraints.td"

// A ranked tensor or a memref: the ops take tensors before bufferization
// and buffers after.
def UKernel_Shaped : Type<Or<[AnyRankedTensor.predicate, AnyMemRef.predicate]>,
                          "ranked tensor or memref">;

def UKernel_MatmulOp : UKernel_Op<"matmul", [
    AttrSizedOperandSegments,
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
         "getAliasingValues", "bufferize"]>]> {
  let summary = "The CPU matrix microkernel: a batch of float32 products";
  let description = [{
    `C[b] = A[b] * B[b]` for each batch `b`, in float32, into `outs`:

    - `lhs` is `A`, `[B, M, K]`, or `[B, K, M]` with `transpose_lhs`;
    - the right operand is one of three forms:
      - `rhs`, float32 `B`: `[B, K, N]`, or `[B, N, K]` with
        `transpose_rhs`;
      - `packed(%words, %scales, %zeros, %g_idx)` with `bits`: a weight
        quantized as `gptq.dequantize(gptq.unpack(%words))` would read it
        (`%words` `[N, ceil(K * bits / 32)]` i32, the grids `[N, groups]`
        f32, `%g_idx` `[K]` i32, one batch, given transposed); the kernel
        dequantizes each chunk while it packs it, to the same values;
      - `half(%w)`: a bfloat16 or float16 weight `[N, K]` (one batch,
        given transposed), widened exactly while the kernel packs it;
    - `outs` is `C`, `[B, M, N]`; with `zero_init` its contents are not
      read (the product starts from zero), else the product is added to
      them;
    - `lower_result`: only `C[b, m, n]` with `n <= m` is wanted (a causal
      mask's triangle); the kernel computes the tiles that reach it;
    - `lower_lhs`: `A[b, m, k]` is zero for `k > m`, and the kernel skips
      the terms that are.

    Every product is a sum over `K` in ascending order with one fused
    multiply-add per term, so that each variant gives the results of the
    same product as `linalg.batch_matmul` with the operands formed first,
    bit for bit, on every instruction set.

    On tensors the op returns the updated `C`; on buffers it writes `outs`
    and has no result. `gptq-matmul-to-ukernel` makes it from
    `linalg.batch_matmul`; `gptq-lower-ukernels` calls the library.

    ```mlir
    %c = gptq_ukernel.matmul ins(%x : tensor<1x64x288xf32>)
           packed(%w, %s, %z, %g : tensor<768x36xi32>, tensor<768x9xf32>,
                                   tensor<768x9xf32>, tensor<288xi32>)
           outs(%init : tensor<1x64x768xf32>)
           {bits = 4 : i64, transpose_rhs, zero_init} -> tensor<1x64x768xf32>
    ```
  }];
  let arguments = (ins
      UKernel_Shaped:$lhs,
      Optional<UKernel_Shaped>:$rhs,
      Optional<UKernel_Shaped>:$packed,
      Optional<UKernel_Shaped>:$scales,
      Optional<UKernel_Shaped>:$zeros,
      Optional<UKernel_Shaped>:$g_idx,
      Optional<UKernel_Shaped>:$half,
      UKernel_Shaped:$init,
      UnitAttr:$transpose_lhs,
      UnitAttr:$transpose_rhs,
      UnitAttr:$zero_init,
      UnitAttr:$lower_result,
      UnitAttr:$lower_lhs,
      OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<2>, IntMaxValue<8>]>>:$bits);
  let results = (outs Variadic<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    `ins` `(` $lhs (`,` $rhs^)? `:` type($lhs) (`,` type($rhs)^)? `)`
    (`packed` `(` $packed^ `,` $scales `,` $zeros `,` $g_idx `:`
      type($packed) `,` type($scales) `,` type($zeros) `,` type($g_idx) `)`)?
    (`half` `(` $half^ `:` type($half) `)`)?
    `outs` `(` $init `:` type($init) `)`
    attr-dict (`->` type($result)^)?
  }];
  let extraClassDeclaration = [{
    /// The operands of destination-passing style: `outs`.
    MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
    /// Whether the right operand is a packed quantized weight.
    bool hasPackedWeight() { return getPacked() != nullptr; }
  }];
  let hasVerifier = 1;
}

#endif // GPTQ_DIALECT_UKERNEL_IR_UKERNELOPS_TD
