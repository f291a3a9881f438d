/* Split-K for few-tile shapes (decode M = 8..64 against N = 4096, small M x N with long K):
 * the output tiles are fewer than the SMs, so each tile's k loop alone is the kernel.
 *
 * A split-K plan runs the contraction as a batch of `split` products over consecutive k
 * ranges (the batch axis l of the templates: A and B offset by l * K / split along k),
 * whose epilogue stores each fp32 accumulator tile into a workspace ws[l][m][n]; a second
 * kernel (codegen/splitk.c) sums the partials of each element in l order and runs the
 * contraction's own epilogue graph on the sum.  Deterministic: no atomics, a fixed order.
 * Every template takes the split problem unchanged (its batch support), so the same plans
 * and their GPU IR interpreter runs test it.
 *
 * Cost: the split problem's estimate (more CTAs, K / split each) plus the reduction kernel
 * (split x M x N fp32 read once, the epilogue's tensors, a launch).
 *
 * Summed in the kernel (tiles.split_fused, opt-in: TINYC_SPLITK_SUM=1; the mma and wgmma
 * templates): no reduction kernel; each warp counts its arrival on its tile's counter and
 * the last sums the partials in the same l order (codegen/splitk.c).  Measured slower on an
 * H100 (docs/matmul-results.md): its cost is the partials' bytes plus a serial tail.
 *
 * The stream-K tail (tiles.tail_split, opt-in: TINYC_WGMMA_STREAMK; the persistent wgmma
 * kernel, codegen/matmul.c and codegen/splitk.c): where the tiles fill R full rounds of
 * the persistent CTAs and a last one of T tiles, only those T are split along K, s units
 * each, so that the last round's work spreads over T s CTAs; a unit stores its fp32
 * partial tile into a workspace and the tile's last arriving warp (the counters above)
 * sums the s partials in k order and runs the epilogue.  One kernel, deterministic.
 *
 *   rounds  = R + ceil(T s / W) * ceil(kt / s) / kt   (W walkers, kt k tiles a tile)
 *   time    = the plan's estimate at the waves those rounds make (instead of R + 1)
 *             + the partials' bytes (s stored, s - 1 loaded per tail tile, from L2 at
 *             the share of the SMs the tail keeps busy) + a fix-up latency
 *
 * s: 2..8 with at least 4 k tiles a unit, the fewest tail k tiles (ties: the smaller s);
 * only where the last round is at most half full (T <= W / 2).  2048 x 11008 x 4096 with
 * 128 x 256 tiles: 688 tiles = 5 rounds of 132 + 28; s = 4 (112 units of 16 of the 64 k
 * tiles): 5.25 rounds against 6.  Measured on an H100 (session 11): 310.7 us against the
 * plain kernel's 311.3 there, slower at 4097^3 and 64 x 11008 x 4096; so off by default.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "sched/matmul.h"

#define SPLITK_LAUNCH_US 2.0	/* one kernel launch (as sched/matmul.c) */
#define SPLITK_TAIL_US 3.0	/* the last warps' serial tail: fence, atomic, the partials'
				 * loads, the epilogue (H100, 8 x 4096 x 4096, split-K 4: the
				 * kernel 12.86 us against 9.92 for the partials alone) */

#define SPLITK_DSMEM_US 0.3	/* split-K over a cluster: the partials to shared memory,
				 * two cluster barriers, the peers' slices (H100: the kernel
				 * 0.1-0.3 us over the reduction plan's partials kernel at
				 * 64 x 4096 x 4096 / 11008, 64 x 64 tiles, split 2) */

#define STREAMK_MAX_SPLIT 8	/* the tail's units per tile: the last warps' loads grow with s */
#define STREAMK_MIN_KTILES 4	/* k tiles a unit at least (the model's choice) */
#define STREAMK_FIX_US 1.0	/* the fix-up's latency: fence, counter round trip, the
				 * dependent loads and the epilogue of the tail's tiles (a
				 * guess, SPLITK_TAIL_US's order less the loads counted) */
#define STREAMK_L2_X 3.0	/* L2 bandwidth over DRAM's (H100: ~7.5 TB/s measured with
				 * 128 x 256 tiles against 3.35 nominal DRAM, as sched/matmul.c) */

