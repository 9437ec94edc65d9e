"""Writes a module's 2-D weights in a 16-bit float type (tests only).

Usage: narrow_weights.py IN.mlir DTYPE NARROW.mlir WIDE.mlir, DTYPE bf16 or
f16. Every 2-D f32 dense_resource constant of IN.mlir is rounded to DTYPE
(to nearest, ties to even). NARROW.mlir holds it in DTYPE, widened by an
arith.extf that carries the constant's location, as import-hf writes a
checkpoint's bfloat16 weights; WIDE.mlir holds the same values as f32, as
the module was before. The two compute the same numbers.
"""
import re
import sys

import numpy as np

source, dtype, narrow_path, wide_path = sys.argv[1:]
text = open(source).read()
body, resources = text.split("{-#", 1)
blobs = dict(re.findall(r'^\s+([\w.]+): "0x([0-9a-fA-F]+)"', resources, re.M))
CONSTANT = re.compile(
    r'^(\s*)(%[\w.]+) = arith\.constant dense_resource<([\w.]+)> : tensor<(\d+)x(\d+)xf32>( loc\("[^"]*"\))?$', re.M)


def rounded(values: np.ndarray) -> np.ndarray:
    """The values rounded to DTYPE, as DTYPE's bits (uint16)."""
    if dtype == "f16":
        return values.astype(np.float16).view(np.uint16)
    bits = values.view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def widened(bits: np.ndarray) -> np.ndarray:
    if dtype == "f16":
        return bits.view(np.float16).astype(np.float32)
    return (bits.astype(np.uint32) << 16).view(np.float32)


narrow, wide = dict(blobs), dict(blobs)
for _, _, name, _, _, _ in CONSTANT.findall(body):
    values = np.frombuffer(bytes.fromhex(blobs[name])[4:], dtype="<f4")
    bits = rounded(values)
    narrow[name] = "02000000" + bits.tobytes().hex()
    wide[name] = "04000000" + widened(bits).astype("<f4").tobytes().hex()


def widen_line(match: "re.Match") -> str:
    indent, ssa, name, rows, cols, loc = match.groups()
    loc = loc or ""
    return (f"{indent}{ssa}_{dtype} = arith.constant dense_resource<{name}> : tensor<{rows}x{cols}x{dtype}>{loc}\n"
            f"{indent}{ssa} = arith.extf {ssa}_{dtype} : tensor<{rows}x{cols}x{dtype}> to tensor<{rows}x{cols}xf32>{loc}")


def write(path: str, module_body: str, values: dict) -> None:
    with open(path, "w") as out:
        out.write(module_body + "{-#\n  dialect_resources: {\n    builtin: {\n")
        out.write(",\n".join(f'      {k}: "0x{v}"' for k, v in values.items()))
        out.write("\n    }\n  }\n#-}\n")


write(narrow_path, CONSTANT.sub(widen_line, body), narrow)
write(wide_path, body, wide)
