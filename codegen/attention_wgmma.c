/* The sm_90a variant of the 16-bit flash-attention kernel (plan mma 3): S = Q K^T on
 * wgmma, asynchronously, so that a warpgroup computes the next key tile's scores while it
 * takes the softmax and P V of this one (FlashAttention-3's intra-warpgroup overlap).
 *
 * Blocks of bm = 64 (or, forced, 128) query rows: one warpgroup (4 warps of 16 rows) per
 * 64 rows.  Q (d = 64: one 128-byte row a query) stays in shared memory in wgmma's 128-byte
 * swizzle, loaded once; K tiles (64 keys, key-major: wgmma's K-major B) go through a
 * 3-stage cp.async ring in the same swizzle; V tiles through a 3-stage ring, swizzled too
 * when P V runs on wgmma (plan pvwg, dv = 64), else of padded rows (dv + 8) that
 * ldmatrix.trans reads.  Per key tile t:
 *   wait for tile t + 1's copies, fence.proxy.async (the tensor cores read what cp.async
 *   wrote), barrier; start tile t + 2's copies into the stage tile t - 1 used;
 *   wgmma m64n64k16 x 4: snx = Q K(t + 1)^T, committed, not waited;
 *   the softmax of tile t's scores (sacc) exactly as the mma.sync kernel
 *   (codegen/attention.c: the graph's scale and mask per score, key and causal bounds,
 *   lazy rescale, row sums by mma);
 *   O += P V: pvwg, wgmma with A = P's fragments in registers and B = V MN-major, waited;
 *   P's row sums (mma.sync on the same registers) while it is in flight, or (pvwg 2,
 *   TINYC_ATTN_WGMMA=3) before its issue, as PTX's rule on an in-flight wgmma's A
 *   registers asks; else mma.sync with V by ldmatrix.trans;
 *   wgmma.wait_group 0, sacc = snx.
 * The wgmma accumulator's fragment (row 16 (warp % 4) + lane / 4 + 8 (i / 2 % 2), column
 * 8 (i / 4) + 2 (lane % 4) + i % 2) is the mma.sync kernel's m16n8 score (and output)
 * fragment of the warp's 16 rows, and that fragment in 16 bits is wgmma's register A, so
 * everything after S is shared with it.  Views that are not 16-byte copyable fall back to
 * the mma.sync body (same block shape). */
#include <stdio.h>

#include "codegen/attention_int.h"

/* snx = Q K^T of the warpgroup's 64 rows and the BN keys of the K stage at kbase: D / 16
 * wgmma m64nBNk16 with A (Q rows from qbase) and B (K) K-major in the 128-byte swizzle,
 * the first overwriting snx; committed as one group (appended to blk). */
static void qk_wgmma(abuild *b, tinyc_gstmt *blk, int snx, int qs, tinyc_gexpr *qbase, int ks,
		     tinyc_gexpr *kbase, int BN, int64_t D)
{
	tinyc_gkernel *k = b->k;
	tinyc_gwg_layout km = {1, 0};
	app(b, blk, tinyc_gs_wgmma_fence(k));
	for (int kk = 0; kk < D / 16; kk++)
		app(b, blk, tinyc_gs_wgmma(k, snx, ic(b, 0), qs, bin(b, TINYC_GX_ADD, qbase, ic(b, kk * 16)), km, ks,
					   bin(b, TINYC_GX_ADD, kbase, ic(b, kk * 16)), km, BN,
					   kk ? NULL : tinyc_gx_bool(k, 0)));
	app(b, blk, tinyc_gs_wgmma_commit(k));
}

/* The wgmma body (see the file comment); with views that are not 16-byte copyable the
 * mma.sync body of codegen/attention.c instead. */
