/* The schedule plan of the kernels that are not contractions (seed 002 §5, DESIGN.md §1):
 * candidates, estimates, the choice and the dump of the "schedule" stage.
 *
 * The cost model is the seed's, time = max(FLOPs / peak, bytes / bandwidth), divided by an
 * efficiency factor that says how much of the device a candidate keeps busy:
 *   - parallelism: threads launched over half the device's resident threads (capped at 1);
 *   - utilisation: useful points over the points the tiles cover (tails waste lanes);
 *   - coalescing: a thread-serial reduction along the contiguous axis makes every warp load
 *     touch 32 sectors (later iterations find them in L1): its bytes count twice; threads
 *     of a block striding over a non-contiguous axis read one element per 32-byte sector:
 *     their bytes count 32 / element size times.
 *   - memory-level parallelism: DRAM keeps its bandwidth only with bandwidth x latency bytes
 *     of loads in flight, per SM resident threads x the bytes each has outstanding
 *     (unrolled loops: several points or iterations; measured on an H100, one 4-byte load
 *     per thread reached 46% of the bandwidth, as this predicts).
 * A block-cooperative reduction (ROWRED) takes at least one block-wide reduction (shuffles,
 * a barrier) per wave of blocks.  Every candidate pays one launch.
 * Unbound symbols are assumed to be 1024 in estimates (the dump says so).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower.h"
#include "poly/poly.h"
#include "sched/attention.h"
#include "sched/matmul.h"
#include "sched/rearrange.h"
#include "sched/rowfuse.h"
#include "sched/schedule.h"

#define LAUNCH_US 2.0		/* one kernel launch */
#define BLOCK_REDUCE_US 2.5	/* one wave of block-wide reductions (measured on an H100:
				 * 2^20 blocks of 32 threads reducing 16 floats took 640 us) */
#define MAX_BLOCKS_PER_SM 32	/* resident blocks per SM (sm_80 and sm_90) */
#define LATENCY_NS 700.0	/* DRAM latency the loads in flight must cover (Little's law) */
#define SERIAL_CONTIG_PENALTY 2.0	/* a thread walking its own contiguous row: each warp load
					 * touches 32 sectors, later iterations hit them in L1 */

/* Plan providers, tried in order for every kernel, their dump hooks called in the same
 * order.  A new plan kind (the contraction template, the rearrange kernel) adds its
 * provider record here. */
static const tinyc_plan_provider *const providers[] = {
	&tinyc_plan_generic,
	&tinyc_plan_matmul,	/* contractions: replaces generic candidates (sched/matmul.c) */
	&tinyc_plan_conv_direct,	/* depthwise convs: replaces generic candidates */
	&tinyc_plan_rearrange,	/* after the others: replaces generic candidates */
	&tinyc_plan_rowfuse,	/* row groups: replaces every other candidate (sched/rowfuse.c) */
	&tinyc_plan_attention,	/* attention outputs: replaces every other candidate */
};
#define NPROVIDERS (sizeof(providers) / sizeof(*providers))

const char *tinyc_plan_kind_name(tinyc_plan_kind k)
{
	static const char *const n[] = {"map", "rowred", "matmul", "rearrange", "rowfuse",
					 "attention", "conv_direct"};
	return k >= 0 && k < TINYC_PLAN_KIND_COUNT ? n[k] : "?";
}

/* FP32 lanes (FMA units) per SM by compute capability. */
static int fp32_lanes_per_sm(tinyc_arch a)
{
	if (a.major == 8 && a.minor == 0)
		return 64;
	if (a.major >= 8)
		return 128;
	if (a.major == 7)
		return 64;
	return 128;
}

void tinyc_sched_options_defaults(tinyc_sched_options *o)
{
	memset(o, 0, sizeof(*o));
	o->wgmma_pp = o->wgmma_pack = o->wgmma_cluster = o->wgmma_fit = -1;
	o->attn_softmax = o->attn_wgmma = o->pdl = o->tma_store = o->epi_preload = -1;
	o->wgmma_swap = 1;	/* measured faster at decode M = 8-32 (docs/matmul-results.md) */
}

