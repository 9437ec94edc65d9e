//===- FrontendInput.cpp - Modules in other frontends' dialects -----------===//

#include "gptq/Support/FrontendInput.h"

#include "gptq/Support/ModuleFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir::gptq;

namespace {
/// IREE's input conversion of StableHLO, as iree-compile runs it, ending
/// in func.func and linalg on tensors.
constexpr llvm::StringLiteral kPipeline =
    "builtin.module(inline,func.func(chlo-legalize-to-stablehlo),"
    "iree-stablehlo-to-iree-input,canonicalize)";

bool isFrontendDialect(llvm::StringRef name) {
  return name.starts_with("stablehlo.") || name.starts_with("chlo.") ||
         name.starts_with("util.");
}

/// Calls `visit(name, line, column)` for each op name of a frontend dialect
/// that starts a line's operation (after `%results = ` and the generic
/// form's quote), until it returns false. Stops at the dialect resources.
template <typename Visit>
void forEachFrontendOp(llvm::StringRef text, Visit visit) {
  size_t line = 0, start = 0;
  while (start < text.size()) {
    ++line;
    size_t end = text.find('\n', start);
    if (end == llvm::StringRef::npos)
      end = text.size();
    llvm::StringRef whole = text.slice(start, end);
    llvm::StringRef rest = whole.ltrim();
    if (rest.starts_with("{-#"))
      return;
    if (rest.starts_with("%")) {
      size_t eq = rest.find(" = ");
      rest = eq == llvm::StringRef::npos ? llvm::StringRef()
                                         : rest.drop_front(eq + 3);
    }
    rest.consume_front("\"");
    llvm::StringRef name = rest.take_while(
        [](char c) { return llvm::isAlnum(c) || c == '_' || c == '.'; });
    if (isFrontendDialect(name) &&
        !visit(name, line, size_t(name.data() - text.data())))
      return;
    start = end + 1;
  }
}

/// `text` with `util.func` and `util.return` as `func.func` and
/// `func.return`; an error naming any other util op.
llvm::Expected<std::string> replaceUtilFunctions(llvm::StringRef text,
                                                 llvm::StringRef path) {
  std::string out;
  out.reserve(text.size());
  size_t copied = 0;
  std::string unsupported;
  forEachFrontendOp(
      text, [&](llvm::StringRef name, size_t line, size_t offset) {
        if (name != "util.func" && name != "util.return") {
          unsupported = "'" + name.str() + "' at line " + std::to_string(line);
          return false;
        }
        out.append(text.data() + copied, offset - copied);
        out += name == "util.func" ? "func.func" : "func.return";
        copied = offset + name.size();
        return true;
      });
  if (!unsupported.empty())
    return llvm::createStringError(
        "'" + path + "' holds " + unsupported +
        ": of IREE's input form only util.func and util.return are read "
        "(with upstream ops inside); convert the model from its StableHLO "
        "instead");
  out.append(text.data() + copied, text.size() - copied);
  return out;
}

/// `text` with every `from` (a temporary copy's path) written as `to`.
std::string renamed(llvm::StringRef text, llvm::StringRef from,
                    llvm::StringRef to) {
  std::string out;
  out.reserve(text.size());
  for (size_t at; (at = text.find(from)) != llvm::StringRef::npos;
       text = text.drop_front(at + from.size()))
    out.append(text.data(), at).append(to.data(), to.size());
  return out.append(text.data(), text.size());
}

/// Runs iree-opt's conversion of StableHLO on `text`; the converted text.
llvm::Expected<std::string> runIreeOpt(const std::string &ireeOpt,
                                       llvm::StringRef text,
                                       llvm::StringRef path) {
  llvm::SmallString<128> in, out, err;
  for (auto [name, file] : {std::pair{"in", &in}, {"out", &out}, {"err", &err}})
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
            "gptq-stablehlo-" + std::string(name), "mlir", *file))
      return llvm::createStringError("cannot create a temporary file: " +
                                     ec.message());
  llvm::FileRemover removeIn(in), removeOut(out), removeErr(err);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(in, ec);
    if (!ec) {
      os << text;
      os.close();
      ec = os.error();
    }
    if (ec)
      return llvm::createStringError("cannot write '" + in.str() +
                                     "': " + ec.message());
  }
  std::string pipeline = ("--pass-pipeline=" + kPipeline).str();
  llvm::SmallVector<llvm::StringRef> args = {
      ireeOpt, "--mlir-print-debuginfo", pipeline, in, "-o", out};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(),
                                                llvm::StringRef(err)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(ireeOpt, args, std::nullopt, redirects,
                                     /*SecondsToWait=*/0, /*MemoryLimit=*/0,
                                     &message);
  if (rc != 0) {
    std::string said;
    if (auto log = llvm::MemoryBuffer::getFile(err)) {
      llvm::StringRef all = (*log)->getBuffer().trim();
      // Its diagnostics name the temporary copy: name the input instead.
      said = renamed(all, in, path);
    }
    return llvm::createStringError(
        "'" + path + "' holds StableHLO, which " + ireeOpt +
        " could not convert" +
        (rc < 0 ? " (" + message + ")"
                : " (exit code " + std::to_string(rc) + ")") +
        (said.empty() ? "" : ":\n" + said));
  }
  auto converted = llvm::MemoryBuffer::getFile(out);
  if (!converted)
    return llvm::createStringError("cannot read iree-opt's output '" +
                                   out.str() +
                                   "': " + converted.getError().message());
  // The copy's locations name the temporary file: name the input.
  return renamed((*converted)->getBuffer(), in, path);
}
} // namespace

