//===- LinearLayers.h - Find the linear layers of a model -------*- C++ -*-===//
//
// A linear layer is a linalg contraction of an activation with a constant
// two-dimensional weight. The analysis finds them in the forms that our
// importer and torch-mlir's linalg backend emit, and names them and groups
// them into blocks for the model-level quantization passes.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_QUANTIZE_LINEARLAYERS_H
#define GPTQ_QUANTIZE_LINEARLAYERS_H

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Regex.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace gptq {

/// One linear layer: `out = activation x weight^T` in nn.Linear terms.
struct LinearLayer {
  /// The contraction (a linalg op implementing the contraction interface).
  linalg::LinalgOp op;
  /// The contraction's operand that carries the activations.
  Value activation;
  /// The contraction's operand that carries the weight (the constant itself
  /// or the transpose/broadcast of it that the contraction reads).
  Value weightOperand;
  /// Where the weight comes from: an `arith.constant` or an
  /// `ml_program.global_load_const`, or an `arith.extf` of one that widens
  /// a weight stored in a narrower float type (bf16 or f16, as the importers
  /// write weights read in place from a checkpoint) to the contraction's.
  Operation *weightSource = nullptr;
  /// The constant that holds the weight: weightSource, or the constant that
  /// the widening reads.
  Operation *weightConstant = nullptr;
  /// The weight's values: the constant's `dense` or `dense_resource`
  /// attribute, or the value of the `ml_program.global` (in their stored
  /// element type).
  ElementsAttr weightAttr;
  /// The global that holds the weight, when it comes from one.
  Operation *weightGlobal = nullptr;
  /// Rows and columns in the nn.Linear layout (out x in).
  int64_t outFeatures = 0;
  int64_t inFeatures = 0;
  /// True when the weight is stored in x out (the contraction reads it
  /// transposed with respect to the nn.Linear layout).
  bool transposed = false;
  /// True when the weight's source has uses other than this layer (a weight
  /// tied to an embedding, say).
  bool sharedWeight = false;
  /// True for the model's output classifier, which the model passes leave
  /// float unless asked (as the reference quantizes only the transformer
  /// blocks): a layer in no block when blocks come from `layers.<i>.`
  /// names; without such names, a layer after other layers (depth above 0)
  /// whose result the function returns as it is or through ops that
  /// combine it with no other value (reshapes, casts, a bias, a soft cap).
  bool classifier = false;
  /// True for the router of a mixture of experts: a layer whose result is
  /// read element by element only (`tensor.extract`), to choose each
  /// token's experts. The model passes leave it float by default, as the
  /// reference tools leave routers.
  bool router = false;
  /// True for an expert's layer in a mixture of experts: its input is
  /// computed row by row from the rows a dispatch gives one expert
  /// (routedRows in ExpertDispatch.h), the tokens its router sends it.
  bool expert = false;
  /// The layer's name; `generatedName` when it is `linear.<index>`.
  std::string name;
  bool generatedName = false;
  /// The block the layer belongs to, when it belongs to one.
  std::optional<int64_t> block;
  /// The number of linear layers on the longest data-flow path that reaches
  /// the layer's activation: 0 for the first layers of a model. In a Llama
  /// stack it counts the reference's true-sequential groups (q, k and v;
  /// o; w1 and w3; w2) across blocks.
  int64_t depth = 0;
};

/// Finds the linear layers under an operation (usually the module), in
/// program order. Names: the weight's NameLoc when the weight feeds only this
/// layer; else the contraction's NameLoc; else the weight's NameLoc or the
/// global's symbol name; else `linear.<index>`. An ONNX node path
/// (`/layers.0/attention/wq/MatMul`) names its scope (`layers.0.attention.wq`);
/// generated names (`onnx::MatMul_301`, JAX's `jit(...)`) are no names. A
/// repeated name gets a
/// `#<n>` suffix. Blocks: the `<i>` of a `layers.<i>.` component of the
/// name when any layer has one (then layers without it belong to no block);
/// otherwise, for every layer, the number of linear layers on the longest
/// data-flow path that reaches its activation.
class LinearLayers {
public:
  explicit LinearLayers(Operation *root);

  ArrayRef<LinearLayer> getLayers() const { return layers; }
  bool empty() const { return layers.empty(); }
  size_t size() const { return layers.size(); }
  /// True when the blocks come from `layers.<i>.` names.
  bool blocksFromNames() const { return namedBlocks; }
  /// The number of distinct blocks.
  size_t getNumBlocks() const;

private:
  std::vector<LinearLayer> layers;
  bool namedBlocks = false;
};

/// The immutable `ml_program.global` with a value that `op` loads: by
/// `ml_program.global_load_const`, or by `ml_program.global_load`, which
/// frontends also write for globals they never store to; null otherwise.
Operation *loadedImmutableGlobal(Operation *op);

/// Matches one op: returns the layer (without name and block) when `op` is
/// a contraction of an activation with a constant weight.
std::optional<LinearLayer> matchLinearLayer(Operation *op);

/// Layers selected by name, as the model-level passes' `include=` and
/// `exclude=` options select them: a name is selected when `include` (if
/// given) matches anywhere in it and `exclude` (if given) does not.
class LayerNameFilter {
public:
  /// Fails, naming the option, when a pattern is not a valid regular
  /// expression.
  static llvm::Expected<LayerNameFilter> create(llvm::StringRef include,
                                                llvm::StringRef exclude);
  bool selects(llvm::StringRef name) const;

private:
  std::optional<llvm::Regex> include, exclude;
};

/// Checks that a layer's input can feed gptq.hessian_accumulate: a ranked
/// f32 tensor read with the contraction's reduction dimension last and with
/// the layer's number of input features. Returns what is wrong, or "".
std::string checkCalibrationInput(const LinearLayer &layer);

/// The layer input `input` (checked by checkCalibrationInput) as
/// gptq.hessian_accumulate takes it: [samples, tokens, in] or [tokens, in]
/// as it is, a vector [in] as one token, and more dimensions with all but the
/// last two collapsed into samples.
Value buildCalibrationInput(OpBuilder &b, Location loc, Value input);

/// The operand that reads the layer's weight source on the way to its
/// contraction: the contraction's own weight operand, or the first op of the
/// chain of casts, transposes and broadcasts in between.
OpOperand &getWeightSourceUse(const LinearLayer &layer);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_QUANTIZE_LINEARLAYERS_H
