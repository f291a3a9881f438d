/* Swapped-operand (swap-AB) wgmma plans for small M (tiles.swap; issue 17, decode).
 *
 * cuBLASLt's decode kernel on the H100 (nvjet_sm90_hsh_128x16_64x11_4x1_v_bz_splitK_relubias,
 * docs/matmul-results.md) computes C^T = B^T A^T: the weight's columns are wgmma's 128 rows
 * (two m64 consumers), the 16 tokens its N = 16, so M is padded to 8, not to the 64 rows of
 * an m64 instruction.  tinyc gets the same kernel from its Hopper template without a new
 * kernel: the plan keeps the problem as it is (the schedule dump, the split-K reduction
 * kernel and the tuning class read it), and the tiles say `swap`; the code generator then
 * builds the template on the swapped problem (tinyc_mm_problem_swap):
 *
 *   m' = n, n' = m;  A'[n, k] = B[k, n]  (the weight, MN-major: n contiguous, transposed
 *                                         in the wgmma descriptor, boxes [64 n x 64 k])
 *                    B'[k, m] = A[m, k]  (the tokens, K-major: box [64 k x BN m])
 *   the epilogue graph's tensors with their m and n strides exchanged (the output C[m, n]
 *   is written as C^T's column-major view; a bias along n becomes a column broadcast)
 *
 * a pure data transformation: the template's addresses, tensor maps and the epilogue's
 * index polynomials all follow from the strides.  Split-K splits the original problem
 * first (its workspace [l][m][n]) and then swaps the split problem, so the partials
 * land where the reduction kernel of the original problem reads them; the cluster sum
 * (split_fused = 2) swaps the whole problem its epilogue runs.
 *
 * Tiles (the swapped problem's): bm in {64, 128} weight columns (1 or 2 cooperative
 * consumers), bn = M rounded up to 8 tokens (8 .. 32; tokens past M zero-filled by TMA,
 * never stored), bk 64, rings of 4 to 12 stages (a stage is (bm + bn) x 64 x 2 bytes), the
 * split chosen so that N / bm x split CTAs fill the SMs.  The outputs are stored
 * unstaged: after the swap their contiguous axis is the tile's rows (the staged path needs
 * contiguous columns); at decode the output is tiny.
 *
 * Proposed by default beside the other candidates for 2 <= M <= 32 (TINYC_WGMMA_SWAP=1; 0
 * never, 2 alone where it applies): measured on an H100 against the split-K wgmma plan it
 * replaces at 8 / 16 / 32 x 4096 x 4096, 7.50 / 7.78 / 8.44 us against 10.89 / 11.33 /
 * 10.91 (docs/matmul-results.md).  At M = 64 it measured no faster, so M stays <= 32.
 */
#include <stdio.h>
#include <string.h>

#include "sched/matmul.h"

#define SWAPAB_MAX_M 32	/* 4 n8 blocks of tokens: the narrow wgmma's N up to 32 */
#define SWAPAB_LATENCY_X 6.0	/* the DRAM latency a TMA ring's stages see under load, in
				 * units of the model's (sched/plan.c LATENCY_NS): fitted to
				 * one fact only, main's split-K 64 x 128 plan still gaining
				 * at 5 stages in flight of 24 KB (16 x 4096 x 4096: 18.5 /
				 * 18.0 / 17.6 us at 4 / 5 / 6 stages, sched/matmul.c) */
#define SWAPAB_PIPE_MAX 0.98	/* the deep ring's best (as the wgmma estimate's) */

/* The value of dim d under sym, or -1. */
static int64_t dim_value(const tinyc_dim *d, const int64_t *sym)
{
	return d->sym < 0 ? d->val : sym ? sym[d->sym] : -1;
}

/* Operand op (rows r, columns c) as its transpose: rows c, columns r. */
static tinyc_mm_operand transposed(const tinyc_mm_operand *op)
{
	tinyc_mm_operand t = *op;
	t.stride[0] = op->stride[1];
	t.stride[1] = op->stride[0];
	return t;
}

