/* Rearrange recognition in a UOp graph, and the schedule provider that turns a pure
 * movement kernel into one rearrange kernel (seed 003 through the pipeline).
 *
 * Recognition composes the movement chain under a stored value into one strided view of
 * the buffer at its bottom, bottom-up:
 *
 *   BUFFER      strides= (or row-major), offset 0
 *   PERMUTE     lengths and strides permuted
 *   EXPAND      a broadcast dim gets stride 0
 *   SHRINK      offset += start * stride, length end - start
 *   FLIP        offset += (length - 1) * stride, stride negated
 *   CONTIGUOUS  the same view (it only materialises)
 *   RESHAPE     the non-1 dims are grouped into chunks, each contiguous in itself (outer
 *               stride = inner stride * inner length); the new dims, innermost first,
 *               must tile every chunk exactly, and get strides chunk stride * product of
 *               the new lengths inside them.  A new dim that straddles two chunks means
 *               the reshape is not a strided view: the graph is no rearrange (it needs an
 *               index computation with a division, which the generic kernel does).
 *
 * PAD (it writes zeros), casts, arithmetic and reductions end the recognition with a
 * reason; so do sizes or strides that are unbound symbols.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sched/rearrange.h"

/* A strided view of a buffer's storage. */
typedef struct view {
	int ndim;				/* rank */
	int64_t len[TINYC_MAX_RANK];		/* lengths */
	int64_t st[TINYC_MAX_RANK];		/* strides, elements */
	int64_t offset;				/* element 0's offset in the storage */
} view;

/* Append "[a,b,c]" to b. */
static void put_list(tinyc_buf *b, int n, const int64_t *v)
{
	tinyc_buf_putc(b, '[');
	for (int i = 0; i < n; i++)
		tinyc_buf_printf(b, "%s%" PRId64, i ? "," : "", v[i]);
	tinyc_buf_putc(b, ']');
}

