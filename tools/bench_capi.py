"""Time tinyc through its Python API (tinyc.compile(..., device="cuda")) against PyTorch on
the same GPU, in one process: every figure is a CUDA graph of ITERS launches replayed
between two CUDA events, divided by ITERS (tinyc's launch-inclusive time of back-to-back
launches from Python is printed too).  Usage: TINYC_LIB=... python tools/bench_capi.py"""
import os
import sys

import torch

from torch_timing import graph_us

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
import tinyc  # noqa: E402

ITERS = 50


def example(name):
    with open(os.path.join(ROOT, "examples", name)) as f:
        return f.read()


dev = torch.device("cuda")
print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, tinyc {tinyc.version()}")
n = 4096
x = torch.randn(n, n, device=dev, dtype=torch.half)
w = torch.randn(n, n, device=dev, dtype=torch.half)
b = torch.randn(n, device=dev, dtype=torch.half)
m = tinyc.compile(example("matmul_bias_relu.uop"), bind=f"M={n},N={n},K={n}", device="cuda")
y = m(X=x, W=w, bias=b)["Y"]
ref = torch.relu(x.float() @ w.float() + b.float())
print(f"matmul_bias_relu {n}^3 fp16: max abs err vs fp32 torch {(y.float() - ref).abs().max().item():.3g}")
t_g = m.bench(warmup=5, iters=ITERS, X=x, W=w, bias=b)["ms"]
t_b = m.bench(warmup=5, iters=ITERS, graph=False, X=x, W=w, bias=b)["ms"]
t_t = graph_us(lambda: torch.relu(torch.addmm(b, x, w)), ITERS, replays=1) / 1e3
fl = 2 * n ** 3
print(f"  tinyc  (CUDA graph): {t_g * 1e3:8.1f} us  {fl / t_g / 1e9:6.1f} TFLOP/s")
print(f"  tinyc  (Python back-to-back launches): {t_b * 1e3:8.1f} us")
print(f"  torch relu(addmm) (CUDA graph): {t_t * 1e3:8.1f} us  {fl / t_t / 1e9:6.1f} TFLOP/s")
xs = torch.randn(n, n, device=dev)
sm = tinyc.compile(example("softmax.uop"), bind=f"N={n},C={n}", device="cuda")
ys = sm(X=xs)["Y"]
print(f"softmax {n}x{n} fp32: max abs err vs torch {(ys - torch.softmax(xs, 1)).abs().max().item():.3g}")
t_g = sm.bench(warmup=5, iters=ITERS, X=xs)["ms"]
t_t = graph_us(lambda: torch.softmax(xs, 1), ITERS, replays=1) / 1e3
gb = 2 * n * n * 4 / 1e9
print(f"  tinyc (CUDA graph): {t_g * 1e3:8.1f} us  {gb / t_g * 1e3:6.0f} GB/s")
print(f"  torch softmax (CUDA graph): {t_t * 1e3:8.1f} us  {gb / t_t * 1e3:6.0f} GB/s")
