/* A CPU interpreter for GPU IR kernels (tinyc_gpu_interp, ir/gpuir.h), Hopper's included.
 *
 * The CTAs of one thread-block cluster (a single CTA where the kernel has no clusters) run
 * together, cluster after cluster over the grid; a CTA's rank is blockIdx.x % cluster_x, as
 * on the GPU.  Their threads are interpreted one after another, each until it finishes or
 * must wait:
 *   - at a barrier: every live thread of the CTA (of the cluster, for a cluster barrier)
 *     must reach the same barrier, then all continue;
 *   - at a warp collective (shuffle, ldmatrix, mma, __syncwarp): the 32 lanes of the warp
 *     must reach the same statement, which then executes for all of them at once with the
 *     PTX semantics of the fragments;
 *   - at a warpgroup collective (wgmma.fence, wgmma.mma_async, wgmma.commit_group,
 *     wgmma.wait_group, setmaxnreg): the 128 threads of the warpgroup's 4 warps, alike;
 *   - at an mbarrier wait, until the phase of the parity it waits for has completed.
 * A thread's position is an explicit stack of (statement, program counter) frames, so it
 * can stop at any statement and resume later.  A scheduler round runs every thread that
 * can, then the collectives all of whose threads arrived, then the barriers all of whose
 * threads arrived; a round in which nothing can progress is a deadlock, reported with
 * what the threads wait for.
 *
 * Values are held as in the reference evaluator: floats as double rounded to their dtype
 * after every operation, signed integers sign-extended, unsigned ones masked, bool 0/1.
 * Memory keeps each dtype's native layout (16-bit floats as their bit patterns).  Each CTA
 * has one shared-memory byte array laid out as the GPU's (the dynamic segment at address
 * 0, then the static arrays at their alignment), so what the hardware derives from
 * shared addresses is derived alike: the swizzles of TMA and wgmma, mbarriers (keyed by
 * address), the peer CTA's address of mapa.
 *
 * Hopper's asynchronous operations, with the PTX semantics:
 *   - mbarriers hold an arrival count, the arrivals pending in the current phase, a
 *     tx-count and the phase; mbarrier.init, arrive (local or on the peer CTA's barrier at
 *     the same address), expect_tx (with or without an arrival) and complete_tx (TMA)
 *     change them; a phase completes when no arrival and no transaction byte is pending.
 *     A wait on parity p returns once the current phase's parity differs from p.
 *   - cp.async.bulk.tensor (TMA): the box at the coordinates, through the tensor map's
 *     description (tinyc_gtmap, evaluated under the launch's sizes), elements outside the
 *     tensor zero-filled, written with the map's swizzle (address-based: the 16-byte chunk
 *     bits 4..6 XORed with the row bits 7..9 of the 1024/512/256-byte pattern); multicast
 *     writes every CTA of the mask at the same offsets and completes on each one's
 *     barrier.  Its bytes complete_tx at once, but the data lands in a CTA's shared memory
 *     only when one of its threads observes the phase's completion by an mbarrier wait:
 *     reading or writing those bytes before, or a second TMA load into them, is reported
 *     as a race (a missing or misplaced wait shows, it does not pass silently).
 *   - wgmma executes at issue (commit and wait order nothing else): D (+)= A B for
 *     m64nNk16 (16-bit operands) or m64nNk8 .tf32 (float operands read as tf32, the sum
 *     truncated as mma.sync .tf32's), fp32 accumulators in PTX's fragment, A and B read
 *     from shared memory exactly where the tensor cores read them given the CUDA text's
 *     matrix descriptor (tinyc_wg_desc: start address, leading and stride byte offsets,
 *     128-byte swizzle), or A from registers (mma.sync's A fragment per warp).  Until a
 *     wgmma.wait_group retires its group, its accumulators must not be accessed, its A
 *     registers not written and the shared bytes it reads not written (races; PTX's
 *     letter forbids reading the A registers too, a read beside the tensor cores' read
 *     that the attention kernel's row sums do: allowed here); a wgmma whose accumulator
 *     or A registers were accessed since the warpgroup's last wgmma.fence is an error.
 *   - cp.async (Ampere) completes at once (cp.async waits have nothing to wait for);
 *     fences, tensor-map prefetches and setmaxnreg have no effect (setmaxnreg is still a
 *     warpgroup collective).
 *
 * Checked: out-of-bounds accesses (global, shared, register arrays, wgmma operands, TMA
 * boxes against their buffer), reads of registers that were never written, integer
 * division by zero (gives 0, as tinyc's lowering guards), barrier divergence, collectives
 * reached by part of a warp or warpgroup, mbarrier misuse (no init, more arrivals than
 * the count, tx-count out of range), the races above, deadlock.
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

enum { T_RUN, T_BARRIER, T_WARP, T_WG, T_MBAR, T_DONE };

/* Register elements that a wgmma in flight reads or writes. */
typedef struct rinfl {
	int var;		/* the REG_ARRAY */
	int64_t lo, hi;		/* its elements [lo, hi) */
	int64_t group;		/* the warpgroup's wgmma-group (commit count at issue) */
	int acc;		/* 1: accumulators (written); 0: A's fragment (only read) */
} rinfl;

/* One thread. */
typedef struct ithread {
	int state;		/* T_RUN, T_BARRIER, T_WARP, T_WG, T_MBAR (at wait), T_DONE */
	const tinyc_gstmt *wait;	/* the barrier / collective / mbarrier wait it waits at */
	int64_t wait_bar;	/* T_MBAR: the barrier's shared byte address */
	int wait_par;		/* T_MBAR: the parity waited for */
	frame *stack;		/* frames */
	int nstack, capstack;
	ival *reg;		/* per variable: REG value */
	unsigned char *init;	/* per variable: REG written */
	ival **arr;		/* per variable: REG_ARRAY elements (NULL otherwise) */
	unsigned char **arr_init;	/* per variable: REG_ARRAY element written */
	unsigned char *touched;	/* per variable: REG_ARRAY accessed since the last wgmma.fence */
	rinfl *infl;		/* register ranges of wgmma in flight */
	int ninfl, capinfl;
	int tid[3];		/* threadIdx */
	int linear;		/* linear thread index in its CTA */
	int cta;		/* its CTA's rank in the cluster (index into interp.ctas) */
	int64_t bulk_groups;	/* cp.async.bulk.commit_group count */
} ithread;

/* An mbarrier (a shared uint64 that mbarrier.init initialised). */
typedef struct mbar {
	int64_t addr;		/* shared byte address */
	int count;		/* arrivals per phase */
	int pending;		/* arrivals still missing in the current phase */
	int64_t tx;		/* tx-count: bytes expected minus bytes completed */
	int64_t phase;		/* phases completed so far (the current phase's parity: & 1) */
} mbar;

/* A TMA load's bytes in one CTA, complete but not yet observed (so not yet landed). */
typedef struct pend {
	int live;		/* not landed yet */
	int64_t lo, hi;		/* shared bytes [lo, hi) it writes */
	unsigned char *data;	/* their values (swizzled already), data[0] at lo */
	int64_t bar;		/* the mbarrier it completes on (address) */
	int64_t phase;		/* the barrier's phase its bytes counted in */
	int var;		/* the destination array (diagnostics) */
} pend;

/* Shared bytes that a wgmma in flight reads. */
typedef struct sinfl {
	int64_t lo, hi;		/* bytes [lo, hi) */
	int64_t group;		/* the warpgroup's wgmma-group */
	int var;		/* the operand's array (diagnostics) */
} sinfl;

/* Shared bytes that a TMA store of one thread still reads (until a bulk wait retires its
 * group; the store itself is done at issue). */
typedef struct bread {
	int64_t lo, hi;		/* bytes [lo, hi) */
	int thread;		/* the issuing thread (linear index in the CTA) */
	int64_t group;		/* its bulk group, or -1 before the commit */
	int var;		/* the source array (diagnostics) */
} bread;

/* The wgmma state of one warpgroup. */
typedef struct wgstate {
	int64_t committed;	/* wgmma.commit_group count: the open group's index */
	sinfl *infl;		/* shared ranges read by wgmma in flight */
	int ninfl, capinfl;
} wgstate;

