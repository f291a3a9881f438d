/* The 3xTF32 tensor-core tile for fp32 contractions (sched/matmul.h: variant tf32x3).
 *
 * Each fp32 operand x is split into hi = tf32(x) and lo = tf32(x - hi) (tf32: the float
 * rounded to 10 mantissa bits, nearest, ties away from zero: PTX's cvt.rna.tf32.f32, here
 * as integer arithmetic on the bits, (u + 0x1000) & ~0x1fff, which the GPU IR interpreter
 * runs as it is), and
 *
 *   part = a_lo * b_hi + a_hi * b_lo + a_hi * b_hi    acc += part
 *
 * by three mma.sync m16n8k8 .tf32 (the small terms first) into a fresh m16n8 fragment
 * `part`, then one fp32 add per element into the accumulator.  The dropped a_lo * b_lo and
 * the splits' rounding leave about 2^-21 relative per product.  The tensor cores round
 * their sums toward zero (H100: chaining all 3K/8 mma into the accumulator measured ~10x
 * the error of fp32 FMAs at K = 3072-4096); the chains of 3 start from zero, and the
 * accumulator takes K/8 round-to-nearest adds: the error of fp32 FMAs or below
 * (docs/matmul-results.md).
 *
 * CTA tile 128 x 128 (8 warps of 64 x 32, 2 x 4) or 128 x 64 (8 warps of 32 x 32, 4 x 2), each
 * warp a grid of m16n8 fragments, k-step BK (16 or 32).  The operands travel as fp32 through the two-stage register
 * prefetch of the SIMT tile (codegen/simt_tile.c: tinyc_mm_two_stage_loop):
 *
 *   shared As[2][BM][BK + 8] (m-major rows of k), Bs[2][BN][BK + 8] (n-major rows of k)
 *
 * Within each 8-wide k step the mma's k index j is stored at k 2j (j < 4) and 2(j-4) + 1
 * (j >= 4): A and B use the same order, so the sum is unchanged, and a lane's two k of a
 * fragment row (q and q + 4) are adjacent: one 8-byte shared load.  Rows of BK + 8 floats
 * (24 or 40: 8 or 24 modulo 32 banks) make those loads conflict-free.  The splits happen
 * in registers on the loaded fragments, so shared memory holds each fp32 value once.
 *
 * Then the epilogue of codegen/evt_emit.c on the m16n8 accumulator fragments.
 */
#include <string.h>

#include "codegen/gpu.h"
#include "codegen/matmul.h"

#define THREADS 256		/* 8 warps */

/* Shorthands for index arithmetic. */
static tinyc_gexpr *I(tinyc_mmk *b, int64_t v)
{
	return tinyc_gx_int(b->k, b->it, v);
}

static tinyc_gexpr *bin(tinyc_mmk *b, tinyc_gx_op op, tinyc_gexpr *x, tinyc_gexpr *y)
{
	return tinyc_gx_binary(b->k, op, x, y);
}

/* tf32(x): x rounded to 10 mantissa bits, to nearest, ties away from zero (the bits of
 * cvt.rna.tf32.f32 for every non-NaN x). */
static tinyc_gexpr *tf32_round(tinyc_gkernel *k, tinyc_gexpr *x)
{
	tinyc_gexpr *u = tinyc_gx_bitcast(k, TINYC_UINT, x);
	u = tinyc_gx_binary(k, TINYC_GX_ADD, u, tinyc_gx_int(k, TINYC_UINT, 0x1000));
	u = tinyc_gx_binary(k, TINYC_GX_AND, u, tinyc_gx_int(k, TINYC_UINT, 0xffffe000u));
	return tinyc_gx_bitcast(k, TINYC_FLOAT, u);
}

int tinyc_tf32_split(tinyc_gkernel *k, tinyc_gstmt *blk, tinyc_gexpr *x, int hi, tinyc_gexpr *hidx,
		     int lo, tinyc_gexpr *lidx)
{
	tinyc_gstmt *sh = tinyc_gs_store(k, hi, hidx, tf32_round(k, x), NULL);
	if (!sh || tinyc_gs_append(k, blk, sh) < 0)
		return -1;
	tinyc_gexpr *h = tinyc_gx_load(k, hi, hidx, NULL);
	tinyc_gstmt *sl = tinyc_gs_store(k, lo, lidx, tf32_round(k, tinyc_gx_binary(k, TINYC_GX_SUB, x, h)), NULL);
	return sl && tinyc_gs_append(k, blk, sl) >= 0 ? 0 : -1;
}

/* hi[dst] = tf32(raw[src]), lo[dst] = tf32(raw[src] - hi[dst]) (appended to blk; also the
 * wgmma 3xTF32 producer's, codegen/tf32_wgmma.c). */
void tinyc_tf32_split_mmk(tinyc_mmk *b, tinyc_gstmt *blk, int raw, int src, int hi, int lo, int dst)
{
	tinyc_gexpr *x = tinyc_gx_load(b->k, raw, I(b, src), NULL);
	if (tinyc_tf32_split(b->k, blk, x, hi, I(b, dst), lo, I(b, dst)) < 0)
		b->error = 1;
}

