"""Hugging Face tokenizers (``tokenizer.json``), read with the ``tokenizers`` package.

A tokenizer is a folder holding ``tokenizer.json``, or that file itself.
Its BOS and EOS tokens, and whether a document starts with BOS or ends with
EOS, come from the files beside it:

- ``tokenizer_config.json``: ``bos_token``, ``eos_token`` (a token's text,
  or an object with its ``content``), ``add_bos_token``, ``add_eos_token``;
- ``generation_config.json``: ``bos_token_id``, ``eos_token_id`` (an id or
  a list of ids, as Llama 3's);
- ``config.json``: ``bos_token_id``, ``eos_token_id``.

BOS is the first of ``bos_token``, then ``generation_config.json``'s, then
``config.json``'s ``bos_token_id``; the EOS ids are all that the three
files name. Without any, the one special token the tokenizer's own
post-processor puts before (after) a text is BOS (EOS).

A document is encoded without the post-processor's special tokens
(``add_special_tokens=False``), and BOS is put before it by this module
when ``add_bos_token`` is true or, without ``add_bos_token``, when the
post-processor would put BOS there itself (Llama 3's template adds
``<|begin_of_text|>``, a converted Llama 2 one ``<s>``): BOS appears once,
whichever of the two asks for it. EOS is put after it likewise
(``add_eos_token``, else the post-processor). Truncation and padding that
``tokenizer.json`` may configure are turned off: every document is encoded
whole. Decoding skips special tokens.

Every file is read through :mod:`gptq_mlir.files.inputs` (regular files only,
bounded); nothing is downloaded. Every failure is a :class:`GPTQError`
whose message names the file and the field.
"""

import os
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, TypeVar, Union

from ..errors import GPTQError
from ..files import inputs

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
GENERATION_CONFIG_FILE = "generation_config.json"
MODEL_CONFIG_FILE = "config.json"
#: The files beside tokenizer.json that say which tokens are BOS and EOS.
CONFIG_FILES = (TOKENIZER_CONFIG_FILE, GENERATION_CONFIG_FILE, MODEL_CONFIG_FILE)
#: The text whose encodings with and without special tokens show what the
#: post-processor adds.
_PROBE = "a"
T = TypeVar("T")


def tokenizer_file(path: Union[str, os.PathLike]) -> Path:
    """The ``tokenizer.json`` that ``path`` (a folder or the file) names."""
    path = Path(path)
    return path / TOKENIZER_FILE if path.is_dir() else path


def input_files(path: Union[str, os.PathLike]) -> List[Path]:
    """Every file a Hugging Face tokenizer at ``path`` may be read from."""
    main = tokenizer_file(path)
    return [main] + [main.parent / name for name in CONFIG_FILES]


def _library(path: Path):
    """The ``tokenizers`` package, imported when first needed."""
    try:
        import tokenizers
    except ImportError:
        raise GPTQError(
            f"{path}: a Hugging Face tokenizer, which needs the tokenizers package (pip install tokenizers)"
        ) from None
    return tokenizers


def _read_tokenizer(path: Path):
    """The ``tokenizers.Tokenizer`` of the file ``path``, checked: bounded,
    valid JSON, an object with a ``model``, accepted by the library."""
    library = _library(path)
    data = inputs.read_regular(path, "tokenizer", inputs.MAX_JSON_BYTES)
    try:
        content = inputs.parse_json(data)
    except GPTQError as error:
        raise GPTQError(f"{path}: {error}") from None
    if not isinstance(content, dict) or not isinstance(content.get("model"), dict):
        raise GPTQError(f'{path}: not a Hugging Face tokenizer: no "model" object')
    text = data.decode("utf-8")
    tokenizer = _library_call(path, "not a Hugging Face tokenizer", lambda: library.Tokenizer.from_str(text))
    _check_templates(content.get("post_processor"), path)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def _library_call(path: Path, what: str, call: Callable[[], T]) -> T:
    """``call()``, a call into the tokenizers package; what it raises (an
    Exception, or a Rust panic: pyo3's PanicException, a BaseException)
    becomes a GPTQError ``PATH: WHAT: reason``."""
    try:
        return call()
    except BaseException as error:  # noqa: BLE001 - the library raises plain Exception, or panics
        if not isinstance(error, Exception) and type(error).__name__ != "PanicException":
            raise
        raise GPTQError(f"{path}: {what}: {inputs.reason(error)}") from None


