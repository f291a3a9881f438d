/* The rearrange planner (seed 003 §5.1): validation of the two layouts, the canonical
 * problem, the elementwise block/grid plan, the tiled transpose plan, the cost model that
 * chooses between them, the plan dump, and the descriptor API. */
#include "sched/rearrange.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Cost-model weights, in sector-equivalents (one 32-byte sector moved = 1). */
#define COST_INSTR 1.0		/* issuing one warp-level global memory instruction */
#define COST_SMEM 0.5		/* one warp-level shared memory instruction */
#define COST_BLOCK 8.0		/* launching a block and computing its grid offsets */
#define COST_SYNC 8.0		/* one __syncthreads of the tiled plan */

#define MAX_GRID_BLOCKS INT32_MAX	/* gridDim.x limit: the plans use a 1-D grid */
#define MAX_TILE_BYTES (48 * 1024)	/* static shared memory of one tile */
#define WIDE_TILE_MIN_BLOCKS 2048	/* a repeat-2 tile trades 4x fewer blocks for 4x the
					 * bytes in flight per thread: only worth it while every
					 * SM of a large GPU (132 x 8 resident blocks) stays busy */

static const char *const status_messages[] = {
	[TINYC_REARRANGE_SUCCESS] = "success",
	[TINYC_REARRANGE_BAD_DTYPE] = "dtype mismatch or unknown dtype",
	[TINYC_REARRANGE_BAD_SHAPE] = "shape mismatch between x and y",
	[TINYC_REARRANGE_BAD_PARAM] = "bad parameter",
	[TINYC_REARRANGE_DEVICE_ERROR] = "device error",
	[TINYC_REARRANGE_OUT_OF_MEMORY] = "out of memory",
};

/* Message for a status code. */
const char *tinyc_rearrange_status_message(tinyc_rearrange_status st)
{
	if ((int)st < 0 || (size_t)st >= sizeof(status_messages) / sizeof(status_messages[0]))
		return "unknown status";
	return status_messages[st];
}

/* Name of a plan kind. */
const char *tinyc_rearrange_kind_name(tinyc_rearrange_kind k)
{
	switch (k) {
	case TINYC_REARRANGE_EMPTY: return "empty";
	case TINYC_REARRANGE_COPY: return "copy";
	case TINYC_REARRANGE_ELEMENTWISE: return "elementwise";
	case TINYC_REARRANGE_TILED: return "tiled";
	}
	return "?";
}

/* Default planner options. */
void tinyc_rearrange_opts_default(tinyc_rearrange_opts *o)
{
	o->max_threads = 1024;
	o->base_align = 256;
	o->force = TINYC_REARRANGE_AUTO;
	o->tile_repeat = 0;
	o->no_copy = 0;
}

tinyc_rearrange_status tinyc_rearrange_fail(tinyc_ctx *ctx, tinyc_rearrange_status st,
					    const char *kind, const char *fmt, ...)
{
	if (ctx) {
		va_list ap;
		va_start(ap, fmt);
		tinyc_verror_at(ctx, NULL, (tinyc_loc){0, 0}, kind, fmt, ap);
		va_end(ap);
	}
	return st;
}

/* |v| (v > INT64_MIN). */
static int64_t abs64(int64_t v)
{
	return v < 0 ? -v : v;
}

/* Floor of a / b for b > 0. */
static int64_t floordiv(int64_t a, int64_t b)
{
	return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Ceiling of a / b for a >= 0, b > 0. */
static int64_t ceildiv(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

/* Largest power of two dividing v (v >= 1), capped at TINYC_REARRANGE_MAX_UNIT. */
static int pow2_part(int64_t v)
{
	int64_t p = v & -v;
	return p > TINYC_REARRANGE_MAX_UNIT ? TINYC_REARRANGE_MAX_UNIT : (int)p;
}

/* Write a shape as "[a,b,c]" into b. */
static void print_list(tinyc_buf *b, int n, const int64_t *v)
{
	tinyc_buf_putc(b, '[');
	for (int i = 0; i < n; i++)
		tinyc_buf_printf(b, "%s%lld", i ? "," : "", (long long)v[i]);
	tinyc_buf_putc(b, ']');
}

/* ---------------------------------------------------------------- validation ---- */

/* The layouts after validation: shared lengths and both stride lists in elements. */
typedef struct layout {
	int ndim;				/* rank */
	int elem;				/* element size, bytes */
	int64_t numel;				/* product of the lengths */
	int64_t len[TINYC_REARRANGE_MAX_NDIM];	/* lengths */
	int64_t xs[TINYC_REARRANGE_MAX_NDIM];	/* source strides, elements */
	int64_t ys[TINYC_REARRANGE_MAX_NDIM];	/* destination strides, elements */
} layout;

/* Check one descriptor on its own. */
static tinyc_rearrange_status check_desc(tinyc_ctx *ctx, const tinyc_tensor_desc *t,
					 const char *which)
{
	if (!t)
		return tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_PARAM, "RearrangeBadParam",
			    "the %s descriptor is NULL", which);
	if ((int)t->dtype < 0 || t->dtype >= TINYC_DTYPE_COUNT)
		return tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_DTYPE, "RearrangeBadDtype",
			    "%s has an unknown dtype (%d)", which, (int)t->dtype);
	if (t->ndim < 0 || t->ndim > TINYC_REARRANGE_MAX_NDIM)
		return tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_PARAM, "RearrangeBadRank",
			    "%s has rank %d; a rearrange takes ranks 0 to %d", which, t->ndim,
			    TINYC_REARRANGE_MAX_NDIM);
	if (t->ndim > 0 && !t->shape)
		return tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_PARAM, "RearrangeBadParam",
			    "%s has rank %d but no shape", which, t->ndim);
	for (int i = 0; i < t->ndim; i++)
		if (t->shape[i] < 0)
			return tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_PARAM, "RearrangeBadShape",
				    "%s dim %d has negative length %lld", which, i,
				    (long long)t->shape[i]);
	return TINYC_REARRANGE_SUCCESS;
}

