/* bench_rearrange: GPU bandwidth of the rearrange kernels (seed 003) on the large
 * cases, against a device-to-device copy of the same bytes measured in the same run.
 *
 *   bench_rearrange [--iters N] [--warmup N] [--torch FILE.csv] [--quick] [--no-graph]
 *   bench_rearrange --self-test       the harness on small cases, on the CPU
 *
 * Cases (fp32 and fp16): NCHW -> NHWC (32,64,224,224), NHWC -> NCHW, a 2-D 8192^2
 * transpose, BSHD -> BHSD (8,2048,32,128).  For each:
 *   - copy: cuMemcpyDtoD of the tensor's bytes;
 *   - tinyc: tinyc_rearrange_calculate (the descriptor API, the cost model's plan);
 *   - every plan forced (elementwise, tiled, tiled x2) emitted and launched directly;
 *   - the graph path: a BUFFER -> PERMUTE -> OUTPUT graph through the pipeline (GPU IR ->
 *     CUDA), timed by tinyc_gpu_run_cuda;
 *   - a check of 2^20 sampled elements of tinyc's output (and the graph path's) against the
 *     input, on the host.
 * Times are the median of --iters (default 30) event-timed launches after --warmup
 * (default 5); GB/s counts bytes read plus bytes written.  --torch FILE merges the CSV of
 * tools/bench_torch_permute.py (case,dtype,torch_ms,torch_gbs,torch_copy_gbs).
 * Output: two markdown tables on stdout (progress on stderr).  Exit 77 without a GPU, 1 if
 * a check failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/gpu.h"
#include "driver/module.h"
#include "ir/tensor.h"
#include "runtime/runtime.h"
#include "sched/rearrange.h"
#include "driver/run.h"
#include "driver/rearrange_desc.h"

/* A case: y = x.permute(perm), both contiguous. */
typedef struct bcase {
	const char *name;	/* case name (also the torch script's) */
	int n;			/* rank */
	int64_t xshape[4];	/* x's shape */
	int perm[4];		/* y = x.permute(perm) */
} bcase;

static const bcase cases[] = {
	{"nchw_to_nhwc", 4, {32, 64, 224, 224}, {0, 2, 3, 1}},
	{"nhwc_to_nchw", 4, {32, 224, 224, 64}, {0, 3, 1, 2}},
	{"transpose_8192", 2, {8192, 8192}, {1, 0}},
	{"bshd_to_bhsd", 4, {8, 2048, 32, 128}, {0, 2, 1, 3}},
};

/* One measured row. */
typedef struct row {
	const char *name;	/* case */
	const char *dtype;	/* "fp32" / "fp16" */
	double mb;		/* tensor size, MB */
	double copy_ms;		/* cuMemcpyDtoD */
	double tinyc_ms;	/* calculate(), the chosen plan */
	char plan[96];		/* the chosen plan */
	double forced_ms[3];	/* elementwise, tiled, tiled x2 (-1: not applicable) */
	double graph_ms;	/* the graph path's kernel (-1: not run) */
	int check;		/* 1 ok, 0 failed, -1 not checked */
	double torch_ms, torch_gbs, torch_copy_gbs;	/* from --torch (-1: none) */
} row;

static tinyc_ctx *ctx;
static tinyc_cuda *cu;
static int warmup = 5, iters = 30;

/* Print and forget the diagnostics (to stderr). */
static void diags(void)
{
	for (int i = 0; i < tinyc_ctx_diag_count(ctx); i++)
		fprintf(stderr, "  %s: %s\n", tinyc_ctx_diag(ctx, i)->kind,
			tinyc_ctx_diag(ctx, i)->msg);
	tinyc_ctx_clear_diags(ctx);
}

/* The y-index-space layouts of a case: shape, y strides (row-major), x strides. */
static void layouts(const bcase *c, int64_t *shape, int64_t *ys, int64_t *xs, int64_t *numel)
{
	int64_t xst[4], s = 1;
	for (int i = c->n - 1; i >= 0; i--) {
		xst[i] = s;
		s *= c->xshape[i];
	}
	*numel = s;
	for (int i = 0; i < c->n; i++) {
		shape[i] = c->xshape[c->perm[i]];
		xs[i] = xst[c->perm[i]];
	}
	s = 1;
	for (int i = c->n - 1; i >= 0; i--) {
		ys[i] = s;
		s *= shape[i];
	}
}