/* One CTA of the cluster being interpreted. */
typedef struct cta {
	int bid[3];		/* blockIdx */
	unsigned char *sm;	/* shared memory (interp.sm_bytes) */
	uint16_t *pmap;		/* per shared byte: 1 + the pending TMA entry writing it, or 0
				 * (allocated at the first TMA load) */
	mbar *bars;		/* initialised mbarriers */
	int nbars, capbars;
	pend *pend;		/* TMA entries (live or free slots) */
	int npend, cappend;
	int nlive;		/* live entries */
	wgstate *wg;		/* per warpgroup */
	int nwg;		/* warpgroups */
	int nsinfl;		/* shared ranges in flight over all warpgroups */
	bread *bulk;		/* shared ranges TMA stores still read */
	int nbulk, capbulk;
} cta;

/* The interpreter of one kernel launch. */
typedef struct interp {
	tinyc_ctx *ctx;
	const tinyc_gpu_module *m;
	const tinyc_gkernel *k;
	const tinyc_gpu_mem *mem;
	int64_t grid[3];	/* grid extents */
	int ncta;		/* CTAs interpreted together (the cluster's) */
	cta *ctas;		/* by rank */
	int64_t *sm_off;	/* per variable: SHARED byte address */
	int64_t sm_bytes;	/* shared bytes of a CTA */
	ithread *th;		/* threads of the cluster, CTA after CTA */
	int nth;		/* threads of a CTA */
	int nall;		/* threads of the cluster */
	int in_wgmma;		/* a wgmma reads or writes registers (no fence/flight checks) */
	double *wga, *wgb;	/* a wgmma's A (64 x 16) and B (256 x 16) operands, as values */
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
	char msg[640];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (t) {
		const int *b = in->ctas[t->cta].bid;
		tinyc_error(in->ctx, "GpuInterpError", "kernel %s, block (%d,%d,%d), thread (%d,%d,%d): %s",
			    in->k->name, b[0], b[1], b[2], t->tid[0], t->tid[1], t->tid[2], msg);
	} else {
		const int *b = in->ctas[0].bid;
		tinyc_error(in->ctx, "GpuInterpError", "kernel %s, block (%d,%d,%d)%s: %s", in->k->name,
			    b[0], b[1], b[2], in->ncta > 1 ? "'s cluster" : "", msg);
	}
	return -1;
}

/* --------------------------------------------------------- value helpers ---- */

/* Whether t is a floating type. */
static int is_f(tinyc_dtype t)
{
	return tinyc_dtype_is_float(t);
}

/* Whether t is a signed integer type. */
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

/* ----------------------------------------------------------------- memory ---- */

static ival eval(interp *in, ithread *t, const tinyc_gexpr *e);

/* Array arr (n elements of `size` bytes used, *cap allocated) with room for one more:
 * doubled from 16 when full.  The array (arr or its reallocation), or NULL (reported). */
static void *grow(interp *in, const ithread *t, void *arr, int n, int *cap, size_t size)
{
	if (n < *cap)
		return arr;
	int nc = *cap ? 2 * *cap : 16;
	void *na = realloc(arr, size * (size_t)nc);
	if (!na) {
		ierr(in, t, "out of memory");
		return NULL;
	}
	*cap = nc;
	return na;
}

/* The shared byte address of element idx of SHARED variable v. */
static int64_t sh_addr(const interp *in, int v, int64_t idx)
{
	return in->sm_off[v] + idx * tinyc_dtype_size(in->k->vars[v].dtype);
}

/* "name[element]" of the shared byte address a (for diagnostics). */
static void sh_name(const interp *in, int64_t a, char *buf, size_t size)
{
	const tinyc_gkernel *k = in->k;
	for (int v = 0; v < k->nvar; v++) {
		const tinyc_gvar *x = &k->vars[v];
		int sz = tinyc_dtype_size(x->dtype);
		if (x->kind == TINYC_GV_SHARED && a >= in->sm_off[v] && a < in->sm_off[v] + x->count * sz) {
			snprintf(buf, size, "%s[%" PRId64 "]", x->name, (a - in->sm_off[v]) / sz);
			return;
		}
	}
	snprintf(buf, size, "shared byte %" PRId64, a);
}

/* Check an access of shared bytes [lo, lo + n) of CTA c: none may belong to a TMA load
 * that has not landed, and a write none that a wgmma in flight reads.  0 or -1. */
static int sh_check(interp *in, ithread *t, cta *c, int64_t lo, int64_t n, int write)
{
	char at[96], dst[96], bar[96];
	if (c->nlive && c->pmap)
		for (int64_t b = lo; b < lo + n; b++) {
			if (!c->pmap[b])
				continue;
			const pend *p = &c->pend[c->pmap[b] - 1];
			sh_name(in, b, at, sizeof(at));
			sh_name(in, p->lo, dst, sizeof(dst));
			sh_name(in, p->bar, bar, sizeof(bar));
			return ierr(in, t, "race: %s of %s (CTA rank %d) before the TMA load into %s that "
				    "writes it landed: no mbarrier wait observed the completion of %s's phase %" PRId64,
				    write ? "write" : "read", at, (int)(c - in->ctas), dst, bar, p->phase);
		}
	if (write)
		for (int i = 0; i < c->nbulk; i++) {
			const bread *r = &c->bulk[i];
			if (lo < r->hi && r->lo < lo + n) {
				sh_name(in, lo, at, sizeof(at));
				return ierr(in, t, "race: write of %s (CTA rank %d) while a TMA store of thread %d "
					    "still reads %s (no cp.async.bulk.wait_group.read retired its group)",
					    at, (int)(c - in->ctas), r->thread, in->k->vars[r->var].name);
			}
		}
	if (write && c->nsinfl)
		for (int w = 0; w < c->nwg; w++)
			for (int i = 0; i < c->wg[w].ninfl; i++) {
				const sinfl *f = &c->wg[w].infl[i];
				if (lo < f->hi && f->lo < lo + n) {
					sh_name(in, lo, at, sizeof(at));
					return ierr(in, t, "race: write of %s (CTA rank %d) while a wgmma of warpgroup "
						    "%d that reads %s is in flight (no wgmma.wait_group retired its "
						    "group %" PRId64 ")", at, (int)(c - in->ctas), w,
						    in->k->vars[f->var].name, f->group);
				}
			}
	return 0;
}

/* Check a thread's access of register array v's element idx against the wgmma in
 * flight (their registers are the tensor cores' until a wait retires them) and note it
 * for the wgmma.fence rule.  0 or -1. */
static int reg_check(interp *in, ithread *t, int v, int64_t idx, int write)
{
	if (in->in_wgmma)
		return 0;
	t->touched[v] = 1;
	for (int i = 0; i < t->ninfl; i++)
		if (t->infl[i].var == v && idx >= t->infl[i].lo && idx < t->infl[i].hi &&
		    (write || t->infl[i].acc))
			return ierr(in, t, "race: %s of %s[%" PRId64 "] while a wgmma that %s it is in flight "
				    "(no wgmma.wait_group retired its group %" PRId64 ")", write ? "write" : "read",
				    in->k->vars[v].name, idx, t->infl[i].acc ? "writes" : "reads",
				    t->infl[i].group);
	return 0;
}

/* Where variable v's element idx lives (global, or shared in CTA c): the storage's base
 * and its element count.  NULL on error. */
static unsigned char *mem_of(interp *in, ithread *t, cta *c, int v, int64_t idx, int64_t *count)
{
	const tinyc_gvar *x = &in->k->vars[v];
	unsigned char *base = NULL;
	*count = 0;
	if (x->kind == TINYC_GV_PARAM_PTR) {
		if (x->buf < 0 || x->buf >= in->m->nbuf || !in->mem->buf || !in->mem->buf[x->buf]) {
			ierr(in, t, "pointer %s has no buffer", x->name);
			return NULL;
		}
		base = in->mem->buf[x->buf];
		*count = in->mem->buf_elems[x->buf];
	} else if (x->kind == TINYC_GV_SHARED) {
		base = c->sm + in->sm_off[v];
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

/* Read var[idx] (global, shared of CTA c, or register array). */
static ival load_at(interp *in, ithread *t, cta *c, int v, int64_t idx)
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
		if (reg_check(in, t, v, idx, 0) < 0)
			return zero;
		return t->arr[v][idx];
	}
	int64_t n;
	unsigned char *p = mem_of(in, t, c, v, idx, &n);
	if (p && x->kind == TINYC_GV_SHARED &&
	    sh_check(in, t, c, sh_addr(in, v, idx), tinyc_dtype_size(x->dtype), 0) < 0)
		return zero;
	return p ? mem_get(x->dtype, p, idx) : zero;
}

