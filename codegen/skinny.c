/* The end of the skinny tile's k loop (sched/skinny.c): the mma kernel's warps each hold
 * the whole tile's partial sums over their share of the k steps; here they are summed.
 *
 *   part[(wk * NACC + i) * 32 + lane] = acc[i]      every warp (W = warps_k shares)
 *   barrier
 *   for e = tid; e < NACC * 32; e += threads:      each thread its share of the values
 *     part[e] = part[e] + part[NACC*32 + e] + ..   the W partials in warp order
 *   barrier
 *   if wk == 0: acc[i] = part[i * 32 + lane]; epilogue on the fragment
 *
 * The layout keeps each warp's stores and loads on 32 consecutive words (no bank
 * conflicts); the order of the sum is fixed, so the result is deterministic.  The epilogue
 * runs on one warp (warps_m = warps_n = 1) and has no reductions, hence no barrier inside
 * the branch.
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

int tinyc_skinny_io_init(tinyc_mmk *b, tinyc_gstmt *body, tinyc_skinny_io *io)
{
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	memset(io, 0, sizeof(*io));
	for (int o = 0; o < 2; o++) {
		const tinyc_mm_operand *op = o ? &pr->b : &pr->a;
		int rows = o ? t->bk : t->bm, cols = o ? t->bn : t->bk, ld = cols + 8;
		int cpr = cols / 8, total = rows * cpr;
		io->n[o] = total / t->threads;
		if (total % t->threads || io->n[o] < 1 || io->n[o] > TINYC_SKINNY_CHUNKS)
			return tinyc_error(b->ctx, "CodegenError", "matmul %s: %d chunks of a %dx%d tile "
					   "for %d threads", b->k->name, total, rows, cols, t->threads);
		io->kstride[o] = tinyc_mmk_poly(b, &op->stride[o ? 0 : 1]);
		for (int j = 0; j < io->n[o]; j++) {
			char nm[16];
			tinyc_gexpr *i = op2(b, TINYC_GX_ADD, b->tid, I(b, (int64_t)j * t->threads));
			tinyc_gexpr *r = op2(b, TINYC_GX_DIV, i, I(b, cpr));
			tinyc_gexpr *c = op2(b, TINYC_GX_MUL, op2(b, TINYC_GX_MOD, i, I(b, cpr)), I(b, 8));
			snprintf(nm, sizeof(nm), "r%c%d", o ? 'b' : 'a', j);
			r = tinyc_mmk_let(b, body, nm, r);
			snprintf(nm, sizeof(nm), "c%c%d", o ? 'b' : 'a', j);
			c = tinyc_mmk_let(b, body, nm, c);
			/* A: row m0 + r, column (k) c; B: row (k) r, column n0 + c */
			tinyc_gexpr *gr = o ? r : op2(b, TINYC_GX_ADD, b->m0, r);
			tinyc_gexpr *gc = o ? op2(b, TINYC_GX_ADD, b->n0, c) : c;
			snprintf(nm, sizeof(nm), "g%c%d", o ? 'b' : 'a', j);
			io->goff[o][j] = tinyc_mmk_let(b, body, nm, tinyc_mmk_op_addr(b, op, gr, gc));
			snprintf(nm, sizeof(nm), "s%c%d", o ? 'b' : 'a', j);
			io->soff[o][j] = tinyc_mmk_let(b, body, nm, op2(b, TINYC_GX_ADD,
								 op2(b, TINYC_GX_MUL, r, I(b, ld)), c));
			if (o ? t->pred_n : t->pred_m)
				io->fixed[o][j] = o ? op2(b, TINYC_GX_LT, gc, b->N) : op2(b, TINYC_GX_LT, gr, b->M);
			io->kin[o][j] = o ? r : c;
		}
	}
	return b->error ? -1 : 0;
}

void tinyc_skinny_load(tinyc_mmk *b, tinyc_gstmt *blk, const tinyc_skinny_io *io, int As,
		       int Bs, tinyc_gexpr *kt, tinyc_gexpr *st)
{
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = b->k;
	tinyc_gexpr *k0 = op2(b, TINYC_GX_MUL, kt, I(b, t->bk));
	for (int o = 0; o < 2; o++) {
		const tinyc_mm_operand *op = o ? &pr->b : &pr->a;
		int64_t stage = o ? (int64_t)t->bk * (t->bn + 8) : (int64_t)t->bm * (t->bk + 8);
		tinyc_gexpr *base = op2(b, TINYC_GX_MUL, st, I(b, stage));
		tinyc_gexpr *kofs = op2(b, TINYC_GX_MUL, k0, io->kstride[o]);
		for (int j = 0; j < io->n[o]; j++) {
			tinyc_gexpr *in = io->fixed[o][j];
			if (t->pred_k) {
				tinyc_gexpr *kin = op2(b, TINYC_GX_LT, op2(b, TINYC_GX_ADD, k0, io->kin[o][j]), b->K);
				in = in ? op2(b, TINYC_GX_LAND, in, kin) : kin;
			}
			/* a chunk outside the matrix copies 0 bytes (zero fill) from the operand's
			 * first element */
			tinyc_gexpr *src = op2(b, TINYC_GX_ADD, kofs, io->goff[o][j]);
			if (in)
				src = tinyc_gx_select(k, in, src, tinyc_mmk_poly(b, &op->offset));
			tinyc_mmk_append(b, blk, tinyc_gs_copy(k, o ? Bs : As,
							       op2(b, TINYC_GX_ADD, base, io->soff[o][j]),
							       tinyc_mmk_param(b, op->buf, 0), src, 8, in, 1));
		}
	}
}

