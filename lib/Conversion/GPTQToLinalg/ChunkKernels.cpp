//===- ChunkKernels.cpp - Packed-code steps of the rows kernel ------------===//
//
// The inner step of KernelsCPU.mlir's __gptq_matmul_rows_qk for each width
// of 2 to 7 bits, built here because its shifts, masks and lane shuffles
// are constants of the width: unrolled over a chunk's 32 columns, every
// code of a lane is one shift and mask of a register (two shifts and an or
// where it straddles two words), with no loop, table or memory access
// between the words' loads and the FMAs.
//
//===----------------------------------------------------------------------===//

#include "ChunkKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <cassert>
#include <cstdint>

using namespace mlir;

namespace {

constexpr unsigned kLanes = 16;
constexpr unsigned kLaneColumns = 32;
constexpr unsigned kRows = 4;
constexpr unsigned kMaxWords = 8;

/// The positions of the kernels' arguments (after %bits in the
/// dispatcher): %xp, %mm, %ch, %qw, %row0 .. %row3, %xsum, %s0 .. %s3,
/// %z0 .. %z3, %u0 .. %u3.
enum Argument : unsigned {
  kXp,
  kMm,
  kCh,
  kQw,
  kRow0,
  kXsum = kRow0 + kRows,
  kScale0,
  kZero0 = kScale0 + kRows,
  kAcc0 = kZero0 + kRows,
  kNumArguments = kAcc0 + kRows
};

VectorType floatLanes(MLIRContext *ctx) {
  return VectorType::get({kLanes}, Float32Type::get(ctx));
}

VectorType wordLanes(MLIRContext *ctx) {
  return VectorType::get({kLanes}, IntegerType::get(ctx, 32));
}

/// The kernels' argument types, in the order of Argument.
SmallVector<Type> kernelArgumentTypes(MLIRContext *ctx) {
  Type index = IndexType::get(ctx);
  SmallVector<Type> types = {
      RankedTensorType::get(
          {ShapedType::kDynamic, ShapedType::kDynamic, kLaneColumns, kLanes},
          Float32Type::get(ctx)),
      index, index,
      RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic},
                            IntegerType::get(ctx, 32))};
  types.append(kRows, index);
  types.append(1 + 3 * kRows, floatLanes(ctx));
  assert(types.size() == kNumArguments && "an argument without its type");
  return types;
}

/// The kernels' results: each row's accumulator.
SmallVector<Type> kernelResultTypes(MLIRContext *ctx) {
  return SmallVector<Type>(kRows, floatLanes(ctx));
}

/// A private function `@<prefix><name>` of the kernels' arguments after
/// `leading` and their results, with `b` at the start of its body.
func::FuncOp createKernelFunction(ImplicitLocOpBuilder &b, StringRef name,
                                  TypeRange leading) {
  SmallVector<Type> inputs(leading);
  llvm::append_range(inputs, kernelArgumentTypes(b.getContext()));
  auto type = b.getFunctionType(inputs, kernelResultTypes(b.getContext()));
  auto fn = func::FuncOp::create(
      b, (Twine(gptq::kChunkKernelPrefix) + name).str(), type);
  fn.setPrivate();
  b.setInsertionPointToStart(fn.addEntryBlock());
  return fn;
}

/// Builds __gptq_chunk_b<bits>: the <bits>-bit codes of chunk %ch (its
/// 16 * bits words in each of four rows; lane i: columns 32 i .. 32 i + 31,
/// words bits * i .. bits * i + bits - 1) times the activations
/// %xp[%mm, %ch], each lane's sum P dequantized with its scale and zero (%s
/// and %z of its row) and the sum of its activations %xsum,
/// s * (P - z * xsum), and added to %u0 .. %u3.
class ChunkKernel {
public:
  ChunkKernel(ImplicitLocOpBuilder &b, unsigned bits) : b(b), bits(bits) {}

  func::FuncOp build() {
    func::FuncOp fn = createKernelFunction(b, ("b" + Twine(bits)).str(),
                                           /*leading=*/{});
    args = fn.getArguments();
    createConstants();
    loadWords();
    for (unsigned r = 0; r < kRows; ++r)
      for (unsigned j = 0; j < bits; ++j)
        gatherLaneWords(r, j);
    for (unsigned r = 0; r < kRows; ++r)
      acc[r] = zeroLanes;
    for (unsigned t = 0; t < kLaneColumns; ++t)
      accumulateColumn(t);
    SmallVector<Value> results;
    for (unsigned r = 0; r < kRows; ++r)
      results.push_back(dequantizeRow(r));
    func::ReturnOp::create(b, results);
    return fn;
  }

private:
  Value constant(TypedAttr value) {
    return arith::ConstantOp::create(b, value);
  }

