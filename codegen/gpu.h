/* codegen/ (GPU IR part): schedule -> GPU IR -> CUDA text.
 *
 *   emit.c        the value emitter: the fused elementwise/movement expression of a UOp
 *                 value at an index, as GPU IR (loads at the IndexBook's AxisMaps, PAD
 *                 guards as load predicates, REDUCEs as loops); used by every builder,
 *                 and by the contraction template for its epilogue (the `leaf` hook
 *                 substitutes the accumulator for the REDUCE).
 *   isl_kernel.c  MAP and ROWRED kernels: an isl domain per kernel (symbols as parameters),
 *                 a schedule tree tiled and bound to blocks and threads PPCG-style, isl's
 *                 AST generator, and the walk of the AST into GPU IR.
 *   rowfuse.c     ROWFUSE kernels: a row group (row reductions and the ops between them)
 *                 as one kernel, a warp or block per row (sched/rowfuse.h).
 *   gpuir_pass.c  the "gpuir" pass: buffers, and one builder call per planned kernel
 *                 (dispatched on the plan kind: a new template registers its builder there).
 *   cuda.c        GPU IR -> CUDA C text (the "cuda" pass).
 *
 * Numerics follow the reference evaluator (ir/eval.c): 16-bit floats are computed in float
 * and rounded where the reference materialises them; integer division by 0 gives 0; shift
 * counts are masked to the width; MAX on floats ignores NaN.
 */
#ifndef TINYC_CODEGEN_GPU_H
#define TINYC_CODEGEN_GPU_H

#include "ir/gpuir.h"
#include "ir/uop.h"
#include "ir/tensor.h"
#include "lower/lower.h"
#include "runtime/runtime.h"
#include "sched/schedule.h"

/* ---- emit.c ---- */

typedef struct tinyc_emit tinyc_emit;

/* Hook of the emitter: return the value of `node` at index idx (node's rank entries) to
 * use instead of computing it (e.g. a contraction's accumulator), or NULL to compute it. */
typedef tinyc_gexpr *(*tinyc_emit_leaf_fn)(tinyc_emit *em, int node, tinyc_gexpr *const *idx,
					   void *user);

/* The emitter of one kernel of schedule s. */
struct tinyc_emit {
	tinyc_ctx *ctx;			/* diagnostics */
	tinyc_gkernel *k;		/* the kernel being built */
	const tinyc_schedule *s;	/* the schedule (buffers, which values are materialised) */
	const tinyc_indexbook *ib;	/* AxisMaps of every value */
	const tinyc_graph *g;		/* = s->g */
	int kernel;			/* index of the schedule kernel */
	int *buf_param;			/* per schedule buffer: PARAM_PTR var, or -1 */
	unsigned char *nonneg;		/* per kernel var: known to be >= 0 (grows) */
	int capnonneg;			/* entries of nonneg */
	struct emit_memo *memo;		/* values computed so far, by scope */
	int nmemo, capmemo;		/* memo entries */
	int *memo_head;			/* per graph node: its newest memo entry, or -1 */
	int depth;			/* current loop scope depth */
	tinyc_emit_leaf_fn leaf;	/* substitution hook, or NULL */
	void *leaf_user;		/* its argument */
	int error;			/* set when something failed (diagnostic reported) */
};

/* A new emitter for kernel `kernel` of s, building into k.  Pointer parameters are created
 * for the buffers the kernel reads (in buffer order, const) and the one it writes. */
__tinyc_give tinyc_emit *tinyc_emit_alloc(tinyc_ctx *ctx, tinyc_gkernel *k,
					  const tinyc_schedule *s, const tinyc_indexbook *ib,
					  int kernel);
void tinyc_emit_free(__tinyc_take tinyc_emit *em);
/* The dtype GPU IR computes a value of dtype dt in: float for half/bfloat16, else dt. */
tinyc_dtype tinyc_emit_compute_dtype(tinyc_dtype dt);
/* The value of `node` at idx (node's rank entries, index dtype), in its compute dtype.
 * Loads, lets and reduction loops are appended to `block`.  pred (or NULL) is the
 * condition under which the value is needed: loads are predicated by it (zero-filling).
 * Returns NULL on failure (em->error set). */
tinyc_gexpr *tinyc_emit_value(tinyc_emit *em, tinyc_gstmt *block, int node,
			      tinyc_gexpr *const *idx, tinyc_gexpr *pred);
/* Convert a value from compute dtype to the dtype of buffer b and store it at idx
 * (the buffer's logical rank entries). */
tinyc_gstmt *tinyc_emit_store(tinyc_emit *em, int buf, tinyc_gexpr *const *idx,
			      tinyc_gexpr *value, tinyc_gexpr *pred);
