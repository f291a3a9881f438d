/* The 3xTF32 tensor-core variant of the flash attention kernel (fp32 inputs; plan
 * tinyc_attn_plan.mma = 2, chosen in sched/attention.c).
 *
 * The skeleton is the 16-bit kernel's (codegen/attention.c: warps of 16 query rows, K and
 * V through 2-stage cp.async rings, the Q tile through the K ring, the graph's scale and
 * mask on the score fragments, the causal key bound and tile skip, the online softmax
 * with fp32 statistics, the output stored through the graph's ops after O).  What differs
 * is how Q K^T and P V are multiplied: mma.sync m16n8k8 .tf32 in the 3xTF32 form of
 * codegen/tf32_tile.c, every fp32 operand x split as hi = tf32(x), lo = tf32(x - hi) and
 *
 *   part = a_lo b_hi + a_hi b_lo + a_hi b_hi   (three mma from zero)   acc += part
 *
 * so the tensor cores' truncating sums run over 8 products only and the accumulation is
 * fp32 round-to-nearest.  Shared memory holds each fp32 value once (K rows of D + 8
 * floats, V rows of DV + 4); the splits happen in registers on the loaded fragments.
 *
 * Fragment order.  Within each 8-wide k step the mma's k index j = q stands for the
 * column 2q and j = q + 4 for 2q + 1 (q = lane % 4), in A and B alike, so the sum is
 * unchanged:
 *   Q K^T: a lane's A values (Q row g, g + 8) and B values (K row g) are adjacent float
 *          pairs: one 8-byte shared load each (rows of D + 8 floats: conflict-free);
 *   P V:   the score accumulator holds P at columns 2q, 2q + 1 of rows g, g + 8, which
 *          is exactly A's (g, j) for j = q, q + 4: P becomes the A fragment in place, no
 *          shuffle; B is V at rows 2q and 2q + 1 (rows of DV + 4 floats: the 32 lanes
 *          hit 32 banks).
 */
#include "codegen/attention_int.h"

/* A fragment's element e in mma order from a lane's raw pairs (row g: j, j + 4 adjacent,
 * then row g + 8). */
static const int mma_from[4] = {0, 2, 1, 3};

/* The register arrays of the multiply steps. */
typedef struct tf32_regs {
	int ah, al;		/* A fragment hi / lo parts (MB x 4) */
	int bh, bl;		/* B fragment hi / lo parts (2) */
	int braw;		/* B fragment as loaded (2) */
	int part, zero;		/* one m16n8 step's three products, zeros (4) */
} tf32_regs;

/* A fragment (4 values) of 16-row block mb: split array src's elements at base + mma_from[e]
 * into the hi / lo parts at mb * 4 + e. */
static void split_a(abuild *b, tinyc_gstmt *blk, const tf32_regs *r, int src, int base, int mb)
{
	for (int e = 0; e < 4; e++) {
		tinyc_gexpr *x = tinyc_gx_load(b->k, src, ic(b, base + mma_from[e]), NULL);
		if (tinyc_tf32_split(b->k, blk, x, r->ah, ic(b, mb * 4 + e), r->al, ic(b, mb * 4 + e)) < 0)
			b->failed = 1;
	}
}

/* B fragment: the two values x[0], x[1] split into bh / bl. */
static void split_b(abuild *b, tinyc_gstmt *blk, const tf32_regs *r, tinyc_gexpr *const *x)
{
	for (int e = 0; e < 2; e++)
		if (tinyc_tf32_split(b->k, blk, x[e], r->bh, ic(b, e), r->bl, ic(b, e)) < 0)
			b->failed = 1;
}

/* acc[ao..ao+4) += A(mb) B in the 3xTF32 form: three mma into part (small terms first,
 * from zero), then four fp32 adds. */
static void mma3(abuild *b, tinyc_gstmt *blk, const tf32_regs *r, int mb, int acc, int ao)
{
	tinyc_gkernel *k = b->k;
	tinyc_gexpr *z = ic(b, 0), *a = ic(b, mb * 4);
	app(b, blk, tinyc_gs_mma(k, r->part, z, r->al, a, r->bh, z, r->zero, z));
	app(b, blk, tinyc_gs_mma(k, r->part, z, r->ah, a, r->bl, z, r->part, z));
	app(b, blk, tinyc_gs_mma(k, r->part, z, r->ah, a, r->bh, z, r->part, z));
	for (int e = 0; e < 4; e++) {
		tinyc_gexpr *sum = bin(b, TINYC_GX_ADD, tinyc_gx_load(k, acc, ic(b, ao + e), NULL),
				       tinyc_gx_load(k, r->part, ic(b, e), NULL));
		app(b, blk, tinyc_gs_store(k, acc, ic(b, ao + e), sum, NULL));
	}
}

