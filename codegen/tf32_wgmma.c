/* The Hopper kernel's 3xTF32 form for fp32 operands (sched/matmul.h: wgmma with tf32x3 set;
 * sm_90a).  The ring, the producer, the persistent tile walk and the epilogue are those of
 * the fp16 kernel (codegen/matmul.c: build_wgmma); what differs:
 *
 *   ring      per stage the TMA tiles As[BM][BK], Bs[BN][BK] (fp32, K-major, BK = 32: one
 *             128-byte swizzled row per m or n) and their lo parts Alo, Blo (same layout);
 *             barriers full[s] (TMA landed), ready[s] (split), empty[s] (consumed)
 *   producer  thread 0 issues the TMA loads of ring position p; then all 128 threads wait
 *             for position p - 1 to land and split it in place, 4 floats per step:
 *               hi = tf32(x) -> As/Bs,  lo = tf32(x - hi) -> Alo/Blo
 *             (round to nearest, ties away: codegen/tf32_tile.c's split), fence.proxy.async
 *             (the tensor cores read what ordinary stores wrote) and arrive on ready[s].
 *             A position is split one behind its load, so the ring needs 3 stages.
 *   consumer  per k tile, per 8-wide k step, three wgmma m64nNk8 .tf32 (both operands K-major
 *             from shared memory), small terms first:
 *               part = a_lo b_hi + a_hi b_lo + a_hi b_hi
 *             into a fresh fragment `part` (the first overwrites it), then acc += part in
 *             fp32 once the group is done (wait_group 0: reading a fragment while another
 *             group is in flight makes ptxas serialise the wgmma, C7514; the other
 *             consumer warpgroup's group keeps the tensor cores busy meanwhile).  The tensor cores round their sums toward zero: chaining all 3K/8 products
 *             into one accumulator costs accuracy (docs/matmul-results.md); chains of 12
 *             (BK = 32) from zero plus K/32 round-to-nearest adds keep the error of fp32
 *             FMAs.
 *
 * Tested on the GPU (tests/gpu/tf32wg) and on the GPU IR interpreter against the reference
 * evaluator (tests/unit/test_hopper_interp.c: wgmma .tf32 with its truncating sums); the
 * other CPU tests of fp32 contractions take the mma.sync 3xTF32 tile (codegen/tf32_tile.c).
 */
#include <string.h>

#include "codegen/wgmma_ring.h"

/* Shorthands for index arithmetic. */
static tinyc_gexpr *I(tinyc_mmk *b, int64_t v)
{
	return tinyc_gx_int(b->k, b->it, v);
}

static tinyc_gexpr *bin(tinyc_mmk *b, tinyc_gx_op op, tinyc_gexpr *x, tinyc_gexpr *y)
{
	return tinyc_gx_binary(b->k, op, x, y);
}

int tinyc_tf32wg_ring_init(wgmma_ring *w, tinyc_gstmt *init)
{
	tinyc_mmk *b = w->b;
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = b->k;
	int S = t->stages;
	w->alo = tinyc_gk_shared(k, "Alo", TINYC_FLOAT, (int64_t)S * t->bm * t->bk, 1024, 1);
	w->blo = tinyc_gk_shared(k, "Blo", TINYC_FLOAT, (int64_t)S * t->bn * t->bk, 1024, 1);
	w->ready = tinyc_gk_shared(k, "ready", TINYC_ULONG, S, 8, 0);
	if (w->alo < 0 || w->blo < 0 || w->ready < 0)
		return -1;
	for (int st = 0; st < S; st++)	/* the producer's 128 threads arrive */
		tinyc_mmk_append(b, init, tinyc_gs_mbar_init(k, -1, w->ready, tinyc_gx_int(k, b->it, st), 128));
	return b->error ? -1 : 0;
}

/* Split `rows` x BK floats of stage base `base` of hi (in place) into lo, 4 floats per
 * producer thread and step (appended to blk). */
