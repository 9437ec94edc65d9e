"""The llama2.c tokenizer (``tokenizer.bin`` / ``tok512.bin`` format).

File format: int32 ``max_token_length``, then for each token a float32 merge
score, an int32 byte length and the token's raw bytes. Id 0 is ``<unk>``, 1 is
BOS, 2 is EOS and ids 3..258 are the byte tokens ``<0x00>``..``<0xFF>``.

Encoding and decoding follow llama2.c's ``run.c`` (``encode``/``decode``).

:func:`open_tokenizer` is what the commands call: it reads either this kind
or a Hugging Face tokenizer (:mod:`gptq_mlir.data.hf_tokenizer`), both with the
interface :class:`TextTokenizer` describes.
"""

import heapq
import os
import re
import struct
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Protocol, Sequence, Tuple, Union

from ..errors import GPTQError
from ..files.inputs import open_regular, read_and_parse

UNK, BOS, EOS = 0, 1, 2
BYTE_OFFSET = 3
#: The longest token a tokenizer file may declare (``max_token_length``).
MAX_TOKEN_LENGTH = 1024
#: The most tokens a vocabulary may have (llama2.c's are 512 to 32,000;
#: Llama 3's has 128,256), which bounds what a file can make us allocate.
MAX_TOKENS = 1 << 20
_BYTE_TOKEN = re.compile(rb"<0x([0-9A-Fa-f]{2})>")


class TextTokenizer(Protocol):
    """What the commands use of a tokenizer, llama2.c's or Hugging Face's."""

    #: The file it was read from.
    path: Union[str, os.PathLike, None]
    #: Number of token ids.
    vocab_size: int
    #: The token a document starts with, None when there is none.
    bos_id: Optional[int]
    #: The tokens that end a document (the first is the one appended).
    eos_ids: Tuple[int, ...]
    #: Whether a document starts with BOS and ends with EOS.
    add_bos: bool
    add_eos: bool
    #: The tokens generation stops at.
    stop_ids: Tuple[int, ...]

    def encode(self, text: str, bos: bool = True, eos: bool = False) -> List[int]:
        """Token ids of ``text``, with BOS before them when ``bos`` and EOS after them when ``eos``."""

    def decode(self, tokens: Iterable[int]) -> str:
        """Text of a token sequence, without BOS and EOS."""

    def check_vocabulary(self, model_vocab_size: int, model: Union[str, os.PathLike]) -> None:
        """GPTQError when a model with this vocabulary size cannot take its tokens."""


