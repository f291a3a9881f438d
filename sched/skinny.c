/* The skinny tensor-core tile (variant mma with warps_k > 1): decode's products of a few
 * rows of X (M = 2 .. 64) with a weight matrix B[k, n], in one kernel.
 *
 * The mma template (codegen/matmul.c) with a tile of BM = 16, 32 or 64 rows (M padded with
 * zero rows) by BN = 16 .. 64 columns and a k tile of BK = 128 or 256: the cp.async ring
 * brings A's and B's k tiles into shared memory (B n-contiguous, its fragments by
 * ldmatrix.trans), and the CTA's 8 warps split each k tile's 16-wide steps among them
 * (warp w takes steps w, w + 8, ..), each accumulating the whole BM x BN tile.  After the
 * k loop the warps' fp32 partials go through shared memory, every thread sums its share of
 * them in warp order (deterministic), and warp 0 runs the epilogue graph on the sum: no
 * workspace, no second kernel.  With few rows the grid is N / BN CTAs (x M / BM): 128 or
 * 256 CTAs at N = 4096, each streaming K x BN of B through a ring of `stages` k tiles.
 *
 * Cost: B read once per m tile and A once per n tile (from L2), the epilogue; the time is
 * the bytes over the DRAM bandwidth scaled by the share the ring's bytes in flight sustain
 * (Little's law, tinyc_plan_inflight_eff), the SMs in use and the last wave, plus the sum
 * and the epilogue's tail and one launch.  Proposed where every size is bound, M <= 64,
 * both operands half or bfloat16 (fp32 accumulation) with A k-contiguous and B
 * n-contiguous, 16-byte aligned (cp.async chunks of 8 elements, K and N multiples of 8;
 * each thread's chunks are addressed once, before the k loop), sm_80 or later, and the
 * epilogue has no
 * reductions (it runs on one warp, which must not wait at a barrier).
 */
#include <math.h>
#include <string.h>

#include "sched/matmul.h"

#define SKINNY_WARPS_K 8	/* warps splitting a k tile (256 threads) */
#define SKINNY_MAX_M 64		/* decode shapes: more rows take the ordinary tiles */
#define SKINNY_LAUNCH_US 2.0	/* one kernel launch (as sched/matmul.c) */
#define SKINNY_TAIL_US 0.5	/* the partials' sum and the epilogue on one warp */
#define SKINNY_LATENCY_X 2.0	/* the loaded latency of the ring's copies, in units of the
				 * model's DRAM latency (as the gemv plan's loads) */
#define SMEM_FRACTION 0.8	/* shared memory kept under this share of the opt-in limit */
#define SKINNY_EFF 0.8		/* measured against the split-K wgmma plan's estimate (H100,
				 * graph replay, docs/matmul-results.md): 11.4 / 13.0 us at
				 * 8 / 16 x 4096 x 4096 (split-K 10.9 / 10.8), 38.9 / 43.4 at
				 * 8 / 16 x 4096 x 11008 (33.3 / 33.7), 44.7 at 8 x 11008 x
				 * 4096 (35.9): every row of A is re-read by each of the N / BN
				 * CTAs, where split-K's 64 x 128 tiles read it 32 times */

int tinyc_skinny_applies(const tinyc_schedule *s, const tinyc_mm_problem *prob)
{
	int64_t M = tinyc_sched_dim(s, &prob->m), N = tinyc_sched_dim(s, &prob->n);
	int64_t K = tinyc_sched_dim(s, &prob->k), L = tinyc_sched_dim(s, &prob->l);
	if (prob->unit_axis || M < 2 || M > SKINNY_MAX_M || N < 1 || K < 1 || L < 1 || L > 65535)
		return 0;
	if (s->dev.arch.major < 8 || prob->a.dtype != prob->b.dtype ||
	    (prob->a.dtype != TINYC_HALF && prob->a.dtype != TINYC_BFLOAT16) ||
	    prob->mul != prob->a.dtype || prob->acc != TINYC_FLOAT)
		return 0;
	if (prob->a.gather.on || prob->b.gather.on || !tinyc_evt_poly_is_const(&prob->a.stride[1], 1) ||
	    !tinyc_evt_poly_is_const(&prob->b.stride[1], 1) || !prob->evt)
		return 0;
	/* 16-byte chunks that lie wholly inside or outside the operands: their origins and
	 * row strides aligned (the TMA bits of sched/matmul.c), K and N multiples of 8 */
	if ((prob->tma_ok & (TINYC_MM_TMA_A | TINYC_MM_TMA_B)) != (TINYC_MM_TMA_A | TINYC_MM_TMA_B) ||
	    K % 8 || N % 8)
		return 0;
	for (int i = 0; i < prob->evt->n; i++)
		if (tinyc_evt_is_reduction(prob->evt->nodes[i].kind))
			return 0;
	return 1;
}

