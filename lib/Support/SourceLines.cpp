//===- SourceLines.cpp - Diagnostics without overlong source lines --------===//

#include "gptq/Support/SourceLines.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <string>

using namespace mlir;

bool gptq::isLongSourceLine(llvm::StringRef buffer, unsigned line) {
  if (line == 0)
    return false;
  const char *start = buffer.data(), *end = buffer.data() + buffer.size();
  for (unsigned i = 1; i < line; ++i) {
    const void *newline = std::memchr(start, '\n', end - start);
    if (!newline)
      return false;
    start = static_cast<const char *>(newline) + 1;
  }
  llvm::StringRef rest(start, end - start);
  return rest.take_front(kLongestShownLine + 1).find('\n') ==
             llvm::StringRef::npos &&
         rest.size() > kLongestShownLine;
}

namespace {
/// The file location a diagnostic at `loc` is shown at: `loc` itself, or
/// the first one that a name, call-site or fused location holds.
std::optional<FileLineColLoc> fileLocation(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return file;
  if (auto name = dyn_cast<NameLoc>(loc))
    return fileLocation(name.getChildLoc());
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return fileLocation(call.getCallee());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto file = fileLocation(inner))
        return file;
  return std::nullopt;
}

llvm::StringRef severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

void printOne(Diagnostic &diagnostic, llvm::raw_ostream &os) {
  if (auto loc = fileLocation(diagnostic.getLocation()))
    os << loc->getFilename().getValue() << ":" << loc->getLine() << ":"
       << loc->getColumn() << ": ";
  os << severityName(diagnostic.getSeverity()) << ": " << diagnostic.str()
     << "\n";
}
} // namespace

void gptq::printWithoutSourceLines(Diagnostic &diagnostic,
                                   llvm::raw_ostream &os) {
  printOne(diagnostic, os);
  for (Diagnostic &note : diagnostic.getNotes())
    printOne(note, os);
}

void gptq::registerLongLineHandler(MLIRContext *context, llvm::StringRef path,
                                   llvm::StringRef buffer,
                                   llvm::raw_ostream &os) {
  context->getDiagEngine().registerHandler(
      [path = path.str(), buffer,
       &os](Diagnostic &diagnostic) -> LogicalResult {
        auto loc = fileLocation(diagnostic.getLocation());
        if (!loc || loc->getFilename().getValue() != path ||
            !isLongSourceLine(buffer, loc->getLine()))
          return failure();
        printWithoutSourceLines(diagnostic, os);
        return success();
      });
}
