#!/usr/bin/env python3
"""torch's F.linear (x @ W^T + b) on the GPU, timed as tools/bench_models_peers.py times
its models: N calls captured back to back in one CUDA graph, the graph replayed 5 times
between CUDA events, the median replay / N.  fp32 without TF32 (torch's default) unless
--dtype half.

usage: tools/bench_fp32_linear.py [--iters N] [--dtype float|half] [--gelu] MxNxK ...
Prints "TORCH linear M=.. N=.. K=.. dtype=.. us=.. tflops=.." per shape.
"""
import argparse
import statistics

import torch
import torch.nn.functional as F


def time_graph(fn, iters):
    """Median of 5 replays of a CUDA graph of `iters` calls of fn, per call, in us."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(iters):
            fn()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / iters)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--dtype", default="float", choices=["float", "half"])
    ap.add_argument("--gelu", action="store_true", help="F.gelu(approximate='tanh') after")
    ap.add_argument("shapes", nargs="+")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dt = torch.float32 if a.dtype == "float" else torch.float16
    torch.manual_seed(0)
    for sh in a.shapes:
        m, n, k = (int(v) for v in sh.split("x"))
        x = torch.rand(m, k, device="cuda", dtype=dt)
        w = torch.rand(n, k, device="cuda", dtype=dt) * 0.03
        bias = torch.rand(n, device="cuda", dtype=dt)
        fn = (lambda: F.gelu(F.linear(x, w, bias), approximate="tanh")) if a.gelu \
            else (lambda: F.linear(x, w, bias))
        us = time_graph(fn, a.iters)
        print("TORCH linear%s M=%d N=%d K=%d dtype=%s us=%.1f tflops=%.1f"
              % ("+gelu" if a.gelu else "", m, n, k, a.dtype, us, 2.0 * m * n * k / us / 1e6))


if __name__ == "__main__":
    main()
