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
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
  let options = [
    Option<"choleskyBlock", "cholesky-block", "int64_t", /*default=*/"128",
           "Block size of the blocked Cholesky factorization">
  ];
}

#endif // GPTQ_CONVERSION_PASSES_TD
