"""Hugging Face tokenizers and the JSON lines and parquet text formats
through calib, perplexity and generate.

The tokenizer is trained here with the ``tokenizers`` package on the
repository's TinyStories text (byte-level BPE, 512 tokens, the size of
stories260K's vocabulary; its <s> and </s> are ids 0 and 1, not llama2.c's
1 and 2). Its token ids mean nothing to stories260K, so perplexities are
large, but every property checked here (the ids calib writes, BOS once,
equal results across formats, generation stopping at any EOS id, one-line
errors naming the file and field) holds whatever the ids mean."""

import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import synthetic_checkpoint
from gptq_mlir.cli.commands import main
from gptq_mlir.data import corpus
from gptq_mlir.data.tokenizer import open_tokenizer
from gptq_mlir.importers import emitter
from gptq_mlir.runtime.model import Model, generate

BOS_TEXT, EOS_TEXT = "<s>", "</s>"
BOS, EOS = 0, 1
#: How many of the TinyStories paragraphs the format tests use.
DOCUMENTS = 12


@pytest.fixture(scope="session")
def tokenizers_lib():
    return pytest.importorskip("tokenizers", reason="the tokenizers package is not installed (pip install tokenizers)")


@pytest.fixture(scope="session")
def pyarrow_lib():
    return pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install pyarrow)")


def _train(tokenizers_lib, paragraphs, vocab_size, special_tokens):
    """A byte-level BPE tokenizer of ``vocab_size`` tokens, ``special_tokens`` first."""
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tokenizer = tokenizers_lib.Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=special_tokens, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(paragraphs, trainer)
    assert tokenizer.get_vocab_size(with_added_tokens=True) == vocab_size
    return tokenizer


