"""Cuts a module file at many points and runs every tool on each cut: each
run must end with exit status 1 and an error message, never a signal.

  truncate_module.py MODULE WORK_DIR BIN_DIR POINTS

The cuts are POINTS offsets spread over the file, most of them inside the
weights' hexadecimal strings, plus one inside the last of those strings.
"""

import os
import subprocess
import sys

import numpy as np


def main() -> int:
    module, work, bin_dir, points = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    data = open(module, "rb").read()
    os.makedirs(work, exist_ok=True)
    tokens = os.path.join(work, "tokens.npy")
    np.save(tokens, np.zeros((1, 4), np.int32))
    last = data.rfind(b'"0x') + 50
    cuts = sorted({int(len(data) * (i + 1) / (points + 1)) for i in range(points)} | {last})
    tool = lambda name: os.path.join(bin_dir, name)
    commands = {
        "gptq-opt": lambda cut: [tool("gptq-opt"), cut, "-o", os.path.join(work, "out.mlir")],
        "gptq-run --describe": lambda cut: [tool("gptq-run"), cut, "--describe"],
        "gptq-run": lambda cut: [tool("gptq-run"), cut, "--entry", "forward", "--input", tokens,
                                 "--output-dir", os.path.join(work, "out")],
        "gptq-compile": lambda cut: [tool("gptq-compile"), cut, "--entry", "forward", "-o",
                                     os.path.join(work, "exe")],
    }
    bad = 0
    cut_path = os.path.join(work, "cut.mlir")
    for offset in cuts:
        with open(cut_path, "wb") as f:
            f.write(data[:offset])
        for name, command in commands.items():
            proc = subprocess.run(command(cut_path), capture_output=True, timeout=300)
            err = proc.stderr.decode(errors="replace")
            if proc.returncode != 1 or "error" not in err or "Stack dump" in err:
                bad += 1
                print(f"{name} on the first {offset} bytes: exit {proc.returncode}: {err[-300:]!r}")
    left = [n for n in os.listdir(work) if n not in ("tokens.npy", "cut.mlir")]
    if left:
        print(f"outputs left: {left}")
        bad += 1
    print(f"{len(cuts)} cuts x {len(commands)} tools: {bad} bad")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
