"""tinygrad 0.14.0 tensor graphs -> tinyc-uop v0 text (docs/python.md, docs/uop-format.md).

tinygrad builds a UOp DAG before it realizes a Tensor.  This module walks that DAG from
the outputs (an explicit work list: no recursion on graph depth) and writes one tinyc line
per operation.  The differences it bridges:

  - movement ops carry their sizes as source UOps (STACK of CONST); EXPAND prepends axes;
    PAD and SHRINK take (offset, size) pairs;
  - REDUCE reduces the leading `n` axes (tinygrad permutes the reduced axes to the front);
  - constants and some arithmetic on them have weak dtypes (weakint, weakfloat) that take
    the dtype of the value they meet, so a node is emitted once per dtype it is needed in;
  - ops tinyc lacks (CDIV, CMOD, FLOORDIV, FLOORMOD, POW, MULACC, data STACK, the
    AFTER/STORE of Tensor.full) are spelled with tinyc ops.

Buffers become BUFFER inputs: first the tensors given as `inputs`, then those named in
`params`, then any other buffer in the order the walk meets it (named buf0, buf1, ...).
"""

import math
import re

from tinygrad import Tensor, dtypes
from tinygrad.dtype import least_upper_dtype, strong_dtype
from tinygrad.uop.ops import Ops, UOp

__all__ = ["from_tinygrad", "BridgeError"]


_NAME = re.compile(r"[A-Za-z0-9_.-]+")	# tensor names (they are --in/--out NAME=)


class BridgeError(Exception):
    """A tinygrad graph the bridge cannot express in tinyc-uop v0."""


# tinygrad dtype -> tinyc dtype name
_DTYPE_NAMES = {
    dtypes.bool: "bool", dtypes.int8: "char", dtypes.uint8: "uchar",
    dtypes.int16: "short", dtypes.uint16: "ushort", dtypes.int32: "int",
    dtypes.uint32: "uint", dtypes.int64: "long", dtypes.uint64: "ulong",
    dtypes.float16: "half", dtypes.bfloat16: "bfloat16", dtypes.float32: "float",
    dtypes.float64: "double",
}

# tinygrad ALU ops that are one tinyc op of the same name
_UNARY = {Ops.EXP2: "EXP2", Ops.LOG2: "LOG2", Ops.SIN: "SIN", Ops.SQRT: "SQRT",
          Ops.RECIPROCAL: "RECIPROCAL", Ops.NEG: "NEG", Ops.TRUNC: "TRUNC"}
_BINARY = {Ops.ADD: "ADD", Ops.SUB: "SUB", Ops.MUL: "MUL", Ops.FDIV: "FDIV", Ops.MAX: "MAX",
           Ops.CDIV: "IDIV", Ops.CMOD: "MOD", Ops.AND: "AND", Ops.OR: "OR", Ops.XOR: "XOR",
           Ops.SHL: "SHL", Ops.SHR: "SHR"}
_COMPARE = {Ops.CMPLT: "CMPLT", Ops.CMPNE: "CMPNE", Ops.CMPEQ: "CMPEQ"}
_MOVEMENT = (Ops.RESHAPE, Ops.EXPAND, Ops.PERMUTE, Ops.PAD, Ops.SHRINK, Ops.FLIP)
_PASS = (Ops.DETACH, Ops.CONTIGUOUS_BACKWARD, Ops.COPY)	# value passes through
_REDOPS = {Ops.ADD: "ADD", Ops.MAX: "MAX", Ops.MUL: "MUL"}


def _dtype_name(dt):
    """The tinyc spelling of a (strong) tinygrad dtype."""
    name = _DTYPE_NAMES.get(dt)
    if name is None:
        raise BridgeError(f"dtype {dt} has no tinyc equivalent")
    return name


def _is_weak(dt):
    """Whether dt is one of tinygrad's weak dtypes (a literal's type before it meets a value)."""
    return dt in dtypes.weaks


