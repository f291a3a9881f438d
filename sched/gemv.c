/* The small-M (GEMV) contraction plan (variant gemv of sched/matmul.h): decode's products
 * of a few rows of X (M = 1 .. 4) with a weight matrix B[k, n] stored n-contiguous.
 *
 * The kernel is memory-bound: it must read B once, as fast as DRAM delivers it.  A CTA of
 * 256 threads owns BN output columns; its threads form a grid of BN / 8 column lanes by
 * 256 / (BN / 8) k lanes: thread (r, c) reads the 16-byte vector B[kr, n0 + 8c .. + 8] of
 * every k row kr = r, r + K_STEP, .. (K_STEP = 256 / (BN / 8)), `unroll` rows per step,
 * the next step's loads issued before this step's products (a two-step register ring, so
 * `unroll` loads per thread stay in flight), and keeps M x 8 fp32 accumulators.  Rows of X are
 * read as scalars (the same address for the column lanes: one transaction).  After the k
 * loop the k lanes of a column are summed in a fixed order (warp shuffles, then the warps'
 * partials through shared memory) and the epilogue graph runs on the summed tile: the
 * result is deterministic, there is no workspace and no second kernel.
 *
 * Tiles: bm = the M rows rounded up to a multiple of the rows the final layout covers
 * (256 / BN), bn = BN in {16, 32, 64, 128}, bk = K_STEP, stages = unroll in {2, 4, 8}.
 * Cost: bytes = B once + A once per CTA (from L2, counted at a tenth) + the epilogue;
 * flops on the fp32 CUDA cores (one conversion per B element besides the M products);
 * efficiency = the fraction of DRAM bandwidth the loads in flight sustain (Little's law:
 * resident threads x unroll x 16 bytes, tinyc_plan_inflight_eff), capped by the share of
 * the SMs in use, x the last wave's fill x the use of the 128-byte lines a CTA's rows of B
 * touch (bn x 2 bytes of each).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/matmul.h"

#define GEMV_THREADS 256	/* threads per CTA */
#define GEMV_MAX_M 4		/* rows of X kept in registers (M x 8 accumulators); H100,
				 * graph replay: M = 1 at 0.78-0.84x cuBLASLt, M = 8 slower
				 * than wgmma at N or K = 11008 (52.7 / 84.5 against 36.9 /
				 * 47.5 us), M = 16 at 0.4x wgmma: the fp32 products bind;
				 * at 8 / 16 x 4096 x 4096 1.24x / 2.05x split-K wgmma's
				 * time (measured with the bound raised to 16) */
#define GEMV_LAUNCH_US 2.0	/* one kernel launch (as sched/matmul.c) */
#define GEMV_LATENCY_X 2.0	/* the loaded latency these loads see, in units of the
				 * model's DRAM latency: H100, 1 x 11008 x 4096, [4,64,32]
				 * with 21 KB in flight per SM 35.1 us, with 43 KB (unroll 8)
				 * 32.5, [8,32,64] unroll 4 (43 KB) 33.0 */

/* The bound value of dim d, or -1. */
static int64_t bound(const tinyc_schedule *s, const tinyc_dim *d)
{
	return tinyc_sched_dim(s, d);
}

/* The value of a size polynomial under s's bindings, or -1. */
int64_t tinyc_sched_poly_value(const tinyc_schedule *s, const tinyc_evt_poly *p)
{
	int64_t v;
	if (tinyc_evt_poly_eval(p, s->bind ? s->bind->val : NULL, s->bind ? s->bind->n : 0, &v) < 0)
		return -1;
	return v;
}

