/* sched/: the schedule (DESIGN.md §1 "Schedule plan", seed 002 §5).
 *
 *   partition.c  graph -> kernels: which values are materialised (inputs, outputs, the
 *                REDUCE results that later ops broadcast or share, CONTIGUOUS), the
 *                intermediate buffers (dtype, shape), one kernel per materialised value
 *                in launch (topological) order, and which REDUCEs each kernel computes
 *                inline.  Elementwise and movement chains are fused into their consumer.
 *   producers.c  the values a contraction reads with broadcasting that are not loads:
 *                stored once (partition.c), by the producing epilogue where it can
 *                (poly/evt_extract.c), never recomputed in a k loop.
 *   plan.c       per kernel: the candidate plans (block/thread tiling for elementwise
 *                kernels, block-per-row cooperative reductions), their cost estimates
 *                time = max(FLOPs/peak, bytes/bandwidth) / efficiency against the device
 *                description (a real GPU from the driver, or a named --target), and the
 *                choice; the deterministic dump of --dump-stage=schedule.
 *
 * Plan kinds are open: a kernel's plan is chosen among the candidates every provider
 * (tinyc_plan_provider) proposes.  The generic provider proposes MAP and ROWRED plans; the
 * tiled contraction template adds TINYC_PLAN_MATMUL candidates through its own provider
 * (listed in plan.c) and its own GPU IR builder, without changing the generic ones.
 *
 *   rowfuse.c    row groups: the schedule pass builds the schedule with
 *                tinyc_schedule_build (sched/rowfuse.h), which partitions with and without
 *                the broadcast row reductions inline and keeps, per group, the cheaper.
 */
#ifndef TINYC_SCHED_SCHEDULE_H
#define TINYC_SCHED_SCHEDULE_H

#include <stdint.h>

#include "ir/ctx.h"
#include "ir/uop.h"
#include "ir/target.h"
#include "lower/lower.h"
#include "sched/options.h"

/* What a schedule buffer holds. */
typedef enum tinyc_sbuf_role {
	TINYC_SB_INPUT,		/* a BUFFER (slot) */
	TINYC_SB_OUTPUT,	/* an OUTPUT (index in graph order) */
	TINYC_SB_TEMP,		/* an intermediate the schedule introduces */
} tinyc_sbuf_role;

/* A device buffer. */
typedef struct tinyc_sbuf {
	char *name;		/* tensor name, or "tN" for temporaries (owned) */
	tinyc_sbuf_role role;	/* input / output / temp */
	int index;		/* INPUT: slot; OUTPUT: output index; TEMP: temp number */
	int node;		/* BUFFER node, OUTPUT node, or the materialised node */
	tinyc_dtype dtype;	/* element type as stored */
	int rank;		/* rank of the logical shape */
	tinyc_dim shape[TINYC_MAX_RANK];	/* logical shape */
	int has_strides;	/* strided storage (BUFFER / OUTPUT strides=) */
	tinyc_dim strides[TINYC_MAX_RANK];	/* element strides when has_strides */
} tinyc_sbuf;

/* Plan kinds. */
typedef enum tinyc_plan_kind {
	TINYC_PLAN_MAP,		/* threads over output elements; reductions serial per thread */
	TINYC_PLAN_ROWRED,	/* a block per output element; threads share one reduction */
	TINYC_PLAN_MATMUL,	/* the tiled contraction template (its own provider/builder) */
	TINYC_PLAN_REARRANGE,	/* the movement kernel of seed 003 (its own provider/builder) */
	TINYC_PLAN_ROWFUSE,	/* a row group: its row reductions and the ops between them as
				 * one kernel, a warp or block per row (sched/rowfuse.c) */
	TINYC_PLAN_ATTENTION,	/* flash-style attention (sched/attention.c, codegen/attention.c) */
	TINYC_PLAN_CONV_DIRECT,	/* a depthwise conv, a thread per output (sched/conv_direct.c,
				 * codegen/conv_direct.c) */
	TINYC_PLAN_KIND_COUNT,
} tinyc_plan_kind;