/* Fill st with t's strides (row-major when none are given); -1 on int64 overflow. */
static int effective_strides(const tinyc_tensor_desc *t, int64_t *st)
{
	if (t->strides) {
		memcpy(st, t->strides, sizeof(int64_t) * (size_t)t->ndim);
		return 0;
	}
	int64_t s = 1;
	for (int i = t->ndim - 1; i >= 0; i--) {
		st[i] = s;
		int64_t len = t->shape[i] > 1 ? t->shape[i] : 1;
		if (__builtin_mul_overflow(s, len, &s))
			return -1;
	}
	return 0;
}

/* Largest byte offset reachable from element 0 through |strides|, or -1 on overflow. */
static int64_t reach_bytes(const layout *l, const int64_t *st)
{
	int64_t r = 0, t;
	for (int i = 0; i < l->ndim; i++) {
		if (l->len[i] <= 1)
			continue;
		if (st[i] == INT64_MIN || __builtin_mul_overflow(l->len[i] - 1, abs64(st[i]), &t) ||
		    __builtin_mul_overflow(t, (int64_t)l->elem, &t) || __builtin_add_overflow(r, t, &r))
			return -1;
	}
	if (__builtin_add_overflow(r, (int64_t)l->elem, &r) || r > ((int64_t)1 << 60))
		return -1;
	return r;
}

/* Whether distinct indices of the destination can share memory.  Dims sorted by |stride|
 * must each step past the whole extent of the smaller ones; this accepts every layout built
 * from permutations, padding, slices and flips, and rejects zero strides and interleavings. */
static int dst_overlaps(const layout *l, int *bad_dim)
{
	int idx[TINYC_REARRANGE_MAX_NDIM], n = 0;
	for (int i = 0; i < l->ndim; i++)
		if (l->len[i] > 1)
			idx[n++] = i;
	for (int i = 1; i < n; i++)	/* insertion sort by |stride| */
		for (int j = i; j > 0 && abs64(l->ys[idx[j]]) < abs64(l->ys[idx[j - 1]]); j--) {
			int t = idx[j];
			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
	int64_t extent = 0;	/* largest offset the smaller dims reach, elements */
	for (int k = 0; k < n; k++) {
		int i = idx[k];
		if (abs64(l->ys[i]) <= extent) {
			*bad_dim = i;
			return 1;
		}
		extent += (l->len[i] - 1) * abs64(l->ys[i]);
	}
	return 0;
}

/* Validate y and x (seed §3 create): dtypes, ranks, shapes, strides, destination overlap. */
static tinyc_rearrange_status validate(tinyc_ctx *ctx, const tinyc_tensor_desc *y,
				       const tinyc_tensor_desc *x, layout *l)
{
	tinyc_rearrange_status st;
	if ((st = check_desc(ctx, y, "y")) || (st = check_desc(ctx, x, "x")))
		return st;
	if (y->dtype != x->dtype)
		return tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_DTYPE, "RearrangeDtypeMismatch",
			    "y is %s but x is %s", tinyc_dtype_name(y->dtype),
			    tinyc_dtype_name(x->dtype));
	if (y->ndim != x->ndim)
		return tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_SHAPE, "RearrangeShapeMismatch",
			    "y has rank %d but x has rank %d", y->ndim, x->ndim);
	for (int i = 0; i < y->ndim; i++)
		if (y->shape[i] != x->shape[i]) {
			tinyc_buf ys = {0}, xs = {0};
			print_list(&ys, y->ndim, y->shape);
			print_list(&xs, x->ndim, x->shape);
			st = tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_SHAPE, "RearrangeShapeMismatch",
				  "y has shape %s but x has shape %s (dim %d)",
				  ys.data ? ys.data : "", xs.data ? xs.data : "", i);
			tinyc_buf_free(&ys);
			tinyc_buf_free(&xs);
			return st;
		}
	memset(l, 0, sizeof(*l));
	l->ndim = y->ndim;
	l->elem = tinyc_dtype_size(y->dtype);
	l->numel = 1;
	for (int i = 0; i < l->ndim; i++) {
		l->len[i] = y->shape[i];
		if (__builtin_mul_overflow(l->numel, l->len[i], &l->numel))
			return tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_PARAM, "RearrangeTooLarge",
				    "the element count overflows int64");
	}
	if (effective_strides(y, l->ys) || effective_strides(x, l->xs) ||
	    (l->numel > 0 && (reach_bytes(l, l->ys) < 0 || reach_bytes(l, l->xs) < 0)))
		return tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_PARAM, "RearrangeTooLarge",
			    "a tensor spans more than 2^60 bytes");
	int bad;
	if (l->numel > 0 && dst_overlaps(l, &bad)) {
		tinyc_buf sb = {0}, lb = {0};
		print_list(&sb, l->ndim, l->ys);
		print_list(&lb, l->ndim, l->len);
		st = tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_PARAM, "RearrangeDestinationOverlap",
			  "y's strides %s on shape %s let distinct elements share memory "
			  "(dim %d, stride %lld)", sb.data ? sb.data : "", lb.data ? lb.data : "",
			  bad, (long long)l->ys[bad]);
		tinyc_buf_free(&sb);
		tinyc_buf_free(&lb);
		return st;
	}
	return TINYC_REARRANGE_SUCCESS;
}

