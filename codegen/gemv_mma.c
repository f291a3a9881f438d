/* The tensor-core gemv (sched/gemv_mma.c; measured slower than swap-AB) as GPU IR: C[m, n0 .. n0 +
 * BN) for all M rows of X, mma.sync m16n8k16 with the weight's columns as the MMA's rows.
 *
 *   g = lane / 4, c = lane % 4, V = BN / 8           V columns a lane, V / 2 mma tiles
 *   kw = 16 * warp + 4c                              the lane's first row in a k block
 *   for each step at k0 (S = 16 * warps * U rows), its blocks kb = k0 + 16 * warps * u + kw:
 *     w[h][u][r][0..V) = B[kb + r, n0 + V g ..]      4 loads of 2V bytes (r < 4)
 *     x[h][u][t][0..4) = X[m0 + 8t + g, kb .. kb + 4)  one 8-byte load per token tile t
 *                                                    (or 4 element loads); zero past M, K, N
 *   (two-half register ring: the next step's loads issued before this step's products,
 *    tinyc_gemv_k_loop)
 *     af[i] = (w[0][2i], w[1][2i], w[0][2i+1], w[1][2i+1],
 *              w[2][2i], w[3][2i], w[2][2i+1], w[3][2i+1])   16-bit moves: byte permutes
 *     acc[t][i] = mma(af[i], x[t], acc[t][i])
 *
 * The MMA's A (16 x 16, row-major fragments) is W^T with its row g = column n0 + V g + 2i and
 * row g + 8 = column n0 + V g + 2i + 1; its k index is permuted within the block: the pairs
 * 2c, 2c + 1 and 2c + 8, 2c + 9 that lane c holds are the rows kb + 4c, + 1 and kb + 4c + 2,
 * + 3.  Its B (16 x 8, column fragments) is X^T: b0, b1 = X[8t + g][kb + 4c, + 1], b2, b3 =
 * X[8t + g][kb + 4c + 2, + 3] under the same permutation, i.e. 4 consecutive k of one row.
 * Its D then holds, for lane (g, c): acc[t][i][e] = C[8t + 2c + e % 2][n0 + V g + 2i + e / 2].
 *
 *   red[warp][8t + 2c + e % 2][V g + 2i + e / 2] = acc[t][i][e]   every lane; rows from M
 *                                                                 rounded to 8 up to bm zero
 *   barrier; the sums over the warps in warp order and the epilogue (tinyc_gemv_sum_epilogue)
 */
#include <stdio.h>
#include <string.h>

#include "codegen/matmul.h"

/* Shorthands. */
static tinyc_gexpr *I(tinyc_mmk *b, int64_t v)
{
	return tinyc_gx_int(b->k, b->it, v);
}

static tinyc_gexpr *op2(tinyc_mmk *b, tinyc_gx_op op, tinyc_gexpr *x, tinyc_gexpr *y)
{
	return tinyc_gx_binary(b->k, op, x, y);
}

/* x && y with NULL as true. */
static tinyc_gexpr *both(tinyc_mmk *b, tinyc_gexpr *x, tinyc_gexpr *y)
{
	return !x ? y : !y ? x : op2(b, TINYC_GX_LAND, x, y);
}

/* The kernel's registers and layout (the tinyc_gemv_steps argument). */
typedef struct mma_regs {
	int w;			/* ring of B rows: halves [2][U][4][V] */
	int x;			/* ring of X: halves [2][U][ntt][4] */
	int af;			/* A fragments of one k block: halves [V / 2][8] */
	int V;			/* columns a lane (BN / 8) */
	int U;			/* k blocks a warp and step */
	int W;			/* warps */
	int ntt;		/* 8-row token tiles */
	int64_t M;		/* rows of X */
	tinyc_gexpr *g;		/* lane / 4 */
	tinyc_gexpr *kw;	/* the lane's first row in its k block: 16 warp + 4 (lane % 4) */
	tinyc_gexpr *col;	/* the lane's first column: n0 + V g */
} mma_regs;

/* The step at k0 into half h of the ring (mma_regs arg): per k block u the lane's 4 rows of
 * B (V columns each) and its 4 k of each token row of X, zero past K (rows, when pk), N and
 * M.  Appended to blk. */
