/* tinyc tune: measure the candidate configurations of a graph's contraction on the GPU and
 * keep the fastest in the tuning cache (driver/tune.c), where later compilations of the same
 * shape class on the same device find it.
 *
 *   tinyc tune FILE --bind M=..,N=..,K=.. [--top N] [--warmup W] [--iters I] [--rounds R]
 *              [--seed S] [--dry-run [--target sm_XY]] [-v]
 *
 * The space is pruned by the cost model: the N candidates (default 8) with the smallest
 * estimates, and the best two of each template the device allows, are compiled and timed
 * (the whole plan by CUDA-graph replay of I executions after W) on the same random
 * inputs, in R rounds (default 3) whose order rotates, so that no candidate always runs
 * first after the compilations left the GPU idle; each candidate's median over the rounds
 * counts (one pass after another measured up to 13% apart on the same kernels: H100,
 * docs/matmul-results.md, session 11).  A candidate whose outputs differ from the model's
 * choice beyond the rounding of 16-bit results is rejected.  The fastest is stored for
 * (device, shape class, dtypes).  --dry-run lists the pruned
 * candidates without a GPU (for --target, or tests).
 *
 * Exit status: 0 stored (or listed), 1 diagnostics, 2 usage error.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/gpu.h"
#include "ir/ctx.h"
#include "driver/module.h"
#include "ir/tensor.h"
#include "lower/lower.h"
#include "runtime/runtime.h"
#include "sched/matmul.h"
#include "sched/schedule.h"
#include "driver/run.h"
#include "driver/tune.h"
#include "tinyc_args.h"

#define TUNE_MAX 64	/* candidates measured at most */
#define TUNE_ROUNDS_MAX 16	/* --rounds at most */

/* The command line of tinyc tune. */
typedef struct tune_cli {
	const char *file;	/* the .uop graph */
	const char *bind;	/* --bind (every size) */
	const char *target;	/* --target (dry runs only) */
	int top;		/* --top: candidates measured */
	int warmup, iters;	/* timing */
	int rounds;		/* --rounds: passes over the candidates, the order rotating */
	uint64_t seed;		/* random inputs */
	int dry_run;		/* --dry-run: list, do not measure */
	int verbose;		/* -v */
} tune_cli;

/* One measured candidate. */
typedef struct tune_row {
	int cand;		/* index in the kernel's candidates */
	double est_us;		/* the model's estimate */
	double us;		/* measured median (all kernels of the graph), < 0: failed */
	double times[TUNE_ROUNDS_MAX];	/* the time of each round */
	int ntimes;
	char key[160];		/* configuration key */
	const char *why;	/* failure reason, or NULL */
} tune_row;

#define F(field) offsetof(tune_cli, field)

static const tinyc_arg tune_opts[] = {
	{"--bind", NULL, TINYC_ARG_STR, F(bind), "M=..,N=..,K=..", 0, 0, NULL, NULL,
	 "every size of FILE (required)"},
	{"--top", NULL, TINYC_ARG_INT, F(top), "N", 1, TUNE_MAX, NULL, NULL,
	 "candidates measured, best estimates first (default 8)"},
	{"--warmup", NULL, TINYC_ARG_INT, F(warmup), "N", 0, 1000000, NULL, NULL,
	 "untimed launches per candidate (default 5)"},
	{"--iters", NULL, TINYC_ARG_INT, F(iters), "N", 1, 1000000, NULL, NULL,
	 "timed launches, median kept (default 20)"},
	{"--rounds", NULL, TINYC_ARG_INT, F(rounds), "R", 1, TUNE_ROUNDS_MAX, NULL, NULL,
	 "passes over the candidates, order rotating, median kept (default 3)"},
	{"--seed", NULL, TINYC_ARG_U64, F(seed), "S", 0, 0, NULL, NULL,
	 "random inputs (default 1)"},
	{"--dry-run", NULL, TINYC_ARG_FLAG, F(dry_run), NULL, 0, 0, NULL, NULL,
	 "list the pruned candidates only (no GPU; --target allowed)"},
	{"--target", NULL, TINYC_ARG_STR, F(target), "sm_XY", 0, 0, NULL, NULL,
	 "device description for --dry-run"},
	{"--verbose", "-v", TINYC_ARG_FLAG, F(verbose), NULL, 0, 0, NULL, NULL,
	 "per-candidate compile times"},
	{0},
};

