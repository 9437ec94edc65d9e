"""Prints the nested `module @stage_...` blocks of printed MLIR files and
whether the files hold the same ones: gptq-outline-calibration-stages
appends them to the module it runs on, gptq-quantize-model's dump-stages=
writes them into a module of their own, and both print them alike.

    python stage_modules.py A.mlir B.mlir
"""

import sys


def stage_modules(path):
    """The lines of each top-level nested module named stage_*."""
    lines, inside = [], False
    for line in open(path).read().splitlines():
        if line.startswith("  module @stage_"):
            inside = True
        if inside:
            lines.append(line)
            if line == "  }":
                inside = False
    return lines


def main(paths):
    found = [stage_modules(p) for p in paths]
    names = [line.split()[1] for line in found[0] if line.startswith("  module @stage_")]
    print(len(names), "stage modules:", " ".join(names))
    print("identical" if all(f == found[0] for f in found) else "different")


if __name__ == "__main__":
    main(sys.argv[1:])
