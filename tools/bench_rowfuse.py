#!/usr/bin/env python3
"""The PyTorch side of the row-group measurements (docs/rowfuse-results.md).

  tools/bench_rowfuse.py [--rows 16384] [--cols 4096] [--vocab 0] [--iters 200] [--no-compile]

Times, on the GPU, in fp32 over [rows, cols]:
  softmax            torch.softmax(x, -1)
  layernorm_softmax  torch.softmax(F.layer_norm(x, (cols,), w, b, 1e-5), -1)
  softmax_vocab      torch.softmax(v, -1) over [rows, vocab] when --vocab > 0
for torch eager and torch.compile (default mode), each two ways: CUDA-graph replay (--iters
calls captured into one graph, the median of 7 replays between two events divided by --iters;
tools/torch_timing.py) and --iters back-to-back calls between two events divided by --iters.  Prints
  BENCH torch case=.. mode=eager|compile graph_us=.. loop_us=..
"""
import argparse
import sys

from torch_timing import graph_us, loop_us


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=16384)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--vocab", type=int, default=0)
    ap.add_argument("--no-compile", action="store_true")
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    x = torch.randn(a.rows, a.cols, device="cuda", dtype=torch.float32)
    w = torch.randn(a.cols, device="cuda", dtype=torch.float32)
    b = torch.randn(a.cols, device="cuda", dtype=torch.float32)

    def softmax(t):
        return torch.softmax(t, -1)

    def ln_softmax(t):
        return torch.softmax(F.layer_norm(t, (a.cols,), w, b, 1e-5), -1)

    print("torch", torch.__version__, torch.cuda.get_device_name(), flush=True)
    cases = [("softmax", softmax, x), ("layernorm_softmax", ln_softmax, x)]
    if a.vocab > 0:
        cases.append(("softmax_vocab", softmax,
                      torch.randn(a.rows, a.vocab, device="cuda", dtype=torch.float32)))
    for case, f, inp in cases:
        modes = [("eager", f)]
        if not a.no_compile:
            modes.append(("compile", torch.compile(f)))
        for mode, fn in modes:
            call = lambda: fn(inp)  # noqa: E731
            loop = loop_us(call, a.iters)
            graph = graph_us(call, a.iters)
            print(f"BENCH torch case={case} mode={mode} rows={a.rows} cols={inp.shape[1]} "
                  f"graph_us={graph:.1f} loop_us={loop:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