std::optional<FrontendOp> mlir::gptq::findFrontendOp(llvm::StringRef text) {
  // MLIR bytecode starts with "ML\xefR".
  if (text.starts_with("ML\xefR"))
    return std::nullopt;
  std::optional<FrontendOp> found;
  forEachFrontendOp(text, [&](llvm::StringRef name, size_t line, size_t) {
    found = FrontendOp{name.str(), line};
    return false;
  });
  return found;
}

std::string mlir::gptq::findIreeOpt() {
  if (const char *set = std::getenv("GPTQ_IREE_OPT"); set && *set)
    return set;
  if (auto found = llvm::sys::findProgramByName("iree-opt"))
    return *found;
  if (const char *venv = std::getenv("VIRTUAL_ENV"); venv && *venv) {
    llvm::SmallString<256> path(venv);
    llvm::sys::path::append(path, "bin", "iree-opt");
    if (llvm::sys::fs::can_execute(path))
      return path.str().str();
  }
  return "";
}

std::unique_ptr<llvm::MemoryBuffer>
mlir::gptq::convertFrontendInput(std::unique_ptr<llvm::MemoryBuffer> input,
                                 std::string *error) {
  llvm::StringRef text = input->getBuffer();
  std::optional<FrontendOp> op = findFrontendOp(text);
  if (!op)
    return input;
  std::string path = input->getBufferIdentifier().str();
  std::string where = "'" + op->name + "' at line " + std::to_string(op->line);
  bool stablehlo = !llvm::StringRef(op->name).starts_with("util.");
  std::string converted = text.str(), how;
  if (stablehlo) {
    std::string ireeOpt = findIreeOpt();
    if (ireeOpt.empty()) {
      *error = "'" + path + "' holds StableHLO (" + where +
               "), which is read through IREE's input conversion, and no "
               "iree-opt was found: install it (pip install "
               "iree-base-compiler) on the PATH, or set GPTQ_IREE_OPT to it";
      return nullptr;
    }
    llvm::Expected<std::string> result = runIreeOpt(ireeOpt, text, path);
    if (!result) {
      *error = llvm::toString(result.takeError());
      return nullptr;
    }
    converted = std::move(*result);
    how = "StableHLO (" + where + "): converted to linalg by " + ireeOpt +
          " --pass-pipeline='" + kPipeline.str() + "'";
  } else {
    how = "IREE's input form (" + where +
          "): read with func.func and func.return for util.func and "
          "util.return";
  }
  // IREE's util.func form, given or left by iree-opt.
  if (findFrontendOp(converted)) {
    llvm::Expected<std::string> replaced =
        replaceUtilFunctions(converted, path);
    if (!replaced) {
      *error = llvm::toString(replaced.takeError());
      return nullptr;
    }
    converted = std::move(*replaced);
  }
  llvm::errs() << "note: '" << path << "' holds " << how << "\n";
  // The converted ops keep the input's locations: a diagnostic shows the
  // input's line, which a source manager finds by the input's name. The
  // converted text has other lines (unless only util names changed, in
  // place), so it is named apart.
  return guardedModuleBuffer(
      converted, stablehlo ? path + " (converted by iree-opt)" : path, error);
}
