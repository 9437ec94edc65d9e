"""Entry point of ``python -m gptq_mlir``."""

import sys

from .cli.console import main

sys.exit(main())
