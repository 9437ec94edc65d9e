"""torch-mlir's ONNX importer and pipelines, run in a Python process of their own.

torch-mlir's wheel links LLVM 24 into its Python extension, and its symbols
bind to an LLVM already in the process: once this package's native library
(LLVM 22, ``gptq_mlir.runtime.native``) has run in a process, importing torch-mlir
there aborts it ("CommandLine Error: Option 'print-inst-addrs' registered
more than once!"). :func:`lower` therefore runs torch-mlir in a child
Python, which also keeps the caller's process free of it.

    python -m gptq_mlir.importers.torch_mlir_lowering model.onnx model.mlir [NAME ATTRIBUTE]...

lowers an ONNX model (with shape information: ONNX shape inference with data
propagation) to linalg on tensors, sets each module attribute NAME to the
attribute ATTRIBUTE (MLIR syntax), and writes the module with its
locations (torch-mlir names each op after its ONNX node).
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

from ..errors import GPTQError


def lower(model_proto: bytes, attributes: Optional[Dict[str, str]] = None) -> str:
    """The linalg-on-tensors module of the serialized ONNX ``model_proto``,
    as text with locations, with ``attributes`` set on the module."""
    with tempfile.TemporaryDirectory(prefix="gptq-torch-mlir-") as folder:
        onnx_path = Path(folder) / "model.onnx"
        out_path = Path(folder) / "model.mlir"
        onnx_path.write_bytes(model_proto)
        command = [sys.executable, "-m", "gptq_mlir.importers.torch_mlir_lowering", str(onnx_path), str(out_path)]
        for name, value in (attributes or {}).items():
            command += [name, value]
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        if result.returncode != 0:
            lines = [line for line in result.stderr.splitlines() if line.strip()]
            said = lines[-1] if lines else f"exit status {result.returncode}"
            raise GPTQError(f"torch-mlir failed: {said}")
        return out_path.read_text()


def _lower_here(onnx_path: str, out_path: str, attributes: List[str]) -> None:
    import onnx
    from torch_mlir import ir
    from torch_mlir.compiler_utils import run_pipeline_with_repro_report
    from torch_mlir.dialects import torch as torch_dialect
    from torch_mlir.extras import onnx_importer

    proto = onnx.load(onnx_path)
    context = ir.Context()
    torch_dialect.register_dialect(context)
    info = onnx_importer.ModelInfo(proto)
    module = info.create_module(context=context).operation
    onnx_importer.NodeImporter.define_function(info.main_graph, module).import_all()
    run_pipeline_with_repro_report(module, "builtin.module(torch-onnx-to-torch-backend-pipeline)", "ONNX to torch")
    run_pipeline_with_repro_report(
        module, "builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline)", "torch to linalg-on-tensors"
    )
    with context:
        for name, value in zip(attributes[::2], attributes[1::2]):
            module.attributes[name] = ir.Attribute.parse(value)
    Path(out_path).write_text(module.get_asm(large_elements_limit=None, enable_debug_info=True))


def _main(argv: List[str]) -> int:
    if len(argv) < 2 or len(argv) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        _lower_here(argv[0], argv[1], argv[2:])
    except Exception as error:  # torch-mlir raises its own TorchMlirCompilerError
        message = " ".join(str(error).split())
        print(f"{type(error).__name__}: {message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
