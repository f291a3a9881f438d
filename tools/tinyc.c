/* tinyc: the command-line driver.
 *
 *   tinyc [options] FILE                 compile FILE and dump a stage (default: uop)
 *   tinyc run FILE [options]             run FILE on inputs (.npy) and write outputs
 *   tinyc bench FILE --bind ... [options] time every kernel of FILE on the GPU
 *   tinyc htree --q .. --k .. --v .. --out ..  the htree forward (tools/tinyc_htree.c)
 *
 * Exit status: 0 success, 1 diagnostics (bad input, failed check), 2 usage error.
 * The driver only parses arguments, runs the pass pipeline (driver/pipeline.c) and prints;
 * every diagnostic comes from the library through the tinyc_ctx.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ctx.h"
#include "driver/module.h"
#include "ir/tensor.h"
#include "ir/uop.h"
#include "lower/lower.h"
#include "codegen/gpu.h"
#include "runtime/runtime.h"
#include "sched/schedule.h"
#include "driver/run.h"
#include "tinyc_args.h"

enum { EXIT_OK = 0, EXIT_DIAG = 1, EXIT_USAGE = 2 };

/* A NAME=path pair from --in / --out. */
typedef struct named_path {
	char *name;		/* tensor name (BUFFER name= or OUTPUT name=) */
	char *path;		/* .npy file */
} named_path;

/* Everything the command line says. */
typedef struct cli {
	const char *cmd;	/* "compile", "run" or "bench" */
	const char *file;	/* the .uop input ("-": standard input) */
	const char *output;	/* -o FILE: what goes to standard output goes there */
	const char *stage;	/* --dump-stage */
	const char *format_name;	/* --format: "text" or "dot" */
	tinyc_format format;	/* its value */
	int print_after_all;	/* --print-after-all */
	const char *target;	/* --target */
	int verify_each;	/* --verify-each */
	int verbose;		/* -v */
	tinyc_options opt;	/* the compilation options: the three above and --bind */
	char *bind;		/* --bind values joined with ',' */
	named_path *in;		/* --in */
	int nin;
	named_path *out;	/* --out */
	int nout;
	int have_seed;		/* --random-inputs given */
	uint64_t seed;		/* --random-inputs SEED */
	const char *device;	/* --device */
	int check;		/* --check: compare with the reference evaluator */
	double atol, rtol;	/* --atol, --rtol */
	int runtime_sizes;	/* run: --runtime-sizes, --bind values reach the kernels at launch */
	int warmup;		/* bench: --warmup N launches before timing */
	int iters;		/* bench: --iters N timed launches per kernel */
	double passes_ms;	/* run/bench: time of the compiler passes (JIT latency report) */
	int64_t max_memory;	/* run/bench: --max-memory=BYTES, or -1 */
	int no_isolate;		/* run: --no-isolate, the GPU work in this process */
	double gpu_timeout;	/* run: --gpu-timeout=SECONDS of an isolated run (0: none) */
	double driver_ms;	/* run/bench on cuda: the CUDA driver's initialisation (once per
				 * process, before the passes) */
	tinyc_gpu_cached *cached;	/* run/bench on cuda: the module from the module cache */
	int store_module;	/* run/bench on cuda: store the module after the run (a miss) */
	unsigned char module_key[32];	/* its key */
} cli;

/* --bind: the values of every --bind, joined with ','. */
static int set_bind(void *dst, const char *v, char *why, size_t wsize)
{
	cli *c = dst;
	char *s = c->bind ? tinyc_asprintf("%s,%s", c->bind, v) : strdup(v);
	if (!s) {
		snprintf(why, wsize, "out of memory at '%s'", v);
		return -1;
	}
	free(c->bind);
	c->bind = s;
	return 0;
}

/* Append the NAME=path pair arg to *v; -1 when it is not one. */
static int add_named(named_path **v, int *n, const char *arg)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg || !eq[1])
		return -1;
	named_path *nv = realloc(*v, (size_t)(*n + 1) * sizeof(**v));
	if (!nv)
		return -1;
	*v = nv;
	nv[*n].name = strndup(arg, (size_t)(eq - arg));
	nv[*n].path = strdup(eq + 1);
	(*n)++;
	return 0;
}

/* --in/--out NAME=file.npy into *v; 0, or -1 with the message in why. */
static int set_named(named_path **v, int *n, const char *opt, const char *value, char *why,
		     size_t wsize)
{
	if (add_named(v, n, value) == 0)
		return 0;
	snprintf(why, wsize, "%s expects NAME=file.npy, got '%s'", opt, value);
	return -1;
}

/* --in NAME=x.npy */
static int set_in(void *dst, const char *v, char *why, size_t wsize)
{
	return set_named(&((cli *)dst)->in, &((cli *)dst)->nin, "--in", v, why, wsize);
}

/* --out NAME=y.npy */
static int set_out(void *dst, const char *v, char *why, size_t wsize)
{
	return set_named(&((cli *)dst)->out, &((cli *)dst)->nout, "--out", v, why, wsize);
}

/* --random-inputs SEED */
static int set_seed(void *dst, const char *v, char *why, size_t wsize)
{
	cli *c = dst;
	char *end;
	errno = 0;
	unsigned long long s = strtoull(v, &end, 10);
	if (!*v || *v == '-' || *end || errno) {
		snprintf(why, wsize, "--random-inputs expects an integer seed, got '%s'", v);
		return -1;
	}
	c->have_seed = 1;
	c->seed = s;
	return 0;
}

#define F(field) offsetof(cli, field)