int tinyc_sched_options_for_target(tinyc_ctx *ctx, const char *target, tinyc_sched_options *o)
{
	const tinyc_device_info *d = tinyc_target_info(ctx, target ? target : "sm_80");
	if (!d)
		return -1;
	tinyc_sched_options_defaults(o);
	o->dev = *d;
	o->dev_origin = target ? "--target" : "default target (no GPU found; give --target)";
	return 0;
}

/* "auto" for a knob at its default (0, or -1 for the pins), else its value. */
static void print_knob(tinyc_buf *out, const char *name, int v, int dflt)
{
	if (v == dflt)
		tinyc_buf_printf(out, " %s auto,", name);
	else
		tinyc_buf_printf(out, " %s %d,", name, v);
}

void tinyc_sched_options_print(const tinyc_sched_options *o, tinyc_buf *out)
{
	tinyc_buf_printf(out, "# options: matmul %s, tile ", o->matmul ? o->matmul : "auto");
	if (o->tile[4])	/* the split-K field only when forced */
		tinyc_buf_printf(out, "%dx%dx%dx%dx%d,", o->tile[0], o->tile[1], o->tile[2],
				 o->tile[3], o->tile[4]);
	else if (tinyc_sched_options_tile_forced(o))
		tinyc_buf_printf(out, "%dx%dx%dx%d,", o->tile[0], o->tile[1], o->tile[2], o->tile[3]);
	else
		tinyc_buf_puts(out, "auto,");
	print_knob(out, "wgmma_n", o->wgmma_n, 0);
	print_knob(out, "wgmma_raster", o->wgmma_raster, 0);
	print_knob(out, "wgmma_pp", o->wgmma_pp, -1);
	print_knob(out, "wgmma_pack", o->wgmma_pack, -1);
	if (o->wgmma_cluster >= 0)	/* printed only when forced */
		tinyc_buf_printf(out, " wgmma_cluster %d,", o->wgmma_cluster);
	if (o->wgmma_fit == 0)	/* printed only when off */
		tinyc_buf_puts(out, " wgmma_fit off,");
	if (o->wgmma_streamk == 1)	/* printed only when set */
		tinyc_buf_puts(out, " wgmma_streamk on,");
	else if (o->wgmma_streamk > 1)
		tinyc_buf_printf(out, " wgmma_streamk %dx%d,", o->wgmma_streamk, o->wgmma_streamk_grid);
	if (o->gemv_mma)	/* printed only when set */
		tinyc_buf_printf(out, " gemv_mma %d,", o->gemv_mma);
	if (o->wgmma_swap != 1)	/* printed only when not the default */
		tinyc_buf_printf(out, " wgmma_swap %d,", o->wgmma_swap);
	if (o->pdl >= 0)	/* printed only when set */
		tinyc_buf_puts(out, o->pdl ? " pdl on," : " pdl off,");
	if (o->wait_hint)	/* printed only when set */
		tinyc_buf_printf(out, " wait_hint %d ns,", o->wait_hint);
	if (o->epi_preload >= 0)	/* printed only when set */
		tinyc_buf_puts(out, o->epi_preload ? " epi_preload on," : " epi_preload off,");
	if (o->tma_store >= 0)	/* printed only when set */
		tinyc_buf_puts(out, o->tma_store ? " tma_store on," : " tma_store off,");
	tinyc_buf_printf(out, " stage %s, pair %s\n", o->no_stage ? "off" : "on",
			 o->no_pair ? "off" : "on");
	tinyc_buf_printf(out, "# options: rowfuse %s,", o->no_rowfuse ? "off" : "on");
	print_knob(out, "rowfuse_threads", o->rowfuse_threads, 0);
	tinyc_buf_printf(out, " attention %s,", o->no_attention ? "off" : o->attn_simt ? "simt" : "on");
	if (o->attn_tile[0])	/* printed only when forced */
		tinyc_buf_printf(out, o->attn_tile[4] ? " attn_tile %dx%dx%dx%dx%d," : " attn_tile %dx%dx%dx%d,",
				 o->attn_tile[0], o->attn_tile[1], o->attn_tile[2], o->attn_tile[3], o->attn_tile[4]);
	if (o->attn_softmax >= 0)
		tinyc_buf_printf(out, " attn_softmax %d,", o->attn_softmax);
	if (o->attn_wgmma >= 0)
		tinyc_buf_printf(out, " attn_wgmma %d,", o->attn_wgmma);
	tinyc_buf_puts(out, " tune ");
	if (o->tune_off)
		tinyc_buf_puts(out, "off\n");
	else
		tinyc_buf_printf(out, "%d entries\n", o->ntune);
}

