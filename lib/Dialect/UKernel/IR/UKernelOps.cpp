//===- UKernelOps.cpp - The CPU microkernel ops ---------------------------===//

#include "gptq/Dialect/UKernel/IR/UKernel.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"

using namespace mlir;
using namespace mlir::gptq::ukernel;

#define GET_OP_CLASSES
#include "gptq/Dialect/UKernel/IR/UKernelOps.cpp.inc"

namespace {
/// The size of dimension `dim` of `value`'s shaped type, or kDynamic.
int64_t staticDim(Value value, unsigned dim) {
  return cast<ShapedType>(value.getType()).getDimSize(dim);
}

/// Fails at `op` when the static sizes `a` (of `what`) and `b` differ.
LogicalResult sameSize(Operation *op, int64_t a, int64_t b, StringRef what) {
  if (ShapedType::isStatic(a) && ShapedType::isStatic(b) && a != b)
    return op->emitOpError() << what << " differ: " << a << " and " << b;
  return success();
}

/// Fails at `op` unless `value` has rank `rank` and an element type that
/// `element` accepts (described as `elementName`).
LogicalResult checkOperand(Operation *op, Value value, StringRef name,
                           int64_t rank, llvm::function_ref<bool(Type)> element,
                           StringRef elementName) {
  auto type = cast<ShapedType>(value.getType());
  if (type.getRank() != rank || !element(type.getElementType()))
    return op->emitOpError()
           << "expects " << name << " of rank " << rank << " and "
           << elementName << " elements, found " << type;
  return success();
}
} // namespace

