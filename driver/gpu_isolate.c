/* Finding the GPU worker (runtime/worker.h) for isolated runs: the executable
 * tinyc-gpu-worker, which the build puts beside the CLI and the library and the installation
 * into libexec/. */
#define _GNU_SOURCE	/* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver/run.h"

#define WORKER_NAME "tinyc-gpu-worker"

/* dir/rel/WORKER_NAME when it is an executable file: a new string, else NULL. */
static char *try_dir(const char *dir, const char *rel)
{
	char *p = tinyc_asprintf("%s%s/%s", dir, rel, WORKER_NAME);
	if (p && access(p, X_OK) == 0)
		return p;
	free(p);
	return NULL;
}

/* The worker beside file (a library or a program), in ../libexec, or in .. (a test program
 * one directory below the build's). */
static char *beside(const char *file)
{
	char real[PATH_MAX];
	if (!file || !realpath(file, real))
		return NULL;
	char *slash = strrchr(real, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	char *p = try_dir(real, "");
	if (!p)
		p = try_dir(real, "/../libexec");
	if (!p)
		p = try_dir(real, "/..");
	return p;
}

char *tinyc_gpu_worker_path(void)
{
	const char *env = getenv("TINYC_GPU_WORKER");
	if (env && *env)
		return strdup(env);
	Dl_info info;
	char *p = NULL;
	if (dladdr((void *)tinyc_gpu_worker_path, &info) && info.dli_fname)
		p = beside(info.dli_fname);
	if (!p)
		p = beside("/proc/self/exe");
	return p;
}

tinyc_worker *tinyc_gpu_worker_new(tinyc_ctx *ctx)
{
	char *path = tinyc_gpu_worker_path();
	if (!path) {
		tinyc_error(ctx, "GpuWorkerError", "cannot find the GPU worker '%s' (beside the library "
			    "or the program, or in ../libexec; or set TINYC_GPU_WORKER), which isolated "
			    "GPU runs need; --no-isolate runs in this process", WORKER_NAME);
		return NULL;
	}
	tinyc_worker *w = tinyc_worker_new(path, 0);
	free(path);
	if (!w)
		tinyc_error(ctx, "OutOfMemory", "the GPU worker's handle");
	return w;
}
