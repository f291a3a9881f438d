#!/usr/bin/env python3
"""Write .npy files with real NumPy and check what tinyc wrote back.

    npy_files.py gen DIR     DIR/<dtype>.npy for every dtype tinyc reads (format 1.0, 2.0 or
                             3.0 in turn, through numpy.lib.format.write_array), DIR/id.uop
                             (one BUFFER -> OUTPUT per dtype), and malformed files
    npy_files.py check DIR   DIR/o_<dtype>.npy must equal the input and be byte for byte what
                             np.save writes for it (format 1.0 header padded to 64 bytes)
    npy_files.py random DIR  DIR/y.npy is the float32 [4,3] output of a --random-inputs run
"""
import io
import sys

import numpy as np

# dtype -> (tinyc name, shape, values); edge values of every type
CASES = [
    ("b1", "bool", (3,), [True, False, True]),
    ("i1", "char", (2, 2), [-128, 127, 0, -1]),
    ("u1", "uchar", (4,), [0, 255, 1, 128]),
    ("i2", "short", (2,), [-32768, 32767]),
    ("u2", "ushort", (1, 2, 1), [0, 65535]),
    ("i4", "int", (), [-2147483648]),
    ("u4", "uint", (3,), [0, 4294967295, 7]),
    ("i8", "long", (2,), [-9223372036854775808, 9223372036854775807]),
    ("u8", "ulong", (2,), [0, 18446744073709551615]),
    ("f2", "half", (2, 4), [0.0, -0.0, 65504.0, -np.inf, np.nan, 2.0 ** -24, 1.0 / 3, 2049.0]),
    ("f4", "float", (5,), [np.float32(3.4028235e38), 1.4e-45, np.nan, np.inf, -1.0 / 3]),
    ("f8", "double", (2, 1), [1e308, 5e-324]),
]


def array(kind, shape, vals):
    dt = np.dtype("|" + kind if kind[1] == "1" else "<" + kind)
    return np.array(vals, dtype=dt).reshape(shape)


def gen(d):
    lines = ["# tinyc-uop v0", "# one BUFFER -> OUTPUT per dtype (written by npy_files.py)"]
    for slot, (kind, tname, shape, vals) in enumerate(CASES):
        a = array(kind, shape, vals)
        with open("%s/%s.npy" % (d, kind), "wb") as f:
            np.lib.format.write_array(f, a, version=(1 + slot % 3, 0))
        dims = "[" + ",".join(str(s) for s in shape) + "]"
        lines.append('%%%s = BUFFER(slot=%d, name="%s") : %s%s' % (kind, slot, kind, tname, dims))
        lines.append('%%o%s = OUTPUT(%%%s, name="o%s") : %s%s' % (kind, kind, kind, tname, dims))
    open("%s/id.uop" % d, "w").write("\n".join(lines) + "\n")
    # malformed and unsupported files
    z = np.zeros((2, 3), np.float32)
    np.save("%s/fortran.npy" % d, np.asfortranarray(z))
    np.save("%s/bigendian.npy" % d, z.astype(">f4"))
    np.save("%s/object.npy" % d, np.array([1, "a"], dtype=object), allow_pickle=True)
    np.save("%s/structured.npy" % d, np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))
    np.save("%s/complex.npy" % d, np.zeros(2, np.complex64))
    np.save("%s/double.npy" % d, z.astype(np.float64))
    np.save("%s/wrongshape.npy" % d, np.zeros((2, 4), np.float32))
    np.save("%s/x_2x5.npy" % d, np.zeros((2, 5), np.float16))
    np.save("%s/w_6x3.npy" % d, np.zeros((6, 3), np.float16))
    np.save("%s/b_3.npy" % d, np.zeros((3,), np.float16))
    b = io.BytesIO()
    np.save(b, z)
    open("%s/truncated.npy" % d, "wb").write(b.getvalue()[:-5])
    open("%s/notnpy.npy" % d, "w").write("just some text\n")


def check(d):
    for kind, tname, shape, vals in CASES:
        want = array(kind, shape, vals)
        got = np.load("%s/o%s.npy" % (d, kind))
        if got.dtype != want.dtype or got.shape != want.shape:
            sys.exit("FAIL %s: %s%s, want %s%s" % (kind, got.dtype, got.shape, want.dtype, want.shape))
        if want.dtype.kind == "f":
            same = np.array_equal(got, want, equal_nan=True) and \
                np.array_equal(np.signbit(got), np.signbit(want))
        else:
            same = np.array_equal(got, want)
        if not same:
            sys.exit("FAIL %s: values %r, want %r" % (kind, got, want))
        b = io.BytesIO()
        np.save(b, want)
        if open("%s/o%s.npy" % (d, kind), "rb").read() != b.getvalue():
            sys.exit("FAIL %s: the file differs from what np.save writes" % kind)
        print("%s: OK" % kind)


def random(d):
    y = np.load("%s/y.npy" % d)
    if y.dtype != np.float32 or y.shape != (4, 3):
        sys.exit("FAIL: %s%s" % (y.dtype, y.shape))
    if not (np.all(y >= -1) and np.all(y < 1) and len(np.unique(y)) == 12):
        sys.exit("FAIL: values %r" % y)
    print("random: OK")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("gen", "check", "random"):
        sys.exit(__doc__)
    globals()[sys.argv[1]](sys.argv[2])
