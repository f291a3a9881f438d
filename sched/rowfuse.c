/* Row groups: the choice between one fused row kernel and one kernel per row reduction
 * (see sched/rowfuse.h).
 *
 * The estimate of a ROWFUSE candidate (TX threads per row, RY rows per block):
 *   - memory: the kernel's ideal traffic (inputs once, output once) when the row stays in
 *     registers (each thread holds ceil(C / TX) elements of every row-shaped value); when
 *     it does not fit, every phase (one per reduction, and the output) re-reads the
 *     inputs.  Bandwidth is kept by the loads in flight (Little's law per SM, as plan.c):
 *     a register-resident row issues all its loads at once;
 *   - lanes: a row of C elements over TX lanes uses C / (ceil(C / TX) * TX) of them;
 *   - compute: every elementwise node once per element;
 *   - reductions: each wave of resident blocks waits, per row reduction, for the shuffles
 *     (a warp, 0.15 us) or the shuffles, a barrier and the second level (a block, 0.4 us).
 *   - shared mode (the row does not fit in registers but its inputs fit in shared memory):
 *     each phase reads the staged row back at 128 bytes per clock per SM, added on top.
 * The estimate is the largest of the first three, plus the shared-memory time, plus one
 * launch.  Residency is limited by threads, 32 blocks, registers (about 32 + ceil(C/TX) *
 * (inputs + 2) per thread in register mode) and shared memory per SM.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/rowfuse.h"

#define ROWFUSE_LAUNCH_US 2.0	/* one kernel launch (plan.c's) */
#define WARP_REDUCE_US 0.15	/* one warp-shuffle reduction per wave of blocks */
#define BLOCK_REDUCE_US 0.4	/* one block reduction (shuffles, barrier, second level) */
#define MAX_ROW_SLOTS 16	/* row elements a thread keeps in registers, per value */
#define MAX_BLOCKS_PER_SM 32	/* resident blocks per SM */

void tinyc_rowfuse_free(tinyc_rowfuse *rf)
{
	if (!rf)
		return;
	for (int i = 0; i < rf->ngroup; i++)
		free(rf->groups[i].reds);
	free(rf->groups);
	free(rf->fused);
	free(rf);
}

/* Whether two dims are certainly equal under s's bindings. */
static int same_dim(const tinyc_schedule *s, const tinyc_dim *a, const tinyc_dim *b)
{
	if (a->sym >= 0 && a->sym == b->sym)
		return 1;
	int64_t va = tinyc_sched_dim(s, a), vb = tinyc_sched_dim(s, b);
	return va >= 0 && va == vb;
}

int tinyc_rowfuse_row_space(const tinyc_schedule *s, int r, int *ro, tinyc_dim *o, tinyc_dim *c,
			    int *axis)
{
	const tinyc_graph *g = s->g;
	const tinyc_uop *u = &g->nodes[r];
	if (u->op != TINYC_OP_REDUCE)
		return 0;
	const tinyc_uop *in = &g->nodes[u->src[0]];
	int axes[TINYC_MAX_RANK];
	if (in->rank < 1 || tinyc_reduce_axes(g, r, axes) != 1)
		return 0;
	int R = in->rank, a = axes[0], n = 0;
	if (u->rank == R) {	/* keepdim: the reduced dim is 1 */
		if (tinyc_sched_dim(s, &u->shape[a]) != 1)
			return 0;
	} else if (u->rank != R - 1) {
		return 0;
	}
	for (int d = 0; d < R; d++) {
		if (d == a)
			continue;
		if (!same_dim(s, &u->shape[u->rank == R ? d : n], &in->shape[d]))
			return 0;
		o[n++] = in->shape[d];
	}
	*ro = R;
	*c = in->shape[a];
	*axis = a;
	return 1;
}

int tinyc_rowfuse_is_fused(const tinyc_schedule *s, int r)
{
	return s->rowfuse && r >= 0 && r < s->rowfuse->nnode && s->rowfuse->fused[r];
}

/* Whether node r is a REDUCE flagged in fuse (per node). */
static int flagged(const tinyc_schedule *s, const unsigned char *fuse, int r)
{
	return fuse && r >= 0 && r < s->g->n && fuse[r];
}

