/* Convolutions as implicit GEMM: the im2col addressing of a gathered operand in the
 * matmul templates' loads (see sched/conv.h). */
#include "codegen/matmul.h"

/* Index constant. */
static tinyc_gexpr *cint(tinyc_mmk *b, int64_t v)
{
	return tinyc_gx_int(b->k, b->it, v);
}

void tinyc_conv_split(tinyc_gkernel *k, tinyc_dtype it, tinyc_gexpr *x, const int64_t *ext, int n,
		      tinyc_gexpr **out)
{
	int64_t inner = 1;
	for (int i = n - 1; i >= 0; i--) {
		tinyc_gexpr *q = inner == 1 ? x : tinyc_gx_binary(k, TINYC_GX_DIV, x, tinyc_gx_int(k, it, inner));
		out[i] = i ? tinyc_gx_binary(k, TINYC_GX_MOD, q, tinyc_gx_int(k, it, ext[i])) : q;
		inner *= ext[i];
	}
}

tinyc_gexpr *tinyc_conv_addr(tinyc_mmk *b, const tinyc_mm_operand *op, tinyc_gexpr *row,
			     tinyc_gexpr *col, tinyc_gexpr **guard)
{
	const tinyc_mm_gather *g = &op->gather;
	tinyc_gexpr *ax[2][TINYC_GATHER_AXES];
	tinyc_conv_split(b->k, b->it, row, g->ext[0], g->nax[0], ax[0]);
	tinyc_conv_split(b->k, b->it, col, g->ext[1], g->nax[1], ax[1]);
	tinyc_gexpr *e = tinyc_mmk_poly(b, &op->offset);
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < g->nax[r]; i++)
			if (g->stride[r][i])
				e = tinyc_gx_binary(b->k, TINYC_GX_ADD, e,
						    tinyc_gx_binary(b->k, TINYC_GX_MUL, ax[r][i],
								    cint(b, g->stride[r][i])));
	if (!tinyc_evt_poly_is_zero(&op->stride[2]))
		e = tinyc_gx_binary(b->k, TINYC_GX_ADD, e,
				    tinyc_gx_binary(b->k, TINYC_GX_MUL, b->l, tinyc_mmk_poly(b, &op->stride[2])));
	/* the window's guards: sum coef * axis + c0 >= 0 (== 0) */
	tinyc_gexpr *ok = NULL;
	for (int q = 0; q < g->nguard; q++) {
		tinyc_gexpr *s = cint(b, g->g0[q]);
		for (int r = 0; r < 2; r++)
			for (int i = 0; i < g->nax[r]; i++)
				if (g->gcoef[q][r][i])
					s = tinyc_gx_binary(b->k, TINYC_GX_ADD, s,
							    tinyc_gx_binary(b->k, TINYC_GX_MUL, ax[r][i],
									    cint(b, g->gcoef[q][r][i])));
		tinyc_gexpr *t = tinyc_gx_binary(b->k, g->geq[q] ? TINYC_GX_EQ : TINYC_GX_GE, s, cint(b, 0));
		ok = ok ? tinyc_gx_binary(b->k, TINYC_GX_LAND, ok, t) : t;
	}
	*guard = ok;
	return e;
}