/* ----------------------------------------------------------- canonical problem ---- */

/* Sort dims by |dst| (then |src|) ascending and merge neighbours contiguous in both:
 * outer.dst == inner.dst * inner.len and outer.src == inner.src * inner.len.  Dims of
 * length 1 are dropped.  Returns the number of dims left. */
static int canonicalize(tinyc_rearrange_dim *d, int n)
{
	int m = 0;
	for (int i = 0; i < n; i++)
		if (d[i].len != 1)
			d[m++] = d[i];
	n = m;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0; j--) {
			tinyc_rearrange_dim *a = &d[j - 1], *b = &d[j];
			if (abs64(b->dst) > abs64(a->dst) ||
			    (abs64(b->dst) == abs64(a->dst) && abs64(b->src) >= abs64(a->src)))
				break;
			tinyc_rearrange_dim t = *a;
			*a = *b;
			*b = t;
		}
	m = 0;
	for (int i = 0; i < n; i++) {
		if (m > 0) {
			tinyc_rearrange_dim *in = &d[m - 1];
			if (d[i].dst == in->dst * in->len && d[i].src == in->src * in->len) {
				in->len *= d[i].len;
				continue;
			}
		}
		d[m++] = d[i];
	}
	return m;
}

/* Bound on |offset| (in plan units) over every index the kernel computes, padded splits
 * included; sets index_bits. */
static void set_index_bits(tinyc_rearrange_plan *p, int64_t src_extra, int64_t dst_extra)
{
	int64_t bs = src_extra, bd = dst_extra;
	for (int i = 0; i < p->nblock; i++) {
		bs += (p->block[i].len - 1) * abs64(p->block[i].src);
		bd += (p->block[i].len - 1) * abs64(p->block[i].dst);
	}
	for (int i = 0; i < p->ngrid; i++) {
		bs += (p->grid[i].len - 1) * abs64(p->grid[i].src);
		bd += (p->grid[i].len - 1) * abs64(p->grid[i].dst);
	}
	p->index_bits = (bs <= INT32_MAX && bd <= INT32_MAX) ? 32 : 64;
}

/* --------------------------------------------------------------- cost counting ---- */

/* Number of distinct values among n. */
static int count_distinct(int64_t *v, int n)
{
	for (int i = 1; i < n; i++)	/* insertion sort: n <= 64 */
		for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
			int64_t t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	int c = 0;
	for (int i = 0; i < n; i++)
		if (i == 0 || v[i] != v[i - 1])
			c++;
	return c;
}

/* Add the sectors of the byte range [off, off + bytes) to a sector list. */
static int add_sectors(int64_t *sec, int n, int64_t off, int bytes)
{
	for (int64_t s = floordiv(off, 32); s <= floordiv(off + bytes - 1, 32); s++)
		sec[n++] = s;
	return n;
}

/* Sectors and instructions of one elementwise block whose split dim (if any) has outer
 * index `outer` (only matters for the active-thread check). */
static void cost_elementwise_block(const tinyc_rearrange_plan *p, int64_t outer,
				   int64_t *sectors, int64_t *instrs)
{
	int64_t ssec[64], dsec[64];
	int per_unit = p->unit > 16 ? 2 : 1;	/* a 32-byte unit is two 16-byte accesses */
	for (int64_t w = 0; w * 32 < p->threads; w++) {
		int ns = 0, nd = 0;
		for (int64_t t = w * 32; t < w * 32 + 32 && t < p->threads; t++) {
			int64_t r = t, so = 0, dof = 0, idx[TINYC_REARRANGE_PLAN_DIMS] = {0};
			for (int k = 0; k < p->nblock; k++) {
				idx[k] = r % p->block[k].len;
				r /= p->block[k].len;
				so += idx[k] * p->block[k].src;
				dof += idx[k] * p->block[k].dst;
			}
			if (p->ncons && outer * p->cons[0].per_block + idx[p->cons[0].inner] >=
					       p->cons[0].len)
				continue;
			ns = add_sectors(ssec, ns, so * p->unit, p->unit);
			nd = add_sectors(dsec, nd, dof * p->unit, p->unit);
		}
		if (ns == 0)
			continue;
		*sectors += count_distinct(ssec, ns) + count_distinct(dsec, nd);
		*instrs += 2 * per_unit;
	}
}

/* Cost of the elementwise plan: blocks are full except the last outer index of an uneven
 * split, so two representative blocks are counted exactly. */