static const tinyc_arg compile_opts[] = {
	{"--dump-stage", NULL, TINYC_ARG_STR, F(stage), "NAME", 0, 0, NULL, NULL,
	 "print the IR after stage NAME (default: uop; the stages\nare listed below)"},
	{"--format", NULL, TINYC_ARG_CHOICE, F(format_name), "text|dot", 0, 0, "text|dot", NULL,
	 "dump format (dot: Graphviz, for the uop stage)"},
	{"--print-after-all", NULL, TINYC_ARG_FLAG, F(print_after_all), NULL, 0, 0, NULL, NULL,
	 "print every stage up to --dump-stage"},
	{0},
};

static const tinyc_arg common_opts[] = {
	{"--bind", NULL, TINYC_ARG_CALL, 0, "M=64,N=32", 0, 0, NULL, set_bind,
	 "bind size symbols (repeatable); at compile time they\nspecialise the kernels; "
	 "run: symbols not bound are read\noff the inputs"},
	{"--target", NULL, TINYC_ARG_STR, F(target), "sm_XY", 0, 0, NULL, NULL,
	 "GPU target when no GPU is present (sm_80, sm_90, sm_90a)"},
	{"--verify-each", NULL, TINYC_ARG_FLAG, F(verify_each), NULL, 0, 0, NULL, NULL,
	 "run every stage's verifier, not only the last one's"},
	{"--verbose", "-v", TINYC_ARG_FLAG, F(verbose), NULL, 0, 0, NULL, NULL,
	 "per-pass times to stderr; with --device=cuda also\nper-kernel compile times "
	 "(tinyc's GPU IR build and nvrtc's)"},
	{"-o", NULL, TINYC_ARG_STR, F(output), "FILE", 0, 0, NULL, NULL,
	 "write the output (dump, run report) to FILE, not stdout"},
	{0},
};

static const tinyc_arg run_opts[] = {
	{"--in", NULL, TINYC_ARG_CALL, 0, "NAME=x.npy", 0, 0, NULL, set_in,
	 "input tensor for BUFFER name=NAME (repeatable)"},
	{"--out", NULL, TINYC_ARG_CALL, 0, "NAME=y.npy", 0, 0, NULL, set_out,
	 "write OUTPUT name=NAME to a .npy file (repeatable)"},
	{"--random-inputs", NULL, TINYC_ARG_CALL, 0, "SEED", 0, 0, NULL, set_seed,
	 "fill inputs not given with --in with seeded random data"},
	{"--device", NULL, TINYC_ARG_CHOICE, F(device), "ref|cpu|cuda|gpuir", 0, 0,
	 "ref|cpu|cuda|gpuir", NULL,
	 "ref: the reference evaluator; cpu: the pipeline up to\nrbssa, run by the RB-SSA "
	 "interpreter (default for run);\ncuda: the generated CUDA kernels on the GPU (nvrtc,\n"
	 "kernel cache; the only one for bench); gpuir: the same\nkernels' GPU IR on the CPU "
	 "interpreter (no GPU needed)"},
	{"--check", NULL, TINYC_ARG_FLAG, F(check), NULL, 0, 0, NULL, NULL,
	 "compare every output with the reference evaluator: max\nabs/rel error per output, "
	 "exit 1 beyond the tolerance"},
	{"--atol", NULL, TINYC_ARG_DOUBLE, F(atol), "X", 0, 0, NULL, NULL,
	 "absolute tolerance of --check (default: by dtype)"},
	{"--rtol", NULL, TINYC_ARG_DOUBLE, F(rtol), "Y", 0, 0, NULL, NULL,
	 "relative tolerance of --check (default: by dtype)"},
	{"--max-memory", NULL, TINYC_ARG_I64, F(max_memory), "BYTES", 0, INT64_MAX, NULL, NULL,
	 "refuse (OutOfMemory) a run whose inputs and outputs take\nmore than BYTES "
	 "(always: more than the machine has free)"},
	{"--runtime-sizes", NULL, TINYC_ARG_FLAG, F(runtime_sizes), NULL, 0, 0, NULL, NULL,
	 "compile the kernels for symbolic sizes and give the\n--bind values only at launch "
	 "(default: --bind specialises)"},
	{"--no-isolate", NULL, TINYC_ARG_FLAG, F(no_isolate), NULL, 0, 0, NULL, NULL,
	 "run: launch the kernels in this process, not in the GPU\nworker (a kernel's fault "
	 "then ends every later CUDA\ncall of the process)"},
	{"--gpu-timeout", NULL, TINYC_ARG_DOUBLE, F(gpu_timeout), "SECONDS", 0, 0, NULL, NULL,
	 "run on cuda: kill the GPU worker and fail (GpuTimeout)\nwhen the kernels take longer "
	 "(default 60; 0: no limit)"},
	{0},
};

static const tinyc_arg bench_opts[] = {
	{"--warmup", NULL, TINYC_ARG_INT, F(warmup), "N", 0, 1000000, NULL, NULL,
	 "untimed launches per kernel first (default 10)"},
	{"--iters", NULL, TINYC_ARG_INT, F(iters), "N", 1, 1000000, NULL, NULL,
	 "launches per graph / per timed run (default 100)"},
	{0},
};

#undef F

static const tinyc_arg_group compile_group = {"Compile options", compile_opts};
static const tinyc_arg_group common_group = {"Common options", common_opts};
static const tinyc_arg_group run_group = {"Run options", run_opts};
static const tinyc_arg_group bench_group = {"Bench options", bench_opts};

/* The stages, after the options of tinyc --help. */
static void stages_help(FILE *out)
{
	int n;
	const tinyc_pass *p = tinyc_pipeline(&n);
	fprintf(out, "\nStages (--dump-stage):\n");
	for (int i = 0; i < n; i++)
		fprintf(out, "  %-10s %s\n", p[i].name, p[i].what);
}

