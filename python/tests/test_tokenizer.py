"""The llama2.c tokenizer: known encodings, round trips, byte fallback, bad files."""

import struct

import pytest

from gptq_mlir.data.tokenizer import BOS, EOS, MAX_TOKENS, load_tokenizer, parse_tokenizer
from gptq_mlir.errors import GPTQError


@pytest.fixture(scope="module")
def tok(tokenizer_path):
    return load_tokenizer(tokenizer_path)


def test_vocabulary(tok):
    assert tok.vocab_size == 512
    assert tok.pieces[:3] == [b"<unk>", b"\n<s>\n", b"\n</s>\n"]
    assert tok.pieces[3 + 0x41] == b"<0x41>"


def test_known_encoding(tok):
    # Token ids as llama2.c's encode() gives them for the published sample's start.
    ids = tok.encode("Once upon a time, there was a little girl named Lily.")
    assert ids == [1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426]
    assert [tok.pieces[i] for i in ids[1:5]] == [b" Once", b" upon", b" a", b" time"]


def test_empty_text_has_no_dummy_prefix(tok):
    assert tok.encode("") == [BOS]
    assert tok.encode("", bos=False, eos=True) == [EOS]


def test_byte_fallback(tok):
    # The snowman is not in the vocabulary: its three UTF-8 bytes become byte tokens.
    ids = tok.encode("\u2603", bos=False)
    assert ids[1:] == [b + 3 for b in "\u2603".encode()]
    assert tok.decode([BOS] + ids) == "\u2603"


@pytest.mark.parametrize(
    "text",
    [
        "Once upon a time, there was a little girl named Lily.",
        "Tom said, \"Look!\"\nThe dog ran away.",
        "caf\u00e9 \u65e5\u672c \u2603 tabs\tand  double  spaces",
        "a",
    ],
)
def test_round_trip(tok, text):
    assert tok.decode(tok.encode(text)) == text


def test_merges_follow_llama2c_order(tok, text_path):
    """The heap-based merge equals llama2.c's rescan-every-pair loop."""

    def reference(text):
        ids = [tok.token_id(b" ")]
        for char in text:
            piece = tok.token_id(char.encode())
            ids += [piece] if piece >= 0 else [b + 3 for b in char.encode()]
        while True:
            best = (float("-inf"), -1, -1)
            for i in range(len(ids) - 1):
                merged = tok.token_id(tok.pieces[ids[i]] + tok.pieces[ids[i + 1]])
                if merged >= 0 and tok.scores[merged] > best[0]:
                    best = (tok.scores[merged], i, merged)
            if best[1] < 0:
                return [BOS] + ids
            ids[best[1] : best[1] + 2] = [best[2]]

    paragraphs = text_path.read_text().split("\n\n")[:12]
    for paragraph in paragraphs:
        assert tok.encode(paragraph) == reference(paragraph)


def test_decode_strips_space_after_bos_only(tok):
    once = tok.token_id(b" Once")
    assert tok.decode([BOS, once, once]) == "Once Once"


def test_rejects_other_files(checkpoint_path, tmp_path):
    with pytest.raises(GPTQError, match="not a llama2.c tokenizer"):
        load_tokenizer(checkpoint_path)
    with pytest.raises(GPTQError, match="shorter than its 4-byte header"):
        parse_tokenizer(b"\x07")
    with pytest.raises(GPTQError, match="cannot read tokenizer"):
        load_tokenizer(tmp_path / "missing.bin")


def test_rejects_truncated_file(tokenizer_path):
    data = tokenizer_path.read_bytes()
    with pytest.raises(GPTQError):
        parse_tokenizer(data[:-3])


def test_rejects_too_many_tokens(tokenizer_path):
    """A vocabulary is bounded (MAX_TOKENS), so a file cannot make the reader
    build millions of entries; the bound itself is accepted."""
    data = tokenizer_path.read_bytes()
    empty_token = struct.pack("<fi", 0.0, 0)
    at_bound = data + empty_token * (MAX_TOKENS - 512)
    assert parse_tokenizer(at_bound).vocab_size == MAX_TOKENS
    with pytest.raises(GPTQError, match=f"more than {MAX_TOKENS} tokens"):
        parse_tokenizer(at_bound + empty_token)


def test_oversized_file_is_refused_before_reading(tokenizer_path, tmp_path):
    path = tmp_path / "big.bin"
    with open(path, "wb") as handle:
        handle.write(tokenizer_path.read_bytes())
        handle.truncate(1 << 40)  # sparse: a terabyte on paper
    with pytest.raises(GPTQError, match=r"big.bin: not a llama2.c tokenizer: 1099511627776 bytes, more than"):
        load_tokenizer(path)
