/* driver/ runners: a compiled module (GPU IR) run on the GPU IR interpreter or on a CUDA
 * device, the compiled-module cache, and loaded modules launched on the caller's pointers.
 *
 *   gpu_run.c     tinyc_gpu_run_interp / tinyc_gpu_run_cuda: buffers, nvrtc (through the
 *                 kernel cache), launches in order, timing, outputs.
 *   gpu_cache.c   the compiled-module cache (see there).
 *   gpu_launch.c  tinyc_gpu_load / tinyc_gpu_launch_async (the C API's program launch).
 *   gpu_isolate.c finding the GPU worker executable (tinyc_gpu_run_isolated is in gpu_run.c).
 */
#ifndef TINYC_DRIVER_RUN_H
#define TINYC_DRIVER_RUN_H

#include "codegen/gpu.h"
#include "runtime/runtime.h"
#include "runtime/worker.h"

/* ---- gpu_run.c ---- */

/* How tinyc_gpu_run_cuda runs. */
typedef struct tinyc_gpu_run_opts {
	int warmup;		/* untimed launches of each kernel before timing */
	int iters;		/* timed launches of each kernel (0: launch once, wall-timed) */
	int no_cache;		/* bypass the kernel cache */
	const tinyc_blob *images;	/* NULL, or per kernel its CUBIN (a cached module):
					   no CUDA text, no compile */
	tinyc_blob *keep;	/* NULL, or per kernel (caller's array, zeroed) a copy of
				   the image that ran, for the module cache (owned by the caller) */
} tinyc_gpu_run_opts;

/* What happened to one kernel. */
typedef struct tinyc_gpu_kernel_stat {
	char name[128];		/* kernel name */
	double nvrtc_ms;	/* nvrtc compile time (0 on a cache hit) */
	int cache_hit;		/* the image came from the cache */
	double median_ms;	/* median event time of the timed launches (or one launch) */
	unsigned grid[3];	/* the launch grid */
	unsigned block[3];	/* the block */
	int regs;		/* registers per thread (driver) */
	int local_bytes;	/* local memory per thread: spills (driver) */
	int smem_bytes;		/* shared memory per block, static + dynamic */
	double compile_ms;	/* the whole cached compile: key, lookup, nvrtc on a miss */
	double load_ms;		/* loading the image into the context (cuModuleLoadData) */
	double graph_ms;	/* timed runs: CUDA-graph replay time per launch (0: no graphs) */
	double wall_ms;		/* timed runs: host wall time per launch of back-to-back launches
				 * (launch overhead included), 0 when not timed */
} tinyc_gpu_kernel_stat;

/* Per-kernel results of a CUDA run. */
typedef struct tinyc_gpu_run_stats {
	int nkernel;			/* kernels */
	tinyc_gpu_kernel_stat *k;	/* per kernel, launch order (owned) */
	double plan_graph_ms;		/* timed runs: the whole plan (every kernel in order) per
					   CUDA-graph replayed execution (0: no graphs) */
	double plan_run_ms;		/* timed runs: the whole plan per execution of iters
					   back-to-back executions between two events */
	double print_ms;		/* printing every kernel's CUDA text */
	double compile_wall_ms;		/* compiling every kernel (in parallel): elapsed */
} tinyc_gpu_run_stats;

void tinyc_gpu_run_stats_clear(tinyc_gpu_run_stats *st);

/* ---- gpu_cache.c: the compiled-module cache (see there) ---- */

/* A module rebuilt from the cache: what tinyc_gpu_run_cuda launches, with the images. */
typedef struct tinyc_gpu_cached {
	tinyc_gpu_module *gm;	/* buffers and kernels (parameters, grids; no bodies) */
	tinyc_blob *images;	/* per kernel its CUBIN */
	char **plans;		/* per kernel its plan line, or NULL */
	int nkernel;		/* kernels */
} tinyc_gpu_cached;

/* The key of a compilation: the graph text, the --bind text (every symbol bound), the
 * target, the device, driver and nvrtc, the TINYC_* settings, the tuning records and the
 * compiler binary itself. */
void tinyc_gpu_cache_key(const char *graph_text, const char *bind, const char *target,
			 const tinyc_device_info *dev, unsigned char key[32]);
/* Store gm (launch description evaluated under sym), images[] and plans[] (may be NULL)
 * under key; 0, or -1 when it was not stored (not an error). */
int tinyc_gpu_cache_store(const unsigned char key[32], const tinyc_gpu_module *gm,
			  const int64_t *sym, const tinyc_blob *images, const char *const *plans);
