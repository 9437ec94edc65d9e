"""Fuzzes the JSON parser of every JSON input (gptq_mlir.files.inputs.parse_json)
and the Hugging Face config reader (gptq_mlir.importers.hf.parse_config) with atheris.

Every input either parses or raises GPTQError, the readers' documented
error. JSON that parses is what Python's own parser makes of it, and
serializes and parses back unchanged. A config that parses has sizes that
make a model (validated), every value in its documented range, and rotary
angles that are finite at its first and last position. Anything else (another
exception, a hang, running out of memory) is a finding.

    .venv/bin/python fuzz/python/fuzz_hf_config.py [libFuzzer options] [CORPUS...]

scripts/fuzz.sh runs it with the seeds of fuzz/python/corpus/hf_config.
"""

import json
import os
import sys
from pathlib import Path

import atheris

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

with atheris.instrument_imports(include=["gptq_mlir"]):
    from gptq_mlir.errors import GPTQError
    from gptq_mlir.files import inputs
    from gptq_mlir.importers import architectures, hf

import numpy as np

PATH = Path("config.json")


def test_one_input(data: bytes) -> None:
    try:
        value = inputs.parse_json(data)
    except GPTQError:
        return
    if value != json.loads(data):
        raise AssertionError("parse_json and json.loads disagree")
    if inputs.parse_json(json.dumps(value)) != value:
        raise AssertionError("a parsed value does not round-trip")
    try:
        cfg, arch = hf.parse_config(value, PATH)
    except GPTQError:
        return
    cfg.validate()
    if not 1 <= cfg.seq_len <= hf.MAX_POSITIONS or not 1 <= cfg.vocab_size <= hf.MAX_VOCAB:
        raise AssertionError(f"sizes out of range accepted: {cfg}")
    eps, theta = arch.rms_norm_eps, arch.rope_theta
    if not architectures.EPS_RANGE[0] <= eps <= architectures.EPS_RANGE[1] or np.float32(eps) <= 0:
        raise AssertionError(f"rms_norm_eps {eps} accepted")
    if not architectures.THETA_RANGE[0] < theta <= architectures.THETA_RANGE[1]:
        raise AssertionError(f"rope_theta {theta} accepted")
    for cap in (arch.attn_softcap, arch.final_softcap, arch.query_scale):
        if cap is not None and not (0 < cap and np.isfinite(np.float32(cap))):
            raise AssertionError(f"a soft cap or query scale {cap} accepted")
    if cfg.head_size <= 256:
        frequencies = arch.frequencies(cfg.head_size)
        last = np.float32(cfg.seq_len - 1) * frequencies
        if not (np.all(np.isfinite(frequencies)) and np.all(np.isfinite(np.cos(last)))):
            raise AssertionError(f"rope_theta {theta} gives non-finite rotary angles")


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
