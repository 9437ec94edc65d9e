"""The data kept in the repository is complete and intact, and nothing reads
data from a folder outside the checkout (a clone must work alone)."""

import hashlib
import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT

#: A path into the data folder that once sat beside the checkout
#: (../shared/data, "shared" / "golden", ...) or lit's former %shared.
OUTSIDE = re.compile(r"""shared["']?\s*[/,]\s*["']?(data|golden)\b|%shared\b""")
SUMS = [REPO_ROOT / "data" / "stories260K" / "SHA256SUMS", REPO_ROOT / "test" / "golden" / "SHA256SUMS"]


def _entries(sums: Path):
    for line in sums.read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        yield digest, sums.parent / name


@pytest.mark.parametrize("sums", SUMS, ids=lambda p: str(p.parent.relative_to(REPO_ROOT)))
def test_checksums(sums):
    entries = list(_entries(sums))
    assert entries, f"{sums} lists no files"
    for digest, path in entries:
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, f"{path} differs from {sums}"


def test_every_golden_case_is_listed():
    golden = REPO_ROOT / "test" / "golden"
    listed = {path for _, path in _entries(golden / "SHA256SUMS")}
    cases = sorted(p.parent for p in golden.glob("*/case.json"))
    assert len(cases) == 8
    for case in cases:
        for name in ("W.npy", "H.npy", "Q_ref.npy", "case.json"):
            assert case / name in listed, f"{case / name} is not in SHA256SUMS"


def test_no_path_outside_the_repository():
    """Scripts, tests, benchmarks and docs read data from the repository only."""
    tracked = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "ls-files", "scripts", "test", "python", "bench", "docs", "fuzz", ".ci", "README.md"],
        capture_output=True, text=True,
    )
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    offenders = []
    for name in tracked.stdout.split():
        path = REPO_ROOT / name
        if path.suffix in (".npy", ".bin") or not path.is_file() or path == Path(__file__).resolve():
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{name}:{number}: {line.strip()}")
    assert not offenders, "paths outside the repository:\n" + "\n".join(offenders)
