/* The contraction templates as GPU IR (see codegen/matmul.h and sched/matmul.h).
 *
 * SIMT (seed 002 §6.1, §7): block (16, 16); thread (tx, ty) owns rows ty*TM + i and columns
 * tx*TN + j of the CTA tile.
 *
 *   for k0 in 0, BK, .. < K:
 *     As[r][q] = A[m0 + r, k0 + q] (0 outside), Bs[q][c] = B[k0 + q, n0 + c]: each thread
 *       copies elements tid, tid + 256, ..; consecutive threads take consecutive elements
 *       along the operand's contiguous axis (coalesced)
 *     barrier
 *     for kk < BK: a[i] = As[ty*TM + i][kk], b[j] = Bs[kk][tx*TN + j], acc[i][j] += a[i]*b[j]
 *     barrier
 *
 * MMA (seed 002 §12): warps_m x warps_n warps, warp (wm, wn) owns a (BM/warps_m) x
 * (BN/warps_n) tile of m16n8 accumulator fragments.  Shared tiles As[S][BM][BK+8] and
 * Bs[S][BK][BN+8] (padded so ldmatrix rows hit distinct banks) form a ring of S stages:
 *
 *   prologue: tiles 0 .. S-2 issued (cp.async 16-byte chunks, zero-filled at the tail), one
 *             commit group each
 *   for t < tiles: wait until tile t landed (cp.async.wait_group S-2), barrier,
 *             per 16-wide k step: ldmatrix.x4 A fragments, ldmatrix.x4.trans B fragments,
 *             mma.sync m16n8k16 into fp32 accumulators; then issue tile t+S-1 into the
 *             stage tile t-1 used (every warp is past it: the barrier), commit.
 *
 * An operand that is not contiguous along the tile's rows, or whose sizes do not keep the
 * 16-byte chunks aligned at run time, is copied element by element into the same layout.
 * With S = 1 the loop is load, barrier, compute, barrier.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/matmul.h"
#include "codegen/wgmma_ring.h"

/* ------------------------------------------------------------------ helpers ---- */

int tinyc_mm_frag_acc(const tinyc_mm_frag *f, int a, int b)
{
	if (!f->mma)
		return a * f->tc + b;
	return ((a / 2) * f->ni + b / 2) * 4 + (a % 2) * 2 + (b % 2);
}

void tinyc_mmk_append(tinyc_mmk *b, tinyc_gstmt *block, tinyc_gstmt *s)
{
	if (!s || !block || tinyc_gs_append(b->k, block, s) < 0)
		b->error = 1;
}

tinyc_gexpr *tinyc_mmk_poly(tinyc_mmk *b, const tinyc_evt_poly *p)
{
	tinyc_gkernel *k = b->k;
	tinyc_gexpr *e = tinyc_gx_int(k, b->it, 0);
	for (int i = 0; i < p->nterm; i++) {
		tinyc_gexpr *t = tinyc_gx_int(k, b->it, p->t[i].c);
		for (int s = 0; s < p->t[i].nsym; s++) {
			int v = tinyc_gk_sym_param(k, p->t[i].sym[s]);
			if (v < 0) {
				b->error = 1;
				return NULL;
			}
			t = tinyc_gx_binary(k, TINYC_GX_MUL, t, tinyc_gx_var(k, v));
		}
		e = tinyc_gx_binary(k, TINYC_GX_ADD, e, t);
	}
	if (!e)
		b->error = 1;
	return e;
}

tinyc_gexpr *tinyc_mmk_dim(tinyc_mmk *b, const tinyc_dim *d)
{
	tinyc_evt_poly p = tinyc_evt_poly_dim(d);
	return tinyc_mmk_poly(b, &p);
}

int tinyc_mmk_param(tinyc_mmk *b, int buf, int written)
{
	if (buf < 0 || buf >= b->gm->nbuf) {
		b->error = 1;
		tinyc_error(b->ctx, "CodegenError", "kernel %s: buffer %d does not exist", b->k->name, buf);
		return -1;
	}
	if (buf >= b->nparam_cap) {
		int nc = b->gm->nbuf + 8;
		int *np = realloc(b->param, sizeof(int) * (size_t)nc);
		if (!np) {
			b->error = 1;
			return -1;
		}
		for (int i = b->nparam_cap; i < nc; i++)
			np[i] = -1;
		b->param = np;
		b->nparam_cap = nc;
	}
	if (b->param[buf] < 0) {
		const tinyc_gbuf *gb = &b->gm->bufs[buf];
		b->param[buf] = tinyc_gk_param_ptr(b->k, gb->name, gb->dtype, !written, buf);
		if (b->param[buf] < 0)
			b->error = 1;
	} else if (written) {
		b->k->vars[b->param[buf]].is_const = 0;
	}
	return b->param[buf];
}

/* A register initialised to v (declared in block); its value. */
static tinyc_gexpr *let(tinyc_mmk *b, tinyc_gstmt *block, const char *name, tinyc_gexpr *v)
{
	if (!v) {
		b->error = 1;
		return NULL;
	}
	int var = tinyc_gk_reg(b->k, name, v->dtype);
	if (var < 0) {
		b->error = 1;
		return NULL;
	}
	tinyc_mmk_append(b, block, tinyc_gs_decl(b->k, var, v));
	return tinyc_gx_var(b->k, var);
}

/* Shorthands for index arithmetic. */
static tinyc_gexpr *I(tinyc_mmk *b, int64_t v)
{
	return tinyc_gx_int(b->k, b->it, v);
}

static tinyc_gexpr *add(tinyc_mmk *b, tinyc_gexpr *x, tinyc_gexpr *y)
{
	return tinyc_gx_binary(b->k, TINYC_GX_ADD, x, y);
}

static tinyc_gexpr *mul(tinyc_mmk *b, tinyc_gexpr *x, tinyc_gexpr *y)
{
	return tinyc_gx_binary(b->k, TINYC_GX_MUL, x, y);
}

static tinyc_gexpr *bin(tinyc_mmk *b, tinyc_gx_op op, tinyc_gexpr *x, tinyc_gexpr *y)
{
	return tinyc_gx_binary(b->k, op, x, y);
}

/* x && y with NULL as true. */
static tinyc_gexpr *land(tinyc_mmk *b, tinyc_gexpr *x, tinyc_gexpr *y)
{
	if (!x)
		return y;
	if (!y || tinyc_gx_equal(x, y))
		return x;
	return bin(b, TINYC_GX_LAND, x, y);
}

/* The element offset of (row, col) of operand op (rows m or k, columns k or n). */
tinyc_gexpr *tinyc_mmk_op_addr(tinyc_mmk *b, const tinyc_mm_operand *op, tinyc_gexpr *row,
			    tinyc_gexpr *col)
{
	tinyc_gexpr *e = tinyc_mmk_poly(b, &op->offset);
	if (!tinyc_evt_poly_is_zero(&op->stride[0]))
		e = add(b, e, mul(b, row, tinyc_mmk_poly(b, &op->stride[0])));
	if (!tinyc_evt_poly_is_zero(&op->stride[1]))
		e = add(b, e, mul(b, col, tinyc_mmk_poly(b, &op->stride[1])));
	if (!tinyc_evt_poly_is_zero(&op->stride[2]))
		e = add(b, e, mul(b, b->l, tinyc_mmk_poly(b, &op->stride[2])));
	return e;
}

/* The tail test of an operand element: row < R (when pr) && col < C (when pc). */
static tinyc_gexpr *in_tile(tinyc_mmk *b, tinyc_gexpr *row, tinyc_gexpr *R, int pr,
			    tinyc_gexpr *col, tinyc_gexpr *C, int pc)
{
	return land(b, pr ? bin(b, TINYC_GX_LT, row, R) : NULL, pc ? bin(b, TINYC_GX_LT, col, C) : NULL);
}

/* Whether poly p is a multiple of q at run time, as a bool expression (NULL: always). */
static tinyc_gexpr *multiple_of(tinyc_mmk *b, const tinyc_evt_poly *p, int q)
{
	int all = 1;
	for (int i = 0; i < p->nterm; i++)
		all &= p->t[i].c % q == 0;
	if (all)
		return NULL;
	return bin(b, TINYC_GX_EQ, bin(b, TINYC_GX_MOD, tinyc_mmk_poly(b, p), I(b, q)), I(b, 0));
}

/* The dtype products are computed in: float for 16-bit MULs, else the MUL's. */
static tinyc_dtype mul_compute(const tinyc_mm_problem *p)
{
	return tinyc_dtype_is_16bit_float(p->mul) ? TINYC_FLOAT : p->mul;
}

/* Start the matmul kernel: launch geometry, block coordinates, tile origin, accumulators. */
tinyc_gkernel *tinyc_mmk_begin(tinyc_mmk *b, const char *name, int acc_count)
{
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = tinyc_gk_alloc(b->gm, name);
	if (!k)
		return NULL;
	b->k = k;
	k->index_dtype = b->it;
	if (t->variant == TINYC_MM_SIMT) {
		k->block[0] = 16, k->block[1] = 16, k->block[2] = 1;
	} else {
		k->block[0] = t->threads, k->block[1] = 1, k->block[2] = 1;
	}
	b->threads = t->threads;
	const tinyc_dim *ext[3] = {&pr->n, &pr->m, &pr->l};
	int tile[3] = {t->bn, t->bm, 1};
	for (int i = 0; i < 3; i++) {
		tinyc_gexpr *e = ext[i]->sym >= 0 ? tinyc_gx_sym(k, ext[i]->sym)
						  : tinyc_gx_int(k, TINYC_LONG, ext[i]->val);
		k->grid[i] = tile[i] > 1 ? tinyc_gx_ceildiv(k, e, tinyc_gx_int(k, TINYC_LONG, tile[i])) : e;
	}
	tinyc_gstmt *body = k->body;
	b->M = tinyc_mmk_dim(b, &pr->m);
	b->N = tinyc_mmk_dim(b, &pr->n);
	b->K = tinyc_mmk_dim(b, &pr->k);
	tinyc_gexpr *bx = let(b, body, "bx", tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_BID_X)));
	tinyc_gexpr *by = let(b, body, "by", tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_BID_Y)));
	b->l = pr->evt && pr->evt->batched
		       ? let(b, body, "l", tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_BID_Z)))
		       : I(b, 0);
	b->m0 = let(b, body, "m0", mul(b, by, I(b, t->bm)));
	b->n0 = let(b, body, "n0", mul(b, bx, I(b, t->bn)));
	b->lane = let(b, body, "lane", tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_LANE)));
	b->warp = let(b, body, "warp", tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_WARP)));
	b->acc = tinyc_gk_reg_array(k, "acc", pr->acc, acc_count);
	if (b->acc < 0) {
		b->error = 1;
		return k;
	}
	tinyc_mmk_append(b, body, tinyc_gs_decl(k, b->acc, tinyc_gx_int(k, pr->acc, 0)));
	return k;
}

tinyc_gkernel *tinyc_mmk_begin_warps(tinyc_mmk *b, const char *name, int acc_count, tinyc_gexpr **wm,
				     tinyc_gexpr **wn, tinyc_gexpr **g, tinyc_gexpr **t4)
{
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = tinyc_mmk_begin(b, name, acc_count);
	if (!k || b->error)
		return k;
	tinyc_gstmt *body = k->body;
	b->tid = let(b, body, "tid", tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_TID_X)));
	*wm = let(b, body, "wm", bin(b, TINYC_GX_DIV, b->warp, I(b, t->warps_n)));
	*wn = let(b, body, "wn", bin(b, TINYC_GX_MOD, b->warp, I(b, t->warps_n)));
	*g = let(b, body, "g", bin(b, TINYC_GX_DIV, b->lane, I(b, 4)));
	*t4 = let(b, body, "t4", bin(b, TINYC_GX_MOD, b->lane, I(b, 4)));
	return k;
}

tinyc_gexpr *tinyc_mmk_let(tinyc_mmk *b, tinyc_gstmt *block, const char *name, tinyc_gexpr *v)
{
	return let(b, block, name, v);
}

/* ------------------------------------------------------------------- SIMT ---- */

/* Cooperative predicated copy of one operand tile (rows x cols) into shared `sh` (row-major,
 * leading dimension ld, at element base): element i of the tile goes to thread i % threads;
 * the walk follows the operand's contiguous axis. */
