"""Writes a .npy file with any header: crafted_npy.py OUT DESCR SHAPE NBYTES.

The header says dtype DESCR (e.g. '<f4') and shape SHAPE (e.g. '(2, 3)'),
whatever the NBYTES zero bytes of data that follow; the tests use it for
headers NumPy itself would never write.
"""
import struct
import sys

out, descr, shape, nbytes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(out, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
    f.write(header.encode() + bytes(nbytes))
