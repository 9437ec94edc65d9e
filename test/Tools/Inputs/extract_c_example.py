"""Writes the first ```c block of a Markdown file to OUT, with the model
path /tmp/stories260K.mlir replaced by MODEL: the example of
docs/c-api.md, as a program the tests build and run."""

import re
import sys

markdown, out, model = sys.argv[1:4]
text = open(markdown, encoding="utf-8").read()
block = re.search(r"```c\n(.*?)```", text, re.DOTALL)
if block is None:
    sys.exit(f"{markdown}: no ```c block")
with open(out, "w", encoding="utf-8") as handle:
    handle.write(block.group(1).replace("/tmp/stories260K.mlir", model))
