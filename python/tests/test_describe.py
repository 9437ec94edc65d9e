"""The module's facts read through ``gptq-run --describe``, not from its text.

Every test here needs build/bin/gptq-run (or $GPTQ_RUN) and skips only when it
is not built.
"""

import subprocess

import pytest

from conftest import synthetic_checkpoint
from gptq_mlir.errors import GPTQError
from gptq_mlir.importers import emitter
from gptq_mlir.runtime import runner
from gptq_mlir.runtime.model import Model, read_model_attributes

STORIES = {
    "dim": 64, "hidden_dim": 172, "n_heads": 8, "n_kv_heads": 4,
    "n_layers": 5, "seq_len": 512, "vocab_size": 512,
}


@pytest.fixture(scope="module")
def synthetic_mlir(tmp_path_factory):
    """A small imported model and its configuration."""
    ckpt = synthetic_checkpoint(seed=11)
    path = tmp_path_factory.mktemp("describe") / "model.mlir"
    emitter.write_module(ckpt, path)
    return ckpt.config, path


#: The KV caches of stories260K: [layers, batch, kv heads, positions, head size].
CACHE = {"kind": "memref", "dtype": "float32", "shape": [5, None, 4, None, 8]}


def test_describe_stories260k(gptq_run, stories_mlir):
    """The whole description of the real model, from a parse (nothing compiled)."""
    description = runner.describe(stories_mlir)
    assert description == {
        "model": STORIES,
        "functions": [
            {
                "name": "forward",
                "inputs": [{"kind": "tensor", "dtype": "int32", "shape": [None, None]}],
                "results": [{"kind": "tensor", "dtype": "float32", "shape": [None, None, None]}],
            },
            {
                "name": "prefill",
                "inputs": [{"kind": "tensor", "dtype": "int32", "shape": [None, None]}, CACHE, CACHE],
                "results": [{"kind": "tensor", "dtype": "float32", "shape": [None, None]}],
            },
            {
                "name": "decode",
                "inputs": [{"kind": "tensor", "dtype": "int32", "shape": [None]},
                           {"kind": "scalar", "dtype": "int64", "shape": []}, CACHE, CACHE],
                "results": [{"kind": "tensor", "dtype": "float32", "shape": [None, None]}],
            },
        ],
    }


def test_describe_entry(gptq_run, synthetic_mlir):
    cfg, path = synthetic_mlir
    description = runner.describe(path, entry="forward")
    assert [f["name"] for f in description["functions"]] == ["forward"]
    assert description["model"]["vocab_size"] == cfg.vocab_size
    with pytest.raises(GPTQError, match=r"no function 'main' in the module \(functions: forward, prefill, decode\)"):
        runner.describe(path, entry="main")


def test_model_reads_attribute(gptq_run, synthetic_mlir):
    cfg, path = synthetic_mlir
    model = Model(path)
    assert (model.seq_len, model.vocab_size) == (cfg.seq_len, cfg.vocab_size)
    assert read_model_attributes(path) == {
        key: getattr(cfg, key)
        for key in ("dim", "hidden_dim", "n_heads", "n_kv_heads", "n_layers", "seq_len", "vocab_size")
    }


def test_attribute_in_any_printed_form(gptq_run, synthetic_mlir, tmp_path):
    """The generic form and an attribute spread over lines read the same.

    A text scan of the first lines for ``module attributes {gptq.model =
    {...}}`` finds neither.
    """
    cfg, path = synthetic_mlir
    generic = tmp_path / "generic.mlir"
    subprocess.run(
        [str(gptq_run.parent / "gptq-opt"), str(path), "--mlir-print-op-generic", "-o", str(generic)],
        check=True,
    )
    assert read_model_attributes(generic) == read_model_attributes(path)
    text = path.read_text()
    spread = tmp_path / "spread.mlir"
    spread.write_text(
        text.replace("module attributes {gptq.model = {", "module attributes {\n  gptq.model = {\n    ", 1)
        .replace(", hidden_dim", ",\n    hidden_dim", 1)
    )
    assert read_model_attributes(spread)["vocab_size"] == cfg.vocab_size


def test_module_without_attribute(gptq_run, synthetic_mlir, tmp_path):
    _, path = synthetic_mlir
    text = path.read_text()
    start = text.index("module attributes {")
    end = text.index("} {", start)
    bare = tmp_path / "bare.mlir"
    bare.write_text(text[:start] + "module {" + text[end + 3 :])
    assert read_model_attributes(bare) == {}
    model = Model(bare)
    assert (model.seq_len, model.vocab_size) == (None, None)


def test_invalid_attribute_is_an_error(gptq_run, synthetic_mlir, tmp_path):
    """The dialect's verifier rejects the attribute; Model says so in one error."""
    cfg, path = synthetic_mlir
    bad = tmp_path / "bad.mlir"
    bad.write_text(path.read_text().replace(f"n_kv_heads = {cfg.n_kv_heads} : i64", "n_kv_heads = 3 : i64", 1))
    with pytest.raises(GPTQError, match=r"expected 'gptq.model' n_heads to be a multiple of n_kv_heads, "
                                        rf"found n_heads = {cfg.n_heads} and n_kv_heads = 3"):
        Model(bad)


def test_unparsable_module_is_an_error(gptq_run, tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("module attributes {gptq.model = {dim = 4 : i64\n")
    with pytest.raises(GPTQError, match=r"bad.mlir:\d+:\d+: error: "):
        Model(bad)


def test_forward_is_required(gptq_run, tmp_path):
    main = tmp_path / "main.mlir"
    main.write_text("func.func @main(%t: tensor<?x?xi32>) -> tensor<?x?xi32> {\n  return %t : tensor<?x?xi32>\n}\n")
    with pytest.raises(GPTQError, match=r"main.mlir has no public function @forward \(entry functions: @main\)"):
        Model(main)


def test_forward_signature_is_checked(gptq_run, tmp_path):
    wrong = tmp_path / "wrong.mlir"
    wrong.write_text(
        "func.func @forward(%t: tensor<?x?xi64>) -> tensor<?x?xi64> {\n  return %t : tensor<?x?xi64>\n}\n"
    )
    with pytest.raises(
        GPTQError,
        match=r"expected @forward to take token ids int32 \[batch, seq\] and return logits float32 "
        r"\[batch, seq, vocab\], found \(int64 \[\?, \?\]\) -> \(int64 \[\?, \?\]\)",
    ):
        Model(wrong)