#define EXIT_TEXT \
	"Exit status: 0 success, 1 diagnostics or failed check, 2 usage error.\n" \
	"Diagnostics are printed as FILE:LINE:COL: error: Kind: message, with a caret;\n" \
	"in colour on a terminal unless NO_COLOR is set.\n"

static const tinyc_command cmd_compile_args, cmd_run_args, cmd_bench_args;
static const tinyc_command *const cli_commands[] = {&cmd_compile_args, &cmd_run_args,
						    &cmd_bench_args, NULL};

static const tinyc_command cmd_compile_args = {
	"tinyc",
	"tinyc [options] FILE          compile FILE (tinyc-uop v0) and dump a stage\n"
	"       tinyc run FILE [options]      run FILE on .npy inputs\n"
	"       tinyc bench FILE --bind ...   time every kernel of FILE on the GPU\n"
	"       tinyc tune FILE --bind ...    measure the matmul candidates on the GPU and\n"
	"                                     keep the fastest in the tuning cache\n"
	"       tinyc htree --q Q --k K --v V --out O [options]   the htree forward\n",
	"FILE '-' reads the graph from standard input.  Every subcommand has its own\n"
	"--help: tinyc run --help, tinyc bench --help, tinyc tune --help, tinyc htree --help.\n",
	{&compile_group, &common_group, &tinyc_args_other, NULL},
	"FILE", offsetof(cli, file), stages_help, EXIT_TEXT, cli_commands,
};

static const tinyc_command cmd_run_args = {
	"tinyc run",
	"tinyc run FILE [options]\n",
	"Runs FILE ('-': standard input) on .npy inputs (--in) or seeded random data\n"
	"(--random-inputs) on a device, prints a summary of each output, writes the outputs\n"
	"asked for (--out) and compares them with the reference evaluator (--check).\n",
	{&run_group, &common_group, &tinyc_args_other, NULL},
	"FILE", offsetof(cli, file), NULL, EXIT_TEXT, cli_commands,
};

static const tinyc_command cmd_bench_args = {
	"tinyc bench",
	"tinyc bench FILE --bind M=..,N=.. [options]\n",
	"Times every kernel of FILE on the GPU: every size symbol bound with --bind; inputs\n"
	"are --in files or seeded random data (--random-inputs, default seed 1).  Prints per\n"
	"kernel the CUDA-graph replay time per launch (N launches captured into one graph,\n"
	"median of 7 replays / N), GB/s and TFLOP/s and their fractions of the device's peak,\n"
	"the median event time of single launches and the host wall time per launch of N\n"
	"back-to-back launches; then the whole plan (every kernel in order) by graph replay\n"
	"and by N back-to-back executions between two events; each kernel's plan, and the\n"
	"JIT latency: the compiler passes, the cached compile (nvrtc when cold) and the\n"
	"module load.\n",
	{&bench_group, &run_group, &common_group, &tinyc_args_other, NULL},
	"FILE", offsetof(cli, file), NULL, EXIT_TEXT, cli_commands,
};

/* Parse argv into c.  -1: go on; otherwise the exit status. */
static int parse_args(int argc, char **argv, cli *c)
{
	const tinyc_command *cmd = &cmd_compile_args;
	c->cmd = "compile";
	c->device = "cpu";
	c->atol = c->rtol = -1;
	c->max_memory = -1;
	c->gpu_timeout = TINYC_GPU_TIMEOUT_DEFAULT;
	c->warmup = 10;
	c->iters = 100;
	int skip = 0;
	if (argc > 1 && !strcmp(argv[1], "run")) {
		c->cmd = "run";
		cmd = &cmd_run_args;
		skip = 1;
	} else if (argc > 1 && !strcmp(argv[1], "bench")) {
		c->cmd = "bench";
		c->device = "cuda";
		cmd = &cmd_bench_args;
		skip = 1;
	}
	int rc = tinyc_args_parse(cmd, argc - skip, argv + skip, c);
	if (rc >= 0)
		return rc;
	c->opt.target = c->target;
	c->opt.verify_each = c->verify_each;
	c->opt.verbose = c->verbose;
	c->format = c->format_name && !strcmp(c->format_name, "dot") ? TINYC_FMT_DOT : TINYC_FMT_TEXT;
	if (!strcmp(c->cmd, "bench") && strcmp(c->device, "cuda"))
		return tinyc_args_error(cmd, "'tinyc bench' times kernels on the GPU: --device=%s is not "
					"one", c->device);
	if (!strcmp(c->cmd, "bench") && !c->have_seed) {
		c->have_seed = 1;
		c->seed = 1;
	}
	if (c->stage && tinyc_pass_find(c->stage) < 0) {
		int n;
		const tinyc_pass *p = tinyc_pipeline(&n);
		fprintf(stderr, "tinyc: usage error: unknown stage '%s'; known stages:", c->stage);
		for (int k = 0; k < n; k++)
			fprintf(stderr, " %s", p[k].name);
		fprintf(stderr, "\n");
		return EXIT_USAGE;
	}
	return -1;
}

/* Free what parsing allocated. */
static void cli_free(cli *c)
{
	for (int i = 0; i < c->nin; i++)
		free(c->in[i].name), free(c->in[i].path);
	for (int i = 0; i < c->nout; i++)
		free(c->out[i].name), free(c->out[i].path);
	free(c->in);
	free(c->out);
	free(c->bind);
}

