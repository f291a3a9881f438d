#!/usr/bin/env python3
"""torch scaled_dot_product_attention timing beside tinyc's fused attention (issue 16).

usage: tools/bench_attention_torch.py [--b 8] [--heads 12] [--dim 64] [--iters 20] CASE...
CASE is DTYPE:T:MASK (float16|float32, T, causal|none).  q, k, v are views of [B,T,H*d]
tensors with the heads split and transposed, as in the exported tinygrad graphs.  fp16 runs
the flash backend only; fp32 whatever torch picks.  Time per call: CUDA events around
`iters` back-to-back calls divided by iters, median of 5 such runs after warm-up; with
--graph also `iters` calls captured into one CUDA graph, median of 7 replays / iters (as
`tinyc bench` times kernels).  Prints "BENCH torch DTYPE T MASK ms=<t> [graph_ms=<t>]
backend=<name>" per case.
"""
import argparse

from torch_timing import graph_us, loop_us


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--b", type=int, default=8)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--graph", action="store_true", help="also time by CUDA-graph replay")
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for case in a.cases:
        dt, t, mask = case.split(":")
        t = int(t)
        dtype = getattr(torch, dt)
        x = [torch.randn(a.b, t, a.heads * a.dim, device="cuda", dtype=dtype) for _ in range(3)]
        q, k, v = [y.view(a.b, t, a.heads, a.dim).transpose(1, 2) for y in x]
        backends = [SDPBackend.FLASH_ATTENTION] if dtype == torch.float16 else \
            [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
        with sdpa_kernel(backends):
            def call():
                return F.scaled_dot_product_attention(q, k, v, is_causal=mask == "causal")
            ms = loop_us(call, a.iters, warmup=3, repeats=5) / 1e3
            gms = f" graph_ms={graph_us(call, a.iters) / 1e3:.4f}" if a.graph else ""
        print(f"BENCH torch {dt} {t} {mask} ms={ms:.4f}{gms} "
              f"backend={'flash' if dtype == torch.float16 else 'efficient/math'}", flush=True)


if __name__ == "__main__":
    main()