LogicalResult MatmulOp::verify() {
  Operation *op = getOperation();
  // Tensors in, the updated C out; or buffers in, nothing out.
  bool tensors = isa<RankedTensorType>(getInit().getType());
  for (Value operand : op->getOperands())
    if (isa<RankedTensorType>(operand.getType()) != tensors)
      return emitOpError("expects all operands to be tensors or all to be "
                         "buffers");
  if (tensors) {
    if (getNumResults() != 1 || getResult()[0].getType() != getInit().getType())
      return emitOpError("on tensors returns one value of the type of outs");
  } else if (getNumResults() != 0) {
    return emitOpError("on buffers returns nothing");
  }

  auto isF32 = [](Type t) { return t.isF32(); };
  auto isI32 = [](Type t) { return t.isSignlessInteger(32); };
  auto isHalf = [](Type t) { return t.isBF16() || t.isF16(); };
  if (failed(checkOperand(op, getLhs(), "ins", 3, isF32, "f32")) ||
      failed(checkOperand(op, getInit(), "outs", 3, isF32, "f32")))
    return failure();

  int forms = (getRhs() ? 1 : 0) + (getPacked() ? 1 : 0) + (getHalf() ? 1 : 0);
  if (forms != 1)
    return emitOpError("expects exactly one right operand: a float32 matrix "
                       "in ins, a packed weight or a half-precision weight");
  bool grids = getScales() || getZeros() || getGIdx();
  if (getPacked() && !(getScales() && getZeros() && getGIdx()))
    return emitOpError("expects a packed weight with its scales, zeros and "
                       "group index");
  if (!getPacked() && grids)
    return emitOpError("has grids without a packed weight");
  if (getPacked().operator bool() != getBits().has_value())
    return emitOpError("expects 'bits' exactly when the weight is packed");
  if ((getPacked() || getHalf()) && !getTransposeRhs())
    return emitOpError("expects a packed or half-precision weight given "
                       "transposed ([N, K], transpose_rhs)");

  // A [B, M, K] (or [B, K, M]) times B [B, K, N] (or [B, N, K]) into
  // [B, M, N].
  int64_t m = staticDim(getLhs(), getTransposeLhs() ? 2 : 1);
  int64_t k = staticDim(getLhs(), getTransposeLhs() ? 1 : 2);
  int64_t n = ShapedType::kDynamic;
  if (failed(sameSize(op, staticDim(getLhs(), 0), staticDim(getInit(), 0),
                      "the batch sizes of ins and outs")) ||
      failed(sameSize(op, m, staticDim(getInit(), 1),
                      "the rows of the product and of outs")))
    return failure();
  if (Value rhs = getRhs()) {
    if (failed(checkOperand(op, rhs, "a right operand", 3, isF32, "f32")) ||
        failed(sameSize(op, staticDim(getLhs(), 0), staticDim(rhs, 0),
                        "the batch sizes of the operands")) ||
        failed(sameSize(op, k, staticDim(rhs, getTransposeRhs() ? 2 : 1),
                        "the inner sizes of the operands")))
      return failure();
    n = staticDim(rhs, getTransposeRhs() ? 1 : 2);
  } else {
    if (failed(sameSize(op, staticDim(getInit(), 0), 1,
                        "the batch size of a product with a weight and 1")))
      return failure();
  }
  if (Value packed = getPacked()) {
    if (failed(checkOperand(op, packed, "packed words", 2, isI32, "i32")) ||
        failed(checkOperand(op, getScales(), "scales", 2, isF32, "f32")) ||
        failed(checkOperand(op, getZeros(), "zeros", 2, isF32, "f32")) ||
        failed(checkOperand(op, getGIdx(), "a group index", 1, isI32, "i32")) ||
        failed(sameSize(op, k, staticDim(getGIdx(), 0),
                        "the inner size and the group index's length")) ||
        failed(sameSize(op, staticDim(packed, 0), staticDim(getScales(), 0),
                        "the rows of the words and of the scales")) ||
        failed(sameSize(op, staticDim(getScales(), 0), staticDim(getZeros(), 0),
                        "the rows of the scales and of the zeros")) ||
        failed(sameSize(op, staticDim(getScales(), 1), staticDim(getZeros(), 1),
                        "the groups of the scales and of the zeros")))
      return failure();
    int64_t words = staticDim(packed, 1);
    int64_t bits = *getBits();
    if (ShapedType::isStatic(k) && ShapedType::isStatic(words) &&
        words != (k * bits + 31) / 32)
      return emitOpError() << "expects " << (k * bits + 31) / 32
                           << " words per row for " << k << " codes of " << bits
                           << " bits, found " << words;
    n = staticDim(packed, 0);
  }
  if (Value half = getHalf()) {
    if (failed(checkOperand(op, half, "a half-precision weight", 2, isHalf,
                            "bf16 or f16")) ||
        failed(sameSize(op, k, staticDim(half, 1),
                        "the inner sizes of the operands")))
      return failure();
    n = staticDim(half, 0);
  }
  return sameSize(op, n, staticDim(getInit(), 2),
                  "the columns of the product and of outs");
}

void MatmulOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  for (OpOperand &operand : getOperation()->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    bool init = &operand == &getInitMutable();
    if (!init || !getZeroInit())
      effects.emplace_back(MemoryEffects::Read::get(), &operand,
                           SideEffects::DefaultResource::get());
    if (init)
      effects.emplace_back(MemoryEffects::Write::get(), &operand,
                           SideEffects::DefaultResource::get());
  }
}

bool MatmulOp::bufferizesToMemoryRead(OpOperand &operand,
                                      const bufferization::AnalysisState &) {
  // A zero-initialized product does not read its destination.
  return &operand != &getInitMutable() || !getZeroInit();
}

bool MatmulOp::bufferizesToMemoryWrite(OpOperand &operand,
                                       const bufferization::AnalysisState &) {
  return &operand == &getInitMutable();
}

bufferization::AliasingValueList
MatmulOp::getAliasingValues(OpOperand &operand,
                            const bufferization::AnalysisState &) {
  if (&operand != &getInitMutable())
    return {};
  return {{getOperation()->getResult(0),
           bufferization::BufferRelation::Equivalent}};
}

