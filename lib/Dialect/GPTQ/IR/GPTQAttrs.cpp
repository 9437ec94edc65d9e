//===- GPTQAttrs.cpp - GPTQ attributes ------------------------------------===//

#include "gptq/Dialect/GPTQ/IR/GPTQ.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::gptq;

namespace {
/// The reference defaults, in one place for the parser, printer and builder.
struct ConfigValues {
  int64_t bits = 4;
  int64_t groupSize = -1;
  bool sym = false;
  bool actOrder = false;
  bool staticGroups = false;
  double percdamp = 0.01;
  int64_t blockSize = 128;
  bool mse = false;
  double mseNorm = 2.4;
  int64_t mseGrid = 100;
  double mseMaxShrink = 0.8;
};
} // namespace

ConfigAttr ConfigAttr::getDefault(MLIRContext *context) {
  ConfigValues d;
  return ConfigAttr::get(context, d.bits, d.groupSize, d.sym, d.actOrder,
                         d.staticGroups, llvm::APFloat(d.percdamp), d.blockSize,
                         d.mse, llvm::APFloat(d.mseNorm), d.mseGrid,
                         llvm::APFloat(d.mseMaxShrink));
}

LogicalResult ConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t bits, int64_t groupSize, bool sym,
                                 bool actOrder, bool staticGroups,
                                 llvm::APFloat percdampAttr, int64_t blockSize,
                                 bool mse, llvm::APFloat mseNormAttr,
                                 int64_t mseGrid,
                                 llvm::APFloat mseMaxShrinkAttr) {
  double percdamp = percdampAttr.convertToDouble();
  double mseNorm = mseNormAttr.convertToDouble();
  double mseMaxShrink = mseMaxShrinkAttr.convertToDouble();
  if (bits < 2 || bits > 8)
    return emitError() << "expected bits in [2, 8], found " << bits;
  if (groupSize != -1 && groupSize < 1)
    return emitError() << "expected group_size -1 or >= 1, found " << groupSize;
  if (staticGroups && groupSize == -1)
    return emitError() << "expected a group_size >= 1 with static_groups";
  if (!(percdamp > 0.0 && percdamp < 1.0))
    return emitError() << "expected percdamp in (0, 1), found " << percdamp;
  // The lowering damps in float32: a value that is 0, subnormal or 1 there
  // would damp by another amount than the one asked for (and reported).
  float percdamp32 = static_cast<float>(percdamp);
  if (!std::isnormal(percdamp32) || percdamp32 >= 1.0f) {
    InFlightDiagnostic diag = emitError();
    diag << "expected percdamp in ["
         << static_cast<double>(std::numeric_limits<float>::min())
         << ", 1) as a float32, the type the damping is computed in; found ";
    if (percdamp32 >= 1.0f)
      return diag << "a value that rounds to 1 in float32";
    return diag << percdamp << ", which is " << static_cast<double>(percdamp32)
                << " in float32";
  }
  if (blockSize < 1)
    return emitError() << "expected block_size >= 1, found " << blockSize;
  if (!(mseNorm > 0.0) || !std::isfinite(mseNorm))
    return emitError() << "expected a finite mse_norm > 0, found " << mseNorm;
  if (!std::isnormal(static_cast<float>(mseNorm)))
    return emitError() << "expected an mse_norm that is a normal float32 (in ["
                       << static_cast<double>(std::numeric_limits<float>::min())
                       << ", "
                       << static_cast<double>(std::numeric_limits<float>::max())
                       << "]), the type the search computes in; found "
                       << mseNorm;
  if (mseGrid < 1)
    return emitError() << "expected mse_grid >= 1, found " << mseGrid;
  if (!(mseMaxShrink > 0.0 && mseMaxShrink <= 1.0))
    return emitError() << "expected mse_max_shrink in (0, 1], found "
                       << mseMaxShrink;
  if (!std::isnormal(static_cast<float>(mseMaxShrink)))
    return emitError() << "expected an mse_max_shrink that is a normal "
                          "float32 (at least "
                       << static_cast<double>(std::numeric_limits<float>::min())
                       << "), the type the search computes in; found "
                       << mseMaxShrink;
  return success();
}