/* One candidate plan of a kernel. */
typedef struct tinyc_plan {
	tinyc_plan_kind kind;	/* which template / builder */
	int ntile;		/* MAP, ROWRED: output dims bound to the grid (1..3) */
	int bind_dim[3];	/* value dim bound to grid x, y, z (descending: x innermost);
				 * the innermost dims whose extent is not the constant 1 */
	int64_t tile[3];	/* MAP: tile extent per bound dim, x (innermost) first */
	int block[3];		/* threads per block, x first */
	int red_axis;		/* ROWRED: operand axis of the REDUCE the threads stride over */
	int grid_mod[3];	/* bound dim i has more tiles than grid limit: loop over them */
	tinyc_dtype index_dtype;	/* int when every extent is known and small, else long */
	double est_us;		/* estimated time, microseconds */
	double eff;		/* the efficiency factor of the estimate */
	char desc[200];		/* one-line description for the dump */
	void *ext;		/* kind-specific data (matmul tiles, stages...), or NULL */
	void (*ext_free)(void *ext);	/* frees ext */
} tinyc_plan;

/* One kernel: computes the value of node `value` over its whole shape into `out_buf`. */
typedef struct tinyc_skernel {
	char *name;		/* kernel name, e.g. "k1_Y" (owned) */
	int root;		/* the materialised node: an OUTPUT, a REDUCE, a CONTIGUOUS */
	int value;		/* node whose value is stored (root's operand for OUTPUT) */
	int out_buf;		/* buffer written */
	int nred;		/* REDUCE nodes computed inline (in the statement) */
	int *reds;		/* their node indices, topological order (owned) */
	int nin;		/* buffers read */
	int *in_bufs;		/* their indices (owned) */
	double out_elems;	/* output elements (unbound symbols at their assumed value) */
	double red_elems;	/* largest inline reduction extent (1 when none) */
	double flops;		/* arithmetic operations of the whole kernel */
	double bytes;		/* ideal DRAM traffic: inputs once + output */
	int contig_red;		/* a thread-serial reduction would walk the contiguous axis */
	int ncand;		/* candidates considered */
	tinyc_plan *cands;	/* candidates (owned) */
	int choice;		/* index of the chosen candidate */
	const char *why;	/* why its value is a kernel boundary (static text) */
	char mm_why[192];	/* why its contraction is not a matmul plan ("" if none) */
} tinyc_skernel;

/* The schedule of a graph. */
typedef struct tinyc_schedule {
	const tinyc_graph *g;		/* the graph (kept) */
	const tinyc_bindings *bind;	/* compile-time symbol values (kept) */
	tinyc_sched_options opt;	/* the options record it was planned with (its tune
					 * entries kept: the driver's record outlives it) */
	tinyc_device_info dev;		/* the device the plan is for (opt.dev) */
	const char *dev_origin;		/* "driver", "--target", or "default target (no GPU)" */
	double fp32_tflops;		/* CUDA-core fp32 peak used for elementwise work */
	int64_t assumed_sym;		/* value assumed for unbound symbols in estimates */
	int *node_buf;			/* per node: buffer holding its value, or -1 (inline) */
	int *node_kernel;		/* per node: kernel computing it inline or storing it, or -1 */
	int nbuf;			/* buffers */
	tinyc_sbuf *bufs;		/* buffers: inputs (by slot), outputs, temporaries (owned) */
	int nkern;			/* kernels */
	tinyc_skernel *kerns;		/* kernels in launch order (owned) */
	/* while planning inside a module: its earlier stages (kept), so that the providers
	 * reuse them instead of analysing the graph again; NULL otherwise */
	const struct tinyc_polyview *pv;	/* the "polyview" stage */
	const struct tinyc_evt_set *evts;	/* the "evt" stage (contractions, epilogues) */
	struct tinyc_rowfuse *rowfuse;	/* row groups and their decisions (sched/rowfuse.h),
					 * or NULL (owned) */
} tinyc_schedule;

/* A source of candidate plans for a kernel: a plan kind's whole record in the schedule
 * pass (its GPU IR builder is registered by kind in codegen/gpuir_pass.c).  The dump
 * (tinyc_schedule_print) calls each provider's print hooks in provider order; NULL hooks
 * print nothing. */