/* The value of dim d under sym, or -1. */
static int64_t dim_value(const tinyc_dim *d, const int64_t *sym)
{
	return d->sym < 0 ? d->val : sym ? sym[d->sym] : -1;
}

int tinyc_splitk_problem(tinyc_ctx *ctx, const tinyc_mm_problem *prob, const int64_t *sym,
			 int split, int ws_buf, tinyc_mm_problem *out)
{
	int64_t M = dim_value(&prob->m, sym), N = dim_value(&prob->n, sym);
	int64_t K = dim_value(&prob->k, sym), L = dim_value(&prob->l, sym);
	if (split < 2 || M < 1 || N < 1 || L != 1 || K < 1 || K % ((int64_t)split * 64) ||
	    prob->a.gather.on || prob->b.gather.on || !prob->evt || prob->evt->batched ||
	    prob->acc != TINYC_FLOAT)
		return -1;
	for (int i = 0; i < prob->evt->n; i++)
		if (tinyc_evt_is_reduction(prob->evt->nodes[i].kind))
			return -1;
	*out = *prob;
	out->evt = NULL;
	int64_t kc = K / split;
	out->k = (tinyc_dim){kc, -1};
	out->l = (tinyc_dim){split, -1};
	tinyc_evt_poly kcp = tinyc_evt_poly_const(kc);
	if (tinyc_evt_poly_mul(&kcp, &prob->a.stride[1], &out->a.stride[2]) < 0 ||
	    tinyc_evt_poly_mul(&kcp, &prob->b.stride[0], &out->b.stride[2]) < 0)
		return -1;
	tinyc_evt *g = tinyc_evt_alloc(ctx, TINYC_FLOAT);
	if (!g)
		return -2;
	g->batched = 1;
	tinyc_evt_layout lay;
	memset(&lay, 0, sizeof(lay));
	lay.stride[0] = tinyc_evt_poly_const(N);
	lay.stride[1] = tinyc_evt_poly_const(1);
	lay.stride[2] = tinyc_evt_poly_const(M * N);
	lay.offset = tinyc_evt_poly_const(0);
	int acc = tinyc_evt_acc_fetch(ctx, g);
	int st = tinyc_evt_store(ctx, g, "ws", ws_buf, TINYC_FLOAT, &lay);
	if (acc < 0 || st < 0 || tinyc_evt_set_edges(ctx, g, st, 1, &acc) < 0 ||
	    tinyc_evt_set_symbols(ctx, g, prob->evt->nsym, (const char *const *)prob->evt->syms) < 0 ||
	    tinyc_evt_run_passes(ctx, g) < 0) {
		tinyc_evt_free(g);
		return -2;
	}
	out->evt = g;
	return 0;
}

int tinyc_splitk_dsmem_tiles(const tinyc_device_info *dev, double smem_limit, int split,
			     tinyc_mm_tiles *t)
{
	int64_t red = (int64_t)t->bm * t->bn * 4;	/* the fp32 partials of the tile */
	int tiles = t->grid;	/* the split problem's tiles, when below the SMs */
	if (t->variant != TINYC_MM_WGMMA || t->consumers != 1 || t->pingpong || t->cluster > 1 ||
	    !t->a_tma || !t->b_tma || t->pack_a || t->pack_b || t->a_nhwc || t->tf32x3 ||
	    split < 2 || split > 8 || (t->bn / 8) % split || tiles % split ||
	    tiles >= dev->sm_count || (double)(t->smem + red) > smem_limit - 1024)
		return -1;
	t->split_fused = 2;
	t->smem += red;
	return 0;
}

int tinyc_splitk_fused(const tinyc_mm_tiles *t)
{
	return t->split > 1 && t->split_fused;
}

