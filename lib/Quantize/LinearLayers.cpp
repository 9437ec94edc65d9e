//===- LinearLayers.cpp - Find the linear layers of a model ---------------===//

#include "gptq/Quantize/LinearLayers.h"
#include "gptq/Quantize/ExpertDispatch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::gptq;

Operation *mlir::gptq::loadedImmutableGlobal(Operation *op) {
  SymbolRefAttr name;
  if (auto load = dyn_cast<ml_program::GlobalLoadConstOp>(op))
    name = load.getGlobalAttr();
  else if (auto load = dyn_cast<ml_program::GlobalLoadOp>(op))
    name = load.getGlobalAttr();
  else
    return nullptr;
  auto global =
      SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(op, name);
  if (!global || global.getIsMutable() || !global.getValue())
    return nullptr;
  return global;
}

namespace {

/// A constant two-dimensional weight and, for each of its two dimensions,
/// the dimension of the traced value it became.
struct TracedWeight {
  Operation *source = nullptr;
  /// The constant a widening source reads (see matchWeightSource).
  Operation *stored = nullptr;
  ElementsAttr values;
  Operation *global = nullptr;
  SmallVector<int64_t, 2> dims;
};

/// The weight's values when `op` is a constant of a 2-D float tensor:
/// `arith.constant` (dense or dense_resource) or a load of an immutable
/// global with a value (loadedImmutableGlobal).
std::optional<TracedWeight> matchWeightSource(Operation *op) {
  TracedWeight traced;
  traced.source = op;
  // A weight stored in a narrower float type (bf16, f16, read in place from
  // a checkpoint) widened as a whole: the widening is the layer's source.
  if (auto ext = dyn_cast<arith::ExtFOp>(op)) {
    Operation *def = ext.getIn().getDefiningOp();
    if (!def || isa<arith::ExtFOp>(def) ||
        !isa<RankedTensorType>(ext.getType()))
      return std::nullopt;
    std::optional<TracedWeight> stored = matchWeightSource(def);
    if (!stored)
      return std::nullopt;
    stored->stored = def;
    stored->source = op;
    return stored;
  }
  if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
    traced.values = dyn_cast<ElementsAttr>(constant.getValue());
  } else if (Operation *global = loadedImmutableGlobal(op)) {
    traced.values =
        dyn_cast<ElementsAttr>(*cast<ml_program::GlobalOp>(global).getValue());
    traced.global = global;
  }
  if (!traced.values)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(traced.values.getType());
  if (!type || type.getRank() != 2 || !type.hasStaticShape() ||
      !isa<FloatType>(type.getElementType()))
    return std::nullopt;
  traced.dims = {0, 1};
  return traced;
}

/// True for a `linalg.generic` that only copies its single input into its
/// output, reading it through a projected permutation: a broadcast or a
/// transpose written as a generic.
bool isCopyGeneric(linalg::GenericOp generic) {
  if (generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumReductionLoops() != 0)
    return false;
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (!maps[1].isIdentity() || !maps[0].isProjectedPermutation())
    return false;
  Block &body = generic.getRegion().front();
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  return body.getOperations().size() == 1 && yield &&
         yield.getNumOperands() == 1 &&
         yield.getOperand(0) == body.getArgument(0);
}

