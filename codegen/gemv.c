/* The gemv template (sched/gemv.c) as GPU IR: C[m, n0 .. n0 + BN) for all M rows of X.
 *
 *   c = tid % (BN / 8), r = tid / (BN / 8)          column lane, k lane
 *   acc[m][j] = 0                                   M x 8 fp32 per thread
 *   for k0 = 0; k0 < K; k0 += KS * U:               KS = 256 / (BN / 8) k rows per step
 *     w[u][0..8) = B[k0 + r + u*KS, n0 + 8c ..]     U 16-byte loads, zero past K or N
 *     acc[m][j] += float(A[m, k0 + r + u*KS]) * float(w[u][j])
 *   acc[m][j] += shuffle-xor over the k lanes of the warp (lanes differing in bits >= BN/8)
 *   red[warp][m][8c + j] = acc[m][j]                (lanes of k lane 0)
 *   barrier
 *   acc[a] = sum over warps, in warp order, of red[w][row_base + a * 256/BN][tid % BN]
 *   epilogue on that fragment (rows row_base + a * 256/BN, column tid % BN)
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

/* The element offset of (row, col) of operand op (rows m or k, columns k or n). */
static tinyc_gexpr *addr(tinyc_mmk *b, const tinyc_mm_operand *op, tinyc_gexpr *row,
			 tinyc_gexpr *col)
{
	tinyc_gexpr *e = tinyc_mmk_poly(b, &op->offset);
	tinyc_gexpr *part[3] = {row, col, b->l};
	for (int a = 0; a < 3; a++)
		if (!tinyc_evt_poly_is_zero(&op->stride[a]))
			e = op2(b, TINYC_GX_ADD, e,
				op2(b, TINYC_GX_MUL, part[a], tinyc_mmk_poly(b, &op->stride[a])));
	return e;
}

/* The bound value of a dim in the module, or -1. */
static int64_t dim_value(const tinyc_gpu_module *gm, const tinyc_dim *d)
{
	if (d->sym < 0)
		return d->val;
	return gm->sym_bound && d->sym < gm->nsym ? gm->sym_bound[d->sym] : -1;
}

/* One step of the k loop at k0 (variable k0v): the U rows' 16-byte loads of B, then their
 * products with the M rows of X (col: the thread's first column); pk: predicate the rows on k < K. */
static tinyc_gstmt *k_step(tinyc_mmk *b, int w, int k0v, tinyc_gexpr *col, tinyc_gexpr *r, int pk)
{
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = b->k;
	int64_t M = dim_value(b->gm, &pr->m);
	int KS = t->bk, U = t->stages;
	tinyc_dtype acc = pr->acc, mc = TINYC_FLOAT;
	tinyc_gexpr *k0 = tinyc_gx_var(k, k0v);
	tinyc_gstmt *loop = tinyc_gs_block(k);
	tinyc_mmk_append(b, loop, tinyc_gs_comment(k, "the unrolled rows' 16-byte loads of B first, "
						       "then their products"));
	tinyc_gexpr *ncheck = t->pred_n ? op2(b, TINYC_GX_LT, col, b->N) : NULL;
	tinyc_gexpr *kr[8], *kin[8];
	for (int u = 0; u < U; u++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "kr%d", u);
		kr[u] = tinyc_mmk_let(b, loop, nm, op2(b, TINYC_GX_ADD, k0, op2(b, TINYC_GX_ADD, r, I(b, (int64_t)u * KS))));
		kin[u] = pk ? op2(b, TINYC_GX_LT, kr[u], b->K) : NULL;
		tinyc_gexpr *pred = kin[u] && ncheck ? op2(b, TINYC_GX_LAND, kin[u], ncheck)
						     : kin[u] ? kin[u] : ncheck;
		tinyc_mmk_append(b, loop, tinyc_gs_copy(k, w, I(b, (int64_t)u * 8), tinyc_mmk_param(b, pr->b.buf, 0),
							addr(b, &pr->b, kr[u], col), 8, pred, 0));
	}
	int pa = tinyc_mmk_param(b, pr->a.buf, 0);
	for (int u = 0; u < U; u++) {
		tinyc_gexpr *wf[8];
		for (int j = 0; j < 8; j++)
			wf[j] = tinyc_gx_cast(k, mc, tinyc_gx_load(k, w, I(b, (int64_t)u * 8 + j), NULL));
		for (int m = 0; m < M; m++) {
			char nm[24];
			snprintf(nm, sizeof(nm), "x%d_%d", u, m);
			tinyc_gexpr *x = tinyc_mmk_let(b, loop, nm, tinyc_gx_cast(k, mc,
				tinyc_gx_load(k, pa, addr(b, &pr->a, op2(b, TINYC_GX_ADD, b->m0, I(b, m)), kr[u]), kin[u])));
			for (int j = 0; j < 8; j++) {
				tinyc_gexpr *ix = I(b, (int64_t)m * 8 + j);
				tinyc_gexpr *prod = tinyc_gx_cast(k, acc, op2(b, TINYC_GX_MUL, x, wf[j]));
				tinyc_mmk_append(b, loop, tinyc_gs_store(k, b->acc, ix,
					op2(b, TINYC_GX_ADD, tinyc_gx_load(k, b->acc, ix, NULL), prod), NULL));
			}
		}
	}
	return loop;
}

