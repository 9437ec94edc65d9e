//===- LaunchesToCPU.cpp - Run gpu.launch on the host's threads -----------===//
//
// A gpu.launch becomes loops over its blocks, each block a team of OpenMP
// threads (one per GPU thread) whose barrier is gpu.barrier and whose
// dynamic shared memory is a host buffer: the kernels that the GPU
// schedule builds, run on a machine without a GPU, with the GPU's
// semantics for everything they use. A kernel whose threads cannot see
// each other (no barrier, shared memory or atomics) runs its threads in
// turn instead, its blocks shared among the host's threads.
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
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

/// Loops from `zero` to `dims` by `one` (z outermost, then y, x) with `b`
/// left inside the innermost; their induction variables as (x, y, z).
SmallVector<Value, 3> nestLoops(OpBuilder &b, Location loc,
                                gpu::KernelDim3 dims, Value zero, Value one,
                                scf::ForOp *outer = nullptr) {
  SmallVector<Value, 3> ivs(3);
  for (int d = 2; d >= 0; --d) {
    Value size = d == 0 ? dims.x : d == 1 ? dims.y : dims.z;
    auto loop = scf::ForOp::create(b, loc, zero, size, one);
    if (d == 2 && outer)
      *outer = loop;
    b.setInsertionPoint(loop.getBody()->getTerminator());
    ivs[d] = loop.getInductionVar();
  }
  return ivs;
}

/// Linear index `i` of a `dims` grid as (i mod x, i / x mod y, i / (x y)).
SmallVector<Value, 3> splitIndex(OpBuilder &b, Location loc, Value i,
                                 gpu::KernelDim3 dims) {
  Value x = arith::RemUIOp::create(b, loc, i, dims.x);
  Value rest = arith::DivUIOp::create(b, loc, i, dims.x);
  Value y = arith::RemUIOp::create(b, loc, rest, dims.y);
  return {x, y, arith::DivUIOp::create(b, loc, rest, dims.y)};
}

