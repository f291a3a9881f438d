/* Rearrange (seed 003): the planner, the host simulation of its kernels, the descriptor
 * validation, and the generated CUDA.
 *
 * The oracle is a naive strided copy written here (one element at a time over the original,
 * unmerged shape), independent of the planner.  Destination buffers start as a sentinel
 * pattern: every byte the copy must not touch (gaps, padding, guard bands) must still hold
 * it afterwards, and every source byte differs from it, so a missed store shows. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/codegen.h"
#include "runtime/runtime.h"
#include "sched/rearrange.h"
#include "driver/rearrange_desc.h"

#define SENTINEL 0xA5
#define GUARD 64		/* bytes of guard band on each side of a buffer */

/* ------------------------------------------------------------------ helpers ---- */

/* xorshift64*: the property test's fixed-seed generator. */
static uint64_t rng_state;

/* Next value of the generator. */
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [0, n). */
static int64_t rn(int64_t n)
{
	return (int64_t)(rnd() % (uint64_t)n);
}

/* A host buffer holding one layout, with guard bands, element 0 placed at an address
 * aligned to exactly `align` bytes. */
typedef struct tbuf {
	unsigned char *mem;	/* the allocation */
	size_t size;		/* its bytes */
	tinyc_rearrange_buffer b;	/* element 0 and the valid byte range */
} tbuf;

/* Byte range [lo, hi) that a layout touches relative to element 0. */
static void extent(int ndim, const int64_t *shape, const int64_t *st, int e, int64_t *lo,
		   int64_t *hi)
{
	*lo = 0;
	*hi = e;
	for (int i = 0; i < ndim; i++) {
		if (shape[i] == 0) {
			*lo = *hi = 0;
			return;
		}
		int64_t r = (shape[i] - 1) * st[i] * e;
		if (r < 0)
			*lo += r;
		else
			*hi += r;
	}
}

/* Allocate a buffer for a layout: guard bands, element 0 at exactly `align` alignment,
 * filled with random bytes other than the sentinel (a source) or with the sentinel. */
static void tbuf_alloc(tbuf *t, int ndim, const int64_t *shape, const int64_t *st, int e,
		       int align, int fill_random)
{
	int64_t lo, hi;
	extent(ndim, shape, st, e, &lo, &hi);
	size_t span = (size_t)(hi - lo);
	t->size = span + 2 * GUARD + 2 * 512;
	t->size = (t->size + 511) / 512 * 512;
	t->mem = aligned_alloc(512, t->size);
	cr_assert(t->mem, "cannot allocate %zu bytes", t->size);
	int64_t pos = GUARD - lo;
	int64_t mod = align >= 256 ? 256 : 2 * align, want = align >= 256 ? 0 : align;
	while (pos % mod != want)
		pos++;
	t->b.base = t->mem + pos;
	t->b.lo = lo;
	t->b.hi = hi;
	if (fill_random) {
		for (size_t i = 0; i < t->size; i++) {
			unsigned char c = (unsigned char)rnd();
			t->mem[i] = c == SENTINEL ? 0x5A : c;
		}
	} else {
		memset(t->mem, SENTINEL, t->size);
	}
}

/* The oracle: y[i] = x[i] for every multi-index i, one element (e bytes) at a time. */
static void naive_copy(int ndim, const int64_t *shape, const int64_t *ys, const int64_t *xs,
		       int e, unsigned char *y, const unsigned char *x)
{
	int64_t idx[TINYC_REARRANGE_MAX_NDIM] = {0};
	for (int i = 0; i < ndim; i++)
		if (shape[i] == 0)
			return;
	for (;;) {
		int64_t yo = 0, xo = 0;
		for (int i = 0; i < ndim; i++) {
			yo += idx[i] * ys[i];
			xo += idx[i] * xs[i];
		}
		memcpy(y + yo * e, x + xo * e, (size_t)e);
		int k = ndim - 1;
		while (k >= 0 && ++idx[k] == shape[k])
			idx[k--] = 0;
		if (k < 0)
			return;
	}
}

/* Row-major strides. */
static void contiguous(int ndim, const int64_t *shape, int64_t *st)
{
	int64_t s = 1;
	for (int i = ndim - 1; i >= 0; i--) {
		st[i] = s;
		s *= shape[i] > 1 ? shape[i] : 1;
	}
}

/* The dtype of an element size. */
static tinyc_dtype dtype_of(int e)
{
	switch (e) {
	case 1: return TINYC_UCHAR;
	case 2: return TINYC_HALF;
	case 4: return TINYC_FLOAT;
	default: return TINYC_DOUBLE;
	}
}

/* The plan's dump, for failure messages (static buffer). */
static const char *dump(const tinyc_rearrange_plan *p)
{
	static char text[4096];
	tinyc_buf b = {0};
	tinyc_rearrange_plan_print(p, &b);
	snprintf(text, sizeof(text), "%s", b.data ? b.data : "");
	tinyc_buf_free(&b);
	return text;
}

/* The first diagnostic's kind and message, for failure messages (static buffer). */
static const char *diag0(tinyc_ctx *ctx)
{
	static char text[1024];
	const tinyc_diag *d = tinyc_ctx_diag_count(ctx) ? tinyc_ctx_diag(ctx, 0) : NULL;
	snprintf(text, sizeof(text), "%s: %s", d ? d->kind : "-", d ? d->msg : "no diagnostic");
	return text;
}

/* Plan one layout pair with the given options, run the simulation and the oracle on
 * identical buffers, and compare every byte (gaps and guards included).  Returns the plan
 * kind, or -1 when a forced plan does not apply. */