double tinyc_splitk_reduce_us(const tinyc_schedule *s, const tinyc_mm_problem *prob,
			      const tinyc_mm_tiles *t)
{
	int split = t->split;
	double M = tinyc_sched_dim_est(s, &prob->m), N = tinyc_sched_dim_est(s, &prob->n);
	double bytes = (double)split * M * N * 4;
	for (int i = 0; prob->evt && i < prob->evt->n; i++) {
		const tinyc_evt_node *nd = &prob->evt->nodes[i];
		if (nd->has_tensor)
			bytes += (nd->kind == TINYC_EVT_ROW_BCAST ? N : nd->kind == TINYC_EVT_COL_BCAST ? M
				  : M * N) * tinyc_dtype_size(nd->t.dtype);
	}
	/* in the kernel: the last warps read the partials (L2-resident, at DRAM speed here)
	 * after their tile's other CTAs; the tail is one counter round trip, the partials'
	 * loads and the epilogue's stores, one after another */
	if (t->split_fused == 2)	/* the cluster's sum: shared memory, two barriers */
		return (bytes - (double)split * M * N * 4) / (s->dev.peak_bandwidth_gbs * 1e9) * 1e6 +
		       SPLITK_DSMEM_US;
	if (tinyc_splitk_fused(t))
		return bytes / (s->dev.peak_bandwidth_gbs * 1e9) * 1e6 + SPLITK_TAIL_US;
	/* 256 threads per 16 x 64 tile, one 4-byte load in flight per partial */
	double ctas = ceil(M / 16) * ceil(N / 64);
	double eff = tinyc_plan_inflight_eff(s, ctas * 256, 4.0 * split);
	return bytes / (s->dev.peak_bandwidth_gbs * 1e9) * 1e6 / (eff > 0.05 ? eff : 0.05) +
	       SPLITK_LAUNCH_US;
}

int tinyc_splitk_wanted(const tinyc_schedule *s, const tinyc_mm_problem *prob)
{
	int64_t M = tinyc_sched_dim(s, &prob->m), N = tinyc_sched_dim(s, &prob->n);
	int64_t K = tinyc_sched_dim(s, &prob->k), L = tinyc_sched_dim(s, &prob->l);
	if (M < 1 || N < 1 || K < 1 || L != 1 || K % 128 || K / 128 < 8 || !prob->evt ||
	    prob->evt->batched)
		return 0;
	for (int i = 0; i < prob->evt->n; i++)
		if (tinyc_evt_is_reduction(prob->evt->nodes[i].kind))
			return 0;
	/* at most half the SMs busy with 64 x 128 tiles: splitting at least doubles the CTAs
	 * (H100, graph replay: 16 x 4096 x 4096 17.5 -> 10.9 us with 4 splits; but 86 tiles
	 * at 16 x 11008 x 4096 went 33.8 -> 35.8 us) */
	int64_t tiles = ((M + 63) / 64) * ((N + 127) / 128);
	return 2 * tiles <= (int64_t)s->dev.sm_count;
}

/* The walkers' tiles of wgmma tiles t on prob (clusters: pairs of m tiles) and the walkers
 * (t->grid CTAs, / 2 with clusters); k tiles per tile.  -1 when a size is unbound. */
static int streamk_shape(const tinyc_schedule *s, const tinyc_mm_problem *prob,
			 const tinyc_mm_tiles *t, int64_t *units, int64_t *walkers, int64_t *kt)
{
	int64_t M = tinyc_sched_dim(s, &prob->m), N = tinyc_sched_dim(s, &prob->n);
	int64_t K = tinyc_sched_dim(s, &prob->k);
	int CL = t->cluster > 1 ? 2 : 1;
	if (M < 1 || N < 1 || K < 1 || t->bm < 1 || t->bn < 1 || t->bk < 1)
		return -1;
	int64_t tm = (M + t->bm - 1) / t->bm, tn = (N + t->bn - 1) / t->bn;
	*units = (CL > 1 ? (tm + 1) / 2 : tm) * tn;
	*walkers = t->grid / CL;
	*kt = (K + t->bk - 1) / t->bk;
	return *walkers >= 1 ? 0 : -1;
}

