#!/usr/bin/env bash
# Builds what bench/gpu_check.sh runs on a GPU machine that has no LLVM or
# MLIR: executables of gptq-compile --device cuda (host code, cubin for
# sm_90 embedded, the CUDA runtime linked in; each needs only libc,
# libstdc++ and, when it launches a kernel, libcuda.so.1), in
# build/gpu-check/ (about 16 MB):
#   golden/<case>/quantize  gptq.quantize_layer with each golden case's
#                           settings (test/Integration/Inputs/golden_aot.py)
#   layer                   4 bits, group 128, act-order, H given: the
#                           benchmark's layer quantizer (bench/gpu_bench.py)
#   model/forward           stories260K rewritten with 4-bit codes (round to
#                           nearest, groups of 32), its forward, with
#                           model/tokens.npy (8 x 256, seed 0) and the
#                           logits gptq-run computes here on the CPU
#                           (model/logits.npy)
# Usage: bash bench/build_gpu_check.sh [CHIP]   (CHIP default sm_90)
set -euo pipefail
cd "$(dirname "$0")/.."
chip=${1:-sm_90}
out=build/gpu-check
cmake --build build --target gptq-compile >/dev/null
rm -rf "$out" && mkdir -p "$out"
.venv/bin/python test/Integration/Inputs/golden_aot.py build/bin/gptq-compile test/golden \
  "$out/golden" --device cuda --build-only >/dev/null
cat > "$out/layer.mlir" <<'MLIR'
func.func @layer(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>)
    -> (tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>,
        tensor<1xf32>, tensor<1xi8>) {
  %codes, %s, %z, %g, %loss, %ok = gptq.quantize_layer %w, %h
      {config = #gptq.config<bits = 4, group_size = 128, act_order = true>}
      : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32>
  %l = tensor.from_elements %loss : tensor<1xf32>
  %ok8 = arith.extui %ok : i1 to i8
  %o = tensor.from_elements %ok8 : tensor<1xi8>
  return %codes, %s, %z, %g, %l, %o
      : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>,
        tensor<1xf32>, tensor<1xi8>
}
MLIR
build/bin/gptq-compile "$out/layer.mlir" --entry layer --device cuda --chip "$chip" -o "$out/layer"
# The same with the products on the CUDA cores, for the comparison.
build/bin/gptq-compile "$out/layer.mlir" --entry layer --device cuda --chip "$chip" \
  --tensor-cores off -o "$out/layer-cuda-cores"
mkdir -p "$out/model"
PYTHONPATH=python .venv/bin/python -m gptq_mlir import-llama2c data/stories260K/stories260K.bin \
  -o "$out/model/model.mlir" 2>/dev/null
build/bin/gptq-opt "$out/model/model.mlir" --gptq-quantize-model="method=rtn bits=4 group-size=32" \
  -o "$out/model/model.q.mlir" 2>/dev/null
.venv/bin/python -c "import numpy as np; np.save('$out/model/tokens.npy', np.random.default_rng(0).integers(0, 512, size=(8, 256), dtype=np.int32))"
build/bin/gptq-run "$out/model/model.q.mlir" --entry forward --input "$out/model/tokens.npy" \
  --output-dir "$out/model/cpu"
mv "$out/model/cpu/0.npy" "$out/model/logits.npy" && rmdir "$out/model/cpu"
build/bin/gptq-compile "$out/model/model.q.mlir" --entry forward --device cuda --chip "$chip" \
  -o "$out/model/forward"
rm "$out/model/model.mlir"
du -sh "$out" | awk '{print "build_gpu_check: " $1 " in '"$out"'"}'
