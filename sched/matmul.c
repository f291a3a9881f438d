/* The schedule plan of contractions (see sched/matmul.h): problem extraction from the
 * Poly-View's contraction tag, the takeover of the partition's kernels, the candidate set
 * with its cost model, and the dump.
 *
 * Cost model (seed 002 §5.2 and §10), per candidate:
 *   flops  = 2 * M * N * K * L
 *   bytes  = L * (M*K*|A| * ceil(N/BN) + K*N*|B| * ceil(M/BM))   operand tiles, reused
 *            + the epilogue's tensors (full tensors once, row vectors once per m tile,
 *              column vectors once per n tile, reduction workspaces twice)
 *   time   = max(flops / peak, bytes / bandwidth) / eff + launches
 *   peak   = the fp16 tensor-core peak for mma, the fp32 CUDA-core peak for simt
 *   eff    = utilisation (useful / padded tile points) * wave efficiency (CTAs over
 *            SMs x CTAs per SM, the last wave partly idle) * pipeline factor (simt 0.6;
 *            mma 0.45 synchronous, 0.75 with 2 cp.async stages, 0.85 with 3)
 *            * 0.8 when fewer than 2 CTAs fit on an SM (no latency hiding between CTAs)
 *            * BK / (BK + 8): each k tile pays a barrier (and a cp.async wait).
 * Occupancy: CTAs per SM = min(threads/SM / threads, registers/SM / (regs * threads),
 * shared memory/SM / smem, 32), with regs estimated from the accumulators and fragments.
 * Unbound symbols take the schedule's assumed value in estimates.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "poly/poly.h"
#include "sched/matmul.h"

#define LAUNCH_US 2.0		/* one kernel launch */
/* 3xTF32 against a third of the tf32 peak on the H100: measured 0.37 (4096^3 2716 us,
 * 4096x2304x768 324 us); 0.42 keeps the measured order against the SIMT tile, whose
 * estimate is as optimistic (2494 against 2920 us measured at 4096^3) */
#define TF32X3_EFF_SM90 0.42
/* The SIMT tile's efficiency on a gathered (im2col) operand, relative to a strided one
 * (measured on the H100, see estimate) */
#define SIMT_GATHER_EFF 0.37
/* the wgmma 3xTF32 form against a third of the tf32 wgmma peak (the splits in shared
 * memory, the part fragments' adds, a wait per k tile); H100 (docs/matmul-results.md):
 * 128x128x32 measured 1409 us at 4096^3 (est 1541), 191 at 4096x2304x768 (est 191); the
 * 128x64 tile 10-25% slower at 4096 rows (1867, 223 us), hence TF32WG_EFF_N64 */
#define TF32WG_EFF 0.7
#define TF32WG_EFF_N64 0.85
/* 2x1 clusters with B multicast against the same tile without, H100 (tinyc bench, graph
 * replay, docs/matmul-results.md, session 8): 145.5 -> 107-113 us at 3000x5000x2000 and
 * 11.95 -> 9.4 at 1000^3 (B's rows straddle L2 lines: halving B's reads wins); 26.0 ->
 * 25.9 at 512x4096x4096 (aligned rows, compute-bound: a tie; 28.0 with a closing cluster
 * barrier).  The factor keeps clusters off the aligned shapes, where none measured faster */
#define WGMMA_CLUSTER_EFF 0.9
#define SMEM_FRACTION 0.8	/* candidates keep shared memory under this share of a block's */

/* --------------------------------------------------------------- problems ---- */

void tinyc_mm_problem_clear(tinyc_mm_problem *p)
{
	tinyc_evt_free(p->evt);
	p->evt = NULL;
}

int tinyc_mm_problem_copy(tinyc_ctx *ctx, const tinyc_mm_problem *src, tinyc_mm_problem *dst)
{
	*dst = *src;
	dst->evt = NULL;
	if (src->evt && !(dst->evt = tinyc_evt_copy(ctx, src->evt)))
		return -1;
	return 0;
}

void tinyc_mm_plan_free(void *ext)
{
	tinyc_mm_plan *p = ext;
	if (!p)
		return;
	tinyc_mm_problem_clear(&p->prob);
	free(p);
}

/* The problem of contraction entry e on schedule s; -1 with *why when it does not fit the
 * template (not an error). */
