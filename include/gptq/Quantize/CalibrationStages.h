//===- CalibrationStages.h - The entry cut into calibration stages -*- C++
//-*-===//
//
// The IR side of sequential calibration: the entry function of a model cut
// into stages, one per group of linear layers calibrated together, each a
// module of its own whose function accumulates the group's Hessians
// (gptq.hessian_accumulate) and one that computes, with the quantized
// weights, what later stages read. gptq-quantize-model compiles and runs
// them; nothing here compiles or runs anything.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_QUANTIZE_CALIBRATIONSTAGES_H
#define GPTQ_QUANTIZE_CALIBRATIONSTAGES_H

#include "gptq/Quantize/LinearLayers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <memory>
#include <optional>
#include <vector>

namespace mlir {
namespace gptq {

class CompiledFunction;

/// Where one argument of a stage's function comes from.
struct StageArg {
  enum Kind { Input, Crossing, Constant, Hessian, Count } kind;
  /// Input: the entry's argument number.
  unsigned number = 0;
  /// Crossing: the value of the entry function.
  Value value;
  /// Constant: its op.
  Operation *constant = nullptr;
  /// Hessian and Count: the layer (index into the states) whose Hessian,
  /// and its sample count, the argument is.
  unsigned layer = 0;
};

/// One stage: a slice of the entry function as a function of its own, run as
/// two functions made from it. The first returns the Hessians, their sample
/// counts, the rows (tokens) each Hessian's input held in this call, and the
/// stage's frontier: the values that do not depend on the stage's own
/// weights but that the part depending on them reads. The second takes the
/// frontier as trailing arguments and returns the values later stages read.
/// So each op runs once per sample: the part before the layers in the first
/// pass, the layers and what follows them in the second, with the quantized
/// weights.
struct CalibrationStage {
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  IRMapping map;
  std::vector<StageArg> args;
  /// The layers it calibrates; the Hessians it accumulates and, for each,
  /// the layer it is accumulated for; the layers that read the same
  /// activation as an earlier one (the key and value projections after the
  /// query's) and get a copy of that one's Hessian.
  std::vector<unsigned> layers;
  SmallVector<Value> hessianResults;
  /// For each Hessian, the rows of its input (i64, 0-d): the tokens the
  /// layer saw in the call, fewer than the batch's for an expert.
  SmallVector<Value> tokenResults;
  std::vector<unsigned> accumulatedFor;
  std::vector<std::pair<unsigned, unsigned>> sharesHessianOf;
  /// For each Hessian, its sample count after the call.
  SmallVector<Value> countResults;
  /// Values of the entry function that later stages read.
  llvm::SetVector<Value> outputs;
  /// ExpertCalibration::All: the values of the entry computed in this stage
  /// over all the rows of a dispatch (see cutCalibrationStages), each with
  /// its stage value; `map` holds their routed rows, sliced from these.
  llvm::DenseMap<Value, Value> wide;
  /// The op (of the entry) after which the stage ends, and its first
  /// layer's op.
  unsigned end = 0, first = 0;
  /// The two functions, and the arguments (indices into `args`) that each
  /// takes (the second then takes the frontier).
  OwningOpRef<ModuleOp> hessianModule, outputModule;
  std::vector<unsigned> hessianArgs, outputArgs;
  CompiledFunction *hessians = nullptr, *propagate = nullptr;
};

/// How calibration feeds the experts of a mixture of experts: layers that
/// read rows [offset, offset + count) of a matrix that other such slices
/// read too (the rows a dispatch sorted by expert).
enum class ExpertCalibration {
  /// Each expert's Hessian from the rows its router sends it.
  Routed,
  /// Each expert's Hessian from all the rows of the matrix (every token
  /// through every expert, llm-compressor's mode); the model's outputs,
  /// and what later stages read, are still the routed ones.
  All,
};

/// `moe-calibration=`'s value: routed or all; nullopt for another.
std::optional<ExpertCalibration> parseExpertCalibration(llvm::StringRef value);

/// Which layers calibrate together (sequential=): the layers of one
/// data-flow depth (true-sequential), those of one layers.<i>. block, or
/// all at once.
enum class CalibrationOrder { Layers, Blocks, None };

/// `sequential=`'s value: layers, blocks or none; nullopt for another.
std::optional<CalibrationOrder> parseCalibrationOrder(llvm::StringRef value);

/// sequential='s spelling of `order`.
llvm::StringRef calibrationOrderName(CalibrationOrder order);

/// The stages of an entry function, in order, and the stage of each layer.
struct CalibrationStages {
  std::vector<std::shared_ptr<CalibrationStage>> stages;
  /// For each layer (as given to cutCalibrationStages), its stage; -1 for
  /// a layer not calibrated.
  std::vector<int64_t> stageOf;
};

/// How an entry is cut into calibration stages.
struct StageCutOptions {
  /// Layers: one stage per group of layers that read values of the same
  /// data-flow depth; Blocks: one per layers.<i>. block; None: one stage.
  CalibrationOrder sequential = CalibrationOrder::Layers;
  ExpertCalibration experts = ExpertCalibration::Routed;
  /// sequential=layers: the most bytes of Hessians (`in x in` float32 per
  /// distinct input) one stage accumulates at once; a group of layers that
  /// needs more (all the experts of a block) is cut, in program order, into
  /// stages that each stay under it (or hold one input's). Layers of one
  /// depth do not read one another, so the Hessians are those of the whole
  /// group. 0: no limit.
  uint64_t hessianBudget = 0;
};

/// Cuts `func` (an entry of `module`, one block) into calibration stages for
/// `layers` (gptq-list-linears' analysis of it), of which those with
/// `calibrated` set are calibrated, grouped as `options` says.
/// `layerOfWeight` maps each layer's weight constant to its index: a
/// stage's second function reads that weight as an argument (the quantized
/// one). Large float constants become arguments too, so that stages that
/// differ only in their weights print alike. The ops between a layer's
/// weight and its contraction (the casts, transposes and broadcasts that
/// the analysis sees through) belong to no stage: like constants, they are
/// made again in each stage that reads them, so that no weight crosses
/// between stages as an activation. With ExpertCalibration::All, the ops
/// that compute an expert's rows row by row (its layers, their activation)
/// run in the stages over all the rows of the dispatch instead, their
/// routed rows sliced out for what else reads them. Errors (an entry that
/// cannot be cut so) are emitted at the op, after "`passName`: ".
FailureOr<CalibrationStages>
cutCalibrationStages(ModuleOp module, func::FuncOp func,
                     llvm::ArrayRef<const LinearLayer *> layers,
                     llvm::ArrayRef<bool> calibrated,
                     const llvm::DenseMap<Operation *, unsigned> &layerOfWeight,
                     const StageCutOptions &options, llvm::StringRef passName);

/// The layers of `func` that gptq-quantize-model quantizes: those among
/// `linears` inside `func` that `filter` selects, and of those only the
/// layers of the transformer blocks, as the reference, unless `classifier`
/// (layers outside the layers.<i>. blocks, and layers whose weight other
/// ops read), and no mixture of experts' router unless `routers`. `found`
/// is set to the number of layers inside `func`.
std::vector<const LinearLayer *>
selectQuantizedLayers(const LinearLayers &linears, func::FuncOp func,
                      const LayerNameFilter &filter, bool classifier,
                      bool routers, size_t &found);

/// Gives a layer whose weight other ops read too (a classifier tied to the
/// embeddings) a copy of the weight's source of its own, read only by the
/// layer, so that quantizing it leaves the other readers the float weight;
/// `layer` is updated to the copy. A source the layer alone reads (a
/// widening of a table that others read stored) is left as it is.
void untieWeight(LinearLayer &layer);

/// Why calibration cannot reach `layer` of `func` (inside a nested region,
/// or what checkCalibrationInput finds); empty when it can.
std::string uncalibratedReason(func::FuncOp func, const LinearLayer &layer);

/// Appends each stage's two functions' modules to `into`'s body as nested
/// modules named `stage_<k>_hessians` and `stage_<k>_outputs` (k from 1; a
/// stage whose outputs no later stage reads has no second module).
void appendStageModules(
    ModuleOp into, llvm::ArrayRef<std::shared_ptr<CalibrationStage>> stages);

/// The values of an `arith.constant` of elements or of a load of an
/// immutable global (loadedImmutableGlobal); null otherwise.
ElementsAttr constantElements(Operation *op);

} // namespace gptq
} // namespace mlir

#endif // GPTQ_QUANTIZE_CALIBRATIONSTAGES_H