static void split_tile(wgmma_ring *w, tinyc_gstmt *blk, int hi, int lo, tinyc_gexpr *base, int rows,
		       int raw, int rhi, int rlo, const char *tag)
{
	tinyc_mmk *b = w->b;
	tinyc_gkernel *k = b->k;
	int64_t steps = (int64_t)rows * b->t->bk / (4 * 128);
	int jv = tinyc_gk_reg(k, tag, b->it);
	if (jv < 0) {
		b->error = 1;
		return;
	}
	tinyc_gstmt *body = tinyc_gs_block(k);
	tinyc_gexpr *ix = bin(b, TINYC_GX_ADD, base,
			      bin(b, TINYC_GX_MUL, bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, tinyc_gx_var(k, jv),
									 I(b, 128)), b->tid), I(b, 4)));
	tinyc_mmk_append(b, body, tinyc_gs_copy(k, raw, I(b, 0), hi, ix, 4, NULL, 0));
	for (int e = 0; e < 4; e++)
		tinyc_tf32_split_mmk(b, body, raw, e, rhi, rlo, e);
	tinyc_mmk_append(b, body, tinyc_gs_copy(k, hi, ix, rhi, I(b, 0), 4, NULL, 0));
	tinyc_mmk_append(b, body, tinyc_gs_copy(k, lo, ix, rlo, I(b, 0), 4, NULL, 0));
	tinyc_mmk_append(b, blk, tinyc_gs_for_range(k, jv, I(b, 0), I(b, steps), I(b, 1), 4, body));
}

void tinyc_tf32wg_split(wgmma_ring *w, tinyc_gstmt *blk, tinyc_gexpr *P)
{
	tinyc_mmk *b = w->b;
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = b->k;
	int S = t->stages;
	/* b->tid is the producer thread's index: warpgroup 0 is threads 0..127 */
	int raw = tinyc_gk_reg_array(k, "sraw", TINYC_FLOAT, 4);
	int rhi = tinyc_gk_reg_array(k, "shi", TINYC_FLOAT, 4);
	int rlo = tinyc_gk_reg_array(k, "slo", TINYC_FLOAT, 4);
	int sv = tinyc_gk_reg(k, "ss", b->it), pv = tinyc_gk_reg(k, "sph", b->it);
	if (raw < 0 || rhi < 0 || rlo < 0 || sv < 0 || pv < 0) {
		b->error = 1;
		return;
	}
	k->vars[raw].align = k->vars[rhi].align = k->vars[rlo].align = 16;	/* 16-byte copies */
	tinyc_mmk_append(b, blk, tinyc_gs_decl(k, sv, bin(b, TINYC_GX_MOD, P, I(b, S))));
	tinyc_mmk_append(b, blk, tinyc_gs_decl(k, pv, bin(b, TINYC_GX_AND, bin(b, TINYC_GX_DIV, P, I(b, S)), I(b, 1))));
	tinyc_gexpr *s = tinyc_gx_var(k, sv);
	int arrays[] = {raw, rhi, rlo};
	for (int i = 0; i < 3; i++)
		tinyc_mmk_append(b, blk, tinyc_gs_decl(k, arrays[i], NULL));
	tinyc_mmk_append(b, blk, tinyc_gs_comment(k, "3xTF32: wait for the stage's TMA loads, split "
						    "it into hi (in place) and lo"));
	tinyc_mmk_append(b, blk, tinyc_gs_mbar_wait(k, w->pipe, w->full, s, tinyc_gx_var(k, pv)));
	split_tile(w, blk, w->As, w->alo, bin(b, TINYC_GX_MUL, s, I(b, (int64_t)t->bm * t->bk)), t->bm,
		   raw, rhi, rlo, "sja");
	split_tile(w, blk, w->Bs, w->blo, bin(b, TINYC_GX_MUL, s, I(b, (int64_t)t->bn * t->bk)), t->bn,
		   raw, rhi, rlo, "sjb");
	tinyc_mmk_append(b, blk, tinyc_gs_fence(k, TINYC_GF_PROXY_ASYNC));
	tinyc_mmk_append(b, blk, tinyc_gs_mbar_arrive(k, -1, w->ready, s));
}

/* A consumer's main loop over the k tiles of a tile (appended to ctile): per k tile wait
 * ready[s], 3 x BK/8 x BN/wgn wgmma into part (the first overwrites it), commit, wait for
 * the group, acc += part, release the stage. */
