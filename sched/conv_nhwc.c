/* Convolutions as implicit GEMM: the channels-last (NHWC) internal layout of a gathered A
 * (see sched/conv.h).
 *
 * An NCHW input x[L][C][P] (P = H*W pixels) read through an im2col gather whose k axes
 * are (ci, kh, kw) is rearranged by one transpose kernel into x'[L][P][C]; the k axes are
 * reordered to (kh, kw, ci), so that 8 consecutive k of a row of A (16-bit) are 8
 * consecutive channels of one input pixel: one 16-byte cp.async (zero-filled in the
 * padding, where the window's guards fail; they do not involve ci) straight into the wgmma
 * template's shared-memory tile.  The weight B is read with the same k order (gathered,
 * packed by the existing packing kernel: it is small).  fp32 (the 3xTF32 tile): 4
 * channels per 16-byte load, B gathered in place.
 */
#include "sched/matmul.h"

#include <string.h>

/* The value of p under the bound sizes sym[0..nsym), or -1. */
static int64_t value(const tinyc_evt_poly *p, const int64_t *sym, int nsym)
{
	int64_t v;
	return tinyc_evt_poly_eval(p, sym, nsym, &v) < 0 ? -1 : v;
}

/* The bound value of dim d, or -1. */
static int64_t dim_value(const tinyc_dim *d, const int64_t *sym, int nsym)
{
	if (d->sym < 0)
		return d->val;
	return sym && d->sym < nsym ? sym[d->sym] : -1;
}

int tinyc_conv_nhwc_problem(const tinyc_mm_problem *prob, const int64_t *sym, int nsym,
			    tinyc_mm_problem *out, tinyc_conv_nhwc *nh)
{
	const tinyc_mm_gather *g = &prob->a.gather;
	int es = tinyc_dtype_size(prob->a.dtype);
	if (!g->on || prob->b.gather.on || (es != 2 && es != 4) || g->nax[1] < 1)
		return -1;
	int run = 16 / es;	/* channels per 16 bytes: 8 halves, 4 floats */
	/* the channel axis: the column axis of the largest stride, in no guard */
	int nc = g->nax[1], c = 0;
	for (int i = 1; i < nc; i++)
		if (g->stride[1][i] > g->stride[1][c])
			c = i;
	/* 16-bit channels padded to a multiple of 8 (3 -> 8: the stem) in the copy: zeros
	 * there and a guard ci < C on B, so the padded k contribute nothing; fp32 channels
	 * must be a multiple of 4 (the 3xTF32 tile reads B in place, without that guard) */
	int64_t C = g->ext[1][c], P = g->stride[1][c], Cp = (C + run - 1) / run * run;
	if ((es == 4 && Cp != C) || P < 1)
		return -1;
	for (int q = 0; q < g->nguard; q++)
		if (g->gcoef[q][1][c])
			return -1;
	/* every other axis moves within one channel's P pixels */
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < g->nax[r]; i++)
			if (!(r == 1 && i == c) && (g->stride[r][i] < 0 || g->stride[r][i] >= P))
				return -1;
	int64_t off = value(&prob->a.offset, sym, nsym), sl = value(&prob->a.stride[2], sym, nsym);
	int64_t L = dim_value(&prob->l, sym, nsym), K = dim_value(&prob->k, sym, nsym);
	int batched = prob->evt && prob->evt->batched && sl != 0;
	if (off <= -P || off >= P || sl < 0 || L < 1 || (batched && sl != C * P))
		return -1;
	int64_t kk = 1;
	for (int i = 0; i < nc; i++)
		kk *= g->ext[1][i];
	if (kk != K)
		return -1;
	/* B: k one stride, n one stride */
	int64_t sk = value(&prob->b.stride[0], sym, nsym), sn = value(&prob->b.stride[1], sym, nsym);
	int64_t N = dim_value(&prob->n, sym, nsym);
	if (sk < 0 || sn < 0 || N < 1)
		return -1;
	*out = *prob;	/* shallow: the evt stays prob's */
	out->k.sym = -1, out->k.val = K / C * Cp;
	if (batched)	/* the copy's images are Cp P apart */
		out->a.stride[2] = tinyc_evt_poly_const(Cp * P);
	/* the new k order: the other column axes in their order, then the channels */
	int ord[TINYC_GATHER_AXES], n = 0;
	for (int i = 0; i < nc; i++)
		if (i != c)
			ord[n++] = i;
	ord[n++] = c;
	tinyc_mm_gather *ga = &out->a.gather, *gb = &out->b.gather;
	for (int i = 0; i < g->nax[0]; i++)
		ga->stride[0][i] = g->stride[0][i] * Cp;
	for (int j = 0; j < nc; j++) {
		int i = ord[j];
		ga->ext[1][j] = i == c ? Cp : g->ext[1][i];
		ga->stride[1][j] = i == c ? 1 : g->stride[1][i] * Cp;
		for (int q = 0; q < g->nguard; q++)
			ga->gcoef[q][1][j] = g->gcoef[q][1][i];
	}
	out->a.offset = tinyc_evt_poly_const(off * Cp);
	/* B's k axes: the mixed radix of its one k stride, in the new order */
	int64_t inner[TINYC_GATHER_AXES], in = 1;
	for (int i = nc - 1; i >= 0; i--)
		inner[i] = in, in *= g->ext[1][i];
	memset(gb, 0, sizeof(*gb));
	gb->on = 1;
	gb->nax[0] = nc, gb->nax[1] = 1;
	for (int j = 0; j < nc; j++) {
		gb->ext[0][j] = ord[j] == c ? Cp : g->ext[1][ord[j]];
		gb->stride[0][j] = sk * inner[ord[j]];
	}
	gb->ext[1][0] = N, gb->stride[1][0] = sn;
	if (Cp != C) {	/* B's padded channels read as zeros: C - 1 - ci >= 0 */
		gb->gcoef[0][0][nc - 1] = -1, gb->g0[0] = C - 1, gb->nguard = 1;
	}
	nh->c = Cp, nh->c_in = C, nh->p = P, nh->l = batched ? L : 1;
	nh->stored_by = nh->feeds = 0;
	return 0;
}
