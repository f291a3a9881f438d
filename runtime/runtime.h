/* runtime/: compile CUDA text with nvrtc, cache the results on disk, load and launch them
 * through the CUDA driver, and describe the real device (tinyc_cuda_device_info).
 *
 *   nvrtc.c   CUDA text -> PTX or CUBIN (tinyc_nvrtc_compile); nvrtc's log becomes
 *             CudaCompileError diagnostics that quote the offending CUDA line with a caret.
 *   cache.c   the on-disk kernel cache (SHA-256 keys, atomic writes, self-checking
 *             entries) and tinyc_kernel_compile_cached, which puts nvrtc behind it.
 *   cuda.c    the CUDA driver API, loaded with dlopen("libcuda.so.1") so nothing links
 *             against the driver: device properties, modules, launches, memory, timing.
 *   worker.c  GPU work in a worker process (worker.h): a fault or hang there cannot harm
 *             the caller.
 * The device description (tinyc_arch, tinyc_device_info, the named targets) is ir/target.h:
 * the compiler reads it, cuda.c fills it from a real device.
 *
 * Without a driver or a device, tinyc_cuda_open fails with a plain "NoGpu" diagnostic; every
 * driver failure afterwards is a "CudaError: cuXxx failed: NAME: description" diagnostic.
 * Nothing here prints or exits.  Ownership follows isl (__tinyc_give/__tinyc_take/__tinyc_keep).
 */
#ifndef TINYC_RUNTIME_RUNTIME_H
#define TINYC_RUNTIME_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ctx.h"
#include "ir/target.h"

/* ---------------------------------------------------------------------- nvrtc ---- */

/* Milliseconds on the monotonic clock (for the timings below). */
double tinyc_now_ms(void);

/* A compiled kernel image, as nvrtc or the cache produced it. */
typedef struct tinyc_blob {
	unsigned char *data;	/* the image (owned); PTX is NUL-terminated */
	size_t size;		/* bytes of the image, excluding PTX's terminating NUL */
	int is_cubin;		/* 1: CUBIN (ELF for one sm_XY), 0: PTX text */
	char *log;		/* nvrtc's log, warnings included (owned; NULL when empty) */
	double compile_ms;	/* wall time of nvrtcCompileProgram, 0 for a cache hit */
} tinyc_blob;

/* Free what a blob holds and zero it (the struct itself is the caller's). */
void tinyc_blob_clear(tinyc_blob *b);

/* nvrtc's version as major*1000 + minor*10 (13.0 -> 13000, like CUDA_VERSION); -1 on error. */
int tinyc_nvrtc_version(void);

/* Compile CUDA text with nvrtc for arch ("sm_80", "sm_90", "sm_90a").  want_cubin selects
 * CUBIN for the real architecture (-arch=sm_XY) or PTX for the virtual one
 * (-arch=compute_XY).  Options: -std=c++17 -default-device and an include path with
 * cuda_fp16.h/cuda_bf16.h; no --use_fast_math.  `name` is the program name that nvrtc and
 * the diagnostics use as the file name (e.g. "matmul.cu").  Returns 0 and fills *out, or -1
 * with CudaCompileError diagnostics (one per nvrtc error, located in the CUDA text) or an
 * NvrtcError diagnostic for a failing nvrtc call. */
int tinyc_nvrtc_compile(tinyc_ctx *ctx, const char *cuda_src, const char *name,
			const char *arch, int want_cubin, __tinyc_give tinyc_blob *out);

/* Like tinyc_nvrtc_compile with extra nvrtc options appended (e.g. "-lineinfo",
 * "--use_fast_math", "-DTILE=64"). */
int tinyc_nvrtc_compile_opts(tinyc_ctx *ctx, const char *cuda_src, const char *name,
			     const char *arch, int want_cubin, const char *const *extra,
			     int n_extra, __tinyc_give tinyc_blob *out);

/* The options tinyc_nvrtc_compile_opts passes to nvrtc, one per line, into *out (so callers
 * can show them and the cache can key on them).  Returns 0 or -1 (InvalidTarget). */
int tinyc_nvrtc_options(tinyc_ctx *ctx, const char *arch, int want_cubin,
			const char *const *extra, int n_extra, tinyc_buf *out);

/* The directory holding cuda_fp16.h that nvrtc is pointed at, or NULL when none was found
 * ($CUDA_HOME/include, $CUDA_PATH/include, beside libnvrtc, /usr/local/cuda/include). */
const char *tinyc_nvrtc_include_dir(void);

/* ---------------------------------------------------------------------- cache ---- */

/* SHA-256 (FIPS 180-4) of n bytes. */
void tinyc_sha256(const void *data, size_t n, unsigned char digest[32]);

