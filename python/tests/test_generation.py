"""Generation with a KV cache: the importers' @prefill and @decode against
the recomputing @forward.

For stories260K (float32 and 4-bit), a tiny synthetic model in batches and
every Hugging Face architecture import-hf reads: greedy tokens through
@prefill + @decode are exactly those of @forward, and the logits of every
step agree with @forward's at that position to 1e-5 relative (one @forward
of the finished sequence gives every position's logits, since a position
reads only the tokens up to it). Bad caches, positions and tokens are
errors naming them; sampling repeats with its seed.
"""

import re
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import hf_models
from conftest import synthetic_checkpoint
from gptq_mlir.cli import commands
from gptq_mlir.cli.commands import main
from gptq_mlir.data.tokenizer import BOS, EOS, load_tokenizer
from gptq_mlir.errors import GPTQError
from gptq_mlir.importers import emitter
from gptq_mlir.runtime import runner
from gptq_mlir.runtime.model import Model, Sampler, generate, perplexity
from hf_models import CONFIGS

TOLERANCE = 1e-5


def relative(ours: np.ndarray, theirs: np.ndarray) -> float:
    return float(np.abs(ours - theirs).max() / np.abs(theirs).max())


def check_against_forward(model: Model, prompt: np.ndarray, steps: int, capacity: int = 0) -> np.ndarray:
    """Greedy steps through the cache from ``prompt`` ``[B, S]``; each
    step's logits and token checked against one @forward of the result.
    Returns the sequences."""
    batch, length = prompt.shape
    caches = model.new_caches(batch, capacity or length + steps)
    step_logits = [model.prefill(prompt, caches)]
    sequence = prompt
    for _ in range(steps):
        token = step_logits[-1].argmax(-1).astype(np.int32)
        sequence = np.concatenate([sequence, token[:, None]], axis=1)
        if len(step_logits) < steps:
            step_logits.append(model.decode(token, sequence.shape[1] - 1, caches))
    full = model.logits(sequence)
    for step, logits in enumerate(step_logits):
        position = length - 1 + step
        assert relative(logits, full[:, position]) < TOLERANCE, f"step {step}"
        assert np.array_equal(logits.argmax(-1), full[:, position].argmax(-1)), f"step {step}"
    return sequence


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("generation") / "tiny.mlir"
    emitter.write_module(synthetic_checkpoint(seed=5, n_kv_heads=2, seq_len=24), path)
    return path


def test_stories260k_greedy_tokens_are_forwards(gptq_run, stories_mlir):
    model = Model(stories_mlir)
    cached = generate(model, 40, [BOS], stop=())
    recomputed = generate(model, 40, [BOS], stop=(), use_cache=False)
    assert cached == recomputed and len(cached) == 41
    check_against_forward(model, np.asarray([cached[:9]], np.int32), 12)


def test_stories260k_4bit(gptq_run, gptq_opt, stories_mlir, tmp_path):
    """The rewrite gives @prefill and @decode the quantized weights of
    @forward: the same tokens, and logits that differ from float32's."""
    quantized = tmp_path / "q4.mlir"
    runner.run_opt(stories_mlir, quantized, ["--gptq-quantize-model=method=rtn bits=4 group-size=32"])
    text = quantized.read_text()
    for entry in ("forward", "prefill", "decode"):
        body = text[text.index(f"func.func @{entry}"):]
        assert "gptq.dequantize" in body[: body.index("\n  }")], entry
    model = Model(quantized)
    prompt = np.asarray([generate(model, 6, [BOS], stop=())], np.int32)
    sequence = check_against_forward(model, prompt, 10)
    assert sequence.tolist()[0] == generate(model, 16, [BOS], stop=(), use_cache=False)
    float_logits = Model(stories_mlir).logits(sequence)
    assert relative(model.logits(sequence), float_logits) > 1e-3