static void step_loads(tinyc_mmk *b, tinyc_gstmt *blk, int h, tinyc_gexpr *k0, int pk, void *arg)
{
	const mma_regs *mr = arg;
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = b->k;
	int V = mr->V, U = mr->U;
	int pb = tinyc_mmk_param(b, pr->b.buf, 0), pa = tinyc_mmk_param(b, pr->a.buf, 0);
	tinyc_gexpr *ncheck = t->pred_n ? op2(b, TINYC_GX_LT, mr->col, b->N) : NULL;
	for (int u = 0; u < U; u++) {
		char nm[24];
		snprintf(nm, sizeof(nm), "kb%d_%d", h, u);
		tinyc_gexpr *kb = tinyc_mmk_let(b, blk, nm, op2(b, TINYC_GX_ADD, k0,
				op2(b, TINYC_GX_ADD, mr->kw, I(b, (int64_t)u * 16 * mr->W))));
		for (int r = 0; r < 4; r++) {
			tinyc_gexpr *row = op2(b, TINYC_GX_ADD, kb, I(b, r));
			tinyc_gexpr *pred = both(b, pk ? op2(b, TINYC_GX_LT, row, b->K) : NULL, ncheck);
			tinyc_mmk_append(b, blk, tinyc_gs_copy(k, mr->w, I(b, (int64_t)((h * U + u) * 4 + r) * V),
							       pb, tinyc_mmk_op_addr(b, &pr->b, row, mr->col),
							       V, pred, 0));
		}
		for (int tt = 0; tt < mr->ntt; tt++) {
			tinyc_gexpr *tok = op2(b, TINYC_GX_ADD, b->m0, op2(b, TINYC_GX_ADD, mr->g, I(b, 8 * tt)));
			tinyc_gexpr *min = 8 * (tt + 1) > mr->M ? op2(b, TINYC_GX_LT, tok, b->M) : NULL;
			int64_t xi = (int64_t)((h * U + u) * mr->ntt + tt) * 4;
			if (t->gemv_mma == 2) {	/* 4 k of a row: one 8-byte load */
				tinyc_gexpr *pred = both(b, min, pk ? op2(b, TINYC_GX_LT, kb, b->K) : NULL);
				tinyc_mmk_append(b, blk, tinyc_gs_copy(k, mr->x, I(b, xi), pa,
								       tinyc_mmk_op_addr(b, &pr->a, tok, kb),
								       4, pred, 0));
				continue;
			}
			for (int e = 0; e < 4; e++) {
				tinyc_gexpr *ke = op2(b, TINYC_GX_ADD, kb, I(b, e));
				tinyc_gexpr *pred = both(b, min, pk ? op2(b, TINYC_GX_LT, ke, b->K) : NULL);
				tinyc_mmk_append(b, blk, tinyc_gs_copy(k, mr->x, I(b, xi + e), pa,
								       tinyc_mmk_op_addr(b, &pr->a, tok, ke),
								       1, pred, 0));
			}
		}
	}
}

/* The products of the step in half h of the ring (mma_regs arg): per k block and mma tile
 * i the A fragment from the lane's rows (16-bit moves), then one mma per token tile into
 * the fp32 accumulators.  Rows past K were loaded as zeros: no predicates.  Appended to
 * blk. */
static void step_products(tinyc_mmk *b, tinyc_gstmt *blk, int h, tinyc_gexpr *k0, int pk, void *arg)
{
	(void)k0;
	(void)pk;
	const mma_regs *mr = arg;
	tinyc_gkernel *k = b->k;
	int V = mr->V, U = mr->U;
	/* a0 a1: rows 0, 1 of column 2i; a2 a3: rows 0, 1 of column 2i + 1; a4 .. a7: rows 2, 3 */
	static const int frag_row[8] = {0, 1, 0, 1, 2, 3, 2, 3}, frag_col[8] = {0, 0, 1, 1, 0, 0, 1, 1};
	for (int u = 0; u < U; u++) {
		int64_t wbase = (int64_t)(h * U + u) * 4 * V;
		for (int i = 0; i < V / 2; i++) {
			for (int e = 0; e < 8; e++)
				tinyc_mmk_append(b, blk, tinyc_gs_store(k, mr->af, I(b, (int64_t)i * 8 + e),
					tinyc_gx_load(k, mr->w, I(b, wbase + (int64_t)frag_row[e] * V + 2 * i + frag_col[e]),
						      NULL), NULL));
			for (int tt = 0; tt < mr->ntt; tt++) {
				tinyc_gexpr *d = I(b, (int64_t)(tt * (V / 2) + i) * 4);
				tinyc_mmk_append(b, blk, tinyc_gs_mma(k, b->acc, d, mr->af, I(b, (int64_t)i * 8), mr->x,
					I(b, (int64_t)((h * U + u) * mr->ntt + tt) * 4), b->acc, d));
			}
		}
	}
}

