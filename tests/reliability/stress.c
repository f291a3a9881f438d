/* Reliability stress tests (issue 18, docs/reliability.md), one program with three modes:
 *
 *   stress threads N DEVICES ROUNDS   N threads at once, each with its own context, compile
 *                                     and run a graph ROUNDS times through the C API on the
 *                                     devices in DEVICES ("cpu,gpuir" or "cuda"), each thread
 *                                     with its own sizes; every output is compared with
 *                                     values computed here by hand
 *   stress cache DIR FIRST COUNT      compile COUNT distinct CUDA sources (FIRST..) through
 *                                     the kernel cache in DIR (several processes share it;
 *                                     tests/reliability/cache_kill.sh kills one mid-run)
 *   stress cache-verify DIR COUNT     every source again: an entry must be a valid hit or,
 *                                     when corrupt, rejected and rebuilt; each image must be
 *                                     nvrtc's own bytes; then a second pass must be all hits
 *   stress worker                     the GPU worker's protocol on the fake device (no GPU):
 *                                     shared-memory transfers checked by hand, a fault, a
 *                                     worker that dies, a timeout; the next run works each time
 *   stress fault                      (GPU) a kernel that stores through a bad pointer, in the
 *                                     GPU worker: reported with its name, the worker restarted;
 *                                     the next compile and run in the process works
 *   stress fault-in-process           (GPU) the same fault in this process (what device-pointer
 *                                     launches meet): reported with its name, no crash; a run
 *                                     in this process then works or fails cleanly (the driver
 *                                     keeps the fault); an isolated run works
 *   stress hang                       (GPU) a kernel that never ends, with a 2 s limit:
 *                                     GpuTimeout with its name; the next compile and run works
 *   stress overhead N RUNS            (GPU; a measurement) tinyc_program_run's time per call
 *                                     in the GPU worker and in this process
 *   stress alloc                      (GPU) a device allocation that cannot succeed is a
 *                                     diagnostic; the next compile and run works
 *
 * Exit 0 on success, 1 on a failure (printed), 77 when a GPU mode finds no GPU. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "include/tinyc.h"
#include "ir/ctx.h"
#include "driver/run.h"
#include "runtime/runtime.h"
#include "runtime/worker.h"

#define SKIP 77

/* The graph every thread runs: Y = X * W + X and S = sum(Y). */
static const char graph[] =
	"%0 = BUFFER(slot=0, name=\"X\") : float[N]\n"
	"%1 = BUFFER(slot=1, name=\"W\") : float[N]\n"
	"%2 = MUL(%0, %1) : float[N]\n"
	"%3 = ADD(%2, %0) : float[N]\n"
	"%4 = OUTPUT(%3, name=\"Y\") : float[N]\n"
	"%5 = REDUCE(%3, op=ADD, axes=[0]) : float[1]\n"
	"%6 = OUTPUT(%5, name=\"S\") : float[1]\n";

/* What one thread does and what went wrong. */
typedef struct job {
	int id;			/* thread number */
	int rounds;		/* compile + run this many times */
	const char *device;	/* "cpu", "gpuir" or "cuda" */
	int failures;		/* results that were wrong, or calls that failed */
	char why[512];		/* the first failure */
} job;

/* Record a failure of job j (the first one's text is kept). */
static void fail(job *j, const char *what, const char *detail)
{
	if (!j->failures++)
		snprintf(j->why, sizeof(j->why), "thread %d (%s): %s%s%s", j->id, j->device, what,
			 detail ? ": " : "", detail ? detail : "");
}

