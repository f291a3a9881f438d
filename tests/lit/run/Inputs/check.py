#!/usr/bin/env python3
"""Independent NumPy checks of `tinyc run` on the examples.

    check.py gen NAME DIR SEED [SYM=VALUE ...]   write random inputs DIR/<input>.npy
    check.py check NAME DIR                      compare DIR/<output>.npy with NumPy

The expected results are computed here with NumPy, not with tinyc.  Where the reference
semantics (DESIGN.md section 2) fix the order of a float32 reduction (sequential, in index
order), the NumPy code below accumulates in the same order with float32 arithmetic, so the
results must agree bit for bit; each example is also compared with a float64 computation
under a tolerance derived from float32 rounding, which catches errors that an identical
order of operations would share.
"""
import sys

import numpy as np


def gen(name, d, seed, syms):
    rng = np.random.default_rng(seed)

    def uniform(shape, dtype):
        return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)

    if name == "matmul_bias_relu":
        M, N, K = syms["M"], syms["N"], syms["K"]
        ins = {"X": uniform((M, K), np.float16), "W": uniform((K, N), np.float16),
               "bias": uniform((N,), np.float16)}
    elif name == "transpose":
        ins = {"X": uniform((syms["M"], syms["N"]), np.float32)}
    elif name == "mean_pool16":
        ins = {"X": uniform((syms["B"], 256), np.float32)}
    elif name == "softmax":
        # a wide range so that the max subtraction matters
        ins = {"X": (uniform((syms["N"], syms["C"]), np.float32) * 20).astype(np.float32)}
    elif name == "tanh":
        # [-12, 12] reaches saturation; then zeros, infinities, NaN, tiny values
        N = syms["N"]
        x = (uniform((N,), np.float32) * 12).astype(np.float32)
        x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-8, 0.5]
        ins = {"x": x, "h": x.astype(np.float16)}
    else:
        sys.exit("unknown example " + name)
    for k, v in ins.items():
        np.save("%s/%s.npy" % (d, k), v)


def seq_sum_f32(terms):
    """Sum float32 arrays one after another in float32 (the reference order)."""
    acc = np.zeros_like(terms[0], dtype=np.float32)
    for t in terms:
        acc = (acc + t.astype(np.float32)).astype(np.float32)
    return acc


def expect(ok, what):
    if not ok:
        sys.exit("FAIL: " + what)


def check_tanh(load):
    """y = tanh(x) in float32, yh = tanh(h) in half: NumPy's float64 tanh rounded once to
    float32 (half: computed in float32, then rounded to half), within one float32 ulp (libm's
    double tanh is within an ulp of the true value; the rounding to float32 is exact)."""
    x, h, y, yh = load("x"), load("h"), load("y"), load("yh")
    expect(y.dtype == np.float32 and y.shape == x.shape, "y dtype/shape")
    expect(yh.dtype == np.float16 and yh.shape == h.shape, "yh dtype/shape")
    ref = np.tanh(x.astype(np.float64)).astype(np.float32)
    nan = np.isnan(ref)
    expect(np.array_equal(np.isnan(y), nan), "tanh: NaN where NumPy has none (or not)")
    ulp = np.spacing(np.abs(ref[~nan]))
    err = np.abs(y[~nan].astype(np.float64) - ref[~nan].astype(np.float64))
    expect(np.all(err <= ulp), "tanh: %d values over 1 ulp from NumPy" % int((err > ulp).sum()))
    expect(np.array_equal(np.signbit(y[~nan]), np.signbit(ref[~nan])), "tanh: sign of zero")
    href = np.tanh(h.astype(np.float64)).astype(np.float32).astype(np.float16)
    hn = np.isnan(href)
    expect(np.array_equal(np.isnan(yh), hn), "tanh half: NaN")
    herr = np.abs(yh[~hn].astype(np.float64) - href[~hn].astype(np.float64))
    expect(np.all(herr <= np.spacing(np.abs(href[~hn]))), "tanh half: over 1 ulp")


def check(name, d):
    load = lambda k: np.load("%s/%s.npy" % (d, k))
    if name == "tanh":
        check_tanh(load)
        print("tanh: OK")
        return
    y = load("Y")
    if name == "matmul_bias_relu":
        X, W, b = load("X"), load("W"), load("bias")
        expect(y.dtype == np.float16 and y.shape == (X.shape[0], W.shape[1]), "dtype/shape")
        # products of two halves are exact in float32 (11+11 significant bits <= 24)
        terms = [X[:, k, None].astype(np.float32) * W[None, k, :].astype(np.float32)
                 for k in range(X.shape[1])]
        acc = seq_sum_f32(terms)
        ref = np.maximum(acc + b.astype(np.float32), np.float32(0)).astype(np.float16)
        expect(np.array_equal(y, ref), "matmul_bias_relu differs from the sequential "
               "float32 reference at %d places" % int((y != ref).sum()))
        # float64: |X|,|W| < 1, so the float32 sum is off by at most K * 2^-24 * K; after
        # rounding to half the results differ by at most one half ulp (2^-11 relative)
        # plus that
        ref64 = np.maximum(X.astype(np.float64) @ W.astype(np.float64) + b, 0)
        K = X.shape[1]
        expect(np.allclose(y.astype(np.float64), ref64, rtol=2.0 ** -10,
                           atol=K * K * 2.0 ** -24 + 2.0 ** -24), "matmul vs float64")
    elif name == "transpose":
        X = load("X")
        expect(y.dtype == np.float32 and np.array_equal(y, X.T), "transpose")
    elif name == "mean_pool16":
        X = load("X")
        B = X.shape[0]
        g = X.reshape(B, 16, 16)
        ref = (seq_sum_f32([g[:, :, j] for j in range(16)]) * np.float32(0.0625))
        expect(y.dtype == np.float32 and y.shape == (B, 16), "dtype/shape")
        expect(np.array_equal(y, ref), "mean_pool16 differs from the sequential sum")
        # float64: 16 float32 additions of values < 1 err by at most 16 * 16 * 2^-24
        expect(np.allclose(y, X.astype(np.float64).reshape(B, 16, 16).mean(-1), rtol=0,
                           atol=256 * 2.0 ** -24), "mean_pool16 vs float64")
    elif name == "softmax":
        X = load("X")
        expect(y.dtype == np.float32 and y.shape == X.shape, "dtype/shape")
        # float64 reference; float32 rounding of x - m, the scale, exp2 (arguments up to
        # 40 * 1.44 = 58, so a relative input error of 2^-24 moves exp2 by 58 * ln2 * 2^-24),
        # a sequential sum of C terms (C * 2^-24) and the division: rtol 2^-24 * (C + 64)
        C = X.shape[1]
        x64 = X.astype(np.float64)
        e = np.exp(x64 - x64.max(1, keepdims=True))
        ref64 = e / e.sum(1, keepdims=True)
        expect(np.allclose(y, ref64, rtol=(C + 64) * 2.0 ** -24, atol=1e-30),
               "softmax vs float64: max rel err %g" %
               float(np.max(np.abs(y - ref64) / np.maximum(ref64, 1e-30))))
        expect(np.allclose(y.sum(1), 1.0, rtol=0, atol=(C + 64) * 2.0 ** -24), "row sums")
    else:
        sys.exit("unknown example " + name)
    print("%s: OK" % name)


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == "gen":
        syms = dict((kv.split("=")[0], int(kv.split("=")[1])) for kv in sys.argv[5:])
        gen(sys.argv[2], sys.argv[3], int(sys.argv[4]), syms)
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
