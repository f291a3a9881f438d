/* A CPU interpreter for GPU IR kernels (tinyc_gpu_interp, ir/gpuir.h).
 *
 * Every block of the grid runs in turn.  Its threads are interpreted one after another,
 * each until it finishes or reaches a synchronisation point: a barrier (every live thread
 * of the block must reach the same barrier, then all continue) or a warp-collective
 * operation (shuffle, ldmatrix, mma, __syncwarp: the 32 lanes of the warp must reach the same
 * statement, which then executes for all of them at once with the PTX semantics of the
 * fragments).  A thread's position is an explicit stack of (statement, program counter)
 * frames, so it can stop at any statement and resume later.
 *
 * Values are held as in the reference evaluator: floats as double rounded to their dtype
 * after every operation, signed integers sign-extended, unsigned ones masked, bool 0/1.
 * Memory keeps each dtype's native layout (16-bit floats as their bit patterns).  Asynchronous
 * copies complete immediately (so waits and mbarriers have nothing to do); TMA loads and
 * tensor maps are not interpreted (a diagnostic).
 *
 * Checked: out-of-bounds accesses (global, shared, register arrays), reads of registers
 * that were never written, integer division by zero (gives 0, as tinyc's lowering guards),
 * barrier divergence, warp collectives reached by part of a warp, deadlock.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/gpuir.h"
#include "ir/tensor.h"

/* A scalar value (the field used depends on the dtype's class). */
typedef union ival {
	int64_t i;		/* signed integers */
	uint64_t u;		/* unsigned integers, bool */
	double f;		/* floats, rounded to their dtype */
} ival;

/* A stack frame: a statement being executed and where in it. */
typedef struct frame {
	const tinyc_gstmt *s;	/* BLOCK, FOR or IF */
	int pc;			/* BLOCK: next child; FOR: 0 init, 1 test, 2 after body; IF: 0/1 */
} frame;

enum { T_RUN, T_BARRIER, T_WARP, T_DONE };

/* One thread. */
typedef struct ithread {
	int state;		/* T_RUN, T_BARRIER (at wait), T_WARP (at wait), T_DONE */
	const tinyc_gstmt *wait;	/* the barrier / collective it waits at */
	frame *stack;		/* frames */
	int nstack, capstack;
	ival *reg;		/* per variable: REG value */
	unsigned char *init;	/* per variable: REG written */
	ival **arr;		/* per variable: REG_ARRAY elements (NULL otherwise) */
	unsigned char **arr_init;	/* per variable: REG_ARRAY element written */
	int tid[3];		/* threadIdx */
	int linear;		/* linear thread index */
} ithread;

/* The interpreter of one kernel launch. */
typedef struct interp {
	tinyc_ctx *ctx;
	const tinyc_gpu_module *m;
	const tinyc_gkernel *k;
	const tinyc_gpu_mem *mem;
	int64_t grid[3];	/* grid extents */
	int bid[3];		/* current block */
	unsigned char **smem;	/* per variable: shared storage of the current block */
	unsigned char *dyn;	/* the dynamic segment */
	ithread *th;		/* threads of the block */
	int nth;		/* number of threads */
	int failed;		/* an error was reported */
} interp;

