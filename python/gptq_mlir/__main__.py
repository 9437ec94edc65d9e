"""Entry point of ``python -m gptq_mlir``."""

import sys

from .console import main

sys.exit(main())
