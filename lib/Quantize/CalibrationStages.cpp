//===- CalibrationStages.cpp - The entry cut into calibration stages ------===//
//
// Cuts a model's entry function into calibration stages and splits each into
// the function that accumulates its Hessians and the one that propagates
// its quantized outputs (CalibrationStages.h).
//
//===----------------------------------------------------------------------===//

#include "gptq/Quantize/CalibrationStages.h"
#include "gptq/Quantize/ExpertDispatch.h"

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseSet.h"

#include <map>

using namespace mlir;
using namespace mlir::gptq;

namespace {
/// The state of one cut: the entry, its layers, and the stages so far.
struct StageCutter {
  StageCutter(ModuleOp module, func::FuncOp func,
              ArrayRef<const LinearLayer *> layers, ArrayRef<bool> calibrated,
              const llvm::DenseMap<Operation *, unsigned> &layerOfWeight,
              const StageCutOptions &options, StringRef passName)
      : module(module), func(func), layers(layers), calibrated(calibrated),
        layerOfWeight(layerOfWeight), sequential(options.sequential),
        passName(passName), experts(options.experts),
        hessianBudget(options.hessianBudget), stageOf(layers.size(), -1) {}

  ModuleOp module;
  func::FuncOp func;
  ArrayRef<const LinearLayer *> layers;
  ArrayRef<bool> calibrated;
  const llvm::DenseMap<Operation *, unsigned> &layerOfWeight;
  CalibrationOrder sequential;
  StringRef passName;
  ExpertCalibration experts;
  uint64_t hessianBudget;

  llvm::DenseMap<Operation *, unsigned> opIndex;
  std::vector<std::shared_ptr<CalibrationStage>> stages;
  std::vector<int64_t> stageOf;
  llvm::DenseMap<Value, bool> dataCarrying;
  /// The ops between each layer's weight source and its contraction (the
  /// casts, transposes and broadcasts that gptq-list-linears sees through):
  /// like constants, they belong to no stage and are made again in each
  /// stage that reads them, from the weight itself, so that a stage's
  /// second function computes its layers from their quantized weights.
  llvm::DenseSet<Operation *> weightChain;
  /// ExpertCalibration::All: the slices of a dispatch (dispatchSlices in
  /// ExpertDispatch.h), and
  /// each value of the entry that the stages compute over all the rows of
  /// one, with the slice's offset and size (values of the entry).
  llvm::DenseSet<Operation *> dispatch;
  struct RowSlice {
    Value offset, size;
  };
  llvm::DenseMap<Value, RowSlice> wideRows;
  /// Of each dispatch slice, the matrix it slices (both of the entry).
  llvm::DenseMap<Value, Value> slicedMatrix;

  InFlightDiagnostic fail(Location loc) {
    return emitError(loc) << passName << ": ";
  }

  LogicalResult build();
  /// The stages' groups of layers: groupLayers(), each cut to the Hessian
  /// budget with sequential=layers.
  std::vector<std::vector<unsigned>> stageGroups();
  /// Fills weightChain.
  void collectWeightChains();
  /// Makes a stage of each group, in order, each extended to the op before
  /// the next stage's first layer.
  LogicalResult createStages(std::vector<std::vector<unsigned>> &groups);
  /// Builds stage `index`'s function: the entry's ops of its range, with
  /// the Hessian accumulations of its layers.
  LogicalResult fillStage(unsigned index);
  /// Accumulates the Hessian of layer `m` (of the stage's op `op`) from
  /// `activation`, the stage's value of the layer's input.
  void accumulateHessian(CalibrationStage &stage, unsigned m, Operation &op,
                         Value activation, OpBuilder &b);
  /// Returns the stage's results, brings along the symbols it refers to,
  /// splits it and verifies its parts.
  LogicalResult finishStage(CalibrationStage &stage);
  /// The groups of layers to calibrate, in order (before the Hessian
  /// budget cuts them).
  std::vector<std::vector<unsigned>> groupLayers();
  /// `group` cut, in program order, into runs whose Hessians stay within
  /// hessianBudget.
  std::vector<std::vector<unsigned>> cutToBudget(std::vector<unsigned> group);
  /// Whether a constant of the entry becomes an argument of the stages that
  /// read it (large constants, layer weights) rather than being copied in.
  bool isStageArgument(Operation *op);
  /// Whether a tensor of the entry holds data from its arguments or large
  /// constants, rather than from scalars alone.
  bool carriesData(Value value);
  void splitStage(CalibrationStage &stage);
  LogicalResult materialize(CalibrationStage &stage, unsigned index,
                            Value value, OpBuilder &b);
  BlockArgument addArg(CalibrationStage &stage, Value original, StageArg arg,
                       Type type, OpBuilder &b);
  /// ExpertCalibration::All: clones `op` into the stage over all the rows
  /// of the dispatch its row-aligned operands come from, when it computes
  /// them row by row; false (nothing made) otherwise.
  bool cloneWide(CalibrationStage &stage, unsigned index, Operation &op,
                 OpBuilder &b);
  /// Maps `value` (of the entry) in the stage to the rows `slice` selects of
  /// `wide`, its stage value over all rows.
  LogicalResult mapRouted(CalibrationStage &stage, unsigned index, Value value,
                          Value wide, OpBuilder &b);
  /// The stage's value of `value` as it crosses to later stages: over all
  /// rows where the stage computes it so.
  Value crossing(CalibrationStage &stage, Value value) {
    auto it = stage.wide.find(value);
    return it != stage.wide.end() ? it->second : stage.map.lookup(value);
  }
};
} // namespace

