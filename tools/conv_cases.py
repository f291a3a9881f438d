"""Convolution cases for tests/conv: tinygrad 0.14.0 convolutions (conv1d/2d/3d with
kernel sizes, strides, paddings, dilations, groups, depthwise; bias, BatchNorm, ReLU and a
residual after some) exported with tinyc.from_tinygrad, with seeded inputs and tinygrad's
own outputs as .npy files (the independent reference of tests/conv/run_case.py).

    PYTHONPATH=python python3 tools/conv_cases.py tests/conv/Inputs

writes <case>.uop, <case>.<input>.npy and <case>.y.npy per case.  Also
`--model NAME dtype` prints a full-size model's .uop (benchmarks, docs/conv-results.md).
"""
import os
import sys

import numpy as np
from tinygrad import Tensor, dtypes, nn
from tinygrad.helpers import Context

from tinyc import from_tinygrad

# name: (input shape, out channels, kernel, stride, padding, dilation, groups, extra)
CASES = {
    "c2d_k3_p1": ((2, 4, 7, 6), 5, (3, 3), 1, 1, 1, 1, ""),
    "c2d_k1": ((2, 6, 5, 5), 4, (1, 1), 1, 0, 1, 1, ""),
    "c2d_k5_s2_p2": ((1, 3, 11, 9), 4, (5, 5), 2, 2, 1, 1, "bias"),
    "c2d_k3_d2_p2": ((2, 3, 9, 8), 4, (3, 3), 1, 2, 2, 1, ""),
    "c2d_k3_s2_valid": ((2, 3, 9, 9), 6, (3, 3), 2, 0, 1, 1, "bias"),
    "c2d_k2x3_p1x0": ((1, 2, 6, 7), 3, (2, 3), 1, (1, 0), 1, 1, ""),
    "c2d_groups2": ((2, 4, 6, 6), 6, (3, 3), 1, 1, 1, 2, ""),
    "c2d_depthwise": ((2, 5, 7, 7), 5, (3, 3), 1, 1, 1, 5, "bias"),
    "c2d_bn_relu_res": ((2, 4, 6, 6), 4, (3, 3), 1, 1, 1, 1, "bn_relu_res"),
    "c1d_k3_p1": ((2, 3, 10), 4, (3,), 1, 1, 1, 1, "bias"),
    "c1d_k4_s2_d2": ((2, 3, 17), 5, (4,), 2, 0, 2, 1, ""),
    "c3d_k3_p1": ((1, 2, 5, 4, 6), 3, (3, 3, 3), 1, 1, 1, 1, "bias"),
    "c3d_k2_s2": ((2, 2, 6, 6, 4), 3, (2, 2, 2), 2, 0, 1, 1, ""),
    # depthwise without an epilogue: the direct conv kernel (sched/conv_direct.c); these
    # are named after the others so that the others' seeds stay
    "dw_k3_s2_odd": ((3, 5, 9, 7), 5, (3, 3), 2, 1, 1, 5, ""),
    "dw_k5_d2_p3": ((2, 3, 8, 11), 3, (5, 5), 1, 3, 2, 3, ""),
    # grouped: 2 input channels per group (the direct kernel), 16 (not: a GEMM's size)
    "grp_k3_s2_g3": ((2, 6, 7, 5), 9, (3, 3), 2, 1, 1, 3, ""),
    "grp_c16_g2": ((1, 32, 5, 6), 4, (3, 3), 1, 1, 1, 2, ""),
    # channels in multiples of 8 at odd sizes: the NHWC implicit GEMM of fp16 on sm_90a
    # (sched/conv_nhwc.c; the lit tests' fp16 twins)
    "nhwc_c16_k3_s2_odd": ((2, 16, 9, 7), 24, (3, 3), 2, 1, 1, 1, "bias"),
    "nhwc_c8_bn_res": ((3, 8, 7, 5), 8, (3, 3), 1, 1, 1, 1, "bn_relu_res"),
    # depthwise with a bias on the direct kernel (named to sort last: the others' seeds stay)
    "sep_dw_bias_k3_s2": ((3, 6, 9, 7), 6, (3, 3), 2, 1, 1, 6, "bias"),
}


def build(spec, dtype, leaf):
    """The case's output and its named inputs."""
    shape, cout, ks, stride, pad, dil, groups, extra = spec
    cin = shape[1]
    x = leaf("x", shape, dtype)
    w = leaf("w", (cout, cin // groups, *ks), dtype)
    ins = {"x": x, "w": w}
    b = None
    if "bias" in extra:
        b = ins["b"] = leaf("b", (cout,), dtype)
    y = x.conv2d(w, b, groups=groups, stride=stride, dilation=dil, padding=pad)
    if "bn" in extra:
        for p in ("mean", "var", "gamma", "beta"):
            ins[p] = leaf(p, (cout,), dtype)
        sh = (1, cout) + (1,) * len(ks)
        inv = (ins["var"].abs().reshape(sh) + 1e-5).rsqrt()
        y = (y - ins["mean"].reshape(sh)) * inv * ins["gamma"].reshape(sh) + ins["beta"].reshape(sh)
        y = y.relu() + x
    return y, ins


def write_case(out, name, spec, seed):
    """Export one case with seeded inputs and tinygrad's output."""
    rng = np.random.default_rng(seed)
    data = {}

    def leaf(n, shape, dtype):
        a = rng.standard_normal(shape).astype(np.float32)
        data[n] = a
        return Tensor(a)

    y, ins = build(spec, dtypes.float, leaf)
    ref = y.numpy()

    def empty(n, shape, dtype):
        return Tensor.empty(*shape, dtype=dtype)

    yt, tins = build(spec, dtypes.float, empty)
    text = from_tinygrad({"y": yt}, tins, comment=f"{name}: tools/conv_cases.py")
    with open(os.path.join(out, name + ".uop"), "w") as f:
        f.write(text)
    for n, a in data.items():
        np.save(os.path.join(out, f"{name}.{n}.npy"), a)
    np.save(os.path.join(out, f"{name}.y.npy"), ref)


def main(argv):
    if len(argv) == 3 and argv[0] == "--model":
        dt = {"float": dtypes.float, "half": dtypes.half}[argv[2]]
        specs = {
            "stem": ((32, 3, 224, 224), 64, (7, 7), 2, 3, 1, 1, ""),
            "depthwise": ((32, 256, 56, 56), 256, (3, 3), 1, 1, 1, 256, ""),
        }
        y, ins = build(specs[argv[1]], dt, lambda n, s, d: Tensor.empty(*s, dtype=d))
        sys.stdout.write(from_tinygrad({"y": y}, ins, comment=f"{argv[1]} {argv[2]}: tools/conv_cases.py"))
        return 0
    out = argv[0] if argv else "tests/conv/Inputs"
    os.makedirs(out, exist_ok=True)
    for i, (name, spec) in enumerate(sorted(CASES.items())):
        write_case(out, name, spec, 1000 + i)
    return 0


if __name__ == "__main__":
    with Context(TRAINING=0):
        sys.exit(main(sys.argv[1:]))
