//===- GPTQOps.td - GPTQ operations ------------------------*- tablegen -*-===//

#ifndef GPTQ_DIALECT_GPTQ_IR_GPTQOPS_TD
#define GPTQ_DIALECT_GPTQ_IR_GPTQOPS_TD

include "gptq/Dialect/GPTQ/IR/GPTQDialect.td"
include "gptq/Dialect/GPTQ/IR/GPTQAttrs.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/TilingInterface.td"

def GPTQ_F32Matrix : 2DTensorOf<[F32]>;
def GPTQ_F32Batch : TensorRankOf<[F32], [2, 3]>;
def GPTQ_CodeMatrix : 2DTensorOf<[I8]>;
def GPTQ_WordMatrix : 2DTensorOf<[I32]>;
def GPTQ_Permutation : 1DTensorOf<[I64]>;
def GPTQ_GroupIndex : 1DTensorOf<[I32]>;

//===----------------------------------------------------------------------===//
// Calibration
//===----------------------------------------------------------------------===//

def GPTQ_HessianAccumulateOp : GPTQ_Op<"hessian_accumulate",
    [Pure, DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface, ["reifyResultShapes"]>, AllTypesMatch<["hessian", "result"]>]> {
  let summary = "Adds a batch of calibration inputs to a running Hessian";
  let description = [{
    Folds one batch of a linear layer's inputs into the running Hessian
    `H = 2/n * sum x x^T`, with the reference's running-average update. The
    input is `[samples, tokens, cols]`, or `[tokens, cols]` counted as one
    sample; `count` is the number of samples seen so far:

        H <- H * count / (count + nb);  count <- count + nb
        H <- H + (2 / count) * X^T X     (X reshaped to [tokens, cols])

    The two scalar factors are computed in double precision, as in the
    reference. Returns the new Hessian and the new sample count.

    ```mlir
    %h1, %n1 = gptq.hessian_accumulate %x into %h0 count %n0
        : tensor<8x128x64xf32>, tensor<64x64xf32>
    ```
  }];
  let arguments = (ins GPTQ_F32Batch:$input, GPTQ_F32Matrix:$hessian,
                   I64:$count);
  let results = (outs GPTQ_F32Matrix:$result, I64:$newCount);
  let assemblyFormat = [{
    $input `into` $hessian `count` $count attr-dict `:` type($input) `,`
    type($hessian)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Factorization and ordering
//===----------------------------------------------------------------------===//

def GPTQ_DampedCholeskyOp : GPTQ_Op<"damped_cholesky",
    [Pure, DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface, ["reifyResultShapes"]>, AllTypesMatch<["hessian", "factor"]>]> {
  let summary = "Upper Cholesky factor of the damped inverse Hessian";
  let description = [{
    The factorization step of GPTQ. Dead inputs (`H[i,i] == 0`) get
    `H[i,i] = 1`; every diagonal entry is then damped by
    `percdamp * mean(diag(H))`; the result is the upper triangular `U` with
    `H^-1 = U^T U`, the reference's
    `cholesky(cholesky_inverse(cholesky(H)), upper=True)`.

    `U` is computed as the reversed inverse of the Cholesky factor of the
    reversed `H`, about half the work of the reference's three
    factorizations. `ok` is false when `H` is not positive definite (or
    holds NaN or Inf); `U` is then unspecified and the caller may retry with
    more damping.

    ```mlir
    %u, %ok = gptq.damped_cholesky %h percdamp(%p) : tensor<?x?xf32>
    ```
  }];
  let arguments = (ins GPTQ_F32Matrix:$hessian, F32:$percdamp);
  let results = (outs GPTQ_F32Matrix:$factor, I1:$ok);
  let assemblyFormat = [{
    $hessian `percdamp` `(` $percdamp `)` attr-dict `:` type($hessian)
  }];
  let hasVerifier = 1;
}

def GPTQ_ActOrderOp : GPTQ_Op<"act_order", [Pure, DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface, ["reifyResultShapes"]>]> {
  let summary = "Column order by descending Hessian diagonal";
  let description = [{
    Returns `perm`, the columns sorted by descending `diag(H)` (act-order).
    Dead inputs (`H[i,i] == 0`) count as 1, the value the reference gives
    them before it sorts. The sort is stable: ties keep ascending index.

    ```mlir
    %perm = gptq.act_order %h : tensor<?x?xf32> -> tensor<?xi64>
    ```
  }];
  let arguments = (ins GPTQ_F32Matrix:$hessian);
  let results = (outs GPTQ_Permutation:$perm);
  let assemblyFormat = "$hessian attr-dict `:` type($hessian) `->` type($perm)";
  let hasVerifier = 1;
}

def GPTQ_PermuteOp : GPTQ_Op<"permute",
    [Pure, DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface, ["reifyResultShapes"]>, AllTypesMatch<["source", "result"]>]> {
  let summary = "Permutes the given dimensions of a tensor";
  let description = [{
    Reorders each dimension in `dims` by `perm`:
    `result[.., j, ..] = source[.., perm[j], ..]`. With `inverse` it applies
    the inverse permutation, `result[.., perm[j], ..] = source[.., j, ..]`.
    Permuting both dimensions of a Hessian permutes its rows and columns.
    `perm` must be a permutation of `[0, n)`: a permutation followed by its
    inverse (the same `perm` and `dims`, one of them `inverse`) folds to the
    original tensor.

    ```mlir
    %wp = gptq.permute %w by %perm dims [1] : tensor<?x?xf32>, tensor<?xi64>
    %hp = gptq.permute %h by %perm dims [0, 1] : tensor<?x?xf32>, tensor<?xi64>
    %w2 = gptq.permute %wp by %perm inverse dims [1]
        : tensor<?x?xf32>, tensor<?xi64>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$source, GPTQ_Permutation:$perm,
                   DenseI64ArrayAttr:$dims, UnitAttr:$inverse);
  let results = (outs AnyRankedTensor:$result);
  let hasFolder = 1;
  let assemblyFormat = [{
    $source `by` $perm (`inverse` $inverse^)? `dims` $dims attr-dict `:`
    type($source) `,` type($perm)
  }];
  let hasVerifier = 1;
}

def GPTQ_MaskDeadInputsOp : GPTQ_Op<"mask_dead_inputs",
    [Pure, DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface, ["reifyResultShapes"]>, AllTypesMatch<["weight", "result"]>]> {
  let summary = "Zeroes the weight columns of inputs that never fired";
  let description = [{
    Sets `W[:, i] = 0` for every dead input, `H[i,i] == 0`, as the reference
    does before quantizing.

    ```mlir
    %wm = gptq.mask_dead_inputs %w, %h : tensor<?x?xf32>, tensor<?x?xf32>
    ```
  }];
  let arguments = (ins GPTQ_F32Matrix:$weight, GPTQ_F32Matrix:$hessian);
  let results = (outs GPTQ_F32Matrix:$result);
  let assemblyFormat = [{
    $weight `,` $hessian attr-dict `:` type($weight) `,` type($hessian)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

def GPTQ_GridOp : GPTQ_Op<"grid",
    [Pure, DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface, ["reifyResultShapes"]>, AllTypesMatch<["scales", "zeros"]>]> {
  let summary = "Min-max (or MSE-searched) quantization grids of a weight";
  let description = [{
    The reference's `find_params` on every (row, group) of `weight`: groups
    of `group_size` columns in the given column order (the last one may be
    short), or one group per row when `group_size` is -1. Returns `scales`
    and integer-valued `zeros`, `rows x groups`. Bits, symmetry and the MSE
    search come from `config`; `bits`, when given, replaces its width (2 to
    8, checked when the code runs).

    ```mlir
    %s, %z = gptq.grid %w {config = #gptq.config<group_size = 128>}
        : tensor<?x?xf32> -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins GPTQ_F32Matrix:$weight, Optional<I64>:$bits,
                   GPTQ_ConfigAttr:$config);
  let results = (outs GPTQ_F32Matrix:$scales, GPTQ_F32Matrix:$zeros);
  let assemblyFormat = [{
    $weight (`bits` `(` $bits^ `)`)? attr-dict `:` type($weight) `->`
    type($scales)
  }];
  let hasVerifier = 1;
}

def GPTQ_QuantizeBlocksOp : GPTQ_Op<"quantize_blocks",
    [Pure, AttrSizedOperandSegments, DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface, ["reifyResultShapes"]>,
     AllTypesMatch<["outScales", "outZeros"]>]> {
  let summary = "Blocked quantize-and-compensate over the columns of W";
  let description = [{
    The core loop of GPTQ (the reference's `fasterquant` after the
    factorization). Columns are taken in order, in blocks of `block_size`;
    each column is quantized, and its error, divided by `U[c, c]`, is pushed
    onto the later columns of the block through row `c` of `U`; after each
    block the accumulated errors update the remaining columns with one
    matrix product, `W[:, i2:] -= Err1 @ U[i1:i2, i2:]`.

    Without `grid(...)` the grids are dynamic: at every column `c` with
    `c % group_size == 0` the grid is computed from `W[:, c:c+group_size]` as
    it stands at the start of the current block (the reference's rule, which
    makes `block_size` part of the result). With `grid(%scales, %zeros,
    %group_map)` the grids are fixed: column `c` uses grid
    `group_map[c]` of the given `rows x groups` scales and zeros.

    `bits`, when given, replaces the config's width (2 to 8, checked when
    the code runs).

    Returns the integer codes in the given column order, the grids used
    (`rows x groups`) and the reference's summed loss.

    ```mlir
    %codes, %s, %z, %loss = gptq.quantize_blocks %w, %u
        {config = #gptq.config<group_size = 128>}
        : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>
    ```
  }];
  let arguments = (ins GPTQ_F32Matrix:$weight, GPTQ_F32Matrix:$factor,
                   Optional<GPTQ_F32Matrix>:$scales,
                   Optional<GPTQ_F32Matrix>:$zeros,
                   Optional<GPTQ_GroupIndex>:$groupMap,
                   Optional<I64>:$bits, GPTQ_ConfigAttr:$config);
  let results = (outs GPTQ_CodeMatrix:$codes, GPTQ_F32Matrix:$outScales,
                 GPTQ_F32Matrix:$outZeros, F32:$loss);
  let assemblyFormat = [{
    $weight `,` $factor
    (`grid` `(` $scales^ `,` $zeros `,` $groupMap `:` type($scales) `,`
       type($zeros) `,` type($groupMap) `)`)?
    (`bits` `(` $bits^ `)`)?
    attr-dict `:` type($weight) `,` type($factor) `->`
    type($codes) `,` type($outScales)
  }];
  let hasVerifier = 1;
}

def GPTQ_GroupIndexOp : GPTQ_Op<"group_index", [Pure, DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface, ["reifyResultShapes"]>]> {
  let summary = "The group of every original column (g_idx)";
  let description = [{
    `g_idx[j]`, the grid group of original column `j`, as a checkpoint
    stores it: 0 when `group_size` is -1; `j / group_size` without a
    permutation or with static groups; `invperm[j] / group_size` for
    act-order with dynamic groups, whose groups are runs of the permuted
    order.

    ```mlir
    %g = gptq.group_index %cols perm(%perm : tensor<?xi64>)
        {config = #gptq.config<group_size = 128, act_order = true>}
        : tensor<?xi32>
    ```
  }];
  let arguments = (ins Index:$columns, Optional<GPTQ_Permutation>:$perm,
                   GPTQ_ConfigAttr:$config);
  let results = (outs GPTQ_GroupIndex:$gIdx);
  let assemblyFormat = [{
    $columns (`perm` `(` $perm^ `:` type($perm) `)`)? attr-dict `:`
    type($gIdx)
  }];
  let hasVerifier = 1;
}

def GPTQ_DequantizeOp : GPTQ_Op<"dequantize",
    [Pure, DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface, ["reifyResultShapes"]>,
     DeclareOpInterfaceMethods<TilingInterface,
         ["getLoopIteratorTypes", "getIterationDomain",
          "getTiledImplementation", "getResultTilePosition",
          "generateResultTileValue", "getIterationDomainTileFromResultTile"]>,
     AllTypesMatch<["scales", "zeros"]>]> {
  let summary = "Weights from integer codes and their grids";
  let description = [{
    `W[r, j] = scales[r, g] * (codes[r, j] - zeros[r, g])` with
    `g = g_idx[j]`; codes are unsigned.

    It tiles over rows and columns (`TilingInterface`): a tile reads its
    rows and columns of the codes, its rows of the grids and its columns of
    `g_idx`, so upstream tiling and fusion can form a weight tile where a
    consumer's tile needs it.

    ```mlir
    %w = gptq.dequantize %codes, %s, %z, %g
        : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32> -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins GPTQ_CodeMatrix:$codes, GPTQ_F32Matrix:$scales,
                   GPTQ_F32Matrix:$zeros, GPTQ_GroupIndex:$gIdx);
  let results = (outs GPTQ_F32Matrix:$result);
  let assemblyFormat = [{
    $codes `,` $scales `,` $zeros `,` $gIdx attr-dict `:` type($codes) `,`
    type($scales) `,` type($gIdx) `->` type($result)
  }];
  let hasVerifier = 1;
}

def GPTQ_PackOp : GPTQ_Op<"pack", [Pure, DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface, ["reifyResultShapes"]>]> {
  let summary = "Packs unsigned codes of a row into 32-bit words";
  let description = [{
    Each row is one little-endian bit stream: code `j` takes bits
    `[j * bits, (j + 1) * bits)`, so 3-bit codes straddle words. A row of
    `cols` codes takes `ceil(cols * bits / 32)` words; unused high bits of
    the last word are zero.

    ```mlir
    %p = gptq.pack %codes bits 4 : tensor<16x64xi8> -> tensor<16x8xi32>
    ```
  }];
  let arguments = (ins GPTQ_CodeMatrix:$codes,
                   ConfinedAttr<I64Attr, [IntMinValue<1>, IntMaxValue<8>]>:$bits);
  let results = (outs GPTQ_WordMatrix:$packed);
  let assemblyFormat = [{
    $codes `bits` $bits attr-dict `:` type($codes) `->` type($packed)
  }];
  let hasVerifier = 1;
}

def GPTQ_UnpackOp : GPTQ_Op<"unpack", [Pure, DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface, ["reifyResultShapes"]>]> {
  let summary = "Unpacks 32-bit words into unsigned codes";
  let description = [{
    The inverse of `gptq.pack`: `columns` codes of `bits` bits per row.

    ```mlir
    %c = gptq.unpack %p columns %n bits 4 : tensor<?x?xi32> -> tensor<?x?xi8>
    ```
  }];
  let arguments = (ins GPTQ_WordMatrix:$packed, Index:$columns,
                   ConfinedAttr<I64Attr, [IntMinValue<1>, IntMaxValue<8>]>:$bits);
  let results = (outs GPTQ_CodeMatrix:$codes);
  let assemblyFormat = [{
    $packed `columns` $columns `bits` $bits attr-dict `:` type($packed) `->`
    type($codes)
  }];
  let hasVerifier = 1;
}

def GPTQ_QuantizeLayerOp : GPTQ_Op<"quantize_layer",
    [Pure, AttrSizedOperandSegments, DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface, ["reifyResultShapes"]>, AllTypesMatch<["scales", "zeros"]>]> {
  let summary = "GPTQ of one linear layer, from weights and Hessian";
  let description = [{
    The whole reference procedure for one layer: grids, dead inputs,
    act-order, damped Cholesky, blocked quantize-and-compensate, and the
    checkpoint layout of the result. `weight` is `rows x cols` (output x
    input features), `hessian` is `cols x cols`. `percdamp`, when given,
    replaces the config's dampening (to escalate it without recompiling);
    `bits`, when given, replaces the config's width (2 to 8, checked when
    the code runs), so that one compiled function quantizes at every width.

    Returns the unsigned codes in original column order, per (row, group)
    `scales` and `zeros`, `g_idx`, the summed loss, and whether the
    factorization succeeded. `gptq-decompose-quantize-layer` expands it into
    the finer ops.

    ```mlir
    %codes, %s, %z, %g, %loss, %ok = gptq.quantize_layer %w, %h
        {config = #gptq.config<group_size = 128, act_order = true>}
        : tensor<?x?xf32>, tensor<?x?xf32>
        -> tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins GPTQ_F32Matrix:$weight, GPTQ_F32Matrix:$hessian,
                   Optional<F32>:$percdamp, Optional<I64>:$bits,
                   GPTQ_ConfigAttr:$config);
  let results = (outs GPTQ_CodeMatrix:$codes, GPTQ_F32Matrix:$scales,
                 GPTQ_F32Matrix:$zeros, GPTQ_GroupIndex:$gIdx, F32:$loss,
                 I1:$ok);
  let assemblyFormat = [{
    $weight `,` $hessian (`percdamp` `(` $percdamp^ `)`)?
    (`bits` `(` $bits^ `)`)? attr-dict
    `:` type($weight) `,` type($hessian) `->` type($codes) `,` type($scales)
    `,` type($gIdx)
  }];
  let hasVerifier = 1;
}

#endif // GPTQ_DIALECT_GPTQ_IR_GPTQOPS_TD