int tinyc_conv_nhwc_emit(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_mm_operand *op,
			 const tinyc_conv_nhwc *nh, const char *name, tinyc_gkernel **kernel)
{
	int64_t C = nh->c, Ci = nh->c_in, P = nh->p, L = nh->l, elems = C * P * L;
	int es = tinyc_dtype_size(op->dtype), ew = 16 / (es > 0 ? es : 1);	/* elements per 16 bytes */
	if ((es != 2 && es != 4) || C < ew || C % ew || Ci < 1 || Ci > C || P < 1 || L < 1)
		return tinyc_error(ctx, "CodegenError", "matmul %s: the NHWC copy needs 16- or 32-bit "
				   "elements and channels in multiples of 16 bytes", name);
	char wname[160], kname[160], comment[800], pn[200];
	snprintf(wname, sizeof(wname), "nhwc_%s", name);
	int w = tinyc_mm_add_temp(gm, wname, op->dtype, elems);
	if (w < 0)
		return -1;
	snprintf(kname, sizeof(kname), "%s_nhwc", name);
	tinyc_gkernel *k = tinyc_gk_alloc(gm, kname);
	if (!k)
		return -1;
	/* a block per tile of 64 pixels x CT channels of one image, through shared memory
	 * (rows of an odd number of words: CT + 2 halves or CT + 1 floats, so that neither
	 * the column writes nor the row reads of a warp meet in a bank) */
	int64_t CT = C % 64 == 0 ? 64 : C % 32 == 0 ? 32 : C % 16 == 0 ? 16 : C % 8 == 0 ? 8 : 4;
	int64_t RS = es == 2 ? CT + 2 : CT + 1;
	int64_t pb = (P + 63) / 64, cb = C / CT, blocks = pb * cb * L;
	int64_t cpp = CT / ew, chunks = 64 * cpp;	/* 16-byte chunks per pixel, of the tile */
	tinyc_dtype it = elems < INT32_MAX && blocks < INT32_MAX / 256 ? TINYC_INT : TINYC_LONG;
	tinyc_dtype et = es == 2 ? TINYC_USHORT : TINYC_UINT;	/* the elements' bits */
	k->index_dtype = it;
	k->block[0] = 256, k->block[1] = k->block[2] = 1;
	k->grid[0] = tinyc_gx_int(k, TINYC_LONG, blocks);
	k->grid[1] = k->grid[2] = tinyc_gx_int(k, TINYC_LONG, 1);
	snprintf(comment, sizeof(comment), "%s: %s[%lld][%lld][%lld] rearranged channels-last into %s "
		 "for matmul %s (tiles of 64 pixels x %lld channels through shared memory: loads "
		 "along the pixels, 16-byte stores along the channels)%s", kname,
		 gm->bufs[op->buf].name, (long long)L, (long long)Ci, (long long)P, wname, name,
		 (long long)CT, Ci < C ? "; channels padded with zeros to 8" : "");
	k->comment = tinyc_gpu_strdup(gm, comment);
	snprintf(pn, sizeof(pn), "%s_u%d", gm->bufs[op->buf].name, 8 * es);
	int src = tinyc_gk_param_ptr(k, pn, et, 1, op->buf);
	snprintf(pn, sizeof(pn), "%s_x%d", wname, 4 / es);
	int dst = tinyc_gk_param_ptr(k, pn, TINYC_UINT, 0, w);
	int tile = tinyc_gk_shared(k, "tile", et, 64 * RS, 16, 0);
	int iv = tinyc_gk_reg(k, "i", it), jv = tinyc_gk_reg(k, "j", it);
	int pk = tinyc_gk_reg_array(k, "pk", TINYC_UINT, 4);
	if (src < 0 || dst < 0 || tile < 0 || iv < 0 || jv < 0 || pk < 0)
		return -1;
	k->vars[pk].align = 16;
#define NI(v) tinyc_gx_int(k, it, (v))
#define NB(op_, x, y) tinyc_gx_binary(k, (op_), (x), (y))
	tinyc_gexpr *bid = tinyc_gx_cast(k, it, tinyc_gx_special(k, TINYC_GSP_BID_X));
	tinyc_gexpr *tid = tinyc_gx_cast(k, it, tinyc_gx_special(k, TINYC_GSP_TID_X));
	tinyc_gexpr *p0 = NB(TINYC_GX_MUL, NB(TINYC_GX_MOD, bid, NI(pb)), NI(64));
	tinyc_gexpr *rest = NB(TINYC_GX_DIV, bid, NI(pb));
	tinyc_gexpr *c0 = NB(TINYC_GX_MUL, NB(TINYC_GX_MOD, rest, NI(cb)), NI(CT));
	tinyc_gexpr *l = NB(TINYC_GX_DIV, rest, NI(cb));
	tinyc_gexpr *I = tinyc_gx_var(k, iv), *J = tinyc_gx_var(k, jv);
	/* load: element e = tid + 256 i of the tile is channel e / 64, pixel e % 64 (consecutive
	 * threads consecutive pixels), 0 past the last pixel */
	tinyc_gexpr *e = NB(TINYC_GX_ADD, tid, NB(TINYC_GX_MUL, I, NI(256)));
	tinyc_gexpr *ch = NB(TINYC_GX_DIV, e, NI(64)), *px = NB(TINYC_GX_MOD, e, NI(64));
	tinyc_gexpr *p = NB(TINYC_GX_ADD, p0, px);
	tinyc_gexpr *at = NB(TINYC_GX_ADD, NB(TINYC_GX_MUL, NB(TINYC_GX_ADD, NB(TINYC_GX_MUL, l, NI(Ci)),
								  NB(TINYC_GX_ADD, c0, ch)), NI(P)), p);
	tinyc_gexpr *inx = NB(TINYC_GX_LT, p, NI(P));
	if (Ci < C)	/* the padded channels: zeros */
		inx = NB(TINYC_GX_LAND, inx, NB(TINYC_GX_LT, NB(TINYC_GX_ADD, c0, ch), NI(Ci)));
	tinyc_gexpr *v = tinyc_gx_load(k, src, at, inx);
	tinyc_gstmt *ld = tinyc_gs_block(k);
	tinyc_gs_append(k, ld, tinyc_gs_store(k, tile, NB(TINYC_GX_ADD, NB(TINYC_GX_MUL, px, NI(RS)), ch), v, NULL));
	/* store: chunk q = tid + 256 i is pixel q / cpp, channels ew (q % cpp) .. + ew: four
	 * words from shared memory (two halves or one float each), one 16-byte store
	 * (consecutive threads consecutive 16 bytes of a pixel's channels) */
	tinyc_gexpr *q = NB(TINYC_GX_ADD, tid, NB(TINYC_GX_MUL, I, NI(256)));
	tinyc_gexpr *qp = NB(TINYC_GX_DIV, q, NI(cpp)), *c8 = NB(TINYC_GX_MOD, q, NI(cpp));
	tinyc_gexpr *word, *wd;
	tinyc_gexpr *pix = NB(TINYC_GX_ADD, NB(TINYC_GX_MUL, l, NI(P)), NB(TINYC_GX_ADD, p0, qp));
	if (es == 4) {	/* word (l P + p) C + c0 + 4 c8 + j */
		tinyc_gexpr *si = NB(TINYC_GX_ADD, NB(TINYC_GX_MUL, qp, NI(RS)),
				     NB(TINYC_GX_ADD, NB(TINYC_GX_MUL, c8, NI(4)), J));
		word = tinyc_gx_load(k, tile, si, NULL);
		wd = NB(TINYC_GX_ADD, NB(TINYC_GX_MUL, pix, NI(C)), NB(TINYC_GX_ADD, c0, NB(TINYC_GX_MUL, c8, NI(4))));
	} else {	/* word (l P + p) C / 2 + (c0 + 8 c8) / 2 + j: two halves */
		tinyc_gexpr *half[2];
		for (int h = 0; h < 2; h++) {
			tinyc_gexpr *si = NB(TINYC_GX_ADD, NB(TINYC_GX_MUL, qp, NI(RS)),
					     NB(TINYC_GX_ADD, NB(TINYC_GX_MUL, c8, NI(8)),
						NB(TINYC_GX_ADD, NB(TINYC_GX_MUL, J, NI(2)), NI(h))));
			half[h] = tinyc_gx_cast(k, TINYC_UINT, tinyc_gx_load(k, tile, si, NULL));
		}
		word = NB(TINYC_GX_OR, half[0], NB(TINYC_GX_SHL, half[1], tinyc_gx_int(k, TINYC_UINT, 16)));
		wd = NB(TINYC_GX_ADD, NB(TINYC_GX_MUL, pix, NI(C / 2)),
			NB(TINYC_GX_DIV, NB(TINYC_GX_ADD, c0, NB(TINYC_GX_MUL, c8, NI(8))), NI(2)));
	}
	tinyc_gstmt *wj = tinyc_gs_block(k), *st = tinyc_gs_block(k), *sq = tinyc_gs_block(k);
	tinyc_gs_append(k, wj, tinyc_gs_store(k, pk, J, word, NULL));
	tinyc_gs_append(k, st, tinyc_gs_for_range(k, jv, NI(0), NI(4), NI(1), 4, wj));
	tinyc_gs_append(k, st, tinyc_gs_copy(k, dst, wd, pk, NI(0), 4, NULL, 0));
	tinyc_gexpr *in = NB(TINYC_GX_LT, NB(TINYC_GX_ADD, p0, qp), NI(P));
	if (chunks % 256)
		in = NB(TINYC_GX_LAND, NB(TINYC_GX_LT, q, NI(chunks)), in);
	tinyc_gs_append(k, sq, tinyc_gs_if(k, in, st, NULL));
	/* the blocks past the transpose's are the weight's packing kernel (appended by the
	 * caller, tinyc_matmul_emit) */
	tinyc_gstmt *tb = tinyc_gs_block(k);
	if (tinyc_gs_append(k, tb, tinyc_gs_decl(k, pk, NULL)) < 0 ||
	    tinyc_gs_append(k, tb, tinyc_gs_for_range(k, iv, NI(0), NI(64 * CT / 256), NI(1), -1, ld)) < 0 ||
	    tinyc_gs_append(k, tb, tinyc_gs_barrier(k)) < 0 ||
	    tinyc_gs_append(k, tb, tinyc_gs_for_range(k, iv, NI(0), NI((chunks + 255) / 256), NI(1), -1, sq)) < 0 ||
	    tinyc_gs_append(k, k->body, tinyc_gs_if(k, NB(TINYC_GX_LT, bid, NI(blocks)), tb, NULL)) < 0)
		return -1;
#undef NI
#undef NB
	tinyc_gk_sort_params(k);
	*kernel = k;
	return w;
}