/* The fused reductions of k under the flags fuse, in graph order. */
static int kernel_reds(const tinyc_schedule *s, const unsigned char *fuse, const tinyc_skernel *k,
		       int *reds)
{
	int n = 0;
	for (int j = 0; j < k->nred; j++)
		if (flagged(s, fuse, k->reds[j]))
			reds[n++] = k->reds[j];
	for (int i = 1; i < n; i++)	/* graph order */
		for (int j = i; j > 0 && reds[j - 1] > reds[j]; j--) {
			int t = reds[j]; reds[j] = reds[j - 1]; reds[j - 1] = t;
		}
	return n;
}

int tinyc_rowfuse_kernel_reds(const tinyc_schedule *s, const tinyc_skernel *k, int *reds)
{
	return kernel_reds(s, s->rowfuse ? s->rowfuse->fused : NULL, k, reds);
}

/* ------------------------------------------------------------ the provider ---- */

/* Elementwise operations of the kernel's value per element: the nodes the kernel computes
 * (a walk from its value that stops at materialised values), reductions included. */
static double ops_per_element(const tinyc_schedule *s, const tinyc_skernel *k)
{
	const tinyc_graph *g = s->g;
	unsigned char *seen = calloc((size_t)g->n + 1, 1);
	int *stack = malloc(sizeof(int) * ((size_t)g->n + 1));
	double ops = 0;
	if (!seen || !stack) {
		free(seen), free(stack);
		return 1;
	}
	int sp = 0;
	stack[sp++] = k->value;
	seen[k->value] = 1;
	while (sp > 0) {
		int i = stack[--sp];
		const tinyc_uop *u = &g->nodes[i];
		if (i != k->value && s->node_buf[i] >= 0)
			continue;	/* loaded */
		tinyc_opkind kind = tinyc_op_info(u->op)->kind;
		if ((kind == TINYC_KIND_ELEMENTWISE && u->op != TINYC_OP_CAST &&
		     u->op != TINYC_OP_BITCAST) || kind == TINYC_KIND_REDUCE)
			ops += 1;
		for (int j = 0; j < u->nsrc; j++)
			if (!seen[u->src[j]]) {
				seen[u->src[j]] = 1;
				stack[sp++] = u->src[j];
			}
	}
	free(seen), free(stack);
	return ops > 0 ? ops : 1;
}

/* Fill the estimate and description of a ROWFUSE candidate with TX threads per row, RY
 * rows per block and `slots` row elements per thread in registers (0: re-read), or the row
 * inputs staged in `smem` bytes of shared memory. */
static void estimate(const tinyc_schedule *s, const tinyc_skernel *k, int nf, double rows,
		     double C, double ops, tinyc_plan *p)
{
	int TX = p->block[0], RY = p->block[1];
	int64_t slots = p->tile[0], smem = p->tile[1] > 1 ? p->tile[1] : 0;
	double tpb = (double)TX * RY;
	double regs = slots ? 32.0 + (double)slots * (k->nin + 2) : 40.0;
	double per_sm = floor(s->dev.max_threads_per_sm / tpb);
	double by_regs = floor(s->dev.regs_per_sm / (regs * tpb));
	if (s->dev.regs_per_sm > 0 && by_regs < per_sm)
		per_sm = by_regs;
	if (per_sm > MAX_BLOCKS_PER_SM)
		per_sm = MAX_BLOCKS_PER_SM;
	if (smem && s->dev.smem_per_sm > 0 && floor((double)s->dev.smem_per_sm / (smem + 1024)) < per_sm)
		per_sm = floor((double)s->dev.smem_per_sm / (smem + 1024));
	if (per_sm < 1)
		per_sm = 1;
	double blocks = ceil(rows / RY);
	double resident = s->dev.sm_count * per_sm;
	double waves = ceil(blocks / resident);
	double threads = (blocks < resident ? blocks : resident) * tpb;
	const tinyc_sbuf *ob = &s->bufs[k->out_buf];
	double out_bytes = k->out_elems * tinyc_dtype_size(ob->dtype);
	double in_bytes = k->bytes - out_bytes;
	double bytes = slots || smem ? k->bytes : k->bytes + in_bytes * nf;
	double elem = rows * C > 0 ? in_bytes / (rows * C) : 4;	/* input bytes per element */
	double inflight = (slots ? (double)slots : 4.0) * (elem > 1 ? elem : 1);
	double lanes = C / (ceil(C / TX) * TX);
	double mem = tinyc_plan_inflight_eff(s, threads, inflight);
	p->eff = mem * lanes;
	double t_mem = bytes / (s->dev.peak_bandwidth_gbs * 1e9) / (p->eff > 1e-6 ? p->eff : 1e-6);
	double t_fl = rows * C * ops / (s->fp32_tflops * 1e12) / lanes;
	double t_red = waves * nf * (TX > 32 ? BLOCK_REDUCE_US : WARP_REDUCE_US) * 1e-6;
	double t = t_mem > t_fl ? t_mem : t_fl;
	t = t > t_red ? t : t_red;
	/* shared mode: every phase reads the staged row back (128 bytes per clock per SM),
	 * counted on top (conservatively: not overlapped with the DRAM traffic) */
	if (smem)
		t += (nf + 1) * (double)smem * rows / (128.0 * s->dev.sm_count * s->dev.clock_khz * 1e3);
	p->est_us = t * 1e6 + ROWFUSE_LAUNCH_US;
	if (smem)
		snprintf(p->desc, sizeof(p->desc),
			 "rowfuse block per row, %d threads x %d rows, row in shared memory (%" PRId64 " B)",
			 TX, RY, smem);
	else if (slots)
		snprintf(p->desc, sizeof(p->desc),
			 "rowfuse %s per row, %d threads x %d rows, row in registers (%" PRId64 " per thread)",
			 TX > 32 ? "block" : "warp", TX, RY, slots);
	else
		snprintf(p->desc, sizeof(p->desc),
			 "rowfuse %s per row, %d threads x %d rows, row re-read per reduction",
			 TX > 32 ? "block" : "warp", TX, RY);
}

