#!/usr/bin/env python3
"""Bridge tests: small tinygrad 0.14.0 models exported with tinyc.from_tinygrad, run by
tinyc on the CPU paths, compared with tinygrad's own outputs on its CPU backend.

usage: test_bridge.py TINYC [CASE...] [--device=cpu,gpuir] [--list]
Exit status: 0 all passed, 1 a mismatch or error, 77 (ctest SKIP) when tinygrad or NumPy
is missing.  A case listed in XFAIL must fail (it passing is an error, so the list stays
true); its reason is printed.
"""

import importlib.metadata
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "tools")]

try:
    import numpy as np
    os.environ.setdefault("DEV", "CPU")
    import tinygrad
    from tinygrad import Tensor, dtypes
except ImportError as e:
    print(f"SKIP: {e} (tools/install-deps installs tinygrad==0.14.0)")
    sys.exit(77)

import tinyc
import tinygrad_models as M

def pow_ops(leaf, n=12):
    """x ** y for tensor exponents (integer and fractional, negative bases), x ** 3, x ** -1.5,
    2 ** x."""
    x = leaf("x", (n,), dtypes.float)
    y = leaf("y", (n,), dtypes.float)
    return {"p": x ** y, "q": x ** 3 + x.abs() ** -1.5 + 2 ** x}, {"x": x, "y": y}, {}


def movement(leaf, n=4, m=6):
    """flip, pad, shrink (slicing), permute, expand, max and min reductions, stack of bools."""
    x = leaf("x", (n, m), dtypes.float)
    y = x.flip(1).pad(((1, 0), (0, 2)))[1:, 2:].permute(1, 0)
    z = y.max(axis=0, keepdim=True).expand(m, n) - y.min(axis=1).reshape(m, 1)
    b = Tensor.stack(x > 0, x < 0.25).any(0).where(x, -x)
    return {"y": y + z.exp2(), "b": b}, {"x": x}, {}


# case name -> (builder, keyword arguments, devices, tolerance (rtol, atol))
CASES = {
    "mlp_fp32": (M.mlp, dict(rows=6, d=16, h=40, dtype=dtypes.float), "cpu,gpuir", (1e-4, 1e-5)),
    "mlp_fp16": (M.mlp, dict(rows=6, d=16, h=40, dtype=dtypes.half), "cpu,gpuir", (2e-2, 2e-2)),
    "gpt2_block_fp32": (M.gpt2_block, dict(b=2, t=6, d=16, heads=2, dtype=dtypes.float),
                        "cpu", (1e-5, 1e-5)),
    "gpt2_block_fp16": (M.gpt2_block, dict(b=1, t=6, d=16, heads=2, dtype=dtypes.half),
                        "cpu", (3e-2, 3e-2)),
    "resnet_block": (M.resnet_block, dict(n=2, c=3, hw=5, dtype=dtypes.float), "cpu,gpuir",
                     (1e-4, 1e-5)),
    "layernorm_softmax": (M.layernorm_softmax, dict(rows=5, d=24, dtype=dtypes.float),
                          "cpu,gpuir", (1e-5, 1e-6)),
    "embedding": (M.embedding, dict(vocab=11, d=6, b=2, t=5), "cpu,gpuir", (0, 0)),
    "cumsum": (M.cumsum, dict(rows=3, n=17, axis=1), "cpu,gpuir", (1e-5, 1e-5)),
    "cumsum_two_stage": (M.cumsum, dict(rows=2, n=600, axis=1), "cpu", (1e-5, 1e-5)),
    "movement": (movement, dict(n=4, m=6), "cpu,gpuir", (1e-5, 1e-6)),
    "pow": (pow_ops, dict(n=12), "cpu,gpuir", (1e-5, 1e-6)),
    "cat_full": (M.cat_full, dict(rows=3, n=4), "cpu,gpuir", (1e-6, 1e-6)),
    # attention (issue 16): one flash-style kernel; T not a multiple of the key tile
    "attn_causal_gqa_fp16": (M.attention, dict(b=2, t=37, heads=4, kv_heads=2, d=64,
                                               mask="causal", dtype=dtypes.half),
                             "cpu,gpuir", (2e-2, 2e-2)),
    "attn_full_mqa_fp32": (M.attention, dict(b=1, t=33, heads=2, kv_heads=1, d=64,
                                             mask="none", dtype=dtypes.float),
                           "cpu,gpuir", (1e-5, 1e-5)),
    "attn_bias_d128_fp16": (M.attention, dict(b=1, t=20, heads=2, kv_heads=2, d=128,
                                              mask="bias", dtype=dtypes.half),
                            "cpu,gpuir", (2e-2, 2e-2)),
    "attn_causal_d128_fp32": (M.attention, dict(b=1, t=19, heads=2, kv_heads=2, d=128,
                                                mask="causal", dtype=dtypes.float),
                              "cpu,gpuir", (1e-5, 1e-5)),
}