LogicalResult
MatmulOp::bufferize(RewriterBase &rewriter,
                    const bufferization::BufferizationOptions &options,
                    bufferization::BufferizationState &state) {
  SmallVector<Value> buffers;
  for (Value operand : getOperation()->getOperands()) {
    FailureOr<Value> buffer =
        bufferization::getBuffer(rewriter, operand, options, state);
    if (failed(buffer))
      return failure();
    buffers.push_back(*buffer);
  }
  // The same op on the buffers: its variant (properties) and any other
  // attributes carried over.
  rewriter.setInsertionPoint(*this);
  OperationState bufferized(getLoc(), getOperationName());
  bufferized.addOperands(buffers);
  bufferized.useProperties(getProperties());
  bufferized.addAttributes(
      llvm::to_vector(getOperation()->getDiscardableAttrs()));
  rewriter.create(bufferized);
  bufferization::replaceOpWithBufferizedValues(rewriter, *this, buffers.back());
  return success();
}

namespace {
/// Fails at `op` unless its operands are all tensors or all buffers, and
/// its results are `tensorResults` tensors then one `scalar` on tensors, the
/// scalar alone on buffers.
LogicalResult checkForm(Operation *op, Value init, unsigned tensorResults) {
  bool tensors = isa<RankedTensorType>(init.getType());
  for (Value operand : op->getOperands())
    if (isa<ShapedType>(operand.getType()) &&
        isa<RankedTensorType>(operand.getType()) != tensors)
      return op->emitOpError("expects all operands to be tensors or all to be "
                             "buffers");
  unsigned expected = (tensors ? tensorResults : 0) + 1;
  if (op->getNumResults() != expected)
    return op->emitOpError()
           << (tensors ? "on tensors returns its outs and a scalar"
                       : "on buffers returns only its scalar result");
  return success();
}

/// The memory effects of a kernel that reads every buffer operand but its
/// outs and writes its outs.
void readInsWriteOuts(
    DestinationStyleOpInterface op,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType()))
      continue;
    effects.emplace_back(op.isDpsInit(&operand)
                             ? static_cast<MemoryEffects::Effect *>(
                                   MemoryEffects::Write::get())
                             : MemoryEffects::Read::get(),
                         &operand, SideEffects::DefaultResource::get());
  }
}

/// The result an out bufferizes into (the one tied to it), for any other
/// operand none.
bufferization::AliasingValueList tiedResult(DestinationStyleOpInterface op,
                                            OpOperand &operand) {
  if (!op.isDpsInit(&operand))
    return {};
  return {{op.getTiedOpResult(&operand),
           bufferization::BufferRelation::Equivalent}};
}

/// Bufferizes `op` into the same op on buffers, whose only result is the
/// scalar: the outs' buffers replace the tensor results, the new op's
/// scalar the scalar.
LogicalResult bufferizeKernel(DestinationStyleOpInterface op,
                              RewriterBase &rewriter,
                              const bufferization::BufferizationOptions &options,
                              bufferization::BufferizationState &state) {
  SmallVector<Value> buffers;
  for (Value operand : op->getOperands()) {
    if (!isa<RankedTensorType>(operand.getType())) {
      buffers.push_back(operand);
      continue;
    }
    FailureOr<Value> buffer =
        bufferization::getBuffer(rewriter, operand, options, state);
    if (failed(buffer))
      return failure();
    buffers.push_back(*buffer);
  }
  SmallVector<Value> outs;
  for (OpOperand &init : op.getDpsInitsMutable())
    outs.push_back(buffers[init.getOperandNumber()]);
  rewriter.setInsertionPoint(op);
  OperationState bufferized(op->getLoc(), op->getName().getStringRef());
  bufferized.addOperands(buffers);
  bufferized.addTypes(op->getResults().back().getType());
  bufferized.propertiesAttr = op->getPropertiesAsAttribute();
  bufferized.addAttributes(llvm::to_vector(op->getDiscardableAttrs()));
  Operation *made = rewriter.create(bufferized);
  outs.push_back(made->getResult(0));
  bufferization::replaceOpWithBufferizedValues(rewriter, op, outs);
  return success();
}
} // namespace

//===----------------------------------------------------------------------===//
// DampedCholeskyOp
//===----------------------------------------------------------------------===//