/* Report an error (once). */
static int ierr(interp *in, const ithread *t, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int ierr(interp *in, const ithread *t, const char *fmt, ...)
{
	if (in->failed)
		return -1;
	in->failed = 1;
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (t)
		tinyc_error(in->ctx, "GpuInterpError", "kernel %s, block (%d,%d,%d), thread (%d,%d,%d): %s",
			    in->k->name, in->bid[0], in->bid[1], in->bid[2], t->tid[0], t->tid[1],
			    t->tid[2], msg);
	else
		tinyc_error(in->ctx, "GpuInterpError", "kernel %s: %s", in->k->name, msg);
	return -1;
}

/* --------------------------------------------------------- value helpers ---- */

static int is_f(tinyc_dtype t)
{
	return tinyc_dtype_is_float(t);
}

static int is_s(tinyc_dtype t)
{
	return tinyc_dtype_is_int(t) && tinyc_dtype_is_signed(t);
}

/* Wrap a 64-bit pattern to integer dtype t. */
static ival iwrap(tinyc_dtype t, uint64_t u)
{
	ival r;
	int bits = 8 * tinyc_dtype_size(t);
	if (t == TINYC_BOOL) {
		r.u = u != 0;
		return r;
	}
	if (bits < 64) {
		u &= (UINT64_C(1) << bits) - 1;
		if (is_s(t) && (u >> (bits - 1)))
			u |= ~((UINT64_C(1) << bits) - 1);
	}
	r.u = u;
	return r;
}

/* Round a float result to dtype t. */
static ival fval(tinyc_dtype t, double x)
{
	ival r;
	r.f = t == TINYC_DOUBLE ? x : tinyc_round_to_dtype(t, x);
	return r;
}


/* The storage bits of v (dtype t). */
static uint64_t vbits(tinyc_dtype t, ival v)
{
	return is_f(t) ? tinyc_float_to_bits(t, v.f) : v.u;
}

/* Decode element i of typed storage p. */
static ival mem_get(tinyc_dtype t, const unsigned char *p, int64_t i)
{
	int sz = tinyc_dtype_size(t);
	uint64_t u = 0;
	memcpy(&u, p + i * sz, (size_t)sz);	/* little-endian */
	if (is_f(t)) {
		ival r;
		r.f = tinyc_bits_to_float(t, u);
		return r;
	}
	return iwrap(t, u);
}

/* Encode v (dtype t) as element i of typed storage p. */
static void mem_set(tinyc_dtype t, unsigned char *p, int64_t i, ival v)
{
	int sz = tinyc_dtype_size(t);
	uint64_t u = vbits(t, v);
	if (t == TINYC_BOOL)
		u = u != 0;
	memcpy(p + i * sz, &u, (size_t)sz);
}

/* Convert v of dtype from to dtype to (CAST semantics). */
static ival convert(tinyc_dtype from, tinyc_dtype to, ival v)
{
	if (from == to)
		return v;
	if (to == TINYC_BOOL) {
		ival r;
		r.u = is_f(from) ? v.f != 0 : v.u != 0;
		return r;
	}
	if (is_f(from)) {
		if (is_f(to))
			return fval(to, v.f);
		double s = tinyc_round_to_dtype(to, v.f);	/* truncated, saturated, NaN -> 0 */
		ival r;
		if (isnan(s))
			s = 0;
		if (is_s(to))
			r.i = s >= 0x1p63 ? INT64_MAX : s <= -0x1p63 ? INT64_MIN : (int64_t)s;
		else
			r.u = s >= 0x1p64 ? UINT64_MAX : s <= 0 ? 0 : (uint64_t)s;
		return r;
	}
	if (is_f(to)) {
		ival r;
		r.f = from == TINYC_BOOL || !is_s(from) ? tinyc_int_to_float(to, (int64_t)v.u, 1)
							 : tinyc_int_to_float(to, v.i, 0);
		return r;
	}
	return iwrap(to, v.u);
}

/* ------------------------------------------------------------- evaluation ---- */

static ival eval(interp *in, ithread *t, const tinyc_gexpr *e);

/* Where variable v's element idx lives: storage, element count, dtype.  NULL on error. */
static unsigned char *mem_of(interp *in, ithread *t, int v, int64_t idx, int64_t *count)
{
	const tinyc_gvar *x = &in->k->vars[v];
	unsigned char *base = NULL;
	*count = 0;
	if (x->kind == TINYC_GV_PARAM_PTR) {
		if (x->buf < 0 || x->buf >= in->m->nbuf || !in->mem->buf[x->buf]) {
			ierr(in, t, "pointer %s has no buffer", x->name);
			return NULL;
		}
		base = in->mem->buf[x->buf];
		*count = in->mem->buf_elems[x->buf];
	} else if (x->kind == TINYC_GV_SHARED) {
		base = x->dynamic ? in->dyn + x->offset : in->smem[v];
		*count = x->count;
	} else {
		ierr(in, t, "%s is not memory", x->name);
		return NULL;
	}
	if (idx < 0 || idx >= *count) {
		char what[160];
		snprintf(what, sizeof(what), "%s[%" PRId64 "] out of bounds (%" PRId64 " elements)",
			 x->name, idx, *count);
		ierr(in, t, "%s", what);
		return NULL;
	}
	return base;
}

/* Read var[idx] (global, shared or register array). */
static ival load(interp *in, ithread *t, int v, int64_t idx)
{
	const tinyc_gvar *x = &in->k->vars[v];
	ival zero = {0};
	if (x->kind == TINYC_GV_REG_ARRAY) {
		if (idx < 0 || idx >= x->count) {
			ierr(in, t, "register array %s index %" PRId64 " out of bounds", x->name, idx);
			return zero;
		}
		if (!t->arr[v] || !t->arr_init[v][idx]) {
			ierr(in, t, "read of unwritten %s[%" PRId64 "]", x->name, idx);
			return zero;
		}
		return t->arr[v][idx];
	}
	int64_t n;
	unsigned char *p = mem_of(in, t, v, idx, &n);
	return p ? mem_get(x->dtype, p, idx) : zero;
}

/* Write var[idx]. */
static void store(interp *in, ithread *t, int v, int64_t idx, ival val)
{
	const tinyc_gvar *x = &in->k->vars[v];
	if (x->kind == TINYC_GV_REG_ARRAY) {
		if (idx < 0 || idx >= x->count || !t->arr[v]) {
			ierr(in, t, "register array %s index %" PRId64 " out of bounds", x->name, idx);
			return;
		}
		t->arr[v][idx] = val;
		t->arr_init[v][idx] = 1;
		return;
	}
	if (x->kind == TINYC_GV_PARAM_PTR && x->is_const) {
		ierr(in, t, "store through const %s", x->name);
		return;
	}
	int64_t n;
	unsigned char *p = mem_of(in, t, v, idx, &n);
	if (p)
		mem_set(x->dtype, p, idx, val);
}

/* A binary operator on values of dtype dt. */
static ival binop(interp *in, ithread *t, tinyc_gx_op op, tinyc_dtype dt, ival a, ival b)
{
	ival r = {0};
	if (is_f(dt)) {
		double x = a.f, y = b.f;
		switch (op) {
		case TINYC_GX_ADD: return fval(dt, x + y);
		case TINYC_GX_SUB: return fval(dt, x - y);
		case TINYC_GX_MUL: return fval(dt, x * y);
		case TINYC_GX_DIV: return fval(dt, x / y);
		case TINYC_GX_MIN: return fval(dt, tinyc_fminmax(x, y, 0));
		case TINYC_GX_MAX: return fval(dt, tinyc_fminmax(x, y, 1));
		case TINYC_GX_LT: r.u = x < y; return r;
		case TINYC_GX_LE: r.u = x <= y; return r;
		case TINYC_GX_GT: r.u = x > y; return r;
		case TINYC_GX_GE: r.u = x >= y; return r;
		case TINYC_GX_EQ: r.u = x == y; return r;
		case TINYC_GX_NE: r.u = x != y; return r;
		default:
			ierr(in, t, "operator %s on floats", tinyc_gx_op_name(op));
			return r;
		}
	}
	int sg = is_s(dt);
	int bits = 8 * tinyc_dtype_size(dt);
	switch (op) {
	case TINYC_GX_ADD: return iwrap(dt, a.u + b.u);
	case TINYC_GX_SUB: return iwrap(dt, a.u - b.u);
	case TINYC_GX_MUL: return iwrap(dt, a.u * b.u);
	case TINYC_GX_DIV:
		if (!b.u)
			return r;	/* no trap: 0 (tinyc's lowering never divides by 0) */
		if (sg)
			return b.i == -1 ? iwrap(dt, 0 - a.u) : iwrap(dt, (uint64_t)(a.i / b.i));
		return iwrap(dt, a.u / b.u);
	case TINYC_GX_MOD:
		if (!b.u || (sg && b.i == -1))
			return r;
		return sg ? iwrap(dt, (uint64_t)(a.i % b.i)) : iwrap(dt, a.u % b.u);
	case TINYC_GX_FLOORDIV:
		if (!sg || b.i <= 0) {
			if (!b.u)
				return r;
			return iwrap(dt, a.u / b.u);
		}
		r.i = a.i >= 0 ? a.i / b.i : -((-(a.i + 1)) / b.i) - 1;
		return iwrap(dt, r.u);
	case TINYC_GX_MIN: return sg ? (a.i < b.i ? a : b) : (a.u < b.u ? a : b);
	case TINYC_GX_MAX: return sg ? (a.i > b.i ? a : b) : (a.u > b.u ? a : b);
	case TINYC_GX_AND: return iwrap(dt, a.u & b.u);
	case TINYC_GX_OR: return iwrap(dt, a.u | b.u);
	case TINYC_GX_XOR: return iwrap(dt, a.u ^ b.u);
	case TINYC_GX_SHL: return b.u >= 64 ? iwrap(dt, 0) : iwrap(dt, a.u << b.u);
	case TINYC_GX_SHR:
		if (sg) {
			int s = b.u >= 64 ? 63 : (int)b.u;
			r.i = a.i >= 0 ? a.i >> s : ~(~a.i >> s);
			return iwrap(dt, r.u);
		}
		return b.u >= (uint64_t)bits ? iwrap(dt, 0) : iwrap(dt, a.u >> b.u);
	case TINYC_GX_LT: r.u = sg ? a.i < b.i : a.u < b.u; return r;
	case TINYC_GX_LE: r.u = sg ? a.i <= b.i : a.u <= b.u; return r;
	case TINYC_GX_GT: r.u = sg ? a.i > b.i : a.u > b.u; return r;
	case TINYC_GX_GE: r.u = sg ? a.i >= b.i : a.u >= b.u; return r;
	case TINYC_GX_EQ: r.u = a.u == b.u; return r;
	case TINYC_GX_NE: r.u = a.u != b.u; return r;
	default:
		ierr(in, t, "operator %s not interpreted", tinyc_gx_op_name(op));
		return r;
	}
}

/* A math function of dtype dt (the semantics of ir/scalar.c, rounded to dt). */
static ival mathfn(interp *in, ithread *t, const tinyc_gexpr *e)
{
	int n = tinyc_gmath_arity(e->math);
	if (n == 0) {
		ierr(in, t, "math function %s not interpreted", tinyc_gmath_name(e->math));
		return fval(e->dtype, 0);
	}
	double x[3] = {0, 0, 0};
	for (int i = 0; i < n; i++)
		x[i] = eval(in, t, e->arg[i]).f;
	return fval(e->dtype, tinyc_gmath_apply(e->math, x[0], x[1], x[2]));
}

/* The value of a special register. */
static ival special(interp *in, ithread *t, tinyc_gspecial s)
{
	ival r;
	const int *blk = in->k->block;
	switch (s) {
	case TINYC_GSP_TID_X: case TINYC_GSP_TID_Y: case TINYC_GSP_TID_Z:
		r.i = t->tid[s - TINYC_GSP_TID_X];
		break;
	case TINYC_GSP_BID_X: case TINYC_GSP_BID_Y: case TINYC_GSP_BID_Z:
		r.i = in->bid[s - TINYC_GSP_BID_X];
		break;
	case TINYC_GSP_NTID_X: case TINYC_GSP_NTID_Y: case TINYC_GSP_NTID_Z:
		r.i = blk[s - TINYC_GSP_NTID_X];
		break;
	case TINYC_GSP_NBID_X: case TINYC_GSP_NBID_Y: case TINYC_GSP_NBID_Z:
		r.i = in->grid[s - TINYC_GSP_NBID_X];
		break;
	case TINYC_GSP_LANE:
		r.i = t->linear & 31;
		break;
	case TINYC_GSP_WARP:
		r.i = t->linear >> 5;
		break;
	default:
		r.i = 0;
		break;
	}
	return r;
}

/* Evaluate an expression in thread t. */
static ival eval(interp *in, ithread *t, const tinyc_gexpr *e)
{
	ival r = {0};
	if (in->failed || !e)
		return r;
	switch (e->op) {
	case TINYC_GX_INT:
		return is_f(e->dtype) ? fval(e->dtype, (double)e->ival) : iwrap(e->dtype, (uint64_t)e->ival);
	case TINYC_GX_FLOAT:
		return fval(e->dtype, e->fval);
	case TINYC_GX_VAR: {
		const tinyc_gvar *v = &in->k->vars[e->var];
		if (v->kind == TINYC_GV_PARAM_INT) {
			if (v->sym < 0 || !in->mem->sym || in->mem->sym[v->sym] < 0) {
				ierr(in, t, "size parameter %s has no value", v->name);
				return r;
			}
			return iwrap(v->dtype, (uint64_t)in->mem->sym[v->sym]);
		}
		if (!t->init[e->var]) {
			ierr(in, t, "read of unwritten register %s", v->name);
			return r;
		}
		return t->reg[e->var];
	}
	case TINYC_GX_SYM:
		r.i = in->mem->sym ? in->mem->sym[e->sym] : 0;
		return r;
	case TINYC_GX_SPECIAL:
		return special(in, t, e->special);
	case TINYC_GX_LOAD: {
		if (e->arg[1] && !eval(in, t, e->arg[1]).u)
			return r;	/* zero of every dtype */
		ival idx = eval(in, t, e->arg[0]);
		return load(in, t, e->var, is_s(e->arg[0]->dtype) ? idx.i : (int64_t)idx.u);
	}
	case TINYC_GX_NEG: {
		ival a = eval(in, t, e->arg[0]);
		return is_f(e->dtype) ? fval(e->dtype, -a.f) : iwrap(e->dtype, 0 - a.u);
	}
	case TINYC_GX_NOT:
		r.u = !eval(in, t, e->arg[0]).u;
		return r;
	case TINYC_GX_BITNOT:
		return iwrap(e->dtype, ~eval(in, t, e->arg[0]).u);
	case TINYC_GX_LAND:
		r.u = eval(in, t, e->arg[0]).u && eval(in, t, e->arg[1]).u;
		return r;
	case TINYC_GX_LOR:
		r.u = eval(in, t, e->arg[0]).u || eval(in, t, e->arg[1]).u;
		return r;
	case TINYC_GX_SELECT:
		return eval(in, t, e->arg[0]).u ? eval(in, t, e->arg[1]) : eval(in, t, e->arg[2]);
	case TINYC_GX_CAST:
		return convert(e->arg[0]->dtype, e->dtype, eval(in, t, e->arg[0]));
	case TINYC_GX_BITCAST: {
		uint64_t u = vbits(e->arg[0]->dtype, eval(in, t, e->arg[0]));
		if (is_f(e->dtype)) {
			r.f = tinyc_bits_to_float(e->dtype, u);
			return r;
		}
		return iwrap(e->dtype, u);
	}
	case TINYC_GX_CALL:
		return mathfn(in, t, e);
	default:
		break;
	}
	ival a = eval(in, t, e->arg[0]), b = eval(in, t, e->arg[1]);
	return binop(in, t, e->op, e->arg[0]->dtype, a, b);
}

/* An index value as int64. */
static int64_t eval_index(interp *in, ithread *t, const tinyc_gexpr *e)
{
	ival v = eval(in, t, e);
	return is_s(e->dtype) ? v.i : (int64_t)v.u;
}

/* --------------------------------------------------------------- statements ---- */

static int push(interp *in, ithread *t, const tinyc_gstmt *s)
{
	if (t->nstack == t->capstack) {
		int nc = t->capstack ? t->capstack * 2 : 16;
		frame *nf = realloc(t->stack, sizeof(*nf) * (size_t)nc);
		if (!nf)
			return ierr(in, t, "out of memory");
		t->stack = nf;
		t->capstack = nc;
	}
	t->stack[t->nstack].s = s;
	t->stack[t->nstack].pc = 0;
	t->nstack++;
	return 0;
}

/* Execute a simple (non-compound, non-collective) statement. */
static void exec_simple(interp *in, ithread *t, const tinyc_gstmt *s)
{
	const tinyc_gkernel *k = in->k;
	switch (s->op) {
	case TINYC_GS_DECL: {
		const tinyc_gvar *v = &k->vars[s->dst.var];
		if (v->kind == TINYC_GV_REG_ARRAY) {
			if (!t->arr[s->dst.var]) {
				t->arr[s->dst.var] = calloc((size_t)v->count, sizeof(ival));
				t->arr_init[s->dst.var] = calloc((size_t)v->count, 1);
				if (!t->arr[s->dst.var] || !t->arr_init[s->dst.var]) {
					ierr(in, t, "out of memory");
					return;
				}
			}
			ival fill = s->value ? eval(in, t, s->value) : (ival){0};
			for (int64_t i = 0; i < v->count; i++) {
				t->arr[s->dst.var][i] = fill;
				t->arr_init[s->dst.var][i] = s->value != NULL;
			}
			return;
		}
		if (s->value) {
			t->reg[s->dst.var] = eval(in, t, s->value);
			t->init[s->dst.var] = 1;
		} else {
			t->init[s->dst.var] = 0;
		}
		return;
	}
	case TINYC_GS_ASSIGN:
		t->reg[s->dst.var] = eval(in, t, s->value);
		t->init[s->dst.var] = 1;
		return;
	case TINYC_GS_STORE:
		if (s->pred && !eval(in, t, s->pred).u)
			return;
		store(in, t, s->dst.var, eval_index(in, t, s->dst.index), eval(in, t, s->value));
		return;
	case TINYC_GS_ATOMIC: {
		if (s->pred && !eval(in, t, s->pred).u)
			return;
		int64_t idx = eval_index(in, t, s->dst.index);
		ival v = eval(in, t, s->value), old = load(in, t, s->dst.var, idx);
		tinyc_dtype dt = k->vars[s->dst.var].dtype;
		tinyc_gx_op op = s->atomic_op == TINYC_GA_ADD ? TINYC_GX_ADD
				 : s->atomic_op == TINYC_GA_MAX ? TINYC_GX_MAX : TINYC_GX_MIN;
		store(in, t, s->dst.var, idx, binop(in, t, op, dt, old, v));
		if (s->old >= 0) {
			t->reg[s->old] = old;
			t->init[s->old] = 1;
		}
		return;
	}
	case TINYC_GS_COPY: {
		if (s->value) {
			ierr(in, t, "remote shared-memory copies (clusters) are not interpreted");
			return;
		}
		int64_t di = eval_index(in, t, s->dst.index), si = eval_index(in, t, s->src.index);
		int on = !s->pred || eval(in, t, s->pred).u;
		for (int i = 0; i < s->n; i++) {
			ival v = {0};
			if (on)
				v = load(in, t, s->src.var, si + i);
			store(in, t, s->dst.var, di + i, v);
		}
		return;
	}
	case TINYC_GS_CP_COMMIT:
	case TINYC_GS_CP_WAIT:
	case TINYC_GS_MBAR_INIT:
	case TINYC_GS_MBAR_EXPECT_TX:
	case TINYC_GS_MBAR_ARRIVE:
	case TINYC_GS_MBAR_WAIT:
	case TINYC_GS_FENCE:
	case TINYC_GS_COMMENT:
	case TINYC_GS_TMAP_PREFETCH:	/* a cache hint */
		return;	/* copies complete at once: nothing to wait for */
	case TINYC_GS_TMA_LOAD:
		ierr(in, t, "TMA loads are not interpreted");
		return;
	default:
		ierr(in, t, "statement %s not interpreted", tinyc_gs_op_name(s->op));
		return;
	}
}

/* Run thread t until it finishes or waits at a barrier or a warp collective. */
static void run_thread(interp *in, ithread *t)
{
	while (t->state == T_RUN && !in->failed) {
		if (!t->nstack) {
			t->state = T_DONE;
			return;
		}
		frame *f = &t->stack[t->nstack - 1];
		const tinyc_gstmt *s = f->s;
		const tinyc_gstmt *next = NULL;
		switch (s->op) {
		case TINYC_GS_BLOCK:
			if (f->pc >= s->nstmts) {
				t->nstack--;
				continue;
			}
			next = s->stmts[f->pc++];
			break;
		case TINYC_GS_FOR:
			if (f->pc == 0) {
				t->reg[s->dst.var] = eval(in, t, s->init);
				t->init[s->dst.var] = 1;
				f->pc = 1;
			} else if (f->pc == 2) {
				tinyc_dtype dt = in->k->vars[s->dst.var].dtype;
				t->reg[s->dst.var] = binop(in, t, TINYC_GX_ADD, dt, t->reg[s->dst.var],
							   eval(in, t, s->step));
				f->pc = 1;
			}
			if (!eval(in, t, s->cond).u) {
				t->nstack--;
				continue;
			}
			f->pc = 2;
			next = s->body;
			break;
		case TINYC_GS_IF:
			if (f->pc) {
				t->nstack--;
				continue;
			}
			f->pc = 1;
			next = eval(in, t, s->cond).u ? s->body : s->else_body;
			if (!next)
				continue;
			break;
		default:
			ierr(in, t, "bad frame");
			return;
		}
		switch (next->op) {
		case TINYC_GS_BLOCK:
		case TINYC_GS_FOR:
		case TINYC_GS_IF:
			push(in, t, next);
			break;
		case TINYC_GS_BARRIER:
			t->state = T_BARRIER;
			t->wait = next;
			return;
		case TINYC_GS_SHFL:
		case TINYC_GS_LDMATRIX:
		case TINYC_GS_MMA:
		case TINYC_GS_SYNCWARP:
			t->state = T_WARP;
			t->wait = next;
			return;
		default:
			exec_simple(in, t, next);
			break;
		}
	}
}

/* ------------------------------------------------------ warp collectives ---- */

/* The value the tf32 tensor cores read from float register bits: the low 13 mantissa
 * bits dropped. */
static double tf32_operand(double v)
{
	float f = (float)v;
	uint32_t u;
	memcpy(&u, &f, 4);
	u &= 0xffffe000u;
	memcpy(&f, &u, 4);
	return f;
}

/* The 16-bit element j (in 16-bit units from element offset `off`) of a register array
 * holding 16-bit floats, or 32-bit registers with two 16-bit halves each (low first). */
static uint16_t get16(interp *in, ithread *t, int v, int64_t off, int j)
{
	const tinyc_gvar *x = &in->k->vars[v];
	if (tinyc_dtype_size(x->dtype) == 2) {
		ival e = load(in, t, v, off + j);
		return (uint16_t)vbits(x->dtype, e);
	}
	ival r = load(in, t, v, off + j / 2);
	return (uint16_t)(r.u >> (16 * (j % 2)));
}

/* Set the 16-bit element j (as get16). */
static void set16(interp *in, ithread *t, int v, int64_t off, int j, uint16_t bits)
{
	const tinyc_gvar *x = &in->k->vars[v];
	if (tinyc_dtype_size(x->dtype) == 2) {
		ival e;
		if (is_f(x->dtype))
			e.f = tinyc_bits_to_float(x->dtype, bits);
		else
			e = iwrap(x->dtype, bits);
		store(in, t, v, off + j, e);
		return;
	}
	int64_t r = off + j / 2;
	ival cur = {0};
	if (t->arr[v] && r >= 0 && r < x->count && t->arr_init[v][r])
		cur = t->arr[v][r];
	uint64_t u = cur.u & ~(UINT64_C(0xffff) << (16 * (j % 2)));
	u |= (uint64_t)bits << (16 * (j % 2));
	store(in, t, v, r, iwrap(x->dtype, u));
}

/* The value of a 16-bit pattern as the mma input type. */
static double b16val(int bf16, uint16_t u)
{
	return bf16 ? tinyc_bf16_to_f32(u) : tinyc_f16_to_f32(u);
}

/* mma.sync m16n8k8 .tf32 for the warp lane[0..32): A row-major 16x8, B column-major 8x8,
 * C/D 16x8 in PTX's fragments (gpuir.h, tinyc_gs_mma); the products and C summed in
 * double, the sum rounded to float once toward zero (as the tensor cores round). */
static void mma_tf32(interp *in, ithread **lane, const tinyc_gstmt *s)
{
	double A[16][8], B[8][8], C[16][8];
	for (int i = 0; i < 32; i++) {
		ithread *t = lane[i];
		int g = i >> 2, q = i % 4;
		int64_t ao = eval_index(in, t, s->src.index), bo = eval_index(in, t, s->src2.index);
		int64_t co = eval_index(in, t, s->src3.index);
		A[g][q] = tf32_operand(load(in, t, s->src.var, ao + 0).f);
		A[g + 8][q] = tf32_operand(load(in, t, s->src.var, ao + 1).f);
		A[g][q + 4] = tf32_operand(load(in, t, s->src.var, ao + 2).f);
		A[g + 8][q + 4] = tf32_operand(load(in, t, s->src.var, ao + 3).f);
		B[q][g] = tf32_operand(load(in, t, s->src2.var, bo + 0).f);
		B[q + 4][g] = tf32_operand(load(in, t, s->src2.var, bo + 1).f);
		for (int e = 0; e < 4; e++)
			C[g + 8 * (e / 2)][2 * q + e % 2] = load(in, t, s->src3.var, co + e).f;
	}
	for (int i = 0; i < 32; i++) {
		ithread *t = lane[i];
		int g = i >> 2, q = i % 4;
		int64_t d0 = eval_index(in, t, s->dst.index);
		for (int e = 0; e < 4; e++) {
			int r = g + 8 * (e / 2), c = 2 * q + e % 2;
			double acc = C[r][c];
			for (int kk = 0; kk < 8; kk++)
				acc += A[r][kk] * B[kk][c];
			float f = (float)acc;	/* the tensor cores truncate: toward zero */
			if (isfinite(f) && fabs((double)f) > fabs(acc))
				f = nextafterf(f, 0.0f);
			store(in, t, s->dst.var, d0 + e, fval(TINYC_FLOAT, f));
		}
	}
}

/* Execute the collective s for the 32 (or fewer) threads lane[0..n). */
static void exec_collective(interp *in, ithread **lane, int n, const tinyc_gstmt *s)
{
	const tinyc_gkernel *k = in->k;
	if (s->op == TINYC_GS_SHFL) {
		ival val[32], res[32];
		int64_t arg[32];
		for (int i = 0; i < n; i++) {
			val[i] = eval(in, lane[i], s->value);
			arg[i] = eval_index(in, lane[i], s->cond);
		}
		int w = s->n > 0 ? s->n : 32;
		for (int i = 0; i < n; i++) {
			int base = i & ~(w - 1), src = i;
			switch (s->shfl) {
			case TINYC_GSHFL_IDX: src = base + (int)(((arg[i] % w) + w) % w); break;
			case TINYC_GSHFL_UP: src = i - arg[i] >= base ? i - (int)arg[i] : i; break;
			case TINYC_GSHFL_DOWN: src = i + arg[i] < base + w ? i + (int)arg[i] : i; break;
			case TINYC_GSHFL_XOR: src = (i ^ (int)arg[i]) < base + w ? i ^ (int)arg[i] : i; break;
			}
			if (src < 0 || src >= n)
				src = i;	/* a lane outside the block: own value */
			res[i] = val[src];
		}
		for (int i = 0; i < n; i++) {
			lane[i]->reg[s->dst.var] = res[i];
			lane[i]->init[s->dst.var] = 1;
		}
		return;
	}
	if (n != 32) {
		ierr(in, lane[0], "%s needs a full warp", tinyc_gs_op_name(s->op));
		return;
	}
	if (s->op == TINYC_GS_LDMATRIX) {
		/* matrix j's row r is addressed by lane 8j + r; 8 contiguous 16-bit elements */
		uint16_t mat[4][8][8];
		const tinyc_gvar *src = &k->vars[s->src.var];
		for (int j = 0; j < s->n; j++)
			for (int r = 0; r < 8; r++) {
				ithread *t = lane[8 * j + r];
				int64_t a = eval_index(in, t, s->src.index);
				for (int c = 0; c < 8; c++) {
					ival e = load(in, t, s->src.var, a + c);
					mat[j][r][c] = (uint16_t)vbits(src->dtype, e);
				}
			}
		for (int i = 0; i < 32; i++) {
			int64_t off = eval_index(in, lane[i], s->dst.index);
			for (int j = 0; j < s->n; j++) {
				int row = i / 4, col = 2 * (i % 4);
				uint16_t lo = s->trans ? mat[j][col][row] : mat[j][row][col];
				uint16_t hi = s->trans ? mat[j][col + 1][row] : mat[j][row][col + 1];
				set16(in, lane[i], s->dst.var, off, 2 * j, lo);
				set16(in, lane[i], s->dst.var, off, 2 * j + 1, hi);
			}
		}
		return;
	}
	if (s->op == TINYC_GS_MMA && k->vars[s->src.var].dtype == TINYC_FLOAT) {
		mma_tf32(in, lane, s);
		return;
	}
	if (s->op == TINYC_GS_MMA) {
		/* m16n8k16, A row-major 16x16, B column-major 16x8, C/D 16x8 (PTX fragments) */
		double A[16][16], B[16][8], C[16][8];
		tinyc_dtype at = k->vars[s->src.var].dtype, bt = k->vars[s->src2.var].dtype;
		int bf = at == TINYC_BFLOAT16 || (at == TINYC_UINT && bt == TINYC_BFLOAT16);
		for (int i = 0; i < 32; i++) {
			ithread *t = lane[i];
			int g = i >> 2, q = i % 4;
			int64_t ao = eval_index(in, t, s->src.index), bo = eval_index(in, t, s->src2.index);
			int64_t co = eval_index(in, t, s->src3.index);
			for (int h = 0; h < 2; h++) {
				A[g][2 * q + h] = b16val(bf, get16(in, t, s->src.var, ao, 0 + h));
				A[g + 8][2 * q + h] = b16val(bf, get16(in, t, s->src.var, ao, 2 + h));
				A[g][2 * q + 8 + h] = b16val(bf, get16(in, t, s->src.var, ao, 4 + h));
				A[g + 8][2 * q + 8 + h] = b16val(bf, get16(in, t, s->src.var, ao, 6 + h));
				B[2 * q + h][g] = b16val(bf, get16(in, t, s->src2.var, bo, 0 + h));
				B[2 * q + 8 + h][g] = b16val(bf, get16(in, t, s->src2.var, bo, 2 + h));
			}
			C[g][2 * q] = load(in, t, s->src3.var, co + 0).f;
			C[g][2 * q + 1] = load(in, t, s->src3.var, co + 1).f;
			C[g + 8][2 * q] = load(in, t, s->src3.var, co + 2).f;
			C[g + 8][2 * q + 1] = load(in, t, s->src3.var, co + 3).f;
		}
		for (int i = 0; i < 32; i++) {
			ithread *t = lane[i];
			int g = i >> 2, q = i % 4;
			int64_t d0 = eval_index(in, t, s->dst.index);
			int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * q, 2 * q + 1, 2 * q, 2 * q + 1};
			for (int e = 0; e < 4; e++) {
				double acc = C[rows[e]][cols[e]];
				for (int kk = 0; kk < 16; kk++)
					acc += A[rows[e]][kk] * B[kk][cols[e]];
				store(in, t, s->dst.var, d0 + e, fval(TINYC_FLOAT, acc));
			}
		}
		return;
	}
	if (s->op == TINYC_GS_SYNCWARP)	/* the lanes met: nothing else to do */
		return;
	ierr(in, lane[0], "not a collective");
}

