/* Split-K plans (sched/splitk.c) as GPU IR: the workspace, the split problem's kernels (the
 * plan's template, batch l = the k range), and the reduction kernel NAME_sk:
 *
 *   block (256), grid (N / 64, M / 16); thread t owns column n0 + t % 64 and rows
 *   m0 + t / 64 + 4a (a < 4)
 *   acc[a] = ws[0][row][col] + ws[1][row][col] + ...   (l order: deterministic)
 *   the contraction's epilogue graph on acc (codegen/evt_emit.c)
 *
 * or, tiles.split_fused, no second kernel: after the partials' stores the template calls
 * tinyc_splitk_fixup, which appends to the same tile loop
 *
 *   fence; syncwarp; lane 0: old = atomicAdd(cnt[tile * W + warp_in_tile], 1), seen[warp] = old
 *   syncwarp; if seen[warp] == split - 1:          the warp's slot of the tile is complete
 *     fence; lane 0: cnt[..] = 0                   (zero again for the next launch)
 *     acc[i] = ws[0][row][col] + ws[1][row][col] + ..   the warp's own fragment, l order
 *     the contraction's epilogue graph on acc
 *   syncwarp
 *
 * The counters are a TEMP buffer (zero when allocated; every launch leaves them zero).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/matmul.h"

#define SK_THREADS 256	/* threads of the reduction kernel */
#define SK_BM 16	/* its tile: rows */
#define SK_BN 64	/* and columns */

/* Shorthands. */
static tinyc_gexpr *I(tinyc_mmk *b, int64_t v)
{
	return tinyc_gx_int(b->k, b->it, v);
}