Attribute ConfigAttr::parse(AsmParser &parser, Type) {
  ConfigValues v;
  llvm::StringSet<> seen;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess())
    return {};

  auto parseBool = [&](bool &out) -> ParseResult {
    StringRef word;
    SMLoc at = parser.getCurrentLocation();
    if (parser.parseKeyword(&word))
      return failure();
    if (word != "true" && word != "false")
      return parser.emitError(at, "expected 'true' or 'false', found '")
             << word << "'";
    out = word == "true";
    return success();
  };

  if (failed(parser.parseOptionalGreater())) {
    do {
      StringRef key;
      SMLoc keyLoc = parser.getCurrentLocation();
      if (parser.parseKeyword(&key) || parser.parseEqual())
        return {};
      if (!seen.insert(key).second) {
        parser.emitError(keyLoc, "duplicate key '") << key << "'";
        return {};
      }
      ParseResult r = failure();
      if (key == "bits")
        r = parser.parseInteger(v.bits);
      else if (key == "group_size")
        r = parser.parseInteger(v.groupSize);
      else if (key == "sym")
        r = parseBool(v.sym);
      else if (key == "act_order")
        r = parseBool(v.actOrder);
      else if (key == "static_groups")
        r = parseBool(v.staticGroups);
      else if (key == "percdamp")
        r = parser.parseFloat(v.percdamp);
      else if (key == "block_size")
        r = parser.parseInteger(v.blockSize);
      else if (key == "mse")
        r = parseBool(v.mse);
      else if (key == "mse_norm")
        r = parser.parseFloat(v.mseNorm);
      else if (key == "mse_grid")
        r = parser.parseInteger(v.mseGrid);
      else if (key == "mse_max_shrink")
        r = parser.parseFloat(v.mseMaxShrink);
      else {
        parser.emitError(keyLoc, "unknown key '")
            << key
            << "' (expected one of bits, group_size, sym, act_order, "
               "static_groups, percdamp, block_size, mse, mse_norm, "
               "mse_grid, mse_max_shrink)";
        return {};
      }
      if (failed(r))
        return {};
    } while (succeeded(parser.parseOptionalComma()));
    if (parser.parseGreater())
      return {};
  }
  return parser.getChecked<ConfigAttr>(
      loc, parser.getContext(), v.bits, v.groupSize, v.sym, v.actOrder,
      v.staticGroups, llvm::APFloat(v.percdamp), v.blockSize, v.mse,
      llvm::APFloat(v.mseNorm), v.mseGrid, llvm::APFloat(v.mseMaxShrink));
}

void ConfigAttr::print(AsmPrinter &printer) const {
  ConfigValues d;
  SmallVector<std::function<void()>> items;
  auto addInt = [&](StringRef key, int64_t value, int64_t def) {
    if (value != def)
      items.push_back(
          [&printer, key, value] { printer << key << " = " << value; });
  };
  auto addBool = [&](StringRef key, bool value, bool def) {
    if (value != def)
      items.push_back([&printer, key, value] {
        printer << key << " = " << (value ? "true" : "false");
      });
  };
  auto addFloat = [&](StringRef key, const llvm::APFloat &attr, double def) {
    double value = attr.convertToDouble();
    if (value != def)
      items.push_back([&printer, key, value] {
        printer << key << " = ";
        printer.printFloat(llvm::APFloat(value));
      });
  };
  addInt("bits", getBits(), d.bits);
  addInt("group_size", getGroupSize(), d.groupSize);
  addBool("sym", getSym(), d.sym);
  addBool("act_order", getActOrder(), d.actOrder);
  addBool("static_groups", getStaticGroups(), d.staticGroups);
  addFloat("percdamp", getPercdamp(), d.percdamp);
  addInt("block_size", getBlockSize(), d.blockSize);
  addBool("mse", getMse(), d.mse);
  addFloat("mse_norm", getMseNorm(), d.mseNorm);
  addInt("mse_grid", getMseGrid(), d.mseGrid);
  addFloat("mse_max_shrink", getMseMaxShrink(), d.mseMaxShrink);
  printer << "<";
  llvm::interleaveComma(items, printer, [](const auto &item) { item(); });
  printer << ">";
}