/* Incremental SHA-256, for hashing several pieces without joining them. */
typedef struct tinyc_sha256_ctx {
	uint32_t h[8];		/* chaining state */
	uint64_t nbytes;	/* bytes hashed so far */
	unsigned char block[64];	/* pending partial block */
	size_t fill;		/* bytes used in block */
} tinyc_sha256_ctx;

void tinyc_sha256_init(tinyc_sha256_ctx *s);
void tinyc_sha256_update(tinyc_sha256_ctx *s, const void *data, size_t n);
void tinyc_sha256_final(tinyc_sha256_ctx *s, unsigned char digest[32]);
/* Write the 64 lowercase hex digits of a digest and a NUL into hex. */
void tinyc_hex(const unsigned char *bytes, size_t n, char *hex);

/* The cache directory: $TINYC_CACHE_DIR (empty means "no cache"), else
 * $XDG_CACHE_HOME/tinyc, else $HOME/.cache/tinyc.  Returns a new string, or NULL when
 * caching is disabled or no location is known. */
__tinyc_give char *tinyc_cache_dir(void);

/* How tinyc_kernel_compile_cached compiles. */
typedef struct tinyc_compile_opts {
	int want_ptx;			/* 1: PTX for compute_XY; 0 (default): CUBIN for sm_XY */
	int no_cache;			/* 1: neither read nor write the cache */
	const char *cache_dir;		/* overrides tinyc_cache_dir() when not NULL ("" = off) */
	int driver_version;		/* part of the key when known (tinyc_device_info), else 0 */
	const char *const *extra;	/* extra nvrtc options (part of the key) */
	int n_extra;			/* how many extra options */
} tinyc_compile_opts;

/* What tinyc_kernel_compile_cached did. */
typedef struct tinyc_compile_result {
	tinyc_blob blob;		/* the image (owned by the result) */
	int cache_hit;			/* 1: read from the cache, nvrtc not run */
	int cache_stored;		/* 1: a new entry was written */
	int cache_rejected;		/* 1: an entry existed but was corrupt or short */
	char key[65];			/* hex SHA-256 of the key material */
	char *cache_path;		/* the entry's file, NULL when caching is off (owned) */
	char *cache_note;		/* why the cache was not used or written, or NULL (owned) */
	double lookup_ms;		/* time to hash the key and read/check the entry */
	double compile_ms;		/* nvrtc time (0 on a hit) */
	double total_ms;		/* wall time of the whole call */
} tinyc_compile_result;

void tinyc_compile_result_clear(tinyc_compile_result *r);

/* Compile through the cache: the key is SHA-256 of the CUDA text, program name, arch,
 * output kind, the nvrtc options, the nvrtc version and opt->driver_version.  A hit returns
 * the stored bytes; a miss (or a corrupt entry, which is ignored) runs nvrtc and stores the
 * result atomically (temporary file + rename).  Cache I/O problems never fail the call: they
 * are described in r->cache_note.  opt may be NULL.  Returns 0 or -1 (diagnostics as for
 * tinyc_nvrtc_compile). */
int tinyc_kernel_compile_cached(tinyc_ctx *ctx, const char *cuda_src, const char *name,
				const char *arch, const tinyc_compile_opts *opt,
				__tinyc_give tinyc_compile_result *r);

/* Other cache entries (a compiled module's launch description): key.ext in the cache
 * directory, stored atomically and checked (header, key, SHA-256 of the bytes) on reading.
 * get: 1 and *out filled (data NUL-terminated), 0 when there is none or the cache is off,
 * -1 when the entry is bad.  put: 0, or -1 when it could not be stored (not an error). */
int tinyc_cache_get(const unsigned char key[32], const char *ext, __tinyc_give tinyc_blob *out);
int tinyc_cache_put(const unsigned char key[32], const char *ext, const void *data, size_t size);

/* One compile of tinyc_kernel_compile_many. */
typedef struct tinyc_compile_job {
	const char *src;			/* CUDA text */
	const char *name;			/* translation unit name */
	const char *arch;			/* target */
	const tinyc_compile_opts *opt;		/* options (may be NULL) */
} tinyc_compile_job;

/* tinyc_kernel_compile_cached for n jobs at once, on $TINYC_JIT_THREADS threads (default:
 * the online CPUs, at most 16): results[i] for jobs[i]; the diagnostics come in job order.
 * *wall_ms (when not NULL): the elapsed time of the whole.  0, or -1 when a job failed
 * (then every result is cleared). */
int tinyc_kernel_compile_many(tinyc_ctx *ctx, int n, const tinyc_compile_job *jobs,
			      __tinyc_give tinyc_compile_result *results, double *wall_ms);

/* ----------------------------------------------------------------- CUDA driver ---- */

