#!/usr/bin/env bash
# The main job, end to end on a fresh machine: set up and build, quantize
# every golden layer with gptq-quantize-layer and compare it with the
# reference GPTQ, then import the stories260K model, print its greedy sample
# and measure its float32 perplexity on held-out text, all through gptq-run.
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
echo "== stories260K: import to MLIR"
py -m gptq_mlir import-llama2c "$data/stories260K.bin" -o "$out/stories260K.mlir"
echo "== stories260K: greedy sample (through gptq-run)"
py -m gptq_mlir generate --model "$out/stories260K.mlir" \
  --tokenizer "$data/tok512.bin" --steps 31
echo "== stories260K: float32 perplexity, held-out last fifth, 256-token windows"
py -m gptq_mlir perplexity --model "$out/stories260K.mlir" \
  --tokenizer "$data/tok512.bin" --text "$data/tinystories_val_part1.txt" \
  --start-fraction 0.8 --seqlen 256 --batch 64