static void copy_tile_elements(tinyc_mmk *b, tinyc_gstmt *blk, const tinyc_mm_operand *op, int sh,
			       tinyc_gexpr *base, int rows, int cols, int ld, tinyc_gexpr *row0,
			       tinyc_gexpr *col0, tinyc_gexpr *R, int pr, tinyc_gexpr *C, int pc,
			       const char *iname)
{
	tinyc_gkernel *k = b->k;
	int along_rows = !tinyc_evt_poly_is_const(&op->stride[1], 1) &&
			 tinyc_evt_poly_is_const(&op->stride[0], 1);
	/* a loop of constant trip count, unrolled, so that the loads of a thread are all in
	 * flight before its stores (i = tid + j * threads) */
	int64_t total = (int64_t)rows * cols, trips = (total + b->threads - 1) / b->threads;
	char jname[32];
	snprintf(jname, sizeof(jname), "%s_j", iname);
	int jv = tinyc_gk_reg(k, jname, b->it);
	if (jv < 0) {
		b->error = 1;
		return;
	}
	tinyc_gstmt *body = tinyc_gs_block(k);
	tinyc_gexpr *i = let(b, body, iname, add(b, b->tid, mul(b, tinyc_gx_var(k, jv), I(b, b->threads))));
	tinyc_gexpr *r = along_rows ? bin(b, TINYC_GX_MOD, i, I(b, rows)) : bin(b, TINYC_GX_DIV, i, I(b, cols));
	tinyc_gexpr *c = along_rows ? bin(b, TINYC_GX_DIV, i, I(b, rows)) : bin(b, TINYC_GX_MOD, i, I(b, cols));
	if (op->gather.on) {
		/* im2col: along the coordinate whose innermost axis is longer (a convolution's
		 * output row, ow, rather than kw); when the threads cover whole lines, a thread
		 * keeps one coordinate for the whole k loop (its split is computed once) */
		const tinyc_mm_gather *g = &op->gather;
		along_rows = g->ext[0][g->nax[0] - 1] >= g->ext[1][g->nax[1] - 1];
		int line = along_rows ? rows : cols;
		tinyc_gexpr *j = tinyc_gx_var(k, jv);
		if (b->threads % line == 0) {
			tinyc_gexpr *fixed = bin(b, TINYC_GX_MOD, b->tid, I(b, line));
			tinyc_gexpr *step = add(b, bin(b, TINYC_GX_DIV, b->tid, I(b, line)),
						mul(b, j, I(b, b->threads / line)));
			r = along_rows ? fixed : step;
			c = along_rows ? step : fixed;
		} else {
			r = along_rows ? bin(b, TINYC_GX_MOD, i, I(b, rows)) : bin(b, TINYC_GX_DIV, i, I(b, cols));
			c = along_rows ? bin(b, TINYC_GX_DIV, i, I(b, rows)) : bin(b, TINYC_GX_MOD, i, I(b, cols));
		}
	}
	tinyc_gexpr *gr = add(b, row0, r), *gc = add(b, col0, c);
	tinyc_gexpr *in = in_tile(b, gr, R, pr, gc, C, pc), *addr, *guard = NULL;
	if (op->gather.on) {	/* im2col: the window's guard too */
		addr = tinyc_conv_addr(b, op, gr, gc, &guard);
		in = land(b, in, guard);
	} else {
		addr = tinyc_mmk_op_addr(b, op, gr, gc);
	}
	tinyc_gexpr *v = tinyc_gx_load(k, tinyc_mmk_param(b, op->buf, 0), addr, in);
	tinyc_gstmt *st = tinyc_gs_store(k, sh, add(b, base, add(b, mul(b, r, I(b, ld)), c)),
					 tinyc_gx_cast(k, k->vars[sh].dtype, v),
					 total % b->threads ? bin(b, TINYC_GX_LT, i, I(b, total)) : NULL);
	tinyc_mmk_append(b, body, st);
	tinyc_mmk_append(b, blk, tinyc_gs_for_range(k, jv, I(b, 0), I(b, trips), I(b, 1),
						    trips <= 64 ? -1 : 8, body));
}

/* The SIMT kernel body. */
static int build_simt(tinyc_mmk *b, const char *name)
{
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	int TM = t->tm, TN = t->tn, BM = t->bm, BN = t->bn, BK = t->bk;
	tinyc_gkernel *k = tinyc_mmk_begin(b, name, TM * TN);
	if (!k || b->error)
		return -1;
	tinyc_gstmt *body = k->body;
	tinyc_gexpr *tx = let(b, body, "tx", tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_TID_X)));
	tinyc_gexpr *ty = let(b, body, "ty", tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_TID_Y)));
	b->tid = let(b, body, "tid", add(b, mul(b, ty, I(b, 16)), tx));
	int As = tinyc_gk_shared(k, "As", pr->a.dtype, (int64_t)BM * BK, 0, 0);
	int Bs = tinyc_gk_shared(k, "Bs", pr->b.dtype, (int64_t)BK * BN, 0, 0);
	tinyc_dtype mc = mul_compute(pr);
	int afr = tinyc_gk_reg_array(k, "a", mc, TM), bfr = tinyc_gk_reg_array(k, "b", mc, TN);
	int k0v = tinyc_gk_reg(k, "k0", b->it), kkv = tinyc_gk_reg(k, "kk", b->it);
	if (As < 0 || Bs < 0 || afr < 0 || bfr < 0 || k0v < 0 || kkv < 0)
		return -1;
	tinyc_mmk_append(b, body, tinyc_gs_decl(k, afr, NULL));
	tinyc_mmk_append(b, body, tinyc_gs_decl(k, bfr, NULL));
	tinyc_gexpr *k0 = tinyc_gx_var(k, k0v), *kk = tinyc_gx_var(k, kkv);
	tinyc_gstmt *loop = tinyc_gs_block(k);
	tinyc_mmk_append(b, loop, tinyc_gs_comment(k, "cooperative predicated tile loads (zero "
						       "outside the matrices)"));
	copy_tile_elements(b, loop, &pr->a, As, I(b, 0), BM, BK, BK, b->m0, k0, b->M, t->pred_m, b->K,
			   t->pred_k, "ia");
	copy_tile_elements(b, loop, &pr->b, Bs, I(b, 0), BK, BN, BN, k0, b->n0, b->K, t->pred_k, b->N,
			   t->pred_n, "ib");
	tinyc_mmk_append(b, loop, tinyc_gs_barrier(k));
	tinyc_gstmt *inner = tinyc_gs_block(k);
	for (int i = 0; i < TM; i++)
		tinyc_mmk_append(b, inner, tinyc_gs_store(k, afr, I(b, i),
			tinyc_gx_cast(k, mc, tinyc_gx_load(k, As, add(b, mul(b, add(b, mul(b, ty, I(b, TM)), I(b, i)), I(b, BK)), kk), NULL)),
			NULL));
	for (int j = 0; j < TN; j++)
		tinyc_mmk_append(b, inner, tinyc_gs_store(k, bfr, I(b, j),
			tinyc_gx_cast(k, mc, tinyc_gx_load(k, Bs, add(b, mul(b, kk, I(b, BN)), add(b, mul(b, tx, I(b, TN)), I(b, j))), NULL)),
			NULL));
	for (int i = 0; i < TM; i++)
		for (int j = 0; j < TN; j++) {
			tinyc_gexpr *ai = tinyc_gx_load(k, afr, I(b, i), NULL);
			tinyc_gexpr *bj = tinyc_gx_load(k, bfr, I(b, j), NULL);
			tinyc_gexpr *ix = I(b, i * TN + j);
			tinyc_gexpr *prod = tinyc_gx_cast(k, pr->acc, bin(b, TINYC_GX_MUL, ai, bj));
			tinyc_mmk_append(b, inner, tinyc_gs_store(k, b->acc, ix,
				bin(b, TINYC_GX_ADD, tinyc_gx_load(k, b->acc, ix, NULL), prod), NULL));
		}
	tinyc_mmk_append(b, loop, tinyc_gs_for_range(k, kkv, I(b, 0), I(b, BK), I(b, 1),
						     BK <= 32 ? -1 : 8, inner));
	tinyc_mmk_append(b, loop, tinyc_gs_barrier(k));
	tinyc_mmk_append(b, body, tinyc_gs_for_range(k, k0v, I(b, 0), b->K, I(b, BK), 0, loop));
	if (b->error)
		return -1;
	tinyc_mm_frag f;
	memset(&f, 0, sizeof(f));
	f.tr = TM, f.tc = TN;
	f.row_run = TM, f.col_run = TN;
	f.row_base = mul(b, ty, I(b, TM));
	f.col_base = mul(b, tx, I(b, TN));
	for (int i = 0; i < TM; i++)
		f.row_off[i] = i;
	for (int j = 0; j < TN; j++)
		f.col_off[j] = j;
	tinyc_mmk_simt_lanes(b, &f, tx);
	return tinyc_evt_emit_epilogue(b, &f, body);
}

void tinyc_mmk_simt_lanes(tinyc_mmk *b, tinyc_mm_frag *f, tinyc_gexpr *tx)
{
	f->row_xor[0] = 16, f->nrow_xor = 1;	/* lane = (ty % 2) * 16 + tx */
	f->col_xor[0] = 1, f->col_xor[1] = 2, f->col_xor[2] = 4, f->col_xor[3] = 8, f->ncol_xor = 4;
	f->row_lead = bin(b, TINYC_GX_EQ, bin(b, TINYC_GX_AND, b->lane, I(b, 16)), I(b, 0));
	f->col_lead = bin(b, TINYC_GX_EQ, tx, I(b, 0));
	f->groups_m = 8, f->group_m = b->warp;
	f->groups_n = 1, f->group_n = I(b, 0);
	f->pair_stores = 1;
}

/* -------------------------------------------------------------------- MMA ---- */

/* Issue the copies of k-tile kt into ring stage st (appended to blk). */
static void mma_load_tile(tinyc_mmk *b, tinyc_gstmt *blk, int As, int Bs, tinyc_gexpr *kt,
			  tinyc_gexpr *st, int tag)
{
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = b->k;
	int BM = t->bm, BN = t->bn, BK = t->bk, ASTR = BK + 8, BSTR = BN + 8;
	tinyc_gexpr *k0 = mul(b, kt, I(b, BK));
	tinyc_gexpr *abase = mul(b, st, I(b, (int64_t)BM * ASTR));
	tinyc_gexpr *bbase = mul(b, st, I(b, (int64_t)BK * BSTR));
	char name[16];
	for (int o = 0; o < 2; o++) {
		const tinyc_mm_operand *op = o ? &pr->b : &pr->a;
		int async = o ? t->async_b : t->async_a;
		int sh = o ? Bs : As;
		int rows = o ? BK : BM, cols = o ? BN : BK, ld = o ? BSTR : ASTR;
		tinyc_gexpr *base = o ? bbase : abase;
		tinyc_gexpr *row0 = o ? k0 : b->m0, *col0 = o ? b->n0 : k0;
		tinyc_gexpr *R = o ? b->K : b->M, *C = o ? b->N : b->K;
		int pr_ = o ? t->pred_k : t->pred_m, pc = o ? t->pred_n : t->pred_k;
		tinyc_gstmt *slow = tinyc_gs_block(k);
		snprintf(name, sizeof(name), "e%c%d", o ? 'b' : 'a', tag);
		copy_tile_elements(b, slow, op, sh, base, rows, cols, ld, row0, col0, R, pr_, C, pc, name);
		if (!async) {
			tinyc_mmk_append(b, blk, slow);
			continue;
		}
		/* 16-byte chunks along the rows: aligned when the row stride, the offset, the batch
		 * stride and the column extent are multiples of 8 elements */
		tinyc_gexpr *ok = multiple_of(b, &op->stride[0], 8);
		ok = land(b, ok, multiple_of(b, &op->offset, 8));
		if (pr->evt && pr->evt->batched)
			ok = land(b, ok, multiple_of(b, &op->stride[2], 8));
		tinyc_evt_poly cext = tinyc_evt_poly_dim(o ? &pr->n : &pr->k);
		ok = land(b, ok, multiple_of(b, &cext, 8));
		tinyc_gstmt *fast = tinyc_gs_block(k);
		snprintf(name, sizeof(name), "c%c%d", o ? 'b' : 'a', tag);
		int iv = tinyc_gk_reg(k, name, b->it);
		if (iv < 0) {
			b->error = 1;
			return;
		}
		tinyc_gexpr *i = tinyc_gx_var(k, iv);
		int cpr = cols / 8;
		tinyc_gexpr *r = bin(b, TINYC_GX_DIV, i, I(b, cpr));
		tinyc_gexpr *c = mul(b, bin(b, TINYC_GX_MOD, i, I(b, cpr)), I(b, 8));
		tinyc_gexpr *gr = add(b, row0, r), *gc = add(b, col0, c);
		tinyc_gstmt *cb = tinyc_gs_block(k);
		/* a chunk outside the matrix copies 0 bytes (zero fill) from the operand's first
		 * element: the address stays valid and aligned */
		tinyc_gexpr *in = in_tile(b, gr, R, pr_, gc, C, pc);
		tinyc_gexpr *src = tinyc_mmk_op_addr(b, op, gr, gc);
		if (in)
			src = tinyc_gx_select(k, in, src, tinyc_mmk_poly(b, &op->offset));
		tinyc_mmk_append(b, cb, tinyc_gs_copy(k, sh, add(b, base, add(b, mul(b, r, I(b, ld)), c)),
						      tinyc_mmk_param(b, op->buf, 0), src, 8, in, 1));
		tinyc_mmk_append(b, fast, tinyc_gs_for_range(k, iv, b->tid, I(b, (int64_t)rows * cpr),
							     I(b, b->threads), 0, cb));
		if (!ok)
			tinyc_mmk_append(b, blk, fast);
		else
			tinyc_mmk_append(b, blk, tinyc_gs_if(k, ok, fast, slow));
	}
}

/* The fragments and mma.sync of ring stage st (appended to blk). */
static void mma_compute(tinyc_mmk *b, tinyc_gstmt *blk, int As, int Bs, int afr, int bfr,
			tinyc_gexpr *st, tinyc_gexpr *wm, tinyc_gexpr *wn, tinyc_gexpr *lr,
			tinyc_gexpr *lc)
{
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = b->k;
	int BM = t->bm, BN = t->bn, BK = t->bk, ASTR = BK + 8, BSTR = BN + 8;
	int WM = BM / t->warps_m, WN = BN / t->warps_n, MI = WM / 16, NI = WN / 8;
	tinyc_gexpr *abase = mul(b, st, I(b, (int64_t)BM * ASTR));
	tinyc_gexpr *bbase = mul(b, st, I(b, (int64_t)BK * BSTR));
	for (int ks = 0; ks < BK / 16; ks++) {
		tinyc_gexpr *k16 = I(b, ks * 16);	/* the step's first k in the tile */
		for (int mi = 0; mi < MI; mi++) {
			tinyc_gexpr *row = add(b, add(b, mul(b, wm, I(b, WM)), I(b, mi * 16)), lr);
			tinyc_gexpr *src = add(b, abase, add(b, mul(b, row, I(b, ASTR)), add(b, k16, lc)));
			tinyc_mmk_append(b, blk, tinyc_gs_ldmatrix(k, afr, I(b, mi * 8), As, src, 4, 0));
		}
		for (int nj = 0; nj < NI / 2; nj++) {
			tinyc_gexpr *row = add(b, k16, lr);
			tinyc_gexpr *col = add(b, add(b, mul(b, wn, I(b, WN)), I(b, nj * 16)), lc);
			tinyc_gexpr *src = add(b, bbase, add(b, mul(b, row, I(b, BSTR)), col));
			tinyc_mmk_append(b, blk, tinyc_gs_ldmatrix(k, bfr, I(b, nj * 8), Bs, src, 4, 1));
		}
		for (int mi = 0; mi < MI; mi++)
			for (int ni = 0; ni < NI; ni++) {
				tinyc_gexpr *c = I(b, (mi * NI + ni) * 4);
				tinyc_mmk_append(b, blk, tinyc_gs_mma(k, b->acc, c, afr, I(b, mi * 8), bfr,
								      I(b, ni * 4), b->acc, c));
			}
	}
}