/* Compile and run the graph once with n elements; check Y and S by hand. */
static void one_round(job *j, tinyc_context *c, int n)
{
	char bind[32];
	snprintf(bind, sizeof(bind), "N=%d", n);
	tinyc_compile_options opt = {0};
	opt.bind = bind;
	opt.device = j->device;
	opt.target = "sm_80";
	tinyc_program *p = NULL;
	if (tinyc_program_compile(c, graph, "stress.uop", &opt, &p) != TINYC_OK) {
		fail(j, "compile", tinyc_context_diagnostics(c));
		return;
	}
	float *x = malloc(sizeof(float) * (size_t)n), *w = malloc(sizeof(float) * (size_t)n);
	float *y = malloc(sizeof(float) * (size_t)n), s = 0;
	if (!x || !w || !y) {
		fail(j, "out of memory", NULL);
	} else {
		for (int i = 0; i < n; i++)
			x[i] = (float)(i % 7 + j->id), w[i] = (float)(i % 3);
		const void *in[] = {x, w};
		void *out[] = {y, &s};
		if (tinyc_program_run(p, in, out) != TINYC_OK) {
			fail(j, "run", tinyc_context_diagnostics(c));
		} else {
			double sum = 0;	/* small integers: exact in float in any order */
			for (int i = 0; i < n; i++) {
				float want = x[i] * w[i] + x[i];
				sum += want;
				if (y[i] != want) {
					fail(j, "wrong Y", NULL);
					break;
				}
			}
			if (s != (float)sum)
				fail(j, "wrong S", NULL);
		}
	}
	free(x);
	free(w);
	free(y);
	tinyc_program_free(p);
}

/* A thread: its own context, `rounds` compiles and runs with sizes of its own. */
static void *thread_main(void *arg)
{
	job *j = arg;
	tinyc_context *c = tinyc_context_new();
	if (!c) {
		fail(j, "no context", NULL);
		return NULL;
	}
	for (int r = 0; r < j->rounds; r++)
		one_round(j, c, 61 + 17 * j->id + r);
	tinyc_context_free(c);
	return NULL;
}

/* N threads at once over the devices listed in `devices` (comma-separated, round robin). */
static int run_threads(int n, const char *devices, int rounds)
{
	if (strstr(devices, "cuda") && !tinyc_cuda_available()) {
		printf("SKIP: no CUDA device\n");
		return SKIP;
	}
	char list[64];
	snprintf(list, sizeof(list), "%s", devices);
	const char *dev[8];
	int ndev = 0;
	for (char *save = NULL, *t = strtok_r(list, ",", &save); t && ndev < 8;
	     t = strtok_r(NULL, ",", &save))
		dev[ndev++] = t;
	if (n < 1 || n > 64 || !ndev)
		return 1;
	job jobs[64];
	pthread_t th[64];
	for (int i = 0; i < n; i++) {
		jobs[i] = (job){.id = i, .rounds = rounds, .device = dev[i % ndev]};
		if (pthread_create(&th[i], NULL, thread_main, &jobs[i]) != 0) {
			printf("FAIL: pthread_create\n");
			return 1;
		}
	}
	int bad = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		if (jobs[i].failures) {
			printf("FAIL: %s\n", jobs[i].why);
			bad = 1;
		}
	}
	if (!bad)
		printf("ok: %d threads x %d rounds on %s, every result as computed by hand\n", n,
		       rounds, devices);
	return bad;
}

/* The CUDA source number i (distinct text, so a distinct cache entry). */
static void cache_source(int i, char *buf, size_t size)
{
	snprintf(buf, size,
		 "extern \"C\" __global__ void k%d(float *p) { p[threadIdx.x] = p[threadIdx.x] * %d.0f + %d.0f; }\n",
		 i, i + 2, i);
}

/* Compile sources first..first+count-1 through the cache in dir. */
static int run_cache(const char *dir, int first, int count)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	if (!ctx)
		return 1;
	tinyc_compile_opts co = {0};
	co.cache_dir = dir;
	int bad = 0;
	for (int i = first; i < first + count && !bad; i++) {
		char src[256], name[32];
		cache_source(i, src, sizeof(src));
		snprintf(name, sizeof(name), "k%d.cu", i);
		tinyc_compile_result r = {0};
		if (tinyc_kernel_compile_cached(ctx, src, name, "sm_80", &co, &r) < 0 || !r.blob.size) {
			tinyc_ctx_print_diags(ctx, stdout);
			bad = 1;
		}
		tinyc_compile_result_clear(&r);
	}
	tinyc_ctx_free(ctx);
	return bad;
}

/* Check every entry of sources 0..count-1 in dir: a hit must hold nvrtc's own bytes, a
 * corrupt entry must be rejected and rebuilt; a second pass must then be all valid hits. */