#undef F

static const tinyc_arg_group tune_group = {"Tune options", tune_opts};

static const tinyc_command tune_args = {
	"tinyc tune",
	"tinyc tune FILE --bind M=..,N=..,K=.. [options]\n",
	"Measures the model-pruned candidates of FILE's contraction on the GPU and stores\n"
	"the fastest in the tuning cache (<cache dir>/tune/<device>.txt) for the device,\n"
	"shape class and dtypes; later compilations of that class choose it.\n",
	{&tune_group, &tinyc_args_other, NULL},
	"FILE", offsetof(tune_cli, file), NULL,
	"Exit status: 0 stored (or listed), 1 diagnostics, 2 usage error.\n", NULL,
};

/* Parse argv (argv[0] is "tune"); -1 to go on, else an exit status. */
static int tune_parse(int argc, char **argv, tune_cli *c)
{
	c->top = 8, c->warmup = 5, c->iters = 20, c->rounds = 3, c->seed = 1;
	int rc = tinyc_args_parse(&tune_args, argc, argv, c);
	if (rc >= 0)
		return rc;
	if (!c->bind)
		return tinyc_args_error(&tune_args, "give --bind with every size");
	if (c->target && !c->dry_run)
		return tinyc_args_error(&tune_args, "--target describes a device for --dry-run only; "
					"tuning measures the GPU present");
	return -1;
}

/* The kernel of s that runs a contraction with more than one candidate, or -1. */
static int matmul_kernel(const tinyc_schedule *s)
{
	for (int i = 0; i < s->nkern; i++) {
		const tinyc_skernel *k = &s->kerns[i];
		const tinyc_plan *p = tinyc_skernel_plan(k);
		if (p && p->kind == TINYC_PLAN_MATMUL && p->ext &&
		    ((const tinyc_mm_plan *)p->ext)->fused_into < 0 && k->ncand > 0)
			return i;
	}
	return -1;
}

/* The pruned candidate set: the `top` smallest estimates, plus the best of every variant
 * (so each template is measured at least once).  Returns the count in rows. */
static int prune(const tinyc_skernel *k, int top, tune_row *rows)
{
	int n = 0;
	char taken[1024] = {0};
	if (k->ncand > (int)sizeof(taken))
		return 0;
	for (int v = 0; v < 3; v++)	/* the best two of each variant */
		for (int rep = 0; rep < 2; rep++) {
			int best = -1;
			for (int c = 0; c < k->ncand; c++) {
				const tinyc_mm_plan *mp = k->cands[c].ext;
				if (mp && !taken[c] && (int)mp->t.variant == v &&
				    (best < 0 || k->cands[c].est_us < k->cands[best].est_us))
					best = c;
			}
			if (best >= 0 && n < TUNE_MAX && (rep == 0 || v != TINYC_MM_SIMT))
				taken[best] = 1, rows[n++].cand = best;
		}
	while (n < top && n < TUNE_MAX) {
		int best = -1;
		for (int c = 0; c < k->ncand; c++)
			if (!taken[c] && (best < 0 || k->cands[c].est_us < k->cands[best].est_us))
				best = c;
		if (best < 0)
			break;
		taken[best] = 1, rows[n++].cand = best;
	}
	for (int i = 0; i < n; i++) {	/* estimate order */
		for (int j = i + 1; j < n; j++)
			if (k->cands[rows[j].cand].est_us < k->cands[rows[i].cand].est_us) {
				int t = rows[i].cand;
				rows[i].cand = rows[j].cand, rows[j].cand = t;
			}
	}
	for (int i = 0; i < n; i++) {
		const tinyc_mm_plan *mp = k->cands[rows[i].cand].ext;
		rows[i].est_us = k->cands[rows[i].cand].est_us;
		rows[i].us = -1;
		rows[i].ntimes = 0;
		rows[i].why = NULL;
		tinyc_matmul_config_key(&mp->t, rows[i].key, sizeof(rows[i].key));
	}
	return n;
}

