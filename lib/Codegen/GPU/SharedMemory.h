//===- SharedMemory.h - The GPU schedule's dynamic shared memory -*- C++ -*-===//
//
// What the passes that put data in a launch's dynamic shared memory share.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_LIB_CODEGEN_GPU_SHAREDMEMORY_H
#define GPTQ_LIB_CODEGEN_GPU_SHAREDMEMORY_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir::gptq {

/// The workgroup (shared) memory space of the GPU dialect.
inline gpu::AddressSpaceAttr workgroupSpace(MLIRContext *ctx) {
  return gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
}

/// The enclosing launch's dynamic shared memory, as bytes
/// (memref<?xi8, #gpu.address_space<workgroup>>), for memref.view.
inline Value dynamicSharedMemory(OpBuilder &b, Location loc) {
  return gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(),
                      workgroupSpace(b.getContext())));
}

} // namespace mlir::gptq

#endif // GPTQ_LIB_CODEGEN_GPU_SHAREDMEMORY_H
