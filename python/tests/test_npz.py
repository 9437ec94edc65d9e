"""NumPy reads the .npz archives the C++ writer makes (include/gptq/Support/Npz.h).

unittests/NpzTest.cpp checks that the writer produces exactly the bytes of
these fixtures; here numpy.load and Python's zipfile read them back.
"""

import zipfile

import numpy as np
import pytest

from conftest import REPO_ROOT

INPUTS = REPO_ROOT / "unittests" / "Inputs" / "npz"

EXPECTED = {
    "layers.0.attention.wq": np.arange(6, dtype=np.float32).reshape(2, 3) / 4,
    "counts": np.array([1, -2, 3, 1 << 40], dtype=np.int64),
    "scalar": np.float64(2.5),
    "empty": np.zeros((0, 3), dtype=np.float32),
    "caf\u00e9": np.array([7, 255], dtype=np.uint8),
}


@pytest.mark.parametrize("name", ["written.npz", "written_zip64.npz"])
def test_numpy_reads_what_we_write(name):
    path = INPUTS / name
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None
    with np.load(path) as loaded:
        assert loaded.files == list(EXPECTED)
        for key, value in EXPECTED.items():
            assert loaded[key].dtype == value.dtype, key
            assert loaded[key].shape == value.shape, key
            np.testing.assert_array_equal(loaded[key], value)


def test_zip64_fixture_has_zip64_records():
    data = (INPUTS / "written_zip64.npz").read_bytes()
    assert b"PK\x06\x06" in data and b"PK\x06\x07" in data
    with zipfile.ZipFile(INPUTS / "written_zip64.npz") as archive:
        assert all(info.extra[:2] == b"\x01\x00" for info in archive.infolist())