def _int_shape(shape, what):
    """The shape as a tuple of ints >= 1; symbolic (Variable) sizes are not supported yet."""
    out = []
    for s in shape:
        if not isinstance(s, int):
            raise BridgeError(f"{what}: symbolic size {s} is not supported")
        if s < 1:
            raise BridgeError(f"{what}: a size-0 axis cannot be written in tinyc-uop v0")
        out.append(s)
    return tuple(out)


def _broadcast(*shapes):
    """Right-aligned broadcast of shapes (both tinygrad's and tinyc's rule)."""
    rank = max(len(s) for s in shapes)
    full = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    out = []
    for sizes in zip(*full):
        rest = {s for s in sizes if s != 1}
        if len(rest) > 1:
            raise BridgeError(f"shapes {shapes} do not broadcast")
        out.append(rest.pop() if rest else 1)
    return tuple(out)


def _format_literal(value, dt):
    """A CONST literal of dtype dt in tinyc's syntax."""
    if dt == dtypes.bool:
        return "true" if value else "false"
    if dtypes.is_int(dt):
        if isinstance(value, float) and not value.is_integer():
            raise BridgeError(f"constant {value} does not fit integer dtype {dt}")
        return str(int(value))
    v = float(value)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def _const_value(u):
    """The scalar a UOp holds when it is a CONST seen through movement ops, else None."""
    while u.op in _MOVEMENT or u.op in _PASS:
        u = u.src[0]
    if u.op is Ops.CONST and isinstance(u.arg, (bool, int, float)):
        return u.arg
    return None


class _Node:
    """One tinyc line under construction."""
    __slots__ = ("op", "srcs", "attrs", "dtype", "shape", "lit")

    def __init__(self, op, srcs, attrs, dtype, shape, lit=None):
        self.op = op		# tinyc op name
        self.srcs = srcs	# operand indices into the node list
        self.attrs = attrs	# attribute text, e.g. ['shape=[2,3]']
        self.dtype = dtype	# tinygrad (strong) dtype of the line
        self.shape = shape	# tuple of ints
        self.lit = lit		# CONST: the literal text


class _Builder:
    """Collects tinyc lines; deduplicates identical lines so shared subgraphs stay shared."""

    def __init__(self):
        self.nodes = []		# list of _Node, in topological order
        self.dedup = {}		# (op, srcs, attrs, dtype, shape, lit) -> index

    def add(self, op, srcs, attrs, dtype, shape, lit=None):
        """Append a line (or find the identical one) and return its index."""
        key = (op, tuple(srcs), tuple(attrs), dtype, tuple(shape), lit)
        hit = self.dedup.get(key)
        if hit is not None:
            return hit
        self.nodes.append(_Node(op, list(srcs), list(attrs), dtype, tuple(shape), lit))
        self.dedup[key] = len(self.nodes) - 1
        return len(self.nodes) - 1

    def dtype(self, i):
        """The dtype of line i."""
        return self.nodes[i].dtype

    def shape(self, i):
        """The shape of line i."""
        return self.nodes[i].shape

    # small helpers that compute the result shape tinyc expects

    def const(self, value, dt):
        """A scalar CONST of dtype dt."""
        return self.add("CONST", [], [], dt, (), _format_literal(value, dt))

    def cast(self, x, dt):
        """x in dtype dt (x itself when it has it)."""
        if self.dtype(x) == dt:
            return x
        return self.add("CAST", [x], [], dt, self.shape(x))

    def unary(self, op, x):
        """An elementwise op of one operand."""
        return self.add(op, [x], [], self.dtype(x), self.shape(x))

    def binary(self, op, a, b):
        """An elementwise op of two operands (broadcast); comparisons give bool."""
        shape = _broadcast(self.shape(a), self.shape(b))
        dt = dtypes.bool if op in ("CMPLT", "CMPNE", "CMPEQ") else self.dtype(a)
        return self.add(op, [a, b], [], dt, shape)

    def where(self, c, t, f):
        """WHERE(c, t, f), broadcast."""
        shape = _broadcast(self.shape(c), self.shape(t), self.shape(f))
        return self.add("WHERE", [c, t, f], [], self.dtype(t), shape)

    def reshape(self, x, shape):
        """x reshaped (x itself when the shape is the same)."""
        shape = tuple(shape)
        if self.shape(x) == shape:
            return x
        return self.add("RESHAPE", [x], [f"shape={_list(shape)}"], self.dtype(x), shape)

    def expand(self, x, shape):
        """x broadcast to shape, same rank (x itself when the shape is the same)."""
        shape = tuple(shape)
        if self.shape(x) == shape:
            return x
        return self.add("EXPAND", [x], [f"shape={_list(shape)}"], self.dtype(x), shape)

    def pad(self, x, pads):
        """x zero-padded by (before, after) pairs (x itself when all are 0)."""
        if all(a == 0 and b == 0 for a, b in pads):
            return x
        shape = tuple(s + a + b for s, (a, b) in zip(self.shape(x), pads))
        text = "[" + ",".join(f"[{a},{b}]" for a, b in pads) + "]"
        return self.add("PAD", [x], [f"pads={text}"], self.dtype(x), shape)