/* Sampled check: 2^20 pseudo-random elements of y (host copy) against x. */
static int check_sampled(int n, const int64_t *shape, const int64_t *ys, const int64_t *xs,
			 int e, const unsigned char *y, const unsigned char *x, int64_t numel)
{
	uint64_t st = 0x243F6A8885A308D3ull;
	for (int t = 0; t < (1 << 20); t++) {
		st ^= st >> 12, st ^= st << 25, st ^= st >> 27;
		int64_t lin = (int64_t)((st * 0x2545F4914F6CDD1Dull) % (uint64_t)numel), rem = lin;
		int64_t yo = 0, xo = 0;
		for (int i = n - 1; i >= 0; i--) {
			int64_t idx = rem % shape[i];
			rem /= shape[i];
			yo += idx * ys[i];
			xo += idx * xs[i];
		}
		if (memcmp(y + yo * e, x + xo * e, (size_t)e))
			return 0;
	}
	return 1;
}

/* What tinyc_cuda_time launches. */
typedef struct job {
	int what;			/* 0 copy, 1 calculate, 2 kernel */
	tinyc_devptr y, x;		/* buffers */
	size_t bytes;			/* copy size */
	tinyc_rearrange_desc *d;	/* calculate */
	tinyc_kernel *k;		/* kernel */
	unsigned grid[3], block[3];	/* its launch */
} job;

/* Enqueue one job. */
static int run_job(tinyc_cuda *c, void *arg)
{
	job *j = arg;
	if (j->what == 0)
		return tinyc_cuda_copy(c, j->y, j->x, j->bytes);
	if (j->what == 1)
		return tinyc_rearrange_calculate(j->d, j->y, j->x, c) ? -1 : 0;
	void *args[] = {&j->y, &j->x};
	return tinyc_cuda_launch(c, j->k, (tinyc_dim3){j->grid[0], j->grid[1], j->grid[2]},
				 (tinyc_dim3){j->block[0], j->block[1], j->block[2]}, 0, args);
}

/* Median time of a job, or -1. */
static double time_job(job *j)
{
	double ms = -1;
	if (tinyc_cuda_time(cu, run_job, j, warmup, iters, &ms, NULL) < 0) {
		diags();
		return -1;
	}
	return ms;
}

/* Time the forced plan (0 elementwise, 1 tiled, 2 tiled x2); -1 when it does not apply. */
static double time_forced(const tinyc_tensor_desc *y, const tinyc_tensor_desc *x, int which,
			  tinyc_devptr dy, tinyc_devptr dx)
{
	tinyc_rearrange_opts o;
	tinyc_rearrange_opts_default(&o);
	o.force = which ? TINYC_REARRANGE_FORCE_TILED : TINYC_REARRANGE_FORCE_ELEMENTWISE;
	o.tile_repeat = which;
	tinyc_rearrange_plan p;
	if (tinyc_rearrange_plan_build(NULL, y, x, &o, &p) ||
	    (p.kind != TINYC_REARRANGE_ELEMENTWISE && p.kind != TINYC_REARRANGE_TILED))
		return -1;
	tinyc_buf src = {0};
	if (tinyc_rearrange_emit_cuda(ctx, &p, "bench_forced", &src)) {
		tinyc_buf_free(&src);
		diags();
		return -1;
	}
	tinyc_compile_opts co = {0};
	co.driver_version = tinyc_cuda_device_info(cu)->driver_version;
	tinyc_compile_result cr = {0};
	int rc = tinyc_kernel_compile_cached(ctx, src.data, "bench_forced.cu",
					     tinyc_cuda_device_info(cu)->target, &co, &cr);
	tinyc_buf_free(&src);
	job j = {2, dy, dx, 0, NULL, rc ? NULL : tinyc_cuda_kernel_load(cu, &cr.blob, "bench_forced"),
		 {0}, {0}};
	tinyc_compile_result_clear(&cr);
	if (!j.k) {
		diags();
		return -1;
	}
	tinyc_rearrange_launch_dims(&p, j.grid, j.block);
	double ms = time_job(&j);
	tinyc_kernel_free(j.k);
	return ms;
}