/// The values of an `arith.constant` of elements or of a load of an
/// immutable global (loadedImmutableGlobal); null otherwise.
ElementsAttr mlir::gptq::constantElements(Operation *op) {
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    return dyn_cast<ElementsAttr>(constant.getValue());
  Operation *global = loadedImmutableGlobal(op);
  if (!global)
    return {};
  return dyn_cast<ElementsAttr>(*cast<ml_program::GlobalOp>(global).getValue());
}

/// A float constant of at least 16 elements that is not a splat: such
/// constants become arguments of the stages, so that stages that differ only
/// in their weights share compiled code.
static bool isLargeConstant(Operation *op) {
  ElementsAttr attr = constantElements(op);
  if (!attr || attr.isSplat())
    return false;
  auto type = cast<ShapedType>(attr.getType());
  Type element = type.getElementType();
  return type.hasStaticShape() && type.getNumElements() >= 16 &&
         (element.isF32() || element.isF64() || element.isF16() ||
          element.isBF16());
}

/// An op whose results are computed from constants alone (the widening of a
/// bf16 weight, say): made again wherever it is used, like a constant.
static bool isConstantDerived(Operation *op) {
  if (op->getNumRegions() != 0 || op->getNumOperands() == 0 ||
      op->hasTrait<OpTrait::ConstantLike>() || !isMemoryEffectFree(op))
    return false;
  return llvm::all_of(op->getOperands(), [](Value v) {
    Operation *def = v.getDefiningOp();
    return def && (def->hasTrait<OpTrait::ConstantLike>() ||
                   loadedImmutableGlobal(def));
  });
}

/// The values used by `op` or inside its regions that are defined outside
/// it.
static llvm::SetVector<Value> usedValues(Operation *op) {
  llvm::SetVector<Value> used;
  used.insert(op->getOperands().begin(), op->getOperands().end());
  getUsedValuesDefinedAbove(op->getRegions(), used);
  return used;
}

/// Whether a tensor's contents come from a source (`isSource`: arguments,
/// weights) rather than from scalars and small constants alone, as an empty
/// or zero-filled init tensor's do. Such tensors are made again where they
/// are needed rather than kept for every sample.
static bool carriesData(Value value, llvm::function_ref<bool(Value)> isSource,
                        llvm::DenseMap<Value, bool> &memo) {
  if (!isa<RankedTensorType>(value.getType()))
    return false;
  if (isSource(value))
    return true;
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  if (auto it = memo.find(value); it != memo.end())
    return it->second;
  bool result = llvm::any_of(
      usedValues(def), [&](Value v) { return carriesData(v, isSource, memo); });
  memo[value] = result;
  return result;
}

bool StageCutter::isStageArgument(Operation *op) {
  // A layer's weight is an argument whatever its size: the stage's second
  // function reads the quantized one.
  return isLargeConstant(op) || layerOfWeight.contains(op);
}

bool StageCutter::carriesData(Value value) {
  return ::carriesData(
      value,
      [&](Value v) {
        Operation *def = v.getDefiningOp();
        return !def || isStageArgument(def);
      },
      dataCarrying);
}

BlockArgument StageCutter::addArg(CalibrationStage &stage, Value original,
                                  StageArg arg, Type type, OpBuilder &b) {
  Block &body = stage.func.getBody().front();
  BlockArgument blockArg = body.addArgument(type, stage.func.getLoc());
  if (original)
    stage.map.map(original, blockArg);
  stage.args.push_back(arg);
  return blockArg;
}