@pytest.fixture(scope="session")
def paragraphs(text_path):
    return corpus.split_paragraphs(text_path.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def trained(tokenizers_lib, paragraphs):
    """512 tokens: <s> (0), </s> (1), the 256 bytes, merges."""
    tokenizer = _train(tokenizers_lib, paragraphs, 512, [BOS_TEXT, EOS_TEXT])
    assert [tokenizer.token_to_id(BOS_TEXT), tokenizer.token_to_id(EOS_TEXT)] == [BOS, EOS]
    return tokenizer


def _write_folder(folder: Path, tokenizer, tokenizer_config=None, generation_config=None, config=None) -> Path:
    """tokenizer.json and, where given, the configuration files beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.json").write_text(tokenizer.to_str())
    for name, content in [("tokenizer_config.json", tokenizer_config), ("generation_config.json", generation_config),
                          ("config.json", config)]:
        if content is not None:
            (folder / name).write_text(json.dumps(content))
    return folder


#: A Llama 2 style tokenizer_config.json: BOS added, EOS not, tokens as
#: text and as an object.
CONFIG = {"add_bos_token": True, "add_eos_token": False, "bos_token": BOS_TEXT,
          "eos_token": {"content": EOS_TEXT, "special": True}}


@pytest.fixture(scope="session")
def hf_folder(tmp_path_factory, trained) -> Path:
    return _write_folder(tmp_path_factory.mktemp("hf") / "tok", trained, CONFIG)


@pytest.fixture(scope="session")
def documents(paragraphs):
    return paragraphs[:DOCUMENTS]


def _encode(tokenizer, text):
    return tokenizer.encode(text, add_special_tokens=False).ids


def _stream(tokenizer, documents, bos=BOS):
    """The stream calib should cut: per document BOS (when not None), then
    the tokenizers package's own encoding of it."""
    stream = []
    for document in documents:
        stream += ([bos] if bos is not None else []) + _encode(tokenizer, document)
    return stream


def _write_text(path: Path, documents, pyarrow_lib=None) -> Path:
    """``documents`` in the format ``path``'s name asks for, with empty
    records among them where the format has records."""
    if path.suffix == ".jsonl":
        lines = ["", json.dumps({"text": ""})]
        for number, document in enumerate(documents):
            lines.append(json.dumps({"id": number, "text": document, "meta": {"source": "tinystories"}}))
            if number == 3:
                lines += [json.dumps({"text": "  \n "}), "   "]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    elif path.suffix == ".parquet":
        import pyarrow.parquet as pq

        rows = [None, ""] + list(documents[:4]) + [" \n", None] + list(documents[4:])
        table = pyarrow_lib.table({"id": list(range(len(rows))), "text": rows})
        pq.write_table(table, path, row_group_size=5)
    else:
        path.write_text("\n\n".join(documents) + "\n", encoding="utf-8")
    return path


def _calib(tokenizer, text, output, seqlen, samples=2):
    return main(["calib", "--tokenizer", str(tokenizer), "--text", str(text), "--samples", str(samples),
                 "--seqlen", str(seqlen), "-o", str(output)])


def _whole_stream(tokenizer, text, tmp_path, length):
    """What calib writes with windows as long as the stream: the stream itself."""
    output = tmp_path / "calib.npy"
    assert _calib(tokenizer, text, output, length) == 0
    windows = np.load(output)
    assert windows.shape == (2, length) and windows.dtype == np.int32
    np.testing.assert_array_equal(windows[0], windows[1])
    return list(windows[0])


def _error(capsys, *fragments) -> str:
    """The one line a failed command printed, holding every fragment."""
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gptq_mlir: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


# Calibration windows: the ids are the tokenizers package's --------------------


@pytest.mark.parametrize("name", ["docs.txt", "docs.jsonl", "docs.parquet"])
def test_calib_writes_the_encoding_with_bos_once(hf_folder, trained, documents, pyarrow_lib, tmp_path, name):
    text = _write_text(tmp_path / name, documents, pyarrow_lib)
    expected = _stream(trained, documents)
    assert _whole_stream(hf_folder, text, tmp_path, len(expected)) == expected
    assert expected.count(BOS) == len(documents)


def test_tokenizer_json_alone_and_by_content(trained, documents, tmp_path):
    """tokenizer.json named directly, or under a name without .json (then
    recognised by its first byte), reads the configuration beside it."""
    folder = _write_folder(tmp_path / "tok", trained, CONFIG)
    (folder / "tokenizer").write_bytes((folder / "tokenizer.json").read_bytes())
    text = _write_text(tmp_path / "docs.txt", documents)
    expected = _stream(trained, documents)
    for path in (folder / "tokenizer.json", folder / "tokenizer"):
        assert _whole_stream(path, text, tmp_path, len(expected)) == expected


def test_plain_text_that_starts_with_a_brace_stays_text(hf_folder, trained, tmp_path):
    text = tmp_path / "braces.txt"
    text.write_text('{"text": "not a record"}\n\nThe end.\n')
    tokenizer = open_tokenizer(hf_folder)
    expected = _stream(trained, ['{"text": "not a record"}', "The end."])
    assert list(corpus.load_corpus(tokenizer, text)) == expected


def test_add_eos_token(trained, documents, tmp_path):
    folder = _write_folder(tmp_path / "tok", trained, dict(CONFIG, add_eos_token=True))
    text = _write_text(tmp_path / "docs.txt", documents[:3])
    expected = []
    for document in documents[:3]:
        expected += [BOS] + _encode(trained, document) + [EOS]
    assert _whole_stream(folder, text, tmp_path, len(expected)) == expected


def _templated(tokenizers_lib, trained, single):
    """``trained`` with a post-processor that puts special tokens around a text."""
    from tokenizers import processors

    tokenizer = tokenizers_lib.Tokenizer.from_str(trained.to_str())
    tokenizer.post_processor = processors.TemplateProcessing(
        single=single, special_tokens=[(BOS_TEXT, BOS), (EOS_TEXT, EOS)]
    )
    return tokenizer


@pytest.mark.parametrize(
    "tokenizer_config, adds",
    [
        ({"bos_token": BOS_TEXT}, True),  # Llama 3: the post-processor alone asks for BOS
        ({"bos_token": BOS_TEXT, "add_bos_token": True}, True),  # Llama 2: both ask
        ({"bos_token": BOS_TEXT, "add_bos_token": False}, False),  # the configuration wins
        (None, True),  # tokenizer.json alone: its post-processor's token is BOS
    ],
    ids=["post-processor", "both", "config-off", "no-config"],
)
def test_bos_once_when_the_post_processor_adds_it(tokenizers_lib, trained, documents, tmp_path, tokenizer_config, adds):
    tokenizer = _templated(tokenizers_lib, trained, f"{BOS_TEXT} $A")
    assert tokenizer.encode("Hi.").ids[:1] == [BOS]
    folder = _write_folder(tmp_path / "tok", tokenizer, tokenizer_config)
    text = _write_text(tmp_path / "docs.txt", documents[:4])
    expected = []
    for document in documents[:4]:
        expected += tokenizer.encode(document).ids if adds else _encode(tokenizer, document)
    stream = _whole_stream(folder, text, tmp_path, len(expected))
    assert stream == expected
    assert stream.count(BOS) == (4 if adds else 0)


def test_llama3_style_configuration(tokenizers_lib, paragraphs, documents, tmp_path):
    """Llama 3's files: the template adds <|begin_of_text|>, tokenizer_config
    names it without add_bos_token, generation_config lists two EOS ids."""
    from tokenizers import processors

    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    tokenizer = _train(tokenizers_lib, paragraphs, 512, specials)
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", 0)]
    )
    folder = _write_folder(
        tmp_path / "llama3", tokenizer, {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
        {"bos_token_id": 0, "eos_token_id": [1, 2]}, {"bos_token_id": 0, "eos_token_id": 1},
    )
    loaded = open_tokenizer(folder)
    assert (loaded.bos_id, loaded.eos_ids, loaded.add_bos, loaded.add_eos) == (0, (2, 1), True, False)
    text = _write_text(tmp_path / "docs.txt", documents[:4])
    expected = [token for document in documents[:4] for token in tokenizer.encode(document).ids]
    stream = _whole_stream(folder, text, tmp_path, len(expected))
    assert stream == expected and stream.count(0) == 4


def test_bos_and_eos_from_generation_config(trained, documents, tmp_path):
    folder = _write_folder(tmp_path / "tok", trained, {"add_bos_token": True},
                           {"bos_token_id": EOS, "eos_token_id": [BOS]})
    loaded = open_tokenizer(folder)
    assert (loaded.bos_id, loaded.eos_ids) == (EOS, (BOS,))
    text = _write_text(tmp_path / "docs.txt", documents[:2])
    expected = _stream(trained, documents[:2], bos=EOS)
    assert _whole_stream(folder, text, tmp_path, len(expected)) == expected


def test_no_bos_when_none_is_asked_for(trained, documents, tmp_path):
    folder = _write_folder(tmp_path / "tok", trained, {"eos_token": EOS_TEXT})
    text = _write_text(tmp_path / "docs.txt", documents[:2])
    expected = _stream(trained, documents[:2], bos=None)
    assert _whole_stream(folder, text, tmp_path, len(expected)) == expected


# Perplexity and generation through gptq-run -----------------------------------


def test_perplexity_is_equal_across_formats(gptq_run, stories_mlir, hf_folder, trained, documents, pyarrow_lib,
                                            tmp_path, capsys):
    seqlen = 32
    count = len(_stream(trained, documents)) // seqlen
    results = []
    for name in ("docs.txt", "docs.jsonl", "docs.parquet"):
        text = _write_text(tmp_path / name, documents, pyarrow_lib)
        assert main(["perplexity", "--model", str(stories_mlir), "--tokenizer", str(hf_folder), "--text", str(text),
                     "--seqlen", str(seqlen), "--batch", "64"]) == 0
        results.append(json.loads(capsys.readouterr().out.splitlines()[-1]))
    assert results[0] == results[1] == results[2]
    assert results[0]["tokens"] == count * (seqlen - 1)
    assert math.isfinite(results[0]["perplexity"]) and results[0]["perplexity"] > 1


def test_generate_decodes_with_the_tokenizer(gptq_run, stories_mlir, hf_folder, trained, capsys):
    steps = 4
    reference = generate(Model(stories_mlir), steps, [BOS], stop=(BOS, EOS))
    assert main(["generate", "--model", str(stories_mlir), "--tokenizer", str(hf_folder), "--steps", str(steps)]) == 0
    assert capsys.readouterr().out == trained.decode(reference, skip_special_tokens=True) + "\n"

    prompt = "Once upon a time"
    assert main(["generate", "--model", str(stories_mlir), "--tokenizer", str(hf_folder), "--steps", "2",
                 "--prompt", prompt]) == 0
    out = capsys.readouterr().out
    assert out.startswith(prompt) and len(out) > len(prompt) + 1


def test_generate_stops_at_any_eos_id(gptq_run, stories_mlir, trained, tmp_path, capsys):
    """With ``eos_token_id`` a list whose second id is the third token the
    model generates, generation stops before it."""
    reference = generate(Model(stories_mlir), 6, [BOS], stop=(BOS, EOS))
    generated = reference[1:]
    stop_at = next(i for i, token in enumerate(generated) if i >= 2 and token not in generated[:i])
    folder = _write_folder(tmp_path / "tok", trained, {"bos_token": BOS_TEXT},
                           {"eos_token_id": [EOS, generated[stop_at]]})
    assert main(["generate", "--model", str(stories_mlir), "--tokenizer", str(folder), "--steps", "6",
                 "--verbose"]) == 0
    captured = capsys.readouterr()
    assert captured.out == trained.decode(reference[: 1 + stop_at], skip_special_tokens=True) + "\n"
    assert f"generate: {stop_at}/6 tokens" in captured.err and f"generate: {stop_at + 1}/6" not in captured.err


def test_generate_without_bos_needs_a_prompt(gptq_run, stories_mlir, trained, tmp_path, capsys):
    folder = _write_folder(tmp_path / "tok", trained, {"eos_token": EOS_TEXT})
    assert main(["generate", "--model", str(stories_mlir), "--tokenizer", str(folder)]) == 1
    _error(capsys, f"tokenizer {folder / 'tokenizer.json'} has no BOS token to start from: give --prompt")


# Vocabulary sizes ---------------------------------------------------------------


@pytest.fixture(scope="module")
def wide_model(tmp_path_factory) -> Path:
    """A tiny model with 600 tokens, more than either tokenizer has."""
    path = tmp_path_factory.mktemp("wide") / "wide.mlir"
    emitter.write_module(synthetic_checkpoint(vocab_size=600), path)
    return path


def test_a_larger_model_vocabulary_fits_hf_not_llama2c(gptq_run, wide_model, hf_folder, tokenizer_path, capsys):
    """A model may pad its embedding beyond a Hugging Face tokenizer's
    tokens; a llama2.c tokenizer must match its model exactly."""
    assert main(["generate", "--model", str(wide_model), "--tokenizer", str(hf_folder), "--steps", "1"]) == 0
    capsys.readouterr()
    assert main(["generate", "--model", str(wide_model), "--tokenizer", str(tokenizer_path), "--steps", "1"]) == 1
    _error(capsys, f"tokenizer {tokenizer_path} has 512 tokens but model {wide_model} has a vocabulary of 600")


def test_a_tokenizer_larger_than_the_model_is_refused(gptq_run, tokenizers_lib, stories_mlir, trained, documents,
                                                       tmp_path, capsys):
    tokenizer = tokenizers_lib.Tokenizer.from_str(trained.to_str())
    tokenizer.add_special_tokens(["<extra_0>", "<extra_1>"])
    folder = _write_folder(tmp_path / "tok", tokenizer, CONFIG)
    text = _write_text(tmp_path / "docs.txt", documents)
    for command in (["perplexity", "--text", str(text), "--seqlen", "16"], ["generate"]):
        assert main([command[0], "--model", str(stories_mlir), "--tokenizer", str(folder), *command[1:]]) == 1
        _error(capsys, f"tokenizer {folder / 'tokenizer.json'} has 514 tokens but model {stories_mlir} "
                       "has a vocabulary of only 512")


# Bad input: one line naming the file and field, exit status 1, nothing written --


def _refused(capsys, tokenizer, text, tmp_path, *fragments) -> str:
    before = sorted(tmp_path.rglob("*"))
    assert _calib(tokenizer, text, tmp_path / "out.npy", 8) == 1
    assert sorted(tmp_path.rglob("*")) == before
    return _error(capsys, *fragments)


@pytest.mark.parametrize(
    "content, fragment",
    [
        (b"", "not valid JSON"),
        (b'{"model": {"type": "BPE", "vocab": {', "not valid JSON"),
        (b"[1, 2]", 'not a Hugging Face tokenizer: no "model" object'),
        (b'{"version": "1.0"}', 'not a Hugging Face tokenizer: no "model" object'),
        (b'{"model": {"type": "NoSuchModel"}}', "not a Hugging Face tokenizer: "),
        (b'{"model": {"type": "BPE"}, "model": {}}', 'key "model" appears twice'),
        (b"\xff\xfe{}", "not UTF-8"),
    ],
    ids=["empty", "truncated-json", "array", "no-model", "bad-model", "duplicate-key", "not-utf8"],
)
def test_malformed_tokenizer_json(tokenizers_lib, documents, tmp_path, capsys, content, fragment):
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer.json").write_bytes(content)
    text = _write_text(tmp_path / "docs.txt", documents[:2])
    _refused(capsys, folder, text, tmp_path, f"{folder / 'tokenizer.json'}: ", fragment)


def test_truncated_tokenizer_json(trained, documents, tmp_path, capsys):
    whole = trained.to_str().encode()
    text = _write_text(tmp_path / "docs.txt", documents[:2])
    for cut in (len(whole) // 3, len(whole) - 1):
        path = tmp_path / f"cut{cut}.json"
        path.write_bytes(whole[:cut])
        _refused(capsys, path, text, tmp_path, f"{path}: not valid JSON")


def test_template_naming_an_undefined_token(tokenizers_lib, trained, documents, tmp_path, capsys):
    """The tokenizers package reads such a template and then panics when it
    encodes with special tokens; the reader refuses it first."""
    content = json.loads(_templated(tokenizers_lib, trained, f"{BOS_TEXT} $A").to_str())
    content["post_processor"] = {"type": "Sequence", "processors": [content["post_processor"]]}
    content["post_processor"]["processors"][0]["single"][0]["SpecialToken"]["id"] = "<bos>"
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer.json").write_text(json.dumps(content))
    text = _write_text(tmp_path / "docs.txt", documents[:2])
    _refused(capsys, folder, text, tmp_path, f'{folder / "tokenizer.json"}: post_processor: its single template '
             'names "<bos>", which is not one of its special_tokens')


def _mutate(rng, value):
    """``value`` with one member or item replaced, removed or mutated in turn."""
    if isinstance(value, (dict, list)) and value:
        key = rng.choice(list(value)) if isinstance(value, dict) else rng.randrange(len(value))
        choice = rng.random()
        if choice < 0.2:
            del value[key]
        elif choice < 0.5:
            value[key] = rng.choice([None, 0, -1, 10**6, "x", [], {}, True, 1.5, ["a", "b"]])
        else:
            value[key] = _mutate(rng, value[key])
    return value


def test_mutated_tokenizer_json_loads_or_is_refused(tokenizers_lib, trained, tmp_path):
    """Every mutation of a tokenizer.json with a template post-processor
    either loads, encodes and decodes, or is one GPTQError naming the file."""
    import random

    from gptq_mlir.errors import GPTQError

    base = json.loads(_templated(tokenizers_lib, trained, f"{BOS_TEXT} $A {EOS_TEXT}").to_str())
    rng = random.Random(0)
    folder = tmp_path / "tok"
    folder.mkdir()
    outcomes = {"loaded": 0, "refused": 0}
    for _ in range(300):
        content = json.loads(json.dumps(base))
        for _ in range(rng.randrange(1, 4)):
            _mutate(rng, content)
        (folder / "tokenizer.json").write_text(json.dumps(content))
        try:
            tokenizer = open_tokenizer(folder)
            tokens = tokenizer.encode("Once upon a time, a dog.", bos=tokenizer.bos_id is not None)
            tokenizer.decode(tokens + [tokenizer.vocab_size + 5])
            outcomes["loaded"] += 1
        except GPTQError as error:
            assert str(error).startswith(f"{folder / 'tokenizer.json'}: "), error
            outcomes["refused"] += 1
    assert min(outcomes.values()) > 50, outcomes


def test_truncation_and_padding_are_turned_off(tokenizers_lib, trained, documents, tmp_path):
    tokenizer = tokenizers_lib.Tokenizer.from_str(trained.to_str())
    tokenizer.enable_truncation(max_length=8)
    tokenizer.enable_padding(length=300, pad_id=EOS, pad_token=EOS_TEXT)
    folder = _write_folder(tmp_path / "tok", tokenizer, CONFIG)
    text = _write_text(tmp_path / "docs.txt", documents[:2])
    expected = _stream(trained, documents[:2])
    assert len(expected) > 2 * 8
    assert _whole_stream(folder, text, tmp_path, len(expected)) == expected


def test_folder_without_tokenizer_json(tokenizers_lib, documents, tmp_path, capsys):
    folder = tmp_path / "empty"
    folder.mkdir()
    text = _write_text(tmp_path / "docs.txt", documents[:2])
    _refused(capsys, folder, text, tmp_path, f"{folder}: no tokenizer.json in this folder")


def test_fifo_as_tokenizer_json(tokenizers_lib, documents, tmp_path, capsys):
    folder = tmp_path / "tok"
    folder.mkdir()
    os.mkfifo(folder / "tokenizer.json")
    text = _write_text(tmp_path / "docs.txt", documents[:2])
    _refused(capsys, folder, text, tmp_path,
             f"{folder / 'tokenizer.json'}: tokenizer is a FIFO, expected a regular file")


@pytest.mark.parametrize(
    "name, content, fragment",
    [
        ("tokenizer_config.json", {"add_bos_token": "yes"}, 'add_bos_token "yes", expected true or false'),
        ("tokenizer_config.json", {"add_eos_token": 1}, "add_eos_token 1, expected true or false"),
        ("tokenizer_config.json", {"bos_token": "<nope>"}, 'bos_token "<nope>" is not a token of'),
        ("tokenizer_config.json", {"eos_token": {"text": "</s>"}}, 'eos_token {"text": "</s>"}, expected a token'),
        ("tokenizer_config.json", {"bos_token": 0}, "bos_token 0, expected a token"),
        ("tokenizer_config.json", [1], "not a JSON object"),
        ("tokenizer_config.json", "{", "not valid JSON"),
        ("tokenizer_config.json", {"add_bos_token": True}, "add_bos_token is true but no BOS token is named"),
        ("tokenizer_config.json", {"add_eos_token": True}, "add_eos_token is true but no EOS token is named"),
        ("generation_config.json", {"eos_token_id": "x"}, 'eos_token_id "x", expected a token id or a list'),
        ("generation_config.json", {"eos_token_id": [1, 512]},
         "eos_token_id [1, 512], expected a token id or a list of token ids in [0, 512)"),
        ("generation_config.json", {"bos_token_id": [0]}, "bos_token_id [0], expected a token id in [0, 512)"),
        ("config.json", {"bos_token_id": True}, "bos_token_id true, expected a token id"),
        ("config.json", {"eos_token_id": -1}, "eos_token_id -1, expected"),
    ],
)
def test_bad_configuration(trained, documents, tmp_path, capsys, name, content, fragment):
    folder = _write_folder(tmp_path / "tok", trained)
    (folder / name).write_text(content if isinstance(content, str) else json.dumps(content))
    text = _write_text(tmp_path / "docs.txt", documents[:2])
    _refused(capsys, folder, text, tmp_path, f"{folder / name}: ", fragment)


def test_tokenizer_files_are_inputs(hf_folder, documents, tmp_path, capsys):
    text = _write_text(tmp_path / "docs.txt", documents[:2])
    config = hf_folder / "tokenizer_config.json"
    before = config.read_bytes()
    assert _calib(hf_folder, text, config, 8) == 1
    _error(capsys, f"output {config} is the same file as the tokenizer {config}")
    assert config.read_bytes() == before


@pytest.mark.parametrize(
    "lines, fragment",
    [
        (['{"text": "One."}', '{"text": "Two."}', '{"text": "Three."'], "line 3: not valid JSON"),
        (['{"text": "One."}', '{"content": "Two."}'], 'line 2: no "text" field'),
        (['{"text": 5}'], 'line 1: "text" is 5, expected a string'),
        (['{"text": null}'], 'line 1: "text" is null, expected a string'),
        (['["One."]'], 'line 1: ["One."], expected an object with a "text" field'),
        (['{"text": "One."}', "", '{"text": "\\ud800"}'],
         "line 3: not valid JSON: a \\u escape of an unpaired surrogate"),
        (['{"text": NaN}'], "line 1: not valid JSON: NaN is not a JSON value"),
    ],
    ids=["truncated", "missing", "number", "null", "array", "surrogate", "nan"],
)
def test_bad_json_lines(hf_folder, tmp_path, capsys, lines, fragment):
    text = tmp_path / "docs.jsonl"
    text.write_text("\n".join(lines) + "\n")
    _refused(capsys, hf_folder, text, tmp_path, f"{text}: {fragment}")


def test_json_lines_not_utf8(hf_folder, tmp_path, capsys):
    text = tmp_path / "docs.json"
    text.write_bytes(b'{"text": "One."}\n{"text": "\xff"}\n')
    _refused(capsys, hf_folder, text, tmp_path, f"{text}: line 2: not valid JSON: not UTF-8 text")


def _parquet(pyarrow_lib, path: Path, columns) -> Path:
    import pyarrow.parquet as pq

    pq.write_table(pyarrow_lib.table(columns), path)
    return path


def test_bad_parquet(hf_folder, pyarrow_lib, tmp_path, capsys):
    good = _parquet(pyarrow_lib, tmp_path / "good.parquet", {"text": ["One.", "Two."] * 50})
    whole = good.read_bytes()
    good.unlink()
    cases = [
        ("random.parquet", os.urandom(200), "not a parquet file: it does not start with PAR1"),
        ("empty.parquet", b"", "not a parquet file: it does not start with PAR1"),
        ("cut.parquet", whole[: len(whole) // 2], "truncated parquet file: it does not end with PAR1"),
        ("cut-footer", whole[:4] + whole[len(whole) - 40 :], "not a readable parquet file"),
        ("garbage", b"PAR1" + os.urandom(300) + b"PAR1", "not a readable parquet file"),
    ]
    for name, content, fragment in cases:
        path = tmp_path / name
        path.write_bytes(content)
        _refused(capsys, hf_folder, path, tmp_path, f"{path}: {fragment}")
        path.unlink()


@pytest.mark.parametrize(
    "columns, fragment",
    [
        ({"content": ["One."]}, 'column "text" is not among ["content"], expected one column of strings'),
        ({"text": [1, 2]}, 'column "text" is int64, expected strings'),
        ({"text": [["One."], ["Two."]]}, 'column "text" is list<'),
        ({"text": [b"One."]}, 'column "text" is binary, expected strings'),
    ],
    ids=["missing", "int", "list", "binary"],
)
def test_parquet_without_a_text_column_of_strings(hf_folder, pyarrow_lib, tmp_path, capsys, columns, fragment):
    path = _parquet(pyarrow_lib, tmp_path / "docs.parquet", columns)
    _refused(capsys, hf_folder, path, tmp_path, f"{path}: {fragment}")


def test_parquet_recognised_by_magic(hf_folder, trained, documents, pyarrow_lib, tmp_path):
    path = _parquet(pyarrow_lib, tmp_path / "test-00000-of-00001", {"text": documents[:3]})
    assert corpus.text_format(path) == "parquet"
    expected = _stream(trained, documents[:3])
    assert list(corpus.load_corpus(open_tokenizer(hf_folder), path)) == expected


def test_fractions_select_records(hf_folder, trained, documents, pyarrow_lib, tmp_path):
    tokenizer = open_tokenizer(hf_folder)
    for name in ("docs.jsonl", "docs.parquet"):
        text = _write_text(tmp_path / name, documents, pyarrow_lib)
        stream = corpus.load_corpus(tokenizer, text, start_fraction=0.5)
        assert list(stream) == _stream(trained, documents[DOCUMENTS // 2 :])


def test_empty_records_leave_no_text(hf_folder, pyarrow_lib, tmp_path, capsys):
    jsonl = tmp_path / "empty.jsonl"
    jsonl.write_text('{"text": ""}\n\n{"text": " "}\n')
    _refused(capsys, hf_folder, jsonl, tmp_path, f"{jsonl}: no text in the selected range [0.0, 1.0) of its records")
    path = _parquet(pyarrow_lib, tmp_path / "empty.parquet", {"text": [None, ""]})
    _refused(capsys, hf_folder, path, tmp_path, f"{path}: no text in the selected range [0.0, 1.0) of its rows")


# Missing packages -----------------------------------------------------------------


def test_missing_tokenizers_package(monkeypatch, tmp_path, capsys):
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "tokenizer.json").write_text("{}")
    text = tmp_path / "docs.txt"
    text.write_text("One.\n")
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    _refused(capsys, folder, text, tmp_path, f"{folder / 'tokenizer.json'}: a Hugging Face tokenizer, which needs "
             "the tokenizers package (pip install tokenizers)")


def test_missing_pyarrow(monkeypatch, tokenizer_path, tmp_path, capsys):
    text = tmp_path / "docs.parquet"
    text.write_bytes(b"PAR1" + bytes(16) + b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    _refused(capsys, tokenizer_path, text, tmp_path, f"{text}: a parquet file, which needs the pyarrow package "
             "(pip install pyarrow)")
