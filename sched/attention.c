/* Recognising tinygrad's scaled dot-product attention and planning it as one flash-style
 * kernel (see sched/attention.h).  The matcher walks from the P*V reduction down through
 * the softmax to the Q*K reduction with explicit, bounded walks (no recursion). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/attention.h"

/* Fractions of the tensor cores' peak the flash kernels keep busy: the mma.sync kernels
 * (synchronous-ish loads, the scores through the emitter), and the sm_90a wgmma kernel,
 * whose S = Q K^T is issued a key tile ahead of the softmax and overlaps it: H100, B=8
 * H=12 d=64 fp16, 0.85-0.95x the mma.sync kernel's time on issue 16's six rows, about
 * 0.2 / 0.9 (docs/attention-results.md). */
#define ATTN_MMA_EFF 0.2
#define ATTN_WGMMA_EFF (0.2 / 0.9)

/* The node under any CASTs from n. */
static int strip_casts(const tinyc_graph *g, int n)
{
	while (g->nodes[n].op == TINYC_OP_CAST)
		n = g->nodes[n].src[0];
	return n;
}

/* The node under CASTs, RESHAPEs and EXPANDs from n (a broadcast statistic or constant). */
static int strip_views(const tinyc_graph *g, int n)
{
	for (;;) {
		tinyc_op op = g->nodes[n].op;
		if (op != TINYC_OP_CAST && op != TINYC_OP_RESHAPE && op != TINYC_OP_EXPAND)
			return n;
		n = g->nodes[n].src[0];
	}
}

/* Whether n is a CONST or the RECIPROCAL of one (seen through views); its value in *v. */
static int const_value(const tinyc_graph *g, int n, double *v)
{
	const tinyc_uop *u = &g->nodes[strip_views(g, n)];
	int recip = u->op == TINYC_OP_RECIPROCAL;
	if (recip)
		u = &g->nodes[strip_views(g, u->src[0])];
	if (u->op != TINYC_OP_CONST)
		return 0;
	*v = u->lit.kind == TINYC_LIT_FLOAT ? u->lit.f : (double)u->lit.i;
	if (recip)
		*v = 1.0 / *v;
	return 1;
}

/* Value of a dim under b, or -1 when unknown. */
static int64_t dimv(const tinyc_dim *d, const tinyc_bindings *b)
{
	if (d->sym < 0)
		return d->val;
	return b ? tinyc_dim_value(d, b) : -1;
}

/* For REDUCE r over exactly one axis without keepdim: the node it reduces under CASTs and
 * at most one PERMUTE (*base), provided the reduced axis is base's last axis and the other
 * axes keep their order.  Returns 0 or -1. */
static int reduce_base(const tinyc_graph *g, int r, tinyc_redop op, int *base)
{
	const tinyc_uop *u = &g->nodes[r];
	if (u->op != TINYC_OP_REDUCE || u->redop != op || u->keepdim)
		return -1;
	int axes[TINYC_MAX_RANK];
	if (tinyc_reduce_axes(g, r, axes) != 1)
		return -1;
	int x = strip_casts(g, u->src[0]);
	int ax = axes[0];
	const tinyc_uop *p = &g->nodes[x];
	if (p->op == TINYC_OP_PERMUTE) {
		/* reduced axis ax of the permuted value is axis perm[ax] of its operand */
		int64_t want = 0;
		for (int d = 0; d < p->naxes; d++) {
			if (d == ax)
				continue;
			if (p->axes[d] != want++)
				return -1;
		}
		ax = (int)p->axes[ax];
		x = strip_casts(g, p->src[0]);
	}
	if (ax != g->nodes[x].rank - 1)
		return -1;
	*base = x;
	return 0;
}

/* Whether dims a and b of two nodes are the same size under bindings. */
static int same_dim(const tinyc_dim *a, const tinyc_dim *b, const tinyc_bindings *bind)
{
	if (a->sym >= 0 && a->sym == b->sym)
		return 1;
	int64_t x = dimv(a, bind), y = dimv(b, bind);
	return x >= 0 && x == y;
}

/* Whether operand o (rank r) is shaped like a view indexed by [P..., a, b, c] that does not
 * vary along axis `one` (its size there is 1). */
static int is_one(const tinyc_graph *g, int o, int axis)
{
	const tinyc_uop *u = &g->nodes[o];
	return axis >= 0 && axis < u->rank && u->shape[axis].sym < 0 && u->shape[axis].val == 1;
}

/* Softmax P = E * RECIPROCAL(sum(E)), E = EXP2((S - max(S)) * c): fill m->rsum, rmax,
 * score and exp_scale.  Returns 0 or -1. */