void tinyc_attn_build_wgmma(abuild *b, const tinyc_schedule *s, const tinyc_skernel *sk,
			    const tinyc_attn_plan *ap)
{
	tinyc_gkernel *k = b->k;
	const tinyc_attn_match *m = b->m;
	const int BM = ap->bm, BN = ap->bn, NT = 2 * BM, NR = 3;
	const tinyc_dtype dt = m->in_dtype;
	tinyc_gstmt *body = k->body;
	tinyc_attn_warps w;
	if (tinyc_attn_warp_roles(b, s, BM, &w) < 0)
		return;
	tinyc_gexpr *const *p = w.p, *r0 = w.r0, *L = w.lane;
	if (!tinyc_attn_tile_async_ok(b, m->q_side, 0, p) || !tinyc_attn_tile_async_ok(b, m->k_side, 1, p) ||
	    !tinyc_attn_tile_async_ok(b, m->v_side, 2, p)) {
		tinyc_attn_plan fb = *ap;	/* the same block of 16-row warps on mma.sync */
		fb.mma = 1, fb.mb = 1;
		tinyc_attn_build_mma(b, s, sk, &fb, &w);
		return;
	}
	const int pvwg = ap->pvwg && m->dv == 64;	/* V rows of 128 bytes, swizzled */
	mma_tiles t = {0};
	t.MB = 1, t.BN = BN, t.D = m->d, t.DV = m->dv, t.QS = m->d, t.VS = pvwg ? m->dv : m->dv + 8;
	t.NS = BN / 8 * 4, t.NO = (int)(t.DV / 8) * 4;
	const int NS = t.NS, NO = t.NO;
	const int64_t QS = t.QS, VS = t.VS;
	t.lr = bin(b, TINYC_GX_MOD, L, ic(b, 16));
	t.lc = bin(b, TINYC_GX_MUL, bin(b, TINYC_GX_DIV, L, ic(b, 16)), ic(b, 8));
	tinyc_gexpr *wrow = bin(b, TINYC_GX_MUL, w.warp, ic(b, 16));
	/* the warpgroup's Q rows: 64 rows of 64 elements from row 64 (warp / 4) */
	tinyc_gexpr *qbase = bin(b, TINYC_GX_MUL, bin(b, TINYC_GX_DIV, w.warp, ic(b, 4)), ic(b, 64 * QS));

	b->stages = NR;
	b->dyn = 1;
	int qs = tinyc_gk_shared(k, "qtile", dt, (int64_t)BM * QS, 1024, 1);
	int ks = tinyc_gk_shared(k, "ktile", dt, (int64_t)NR * BN * QS, 1024, 1);
	int vs = tinyc_gk_shared(k, "vtile", dt, (int64_t)NR * BN * VS, pvwg ? 1024 : 16, 1);
	int cp = tinyc_gk_pipe(k, "kv", TINYC_GPIPE_CP_ASYNC, NR, -1);
	int vb = tinyc_gk_reg_array(k, "vb", dt, 8);
	int pa = tinyc_gk_reg_array(k, "pa", dt, NS);
	int sacc = tinyc_gk_reg_array(k, "sacc", TINYC_FLOAT, NS);
	int snx = tinyc_gk_reg_array(k, "snx", TINYC_FLOAT, NS);
	int oacc = tinyc_gk_reg_array(k, "oacc", TINYC_FLOAT, NO);
	if (qs < 0 || ks < 0 || vs < 0 || cp < 0 || vb < 0 || pa < 0 || sacc < 0 || snx < 0 || oacc < 0) {
		b->failed = 1;
		return;
	}
	t.ks = ks, t.vs = vs, t.vb = vb, t.pa = pa, t.sacc = sacc, t.oacc = oacc, t.qa = t.kb = -1;
	b->swz = 1, b->swz_sh[0] = qs, b->swz_sh[1] = ks, b->swz_sh[2] = pvwg ? vs : qs;
	if (tinyc_attn_softmax_variant(b, body, ap, 1) < 0)
		return;
	int mv[2], lv[2];	/* row maximum and sum of rows gq and gq + 8 */
	tinyc_gexpr *kend = tinyc_attn_loop_setup(b, body, oacc, 1, mv, lv, r0, BM, 0);
	if (!kend)
		return;
	/* Q with tile 0 (one group), tile 1 (the next); wait for the first, then S(0) */
	tinyc_attn_load_tile_async(b, body, qs, ic(b, 0), QS, m->q_side, 0, p, r0, BM, m->d, m->tq, NT);
	tinyc_attn_kv_copy(b, body, ks, QS, vs, VS, ic(b, 0), p, ic(b, 0), BN, NT);
	app(b, body, tinyc_gs_cp_commit(k, cp));
	tinyc_gstmt *t1 = tinyc_gs_block(k);
	tinyc_attn_kv_copy(b, t1, ks, QS, vs, VS, ic(b, 1), p, ic(b, BN), BN, NT);
	app(b, body, tinyc_gs_if(k, bin(b, TINYC_GX_LT, ic(b, BN), kend), t1, NULL));
	app(b, body, tinyc_gs_cp_commit(k, cp));
	app(b, body, tinyc_gs_cp_wait(k, cp, 1));
	app(b, body, tinyc_gs_fence(k, TINYC_GF_PROXY_ASYNC));
	app(b, body, tinyc_gs_barrier(k));
	app(b, body, tinyc_gs_decl(k, sacc, fc(b, 0)));
	app(b, body, tinyc_gs_decl(k, snx, fc(b, 0)));
	qk_wgmma(b, body, sacc, qs, qbase, ks, ic(b, 0), BN, t.D);
	app(b, body, tinyc_gs_wgmma_wait(k, 0, sacc));

	tinyc_gstmt *tb, *wb;
	tinyc_gexpr *J0;
	int j0 = tinyc_attn_key_loop(b, &tb, &wb, &J0);
	if (j0 < 0)
		return;
	int st = reg(b, tb, "stage", b->ix, bin(b, TINYC_GX_MOD, bin(b, TINYC_GX_DIV, J0, ic(b, BN)), ic(b, NR)));
	if (st < 0)
		return;
	tinyc_emit_set_nonneg(b->em, st);
	tinyc_gexpr *S = tinyc_gx_var(k, st);
	/* tile t + 1 landed and visible to the tensor cores; every warp is past tile t - 1 */
	app(b, tb, tinyc_gs_cp_wait(k, cp, 0));
	app(b, tb, tinyc_gs_fence(k, TINYC_GF_PROXY_ASYNC));
	app(b, tb, tinyc_gs_barrier(k));
	tinyc_gexpr *J2 = bin(b, TINYC_GX_ADD, J0, ic(b, 2 * BN));
	tinyc_gstmt *next = tinyc_gs_block(k);
	tinyc_attn_kv_copy(b, next, ks, QS, vs, VS, bin(b, TINYC_GX_MOD, bin(b, TINYC_GX_ADD, S, ic(b, 2)), ic(b, NR)),
			   p, J2, BN, NT);
	app(b, tb, tinyc_gs_if(k, bin(b, TINYC_GX_LT, J2, kend), next, NULL));
	app(b, tb, tinyc_gs_cp_commit(k, cp));
	/* the next tile's scores on the tensor cores, in flight during this tile's softmax */
	tinyc_gexpr *J1 = bin(b, TINYC_GX_ADD, J0, ic(b, BN));
	tinyc_gstmt *ahead = tinyc_gs_block(k), *land = tinyc_gs_block(k);
	qk_wgmma(b, ahead, snx, qs, qbase, ks,
		 bin(b, TINYC_GX_MUL, bin(b, TINYC_GX_MOD, bin(b, TINYC_GX_ADD, S, ic(b, 1)), ic(b, NR)), ic(b, BN * QS)),
		 BN, t.D);
	app(b, tb, tinyc_gs_if(k, bin(b, TINYC_GX_LT, J1, kend), ahead, NULL));
	/* this tile: scale and mask through the graph, key bounds, online softmax, P V */
	tinyc_attn_scores(b, tb, sacc, 0, NS, NS, &w, &wrow, J0);
	app(b, tb, tinyc_gs_decl(k, pa, NULL));
	tinyc_attn_mask_keys(b, tb, sacc, 0, NS, r0, wrow, w.gq, w.tq2, J0, BN);
	tinyc_attn_online_softmax(b, tb, sacc, pa, 0, oacc, 0, NS, NO, mv, lv, dt, 1);
	tinyc_gexpr *vbase = bin(b, TINYC_GX_MUL, S, ic(b, BN * VS));
	if (pvwg) {	/* O += P V: P's fragments as wgmma's A, V (keys x dv) MN-major */
		tinyc_gwg_layout km = {1, 0}, vm = {0, (int)(BN * VS * 2)};
		if (ap->pvwg == 2)	/* P's registers read before the wgmma reads them */
			tinyc_attn_row_sums(b, tb, &t, 0, 1);
		app(b, tb, tinyc_gs_wgmma_fence(k));
		for (int kk = 0; kk < BN / 16; kk++)
			app(b, tb, tinyc_gs_wgmma(k, oacc, ic(b, 0), pa, ic(b, kk * 8), km, vs,
						  bin(b, TINYC_GX_ADD, vbase, ic(b, kk * 16 * VS)), vm, (int)t.DV, NULL));
		app(b, tb, tinyc_gs_wgmma_commit(k));
		if (ap->pvwg == 1)	/* beside the wgmma in flight (reads its A registers) */
			tinyc_attn_row_sums(b, tb, &t, 0, 1);
		app(b, tb, tinyc_gs_wgmma_wait(k, 0, oacc));
	} else {
		app(b, tb, tinyc_gs_decl(k, vb, NULL));
		tinyc_attn_pv_mma(b, tb, &t, vbase, 0, 1);
	}
	/* the next tile's scores become this one's */
	app(b, land, tinyc_gs_wgmma_wait(k, 0, snx));
	for (int i = 0; i < NS; i++)
		app(b, land, tinyc_gs_store(k, sacc, ic(b, i), tinyc_gx_load(k, snx, ic(b, i), NULL), NULL));
	app(b, tb, tinyc_gs_if(k, bin(b, TINYC_GX_LT, J1, kend), land, NULL));
	(void)wb;
	tinyc_attn_close_key_loop(b, body, tb, j0, kend, BN, 0, 1, cp);
	app(b, body, tinyc_gs_wgmma_wait(k, 0, -1));	/* none in flight past the loop */
	tinyc_attn_store_output(b, body, sk, oacc, 0, NO, lv, r0, wrow, w.gq, w.tq2, p);
}
