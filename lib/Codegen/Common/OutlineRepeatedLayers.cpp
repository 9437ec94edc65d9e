//===- OutlineRepeatedLayers.cpp - Repeated layers as one function --------===//
//
// A model's layers repeat the same ops on other weights. The longest run of
// identical segments of a function's body becomes one private function,
// called once per segment, so that a layer's code is lowered and generated
// once instead of once per layer.
//
//===----------------------------------------------------------------------===//

#include "gptq/Codegen/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Hashing.h"

#include <algorithm>
#include <map>
#include <set>

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQOUTLINEREPEATEDLAYERS
#include "gptq/Codegen/Common/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {

/// A constant of the function's body: moved to its start and left out of
/// the segments, which take it as an argument or a copy of their own.
bool isBodyConstant(Operation &op) {
  return op.hasTrait<OpTrait::ConstantLike>() && op.getNumOperands() == 0 &&
         op.getNumRegions() == 0 && op.getNumResults() == 1;
}

/// A slice of a tensor whose static offsets may differ between segments:
/// a layer's entry of the KV caches (`[layer, ...]`). The callee takes
/// those offsets as arguments; the result's type does not depend on them.
bool isTensorSlice(Operation *op) {
  return isa<tensor::ExtractSliceOp, tensor::InsertSliceOp>(op);
}

/// The op's attributes, less a tensor slice's static offsets.
DictionaryAttr attributesOtherThanOffsets(Operation *op) {
  DictionaryAttr attrs = op->getAttrDictionary();
  if (!isTensorSlice(op))
    return attrs;
  NamedAttrList list(attrs);
  list.erase(
      isa<tensor::ExtractSliceOp>(op)
          ? tensor::ExtractSliceOp::getStaticOffsetsAttrName(op->getName())
          : tensor::InsertSliceOp::getStaticOffsetsAttrName(op->getName()));
  return list.getDictionary(op->getContext());
}

/// A hash of what two equivalent ops share: name, attributes (but a tensor
/// slice's static offsets), types and nested ops, not which values they
/// read.
llvm::hash_code shapeHash(Operation *op) {
  llvm::hash_code hash =
      llvm::hash_combine(op->getName().getAsOpaquePointer(),
                         attributesOtherThanOffsets(op).getAsOpaquePointer(),
                         op->getNumOperands(), op->getNumRegions());
  for (Type type : op->getResultTypes())
    hash = llvm::hash_combine(hash, type.getAsOpaquePointer());
  for (Value operand : op->getOperands())
    hash = llvm::hash_combine(hash, operand.getType().getAsOpaquePointer());
  for (Region &region : op->getRegions())
    for (Block &block : region) {
      hash = llvm::hash_combine(hash, block.getNumArguments());
      for (BlockArgument arg : block.getArguments())
        hash = llvm::hash_combine(hash, arg.getType().getAsOpaquePointer());
      for (Operation &nested : block)
        hash = llvm::hash_combine(hash, shapeHash(&nested));
    }
  return hash;
}

/// Matches a segment against the base segment op by op: the same ops,
/// attributes and types, values of the base defined inside it matched to
/// the corresponding values of the other, and each value from outside the
/// base matched to one value from outside the other.
class SegmentMatch {
public:
  bool ops(ArrayRef<Operation *> base, ArrayRef<Operation *> other) {
    for (auto [a, b] : llvm::zip_equal(base, other))
      if (!op(a, b))
        return false;
    return true;
  }

  /// The other segment's value for `outside`, a value from outside the
  /// base; the value itself where the two segments read the same one.
  Value outsideValue(Value outside) const {
    return outsideMap.lookup_or(outside, outside);
  }

  /// Static offsets of the base's tensor slices that are another in the
  /// other segment: (slice, dimension) -> the other's offset.
  const std::map<std::pair<Operation *, unsigned>, int64_t> &offsets() const {
    return otherOffsets;
  }

private:
  /// The static offsets of two slices alike but for some static offsets:
  /// the differing ones recorded.
  bool sliceOffsets(Operation *a, Operation *b) {
    if (!isTensorSlice(a) ||
        attributesOtherThanOffsets(a) != attributesOtherThanOffsets(b))
      return false;
    // The callee's offset argument must be visible where the slice is.
    for (Operation *p = a->getParentOp(); p && !isa<func::FuncOp>(p);
         p = p->getParentOp())
      if (p->hasTrait<OpTrait::IsIsolatedFromAbove>())
        return false;
    ArrayRef<int64_t> x =
        cast<OffsetSizeAndStrideOpInterface>(a).getStaticOffsets();
    ArrayRef<int64_t> y =
        cast<OffsetSizeAndStrideOpInterface>(b).getStaticOffsets();
    for (unsigned d = 0; d < x.size(); ++d) {
      if (x[d] == y[d])
        continue;
      if (ShapedType::isDynamic(x[d]) || ShapedType::isDynamic(y[d]))
        return false;
      otherOffsets[{a, d}] = y[d];
    }
    return true;
  }

