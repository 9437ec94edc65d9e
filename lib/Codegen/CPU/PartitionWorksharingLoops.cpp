//===- PartitionWorksharingLoops.cpp - Loop iterations by thread number ---===//
//
// An OpenMP worksharing loop that convert-scf-to-openmp made of an
// scf.parallel becomes an scf.for over the calling thread's share of the
// iterations, found from the thread's number in its team and the team's
// size (libomp's __kmpc_bound_thread_num and __kmpc_bound_num_threads): no
// call of the runtime's static scheduler and no barrier at the loop's end
// (the region's end joins the team).
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/Common/LinearIterations.h"
#include "WorksharingLoops.h"
#include "gptq/Codegen/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQPARTITIONWORKSHARINGLOOPS
#include "gptq/Codegen/CPU/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {
// The runtime's entry points for the calling thread's number in the
// innermost team and that team's size. Not omp_get_thread_num and
// omp_get_num_threads: a process may have loaded another OpenMP runtime
// first (libgomp, with PyTorch), whose functions of those names would be
// bound instead and know nothing of libomp's teams (every thread would
// take every iteration). The ident argument is not read.
constexpr StringLiteral kThreadNum = "__kmpc_bound_thread_num";
constexpr StringLiteral kNumThreads = "__kmpc_bound_num_threads";

/// Whether `wsloop` only shares its iterations out: the static schedule
/// without a chunk (the default), and no clause that needs the runtime
/// (reductions, privatization, ordered, linear, allocate).
bool plainStaticLoop(omp::WsloopOp wsloop) {
  std::optional<omp::ClauseScheduleKind> kind = wsloop.getScheduleKind();
  return (!kind || *kind == omp::ClauseScheduleKind::Static) &&
         !wsloop.getScheduleChunk() && wsloop.getReductionVars().empty() &&
         wsloop.getPrivateVars().empty() && !wsloop.getOrderedAttr() &&
         wsloop.getLinearVars().empty() && wsloop.getAllocateVars().empty();
}

/// The runtime function `name` of type (!llvm.ptr) -> i32, declared in
/// `module` when it is not; failure when the module defines the name
/// otherwise.
FailureOr<func::FuncOp> runtimeQuery(ModuleOp module, StringRef name) {
  OpBuilder b(module.getBodyRegion());
  FunctionType type = b.getFunctionType(
      {LLVM::LLVMPointerType::get(b.getContext())}, {b.getI32Type()});
  Operation *existing = module.lookupSymbol(name);
  if (!existing) {
    auto decl = func::FuncOp::create(b, module.getLoc(), name, type);
    decl.setPrivate();
    return decl;
  }
  auto func = dyn_cast<func::FuncOp>(existing);
  if (!func || func.getFunctionType() != type || !func.isDeclaration()) {
    existing->emitError() << "'" << name
                          << "' is the OpenMP runtime's: expected a "
                             "declaration of type (!llvm.ptr) -> i32";
    return failure();
  }
  return func;
}

/// Replaces the worksharing loop around `nest` by a loop over this
/// thread's share: the nest's iterations in order (the last dimension
/// fastest), split into as many contiguous runs as the team has threads,
/// of sizes that differ by at most one.
void partition(omp::LoopNestOp nest, func::FuncOp threadNum,
               func::FuncOp numThreads) {
  auto wsloop = cast<omp::WsloopOp>(nest->getParentOp());
  OpBuilder b(wsloop);
  Location loc = wsloop.getLoc();
  SmallVector<Value> counts = gptq::tripCounts(b, loc, nest);
  Value total = gptq::iterationCount(b, loc, counts);
  Value noIdent =
      LLVM::ZeroOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()));
  auto asIndex = [&](func::FuncOp query) -> Value {
    Value v =
        func::CallOp::create(b, loc, query, ValueRange{noIdent}).getResult(0);
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  };
  Value thread = asIndex(threadNum);
  Value threads = asIndex(numThreads);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value next = arith::AddIOp::create(b, loc, thread, one);
  auto share = [&](Value t) -> Value {
    Value scaled = arith::MulIOp::create(b, loc, t, total);
    return arith::DivUIOp::create(b, loc, scaled, threads);
  };
  Value first = share(thread), last = share(next);
  auto loop = scf::ForOp::create(b, loc, first, last, one);
  b.setInsertionPointToStart(loop.getBody());
  Block &body = nest.getRegion().front();
  IRMapping map;
  map.map(body.getArguments(),
          gptq::delinearizeIterations(b, loc, loop.getInductionVar(), counts,
                                      nest.getLoopLowerBounds(),
                                      nest.getLoopSteps()));
  for (Operation &op : body.without_terminator())
    b.clone(op, map);
  wsloop.erase();
}

struct GPTQPartitionWorksharingLoopsPass
    : gptq::impl::GPTQPartitionWorksharingLoopsBase<
          GPTQPartitionWorksharingLoopsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // In post order: a region nested in another's loop is rewritten before
    // the outer loop's body (which holds it) is cloned and erased.
    SmallVector<omp::LoopNestOp> nests;
    module.walk<WalkOrder::PostOrder>([&](omp::ParallelOp parallel) {
      omp::LoopNestOp nest = gptq::loneLoopNest(parallel);
      if (!nest || !nest.getRegion().hasOneBlock() ||
          !nest.getLoopLowerBounds().front().getType().isIndex() ||
          !plainStaticLoop(cast<omp::WsloopOp>(nest->getParentOp())))
        return;
      nests.push_back(nest);
    });
    if (nests.empty())
      return;
    FailureOr<func::FuncOp> threadNum = runtimeQuery(module, kThreadNum);
    FailureOr<func::FuncOp> numThreads = runtimeQuery(module, kNumThreads);
    if (failed(threadNum) || failed(numThreads))
      return signalPassFailure();
    for (omp::LoopNestOp nest : nests)
      partition(nest, *threadNum, *numThreads);
  }
};
} // namespace
