#!/usr/bin/env python3
"""The PyTorch side of tools/bench-conv: issue 15's convolutions in torch eager (cuDNN,
TF32 off for fp32) and torch.compile, timed by CUDA-graph replay (eager: 20 calls captured
in one graph, the median of 10 replays / 20; tools/torch_timing.py) and for torch.compile by 100 back-to-back
calls between two CUDA events (time / 100), after warm-up.

  tools/bench_conv.py [--no-compile] [--fp32] [--only=CASE:DTYPE,...] [--profile]

--fp32: the fp32 rows only; --only=block:fp16,stem:fp16 times only those; --profile also
prints the CUDA kernels of one eager call (torch.profiler: "KERNEL case=.. dtype=.. us=..
name=..", the mean of 20 calls).

prints "BENCH torch case=NAME dtype=D eager_us=.. compile_us=..".  Cases:
  block      ResNet BasicBlock (two 3x3 convs, no bias, BatchNorm eval, ReLU, identity
             residual) on x[32,64,56,56]
  stem       ResNet-50 stem conv: 7x7 stride 2 padding 3, 3 -> 64 on x[32,3,224,224]
  depthwise  3x3 padding 1, groups 256 on x[32,256,56,56]
"""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_timing import graph_us, loop_us


class Block(nn.Module):
    """relu(bn2(conv2(relu(bn1(conv1 x)))) + x), BatchNorm in eval mode."""

    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + x)


def model(case):
    """The module and its input shape."""
    if case == "block":
        return Block(64), (32, 64, 56, 56)
    if case == "stem":
        return nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), (32, 3, 224, 224)
    return nn.Conv2d(256, 256, 3, padding=1, groups=256, bias=False), (32, 256, 56, 56)


def profile(case, name, fn):
    """Print each CUDA kernel of fn (the mean over 20 calls) as a KERNEL line."""
    from torch.profiler import ProfilerActivity, profile as prof
    with prof(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
    for e in p.key_averages():
        if e.device_type.name == "CUDA" and e.count > 0:
            us = e.device_time_total / 20
            print(f"KERNEL case={case} dtype={name} us={us:.1f} calls={e.count // 20} name={e.key[:90]}",
                  flush=True)


def main(argv):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    only = [a.split("=", 1)[1].split(",") for a in argv if a.startswith("--only=")]
    only = set(only[0]) if only else None
    for case in ("block", "stem", "depthwise"):
        for dt in (torch.float32,) if "--fp32" in argv else (torch.float32, torch.float16):
            if only is not None and f"{case}:{'fp32' if dt == torch.float32 else 'fp16'}" not in only:
                continue
            m, shape = model(case)
            m = m.cuda().to(dt).eval()
            for p in m.parameters():
                p.requires_grad_(False)
            for mod in m.modules():
                if isinstance(mod, nn.BatchNorm2d):
                    mod.running_mean.uniform_(-0.5, 0.5)
                    mod.running_var.uniform_(0.5, 1.5)
            x = torch.randn(shape, device="cuda", dtype=dt)
            with torch.no_grad():
                eager = graph_us(lambda: m(x), 20, replays=10)
                comp = -1.0
                if "--no-compile" not in argv:
                    cm = torch.compile(m)
                    comp = loop_us(lambda: cm(x), 100, warmup=5)
            name = "fp32" if dt == torch.float32 else "fp16"
            if "--profile" in argv:
                try:
                    with torch.no_grad():
                        profile(case, name, lambda: m(x))
                except Exception as e:  # the timing above stands without the profile
                    print(f"KERNEL case={case} dtype={name} profiler failed: {e}", flush=True)
            print(f"BENCH torch case={case} dtype={name} eager_us={eager:.1f} compile_us={comp:.1f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
