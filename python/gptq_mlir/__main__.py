"""Entry point of ``python -m gptq_mlir``."""

import sys

from .cli import main

sys.exit(main())