static void cost_elementwise(const tinyc_rearrange_plan *p, tinyc_rearrange_cost *c)
{
	memset(c, 0, sizeof(*c));
	c->valid = 1;
	c->blocks = p->blocks;
	int64_t s = 0, in = 0;
	if (p->ncons) {
		int64_t n_outer = p->grid[p->cons[0].grid].len;
		int64_t per_outer = p->blocks / n_outer;
		cost_elementwise_block(p, 0, &s, &in);
		c->sectors = s * per_outer * (n_outer - 1);
		c->mem_instrs = in * per_outer * (n_outer - 1);
		s = in = 0;
		cost_elementwise_block(p, n_outer - 1, &s, &in);
		c->sectors += s * per_outer;
		c->mem_instrs += in * per_outer;
	} else {
		cost_elementwise_block(p, 0, &s, &in);
		c->sectors = s * p->blocks;
		c->mem_instrs = in * p->blocks;
	}
	c->cost = (double)c->sectors + COST_INSTR * (double)c->mem_instrs +
		  COST_BLOCK * (double)c->blocks;
}

/* Offset in the source (use_dst 0) or destination (1) of linear index lin of a group
 * (fastest first), by the kernel's decomposition. */
static int64_t group_offset(const tinyc_rearrange_dim *g, int n, int64_t lin, int use_dst)
{
	int64_t off = 0;
	for (int k = 0; k < n; k++) {
		int64_t i = k == n - 1 ? lin : lin % g[k].len;
		lin /= g[k].len;
		off += i * (use_dst ? g[k].dst : g[k].src);
	}
	return off;
}

/* Sectors and instructions of the tile starting at (a0, b0) with la valid rows (A) and lb
 * valid columns (B), batch offsets 0. */
static void cost_tile(const tinyc_rearrange_plan *p, int64_t a0, int64_t b0, int64_t la,
		      int64_t lb, tinyc_rearrange_cost *c)
{
	int64_t sec[64];
	int bytes = p->pack * p->elem;
	for (int pass = 0; pass < 2; pass++) {
		int64_t rows = pass ? lb : la, cols = pass ? la : lb;
		for (int64_t r = 0; r < rows; r++) {
			/* load: row a0+r of A at its source offset, columns b0.. contiguous;
			 * store: row b0+r of B at its destination offset, columns a0.. */
			int64_t base = pass ? group_offset(p->tile_b, p->ntile_b, b0 + r, 1) + a0
					    : group_offset(p->tile_a, p->ntile_a, a0 + r, 0) + b0;
			for (int j = 0; j < p->repeat; j++) {	/* one warp access per word column */
				int n = 0;
				for (int64_t tx = 0; tx < p->tx && (tx + 32 * j) * p->pack < cols; tx++)
					n = add_sectors(sec, n, (base + (tx + 32 * j) * p->pack) * p->elem,
							bytes);
				if (n == 0)
					continue;
				c->sectors += count_distinct(sec, n);
				c->mem_instrs += 1;
				c->smem_instrs += p->pack;
			}
		}
	}
}

/* Cost of the tiled plan: four classes of tiles (full, or cut by the end of A and/or B),
 * each counted exactly on one representative. */
static void cost_tiled(const tinyc_rearrange_plan *p, tinyc_rearrange_cost *c)
{
	memset(c, 0, sizeof(*c));
	c->valid = 1;
	c->blocks = p->blocks;
	int64_t T = p->tile, nA = p->grid[0].len, nB = p->grid[1].len;
	int64_t batch = p->blocks / (nA * nB);
	int64_t ra = p->len_a % T, rb = p->len_b % T;
	struct { int64_t a0, b0, la, lb, count; } cls[4] = {
		{0, 0, T, T, (nA - (ra != 0)) * (nB - (rb != 0))},
		{(nA - 1) * T, 0, ra, T, ra ? nB - (rb != 0) : 0},
		{0, (nB - 1) * T, T, rb, rb ? nA - (ra != 0) : 0},
		{(nA - 1) * T, (nB - 1) * T, ra, rb, (ra && rb) ? 1 : 0},
	};
	for (int k = 0; k < 4; k++) {
		if (cls[k].count == 0)
			continue;
		tinyc_rearrange_cost one = {0};
		cost_tile(p, cls[k].a0, cls[k].b0, cls[k].la, cls[k].lb, &one);
		int64_t m = cls[k].count * batch;
		c->sectors += one.sectors * m;
		c->mem_instrs += one.mem_instrs * m;
		c->smem_instrs += one.smem_instrs * m;
	}
	c->cost = (double)c->sectors + COST_INSTR * (double)c->mem_instrs +
		  COST_SMEM * (double)c->smem_instrs + (COST_BLOCK + COST_SYNC) * (double)c->blocks;
}

/* ------------------------------------------------------------ elementwise plan ---- */

/* Split length len so that at most cap iterations go into the block: as few grid steps as
 * possible, balanced (e.g. 1025 with cap 1024 -> 513 per block, 2 steps). */
static int64_t split_per_block(int64_t len, int64_t cap)
{
	int64_t steps = ceildiv(len, cap);
	return ceildiv(len, steps);
}