/* Compile: run the pipeline up to the stage and print its dump. */
static int cmd_compile(tinyc_ctx *ctx, cli *c, tinyc_module *m)
{
	int last = tinyc_pass_find(c->stage ? c->stage : "uop");
	tinyc_buf dumps = {0};
	if (tinyc_module_run_until(m, last, c->print_after_all, &dumps) < 0) {
		tinyc_buf_free(&dumps);
		return EXIT_DIAG;
	}
	if (c->print_after_all) {
		fputs(dumps.data ? dumps.data : "", stdout);
		tinyc_buf_free(&dumps);
		return EXIT_OK;
	}
	tinyc_buf_free(&dumps);
	int n;
	const tinyc_pass *p = tinyc_pipeline(&n);
	tinyc_buf out = {0};
	if (p[last].print(m, c->format, &out) < 0) {
		tinyc_buf_free(&out);
		tinyc_error(ctx, "UnsupportedFormat", "stage '%s' has no %s dump", p[last].name,
			    c->format == TINYC_FMT_DOT ? "dot" : "text");
		return EXIT_DIAG;
	}
	fputs(out.data ? out.data : "", stdout);
	tinyc_buf_free(&out);
	return EXIT_OK;
}

/* Default tolerances for --check, by output dtype. */
static void default_tol(tinyc_dtype dt, double *atol, double *rtol)
{
	if (dt == TINYC_HALF)
		*atol = 1e-2, *rtol = 1e-2;
	else if (dt == TINYC_BFLOAT16)
		*atol = 5e-2, *rtol = 5e-2;
	else if (dt == TINYC_FLOAT)
		*atol = 1e-5, *rtol = 1e-5;
	else if (dt == TINYC_DOUBLE)
		*atol = 1e-12, *rtol = 1e-12;
	else
		*atol = 0, *rtol = 0;
}

/* The shape of a BUFFER under the bindings (all symbols must be bound). */
static int buffer_shape(const tinyc_graph *g, const tinyc_uop *u, const tinyc_bindings *b,
			int64_t *shape)
{
	(void)g;
	for (int d = 0; d < u->rank; d++)
		if ((shape[d] = tinyc_dim_value(&u->shape[d], b)) < 0)
			return -1;
	return 0;
}

/* Short summary of an output for the terminal. */
static void print_summary(const char *name, const tinyc_tensor *t)
{
	int64_t n = tinyc_tensor_numel(t);
	double sum = 0, amax = 0;
	for (int64_t i = 0; i < n; i++) {
		double v = tinyc_tensor_get(t, i);
		sum += v;
		if (v > amax || v < -amax)
			amax = v < 0 ? -v : v;
	}
	printf("  %s: %s[", name, tinyc_dtype_name(t->dtype));
	for (int d = 0; d < t->rank; d++)
		printf("%s%lld", d ? "," : "", (long long)t->shape[d]);
	printf("] sum=%.6g max|x|=%.6g\n", sum, amax);
}

/* bench: the per-kernel table (median time, bandwidth, throughput, fractions of peak). */
static void bench_report(const cli *c, const tinyc_module *m, const tinyc_device_info *dev,
			 const tinyc_gpu_run_stats *st)
{
	const tinyc_schedule *s = tinyc_module_schedule(m);
	printf("tinyc bench: %s on %s (%s), %d warm-up; per kernel: CUDA-graph replay of %d launches "
	       "(median of 7 replays / %d), median event time of %d single launches, host wall time "
	       "of %d back-to-back launches\n", c->file, dev->name, dev->target, c->warmup, c->iters,
	       c->iters, c->iters, c->iters);
	printf("  %-24s %10s %10s %7s %10s %7s  %-7s %9s %9s\n", "kernel", "graph(us)", "GB/s", "%peak",
	       "TFLOP/s", "%peak", "bound", "event(us)", "wall(us)");
	double total = 0;
	for (int i = 0; i < st->nkernel; i++) {
		const tinyc_gpu_kernel_stat *k = &st->k[i];
		/* the graph replay when the driver has graphs, else the event median */
		double us = (k->graph_ms > 0 ? k->graph_ms : k->median_ms) * 1e3;
		total += us;
		double flops = 0, bytes = 0, peak_tf = s ? s->fp32_tflops : 0;
		/* the schedule kernel of the same name (a template's extra kernels, such as
		 * packing or final passes, have none: no work figures) */
		int sk = -1;
		for (int j = 0; s && j < s->nkern && sk < 0; j++)
			if (!strcmp(s->kerns[j].name, k->name))
				sk = j;
		if (sk >= 0) {
			const tinyc_plan *p = tinyc_skernel_plan(&s->kerns[sk]);
			flops = s->kerns[sk].flops;
			bytes = s->kerns[sk].bytes;
			if (p && p->kind == TINYC_PLAN_MATMUL)	/* flops count MUL and ADD already */
				peak_tf = dev->peak_fp16_tflops;
		}
		double gbs = us > 0 ? bytes / (us * 1e3) : 0, tfs = us > 0 ? flops / (us * 1e6) : 0;
		double fb = dev->peak_bandwidth_gbs > 0 ? gbs / dev->peak_bandwidth_gbs : 0;
		double ff = peak_tf > 0 ? tfs / peak_tf : 0;
		printf("  %-24s %10.2f %10.1f %6.1f%% %10.3f %6.1f%%  %-7s %9.2f %9.2f\n", k->name, us, gbs,
		       100 * fb, tfs, 100 * ff, fb >= ff ? "memory" : "compute", k->median_ms * 1e3,
		       k->wall_ms * 1e3);
	}
	printf("  %-24s %10.2f\n", "total", total);
	/* the whole plan, every kernel in order: what a caller of the module waits for */
	printf("  plan time: graph %.3f us per execution (%d executions per graph, median of 7 "
	       "replays); back-to-back %.3f us per execution (%d executions between two events)\n",
	       st->plan_graph_ms * 1e3, c->iters, st->plan_run_ms * 1e3, c->iters);
	/* the plan and the JIT latency of every kernel: compiler passes, then per kernel the
	 * cached compile (nvrtc on a miss) and the module load; resources from the driver */
	for (int i = 0; s && i < s->nkern && i < st->nkernel; i++) {
		const tinyc_plan *p = tinyc_skernel_plan(&s->kerns[i]);
		if (p)
			printf("  plan %s: %s\n", s->kerns[i].name, p->desc);
	}
	for (int i = 0; !s && c->cached && i < c->cached->nkernel; i++)	/* as stored */
		if (c->cached->plans[i])
			printf("  plan %s: %s\n", c->cached->gm->kernels[i]->name, c->cached->plans[i]);
	double compile_ms = 0, load_ms = 0;
	int hits = 0;
	for (int i = 0; i < st->nkernel; i++) {
		const tinyc_gpu_kernel_stat *k = &st->k[i];
		printf("  jit %s: passes %.1f ms + %s %.1f ms + load %.1f ms = %.1f ms; %d regs, %d B smem, "
		       "%d B local (spills); driver init %.1f ms once per process\n", k->name, c->passes_ms,
		       k->cache_hit ? "cache hit" : "nvrtc (cold)", k->compile_ms, k->load_ms,
		       c->passes_ms + k->compile_ms + k->load_ms, k->regs, k->smem_bytes, k->local_bytes,
		       c->driver_ms);
		compile_ms += k->compile_ms, load_ms += k->load_ms, hits += k->cache_hit;
	}
	/* the whole module: what a user waits for before the first launch; the kernels are
	 * compiled in parallel, so the compile is the elapsed time, not the sum */
	double wall = st->print_ms + st->compile_wall_ms;
	printf("  jit total: passes %.1f ms + %s %.1f ms + load %.1f ms = %.1f ms (%d kernels, %d "
	       "cache hits; CUDA text %.1f ms, compiles %.1f ms summed over kernels)\n", c->passes_ms,
	       hits == st->nkernel ? "cache hit" : "nvrtc (cold)", wall, load_ms,
	       c->passes_ms + wall + load_ms, st->nkernel, hits, st->print_ms, compile_ms);
}