/* Bytes per column of the kernel's row inputs (buffers of shape [O..., C], unstrided) as the
 * kernel computes on them (16-bit floats widened to float). */
static int64_t row_input_bytes(const tinyc_schedule *s, const tinyc_skernel *k, int ro,
			       const tinyc_dim *o, const tinyc_dim *c)
{
	int64_t n = 0;
	for (int j = 0; j < k->nin; j++) {
		const tinyc_sbuf *b = &s->bufs[k->in_bufs[j]];
		int same = b->rank == ro && !b->has_strides && same_dim(s, &b->shape[ro - 1], c);
		for (int d = 0; d < ro - 1 && same; d++)
			same = same_dim(s, &b->shape[d], &o[d]);
		if (same)
			n += tinyc_dtype_is_16bit_float(b->dtype) ? 4 : tinyc_dtype_size(b->dtype);
	}
	return n;
}

/* The provider: warp-per-row and block-per-row candidates for a kernel with fused row
 * reductions, replacing the other providers' candidates. */
static int rowfuse_propose(tinyc_ctx *ctx, tinyc_schedule *s, tinyc_skernel *k)
{
	int reds[k->nred + 1];
	int nf = tinyc_rowfuse_kernel_reds(s, k, reds);
	if (!nf)
		return 0;
	int ro, axis;
	tinyc_dim o[TINYC_MAX_RANK], c;
	if (!tinyc_rowfuse_row_space(s, reds[0], &ro, o, &c, &axis))
		return tinyc_error(ctx, "ScheduleInvalid", "kernel %s: a fused reduction is not a row reduction",
				   k->name);
	double rows = 1;
	for (int d = 0; d < ro - 1; d++)
		rows *= tinyc_sched_dim_est(s, &o[d]);
	double C = tinyc_sched_dim_est(s, &c);
	int64_t Cknown = tinyc_sched_dim(s, &c);
	double ops = ops_per_element(s, k);
	/* the partition counted each inline reduction's operand once per output element; a row
	 * kernel computes every node once per row element */
	k->flops = rows * C * ops;
	/* every extent known and small: int index arithmetic */
	tinyc_dtype idx = TINYC_INT;
	for (int j = 0; j <= k->nin; j++) {
		const tinyc_sbuf *b = &s->bufs[j < k->nin ? k->in_bufs[j] : k->out_buf];
		double e = 1;
		for (int d = 0; d < b->rank; d++) {
			int64_t v = tinyc_sched_dim(s, &b->shape[d]);
			if (v < 0 || b->has_strides)
				idx = TINYC_LONG;
			e *= v < 0 ? 1 : (double)v;
		}
		if (e > (double)(INT64_C(1) << 30))
			idx = TINYC_LONG;
	}
	if (rows * C > (double)(INT64_C(1) << 30) || Cknown < 0)
		idx = TINYC_LONG;
	for (int c2 = 0; c2 < k->ncand; c2++)	/* they would recompute a reduction per element */
		if (k->cands[c2].ext_free)
			k->cands[c2].ext_free(k->cands[c2].ext);
	k->ncand = 0;
	int maxthr = s->dev.max_threads_per_block > 0 ? s->dev.max_threads_per_block : 1024;
	static const int shapes[][2] = {{32, 4}, {128, 1}, {256, 1}, {512, 1}, {1024, 1}};
	/* the options record may keep only one row width (tests, measurements) */
	int pin = s->opt.rowfuse_threads;
	for (size_t i = 0; i < sizeof(shapes) / sizeof(*shapes); i++) {
		tinyc_plan p = {0};
		p.kind = TINYC_PLAN_ROWFUSE;
		p.block[0] = shapes[i][0];
		p.block[1] = shapes[i][1];
		p.block[2] = 1;
		if (p.block[0] * p.block[1] > maxthr || (pin > 0 && p.block[0] != pin))
			continue;
		p.ntile = 1;
		p.bind_dim[0] = ro - 1;
		p.tile[1] = p.tile[2] = 1;
		int64_t slots = Cknown > 0 ? (Cknown + p.block[0] - 1) / p.block[0] : 0;
		p.tile[0] = slots <= MAX_ROW_SLOTS ? slots : 0;
		/* too long for registers: a block stages the row's inputs in shared memory when
		 * they fit (the partials of the reductions take the rest) */
		int64_t staged = Cknown > 0 ? row_input_bytes(s, k, ro, o, &c) * Cknown : 0;
		if (!p.tile[0] && p.block[0] > 32 && staged > 0 &&
		    staged + 32 * 8 * (nf + 1) <= s->dev.smem_per_block_optin)
			p.tile[1] = staged;
		p.red_axis = ro - 1;
		p.index_dtype = idx;
		estimate(s, k, nf, rows, C, ops, &p);
		if (tinyc_plan_add(ctx, k, &p) < 0)
			return -1;
	}
	return 0;
}

