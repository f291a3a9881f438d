/* Rearrange (seed 003): copy a tensor of any rank, shape and strides into another layout.
 *
 * The planner (seed §5.1) reduces a pair of layouts to a canonical problem and picks one
 * of two kernels with a cost model:
 *
 *   1. Canonical problem.  Dims of length 1 are dropped, the rest are sorted by destination
 *      stride (fastest first) and neighbours that are contiguous in both source and
 *      destination are merged.  An empty tensor is nothing to do; one contiguous run is a
 *      plain device-to-device copy (this covers ndim == 0).
 *   2. Elementwise plan.  The problem is rewritten in bytes; the vector unit is the largest
 *      of {32,16,8,4,2,1} bytes that divides the contiguous innermost run, every other
 *      stride of both tensors and the alignment the base pointers are known to have.
 *      Dims are taken greedily into the thread block in destination- and source-stride order
 *      (balancing the two); the first dim that does not fit is split into an inner block
 *      part and an outer grid part, with a constraint when the split is uneven.  Everything
 *      else is a grid dim.  One thread moves one unit.
 *   3. Tiled plan.  When the destination's contiguous dim differs from the source's (a
 *      transpose), group A is the chain of dims contiguous in the destination that starts
 *      there and group B the chain contiguous in the source; each group acts as one long
 *      dim (its offsets in the other tensor come from a decomposition by constant lengths).
 *      A 32x8-thread block moves a T x T tile of A x B through padded shared memory
 *      (T = 32 * pack * repeat): reads run along B, writes along A, both coalesced.  8- and
 *      16-bit elements are packed 4 or 2 to a 32-bit word; each thread moves `repeat` (1
 *      or 2) words per tile row, at word columns tx and tx + 32, so a repeat-2 tile keeps
 *      4x the bytes in flight per thread with the same conflict-free shared memory.
 *   4. Cost model.  Each candidate is charged the 32-byte sectors its warps touch (counted
 *      exactly on a representative block of each boundary class), plus per-instruction and
 *      per-block overheads; the cheaper plan wins and the dump shows both costs.
 *
 * All index arithmetic is fixed by the plan: the generated CUDA (codegen/rearrange_cuda.c)
 * folds every length and stride in as constants, and the host simulation
 * (sched/rearrange_sim.c) executes the same arithmetic, grid index by grid index and thread
 * by thread, so the property tests check the kernels' arithmetic, not a paraphrase of it.
 *
 * Base-pointer alignment is a runtime fact: a plan records the alignment it needs
 * (plan.align); tinyc_rearrange_calculate re-plans with a smaller unit when the pointers it
 * is given are less aligned.
 *
 * Ownership follows isl (__tinyc_give/__tinyc_take/__tinyc_keep).  Errors return a status
 * code and, when a context is given, a diagnostic with a Rearrange... kind.
 */
#ifndef TINYC_SCHED_REARRANGE_H
#define TINYC_SCHED_REARRANGE_H

#include <stdint.h>

#include "ir/ctx.h"
#include "ir/dtype.h"
#include "ir/uop.h"
#include "ir/target.h"
#include "sched/schedule.h"

#define TINYC_REARRANGE_MAX_NDIM 16	/* highest rank a rearrange accepts */
#define TINYC_REARRANGE_MAX_UNIT 32	/* widest vector unit, bytes */
#define TINYC_REARRANGE_PLAN_DIMS (TINYC_REARRANGE_MAX_NDIM + 3)	/* room in block/grid lists */

/* Status codes of the descriptor API (seed §5.6). */
typedef enum tinyc_rearrange_status {
	TINYC_REARRANGE_SUCCESS = 0,
	TINYC_REARRANGE_BAD_DTYPE,	/* x and y dtypes differ, or a dtype is not a tinyc dtype */
	TINYC_REARRANGE_BAD_SHAPE,	/* ndim or a length differs between x and y */
	TINYC_REARRANGE_BAD_PARAM,	/* NULL argument, rank out of range, negative length,
					 * overlapping destination, size overflow, plan not applicable */
	TINYC_REARRANGE_DEVICE_ERROR,	/* nvrtc, driver, or launch failure; no GPU */
	TINYC_REARRANGE_OUT_OF_MEMORY,	/* a host allocation failed */
} tinyc_rearrange_status;