def _list(xs):
    """[a,b,c] without spaces."""
    return "[" + ",".join(str(x) for x in xs) + "]"


class _Bridge:
    """The state of one export: leaves, emitted nodes, and the memo of lowered UOps."""

    def __init__(self, leaves):
        self.b = _Builder()
        self.leaves = leaves	# UOp -> name, for tensors given as inputs or params
        self.leaf_nodes = {}	# name -> node index of its BUFFER line
        self.leaf_order = []	# names in the order they are first used
        self.auto = 0		# next automatic buffer number
        self.memo = {}		# (UOp, dtype or None) -> node index

    # -- dtype resolution ---------------------------------------------------------------

    def concrete(self, u, want):
        """The dtype u is emitted in when its user wants `want` (weak dtypes follow want)."""
        if _is_weak(u.dtype):
            if want is not None and not _is_weak(want) and want != dtypes.void:
                return want
            return strong_dtype(u.dtype)
        return u.dtype

    def key(self, u, want):
        """The memo key of u needed in dtype want: strong nodes have one form only."""
        return (u, self.concrete(u, want) if _is_weak(u.dtype) else None)

    def compare_dtype(self, a, b):
        """The dtype a comparison's operands are compared in (tinygrad's promotion)."""
        if _is_weak(a.dtype) and not _is_weak(b.dtype):
            return b.dtype
        if _is_weak(b.dtype) and not _is_weak(a.dtype):
            return a.dtype
        return strong_dtype(least_upper_dtype(a.dtype, b.dtype))

    def deps(self, u, dt):
        """The data operands of u (emitted in dtype dt) as (UOp, wanted dtype) pairs."""
        op = u.op
        if op in _MOVEMENT or op in _PASS or op in (Ops.CONTIGUOUS, Ops.REDUCE):
            return [(u.src[0], dt)]
        if op in _UNARY:
            return [(u.src[0], dt)]
        if op in _BINARY or op in (Ops.FLOORDIV, Ops.FLOORMOD, Ops.MULACC):
            if op in (Ops.SHL, Ops.SHR):
                return [(u.src[0], dt), (u.src[1], dt)]
            return [(s, dt) for s in u.src]
        if op is Ops.POW:
            if _const_value(u.src[1]) is not None:
                return [(u.src[0], dt)]
            return [(u.src[0], dt), (u.src[1], dt)]
        if op in _COMPARE:
            cdt = self.compare_dtype(u.src[0], u.src[1])
            return [(u.src[0], cdt), (u.src[1], cdt)]
        if op is Ops.WHERE:
            return [(u.src[0], dtypes.bool), (u.src[1], dt), (u.src[2], dt)]
        if op in (Ops.CAST, Ops.BITCAST):
            return [(u.src[0], None)]
        if op is Ops.STACK:
            return [(s, dt) for s in u.src]
        if op is Ops.AFTER:
            return [(self.stored_value(u), dt)]
        return []

    def stored_value(self, u):
        """The value of AFTER(buf, STORE(buf, value)) -- tinygrad's Tensor.full/ones/zeros."""
        if len(u.src) == 2 and u.src[1].op is Ops.STORE and u.src[1].src[0] is u.src[0]:
            return u.src[1].src[1]
        raise BridgeError("unsupported op AFTER (an assignment into a buffer); realize it "
                          "first or pass the tensor as an input")

    # -- leaves ---------------------------------------------------------------------------

    def leaf(self, u, name):
        """The BUFFER line of input `name` (shape and dtype of u), made on first use."""
        if name not in self.leaf_nodes:
            dt = u.dtype
            if _is_weak(dt):
                raise BridgeError(f"input {name} has weak dtype {dt}")
            shape = _int_shape(u.shape, f"input {name}")
            self.leaf_nodes[name] = self.b.add("BUFFER", [], [name], dt, shape)
            self.leaf_order.append(name)
        return self.leaf_nodes[name]

    def leaf_name(self, u):
        """The name of u when it is an input: a given tensor, or an unnamed buffer."""
        name = self.leaves.get(u)
        if name is not None:
            return name
        if u.op is Ops.RESHAPE and u.src[0].op is Ops.BUFFER and u.src[0] not in self.leaves:
            return self.auto_name(u)
        if u.op is Ops.BUFFER:
            return self.auto_name(u)
        return None

    def auto_name(self, u):
        """An automatic name (buf0, buf1, ...) for a buffer nobody named."""
        while True:
            name = f"buf{self.auto}"
            self.auto += 1
            if name not in self.leaves.values():
                break
        self.leaves[u] = name
        return name

    # -- the walk -------------------------------------------------------------------------

    def emit(self, root, want=None):
        """Lower the graph under root; returns the node index of root.  An explicit work list
        visits each (UOp, dtype) after its operands."""
        rkey = self.key(root, want)
        stack = [(root, want, False)]
        while stack:
            u, w, ready = stack.pop()
            k = self.key(u, w)
            if k in self.memo:
                continue
            name = self.leaf_name(u)
            if name is not None:
                self.memo[k] = self.leaf(u, name)
                continue
            dt = self.concrete(u, w)
            deps = self.deps(u, dt)
            if not ready:
                stack.append((u, w, True))
                for s, sw in reversed(deps):
                    if self.key(s, sw) not in self.memo:
                        stack.append((s, sw, False))
                continue
            srcs = [self.memo[self.key(s, sw)] for s, sw in deps]
            self.memo[k] = self.lower(u, dt, srcs)
        return self.memo[rkey]

    def lower(self, u, dt, srcs):
        """Emit the tinyc lines of one tinygrad UOp whose operands are lowered to srcs."""
        b, op = self.b, u.op
        if op is Ops.CONST:
            if not isinstance(u.arg, (bool, int, float)):
                raise BridgeError(f"unsupported constant {u.arg!r} (an uninitialised Tensor.empty "
                                  f"value?)")
            return b.const(u.arg, dt)
        if op in _PASS:
            return srcs[0]
        if op is Ops.CONTIGUOUS:
            return b.add("CONTIGUOUS", [srcs[0]], [], dt, b.shape(srcs[0]))
        if op is Ops.AFTER:
            return b.reshape(srcs[0], _int_shape(u.shape, "AFTER"))
        if op in _MOVEMENT:
            return self.lower_movement(u, srcs[0])
        if op is Ops.REDUCE:
            return self.lower_reduce(u, dt, srcs[0])
        if op in (Ops.CAST, Ops.BITCAST):
            x = srcs[0]
            if b.dtype(x) == dt and op is Ops.CAST:
                return x
            if op is Ops.BITCAST and b.dtype(x).itemsize != dt.itemsize:
                raise BridgeError(f"unsupported op BITCAST between sizes ({b.dtype(x)} to {dt})")
            return b.add(op.name, [x], [], dt, b.shape(x))
        if op in _COMPARE:
            cdt = self.compare_dtype(u.src[0], u.src[1])
            return b.binary(_COMPARE[op], b.cast(srcs[0], cdt), b.cast(srcs[1], cdt))
        if op is not Ops.WHERE:
            srcs = [b.cast(s, dt) for s in srcs]
        if op in _UNARY:
            return b.unary(_UNARY[op], srcs[0])
        if op in _BINARY:
            return b.binary(_BINARY[op], srcs[0], srcs[1])
        if op is Ops.WHERE:
            return b.where(srcs[0], b.cast(srcs[1], dt), b.cast(srcs[2], dt))
        if op is Ops.MULACC:
            return b.binary("ADD", b.binary("MUL", srcs[0], srcs[1]), srcs[2])
        if op in (Ops.FLOORDIV, Ops.FLOORMOD):
            return self.lower_floor(op, dt, srcs[0], srcs[1])
        if op is Ops.POW:
            return self.lower_pow(u, dt, srcs)
        if op is Ops.STACK:
            return self.lower_stack(u, dt, srcs)
        raise BridgeError(f"unsupported op {op.name}")

    def lower_movement(self, u, x):
        """RESHAPE, EXPAND (tinygrad prepends axes), PERMUTE, PAD, SHRINK, FLIP."""
        b, op = self.b, u.op
        xs = b.shape(x)
        out = _int_shape(u.shape, op.name)
        if op is Ops.RESHAPE:
            return b.reshape(x, out)
        if op is Ops.EXPAND:
            x = b.reshape(x, (1,) * (len(out) - len(xs)) + xs)
            return b.expand(x, out)
        if op is Ops.PERMUTE:
            perm = tuple(u.marg)
            if perm == tuple(range(len(perm))):
                return x
            return b.add("PERMUTE", [x], [f"perm={_list(perm)}"], b.dtype(x), out)
        if op is Ops.PAD:
            pads = [(o, sz - o - s) for s, (o, sz) in zip(xs, _pairs(u.marg, "PAD"))]
            return b.pad(x, pads)
        if op is Ops.SHRINK:
            bounds = [(o, o + sz) for o, sz in _pairs(u.marg, "SHRINK")]
            if all(lo == 0 and hi == s for (lo, hi), s in zip(bounds, xs)):
                return x
            text = "[" + ",".join(f"[{lo},{hi}]" for lo, hi in bounds) + "]"
            return b.add("SHRINK", [x], [f"bounds={text}"], b.dtype(x), out)
        if op is Ops.FLIP:
            axes = [i for i, f in enumerate(u.marg) if f]
            if not axes:
                return x
            return b.add("FLIP", [x], [f"axes={_list(axes)}"], b.dtype(x), out)
        raise BridgeError(f"unsupported op {op.name}")

    def lower_reduce(self, u, dt, x):
        """tinygrad's REDUCE(x, (op, n)) reduces the leading n axes and drops them."""
        b = self.b
        if not isinstance(u.arg, tuple) or len(u.arg) != 2 or len(u.src) != 1:
            raise BridgeError("unsupported op REDUCE (a kernel-level REDUCE with ranges)")
        rop, n = u.arg
        if rop not in _REDOPS:
            raise BridgeError(f"unsupported op REDUCE with {rop.name}")
        if n == 0:
            return x
        x = b.cast(x, dt)
        attrs = [f"op={_REDOPS[rop]}", f"axes={_list(range(n))}", "keepdim=false"]
        if rop is not Ops.MAX and dt.itemsize == 2 and dtypes.is_float(dt):
            attrs.append("acc=float")	# tinyc accumulates 16-bit sums in float (AccDtypeMissing)
        return b.add("REDUCE", [x], attrs, dt, b.shape(x)[n:])

    def lower_floor(self, op, dt, a, c):
        """Floor division and modulo from C's truncating IDIV and MOD (integers)."""
        b = self.b
        if not dtypes.is_int(dt):
            raise BridgeError(f"unsupported op {op.name} on {dt}")
        q = b.binary("IDIV", a, c)
        r = b.binary("MOD", a, c)
        zero = b.const(0, dt)
        rnz = b.binary("CMPNE", r, zero)
        sign = b.binary("CMPNE", b.binary("CMPLT", r, zero), b.binary("CMPLT", c, zero))
        adjust = b.binary("AND", rnz, sign)
        if op is Ops.FLOORDIV:
            return b.binary("SUB", q, b.where(adjust, b.const(1, dt), zero))
        return b.binary("ADD", r, b.where(adjust, c, zero))

    def lower_pow(self, u, dt, srcs):
        """x ** c by multiplications, SQRT and RECIPROCAL for constant c; otherwise
        exp2(e * log2|x|) with the sign and zero cases of C's pow."""
        b = self.b
        x = srcs[0]
        c = _const_value(u.src[1])
        shape = _int_shape(u.shape, "POW")
        if c is not None and (float(c) * 2).is_integer() and abs(c) <= 64:
            c = float(c)
            if c < 0:
                x = b.unary("RECIPROCAL", x)
                c = -c
            result = None
            if not c.is_integer():
                result = b.unary("SQRT", x)
                c -= 0.5
            n, sq = int(c), x
            while n:			# square-and-multiply, low bit first
                if n & 1:
                    result = sq if result is None else b.binary("MUL", result, sq)
                n >>= 1
                if n:
                    sq = b.binary("MUL", sq, sq)
            if result is None:
                result = b.const(1, dt)
            return b.expand(b.reshape(result, (1,) * (len(shape) - len(b.shape(result))) +
                                      b.shape(result)), shape)
        if not dtypes.is_float(dt):
            raise BridgeError("unsupported op POW with a non-constant integer exponent")
        e = srcs[1] if len(srcs) > 1 else b.const(c, dt)
        zero, one = b.const(0, dt), b.const(1, dt)
        neg = b.binary("CMPLT", x, zero)
        mag = b.where(neg, b.unary("NEG", x), x)
        r = b.unary("EXP2", b.binary("MUL", e, b.unary("LOG2", mag)))
        is_int = b.binary("CMPEQ", b.unary("TRUNC", e), e)
        half = b.binary("MUL", e, b.const(0.5, dt))
        odd = b.binary("CMPNE", b.unary("TRUNC", half), half)
        signed = b.where(odd, b.unary("NEG", r), r)
        r = b.where(neg, b.where(is_int, signed, b.const(math.nan, dt)), r)
        r = b.where(b.binary("CMPEQ", e, zero), one, r)
        return b.expand(r, shape)

    def lower_stack(self, u, dt, srcs):
        """STACK(a, b, ...) -> shape (n,)+a.shape: each operand padded into its row, summed
        (OR for bool)."""
        b = self.b
        if not srcs:
            raise BridgeError("unsupported op STACK with no operands")
        n = len(srcs)
        out = _int_shape(u.shape, "STACK")
        inner = out[1:]
        acc = None
        for i, s in enumerate(srcs):
            s = b.expand(b.reshape(b.cast(s, dt), (1,) * (len(inner) - len(b.shape(s))) +
                                   b.shape(s)), inner)
            s = b.pad(b.reshape(s, (1,) + inner), [(i, n - 1 - i)] + [(0, 0)] * len(inner))
            acc = s if acc is None else b.binary("OR" if dt == dtypes.bool else "ADD", acc, s)
        return acc


