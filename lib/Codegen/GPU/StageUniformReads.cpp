//===- StageUniformReads.cpp - Block-wide reads into shared memory --------===//
//
// A matrix that every thread of a kernel reads at the same indices (U's
// block in the quantize-and-compensate column loop, read by each thread for
// its own row of W) is copied once per block into dynamic shared memory,
// and the threads read the copy.
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/GPU/Passes.h"
#include "SharedMemory.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQSTAGEUNIFORMREADS
#include "gptq/Codegen/GPU/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {

/// Whether values inside a gpu.launch are the same in every thread of a
/// block: values from outside, block ids and sizes, pure ops of uniform
/// values, and induction variables of scf.for loops with uniform bounds.
class Uniformity {
public:
  explicit Uniformity(gpu::LaunchOp launch) : launch(launch) {
    for (Value id : {launch.getThreadIds().x, launch.getThreadIds().y,
                     launch.getThreadIds().z})
      memo[id] = false;
  }

  bool isUniform(Value v) {
    auto it = memo.find(v);
    if (it != memo.end())
      return it->second;
    memo[v] = false; // Values on a cycle are not uniform.
    bool uniform = compute(v);
    memo[v] = uniform;
    return uniform;
  }

private:
  bool compute(Value v) {
    Region &body = launch.getBody();
    if (!body.isAncestor(v.getParentRegion()))
      return true;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      Block *owner = arg.getOwner();
      if (owner == &body.front())
        return true; // Block ids, grid and block sizes (thread ids are in memo).
      auto loop = dyn_cast<scf::ForOp>(owner->getParentOp());
      if (!loop || arg != loop.getInductionVar())
        return false;
      return isUniform(loop.getLowerBound()) &&
             isUniform(loop.getUpperBound()) && isUniform(loop.getStep());
    }
    Operation *op = v.getDefiningOp();
    if (!isPure(op) || op->getNumRegions())
      return false;
    return llvm::all_of(op->getOperands(),
                        [&](Value operand) { return isUniform(operand); });
  }

  gpu::LaunchOp launch;
  DenseMap<Value, bool> memo;
};

/// Whether every use of `v` inside `body` reads it at uniform indices:
/// loads, dims, and subviews (with uniform operands) whose uses are such.
/// Sets `loads` when at least one load was found.
bool onlyUniformReads(Value v, Region &body, Uniformity &uniformity,
                      bool &loads) {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (!body.isAncestor(user->getParentRegion()))
      continue;
    if (auto load = dyn_cast<memref::LoadOp>(user)) {
      if (!llvm::all_of(load.getIndices(), [&](Value index) {
            return uniformity.isUniform(index);
          }))
        return false;
      loads = true;
      continue;
    }
    if (isa<memref::DimOp>(user))
      continue;
    if (auto subview = dyn_cast<memref::SubViewOp>(user)) {
      if (use.getOperandNumber() != 0 ||
          !llvm::all_of(subview->getOperands().drop_front(), [&](Value o) {
            return uniformity.isUniform(o);
          }) ||
          !onlyUniformReads(subview.getResult(), body, uniformity, loads))
        return false;
      continue;
    }
    return false;
  }
  return true;
}

/// Whether a memref of this type can be copied element by element into
/// shared memory: ranked, rank 1 to 3, strided, in the default memory
/// space, with integer or float elements of whole bytes.
bool stageable(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || memref.getRank() < 1 || memref.getRank() > 3 ||
      memref.getMemorySpace() || !memref.isStrided())
    return false;
  Type element = memref.getElementType();
  if (!element.isIntOrFloat())
    return false;
  unsigned bits = element.getIntOrFloatBitWidth();
  return bits >= 8 && bits % 8 == 0;
}

