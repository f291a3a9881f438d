/* Passes on the epilogue graph (ir/evt.h): type propagation with cast insertion, common
 * subexpression elimination, dead-node elimination and a stable topological order.
 *
 * Each pass appends one line per change to the graph's log, in the numbering of the graph
 * as the pass saw it ("types: node 7 = Cast(float) of node 1, operand 1 of node 3"), so a
 * dump shows what every pass did.  tinyc_evt_run_passes runs them in the order
 * types -> cse -> dce -> sort, verifying before and after.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/evt.h"
#include "lower/lower.h"

/* A topological order of g (children first, smallest index first among the ready nodes:
 * the identity on a graph already in order).  g must be acyclic with valid children.
 * Returns the number of nodes ordered (< g->n means a cycle), -1 on OOM. */
static int topo_order(tinyc_ctx *ctx, const tinyc_evt *g, int *order)
{
	int n = g->n;
	int *pending = tinyc_calloc(ctx, (size_t)n + 1, sizeof(int));
	unsigned char *done = tinyc_calloc(ctx, (size_t)n + 1, 1);
	if (!pending || !done) {
		free(pending), free(done);
		return -1;
	}
	for (int i = 0; i < n; i++)
		pending[i] = g->nodes[i].nchild;
	int m = 0;
	for (;;) {
		int pick = -1;
		for (int i = 0; i < n && pick < 0; i++) {
			if (done[i])
				continue;
			int ready = 1;
			for (int k = 0; k < g->nodes[i].nchild; k++)
				ready &= done[g->nodes[i].child[k]];
			if (ready)
				pick = i;
		}
		if (pick < 0)
			break;
		done[pick] = 1;
		order[m++] = pick;
	}
	free(pending), free(done);
	return m;
}

/* Rebuild g with the nodes order[0..m) (new index i = old order[i]); children are mapped,
 * nodes not listed are dropped (none of the kept nodes may refer to them). */
static int renumber(tinyc_ctx *ctx, tinyc_evt *g, const int *order, int m)
{
	int *newidx = tinyc_malloc(ctx, sizeof(int) * ((size_t)g->n + 1));
	tinyc_evt_node *nn = tinyc_calloc(ctx, (size_t)(m ? m : 1), sizeof(*nn));
	if (!newidx || !nn) {
		free(newidx), free(nn);
		return -1;
	}
	for (int i = 0; i < g->n; i++)
		newidx[i] = -1;
	for (int i = 0; i < m; i++)
		newidx[order[i]] = i;
	for (int i = 0; i < m; i++) {
		nn[i] = g->nodes[order[i]];
		g->nodes[order[i]].t.name = NULL;	/* moved */
		for (int k = 0; k < nn[i].nchild; k++)
			nn[i].child[k] = newidx[nn[i].child[k]];
	}
	for (int i = 0; i < g->n; i++)
		free(g->nodes[i].t.name);
	free(g->nodes);
	g->nodes = nn;
	g->cap = m ? m : 1;
	g->n = m;
	free(newidx);
	return 0;
}

/* "Compute ADD" / "AuxStore Y" for the log. */
static void describe(const tinyc_evt *g, int i, char *buf, size_t size)
{
	const tinyc_evt_node *nd = &g->nodes[i];
	if (nd->kind == TINYC_EVT_COMPUTE)
		snprintf(buf, size, "Compute %s", tinyc_op_info(nd->fn)->name);
	else if (nd->has_tensor)
		snprintf(buf, size, "%s %s", tinyc_evt_kind_name(nd->kind), nd->t.name);
	else
		snprintf(buf, size, "%s", tinyc_evt_kind_name(nd->kind));
}

/* Operand k of node i must have type want: insert a Cast when it has another one. */
static int coerce(tinyc_ctx *ctx, tinyc_evt *g, int i, int k, tinyc_dtype want)
{
	int c = g->nodes[i].child[k];
	if (g->nodes[c].dtype == want)
		return 0;
	int cast = tinyc_evt_cast(ctx, g, want);
	if (cast < 0)
		return -1;
	g->nodes[cast].nchild = 1;
	g->nodes[cast].child[0] = c;
	g->nodes[i].child[k] = cast;
	char d[64];
	describe(g, i, d, sizeof(d));
	tinyc_buf_printf(&g->log, "  types: node %d = Cast(%s) of node %d (%s), operand %d of node %d (%s)\n",
			 cast, tinyc_dtype_name(want), c, tinyc_dtype_name(g->nodes[c].dtype), k, i, d);
	return 0;
}