  Value index(int64_t value) { return constant(b.getIndexAttr(value)); }

  Value splat(int32_t value) {
    return constant(DenseElementsAttr::get(wordLanes(b.getContext()), value));
  }

  /// The constants ahead of the loads: zeros, the chunk's first word
  /// %base, every shift and %mask<o>, a code's bits at bit o of a word.
  void createConstants() {
    zeroIndex = index(0);
    zeroWord = constant(b.getI32IntegerAttr(0));
    zeroFloat = constant(b.getF32FloatAttr(0.0f));
    zeroLanes =
        constant(DenseElementsAttr::get(floatLanes(b.getContext()), 0.0f));
    Value chunkWords = index(kLanes * bits);
    base = arith::MulIOp::create(b, args[kCh], chunkWords);
    for (unsigned shift = 1; shift < 32; ++shift)
      shifts[shift] = splat(shift);
    for (unsigned offset = 0; offset + bits <= 32; ++offset)
      masks[offset] = splat(static_cast<int32_t>(((1u << bits) - 1) << offset));
  }

  /// The chunk's words of each row, as stored: vector j holds words
  /// 16 j .. 16 j + 15 (zero past the row's end).
  void loadWords() {
    SmallVector<Value> columns;
    for (unsigned j = 0; j < bits; ++j)
      columns.push_back(arith::AddIOp::create(b, base, index(kLanes * j)));
    for (unsigned r = 0; r < kRows; ++r)
      for (unsigned j = 0; j < bits; ++j)
        stored[r][j] = vector::TransferReadOp::create(
            b, wordLanes(b.getContext()), args[kQw],
            ValueRange{args[kRow0 + r], columns[j]}, zeroWord);
  }

  /// Lane i's word j of row r: word bits * i + j of the chunk, gathered
  /// from the stored vectors by shuffles (the first two, then one more
  /// each).
  void gatherLaneWords(unsigned r, unsigned j) {
    unsigned last = (bits * (kLanes - 1) + j) / kLanes;
    Value gathered = stored[r][0];
    for (unsigned src = 1; src <= last; ++src) {
      SmallVector<int64_t> picks;
      for (unsigned i = 0; i < kLanes; ++i) {
        unsigned e = bits * i + j, from = e / kLanes, lane = e % kLanes;
        if (from == src)
          picks.push_back(kLanes + lane);
        else if (src == 1)
          picks.push_back(from == 0 ? lane : 0);
        else
          picks.push_back(i);
      }
      gathered = vector::ShuffleOp::create(b, gathered, stored[r][src], picks);
    }
    lanes[r][j] = gathered;
  }

  /// Column t of every lane: its code at bit bits * t of the lane's words,
  /// times the column's activations, added to each row's sum.
  void accumulateColumn(unsigned t) {
    Value activations = vector::TransferReadOp::create(
        b, floatLanes(b.getContext()), args[kXp],
        ValueRange{args[kMm], args[kCh], index(t), zeroIndex}, zeroFloat,
        ArrayRef<bool>{true});
    unsigned bit = bits * t, word = bit / 32, offset = bit % 32;
    for (unsigned r = 0; r < kRows; ++r) {
      Value code = extractCode(r, word, offset);
      Value asFloat =
          arith::UIToFPOp::create(b, floatLanes(b.getContext()), code);
      acc[r] = math::FmaOp::create(b, activations, asFloat, acc[r]);
    }
  }

  /// Row r's codes at bit `offset` of lane word `word`.
  Value extractCode(unsigned r, unsigned word, unsigned offset) {
    Value words = lanes[r][word];
    // Masked in place: code * 2^offset, which the column's activations
    // (scaled by 2^-offset) take back exactly.
    if (offset + bits <= 32)
      return arith::AndIOp::create(b, words, masks[offset]);
    // Straddling two words: shifted down and joined with the next.
    Value low = arith::ShRUIOp::create(b, words, shifts[offset]);
    Value high =
        arith::ShLIOp::create(b, lanes[r][word + 1], shifts[32 - offset]);
    Value both = arith::OrIOp::create(b, low, high);
    return arith::AndIOp::create(b, both, masks[0]);
  }