int tinyc_streamk_tiles(const tinyc_schedule *s, const tinyc_mm_problem *prob, tinyc_mm_tiles *t)
{
	const tinyc_sched_options *o = &s->opt;
	int CL = t->cluster > 1 ? 2 : 1;
	if (o->wgmma_streamk < 1 || t->variant != TINYC_MM_WGMMA || t->tf32x3 || t->a_nhwc ||
	    t->split > 1 || tinyc_sched_dim(s, &prob->l) != 1 || !prob->evt || prob->evt->batched)
		return -1;
	tinyc_mm_tiles st = *t;
	int forced = o->wgmma_streamk > 1;
	if (forced && o->wgmma_streamk_grid > 0 && o->wgmma_streamk_grid < st.grid)
		st.grid = o->wgmma_streamk_grid / CL * CL;	/* fewer CTAs: a tail at small sizes */
	int64_t units, walkers, kt;
	if (st.grid < CL || streamk_shape(s, prob, &st, &units, &walkers, &kt) < 0)
		return -1;
	int64_t R = units / walkers, T = units % walkers;
	if (R < 1 || T < 1)
		return -1;
	int split = 0;
	if (forced) {
		split = o->wgmma_streamk;
		if (kt < split)
			return -1;
	} else {
		if (2 * T > walkers)	/* the last round more than half full */
			return -1;
		int64_t best = kt;
		for (int sp = 2; sp <= STREAMK_MAX_SPLIT && kt / sp >= STREAMK_MIN_KTILES; sp++) {
			int64_t r = (T * sp + walkers - 1) / walkers * ((kt + sp - 1) / sp);
			if (r < best)
				best = r, split = sp;
		}
		if (!split)
			return -1;
	}
	st.tail_split = split;
	st.tail_tiles = (int)T;
	*t = st;
	return 0;
}

double tinyc_streamk_rounds(const tinyc_schedule *s, const tinyc_mm_problem *prob,
			    const tinyc_mm_tiles *t)
{
	int64_t units, walkers, kt;
	if (streamk_shape(s, prob, t, &units, &walkers, &kt) < 0)
		return 1;
	int64_t R = units / walkers, T = units % walkers, sp = t->tail_split;
	if (sp < 2 || !T)
		return (double)((units + walkers - 1) / walkers);
	return (double)R + (double)((T * sp + walkers - 1) / walkers) * (double)((kt + sp - 1) / sp) /
				   (double)kt;
}

double tinyc_streamk_fixup_us(const tinyc_schedule *s, const tinyc_mm_tiles *t)
{
	if (t->tail_split < 2)
		return 0;
	double tiles = (double)t->tail_tiles * (t->cluster > 1 ? 2 : 1), sp = t->tail_split;
	double bytes = tiles * (2 * sp - 1) * t->bm * t->bn * 4;
	double busy = tiles * sp < t->grid ? tiles * sp : t->grid;
	double share = s->dev.sm_count > 0 ? busy / s->dev.sm_count : 1;
	return bytes / (STREAMK_L2_X * s->dev.peak_bandwidth_gbs * 1e9 * (share > 0.05 ? share : 0.05)) *
	       1e6 + STREAMK_FIX_US;
}

void tinyc_streamk_print(const tinyc_schedule *s, const tinyc_mm_problem *prob,
			 const tinyc_mm_tiles *t, tinyc_buf *out)
{
	int64_t units, walkers, kt;
	if (t->tail_split < 2 || streamk_shape(s, prob, t, &units, &walkers, &kt) < 0)
		return;
	int64_t R = units / walkers, T = units % walkers, sp = t->tail_split;
	const char *w = t->cluster > 1 ? "pairs of tiles" : "tiles";
	char len[48];
	if (kt % sp)
		snprintf(len, sizeof(len), "%" PRId64 "-%" PRId64, kt / sp, kt / sp + 1);
	else
		snprintf(len, sizeof(len), "%" PRId64, kt / sp);
	tinyc_buf_printf(out, "  stream-K tail: %" PRId64 " %s on %" PRId64 " walkers: %" PRId64
			 " full round%s (whole K, the epilogue in registers), then the last %" PRId64
			 " %s split along K into %" PRId64 " units each (%" PRId64 " units of %s of the %"
			 PRId64 " k tiles); a unit stores its fp32 partial tile into a workspace [tile, k "
			 "range, BM x BN], per warp an arrival counter, the tile's last warp sums the %"
			 PRId64 " partials in k order (its own from registers) and runs the epilogue: "
			 "deterministic, one kernel; %.3g rounds against %" PRId64 "\n",
			 units, w, walkers, R, R == 1 ? "" : "s", T, T > 1 ? w : t->cluster > 1 ? "pair of tiles"
			 : "tile", sp, T * sp, len, kt, sp,
			 tinyc_streamk_rounds(s, prob, t), R + 1);
}