/* Build the elementwise plan from the canonical dims: bytes, vector unit, greedy block. */
static tinyc_rearrange_status plan_elementwise(tinyc_ctx *ctx, tinyc_rearrange_plan *p,
					       const tinyc_rearrange_opts *o)
{
	/* the problem in bytes: an innermost dim for the bytes of one element */
	tinyc_rearrange_dim b[TINYC_REARRANGE_MAX_NDIM + 1];
	int n = 0;
	b[n++] = (tinyc_rearrange_dim){p->elem, 1, 1};
	for (int i = 0; i < p->ndim; i++)
		b[n++] = (tinyc_rearrange_dim){p->dim[i].len, p->dim[i].src * p->elem,
					       p->dim[i].dst * p->elem};
	n = canonicalize(b, n);

	/* the unit: divides the run contiguous in both (the dim with both strides 1 byte, if
	 * any: for 1-byte elements there may be none), every other stride, and the base
	 * alignment, so every unit access is aligned */
	int run = -1;
	for (int i = 0; i < n; i++)
		if (b[i].src == 1 && b[i].dst == 1)
			run = i;
	int unit = TINYC_REARRANGE_MAX_UNIT;
	int base = pow2_part(o->base_align);
	for (; unit > 1; unit /= 2) {
		int ok = run >= 0 && b[run].len % unit == 0 && base % unit == 0;
		for (int i = 0; i < n && ok; i++)
			ok = i == run || (b[i].src % unit == 0 && b[i].dst % unit == 0);
		if (ok)
			break;
	}
	for (int i = 0; i < n; i++) {
		if (i == run) {
			b[i].len /= unit;
		} else {
			b[i].src /= unit;
			b[i].dst /= unit;
		}
	}
	if (run >= 0 && b[run].len == 1) {
		memmove(b + run, b + run + 1, sizeof(b[0]) * (size_t)(n - 1 - run));
		n--;
	}
	p->unit = unit;
	p->align = unit;

	/* greedy block fill in destination order (b is sorted by dst) and source order
	 * (by |src|, broadcast dims last: their reads are free) */
	int order_s[TINYC_REARRANGE_MAX_NDIM + 1], taken[TINYC_REARRANGE_MAX_NDIM + 1] = {0};
	for (int i = 0; i < n; i++)
		order_s[i] = i;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0; j--) {
			int64_t a = b[order_s[j - 1]].src, c = b[order_s[j]].src;
			uint64_t ka = a ? (uint64_t)abs64(a) : UINT64_MAX;
			uint64_t kc = c ? (uint64_t)abs64(c) : UINT64_MAX;
			if (ka <= kc)
				break;
			int t = order_s[j];
			order_s[j] = order_s[j - 1];
			order_s[j - 1] = t;
		}
	int64_t prod = 1, cap = o->max_threads;
	int pd = 0, ps = 0, split = -1;
	int64_t per_block = 0;
	p->nblock = 0;
	for (;;) {
		while (pd < n && taken[pd])
			pd++;
		while (ps < n && taken[order_s[ps]])
			ps++;
		if (pd >= n && ps >= n)
			break;
		/* coverage: product of the taken prefix of each order */
		int64_t cov_d = 1, cov_s = 1;
		for (int i = 0; i < pd; i++)
			cov_d *= b[i].len;
		for (int i = 0; i < ps; i++)
			cov_s *= b[order_s[i]].len;
		int cd = pd < n ? pd : -1, cs = ps < n ? order_s[ps] : -1, pick;
		if (cd == cs || cs < 0)
			pick = cd;
		else if (cd < 0)
			pick = cs;
		else
			pick = cov_d <= cov_s ? cd : cs;
		int64_t room = cap / prod;
		if (b[pick].len <= room) {
			p->block[p->nblock++] = b[pick];
			prod *= b[pick].len;
			taken[pick] = 1;
			continue;
		}
		if (room >= 2) {
			per_block = split_per_block(b[pick].len, room);
			p->block[p->nblock++] = (tinyc_rearrange_dim){per_block, b[pick].src,
								      b[pick].dst};
			prod *= per_block;
			split = pick;
			taken[pick] = 1;
		}
		break;
	}
	p->threads = prod;

	/* grid: the outer part of the split dim first, then the rest in dst order */
	p->ngrid = 0;
	p->ncons = 0;
	if (split >= 0) {
		int64_t outer = ceildiv(b[split].len, per_block);
		if (b[split].len % per_block)
			p->cons[p->ncons++] = (tinyc_rearrange_constraint){
				p->ngrid, p->nblock - 1, per_block, b[split].len};
		p->grid[p->ngrid++] = (tinyc_rearrange_dim){outer, b[split].src * per_block,
							    b[split].dst * per_block};
	}
	for (int i = 0; i < n; i++)
		if (!taken[i])
			p->grid[p->ngrid++] = b[i];
	p->blocks = 1;
	for (int i = 0; i < p->ngrid; i++)
		if (__builtin_mul_overflow(p->blocks, p->grid[i].len, &p->blocks) ||
		    p->blocks > MAX_GRID_BLOCKS)
			return tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_PARAM, "RearrangeTooLarge",
				    "the elementwise plan needs more than 2^31-1 blocks");
	set_index_bits(p, 0, 0);
	return TINYC_REARRANGE_SUCCESS;
}

/* ------------------------------------------------------------------ tiled plan ---- */

/* Extend a tile group (a chain of dims contiguous in the destination when use_dst, else in
 * the source) by one dim that belongs to neither group.  Returns 1 if it grew. */