  /// s * (P - z * xsum) + u for row r.
  Value dequantizeRow(unsigned r) {
    Value zeroTimesSum =
        arith::MulFOp::create(b, args[kZero0 + r], args[kXsum]);
    Value centred = arith::SubFOp::create(b, acc[r], zeroTimesSum);
    return math::FmaOp::create(b, args[kScale0 + r], centred, args[kAcc0 + r]);
  }

  ImplicitLocOpBuilder &b;
  unsigned bits;
  ValueRange args;
  Value zeroIndex, zeroWord, zeroFloat, zeroLanes, base;
  Value shifts[32], masks[32];
  Value stored[kRows][kMaxWords], lanes[kRows][kMaxWords];
  Value acc[kRows];
};

/// Builds __gptq_chunk_widths(%bits) -> i1: whether a chunk kernel of width
/// %bits is there.
void buildWidths(ImplicitLocOpBuilder &b, ArrayRef<unsigned> widths) {
  auto fn = func::FuncOp::create(
      b, (Twine(gptq::kChunkKernelPrefix) + "widths").str(),
      b.getFunctionType({b.getI64Type()}, {b.getI1Type()}));
  fn.setPrivate();
  b.setInsertionPointToStart(fn.addEntryBlock());
  Value any = arith::ConstantOp::create(b, b.getBoolAttr(false));
  for (unsigned width : widths) {
    Value w = arith::ConstantOp::create(b, b.getI64IntegerAttr(width));
    Value is = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                     fn.getArgument(0), w);
    any = arith::OrIOp::create(b, any, is);
  }
  func::ReturnOp::create(b, any);
}

/// Builds __gptq_chunk_step(%bits, ...): the call of the kernel of width
/// %bits (one of __gptq_chunk_widths'), or %u0 .. %u3 unchanged.
void buildStep(ImplicitLocOpBuilder &b, ArrayRef<func::FuncOp> kernels,
               ArrayRef<unsigned> widths) {
  func::FuncOp fn = createKernelFunction(b, "step", {b.getI64Type()});
  ValueRange args = fn.getArguments().drop_front();
  Value width =
      arith::IndexCastOp::create(b, b.getIndexType(), fn.getArgument(0));
  SmallVector<int64_t> cases(widths);
  auto dispatch = scf::IndexSwitchOp::create(
      b, kernelResultTypes(b.getContext()), width, cases, cases.size());
  OpBuilder::InsertionGuard guard(b);
  for (auto [kernel, region] :
       llvm::zip_equal(kernels, dispatch.getCaseRegions())) {
    b.setInsertionPointToStart(&region.emplaceBlock());
    auto call = func::CallOp::create(b, kernel, args);
    scf::YieldOp::create(b, call.getResults());
  }
  b.setInsertionPointToStart(&dispatch.getDefaultRegion().emplaceBlock());
  scf::YieldOp::create(b, args.take_back(kRows));
  b.setInsertionPointAfter(dispatch);
  func::ReturnOp::create(b, dispatch.getResults());
}

} // namespace

OwningOpRef<ModuleOp> gptq::buildChunkKernels(MLIRContext *ctx,
                                              ArrayRef<unsigned> widths) {
  ctx->loadDialect<arith::ArithDialect, func::FuncDialect, math::MathDialect,
                   scf::SCFDialect, tensor::TensorDialect,
                   vector::VectorDialect>();
  auto loc = NameLoc::get(StringAttr::get(ctx, "gptq-chunk-kernels"));
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  ImplicitLocOpBuilder b(loc, ctx);
  SmallVector<func::FuncOp> kernels;
  for (unsigned bits : widths) {
    assert(bits >= kChunkKernelMinBits && bits <= kChunkKernelMaxBits &&
           "no chunk kernel of that width");
    b.setInsertionPointToEnd(module->getBody());
    kernels.push_back(ChunkKernel(b, bits).build());
  }
  b.setInsertionPointToEnd(module->getBody());
  buildWidths(b, widths);
  b.setInsertionPointToEnd(module->getBody());
  buildStep(b, kernels, widths);
  return module;
}