/* The .uop text of a case: BUFFER X -> PERMUTE -> OUTPUT Y, in dtype dt. */
static void graph_text(const bcase *c, const char *dt, char *text, size_t size)
{
	char xs_[128] = "", ys_[128] = "", perm[64] = "";
	for (int i = 0; i < c->n; i++) {
		char t[32];
		snprintf(t, sizeof(t), "%s%lld", i ? "," : "", (long long)c->xshape[i]);
		strcat(xs_, t);
		snprintf(t, sizeof(t), "%s%lld", i ? "," : "", (long long)c->xshape[c->perm[i]]);
		strcat(ys_, t);
		snprintf(t, sizeof(t), "%s%d", i ? "," : "", c->perm[i]);
		strcat(perm, t);
	}
	snprintf(text, size,
		 "%%x = BUFFER(slot=0, name=\"X\") : %s[%s]\n"
		 "%%p = PERMUTE(%%x, perm=[%s]) : %s[%s]\n"
		 "%%y = OUTPUT(%%p, name=\"Y\") : %s[%s]\n", dt, xs_, perm, dt, ys_, dt, ys_);
}

/* The graph path: BUFFER -> PERMUTE -> OUTPUT through the pipeline and tinyc_gpu_run_cuda
 * (the GPU IR interpreter when cu is NULL: --self-test); returns the kernel's median time
 * (or -1, 0 interpreted) and checks the output into *check. */
static double time_graph(const bcase *c, const char *dt, int e, const unsigned char *xh,
			 int64_t numel, int *check)
{
	char text[1024];
	graph_text(c, dt, text, sizeof(text));
	tinyc_source *src = tinyc_source_from_string("bench.uop", text, strlen(text));
	tinyc_options o = {0};
	o.target = cu ? tinyc_cuda_device_info(cu)->target : "sm_90";
	tinyc_module *m = tinyc_module_alloc(ctx, src, &o);
	tinyc_io io = {0};
	tinyc_tensor *xt = NULL;
	double ms = -1;
	if (!m || tinyc_module_run_until(m, tinyc_pass_find("gpuir"), 0, NULL)) {
		fprintf(stderr, "  graph path: does not compile\n");
		goto out;
	}
	const tinyc_schedule *s = tinyc_module_schedule(m);
	if (s->nkern != 1 || tinyc_skernel_plan(&s->kerns[0])->kind != TINYC_PLAN_REARRANGE) {
		fprintf(stderr, "  graph path: not one rearrange kernel\n");
		goto out;
	}
	xt = tinyc_tensor_alloc(ctx, m->uop->nodes[0].dtype, c->n, c->xshape);
	if (!xt)
		goto out;
	memcpy(xt->data, xh, (size_t)(numel * e));
	io.nin = 1;
	io.in = &xt;
	tinyc_gpu_run_opts ro = {warmup, iters, 0};
	int64_t nosym[1] = {0};	/* the graph has no size symbols */
	tinyc_gpu_run_stats st = {0};
	if (!cu) {
		if (tinyc_gpu_run_interp(ctx, tinyc_module_gpuir(m), nosym, &io) < 0) {
			fprintf(stderr, "  graph path: the interpreter failed\n");
			goto out;
		}
		st.nkernel = 1;
		st.k = calloc(1, sizeof(*st.k));
	} else if (tinyc_gpu_run_cuda(ctx, cu, tinyc_module_gpuir(m), nosym, &io, &ro, &st) < 0 ||
		   st.nkernel != 1) {
		fprintf(stderr, "  graph path: the run failed\n");
		tinyc_gpu_run_stats_clear(&st);
		goto out;
	}
	ms = st.k[0].median_ms;
	tinyc_gpu_run_stats_clear(&st);
	int64_t shape[4], ys[4], xs[4], nn;
	layouts(c, shape, ys, xs, &nn);
	*check = check_sampled(c->n, shape, ys, xs, e, io.out[0]->data, xh, numel);
out:
	diags();
	tinyc_io_clear_outputs(&io);
	tinyc_tensor_free(xt);
	tinyc_module_free(m);
	tinyc_source_free(src);
	return ms;
}