/// Follows `value` back through the forms importers put between a constant
/// weight and its contraction (tensor.cast, linalg.transpose,
/// linalg.broadcast, a copying linalg.generic) to the constant.
std::optional<TracedWeight> traceWeight(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (auto cast = dyn_cast<tensor::CastOp>(def))
    return traceWeight(cast.getSource());
  if (auto transpose = dyn_cast<linalg::TransposeOp>(def)) {
    std::optional<TracedWeight> traced = traceWeight(transpose.getInput());
    if (!traced)
      return std::nullopt;
    // Result dimension i is input dimension permutation[i].
    ArrayRef<int64_t> perm = transpose.getPermutation();
    for (int64_t &dim : traced->dims)
      dim = llvm::find(perm, dim) - perm.begin();
    return traced;
  }
  if (auto broadcast = dyn_cast<linalg::BroadcastOp>(def)) {
    std::optional<TracedWeight> traced = traceWeight(broadcast.getInput());
    if (!traced)
      return std::nullopt;
    // Input dimensions are the result dimensions not in `dimensions`, in
    // order.
    ArrayRef<int64_t> added = broadcast.getDimensions();
    SmallVector<int64_t> kept;
    int64_t rank = broadcast.getInit().getType().getRank();
    for (int64_t d = 0; d < rank; ++d)
      if (!llvm::is_contained(added, d))
        kept.push_back(d);
    for (int64_t &dim : traced->dims)
      dim = kept[dim];
    return traced;
  }
  if (auto generic = dyn_cast<linalg::GenericOp>(def)) {
    if (!isCopyGeneric(generic))
      return std::nullopt;
    std::optional<TracedWeight> traced =
        traceWeight(generic.getDpsInputOperand(0)->get());
    if (!traced)
      return std::nullopt;
    // The output map is the identity: input dimension j is result
    // dimension (input map result j).
    AffineMap inputMap = generic.getIndexingMapsArray()[0];
    for (int64_t &dim : traced->dims)
      dim = cast<AffineDimExpr>(inputMap.getResult(dim)).getPosition();
    return traced;
  }
  return matchWeightSource(def);
}

std::optional<unsigned> loopDim(AffineMap map, int64_t operandDim) {
  auto expr = dyn_cast<AffineDimExpr>(map.getResult(operandDim));
  if (!expr)
    return std::nullopt;
  return expr.getPosition();
}

} // namespace

std::optional<LinearLayer> mlir::gptq::matchLinearLayer(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureTensorSemantics() ||
      linalgOp.getNumDpsInputs() != 2 || linalgOp.getNumDpsInits() != 1 ||
      !linalg::isaContractionOpInterface(linalgOp))
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(linalgOp);
  if (failed(dims) || dims->k.size() != 1)
    return std::nullopt;

  std::optional<TracedWeight> traced[2] = {
      traceWeight(linalgOp.getDpsInputOperand(0)->get()),
      traceWeight(linalgOp.getDpsInputOperand(1)->get())};
  // Exactly one side is a constant weight: two activations are a mixing
  // (attention scores), two constants are not a layer of the model.
  if (traced[0].has_value() == traced[1].has_value())
    return std::nullopt;
  unsigned w = traced[0] ? 0 : 1;
  OpOperand *weightOperand = linalgOp.getDpsInputOperand(w);
  AffineMap map = linalgOp.getMatchingIndexingMap(weightOperand);

  // The weight's two dimensions as loops: one is the reduction, the other
  // an output dimension that is not a batch one.
  TracedWeight &weight = *traced[w];
  std::optional<unsigned> loops[2] = {loopDim(map, weight.dims[0]),
                                      loopDim(map, weight.dims[1])};
  if (!loops[0] || !loops[1])
    return std::nullopt;
  unsigned k = dims->k.front();
  auto isOutputDim = [&](unsigned loop) {
    return llvm::is_contained(dims->m, loop) ||
           llvm::is_contained(dims->n, loop);
  };
  int inDim;
  if (*loops[0] == k && isOutputDim(*loops[1]))
    inDim = 0;
  else if (*loops[1] == k && isOutputDim(*loops[0]))
    inDim = 1;
  else
    return std::nullopt;

  auto type = cast<ShapedType>(weight.values.getType());
  LinearLayer layer;
  layer.op = linalgOp;
  layer.activation = linalgOp.getDpsInputOperand(1 - w)->get();
  layer.weightOperand = weightOperand->get();
  layer.weightSource = weight.source;
  layer.weightConstant = weight.stored ? weight.stored : weight.source;
  layer.weightAttr = weight.values;
  layer.weightGlobal = weight.global;
  layer.inFeatures = type.getDimSize(inDim);
  layer.outFeatures = type.getDimSize(1 - inDim);
  layer.transposed = inDim == 0;
  return layer;
}