  bool op(Operation *a, Operation *b) {
    if (a->getName() != b->getName() ||
        (a->getAttrDictionary() != b->getAttrDictionary() &&
         !sliceOffsets(a, b)) ||
        a->getNumOperands() != b->getNumOperands() ||
        a->getNumResults() != b->getNumResults() ||
        a->getNumRegions() != b->getNumRegions() ||
        a->getNumSuccessors() != 0 || b->getNumSuccessors() != 0)
      return false;
    for (auto [x, y] : llvm::zip_equal(a->getOperands(), b->getOperands()))
      if (x.getType() != y.getType() || !value(x, y))
        return false;
    for (auto [x, y] : llvm::zip_equal(a->getResults(), b->getResults())) {
      if (x.getType() != y.getType())
        return false;
      mark(x, y);
    }
    for (auto [ra, rb] : llvm::zip_equal(a->getRegions(), b->getRegions())) {
      // Structured ops' regions: one block each.
      if (!ra.hasOneBlock() || !rb.hasOneBlock()) {
        if (ra.empty() && rb.empty())
          continue;
        return false;
      }
      Block &ba = ra.front(), &bb = rb.front();
      if (ba.getNumArguments() != bb.getNumArguments() ||
          ba.getOperations().size() != bb.getOperations().size())
        return false;
      for (auto [x, y] :
           llvm::zip_equal(ba.getArguments(), bb.getArguments())) {
        if (x.getType() != y.getType())
          return false;
        mark(x, y);
      }
      for (auto [x, y] : llvm::zip_equal(ba, bb))
        if (!op(&x, &y))
          return false;
    }
    return true;
  }

  bool value(Value x, Value y) {
    auto inside = insideMap.find(x);
    if (inside != insideMap.end())
      return inside->second == y;
    // A value of the base from outside it: the other reads one from outside
    // itself, the same one wherever the base reads `x`.
    if (otherInside.contains(y))
      return false;
    auto [it, inserted] = outsideMap.try_emplace(x, y);
    return it->second == y;
  }

  void mark(Value x, Value y) {
    insideMap[x] = y;
    otherInside.insert(y);
  }

  llvm::DenseMap<Value, Value> insideMap;
  llvm::DenseSet<Value> otherInside;
  llvm::DenseMap<Value, Value> outsideMap;
  std::map<std::pair<Operation *, unsigned>, int64_t> otherOffsets;
};

/// Segments [start + i * period, start + (i + 1) * period) of the body's
/// ops, i < count(), each equivalent to the first.
struct Run {
  size_t start = 0;
  size_t period = 0;
  std::vector<SegmentMatch> matches; // of segments 1, ..., count() - 1
  size_t count() const { return matches.size() + 1; }
};

/// Stretches of the op hashes that repeat with a period of at least
/// `minOps`, as (start, period, repeats), those that would save the most
/// ops first. Each period costs a pass over the hashes: in a body of more
/// ops than a model's layers make (an unrolled loop), periods stop where
/// the passes would reach about 10^8 comparisons.
SmallVector<std::tuple<size_t, size_t, size_t>>
periodicStretches(ArrayRef<llvm::hash_code> hashes, size_t minOps) {
  SmallVector<std::tuple<size_t, size_t, size_t>> found;
  size_t n = hashes.size();
  constexpr size_t kComparisons = 100'000'000;
  size_t maxPeriod =
      std::min(n / 2, std::max(kComparisons / std::max<size_t>(n, 1), minOps));
  for (size_t period = std::max<size_t>(minOps, 1); period <= maxPeriod;
       ++period) {
    size_t i = 0;
    while (i + period < n) {
      if (hashes[i] != hashes[i + period]) {
        ++i;
        continue;
      }
      size_t first = i;
      while (i + period < n && hashes[i] == hashes[i + period])
        ++i;
      // hashes[first, i + period) has the period.
      size_t repeats = (i + period - first) / period;
      if (repeats >= 2)
        found.emplace_back(first, period, repeats);
    }
  }
  llvm::stable_sort(found, [](auto &a, auto &b) {
    return (std::get<2>(a) - 1) * std::get<1>(a) >
           (std::get<2>(b) - 1) * std::get<1>(b);
  });
  return found;
}