/* Measure one case in one dtype. */
static void measure(const bcase *c, int e, int graph, row *r)
{
	int64_t shape[4], ys[4], xs[4], numel;
	layouts(c, shape, ys, xs, &numel);
	tinyc_dtype dt = e == 2 ? TINYC_HALF : TINYC_FLOAT;
	size_t bytes = (size_t)numel * (size_t)e;
	memset(r, 0, sizeof(*r));
	r->name = c->name;
	r->dtype = e == 2 ? "fp16" : "fp32";
	r->mb = (double)bytes / 1e6;
	r->copy_ms = r->tinyc_ms = r->graph_ms = -1;
	r->forced_ms[0] = r->forced_ms[1] = r->forced_ms[2] = -1;
	r->check = -1;
	r->torch_ms = r->torch_gbs = r->torch_copy_gbs = -1;
	snprintf(r->plan, sizeof(r->plan), "-");
	fprintf(stderr, "bench %s %s (%.0f MB)\n", c->name, r->dtype, r->mb);
	unsigned char *xh = malloc(bytes), *yh = malloc(bytes);
	tinyc_devptr dx = 0, dy = 0;
	tinyc_rearrange_desc *d = NULL;
	if (!xh || !yh) {
		fprintf(stderr, "  out of host memory\n");
		goto out;
	}
	uint64_t st = 0x9E3779B97F4A7C15ull ^ (uint64_t)bytes;
	for (size_t i = 0; i + 8 <= bytes; i += 8) {
		st ^= st >> 12, st ^= st << 25, st ^= st >> 27;
		uint64_t v = st * 0x2545F4914F6CDD1Dull;
		memcpy(xh + i, &v, 8);
	}
	if (tinyc_cuda_alloc(cu, bytes, &dx) || tinyc_cuda_alloc(cu, bytes, &dy) ||
	    tinyc_cuda_upload(cu, dx, xh, bytes)) {
		diags();
		goto out;
	}
	job cj = {0, dy, dx, bytes, NULL, NULL, {0}, {0}};
	r->copy_ms = time_job(&cj);
	tinyc_tensor_desc y = {dt, c->n, shape, ys}, x = {dt, c->n, shape, xs};
	if (tinyc_rearrange_create(ctx, &d, &y, &x)) {
		diags();
		goto out;
	}
	const tinyc_rearrange_plan *p = tinyc_rearrange_desc_plan(d);
	if (p->kind == TINYC_REARRANGE_TILED)
		snprintf(r->plan, sizeof(r->plan), "tiled%s (tile %d, pack %d)",
			 p->repeat > 1 ? " x2" : "", p->tile, p->pack);
	else
		snprintf(r->plan, sizeof(r->plan), "%s (unit %d B)", tinyc_rearrange_kind_name(p->kind),
			 p->unit);
	job tj = {1, dy, dx, 0, d, NULL, {0}, {0}};
	if (tinyc_cuda_memset8(cu, dy, 0, bytes) || run_job(cu, &tj) || tinyc_cuda_sync(cu)) {
		diags();
		goto out;
	}
	if (tinyc_cuda_download(cu, yh, dy, bytes)) {
		diags();
		goto out;
	}
	r->check = check_sampled(c->n, shape, ys, xs, e, yh, xh, numel);
	r->tinyc_ms = time_job(&tj);
	for (int f = 0; f < 3; f++)
		r->forced_ms[f] = time_forced(&y, &x, f, dy, dx);
	tinyc_cuda_free(cu, dx);
	tinyc_cuda_free(cu, dy);
	dx = dy = 0;
	if (graph) {
		int gcheck = -1;
		r->graph_ms = time_graph(c, e == 2 ? "half" : "float", e, xh, numel, &gcheck);
		if (gcheck == 0)
			r->check = 0;
	}
out:
	if (dx)
		tinyc_cuda_free(cu, dx);
	if (dy)
		tinyc_cuda_free(cu, dy);
	tinyc_rearrange_destroy(d);
	free(xh);
	free(yh);
}

