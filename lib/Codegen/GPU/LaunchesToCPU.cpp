//===- LaunchesToCPU.cpp - Run gpu.launch on the host's threads -----------===//
//
// A gpu.launch becomes loops over its blocks, each block a team of OpenMP
// threads (one per GPU thread) whose barrier is gpu.barrier and whose
// dynamic shared memory is a host buffer: the kernels that the GPU
// schedule builds, run on a machine without a GPU, with the GPU's
// semantics for everything they use.
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQLAUNCHESTOCPU
#include "gptq/Codegen/GPU/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {

/// The type with GPU memory spaces removed (host memory).
Type onHost(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || !isa_and_nonnull<gpu::AddressSpaceAttr>(
                     memref.getMemorySpace()))
    return type;
  return MemRefType::get(memref.getShape(), memref.getElementType(),
                         memref.getLayout());
}

struct GPTQLaunchesToCPUPass
    : gptq::impl::GPTQLaunchesToCPUBase<GPTQLaunchesToCPUPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::LaunchOp> launches;
    module.walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
    if (launches.empty())
      return;
    OpBuilder top(module.getBodyRegion());
    // The OpenMP runtime's thread number and barrier (GOMP_barrier, which
    // libomp provides too): calls, whose effects the CPU pipeline's buffer
    // deallocation knows, unlike omp.barrier's.
    auto declare = [&](StringRef name, FunctionType type) {
      auto f = module.lookupSymbol<func::FuncOp>(name);
      if (!f) {
        f = func::FuncOp::create(top, module.getLoc(), name, type);
        f.setPrivate();
      }
      return f;
    };
    func::FuncOp threadNum = declare(
        "omp_get_thread_num", top.getFunctionType({}, {top.getI32Type()}));
    func::FuncOp barrier = declare("GOMP_barrier", top.getFunctionType({}, {}));
    for (gpu::LaunchOp launch : launches)
      if (failed(lower(launch, threadNum, barrier)))
        return signalPassFailure();
  }

  LogicalResult lower(gpu::LaunchOp launch, func::FuncOp threadNum,
                      func::FuncOp barrier) {
    if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty() ||
        !launch.getWorkgroupAttributions().empty() ||
        !launch.getPrivateAttributions().empty() || launch.hasClusterSize())
      return launch.emitError()
             << "gptq-launches-to-cpu: only synchronous launches without "
                "attributions or clusters run on the CPU";
    Location loc = launch.getLoc();
    OpBuilder b(launch);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    Value bytes = launch.getDynamicSharedMemorySize();
    Value size = bytes ? arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                                    bytes)
                             .getResult()
                       : zero;
    // One buffer for every block in turn (blocks run one after another),
    // freed after the last.
    Value shared = memref::AllocOp::create(
        b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type()),
        ValueRange{size}, b.getI64IntegerAttr(16));
    Value count = arith::MulIOp::create(
        b, loc, block.x, arith::MulIOp::create(b, loc, block.y, block.z));
    Value count32 =
        arith::IndexCastOp::create(b, loc, b.getI32Type(), count);
    auto bz = scf::ForOp::create(b, loc, zero, grid.z, one);
    b.setInsertionPoint(bz.getBody()->getTerminator());
    auto by = scf::ForOp::create(b, loc, zero, grid.y, one);
    b.setInsertionPoint(by.getBody()->getTerminator());
    auto bx = scf::ForOp::create(b, loc, zero, grid.x, one);
    b.setInsertionPoint(bx.getBody()->getTerminator());
    omp::ParallelOperands clauses;
    clauses.numThreads = count32;
    auto team = omp::ParallelOp::create(b, loc, clauses);
    Block *body = b.createBlock(&team.getRegion());
    b.setInsertionPointToStart(body);
    Value t32 = func::CallOp::create(b, loc, threadNum, ValueRange{})
                    .getResult(0);
    Value t = arith::IndexCastOp::create(b, loc, b.getIndexType(), t32);
    Value tx = arith::RemUIOp::create(b, loc, t, block.x);
    Value rest = arith::DivUIOp::create(b, loc, t, block.x);
    Value ty = arith::RemUIOp::create(b, loc, rest, block.y);
    Value tz = arith::DivUIOp::create(b, loc, rest, block.y);

    IRMapping mapping;
    Block &kernel = launch.getBody().front();
    gpu::KernelDim3 bids = launch.getBlockIds(), tids = launch.getThreadIds(),
                    gsizes = launch.getGridSize(),
                    bsizes = launch.getBlockSize();
    mapping.map(bids.x, bx.getInductionVar());
    mapping.map(bids.y, by.getInductionVar());
    mapping.map(bids.z, bz.getInductionVar());
    mapping.map(tids.x, tx);
    mapping.map(tids.y, ty);
    mapping.map(tids.z, tz);
    mapping.map(gsizes.x, grid.x);
    mapping.map(gsizes.y, grid.y);
    mapping.map(gsizes.z, grid.z);
    mapping.map(bsizes.x, block.x);
    mapping.map(bsizes.y, block.y);
    mapping.map(bsizes.z, block.z);
    // A kernel may return from any thread (gpu.terminator); the team's
    // threads each run the body once.
    for (Operation &op : kernel.without_terminator())
      b.clone(op, mapping);
    omp::TerminatorOp::create(b, loc);

    // GPU operations in the team: barriers, the shared buffer, ids.
    SmallVector<Operation *> gpuOps;
    team.walk([&](Operation *op) {
      if (isa<gpu::BarrierOp, gpu::DynamicSharedMemoryOp, gpu::ThreadIdOp,
              gpu::BlockIdOp, gpu::BlockDimOp, gpu::GridDimOp>(op))
        gpuOps.push_back(op);
    });
    for (Operation *op : gpuOps) {
      OpBuilder ob(op);
      Value replacement;
      if (isa<gpu::BarrierOp>(op)) {
        func::CallOp::create(ob, op->getLoc(), barrier, ValueRange{});
        op->erase();
        continue;
      }
      // Ids and sizes: the same values the launch body's arguments got.
      auto pick = [](gpu::KernelDim3 dims, gpu::Dimension d) {
        return d == gpu::Dimension::x   ? dims.x
               : d == gpu::Dimension::y ? dims.y
                                        : dims.z;
      };
      if (isa<gpu::DynamicSharedMemoryOp>(op))
        replacement = shared;
      else if (auto id = dyn_cast<gpu::ThreadIdOp>(op))
        replacement = mapping.lookup(pick(tids, id.getDimension()));
      else if (auto id = dyn_cast<gpu::BlockIdOp>(op))
        replacement = mapping.lookup(pick(bids, id.getDimension()));
      else if (auto id = dyn_cast<gpu::BlockDimOp>(op))
        replacement = pick(block, id.getDimension());
      else
        replacement = pick(grid, cast<gpu::GridDimOp>(op).getDimension());
      op->getResult(0).replaceAllUsesWith(replacement);
      op->erase();
    }
    // Shared memory is host memory here.
    team.walk([&](Operation *op) {
      for (OpResult result : op->getResults())
        result.setType(onHost(result.getType()));
      for (Region &region : op->getRegions())
        for (Block &blk : region)
          for (BlockArgument arg : blk.getArguments())
            arg.setType(onHost(arg.getType()));
    });
    if (freeShared) {
      b.setInsertionPointAfter(bz);
      memref::DeallocOp::create(b, loc, shared);
    }
    launch->erase();
    return success();
  }
};

} // namespace