int tinyc_skinny_tiles(const tinyc_mm_problem *prob, const tinyc_device_info *dev,
		       const int64_t *sym, int bm, int bn, int bk, int stages, tinyc_mm_tiles *t)
{
	memset(t, 0, sizeof(*t));
	if ((bm != 16 && bm != 32 && bm != 64) || (bn != 16 && bn != 32 && bn != 64) ||
	    bk % (16 * SKINNY_WARPS_K) || bk > 256 || stages < 2 || stages > 8)
		return -1;
	t->variant = TINYC_MM_MMA;
	t->bm = bm, t->bn = bn, t->bk = bk, t->stages = stages;
	t->warps_m = 1, t->warps_n = 1, t->warps_k = SKINNY_WARPS_K;
	t->threads = 32 * SKINNY_WARPS_K;
	t->async_a = t->async_b = 1;
	/* the ring (rows padded by 8 elements, as the mma template's) and the warps' partials */
	t->smem = (int64_t)stages * ((int64_t)bm * (bk + 8) + (int64_t)bk * (bn + 8)) * 2 +
		  (int64_t)SKINNY_WARPS_K * bm * bn * 4;
	t->dyn_smem = 1;
	int mi = bm / 16, ni = bn / 8;
	t->regs = mi * ni * 4 + mi * 4 + ni * 2 + 40;
	double optin = dev->smem_per_block_optin > dev->smem_per_block ? dev->smem_per_block_optin
								       : dev->smem_per_block;
	if ((double)t->smem > SMEM_FRACTION * optin || t->regs > 255)
		return -1;
	int64_t mv = prob->m.sym < 0 ? prob->m.val : sym ? sym[prob->m.sym] : -1;
	int64_t nv = prob->n.sym < 0 ? prob->n.val : sym ? sym[prob->n.sym] : -1;
	int64_t kv = prob->k.sym < 0 ? prob->k.val : sym ? sym[prob->k.sym] : -1;
	if (mv < 1 || nv < 1 || kv < 1 || (mv + 15) / 16 * 16 < bm)
		return -1;	/* no tile taller than M padded to 16 */
	t->pred_m = mv % bm != 0;
	t->pred_n = nv % bn != 0;
	t->pred_k = kv % bk != 0;
	int by_threads = dev->max_threads_per_sm / t->threads;
	int by_regs = dev->regs_per_sm / (((t->regs + 7) / 8 * 8) * t->threads);
	int by_smem = (int)(dev->smem_per_sm / t->smem);
	int c = by_threads < by_regs ? by_threads : by_regs;
	t->ctas_per_sm = by_smem < c ? by_smem : c;
	return t->ctas_per_sm < 1 ? -1 : 0;
}

void tinyc_skinny_estimate(const tinyc_schedule *s, tinyc_mm_plan *mp, tinyc_plan *p)
{
	const tinyc_mm_problem *prob = &mp->prob;
	const tinyc_mm_tiles *t = &mp->t;
	double M = tinyc_sched_dim_est(s, &prob->m), N = tinyc_sched_dim_est(s, &prob->n);
	double K = tinyc_sched_dim_est(s, &prob->k), L = tinyc_sched_dim_est(s, &prob->l);
	double mt = ceil(M / t->bm), nt = ceil(N / t->bn), ctas = mt * nt * L;
	double es = tinyc_dtype_size(prob->b.dtype);
	mp->flops = 2 * M * N * K * L;
	double epi = tinyc_mm_epilogue_once_bytes(prob, M, N, L);
	/* B once per m tile; A (its real rows: the padding is zero-filled, not read) once
	 * per n tile, from L2 */
	mp->bytes = L * (K * N * es * mt + M * K * es * nt) + epi;
	double peak = s->dev.peak_fp16_tflops > 0 ? s->dev.peak_fp16_tflops : 1;
	/* mma.sync on the padded rows, at about 60% of the warpgroup rate on sm_90 */
	mp->t_compute_us = 2 * mt * t->bm * N * K * L / (peak * 1e12) * 1e6 /
			   (s->dev.arch.major >= 9 ? 0.6 : 1.0);
	mp->t_memory_us = mp->bytes / (s->dev.peak_bandwidth_gbs * 1e9) * 1e6;
	double slots = (double)s->dev.sm_count * t->ctas_per_sm;
	double resident = ctas < slots ? ctas : slots;
	/* bytes in flight per thread: the ring's stages ahead of the one computed */
	double stage = ((double)t->bm * t->bk * 0.5 + (double)t->bk * t->bn) * es;
	double inflight = tinyc_plan_inflight_eff(s, resident * t->threads,
						  (t->stages - 1) * stage / t->threads / SKINNY_LATENCY_X);
	double waves = ceil(ctas / slots);
	double wave_eff = waves == 1 ? 1.0 : ctas / (waves * slots);
	double fill = ctas < s->dev.sm_count ? sqrt(ctas / s->dev.sm_count) : 1.0;
	/* a barrier per k tile: the warps wait for the stage's slowest copy */
	double kstep = t->bk / (t->bk + 32.0);
	p->eff = (inflight < fill ? inflight : fill) * wave_eff * kstep * SKINNY_EFF;
	double tt = mp->t_compute_us > mp->t_memory_us ? mp->t_compute_us : mp->t_memory_us;
	p->est_us = tt / (p->eff > 1e-6 ? p->eff : 1e-6) + SKINNY_TAIL_US * waves + SKINNY_LAUNCH_US;
}
