"""tinyc's Python package: tinyc.compile() over libtinyc.so (docs/python-api.md).

    import tinyc
    m = tinyc.compile(open("examples/softmax.uop").read(), device="cpu")
    y = m(X=x)["Y"]

The tinygrad bridge (tinyc.from_tinygrad) lives beside this API in the same package.
"""
from .api import Module, Tensor, TinycError, compile, version

__all__ = ["compile", "Module", "Tensor", "TinycError", "version"]