void tinyc_mm_frag_mma(tinyc_mmk *b, tinyc_mm_frag *f, tinyc_gexpr *wm, tinyc_gexpr *wn,
		       tinyc_gexpr *g, tinyc_gexpr *t4, int WM, int WN)
{
	const tinyc_mm_tiles *t = b->t;
	int MI = WM / 16, NI = WN / 8;
	memset(f, 0, sizeof(*f));
	f->mma = 1;
	f->ni = NI;
	f->tr = MI * 2, f->tc = NI * 2;
	f->row_run = 1, f->col_run = 2;
	f->row_base = add(b, mul(b, wm, I(b, WM)), g);
	f->col_base = add(b, mul(b, wn, I(b, WN)), mul(b, t4, I(b, 2)));
	for (int a = 0; a < f->tr; a++)
		f->row_off[a] = (a / 2) * 16 + (a % 2) * 8;
	for (int c = 0; c < f->tc; c++)
		f->col_off[c] = (c / 2) * 8 + (c % 2);
	f->row_xor[0] = 4, f->row_xor[1] = 8, f->row_xor[2] = 16, f->nrow_xor = 3;
	f->col_xor[0] = 1, f->col_xor[1] = 2, f->ncol_xor = 2;
	f->row_lead = bin(b, TINYC_GX_EQ, g, I(b, 0));
	f->col_lead = bin(b, TINYC_GX_EQ, t4, I(b, 0));
	f->groups_m = t->warps_m, f->group_m = wm;
	f->groups_n = t->warps_n, f->group_n = wn;
	f->pair_stores = 1;
}

/* The MMA kernel body. */
static int build_mma(tinyc_mmk *b, const char *name)
{
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	int BM = t->bm, BN = t->bn, BK = t->bk, S = t->stages;
	int WM = BM / t->warps_m, WN = BN / t->warps_n, MI = WM / 16, NI = WN / 8;
	tinyc_gexpr *wm, *wn, *g, *t4;
	tinyc_gkernel *k = tinyc_mmk_begin_warps(b, name, MI * NI * 4, &wm, &wn, &g, &t4);
	if (!k || b->error)
		return -1;
	tinyc_gstmt *body = k->body;
	tinyc_gexpr *lr = let(b, body, "lr", bin(b, TINYC_GX_MOD, b->lane, I(b, 16)));
	tinyc_gexpr *lc = let(b, body, "lc", mul(b, bin(b, TINYC_GX_DIV, b->lane, I(b, 16)), I(b, 8)));
	int As = tinyc_gk_shared(k, "As", pr->a.dtype, (int64_t)S * BM * (BK + 8), 16, t->dyn_smem);
	int Bs = tinyc_gk_shared(k, "Bs", pr->b.dtype, (int64_t)S * BK * (BN + 8), 16, t->dyn_smem);
	int afr = tinyc_gk_reg_array(k, "afrag", pr->a.dtype, MI * 8);
	int bfr = tinyc_gk_reg_array(k, "bfrag", pr->b.dtype, NI * 4);
	int tv = tinyc_gk_reg(k, "kt", b->it);
	if (As < 0 || Bs < 0 || afr < 0 || bfr < 0 || tv < 0)
		return -1;
	tinyc_mmk_append(b, body, tinyc_gs_decl(k, afr, NULL));
	tinyc_mmk_append(b, body, tinyc_gs_decl(k, bfr, NULL));
	tinyc_gexpr *ntiles = let(b, body, "tiles", tinyc_gx_ceildiv(k, b->K, I(b, BK)));
	tinyc_gexpr *T = tinyc_gx_var(k, tv);
	if (S > 1) {
		int pipe = tinyc_gk_pipe(k, "ab", TINYC_GPIPE_CP_ASYNC, S, -1);
		if (pipe < 0)
			return -1;
		tinyc_mmk_append(b, body, tinyc_gs_comment(k, "prologue: the first stages of the "
							       "cp.async ring"));
		for (int s = 0; s < S - 1; s++) {
			tinyc_gstmt *ld = tinyc_gs_block(k);
			mma_load_tile(b, ld, As, Bs, I(b, s), I(b, s), s);
			tinyc_mmk_append(b, body, tinyc_gs_if(k, bin(b, TINYC_GX_LT, I(b, s), ntiles), ld, NULL));
			tinyc_mmk_append(b, body, tinyc_gs_cp_commit(k, pipe));
		}
		tinyc_gstmt *loop = tinyc_gs_block(k);
		tinyc_mmk_append(b, loop, tinyc_gs_cp_wait(k, pipe, S - 2));
		tinyc_mmk_append(b, loop, tinyc_gs_barrier(k));
		tinyc_gexpr *st = let(b, loop, "stage", bin(b, TINYC_GX_MOD, T, I(b, S)));
		mma_compute(b, loop, As, Bs, afr, bfr, st, wm, wn, lr, lc);
		tinyc_gexpr *nt = let(b, loop, "next", add(b, T, I(b, S - 1)));
		tinyc_gstmt *ld = tinyc_gs_block(k);
		mma_load_tile(b, ld, As, Bs, nt, bin(b, TINYC_GX_MOD, nt, I(b, S)), S);
		tinyc_mmk_append(b, loop, tinyc_gs_if(k, bin(b, TINYC_GX_LT, nt, ntiles), ld, NULL));
		tinyc_mmk_append(b, loop, tinyc_gs_cp_commit(k, pipe));
		tinyc_mmk_append(b, body, tinyc_gs_for_range(k, tv, I(b, 0), ntiles, I(b, 1), 0, loop));
	} else {
		tinyc_gstmt *loop = tinyc_gs_block(k);
		mma_load_tile(b, loop, As, Bs, T, I(b, 0), 0);
		tinyc_mmk_append(b, loop, tinyc_gs_barrier(k));
		mma_compute(b, loop, As, Bs, afr, bfr, I(b, 0), wm, wn, lr, lc);
		tinyc_mmk_append(b, loop, tinyc_gs_barrier(k));
		tinyc_mmk_append(b, body, tinyc_gs_for_range(k, tv, I(b, 0), ntiles, I(b, 1), 0, loop));
	}
	if (b->error)
		return -1;
	tinyc_mm_frag f;
	tinyc_mm_frag_mma(b, &f, wm, wn, g, t4, WM, WN);
	if (tinyc_evt_emit_epilogue(b, &f, body) < 0)
		return -1;
	return b->fix ? tinyc_splitk_fixup(b, &f, body, b->warp) : 0;
}

/* ------------------------------------------------------------------ WGMMA ---- */

/* A module-level expression (constants and size symbols) of a polynomial. */
static tinyc_gexpr *mpoly(tinyc_gkernel *k, const tinyc_evt_poly *p)
{
	tinyc_gexpr *e = tinyc_gx_int(k, TINYC_LONG, 0);
	for (int i = 0; i < p->nterm; i++) {
		tinyc_gexpr *t = tinyc_gx_int(k, TINYC_LONG, p->t[i].c);
		for (int s = 0; s < p->t[i].nsym; s++)
			t = tinyc_gx_binary(k, TINYC_GX_MUL, t, tinyc_gx_sym(k, p->t[i].sym[s]));
		e = tinyc_gx_binary(k, TINYC_GX_ADD, e, t);
	}
	return e;
}

/* The value of a dim under the module's compile-time bindings, or -1. */
int64_t tinyc_mmk_bound(const tinyc_gpu_module *gm, const tinyc_dim *d)
{
	if (d->sym < 0)
		return d->val;
	return gm->sym_bound && d->sym < gm->nsym ? gm->sym_bound[d->sym] : -1;
}

/* Tensor map parameter `name` over module buffer buf of dtype dt for the Hopper template:
 * extents inner x outer (x the batch when lstride), element strides 1 x rstride (x
 * lstride), origin offset; boxes of 128 bytes (the swizzle's row) by box_rows rows (x 1),
 * 128-byte swizzle.  The variable, or -1 (b->error set). */
static int tmap_param(tinyc_mmk *b, const char *name, int buf, tinyc_dtype dt, const tinyc_evt_poly *inner,
		      const tinyc_evt_poly *outer, const tinyc_evt_poly *rstride,
		      const tinyc_evt_poly *lstride, const tinyc_evt_poly *offset, int box_rows)
{
	tinyc_gkernel *k = b->k;
	tinyc_gtmap m;
	memset(&m, 0, sizeof(m));
	m.buf = buf;
	m.dtype = dt;
	m.rank = lstride ? 3 : 2;
	m.dim[0] = mpoly(k, inner);
	m.dim[1] = mpoly(k, outer);
	m.stride[0] = tinyc_gx_int(k, TINYC_LONG, 1);
	m.stride[1] = mpoly(k, rstride);
	m.box[0] = 128 / tinyc_dtype_size(dt);
	m.box[1] = box_rows;
	if (lstride) {
		tinyc_evt_poly pl = tinyc_evt_poly_dim(&b->prob->l);
		m.dim[2] = mpoly(k, &pl);
		m.stride[2] = mpoly(k, lstride);
		m.box[2] = 1;
	}
	m.offset = mpoly(k, offset);
	m.swizzle = 128;
	int v = tinyc_gk_param_tmap_desc(k, name, &m);
	if (v < 0)
		b->error = 1;
	return v;
}

/* The tensor map of operand op (A: rows m, cols k; B: rows k, cols n) for the Hopper
 * template: the contiguous dim first, boxes of 64 contiguous elements by `outer` rows;
 * rank 3 with the batch. */
static int wgmma_tmap(tinyc_mmk *b, const char *name, const tinyc_mm_operand *op, int contig_cols,
		      const tinyc_dim *rows, const tinyc_dim *cols, int outer, int batched)
{
	tinyc_evt_poly pin = tinyc_evt_poly_dim(contig_cols ? cols : rows);
	tinyc_evt_poly pout = tinyc_evt_poly_dim(contig_cols ? rows : cols);
	return tmap_param(b, name, op->buf, op->dtype, &pin, &pout, &op->stride[contig_cols ? 0 : 1],
			  batched ? &op->stride[2] : NULL, &op->offset, outer);
}

int tinyc_mmk_out_tmap(tinyc_mmk *b, int buf, tinyc_dtype dt, const tinyc_evt_layout *lay,
		       int box_rows, int batched)
{
	tinyc_evt_poly pn = tinyc_evt_poly_dim(&b->prob->n), pm = tinyc_evt_poly_dim(&b->prob->m);
	return tmap_param(b, "tmap_out", buf, dt, &pn, &pm, &lay->stride[0], batched ? &lay->stride[2] : NULL,
			  &lay->offset, box_rows);
}

/* The tile coordinates of persistent tile index `tile` (grouped rasterisation: runs of
 * `raster` m tiles share their n tiles in L2): lets m0, n0, l appended to blk.  With
 * clusters (rank not NULL) `tile` counts pairs of m tiles (tiles_m: the pairs along m) and
 * the CTA of rank r takes the pair's m tile r. */
static void wgmma_tile_coords(tinyc_mmk *b, tinyc_gstmt *blk, tinyc_gexpr *tile, int64_t tiles_m,
			      int64_t tiles_n, int batched, tinyc_gexpr *rank, const char *sfx)
{
	const tinyc_mm_tiles *t = b->t;
	int64_t bm = rank ? 2 * t->bm : t->bm;	/* rows of one tile index */
	char nm[24];
	int64_t G = t->raster, span = G * tiles_n;
	tinyc_gexpr *r = tile;
	if (batched && b->fix && b->fix->dsmem) {	/* a cluster's CTAs: the k ranges of a tile */
		snprintf(nm, sizeof(nm), "l%s", sfx);
		b->l = let(b, blk, nm, bin(b, TINYC_GX_MOD, tile, I(b, b->fix->split)));
		snprintf(nm, sizeof(nm), "r%s", sfx);
		r = let(b, blk, nm, bin(b, TINYC_GX_DIV, tile, I(b, b->fix->split)));
	} else if (batched) {
		snprintf(nm, sizeof(nm), "l%s", sfx);
		b->l = let(b, blk, nm, bin(b, TINYC_GX_DIV, tile, I(b, tiles_m * tiles_n)));
		snprintf(nm, sizeof(nm), "r%s", sfx);
		r = let(b, blk, nm, bin(b, TINYC_GX_MOD, tile, I(b, tiles_m * tiles_n)));
	} else {
		b->l = I(b, 0);
	}
	snprintf(nm, sizeof(nm), "fm%s", sfx);
	tinyc_gexpr *fm = let(b, blk, nm, mul(b, bin(b, TINYC_GX_DIV, r, I(b, span)), I(b, G)));
	snprintf(nm, sizeof(nm), "gs%s", sfx);
	tinyc_gexpr *gs = let(b, blk, nm, bin(b, TINYC_GX_MIN, bin(b, TINYC_GX_SUB, I(b, tiles_m), fm), I(b, G)));
	snprintf(nm, sizeof(nm), "rr%s", sfx);
	tinyc_gexpr *rr = let(b, blk, nm, bin(b, TINYC_GX_MOD, r, I(b, span)));
	snprintf(nm, sizeof(nm), "m0%s", sfx);
	tinyc_gexpr *m0 = mul(b, add(b, fm, bin(b, TINYC_GX_MOD, rr, gs)), I(b, bm));
	b->m0 = let(b, blk, nm, rank ? add(b, m0, mul(b, rank, I(b, t->bm))) : m0);
	snprintf(nm, sizeof(nm), "n0%s", sfx);
	b->n0 = let(b, blk, nm, mul(b, bin(b, TINYC_GX_DIV, rr, gs), I(b, t->bn)));
}

/* The first k tile of tail part p (end: of part p + 1), p kt / s: where a tail unit's k
 * range starts (ends). */
static tinyc_gexpr *wgmma_part_k(wgmma_ring *w, tinyc_gexpr *p, int end)
{
	tinyc_mmk *b = w->b;
	return bin(b, TINYC_GX_DIV, mul(b, end ? add(b, p, I(b, 1)) : p, I(b, w->ktiles)),
		   I(b, b->fix->split));
}

