/* Partition a UOp graph into kernels (see sched/schedule.h).
 *
 * Rules.  A value is materialised in a buffer when it is
 *   - a BUFFER (an input) or the operand of an OUTPUT (the output buffer itself);
 *   - a CONTIGUOUS, unless its only user is an OUTPUT (then the output is the copy);
 *   - a value a contraction reads with broadcasting that is not a load (a BUFFER or CONST
 *     below movement and CASTs; tinyc_contraction_producers): computed once and stored
 *     in its own dtype, never recomputed inside the contraction's k loop;
 *   - the end of a contraction's epilogue chain that several consumers read (a residual
 *     sum; tinyc_contraction_store_ends): stored once in its own dtype;
 *   - a REDUCE result that cannot be computed inline by the kernel that consumes it.
 * A REDUCE is computed inline (as a loop inside its consumer's statement) when every path
 * from it through its users reaches one and the same materialised value (or REDUCE), and
 * no step broadcasts it (no EXPAND of a real dim, no size-1 operand of a wider
 * elementwise op): then every element of the reduction result is computed exactly once.
 * Otherwise (softmax: the row maximum is broadcast back over the row) it gets its own
 * kernel and a temporary buffer, which is the kernel boundary the consumer needs.
 * Everything else (elementwise ops, movement) is fused into the kernel that consumes it.
 * Kernels are listed in topological order of the values they store, which is a valid
 * launch order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/rowfuse.h"
#include "sched/attention.h"
#include "sched/schedule.h"

int64_t tinyc_sched_dim(const tinyc_schedule *s, const tinyc_dim *d)
{
	if (d->sym < 0)
		return d->val;
	return s->bind ? tinyc_dim_value(d, s->bind) : -1;
}

double tinyc_sched_dim_est(const tinyc_schedule *s, const tinyc_dim *d)
{
	int64_t v = tinyc_sched_dim(s, d);
	return v >= 0 ? (double)v : (double)s->assumed_sym;
}

int tinyc_reduce_axes(const tinyc_graph *g, int node, int *axes)
{
	const tinyc_uop *u = &g->nodes[node];
	const tinyc_uop *in = &g->nodes[u->src[0]];
	int n = 0;
	for (int i = 0; i < u->naxes; i++) {
		int64_t a = u->axes[i] < 0 ? u->axes[i] + in->rank : u->axes[i];
		if (a < 0 || a >= in->rank)
			continue;
		int dup = 0;
		for (int j = 0; j < n; j++)
			dup |= axes[j] == (int)a;
		if (!dup)
			axes[n++] = (int)a;
	}
	for (int i = 1; i < n; i++)	/* sort */
		for (int j = i; j > 0 && axes[j - 1] > axes[j]; j--) {
			int t = axes[j]; axes[j] = axes[j - 1]; axes[j - 1] = t;
		}
	return n;
}

void tinyc_schedule_free(tinyc_schedule *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nbuf; i++)
		free(s->bufs[i].name);
	for (int i = 0; i < s->nkern; i++) {
		tinyc_skernel *k = &s->kerns[i];
		free(k->name);
		free(k->reds);
		free(k->in_bufs);
		for (int c = 0; c < k->ncand; c++)
			if (k->cands[c].ext_free)
				k->cands[c].ext_free(k->cands[c].ext);
		free(k->cands);
	}
	free(s->bufs);
	free(s->kerns);
	free(s->node_buf);
	free(s->node_kernel);
	tinyc_rowfuse_free(s->rowfuse);
	free(s);
}

/* Append a buffer for node `node`; returns its index or -1. */
static int add_buf(tinyc_ctx *ctx, tinyc_schedule *s, tinyc_sbuf_role role, int index, int node,
		   const char *name, tinyc_dtype dt)
{
	tinyc_sbuf *nb = tinyc_realloc(ctx, s->bufs, sizeof(*nb) * (size_t)(s->nbuf + 1));
	if (!nb)
		return -1;
	s->bufs = nb;
	tinyc_sbuf *b = &nb[s->nbuf];
	memset(b, 0, sizeof(*b));
	const tinyc_uop *u = &s->g->nodes[node];
	b->role = role;
	b->index = index;
	b->node = node;
	b->dtype = dt;
	b->rank = u->rank;
	for (int d = 0; d < u->rank; d++)
		b->shape[d] = u->shape[d];
	if (u->strides && (u->op == TINYC_OP_BUFFER || u->op == TINYC_OP_OUTPUT)) {
		b->has_strides = 1;
		for (int d = 0; d < u->rank; d++)
			b->strides[d] = u->strides[d];
	}
	if (!(b->name = tinyc_strdup(ctx, name)))
		return -1;
	return s->nbuf++;
}

