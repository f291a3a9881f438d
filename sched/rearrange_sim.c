/* Host simulation of the rearrange kernels: the generated CUDA's index arithmetic (grid and
 * block decomposition by the plan's constant lengths, constraint checks, unit and packed
 * accesses, the padded shared-memory tile), executed block by block and thread by thread on
 * host buffers, with the checks a GPU does not make (bounds, alignment, index width,
 * double writes, reads of shared memory no thread wrote). */
#include "sched/rearrange.h"

#include <stdlib.h>
#include <string.h>

/* State of one simulation. */
typedef struct sim {
	tinyc_ctx *ctx;				/* diagnostics */
	const tinyc_rearrange_plan *p;		/* the plan being executed */
	tinyc_rearrange_buffer y, x;		/* destination and source */
	unsigned char *written;			/* per destination byte: stored already */
	int64_t bytes;				/* destination bytes stored */
} sim;

/* Check that an offset the kernel computes fits the plan's index type. */
static int check_index(sim *s, int64_t v, const char *what)
{
	if (s->p->index_bits == 32 && (v > INT32_MAX || v < INT32_MIN))
		return tinyc_error(s->ctx, "RearrangeSimIndexOverflow",
				   "%s %lld does not fit the plan's 32-bit index", what, (long long)v);
	return 0;
}

/* Check an access of n bytes at byte offset off of buffer b. */
static int check_access(sim *s, const tinyc_rearrange_buffer *b, int64_t off, int n,
			const char *which)
{
	if (off < b->lo || off + n > b->hi)
		return tinyc_error(s->ctx, "RearrangeSimOutOfBounds",
				   "%s access of %d bytes at offset %lld is outside [%lld, %lld)",
				   which, n, (long long)off, (long long)b->lo, (long long)b->hi);
	if ((uintptr_t)(b->base + off) % (uintptr_t)n)
		return tinyc_error(s->ctx, "RearrangeSimMisaligned",
				   "%s access of %d bytes at offset %lld is not %d-byte aligned",
				   which, n, (long long)off, n);
	return 0;
}

/* Load n bytes from the source at byte offset off. */
static int load(sim *s, int64_t off, int n, unsigned char *out)
{
	if (check_access(s, &s->x, off, n, "source"))
		return -1;
	memcpy(out, s->x.base + off, (size_t)n);
	return 0;
}

/* Store n bytes to the destination at byte offset off; a byte stored twice is an error. */
static int store(sim *s, int64_t off, int n, const unsigned char *in)
{
	if (check_access(s, &s->y, off, n, "destination"))
		return -1;
	for (int k = 0; k < n; k++) {
		if (s->written[off - s->y.lo + k])
			return tinyc_error(s->ctx, "RearrangeSimDoubleWrite",
					   "destination byte %lld is stored twice",
					   (long long)(off + k));
		s->written[off - s->y.lo + k] = 1;
	}
	memcpy(s->y.base + off, in, (size_t)n);
	s->bytes += n;
	return 0;
}

/* term = index * stride, added to *acc, with the kernel's index-width checks. */
static int accumulate(sim *s, int64_t *acc, int64_t index, int64_t stride)
{
	int64_t term = index * stride;
	if (check_index(s, term, "a term") || check_index(s, *acc + term, "an offset"))
		return -1;
	*acc += term;
	return 0;
}

/* Decompose a linear index over dims (fastest first) as the kernel does: `% len` and
 * `/ len` for every dim but the last, which takes what is left.  Fills idx[] and adds the
 * offsets to *so and *dof. */
static int decompose(sim *s, int64_t lin, const tinyc_rearrange_dim *d, int n, int64_t *idx,
		     int64_t *so, int64_t *dof, const char *what)
{
	for (int k = 0; k < n; k++) {
		int64_t i = k == n - 1 ? lin : lin % d[k].len;
		if (k < n - 1)
			lin /= d[k].len;
		if (i >= d[k].len)
			return tinyc_error(s->ctx, "RearrangeSimBadGeometry",
					   "%s index %lld of dim %d exceeds its length %lld", what,
					   (long long)i, k, (long long)d[k].len);
		idx[k] = i;
		if (accumulate(s, so, i, d[k].src) || accumulate(s, dof, i, d[k].dst))
			return -1;
	}
	return 0;
}