/* Read var[idx] in thread t's CTA. */
static ival load(interp *in, ithread *t, int v, int64_t idx)
{
	return load_at(in, t, &in->ctas[t->cta], v, idx);
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
		if (reg_check(in, t, v, idx, 1) < 0)
			return;
		t->arr[v][idx] = val;
		t->arr_init[v][idx] = 1;
		return;
	}
	if (x->kind == TINYC_GV_PARAM_PTR && x->is_const) {
		ierr(in, t, "store through const %s", x->name);
		return;
	}
	int64_t n;
	cta *c = &in->ctas[t->cta];
	unsigned char *p = mem_of(in, t, c, v, idx, &n);
	if (p && x->kind == TINYC_GV_SHARED &&
	    sh_check(in, t, c, sh_addr(in, v, idx), tinyc_dtype_size(x->dtype), 1) < 0)
		return;
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
		r.i = in->ctas[t->cta].bid[s - TINYC_GSP_BID_X];
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

/* ---------------------------------------------------------- mbarriers, TMA ---- */

enum { TX_LIMIT = (1 << 20) - 1 };	/* PTX: arrival counts and tx-counts lie in +-(2^20 - 1) */

/* The shared byte address of reference r (a SHARED variable) in thread t, or -1
 * (diagnosed).  what: the statement, for the diagnostic. */
static int64_t ref_addr(interp *in, ithread *t, const tinyc_gref *r, const char *what)
{
	const tinyc_gvar *x = &in->k->vars[r->var];
	if (x->kind != TINYC_GV_SHARED) {
		ierr(in, t, "%s: %s is not shared memory", what, x->name);
		return -1;
	}
	int64_t idx = r->index ? eval_index(in, t, r->index) : 0;
	if (in->failed)
		return -1;
	if (idx < 0 || idx >= x->count) {
		ierr(in, t, "%s: %s[%" PRId64 "] out of bounds (%" PRId64 " elements)", what, x->name, idx,
		     x->count);
		return -1;
	}
	return sh_addr(in, r->var, idx);
}

/* The mbarrier at shared address a of CTA c, or NULL. */
static mbar *mbar_at(cta *c, int64_t a)
{
	for (int i = 0; i < c->nbars; i++)
		if (c->bars[i].addr == a)
			return &c->bars[i];
	return NULL;
}

/* The initialised mbarrier at a in CTA c, or NULL (diagnosed: what uses it). */
static mbar *mbar_get(interp *in, ithread *t, cta *c, int64_t a, const char *what)
{
	mbar *b = mbar_at(c, a);
	if (!b) {
		char nm[96];
		sh_name(in, a, nm, sizeof(nm));
		ierr(in, t, "%s on %s (CTA rank %d), which no mbarrier.init initialised", what, nm,
		     (int)(c - in->ctas));
	}
	return b;
}

/* Complete b's current phase if nothing is pending any more. */
static void mbar_settle(mbar *b)
{
	if (b->pending == 0 && b->tx == 0) {
		b->phase++;
		b->pending = b->count;
	}
}

/* One arrival on b (of CTA c).  0 or -1. */
static int mbar_arrive(interp *in, ithread *t, cta *c, mbar *b)
{
	if (b->pending <= 0) {
		char nm[96];
		sh_name(in, b->addr, nm, sizeof(nm));
		return ierr(in, t, "mbarrier %s (CTA rank %d): more arrivals in phase %" PRId64 " than its "
			    "count %d", nm, (int)(c - in->ctas), b->phase, b->count);
	}
	b->pending--;
	mbar_settle(b);
	return 0;
}

/* Add bytes (expect_tx, > 0) or remove them (complete_tx, < 0) from b's tx-count. */
static int mbar_tx(interp *in, ithread *t, cta *c, mbar *b, int64_t bytes)
{
	b->tx += bytes;
	if (b->tx > TX_LIMIT || b->tx < -TX_LIMIT) {
		char nm[96];
		sh_name(in, b->addr, nm, sizeof(nm));
		return ierr(in, t, "mbarrier %s (CTA rank %d): tx-count %" PRId64 " outside the hardware's "
			    "range +-%d", nm, (int)(c - in->ctas), b->tx, TX_LIMIT);
	}
	mbar_settle(b);
	return 0;
}

/* Land the TMA entries of CTA c that complete on barrier b in a phase that has completed
 * (a thread of c observed it). */
static void mbar_observed(cta *c, const mbar *b)
{
	for (int i = 0; i < c->npend && c->nlive; i++) {
		pend *p = &c->pend[i];
		if (!p->live || p->bar != b->addr || p->phase >= b->phase)
			continue;
		memcpy(c->sm + p->lo, p->data, (size_t)(p->hi - p->lo));
		memset(c->pmap + p->lo, 0, (size_t)(p->hi - p->lo) * sizeof(*c->pmap));
		free(p->data);
		p->data = NULL;
		p->live = 0;
		c->nlive--;
	}
}

/* Whether thread t's mbarrier wait can return; lands what it observes.  -1 on error. */
static int mbar_try_wait(interp *in, ithread *t)
{
	cta *c = &in->ctas[t->cta];
	mbar *b = mbar_get(in, t, c, t->wait_bar, "mbarrier.wait");
	if (!b)
		return -1;
	if ((b->phase & 1) == t->wait_par)
		return 0;	/* the phase of that parity is the current one: not complete */
	mbar_observed(c, b);
	return 1;
}

/* The byte address a under a `span`-byte swizzle (0: none): the 16-byte chunk bits
 * 4..6 XORed with bits 7..9 (128), 4..5 with 7..8 (64), 4 with 7 (32), as TMA and the
 * wgmma descriptors' swizzle modes do. */
static int64_t swizzle(int64_t a, int span)
{
	switch (span) {
	case 128: return a ^ (((a >> 7) & 7) << 4);
	case 64: return a ^ (((a >> 7) & 3) << 4);
	case 32: return a ^ (((a >> 7) & 1) << 4);
	default: return a;
	}
}

/* A pending TMA entry of n bytes at lo in CTA c completing on b: its slot, with data
 * allocated and the bytes claimed.  NULL on error (a race or out of memory). */
static pend *pend_add(interp *in, ithread *t, cta *c, int var, int64_t lo, int64_t n, const mbar *b)
{
	if (!c->pmap && !(c->pmap = calloc((size_t)in->sm_bytes, sizeof(*c->pmap)))) {
		ierr(in, t, "out of memory");
		return NULL;
	}
	if (sh_check(in, t, c, lo, n, 1) < 0)	/* another load's bytes, a wgmma's operand */
		return NULL;
	int slot = 0;
	while (slot < c->npend && c->pend[slot].live)
		slot++;
	if (slot == c->npend) {
		if (slot >= 65535) {
			ierr(in, t, "more than 65535 TMA loads in flight");
			return NULL;
		}
		pend *np = grow(in, t, c->pend, c->npend, &c->cappend, sizeof(*np));
		if (!np)
			return NULL;
		c->pend = np;
		c->npend++;
	}
	pend *p = &c->pend[slot];
	memset(p, 0, sizeof(*p));
	if (!(p->data = malloc((size_t)n))) {
		ierr(in, t, "out of memory");
		return NULL;
	}
	p->live = 1, p->lo = lo, p->hi = lo + n, p->bar = b->addr, p->phase = b->phase, p->var = var;
	for (int64_t i = lo; i < lo + n; i++)
		c->pmap[i] = (uint16_t)(slot + 1);
	c->nlive++;
	return p;
}

/* A TMA statement's box under the launch's symbols: its tensor map's extents, strides,
 * offset and buffer, the shared side (its address: aligned, the box inside the array)
 * and the box's coordinates. */
typedef struct tbox {
	const tinyc_gtmap *tm;	/* the tensor map */
	const char *map;	/* its name */
	int64_t dim[5], str[5];	/* extents and element strides */
	int64_t off;		/* element offset of the origin */
	int64_t crd[5];		/* the box's first element */
	int64_t elems, bytes;	/* the box's size */
	int esz;		/* element bytes */
	int64_t sh;		/* shared byte address of the box */
} tbox;

/* Fill b for TMA statement s of `what` (tma.load, tma.store) on tensor map parameter
 * map_var and the shared box at sref.  0, or -1 (reported). */