int tinyc_evt_pass_types(tinyc_ctx *ctx, tinyc_evt *g)
{
	int n0 = g->n;
	int *order = tinyc_malloc(ctx, sizeof(int) * ((size_t)n0 + 1));
	if (!order)
		return -1;
	int m = topo_order(ctx, g, order);
	if (m != n0) {
		free(order);
		return m < 0 ? -1 : tinyc_error(ctx, "EvtCycle", "the epilogue graph has a cycle");
	}
	int bad = 0;
	for (int oi = 0; oi < n0; oi++) {
		int i = order[oi];
		tinyc_evt_node *nd = &g->nodes[i];
		char d[64];
		describe(g, i, d, sizeof(d));
		switch (nd->kind) {
		case TINYC_EVT_ACC_FETCH:
			nd->dtype = g->acc;
			break;
		case TINYC_EVT_SRC_FETCH:
		case TINYC_EVT_AUX_LOAD:
		case TINYC_EVT_ROW_BCAST:
		case TINYC_EVT_COL_BCAST:
		case TINYC_EVT_SCALAR_BCAST:
			if (nd->has_tensor)
				nd->dtype = nd->t.dtype;
			break;
		case TINYC_EVT_CAST:
			break;
		case TINYC_EVT_COMPUTE: {
			int first = nd->fn == TINYC_OP_WHERE ? 1 : 0;
			if (nd->compute == TINYC_DTYPE_NONE)
				nd->compute = g->nodes[nd->child[first]].dtype;
			if (nd->fn == TINYC_OP_CMPLT || nd->fn == TINYC_OP_CMPNE || nd->fn == TINYC_OP_CMPEQ)
				nd->dtype = TINYC_BOOL;
			else if (nd->fn != TINYC_OP_BITCAST)
				nd->dtype = nd->compute;
			tinyc_dtype compute = nd->compute;
			for (int k = 0; k < nd->nchild; k++) {
				if (nd->fn == TINYC_OP_WHERE && k == 0) {
					if (g->nodes[nd->child[0]].dtype != TINYC_BOOL)
						bad++, tinyc_error(ctx, "EvtTypeClash",
								   "node %d (%s): the condition is %s, not bool",
								   i, d, tinyc_dtype_name(g->nodes[nd->child[0]].dtype));
					continue;
				}
				if (coerce(ctx, g, i, k, compute) < 0)
					goto fail;
				nd = &g->nodes[i];	/* coerce may move the array */
			}
			break;
		}
		case TINYC_EVT_AUX_STORE:
			nd->dtype = nd->t.dtype;
			if (coerce(ctx, g, i, 0, nd->t.dtype) < 0)
				goto fail;
			break;
		case TINYC_EVT_ROW_RED:
		case TINYC_EVT_COL_RED:
		case TINYC_EVT_SCALAR_RED:
			if (nd->compute == TINYC_DTYPE_NONE)
				nd->compute = g->nodes[nd->child[0]].dtype;
			nd->dtype = nd->compute;
			if (coerce(ctx, g, i, 0, nd->compute) < 0)
				goto fail;
			break;
		default:
			break;
		}
	}
	free(order);
	return bad ? -1 : 0;
fail:
	free(order);
	return -1;
}

/* Whether nodes a and b compute the same value (children compared as given). */
static int same_node(const tinyc_evt_node *a, const tinyc_evt_node *b)
{
	if (a->kind != b->kind || a->dtype != b->dtype || a->compute != b->compute ||
	    a->fn != b->fn || a->nchild != b->nchild || a->has_tensor != b->has_tensor)
		return 0;
	if (tinyc_evt_is_reduction(a->kind) && a->redop != b->redop)
		return 0;
	for (int k = 0; k < a->nchild; k++)
		if (a->child[k] != b->child[k])
			return 0;
	if (a->kind == TINYC_EVT_SCALAR_BCAST && !a->has_tensor &&
	    (memcmp(&a->fval, &b->fval, sizeof(double)) || a->ival != b->ival))
		return 0;
	if (a->has_tensor) {
		const tinyc_evt_tensor *x = &a->t, *y = &b->t;
		if (x->buf != y->buf || x->dtype != y->dtype || strcmp(x->name, y->name) ||
		    !tinyc_evt_poly_equal(&x->lay.offset, &y->lay.offset))
			return 0;
		for (int s = 0; s < 3; s++)
			if (!tinyc_evt_poly_equal(&x->lay.stride[s], &y->lay.stride[s]))
				return 0;
	}
	return 1;
}