static int match_softmax(const tinyc_graph *g, int pm, tinyc_attn_match *m)
{
	const tinyc_uop *u = &g->nodes[pm];
	if (u->op != TINYC_OP_MUL)
		return -1;
	for (int side = 0; side < 2; side++) {
		int e = u->src[side], den = strip_views(g, u->src[1 - side]);
		if (g->nodes[den].op != TINYC_OP_RECIPROCAL)
			continue;
		int rs = strip_views(g, g->nodes[den].src[0]), y;
		if (reduce_base(g, rs, TINYC_RED_ADD, &y) < 0 || strip_casts(g, y) != strip_casts(g, e))
			continue;
		int ex = strip_casts(g, e);
		if (g->nodes[ex].op != TINYC_OP_EXP2)
			continue;
		int sc = strip_casts(g, g->nodes[ex].src[0]);
		if (g->nodes[sc].op != TINYC_OP_MUL)
			continue;
		for (int cs = 0; cs < 2; cs++) {
			double c;
			if (!const_value(g, g->nodes[sc].src[cs], &c) || !(c > 0) || isinf(c))
				continue;
			int x = strip_casts(g, g->nodes[sc].src[1 - cs]);
			if (g->nodes[x].op != TINYC_OP_ADD)
				continue;
			for (int ms = 0; ms < 2; ms++) {
				int neg = g->nodes[x].src[ms], s = g->nodes[x].src[1 - ms];
				const tinyc_uop *nu = &g->nodes[neg];
				int mx = -1;
				double minus;
				if (nu->op == TINYC_OP_NEG)
					mx = strip_views(g, nu->src[0]);
				else if (nu->op == TINYC_OP_MUL && const_value(g, nu->src[1], &minus) && minus == -1)
					mx = strip_views(g, nu->src[0]);
				else if (nu->op == TINYC_OP_MUL && const_value(g, nu->src[0], &minus) && minus == -1)
					mx = strip_views(g, nu->src[1]);
				int base;
				if (mx < 0 || reduce_base(g, mx, TINYC_RED_MAX, &base) < 0 ||
				    strip_casts(g, base) != strip_casts(g, s))
					continue;
				m->rsum = rs, m->rmax = mx, m->score = s, m->exp_scale = c;
				return 0;
			}
		}
	}
	return -1;
}

/* The Q*K reduction inside score s: the one REDUCE ADD of s's shape reached from s through
 * elementwise ops only.  Returns it or -1. */
static int find_qk(const tinyc_graph *g, const tinyc_bindings *b, int s)
{
	const tinyc_uop *su = &g->nodes[s];
	int *work = malloc(sizeof(int) * (size_t)(g->n + 1));
	unsigned char *seen = calloc((size_t)g->n + 1, 1);
	int found = -1, nfound = 0, nw = 0;
	if (!work || !seen)
		goto out;
	work[nw++] = s;
	seen[s] = 1;
	while (nw > 0) {
		int n = work[--nw];
		const tinyc_uop *u = &g->nodes[n];
		if (u->op == TINYC_OP_REDUCE) {
			int same = u->redop == TINYC_RED_ADD && u->rank == su->rank;
			for (int d = 0; same && d < u->rank; d++)
				same = same_dim(&u->shape[d], &su->shape[d], b);
			if (same)
				found = n, nfound++;
			continue;
		}
		if (tinyc_op_info(u->op)->kind != TINYC_KIND_ELEMENTWISE)
			continue;
		for (int j = 0; j < u->nsrc; j++)
			if (!seen[u->src[j]]) {
				seen[u->src[j]] = 1;
				work[nw++] = u->src[j];
			}
	}
out:
	free(work);
	free(seen);
	return nfound == 1 ? found : -1;
}

/* Whether node `from` depends on node `on` (an explicit walk). */
static int depends_on(const tinyc_graph *g, int from, int on)
{
	int *work = malloc(sizeof(int) * (size_t)(g->n + 1));
	unsigned char *seen = calloc((size_t)g->n + 1, 1);
	int nw = 0, hit = 1;	/* on allocation failure: assume it does */
	if (work && seen) {
		hit = 0;
		work[nw++] = from;
		seen[from] = 1;
		while (nw > 0 && !hit) {
			int n = work[--nw];
			hit = n == on;
			for (int j = 0; j < g->nodes[n].nsrc; j++)
				if (!seen[g->nodes[n].src[j]]) {
					seen[g->nodes[n].src[j]] = 1;
					work[nw++] = g->nodes[n].src[j];
				}
		}
	}
	free(work);
	free(seen);
	return hit;
}

/* The additive mask B of S = ADD(qk [* const], B) (under CASTs), or -1. */
static int find_bias(const tinyc_graph *g, int score, int qk)
{
	const tinyc_uop *a = &g->nodes[strip_casts(g, score)];
	if (a->op != TINYC_OP_ADD)
		return -1;
	for (int side = 0; side < 2; side++) {
		int x = strip_casts(g, a->src[side]);
		const tinyc_uop *u = &g->nodes[x];
		double c;
		int scaled = x == qk || (u->op == TINYC_OP_MUL &&
					 ((strip_casts(g, u->src[0]) == qk && const_value(g, u->src[1], &c)) ||
					  (strip_casts(g, u->src[1]) == qk && const_value(g, u->src[0], &c))));
		if (scaled && !depends_on(g, a->src[1 - side], qk))
			return a->src[1 - side];
	}
	return -1;
}