static int run_cache_verify(const char *dir, int count)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	if (!ctx)
		return 1;
	tinyc_compile_opts co = {0}, none = {0};
	co.cache_dir = dir;
	none.no_cache = 1;
	int bad = 0, hits = 0, rebuilt = 0;
	for (int pass = 0; pass < 2 && !bad; pass++)
		for (int i = 0; i < count && !bad; i++) {
			char src[256], name[32];
			cache_source(i, src, sizeof(src));
			snprintf(name, sizeof(name), "k%d.cu", i);
			tinyc_compile_result r = {0}, fresh = {0};
			if (tinyc_kernel_compile_cached(ctx, src, name, "sm_80", &co, &r) < 0 ||
			    tinyc_kernel_compile_cached(ctx, src, name, "sm_80", &none, &fresh) < 0) {
				tinyc_ctx_print_diags(ctx, stdout);
				bad = 1;
			} else if (r.blob.size != fresh.blob.size ||
				   memcmp(r.blob.data, fresh.blob.data, r.blob.size)) {
				printf("FAIL: k%d: the cache gave other bytes than nvrtc (%s)\n", i,
				       r.cache_hit ? "a hit" : "a rebuild");
				bad = 1;
			} else if (pass == 1 && (!r.cache_hit || r.cache_rejected)) {
				printf("FAIL: k%d: second pass was not a valid hit\n", i);
				bad = 1;
			}
			if (pass == 0) {
				hits += r.cache_hit;
				rebuilt += r.cache_rejected;
			}
			tinyc_compile_result_clear(&r);
			tinyc_compile_result_clear(&fresh);
		}
	tinyc_ctx_free(ctx);
	if (!bad)
		printf("ok: %d entries checked: %d valid hits, %d corrupt entries rejected and rebuilt, "
		       "%d compiled anew\n", count, hits, rebuilt, count - hits - rebuilt);
	return bad;
}

/* A kernel that stores through a bad pointer (address 0 plus its thread index). */
static const char fault_src[] =
	"extern \"C\" __global__ void tinyc_test_fault(int *p) { p[threadIdx.x] = 1; }\n";

/* Whether the diagnostics of ctx contain `what`. */
static int diags_contain(tinyc_ctx *ctx, const char *what, char *text, size_t size)
{
	FILE *f = fmemopen(text, size, "w");
	if (!f)
		return 0;
	tinyc_ctx_print_diags(ctx, f);
	fclose(f);
	text[size - 1] = 0;
	return strstr(text, what) != NULL;
}

/* A compile and run through the C API on the GPU, checked by hand. */
static int api_run_works(const char *when)
{
	job j = {.id = 1, .rounds = 1, .device = "cuda"};
	tinyc_context *c = tinyc_context_new();
	if (c)
		one_round(&j, c, 1000);
	tinyc_context_free(c);
	if (!c || j.failures) {
		printf("FAIL: %s: %s\n", when, j.why);
		return 0;
	}
	printf("ok: %s: a compile and run on the GPU in the same process is right\n", when);
	return 1;
}

/* A plan of one kernel (image img, parameters ps) over nbuf float buffers of n elements:
 * roles[b] says what buffer b is. */
typedef struct one_plan {
	tinyc_wbuf bufs[4];	/* the buffers */
	tinyc_wkernel k[2];	/* the launches */
	tinyc_wplan plan;	/* over them */
} one_plan;

static void plan_init(one_plan *o, int nbuf, const int *roles, int64_t n)
{
	memset(o, 0, sizeof(*o));
	for (int b = 0; b < nbuf; b++) {
		o->bufs[b].bytes = (uint64_t)n * sizeof(float);
		o->bufs[b].role = roles[b];
		o->bufs[b].io_bytes = roles[b] == TINYC_WB_TEMP ? 0 : o->bufs[b].bytes;
	}
	o->plan = (tinyc_wplan){nbuf, o->bufs, 0, o->k};
}

/* Add a launch of `name` from image img with params ps (kept) to o. */
static void plan_add(one_plan *o, const char *name, const tinyc_blob *img, tinyc_wparam *ps,
		     int nparam, unsigned threads)
{
	tinyc_wkernel *k = &o->k[o->plan.nkernel++];
	snprintf(k->name, sizeof(k->name), "%s", name);
	k->grid[0] = k->grid[1] = k->grid[2] = 1;
	k->block[0] = threads, k->block[1] = k->block[2] = 1;
	k->params = ps;
	k->nparam = nparam;
	k->image = img;
}

