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