int tinyc_attention_match(const tinyc_graph *g, const tinyc_bindings *b, int pv,
			  tinyc_attn_match *m)
{
	memset(m, 0, sizeof(*m));
	m->pv = pv;
	if (reduce_base(g, pv, TINYC_RED_ADD, &m->pv_mul) < 0)
		return 0;
	const tinyc_uop *mul = &g->nodes[m->pv_mul];
	int r = mul->rank;
	if (mul->op != TINYC_OP_MUL || r < 3)
		return 0;
	/* the P side: RESHAPE of P [P...,Tq,Tk] to [P...,Tq,1,Tk] */
	int pm = -1;
	for (int side = 0; side < 2 && pm < 0; side++) {
		const tinyc_uop *o = &g->nodes[mul->src[side]];
		if (o->op != TINYC_OP_RESHAPE || o->rank != r || !is_one(g, mul->src[side], r - 2))
			continue;
		const tinyc_uop *p = &g->nodes[o->src[0]];
		if (p->rank != r - 1 || !same_dim(&p->shape[r - 2], &mul->shape[r - 1], b))
			continue;
		int ok = 1;
		for (int d = 0; d < r - 2; d++)
			ok &= same_dim(&p->shape[d], &mul->shape[d], b);
		if (!ok)
			continue;
		pm = o->src[0];
		m->v_side = mul->src[1 - side];
	}
	if (pm < 0 || g->nodes[m->v_side].rank != r || !is_one(g, m->v_side, r - 3))
		return 0;
	if (match_softmax(g, pm, m) < 0)
		return 0;
	const tinyc_uop *su = &g->nodes[m->score];
	if (su->rank != r - 1 || (m->qk = find_qk(g, b, m->score)) < 0)
		return 0;
	if (reduce_base(g, m->qk, TINYC_RED_ADD, &m->qk_mul) < 0)
		return 0;
	const tinyc_uop *qm = &g->nodes[m->qk_mul];
	if (qm->op != TINYC_OP_MUL || qm->rank != r)
		return 0;
	int a = qm->src[0], c = qm->src[1];
	if (g->nodes[a].rank != r || g->nodes[c].rank != r)
		return 0;
	if (is_one(g, a, r - 2) && is_one(g, c, r - 3))
		m->q_side = a, m->k_side = c;
	else if (is_one(g, c, r - 2) && is_one(g, a, r - 3))
		m->q_side = c, m->k_side = a;
	else
		return 0;
	m->rank = r - 1;
	m->bias = find_bias(g, m->score, m->qk);
	m->tq = dimv(&su->shape[r - 3], b);
	m->tk = dimv(&su->shape[r - 2], b);
	m->d = dimv(&qm->shape[r - 1], b);
	m->dv = dimv(&mul->shape[r - 2], b);
	for (int d = 0; d < r - 1; d++)
		if (dimv(&su->shape[d], b) < 0)
			return 0;
	m->in_dtype = qm->dtype;
	if (m->tq < 1 || m->tk < 1 || m->d < 1 || m->dv < 1 || m->d > 256 || m->dv > 256)
		return 0;
	if (m->in_dtype != TINYC_HALF && m->in_dtype != TINYC_BFLOAT16 && m->in_dtype != TINYC_FLOAT)
		return 0;
	return 1;
}

/* Clear mat[] for every node that depends on m's Q*K reduction and that O depends on
 * (O itself excluded).  Returns 0, or -1 when out of memory. */
static int unclaim_interior(const tinyc_graph *g, const tinyc_attn_match *m, unsigned char *mat)
{
	unsigned char *dq = calloc((size_t)g->n + 1, 1), *seen = calloc((size_t)g->n + 1, 1);
	int *work = malloc(sizeof(int) * (size_t)(g->n + 1));
	if (!dq || !seen || !work) {
		free(dq), free(seen), free(work);
		return -1;
	}
	for (int i = m->qk; i <= m->pv; i++) {	/* nodes are in topological order */
		dq[i] = i == m->qk;
		for (int j = 0; j < g->nodes[i].nsrc && !dq[i]; j++)
			dq[i] = dq[g->nodes[i].src[j]];
	}
	int nw = 0;
	work[nw++] = m->pv;
	seen[m->pv] = 1;
	while (nw > 0) {
		int n = work[--nw];
		if (n != m->pv && dq[n])
			mat[n] = 0;
		for (int j = 0; j < g->nodes[n].nsrc; j++) {
			int o = g->nodes[n].src[j];
			if (!seen[o] && o >= m->qk) {
				seen[o] = 1;
				work[nw++] = o;
			}
		}
	}
	free(dq), free(seen), free(work);
	return 0;
}

int tinyc_attn_out_step(const tinyc_graph *g, const tinyc_bindings *b, int n)
{
	const tinyc_uop *u = &g->nodes[n];
	if (u->op == TINYC_OP_PERMUTE)
		return 1;
	if (u->op == TINYC_OP_RESHAPE) {	/* sizes known: the kernel maps indices */
		const tinyc_uop *o = &g->nodes[u->src[0]];
		for (int d = 0; d < u->rank; d++)
			if (dimv(&u->shape[d], b) < 0)
				return 0;
		for (int d = 0; d < o->rank; d++)
			if (dimv(&o->shape[d], b) < 0)
				return 0;
		return 1;
	}
	return tinyc_op_info(u->op)->kind == TINYC_KIND_ELEMENTWISE && u->nsrc == 1;
}

/* A mask computed from constants alone (tinygrad's causal mask: two aranges, each an
 * integer REDUCE ADD, compared): its reductions are not materialised when nothing but
 * the mask reads them.  The kernel proves the mask causal and never evaluates it
 * (codegen/attention_mask.c), or evaluates it per score, reductions inline. */