/* What both gemv forms need of prob (sched/matmul.h). */
int tinyc_gemv_b_fits(const tinyc_schedule *s, const tinyc_mm_problem *prob)
{
	int64_t M = bound(s, &prob->m), N = bound(s, &prob->n), K = bound(s, &prob->k);
	int64_t L = bound(s, &prob->l);
	if (M < 1 || N < 1 || K < 1 || L < 1 || L > 65535)
		return 0;
	if (prob->acc != TINYC_FLOAT || prob->a.gather.on || prob->b.gather.on)
		return 0;
	/* B n-contiguous, rows and origin 16-byte aligned, N a multiple of 8: every vector
	 * of 8 columns is aligned and lies wholly inside or outside the matrix */
	if (!tinyc_evt_poly_is_const(&prob->b.stride[1], 1) || N % 8)
		return 0;
	int64_t rs = tinyc_sched_poly_value(s, &prob->b.stride[0]);
	int64_t off = tinyc_sched_poly_value(s, &prob->b.offset);
	int64_t ls = tinyc_sched_poly_value(s, &prob->b.stride[2]);
	if (rs < 0 || rs % 8 || off < 0 || off % 8 || ls < 0 || ls % 8)
		return 0;
	for (int i = 0; prob->evt && i < prob->evt->n; i++)
		if (tinyc_evt_is_reduction(prob->evt->nodes[i].kind))
			return 0;	/* the tile is summed once; no partials to combine */
	return 1;
}

int tinyc_gemv_applies(const tinyc_schedule *s, const tinyc_mm_problem *prob)
{
	int64_t M = bound(s, &prob->m);
	if (M > GEMV_MAX_M || !tinyc_gemv_b_fits(s, prob))
		return 0;
	if (prob->b.dtype != TINYC_HALF && prob->b.dtype != TINYC_BFLOAT16)
		return 0;
	if (prob->mul != TINYC_HALF && prob->mul != TINYC_BFLOAT16 && prob->mul != TINYC_FLOAT)
		return 0;
	return 1;
}

int tinyc_gemv_tiles(const tinyc_schedule *s, const tinyc_mm_problem *prob, int bn, int unroll,
		     tinyc_mm_tiles *t)
{
	memset(t, 0, sizeof(*t));
	if (!tinyc_gemv_applies(s, prob) || bn < 16 || bn > 128 || (bn & (bn - 1)) ||
	    (unroll != 2 && unroll != 4 && unroll != 8))
		return -1;
	int64_t M = bound(s, &prob->m);
	int rows = GEMV_THREADS / bn;	/* rows the final layout covers per pass */
	t->variant = TINYC_MM_GEMV;
	t->threads = GEMV_THREADS;
	t->bm = (int)((M + rows - 1) / rows * rows);
	t->bn = bn;
	t->bk = GEMV_THREADS / (bn / 8);
	t->stages = unroll;
	/* shared memory: every warp's partial tile */
	t->smem = (int64_t)(GEMV_THREADS / 32) * t->bm * bn * 4;
	if ((double)t->smem > 0.8 * s->dev.smem_per_block)
		return -1;
	/* H100, ptxas at M = 1: 64 registers at unroll 8, 40 at unroll 4 */
	t->regs = (int)M * 8 + unroll * 4 + 24;
	return tinyc_gemv_occupancy(s, prob, t);
}

/* The occupancy and tails of gemv tiles (sched/matmul.h). */
int tinyc_gemv_occupancy(const tinyc_schedule *s, const tinyc_mm_problem *prob, tinyc_mm_tiles *t)
{
	int64_t M = bound(s, &prob->m), N = bound(s, &prob->n), K = bound(s, &prob->k);
	if (t->regs > 255)
		return -1;
	int by_threads = s->dev.max_threads_per_sm / t->threads;
	int by_regs = s->dev.regs_per_sm / (((t->regs + 7) / 8 * 8) * t->threads);
	int by_smem = (int)(s->dev.smem_per_sm / t->smem);
	t->ctas_per_sm = by_threads < by_regs ? by_threads : by_regs;
	if (by_smem < t->ctas_per_sm)
		t->ctas_per_sm = by_smem;
	if (t->ctas_per_sm < 1)
		return -1;
	t->pred_m = M % t->bm != 0;
	t->pred_n = N % t->bn != 0;
	t->pred_k = K % ((int64_t)t->bk * t->stages) != 0;
	return 0;
}