/* Run plan o on w and expect failure with every string of want[] in the diagnostics (and
 * the worker gone, within max_s seconds).  1 when so. */
static int expect_failure(tinyc_worker *w, one_plan *o, const void **in, void **out,
			  double timeout_s, const char *const *want, int nwant, double max_s,
			  const char *what)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	char text[4096] = "";
	double t0 = tinyc_now_ms();
	int rc = ctx ? tinyc_worker_run(ctx, w, &o->plan, in, out, timeout_s) : 0;
	double s = (tinyc_now_ms() - t0) / 1e3;
	int ok = rc < 0 && diags_contain(ctx, "", text, sizeof(text));
	for (int i = 0; ok && i < nwant; i++)
		ok = strstr(text, want[i]) != NULL;
	tinyc_ctx_free(ctx);
	if (!ok || tinyc_worker_pid(w) || s > max_s) {
		printf("FAIL: %s: rc %d, worker %d, %.2f s (at most %.1f), diagnostics:\n%s\n", what, rc,
		       tinyc_worker_pid(w), s, max_s, text);
		return 0;
	}
	printf("ok: %s (%.2f s): %s", what, s, text);
	return 1;
}

/* The fake worker's fma plan (two launches through a temporary: T = X*W+X, Y = T*W+T) on n
 * elements; Y checked by hand.  1 when right. */
static int fake_fma_works(tinyc_worker *w, int64_t n, const char *when)
{
	static const int roles[] = {TINYC_WB_INPUT, TINYC_WB_INPUT, TINYC_WB_TEMP, TINYC_WB_OUTPUT};
	tinyc_blob fma = {(unsigned char *)"fake:fma", 8, 0, NULL, 0};
	tinyc_wparam p1[4] = {{TINYC_WP_PTR, 0, 0, {0}}, {TINYC_WP_PTR, 1, 0, {0}},
			      {TINYC_WP_PTR, 2, 0, {0}}, {TINYC_WP_I64, 0, n, {0}}};
	tinyc_wparam p2[4] = {{TINYC_WP_PTR, 2, 0, {0}}, {TINYC_WP_PTR, 1, 0, {0}},
			      {TINYC_WP_PTR, 3, 0, {0}}, {TINYC_WP_I64, 0, n, {0}}};
	one_plan o;
	plan_init(&o, 4, roles, n);
	plan_add(&o, "k0_T", &fma, p1, 4, 1);
	plan_add(&o, "k1_Y", &fma, p2, 4, 1);
	float *x = calloc((size_t)n, sizeof(float)), *wt = calloc((size_t)n, sizeof(float));
	float *y = calloc((size_t)n, sizeof(float));
	const void *in[4] = {x, wt, NULL, NULL};
	void *out[4] = {NULL, NULL, NULL, y};
	int ok = x && wt && y;
	for (int64_t i = 0; ok && i < n; i++)
		x[i] = (float)(i % 5), wt[i] = (float)(i % 3) - 1, y[i] = -99;
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	char text[4096] = "";
	if (ok && (!ctx || tinyc_worker_run(ctx, w, &o.plan, in, out, 10) < 0)) {
		diags_contain(ctx, "", text, sizeof(text));
		printf("FAIL: %s: the fma plan failed: %s\n", when, text);
		ok = 0;
	}
	for (int64_t i = 0; ok && i < n; i++) {
		float t = x[i] * wt[i] + x[i], want = t * wt[i] + t;	/* small integers: exact */
		if (y[i] != want) {
			printf("FAIL: %s: Y[%lld] = %g, by hand %g\n", when, (long long)i, y[i], want);
			ok = 0;
		}
	}
	if (ok)
		printf("ok: %s: two launches through a temporary, %lld elements through shared memory, "
		       "right (worker %d)\n", when, (long long)n, tinyc_worker_pid(w));
	tinyc_ctx_free(ctx);
	free(x), free(wt), free(y);
	return ok;
}

/* The worker protocol on the CPU (the fake device): transfers and results, a fault that
 * poisons the worker, a worker that dies, a timeout, a missing worker; the next run works
 * after each, in a fresh worker. */