/* Store the module that just ran (kernels, images, each kernel's plan line) in the
 * compiled-module cache; a failure to store is not an error of the run. */
static void store_module(cli *c, tinyc_module *m, const tinyc_gpu_module *gm, const int64_t *sym,
			 const tinyc_blob *images)
{
	const tinyc_schedule *s = tinyc_module_schedule(m);
	const char **plans = calloc((size_t)gm->nkernel + 1, sizeof(*plans));
	if (!plans)
		return;
	for (int i = 0; i < gm->nkernel; i++)
		for (int j = 0; s && j < s->nkern && !plans[i]; j++)
			if (!strcmp(s->kerns[j].name, gm->kernels[i]->name) && tinyc_skernel_plan(&s->kerns[j]))
				plans[i] = tinyc_skernel_plan(&s->kerns[j])->desc;
	int rc = tinyc_gpu_cache_store(c->module_key, gm, sym, images, plans);
	if (c->opt.verbose)
		fprintf(stderr, "tinyc: module cache: %s\n", rc == 0 ? "stored" : "not stored");
	free(plans);
}

/* The device run: the RB-SSA interpreter (cpu), the reference evaluator (ref), the GPU IR
 * interpreter (gpuir) or the GPU (cuda).  Writes what ran where into where. */
static int device_run(tinyc_ctx *ctx, cli *c, tinyc_module *m, tinyc_io *io, char *where,
		      size_t wsize)
{
	const char *d = c->device;
	if (!strcmp(d, "cpu")) {
		snprintf(where, wsize, "the CPU (RB-SSA interpreter)");
		return tinyc_rbssa_run(ctx, tinyc_module_rbssa(m), m->bind, io);
	}
	if (!strcmp(d, "ref")) {
		snprintf(where, wsize, "the reference evaluator");
		return tinyc_eval(ctx, m->uop, m->bind, io);
	}
	tinyc_gpu_module *gm = c->cached && !strcmp(d, "cuda") ? c->cached->gm : tinyc_module_gpuir(m);
	if (!gm)
		return tinyc_error(ctx, "PipelineError", "no GPU IR to run");
	int64_t *sym = calloc((size_t)m->uop->nsym + 1, sizeof(int64_t));
	if (!sym)
		return tinyc_error(ctx, "OutOfMemory", "symbol values");
	for (int i = 0; i < m->uop->nsym; i++)
		sym[i] = m->bind->val[i];
	int rc;
	if (!strcmp(d, "gpuir")) {
		snprintf(where, wsize, "the CPU (GPU IR interpreter, %d kernels)", gm->nkernel);
		rc = tinyc_gpu_run_interp(ctx, gm, sym, io);
		free(sym);
		return rc;
	}
	int bench = !strcmp(c->cmd, "bench");
	/* a run goes to the GPU worker (a fault or a hang there cannot harm this process);
	 * bench times launches here */
	tinyc_worker *w = NULL;
	tinyc_cuda *cu = NULL;
	const tinyc_device_info *dev = NULL;
	if (!(c->gpu_timeout >= 0)) {
		free(sym);
		return tinyc_error(ctx, "InvalidOption", "--gpu-timeout=%g: the limit is 0 (none) or "
				   "more seconds", c->gpu_timeout);
	}
	if (!bench && !c->no_isolate) {
		if ((w = tinyc_gpu_worker_new(ctx)))
			dev = tinyc_worker_device(ctx, w);
	} else if ((cu = tinyc_cuda_open(ctx, 0))) {
		dev = tinyc_cuda_device_info(cu);
	}
	if (!dev) {
		tinyc_worker_free(w);
		tinyc_cuda_close(cu);
		free(sym);
		return -1;
	}
	tinyc_gpu_run_opts opt = {bench ? c->warmup : 0, bench ? c->iters : 0, 0, NULL, NULL};
	tinyc_gpu_run_stats st = {0};
	if (c->cached)
		opt.images = c->cached->images;
	else if (c->store_module)
		opt.keep = calloc((size_t)gm->nkernel + 1, sizeof(*opt.keep));
	rc = w ? tinyc_gpu_run_isolated(ctx, w, gm, sym, io, &opt, c->gpu_timeout, &st)
	       : tinyc_gpu_run_cuda(ctx, cu, gm, sym, io, &opt, &st);
	if (rc == 0 && opt.keep)
		store_module(c, m, gm, sym, opt.keep);
	for (int i = 0; opt.keep && i < gm->nkernel; i++)
		free(opt.keep[i].data);
	free(opt.keep);
	snprintf(where, wsize, "%s (%s, %d kernels)", dev->name, dev->target, gm->nkernel);
	if (rc == 0 && c->opt.verbose)
		for (int i = 0; i < st.nkernel; i++)
			fprintf(stderr, "tinyc: kernel %-24s GPU IR %.3f ms, nvrtc %.1f ms%s, compile %.1f ms "
				"(passes %.1f ms before), load %.1f ms, %d regs, %d B smem, %d B local, "
				"grid (%u,%u,%u) block (%u,%u,%u)\n", st.k[i].name,
				i < gm->nkernel ? gm->kernels[i]->build_ms : 0.0, st.k[i].nvrtc_ms,
				st.k[i].cache_hit ? " (cache hit)" : "", st.k[i].compile_ms, c->passes_ms,
				st.k[i].load_ms, st.k[i].regs, st.k[i].smem_bytes, st.k[i].local_bytes,
				st.k[i].grid[0], st.k[i].grid[1], st.k[i].grid[2], st.k[i].block[0],
				st.k[i].block[1], st.k[i].block[2]);
	if (rc == 0 && c->opt.verbose)
		fprintf(stderr, "tinyc: jit: passes %.1f ms, CUDA text %.1f ms, compile %.1f ms elapsed "
			"(%d kernels in parallel)\n", c->passes_ms, st.print_ms, st.compile_wall_ms,
			st.nkernel);
	if (rc == 0 && bench)
		bench_report(c, m, dev, &st);
	tinyc_gpu_run_stats_clear(&st);
	tinyc_cuda_close(cu);
	tinyc_worker_free(w);
	free(sym);
	return rc;
}

