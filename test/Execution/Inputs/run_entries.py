"""Calls entries of a module on the cases check_contractions.py makes, in one
process through the C interface (gptq_mlir.runtime.native): each entry is compiled
once and called on every case, where a gptq-run per case started a process
and looked its code up in the cache each time. The compiled code is the
JIT's, as gptq-run's is (test_native.py checks the two agree bit for bit).

Usage: run_entries.py MODULE ENTRY:CASE_DIR [ENTRY:CASE_DIR ...]

For each pair, ENTRY is called on CASE_DIR/in0.npy, in1.npy, ... and its
results are written to CASE_DIR/out/0.npy, 1.npy, ..., as gptq-run
--input ... --output-dir CASE_DIR/out writes them. Exits non-zero, naming
the case, on the first error.
"""

import os
import sys

import numpy as np

from gptq_mlir.errors import GPTQError
from gptq_mlir.runtime import native


def inputs_of(case: str):
    arrays = []
    while os.path.exists(os.path.join(case, f"in{len(arrays)}.npy")):
        arrays.append(np.load(os.path.join(case, f"in{len(arrays)}.npy")))
    return arrays


def main() -> int:
    module = native.NativeModule(sys.argv[1])
    for pair in sys.argv[2:]:
        entry, case = pair.split(":", 1)
        try:
            results = module.call(entry, inputs_of(case))
        except GPTQError as error:
            print(f"run_entries.py: {case}: {error}", file=sys.stderr)
            return 1
        out = os.path.join(case, "out")
        os.makedirs(out, exist_ok=True)
        for i, result in enumerate(results):
            np.save(os.path.join(out, f"{i}.npy"), result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