/* The k tiles of walk unit u (an expression without lets): ktiles for a whole tile, else
 * those of its tail part p = (u - full_units) % s. */
static tinyc_gexpr *wgmma_unit_len(wgmma_ring *w, tinyc_gexpr *u)
{
	tinyc_mmk *b = w->b;
	if (w->nunits == w->full_units)
		return I(b, w->ktiles);
	tinyc_gexpr *p = bin(b, TINYC_GX_MOD, bin(b, TINYC_GX_MAX, bin(b, TINYC_GX_SUB, u, I(b, w->full_units)),
						  I(b, 0)), I(b, b->fix->split));
	tinyc_gexpr *len = bin(b, TINYC_GX_SUB, wgmma_part_k(w, p, 1), wgmma_part_k(w, p, 0));
	return tinyc_gx_select(b->k, bin(b, TINYC_GX_GE, u, I(b, w->full_units)), len, I(b, w->ktiles));
}

/* Walk unit u of a CTA (lets with suffix sfx appended to blk): its tile index (the
 * return value) and k tiles [*kb, *ke).  Without a stream-K tail the tile u, k tiles
 * [0, ktiles).  With one, the units below w->full_units are whole tiles and unit
 * full_units + v is k range p = v % s of tile full_units + v / s, k tiles [p kt / s,
 * (p + 1) kt / s); then *tail (the unit is one of the tail's), *slot (v / s: its tile
 * among the tail's) and *part (p); else these are NULL.  The producer and the consumers
 * call it alike, so that they walk the same units. */
static tinyc_gexpr *wgmma_unit(wgmma_ring *w, tinyc_gstmt *blk, tinyc_gexpr *u, const char *sfx,
			       tinyc_gexpr **kb, tinyc_gexpr **ke, tinyc_gexpr **tail,
			       tinyc_gexpr **slot, tinyc_gexpr **part)
{
	tinyc_mmk *b = w->b;
	*tail = *slot = *part = NULL;
	if (w->nunits == w->full_units) {
		*kb = I(b, 0), *ke = I(b, w->ktiles);
		return u;
	}
	int64_t s = b->fix->split, kt = w->ktiles, fu = w->full_units;
	char nm[24];
	snprintf(nm, sizeof(nm), "sk_tail%s", sfx);
	*tail = let(b, blk, nm, bin(b, TINYC_GX_GE, u, I(b, fu)));
	snprintf(nm, sizeof(nm), "sk_v%s", sfx);
	tinyc_gexpr *v = let(b, blk, nm, bin(b, TINYC_GX_MAX, bin(b, TINYC_GX_SUB, u, I(b, fu)), I(b, 0)));
	snprintf(nm, sizeof(nm), "sk_slot%s", sfx);
	*slot = let(b, blk, nm, bin(b, TINYC_GX_DIV, v, I(b, s)));
	snprintf(nm, sizeof(nm), "sk_part%s", sfx);
	*part = let(b, blk, nm, bin(b, TINYC_GX_MOD, v, I(b, s)));
	snprintf(nm, sizeof(nm), "kb%s", sfx);
	*kb = let(b, blk, nm, wgmma_part_k(w, *part, 0));
	snprintf(nm, sizeof(nm), "ke%s", sfx);
	*ke = let(b, blk, nm, tinyc_gx_select(b->k, *tail, wgmma_part_k(w, *part, 1), I(b, kt)));
	snprintf(nm, sizeof(nm), "sk_tile%s", sfx);
	return let(b, blk, nm, tinyc_gx_select(b->k, *tail, add(b, I(b, fu), *slot), u));
}

/* The copy of one operand's k tile by the 128 threads of the producer warpgroup, for
 * operands TMA cannot load (rows not 16-byte aligned): element loads (zero outside the
 * matrix) stored at their place in the 128-byte-swizzled layout that TMA would have
 * written, then fence.proxy.async (the tensor cores read what ordinary stores wrote).
 * Thread t takes column t % 64 of the 64 contiguous elements of a row and rows t / 64 +
 * 2 j: consecutive threads read consecutive elements.
 *   K-major tile: `rows` m (n) rows of 64 k;  MN-major: blocks of 64 m (n), 64 k rows each. */
static void wgmma_copy_operand(tinyc_mmk *b, tinyc_gstmt *blk, const tinyc_mm_operand *op,
			       int is_b, int kmajor, int sh, tinyc_gexpr *base, int mn_tile,
			       tinyc_gexpr *mn0, tinyc_gexpr *k0, tinyc_gexpr *ptid, const char *tag)
{
	tinyc_gkernel *k = b->k;
	const tinyc_mm_tiles *t = b->t;
	char nm[32];
	tinyc_gexpr *c = bin(b, TINYC_GX_MOD, ptid, I(b, 64));
	tinyc_gexpr *o0 = bin(b, TINYC_GX_DIV, ptid, I(b, 64));
	int blocks = kmajor ? 1 : mn_tile / 64;
	int outer = kmajor ? mn_tile : 64;	/* rows of one block */
	tinyc_gexpr *MN = is_b ? b->N : b->M;
	int pred_mn = is_b ? t->pred_n : t->pred_m;
	for (int blkno = 0; blkno < blocks; blkno++) {
		snprintf(nm, sizeof(nm), "cp%s%d", tag, blkno);
		int jv = tinyc_gk_reg(k, nm, b->it);
		if (jv < 0) {
			b->error = 1;
			return;
		}
		tinyc_gexpr *o = add(b, o0, mul(b, tinyc_gx_var(k, jv), I(b, 2)));
		/* the global coordinates of (o, c): K-major: mn row o, k column c; MN-major: k row
		 * o, mn column 64 blkno + c */
		tinyc_gexpr *gk = add(b, k0, kmajor ? c : o);
		tinyc_gexpr *gmn = add(b, mn0, kmajor ? o : add(b, I(b, 64 * blkno), c));
		tinyc_gexpr *in = land(b, t->pred_k ? bin(b, TINYC_GX_LT, gk, b->K) : NULL,
				       pred_mn ? bin(b, TINYC_GX_LT, gmn, MN) : NULL);
		tinyc_gexpr *addr, *guard = NULL;
		if (op->gather.on) {	/* im2col: the window's guard too */
			addr = is_b ? tinyc_conv_addr(b, op, gk, gmn, &guard)
				    : tinyc_conv_addr(b, op, gmn, gk, &guard);
			in = land(b, in, guard);
		} else {
			addr = is_b ? tinyc_mmk_op_addr(b, op, gk, gmn) : tinyc_mmk_op_addr(b, op, gmn, gk);
		}
		tinyc_gexpr *v = tinyc_gx_load(k, tinyc_mmk_param(b, op->buf, 0), addr, in);
		/* element (o, c) of the block: o * 64 + ((c / 8) ^ (o % 8)) * 8 + c % 8 */
		tinyc_gexpr *sw = bin(b, TINYC_GX_XOR, bin(b, TINYC_GX_DIV, c, I(b, 8)), bin(b, TINYC_GX_MOD, o, I(b, 8)));
		tinyc_gexpr *idx = add(b, add(b, base, I(b, (int64_t)blkno * 64 * 64)),
				       add(b, mul(b, o, I(b, 64)), add(b, mul(b, sw, I(b, 8)), bin(b, TINYC_GX_MOD, c, I(b, 8)))));
		tinyc_gstmt *body = tinyc_gs_block(k);
		tinyc_mmk_append(b, body, tinyc_gs_store(k, sh, idx, tinyc_gx_cast(k, k->vars[sh].dtype, v), NULL));
		tinyc_mmk_append(b, blk, tinyc_gs_for_range(k, jv, I(b, 0), I(b, outer / 2), I(b, 1), 16, body));
	}
}

/* The Hopper kernel (sched/matmul.h, variant wgmma):
 *
 *   init: thread 0 prefetches the tensor maps, sets up full[s] (the producer's arrivals +
 *         the stage's TMA bytes) and empty[s] (one arrival per thread of the consumers that
 *         read the stage); barrier
 *   warpgroup 0 (producer, registers given back with setmaxnreg.dec): walks the CTA's tiles;
 *         per k tile: wait empty[s] (parity of the ring's round ^ 1); thread 0 expects the
 *         TMA bytes on full[s] and issues the TMA loads; operands TMA cannot load are copied
 *         by all 128 threads (then fence.proxy.async); the producer's arrivals on full[s]
 *   warpgroups 1.. (consumers, setmaxnreg.inc): per tile, per k tile: wait full[s], wgmma
 *         fence, BK/16 x (rows/64) x BN/wgn wgmma into the fp32 accumulators, commit, wait
 *         until one group is pending, release the previous stage (arrive on its empty
 *         barrier); after the last k tile: wait for all, release, epilogue on the fragments.
 *         Cooperative: every consumer takes 64 rows of each tile.  Pingpong: consumer c
 *         takes the CTA's tiles c, c + 2, ..: one's epilogue runs under the other's main
 *         loop (the producer fills the ring in tile order, so the main loops alternate).
 *   The ring position `it` runs on across the CTA's tiles (a pingpong consumer skips the
 *   other's): stage = it % S, round parity = it / S & 1.
 */

/* The ring: its shared stages, barriers (initialised by thread 0 after it prefetched the
 * tensor maps, then a CTA barrier), the tensor maps, the loop registers of both roles and
 * the CTA coordinates.  0 or -1. */
static int wgmma_ring_init(wgmma_ring *w, tinyc_gstmt *body)
{
	tinyc_mmk *b = w->b;
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = b->k;
	int BM = t->bm, BN = t->bn, BK = t->bk, S = t->stages, C = t->consumers, PP = t->pingpong;
	int BNS = tinyc_wgmma_stage_n(t);	/* a fitted width's stage: whole boxes */
	int generic = w->generic, batched = w->batched;
	/* shared memory: the ring (1024-byte aligned stages) and its barriers */
	int As = tinyc_gk_shared(k, "As", pr->a.dtype, (int64_t)S * BM * BK, 1024, 1);
	int Bs = tinyc_gk_shared(k, "Bs", pr->b.dtype, (int64_t)S * BNS * BK, 1024, 1);
	int full = tinyc_gk_shared(k, "full", TINYC_ULONG, S, 8, 0);
	int empty = tinyc_gk_shared(k, "empty", TINYC_ULONG, S, 8, 0);
	/* pingpong: turn[c] completes when the other consumer has passed the ring waits of its
	 * tile, so that the main loops alternate and no consumer waits on a stage more than one
	 * round ahead (a parity wait cannot tell rounds two apart) */
	int turn = PP ? tinyc_gk_shared(k, "turn", TINYC_ULONG, 2, 8, 0) : 0;
	if (As < 0 || Bs < 0 || full < 0 || empty < 0 || turn < 0)
		return -1;
	int pipe = tinyc_gk_pipe(k, "ring", TINYC_GPIPE_TMA, S, full);
	w->cpipe = t->a_nhwc ? tinyc_gk_pipe(k, "cpa", TINYC_GPIPE_CP_ASYNC, S, -1) : -1;
	if (t->a_nhwc && w->cpipe < 0)
		return -1;
	int ta = t->a_tma ? wgmma_tmap(b, "tmA", &pr->a, t->a_kmajor, &pr->m, &pr->k,
				       t->a_kmajor ? BM : 64, batched) : -2;
	int tb = t->b_tma ? wgmma_tmap(b, "tmB", &pr->b, !t->b_kmajor, &pr->k, &pr->n,
				       t->b_kmajor ? BN : 64, batched) : -2;
	if (pipe < 0 || ta == -1 || tb == -1)
		return -1;
	int64_t tma_bytes = (int64_t)((t->a_tma ? BM : 0) + (t->b_tma ? BNS : 0)) * BK *
			    tinyc_dtype_size(pr->a.dtype);
	/* the tensor maps fetched ahead of the first loads (under the barriers' set-up), then
	 * the barriers */
	tinyc_gstmt *init = tinyc_gs_block(k);
	for (int i = 0; i < 2; i++)
		if ((i ? tb : ta) >= 0)
			tinyc_mmk_append(b, init, tinyc_gs_tmap_prefetch(k, i ? tb : ta));
	for (int st = 0; st < S; st++) {
		tinyc_mmk_append(b, init, tinyc_gs_mbar_init(k, pipe, full, I(b, st), generic ? 128 : 1));
		/* clusters: one arrival per consumer warp of both CTAs (lane 0, local and remote) */
		int arrivals = t->cluster > 1 ? 2 * 4 * (PP ? 1 : C) : PP ? 128 : 128 * C;
		tinyc_mmk_append(b, init, tinyc_gs_mbar_init(k, pipe, empty, I(b, st), arrivals));
	}
	for (int c = 0; PP && c < 2; c++)
		tinyc_mmk_append(b, init, tinyc_gs_mbar_init(k, -1, turn, I(b, c), 128));
	w->As = As, w->Bs = Bs, w->pipe = pipe;
	if (w->tf32 && tinyc_tf32wg_ring_init(w, init) < 0)
		return -1;
	tinyc_mmk_append(b, init, tinyc_gs_fence(k, TINYC_GF_MBAR_INIT));
	tinyc_mmk_append(b, body, tinyc_gs_comment(k, "the ring's barriers: full[s] (the stage "
						       "landed), empty[s] (its consumers are done)"));
	tinyc_mmk_append(b, body, tinyc_gs_if(k, bin(b, TINYC_GX_EQ, b->tid, I(b, 0)), init, NULL));
	/* clusters: the other CTA's barriers exist before the first multicast or arrival */
	tinyc_mmk_append(b, body, t->cluster > 1 ? tinyc_gs_cluster_barrier(k) : tinyc_gs_barrier(k));
	if (k->pdl) {	/* the set-up above overlaps the previous grid; its writes before any access */
		tinyc_mmk_append(b, body, tinyc_gs_fence(k, TINYC_GF_GRID_WAIT));
		tinyc_mmk_append(b, body, tinyc_gs_fence(k, TINYC_GF_GRID_LAUNCH));
	}
	int tilev = tinyc_gk_reg(k, "tile", b->it), ktv = tinyc_gk_reg(k, "kt", b->it);
	int ctilev = tinyc_gk_reg(k, "ctile", b->it), cktv = tinyc_gk_reg(k, "ckt", b->it);
	int itp = tinyc_gk_reg(k, "itp", b->it), itc = tinyc_gk_reg(k, "itc", b->it);
	int ntv = tinyc_gk_reg(k, "nt", b->it);	/* pingpong: the consumer's tiles so far */
	if (tilev < 0 || ktv < 0 || ctilev < 0 || cktv < 0 || itp < 0 || itc < 0 || ntv < 0)
		return -1;
	tinyc_gexpr *bid = tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_BID_X));
	tinyc_gexpr *nbid = tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_NBID_X));
	w->rank = NULL;
	if (t->cluster > 1) {	/* the pair's index and count; the CTA's rank in it */
		w->rank = let(b, body, "crank", bin(b, TINYC_GX_MOD, bid, I(b, 2)));
		bid = let(b, body, "cid", bin(b, TINYC_GX_DIV, bid, I(b, 2)));
		nbid = let(b, body, "ncl", bin(b, TINYC_GX_DIV, nbid, I(b, 2)));
	}
	tinyc_gexpr *is0 = bin(b, TINYC_GX_EQ, b->tid, I(b, 0));

	w->As = As, w->Bs = Bs, w->full = full, w->empty = empty, w->turn = turn;
	w->pipe = pipe, w->ta = ta, w->tb = tb, w->tma_bytes = tma_bytes;
	w->tilev = tilev, w->ktv = ktv, w->itp = itp;
	w->ctilev = ctilev, w->cktv = cktv, w->itc = itc, w->ntv = ntv;
	w->bid = bid, w->nbid = nbid, w->is0 = is0;
	return 0;
}

