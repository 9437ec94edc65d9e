//===- SharedMemory.h - The GPU schedule's dynamic shared memory -*- C++ -*-===//
//
// What the passes that put data in a launch's dynamic shared memory share.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_LIB_CODEGEN_GPU_SHAREDMEMORY_H
#define GPTQ_LIB_CODEGEN_GPU_SHAREDMEMORY_H

#include "mlir/Dialect/Arith/IR/Arith.h"
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

/// The thread's index in its block, x fastest (x + X (y + Y z)): the
/// order in which threads share the copies into shared memory. Built at
/// `b`'s insertion point, inside `launch`'s body.
inline Value linearThreadId(OpBuilder &b, Location loc, gpu::LaunchOp launch) {
  gpu::KernelDim3 tid = launch.getThreadIds();
  gpu::KernelDim3 size = launch.getBlockSize();
  return arith::AddIOp::create(
      b, loc, tid.x,
      arith::MulIOp::create(
          b, loc, size.x,
          arith::AddIOp::create(b, loc, tid.y,
                                arith::MulIOp::create(b, loc, size.y, tid.z))));
}

} // namespace mlir::gptq

#endif // GPTQ_LIB_CODEGEN_GPU_SHAREDMEMORY_H