/* ------------------------------------------------------------------ launch ---- */

/* Free the per-thread storage of the block. */
static void free_threads(interp *in)
{
	for (int i = 0; i < in->nth; i++) {
		ithread *t = &in->th[i];
		for (int v = 0; v < in->k->nvar; v++) {
			if (t->arr) free(t->arr[v]);
			if (t->arr_init) free(t->arr_init[v]);
		}
		free(t->stack);
		free(t->reg);
		free(t->init);
		free(t->arr);
		free(t->arr_init);
	}
	free(in->th);
	in->th = NULL;
}

/* Run the current block (in->bid) to completion. */
static int run_block(interp *in)
{
	const tinyc_gkernel *k = in->k;
	int nv = k->nvar;
	for (int i = 0; i < in->nth; i++) {
		ithread *t = &in->th[i];
		t->state = T_RUN;
		t->nstack = 0;
		memset(t->init, 0, (size_t)nv);
		for (int v = 0; v < nv; v++)
			if (t->arr_init[v])
				memset(t->arr_init[v], 0, (size_t)k->vars[v].count);
		if (push(in, t, k->body) < 0)
			return -1;
	}
	for (int v = 0; v < nv; v++)	/* shared memory starts as zeros here */
		if (in->smem[v])
			memset(in->smem[v], 0, (size_t)(k->vars[v].count * tinyc_dtype_size(k->vars[v].dtype)));
	if (in->dyn)
		memset(in->dyn, 0, (size_t)k->dyn_smem);
	for (;;) {
		for (int i = 0; i < in->nth && !in->failed; i++)
			run_thread(in, &in->th[i]);
		if (in->failed)
			return -1;
		int progress = 0, done = 0, barrier = 0;
		/* warp collectives: the lanes of a warp all waiting at the same statement */
		for (int w = 0; w * 32 < in->nth; w++) {
			ithread *lane[32];
			int n = 0, waiting = 0, other = 0;
			const tinyc_gstmt *at = NULL;
			for (int i = w * 32; i < in->nth && i < w * 32 + 32; i++) {
				ithread *t = &in->th[i];
				lane[n++] = t;
				if (t->state == T_WARP) {
					if (at && at != t->wait)
						return ierr(in, t, "lanes of a warp at different collectives");
					at = t->wait;
					waiting++;
				} else {
					other++;
				}
			}
			if (waiting && !other) {
				exec_collective(in, lane, n, at);
				for (int i = 0; i < n; i++)
					lane[i]->state = T_RUN;
				progress = 1;
			}
		}
		if (in->failed)
			return -1;
		if (progress)
			continue;
		const tinyc_gstmt *bar = NULL;
		int warp_wait = 0;
		for (int i = 0; i < in->nth; i++) {
			ithread *t = &in->th[i];
			if (t->state == T_DONE)
				done++;
			else if (t->state == T_BARRIER) {
				if (bar && bar != t->wait)
					return ierr(in, t, "threads wait at different barriers");
				bar = t->wait;
				barrier++;
			} else if (t->state == T_WARP) {
				warp_wait++;
			}
		}
		if (done == in->nth)
			return 0;
		if (warp_wait)
			return ierr(in, NULL, "deadlock: part of a warp waits at a collective");
		if (barrier && done)
			return ierr(in, NULL, "barrier divergence: %d threads exited while others wait at a barrier",
				    done);
		if (barrier == in->nth) {
			for (int i = 0; i < in->nth; i++)
				in->th[i].state = T_RUN;
			continue;
		}
		return ierr(in, NULL, "deadlock");
	}
}