/* What the k-loop body reads: the shared tiles, the fragment arrays, the lane's place. */
typedef struct tf32_stage {
	int As, Bs;		/* shared tiles */
	int araw, ahi, alo;	/* A fragments: as loaded, hi and lo parts (MI x 4) */
	int braw, bhi, blo;	/* B fragments (NI x 2) */
	int part, zero;		/* one m16n8 step's 3 products (4 floats), zeros */
	tinyc_gexpr *arow, *brow;	/* the lane's first shared row (warp origin + g) */
	tinyc_gexpr *kq;	/* the lane's k offset in a step: 2 * (lane % 4) */
	int bm, bn, bk, ld;	/* CTA tile, shared row length */
	int mi, ni;		/* m16 x n8 fragments per warp */
} tf32_stage;

/* The k-loop body on stage st: per 8-wide k step, the B fragments and their splits, then
 * per m16 fragment its A fragment, splits and 3 x NI mma. */
static void tf32_compute(tinyc_mmk *b, tinyc_gstmt *blk, tinyc_gexpr *st, void *arg)
{
	const tf32_stage *c = arg;
	tinyc_gkernel *k = b->k;
	int MI = c->mi, NI = c->ni;
	tinyc_gexpr *abase = bin(b, TINYC_GX_MUL, st, I(b, (int64_t)c->bm * c->ld));
	tinyc_gexpr *bbase = bin(b, TINYC_GX_MUL, st, I(b, (int64_t)c->bn * c->ld));
	tinyc_gexpr *a0 = bin(b, TINYC_GX_ADD, abase, bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, c->arow, I(b, c->ld)), c->kq));
	tinyc_gexpr *b0 = bin(b, TINYC_GX_ADD, bbase, bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, c->brow, I(b, c->ld)), c->kq));
	for (int ks = 0; ks < c->bk / 8; ks++) {
		for (int ni = 0; ni < NI; ni++) {
			tinyc_gexpr *ix = bin(b, TINYC_GX_ADD, b0, I(b, (int64_t)ni * 8 * c->ld + ks * 8));
			tinyc_mmk_append(b, blk, tinyc_gs_copy(k, c->braw, I(b, ni * 2), c->Bs, ix, 2, NULL, 0));
			for (int e = 0; e < 2; e++)
				tinyc_tf32_split_mmk(b, blk, c->braw, ni * 2 + e, c->bhi, c->blo, ni * 2 + e);
		}
		for (int mi = 0; mi < MI; mi++) {
			/* rows g and g + 8, each the lane's k pair: araw = (g, q) (g, q+4) (g+8, q) (g+8, q+4) */
			for (int h = 0; h < 2; h++) {
				tinyc_gexpr *ix = bin(b, TINYC_GX_ADD, a0,
						      I(b, (int64_t)(mi * 16 + h * 8) * c->ld + ks * 8));
				tinyc_mmk_append(b, blk, tinyc_gs_copy(k, c->araw, I(b, mi * 4 + h * 2), c->As, ix, 2,
								      NULL, 0));
			}
			/* the mma's order: (g, q) (g+8, q) (g, q+4) (g+8, q+4) */
			static const int from[4] = {0, 2, 1, 3};
			for (int e = 0; e < 4; e++)
				tinyc_tf32_split_mmk(b, blk, c->araw, mi * 4 + from[e], c->ahi, c->alo, mi * 4 + e);
			for (int ni = 0; ni < NI; ni++) {
				tinyc_gexpr *ao = I(b, mi * 4), *bo = I(b, ni * 2), *z = I(b, 0);
				tinyc_mmk_append(b, blk, tinyc_gs_mma(k, c->part, z, c->alo, ao, c->bhi, bo, c->zero, z));
				tinyc_mmk_append(b, blk, tinyc_gs_mma(k, c->part, z, c->ahi, ao, c->blo, bo, c->part, z));
				tinyc_mmk_append(b, blk, tinyc_gs_mma(k, c->part, z, c->ahi, ao, c->bhi, bo, c->part, z));
				for (int e = 0; e < 4; e++) {
					tinyc_gexpr *ix = I(b, (mi * NI + ni) * 4 + e);
					tinyc_gexpr *sum = bin(b, TINYC_GX_ADD, tinyc_gx_load(k, b->acc, ix, NULL),
							       tinyc_gx_load(k, c->part, I(b, e), NULL));
					tinyc_mmk_append(b, blk, tinyc_gs_store(k, b->acc, ix, sum, NULL));
				}
			}
		}
	}
}

