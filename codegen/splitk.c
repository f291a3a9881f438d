/* Split-K plans (sched/splitk.c) as GPU IR: the workspace, the split problem's kernels (the
 * plan's template, batch l = the k range), and the reduction kernel NAME_sk:
 *
 *   block (256), grid (N / 64, M / 16); thread t owns column n0 + t % 64 and rows
 *   m0 + t / 64 + 4a (a < 4)
 *   acc[a] = ws[0][row][col] + ws[1][row][col] + ...   (l order: deterministic)
 *   the contraction's epilogue graph on acc (codegen/evt_emit.c)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/matmul.h"

#define SK_THREADS 256	/* threads of the reduction kernel */
#define SK_BM 16	/* its tile: rows */
#define SK_BN 64	/* and columns */

/* The value of a dim under gm's bindings, or -1. */
static int64_t dim_value(const tinyc_gpu_module *gm, const tinyc_dim *d)
{
	if (d->sym < 0)
		return d->val;
	return gm->sym_bound && d->sym < gm->nsym ? gm->sym_bound[d->sym] : -1;
}

/* The reduction kernel of b (b->prob the original problem, b->t its tiles) over the
 * workspace ws of `split` partials. */
static int build_reduce(tinyc_mmk *b, const char *name, int ws, int split, int64_t M, int64_t N)
{
	tinyc_gkernel *k = tinyc_mmk_begin(b, name, SK_BM / (SK_THREADS / SK_BN));
	if (!k || b->error)
		return -1;
	tinyc_gstmt *body = k->body;
	tinyc_dtype acc = b->prob->acc;
	int rows = SK_THREADS / SK_BN, tr = SK_BM / rows;
	b->tid = tinyc_mmk_let(b, body, "tid", tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_TID_X)));
	tinyc_gexpr *row_base = tinyc_mmk_let(b, body, "row_base",
		tinyc_gx_binary(k, TINYC_GX_DIV, b->tid, tinyc_gx_int(k, b->it, SK_BN)));
	tinyc_gexpr *col_base = tinyc_mmk_let(b, body, "col_base",
		tinyc_gx_binary(k, TINYC_GX_MOD, b->tid, tinyc_gx_int(k, b->it, SK_BN)));
	tinyc_gexpr *col = tinyc_gx_binary(k, TINYC_GX_ADD, b->n0, col_base);
	int pw = tinyc_mmk_param(b, ws, 0);
	for (int a = 0; a < tr; a++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "row%d", a);
		tinyc_gexpr *row = tinyc_mmk_let(b, body, nm, tinyc_gx_binary(k, TINYC_GX_ADD, b->m0,
			tinyc_gx_binary(k, TINYC_GX_ADD, row_base, tinyc_gx_int(k, b->it, (int64_t)a * rows))));
		tinyc_gexpr *in = NULL;
		if (b->t->pred_m)
			in = tinyc_gx_binary(k, TINYC_GX_LT, row, b->M);
		if (b->t->pred_n) {
			tinyc_gexpr *c = tinyc_gx_binary(k, TINYC_GX_LT, col, b->N);
			in = in ? tinyc_gx_binary(k, TINYC_GX_LAND, in, c) : c;
		}
		tinyc_gexpr *cell = tinyc_gx_binary(k, TINYC_GX_ADD,
			tinyc_gx_binary(k, TINYC_GX_MUL, row, tinyc_gx_int(k, b->it, N)), col);
		tinyc_gexpr *sum = NULL;
		for (int l = 0; l < split; l++) {
			tinyc_gexpr *ix = tinyc_gx_binary(k, TINYC_GX_ADD, cell, tinyc_gx_int(k, b->it, (int64_t)l * M * N));
			tinyc_gexpr *v = tinyc_gx_load(k, pw, ix, in);
			sum = sum ? tinyc_gx_binary(k, TINYC_GX_ADD, sum, v) : v;
		}
		tinyc_mmk_append(b, body, tinyc_gs_store(k, b->acc, tinyc_gx_int(k, b->it, a),
							 tinyc_gx_cast(k, acc, sum), NULL));
	}
	if (b->error)
		return -1;
	tinyc_mm_frag f;
	tinyc_mm_frag_column(b, &f, tr, rows, row_base, col_base);
	return tinyc_evt_emit_epilogue(b, &f, body);
}

int tinyc_splitk_emit(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_mm_problem *prob,
		      const tinyc_mm_tiles *t, const char *name)
{
	int64_t M = dim_value(gm, &prob->m), N = dim_value(gm, &prob->n);
	if (M < 1 || N < 1)
		return tinyc_error(ctx, "CodegenError", "matmul %s: split-K needs bound sizes", name);
	/* the workspace of the partials: fp32 [split, M, N] */
	char wname[160];
	snprintf(wname, sizeof(wname), "sk_%s", name);
	int ws = tinyc_mm_add_temp(gm, wname, TINYC_FLOAT, (int64_t)t->split * M * N);
	if (ws < 0)
		return -1;
	/* the partials: the plan's template on the split problem */
	tinyc_mm_problem sp;
	int r = tinyc_splitk_problem(ctx, prob, gm->sym_bound, t->split, ws, &sp);
	if (r < 0)
		return r == -1 ? tinyc_error(ctx, "CodegenError", "matmul %s: cannot split K %d ways",
					     name, t->split) : -1;
	tinyc_mm_tiles pt = *t;
	pt.split = 0;
	r = tinyc_matmul_emit(ctx, gm, &sp, &pt, name);
	tinyc_mm_problem_clear(&sp);
	if (r < 0)
		return -1;
	/* the reduction and the epilogue */
	tinyc_mm_tiles rt;
	memset(&rt, 0, sizeof(rt));
	rt.variant = TINYC_MM_GEMV;	/* one-dimensional block of `threads` */
	rt.threads = SK_THREADS;
	rt.bm = SK_BM, rt.bn = SK_BN, rt.bk = 1, rt.stages = 1;
	rt.pred_m = M % SK_BM != 0, rt.pred_n = N % SK_BN != 0;
	rt.index_dtype = t->index_dtype;
	tinyc_mmk b;
	memset(&b, 0, sizeof(b));
	b.ctx = ctx;
	b.gm = gm;
	b.prob = prob;
	b.t = &rt;
	b.it = t->index_dtype == TINYC_INT ? TINYC_INT : TINYC_LONG;
	b.nparam_cap = gm->nbuf;
	b.param = malloc(sizeof(int) * ((size_t)gm->nbuf + 1));
	if (!b.param)
		return tinyc_error(ctx, "OutOfMemory", "matmul split-K");
	for (int i = 0; i < gm->nbuf; i++)
		b.param[i] = -1;
	char kname[160], comment[400];
	snprintf(kname, sizeof(kname), "%s_sk", name);
	r = build_reduce(&b, kname, ws, t->split, M, N);
	if (r == 0 && !b.error) {
		snprintf(comment, sizeof(comment), "%s: split-K reduction of %d fp32 partials in order, "
			 "then the epilogue (%d nodes)", kname, t->split, prob->evt->n);
		b.k->comment = tinyc_gpu_strdup(gm, comment);
		tinyc_gk_sort_params(b.k);
	}
	int failed = r < 0 || b.error;
	if (failed && !tinyc_ctx_error_count(ctx))
		tinyc_error(ctx, "CodegenError", "matmul %s: building the split-K reduction failed", name);
	free(b.param);
	free(b.ws);
	return failed ? -1 : 0;
}
