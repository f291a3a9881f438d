/* The gemv template (sched/gemv.c) as GPU IR: C[m, n0 .. n0 + BN) for all M rows of X.
 *
 *   c = tid % (BN / 8), r = tid / (BN / 8)          column lane, k lane
 *   acc[m][j] = 0                                   M x 8 fp32 per thread
 *   for k0 = 0; k0 < K; k0 += KS * U:               KS = 256 / (BN / 8) k rows per step
 *     w[h][u][0..8) = B[k0 + r + u*KS, n0 + 8c ..]  U 16-byte loads, zero past K or N, into
 *                                                   half h of a two-step register ring: the
 *                                                   next step's, issued before
 *     acc[m][j] += float(A[m, k0 + r + u*KS]) * float(w[h][u][j])   this step's products
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

/* The FMA form's registers that its steps read (the tinyc_gemv_steps argument). */
typedef struct fma_regs {
	int w;			/* the register ring of B rows: 2 halves x U rows x 8 */
	tinyc_gexpr *col;	/* the thread's first column */
	tinyc_gexpr *r;		/* its k lane */
} fma_regs;

/* The U rows' 16-byte loads of B for the step at k0 into half h of the register ring
 * (fma_regs arg); the rows predicated on k < K when pk, the columns on N, zero outside the
 * matrix.  Appended to blk. */
static void step_loads(tinyc_mmk *b, tinyc_gstmt *blk, int h, tinyc_gexpr *k0, int pk, void *arg)
{
	const fma_regs *fr = arg;
	int w = fr->w;
	tinyc_gexpr *col = fr->col, *r = fr->r;
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	int KS = t->bk, U = t->stages;
	tinyc_gexpr *ncheck = t->pred_n ? op2(b, TINYC_GX_LT, col, b->N) : NULL;
	for (int u = 0; u < U; u++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "kl%d_%d", h, u);
		tinyc_gexpr *kr = tinyc_mmk_let(b, blk, nm, op2(b, TINYC_GX_ADD, k0,
				op2(b, TINYC_GX_ADD, r, I(b, (int64_t)u * KS))));
		tinyc_gexpr *pred = pk ? op2(b, TINYC_GX_LT, kr, b->K) : NULL;
		if (ncheck)
			pred = pred ? op2(b, TINYC_GX_LAND, pred, ncheck) : ncheck;
		tinyc_mmk_append(b, blk, tinyc_gs_copy(b->k, w, I(b, (int64_t)(h * U + u) * 8),
						       tinyc_mmk_param(b, pr->b.buf, 0),
						       tinyc_mmk_op_addr(b, &pr->b, kr, col), 8, pred, 0));
	}
}

/* The products of the step at k0 whose B rows are in half h of the ring (fma_regs arg)
 * with the M rows of X (read as scalars, zero past K when pk), accumulated in fp32.
 * Appended to blk. */
static void step_products(tinyc_mmk *b, tinyc_gstmt *blk, int h, tinyc_gexpr *k0, int pk, void *arg)
{
	const fma_regs *fr = arg;
	int w = fr->w;
	tinyc_gexpr *r = fr->r;
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = b->k;
	int64_t M = tinyc_mmk_bound(b->gm, &pr->m);
	int KS = t->bk, U = t->stages;
	tinyc_dtype acc = pr->acc, mc = TINYC_FLOAT;
	int pa = tinyc_mmk_param(b, pr->a.buf, 0);
	for (int u = 0; u < U; u++) {
		char nm[48];
		snprintf(nm, sizeof(nm), "kp%d_%d", h, u);
		tinyc_gexpr *kr = tinyc_mmk_let(b, blk, nm, op2(b, TINYC_GX_ADD, k0,
				op2(b, TINYC_GX_ADD, r, I(b, (int64_t)u * KS))));
		tinyc_gexpr *kin = pk ? op2(b, TINYC_GX_LT, kr, b->K) : NULL;
		tinyc_gexpr *wf[8];
		for (int j = 0; j < 8; j++)
			wf[j] = tinyc_gx_cast(k, mc, tinyc_gx_load(k, w, I(b, (int64_t)(h * U + u) * 8 + j), NULL));
		for (int m = 0; m < M; m++) {
			snprintf(nm, sizeof(nm), "x%d_%d_%d", h, u, m);
			tinyc_gexpr *x = tinyc_mmk_let(b, blk, nm, tinyc_gx_cast(k, mc,
				tinyc_gx_load(k, pa, tinyc_mmk_op_addr(b, &pr->a, op2(b, TINYC_GX_ADD, b->m0, I(b, m)), kr), kin)));
			for (int j = 0; j < 8; j++) {
				tinyc_gexpr *ix = I(b, (int64_t)m * 8 + j);
				tinyc_gexpr *prod = tinyc_gx_cast(k, acc, op2(b, TINYC_GX_MUL, x, wf[j]));
				tinyc_mmk_append(b, blk, tinyc_gs_store(k, b->acc, ix,
					op2(b, TINYC_GX_ADD, tinyc_gx_load(k, b->acc, ix, NULL), prod), NULL));
			}
		}
	}
}