def _pairs(marg, what):
    """The (offset, size) pairs of a PAD or SHRINK as ints."""
    out = []
    for o, sz in marg:
        if not isinstance(o, int) or not isinstance(sz, int):
            raise BridgeError(f"{what}: symbolic bounds are not supported")
        out.append((o, sz))
    return out


def _named(tensors, prefix):
    """(name, Tensor) pairs from a Tensor, a list/tuple of Tensors, or a dict name -> Tensor."""
    if tensors is None:
        return []
    if isinstance(tensors, Tensor):
        return [(prefix + "0", tensors)]
    if isinstance(tensors, dict):
        items = list(tensors.items())
    else:
        items = [(f"{prefix}{i}", t) for i, t in enumerate(tensors)]
    for name, t in items:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise BridgeError(f"bad tensor name {name!r} (letters, digits, '_', '.', '-')")
        if not isinstance(t, Tensor):
            raise BridgeError(f"{name}: expected a tinygrad Tensor, got {type(t).__name__}")
    return items


def from_tinygrad(outputs, inputs=None, params=None, *, comment=None):
    """Turn tinygrad Tensors (not yet realized) into tinyc-uop v0 text.

    outputs: a Tensor, a list of Tensors (named out0, out1, ...) or a dict name -> Tensor.
    inputs:  the tensors the caller feeds, as a list (x0, x1, ...) or a dict name -> Tensor;
             they take BUFFER slots 0, 1, ... in that order, whatever they are built from.
    params:  more named inputs, e.g. tinygrad.nn.state.get_state_dict(model); realized
             weights not named anywhere become buf0, buf1, ... in the order met.
    comment: text for a '#' comment under the header line.
    Raises BridgeError naming the op or dtype that tinyc-uop v0 cannot express."""
    outs = _named(outputs, "out")
    if not outs:
        raise BridgeError("no outputs")
    if len({n for n, _ in outs}) != len(outs):
        raise BridgeError("duplicate output names")
    ins = _named(inputs, "x") + _named(params, "p")
    leaves, names = {}, set()
    for name, t in ins:
        if name in names:
            raise BridgeError(f"duplicate input name {name}")
        names.add(name)
        if t.uop not in leaves:	# the same tensor under two names (tied weights): first wins
            leaves[t.uop] = name
    bridge = _Bridge(leaves)
    for name, t in _named(inputs, "x"):
        bridge.leaf(t.uop, name)	# every given input keeps its slot, used or not
    results = []
    for name, t in outs:
        u = t.uop
        if _is_weak(u.dtype):
            raise BridgeError(f"output {name} has weak dtype {u.dtype}: cast it")
        results.append((name, bridge.emit(u)))
    return _render(bridge, results, comment)