/* The elementwise kernel: one unit per thread. */
static int run_elementwise(sim *s)
{
	const tinyc_rearrange_plan *p = s->p;
	unsigned char buf[TINYC_REARRANGE_MAX_UNIT];
	int64_t gidx[TINYC_REARRANGE_PLAN_DIMS], bidx[TINYC_REARRANGE_PLAN_DIMS];
	for (int64_t g = 0; g < p->blocks; g++) {
		int64_t gso = 0, gdo = 0;
		if (decompose(s, g, p->grid, p->ngrid, gidx, &gso, &gdo, "grid"))
			return -1;
		for (int64_t t = 0; t < p->threads; t++) {
			int64_t so = gso, dof = gdo;
			if (decompose(s, t, p->block, p->nblock, bidx, &so, &dof, "block"))
				return -1;
			int active = 1;
			for (int c = 0; c < p->ncons; c++)
				if (gidx[p->cons[c].grid] * p->cons[c].per_block +
					    bidx[p->cons[c].inner] >= p->cons[c].len)
					active = 0;
			if (!active)
				continue;
			if (load(s, so * p->unit, p->unit, buf) || store(s, dof * p->unit, p->unit, buf))
				return -1;
		}
	}
	return 0;
}

/* Read element k of a little-endian word of pack elements of e bytes, as the kernel's
 * shift-and-mask does. */
static uint64_t word_get(uint64_t w, int e, int k, int pack)
{
	if (pack == 1)
		return w;
	return (w >> (8 * e * k)) & ((1ull << (8 * e)) - 1);
}