static int run_worker(void)
{
	char *path = tinyc_gpu_worker_path();
	tinyc_worker *w = path ? tinyc_worker_new(path, 1) : NULL;
	free(path);
	if (!w) {
		printf("FAIL: no tinyc-gpu-worker found\n");
		return 1;
	}
	int ok = fake_fma_works(w, 100000, "first run");
	int first = tinyc_worker_pid(w);
	ok = ok && fake_fma_works(w, 7, "second run") && tinyc_worker_pid(w) == first;
	static const int roles[] = {TINYC_WB_INPUT, TINYC_WB_OUTPUT};
	float x[4] = {1, 2, 3, 4}, y[4];
	const void *in[2] = {x, NULL};
	void *out[2] = {NULL, y};
	tinyc_wparam none[1] = {{TINYC_WP_PTR, 0, 0, {0}}};
	static const char *const fault_want[] = {"CudaError", "CUDA_ERROR_ILLEGAL_ADDRESS",
						  "in kernel 'k0_fault'", "(the GPU worker was restarted)"};
	static const char *const crash_want[] = {"GpuWorkerError", "was killed by signal 9",
						  "in kernel 'k1_crash'", "(the GPU worker was restarted)"};
	static const char *const hang_want[] = {"GpuTimeout: kernel 'k0_hang' did not finish within "
						 "0.5 s (the GPU worker was restarted)"};
	static const char *const bad_want[] = {"CudaError", "no fake op"};
	struct {
		const char *op, *name, *what;	/* the fake op, the kernel, the test */
		const char *const *want;	/* expected in the diagnostics */
		int nwant;
		double timeout, max_s;		/* the limit given, the most it may take */
	} cases[] = {
		{"fake:fault", "k0_fault", "a fault poisons the worker", fault_want, 4, 10, 8},
		{"fake:crash", "k1_crash", "a worker that dies", crash_want, 4, 10, 8},
		{"fake:hang", "k0_hang", "a hang past the time limit", hang_want, 1, 0.5, 8},
	};
	for (int c = 0; ok && c < 3; c++) {
		tinyc_blob img = {(unsigned char *)cases[c].op, strlen(cases[c].op), 0, NULL, 0};
		tinyc_blob fma = {(unsigned char *)"fake:fma", 8, 0, NULL, 0};
		tinyc_wparam p[4] = {{TINYC_WP_PTR, 0, 0, {0}}, {TINYC_WP_PTR, 0, 0, {0}},
				     {TINYC_WP_PTR, 1, 0, {0}}, {TINYC_WP_I64, 0, 4, {0}}};
		one_plan o;
		plan_init(&o, 2, roles, 4);
		if (!strcmp(cases[c].name, "k1_crash"))	/* a good launch first */
			plan_add(&o, "k0_Y", &fma, p, 4, 1);
		plan_add(&o, cases[c].name, &img, none, 1, 1);
		ok = expect_failure(w, &o, in, out, cases[c].timeout, cases[c].want, cases[c].nwant,
				    cases[c].max_s, cases[c].what) &&
		     fake_fma_works(w, 1000, "the next run") && tinyc_worker_pid(w) != first;
		first = tinyc_worker_pid(w);
	}
	if (ok) {	/* an image the worker cannot load: a plain error, the worker stays */
		tinyc_blob img = {(unsigned char *)"fake:nothing", 12, 0, NULL, 0};
		one_plan o;
		plan_init(&o, 2, roles, 4);
		plan_add(&o, "k0_bad", &img, none, 1, 1);
		tinyc_ctx *ctx = tinyc_ctx_alloc();
		char text[4096] = "";
		ok = ctx && tinyc_worker_run(ctx, w, &o.plan, in, out, 10) < 0 &&
		     diags_contain(ctx, bad_want[1], text, sizeof(text)) &&
		     tinyc_worker_pid(w) == first && !strstr(text, "restarted");
		printf("%s: a bad image: %s", ok ? "ok" : "FAIL", text);
		tinyc_ctx_free(ctx);
		ok = ok && fake_fma_works(w, 3, "after the bad image") && tinyc_worker_pid(w) == first;
		ok = ok && fake_fma_works(w, 1000000, "a larger run (the shared memory grows)") &&
		     fake_fma_works(w, 9, "a smaller one again") && tinyc_worker_pid(w) == first;
	}
	if (ok) {	/* a worker killed from outside while idle: the next run starts another */
		kill(first, SIGKILL);
		struct timespec pause_ms = {0, 50000000};
		nanosleep(&pause_ms, NULL);
		ok = fake_fma_works(w, 5, "after the idle worker was killed") &&
		     tinyc_worker_pid(w) != first;
	}
	tinyc_worker_free(w);
	if (ok) {	/* no worker executable: a diagnostic */
		tinyc_worker *none_w = tinyc_worker_new("/nonexistent/tinyc-gpu-worker", 1);
		tinyc_ctx *ctx = tinyc_ctx_alloc();
		char text[4096] = "";
		ok = none_w && ctx && !tinyc_worker_device(ctx, none_w) &&
		     diags_contain(ctx, "GpuWorkerError: cannot start the GPU worker", text, sizeof(text));
		printf("%s: a missing worker: %s", ok ? "ok" : "FAIL", text);
		tinyc_ctx_free(ctx);
		tinyc_worker_free(none_w);
	}
	return ok ? 0 : 1;
}