static int check_case(const char *label, int ndim, const int64_t *shape, const int64_t *ys,
		      const int64_t *xs, int e, int align, const tinyc_rearrange_opts *o,
		      tinyc_rearrange_plan *plan_out)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_tensor_desc y = {dtype_of(e), ndim, shape, ys};
	tinyc_tensor_desc x = {dtype_of(e), ndim, shape, xs};
	tinyc_rearrange_plan plan;
	tinyc_rearrange_status st = tinyc_rearrange_plan_build(ctx, &y, &x, o, &plan);
	if (st == TINYC_REARRANGE_BAD_PARAM && o->force == TINYC_REARRANGE_FORCE_TILED &&
	    !strcmp(tinyc_ctx_diag(ctx, 0)->kind, "RearrangePlanNotApplicable")) {
		tinyc_ctx_free(ctx);
		return -1;
	}
	cr_assert_eq(st, TINYC_REARRANGE_SUCCESS, "%s: plan failed: %s", label, diag0(ctx));
	int a = align >= 32 ? 32 : align;
	cr_assert(plan.align <= a && a % plan.align == 0,
		  "%s: plan needs %d-byte alignment, pointers have %d\n%s", label, plan.align,
		  align, dump(&plan));

	tbuf xb, yref, ysim;
	tbuf_alloc(&xb, ndim, shape, xs, e, align, 1);
	tbuf_alloc(&yref, ndim, shape, ys, e, align, 0);
	tbuf_alloc(&ysim, ndim, shape, ys, e, align, 0);
	naive_copy(ndim, shape, ys, xs, e, yref.b.base, xb.b.base);
	int64_t written = -1;
	int rc = tinyc_rearrange_simulate(ctx, &plan, ysim.b, xb.b, &written);
	cr_assert_eq(rc, 0, "%s: simulation failed: %s\n%s", label, diag0(ctx), dump(&plan));
	cr_assert_eq(written, plan.numel * e, "%s: %lld bytes written, want %lld\n%s", label,
		     (long long)written, (long long)(plan.numel * e), dump(&plan));
	cr_assert(yref.size == ysim.size && !memcmp(yref.mem, ysim.mem, yref.size),
		  "%s: destination differs from the naive copy\n%s", label, dump(&plan));
	free(xb.mem);
	free(yref.mem);
	free(ysim.mem);
	tinyc_ctx_free(ctx);
	if (plan_out)
		*plan_out = plan;
	return plan.kind;
}

/* ------------------------------------------------------------- property test ---- */