LogicalResult StageCutter::materialize(CalibrationStage &stage, unsigned index,
                                       Value value, OpBuilder &b) {
  if (stage.map.contains(value))
    return success();
  Block &entryBody = func.getBody().front();
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    if (arg.getOwner() != &entryBody)
      return failure();
    StageArg a{StageArg::Input};
    a.number = arg.getArgNumber();
    addArg(stage, value, a, value.getType(), b);
    return success();
  }
  Operation *def = value.getDefiningOp();
  if (isStageArgument(def)) {
    StageArg a{StageArg::Constant};
    a.constant = def;
    addArg(stage, value, a, value.getType(), b);
    return success();
  }
  auto cloneWithOperands = [&]() -> LogicalResult {
    for (Value operand : usedValues(def))
      if (failed(materialize(stage, index, operand, b)))
        return failure();
    b.clone(*def, stage.map);
    return success();
  };
  if (def->hasTrait<OpTrait::ConstantLike>() || loadedImmutableGlobal(def) ||
      isConstantDerived(def) || weightChain.contains(def))
    return cloneWithOperands();
  auto it = opIndex.find(def);
  if (it == opIndex.end())
    return failure();
  // Which stage computes it.
  unsigned from = 0;
  while (from < stages.size() && stages[from]->end < it->second)
    ++from;
  if (from >= index)
    return failure();
  // A tensor made from scalars alone (an empty or zero-filled init) is made
  // again rather than kept for every sample.
  if (isa<RankedTensorType>(value.getType()) && !carriesData(value)) {
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(def->getRegions(), above);
    if (above.empty() && isMemoryEffectFree(def))
      return cloneWithOperands();
  }
  if (isa<RankedTensorType>(value.getType())) {
    // Computed over all rows where it is made (ExpertCalibration::All), a
    // dispatch slice crosses as the matrix it slices, which the other
    // experts' slices read too; its routed rows are sliced here.
    bool wide = stages[from]->wide.contains(value);
    if (Value matrix = wide ? slicedMatrix.lookup(value) : Value()) {
      if (failed(materialize(stage, index, matrix, b)))
        return failure();
      return mapRouted(stage, index, value, stage.map.lookup(matrix), b);
    }
    stages[from]->outputs.insert(value);
    StageArg a{StageArg::Crossing};
    a.value = value;
    if (!wide) {
      addArg(stage, value, a, value.getType(), b);
      return success();
    }
    // Another value computed over all rows crosses so.
    BlockArgument arg = addArg(stage, nullptr, a, value.getType(), b);
    return mapRouted(stage, index, value, arg, b);
  }
  // Scalars (sizes, flags) are computed again where they are needed.
  if (!isMemoryEffectFree(def) || def->getNumRegions() != 0) {
    fail(def->getLoc()) << "cannot split '@" << func.getSymName()
                        << "' into calibration stages: a value of type "
                        << value.getType()
                        << " flows from one stage to another and is not a "
                           "tensor or a pure computation; use sequential=none";
    return failure();
  }
  return cloneWithOperands();
}

/// The rows of a calibration input `[..., in]` (the product of its leading
/// dimensions), as a 0-d i64 tensor.
static Value rowCount(OpBuilder &b, Location loc, Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  Value rows = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t d = 0; d + 1 < type.getRank(); ++d)
    rows = arith::MulIOp::create(b, loc, rows,
                                 tensor::DimOp::create(b, loc, input, d));
  Value count =
      arith::IndexCastOp::create(b, loc, b.getI64Type(), rows).getResult();
  return tensor::FromElementsOp::create(
      b, loc, RankedTensorType::get({}, b.getI64Type()), count);
}

