"""tinyc's Python API on CUDA with PyTorch tensors exchanged through DLPack (GPU test).

Exits 77 (ctest: skipped) without torch or a CUDA device.  Expected values come from
PyTorch's own kernels (an independent implementation) on the same inputs."""
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))

try:
    import torch
except ImportError:
    print("SKIP: PyTorch is not installed")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: no CUDA device")
    sys.exit(77)
import numpy as np  # noqa: E402
import tinyc  # noqa: E402


def example(name):
    with open(os.path.join(ROOT, "examples", name)) as f:
        return f.read()


def check(name, got, want, tol):
    err = (got.float() - want.float()).abs().max().item()
    print(f"  {name}: max abs error {err:.3g} (tolerance {tol})")
    if not err <= tol:
        print(f"FAIL: {name}")
        sys.exit(1)


dev = torch.device("cuda")
torch.manual_seed(0)

# softmax, float32, sizes read off the tensor at each call
m = tinyc.compile(example("softmax.uop"), device="cuda")
for n, c in ((3, 5), (64, 1000)):
    x = torch.randn(n, c, device=dev)
    y = m(X=x)["Y"]
    assert isinstance(y, torch.Tensor) and y.is_cuda and y.shape == (n, c), y
    check(f"softmax {n}x{c}", y, torch.softmax(x, dim=1), 1e-6)

# NumPy arrays on "cuda": tinyc_program_run, in the GPU worker process (isolate=True, the
# default) and in this process (isolate=False); torch's softmax on the same values
for iso in (True, False):
    mh = tinyc.compile(example("softmax.uop"), device="cuda", isolate=iso, gpu_timeout=30)
    xh = np.random.RandomState(1).rand(7, 33).astype(np.float32)
    yh = mh(X=xh)["Y"]
    assert isinstance(yh, np.ndarray) and yh.shape == (7, 33), yh
    check(f"softmax 7x33 from NumPy (isolate={iso})", torch.from_numpy(yh),
          torch.softmax(torch.from_numpy(xh), dim=1), 1e-6)

# matmul + bias + relu, fp16, compiled for bound sizes, on a non-default stream: the kernels
# must be ordered after the inputs' producer and before the consumer on that stream
M, N, K = 512, 384, 256
mm = tinyc.compile(example("matmul_bias_relu.uop"), bind=f"M={M},N={N},K={K}", device="cuda")
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    x = torch.randn(M, K, device=dev, dtype=torch.half)
    w = torch.randn(K, N, device=dev, dtype=torch.half)
    b = torch.randn(N, device=dev, dtype=torch.half)
    y = mm(X=x, W=w, bias=b)["Y"]
    want = torch.relu(x.float() @ w.float() + b.float()).half()
s.synchronize()
check("matmul_bias_relu 512x384x256 on a side stream", y, want, 0.01 * want.abs().max().item())

# the host path of the same program: NumPy in, NumPy out (copies through the GPU)
out = mm._call_host({"X": x.cpu().numpy(), "W": w.cpu().numpy(), "bias": b.cpu().numpy()})["Y"]
check("matmul_bias_relu host arrays", torch.from_numpy(out), want.cpu(), 0.1)

# a CUDA graph of launches replays correctly
r = mm.bench(warmup=2, iters=5, X=x, W=w, bias=b)
check("matmul_bias_relu after CUDA-graph replay", r["outputs"]["Y"], want, 0.1)
print(f"  bench: {r['ms'] * 1e3:.1f} us per launch ({r['method']})")
print("ok")