void tinyc_schedule_set_options(tinyc_schedule *s, const tinyc_sched_options *o)
{
	s->opt = *o;
	s->dev = o->dev;
	s->dev_origin = o->dev_origin;
	s->fp32_tflops = 2.0 * fp32_lanes_per_sm(s->dev.arch) * s->dev.sm_count *
			 (s->dev.clock_khz * 1e3) / 1e12;
}

int tinyc_schedule_set_device(tinyc_ctx *ctx, tinyc_schedule *s, const char *opt_target)
{
	tinyc_sched_options o;
	if (tinyc_sched_options_for_target(ctx, opt_target, &o) < 0)
		return -1;
	tinyc_schedule_set_options(s, &o);
	return 0;
}

int tinyc_plan_add(tinyc_ctx *ctx, tinyc_skernel *k, const tinyc_plan *p)
{
	tinyc_plan *nc = tinyc_realloc(ctx, k->cands, sizeof(*nc) * (size_t)(k->ncand + 1));
	if (!nc)
		return -1;
	k->cands = nc;
	nc[k->ncand] = *p;
	return k->ncand++;
}

double tinyc_plan_estimate_us(const tinyc_schedule *s, double flops, double bytes, double eff)
{
	double t_compute = flops / (s->fp32_tflops * 1e12);
	double t_memory = bytes / (s->dev.peak_bandwidth_gbs * 1e9);
	double t = t_compute > t_memory ? t_compute : t_memory;
	if (eff < 1e-6)
		eff = 1e-6;
	return t / eff * 1e6 + LAUNCH_US;
}

const tinyc_plan *tinyc_skernel_plan(const tinyc_skernel *k)
{
	return k->choice >= 0 && k->choice < k->ncand ? &k->cands[k->choice] : NULL;
}

/* ------------------------------------------------------- the generic provider ---- */

/* Whether every extent the kernel touches is known and its index arithmetic fits int. */
static tinyc_dtype kernel_index_dtype(const tinyc_schedule *s, const tinyc_skernel *k)
{
	const int64_t lim = INT64_C(1) << 30;	/* headroom for tile overshoot */
	int nb = k->nin + 1;
	for (int j = 0; j < nb; j++) {
		const tinyc_sbuf *b = &s->bufs[j < k->nin ? k->in_bufs[j] : k->out_buf];
		int64_t elems = 1, span = 1;
		for (int d = 0; d < b->rank; d++) {
			int64_t v = tinyc_sched_dim(s, &b->shape[d]);
			if (v < 0)
				return TINYC_LONG;
			elems *= v;
			if (b->has_strides) {
				int64_t st = tinyc_sched_dim(s, &b->strides[d]);
				if (st < 0)
					return TINYC_LONG;
				span += (v - 1) * (st < 0 ? -st : st);
			}
			if (elems > lim || span > lim)
				return TINYC_LONG;
		}
	}
	/* every node the kernel computes inline: reduction extents included */
	const tinyc_graph *g = s->g;
	for (int i = 0; i < g->n; i++) {
		if (g->nodes[i].op != TINYC_OP_REDUCE || s->node_kernel[i] != (int)(k - s->kerns))
			continue;
		const tinyc_uop *in = &g->nodes[g->nodes[i].src[0]];
		int64_t elems = 1;
		for (int d = 0; d < in->rank; d++) {
			int64_t v = tinyc_sched_dim(s, &in->shape[d]);
			if (v < 0)
				return TINYC_LONG;
			elems *= v;
			if (elems > lim)
				return TINYC_LONG;
		}
	}
	const tinyc_uop *v = &g->nodes[k->value];
	int64_t elems = 1;
	for (int d = 0; d < v->rank; d++) {
		int64_t x = tinyc_sched_dim(s, &v->shape[d]);
		if (x < 0)
			return TINYC_LONG;
		elems *= x;
		if (elems > lim)
			return TINYC_LONG;
	}
	return TINYC_INT;
}