LogicalResult StageCutter::mapRouted(CalibrationStage &stage, unsigned index,
                                     Value value, Value wide, OpBuilder &b) {
  RowSlice rows = wideRows.lookup(value);
  if (failed(materialize(stage, index, rows.offset, b)) ||
      failed(materialize(stage, index, rows.size, b)))
    return failure();
  auto type = cast<RankedTensorType>(value.getType());
  Location loc = value.getLoc();
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  SmallVector<OpFoldResult> sizes = {stage.map.lookup(rows.size)};
  offsets[0] = stage.map.lookup(rows.offset);
  for (int64_t d = 1; d < type.getRank(); ++d)
    sizes.push_back(
        type.isDynamicDim(d)
            ? OpFoldResult(tensor::DimOp::create(b, loc, wide, d).getResult())
            : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
  Value routed = tensor::ExtractSliceOp::create(b, loc, type, wide, offsets,
                                                sizes, strides);
  stage.map.map(value, routed);
  stage.wide[value] = wide;
  return success();
}

bool StageCutter::cloneWide(CalibrationStage &stage, unsigned index,
                            Operation &op, OpBuilder &b) {
  if (dispatch.contains(&op)) {
    // The routed rows as the model slices them; over all rows, the matrix.
    auto slice = cast<tensor::ExtractSliceOp>(op);
    b.clone(op, stage.map);
    stage.wide[slice.getResult()] = stage.map.lookup(slice.getSource());
    wideRows[slice.getResult()] = {slice.getOffsets()[0], slice.getSizes()[0]};
    slicedMatrix[slice.getResult()] = slice.getSource();
    return true;
  }
  auto linalgOp = dyn_cast<linalg::LinalgOp>(&op);
  if (!linalgOp || !computesRowByRow(linalgOp, [&](Value v) {
        return stage.wide.contains(v);
      }))
    return false;
  // The inputs computed over all rows must be of one slice.
  std::optional<RowSlice> rows;
  Value wideInput;
  for (OpOperand *in : linalgOp.getDpsInputOperands()) {
    auto it = stage.wide.find(in->get());
    if (it == stage.wide.end())
      continue;
    RowSlice r = wideRows.lookup(in->get());
    if (rows && (rows->offset != r.offset || rows->size != r.size))
      return false;
    rows = r;
    wideInput = it->second;
  }
  // Each init is made from scalars (an empty tensor, filled or not): made
  // again with all the rows.
  for (OpOperand &init : linalgOp.getDpsInitsMutable()) {
    Value made = stage.map.lookup(init.get());
    if (auto fill = made.getDefiningOp<linalg::FillOp>())
      made = fill.getOutputs()[0];
    if (!made.getDefiningOp<tensor::EmptyOp>())
      return false;
  }
  // The routed rows' offset and size, needed to slice the results.
  if (failed(materialize(stage, index, rows->offset, b)) ||
      failed(materialize(stage, index, rows->size, b)))
    return false;

  Location loc = op.getLoc();
  Value all = tensor::DimOp::create(b, loc, wideInput, 0);
  SmallVector<std::pair<Value, Value>> saved;
  auto use = [&](Value v, Value with) {
    saved.push_back({v, stage.map.lookupOrNull(v)});
    stage.map.map(v, with);
  };
  for (OpOperand *in : linalgOp.getDpsInputOperands())
    if (auto it = stage.wide.find(in->get()); it != stage.wide.end())
      use(in->get(), it->second);
  for (OpOperand &init : linalgOp.getDpsInitsMutable()) {
    Value made = stage.map.lookup(init.get());
    auto fill = made.getDefiningOp<linalg::FillOp>();
    auto empty =
        (fill ? fill.getOutputs()[0] : made).getDefiningOp<tensor::EmptyOp>();
    SmallVector<OpFoldResult> sizes = empty.getMixedSizes();
    sizes[0] = all;
    Value remade = tensor::EmptyOp::create(b, loc, sizes,
                                           empty.getType().getElementType());
    if (fill) {
      IRMapping into;
      into.map(fill.getOutputs()[0], remade);
      remade = b.clone(*fill, into)->getResult(0);
    }
    use(init.get(), remade);
  }
  Operation *clone = b.clone(op, stage.map);
  for (auto [v, old] : llvm::reverse(saved)) {
    if (old)
      stage.map.map(v, old);
    else
      stage.map.erase(v);
  }
  for (auto [result, wide] : llvm::zip(op.getResults(), clone->getResults())) {
    wideRows[result] = *rows;
    if (failed(mapRouted(stage, index, result, wide, b)))
      return false;
  }
  return true;
}

std::vector<std::vector<unsigned>> StageCutter::groupLayers() {
  using Key = std::pair<int64_t, int64_t>;
  std::map<Key, std::vector<unsigned>> groups;
  for (auto [i, layerPtr] : llvm::enumerate(layers)) {
    if (!calibrated[i])
      continue;
    const LinearLayer &layer = *layerPtr;
    Key key;
    if (sequential == CalibrationOrder::None) {
      key = {0, 0};
    } else if (sequential == CalibrationOrder::Blocks && layer.block &&
               llvm::any_of(layers, [](const LinearLayer *l) {
                 return l->block.has_value();
               })) {
      key = {*layer.block, 0};
    } else if (sequential == CalibrationOrder::Blocks) {
      // A layer outside the named blocks (an output classifier) comes
      // after the blocks whose layers precede it in the data flow.
      int64_t before = -1;
      for (const LinearLayer *other : layers)
        if (other->block && other->depth < layer.depth)
          before = std::max(before, *other->block);
      key = {before, 1};
    } else {
      key = {layer.depth, 0};
    }
    groups[key].push_back(i);
  }
  std::vector<std::vector<unsigned>> ordered;
  for (auto &[key, members] : groups)
    ordered.push_back(std::move(members));
  return ordered;
}

std::vector<std::vector<unsigned>>
StageCutter::cutToBudget(std::vector<unsigned> group) {
  llvm::sort(group, [&](unsigned a, unsigned b) {
    return opIndex.lookup(layers[a]->op) < opIndex.lookup(layers[b]->op);
  });
  std::vector<std::vector<unsigned>> runs;
  llvm::DenseSet<Value> inputs;
  uint64_t bytes = 0;
  for (unsigned m : group) {
    const LinearLayer &layer = *layers[m];
    uint64_t hessian = uint64_t(layer.inFeatures) * layer.inFeatures * 4;
    bool fresh = !inputs.contains(layer.activation);
    if (runs.empty() ||
        (fresh && bytes > 0 && bytes + hessian > hessianBudget)) {
      runs.emplace_back();
      inputs.clear();
      bytes = 0;
    }
    if (fresh) {
      inputs.insert(layer.activation);
      bytes += hessian;
    }
    runs.back().push_back(m);
  }
  return runs;
}

LogicalResult StageCutter::build() {
  Block &body = func.getBody().front();
  for (auto [i, op] : llvm::enumerate(body.without_terminator()))
    opIndex[&op] = i;
  std::vector<std::vector<unsigned>> groups = stageGroups();
  if (experts == ExpertCalibration::All)
    dispatch = dispatchSlices(body);
  collectWeightChains();
  if (failed(createStages(groups)))
    return failure();
  for (unsigned index = 0; index < stages.size(); ++index)
    if (failed(fillStage(index)))
      return failure();
  // The returns are known only now that every stage is built.
  for (CalibrationStage &stage : llvm::make_pointee_range(stages))
    if (failed(finishStage(stage)))
      return failure();
  return success();
}

std::vector<std::vector<unsigned>> StageCutter::stageGroups() {
  // Stages: groups of calibrated layers, ordered; with sequential=layers,
  // a group whose Hessians exceed the budget becomes several stages.
  std::vector<std::vector<unsigned>> groups;
  for (std::vector<unsigned> &group : groupLayers()) {
    if (sequential != CalibrationOrder::Layers || hessianBudget == 0) {
      groups.push_back(std::move(group));
      continue;
    }
    for (std::vector<unsigned> &run : cutToBudget(std::move(group)))
      groups.push_back(std::move(run));
  }
  return groups;
}

void StageCutter::collectWeightChains() {
  // torch-mlir writes a weight as constant -> linalg.transpose ->
  // broadcasting linalg.generic -> contraction, right before the
  // contraction: left where it is, the chain would fall in the previous
  // stage and its result (the float weight) cross into the layer's stage as
  // an activation.
  for (const LinearLayer *layer : layers) {
    if (!layerOfWeight.contains(layer->weightSource))
      continue;
    for (Operation *op = layer->weightOperand.getDefiningOp();
         op && op != layer->weightSource && op->getNumOperands() > 0;
         op = op->getOperand(0).getDefiningOp())
      weightChain.insert(op);
  }
}

LogicalResult
StageCutter::createStages(std::vector<std::vector<unsigned>> &groups) {
  for (std::vector<unsigned> &members : groups) {
    auto stage = std::make_shared<CalibrationStage>();
    stage->layers = members;
    unsigned first = ~0u, last = 0;
    for (unsigned m : members) {
      unsigned at = opIndex.lookup(layers[m]->op);
      first = std::min(first, at);
      last = std::max(last, at);
      stageOf[m] = stages.size();
    }
    if (!stages.empty() && first <= stages.back()->end) {
      const LinearLayer &early = *layers[stage->layers.front()];
      fail(early.op->getLoc())
          << "cannot calibrate '" << early.name
          << "' after the layers of the previous stage: it comes before "
             "them in '@"
          << func.getSymName()
          << "'; sequential=none calibrates all layers from the float model";
      return failure();
    }
    stage->end = last;
    stage->first = first;
    stages.push_back(std::move(stage));
  }
  // A stage extends to the op before the next stage's first layer: what the
  // next layers read is computed as soon as what it depends on is
  // quantized, and crosses to the next stage instead of the (often larger)
  // values it is made from (the attention's output rather than q, k and v;
  // the gated product rather than the outputs of w1 and w3).
  for (size_t k = 0; k + 1 < stages.size(); ++k)
    stages[k]->end = std::max(stages[k]->end, stages[k + 1]->first - 1);
  return success();
}

LogicalResult StageCutter::fillStage(unsigned index) {
  CalibrationStage &stage = *stages[index];
  MLIRContext *ctx = func.getContext();
  Location loc = func.getLoc();
  stage.module = ModuleOp::create(loc);
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(stage.module->getBody());
  stage.func =
      func::FuncOp::create(b, loc, "stage", FunctionType::get(ctx, {}, {}));
  Block *block = stage.func.addEntryBlock();
  b.setInsertionPointToEnd(block);
  unsigned begin = index == 0 ? 0 : stages[index - 1]->end + 1;
  llvm::DenseMap<Operation *, unsigned> layerAt;
  for (unsigned m : stage.layers)
    layerAt[layers[m]->op] = m;
  // The layer whose Hessian each activation accumulates.
  llvm::DenseMap<Value, unsigned> accumulated;
  for (Operation &op : func.getBody().front().without_terminator()) {
    unsigned at = opIndex.lookup(&op);
    if (at < begin || at > stage.end)
      continue;
    // Constants, and the chains that lead a weight to its contraction,
    // are made where they are used.
    if (op.hasTrait<OpTrait::ConstantLike>() || isStageArgument(&op) ||
        isConstantDerived(&op) || weightChain.contains(&op))
      continue;
    for (Value v : usedValues(&op))
      if (failed(materialize(stage, index, v, b))) {
        fail(op.getLoc()) << "cannot split '@" << func.getSymName()
                          << "' into calibration stages at this op; use "
                             "sequential=none";
        return failure();
      }
    if (auto it = layerAt.find(&op); it != layerAt.end()) {
      const LinearLayer &layer = *layers[it->second];
      Value activation = stage.map.lookup(layer.activation);
      if (auto wide = stage.wide.find(layer.activation);
          wide != stage.wide.end())
        activation = wide->second;
      if (auto shared = accumulated.find(activation);
          shared != accumulated.end()) {
        stage.sharesHessianOf.push_back({it->second, shared->second});
      } else {
        accumulateHessian(stage, it->second, op, activation, b);
        accumulated[activation] = it->second;
      }
    }
    if (experts == ExpertCalibration::All && cloneWide(stage, index, op, b))
      continue;
    b.clone(op, stage.map);
  }
  return success();
}

void StageCutter::accumulateHessian(CalibrationStage &stage, unsigned m,
                                    Operation &op, Value activation,
                                    OpBuilder &b) {
  Location l = op.getLoc();
  Type i64 = b.getI64Type();
  auto countType = RankedTensorType::get({}, i64);
  int64_t in = layers[m]->inFeatures;
  auto hType = RankedTensorType::get({in, in}, b.getF32Type());
  StageArg hArg{StageArg::Hessian};
  hArg.layer = m;
  Value h = addArg(stage, nullptr, hArg, hType, b);
  // Each Hessian counts its own samples: a call's [tokens, in]
  // input (an expert's rows) is one, a [samples, tokens, in] input
  // as many as it holds.
  StageArg countArg{StageArg::Count};
  countArg.layer = m;
  Value count = tensor::ExtractOp::create(
      b, l, addArg(stage, nullptr, countArg, countType, b), ValueRange{});
  Value input = buildCalibrationInput(b, l, activation);
  auto acc = HessianAccumulateOp::create(b, l, hType, i64, input, h, count);
  stage.accumulatedFor.push_back(m);
  stage.hessianResults.push_back(acc.getResult());
  stage.tokenResults.push_back(rowCount(b, l, input));
  stage.countResults.push_back(
      tensor::FromElementsOp::create(b, l, countType, acc.getNewCount()));
}

LogicalResult StageCutter::finishStage(CalibrationStage &stage) {
  // Returns: Hessians, their counts, the rows of each Hessian's input, then
  // the values later stages read.
  OpBuilder b(stage.func.getContext());
  Block &block = stage.func.getBody().front();
  b.setInsertionPointToEnd(&block);
  SmallVector<Value> results(stage.hessianResults);
  results.append(stage.countResults.begin(), stage.countResults.end());
  results.append(stage.tokenResults.begin(), stage.tokenResults.end());
  for (Value v : stage.outputs)
    results.push_back(crossing(stage, v));
  func::ReturnOp::create(b, stage.func.getLoc(), results);
  stage.func.setType(FunctionType::get(stage.func.getContext(),
                                       block.getArgumentTypes(),
                                       ValueRange(results).getTypes()));
  // Functions and globals the stage refers to come along.
  SymbolTable table(*stage.module);
  SmallVector<Operation *> work = {stage.func};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(op);
    if (!uses)
      continue;
    for (const SymbolTable::SymbolUse &use : *uses) {
      StringAttr name = use.getSymbolRef().getRootReference();
      if (table.lookup(name))
        continue;
      Operation *target = module.lookupSymbol(name);
      if (!target)
        continue;
      Operation *copy = target->clone();
      table.insert(copy);
      work.push_back(copy);
    }
  }
  if (failed(verify(*stage.module))) {
    fail(func.getLoc()) << "internal error: a calibration stage does not "
                           "verify";
    return failure();
  }
  splitStage(stage);
  if (failed(verify(*stage.hessianModule)) ||
      (stage.outputModule && failed(verify(*stage.outputModule)))) {
    fail(func.getLoc()) << "internal error: a calibration stage's parts do "
                           "not verify";
    return failure();
  }
  return success();
}