static int tma_box(interp *in, ithread *t, const tinyc_gstmt *s, int map_var, const tinyc_gref *sref,
		   const char *what, tbox *b)
{
	const tinyc_gkernel *k = in->k;
	const tinyc_gvar *mv = &k->vars[map_var];
	const tinyc_gtmap *tm = mv->kind == TINYC_GV_PARAM_TMAP ? mv->tmap : NULL;
	b->tm = tm, b->map = mv->name;
	if (!tm)
		return ierr(in, t, "%s: %s is not a tensor map with a description (tinyc_gtmap)", what, mv->name);
	int R = tm->rank;
	if (R < 1 || R > 5 || s->n != R)
		return ierr(in, t, "%s.%dd with tensor map %s of rank %d", what, s->n, mv->name, R);
	b->elems = 1;
	for (int d = 0; d < R; d++) {
		if (tinyc_gpu_eval_int(tm->dim[d], in->mem->sym, &b->dim[d]) < 0 ||
		    tinyc_gpu_eval_int(tm->stride[d], in->mem->sym, &b->str[d]) < 0)
			return ierr(in, t, "tensor map %s: dimension %d needs a size without a value", mv->name, d);
		if (tm->box[d] < 1 || tm->box[d] > 256)
			return ierr(in, t, "tensor map %s: box extent %d of dimension %d outside 1..256", mv->name,
				    tm->box[d], d);
		b->elems *= tm->box[d];
	}
	if (tinyc_gpu_eval_int(tm->offset, in->mem->sym, &b->off) < 0)
		return ierr(in, t, "tensor map %s: its offset needs a size without a value", mv->name);
	if (tm->buf < 0 || tm->buf >= in->m->nbuf || !in->mem->buf || !in->mem->buf[tm->buf])
		return ierr(in, t, "tensor map %s has no buffer", mv->name);
	const tinyc_gvar *sv = &k->vars[sref->var];
	b->esz = tinyc_dtype_size(tm->dtype);
	if (sv->kind != TINYC_GV_SHARED)
		return ierr(in, t, "%s: %s is not a shared array", what, sv->name);
	b->sh = ref_addr(in, t, sref, what);
	if (b->sh < 0)
		return -1;
	b->bytes = b->elems * b->esz;
	int swz = tm->swizzle;	/* (the swizzle follows the absolute address bits, as TMA's) */
	if (b->sh % 128)
		return ierr(in, t, "%s: shared address %" PRId64 " of %s not 128-byte aligned", what, b->sh,
			    sv->name);
	if (swz && tm->box[0] * b->esz != swz)
		return ierr(in, t, "%s with %s: a box row of %d bytes under a %d-byte swizzle is not "
			    "interpreted (only rows of the swizzle's span)", what, mv->name, tm->box[0] * b->esz, swz);
	if (b->sh + b->bytes > in->sm_off[sref->var] + sv->count * tinyc_dtype_size(sv->dtype))
		return ierr(in, t, "%s: the box's %" PRId64 " bytes at byte %" PRId64 " of %s run past the array",
			    what, b->bytes, b->sh - in->sm_off[sref->var], sv->name);
	for (int d = 0; d < R; d++)
		b->crd[d] = (int32_t)eval_index(in, t, s->coord[d]);
	return in->failed ? -1 : 0;
}

/* The global element of box element e (dense order, innermost first) of b; 1 when it lies
 * inside the tensor (*at set), 0 when outside, -1 when the tensor map describes memory
 * past its buffer (reported). */
static int tma_elem(interp *in, ithread *t, const tbox *b, int64_t e, const char *what, int64_t *at)
{
	int inside = 1;
	*at = b->off;
	for (int d = 0; d < b->tm->rank; d++) {
		int64_t c = b->crd[d] + e % b->tm->box[d];
		e /= b->tm->box[d];
		inside &= c >= 0 && c < b->dim[d];
		*at += c * b->str[d];
	}
	int64_t gn = in->mem->buf_elems[b->tm->buf];
	if (inside && (*at < 0 || *at >= gn))
		return ierr(in, t, "%s with %s: element %" PRId64 " outside its buffer of %" PRId64
			    " elements (the tensor map describes memory past it)", what, b->map, *at, gn);
	return inside;
}

/* cp.async.bulk.tensor: the box at the statement's coordinates of its tensor map into
 * shared memory (every CTA of the multicast mask, or t's), completing on the barrier. */
static void exec_tma(interp *in, ithread *t, const tinyc_gstmt *s)
{
	tbox b;
	if (tma_box(in, t, s, s->src.var, &s->dst, "tma.load", &b) < 0)
		return;
	int64_t bar = ref_addr(in, t, &s->src2, "tma.load");
	if (bar < 0)
		return;
	unsigned mask = s->flag ? (unsigned)s->flag : 1u << t->cta;
	if (mask >> in->ncta) {
		ierr(in, t, "tma.load multicast mask 0x%x names CTAs past the cluster's %d", mask, in->ncta);
		return;
	}
	for (int r = 0; r < in->ncta; r++)	/* every destination's barrier exists */
		if ((mask >> r & 1) && !mbar_get(in, t, &in->ctas[r], bar, "tma.load completing"))
			return;
	/* the box, element by element in its (dense) shared-memory order */
	unsigned char *lin = calloc((size_t)b.bytes, 1);
	if (!lin) {
		ierr(in, t, "out of memory");
		return;
	}
	const unsigned char *g = in->mem->buf[b.tm->buf];
	for (int64_t e = 0; e < b.elems; e++) {
		int64_t at;
		int r = tma_elem(in, t, &b, e, "tma.load", &at);
		if (r < 0) {
			free(lin);
			return;
		}
		if (r)
			memcpy(lin + e * b.esz, g + at * b.esz, (size_t)b.esz);
	}
	for (int r = 0; r < in->ncta && !in->failed; r++) {
		if (!(mask >> r & 1))
			continue;
		cta *c = &in->ctas[r];
		mbar *mb = mbar_at(c, bar);
		pend *p = pend_add(in, t, c, s->dst.var, b.sh, b.bytes, mb);
		if (!p)
			break;
		for (int64_t j = 0; j < b.bytes; j++)
			p->data[swizzle(b.sh + j, b.tm->swizzle) - b.sh] = lin[j];
		mbar_tx(in, t, c, mb, -b.bytes);	/* complete_tx: the bytes arrived */
	}
	free(lin);
}

/* A TMA store: the box at s->coord of tensor map s->dst.var from the shared array at
 * s->src (dense, under the map's swizzle), elements outside the tensor skipped; written at
 * issue, its shared bytes recorded as read until a bulk wait retires the group. */
static void exec_tma_store(interp *in, ithread *t, const tinyc_gstmt *s)
{
	tbox b;
	if (tma_box(in, t, s, s->dst.var, &s->src, "tma.store", &b) < 0)
		return;
	cta *c = &in->ctas[t->cta];
	if (sh_check(in, t, c, b.sh, b.bytes, 0) < 0)
		return;
	unsigned char *g = in->mem->buf[b.tm->buf];
	for (int64_t e = 0; e < b.elems; e++) {
		int64_t at;
		int r = tma_elem(in, t, &b, e, "tma.store", &at);
		if (r < 0)
			return;
		for (int j = 0; r && j < b.esz; j++)
			g[at * b.esz + j] = c->sm[swizzle(b.sh + e * b.esz + j, b.tm->swizzle)];
	}
	bread *nb = grow(in, t, c->bulk, c->nbulk, &c->capbulk, sizeof(*nb));
	if (!nb)
		return;
	c->bulk = nb;
	c->bulk[c->nbulk++] = (bread){b.sh, b.sh + b.bytes, t->linear, -1, s->src.var};
}

/* cp.async.bulk.commit_group (pending < 0) or wait_group.read `pending` of thread t. */
static void exec_bulk(interp *in, ithread *t, int pending)
{
	cta *c = &in->ctas[t->cta];
	if (pending < 0)
		t->bulk_groups++;
	int n = 0;
	for (int i = 0; i < c->nbulk; i++) {
		bread *r = &c->bulk[i];
		if (r->thread == t->linear && pending < 0 && r->group < 0)
			r->group = t->bulk_groups;
		if (r->thread == t->linear && pending >= 0 && r->group >= 0 &&
		    r->group <= t->bulk_groups - pending)
			continue;	/* retired */
		c->bulk[n++] = *r;
	}
	c->nbulk = n;
}

/* A copy from the shared memory of the cluster's CTA of rank s->value (mapa +
 * ld.shared::cluster) into t's register array. */
