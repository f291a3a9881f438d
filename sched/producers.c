/* The producers a contraction must not recompute (see sched/schedule.h).
 *
 * A contraction is a REDUCE ADD whose operand is, through CASTs and movement, a MUL.  Each
 * operand of that MUL that is broadcast (an EXPAND of a real dim, or a smaller shape the
 * MUL broadcasts) is read once per k step by every output element it is broadcast to.
 * Walking down from the operand through movement (RESHAPE, PERMUTE, EXPAND, SHRINK,
 * FLIP, PAD) and CAST reaches either a leaf (a BUFFER or CONST: the operand is a load,
 * which the templates read with strides and convert on the way) or a computed value
 * (elementwise, REDUCE, CONTIGUOUS).  A computed value is marked (the first node below
 * the views: a CAST of it is stored converted): the partition stores it
 * in a buffer of its own dtype, and the epilogue extraction stores it from the kernel of
 * the contraction that produces it when it can run there.
 */
#include "sched/schedule.h"

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

/* The node below the chain of load-like ops that starts at i; *bcast |= a step of the
 * chain broadcasts (when bcast is given). */
static int below_loads(const tinyc_graph *g, const tinyc_bindings *b, int i, int *bcast)
{
	while (load_like(g->nodes[i].op)) {
		if (bcast && !tinyc_operand_injective(g, b, i, 0))
			*bcast = 1;
		i = g->nodes[i].src[0];
	}
	return i;
}

int tinyc_contraction_mul(const tinyc_graph *g, int r)
{
	const tinyc_uop *u = &g->nodes[r];
	if (u->op != TINYC_OP_REDUCE || u->redop != TINYC_RED_ADD)
		return -1;
	int m = below_loads(g, NULL, u->src[0], NULL);
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
			int bcast = !tinyc_operand_injective(g, b, m, j);
			int p = g->nodes[m].src[j];
			while (load_like(g->nodes[p].op) && g->nodes[p].op != TINYC_OP_CAST) {
				bcast |= !tinyc_operand_injective(g, b, p, 0);
				p = g->nodes[p].src[0];
			}
			/* p: the first value below the views; a CAST of a computed value is
			 * stored converted (what the contraction multiplies) */
			int leaf = below_loads(g, b, p, &bcast);
			tinyc_op op = g->nodes[leaf].op;
			if (bcast && op != TINYC_OP_BUFFER && op != TINYC_OP_CONST)
				mark[p] = 1;
		}
	}
}