static void inline_const_mask(const tinyc_graph *g, const tinyc_attn_match *m, const int *nusers,
			      unsigned char *mat)
{
	if (m->bias < 0)
		return;
	int *work = malloc(sizeof(int) * (size_t)(g->n + 1));
	int *uses = calloc((size_t)g->n + 1, sizeof(int));	/* operand slots in the mask */
	unsigned char *seen = calloc((size_t)g->n + 1, 1);
	int nw = 0, ok = work && uses && seen;
	if (ok) {
		work[nw++] = m->bias;
		seen[m->bias] = 1;
	}
	while (ok && nw > 0) {
		const tinyc_uop *u = &g->nodes[work[--nw]];
		ok = u->op != TINYC_OP_BUFFER;
		for (int j = 0; ok && j < u->nsrc; j++) {
			uses[u->src[j]]++;
			if (!seen[u->src[j]]) {
				seen[u->src[j]] = 1;
				work[nw++] = u->src[j];
			}
		}
	}
	for (int n = 0; ok && n < g->n; n++)
		if (seen[n] && n != m->bias && g->nodes[n].op == TINYC_OP_REDUCE &&
		    tinyc_dtype_is_int(g->nodes[n].dtype) && uses[n] == nusers[n])
			mat[n] = 0;
	free(work), free(uses), free(seen);
}

int tinyc_attention_claim(const tinyc_graph *g, const tinyc_bindings *b,
			  const unsigned char *live, unsigned char *mat)
{
	int *nusers = calloc((size_t)g->n + 1, sizeof(int));
	int *user = calloc((size_t)g->n + 1, sizeof(int));
	int count = 0;
	if (!nusers || !user)
		goto out;	/* not claiming is still correct */
	for (int i = 0; i < g->n; i++)
		if (live[i])
			for (int j = 0; j < g->nodes[i].nsrc; j++) {
				nusers[g->nodes[i].src[j]]++;
				user[g->nodes[i].src[j]] = i;
			}
	for (int i = 0; i < g->n; i++) {
		tinyc_attn_match m;
		if (!live[i] || g->nodes[i].op != TINYC_OP_REDUCE || !tinyc_attention_match(g, b, i, &m))
			continue;
		/* every value between Q*K and O (the reductions, S, P and the views between
		 * them) is the kernel's own: not materialised, whatever decided otherwise */
		if (unclaim_interior(g, &m, mat) < 0)
			mat[m.qk] = mat[m.rmax] = mat[m.rsum] = 0;
		/* Q, K and V are read through their views: the movement ops between a MUL
		 * operand and what is stored (a buffer, a contraction's output) stay inline
		 * where nothing else reads them, instead of being copied into their own layout */
		const int side[3] = {m.q_side, m.k_side, m.v_side};
		for (int s = 0; s < 3; s++)
			for (int n = side[s]; tinyc_op_info(g->nodes[n].op)->kind == TINYC_KIND_MOVEMENT &&
					     g->nodes[n].op != TINYC_OP_PAD && nusers[n] <= 1;
			     n = g->nodes[n].src[0])
				mat[n] = 0;
		/* O stays inline only under a chain of same-shaped elementwise ops to an OUTPUT */
		int cur = i, keep = 0;
		while (nusers[cur] == 1) {
			const tinyc_uop *u = &g->nodes[user[cur]];
			if (u->op == TINYC_OP_OUTPUT) {
				keep = 1;
				break;
			}
			if (mat[user[cur]] || tinyc_op_info(u->op)->kind != TINYC_KIND_ELEMENTWISE ||
			    u->nsrc != 1)
				break;
			cur = user[cur];
		}
		/* otherwise the kernel stores the last value of O's output chain that the
		 * partition materialised (a cast, a head merge that a contraction reads),
		 * through its view: no copy kernel after the attention */
		int last = -1;
		for (cur = i; !keep && nusers[cur] == 1 && tinyc_attn_out_step(g, b, user[cur]);)
			if (mat[cur = user[cur]])
				last = cur;
		for (cur = i; last >= 0 && cur != last; cur = user[cur])
			mat[cur] = 0;
		if (!keep && last < 0)
			mat[i] = 1;
		inline_const_mask(g, &m, nusers, mat);
		count++;
	}
out:
	free(nusers);
	free(user);
	return count;
}

/* ------------------------------------------------------------------ provider ---- */

/* Whether kernel k stores attention match m's output: its value is O under unary
 * elementwise ops and views (tinyc_attn_out_step), and it computes Q K^T and the softmax statistics itself (the claim
 * kept them out of buffers). */
static int kernel_is_attention(const tinyc_schedule *s, const tinyc_skernel *k,
			       const tinyc_attn_match *m)
{
	int inl = 0, pv = m->pv;
	for (int r = 0; r < k->nred; r++)
		inl += k->reds[r] == m->qk || k->reds[r] == m->rmax || k->reds[r] == m->rsum;
	if (inl != 3 || s->node_buf[m->score] >= 0)
		return 0;
	int n = k->value;
	while (n != pv) {
		if (!tinyc_attn_out_step(s->g, s->bind, n))
			return 0;
		n = s->g->nodes[n].src[0];
	}
	return 1;
}