typedef struct tinyc_cuda tinyc_cuda;		/* the driver, one device, its primary context */
typedef struct tinyc_kernel tinyc_kernel;	/* a loaded module and one function in it */
typedef uint64_t tinyc_devptr;			/* a device address (CUdeviceptr) */

/* Grid or block dimensions. */
typedef struct tinyc_dim3 {
	unsigned x, y, z;	/* extents; 0 is treated as 1 */
} tinyc_dim3;

/* Whether libcuda.so.1 loads and reports at least one device (no diagnostics). */
int tinyc_cuda_available(void);

/* Load the driver, initialise it and make `device`'s primary context current.  NULL with
 * "NoGpu: no CUDA driver (libcuda.so.1 not found); this command needs an NVIDIA GPU", or
 * "NoGpu: no CUDA device", or a CudaError.  ctx is kept: it must outlive the result. */
__tinyc_give tinyc_cuda *tinyc_cuda_open(__tinyc_keep tinyc_ctx *ctx, int device);
/* Release the primary context and unload the driver. */
void tinyc_cuda_close(__tinyc_take tinyc_cuda *cu);
/* The device's properties (owned by cu). */
__tinyc_keep const tinyc_device_info *tinyc_cuda_device_info(const tinyc_cuda *cu);

/* Load a CUBIN or PTX image and look up `func` in it.  NULL and a CudaError on failure
 * (with the driver's JIT log when it rejects the image). */
__tinyc_give tinyc_kernel *tinyc_cuda_kernel_load(tinyc_cuda *cu, const tinyc_blob *image,
						   const char *func);
/* Unload the module. */
void tinyc_kernel_free(__tinyc_take tinyc_kernel *k);
/* Launch k with programmatic stream serialization (on: its code waits for the previous
 * grid with griddepcontrol.wait, GPU IR `pdl`), so that it overlaps the previous kernel's
 * end; without cuLaunchKernelEx in the driver it is launched plainly. */
void tinyc_kernel_set_pdl(tinyc_kernel *k, int on);

/* Resource use of a loaded kernel, from cuFuncGetAttribute. */
typedef struct tinyc_kernel_attrs {
	int num_regs;			/* registers per thread */
	int static_smem_bytes;		/* statically declared shared memory */
	int local_bytes;		/* local (spill) memory per thread */
	int max_threads_per_block;	/* the most threads a block of this kernel can have */
	int binary_version;		/* SASS version, e.g. 90 */
} tinyc_kernel_attrs;

int tinyc_kernel_get_attrs(tinyc_cuda *cu, tinyc_kernel *k, tinyc_kernel_attrs *out);

/* Launch k on the default stream.  args is the usual kernelParams array: one pointer per
 * kernel parameter, pointing at its value.  Dynamic shared memory above 48 KiB is opted in
 * with cuFuncSetAttribute first.  Asynchronous: errors of the kernel itself surface at the
 * next synchronising call. */
int tinyc_cuda_launch(tinyc_cuda *cu, tinyc_kernel *k, tinyc_dim3 grid, tinyc_dim3 block,
		      unsigned dyn_smem_bytes, void **args);

/* tinyc_cuda_launch on `stream` (a CUstream of the caller's; NULL: the default stream). */
int tinyc_cuda_launch_async(tinyc_cuda *cu, tinyc_kernel *k, tinyc_dim3 grid, tinyc_dim3 block,
			    unsigned dyn_smem_bytes, void **args, void *stream);
/* Make the device's primary context current on the calling thread (a thread other than the
 * one that opened cu, before launching).  0 or -1. */
int tinyc_cuda_make_current(tinyc_cuda *cu);

/* Element types of tensor maps. */
typedef enum tinyc_tmap_elem {
	TINYC_TMAP_F16,		/* half */
	TINYC_TMAP_BF16,	/* bfloat16 */
	TINYC_TMAP_F32,		/* float */
} tinyc_tmap_elem;

/* Encode a tiled TMA tensor map (cuTensorMapEncodeTiled) into map (a CUtensorMap: 128 bytes,
 * 64-byte aligned): `rank` dims of extents dims[] (innermost first), byte strides of dims
 * 1..rank-1 (multiples of 16), boxes of box[] elements, base 16-byte aligned, the given
 * shared-memory swizzle (0, 32, 64, 128 bytes), zero fill outside the tensor.  0 or -1
 * (CudaError; also when the driver has no TMA). */
int tinyc_cuda_tensor_map(tinyc_cuda *cu, void *map, tinyc_tmap_elem elem, int rank,
			  tinyc_devptr base, const uint64_t *dims, const uint64_t *strides_bytes,
			  const uint32_t *box, int swizzle_bytes);