/* Choose the value dims bound to the grid: the innermost (up to 3) whose extent is not
 * the constant 1; at least one (a scalar's dummy dim 0).  Sets p->ntile, p->bind_dim. */
static void choose_bind(const tinyc_schedule *s, const tinyc_skernel *k, tinyc_plan *p)
{
	const tinyc_uop *v = &s->g->nodes[k->value];
	p->ntile = 0;
	for (int d = v->rank - 1; d >= 0 && p->ntile < 3; d--)
		if (tinyc_sched_dim(s, &v->shape[d]) != 1)
			p->bind_dim[p->ntile++] = d;
	if (!p->ntile)
		p->bind_dim[p->ntile++] = v->rank > 0 ? v->rank - 1 : 0;
}

/* Extent (estimate) of the value's dim that is bound to grid dim i (x = innermost). */
static double bound_extent(const tinyc_schedule *s, const tinyc_skernel *k,
			   const tinyc_plan *p, int i, int64_t *known)
{
	const tinyc_uop *v = &s->g->nodes[k->value];
	if (v->rank == 0) {
		*known = 1;
		return 1;
	}
	int d = p->bind_dim[i];
	*known = tinyc_sched_dim(s, &v->shape[d]);
	return tinyc_sched_dim_est(s, &v->shape[d]);
}

/* Set grid_mod for bound dims whose tile count may exceed the grid limit. */
static void set_grid_mod(const tinyc_schedule *s, const tinyc_skernel *k, tinyc_plan *p)
{
	for (int i = 0; i < p->ntile; i++) {
		int64_t known;
		bound_extent(s, k, p, i, &known);
		int64_t limit = i == 0 ? INT64_C(2147483647) : 65535;
		int64_t tiles = known >= 0 ? (known + p->tile[i] - 1) / p->tile[i] : -1;
		p->grid_mod[i] = tiles < 0 ? (i > 0) : tiles > limit;
	}
}

/* The fraction of DRAM bandwidth that `threads` threads, each with `inflight` bytes of
 * loads outstanding, can sustain (Little's law per SM). */
double tinyc_plan_inflight_eff(const tinyc_schedule *s, double threads, double inflight)
{
	double per_sm = threads / s->dev.sm_count;
	if (per_sm > s->dev.max_threads_per_sm)
		per_sm = s->dev.max_threads_per_sm;
	double need = s->dev.peak_bandwidth_gbs * 1e9 * LATENCY_NS * 1e-9 / s->dev.sm_count;
	double have = per_sm * inflight;
	return have >= need ? 1.0 : have / need;
}

/* Bytes of input one output point (one reduction step when the kernel reduces) reads. */
static double read_bytes_per_step(const tinyc_schedule *s, const tinyc_skernel *k)
{
	const tinyc_sbuf *ob = &s->bufs[k->out_buf];
	double out_bytes = k->out_elems * tinyc_dtype_size(ob->dtype);
	double in = k->bytes - out_bytes;
	double steps = k->out_elems * (k->red_elems > 1 ? k->red_elems : 1);
	double b = steps > 0 ? in / steps : 0;
	return b > 1 ? b : 1;
}