/* Free a tinyc_attn_plan. */
static void attn_plan_free(void *p)
{
	free(p);
}

/* Add plan p with its attention plan ap (freed on failure) to kernel k.  0 or -1. */
static int attn_plan_add(tinyc_ctx *ctx, tinyc_skernel *k, tinyc_plan *p, tinyc_attn_plan *ap)
{
	p->ext = ap;
	p->ext_free = attn_plan_free;
	if (tinyc_plan_add(ctx, k, p) < 0) {
		free(ap);
		return -1;
	}
	return 0;
}

/* A tensor-core attention plan of bm-row blocks (mb 16-row blocks a warp) for kernel k:
 * its tensor-core work (mma_flops at the fraction eff of peak_tflops) or its traffic
 * (elements of esz bytes), whichever is longer.  The traffic: Q, O, K and V once from DRAM,
 * and K and V once per query tile from L2 (a head's K and V stay there between its query
 * tiles; L2 at 3x the DRAM bandwidth, as sched/matmul.c counts it). */
static tinyc_plan attn_mma_plan(const tinyc_schedule *s, const tinyc_attn_match *m, double batch,
				int bm, int mb, double esz, double mma_flops, double peak_tflops, double eff)
{
	double qtiles = ceil((double)m->tq / bm);
	double dram = batch * esz * ((double)m->tq + (double)m->tk) * (m->d + m->dv);
	double l2 = batch * esz * qtiles * (double)m->tk * (m->d + m->dv);
	double bytes = dram > l2 / 3 ? dram : l2 / 3;
	tinyc_plan p = {0};
	p.kind = TINYC_PLAN_ATTENTION;
	p.ntile = 1;
	p.block[0] = 2 * bm / mb, p.block[1] = p.block[2] = 1;
	p.index_dtype = TINYC_INT;
	p.eff = eff;
	double t_mma = mma_flops / (peak_tflops * 1e12 * p.eff) * 1e6;
	double t_mem = tinyc_plan_estimate_us(s, 0, bytes, 1.0);
	p.est_us = t_mma > t_mem ? t_mma : t_mem;
	return p;
}

/* The 3xTF32 candidate of an fp32 attention (codegen/attention_tf32.c): 64-row blocks of 4
 * warps (16 rows each), 64 keys a tile (32 when d > 64) through 2-stage cp.async rings,
 * registers capped for 3 blocks a SM when d, dv <= 64 (ptxas, sm_90a: 168 registers, no
 * spills; 172 uncapped, 2 a SM).  Nothing when the rings do not fit the device's shared
 * memory.  0 or -1. */
static int attention_tf32_propose(tinyc_ctx *ctx, tinyc_schedule *s, tinyc_skernel *k,
				  const tinyc_attn_match *m, double batch)
{
	int small = m->d <= 64 && m->dv <= 64;
	int bm = 64, bn = small ? 64 : 32, minb = small ? 3 : 0, mb = 1;
	const int *f = s->opt.attn_tile;	/* TINYC_ATTN_TILE (experiments) */
	if ((f[0] == 64 || f[0] == 128) && (f[1] == 32 || f[1] == 64))
		bm = f[0], bn = f[1], minb = f[2], mb = f[3] == 2 ? 2 : 1;
	/* K ring (or the Q tile), V ring: rows of d + 8 and dv + 4 floats (attention_tf32.c) */
	int64_t kring = 2 * bn > bm ? 2 * bn : bm;
	if ((kring * (m->d + 8) + 2 * bn * (m->dv + 4)) * 4 + 16 > s->dev.smem_per_block_optin)
		return 0;
	tinyc_attn_plan *ap = calloc(1, sizeof(*ap));
	if (!ap)
		return tinyc_error(ctx, "OutOfMemory", "attention plan");
	ap->m = *m, ap->bm = bm, ap->bn = bn, ap->stages = 2, ap->mma = 2;
	ap->min_blocks = minb, ap->mb = mb;
	/* three tf32 mma a product; the tf32 rate is half the fp16 one */
	tinyc_plan p = attn_mma_plan(s, m, batch, bm, mb, 4.0, 3 * k->flops, s->dev.peak_fp16_tflops / 2,
				     ATTN_MMA_EFF);
	char desc[256];
	snprintf(desc, sizeof(desc), "attention flash 3xTF32 mma.sync m16n8k8 Tq=%lld Tk=%lld d=%lld "
		 "dv=%lld rows/block %d keys/tile %d blocks/SM %d rows/warp %d", (long long)m->tq,
		 (long long)m->tk, (long long)m->d, (long long)m->dv, bm, bn, minb, 16 * mb);
	snprintf(p.desc, sizeof(p.desc), "%.127s", desc);
	return attn_plan_add(ctx, k, &p, ap);
}

/* Whether the sm_90a wgmma kernel is proposed for m: 0 no, 1 with P V on mma.sync, 2 with P
 * V on wgmma, 3 with P V on wgmma and P's row sums before its issue (TINYC_ATTN_WGMMA, else 3
 * in the measured range below). */
