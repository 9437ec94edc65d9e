#!/usr/bin/env bash
# The device check, run on a machine with an NVIDIA GPU, its driver, and
# python3 with numpy and PyTorch (CUDA), but no LLVM or MLIR, from the
# repository root, after bench/build_gpu_check.sh made build/gpu-check here
# and it was carried there:
#   1. every golden case through its executable, checked against the
#      reference's outputs (golden_aot.py --run-only);
#   2. stories260K's 4-bit forward on 8 x 256 tokens against the logits
#      computed on the CPU when it was built;
#   3. the layer benchmark (bench/gpu_bench.py): 4096 x 4096, 4096 x 11008,
#      11008 x 4096 and 4096 x 14336 layers, ours against PyTorch on cuda
#      (TF32 off and on) in the same run, with our kernel launches per call;
#      then ours with the products on the CUDA cores (tensor-cores=off) on
#      the 4096 x 4096 layer.
# Everything it prints also goes to $OUT (default build/gpu-check-out).
# Each step has its own time limit, so the whole stays under 6 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
in=build/gpu-check
out=${OUT:-build/gpu-check-out}
mkdir -p "$out"
status=0
{
  echo "== device"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || status=1
  echo "== golden cases on the GPU"
  timeout 45 python3 test/Integration/Inputs/golden_aot.py none test/golden "$in/golden" \
    --run-only || status=1
  echo "== stories260K forward on the GPU against the CPU's logits"
  rm -rf /tmp/gpu-check-model
  if timeout 30 "$in/model/forward" --input "$in/model/tokens.npy" --output-dir /tmp/gpu-check-model \
      --repeat 3 --time; then
    python3 -c "
import numpy as np
cpu = np.load('$in/model/logits.npy'); gpu = np.load('/tmp/gpu-check-model/0.npy')
rel = float(np.abs(gpu - cpu).max() / np.abs(cpu).max())
print('logits %s, max |gpu - cpu| / max |cpu| = %.3g: %s' % (gpu.shape, rel, 'ok' if rel <= 1e-5 else 'FAIL'))
raise SystemExit(0 if rel <= 1e-5 else 1)" || status=1
  else
    status=1
  fi
  echo "== layer benchmark"
  timeout 210 python3 bench/gpu_bench.py --exe "$in/layer" --work /tmp/gpu-bench \
    --json "$out/gpu-bench.json" || status=1
  echo "== the same, products on the CUDA cores"
  timeout 40 python3 bench/gpu_bench.py --exe "$in/layer-cuda-cores" --work /tmp/gpu-bench \
    --sizes 4096x4096 --no-torch --json "$out/gpu-bench-cuda-cores.json" || status=1
  echo "== status $status"
  exit "$status"
} 2>&1 | tee "$out/gpu-check.txt"
exit "${PIPESTATUS[0]}"