/* A kernel that spins until its flag (zero, never set) becomes nonzero. */
static const char spin_src[] =
	"extern \"C\" __global__ void tinyc_test_spin(volatile int *flag) { while (*flag == 0) {} }\n";

/* The GPU fault (mode "fault") or hang (mode "hang") in an isolated run: the diagnostic
 * names the kernel, the worker is restarted, and the next compile and run in this process
 * works (through the C API, isolated; then in this process too, whose CUDA the fault never
 * touched). */
static int run_gpu_contained(int hang)
{
	if (!tinyc_cuda_available()) {
		printf("SKIP: no CUDA device\n");
		return SKIP;
	}
	if (!api_run_works("before the fault"))
		return 1;
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_worker *w = ctx ? tinyc_gpu_worker_new(ctx) : NULL;
	const tinyc_device_info *dev = w ? tinyc_worker_device(ctx, w) : NULL;
	tinyc_blob img = {0};
	const char *name = hang ? "tinyc_test_spin" : "tinyc_test_fault";
	int ok = dev && tinyc_nvrtc_compile(ctx, hang ? spin_src : fault_src, "contained.cu",
					    dev->target, 1, &img) == 0;
	if (!ok) {
		tinyc_ctx_print_diags(ctx, stdout);
	} else {
		static const int roles[] = {TINYC_WB_TEMP};
		tinyc_wparam bad[1] = {{TINYC_WP_I64, 0, 0, {0}}};	/* address 0 */
		tinyc_wparam flag[1] = {{TINYC_WP_PTR, 0, 0, {0}}};
		one_plan o;
		plan_init(&o, 1, roles, 32);
		plan_add(&o, name, &img, hang ? flag : bad, 1, 32);
		char kernel[160];
		snprintf(kernel, sizeof(kernel), "kernel '%s'", name);
		const char *fault_want[] = {"CudaError", "CUDA_ERROR_ILLEGAL_ADDRESS", kernel,
					    "(the GPU worker was restarted)"};
		const char *hang_want[] = {"GpuTimeout: kernel 'tinyc_test_spin' did not finish "
					   "within 2 s (the GPU worker was restarted)"};
		ok = expect_failure(w, &o, NULL, NULL, hang ? 2 : 60, hang ? hang_want : fault_want,
				    hang ? 1 : 4, hang ? 30 : 60, hang ? "a hanging kernel" : "a faulting kernel");
	}
	tinyc_blob_clear(&img);
	tinyc_worker_free(w);
	tinyc_ctx_free(ctx);
	ok = ok && api_run_works(hang ? "after the hang (isolated)" : "after the fault (isolated)");
	if (ok) {	/* and in this process, whose CUDA the fault never reached */
		job j = {.id = 2, .rounds = 1, .device = "cuda"};
		tinyc_context *c = tinyc_context_new();
		if (c && tinyc_context_set_gpu_isolation(c, 0) == TINYC_OK)
			one_round(&j, c, 777);
		tinyc_context_free(c);
		ok = c && !j.failures;
		printf("%s: a compile and run in this process afterwards%s%s\n", ok ? "ok" : "FAIL",
		       ok ? " is right" : ": ", j.why);
	}
	return ok ? 0 : 1;
}