static int chain_step(const tinyc_rearrange_plan *p, int *in_self, const int *in_other,
		      tinyc_rearrange_dim *group, int *ngroup, int64_t *len, int use_dst)
{
	const tinyc_rearrange_dim *last = &group[*ngroup - 1];
	int64_t want = (use_dst ? last->dst : last->src) * last->len;
	for (int j = 0; j < p->ndim; j++)
		if (!in_self[j] && !in_other[j] && (use_dst ? p->dim[j].dst : p->dim[j].src) == want) {
			in_self[j] = 1;
			group[(*ngroup)++] = p->dim[j];
			*len *= p->dim[j].len;
			return 1;
		}
	return 0;
}

/* Build the tiled transpose plan with `repeat` words per thread per tile row, or return 1
 * (with *why) when it does not apply. */
static int plan_tiled(tinyc_rearrange_plan *p, const tinyc_rearrange_opts *o, int repeat,
		      const char **why)
{
	int ah = -1, bh = -1, n = p->ndim;
	for (int i = 0; i < n; i++) {
		if (p->dim[i].dst == 1 && ah < 0)
			ah = i;
		if (p->dim[i].src == 1 && p->dim[i].dst != 1 && bh < 0)
			bh = i;
	}
	if (ah < 0 || bh < 0 || p->dim[ah].src == 1) {
		*why = "the source and the destination have no distinct contiguous dims";
		return 1;
	}
	int base = pow2_part(o->base_align);
	if (base < p->elem) {
		*why = "the base pointers are less aligned than an element";
		return 1;
	}
	if (o->max_threads < 256) {
		*why = "a tile needs 256 threads per block";
		return 1;
	}
	/* group A: a chain of dims contiguous in the destination from ah; group B: a chain
	 * contiguous in the source from bh.  Middle dims can continue both chains (in a full
	 * reversal every dim does), so each chain first grows to one tile (T = 32 elements),
	 * then the shorter one grows first while either can: both tile edges stay filled. */
	int inA[TINYC_REARRANGE_MAX_NDIM] = {0}, inB[TINYC_REARRANGE_MAX_NDIM] = {0};
	p->ntile_a = p->ntile_b = 0;
	p->len_a = p->len_b = 1;
	inA[ah] = inB[bh] = 1;
	p->tile_a[p->ntile_a++] = p->dim[ah];
	p->tile_b[p->ntile_b++] = p->dim[bh];
	p->len_a = p->dim[ah].len;
	p->len_b = p->dim[bh].len;
	while (p->len_a < 32 && chain_step(p, inA, inB, p->tile_a, &p->ntile_a, &p->len_a, 1))
		;
	while (p->len_b < 32 && chain_step(p, inB, inA, p->tile_b, &p->ntile_b, &p->len_b, 0))
		;
	for (;;) {	/* then the shorter group grows first */
		int grew_a = 0, grew_b = 0;
		if (p->len_b < p->len_a)
			grew_b = chain_step(p, inB, inA, p->tile_b, &p->ntile_b, &p->len_b, 0);
		if (!grew_b)
			grew_a = chain_step(p, inA, inB, p->tile_a, &p->ntile_a, &p->len_a, 1);
		if (!grew_a && !grew_b)
			grew_b = chain_step(p, inB, inA, p->tile_b, &p->ntile_b, &p->len_b, 0);
		if (!grew_a && !grew_b)
			break;
	}
	/* pack 8- and 16-bit elements into words of up to 4 bytes (4 bytes, or 2 when the
	 * pointers are only 2-byte aligned) where every access stays aligned:
	 * source offsets outside B and destination offsets outside A step by whole words */
	int pack = 1;
	for (int k = p->elem < 4 ? 4 / p->elem : 1; k > 1; k /= 2) {
		int ok = p->len_a % k == 0 && p->len_b % k == 0 && base >= k * p->elem;
		for (int i = 0; i < n && ok; i++) {
			if (!inB[i] && p->dim[i].src % k)
				ok = 0;
			if (!inA[i] && p->dim[i].dst % k)
				ok = 0;
		}
		if (ok) {
			pack = k;
			break;
		}
	}
	int T = 32 * pack * repeat;
	if ((int64_t)T * (T + 1) * p->elem > MAX_TILE_BYTES) {
		*why = "the tile does not fit 48 KiB of shared memory";
		return 1;
	}
	p->pack = pack;
	p->repeat = repeat;
	p->tile = T;
	p->tile_pad = 1;
	p->tx = 32;
	p->ty = 8;
	p->rows_per_thread = T / p->ty;
	p->threads = p->tx * p->ty;
	p->unit = p->elem;
	p->align = pack * p->elem;
	p->nblock = 0;
	p->ngrid = 0;
	p->ncons = 0;
	/* the tile indices carry no strides: a tile's offsets come from the groups */
	int64_t nA = ceildiv(p->len_a, T), nB = ceildiv(p->len_b, T);
	p->grid[p->ngrid++] = (tinyc_rearrange_dim){nA, 0, 0};
	p->grid[p->ngrid++] = (tinyc_rearrange_dim){nB, 0, 0};
	if (p->len_a % T)
		p->cons[p->ncons++] = (tinyc_rearrange_constraint){0, 0, T, p->len_a};
	if (p->len_b % T)
		p->cons[p->ncons++] = (tinyc_rearrange_constraint){1, 1, T, p->len_b};
	for (int i = 0; i < n; i++)
		if (!inA[i] && !inB[i])
			p->grid[p->ngrid++] = p->dim[i];
	p->blocks = 1;
	for (int i = 0; i < p->ngrid; i++)
		if (__builtin_mul_overflow(p->blocks, p->grid[i].len, &p->blocks) ||
		    p->blocks > MAX_GRID_BLOCKS) {
			*why = "the tiled plan needs more than 2^31-1 blocks";
			return 1;
		}
	/* offsets: source = batch + A's source offset + B index (B is source-contiguous),
	 * destination = batch + B's destination offset + A index */
	int64_t es = nB * T - 1, ed = nA * T - 1;
	for (int k = 0; k < p->ntile_a; k++)
		es += (p->tile_a[k].len - 1) * abs64(p->tile_a[k].src);
	for (int k = 0; k < p->ntile_b; k++)
		ed += (p->tile_b[k].len - 1) * abs64(p->tile_b[k].dst);
	set_index_bits(p, es, ed);
	return 0;
}