/* NHWC producer (t->a_nhwc): once ring position IT - 1 exists, wait until at most
 * `pending` cp.async groups are in flight (its group landed), make the copies visible to
 * the tensor cores and arrive on its full barrier.  The statement. */
static tinyc_gstmt *wgmma_cp_arrive(wgmma_ring *w, tinyc_gexpr *IT, int pending)
{
	tinyc_mmk *b = w->b;
	tinyc_gkernel *k = b->k;
	int S = b->t->stages;
	tinyc_gstmt *blk = tinyc_gs_block(k);
	tinyc_mmk_append(b, blk, tinyc_gs_cp_wait(k, w->cpipe, pending));
	tinyc_mmk_append(b, blk, tinyc_gs_fence(k, TINYC_GF_PROXY_ASYNC));
	tinyc_mmk_append(b, blk, tinyc_gs_mbar_arrive(k, w->pipe, w->full,
						     bin(b, TINYC_GX_MOD, add(b, IT, I(b, S - 1)), I(b, S))));
	return tinyc_gs_if(k, bin(b, TINYC_GX_GT, IT, I(b, 0)), blk, NULL);
}

/* Clusters: the producer's tail.  The peer CTA's consumers arrive on this CTA's empty
 * barriers and its producer multicasts into this CTA's stages, so the CTA must not leave
 * before they are done: thread 0 waits until ring positions IT .. IT + S - 1 could be
 * filled, i.e. until both CTAs' consumers released the last S positions (every earlier
 * release was waited for by the main loop).  Then nothing of the peer's reaches this CTA
 * any more (each multicast it sent here was consumed here), and the CTA's threads may
 * leave without a cluster barrier, whose release would wait for the epilogue's stores.
 * The statement, or NULL. */
static tinyc_gstmt *wgmma_cluster_tail(wgmma_ring *w, tinyc_gexpr *IT)
{
	tinyc_mmk *b = w->b;
	tinyc_gkernel *k = b->k;
	int S = b->t->stages;
	int tv = tinyc_gk_reg(k, "tail", b->it);
	if (tv < 0)
		return NULL;
	tinyc_gstmt *body = tinyc_gs_block(k);
	tinyc_gexpr *P = let(b, body, "tp", add(b, IT, tinyc_gx_var(k, tv)));
	tinyc_gexpr *par = bin(b, TINYC_GX_AND, bin(b, TINYC_GX_DIV, P, I(b, S)), I(b, 1));
	tinyc_mmk_append(b, body, tinyc_gs_mbar_wait(k, w->pipe, w->empty, bin(b, TINYC_GX_MOD, P, I(b, S)),
						     bin(b, TINYC_GX_XOR, par, I(b, 1))));
	return tinyc_gs_for_range(k, tv, I(b, 0), I(b, S), I(b, 1), 0, body);
}

/* Warpgroup 0, the producer: per tile and k tile, wait until the stage is empty, then
 * thread 0 issues the TMA loads (the expected bytes on full[s]) and the operands TMA cannot
 * load are copied by all 128 threads.  Its block, or NULL. */
static tinyc_gstmt *wgmma_producer(wgmma_ring *w)
{
	tinyc_mmk *b = w->b;
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = b->k;
	int BM = t->bm, BN = t->bn, BK = t->bk, S = t->stages, BNS = tinyc_wgmma_stage_n(t);
	int generic = w->generic, batched = w->batched;
	int64_t tiles_m = w->tiles_m, tiles_n = w->tiles_n;
	int64_t tma_bytes = w->tma_bytes;
	int As = w->As, Bs = w->Bs, full = w->full, empty = w->empty, pipe = w->pipe;
	int ta = w->ta, tb = w->tb, tilev = w->tilev, ktv = w->ktv, itp = w->itp;
	tinyc_gexpr *bid = w->bid, *nbid = w->nbid, *is0 = w->is0;
	tinyc_gstmt *prod = tinyc_gs_block(k);
	if (t->regs_producer)
		tinyc_mmk_append(b, prod, tinyc_gs_setmaxnreg(k, 0, t->regs_producer));
	tinyc_gstmt *issuer = tinyc_gs_block(k);
	tinyc_mmk_append(b, issuer, tinyc_gs_decl(k, itp, I(b, 0)));
	tinyc_gstmt *ptile = tinyc_gs_block(k);
	tinyc_gexpr *pkb, *pke, *ptail, *pslot, *ppart;
	tinyc_gexpr *ptv = wgmma_unit(w, ptile, tinyc_gx_var(k, tilev), "p", &pkb, &pke, &ptail, &pslot, &ppart);
	wgmma_tile_coords(b, ptile, ptv, tiles_m, tiles_n, batched, w->rank, "p");
	tinyc_gexpr *pm0 = b->m0, *pn0 = b->n0, *pl = b->l;
	tinyc_gstmt *pk = tinyc_gs_block(k);
	tinyc_gexpr *IT = tinyc_gx_var(k, itp);
	tinyc_gexpr *ps = let(b, pk, "ps", bin(b, TINYC_GX_MOD, IT, I(b, S)));
	tinyc_gexpr *pph = let(b, pk, "pph", bin(b, TINYC_GX_AND, bin(b, TINYC_GX_DIV, IT, I(b, S)), I(b, 1)));
	tinyc_mmk_append(b, pk, tinyc_gs_mbar_wait(k, pipe, empty, ps, bin(b, TINYC_GX_XOR, pph, I(b, 1))));
	tinyc_gexpr *k0 = mul(b, tinyc_gx_var(k, ktv), I(b, BK));
	tinyc_gexpr *abase = mul(b, ps, I(b, (int64_t)BM * BK)), *bbase = mul(b, ps, I(b, (int64_t)BNS * BK));
	tinyc_gstmt *tma = tinyc_gs_block(k);	/* thread 0: the expected bytes and the TMA loads */
	if (tma_bytes) {
		tinyc_gstmt *ex = tinyc_gs_mbar_expect_tx(k, pipe, full, ps, I(b, tma_bytes));
		if (ex && generic)
			ex->flag = 1;	/* expect only: thread 0 arrives with the others */
		tinyc_mmk_append(b, tma, ex);
	}
	tinyc_gexpr *crd[3];
	crd[2] = tinyc_gx_cast(k, TINYC_INT, pl);
	if (t->a_tma && t->a_kmajor) {
		crd[0] = tinyc_gx_cast(k, TINYC_INT, k0), crd[1] = tinyc_gx_cast(k, TINYC_INT, pm0);
		tinyc_mmk_append(b, tma, tinyc_gs_tma_load(k, pipe, As, abase, ta, batched ? 3 : 2, crd, full, ps));
	} else if (t->a_tma) {
		for (int j = 0; j < BM / 64; j++) {
			crd[0] = tinyc_gx_cast(k, TINYC_INT, add(b, pm0, I(b, 64 * j)));
			crd[1] = tinyc_gx_cast(k, TINYC_INT, k0);
			tinyc_mmk_append(b, tma, tinyc_gs_tma_load(k, pipe, As, add(b, abase, I(b, 64 * 64 * j)), ta,
								   batched ? 3 : 2, crd, full, ps));
		}
	}
	if (t->b_tma && t->b_kmajor) {
		crd[0] = tinyc_gx_cast(k, TINYC_INT, k0), crd[1] = tinyc_gx_cast(k, TINYC_INT, pn0);
		tinyc_mmk_append(b, tma, tinyc_gs_tma_load(k, pipe, Bs, bbase, tb, batched ? 3 : 2, crd, full, ps));
	} else if (t->b_tma) {
		for (int j = 0; j < BNS / 64; j++) {	/* a fitted width's last box runs past
							 * the tile: columns of the next, unused */
			crd[0] = tinyc_gx_cast(k, TINYC_INT, add(b, pn0, I(b, 64 * j)));
			crd[1] = tinyc_gx_cast(k, TINYC_INT, k0);
			tinyc_gstmt *ld = tinyc_gs_tma_load(k, pipe, Bs, add(b, bbase, I(b, 64 * 64 * j)), tb,
							    batched ? 3 : 2, crd, full, ps);
			if (!ld || !w->rank) {
				tinyc_mmk_append(b, tma, ld);
				continue;
			}
			/* clusters: box j comes from the CTA of rank j % 2, to both */
			ld->flag = 3;
			tinyc_gstmt *mine = tinyc_gs_block(k);
			tinyc_mmk_append(b, mine, ld);
			tinyc_mmk_append(b, tma, tinyc_gs_if(k, bin(b, TINYC_GX_EQ, w->rank, I(b, j % 2)), mine, NULL));
		}
	}
	int all = generic || w->tf32;	/* every producer thread runs the loop */
	if (tma->nstmts)
		tinyc_mmk_append(b, pk, all ? tinyc_gs_if(k, is0, tma, NULL) : tma);
	if (generic) {
		b->l = pl;
		tinyc_mmk_append(b, pk, tinyc_gs_comment(k, "operands TMA cannot load: the producer's "
							     "threads copy them into the swizzled layout"));
		if (t->a_nhwc && tinyc_conv_cp16(b, ptile, pk, As, abase, pm0, k0, b->tid) < 0)
			b->error = 1;
		else if (!t->a_nhwc && !t->a_tma)
			wgmma_copy_operand(b, pk, &pr->a, 0, t->a_kmajor, As, abase, BM, pm0, k0, b->tid, "a");
		if (!t->b_tma)
			wgmma_copy_operand(b, pk, &pr->b, 1, t->b_kmajor, Bs, bbase, BN, pn0, k0, b->tid, "b");
		if (t->a_nhwc) {	/* the previous stage's cp.async group landed: arrive on it */
			tinyc_mmk_append(b, pk, tinyc_gs_cp_commit(k, w->cpipe));
			tinyc_mmk_append(b, pk, wgmma_cp_arrive(w, IT, 1));
		} else {
			tinyc_mmk_append(b, pk, tinyc_gs_fence(k, TINYC_GF_PROXY_ASYNC));
			tinyc_mmk_append(b, pk, tinyc_gs_mbar_arrive(k, pipe, full, ps));
		}
	}
	if (w->tf32) {	/* 3xTF32: split the previous position while this one loads */
		tinyc_gstmt *sp = tinyc_gs_block(k);
		tinyc_tf32wg_split(w, sp, bin(b, TINYC_GX_SUB, IT, I(b, 1)));
		tinyc_mmk_append(b, pk, tinyc_gs_if(k, bin(b, TINYC_GX_GT, IT, I(b, 0)), sp, NULL));
	}
	tinyc_mmk_append(b, pk, tinyc_gs_assign(k, itp, add(b, IT, I(b, 1))));
	tinyc_mmk_append(b, ptile, tinyc_gs_for_range(k, ktv, pkb, pke, I(b, 1), 0, pk));
	tinyc_mmk_append(b, issuer, tinyc_gs_for_range(k, tilev, bid, I(b, w->nunits), nbid, 0, ptile));
	if (w->rank) {	/* clusters: stay until the peer is done with this CTA */
		tinyc_mmk_append(b, issuer, tinyc_gs_comment(k, "the producer's tail: both CTAs' "
								 "consumers released the last stages"));
		tinyc_mmk_append(b, issuer, wgmma_cluster_tail(w, IT));
	}
	if (t->a_nhwc)	/* the last stage's arrival */
		tinyc_mmk_append(b, issuer, wgmma_cp_arrive(w, IT, 0));
	if (w->tf32) {	/* the last position's split */
		tinyc_gstmt *sp = tinyc_gs_block(k);
		tinyc_tf32wg_split(w, sp, bin(b, TINYC_GX_SUB, IT, I(b, 1)));
		tinyc_mmk_append(b, issuer, tinyc_gs_if(k, bin(b, TINYC_GX_GT, IT, I(b, 0)), sp, NULL));
	}
	if (w->tf32) {
		tinyc_mmk_append(b, prod, tinyc_gs_comment(k, "producer: thread 0 issues the TMA loads, "
							       "every thread splits the landed stages"));
		tinyc_mmk_append(b, prod, issuer);
	} else if (generic) {
		tinyc_mmk_append(b, prod, tinyc_gs_comment(k, "producer: thread 0 issues the TMA loads, "
							       "every thread copies"));
		tinyc_mmk_append(b, prod, issuer);
	} else {
		tinyc_mmk_append(b, prod, tinyc_gs_comment(k, "producer: one thread issues the TMA "
							       "loads of the ring"));
		tinyc_mmk_append(b, prod, tinyc_gs_if(k, is0, issuer, NULL));
	}
	if (b->fix && b->fix->dsmem)
		tinyc_splitk_dsmem_barriers(b, prod);
	return prod;
}

