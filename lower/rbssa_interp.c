/* The RB-SSA interpreter: executes an RB-SSA function on host tensors, on the CPU.
 *
 * It is written independently of the reference evaluator (ir/eval.c) so that agreeing with
 * it means something; only the scalar semantics of the float unary ops and of MAX are
 * shared (ir/scalar.c: one definition per op, see ir/uop.h's op table).  Where the evaluator
 * materialises every node densely in doubles, this interpreter
 *
 *   - keeps view ops (reshape, transpose, broadcast_in_dim, pad, slice, reverse) lazy: a
 *     value is a stack of strided layers over one materialised buffer.  Each layer maps its
 *     multi-index to a flat index (offset + sum(index * stride), strides may be 0 for a
 *     broadcast or negative for a reverse) of the layer below, guarded by per-dim bounds
 *     (outside them, pad's zero).  transpose, broadcast_in_dim, pad, slice and reverse fold
 *     into the top layer; a reshape folds when the dims it merges or splits are contiguous
 *     and unguarded, and otherwise pushes a new row-major layer.  Only elementwise ops,
 *     reduces and reads materialise a buffer.
 *   - computes half, bfloat16 and float in C float (float32) and double in double, instead
 *     of double rounded to float32 after every op.  The results are the same bits: +, -, *,
 *     /, sqrt and reciprocal are correctly rounded either way (double carries more than
 *     2*24+2 bits), fmod and trunc are exact; the unary ops (exp2, log2, sin, ...) and float
 *     IDIV (trunc of the quotient) are computed in double and rounded once to float32, as
 *     DESIGN.md §2 asks.
 *
 * Numerics (DESIGN.md §2; the open choices are the reference semantics' documented ones):
 * 16-bit floats round to their format only where materialised: a cast or bitcast to them, a
 * 16-bit constant, a 16-bit reduce result, a yield.  Integers wrap to their width; IDIV and
 * MOD truncate toward zero, x/0 = x%0 = 0, MIN/-1 wraps; shift counts are masked to the
 * width, SHR is arithmetic on signed types.  MAX ignores a NaN operand and prefers +0 to -0;
 * RELU(x) = x > 0 ? x : 0.  float -> int casts truncate and saturate (NaN -> 0), int -> float
 * rounds once, x -> bool is x != 0.  Bool arithmetic: add/or/max = or, mul/and = and,
 * sub/xor = xor, neg = not.  A reduce converts each element to its accumulator dtype (a
 * cast), folds from init in row-major order of the reduced dims, and casts the result.
 *
 * Materialised buffers above 2^31 elements are refused (TooLarge).  A value is released
 * after its last user.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/rbssa.h"
#include "ir/tensor.h"
#include "lower/lower.h"

#define MAXR TINYC_MAX_RANK
#define RB_MAX_ELEMS (INT64_C(1) << 31)	/* largest buffer the interpreter materialises */
#define RB_MAX_VIEW (INT64_C(1) << 50)	/* largest (virtual) view it indexes */

/* How a dtype's values are held while computing. */
typedef enum vkind {
	VK_F32,			/* half, bfloat16, float: C float */
	VK_F64,			/* double */
	VK_S,			/* signed integers, sign-extended to int64 */
	VK_U,			/* unsigned integers, zero-extended to uint64 */
	VK_B,			/* bool: 0 or 1 in .u */
} vkind;

/* One value while computing. */
typedef union cval {
	float f32;		/* VK_F32 */
	double f64;		/* VK_F64 */
	int64_t s;		/* VK_S */
	uint64_t u;		/* VK_U, VK_B */
} cval;

/* A materialised buffer, shared by the views over it. */
typedef struct rbuf {
	int refs;		/* views holding it */
	int64_t n;		/* elements */
	cval *v;		/* the elements, row-major */
} rbuf;

/* One layer of a view: index -> flat index of the layer below (or of the buffer). */
typedef struct layer {
	int rank;		/* dims */
	int64_t shape[MAXR];	/* extents */
	int64_t stride[MAXR];	/* flat steps per dim (0: broadcast, < 0: reversed) */
	int64_t off;		/* flat index of index 0 (valid points only) */
	int64_t lo[MAXR];	/* valid when lo <= index < hi on every dim (pad) */
	int64_t hi[MAXR];
	int bounded;		/* some dim has bounds narrower than its extent */
	int dead;		/* every element is the fill value (0) */
} layer;

/* A runtime value: layers l[0..nl-1] over buf; l[nl-1] has the value's shape. */
typedef struct rval {
	rbuf *buf;		/* the buffer (one reference) */
	int nl;			/* layers */
	layer *l;		/* owned */
} rval;

/* Interpreter state. */
typedef struct interp {
	tinyc_ctx *ctx;
	const tinyc_rbssa *f;
	tinyc_io *io;
	int64_t *sym;		/* symbol values */
	rval *val;		/* per instruction */
	int64_t (*shape)[MAXR];	/* per instruction: its concrete shape */
} interp;

static vkind kind_of(tinyc_dtype dt)
{
	switch (dt) {
	case TINYC_HALF: case TINYC_BFLOAT16: case TINYC_FLOAT: return VK_F32;
	case TINYC_DOUBLE: return VK_F64;
	case TINYC_BOOL: return VK_B;
	default: return tinyc_dtype_is_signed(dt) ? VK_S : VK_U;
	}
}

static int width(tinyc_dtype dt)
{
	return 8 * tinyc_dtype_size(dt);
}

/* ---- integer helpers ----------------------------------------------------------------------- */

/* The low w bits of x sign-extended (w in 8..64). */
static int64_t sext(uint64_t x, int w)
{
	if (w >= 64) {
		int64_t r;
		memcpy(&r, &x, 8);
		return r;
	}
	uint64_t m = UINT64_C(1) << (w - 1);
	x &= (m << 1) - 1;
	x = (x ^ m) - m;	/* two's complement sign extension, in unsigned arithmetic */
	int64_t r;
	memcpy(&r, &x, 8);
	return r;
}

