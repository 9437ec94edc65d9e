#!/usr/bin/env bash
# The main job, end to end on a fresh machine: set up and build; check
# gptq-quantize-layer against the reference GPTQ on its golden layers; then
# import the stories260K model, draw 128 calibration windows of 256 tokens
# from the first four fifths of TinyStories text, quantize the model with
# gptq-opt --gptq-quantize-model (round to nearest and GPTQ at 4 and 3 bits,
# per row and with groups of 32, GPTQ's with act-order), print the perplexity
# of each against float32 on the held-out last fifth, and a greedy sample of
# the float32 and the 4-bit GPTQ model. Everything is written under
# build/run/: the sweep's models, reports, table and plot in build/run/sweep.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

out=build/run
mkdir -p "$out"
py() { PYTHONPATH=python .venv/bin/python "$@"; }

echo "== GPTQ of the reference's golden layers (gptq-quantize-layer)"
py test/Integration/Inputs/golden.py build/bin/gptq-quantize-layer \
  test/golden "$out/golden"

data=data/stories260K
text=$data/tinystories_val_part1.txt
echo "== stories260K: import to MLIR"
py -m gptq_mlir import-llama2c "$data/stories260K.bin" -o "$out/stories260K.mlir"
echo "== stories260K: 128 calibration windows of 256 tokens from the first four fifths"
py -m gptq_mlir calib --tokenizer "$data/tok512.bin" --text "$text" \
  --end-fraction 0.8 --samples 128 --seqlen 256 -o "$out/calib.npy"
echo "== stories260K: quantize with gptq-opt, perplexity on the held-out last fifth"
py -m gptq_mlir sweep --model "$out/stories260K.mlir" --tokenizer "$data/tok512.bin" \
  --text "$text" --start-fraction 0.8 --seqlen 256 --batch 64 \
  --calibration "$out/calib.npy" --out-dir "$out/sweep"
echo "== stories260K: greedy samples, float32 and GPTQ 4 bits (group 32, act-order)"
py -m gptq_mlir generate --model "$out/stories260K.mlir" \
  --tokenizer "$data/tok512.bin" --steps 31
py -m gptq_mlir generate --model "$out/sweep/gptq-w4-g32-act.mlir" \
  --tokenizer "$data/tok512.bin" --steps 31