/// Points the uses of `from` inside `region` at `to` (a staged copy, or a
/// subview of one): loads and dims take it as it is, subviews are rebuilt
/// on it with the same offsets, sizes and strides.
void redirect(Value from, Value to, Region &region) {
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : from.getUses())
    if (region.isAncestor(use.getOwner()->getParentRegion()))
      uses.push_back(&use);
  for (OpOperand *use : uses) {
    Operation *user = use->getOwner();
    auto subview = dyn_cast<memref::SubViewOp>(user);
    if (!subview) {
      use->set(to);
      continue;
    }
    OpBuilder b(subview);
    auto source = cast<MemRefType>(to.getType());
    MemRefType type = memref::SubViewOp::inferRankReducedResultType(
        subview.getType().getShape(), source, subview.getMixedOffsets(),
        subview.getMixedSizes(), subview.getMixedStrides());
    auto staged = memref::SubViewOp::create(
        b, subview.getLoc(), type, to, subview.getMixedOffsets(),
        subview.getMixedSizes(), subview.getMixedStrides());
    redirect(subview.getResult(), staged.getResult(), region);
    subview->erase();
  }
}

/// The buffer a view of memory comes from.
Value rootOf(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// Whether two memrefs may share memory: views of the same buffer, or of
/// two buffers that are not both fresh allocations (function arguments may
/// alias each other).
bool mayAlias(Value a, Value b) {
  auto fresh = [](Value root) {
    return root.getDefiningOp<memref::AllocOp>() ||
           root.getDefiningOp<memref::AllocaOp>() ||
           root.getDefiningOp<gpu::AllocOp>();
  };
  Value ra = rootOf(a), rb = rootOf(b);
  return ra == rb || (!fresh(ra) && !fresh(rb));
}

/// The memrefs that ops in `body` may write: those with a write effect, and
/// every memref operand of an op that does not state its effects.
SmallVector<Value> writtenMemrefs(Region &body) {
  SmallVector<Value> written;
  body.walk([&](Operation *op) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects) {
      if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
        return;
      for (Value operand : op->getOperands())
        if (isa<BaseMemRefType>(operand.getType()))
          written.push_back(operand);
      return;
    }
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (auto &instance : instances)
      if (isa<MemoryEffects::Write>(instance.getEffect()) &&
          instance.getValue() &&
          isa<BaseMemRefType>(instance.getValue().getType()))
        written.push_back(instance.getValue());
  });
  return written;
}