static void exec_copy_remote(interp *in, ithread *t, const tinyc_gstmt *s)
{
	int64_t rank = eval_index(in, t, s->value);
	if (in->failed)
		return;
	if (rank < 0 || rank >= in->ncta) {
		ierr(in, t, "copy from the shared memory of CTA rank %" PRId64 ", outside the cluster of %d",
		     rank, in->ncta);
		return;
	}
	if (in->k->vars[s->src.var].kind != TINYC_GV_SHARED) {
		ierr(in, t, "remote copy from %s: not shared memory", in->k->vars[s->src.var].name);
		return;
	}
	int64_t di = eval_index(in, t, s->dst.index), si = eval_index(in, t, s->src.index);
	for (int i = 0; i < s->n && !in->failed; i++)
		store(in, t, s->dst.var, di + i, load_at(in, t, &in->ctas[rank], s->src.var, si + i));
}

/* Execute a simple (non-compound, non-blocking) statement. */
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
			for (int64_t i = 0; i < v->count; i++)
				if (reg_check(in, t, s->dst.var, i, 1) < 0)
					return;
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
			exec_copy_remote(in, t, s);
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
	case TINYC_GS_MBAR_INIT: {
		cta *c = &in->ctas[t->cta];
		int64_t a = ref_addr(in, t, &s->dst, "mbarrier.init");
		if (a < 0)
			return;
		if (a % 8 || s->n < 1 || s->n > TX_LIMIT) {
			ierr(in, t, "mbarrier.init: address %" PRId64 " not 8-byte aligned or count %d outside "
			     "1..%d", a, s->n, TX_LIMIT);
			return;
		}
		mbar *b = mbar_at(c, a);
		if (!b) {
			mbar *nb = grow(in, t, c->bars, c->nbars, &c->capbars, sizeof(*nb));
			if (!nb)
				return;
			c->bars = nb;
			b = &c->bars[c->nbars++];
		}
		b->addr = a, b->count = b->pending = s->n, b->tx = 0, b->phase = 0;
		return;
	}
	case TINYC_GS_MBAR_EXPECT_TX: {
		cta *c = &in->ctas[t->cta];
		int64_t a = ref_addr(in, t, &s->dst, "mbarrier.expect_tx");
		int64_t bytes = eval_index(in, t, s->value);
		mbar *b = a < 0 ? NULL : mbar_get(in, t, c, a, "mbarrier.expect_tx");
		if (!b)
			return;
		if (bytes < 0 || bytes > TX_LIMIT) {
			ierr(in, t, "mbarrier.expect_tx of %" PRId64 " bytes, outside 0..%d", bytes, TX_LIMIT);
			return;
		}
		if (mbar_tx(in, t, c, b, bytes) == 0 && !s->flag)
			mbar_arrive(in, t, c, b);
		return;
	}
	case TINYC_GS_MBAR_ARRIVE: {
		int64_t rank = s->value ? eval_index(in, t, s->value) : t->cta;
		int64_t a = ref_addr(in, t, &s->dst, "mbarrier.arrive");
		if (a < 0)
			return;
		if (rank < 0 || rank >= in->ncta) {
			ierr(in, t, "mbarrier.arrive on CTA rank %" PRId64 ", outside the cluster of %d", rank,
			     in->ncta);
			return;
		}
		cta *c = &in->ctas[rank];
		mbar *b = mbar_get(in, t, c, a, "mbarrier.arrive");
		if (b)
			mbar_arrive(in, t, c, b);
		return;
	}
	case TINYC_GS_TMA_LOAD:
		exec_tma(in, t, s);
		return;
	case TINYC_GS_TMA_STORE:
		exec_tma_store(in, t, s);
		return;
	case TINYC_GS_BULK_COMMIT:
		exec_bulk(in, t, -1);
		return;
	case TINYC_GS_BULK_WAIT:
		exec_bulk(in, t, s->n);
		return;
	case TINYC_GS_CP_COMMIT:
	case TINYC_GS_CP_WAIT:	/* cp.async copies complete at once: nothing to wait for */
	case TINYC_GS_FENCE:	/* kernels run one after another: grid.wait, too, is done */
	case TINYC_GS_COMMENT:
	case TINYC_GS_TMAP_PREFETCH:	/* a cache hint */
		return;
	default:
		ierr(in, t, "statement %s not interpreted", tinyc_gs_op_name(s->op));
		return;
	}
}

