#!/usr/bin/env python3
"""torch's F.linear (x @ W^T + b) on the GPU, timed as tools/bench_models_peers.py times
its models: N calls captured back to back in one CUDA graph, the graph replayed 5 times
between CUDA events, the median replay / N.  fp32 without TF32 (torch's default) unless
--dtype half.

usage: tools/bench_fp32_linear.py [--iters N] [--dtype float|half] [--gelu] [--tf32] MxNxK ...
Prints "TORCH linear M=.. N=.. K=.. dtype=.. us=.. tflops=.." per shape.
"""
import argparse

import torch
import torch.nn.functional as F

from torch_timing import graph_us  # the same timing as the model peers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--dtype", default="float", choices=["float", "half"])
    ap.add_argument("--gelu", action="store_true", help="F.gelu(approximate='tanh') after")
    ap.add_argument("--tf32", action="store_true", help="fp32 with TF32 on (1xTF32: not fp32 accuracy)")
    ap.add_argument("shapes", nargs="+")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    dt = torch.float32 if a.dtype == "float" else torch.float16
    torch.manual_seed(0)
    for sh in a.shapes:
        m, n, k = (int(v) for v in sh.split("x"))
        x = torch.rand(m, k, device="cuda", dtype=dt)
        w = torch.rand(n, k, device="cuda", dtype=dt) * 0.03
        bias = torch.rand(n, device="cuda", dtype=dt)
        fn = (lambda: F.gelu(F.linear(x, w, bias), approximate="tanh")) if a.gelu \
            else (lambda: F.linear(x, w, bias))
        us = graph_us(fn, a.iters, replays=5)
        print("TORCH linear%s M=%d N=%d K=%d dtype=%s%s us=%.1f tflops=%.1f"
              % ("+gelu" if a.gelu else "", m, n, k, a.dtype, " tf32" if a.tf32 else "", us,
                 2.0 * m * n * k / us / 1e6))


if __name__ == "__main__":
    main()
