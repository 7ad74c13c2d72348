"""Dtype objects of other libraries (torch, NumPy, ml_dtypes) read by name, never imported.

``import tcast`` must not import any of them, so an object is recognised by its type's module
and its printed name: ``torch.float8_e4m3fn`` (a ``torch.dtype``), ``np.dtype("float16")`` and
``np.dtype(ml_dtypes.bfloat16)`` (NumPy dtypes), ``np.float16`` and ``ml_dtypes.int4`` (NumPy
scalar types). Their names are the ml_dtypes/torch spellings the number grammar accepts
(``docs/names.md``), so the mapping is the grammar's and needs no table of its own.
"""

from __future__ import annotations

from typing import Any

__all__ = ["foreign_dtype"]

#: Libraries whose scalar types are NumPy scalar types with the format's name.
_SCALAR_MODULES = ("numpy", "ml_dtypes")


def foreign_dtype(obj: Any) -> tuple[str, str] | None:
    """``(name, label)`` of a torch/NumPy/ml_dtypes dtype object, or None for anything else.

    ``name`` is the library's name of the format (``float8_e4m3fn``), ``label`` how the
    user wrote it, for messages (``torch.float8_e4m3fn``, ``numpy.dtype('float16')``).
    """
    kind = type(obj)
    root = kind.__module__.split(".", 1)[0]
    if root == "torch" and kind.__name__ == "dtype":
        text = str(obj)
        return text.removeprefix("torch."), text
    if root == "numpy" and hasattr(obj, "kind") and hasattr(obj, "itemsize"):
        name = str(getattr(obj, "name", ""))
        return name, f"numpy.dtype({name!r})"
    if isinstance(obj, type):
        mod = getattr(obj, "__module__", "") or ""
        if mod.split(".", 1)[0] in _SCALAR_MODULES and hasattr(obj, "dtype"):
            return obj.__name__, f"{mod.split('.', 1)[0]}.{obj.__name__}"
    return None
