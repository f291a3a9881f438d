/* The producers a contraction must not recompute (see lower/lower.h).
 *
 * A contraction is a REDUCE ADD whose operand is, through CASTs and movement, a MUL.  Each
 * operand of that MUL that is broadcast (an EXPAND of a real dim, or a smaller shape the
 * MUL broadcasts) is read once per k step by every output element it is broadcast to.
 * Walking down from the operand through movement (RESHAPE, PERMUTE, EXPAND, SHRINK,
 * FLIP, PAD) and CAST reaches either a leaf (a BUFFER or CONST: the operand is a load,
 * which the templates read with strides and convert on the way) or a computed value
 * (elementwise, REDUCE, CONTIGUOUS).  Then the operand below its deepest broadcast (and
 * the RESHAPEs that add dims of size 1) is marked, so that nothing stored repeats an
 * element: a computed value, a CAST of one (stored converted), or a view of one (heads
 * split and transposed: stored in the layout the contraction reads, a statement of its own
 * in the Poly-View, copied from the value below it, which is marked too).  A window over a
 * computed value (a convolution's PAD, or an EXPAND inside the view) is not copied: the
 * contraction gathers the value through it (implicit GEMM, sched/conv.c).  The partition
 * stores what is marked in a buffer of its own dtype, and the epilogue extraction stores
 * it from the kernel of the contraction that produces it when it can run there.
 */
#include <stdlib.h>

#include "lower/lower.h"

/* Value of a dim under bindings b (may be NULL), -1 when unknown. */
static int64_t dim_value(const tinyc_dim *d, const tinyc_bindings *b)
{
	if (d->sym < 0)
		return d->val;
	return b ? tinyc_dim_value(d, b) : -1;
}

/* Whether two dims are certainly equal. */
static int dims_same(const tinyc_dim *a, const tinyc_dim *b, const tinyc_bindings *bind)
{
	if (a->sym >= 0 && a->sym == b->sym)
		return 1;
	int64_t va = dim_value(a, bind), vb = dim_value(b, bind);
	return va >= 0 && va == vb;
}

int tinyc_operand_injective(const tinyc_graph *g, const tinyc_bindings *b, int u, int which)
{
	const tinyc_uop *n = &g->nodes[u];
	const tinyc_uop *o = &g->nodes[n->src[which]];
	switch (n->op) {
	case TINYC_OP_EXPAND:
		for (int d = 0; d < n->rank && d < o->rank; d++)
			if (!dims_same(&o->shape[d], &n->shape[d], b))
				return 0;
		return o->rank == n->rank;
	case TINYC_OP_REDUCE:
	case TINYC_OP_RESHAPE:
	case TINYC_OP_PERMUTE:
	case TINYC_OP_PAD:
	case TINYC_OP_SHRINK:
	case TINYC_OP_FLIP:
	case TINYC_OP_CONTIGUOUS:
	case TINYC_OP_OUTPUT:
		return 1;
	default:
		break;
	}
	/* elementwise: right-aligned broadcasting */
	if (o->rank != n->rank)
		return 0;
	for (int d = 0; d < n->rank; d++)
		if (!dims_same(&o->shape[d], &n->shape[d], b))
			return 0;
	return 1;
}

/* Whether op is a view or conversion the contraction templates fold into their loads. */
static int load_like(tinyc_op op)
{
	switch (op) {
	case TINYC_OP_RESHAPE:
	case TINYC_OP_PERMUTE:
	case TINYC_OP_EXPAND:
	case TINYC_OP_SHRINK:
	case TINYC_OP_FLIP:
	case TINYC_OP_PAD:
	case TINYC_OP_CAST:
		return 1;
	default:
		return 0;
	}
}

/* The node below the chain of load-like ops that starts at i. */
static int below_loads(const tinyc_graph *g, int i)
{
	while (load_like(g->nodes[i].op))
		i = g->nodes[i].src[0];
	return i;
}

