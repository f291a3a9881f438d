/* The reference evaluator: runs a UOp graph on the CPU, node by node, densely.
 *
 * Every node is materialised in topological order as an array of 8-byte scalars:
 * double for float dtypes, int64 for signed integers (sign-extended from their width),
 * uint64 for unsigned integers (masked to their width), 0/1 for bool.  The numerics are
 * those of DESIGN.md §2; where the design leaves a choice open, this file fixes it:
 *
 *   floats    half, bfloat16 and float results are rounded to float32 after every op;
 *             double computes in double.  A 16-bit value is rounded to its 16-bit format
 *             only where it is materialised: a CAST or BITCAST to it, a 16-bit CONST, a
 *             16-bit REDUCE result, an OUTPUT.  Rounding is to nearest even, directly from
 *             double (never double rounding through float32).
 *   integers  wrap to their width after every op (two's complement).  IDIV and MOD
 *             truncate toward zero like C; x IDIV 0 = 0 and x MOD 0 = 0 (no trap);
 *             MIN IDIV -1 wraps to MIN and MIN MOD -1 = 0.  SHL/SHR mask the shift count
 *             to the width (count & (bits-1)); SHR is arithmetic for signed types.
 *   float ops MAX ignores a NaN operand (C fmax: NaN only if both are NaN), as CUDA's
 *             fmaxf does, and MAX(+0,-0) = +0; RELU(x) = x > 0 ? x : 0, so RELU(NaN) = 0
 *             like tinygrad's WHERE(CMPLT(0,x), x, 0).  REDUCE MAX folds with the same MAX.
 *             Comparisons with NaN are false (CMPNE true).
 *   casts     float -> int truncates toward zero and saturates to the target range,
 *             NaN -> 0; int -> int wraps; x -> bool is x != 0 (NaN -> true); int -> float
 *             rounds once to nearest even.  BITCAST reinterprets the stored bits (a 16-bit
 *             float source is first rounded to its format; NaN payloads may change).
 *   bool      ADD, OR and MAX are logical or; MUL and AND logical and; XOR exclusive or;
 *             false < true.
 *   dtypes    as the verifier: FDIV and RECIPROCAL SQRT EXP2 LOG2 SIN TRUNC take floats;
 *             IDIV MOD SHL SHR integers; AND OR XOR bool and integers; SUB NEG RELU not
 *             bool.  Anything else is UnsupportedOp (an unverified graph).
 *   REDUCE    elements are converted to the accumulator dtype (acc=, else the line's), folded
 *             in row-major order from the identity (ADD 0, MUL 1, MAX -inf / the type's
 *             minimum / false) with the op's arithmetic in that dtype, and the result is
 *             converted to the line's dtype.
 *   movement  RESHAPE is row-major; PERMUTE out.shape[i] = in.shape[perm[i]]; EXPAND
 *             broadcasts size-1 dims; PAD fills zeros; SHRINK takes [start,end); FLIP
 *             reverses; CONTIGUOUS copies.
 *   strides   a BUFFER with strides= reads its input as flat storage (any shape, C order)
 *             at element offset sum(i_k * stride_k); an OUTPUT with strides= is a 1-D
 *             tensor of 1 + sum((shape_k-1)*stride_k) elements, zero where nothing is
 *             written, later elements (row-major) winning where strides overlap.
 *
 * Nodes above TINYC_EVAL_MAX_ELEMS elements are refused (TooLarge); a node's values are
 * freed after its last user has run.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/tensor.h"

#define TINYC_EVAL_MAX_ELEMS (INT64_C(1) << 31)	/* largest node the evaluator builds */

/* One scalar of a materialised node. */
typedef union tval {
	double f;		/* float dtypes */
	int64_t i;		/* signed integers, sign-extended */
	uint64_t u;		/* unsigned integers (masked) and bool (0/1) */
} tval;

/* How a dtype's scalars are held. */
enum { CL_F, CL_S, CL_U, CL_B };

/* A materialised node. */
typedef struct dense {
	int rank;			/* concrete rank */
	int64_t shape[TINYC_MAX_RANK];	/* concrete shape */
	int64_t numel;			/* product of shape */
	tval *v;			/* numel values, NULL before it runs or once freed */
} dense;

/* The state of one evaluation. */
typedef struct evaluator {
	tinyc_ctx *ctx;
	const tinyc_graph *g;
	const tinyc_bindings *b;
	tinyc_io *io;
	dense *d;		/* per node */
} evaluator;

static int vclass(tinyc_dtype dt)
{
	if (dt == TINYC_BOOL)
		return CL_B;
	if (tinyc_dtype_is_float(dt))
		return CL_F;
	return tinyc_dtype_is_signed(dt) ? CL_S : CL_U;
}

/* Width of an integer dtype in bits. */
static int bits(tinyc_dtype dt)
{
	return 8 * tinyc_dtype_size(dt);
}

