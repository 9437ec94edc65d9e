# -*- Python -*-
"""lit configuration of the gptq-mlir regression tests."""

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "GPTQ"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "Unit", "golden", "CMakeLists.txt", "lit.cfg.py",
                   "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.gptq_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.gptq_tools_dir, append_path=True)
# Every FileCheck invocation scopes its variables to CHECK-LABEL blocks.
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
# Idle OpenMP threads sleep at once rather than spin for libomp's 200 ms:
# with a test per core, one test's spinning workers took the other's core,
# and the emulated GPU kernels' teams (a thread per GPU thread, hundreds)
# waited at their barriers behind them. How threads wait changes, not what
# they compute.
config.environment["KMP_BLOCKTIME"] = "0"
# Compiled code is cached inside the build tree, never in the user's home:
# in the folder scripts/test.sh gives the Python tests, which then find the
# quantization kernels (named by their code, not by a module's path) that
# the lit tests compiled.
config.environment["GPTQ_MLIR_CACHE_DIR"] = os.path.join(
    config.gptq_obj_root, "compile-cache")

config.substitutions.append(("%python", config.python_executable))
# The C compiler of the build, for programs written against the C API.
config.substitutions.append(("%cc", config.c_compiler))
config.substitutions.append(("%gptq_src", config.gptq_src_root))
config.substitutions.append(("%gptq_obj", config.gptq_obj_root))
# Upstream mlir-opt with the gptq dialect, passes and pipelines
# (libGPTQPlugin.so); its passes are named in --pass-pipeline.
plugin = os.path.join(config.gptq_obj_root, "lib", "libGPTQPlugin.so")
# The same library loaded as a pass plugin only (first: the name above is a
# prefix of it).
config.substitutions.append(
    ("%mlir_opt_gptq_passes", "mlir-opt --load-pass-plugin=%s" % plugin))
config.substitutions.append(
    ("%mlir_opt_gptq", "mlir-opt --load-dialect-plugin=%s --load-pass-plugin=%s"
     % (plugin, plugin)))
config.substitutions.append(
    ("%inputs", os.path.join(config.test_source_root, "Integration", "Inputs")))
# The reference's golden layer cases, kept in the repository (test/golden).
config.substitutions.append(
    ("%golden", os.path.join(config.test_source_root, "golden")))

tool_dirs = [config.gptq_tools_dir, config.llvm_tools_dir]
tools = ["gptq-opt", "gptq-run", "gptq-quantize-layer", "gptq-compile",
         "gptq-pipeline-example", "gptq-build-ukernels"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# A small, full file system on demand: a tmpfs mounted in a private mount
# namespace (`unshare -rm`, no privileges needed where user namespaces are
# allowed), to test how the tools meet a full disk.
if subprocess.run(["unshare", "-rm", "sh", "-c",
                   "mount -t tmpfs -o size=64k tmpfs /mnt"],
                  stdout=subprocess.DEVNULL,
                  stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("tmpfs")

# The libFuzzer targets, built apart with clang and sanitizers (build-fuzz/).
fuzzers = {name: os.path.join(config.gptq_fuzz_bin_dir, name)
           for name in ("gptq-fuzz-npy", "gptq-fuzz-npz", "gptq-fuzz-ir")}
if all(os.access(path, os.X_OK) for path in fuzzers.values()):
    config.available_features.add("fuzzers")
    for name, path in fuzzers.items():
        config.substitutions.append(("%" + name, path))
# The C API's fuzzer, built there only when the main build's library was.
capi_fuzzer = os.path.join(config.gptq_fuzz_bin_dir, "gptq-fuzz-capi")
if os.access(capi_fuzzer, os.X_OK):
    config.available_features.add("capi-fuzzer")
    config.substitutions.append(("%gptq-fuzz-capi", capi_fuzzer))

# The instruction sets of the CPU kernels this CPU runs (CpuIsa.h): with
# AVX2 and FMA, --cpu-isa=avx2 runs here; with AVX-512 VNNI (and AVX-512BW)
# the JIT runs the 4-bit decode kernel's byte dot products as that
# instruction.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        cpu_flags = next((line.split(":", 1)[1].split() for line in cpuinfo
                          if line.startswith("flags")), [])
except OSError:
    cpu_flags = []
if "avx2" in cpu_flags and "fma" in cpu_flags:
    config.available_features.add("avx2")
if all(f in cpu_flags for f in ("avx512f", "avx512bw", "avx512dq", "avx512vl")):
    config.available_features.add("avx512")
if "avx512_vnni" in cpu_flags and "avx512bw" in cpu_flags:
    config.available_features.add("avx512vnni")

# PyTorch in the test interpreter: the reference implementation in bench/
# uses it.

if subprocess.run([config.python_executable, "-c", "import torch"],
                  stdout=subprocess.DEVNULL,
                  stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("torch")

# IREE's iree-opt (iree-base-compiler, which scripts/test-deps.sh installs),
# which the tools run to read StableHLO: $GPTQ_IREE_OPT, on the PATH, or
# beside the tests' Python.
_iree_opt = (os.environ.get("GPTQ_IREE_OPT") or shutil.which("iree-opt") or
             os.path.join(os.path.dirname(config.python_executable), "iree-opt"))
if os.access(_iree_opt, os.X_OK):
    config.available_features.add("iree-opt")
    config.environment["GPTQ_IREE_OPT"] = _iree_opt

# The CUDA toolkit's assembler, which gpu-module-to-binary runs to make
# cubin (the toolkit at /usr/local/cuda, or ptxas on the PATH).
if os.access("/usr/local/cuda/bin/ptxas", os.X_OK) or shutil.which("ptxas"):
    config.available_features.add("ptxas")

# The CUDA toolkit's libdevice, which gptq-lower-to-nvvm-pipeline links into
# kernels that call math functions (the toolkit as the pipeline finds it:
# $CUDA_HOME, $CUDA_PATH, $CUDA_ROOT, the ptxas on the PATH, /usr/local/cuda).
def _cuda_toolkit():
    for name in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        if os.environ.get(name):
            return os.environ[name]
    ptxas = shutil.which("ptxas")
    if ptxas:
        return os.path.dirname(os.path.dirname(os.path.realpath(ptxas)))
    return "/usr/local/cuda"

if os.path.isdir(os.path.join(_cuda_toolkit(), "nvvm", "libdevice")):
    config.available_features.add("cuda-toolkit")

# A CUDA device that answers: the driver loads, initializes and counts at
# least one device. Tests that run on the GPU require it; tests of what the
# tools say without one are skipped where it is set.
def _cuda_device():
    import ctypes
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 \
        and count.value > 0

if _cuda_device():
    config.available_features.add("cuda-device")