int tinyc_mm_problem_swap(tinyc_ctx *ctx, const tinyc_mm_problem *prob, const int64_t *sym,
			  tinyc_mm_problem *out)
{
	if (prob->a.gather.on || prob->b.gather.on)
		return -1;
	if (tinyc_mm_problem_copy(ctx, prob, out) < 0)
		return -2;
	out->m = prob->n, out->n = prob->m;
	out->a = transposed(&prob->b);
	out->b = transposed(&prob->a);
	out->tma_ok = (prob->tma_ok & TINYC_MM_SIZES_BOUND) |
		      (prob->tma_ok & TINYC_MM_TMA_A ? TINYC_MM_TMA_B : 0) |
		      (prob->tma_ok & TINYC_MM_TMA_B ? TINYC_MM_TMA_A : 0);
	out->unit_axis = 0;	/* an ordinary product of n' = 1 token */
	/* a dropped unit m axis (stride 0): a K-long row's stride, 16-byte aligned for TMA */
	int64_t K = dim_value(&prob->k, sym);
	if (dim_value(&prob->m, sym) == 1 && tinyc_evt_poly_is_zero(&out->b.stride[1]) && K > 0)
		out->b.stride[1] = tinyc_evt_poly_const((K + 7) / 8 * 8);
	for (int i = 0; out->evt && i < out->evt->n; i++) {
		tinyc_evt_node *nd = &out->evt->nodes[i];
		static const tinyc_evt_kind from[] = {TINYC_EVT_ROW_BCAST, TINYC_EVT_COL_BCAST,
						      TINYC_EVT_ROW_RED, TINYC_EVT_COL_RED};
		static const tinyc_evt_kind to[] = {TINYC_EVT_COL_BCAST, TINYC_EVT_ROW_BCAST,
						    TINYC_EVT_COL_RED, TINYC_EVT_ROW_RED};
		for (int j = 0; j < 4; j++)
			if (nd->kind == from[j]) {
				nd->kind = to[j];
				break;
			}
		if (nd->has_tensor) {
			tinyc_evt_poly m = nd->t.lay.stride[0];
			nd->t.lay.stride[0] = nd->t.lay.stride[1];
			nd->t.lay.stride[1] = m;
		}
	}
	if (out->evt && tinyc_evt_verify(ctx, out->evt, 1) < 0) {
		tinyc_mm_problem_clear(out);
		return -2;
	}
	return 0;
}

int tinyc_swapab_applies(const tinyc_schedule *s, const tinyc_mm_problem *prob)
{
	int64_t M = tinyc_sched_dim(s, &prob->m), N = tinyc_sched_dim(s, &prob->n);
	int64_t K = tinyc_sched_dim(s, &prob->k), L = tinyc_sched_dim(s, &prob->l);
	int need = TINYC_MM_SIZES_BOUND | TINYC_MM_TMA_A | TINYC_MM_TMA_B;
	if (s->dev.arch.major != 9 || s->dev.arch.minor != 0 || (prob->tma_ok & need) != need ||
	    M < 1 || M > SWAPAB_MAX_M || N <= SWAPAB_MAX_M || K < 1 || L != 1 || !prob->evt ||
	    prob->evt->batched || prob->a.gather.on || prob->b.gather.on)
		return 0;
	if (prob->a.dtype != prob->b.dtype || prob->mul != prob->a.dtype || prob->acc != TINYC_FLOAT ||
	    (prob->a.dtype != TINYC_HALF && prob->a.dtype != TINYC_BFLOAT16))
		return 0;
	for (int i = 0; i < prob->evt->n; i++)
		if (tinyc_evt_is_reduction(prob->evt->nodes[i].kind))
			return 0;
	return 1;
}

double tinyc_swapab_pipe(const tinyc_schedule *s, const tinyc_mm_tiles *t, double ktiles)
{
	double stages = t->stages < ktiles ? t->stages : ktiles;
	/* the consumers hold one stage; the producer refills the others */
	double ring = (stages > 1 ? stages - 1 : 1) * (double)(t->bm + t->bn) * t->bk * 2;
	return SWAPAB_PIPE_MAX * tinyc_plan_inflight_eff(s, s->dev.sm_count, ring / SWAPAB_LATENCY_X);
}

void tinyc_swapab_plan_print(const tinyc_mm_tiles *t, tinyc_buf *out)
{
	tinyc_buf_printf(out, "  swap-AB: C^T = B^T A^T on the template (m and n exchanged): the tile's %d "
			 "rows are %d columns of B (the weight, wgmma's A), its %d columns the token rows "
			 "of A (wgmma's B, rows past M zero-filled), the epilogue's tensors addressed "
			 "with their m and n strides exchanged, stores unstaged; tiles, tails and "
			 "loads below are the swapped problem's (TINYC_WGMMA_SWAP)\n", t->bm, t->bm, t->bn);
}