void tinyc_tf32wg_kloop(wgmma_ring *w, tinyc_gstmt *ctile)
{
	tinyc_mmk *b = w->b;
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = b->k;
	int BM = t->bm, BN = t->bn, BK = t->bk, S = t->stages, WN = t->wgn, H = BN / 2;
	int part = tinyc_gk_reg_array(k, "part", TINYC_FLOAT, H);
	if (part < 0) {
		b->error = 1;
		return;
	}
	tinyc_mmk_append(b, ctile, tinyc_gs_decl(k, part, NULL));
	for (int i = 0; i < H; i++)	/* the tile's sums start from zero */
		tinyc_mmk_append(b, ctile, tinyc_gs_store(k, b->acc, I(b, i), tinyc_gx_float(k, TINYC_FLOAT, 0), NULL));
	tinyc_gstmt *blk = tinyc_gs_block(k);
	tinyc_gexpr *ITC = tinyc_gx_var(k, w->itc);
	tinyc_gexpr *cs = tinyc_mmk_let(b, blk, "cs", bin(b, TINYC_GX_MOD, ITC, I(b, S)));
	tinyc_gexpr *cph = tinyc_mmk_let(b, blk, "cph", bin(b, TINYC_GX_AND, bin(b, TINYC_GX_DIV, ITC, I(b, S)), I(b, 1)));
	tinyc_mmk_append(b, blk, tinyc_gs_mbar_wait(k, -1, w->ready, cs, cph));
	tinyc_mmk_append(b, blk, tinyc_gs_wgmma_fence(k));
	tinyc_gwg_layout kmaj = {1, 64 * 64 * 2};
	tinyc_gexpr *abase = bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, cs, I(b, (int64_t)BM * BK)),
				 bin(b, TINYC_GX_MUL, w->cw, I(b, (int64_t)64 * BK)));
	tinyc_gexpr *bbase = bin(b, TINYC_GX_MUL, cs, I(b, (int64_t)BN * BK));
	/* the products, small terms first: (A, B) = (lo, hi), (hi, lo), (hi, hi) */
	int as[3] = {w->alo, w->As, w->As}, bs[3] = {w->Bs, w->blo, w->Bs};
	for (int ks = 0; ks < BK / 8; ks++)
		for (int p = 0; p < 3; p++)
			for (int nb = 0; nb < BN / WN; nb++) {
				tinyc_gexpr *aix = bin(b, TINYC_GX_ADD, abase, I(b, ks * 8));
				tinyc_gexpr *bix = bin(b, TINYC_GX_ADD, bbase, I(b, (int64_t)nb * WN * BK + ks * 8));
				tinyc_gexpr *sd = ks == 0 && p == 0 ? tinyc_gx_bool(k, 0) : NULL;
				tinyc_mmk_append(b, blk, tinyc_gs_wgmma(k, part, tinyc_gx_int(k, TINYC_INT, nb * WN / 2),
									as[p], aix, kmaj, bs[p], bix, kmaj, WN, sd));
			}
	tinyc_mmk_append(b, blk, tinyc_gs_wgmma_commit(k));
	tinyc_mmk_append(b, blk, tinyc_gs_wgmma_wait(k, 0, part));
	tinyc_mmk_append(b, blk, tinyc_gs_comment(k, "the k tile's products are in part: add them, "
						     "release the stage"));
	for (int i = 0; i < H; i++) {
		tinyc_gexpr *sum = bin(b, TINYC_GX_ADD, tinyc_gx_load(k, b->acc, I(b, i), NULL),
				       tinyc_gx_load(k, part, I(b, i), NULL));
		tinyc_mmk_append(b, blk, tinyc_gs_store(k, b->acc, I(b, i), sum, NULL));
	}
	tinyc_mmk_append(b, blk, tinyc_gs_mbar_arrive(k, w->pipe, w->empty, cs));
	tinyc_mmk_append(b, blk, tinyc_gs_assign(k, w->itc, bin(b, TINYC_GX_ADD, ITC, I(b, 1))));
	tinyc_mmk_append(b, ctile, tinyc_gs_for_range(k, w->cktv, I(b, 0), I(b, w->ktiles), I(b, 1), 0, blk));
}