int tinyc_gemv_mma_build(tinyc_mmk *b, const char *name)
{
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	int64_t M = tinyc_mmk_bound(b->gm, &pr->m);
	mma_regs mr;
	memset(&mr, 0, sizeof(mr));
	mr.V = t->bn / 8, mr.U = t->stages, mr.W = t->threads / 32, mr.M = M;
	mr.ntt = (int)((M + 7) / 8);
	int T = t->threads, BN = t->bn, V = mr.V;
	if (M < 1 || M > t->bm || (BN != 32 && BN != 64) || T % BN || t->bk != 16 * mr.W ||
	    mr.U < 1 || b->gm->arch_major < 8) {
		tinyc_error(b->ctx, "CodegenError", "matmul %s: tensor-core gemv tiles do not fit M = %lld "
			    "on %s", name, (long long)M, b->gm->target);
		return -1;
	}
	int nacc = mr.ntt * (V / 2) * 4, tr = t->bm / (T / BN);
	tinyc_gkernel *k = tinyc_mmk_begin(b, name, nacc > tr ? nacc : tr);
	if (!k || b->error)
		return -1;
	tinyc_gstmt *body = k->body;
	b->tid = tinyc_mmk_let(b, body, "tid", tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_TID_X)));
	mr.g = tinyc_mmk_let(b, body, "g", op2(b, TINYC_GX_DIV, b->lane, I(b, 4)));
	tinyc_gexpr *c = tinyc_mmk_let(b, body, "c", op2(b, TINYC_GX_MOD, b->lane, I(b, 4)));
	mr.kw = tinyc_mmk_let(b, body, "kw", op2(b, TINYC_GX_ADD, op2(b, TINYC_GX_MUL, b->warp, I(b, 16)),
						 op2(b, TINYC_GX_MUL, c, I(b, 4))));
	mr.col = tinyc_mmk_let(b, body, "col", op2(b, TINYC_GX_ADD, b->n0, op2(b, TINYC_GX_MUL, mr.g, I(b, V))));
	mr.w = tinyc_gk_reg_array(k, "w", pr->b.dtype, (int64_t)2 * mr.U * 4 * V);
	mr.x = tinyc_gk_reg_array(k, "x", pr->a.dtype, (int64_t)2 * mr.U * mr.ntt * 4);
	mr.af = tinyc_gk_reg_array(k, "af", pr->b.dtype, (int64_t)(V / 2) * 8);
	int k0v = tinyc_gk_reg(k, "k0", b->it);
	int64_t rows_red = t->bm > 8 * mr.ntt ? t->bm : 8 * mr.ntt;
	int red = tinyc_gemv_red(b, rows_red);
	if (mr.w < 0 || mr.x < 0 || mr.af < 0 || k0v < 0 || red < 0)
		return -1;
	tinyc_mmk_append(b, body, tinyc_gs_decl(k, mr.w, NULL));
	tinyc_mmk_append(b, body, tinyc_gs_decl(k, mr.x, NULL));
	tinyc_mmk_append(b, body, tinyc_gs_decl(k, mr.af, NULL));
	/* the main loop kept a loop, and the plan's occupancy as __launch_bounds__'s second
	 * argument: without it ptxas kept fewer registers and issued each load one k block
	 * before its use, not a step (nvcc 13.0, sm_90: 64 B of loads outstanding per thread
	 * where a load is first used, 184 B with it, at 16 warps, 64 columns, unroll 2) */
	k->min_blocks_per_sm = t->ctas_per_sm;
	tinyc_gemv_steps st = {step_loads, step_products, &mr, (int64_t)t->bk * mr.U, 1};
	tinyc_gemv_k_loop(b, body, k0v, &st);
	/* the warp's partial tile: every lane its V columns of 2 token rows per token tile */
	tinyc_mmk_append(b, body, tinyc_gs_comment(k, "the warps' partial tiles, then their sum in "
						       "warp order and the epilogue"));
	tinyc_gexpr *wbase = tinyc_mmk_let(b, body, "wred", op2(b, TINYC_GX_MUL, b->warp, I(b, rows_red * BN)));
	tinyc_gexpr *cell = tinyc_mmk_let(b, body, "cell", op2(b, TINYC_GX_ADD, wbase,
		op2(b, TINYC_GX_ADD, op2(b, TINYC_GX_MUL, c, I(b, 2 * BN)), op2(b, TINYC_GX_MUL, mr.g, I(b, V)))));
	for (int tt = 0; tt < mr.ntt; tt++)
		for (int i = 0; i < V / 2; i++)
			for (int e = 0; e < 4; e++) {
				int64_t off = (int64_t)(8 * tt + e % 2) * BN + 2 * i + e / 2;
				tinyc_mmk_append(b, body, tinyc_gs_store(k, red, op2(b, TINYC_GX_ADD, cell, I(b, off)),
					tinyc_gx_load(k, b->acc, I(b, (int64_t)(tt * (V / 2) + i) * 4 + e), NULL), NULL));
			}
	/* rows the sum reads past the token tiles (bm > M rounded to 8): zeros */
	for (int64_t r = 8 * mr.ntt; r < t->bm; r++)
		for (int q = 0; q < BN / 32; q++)
			tinyc_mmk_append(b, body, tinyc_gs_store(k, red, op2(b, TINYC_GX_ADD, wbase,
				op2(b, TINYC_GX_ADD, b->lane, I(b, r * BN + 32 * q))), tinyc_gx_float(k, pr->acc, 0), NULL));
	if (b->error)
		return -1;
	return tinyc_gemv_sum_epilogue(b, body, red, rows_red);
}