LogicalResult DampedCholeskyOp::verify() {
  Operation *op = getOperation();
  if (failed(checkForm(op, getInit(), 1)))
    return failure();
  auto isF32 = [](Type t) { return t.isF32(); };
  auto isI64 = [](Type t) { return t.isSignlessInteger(64); };
  if (failed(checkOperand(op, getHessian(), "a Hessian", 2, isF32, "f32")) ||
      failed(checkOperand(op, getInit(), "outs", 2, isF32, "f32")))
    return failure();
  if (getFactor() && getFactor().getType() != getInit().getType())
    return emitOpError("returns a factor of the type of outs");
  int64_t n = staticDim(getHessian(), 0);
  if (failed(sameSize(op, n, staticDim(getHessian(), 1),
                      "the rows and columns of the Hessian")) ||
      failed(sameSize(op, n, staticDim(getInit(), 0),
                      "the sizes of the Hessian and of outs")) ||
      failed(sameSize(op, n, staticDim(getInit(), 1),
                      "the sizes of the Hessian and of outs")))
    return failure();
  if (Value perm = getPerm())
    if (failed(checkOperand(op, perm, "a permutation", 1, isI64, "i64")) ||
        failed(sameSize(op, n, staticDim(perm, 0),
                        "the sizes of the Hessian and of the permutation")))
      return failure();
  return success();
}

void DampedCholeskyOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  readInsWriteOuts(*this, effects);
}

bool DampedCholeskyOp::bufferizesToMemoryRead(
    OpOperand &operand, const bufferization::AnalysisState &) {
  // The factor is formed in outs: its contents are not read.
  return !isDpsInit(&operand);
}

bool DampedCholeskyOp::bufferizesToMemoryWrite(
    OpOperand &operand, const bufferization::AnalysisState &) {
  return isDpsInit(&operand);
}

bufferization::AliasingValueList
DampedCholeskyOp::getAliasingValues(OpOperand &operand,
                                    const bufferization::AnalysisState &) {
  return tiedResult(*this, operand);
}

LogicalResult DampedCholeskyOp::bufferize(
    RewriterBase &rewriter, const bufferization::BufferizationOptions &options,
    bufferization::BufferizationState &state) {
  return bufferizeKernel(*this, rewriter, options, state);
}

//===----------------------------------------------------------------------===//
// QuantizeBlocksOp
//===----------------------------------------------------------------------===//