/* The low w bits of x. */
static uint64_t zext(uint64_t x, int w)
{
	return w >= 64 ? x : x & ((UINT64_C(1) << w) - 1);
}

/* The bit pattern of an integer/bool value. */
static uint64_t ibits(vkind k, cval x)
{
	return k == VK_S ? (uint64_t)x.s : x.u;
}

/* The pattern u stored in integer/bool dtype dt. */
static cval from_bits(tinyc_dtype dt, uint64_t u)
{
	cval r;
	vkind k = kind_of(dt);
	if (k == VK_S)
		r.s = sext(u, width(dt));
	else if (k == VK_U)
		r.u = zext(u, width(dt));
	else
		r.u = u != 0;
	return r;
}

/* Truncate x toward zero and saturate to signed w bits (NaN -> 0). */
static int64_t sat_signed(double x, int w)
{
	if (x != x)
		return 0;
	double lim = ldexp(1.0, w - 1);	/* 2^(w-1), exact */
	double t = trunc(x);
	if (t >= lim)
		return w >= 64 ? INT64_MAX : (INT64_C(1) << (w - 1)) - 1;
	if (t <= -lim)
		return w >= 64 ? INT64_MIN : -(INT64_C(1) << (w - 1));
	return (int64_t)t;
}

/* Truncate x toward zero and saturate to unsigned w bits (NaN and negatives -> 0). */
static uint64_t sat_unsigned(double x, int w)
{
	if (x != x || x <= 0)
		return 0;
	double lim = ldexp(1.0, w);
	double t = trunc(x);
	if (t >= lim)
		return w >= 64 ? UINT64_MAX : (UINT64_C(1) << w) - 1;
	return (uint64_t)t;
}

/* ---- float helpers ------------------------------------------------------------------------- */

/* A double rounded once to float32 (overflow to infinity). */
static float to_f32(double x)
{
	return (float)tinyc_round_to_dtype(TINYC_FLOAT, x);
}

/* The value of a float-kind cval as double. */
static double fval(vkind k, cval x)
{
	return k == VK_F32 ? (double)x.f32 : x.f64;
}

/* The stored bits of a float value of dtype dt. */
static uint64_t float_pattern(tinyc_dtype dt, cval x)
{
	if (dt == TINYC_HALF)
		return tinyc_f32_to_f16(x.f32);
	if (dt == TINYC_BFLOAT16)
		return tinyc_f32_to_bf16(x.f32);
	if (dt == TINYC_FLOAT) {
		uint32_t w;
		memcpy(&w, &x.f32, 4);
		return w;
	}
	uint64_t u;
	memcpy(&u, &x.f64, 8);
	return u;
}

/* The float value of dtype dt with stored bits u. */
static cval float_from_pattern(tinyc_dtype dt, uint64_t u)
{
	cval r;
	if (dt == TINYC_HALF) {
		r.f32 = tinyc_f16_to_f32((uint16_t)u);
	} else if (dt == TINYC_BFLOAT16) {
		r.f32 = tinyc_bf16_to_f32((uint16_t)u);
	} else if (dt == TINYC_FLOAT) {
		uint32_t w = (uint32_t)u;
		memcpy(&r.f32, &w, 4);
	} else {
		memcpy(&r.f64, &u, 8);
	}
	return r;
}

/* ---- casts --------------------------------------------------------------------------------- */

/* cast: x of dtype from converted to dtype to. */
static cval cast_val(tinyc_dtype from, tinyc_dtype to, cval x)
{
	vkind kf = kind_of(from), kt = kind_of(to);
	cval r;
	if (kf == VK_F32 || kf == VK_F64) {
		double d = fval(kf, x);
		switch (kt) {
		case VK_F32: r.f32 = (float)tinyc_round_to_dtype(to, d); break;
		case VK_F64: r.f64 = d; break;
		case VK_B: r.u = d != 0; break;
		case VK_S: r.s = sat_signed(d, width(to)); break;
		default: r.u = sat_unsigned(d, width(to)); break;
		}
		return r;
	}
	if (kt == VK_F32 || kt == VK_F64) {
		double d = kf == VK_S ? tinyc_int_to_float(to, x.s, 0)
				      : tinyc_int_to_float(to, (int64_t)x.u, 1);
		if (kt == VK_F32)
			r.f32 = (float)d;	/* already a value of `to`: exact */
		else
			r.f64 = d;
		return r;
	}
	return from_bits(to, ibits(kf, x));
}

/* bitcast: the stored bits of x (dtype from) read as dtype to (same size). */
static cval bitcast_val(tinyc_dtype from, tinyc_dtype to, cval x)
{
	vkind kf = kind_of(from), kt = kind_of(to);
	uint64_t u = (kf == VK_F32 || kf == VK_F64) ? float_pattern(from, x)
						    : zext(ibits(kf, x), width(from));
	if (kt == VK_F32 || kt == VK_F64)
		return float_from_pattern(to, u);
	return from_bits(to, u);
}

/* ---- arithmetic ---------------------------------------------------------------------------- */

/* A unary op on x of dtype dt. */
static cval unary_val(tinyc_rb_op op, tinyc_dtype dt, cval x)
{
	cval r = x;
	switch (kind_of(dt)) {
	case VK_F32:	/* computed in double, rounded once (the same bits as in float) */
		r.f32 = to_f32(tinyc_op_unary_f(tinyc_rb_op_uop(op), x.f32));
		return r;
	case VK_F64:
		r.f64 = tinyc_op_unary_f(tinyc_rb_op_uop(op), x.f64);
		return r;
	case VK_S:
		if (op == TINYC_RB_NEG)
			r.s = sext(UINT64_C(0) - (uint64_t)x.s, width(dt));
		else if (op == TINYC_RB_RELU)
			r.s = x.s < 0 ? 0 : x.s;
		return r;
	case VK_U:
		if (op == TINYC_RB_NEG)
			r.u = zext(UINT64_C(0) - x.u, width(dt));
		return r;
	case VK_B:
		if (op == TINYC_RB_NEG)
			r.u = x.u ? 0 : 1;
		return r;
	}
	return r;
}

