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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/matmul.h"

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
static tinyc_gexpr *op_addr(tinyc_mmk *b, const tinyc_mm_operand *op, tinyc_gexpr *row,
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
static tinyc_gkernel *kernel_begin(tinyc_mmk *b, const char *name, int acc_count)
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
	int iv = tinyc_gk_reg(k, iname, b->it);
	if (iv < 0) {
		b->error = 1;
		return;
	}
	tinyc_gexpr *i = tinyc_gx_var(k, iv);
	tinyc_gexpr *r = along_rows ? bin(b, TINYC_GX_MOD, i, I(b, rows)) : bin(b, TINYC_GX_DIV, i, I(b, cols));
	tinyc_gexpr *c = along_rows ? bin(b, TINYC_GX_DIV, i, I(b, rows)) : bin(b, TINYC_GX_MOD, i, I(b, cols));
	tinyc_gexpr *gr = add(b, row0, r), *gc = add(b, col0, c);
	tinyc_gexpr *v = tinyc_gx_load(k, tinyc_mmk_param(b, op->buf, 0), op_addr(b, op, gr, gc),
				       in_tile(b, gr, R, pr, gc, C, pc));
	tinyc_gstmt *body = tinyc_gs_block(k);
	tinyc_mmk_append(b, body, tinyc_gs_store(k, sh, add(b, base, add(b, mul(b, r, I(b, ld)), c)),
						 tinyc_gx_cast(k, k->vars[sh].dtype, v), NULL));
	tinyc_mmk_append(b, blk, tinyc_gs_for_range(k, iv, b->tid, I(b, (int64_t)rows * cols),
						    I(b, b->threads), 0, body));
}

/* The SIMT kernel body. */
static int build_simt(tinyc_mmk *b, const char *name)
{
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	int TM = t->tm, TN = t->tn, BM = t->bm, BN = t->bn, BK = t->bk;
	tinyc_gkernel *k = kernel_begin(b, name, TM * TN);
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
	f.row_xor[0] = 16, f.nrow_xor = 1;
	f.col_xor[0] = 1, f.col_xor[1] = 2, f.col_xor[2] = 4, f.col_xor[3] = 8, f.ncol_xor = 4;
	f.row_lead = bin(b, TINYC_GX_EQ, bin(b, TINYC_GX_AND, b->lane, I(b, 16)), I(b, 0));
	f.col_lead = bin(b, TINYC_GX_EQ, tx, I(b, 0));
	f.groups_m = 8, f.group_m = b->warp;
	f.groups_n = 1, f.group_n = I(b, 0);
	return tinyc_evt_emit_epilogue(b, &f, body);
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
		tinyc_gexpr *src = op_addr(b, op, gr, gc);
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
		for (int mi = 0; mi < MI; mi++) {
			tinyc_gexpr *row = add(b, add(b, mul(b, wm, I(b, WM)), I(b, mi * 16)), lr);
			tinyc_gexpr *src = add(b, abase, add(b, mul(b, row, I(b, ASTR)), add(b, I(b, ks * 16), lc)));
			tinyc_mmk_append(b, blk, tinyc_gs_ldmatrix(k, afr, I(b, mi * 8), As, src, 4, 0));
		}
		for (int nj = 0; nj < NI / 2; nj++) {
			tinyc_gexpr *row = add(b, I(b, ks * 16), lr);
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

/* The MMA kernel body. */
static int build_mma(tinyc_mmk *b, const char *name)
{
	const tinyc_mm_problem *pr = b->prob;
	const tinyc_mm_tiles *t = b->t;
	int BM = t->bm, BN = t->bn, BK = t->bk, S = t->stages;
	int WM = BM / t->warps_m, WN = BN / t->warps_n, MI = WM / 16, NI = WN / 8;
	tinyc_gkernel *k = kernel_begin(b, name, MI * NI * 4);
	if (!k || b->error)
		return -1;
	tinyc_gstmt *body = k->body;
	b->tid = let(b, body, "tid", tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_TID_X)));
	tinyc_gexpr *wm = let(b, body, "wm", bin(b, TINYC_GX_DIV, b->warp, I(b, t->warps_n)));
	tinyc_gexpr *wn = let(b, body, "wn", bin(b, TINYC_GX_MOD, b->warp, I(b, t->warps_n)));
	tinyc_gexpr *g = let(b, body, "g", bin(b, TINYC_GX_DIV, b->lane, I(b, 4)));
	tinyc_gexpr *t4 = let(b, body, "t4", bin(b, TINYC_GX_MOD, b->lane, I(b, 4)));
	tinyc_gexpr *lr = let(b, body, "lr", bin(b, TINYC_GX_MOD, b->lane, I(b, 16)));
	tinyc_gexpr *lc = let(b, body, "lc", mul(b, bin(b, TINYC_GX_DIV, b->lane, I(b, 16)), I(b, 8)));
	int As = tinyc_gk_shared(k, "As", pr->a.dtype, (int64_t)S * BM * (BK + 8), 16, 0);
	int Bs = tinyc_gk_shared(k, "Bs", pr->b.dtype, (int64_t)S * BK * (BN + 8), 16, 0);
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
	memset(&f, 0, sizeof(f));
	f.mma = 1;
	f.ni = NI;
	f.tr = MI * 2, f.tc = NI * 2;
	f.row_run = 1, f.col_run = 2;
	f.row_base = add(b, mul(b, wm, I(b, WM)), g);
	f.col_base = add(b, mul(b, wn, I(b, WN)), mul(b, t4, I(b, 2)));
	for (int a = 0; a < f.tr; a++)
		f.row_off[a] = (a / 2) * 16 + (a % 2) * 8;
	for (int c = 0; c < f.tc; c++)
		f.col_off[c] = (c / 2) * 8 + (c % 2);
	f.row_xor[0] = 4, f.row_xor[1] = 8, f.row_xor[2] = 16, f.nrow_xor = 3;
	f.col_xor[0] = 1, f.col_xor[1] = 2, f.ncol_xor = 2;
	f.row_lead = bin(b, TINYC_GX_EQ, g, I(b, 0));
	f.col_lead = bin(b, TINYC_GX_EQ, t4, I(b, 0));
	f.groups_m = t->warps_m, f.group_m = wm;
	f.groups_n = t->warps_n, f.group_n = wn;
	return tinyc_evt_emit_epilogue(b, &f, body);
}