class Tokenizer:
    """Sentencepiece-style BPE over a llama2.c vocabulary."""

    bos_id = BOS
    eos_ids = (EOS,)
    add_bos = True
    add_eos = False
    #: llama2.c ends a story at BOS or EOS.
    stop_ids = (BOS, EOS)

    def __init__(self, pieces: Sequence[bytes], scores: Sequence[float], max_token_length: int):
        if len(pieces) != len(scores):
            raise GPTQError("tokenizer: as many scores as pieces are needed")
        if len(pieces) < BYTE_OFFSET + 256:
            raise GPTQError(
                f"tokenizer: {len(pieces)} tokens, expected at least {BYTE_OFFSET + 256} "
                "(<unk>, BOS, EOS and 256 byte tokens)"
            )
        self.pieces = list(pieces)
        self.scores = list(scores)
        self.max_token_length = max_token_length
        self.path: Union[str, os.PathLike, None] = None
        self._ids: Dict[bytes, int] = {}
        for index, piece in enumerate(self.pieces):
            self._ids.setdefault(piece, index)

    @property
    def vocab_size(self) -> int:
        """Number of tokens."""
        return len(self.pieces)

    def check_vocabulary(self, model_vocab_size: int, model: Union[str, os.PathLike]) -> None:
        """GPTQError unless the model has exactly one row per token (as every
        llama2.c model has for its tokenizer)."""
        if model_vocab_size != self.vocab_size:
            raise GPTQError(
                f"tokenizer {self.path} has {self.vocab_size} tokens but model "
                f"{model} has a vocabulary of {model_vocab_size}"
            )

    def token_id(self, piece: bytes) -> int:
        """The id of ``piece``, or -1 when it is not in the vocabulary."""
        return self._ids.get(piece, -1)

    def encode(self, text: str, bos: bool = True, eos: bool = False) -> List[int]:
        """Token ids of ``text`` as llama2.c's ``encode`` computes them.

        BOS, then (for non-empty text) the dummy-prefix token for " ", then
        one token per UTF-8 character or, when the character is not in the
        vocabulary, one byte token (byte + 3) per byte; then adjacent pairs
        are merged, always the pair whose concatenation is the token with the
        highest score (the leftmost on ties), until no pair merges.
        """
        tokens: List[int] = [BOS] if bos else []
        if text:
            prefix = self.token_id(b" ")
            if prefix < 0:
                raise GPTQError('tokenizer: the vocabulary has no token for " "')
            tokens.append(prefix)
            for char in text:
                encoded = char.encode("utf-8", errors="surrogatepass")
                token = self.token_id(encoded)
                if token >= 0:
                    tokens.append(token)
                else:
                    tokens.extend(byte + BYTE_OFFSET for byte in encoded)
        start = 1 if bos else 0
        tokens[start:] = self._merge(tokens[start:])
        if eos:
            tokens.append(EOS)
        return tokens

    def _merge(self, symbols: List[int]) -> List[int]:
        """Apply greedy pair merges to ``symbols`` in llama2.c's order.

        llama2.c rescans every adjacent pair after each merge; a heap of
        candidate pairs keyed by (-score, position) picks the same pair (the
        highest score, the leftmost on ties) in O(n log n). Entries made stale
        by an earlier merge are recognised and skipped when popped.
        """
        count = len(symbols)
        following = list(range(1, count)) + [-1]
        preceding = list(range(-1, count - 1))
        alive = [True] * count
        heap: List[tuple] = []

        def push(left: int) -> None:
            right = following[left]
            if right < 0:
                return
            merged = self.token_id(self.pieces[symbols[left]] + self.pieces[symbols[right]])
            if merged >= 0:
                entry = (-self.scores[merged], left, right, symbols[left], symbols[right], merged)
                heapq.heappush(heap, entry)

        for index in range(count - 1):
            push(index)
        while heap:
            _, left, right, left_symbol, right_symbol, merged = heapq.heappop(heap)
            if (
                not alive[left]
                or not alive[right]
                or following[left] != right
                or symbols[left] != left_symbol
                or symbols[right] != right_symbol
            ):
                continue
            symbols[left] = merged
            alive[right] = False
            following[left] = following[right]
            if following[right] >= 0:
                preceding[following[right]] = left
            if preceding[left] >= 0:
                push(preceding[left])
            push(left)
        return [symbol for symbol, live in zip(symbols, alive) if live]

    def piece_bytes(self, token: int, previous: int) -> bytes:
        """The bytes token ``token`` stands for, as llama2.c's ``decode``.

        After BOS a leading space is stripped (sentencepiece's dummy prefix),
        and byte tokens ``<0xNN>`` stand for the raw byte.
        """
        if not 0 <= token < len(self.pieces):
            raise GPTQError(f"token id {token} is outside the vocabulary of {len(self.pieces)}")
        piece = self.pieces[token]
        if previous == BOS and piece.startswith(b" "):
            piece = piece[1:]
        match = _BYTE_TOKEN.fullmatch(piece)
        if match:
            return bytes([int(match.group(1), 16)])
        return piece

    def decode(self, tokens: Iterable[int]) -> str:
        """Text of a token sequence; BOS and EOS print as nothing."""
        out = bytearray()
        previous = -1
        for token in tokens:
            if token not in (BOS, EOS):
                out += self.piece_bytes(token, previous)
            previous = token
        return out.decode("utf-8", errors="replace")


