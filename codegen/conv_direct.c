/* DIRECT_CONV plan -> GPU IR (sched/conv.h, sched/conv_direct.c): each thread computes V
 * consecutive outputs along the output's innermost axis (the plan's per_thread); the
 * window's taps in an unrolled loop, each a predicated input load (0 in the padding) per
 * output times one weight load, accumulated in the contraction's accumulator dtype and
 * stored once per output (a bias added on the way).  The output coordinate is split into its axes once per thread
 * and the tap's once per (unrolled, constant) tap, so that the loads of neighbouring
 * outputs and taps differ by constants (nvcc reuses the loads they share). */
#include <string.h>

#include "codegen/gpu.h"
#include "codegen/matmul.h"

#define DIRECT_V 4			/* outputs per thread at most */

/* What the taps' code is built from. */
typedef struct direct_b {
	tinyc_gkernel *k;		/* the kernel */
	tinyc_dtype it;			/* index dtype */
	const tinyc_conv_direct *d;	/* the plan */
	tinyc_gexpr *out[TINYC_GATHER_AXES];	/* the thread's first output's axes */
	tinyc_gexpr *tap[TINYC_GATHER_AXES];	/* the tap's axes */
	int vi;				/* the output axis the V outputs step along */
} direct_b;

/* Index constant. */
static tinyc_gexpr *cint(direct_b *b, int64_t v)
{
	return tinyc_gx_int(b->k, b->it, v);
}

/* a + c * x (x NULL or c 0: a). */
static tinyc_gexpr *madd(direct_b *b, tinyc_gexpr *a, int64_t c, tinyc_gexpr *x)
{
	if (!x || !c)
		return a;
	tinyc_gexpr *t = c == 1 ? x : tinyc_gx_binary(b->k, TINYC_GX_MUL, x, cint(b, c));
	return tinyc_gx_binary(b->k, TINYC_GX_ADD, a, t);
}

/* The element offset under addressing g (offset off) of output v of the thread at the
 * current tap: off + sum axis * stride, the output axis vi advanced by v. */
static tinyc_gexpr *address(direct_b *b, const tinyc_mm_gather *g, int64_t off, int v)
{
	tinyc_gexpr *e = cint(b, off + (int64_t)v * g->stride[0][b->vi]);
	for (int i = 0; i < g->nax[0]; i++)
		e = madd(b, e, g->stride[0][i], b->out[i]);
	for (int j = 0; j < g->nax[1]; j++)
		e = madd(b, e, g->stride[1][j], b->tap[j]);
	return e;
}