static int cmd_run_body(tinyc_ctx *ctx, cli *c, tinyc_module *m);

/* Run: bind, load or generate inputs, evaluate, check, write outputs. */
static int cmd_run(tinyc_ctx *ctx, cli *c, tinyc_module *m)
{
	int rc = EXIT_DIAG;
	/* the GPU runs need the GPU IR only (the runtime prints each kernel's CUDA itself) and
	 * none of the analyses no later stage reads */
	const char *stage = !strcmp(c->device, "cpu") ? "rbssa"
			    : !strcmp(c->device, "cuda") || !strcmp(c->device, "gpuir") ? "gpuir" : "uop";
	m->opt.kernels_only = !strcmp(stage, "gpuir");
	int last = tinyc_pass_find(stage);
	if (last < 0) {
		tinyc_error(ctx, "UnknownStage", "the pipeline has no %s stage", stage);
		return EXIT_DIAG;
	}
	/* the kernels are compiled for the --bind values only: sizes taken from the inputs
	 * below are run-time values of the same (symbolic) kernels */
	if (c->runtime_sizes)
		m->opt.bind = NULL;
	/* the driver is initialised once per process: hold it during the passes (the schedule
	 * asks it for the device) so that the JIT latency below is the compiler's own */
	tinyc_cuda *held = NULL;
	tinyc_ctx *quiet = NULL;	/* the held driver's diagnostics: a failure is the run's */
	if (!strcmp(c->device, "cuda")) {
		double t_drv = tinyc_now_ms();
		quiet = tinyc_ctx_alloc();
		held = quiet && tinyc_cuda_available() ? tinyc_cuda_open(quiet, 0) : NULL;
		c->driver_ms = tinyc_now_ms() - t_drv;
	}
	double t_passes = tinyc_now_ms();
	/* the compiled-module cache: a graph compiled before with the same text, sizes, target,
	 * device and settings is launched from its stored description, after the parse only */
	tinyc_gpu_cached cached = {0};
	const char *mc = getenv("TINYC_MODULE_CACHE");
	int prc;
	if (held && !c->runtime_sizes && !(mc && !strcmp(mc, "0"))) {
		const tinyc_device_info *dev = tinyc_cuda_device_info(held);
		tinyc_gpu_cache_key(m->src->text, m->opt.bind ? m->opt.bind : "",
				    m->opt.target ? m->opt.target : "", dev, c->module_key);
		int bound = (prc = tinyc_module_run_until(m, 0, 0, NULL)) == 0;
		for (int i = 0; bound && i < m->uop->nsym; i++)
			bound = m->bind->val[i] >= 0;	/* sizes from the inputs: not cached */
		if (bound && tinyc_gpu_cache_load(ctx, c->module_key, m->uop, m->bind, &cached) == 1) {
			c->cached = &cached;
			if (m->opt.verbose)
				fprintf(stderr, "tinyc: module cache hit: parse and lookup %.3f ms, no passes "
					"(TINYC_MODULE_CACHE=0 turns it off)\n", tinyc_now_ms() - t_passes);
		} else if (prc == 0) {
			/* a miss: compile from scratch (the pipeline parses again) */
			tinyc_module_reset(m);
			c->store_module = bound;
			if (m->opt.verbose)
				fprintf(stderr, "tinyc: module cache miss: %.3f ms\n", tinyc_now_ms() - t_passes);
			prc = tinyc_module_run_until(m, last, 0, NULL);
		}
	} else {
		prc = tinyc_module_run_until(m, last, 0, NULL);
	}
	c->passes_ms = tinyc_now_ms() - t_passes;
	rc = prc < 0 ? EXIT_DIAG : cmd_run_body(ctx, c, m);
	c->cached = NULL;
	tinyc_gpu_cached_clear(&cached);
	if (held)
		tinyc_cuda_close(held);
	tinyc_ctx_free(quiet);
	return rc;
}

