//===- UKernelDialect.td - The CPU microkernel dialect -----*- tablegen -*-===//

#ifndef GPTQ_DIALECT_UKERNEL_IR_UKERNELDIALECT_TD
#define GPTQ_DIALECT_UKERNEL_IR_UKERNELDIALECT_TD

include "mlir/IR/OpBase.td"

def UKernel_Dialect : Dialect {
  let name = "gptq_ukernel";
  let cppNamespace = "::mlir::gptq::ukernel";
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::gptq::GPTQDialect"];
  let summary = "The CPU schedule's microkernels as typed operations";
  let description = [{
    The CPU schedule (`lib/Codegen/CPU`) gives the contractions it does not
    leave to generic loops, and GPTQ's factorization and
    quantize-and-compensate, to hand-written microkernels. Each microkernel
    is an op of this dialect whose variant (transposes, triangles, the
    stored type of a weight, its bit width; the layer's `#gptq.config`) is
    in attributes that the op verifies.
    The ops take tensors or buffers in destination-passing style: they
    bufferize in place into their `outs` operand. Once buffers are placed,
    `gptq-lower-ukernels` makes each a call of the microkernel library,
    which the project compiles once per instruction set when it is built
    (`lib/UKernels`, linked as `libGPTQUKernels.so` by the JIT and as a
    static library into ahead-of-time executables): no module carries the
    kernels' code.
  }];
}

class UKernel_Op<string mnemonic, list<Trait> traits = []>
    : Op<UKernel_Dialect, mnemonic, traits>;

#endif // GPTQ_DIALECT_UKERNEL_IR_UKERNELDIALECT_TD