/* uint64 -> int64 by two's complement, without implementation-defined conversions. */
static int64_t u2s(uint64_t u)
{
	return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

/* The low w bits of u, sign-extended. */
static int64_t wrap_s(uint64_t u, int w)
{
	if (w < 64) {
		uint64_t mask = (UINT64_C(1) << w) - 1, sign = UINT64_C(1) << (w - 1);
		u &= mask;
		if (u & sign)
			u |= ~mask;
	}
	return u2s(u);
}

/* The low w bits of u. */
static uint64_t wrap_u(uint64_t u, int w)
{
	return w < 64 ? u & ((UINT64_C(1) << w) - 1) : u;
}

/* The 64-bit pattern u wrapped to the integer or bool dtype dt. */
static tval wrap(tinyc_dtype dt, uint64_t u)
{
	tval r;
	switch (vclass(dt)) {
	case CL_S: r.i = wrap_s(u, bits(dt)); break;
	case CL_U: r.u = wrap_u(u, bits(dt)); break;
	default: r.u = u != 0; break;
	}
	return r;
}

/* Round an arithmetic result of a float dtype: float32 for half, bfloat16 and float. */
static double round_op(tinyc_dtype dt, double x)
{
	return dt == TINYC_DOUBLE ? x : tinyc_round_to_dtype(TINYC_FLOAT, x);
}

/* Report an error at node n.  Returns -1. */
static int node_err(evaluator *ev, int n, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int node_err(evaluator *ev, int n, const char *kind, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tinyc_verror_at(ev->ctx, ev->g->src, ev->g->nodes[n].loc, kind, fmt, ap);
	va_end(ap);
	return -1;
}

/* The value of a dim, or -1 when its symbol is unbound. */
static int64_t dim_value(const tinyc_dim *d, const tinyc_bindings *b)
{
	if (d->sym < 0)
		return d->val;
	if (!b || d->sym >= b->n)
		return -1;
	return b->val[d->sym];
}

/* The stored bits of a float value of dtype dt (rounded to dt first). */
static uint64_t float_bits(tinyc_dtype dt, double x)
{
	return tinyc_float_to_bits(dt, tinyc_round_to_dtype(dt, x));
}

/* CAST semantics: x of dtype from, converted to dtype to. */
static tval convert(tinyc_dtype from, tinyc_dtype to, tval x)
{
	tval r;
	int cf = vclass(from), ct = vclass(to);
	if (cf == CL_F) {
		if (ct == CL_F) {
			r.f = tinyc_round_to_dtype(to, x.f);
		} else if (ct == CL_B) {
			r.u = x.f != 0;
		} else if (to == TINYC_LONG) {
			double s = tinyc_round_to_dtype(to, x.f);
			r.i = s >= 0x1p63 ? INT64_MAX : (int64_t)s;
		} else if (to == TINYC_ULONG) {
			double s = tinyc_round_to_dtype(to, x.f);
			r.u = s >= 0x1p64 ? UINT64_MAX : (uint64_t)s;
		} else {
			double s = tinyc_round_to_dtype(to, x.f);	/* in range, exact */
			r = ct == CL_S ? (tval){.i = (int64_t)s} : (tval){.u = (uint64_t)s};
		}
		return r;
	}
	/* integer or bool source: its value as bits (signed: sign-extended) */
	if (ct == CL_F) {
		if (cf == CL_S)
			r.f = tinyc_int_to_float(to, x.i, 0);
		else
			r.f = tinyc_int_to_float(to, u2s(x.u), 1);
		return r;
	}
	return wrap(to, x.u);
}

/* BITCAST: reinterpret the stored bits of x (dtype from) as dtype to (same size). */
static tval bitcast(tinyc_dtype from, tinyc_dtype to, tval x)
{
	uint64_t u = vclass(from) == CL_F ? float_bits(from, x.f) : wrap_u(x.u, bits(from));
	tval r;
	if (vclass(to) == CL_F)
		r.f = tinyc_bits_to_float(to, u);
	else
		r = wrap(to, u);
	return r;
}

/* Whether op is defined on dtypes of class cl (the op table's operand domain). */
static int op_supported(tinyc_op op, int cl)
{
	switch (tinyc_op_info(op)->dom) {
	case TINYC_DOM_FLOAT: return cl == CL_F;
	case TINYC_DOM_INT: return cl == CL_S || cl == CL_U;
	case TINYC_DOM_BITS: return cl != CL_F;
	case TINYC_DOM_NUM: return cl != CL_B;
	default: return 1;
	}
}

/* A unary op on x of dtype dt (op_supported checked; TRUNC is float-only). */
static tval unary(tinyc_op op, tinyc_dtype dt, tval x)
{
	tval r = x;
	switch (vclass(dt)) {
	case CL_F: {
		double y = tinyc_op_unary_f(op, x.f);
		r.f = round_op(dt, y);
		return r;
	}
	case CL_S:
		if (op == TINYC_OP_NEG)
			r.i = wrap_s(UINT64_C(0) - x.u, bits(dt));
		else if (op == TINYC_OP_RELU)
			r.i = x.i > 0 ? x.i : 0;
		return r;
	default:	/* unsigned: RELU is the identity */
		if (op == TINYC_OP_NEG)
			r.u = wrap_u(UINT64_C(0) - x.u, bits(dt));
		return r;
	}
}

/* A binary op on a, b of dtype dt (op_supported checked).  Comparisons give 0/1 in .u. */
static tval binary(tinyc_op op, tinyc_dtype dt, tval a, tval b)
{
	tval r = {0};
	int w = bits(dt);
	switch (op) {	/* comparisons, for every class */
	case TINYC_OP_CMPLT:
		r.u = vclass(dt) == CL_F ? a.f < b.f : vclass(dt) == CL_S ? a.i < b.i : a.u < b.u;
		return r;
	case TINYC_OP_CMPNE:
		r.u = vclass(dt) == CL_F ? a.f != b.f : a.u != b.u;
		return r;
	case TINYC_OP_CMPEQ:
		r.u = vclass(dt) == CL_F ? a.f == b.f : a.u == b.u;
		return r;
	default:
		break;
	}
	switch (vclass(dt)) {
	case CL_F: {
		double x = a.f, y = b.f, z = 0;
		switch (op) {
		case TINYC_OP_ADD: z = x + y; break;
		case TINYC_OP_SUB: z = x - y; break;
		case TINYC_OP_MUL: z = x * y; break;
		case TINYC_OP_FDIV: z = x / y; break;
		case TINYC_OP_MAX: z = tinyc_fminmax(x, y, 1); break;
		default: break;
		}
		r.f = round_op(dt, z);
		return r;
	}
	case CL_S:
		switch (op) {
		case TINYC_OP_ADD: r.i = wrap_s(a.u + b.u, w); break;
		case TINYC_OP_SUB: r.i = wrap_s(a.u - b.u, w); break;
		case TINYC_OP_MUL: r.i = wrap_s(a.u * b.u, w); break;
		case TINYC_OP_IDIV:
			if (b.i == 0)
				r.i = 0;
			else if (b.i == -1)
				r.i = wrap_s(UINT64_C(0) - a.u, w);
			else
				r.i = a.i / b.i;
			break;
		case TINYC_OP_MOD: r.i = (b.i == 0 || b.i == -1) ? 0 : a.i % b.i; break;
		case TINYC_OP_MAX: r.i = a.i > b.i ? a.i : b.i; break;
		case TINYC_OP_AND: r.i = wrap_s(a.u & b.u, w); break;
		case TINYC_OP_OR: r.i = wrap_s(a.u | b.u, w); break;
		case TINYC_OP_XOR: r.i = wrap_s(a.u ^ b.u, w); break;
		case TINYC_OP_SHL: r.i = wrap_s(a.u << (b.u & (uint64_t)(w - 1)), w); break;
		case TINYC_OP_SHR: {
			int s = (int)(b.u & (uint64_t)(w - 1));
			r.i = a.i >= 0 ? a.i >> s : ~(~a.i >> s);
			break;
		}
		default: break;
		}
		return r;
	case CL_U:
		switch (op) {
		case TINYC_OP_ADD: r.u = wrap_u(a.u + b.u, w); break;
		case TINYC_OP_SUB: r.u = wrap_u(a.u - b.u, w); break;
		case TINYC_OP_MUL: r.u = wrap_u(a.u * b.u, w); break;
		case TINYC_OP_IDIV: r.u = b.u ? a.u / b.u : 0; break;
		case TINYC_OP_MOD: r.u = b.u ? a.u % b.u : 0; break;
		case TINYC_OP_MAX: r.u = a.u > b.u ? a.u : b.u; break;
		case TINYC_OP_AND: r.u = a.u & b.u; break;
		case TINYC_OP_OR: r.u = a.u | b.u; break;
		case TINYC_OP_XOR: r.u = a.u ^ b.u; break;
		case TINYC_OP_SHL: r.u = wrap_u(a.u << (b.u & (uint64_t)(w - 1)), w); break;
		case TINYC_OP_SHR: r.u = a.u >> (b.u & (uint64_t)(w - 1)); break;
		default: break;
		}
		return r;
	default:	/* bool */
		switch (op) {
		case TINYC_OP_ADD: case TINYC_OP_OR: case TINYC_OP_MAX: r.u = a.u | b.u; break;
		case TINYC_OP_MUL: case TINYC_OP_AND: r.u = a.u & b.u; break;
		case TINYC_OP_XOR: r.u = a.u ^ b.u; break;
		default: break;
		}
		return r;
	}
}

/* Load element i of a host tensor into the class of its dtype. */
static tval load(const tinyc_tensor *t, int64_t i)
{
	tval r;
	switch (vclass(t->dtype)) {
	case CL_F: r.f = tinyc_tensor_get(t, i); break;
	case CL_S: r.i = tinyc_tensor_get_int(t, i); break;
	case CL_U: r.u = (uint64_t)tinyc_tensor_get_int(t, i); break;
	default: r.u = tinyc_tensor_get_int(t, i) != 0; break;
	}
	return r;
}

/* Store x (held in the class of t's dtype) as element i of t; floats are rounded. */
static void store(tinyc_tensor *t, int64_t i, tval x)
{
	if (vclass(t->dtype) == CL_F)
		tinyc_tensor_set(t, i, x.f);
	else if (vclass(t->dtype) == CL_S)
		tinyc_tensor_set_int(t, i, x.i);
	else
		tinyc_tensor_set_int(t, i, u2s(x.u));
}

/* Advance a row-major multi-index over shape. */
static void next_index(int rank, const int64_t *shape, int64_t *idx)
{
	for (int k = rank - 1; k >= 0; k--) {
		if (++idx[k] < shape[k])
			return;
		idx[k] = 0;
	}
}

/* Flat offset into `in` of the element broadcast to output index idx (rank out_rank),
 * with right-aligned broadcasting. */
static int64_t bcast_offset(const dense *in, int out_rank, const int64_t *idx)
{
	int64_t off = 0;
	int shift = out_rank - in->rank;
	for (int k = 0; k < in->rank; k++)
		off = off * in->shape[k] + (in->shape[k] == 1 ? 0 : idx[k + shift]);
	return off;
}

/* Format a concrete shape into buf. */
static const char *shape_str(char *buf, size_t cap, int rank, const int64_t *shape)
{
	size_t n = 0;
	n += (size_t)snprintf(buf + n, cap - n, "[");
	for (int k = 0; k < rank && n < cap; k++)
		n += (size_t)snprintf(buf + n, cap - n, k ? ",%lld" : "%lld", (long long)shape[k]);
	if (n < cap)
		snprintf(buf + n, cap - n, "]");
	return buf;
}

/* Check that `in` broadcasts to node n's shape (right-aligned). */
static int check_bcast(evaluator *ev, int n, const dense *in)
{
	const dense *out = &ev->d[n];
	int ok = in->rank <= out->rank;
	for (int k = 0; ok && k < in->rank; k++) {
		int64_t s = in->shape[k], o = out->shape[k + out->rank - in->rank];
		ok = s == 1 || s == o;
	}
	if (ok)
		return 0;
	char a[400], b[400];
	return node_err(ev, n, "BroadcastMismatch", "operand of shape %s does not broadcast to %s",
			shape_str(a, sizeof(a), in->rank, in->shape),
			shape_str(b, sizeof(b), out->rank, out->shape));
}

/* Check that a and b are the same concrete shape. */
static int check_same_shape(evaluator *ev, int n, const dense *a, const dense *b)
{
	int ok = a->rank == b->rank;
	for (int k = 0; ok && k < a->rank; k++)
		ok = a->shape[k] == b->shape[k];
	if (ok)
		return 0;
	char x[400], y[400];
	return node_err(ev, n, "ShapeMismatch", "shape %s where %s is expected",
			shape_str(x, sizeof(x), a->rank, a->shape),
			shape_str(y, sizeof(y), b->rank, b->shape));
}

/* Check that operand j of node n has dtype dt. */
static int check_dtype(evaluator *ev, int n, int j, tinyc_dtype dt)
{
	tinyc_dtype have = ev->g->nodes[ev->g->nodes[n].src[j]].dtype;
	if (have == dt)
		return 0;
	return node_err(ev, n, "TypeMismatch", "operand %d is %s, expected %s", j + 1,
			tinyc_dtype_name(have), tinyc_dtype_name(dt));
}

/* Normalise axis a (negative counts from the end) for rank r; -1 when out of range. */
static int norm_axis(int64_t a, int r)
{
	if (a < 0)
		a += r;
	return a >= 0 && a < r ? (int)a : -1;
}

/* CONST: the literal converted to the line's dtype, in every element. */
static int eval_const(evaluator *ev, int n)
{
	const tinyc_uop *u = &ev->g->nodes[n];
	tval x;
	if (u->lit.kind == TINYC_LIT_FLOAT)
		x = convert(TINYC_DOUBLE, u->dtype, (tval){.f = u->lit.f});
	else
		x = convert(TINYC_LONG, u->dtype, (tval){.i = u->lit.i});
	for (int64_t i = 0; i < ev->d[n].numel; i++)
		ev->d[n].v[i] = x;
	return 0;
}

/* Required storage (elements) of a strided view of shape d: 1 + sum((s-1)*stride), or 0
 * for an empty shape; -1 with a diagnostic on negative strides or overflow. */
static int64_t strided_extent(evaluator *ev, int n, const dense *d, int64_t *stride)
{
	const tinyc_uop *u = &ev->g->nodes[n];
	if (d->numel == 0)
		return 0;
	int64_t ext = 1;
	for (int k = 0; k < d->rank; k++) {
		stride[k] = dim_value(&u->strides[k], ev->b);
		if (stride[k] < 0)
			return node_err(ev, n, "InvalidAttribute", "stride %d is negative", k);
		if (stride[k] > 0 && d->shape[k] - 1 > (TINYC_EVAL_MAX_ELEMS - ext) / stride[k])
			return node_err(ev, n, "TooLarge", "strided storage above 2^31 elements");
		ext += (d->shape[k] - 1) * stride[k];
	}
	return ext;
}

/* BUFFER: copy the input tensor of its slot (dense, or through its strides). */
static int eval_buffer(evaluator *ev, int n)
{
	const tinyc_uop *u = &ev->g->nodes[n];
	dense *d = &ev->d[n];
	const char *name = u->name ? u->name : "?";
	if (u->slot < 0 || u->slot >= ev->io->nin || !ev->io->in[u->slot])
		return node_err(ev, n, "MissingInput", "no input tensor for BUFFER '%s' (slot %lld)",
				name, (long long)u->slot);
	const tinyc_tensor *t = ev->io->in[u->slot];
	if (t->dtype != u->dtype)
		return node_err(ev, n, "InputMismatch", "input '%s' is %s, the graph expects %s",
				name, tinyc_dtype_name(t->dtype), tinyc_dtype_name(u->dtype));
	if (u->strides) {
		int64_t stride[TINYC_MAX_RANK], idx[TINYC_MAX_RANK] = {0};
		int64_t ext = strided_extent(ev, n, d, stride);
		if (ext < 0)
			return -1;
		if (tinyc_tensor_numel(t) < ext)
			return node_err(ev, n, "InputMismatch", "input '%s' has %lld elements; "
					"its strides need at least %lld", name,
					(long long)tinyc_tensor_numel(t), (long long)ext);
		for (int64_t i = 0; i < d->numel; i++) {
			int64_t off = 0;
			for (int k = 0; k < d->rank; k++)
				off += idx[k] * stride[k];
			d->v[i] = load(t, off);
			next_index(d->rank, d->shape, idx);
		}
		return 0;
	}
	int same = t->rank == d->rank;
	for (int k = 0; same && k < d->rank; k++)
		same = t->shape[k] == d->shape[k];
	if (!same) {
		char a[400], b[400];
		return node_err(ev, n, "InputMismatch", "input '%s' has shape %s, the graph "
				"expects %s", name, shape_str(a, sizeof(a), t->rank, t->shape),
				shape_str(b, sizeof(b), d->rank, d->shape));
	}
	for (int64_t i = 0; i < d->numel; i++)
		d->v[i] = load(t, i);
	return 0;
}

/* Elementwise ops (unary, binary, WHERE, CAST, BITCAST) with right-aligned broadcasting. */
static int eval_elementwise(evaluator *ev, int n)
{
	const tinyc_uop *u = &ev->g->nodes[n];
	dense *d = &ev->d[n];
	const dense *in[3];
	tinyc_dtype sdt = ev->g->nodes[u->src[0]].dtype;	/* the operands' dtype */
	for (int j = 0; j < u->nsrc; j++) {
		in[j] = &ev->d[u->src[j]];
		if (check_bcast(ev, n, in[j]) < 0)
			return -1;
	}
	if (u->op == TINYC_OP_WHERE) {
		sdt = u->dtype;
		if (check_dtype(ev, n, 0, TINYC_BOOL) < 0 || check_dtype(ev, n, 1, u->dtype) < 0 ||
		    check_dtype(ev, n, 2, u->dtype) < 0)
			return -1;
	} else if (u->op == TINYC_OP_BITCAST) {
		if (tinyc_dtype_size(sdt) != tinyc_dtype_size(u->dtype))
			return node_err(ev, n, "TypeMismatch", "BITCAST from %s to %s changes the "
					"item size", tinyc_dtype_name(sdt), tinyc_dtype_name(u->dtype));
	} else if (u->op != TINYC_OP_CAST) {
		for (int j = 1; j < u->nsrc; j++)
			if (check_dtype(ev, n, j, sdt) < 0)
				return -1;
		int cmp = u->op == TINYC_OP_CMPLT || u->op == TINYC_OP_CMPNE ||
			  u->op == TINYC_OP_CMPEQ;
		tinyc_dtype want = cmp ? TINYC_BOOL : sdt;
		if (u->dtype != want)
			return node_err(ev, n, "TypeMismatch", "%s of %s gives %s, the line says %s",
					tinyc_op_info(u->op)->name, tinyc_dtype_name(sdt),
					tinyc_dtype_name(want), tinyc_dtype_name(u->dtype));
		if (!op_supported(u->op, vclass(sdt)))
			return node_err(ev, n, "UnsupportedOp", "%s is not defined on %s",
					tinyc_op_info(u->op)->name, tinyc_dtype_name(sdt));
	}
	int64_t idx[TINYC_MAX_RANK] = {0};
	for (int64_t i = 0; i < d->numel; i++) {
		tval a = in[0]->v[bcast_offset(in[0], d->rank, idx)];
		switch (u->op) {
		case TINYC_OP_CAST:
			d->v[i] = convert(sdt, u->dtype, a);
			break;
		case TINYC_OP_BITCAST:
			d->v[i] = bitcast(sdt, u->dtype, a);
			break;
		case TINYC_OP_WHERE:
			d->v[i] = a.u ? in[1]->v[bcast_offset(in[1], d->rank, idx)]
				      : in[2]->v[bcast_offset(in[2], d->rank, idx)];
			break;
		default:
			if (u->nsrc == 1)
				d->v[i] = unary(u->op, sdt, a);
			else
				d->v[i] = binary(u->op, sdt, a,
						 in[1]->v[bcast_offset(in[1], d->rank, idx)]);
			break;
		}
		next_index(d->rank, d->shape, idx);
	}
	return 0;
}

/* The identity of a REDUCE op in dtype dt. */
static tval red_identity(tinyc_redop op, tinyc_dtype dt)
{
	tval r = {0};
	if (op == TINYC_RED_MUL)
		return convert(TINYC_LONG, dt, (tval){.i = 1});
	if (op == TINYC_RED_MAX) {
		if (vclass(dt) == CL_F)
			r.f = -INFINITY;
		else if (vclass(dt) == CL_S)
			r.i = wrap_s(UINT64_C(1) << (bits(dt) - 1), bits(dt));
	}
	return r;
}

/* REDUCE: fold the reduced axes in the accumulator dtype, then convert. */
static int eval_reduce(evaluator *ev, int n)
{
	const tinyc_uop *u = &ev->g->nodes[n];
	dense *d = &ev->d[n];
	const dense *in = &ev->d[u->src[0]];
	tinyc_dtype idt = ev->g->nodes[u->src[0]].dtype;
	tinyc_dtype acc = u->acc != TINYC_DTYPE_NONE ? u->acc : u->dtype;
	int reduced[TINYC_MAX_RANK] = {0};
	for (int j = 0; j < u->naxes; j++) {
		int a = norm_axis(u->axes[j], in->rank);
		if (a < 0)
			return node_err(ev, n, "InvalidAttribute", "axis %lld out of range for rank %d",
					(long long)u->axes[j], in->rank);
		reduced[a] = 1;
	}
	/* the expected result shape, and the map from input index to result index */
	dense want = {.rank = 0};
	for (int k = 0; k < in->rank; k++)
		if (!reduced[k] || u->keepdim)
			want.shape[want.rank++] = reduced[k] ? 1 : in->shape[k];
	if (check_same_shape(ev, n, d, &want) < 0)
		return -1;
	tinyc_op bop = u->redop == TINYC_RED_ADD ? TINYC_OP_ADD
		       : u->redop == TINYC_RED_MUL ? TINYC_OP_MUL : TINYC_OP_MAX;
	tval *accv = malloc((size_t)(d->numel ? d->numel : 1) * sizeof(tval));
	if (!accv)
		return node_err(ev, n, "OutOfMemory", "no memory for the accumulator");
	tval id = red_identity(u->redop, acc);
	for (int64_t i = 0; i < d->numel; i++)
		accv[i] = id;
	int64_t idx[TINYC_MAX_RANK] = {0};
	for (int64_t i = 0; i < in->numel; i++) {
		int64_t o = 0;
		for (int k = 0; k < in->rank; k++) {
			if (reduced[k] && !u->keepdim)
				continue;
			o = o * (reduced[k] ? 1 : in->shape[k]) + (reduced[k] ? 0 : idx[k]);
		}
		accv[o] = binary(bop, acc, accv[o], convert(idt, acc, in->v[i]));
		next_index(in->rank, in->shape, idx);
	}
	for (int64_t i = 0; i < d->numel; i++)
		d->v[i] = convert(acc, u->dtype, accv[i]);
	free(accv);
	return 0;
}

/* Movement ops: each output index maps to one input index (or to PAD's zero). */
static int eval_movement(evaluator *ev, int n)
{
	const tinyc_uop *u = &ev->g->nodes[n];
	dense *d = &ev->d[n];
	const dense *in = &ev->d[u->src[0]];
	if (check_dtype(ev, n, 0, u->dtype) < 0)
		return -1;
	dense want = *in;	/* the output shape the op implies (v unused) */
	int flip[TINYC_MAX_RANK] = {0};
	switch (u->op) {
	case TINYC_OP_RESHAPE:
		if (in->numel != d->numel)
			return node_err(ev, n, "ShapeMismatch", "RESHAPE from %lld to %lld elements",
					(long long)in->numel, (long long)d->numel);
		memcpy(d->v, in->v, (size_t)d->numel * sizeof(tval));
		return 0;
	case TINYC_OP_CONTIGUOUS:
		break;
	case TINYC_OP_PERMUTE: {
		int seen[TINYC_MAX_RANK] = {0};
		if (u->naxes != in->rank)
			return node_err(ev, n, "InvalidAttribute", "perm has %d entries for rank %d",
					u->naxes, in->rank);
		for (int k = 0; k < in->rank; k++) {
			if (u->axes[k] < 0 || u->axes[k] >= in->rank || seen[u->axes[k]]++)
				return node_err(ev, n, "InvalidAttribute", "perm is not a permutation");
			want.shape[k] = in->shape[u->axes[k]];
		}
		break;
	}
	case TINYC_OP_EXPAND:
		if (d->rank != in->rank)
			return node_err(ev, n, "ShapeMismatch", "EXPAND changes the rank");
		for (int k = 0; k < in->rank; k++) {
			if (in->shape[k] != 1 && in->shape[k] != d->shape[k])
				return node_err(ev, n, "ShapeMismatch", "EXPAND of dim %d: %lld to %lld",
						k, (long long)in->shape[k], (long long)d->shape[k]);
			want.shape[k] = d->shape[k];
		}
		break;
	case TINYC_OP_PAD:
	case TINYC_OP_SHRINK:
		if (u->npairs != in->rank)
			return node_err(ev, n, "InvalidAttribute", "%d pairs for rank %d", u->npairs,
					in->rank);
		for (int k = 0; k < in->rank; k++) {
			int64_t p0 = u->pairs[k][0], p1 = u->pairs[k][1];
			if (p0 < 0 || p1 < 0 || (u->op == TINYC_OP_SHRINK &&
						  (p0 > p1 || p1 > in->shape[k])) ||
			    (u->op == TINYC_OP_PAD && (p0 > TINYC_MAX_DIM || p1 > TINYC_MAX_DIM)))
				return node_err(ev, n, "InvalidAttribute", "pair %d out of range", k);
			want.shape[k] = u->op == TINYC_OP_PAD ? in->shape[k] + p0 + p1 : p1 - p0;
		}
		break;
	case TINYC_OP_FLIP:
		for (int j = 0; j < u->naxes; j++) {
			int a = norm_axis(u->axes[j], in->rank);
			if (a < 0)
				return node_err(ev, n, "InvalidAttribute", "axis %lld out of range",
						(long long)u->axes[j]);
			flip[a] = 1;
		}
		break;
	default:
		return node_err(ev, n, "UnsupportedOp", "not a movement op");
	}
	if (check_same_shape(ev, n, d, &want) < 0)
		return -1;
	int64_t idx[TINYC_MAX_RANK] = {0}, src[TINYC_MAX_RANK] = {0};
	for (int64_t i = 0; i < d->numel; i++) {
		int inside = 1;
		for (int k = 0; k < d->rank; k++) {
			switch (u->op) {
			case TINYC_OP_PERMUTE: src[u->axes[k]] = idx[k]; break;
			case TINYC_OP_EXPAND: src[k] = in->shape[k] == 1 ? 0 : idx[k]; break;
			case TINYC_OP_PAD:
				src[k] = idx[k] - u->pairs[k][0];
				inside &= src[k] >= 0 && src[k] < in->shape[k];
				break;
			case TINYC_OP_SHRINK: src[k] = idx[k] + u->pairs[k][0]; break;
			case TINYC_OP_FLIP: src[k] = flip[k] ? in->shape[k] - 1 - idx[k] : idx[k]; break;
			default: src[k] = idx[k]; break;
			}
		}
		int64_t off = 0;
		for (int k = 0; k < in->rank; k++)
			off = off * in->shape[k] + src[k];
		d->v[i] = inside ? in->v[off] : (tval){0};
		next_index(d->rank, d->shape, idx);
	}
	return 0;
}

/* OUTPUT: store the operand into a new host tensor (dense, or through its strides). */
static int eval_output(evaluator *ev, int n, int k)
{
	const tinyc_uop *u = &ev->g->nodes[n];
	dense *d = &ev->d[n];
	const dense *in = &ev->d[u->src[0]];
	if (check_dtype(ev, n, 0, u->dtype) < 0 || check_same_shape(ev, n, in, d) < 0)
		return -1;
	tinyc_tensor *t;
	int64_t stride[TINYC_MAX_RANK], idx[TINYC_MAX_RANK] = {0};
	if (u->strides) {
		int64_t ext = strided_extent(ev, n, d, stride);
		if (ext < 0)
			return -1;
		t = tinyc_tensor_alloc(ev->ctx, u->dtype, 1, &ext);
	} else {
		t = tinyc_tensor_alloc(ev->ctx, u->dtype, d->rank, d->shape);
	}
	if (!t)
		return -1;
	for (int64_t i = 0; i < d->numel; i++) {
		int64_t off = i;
		if (u->strides) {
			off = 0;
			for (int j = 0; j < d->rank; j++)
				off += idx[j] * stride[j];
			next_index(d->rank, d->shape, idx);
		}
		store(t, off, in->v[i]);
	}
	ev->io->out[k] = t;
	return 0;
}

/* Bind unbound symbols from the BUFFER inputs' shapes (see tensor.h). */
int tinyc_bind_from_inputs(tinyc_ctx *ctx, const tinyc_graph *g, tinyc_bindings *b,
			   const tinyc_io *io)
{
	int bad = 0;
	const char **from = calloc((size_t)(g->nsym ? g->nsym : 1), sizeof(*from));
	if (!from)
		return tinyc_error(ctx, "OutOfMemory", "binding symbols");
	if (g->nsym > 0 && (!b || b->n < g->nsym)) {
		free(from);
		return tinyc_error(ctx, "InvalidArgument", "bindings for %d of %d symbols", b->n,
				   g->nsym);
	}
	for (int n = 0; n < g->n; n++) {
		const tinyc_uop *u = &g->nodes[n];
		if (u->op != TINYC_OP_BUFFER)
			continue;
		const char *name = u->name ? u->name : "?";
		if (u->slot < 0 || u->slot >= io->nin || !io->in[u->slot])
			continue;	/* tinyc_eval reports it, unless the caller fills it in */
		const tinyc_tensor *t = io->in[u->slot];
		if (t->dtype != u->dtype) {
			bad = tinyc_error_at(ctx, g->src, u->loc, "InputMismatch",
					     "input '%s' is %s, the graph expects %s", name,
					     tinyc_dtype_name(t->dtype), tinyc_dtype_name(u->dtype));
			continue;
		}
		if (u->strides)		/* flat storage: its shape says nothing about symbols */
			continue;
		if (t->rank != u->rank) {
			tinyc_buf s = {0};
			tinyc_print_shape(g, u->rank, u->shape, &s);
			bad = tinyc_error_at(ctx, g->src, u->loc, "InputMismatch",
					     "input '%s' has rank %d, the graph expects %d %s", name,
					     t->rank, u->rank, s.data ? s.data : "");
			tinyc_buf_free(&s);
			continue;
		}
		for (int k = 0; k < u->rank; k++) {
			const tinyc_dim *dm = &u->shape[k];
			int64_t have = t->shape[k];
			if (dm->sym < 0) {
				if (dm->val != have)
					bad = tinyc_error_at(ctx, g->src, u->loc, "InputMismatch",
							     "input '%s' has %lld at axis %d, the graph "
							     "expects %lld", name, (long long)have, k,
							     (long long)dm->val);
				continue;
			}
			const char *sym = g->syms[dm->sym];
			int64_t *val = &b->val[dm->sym];
			if (have < 1) {	/* the rule of --bind: sizes are at least 1 */
				bad = tinyc_error_at(ctx, g->src, u->loc, "InputMismatch",
						     "input '%s' has size %lld at axis %d: %s must be "
						     "at least 1", name, (long long)have, k, sym);
				continue;
			}
			if (*val < 0) {
				*val = have;
				from[dm->sym] = name;
			} else if (*val != have) {
				if (from[dm->sym])
					bad = tinyc_error_at(ctx, g->src, u->loc, "InconsistentBinding",
							     "%s = %lld from input '%s' but %lld from "
							     "input '%s' (axis %d)", sym,
							     (long long)*val, from[dm->sym],
							     (long long)have, name, k);
				else
					bad = tinyc_error_at(ctx, g->src, u->loc, "InconsistentBinding",
							     "%s = %lld is given but input '%s' has "
							     "%lld at axis %d", sym, (long long)*val,
							     name, (long long)have, k);
			}
		}
	}
	free(from);
	return bad ? -1 : 0;
}

/* Report every symbol that a node uses and b leaves unbound (once per symbol). */
static int check_bound(evaluator *ev)
{
	const tinyc_graph *g = ev->g;
	char *reported = calloc((size_t)(g->nsym ? g->nsym : 1), 1);
	int bad = 0;
	if (!reported)
		return tinyc_error(ev->ctx, "OutOfMemory", "checking symbols");
	for (int n = 0; n < g->n; n++) {
		const tinyc_uop *u = &g->nodes[n];
		const tinyc_dim *lists[3] = {u->shape, u->strides, u->attr_shape};
		int lens[3] = {u->rank, u->strides ? u->rank : 0, u->nattr_shape};
		for (int l = 0; l < 3; l++)
			for (int k = 0; k < lens[l]; k++) {
				const tinyc_dim *dm = &lists[l][k];
				if (dm->sym < 0 || dim_value(dm, ev->b) >= 0 || reported[dm->sym])
					continue;
				reported[dm->sym] = 1;
				bad = node_err(ev, n, "UnboundSymbol", "symbol %s has no value (bind "
					       "it, or give an input whose shape has it)",
					       g->syms[dm->sym]);
			}
	}
	free(reported);
	return bad;
}

/* Free io's outputs. */
void tinyc_io_clear_outputs(tinyc_io *io)
{
	for (int k = 0; io->out && k < io->nout; k++)
		tinyc_tensor_free(io->out[k]);
	free(io->out);
	io->out = NULL;
	io->nout = 0;
}

/* Evaluate g on io->in (see tensor.h and the notes at the top of this file). */
int tinyc_eval(tinyc_ctx *ctx, const tinyc_graph *g, const tinyc_bindings *b, tinyc_io *io)
{
	evaluator ev = {ctx, g, b, io, NULL};
	int nout = 0, rc = 0;
	int *last = NULL;
	tinyc_io_clear_outputs(io);
	for (int n = 0; n < g->n; n++) {	/* a missing input explains unbound symbols */
		const tinyc_uop *u = &g->nodes[n];
		if (u->op == TINYC_OP_BUFFER &&
		    (u->slot < 0 || u->slot >= io->nin || !io->in[u->slot]))
			rc = node_err(&ev, n, "MissingInput", "no input tensor for BUFFER '%s' "
				      "(slot %lld)", u->name ? u->name : "?", (long long)u->slot);
	}
	if (rc < 0 || check_bound(&ev) < 0)
		return -1;
	for (int n = 0; n < g->n; n++)
		nout += g->nodes[n].op == TINYC_OP_OUTPUT;
	ev.d = calloc((size_t)(g->n > 0 ? g->n : 1), sizeof(dense));
	last = calloc((size_t)(g->n > 0 ? g->n : 1), sizeof(int));
	io->out = calloc((size_t)(nout ? nout : 1), sizeof(tinyc_tensor *));
	if (!ev.d || !last || !io->out) {
		rc = tinyc_error(ctx, "OutOfMemory", "evaluating the graph");
		goto out;
	}
	io->nout = nout;
	for (int n = 0; n < g->n; n++) {	/* last user of each node */
		last[n] = n;
		for (int j = 0; j < g->nodes[n].nsrc; j++) {
			int s = g->nodes[n].src[j];
			if (s < 0 || s >= n) {
				rc = node_err(&ev, n, "UndefinedValue", "operand %d is not an earlier "
					      "node", j + 1);
				goto out;
			}
			last[s] = n;
		}
	}
	for (int n = 0, k = 0; n < g->n; n++) {
		const tinyc_uop *u = &g->nodes[n];
		dense *d = &ev.d[n];
		if (u->op < 0 || u->op >= TINYC_OP_COUNT || u->rank < 0 || u->rank > TINYC_MAX_RANK ||
		    (tinyc_op_info(u->op)->arity >= 0 && u->nsrc != tinyc_op_info(u->op)->arity)) {
			rc = node_err(&ev, n, "InvalidGraph", "malformed node (op, rank or operand "
				      "count); verify the graph first");
			goto out;
		}
		d->rank = u->rank;
		d->numel = 1;
		for (int j = 0; j < u->rank; j++) {
			d->shape[j] = dim_value(&u->shape[j], b);
			if (d->shape[j] < 0) {
				rc = node_err(&ev, n, "InvalidAttribute", "negative dim");
				goto out;
			}
			if (d->shape[j] > 0 && d->numel > TINYC_EVAL_MAX_ELEMS / d->shape[j]) {
				rc = node_err(&ev, n, "TooLarge", "node %%%s has more than 2^31 "
					      "elements", u->id ? u->id : "?");
				goto out;
			}
			d->numel *= d->shape[j];
		}
		d->v = malloc((size_t)(d->numel ? d->numel : 1) * sizeof(tval));
		if (!d->v) {
			rc = node_err(&ev, n, "OutOfMemory", "no memory for %lld elements",
				      (long long)d->numel);
			goto out;
		}
		switch (tinyc_op_info(u->op)->kind) {
		case TINYC_KIND_LEAF:
			rc = u->op == TINYC_OP_CONST ? eval_const(&ev, n) : eval_buffer(&ev, n);
			break;
		case TINYC_KIND_MOVEMENT: rc = eval_movement(&ev, n); break;
		case TINYC_KIND_ELEMENTWISE: rc = eval_elementwise(&ev, n); break;
		case TINYC_KIND_REDUCE: rc = eval_reduce(&ev, n); break;
		case TINYC_KIND_SINK: rc = eval_output(&ev, n, k++); break;
		}
		if (rc < 0)
			goto out;
		for (int j = 0; j < u->nsrc; j++)	/* drop operands nobody needs any more */
			if (last[u->src[j]] == n) {
				free(ev.d[u->src[j]].v);
				ev.d[u->src[j]].v = NULL;
			}
		if (last[n] == n) {	/* an OUTPUT, or a value nobody uses */
			free(d->v);
			d->v = NULL;
		}
	}
out:
	if (ev.d)
		for (int n = 0; n < g->n; n++)
			free(ev.d[n].v);
	free(ev.d);
	free(last);
	if (rc < 0)
		tinyc_io_clear_outputs(io);
	return rc < 0 ? -1 : 0;
}