/* n bytes (little-endian, as on the GPU) as a value. */
static uint64_t le_read(const unsigned char *b, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/* Store the n low bytes of v little-endian. */
static void le_write(unsigned char *b, int n, uint64_t v)
{
	for (int i = 0; i < n; i++, v >>= 8)
		b[i] = (unsigned char)v;
}

/* *off += the source (use_dst 0) or destination (1) offset of linear index lin of a tile
 * group, decomposed as the kernel does (by constant lengths, fastest first). */
static int group_offset(sim *s, int64_t lin, const tinyc_rearrange_dim *g, int n, int use_dst,
			int64_t *off)
{
	for (int k = 0; k < n; k++) {
		int64_t i = k == n - 1 ? lin : lin % g[k].len;
		if (k < n - 1)
			lin /= g[k].len;
		if (i >= g[k].len)
			return tinyc_error(s->ctx, "RearrangeSimBadGeometry",
					   "tile group index %lld exceeds length %lld", (long long)i,
					   (long long)g[k].len);
		if (accumulate(s, off, i, use_dst ? g[k].dst : g[k].src))
			return -1;
	}
	return 0;
}

/* The tiled kernel: per block, phase 1 loads the tile (row a of group A at its source
 * offset, columns along B, source-contiguous) into shared memory, a barrier, phase 2 stores
 * it transposed (row b of group B at its destination offset, columns along A). */
static int run_tiled(sim *s)
{
	const tinyc_rearrange_plan *p = s->p;
	const int T = p->tile, W = p->tile + p->tile_pad, P = p->pack, E = p->elem;
	uint64_t *tile = malloc(sizeof(uint64_t) * (size_t)(T * W));
	unsigned char *valid = malloc((size_t)(T * W));
	if (!tile || !valid) {
		free(tile);
		free(valid);
		return tinyc_error(s->ctx, "OutOfMemory", "cannot allocate the simulated tile");
	}
	int64_t gidx[TINYC_REARRANGE_PLAN_DIMS];
	unsigned char buf[8];
	int rc = 0;
	for (int64_t g = 0; g < p->blocks && !rc; g++) {
		int64_t so = 0, dof = 0;
		if ((rc = decompose(s, g, p->grid, p->ngrid, gidx, &so, &dof, "grid")))
			break;
		/* start of the tile's columns in the source, of its rows' columns in the
		 * destination: xb = so + g1 * T, ya = dof + g0 * T */
		int64_t xb = so, ya = dof;
		if ((rc = accumulate(s, &xb, gidx[1], T)) || (rc = accumulate(s, &ya, gidx[0], T)))
			break;
		/* the constraints: inner 0 bounds rows (A), inner 1 columns (B) */
		int64_t limA = INT64_MAX, limB = INT64_MAX;
		for (int c = 0; c < p->ncons; c++) {
			int64_t left = p->cons[c].len - gidx[p->cons[c].grid] * p->cons[c].per_block;
			if (p->cons[c].inner == 0)
				limA = left;
			else
				limB = left;
		}
		memset(valid, 0, (size_t)(T * W));
		for (int ty = 0; ty < p->ty && !rc; ty++)
			for (int tx = 0; tx < p->tx && !rc; tx++)
				for (int r = ty; r < T && !rc; r += p->ty)
				for (int j = 0; j < p->repeat && !rc; j++) {
					int cw = tx + 32 * j;	/* word column */
					if (r >= limA || (int64_t)cw * P >= limB)
						continue;
					int64_t i = xb;
					if ((rc = accumulate(s, &i, (int64_t)cw * P, 1)) ||
					    (rc = group_offset(s, gidx[0] * T + r, p->tile_a, p->ntile_a,
							       0, &i)) ||
					    (rc = load(s, i * E, P * E, buf)))
						break;
					uint64_t w = le_read(buf, P * E);
					for (int k = 0; k < P; k++) {
						int64_t t1 = (int64_t)r * W + cw * P + k;
						if (cw * P + k >= T) {
							rc = tinyc_error(s->ctx, "RearrangeSimSmem",
									 "tile column %d out of range",
									 cw * P + k);
							break;
						}
						tile[t1] = word_get(w, E, k, P);
						valid[t1] = 1;
					}
				}
		/* __syncthreads() */
		for (int ty = 0; ty < p->ty && !rc; ty++)
			for (int tx = 0; tx < p->tx && !rc; tx++)
				for (int r = ty; r < T && !rc; r += p->ty)
				for (int j = 0; j < p->repeat && !rc; j++) {
					int cw = tx + 32 * j;	/* word column */
					if (r >= limB || (int64_t)cw * P >= limA)
						continue;
					uint64_t w = 0;
					for (int k = P - 1; k >= 0; k--) {
						int64_t t1 = (int64_t)(cw * P + k) * W + r;
						if (cw * P + k >= T || !valid[t1]) {
							rc = tinyc_error(s->ctx, "RearrangeSimSmem",
									 "tile element [%d][%d] read "
									 "before any thread wrote it",
									 cw * P + k, r);
							break;
						}
						w = P == 1 ? tile[t1] : (w << (8 * E)) | tile[t1];
					}
					if (rc)
						break;
					int64_t o = ya;
					if ((rc = accumulate(s, &o, (int64_t)cw * P, 1)) ||
					    (rc = group_offset(s, gidx[1] * T + r, p->tile_b, p->ntile_b,
							       1, &o)))
						break;
					le_write(buf, P * E, w);
					rc = store(s, o * E, P * E, buf);
				}
	}
	free(tile);
	free(valid);
	return rc;
}

/* Execute a plan on host buffers (see rearrange.h). */
int tinyc_rearrange_simulate(tinyc_ctx *ctx, const tinyc_rearrange_plan *p,
			     tinyc_rearrange_buffer y, tinyc_rearrange_buffer x,
			     int64_t *bytes_written)
{
	if (bytes_written)
		*bytes_written = 0;
	if (!p || (p->kind != TINYC_REARRANGE_EMPTY && (!y.base || !x.base) ) || y.hi < y.lo)
		return tinyc_error(ctx, "RearrangeBadParam", "simulate: missing plan or buffer");
	sim s = {ctx, p, y, x, NULL, 0};
	s.written = calloc((size_t)(y.hi - y.lo) + 1, 1);
	if (!s.written)
		return tinyc_error(ctx, "OutOfMemory", "cannot allocate the write map");
	int rc = 0;
	switch (p->kind) {
	case TINYC_REARRANGE_EMPTY:
		break;
	case TINYC_REARRANGE_COPY: {
		/* what cuMemcpyDtoD does: the whole run, any alignment */
		int64_t off = p->copy_offset, n = p->copy_bytes;
		if (off < x.lo || off + n > x.hi || off < y.lo || off + n > y.hi) {
			rc = tinyc_error(ctx, "RearrangeSimOutOfBounds",
					 "copy of %lld bytes at offset %lld leaves a buffer",
					 (long long)n, (long long)off);
			break;
		}
		memcpy(y.base + off, x.base + off, (size_t)n);
		s.bytes = n;
		break;
	}
	case TINYC_REARRANGE_ELEMENTWISE:
		rc = run_elementwise(&s);
		break;
	case TINYC_REARRANGE_TILED:
		rc = run_tiled(&s);
		break;
	}
	free(s.written);
	if (bytes_written)
		*bytes_written = s.bytes;
	return rc;
}