void tinyc_attn_build_tf32(abuild *b, const tinyc_schedule *s, const tinyc_skernel *sk,
			   const tinyc_attn_plan *ap)
{
	tinyc_gkernel *k = b->k;
	const tinyc_attn_match *m = b->m;
	const int MB = ap->mb > 1 ? 2 : 1;	/* 16-row blocks a warp */
	const int BM = ap->bm, BN = ap->bn, NT = BM * 2 / MB;
	const int64_t D = m->d, DV = m->dv, KS = D + 8, VS = DV + 4;
	const int NS = BN / 8 * 4, NO = (int)(DV / 8) * 4, NQ = (int)(D / 8) * 4;
	tinyc_gstmt *body = k->body;

	tinyc_attn_warps w;
	if (tinyc_attn_warp_roles(b, s, BM, &w) < 0)
		return;
	tinyc_gexpr *r0 = w.r0, *const *p = w.p, *gq = w.gq, *tq2 = w.tq2;
	tinyc_gexpr *wrow[2];	/* the first row of each 16-row block of the warp */
	for (int mb = 0; mb < MB; mb++)
		wrow[mb] = bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, w.warp, ic(b, 16 * MB)), ic(b, 16 * mb));

	/* K and V through 2-stage cp.async rings of 4-float copies where the views allow
	 * (the Q tile passes through the K ring first), else synchronous loads */
	const int pipe = ap->stages > 1 && tinyc_attn_tile_async_ok(b, m->k_side, 1, p) &&
			 tinyc_attn_tile_async_ok(b, m->v_side, 2, p);
	b->stages = pipe ? 2 : 1;
	const int64_t kring = pipe ? (2 * BN * KS > BM * KS ? 2 * BN * KS : BM * KS) : BN * KS;
	const int64_t vring = (int64_t)(pipe ? 2 : 1) * BN * VS;
	b->dyn = (kring + vring + (pipe ? 0 : BM * KS)) * 4 + 16 > 48 * 1024;
	int ks = tinyc_gk_shared(k, "ktile", TINYC_FLOAT, kring, 16, b->dyn);
	int vs = tinyc_gk_shared(k, "vtile", TINYC_FLOAT, vring, 16, b->dyn);
	int qs = pipe ? ks : tinyc_gk_shared(k, "qtile_s", TINYC_FLOAT, BM * KS, 16, b->dyn);
	int cp = pipe ? tinyc_gk_pipe(k, "kv", TINYC_GPIPE_CP_ASYNC, 2, -1) : 0;
	int qraw = tinyc_gk_reg_array(k, "qraw", TINYC_FLOAT, MB * NQ);
	int pa = tinyc_gk_reg_array(k, "pa", TINYC_FLOAT, MB * NS);
	int sacc = tinyc_gk_reg_array(k, "sacc", TINYC_FLOAT, MB * NS);
	int oacc = tinyc_gk_reg_array(k, "oacc", TINYC_FLOAT, MB * NO);
	tf32_regs r = {
		tinyc_gk_reg_array(k, "ahi", TINYC_FLOAT, MB * 4), tinyc_gk_reg_array(k, "alo", TINYC_FLOAT, MB * 4),
		tinyc_gk_reg_array(k, "bhi", TINYC_FLOAT, 2), tinyc_gk_reg_array(k, "blo", TINYC_FLOAT, 2),
		tinyc_gk_reg_array(k, "braw", TINYC_FLOAT, 2), tinyc_gk_reg_array(k, "part", TINYC_FLOAT, 4),
		tinyc_gk_reg_array(k, "zero", TINYC_FLOAT, 4),
	};
	int arrays[] = {r.ah, r.al, r.bh, r.bl, r.braw, r.part, r.zero};
	int bad = qs < 0 || ks < 0 || vs < 0 || cp < 0 || qraw < 0 || pa < 0 || sacc < 0 || oacc < 0;
	for (int i = 0; i < 7; i++)
		bad |= arrays[i] < 0;
	if (bad) {
		b->failed = 1;
		return;
	}
	k->vars[qraw].align = 8;	/* 8-byte shared loads into them */
	k->vars[r.braw].align = 8;
	for (int i = 0; i < 7; i++)
		app(b, body, tinyc_gs_decl(k, arrays[i], arrays[i] == r.zero ? fc(b, 0) : NULL));

	/* the Q tile, then each warp's rows g and g + 8 as column pairs (2q, 2q + 1) */
	tinyc_attn_load_q(b, body, qs, KS, p, r0, BM, NT, pipe ? cp : -1, TINYC_FLOAT);
	app(b, body, tinyc_gs_decl(k, qraw, NULL));
	for (int mb = 0; mb < MB; mb++)
		for (int kk = 0; kk < D / 8; kk++)
			for (int h = 0; h < 2; h++) {
				tinyc_gexpr *row = bin(b, TINYC_GX_ADD, wrow[mb], bin(b, TINYC_GX_ADD, gq, ic(b, 8 * h)));
				tinyc_gexpr *src = bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, row, ic(b, KS)),
						       bin(b, TINYC_GX_ADD, ic(b, kk * 8), tq2));
				app(b, body, tinyc_gs_copy(k, qraw, ic(b, mb * NQ + kk * 4 + 2 * h), qs, src, 2, NULL, 0));
			}
	int mv[4], lv[4];	/* row maximum and sum of rows g and g + 8 of each block */
	tinyc_gexpr *kend = tinyc_attn_loop_setup(b, body, oacc, MB, mv, lv, r0, BM, pipe);
	if (!kend)
		return;
	tinyc_gstmt *tb, *wb;
	tinyc_gexpr *J0;
	int j0 = tinyc_attn_key_loop(b, &tb, &wb, &J0);
	if (j0 < 0)
		return;
	tinyc_gexpr *kbase, *vbase;
	tinyc_attn_kv_stream(b, body, tb, wb, pipe ? cp : -1, ks, KS, vs, VS, p, r0, BM, J0, BN, kend, NT,
			     TINYC_FLOAT, &kbase, &vbase);
	if (b->failed)
		return;
	/* S = Q K^T: per 8 columns of d, Q's split once, then per 8 keys K's pair */
	app(b, wb, tinyc_gs_decl(k, sacc, fc(b, 0)));
	for (int kk = 0; kk < D / 8; kk++) {
		for (int mb = 0; mb < MB; mb++)
			split_a(b, wb, &r, qraw, mb * NQ + kk * 4, mb);
		for (int np = 0; np < BN / 8; np++) {
			tinyc_gexpr *src = bin(b, TINYC_GX_ADD, kbase, bin(b, TINYC_GX_ADD,
				bin(b, TINYC_GX_MUL, bin(b, TINYC_GX_ADD, ic(b, np * 8), gq), ic(b, KS)),
				bin(b, TINYC_GX_ADD, ic(b, kk * 8), tq2)));
			app(b, wb, tinyc_gs_copy(k, r.braw, ic(b, 0), ks, src, 2, NULL, 0));
			tinyc_gexpr *x[2] = {tinyc_gx_load(k, r.braw, ic(b, 0), NULL), tinyc_gx_load(k, r.braw, ic(b, 1), NULL)};
			split_b(b, wb, &r, x);
			for (int mb = 0; mb < MB; mb++)
				mma3(b, wb, &r, mb, sacc, mb * NS + np * 4);
		}
	}
	/* the graph's scale and mask, the key bounds, the online softmax, P (fp32) */
	tinyc_attn_scores(b, wb, sacc, 0, MB * NS, NS, &w, wrow, J0);
	app(b, wb, tinyc_gs_decl(k, pa, NULL));
	for (int mb = 0; mb < MB; mb++) {
		tinyc_attn_mask_keys(b, wb, sacc, mb * NS, NS, r0, wrow[mb], gq, tq2, J0, BN);
		tinyc_attn_online_softmax(b, wb, sacc, pa, mb * NS, oacc, mb * NO, NS, NO, mv + 2 * mb, lv + 2 * mb,
					  TINYC_FLOAT, 0);
	}
	/* O += P V: per 8 keys P's fragment split once, then per 8 columns V's rows 2q, 2q + 1 */
	for (int kk = 0; kk < BN / 8; kk++) {
		for (int mb = 0; mb < MB; mb++)
			split_a(b, wb, &r, pa, mb * NS + kk * 4, mb);
		for (int ep = 0; ep < DV / 8; ep++) {
			tinyc_gexpr *x[2];
			for (int e = 0; e < 2; e++) {
				tinyc_gexpr *vr = bin(b, TINYC_GX_ADD, ic(b, kk * 8 + e), tq2);
				x[e] = tinyc_gx_load(k, vs, bin(b, TINYC_GX_ADD, vbase, bin(b, TINYC_GX_ADD,
					bin(b, TINYC_GX_MUL, vr, ic(b, VS)), bin(b, TINYC_GX_ADD, ic(b, ep * 8), gq))), NULL);
			}
			split_b(b, wb, &r, x);
			for (int mb = 0; mb < MB; mb++)
				mma3(b, wb, &r, mb, oacc, mb * NO + ep * 4);
		}
	}
	tinyc_attn_close_key_loop(b, body, tb, j0, kend, BN, pipe, pipe, cp);
	for (int mb = 0; mb < MB; mb++)
		tinyc_attn_store_output(b, body, sk, oacc, mb * NO, NO, lv + 2 * mb, r0, wrow[mb], gq, tq2, p);
}