def test_4bit_groups_of_128(gptq_run, gptq_opt, tmp_path):
    """Groups of 128 columns in order (what most 4-bit checkpoints use):
    @decode's few rows take the CPU kernel that sums along K with each
    group's table of weights, @forward's the tiled kernel; tokens and
    logits still agree. 344 hidden columns end in a partial group and
    chunk, 203 vocabulary rows in a partial task; the classifier is
    quantized too."""
    source = tmp_path / "wide.mlir"
    checkpoint = synthetic_checkpoint(seed=9, dim=256, hidden_dim=344, n_heads=4, n_kv_heads=2,
                                      vocab_size=203, seq_len=32)
    emitter.write_module(checkpoint, source)
    quantized = tmp_path / "wide-q4.mlir"
    runner.run_opt(source, quantized, ["--gptq-quantize-model=method=rtn bits=4 group-size=128 classifier=true"])
    model = Model(quantized)
    prompt = np.random.default_rng(4).integers(0, 203, size=(2, 6)).astype(np.int32)
    check_against_forward(model, prompt, 12)


@pytest.mark.parametrize("options", ["method=rtn bits=3 group-size=128 classifier=true",
                                     "calibration={calib} bits=2 group-size=64 act-order=true classifier=true",
                                     "method=rtn bits=6 group-size=32"])
def test_low_bit_decode_kernels(gptq_run, gptq_opt, tmp_path, options):
    """Other widths and groups in runs of a multiple of 32 columns: @decode
    takes the CPU's chunk kernels (512 columns a chunk, each lane's codes
    unpacked in registers), @forward the tiled kernel; an act-order layer
    is stored sorted by group. Tokens and logits agree. 256 and 344 columns
    end in partial chunks (344 in a partial group and word too)."""
    source = tmp_path / "wide.mlir"
    checkpoint = synthetic_checkpoint(seed=9, dim=256, hidden_dim=344, n_heads=4, n_kv_heads=2,
                                      vocab_size=203, seq_len=32)
    emitter.write_module(checkpoint, source)
    calib = tmp_path / "calib.npy"
    np.save(calib, np.random.default_rng(3).integers(0, 203, size=(4, 16)).astype(np.int32))
    quantized = tmp_path / "wide-q.mlir"
    runner.run_opt(source, quantized, ["--gptq-quantize-model=" + options.format(calib=calib)])
    assert ("gptq.permute" in quantized.read_text()) == ("act-order" in options)
    model = Model(quantized)
    prompt = np.random.default_rng(4).integers(0, 203, size=(2, 6)).astype(np.int32)
    check_against_forward(model, prompt, 12)


def test_batches_and_room_to_spare(gptq_run, tiny):
    """Sequences of a batch decode together; caches longer than needed and
    one that is exactly full both work."""
    model = Model(tiny)
    prompt = np.random.default_rng(3).integers(0, 37, size=(3, 5)).astype(np.int32)
    check_against_forward(model, prompt, 7, capacity=24)
    check_against_forward(model, prompt[:1], 19)  # fills all 24 positions


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_hugging_face_architectures(gptq_run, tmp_path, name):
    """Rotary scaling, sliding windows (the prompt and the steps run past
    them), biases, fused layers, head norms, soft caps and mixtures of
    experts in @decode as in @forward."""
    if CONFIGS[name]["model_type"] not in hf_models.OURS:
        pytest.importorskip("transformers", reason="transformers is not installed (scripts/test-deps.sh installs it)")
    folder = hf_models.write_checkpoint(name, tmp_path / "ckpt")
    assert main(["import-hf", str(folder), "-o", str(tmp_path / "model.mlir")]) == 0
    model = Model(tmp_path / "model.mlir")
    prompt = np.random.default_rng(len(name)).integers(0, 256, size=(2, 20)).astype(np.int32)
    check_against_forward(model, prompt, 24)