/* Whether node i is a RESHAPE that only adds or drops dims of size 1. */
static int unit_reshape(const tinyc_graph *g, int i)
{
	const tinyc_uop *u = &g->nodes[i], *o;
	if (u->op != TINYC_OP_RESHAPE)
		return 0;
	o = &g->nodes[u->src[0]];
	int a = 0, b = 0;
	for (;;) {
		while (a < u->rank && u->shape[a].sym < 0 && u->shape[a].val == 1)
			a++;
		while (b < o->rank && o->shape[b].sym < 0 && o->shape[b].val == 1)
			b++;
		if (a == u->rank || b == o->rank)
			return a == u->rank && b == o->rank;
		if (u->shape[a].sym != o->shape[b].sym || (u->shape[a].sym < 0 && u->shape[a].val != o->shape[b].val))
			return 0;
		a++, b++;
	}
}

int tinyc_contraction_mul(const tinyc_graph *g, int r)
{
	const tinyc_uop *u = &g->nodes[r];
	if (u->op != TINYC_OP_REDUCE || u->redop != TINYC_RED_ADD)
		return -1;
	int m = below_loads(g, u->src[0]);
	return g->nodes[m].op == TINYC_OP_MUL ? m : -1;
}

void tinyc_contraction_producers(const tinyc_graph *g, const tinyc_bindings *b,
				 unsigned char *mark)
{
	for (int i = 0; i < g->n; i++)
		mark[i] = 0;
	for (int i = 0; i < g->n; i++) {
		int m = tinyc_contraction_mul(g, i);
		if (m < 0)
			continue;
		for (int j = 0; j < 2; j++) {
			/* p: the operand below its deepest broadcast (an EXPAND, or the MUL's own)
			 * and the RESHAPEs that add dims of size 1: nothing stored repeats an
			 * element.  A view of a computed value (heads transposed) is stored in the
			 * layout the contraction reads, a CAST of one converted. */
			int src = g->nodes[m].src[j], p = -1;
			if (!tinyc_operand_injective(g, b, m, j))
				p = src;
			for (int q = src; load_like(g->nodes[q].op); q = g->nodes[q].src[0])
				if (!tinyc_operand_injective(g, b, q, 0))
					p = g->nodes[q].src[0];
			if (p < 0)
				continue;
			while (unit_reshape(g, p))
				p = g->nodes[p].src[0];
			int leaf = below_loads(g, p);
			tinyc_op op = g->nodes[leaf].op;
			if (op == TINYC_OP_BUFFER || op == TINYC_OP_CONST)
				continue;
			/* a view is copied from its value, which is stored too (by the epilogue
			 * of the contraction that computes it, in its own layout); a window (a
			 * convolution's PAD, or the EXPAND of its overlapping windows) is not
			 * copied: the contraction gathers it from the value (sched/conv.c) */
			int q = p, window = 0;
			while (tinyc_op_info(g->nodes[q].op)->kind == TINYC_KIND_MOVEMENT &&
			       g->nodes[q].op != TINYC_OP_CONTIGUOUS) {
				window |= g->nodes[q].op == TINYC_OP_PAD ||
					  (q != p && g->nodes[q].op == TINYC_OP_EXPAND);
				q = g->nodes[q].src[0];
			}
			if (!window)
				mark[p] = 1;
			mark[q] = 1;
		}
	}
}

/* Whether nodes a and b have the same shape (constants or the same symbols). */
static int same_shape(const tinyc_uop *a, const tinyc_uop *b)
{
	if (a->rank != b->rank)
		return 0;
	for (int d = 0; d < a->rank; d++)
		if (a->shape[d].sym != b->shape[d].sym ||
		    (a->shape[d].sym < 0 && a->shape[d].val != b->shape[d].val))
			return 0;
	return 1;
}

/* Live users of every node (CSR: users of i are ulist[uoff[i]..uoff[i+1]), one entry per
 * operand slot) and whether an OUTPUT reads it.  0, or -1 out of memory. */
typedef struct users {
	int *uoff, *ulist;	/* the lists */
	unsigned char *outsrc;	/* per node: an OUTPUT reads it */
} users;