/* A consumer's release of ring stage `stage` (appended to blk): every thread arrives on
 * empty[stage]; with clusters lane 0 of each warp arrives on it in both CTAs (the other's
 * producer multicasts into this CTA's stage too). */
static void wgmma_release(wgmma_ring *w, tinyc_gstmt *blk, tinyc_gexpr *stage)
{
	tinyc_mmk *b = w->b;
	tinyc_gkernel *k = b->k;
	if (!w->rank) {
		tinyc_mmk_append(b, blk, tinyc_gs_mbar_arrive(k, w->pipe, w->empty, stage));
		return;
	}
	tinyc_gstmt *both = tinyc_gs_block(k);
	tinyc_mmk_append(b, both, tinyc_gs_mbar_arrive(k, w->pipe, w->empty, stage));
	tinyc_mmk_append(b, both, tinyc_gs_mbar_arrive_remote(k, w->pipe, w->empty, stage,
							      bin(b, TINYC_GX_SUB, I(b, 1), w->rank)));
	tinyc_mmk_append(b, blk, tinyc_gs_if(k, bin(b, TINYC_GX_EQ, b->lane, I(b, 0)), both, NULL));
}

/* A consumer's main loop over the k tiles of a tile (appended to ctile): wait full[s],
 * BK/16 x (rows/64) x BN/wgn wgmma into the accumulators, commit, keep one group in flight
 * and release the previous stage; then drain and release the last one.  NT: the
 * consumer's tiles so far (pingpong). */
static void wgmma_kloop(wgmma_ring *w, tinyc_gstmt *ctile, tinyc_gexpr *NT)
{
	tinyc_mmk *b = w->b;
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = b->k;
	int BM = t->bm, BN = t->bn, BK = t->bk, S = t->stages, WN = t->wgn, PP = t->pingpong;
	int MI = PP ? BM / 64 : 1;	/* m64 instructions per consumer */
	int As = w->As, Bs = w->Bs, full = w->full, turn = w->turn;
	int pipe = w->pipe, itc = w->itc, cktv = w->cktv, ntv = w->ntv;
	tinyc_gexpr *cw = w->cw;
	tinyc_gstmt *ck = tinyc_gs_block(k);
	tinyc_gexpr *ITC = tinyc_gx_var(k, itc), *KT = tinyc_gx_var(k, cktv);
	tinyc_gexpr *cs = let(b, ck, "cs", bin(b, TINYC_GX_MOD, ITC, I(b, S)));
	tinyc_gexpr *cph = let(b, ck, "cph", bin(b, TINYC_GX_AND, bin(b, TINYC_GX_DIV, ITC, I(b, S)), I(b, 1)));
	tinyc_mmk_append(b, ck, tinyc_gs_mbar_wait(k, pipe, full, cs, cph));
	tinyc_mmk_append(b, ck, tinyc_gs_wgmma_fence(k));
	tinyc_gwg_layout la = {t->a_kmajor, 64 * 64 * 2}, lb = {t->b_kmajor, 64 * 64 * 2};
	tinyc_gexpr *cab = mul(b, cs, I(b, (int64_t)BM * BK));
	tinyc_gexpr *cbb = mul(b, cs, I(b, (int64_t)tinyc_wgmma_stage_n(t) * BK));
	for (int ks = 0; ks < BK / 16; ks++)
		for (int mi = 0; mi < MI; mi++) {
			/* the instruction's 64 rows of A: K-major rows of 64 k elements, or an m block
			 * (cooperative: the consumer's; pingpong: the mi-th of the tile) */
			tinyc_gexpr *arow = PP ? I(b, (int64_t)mi * 64 * 64) : mul(b, cw, I(b, 64 * 64));
			tinyc_gexpr *aix = add(b, add(b, cab, arow), I(b, t->a_kmajor ? ks * 16 : ks * 16 * 64));
			for (int nb = 0; nb < BN / WN; nb++) {
				int64_t boff = t->b_kmajor ? (int64_t)nb * WN * 64 + ks * 16
							   : (int64_t)(nb * WN / 64) * 64 * 64 + ks * 16 * 64;
				tinyc_gexpr *sd = ks == 0 ? bin(b, TINYC_GX_GT, KT, w->kb) : NULL;
				tinyc_mmk_append(b, ck, tinyc_gs_wgmma(k, b->acc,
								       tinyc_gx_int(k, TINYC_INT, mi * BN / 2 + nb * WN / 2),
								       As, aix, la, Bs, add(b, cbb, I(b, boff)), lb, WN, sd));
			}
		}
	tinyc_mmk_append(b, ck, tinyc_gs_wgmma_commit(k));
	tinyc_mmk_append(b, ck, tinyc_gs_wgmma_wait(k, 1, b->acc));
	tinyc_gstmt *rel = tinyc_gs_block(k);
	wgmma_release(w, rel, bin(b, TINYC_GX_MOD, add(b, ITC, I(b, S - 1)), I(b, S)));
	tinyc_mmk_append(b, ck, tinyc_gs_comment(k, "the previous k tile's wgmma group is done: "
						     "release its stage"));
	tinyc_mmk_append(b, ck, tinyc_gs_if(k, bin(b, TINYC_GX_GT, KT, w->kb), rel, NULL));
	tinyc_mmk_append(b, ck, tinyc_gs_assign(k, itc, add(b, ITC, I(b, 1))));
	tinyc_mmk_append(b, ctile, tinyc_gs_for_range(k, cktv, w->kb, w->ke, I(b, 1), 0, ck));
	tinyc_mmk_append(b, ctile, tinyc_gs_wgmma_wait(k, 0, b->acc));
	wgmma_release(w, ctile, bin(b, TINYC_GX_MOD, add(b, ITC, I(b, S - 1)), I(b, S)));
	if (PP) {	/* the other's turn; skip its tile in the ring */
		tinyc_mmk_append(b, ctile, tinyc_gs_mbar_arrive(k, -1, turn, bin(b, TINYC_GX_SUB, I(b, 1), cw)));
		tinyc_mmk_append(b, ctile, tinyc_gs_assign(k, itc, add(b, ITC, wgmma_unit_len(w,
			add(b, tinyc_gx_var(k, w->ctilev), w->nbid)))));
		tinyc_mmk_append(b, ctile, tinyc_gs_assign(k, ntv, add(b, NT, I(b, 1))));
	}
}

/* A consumer's epilogue on its accumulator fragments (the m64nNk16 layout: per warp 16
 * rows, per lane two of every 8 columns), staged through shared memory for 16-bit
 * outputs.  0 or -1. */
static int wgmma_epilogue(wgmma_ring *w, tinyc_gstmt *ctile)
{
	tinyc_mmk *b = w->b;
	const tinyc_mm_tiles *t = b->t;
	int BM = t->bm, BN = t->bn, C = t->consumers, PP = t->pingpong;
	int MI = PP ? BM / 64 : 1;
	tinyc_gexpr *cw = w->cw, *g = w->g, *t4 = w->t4;
	if (b->error)
		return -1;
	tinyc_mm_frag f;
	memset(&f, 0, sizeof(f));
	f.mma = 1;
	f.ni = BN / 8;
	f.tr = 2 * MI, f.tc = BN / 4;
	f.row_run = 1, f.col_run = 2;
	tinyc_gexpr *wrow = add(b, mul(b, bin(b, TINYC_GX_MOD, b->warp, I(b, 4)), I(b, 16)), g);
	f.row_base = PP ? wrow : add(b, mul(b, cw, I(b, 64)), wrow);
	f.col_base = mul(b, t4, I(b, 2));
	for (int a = 0; a < f.tr; a++)
		f.row_off[a] = (a / 2) * 64 + (a % 2) * 8;
	for (int c = 0; c < f.tc; c++)
		f.col_off[c] = (c / 2) * 8 + (c % 2);
	f.row_xor[0] = 4, f.row_xor[1] = 8, f.row_xor[2] = 16, f.nrow_xor = 3;
	f.col_xor[0] = 1, f.col_xor[1] = 2, f.ncol_xor = 2;
	f.row_lead = bin(b, TINYC_GX_EQ, g, I(b, 0));
	f.col_lead = bin(b, TINYC_GX_EQ, t4, I(b, 0));
	f.groups_m = 4 * C, f.group_m = bin(b, TINYC_GX_SUB, b->warp, I(b, 4));
	f.groups_n = 1, f.group_n = I(b, 0);
	f.pair_stores = 1;
	/* a 16-bit output goes out through per-warp staging buffers as 16-byte stores */
	f.stage = !b->t->no_stage;
	f.lane_row = g;
	f.warp_row0 = PP ? mul(b, bin(b, TINYC_GX_MOD, b->warp, I(b, 4)), I(b, 16))
			 : add(b, mul(b, cw, I(b, 64)), mul(b, bin(b, TINYC_GX_MOD, b->warp, I(b, 4)), I(b, 16)));
	f.stage_stride = 64;
	f.stage_warp = bin(b, TINYC_GX_SUB, b->warp, I(b, 4));
	f.stage_warps = 4 * C;
	if (b->fix && b->fix->dsmem)	/* split-K summed over the cluster */
		return tinyc_splitk_dsmem(b, &f, ctile);
	/* the warp's place among the tile's: 4 per consumer that works on it */
	tinyc_gexpr *wit = PP ? bin(b, TINYC_GX_MOD, b->warp, I(b, 4)) : bin(b, TINYC_GX_SUB, b->warp, I(b, 4));
	if (w->tail)	/* a stream-K tail: its units' partials summed by the last warps */
		return tinyc_streamk_epilogue(b, &f, ctile, w->tail, w->slot, w->part, wit);
	if (!b->fix) {	/* the plain epilogue (knobs): the loads before the main loop, TMA stores */
		f.hoist = t->epi_preload, f.hoist_at = w->hoist_at;
		f.tma_bufs = t->tma_store;
	}
	if (tinyc_evt_emit_epilogue(b, &f, ctile) < 0)
		return -1;
	/* split-K summed here */
	return b->fix ? tinyc_splitk_fixup(b, &f, ctile, wit) : 0;
}

/* Warpgroups 1.., the consumers: the accumulators, then per tile of theirs (cooperative:
 * every tile, 64 rows each; pingpong: every other tile, after the other's main loop) the
 * main loop and the epilogue.  Their block, or NULL. */
static tinyc_gstmt *wgmma_consumer(wgmma_ring *w)
{
	tinyc_mmk *b = w->b;
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = b->k;
	int BM = t->bm, BN = t->bn, PP = t->pingpong;
	int MI = PP ? BM / 64 : 1;
	int batched = w->batched;
	int64_t tiles_m = w->tiles_m, tiles_n = w->tiles_n;
	int turn = w->turn, itc = w->itc, ctilev = w->ctilev, ntv = w->ntv;
	tinyc_gexpr *wg = w->wg, *bid = w->bid, *nbid = w->nbid;
	tinyc_gstmt *cons = tinyc_gs_block(k);
	if (t->regs_consumer)
		tinyc_mmk_append(b, cons, tinyc_gs_setmaxnreg(k, 1, t->regs_consumer));
	tinyc_gexpr *cw = let(b, cons, "cw", bin(b, TINYC_GX_SUB, wg, I(b, 1)));
	tinyc_gexpr *g = let(b, cons, "g", bin(b, TINYC_GX_DIV, b->lane, I(b, 4)));
	tinyc_gexpr *t4 = let(b, cons, "t4", bin(b, TINYC_GX_MOD, b->lane, I(b, 4)));
	b->acc = tinyc_gk_reg_array(k, "acc", TINYC_FLOAT, (int64_t)MI * BN / 2);
	if (b->acc < 0)
		return NULL;
	tinyc_mmk_append(b, cons, tinyc_gs_decl(k, b->acc, tinyc_gx_float(k, TINYC_FLOAT, 0)));
	/* pingpong: consumer c starts at the ring position of the CTA's tile c */
	tinyc_mmk_append(b, cons, tinyc_gs_decl(k, itc, PP ? mul(b, cw, wgmma_unit_len(w, bid)) : I(b, 0)));
	tinyc_gstmt *ctile = tinyc_gs_block(k);
	tinyc_gexpr *ctv = wgmma_unit(w, ctile, tinyc_gx_var(k, ctilev), "", &w->kb, &w->ke, &w->tail,
				      &w->slot, &w->part);
	if (w->slot && w->rank)	/* clusters: a slot per CTA of the pair */
		w->slot = let(b, ctile, "sk_cslot", add(b, mul(b, w->slot, I(b, 2)), w->rank));
	wgmma_tile_coords(b, ctile, ctv, tiles_m, tiles_n, batched, w->rank, "");
	tinyc_gexpr *NT = tinyc_gx_var(k, ntv);
	if (PP) {	/* the CTA's tile j = 2 nt + cw waits for the other's tile j - 1 */
		tinyc_mmk_append(b, cons, tinyc_gs_decl(k, ntv, I(b, 0)));
		tinyc_gstmt *wt = tinyc_gs_block(k);
		tinyc_mmk_append(b, wt, tinyc_gs_mbar_wait(k, -1, turn, cw,
							  bin(b, TINYC_GX_AND, add(b, NT, bin(b, TINYC_GX_SUB, cw, I(b, 1))),
							      I(b, 1))));
		tinyc_mmk_append(b, ctile, tinyc_gs_comment(k, "pingpong: wait for the other consumer's "
							      "main loop of the previous tile"));
		tinyc_mmk_append(b, ctile, tinyc_gs_if(k, bin(b, TINYC_GX_GE, add(b, NT, cw), I(b, 1)), wt, NULL));
	}
	w->cw = cw, w->g = g, w->t4 = t4;
	w->hoist_at = ctile->nstmts;	/* where the epilogue's prelude may go */
	if (w->tf32)
		tinyc_tf32wg_kloop(w, ctile);
	else
		wgmma_kloop(w, ctile, NT);
	if (wgmma_epilogue(w, ctile) < 0)
		return NULL;
	tinyc_gexpr *first = PP ? add(b, bid, mul(b, cw, nbid)) : bid;
	tinyc_gexpr *step = PP ? mul(b, nbid, I(b, 2)) : nbid;
	tinyc_mmk_append(b, cons, tinyc_gs_for_range(k, ctilev, first, I(b, w->nunits), step, 0, ctile));
	if (b->bulk) {	/* the last TMA stores have read their staging buffers */
		tinyc_gstmt *wt = tinyc_gs_block(k);
		tinyc_mmk_append(b, wt, tinyc_gs_bulk_wait(k, 0));
		tinyc_mmk_append(b, cons, tinyc_gs_if(k, bin(b, TINYC_GX_EQ, b->lane, I(b, 0)), wt, NULL));
	}
	return cons;
}