/* The per-tile and per-k-tile halves of A's NHWC addressing (see tinyc_conv_cp16). */
int tinyc_conv_cp16(tinyc_mmk *b, tinyc_gstmt *ptile, tinyc_gstmt *blk, int sh, tinyc_gexpr *base,
		    tinyc_gexpr *m0, tinyc_gexpr *k0, tinyc_gexpr *ptid)
{
	tinyc_gkernel *k = b->k;
	const tinyc_mm_tiles *t = b->t;
	const tinyc_mm_operand *op = &b->prob->a;
	const tinyc_mm_gather *g = &op->gather;
	int rows = t->bm / 16, ng = g->nguard;
	if (rows > 16 || ng > TINYC_GATHER_GUARDS)
		return -1;
#define CB(op_, x, y) tinyc_gx_binary(k, (op_), (x), (y))
	tinyc_gexpr *c = CB(TINYC_GX_MOD, ptid, cint(b, 8)), *o0 = CB(TINYC_GX_DIV, ptid, cint(b, 8));
	tinyc_gexpr *ax[TINYC_GATHER_AXES];
	/* per tile, per row j of the thread (o0 + 16 j): the row's address (the offset, the
	 * batch) and the row part of each guard; a row past M fails guard 0 */
	tinyc_gexpr *raddr[16], *rg[16][TINYC_GATHER_GUARDS];
	for (int j = 0; j < rows; j++) {
		tinyc_gexpr *gm = CB(TINYC_GX_ADD, m0, CB(TINYC_GX_ADD, o0, cint(b, 16 * j)));
		tinyc_conv_split(k, b->it, gm, g->ext[0], g->nax[0], ax);
		tinyc_gexpr *e = tinyc_mmk_poly(b, &op->offset);
		for (int i = 0; i < g->nax[0]; i++)
			if (g->stride[0][i])
				e = CB(TINYC_GX_ADD, e, CB(TINYC_GX_MUL, ax[i], cint(b, g->stride[0][i])));
		if (!tinyc_evt_poly_is_zero(&op->stride[2]))
			e = CB(TINYC_GX_ADD, e, CB(TINYC_GX_MUL, b->l, tinyc_mmk_poly(b, &op->stride[2])));
		raddr[j] = tinyc_mmk_let(b, ptile, "ra", e);
		for (int q = 0; q < ng; q++) {
			tinyc_gexpr *s = cint(b, g->g0[q]);
			for (int i = 0; i < g->nax[0]; i++)
				if (g->gcoef[q][0][i])
					s = CB(TINYC_GX_ADD, s, CB(TINYC_GX_MUL, ax[i], cint(b, g->gcoef[q][0][i])));
			if (q == 0 && t->pred_m)
				s = tinyc_gx_select(k, CB(TINYC_GX_LT, gm, b->M), s, cint(b, -(INT64_C(1) << 28)));
			rg[j][q] = tinyc_mmk_let(b, ptile, "rg", s);
		}
	}
	/* per k tile: the column's address and guard parts (shared by the thread's rows) */
	tinyc_gexpr *gk = CB(TINYC_GX_ADD, k0, CB(TINYC_GX_MUL, c, cint(b, 8)));
	tinyc_conv_split(k, b->it, gk, g->ext[1], g->nax[1], ax);
	tinyc_gexpr *ca = cint(b, 0), *cg[TINYC_GATHER_GUARDS];
	for (int i = 0; i < g->nax[1]; i++)
		if (g->stride[1][i])
			ca = CB(TINYC_GX_ADD, ca, CB(TINYC_GX_MUL, ax[i], cint(b, g->stride[1][i])));
	ca = tinyc_mmk_let(b, blk, "ca", ca);
	for (int q = 0; q < ng; q++) {
		tinyc_gexpr *s = cint(b, 0);
		for (int i = 0; i < g->nax[1]; i++)
			if (g->gcoef[q][1][i])
				s = CB(TINYC_GX_ADD, s, CB(TINYC_GX_MUL, ax[i], cint(b, g->gcoef[q][1][i])));
		cg[q] = tinyc_mmk_let(b, blk, "cg", s);
	}
	tinyc_gexpr *kin = t->pred_k ? CB(TINYC_GX_LT, gk, b->K) : NULL;
	/* the chunks: 16 bytes at chunk c ^ (row % 8) of the swizzled row */
	for (int j = 0; j < rows; j++) {
		tinyc_gexpr *ok = kin;
		for (int q = 0; q < ng; q++) {
			tinyc_gexpr *tq = CB(g->geq[q] ? TINYC_GX_EQ : TINYC_GX_GE, CB(TINYC_GX_ADD, rg[j][q], cg[q]),
					     cint(b, 0));
			ok = ok ? CB(TINYC_GX_LAND, ok, tq) : tq;
		}
		tinyc_gexpr *addr = CB(TINYC_GX_ADD, raddr[j], ca);
		if (ok)	/* no address outside the copy when the chunk is zero-filled */
			addr = tinyc_gx_select(k, ok, addr, cint(b, 0));
		tinyc_gexpr *o = CB(TINYC_GX_ADD, o0, cint(b, 16 * j));
		tinyc_gexpr *sw = CB(TINYC_GX_XOR, c, CB(TINYC_GX_MOD, o, cint(b, 8)));
		tinyc_gexpr *idx = CB(TINYC_GX_ADD, base, CB(TINYC_GX_ADD, CB(TINYC_GX_MUL, o, cint(b, 64)),
							     CB(TINYC_GX_MUL, sw, cint(b, 8))));
		/* .ca: the window's taps re-read neighbouring pixels, which L1 keeps */
		tinyc_mmk_append(b, blk, tinyc_gs_copy(k, sh, idx, tinyc_mmk_param(b, op->buf, 0), addr, 8, ok, 2));
	}
#undef CB
	return b->error ? -1 : 0;
}
