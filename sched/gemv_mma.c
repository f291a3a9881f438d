/* The tensor-core form of the gemv plan (variant gemv with tiles.gemv_mma; GPU IR in
 * codegen/gemv_mma.c): decode's products of M = 1 .. 32 rows of X with a weight B[k, n]
 * stored n-contiguous, on mma.sync m16n8k16 with the operands swapped, so that M is not
 * padded to the MMA's 16 rows: the weight's columns are the MMA's M side (A = W^T,
 * 16 columns x 16 k) and the tokens its N = 8 side (B = X^T, 16 k x 8 rows of X).
 *
 * MEASURED SLOWER than the swap-AB wgmma plans (H100, session 11: 8 / 16 x 4096 x 4096
 * 9.26 / 11.42 us, the best tile 9.19 / 11.08, against 7.50 / 7.78), so proposed only when
 * the options record asks for it (TINYC_GEMV_MMA=1 for M >= 2; 2 for M >= 1 and it alone
 * among the gemv forms: sched/matmul.c); the estimate's constants are the FMA gemv's.
 *
 * The memory side is the FMA gemv's: B is read once, in 16-byte vectors straight into a
 * two-step register ring (the next step's loads issued before this step's products).  A
 * CTA of `warps` warps owns a slab of BN output columns (64: 16-byte loads of 8 columns;
 * 32: 8-byte loads of 4) and splits K over its warps: warp w takes the 16-row k blocks
 * u * warps + w of every step of 16 * warps * unroll rows (u < unroll).  In a block at kb,
 * lane (g, c) = (lane / 4, lane % 4) loads rows kb + 4c .. kb + 4c + 3 at columns n0 + V g
 * .. + V (V = BN / 8): the 8 lanes of one c read a row's BN x 2 contiguous bytes.  The
 * MMA's k index is permuted within the block (its k pairs 2c, 2c + 1 and 2c + 8, 2c + 9
 * are rows 4c, 4c + 1 and 4c + 2, 4c + 3): a sum does not care, B's fragments are then the
 * lane's own rows, and X's fragment of a token row is 4 consecutive k (one 8-byte load).
 * MMA tile i (i < V / 2) takes columns n0 + V g + 2i (its row g) and + 2i + 1 (its row
 * g + 8): its A registers are pairs of halves of two loaded rows (byte permutes).  The
 * accumulator then holds D[column n0 + V g + j][token 8 t + 2c + e] for j < V, e < 2 and
 * every 8-row token tile t: V x 2 fp32 values per lane and token tile.  After the k loop
 * the warps' partial tiles are summed through shared memory in warp order and the epilogue
 * graph runs on the sum, as in the FMA gemv (deterministic, one kernel, no workspace).
 *
 * Tiles: bm = M rounded up to the rows the final layout covers (threads / BN), bn = BN,
 * bk = 16 x warps (the CTA's k rows of one k block), stages = unroll (k blocks per warp and
 * step, 1 .. 4).  Cost as the FMA gemv's (sched/gemv.c): B once, X once per CTA from L2 (at
 * GEMV_MMA_X_L2 of its bytes), the epilogue; the bytes in flight per thread are unroll x 4
 * loads of 2V bytes; capped by the SMs in use (fewer CTAs than SMs), the last wave and the
 * use of the 128-byte lines (BN x 2 bytes of each row).  The tensor cores' work (8-row
 * token tiles) is far below the memory time at these shapes.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sched/matmul.h"

#define GEMV_MMA_MAX_M 32	/* 4 token tiles: 16 x 4 accumulators a lane at BN 64 */
#define GEMV_MMA_LAUNCH_US 2.0	/* one kernel launch (as sched/matmul.c) */
#define GEMV_MMA_TAIL_US 0.5	/* the warps' sum and the epilogue, per wave (as gemv's) */
#define GEMV_MMA_LATENCY_X 2.0	/* the loaded latency of B's loads in units of the model's
				 * DRAM latency: the FMA gemv's measured factor */
#define GEMV_MMA_X_L2 0.4	/* X's re-reads (once per CTA) from L2, counted at this share
				 * of DRAM bytes (not measured; those of the skinny tile, since
				 * removed, were costly: docs/matmul-results.md) */
#define GEMV_MMA_SMEM_FRACTION 0.8	/* shared memory kept under this share of the limit */

int tinyc_gemv_mma_tokens(int64_t M)
{
	return (int)((M + 7) / 8 * 8);
}