@pytest.mark.parametrize("dtype", ["F16", "BF16"])
def test_half_precision_checkpoints(gptq_run, tmp_path, checkpoint_path, dtype):
    """Weights read in place as float16 or bfloat16 and widened inside the
    kernels: a decode step's (a few rows) the same as the forward's."""
    from hf_convert import write_hf_checkpoint
    from gptq_mlir.importers import llama2c

    folder = write_hf_checkpoint(llama2c.read_checkpoint(checkpoint_path), tmp_path / "hf", dtype)
    assert main(["import-hf", str(folder), "-o", str(tmp_path / "model.mlir")]) == 0
    model = Model(tmp_path / "model.mlir")
    prompt = np.random.default_rng(4).integers(0, 512, size=(2, 9)).astype(np.int32)
    check_against_forward(model, prompt, 12)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda a: dict(a, position=12), r"decode: the positions run past the KV caches' length"),
        (lambda a: dict(a, position=24), r"decode: position out of range \[0, seq_len = 24\)"),
        (lambda a: dict(a, position=-1), r"decode: position out of range \[0, seq_len = 24\)"),
        (lambda a: dict(a, tokens=np.array([37, 0], np.int32)), r"decode: token id out of range \[0, vocab_size = 37\)"),
        (lambda a: dict(a, tokens=np.array([1], np.int32)),
         r"decode: the KV caches hold another batch size than the tokens"),
        (lambda a: dict(a, v=np.zeros((2, 2, 2, 10, 4), np.float32)), r"decode: the k and v caches differ in positions"),
        (lambda a: dict(a, k=np.zeros((2, 2, 2, 12, 8), np.float32)),
         r"@decode: argument #2: expected float32 \[2, \?, 2, \?, 4\], found float32 \[2, 2, 2, 12, 8\]"),
        (lambda a: dict(a, k=a["k"].astype(np.float64)), r"@decode: argument #2: expected float32"),
        (lambda a: dict(a, k=np.asfortranarray(a["k"])), r"@decode: argument #2 is written in place"),
    ],
)
def test_bad_decode_inputs_are_errors(gptq_run, tiny, change, message):
    model = Model(tiny)
    k, v = model.new_caches(2, 12)
    arguments = change({"tokens": np.array([1, 2], np.int32), "position": 3, "k": k, "v": v})
    with pytest.raises(GPTQError, match=message):
        runner.run_function(
            tiny, [arguments["tokens"], np.array(arguments["position"], np.int64), arguments["k"], arguments["v"]],
            entry="decode",
        )
    # Nothing written, and the model still runs.
    assert not k.any() and not v.any()
    model.prefill(np.array([[1, 2]] * 2, np.int32), (k, v))
    assert k[:, :, :, :2].any() and not k[:, :, :, 2:].any()


def test_bad_prefill_inputs_are_errors(gptq_run, tiny):
    model = Model(tiny)
    with pytest.raises(GPTQError, match=r"prefill: the positions run past the KV caches' length"):
        model.prefill(np.ones((1, 6), np.int32), model.new_caches(1, 5))
    with pytest.raises(GPTQError, match=r"prefill: sequence longer than the model's seq_len = 24"):
        runner.run_function(tiny, [np.ones((1, 25), np.int32), *model.new_caches(1, 30)], entry="prefill")
    with pytest.raises(GPTQError, match=r"prefill: no tokens"):
        runner.run_function(tiny, [np.ones((1, 0), np.int32), *model.new_caches(1, 4)], entry="prefill")


def test_sampling_repeats_with_its_seed(gptq_run, stories_mlir):
    model = Model(stories_mlir)
    first = generate(model, 24, [BOS], sampler=Sampler(0.9, 0.95, seed=7), stop=(BOS, EOS))
    again = generate(model, 24, [BOS], sampler=Sampler(0.9, 0.95, seed=7), stop=(BOS, EOS))
    other = generate(model, 24, [BOS], sampler=Sampler(0.9, 0.95, seed=8), stop=(BOS, EOS))
    greedy = generate(model, 24, [BOS], stop=(BOS, EOS))
    assert first == again
    assert first != other or first != greedy
    # A nucleus this small holds the most likely token alone: greedy.
    assert generate(model, 24, [BOS], sampler=Sampler(1.0, 1e-6, seed=3), stop=(BOS, EOS)) == greedy


def test_sampler_arguments_are_checked():
    """(A negative seed was NumPy's ValueError; fuzz_generation found it.)"""
    for temperature, top_p, seed, message in [(-1, 1, 0, "temperature"), (float("nan"), 1, 0, "temperature"),
                                              (1, 0, 0, "top-p"), (1, 1.5, 0, "top-p"),
                                              (1, 1, -1, r"the seed must be an integer >= 0, got -1")]:
        with pytest.raises(GPTQError, match=message):
            Sampler(temperature, top_p, seed)


