/* Where the attention kernel stores O (codegen/attention.c uses it).
 *
 * The kernel's value may be O under unary elementwise ops and views (a cast to 16 bits,
 * the head merge [B,H,T,dv] -> [B,T,H*dv] that the next Linear reads):
 * sched/attention.c's tinyc_attn_out_step.  The kernel computes O at its own index;
 * this maps that index up the chain to the stored value's index, so O goes straight
 * into the consumer's layout.  A PERMUTE permutes the index; a RESHAPE maps it group by
 * group (runs of dims with equal products), linearising and splitting only inside a
 * group, so a head merge costs one multiply-add.
 */
#include <stdlib.h>

#include "codegen/attention_out.h"

/* The index of RESHAPE node n from its operand's index in[]: per group of operand dims
 * and result dims with the same element count, the group's mixed-radix offset split over
 * the result dims.  0, or -1 when the dims do not group. */
static int reshape_up(tinyc_emit *em, int n, tinyc_gexpr *const *in, tinyc_gexpr **out)
{
	const tinyc_graph *g = em->g;
	const tinyc_uop *u = &g->nodes[n], *o = &g->nodes[u->src[0]];
	tinyc_gkernel *k = em->k;
	tinyc_dtype ix = k->index_dtype;
	const tinyc_schedule *s = em->s;
	int a = 0, c = 0;
	while (a < o->rank || c < u->rank) {
		/* the next group: operand dims [a, a2) and result dims [c, c2), one dim of each
		 * side (where left) and then dims of the smaller side until the counts agree */
		int a2 = a, c2 = c;
		int64_t pa = 1, pc = 1;
		if (a2 < o->rank)
			pa *= tinyc_sched_dim(s, &o->shape[a2++]);
		if (c2 < u->rank)
			pc *= tinyc_sched_dim(s, &u->shape[c2++]);
		while (pa != pc && pa > 0 && pc > 0) {
			if (pa < pc && a2 < o->rank)
				pa *= tinyc_sched_dim(s, &o->shape[a2++]);
			else if (pc < pa && c2 < u->rank)
				pc *= tinyc_sched_dim(s, &u->shape[c2++]);
			else
				return -1;
		}
		if (pa != pc || pa < 1)
			return -1;
		tinyc_gexpr *lin = tinyc_gx_int(k, ix, 0);
		for (int d = a; d < a2; d++)
			lin = tinyc_gx_binary(k, TINYC_GX_ADD, tinyc_gx_binary(k, TINYC_GX_MUL, lin,
				tinyc_gx_int(k, ix, tinyc_sched_dim(s, &o->shape[d]))), in[d]);
		int64_t below = pc;	/* elements of the result dims [d, c2) */
		for (int d = c; d < c2; d++) {
			int64_t ext = tinyc_sched_dim(s, &u->shape[d]);
			below /= ext;
			tinyc_gexpr *v = lin;
			if (d > c)
				v = tinyc_gx_binary(k, TINYC_GX_MOD, v, tinyc_gx_int(k, ix, ext * below));
			if (below > 1)
				v = tinyc_gx_binary(k, TINYC_GX_DIV, v, tinyc_gx_int(k, ix, below));
			out[d] = ext == 1 ? tinyc_gx_int(k, ix, 0) : v;
		}
		a = a2, c = c2;
	}
	return 0;
}

int tinyc_attn_out_index(tinyc_emit *em, int value, int pv, tinyc_gexpr *const *idx,
			 tinyc_gexpr **out)
{
	const tinyc_graph *g = em->g;
	int nchain = 0;
	for (int n = value; n != pv; n = g->nodes[n].src[0])
		nchain++;
	int *chain = malloc(sizeof(int) * (size_t)(nchain + 1));
	if (!chain)
		return -1;
	int c = nchain;
	for (int n = value; n != pv; n = g->nodes[n].src[0])
		chain[--c] = n;	/* bottom (next to O) first */
	tinyc_gexpr *cur[TINYC_MAX_RANK], *next[TINYC_MAX_RANK];
	for (int d = 0; d < g->nodes[pv].rank; d++)
		cur[d] = idx[d];
	int rc = 0;
	for (int i = 0; i < nchain && rc == 0; i++) {
		const tinyc_uop *u = &g->nodes[chain[i]];
		if (u->op == TINYC_OP_PERMUTE) {
			for (int d = 0; d < u->rank; d++) {
				int64_t p = u->axes[d] < 0 ? u->axes[d] + u->rank : u->axes[d];
				next[d] = cur[p];
			}
		} else if (u->op == TINYC_OP_RESHAPE) {
			rc = reshape_up(em, chain[i], cur, next);
		} else {
			continue;	/* elementwise: the same index */
		}
		for (int d = 0; d < u->rank; d++)
			cur[d] = next[d];
	}
	for (int d = 0; rc == 0 && d < g->nodes[value].rank; d++)
		out[d] = cur[d];
	free(chain);
	return rc;
}