int tinyc_tf32_tile_build(tinyc_mmk *b, const char *name)
{
	const tinyc_mm_tiles *t = b->t;
	int BM = t->bm, BN = t->bn, BK = t->bk, LD = BK + 8;
	int WM = t->warps_m ? BM / t->warps_m : 0, WN = t->warps_n ? BN / t->warps_n : 0;
	int MI = WM / 16, NI = WN / 8;
	if (BK % 8 || t->threads != THREADS || t->warps_m * t->warps_n != THREADS / 32 || WM % 16 ||
	    WN % 8 || MI < 1 || NI < 1 || (int64_t)BM * BK % THREADS || (int64_t)BN * BK % THREADS)
		return tinyc_error(b->ctx, "CodegenError", "matmul %s: the 3xTF32 tile needs 8 warps of "
				   "m16 x n8 multiples and BK a multiple of 8 (got %dx%dx%d)", name, BM, BN, BK);
	if (b->gm->arch_major < 8)
		return tinyc_error(b->ctx, "CodegenError", "matmul %s: the 3xTF32 tile needs sm_80, the "
				   "module targets %s", name, b->gm->target);
	tinyc_gexpr *wm, *wn, *g, *t4;
	tinyc_gkernel *k = tinyc_mmk_begin_warps(b, name, MI * NI * 4, &wm, &wn, &g, &t4);
	if (!k || b->error)
		return -1;
	tinyc_gstmt *body = k->body;
	tf32_stage c;
	memset(&c, 0, sizeof(c));
	c.bm = BM, c.bn = BN, c.bk = BK, c.ld = LD;
	c.mi = MI, c.ni = NI;
	c.As = tinyc_gk_shared(k, "As", TINYC_FLOAT, 2 * (int64_t)BM * LD, 16, t->dyn_smem);
	c.Bs = tinyc_gk_shared(k, "Bs", TINYC_FLOAT, 2 * (int64_t)BN * LD, 16, t->dyn_smem);
	int ra = tinyc_gk_reg_array(k, "ra", TINYC_FLOAT, (int64_t)BM * BK / THREADS);
	int rb = tinyc_gk_reg_array(k, "rb", TINYC_FLOAT, (int64_t)BN * BK / THREADS);
	c.araw = tinyc_gk_reg_array(k, "araw", TINYC_FLOAT, MI * 4);
	c.ahi = tinyc_gk_reg_array(k, "ahi", TINYC_FLOAT, MI * 4);
	c.alo = tinyc_gk_reg_array(k, "alo", TINYC_FLOAT, MI * 4);
	c.braw = tinyc_gk_reg_array(k, "braw", TINYC_FLOAT, NI * 2);
	c.bhi = tinyc_gk_reg_array(k, "bhi", TINYC_FLOAT, NI * 2);
	c.blo = tinyc_gk_reg_array(k, "blo", TINYC_FLOAT, NI * 2);
	c.part = tinyc_gk_reg_array(k, "part", TINYC_FLOAT, 4);
	c.zero = tinyc_gk_reg_array(k, "zero", TINYC_FLOAT, 4);
	int arrays[] = {ra, rb, c.araw, c.ahi, c.alo, c.braw, c.bhi, c.blo, c.part, c.zero};
	for (int i = 0; i < 10; i++) {
		if (arrays[i] < 0 || c.As < 0 || c.Bs < 0)
			return -1;
		tinyc_gexpr *fill = arrays[i] == c.zero ? tinyc_gx_float(k, TINYC_FLOAT, 0) : NULL;
		tinyc_mmk_append(b, body, tinyc_gs_decl(k, arrays[i], fill));
	}
	k->vars[c.araw].align = 8;	/* 8-byte shared loads into them */
	k->vars[c.braw].align = 8;
	c.arow = bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, wm, I(b, WM)), g);
	c.brow = bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, wn, I(b, WN)), g);
	c.kq = bin(b, TINYC_GX_MUL, t4, I(b, 2));
	/* ptxas (128x128): 129 registers at BK 16 (2 CTAs per SM under the bound, a few
	 * spilled), 141 at BK 32 (one CTA per SM); narrower warp tiles fit; a gathered
	 * operand's im2col addressing takes 228 (128x64x16): unbounded; a conv's A on its
	 * channels-last copy (16-byte loads) 133 (128x64x16, sm_90a): bounded, 28 bytes
	 * spilled */
	int elementwise = !b->t->a_nhwc && (b->prob->a.gather.on || b->prob->b.gather.on);
	k->min_blocks_per_sm = !elementwise && (BK == 16 || MI * NI < 16) ? 2 : 0;
	tinyc_mm_tile_io ia, ib;
	tinyc_mm_tile_io_init(b, &ia, 0, BM, BK, 0, LD, c.As, ra);
	tinyc_mm_tile_io_init(b, &ib, 1, BK, BN, 1, LD, c.Bs, rb);
	if (b->error || tinyc_mm_two_stage_loop(b, body, &ia, &ib, tf32_compute, &c) < 0)
		return -1;
	tinyc_mm_frag f;
	tinyc_mm_frag_mma(b, &f, wm, wn, g, t4, WM, WN);
	return tinyc_evt_emit_epilogue(b, &f, body);
}
