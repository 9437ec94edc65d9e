#!/usr/bin/env bash
# Installs the optional test dependencies into .venv (scripts/test.sh runs
# it after scripts/setup.sh): the references the tests compare with. A test
# whose dependency is missing skips, saying which; nothing here is needed to
# use the project's float and quantized models.
#
# - transformers 4.46.3, the newest that runs on Debian's torch 1.13: the
#   reference implementation of every architecture import-hf reads;
# - tokenizers (Hugging Face tokenizer.json files) and pyarrow (parquet
#   calibration text), which --tokenizer and --text use when given such files;
# - AutoGPTQ 0.7.1 on the CPU with optimum, the consumer of export-gptq's
#   checkpoints, with the versions of numpy, pandas, pyarrow, datasets and
#   peft it works with;
# - IREE 3.13 (iree-base-compiler, iree-base-runtime), which compiles and
#   runs the upstream-only form of our models (python/tests/test_iree.py);
#   ml_dtypes 0.5.1 is the last of its dependency that runs on numpy 1.
# - torch-mlir 20261001 with onnx 1.16.2 (the newest without ml_dtypes), the
#   frontend that python/tests/test_frontends.py and test_torch_import.py
#   run (docs/torch-mlir.md): without their dependencies, or onnx would
#   bring numpy 2.
# - JAX 0.10.2 (CPU) in a venv of its own, .venv-jax: it needs numpy 2,
#   which .venv's torch 1.13 rules out; python/tests/test_jax_frontend.py
#   runs examples/jax/export.py with it (135 MB of wheels).
#
# Debian's torch is versioned 1.13.0a0, a pre-release, which pip does not
# count as satisfying AutoGPTQ's and peft's "torch>=1.13.0": left to
# itself, pip would replace it with a multi-GB CUDA build of torch 2. So
# every install is constrained to the torch that is there, and those three
# packages are installed without their dependencies, which the first
# command installs (accelerate before 1.0, the last to support torch 1.13).
set -euo pipefail
cd "$(dirname "$0")/.."
pip=(.venv/bin/python -m pip install -q --disable-pip-version-check)
constraints=$(mktemp)
trap 'rm -f "$constraints"' EXIT
printf '%s\n' "torch==$(.venv/bin/python -c 'import torch; print(torch.__version__)')" \
  "numpy<2" "pandas<2.2" "pyarrow<16" "datasets<3" "accelerate<1" >"$constraints"
"${pip[@]}" -c "$constraints" transformers==4.46.3 tokenizers "pyarrow<16" "pandas<2.2" \
  "datasets<3" "accelerate>=0.26,<1" sentencepiece rouge gekko tqdm coloredlogs sympy
BUILD_CUDA_EXT=0 "${pip[@]}" --no-deps --no-build-isolation auto-gptq==0.7.1 optimum==1.23.3 peft==0.10.0
"${pip[@]}" -c "$constraints" "iree-base-compiler==3.13.*" "iree-base-runtime==3.13.*" "ml_dtypes==0.5.1"
"${pip[@]}" --no-deps torch-mlir==20261001 onnx==1.16.2 protobuf packaging
[ -x .venv-jax/bin/python ] || python3 -m venv .venv-jax
.venv-jax/bin/python -m pip install -q --disable-pip-version-check "jax[cpu]==0.10.2"