/* The allocation-failure test: a device allocation that cannot succeed (1 PiB) is a
 * diagnostic, and a compile and run afterwards in the same process works. */
static int run_alloc(void)
{
	if (!tinyc_cuda_available()) {
		printf("SKIP: no CUDA device\n");
		return SKIP;
	}
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_cuda *cu = ctx ? tinyc_cuda_open(ctx, 0) : NULL;
	int ok = cu != NULL;
	char text[4096];
	tinyc_devptr p = 0;
	if (ok && (tinyc_cuda_alloc(cu, (size_t)1 << 50, &p) == 0 ||
		   !diags_contain(ctx, "CUDA_ERROR_OUT_OF_MEMORY", text, sizeof(text)))) {
		printf("FAIL: a 1 PiB allocation did not fail with CUDA_ERROR_OUT_OF_MEMORY\n");
		ok = 0;
	} else if (ok) {
		printf("ok: allocation failure reported: %s", text);
	}
	tinyc_cuda_close(cu);
	tinyc_ctx_free(ctx);
	return ok && api_run_works("after the allocation failure") ? 0 : 1;
}

/* A fault in this process (what tinyc_program_launch on the caller's pointers, or a run
 * with isolation off, meets): reported with the kernel's name, no crash; afterwards a run in
 * this process works where the driver allows the context reset, else fails cleanly with a
 * CUDA diagnostic; an isolated run works either way (its CUDA is the worker's). */
static int run_fault_in_process(void)
{
	if (!tinyc_cuda_available()) {
		printf("SKIP: no CUDA device\n");
		return SKIP;
	}
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_cuda *cu = ctx ? tinyc_cuda_open(ctx, 0) : NULL;
	if (!cu) {
		printf("FAIL: cannot open the device\n");
		tinyc_ctx_free(ctx);
		return 1;
	}
	int ok = 1, reset = 0;
	char text[4096] = "";
	tinyc_blob img = {0};
	tinyc_kernel *k = NULL;
	if (tinyc_nvrtc_compile(ctx, fault_src, "fault.cu", tinyc_cuda_device_info(cu)->target, 1,
				&img) < 0 ||
	    !(k = tinyc_cuda_kernel_load(cu, &img, "tinyc_test_fault"))) {
		tinyc_ctx_print_diags(ctx, stdout);
		ok = 0;
	} else {
		tinyc_devptr bad = 0;
		void *args[] = {&bad};
		int rc = tinyc_cuda_launch(cu, k, (tinyc_dim3){1, 1, 1}, (tinyc_dim3){32, 1, 1}, 0, args);
		if (rc == 0)
			rc = tinyc_cuda_sync_kernel(cu, "tinyc_test_fault");
		if (rc == 0 || !diags_contain(ctx, "in kernel 'tinyc_test_fault'", text, sizeof(text)) ||
		    !strstr(text, "CUDA_ERROR_ILLEGAL_ADDRESS")) {
			printf("FAIL: the fault was not reported with the kernel's name:\n%s\n", text);
			ok = 0;
		} else {
			printf("ok: fault in this process reported: %s", text);
			reset = strstr(text, "context was reset") != NULL;
		}
	}
	tinyc_kernel_free(k);	/* loaded before the reset: gone, not unloaded */
	tinyc_blob_clear(&img);
	tinyc_cuda_close(cu);
	tinyc_ctx_free(ctx);
	if (ok) {	/* a run in this process: works after a reset, else fails cleanly */
		job j = {.id = 1, .rounds = 1, .device = "cuda"};
		tinyc_context *c = tinyc_context_new();
		if (c && tinyc_context_set_gpu_isolation(c, 0) == TINYC_OK)
			one_round(&j, c, 1000);
		tinyc_context_free(c);
		if (reset ? j.failures != 0
			  : !j.failures || !strstr(j.why, "CUDA_ERROR_") || !strstr(text, "keeps this fault")) {
			printf("FAIL: after the fault a run in this process neither %s: %s\n",
			       reset ? "worked" : "failed with a CUDA diagnostic", j.why);
			ok = 0;
		} else {
			printf("ok: a run in this process afterwards %s%s\n", reset ? "works" :
			       "fails cleanly (the driver keeps the fault): ", j.why);
		}
	}
	return ok && api_run_works("after the fault in this process (isolated)") ? 0 : 1;
}