/* A binary op (not compare) on a, b of dtype dt. */
static cval binary_val(tinyc_rb_op op, tinyc_dtype dt, cval a, cval b)
{
	cval r = {0};
	int w = width(dt);
	switch (kind_of(dt)) {
	case VK_F32:
		switch (op) {
		case TINYC_RB_ADD: r.f32 = a.f32 + b.f32; break;
		case TINYC_RB_SUB: r.f32 = a.f32 - b.f32; break;
		case TINYC_RB_MUL: r.f32 = a.f32 * b.f32; break;
		case TINYC_RB_DIV: r.f32 = a.f32 / b.f32; break;
		case TINYC_RB_IDIV: r.f32 = to_f32(trunc((double)a.f32 / (double)b.f32)); break;
		case TINYC_RB_MOD: r.f32 = fmodf(a.f32, b.f32); break;
		case TINYC_RB_MAX: r.f32 = (float)tinyc_fminmax(a.f32, b.f32, 1); break;
		default: break;
		}
		return r;
	case VK_F64:
		switch (op) {
		case TINYC_RB_ADD: r.f64 = a.f64 + b.f64; break;
		case TINYC_RB_SUB: r.f64 = a.f64 - b.f64; break;
		case TINYC_RB_MUL: r.f64 = a.f64 * b.f64; break;
		case TINYC_RB_DIV: r.f64 = a.f64 / b.f64; break;
		case TINYC_RB_IDIV: r.f64 = trunc(a.f64 / b.f64); break;
		case TINYC_RB_MOD: r.f64 = fmod(a.f64, b.f64); break;
		case TINYC_RB_MAX: r.f64 = tinyc_fminmax(a.f64, b.f64, 1); break;
		default: break;
		}
		return r;
	case VK_S: {
		uint64_t x = (uint64_t)a.s, y = (uint64_t)b.s;
		unsigned sh = (unsigned)(y & (uint64_t)(w - 1));
		switch (op) {
		case TINYC_RB_ADD: r.s = sext(x + y, w); break;
		case TINYC_RB_SUB: r.s = sext(x - y, w); break;
		case TINYC_RB_MUL: r.s = sext(x * y, w); break;
		case TINYC_RB_IDIV:
			r.s = b.s == 0 ? 0 : b.s == -1 ? sext(UINT64_C(0) - x, w) : a.s / b.s;
			break;
		case TINYC_RB_MOD: r.s = (b.s == 0 || b.s == -1) ? 0 : a.s % b.s; break;
		case TINYC_RB_MAX: r.s = a.s < b.s ? b.s : a.s; break;
		case TINYC_RB_AND: r.s = sext(x & y, w); break;
		case TINYC_RB_OR: r.s = sext(x | y, w); break;
		case TINYC_RB_XOR: r.s = sext(x ^ y, w); break;
		case TINYC_RB_SHL: r.s = sext(x << sh, w); break;
		case TINYC_RB_SHR:	/* arithmetic: floor(a / 2^sh) */
			r.s = a.s < 0 ? -1 - (int64_t)((~x) >> sh) : (int64_t)(x >> sh);
			break;
		default: break;
		}
		return r;
	}
	case VK_U: {
		unsigned sh = (unsigned)(b.u & (uint64_t)(w - 1));
		switch (op) {
		case TINYC_RB_ADD: r.u = zext(a.u + b.u, w); break;
		case TINYC_RB_SUB: r.u = zext(a.u - b.u, w); break;
		case TINYC_RB_MUL: r.u = zext(a.u * b.u, w); break;
		case TINYC_RB_IDIV: r.u = b.u ? a.u / b.u : 0; break;
		case TINYC_RB_MOD: r.u = b.u ? a.u % b.u : 0; break;
		case TINYC_RB_MAX: r.u = a.u < b.u ? b.u : a.u; break;
		case TINYC_RB_AND: r.u = a.u & b.u; break;
		case TINYC_RB_OR: r.u = a.u | b.u; break;
		case TINYC_RB_XOR: r.u = a.u ^ b.u; break;
		case TINYC_RB_SHL: r.u = zext(a.u << sh, w); break;
		case TINYC_RB_SHR: r.u = a.u >> sh; break;
		default: break;
		}
		return r;
	}
	case VK_B:
		switch (op) {
		case TINYC_RB_ADD: case TINYC_RB_OR: case TINYC_RB_MAX: r.u = a.u | b.u; break;
		case TINYC_RB_MUL: case TINYC_RB_AND: r.u = a.u & b.u; break;
		case TINYC_RB_SUB: case TINYC_RB_XOR: r.u = a.u ^ b.u; break;
		default: break;
		}
		return r;
	}
	return r;
}

/* compare: a pred b on dtype dt, as bool. */
static cval compare_val(tinyc_rb_pred p, tinyc_dtype dt, cval a, cval b)
{
	cval r;
	vkind k = kind_of(dt);
	int lt, eq;
	if (k == VK_F32 || k == VK_F64) {
		double x = fval(k, a), y = fval(k, b);
		lt = x < y;
		eq = x == y;
	} else if (k == VK_S) {
		lt = a.s < b.s;
		eq = a.s == b.s;
	} else {
		lt = a.u < b.u;
		eq = a.u == b.u;
	}
	r.u = p == TINYC_RB_LT ? lt : p == TINYC_RB_EQ ? eq : !eq;
	return r;
}

/* ---- host tensors ---------------------------------------------------------------------------- */