int tinyc_mma_ksum(tinyc_mmk *b, tinyc_gstmt *body, tinyc_gexpr *wk, const tinyc_mm_frag *f,
		   int nacc)
{
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = b->k;
	int W = t->warps_k;
	int64_t vals = (int64_t)nacc * 32;	/* one warp's values */
	if (t->warps_m * t->warps_n != 1 || W < 2 || t->threads != 32 * W)
		return tinyc_error(b->ctx, "CodegenError", "matmul %s: the k steps' sum needs one "
				   "warp tile split over all warps", k->name);
	int part = tinyc_gk_shared(k, "part", TINYC_FLOAT, W * vals, 16, 1);
	int iv = tinyc_gk_reg(k, "ki", b->it), ev = tinyc_gk_reg(k, "ke", b->it);
	int sv = tinyc_gk_reg(k, "ks", TINYC_FLOAT);
	if (part < 0 || iv < 0 || ev < 0 || sv < 0)
		return -1;
	tinyc_mmk_append(b, body, tinyc_gs_comment(k, "the warps' partials of the whole tile summed "
						       "in warp order through shared memory"));
	/* every warp's accumulators */
	tinyc_gexpr *i = tinyc_gx_var(k, iv);
	tinyc_gexpr *wbase = op2(b, TINYC_GX_MUL, wk, I(b, vals));
	tinyc_gstmt *put = tinyc_gs_block(k);
	tinyc_mmk_append(b, put, tinyc_gs_store(k, part,
		op2(b, TINYC_GX_ADD, wbase, op2(b, TINYC_GX_ADD, op2(b, TINYC_GX_MUL, i, I(b, 32)), b->lane)),
		tinyc_gx_load(k, b->acc, i, NULL), NULL));
	tinyc_mmk_append(b, body, tinyc_gs_for_range(k, iv, I(b, 0), I(b, nacc), I(b, 1), -1, put));
	tinyc_mmk_append(b, body, tinyc_gs_barrier(k));
	/* each thread sums its values over the warps, in warp order */
	tinyc_gexpr *e = tinyc_gx_var(k, ev);
	tinyc_gstmt *sum = tinyc_gs_block(k);
	tinyc_mmk_append(b, sum, tinyc_gs_decl(k, sv, tinyc_gx_load(k, part, e, NULL)));
	tinyc_gexpr *s = tinyc_gx_var(k, sv);
	for (int w = 1; w < W; w++)
		tinyc_mmk_append(b, sum, tinyc_gs_assign(k, sv, op2(b, TINYC_GX_ADD, s,
			tinyc_gx_load(k, part, op2(b, TINYC_GX_ADD, e, I(b, w * vals)), NULL))));
	tinyc_mmk_append(b, sum, tinyc_gs_store(k, part, e, s, NULL));
	tinyc_mmk_append(b, body, tinyc_gs_for_range(k, ev, b->tid, I(b, vals), I(b, t->threads),
						     vals / t->threads <= 8 ? -1 : 0, sum));
	tinyc_mmk_append(b, body, tinyc_gs_barrier(k));
	/* warp 0: the sums into its fragment, then the epilogue */
	tinyc_gstmt *epi = tinyc_gs_block(k);
	tinyc_gstmt *get = tinyc_gs_block(k);
	tinyc_mmk_append(b, get, tinyc_gs_store(k, b->acc, i,
		tinyc_gx_load(k, part, op2(b, TINYC_GX_ADD, op2(b, TINYC_GX_MUL, i, I(b, 32)), b->lane), NULL),
		NULL));
	tinyc_mmk_append(b, epi, tinyc_gs_for_range(k, iv, I(b, 0), I(b, nacc), I(b, 1), -1, get));
	tinyc_mm_frag fe = *f;
	fe.stage = 0;	/* no staged stores: they are per warp, but keep the branch plain */
	if (b->error || tinyc_evt_emit_epilogue(b, &fe, epi) < 0)
		return -1;
	tinyc_mmk_append(b, body, tinyc_gs_if(k, op2(b, TINYC_GX_EQ, wk, I(b, 0)), epi, NULL));
	return b->error ? -1 : 0;
}
