//===- CpuIsa.cpp - The instruction sets the CPU kernels are written for --===//

#include "gptq/Codegen/CPU/CpuIsa.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/IR/Module.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

using namespace mlir;
using namespace mlir::gptq;

namespace {
constexpr std::pair<CpuIsa, const char *> kNames[] = {
    {CpuIsa::Generic, "generic"},
    {CpuIsa::AVX2, "avx2"},
    {CpuIsa::AVX512, "avx512"},
    {CpuIsa::AVX512VNNI, "avx512-vnni"},
};
} // namespace

llvm::StringRef mlir::gptq::cpuIsaName(CpuIsa isa) {
  for (auto [candidate, name] : kNames)
    if (candidate == isa)
      return name;
  return "generic";
}

std::optional<CpuIsa> mlir::gptq::parseCpuIsa(llvm::StringRef name) {
  for (auto [candidate, known] : kNames)
    if (name == known)
      return candidate;
  return std::nullopt;
}

std::string mlir::gptq::cpuIsaNames() {
  std::string names;
  for (auto [candidate, name] : kNames)
    names += (names.empty() ? "" : ", ") + std::string(name);
  return names;
}

CpuIsa mlir::gptq::cpuIsaOfFeatures(llvm::StringRef features,
                                    llvm::StringRef triple) {
  if (!llvm::Triple(triple).isX86())
    return CpuIsa::Generic;
  llvm::SmallVector<llvm::StringRef> list;
  features.split(list, ',', -1, /*KeepEmpty=*/false);
  llvm::StringMap<bool> has;
  for (llvm::StringRef feature : list)
    if (feature.size() > 1 && (feature[0] == '+' || feature[0] == '-'))
      has[feature.drop_front()] = feature[0] == '+';
  auto all = [&](std::initializer_list<const char *> names) {
    for (const char *name : names)
      if (!has.lookup(name))
        return false;
    return true;
  };
  if (!all({"avx2", "fma"}))
    return CpuIsa::Generic;
  if (!all({"avx512f", "avx512bw", "avx512dq", "avx512vl"}))
    return CpuIsa::AVX2;
  if (!all({"avx512vnni"}))
    return CpuIsa::AVX512;
  return CpuIsa::AVX512VNNI;
}

CpuIsa mlir::gptq::hostCpuIsa() {
  static const CpuIsa host = [] {
    std::string features;
    for (const auto &[name, enabled] : llvm::sys::getHostCPUFeatures())
      features += (enabled ? ",+" : ",-") + name.str();
    return cpuIsaOfFeatures(features, llvm::sys::getProcessTriple());
  }();
  return host;
}

llvm::StringRef mlir::gptq::cpuNameForIsa(CpuIsa isa) {
  switch (isa) {
  case CpuIsa::Generic:
    return "";
  case CpuIsa::AVX2:
    return "x86-64-v3";
  case CpuIsa::AVX512:
  case CpuIsa::AVX512VNNI:
    return "x86-64-v4";
  }
  return "";
}

llvm::StringRef mlir::gptq::cpuFeaturesForIsa(CpuIsa isa) {
  return isa == CpuIsa::AVX512VNNI ? "+avx512vnni" : "";
}

std::optional<CpuIsa> mlir::gptq::resolveCpuIsaOption(llvm::StringRef option) {
  if (option == kHostCpuIsa)
    return hostCpuIsa();
  return parseCpuIsa(option);
}

void gptq::keepWideVectors(llvm::Module &module) {
  for (llvm::Function &f : module) {
    f.addFnAttr("prefer-vector-width", "512");
    f.addFnAttr("min-legal-vector-width", "512");
  }
}

FailureOr<CpuKernelForms>
gptq::kernelFormsOfOptions(Operation *op, StringRef isa, StringRef byteDots) {
  std::optional<CpuIsa> chosen = resolveCpuIsaOption(isa);
  if (!chosen) {
    op->emitError() << "cpu-isa must be " << kHostCpuIsa << " or one of "
                    << cpuIsaNames() << ", found '" << isa << "'";
    return failure();
  }
  CpuKernelForms forms = defaultKernelForms(*chosen);
  if (byteDots == "on" || byteDots == "off")
    forms.byteDots = byteDots == "on";
  else if (byteDots != "auto") {
    op->emitError() << "byte-dots must be auto, on or off, found '" << byteDots
                    << "'";
    return failure();
  }
  return forms;
}