/* Element i of a host tensor, decoded from its stored bytes. */
static cval load_elem(const tinyc_tensor *t, int64_t i)
{
	int size = tinyc_dtype_size(t->dtype);
	const unsigned char *p = (const unsigned char *)t->data + i * size;
	uint64_t u = 0;
	switch (size) {
	case 1: u = p[0]; break;
	case 2: { uint16_t v; memcpy(&v, p, 2); u = v; break; }
	case 4: { uint32_t v; memcpy(&v, p, 4); u = v; break; }
	default: memcpy(&u, p, 8); break;
	}
	vkind k = kind_of(t->dtype);
	if (k == VK_F32 || k == VK_F64)
		return float_from_pattern(t->dtype, u);
	return from_bits(t->dtype, u);
}

/* Store x (of t's dtype) as element i: 16-bit floats round to their format here. */
static void store_elem(tinyc_tensor *t, int64_t i, cval x)
{
	int size = tinyc_dtype_size(t->dtype);
	unsigned char *p = (unsigned char *)t->data + i * size;
	vkind k = kind_of(t->dtype);
	uint64_t u = (k == VK_F32 || k == VK_F64) ? float_pattern(t->dtype, x) : ibits(k, x);
	switch (size) {
	case 1: p[0] = (unsigned char)(k == VK_B ? u != 0 : u); break;
	case 2: { uint16_t v = (uint16_t)u; memcpy(p, &v, 2); break; }
	case 4: { uint32_t v = (uint32_t)u; memcpy(p, &v, 4); break; }
	default: memcpy(p, &u, 8); break;
	}
}

/* ---- views ---------------------------------------------------------------------------------- */

static void buf_release(rbuf *b)
{
	if (b && --b->refs == 0) {
		free(b->v);
		free(b);
	}
}

static void val_release(rval *v)
{
	buf_release(v->buf);
	free(v->l);
	memset(v, 0, sizeof(*v));
}

/* Recompute whether layer L has bounds narrower than its extents. */
static void layer_bounds(layer *L)
{
	L->bounded = 0;
	for (int d = 0; d < L->rank; d++)
		if (L->lo[d] > 0 || L->hi[d] < L->shape[d])
			L->bounded = 1;
}

/* A row-major, unguarded layer of the given shape. */
static void layer_rowmajor(layer *L, int rank, const int64_t *shape)
{
	memset(L, 0, sizeof(*L));
	L->rank = rank;
	int64_t st = 1;
	for (int d = rank - 1; d >= 0; d--) {
		L->shape[d] = shape[d];
		L->stride[d] = st;
		L->hi[d] = shape[d];
		st *= shape[d];
	}
}

static int64_t numel(int rank, const int64_t *shape)
{
	int64_t n = 1;
	for (int d = 0; d < rank; d++)
		n *= shape[d];
	return n;
}

/* Element idx of view v (zero where a guard fails). */
static cval view_get(const rval *v, const int64_t *idx)
{
	static const cval zero;
	int64_t cur[MAXR];
	const int64_t *ix = idx;
	for (int k = v->nl - 1;; k--) {
		const layer *L = &v->l[k];
		if (L->dead)
			return zero;
		int64_t flat = L->off;
		for (int d = 0; d < L->rank; d++) {
			if (L->bounded && (ix[d] < L->lo[d] || ix[d] >= L->hi[d]))
				return zero;
			flat += ix[d] * L->stride[d];
		}
		if (k == 0)
			return v->buf->v[flat];
		const layer *P = &v->l[k - 1];
		for (int d = P->rank - 1; d >= 0; d--) {
			cur[d] = flat % P->shape[d];
			flat /= P->shape[d];
		}
		ix = cur;
	}
}

/* A copy of x's layers with one extra slot on top; the buffer gains a reference. */
static int val_derive(interp *it, const rval *x, rval *out, int extra)
{
	out->l = tinyc_malloc(it->ctx, sizeof(layer) * (size_t)(x->nl + extra));
	if (!out->l)
		return -1;
	memcpy(out->l, x->l, sizeof(layer) * (size_t)x->nl);
	out->nl = x->nl;
	out->buf = x->buf;
	x->buf->refs++;
	return 0;
}

/* Fold a reshape of T to shape ns (rank q) into one layer *R; 0 when T's dims cannot be
 * regrouped by strides (a guarded or non-contiguous dim inside a merged group). */
static int reshape_fold(const layer *T, int q, const int64_t *ns, layer *R)
{
	layer_rowmajor(R, q, ns);
	R->off = T->off;
	if (T->dead) {
		R->dead = 1;
		return 1;
	}
	int oi[MAXR], on = 0, nj[MAXR], nn = 0;
	for (int d = 0; d < T->rank; d++) {
		if (T->shape[d] != 1) {
			oi[on++] = d;
			if (T->lo[d] > 0 || T->hi[d] < T->shape[d])
				return 0;
		} else if (T->lo[d] > 0 || T->hi[d] < 1) {	/* its only index is padding */
			R->dead = 1;
			return 1;
		}
	}
	for (int d = 0; d < q; d++) {
		R->stride[d] = 0;
		if (ns[d] != 1)
			nj[nn++] = d;
	}
	int i = 0, j = 0;
	while (i < on || j < nn) {
		if (i >= on || j >= nn)
			return 0;
		int i0 = i, j0 = j;
		int64_t po = T->shape[oi[i++]], pn = ns[nj[j++]];
		while (po != pn) {
			if (po < pn) {
				if (i >= on)
					return 0;
				po *= T->shape[oi[i++]];
			} else {
				if (j >= nn)
					return 0;
				pn *= ns[nj[j++]];
			}
		}
		for (int k = i0; k + 1 < i; k++)
			if (T->stride[oi[k]] != T->stride[oi[k + 1]] * T->shape[oi[k + 1]])
				return 0;
		int64_t st = T->stride[oi[i - 1]];
		for (int k = j - 1; k >= j0; k--) {
			R->stride[nj[k]] = st;
			st *= ns[nj[k]];
		}
	}
	return 1;
}