const tinyc_plan_provider tinyc_plan_rowfuse = {
	"rowfuse", rowfuse_propose, tinyc_rowfuse_print, tinyc_rowfuse_print_kernel, NULL, NULL,
};

/* ------------------------------------------------------------ the decision ---- */

/* Append a group record to rf (reds copied). */
static tinyc_rowgroup *add_group(tinyc_ctx *ctx, tinyc_rowfuse *rf, int root, const int *reds,
				 int n)
{
	tinyc_rowgroup *ng = tinyc_realloc(ctx, rf->groups, sizeof(*ng) * (size_t)(rf->ngroup + 1));
	if (!ng)
		return NULL;
	rf->groups = ng;
	tinyc_rowgroup *gr = &ng[rf->ngroup];
	memset(gr, 0, sizeof(*gr));
	if (!(gr->reds = tinyc_malloc(ctx, sizeof(int) * (size_t)(n + 1))))
		return NULL;
	memcpy(gr->reds, reds, sizeof(int) * (size_t)n);
	gr->nred = n;
	gr->root = root;
	rf->ngroup++;
	return gr;
}

/* Partition with the flags fuse (NULL: none), set the device and plan.  The schedule gets
 * a row-group record with a copy of fuse so that the provider sees it. */
static tinyc_schedule *plan_partition(tinyc_ctx *ctx, const tinyc_graph *g, const tinyc_bindings *b,
				      const unsigned char *fuse, const tinyc_sched_options *opts,
				      const struct tinyc_polyview *pv, const struct tinyc_evt_set *evts,
				      int plan)
{
	tinyc_schedule *s = tinyc_partition_fused(ctx, g, b, fuse, opts);
	if (!s)
		return NULL;
	if (!(s->rowfuse = tinyc_calloc(ctx, 1, sizeof(*s->rowfuse))) ||
	    !(s->rowfuse->fused = tinyc_calloc(ctx, (size_t)g->n + 1, 1)))
		goto fail;
	s->rowfuse->nnode = g->n;
	if (fuse)
		memcpy(s->rowfuse->fused, fuse, (size_t)g->n);
	tinyc_schedule_set_options(s, opts);
	if (plan) {
		s->pv = pv;
		s->evts = evts;
		int rc = tinyc_schedule_plan(ctx, s);
		s->pv = NULL, s->evts = NULL;
		if (rc < 0)
			goto fail;
	}
	return s;
fail:
	tinyc_schedule_free(s);
	return NULL;
}

