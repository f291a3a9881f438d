/* Convolutions as implicit GEMM: the channels-last hand-off between two convs (see
 * sched/conv.h, tinyc_conv_chain).
 *
 * A ResNet block's second conv gathers the first conv's output.  On the NHWC path its
 * input is first rearranged channels-last by a transpose kernel; when that input is a
 * temporary written by another matmul's epilogue and read by nothing else, the epilogue
 * can store it channels-last directly: its store's strides along (m, n, l) become
 * (C, 1, C*P) instead of (1, P, C*P) (the GEMM view's rows are the pixels, its columns
 * the channels), and the transpose kernel goes away with a read and a write of the
 * tensor.
 */
#include "sched/matmul.h"

#define LAUNCH_US 2.0	/* one kernel launch (as sched/matmul.c's estimate) */

/* The chosen matmul plan of kernel i that runs its own kernel, or NULL. */
static tinyc_mm_plan *own_matmul(const tinyc_schedule *s, int i)
{
	const tinyc_plan *p = tinyc_skernel_plan(&s->kerns[i]);
	tinyc_mm_plan *mp = p && p->kind == TINYC_PLAN_MATMUL ? p->ext : NULL;
	return mp && mp->fused_into < 0 ? mp : NULL;
}

/* The value of p under s's bindings, or -1. */
static int64_t bound(const tinyc_schedule *s, const tinyc_evt_poly *p)
{
	int64_t v;
	if (tinyc_evt_poly_eval(p, s->bind ? s->bind->val : NULL, s->bind ? s->bind->n : 0, &v) < 0)
		return -1;
	return v;
}

/* Whether buffer b is read by any kernel other than k2 and those fused into k2, or by
 * k2 other than as its A operand. */
static int read_elsewhere(const tinyc_schedule *s, int b, int k2, const tinyc_mm_plan *mp2)
{
	for (int i = 0; i < s->nkern; i++) {
		const tinyc_plan *p = tinyc_skernel_plan(&s->kerns[i]);
		const tinyc_mm_plan *mp = p && p->kind == TINYC_PLAN_MATMUL ? p->ext : NULL;
		if (i == k2 || (mp && mp->fused_into == k2))
			continue;
		for (int j = 0; j < s->kerns[i].nin; j++)
			if (s->kerns[i].in_bufs[j] == b)
				return 1;
	}
	if (mp2->prob.b.buf == b)
		return 1;
	const tinyc_evt *g = mp2->prob.evt;
	for (int i = 0; i < g->n; i++)
		if (g->nodes[i].has_tensor && g->nodes[i].t.buf == b)
			return 1;
	return 0;
}

/* The AUX_STORE of buffer b in mp's epilogue when it writes the whole of x[l][c][p] as
 * the GEMM's C (rows the p pixels, columns the c channels), or NULL. */
static tinyc_evt_node *nchw_store(const tinyc_schedule *s, tinyc_mm_plan *mp, int b,
				  const tinyc_conv_nhwc *nh)
{
	tinyc_evt *g = mp->prob.evt;
	tinyc_evt_node *st = NULL;
	for (int i = 0; i < g->n; i++)
		if (g->nodes[i].kind == TINYC_EVT_AUX_STORE && g->nodes[i].t.buf == b) {
			if (st)
				return NULL;
			st = &g->nodes[i];
		}
	if (!st || mp->t.split > 1 || tinyc_dtype_size(st->t.dtype) != 2)
		return NULL;
	const tinyc_mm_problem *pr = &mp->prob;
	int64_t l = g->batched ? tinyc_sched_dim(s, &pr->l) : 1;
	const tinyc_evt_layout *ly = &st->t.lay;
	if (tinyc_sched_dim(s, &pr->m) != nh->p || tinyc_sched_dim(s, &pr->n) != nh->c || l != nh->l ||
	    bound(s, &ly->stride[0]) != 1 || bound(s, &ly->stride[1]) != nh->p || bound(s, &ly->offset) != 0 ||
	    (g->batched && bound(s, &ly->stride[2]) != nh->c * nh->p))
		return NULL;
	return st;
}

double tinyc_conv_nhwc_copy_us(const tinyc_schedule *s, const tinyc_conv_nhwc *nh)
{
	double bytes = 2.0 * nh->c * nh->p * nh->l * 2;
	return bytes / (0.6 * s->dev.peak_bandwidth_gbs * 1e9) * 1e6;
}

int tinyc_conv_chain(tinyc_schedule *s)
{
	for (int k2 = 0; k2 < s->nkern; k2++) {
		tinyc_mm_plan *mp2 = own_matmul(s, k2);
		if (!mp2 || !mp2->t.a_nhwc || mp2->t.nhwc.stored_by || mp2->t.nhwc.c_in != mp2->t.nhwc.c)
			continue;
		int b = mp2->prob.a.buf, w = -1;
		if (b < 0 || b >= s->nbuf || s->bufs[b].role != TINYC_SB_TEMP)
			continue;
		for (int i = 0; i < s->nkern; i++)
			if (s->kerns[i].out_buf == b)
				w = i;
		const tinyc_plan *pw = w >= 0 ? tinyc_skernel_plan(&s->kerns[w]) : NULL;
		if (!pw || pw->kind != TINYC_PLAN_MATMUL || !pw->ext)
			continue;
		int k1 = ((tinyc_mm_plan *)pw->ext)->fused_into >= 0 ? ((tinyc_mm_plan *)pw->ext)->fused_into : w;
		tinyc_mm_plan *mp1 = own_matmul(s, k1);
		if (!mp1 || k1 >= k2 || mp1->t.nhwc.feeds || read_elsewhere(s, b, k2, mp2))
			continue;
		tinyc_evt_node *st = nchw_store(s, mp1, b, &mp2->t.nhwc);
		if (!st)
			continue;
		/* x[l][p][c]: element (m = p, n = c, l) at l C P + p C + c */
		st->t.lay.stride[0] = tinyc_evt_poly_const(mp2->t.nhwc.c);
		st->t.lay.stride[1] = tinyc_evt_poly_const(1);
		mp1->t.nhwc.feeds = k2 + 1;
		mp2->t.nhwc.stored_by = k1 + 1;
		tinyc_plan *p2 = &s->kerns[k2].cands[s->kerns[k2].choice];
		p2->est_us -= tinyc_conv_nhwc_copy_us(s, &mp2->t.nhwc) + LAUNCH_US;
	}
	return 0;
}

void tinyc_conv_chain_print(const tinyc_schedule *s, const tinyc_mm_tiles *t, tinyc_buf *out)
{
	if (t->nhwc.feeds)
		tinyc_buf_printf(out, "  store: channels-last ([l][p][c], n contiguous) for %s's NHWC "
				 "gather, which then needs no transpose kernel\n",
				 s->kerns[t->nhwc.feeds - 1].name);
	if (t->a_nhwc && t->nhwc.stored_by)
		tinyc_buf_printf(out, "  nhwc: A's input [%lld][%lld][%lld] already stored channels-last "
				 "by %s's epilogue (no transpose kernel: %.2f us less), k ordered "
				 "window then channels\n", (long long)t->nhwc.l, (long long)t->nhwc.p,
				 (long long)t->nhwc.c, s->kerns[t->nhwc.stored_by - 1].name,
				 tinyc_conv_nhwc_copy_us(s, &t->nhwc) + LAUNCH_US);
}