struct GPTQStageUniformReadsPass
    : gptq::impl::GPTQStageUniformReadsBase<GPTQStageUniformReadsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (maxBytes < 0 || maxBytes > INT32_MAX) {
      getOperation().emitError()
          << "gptq-stage-uniform-reads: max-bytes must be between 0 and "
          << INT32_MAX;
      return signalPassFailure();
    }
    SmallVector<gpu::LaunchOp> launches;
    getOperation().walk([&](gpu::LaunchOp launch) {
      launches.push_back(launch);
    });
    for (gpu::LaunchOp launch : launches)
      stage(launch);
  }

  void stage(gpu::LaunchOp launch) {
    Region &body = launch.getBody();
    if (launch.getDynamicSharedMemorySize() || !body.hasOneBlock())
      return;
    SetVector<Value> above;
    getUsedValuesDefinedAbove(body, above);
    Uniformity uniformity(launch);
    SmallVector<Value> written = writtenMemrefs(body);
    SmallVector<Value> staged;
    for (Value v : above) {
      bool loads = false;
      // A copy made as the launch starts must read what the loads would:
      // nothing in the launch may write the memory it comes from.
      if (stageable(v.getType()) &&
          onlyUniformReads(v, body, uniformity, loads) && loads &&
          llvm::none_of(written, [&](Value w) { return mayAlias(v, w); }))
        staged.push_back(v);
    }
    if (staged.empty())
      return;

    // Sizes, offsets and the check of the total, before the launch.
    Location loc = launch.getLoc();
    OpBuilder b(launch);
    auto constant = [&](int64_t c) -> Value {
      return arith::ConstantIndexOp::create(b, loc, c);
    };
    SmallVector<SmallVector<Value>> dims;
    SmallVector<Value> counts, offsets;
    Value total = constant(0);
    for (Value v : staged) {
      auto type = cast<MemRefType>(v.getType());
      SmallVector<Value> sizes;
      Value count = constant(1);
      for (int64_t d = 0; d < type.getRank(); ++d) {
        Value size = type.isDynamicDim(d)
                         ? memref::DimOp::create(b, loc, v, d).getResult()
                         : constant(type.getDimSize(d));
        sizes.push_back(size);
        count = arith::MulIOp::create(b, loc, count, size);
      }
      dims.push_back(sizes);
      counts.push_back(count);
      offsets.push_back(total);
      int64_t elementBytes = type.getElementTypeBitWidth() / 8;
      Value bytes =
          arith::MulIOp::create(b, loc, count, constant(elementBytes));
      Value padded = arith::MulIOp::create(
          b, loc, arith::CeilDivUIOp::create(b, loc, bytes, constant(16)),
          constant(16));
      total = arith::AddIOp::create(b, loc, total, padded);
    }
    Value fits = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                                       total, constant(maxBytes));
    Value asked = arith::SelectOp::create(b, loc, fits, total, constant(0));
    Value asked32 =
        arith::IndexCastOp::create(b, loc, b.getI32Type(), asked);
    launch.getDynamicSharedMemorySizeMutable().assign(asked32);

    // The body twice: staged when the matrices fit, as it was otherwise.
    Block &block = body.front();
    Operation *terminator = block.getTerminator();
    b.setInsertionPointToStart(&block);
    auto choice = scf::IfOp::create(b, loc, TypeRange{}, fits,
                                    /*withElseRegion=*/true);
    Block *otherwise = choice.elseBlock();
    otherwise->getOperations().splice(
        otherwise->getTerminator()->getIterator(), block.getOperations(),
        std::next(choice->getIterator()), terminator->getIterator());

    Block *then = choice.thenBlock();
    b.setInsertionPoint(then->getTerminator());
    auto workgroup = gptq::workgroupSpace(b.getContext());
    Value shared = gptq::dynamicSharedMemory(b, loc);
    SmallVector<Value> copies;
    for (auto [i, v] : llvm::enumerate(staged)) {
      auto type = cast<MemRefType>(v.getType());
      SmallVector<Value> dynamicSizes;
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (type.isDynamicDim(d))
          dynamicSizes.push_back(dims[i][d]);
      auto copyType = MemRefType::get(type.getShape(), type.getElementType(),
                                      MemRefLayoutAttrInterface(), workgroup);
      copies.push_back(memref::ViewOp::create(b, loc, copyType, shared,
                                              offsets[i], dynamicSizes));
    }
    // The body, reading the copies...
    Operation *firstOfBody = nullptr;
    IRMapping mapping;
    for (Operation &op : otherwise->without_terminator()) {
      Operation *clone = b.clone(op, mapping);
      if (!firstOfBody)
        firstOfBody = clone;
    }
    for (auto [v, copy] : llvm::zip(staged, copies))
      redirect(v, copy, choice.getThenRegion());
    // ...once the block's threads have made them. Consecutive threads (x
    // fastest) take consecutive elements.
    if (firstOfBody)
      b.setInsertionPoint(firstOfBody);
    gpu::KernelDim3 bsize = launch.getBlockSize();
    Value linear = gptq::linearThreadId(b, loc, launch);
    Value threads = arith::MulIOp::create(
        b, loc, bsize.x, arith::MulIOp::create(b, loc, bsize.y, bsize.z));
    for (auto [i, v] : llvm::enumerate(staged)) {
      auto type = cast<MemRefType>(v.getType());
      auto loop = scf::ForOp::create(b, loc, linear, counts[i], threads);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(loop.getBody()->getTerminator());
      SmallVector<Value> indices(type.getRank());
      Value rest = loop.getInductionVar();
      for (int64_t d = type.getRank() - 1; d > 0; --d) {
        indices[d] = arith::RemUIOp::create(b, loc, rest, dims[i][d]);
        rest = arith::DivUIOp::create(b, loc, rest, dims[i][d]);
      }
      indices[0] = rest;
      Value element = memref::LoadOp::create(b, loc, v, indices);
      memref::StoreOp::create(b, loc, element, copies[i], indices);
    }
    gpu::BarrierOp::create(b, loc);
  }
};

} // namespace