def _check_templates(processor: Any, path: Path) -> None:
    """Refuse a TemplateProcessing post-processor (alone or in a Sequence)
    whose template names a special token it does not define: the tokenizers
    package accepts it, then panics when it encodes with special tokens."""
    if not isinstance(processor, dict):
        return
    if processor.get("type") == "Sequence" and isinstance(processor.get("processors"), list):
        for inner in processor["processors"]:
            _check_templates(inner, path)
    if processor.get("type") != "TemplateProcessing":
        return
    defined = processor.get("special_tokens")
    for key in ("single", "pair"):
        pieces = processor.get(key)
        for piece in pieces if isinstance(pieces, list) else []:
            token = piece.get("SpecialToken") if isinstance(piece, dict) else None
            if isinstance(token, dict) and not (isinstance(defined, dict) and token.get("id") in defined):
                raise GPTQError(
                    f"{path}: post_processor: its {key} template names {inputs.describe(token.get('id'))}, "
                    "which is not one of its special_tokens"
                )


def _config(path: Path) -> Dict[str, Any]:
    """The JSON object in ``path``, {} when there is no such file."""
    if not os.path.lexists(path):
        return {}
    content = inputs.load_json(path, path.name)
    if not isinstance(content, dict):
        raise GPTQError(f"{path}: not a JSON object")
    return content


def _flag(config: Dict[str, Any], path: Path, key: str) -> Optional[bool]:
    value = config.get(key)
    if value is not None and not isinstance(value, bool):
        raise GPTQError(f"{path}: {key} {inputs.describe(value)}, expected true or false")
    return value


def _vocab_size(tokenizer) -> int:
    """Number of token ids, added tokens included: one more than the largest."""
    largest = max(tokenizer.get_vocab(with_added_tokens=True).values(), default=-1)
    return max(tokenizer.get_vocab_size(with_added_tokens=True), largest + 1)


class _Vocabulary:
    """What a tokenizer's configuration files are checked against."""

    def __init__(self, tokenizer, main: Path):
        self.tokenizer = tokenizer
        self.main = main
        self.size = _vocab_size(tokenizer)

    def token(self, config: Dict[str, Any], path: Path, key: str) -> List[int]:
        """The id of the token ``config[key]`` names (its text, or an object
        with its ``content``); [] when it names none."""
        value = config.get(key)
        if value is None:
            return []
        text = value.get("content") if isinstance(value, dict) else value
        if not isinstance(text, str):
            raise GPTQError(
                f'{path}: {key} {inputs.describe(value)}, expected a token (a string or {{"content": ...}})'
            )
        token = self.tokenizer.token_to_id(text)
        if token is None:
            raise GPTQError(f"{path}: {key} {inputs.describe(text)} is not a token of {self.main}")
        return [token]

    def ids(self, config: Dict[str, Any], path: Path, key: str, many: bool) -> List[int]:
        """The token ids ``config[key]`` holds: an id or, when ``many``, a
        list of ids; [] when absent."""
        value = config.get(key)
        if value is None:
            return []
        values = value if many and isinstance(value, list) else [value]
        for token in values:
            if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < self.size:
                expected = "a token id or a list of token ids" if many else "a token id"
                raise GPTQError(
                    f"{path}: {key} {inputs.describe(value)}, expected {expected} in [0, {self.size}) "
                    f"(the vocabulary of {self.main})"
                )
        return values


def _unique(ids: Iterable[int]) -> Tuple[int, ...]:
    return tuple(dict.fromkeys(ids))


def _template(tokenizer, path: Path) -> Tuple[List[int], List[int]]:
    """The special tokens the post-processor puts before and after a text."""
    what = f"cannot encode {_PROBE!r}"
    plain = _library_call(path, what, lambda: tokenizer.encode(_PROBE, add_special_tokens=False).ids)
    special = _library_call(path, what, lambda: tokenizer.encode(_PROBE, add_special_tokens=True).ids)
    if plain:
        for start in range(len(special) - len(plain) + 1):
            if special[start : start + len(plain)] == plain:
                return special[:start], special[start + len(plain) :]
    return [], []


