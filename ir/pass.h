/* The pass framework (QBE style): a module holds one IR per stage, a pass builds its
 * stage's IR from the previous one, and the driver runs the pipeline up to the stage asked
 * for, verifying after each pass.  The pipeline itself is the plain list in
 * lower/pipeline.c.
 */
#ifndef TINYC_IR_PASS_H
#define TINYC_IR_PASS_H

#include "ir/ctx.h"
#include "ir/uop.h"

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

/* Everything one compilation produces, one field per stage. */
typedef struct tinyc_module {
	tinyc_ctx *ctx;			/* diagnostics (kept) */
	const tinyc_source *src;	/* the input text (kept) */
	tinyc_options opt;		/* compilation options */
	tinyc_graph *uop;		/* stage "uop" (owned) */
	tinyc_bindings *bind;		/* compile-time symbol values (owned) */
	void *stage[16];		/* later stages' IRs, indexed by pass position (owned) */
} tinyc_module;

/* One pass of the pipeline. */
typedef struct tinyc_pass {
	const char *name;		/* the stage's dump name */
	const char *what;		/* one line for --help */
	int (*run)(tinyc_module *m);	/* build this stage from the previous one; 0 or -1 */
	int (*verify)(tinyc_module *m);	/* check this stage's IR; 0 or -1 */
	int (*print)(tinyc_module *m, tinyc_format fmt, tinyc_buf *out);	/* 0, or -1 if fmt unsupported */
	void (*free)(void *ir);		/* free this stage's IR (NULL for "uop") */
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
/* Run the pipeline up to and including pass `last` (without the leaf stages before it
 * when m->opt.kernels_only).  If print_after_all, each stage's dump is appended to *dumps.
 * Returns 0 or -1 (diagnostics on m->ctx). */
int tinyc_module_run_until(tinyc_module *m, int last, int print_after_all, tinyc_buf *dumps);

#endif
