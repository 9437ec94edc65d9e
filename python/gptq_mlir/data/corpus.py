"""Text corpora as token streams: documents, windows and calibration samples.

A corpus is a list of documents, read from one of three formats
(:func:`text_format` tells them apart):

- plain text: paragraphs separated by blank lines (the TinyStories layout),
  each paragraph a document;
- JSON lines (a name ending in ``.jsonl`` or ``.json``): one JSON object per
  line with a string ``text`` field (the files people keep of C4), each
  line a document; blank lines are skipped;
- parquet (a name ending in ``.parquet``, or a file that starts and ends
  with the magic ``PAR1``): a string column ``text`` (WikiText-2's
  ``wikitext-2-raw-v1/test-*.parquet``), each row a document; nulls are
  skipped. Read with ``pyarrow``.

Each document is stripped of surrounding whitespace, and empty ones are
skipped, so the same documents give the same tokens in every format. The
corpus is tokenized document by document, each as BOS followed by its
tokens (for a Hugging Face tokenizer, BOS and EOS as its configuration
says, see :mod:`gptq_mlir.data.hf_tokenizer`), and the documents are
concatenated into one stream, as in the GPTQ paper's evaluation protocol.

A corpus is bounded so that no file makes a command run for hours or
exhaust memory before it says anything: a text file (plain or JSON lines)
may hold at most :data:`MAX_TEXT_BYTES`, and so may the text of a parquet
file's rows; a document at most :data:`MAX_DOCUMENT_CHARS` characters
(tokenizers need memory in proportion to a document); and a NUL character
is refused, since no text holds one (a sparse or binary file does).
Reading and tokenizing a large corpus prints a line of progress every few
seconds.
"""

import array
import io
import os
import re
import time
from pathlib import Path
from typing import List, Optional, TextIO, Tuple, Union

import numpy as np

from ..errors import GPTQError
from ..files import inputs
from .tokenizer import TextTokenizer

_BLANK_LINE = re.compile(r"\n[ \t\r]*\n")
_PARQUET_MAGIC = b"PAR1"
#: Where Python's JSON parser says an error is, within the one line parsed.
_JSON_POSITION = re.compile(r": line 1 column (\d+) \(char \d+\)")
#: The names of a document in each format, for messages.
_UNITS = {"text": "paragraphs", "jsonl": "records", "parquet": "rows"}

#: The most bytes a text may hold: a plain text or JSON lines file, or the
#: text of a parquet file's rows (1 GiB; the package's own tokenizer takes
#: about 10 minutes for it).
MAX_TEXT_BYTES = 1 << 30
#: The most characters a document may hold (16 Mi): a tokenizer needs
#: memory in proportion to a document (llama2.c's about 130 bytes a
#: character).
MAX_DOCUMENT_CHARS = 1 << 24
#: How much of a text file is read at a time.
_CHUNK_CHARS = 1 << 24
#: Seconds between two lines of progress.
PROGRESS_SECONDS = 5.0


class _Progress:
    """Lines on ``stream`` (None: none) saying how far a long step is: the
    first after :data:`PROGRESS_SECONDS`, then one every as many, so that
    a short step prints nothing."""

    def __init__(self, stream: Optional[TextIO]):
        self.stream = stream
        self.last = time.monotonic()

    def __call__(self, line) -> None:
        """Print ``line()`` when it is time."""
        if self.stream is None or time.monotonic() - self.last < PROGRESS_SECONDS:
            return
        self.last = time.monotonic()
        print(line(), file=self.stream, flush=True)


def _mib(count: int) -> str:
    return f"{count / (1 << 20):.0f} MiB"


def _check_size(path: Union[str, os.PathLike], size: int, what: str = "the text is") -> None:
    """GPTQError when ``size`` bytes of text are more than :data:`MAX_TEXT_BYTES`."""
    if size > MAX_TEXT_BYTES:
        gib = f" ({MAX_TEXT_BYTES >> 30} GiB)" if MAX_TEXT_BYTES % (1 << 30) == 0 else ""
        raise GPTQError(
            f"{path}: {what} {size} bytes, more than the {MAX_TEXT_BYTES} bytes{gib} a text may hold; "
            "split it into smaller files"
        )