/* Fill the estimate of a MAP candidate. */
static void estimate_map(const tinyc_schedule *s, const tinyc_skernel *k, tinyc_plan *p)
{
	double padded = 1, useful = 1, threads = 1;
	const tinyc_uop *v = &s->g->nodes[k->value];
	for (int d = 0; d < v->rank; d++)
		useful *= tinyc_sched_dim_est(s, &v->shape[d]);
	double outer = useful;	/* points outside the bound dims: serial per thread */
	for (int i = 0; i < p->ntile; i++) {
		int64_t known;
		double ext = bound_extent(s, k, p, i, &known);
		double tiles = ceil(ext / (double)p->tile[i]);
		padded *= tiles * (double)p->tile[i];
		threads *= tiles * p->block[i];
		outer /= ext;
	}
	padded *= outer;
	double util = useful / padded;
	/* loads in flight per thread: its unrolled points (at most 8), or 4 unrolled steps of
	 * an inline reduction */
	double ppt = (double)(p->tile[0] / p->block[0]) * (double)(p->tile[1] / p->block[1]);
	double unroll = k->nred ? 4 : (ppt > 8 ? 8 : ppt);
	/* idle lanes of partial tiles take residency but load nothing */
	double mem = tinyc_plan_inflight_eff(s, threads, util * unroll * read_bytes_per_step(s, k));
	double full = s->dev.sm_count * (double)s->dev.max_threads_per_sm;
	double occ = threads < full ? threads / full : 1.0;
	double bytes = k->bytes;
	if (k->nred && k->contig_red)
		bytes = k->bytes * SERIAL_CONTIG_PENALTY;
	/* a warp whose x extent is below 32 lanes issues partial transactions, unless its
	 * rows are whole rows of the tensor (then they are adjacent in memory) */
	int64_t xknown;
	double xext = bound_extent(s, k, p, 0, &xknown);
	double lanes = p->block[0] < 32 && !(xknown >= 0 && xext <= p->tile[0]) ? p->block[0] / 32.0 : 1.0;
	lanes = lanes < 0.25 ? 0.25 : lanes;
	p->eff = mem * lanes;
	double t_mem = bytes / (s->dev.peak_bandwidth_gbs * 1e9) / p->eff;
	double t_fl = k->flops / (s->fp32_tflops * 1e12) / (occ * util);
	p->est_us = (t_mem > t_fl ? t_mem : t_fl) * 1e6 + LAUNCH_US;
}

/* Fill the estimate of a ROWRED candidate. */
static void estimate_rowred(const tinyc_schedule *s, const tinyc_skernel *k, tinyc_plan *p)
{
	double T = p->block[0];
	double R = k->red_elems;
	double O = k->out_elems;
	double util = R / (ceil(R / T) * T);
	double per_sm = floor(s->dev.max_threads_per_sm / T);
	if (per_sm > MAX_BLOCKS_PER_SM)
		per_sm = MAX_BLOCKS_PER_SM;
	double resident = s->dev.sm_count * per_sm * T;	/* threads the device holds at once */
	double threads = O * T < resident ? O * T : resident;
	/* each thread's strided walk is unrolled 4 times: 4 loads in flight (fewer when the
	 * reduction gives it fewer steps) */
	double steps = ceil(R / T) < 4 ? ceil(R / T) : 4;
	double mem = tinyc_plan_inflight_eff(s, threads, steps * read_bytes_per_step(s, k));
	double waves = ceil(O / (s->dev.sm_count * (per_sm > 1 ? per_sm : 1)));
	/* threads striding over an axis that is not the contiguous one read a sector each */
	double bytes = k->bytes;
	const tinyc_uop *in = &s->g->nodes[s->g->nodes[k->reds[0]].src[0]];
	if (p->red_axis != in->rank - 1) {
		int es = tinyc_dtype_size(in->dtype);
		bytes *= 32.0 / (es > 0 ? es : 4);
	}
	p->eff = mem * util;
	/* a block's reduction (shuffles, barrier) overlaps the loads of the other resident
	 * blocks: it shows only when the rows are too short to hide it */
	double t = tinyc_plan_estimate_us(s, k->flops, bytes, p->eff);
	double t_red = waves * BLOCK_REDUCE_US + LAUNCH_US;
	p->est_us = t > t_red ? t : t_red;
}

/* Whether the chain from k's value down to its one inline REDUCE has no PAD (a padded
 * element would need the reduction to be skipped, which ROWRED does not do). */
static int rowred_ok(const tinyc_schedule *s, const tinyc_skernel *k)
{
	if (k->nred != 1)
		return 0;
	const tinyc_graph *g = s->g;
	int r = k->reds[0];
	/* walk up from r through its unique users to the value */
	int cur = r;
	while (cur != k->value) {
		int user = -1;
		for (int i = cur + 1; i < g->n && user < 0; i++)
			for (int j = 0; j < g->nodes[i].nsrc; j++)
				if (g->nodes[i].src[j] == cur)
					user = i;
		if (user < 0 || g->nodes[user].op == TINYC_OP_PAD)
			return 0;
		cur = user;
	}
	return 1;
}