namespace {

/// A layer name from a frontend's location name: an ONNX node path
/// (`/layers.0/attention/wq/MatMul`, as torch-mlir's ONNX importer names
/// ops) becomes its scope (`layers.0.attention.wq`); names a frontend
/// generates without meaning (ONNX's `onnx::MatMul_301` initializers, JAX's
/// `jit(<lambda>)` scopes, a bare op type) are none.
std::optional<std::string> layerName(StringRef name) {
  if (name.empty() || name.contains("::") || name.starts_with("jit("))
    return std::nullopt;
  if (!name.starts_with("/"))
    return name.str();
  SmallVector<StringRef> parts;
  name.split(parts, '/', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  // The last part is the node's op type (MatMul, Gemm, MatMul_1).
  if (parts.size() < 2)
    return std::nullopt;
  parts.pop_back();
  return llvm::join(parts, ".");
}

std::optional<std::string> locationName(Location loc) {
  std::optional<std::string> found;
  // The first name that is one: a FusedLoc may hold several.
  loc->walk([&](Location inner) {
    if (auto name = dyn_cast<NameLoc>(inner))
      found = layerName(name.getName().getValue());
    return found ? WalkResult::interrupt() : WalkResult::advance();
  });
  return found;
}

/// Whether `value` is computed from constants only (a bias broadcast from a
/// constant, a table made at compile time): no argument, no op with
/// regions other than linalg's, reaches it. Memoized in `known`.
bool isConstantDerived(Value value, llvm::DenseMap<Value, bool> &known,
                       unsigned depth = 0) {
  if (!isa<TensorType, VectorType, FloatType>(value.getType()))
    return true;
  auto it = known.find(value);
  if (it != known.end())
    return it->second;
  Operation *producer = value.getDefiningOp();
  bool derived =
      producer && depth < 32 &&
      (producer->getNumRegions() == 0 || isa<linalg::LinalgOp>(producer)) &&
      llvm::all_of(producer->getOperands(), [&](Value operand) {
        return isConstantDerived(operand, known, depth + 1);
      });
  known[value] = derived;
  return derived;
}

/// The one input of `op` that is not computed from constants, when `op`
/// carries a value to the function's results unchanged in substance:
/// reshapes, transposes, casts, a bias or a scale added, a soft cap; not
/// an op that combines it with other values (a residual sum).
Value carriedInput(Operation *op, llvm::DenseMap<Value, bool> &known) {
  if (!op || (op->getNumRegions() > 0 && !isa<linalg::LinalgOp>(op)))
    return {};
  SmallVector<Value> inputs;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    for (OpOperand *input : linalgOp.getDpsInputOperands())
      inputs.push_back(input->get());
  else
    inputs.assign(op->operand_begin(), op->operand_end());
  Value carried;
  for (Value input : inputs) {
    if (isConstantDerived(input, known))
      continue;
    if (carried)
      return {};
    carried = input;
  }
  return carried;
}

/// The layers whose results a function returns as they are, or through
/// ops with one carried input: its output classifiers.
llvm::DenseSet<Operation *> outputLayers(Operation *root,
                                         ArrayRef<LinearLayer> layers) {
  llvm::DenseSet<Operation *> contractions, found;
  for (const LinearLayer &layer : layers)
    contractions.insert(layer.op);
  llvm::DenseMap<Value, bool> known;
  root->walk([&](Operation *op) {
    if (!op->hasTrait<OpTrait::ReturnLike>() ||
        !isa<FunctionOpInterface>(op->getParentOp()))
      return;
    for (Value result : op->getOperands()) {
      Operation *producer = result.getDefiningOp();
      while (producer && !contractions.contains(producer)) {
        Value next = carriedInput(producer, known);
        producer = next ? next.getDefiningOp() : nullptr;
      }
      if (producer)
        found.insert(producer);
    }
  });
  return found;
}

/// The `<i>` of a `layers.<i>.` component of `name`.
std::optional<int64_t> blockFromName(StringRef name) {
  static constexpr StringRef prefix = "layers.";
  for (size_t pos = name.find(prefix); pos != StringRef::npos;
       pos = name.find(prefix, pos + 1)) {
    if (pos != 0 && name[pos - 1] != '.')
      continue;
    StringRef rest = name.drop_front(pos + prefix.size());
    StringRef digits = rest.take_while([](char c) { return isdigit(c); });
    int64_t block;
    if (!digits.empty() && rest.size() > digits.size() &&
        rest[digits.size()] == '.' && !digits.getAsInteger(10, block))
      return block;
  }
  return std::nullopt;
}

/// True when the weight's source (or global) feeds other ops than this
/// layer's chain of transposes and broadcasts.
bool hasOtherUses(const LinearLayer &layer) {
  if (layer.weightGlobal) {
    std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(
        layer.weightGlobal,
        layer.weightGlobal->getParentWithTrait<OpTrait::SymbolTable>());
    if (!uses || llvm::range_size(*uses) != 1)
      return true;
  }
  if (layer.weightConstant != layer.weightSource &&
      !layer.weightConstant->getResult(0).hasOneUse())
    return true;
  Value value = layer.weightSource->getResult(0);
  while (value != layer.weightOperand) {
    if (!value.hasOneUse())
      return true;
    value = (*value.getUsers().begin())->getResult(0);
  }
  return !value.hasOneUse();
}

} // namespace

LinearLayers::LinearLayers(Operation *root) {
  // The number of linear layers on the longest data-flow path to each value.
  llvm::DenseMap<Value, int64_t> depth;
  std::vector<int64_t> inputDepth;
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    int64_t d = 0;
    for (Value operand : op->getOperands())
      d = std::max(d, depth.lookup(operand));
    // Values an op's regions read from above count as its inputs too (a
    // linalg.generic that gathers rows with tensor.extract, as a mixture
    // of experts dispatches tokens).
    if (op->getNumRegions() > 0 && op != root) {
      llvm::SetVector<Value> captured;
      getUsedValuesDefinedAbove(op->getRegions(), captured);
      for (Value value : captured)
        d = std::max(d, depth.lookup(value));
    }
    std::optional<LinearLayer> layer = matchLinearLayer(op);
    if (layer) {
      inputDepth.push_back(depth.lookup(layer->activation));
      layers.push_back(std::move(*layer));
      d = std::max(d, inputDepth.back() + 1);
    }
    for (Value result : op->getResults())
      depth[result] = d;
  });

  // Names are unique within a function: the entries of one model (forward,
  // prefill, decode) name the same weights alike.
  llvm::DenseMap<Operation *, llvm::StringSet<>> taken;
  for (auto [index, layer] : llvm::enumerate(layers)) {
    layer.sharedWeight = hasOtherUses(layer);
    std::optional<std::string> weightName =
        locationName(layer.weightSource->getLoc());
    if (!weightName && layer.weightGlobal)
      weightName = locationName(layer.weightGlobal->getLoc());
    std::optional<std::string> opName = locationName(layer.op->getLoc());
    if (weightName && !layer.sharedWeight)
      layer.name = *weightName;
    else if (opName)
      layer.name = *opName;
    else if (weightName)
      layer.name = *weightName;
    else if (layer.weightGlobal)
      layer.name = cast<SymbolOpInterface>(layer.weightGlobal).getName().str();
    if (layer.name.empty()) {
      layer.name = "linear." + std::to_string(index);
      layer.generatedName = true;
    }
    std::string unique = layer.name;
    llvm::StringSet<> &names =
        taken[layer.op->getParentOfType<FunctionOpInterface>()];
    for (int n = 1; !names.insert(unique).second; ++n)
      unique = layer.name + "#" + std::to_string(n);
    layer.name = unique;
    layer.block = blockFromName(layer.name);
    namedBlocks |= layer.block.has_value();
  }
  for (auto [layer, d] : llvm::zip_equal(layers, inputDepth)) {
    layer.depth = d;
    if (!namedBlocks)
      layer.block = d;
  }
  // The output classifier: outside the named blocks, or, without them, a
  // layer after others whose result the function returns (a lone layer is
  // the model, not its classifier).
  llvm::DenseSet<Operation *> outputs;
  if (!namedBlocks)
    outputs = outputLayers(root, layers);
  for (LinearLayer &layer : layers) {
    Value result = layer.op->getResult(0);
    layer.router = !result.use_empty() &&
                   llvm::all_of(result.getUsers(), [](Operation *user) {
                     return isa<tensor::ExtractOp>(user);
                   });
    layer.classifier = namedBlocks
                           ? !layer.block.has_value()
                           : layer.depth > 0 && outputs.contains(layer.op);
  }
  // The experts: layers that read the rows a dispatch gives one expert.
  llvm::DenseMap<Block *, llvm::DenseSet<Value>> routed;
  for (LinearLayer &layer : layers) {
    Block *block = layer.op->getBlock();
    auto it = routed.find(block);
    if (it == routed.end())
      it = routed.try_emplace(block, routedRows(*block)).first;
    layer.expert = it->second.contains(layer.activation);
  }
}