/* Read the torch CSV (case,dtype,torch_ms,torch_gbs,torch_copy_gbs) into the rows. */
static void merge_torch(const char *path, row *rows, int nrows)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "bench_rearrange: cannot read %s: no torch columns\n", path);
		return;
	}
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		char name[64], dt[16];
		double ms, gbs, cgbs;
		if (sscanf(line, "%63[^,],%15[^,],%lf,%lf,%lf", name, dt, &ms, &gbs, &cgbs) != 5)
			continue;
		for (int i = 0; i < nrows; i++)
			if (!strcmp(rows[i].name, name) && !strcmp(rows[i].dtype, dt)) {
				rows[i].torch_ms = ms;
				rows[i].torch_gbs = gbs;
				rows[i].torch_copy_gbs = cgbs;
			}
	}
	fclose(f);
}

/* GB/s of a row's bytes (read + written) in ms, or -1. */
static double gbs(const row *r, double ms)
{
	return ms > 0 ? 2.0 * r->mb / 1e3 / (ms / 1e3) : -1;
}

/* A number, or n/a. */
static void num(double v, const char *fmt)
{
	if (v < 0)
		printf(" n/a |");
	else {
		putchar(' ');
		printf(fmt, v);
		printf(" |");
	}
}

/* --self-test (no GPU): the harness on small versions of the cases: the layouts and the
 * sampled check against the planner's host simulation, a corrupted output caught, and the
 * graph path through the GPU IR interpreter.  0 when all is well. */
static int self_test(void)
{
	static const bcase small[] = {
		{"nchw_to_nhwc", 4, {3, 64, 10, 14}, {0, 2, 3, 1}},
		{"nhwc_to_nchw", 4, {3, 10, 14, 64}, {0, 3, 1, 2}},
		{"transpose_8192", 2, {96, 160}, {1, 0}},
		{"bshd_to_bhsd", 4, {2, 40, 6, 128}, {0, 2, 1, 3}},
	};
	int bad = 0;
	for (int c = 0; c < 4; c++)
		for (int e = 4; e >= 2; e -= 2) {
			int64_t shape[4], ys[4], xs[4], numel;
			layouts(&small[c], shape, ys, xs, &numel);
			size_t bytes = (size_t)numel * (size_t)e;
			unsigned char *xh = aligned_alloc(256, (bytes + 255) / 256 * 256);
			unsigned char *yh = aligned_alloc(256, (bytes + 255) / 256 * 256);
			for (size_t i = 0; i < bytes; i++)
				xh[i] = (unsigned char)(i * 131 + i / 7);
			tinyc_dtype dt = e == 2 ? TINYC_HALF : TINYC_FLOAT;
			tinyc_tensor_desc y = {dt, small[c].n, shape, ys}, x = {dt, small[c].n, shape, xs};
			tinyc_rearrange_plan p;
			tinyc_rearrange_buffer yb = {yh, 0, (int64_t)bytes}, xb = {xh, 0, (int64_t)bytes};
			int ok = !tinyc_rearrange_plan_build(ctx, &y, &x, NULL, &p) &&
				 !tinyc_rearrange_simulate(ctx, &p, yb, xb, NULL) &&
				 check_sampled(small[c].n, shape, ys, xs, e, yh, xh, numel);
			yh[bytes / 3] ^= 1;	/* one wrong byte must be seen */
			int caught = !check_sampled(small[c].n, shape, ys, xs, e, yh, xh, numel);
			int gcheck = -1;
			double gms = time_graph(&small[c], e == 2 ? "half" : "float", e, xh, numel,
						&gcheck);
			fprintf(stderr, "self-test %s e%d: plan %s, simulated %s, corruption %s, graph "
				"path %s\n", small[c].name, e, tinyc_rearrange_kind_name(p.kind),
				ok ? "ok" : "FAILED", caught ? "caught" : "MISSED",
				gms < 0 || gcheck != 1 ? "FAILED" : "ok");
			diags();
			bad |= !ok || !caught || gms < 0 || gcheck != 1;
			free(xh);
			free(yh);
		}
	return bad;
}