int tinyc_gemv_mma_applies(const tinyc_schedule *s, const tinyc_mm_problem *prob)
{
	int64_t M = tinyc_sched_dim(s, &prob->m);
	if (M > GEMV_MMA_MAX_M || s->dev.arch.major < 8 || !prob->evt || !tinyc_gemv_b_fits(s, prob))
		return 0;
	if (prob->a.dtype != prob->b.dtype ||
	    (prob->a.dtype != TINYC_HALF && prob->a.dtype != TINYC_BFLOAT16))
		return 0;
	/* products exact in fp32 either way (16-bit MULs are computed in float) */
	return prob->mul == prob->a.dtype || prob->mul == TINYC_FLOAT;
}

/* Whether X can be read 4 k at a time (8-byte loads): k-contiguous, its rows, origin and
 * batch stride multiples of 4 elements, and K a multiple of 4 (a load's 4 k are all below K
 * or all past it). */
static int x_vectors(const tinyc_schedule *s, const tinyc_mm_problem *prob)
{
	int64_t K = tinyc_sched_dim(s, &prob->k);
	int64_t rs = tinyc_sched_poly_value(s, &prob->a.stride[0]);
	int64_t off = tinyc_sched_poly_value(s, &prob->a.offset);
	int64_t ls = tinyc_sched_poly_value(s, &prob->a.stride[2]);
	return tinyc_evt_poly_is_const(&prob->a.stride[1], 1) && K % 4 == 0 && rs >= 0 &&
	       rs % 4 == 0 && off >= 0 && off % 4 == 0 && ls >= 0 && ls % 4 == 0;
}

int tinyc_gemv_mma_tiles(const tinyc_schedule *s, const tinyc_mm_problem *prob, int bn, int warps,
			 int unroll, tinyc_mm_tiles *t)
{
	memset(t, 0, sizeof(*t));
	if (!tinyc_gemv_mma_applies(s, prob) || (bn != 32 && bn != 64) ||
	    (warps != 4 && warps != 8 && warps != 16) || unroll < 1 || unroll > 4 || unroll == 3)
		return -1;
	int64_t M = tinyc_sched_dim(s, &prob->m);
	int V = bn / 8, ntt = tinyc_gemv_mma_tokens(M) / 8;
	t->variant = TINYC_MM_GEMV;
	t->gemv_mma = x_vectors(s, prob) ? 2 : 1;
	t->threads = 32 * warps;
	int rows = t->threads / bn;	/* rows the final layout covers per pass */
	t->bm = (int)((M + rows - 1) / rows * rows);
	t->bn = bn;
	t->bk = 16 * warps;
	t->stages = unroll;
	/* every warp's partial tile: its token rows (M rounded to 8) or bm, the larger */
	int64_t rows_red = t->bm > 8 * ntt ? t->bm : 8 * ntt;
	t->smem = (int64_t)warps * rows_red * bn * 4;
	t->dyn_smem = t->smem > 48 * 1024;
	double limit = t->dyn_smem && s->dev.smem_per_block_optin > s->dev.smem_per_block
			       ? s->dev.smem_per_block_optin : s->dev.smem_per_block;
	if ((double)t->smem > GEMV_MMA_SMEM_FRACTION * limit)
		return -1;
	/* the ring (2 halves x unroll blocks x 4 rows of V halves, X's 4 k per token tile),
	 * the accumulators (V / 2 tiles x 4 x token tiles), fragments and addresses */
	t->regs = 2 * unroll * (2 * V + 2 * ntt) + 2 * V * ntt + 32;
	return tinyc_gemv_occupancy(s, prob, t);
}