LogicalResult QuantizeBlocksOp::verify() {
  Operation *op = getOperation();
  if (getInits().size() != 3)
    return emitOpError("expects three outs: codes, scales and zeros");
  if (failed(checkForm(op, getInits()[0], 3)))
    return failure();
  auto isF32 = [](Type t) { return t.isF32(); };
  auto isI8 = [](Type t) { return t.isSignlessInteger(8); };
  auto isI32 = [](Type t) { return t.isSignlessInteger(32); };
  auto isI64 = [](Type t) { return t.isSignlessInteger(64); };
  Value codes = getInits()[0], scales = getInits()[1], zeros = getInits()[2];
  if (failed(checkOperand(op, getWeight(), "a weight", 2, isF32, "f32")) ||
      failed(checkOperand(op, getFactor(), "a factor", 2, isF32, "f32")) ||
      failed(checkOperand(op, codes, "codes (outs #0)", 2, isI8, "i8")) ||
      failed(checkOperand(op, scales, "scales (outs #1)", 2, isF32, "f32")) ||
      failed(checkOperand(op, zeros, "zeros (outs #2)", 2, isF32, "f32")))
    return failure();
  for (auto [result, init] : llvm::zip(getResults(), getInits()))
    if (result.getType() != init.getType())
      return emitOpError("returns its outs' types");

  int64_t rows = staticDim(getWeight(), 0), cols = staticDim(getWeight(), 1);
  if (failed(sameSize(op, cols, staticDim(getFactor(), 0),
                      "the weight's columns and the factor's size")) ||
      failed(sameSize(op, cols, staticDim(getFactor(), 1),
                      "the weight's columns and the factor's size")) ||
      failed(sameSize(op, rows, staticDim(codes, 0),
                      "the rows of the weight and of the codes")) ||
      failed(sameSize(op, cols, staticDim(codes, 1),
                      "the columns of the weight and of the codes")) ||
      failed(sameSize(op, rows, staticDim(scales, 0),
                      "the rows of the weight and of the scales")) ||
      failed(sameSize(op, staticDim(scales, 0), staticDim(zeros, 0),
                      "the rows of the scales and of the zeros")) ||
      failed(sameSize(op, staticDim(scales, 1), staticDim(zeros, 1),
                      "the groups of the scales and of the zeros")))
    return failure();
  // The groups of the outs: one per row for per-row grids, else one per
  // group of columns.
  int64_t groupSize = getConfig().getGroupSize();
  if (groupSize > 0 && ShapedType::isStatic(cols))
    if (failed(sameSize(op, std::max<int64_t>((cols + groupSize - 1) /
                                                  groupSize,
                                              1),
                        staticDim(scales, 1),
                        "the groups of the weight and of the scales")))
      return failure();

  bool grids = getScales() || getZeros() || getGroupMap();
  if (grids && !(getScales() && getZeros() && getGroupMap()))
    return emitOpError("expects fixed grids as scales, zeros and a group map "
                       "together");
  if (getScales()) {
    if (failed(checkOperand(op, getScales(), "fixed scales", 2, isF32,
                            "f32")) ||
        failed(checkOperand(op, getZeros(), "fixed zeros", 2, isF32, "f32")) ||
        failed(checkOperand(op, getGroupMap(), "a group map", 1, isI32,
                            "i32")) ||
        failed(sameSize(op, cols, staticDim(getGroupMap(), 0),
                        "the weight's columns and the group map's length")))
      return failure();
    for (Value fixed : {getScales(), getZeros()})
      if (failed(sameSize(op, staticDim(fixed, 0), staticDim(scales, 0),
                          "the rows of the fixed and the returned grids")) ||
          failed(sameSize(op, staticDim(fixed, 1), staticDim(scales, 1),
                          "the groups of the fixed and the returned grids")))
        return failure();
  } else if (groupSize < 0) {
    return emitOpError("expects fixed grids for per-row grids (group_size "
                       "-1)");
  }
  if (Value perm = getPerm())
    if (failed(checkOperand(op, perm, "a permutation", 1, isI64, "i64")) ||
        failed(sameSize(op, cols, staticDim(perm, 0),
                        "the weight's columns and the permutation's length")))
      return failure();
  if (getPermuteCodes() && !getPerm())
    return emitOpError("has permute_codes without a permutation");
  if (Value mask = getMaskHessian())
    if (failed(checkOperand(op, mask, "a Hessian (masked)", 2, isF32,
                            "f32")) ||
        failed(sameSize(op, cols, staticDim(mask, 0),
                        "the weight's columns and the Hessian's size")) ||
        failed(sameSize(op, cols, staticDim(mask, 1),
                        "the weight's columns and the Hessian's size")))
      return failure();
  return success();
}

void QuantizeBlocksOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  readInsWriteOuts(*this, effects);
}

bool QuantizeBlocksOp::bufferizesToMemoryRead(
    OpOperand &operand, const bufferization::AnalysisState &) {
  return !isDpsInit(&operand);
}

bool QuantizeBlocksOp::bufferizesToMemoryWrite(
    OpOperand &operand, const bufferization::AnalysisState &) {
  return isDpsInit(&operand);
}

bufferization::AliasingValueList
QuantizeBlocksOp::getAliasingValues(OpOperand &operand,
                                    const bufferization::AnalysisState &) {
  return tiedResult(*this, operand);
}

LogicalResult QuantizeBlocksOp::bufferize(
    RewriterBase &rewriter, const bufferization::BufferizationOptions &options,
    bufferization::BufferizationState &state) {
  return bufferizeKernel(*this, rewriter, options, state);
}
