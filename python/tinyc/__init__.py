"""tinyc's Python package: the tinygrad bridge (docs/python.md)."""

from .tinygrad_bridge import BridgeError, from_tinygrad

__all__ = ["from_tinygrad", "BridgeError"]
__version__ = "0.1.0"