/* State of one partition run. */
typedef struct part {
	tinyc_ctx *ctx;
	tinyc_schedule *s;
	const tinyc_graph *g;
	int *nusers;		/* per node: operand slots that use it (live users only) */
	int *user;		/* per node: its last user */
	unsigned char *live;	/* per node: reaches an OUTPUT */
	unsigned char *mat;	/* per node: materialised */
	unsigned char *seen;	/* scratch for traversals */
	unsigned char *prod;	/* per node: a contraction's producer (materialised) */
	unsigned char *own;	/* per node: an epilogue chain's end several consumers read */
	int *uoff;		/* per node: start of its live users in ulist (n + 1 entries) */
	int *ulist;		/* live users, one entry per operand slot */
	int *stack;		/* scratch work list (n entries) */
} part;

/* Decide whether live REDUCE r is materialised (see the rules at the top): a walk over
 * r's users with an explicit work list, stopping at materialised values, OUTPUTs and
 * REDUCEs, which must all be one node. */
static int reduce_needs_buffer(part *p, int r)
{
	const tinyc_graph *g = p->g;
	memset(p->seen, 0, (size_t)g->n);
	int top = 0, target = -1;
	p->stack[top++] = r;
	p->seen[r] = 1;
	while (top > 0) {
		int cur = p->stack[--top];
		if (p->uoff[cur] == p->uoff[cur + 1])
			return 1;
		for (int e = p->uoff[cur]; e < p->uoff[cur + 1]; e++) {
			int u = p->ulist[e];
			const tinyc_uop *un = &g->nodes[u];
			for (int which = 0; which < un->nsrc; which++)
				if (un->src[which] == cur &&
				    !tinyc_operand_injective(g, p->s->bind, u, which))
					return 1;
			if (un->op == TINYC_OP_OUTPUT || un->op == TINYC_OP_REDUCE || p->mat[u]) {
				if (target >= 0 && target != u)
					return 1;
				target = u;
				continue;
			}
			if (!p->seen[u]) {
				p->seen[u] = 1;
				p->stack[top++] = u;
			}
		}
	}
	return 0;
}

/* One node of collect's walk: record a materialised input, or a REDUCE and the flops of
 * node i.  1 when the walk goes on into i's operands (with *mult updated), 0 when not,
 * -1 on failure. */
static int collect_node(part *p, tinyc_skernel *k, int i, double *mult, int top)
{
	tinyc_schedule *s = p->s;
	const tinyc_uop *u = &p->g->nodes[i];
	if (!top && s->node_buf[i] >= 0) {
		int b = s->node_buf[i];
		for (int j = 0; j < k->nin; j++)
			if (k->in_bufs[j] == b)
				return 0;
		int *ni = tinyc_realloc(p->ctx, k->in_bufs, sizeof(int) * (size_t)(k->nin + 1));
		if (!ni)
			return -1;
		k->in_bufs = ni;
		ni[k->nin++] = b;
		return 0;
	}
	if (p->seen[i])
		return 0;
	p->seen[i] = 1;
	if (u->op == TINYC_OP_REDUCE) {
		int *nr = tinyc_realloc(p->ctx, k->reds, sizeof(int) * (size_t)(k->nred + 1));
		if (!nr)
			return -1;
		k->reds = nr;
		nr[k->nred++] = i;
		s->node_kernel[i] = (int)(k - s->kerns);
		const tinyc_uop *in = &p->g->nodes[u->src[0]];
		int axes[TINYC_MAX_RANK], na = tinyc_reduce_axes(p->g, i, axes);
		double ext = 1;
		for (int a = 0; a < na; a++)
			ext *= tinyc_sched_dim_est(s, &in->shape[axes[a]]);
		if (ext > k->red_elems)
			k->red_elems = ext;
		*mult *= ext;
		k->flops += *mult;
		if (na && axes[na - 1] == in->rank - 1 && in->rank > 0 &&
		    tinyc_sched_dim_est(s, &in->shape[in->rank - 1]) > 1)
			k->contig_red = 1;
	} else if (tinyc_op_info(u->op)->kind == TINYC_KIND_ELEMENTWISE &&
		   u->op != TINYC_OP_CAST && u->op != TINYC_OP_BITCAST) {
		k->flops += *mult;
	}
	return 1;
}

