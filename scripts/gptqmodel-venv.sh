#!/usr/bin/env bash
# Makes .venv-gptqmodel: GPTQModel 7.7.0 with torch 2.x from PyPI, the
# competitor of bench/bench_gptq_tools.py. Its own venv because GPTQModel
# needs numpy 2, transformers 5 and torch >= 2.14, none of which the
# project's .venv (Debian's torch 1.13, numpy 1.24) can hold. PyPI's torch
# for Linux is the CUDA build; it runs on the CPU as it is (several GB of
# NVIDIA wheels come along unused). GPTQModel 7.7.0 is pure Python: nothing
# is compiled. Idempotent: does nothing once the venv imports gptqmodel 7.7.0.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-gptqmodel
version=7.7.0
if [ -x "$venv/bin/python" ] &&
  "$venv/bin/python" -c "import gptqmodel, sys; sys.exit(gptqmodel.__version__ != '$version')" 2>/dev/null; then
  exit 0
fi
[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
"$venv/bin/python" -m pip install -q --disable-pip-version-check "gptqmodel==$version"
"$venv/bin/python" -c "import gptqmodel, torch; print('gptqmodel', gptqmodel.__version__, 'torch', torch.__version__)"