/* The estimate of tensor-core gemv tiles mp->t for mp->prob on s (the file comment). */
static void gemv_mma_estimate(const tinyc_schedule *s, tinyc_mm_plan *mp, tinyc_plan *p)
{
	const tinyc_mm_problem *prob = &mp->prob;
	const tinyc_mm_tiles *t = &mp->t;
	double M = tinyc_sched_dim_est(s, &prob->m), N = tinyc_sched_dim_est(s, &prob->n);
	double K = tinyc_sched_dim_est(s, &prob->k), L = tinyc_sched_dim_est(s, &prob->l);
	double es = tinyc_dtype_size(prob->b.dtype);
	double ctas = ceil(N / t->bn) * L;
	mp->flops = 2 * M * N * K * L;
	mp->bytes = L * K * N * es + GEMV_MMA_X_L2 * ctas * M * K * es +
		    tinyc_mm_epilogue_once_bytes(prob, M, N, L);
	/* mma.sync on the token rows rounded to 8, at about 60% of the wgmma rate on sm_90 */
	double peak = s->dev.peak_fp16_tflops > 0 ? s->dev.peak_fp16_tflops : 1;
	mp->t_compute_us = 2 * tinyc_gemv_mma_tokens((int64_t)M) * N * K * L / (peak * 1e12) * 1e6 /
			   (s->dev.arch.major >= 9 ? 0.6 : 1.0);
	mp->t_memory_us = mp->bytes / (s->dev.peak_bandwidth_gbs * 1e9) * 1e6;
	/* per thread, one step's loads of B in flight: unroll blocks x 4 rows x 2V bytes */
	double bytes_thread = t->stages * 4.0 * (t->bn / 8) * es, waves;
	p->eff = tinyc_gemv_stream_eff(s, prob, t, ctas, bytes_thread / GEMV_MMA_LATENCY_X, &waves);
	double tt = mp->t_compute_us > mp->t_memory_us ? mp->t_compute_us : mp->t_memory_us;
	p->est_us = tt / (p->eff > 1e-6 ? p->eff : 1e-6) + GEMV_MMA_TAIL_US * waves +
		    GEMV_MMA_LAUNCH_US;
}

int tinyc_gemv_mma_candidates(tinyc_ctx *ctx, const tinyc_schedule *s, tinyc_skernel *k,
			      const tinyc_mm_problem *prob, tinyc_dtype idx, const int *ft)
{
	static const int bns[] = {64, 32}, warps[] = {8, 16, 4}, unrolls[] = {2, 4, 1};
	int added = 0;
	for (int i = 0; i < 2; i++)
		for (int w = 0; w < 3; w++)
			for (int j = 0; j < 3; j++) {
				tinyc_mm_tiles t;
				if (tinyc_gemv_mma_tiles(s, prob, bns[i], warps[w], unrolls[j], &t) < 0)
					continue;
				if (ft && ((ft[1] && t.bn != ft[1]) || (ft[2] && t.bk != ft[2]) ||
					   (ft[3] && t.stages != ft[3])))
					continue;
				t.index_dtype = idx;
				char desc[sizeof(((tinyc_plan *)0)->desc)];
				snprintf(desc, sizeof(desc),
					 "matmul gemv-mma [%d,%d,%d] unroll %d, %d warps splitting K, "
					 "mma.sync m16n8k16 on W^T x X^T, %d B loads of B, smem %" PRId64
					 " B, %d CTA/SM (off by default)", t.bm, t.bn, t.bk, t.stages,
					 t.threads / 32, t.bn / 4, t.smem, t.ctas_per_sm);
				if (tinyc_gemv_add(ctx, s, k, prob, &t, gemv_mma_estimate, desc) < 0)
					return -1;
				added++;
			}
	return added;
}

void tinyc_gemv_mma_plan_print(const tinyc_mm_tiles *t, tinyc_buf *out)
{
	int W = t->threads / 32, V = t->bn / 8;
	tinyc_buf_printf(out, " (unroll: %d 16-row k blocks of B per warp and step; the next "
			 "step's loads in flight under this step's mma)\n", t->stages);
	tinyc_buf_printf(out, "  bind: n.o -> block.x, l -> block.z; %d warps splitting K (warp w: "
			 "the k blocks u x %d + w of each step of %d rows); lane (g, c) = (lane / 4, "
			 "lane %% 4): columns n0 + %dg .. + %d of rows 4c .. 4c + 3 of a block\n", W, W,
			 t->bk * t->stages, V, V);
	tinyc_buf_printf(out, "  mma: mma.sync m16n8k16, operands swapped: A = W^T (16 columns x 16 "
			 "k, pairs of halves of two loaded rows), B = X^T (16 k x 8 token rows, rows "
			 "past M zero), %d tiles a k block and token tile, fp32 accumulators\n", V / 2);
	tinyc_buf_printf(out, "  loads: B %d-byte vectors (%d columns), zero outside the matrix; X "
			 "%s, in the ring with B\n", 2 * V, V,
			 t->gemv_mma == 2 ? "8-byte loads of 4 k of a row" : "element loads");
	tinyc_buf_printf(out, "  k sums: %d warps' partials through shared memory in warp order: "
			 "deterministic, one kernel; measured slower than swap-AB (TINYC_GEMV_MMA)\n", W);
}