/* Collect what kernel k reads and which REDUCEs it computes inline: a depth-first walk
 * from node root that stops at materialised values.  The walk keeps its own stack (graph
 * depth is unbounded) and pops operands in the order a recursive pre-order walk visits
 * them, so the kernel's inputs come out in the same order. */
static int collect(part *p, tinyc_skernel *k, int root, int top)
{
	struct { int node; double mult; } *st;
	int n = 0, cap = 64, rc = 0;
	if (!(st = tinyc_malloc(p->ctx, sizeof(*st) * (size_t)cap)))
		return -1;
	st[n].node = root;
	st[n++].mult = 1;
	while (n > 0) {
		int i = st[--n].node;
		double mult = st[n].mult;
		int go = collect_node(p, k, i, &mult, top && i == root);
		if (go < 0) {
			rc = -1;
			break;
		}
		const tinyc_uop *u = &p->g->nodes[i];
		if (!go || u->nsrc == 0)
			continue;
		if (n + u->nsrc > cap) {
			void *ns = tinyc_realloc(p->ctx, st, sizeof(*st) * (size_t)cap * 2);
			if (!ns) {
				rc = -1;
				break;
			}
			st = ns;
			cap *= 2;
		}
		for (int j = u->nsrc - 1; j >= 0; j--) {	/* first operand on top */
			st[n].node = u->src[j];
			st[n++].mult = mult;
		}
	}
	free(st);
	return rc;
}

/* Elements of a buffer's logical shape, with unbound symbols at the assumed value. */
static double buf_elems(const tinyc_schedule *s, const tinyc_sbuf *b)
{
	double n = 1;
	for (int d = 0; d < b->rank; d++)
		n *= tinyc_sched_dim_est(s, &b->shape[d]);
	return n;
}

/* Add the kernel that stores root's value. */
static int add_kernel(part *p, int root)
{
	tinyc_schedule *s = p->s;
	const tinyc_graph *g = p->g;
	const tinyc_uop *r = &g->nodes[root];
	tinyc_skernel *nk = tinyc_realloc(p->ctx, s->kerns, sizeof(*nk) * (size_t)(s->nkern + 1));
	if (!nk)
		return -1;
	s->kerns = nk;
	tinyc_skernel *k = &nk[s->nkern];
	memset(k, 0, sizeof(*k));
	int ki = s->nkern++;
	k->root = root;
	k->value = r->op == TINYC_OP_OUTPUT ? r->src[0] : root;
	k->out_buf = s->node_buf[root];
	k->red_elems = 1;
	char *name;
	if (r->op == TINYC_OP_OUTPUT)
		name = tinyc_asprintf("k%d_%s", ki, r->name ? r->name : "out");
	else if (r->op == TINYC_OP_REDUCE)
		name = tinyc_asprintf("k%d_reduce_%s", ki, tinyc_redop_name(r->redop));
	else
		name = tinyc_asprintf("k%d_%s", ki, tinyc_op_info(r->op)->name);
	if (!name)
		return tinyc_error(p->ctx, "OutOfMemory", "kernel name");
	for (char *c = name; *c; c++)
		if (*c >= 'A' && *c <= 'Z' && r->op != TINYC_OP_OUTPUT)
			*c = (char)(*c - 'A' + 'a');
	k->name = name;
	memset(p->seen, 0, (size_t)g->n);
	/* the value itself may be materialised elsewhere (OUTPUT of a REDUCE with other
	 * users): then the kernel copies it */
	int top = s->node_buf[k->value] < 0 || k->value == root;
	if (k->value == root)
		s->node_kernel[root] = ki;
	if (collect(p, k, k->value, top) < 0)
		return -1;
	const tinyc_uop *v = &g->nodes[k->value];
	k->out_elems = 1;
	for (int d = 0; d < v->rank; d++)
		k->out_elems *= tinyc_sched_dim_est(s, &v->shape[d]);
	k->flops *= k->out_elems;
	k->bytes = buf_elems(s, &s->bufs[k->out_buf]) * tinyc_dtype_size(s->bufs[k->out_buf].dtype);
	for (int j = 0; j < k->nin; j++) {
		const tinyc_sbuf *b = &s->bufs[k->in_bufs[j]];
		k->bytes += buf_elems(s, b) * tinyc_dtype_size(b->dtype);
	}
	return 0;
}