def _check_document(path: Union[str, os.PathLike], document: str, where: str) -> None:
    """GPTQError naming ``where`` the document is when it is too long for a
    tokenizer or holds a NUL character."""
    if len(document) > MAX_DOCUMENT_CHARS:
        raise GPTQError(
            f"{path}: {where} holds {len(document)} characters, more than the {MAX_DOCUMENT_CHARS} a document may "
            "hold; separate documents by blank lines (plain text) or records (JSON lines)"
        )
    nul = document.find("\0")
    if nul >= 0:
        raise GPTQError(f"{path}: {where} holds a NUL character (at character {nul}): not text")


def read_text(path: Union[str, os.PathLike], progress: Optional[TextIO] = None) -> str:
    """The UTF-8 text of the regular file ``path``, line ends translated as
    ``open`` does; GPTQError if unreadable, not UTF-8, larger than
    :data:`MAX_TEXT_BYTES` or holding a NUL byte (found in the first chunk
    for a sparse or binary file, not after reading it all)."""
    with inputs.open_regular(path, "text") as raw, io.TextIOWrapper(raw, encoding="utf-8") as handle:
        size = os.fstat(raw.fileno()).st_size
        _check_size(path, size)
        parts: List[str] = []
        done = 0
        report = _Progress(progress)
        while True:
            try:
                chunk = handle.read(_CHUNK_CHARS)
            except OSError as error:
                raise GPTQError(f"cannot read text {path}: {error.strerror or error}") from error
            except UnicodeDecodeError as error:
                raise GPTQError(f"{path} is not UTF-8 text: {error}") from error
            if not chunk:
                break
            nul = chunk.find("\0")
            if nul >= 0:
                raise GPTQError(f"{path}: a NUL byte at character {done + nul}: not a text file")
            parts.append(chunk)
            done += len(chunk)
            _check_size(path, raw.tell(), "the text grew to")
            report(lambda: f"reading {path}: {_mib(raw.tell())} of {_mib(size)}")
    return "".join(parts)


def split_paragraphs(text: str) -> List[str]:
    """Non-empty paragraphs of ``text`` (separated by blank lines), stripped."""
    return [p.strip() for p in _BLANK_LINE.split(text) if p.strip()]


def _starts_and_ends_with_parquet_magic(path: Union[str, os.PathLike]) -> bool:
    try:
        with inputs.open_regular(path, "text") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < 2 * len(_PARQUET_MAGIC):
                return False
            head = handle.read(len(_PARQUET_MAGIC))
            handle.seek(size - len(_PARQUET_MAGIC))
            return head == _PARQUET_MAGIC and handle.read(len(_PARQUET_MAGIC)) == _PARQUET_MAGIC
    except (OSError, GPTQError):
        return False


def text_format(path: Union[str, os.PathLike]) -> str:
    """``"parquet"`` for a name ending in ``.parquet`` or a regular file that
    starts and ends with ``PAR1``; else ``"jsonl"`` for a name ending in
    ``.jsonl`` or ``.json``; else ``"text"``."""
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet" or _starts_and_ends_with_parquet_magic(path):
        return "parquet"
    if suffix in (".jsonl", ".json"):
        return "jsonl"
    return "text"


