//===- AssertToRuntime.cpp - cf.assert to a call of the gptq runtime ------===//
//
// A failed assert calls gptq_runtime_check_failed (lib/Runtime/Checks.cpp)
// with its location and message, so that the caller of the compiled code
// gets the failure back instead of an aborted process.
//
//===----------------------------------------------------------------------===//

#include "gptq/Conversion/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir {
namespace gptq {
#define GEN_PASS_DEF_GPTQASSERTTORUNTIME
#include "gptq/Conversion/Passes.h.inc"
} // namespace gptq
} // namespace mlir

using namespace mlir;

namespace {
constexpr StringLiteral kFailedFn = "gptq_runtime_check_failed";
constexpr StringLiteral kMessagePrefix = "__gptq_check_message_";

/// "file:line:col".
std::string place(FileLineColLoc file) {
  return llvm::formatv("{0}:{1}:{2}", file.getFilename().getValue(),
                       file.getLine(), file.getColumn())
      .str();
}

/// "file:line:col" of the first file location within `loc`, else "".
std::string firstFileLocation(Location loc) {
  std::string text;
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      text = place(file);
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return text;
}

/// "file:line:col: " for the innermost file location of `loc` (the callee of
/// a call-site location: an inlined assert names its own line); for a fused
/// location of ops in several places (an op of a repeated layer, outlined
/// once), "one of A, B, ...: "; else "".
std::string where(Location loc) {
  std::string text;
  loc->walk([&](Location inner) {
    if (auto fused = dyn_cast<FusedLoc>(inner)) {
      SmallVector<std::string> places;
      for (Location part : fused.getLocations()) {
        std::string at = firstFileLocation(part);
        if (!at.empty() && !llvm::is_contained(places, at))
          places.push_back(at);
      }
      if (places.size() < 2)
        return WalkResult::advance();
      text = "one of " + llvm::join(places, ", ") + ": ";
      return WalkResult::interrupt();
    }
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      text = place(file) + ": ";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return text;
}

struct GPTQAssertToRuntimePass
    : gptq::impl::GPTQAssertToRuntimeBase<GPTQAssertToRuntimePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<cf::AssertOp> asserts;
    module.walk([&](cf::AssertOp op) { asserts.push_back(op); });
    if (asserts.empty())
      return;
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    Type ptrType = LLVM::LLVMPointerType::get(ctx);
    Type i32Type = IntegerType::get(ctx, 32);
    b.setInsertionPointToEnd(module.getBody());
    FailureOr<LLVM::LLVMFuncOp> failedFn = LLVM::lookupOrCreateFn(
        b, module, kFailedFn, {ptrType, i32Type}, LLVM::LLVMVoidType::get(ctx));
    if (failed(failedFn)) {
      module.emitError() << "'" << kFailedFn
                         << "' is declared with another signature";
      return signalPassFailure();
    }
    // One global per distinct message.
    llvm::StringMap<LLVM::GlobalOp> globals;
    SymbolTable symbols(module);
    for (cf::AssertOp op : asserts) {
      Location loc = op.getLoc();
      std::string message = where(loc) + op.getMsg().str();
      LLVM::GlobalOp &global = globals[message];
      if (!global) {
        b.setInsertionPointToStart(module.getBody());
        std::string bytes = message;
        bytes.push_back('\0');
        auto type =
            LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), bytes.size());
        global = LLVM::GlobalOp::create(
            b, loc, type, /*isConstant=*/true, LLVM::Linkage::Private,
            (kMessagePrefix + Twine(globals.size() - 1)).str(),
            b.getStringAttr(bytes));
        // Renamed if the module already has a symbol of that name.
        symbols.insert(global);
      }
      // Asserts in an OpenMP region cannot jump out of it.
      bool fatal = false;
      for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
        fatal |= isa<omp::OpenMPDialect>(p->getDialect());

      Block *before = op->getBlock();
      Block *after = before->splitBlock(op->getIterator());
      Region *region = before->getParent();
      Block *failBlock = b.createBlock(region, Region::iterator(after));
      LLVM::AddressOfOp address = LLVM::AddressOfOp::create(b, loc, global);
      Value flag =
          LLVM::ConstantOp::create(b, loc, i32Type, b.getI32IntegerAttr(fatal));
      LLVM::CallOp::create(b, loc, *failedFn, ValueRange{address, flag});
      LLVM::UnreachableOp::create(b, loc);
      b.setInsertionPointToEnd(before);
      cf::CondBranchOp::create(b, loc, op.getArg(), after, ValueRange(),
                               failBlock, ValueRange());
      op.erase();
    }
  }
};
} // namespace