/* -------------------------------------------------------------------- planner ---- */

/* Validate, canonicalise, build both candidates, cost them and keep the cheaper. */
tinyc_rearrange_status tinyc_rearrange_plan_build(tinyc_ctx *ctx, const tinyc_tensor_desc *y,
						  const tinyc_tensor_desc *x,
						  const tinyc_rearrange_opts *opts,
						  tinyc_rearrange_plan *plan)
{
	tinyc_rearrange_opts o;
	if (opts)
		o = *opts;
	else
		tinyc_rearrange_opts_default(&o);
	if (!plan)
		return tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_PARAM, "RearrangeBadParam", "plan is NULL");
	if (o.max_threads < 1 || o.base_align < 1)
		return tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_PARAM, "RearrangeBadParam",
			    "max_threads (%d) and base_align (%d) must be positive", o.max_threads,
			    o.base_align);
	layout l;
	tinyc_rearrange_status st = validate(ctx, y, x, &l);
	if (st)
		return st;

	tinyc_rearrange_plan *p = plan;
	memset(p, 0, sizeof(*p));
	p->dtype = y->dtype;
	p->elem = l.elem;
	p->unit = l.elem;
	p->pack = 1;
	p->repeat = 1;
	p->align = 1;
	p->index_bits = 32;
	p->numel = l.numel;
	p->max_threads = o.max_threads;
	p->base_align = o.base_align;
	if (l.numel == 0) {
		p->kind = TINYC_REARRANGE_EMPTY;
		return TINYC_REARRANGE_SUCCESS;
	}
	for (int i = 0; i < l.ndim; i++)
		p->dim[i] = (tinyc_rearrange_dim){l.len[i], l.xs[i], l.ys[i]};
	p->ndim = canonicalize(p->dim, l.ndim);

	/* one contiguous run (forwards or backwards in both), or a single element */
	if (!o.no_copy && (p->ndim == 0 || (p->ndim == 1 && p->dim[0].src == p->dim[0].dst &&
					    abs64(p->dim[0].src) == 1))) {
		p->kind = TINYC_REARRANGE_COPY;
		p->copy_bytes = l.numel * l.elem;
		p->copy_offset = (p->ndim == 1 && p->dim[0].src < 0) ?
					 -(p->dim[0].len - 1) * l.elem : 0;
		return TINYC_REARRANGE_SUCCESS;
	}

	/* the candidates, each costed (the tiled plan with one and two words per thread per
	 * row, unless one is asked for); then the cheaper (or the forced) one */
	if (o.tile_repeat < 0 || o.tile_repeat > 2)
		return tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_PARAM, "RearrangeBadParam",
			    "tile_repeat is %d; it must be 0 (any), 1 or 2", o.tile_repeat);
	tinyc_rearrange_plan ew = *p, tl = *p, tl2 = *p;
	const char *why = NULL, *why2 = NULL;
	int ew_ok = !plan_elementwise(NULL, &ew, &o);
	tinyc_rearrange_cost ce = {0}, ct = {0}, crep[3] = {{0}};
	if (ew_ok)
		cost_elementwise(&ew, &ce);
	int tl_ok = o.tile_repeat != 2 && !plan_tiled(&tl, &o, 1, &why);
	int tl2_ok = o.tile_repeat != 1 && !plan_tiled(&tl2, &o, 2, &why2);
	if (tl2_ok && o.tile_repeat != 2 && tl2.blocks < WIDE_TILE_MIN_BLOCKS)
		tl2_ok = 0;	/* too few blocks to fill the device: not a candidate */
	if (o.tile_repeat == 2)
		why = why2;
	if (tl_ok)
		cost_tiled(&tl, &crep[1]);
	if (tl2_ok)
		cost_tiled(&tl2, &crep[2]);
	if (tl2_ok && (!tl_ok || crep[2].cost < crep[1].cost))
		tl = tl2;
	tl_ok |= tl2_ok;
	if (tl_ok)
		ct = crep[tl.repeat];
	int use_tiled;
	switch (o.force) {
	case TINYC_REARRANGE_FORCE_TILED:
		if (!tl_ok)
			return tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_PARAM, "RearrangePlanNotApplicable",
				    "no tiled plan: %s", why);
		use_tiled = 1;
		break;
	case TINYC_REARRANGE_FORCE_ELEMENTWISE:
		use_tiled = 0;
		break;
	default:
		use_tiled = tl_ok && (!ew_ok || ct.cost < ce.cost);
		break;
	}
	if (!use_tiled && !ew_ok)
		return tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_PARAM, "RearrangeTooLarge",
			    "the elementwise plan needs more than 2^31-1 blocks");
	*p = use_tiled ? tl : ew;
	p->kind = use_tiled ? TINYC_REARRANGE_TILED : TINYC_REARRANGE_ELEMENTWISE;
	p->cost_elementwise = ce;
	p->cost_tiled = ct;
	p->cost_tiled_rep[1] = crep[1];
	p->cost_tiled_rep[2] = crep[2];
	return TINYC_REARRANGE_SUCCESS;
}

