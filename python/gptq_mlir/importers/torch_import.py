"""The torch-mlir path: PyTorch module -> ONNX -> torch-mlir -> linalg on tensors.

torch-mlir's PyPI wheel (20261001) imports PyTorch programs only through
``torch.export`` (torch >= 2.3) or through ONNX. This project's environment
has torch 1.13, so the module goes through ONNX: ``torch.onnx.export``
(opset 17, dynamic batch and sequence), ONNX shape inference, torch-mlir's
ONNX importer, then torch-mlir's ``torch-onnx-to-torch-backend-pipeline`` and
``torch-backend-to-linalg-on-tensors-backend-pipeline``. The function is
renamed ``@forward`` and given the ``gptq.model`` attribute the drivers read.

Needs ``torch-mlir`` and ``onnx`` (see docs/torch-mlir.md for the versions);
they are imported lazily so the rest of the package works without them.
"""

import importlib.util
import io
import os
from typing import Optional, Sequence, Tuple, Union

from ..errors import GPTQError
from ..files.outputs import atomic_output
from .emitter import MODEL_ATTRIBUTE, model_attribute
from .llama2c import Llama2cCheckpoint, read_checkpoint
from .torch_mlir_lowering import lower

ONNX_OPSET = 17


def _require_toolchain():
    """onnx and torch, imported here; torch-mlir, found (it runs in a process
    of its own: gptq_mlir.importers.torch_mlir_lowering)."""
    try:
        import onnx
        import torch
    except ImportError as error:
        raise GPTQError(
            f"import-torch needs torch, onnx and torch-mlir ({error}); see docs/torch-mlir.md"
        ) from error
    if importlib.util.find_spec("torch_mlir") is None:
        raise GPTQError("import-torch needs torch, onnx and torch-mlir (no torch_mlir); see docs/torch-mlir.md")
    return onnx, torch


def export_module(model, example, names: Tuple[str, str], dynamic: Sequence[str],
                  graph_name: Optional[str] = None) -> bytes:
    """A PyTorch module exported to ONNX (serialized ModelProto, with ONNX
    shape inference's types, which torch-mlir needs): one input and one
    output named ``names``, whose leading dimensions ``dynamic`` names
    (``("batch",)``, ``("batch", "seq")``) stay dynamic; ``example`` only
    traces."""
    onnx, torch = _require_toolchain()
    buffer = io.BytesIO()
    torch.onnx.export(
        model,
        (example,),
        buffer,
        input_names=[names[0]],
        output_names=[names[1]],
        opset_version=ONNX_OPSET,
        dynamic_axes={name: dict(enumerate(dynamic)) for name in names},
    )
    proto = onnx.shape_inference.infer_shapes(onnx.load_from_string(buffer.getvalue()), data_prop=True)
    if graph_name is not None:
        proto.graph.name = graph_name
    return proto.SerializeToString()


def export_onnx(checkpoint: Llama2cCheckpoint) -> bytes:
    """The checkpoint's PyTorch module exported to ONNX (serialized ModelProto).

    Batch and sequence sizes stay dynamic; the example input only traces.
    """
    _, torch = _require_toolchain()
    from .torch_model import Llama2c

    model = Llama2c.from_checkpoint(checkpoint)
    example = torch.ones((1, min(8, checkpoint.config.seq_len)), dtype=torch.int32)
    return export_module(model, example, ("tokens", "logits"), ("batch", "seq"), graph_name="forward")


def lower_onnx(model_proto: bytes, checkpoint: Llama2cCheckpoint) -> str:
    """torch-mlir: ONNX ModelProto bytes -> linalg-on-tensors module text,
    with locations (the ONNX node names, which name the layers) and the
    ``gptq.model`` attribute."""
    _require_toolchain()
    return lower(model_proto, {MODEL_ATTRIBUTE: model_attribute(checkpoint.config)})


def import_llama2c_via_torch(
    checkpoint_path: Union[str, os.PathLike], output: Union[str, os.PathLike]
) -> None:
    """Write the torch-mlir import of a llama2.c checkpoint to ``output``."""
    checkpoint = read_checkpoint(checkpoint_path)
    text = lower_onnx(export_onnx(checkpoint), checkpoint)
    with atomic_output(output) as handle:
        handle.write(text.encode())