/// The index that the runtime's `f` (() -> i32) returns.
Value callIndex(OpBuilder &b, Location loc, func::FuncOp f) {
  Value v = func::CallOp::create(b, loc, f, ValueRange{}).getResult(0);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
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
    SmallVector<func::FuncOp> declared;
    auto declare = [&](StringRef name, FunctionType type) {
      auto f = module.lookupSymbol<func::FuncOp>(name);
      if (!f) {
        f = func::FuncOp::create(top, module.getLoc(), name, type);
        f.setPrivate();
        declared.push_back(f);
      }
      return f;
    };
    func::FuncOp threadNum = declare(
        "omp_get_thread_num", top.getFunctionType({}, {top.getI32Type()}));
    func::FuncOp barrier = declare("GOMP_barrier", top.getFunctionType({}, {}));
    func::FuncOp numThreads = declare(
        "omp_get_num_threads", top.getFunctionType({}, {top.getI32Type()}));
    // The runtime's launch counter (LaunchCount.h), which counts the
    // launches of a device too.
    func::FuncOp countLaunch =
        declare("gptq_runtime_count_launch", top.getFunctionType({}, {}));
    for (gpu::LaunchOp launch : launches) {
      if (failed(checkLaunch(launch)))
        return signalPassFailure();
      countAsLaunched(launch, countLaunch);
      if (threadsAreApart(launch))
        lowerThreadsInTurn(launch, threadNum, numThreads);
      else
        lower(launch, threadNum, barrier);
    }
    // The declarations made here only where a launch calls them.
    for (func::FuncOp f : declared)
      if (SymbolTable::symbolKnownUseEmpty(f, module))
        f.erase();
  }

  /// Counts `launch` where a device would: when its grid has blocks (the
  /// runtime runs nothing and counts nothing for an empty grid).
  static void countAsLaunched(gpu::LaunchOp launch, func::FuncOp countLaunch) {
    OpBuilder b(launch);
    Location loc = launch.getLoc();
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    Value blocks = arith::MulIOp::create(
        b, loc, grid.x, arith::MulIOp::create(b, loc, grid.y, grid.z));
    Value any = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::sgt, blocks,
        arith::ConstantIndexOp::create(b, loc, 0));
    auto ifOp = scf::IfOp::create(b, loc, any, /*withElseRegion=*/false);
    b.setInsertionPointToStart(ifOp.thenBlock());
    func::CallOp::create(b, loc, countLaunch, ValueRange{});
  }

  LogicalResult checkLaunch(gpu::LaunchOp launch) {
    if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty() ||
        !launch.getWorkgroupAttributions().empty() ||
        !launch.getPrivateAttributions().empty() || launch.hasClusterSize())
      return launch.emitError()
             << "gptq-launches-to-cpu: only synchronous launches without "
                "attributions or clusters run on the CPU";
    return success();
  }

  /// Whether no thread of the launch can see what another one does but
  /// through memory that it alone writes: no barrier, no shared memory, no
  /// atomics and no GPU operation but ids and sizes. Any order of its
  /// threads is then one the GPU may run, one after another included, and
  /// blocks are independent.
  static bool threadsAreApart(gpu::LaunchOp launch) {
    WalkResult result = launch.getBody().walk([](Operation *op) {
      if (isa<gpu::ThreadIdOp, gpu::BlockIdOp, gpu::BlockDimOp, gpu::GridDimOp,
              gpu::TerminatorOp>(op))
        return WalkResult::advance();
      if (isa<gpu::GPUDialect, LLVM::LLVMDialect>(op->getDialect()) ||
          isa<memref::AtomicRMWOp, memref::GenericAtomicRMWOp>(op))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    return !result.wasInterrupted();
  }

  /// A launch whose threads are apart (threadsAreApart): one omp.parallel
  /// region whose threads take the blocks in turn (thread i blocks i, i +
  /// n, ...; block b = (b mod x, b / x mod y, b / (x y))), each block's
  /// threads one after another in loops (z, y, x). No team per block, so
  /// no thread per GPU thread: blocks of hundreds of threads on a few
  /// cores cost what their work costs.
  void lowerThreadsInTurn(gpu::LaunchOp launch, func::FuncOp threadNum,
                          func::FuncOp numThreads) {
    Location loc = launch.getLoc();
    OpBuilder b(launch);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    Value blocks = arith::MulIOp::create(
        b, loc, grid.x, arith::MulIOp::create(b, loc, grid.y, grid.z));
    auto team = omp::ParallelOp::create(b, loc, omp::ParallelOperands());
    b.createBlock(&team.getRegion());
    Value first = callIndex(b, loc, threadNum);
    Value step = callIndex(b, loc, numThreads);
    auto blockLoop = scf::ForOp::create(b, loc, first, blocks, step);
    omp::TerminatorOp::create(b, loc);
    b.setInsertionPoint(blockLoop.getBody()->getTerminator());
    SmallVector<Value, 3> blockIds =
        splitIndex(b, loc, blockLoop.getInductionVar(), grid);
    SmallVector<Value, 3> threadIds = nestLoops(b, loc, block, zero, one);
    // A thread's stack allocations are freed when it ends, not after the
    // last thread of the last block.
    bool allocates =
        launch.getBody()
            .walk([](memref::AllocaOp) { return WalkResult::interrupt(); })
            .wasInterrupted();
    if (allocates) {
      auto scope = memref::AllocaScopeOp::create(b, loc, TypeRange{});
      b.createBlock(&scope.getBodyRegion());
      auto end = memref::AllocaScopeReturnOp::create(b, loc, ValueRange{});
      b.setInsertionPoint(end);
    }

    IRMapping mapping;
    mapKernelArguments(launch, mapping, blockIds, threadIds);
    for (Operation &op : launch.getBody().front().without_terminator())
      b.clone(op, mapping);
    replaceGPUOps(team, launch, mapping, /*shared=*/nullptr,
                  /*barrier=*/nullptr);
    launch->erase();
  }

  /// Maps the launch body's block and thread ids to `blockIds` and
  /// `threadIds` (x, y, z), and its sizes to the launch's operands.
  static void mapKernelArguments(gpu::LaunchOp launch, IRMapping &mapping,
                                 ArrayRef<Value> blockIds,
                                 ArrayRef<Value> threadIds) {
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    gpu::KernelDim3 bids = launch.getBlockIds(), tids = launch.getThreadIds(),
                    gsizes = launch.getGridSize(),
                    bsizes = launch.getBlockSize();
    mapping.map(bids.x, blockIds[0]);
    mapping.map(bids.y, blockIds[1]);
    mapping.map(bids.z, blockIds[2]);
    mapping.map(tids.x, threadIds[0]);
    mapping.map(tids.y, threadIds[1]);
    mapping.map(tids.z, threadIds[2]);
    mapping.map(gsizes.x, grid.x);
    mapping.map(gsizes.y, grid.y);
    mapping.map(gsizes.z, grid.z);
    mapping.map(bsizes.x, block.x);
    mapping.map(bsizes.y, block.y);
    mapping.map(bsizes.z, block.z);
  }

  /// The GPU operations cloned into `root` from `launch`: barriers become
  /// calls of `barrier`, the dynamic shared memory `shared`, ids and sizes
  /// the values `mapping` gives the launch body's arguments; memrefs in GPU
  /// address spaces become host memrefs.
  static void replaceGPUOps(Operation *root, gpu::LaunchOp launch,
                            IRMapping &mapping, Value shared,
                            func::FuncOp barrier) {
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    gpu::KernelDim3 bids = launch.getBlockIds(), tids = launch.getThreadIds();
    SmallVector<Operation *> gpuOps;
    root->walk([&](Operation *op) {
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
    root->walk([&](Operation *op) {
      for (OpResult result : op->getResults())
        result.setType(onHost(result.getType()));
      for (Region &region : op->getRegions())
        for (Block &blk : region)
          for (BlockArgument arg : blk.getArguments())
            arg.setType(onHost(arg.getType()));
    });
  }

  /// A launch whose threads may see each other: loops over its blocks,
  /// each an OpenMP team of a thread per GPU thread.
  void lower(gpu::LaunchOp launch, func::FuncOp threadNum,
             func::FuncOp barrier) {
    Location loc = launch.getLoc();
    OpBuilder b(launch);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    Value bytes = launch.getDynamicSharedMemorySize();
    Value size =
        bytes ? arith::IndexCastOp::create(b, loc, b.getIndexType(), bytes)
                    .getResult()
              : zero;
    // One buffer for every block in turn (blocks run one after another),
    // freed after the last.
    Value shared = memref::AllocOp::create(
        b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type()),
        ValueRange{size}, b.getI64IntegerAttr(16));
    Value count = arith::MulIOp::create(
        b, loc, block.x, arith::MulIOp::create(b, loc, block.y, block.z));
    Value count32 = arith::IndexCastOp::create(b, loc, b.getI32Type(), count);
    scf::ForOp bz;
    SmallVector<Value, 3> blockIds = nestLoops(b, loc, grid, zero, one, &bz);
    omp::ParallelOperands clauses;
    clauses.numThreads = count32;
    auto team = omp::ParallelOp::create(b, loc, clauses);
    b.createBlock(&team.getRegion());
    SmallVector<Value, 3> threadIds =
        splitIndex(b, loc, callIndex(b, loc, threadNum), block);

    IRMapping mapping;
    mapKernelArguments(launch, mapping, blockIds, threadIds);
    // A kernel may return from any thread (gpu.terminator); the team's
    // threads each run the body once.
    for (Operation &op : launch.getBody().front().without_terminator())
      b.clone(op, mapping);
    omp::TerminatorOp::create(b, loc);
    replaceGPUOps(team, launch, mapping, shared, barrier);
    if (freeShared) {
      b.setInsertionPointAfter(bz);
      memref::DeallocOp::create(b, loc, shared);
    }
    launch->erase();
  }
};

} // namespace