/* A random memory order (perm[0] the innermost dim); a quarter of the time row-major. */
static void random_perm(int ndim, int *perm)
{
	for (int i = 0; i < ndim; i++)
		perm[i] = i;
	for (int i = ndim - 1; i > 0; i--) {
		int j = (int)rn(i + 1), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	if (rn(4) == 0)
		for (int i = 0; i < ndim; i++)
			perm[i] = ndim - 1 - i;
}

/* A random layout for shape in memory order perm, with optional gaps between and inside
 * dims; for a source also broadcast (0) strides, or arbitrary overlapping strides; flips
 * when negatives is set. */
static void random_layout(int ndim, const int64_t *shape, const int *perm, int64_t *st,
			  int is_src, int negatives)
{
	if (is_src && rn(10) == 0) {	/* arbitrary, possibly overlapping source */
		for (int i = 0; i < ndim; i++)
			st[i] = rn(7);
		return;
	}
	int64_t cur = rn(5) == 0 ? 1 + rn(3) : 1;	/* innermost gap */
	for (int k = 0; k < ndim; k++) {
		int d = perm[k];
		st[d] = cur;
		cur = cur * (shape[d] > 1 ? shape[d] : 1) + (rn(4) == 0 ? rn(5) : 0);	/* padding */
	}
	for (int i = 0; i < ndim; i++) {
		if (is_src && rn(6) == 0)
			st[i] = 0;	/* broadcast */
		if (negatives && rn(4) == 0)
			st[i] = -st[i];	/* flip */
	}
}

/* A random shape of rank ndim with at most ~6000 elements. */
static void random_shape(int ndim, int64_t *shape)
{
	for (int i = 0; i < ndim; i++)
		shape[i] = 1 + rn(rn(3) == 0 ? 8 : 4);
	if (ndim && rn(3) == 0)
		shape[rn(ndim)] = 1 + rn(70);	/* one long dim */
	if (ndim > 1 && rn(4) == 0)
		shape[rn(ndim)] = 8 * (1 + rn(12));	/* a multiple of 8: wide units, packing */
	if (ndim && rn(50) == 0)
		shape[rn(ndim)] = 0;	/* empty tensor */
	for (;;) {
		int64_t n = 1;
		for (int i = 0; i < ndim; i++)
			n *= shape[i];
		if (n <= 6000)
			break;
		int i = (int)rn(ndim);
		shape[i] = (shape[i] + 1) / 2;
	}
}

Test(rearrange, property_random_layouts)
{
	static const int sizes[] = {1, 2, 4, 8};
	static const int aligns[] = {256, 256, 256, 256, 32, 16, 8, 4, 2, 1};
	static const int threads[] = {1024, 1024, 1024, 256, 128, 64, 32, 7, 2, 1};
	const int ncases = 10000;
	int kinds[4] = {0}, forced_tiled = 0, forced_ew = 0, packed = 0, multiblock = 0, cons = 0;
	int wide = 0;	/* tiled plans with 2 words per thread per row */
	int plans = 0;
	int units[33] = {0}, negs = 0;
	rng_state = 0x9E3779B97F4A7C15ull;
	clock_t t0 = clock();
	for (int c = 0; c < ncases; c++) {
		int ndim = (int)rn(7), e = sizes[rn(4)];
		int align = aligns[rn(10)];
		int negatives = rn(10) == 0;
		int64_t shape[6], xs[6], ys[6];
		random_shape(ndim, shape);
		int pd[6], ps[6];
		random_perm(ndim, pd);
		random_perm(ndim, ps);
		random_layout(ndim, shape, pd, ys, 0, negatives);
		random_layout(ndim, shape, rn(5) < 2 ? pd : ps, xs, 1, negatives);	/* 40%: same order */
		negs += negatives;
		tinyc_rearrange_opts o;
		tinyc_rearrange_opts_default(&o);
		o.base_align = align;
		o.max_threads = threads[rn(10)];
		char label[96];
		for (int f = 0; f < 3; f++) {
			o.force = (tinyc_rearrange_force)f;
			o.tile_repeat = f == 2 ? (int)rn(3) : 0;	/* any, 1 or 2 words per row */
			snprintf(label, sizeof(label), "case %d (rank %d, elem %d, align %d, "
				 "threads %d, force %d)", c, ndim, e, align, o.max_threads, f);
			tinyc_rearrange_plan plan;
			int k = check_case(label, ndim, shape, ys, xs, e, align, &o, &plan);
			if (k < 0)
				continue;
			plans++;
			if (f == 0)
				kinds[k]++;
			if (f == 1 && k == TINYC_REARRANGE_ELEMENTWISE) {
				forced_ew++;
				units[plan.unit]++;
				multiblock += plan.ngrid > 0 && plan.nblock > 0;
				cons += plan.ncons;
			}
			if (f == 2 && k != TINYC_REARRANGE_TILED) {
				/* forcing picks between kernels; copies and empties have none */
				cr_assert(k == TINYC_REARRANGE_COPY || k == TINYC_REARRANGE_EMPTY);
			} else if (f == 2) {
				forced_tiled++;
				packed += plan.pack > 1;
				wide += plan.repeat == 2;
				cr_assert(!o.tile_repeat || plan.repeat == o.tile_repeat);
				cr_assert_eq(plan.tile, 32 * plan.pack * plan.repeat);
				cons += plan.ncons;
			}
		}
	}
	double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
	cr_log_info("property: %d cases, %d plans simulated in %.2f s: auto chose empty %d, copy %d, elementwise %d, "
		    "tiled %d; forced elementwise %d, forced tiled %d (packed %d); constraints %d; "
		    "units 1:%d 2:%d 4:%d 8:%d 16:%d 32:%d; flipped %d; 2 words per row %d", ncases,
		    plans, secs, kinds[0], kinds[1], kinds[2], kinds[3], forced_ew, forced_tiled, packed,
		    cons, units[1], units[2], units[4], units[8], units[16], units[32], negs, wide);
	/* the generator must reach every path, or the test proves less than it says */
	cr_assert(kinds[0] > 0 && kinds[1] > 0 && kinds[2] > 1000 && kinds[3] > 20);
	cr_assert(forced_tiled > 300 && packed > 40 && cons > 300 && multiblock > 300);
	cr_assert(wide > 100, "2 words per row: %d plans", wide);
	for (int u = 1; u <= 32; u *= 2)
		cr_assert(units[u] > 10, "unit %d bytes seen %d times", u, units[u]);
}

/* -------------------------------------------------- failures of the published rule ---- */

/* The seed's unit rule (§5.1 step 1, "distributeUnit"): the largest of {32,...,1} bytes
 * that divides the contiguous innermost run, looking at nothing else. */
static int published_unit(int64_t inner_len, int e)
{
	for (int u = 32; u > 1; u /= 2)
		if ((inner_len * e) % u == 0)
			return u;
	return 1;
}

Test(rearrange, unit_checks_every_stride_2x3x4)
{
	/* x: shape (2,3,4) floats at strides (100,10,1) -> contiguous y.  The innermost run is
	 * 4 floats = 16 bytes, so the published rule picks a 16-byte unit, but row 1 starts at
	 * byte 40: a 16-byte access there is misaligned.  The unit must divide 40. */
	int64_t shape[] = {2, 3, 4}, xs[] = {100, 10, 1}, ys[3];
	contiguous(3, shape, ys);
	cr_assert_eq(published_unit(4, 4), 16);
	cr_assert_neq(40 % 16, 0);
	tinyc_rearrange_opts o;
	tinyc_rearrange_opts_default(&o);
	tinyc_rearrange_plan plan;
	for (int align = 1; align <= 256; align *= 2) {
		o.base_align = align;
		check_case("2x3x4", 3, shape, ys, xs, 4, align, &o, &plan);
		cr_assert_eq(plan.kind, TINYC_REARRANGE_ELEMENTWISE);
		int want = align < 8 ? align : 8;	/* 8 = gcd(16, 40, 400, 48, 16) */
		cr_assert_eq(plan.unit, want, "align %d: unit %d\n%s", align, plan.unit, dump(&plan));
	}
}

Test(rearrange, unit_checks_every_stride_narrowed_int64)
{
	/* x = a[:, 0:2] of a (4,3) int64 array: shape (4,2), strides (3,1) -> contiguous y.
	 * The run of 2 int64 is 16 bytes but rows are 24 bytes apart: unit 8, not 16. */
	int64_t shape[] = {4, 2}, xs[] = {3, 1}, ys[2];
	contiguous(2, shape, ys);
	cr_assert_eq(published_unit(2, 8), 16);
	tinyc_rearrange_opts o;
	tinyc_rearrange_opts_default(&o);
	tinyc_rearrange_plan plan;
	check_case("4x2 narrowed", 2, shape, ys, xs, 8, 256, &o, &plan);
	cr_assert_eq(plan.unit, 8, "%s", dump(&plan));
}

Test(rearrange, case_8x4x20x64)
{
	/* shape (8,4,20,64), x strides (5120,64,256,1): a permuted source that the published
	 * planner gets wrong.  Every thread cap forces a different split and constraint. */
	int64_t shape[] = {8, 4, 20, 64}, xs[] = {5120, 64, 256, 1}, yc[4];
	int64_t yg[] = {1048576, 262144, 64, 1};
	contiguous(4, shape, yc);
	static const int caps[] = {1024, 512, 256, 160, 100, 33, 7};
	int saw_cons = 0;
	for (int e = 2; e <= 4; e += 2)
		for (int ci = 0; ci < 7; ci++)
			for (int f = 0; f < 3; f++)
				for (int which = 0; which < 2; which++) {
					tinyc_rearrange_opts o;
					tinyc_rearrange_opts_default(&o);
					o.max_threads = caps[ci];
					o.force = (tinyc_rearrange_force)f;
					tinyc_rearrange_plan plan;
					char label[64];
					snprintf(label, sizeof(label), "8x4x20x64 e%d cap %d f%d y%d", e,
						 caps[ci], f, which);
					int k = check_case(label, 4, shape, which ? yg : yc, xs, e, 256,
							   &o, &plan);
					if (k == TINYC_REARRANGE_ELEMENTWISE)
						saw_cons += plan.ncons;
				}
	cr_assert(saw_cons > 0, "no cap produced an uneven split");
}

/* --------------------------------------------------------- the GPU case list ---- */

/* A layout pair of the GPU test list (also compiled with nvrtc below). */
typedef struct gpu_case {
	const char *name;		/* kernel name */
	int e;				/* element size */
	int ndim;			/* rank */
	int64_t shape[6];		/* lengths */
	int64_t ys[6];			/* destination strides, {0} = row-major */
	int64_t xs[6];			/* source strides, {0} = row-major */
	tinyc_rearrange_force force;	/* plan selection */
	int sim;			/* also simulate (small enough) */
	int repeat;			/* tiled: words per thread per row (0: any) */
} gpu_case;

static const gpu_case gpu_cases[] = {
	{"t100", 4, 2, {100, 100}, {1, 100}, {0}, TINYC_REARRANGE_AUTO, 1},
	{"t100_ew", 4, 2, {100, 100}, {1, 100}, {0}, TINYC_REARRANGE_FORCE_ELEMENTWISE, 1},
	{"t2000_half", 2, 2, {2000, 2000}, {1, 2000}, {0}, TINYC_REARRANGE_AUTO, 1},
	{"t2001_float", 4, 2, {2001, 2001}, {1, 2001}, {0}, TINYC_REARRANGE_AUTO, 1},
	{"t2001_byte", 1, 2, {2001, 2001}, {1, 2001}, {0}, TINYC_REARRANGE_AUTO, 1},
	{"t2000_byte", 1, 2, {2000, 2000}, {1, 2000}, {0}, TINYC_REARRANGE_AUTO, 1},
	{"p4x6x64", 4, 3, {4, 6, 64}, {0}, {64, 256, 1}, TINYC_REARRANGE_AUTO, 1},
	{"p2x2x2x4", 4, 4, {2, 2, 2, 4}, {16, 8, 1, 2}, {0}, TINYC_REARRANGE_AUTO, 1},
	{"rev5", 4, 5, {3, 4, 7, 53, 9}, {1, 3, 12, 84, 4452}, {0}, TINYC_REARRANGE_AUTO, 1},
	{"rev6_half", 2, 6, {3, 4, 50, 50, 5, 7}, {1, 3, 12, 600, 30000, 150000}, {0},
	 TINYC_REARRANGE_AUTO, 1},
	{"bcast15", 2, 2, {15, 10752}, {0}, {0, 1}, TINYC_REARRANGE_AUTO, 1},
	{"gaps64", 4, 6, {2, 2, 2, 2, 2, 2}, {243, 81, 27, 9, 3, 1}, {100, 40, 16, 8, 4, 2},
	 TINYC_REARRANGE_AUTO, 1},
	{"s8x4x20x64", 4, 4, {8, 4, 20, 64}, {0}, {5120, 64, 256, 1}, TINYC_REARRANGE_AUTO, 1},
	{"s8x4x20x64_gap", 2, 4, {8, 4, 20, 64}, {1048576, 262144, 64, 1}, {5120, 64, 256, 1},
	 TINYC_REARRANGE_AUTO, 1},
	{"u2x3x4", 4, 3, {2, 3, 4}, {0}, {100, 10, 1}, TINYC_REARRANGE_AUTO, 1},
	{"wide64", 4, 2, {4, 8}, {0}, {((int64_t)1 << 31) + 1, 1}, TINYC_REARRANGE_AUTO, 0},
	{"tile64", 8, 3, {3, 70, 40}, {2800, 1, 70}, {((int64_t)1 << 30) + 1, 40, 1},
	 TINYC_REARRANGE_FORCE_TILED, 0},
	/* two words per thread per row (tile edge 64 * pack) */
	{"t100_x2", 4, 2, {100, 100}, {1, 100}, {0}, TINYC_REARRANGE_FORCE_TILED, 1, 2},
	{"t2001_half_x2", 2, 2, {2001, 2001}, {1, 2001}, {0}, TINYC_REARRANGE_FORCE_TILED, 1, 2},
	{"rev6_half_x2", 2, 6, {3, 4, 50, 50, 5, 7}, {1, 3, 12, 600, 30000, 150000}, {0},
	 TINYC_REARRANGE_FORCE_TILED, 1, 2},
	{"nchw_x2", 2, 4, {2, 64, 9, 30}, {17280, 1, 1920, 64}, {0}, TINYC_REARRANGE_FORCE_TILED,
	 1, 2},
	{"tile64_x2", 8, 3, {3, 70, 40}, {2800, 1, 70}, {((int64_t)1 << 30) + 1, 40, 1},
	 TINYC_REARRANGE_FORCE_TILED, 0, 2},
};
#define NGPU (int)(sizeof(gpu_cases) / sizeof(gpu_cases[0]))

/* The strides of a case ({0} means row-major). */
static void case_strides(const gpu_case *g, int64_t *ys, int64_t *xs)
{
	if (g->ys[0] == 0 && g->ys[1] == 0)
		contiguous(g->ndim, g->shape, ys);
	else
		memcpy(ys, g->ys, sizeof(g->ys));
	if (g->xs[0] == 0 && g->xs[1] == 0 && g->xs[g->ndim - 1] == 0)
		contiguous(g->ndim, g->shape, xs);
	else
		memcpy(xs, g->xs, sizeof(g->xs));
}

Test(rearrange, gpu_cases_simulated)
{
	for (int i = 0; i < NGPU; i++) {
		const gpu_case *g = &gpu_cases[i];
		if (!g->sim)
			continue;
		int64_t ys[6], xs[6];
		case_strides(g, ys, xs);
		tinyc_rearrange_opts o;
		tinyc_rearrange_opts_default(&o);
		o.force = g->force;
		o.tile_repeat = g->repeat;
		tinyc_rearrange_plan plan;
		check_case(g->name, g->ndim, g->shape, ys, xs, g->e, 256, &o, &plan);
		cr_assert(!g->repeat || plan.repeat == g->repeat, "%s", dump(&plan));
		cr_log_info("%s -> %s", g->name, dump(&plan));
	}
}

/* The cost model picks the tiled plan for square transposes and shows both costs. */
Test(rearrange, cost_model_choice)
{
	int64_t shape[] = {2000, 2000}, xs[] = {2000, 1}, ys[] = {1, 2000};
	tinyc_tensor_desc y = {TINYC_HALF, 2, shape, ys}, x = {TINYC_HALF, 2, shape, xs};
	tinyc_rearrange_plan p;
	cr_assert_eq(tinyc_rearrange_plan_build(NULL, &y, &x, NULL, &p), TINYC_REARRANGE_SUCCESS);
	cr_assert_eq(p.kind, TINYC_REARRANGE_TILED, "%s", dump(&p));
	cr_assert_eq(p.pack, 2);
	cr_assert_eq(p.tile, 64);
	cr_assert(p.cost_elementwise.valid && p.cost_tiled.valid);
	cr_assert(p.cost_tiled.cost * 2 < p.cost_elementwise.cost, "%s", dump(&p));
	/* an ideal copy of 2000*2000 halves reads and writes 8e6 bytes = 250000 sectors each */
	cr_assert(p.cost_tiled.sectors >= 500000 && p.cost_tiled.sectors < 520000, "%s", dump(&p));

	/* a skinny transpose (2 x 100000): tiles would be 2/64 full; elementwise wins */
	int64_t s2[] = {2, 100000}, x2[] = {100000, 1}, y2[] = {1, 2};
	tinyc_tensor_desc yy = {TINYC_FLOAT, 2, s2, y2}, xx = {TINYC_FLOAT, 2, s2, x2};
	cr_assert_eq(tinyc_rearrange_plan_build(NULL, &yy, &xx, NULL, &p), TINYC_REARRANGE_SUCCESS);
	cr_assert_eq(p.kind, TINYC_REARRANGE_ELEMENTWISE, "%s", dump(&p));
	cr_assert(p.cost_tiled.valid && p.cost_tiled.cost > p.cost_elementwise.cost);

	/* same innermost dim in both: no tiled candidate */
	int64_t s3[] = {4, 6, 64}, x3[] = {64, 256, 1}, y3[] = {384, 64, 1};
	tinyc_tensor_desc y3d = {TINYC_FLOAT, 3, s3, y3}, x3d = {TINYC_FLOAT, 3, s3, x3};
	cr_assert_eq(tinyc_rearrange_plan_build(NULL, &y3d, &x3d, NULL, &p), 0);
	cr_assert_eq(p.kind, TINYC_REARRANGE_ELEMENTWISE);
	cr_assert(!p.cost_tiled.valid);
	cr_assert_eq(p.unit, 32, "%s", dump(&p));	/* 64 floats contiguous, strides 256 B */
}

/* The dump of a small plan, checked line by line against values worked out by hand. */
Test(rearrange, dump_text)
{
	/* (100,100) float transpose: A = dim 0 (dst 1, src 100), B = dim 1 (src 1, dst 100);
	 * 32x32 tiles: 4 x 4 blocks, 100 = 3*32 + 4 so both edges are constrained. */
	int64_t shape[] = {100, 100}, xs[] = {100, 1}, ys[] = {1, 100};
	tinyc_tensor_desc y = {TINYC_FLOAT, 2, shape, ys}, x = {TINYC_FLOAT, 2, shape, xs};
	tinyc_rearrange_plan p;
	cr_assert_eq(tinyc_rearrange_plan_build(NULL, &y, &x, NULL, &p), 0);
	tinyc_buf b = {0};
	tinyc_rearrange_plan_print(&p, &b);
	const char *want[] = {
		"rearrange float: 10000 elements of 4 bytes (max_threads 1024, base_align 256)\n",
		"  dims (elements, fastest first): [100 src 100 dst 1] [100 src 1 dst 100]\n",
		"  plan tiled: tile 32x32 (smem 32x33), pack 1, align 4, 32-bit index\n",
		"    block 32x8 threads, 4 rows each\n",
		"    rows (A, dst-contiguous, 100): [100 src 100 dst 1]\n",
		"    columns (B, src-contiguous, 100): [100 src 1 dst 100]\n",
		"    grid 16 blocks: [4 src 0 dst 0] [4 src 0 dst 0]\n",
		"    constraint: grid[0] * 32 + row < 100\n",
		"    constraint: grid[1] * 32 + column < 100\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert(strstr(b.data, want[i]), "missing line %zu: %s\nin:\n%s", i, want[i], b.data);
	/* deterministic */
	tinyc_buf b2 = {0};
	tinyc_rearrange_plan_print(&p, &b2);
	cr_assert_str_eq(b.data, b2.data);
	tinyc_buf_free(&b);
	tinyc_buf_free(&b2);

	/* the elementwise candidate of the same problem, forced: unit 4 (no run longer than
	 * one float is contiguous in both), dim 0 taken first (dst order), then dim 1, next in
	 * both orders, split 10 per block -> 1000 threads, 10 blocks, an even split */
	tinyc_rearrange_opts o;
	tinyc_rearrange_opts_default(&o);
	o.force = TINYC_REARRANGE_FORCE_ELEMENTWISE;
	cr_assert_eq(tinyc_rearrange_plan_build(NULL, &y, &x, &o, &p), 0);
	tinyc_buf b3 = {0};
	tinyc_rearrange_plan_print(&p, &b3);
	cr_assert(strstr(b3.data, "  plan elementwise: unit 4 bytes, align 4, 32-bit index\n"
				  "    block 1000 threads: [100 src 100 dst 1] [10 src 1 dst 100]\n"
				  "    grid 10 blocks: [10 src 10 dst 1000]\n"), "%s", b3.data);
	cr_assert(!strstr(b3.data, "constraint"), "%s", b3.data);
	tinyc_buf_free(&b3);
}

/* Scalars, contiguous copies (forwards and reversed) and empty tensors launch no kernel. */
Test(rearrange, copy_and_empty)
{
	tinyc_rearrange_opts o;
	tinyc_rearrange_opts_default(&o);
	tinyc_rearrange_plan p;
	int64_t none[1] = {0};
	cr_assert_eq(check_case("scalar", 0, none, none, none, 8, 256, &o, &p),
		     TINYC_REARRANGE_COPY);
	cr_assert_eq(p.copy_bytes, 8);
	int64_t shape[] = {3, 1, 5}, st[3];
	contiguous(3, shape, st);
	cr_assert_eq(check_case("contig", 3, shape, st, st, 2, 256, &o, &p), TINYC_REARRANGE_COPY);
	cr_assert_eq(p.copy_bytes, 30);
	int64_t rs[] = {-5, 7, -1};	/* both reversed: still one run, starting 14 elements back */
	cr_assert_eq(check_case("reversed", 3, shape, rs, rs, 2, 256, &o, &p), TINYC_REARRANGE_COPY);
	cr_assert_eq(p.copy_offset, -28);
	int64_t zs[] = {3, 0, 5};
	cr_assert_eq(check_case("empty", 3, zs, st, st, 4, 256, &o, &p), TINYC_REARRANGE_EMPTY);
	tinyc_rearrange_desc *d = NULL;
	tinyc_tensor_desc y = {TINYC_HALF, 0, NULL, NULL};
	cr_assert_eq(tinyc_rearrange_create(NULL, &d, &y, &y), TINYC_REARRANGE_SUCCESS);
	cr_assert_eq(tinyc_rearrange_desc_plan(d)->kind, TINYC_REARRANGE_COPY);
	tinyc_rearrange_destroy(d);
}

/* ---------------------------------------------------------------- validation ---- */

/* create() with y and x; returns the status and the first diagnostic's kind in *kind. */
static tinyc_rearrange_status try_create(const tinyc_tensor_desc *y, const tinyc_tensor_desc *x,
					 char *kind, size_t n)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_rearrange_desc *d = (tinyc_rearrange_desc *)1;
	tinyc_rearrange_status st = tinyc_rearrange_create(ctx, &d, y, x);
	snprintf(kind, n, "%s", tinyc_ctx_diag_count(ctx) ? tinyc_ctx_diag(ctx, 0)->kind : "");
	if (st == TINYC_REARRANGE_SUCCESS) {
		cr_assert(d && d != (tinyc_rearrange_desc *)1);
		cr_assert_eq(tinyc_ctx_diag_count(ctx), 0);
		tinyc_rearrange_destroy(d);
	} else {
		cr_assert_null(d, "a failed create must leave *desc NULL");
		cr_assert_eq(tinyc_ctx_error_count(ctx), 1, "one diagnostic per failure");
	}
	tinyc_ctx_free(ctx);
	return st;
}

Test(rearrange, descriptor_validation)
{
	char kind[64];
	int64_t s23[] = {2, 3}, s32[] = {3, 2}, s3[] = {3}, neg[] = {2, -3};
	int64_t big[TINYC_REARRANGE_MAX_NDIM + 1];
	for (int i = 0; i <= TINYC_REARRANGE_MAX_NDIM; i++)
		big[i] = 1;
	tinyc_tensor_desc f23 = {TINYC_FLOAT, 2, s23, NULL};
	tinyc_tensor_desc h23 = {TINYC_HALF, 2, s23, NULL};
	tinyc_tensor_desc f32 = {TINYC_FLOAT, 2, s32, NULL};
	tinyc_tensor_desc f3 = {TINYC_FLOAT, 1, s3, NULL};

	cr_assert_eq(try_create(&f23, &f23, kind, sizeof(kind)), TINYC_REARRANGE_SUCCESS);
	cr_assert_eq(try_create(&f23, &h23, kind, sizeof(kind)), TINYC_REARRANGE_BAD_DTYPE);
	cr_assert_str_eq(kind, "RearrangeDtypeMismatch");
	tinyc_tensor_desc bad_dt = {(tinyc_dtype)99, 2, s23, NULL};
	cr_assert_eq(try_create(&bad_dt, &bad_dt, kind, sizeof(kind)), TINYC_REARRANGE_BAD_DTYPE);
	cr_assert_str_eq(kind, "RearrangeBadDtype");
	cr_assert_eq(try_create(&f23, &f32, kind, sizeof(kind)), TINYC_REARRANGE_BAD_SHAPE);
	cr_assert_str_eq(kind, "RearrangeShapeMismatch");
	cr_assert_eq(try_create(&f23, &f3, kind, sizeof(kind)), TINYC_REARRANGE_BAD_SHAPE);
	cr_assert_str_eq(kind, "RearrangeShapeMismatch");
	tinyc_tensor_desc deep = {TINYC_FLOAT, TINYC_REARRANGE_MAX_NDIM + 1, big, NULL};
	cr_assert_eq(try_create(&deep, &deep, kind, sizeof(kind)), TINYC_REARRANGE_BAD_PARAM);
	cr_assert_str_eq(kind, "RearrangeBadRank");
	tinyc_tensor_desc maxd = {TINYC_FLOAT, TINYC_REARRANGE_MAX_NDIM, big, NULL};
	cr_assert_eq(try_create(&maxd, &maxd, kind, sizeof(kind)), TINYC_REARRANGE_SUCCESS);
	tinyc_tensor_desc negd = {TINYC_FLOAT, 2, neg, NULL};
	cr_assert_eq(try_create(&negd, &negd, kind, sizeof(kind)), TINYC_REARRANGE_BAD_PARAM);
	cr_assert_str_eq(kind, "RearrangeBadShape");
	cr_assert_eq(try_create(NULL, &f23, kind, sizeof(kind)), TINYC_REARRANGE_BAD_PARAM);
	cr_assert_str_eq(kind, "RearrangeBadParam");
	tinyc_tensor_desc noshape = {TINYC_FLOAT, 2, NULL, NULL};
	cr_assert_eq(try_create(&noshape, &noshape, kind, sizeof(kind)), TINYC_REARRANGE_BAD_PARAM);

	/* destinations whose elements share memory; the same strides are fine for a source */
	int64_t zero[] = {0, 1}, alias[] = {2, 1}, ok[] = {6, 2}, flip[] = {-3, 1};
	/* shape (3,2) at strides (2,3): offsets {0,2,4} + {0,3} are distinct but interleaved;
	 * the planner's non-overlap rule is sufficient, not necessary, and rejects it */
	int64_t inter[] = {2, 3};
	const int64_t *dsts[] = {zero, alias, inter};
	for (int i = 0; i < 3; i++) {
		const int64_t *shp = i == 2 ? s32 : s23;
		tinyc_tensor_desc yd = {TINYC_FLOAT, 2, shp, dsts[i]};
		tinyc_tensor_desc xc = {TINYC_FLOAT, 2, shp, NULL};
		cr_assert_eq(try_create(&yd, &xc, kind, sizeof(kind)), TINYC_REARRANGE_BAD_PARAM,
			     "dst %d", i);
		cr_assert_str_eq(kind, "RearrangeDestinationOverlap");
		cr_assert_eq(try_create(&xc, &yd, kind, sizeof(kind)), TINYC_REARRANGE_SUCCESS,
			     "src %d", i);
	}
	tinyc_tensor_desc gap = {TINYC_FLOAT, 2, s23, ok}, fl = {TINYC_FLOAT, 2, s23, flip};
	cr_assert_eq(try_create(&gap, &f23, kind, sizeof(kind)), TINYC_REARRANGE_SUCCESS);
	cr_assert_eq(try_create(&fl, &gap, kind, sizeof(kind)), TINYC_REARRANGE_SUCCESS);
	/* a zero stride on a length-1 dim aliases nothing */
	int64_t s13[] = {1, 3}, z13[] = {0, 1};
	tinyc_tensor_desc one = {TINYC_FLOAT, 2, s13, z13}, onec = {TINYC_FLOAT, 2, s13, NULL};
	cr_assert_eq(try_create(&one, &onec, kind, sizeof(kind)), TINYC_REARRANGE_SUCCESS);
	/* sizes beyond 2^60 bytes */
	int64_t huge[] = {(int64_t)1 << 40, (int64_t)1 << 30};
	tinyc_tensor_desc hd = {TINYC_FLOAT, 2, huge, NULL};
	cr_assert_eq(try_create(&hd, &hd, kind, sizeof(kind)), TINYC_REARRANGE_BAD_PARAM);
	cr_assert_str_eq(kind, "RearrangeTooLarge");

	/* every status has its own message */
	for (int a = 0; a <= TINYC_REARRANGE_OUT_OF_MEMORY; a++)
		for (int b = a + 1; b <= TINYC_REARRANGE_OUT_OF_MEMORY; b++)
			cr_assert_str_neq(tinyc_rearrange_status_message(a),
					  tinyc_rearrange_status_message(b));
	cr_assert_str_eq(tinyc_rearrange_status_message(TINYC_REARRANGE_BAD_DTYPE),
			 "dtype mismatch or unknown dtype");
}

/* calculate() checks its arguments before touching a device; an empty tensor needs none. */
Test(rearrange, calculate_arguments)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	int64_t shape[] = {4, 5}, empty[] = {4, 0};
	tinyc_tensor_desc y = {TINYC_FLOAT, 2, shape, NULL}, e = {TINYC_FLOAT, 2, empty, NULL};
	tinyc_rearrange_desc *d;
	cr_assert_eq(tinyc_rearrange_create(ctx, &d, &y, &y), 0);
	cr_assert_eq(tinyc_rearrange_calculate(d, 256, 512, NULL), TINYC_REARRANGE_BAD_PARAM);
	cr_assert_str_eq(tinyc_ctx_diag(ctx, 0)->kind, "RearrangeBadParam");
	cr_assert_eq(tinyc_rearrange_calculate(NULL, 256, 512, NULL), TINYC_REARRANGE_BAD_PARAM);
	tinyc_rearrange_destroy(d);
	cr_assert_eq(tinyc_rearrange_create(ctx, &d, &e, &e), 0);
	cr_assert_eq(tinyc_rearrange_calculate(d, 0, 0, (tinyc_cuda *)&d), TINYC_REARRANGE_SUCCESS,
		     "an empty rearrange launches nothing and touches no device");
	tinyc_rearrange_destroy(d);
	tinyc_ctx_free(ctx);
}