/* Record the reason recognition stopped at node u (when why is wanted); returns 0. */
static int not_rearrange(tinyc_buf *why, const tinyc_graph *g, int u, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int not_rearrange(tinyc_buf *why, const tinyc_graph *g, int u, const char *fmt, ...)
{
	if (!why)
		return 0;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (u >= 0)
		tinyc_buf_printf(why, "%%%s = %s: %s", g->nodes[u].id,
				 tinyc_op_info(g->nodes[u].op)->name, msg);
	else
		tinyc_buf_puts(why, msg);
	return 0;
}

/* The value of a size under b, or -1 when it is an unbound symbol. */
static int64_t dimval(const tinyc_dim *d, const tinyc_bindings *b)
{
	return tinyc_dim_value(d, b);
}

/* The lengths of node u into len[]; 0 (with a reason) when a symbol is unbound. */
static int node_lengths(const tinyc_graph *g, const tinyc_bindings *b, int u, int64_t *len,
			tinyc_buf *why)
{
	const tinyc_uop *n = &g->nodes[u];
	for (int d = 0; d < n->rank; d++)
		if ((len[d] = dimval(&n->shape[d], b)) < 0)
			return not_rearrange(why, g, u, "dim %d is the unbound symbol %s (bind it to "
					     "get a rearrange kernel)", d, g->syms[n->shape[d].sym]);
	return 1;
}

/* Row-major strides of n lengths (length-1 and 0 dims step like 1). */
static void row_major(int n, const int64_t *len, int64_t *st)
{
	int64_t s = 1;
	for (int d = n - 1; d >= 0; d--) {
		st[d] = s;
		s *= len[d] > 1 ? len[d] : 1;
	}
}

/* Explicit strides of a BUFFER or OUTPUT node (or row-major when it has none) into st. */
static int node_strides(const tinyc_graph *g, const tinyc_bindings *b, int u, const int64_t *len,
			int64_t *st, tinyc_buf *why)
{
	const tinyc_uop *n = &g->nodes[u];
	if (!n->strides) {
		row_major(n->rank, len, st);
		return 1;
	}
	for (int d = 0; d < n->rank; d++)
		if ((st[d] = dimval(&n->strides[d], b)) < 0)
			return not_rearrange(why, g, u, "stride %d is the unbound symbol %s", d,
					     g->syms[n->strides[d].sym]);
	return 1;
}

/* RESHAPE of view v to the lengths nl[0..nr): see the file comment.  Returns 1 with the
 * new view in *out, or 0 with the reason. */
static int reshape_view(const tinyc_graph *g, int u, const view *v, int nr, const int64_t *nl,
			view *out, tinyc_buf *why)
{
	out->ndim = nr;
	out->offset = v->offset;
	memcpy(out->len, nl, sizeof(int64_t) * (size_t)nr);
	int j = nr - 1;			/* next new dim to place, innermost first */
	int i = v->ndim - 1;		/* next old dim to group */
	for (;;) {
		while (i >= 0 && v->len[i] == 1)
			i--;
		if (i < 0)
			break;
		/* one chunk: old dims first..last (non-1 ones contiguous in each other) */
		int last = i, inner = i;
		int64_t clen = v->len[i], cst = v->st[i];
		for (i--; i >= 0; i--) {
			if (v->len[i] == 1)
				continue;
			if (v->st[i] != v->st[inner] * v->len[inner])
				break;
			clen *= v->len[i];
			inner = i;
		}
		int first = inner;
		int64_t prod = 1;
		int jlast = j;
		while (j >= 0 && prod < clen) {
			out->st[j] = cst * prod;
			prod *= nl[j];
			j--;
		}
		if (prod != clen) {
			if (!why)
				return 0;
			tinyc_buf lb = {0}, sb = {0}, nb = {0};
			put_list(&lb, v->ndim, v->len);
			put_list(&sb, v->ndim, v->st);
			put_list(&nb, nr, nl);
			not_rearrange(why, g, u, "%s with strides %s to %s is not a strided view: new "
				      "dims %d..%d (%" PRId64 " elements) do not tile old dims %d..%d "
				      "(%" PRId64 " elements, the largest run contiguous in itself)",
				      lb.data, sb.data, nb.data, j + 1, jlast, prod, first, last, clen);
			tinyc_buf_free(&lb);
			tinyc_buf_free(&sb);
			tinyc_buf_free(&nb);
			return 0;
		}
	}
	for (; j >= 0; j--)	/* what is left is length 1 (the element counts agree) */
		out->st[j] = 0;
	return 1;
}

/* Collect the chain from `value` down to its source (a BUFFER, or a node with is_source
 * set): chain[0] = value ... chain[n-1] = source.  Returns n, or 0 with the reason (a node
 * that is no movement; *movement_only then says whether only movement ops were seen). */
static int collect_chain(const tinyc_graph *g, int value, const unsigned char *is_source,
			 int *chain, tinyc_buf *why, int *movement_only)
{
	int n = 0, u = value;
	*movement_only = 1;
	for (;;) {
		chain[n++] = u;
		const tinyc_uop *x = &g->nodes[u];
		if (x->op == TINYC_OP_BUFFER || (is_source && is_source[u]))
			return n;
		if (x->op == TINYC_OP_PAD)
			return not_rearrange(why, g, u, "PAD fills zeros, which is not a pure movement");
		if (tinyc_op_info(x->op)->kind != TINYC_KIND_MOVEMENT) {
			*movement_only = 0;
			return not_rearrange(why, g, u, "not a movement op");
		}
		u = x->src[0];
	}
}

/* Compose the chain (chain[n-1] is the source) into one view of the source's storage. */
static int compose(const tinyc_graph *g, const tinyc_bindings *b, const int *chain, int n,
		   view *v, tinyc_buf *why)
{
	int src = chain[n - 1];
	const tinyc_uop *s = &g->nodes[src];
	v->ndim = s->rank;
	v->offset = 0;
	if (!node_lengths(g, b, src, v->len, why))
		return 0;
	if (s->op == TINYC_OP_BUFFER) {
		if (!node_strides(g, b, src, v->len, v->st, why))
			return 0;
	} else {
		row_major(v->ndim, v->len, v->st);
	}
	for (int c = n - 2; c >= 0; c--) {
		int u = chain[c];
		const tinyc_uop *x = &g->nodes[u];
		int64_t len[TINYC_MAX_RANK];
		if (!node_lengths(g, b, u, len, why))
			return 0;
		view w = *v;
		switch (x->op) {
		case TINYC_OP_CONTIGUOUS:
			break;
		case TINYC_OP_PERMUTE:
			for (int d = 0; d < x->rank; d++) {
				w.len[d] = v->len[x->axes[d]];
				w.st[d] = v->st[x->axes[d]];
			}
			break;
		case TINYC_OP_EXPAND:
			for (int d = 0; d < x->rank; d++)
				if (v->len[d] != len[d]) {
					w.len[d] = len[d];
					w.st[d] = 0;
				}
			break;
		case TINYC_OP_SHRINK:
			for (int d = 0; d < x->rank; d++) {
				w.offset += x->pairs[d][0] * v->st[d];
				w.len[d] = x->pairs[d][1] - x->pairs[d][0];
			}
			break;
		case TINYC_OP_FLIP:
			for (int a = 0; a < x->naxes; a++) {
				int d = (int)(x->axes[a] < 0 ? x->axes[a] + x->rank : x->axes[a]);
				w.offset += (v->len[d] - 1) * v->st[d];
				w.st[d] = -v->st[d];
			}
			break;
		case TINYC_OP_RESHAPE:
			if (!reshape_view(g, u, v, x->rank, len, &w, why))
				return 0;
			break;
		default:
			return not_rearrange(why, g, u, "not a movement op");
		}
		w.ndim = x->rank;
		for (int d = 0; d < x->rank; d++)
			if (w.len[d] != len[d])
				return not_rearrange(why, g, u, "internal: composed length %" PRId64
						     " of dim %d differs from the node's %" PRId64,
						     w.len[d], d, len[d]);
		*v = w;
	}
	return 1;
}

/* Recognise the value `value` (see rearrange.h). */
int tinyc_rearrange_recognize_value(const tinyc_graph *g, const tinyc_bindings *b, int value,
				    const unsigned char *is_source, const int64_t *ys,
				    tinyc_rearrange_copy *c, tinyc_buf *why)
{
	int *chain = malloc(sizeof(int) * (size_t)(g->n + 1));
	if (!chain)
		return not_rearrange(why, g, -1, "out of memory");
	int movement_only;
	int n = collect_chain(g, value, is_source, chain, why, &movement_only);
	view v;
	int ok = n > 0 && compose(g, b, chain, n, &v, why);
	int src = n > 0 ? chain[n - 1] : -1;
	free(chain);
	if (!ok)
		return 0;
	memset(c, 0, sizeof(*c));
	c->value = value;
	c->src = src;
	c->dtype = g->nodes[value].dtype;
	c->ndim = v.ndim;
	memcpy(c->shape, v.len, sizeof(int64_t) * (size_t)v.ndim);
	memcpy(c->xs, v.st, sizeof(int64_t) * (size_t)v.ndim);
	c->x_offset = v.offset;
	if (ys)
		memcpy(c->ys, ys, sizeof(int64_t) * (size_t)v.ndim);
	else
		row_major(v.ndim, v.len, c->ys);
	if (g->nodes[src].dtype != c->dtype)
		return not_rearrange(why, g, src, "its dtype %s differs from the stored %s",
				     tinyc_dtype_name(g->nodes[src].dtype), tinyc_dtype_name(c->dtype));
	return 1;
}

/* Recognise OUTPUT node `output` (see rearrange.h). */
int tinyc_rearrange_recognize(const tinyc_graph *g, const tinyc_bindings *b, int output,
			      tinyc_rearrange_copy *c, tinyc_buf *why)
{
	if (output < 0 || output >= g->n || g->nodes[output].op != TINYC_OP_OUTPUT)
		return not_rearrange(why, g, -1, "node %d is not an OUTPUT", output);
	int64_t len[TINYC_MAX_RANK], ys[TINYC_MAX_RANK];
	if (!node_lengths(g, b, output, len, why) || !node_strides(g, b, output, len, ys, why))
		return 0;
	return tinyc_rearrange_recognize_value(g, b, g->nodes[output].src[0], NULL, ys, c, why);
}

/* ------------------------------------------------------------------ provider ---- */

/* What kernel k of s stores, as a rearrange: 1 with *c and *x_buf; 0 with the reason (and
 * *movement_only: whether the value is a chain of movement ops at all). */
static int kernel_copy(const tinyc_schedule *s, const tinyc_skernel *k, tinyc_rearrange_copy *c,
		       int *x_buf, tinyc_buf *why, int *movement_only)
{
	const tinyc_graph *g = s->g;
	*movement_only = 0;
	unsigned char *is_source = calloc((size_t)g->n + 1, 1);
	int *chain = malloc(sizeof(int) * (size_t)(g->n + 1));
	if (!is_source || !chain) {
		free(is_source);
		free(chain);
		return not_rearrange(why, g, -1, "out of memory");
	}
	for (int i = 0; i < g->n; i++)
		is_source[i] = s->node_buf[i] >= 0 && i != k->root;
	int r = collect_chain(g, k->value, is_source, chain, NULL, movement_only) > 0;
	free(chain);
	if (!r) {
		free(is_source);
		return 0;
	}
	const tinyc_sbuf *yb = &s->bufs[k->out_buf];
	int64_t len[TINYC_MAX_RANK], ys[TINYC_MAX_RANK];
	r = node_lengths(g, s->bind, k->value, len, why);
	if (r && yb->has_strides) {
		for (int d = 0; d < yb->rank && r; d++)
			if ((ys[d] = dimval(&yb->strides[d], s->bind)) < 0)
				r = not_rearrange(why, g, yb->node, "stride %d is an unbound symbol", d);
	} else if (r) {
		row_major(g->nodes[k->value].rank, len, ys);
	}
	if (r)
		r = tinyc_rearrange_recognize_value(g, s->bind, k->value, is_source, ys, c, why);
	free(is_source);
	if (!r)
		return 0;
	*x_buf = s->node_buf[c->src];
	const tinyc_sbuf *xb = &s->bufs[*x_buf];
	if (xb->dtype != c->dtype || yb->dtype != c->dtype)
		return not_rearrange(why, g, -1, "buffer %s holds %s and %s holds %s: a conversion, "
				     "not a pure movement", xb->name, tinyc_dtype_name(xb->dtype),
				     yb->name, tinyc_dtype_name(yb->dtype));
	return 1;
}

/* The planner options of a kernel: the device's block limit, the alignment the view
 * offsets leave of cudaMalloc's 256 bytes, and kernels only (no COPY plans). */
static void kernel_opts(const tinyc_schedule *s, const tinyc_rearrange_copy *c,
			tinyc_rearrange_opts *o)
{
	tinyc_rearrange_opts_default(o);
	if (s->dev.max_threads_per_block > 0)
		o->max_threads = s->dev.max_threads_per_block;
	int e = tinyc_dtype_size(c->dtype);
	uint64_t a = 256 | (uint64_t)(c->x_offset * e) | (uint64_t)(c->y_offset * e);
	o->base_align = (int)(a & -a);
	o->no_copy = 1;
}

/* One candidate from a plan of kind `want` (forced; tiled: with `repeat` words per thread
 * per row, or 0 for whatever the cost model prefers), or nothing when it does not apply or
 * (repeat 0) the cost model prefers repeat 1. */
static int add_candidate(tinyc_ctx *ctx, tinyc_schedule *s, tinyc_skernel *k,
			 const tinyc_rearrange_copy *c, int x_buf, tinyc_rearrange_force want,
			 int repeat)
{
	tinyc_rearrange_opts o;
	kernel_opts(s, c, &o);
	o.force = want;
	o.tile_repeat = repeat;
	tinyc_tensor_desc y = {c->dtype, c->ndim, c->shape, c->ys};
	tinyc_tensor_desc x = {c->dtype, c->ndim, c->shape, c->xs};
	tinyc_rearrange_kplan *kp = tinyc_calloc(ctx, 1, sizeof(*kp));
	if (!kp)
		return -1;
	if (tinyc_rearrange_plan_build(NULL, &y, &x, &o, &kp->plan) != TINYC_REARRANGE_SUCCESS ||
	    (kp->plan.kind != TINYC_REARRANGE_ELEMENTWISE && kp->plan.kind != TINYC_REARRANGE_TILED) ||
	    (want == TINYC_REARRANGE_FORCE_TILED && !repeat && kp->plan.repeat != 2)) {
		free(kp);
		return 0;
	}
	kp->copy = *c;
	kp->x_buf = x_buf;
	kp->y_buf = k->out_buf;
	const tinyc_rearrange_plan *rp = &kp->plan;
	const tinyc_rearrange_cost *cost = rp->kind == TINYC_REARRANGE_TILED ? &rp->cost_tiled
									     : &rp->cost_elementwise;
	tinyc_plan p = {0};
	p.kind = TINYC_PLAN_REARRANGE;
	p.index_dtype = rp->index_bits == 32 ? TINYC_INT : TINYC_LONG;
	p.block[0] = rp->kind == TINYC_REARRANGE_TILED ? rp->tx : (int)rp->threads;
	p.block[1] = rp->kind == TINYC_REARRANGE_TILED ? rp->ty : 1;
	p.block[2] = 1;
	/* the ideal is one read and one write of every byte, in whole sectors */
	double ideal = 2.0 * (double)rp->numel * rp->elem;
	p.eff = cost->cost > 0 ? ideal / 32.0 / cost->cost : 1.0;
	if (p.eff > 1.0)
		p.eff = 1.0;
	p.est_us = tinyc_plan_estimate_us(s, 0, cost->cost * 32.0, 1.0);
	if (rp->kind == TINYC_REARRANGE_TILED)
		snprintf(p.desc, sizeof(p.desc), "rearrange tiled%s: tile %dx%d, pack %d, %lld "
			 "blocks of %dx%d, cost %.1f", rp->repeat > 1 ? " x2" : "", rp->tile, rp->tile,
			 rp->pack, (long long)rp->blocks, rp->tx, rp->ty, cost->cost);
	else
		snprintf(p.desc, sizeof(p.desc), "rearrange elementwise: unit %d bytes, %lld blocks "
			 "of %lld, cost %.1f", rp->unit, (long long)rp->blocks,
			 (long long)rp->threads, cost->cost);
	p.ext = kp;
	p.ext_free = free;
	if (tinyc_plan_add(ctx, k, &p) < 0) {
		free(kp);
		return -1;
	}
	return 1;
}

/* The provider: rearrange candidates for a pure movement kernel, replacing the generic
 * ones. */
static int rearrange_propose(tinyc_ctx *ctx, tinyc_schedule *s, tinyc_skernel *k)
{
	for (int i = 0; i < k->ncand; i++)	/* another template took the kernel over */
		if (k->cands[i].kind != TINYC_PLAN_MAP && k->cands[i].kind != TINYC_PLAN_ROWRED)
			return 0;
	tinyc_rearrange_copy c;
	int x_buf, movement_only;
	if (!kernel_copy(s, k, &c, &x_buf, NULL, &movement_only))
		return 0;
	/* keep the generic candidates until one rearrange plan is known to exist */
	int keep = k->ncand;
	int ne = add_candidate(ctx, s, k, &c, x_buf, TINYC_REARRANGE_FORCE_ELEMENTWISE, 0);
	int nt = ne < 0 ? -1 : add_candidate(ctx, s, k, &c, x_buf, TINYC_REARRANGE_FORCE_TILED, 1);
	int n2 = nt < 0 ? -1 : add_candidate(ctx, s, k, &c, x_buf, TINYC_REARRANGE_FORCE_TILED, 0);
	if (ne < 0 || nt < 0 || n2 < 0)
		return -1;
	if (ne + nt + n2 == 0)
		return 0;
	for (int i = 0; i < keep; i++)
		if (k->cands[i].ext_free)
			k->cands[i].ext_free(k->cands[i].ext);
	memmove(k->cands, k->cands + keep, sizeof(*k->cands) * (size_t)(k->ncand - keep));
	k->ncand -= keep;
	return 0;
}

const tinyc_plan_provider tinyc_plan_rearrange = {
	"rearrange", rearrange_propose, NULL, NULL, tinyc_rearrange_schedule_print, NULL,
};

/* Append every line of text to out, indented by `indent` spaces. */
static void put_indented(tinyc_buf *out, const char *text, int indent)
{
	while (text && *text) {
		const char *nl = strchr(text, '\n');
		size_t n = nl ? (size_t)(nl - text) : strlen(text);
		tinyc_buf_printf(out, "%*s%.*s\n", indent, "", (int)n, text);
		text += n + (nl != NULL);
	}
}

/* Schedule dump lines of kernel k (see rearrange.h). */
void tinyc_rearrange_schedule_print(const tinyc_schedule *s, const tinyc_skernel *k,
				    tinyc_buf *out)
{
	const tinyc_graph *g = s->g;
	const tinyc_plan *p = tinyc_skernel_plan(k);
	if (p && p->kind == TINYC_PLAN_REARRANGE && p->ext) {
		const tinyc_rearrange_kplan *kp = p->ext;
		const tinyc_rearrange_copy *c = &kp->copy;
		tinyc_buf_printf(out, "  rearrange %s <- %%%s: shape ", s->bufs[kp->y_buf].name,
				 g->nodes[c->src].id);
		put_list(out, c->ndim, c->shape);
		tinyc_buf_puts(out, ", y strides ");
		put_list(out, c->ndim, c->ys);
		tinyc_buf_printf(out, " offset %" PRId64 ", x (%s) strides ", c->y_offset,
				 s->bufs[kp->x_buf].name);
		put_list(out, c->ndim, c->xs);
		tinyc_buf_printf(out, " offset %" PRId64 "\n", c->x_offset);
		tinyc_buf text = {0};
		tinyc_rearrange_plan_print(&kp->plan, &text);
		put_indented(out, text.data, 2);
		tinyc_buf_free(&text);
		return;
	}
	if (p && p->kind != TINYC_PLAN_MAP && p->kind != TINYC_PLAN_ROWRED)
		return;	/* another template took the kernel over */
	tinyc_rearrange_copy c;
	tinyc_buf why = {0};
	int x_buf, movement_only;
	int r = kernel_copy(s, k, &c, &x_buf, &why, &movement_only);
	if (!movement_only) {
		tinyc_buf_free(&why);
		return;
	}
	if (r) {	/* recognised, but no plan: the planner says why */
		tinyc_ctx *quiet = tinyc_ctx_alloc();
		tinyc_rearrange_opts o;
		kernel_opts(s, &c, &o);
		tinyc_tensor_desc y = {c.dtype, c.ndim, c.shape, c.ys};
		tinyc_tensor_desc x = {c.dtype, c.ndim, c.shape, c.xs};
		tinyc_rearrange_plan plan;
		if (quiet && tinyc_rearrange_plan_build(quiet, &y, &x, &o, &plan) &&
		    tinyc_ctx_diag_count(quiet) > 0)
			tinyc_buf_printf(&why, "%s: %s", tinyc_ctx_diag(quiet, 0)->kind,
					 tinyc_ctx_diag(quiet, 0)->msg);
		else
			tinyc_buf_puts(&why, "no rearrange plan applies");
		tinyc_ctx_free(quiet);
	}
	tinyc_buf_printf(out, "  rearrange: not applicable: %s\n", why.data ? why.data : "?");
	tinyc_buf_free(&why);
}