class Outliner {
public:
  Outliner(func::FuncOp func, SymbolTable &symbols, size_t minOps)
      : func(func), body(func.getBody().front()), symbols(symbols),
        minOps(minOps) {}

  /// Outlines the best run of repeated segments; false if none.
  bool run() {
    for (Operation &op : body.without_terminator())
      if (!isBodyConstant(op))
        ops.push_back(&op);
    SmallVector<llvm::hash_code> hashes;
    for (Operation *op : ops)
      hashes.push_back(shapeHash(op));
    // The first few stretches that hold as a whole: hashes may collide,
    // and a segment may read what an earlier one computed where the base
    // computes it itself.
    constexpr unsigned kTries = 8;
    unsigned tries = 0;
    for (auto [start, period, repeats] : periodicStretches(hashes, minOps)) {
      if (tries++ == kTries)
        break;
      if (std::optional<Run> run = verify(start, period, repeats)) {
        outline(*run);
        return true;
      }
    }
    return false;
  }

private:
  /// A slice's static offset (the base's slice op, the dimension) that
  /// differs between segments.
  using Offset = std::pair<Operation *, unsigned>;

  /// What the callee takes and returns, computed before any segment is
  /// replaced.
  struct Interface {
    /// What the base reads from outside, in order of first use, and
    /// whether each is a constant copied into the callee (every segment
    /// reads an equal one) rather than an argument.
    SmallVector<Value> outside;
    SmallVector<bool> copied;
    /// (op index in the segment, result number) of each value that
    /// something after its segment reads, in any segment.
    SmallVector<std::pair<unsigned, unsigned>> results;
    /// The slice offsets that differ, in the order of the base's ops; the
    /// index argument each takes; each index argument's value per segment.
    SmallVector<Offset> varying;
    SmallVector<unsigned> offsetArg;
    SmallVector<std::vector<int64_t>> offsetArgValues;
  };

  ArrayRef<Operation *> segment(size_t start, size_t period, size_t i) const {
    return ArrayRef<Operation *>(ops).slice(start + i * period, period);
  }
  ArrayRef<Operation *> segment(const Run &run, size_t i) const {
    return segment(run.start, run.period, i);
  }

  /// The op of the body that holds `op` is outside segment `i`.
  bool outsideSegment(Operation *op, size_t i) const {
    Operation *top = body.findAncestorOpInBlock(*op);
    return !top || !members[i].contains(top);
  }

  /// The longest run of segments equivalent to their first within the
  /// stretch, or none of two segments or more.
  std::optional<Run> verify(size_t start, size_t period, size_t repeats) {
    std::optional<Run> best;
    for (size_t base = 0; base + 1 < repeats; ++base) {
      if (best && repeats - base <= best->count())
        break;
      Run run;
      run.start = start + base * period;
      run.period = period;
      for (size_t i = base + 1; i < repeats; ++i) {
        SegmentMatch match;
        if (!match.ops(segment(start, period, base), segment(start, period, i)))
          break;
        run.matches.push_back(std::move(match));
      }
      if (run.count() >= 2 && (!best || run.count() > best->count()))
        best = std::move(run);
    }
    return best;
  }

  void outline(const Run &run) {
    // Constants first, so that they dominate every call.
    SmallVector<Operation *> constants;
    for (Operation &op : body.without_terminator())
      if (isBodyConstant(op))
        constants.push_back(&op);
    for (Operation *op : llvm::reverse(constants))
      op->moveBefore(&body, body.begin());

    members.assign(run.count(), {});
    for (size_t i = 0; i < run.count(); ++i)
      members[i].insert(segment(run, i).begin(), segment(run, i).end());
    Interface interface;
    findOutside(run, interface);
    findResults(run, interface);
    findVaryingOffsets(run, interface);
    func::FuncOp callee = createCallee(run, interface);
    replaceSegments(run, interface, callee);
    // Constants that only the segments read are the callee's now.
    for (Operation *op : constants)
      if (op->use_empty())
        op->erase();
  }

