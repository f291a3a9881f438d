#!/usr/bin/env python3
"""The fp16 model graphs' kernels are as accurate as the fp16 reference evaluator.

usage: test_fp16_models.py TINYC SOURCE_DIR      (exit 0 pass, 1 fail)

For each small fp16 model of examples/models (the GPT-2 block, the MLP), on seeded inputs:
the graph promoted to float32 (every `half` in the text read as `float`, the same values)
run by the reference evaluator is the truth; the fp16 graph's kernels on the GPU IR
interpreter (the sm_80 and the sm_90a plans) must be within 2x of the fp16 reference
evaluator's own error against that truth (max and rms) plus 0.01.  An elementwise check of
the kernels against the fp16 reference alone can fail on such graphs where both round
differently at |y| ~ 50 (an fp16 ulp is 0.03): tests/gpu/gpu_graphs.c's loose_graphs cites
this test.  Needs NumPy (skipped, exit 77, without it).
"""
import os
import re
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIP: NumPy is not installed")
    sys.exit(77)

MODELS = ["gpt2_block_fp16_small.uop", "mlp_fp16_small.uop"]


def run(tinyc, graph, ins, device, out, extra=()):
    """`tinyc run` of graph on .npy inputs ins ({name: path}), the output y into out."""
    cmd = [tinyc, "run", graph, "--device=" + device, "--out", "y=" + out] + list(extra)
    for name, path in ins.items():
        cmd += ["--in", "%s=%s" % (name, path)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), r.stdout[-2000:]))
    return np.load(out).astype(np.float64)


def errors(y, truth):
    d = np.abs(y - truth)
    return d.max(), float(np.sqrt((d ** 2).mean()))


def main():
    tinyc, src = sys.argv[1], sys.argv[2]
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for model in MODELS:
            path = os.path.join(src, "examples", "models", model)
            text = open(path).read()
            f32 = os.path.join(tmp, "f32_" + model)
            with open(f32, "w") as f:
                f.write(text.replace("half", "float"))
            for seed in (1, 2):
                rng = np.random.default_rng(seed)
                in16, in32 = {}, {}
                for name, shape in re.findall(r'BUFFER\(slot=\d+, name="([^"]+)"\) : half\[([0-9,]+)\]', text):
                    a = rng.uniform(-1, 1, [int(v) for v in shape.split(",")])
                    if name.startswith("ln") and name.endswith("weight"):
                        a = 1 + 0.1 * a	# layer-norm gains near 1
                    if name == "x":
                        a = 4 * a	# a residual stream of some size
                    a = a.astype(np.float16)
                    in16[name] = os.path.join(tmp, "%s.16.npy" % name)
                    in32[name] = os.path.join(tmp, "%s.32.npy" % name)
                    np.save(in16[name], a)
                    np.save(in32[name], a.astype(np.float32))
                truth = run(tinyc, f32, in32, "ref", os.path.join(tmp, "t.npy"))
                ref = errors(run(tinyc, path, in16, "ref", os.path.join(tmp, "r.npy")), truth)
                for target in ("sm_80", "sm_90a"):
                    got = errors(run(tinyc, path, in16, "gpuir", os.path.join(tmp, "g.npy"),
                                     ["--target=" + target]), truth)
                    ok = all(g <= 2 * r + 0.01 for g, r in zip(got, ref))
                    print("%s %s seed %d %s: kernels max %.4f rms %.4f, fp16 reference max %.4f rms %.4f "
                          "(against float32; max |y| %.1f)" % ("ok" if ok else "FAILED", model, seed, target,
                                                             got[0], got[1], ref[0], ref[1],
                                                             np.abs(truth).max()))
                    bad |= not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
