"""Compares the quantized layers (qweight, scales, zeros, g_idx resources)
of two rewritten modules: prints how many layers and whether all are equal."""
import re
import sys


def quantized(path):
    resources = open(path).read().split("{-#", 1)[1]
    blobs = dict(re.findall(r'^\s+([\w.]+): "0x([0-9a-fA-F]+)"', resources, re.M))
    return {k: v for k, v in blobs.items() if k.rsplit(".", 1)[-1] in ("qweight", "scales", "zeros", "g_idx")}


a, b = quantized(sys.argv[1]), quantized(sys.argv[2])
print(len(a) // 4, "layers, equal", a == b and len(a) > 0)