size_t LinearLayers::getNumBlocks() const {
  llvm::SmallDenseSet<int64_t> blocks;
  for (const LinearLayer &layer : layers)
    if (layer.block)
      blocks.insert(*layer.block);
  return blocks.size();
}

std::string mlir::gptq::checkCalibrationInput(const LinearLayer &layer) {
  auto type = dyn_cast<RankedTensorType>(layer.activation.getType());
  if (!type || type.getRank() == 0)
    return "its input is not a ranked tensor of rank 1 or more";
  if (!type.getElementType().isF32())
    return "its input has element type " +
           llvm::formatv("{0}", type.getElementType()).str() + ", expected f32";
  linalg::LinalgOp op = layer.op;
  OpOperand *operand = nullptr;
  for (OpOperand *input : op.getDpsInputOperands())
    if (input->get() == layer.activation)
      operand = input;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (!operand || failed(dims) || dims->k.size() != 1)
    return "its contraction dimensions cannot be inferred";
  AffineMap map = op.getMatchingIndexingMap(operand);
  auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
  if (!last || last.getPosition() != dims->k.front())
    return "its input is not read with the reduction dimension last";
  int64_t cols = type.getShape().back();
  if (!ShapedType::isDynamic(cols) && cols != layer.inFeatures)
    return "its input has " + std::to_string(cols) + " columns, expected " +
           std::to_string(layer.inFeatures);
  return "";
}