static int attention_wgmma_wanted(const tinyc_schedule *s, const tinyc_attn_match *m)
{
	int want = s->opt.attn_wgmma;
	if (want < 0)	/* the measured range */
		want = m->in_dtype == TINYC_HALF && m->dv == 64 && m->tq >= 512 && m->tk >= 512 ? 3 : 0;
	if (want < 1 || s->dev.arch.major != 9 || s->dev.arch.minor != 0 ||
	    (m->in_dtype != TINYC_HALF && m->in_dtype != TINYC_BFLOAT16) || m->d != 64 ||
	    m->dv % 16 || m->dv > 64)
		return 0;
	return want;
}

/* The sm_90a candidate of a 16-bit attention with d = 64 and dv <= 64
 * (codegen/attention_wgmma.c): S = Q K^T on wgmma m64n64k16 from the swizzled shared Q
 * tile and K ring, issued a key tile ahead of the softmax, and P V on wgmma too (P from
 * registers, V MN-major; dv = 64) or on mma.sync; 64 keys a tile, 3-stage rings, a
 * warpgroup per 64 query rows.  By default (TINYC_ATTN_WGMMA unset) proposed, and chosen,
 * with P V on wgmma for fp16 with d = dv = 64 and Tq, Tk >= 512: H100, B=8 H=12, all six
 * rows of issue 16's table 0.87-0.95x the time of the mma.sync kernel and 0.85-0.98x
 * torch flash's (same run); bf16, dv < 64 and T < 512 are correct on the GPU but not
 * timed.  The default computes P's row sums before the P V wgmma is issued (as
 * TINYC_ATTN_WGMMA=3; H100, session 11: the same time as reading them while it is in
 * flight, within 1% on the six rows).  TINYC_ATTN_WGMMA=1 forces it with P V on mma.sync
 * (slower at T >= 2048), 2 with P V on wgmma and the row sums while it is in flight (the
 * former default; PTX leaves that read undefined), 3 with the row sums first (the mma.sync
 * candidates are then not proposed), 0 never.  0 or -1. */
static int attention_wgmma_propose(tinyc_ctx *ctx, tinyc_schedule *s, tinyc_skernel *k,
				   const tinyc_attn_match *m, double batch)
{
	int want = attention_wgmma_wanted(s, m);
	if (!want)
		return 0;
	/* 64-row blocks, 3 a SM (167 registers): H100, B=8 H=12 d=64 fp16, T=2048 / 8192 0.82 /
	 * 0.93x the time of 128-row blocks of two warpgroups (1 a SM; 2 a SM spill) */
	int bm = 64, bn = 64, minb = 3;
	const int *f = s->opt.attn_tile;	/* TINYC_ATTN_TILE (experiments): BM and blocks/SM */
	if (f[0] == 64 || f[0] == 128)
		bm = f[0], minb = f[2];
	/* Q tile, K ring (128-byte rows), V ring (rows of dv + 8) */
	if (((int64_t)bm * 64 + 3 * bn * 64 + 3 * bn * (m->dv + 8)) * 2 + 2048 > s->dev.smem_per_block_optin)
		return 0;
	tinyc_attn_plan *ap = calloc(1, sizeof(*ap));
	if (!ap)
		return tinyc_error(ctx, "OutOfMemory", "attention plan");
	ap->m = *m, ap->bm = bm, ap->bn = bn, ap->stages = 3, ap->mma = 3, ap->mb = 1, ap->min_blocks = minb;
	/* P V on wgmma too; 2: P's row sums (mma.sync on P's registers) before the P V wgmma
	 * is issued, not while it is in flight (PTX leaves reading an in-flight wgmma's A
	 * registers undefined; TINYC_ATTN_WGMMA=2 reads them then) */
	ap->pvwg = want >= 2 && m->dv == 64 ? (want == 3 ? 2 : 1) : 0;
	ap->softmax = s->opt.attn_softmax >= 0 ? s->opt.attn_softmax & 3 : TINYC_ATTN_LAZY | TINYC_ATTN_PSUM;
	tinyc_plan p = attn_mma_plan(s, m, batch, bm, 1, tinyc_dtype_size(m->in_dtype), k->flops,
				     s->dev.peak_fp16_tflops, ATTN_WGMMA_EFF);
	char desc[256];
	snprintf(desc, sizeof(desc), "attention flash wgmma m64n%dk16 S + %s P V Tq=%lld Tk=%lld d=%lld "
		 "dv=%lld rows/block %d keys/tile %d blocks/SM %d stages 3", bn,
		 ap->pvwg == 2 ? "wgmma (row sums first)" : ap->pvwg ? "wgmma" : "mma.sync",
		 (long long)m->tq, (long long)m->tk,
		 (long long)m->d, (long long)m->dv, bm, bn, minb);
	snprintf(p.desc, sizeof(p.desc), "%.159s", desc);
	return attn_plan_add(ctx, k, &p, ap);
}

/* Propose the flash-style plans for a kernel that computes an attention's output: one
 * candidate per (query rows per block, keys per tile), estimated as SIMT fp32 work
 * (2 FLOPs per multiply-add of Q K^T and P V) plus Q, K, V read once per query tile;
 * the generic candidates (which would recompute the softmax statistics per element) are
 * dropped. */