/* Look key up: 1 and *out filled (its module reports to ctx), 0 on a miss or a bad entry. */
int tinyc_gpu_cache_load(tinyc_ctx *ctx, const unsigned char key[32], const tinyc_graph *g,
			 const tinyc_bindings *bind, __tinyc_give tinyc_gpu_cached *out);
void tinyc_gpu_cached_clear(tinyc_gpu_cached *c);
/* Run every kernel of gm with the GPU IR interpreter on io->in (by BUFFER slot), with
 * sym[] the value of every graph symbol; allocates io->out (by OUTPUT order).  0 or -1. */
int tinyc_gpu_run_interp(tinyc_ctx *ctx, const tinyc_gpu_module *gm, const int64_t *sym,
			 tinyc_io *io);
/* The same on a CUDA device: nvrtc (through the cache) per kernel, device buffers, launches
 * in order (timed when opt->iters > 0), outputs downloaded into io->out.  stats may be NULL. */
int tinyc_gpu_run_cuda(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_gpu_module *gm,
		       const int64_t *sym, tinyc_io *io, const tinyc_gpu_run_opts *opt,
		       tinyc_gpu_run_stats *stats);

/* The same in a worker process (runtime/worker.h: a fault or a hang there cannot harm this
 * process): the kernels compiled here for the worker's device (or opt->images), evaluated
 * into a plan, inputs and outputs through shared memory; timeout_s > 0 limits the run
 * (GpuTimeout).  opt->iters is ignored (no timing); stats gets the compile figures. */
int tinyc_gpu_run_isolated(tinyc_ctx *ctx, tinyc_worker *w, const tinyc_gpu_module *gm,
			   const int64_t *sym, tinyc_io *io, const tinyc_gpu_run_opts *opt,
			   double timeout_s, tinyc_gpu_run_stats *stats);
/* Kernel i's launch under sym[] as plain data (grid, block, shared memory, parameters; the
 * image is left NULL): wk->params is allocated, NULL when the grid is empty (nothing to
 * launch).  0 or -1. */
int tinyc_gpu_kernel_plan(tinyc_ctx *ctx, const tinyc_gpu_module *gm, int i, const int64_t *sym,
			  tinyc_wkernel *wk);
/* The worker executable (gpu_isolate.c): $TINYC_GPU_WORKER, else tinyc-gpu-worker beside the
 * library or the program (or in ../libexec, or ..).  A new string, or NULL when none exists. */
__tinyc_give char *tinyc_gpu_worker_path(void);
/* A worker handle for this process's runs (nothing started yet): NULL with a GpuWorkerError
 * when no worker executable is found. */
__tinyc_give tinyc_worker *tinyc_gpu_worker_new(tinyc_ctx *ctx);
/* The default time limit of an isolated run, seconds. */
#define TINYC_GPU_TIMEOUT_DEFAULT 60.0

/* Elements of storage of buffer b under sym[] (strided: the span), -1 when a size is unbound. */
int64_t tinyc_gpu_buf_storage(const tinyc_gbuf *b, const int64_t *sym);
/* Build the CUtensorMap of parameter v of kernel k (a PARAM_TMAP) into map (128 bytes,
 * 64-byte aligned) for buffers at dptr[] and symbol values sym[].  0 or -1. */
int tinyc_gpu_tmap_arg(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_gpu_module *gm,
		       const tinyc_gkernel *k, const tinyc_gvar *v, const int64_t *sym,
		       const tinyc_devptr *dptr, void *map);

/* ---- gpu_launch.c ---- */

/* The kernels of a module compiled (through the cache) and loaded on cu's device, for
 * launching many times on the caller's device pointers (the C API's tinyc_program_launch). */
typedef struct tinyc_gpu_loaded tinyc_gpu_loaded;
__tinyc_give tinyc_gpu_loaded *tinyc_gpu_load(tinyc_ctx *ctx, tinyc_cuda *cu,
					      const tinyc_gpu_module *gm,
					      const tinyc_gpu_run_opts *opt);
void tinyc_gpu_loaded_free(__tinyc_take tinyc_gpu_loaded *l);
/* Enqueue gm on `stream` (a CUstream; NULL: the default stream): every non-input buffer
 * zeroed, then every kernel in order.  dptr[b] is the device address of buffer b (inputs,
 * outputs and temporaries alike, storage elements each), sym[] every symbol's value.
 * Asynchronous; 0 or -1. */
int tinyc_gpu_launch_async(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_gpu_module *gm,
			   const tinyc_gpu_loaded *l, const int64_t *sym, const tinyc_devptr *dptr,
			   void *stream);

#endif
