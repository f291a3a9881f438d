"""The tinygrad MLP of issue 13's script and a check list, shared by
tests/python/test_api_tinygrad.py (CPU) and tests/gpu/capi/test_tinygrad_torch.py (GPU)."""
import numpy as np
from tinygrad import Tensor, nn


class MLP:
    """Linear(64, 128) -> ReLU -> Linear(128, 10)."""

    def __init__(self):
        self.l1, self.l2 = nn.Linear(64, 128), nn.Linear(128, 10)

    def __call__(self, x):
        return self.l2(self.l1(x).relu())


def seeded_mlp(rng):
    """(model, its input placeholder x [16, 64], its state dict realized, the NumPy weights):
    seeded NumPy weights copied into tinygrad, so no random-number kernel runs."""
    shapes = {"l1.weight": (128, 64), "l1.bias": (128,), "l2.weight": (10, 128), "l2.bias": (10,)}
    w = {k: (rng.standard_normal(s) * 0.1).astype(np.float32) for k, s in shapes.items()}
    model = MLP()
    model.l1.weight, model.l1.bias = Tensor(w["l1.weight"]), Tensor(w["l1.bias"])
    model.l2.weight, model.l2.bias = Tensor(w["l2.weight"]), Tensor(w["l2.bias"])
    params = nn.state.get_state_dict(model)
    Tensor.realize(*params.values())
    return model, Tensor.empty(16, 64), params, w


def numpy_mlp(w, x):
    """The MLP in NumPy (float64): the reference where tinygrad cannot run its CPU backend."""
    h = np.maximum(x.astype(np.float64) @ w["l1.weight"].T + w["l1.bias"], 0)
    return h @ w["l2.weight"].T + w["l2.bias"]


class Checks:
    """Named expectations; status() is the exit status."""

    def __init__(self):
        self.failed = []

    def __call__(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.failed.append(what)

    def status(self):
        print("passed" if not self.failed else f"{len(self.failed)} failed")
        return 1 if self.failed else 0