  /// Segment `i`'s value where the base reads `v` from outside.
  Value valueIn(const Run &run, size_t i, Value v) const {
    return i == 0 ? v : run.matches[i - 1].outsideValue(v);
  }

  void findOutside(const Run &run, Interface &interface) const {
    llvm::DenseSet<Value> seen;
    for (Operation *op : segment(run, 0))
      op->walk<WalkOrder::PreOrder>([&](Operation *nested) {
        for (Value v : nested->getOperands()) {
          Operation *def = v.getDefiningOp();
          Operation *owner = def ? def : v.getParentBlock()->getParentOp();
          if (outsideSegment(owner, 0) && seen.insert(v).second)
            interface.outside.push_back(v);
        }
      });
    for (Value v : interface.outside) {
      Operation *def = v.getDefiningOp();
      bool same = def && def->getBlock() == &body && isBodyConstant(*def);
      for (size_t i = 1; same && i < run.count(); ++i) {
        Operation *other = valueIn(run, i, v).getDefiningOp();
        same = other && other->getName() == def->getName() &&
               other->getAttrDictionary() == def->getAttrDictionary() &&
               other->getResultTypes() == def->getResultTypes();
      }
      interface.copied.push_back(same);
    }
  }

  void findResults(const Run &run, Interface &interface) const {
    for (auto [index, op] : llvm::enumerate(segment(run, 0)))
      for (unsigned r = 0; r < op->getNumResults(); ++r)
        for (size_t i = 0; i < run.count(); ++i) {
          Value v = segment(run, i)[index]->getResult(r);
          if (llvm::any_of(v.getUses(), [&](OpOperand &use) {
                return outsideSegment(use.getOwner(), i);
              })) {
            interface.results.emplace_back(index, r);
            break;
          }
        }
  }

  void findVaryingOffsets(const Run &run, Interface &interface) const {
    llvm::DenseMap<Operation *, unsigned> order;
    for (Operation *op : segment(run, 0))
      op->walk<WalkOrder::PreOrder>(
          [&](Operation *nested) { order.try_emplace(nested, order.size()); });
    std::set<Offset> keys;
    for (const SegmentMatch &match : run.matches)
      for (const auto &entry : match.offsets())
        keys.insert(entry.first);
    interface.varying.assign(keys.begin(), keys.end());
    llvm::sort(interface.varying, [&](Offset a, Offset b) {
      return std::make_pair(order.lookup(a.first), a.second) <
             std::make_pair(order.lookup(b.first), b.second);
    });
    // One argument per distinct sequence of offsets over the segments (a
    // layer's index, wherever its slices use it).
    std::map<std::vector<int64_t>, unsigned> argOf;
    for (Offset slice : interface.varying) {
      int64_t own = cast<OffsetSizeAndStrideOpInterface>(slice.first)
                        .getStaticOffsets()[slice.second];
      std::vector<int64_t> values = {own};
      for (const SegmentMatch &match : run.matches)
        values.push_back(
            match.offsets().count(slice) ? match.offsets().at(slice) : own);
      auto [it, inserted] =
          argOf.try_emplace(values, interface.offsetArgValues.size());
      if (inserted)
        interface.offsetArgValues.push_back(values);
      interface.offsetArg.push_back(it->second);
    }
  }