/* Whether row reductions a and b run over the same rows of the same length. */
static int same_rows(const tinyc_schedule *s, int a, int b)
{
	int ra, rb, x;
	tinyc_dim oa[TINYC_MAX_RANK], ca, ob[TINYC_MAX_RANK], cb;
	tinyc_rowfuse_row_space(s, a, &ra, oa, &ca, &x);
	tinyc_rowfuse_row_space(s, b, &rb, ob, &cb, &x);
	int same = ra == rb && same_dim(s, &ca, &cb);
	for (int d = 0; d < ra - 1 && same; d++)
		same = same_dim(s, &oa[d], &ob[d]);
	return same;
}

/* Check the kernels of the fused partition s.  A kernel's group is its last row reduction
 * (the nearest to the output) and those over the same rows; its value must be a row or one
 * value per row of them; no other kernel may compute them.  The flags of the reductions
 * that fail are cleared (they are materialised again) and recorded with the reason.
 * Returns how many were cleared, or -1. */
static int check_groups(tinyc_ctx *ctx, const tinyc_schedule *s, unsigned char *fuse,
			tinyc_rowfuse *rf)
{
	const tinyc_graph *g = s->g;
	int cleared = 0;
	for (int i = 0; i < s->nkern; i++) {
		const tinyc_skernel *k = &s->kerns[i];
		int reds[k->nred + 1], drop[k->nred + 1];
		int nf = kernel_reds(s, fuse, k, reds);
		if (!nf)
			continue;
		const char *why = NULL;
		int last = reds[nf - 1], ndrop = 0;
		for (int j = 0; j < nf; j++)
			if (!same_rows(s, reds[j], last)) {
				drop[ndrop++] = reds[j];
				why = "runs over other rows than the group's last reduction";
			}
		int ro, a;
		tinyc_dim o[TINYC_MAX_RANK], c;
		tinyc_rowfuse_row_space(s, last, &ro, o, &c, &a);
		const tinyc_uop *v = &g->nodes[k->value];
		int vok = v->rank == ro || v->rank == ro - 1;
		for (int d = 0; d < ro - 1 && vok; d++)
			vok = same_dim(s, &v->shape[d], &o[d]);
		if (vok && v->rank == ro)
			vok = same_dim(s, &v->shape[ro - 1], &c) || tinyc_sched_dim(s, &v->shape[ro - 1]) == 1;
		if (!vok) {
			why = "the kernel's value is neither a row nor one value per row";
			memcpy(drop, reds, sizeof(int) * (size_t)nf);
			ndrop = nf;
		}
		for (int j = 0; j < nf && vok; j++) {
			int users = 0, listed = 0;
			for (int e = 0; e < s->nkern; e++)
				for (int r = 0; r < s->kerns[e].nred; r++)
					users += s->kerns[e].reds[r] == reds[j];
			for (int d = 0; d < ndrop; d++)
				listed |= drop[d] == reds[j];
			if (users > 1 && !listed) {
				drop[ndrop++] = reds[j];
				why = "would be computed by more than one kernel";
			}
		}
		if (!ndrop)
			continue;
		tinyc_rowgroup *gr = add_group(ctx, rf, k->root, drop, ndrop);
		if (!gr)
			return -1;
		snprintf(gr->why, sizeof(gr->why), "not fused: %s", why);
		for (int j = 0; j < ndrop; j++)
			fuse[drop[j]] = 0;
		cleared += ndrop;
	}
	return cleared;
}

/* Whether REDUCE r is a contraction (a MUL under a REDUCE ADD, through movement and
 * casts, whose two operands are both broadcast): the matmul template's, never a row
 * reduction. */