/// Erases the ops of `fn`'s body whose results are unused and that have no
/// effects, users first.
static void eraseDeadOps(func::FuncOp fn) {
  Block &body = fn.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (!op.hasTrait<OpTrait::IsTerminator>() && isOpTriviallyDead(&op))
      op.erase();
}

/// Replaces `fn`'s return operands by `results` and its type to match.
static void setResults(func::FuncOp fn, ValueRange results) {
  Block &body = fn.getBody().front();
  body.getTerminator()->setOperands(results);
  fn.setType(FunctionType::get(fn.getContext(), body.getArgumentTypes(),
                               results.getTypes()));
}

/// Erases the arguments among `fn`'s first `count` that nothing reads;
/// returns the indices of those kept.
static std::vector<unsigned> eraseUnusedArgs(func::FuncOp fn, unsigned count) {
  llvm::BitVector unused(fn.getNumArguments());
  std::vector<unsigned> kept;
  for (unsigned i = 0; i < count; ++i) {
    if (fn.getArgument(i).use_empty())
      unused.set(i);
    else
      kept.push_back(i);
  }
  (void)fn.eraseArguments(unused);
  return kept;
}

void StageCutter::splitStage(CalibrationStage &stage) {
  Block &body = stage.func.getBody().front();
  // The part that depends on the stage's own weights.
  llvm::DenseSet<Value> dependent;
  for (auto [arg, from] : llvm::zip(body.getArguments(), stage.args)) {
    if (from.kind != StageArg::Constant)
      continue;
    auto it = layerOfWeight.find(from.constant);
    if (it != layerOfWeight.end() &&
        llvm::is_contained(stage.layers, it->second))
      dependent.insert(arg);
  }
  // Its frontier: tensors computed outside it from the arguments that it
  // reads, and outputs computed outside it.
  llvm::DenseMap<Value, bool> fromArguments;
  auto isArgument = [](Value v) { return isa<BlockArgument>(v); };
  llvm::SetVector<Value> frontier;
  auto addFrontier = [&](Value v) {
    if (isa<BlockArgument>(v) || dependent.contains(v) ||
        !::carriesData(v, isArgument, fromArguments))
      return;
    frontier.insert(v);
  };
  for (Operation &op : body.without_terminator()) {
    llvm::SetVector<Value> used = usedValues(&op);
    if (!llvm::any_of(used, [&](Value v) { return dependent.contains(v); }))
      continue;
    dependent.insert(op.result_begin(), op.result_end());
    for (Value v : used)
      addFrontier(v);
  }
  for (Value v : stage.outputs)
    addFrontier(crossing(stage, v));

  // The first: Hessians, their counts, the rows of each Hessian's input, the
  // frontier.
  IRMapping first;
  stage.hessianModule = cast<ModuleOp>(stage.module.get()->clone(first));
  {
    auto fn = cast<func::FuncOp>(first.lookup(stage.func.getOperation()));
    SmallVector<Value> results;
    for (Value h : stage.hessianResults)
      results.push_back(first.lookup(h));
    for (Value c : stage.countResults)
      results.push_back(first.lookup(c));
    for (Value t : stage.tokenResults)
      results.push_back(first.lookup(t));
    for (Value v : frontier)
      results.push_back(first.lookup(v));
    setResults(fn, results);
    eraseDeadOps(fn);
    stage.hessianArgs = eraseUnusedArgs(fn, stage.args.size());
  }
  if (stage.outputs.empty())
    return;
  // The second: the frontier as arguments, the outputs.
  IRMapping second;
  stage.outputModule = cast<ModuleOp>(stage.module.get()->clone(second));
  auto fn = cast<func::FuncOp>(second.lookup(stage.func.getOperation()));
  Block &fnBody = fn.getBody().front();
  IRMapping argOf;
  for (Value v : frontier) {
    BlockArgument arg = fnBody.addArgument(v.getType(), v.getLoc());
    second.lookup(v).replaceAllUsesWith(arg);
    argOf.map(v, arg);
  }
  SmallVector<Value> results;
  for (Value v : stage.outputs) {
    Value inStage = crossing(stage, v);
    results.push_back(argOf.contains(inStage) ? argOf.lookup(inStage)
                                              : second.lookup(inStage));
  }
  setResults(fn, results);
  eraseDeadOps(fn);
  stage.outputArgs = eraseUnusedArgs(fn, stage.args.size());
}

