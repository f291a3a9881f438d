"""tinyc's Python package (docs/python.md).

tinyc.from_tinygrad(outputs, inputs, params) turns tinygrad Tensors into tinyc-uop v0
text; `python -m tinyc.export script.py` does it for a script.  The bridge imports
tinygrad only when first used, so the rest of the package works without it.
"""

__version__ = "0.1.0"
__all__ = ["from_tinygrad", "BridgeError"]


def __getattr__(name):
    """Load the tinygrad bridge on first use of one of its names (PEP 562)."""
    if name in ("from_tinygrad", "BridgeError"):
        from . import tinygrad_bridge
        return getattr(tinygrad_bridge, name)
    raise AttributeError(f"module 'tinyc' has no attribute {name!r}")