def _json_lines(path: Union[str, os.PathLike]) -> List[str]:
    """The ``text`` of each line of a JSON lines file, stripped, empty ones left out."""
    documents = []
    with inputs.open_regular(path, "JSON lines text") as handle:
        _check_size(path, os.fstat(handle.fileno()).st_size)
        number = 0
        while True:
            try:
                line = handle.readline(inputs.MAX_JSON_BYTES + 1)
            except OSError as error:
                raise GPTQError(f"cannot read JSON lines text {path}: {error.strerror or error}") from error
            if not line:
                return documents
            number += 1
            if len(line) > inputs.MAX_JSON_BYTES:
                raise GPTQError(f"{path}: line {number}: longer than the {inputs.MAX_JSON_BYTES} bytes a line may have")
            if not line.strip():
                continue
            try:
                record = inputs.parse_json(line.strip())
            except GPTQError as error:
                where = _JSON_POSITION.sub(r" at column \1", str(error))
                raise GPTQError(f"{path}: line {number}: {where} (JSON lines hold one object per line)") from None
            if not isinstance(record, dict):
                raise GPTQError(
                    f'{path}: line {number}: {inputs.describe(record, 40)}, expected an object with a "text" field'
                )
            if "text" not in record:
                raise GPTQError(f'{path}: line {number}: no "text" field')
            text = record["text"]
            if not isinstance(text, str):
                raise GPTQError(f'{path}: line {number}: "text" is {inputs.describe(text, 40)}, expected a string')
            if text.strip():
                _check_document(path, text, f"line {number}")
                documents.append(text.strip())


