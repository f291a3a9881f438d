/* Direct convolutions (issue 15): a windowed contraction that no matmul plan takes (a
 * depthwise conv: no n axis, every output channel reads its own input channel; a grouped
 * conv with fewer than 16 input channels per group) as threads that each sum the windows
 * of a few outputs, instead of a GEMM with N = 1 or tiny K (see sched/conv.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "poly/poly.h"
#include "sched/conv.h"
#include "sched/schedule.h"

/* Free a tinyc_conv_direct. */
static void direct_free(void *p)
{
	free(p);
}

/* The contraction of pv whose REDUCE is node r, or NULL. */
static const tinyc_contraction *contraction_of(const tinyc_polyview *pv, int r)
{
	for (int i = 0; i < pv->ncontr; i++)
		if (pv->stmt[pv->contr[i].reduce_stmt].node == r)
			return &pv->contr[i];
	return NULL;
}

/* Node v through RESHAPEs and CASTs (their dtypes appended to casts[*n], at most 7 in
 * all): the first node that is neither. */
static int skip_reshape_cast(const tinyc_graph *g, int v, int r, int *casts, int *n)
{
	while (v != r && v >= 0 && (g->nodes[v].op == TINYC_OP_RESHAPE || g->nodes[v].op == TINYC_OP_CAST)) {
		if (g->nodes[v].op == TINYC_OP_CAST) {
			if (*n == 7)
				return -1;
			casts[(*n)++] = g->nodes[v].dtype;
		}
		v = g->nodes[v].src[0];
	}
	return v;
}

/* The buffer node that node v views through RESHAPEs only (its elements in v's row-major
 * order), or -1. */
static int reshaped_buffer(const tinyc_graph *g, int v)
{
	while (v >= 0 && g->nodes[v].op == TINYC_OP_RESHAPE)
		v = g->nodes[v].src[0];
	return v >= 0 && g->nodes[v].op == TINYC_OP_BUFFER ? v : -1;
}

/* Whether value v of g is node r through RESHAPEs and at most 7 CASTs, with at most one
 * ADD of a bias on the way (a buffer reshaped to the ADD's rank, broadcast where its dims
 * are 1); d->cast gets the dtypes from r's out, d->add_at where the ADD is (-1: none),
 * *add the ADD and *bias the bias's side (-1: none). */
static int reshape_cast_of(const tinyc_graph *g, int v, int r, tinyc_conv_direct *d, int *add,
			   int *bias)
{
	int casts[8], n = 0, at = -1;
	*add = *bias = -1;
	v = skip_reshape_cast(g, v, r, casts, &n);
	if (v >= 0 && v != r && g->nodes[v].op == TINYC_OP_ADD) {
		const tinyc_uop *a = &g->nodes[v];
		for (int side = 0; side < 2 && *bias < 0; side++) {
			int o = a->src[side];
			if (g->nodes[o].rank == a->rank && g->nodes[o].dtype == a->dtype &&
			    reshaped_buffer(g, o) >= 0)
				*add = v, *bias = o, v = a->src[1 - side];
		}
		if (*bias < 0)
			return 0;
		at = n;	/* casts[0..n) come after the ADD (they are read outermost first) */
		v = skip_reshape_cast(g, v, r, casts, &n);
	}
	if (v != r)
		return 0;
	d->cast[0] = g->nodes[r].dtype;
	for (int i = 0; i < n; i++)
		d->cast[1 + i] = casts[n - 1 - i];
	d->ncast = 1 + n;
	d->add_at = at < 0 ? -1 : n - at;	/* after cast[n - at]: the ADD's operand dtype */
	return 1;
}

/* The bias's addressing d->b for the ADD node `add` and its bias side `bias` (a buffer
 * reshaped to the ADD's rank): the output axes out[0..nout) with their extents ext[] and
 * strides ys[] in the stored value (the ADD's row-major order: the stored buffer is the
 * ADD through RESHAPEs) each match one dim of the ADD (its row-major stride and size),
 * whose bias stride is the bias view's row-major stride, 0 where it broadcasts.  0, or -1
 * (why filled). */
