"""tcast_torch: the bit-exact PyTorch engine of tcast.

Implements every rule of tcast's SEMANTICS.md on torch tensors (float32, float16,
bfloat16; CPU and CUDA; any rank and strides), bit for bit the same as the NumPy reference
engine ``tcast_ref``. Registered as the ``torch`` engine, so ``tcast.cast(tensor, ...)``
reaches it. The cast path is int32 bit arithmetic in plain torch operations, with no host
synchronisation, so it also runs under ``torch.compile``.
"""

from . import toolkit
from ._api import cast, cast_dual, upcast
from ._calibrate import Calibration, prepare_model
from ._codec import decode, encode
from ._compiled import exact_inductor_options
from ._dtypes import TORCH_DTYPES, TorchView, as_torch_dtype, torch_dtype
from ._engine import TorchEngine, engine
from ._hadamard import hadamard
from ._model import (
    SUPPORTED_LAYERS,
    AlreadyQuantizedError,
    QuantHandle,
    QuantizedLayer,
    QuantRule,
    quantize_model,
)
from ._observe import Observer
from ._pack import pack_codes, pack_mask, unpack_codes, unpack_mask
from ._philox import random_bits
from ._run import INPUT_DTYPES

__version__ = "0.1.0"

__all__ = [
    "INPUT_DTYPES",
    "SUPPORTED_LAYERS",
    "TORCH_DTYPES",
    "AlreadyQuantizedError",
    "Calibration",
    "Observer",
    "QuantHandle",
    "QuantRule",
    "QuantizedLayer",
    "TorchEngine",
    "TorchView",
    "__version__",
    "as_torch_dtype",
    "cast",
    "cast_dual",
    "decode",
    "encode",
    "engine",
    "exact_inductor_options",
    "hadamard",
    "pack_codes",
    "pack_mask",
    "prepare_model",
    "quantize_model",
    "random_bits",
    "toolkit",
    "torch_dtype",
    "unpack_codes",
    "unpack_mask",
    "upcast",
]
