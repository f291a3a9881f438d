/* Row groups (issue 12): the row reductions of a chain (softmax's max and sum, LayerNorm's
 * mean and variance, LayerNorm followed by softmax), their broadcasts back over the row and
 * the elementwise ops between them, compiled as one kernel (TINYC_PLAN_ROWFUSE) that gives
 * each row a warp or a block, keeps the row in registers (or re-reads it from global memory
 * when it does not fit), does each reduction with warp shuffles and a block reduction, and
 * writes the output once.
 *
 * A row reduction is a REDUCE over one axis (length C) of its operand, whose result (one
 * value per row: the other dims O..., with or without the reduced dim kept as 1) the
 * plain partition materialises because it is broadcast back over the row; the group's
 * kernel stores [O..., C] (or one value per row).  tinygrad reduces the last axis through
 * a PERMUTE that makes it the first: that is a row reduction too.  tinyc_schedule_build partitions the graph twice: as today (one kernel per such
 * reduction), and with the row reductions left inline, so that each row group becomes the
 * one kernel that consumes them; both are planned, and each group keeps whichever of the
 * two the cost model estimates faster.  The dump (--dump-stage=schedule) lists every group,
 * both estimates and the decision; the group's kernel lists its ROWFUSE candidates.
 */
#ifndef TINYC_SCHED_ROWFUSE_H
#define TINYC_SCHED_ROWFUSE_H

#include "sched/schedule.h"

/* One row group: the row reductions one kernel of the fused partition computes. */
typedef struct tinyc_rowgroup {
	int root;		/* the root node of the group's kernel (fused partition) */
	int nred;		/* row reductions of the group */
	int *reds;		/* their nodes, in graph (topological) order (owned) */
	double fused_us;	/* estimate of the one fused kernel (0 when not planned) */
	double split_us;	/* estimate of the plain partition's kernels for the same work */
	int nsplit;		/* how many kernels those are */
	int fused;		/* 1: the schedule uses the fused kernel */
	char why[160];		/* the decision in words */
} tinyc_rowgroup;

/* The row groups of a schedule. */
typedef struct tinyc_rowfuse {
	int ngroup;		/* groups found */
	tinyc_rowgroup *groups;	/* their decisions (owned) */
	int nnode;		/* nodes of the graph */
	unsigned char *fused;	/* per node: a REDUCE the schedule computes in a row kernel */
} tinyc_rowfuse;

void tinyc_rowfuse_free(__tinyc_take tinyc_rowfuse *rf);

/* Partition g, choose the row groups and plan every kernel with the options record opts
 * (sched/options.h); pv and evts (may be NULL) are the module's earlier stages the
 * providers may reuse.  Returns the planned schedule (not verified), or
 * NULL with diagnostics. */
__tinyc_give tinyc_schedule *tinyc_schedule_build(tinyc_ctx *ctx,
						  __tinyc_keep const tinyc_graph *g,
						  __tinyc_keep const tinyc_bindings *b,
						  const tinyc_sched_options *opts,
						  __tinyc_keep const struct tinyc_polyview *pv,
						  __tinyc_keep const struct tinyc_evt_set *evts);

/* Whether REDUCE node r is one of the fused row reductions of s. */
int tinyc_rowfuse_is_fused(const tinyc_schedule *s, int r);

/* The row reductions kernel k computes (fused ones, graph order) into reds (at most
 * k->nred entries); returns their count. */
int tinyc_rowfuse_kernel_reds(const tinyc_schedule *s, const tinyc_skernel *k, int *reds);

/* The row space of row reduction r: *ro (its operand's rank), the other dims of the
 * operand in o[0..ro-1) (the rows), the reduced one's extent in *c (the row length) and its
 * position in *axis.  Returns 1 when r is a REDUCE over exactly one axis of its operand
 * with the result [rows] or the operand's shape with the reduced dim 1, else 0. */
int tinyc_rowfuse_row_space(const tinyc_schedule *s, int r, int *ro, tinyc_dim *o,
			    tinyc_dim *c, int *axis);

/* A ROWFUSE plan: block[0] threads per row (TX), block[1] rows per block (RY), tile[0] row
 * elements each thread keeps in registers (0: none), tile[1] bytes of shared memory that
 * stage the row's inputs when the row does not fit in registers (1: none); with neither,
 * every phase re-reads the row from global memory. */

/* The provider of ROWFUSE plans (listed in plan.c): for a kernel that computes fused row
 * reductions, the warp- and block-per-row candidates, replacing the others (which would
 * recompute every reduction once per element). */
extern const tinyc_plan_provider tinyc_plan_rowfuse;

/* The dump lines of the row groups (after the buffers), and of kernel k's group. */
void tinyc_rowfuse_print(const tinyc_schedule *s, tinyc_buf *out);
void tinyc_rowfuse_print_kernel(const tinyc_schedule *s, const tinyc_skernel *k, tinyc_buf *out);

#endif