std::optional<ExpertCalibration>
mlir::gptq::parseExpertCalibration(StringRef value) {
  if (value == "routed")
    return ExpertCalibration::Routed;
  if (value == "all")
    return ExpertCalibration::All;
  return std::nullopt;
}

std::optional<CalibrationOrder>
mlir::gptq::parseCalibrationOrder(StringRef value) {
  if (value == "layers")
    return CalibrationOrder::Layers;
  if (value == "blocks")
    return CalibrationOrder::Blocks;
  if (value == "none")
    return CalibrationOrder::None;
  return std::nullopt;
}

StringRef mlir::gptq::calibrationOrderName(CalibrationOrder order) {
  switch (order) {
  case CalibrationOrder::Layers:
    return "layers";
  case CalibrationOrder::Blocks:
    return "blocks";
  case CalibrationOrder::None:
    return "none";
  }
  llvm_unreachable("unknown calibration order");
}

FailureOr<CalibrationStages> mlir::gptq::cutCalibrationStages(
    ModuleOp module, func::FuncOp func, ArrayRef<const LinearLayer *> layers,
    ArrayRef<bool> calibrated,
    const llvm::DenseMap<Operation *, unsigned> &layerOfWeight,
    const StageCutOptions &options, StringRef passName) {
  StageCutter cutter(module, func, layers, calibrated, layerOfWeight, options,
                     passName);
  if (failed(cutter.build()))
    return failure();
  return CalibrationStages{std::move(cutter.stages), std::move(cutter.stageOf)};
}