/* Fill u for g (see users).  0 or -1. */
static int users_build(const tinyc_graph *g, users *u)
{
	unsigned char *live = calloc((size_t)g->n + 1, 1);
	int *fill = calloc((size_t)g->n + 1, sizeof(int));
	u->uoff = calloc((size_t)g->n + 2, sizeof(int));
	u->outsrc = calloc((size_t)g->n + 1, 1);
	int rc = -1;
	if (!live || !fill || !u->uoff || !u->outsrc)
		goto out;
	for (int i = g->n - 1; i >= 0; i--) {	/* backwards from the OUTPUTs */
		live[i] |= g->nodes[i].op == TINYC_OP_OUTPUT;
		for (int j = 0; live[i] && j < g->nodes[i].nsrc; j++) {
			live[g->nodes[i].src[j]] = 1;
			u->uoff[g->nodes[i].src[j] + 1]++;
			u->outsrc[g->nodes[i].src[j]] |= g->nodes[i].op == TINYC_OP_OUTPUT;
		}
	}
	for (int i = 0; i < g->n; i++)
		u->uoff[i + 1] += u->uoff[i];
	if (!(u->ulist = malloc(sizeof(int) * (size_t)(u->uoff[g->n] + 1))))
		goto out;
	for (int i = 0; i < g->n; i++)
		for (int j = 0; live[i] && j < g->nodes[i].nsrc; j++) {
			int o = g->nodes[i].src[j];
			u->ulist[u->uoff[o] + fill[o]++] = i;
		}
	rc = 0;
out:
	free(live), free(fill);
	return rc;
}

/* Whether node u continues an epilogue chain from contraction r: same-shaped elementwise,
 * its operands the chain's value or loads. */
static int chain_op(const tinyc_graph *g, int r, int u, int cur)
{
	const tinyc_uop *un = &g->nodes[u];
	if (tinyc_op_info(un->op)->kind != TINYC_KIND_ELEMENTWISE || !same_shape(un, &g->nodes[r]))
		return 0;
	for (int j = 0; j < un->nsrc; j++) {
		tinyc_op leaf = g->nodes[below_loads(g, un->src[j])].op;
		if (un->src[j] != cur && leaf != TINYC_OP_BUFFER && leaf != TINYC_OP_CONST)
			return 0;
	}
	return 1;
}

/* How many distinct values outside e's elementwise region of same-shaped ops read it
 * (stopping at prod values, which are stored): 2 means at least two.  work, seen:
 * scratch of g->n + 1 entries (seen all zero; left so). */
static int exits(const tinyc_graph *g, const users *us, const unsigned char *prod, int e, int r,
		 int *work, unsigned char *seen)
{
	int nw = 0, nseen = 0, count = 0;
	work[nw++] = e;
	seen[e] = 1;
	int *undo = work + g->n + 1;	/* the nodes seen, to clear them */
	undo[nseen++] = e;
	while (nw > 0 && count < 2) {
		int n = work[--nw];
		for (int k = us->uoff[n]; k < us->uoff[n + 1] && count < 2; k++) {
			int u = us->ulist[k];
			if (seen[u])
				continue;
			seen[u] = 1;
			undo[nseen++] = u;
			const tinyc_uop *un = &g->nodes[u];
			if (!prod[u] && tinyc_op_info(un->op)->kind == TINYC_KIND_ELEMENTWISE &&
			    same_shape(un, &g->nodes[r])) {
				work[nw++] = u;
			} else {
				count++;	/* a new reader outside the region */
			}
		}
	}
	for (int i = 0; i < nseen; i++)
		seen[undo[i]] = 0;
	return count;
}

int tinyc_contraction_store_ends(const tinyc_graph *g, const unsigned char *prod,
				 unsigned char *mark)
{
	users us = {NULL, NULL, NULL};
	int *work = malloc(sizeof(int) * 2 * ((size_t)g->n + 1));
	unsigned char *seen = calloc((size_t)g->n + 1, 1);
	int rc = -1;
	for (int i = 0; i < g->n; i++)
		mark[i] = 0;
	if (!work || !seen || users_build(g, &us) < 0)
		goto out;
	for (int r = 0; r < g->n; r++) {
		if (us.uoff[r] == us.uoff[r + 1] || prod[r] || tinyc_contraction_mul(g, r) < 0)
			continue;
		int cur = r;	/* along single users that continue the chain */
		while (us.uoff[cur + 1] - us.uoff[cur] == 1 && !prod[cur] &&
		       chain_op(g, r, us.ulist[us.uoff[cur]], cur))
			cur = us.ulist[us.uoff[cur]];
		if (cur != r && !prod[cur] && !us.outsrc[cur] && exits(g, &us, prod, cur, r, work, seen) >= 2)
			mark[cur] = 1;
	}
	rc = 0;
out:
	free(us.uoff), free(us.ulist), free(us.outsrc), free(work), free(seen);
	return rc;
}
