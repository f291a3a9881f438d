/* runtime/worker.h: GPU work in a worker process, so that a kernel's fault or hang cannot take
 * the caller's process with it (issue 18, docs/reliability.md "GPU faults").
 *
 * A CUDA fault (illegal address, launch failure, ...) is sticky: the driver refuses every
 * later call in that process, a context reset included.  So the GPU part of a host-buffer
 * run is a plan of plain data (buffers, kernel images, evaluated grids and arguments) that a
 * worker process executes: the executable tinyc-gpu-worker, started lazily (posix_spawn, so
 * nothing of the caller runs between fork and exec), owning its CUDA context.  Inputs and
 * outputs travel through shared memory (a memfd mapped by both, sent with each request over
 * a socket pair); the plan and the replies through the socket.
 *
 * A fault poisons only the worker: it reports the diagnostic and exits; a worker that dies
 * or does not finish within the time limit is killed.  Either way the caller gets a
 * diagnostic with the kernel's name and "(the GPU worker was restarted)", and the next run
 * starts a fresh worker with a fresh context.
 *
 * The worker has a fake device (--fake): host memory and a few named host "kernels"
 * (tinyc_worker_fake_ops), so that the protocol, the transfers, a dying worker and a
 * timeout are tested on machines without a GPU.
 */
#ifndef TINYC_RUNTIME_WORKER_H
#define TINYC_RUNTIME_WORKER_H

#include <stdint.h>

#include "ir/ctx.h"
#include "ir/target.h"
#include "runtime/runtime.h"

/* What a buffer of a plan holds before and after the run. */
typedef enum tinyc_wbuf_role {
	TINYC_WB_TEMP,		/* zeroed on the device, never transferred */
	TINYC_WB_INPUT,		/* uploaded from shared memory */
	TINYC_WB_OUTPUT,	/* zeroed, downloaded into shared memory after the kernels */
} tinyc_wbuf_role;

/* One device buffer of a plan. */
typedef struct tinyc_wbuf {
	uint64_t bytes;		/* device bytes (at least 1) */
	uint64_t io_bytes;	/* bytes transferred (inputs, outputs); 0 for temporaries */
	uint64_t shm_off;	/* where its bytes lie in the shared memory */
	int32_t role;		/* tinyc_wbuf_role */
	int32_t pad;		/* zero */
} tinyc_wbuf;

/* Kinds of kernel parameters. */
typedef enum tinyc_wparam_kind {
	TINYC_WP_PTR,		/* a buffer's device address */
	TINYC_WP_I32,		/* a 32-bit integer */
	TINYC_WP_I64,		/* a 64-bit integer */
	TINYC_WP_TMAP,		/* a TMA tensor map over a buffer, encoded by the worker */
} tinyc_wparam_kind;

/* A tiled tensor map's description (tinyc_cuda_tensor_map's arguments, the base as a buffer
 * and a byte offset). */
typedef struct tinyc_wtmap {
	uint64_t offset_bytes;	/* origin: the buffer's address plus this */
	uint64_t dims[5];	/* extents, innermost first */
	uint64_t strides[5];	/* byte strides of dims 1..rank-1 */
	uint32_t box[5];	/* box extents */
	int32_t elem;		/* tinyc_tmap_elem */
	int32_t rank;		/* dims used */
	int32_t swizzle;	/* shared-memory swizzle, bytes */
} tinyc_wtmap;

/* One kernel parameter. */
typedef struct tinyc_wparam {
	int32_t kind;		/* tinyc_wparam_kind */
	int32_t buf;		/* PTR, TMAP: the buffer */
	int64_t val;		/* I32, I64: the value */
	tinyc_wtmap tmap;	/* TMAP: the map */
} tinyc_wparam;

/* One kernel launch of a plan. */
typedef struct tinyc_wkernel {
	char name[128];		/* the kernel's function name */
	unsigned grid[3];	/* grid extents (all > 0) */
	unsigned block[3];	/* block extents */
	unsigned smem;		/* dynamic shared memory, bytes */
	int pdl;		/* launched with programmatic stream serialization */
	int nparam;		/* parameters */
	tinyc_wparam *params;	/* nparam parameters (borrowed) */
	const tinyc_blob *image;	/* CUBIN or PTX (borrowed); the fake device: "fake:OP" */
} tinyc_wkernel;

/* What a worker executes: allocate the buffers, upload the inputs, launch the kernels in
 * order (synchronising after each), download the outputs. */
typedef struct tinyc_wplan {
	int nbuf;		/* buffers */
	tinyc_wbuf *bufs;	/* nbuf buffers (borrowed) */
	int nkernel;		/* launches */
	tinyc_wkernel *kernels;	/* nkernel launches (borrowed) */
} tinyc_wplan;

/* A worker process: NULL until needed, restarted after a fault, a death or a timeout. */
typedef struct tinyc_worker tinyc_worker;

/* A handle for a worker running `exe` (copied), on the fake device when fake is set.  No
 * process is started yet.  NULL when out of memory. */
__tinyc_give tinyc_worker *tinyc_worker_new(const char *exe, int fake);
/* Stop the worker process (if any) and free the handle. */
void tinyc_worker_free(__tinyc_take tinyc_worker *w);
/* The worker's device (starting the worker when none runs): its properties, or NULL with a
 * diagnostic (NoGpu, CudaError, GpuWorkerError). */
const tinyc_device_info *tinyc_worker_device(tinyc_ctx *ctx, tinyc_worker *w);
/* The worker's process id, 0 when none runs (for tests). */
int tinyc_worker_pid(const tinyc_worker *w);

/* Execute plan in the worker (starting it when none runs).  in[b] is the host data of input
 * buffer b (bufs[b].io_bytes bytes), out[b] receives output buffer b; other entries are
 * unused.  timeout_s > 0 limits the run (the worker's start-up aside).  0, or -1 with the
 * worker's diagnostics; after a fault, a death or a timeout the worker is gone and the
 * diagnostic says "(the GPU worker was restarted)" ("GpuTimeout: kernel 'K' did not finish
 * within N s ...").  The next call starts a fresh worker. */
int tinyc_worker_run(tinyc_ctx *ctx, tinyc_worker *w, const tinyc_wplan *plan,
		     const void *const *in, void *const *out, double timeout_s);

/* The worker process's loop on socket fd (tinyc-gpu-worker's main): report the device, then
 * execute each plan sent, until the socket closes or a fault poisons the context.  Returns
 * the process's exit status. */
int tinyc_worker_main(int fd, int fake);

/* The fake device's kernels, for the tests: "fake:fma" (params x, w, y pointers to floats and
 * n as I64: y = x * w + x), "fake:fault" (a sticky fault at the next synchronisation),
 * "fake:crash" (the worker dies: SIGKILL), "fake:hang" (never returns). */
#define TINYC_WORKER_FAKE_OPS "fma fault crash hang"

#endif