def _pyarrow(path: Union[str, os.PathLike]):
    """``pyarrow`` and ``pyarrow.parquet``, imported when first needed."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise GPTQError(f"{path}: a parquet file, which needs the pyarrow package (pip install pyarrow)") from None
    return pyarrow, pyarrow.parquet


def _parquet_rows(path: Union[str, os.PathLike]) -> List[str]:
    """The ``text`` column of a parquet file, stripped, nulls and empty rows left out."""
    pyarrow, parquet = _pyarrow(path)
    with inputs.open_regular(path, "parquet file") as handle:
        size = os.fstat(handle.fileno()).st_size
        magic = len(_PARQUET_MAGIC)
        head = bytes(inputs.read_exactly(handle, min(magic, size), 0, path, "parquet file"))
        if head != _PARQUET_MAGIC:
            raise GPTQError(f"{path}: not a parquet file: it does not start with {_PARQUET_MAGIC.decode()}")
        tail = b""
        if size >= 2 * magic:
            tail = bytes(inputs.read_exactly(handle, magic, size - magic, path, "parquet file"))
        if tail != _PARQUET_MAGIC:
            raise GPTQError(f"{path}: truncated parquet file: it does not end with {_PARQUET_MAGIC.decode()}")
        handle.seek(0)
        try:
            table = parquet.ParquetFile(handle)
            schema = table.schema_arrow
        except (pyarrow.ArrowException, OSError, ValueError, TypeError, IndexError) as error:
            raise GPTQError(f"{path}: not a readable parquet file ({inputs.reason(error)})") from None
        if schema.names.count("text") != 1:
            found = "twice" if "text" in schema.names else f"not among {inputs.describe(schema.names)}"
            raise GPTQError(f'{path}: column "text" is {found}, expected one column of strings')
        kind = schema.field("text").type
        value = kind.value_type if pyarrow.types.is_dictionary(kind) else kind
        if not (pyarrow.types.is_string(value) or pyarrow.types.is_large_string(value)):
            raise GPTQError(f'{path}: column "text" is {kind}, expected strings')
        documents, number, size = [], 0, 0
        try:
            # One thread: pyarrow 15 can abort the process at exit after a
            # damaged page was read by its thread pool (apache/arrow#34314).
            # In batches, so that the text's size is checked as it grows
            # (a dictionary-encoded column can expand far beyond the file).
            for batch in table.iter_batches(batch_size=1024, columns=["text"], use_threads=False):
                for row in batch.column(0).to_pylist():
                    number += 1
                    if row is not None:
                        size += len(row.encode("utf-8"))
                        _check_size(path, size, 'column "text" holds at least')
                        if row.strip():
                            _check_document(path, row, f"row {number}")
                            documents.append(row.strip())
        except (pyarrow.ArrowException, OSError, ValueError, TypeError, IndexError) as error:
            raise GPTQError(f'{path}: column "text" cannot be read ({inputs.reason(error)})') from None
    return documents


def read_documents(path: Union[str, os.PathLike], progress: Optional[TextIO] = None) -> Tuple[List[str], str]:
    """The documents of the corpus ``path`` in the format :func:`text_format`
    gives, and what a document is called in it ("paragraphs", "records",
    "rows"); GPTQError naming the file and the field or line when malformed,
    too large or not text (see the module's description)."""
    kind = text_format(path)
    if kind == "parquet":
        documents = _parquet_rows(path)
    elif kind == "jsonl":
        documents = _json_lines(path)
    else:
        documents = split_paragraphs(read_text(path, progress))
        for number, document in enumerate(documents, 1):
            _check_document(path, document, f"paragraph {number}")
    return documents, _UNITS[kind]


def select_fraction(paragraphs: List[str], start: float = 0.0, end: float = 1.0) -> List[str]:
    """Paragraphs ``[floor(n * start), floor(n * end))``.

    ``start=0.8`` selects the last fifth, ``end=0.8`` the first four fifths,
    so the two never overlap.
    """
    if not 0.0 <= start < end <= 1.0:
        raise GPTQError(f"fractions must satisfy 0 <= start < end <= 1, got {start} and {end}")
    count = len(paragraphs)
    return paragraphs[int(count * start) : int(count * end)]


def tokenize_paragraphs(
    tokenizer: TextTokenizer, paragraphs: List[str], progress: Optional[TextIO] = None, name: str = "text"
) -> np.ndarray:
    """One int32 stream: for each paragraph (document), its tokens, with BOS
    before and EOS after them as the tokenizer says (llama2.c's: BOS only).
    Every few seconds a line on ``progress`` says how far it is."""
    stream = array.array("i")
    report = _Progress(progress)
    total = sum(len(paragraph) for paragraph in paragraphs)
    done = 0
    for number, paragraph in enumerate(paragraphs, 1):
        stream.extend(tokenizer.encode(paragraph, bos=tokenizer.add_bos, eos=tokenizer.add_eos))
        done += len(paragraph)
        report(lambda: f"tokenizing {name}: {number} of {len(paragraphs)} documents, {100 * done // total}% "
                       f"of the characters, {len(stream)} tokens")
    return np.frombuffer(stream, dtype=np.int32).copy() if stream else np.zeros(0, np.int32)


def load_corpus(
    tokenizer: TextTokenizer,
    path: Union[str, os.PathLike],
    start_fraction: float = 0.0,
    end_fraction: float = 1.0,
    progress: Optional[TextIO] = None,
) -> np.ndarray:
    """Tokenize the selected documents of the corpus ``path`` (plain text,
    JSON lines or parquet, see :func:`read_documents`), with a line of
    progress on ``progress`` every few seconds.

    Raises GPTQError when the selection holds no text.
    """
    documents, unit = read_documents(path, progress)
    selected = select_fraction(documents, start_fraction, end_fraction)
    if not selected:
        raise GPTQError(
            f"{path}: no text in the selected range "
            f"[{start_fraction}, {end_fraction}) of its {unit}"
        )
    return tokenize_paragraphs(tokenizer, selected, progress, str(path))


def consecutive_windows(stream: np.ndarray, length: int) -> np.ndarray:
    """Consecutive non-overlapping windows ``[count, length]``; the tail is dropped."""
    if length < 2:
        raise GPTQError(f"window length must be at least 2, got {length}")
    count = len(stream) // length
    if count == 0:
        raise GPTQError(f"the text has {len(stream)} tokens, fewer than one window of {length}")
    return stream[: count * length].reshape(count, length)


def calibration_windows(stream: np.ndarray, samples: int, length: int, seed: int) -> np.ndarray:
    """``samples`` random windows of ``length`` tokens, ``[samples, length]`` int32.

    Window starts are drawn uniformly (with replacement) from every offset
    where a whole window fits, by ``numpy.random.default_rng(seed)``, so the
    same seed gives the same windows.
    """
    if samples <= 0 or length <= 0:
        raise GPTQError(f"samples and length must be positive, got {samples} and {length}")
    if len(stream) < length:
        raise GPTQError(f"the text has {len(stream)} tokens, fewer than one window of {length}")
    starts = np.random.default_rng(seed).integers(0, len(stream) - length + 1, size=samples)
    return np.stack([stream[s : s + length] for s in starts]).astype(np.int32)