/* One trip of the pipelined k loop at k0 (two steps of S rows), predicated on K when pk. */
static tinyc_gstmt *k_trip(tinyc_mmk *b, const tinyc_gemv_steps *st, int k0v, int pk)
{
	tinyc_gkernel *k = b->k;
	int64_t S = st->rows;
	tinyc_gexpr *k0 = tinyc_gx_var(k, k0v);
	tinyc_gexpr *k1 = op2(b, TINYC_GX_ADD, k0, I(b, S));
	tinyc_gexpr *k2 = op2(b, TINYC_GX_ADD, k0, I(b, 2 * S));
	tinyc_gstmt *loop = tinyc_gs_block(k);
	tinyc_mmk_append(b, loop, tinyc_gs_comment(k, "the next step's loads of B before this "
						       "step's products, two steps per trip"));
	st->loads(b, loop, 1, k1, pk, st->arg);
	st->products(b, loop, 0, k0, pk, st->arg);
	st->loads(b, loop, 0, k2, pk, st->arg);
	st->products(b, loop, 1, k1, pk, st->arg);
	return loop;
}

/* The pipelined k loop over a two-half register ring (codegen/matmul.h). */
void tinyc_gemv_k_loop(tinyc_mmk *b, tinyc_gstmt *body, int k0v, const tinyc_gemv_steps *st)
{
	tinyc_gkernel *k = b->k;
	int64_t S = st->rows;
	int64_t Kv = tinyc_mmk_bound(b->gm, &b->prob->k);
	int64_t kmain = Kv >= 3 * S ? ((Kv - 3 * S) / (2 * S) + 1) * 2 * S : 0;
	tinyc_mmk_append(b, body, tinyc_gs_comment(k, "prologue: the first step's loads of B"));
	st->loads(b, body, 0, I(b, 0), Kv < S, st->arg);
	if (kmain > 0)
		tinyc_mmk_append(b, body, tinyc_gs_for_range(k, k0v, I(b, 0), I(b, kmain), I(b, 2 * S),
							     st->unroll, k_trip(b, st, k0v, 0)));
	if (Kv < 0) {
		tinyc_mmk_append(b, body, tinyc_gs_for_range(k, k0v, I(b, kmain), b->K, I(b, 2 * S), 0,
							     k_trip(b, st, k0v, 1)));
		return;
	}
	/* K bound: the 1 to 3 steps left, unrolled; a step's loads and products carry k
	 * predicates only where its rows cross K, and nothing is loaded past K */
	tinyc_mmk_append(b, body, tinyc_gs_comment(k, "the last steps, k predicates only where "
						       "rows cross K"));
	for (int64_t k0 = kmain, h = 0; k0 < Kv; k0 += S, h = 1 - h) {
		if (k0 + S < Kv)
			st->loads(b, body, (int)(1 - h), I(b, k0 + S), k0 + 2 * S > Kv, st->arg);
		st->products(b, body, (int)h, I(b, k0), k0 + S > Kv, st->arg);
	}
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

/* The warps' partial tiles in shared memory (codegen/matmul.h). */
int tinyc_gemv_red(tinyc_mmk *b, int64_t rows)
{
	const tinyc_mm_tiles *t = b->t;
	int64_t count = (int64_t)(t->threads / 32) * rows * t->bn;
	/* past the static limit (48 KiB): the dynamic segment (the runtime opts in) */
	int dyn = count * tinyc_dtype_size(b->prob->acc) > 48 * 1024;
	int red = tinyc_gk_shared(b->k, "red", b->prob->acc, count, 16, dyn);
	if (red < 0)
		b->error = 1;
	return red;
}

/* The warps' partials summed in warp order, then the epilogue (codegen/matmul.h). */
int tinyc_gemv_sum_epilogue(tinyc_mmk *b, tinyc_gstmt *body, int red, int64_t rows_red)
{
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = b->k;
	tinyc_dtype acc = b->prob->acc;
	int BN = t->bn, T = t->threads;
	int64_t wstride = rows_red * BN;	/* elements of one warp's partial tile */
	tinyc_mmk_append(b, body, tinyc_gs_barrier(k));
	int rows = T / BN, tr = t->bm / rows;
	tinyc_gexpr *row_base = tinyc_mmk_let(b, body, "row_base", op2(b, TINYC_GX_DIV, b->tid, I(b, BN)));
	tinyc_gexpr *col_base = tinyc_mmk_let(b, body, "col_base", op2(b, TINYC_GX_MOD, b->tid, I(b, BN)));
	for (int a = 0; a < tr; a++) {
		tinyc_gexpr *sum = tinyc_gx_float(k, acc, 0);
		tinyc_gexpr *cell = op2(b, TINYC_GX_ADD, op2(b, TINYC_GX_MUL, op2(b, TINYC_GX_ADD, row_base, I(b, (int64_t)a * rows)), I(b, BN)), col_base);
		for (int wi = 0; wi < T / 32; wi++)
			sum = op2(b, TINYC_GX_ADD, sum, tinyc_gx_load(k, red, op2(b, TINYC_GX_ADD, cell, I(b, wi * wstride)), NULL));
		tinyc_mmk_append(b, body, tinyc_gs_store(k, b->acc, I(b, a), sum, NULL));
	}
	if (b->error)
		return -1;
	tinyc_mm_frag f;
	tinyc_mm_frag_column(b, &f, tr, rows, row_base, col_base);
	return tinyc_evt_emit_epilogue(b, &f, body);
}

int tinyc_gemv_build(tinyc_mmk *b, const char *name)
{
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	int64_t M = tinyc_mmk_bound(b->gm, &pr->m);
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
	fma_regs fr;
	fr.r = tinyc_mmk_let(b, body, "r", op2(b, TINYC_GX_DIV, b->tid, I(b, lanes_n)));
	fr.col = tinyc_mmk_let(b, body, "col", op2(b, TINYC_GX_ADD, b->n0, op2(b, TINYC_GX_MUL, c, I(b, 8))));
	fr.w = tinyc_gk_reg_array(k, "w", pr->b.dtype, (int64_t)2 * U * 8);
	int k0v = tinyc_gk_reg(k, "k0", b->it), tmp = tinyc_gk_reg(k, "t", acc);
	int red = tinyc_gemv_red(b, t->bm);
	if (fr.w < 0 || k0v < 0 || tmp < 0 || red < 0)
		return -1;
	tinyc_mmk_append(b, body, tinyc_gs_decl(k, fr.w, NULL));
	tinyc_mmk_append(b, body, tinyc_gs_decl(k, tmp, NULL));
	tinyc_gemv_steps st = {step_loads, step_products, &fr, (int64_t)KS * U, 0};
	tinyc_gemv_k_loop(b, body, k0v, &st);
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
	return tinyc_gemv_sum_epilogue(b, body, red, t->bm);
}