Value mlir::gptq::buildCalibrationInput(OpBuilder &b, Location loc,
                                        Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank();
  if (rank == 2 || rank == 3)
    return input;
  if (rank == 1) {
    auto to =
        RankedTensorType::get({1, type.getDimSize(0)}, type.getElementType());
    SmallVector<ReassociationIndices> groups = {{0, 1}};
    return tensor::ExpandShapeOp::create(b, loc, to, input, groups);
  }
  // All but the last two dimensions are samples.
  ReassociationIndices samples;
  int64_t count = 1;
  for (int64_t d = 0; d < rank - 2; ++d) {
    samples.push_back(d);
    int64_t size = type.getDimSize(d);
    count = ShapedType::isDynamic(size) || ShapedType::isDynamic(count)
                ? ShapedType::kDynamic
                : count * size;
  }
  SmallVector<ReassociationIndices> groups = {samples, {rank - 2}, {rank - 1}};
  auto to = RankedTensorType::get(
      {count, type.getDimSize(rank - 2), type.getDimSize(rank - 1)},
      type.getElementType());
  return tensor::CollapseShapeOp::create(b, loc, to, input, groups);
}

OpOperand &mlir::gptq::getWeightSourceUse(const LinearLayer &layer) {
  // Every op of the chain (tensor.cast, linalg.transpose, linalg.broadcast,
  // a copying linalg.generic) reads the weight through its operand 0.
  OpOperand *use = nullptr;
  linalg::LinalgOp op = layer.op;
  for (OpOperand *input : op.getDpsInputOperands())
    if (input->get() == layer.weightOperand)
      use = input;
  while (use->get().getDefiningOp() != layer.weightSource)
    use = &use->get().getDefiningOp()->getOpOperand(0);
  return *use;
}

llvm::Expected<LayerNameFilter>
LayerNameFilter::create(llvm::StringRef include, llvm::StringRef exclude) {
  LayerNameFilter filter;
  for (auto [option, text, re] :
       {std::make_tuple("include", include, &filter.include),
        std::make_tuple("exclude", exclude, &filter.exclude)}) {
    if (text.empty())
      continue;
    re->emplace(text);
    std::string problem;
    if (!(*re)->isValid(problem))
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::Twine(option) + "='" + text +
              "' is not a valid regular expression: " + problem);
  }
  return filter;
}

bool LayerNameFilter::selects(llvm::StringRef name) const {
  return (!include || include->match(name)) &&
         (!exclude || !exclude->match(name));
}