/* The generic provider: MAP tilings (1-D and 2-D) for every kernel, and block-cooperative
 * reductions (ROWRED) for kernels with one inline REDUCE. */
static int generic_propose(tinyc_ctx *ctx, tinyc_schedule *s, tinyc_skernel *k)
{
	tinyc_plan bind = {0};
	choose_bind(s, k, &bind);
	int nb = bind.ntile;
	tinyc_dtype idx = kernel_index_dtype(s, k);
	int maxthr = s->dev.max_threads_per_block > 0 ? s->dev.max_threads_per_block : 1024;
	/* {tile x, tile y, block x, block y} */
	static const int map1[][4] = {{128, 1, 128, 1}, {256, 1, 256, 1}, {1024, 1, 256, 1},
				      {512, 1, 128, 1}, {2048, 1, 256, 1}};
	static const int map2[][4] = {{32, 8, 32, 8}, {32, 32, 32, 8}, {64, 16, 64, 4},
				      {16, 16, 16, 16}};
	for (int pass = 0; pass < 2; pass++) {
		int n = pass == 0 ? 5 : (nb >= 2 ? 4 : 0);
		for (int c = 0; c < n; c++) {
			const int *t = pass == 0 ? map1[c] : map2[c];
			tinyc_plan p = {0};
			p.kind = TINYC_PLAN_MAP;
			p.ntile = nb;
			memcpy(p.bind_dim, bind.bind_dim, sizeof(p.bind_dim));
			p.index_dtype = idx;
			p.tile[0] = t[0];
			p.block[0] = t[2];
			p.tile[1] = p.tile[2] = 1;
			p.block[1] = p.block[2] = 1;
			if (nb >= 2)
				p.tile[1] = t[1], p.block[1] = t[3];
			if (p.block[0] * p.block[1] > maxthr)
				continue;
			set_grid_mod(s, k, &p);
			if (nb == 1)
				snprintf(p.desc, sizeof(p.desc), "map tile [%" PRId64 "] threads [%d]",
					 p.tile[0], p.block[0]);
			else
				snprintf(p.desc, sizeof(p.desc),
					 "map tile [%" PRId64 "x%" PRId64 "] threads [%dx%d]%s", p.tile[1],
					 p.tile[0], p.block[1], p.block[0], nb == 3 ? " + z" : "");
			estimate_map(s, k, &p);
			if (tinyc_plan_add(ctx, k, &p) < 0)
				return -1;
		}
	}
	int axes[TINYC_MAX_RANK];
	int na = rowred_ok(s, k) ? tinyc_reduce_axes(s->g, k->reds[0], axes) : 0;
	if (na > 0) {
		for (int T = 32; T <= 1024 && T <= maxthr; T *= 2) {
			if (T == 64 || T == 512)
				continue;
			tinyc_plan p = {0};
			p.kind = TINYC_PLAN_ROWRED;
			p.ntile = nb;
			memcpy(p.bind_dim, bind.bind_dim, sizeof(p.bind_dim));
			p.index_dtype = idx;
			p.tile[0] = p.tile[1] = p.tile[2] = 1;
			p.block[0] = T;
			p.block[1] = p.block[2] = 1;
			p.red_axis = na ? axes[na - 1] : 0;
			set_grid_mod(s, k, &p);
			snprintf(p.desc, sizeof(p.desc), "rowred block per output, %d threads over axis %d",
				 T, p.red_axis);
			estimate_rowred(s, k, &p);
			if (tinyc_plan_add(ctx, k, &p) < 0)
				return -1;
		}
	}
	return 0;
}

const tinyc_plan_provider tinyc_plan_generic = {"generic", generic_propose};