/* Why node i, which a kernel stores, is a kernel boundary (for the dump). */
static const char *boundary_why(const part *p, int i)
{
	const tinyc_uop *u = &p->g->nodes[i];
	if (u->op == TINYC_OP_OUTPUT)
		return "a graph output";
	if (p->prod[i])
		return "a contraction reads it with broadcasting: computed once, not per k step";
	if (p->own[i])
		return "a contraction's epilogue result that several consumers read: stored once";
	if (u->op == TINYC_OP_REDUCE)
		return "a reduction its consumers broadcast or share";
	if (u->op == TINYC_OP_CONTIGUOUS)
		return "CONTIGUOUS with several users";
	return "materialised";
}

/* Free the scratch arrays of a partition run. */
static void part_free(part *p)
{
	free(p->nusers), free(p->user), free(p->live), free(p->mat), free(p->seen);
	free(p->prod), free(p->own), free(p->uoff), free(p->ulist), free(p->stack);
}

tinyc_schedule *tinyc_partition(tinyc_ctx *ctx, const tinyc_graph *g, const tinyc_bindings *b)
{
	return tinyc_partition_fused(ctx, g, b, NULL, NULL);
}

tinyc_schedule *tinyc_partition_fused(tinyc_ctx *ctx, const tinyc_graph *g,
				      const tinyc_bindings *b, const unsigned char *fuse,
				      const tinyc_sched_options *opts)
{
	tinyc_schedule *s = tinyc_calloc(ctx, 1, sizeof(*s));
	if (!s)
		return NULL;
	s->g = g;
	s->bind = b;
	s->assumed_sym = 1024;
	part p = {ctx, s, g, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
	size_t n = (size_t)g->n + 1;
	s->node_buf = tinyc_malloc(ctx, sizeof(int) * n);
	s->node_kernel = tinyc_malloc(ctx, sizeof(int) * n);
	p.nusers = tinyc_calloc(ctx, n, sizeof(int));
	p.user = tinyc_calloc(ctx, n, sizeof(int));
	p.live = tinyc_calloc(ctx, n, 1);
	p.mat = tinyc_calloc(ctx, n, 1);
	p.seen = tinyc_calloc(ctx, n, 1);
	p.prod = tinyc_calloc(ctx, n, 1);
	p.own = tinyc_calloc(ctx, n, 1);
	p.uoff = tinyc_calloc(ctx, n + 1, sizeof(int));
	p.stack = tinyc_calloc(ctx, n, sizeof(int));
	if (!s->node_buf || !s->node_kernel || !p.nusers || !p.user || !p.live || !p.mat || !p.seen ||
	    !p.prod || !p.own || !p.uoff || !p.stack)
		goto fail;
	for (int i = 0; i < g->n; i++)
		s->node_buf[i] = s->node_kernel[i] = -1;

	/* liveness: backwards from the OUTPUTs */
	for (int i = g->n - 1; i >= 0; i--) {
		const tinyc_uop *u = &g->nodes[i];
		if (u->op == TINYC_OP_OUTPUT)
			p.live[i] = 1;
		if (!p.live[i])
			continue;
		for (int j = 0; j < u->nsrc; j++) {
			p.live[u->src[j]] = 1;
			p.nusers[u->src[j]]++;
			p.user[u->src[j]] = i;
		}
	}
	/* the live users of every node, one entry per operand slot */
	for (int i = 0; i < g->n; i++)
		p.uoff[i + 1] = p.uoff[i] + p.nusers[i];
	if (!(p.ulist = tinyc_malloc(ctx, sizeof(int) * (size_t)(p.uoff[g->n] + 1))))
		goto fail;
	for (int i = 0; i < g->n; i++)
		p.stack[i] = p.uoff[i];
	for (int i = 0; i < g->n; i++)
		for (int j = 0; p.live[i] && j < g->nodes[i].nsrc; j++)
			p.ulist[p.stack[g->nodes[i].src[j]]++] = i;

	/* inputs, by slot (every BUFFER, live or not, so slots line up with the io) */
	int maxslot = -1;
	for (int i = 0; i < g->n; i++)
		if (g->nodes[i].op == TINYC_OP_BUFFER && g->nodes[i].slot > maxslot)
			maxslot = (int)g->nodes[i].slot;
	for (int slot = 0; slot <= maxslot; slot++)
		for (int i = 0; i < g->n; i++) {
			const tinyc_uop *u = &g->nodes[i];
			if (u->op != TINYC_OP_BUFFER || u->slot != slot)
				continue;
			p.mat[i] = 1;
			if ((s->node_buf[i] = add_buf(ctx, s, TINYC_SB_INPUT, slot, i, u->name, u->dtype)) < 0)
				goto fail;
		}

	/* what contractions read with broadcasting is computed once; so is the end of an
	 * epilogue chain several consumers read (a residual sum), in its own dtype */
	tinyc_contraction_producers(g, b, p.prod);
	if (tinyc_contraction_store_ends(g, p.prod, p.own) < 0)
		goto fail;
	for (int i = 0; i < g->n; i++)
		if (p.live[i] && (p.prod[i] || p.own[i]))
			p.mat[i] = 1;

	/* materialisation decisions, users before operands */
	for (int i = g->n - 1; i >= 0; i--) {
		const tinyc_uop *u = &g->nodes[i];
		if (!p.live[i])
			continue;
		if (p.prod[i] || p.own[i])
			continue;
		if (u->op == TINYC_OP_CONTIGUOUS)
			p.mat[i] = !(p.nusers[i] == 1 && g->nodes[p.user[i]].op == TINYC_OP_OUTPUT);
		else if (u->op == TINYC_OP_REDUCE)	/* row groups (rowfuse.c) stay inline */
			p.mat[i] = (unsigned char)(reduce_needs_buffer(&p, i) && !(fuse && fuse[i]));
	}

	/* attention (sched/attention.c): one kernel computes softmax(Q K^T) V, unless the
	 * options record leaves it to the generic path */
	if (!opts || !opts->no_attention)
		tinyc_attention_claim(g, b, p.live, p.mat);

	/* outputs and temporaries, in graph order */
	int nout = 0, ntemp = 0;
	for (int i = 0; i < g->n; i++) {
		const tinyc_uop *u = &g->nodes[i];
		if (u->op == TINYC_OP_OUTPUT) {
			if ((s->node_buf[i] = add_buf(ctx, s, TINYC_SB_OUTPUT, nout++, i, u->name, u->dtype)) < 0)
				goto fail;
		} else if (p.live[i] && p.mat[i] && u->op != TINYC_OP_BUFFER) {
			char name[32];
			snprintf(name, sizeof(name), "t%d", ntemp);
			/* a CONTIGUOUS of a 16-bit value keeps float32: the reference does not round
			 * there (only a REDUCE result is materialised in 16 bits); a contraction's
			 * operand is stored in its own dtype, which the tensor cores read */
			tinyc_dtype dt = u->dtype;
			if (u->op != TINYC_OP_REDUCE && !p.prod[i] && !p.own[i] &&
			    tinyc_dtype_is_16bit_float(dt))
				dt = TINYC_FLOAT;
			if ((s->node_buf[i] = add_buf(ctx, s, TINYC_SB_TEMP, ntemp++, i, name, dt)) < 0)
				goto fail;
		}
	}

	/* one kernel per stored value, in topological order */
	for (int i = 0; i < g->n; i++) {
		const tinyc_uop *u = &g->nodes[i];
		if (u->op == TINYC_OP_BUFFER || s->node_buf[i] < 0)
			continue;
		if (add_kernel(&p, i) < 0)
			goto fail;
		s->kerns[s->nkern - 1].why = boundary_why(&p, i);
	}
	part_free(&p);
	return s;
fail:
	part_free(&p);
	tinyc_schedule_free(s);
	return NULL;
}
