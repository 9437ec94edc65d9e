"""A short, seeded run of each Python fuzzer (fuzz/python): the checkpoint,
tokenizer, config, safetensors and checkpoint folder readers raise nothing
but GPTQError on mutated inputs, nor do generation and perplexity on a
stand-in model's fuzzed logits and arguments.
scripts/fuzz.sh runs the same harnesses for longer."""

import shutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

pytest.importorskip("atheris", reason="atheris is not installed (requirements.txt)")

FUZZ = REPO_ROOT / "fuzz" / "python"
RUNS = 20000
#: Targets whose inputs take longer: generation's run whole commands
#: (about 1.5 ms an input; 10,000 take about 16 s).
TARGET_RUNS = {"generation": 10000}


@pytest.mark.parametrize("target", ["llama2c", "tokenizer", "hf_config", "safetensors", "gptq_checkpoint",
                                    "generation"])
def test_seeded_fuzz_run(target, tmp_path):
    runs = TARGET_RUNS.get(target, RUNS)
    corpus = tmp_path / "corpus"
    shutil.copytree(FUZZ / "corpus" / target, corpus)
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    result = subprocess.run(
        [sys.executable, str(FUZZ / f"fuzz_{target}.py"), f"-runs={runs}", "-seed=1", "-timeout=10",
         "-rss_limit_mb=2048", f"-artifact_prefix={artifacts}/", str(corpus)],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Done {runs} runs" in result.stderr
    assert list(artifacts.iterdir()) == []


def test_the_folder_seeds_use_the_fuzzers_separator():
    """make_seeds.py cannot import the fuzzer (it would import the package
    before atheris instruments it), so it repeats the separator."""
    separator = b'SEPARATOR = b"\\n--gptq-fuzz-file--\\n"'
    for name in ("fuzz_gptq_checkpoint.py", "make_seeds.py"):
        assert separator in (FUZZ / name).read_bytes(), name