/* The rest of cmd_run, once the passes ran. */
static int cmd_run_body(tinyc_ctx *ctx, cli *c, tinyc_module *m)
{
	int rc = EXIT_DIAG;
	if (c->runtime_sizes && c->bind &&	/* now the values, checked as at compile time */
	    (tinyc_bindings_parse(ctx, m->uop, c->bind, m->bind) < 0 ||
	     tinyc_verify(ctx, m->uop, m->bind) < 0))
		return EXIT_DIAG;
	if (!strcmp(c->cmd, "bench"))
		for (int i = 0; i < m->uop->nsym; i++)
			if (m->bind->val[i] < 0) {
				tinyc_error(ctx, "UnboundSymbol", "tinyc bench needs every size bound: give --bind %s=...",
					    m->uop->syms[i]);
				return EXIT_DIAG;
			}
	tinyc_graph *g = m->uop;
	tinyc_io io = {0}, ref = {0};
	tinyc_tensor **owned = NULL;

	for (int i = 0; i < g->n; i++) {
		/* the verifier keeps slots in 0..TINYC_MAX_NODES-1; refuse anything else here too */
		if (g->nodes[i].op == TINYC_OP_BUFFER &&
		    (g->nodes[i].slot < 0 || g->nodes[i].slot >= TINYC_MAX_NODES)) {
			tinyc_error_at(ctx, g->src, g->nodes[i].loc, "SlotOutOfRange",
				       "slot=%lld is outside 0..%d", (long long)g->nodes[i].slot,
				       TINYC_MAX_NODES - 1);
			return EXIT_DIAG;
		}
		if (g->nodes[i].op == TINYC_OP_BUFFER && g->nodes[i].slot + 1 > io.nin)
			io.nin = (int)g->nodes[i].slot + 1;
		if (g->nodes[i].op == TINYC_OP_OUTPUT)
			io.nout++;
	}
	io.in = calloc((size_t)io.nin + 1, sizeof(*io.in));
	owned = calloc((size_t)io.nin + 1, sizeof(*owned));
	if (!io.in || !owned) {
		tinyc_error(ctx, "OutOfMemory", "cannot allocate the inputs");
		goto done;
	}
	/* --in: match each name to a BUFFER */
	for (int k = 0; k < c->nin; k++) {
		int found = -1;
		for (int i = 0; i < g->n; i++)
			if (g->nodes[i].op == TINYC_OP_BUFFER && !strcmp(g->nodes[i].name, c->in[k].name))
				found = i;
		if (found < 0) {
			tinyc_error(ctx, "UnknownTensor", "--in %s: the graph has no BUFFER named '%s'",
				    c->in[k].name, c->in[k].name);
			goto done;
		}
		int slot = (int)g->nodes[found].slot;
		tinyc_tensor_free(owned[slot]);
		if (!(owned[slot] = tinyc_npy_read(ctx, c->in[k].path)))
			goto done;
		io.in[slot] = owned[slot];
	}
	for (int k = 0; k < c->nout; k++) {
		int found = 0;
		for (int i = 0; i < g->n; i++)
			found |= g->nodes[i].op == TINYC_OP_OUTPUT && !strcmp(g->nodes[i].name, c->out[k].name);
		if (!found) {
			tinyc_error(ctx, "UnknownTensor", "--out %s: the graph has no OUTPUT named '%s'",
				    c->out[k].name, c->out[k].name);
			goto done;
		}
	}
	if (tinyc_bind_from_inputs(ctx, g, m->bind, &io) < 0)
		goto done;
	/* the inputs and outputs must fit before anything is allocated for them (the devices
	 * and --check allocate at least as much again, so this is a lower bound) */
	int64_t need;
	if (tinyc_io_bytes(g, m->bind, &need) == 0) {
		char what[300];
		snprintf(what, sizeof(what), "running %s (inputs and outputs)", c->file);
		if ((!strcmp(c->device, "cuda") && tinyc_gpu_memory_check(ctx, what, need) < 0) ||
		    tinyc_memory_check(ctx, what, need, c->max_memory) < 0)
			goto done;
	}
	/* --random-inputs: generate every missing input (needs its symbols bound) */
	for (int i = 0; i < g->n; i++) {
		const tinyc_uop *u = &g->nodes[i];
		if (u->op != TINYC_OP_BUFFER || io.in[u->slot])
			continue;
		if (!c->have_seed) {
			tinyc_error_at(ctx, g->src, u->loc, "MissingInput",
				       "no input for BUFFER '%s' (give --in %s=FILE.npy or --random-inputs SEED)",
				       u->name, u->name);
			goto done;
		}
		int64_t shape[TINYC_MAX_RANK];
		if (buffer_shape(g, u, m->bind, shape) < 0) {
			tinyc_error_at(ctx, g->src, u->loc, "UnboundSymbol",
				       "cannot make a random '%s': bind its sizes with --bind", u->name);
			goto done;
		}
		if (u->strides) {	/* flat storage covering the strided view */
			int64_t span = 1;
			for (int d = 0; d < u->rank; d++) {
				int64_t s = tinyc_dim_value(&u->strides[d], m->bind);
				if (s < 0) {
					tinyc_error_at(ctx, g->src, u->loc, "UnboundSymbol",
						       "cannot make a random '%s': bind its strides", u->name);
					goto done;
				}
				span += (shape[d] - 1) * s;
			}
			owned[u->slot] = tinyc_tensor_alloc(ctx, u->dtype, 1, &span);
		} else {
			owned[u->slot] = tinyc_tensor_alloc(ctx, u->dtype, u->rank, shape);
		}
		if (!owned[u->slot])
			goto done;
		tinyc_tensor_fill_random(owned[u->slot], c->seed * 1000003u + (uint64_t)u->slot);
		io.in[u->slot] = owned[u->slot];
	}
	char where[256];
	if (device_run(ctx, c, m, &io, where, sizeof(where)) < 0)
		goto done;
	printf("tinyc: ran %s on %s\n", c->file, where);
	int failed = 0;
	if (c->check) {	/* the same inputs through the reference evaluator */
		ref.nin = io.nin;
		if (!(ref.in = calloc((size_t)io.nin + 1, sizeof(*ref.in)))) {
			tinyc_error(ctx, "OutOfMemory", "cannot allocate the inputs");
			goto done;
		}
		memcpy(ref.in, io.in, (size_t)io.nin * sizeof(*ref.in));
		if (tinyc_eval(ctx, g, m->bind, &ref) < 0)
			goto done;
		for (int k = 0; k < io.nout && k < ref.nout; k++) {
			double atol, rtol;
			tinyc_cmp res;
			const char *name = "?";
			for (int i = 0, oi = 0; i < g->n; i++)
				if (g->nodes[i].op == TINYC_OP_OUTPUT && oi++ == k)
					name = g->nodes[i].name;
			default_tol(ref.out[k]->dtype, &atol, &rtol);
			if (c->atol >= 0)
				atol = c->atol;
			if (c->rtol >= 0)
				rtol = c->rtol;
			if (tinyc_tensor_compare(ctx, io.out[k], ref.out[k], atol, rtol, &res) < 0)
				goto done;
			printf("  check %s: max_abs=%.3g max_rel=%.3g (atol=%g rtol=%g) %s", name,
			       res.max_abs, res.max_rel, atol, rtol, res.mismatched ? "FAILED" : "ok");
			if (res.mismatched)
				printf(": %lld elements beyond tolerance, worst at flat index %lld",
				       (long long)res.mismatched, (long long)res.worst);
			printf("\n");
			failed |= res.mismatched > 0;
		}
		if (failed)
			tinyc_error(ctx, "CheckFailed", "%s differs from the reference evaluator "
				    "beyond the tolerance", c->file);
	}
	int oi = 0;
	for (int i = 0; i < g->n; i++) {
		const tinyc_uop *u = &g->nodes[i];
		if (u->op != TINYC_OP_OUTPUT)
			continue;
		const tinyc_tensor *t = io.out[oi++];
		print_summary(u->name, t);
		for (int k = 0; k < c->nout; k++)
			if (!strcmp(c->out[k].name, u->name) && tinyc_npy_write(ctx, c->out[k].path, t) < 0)
				goto done;
	}
	rc = failed ? EXIT_DIAG : EXIT_OK;
done:
	tinyc_cli_io_free(&io, &ref, owned);
	return rc;
}