/* Re-planning for less aligned pointers lowers the unit and keeps the copy right. */
Test(rearrange, replan_for_alignment)
{
	int64_t shape[] = {15, 10752}, xs[] = {0, 1}, ys[] = {10752, 1};
	tinyc_tensor_desc y = {TINYC_HALF, 2, shape, ys}, x = {TINYC_HALF, 2, shape, xs};
	tinyc_rearrange_desc *d;
	cr_assert_eq(tinyc_rearrange_create(NULL, &d, &y, &x), 0);
	cr_assert_eq(tinyc_rearrange_desc_plan(d)->unit, 32);
	static const int want[] = {1, 2, 4, 8, 16, 32, 32};
	for (int k = 0; k < 7; k++) {
		const tinyc_rearrange_plan *p = tinyc_rearrange_desc_plan_for(d, 1 << k);
		cr_assert(p);
		cr_assert_eq(p->unit, want[k], "align %d: unit %d", 1 << k, p->unit);
		cr_assert_eq(p->align, want[k]);
	}
	/* odd addresses: still aligned to 1, e.g. 6 -> 2 */
	cr_assert_eq(tinyc_rearrange_desc_plan_for(d, 6)->unit, 2);
	tinyc_rearrange_destroy(d);
}

/* ------------------------------------------------------------ generated CUDA ---- */

