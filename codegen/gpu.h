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
#include "ir/target.h"
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

/* The 3xTF32 split (codegen/tf32_tile.c): hi[hidx] = tf32(x), lo[lidx] = tf32(x - hi[hidx])
 * (tf32: PTX's cvt.rna.tf32.f32, as integer arithmetic on the bits) appended to blk.
 * 0, or -1 when a statement could not be built. */
int tinyc_tf32_split(tinyc_gkernel *k, tinyc_gstmt *blk, tinyc_gexpr *x, int hi, tinyc_gexpr *hidx,
		     int lo, tinyc_gexpr *lidx);

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

#endif