/* The element offset of logical index idx in buffer b (row-major, or its strides). */
tinyc_gexpr *tinyc_emit_buf_offset(tinyc_emit *em, int buf, tinyc_gexpr *const *idx);
/* A dim as an index expression: a constant, or the PARAM_INT of its symbol. */
tinyc_gexpr *tinyc_emit_dim(tinyc_emit *em, const tinyc_dim *d);
/* A dim as a module-level expression (constants and SYM), for grid extents. */
tinyc_gexpr *tinyc_emit_dim_sym(tinyc_emit *em, const tinyc_dim *d);
/* Index of `operand`-th operand of node at the node's index idx through the IndexBook's
 * AxisMap (operand's rank entries into out); *guard receives the map's guard (PAD) or NULL.
 * Not for REDUCE nodes (their iteration space has the reduced axes). */
int tinyc_emit_operand_index(tinyc_emit *em, int node, int operand, tinyc_gexpr *const *idx,
			     tinyc_gexpr **out, tinyc_gexpr **guard);
/* Record that variable v is non-negative (loop iterators from 0, block/thread ids), which
 * lets floor division and mod by constants become plain C division. */
void tinyc_emit_set_nonneg(tinyc_emit *em, int v);
/* Whether e is provably >= 0. */
int tinyc_emit_is_nonneg(tinyc_emit *em, const tinyc_gexpr *e);
/* The identity of a REDUCE op in dtype dt (compute dtype). */
tinyc_gexpr *tinyc_emit_red_identity(tinyc_emit *em, tinyc_redop op, tinyc_dtype dt);
/* acc `op` v in dtype dt, with the reference's semantics (MAX ignores NaN; bool: or/and). */
tinyc_gexpr *tinyc_emit_red_combine(tinyc_emit *em, tinyc_redop op, tinyc_gexpr *acc,
				    tinyc_gexpr *v);
/* Enter / leave a loop scope (memoised values computed inside are forgotten on leave). */
void tinyc_emit_scope_enter(tinyc_emit *em);
void tinyc_emit_scope_leave(tinyc_emit *em);

/* ---- isl_kernel.c ---- */

/* Build kernel `kernel` of s (a MAP or ROWRED plan) into gm.  0 or -1. */
int tinyc_isl_kernel_build(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_schedule *s,
			   const tinyc_indexbook *ib, int kernel);

/* ---- rowfuse.c ---- */

/* Build kernel `kernel` of s (a ROWFUSE plan: a row group, sched/rowfuse.h) into gm: a warp
 * or block per row, one phase per row reduction, the row kept in registers when the plan
 * says so.  0 or -1. */
int tinyc_rowfuse_build(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_schedule *s,
			const tinyc_indexbook *ib, int kernel);

/* ---- gpuir_pass.c ---- */

/* A GPU IR builder for one plan kind. */
typedef struct tinyc_gpu_builder {
	tinyc_plan_kind kind;	/* the plan kind it builds */
	int (*build)(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_schedule *s,
		     const tinyc_indexbook *ib, int kernel);
} tinyc_gpu_builder;

/* The GPU IR module of a planned schedule: buffers (as in s) and kernels in launch order. */
__tinyc_give tinyc_gpu_module *tinyc_gpuir_build(tinyc_ctx *ctx, const tinyc_schedule *s,
						 const tinyc_indexbook *ib);

/* ---- cuda.c ---- */

/* The CUDA text of a module: headers and helpers, then each kernel preceded by
 *   // kernel NAME: grid (gx, gy, gz), block (bx, by, bz), smem N bytes
 * and declared `extern "C" __global__`.  0 or -1. */
int tinyc_cuda_print(tinyc_ctx *ctx, const tinyc_gpu_module *m, tinyc_buf *out);

/* The CUDA text of kernel i alone (the same headers and helpers): the translation unit
 * the runtime compiles, so each kernel gets its own nvrtc time and cache entry. */
int tinyc_cuda_print_kernel(tinyc_ctx *ctx, const tinyc_gpu_module *m, int i, tinyc_buf *out);

/* The "cuda" stage's IR: the text. */
typedef struct tinyc_cuda_text {
	char *text;		/* the CUDA source (owned) */
	size_t len;		/* its length */
} tinyc_cuda_text;

/* The whole module's CUDA text, or NULL (diagnostics). */
__tinyc_give tinyc_cuda_text *tinyc_cuda_text_build(tinyc_ctx *ctx, const tinyc_gpu_module *gm);
/* Every kernel of gm appears in t with its launch comment, and braces balance.  0 or -1. */
int tinyc_cuda_text_verify(tinyc_ctx *ctx, const tinyc_cuda_text *t, const tinyc_gpu_module *gm);
void tinyc_cuda_text_free(__tinyc_take tinyc_cuda_text *t);

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