def _check_header(head: bytes, size: Optional[int]) -> int:
    """The largest size a tokenizer file can have, from its first 4 bytes
    (``max_token_length``, checked): :data:`MAX_TOKENS` tokens of that
    length. Raises GPTQError when ``size`` (None when unknown) is larger."""
    if len(head) < 4:
        raise GPTQError("not a llama2.c tokenizer: shorter than its 4-byte header")
    (max_length,) = struct.unpack_from("<i", head, 0)
    if not 0 < max_length <= MAX_TOKEN_LENGTH:
        raise GPTQError(
            f"not a llama2.c tokenizer: max_token_length is {max_length}, "
            f"expected 1..{MAX_TOKEN_LENGTH}"
        )
    largest = 4 + MAX_TOKENS * (8 + max_length)
    if size is not None and size > largest:
        raise GPTQError(
            f"not a llama2.c tokenizer: {size} bytes, more than {largest} "
            f"({MAX_TOKENS} tokens of at most {max_length} bytes)"
        )
    return largest


def parse_tokenizer(data: bytes) -> Tokenizer:
    """Parse a tokenizer file's bytes; raise GPTQError if they are malformed."""
    _check_header(data[:4], len(data))
    (max_length,) = struct.unpack_from("<i", data, 0)
    offset, pieces, scores = 4, [], []
    while offset < len(data):
        if len(pieces) == MAX_TOKENS:
            raise GPTQError(f"not a llama2.c tokenizer: more than {MAX_TOKENS} tokens")
        if offset + 8 > len(data):
            raise GPTQError(f"truncated tokenizer: token {len(pieces)} header ends past the file")
        score, length = struct.unpack_from("<fi", data, offset)
        offset += 8
        if not 0 <= length <= max_length or offset + length > len(data):
            raise GPTQError(
                f"not a llama2.c tokenizer: token {len(pieces)} has length {length} "
                f"(max_token_length {max_length}, {len(data) - offset} bytes left)"
            )
        pieces.append(data[offset : offset + length])
        scores.append(score)
        offset += length
    for byte in range(256):
        if pieces[BYTE_OFFSET + byte : BYTE_OFFSET + byte + 1] != [b"<0x%02X>" % byte]:
            raise GPTQError(
                f"not a llama2.c tokenizer: token {BYTE_OFFSET + byte} should be <0x{byte:02X}>"
            )
    return Tokenizer(pieces, scores, max_length)


def load_tokenizer(path: Union[str, os.PathLike]) -> Tokenizer:
    """Read the tokenizer file at ``path``."""
    tokenizer = read_and_parse(path, "tokenizer", parse_tokenizer, header=(4, _check_header))
    tokenizer.path = path
    return tokenizer


def is_hugging_face(path: Union[str, os.PathLike]) -> bool:
    """Whether ``path`` names a Hugging Face tokenizer: a folder, a file
    named ``*.json``, or a regular file whose first byte after whitespace is
    ``{`` and whose first 4 bytes are no llama2.c header (an int32
    ``max_token_length`` of 1 to :data:`MAX_TOKEN_LENGTH`). Anything else
    is read as a llama2.c tokenizer."""
    if os.path.isdir(path) or Path(path).suffix.lower() == ".json":
        return True
    try:
        with open_regular(path, "tokenizer") as handle:
            head = handle.read(64)
    except (OSError, GPTQError):
        return False
    if len(head) >= 4 and 0 < struct.unpack_from("<i", head, 0)[0] <= MAX_TOKEN_LENGTH:
        return False
    return head.lstrip(b" \t\r\n").startswith(b"{")


def open_tokenizer(path: Union[str, os.PathLike]) -> TextTokenizer:
    """The tokenizer at ``path``, of the kind :func:`is_hugging_face` says."""
    if is_hugging_face(path):
        from . import hf_tokenizer

        return hf_tokenizer.load_hf_tokenizer(path)
    return load_tokenizer(path)


def tokenizer_files(path: Union[str, os.PathLike]) -> List[Path]:
    """The files the tokenizer at ``path`` may be read from (the inputs of a command)."""
    if is_hugging_face(path):
        from . import hf_tokenizer

        return hf_tokenizer.input_files(path)
    return [Path(path)]
