#!/usr/bin/env python3
"""tinyc's Python API with tinygrad tensors on the CPU paths: the CPU half of issue 13's
script (a tinygrad MLP exported with tinyc.compile, run on tinygrad CPU tensors) compared
with tinygrad's own output for the same tensors; tinygrad tensors in give tinygrad tensors
out, NumPy arrays in give NumPy arrays out.

Run by ctest with TINYC_LIB pointing at the build's libtinyc.so.  Exit status 0 passed,
1 failed, 77 (SKIP) without tinygrad.
"""
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.dirname(os.path.abspath(__file__))]
try:
    import numpy as np
    os.environ.setdefault("DEV", "CPU")
    from tinygrad import Tensor
except ImportError as e:
    print(f"SKIP: {e} (tools/install-deps installs tinygrad==0.14.0)")
    sys.exit(77)
import tinyc  # noqa: E402
from tinygrad_mlp import Checks, seeded_mlp  # noqa: E402

check = Checks()
rng = np.random.default_rng(0)
model, x, params, _ = seeded_mlp(rng)
xs = Tensor(rng.standard_normal((16, 64)).astype(np.float32))
want = model(xs).numpy()        # tinygrad's own CPU result
for device in ("cpu", "gpuir"):
    m = tinyc.compile(({"y": model(x)}, {"x": x}, params), device=device)
    check([t.name for t in m.inputs] == ["x", "l1.weight", "l1.bias", "l2.weight", "l2.bias"],
          f"{device}: inputs named after the tensors and the state dict")
    y = m(x=xs, **params)["y"]
    check(isinstance(y, Tensor) and str(y.device).startswith("CPU"),
          f"{device}: tinygrad in, a tinygrad CPU tensor out ({type(y).__name__})")
    err = float(np.abs(y.numpy() - want).max())
    check(err <= 1e-5, f"{device}: max abs difference from tinygrad {err:.3g} (<= 1e-5)")
    yn = m(x=xs.numpy(), **{k: v.numpy() for k, v in params.items()})["y"]
    check(isinstance(yn, np.ndarray) and float(np.abs(yn - want).max()) <= 1e-5,
          f"{device}: NumPy in, NumPy out, the same values")
# a wrong dtype is refused before anything runs
try:
    m(x=xs.half(), **params)
    check(False, "a half tinygrad tensor for a float input raises TypeError")
except TypeError as e:
    check("float" in str(e), f"a half tinygrad tensor for a float input raises TypeError ({e})")
sys.exit(check.status())
