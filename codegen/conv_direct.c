/* DIRECT_CONV plan -> GPU IR (sched/conv.h, sched/conv_direct.c): one thread per output
 * element, the window's taps in an unrolled loop, each tap one predicated input load (0 in
 * the padding) times one weight load, accumulated in the contraction's accumulator dtype
 * and stored once.  Consecutive threads take consecutive output elements (the output's
 * innermost axis), so that the input loads of a warp are consecutive too. */
#include <string.h>

#include "codegen/gpu.h"
#include "codegen/matmul.h"

/* The index expression of im2col addressing g with offset off at (row, col) (codegen/conv.c);
 * *guard: its window predicate or NULL. */
static tinyc_gexpr *addr(tinyc_mmk *b, const tinyc_mm_gather *g, int64_t off, tinyc_gexpr *row,
			 tinyc_gexpr *col, tinyc_gexpr **guard)
{
	tinyc_mm_operand op;
	memset(&op, 0, sizeof(op));
	op.gather = *g;
	op.offset = tinyc_evt_poly_const(off);
	op.stride[2] = tinyc_evt_poly_const(0);
	tinyc_gexpr *none = NULL;
	return tinyc_conv_addr(b, &op, row, col, guard ? guard : &none);
}

int tinyc_conv_direct_build(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_schedule *s,
			    const tinyc_indexbook *ib, int kernel)
{
	(void)ib;
	const tinyc_skernel *sk = &s->kerns[kernel];
	const tinyc_plan *p = tinyc_skernel_plan(sk);
	if (!p || p->kind != TINYC_PLAN_CONV_DIRECT || !p->ext)
		return tinyc_error(ctx, "CodegenError", "kernel %s: not a DIRECT_CONV plan", sk->name);
	const tinyc_conv_direct *d = p->ext;
	tinyc_gkernel *k = tinyc_gk_alloc(gm, sk->name);
	if (!k)
		return -1;
	/* int indices when every address and the thread count fit */
	const tinyc_mm_gather *gs[3] = {&d->x, &d->w, &d->y};
	int64_t offs[3] = {d->xoff, d->woff, 0}, reach = 0;
	for (int q = 0; q < 3; q++) {
		int64_t r = offs[q] < 0 ? -offs[q] : offs[q];
		for (int a = 0; a < 2; a++)
			for (int i = 0; i < gs[q]->nax[a]; i++)
				r += (gs[q]->ext[a][i] - 1) * gs[q]->stride[a][i];
		reach = r > reach ? r : reach;
	}
	tinyc_dtype it = reach < INT32_MAX && d->outputs < INT32_MAX - 256 ? TINYC_INT : TINYC_LONG;
	k->index_dtype = it;
	k->block[0] = 256, k->block[1] = k->block[2] = 1;
	k->grid[0] = tinyc_gx_int(k, TINYC_LONG, (d->outputs + 255) / 256);
	k->grid[1] = k->grid[2] = tinyc_gx_int(k, TINYC_LONG, 1);
	char comment[200];
	snprintf(comment, sizeof(comment), "%s: direct conv, a thread per output (%lld), %lld taps "
		 "unrolled", sk->name, (long long)d->outputs, (long long)d->taps);
	k->comment = tinyc_gpu_strdup(gm, comment);
	tinyc_dtype acc = (tinyc_dtype)d->acc;
	int xp = tinyc_gk_param_ptr(k, gm->bufs[d->x_buf].name, gm->bufs[d->x_buf].dtype, 1, d->x_buf);
	int wp = tinyc_gk_param_ptr(k, gm->bufs[d->w_buf].name, gm->bufs[d->w_buf].dtype, 1, d->w_buf);
	int yp = tinyc_gk_param_ptr(k, gm->bufs[d->y_buf].name, gm->bufs[d->y_buf].dtype, 0, d->y_buf);
	int av = tinyc_gk_reg(k, "acc", acc), tv = tinyc_gk_reg(k, "t", it);
	if (xp < 0 || wp < 0 || yp < 0 || av < 0 || tv < 0)
		return -1;
	tinyc_mmk b;
	memset(&b, 0, sizeof(b));
	b.ctx = ctx, b.gm = gm, b.k = k, b.it = it;
	tinyc_gexpr *bid = tinyc_gx_cast(k, it, tinyc_gx_special(k, TINYC_GSP_BID_X));
	tinyc_gexpr *tid = tinyc_gx_cast(k, it, tinyc_gx_special(k, TINYC_GSP_TID_X));
	tinyc_gexpr *o = tinyc_gx_binary(k, TINYC_GX_ADD, tinyc_gx_binary(k, TINYC_GX_MUL, bid,
									   tinyc_gx_int(k, it, 256)), tid);
	tinyc_gexpr *t = tinyc_gx_var(k, tv);
	/* a tap: acc += x[o, t] (0 outside the image) * w[o, t] */
	tinyc_gexpr *guard = NULL;
	tinyc_gexpr *xa = addr(&b, &d->x, d->xoff, o, t, &guard);
	tinyc_gexpr *wa = addr(&b, &d->w, d->woff, o, t, NULL);
	tinyc_gexpr *xv = tinyc_gx_cast(k, acc, tinyc_gx_load(k, xp, xa, guard));
	tinyc_gexpr *wv = tinyc_gx_cast(k, acc, tinyc_gx_load(k, wp, wa, NULL));
	tinyc_gstmt *tap = tinyc_gs_block(k);
	tinyc_gs_append(k, tap, tinyc_gs_assign(k, av, tinyc_gx_binary(k, TINYC_GX_ADD, tinyc_gx_var(k, av),
								    tinyc_gx_binary(k, TINYC_GX_MUL, xv, wv))));
	tinyc_gexpr *ya = addr(&b, &d->y, 0, o, tinyc_gx_int(k, it, 0), NULL);
	if (b.error || !xa || !wa || !ya)
		return -1;
	/* the stored value: the REDUCE's dtype, then its CASTs */
	tinyc_gexpr *stored = tinyc_gx_var(k, av);
	for (int i = 0; i < d->ncast; i++)
		stored = tinyc_gx_cast(k, (tinyc_dtype)d->cast[i], stored);
	if (d->cast[d->ncast - 1] != (int)gm->bufs[d->y_buf].dtype)
		return tinyc_error(ctx, "CodegenError", "kernel %s: the stored value is %s, its buffer "
				   "%s", sk->name, tinyc_dtype_name((tinyc_dtype)d->cast[d->ncast - 1]),
				   tinyc_dtype_name(gm->bufs[d->y_buf].dtype));
	tinyc_gstmt *body = tinyc_gs_block(k);
	int unroll = d->taps <= 64 ? (int)d->taps : 4;
	if (tinyc_gs_append(k, body, tinyc_gs_decl(k, av, tinyc_gx_float(k, acc, 0.0))) < 0 ||
	    tinyc_gs_append(k, body, tinyc_gs_for_range(k, tv, tinyc_gx_int(k, it, 0),
							 tinyc_gx_int(k, it, d->taps),
							 tinyc_gx_int(k, it, 1), unroll, tap)) < 0 ||
	    tinyc_gs_append(k, body, tinyc_gs_store(k, yp, ya, stored, NULL)) < 0)
		return -1;
	tinyc_gexpr *in = tinyc_gx_binary(k, TINYC_GX_LT, o, tinyc_gx_int(k, it, d->outputs));
	if (tinyc_gs_append(k, k->body, tinyc_gs_if(k, in, body, NULL)) < 0)
		return -1;
	tinyc_gk_sort_params(k);
	return 0;
}
