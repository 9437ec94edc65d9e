//===- GPTQAttrs.td - GPTQ attributes ----------------------*- tablegen -*-===//

#ifndef GPTQ_DIALECT_GPTQ_IR_GPTQATTRS_TD
#define GPTQ_DIALECT_GPTQ_IR_GPTQATTRS_TD

include "gptq/Dialect/GPTQ/IR/GPTQDialect.td"
include "mlir/IR/AttrTypeBase.td"

def GPTQ_ConfigAttr : AttrDef<GPTQ_Dialect, "Config"> {
  let mnemonic = "config";
  let summary = "Quantization settings of one GPTQ layer";
  let description = [{
    Every setting of the reference GPTQ procedure. Omitted keys take the
    reference's defaults, and only settings that differ from the defaults are
    printed.

    | key | meaning | default |
    | --- | --- | --- |
    | `bits` | code width, 2..8 | 4 |
    | `group_size` | columns per grid, -1 for one grid per row | -1 |
    | `sym` | symmetric grid (zero point fixed at 2^(bits-1)) | false |
    | `act_order` | process columns by descending Hessian diagonal | false |
    | `static_groups` | compute every group's grid before quantizing | false |
    | `percdamp` | dampening, a fraction of mean(diag(H)); a normal float32 in [1.17549435e-38, 1) | 0.01 |
    | `block_size` | columns per lazy batch update, >= 1 | 128 |
    | `mse` | search shrunken grids for the least p-norm error | false |
    | `mse_norm` | exponent of that error, > 0; a normal float32 | 2.4 |
    | `mse_grid` | number of shrink steps, >= 1 | 100 |
    | `mse_max_shrink` | largest shrink, 0 < s <= 1; a normal float32 | 0.8 |

    Example:

    ```mlir
    #gptq.config<bits = 3, group_size = 128, act_order = true>
    ```
  }];
  let parameters = (ins
    "int64_t":$bits,
    "int64_t":$groupSize,
    "bool":$sym,
    "bool":$actOrder,
    "bool":$staticGroups,
    APFloatParameter<"">:$percdamp,
    "int64_t":$blockSize,
    "bool":$mse,
    APFloatParameter<"">:$mseNorm,
    "int64_t":$mseGrid,
    APFloatParameter<"">:$mseMaxShrink
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The reference defaults: 4 bits, one asymmetric grid per row.
    static ConfigAttr getDefault(::mlir::MLIRContext *context);
    /// Largest integer code, 2^bits - 1.
    int64_t getMaxQ() const { return (int64_t(1) << getBits()) - 1; }
    double getPercdampValue() const { return getPercdamp().convertToDouble(); }
    double getMseNormValue() const { return getMseNorm().convertToDouble(); }
    double getMseMaxShrinkValue() const {
      return getMseMaxShrink().convertToDouble();
    }
    /// Shrink steps of the MSE grid search, as the reference's
    /// range(int(maxshrink * grid)) (step i tries p = 1 - i / grid).
    int64_t getMseSteps() const {
      return static_cast<int64_t>(getMseMaxShrinkValue() *
                                  static_cast<double>(getMseGrid()));
    }
    /// Number of (row, group) grids per row for `cols` input columns.
    int64_t getNumGroups(int64_t cols) const {
      // Rounded up without overflow, whatever the sizes.
      return getGroupSize() < 0
                 ? 1
                 : cols / getGroupSize() + (cols % getGroupSize() != 0);
    }
  }];
}

#endif // GPTQ_DIALECT_GPTQ_IR_GPTQATTRS_TD