static tinyc_gexpr *op2(tinyc_mmk *b, tinyc_gx_op op, tinyc_gexpr *x, tinyc_gexpr *y)
{
	return tinyc_gx_binary(b->k, op, x, y);
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

int tinyc_splitk_whole_epilogue(tinyc_mmk *b, const tinyc_mm_frag *f, tinyc_gstmt *body)
{
	const tinyc_mm_problem *split_prob = b->prob;
	tinyc_gexpr *split_l = b->l;
	int *split_ws = b->ws;
	b->prob = b->fix->whole, b->l = I(b, 0), b->ws = NULL;
	int r = tinyc_evt_emit_epilogue(b, f, body);
	free(b->ws);
	b->prob = split_prob, b->l = split_l, b->ws = split_ws;
	return r < 0 || b->error ? -1 : 0;
}

int tinyc_splitk_tile_warps(const tinyc_mm_tiles *t)
{
	if (t->variant == TINYC_MM_WGMMA)	/* pingpong: one consumer's 4 warps per tile */
		return t->pingpong ? 4 : 4 * t->consumers;
	return t->warps_m * t->warps_n;
}

/* The arrival counters of a kernel that sums its partials (b->fix): the counters' and the
 * partials' parameters, the shared copy of each warp's count and lane 0's register. */
typedef struct sk_arrival {
	int pc, pw;			/* PARAM_PTRs of the counters and the partials */
	int seen;			/* shared int[warps]: the count each warp's lane 0 saw */
	int old;			/* lane 0's register of the count before its add */
} sk_arrival;

/* The variables of the arrival counters (in this order: the dumps name them so).  0 or -1. */
static int sk_arrival_vars(tinyc_mmk *b, sk_arrival *a)
{
	tinyc_gkernel *k = b->k;
	a->pc = tinyc_mmk_param(b, b->fix->cnt, 1), a->pw = tinyc_mmk_param(b, b->fix->ws, 1);
	a->seen = tinyc_gk_shared(k, "sk_seen", TINYC_INT, b->threads / 32, 16, 0);
	a->old = tinyc_gk_reg(k, "sk_old", TINYC_INT);
	return a->pc < 0 || a->pw < 0 || a->seen < 0 || a->old < 0 ? -1 : 0;
}

/* A warp's arrival on counter `cell` once its partials are stored and fenced (appended to
 * body): lane 0 adds 1 and keeps the count it saw in sk_seen[warp]; then the warp's lanes
 * meet.  The expression "the warp arrived last of fix->split" (a shared load: warp-uniform,
 * so the epilogue's warp collectives may run under a branch on it). */
static tinyc_gexpr *sk_arrive(tinyc_mmk *b, const sk_arrival *a, tinyc_gstmt *body, tinyc_gexpr *cell)
{
	tinyc_gkernel *k = b->k;
	tinyc_gstmt *lead = tinyc_gs_block(k);
	tinyc_mmk_append(b, lead, tinyc_gs_atomic_old(k, TINYC_GA_ADD, a->old, a->pc, cell,
						      tinyc_gx_int(k, TINYC_INT, 1), NULL));
	tinyc_mmk_append(b, lead, tinyc_gs_store(k, a->seen, b->warp, tinyc_gx_var(k, a->old), NULL));
	tinyc_mmk_append(b, body, tinyc_gs_decl(k, a->old, tinyc_gx_int(k, TINYC_INT, 0)));
	tinyc_mmk_append(b, body, tinyc_gs_if(k, op2(b, TINYC_GX_EQ, b->lane, I(b, 0)), lead, NULL));
	tinyc_mmk_append(b, body, tinyc_gs_syncwarp(k));
	return op2(b, TINYC_GX_EQ, tinyc_gx_load(k, a->seen, b->warp, NULL),
		   tinyc_gx_int(k, TINYC_INT, b->fix->split - 1));
}

/* The last warp's start (appended to fin): the partials' stores are visible to it, and
 * lane 0 zeroes counter `cell` for the next launch. */
static void sk_reset(tinyc_mmk *b, const sk_arrival *a, tinyc_gstmt *fin, tinyc_gexpr *cell)
{
	tinyc_gkernel *k = b->k;
	tinyc_mmk_append(b, fin, tinyc_gs_fence(k, TINYC_GF_GLOBAL));
	tinyc_mmk_append(b, fin, tinyc_gs_store(k, a->pc, cell, tinyc_gx_int(k, TINYC_INT, 0),
						op2(b, TINYC_GX_EQ, b->lane, I(b, 0))));
}

int tinyc_splitk_fixup(tinyc_mmk *b, const tinyc_mm_frag *f, tinyc_gstmt *body,
		       tinyc_gexpr *warp_in_tile)
{
	const tinyc_sk_fix *fx = b->fix;
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = b->k;
	int64_t tiles_n = (fx->N + t->bn - 1) / t->bn;
	sk_arrival a;
	if (sk_arrival_vars(b, &a) < 0)
		return -1;
	tinyc_mmk_append(b, body, tinyc_gs_comment(k, "split-K: the warp's partials are stored; it "
						       "counts its arrival, and the tile's last warp sums "
						       "the partials in l order, then the epilogue"));
	tinyc_mmk_append(b, body, tinyc_gs_fence(k, TINYC_GF_GLOBAL));
	tinyc_mmk_append(b, body, tinyc_gs_syncwarp(k));
	tinyc_gexpr *tile = op2(b, TINYC_GX_ADD, op2(b, TINYC_GX_MUL, op2(b, TINYC_GX_DIV, b->m0, I(b, t->bm)),
						      I(b, tiles_n)),
				op2(b, TINYC_GX_DIV, b->n0, I(b, t->bn)));
	tinyc_gexpr *cell = tinyc_mmk_let(b, body, "sk_cell", op2(b, TINYC_GX_ADD,
		op2(b, TINYC_GX_MUL, tile, I(b, tinyc_splitk_tile_warps(t))), warp_in_tile));
	tinyc_gexpr *last = tinyc_mmk_let(b, body, "sk_last", sk_arrive(b, &a, body, cell));
	tinyc_gstmt *fin = tinyc_gs_block(k);
	sk_reset(b, &a, fin, cell);
	for (int r = 0; r < f->tr; r++) {
		char nm[24];
		snprintf(nm, sizeof(nm), "sk_row%d", r);
		tinyc_gexpr *row = tinyc_mmk_let(b, fin, nm, op2(b, TINYC_GX_ADD, b->m0,
			op2(b, TINYC_GX_ADD, f->row_base, I(b, f->row_off[r]))));
		for (int c = 0; c < f->tc; c++) {
			tinyc_gexpr *col = op2(b, TINYC_GX_ADD, b->n0, op2(b, TINYC_GX_ADD, f->col_base,
									    I(b, f->col_off[c])));
			tinyc_gexpr *in = t->pred_m ? op2(b, TINYC_GX_LT, row, b->M) : NULL;
			if (t->pred_n) {
				tinyc_gexpr *cn = op2(b, TINYC_GX_LT, col, b->N);
				in = in ? op2(b, TINYC_GX_LAND, in, cn) : cn;
			}
			tinyc_gexpr *ix = op2(b, TINYC_GX_ADD, op2(b, TINYC_GX_MUL, row, I(b, fx->N)), col);
			tinyc_gexpr *sum = NULL;
			for (int l = 0; l < fx->split; l++) {
				tinyc_gexpr *v = tinyc_gx_load(k, a.pw, op2(b, TINYC_GX_ADD, ix,
						I(b, (int64_t)l * fx->M * fx->N)), in);
				sum = sum ? op2(b, TINYC_GX_ADD, sum, v) : v;
			}
			tinyc_mmk_append(b, fin, tinyc_gs_store(k, b->acc, I(b, tinyc_mm_frag_acc(f, r, c)),
								tinyc_gx_cast(k, fx->whole->acc, sum), NULL));
		}
	}
	if (tinyc_splitk_whole_epilogue(b, f, fin) < 0)
		return -1;
	tinyc_mmk_append(b, body, tinyc_gs_if(k, last, fin, NULL));
	tinyc_mmk_append(b, body, tinyc_gs_syncwarp(k));	/* sk_seen read before it is reused */
	return b->error ? -1 : 0;
}

int tinyc_streamk_epilogue(tinyc_mmk *b, const tinyc_mm_frag *f, tinyc_gstmt *body,
			   tinyc_gexpr *tail, tinyc_gexpr *slot, tinyc_gexpr *part,
			   tinyc_gexpr *warp_in_tile)
{
	const tinyc_sk_fix *fx = b->fix;
	tinyc_gkernel *k = b->k;
	int64_t nacc = (int64_t)f->tr * f->tc, tw = tinyc_splitk_tile_warps(b->t);
	int64_t ps = tw * nacc * 32;	/* the partials of one k range of a tile */
	sk_arrival a;
	int lastv = tinyc_gk_reg(k, "sk_last", TINYC_BOOL);
	if (sk_arrival_vars(b, &a) < 0 || lastv < 0)
		return -1;
	/* whole tiles run the epilogue; a tail unit's warp only when it arrives last */
	tinyc_mmk_append(b, body, tinyc_gs_decl(k, lastv, tinyc_gx_bool(k, 1)));
	tinyc_gstmt *tb = tinyc_gs_block(k);
	tinyc_mmk_append(b, tb, tinyc_gs_comment(k, "stream-K tail: the unit's fp32 partials into its "
						     "k range of the tile's slot (value i of lane l of a "
						     "warp at i * 32 + l); the warp counts its arrival, the "
						     "last sums the k ranges in order"));
	tinyc_gexpr *base = tinyc_mmk_let(b, tb, "sk_base", op2(b, TINYC_GX_ADD,
		op2(b, TINYC_GX_ADD, op2(b, TINYC_GX_MUL, slot, I(b, fx->split * ps)),
		    op2(b, TINYC_GX_MUL, warp_in_tile, I(b, nacc * 32))), b->lane));
	tinyc_gexpr *mine = tinyc_mmk_let(b, tb, "sk_mine", op2(b, TINYC_GX_ADD, base,
								op2(b, TINYC_GX_MUL, part, I(b, ps))));
	for (int64_t i = 0; i < nacc; i++)
		tinyc_mmk_append(b, tb, tinyc_gs_store(k, a.pw, op2(b, TINYC_GX_ADD, mine, I(b, i * 32)),
						       tinyc_gx_load(k, b->acc, I(b, i), NULL), NULL));
	tinyc_mmk_append(b, tb, tinyc_gs_fence(k, TINYC_GF_GLOBAL));
	tinyc_mmk_append(b, tb, tinyc_gs_syncwarp(k));
	tinyc_gexpr *cell = tinyc_mmk_let(b, tb, "sk_cell", op2(b, TINYC_GX_ADD, op2(b, TINYC_GX_MUL, slot, I(b, tw)),
								warp_in_tile));
	tinyc_mmk_append(b, tb, tinyc_gs_assign(k, lastv, sk_arrive(b, &a, tb, cell)));
	tinyc_mmk_append(b, tb, tinyc_gs_syncwarp(k));	/* sk_seen read before it is reused */
	tinyc_gstmt *fin = tinyc_gs_block(k);
	sk_reset(b, &a, fin, cell);
	for (int64_t i = 0; i < nacc; i++) {
		tinyc_gexpr *acc = tinyc_gx_load(k, b->acc, I(b, i), NULL), *sum = NULL;
		for (int l = 0; l < fx->split; l++) {
			tinyc_gexpr *v = tinyc_gx_select(k, op2(b, TINYC_GX_EQ, part, I(b, l)), acc,
				tinyc_gx_load(k, a.pw, op2(b, TINYC_GX_ADD, base, I(b, l * ps + i * 32)), NULL));
			sum = sum ? op2(b, TINYC_GX_ADD, sum, v) : v;
		}
		tinyc_mmk_append(b, fin, tinyc_gs_store(k, b->acc, I(b, i), sum, NULL));
	}
	tinyc_gstmt *lastb = tinyc_gs_if(k, tinyc_gx_var(k, lastv), fin, NULL);
	tinyc_mmk_append(b, tb, lastb);
	tinyc_mmk_append(b, body, tinyc_gs_if(k, tail, tb, NULL));
	tinyc_gstmt *epi = tinyc_gs_block(k);
	if (tinyc_evt_emit_epilogue(b, f, epi) < 0)
		return -1;
	tinyc_mmk_append(b, body, tinyc_gs_if(k, tinyc_gx_var(k, lastv), epi, NULL));
	return b->error ? -1 : 0;
}

int tinyc_splitk_emit(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_mm_problem *prob,
		      const tinyc_mm_tiles *t, const char *name)
{
	int64_t M = tinyc_mmk_bound(gm, &prob->m), N = tinyc_mmk_bound(gm, &prob->n);
	if (M < 1 || N < 1)
		return tinyc_error(ctx, "CodegenError", "matmul %s: split-K needs bound sizes", name);
	int dsmem = t->split_fused == 2;	/* summed over a cluster: no workspace, no counters */
	if (dsmem && t->variant != TINYC_MM_WGMMA)
		return tinyc_error(ctx, "CodegenError", "matmul %s: split-K over a cluster needs the "
				   "wgmma template", name);
	/* the workspace of the partials: fp32 [split, M, N] */
	char wname[160];
	snprintf(wname, sizeof(wname), "sk_%s", name);
	int ws = dsmem ? -1 : tinyc_mm_add_temp(gm, wname, TINYC_FLOAT, (int64_t)t->split * M * N);
	if (ws < 0 && !dsmem)
		return -1;
	/* the partials: the plan's template on the split problem */
	tinyc_mm_problem sp;
	int r = tinyc_splitk_problem(ctx, prob, gm->sym_bound, t->split, ws, &sp);
	if (r < 0)
		return r == -1 ? tinyc_error(ctx, "CodegenError", "matmul %s: cannot split K %d ways",
					     name, t->split) : -1;
	tinyc_mm_tiles pt = *t;
	pt.split = 0;
	if (dsmem) {
		tinyc_sk_fix fix = {prob, -1, -1, t->split, M, N, 1};
		r = tinyc_matmul_emit_fixed(ctx, gm, &sp, &pt, name, &fix);
		tinyc_mm_problem_clear(&sp);
		return r < 0 ? -1 : 0;
	}
	if (tinyc_splitk_fused(t)) {	/* summed by the kernel's last warps: counters */
		int64_t cells = (M + t->bm - 1) / t->bm * ((N + t->bn - 1) / t->bn) *
				tinyc_splitk_tile_warps(t);
		snprintf(wname, sizeof(wname), "skc_%s", name);
		tinyc_sk_fix fix = {prob, ws, tinyc_mm_add_temp(gm, wname, TINYC_INT, cells), t->split,
				    M, N};
		r = fix.cnt < 0 ? -1 : tinyc_matmul_emit_fixed(ctx, gm, &sp, &pt, name, &fix);
		tinyc_mm_problem_clear(&sp);
		return r < 0 ? -1 : 0;
	}
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

int tinyc_streamk_emit(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_mm_problem *prob,
		       const tinyc_mm_tiles *t, const char *name)
{
	int64_t M = tinyc_mmk_bound(gm, &prob->m), N = tinyc_mmk_bound(gm, &prob->n);
	int CL = t->cluster > 1 ? 2 : 1;
	if (M < 1 || N < 1 || t->variant != TINYC_MM_WGMMA || t->tail_tiles < 1 || t->split > 1)
		return tinyc_error(ctx, "CodegenError", "matmul %s: a stream-K tail needs the wgmma "
				   "template and bound sizes", name);
	/* the partials: [tail tiles x CTAs of a pair][split][BM x BN], the counters: a tile
	 * slot's warps */
	int64_t slots = (int64_t)t->tail_tiles * CL;
	char wname[160], cname[160];
	snprintf(wname, sizeof(wname), "sk_%s", name);
	snprintf(cname, sizeof(cname), "skc_%s", name);
	int ws = tinyc_mm_add_temp(gm, wname, TINYC_FLOAT, slots * t->tail_split * t->bm * t->bn);
	int cnt = ws < 0 ? -1 : tinyc_mm_add_temp(gm, cname, TINYC_INT, slots * tinyc_splitk_tile_warps(t));
	if (cnt < 0)
		return -1;
	tinyc_sk_fix fix = {prob, ws, cnt, t->tail_split, M, N, 0, t->tail_tiles};
	return tinyc_matmul_emit_fixed(ctx, gm, prob, t, name, &fix) < 0 ? -1 : 0;
}