std::vector<const LinearLayer *> mlir::gptq::selectQuantizedLayers(
    const LinearLayers &linears, func::FuncOp func,
    const LayerNameFilter &filter, bool classifier, bool routers,
    size_t &found) {
  std::vector<const LinearLayer *> selected;
  found = 0;
  for (const LinearLayer &layer : linears.getLayers()) {
    if (!func->isProperAncestor(layer.op))
      continue;
    ++found;
    if (!filter.selects(layer.name))
      continue;
    if ((layer.sharedWeight || layer.classifier) && !classifier)
      continue;
    if (layer.router && !routers)
      continue;
    selected.push_back(&layer);
  }
  return selected;
}

void mlir::gptq::untieWeight(LinearLayer &layer) {
  // A source only this layer reads is its own already (a tied embedding's
  // widening for the classifier, whose table the lookup also reads): a copy
  // would leave the original behind, unread.
  if (layer.weightSource->hasOneUse())
    return;
  OpOperand &use = getWeightSourceUse(layer);
  OpBuilder b(use.getOwner());
  Operation *copy = b.clone(*layer.weightSource);
  if (layer.weightOperand == use.get())
    layer.weightOperand = copy->getResult(0);
  use.set(copy->getResult(0));
  layer.weightSource = copy;
}

std::string mlir::gptq::uncalibratedReason(func::FuncOp func,
                                           const LinearLayer &layer) {
  if (layer.op->getBlock() != &func.getBody().front())
    return "it is inside a nested region";
  return checkCalibrationInput(layer);
}

void mlir::gptq::appendStageModules(
    ModuleOp into, ArrayRef<std::shared_ptr<CalibrationStage>> stages) {
  OpBuilder b = OpBuilder::atBlockEnd(into.getBody());
  for (auto [index, stage] : llvm::enumerate(stages)) {
    for (auto [part, m] :
         {std::pair<StringRef, ModuleOp>("hessians", *stage->hessianModule),
          std::pair<StringRef, ModuleOp>("outputs", stage->outputModule
                                                        ? *stage->outputModule
                                                        : ModuleOp())}) {
      if (!m)
        continue;
      auto copy = cast<ModuleOp>(b.clone(*m));
      copy.setSymName(("stage_" + llvm::Twine(index + 1) + "_" + part).str());
    }
  }
}