/* Run thread t until it finishes or waits at a barrier, a collective or an mbarrier. */
static void run_thread(interp *in, ithread *t)
{
	while (t->state == T_RUN && !in->failed) {
		if (!t->nstack) {
			const cta *c = &in->ctas[t->cta];
			for (int i = 0; i < c->nbulk; i++)
				if (c->bulk[i].thread == t->linear) {
					ierr(in, t, "the thread ends with a TMA store that still reads %s (no "
					     "cp.async.bulk.wait_group.read retired its group)",
					     in->k->vars[c->bulk[i].var].name);
					return;
				}
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
		case TINYC_GS_WGMMA_FENCE:
		case TINYC_GS_WGMMA:
		case TINYC_GS_WGMMA_COMMIT:
		case TINYC_GS_WGMMA_WAIT:
		case TINYC_GS_SETMAXNREG:
			t->state = T_WG;
			t->wait = next;
			return;
		case TINYC_GS_MBAR_WAIT: {
			t->wait_bar = ref_addr(in, t, &next->dst, "mbarrier.wait");
			t->wait_par = (int)(eval_index(in, t, next->value) & 1);
			t->wait = next;
			int r = t->wait_bar < 0 ? -1 : mbar_try_wait(in, t);
			if (r == 0)
				t->state = T_MBAR;
			if (r <= 0)
				return;
			break;
		}
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

/* ------------------------------------------------- warpgroup collectives ---- */

/* The wgmma shared-memory matrix descriptor the CUDA text builds for an operand at
 * shared address a with layout l (codegen/cuda.c, tinyc_wg_desc): start address >> 4 in
 * bits 0..13, leading byte offset >> 4 in 16..29 (K-major: 16, unused; MN-major: the
 * bytes between blocks of 64 m (n)), stride byte offset >> 4 in 32..45 (1024: 8-row or
 * 8-k groups), base offset 0, swizzle mode 1 (128 bytes) in bits 62..63. */
static uint64_t wg_desc(int64_t a, tinyc_gwg_layout l)
{
	uint64_t lbo = l.k_major ? 16u : (uint64_t)l.mn_block;
	return (((uint64_t)a & 0x3FFFFu) >> 4) | (((lbo >> 4) & 0x3FFFu) << 16) |
	       ((uint64_t)((1024u >> 4) & 0x3FFFu) << 32) | (UINT64_C(1) << 62);
}

/* The shared byte address the tensor cores read for element (row, kk) of an operand
 * (row: m for A, n for B) given its descriptor: the canonical 128-byte swizzled layouts
 * (CUTLASS's GMMA atoms, in bytes; T = 16-byte chunks):
 *   K-major:  Swizzle<3,4,3> o ((8, m), (T, 2k)) : ((128, SBO), (1, 16))
 *   MN-major: Swizzle<3,4,3> o ((T, 8, m), (8, k)) : ((1, 16, LBO), (128, SBO)) */
static int64_t wg_read_addr(uint64_t desc, int kmajor, int esz, int row, int kk)
{
	int64_t start = (int64_t)(desc & 0x3FFFu) << 4;
	int64_t lbo = (int64_t)((desc >> 16) & 0x3FFFu) << 4, sbo = (int64_t)((desc >> 32) & 0x3FFFu) << 4;
	int per_row = 128 / esz;	/* elements of a 128-byte row */
	int64_t a = kmajor ? start + (row / 8) * sbo + (row % 8) * 128 + (int64_t)kk * esz
			   : start + (row / per_row) * lbo + (int64_t)(row % per_row) * esz + (kk / 8) * sbo +
				     (kk % 8) * 128;
	return swizzle(a, 128);
}

/* Read the operand matrix of a wgmma from shared array v through descriptor desc:
 * out[row * K + kk] for rows 0..rows, k 0..K; the byte range read in *lo, *hi.
 * 0 or -1. */
static int wg_read(interp *in, ithread *t, int v, uint64_t desc, int kmajor, int rows, int K, int bf,
		   double *out, int64_t *lo, int64_t *hi, const char *which)
{
	const tinyc_gvar *x = &in->k->vars[v];
	cta *c = &in->ctas[t->cta];
	int esz = tinyc_dtype_size(x->dtype);
	int64_t start = (int64_t)(desc & 0x3FFFu) << 4;
	int64_t vlo = in->sm_off[v], vhi = vlo + x->count * esz;
	if ((start >> 7) & 7)
		return ierr(in, t, "wgmma operand %s (%s): the descriptor's start address %" PRId64 " is not "
			    "at a 1024-byte boundary of the swizzle pattern (its row bits are %d) while its "
			    "base offset is 0: what the tensor cores read is not modelled", which, x->name,
			    start, (int)((start >> 7) & 7));
	*lo = INT64_MAX, *hi = INT64_MIN;
	for (int r = 0; r < rows; r++)
		for (int kk = 0; kk < K; kk++) {
			int64_t a = wg_read_addr(desc, kmajor, esz, r, kk);
			if (a < vlo || a + esz > vhi)
				return ierr(in, t, "wgmma operand %s reads %s out of bounds: element (%d, %d) at "
					    "byte %" PRId64 " of the array's %" PRId64, which, x->name, r, kk,
					    a - vlo, vhi - vlo);
			if (sh_check(in, t, c, a, esz, 0) < 0)
				return -1;
			uint64_t u = 0;
			memcpy(&u, c->sm + a, (size_t)esz);
			out[r * K + kk] = esz == 4 ? tf32_operand(tinyc_bits_to_float(TINYC_FLOAT, u))
						   : b16val(bf, (uint16_t)u);
			*lo = a < *lo ? a : *lo;
			*hi = a + esz > *hi ? a + esz : *hi;
		}
	return 0;
}

/* Note register elements [lo, hi) of v as used by t's wgmma in flight (group g; acc:
 * its accumulators, else A's fragment). */
static int infl_reg(interp *in, ithread *t, int v, int64_t lo, int64_t hi, int64_t g, int acc)
{
	rinfl *n = grow(in, t, t->infl, t->ninfl, &t->capinfl, sizeof(*n));
	if (!n)
		return -1;
	t->infl = n;
	t->infl[t->ninfl++] = (rinfl){v, lo, hi, g, acc};
	return 0;
}

/* Note shared bytes [lo, hi) of v as read by a wgmma in flight of warpgroup w (group g). */
static int infl_shared(interp *in, ithread *t, cta *c, wgstate *w, int v, int64_t lo, int64_t hi,
		       int64_t g)
{
	sinfl *n = grow(in, t, w->infl, w->ninfl, &w->capinfl, sizeof(*n));
	if (!n)
		return -1;
	w->infl = n;
	w->infl[w->ninfl++] = (sinfl){lo, hi, g, v};
	c->nsinfl++;
	return 0;
}

/* wgmma.mma_async for the warpgroup th[0..128): D (+)= A B (see the file comment). */
static void exec_wgmma(interp *in, ithread **th, const tinyc_gstmt *s)
{
	const tinyc_gkernel *k = in->k;
	ithread *t0 = th[0];
	cta *c = &in->ctas[t0->cta];
	wgstate *w = &c->wg[t0->linear / 128];
	const tinyc_gvar *av = &k->vars[s->src.var], *bv = &k->vars[s->src2.var], *dv = &k->vars[s->dst.var];
	int areg = av->kind == TINYC_GV_REG_ARRAY, N = s->n;
	int tf32 = bv->dtype == TINYC_FLOAT, bf = bv->dtype == TINYC_BFLOAT16;
	int K = tf32 ? 8 : 16;
	if (N < 8 || N > 256 || N % 8 || dv->kind != TINYC_GV_REG_ARRAY || dv->dtype != TINYC_FLOAT ||
	    bv->kind != TINYC_GV_SHARED || (!areg && av->kind != TINYC_GV_SHARED)) {
		ierr(in, t0, "wgmma m64n%dk%d: D %s must be a float register array, B %s shared, A %s shared "
		     "or registers", N, K, dv->name, bv->name, av->name);
		return;
	}
	if (tf32 ? areg || av->dtype != TINYC_FLOAT || !s->wg_a.k_major || !s->wg_b.k_major
		 : tinyc_dtype_size(bv->dtype) != 2 || (!areg && av->dtype != bv->dtype) ||
			   (areg && tinyc_dtype_size(av->dtype) != 2 && tinyc_dtype_size(av->dtype) != 4)) {
		ierr(in, t0, "wgmma: operands %s (%s) and %s (%s) are neither 16-bit nor K-major float (tf32) "
		     "tiles", av->name, tinyc_dtype_name(av->dtype), bv->name, tinyc_dtype_name(bv->dtype));
		return;
	}
	/* the operands every thread passes: one value for the warpgroup */
	int64_t ai = 0, bi = 0, doff = 0, sd = 1;
	for (int i = 0; i < 128 && !in->failed; i++) {
		ithread *t = th[i];
		int64_t a = s->src.index ? eval_index(in, t, s->src.index) : 0;
		int64_t b = s->src2.index ? eval_index(in, t, s->src2.index) : 0;
		int64_t d = s->dst.index ? eval_index(in, t, s->dst.index) : 0;
		int64_t z = s->value ? (int64_t)(eval(in, t, s->value).u != 0) : 1;
		if (i == 0)
			ai = a, bi = b, doff = d, sd = z;
		else if (a != ai || b != bi || d != doff || z != sd)
			ierr(in, t, "wgmma: operands differ across the warpgroup (A %" PRId64 ", B %" PRId64
			     ", D %" PRId64 ", scale-d %" PRId64 " in its first thread)", ai, bi, doff, sd);
		if (t->touched[s->dst.var] || (areg && t->touched[s->src.var]))
			ierr(in, t, "wgmma: registers of %s were accessed since the warpgroup's last wgmma.fence "
			     "(PTX requires one between a register access and a wgmma using them)",
			     t->touched[s->dst.var] ? dv->name : av->name);
	}
	if (in->failed)
		return;
	if (doff < 0 || doff + N / 2 > dv->count) {
		ierr(in, t0, "wgmma: accumulators %s[%" PRId64 "..%" PRId64 "] out of bounds", dv->name, doff,
		     doff + N / 2);
		return;
	}
	double *A = in->wga, *B = in->wgb;	/* A[m][k], B[n][k] */
	if (!A && !(A = in->wga = malloc(sizeof(double) * 64 * 16)))
		return (void)ierr(in, t0, "out of memory");
	if (!B && !(B = in->wgb = malloc(sizeof(double) * 256 * 16)))
		return (void)ierr(in, t0, "out of memory");
	int64_t alo = 0, ahi = 0, blo, bhi;
	for (int p = 0; p < 2; p++) {	/* the descriptors: 16-byte aligned start addresses */
		if (p == 0 && areg)
			continue;
		int v = p ? s->src2.var : s->src.var;
		int64_t a = sh_addr(in, v, p ? bi : ai);
		if (a % 16 || (p ? bi : ai) < 0 || (p ? bi : ai) >= k->vars[v].count) {
			ierr(in, t0, "wgmma operand %s: %s[%" PRId64 "] is not a 16-byte aligned element of the "
			     "array", p ? "B" : "A", k->vars[v].name, p ? bi : ai);
			return;
		}
	}
	uint64_t bdesc = wg_desc(sh_addr(in, s->src2.var, bi), s->wg_b);
	if (wg_read(in, t0, s->src2.var, bdesc, s->wg_b.k_major, N, K, bf, B, &blo, &bhi, "B") < 0)
		return;
	if (!areg) {
		uint64_t adesc = wg_desc(sh_addr(in, s->src.var, ai), s->wg_a);
		if (wg_read(in, t0, s->src.var, adesc, s->wg_a.k_major, 64, K, bf, A, &alo, &ahi, "A") < 0)
			return;
	}
	in->in_wgmma = 1;
	if (areg)	/* each warp's m16k16 fragment in mma.sync's A layout */
		for (int i = 0; i < 128 && !in->failed; i++) {
			int r0 = 16 * (i / 32) + (i % 32) / 4, q = i % 4;
			for (int h = 0; h < 2; h++) {
				A[r0 * 16 + 2 * q + h] = b16val(bf, get16(in, th[i], s->src.var, ai, 0 + h));
				A[(r0 + 8) * 16 + 2 * q + h] = b16val(bf, get16(in, th[i], s->src.var, ai, 2 + h));
				A[r0 * 16 + 2 * q + 8 + h] = b16val(bf, get16(in, th[i], s->src.var, ai, 4 + h));
				A[(r0 + 8) * 16 + 2 * q + 8 + h] = b16val(bf, get16(in, th[i], s->src.var, ai, 6 + h));
			}
		}
	/* D in PTX's fragment: register j of thread i: row 16 (warp) + lane / 4 + 8 (j / 2 % 2),
	 * column 8 (j / 4) + 2 (lane % 4) + j % 2 */
	for (int i = 0; i < 128 && !in->failed; i++) {
		ithread *t = th[i];
		int lane = i % 32;
		for (int j = 0; j < N / 2 && !in->failed; j++) {
			int row = 16 * (i / 32) + lane / 4 + 8 * (j / 2 % 2), col = 8 * (j / 4) + 2 * (lane % 4) + j % 2;
			double acc = sd ? load(in, t, s->dst.var, doff + j).f : 0.0;
			for (int kk = 0; kk < K; kk++)
				acc += A[row * K + kk] * B[col * K + kk];
			float f = (float)acc;
			if (tf32 && isfinite(f) && fabs((double)f) > fabs(acc))
				f = nextafterf(f, 0.0f);	/* tf32: truncated, as mma.sync .tf32 */
			store(in, t, s->dst.var, doff + j, fval(TINYC_FLOAT, f));
		}
	}
	in->in_wgmma = 0;
	if (in->failed)
		return;
	/* in flight until a wait retires the open group */
	int64_t g = w->committed;
	for (int i = 0; i < 128; i++) {
		if (infl_reg(in, th[i], s->dst.var, doff, doff + N / 2, g, 1) < 0)
			return;
		if (areg && infl_reg(in, th[i], s->src.var, ai, ai + (tinyc_dtype_size(av->dtype) == 2 ? 8 : 4), g,
				     0) < 0)
			return;
	}
	if (infl_shared(in, t0, c, w, s->src2.var, blo, bhi, g) < 0)
		return;
	if (!areg)
		infl_shared(in, t0, c, w, s->src.var, alo, ahi, g);
}

/* Execute the warpgroup collective s for the threads th[0..128) of one warpgroup. */
static void exec_wg_collective(interp *in, ithread **th, const tinyc_gstmt *s)
{
	cta *c = &in->ctas[th[0]->cta];
	wgstate *w = &c->wg[th[0]->linear / 128];
	switch (s->op) {
	case TINYC_GS_WGMMA_FENCE:	/* the registers are the tensor cores' from here */
		for (int i = 0; i < 128; i++)
			memset(th[i]->touched, 0, (size_t)in->k->nvar);
		return;
	case TINYC_GS_WGMMA:
		exec_wgmma(in, th, s);
		return;
	case TINYC_GS_WGMMA_COMMIT:
		w->committed++;
		return;
	case TINYC_GS_WGMMA_WAIT: {	/* retire all but the s->n most recent groups */
		int64_t keep = w->committed - s->n;
		for (int i = 0; i < 128; i++) {
			ithread *t = th[i];
			int n = 0;
			for (int j = 0; j < t->ninfl; j++)
				if (t->infl[j].group >= keep)
					t->infl[n++] = t->infl[j];
			t->ninfl = n;
		}
		int n = 0;
		for (int j = 0; j < w->ninfl; j++)
			if (w->infl[j].group >= keep)
				w->infl[n++] = w->infl[j];
		c->nsinfl -= w->ninfl - n;
		w->ninfl = n;
		return;
	}
	case TINYC_GS_SETMAXNREG:	/* the register file's split: nothing to interpret */
		return;
	default:
		ierr(in, th[0], "not a warpgroup collective");
		return;
	}
}


/* ------------------------------------------------------------------ launch ---- */

/* Free the per-thread storage of the cluster's threads and the CTAs' state. */
static void free_threads(interp *in)
{
	for (int i = 0; in->th && i < in->nall; i++) {
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
		free(t->touched);
		free(t->infl);
	}
	free(in->th);
	in->th = NULL;
	for (int r = 0; in->ctas && r < in->ncta; r++) {
		cta *c = &in->ctas[r];
		for (int i = 0; i < c->npend; i++)
			free(c->pend[i].data);
		for (int w = 0; c->wg && w < c->nwg; w++)
			free(c->wg[w].infl);
		free(c->pend);
		free(c->bulk);
		free(c->bars);
		free(c->wg);
		free(c->pmap);
		free(c->sm);
	}
	free(in->ctas);
	in->ctas = NULL;
	free(in->wga);
	free(in->wgb);
}

/* Describe what the blocked thread t waits for (a deadlock's diagnostic). */
static void describe_wait(interp *in, const ithread *t, char *buf, size_t size)
{
	const int *b = in->ctas[t->cta].bid;
	int n = snprintf(buf, size, "thread (%d,%d,%d) of block (%d,%d,%d) ", t->tid[0], t->tid[1],
			 t->tid[2], b[0], b[1], b[2]);
	if (n < 0 || (size_t)n >= size)
		return;
	buf += n, size -= (size_t)n;
	switch (t->state) {
	case T_MBAR: {
		char nm[96];
		sh_name(in, t->wait_bar, nm, sizeof(nm));
		const mbar *m = mbar_at(&in->ctas[t->cta], t->wait_bar);
		if (m)
			snprintf(buf, size, "waits on mbarrier %s for the phase of parity %d (phase %" PRId64
				 " in progress: %d of %d arrivals and %" PRId64 " transaction bytes pending)", nm,
				 t->wait_par, m->phase, m->pending, m->count, m->tx);
		else
			snprintf(buf, size, "waits on mbarrier %s", nm);
		break;
	}
	case T_BARRIER:
		snprintf(buf, size, "waits at a %sbarrier", t->wait->flag ? "cluster " : "");
		break;
	case T_WARP:
		snprintf(buf, size, "waits at the warp collective %s", tinyc_gs_op_name(t->wait->op));
		break;
	case T_WG:
		snprintf(buf, size, "waits at the warpgroup collective %s", tinyc_gs_op_name(t->wait->op));
		break;
	default:
		snprintf(buf, size, "is stuck");
		break;
	}
}

/* The group g of `size` threads (a warp: 32, a warpgroup: 128) of the CTA whose threads
 * start at base, into grp[0..*n): the collective they all wait at in state st, or NULL
 * (not all there yet, or an error: two collectives at once). */
static const tinyc_gstmt *group_at(interp *in, ithread *base, int g, int size, int st, ithread **grp,
				   int *n)
{
	const tinyc_gstmt *at = NULL;
	int other = 0;
	*n = 0;
	for (int i = g * size; i < in->nth && i < g * size + size; i++) {
		ithread *t = &base[i];
		grp[(*n)++] = t;
		if (t->state != st) {
			other++;
		} else if (at && at != t->wait) {
			ierr(in, t, "%s at different collectives (%s and %s)", size == 32 ? "lanes of a warp"
			     : "threads of a warpgroup", tinyc_gs_op_name(at->op), tinyc_gs_op_name(t->wait->op));
			return NULL;
		} else {
			at = t->wait;
		}
	}
	return other ? NULL : at;
}

/* The collectives of CTA rank ci whose threads all arrived: executed.  Sets *progress. */
static int run_collectives(interp *in, int ci, int *progress)
{
	ithread *base = &in->th[(int64_t)ci * in->nth], *grp[128];
	for (int pass = 0; pass < 2 && !in->failed; pass++) {	/* warps, then warpgroups */
		int size = pass ? 128 : 32, n;
		for (int g = 0; g * size < in->nth && !in->failed; g++) {
			const tinyc_gstmt *at = group_at(in, base, g, size, pass ? T_WG : T_WARP, grp, &n);
			if (!at)
				continue;
			if (pass && n != 128)
				return ierr(in, grp[0], "%s needs a whole warpgroup (128 threads), the block has %d "
					    "threads", tinyc_gs_op_name(at->op), in->nth);
			if (pass)
				exec_wg_collective(in, grp, at);
			else
				exec_collective(in, grp, n, at);
			for (int i = 0; i < n; i++)
				grp[i]->state = T_RUN;
			*progress = 1;
		}
	}
	return in->failed ? -1 : 0;
}

/* Release the barrier that threads th[0..n) wait at if every live one does (flag: the
 * cluster's barriers, else the CTA's).  Sets *progress.  0 or -1. */
static int run_barrier(interp *in, ithread *th, int n, int flag, int *progress)
{
	int live = 0, done = 0, at_bar = 0;
	const tinyc_gstmt *bar = NULL;
	for (int i = 0; i < n; i++) {
		ithread *t = &th[i];
		if (t->state == T_DONE) {
			done++;
			continue;
		}
		live++;
		if (t->state == T_BARRIER && t->wait->flag == flag) {
			/* a cluster barrier may be spelled several times (the roles' own
			 * statements, as barrier.cluster is on the GPU); a CTA's may not */
			if (!flag && bar && bar != t->wait)
				return ierr(in, t, "threads wait at different barriers");
			bar = t->wait;
			at_bar++;
		}
	}
	if (!at_bar || at_bar < live)
		return 0;
	if (done)
		return ierr(in, NULL, "barrier divergence: %d threads exited while others wait at a %sbarrier",
			    done, flag ? "cluster " : "");
	for (int i = 0; i < n; i++)
		th[i].state = T_RUN;
	*progress = 1;
	return 0;
}

/* Run the current cluster (in->ctas set up) to completion. */
static int run_cluster(interp *in)
{
	const tinyc_gkernel *k = in->k;
	int nv = k->nvar;
	for (int i = 0; i < in->nall; i++) {
		ithread *t = &in->th[i];
		t->state = T_RUN;
		t->nstack = 0;
		t->ninfl = 0;
		t->bulk_groups = 0;
		memset(t->init, 0, (size_t)nv);
		memset(t->touched, 0, (size_t)nv);
		for (int v = 0; v < nv; v++)
			if (t->arr_init[v])
				memset(t->arr_init[v], 0, (size_t)k->vars[v].count);
		if (push(in, t, k->body) < 0)
			return -1;
	}
	for (int r = 0; r < in->ncta; r++) {	/* shared memory starts as zeros here */
		cta *c = &in->ctas[r];
		memset(c->sm, 0, (size_t)in->sm_bytes);
		if (c->pmap)
			memset(c->pmap, 0, (size_t)in->sm_bytes * sizeof(*c->pmap));
		for (int i = 0; i < c->npend; i++) {
			free(c->pend[i].data);
			c->pend[i].data = NULL;
			c->pend[i].live = 0;
		}
		c->npend = c->nlive = c->nbars = c->nsinfl = c->nbulk = 0;
		for (int w = 0; w < c->nwg; w++)
			c->wg[w].committed = 0, c->wg[w].ninfl = 0;
	}
	for (;;) {
		int progress = 0;
		for (int i = 0; i < in->nall && !in->failed; i++) {
			ithread *t = &in->th[i];
			if (t->state == T_MBAR) {
				int r = mbar_try_wait(in, t);
				if (r < 0)
					return -1;
				if (r)
					t->state = T_RUN;
			}
			if (t->state == T_RUN) {
				run_thread(in, t);
				progress = 1;
			}
		}
		for (int r = 0; r < in->ncta && !in->failed; r++)
			if (run_collectives(in, r, &progress) < 0)
				return -1;
		if (in->failed)
			return -1;
		if (progress)
			continue;
		for (int r = 0; r < in->ncta; r++)
			if (run_barrier(in, &in->th[(int64_t)r * in->nth], in->nth, 0, &progress) < 0)
				return -1;
		if (run_barrier(in, in->th, in->nall, 1, &progress) < 0)
			return -1;
		if (progress)
			continue;
		int done = 0, mb = 0, bar = 0, warp = 0, wg = 0;
		const ithread *first = NULL;
		for (int i = 0; i < in->nall; i++) {
			const ithread *t = &in->th[i];
			switch (t->state) {
			case T_DONE: done++; continue;
			case T_MBAR: mb++; break;
			case T_BARRIER: bar++; break;
			case T_WARP: warp++; break;
			case T_WG: wg++; break;
			default: break;
			}
			if (!first || (first->state != T_MBAR && t->state == T_MBAR))
				first = t;	/* an mbarrier waiter says most */
		}
		if (done == in->nall)
			return 0;
		char what[320];
		describe_wait(in, first, what, sizeof(what));
		if (warp && !mb && !bar && !wg)
			return ierr(in, NULL, "deadlock: part of a warp waits at a collective (%s)", what);
		return ierr(in, NULL, "deadlock: %s; %d threads wait on mbarriers, %d at barriers, %d at warp "
			    "and %d at warpgroup collectives, %d exited", what, mb, bar, warp, wg, done);
	}
}

/* The byte address of every shared variable in a CTA's shared memory (the dynamic
 * segment at 0, the static arrays after it at their alignment); the total in *bytes. */
static void layout_shared(const tinyc_gkernel *k, int64_t *off, int64_t *bytes)
{
	int64_t end = k->dyn_smem > 0 ? k->dyn_smem : 0;
	for (int v = 0; v < k->nvar; v++) {
		const tinyc_gvar *x = &k->vars[v];
		if (x->kind != TINYC_GV_SHARED)
			continue;
		int64_t sz = x->count * tinyc_dtype_size(x->dtype);
		if (x->dynamic) {
			off[v] = x->offset;
			end = x->offset + sz > end ? x->offset + sz : end;
		}
	}
	for (int v = 0; v < k->nvar; v++) {
		const tinyc_gvar *x = &k->vars[v];
		if (x->kind != TINYC_GV_SHARED || x->dynamic)
			continue;
		int64_t al = x->align > tinyc_dtype_size(x->dtype) ? x->align : tinyc_dtype_size(x->dtype);
		end = (end + al - 1) / al * al;
		off[v] = end;
		end += x->count * tinyc_dtype_size(x->dtype);
	}
	*bytes = end > 0 ? end : 1;
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
	in.ncta = k->cluster_x > 1 ? k->cluster_x : 1;
	if (in.grid[0] % in.ncta)
		return tinyc_error(ctx, "GpuInterpError", "kernel %s: grid x extent %" PRId64 " is not a "
				   "multiple of its cluster's %d CTAs", k->name, in.grid[0], in.ncta);
	if (in.grid[0] <= 0 || in.grid[1] <= 0 || in.grid[2] <= 0)
		return 0;	/* an empty launch */
	in.nth = k->block[0] * k->block[1] * k->block[2];
	in.nall = in.nth * in.ncta;
	int nv = k->nvar;
	in.th = calloc((size_t)in.nall, sizeof(*in.th));
	in.ctas = calloc((size_t)in.ncta, sizeof(*in.ctas));
	in.sm_off = calloc((size_t)nv + 1, sizeof(*in.sm_off));
	if (!in.th || !in.ctas || !in.sm_off)
		goto oom;
	layout_shared(k, in.sm_off, &in.sm_bytes);
	for (int r = 0; r < in.ncta; r++) {
		cta *c = &in.ctas[r];
		c->nwg = (in.nth + 127) / 128;
		if (!(c->sm = calloc((size_t)in.sm_bytes, 1)) || !(c->wg = calloc((size_t)c->nwg, sizeof(*c->wg))))
			goto oom;
	}
	for (int i = 0; i < in.nall; i++) {
		ithread *t = &in.th[i];
		int li = i % in.nth;
		t->cta = i / in.nth;
		t->linear = li;
		t->tid[0] = li % k->block[0];
		t->tid[1] = (li / k->block[0]) % k->block[1];
		t->tid[2] = li / (k->block[0] * k->block[1]);
		t->reg = calloc((size_t)nv + 1, sizeof(ival));
		t->init = calloc((size_t)nv + 1, 1);
		t->touched = calloc((size_t)nv + 1, 1);
		t->arr = calloc((size_t)nv + 1, sizeof(*t->arr));
		t->arr_init = calloc((size_t)nv + 1, sizeof(*t->arr_init));
		if (!t->reg || !t->init || !t->touched || !t->arr || !t->arr_init)
			goto oom;
	}
	int rc = 0;
	for (int64_t z = 0; z < in.grid[2] && rc == 0; z++)
		for (int64_t y = 0; y < in.grid[1] && rc == 0; y++)
			for (int64_t x = 0; x < in.grid[0] && rc == 0; x += in.ncta) {
				for (int r = 0; r < in.ncta; r++) {
					in.ctas[r].bid[0] = (int)(x + r);
					in.ctas[r].bid[1] = (int)y, in.ctas[r].bid[2] = (int)z;
				}
				rc = run_cluster(&in);
			}
	free_threads(&in);
	free(in.sm_off);
	return rc;
oom:
	free_threads(&in);
	free(in.sm_off);
	return tinyc_error(ctx, "OutOfMemory", "GPU IR interpreter");
}