# the small versions of the committed exports (examples/models/*_small.uop)
_TOL = {dtypes.half: (3e-2, 3e-2), dtypes.float: (1e-5, 1e-5)}
for _name, (_builder, _full, _small) in M.EXPORTS.items():
    CASES[_name + "_small"] = (_builder, _small, "cpu,gpuir", _TOL[_small["dtype"]])

# case name -> why tinyc cannot run it yet (reported to the lead; the case must fail)
XFAIL = {}

_NP = {dtypes.float: np.float32, dtypes.half: np.float16, dtypes.int32: np.int32}


def make_leaf(rng, arrays):
    """A leaf function for the model builders: a realized tinygrad tensor of random data,
    its array kept in `arrays` for tinyc's --in."""
    def leaf(name, shape, dtype):
        """Random data for one leaf, kept under its name."""
        if dtype == dtypes.int32:
            hi = 11 if name == "idx" else 100
            a = rng.integers(0, hi, size=shape).astype(np.int32)
        elif name == "y" and len(shape) == 1:	# exponents: integers and halves
            a = (rng.integers(-6, 7, size=shape) * 0.5).astype(_NP[dtype])
        elif name.endswith("running_var"):
            a = rng.uniform(0.5, 1.5, size=shape).astype(_NP[dtype])
        else:
            a = (rng.standard_normal(size=shape) * 0.5).astype(_NP[dtype])
        arrays[name] = a
        return Tensor(a).realize()
    return leaf


def compare(got, want, rtol, atol):
    """Messages for each way the array got differs from want (none when they agree)."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return [f"got {got.dtype}{got.shape}, want {want.dtype}{want.shape}"]
    g64, w64 = got.astype(np.float64), want.astype(np.float64)
    bad = ~np.isclose(g64, w64, rtol=rtol, atol=atol, equal_nan=True)
    if not bad.any():
        return []
    i = np.unravel_index(np.argmax(bad), bad.shape)
    return [f"{bad.sum()} of {bad.size} differ (rtol {rtol}, atol {atol}); first at "
            f"{tuple(map(int, i))}: tinyc {got[i]}, expected {want[i]}"]


def run_case(tinyc_bin, name, devices):
    """Export one case, run it on tinygrad and on tinyc; returns a list of failures."""
    builder, kwargs, devs, (rtol, atol) = CASES[name]
    arrays = {}
    rng = np.random.default_rng(1234)
    outs, ins, params = builder(make_leaf(rng, arrays), **kwargs)
    text = tinyc.from_tinygrad(outs, ins, params, comment=f"test case {name}")
    want = {k: v.numpy() for k, v in outs.items()}
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name + ".uop")
        with open(path, "w") as f:
            f.write(text)
        args = []
        for k, a in arrays.items():
            np.save(os.path.join(tmp, k + ".npy"), a)
            args += ["--in", f"{k}={os.path.join(tmp, k + '.npy')}"]
        for dev in devs.split(","):
            if devices and dev not in devices:
                continue
            outargs = []
            for k in outs:
                outargs += ["--out", f"{k}={os.path.join(tmp, f'{k}.{dev}.out.npy')}"]
            cmd = [tinyc_bin, "run", path, f"--device={dev}"] + args + outargs
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                fails.append(f"{dev}: tinyc exited {p.returncode}: {p.stderr.strip()[:2000]}")
                continue
            for k, w in want.items():
                got = np.load(os.path.join(tmp, f"{k}.{dev}.out.npy"))
                fails += [f"{dev}: {k}: {m}" for m in compare(got, w, rtol, atol)]
    return fails


def main(argv):
    """Run the cases named on the command line (all by default); the exit status."""
    if len(argv) < 2:
        print(__doc__)
        return 2
    tinyc_bin, names, devices = argv[1], [], None
    for a in argv[2:]:
        if a == "--list":
            print("\n".join(CASES))
            return 0
        if a.startswith("--device="):
            devices = a.split("=", 1)[1].split(",")
        else:
            names.append(a)
    version = importlib.metadata.version("tinygrad")
    if version != "0.14.0":
        print(f"note: tinygrad {version}; the bridge is tested with 0.14.0")
    status = 0
    for name in names or list(CASES):
        if name not in CASES:
            print(f"unknown case {name}")
            return 2
        try:
            fails = run_case(tinyc_bin, name, devices)
        except tinyc.BridgeError as e:
            fails = [f"bridge: {e}"]
        if name in XFAIL:
            if fails:
                print(f"XFAIL {name}: {XFAIL[name]}\n  " + "\n  ".join(fails))
            else:
                print(f"XPASS {name}: passed but is listed as an expected failure")
                status = 1
        elif fails:
            print(f"FAIL {name}\n  " + "\n  ".join(fails))
            status = 1
        else:
            print(f"ok   {name}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