double tinyc_mm_epilogue_once_bytes(const tinyc_mm_problem *prob, double M, double N, double L)
{
	double bytes = 0;
	for (int i = 0; prob->evt && i < prob->evt->n; i++) {
		const tinyc_evt_node *nd = &prob->evt->nodes[i];
		if (nd->has_tensor)
			bytes += (nd->kind == TINYC_EVT_ROW_BCAST ? N : nd->kind == TINYC_EVT_COL_BCAST ? M
				  : M * N) * L * tinyc_dtype_size(nd->t.dtype);
	}
	return bytes;
}

/* The estimate of gemv tiles t for prob on s (see the file comment). */
static void gemv_estimate(const tinyc_schedule *s, tinyc_mm_plan *mp, tinyc_plan *p)
{
	const tinyc_mm_problem *prob = &mp->prob;
	const tinyc_mm_tiles *t = &mp->t;
	double M = tinyc_sched_dim_est(s, &prob->m), N = tinyc_sched_dim_est(s, &prob->n);
	double K = tinyc_sched_dim_est(s, &prob->k), L = tinyc_sched_dim_est(s, &prob->l);
	double ctas = ceil(N / t->bn) * L;
	mp->flops = 2 * M * N * K * L;
	double epi = tinyc_mm_epilogue_once_bytes(prob, M, N, L);
	mp->bytes = L * K * N * tinyc_dtype_size(prob->b.dtype) +
		    0.1 * ctas * M * K * tinyc_dtype_size(prob->a.dtype) + epi;
	/* M products and one conversion per B element, on the fp32 cores */
	double peak = s->fp32_tflops > 0 ? s->fp32_tflops : 1;
	mp->t_compute_us = (mp->flops + 2 * N * K * L) / (peak * 1e12) * 1e6;
	mp->t_memory_us = mp->bytes / (s->dev.peak_bandwidth_gbs * 1e9) * 1e6;
	double waves;
	p->eff = tinyc_gemv_stream_eff(s, prob, t, ctas, t->stages * 16.0 / GEMV_LATENCY_X, &waves);
	double tt = mp->t_compute_us > mp->t_memory_us ? mp->t_compute_us : mp->t_memory_us;
	/* the k-lane sums and the epilogue: a few microseconds-tenths per CTA wave */
	p->est_us = tt / (p->eff > 1e-6 ? p->eff : 1e-6) + 0.5 * waves + GEMV_LAUNCH_US;
}

/* The share of DRAM bandwidth of streaming gemv tiles (sched/matmul.h). */
double tinyc_gemv_stream_eff(const tinyc_schedule *s, const tinyc_mm_problem *prob,
			     const tinyc_mm_tiles *t, double ctas, double inflight_thread, double *waves)
{
	double slots = (double)s->dev.sm_count * t->ctas_per_sm;
	double resident = (ctas < slots ? ctas : slots) * t->threads;
	double inflight = tinyc_plan_inflight_eff(s, resident, inflight_thread);
	*waves = ceil(ctas / slots);
	/* a partial last wave costs its share only where the CTAs are long-lived; the k loop
	 * of a CTA is the whole kernel here */
	double wave_eff = ctas / (*waves * slots);
	if (*waves == 1)
		wave_eff = 1.0;
	/* fewer CTAs than SMs: part of the idle SMs' share of the bandwidth is lost; a busy SM
	 * draws more than its share (H100, 64 CTAs of 64 columns, unroll 8: 1.19x the time of
	 * 128 CTAs of 32 at 1 x 4096 x 4096, 1.32x at 1 x 4096 x 11008, not 2x) */
	double fill = ctas < s->dev.sm_count ? sqrt(ctas / s->dev.sm_count) : 1.0;
	/* a CTA's row of B under 128 bytes touches part of each 128-byte line, the rest of
	 * which other CTAs fetch at other times (H100, unroll 8, 1 x 11008 x 4096: 64 / 32 /
	 * 16 columns 32.5 / 33.9 / 41.5 us; 1 x 4096 x 4096: 32 / 16 columns 7.9 / 11.8 us) */
	double row_bytes = t->bn * tinyc_dtype_size(prob->b.dtype);
	double line = row_bytes >= 128 ? 1.0 : row_bytes >= 64 ? 0.95 : 0.72;
	/* two caps, not a product: the loads in flight already count only the busy SMs */
	return (inflight < fill ? inflight : fill) * wave_eff * line;
}