static int bias_strides(const tinyc_schedule *s, int add, int bias, const int *out, int nout,
			const int64_t *ext, const int64_t *ys, tinyc_conv_direct *d, char *why,
			size_t wsize)
{
	const tinyc_graph *g = s->g;
	const tinyc_uop *a = &g->nodes[add], *bv = &g->nodes[bias];
	int64_t as[TINYC_MAX_RANK], bs[TINYC_MAX_RANK], ad[TINYC_MAX_RANK], bd[TINYC_MAX_RANK];
	int64_t sa = 1, sb = 1;
	if (a->rank > TINYC_MAX_RANK)
		return -1;
	for (int i = a->rank - 1; i >= 0; i--) {
		ad[i] = tinyc_sched_dim(s, &a->shape[i]), bd[i] = tinyc_sched_dim(s, &bv->shape[i]);
		if (ad[i] < 1 || bd[i] < 1 || (bd[i] != ad[i] && bd[i] != 1)) {
			snprintf(why, wsize, "a bias of unbound or mismatched size");
			return -1;
		}
		as[i] = sa, bs[i] = bd[i] == ad[i] ? sb : 0;
		sa *= ad[i], sb *= bd[i];
	}
	d->b = d->y;
	d->b.nguard = 0;
	for (int i = 0; i < nout; i++) {
		int a_ = out[i], hit = ext[a_] == 1;
		d->b.stride[0][i] = 0;
		for (int j = 0; j < a->rank && !hit; j++)
			if (ad[j] == ext[a_] && as[j] == ys[a_])
				d->b.stride[0][i] = bs[j], hit = 1;
		if (!hit) {
			snprintf(why, wsize, "an output axis across dims of the bias's ADD");
			return -1;
		}
	}
	for (int j = 0; j < d->b.nax[1]; j++)
		d->b.stride[1][j] = 0;
	d->b_buf = s->node_buf[reshaped_buffer(g, bias)];
	if (d->b_buf < 0 || s->bufs[d->b_buf].has_strides) {
		snprintf(why, wsize, "a bias that is not a plain buffer");
		return -1;
	}
	return 0;
}

/* The element strides (bound) of access acc into node `array` along the contraction's
 * axes, and its offset; -1 when the access does not fit (why filled). */
static int access_strides(const tinyc_schedule *s, isl_pw_multi_aff *acc, isl_set *dom,
			  int array, int naxes, int64_t *st, int64_t *off, char *why, size_t wsize)
{
	tinyc_evt_poly ps[TINYC_MAX_RANK + 1], po;
	char *w = NULL;
	if (tinyc_evt_access_layout(s->g, acc, dom, &s->g->nodes[array], naxes, ps, &po, &w) < 0) {
		snprintf(why, wsize, "access of %%%s: %s", s->g->nodes[array].id, w ? w : "?");
		free(w);
		return -1;
	}
	const int64_t *val = s->bind ? s->bind->val : NULL;
	int nval = s->bind ? s->bind->n : 0;
	for (int a = 0; a < naxes; a++)
		if (tinyc_evt_poly_eval(&ps[a], val, nval, &st[a]) < 0 || st[a] < 0) {
			snprintf(why, wsize, "an unbound or negative stride of %%%s", s->g->nodes[array].id);
			return -1;
		}
	if (tinyc_evt_poly_eval(&po, val, nval, off) < 0) {
		snprintf(why, wsize, "an unbound offset of %%%s", s->g->nodes[array].id);
		return -1;
	}
	return 0;
}

/* Fill d for kernel k when it stores a direct convolution: its one inline REDUCE is a
 * contraction of pv that reads its left operand through a window and its right operand
 * (the weight) unpadded, without n axes (depthwise) or with fewer than 16 input channels
 * per group, and the stored value is the REDUCE through RESHAPEs and CASTs into a
 * row-major buffer.  1 when it fits, 0 (why filled) when not. */