  /// The callee: the base segment's ops, each located at its ops in every
  /// segment (a diagnostic or a failed run-time check names all of them).
  func::FuncOp createCallee(const Run &run, const Interface &interface) {
    MLIRContext *ctx = func.getContext();
    ArrayRef<Operation *> base = segment(run, 0);
    SmallVector<Type> argTypes, resultTypes;
    for (auto [v, copy] : llvm::zip_equal(interface.outside, interface.copied))
      if (!copy)
        argTypes.push_back(v.getType());
    unsigned firstOffsetArg = argTypes.size();
    argTypes.append(interface.offsetArgValues.size(), IndexType::get(ctx));
    for (auto [index, r] : interface.results)
      resultTypes.push_back(base[index]->getResult(r).getType());
    OpBuilder b(ctx);
    auto callee = func::FuncOp::create(
        b, func.getLoc(), (func.getSymName() + "_layer").str(),
        FunctionType::get(ctx, argTypes, resultTypes));
    callee.setPrivate();
    symbols.insert(callee, std::next(Block::iterator(func)));
    Block *entry = callee.addEntryBlock();
    b.setInsertionPointToStart(entry);
    IRMapping map;
    unsigned arg = 0;
    for (auto [v, copy] : llvm::zip_equal(interface.outside, interface.copied))
      map.map(v, copy ? Value(b.clone(*v.getDefiningOp())->getResult(0))
                      : Value(entry->getArgument(arg++)));
    for (auto [index, op] : llvm::enumerate(base)) {
      Operation *clone = b.clone(*op, map);
      SmallVector<SmallVector<Operation *>> nested(run.count());
      for (size_t i = 0; i < run.count(); ++i)
        segment(run, i)[index]->walk<WalkOrder::PreOrder>(
            [&](Operation *o) { nested[i].push_back(o); });
      size_t position = 0;
      clone->walk<WalkOrder::PreOrder>([&](Operation *o) {
        SmallVector<Location> locs;
        for (size_t i = 0; i < run.count(); ++i)
          locs.push_back(nested[i][position]->getLoc());
        o->setLoc(FusedLoc::get(ctx, locs));
        ++position;
      });
    }
    SmallVector<Value> returned;
    for (auto [index, r] : interface.results)
      returned.push_back(map.lookup(base[index]->getResult(r)));
    func::ReturnOp::create(b, func.getLoc(), returned);
    // The callee's slices take the varying offsets from its arguments.
    for (auto [slice, k] :
         llvm::zip_equal(interface.varying, interface.offsetArg)) {
      Operation *clone = map.lookup(slice.first);
      b.setInsertionPoint(clone);
      SmallVector<OpFoldResult> offsets =
          cast<OffsetSizeAndStrideOpInterface>(clone).getMixedOffsets();
      offsets[slice.second] = entry->getArgument(firstOffsetArg + k);
      Operation *replacement;
      if (auto extract = dyn_cast<tensor::ExtractSliceOp>(clone))
        replacement = tensor::ExtractSliceOp::create(
            b, clone->getLoc(), extract.getType(), extract.getSource(), offsets,
            extract.getMixedSizes(), extract.getMixedStrides());
      else {
        auto insert = cast<tensor::InsertSliceOp>(clone);
        replacement = tensor::InsertSliceOp::create(
            b, clone->getLoc(), insert.getSource(), insert.getDest(), offsets,
            insert.getMixedSizes(), insert.getMixedStrides());
      }
      clone->replaceAllUsesWith(replacement);
      map.map(slice.first, replacement);
      clone->erase();
    }
    return callee;
  }

  /// Each segment becomes a call. A segment may read what an earlier one
  /// computed: that value is now the earlier call's result.
  void replaceSegments(const Run &run, const Interface &interface,
                       func::FuncOp callee) {
    OpBuilder b(func.getContext());
    llvm::DenseMap<Value, Value> replaced;
    for (size_t i = 0; i < run.count(); ++i) {
      ArrayRef<Operation *> seg = segment(run, i);
      SmallVector<Value> args;
      for (auto [v, copy] :
           llvm::zip_equal(interface.outside, interface.copied))
        if (!copy) {
          Value value = valueIn(run, i, v);
          args.push_back(replaced.lookup_or(value, value));
        }
      b.setInsertionPoint(seg.front());
      for (const std::vector<int64_t> &values : interface.offsetArgValues)
        args.push_back(arith::ConstantIndexOp::create(b, seg.front()->getLoc(),
                                                      values[i]));
      auto call = func::CallOp::create(b, seg.front()->getLoc(), callee, args);
      call.setNoInline(true);
      for (auto [result, position] :
           llvm::zip_equal(call.getResults(), interface.results)) {
        Value v = seg[position.first]->getResult(position.second);
        replaced[v] = result;
        v.replaceUsesWithIf(result, [&](OpOperand &use) {
          return outsideSegment(use.getOwner(), i);
        });
      }
      for (Operation *op : llvm::reverse(seg))
        op->erase();
    }
  }

  func::FuncOp func;
  Block &body;
  SymbolTable &symbols;
  size_t minOps;
  /// The body's ops but its constants and terminator.
  SmallVector<Operation *> ops;
  /// The ops of each segment of the run being outlined.
  SmallVector<llvm::DenseSet<Operation *>> members;
};

struct GPTQOutlineRepeatedLayersPass
    : gptq::impl::GPTQOutlineRepeatedLayersBase<GPTQOutlineRepeatedLayersPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> funcs;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && func.getBody().hasOneBlock())
        funcs.push_back(func);
    for (func::FuncOp func : funcs) {
      Outliner outliner(func, symbols, minOps);
      outliner.run();
    }
  }
};
} // namespace