int tinyc_evt_pass_cse(tinyc_ctx *ctx, tinyc_evt *g)
{
	int n = g->n;
	int *order = tinyc_malloc(ctx, sizeof(int) * ((size_t)n + 1));
	int *rep = tinyc_malloc(ctx, sizeof(int) * ((size_t)n + 1));
	if (!order || !rep) {
		free(order), free(rep);
		return -1;
	}
	int m = topo_order(ctx, g, order);
	if (m != n) {
		free(order), free(rep);
		return m < 0 ? -1 : tinyc_error(ctx, "EvtCycle", "the epilogue graph has a cycle");
	}
	for (int i = 0; i < n; i++)
		rep[i] = i;
	for (int oi = 0; oi < n; oi++) {
		int i = order[oi];
		tinyc_evt_node *nd = &g->nodes[i];
		for (int k = 0; k < nd->nchild; k++)
			nd->child[k] = rep[nd->child[k]];
		if (tinyc_evt_is_output(nd->kind))
			continue;	/* side effects are never merged */
		for (int oj = 0; oj < oi; oj++) {
			int j = order[oj];
			if (rep[j] == j && same_node(&g->nodes[j], nd)) {
				char d[64];
				describe(g, i, d, sizeof(d));
				tinyc_buf_printf(&g->log, "  cse: node %d (%s) is node %d: computed once, "
						 "kept in a register\n", i, d, j);
				rep[i] = j;
				break;
			}
		}
	}
	free(order), free(rep);
	return 0;
}

int tinyc_evt_pass_dce(tinyc_ctx *ctx, tinyc_evt *g)
{
	int n = g->n;
	unsigned char *live = tinyc_calloc(ctx, (size_t)n + 1, 1);
	int *keep = tinyc_malloc(ctx, sizeof(int) * ((size_t)n + 1));
	int *stack = tinyc_malloc(ctx, sizeof(int) * ((size_t)n + 1));
	if (!live || !keep || !stack) {
		free(live), free(keep), free(stack);
		return -1;
	}
	int sp = 0;
	for (int i = 0; i < n; i++)
		if (tinyc_evt_is_output(g->nodes[i].kind))
			live[i] = 1, stack[sp++] = i;
	while (sp > 0) {
		const tinyc_evt_node *nd = &g->nodes[stack[--sp]];
		for (int k = 0; k < nd->nchild; k++)
			if (!live[nd->child[k]])
				live[nd->child[k]] = 1, stack[sp++] = nd->child[k];
	}
	int m = 0;
	for (int i = 0; i < n; i++) {
		if (live[i]) {
			keep[m++] = i;
			continue;
		}
		char d[64];
		describe(g, i, d, sizeof(d));
		tinyc_buf_printf(&g->log, "  dce: node %d (%s) removed: reaches no output\n", i, d);
	}
	int r = m == n ? 0 : renumber(ctx, g, keep, m);
	free(live), free(keep), free(stack);
	return r;
}

int tinyc_evt_pass_sort(tinyc_ctx *ctx, tinyc_evt *g)
{
	int n = g->n;
	int *order = tinyc_malloc(ctx, sizeof(int) * ((size_t)n + 1));
	if (!order)
		return -1;
	int m = topo_order(ctx, g, order);
	if (m != n) {
		free(order);
		return m < 0 ? -1 : tinyc_error(ctx, "EvtCycle", "the epilogue graph has a cycle");
	}
	int moved = 0;
	for (int i = 0; i < n; i++)
		moved |= order[i] != i;
	if (moved) {
		tinyc_buf_puts(&g->log, "  sort: new order (old numbers):");
		for (int i = 0; i < n; i++)
			tinyc_buf_printf(&g->log, " %d", order[i]);
		tinyc_buf_putc(&g->log, '\n');
	}
	int r = moved ? renumber(ctx, g, order, n) : 0;
	free(order);
	return r;
}

int tinyc_evt_run_passes(tinyc_ctx *ctx, tinyc_evt *g)
{
	if (tinyc_evt_verify(ctx, g, 0) < 0)
		return -1;
	if (tinyc_evt_pass_types(ctx, g) < 0 || tinyc_evt_verify(ctx, g, 1) < 0)
		return -1;
	if (tinyc_evt_pass_cse(ctx, g) < 0 || tinyc_evt_pass_dce(ctx, g) < 0 ||
	    tinyc_evt_pass_sort(ctx, g) < 0)
		return -1;
	return tinyc_evt_verify(ctx, g, 1);
}