/* Whether a statement tree holds Hopper warpgroup statements (wgmma, setmaxnreg). */
static int uses_warpgroup_ops(const tinyc_gstmt *s)
{
	if (!s)
		return 0;
	switch (s->op) {
	case TINYC_GS_WGMMA_FENCE:
	case TINYC_GS_WGMMA:
	case TINYC_GS_WGMMA_COMMIT:
	case TINYC_GS_WGMMA_WAIT:
	case TINYC_GS_SETMAXNREG:
		return 1;
	case TINYC_GS_BLOCK:
		for (int i = 0; i < s->nstmts; i++)
			if (uses_warpgroup_ops(s->stmts[i]))
				return 1;
		return 0;
	case TINYC_GS_FOR:
		return uses_warpgroup_ops(s->body);
	case TINYC_GS_IF:
		return uses_warpgroup_ops(s->body) || uses_warpgroup_ops(s->else_body);
	default:
		return 0;
	}
}

int tinyc_gpu_interp(tinyc_ctx *ctx, const tinyc_gpu_module *m, const tinyc_gkernel *k,
		     const tinyc_gpu_mem *mem)
{
	interp in = {0};
	in.ctx = ctx;
	in.m = m;
	in.k = k;
	in.mem = mem;
	for (int d = 0; d < 3; d++)
		if (tinyc_gpu_eval_int(k->grid[d], mem->sym, &in.grid[d]) < 0)
			return tinyc_error(ctx, "GpuInterpError", "kernel %s: grid extent %c needs an unbound symbol",
					   k->name, "xyz"[d]);
	if (k->cluster_x > 1)	/* its CTAs run together and share their shared memory */
		return tinyc_error(ctx, "GpuInterpUnsupported", "kernel %s: thread-block clusters are not "
				   "interpreted (the kernel runs on a GPU only)", k->name);
	for (int v = 0; v < k->nvar; v++)
		if (k->vars[v].kind == TINYC_GV_PARAM_TMAP)
			return tinyc_error(ctx, "GpuInterpUnsupported", "kernel %s: tensor maps (TMA) are not "
					   "interpreted: the Hopper wgmma template runs on a GPU only (plan another "
					   "template, e.g. TINYC_MATMUL=mma, or target sm_80, to interpret)", k->name);
	if (uses_warpgroup_ops(k->body))
		return tinyc_error(ctx, "GpuInterpUnsupported", "kernel %s: wgmma/setmaxnreg are not "
				   "interpreted: the Hopper wgmma template runs on a GPU only (plan another "
				   "template, e.g. TINYC_MATMUL=mma, or target sm_80, to interpret)", k->name);
	if (in.grid[0] <= 0 || in.grid[1] <= 0 || in.grid[2] <= 0)
		return 0;	/* an empty launch */
	in.nth = k->block[0] * k->block[1] * k->block[2];
	int nv = k->nvar;
	in.th = calloc((size_t)in.nth, sizeof(*in.th));
	in.smem = calloc((size_t)nv + 1, sizeof(*in.smem));
	if (!in.th || !in.smem)
		goto oom;
	for (int i = 0; i < in.nth; i++) {
		ithread *t = &in.th[i];
		t->linear = i;
		t->tid[0] = i % k->block[0];
		t->tid[1] = (i / k->block[0]) % k->block[1];
		t->tid[2] = i / (k->block[0] * k->block[1]);
		t->reg = calloc((size_t)nv + 1, sizeof(ival));
		t->init = calloc((size_t)nv + 1, 1);
		t->arr = calloc((size_t)nv + 1, sizeof(*t->arr));
		t->arr_init = calloc((size_t)nv + 1, sizeof(*t->arr_init));
		if (!t->reg || !t->init || !t->arr || !t->arr_init)
			goto oom;
	}
	for (int v = 0; v < nv; v++) {
		const tinyc_gvar *x = &k->vars[v];
		if (x->kind == TINYC_GV_SHARED && !x->dynamic &&
		    !(in.smem[v] = calloc((size_t)x->count, (size_t)tinyc_dtype_size(x->dtype))))
			goto oom;
	}
	if (k->dyn_smem > 0 && !(in.dyn = calloc((size_t)k->dyn_smem, 1)))
		goto oom;
	int rc = 0;
	for (int64_t z = 0; z < in.grid[2] && rc == 0; z++)
		for (int64_t y = 0; y < in.grid[1] && rc == 0; y++)
			for (int64_t x = 0; x < in.grid[0] && rc == 0; x++) {
				in.bid[0] = (int)x, in.bid[1] = (int)y, in.bid[2] = (int)z;
				rc = run_block(&in);
			}
	free_threads(&in);
	for (int v = 0; v < nv; v++)
		free(in.smem[v]);
	free(in.smem);
	free(in.dyn);
	return rc;
oom:
	if (in.th)
		free_threads(&in);
	if (in.smem)
		for (int v = 0; v < nv; v++)
			free(in.smem[v]);
	free(in.smem);
	free(in.dyn);
	return tinyc_error(ctx, "OutOfMemory", "GPU IR interpreter");
}
