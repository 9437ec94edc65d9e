//===- Parameters.h - Weights kept in an archive beside a module -*- C++
//-*-===//
//
// A module may keep its weights outside itself: its constants reference
// `dense_resource<NAME>` blobs that the module does not hold, and the module
// attribute `gptq.parameters = "FILE.npz"` names an uncompressed .npz
// archive, relative to the module file's directory, with one array NAME per
// blob. The tools attach the archive's arrays to the module right after
// parsing it, reading the mapped file in place.
//
//===----------------------------------------------------------------------===//

#ifndef GPTQ_EXECUTION_PARAMETERS_H
#define GPTQ_EXECUTION_PARAMETERS_H

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace mlir {
namespace gptq {

class RunFiles;

/// The module attribute that names a module's parameter archive.
constexpr llvm::StringLiteral kParametersAttrName = "gptq.parameters";

/// When `module` has a gptq.parameters attribute: maps the archive it
/// names (a relative name is relative to the directory of `moduleFile`, the
/// path the module was read from; "-" or "": the current directory), makes
/// each array the blob of the dense_resource of its name, and removes the
/// attribute, so that the module holds its weights as if they had been
/// written in it. The blobs read the mapped file in place and keep it mapped
/// for as long as the module's MLIRContext lives; an array whose data is not
/// aligned for its elements (an archive not written by the importer) is
/// copied. Each array's dtype and shape are checked against every constant
/// that uses it.
///
/// Errors are one line, naming the archive and, where one is at fault, the
/// array and the use: an unreadable or malformed archive, a compressed
/// array, a dense_resource of the module that the archive lacks or that the
/// module also holds itself, an array of another dtype or shape than its
/// use. Arrays that the module does not use are ignored. A module without
/// the attribute is left as it is.
///
/// The archives are inputs of the run `files` when given: an archive that
/// is also one of its outputs is an error.
llvm::Error loadParameters(ModuleOp module, llvm::StringRef moduleFile,
                           RunFiles *files = nullptr);

/// The blob of an archive's array `data` of elements of `elementSize`
/// bytes: read in place when the data is aligned for its elements (the
/// importers align it), `keep` holding what maps it for as long as the blob
/// lives; else a copy. `*inPlace` (when given) says which.
AsmResourceBlob archiveBlob(llvm::ArrayRef<char> data, size_t elementSize,
                            std::shared_ptr<const void> keep,
                            bool *inPlace = nullptr);

/// The archive storeParameters writes beside the module `outputFile`:
/// model.q.mlir -> model.q.safetensors.
std::string parameterArchiveFor(llvm::StringRef outputFile);

/// Makes `module`, about to be written to `outputFile`, name its weights in
/// archives instead of holding them: a blob that loadParameters attached and
/// that is unchanged is named by the archive it came from; every other blob
/// (the quantized weights a pass made, say) goes to a safetensors file
/// beside the output (parameterArchiveFor), added to the current RunFiles'
/// outputs, committed with the module (the caller names that file as an
/// output of the run before any work, so that it is checked against the
/// inputs: gptq-opt does). gptq.parameters then lists the archives read, by
/// absolute path (the output may be written in a staging folder and moved),
/// and the new one by its file name (it moves with the module). Returns
/// false, changing nothing, when a blob has no safetensors dtype (i1,
/// index): the module is then written whole.
llvm::Expected<bool>
storeParameters(ModuleOp module, llvm::StringRef outputFile, RunFiles &files);

/// A pass that runs loadParameters on its module, then the pipeline
/// `then` on it: gptq-opt, whose driver parses the module itself, wraps the
/// passes of its command line in it, so that they see the weights whatever
/// form the command line gives them in (`--pass-pipeline` replaces the pass
/// manager it is given). With `storeTo` (the output file) and a module that
/// named archives, it then runs storeParameters and has the module printed
/// without its blobs (MLIR's --mlir-elide-resource-strings-if-larger=0).
/// Its errors are printed as "`toolName`: error: ..." and fail the pass.
/// The archives read and written belong to the run `files`, which commits
/// the one written; it must outlive the pass.
std::unique_ptr<Pass> createLoadParametersPass(std::string moduleFile,
                                               std::string toolName,
                                               OpPassManager then,
                                               RunFiles &files,
                                               std::string storeTo = "");

} // namespace gptq
} // namespace mlir

#endif // GPTQ_EXECUTION_PARAMETERS_H