static int direct_match(const tinyc_schedule *s, const tinyc_polyview *pv, const tinyc_skernel *k,
			tinyc_conv_direct *d, char *why, size_t wsize)
{
	const tinyc_graph *g = s->g;
	memset(d, 0, sizeof(*d));
	int add, bias;
	if (k->nred != 1 || !reshape_cast_of(g, k->value, k->reds[0], d, &add, &bias)) {
		snprintf(why, wsize, "not one REDUCE stored through reshapes, casts and a bias");
		return 0;
	}
	const tinyc_contraction *c = contraction_of(pv, k->reds[0]);
	if (!c || !c->nk || c->rhs_padded || c->lhs < 0 || c->rhs < 0 ||
	    s->node_buf[c->lhs] < 0 || s->node_buf[c->rhs] < 0) {
		snprintf(why, wsize, "not a windowed contraction over buffers");
		return 0;
	}
	/* a window: a k axis and an output axis index the same input dim (oh + kh) */
	int window = 0;
	int64_t channels = 1;	/* the k extent outside the window: input channels per group */
	for (int a = 0; a < c->naxes; a++) {
		int in_window = 0;
		for (int b = 0; b < c->naxes; b++)
			in_window |= c->role[a] == TINYC_ROLE_K && c->role[b] != TINYC_ROLE_K &&
				     c->lhs_dim[a] >= 0 && c->lhs_dim[a] == c->lhs_dim[b];
		window |= in_window;
		if (c->role[a] == TINYC_ROLE_K && !in_window)
			channels *= tinyc_sched_dim(s, &pv->ib->val[pv->stmt[c->reduce_stmt].node].axes[a].size);
	}
	if (!window) {
		snprintf(why, wsize, "no window (a matrix-vector product)");
		return 0;
	}
	/* a grouped conv (n axes: the output channels of a group) with few input channels per
	 * group; more channels are a GEMM per group's business */
	if (c->nn && (channels < 1 || channels >= 16)) {
		snprintf(why, wsize, "a grouped conv of %" PRId64 " input channels per group", channels);
		return 0;
	}
	const tinyc_sbuf *yb = &s->bufs[k->out_buf];
	if (yb->has_strides || c->naxes > TINYC_MAX_RANK + 1 || d->cast[d->ncast - 1] != (int)yb->dtype) {
		snprintf(why, wsize, "a strided output, or one of another dtype");
		return 0;
	}
	const tinyc_pv_stmt *sr = &pv->stmt[c->reduce_stmt];
	const tinyc_ibval *rv = &pv->ib->val[sr->node];
	int64_t ext[TINYC_MAX_RANK + 1], xs[TINYC_MAX_RANK + 1], ws[TINYC_MAX_RANK + 1];
	int64_t ys[TINYC_MAX_RANK + 1], yoff = 0;
	for (int a = 0; a < c->naxes; a++)
		if ((ext[a] = tinyc_sched_dim(s, &rv->axes[a].size)) < 1) {
			snprintf(why, wsize, "an axis of unbound size");
			return 0;
		}
	if (access_strides(s, c->lhs_acc, sr->domain, c->lhs, c->naxes, xs, &d->xoff, why, wsize) < 0 ||
	    access_strides(s, c->rhs_acc, sr->domain, c->rhs, c->naxes, ws, &d->woff, why, wsize) < 0 ||
	    access_strides(s, sr->write, sr->domain, sr->node, c->naxes, ys, &yoff, why, wsize) < 0)
		return 0;
	/* output axes in the output's order (largest stride first), then the window's */
	int out[TINYC_MAX_RANK + 1], win[TINYC_MAX_RANK + 1], nout = 0, nwin = 0;
	for (int a = 0; a < c->naxes; a++) {
		if (c->role[a] == TINYC_ROLE_K) {
			win[nwin++] = a;
			continue;
		}
		int i = nout++;
		while (i > 0 && ys[out[i - 1]] < ys[a])
			out[i] = out[i - 1], i--;
		out[i] = a;
	}
	if (nout > TINYC_GATHER_AXES || nwin > TINYC_GATHER_AXES || yoff) {
		snprintf(why, wsize, "more than %d axes of one kind", TINYC_GATHER_AXES);
		return 0;
	}
	/* the input's window: its guards (padding) and strides, as a gathered operand */
	if (tinyc_conv_gather(c->lhs_acc, sr->domain, out, nout, win, nwin, ext, xs, &d->x, why,
			      wsize) < 0)
		return 0;
	d->w = d->x, d->w.nguard = 0;
	d->y = d->x, d->y.nguard = 0;
	d->b_buf = -1;
	int64_t outputs = 1, taps = 1;
	for (int i = 0; i < nout; i++) {
		d->w.stride[0][i] = ws[out[i]], d->y.stride[0][i] = ys[out[i]];
		outputs *= ext[out[i]];
	}
	for (int i = 0; i < nwin; i++) {
		d->w.stride[1][i] = ws[win[i]], d->y.stride[1][i] = 0;
		taps *= ext[win[i]];
	}
	if (taps > 512) {
		snprintf(why, wsize, "a window of %" PRId64 " taps", taps);
		return 0;
	}
	if (add >= 0 && bias_strides(s, add, bias, out, nout, ext, ys, d, why, wsize) < 0)
		return 0;
	d->outputs = outputs, d->taps = taps;
	d->vaxis = nout - 1;
	while (d->vaxis > 0 && d->x.ext[0][d->vaxis] == 1)
		d->vaxis--;
	d->per_thread = d->x.ext[0][d->vaxis] % 4 == 0 ? 4 : d->x.ext[0][d->vaxis] % 2 == 0 ? 2 : 1;
	d->x_buf = s->node_buf[c->lhs], d->w_buf = s->node_buf[c->rhs], d->y_buf = k->out_buf;
	d->acc = c->acc;
	return 1;
}

/* The provider: a kernel that stores a direct convolution gets one DIRECT_CONV candidate
 * (up to 4 outputs per thread, 256 threads per block) and loses the generic ones. */
