"""tinyc's Python API (python/tinyc/api.py) on the CPU devices, against NumPy.

Run by ctest with TINYC_LIB pointing at the build's libtinyc.so.  Every expected value is
computed by NumPy here, independently of tinyc."""
import os
import sys
import unittest

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
import tinyc  # noqa: E402


def example(name):
    with open(os.path.join(ROOT, "examples", name)) as f:
        return f.read()


class CpuApi(unittest.TestCase):
    def test_softmax_every_cpu_device(self):
        rng = np.random.default_rng(1)
        x = rng.standard_normal((5, 7)).astype(np.float32)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        want = e / e.sum(axis=1, keepdims=True)
        for device in ("cpu", "ref", "gpuir"):
            m = tinyc.compile(example("softmax.uop"), device=device)
            y = m(X=x)["Y"]
            self.assertEqual(y.shape, (5, 7))
            self.assertEqual(y.dtype, np.float32)
            np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6, err_msg=device)
        # the sizes follow each call's inputs
        x2 = rng.standard_normal((2, 3)).astype(np.float32)
        e2 = np.exp(x2 - x2.max(axis=1, keepdims=True))
        np.testing.assert_allclose(m(X=x2)["Y"], e2 / e2.sum(axis=1, keepdims=True), rtol=1e-5)

    def test_matmul_bias_relu_fp16(self):
        rng = np.random.default_rng(2)
        x = rng.uniform(-1, 1, (8, 16)).astype(np.float16)
        w = rng.uniform(-1, 1, (16, 12)).astype(np.float16)
        b = rng.uniform(-1, 1, (12,)).astype(np.float16)
        # fp16 inputs, fp32 accumulation, one rounding to fp16 at the output
        want = np.maximum(x.astype(np.float32) @ w.astype(np.float32) + b.astype(np.float32),
                          0).astype(np.float16)
        for device, bind in (("cpu", {"M": 8, "N": 12, "K": 16}), ("gpuir", "M=8,N=12,K=16")):
            m = tinyc.compile(example("matmul_bias_relu.uop"), bind=bind, device=device)
            self.assertEqual([t.name for t in m.inputs], ["X", "W", "bias"])
            self.assertEqual(m.outputs[0].shape, (8, 12))
            y = m(X=x, W=w, bias=b)["Y"]
            self.assertEqual(y.dtype, np.float16)
            np.testing.assert_allclose(y.astype(np.float32), want.astype(np.float32),
                                       rtol=2e-3, atol=2e-3, err_msg=device)

    def test_text_and_bench(self):
        m = tinyc.compile(example("matmul_bias_relu.uop"), bind="M=64,N=64,K=64")
        self.assertIn("kernel", m.dump("schedule"))
        self.assertIn('extern "C" __global__', m.cuda_source())
        self.assertIn("REDUCE", m.dump("uop"))
        x = np.ones((64, 64), np.float16)
        r = m.bench(warmup=1, iters=3, X=x, W=x, bias=np.zeros(64, np.float16))
        self.assertGreater(r["ms"], 0)

    def test_errors(self):
        with self.assertRaises(tinyc.TinycError) as cm:
            tinyc.compile('%0 = BUFFER(slot=0, name="X") : float[N]\n%1 = FROB(%0) : float[N]\n',
                          name="bad.uop")
        self.assertEqual(cm.exception.kind, "UnknownOp")
        self.assertIn("bad.uop:2:", str(cm.exception))
        m = tinyc.compile(example("softmax.uop"))
        with self.assertRaises(TypeError):
            m(X=np.zeros((2, 2), np.float64))       # wrong dtype
        with self.assertRaises(TypeError):
            m(Z=np.zeros((2, 2), np.float32))       # unknown name
        m2 = tinyc.compile(example("matmul_bias_relu.uop"))
        x = np.zeros((4, 3), np.float16)
        with self.assertRaises(tinyc.TinycError) as cm:
            m2(X=x, W=np.zeros((5, 2), np.float16), bias=np.zeros(2, np.float16))  # K: 3 vs 5
        self.assertEqual(cm.exception.kind, "InconsistentBinding")
        with self.assertRaises(ValueError):
            tinyc.compile(example("softmax.uop"), device="tpu")
        with self.assertRaises(tinyc.TinycError) as cm:     # a negative GPU time limit
            tinyc.compile(example("softmax.uop"), device="cuda", gpu_timeout=-1)
        self.assertEqual(cm.exception.status, "TINYC_ERROR_USAGE")
        self.assertIn("0 (none) or more seconds", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