/* The Hopper kernel (described above): the kernel and the CTA's coordinates, the ring, then
 * the producer and the consumers under one branch on the warpgroup. */
static int build_wgmma(tinyc_mmk *b, const char *name)
{
	wgmma_ring w;
	memset(&w, 0, sizeof(w));
	w.b = b;
	w.generic = !b->t->a_tma || !b->t->b_tma;
	w.tf32 = b->t->tf32x3;
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	tinyc_gpu_module *gm = b->gm;
	int BM = t->bm, BN = t->bn, BK = t->bk, C = t->consumers;
	int64_t Mv = tinyc_mmk_bound(gm, &pr->m), Nv = tinyc_mmk_bound(gm, &pr->n), Kv = tinyc_mmk_bound(gm, &pr->k);
	int64_t Lv = tinyc_mmk_bound(gm, &pr->l);
	int batched = w.batched = pr->evt && pr->evt->batched;
	if (Mv < 1 || Nv < 1 || Kv < 1 || Lv < 1)
		return tinyc_error(b->ctx, "CodegenError", "matmul %s: the wgmma template needs every "
				   "size bound at compile time", name);
	if (gm->arch_major != 9)
		return tinyc_error(b->ctx, "CodegenError", "matmul %s: the wgmma template needs sm_90, "
				   "the module targets %s", name, gm->target);
	snprintf(gm->target, sizeof(gm->target), "sm_90a");	/* wgmma, setmaxnreg */
	tinyc_gkernel *k = tinyc_gk_alloc(gm, name);
	if (!k)
		return -1;
	b->k = k;
	k->index_dtype = b->it;
	k->block[0] = 128 * (1 + C), k->block[1] = 1, k->block[2] = 1;
	k->min_blocks_per_sm = 1;	/* the register cap setmaxnreg needs */
	b->threads = k->block[0];
	w.tiles_m = (Mv + BM - 1) / BM, w.tiles_n = (Nv + BN - 1) / BN;
	int CL = t->cluster > 1 ? 2 : 1;
	if (CL > 1 && (batched || t->b_kmajor || !t->a_tma || !t->b_tma || w.tf32))
		return tinyc_error(b->ctx, "CodegenError", "matmul %s: clusters need TMA operands, B "
				   "n-major and no batch", name);
	if (CL > 1)	/* the CTAs walk pairs of m tiles, a pair per cluster */
		w.tiles_m = (w.tiles_m + 1) / 2;
	w.ntiles = w.tiles_m * w.tiles_n * (batched ? Lv : 1), w.ktiles = (Kv + BK - 1) / BK;
	int64_t grid = w.ntiles * CL < t->grid ? w.ntiles * CL : t->grid;
	if (grid < CL)
		grid = CL;
	grid -= grid % CL;
	k->cluster_x = CL > 1 ? CL : 0;
	k->pdl = t->pdl;	/* waits after the ring's set-up (wgmma_ring_init) */
	k->wait_hint = t->wait_hint;
	if (b->fix && b->fix->dsmem) {	/* one tile a CTA, a tile's k ranges a cluster */
		if (CL > 1 || t->pingpong || C != 1 || w.ntiles % b->fix->split)
			return tinyc_error(b->ctx, "CodegenError", "matmul %s: split-K over a cluster "
					   "needs one consumer warpgroup and no pairs", name);
		grid = w.ntiles;
		k->cluster_x = b->fix->split;
	}
	w.full_units = w.nunits = w.ntiles;
	if (b->fix && b->fix->tail_tiles) {	/* a stream-K tail: whole rounds, then the tail */
		int64_t walkers = grid / CL, T = w.ntiles % walkers;
		if (batched || w.tf32 || t->a_nhwc || w.ntiles < walkers || T != b->fix->tail_tiles ||
		    w.ktiles < b->fix->split)
			return tinyc_error(b->ctx, "CodegenError", "matmul %s: the stream-K tail of %d "
					   "tiles does not fit %" PRId64 " tiles on %" PRId64 " walkers",
					   name, b->fix->tail_tiles, w.ntiles, walkers);
		w.full_units = w.ntiles - T;
		w.nunits = w.full_units + T * b->fix->split;
	}
	k->grid[0] = tinyc_gx_int(k, TINYC_LONG, grid);
	k->grid[1] = k->grid[2] = tinyc_gx_int(k, TINYC_LONG, 1);
	tinyc_gstmt *body = k->body;
	b->M = I(b, Mv), b->N = I(b, Nv), b->K = I(b, Kv);
	b->tid = let(b, body, "tid", tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_TID_X)));
	b->warp = let(b, body, "warp", tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_WARP)));
	b->lane = let(b, body, "lane", tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_LANE)));
	w.wg = let(b, body, "wg", bin(b, TINYC_GX_DIV, b->warp, I(b, 4)));
	if (wgmma_ring_init(&w, body) < 0)
		return -1;
	tinyc_gstmt *prod = wgmma_producer(&w);
	tinyc_gstmt *cons = prod ? wgmma_consumer(&w) : NULL;
	if (!cons)
		return -1;
	tinyc_mmk_append(b, body, tinyc_gs_comment(k, "warp specialisation: warpgroup 0 produces, the "
						       "others consume"));
	tinyc_mmk_append(b, body, tinyc_gs_if(k, bin(b, TINYC_GX_EQ, w.wg, I(b, 0)), prod, cons));
	/* clusters: no closing cluster barrier, the producer's tail keeps the CTA */
	return b->error ? -1 : 0;
}

/* ------------------------------------------------------------------ entry ---- */

/* The value of a size polynomial under gm's bindings (every symbol of the wgmma template's
 * problems is bound). */
static int64_t bound_poly(const tinyc_gpu_module *gm, const tinyc_evt_poly *p)
{
	int64_t v;
	return tinyc_evt_poly_eval(p, gm->sym_bound, gm->nsym, &v) < 0 ? -1 : v;
}

int tinyc_mm_add_temp(tinyc_gpu_module *gm, const char *name, tinyc_dtype dt, int64_t elems)
{
	tinyc_gbuf gbf;
	memset(&gbf, 0, sizeof(gbf));
	gbf.name = (char *)name;
	gbf.role = TINYC_GB_TEMP;
	for (int i = 0; i < gm->nbuf; i++)
		gbf.index += gm->bufs[i].role == TINYC_GB_TEMP;
	gbf.node = -1;
	gbf.dtype = dt;
	gbf.rank = 1;
	gbf.shape[0].sym = -1;
	gbf.shape[0].val = elems;
	return tinyc_gpu_add_buf(gm, &gbf);
}

/* Packing (tiles t->pack_a / pack_b): a TEMP workspace for operand A (is_b 0) or B of prob
 * in the packed layout (sched/matmul.h: the tile layout's contiguous axis c, rows along
 * the other axis o padded to 8 elements, then the batch), and the kernel "NAME_packA" (B),
 * appended to gm before the matmul kernel, that fills it: each of 256 threads writes 4
 * words (8 elements along the contiguous axis) of a row with one 16-byte store,
 * consecutive threads consecutive 16 bytes (512-byte stores per warp), from 2-byte loads
 * (for an M-major im2col operand: along the output's innermost spatial axis); the pad is
 * written as zeros.  *out is the packed operand (buf: the workspace).  0, or -1
 * with a diagnostic. */
static int pack_operand(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_mm_problem *prob,
			const tinyc_mm_tiles *t, int is_b, const char *name, tinyc_mm_operand *out,
			tinyc_gkernel *host)
{
	const tinyc_mm_operand *op = is_b ? &prob->b : &prob->a;
	int64_t elems = tinyc_matmul_packed_operand(prob, t, gm->sym_bound, is_b, out);
	int kmajor = is_b ? t->b_kmajor : t->a_kmajor;
	int c = is_b ? (kmajor ? 0 : 1) : (kmajor ? 1 : 0), o = 1 - c;	/* operand axes */
	const tinyc_dim *d[2] = {is_b ? &prob->k : &prob->m, is_b ? &prob->n : &prob->k};
	int64_t C = tinyc_mmk_bound(gm, d[c]), O = tinyc_mmk_bound(gm, d[o]);
	int64_t sc = bound_poly(gm, &op->stride[c]), so = bound_poly(gm, &op->stride[o]);
	int64_t sl = bound_poly(gm, &op->stride[2]), off = bound_poly(gm, &op->offset);
	int64_t padded = bound_poly(gm, &out->stride[o]);
	int batch = !tinyc_evt_poly_is_zero(&out->stride[2]);
	int64_t L = batch ? tinyc_mmk_bound(gm, &prob->l) : 1;
	int gathered = op->gather.on;	/* im2col: the window's offset may be negative */
	if (elems < 1 || C < 1 || O < 1 || L < 1 || sc < 0 || so < 0 || sl < 0 ||
	    (off < 0 && !gathered) || padded < C || tinyc_dtype_size(op->dtype) != 2)
		return tinyc_error(ctx, "CodegenError", "matmul %s: packing operand %c needs its "
				   "sizes bound, non-negative strides and 16-bit elements", name,
				   is_b ? 'B' : 'A');
	/* the workspace */
	char wname[160];
	snprintf(wname, sizeof(wname), "pk%c_%s", is_b ? 'B' : 'A', name);
	int w = tinyc_mm_add_temp(gm, wname, op->dtype, elems);
	if (w < 0)
		return -1;
	out->buf = w;
	/* the kernel: block b covers words [1024 q, 1024 q + 1024) of row (l, r); with a host
	 * kernel of 256 threads (its blocks below b0 do its work), the blocks from b0 on */
	char kname[160], comment[640];
	snprintf(kname, sizeof(kname), "%s_pack%c", name, is_b ? 'B' : 'A');
	int64_t W = padded / 2, chunks = (W + 1023) / 1024, blocks = chunks * O * L, b0 = 0;
	int64_t reach = (off < 0 ? -off : off) + (O - 1) * so + (C - 1) * sc + (L - 1) * sl;
	if (gathered) {	/* the window's axes instead of the row and column strides */
		reach = (off < 0 ? -off : off) + (L - 1) * sl;
		for (int r = 0; r < 2; r++)
			for (int i = 0; i < op->gather.nax[r]; i++)
				reach += (op->gather.ext[r][i] - 1) * op->gather.stride[r][i];
	}
	tinyc_dtype it = reach < INT32_MAX && elems < INT32_MAX && blocks < INT32_MAX / 1024
			 ? TINYC_INT : TINYC_LONG;
	if (host && (host->index_dtype != it || host->block[0] != 256 ||
		     host->grid[0]->op != TINYC_GX_INT || host->grid[0]->ival + blocks > INT32_MAX))
		host = NULL;	/* a kernel of its own */
	tinyc_gkernel *k = host ? host : tinyc_gk_alloc(gm, kname);
	if (!k)
		return -1;
	if (host)
		b0 = host->grid[0]->ival;
	k->index_dtype = it;
	k->block[0] = 256, k->block[1] = k->block[2] = 1;
	k->grid[0] = tinyc_gx_int(k, TINYC_LONG, b0 + blocks);
	k->grid[1] = k->grid[2] = tinyc_gx_int(k, TINYC_LONG, 1);
	int n = host ? snprintf(comment, sizeof(comment), "%s; blocks from %" PRId64 " on, ", k->comment, b0) : 0;
	snprintf(comment + n, sizeof(comment) - (size_t)n, "%s: pack %s of matmul %s into %s (rows of %"
		 PRId64 " padded to %" PRId64 " elements for TMA, zeros in the pad)", kname,
		 gm->bufs[op->buf].name, name, wname, C, padded);
	k->comment = tinyc_gpu_strdup(gm, comment);
	char pn[200];
	snprintf(pn, sizeof(pn), "%s_u16", gm->bufs[op->buf].name);
	int src = tinyc_gk_param_ptr(k, pn, TINYC_USHORT, 1, op->buf);
	snprintf(pn, sizeof(pn), "%s_x2", wname);
	int dst = tinyc_gk_param_ptr(k, pn, TINYC_UINT, 0, w);
	int jv = tinyc_gk_reg(k, "j", it);
	if (src < 0 || dst < 0 || jv < 0)
		return -1;
#define PK_I(v) tinyc_gx_int(k, it, (v))
#define PK_B(op_, x, y) tinyc_gx_binary(k, (op_), (x), (y))
	tinyc_gexpr *bid = PK_B(TINYC_GX_SUB, tinyc_gx_cast(k, it, tinyc_gx_special(k, TINYC_GSP_BID_X)),
				PK_I(b0));
	tinyc_gexpr *tid = tinyc_gx_cast(k, it, tinyc_gx_special(k, TINYC_GSP_TID_X));
	tinyc_gexpr *q = PK_B(TINYC_GX_MOD, bid, PK_I(chunks));
	tinyc_gexpr *row = PK_B(TINYC_GX_DIV, bid, PK_I(chunks));	/* l * O + r */
	tinyc_gexpr *r = PK_B(TINYC_GX_MOD, row, PK_I(O)), *l = PK_B(TINYC_GX_DIV, row, PK_I(O));
	tinyc_gexpr *base = PK_B(TINYC_GX_ADD, PK_I(off), PK_B(TINYC_GX_ADD, PK_B(TINYC_GX_MUL, r, PK_I(so)),
								  PK_B(TINYC_GX_MUL, l, PK_I(sl))));
	/* thread t of chunk q: the 4 words (8 elements) from word w0 = 1024 q + 4 t of the row,
	 * gathered into pk[0..4) (unrolled j loop), then one 16-byte store (W is a multiple
	 * of 4: rows are padded to 8 elements) */
	int pk = tinyc_gk_reg_array(k, "pk", TINYC_UINT, 4);
	if (pk < 0)
		return -1;
	k->vars[pk].align = 16;
	tinyc_gstmt *body = tinyc_gs_block(k);
	tinyc_gexpr *w0 = PK_B(TINYC_GX_ADD, PK_B(TINYC_GX_MUL, q, PK_I(1024)), PK_B(TINYC_GX_MUL, tid, PK_I(4)));
	tinyc_gexpr *wd = PK_B(TINYC_GX_ADD, w0, tinyc_gx_var(k, jv));
	tinyc_gexpr *half[2];
	/* a gathered operand: the im2col element of (r, col) of image l, 0 outside the window */
	tinyc_mmk gb;
	memset(&gb, 0, sizeof(gb));
	gb.ctx = ctx, gb.gm = gm, gb.k = k, gb.it = it, gb.l = l;
	for (int h = 0; h < 2; h++) {
		tinyc_gexpr *col = PK_B(TINYC_GX_ADD, PK_B(TINYC_GX_MUL, wd, PK_I(2)), PK_I(h));
		tinyc_gexpr *addr, *in = PK_B(TINYC_GX_LT, col, PK_I(C)), *guard = NULL;
		if (gathered) {
			addr = c == 0 ? tinyc_conv_addr(&gb, op, col, r, &guard)
				      : tinyc_conv_addr(&gb, op, r, col, &guard);
			if (guard)
				in = PK_B(TINYC_GX_LAND, in, guard);
		} else {
			addr = PK_B(TINYC_GX_ADD, base, PK_B(TINYC_GX_MUL, col, PK_I(sc)));
		}
		tinyc_gexpr *v = tinyc_gx_load(k, src, addr, in);
		half[h] = tinyc_gx_cast(k, TINYC_UINT, v);
	}
	if (gb.error)
		return -1;
	tinyc_gexpr *word = PK_B(TINYC_GX_OR, half[0], PK_B(TINYC_GX_SHL, half[1], tinyc_gx_int(k, TINYC_UINT, 16)));
	tinyc_gs_append(k, body, tinyc_gs_store(k, pk, tinyc_gx_var(k, jv), word, NULL));
	tinyc_gstmt *st = tinyc_gs_block(k);
	tinyc_gs_append(k, st, tinyc_gs_copy(k, dst, PK_B(TINYC_GX_ADD, PK_B(TINYC_GX_MUL, row, PK_I(W)), w0),
					      pk, PK_I(0), 4, NULL, 0));
	tinyc_gstmt *all = host ? tinyc_gs_block(k) : k->body;
	if (tinyc_gs_append(k, all, tinyc_gs_decl(k, pk, NULL)) < 0 ||
	    tinyc_gs_append(k, all, tinyc_gs_for_range(k, jv, PK_I(0), PK_I(4), PK_I(1), 4, body)) < 0 ||
	    tinyc_gs_append(k, all, tinyc_gs_if(k, PK_B(TINYC_GX_LT, w0, PK_I(W)), st, NULL)) < 0 ||
	    (host && tinyc_gs_append(k, k->body, tinyc_gs_if(k, PK_B(TINYC_GX_LAND, PK_B(TINYC_GX_GE, bid, PK_I(0)),
									 PK_B(TINYC_GX_LT, bid, PK_I(blocks))),
							     all, NULL)) < 0))
		return -1;
#undef PK_I
#undef PK_B
	tinyc_gk_sort_params(k);
	return 0;
}