def test_sampler_takes_no_nan_and_raises_no_numpy_warning():
    """Non-finite logits are an error before NumPy sees them; a temperature
    so small that the logits divided by it overflow (a subnormal one) picks
    among the maxima, as the arg-max would, without a RuntimeWarning."""
    logits = np.array([0.5, 2.0, 2.0 - 1e-6, -3.0, 2.0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for temperature in (1e-310, 5e-324, 1e-300):
            picks = {Sampler(temperature, seed=seed)(logits) for seed in range(8)}
            assert picks <= {1, 4} and picks, (temperature, picks)
        assert Sampler(1e-310, top_p=0.5)(logits) == 1
        for bad in (np.nan, np.inf, -np.inf):
            for temperature in (0.0, 0.8):
                with pytest.raises(GPTQError, match=r"cannot pick a token: the model's logits are not finite "
                                                    r"\(1 of 5 values are (NaN|\+Inf|-Inf)\)"):
                    Sampler(temperature)(np.where(np.arange(5) == 2, bad, logits))


class FixedLogits(Model):
    """A model whose logits are fixed (token 3 the most likely, at ``peak``)
    and ``value`` (NaN by default) at every position whose token is ``bad``:
    the guards on the logits are Python's, so no module need be compiled."""

    def __init__(self, bad: int, value: float = np.nan, vocab_size: int = 8, seq_len: int = 16, peak: float = 1.0,
                 cached: bool = False):
        self.path = Path("nan.mlir")
        self.seq_len, self.vocab_size, self._old_caches = seq_len, vocab_size, False
        # With a cache, generate() calls prefill() and decode() below.
        self.cache_shape = (1, 1, 1) if cached else None
        self.bad, self.value, self.peak = bad, value, peak

    def logits(self, tokens):
        tokens = self.check_tokens(tokens)
        logits = np.zeros(tokens.shape + (self.vocab_size,), np.float32)
        logits[..., 3] = self.peak
        logits[tokens == self.bad] = self.value
        return logits

    def prefill(self, tokens, caches):
        return self.logits(tokens)[:, -1]

    def decode(self, tokens, position, caches):
        return self.logits(np.asarray(tokens).reshape(-1, 1))[:, 0]


def test_nonfinite_logits_stop_generation_and_perplexity(tokenizer_path, text_path, monkeypatch, capsys):
    """NaN or infinite logits stop generation and perplexity with an error
    naming the token position (and the window), exit status 1 from the
    commands; a perplexity that overflows float64 is an error too."""
    for value, kind in ((np.nan, "NaN"), (np.inf, r"\+Inf")):
        model = FixedLogits(bad=7, value=value)
        assert generate(model, 4, [1, 2], stop=()) == [1, 2, 3, 3, 3, 3]
        for cached in (False, True):
            with pytest.raises(GPTQError, match=rf"^nan.mlir: token position 3: the model's logits are not finite "
                                                rf"\(8 of 8 values are {kind}\)"):
                generate(FixedLogits(bad=7, value=value, cached=cached), 4, [1, 2, 5, 7], stop=())
            # The token made at position 2 gives NaN in the next step (a decode step with the cache).
            with pytest.raises(GPTQError, match=r"^nan.mlir: token position 2: "):
                generate(FixedLogits(bad=3, value=value, cached=cached), 4, [1, 2], stop=())
        windows = np.array([[1, 2, 3, 4], [1, 2, 3, 5], [1, 2, 7, 5]], np.int32)
        assert perplexity(model, windows[:2], progress=None)["tokens"] == 6
        with pytest.raises(GPTQError, match=rf"^nan.mlir: window 3 of 3, token position 2: the model's logits are not "
                                            rf"finite \(8 of 8 values are {kind}\)"):
            perplexity(FixedLogits(bad=7, value=value), windows, batch=2, progress=None)
    # The last position's logits predict nothing.
    assert perplexity(model, np.array([[1, 2, 3, 7]], np.int32), progress=None)["tokens"] == 3
    with pytest.raises(GPTQError, match=r"mean negative log-likelihood is 1e\+30 nats per token, so its perplexity"):
        perplexity(FixedLogits(bad=-1, peak=1e30), np.array([[1, 2, 4]], np.int32), progress=None)

    # The commands: one line, exit status 1.
    monkeypatch.setattr(commands, "Model", lambda path: FixedLogits(bad=1, vocab_size=512, seq_len=512))
    assert commands.main(["generate", "--model", "m.mlir", "--tokenizer", str(tokenizer_path), "--temperature", "0.8"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("gptq_mlir: error: nan.mlir: token position 0: the model's logits are not finite "
                          "(512 of 512 values are NaN)") and err.count("\n") == 1, err
    assert commands.main(["perplexity", "--model", "m.mlir", "--tokenizer", str(tokenizer_path), "--text", str(text_path),
                     "--start-fraction", "0.99", "--seqlen", "64"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("gptq_mlir: error: nan.mlir: window 1 of ") and ", token position 0: " in err[-1], err
    assert all(line.startswith("perplexity: ") for line in err[:-1]), err


def returning(vocab_size, **shapes) -> Model:
    """A model whose every entry returns zero logits of ``shapes[entry]``,
    as a module edited by hand may: the signature fixes only the rank."""
    model = Model.__new__(Model)
    model.path, model.seq_len, model.vocab_size = Path("shapes.mlir"), 16, vocab_size
    model.cache_shape, model._old_caches = (1, 1, 1), False
    model._module = SimpleNamespace(call=lambda entry, inputs: [np.zeros(shapes[entry], np.float32)])
    return model


def test_logits_of_another_shape_are_an_error_naming_the_entry():
    """Logits of another row count or vocabulary than the tokens and the
    model's vocab_size (without one, narrower than a token id) are an error
    naming the entry; they were an IndexError (no row), NumPy's "argmax of
    an empty sequence", or tokens outside the vocabulary, generated or taken
    as perplexity targets. fuzz_generation found them."""
    right = {"forward": (1, 2, 8), "prefill": (1, 8), "decode": (1, 8)}
    for entry, shape, tokens in (("prefill", (0, 8), "[1, 2]"), ("prefill", (1, 0), "[1, 2]"),
                                 ("prefill", (1, 10), "[1, 2]"), ("decode", (2, 8), "[1]"),
                                 ("forward", (1, 2, 9), "[1, 2]"), ("forward", (1, 3, 8), "[1, 2]")):
        expected = "[1, 2, 8]" if entry == "forward" else "[1, 8]"
        message = (rf"^shapes.mlir: @{entry} returned logits of shape {re.escape(str(list(shape)))} for tokens of "
                   rf"shape {re.escape(tokens)}, expected {re.escape(expected)}$")
        with pytest.raises(GPTQError, match=message):
            generate(returning(8, **dict(right, **{entry: shape})), 3, [1, 2], stop=(), use_cache=entry != "forward")
    assert generate(returning(8, **right), 1, [1, 2], stop=()) == [1, 2, 0]
    windows = np.array([[1, 5, 2]], np.int32)
    with pytest.raises(GPTQError, match=r"@forward returned logits of shape \[1, 3, 4\] for tokens of shape \[1, 3\], "
                                        r"expected \[1, 3, vocab\] with vocab > 5, the largest token id$"):
        perplexity(returning(None, forward=(1, 3, 4)), windows, progress=None)
    assert perplexity(returning(None, forward=(1, 3, 6)), windows, progress=None) == {"perplexity": 6.0, "tokens": 2}


def test_perplexity_needs_a_token_to_predict():
    """No windows, or windows of one token, predict nothing: an error (was
    ZeroDivisionError; fuzz_generation found it)."""
    for shape in ((0, 4), (3, 1), (4,)):
        with pytest.raises(GPTQError, match=rf"^windows must be \[count, length\] with at least one window of at least "
                                            rf"2 tokens \(one to predict\), got shape {re.escape(str(shape))}$"):
            perplexity(FixedLogits(bad=-1), np.ones(shape, np.int32), progress=None)


def test_the_context_bounds_prompts_windows_and_generation(gptq_run, stories_mlir, tokenizer_path, text_path,
                                                           capsys):
    """A prompt that leaves no room in the model's context (seq_len 512 for
    stories260K) and a perplexity window longer than it are one-line
    errors naming the limit, before anything is written or read;
    generation stops at the context, saying so."""
    tokenizer = load_tokenizer(tokenizer_path)
    base = ["generate", "--model", str(stories_mlir), "--tokenizer", str(tokenizer_path)]
    long = "dog " * 600
    assert main([*base, "--prompt", long]) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == (f"gptq_mlir: error: the prompt is {len(tokenizer.encode(long))} tokens; "
                       "the model's context is 512 (seq_len)\n")
    with pytest.raises(GPTQError, match=r"the prompt is 512 tokens, the whole of the model's context \(512, "
                                        r"seq_len\): no room is left"):
        generate(Model(stories_mlir), 1, [BOS] * 512)
    prompt = "Once upon a time " * 126
    length = len(tokenizer.encode(prompt))
    assert 500 < length < 512
    assert main([*base, "--prompt", prompt, "--steps", "20"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith(prompt.strip())
    assert out.err == (f"generate: stopped after {512 - length} of 20 tokens: the model's context is 512 tokens "
                       "(seq_len)\n")
    assert main(["perplexity", "--model", str(stories_mlir), "--tokenizer", str(tokenizer_path),
                 "--text", str(text_path), "--seqlen", "600"]) == 1
    assert capsys.readouterr().err == ("gptq_mlir: error: a window (--seqlen) is 600 tokens; the model's context is "
                                       "512 (seq_len)\n")


OLD_LAYOUT_ENTRIES = """
  func.func @prefill(%tokens: tensor<?x?xi32>, %k: memref<2x?x?x2x4xf32>, %v: memref<2x?x?x2x4xf32>) -> tensor<?x?xf32> {
    %c0 = arith.constant 0 : index
    %b = tensor.dim %tokens, %c0 : tensor<?x?xi32>
    %out = tensor.empty(%b, %b) : tensor<?x?xf32>
    return %out : tensor<?x?xf32>
  }
  func.func @decode(%tokens: tensor<?xi32>, %position: i64, %k: memref<2x?x?x2x4xf32>, %v: memref<2x?x?x2x4xf32>) -> tensor<?x?xf32> {
    %c0 = arith.constant 0 : index
    %b = tensor.dim %tokens, %c0 : tensor<?xi32>
    %out = tensor.empty(%b, %b) : tensor<?x?xf32>
    return %out : tensor<?x?xf32>
  }
"""


def test_module_with_old_cache_layout_says_reimport(gptq_run, tiny, tmp_path):
    """A module imported before the caches became [layers, batch, kv heads,
    positions, head size] is not given caches of the new layout: an error
    that says to re-import it, and generation recomputes as it would
    without the entries."""
    text = tiny.read_text()
    start = text.index("  func.func @prefill")
    end = text.index("\n}", start)
    old = tmp_path / "old-layout.mlir"
    old.write_text(text[:start] + OLD_LAYOUT_ENTRIES + text[end + 1:])
    model = Model(old)
    assert model.cache_shape is None
    with pytest.raises(GPTQError, match=r"\[layers, batch, positions, kv heads, head size\].*re-import it"):
        model.new_caches(1, 4)
    assert generate(model, 8, [1], stop=()) == generate(Model(tiny), 8, [1], stop=())


def test_module_without_cache_entries_recomputes(gptq_run, tiny, tmp_path):
    """A module with @forward alone (an older import, or another importer's)
    generates the same tokens the slow way."""
    text = tiny.read_text()
    start = text.index("  func.func @prefill")
    end = text.index("\n}", start)
    bare = tmp_path / "forward-only.mlir"
    bare.write_text(text[:start] + text[end + 1:])
    model = Model(bare)
    assert model.cache_shape is None
    with pytest.raises(GPTQError, match="has no @prefill and @decode: re-import it"):
        model.new_caches(1, 4)
    assert generate(model, 8, [1], stop=()) == generate(Model(tiny), 8, [1], stop=())
