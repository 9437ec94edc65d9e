#!/usr/bin/env bash
# Installs what gptq-mlir needs and builds it. Idempotent: installs only the
# missing Debian packages, makes the .venv once, rebuilds incrementally.
#
# Debian packages: LLVM/MLIR 22, CMake, Ninja, GoogleTest, clang 22 with its
# sanitizer and libFuzzer runtimes (for the fuzzers), and Python 3 with
# NumPy, PyTorch (CPU), Matplotlib and pytest. The Python environment is
# .venv, made with --system-site-packages over Debian's /usr/bin/python3, so
# it sees those packages; requirements.txt lists anything further, installed
# from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools cmake
          ninja-build g++ libgtest-dev libomp-22-dev python3 python3-venv python3-numpy
          python3-torch python3-matplotlib python3-pytest libopenblas0-pthread clang-22
          libclang-rt-22-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv" >&2
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
if [ -s requirements.txt ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt >&2
fi
# The package itself, editable (python/gptq_mlir as it is in the checkout),
# for the gptq-mlir command; Debian's setuptools builds it, nothing is fetched.
if [ ! -x .venv/bin/gptq-mlir ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps -e . >&2
fi

cmake -S . -B build -G Ninja >/dev/null
cmake --build build

# The fuzzers (fuzz/), a configuration of their own built with clang and
# sanitizers; only they and the dialect library they link are built there.
# The test suite runs them briefly (test/Fuzz). GPTQ_FUZZERS=off skips them.
if [ "${GPTQ_FUZZERS:-on}" != off ]; then
  if [ ! -f build-fuzz/build.ninja ]; then
    cmake -S . -B build-fuzz -G Ninja -DGPTQ_ENABLE_FUZZERS=ON \
      -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 >/dev/null
  fi
  cmake --build build-fuzz --target gptq-fuzzers
fi