static int attention_propose(tinyc_ctx *ctx, tinyc_schedule *s, tinyc_skernel *k)
{
	tinyc_attn_match m;
	int found = 0;
	for (int r = 0; r < k->nred && !found; r++)
		found = tinyc_attention_match(s->g, s->bind, k->reds[r], &m) &&
			kernel_is_attention(s, k, &m);
	if (!found)
		return 0;
	const tinyc_uop *su = &s->g->nodes[m.score];
	double batch = 1;
	for (int d = 0; d < m.rank - 2; d++)
		batch *= (double)dimv(&su->shape[d], s->bind);
	double esz = tinyc_dtype_size(m.in_dtype);
	for (int c = 0; c < k->ncand; c++)
		if (k->cands[c].ext_free)
			k->cands[c].ext_free(k->cands[c].ext);
	k->ncand = 0;
	/* the work of the fused kernel, not of the inline recomputation the generic walk counted */
	k->flops = 2.0 * batch * (double)m.tq * (double)m.tk * (double)(m.d + m.dv);
	k->bytes = batch * esz * ((double)m.tq * (m.d + m.dv) + (double)m.tk * (m.d + m.dv));
	/* the tensor-core variant: 16-bit inputs, d and dv multiples of 16 up to 128, sm_80+ */
	/* (not when TINYC_ATTN_WGMMA forces the wgmma kernel and it applies) */
	int wgmma_forced = s->opt.attn_wgmma >= 1 && attention_wgmma_wanted(s, &m);
	if ((m.in_dtype == TINYC_HALF || m.in_dtype == TINYC_BFLOAT16) && m.d % 16 == 0 &&
	    m.dv % 16 == 0 && m.d <= 128 && m.dv <= 128 && s->dev.arch.major >= 8 && !wgmma_forced) {
		/* 8 warps of 16 rows where the tiles fit, K and V through 2-stage cp.async
		 * rings (the Q tile passes through the K ring) */
		int small = m.d <= 64 && m.dv <= 64;
		int bm = small && m.tq >= 256 ? 128 : 64, bn = small ? 64 : 32, minb = 2, mb = 1;
		/* a grid of 128-row blocks under 3 waves (2 a SM): 64-row blocks, 4 a SM, for
		 * a finer last wave (T=512, B*H=96 on an H100: 0.79x the time, causal) */
		if (bm == 128 && ceil((double)m.tq / 128) * batch < 3.0 * 2 * s->dev.sm_count)
			bm = 64, minb = 4;
		/* 128-row blocks: 4 warps of 32 rows, each K and V fragment serving two 16-row
		 * blocks (H100, T=8192: 0.87x the time unmasked, 0.92x causal) */
		if (bm == 128)
			mb = 2;
		const int *f = s->opt.attn_tile;	/* TINYC_ATTN_TILE (experiments) */
		if ((f[0] == 64 || f[0] == 128) && (f[1] == 32 || f[1] == 64 || f[1] == 128))
			bm = f[0], bn = f[1], minb = f[2], mb = f[3] == 2 ? 2 : 1;
		/* 128-row blocks at d <= 64: 3-stage rings, one barrier a tile (55 KiB a block) */
		int ns = bm == 128 && small ? 3 : 2;
		if (f[0] && f[4])
			ns = f[4];
		int64_t kring = ns * bn * (m.d + 8) > bm * (m.d + 8) ? ns * bn * (m.d + 8) : bm * (m.d + 8);
		/* above 48 KiB the rings go to dynamic shared memory */
		if ((kring + ns * bn * (m.dv + 8)) * 2 + 16 <= 100 * 1024) {
			tinyc_attn_plan *ap = calloc(1, sizeof(*ap));
			if (!ap)
				return tinyc_error(ctx, "OutOfMemory", "attention plan");
			ap->m = m, ap->bm = bm, ap->bn = bn, ap->stages = ns, ap->mma = 1;
			ap->min_blocks = minb, ap->mb = mb;
			/* the online softmax's variants (TINYC_ATTN_SOFTMAX): the lazy rescale and
			 * the row sums by mma together were faster on all six rows of issue 16's
			 * table (H100, B=8 H=12 d=64 fp16: 0.97-0.99x main's time; the lazy
			 * rescale alone was slower under the causal mask, T=2048 242 vs 227 us) */
			ap->softmax = s->opt.attn_softmax >= 0 ? s->opt.attn_softmax & 3 :
				      TINYC_ATTN_LAZY | TINYC_ATTN_PSUM;
			tinyc_plan p = attn_mma_plan(s, &m, batch, bm, mb, esz, k->flops, s->dev.peak_fp16_tflops,
						     ATTN_MMA_EFF);
			char desc[256];
			snprintf(desc, sizeof(desc), "attention flash mma.sync m16n8k16 Tq=%lld Tk=%lld "
				 "d=%lld dv=%lld rows/block %d keys/tile %d blocks/SM %d rows/warp %d stages %d",
				 (long long)m.tq, (long long)m.tk, (long long)m.d, (long long)m.dv, bm, bn, minb,
				 16 * mb, ns);
			snprintf(p.desc, sizeof(p.desc), "%.127s", desc);
			if (attn_plan_add(ctx, k, &p, ap) < 0)
				return -1;
		}
	}
	if (attention_wgmma_propose(ctx, s, k, &m, batch) < 0)
		return -1;
	/* fp32 inputs: the 3xTF32 tensor-core variant (d and dv multiples of 8 up to 128,
	 * sm_80+) unless TINYC_ATTENTION=simt; the SIMT candidates stay listed */
	if (m.in_dtype == TINYC_FLOAT && m.d % 8 == 0 && m.dv % 8 == 0 && m.d <= 128 && m.dv <= 128 &&
	    s->dev.arch.major >= 8 && !s->opt.attn_simt && attention_tf32_propose(ctx, s, k, &m, batch) < 0)
		return -1;
	static const int bms[] = {64, 128}, bns[] = {16, 32};
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++) {
			int bm = bms[i], bn = bns[j];
			/* shared K, V and score tiles in float, and the tile flag */
			if ((int64_t)bn * (m.d + m.dv + bm) * 4 + 16 > 48 * 1024)
				continue;
			tinyc_attn_plan *ap = calloc(1, sizeof(*ap));
			if (!ap)
				return tinyc_error(ctx, "OutOfMemory", "attention plan");
			ap->m = m, ap->bm = bm, ap->bn = bn, ap->stages = 2;	/* fp32 on sm_80+ */
			double qtiles = ceil((double)m.tq / bm);
			double flops = 2.0 * batch * (double)m.tq * (double)m.tk * (double)(m.d + m.dv);
			double bytes = batch * esz * ((double)m.tq * (m.d + m.dv) +
						     qtiles * (double)m.tk * (m.d + m.dv));
			tinyc_plan p = {0};
			p.kind = TINYC_PLAN_ATTENTION;
			p.ntile = 1;
			p.block[0] = bm, p.block[1] = p.block[2] = 1;
			p.index_dtype = TINYC_INT;
			/* a thread's row of scores and its accumulator in registers, K/V tiles
			 * broadcast from shared memory: about a third of the SIMT peak */
			p.eff = 0.3 * (bn == 32 ? 1.0 : 0.9) * (bm == 128 ? 1.0 : 0.95);
			p.est_us = tinyc_plan_estimate_us(s, flops, bytes, p.eff);
			snprintf(p.desc, sizeof(p.desc), "attention flash simt Tq=%lld Tk=%lld d=%lld "
				 "dv=%lld rows/block %d keys/tile %d", (long long)m.tq, (long long)m.tk,
				 (long long)m.d, (long long)m.dv, bm, bn);
			if (attn_plan_add(ctx, k, &p, ap) < 0)
				return -1;
		}
	return 0;
}