/* Random inputs for every BUFFER of g (sizes from the bindings); owned[] gets them. */
static int make_inputs(tinyc_ctx *ctx, const tinyc_graph *g, const tinyc_bindings *b, uint64_t seed,
		       tinyc_io *io, tinyc_tensor **owned)
{
	for (int i = 0; i < g->n; i++) {
		const tinyc_uop *u = &g->nodes[i];
		if (u->op != TINYC_OP_BUFFER)
			continue;
		int64_t shape[TINYC_MAX_RANK], span = 1;
		for (int d = 0; d < u->rank; d++) {
			if ((shape[d] = tinyc_dim_value(&u->shape[d], b)) < 0)
				return tinyc_error(ctx, "UnboundSymbol", "tinyc tune needs every size bound (--bind)");
			if (u->strides) {
				int64_t st = tinyc_dim_value(&u->strides[d], b);
				if (st < 0)
					return tinyc_error(ctx, "UnboundSymbol", "bind the strides of %s", u->name);
				span += (shape[d] - 1) * st;
			}
		}
		owned[u->slot] = u->strides ? tinyc_tensor_alloc(ctx, u->dtype, 1, &span)
					    : tinyc_tensor_alloc(ctx, u->dtype, u->rank, shape);
		if (!owned[u->slot])
			return -1;
		tinyc_tensor_fill_random(owned[u->slot], seed * 1000003u + (uint64_t)u->slot);
		io->in[u->slot] = owned[u->slot];
	}
	return 0;
}

/* Build and time candidate row r of kernel kk once more (r->times); in the first round
 * (r->ntimes == 0) its outputs are checked: ref receives the outputs of the first
 * successful candidate (the reference of the others).  A failure sets r->us < 0. */