typedef struct tinyc_plan_provider {
	const char *name;	/* "generic", "matmul", ... */
	/* Append zero or more candidates for kernel k of s to k->cands (tinyc_plan_add).
	 * Returns 0, or -1 with a diagnostic. */
	int (*propose)(tinyc_ctx *ctx, tinyc_schedule *s, tinyc_skernel *k);
	/* schedule-wide lines, after the buffers (row groups) */
	void (*print_schedule)(const tinyc_schedule *s, tinyc_buf *out);
	/* lines of kernel k after its work line, before the candidates */
	void (*print_kernel)(const tinyc_schedule *s, const tinyc_skernel *k, tinyc_buf *out);
	/* lines after k's choice: the chosen plan's details (or why the kind does not apply) */
	void (*print_plan)(const tinyc_schedule *s, const tinyc_skernel *k, tinyc_buf *out);
	/* k's last lines (notes such as why a contraction is not this kind) */
	void (*print_notes)(const tinyc_schedule *s, const tinyc_skernel *k, tinyc_buf *out);
} tinyc_plan_provider;

/* ---- partition.c ---- */

/* Partition the verified graph g into kernels and buffers (no plans yet).  b holds the
 * compile-time symbol values (may be NULL).  Returns NULL with diagnostics on failure. */
__tinyc_give tinyc_schedule *tinyc_partition(tinyc_ctx *ctx, __tinyc_keep const tinyc_graph *g,
					     __tinyc_keep const tinyc_bindings *b);
/* The same, except that the live REDUCEs with fuse[node] set (fuse may be NULL) are not
 * materialised: their consumer computes them inline (the row groups of sched/rowfuse.c);
 * opts (may be NULL: the defaults) may leave attention to the generic path. */
__tinyc_give tinyc_schedule *tinyc_partition_fused(tinyc_ctx *ctx,
						   __tinyc_keep const tinyc_graph *g,
						   __tinyc_keep const tinyc_bindings *b,
						   __tinyc_keep const unsigned char *fuse,
						   const tinyc_sched_options *opts);
void tinyc_schedule_free(__tinyc_take tinyc_schedule *s);
/* The value of dim d (a bound symbol or a constant), or -1 when it is an unbound symbol. */
int64_t tinyc_sched_dim(const tinyc_schedule *s, const tinyc_dim *d);
/* The value used for estimates: the dim's value, or s->assumed_sym when unbound. */
double tinyc_sched_dim_est(const tinyc_schedule *s, const tinyc_dim *d);
/* The REDUCE node's axes, normalised to 0..rank-1 and sorted; returns their count. */
int tinyc_reduce_axes(const tinyc_graph *g, int node, int *axes);

/* ---- plan.c ---- */

/* Plan s with the options record o (copied): fills s->opt, s->dev and s->dev_origin. */
void tinyc_schedule_set_options(tinyc_schedule *s, const tinyc_sched_options *o);
/* The same with the record of a named target (NULL: the default target, sm_80), for tests
 * and tools that plan without the driver.  0 or -1 (UnknownTarget). */
int tinyc_schedule_set_device(tinyc_ctx *ctx, tinyc_schedule *s, const char *opt_target);
/* Propose candidates for every kernel (all providers), estimate and choose. */
int tinyc_schedule_plan(tinyc_ctx *ctx, tinyc_schedule *s);
/* Append a candidate to k (copied); returns its index or -1. */
int tinyc_plan_add(tinyc_ctx *ctx, tinyc_skernel *k, const tinyc_plan *p);
/* The estimate model: microseconds for flops and bytes at efficiency eff on s's device. */
double tinyc_plan_estimate_us(const tinyc_schedule *s, double flops, double bytes, double eff);
/* The fraction of DRAM bandwidth that `threads` threads, each with `inflight` bytes of
 * loads outstanding, can sustain (Little's law per SM, plan.c's DRAM latency). */
double tinyc_plan_inflight_eff(const tinyc_schedule *s, double threads, double inflight);
/* The chosen plan of kernel k. */
const tinyc_plan *tinyc_skernel_plan(const tinyc_skernel *k);
/* Check the schedule: buffers and kernels consistent, every kernel planned, block sizes
 * within the device's limits.  0 or -1. */
int tinyc_schedule_verify(tinyc_ctx *ctx, const tinyc_schedule *s);
/* The deterministic dump (--dump-stage=schedule). */
void tinyc_schedule_print(const tinyc_schedule *s, tinyc_buf *out);
const char *tinyc_plan_kind_name(tinyc_plan_kind k);

/* The generic provider (MAP and ROWRED plans), defined in plan.c. */
extern const tinyc_plan_provider tinyc_plan_generic;

#endif
