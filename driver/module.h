/* The pass framework (QBE style): a typed module holds one field per stage, a pass builds
 * its stage's IR from the stages it requires, and the driver runs the pipeline up to the
 * stage asked for, verifying after each pass.  The pipeline itself is the plain list in
 * driver/pipeline.c; the stage code (ir/ .. codegen/) knows nothing of the module.
 */
#ifndef TINYC_DRIVER_MODULE_H
#define TINYC_DRIVER_MODULE_H

#include <stddef.h>

#include "ir/ctx.h"
#include "ir/uop.h"
#include "sched/options.h"

/* Output formats of a stage dump. */
typedef enum tinyc_format {
	TINYC_FMT_TEXT,		/* the stable text dump FileCheck tests read */
	TINYC_FMT_DOT,		/* Graphviz, where the stage supports it */
} tinyc_format;

/* Options that steer compilation. */
typedef struct tinyc_options {
	const char *target;	/* "sm_90" etc., or NULL: the device's, else a default */
	int verify_each;	/* run every verifier, not only the last stage's */
	int verbose;		/* print timings to stderr */
	const char *bind;	/* compile-time symbol values, "M=64,N=32", or NULL */
	int kernels_only;	/* skip the leaf stages (tinyc_pass.leaf) before the last one:
				 * a compilation that only needs the kernels (run on a GPU) */
} tinyc_options;

/* The stages, in pipeline order; a pass's requires/produces are sets of these bits. */
typedef enum tinyc_stage {
	TINYC_STAGE_UOP,	/* tinyc_graph + tinyc_bindings */
	TINYC_STAGE_INDEXBOOK,	/* tinyc_indexbook */
	TINYC_STAGE_POLYVIEW,	/* tinyc_polyview */
	TINYC_STAGE_RBSSA,	/* tinyc_rbssa */
	TINYC_STAGE_POLYCORE,	/* tinyc_polycore */
	TINYC_STAGE_EVT,	/* tinyc_evt_set */
	TINYC_STAGE_SCHEDULE,	/* tinyc_schedule */
	TINYC_STAGE_GPUIR,	/* tinyc_gpu_module */
	TINYC_STAGE_CUDA,	/* tinyc_cuda_text */
	TINYC_NSTAGE
} tinyc_stage;

#define TINYC_BIT(st) (1u << (st))	/* a stage as a member of a requires/uses set */

/* Everything one compilation produces, one field per stage (NULL until built). */
typedef struct tinyc_module {
	tinyc_ctx *ctx;				/* diagnostics (kept) */
	const tinyc_source *src;		/* the input text (kept) */
	tinyc_options opt;			/* compilation options */
	tinyc_graph *uop;			/* stage "uop" (owned) */
	tinyc_bindings *bind;			/* compile-time symbol values (owned) */
	struct tinyc_indexbook *indexbook;	/* stage "indexbook" (owned) */
	struct tinyc_polyview *polyview;	/* stage "polyview" (owned) */
	struct tinyc_rbssa *rbssa;		/* stage "rbssa" (owned) */
	struct tinyc_polycore *polycore;	/* stage "polycore" (owned) */
	struct tinyc_evt_set *evt;		/* stage "evt" (owned) */
	struct tinyc_schedule *schedule;	/* stage "schedule" (owned) */
	struct tinyc_gpu_module *gpuir;		/* stage "gpuir" (owned) */
	struct tinyc_cuda_text *cuda;		/* stage "cuda" (owned) */
	int resolved;				/* sched_opt is resolved (once per module) */
	tinyc_sched_options sched_opt;		/* the options record the schedule pass gets */
	tinyc_tune_entry *tune;			/* the entries sched_opt.tune points to (owned) */
} tinyc_module;

/* One pass of the pipeline.  The driver's glue (tinyc_module_run_pass) checks `requires`,
 * frees the stage's old IR, stores what `build` returns in the `produces` field and
 * reports failures the same way for every pass. */
typedef struct tinyc_pass {
	const char *name;		/* the stage's dump name */
	const char *what;		/* one line for --help */
	tinyc_stage produces;		/* the stage this pass builds */
	size_t field;			/* offsetof(tinyc_module, <the stage's field>) */
	unsigned requires;		/* TINYC_BIT set: stages that must be built before */
	unsigned uses;			/* TINYC_BIT set: stages read when present */
	void *(*build)(tinyc_module *m);	/* the stage's new IR, or NULL (diagnostics) */
	int (*verify)(const tinyc_module *m);	/* check this stage's IR; 0 or -1 */
	int (*print)(const tinyc_module *m, tinyc_format fmt, tinyc_buf *out);	/* 0, or -1
							 * if fmt is unsupported */
	void (*free)(void *ir);		/* free this stage's IR */
	int leaf;			/* no later stage reads this stage's IR (an analysis) */
} tinyc_pass;

/* The pipeline, in order.  *n receives its length. */
const tinyc_pass *tinyc_pipeline(int *n);
/* Index of the pass named `name`, or -1. */
int tinyc_pass_find(const char *name);

__tinyc_give tinyc_module *tinyc_module_alloc(tinyc_ctx *ctx, const tinyc_source *src,
					      const tinyc_options *opt);
void tinyc_module_free(__tinyc_take tinyc_module *m);
/* Free every stage built so far (the module can run its pipeline again). */
void tinyc_module_reset(tinyc_module *m);
/* Resolve m->sched_opt from m->opt.target, the device and the tuning cache, once
 * (driver/options.c).  0 or -1. */
int tinyc_module_resolve_options(tinyc_module *m);
/* Run pass number `i` alone: its required stages must be built; its stage's old IR is
 * replaced.  Returns 0 or -1 (diagnostics on m->ctx). */
int tinyc_module_run_pass(tinyc_module *m, int i);
/* Run the pipeline up to and including pass `last` (without the leaf stages before it
 * when m->opt.kernels_only).  If print_after_all, each stage's dump is appended to *dumps.
 * Returns 0 or -1 (diagnostics on m->ctx). */
int tinyc_module_run_until(tinyc_module *m, int last, int print_after_all, tinyc_buf *dumps);

/* Shorthands for the stage fields (NULL when not built). */
#define tinyc_module_indexbook(m) ((m)->indexbook)
#define tinyc_module_polyview(m) ((m)->polyview)
#define tinyc_module_rbssa(m) ((m)->rbssa)
#define tinyc_module_polycore(m) ((m)->polycore)
#define tinyc_module_evt(m) ((m)->evt)
#define tinyc_module_schedule(m) ((m)->schedule)
#define tinyc_module_gpuir(m) ((m)->gpuir)
#define tinyc_module_cuda(m) ((m)->cuda)

#endif