static int is_contraction(const tinyc_schedule *s, int r)
{
	const tinyc_graph *g = s->g;
	if (g->nodes[r].redop != TINYC_RED_ADD)
		return 0;
	int m = g->nodes[r].src[0];
	while (g->nodes[m].op == TINYC_OP_PERMUTE || g->nodes[m].op == TINYC_OP_RESHAPE ||
	       g->nodes[m].op == TINYC_OP_CAST)
		m = g->nodes[m].src[0];
	if (g->nodes[m].op != TINYC_OP_MUL)
		return 0;
	int broadcast = 0;
	for (int i = 0; i < 2; i++) {
		int o = g->nodes[m].src[i], b = !tinyc_operand_injective(g, s->bind, m, i);
		while (!b && (g->nodes[o].op == TINYC_OP_PERMUTE || g->nodes[o].op == TINYC_OP_RESHAPE ||
			      g->nodes[o].op == TINYC_OP_CAST))
			o = g->nodes[o].src[0];
		if (!b && g->nodes[o].op == TINYC_OP_EXPAND)
			b = !tinyc_operand_injective(g, s->bind, o, 0);
		broadcast += b;
	}
	return broadcast == 2;
}

/* Sum the estimates of the kernels of the plain partition s0 that compute what kernel k
 * of the fused partition computes: those storing k's root or one of its reductions. */
static double split_estimate(const tinyc_schedule *s0, const tinyc_skernel *k, const int *reds,
			     int nf, int *nsplit)
{
	double t = 0;
	*nsplit = 0;
	for (int e = 0; e < s0->nkern; e++) {
		const tinyc_skernel *k0 = &s0->kerns[e];
		int mine = k0->root == k->root;
		for (int j = 0; j < nf && !mine; j++)
			mine = k0->root == reds[j];
		const tinyc_plan *p = tinyc_skernel_plan(k0);
		if (mine && p) {
			t += p->est_us;
			(*nsplit)++;
		}
	}
	return t;
}