static void measure(tinyc_ctx *ctx, tinyc_cuda **cup, tinyc_module *m, int kk, tune_row *r,
		    tinyc_io *io, tinyc_io *ref, const tune_cli *c)
{
	tinyc_cuda *cu = *cup;
	tinyc_schedule *s = tinyc_module_schedule(m);
	tinyc_skernel *k = &s->kerns[kk];
	int saved = k->choice;
	k->choice = r->cand;
	int ndiag = tinyc_ctx_diag_count(ctx);
	tinyc_gpu_module *gm = tinyc_gpuir_build(ctx, s, tinyc_module_indexbook(m));
	k->choice = saved;
	if (!gm || tinyc_gpu_verify(ctx, gm, s->dev.smem_per_block_optin) < 0) {
		r->us = -1, r->why = "build failed";
		tinyc_gpu_module_free(gm);
		return;
	}
	int64_t *sym = calloc((size_t)m->uop->nsym + 1, sizeof(int64_t));
	if (!sym) {
		r->us = -1, r->why = "out of memory";
		tinyc_gpu_module_free(gm);
		return;
	}
	for (int i = 0; i < m->uop->nsym; i++)
		sym[i] = m->bind->val[i];
	tinyc_gpu_run_opts opt = {c->warmup, c->iters, 0};
	tinyc_gpu_run_stats st = {0};
	if (tinyc_gpu_run_cuda(ctx, cu, gm, sym, io, &opt, &st) < 0) {
		r->us = -1, r->why = "run failed";
		/* a kernel fault leaves the context unusable: start the next candidate on a new one */
		tinyc_cuda_close(cu);
		*cup = tinyc_cuda_open(ctx, 0);
	} else {
		double total = 0, compile = 0;
		for (int i = 0; i < st.nkernel; i++)
			total += st.k[i].median_ms * 1e3, compile += st.k[i].compile_ms;
		/* the whole plan by CUDA-graph replay where the driver has graphs (no launch
		 * gaps), else the sum of the kernels' event medians */
		double us = st.plan_graph_ms > 0 ? st.plan_graph_ms * 1e3 : total;
		r->times[r->ntimes++] = us;	/* one a round: ntimes < --rounds */
		r->us = us;
		if (c->verbose)
			fprintf(stderr, "tinyc tune: %s: compile %.1f ms, %.2f us\n", r->key, compile, us);
		if (r->ntimes > 1) {	/* checked in the first round */
			tinyc_io_clear_outputs(io);
		} else if (!ref->out) {	/* the first result is the reference of the others */
			ref->nout = io->nout;
			ref->out = io->out;
			io->out = NULL;
		} else {
			for (int o = 0; o < io->nout && r->us >= 0; o++) {
				tinyc_cmp cmp;
				double tol = tinyc_dtype_is_16bit_float(io->out[o]->dtype) ? 2e-2 : 1e-3;
				if (tinyc_tensor_compare(ctx, io->out[o], ref->out[o], 5 * tol, tol, &cmp) < 0 ||
				    cmp.mismatched) {
					r->us = -1;
					r->why = "differs from the first candidate's output";
				}
			}
			tinyc_io_clear_outputs(io);
		}
	}
	tinyc_gpu_run_stats_clear(&st);
	free(sym);
	tinyc_gpu_module_free(gm);
	/* a failed candidate's diagnostics are reported in the table, not as errors */
	if (tinyc_ctx_diag_count(ctx) > ndiag) {
		if (c->verbose)
			tinyc_ctx_print_diags(ctx, stderr);
		tinyc_ctx_clear_diags(ctx);
	}
}