/* The chosen attention plan's output and mask lines: what the kernel stores instead of O
 * and why, and a constant mask's reductions left inline. */
static void attention_print_plan(const tinyc_schedule *s, const tinyc_skernel *k, tinyc_buf *out)
{
	const tinyc_plan *p = tinyc_skernel_plan(k);
	if (!p || p->kind != TINYC_PLAN_ATTENTION || !p->ext)
		return;
	const tinyc_attn_plan *ap = p->ext;
	const tinyc_graph *g = s->g;
	const tinyc_attn_match *m = &ap->m;
	if (ap->mma == 2)
		tinyc_buf_printf(out, "  attention fp32: 3xTF32 tensor cores (each operand split into tf32 hi "
				 "+ lo, three mma a product, fp32 sums; TINYC_ATTENTION=simt forces SIMT)\n");
	else if (m->in_dtype == TINYC_FLOAT)
		tinyc_buf_printf(out, "  attention fp32: SIMT kernel (%s)\n", s->opt.attn_simt ?
				 "TINYC_ATTENTION=simt" : s->dev.arch.major < 8 ? "no tf32 mma below sm_80" :
				 "3xTF32 needs d and dv multiples of 8 up to 128");
	if ((ap->mma == 1 || ap->mma == 3) && ap->softmax)
		tinyc_buf_printf(out, "  attention softmax:%s%s\n", ap->softmax & TINYC_ATTN_LAZY ?
				 " lazy rescale (O and l only where a row maximum grew by more than 8/c);" : "",
				 ap->softmax & TINYC_ATTN_PSUM ? " row sums by mma (P times ones);" : "");
	if (k->value != ap->m.pv) {
		tinyc_buf_printf(out, "  attention output: O %%%d stored as %%%d through", ap->m.pv, k->value);
		int chain[64], n = 0;	/* ops printed bottom up (at most 64) */
		for (int v = k->value; v != ap->m.pv && n < 64; v = g->nodes[v].src[0])
			chain[n++] = g->nodes[v].op;
		while (n > 0)
			tinyc_buf_printf(out, " %s", tinyc_op_info((tinyc_op)chain[--n])->name);
		tinyc_buf_printf(out, ": in the consumer's layout and dtype, no copy after the "
				 "attention (the stores cost what O's own would)\n");
	}
	int first = 1;
	for (int r = 0; r < k->nred; r++) {
		int n = k->reds[r];
		if (n == ap->m.qk || n == ap->m.rmax || n == ap->m.rsum || n == ap->m.pv)
			continue;
		tinyc_buf_printf(out, first ? "  attention mask: from constants, its reductions inline: %%%d" :
				 " %%%d", n);
		first = 0;
	}
	if (!first)
		tinyc_buf_printf(out, " (no buffer: proven causal, or evaluated per score)\n");
}

const tinyc_plan_provider tinyc_plan_attention = {"attention", attention_propose, NULL, NULL,
						  attention_print_plan, NULL};