int tinyc_schedule_plan(tinyc_ctx *ctx, tinyc_schedule *s)
{
	for (int i = 0; i < s->nkern; i++) {
		tinyc_skernel *k = &s->kerns[i];
		for (size_t p = 0; p < NPROVIDERS; p++)
			if (providers[p]->propose(ctx, s, k) < 0)
				return -1;
		k->choice = -1;
		for (int c = 0; c < k->ncand; c++)
			if (k->choice < 0 || k->cands[c].est_us < k->cands[k->choice].est_us)
				k->choice = c;
		if (k->choice < 0)
			return tinyc_error(ctx, "NoSchedule", "kernel %s: no plan applies", k->name);
	}
	return tinyc_conv_chain(s);	/* channels-last hand-off between chosen convs */
}

/* ---------------------------------------------------------------- verifier ---- */

int tinyc_schedule_verify(tinyc_ctx *ctx, const tinyc_schedule *s)
{
	const tinyc_graph *g = s->g;
	for (int i = 0; i < s->nkern; i++) {
		const tinyc_skernel *k = &s->kerns[i];
		const tinyc_plan *p = tinyc_skernel_plan(k);
		if (k->root < 0 || k->root >= g->n || k->value < 0 || k->value >= g->n)
			return tinyc_error(ctx, "ScheduleInvalid", "kernel %s: bad root", k->name);
		if (k->out_buf < 0 || k->out_buf >= s->nbuf || s->bufs[k->out_buf].role == TINYC_SB_INPUT)
			return tinyc_error(ctx, "ScheduleInvalid", "kernel %s writes no output buffer",
					   k->name);
		if (!p)
			return tinyc_error(ctx, "ScheduleInvalid", "kernel %s has no plan", k->name);
		int thr = p->block[0] * p->block[1] * p->block[2];
		if (thr < 1 || thr > s->dev.max_threads_per_block)
			return tinyc_error(ctx, "ScheduleInvalid", "kernel %s: %d threads per block",
					   k->name, thr);
		for (int j = 0; j < k->nin; j++) {
			int b = k->in_bufs[j];
			if (b < 0 || b >= s->nbuf)
				return tinyc_error(ctx, "ScheduleInvalid", "kernel %s reads a bad buffer",
						   k->name);
			/* a temporary must be written by an earlier kernel */
			if (s->bufs[b].role == TINYC_SB_TEMP) {
				int ok = 0;
				for (int e = 0; e < i; e++)
					ok |= s->kerns[e].out_buf == b;
				if (!ok)
					return tinyc_error(ctx, "ScheduleInvalid",
							   "kernel %s reads %s before it is written",
							   k->name, s->bufs[b].name);
			}
		}
	}
	for (int i = 0; i < s->nbuf; i++)
		if (s->bufs[i].role != TINYC_SB_INPUT) {
			int writers = 0;
			for (int e = 0; e < s->nkern; e++)
				writers += s->kerns[e].out_buf == i;
			if (writers != 1)
				return tinyc_error(ctx, "ScheduleInvalid", "buffer %s has %d writers",
						   s->bufs[i].name, writers);
		}
	return 0;
}

/* ------------------------------------------------------------------- print ---- */

static void print_dims(const tinyc_schedule *s, int rank, const tinyc_dim *d, tinyc_buf *out)
{
	tinyc_print_shape(s->g, rank, d, out);
}

