#!/usr/bin/env python3
"""Issue 13's script, GPU half: a tinygrad MLP exported with tinyc.compile(device="cuda"),
run with torch CUDA tensors in and out on a torch side stream, compared with tinygrad's CPU
output for the same inputs (an independent implementation; NumPy where tinygrad's CPU
backend cannot compile, for want of clang).  Then, when tinygrad's own CUDA
device works here, the same module on tinygrad CUDA tensors (device buffers; tinygrad
0.14.0 has no DLPack).

Exit status 0 passed, 1 failed, 77 (SKIP) without torch, a CUDA device or tinygrad.
"""
import os
import shutil
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "tests", "python")]
try:
    import numpy as np
    import torch
    # tinygrad's CPU backend (the reference) compiles with clang; without it tinygrad only
    # exports and copies, on its PYTHON device
    os.environ.setdefault("DEV", "CPU" if shutil.which("clang") else "PYTHON")
    from tinygrad import Tensor
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: no CUDA device")
    sys.exit(77)
import tinyc  # noqa: E402
from tinygrad_mlp import Checks, numpy_mlp, seeded_mlp  # noqa: E402

check = Checks()
rng = np.random.default_rng(0)
model, x, params, w = seeded_mlp(rng)
m = tinyc.compile(({"y": model(x)}, {"x": x}, params), device="cuda")
xs = rng.standard_normal((16, 64)).astype(np.float32)
if os.environ["DEV"] == "CPU":          # tinygrad's CPU backend
    want, ref = model(Tensor(xs)).numpy(), "tinygrad CPU"
else:
    want, ref = numpy_mlp(w, xs), "NumPy (no clang for tinygrad's CPU backend)"
print(f"reference: {ref}")

# torch CUDA tensors in and out, on a side stream: the kernels must follow the stream's work
side = torch.cuda.Stream()
with torch.cuda.stream(side):
    feeds = {k: torch.from_numpy(v.numpy()).cuda() for k, v in params.items()}
    xt = torch.zeros(16, 64, device="cuda")
    xt.copy_(torch.from_numpy(xs).cuda())       # enqueued on the side stream
    y = m(x=xt, **feeds)["y"]
    yc = y.cpu()                                # waits for the side stream
check(isinstance(y, torch.Tensor) and y.is_cuda and tuple(y.shape) == (16, 10),
      f"torch CUDA tensors in, a torch CUDA tensor out {tuple(y.shape)}")
err = float(np.abs(yc.numpy() - want).max())
check(err <= 1e-4, f"torch on a side stream: max abs difference from the reference {err:.3g}")

# tinygrad CUDA tensors, if tinygrad's CUDA backend runs here
try:
    probe = (Tensor([1.0, 2.0], device="CUDA") * 2).numpy()   # tinygrad compiles and runs
    tg_ok = probe.tolist() == [2.0, 4.0]
except Exception as e:  # no libnvrtc/libcuda for tinygrad: not this test's subject
    print(f"not run: tinygrad CUDA tensors (tinygrad's CUDA device: {type(e).__name__}: {e})")
    tg_ok = False
if tg_ok:
    gx = Tensor(xs, device="CUDA")
    gp = {k: v.to("CUDA") for k, v in params.items()}
    gy = m(x=gx, **gp)["y"]
    check(str(gy.device).startswith("CUDA"), f"tinygrad CUDA in, tinygrad CUDA out ({gy.device})")
    err = float(np.abs(gy.numpy() - want).max())
    check(err <= 1e-4, f"tinygrad CUDA tensors: max abs difference from the reference {err:.3g}")
sys.exit(check.status())