class HFTokenizer:
    """A ``tokenizers.Tokenizer`` with the BOS/EOS configuration of the files
    beside it, with the interface of :class:`gptq_mlir.data.tokenizer.Tokenizer`."""

    def __init__(
        self, tokenizer, path: Path, vocab_size: int, bos_id: Optional[int], eos_ids: Tuple[int, ...],
        add_bos: bool, add_eos: bool,
    ):
        self._tokenizer = tokenizer
        self.path = path
        #: Number of token ids, added tokens included (one more than the largest id).
        self.vocab_size = vocab_size
        self.bos_id = bos_id
        self.eos_ids = eos_ids
        self.add_bos = add_bos
        self.add_eos = add_eos

    @property
    def stop_ids(self) -> Tuple[int, ...]:
        """The tokens generation stops at: every EOS id and BOS."""
        return _unique(self.eos_ids + ((self.bos_id,) if self.bos_id is not None else ()))

    def encode(self, text: str, bos: bool = True, eos: bool = False) -> List[int]:
        """Token ids of ``text`` without the post-processor's special tokens,
        then BOS before them when ``bos`` and the first EOS id after them
        when ``eos``."""
        if bos and self.bos_id is None:
            raise GPTQError(f"{self.path}: no BOS token to put before a text")
        if eos and not self.eos_ids:
            raise GPTQError(f"{self.path}: no EOS token to put after a text")
        tokens = _library_call(
            self.path, "cannot encode a text", lambda: self._tokenizer.encode(text, add_special_tokens=False).ids
        )
        return ([self.bos_id] if bos else []) + tokens + ([self.eos_ids[0]] if eos else [])

    def decode(self, tokens: Iterable[int]) -> str:
        """Text of a token sequence; special tokens (BOS, EOS, ...) print as nothing."""
        tokens = list(tokens)
        return _library_call(
            self.path, "cannot decode tokens", lambda: self._tokenizer.decode(tokens, skip_special_tokens=True)
        )

    def check_vocabulary(self, model_vocab_size: int, model: Union[str, os.PathLike]) -> None:
        """GPTQError unless the model has a row for every token; it may have
        more (embeddings are often padded: Qwen2.5 has 151,936 rows for
        151,665 tokens)."""
        if model_vocab_size < self.vocab_size:
            raise GPTQError(
                f"tokenizer {self.path} has {self.vocab_size} tokens but model {model} has a vocabulary "
                f"of only {model_vocab_size}"
            )


def load_hf_tokenizer(path: Union[str, os.PathLike]) -> HFTokenizer:
    """The Hugging Face tokenizer at ``path`` (a folder with tokenizer.json,
    or the file) and the BOS/EOS configuration of the files beside it."""
    main = tokenizer_file(path)
    if Path(path).is_dir() and not os.path.lexists(main):
        raise GPTQError(f"{path}: no {TOKENIZER_FILE} in this folder (a Hugging Face tokenizer folder holds one)")
    tokenizer = _read_tokenizer(main)
    folder = main.parent
    tokenizer_config_path, generation_path, model_config_path = (folder / name for name in CONFIG_FILES)
    tokenizer_config = _config(tokenizer_config_path)
    generation = _config(generation_path)
    model_config = _config(model_config_path)
    vocabulary = _Vocabulary(tokenizer, main)

    bos = (
        vocabulary.token(tokenizer_config, tokenizer_config_path, "bos_token")
        + vocabulary.ids(generation, generation_path, "bos_token_id", many=False)
        + vocabulary.ids(model_config, model_config_path, "bos_token_id", many=False)
    )
    eos = list(
        _unique(
            vocabulary.token(tokenizer_config, tokenizer_config_path, "eos_token")
            + vocabulary.ids(generation, generation_path, "eos_token_id", many=True)
            + vocabulary.ids(model_config, model_config_path, "eos_token_id", many=True)
        )
    )
    before, after = _template(tokenizer, main)
    if not bos and len(before) == 1:
        bos = before
    if not eos and len(after) == 1:
        eos = after
    bos_id = bos[0] if bos else None

    add_bos = _flag(tokenizer_config, tokenizer_config_path, "add_bos_token")
    if add_bos is None:
        add_bos = bos_id is not None and bos_id in before
    elif add_bos and bos_id is None:
        raise GPTQError(
            f"{tokenizer_config_path}: add_bos_token is true but no BOS token is named (bos_token here, "
            f"bos_token_id in {GENERATION_CONFIG_FILE} or {MODEL_CONFIG_FILE})"
        )
    add_eos = _flag(tokenizer_config, tokenizer_config_path, "add_eos_token")
    if add_eos is None:
        add_eos = bool(eos) and eos[0] in after
    elif add_eos and not eos:
        raise GPTQError(
            f"{tokenizer_config_path}: add_eos_token is true but no EOS token is named (eos_token here, "
            f"eos_token_id in {GENERATION_CONFIG_FILE} or {MODEL_CONFIG_FILE})"
        )
    return HFTokenizer(tokenizer, main, vocabulary.size, bos_id, tuple(eos), add_bos, add_eos)