/* A fixed message for each status ("dtype mismatch", ...). */
const char *tinyc_rearrange_status_message(tinyc_rearrange_status st);
/* Report a diagnostic of kind on ctx (when ctx is given) and return st. */
tinyc_rearrange_status tinyc_rearrange_fail(tinyc_ctx *ctx, tinyc_rearrange_status st,
					    const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* A tensor layout: what the seed calls a tensor descriptor.  The arrays are borrowed. */
typedef struct tinyc_tensor_desc {
	tinyc_dtype dtype;		/* element type */
	int ndim;			/* rank, 0 for a scalar */
	const int64_t *shape;		/* ndim lengths (kept, not owned) */
	const int64_t *strides;		/* ndim strides in elements (kept), NULL: row-major */
} tinyc_tensor_desc;

/* Which plans the planner may choose. */
typedef enum tinyc_rearrange_force {
	TINYC_REARRANGE_AUTO,		/* cost model decides */
	TINYC_REARRANGE_FORCE_ELEMENTWISE,	/* always the block/grid plan */
	TINYC_REARRANGE_FORCE_TILED,	/* the tiled plan, or BAD_PARAM if it does not apply */
} tinyc_rearrange_force;

/* Planner inputs besides the two layouts. */
typedef struct tinyc_rearrange_opts {
	int max_threads;		/* most threads in an elementwise block (default 1024) */
	int base_align;			/* bytes both base pointers are known to be aligned to
					 * (default 256, cudaMalloc's); any value >= 1 */
	tinyc_rearrange_force force;	/* plan selection (default AUTO) */
	int tile_repeat;		/* tiled: words each thread moves per tile row, 1 or 2
					 * (tile edge 32 * pack * repeat); 0 (default): the
					 * cost model picks */
	int no_copy;			/* 1: a single contiguous run gets an elementwise
					 * kernel instead of a COPY plan (the graph path, which
					 * launches kernels only); default 0 */
} tinyc_rearrange_opts;

/* Fill *o with the defaults. */
void tinyc_rearrange_opts_default(tinyc_rearrange_opts *o);

/* What a plan does. */
typedef enum tinyc_rearrange_kind {
	TINYC_REARRANGE_EMPTY,		/* no elements: nothing to launch */
	TINYC_REARRANGE_COPY,		/* one contiguous run: device-to-device copy */
	TINYC_REARRANGE_ELEMENTWISE,	/* block/grid dims, one unit per thread */
	TINYC_REARRANGE_TILED,		/* shared-memory tiled transpose */
} tinyc_rearrange_kind;

/* One loop of a plan: a length and the stride it advances both tensors by. */
typedef struct tinyc_rearrange_dim {
	int64_t len;			/* iterations */
	int64_t src;			/* source stride (elements in dim[], units in block/grid) */
	int64_t dst;			/* destination stride */
} tinyc_rearrange_dim;

/* A boundary constraint of a dim split into an inner and an outer part: a thread works only
 * if outer_index * per_block + inner_index < len. */
typedef struct tinyc_rearrange_constraint {
	int grid;			/* index in grid[] of the outer part */
	int inner;			/* elementwise: index in block[] of the inner part;
					 * tiled: 0 = tile rows (group A), 1 = tile columns (B) */
	int64_t per_block;		/* length of the inner part */
	int64_t len;			/* the dim's full length */
} tinyc_rearrange_constraint;

/* What the cost model charged one candidate. */
typedef struct tinyc_rearrange_cost {
	int valid;			/* 0: this candidate does not apply */
	int64_t sectors;		/* 32-byte sectors read plus written */
	int64_t mem_instrs;		/* warp-level global memory instructions */
	int64_t smem_instrs;		/* warp-level shared memory instructions */
	int64_t blocks;			/* thread blocks launched */
	double cost;			/* the total, in sector-equivalents */
} tinyc_rearrange_cost;

/* A complete plan: launch geometry plus every length and stride of the kernel. */
typedef struct tinyc_rearrange_plan {
	tinyc_rearrange_kind kind;	/* what to launch */
	tinyc_dtype dtype;		/* element type */
	int elem;			/* element size, bytes */
	int unit;			/* bytes per step of a block/grid stride: the vector unit
					 * (elementwise) or the element (tiled) */
	int pack;			/* tiled: elements per global access, a word of pack * elem
					 * <= 4 bytes (1, 2 or 4) */
	int align;			/* bytes both base pointers must be aligned to */
	int index_bits;			/* 32: every offset (in units) fits in int; else 64 */
	int64_t numel;			/* elements moved */
	int64_t copy_bytes;		/* COPY: bytes to copy */
	int64_t copy_offset;		/* COPY: byte offset of the run's start from both bases */
	int ndim;			/* dims of the canonical problem (elements, fastest first) */
	tinyc_rearrange_dim dim[TINYC_REARRANGE_MAX_NDIM];	/* merged dims, by dst stride */
	int nblock;			/* elementwise: block dims */
	tinyc_rearrange_dim block[TINYC_REARRANGE_PLAN_DIMS];	/* fastest (threadIdx.x % len) first */
	int ngrid;			/* grid dims */
	tinyc_rearrange_dim grid[TINYC_REARRANGE_PLAN_DIMS];	/* fastest (blockIdx.x % len) first */
	int ncons;			/* boundary constraints in use */
	tinyc_rearrange_constraint cons[2];	/* elementwise: at most one; tiled: two */
	int64_t threads;		/* threads per block (tiled: tx * ty) */
	int64_t blocks;			/* blocks in the (1-D) grid */
	int ntile_a;			/* tiled: dims of group A (tile rows) */
	tinyc_rearrange_dim tile_a[TINYC_REARRANGE_MAX_NDIM];	/* A: a chain of dims contiguous
					 * in the destination (dst 1, L1, L1*L2, ...), fastest first */
	int ntile_b;			/* tiled: dims of group B (tile columns) */
	tinyc_rearrange_dim tile_b[TINYC_REARRANGE_MAX_NDIM];	/* B: a chain contiguous in the
					 * source (src 1, L1, ...), fastest first */
	int64_t len_a, len_b;		/* tiled: elements in A and in B (products) */
	int tile;			/* tiled: tile edge T = 32 * pack * repeat, elements */
	int repeat;			/* tiled: words each thread moves per tile row: word
					 * columns tx + 32 j, j < repeat */
	int tile_pad;			/* tiled: extra elements per shared-memory row */
	int tx, ty;			/* tiled: block shape (32 x 8) */
	int rows_per_thread;		/* tiled: tile rows each thread moves per phase (T / ty) */
	int max_threads;		/* the option the plan was made with */
	int base_align;			/* the option the plan was made with */
	tinyc_rearrange_cost cost_elementwise;	/* cost model: the block/grid candidate */
	tinyc_rearrange_cost cost_tiled;	/* cost model: the tiled candidate (the cheaper of
					 * the two repeats) */
	tinyc_rearrange_cost cost_tiled_rep[3];	/* cost model: the tiled candidate with repeat
					 * 1 and 2 (index 0 unused) */
} tinyc_rearrange_plan;

/* Validate the layouts (as tinyc_rearrange_create does) and plan the copy y <- x into
 * *plan.  ctx may be NULL.  Returns SUCCESS or a status with a diagnostic on ctx. */
tinyc_rearrange_status tinyc_rearrange_plan_build(tinyc_ctx *ctx,
						  __tinyc_keep const tinyc_tensor_desc *y,
						  __tinyc_keep const tinyc_tensor_desc *x,
						  const tinyc_rearrange_opts *opts,
						  tinyc_rearrange_plan *plan);

/* The plan as deterministic text (the `--dump-stage=schedule` form of a rearrange). */
void tinyc_rearrange_plan_print(const tinyc_rearrange_plan *plan, tinyc_buf *out);

/* Name of a plan kind ("elementwise", ...). */
const char *tinyc_rearrange_kind_name(tinyc_rearrange_kind k);

/* ------------------------------------------------------------ host simulation ---- */

/* A host buffer for the simulation: element 0 lives at base, and the bytes
 * base[lo] .. base[hi - 1] may be touched. */
typedef struct tinyc_rearrange_buffer {
	unsigned char *base;		/* address of element 0 (kept) */
	int64_t lo;			/* first valid byte offset (<= 0) */
	int64_t hi;			/* one past the last valid byte offset */
} tinyc_rearrange_buffer;

/* Execute the plan on host memory exactly as the generated kernel computes it: for every
 * block and every thread, the same index decomposition, constraint checks, 32/64-bit offsets,
 * unit accesses and (tiled) shared-memory tile.  Checks what the GPU would not: out-of-bounds
 * and misaligned accesses, offsets that overflow the plan's index width, a destination byte
 * written twice, a shared-memory index out of its tile.  *bytes_written (if not NULL) gets the
 * number of destination bytes stored.  Returns 0, or -1 with a RearrangeSim... diagnostic. */
int tinyc_rearrange_simulate(tinyc_ctx *ctx, const tinyc_rearrange_plan *plan,
			     tinyc_rearrange_buffer y, tinyc_rearrange_buffer x,
			     int64_t *bytes_written);

/* ---------------------------------------------------------- graph recognition ---- */

/* A pure movement recognised in a UOp graph: y[i] = x[i] for every index i of shape, where
 * each tensor is a strided view of its buffer's storage (element 0 of the view at
 * `offset` elements from the storage's element 0; strides in elements, may be negative on
 * the source: FLIP, or 0: EXPAND). */
typedef struct tinyc_rearrange_copy {
	int value;			/* the node whose value is stored (OUTPUT's operand) */
	int src;			/* the node read: a BUFFER, or a materialised value */
	tinyc_dtype dtype;		/* element type of both */
	int ndim;			/* rank of the stored value */
	int64_t shape[TINYC_REARRANGE_MAX_NDIM];	/* its lengths */
	int64_t ys[TINYC_REARRANGE_MAX_NDIM];	/* destination strides (OUTPUT strides= or
					 * row-major) */
	int64_t xs[TINYC_REARRANGE_MAX_NDIM];	/* source strides, composed through the chain */
	int64_t y_offset;		/* destination: element offset of element 0 (0) */
	int64_t x_offset;		/* source: element offset of element 0 */
} tinyc_rearrange_copy;

/* Decide whether OUTPUT node `output` of the verified graph g stores a pure movement of one
 * BUFFER: a chain of RESHAPE, PERMUTE, EXPAND, SHRINK, FLIP and CONTIGUOUS, which is
 * composed into one strided view (a RESHAPE must be expressible as a view of the layout it
 * reshapes).  b (may be NULL) gives symbol values: every size and stride must be known.
 * Returns 1 and fills *c; 0 when it is not a rearrange, with the reason in *why (when not
 * NULL), e.g. "%5 = RESHAPE of strides [1,4] to [8]: dims 0 and 1 are not contiguous".
 * Never reports diagnostics. */
int tinyc_rearrange_recognize(const tinyc_graph *g, const tinyc_bindings *b, int output,
			      tinyc_rearrange_copy *c, tinyc_buf *why);

/* The same for the value node `value` of a schedule kernel, stopping the chain at any node
 * whose is_source[] entry is non-zero (a materialised value: its buffer is read, row-major
 * unless it is a BUFFER with strides=); the destination layout is ys (NULL: row-major). */
int tinyc_rearrange_recognize_value(const tinyc_graph *g, const tinyc_bindings *b, int value,
				    const unsigned char *is_source, const int64_t *ys,
				    tinyc_rearrange_copy *c, tinyc_buf *why);

/* ------------------------------------------------------- the schedule provider ---- */

/* The ext of a TINYC_PLAN_REARRANGE candidate. */
typedef struct tinyc_rearrange_kplan {
	tinyc_rearrange_copy copy;	/* what the kernel moves */
	int x_buf, y_buf;		/* schedule buffers read and written */
	tinyc_rearrange_plan plan;	/* the plan (elementwise or tiled, never COPY) */
} tinyc_rearrange_kplan;

/* The rearrange provider (listed in sched/plan.c after the generic one): a kernel whose
 * stored value is a pure movement of one buffer of the same dtype gets the elementwise and
 * the tiled rearrange plans (repeat 1, and repeat 2 where the cost model prefers it to
 * repeat 1) as candidates, estimated from the seed-003 cost model (sectors,
 * instructions and blocks as DRAM bytes), and loses the generic candidates: it becomes one
 * rearrange kernel.  Kernels with unbound sizes or strides, an overlapping OUTPUT, a
 * dtype change or a non-movement op keep the generic plans. */
extern const tinyc_plan_provider tinyc_plan_rearrange;

/* Schedule dump lines of kernel k (called by tinyc_schedule_print after the choice): the
 * chosen rearrange plan (tinyc_rearrange_plan_print's text, indented), or, for a kernel
 * whose value is a movement chain that is not a rearrange, the reason.  Nothing for other
 * kernels. */
void tinyc_rearrange_schedule_print(const tinyc_schedule *s, const tinyc_skernel *k,
				    tinyc_buf *out);

#endif
