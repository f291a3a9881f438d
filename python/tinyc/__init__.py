"""tinyc's Python package (docs/python.md, docs/python-api.md).

    import tinyc
    m = tinyc.compile(open("examples/softmax.uop").read(), device="cpu")
    y = m(X=x)["Y"]

tinyc.compile() is ctypes over libtinyc.so (loaded on first use).  tinyc.from_tinygrad(outputs,
inputs, params) turns tinygrad Tensors into tinyc-uop v0 text; `python -m tinyc.export
script.py` does it for a script.  The bridge imports tinygrad only when first used, so the rest
of the package works without it.
"""
from .api import Module, Tensor, TinycError, compile, version

__version__ = "0.2.0"
__all__ = ["compile", "Module", "Tensor", "TinycError", "version", "from_tinygrad", "BridgeError"]


def __getattr__(name):
    """Load the tinygrad bridge on first use of one of its names (PEP 562)."""
    if name in ("from_tinygrad", "BridgeError"):
        from . import tinygrad_bridge
        return getattr(tinygrad_bridge, name)
    raise AttributeError(f"module 'tinyc' has no attribute {name!r}")