/* ----------------------------------------------------------------------- dump ---- */

/* Print a list of dims as "[len src S dst D] ...". */
static void print_dims(tinyc_buf *b, const tinyc_rearrange_dim *d, int n)
{
	for (int i = 0; i < n; i++)
		tinyc_buf_printf(b, " [%lld src %lld dst %lld]", (long long)d[i].len,
				 (long long)d[i].src, (long long)d[i].dst);
}

/* Print one cost line. */
static void print_cost(tinyc_buf *b, const char *name, const tinyc_rearrange_cost *c)
{
	if (!c->valid) {
		tinyc_buf_printf(b, "  candidate %s: not applicable\n", name);
		return;
	}
	tinyc_buf_printf(b, "  candidate %s: cost %.1f (sectors %lld, instrs %lld, smem %lld, "
			 "blocks %lld)\n", name, c->cost, (long long)c->sectors,
			 (long long)c->mem_instrs, (long long)c->smem_instrs, (long long)c->blocks);
}

/* The plan as stable text: problem, candidates with their costs, the chosen plan. */
void tinyc_rearrange_plan_print(const tinyc_rearrange_plan *p, tinyc_buf *b)
{
	tinyc_buf_printf(b, "rearrange %s: %lld elements of %d bytes (max_threads %d, "
			 "base_align %d)\n", tinyc_dtype_name(p->dtype), (long long)p->numel,
			 p->elem, p->max_threads, p->base_align);
	tinyc_buf_printf(b, "  dims (elements, fastest first):");
	print_dims(b, p->dim, p->ndim);
	tinyc_buf_putc(b, '\n');
	if (p->kind == TINYC_REARRANGE_ELEMENTWISE || p->kind == TINYC_REARRANGE_TILED) {
		print_cost(b, "elementwise", &p->cost_elementwise);
		print_cost(b, "tiled", &p->cost_tiled_rep[1]);
		print_cost(b, "tiled x2", &p->cost_tiled_rep[2]);
	}
	tinyc_buf_printf(b, "  plan %s", tinyc_rearrange_kind_name(p->kind));
	switch (p->kind) {
	case TINYC_REARRANGE_EMPTY:
		tinyc_buf_puts(b, ": nothing to do\n");
		return;
	case TINYC_REARRANGE_COPY:
		tinyc_buf_printf(b, ": %lld bytes at offset %lld\n", (long long)p->copy_bytes,
				 (long long)p->copy_offset);
		return;
	case TINYC_REARRANGE_ELEMENTWISE:
		tinyc_buf_printf(b, ": unit %d bytes, align %d, %d-bit index\n", p->unit,
				 p->align, p->index_bits);
		tinyc_buf_printf(b, "    block %lld threads:", (long long)p->threads);
		print_dims(b, p->block, p->nblock);
		tinyc_buf_putc(b, '\n');
		break;
	case TINYC_REARRANGE_TILED:
		tinyc_buf_printf(b, ": tile %dx%d (smem %dx%d), pack %d, align %d, %d-bit index\n",
				 p->tile, p->tile, p->tile, p->tile + p->tile_pad, p->pack, p->align,
				 p->index_bits);
		tinyc_buf_printf(b, "    block %dx%d threads, %d rows each", p->tx, p->ty,
				 p->rows_per_thread);
		if (p->repeat > 1)
			tinyc_buf_printf(b, ", %d words per row (columns tx + 32 j)", p->repeat);
		tinyc_buf_putc(b, '\n');
		tinyc_buf_printf(b, "    rows (A, dst-contiguous, %lld):", (long long)p->len_a);
		print_dims(b, p->tile_a, p->ntile_a);
		tinyc_buf_printf(b, "\n    columns (B, src-contiguous, %lld):", (long long)p->len_b);
		print_dims(b, p->tile_b, p->ntile_b);
		tinyc_buf_putc(b, '\n');
		break;
	}
	tinyc_buf_printf(b, "    grid %lld blocks:", (long long)p->blocks);
	print_dims(b, p->grid, p->ngrid);
	tinyc_buf_putc(b, '\n');
	for (int i = 0; i < p->ncons; i++) {
		const tinyc_rearrange_constraint *c = &p->cons[i];
		if (p->kind == TINYC_REARRANGE_TILED)
			tinyc_buf_printf(b, "    constraint: grid[%d] * %lld + %s < %lld\n", c->grid,
					 (long long)c->per_block, c->inner ? "column" : "row",
					 (long long)c->len);
		else
			tinyc_buf_printf(b, "    constraint: grid[%d] * %lld + block[%d] < %lld\n",
					 c->grid, (long long)c->per_block, c->inner,
					 (long long)c->len);
	}
}
