#!/usr/bin/env python3
"""Bridge tests of the interface: errors name the unsupported op, names and slots are as
documented, the output is deterministic, the committed examples/models/*.uop are what
tools/export-models writes, the `python -m tinyc.export` front door, and that the
comparison of test_bridge.py does fail on a wrong result.

usage: test_bridge_api.py TINYC     exit status 0 passed, 1 failed, 77 (SKIP) without tinygrad
"""

import filecmp
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "tools"), HERE]

try:
    import numpy as np
    os.environ.setdefault("DEV", "CPU")
    from tinygrad import Tensor, dtypes
except ImportError as e:
    print(f"SKIP: {e} (tools/install-deps installs tinygrad==0.14.0)")
    sys.exit(77)

import tinyc
import test_bridge

FAILS = []


def check(cond, what):
    """Record a failed expectation."""
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def raises(fn, *words):
    """Whether fn() raises BridgeError with every word in its message."""
    try:
        fn()
    except tinyc.BridgeError as e:
        return all(w in str(e) for w in words)
    return False


def test_errors():
    """Unsupported ops raise BridgeError naming the op."""
    r = Tensor.rand(4, 4)		# a random-number graph: THREEFRY
    check(raises(lambda: tinyc.from_tinygrad(r + 1), "THREEFRY"),
          "an unrealized Tensor.rand names THREEFRY")
    x = Tensor.empty(4, 4)
    i = Tensor.empty(4, dtype=dtypes.int32)
    check(raises(lambda: tinyc.from_tinygrad(i ** i, [i]), "POW"),
          "integer POW with a tensor exponent names POW")
    check(raises(lambda: tinyc.from_tinygrad(x, {"bad name": x}), "bad tensor name"),
          "a name with a space is refused")
    check(raises(lambda: tinyc.from_tinygrad([], [x]), "no outputs"), "no outputs is an error")


def test_names_and_slots():
    """Inputs take slots in the order given, unnamed buffers get buf0.., outputs their names."""
    a, b = Tensor.empty(2, 3), Tensor.empty(3)
    w = Tensor.empty(2, 3).realize()
    text = tinyc.from_tinygrad({"s": a + b, "t": (a * w).sum(1)}, {"b": b, "a": a})
    lines = text.splitlines()
    check('BUFFER(slot=0, name="b") : float[3]' in lines[2], "first input gets slot 0")
    check('BUFFER(slot=1, name="a") : float[2,3]' in lines[3], "second input gets slot 1")
    check('BUFFER(slot=2, name="buf0") : float[2,3]' in lines[4], "an unnamed buffer is buf0")
    check(lines[-2].endswith('name="s") : float[2,3]') and
          lines[-1].endswith('name="t") : float[2]'), "outputs in the order given")
    again = tinyc.from_tinygrad({"s": a + b, "t": (a * w).sum(1)}, {"b": b, "a": a})
    check(text == again, "two exports of one graph give the same text")


def test_weak_consts():
    """A weak constant shared by a half and a float computation is emitted in each dtype."""
    h = Tensor.empty(4, dtype=dtypes.half)
    f = Tensor.empty(4)
    text = tinyc.from_tinygrad({"h": h + 3, "f": f + 3}, {"h_in": h, "f_in": f})
    check("CONST(3.0) : half[]" in text and "CONST(3.0) : float[]" in text,
          "a weak constant takes the dtype of each user")


def test_exports_match():
    """examples/models/*.uop are exactly what tools/export-models writes now."""
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "export-models"), tmp],
                           capture_output=True, text=True)
        check(p.returncode == 0, f"tools/export-models runs ({p.stderr.strip()[:300]})")
        names = sorted(os.listdir(tmp))
        committed = os.path.join(ROOT, "examples", "models")
        same = [n for n in names if filecmp.cmp(os.path.join(tmp, n),
                                                os.path.join(committed, n), shallow=False)
                if os.path.exists(os.path.join(committed, n))]
        check(len(names) == 10 and same == names,
              f"examples/models matches tools/export-models ({len(same)} of {len(names)} same)")


def test_front_door(tinyc_bin):
    """python -m tinyc.export on examples/tinygrad/mlp.py; its errors and exit statuses."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    script = os.path.join(ROOT, "examples", "tinygrad", "mlp.py")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "mlp.uop")
        p = subprocess.run([sys.executable, "-m", "tinyc.export", script, "-o", out, "--",
                            "--rows", "5"], capture_output=True, text=True, env=env)
        check(p.returncode == 0, f"the front door exports mlp.py ({p.stderr.strip()[:300]})")
        if p.returncode == 0:
            r = subprocess.run([tinyc_bin, "run", out, "--random-inputs", "1", "--check"],
                               capture_output=True, text=True)
            check(r.returncode == 0 and "float[5,16]" in open(out).read(),
                  "tinyc runs the exported mlp.py (rows=5) and agrees with its reference")
        bad = os.path.join(tmp, "bad.py")
        with open(bad, "w") as f:
            f.write("from tinygrad import Tensor\n"
                    "def export():\n    return Tensor.rand(3) * 2, []\n")
        p = subprocess.run([sys.executable, "-m", "tinyc.export", bad], capture_output=True,
                           text=True, env=env)
        check(p.returncode == 1 and "error: BridgeError: unsupported op THREEFRY" in p.stderr,
              "an unsupported op is an error with exit status 1")
        nofn = os.path.join(tmp, "nofn.py")
        with open(nofn, "w") as f:
            f.write("x = 1\n")
        p = subprocess.run([sys.executable, "-m", "tinyc.export", nofn], capture_output=True,
                           text=True, env=env)
        check(p.returncode == 1 and "NoExportFunction" in p.stderr,
              "a script without export() is an error with exit status 1")
        p = subprocess.run([sys.executable, "-m", "tinyc.export"], capture_output=True,
                           text=True, env=env)
        check(p.returncode == 2, "no script is a usage error (exit status 2)")


def test_compare_fails(tinyc_bin):
    """The comparison of test_bridge.py reports a wrong result: tinyc computes x + 1 and the
    expected values are x + 2."""
    x = Tensor.empty(3, 4)
    text = tinyc.from_tinygrad({"y": x + 1}, {"x": x})
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "g.uop")
        with open(path, "w") as f:
            f.write(text)
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        np.save(os.path.join(tmp, "x.npy"), a)
        r = subprocess.run([tinyc_bin, "run", path, "--in", f"x={tmp}/x.npy",
                            "--out", f"y={tmp}/y.npy"], capture_output=True, text=True)
        check(r.returncode == 0, "tinyc runs x + 1")
        got = np.load(os.path.join(tmp, "y.npy"))
        check(test_bridge.compare(got, a + 1, 1e-6, 1e-6) == [], "x + 1 agrees with x + 1")
        check(len(test_bridge.compare(got, a + 2, 1e-6, 1e-6)) == 1,
              "x + 1 is reported as differing from x + 2")


def main(argv):
    """Run every check; the exit status."""
    if len(argv) != 2:
        print(__doc__)
        return 2
    test_errors()
    test_names_and_slots()
    test_weak_consts()
    test_exports_match()
    test_front_door(argv[1])
    test_compare_fails(argv[1])
    print(f"{len(FAILS)} failed" if FAILS else "all passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
