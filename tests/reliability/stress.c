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
 *   stress fault                      (GPU) a kernel that stores through a bad pointer is
 *                                     reported with its name and the library resets the
 *                                     context; the next compile and run in the process works
 *                                     when the driver allows the reset, else fails cleanly
 *   stress alloc                      (GPU) a device allocation that cannot succeed is a
 *                                     diagnostic; the next compile and run works
 *
 * Exit 0 on success, 1 on a failure (printed), 77 when a GPU mode finds no GPU. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/tinyc.h"
#include "ir/ctx.h"
#include "runtime/runtime.h"

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

/* The GPU fault test: the fault is reported with the kernel's name; when the driver lets the
 * context be reset the next run works, else it fails with a diagnostic (no crash, no hang). */
static int run_fault(void)
{
	if (!tinyc_cuda_available()) {
		printf("SKIP: no CUDA device\n");
		return SKIP;
	}
	if (!api_run_works("before the fault"))
		return 1;
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_cuda *cu = ctx ? tinyc_cuda_open(ctx, 0) : NULL;
	if (!cu) {
		printf("FAIL: cannot open the device\n");
		tinyc_ctx_free(ctx);
		return 1;
	}
	int ok = 1, reset = 0;
	char text[4096];
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
			printf("ok: fault reported: %s", text);
			reset = strstr(text, "context was reset") != NULL;
		}
	}
	tinyc_kernel_free(k);	/* loaded before the reset: gone, not unloaded */
	tinyc_blob_clear(&img);
	tinyc_cuda_close(cu);
	tinyc_ctx_free(ctx);
	if (ok && reset) {
		ok = api_run_works("after the fault");
	} else if (ok) {	/* the driver keeps the fault: later calls must fail cleanly */
		job j = {.id = 1, .rounds = 1, .device = "cuda"};
		tinyc_context *c = tinyc_context_new();
		if (c)
			one_round(&j, c, 1000);
		tinyc_context_free(c);
		if (!j.failures || !strstr(j.why, "CUDA_ERROR_") || !strstr(text, "keeps this fault")) {
			printf("FAIL: after an unrecoverable fault a run neither worked nor failed with a "
			       "CUDA diagnostic: %s\n", j.why);
			ok = 0;
		} else {
			printf("ok: the driver keeps the fault (no reset possible in this process): the next "
			       "run fails cleanly: %s\n", j.why);
		}
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

int main(int argc, char **argv)
{
	if (argc >= 5 && !strcmp(argv[1], "threads"))
		return run_threads(atoi(argv[2]), argv[3], atoi(argv[4]));
	if (argc >= 5 && !strcmp(argv[1], "cache"))
		return run_cache(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc >= 4 && !strcmp(argv[1], "cache-verify"))
		return run_cache_verify(argv[2], atoi(argv[3]));
	if (argc >= 2 && !strcmp(argv[1], "fault"))
		return run_fault();
	if (argc >= 2 && !strcmp(argv[1], "alloc"))
		return run_alloc();
	fprintf(stderr, "usage: stress threads N DEVICES ROUNDS | cache DIR FIRST COUNT | "
			"cache-verify DIR COUNT | fault | alloc\n");
	return 2;
}