void tinyc_mm_frag_column(tinyc_mmk *b, tinyc_mm_frag *f, int tr, int rows,
			  tinyc_gexpr *row_base, tinyc_gexpr *col_base)
{
	memset(f, 0, sizeof(*f));
	f->tr = tr, f->tc = 1;
	f->row_run = 1, f->col_run = 1;
	f->row_base = row_base;
	f->col_base = col_base;
	for (int a = 0; a < tr; a++)
		f->row_off[a] = a * rows;
	f->groups_m = 1, f->group_m = I(b, 0);
	f->groups_n = 1, f->group_n = I(b, 0);
}

int tinyc_gemv_build(tinyc_mmk *b, const char *name)
{
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	int64_t M = dim_value(b->gm, &pr->m);
	int BN = t->bn, KS = t->bk, U = t->stages, T = t->threads, lanes_n = BN / 8;
	if (M < 1 || M > t->bm || BN % 8 || T % BN || KS * lanes_n != T) {
		tinyc_error(b->ctx, "CodegenError", "matmul %s: gemv tiles do not fit M = %lld", name,
			    (long long)M);
		return -1;
	}
	int acc_n = (int)M * 8 > t->bm / (T / BN) ? (int)M * 8 : t->bm / (T / BN);
	tinyc_gkernel *k = tinyc_mmk_begin(b, name, acc_n);
	if (!k || b->error)
		return -1;
	tinyc_gstmt *body = k->body;
	tinyc_dtype acc = pr->acc;
	b->tid = tinyc_mmk_let(b, body, "tid", tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_TID_X)));
	tinyc_gexpr *c = tinyc_mmk_let(b, body, "c", op2(b, TINYC_GX_MOD, b->tid, I(b, lanes_n)));
	tinyc_gexpr *r = tinyc_mmk_let(b, body, "r", op2(b, TINYC_GX_DIV, b->tid, I(b, lanes_n)));
	tinyc_gexpr *col = tinyc_mmk_let(b, body, "col",
					 op2(b, TINYC_GX_ADD, b->n0, op2(b, TINYC_GX_MUL, c, I(b, 8))));
	int w = tinyc_gk_reg_array(k, "w", pr->b.dtype, (int64_t)U * 8);
	int k0v = tinyc_gk_reg(k, "k0", b->it), tmp = tinyc_gk_reg(k, "t", acc);
	int red = tinyc_gk_shared(k, "red", acc, (int64_t)(T / 32) * t->bm * BN, 16, 0);
	if (w < 0 || k0v < 0 || tmp < 0 || red < 0)
		return -1;
	tinyc_mmk_append(b, body, tinyc_gs_decl(k, w, NULL));
	tinyc_mmk_append(b, body, tinyc_gs_decl(k, tmp, NULL));
	/* the main loop over whole steps without k predicates (its loads are not branches,
	 * so they are all in flight together), then the last partial step with them */
	int64_t Kv = dim_value(b->gm, &pr->k), step = (int64_t)KS * U;
	int64_t kmain = Kv > 0 ? Kv / step * step : 0;
	if (kmain > 0)
		tinyc_mmk_append(b, body, tinyc_gs_for_range(k, k0v, I(b, 0), I(b, kmain), I(b, step), 0,
							     k_step(b, w, k0v, col, r, 0)));
	if (Kv < 0 || kmain < Kv) {
		tinyc_gstmt *tail = k_step(b, w, k0v, col, r, 1);
		tinyc_mmk_append(b, body, tinyc_gs_for_range(k, k0v, I(b, kmain > 0 ? kmain : 0), b->K,
							     I(b, step), 0, tail));
	}
	/* the k lanes of the warp: lanes differing in the bits above the column lanes */
	for (int x = lanes_n; x < 32; x *= 2)
		for (int e = 0; e < M * 8; e++) {
			tinyc_gexpr *ix = I(b, e);
			tinyc_mmk_append(b, body, tinyc_gs_shfl(k, TINYC_GSHFL_XOR, tmp,
								tinyc_gx_load(k, b->acc, ix, NULL),
								tinyc_gx_int(k, TINYC_INT, x), 32));
			tinyc_mmk_append(b, body, tinyc_gs_store(k, b->acc, ix,
				op2(b, TINYC_GX_ADD, tinyc_gx_load(k, b->acc, ix, NULL), tinyc_gx_var(k, tmp)), NULL));
		}
	/* the warps' partials (rows past M as zeros), then their sum in warp order */
	tinyc_gstmt *lead = tinyc_gs_block(k);
	for (int m = 0; m < t->bm; m++)
		for (int j = 0; j < 8; j++) {
			tinyc_gexpr *v = m < M ? tinyc_gx_load(k, b->acc, I(b, (int64_t)m * 8 + j), NULL)
					       : tinyc_gx_float(k, acc, 0);
			tinyc_gexpr *ix = op2(b, TINYC_GX_ADD, op2(b, TINYC_GX_MUL, b->warp, I(b, (int64_t)t->bm * BN)),
					      op2(b, TINYC_GX_ADD, I(b, (int64_t)m * BN + j), op2(b, TINYC_GX_MUL, c, I(b, 8))));
			tinyc_mmk_append(b, lead, tinyc_gs_store(k, red, ix, v, NULL));
		}
	tinyc_mmk_append(b, body, tinyc_gs_if(k, op2(b, TINYC_GX_LT, b->lane, I(b, lanes_n)), lead, NULL));
	tinyc_mmk_append(b, body, tinyc_gs_barrier(k));
	int rows = T / BN, tr = t->bm / rows;
	tinyc_gexpr *row_base = tinyc_mmk_let(b, body, "row_base", op2(b, TINYC_GX_DIV, b->tid, I(b, BN)));
	tinyc_gexpr *col_base = tinyc_mmk_let(b, body, "col_base", op2(b, TINYC_GX_MOD, b->tid, I(b, BN)));
	for (int a = 0; a < tr; a++) {
		tinyc_gexpr *sum = tinyc_gx_float(k, acc, 0);
		tinyc_gexpr *cell = op2(b, TINYC_GX_ADD, op2(b, TINYC_GX_MUL, op2(b, TINYC_GX_ADD, row_base, I(b, (int64_t)a * rows)), I(b, BN)), col_base);
		for (int wi = 0; wi < T / 32; wi++)
			sum = op2(b, TINYC_GX_ADD, sum, tinyc_gx_load(k, red, op2(b, TINYC_GX_ADD, cell, I(b, (int64_t)wi * t->bm * BN)), NULL));
		tinyc_mmk_append(b, body, tinyc_gs_store(k, b->acc, I(b, a), sum, NULL));
	}
	if (b->error)
		return -1;
	tinyc_mm_frag f;
	tinyc_mm_frag_column(b, &f, tr, rows, row_base, col_base);
	return tinyc_evt_emit_epilogue(b, &f, body);
}
