"""Models called in-process through libGPTQCAPI.so (gptq_mlir.runtime.native).

The same results as gptq-run's, bit for bit; one compilation per module
and process, a new one when the file changes; every bad input a GPTQError
naming it, the process alive after it.
"""

import gc
import json
import os
import re
import subprocess
import sys
import weakref
from pathlib import Path

import numpy as np
import pytest

from conftest import synthetic_checkpoint
from gptq_mlir.errors import GPTQError
from gptq_mlir.importers import emitter
from gptq_mlir.runtime import native


@pytest.fixture()
def tiny(tmp_path):
    path = tmp_path / "tiny.mlir"
    emitter.write_module(synthetic_checkpoint(seed=3), path)
    return path


def test_results_are_gptq_runs_bit_for_bit(gptq_run, tiny, tmp_path):
    tokens = np.random.default_rng(0).integers(0, 37, size=(3, 12)).astype(np.int32)
    (ours,) = native.open_module(tiny).call("forward", [tokens])
    np.save(tmp_path / "tokens.npy", tokens)
    subprocess.run(
        [str(gptq_run), str(tiny), "--entry", "forward", "--input", str(tmp_path / "tokens.npy"),
         "--output-dir", str(tmp_path / "out")],
        check=True,
    )
    theirs = np.load(tmp_path / "out" / "0.npy")
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape == (3, 12, 37)
    assert ours.tobytes() == theirs.tobytes()


def test_one_compilation_per_module_and_file(gptq_run, tiny):
    module = native.open_module(tiny)
    assert native.open_module(str(tiny)) is module
    first = module.compile("forward")
    assert module.compile("forward") == first  # kept, not compiled again
    tokens = np.zeros((1, 4), np.int32)
    (before,) = module.call("forward", [tokens])
    # A new file at the same path (other weights) is opened afresh.
    emitter.write_module(synthetic_checkpoint(seed=4), tiny)
    reopened = native.open_module(tiny)
    assert reopened is not module
    (after,) = reopened.call("forward", [tokens])
    assert not np.array_equal(before, after)


def test_results_own_their_memory(gptq_run, tiny):
    """A result stays valid after the module goes, and its memory is freed
    with the last array that views it."""
    module = native.NativeModule(tiny)
    (logits,) = module.call("forward", [np.ones((2, 5), np.int32)])
    memory = logits
    while not hasattr(memory, "_owner"):
        memory = memory.base
    owner = weakref.ref(memory._owner)
    del memory
    expected = logits.copy()
    module.close()
    del module
    gc.collect()
    assert np.array_equal(logits, expected)
    view = logits[1]
    del logits
    gc.collect()
    assert owner() is not None  # the view keeps it
    del view
    gc.collect()
    assert owner() is None


@pytest.mark.parametrize(
    "arguments, message",
    [
        ([np.zeros((1, 4), np.int64)], r"@forward: argument #0: expected int32 \[\?, \?\], found int64 \[1, 4\]"),
        ([np.zeros(4, np.int32)], r"@forward: argument #0: expected int32 \[\?, \?\], found int32 \[4\]"),
        ([], r"@forward: 'forward' takes 1 argument\(s\), 0 given"),
        ([np.array([["a"]])], r"@forward: argument 0: unsupported dtype <U1"),
        ([np.full((1, 4), 37, np.int32)], r"tiny.mlir:\d+:\d+: forward: token id out of range \[0, vocab_size = 37\)"),
        ([np.zeros((1, 13), np.int32)], r"forward: sequence longer than the model's seq_len = 12"),
    ],
)
def test_bad_arguments_are_errors(gptq_run, tiny, arguments, message):
    module = native.open_module(tiny)
    with pytest.raises(GPTQError, match=message):
        module.call("forward", arguments)
    # The module is still usable.
    (logits,) = module.call("forward", [np.zeros((1, 2), np.int32)])
    assert logits.shape == (1, 2, 37)