/* ---- the interpreter ------------------------------------------------------------------------ */

/* Report a problem at instruction i.  Returns -1. */
static int run_err(interp *it, int i, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int run_err(interp *it, int i, const char *kind, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tinyc_verror_at(it->ctx, it->f->g ? it->f->g->src : NULL, it->f->inst[i].loc, kind, fmt, ap);
	va_end(ap);
	return -1;
}

/* "[2,3,4]" of a concrete shape, in a static-free caller buffer. */
static const char *shp(char *s, size_t cap, int rank, const int64_t *shape)
{
	size_t n = (size_t)snprintf(s, cap, "[");
	for (int d = 0; d < rank && n < cap; d++)
		n += (size_t)snprintf(s + n, cap - n, d ? ",%lld" : "%lld", (long long)shape[d]);
	if (n < cap)
		snprintf(s + n, cap - n, "]");
	return s;
}

/* Resolve instruction i's shape under the symbol values; checks the size limits. */
static int resolve_shape(interp *it, int i)
{
	const tinyc_rb_inst *in = &it->f->inst[i];
	int64_t n = 1;
	for (int d = 0; d < in->rank; d++) {
		tinyc_dim dm = in->shape[d];
		int64_t v = dm.sym < 0 ? dm.val : it->sym[dm.sym];
		if (v < 0)
			return run_err(it, i, "UnboundSymbol", "symbol %s has no value (bind it, or "
				       "give an input whose shape has it)",
				       it->f->g ? it->f->g->syms[dm.sym] : "?");
		it->shape[i][d] = v;
		if (v > 0 && n > RB_MAX_VIEW / v)
			return run_err(it, i, "TooLarge", "a value of more than 2^50 elements");
		n *= v;
	}
	return 0;
}

/* Whether instruction i's concrete shape is (rank, shape). */
static int check_shape(interp *it, int i, int rank, const int64_t *shape, const char *what)
{
	const tinyc_rb_inst *in = &it->f->inst[i];
	int ok = rank == in->rank;
	for (int d = 0; ok && d < rank; d++)
		ok = shape[d] == it->shape[i][d];
	if (ok)
		return 0;
	char a[256], b[256];
	return run_err(it, i, "ShapeMismatch", "%s gives %s, the instruction says %s", what,
		       shp(a, sizeof(a), rank, shape), shp(b, sizeof(b), in->rank, it->shape[i]));
}

/* A new buffer of n elements, with one identity layer of instruction i's shape. */
static cval *val_new(interp *it, int i, rval *out)
{
	const tinyc_rb_inst *in = &it->f->inst[i];
	int64_t n = numel(in->rank, it->shape[i]);
	if (n > RB_MAX_ELEMS) {
		run_err(it, i, "TooLarge", "%s would materialise %lld elements (limit 2^31)",
			tinyc_rb_op_name(in->op), (long long)n);
		return NULL;
	}
	out->buf = tinyc_calloc(it->ctx, 1, sizeof(rbuf));
	out->l = tinyc_malloc(it->ctx, sizeof(layer));
	if (out->buf)
		out->buf->v = tinyc_malloc(it->ctx, sizeof(cval) * (size_t)(n ? n : 1));
	if (!out->buf || !out->l || !out->buf->v) {
		if (out->buf)
			free(out->buf->v);
		free(out->buf);
		free(out->l);
		memset(out, 0, sizeof(*out));
		return NULL;
	}
	out->buf->refs = 1;
	out->buf->n = n;
	out->nl = 1;
	layer_rowmajor(&out->l[0], in->rank, it->shape[i]);
	return out->buf->v;
}

/* Advance a row-major index over shape. */
static void next_index(int rank, const int64_t *shape, int64_t *idx)
{
	for (int d = rank - 1; d >= 0; d--) {
		if (++idx[d] < shape[d])
			return;
		idx[d] = 0;
	}
}

/* The strides of instruction i (symbols bound) into stride[], and the flat storage extent they
 * span (1 + sum of (size - 1) * stride) into *ext; errors for unbound or oversized strides. */
static int strided_extent(interp *it, int i, int64_t *stride, int64_t *ext)
{
	const tinyc_rb_inst *in = &it->f->inst[i];
	for (int d = 0; d < in->rank; d++) {
		tinyc_dim s = in->strides[d];
		stride[d] = s.sym < 0 ? s.val : it->sym[s.sym];
		if (stride[d] < 0)
			return run_err(it, i, "UnboundSymbol", "a stride of \"%s\" has no value",
				       in->name);
		if (stride[d] > 0 && it->shape[i][d] - 1 > (RB_MAX_ELEMS - *ext) / stride[d])
			return run_err(it, i, "TooLarge", "strided storage above 2^31 elements");
		*ext += (it->shape[i][d] - 1) * stride[d];
	}
	return 0;
}

/* read: the input of the slot, loaded into a buffer; strided reads get a strided layer. */
static int run_read(interp *it, int i)
{
	const tinyc_rb_inst *in = &it->f->inst[i];
	const tinyc_io *io = it->io;
	char a[256], b[256];
	if (in->slot < 0 || in->slot >= io->nin || !io->in[in->slot])
		return run_err(it, i, "MissingInput", "no input tensor for \"%s\" (slot %lld)",
			       in->name, (long long)in->slot);
	const tinyc_tensor *t = io->in[in->slot];
	if (t->dtype != in->dtype)
		return run_err(it, i, "InputMismatch", "input \"%s\" is %s, the function reads %s",
			       in->name, tinyc_dtype_name(t->dtype), tinyc_dtype_name(in->dtype));
	int64_t stride[MAXR], ext = 1;
	if (in->has_strides) {
		if (strided_extent(it, i, stride, &ext) < 0)
			return -1;
		if (numel(in->rank, it->shape[i]) == 0)
			ext = 0;
		if (numel(t->rank, t->shape) < ext)
			return run_err(it, i, "InputMismatch", "input \"%s\" has %lld elements; its "
				       "strides need %lld", in->name,
				       (long long)numel(t->rank, t->shape), (long long)ext);
	} else if (t->rank != in->rank || memcmp(t->shape, it->shape[i],
						  sizeof(int64_t) * (size_t)in->rank)) {
		return run_err(it, i, "InputMismatch", "input \"%s\" has shape %s, the function "
			       "reads %s", in->name, shp(a, sizeof(a), t->rank, t->shape),
			       shp(b, sizeof(b), in->rank, it->shape[i]));
	}
	int64_t n = numel(t->rank, t->shape);
	if (n > RB_MAX_ELEMS)
		return run_err(it, i, "TooLarge", "input \"%s\" has more than 2^31 elements",
			       in->name);
	rval *v = &it->val[i];
	v->buf = tinyc_calloc(it->ctx, 1, sizeof(rbuf));
	v->l = tinyc_malloc(it->ctx, sizeof(layer));
	if (!v->buf || !v->l)
		return -1;
	v->buf->refs = 1;
	v->nl = 1;
	if (!(v->buf->v = tinyc_malloc(it->ctx, sizeof(cval) * (size_t)(n ? n : 1))))
		return -1;
	v->buf->n = n;
	for (int64_t k = 0; k < n; k++)
		v->buf->v[k] = load_elem(t, k);
	layer_rowmajor(&v->l[0], in->rank, it->shape[i]);
	if (in->has_strides)
		for (int d = 0; d < in->rank; d++)
			v->l[0].stride[d] = stride[d];
	return 0;
}

/* constant: a one-element buffer holding the literal as the constant's dtype. */
static int run_constant(interp *it, int i)
{
	const tinyc_rb_inst *in = &it->f->inst[i];
	cval *out = val_new(it, i, &it->val[i]);
	if (!out)
		return -1;
	cval x;
	if (in->lit_is_float) {
		x.f64 = in->lit_f;
		out[0] = cast_val(TINYC_DOUBLE, in->dtype, x);
	} else {
		x.s = in->lit_i;
		out[0] = cast_val(TINYC_LONG, in->dtype, x);
	}
	return 0;
}

/* View ops: a new top layer (or a folded one) over the operand's layers. */
static int run_view(interp *it, int i)
{
	const tinyc_rb_inst *in = &it->f->inst[i];
	const rval *x = &it->val[in->args[0]];
	const layer *T = &x->l[x->nl - 1];
	rval *v = &it->val[i];
	layer N;
	char a[256], b[256];
	if (val_derive(it, x, v, 1) < 0)
		return -1;
	N = *T;
	switch (in->op) {
	case TINYC_RB_RESHAPE: {
		int64_t nx = numel(T->rank, T->shape), ny = numel(in->rank, it->shape[i]);
		if (nx != ny)
			return run_err(it, i, "ShapeMismatch", "reshape of %s (%lld elements) to %s "
				       "(%lld)", shp(a, sizeof(a), T->rank, T->shape), (long long)nx,
				       shp(b, sizeof(b), in->rank, it->shape[i]), (long long)ny);
		if (reshape_fold(T, in->rank, it->shape[i], &N)) {
			v->l[v->nl - 1] = N;
		} else {
			layer_rowmajor(&v->l[v->nl], in->rank, it->shape[i]);
			v->nl++;
		}
		return 0;
	}
	case TINYC_RB_TRANSPOSE:
		if (in->ndims != T->rank)
			return run_err(it, i, "InvalidAttribute", "perm of %d entries for rank %d",
				       in->ndims, T->rank);
		for (int d = 0; d < in->ndims; d++) {
			int p = in->dims[d];
			N.shape[d] = T->shape[p];
			N.stride[d] = T->stride[p];
			N.lo[d] = T->lo[p];
			N.hi[d] = T->hi[p];
		}
		break;
	case TINYC_RB_BROADCAST_IN_DIM: {
		int r = in->rank, p = T->rank;
		int sup[MAXR] = {0};
		if (p > r)
			return run_err(it, i, "BroadcastMismatch", "rank %d to rank %d", p, r);
		for (int k = 0; k < in->ndims; k++)
			if (in->dims[k] >= r - p && in->dims[k] < r)
				sup[in->dims[k]] = 1;
		N.rank = r;
		for (int d = 0; d < r; d++) {
			int j = d - (r - p);
			int64_t rs = it->shape[i][d];
			N.shape[d] = rs;
			N.stride[d] = 0;
			N.lo[d] = 0;
			N.hi[d] = rs;
			if (j < 0)
				continue;
			if (sup[d] && T->shape[j] == rs) {
				N.stride[d] = T->stride[j];
				N.lo[d] = T->lo[j];
				N.hi[d] = T->hi[j];
			} else if (!sup[d] && T->shape[j] == 1) {
				if (T->lo[j] > 0 || T->hi[j] < 1)
					N.dead = 1;	/* the broadcast element is padding */
			} else {
				return run_err(it, i, "BroadcastMismatch", "%s does not broadcast to %s "
					       "at dim %d", shp(a, sizeof(a), p, T->shape),
					       shp(b, sizeof(b), r, it->shape[i]), d);
			}
		}
		break;
	}
	case TINYC_RB_PAD:
		for (int d = 0; d < T->rank; d++) {
			N.shape[d] = T->shape[d] + in->lo[d] + in->hi[d];
			N.off -= in->lo[d] * T->stride[d];
			N.lo[d] = (T->lo[d] > 0 ? T->lo[d] : 0) + in->lo[d];
			N.hi[d] = (T->hi[d] < T->shape[d] ? T->hi[d] : T->shape[d]) + in->lo[d];
		}
		break;
	case TINYC_RB_SLICE:
		for (int d = 0; d < T->rank; d++) {
			if (in->lo[d] < 0 || in->lo[d] > in->hi[d] || in->hi[d] > T->shape[d])
				return run_err(it, i, "InvalidAttribute", "slice [%lld,%lld) of dim %d "
					       "(size %lld)", (long long)in->lo[d], (long long)in->hi[d],
					       d, (long long)T->shape[d]);
			N.shape[d] = in->hi[d] - in->lo[d];
			N.off += in->lo[d] * T->stride[d];
			N.lo[d] = T->lo[d] - in->lo[d];
			N.hi[d] = T->hi[d] - in->lo[d];
		}
		break;
	case TINYC_RB_REVERSE:
		for (int k = 0; k < in->ndims; k++) {
			int d = in->dims[k];
			N.off += (T->shape[d] - 1) * T->stride[d];
			N.stride[d] = -T->stride[d];
			N.lo[d] = T->shape[d] - T->hi[d];
			N.hi[d] = T->shape[d] - T->lo[d];
		}
		break;
	default:
		return run_err(it, i, "UnsupportedOp", "not a view op");
	}
	layer_bounds(&N);
	v->l[v->nl - 1] = N;
	return check_shape(it, i, N.rank, N.shape, tinyc_rb_op_name(in->op));
}

/* Elementwise ops: one result element per index, operands read through their views. */
static int run_ewise(interp *it, int i)
{
	const tinyc_rb_inst *in = &it->f->inst[i];
	const rval *x[3] = {NULL, NULL, NULL};
	tinyc_dtype sdt = it->f->inst[in->args[0]].dtype;
	for (int k = 0; k < in->nargs; k++) {
		x[k] = &it->val[in->args[k]];
		const layer *T = &x[k]->l[x[k]->nl - 1];
		if (check_shape(it, i, T->rank, T->shape, "an operand") < 0)
			return -1;
	}
	cval *out = val_new(it, i, &it->val[i]);
	if (!out)
		return -1;
	int64_t n = it->val[i].buf->n, idx[MAXR] = {0};
	for (int64_t e = 0; e < n; e++) {
		cval a = view_get(x[0], idx), r;
		switch (in->op) {
		case TINYC_RB_MATERIALIZE: r = a; break;
		case TINYC_RB_CAST: r = cast_val(sdt, in->dtype, a); break;
		case TINYC_RB_BITCAST: r = bitcast_val(sdt, in->dtype, a); break;
		case TINYC_RB_SELECT:
			r = a.u ? view_get(x[1], idx) : view_get(x[2], idx);
			break;
		case TINYC_RB_COMPARE:
			r = compare_val(in->pred, sdt, a, view_get(x[1], idx));
			break;
		default:
			if (in->nargs == 1)
				r = unary_val(in->op, sdt, a);
			else
				r = binary_val(in->op, sdt, a, view_get(x[1], idx));
			break;
		}
		out[e] = r;
		next_index(in->rank, it->shape[i], idx);
	}
	return 0;
}

/* reduce: per result element, fold the reduced dims (row-major) from init in acc. */
static int run_reduce(interp *it, int i)
{
	const tinyc_rb_inst *in = &it->f->inst[i];
	const rval *x = &it->val[in->args[0]];
	const layer *T = &x->l[x->nl - 1];
	tinyc_dtype xdt = it->f->inst[in->args[0]].dtype, acc = in->acc;
	int red[MAXR] = {0}, keep = in->rank == T->rank;
	int64_t want[MAXR], rshape[MAXR];
	int r = 0, nr = 0;
	for (int k = 0; k < in->ndims; k++)
		if (in->dims[k] >= 0 && in->dims[k] < T->rank)
			red[in->dims[k]] = 1;
	for (int d = 0; d < T->rank; d++) {
		if (red[d])
			rshape[nr++] = T->shape[d];
		if (!red[d] || keep)
			want[r++] = red[d] ? 1 : T->shape[d];
	}
	if (check_shape(it, i, r, want, "reduce") < 0)
		return -1;
	cval init;
	if (in->init_is_float) {
		cval d = {.f64 = in->init_f};
		init = cast_val(TINYC_DOUBLE, acc, d);
	} else {
		init = from_bits(acc, (uint64_t)in->init_i);
	}
	tinyc_rb_op fold = in->redop == TINYC_RED_ADD ? TINYC_RB_ADD
			   : in->redop == TINYC_RED_MUL ? TINYC_RB_MUL : TINYC_RB_MAX;
	cval *out = val_new(it, i, &it->val[i]);
	if (!out)
		return -1;
	int64_t n = it->val[i].buf->n, cnt = numel(nr, rshape);
	int64_t oidx[MAXR] = {0}, xidx[MAXR], ridx[MAXR];
	for (int64_t e = 0; e < n; e++) {
		for (int d = 0, o = 0; d < T->rank; d++) {	/* kept dims from the result index */
			if (red[d] && !keep)
				continue;
			xidx[d] = red[d] ? 0 : oidx[o];
			o++;
		}
		memset(ridx, 0, sizeof(ridx));
		cval a = init;
		for (int64_t t = 0; t < cnt; t++) {
			for (int d = 0, k = 0; d < T->rank; d++)
				if (red[d])
					xidx[d] = ridx[k++];
			a = binary_val(fold, acc, a, cast_val(xdt, acc, view_get(x, xidx)));
			next_index(nr, rshape, ridx);
		}
		out[e] = cast_val(acc, in->dtype, a);
		next_index(in->rank, it->shape[i], oidx);
	}
	return 0;
}

/* yield: write the value into a new host tensor (dense, or strided flat storage). */
static int run_yield(interp *it, int i, int k)
{
	const tinyc_rb_inst *in = &it->f->inst[i];
	const rval *x = &it->val[in->args[0]];
	const layer *T = &x->l[x->nl - 1];
	if (check_shape(it, i, T->rank, T->shape, "the yielded value") < 0)
		return -1;
	int64_t stride[MAXR], ext = 1, n = numel(in->rank, it->shape[i]);
	tinyc_tensor *t;
	if (in->has_strides) {
		if (strided_extent(it, i, stride, &ext) < 0)
			return -1;
		if (n == 0)
			ext = 0;
		t = tinyc_tensor_alloc(it->ctx, in->dtype, 1, &ext);
	} else {
		if (n > RB_MAX_ELEMS)
			return run_err(it, i, "TooLarge", "output \"%s\" above 2^31 elements", in->name);
		t = tinyc_tensor_alloc(it->ctx, in->dtype, in->rank, it->shape[i]);
	}
	if (!t)
		return -1;
	int64_t idx[MAXR] = {0};
	for (int64_t e = 0; e < n; e++) {
		int64_t off = e;
		if (in->has_strides) {
			off = 0;
			for (int d = 0; d < in->rank; d++)
				off += idx[d] * stride[d];
		}
		store_elem(t, off, view_get(x, idx));
		next_index(in->rank, it->shape[i], idx);
	}
	it->io->out[k] = t;
	return 0;
}

/* The symbol values: runtime bindings, else compile-time ones; they must agree. */
static int bind_symbols(interp *it, const tinyc_bindings *b)
{
	const tinyc_rbssa *f = it->f;
	int bad = 0;
	for (int s = 0; s < f->nsym; s++) {
		int64_t rt = b && s < b->n ? b->val[s] : -1, ct = f->bind[s];
		it->sym[s] = rt >= 0 ? rt : ct;
		if (rt >= 0 && ct >= 0 && rt != ct)
			bad = tinyc_error(it->ctx, "InconsistentBinding", "%s = %lld at run time but "
					  "the function was compiled for %s = %lld",
					  f->g ? f->g->syms[s] : "?", (long long)rt,
					  f->g ? f->g->syms[s] : "?", (long long)ct);
	}
	return bad;
}

/* Free the outputs a previous run left in io. */
static void drop_outputs(tinyc_io *io)
{
	for (int k = 0; io->out && k < io->nout; k++)
		tinyc_tensor_free(io->out[k]);
	free(io->out);
	io->out = NULL;
	io->nout = 0;
}

/* Execute f (see lower.h). */
int tinyc_rbssa_run(tinyc_ctx *ctx, const tinyc_rbssa *f, const tinyc_bindings *b, tinyc_io *io)
{
	if (!f || !io)
		return tinyc_error(ctx, "InvalidArgument", "no RB-SSA function or io");
	drop_outputs(io);
	interp it = {ctx, f, io, NULL, NULL, NULL};
	int nyield = 0, rc = 0;
	int *last = NULL;
	for (int i = 0; i < f->n; i++)
		nyield += f->inst[i].op == TINYC_RB_YIELD;
	it.sym = tinyc_calloc(ctx, (size_t)(f->nsym ? f->nsym : 1), sizeof(int64_t));
	it.val = tinyc_calloc(ctx, (size_t)(f->n ? f->n : 1), sizeof(rval));
	it.shape = tinyc_calloc(ctx, (size_t)(f->n ? f->n : 1), sizeof(*it.shape));
	last = tinyc_calloc(ctx, (size_t)(f->n ? f->n : 1), sizeof(int));
	io->out = tinyc_calloc(ctx, (size_t)(nyield ? nyield : 1), sizeof(tinyc_tensor *));
	if (!it.sym || !it.val || !it.shape || !last || !io->out) {
		rc = -1;
		goto out;
	}
	io->nout = nyield;
	if ((rc = bind_symbols(&it, b)) < 0)
		goto out;
	for (int i = 0; i < f->n; i++) {
		const tinyc_rb_inst *in = &f->inst[i];
		last[i] = i;
		if (in->nargs != tinyc_rb_op_nargs(in->op) || in->rank < 0 || in->rank > MAXR) {
			rc = run_err(&it, i, "InvalidGraph", "malformed instruction; verify first");
			goto out;
		}
		for (int k = 0; k < in->nargs; k++) {
			if (in->args[k] < 0 || in->args[k] >= i) {
				rc = run_err(&it, i, "UndefinedValue", "operand %d is not an earlier "
					     "value", k + 1);
				goto out;
			}
			last[in->args[k]] = i;
		}
	}
	for (int i = 0, k = 0; i < f->n; i++) {
		const tinyc_rb_inst *in = &f->inst[i];
		if ((rc = resolve_shape(&it, i)) < 0)
			goto out;
		switch (tinyc_rb_op_class(in->op)) {
		case TINYC_RB_CLASS_LEAF:
			rc = in->op == TINYC_RB_READ ? run_read(&it, i) : run_constant(&it, i);
			break;
		case TINYC_RB_CLASS_VIEW: rc = run_view(&it, i); break;
		case TINYC_RB_CLASS_EWISE: rc = run_ewise(&it, i); break;
		case TINYC_RB_CLASS_REDUCE: rc = run_reduce(&it, i); break;
		case TINYC_RB_CLASS_YIELD: rc = run_yield(&it, i, k++); break;
		}
		if (rc < 0)
			goto out;
		for (int a = 0; a < in->nargs; a++)	/* release operands after their last use */
			if (last[in->args[a]] == i)
				val_release(&it.val[in->args[a]]);
		if (last[i] == i)
			val_release(&it.val[i]);
	}
out:
	if (it.val)
		for (int i = 0; i < f->n; i++)
			val_release(&it.val[i]);
	free(it.val);
	free(it.shape);
	free(it.sym);
	free(last);
	if (rc < 0) {
		drop_outputs(io);
		return -1;
	}
	return 0;
}