/* Tiles t as a candidate of k (sched/matmul.h). */
int tinyc_gemv_add(tinyc_ctx *ctx, const tinyc_schedule *s, tinyc_skernel *k,
		   const tinyc_mm_problem *prob, const tinyc_mm_tiles *t,
		   void (*estimate)(const tinyc_schedule *s, tinyc_mm_plan *mp, tinyc_plan *p),
		   const char *desc)
{
	tinyc_plan p;
	tinyc_mm_plan *mp = tinyc_matmul_plan_new(ctx, prob, t, &p);
	if (!mp)
		return -1;
	estimate(s, mp, &p);
	snprintf(p.desc, sizeof(p.desc), "%s", desc);
	if (tinyc_plan_add(ctx, k, &p) < 0) {
		tinyc_mm_plan_free(mp);
		return -1;
	}
	return 0;
}

int tinyc_gemv_candidates(tinyc_ctx *ctx, const tinyc_schedule *s, tinyc_skernel *k,
			  const tinyc_mm_problem *prob, tinyc_dtype idx, const int *ft)
{
	static const int bns[] = {16, 32, 64, 128}, unrolls[] = {4, 8, 2};
	int added = 0;
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 3; j++) {
			tinyc_mm_tiles t;
			if (tinyc_gemv_tiles(s, prob, bns[i], unrolls[j], &t) < 0)
				continue;
			if (ft && (t.bn != ft[1] || (ft[3] && t.stages != ft[3])))
				continue;
			t.index_dtype = idx;
			char desc[sizeof(((tinyc_plan *)0)->desc)];
			snprintf(desc, sizeof(desc),
				 "matmul gemv [%d,%d,%d] unroll %d, %d threads (%d k x %d column lanes), "
				 "16 B loads of B, smem %" PRId64 " B, %d CTA/SM",
				 t.bm, t.bn, t.bk, t.stages, t.threads, t.bk, t.bn / 8, t.smem,
				 t.ctas_per_sm);
			if (tinyc_gemv_add(ctx, s, k, prob, &t, gemv_estimate, desc) < 0)
				return -1;
			added++;
		}
	return added;
}

void tinyc_gemv_plan_print(const tinyc_mm_tiles *t, tinyc_buf *out)
{
	tinyc_buf_printf(out, " (unroll: %d k rows of B per step; the next step's loads in flight "
			 "under this step's products)\n", t->stages);
	tinyc_buf_printf(out, "  bind: n.o -> block.x, l -> block.z; %d threads = %d k lanes x %d "
			 "column lanes of 8 columns, the k rows strided by %d\n", t->threads, t->bk,
			 t->bn / 8, t->bk);
	tinyc_buf_printf(out, "  loads: B 16-byte vectors (8 columns), zero outside the matrix; A "
			 "scalars, fp32 accumulators (rows of X) x 8 per thread; the summed tile %d x %d\n",
			 t->bm, t->bn);
	tinyc_buf_printf(out, "  k sums: warp shuffles over the k lanes, then %d warps' partials "
			 "through shared memory in warp order: deterministic, one kernel\n",
			 t->threads / 32);
}