void tinyc_schedule_print(const tinyc_schedule *s, tinyc_buf *out)
{
	const tinyc_graph *g = s->g;
	const tinyc_device_info *d = &s->dev;
	tinyc_buf_printf(out, "# schedule: %d kernels, %d buffers\n", s->nkern, s->nbuf);
	tinyc_buf_printf(out, "device: %s, %s (%s)\n", d->target, d->name, s->dev_origin);
	tinyc_buf_printf(out,
			 "  %d SMs, %d threads/SM, %d threads/block, smem %d B/block (%d opt-in), "
			 "%.0f GB/s, %.1f TFLOP/s fp32, %.0f TFLOP/s fp16 tensor\n",
			 d->sm_count, d->max_threads_per_sm, d->max_threads_per_block, d->smem_per_block,
			 d->smem_per_block_optin, d->peak_bandwidth_gbs, s->fp32_tflops,
			 d->peak_fp16_tflops);
	tinyc_sched_options_print(&s->opt, out);	/* the rest of the options record */
	int unbound = 0;
	for (int i = 0; i < g->nsym; i++)
		if (!s->bind || i >= s->bind->n || s->bind->val[i] < 0)
			unbound++;
	if (unbound) {
		tinyc_buf_printf(out, "estimates assume");
		for (int i = 0, first = 1; i < g->nsym; i++)
			if (!s->bind || i >= s->bind->n || s->bind->val[i] < 0) {
				tinyc_buf_printf(out, "%s %s=%" PRId64, first ? "" : ",", g->syms[i],
						 s->assumed_sym);
				first = 0;
			}
		tinyc_buf_puts(out, " (unbound)\n");
	}
	for (int i = 0; i < g->nsym; i++)
		if (s->bind && i < s->bind->n && s->bind->val[i] >= 0)
			tinyc_buf_printf(out, "bound %s=%" PRId64 "\n", g->syms[i], s->bind->val[i]);
	for (int i = 0; i < s->nbuf; i++) {
		const tinyc_sbuf *b = &s->bufs[i];
		static const char *const role[] = {"input", "output", "temp"};
		tinyc_buf_printf(out, "buffer %s: %s %d, %s", b->name, role[b->role], b->index,
				 tinyc_dtype_name(b->dtype));
		print_dims(s, b->rank, b->shape, out);
		if (b->has_strides) {
			tinyc_buf_puts(out, " strides ");
			print_dims(s, b->rank, b->strides, out);
		}
		tinyc_buf_printf(out, " (%%%s)\n", g->nodes[b->node].id);
	}
	for (size_t j = 0; j < NPROVIDERS; j++)	/* row groups and their decisions */
		if (providers[j]->print_schedule)
			providers[j]->print_schedule(s, out);
	for (int i = 0; i < s->nkern; i++) {
		const tinyc_skernel *k = &s->kerns[i];
		tinyc_buf_printf(out, "kernel %s: stores %%%s into %s, reads", k->name,
				 g->nodes[k->value].id, s->bufs[k->out_buf].name);
		if (!k->nin)
			tinyc_buf_puts(out, " nothing");
		for (int j = 0; j < k->nin; j++)
			tinyc_buf_printf(out, " %s", s->bufs[k->in_bufs[j]].name);
		if (k->nred) {
			tinyc_buf_puts(out, "; inline reduce");
			for (int j = 0; j < k->nred; j++)
				tinyc_buf_printf(out, " %%%s", g->nodes[k->reds[j]].id);
		}
		if (k->why)
			tinyc_buf_printf(out, "; boundary: %s", k->why);
		tinyc_buf_printf(out, "\n  work: %.4g elements, reduce extent %.4g, %.4g flop, %.4g bytes%s\n",
				 k->out_elems, k->red_elems, k->flops, k->bytes,
				 k->contig_red ? ", reduces along the contiguous axis" : "");
		for (size_t j = 0; j < NPROVIDERS; j++)
			if (providers[j]->print_kernel)
				providers[j]->print_kernel(s, k, out);
		for (int c = 0; c < k->ncand; c++) {
			const tinyc_plan *p = &k->cands[c];
			tinyc_buf_printf(out, "  candidate %d: %s; eff %.3f, est %.2f us\n", c, p->desc,
					 p->eff, p->est_us);
		}
		const tinyc_plan *p = tinyc_skernel_plan(k);
		if (p) {
			tinyc_buf_printf(out, "  choice: %d (%s), block (%d, %d, %d), index %s", k->choice,
					 tinyc_plan_kind_name(p->kind), p->block[0], p->block[1], p->block[2],
					 tinyc_dtype_name(p->index_dtype));
			for (int j = 0; j < p->ntile; j++)
				if (p->grid_mod[j])
					tinyc_buf_printf(out, ", grid %c loops", "xyz"[j]);
			tinyc_buf_putc(out, '\n');
		}
		for (size_t j = 0; j < NPROVIDERS; j++)	/* matmul tiles, rearrange plan, ... */
			if (providers[j]->print_plan)
				providers[j]->print_plan(s, k, out);
		for (size_t j = 0; j < NPROVIDERS; j++)	/* "not a matmul: ..." */
			if (providers[j]->print_notes)
				providers[j]->print_notes(s, k, out);
	}
}