def _render(bridge, results, comment):
    """The text: BUFFER lines first (slot order), then the other lines, then OUTPUTs."""
    b = bridge.b
    order = [bridge.leaf_nodes[n] for n in bridge.leaf_order]
    in_order = set(order)
    order += [i for i in range(len(b.nodes)) if i not in in_order]
    ids = {old: new for new, old in enumerate(order)}
    lines = ["# tinyc-uop v0"]
    if comment:
        lines += ["# " + c for c in comment.splitlines()]
    lines.append("# exported from tinygrad by tinyc.from_tinygrad")
    slot = {n: i for i, n in enumerate(bridge.leaf_order)}
    for old in order:
        nd = b.nodes[old]
        ty = f"{_dtype_name(nd.dtype)}{_list(nd.shape)}"
        if nd.op == "BUFFER":
            name = nd.attrs[0]
            lines.append(f'%{ids[old]} = BUFFER(slot={slot[name]}, name="{name}") : {ty}')
        elif nd.op == "CONST":
            lines.append(f"%{ids[old]} = CONST({nd.lit}) : {ty}")
        else:
            items = [f"%{ids[s]}" for s in nd.srcs] + nd.attrs
            lines.append(f"%{ids[old]} = {nd.op}({', '.join(items)}) : {ty}")
    n = len(order)
    for name, idx in results:
        nd = b.nodes[idx]
        lines.append(f'%{n} = OUTPUT(%{ids[idx]}, name="{name}") : '
                     f"{_dtype_name(nd.dtype)}{_list(nd.shape)}")
        n += 1
    return "\n".join(lines) + "\n"