tinyc_schedule *tinyc_schedule_build(tinyc_ctx *ctx, const tinyc_graph *g, const tinyc_bindings *b,
				     const tinyc_sched_options *opts, const struct tinyc_polyview *pv,
				     const struct tinyc_evt_set *evts)
{
	tinyc_schedule *s0 = plan_partition(ctx, g, b, NULL, opts, pv, evts, 1);
	tinyc_schedule *s1 = NULL, *s2 = NULL;
	unsigned char *fuse = NULL;
	tinyc_rowfuse *rf = NULL;
	if (!s0)
		return NULL;
	/* the candidates: row reductions the plain partition stores in a kernel of their own
	 * that is not a contraction */
	int ncand = 0;
	if (!(fuse = tinyc_calloc(ctx, (size_t)g->n + 1, 1)) ||
	    !(rf = tinyc_calloc(ctx, 1, sizeof(*rf))))
		goto fail;
	/* no_rowfuse: the plain partition (comparisons) */
	for (int i = 0; i < s0->nkern && !opts->no_rowfuse; i++) {
		const tinyc_skernel *k = &s0->kerns[i];
		const tinyc_plan *p = tinyc_skernel_plan(k);
		int ro, a;
		tinyc_dim o[TINYC_MAX_RANK], c;
		if (k->root != k->value || !p ||
		    (p->kind != TINYC_PLAN_MAP && p->kind != TINYC_PLAN_ROWRED) ||
		    !tinyc_rowfuse_row_space(s0, k->root, &ro, o, &c, &a) || is_contraction(s0, k->root) ||
		    tinyc_sched_dim(s0, &c) == 1)
			continue;
		fuse[k->root] = 1;
		ncand++;
	}
	if (!ncand) {
		free(fuse);
		tinyc_rowfuse_free(rf);
		return s0;
	}
	/* partition with the candidates inline until every group is well formed */
	for (;;) {
		s1 = plan_partition(ctx, g, b, fuse, opts, pv, evts, 0);
		if (!s1)
			goto fail;
		int cleared = check_groups(ctx, s1, fuse, rf);
		if (cleared < 0)
			goto fail;
		if (!cleared)
			break;
		tinyc_schedule_free(s1);
		s1 = NULL;
	}
	memcpy(s1->rowfuse->fused, fuse, (size_t)g->n);
	s1->pv = pv, s1->evts = evts;
	int rc = tinyc_schedule_plan(ctx, s1);
	s1->pv = NULL, s1->evts = NULL;
	if (rc < 0)
		goto fail;
	/* each group: the fused kernel against the kernels it replaces */
	int nfused = 0, nsplit_groups = 0;
	for (int i = 0; i < s1->nkern; i++) {
		const tinyc_skernel *k = &s1->kerns[i];
		int reds[k->nred + 1];
		int nf = kernel_reds(s1, fuse, k, reds);
		if (!nf)
			continue;
		tinyc_rowgroup *gr = add_group(ctx, rf, k->root, reds, nf);
		if (!gr)
			goto fail;
		const tinyc_plan *p = tinyc_skernel_plan(k);
		gr->fused_us = p ? p->est_us : INFINITY;
		gr->split_us = split_estimate(s0, k, reds, nf, &gr->nsplit);
		if (gr->fused_us <= gr->split_us) {
			gr->fused = 1;
			nfused++;
			snprintf(gr->why, sizeof(gr->why), "fused: one kernel is estimated faster");
		} else {
			nsplit_groups++;
			snprintf(gr->why, sizeof(gr->why), "not fused: the %d kernels are estimated faster",
				 gr->nsplit);
		}
	}
	tinyc_schedule *final;
	if (!nfused) {
		final = s0, s0 = NULL;
		memset(fuse, 0, (size_t)g->n);
	} else if (!nsplit_groups) {
		final = s1, s1 = NULL;
	} else {
		for (int i = 0; i < rf->ngroup; i++)
			if (!rf->groups[i].fused)
				for (int j = 0; j < rf->groups[i].nred; j++)
					fuse[rf->groups[i].reds[j]] = 0;
		if (!(s2 = plan_partition(ctx, g, b, fuse, opts, pv, evts, 1)))
			goto fail;
		final = s2, s2 = NULL;
	}
	rf->nnode = g->n;
	rf->fused = fuse, fuse = NULL;
	tinyc_rowfuse_free(final->rowfuse);
	final->rowfuse = rf;
	tinyc_schedule_free(s0);
	tinyc_schedule_free(s1);
	return final;
fail:
	free(fuse);
	tinyc_rowfuse_free(rf);
	tinyc_schedule_free(s0);
	tinyc_schedule_free(s1);
	tinyc_schedule_free(s2);
	return NULL;
}

/* ------------------------------------------------------------------- print ---- */

void tinyc_rowfuse_print(const tinyc_schedule *s, tinyc_buf *out)
{
	const tinyc_rowfuse *rf = s->rowfuse;
	for (int i = 0; rf && i < rf->ngroup; i++) {
		const tinyc_rowgroup *gr = &rf->groups[i];
		tinyc_buf_puts(out, "row group");
		for (int j = 0; j < gr->nred; j++)
			tinyc_buf_printf(out, " %%%s", s->g->nodes[gr->reds[j]].id);
		tinyc_buf_printf(out, " -> %%%s:", s->g->nodes[gr->root].id);
		if (gr->fused_us > 0)
			tinyc_buf_printf(out, " one kernel est %.2f us, %d kernels est %.2f us;",
					 gr->fused_us, gr->nsplit, gr->split_us);
		tinyc_buf_printf(out, " %s\n", gr->why);
	}
}

void tinyc_rowfuse_print_kernel(const tinyc_schedule *s, const tinyc_skernel *k, tinyc_buf *out)
{
	int reds[k->nred + 1];
	int nf = tinyc_rowfuse_kernel_reds(s, k, reds);
	if (!nf)
		return;
	int ro, a;
	tinyc_dim o[TINYC_MAX_RANK], c;
	if (!tinyc_rowfuse_row_space(s, reds[0], &ro, o, &c, &a))
		return;
	tinyc_buf_puts(out, "  row group: reductions");
	for (int j = 0; j < nf; j++)
		tinyc_buf_printf(out, " %%%s", s->g->nodes[reds[j]].id);
	tinyc_buf_puts(out, " over rows ");
	tinyc_print_shape(s->g, ro - 1, o, out);
	tinyc_buf_puts(out, " of length ");
	tinyc_print_shape(s->g, 1, &c, out);
	tinyc_buf_puts(out, ", one kernel\n");
}