/* ------------------------------------------------------------------ entry ---- */

int tinyc_matmul_emit(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_mm_problem *prob,
		      const tinyc_mm_tiles *t, const char *name)
{
	if (!prob->evt)
		return tinyc_error(ctx, "CodegenError", "matmul %s: no epilogue graph", name);
	if (tinyc_evt_verify(ctx, prob->evt, 1) < 0)
		return -1;
	if (t->variant == TINYC_MM_MMA && gm->arch_major < 8)
		return tinyc_error(ctx, "CodegenError", "matmul %s: the mma template needs sm_80, the "
				   "module targets %s", name, gm->target);
	tinyc_mmk b;
	memset(&b, 0, sizeof(b));
	b.ctx = ctx;
	b.gm = gm;
	b.prob = prob;
	b.t = t;
	b.it = t->index_dtype == TINYC_INT ? TINYC_INT : TINYC_LONG;
	b.nparam_cap = gm->nbuf;
	b.param = malloc(sizeof(int) * ((size_t)gm->nbuf + 1));
	if (!b.param)
		return tinyc_error(ctx, "OutOfMemory", "matmul");
	for (int i = 0; i < gm->nbuf; i++)
		b.param[i] = -1;
	int rc = t->variant == TINYC_MM_SIMT ? build_simt(&b, name) : build_mma(&b, name);
	if (rc == 0 && !b.error) {
		char comment[200];
		if (t->variant == TINYC_MM_SIMT)
			snprintf(comment, sizeof(comment), "%s: matmul simt tile [%d,%d,%d], micro %dx%d, "
				 "epilogue %d nodes", name, t->bm, t->bn, t->bk, t->tm, t->tn, prob->evt->n);
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
	return tinyc_matmul_emit(ctx, gm, &mp->prob, &mp->t, sk->name);
}