/* Every kernel of the GPU case list compiles with nvrtc for sm_80 and sm_90 (one program
 * per architecture holding all of them), and the text folds the plan's constants in. */
Test(rearrange, cuda_compiles_with_nvrtc, .timeout = 300)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_buf src = {0};
	int kinds[4] = {0}, bits64 = 0;
	for (int i = 0; i < NGPU; i++) {
		const gpu_case *g = &gpu_cases[i];
		int64_t ys[6], xs[6];
		case_strides(g, ys, xs);
		tinyc_tensor_desc y = {dtype_of(g->e), g->ndim, g->shape, ys};
		tinyc_tensor_desc x = {dtype_of(g->e), g->ndim, g->shape, xs};
		tinyc_rearrange_opts o;
		tinyc_rearrange_opts_default(&o);
		o.force = g->force;
		o.tile_repeat = g->repeat;
		tinyc_rearrange_plan p;
		cr_assert_eq(tinyc_rearrange_plan_build(ctx, &y, &x, &o, &p), 0, "%s: %s", g->name,
			     diag0(ctx));
		cr_assert_eq(tinyc_rearrange_emit_cuda(ctx, &p, g->name, &src), 0, "%s", diag0(ctx));
		kinds[p.kind]++;
		bits64 += p.index_bits == 64;
	}
	cr_assert(kinds[TINYC_REARRANGE_TILED] >= 4 && kinds[TINYC_REARRANGE_ELEMENTWISE] >= 6);
	cr_assert(bits64 >= 2, "the list must exercise 64-bit indexing");
	/* the (100,100) transpose: constants folded, padded tile */
	cr_assert(strstr(src.data, "__shared__ elem_t tile[32][33];"), "%s", src.data);
	cr_assert(strstr(src.data, "const unsigned int g0 = g % 4u;"));
	cr_assert(strstr(src.data, "__shared__ elem_t tile[64][65];"));	/* packed halves */
	cr_assert(strstr(src.data, "__shared__ elem_t tile[128][129];"));	/* packed bytes */
	cr_assert(strstr(src.data, "typedef tinyc_unit32 unit_t;"));	/* 32-byte unit */
	cr_assert(strstr(src.data, "__shared__ elem_t tile[128][129];\t/* [row: A][column: B]") &&
		  strstr(src.data, "for (int j = 0; j < 2; j++) {"));	/* 2 words per row */
	/* bytes on 2-byte aligned pointers: pairs in 16-bit words (not 32-bit ones) */
	int64_t sq[] = {2000, 2000}, rm[] = {2000, 1}, cm[] = {1, 2000};
	tinyc_tensor_desc yb = {TINYC_UCHAR, 2, sq, cm}, xb = {TINYC_UCHAR, 2, sq, rm};
	tinyc_rearrange_opts o2;
	tinyc_rearrange_opts_default(&o2);
	o2.base_align = 2;
	tinyc_rearrange_plan bp;
	cr_assert_eq(tinyc_rearrange_plan_build(ctx, &yb, &xb, &o2, &bp), 0);
	cr_assert(bp.kind == TINYC_REARRANGE_TILED && bp.pack == 2 && bp.align == 2, "%s", dump(&bp));
	tinyc_buf bt = {0};
	cr_assert_eq(tinyc_rearrange_emit_cuda(ctx, &bp, "t2000_byte_align2", &bt), 0);
	cr_assert(strstr(bt.data, "typedef unsigned short word_t;"), "%s", bt.data);
	tinyc_buf_puts(&src, bt.data);
	tinyc_buf_free(&bt);
	/* no kernel for a copy plan */
	int64_t one[] = {4};
	tinyc_tensor_desc c = {TINYC_FLOAT, 1, one, NULL};
	tinyc_rearrange_plan cp;
	cr_assert_eq(tinyc_rearrange_plan_build(ctx, &c, &c, NULL, &cp), 0);
	tinyc_buf junk = {0};
	cr_assert_eq(tinyc_rearrange_emit_cuda(ctx, &cp, "k", &junk), -1);
	tinyc_buf_free(&junk);
	tinyc_ctx_clear_diags(ctx);

	static const char *const archs[] = {"sm_80", "sm_90"};
	for (int a = 0; a < 2; a++) {
		tinyc_blob blob;
		int rc = tinyc_nvrtc_compile(ctx, src.data, "rearrange.cu", archs[a], 1, &blob);
		if (rc) {
			tinyc_buf diags = {0};
			for (int i = 0; i < tinyc_ctx_diag_count(ctx); i++)
				tinyc_buf_printf(&diags, "%s: %s\n", tinyc_ctx_diag(ctx, i)->kind,
						 tinyc_ctx_diag(ctx, i)->msg);
			cr_assert_fail("nvrtc %s failed:\n%s", archs[a], diags.data);
		}
		cr_assert(blob.is_cubin && blob.size > 1000);
		cr_log_info("%s: %d kernels, %zu-byte cubin in %.0f ms", archs[a], NGPU + 1, blob.size,
			    blob.compile_ms);
		tinyc_blob_clear(&blob);
	}
	tinyc_buf_free(&src);
	tinyc_ctx_free(ctx);
}