/* The graph from standard input ("-"), named "<stdin>" in diagnostics. */
static tinyc_source *read_stdin(tinyc_ctx *ctx)
{
	tinyc_buf b = {0};
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
		for (size_t i = 0; i < n; i++)
			tinyc_buf_putc(&b, chunk[i]);
	tinyc_source *src = NULL;
	if (ferror(stdin))
		tinyc_error(ctx, "IOError", "cannot read standard input: %s", strerror(errno));
	else if (b.oom || !(src = tinyc_source_from_string("<stdin>", b.data ? b.data : "", b.len)))
		tinyc_error(ctx, "OutOfMemory", "standard input");
	tinyc_buf_free(&b);
	return src;
}

/* tinyc htree (tools/tinyc_htree.c): argv[0] is "htree". */
int tinyc_cmd_htree(int argc, char **argv);
/* tinyc tune (tools/tinyc_tune.c): argv[0] is "tune". */
int tinyc_cmd_tune(int argc, char **argv);

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "htree"))
		return tinyc_cmd_htree(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "tune"))
		return tinyc_cmd_tune(argc - 1, argv + 1);
	cli c = {0};
	int rc = parse_args(argc, argv, &c);
	if (rc >= 0) {
		cli_free(&c);
		return rc;
	}
	tinyc_ctx *ctx = tinyc_cli_ctx_alloc();
	if (!ctx) {
		fprintf(stderr, "tinyc: error: OutOfMemory\n");
		cli_free(&c);
		return EXIT_DIAG;
	}
	c.opt.bind = c.bind;
	if (c.output && !freopen(c.output, "w", stdout)) {
		tinyc_error(ctx, "IOError", "cannot write '%s': %s", c.output, strerror(errno));
		tinyc_ctx_print_diags(ctx, stderr);
		tinyc_ctx_free(ctx);
		cli_free(&c);
		return EXIT_DIAG;
	}
	tinyc_source *src = !strcmp(c.file, "-") ? read_stdin(ctx) : tinyc_source_read(ctx, c.file);
	tinyc_module *m = src ? tinyc_module_alloc(ctx, src, &c.opt) : NULL;
	if (!m) {
		rc = EXIT_DIAG;
	} else if (!strcmp(c.cmd, "run") || !strcmp(c.cmd, "bench")) {
		rc = cmd_run(ctx, &c, m);
	} else {
		rc = cmd_compile(ctx, &c, m);
	}
	fflush(stdout);
	tinyc_ctx_print_diags(ctx, stderr);
	if (rc == EXIT_OK && tinyc_ctx_error_count(ctx))
		rc = EXIT_DIAG;
	tinyc_module_free(m);
	tinyc_source_free(src);
	tinyc_ctx_free(ctx);
	cli_free(&c);
	return rc;
}