static int direct_propose(tinyc_ctx *ctx, tinyc_schedule *s, tinyc_skernel *k)
{
	for (int i = 0; i < k->ncand; i++)
		if (k->cands[i].kind != TINYC_PLAN_MAP && k->cands[i].kind != TINYC_PLAN_ROWRED)
			return 0;
	if (k->nred != 1 || s->g->nodes[k->reds[0]].redop != TINYC_RED_ADD ||
	    tinyc_contraction_mul(s->g, k->reds[0]) < 0)
		return 0;	/* not a contraction: no Poly-View needed */
	tinyc_indexbook *ib = NULL;
	tinyc_polyview *own = NULL;
	const tinyc_polyview *pv = s->pv;
	if (!pv) {	/* outside a module: an analysis of our own */
		ib = tinyc_indexbook_build(ctx, s->g, s->bind);
		pv = own = ib ? tinyc_polyview_build(ctx, ib, NULL) : NULL;
		if (!pv) {
			tinyc_indexbook_free(ib);
			return -1;
		}
	}
	tinyc_conv_direct d;
	char why[160];
	int fit = direct_match(s, pv, k, &d, why, sizeof(why));
	tinyc_polyview_free(own);
	tinyc_indexbook_free(ib);
	if (!fit)
		return 0;
	tinyc_conv_direct *ext = malloc(sizeof(*ext));
	if (!ext)
		return tinyc_error(ctx, "OutOfMemory", "direct conv plan");
	*ext = d;
	tinyc_plan p;
	memset(&p, 0, sizeof(p));
	p.kind = TINYC_PLAN_CONV_DIRECT;
	p.ntile = 1;
	p.block[0] = 256, p.block[1] = p.block[2] = 1;
	p.index_dtype = TINYC_INT;
	/* the input, weight and output once from DRAM (the window's reuse in L1/L2) at half
	 * the bandwidth, or the multiply-adds at half the fp32 peak */
	p.eff = 0.5;
	p.est_us = tinyc_plan_estimate_us(s, k->flops, k->bytes, p.eff);
	snprintf(p.desc, sizeof(p.desc), "conv direct: %" PRId64 " outputs x %" PRId64
		 " taps, %d per thread%s", d.outputs, d.taps, d.per_thread, d.add_at >= 0 ? ", + bias" : "");
	p.ext = ext;
	p.ext_free = direct_free;
	for (int i = 0; i < k->ncand; i++)
		if (k->cands[i].ext_free)
			k->cands[i].ext_free(k->cands[i].ext);
	k->ncand = 0;
	if (tinyc_plan_add(ctx, k, &p) < 0) {
		free(ext);
		return -1;
	}
	return 0;
}

/* The dump line of a chosen direct conv plan: the gather of x, the strides of w and y. */
static void direct_print_plan(const tinyc_schedule *s, const tinyc_skernel *k, tinyc_buf *out)
{
	const tinyc_plan *p = tinyc_skernel_plan(k);
	if (!p || p->kind != TINYC_PLAN_CONV_DIRECT)
		return;
	const tinyc_conv_direct *d = p->ext;
	tinyc_buf_printf(out, "  conv direct: y[o] = sum_t x[o, t] * w[o, t], %" PRId64 " outputs, %"
			 PRId64 " taps; x = %s offset %" PRId64, d->outputs, d->taps,
			 s->bufs[d->x_buf].name, d->xoff);
	tinyc_conv_print_gather(&d->x, out);
	tinyc_buf_printf(out, "; w = %s offset %" PRId64 " strides (", s->bufs[d->w_buf].name, d->woff);
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < d->w.nax[r]; i++)
			tinyc_buf_printf(out, "%s%" PRId64, r || i ? " " : "", d->w.stride[r][i]);
	tinyc_buf_printf(out, "); y = %s strides (", s->bufs[d->y_buf].name);
	for (int i = 0; i < d->y.nax[0]; i++)
		tinyc_buf_printf(out, "%s%" PRId64, i ? " " : "", d->y.stride[0][i]);
	tinyc_buf_putc(out, ')');
	if (d->add_at >= 0) {	/* y = casts(cast(acc) + bias) */
		tinyc_buf_printf(out, "; + bias %s (%s) strides (", s->bufs[d->b_buf].name,
				 tinyc_dtype_name((tinyc_dtype)d->cast[d->add_at]));
		for (int i = 0; i < d->b.nax[0]; i++)
			tinyc_buf_printf(out, "%s%" PRId64, i ? " " : "", d->b.stride[0][i]);
		tinyc_buf_putc(out, ')');
	}
	tinyc_buf_putc(out, '\n');
}

const tinyc_plan_provider tinyc_plan_conv_direct = {
	"conv_direct", direct_propose, NULL, NULL, direct_print_plan, NULL,
};