def test_bad_modules_and_entries_are_errors(gptq_run, tiny, tmp_path):
    with pytest.raises(GPTQError, match=r"no function 'main' in the module \(functions: forward, prefill, decode\)"):
        native.open_module(tiny).call("main", [])
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f( {\n")
    with pytest.raises(GPTQError, match=r"bad.mlir:1:\d+: error: "):
        native.NativeModule(bad)
    with pytest.raises(GPTQError, match=r"cannot read .*missing.mlir"):
        native.open_module(tmp_path / "missing.mlir")
    module = native.NativeModule(tiny)
    module.close()
    with pytest.raises(GPTQError, match=r"tiny.mlir: the module was closed"):
        module.call("forward", [np.zeros((1, 2), np.int32)])


def test_verified_as_gptq_opt_verifies(gptq_run, tmp_path):
    """The library checks a module as gptq-opt does: a verifier that reads
    a constant operand (arith.constant is ConstantLike only where the
    library shares MLIR's TypeIDs; with private copies this module was
    accepted and compiled)."""
    bad = tmp_path / "columns.mlir"
    bad.write_text(
        "func.func @f() -> tensor<32xi32> {\n"
        "  %c = arith.constant 64 : index\n"
        "  %g = gptq.group_index %c {config = #gptq.config<group_size = 8>} : tensor<32xi32>\n"
        "  return %g : tensor<32xi32>\n"
        "}\n"
    )
    with pytest.raises(GPTQError, match=r"columns.mlir:3:8: error: 'gptq.group_index' op expected g_idx length "
                       r"\(columns\) to be 64, found 32"):
        native.NativeModule(bad)


_HUGE_MODULE = """module attributes {gptq.parameters = "w.safetensors"} {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %w = arith.constant dense_resource<w> : tensor<1048576xf32>
    %s = tensor.extract_slice %w[1000] [4] [1] : tensor<1048576xf32> to tensor<4xf32>
    %e = tensor.empty() : tensor<4xf32>
    %r = linalg.add ins(%x, %s : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
    return %r : tensor<4xf32>
  }
  func.func @row(%i: index) -> f32 {
    %t = arith.constant dense_resource<t> : tensor<1048576xf32>
    %v = tensor.extract %t[%i] : tensor<1048576xf32>
    return %v : f32
  }
}
"""


def test_parameter_archives_are_mapped_with_huge_pages(gptq_run, tmp_path):
    """The weights' file mapping asks for 2 MiB pages (VmFlags ``hg``): a
    decode step reads every weight, and 4 KiB pages cost it about 10%. A
    table read only an element at a time (an embedding, gathered a token at
    a time) keeps 4 KiB pages (``nh``): in 2 MiB ones each row read brings
    2 MiB into memory."""
    if not Path("/sys/kernel/mm/transparent_hugepage/enabled").exists():
        pytest.skip("the kernel has no transparent huge pages")
    n = 1 << 20
    header = json.dumps(
        {
            "w": {"dtype": "F32", "shape": [n], "data_offsets": [0, 4 * n]},
            "t": {"dtype": "F32", "shape": [n], "data_offsets": [4 * n, 8 * n]},
        }
    ).encode()
    header += b" " * (-len(header) % 8)
    archive = tmp_path / "w.safetensors"
    values = np.arange(2 * n, dtype=np.float32)
    archive.write_bytes(len(header).to_bytes(8, "little") + header + values.tobytes())
    (tmp_path / "huge.mlir").write_text(_HUGE_MODULE)
    module = native.NativeModule(tmp_path / "huge.mlir")
    (out,) = module.call("f", [np.ones(4, np.float32)])
    np.testing.assert_array_equal(out, [1001, 1002, 1003, 1004])
    flags = []
    with open("/proc/self/smaps") as smaps:
        mapping = False
        for line in smaps:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                mapping = line.rstrip().endswith(str(archive))
            elif mapping and line.startswith("VmFlags:"):
                flags.append(line.split()[1:])
    module.close()
    assert flags, f"{archive} is not mapped"
    assert any("hg" in f for f in flags), flags
    assert any("nh" in f for f in flags), flags


_BESIDE_LIBGOMP = """
import ctypes, sys
import numpy as np
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
from gptq_mlir.runtime import native
module = native.open_module(sys.argv[2])
tokens = np.load(sys.argv[3])
for i in range(4):
    (logits,) = module.call("forward", [tokens])
    np.save(f"{sys.argv[4]}/{i}.npy", logits)
"""


def test_results_beside_another_openmp_runtime(gptq_run, stories_mlir, tmp_path):
    """A process that loaded GNU's OpenMP runtime first (as PyTorch does)
    gets the same results: compiled code asks libomp, not whichever
    runtime's omp_get_thread_num the loader binds first, for its share of
    each parallel loop (every thread took every iteration, and in-place
    updates ran twice)."""
    import ctypes.util

    libgomp = ctypes.util.find_library("gomp")
    if libgomp is None:
        pytest.skip("libgomp is not installed")
    tokens = np.random.default_rng(5).integers(0, 512, size=(4, 64)).astype(np.int32)
    np.save(tmp_path / "tokens.npy", tokens)
    (tmp_path / "out").mkdir()
    subprocess.run([sys.executable, "-c", _BESIDE_LIBGOMP, libgomp, str(stories_mlir),
                    str(tmp_path / "tokens.npy"), str(tmp_path / "out")],
                   check=True, env={**os.environ, "OMP_NUM_THREADS": "2",
                                    "PYTHONPATH": str(Path(native.__file__).parents[2])})
    subprocess.run(
        [str(gptq_run), str(stories_mlir), "--entry", "forward", "--input", str(tmp_path / "tokens.npy"),
         "--output-dir", str(tmp_path / "ref")],
        check=True,
    )
    want = np.load(tmp_path / "ref" / "0.npy")
    for i in range(4):
        assert np.load(tmp_path / "out" / f"{i}.npy").tobytes() == want.tobytes(), i