/* The window's guards of g for output v at the current tap (NULL: none). */
static tinyc_gexpr *guards(direct_b *b, const tinyc_mm_gather *g, int v)
{
	tinyc_gexpr *ok = NULL;
	for (int q = 0; q < g->nguard; q++) {
		tinyc_gexpr *s = cint(b, g->g0[q] + (int64_t)v * g->gcoef[q][0][b->vi]);
		for (int i = 0; i < g->nax[0]; i++)
			s = madd(b, s, g->gcoef[q][0][i], b->out[i]);
		for (int j = 0; j < g->nax[1]; j++)
			s = madd(b, s, g->gcoef[q][1][j], b->tap[j]);
		tinyc_gexpr *t = tinyc_gx_binary(b->k, g->geq[q] ? TINYC_GX_EQ : TINYC_GX_GE, s, cint(b, 0));
		ok = ok ? tinyc_gx_binary(b->k, TINYC_GX_LAND, ok, t) : t;
	}
	return ok;
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
	direct_b b;
	memset(&b, 0, sizeof(b));
	b.d = d;
	/* V outputs per thread along axis vi (the axes after it are units) */
	int no = d->x.nax[0], V = d->per_thread;
	b.vi = d->vaxis;
	if (V < 1 || V > DIRECT_V || d->x.ext[0][b.vi] % V)
		return tinyc_error(ctx, "CodegenError", "kernel %s: %d outputs per thread", sk->name, V);
	int64_t threads = d->outputs / V;
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
	tinyc_gkernel *k = tinyc_gk_alloc(gm, sk->name);
	if (!k)
		return -1;
	b.k = k;
	b.it = reach < INT32_MAX && d->outputs < INT32_MAX - 256 * DIRECT_V ? TINYC_INT : TINYC_LONG;
	k->index_dtype = b.it;
	k->block[0] = 256, k->block[1] = k->block[2] = 1;
	k->grid[0] = tinyc_gx_int(k, TINYC_LONG, (threads + 255) / 256);
	k->grid[1] = k->grid[2] = tinyc_gx_int(k, TINYC_LONG, 1);
	char comment[200];
	snprintf(comment, sizeof(comment), "%s: direct conv, %lld outputs, %d per thread along the "
		 "innermost axis, %lld taps unrolled", sk->name, (long long)d->outputs, V,
		 (long long)d->taps);
	k->comment = tinyc_gpu_strdup(gm, comment);
	tinyc_dtype acc = (tinyc_dtype)d->acc, ydt = gm->bufs[d->y_buf].dtype;
	if (d->cast[d->ncast - 1] != (int)ydt)
		return tinyc_error(ctx, "CodegenError", "kernel %s: the stored value is %s, its buffer "
				   "%s", sk->name, tinyc_dtype_name((tinyc_dtype)d->cast[d->ncast - 1]),
				   tinyc_dtype_name(ydt));
	int xp = tinyc_gk_param_ptr(k, gm->bufs[d->x_buf].name, gm->bufs[d->x_buf].dtype, 1, d->x_buf);
	int wp = tinyc_gk_param_ptr(k, gm->bufs[d->w_buf].name, gm->bufs[d->w_buf].dtype, 1, d->w_buf);
	int yp = tinyc_gk_param_ptr(k, gm->bufs[d->y_buf].name, ydt, 0, d->y_buf);
	int bp = d->add_at < 0 ? 0 : tinyc_gk_param_ptr(k, gm->bufs[d->b_buf].name,
							gm->bufs[d->b_buf].dtype, 1, d->b_buf);
	int av = tinyc_gk_reg_array(k, "acc", acc, V), tv = tinyc_gk_reg(k, "t", b.it);
	if (xp < 0 || wp < 0 || yp < 0 || bp < 0 || av < 0 || tv < 0)
		return -1;
	tinyc_gexpr *bid = tinyc_gx_cast(k, b.it, tinyc_gx_special(k, TINYC_GSP_BID_X));
	tinyc_gexpr *tid = tinyc_gx_cast(k, b.it, tinyc_gx_special(k, TINYC_GSP_TID_X));
	tinyc_gexpr *th = madd(&b, tid, 256, bid);	/* the thread's index */
	tinyc_conv_split(k, b.it, tinyc_gx_binary(k, TINYC_GX_MUL, th, cint(&b, V)), d->x.ext[0], no, b.out);
	tinyc_conv_split(k, b.it, tinyc_gx_var(k, tv), d->x.ext[1], d->x.nax[1], b.tap);
	/* a tap: acc[v] += x[o + v, t] (0 outside the image) * w[o, t] (w's stride along the
	 * innermost axis is 0 for a depthwise conv, but kept general) */
	tinyc_gstmt *tap = tinyc_gs_block(k);
	for (int v = 0; v < V; v++) {
		tinyc_gexpr *xv = tinyc_gx_cast(k, acc, tinyc_gx_load(k, xp, address(&b, &d->x, d->xoff, v),
								       guards(&b, &d->x, v)));
		tinyc_gexpr *wv = tinyc_gx_cast(k, acc, tinyc_gx_load(k, wp, address(&b, &d->w, d->woff, v),
								       NULL));
		tinyc_gexpr *sum = tinyc_gx_binary(k, TINYC_GX_ADD, tinyc_gx_load(k, av, cint(&b, v), NULL),
						   tinyc_gx_binary(k, TINYC_GX_MUL, xv, wv));
		tinyc_gs_append(k, tap, tinyc_gs_store(k, av, cint(&b, v), sum, NULL));
	}
	tinyc_gstmt *body = tinyc_gs_block(k);
	int unroll = d->taps <= 64 ? (int)d->taps : 4;
	if (tinyc_gs_append(k, body, tinyc_gs_decl(k, av, tinyc_gx_float(k, acc, 0.0))) < 0 ||
	    tinyc_gs_append(k, body, tinyc_gs_for_range(k, tv, cint(&b, 0), cint(&b, d->taps),
							 cint(&b, 1), unroll, tap)) < 0)
		return -1;
	/* the stored values: the REDUCE's dtype, then its CASTs, the bias added after
	 * cast[add_at] */
	for (int v = 0; v < V; v++) {
		tinyc_gexpr *val = tinyc_gx_load(k, av, cint(&b, v), NULL);
		for (int i = 0; i < d->ncast; i++) {
			val = tinyc_gx_cast(k, (tinyc_dtype)d->cast[i], val);
			if (i == d->add_at)
				val = tinyc_gx_binary(k, TINYC_GX_ADD, val,
						      tinyc_gx_load(k, bp, address(&b, &d->b, 0, v), NULL));
		}
		if (tinyc_gs_append(k, body, tinyc_gs_store(k, yp, address(&b, &d->y, 0, v), val, NULL)) < 0)
			return -1;
	}
	tinyc_gexpr *in = tinyc_gx_binary(k, TINYC_GX_LT, th, cint(&b, threads));
	if (tinyc_gs_append(k, k->body, tinyc_gs_if(k, in, body, NULL)) < 0)
		return -1;
	tinyc_gk_sort_params(k);
	return 0;
}