/* Parse options, open the device, measure, print the tables. */
int main(int argc, char **argv)
{
	const char *torch = NULL;
	int quick = 0, graph = 1, selftest = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
			warmup = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--torch") && i + 1 < argc)
			torch = argv[++i];
		else if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--no-graph"))
			graph = 0;
		else if (!strcmp(argv[i], "--self-test"))
			selftest = 1;
		else {
			fprintf(stderr, "usage: bench_rearrange [--iters N] [--warmup N] "
				"[--torch FILE.csv] [--quick] [--no-graph] [--self-test]\n");
			return 2;
		}
	}
	if (iters < 1 || warmup < 0) {
		fprintf(stderr, "bench_rearrange: --iters must be >= 1\n");
		return 2;
	}
	ctx = tinyc_ctx_alloc();
	if (selftest) {
		int bad = self_test();
		tinyc_ctx_free(ctx);
		fprintf(stderr, "self-test: %s\n", bad ? "FAILED" : "ok");
		return bad;
	}
	if (!tinyc_cuda_available() || !(cu = tinyc_cuda_open(ctx, 0))) {
		printf("SKIP: no CUDA GPU here: nothing to benchmark\n");
		tinyc_ctx_free(ctx);
		return 77;
	}
	const tinyc_device_info *info = tinyc_cuda_device_info(cu);
	int ncase = quick ? 1 : (int)(sizeof(cases) / sizeof(*cases));
	row rows[16];
	int nrows = 0;
	for (int c = 0; c < ncase; c++)
		for (int e = 4; e >= 2; e -= 2)
			measure(&cases[c], e, graph, &rows[nrows++]);
	if (torch)
		merge_torch(torch, rows, nrows);
	printf("Rearrange bandwidth on %s (%s, driver %d), median of %d after %d warm-up; "
	       "GB/s = (bytes read + bytes written) / time; copy = cuMemcpyDtoD of the same "
	       "bytes in the same run\n\n", info->name, info->target, info->driver_version, iters,
	       warmup);
	printf("| case | dtype | MB | tinyc ms | tinyc GB/s | copy GB/s | tinyc/copy | torch GB/s "
	       "| torch/copy | plan kind |\n");
	printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
	int failed = 0;
	for (int i = 0; i < nrows; i++) {
		const row *r = &rows[i];
		double tg = gbs(r, r->tinyc_ms), cg = gbs(r, r->copy_ms);
		printf("| %s | %s |", r->name, r->dtype);
		num(r->mb, "%.0f");
		num(r->tinyc_ms, "%.3f");
		num(tg, "%.0f");
		num(cg, "%.0f");
		num(tg > 0 && cg > 0 ? tg / cg : -1, "%.2f");
		num(r->torch_gbs, "%.0f");
		num(r->torch_gbs > 0 && cg > 0 ? r->torch_gbs / cg : -1, "%.2f");
		printf(" %s%s |\n", r->plan, r->check == 0 ? " **CHECK FAILED**" : "");
		failed |= r->check == 0;
	}
	printf("\nEvery plan forced (GB/s, fraction of copy), the graph path's kernel (BUFFER -> "
	       "PERMUTE -> OUTPUT through GPU IR), and torch's own copy:\n\n");
	printf("| case | dtype | elementwise | tiled | tiled x2 | graph path | torch copy GB/s | "
	       "check |\n");
	printf("|---|---|---:|---:|---:|---:|---:|---|\n");
	for (int i = 0; i < nrows; i++) {
		const row *r = &rows[i];
		double cg = gbs(r, r->copy_ms);
		printf("| %s | %s |", r->name, r->dtype);
		double v[4] = {r->forced_ms[0], r->forced_ms[1], r->forced_ms[2], r->graph_ms};
		for (int k = 0; k < 4; k++) {
			double g = gbs(r, v[k]);
			if (g < 0)
				printf(" n/a |");
			else
				printf(" %.0f (%.2f) |", g, cg > 0 ? g / cg : 0);
		}
		num(r->torch_copy_gbs, "%.0f");
		printf(" %s |\n", r->check < 0 ? "not run" : r->check ? "ok" : "FAILED");
	}
	tinyc_cuda_close(cu);
	tinyc_ctx_free(ctx);
	return failed ? 1 : 0;
}