/* Sort helper for the overhead timings. */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The cost of isolation (a measurement, not a test): the graph above through the C API on
 * cuda, n elements, `runs` calls of tinyc_program_run after a first one, in the GPU worker
 * and in this process; prints the first call and the median and mean of the others. */
static int run_overhead(int n, int runs)
{
	if (!tinyc_cuda_available()) {
		printf("SKIP: no CUDA device\n");
		return SKIP;
	}
	char bind[32];
	snprintf(bind, sizeof(bind), "N=%d", n);
	float *x = calloc((size_t)n, sizeof(float)), *w = calloc((size_t)n, sizeof(float));
	float *y = calloc((size_t)n, sizeof(float)), sum = 0;
	double *t = calloc((size_t)runs + 1, sizeof(double));
	int bad = !x || !w || !y || !t;
	for (int iso = 1; iso >= 0 && !bad; iso--) {
		tinyc_context *c = tinyc_context_new();
		tinyc_compile_options opt = {0};
		opt.bind = bind;
		opt.device = "cuda";
		tinyc_program *p = NULL;
		const void *in[] = {x, w};
		void *out[] = {y, &sum};
		if (!c || tinyc_context_set_gpu_isolation(c, iso) != TINYC_OK ||
		    tinyc_program_compile(c, graph, "overhead.uop", &opt, &p) != TINYC_OK) {
			printf("FAIL: compile: %s\n", c ? tinyc_context_diagnostics(c) : "no context");
			bad = 1;
		}
		double t0 = tinyc_now_ms(), first = 0, mean = 0;
		for (int r = -1; r < runs && !bad; r++) {
			double r0 = tinyc_now_ms();
			if (tinyc_program_run(p, in, out) != TINYC_OK) {
				printf("FAIL: run: %s\n", tinyc_context_diagnostics(c));
				bad = 1;
			}
			if (r < 0)
				first = tinyc_now_ms() - t0;
			else
				t[r] = tinyc_now_ms() - r0, mean += t[r] / runs;
		}
		if (!bad) {
			qsort(t, (size_t)runs, sizeof(double), cmp_double);
			printf("overhead: N=%d (%.1f MB in, %.1f MB out) %s: first call %.1f ms, then "
			       "median %.3f ms, mean %.3f ms per tinyc_program_run (%d runs)\n", n,
			       8.0 * n / 1e6, 4.0 * n / 1e6, iso ? "isolated (GPU worker)" : "in process",
			       first, t[runs / 2], mean, runs);
		}
		tinyc_program_free(p);
		tinyc_context_free(c);
	}
	free(x), free(w), free(y), free(t);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "threads"))
		return run_threads(atoi(argv[2]), argv[3], atoi(argv[4]));
	if (argc >= 5 && !strcmp(argv[1], "cache"))
		return run_cache(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc >= 4 && !strcmp(argv[1], "cache-verify"))
		return run_cache_verify(argv[2], atoi(argv[3]));
	if (argc >= 4 && !strcmp(argv[1], "overhead"))
		return run_overhead(atoi(argv[2]), atoi(argv[3]));
	if (argc >= 2 && !strcmp(argv[1], "worker"))
		return run_worker();
	if (argc >= 2 && !strcmp(argv[1], "fault"))
		return run_gpu_contained(0);
	if (argc >= 2 && !strcmp(argv[1], "fault-in-process"))
		return run_fault_in_process();
	if (argc >= 2 && !strcmp(argv[1], "hang"))
		return run_gpu_contained(1);
	if (argc >= 2 && !strcmp(argv[1], "alloc"))
		return run_alloc();
	fprintf(stderr, "usage: stress threads N DEVICES ROUNDS | cache DIR FIRST COUNT | "
			"cache-verify DIR COUNT | worker | fault | fault-in-process | hang | alloc | overhead N RUNS\n");
	return 2;
}