static int problem_of(tinyc_ctx *ctx, const tinyc_schedule *s, const tinyc_polyview *pv,
		      const tinyc_evt_entry *e, tinyc_mm_problem *prob, char *why, size_t wsize)
{
	const tinyc_graph *g = s->g;
	const tinyc_contraction *c = &pv->contr[e->contraction];
	const tinyc_pv_stmt *sr = &pv->stmt[c->reduce_stmt];
	const tinyc_ibval *rv = &pv->ib->val[sr->node];
	memset(prob, 0, sizeof(*prob));
	prob->reduce = sr->node;
	prob->m = prob->n = prob->k = prob->l = (tinyc_dim){1, -1};
	/* the axes of each role (m, n, k, batch), outer first; several axes of one role merge
	 * into one when every operand's strides compose (stride(outer) = size(inner) *
	 * stride(inner)), as the epilogue's coordinates do (poly/evt_extract.c) */
	int ax[4][TINYC_MAX_RANK + 1], nax[4] = {0, 0, 0, 0};
	for (int a = 0; a < c->naxes; a++) {
		int r = c->role[a] == TINYC_ROLE_M   ? 0
			: c->role[a] == TINYC_ROLE_N ? 1
			: c->role[a] == TINYC_ROLE_K ? 2
			: c->role[a] == TINYC_ROLE_BATCH ? 3 : -1;
		if (r >= 0)
			ax[r][nax[r]++] = a;
		else if (rv->axes[a].kind != TINYC_AXIS_BROADCAST && rv->axes[a].kind != TINYC_AXIS_REDUCE)
			prob->unit_axis = 1;	/* bound to 1 (poly/polyview.c) */
	}
	/* a unit batch axis (B = 1) leaves an ordinary matrix product; a unit m or n axis
	 * (decode) is the gemv template's */
	if (nax[0] && nax[1])
		prob->unit_axis = 0;
	static const char *const rname[4] = {"m", "n", "k", "batch"};
	if (!nax[2]) {
		snprintf(why, wsize, "no k axis");
		return -1;
	}
	if (!nax[0] && !nax[1] && nax[3] > 1) {
		snprintf(why, wsize, "no m or n axis (a dot product per batch element)");
		return -1;
	}
	int64_t size[TINYC_MAX_RANK + 1];
	tinyc_dim *ext[4] = {&prob->m, &prob->n, &prob->k, &prob->l};
	for (int r = 0; r < 4; r++) {
		if (nax[r] == 1)
			*ext[r] = rv->axes[ax[r][0]].size;
		if (nax[r] < 2)
			continue;
		int64_t prod = 1;
		for (int i = 0; i < nax[r]; i++) {
			size[ax[r][i]] = tinyc_sched_dim(s, &rv->axes[ax[r][i]].size);
			if (size[ax[r][i]] < 1) {
				snprintf(why, wsize, "%d %s axes, one of unbound size", nax[r], rname[r]);
				return -1;
			}
			prod *= size[ax[r][i]];
		}
		*ext[r] = (tinyc_dim){prod, -1};
	}
	int arr[2] = {c->lhs, c->rhs};
	isl_pw_multi_aff *acc[2] = {c->lhs_acc, c->rhs_acc};
	tinyc_mm_operand *op[2] = {&prob->a, &prob->b};
	for (int i = 0; i < 2; i++) {
		if (arr[i] < 0 || s->node_buf[arr[i]] < 0) {
			snprintf(why, wsize, "the %s operand is not in memory", i ? "right" : "left");
			return -1;
		}
		tinyc_evt_poly st[TINYC_MAX_RANK + 1], off;
		char *w = NULL;
		if (tinyc_evt_access_layout(g, acc[i], sr->domain, &g->nodes[arr[i]], c->naxes, st, &off,
					    &w) < 0) {
			snprintf(why, wsize, "the %s operand's access: %s", i ? "right" : "left",
				 w ? w : "?");
			free(w);
			return -1;
		}
		/* merged axes: the innermost's stride, when the outer ones compose; else (and
		 * for a padded operand) the row and column axes are gathered (sched/conv.h) */
		tinyc_evt_poly rs[4];
		int rowr = i ? 2 : 0, colr = i ? 1 : 2;
		int gather = i ? c->rhs_padded : c->lhs_padded;
		for (int r = 0; r < 4; r++) {
			rs[r] = nax[r] ? st[ax[r][nax[r] - 1]] : tinyc_evt_poly_const(0);
			for (int j = nax[r] - 1; j > 0; j--) {
				int64_t so = tinyc_sched_poly_value(s, &st[ax[r][j - 1]]);
				int64_t si = tinyc_sched_poly_value(s, &st[ax[r][j]]);
				if (so >= 0 && si >= 0 && so == si * size[ax[r][j]])
					continue;
				if ((r == rowr || r == colr) && so >= 0 && si >= 0) {
					gather = 1;
					continue;
				}
				snprintf(why, wsize, "the %s operand's %s axes do not merge (strides "
					 "%" PRId64 " and %" PRId64 ")", i ? "right" : "left",
					 rname[r], so, si);
				return -1;
			}
		}
		memset(&op[i]->gather, 0, sizeof(op[i]->gather));
		if (gather) {
			int64_t aext[TINYC_MAX_RANK + 1], astr[TINYC_MAX_RANK + 1];
			for (int a = 0; a < c->naxes; a++) {
				aext[a] = tinyc_sched_dim(s, &rv->axes[a].size);
				astr[a] = tinyc_sched_poly_value(s, &st[a]);
			}
			if (tinyc_conv_gather(acc[i], sr->domain, ax[rowr], nax[rowr], ax[colr], nax[colr],
					      aext, astr, &op[i]->gather, why, wsize) < 0)
				return -1;
		}
		op[i]->node = arr[i];
		op[i]->buf = s->node_buf[arr[i]];
		op[i]->dtype = s->bufs[op[i]->buf].dtype;
		op[i]->offset = off;
		/* A: (m, k, l); B: (k, n, l) */
		op[i]->stride[0] = i ? rs[2] : rs[0];
		op[i]->stride[1] = i ? rs[1] : rs[2];
		op[i]->stride[2] = rs[3];
	}
	prob->mul = g->nodes[pv->stmt[c->mul_stmt].node].dtype;
	prob->acc = c->acc;
	if (!e->g) {
		snprintf(why, wsize, "no epilogue graph");
		return -1;
	}
	if (!(prob->evt = tinyc_evt_copy(ctx, e->g)))
		return -2;
	/* tensors: UOp nodes -> buffers */
	for (int i = 0; i < prob->evt->n; i++) {
		tinyc_evt_node *nd = &prob->evt->nodes[i];
		if (!nd->has_tensor)
			continue;
		int node = nd->t.buf;
		if (node < 0 || node >= g->n || s->node_buf[node] < 0) {
			snprintf(why, wsize, "the epilogue's tensor %s has no buffer", nd->t.name);
			tinyc_mm_problem_clear(prob);
			return -1;
		}
		nd->t.buf = s->node_buf[node];
		if (s->bufs[nd->t.buf].dtype != nd->t.dtype) {
			snprintf(why, wsize, "the epilogue's tensor %s is stored as %s", nd->t.name,
				 tinyc_dtype_name(s->bufs[nd->t.buf].dtype));
			tinyc_mm_problem_clear(prob);
			return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ tiles ---- */

/* Whether a dim is known (bound) and a multiple of q. */
static int dim_multiple(const tinyc_dim *d, const int64_t *sym, int64_t q)
{
	int64_t v = d->sym < 0 ? d->val : sym ? sym[d->sym] : -1;
	return v > 0 && v % q == 0;
}

/* Scratch shared memory of the epilogue's reductions. */
static int64_t reduction_smem(const tinyc_mm_problem *prob, int bm, int bn, int groups_m,
			      int groups_n, int warps)
{
	int64_t bytes = 0;
	for (int i = 0; prob->evt && i < prob->evt->n; i++) {
		const tinyc_evt_node *nd = &prob->evt->nodes[i];
		int es = tinyc_dtype_size(nd->compute);
		if (nd->kind == TINYC_EVT_ROW_RED)
			bytes += (int64_t)groups_m * bn * es;
		else if (nd->kind == TINYC_EVT_COL_RED)
			bytes += (int64_t)groups_n * bm * es;
		else if (nd->kind == TINYC_EVT_SCALAR_RED)
			bytes += (int64_t)warps * es;
	}
	return bytes;
}

/* The opt-in shared memory of a block (bytes; the static limit where unknown). */
static double optin_limit(const tinyc_device_info *dev)
{
	return dev->smem_per_block_optin > dev->smem_per_block ? dev->smem_per_block_optin
							       : dev->smem_per_block;
}

/* Shared bytes of a consumer warp's epilogue staging: 16 rows of 64 halves + 16 bytes
 * (codegen/evt_emit.c STAGE_ROW_WORDS); with TMA stores, 2 KB buffers instead. */
#define WARP_STAGE_BYTES (16 * 144)
#define WARP_TMA_STAGE_BYTES 2048

/* The TMA-store epilogue on wgmma tiles t (options record: TINYC_TMA_STORE): each
 * consumer warp's staging buffer becomes two (else one) 2 KB buffers in the 128-byte
 * swizzled layout of a 64 x 16 box, 1024-byte aligned, where shared memory holds them.
 * Not for swap-AB (unstaged), 3xTF32 or unstaged plans. */
static void wgmma_tma_store(const tinyc_device_info *dev, tinyc_mm_tiles *t)
{
	if (t->swap || t->tf32x3 || t->no_stage)
		return;
	int64_t warps = 4 * (int64_t)t->consumers;
	int64_t base = t->smem - warps * WARP_STAGE_BYTES + 1024;	/* the padded buffers out, slack in */
	for (int nb = 2; nb >= 1; nb--)
		if ((double)(base + warps * WARP_TMA_STAGE_BYTES * nb) <= optin_limit(dev) - 1024) {
			t->tma_store = nb;
			t->smem = base + warps * WARP_TMA_STAGE_BYTES * nb;
			return;
		}
}

/* The options record's wgmma knobs on t (diagnostics and tuning): the instruction N
 * (a divisor of bn that is a multiple of 64) and the raster group (1..64). */
static void wgmma_knobs(const tinyc_sched_options *o, tinyc_mm_tiles *t)
{
	int n = o->wgmma_n;
	if (n >= 64 && n <= t->bn && t->bn % n == 0 && n % 64 == 0)
		t->wgn = n;
	if (o->wgmma_raster >= 1 && o->wgmma_raster <= 64)
		t->raster = o->wgmma_raster;
}

/* The tiles of the Hopper template (see tinyc_matmul_tiles); pingpong: the consumers
 * alternate whole tiles; pack: the operands TMA cannot load are packed first (-1 when
 * there is none); narrow: prob is the swapped problem of a swap-AB plan (sched/swapab.c):
 * bn 8 .. 32 (the tokens), B K-major, both operands by TMA as they are, cooperative,
 * rings of up to 12 stages, no staging buffers (its outputs are stored unstaged). */
static int fp32_operands(const tinyc_mm_problem *prob);

static int wgmma_tiles(const tinyc_mm_problem *prob, const tinyc_device_info *dev,
		       const int64_t *sym, int bm, int bn, int bk, int stages, int pingpong,
		       int pack, int narrow, tinyc_mm_tiles *t)
{
	memset(t, 0, sizeof(*t));
	t->variant = TINYC_MM_WGMMA;
	t->bm = bm, t->bn = bn, t->bk = bk, t->stages = stages;
	t->tf32x3 = fp32_operands(prob);
	if (dev->arch.major != 9 || dev->arch.minor != 0 || !(prob->tma_ok & TINYC_MM_SIZES_BOUND) ||
	    (!t->tf32x3 && (prob->a.dtype != prob->b.dtype ||
			    (prob->a.dtype != TINYC_HALF && prob->a.dtype != TINYC_BFLOAT16) ||
			    prob->mul != prob->a.dtype || prob->acc != TINYC_FLOAT)))
		return -1;
	if (t->tf32x3 && tinyc_tf32wg_rejects(prob, bm, bn, bk, stages, pingpong, pack))
		return -1;
	int64_t mrows = prob->m.sym < 0 ? prob->m.val : sym ? sym[prob->m.sym] : -1;
	if (bm > 64 && mrows >= 1 && mrows <= bm - 64)
		return -1;	/* fewer rows hold M: the last consumer's rows would be padding */
	/* bm: 64, 128, or 192 (three cooperative consumers: a 192 x 192 tile fills rounds of
	 * persistent tiles where 128 x 256 leaves the last partly idle, cuBLASLt's tile at
	 * 2048 x 11008 x 4096); bn: 64, 128, 192, 256, or a fitted width (a multiple of 8:
	 * checked below) */
	if (bm == 192 && (pingpong || narrow || t->tf32x3 || pack))
		return -1;
	if ((bk != 64 && !t->tf32x3) || (bm != 64 && bm != 128 && bm != 192) || bn % 8 ||
	    bn < (narrow ? 8 : 64) || bn > (narrow ? 32 : 256) || stages < 2 ||
	    stages > (narrow ? 12 : 8))
		return -1;
	for (int i = 0; prob->evt && i < prob->evt->n; i++)
		if (tinyc_evt_is_reduction(prob->evt->nodes[i].kind))
			return -1;	/* the in-CTA reduction needs block barriers */
	/* layouts: A (m, k) K-major when k is contiguous, M-major when m is; B (k, n) alike;
	 * an operand of other strides is copied by the producer's threads, K-major */
	t->a_kmajor = !(tinyc_evt_poly_is_const(&prob->a.stride[0], 1) &&
			!tinyc_evt_poly_is_const(&prob->a.stride[1], 1));
	t->b_kmajor = !(tinyc_evt_poly_is_const(&prob->b.stride[1], 1) &&
			!tinyc_evt_poly_is_const(&prob->b.stride[0], 1));
	t->a_tma = (prob->tma_ok & TINYC_MM_TMA_A) != 0;
	t->b_tma = (prob->tma_ok & TINYC_MM_TMA_B) != 0;
	/* a gathered operand (im2col) is copied by the producer's threads */
	if (prob->a.gather.on)	/* K-major: measured faster than M-major on the H100
				 * (fp16 BasicBlock: 995 against 1558 us, docs/conv-results.md) */
		t->a_kmajor = 1, t->a_tma = 0;
	if (prob->b.gather.on)
		t->b_kmajor = 1, t->b_tma = 0;
	if (pack == 2) {	/* NHWC (prob is tinyc_conv_nhwc_problem's): A by cp.async */
		if (!prob->a.gather.on || !prob->b.gather.on || stages < 3)
			return -1;	/* the producer arrives a stage late: 3 stages at least */
		t->a_nhwc = 1, t->pack_b = 1, t->b_tma = 1;
	} else if (pack) {
		if (t->a_tma && t->b_tma)
			return -1;
		/* a gathered A whose consecutive rows are (nearly) consecutive elements (the
		 * output's innermost spatial axis, stride 1 or 2): packed M-major, so that the
		 * packing kernel reads and writes along m, coalesced */
		if (prob->a.gather.on && tinyc_conv_pack_m_major(&prob->a.gather))
			t->a_kmajor = 0;
		t->pack_a = !t->a_tma, t->pack_b = !t->b_tma;
		t->a_tma = t->b_tma = 1;
	}
	if (narrow && (!t->b_kmajor || !t->a_tma || !t->b_tma || pack || pingpong || t->tf32x3))
		return -1;
	/* a fitted width: whole 64-column boxes of an n-major B by TMA, cooperative */
	if (!narrow && bn % 64 && (t->tf32x3 || pack || !t->a_tma || !t->b_tma || t->b_kmajor || pingpong))
		return -1;
	t->pingpong = pingpong;
	/* cooperative: a consumer per 64 rows; pingpong: two consumers, each a whole tile
	 * of at most 128 accumulators per thread */
	if (pingpong && (bm / 64) * (bn / 2) > 128)
		return -1;
	t->consumers = pingpong ? 2 : bm / 64;
	t->wgn = bn;	/* the options record may narrow it (wgmma_knobs) */
	t->threads = 128 * (1 + t->consumers);
	/* the ring, its barriers, the epilogue's staging buffers (16 rows of 64 halves + 16
	 * bytes per consumer warp) */
	t->smem = (int64_t)stages * (bm + tinyc_wgmma_stage_n(t)) * bk * 2 + 2 * 8 * stages +
		  (narrow ? 0 : (int64_t)4 * t->consumers * WARP_STAGE_BYTES);
	if (t->tf32x3)	/* fp32 hi and lo stages, the ready barriers */
		t->smem += (int64_t)stages * (bm + bn) * bk * 6 + 8 * stages;
	if ((double)t->smem > optin_limit(dev) - 1024 || t->threads > dev->max_threads_per_block)
		return -1;
	/* the consumer's accumulators, broadcast vectors, addressing */
	int rows = pingpong ? bm : 64;
	t->regs = (rows / 64) * (bn / 2) + (rows / 64) * (bn / 8) + 40;
	if (t->tf32x3)	/* a part fragment beside the accumulators */
		t->regs = 2 * (bn / 2) + 40;
	int generic = !t->a_tma || !t->b_tma;	/* the producer's threads copy: more registers */
	/* NHWC: the producer's cp.async addressing keeps the rows' terms of a tile in
	 * registers; no setmaxnreg (168 each: 65536 / 384) */
	generic |= t->tf32x3;	/* the producer's threads split */
	t->regs_producer = t->consumers == 2 && !t->a_nhwc ? (generic ? 56 : 40) : 0;
	t->regs_consumer = t->consumers == 2 && !t->a_nhwc ? (generic ? 224 : 232) : 0;
	if (t->consumers == 3) {	/* 512 threads: 128 x 32 + 384 x 160 = the 65536 registers */
		if (generic)
			return -1;
		t->regs_producer = 32, t->regs_consumer = 160;
	}
	if (t->regs > (t->regs_consumer ? t->regs_consumer : t->consumers == 2 ? 168 : 255))
		return -1;
	t->ctas_per_sm = 1;
	int64_t mv = prob->m.sym < 0 ? prob->m.val : sym ? sym[prob->m.sym] : -1;
	int64_t nv = prob->n.sym < 0 ? prob->n.val : sym ? sym[prob->n.sym] : -1;
	int64_t lv = prob->l.sym < 0 ? prob->l.val : sym ? sym[prob->l.sym] : -1;
	if (mv < 1 || nv < 1 || lv < 1)
		return -1;
	int64_t tiles = ((mv + bm - 1) / bm) * ((nv + bn - 1) / bn) * lv;
	if (tiles > INT32_MAX)
		return -1;
	t->grid = (int)(tiles < dev->sm_count ? tiles : dev->sm_count);
	/* rasterisation: groups of 8 m tiles keep the k panels of the tiles in flight (8 m
	 * tiles by grid / 8 n tiles) in L2; where they cannot (long K), groups of 32 measured
	 * faster (8192^3 on an H100: 1481 -> 1453 us at 4 stages, 1460 -> 1411 at 3; flat at
	 * 4096^3).  The options record may set it (wgmma_knobs). */
	int64_t kv = prob->k.sym < 0 ? prob->k.val : sym ? sym[prob->k.sym] : -1;
	double panels = (double)kv * (8.0 * bm + t->grid / 8.0 * bn) *
			tinyc_dtype_size(prob->a.dtype);
	t->raster = dev->l2_bytes > 0 && panels > dev->l2_bytes ? 32 : 8;
	t->pred_m = !dim_multiple(&prob->m, sym, bm);
	t->pred_n = !dim_multiple(&prob->n, sym, bn);
	t->pred_k = !dim_multiple(&prob->k, sym, bk);
	return 0;
}

/* Clusters of 2 CTAs on t (wgmma_tiles' result for prob): the pair takes m tiles 2 p and
 * 2 p + 1 of one n tile and shares B, each CTA loading half of its boxes by a TMA
 * multicast to both, which halves B's reads from L2 (cuBLASLt's kernels on the H100 run
 * in 2-CTA clusters on every shape of the benchmark: ncu, docs/matmul-results.md).  For
 * TMA operands as they are (no packing, gather or 3xTF32), B n-major (its stage is
 * BN / 64 boxes), no batch, two m tiles and M >= 128 at least.  0, or -1 where it does
 * not apply. */
static int wgmma_cluster(const tinyc_mm_problem *prob, const tinyc_device_info *dev,
			 const int64_t *sym, tinyc_mm_tiles *t)
{
	int64_t mv = prob->m.sym < 0 ? prob->m.val : sym ? sym[prob->m.sym] : -1;
	int64_t nv = prob->n.sym < 0 ? prob->n.val : sym ? sym[prob->n.sym] : -1;
	int64_t lv = prob->l.sym < 0 ? prob->l.val : sym ? sym[prob->l.sym] : -1;
	if (t->tf32x3 || !t->a_tma || !t->b_tma || t->pack_a || t->pack_b || t->a_nhwc ||
	    t->b_kmajor || lv != 1 || (prob->evt && prob->evt->batched) || mv < 1 || nv < 1)
		return -1;
	int64_t tm = (mv + t->bm - 1) / t->bm, tn = (nv + t->bn - 1) / t->bn;
	if (tm < 2 || mv < 128)	/* M < 128: the small-M plans (sched/splitk.c, gemv) */
		return -1;
	int64_t pairs = (tm + 1) / 2 * tn;
	int slots = dev->sm_count / 2 * 2;
	t->cluster = 2;
	t->grid = (int)(2 * pairs < slots ? 2 * pairs : slots);
	if (tm % 2)	/* the last pair's second tile lies past M: its rows are predicated */
		t->pred_m = 1;
	return 0;
}

int64_t tinyc_matmul_packed_operand(const tinyc_mm_problem *prob, const tinyc_mm_tiles *t,
				    const int64_t *sym, int is_b, tinyc_mm_operand *out)
{
	const tinyc_mm_operand *op = is_b ? &prob->b : &prob->a;
	const tinyc_dim *d[2] = {is_b ? &prob->k : &prob->m, is_b ? &prob->n : &prob->k};
	int64_t ext[2], L = prob->l.sym < 0 ? prob->l.val : sym ? sym[prob->l.sym] : -1;
	for (int i = 0; i < 2; i++)
		if ((ext[i] = d[i]->sym < 0 ? d[i]->val : sym ? sym[d[i]->sym] : -1) < 1)
			return -1;
	if (L < 1)
		return -1;
	/* the contiguous axis of the tile layout: k for a K-major operand */
	int kmajor = is_b ? t->b_kmajor : t->a_kmajor;
	int c = is_b ? (kmajor ? 0 : 1) : (kmajor ? 1 : 0), o = 1 - c;
	int64_t padded = (ext[c] + 7) / 8 * 8;
	int batch = prob->evt && prob->evt->batched && !tinyc_evt_poly_is_zero(&op->stride[2]);
	memset(out, 0, sizeof(*out));
	out->node = op->node;
	out->buf = -1;
	out->dtype = op->dtype;
	out->stride[c] = tinyc_evt_poly_const(1);
	out->stride[o] = tinyc_evt_poly_const(padded);
	out->stride[2] = tinyc_evt_poly_const(batch ? padded * ext[o] : 0);
	out->offset = tinyc_evt_poly_const(0);
	return padded * ext[o] * (batch ? L : 1);
}

void tinyc_matmul_config_key(const tinyc_mm_tiles *t, char *buf, size_t size)
{
	static const char *const names[] = {"simt", "mma", "wgmma", "gemv", "tf32x3"};
	if (t->variant == TINYC_MM_WGMMA)
		snprintf(buf, size, "wgmma %dx%dx%d s%d c%d n%d%s%s%s%s%s", t->bm, t->bn, t->bk, t->stages,
			 t->consumers, t->wgn, t->pingpong ? " pp" : "", t->tf32x3 ? " tf32x3" : "",
			 t->a_nhwc ? " nhwc" : t->pack_a && t->pack_b ? " packAB" : t->pack_a ? " packA"
			 : t->pack_b ? " packB" : "", t->cluster > 1 ? " cl2" : "", t->swap ? " swap" : "");
	else
		snprintf(buf, size, "%s %dx%dx%d s%d", names[t->variant], t->bm, t->bn, t->bk, t->stages);
	size_t n = strlen(buf);
	if (t->gemv_mma && n < size)	/* the tensor-core gemv */
		n += (size_t)snprintf(buf + n, size - n, " mma");
	if (t->split > 1 && n < size)
		snprintf(buf + n, size - n, " sk%d%s", t->split, t->split_fused == 2 ? " dsmem" : "");
	n = strlen(buf);
	if (t->tail_split > 1 && n < size)
		snprintf(buf + n, size - n, " tail%dx%d g%d", t->tail_tiles, t->tail_split, t->grid);
}

/* Whether prob has fp32 operands, products and accumulators (the 3xTF32 tile: its loads
 * also gather a convolution's im2col operand). */
static int fp32_operands(const tinyc_mm_problem *prob)
{
	return prob->a.dtype == TINYC_FLOAT && prob->b.dtype == TINYC_FLOAT &&
	       prob->mul == TINYC_FLOAT && prob->acc == TINYC_FLOAT;
}

/* Whether the two-stage SIMT tile takes prob: fp32, operands read through strides (no
 * convolution gather). */
static int simt_tile_fits(const tinyc_mm_problem *prob)
{
	return fp32_operands(prob) && !prob->a.gather.on && !prob->b.gather.on;
}

int tinyc_matmul_tiles(const tinyc_mm_problem *prob, const tinyc_device_info *dev,
		       const int64_t *sym, tinyc_mm_variant v, int bm, int bn, int bk, int stages,
		       tinyc_mm_tiles *t)
{
	memset(t, 0, sizeof(*t));
	t->variant = v;
	t->bm = bm, t->bn = bn, t->bk = bk, t->stages = stages;
	int sa = tinyc_dtype_size(prob->a.dtype), sb = tinyc_dtype_size(prob->b.dtype);
	int warps;
	if (v == TINYC_MM_WGMMA)
		return wgmma_tiles(prob, dev, sym, bm, bn, bk, stages, 0, 0, 0, t);
	if (v == TINYC_MM_TF32X3) {
		/* codegen/tf32_tile.c: 128x128 (8 warps of 64x32) or 128x64 (8 warps of 32x32),
		 * two stages of fp32 rows of bk + 8 floats, dynamic shared memory */
		if (dev->arch.major < 8 || bm != 128 || (bn != 128 && bn != 64) || (bk != 16 && bk != 32) ||
		    stages != 2 || !fp32_operands(prob))
			return -1;
		t->threads = 256;
		t->warps_m = bn == 128 ? 2 : 4, t->warps_n = bn == 128 ? 4 : 2;
		warps = 8;
		t->smem = 2 * (int64_t)(bm + bn) * (bk + 8) * 4 +
			  reduction_smem(prob, bm, bn, t->warps_m, t->warps_n, warps);
		t->dyn_smem = 1;
		/* 64 accumulators, the prefetch registers, raw + hi + lo fragments: ptxas, 129
		 * registers at bk 16 (bounded to 128 for 2 CTAs per SM), 141 at bk 32; im2col
		 * addressing of a gathered operand 228; a conv's A on its NHWC copy (16-byte
		 * loads, B gathered) fits 128 with a small spill (tinyc_conv_nhwc_problem's
		 * problem: both operands gathered) */
		int nhwc = prob->a.gather.on && prob->b.gather.on && bk == 16;
		t->regs = nhwc ? 128 : prob->a.gather.on || prob->b.gather.on ? 232
		        : bk == 16 || bn == 64 ? 128 : 144;
	} else if (v == TINYC_MM_SIMT && stages == 2) {
		/* the fp32 tile (codegen/simt_tile.c): 128x128, k-step 16, two shared stages */
		if (bm != 128 || bn != 128 || bk != 16 || !simt_tile_fits(prob))
			return -1;
		t->threads = 256;
		t->tm = 8, t->tn = 8;
		warps = 8;
		t->smem = tinyc_simt_tile_smem(bm, bn, bk) + reduction_smem(prob, bm, bn, 8, 1, warps);
		/* ptxas: 127 with both operands in 16-byte loads (codegen/simt_tile.c), else 159 */
		t->regs = (prob->tma_ok & TINYC_MM_TMA_A) && (prob->tma_ok & TINYC_MM_TMA_B) ? 128 : 160;
	} else if (v == TINYC_MM_SIMT) {
		if (stages != 1 || bm % 16 || bn % 16)
			return -1;
		t->threads = 256;
		t->tm = bm / 16, t->tn = bn / 16;
		warps = 8;
		t->smem = (int64_t)bm * bk * sa + (int64_t)bk * bn * sb +
			  reduction_smem(prob, bm, bn, 8, 1, warps);
		t->regs = t->tm * t->tn + t->tm + t->tn + 32;
	} else {
		if (dev->arch.major < 8 || prob->a.dtype != prob->b.dtype ||
		    (prob->a.dtype != TINYC_HALF && prob->a.dtype != TINYC_BFLOAT16) ||
		    prob->mul != prob->a.dtype || prob->acc != TINYC_FLOAT || bk % 16 || bm % 32 ||
		    bn % 32)
			return -1;
		t->warps_m = bm >= 256 ? 4 : 2;
		t->warps_n = bn >= 128 ? 4 : 2;
		if (bm >= 256 && bn >= 256)
			return -1;
		if (bm >= 256)
			t->warps_n = 2;
		warps = t->warps_m * t->warps_n;
		t->threads = 32 * warps;
		int wm = bm / t->warps_m, wn = bn / t->warps_n;
		if (wm % 16 || wn % 16)
			return -1;
		/* cp.async 16-byte chunks need the contiguous dim along the tile's rows */
		t->async_a = tinyc_evt_poly_is_const(&prob->a.stride[1], 1) && !prob->a.gather.on;
		t->async_b = tinyc_evt_poly_is_const(&prob->b.stride[1], 1) && !prob->b.gather.on;
		if ((t->async_a || t->async_b) != (stages > 1))
			return -1;
		t->smem = (int64_t)stages * ((int64_t)bm * (bk + 8) + (int64_t)bk * (bn + 8)) * 2 +
			  reduction_smem(prob, bm, bn, t->warps_m, t->warps_n, warps);
		int mi = wm / 16, ni = wn / 8;
		t->regs = mi * ni * 4 + mi * 4 + ni * 2 + 40;
		/* tiles beyond the 48 KiB of static arrays go to the dynamic segment (opt-in) */
		t->dyn_smem = (double)t->smem > SMEM_FRACTION * dev->smem_per_block;
		if (t->regs > 255)
			return -1;
	}
	/* grid: y (m tiles) and z (batch) are limited to 65535 */
	int64_t mv = prob->m.sym < 0 ? prob->m.val : sym ? sym[prob->m.sym] : -1;
	int64_t lv = prob->l.sym < 0 ? prob->l.val : sym ? sym[prob->l.sym] : -1;
	if ((mv > 0 && (mv + bm - 1) / bm > 65535) || lv > 65535)
		return -1;
	t->pred_m = !dim_multiple(&prob->m, sym, bm);
	t->pred_n = !dim_multiple(&prob->n, sym, bn);
	t->pred_k = !dim_multiple(&prob->k, sym, bk);
	double limit = SMEM_FRACTION * (t->dyn_smem ? optin_limit(dev) : dev->smem_per_block);
	if ((double)t->smem > limit || t->threads > dev->max_threads_per_block)
		return -1;
	int by_threads = dev->max_threads_per_sm / t->threads;
	int regs_per_thread = (t->regs + 7) / 8 * 8;
	int by_regs = dev->regs_per_sm / (regs_per_thread * t->threads);
	int by_smem = t->smem ? (int)(dev->smem_per_sm / t->smem) : 32;
	int c = by_threads;
	if (by_regs < c)
		c = by_regs;
	if (by_smem < c)
		c = by_smem;
	if (c > 32)
		c = 32;
	t->ctas_per_sm = c;
	if (c < 1)
		return -1;
	return 0;
}

/* Bytes of the epilogue's tensors for tiles of bm x bn (estimates). */
static double epilogue_bytes(const tinyc_schedule *s, const tinyc_mm_problem *prob,
			     double M, double N, double L, int bm, int bn)
{
	double bytes = 0;
	for (int i = 0; prob->evt && i < prob->evt->n; i++) {
		const tinyc_evt_node *nd = &prob->evt->nodes[i];
		if (!nd->has_tensor)
			continue;
		double es = tinyc_dtype_size(nd->t.dtype);
		switch (nd->kind) {
		case TINYC_EVT_SRC_FETCH:
		case TINYC_EVT_AUX_LOAD:
		case TINYC_EVT_AUX_STORE:
			bytes += M * N * L * es;
			break;
		case TINYC_EVT_ROW_BCAST:
			bytes += N * L * es * ceil(M / bm);
			break;
		case TINYC_EVT_COL_BCAST:
			bytes += M * L * es * ceil(N / bn);
			break;
		case TINYC_EVT_ROW_RED:
			bytes += 2 * N * L * ceil(M / bm) * tinyc_dtype_size(nd->compute) + N * L * es;
			break;
		case TINYC_EVT_COL_RED:
			bytes += 2 * M * L * ceil(N / bn) * tinyc_dtype_size(nd->compute) + M * L * es;
			break;
		case TINYC_EVT_SCALAR_RED:
			bytes += 2 * L * ceil(M / bm) * ceil(N / bn) * tinyc_dtype_size(nd->compute);
			break;
		default:
			bytes += L * es;
			break;
		}
	}
	(void)s;
	return bytes;
}

/* The number of reduction nodes (each adds a final-pass kernel). */
static int reduction_count(const tinyc_mm_problem *prob)
{
	int n = 0;
	for (int i = 0; prob->evt && i < prob->evt->n; i++)
		n += tinyc_evt_is_reduction(prob->evt->nodes[i].kind);
	return n;
}

/* Whether every index of the problem fits int under the bindings (else long). */
static tinyc_dtype index_dtype(const tinyc_schedule *s, const tinyc_mm_problem *prob)
{
	const int64_t lim = INT64_C(1) << 30;
	const tinyc_dim *d[4] = {&prob->m, &prob->n, &prob->k, &prob->l};
	int64_t ext[4];
	for (int i = 0; i < 4; i++)
		if ((ext[i] = tinyc_sched_dim(s, d[i])) < 0 || ext[i] > lim)
			return TINYC_LONG;
	/* the farthest element of every tensor */
	const tinyc_mm_operand *op[2] = {&prob->a, &prob->b};
	int64_t rows[2] = {ext[0], ext[2]}, cols[2] = {ext[2], ext[1]};
	for (int i = 0; i < 2; i++) {
		int64_t st[3], off = tinyc_sched_poly_value(s, &op[i]->offset);
		for (int a = 0; a < 3; a++)
			st[a] = tinyc_sched_poly_value(s, &op[i]->stride[a]);
		const tinyc_mm_gather *g = &op[i]->gather;
		if ((off < 0 && !g->on) || st[0] < 0 || st[1] < 0 || st[2] < 0)
			return TINYC_LONG;
		double far = off + (double)(rows[i] + 64) * st[0] + (double)(cols[i] + 64) * st[1] +
			     (double)(ext[3] - 1) * st[2];
		if (g->on) {	/* im2col: the window's axes (an offset below 0 is the padding) */
			far = (double)(off < 0 ? -off : off) + (double)(ext[3] - 1) * st[2];
			for (int r = 0; r < 2; r++)
				for (int j = 0; j < g->nax[r]; j++)
					far += (double)(g->ext[r][j] + 64) * g->stride[r][j];
		}
		if (far > (double)lim)
			return TINYC_LONG;
	}
	for (int i = 0; prob->evt && i < prob->evt->n; i++) {
		const tinyc_evt_node *nd = &prob->evt->nodes[i];
		if (!nd->has_tensor)
			continue;
		int64_t st[3], off = tinyc_sched_poly_value(s, &nd->t.lay.offset);
		for (int a = 0; a < 3; a++)
			st[a] = tinyc_sched_poly_value(s, &nd->t.lay.stride[a]);
		if (off < 0 || st[0] < 0 || st[1] < 0 || st[2] < 0)
			return TINYC_LONG;
		double far = off + (double)(ext[0] + 128) * st[0] + (double)(ext[1] + 128) * st[1] +
			     (double)ext[3] * st[2] + (double)(ext[0] + 128) * (ext[1] + 128) * ext[3];
		if (far > (double)lim)
			return TINYC_LONG;
	}
	return TINYC_INT;
}

/* Whether B's rows (the k rows of an n-major B) start off the 128-byte L2 lines: a TMA
 * box row of 128 bytes then touches two lines.  0 when aligned or unknown. */
static int b_rows_straddle(const tinyc_schedule *s, const tinyc_mm_problem *prob)
{
	int64_t pitch = tinyc_sched_poly_value(s, &prob->b.stride[0]), off = tinyc_sched_poly_value(s, &prob->b.offset);
	int64_t size = tinyc_dtype_size(prob->b.dtype);
	if (pitch < 0 || off < 0)
		return 0;
	return (pitch * size) % 128 != 0 || (off * size) % 128 != 0;
}

/* Fill the estimate of candidate mp on s. */
static void estimate(const tinyc_schedule *s, tinyc_mm_plan *mp, tinyc_plan *p)
{
	const tinyc_mm_problem *prob = &mp->prob;
	const tinyc_mm_tiles *t = &mp->t;
	double M = tinyc_sched_dim_est(s, &prob->m), N = tinyc_sched_dim_est(s, &prob->n);
	double K = tinyc_sched_dim_est(s, &prob->k), L = tinyc_sched_dim_est(s, &prob->l);
	double mt = ceil(M / t->bm), nt = ceil(N / t->bn);
	double instr = 1.0;	/* wgmma: the narrow instruction's factor */
	mp->flops = 2 * M * N * K * L;
	/* operand tiles are re-read once per tile row / column; the persistent wgmma kernel's
	 * rasterisation keeps a group's A panel and the swept B panels in L2: A is read once,
	 * B once per group of `raster` m tiles */
	double rd_a = t->variant == TINYC_MM_WGMMA ? 1 : nt;
	double rd_b = t->variant == TINYC_MM_WGMMA ? ceil(mt / t->raster) : mt;
	if (t->variant == TINYC_MM_TF32X3)	/* a row of n tiles runs at once: A once, B from L2 */
		rd_a = rd_b = 1;
	/* a conv's channels-last input: read once from DRAM, the window's re-reads from
	 * L1 (cp.async.ca) and L2, not the im2col matrix's M x K */
	double a_bytes = t->a_nhwc ? (double)t->nhwc.c * t->nhwc.p * t->nhwc.l / L : M * K * rd_a;
	mp->bytes = L * (a_bytes * tinyc_dtype_size(prob->a.dtype) +
			 K * N * tinyc_dtype_size(prob->b.dtype) * rd_b) +
		    epilogue_bytes(s, prob, M, N, L, t->bm, t->bn);
	double peak = t->variant == TINYC_MM_SIMT ? s->fp32_tflops : s->dev.peak_fp16_tflops;
	if (t->variant == TINYC_MM_TF32X3 || t->tf32x3)	/* tf32: half the fp16 rate, 3 mma a step */
		peak = s->dev.peak_fp16_tflops / 2 / 3;
	if (peak <= 0)
		peak = 1;
	mp->t_compute_us = mp->flops / (peak * 1e12) * 1e6;
	mp->t_memory_us = mp->bytes / (s->dev.peak_bandwidth_gbs * 1e9) * 1e6;
	if (t->variant == TINYC_MM_WGMMA || t->variant == TINYC_MM_TF32X3) {
		/* the SMs pull every operand tile from L2 (about 3x the DRAM bandwidth on an
		 * H100, 7.5 TB/s measured with 128x256 tiles): narrow tiles re-read more */
		/* clusters (B multicast) halve B's reads from L2.  Credited only where B's rows
		 * straddle L2 lines (each box row reads two, which this term does not count):
		 * there the single-CTA kernel is L2-bound (3000x5000x2000: 145 us against a
		 * compute bound of ~100) and the cluster measured faster; with aligned rows the
		 * shapes run at their compute bound, the halving gains nothing and the pair's
		 * coupling costs (WGMMA_CLUSTER_EFF below) */
		double b_l2 = K * N * tinyc_dtype_size(prob->b.dtype) * mt;
		if (t->cluster > 1 && b_rows_straddle(s, prob))
			b_l2 /= 2;
		double l2 = L * (M * K * tinyc_dtype_size(prob->a.dtype) * nt + b_l2);
		double t_l2 = l2 / (3.0 * s->dev.peak_bandwidth_gbs * 1e9) * 1e6;
		if (t_l2 > mp->t_memory_us)
			mp->t_memory_us = t_l2;
	}
	if (t->cluster > 1)	/* whole pairs of m tiles */
		mt = 2 * ceil(mt / 2);
	double util = (M * N) / (mt * t->bm * nt * t->bn);
	double ctas = mt * nt * L;
	double slots = (double)s->dev.sm_count * t->ctas_per_sm;
	double waves = ceil(ctas / slots);
	double wave_eff = ctas / (waves * slots);
	if (t->tail_split > 1)	/* stream-K: R full rounds, then the tail's shorter units */
		wave_eff = ctas / (tinyc_streamk_rounds(s, prob, t) * slots);
	if (t->variant == TINYC_MM_WGMMA) {
		/* persistent CTAs walk the tiles: the last round is partly idle; no block
		 * barriers; the ring hides load latency from 4 stages on; narrow instructions
		 * re-read A from shared memory (bandwidth); each tile's epilogue stalls its
		 * consumers for about 1.5 k tiles */
		double pipe = t->stages >= 4 ? 0.92 : t->stages == 3 ? 0.85 : 0.7;
		/* memory-bound (decode, few tiles, long K): each stage is one more k tile in
		 * flight per CTA; measured on an H100 (tinyc tune, graph replay): 64x4096x11008
		 * 52.2 / 44.4 / 39.2 us at 4 / 5 / 6 stages, 16x4096x4096 18.5 / 18.0 / 17.6,
		 * 512x4096x4096 26.3 / 24.9 / 24.9; with K = 1024 no gain (128x16384x1024:
		 * 9.6 us at 4 stages, 11.1 with 6 and another tile), so only for 32+ k tiles */
		if (t->stages >= 4 && mp->t_memory_us > mp->t_compute_us && ceil(K / t->bk) >= 32)
			pipe = t->stages >= 6 ? 0.98 : t->stages == 5 ? 0.95 : 0.92;
		if (t->swap)	/* decode's one tile a CTA: the ring is what is in flight */
			pipe = tinyc_swapab_pipe(s, t, ceil(K / t->bk));
		instr = t->wgn >= 256 ? 1.0 : t->wgn >= 128 ? 0.95 : 0.8;
		double kt = ceil(K / t->bk);
		/* pingpong: a consumer's epilogue runs under the other's main loop, all but the
		 * CTA's last when it has two tiles or more */
		double per_cta = ceil(ctas / (t->grid > 0 ? t->grid : 1));
		double epi = t->pingpong && per_cta >= 2 ? kt * per_cta / (kt * per_cta + 1.5)
							 : kt / (kt + 1.5);
		/* operands the producer's threads copy element by element (no TMA): one
		 * warpgroup keeps few loads in flight (measured: 15 TFLOP/s at 4097^3) */
		double copy = (t->a_tma ? 1.0 : t->a_nhwc ? 0.8 : 0.15) * (t->b_tma ? 1.0 : 0.15);
		/* NHWC: a 128-row tile doubles the chunks each producer thread gathers per stage;
		 * calibrated on two H100 measurements: the fp16 BasicBlock's convs take 56.1 +
		 * 86.8 us with 128 rows against 51.9 + 79.6 with 64, the stem (K = 392, fewer B
		 * re-reads with 128 rows) 112.5 against 167.8 */
		if (t->a_nhwc && t->bm >= 128)
			copy *= 0.85;
		p->eff = util * wave_eff * pipe * instr * epi * copy *
			 (t->consumers >= 2 ? 1.0 : 0.9) * (t->cluster > 1 ? WGMMA_CLUSTER_EFF : 1.0) *
			 (t->tf32x3 ? TF32WG_EFF * (t->bn == 64 ? TF32WG_EFF_N64 : 1.0) : 1.0);
	} else {
		/* the two-stage SIMT tile prefetches the next k tile into registers under the
		 * FMAs and reads its operands as 16-byte vectors from shared memory */
		double pipe = t->variant == TINYC_MM_SIMT || t->variant == TINYC_MM_TF32X3
				      ? (t->stages == 2 ? 0.85 : 0.6)
			      : t->stages == 1 ? 0.45
			      : t->stages == 2 ? 0.75
			      : t->stages == 3 ? 0.85
					       : 0.9;
		double occ = t->ctas_per_sm >= 2 ? 1.0 : 0.8;
		double kstep = t->bk / (t->bk + 8.0);	/* a barrier (and wait) per k tile */
		if ((t->variant == TINYC_MM_SIMT || t->variant == TINYC_MM_TF32X3) && t->stages == 2)
			kstep = 1.0;	/* the barrier waits on no load: it was issued a tile ago */
		/* mma.sync issues at about 60% of the warpgroup instructions' rate on sm_90 */
		double legacy = t->variant == TINYC_MM_MMA && s->dev.arch.major >= 9 ? 0.6 : 1.0;
		/* 3xTF32: the splits (5 instructions per fragment element) and an fp32 add per
		 * accumulator per k step beside the mma; H100 measured (docs/matmul-results.md),
		 * sm_8x a guess */
		if (t->variant == TINYC_MM_TF32X3)
			legacy = s->dev.arch.major >= 9 ? TF32X3_EFF_SM90 : 0.8;
		/* the 128x128 tile spills 64 bytes at two CTAs per SM: measured 3-15% slower than
		 * 128x64 at the GPT-2 shapes, 5% faster at 4096^3 */
		if (t->variant == TINYC_MM_TF32X3 && t->bn == 128)
			legacy *= 0.95;
		/* a bound operand whose rows are not 16-byte aligned takes the element loads */
		double elem = 1.0;
		/* the one-stage SIMT tile on a gathered fp32 operand (im2col): per element its
		 * window's address and guards; H100 measured 0.37 of the estimate without this
		 * (fp32 BasicBlock conv 762.5 us against 278.9, stem 748.6 against 289.0; fp16
		 * not measured) */
		if (t->variant == TINYC_MM_SIMT && fp32_operands(prob) &&
		    (prob->a.gather.on || prob->b.gather.on))
			elem = SIMT_GATHER_EFF;
		if (t->variant == TINYC_MM_MMA && (prob->tma_ok & TINYC_MM_SIZES_BOUND))
			elem = ((prob->tma_ok & TINYC_MM_TMA_A) ? 1.0 : 0.7) *
			       ((prob->tma_ok & TINYC_MM_TMA_B) ? 1.0 : 0.7);
		p->eff = util * wave_eff * pipe * occ * kstep * legacy * elem;
	}
	/* wgmma with one m tile (small M, decode): the rows the tile pads are zero-filled by
	 * TMA, never read, so the row utilisation slows the tensor cores, not the memory
	 * (M = 16 uses 1/4 of a 64-row tile's products but reads all of B; scaling both put
	 * 1 x 4096 x 4096 at 1728 us, measured 21) */
	double eff = p->eff > 1e-6 ? p->eff : 1e-6;
	double util_m = M / (mt * t->bm);
	double eff_mem = t->variant == TINYC_MM_WGMMA && mt == 1 ? eff / util_m : eff;
	/* split-K with whole m tiles (M >= 64): the narrow instruction re-reads A from shared
	 * memory, which costs tensor-core time, not DRAM time (H100, graph replay: 64 x 4096
	 * x 4096 split-K 2 of 64 x 64 tiles 11.0 us against split-K 4 of 64 x 128 12.95;
	 * with M = 8 or 16 the 64 x 64 tiles were slower, 16.3 against 11.0) */
	if (t->split > 1 && util_m >= 1.0)
		eff_mem /= instr;
	/* swap-AB: the narrow instruction and the padded tiles (tokens past M, columns past N:
	 * zero-filled by TMA, never read) cost tensor-core time, not DRAM time */
	if (t->swap)
		eff_mem = eff / (instr * util);
	double tc = mp->t_compute_us / eff, tm = mp->t_memory_us / eff_mem;
	p->est_us = (tc > tm ? tc : tm) + LAUNCH_US * (1 + reduction_count(prob));
	/* packing: each packed operand is read and written once more by its packing kernel
	 * (2-byte loads, 4-byte stores: about 60% of the bandwidth) */
	for (int i = 0; i < 2; i++) {
		if (!(i ? t->pack_b : t->pack_a))
			continue;
		tinyc_mm_operand po;
		int64_t n = tinyc_matmul_packed_operand(prob, t, s->bind ? s->bind->val : NULL, i, &po);
		double bytes = 2.0 * (n > 0 ? (double)n : 0) * tinyc_dtype_size(po.dtype);
		p->est_us += bytes / (0.6 * s->dev.peak_bandwidth_gbs * 1e9) * 1e6 + LAUNCH_US;
	}
	/* NHWC: the transpose kernel reads and writes the conv's input once */
	if (t->a_nhwc)
		p->est_us += tinyc_conv_nhwc_copy_us(s, &t->nhwc) + LAUNCH_US;
	/* stream-K: the tail's partials and fix-up */
	p->est_us += tinyc_streamk_fixup_us(s, t);
}

/* The variant the options record forces (TINYC_MATMUL), or -1. */
static int forced_variant(const tinyc_sched_options *o)
{
	const char *v = o->matmul;
	if (!v)
		return -1;
	if (!strcmp(v, "simt"))
		return TINYC_MM_SIMT;
	if (!strcmp(v, "mma"))
		return TINYC_MM_MMA;
	if (!strcmp(v, "wgmma"))
		return TINYC_MM_WGMMA;
	if (!strcmp(v, "gemv"))
		return TINYC_MM_GEMV;
	if (!strcmp(v, "tf32x3"))
		return TINYC_MM_TF32X3;
	if (!strcmp(v, "tf32wg"))	/* wgmma: its fp32 form is the 3xTF32 one */
		return TINYC_MM_WGMMA;
	return -1;
}

/* The tile the options record forces (TINYC_MATMUL_TILE=BMxBNxBK[xSTAGES[xSPLIT]]): 1 and
 * t[5] filled, else 0. */
static int forced_tile(const tinyc_sched_options *o, int t[5])
{
	memcpy(t, o->tile, sizeof(o->tile));
	return tinyc_sched_options_tile_forced(o);
}

/* The TINYC_MM_TMA_* bits of prob on s: every size bound; per operand, TMA can load it
 * (origin and non-unit strides multiples of 16 bytes, a contiguous stride 1). */
static int tma_aligned(const tinyc_schedule *s, const tinyc_mm_problem *prob)
{
	const tinyc_dim *d[4] = {&prob->m, &prob->n, &prob->k, &prob->l};
	for (int i = 0; i < 4; i++)
		if (tinyc_sched_dim(s, d[i]) < 1)
			return 0;
	int bits = TINYC_MM_SIZES_BOUND;
	const tinyc_mm_operand *op[2] = {&prob->a, &prob->b};
	for (int i = 0; i < 2; i++) {
		int es = tinyc_dtype_size(op[i]->dtype), ok = 1;
		if (es < 1 || 16 % es)
			continue;
		int64_t q = 16 / es, off = tinyc_sched_poly_value(s, &op[i]->offset);
		if (off < 0 || off % q)
			ok = 0;
		int unit = 0;
		for (int a = 0; a < 3 && ok; a++) {
			int64_t st = tinyc_sched_poly_value(s, &op[i]->stride[a]);
			if (st < 0)
				ok = 0;
			else if (a < 2 && st == 1 && !unit)
				unit = 1;
			else if (st % q && !(a == 2 && !(prob->evt && prob->evt->batched)))
				ok = 0;
		}
		if (ok && unit && !op[i]->gather.on)
			bits |= i ? TINYC_MM_TMA_B : TINYC_MM_TMA_A;
	}
	return bits;
}

tinyc_mm_plan *tinyc_matmul_plan_new(tinyc_ctx *ctx, const tinyc_mm_problem *prob,
				     const tinyc_mm_tiles *t, tinyc_plan *p)
{
	tinyc_mm_plan *mp = tinyc_calloc(ctx, 1, sizeof(*mp));
	if (!mp || tinyc_mm_problem_copy(ctx, prob, &mp->prob) < 0) {
		free(mp);
		return NULL;
	}
	mp->t = *t;
	mp->fused_into = -1;
	memset(p, 0, sizeof(*p));
	p->kind = TINYC_PLAN_MATMUL;
	p->block[0] = t->variant == TINYC_MM_SIMT ? 16 : t->threads;
	p->block[1] = t->variant == TINYC_MM_SIMT ? 16 : 1;
	p->block[2] = 1;
	p->index_dtype = t->index_dtype;
	p->ext = mp;
	p->ext_free = tinyc_mm_plan_free;
	return mp;
}

/* Add the plan of tiles tp for prob to k: its estimate (split > 1: that of the split
 * problem sp->prob plus the reduction's) and description.  1, or -1 on an error. */
static int add_plan(tinyc_ctx *ctx, const tinyc_schedule *s, tinyc_skernel *k,
		    const tinyc_mm_problem *prob, tinyc_mm_plan *sp, const tinyc_mm_tiles *tp,
		    int split, int dsk)
{
	tinyc_plan p;
	tinyc_mm_plan *mp = tinyc_matmul_plan_new(ctx, prob, tp, &p);
	if (!mp)
		return -1;
	if (split > 1 || tp->swap) {	/* the split (swapped) problem's estimate */
		sp->t = *tp;
		estimate(s, sp, &p);
		mp->flops = sp->flops, mp->bytes = sp->bytes;
		mp->t_compute_us = sp->t_compute_us, mp->t_memory_us = sp->t_memory_us;
		if (split > 1)
			p.est_us += tinyc_splitk_reduce_us(s, prob, tp);
	} else {
		estimate(s, mp, &p);
	}
	if (tp->variant == TINYC_MM_SIMT)
		snprintf(p.desc, sizeof(p.desc),
			 "matmul simt [%d,%d,%d] stages %d, 16x16 threads, "
			 "micro %dx%d%s, smem %" PRId64 " B, %d CTA/SM",
			 tp->bm, tp->bn, tp->bk, tp->stages, tp->tm, tp->tn, tp->stages == 2 ? " (4x4 quarters)" : "",
			 tp->smem, tp->ctas_per_sm);
	else if (tp->variant == TINYC_MM_TF32X3)
		snprintf(p.desc, sizeof(p.desc),
			 "matmul tf32x3 [%d,%d,%d] stages %d%s, warps %dx%d, 3xTF32 mma m16n8k8, "
			 "smem %" PRId64 " B dynamic, %d CTA/SM", tp->bm, tp->bn, tp->bk, tp->stages,
			 tp->a_nhwc ? " A nhwc" : "", tp->warps_m, tp->warps_n, tp->smem, tp->ctas_per_sm);
	else if (tp->variant == TINYC_MM_MMA)
		snprintf(p.desc, sizeof(p.desc),
			 "matmul mma [%d,%d,%d] stages %d%s, warps %dx%d, "
			 "smem %" PRId64 " B%s, %d CTA/SM",
			 tp->bm, tp->bn, tp->bk, tp->stages,
			 tp->stages > 1 ? " cp.async" : " sync", tp->warps_m,
			 tp->warps_n, tp->smem, tp->dyn_smem ? " dynamic" : "", tp->ctas_per_sm);
	else
		snprintf(p.desc, sizeof(p.desc),
			 "matmul wgmma [%d,%d,%d] stages %d %s%s, 1+%d warpgroups%s, m64n%d%s, "
			 "smem %" PRId64 " B, persistent %d CTAs%s%s",
			 tp->bm, tp->bn, tp->bk, tp->stages,
			 tp->a_nhwc ? "A nhwc cp.async, B packed"
			 : tp->pack_a && tp->pack_b ? "tma, A B packed" : tp->pack_a ? "tma, A packed"
			 : tp->pack_b ? "tma, B packed"
			 : tp->a_tma && tp->b_tma ? "tma" : tp->a_tma || tp->b_tma ? "tma+copy" : "copy",
			 tp->swap ? ", swap-AB W^T x X^T" : "",
			 tp->consumers, tp->pingpong ? " pingpong" : "", tp->wgn, tp->tf32x3 ? "k8 3xTF32" : "k16",
			 tp->smem, tp->grid, tp->cluster > 1 ? ", cluster 2x1" : "",
			 tp->tma_store ? (tp->tma_store > 1 ? ", TMA store x2" : ", TMA store") : "");
	if (tp->tail_split > 1) {
		size_t n = strlen(p.desc);
		snprintf(p.desc + n, sizeof(p.desc) - n, ", stream-K tail %d x %d (%.3g rounds)",
			 tp->tail_tiles, tp->tail_split, tinyc_streamk_rounds(s, prob, tp));
	}
	if (split > 1) {
		size_t n = strlen(p.desc);
		snprintf(p.desc + n, sizeof(p.desc) - n, ", split-K %d%s", split,
			 dsk ? " over a cluster (DSMEM sum)" : "");
	}
	if (tinyc_plan_add(ctx, k, &p) < 0) {
		tinyc_mm_plan_free(mp);
		return -1;
	}
	return 1;
}

/* Add the candidate (v, bm, bn, bk, st) of prob to k when its tiles are valid and match
 * the forced tile (ft, when have_ft).  1 added, 0 not, -1 on an error. */
static int add_candidate(tinyc_ctx *ctx, const tinyc_schedule *s, tinyc_skernel *k,
			 const tinyc_mm_problem *prob, tinyc_mm_variant v, int bm, int bn, int bk,
			 int st, int pp, int split, int have_ft, const int *ft, tinyc_dtype idx)
{
	const int64_t *sym = s->bind ? s->bind->val : NULL;
	int cl = pp >> 3 & 1;	/* wgmma: pp bit 3, clusters of 2 CTAs */
	int dsk = pp >> 4 & 1;	/* bit 4: split-K over a cluster (sched/splitk.c) */
	int swp = pp >> 5 & 1;	/* bit 5: the swapped problem's tiles (sched/swapab.c) */
	pp &= 7;
	if (have_ft && (ft[4] ? split != ft[4] : split > 1))
		return 0;
	/* split-K: the tiles and the estimate are the split problem's (sched/splitk.c) */
	tinyc_mm_plan sp;
	memset(&sp, 0, sizeof(sp));
	const tinyc_mm_problem *tp = prob;
	if (split > 1) {
		int r = tinyc_splitk_problem(ctx, prob, sym, split, -1, &sp.prob);
		if (r < 0)
			return r == -2 ? -1 : 0;
		sp.prob.tma_ok = prob->tma_ok;
		tp = &sp.prob;
	}
	/* swap-AB: the (split) problem swapped, C^T = B^T A^T (split first, so that the partials
	 * land where the original problem's reduction reads them) */
	if (swp) {
		tinyc_mm_problem sw;
		int r = v == TINYC_MM_WGMMA ? tinyc_mm_problem_swap(ctx, tp, sym, &sw) : -1;
		tinyc_mm_problem_clear(&sp.prob);
		if (r < 0)
			return r == -2 ? -1 : 0;
		sp.prob = sw;
		tp = &sp.prob;
	}
	/* NHWC (pp bit 2): the problem on the channels-last copy of the conv's input */
	tinyc_mm_problem np;
	tinyc_conv_nhwc nh;
	if ((v == TINYC_MM_WGMMA || v == TINYC_MM_TF32X3) && pp >= 4) {
		if (split > 1 || tinyc_conv_nhwc_problem(tp, sym, s->bind ? s->bind->n : 0, &np, &nh) < 0)
			return 0;
		prob = tp = &np;
	}
	tinyc_mm_tiles t;
	if (v == TINYC_MM_WGMMA ? wgmma_tiles(tp, &s->dev, sym, bm, bn, bk, st, pp % 2,
					      pp >= 4 ? 2 : pp / 2, swp, &t) < 0 ||
					  (cl && wgmma_cluster(tp, &s->dev, sym, &t) < 0) ||
					  (dsk && tinyc_splitk_dsmem_tiles(&s->dev, optin_limit(&s->dev),
									    split, &t) < 0)
				: tinyc_matmul_tiles(tp, &s->dev, sym, v, bm, bn, bk, st, &t) < 0) {
		tinyc_mm_problem_clear(&sp.prob);
		return 0;
	}
	/* a forced tile's 0 fields match any value for the swapped tiles (BN: the tokens) */
	if (have_ft && (((ft[0] || !swp) && t.bm != ft[0]) || ((ft[1] || !swp) && t.bn != ft[1]) ||
			((ft[2] || !swp) && t.bk != ft[2]) || (ft[3] && t.stages != ft[3]))) {
		tinyc_mm_problem_clear(&sp.prob);
		return 0;
	}
	const tinyc_sched_options *o = &s->opt;	/* pins of the wgmma schedule (tests) */
	if ((have_ft && o->wgmma_pp >= 0 && t.variant == TINYC_MM_WGMMA && t.pingpong != o->wgmma_pp) ||
	    (have_ft && o->wgmma_pack >= 0 && t.variant == TINYC_MM_WGMMA &&
	     (t.a_nhwc ? 2 : t.pack_a || t.pack_b) != o->wgmma_pack) ||
	    (o->wgmma_cluster >= 1 && t.variant == TINYC_MM_WGMMA &&
	     (t.cluster > 1 ? 2 : 1) != o->wgmma_cluster)) {
		tinyc_mm_problem_clear(&sp.prob);
		return 0;
	}
	if (t.variant == TINYC_MM_WGMMA)
		wgmma_knobs(o, &t);
	if (t.variant == TINYC_MM_TF32X3 && pp >= 4)	/* A by 16-byte loads of 4 channels */
		t.a_nhwc = 1;
	if (t.a_nhwc)
		t.nhwc = nh;
	t.no_stage = o->no_stage || swp;	/* swapped outputs: contiguous along the rows */
	t.no_pair = o->no_pair;
	t.pdl = t.variant == TINYC_MM_WGMMA && (o->pdl == 1 || (o->pdl < 0 && t.bm == 64));
	t.epi_preload = t.variant == TINYC_MM_WGMMA &&
			(o->epi_preload == 1 || (o->epi_preload < 0 && !swp));
	t.wait_hint = t.variant == TINYC_MM_WGMMA ? o->wait_hint : 0;
	t.index_dtype = idx;
	t.split = split > 1 ? split : 0;
	t.swap = swp;
	if (t.variant == TINYC_MM_WGMMA && o->tma_store == 1)
		wgmma_tma_store(&s->dev, &t);
	/* the mma and wgmma templates can sum their own partials (codegen/splitk.c); not by
	 * default: on an H100 the last warps' sums made the kernel 2.9 us slower at 8 x 4096 x
	 * 4096 (12.86 us graph replay) than the partials' kernel plus the reduction kernel
	 * (9.92 + 1.19 us); 1.2-1.8 us slower in all on the five split-K decode shapes */
	if (!dsk)	/* (the last warps' sum reads the partials in the tile's coordinates) */
		t.split_fused = split > 1 && (v == TINYC_MM_MMA || v == TINYC_MM_WGMMA) &&
				o->splitk_sum == 1 && !swp;
	/* the stream-K tail (sched/splitk.c): a twin of the plan beside it, or instead of it
	 * where the options record forces the split */
	tinyc_mm_tiles tt = t;
	int twin = split <= 1 && !swp && tinyc_streamk_tiles(s, prob, &tt) == 0;
	int r = twin && o->wgmma_streamk > 1 ? 1 : add_plan(ctx, s, k, prob, &sp, &t, split, dsk);
	if (r > 0 && twin)
		r = add_plan(ctx, s, k, prob, &sp, &tt, split, dsk);
	tinyc_mm_problem_clear(&sp.prob);
	return r;
}

/* The fitted width of bm-row wgmma tiles (clusters: pairs of m tiles) on prob, M >= 128:
 * where 256-column tiles leave the last round of persistent tiles partly idle, the
 * narrowest bn (a multiple of 8, 128 < bn < 256, not one of 64) whose tiles fill the same
 * number of rounds (cuBLASLt runs 128 x 232 tiles at 3000 x 5000 x 2000: 4 full rounds on
 * 132 SMs, where 128 x 256 takes 3.6 and 128 x 192 4.9).  0 when none.  (The caller
 * proposes it only where B's rows straddle L2 lines.) */
static int fitted_bn(const tinyc_mm_problem *prob, const tinyc_device_info *dev,
		     const int64_t *sym, int bm, int cluster)
{
	int64_t mv = prob->m.sym < 0 ? prob->m.val : sym ? sym[prob->m.sym] : -1;
	int64_t nv = prob->n.sym < 0 ? prob->n.val : sym ? sym[prob->n.sym] : -1;
	int64_t lv = prob->l.sym < 0 ? prob->l.val : sym ? sym[prob->l.sym] : -1;
	int64_t slots = cluster ? dev->sm_count / 2 * 2 : dev->sm_count;
	if (mv < 128 || nv < 1 || lv < 1 || slots < 1)	/* M < 128: the small-M plans */
		return 0;
	int64_t tm = (mv + bm - 1) / bm * lv;
	if (cluster)	/* whole pairs */
		tm = (tm + 1) / 2 * 2;
	int64_t rounds = (tm * ((nv + 255) / 256) + slots - 1) / slots;
	int64_t nt = rounds * slots / tm;	/* the most n tiles those rounds hold */
	if (nt < 1)
		return 0;
	int64_t bn = ((nv + nt - 1) / nt + 7) / 8 * 8;
	return bn > 128 && bn < 256 && bn % 64 ? (int)bn : 0;
}

/* The work of bm x bn tiles' rounds on `slots` persistent CTAs: whole rounds times a tile's
 * outputs. */
static double round_work(int64_t m, int64_t n, int64_t l, int bm, int bn, int64_t slots)
{
	int64_t tiles = (m + bm - 1) / bm * ((n + bn - 1) / bn) * l;
	return (double)((tiles + slots - 1) / slots) * bm * bn;
}

/* Whether 192 x 192 wgmma tiles (three consumers) are proposed for prob: only where they
 * take fewer rounds of persistent tiles, weighted by the tile's work, than 128 x 256 and
 * 128 x 192 (by 3% at least).  Measured on an H100 (graph replay, one run): 2048 x 11008
 * x 4096 289.7 us against 307.7 (5 rounds of 192 x 192 against 6 of 128 x 256); slower
 * where the rounds do not shrink: 8192 x 4096 x 4096 462.6 against 398.5 (8 rounds each),
 * 8192^3 1732.7 against about 1590 (15 rounds against 16), where the model's L2 term alone
 * favoured them. */
static int rows192_pay(const tinyc_schedule *s, const tinyc_mm_problem *prob)
{
	int64_t mv = tinyc_sched_dim(s, &prob->m), nv = tinyc_sched_dim(s, &prob->n);
	int64_t lv = tinyc_sched_dim(s, &prob->l), slots = s->dev.sm_count;
	if (mv < 1 || nv < 1 || lv < 1 || slots < 1)
		return 0;
	double w256 = round_work(mv, nv, lv, 128, 256, slots);
	double w128 = round_work(mv, nv, lv, 128, 192, slots);
	return round_work(mv, nv, lv, 192, 192, slots) < 0.97 * (w256 < w128 ? w256 : w128);
}

/* The swap-AB candidates of prob (sched/swapab.c): 128- and 64-row tiles of the swapped
 * problem (the weight's columns) by M rounded up to 8 tokens, rings of 11, 8, 6 and 4
 * stages (a forced tile's only), split-K 4, 2, 8 or none where K / split is a multiple of
 * 64 and at least 256 (a forced tile's split only), summed by the reduction kernel or,
 * with TINYC_SPLITK_SUM=3, over a cluster.  Ties of the estimate go to the earlier
 * candidate.  The number added, or -1. */
static int swapab_candidates(tinyc_ctx *ctx, const tinyc_schedule *s, tinyc_skernel *k,
			     const tinyc_mm_problem *prob, int have_ft, const int *ft, tinyc_dtype idx)
{
	static const int bms[] = {128, 64}, splits[] = {4, 2, 8, 1}, stg[] = {11, 8, 6, 4};
	int64_t M = tinyc_sched_dim(s, &prob->m), K = tinyc_sched_dim(s, &prob->k);
	int bn = tinyc_gemv_mma_tokens(M), added = 0, r;
	int dsk = s->opt.splitk_sum == 3 ? 2 : 1;
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 4; j++)
			for (int q = 0; q < 4; q++)
				for (int d = 0; d < dsk; d++) {
					int split = splits[j], st = have_ft && ft[3] ? ft[3] : stg[q];
					if ((have_ft && ft[3] && q) || (d && split < 2) ||
					    (split > 1 && (K % (64 * split) || K / split < 256)))
						continue;
					if ((r = add_candidate(ctx, s, k, prob, TINYC_MM_WGMMA, bms[i], bn, 64, st,
							       32 | (d ? 16 : 0), split, have_ft, ft, idx)) < 0)
						return -1;
					added += r;
				}
	return added;
}

/* The candidates of prob (see tinyc_matmul_candidates); use_tile: honour the forced tile. */
static int candidates(tinyc_ctx *ctx, const tinyc_schedule *s, tinyc_skernel *k,
		      const tinyc_mm_problem *prob0, int force, int use_tile)
{
	int ft[5], have_ft = use_tile && forced_tile(&s->opt, ft);
	static const int bms[] = {64, 128}, bks[] = {16, 32, 64}, stg[] = {1, 2, 3};
	tinyc_dtype idx = index_dtype(s, prob0);
	tinyc_mm_problem prob = *prob0;	/* shallow: the evt stays prob0's */
	prob.tma_ok = tma_aligned(s, prob0);
	int added = 0, r;
	int first = k->ncand;
	/* a bound M = 1 (decode): the gemv template, or none (the generic row reduction, as
	 * before the Poly-View took a bound unit m axis for a contraction) */
	int gemv = tinyc_gemv_applies(s, prob0);
	/* the tensor-core gemv (sched/gemv_mma.c), measured slower than swap-AB: only when the
	 * options record asks for it (TINYC_GEMV_MMA=1: for M >= 2, M = 1 keeping the FMA
	 * gemv measured at 1.15x cuBLASLt; 2: at any M <= 32, the FMA gemv not proposed) */
	int gemv_mma = s->opt.gemv_mma && tinyc_gemv_mma_applies(s, prob0) &&
		       (s->opt.gemv_mma == 2 || tinyc_sched_dim(s, &prob0->m) >= 2);
	if (s->opt.gemv_mma == 2)
		gemv = 0;
	/* the swap-AB wgmma plans (sched/swapab.c): by default (TINYC_WGMMA_SWAP=1) beside the
	 * other candidates for M >= 2, M = 1 keeping the measured FMA gemv; 2: alone, at any
	 * M <= 32; 0: never */
	int swap = s->opt.wgmma_swap && (force < 0 || force == TINYC_MM_WGMMA) &&
		   tinyc_swapab_applies(s, &prob) &&
		   (s->opt.wgmma_swap == 2 || tinyc_sched_dim(s, &prob0->m) >= 2);
	if (prob0->unit_axis && !gemv && !gemv_mma && !swap)
		return 0;
	if (swap) {
		if ((r = swapab_candidates(ctx, s, k, &prob, have_ft, ft, idx)) < 0)
			return -1;
		added += r;
		if (s->opt.wgmma_swap == 2 || (prob0->unit_axis && !gemv && !gemv_mma))
			return added > 0 && tinyc_tune_apply(s, k, first) < 0 ? -1 : added;
	}
	if (gemv && (force < 0 || force == TINYC_MM_GEMV)) {
		if ((r = tinyc_gemv_candidates(ctx, s, k, &prob, idx, have_ft ? ft : NULL)) < 0)
			return -1;
		added += r;
	}
	if (gemv_mma && (force < 0 || force == TINYC_MM_GEMV)) {
		if ((r = tinyc_gemv_mma_candidates(ctx, s, k, &prob, idx, have_ft ? ft : NULL)) < 0)
			return -1;
		added += r;
	}
	for (int v = 0; v < 3; v++) {
		if (force >= 0 && force != v)
			continue;
		if (v == TINYC_MM_WGMMA) {
			/* rings of 7 and 8 stages only for a forced tile (measurements) */
			static const int wbm[] = {128, 64, 192}, wbn[] = {256, 192, 128, 64},
					 wst[] = {4, 5, 6, 3, 7, 8};
			int nst = have_ft && ft[3] > 6 ? 6 : 4;
			/* 192-row tiles: 192 x 192 where it fills rounds better (rows192_pay), any
			 * width when forced */
			int r192 = rows192_pay(s, &prob);
			/* pp: pingpong (bit 0), packing (bit 1), NHWC (bit 2) */
			for (int pp = 0; pp < 6; pp++)
				for (int i = 0; i < 3; i++)
					for (int j = 0; j < 4; j++)
						for (int q = 0; q < nst; q++) {
							if (wbm[i] == 192 && !have_ft && (!r192 || wbn[j] != 192))
								continue;
							/* fp32: the 3xTF32 form's k tile of 32 */
							int wbk = fp32_operands(&prob) ? 32 : 64;
							if ((r = add_candidate(ctx, s, k, &prob, TINYC_MM_WGMMA, wbm[i],
									       wbn[j], wbk, wst[q], pp, 0, have_ft, ft,
									       idx)) < 0)
								return -1;
							added += r;
						}
			/* clusters of 2 CTAs (pp bit 3), cooperative and pingpong */
			for (int pp = 8; pp < 10; pp++)
				for (int i = 0; i < 3; i++)
					for (int j = 0; j < 4; j++)
						for (int q = 0; q < nst; q++) {
							if (wbm[i] == 192 && !have_ft && (!r192 || wbn[j] != 192))
								continue;
							if ((r = add_candidate(ctx, s, k, &prob, TINYC_MM_WGMMA, wbm[i],
									       wbn[j], 64, wst[q], pp, 0, have_ft, ft,
									       idx)) < 0)
								return -1;
							added += r;
						}
			/* fitted widths: 128-row cooperative tiles, single CTAs and clusters, only
			 * where B's rows straddle L2 lines anyway: elsewhere the tiles' B boxes
			 * (n0 = j x BN, not 128-byte aligned) would make them straddle (H100, graph
			 * replay: 2048 x 11008 x 4096 447 us with 128 x 232 against 293 with
			 * 128 x 256, 768 x 3072 x 768 10.2 with 128 x 144 against 8.7 with 128 x 192;
			 * 3000 x 5000 x 2000, a 10000-byte pitch, 108.2 with 128 x 232 clusters
			 * against 111.7 with 128 x 192).  A forced tile's width, when not one of
			 * 64, is taken as it is. */
			int fit = s->opt.wgmma_fit != 0 && b_rows_straddle(s, &prob);
			for (int cl = 0; cl < 2 && (fit || (have_ft && ft[1] % 64)); cl++) {
				int fbn = have_ft && ft[1] % 64 ? ft[1]
					  : fitted_bn(&prob, &s->dev, s->bind ? s->bind->val : NULL, 128, cl);
				for (int q = 0; fbn && q < nst; q++) {
					if ((r = add_candidate(ctx, s, k, &prob, TINYC_MM_WGMMA, 128, fbn, 64,
							       wst[q], cl ? 8 : 0, 0, have_ft, ft, idx)) < 0)
						return -1;
					added += r;
				}
			}
			continue;
		}
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 2; j++)
				for (int q = 0; q < 3; q++)
					for (int st = 0; st < 3; st++) {
						if ((r = add_candidate(ctx, s, k, &prob, (tinyc_mm_variant)v, bms[i], bms[j],
								       bks[q], stg[st], 0, 0, have_ft, ft, idx)) < 0)
							return -1;
						added += r;
					}
		if (v != TINYC_MM_MMA)
			continue;
		/* larger tiles and deeper rings in dynamic shared memory */
		static const int big[][2] = {{128, 128}, {128, 256}, {256, 128}};
		static const int bbk[] = {32, 64}, bst[] = {3, 4};
		for (int i = 0; i < 3; i++)
			for (int q = 0; q < 2; q++)
				for (int st = 0; st < 2; st++) {
					if (big[i][0] == 128 && big[i][1] == 128 && bst[st] == 3)
						continue;	/* in the set above */
					if ((r = add_candidate(ctx, s, k, &prob, TINYC_MM_MMA, big[i][0], big[i][1],
							       bbk[q], bst[st], 0, 0, have_ft, ft, idx)) < 0)
						return -1;
					added += r;
				}
	}
	/* fp32 on tensor cores (3xTF32): 128x128 and 128x64 tiles, k-step 16 (32 measured
	 * slower on the H100: one CTA per SM, 3834 against 2716 us at 4096^3).  A convolution
	 * (gathered A) on the channels-last copy of its input (A in 16-byte loads of 4
	 * channels); gathered element by element (228 registers) only when forced */
	int gathered = prob0->a.gather.on || prob0->b.gather.on;
	tinyc_mm_problem nprob;
	tinyc_conv_nhwc nh;
	int nhwc = gathered && tinyc_conv_nhwc_problem(&prob, s->bind ? s->bind->val : NULL,
						       s->bind ? s->bind->n : 0, &nprob, &nh) == 0;
	for (int q = 0; q < 2 && (force < 0 || force == TINYC_MM_TF32X3) &&
			(!gathered || nhwc || force == TINYC_MM_TF32X3); q++) {
		if ((r = add_candidate(ctx, s, k, &prob, TINYC_MM_TF32X3, 128, q ? 64 : 128, 16, 2,
				       nhwc ? 4 : 0, 0, have_ft, ft, idx)) < 0)
			return -1;
		added += r;
	}
	/* split-K where the output tiles are few: a small set of tiles per template */
	static const int splits[] = {2, 4};
	static const int sk[][5] = {	/* variant, bm, bn, bk, stages (wgmma: + pingpong) */
		{TINYC_MM_WGMMA, 64, 64, 64, 6}, {TINYC_MM_WGMMA, 64, 128, 64, 6},
		{TINYC_MM_WGMMA, 128, 128, 64, 4}, {TINYC_MM_MMA, 64, 64, 32, 3},
		{TINYC_MM_MMA, 128, 128, 32, 4}, {TINYC_MM_SIMT, 64, 64, 32, 1},
	};
	for (int i = 0; i < 2 && !prob0->unit_axis && tinyc_splitk_wanted(s, prob0); i++)
		for (int j = 0; j < 6; j++) {
			if (force >= 0 && force != sk[j][0])
				continue;
			if ((r = add_candidate(ctx, s, k, &prob, (tinyc_mm_variant)sk[j][0], sk[j][1], sk[j][2],
					       sk[j][3], sk[j][4], sk[j][0] == TINYC_MM_WGMMA && sk[j][1] == 64,
					       splits[i], have_ft, ft, idx)) < 0)
				return -1;
			added += r;
		}
	/* split-K over a cluster: cooperative 64-row tiles, one a CTA, the k ranges of a tile
	 * summed through distributed shared memory (sched/splitk.c).  By default only where
	 * it measured faster than the reduction kernel's plan (H100, graph replay): 64 x 64
	 * tiles in 2-CTA clusters with every row in M (64 x 4096 x 4096 11.41 -> 9.91 us,
	 * 64 x 4096 x 11008 35.54 -> 33.84); 4-CTA clusters (64 x 128, split 4) measured
	 * 1.4-1.7x slower and M = 8 / 16 (rows past M) 1.6x slower at K = 4096, so those only
	 * with TINYC_SPLITK_SUM=3 */
	static const int dk[][2] = {{64, 64}, {64, 128}};
	int dsk_all = s->opt.splitk_sum == 3;
	int64_t dm = tinyc_sched_dim(s, &prob0->m);
	for (int i = 0; i < 2 && (dsk_all || s->opt.splitk_sum == 0) &&
			(force < 0 || force == TINYC_MM_WGMMA) && !prob0->unit_axis &&
			tinyc_splitk_wanted(s, prob0); i++)
		for (int j = 0; j < 2; j++) {
			if (!dsk_all && (splits[i] != 2 || dk[j][1] != 64 || dm != 64))
				continue;
			if ((r = add_candidate(ctx, s, k, &prob, TINYC_MM_WGMMA, dk[j][0], dk[j][1], 64, 6,
					       16, splits[i], have_ft, ft, idx)) < 0)
				return -1;
			added += r;
		}
	if (added > 0 && tinyc_tune_apply(s, k, first) < 0)
		return -1;
	return added;
}

int tinyc_matmul_candidates(tinyc_ctx *ctx, const tinyc_schedule *s, tinyc_skernel *k,
			    const tinyc_mm_problem *prob, int force)
{
	return candidates(ctx, s, k, prob, force, 1);
}

/* ----------------------------------------------------------------- fusion ---- */

/* Whether node u is among the buffers the epilogue writes (its tensors' UOp nodes). */
static int graph_writes(const tinyc_evt *g, int u)
{
	for (int i = 0; i < g->n; i++)
		if (tinyc_evt_is_output(g->nodes[i].kind) && g->nodes[i].t.buf == u)
			return 1;
	return 0;
}

/* Append buffer b to k's inputs unless present. */
static int add_input(tinyc_ctx *ctx, tinyc_skernel *k, int b)
{
	for (int j = 0; j < k->nin; j++)
		if (k->in_bufs[j] == b)
			return 0;
	int *ni = tinyc_realloc(ctx, k->in_bufs, sizeof(int) * (size_t)(k->nin + 1));
	if (!ni)
		return -1;
	k->in_bufs = ni;
	ni[k->nin++] = b;
	return 0;
}

int tinyc_matmul_fuse(tinyc_ctx *ctx, tinyc_schedule *s, const tinyc_polyview *pv,
		      const tinyc_evt_entry *e)
{
	if (!e->g)
		return 0;
	const tinyc_evt *g = e->g;
	int r = e->reduce;
	/* the kernels taken over: those storing what the graph writes, and r's own */
	int first = -1, nclaim = 0;
	int *claim = tinyc_calloc(ctx, (size_t)s->nkern + 1, sizeof(int));
	if (!claim)
		return -1;
	for (int i = 0; i < s->nkern; i++) {
		int root = s->kerns[i].root;
		if (root == r || graph_writes(g, root)) {
			claim[i] = 1, nclaim++;
			if (first < 0)
				first = i;
		}
	}
	/* every output of the graph must have its kernel; a buffer of r that the graph does
	 * not write may only be read by kernels taken over */
	int ok = first >= 0;
	for (int i = 0; ok && i < g->n; i++)
		if (tinyc_evt_is_output(g->nodes[i].kind)) {
			int u = g->nodes[i].t.buf, found = 0;
			for (int kk = 0; kk < s->nkern; kk++)
				found |= claim[kk] && s->kerns[kk].root == u;
			ok &= found;
		}
	if (ok && s->node_buf[r] >= 0 && !graph_writes(g, r))
		for (int i = 0; i < s->nkern; i++)
			for (int j = 0; !claim[i] && j < s->kerns[i].nin; j++)
				ok &= s->kerns[i].in_bufs[j] != s->node_buf[r];
	if (!ok) {
		free(claim);
		return 0;
	}
	char why[256];
	tinyc_mm_problem prob;
	int pr = problem_of(ctx, s, pv, e, &prob, why, sizeof(why));
	if (pr == -1) {	/* the dump says why the contraction's kernel is not a matmul */
		tinyc_skernel *kr = &s->kerns[first];
		snprintf(kr->mm_why, sizeof(kr->mm_why), "contraction %%%s: %.150s", s->g->nodes[r].id, why);
	}
	if (pr < 0) {
		free(claim);
		return pr == -2 ? -1 : 0;
	}
	tinyc_skernel *k = &s->kerns[first];
	int rc = candidates(ctx, s, k, &prob, forced_variant(&s->opt), 1);
	if (rc == 0)	/* nothing valid matches what the options record forces */
		rc = candidates(ctx, s, k, &prob, -1, 0);
	if (rc > 0) {
		rc = add_input(ctx, k, prob.a.buf) < 0 || add_input(ctx, k, prob.b.buf) < 0 ? -1 : 0;
		for (int i = 0; rc == 0 && i < prob.evt->n; i++) {
			const tinyc_evt_node *nd = &prob.evt->nodes[i];
			if (nd->has_tensor && !tinyc_evt_is_output(nd->kind))
				rc = add_input(ctx, k, nd->t.buf);
		}
		for (int i = first + 1; rc == 0 && i < s->nkern; i++) {
			if (!claim[i])
				continue;
			tinyc_mm_plan *mp = tinyc_calloc(ctx, 1, sizeof(*mp));
			if (!mp) {
				rc = -1;
				break;
			}
			mp->fused_into = first;
			tinyc_plan p;
			memset(&p, 0, sizeof(p));
			p.kind = TINYC_PLAN_MATMUL;
			p.block[0] = p.block[1] = p.block[2] = 1;
			p.index_dtype = TINYC_INT;
			p.ext = mp;
			p.ext_free = tinyc_mm_plan_free;
			p.eff = 1;
			p.est_us = 0;
			snprintf(p.desc, sizeof(p.desc), "fused: written by the matmul epilogue of %s",
				 s->kerns[first].name);
			if (tinyc_plan_add(ctx, &s->kerns[i], &p) < 0) {
				tinyc_mm_plan_free(mp);
				rc = -1;
			}
		}
	}
	tinyc_mm_problem_clear(&prob);
	free(claim);
	return rc < 0 ? -1 : 0;
}

/* --------------------------------------------------------------- provider ---- */

/* Drop every candidate of k that is not a MATMUL plan, if k has MATMUL candidates. */
static void keep_matmul_only(tinyc_skernel *k)
{
	int have = 0;
	for (int c = 0; c < k->ncand; c++)
		have |= k->cands[c].kind == TINYC_PLAN_MATMUL;
	if (!have)
		return;
	int n = 0;
	for (int c = 0; c < k->ncand; c++) {
		if (k->cands[c].kind == TINYC_PLAN_MATMUL) {
			k->cands[n++] = k->cands[c];
		} else if (k->cands[c].ext_free) {
			k->cands[c].ext_free(k->cands[c].ext);
		}
	}
	k->ncand = n;
}

/* Analyse the graph of s (or take the module's Poly-View and epilogue graphs when the
 * schedule pass gave them) and take over the kernels of every fusable contraction. */
static int analyse(tinyc_ctx *ctx, tinyc_schedule *s)
{
	int any = 0;
	for (int i = 0; i < s->g->n && !any; i++)
		any = s->g->nodes[i].op == TINYC_OP_REDUCE && s->g->nodes[i].redop == TINYC_RED_ADD;
	if (!any)
		return 0;
	/* the module's stages, or an analysis of our own */
	const tinyc_polyview *pv = s->pv;
	const tinyc_evt_set *set = s->evts;
	tinyc_indexbook *ib = NULL;
	tinyc_polyview *own_pv = NULL;
	tinyc_evt_set *own_set = NULL;
	if (!pv || !set) {
		ib = tinyc_indexbook_build(ctx, s->g, s->bind);
		own_pv = ib ? tinyc_polyview_build(ctx, ib, NULL) : NULL;
		own_set = own_pv ? tinyc_evt_extract(ctx, own_pv) : NULL;
		pv = own_pv, set = own_set;
	}
	int rc = set ? 0 : -1;
	for (int i = 0; set && rc == 0 && i < set->n; i++)
		rc = tinyc_matmul_fuse(ctx, s, pv, &set->e[i]);
	tinyc_evt_set_free(own_set);
	tinyc_polyview_free(own_pv);
	tinyc_indexbook_free(ib);
	return rc;
}

/* The provider: analysis on the first kernel, generic candidates dropped where MATMUL
 * candidates exist. */
static int matmul_propose(tinyc_ctx *ctx, tinyc_schedule *s, tinyc_skernel *k)
{
	if (k == s->kerns && analyse(ctx, s) < 0)
		return -1;
	keep_matmul_only(k);
	return 0;
}

/* The dump lines of a chosen matmul plan: tiles, binding, epilogue. */
static void matmul_print_plan(const tinyc_schedule *s, const tinyc_skernel *k, tinyc_buf *out)
{
	const tinyc_plan *p = tinyc_skernel_plan(k);
	if (p && p->kind == TINYC_PLAN_MATMUL)
		tinyc_matmul_plan_print(s, p, out);
}

/* Why a contraction kernel did not get a matmul plan. */
static void matmul_print_notes(const tinyc_schedule *s, const tinyc_skernel *k, tinyc_buf *out)
{
	const tinyc_plan *p = tinyc_skernel_plan(k);
	(void)s;
	if (k->mm_why[0] && (!p || p->kind != TINYC_PLAN_MATMUL))
		tinyc_buf_printf(out, "  not a matmul: %s\n", k->mm_why);
}

const tinyc_plan_provider tinyc_plan_matmul = {
	"matmul", matmul_propose, NULL, NULL, matmul_print_plan, matmul_print_notes,
};

/* ------------------------------------------------------------------- dump ---- */

/* Print a dim. */
static void print_dim(const tinyc_schedule *s, const tinyc_dim *d, tinyc_buf *out)
{
	if (d->sym >= 0)
		tinyc_buf_puts(out, s->g->syms[d->sym]);
	else
		tinyc_buf_printf(out, "%" PRId64, d->val);
}

/* "X:half strides (K, 1, 0)" */
static void print_operand(const tinyc_schedule *s, const tinyc_mm_operand *op, tinyc_buf *out)
{
	tinyc_buf_printf(out, "%s:%s strides (", s->bufs[op->buf].name, tinyc_dtype_name(op->dtype));
	for (int a = 0; a < 3; a++) {
		if (a)
			tinyc_buf_puts(out, ", ");
		tinyc_evt_poly_print(&op->stride[a], s->g->syms, s->g->nsym, out);
	}
	tinyc_buf_putc(out, ')');
	if (!tinyc_evt_poly_is_zero(&op->offset)) {
		tinyc_buf_puts(out, " offset ");
		tinyc_evt_poly_print(&op->offset, s->g->syms, s->g->nsym, out);
	}
	tinyc_conv_print_gather(&op->gather, out);
}

void tinyc_matmul_plan_print(const tinyc_schedule *s, const tinyc_plan *p, tinyc_buf *out)
{
	const tinyc_mm_plan *mp = p->ext;
	if (!mp)
		return;
	if (mp->fused_into >= 0) {
		tinyc_buf_printf(out, "  fused: no kernel of its own; %s writes its buffer\n",
				 s->kerns[mp->fused_into].name);
		return;
	}
	const tinyc_mm_tiles *t = &mp->t;
	const tinyc_mm_problem *pr = &mp->prob;
	tinyc_buf_puts(out, "  matmul: C[l,m,n] = sum_k A[m,k] * B[k,n], M=");
	print_dim(s, &pr->m, out);
	tinyc_buf_puts(out, " N=");
	print_dim(s, &pr->n, out);
	tinyc_buf_puts(out, " K=");
	print_dim(s, &pr->k, out);
	tinyc_buf_puts(out, " L=");
	print_dim(s, &pr->l, out);
	tinyc_buf_printf(out, "; mul %s, acc %s\n", tinyc_dtype_name(pr->mul),
			 tinyc_dtype_name(pr->acc));
	tinyc_buf_puts(out, "  A = ");
	print_operand(s, &pr->a, out);
	tinyc_buf_puts(out, " (m, k, l); B = ");
	print_operand(s, &pr->b, out);
	tinyc_buf_puts(out, " (k, n, l)\n");
	tinyc_buf_printf(out, "  tile [BM,BN,BK] = [%d,%d,%d], stages %d", t->bm, t->bn, t->bk,
			 t->stages);
	if (t->variant == TINYC_MM_GEMV && t->gemv_mma) {
		tinyc_gemv_mma_plan_print(t, out);
	} else if (t->variant == TINYC_MM_GEMV) {
		tinyc_gemv_plan_print(t, out);
	} else if (t->variant == TINYC_MM_WGMMA) {
		tinyc_buf_puts(out, " (TMA ring: a full and an empty mbarrier per stage, phase parity "
			       "as the async token)\n");
		if (t->swap)
			tinyc_swapab_plan_print(t, out);
		tinyc_buf_printf(out, "  bind: persistent grid of %d CTAs over the tiles (l, m.o, n.o) in "
				 "groups of %d m tiles (L2 rasterisation)%s; warpgroups: 1 producer (%s), ",
				 t->grid, t->raster, t->cluster > 1 ? ", clusters of 2 CTAs on m tiles 2p, 2p+1 "
				 "sharing B (each CTA loads half of B's boxes, multicast to both; a stage is "
				 "released when both CTAs' consumers arrive)" : "",
				 t->a_tma && t->b_tma ? "one thread issues TMA" : "its threads copy, one issues TMA");
		if (t->pingpong)
			tinyc_buf_printf(out, "2 consumers alternating whole tiles (pingpong: one's epilogue "
					 "under the other's main loop), %d x ", t->bm / 64);
		else
			tinyc_buf_printf(out, "%d consumers of 64 rows, ", t->consumers);
		if (t->tf32x3)
			tinyc_buf_printf(out, "3xTF32: the producer's threads split each landed stage into "
					 "hi (in place) and lo tiles, 3 wgmma m64n%dk8 .tf32 per k step "
					 "(lo*hi, hi*lo, hi*hi) into a fresh fragment added to the "
					 "accumulators per k tile (fp32 accuracy; the two consumers' groups "
					 "overlap)",
					 t->wgn);
		else
			tinyc_buf_printf(out, "wgmma m64n%dk16 from 128 B-swizzled shared tiles, one wgmma "
					 "group in flight", t->wgn);
		if (t->regs_consumer)
			tinyc_buf_printf(out, "; setmaxnreg %d/%d", t->regs_producer, t->regs_consumer);
		tinyc_buf_putc(out, '\n');
		const char *copy = "copied by the producer's threads (rows not 16-byte aligned: element "
				   "loads into the swizzled layout, fence.proxy.async)";
		tinyc_conv_chain_print(s, t, out);	/* NHWC store, or input stored NHWC */
		if (t->a_nhwc && !t->nhwc.stored_by)
			tinyc_buf_printf(out, "  nhwc: A's input rearranged channels-last first (x[%lld][%lld][%lld] "
					 "-> [l][p][c] by a transpose kernel%s), k ordered window then "
					 "channels\n", (long long)t->nhwc.l, (long long)t->nhwc.c_in,
					 (long long)t->nhwc.p, t->nhwc.c_in < t->nhwc.c ? ", channels padded "
					 "with zeros to 8" : "");
		const char *cp16 = "gathered by the producer's threads in 16-byte cp.async chunks of 8 "
				   "channels (zero-filled in the padding) into the swizzled layout, "
				   "cp.async.wait_group + fence.proxy.async, then the arrival a stage later";
		tinyc_buf_printf(out, "  loads: A %s%s, B %s%s, zero fill outside the matrices\n",
				 t->a_tma ? "TMA " : "",
				 t->a_nhwc ? cp16 : !t->a_tma ? copy : t->a_kmajor ? "box [64 k x BM m] (k-major)"
						: "boxes [64 m x 64 k] (m-major, transposed in the descriptor)",
				 t->b_tma ? "TMA " : "",
				 !t->b_tma ? copy : t->b_kmajor ? "box [64 k x BN n] (k-major)"
						: "boxes [64 n x 64 k] (n-major, transposed in the descriptor)");
		for (int i = 0; i < 2; i++) {
			tinyc_mm_operand po;
			if (!(i ? t->pack_b : t->pack_a) ||
			    tinyc_matmul_packed_operand(pr, t, s->bind ? s->bind->val : NULL, i, &po) < 0)
				continue;
			const tinyc_mm_operand *op = i ? &pr->b : &pr->a;
			int mmaj = !i && op->gather.on && !t->a_kmajor;
			tinyc_buf_printf(out, "  pack: %s (%s) copied first by a packing kernel into a "
					 "workspace of strides (", i ? "B" : "A",
					 mmaj ? "im2col, m-major: read and written along m"
					 : i && t->a_nhwc ? "k in the NHWC order"
					 : op->gather.on ? "im2col" : "rows not 16-byte aligned");
			for (int a = 0; a < 3; a++) {
				if (a)
					tinyc_buf_puts(out, ", ");
				tinyc_evt_poly_print(&po.stride[a], s->g->syms, s->g->nsym, out);
			}
			tinyc_buf_puts(out, "), rows padded to 16 bytes; TMA reads it\n");
		}
	} else if (t->variant == TINYC_MM_SIMT && t->stages == 2)
		tinyc_buf_puts(out, " (register prefetch of the next k tile, one barrier per k tile; "
			       "A stored k-major, 16-byte shared loads)\n");
	else if (t->variant == TINYC_MM_TF32X3)
		tinyc_buf_puts(out, " (register prefetch of the next k tile, one barrier per k tile; "
			       "fp32 in shared memory, rows of BK + 8)\n  3xTF32: fragments split in "
			       "registers into hi = tf32(x), lo = tf32(x - hi) (round to nearest, ties "
			       "away); acc += a_lo b_hi + a_hi b_lo + a_hi b_hi in fp32 (fp32 accuracy)\n");
	else if (t->variant == TINYC_MM_SIMT)
		tinyc_buf_puts(out, " (synchronous: load, barrier, compute, barrier)\n");
	else
		tinyc_buf_printf(out, " (%s)\n", t->stages > 1 ? "cp.async ring" : "synchronous");
	if (t->variant != TINYC_MM_WGMMA && t->variant != TINYC_MM_GEMV)
		tinyc_buf_puts(out, "  bind: n.o -> block.x, m.o -> block.y, l -> block.z; ");
	if (t->variant == TINYC_MM_WGMMA || t->variant == TINYC_MM_GEMV)
		;	/* printed above */
	else if (t->variant == TINYC_MM_SIMT)
		tinyc_buf_printf(out, "threads (16, 16): n.i -> thread.x (micro %d%s), m.i -> "
				 "thread.y (micro %d%s)\n", t->tn, t->stages == 2 ? ": 4 + 4 at +64" : "",
				 t->tm, t->stages == 2 ? ": 4 + 4 at +64" : "");
	else if (t->variant == TINYC_MM_TF32X3)
		tinyc_buf_printf(out, "warps %dx%d (m x n), warp tile %dx%d, mma.sync m16n8k8 tf32 %dx%dx3 "
				 "per warp, 8-byte shared loads of k pairs\n", t->warps_m, t->warps_n,
				 t->bm / t->warps_m, t->bn / t->warps_n, t->bm / t->warps_m / 16,
				 t->bn / t->warps_n / 8);
	else
		tinyc_buf_printf(out, "warps %dx%d (m x n), warp tile %dx%d, mma.sync m16n8k16 %dx%d per "
				 "warp, ldmatrix A / ldmatrix.trans B\n", t->warps_m, t->warps_n,
				 t->bm / t->warps_m, t->bn / t->warps_n, t->bm / t->warps_m / 16,
				 t->bn / t->warps_n / 8);
	if (t->variant == TINYC_MM_WGMMA || t->variant == TINYC_MM_GEMV)
		;	/* printed above */
	else if (t->variant == TINYC_MM_MMA)
		tinyc_buf_printf(out, "  loads: A %s, B %s\n",
				 t->async_a ? "cp.async 16 B chunks (when sizes align, else element loads)"
					    : "element loads (transposed into the tile)",
				 t->async_b ? "cp.async 16 B chunks (when sizes align, else element loads)"
					    : "element loads (transposed into the tile)");
	else if (t->variant == TINYC_MM_TF32X3 && t->a_nhwc)
		tinyc_buf_printf(out, "  nhwc: A's input rearranged channels-last first (x[%lld][%lld][%lld] "
				 "-> [l][p][c] by a transpose kernel), k ordered window then channels\n"
				 "  loads: A 16-byte loads of 4 channels of a pixel (zero in the padding), "
				 "B element loads in the same k order, zero-filling predicates\n",
				 (long long)t->nhwc.l, (long long)t->nhwc.c, (long long)t->nhwc.p);
	else
		tinyc_buf_puts(out, "  loads: cooperative, coalesced along each operand's contiguous "
				    "axis, zero-filling predicates\n");
	if (t->split > 1 && t->split_fused == 2)
		tinyc_buf_printf(out, "  split-K %d over a cluster: the k ranges of K / %d are the %d CTAs of a "
				 "cluster (one tile a CTA); each stores its fp32 partials in its shared memory, "
				 "then sums 1/%d of the tile's columns over the cluster's CTAs in rank order "
				 "(distributed shared memory) and runs the epilogue: deterministic, one kernel\n",
				 t->split, t->split, t->split, t->split);
	else if (t->split > 1 && tinyc_splitk_fused(t))
		tinyc_buf_printf(out, "  split-K %d: the k ranges of K / %d are the template's batch l; fp32 "
				 "partials into a workspace [%d, M, N]; per warp an arrival counter, and the "
				 "tile's last warp sums them in l order and runs the epilogue: deterministic, "
				 "one kernel\n", t->split, t->split, t->split);
	else if (t->split > 1)
		tinyc_buf_printf(out, "  split-K %d: the k ranges of K / %d are the template's batch l; fp32 "
				 "partials into a workspace [%d, M, N], then a reduction kernel sums them in "
				 "l order and runs the epilogue: deterministic (no atomics)\n", t->split,
				 t->split, t->split);
	if (t->tail_split > 1)
		tinyc_streamk_print(s, pr, t, out);
	tinyc_buf_puts(out, "  predicate_tail:");
	if (t->pred_m)
		tinyc_buf_puts(out, " m");
	if (t->pred_n)
		tinyc_buf_puts(out, " n");
	if (t->pred_k)
		tinyc_buf_puts(out, " k");
	if (!t->pred_m && !t->pred_n && !t->pred_k)
		tinyc_buf_puts(out, " none");
	double lim = t->variant == TINYC_MM_WGMMA ? optin_limit(&s->dev) - 1024
		     : SMEM_FRACTION * (t->dyn_smem ? optin_limit(&s->dev) : s->dev.smem_per_block);
	tinyc_buf_printf(out, "\n  resources: smem %" PRId64 " B/CTA%s (limit %.0f), ~%d regs/thread, "
			 "%d threads, occupancy %d CTA/SM; index %s\n", t->smem,
			 t->dyn_smem || t->variant == TINYC_MM_WGMMA ? " dynamic" : "", lim, t->regs,
			 t->threads, t->ctas_per_sm, tinyc_dtype_name(t->index_dtype));
	if (mp->tuned_us > 0)
		tinyc_buf_printf(out, "  tuned: measured %.2f us on this device by tinyc tune (tuning "
				 "cache), chosen over the model's estimate\n", mp->tuned_us);
	const tinyc_evt *g = pr->evt;
	tinyc_buf_printf(out, "  epilogue: in registers on the accumulator after the k loop, %d nodes, "
			 "visit", g ? g->n : 0);
	int order[256], n = g && g->n <= 256 ? tinyc_evt_visit_order(g, order) : 0;
	for (int i = 0; i < n; i++)
		tinyc_buf_printf(out, " %d", order[i]);
	tinyc_buf_putc(out, '\n');
	for (int i = 0; g && i < g->n; i++) {
		const tinyc_evt_node *nd = &g->nodes[i];
		const char *tn = nd->has_tensor ? nd->t.name : "";
		switch (nd->kind) {
		case TINYC_EVT_AUX_STORE:
			tinyc_buf_printf(out, "    store %s: one predicated write per element\n", tn);
			break;
		case TINYC_EVT_ROW_BCAST:
		case TINYC_EVT_COL_BCAST:
			tinyc_buf_printf(out, "    load %s: %s, once per thread before the epilogue "
					 "(vector loads where contiguous and aligned)\n", tn,
					 nd->kind == TINYC_EVT_ROW_BCAST ? "row vector" : "column vector");
			break;
		case TINYC_EVT_SCALAR_BCAST:
			if (nd->has_tensor)
				tinyc_buf_printf(out, "    load %s: scalar, once per thread\n", tn);
			break;
		case TINYC_EVT_SRC_FETCH:
		case TINYC_EVT_AUX_LOAD:
			tinyc_buf_printf(out, "    load %s: full tensor, predicated, per element\n", tn);
			break;
		case TINYC_EVT_ROW_RED:
		case TINYC_EVT_COL_RED:
		case TINYC_EVT_SCALAR_RED: {
			const char *sh = nd->kind == TINYC_EVT_ROW_RED
						 ? (t->variant == TINYC_MM_SIMT ? "xor 16" : "xor 4 8 16")
					 : nd->kind == TINYC_EVT_COL_RED
						 ? (t->variant == TINYC_MM_SIMT ? "xor 1 2 4 8" : "xor 1 2")
						 : "xor 1 2 4 8 16";
			tinyc_buf_printf(out, "    reduce %s (%s %s in %s): thread -> warp shuffle (%s) -> "
					 "shared memory -> per-CTA partials in a workspace -> final pass "
					 "kernel summing them in tile order: deterministic (no atomics)\n",
					 tn, tinyc_evt_kind_name(nd->kind), tinyc_redop_name(nd->redop),
					 tinyc_dtype_name(nd->compute), sh);
			break;
		}
		default:
			break;
		}
	}
	tinyc_buf_printf(out, "  estimate: %.4g flop, %.4g bytes: compute %.2f us, memory %.2f us, "
			 "eff %.3f -> %.2f us\n", mp->flops, mp->bytes, mp->t_compute_us,
			 mp->t_memory_us, p->eff, p->est_us);
}
