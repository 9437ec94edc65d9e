//===- UKernelOps.td - The CPU microkernel ops -------------*- tablegen -*-===//

#ifndef GPTQ_DIALECT_UKERNEL_IR_UKERNELOPS_TD
#define GPTQ_DIALECT_UKERNEL_IR_UKERNELOPS_TD

include "gptq/Dialect/UKernel/IR/UKernelDialect.td"
include "gptq/Dialect/GPTQ/IR/GPTQAttrs.td"
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

def UKernel_DampedCholeskyOp : UKernel_Op<"damped_cholesky", [
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
         "getAliasingValues", "bufferize"]>]> {
  let summary = "The CPU factorization microkernel: GPTQ's damped inverse "
                "Cholesky factor";
  let description = [{
    `gptq.damped_cholesky` on the CPU: the upper factor `U` with
    `U^T U = (H + d I)^-1`, `d = percdamp * mean(diag(H))` (dead inputs
    counted as 1), into `outs` (`n x n` float32; its contents are not
    read), and whether `H + d I` was positive definite. With
    `permuted(%perm)` the kernel factors `P H P^T` for the permutation
    `%perm` (`result[i, j] = H[perm[i], perm[j]]`) without forming it.
    `block` is the factorization's block size (`cholesky-block` of the
    lowering).

    The library's kernel (`__gptq_damped_cholesky`) compiled once per
    instruction set: the results are those of the kernel inlined in a
    module, bit for bit. On tensors the op returns the factor and the
    flag; on buffers it writes `outs` and returns the flag.
    `gptq-layer-kernels-to-ukernel` makes it; `gptq-lower-ukernels` calls
    the library.

    ```mlir
    %u, %ok = gptq_ukernel.damped_cholesky ins(%h : tensor<?x?xf32>)
        percdamp(%d) outs(%init : tensor<?x?xf32>) {block = 128 : i64}
        -> tensor<?x?xf32>, i1
    ```
  }];
  let arguments = (ins
      UKernel_Shaped:$hessian,
      Optional<UKernel_Shaped>:$perm,
      F32:$percdamp,
      UKernel_Shaped:$init,
      ConfinedAttr<I64Attr, [IntMinValue<1>]>:$block);
  let results = (outs Optional<AnyRankedTensor>:$factor, I1:$ok);
  let assemblyFormat = [{
    `ins` `(` $hessian `:` type($hessian) `)`
    (`permuted` `(` $perm^ `:` type($perm) `)`)?
    `percdamp` `(` $percdamp `)`
    `outs` `(` $init `:` type($init) `)`
    attr-dict `->` type(results)
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() { return getInitMutable(); }
  }];
  let hasVerifier = 1;
}

def UKernel_QuantizeBlocksOp : UKernel_Op<"quantize_blocks", [
    AttrSizedOperandSegments,
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
         "getAliasingValues", "bufferize"]>]> {
  let summary = "The CPU quantize-and-compensate microkernel";
  let description = [{
    `gptq.quantize_blocks` on the CPU: GPTQ's blocked column loop over the
    weight `W` (`rows x cols` float32) with the factor `U` of
    `gptq_ukernel.damped_cholesky`, under the grid settings of `config`
    (bits, group size, block size, symmetric, MSE search), into `outs`:
    the codes (`rows x cols` i8), scales and zeros (`rows x groups`
    float32); it returns the reference's summed loss. Its operands:

    - `grids(%scales, %zeros, %map)`: fixed grids (per-row or static
      groups) and each column's group, which the kernel uses instead of
      computing each group's grid as the loop reaches it; they are
      copied to the `outs` grids;
    - `permuted(%perm)`: `W` is given before the column permutation
      `%perm`, which the kernel applies while it transposes `W`; with
      `permute_codes` the codes come back in `W`'s column order;
    - `masked(%hessian)`: the columns of dead inputs (`H[i, i] == 0`) are
      zeroed as the kernel reads `W`;
    - `bits(%b)`: the width (i64, 2 to 8) in place of the config's.

    The library's kernel (`__gptq_quantize_blocks`) compiled once per
    instruction set: the results are those of the kernel inlined in a
    module, bit for bit. On tensors the op returns the three `outs` and
    the loss; on buffers it writes them and returns the loss.

    ```mlir
    %c, %s, %z, %loss = gptq_ukernel.quantize_blocks
        ins(%w, %u : tensor<?x?xf32>, tensor<?x?xf32>)
        outs(%c0, %s0, %z0 : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>)
        {config = #gptq.config<group_size = 128>}
        -> tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, f32
    ```
  }];
  let arguments = (ins
      UKernel_Shaped:$weight,
      UKernel_Shaped:$factor,
      Optional<UKernel_Shaped>:$scales,
      Optional<UKernel_Shaped>:$zeros,
      Optional<UKernel_Shaped>:$group_map,
      Optional<UKernel_Shaped>:$perm,
      Optional<UKernel_Shaped>:$mask_hessian,
      Optional<I64>:$bits,
      Variadic<UKernel_Shaped>:$inits,
      GPTQ_ConfigAttr:$config,
      UnitAttr:$permute_codes);
  let results = (outs Variadic<AnyRankedTensor>:$results, F32:$loss);
  let assemblyFormat = [{
    `ins` `(` $weight `,` $factor `:` type($weight) `,` type($factor) `)`
    (`grids` `(` $scales^ `,` $zeros `,` $group_map `:` type($scales) `,`
      type($zeros) `,` type($group_map) `)`)?
    (`permuted` `(` $perm^ `:` type($perm) `)`)?
    (`masked` `(` $mask_hessian^ `:` type($mask_hessian) `)`)?
    (`bits` `(` $bits^ `)`)?
    `outs` `(` $inits `:` type($inits) `)`
    attr-dict `->` type(results)
  }];
  let extraClassDeclaration = [{
    MutableOperandRange getDpsInitsMutable() { return getInitsMutable(); }
    /// Whether the grids are given (per-row or static groups).
    bool hasFixedGrids() { return getScales() != nullptr; }
  }];
  let hasVerifier = 1;
}

#endif // GPTQ_DIALECT_UKERNEL_IR_UKERNELOPS_TD