static int emit(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_mm_problem *prob,
		const tinyc_mm_tiles *t, const char *name, tinyc_gkernel *host_b,
		const tinyc_sk_fix *fix);

/* A swap-AB plan (t->swap, sched/swapab.c) after its split: the template on the swapped
 * problem C^T = B^T A^T (tiles t are its tiles); a cluster's split-K sum runs the swapped
 * whole problem's epilogue.  0 or -1. */
static int emit_swapped(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_mm_problem *prob,
			const tinyc_mm_tiles *t, const char *name, const tinyc_sk_fix *fix)
{
	if (t->variant != TINYC_MM_WGMMA || (fix && !fix->dsmem))
		return tinyc_error(ctx, "CodegenError", "matmul %s: swapped operands need the wgmma "
				   "template and, split, a reduction kernel or the cluster sum", name);
	tinyc_mm_problem sw, whole;
	memset(&whole, 0, sizeof(whole));
	if (tinyc_mm_problem_swap(ctx, prob, gm->sym_bound, &sw) < 0)
		return tinyc_ctx_error_count(ctx) ? -1 : tinyc_error(ctx, "CodegenError", "matmul %s: "
								     "cannot swap the operands", name);
	tinyc_sk_fix sfix;
	if (fix) {	/* the cluster's sum: the whole problem swapped too */
		sfix = *fix;
		if (tinyc_mm_problem_swap(ctx, fix->whole, gm->sym_bound, &whole) < 0) {
			tinyc_mm_problem_clear(&sw);
			return -1;
		}
		sfix.whole = &whole, sfix.M = fix->N, sfix.N = fix->M;
	}
	tinyc_mm_tiles st = *t;
	st.swap = 0;
	int r = emit(ctx, gm, &sw, &st, name, NULL, fix ? &sfix : NULL);
	for (int i = 0; r == 0 && i < gm->nkernel; i++)	/* say so in the kernel's comment */
		if (!strcmp(gm->kernels[i]->name, name) && gm->kernels[i]->comment) {
			char c[400];
			snprintf(c, sizeof(c), "%s; swap-AB: C^T = B^T A^T, tile rows = N, columns = M",
				 gm->kernels[i]->comment);
			gm->kernels[i]->comment = tinyc_gpu_strdup(gm, c);
		}
	tinyc_mm_problem_clear(&sw);
	tinyc_mm_problem_clear(&whole);
	return r;
}

/* tinyc_matmul_emit; host_b: a kernel of 256 threads launched earlier whose extra blocks
 * pack B (the transpose kernel of the conv whose epilogue stores this one's NHWC input),
 * or NULL. */
static int emit(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_mm_problem *prob,
		const tinyc_mm_tiles *t, const char *name, tinyc_gkernel *host_b,
		const tinyc_sk_fix *fix)
{
	if (!prob->evt)
		return tinyc_error(ctx, "CodegenError", "matmul %s: no epilogue graph", name);
	if (tinyc_evt_verify(ctx, prob->evt, 1) < 0)
		return -1;
	if (t->split > 1)	/* the partials' kernel (this function again), the reduction */
		return tinyc_splitk_emit(ctx, gm, prob, t, name);
	if (t->swap)	/* this function again on the swapped (split) problem */
		return emit_swapped(ctx, gm, prob, t, name, fix);
	if (t->tail_split > 1 && !fix)	/* the workspaces, then this function again */
		return tinyc_streamk_emit(ctx, gm, prob, t, name);
	if (t->variant == TINYC_MM_WGMMA && t->consumers < 1)
		return tinyc_error(ctx, "CodegenError", "matmul %s: wgmma tiles without consumers", name);
	if (t->variant == TINYC_MM_MMA && gm->arch_major < 8)
		return tinyc_error(ctx, "CodegenError", "matmul %s: the mma template needs sm_80, the "
				   "module targets %s", name, gm->target);
	/* packed operands: their packing kernels first, then the matmul reads the workspaces */
	tinyc_mm_problem packed = *prob;	/* shallow: the evt stays prob's */
	tinyc_gkernel *nhwc = NULL;	/* the transpose kernel, which also packs B */
	if ((t->variant == TINYC_MM_WGMMA || t->variant == TINYC_MM_TF32X3) && t->a_nhwc &&
	    !t->nhwc.stored_by &&	/* A reads a channels-last copy, made here */
	    (packed.a.buf = tinyc_conv_nhwc_emit(ctx, gm, &prob->a, &t->nhwc, name, &nhwc)) < 0)
		return -1;
	if (t->variant == TINYC_MM_WGMMA && t->pack_a &&
	    pack_operand(ctx, gm, prob, t, 0, name, &packed.a, NULL) < 0)
		return -1;
	if (t->variant == TINYC_MM_WGMMA && t->pack_b &&
	    pack_operand(ctx, gm, prob, t, 1, name, &packed.b, nhwc ? nhwc : host_b) < 0)
		return -1;
	tinyc_mmk b;
	memset(&b, 0, sizeof(b));
	b.ctx = ctx;
	b.gm = gm;
	b.prob = &packed;
	b.t = t;
	b.fix = fix;
	b.it = t->index_dtype == TINYC_INT ? TINYC_INT : TINYC_LONG;
	b.nparam_cap = gm->nbuf;
	b.param = malloc(sizeof(int) * ((size_t)gm->nbuf + 1));
	if (!b.param)
		return tinyc_error(ctx, "OutOfMemory", "matmul");
	for (int i = 0; i < gm->nbuf; i++)
		b.param[i] = -1;
	int rc = t->variant == TINYC_MM_SIMT && t->stages == 2 ? tinyc_simt_tile_build(&b, name)
		 : t->variant == TINYC_MM_SIMT ? build_simt(&b, name)
		 : t->variant == TINYC_MM_WGMMA ? build_wgmma(&b, name)
		 : t->variant == TINYC_MM_GEMV && t->gemv_mma ? tinyc_gemv_mma_build(&b, name)
		 : t->variant == TINYC_MM_GEMV ? tinyc_gemv_build(&b, name)
		 : t->variant == TINYC_MM_TF32X3 ? tinyc_tf32_tile_build(&b, name) : build_mma(&b, name);
	if (rc == 0 && !b.error) {
		char comment[200];
		if (t->variant == TINYC_MM_GEMV && t->gemv_mma)
			snprintf(comment, sizeof(comment), "%s: matmul gemv-mma tile [%d,%d,%d], unroll %d, "
				 "%d warps splitting K, mma.sync m16n8k16 on W^T x X^T, "
				 "epilogue %d nodes", name, t->bm, t->bn, t->bk, t->stages, t->threads / 32,
				 prob->evt->n);
		else if (t->variant == TINYC_MM_GEMV)
			snprintf(comment, sizeof(comment), "%s: matmul gemv tile [%d,%d,%d], unroll %d, "
				 "16-byte loads of B, epilogue %d nodes", name, t->bm, t->bn, t->bk,
				 t->stages, prob->evt->n);
		else if (t->variant == TINYC_MM_SIMT)
			snprintf(comment, sizeof(comment), "%s: matmul simt tile [%d,%d,%d]%s, micro %dx%d, "
				 "epilogue %d nodes", name, t->bm, t->bn, t->bk,
				 t->stages == 2 ? " 2 stages (register prefetch)" : "", t->tm, t->tn,
				 prob->evt->n);
		else if (t->variant == TINYC_MM_TF32X3)
			snprintf(comment, sizeof(comment), "%s: matmul 3xTF32 mma.sync m16n8k8 tile [%d,%d,%d], "
				 "2 stages (register prefetch), warps %dx%d, epilogue %d nodes", name, t->bm,
				 t->bn, t->bk, t->warps_m, t->warps_n, prob->evt->n);
		else if (t->variant == TINYC_MM_WGMMA)
			snprintf(comment, sizeof(comment), "%s: matmul wgmma m64n%d%s tile [%d,%d,%d], "
				 "%d stages (TMA, mbarriers), 1 producer + %d consumer warpgroups, "
				 "persistent%s, epilogue %d nodes", name, t->wgn,
				 t->tf32x3 ? "k8 3xTF32" : "k16", t->bm, t->bn, t->bk,
				 t->stages, t->consumers, t->tail_split > 1 ? " with a stream-K tail" : "",
				 prob->evt->n);
		else
			snprintf(comment, sizeof(comment), "%s: matmul mma.sync m16n8k16 tile [%d,%d,%d], "
				 "%d stages%s, warps %dx%d, epilogue %d nodes", name, t->bm, t->bn, t->bk,
				 t->stages, t->stages > 1 ? " (cp.async)" : "", t->warps_m, t->warps_n,
				 prob->evt->n);
		b.k->comment = tinyc_gpu_strdup(gm, comment);
		tinyc_gk_sort_params(b.k);
		rc = tinyc_evt_emit_final_passes(&b, name);
	}
	if ((rc < 0 || b.error) && !tinyc_ctx_error_count(ctx))
		tinyc_error(ctx, "CodegenError", "matmul %s: building the kernel failed", name);
	int failed = rc < 0 || b.error;
	free(b.param);
	free(b.ws);
	return failed ? -1 : 0;
}

int tinyc_matmul_build(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_schedule *s,
		       const tinyc_indexbook *ib, int kernel)
{
	(void)ib;
	const tinyc_skernel *sk = &s->kerns[kernel];
	const tinyc_plan *p = tinyc_skernel_plan(sk);
	if (!p || p->kind != TINYC_PLAN_MATMUL || !p->ext)
		return tinyc_error(ctx, "CodegenError", "kernel %s: not a MATMUL plan", sk->name);
	const tinyc_mm_plan *mp = p->ext;
	if (mp->fused_into >= 0)
		return 0;	/* written by the matmul kernel it is fused into */
	tinyc_gkernel *host_b = NULL;	/* the producer's transpose kernel, when it has one */
	if (mp->t.a_nhwc && mp->t.nhwc.stored_by) {
		char hn[160];
		snprintf(hn, sizeof(hn), "%s_nhwc", s->kerns[mp->t.nhwc.stored_by - 1].name);
		for (int i = 0; i < gm->nkernel && !host_b; i++)
			if (!strcmp(gm->kernels[i]->name, hn))
				host_b = gm->kernels[i];
	}
	return emit(ctx, gm, &mp->prob, &mp->t, sk->name, host_b, NULL);
}

int tinyc_matmul_emit(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_mm_problem *prob,
		      const tinyc_mm_tiles *t, const char *name)
{
	return emit(ctx, gm, prob, t, name, NULL, NULL);
}

int tinyc_matmul_emit_fixed(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_mm_problem *prob,
			    const tinyc_mm_tiles *t, const char *name, const tinyc_sk_fix *fix)
{
	return emit(ctx, gm, prob, t, name, NULL, fix);
}