/* The tuning itself, once the arguments are parsed. */
static int tune_run(tinyc_ctx *ctx, const tune_cli *c)
{
	int rc = 1;
	setenv("TINYC_TUNE", "0", 1);	/* the model's own estimates, not a previous record */
	tinyc_options opt = {0};
	opt.bind = c->bind;
	opt.target = c->target;
	opt.verbose = 0;
	opt.kernels_only = 1;	/* the schedule and the kernels only */
	tinyc_source *src = tinyc_source_read(ctx, c->file);
	tinyc_module *m = src ? tinyc_module_alloc(ctx, src, &opt) : NULL;
	tinyc_cuda *cu = NULL;
	tinyc_io io = {0}, ref = {0};
	tinyc_tensor **owned = NULL;
	if (!m || tinyc_module_run_until(m, tinyc_pass_find("schedule"), 0, NULL) < 0)
		goto done;
	tinyc_schedule *s = tinyc_module_schedule(m);
	int kk = matmul_kernel(s);
	if (kk < 0) {
		tinyc_error(ctx, "TuneError", "%s has no contraction to tune", c->file);
		goto done;
	}
	tinyc_skernel *k = &s->kerns[kk];
	const tinyc_mm_plan *mp0 = tinyc_skernel_plan(k)->ext;
	char cls[96];
	if (tinyc_tune_class(s, &mp0->prob, cls, sizeof(cls)) < 0) {
		tinyc_error(ctx, "TuneError", "tinyc tune needs every size bound (--bind)");
		goto done;
	}
	tune_row rows[TUNE_MAX];
	int n = prune(k, c->top, rows);
	printf("tinyc tune: %s on %s (%s), class %s, kernel %s: %d of %d candidates (model-pruned)\n",
	       c->file, s->dev.name, s->dev.target, cls, k->name, n, k->ncand);
	if (c->dry_run) {
		for (int i = 0; i < n; i++)
			printf("  %-40s est %10.2f us\n", rows[i].key, rows[i].est_us);
		rc = 0;
		goto done;
	}
	if (!(cu = tinyc_cuda_open(ctx, 0)))
		goto done;
	int nin = 0;
	for (int i = 0; i < m->uop->n; i++) {
		const tinyc_uop *u = &m->uop->nodes[i];
		if (u->op == TINYC_OP_BUFFER && u->slot + 1 > nin)
			nin = (int)u->slot + 1;
		if (u->op == TINYC_OP_OUTPUT)
			io.nout++;
	}
	io.nin = nin;
	io.in = calloc((size_t)nin + 1, sizeof(*io.in));
	owned = calloc((size_t)nin + 1, sizeof(*owned));
	if (!io.in || !owned) {
		tinyc_error(ctx, "OutOfMemory", "inputs");
		goto done;
	}
	if (make_inputs(ctx, m->uop, m->bind, c->seed, &io, owned) < 0)
		goto done;
	int best = -1;
	/* the model's choice first: its outputs are the reference */
	for (int i = 0; i < n; i++)
		if (rows[i].cand == k->choice && i) {
			tune_row t = rows[0];
			rows[0] = rows[i], rows[i] = t;
		}
	/* R rounds, each starting one candidate further on (the first: the model's choice
	 * first); a candidate that failed is not run again */
	for (int round = 0; round < c->rounds && cu; round++)
		for (int j = 0; j < n && cu; j++) {
			tune_row *r = &rows[(j + round) % n];
			if (round == 0 || (r->us >= 0 && r->ntimes == round))
				measure(ctx, &cu, m, kk, r, &io, &ref, c);
		}
	for (int i = 0; i < n; i++) {
		if (rows[i].us < 0 || !rows[i].ntimes)
			continue;
		rows[i].us = tinyc_median(rows[i].times, rows[i].ntimes);
		if (best < 0 || rows[i].us < rows[best].us)
			best = i;
	}
	printf("  %-40s %12s %12s  %s\n", "configuration", "est (us)", "measured", "");
	for (int i = 0; i < n; i++) {
		if (rows[i].us >= 0)
			printf("  %-40s %12.2f %12.2f  %s\n", rows[i].key, rows[i].est_us, rows[i].us,
			       i == best ? "best" : rows[i].cand == k->choice ? "model's choice" : "");
		else
			printf("  %-40s %12.2f %12s  %s\n", rows[i].key, rows[i].est_us, "-",
			       rows[i].why ? rows[i].why : "failed");
	}
	if (best < 0) {
		tinyc_error(ctx, "TuneError", "no candidate ran");
		goto done;
	}
	if (tinyc_tune_store(ctx, s, &mp0->prob, rows[best].key, rows[best].us) < 0)
		goto done;
	char *path = tinyc_tune_path(&s->dev);
	printf("tinyc tune: stored %s (%.2f us) for %s in %s\n", rows[best].key, rows[best].us, cls,
	       path ? path : "?");
	free(path);
	rc = 0;
done:
	tinyc_cli_io_free(&io, &ref, owned);	/* ref.in is NULL: ref holds outputs only */
	if (cu)
		tinyc_cuda_close(cu);
	tinyc_module_free(m);
	tinyc_source_free(src);
	return rc;
}

int tinyc_cmd_tune(int argc, char **argv)
{
	tune_cli c;
	memset(&c, 0, sizeof(c));
	int rc = tune_parse(argc, argv, &c);
	if (rc >= 0)
		return rc;
	tinyc_ctx *ctx = tinyc_cli_ctx_alloc();
	if (!ctx) {
		fprintf(stderr, "tinyc: error: OutOfMemory\n");
		return 1;
	}
	rc = tune_run(ctx, &c);
	fflush(stdout);
	tinyc_ctx_print_diags(ctx, stderr);
	if (rc == 0 && tinyc_ctx_error_count(ctx))
		rc = 1;
	tinyc_ctx_free(ctx);
	return rc;
}