/* Device memory. */
int tinyc_cuda_alloc(tinyc_cuda *cu, size_t bytes, tinyc_devptr *out);
int tinyc_cuda_free(tinyc_cuda *cu, tinyc_devptr p);
int tinyc_cuda_upload(tinyc_cuda *cu, tinyc_devptr dst, const void *src, size_t bytes);
int tinyc_cuda_download(tinyc_cuda *cu, void *dst, tinyc_devptr src, size_t bytes);
int tinyc_cuda_copy(tinyc_cuda *cu, tinyc_devptr dst, tinyc_devptr src, size_t bytes);
int tinyc_cuda_memset8(tinyc_cuda *cu, tinyc_devptr dst, unsigned char value, size_t bytes);
/* tinyc_cuda_memset8 enqueued on `stream` (NULL: the default stream). */
int tinyc_cuda_memset8_async(tinyc_cuda *cu, tinyc_devptr dst, unsigned char value, size_t bytes,
			     void *stream);
/* Wait for all work on the context. */
int tinyc_cuda_sync(tinyc_cuda *cu);
/* tinyc_cuda_sync after launching `kernel`: a failure names the kernel ("CudaError:
 * cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS: ... in kernel 'k0_Y'").  A fault that
 * leaves the context unusable (illegal address, launch failure, watchdog timeout, ...)
 * resets the primary context there, as every failing driver call does. */
int tinyc_cuda_sync_kernel(tinyc_cuda *cu, const char *kernel);
/* Whether the primary context was reset (after a fault) since cu was opened or renewed:
 * then every kernel loaded and every allocation made with cu before is gone, and freeing
 * them is a no-op (their addresses may belong to new allocations).  Callers that cache
 * kernels or memory drop them (tinyc_kernel_free, tinyc_cuda_free), then renew cu. */
int tinyc_cuda_stale(const tinyc_cuda *cu);
/* For a worker process (runtime/worker.h): a sticky fault is reported without the reset
 * (the worker exits instead), and tinyc_cuda_faulted says whether one happened. */
void tinyc_cuda_set_contained(tinyc_cuda *cu);
int tinyc_cuda_faulted(const tinyc_cuda *cu);
/* Start using the new context with cu (after tinyc_cuda_stale; a no-op otherwise). */
int tinyc_cuda_renew(tinyc_cuda *cu);
/* The device's free and total memory (cuMemGetInfo). */
int tinyc_cuda_mem_info(tinyc_cuda *cu, int64_t *free_bytes, int64_t *total_bytes);
/* "OutOfMemory: WHAT needs N bytes, M available on the GPU (NAME, T bytes in all)" on ctx
 * when need exceeds the device's free memory; 0 when it fits or is unknown. */
int tinyc_cuda_memory_check(tinyc_ctx *ctx, tinyc_cuda *cu, const char *what, int64_t need);
/* tinyc_cuda_memory_check on device 0, opened for the question; 0 without a GPU. */
int tinyc_gpu_memory_check(tinyc_ctx *ctx, const char *what, int64_t need);

/* Something to time: enqueue the work once (e.g. one tinyc_cuda_launch); 0 or -1. */
typedef int (*tinyc_launch_fn)(tinyc_cuda *cu, void *arg);

/* Run fn `warmup` times, then `iters` times each between two events, and store the median
 * of the event times in *median_ms (and every time in times_ms[iters] when not NULL). */
int tinyc_cuda_time(tinyc_cuda *cu, tinyc_launch_fn fn, void *arg, int warmup, int iters,
		    double *median_ms, double *times_ms);

/* Back-to-back timing: `warmup` calls, then one run of `iters` calls between two events;
 * *per_call_ms = elapsed / iters (the kernels' time plus the gaps the host leaves). */
int tinyc_cuda_time_run(tinyc_cuda *cu, tinyc_launch_fn fn, void *arg, int warmup, int iters,
			double *per_call_ms);
/* Whether the driver has stream capture and graphs (tinyc_cuda_time_graph). */
int tinyc_cuda_has_graphs(const tinyc_cuda *cu);
/* Graph-replay timing: `per_graph` calls of fn captured into one CUDA graph, replayed once
 * untimed and `replays` times between events; *per_call_ms = median replay / per_graph. */
int tinyc_cuda_time_graph(tinyc_cuda *cu, tinyc_launch_fn fn, void *arg, int per_graph,
			  int replays, double *per_call_ms);

/* tinyc_cuda_time for one kernel launch. */
int tinyc_cuda_time_launch(tinyc_cuda *cu, tinyc_kernel *k, tinyc_dim3 grid, tinyc_dim3 block,
			   unsigned dyn_smem_bytes, void **args, int warmup, int iters,
			   double *median_ms);

#endif
