/* GPU IR (DESIGN.md §1, seed 002 §6): the kernels tinyc hands to the CUDA printer.
 *
 * A module holds kernels and the buffers they exchange.  A kernel has
 *   - variables: parameters (global pointers with dtype and const-ness, integer scalars
 *     carrying size symbols, TMA descriptors), shared arrays (static or placed in the
 *     dynamic segment, with an alignment), register scalars and register arrays;
 *   - a launch configuration: grid extents as expressions over the size symbols, fixed
 *     block extents, dynamic shared memory bytes;
 *   - a body: a statement tree.
 *
 * Statements: block, for (general condition, step, unroll hint), if, decl (register scalar
 * with optional initial value, or register array with optional fill value), assign,
 * store (optionally predicated), atomic, barrier, warp shuffle, copy (vectorised, zero
 * filling when its predicate is false; synchronous or cp.async), cp.async commit/wait,
 * ldmatrix(.trans), mma.sync m16n8k16, mbarrier init/expect_tx/arrive/wait, TMA tensor
 * loads, fences and comments; for Hopper (sm_90a) the warpgroup statements wgmma.fence,
 * wgmma.mma_async (operands in swizzled shared tiles), wgmma.commit_group/wait_group and
 * setmaxnreg.  A tensor-map parameter carries the description of the tensor it maps.  Expressions: integer and float constants, variables, size
 * symbols (module level only), thread/block ids and dims, loads (optionally predicated:
 * zero when the predicate is false), unary/binary/select/cast/bitcast, math calls.
 *
 * Typing: there is no implicit promotion.  Both operands of an arithmetic, bitwise or
 * comparison operator have one dtype; comparisons and the logical operators produce bool;
 * indices are integers; predicates and conditions are bool.  Arithmetic on half/bfloat16
 * rounds its result to the 16-bit type (as __hadd etc. do); tinyc's own lowering computes
 * 16-bit values in float and rounds only where the reference semantics materialise them.
 * DIV and MOD truncate toward zero (C); FLOORDIV rounds toward -inf (isl's fdiv_q).
 * MIN and MAX on floats follow fminf/fmaxf (a NaN operand yields the other operand).
 *
 * Everything a kernel owns (variables, expressions, statements, strings) lives in the
 * module's arena and is freed with the module, so expressions may be shared freely
 * (a DAG).  Builders propagate NULL in the manner of isl: a constructor given a NULL
 * operand returns NULL, and an allocation failure reports OutOfMemory on the context.
 *
 * Warp-level and asynchronous operations (ldmatrix, mma, cp.async, mbarrier, TMA) are
 * designed for the tensor-core templates; their operand conventions are documented at
 * each constructor.  A pipeline (tinyc_gpipe) names a ring of `stages` buffers filled by
 * cp.async groups or by TMA with one mbarrier per stage; the statements that advance it
 * carry its index so the verifier and the dumps can relate them.
 */
#ifndef TINYC_IR_GPUIR_H
#define TINYC_IR_GPUIR_H

#include <stdint.h>

#include "ir/ctx.h"
#include "ir/dtype.h"
#include "ir/scalar.h"
#include "ir/uop.h"

/* ---------------------------------------------------------------- variables ---- */

typedef enum tinyc_gvar_kind {
	TINYC_GV_PARAM_PTR,	/* parameter: global pointer to `dtype` elements */
	TINYC_GV_PARAM_INT,	/* parameter: integer scalar (a size symbol), dtype int/long */
	TINYC_GV_PARAM_TMAP,	/* parameter: a TMA tensor map (CUtensorMap, __grid_constant__) */
	TINYC_GV_SHARED,	/* shared array of `count` elements */
	TINYC_GV_REG,		/* register scalar (also loop iterators) */
	TINYC_GV_REG_ARRAY,	/* register array of `count` elements (fragments, accumulators) */
} tinyc_gvar_kind;

/* One variable of a kernel; referred to by its index in the kernel's vars. */
typedef struct tinyc_gvar {
	tinyc_gvar_kind kind;	/* what it is */
	char *name;		/* unique C identifier within the kernel (builder sanitises) */
	tinyc_dtype dtype;	/* element / value type (TINYC_DTYPE_NONE for TMAP) */
	int is_const;		/* PARAM_PTR: the kernel only reads through it */
	int64_t count;		/* SHARED, REG_ARRAY: number of elements */
	int align;		/* SHARED, REG_ARRAY: byte alignment (power of two, >= element
				 * size; 0 for a REG_ARRAY: its element's) */
	int dynamic;		/* SHARED: placed in the dynamic segment at `offset` */
	int64_t offset;		/* SHARED dynamic: byte offset in the dynamic segment */
	int sym;		/* PARAM_INT: graph symbol it carries, else -1 */
	int buf;		/* PARAM_PTR: module buffer it points to, else -1 */
	int is_param;		/* 1 for the PARAM_* kinds */
	struct tinyc_gtmap *tmap;	/* PARAM_TMAP: the tensor it describes, or NULL */
} tinyc_gvar;

/* What a tensor map parameter (TINYC_GV_PARAM_TMAP) describes: the host builds the
 * CUtensorMap at launch (cuTensorMapEncodeTiled) from the buffer's device address and
 * these module-level expressions (constants and size symbols) evaluated under the
 * symbols' values.  Loads outside the tensor are zero-filled by the hardware. */
typedef struct tinyc_gtmap {
	int buf;			/* module buffer it views */
	tinyc_dtype dtype;		/* element type (the buffer's) */
	int rank;			/* dimensions, 1..5 */
	struct tinyc_gexpr *dim[5];	/* extents, innermost first */
	struct tinyc_gexpr *stride[5];	/* element strides; stride[0] must be the constant 1 */
	struct tinyc_gexpr *offset;	/* element offset of the origin in the buffer */
	int box[5];			/* box extents, innermost first (<= 256) */
	int swizzle;			/* shared-memory swizzle span in bytes: 0, 32, 64, 128 */
} tinyc_gtmap;

/* -------------------------------------------------------------- expressions ---- */

/* The expression operators: X(ENUM, dump name, C spelling, precedence, operands).
 *   C spelling  the operator of an infix (binary) or prefix (unary) expression in both the
 *               GPU IR dump and CUDA; NULL: printed as a call or a special form
 *   precedence  C's, for minimal parentheses (higher binds tighter; 13: a primary)
 *   operands    arg[0..n) that must be present (LOAD's predicate and CALL's further
 *               arguments are optional) */
#define TINYC_GX_OPS(X)                                                                          \
	X(INT, "int", NULL, 13, 0)          /* integer (or bool) constant `ival` */              \
	X(FLOAT, "float", NULL, 13, 0)      /* floating constant `fval` (inf/nan allowed) */     \
	X(VAR, "var", NULL, 13, 0)          /* value of a REG or PARAM_INT variable `var` */     \
	X(SYM, "sym", NULL, 13, 0)          /* graph size symbol `sym` (module-level only) */    \
	X(SPECIAL, "special", NULL, 13, 0)  /* thread/block id or dim `special` */               \
	X(LOAD, "load", NULL, 13, 1)        /* var[arg0], or (arg1 ? var[arg0] : 0) with arg1 */ \
	X(NEG, "neg", "-", 12, 1)           /* -a */                                             \
	X(NOT, "not", "!", 12, 1)           /* !a (bool) */                                      \
	X(BITNOT, "bitnot", "~", 12, 1)     /* ~a (integers) */                                  \
	X(ADD, "add", "+", 10, 2)                                                                \
	X(SUB, "sub", "-", 10, 2)                                                                \
	X(MUL, "mul", "*", 11, 2)                                                                \
	X(DIV, "div", "/", 11, 2)           /* floats: a / b; integers: truncating (C) */        \
	X(MOD, "mod", "%", 11, 2)           /* integers: C remainder (sign of a) */              \
	X(FLOORDIV, "floordiv", NULL, 13, 2) /* integers: floor(a / b), b > 0 (isl fdiv_q) */    \
	X(MIN, "min", NULL, 13, 2)                                                               \
	X(MAX, "max", NULL, 13, 2)                                                               \
	X(AND, "and", "&", 6, 2)            /* bitwise (bool: logical, both evaluated) */        \
	X(OR, "or", "|", 4, 2)                                                                   \
	X(XOR, "xor", "^", 5, 2)                                                                 \
	X(SHL, "shl", "<<", 9, 2)                                                                \
	X(SHR, "shr", ">>", 9, 2)           /* arithmetic for signed, logical for unsigned */    \
	X(LAND, "land", "&&", 3, 2)         /* a && b (bool, short-circuit) */                   \
	X(LOR, "lor", "||", 2, 2)           /* a || b (bool, short-circuit) */                   \
	X(LT, "lt", "<", 8, 2)                                                                   \
	X(LE, "le", "<=", 8, 2)                                                                  \
	X(GT, "gt", ">", 8, 2)                                                                   \
	X(GE, "ge", ">=", 8, 2)                                                                  \
	X(EQ, "eq", "==", 7, 2)                                                                  \
	X(NE, "ne", "!=", 7, 2)                                                                  \
	X(SELECT, "select", NULL, 1, 3)     /* arg0 ? arg1 : arg2 (only the chosen arm runs) */  \
	X(CAST, "cast", NULL, 13, 1)        /* value conversion of arg0 to dtype */              \
	X(BITCAST, "bitcast", NULL, 13, 1)  /* arg0's bits (same size) as dtype */               \
	X(CALL, "call", NULL, 13, 1)        /* math function `math` of arg0[, arg1, arg2] */

typedef enum tinyc_gx_op {
#define X(e, name, spelling, prec, nargs) TINYC_GX_##e,
	TINYC_GX_OPS(X)
#undef X
	TINYC_GX_OP_COUNT,
} tinyc_gx_op;

/* Thread and block coordinates (all of dtype int). */
typedef enum tinyc_gspecial {
	TINYC_GSP_TID_X, TINYC_GSP_TID_Y, TINYC_GSP_TID_Z,	/* threadIdx */
	TINYC_GSP_BID_X, TINYC_GSP_BID_Y, TINYC_GSP_BID_Z,	/* blockIdx */
	TINYC_GSP_NTID_X, TINYC_GSP_NTID_Y, TINYC_GSP_NTID_Z,	/* blockDim */
	TINYC_GSP_NBID_X, TINYC_GSP_NBID_Y, TINYC_GSP_NBID_Z,	/* gridDim */
	TINYC_GSP_LANE,		/* linear thread index % 32 */
	TINYC_GSP_WARP,		/* linear thread index / 32 */
	TINYC_GSP_COUNT,
} tinyc_gspecial;

/* Math functions: tinyc_gmath, the table in ir/scalar.h. */

typedef struct tinyc_gexpr {
	tinyc_gx_op op;			/* the operator */
	tinyc_dtype dtype;		/* result type */
	struct tinyc_gexpr *arg[3];	/* operands (NULL where unused) */
	int64_t ival;			/* INT */
	double fval;			/* FLOAT */
	int var;			/* VAR, LOAD: variable index; -1 otherwise */
	int sym;			/* SYM: graph symbol index */
	tinyc_gspecial special;		/* SPECIAL */
	tinyc_gmath math;		/* CALL */
} tinyc_gexpr;

/* --------------------------------------------------------------- statements ---- */

typedef enum tinyc_gs_op {
	TINYC_GS_BLOCK,		/* stmts[0..nstmts) in order, one scope */
	TINYC_GS_FOR,		/* for (dst.var = init; cond; dst.var += step) body */
	TINYC_GS_IF,		/* if (cond) body else else_body */
	TINYC_GS_DECL,		/* declare dst.var: REG (value = initial value or NULL),
				 * REG_ARRAY (value = fill value for every element or NULL) */
	TINYC_GS_ASSIGN,	/* dst.var = value (REG) */
	TINYC_GS_STORE,		/* if (pred) dst.var[dst.index] = value (global/shared/reg array) */
	TINYC_GS_ATOMIC,	/* if (pred) atomic `atomic_op` of value into dst.var[dst.index] */
	TINYC_GS_BARRIER,	/* __syncthreads(); flag 1: the cluster's barrier
				 * (barrier.cluster.arrive.release + wait.acquire; may
				 * sit under warp-uniform branches: every warp reaches
				 * it equally often) */
	TINYC_GS_SHFL,		/* dst.var = shuffle `shfl`(value, lane, width = n) over the full warp */
	TINYC_GS_COPY,		/* n elements: dst.var[dst.index + i] = pred ? src.var[src.index + i] : 0;
				 * one vector access of n * size bytes (4, 8 or 16 when n > 1, aligned);
				 * async: cp.async (global -> shared, n*size in {4, 8, 16});
				 * value (optional): the rank of the cluster's CTA whose shared
				 * memory src is (mapa + ld.shared::cluster into a REG_ARRAY dst
				 * of 4-byte elements, no predicate) */
	TINYC_GS_CP_COMMIT,	/* cp.async.commit_group (pipeline `pipe`) */
	TINYC_GS_CP_WAIT,	/* cp.async.wait_group n: at most n groups still pending */
	TINYC_GS_LDMATRIX,	/* ldmatrix.sync.aligned.m8n8.x{n}[.trans].shared.b16:
				 * dst.var (REG_ARRAY) at element dst.index receives n 32-bit regs;
				 * src.var (SHARED) at element src.index is this lane's row address */
	TINYC_GS_MMA,		/* mma.sync.aligned.m16n8k16.row.col.f32.T.T.f32 (T = half/bfloat16),
				 * or m16n8k8 .tf32 when A and B are float arrays:
				 * D = dst, A = src, B = src2, C = src3 (REG_ARRAYs at element offsets) */
	TINYC_GS_MBAR_INIT,	/* mbarrier.init.shared.b64 [dst], n (arrival count) */
	TINYC_GS_MBAR_EXPECT_TX,	/* mbarrier.arrive.expect_tx.shared.b64 [dst], value bytes */
	TINYC_GS_MBAR_ARRIVE,	/* mbarrier.arrive.shared.b64 [dst]; value (optional): the
				 * rank of the cluster's CTA whose barrier at dst's offset
				 * receives the arrival (mapa; .release.cta) */
	TINYC_GS_MBAR_WAIT,	/* wait on [dst] until the phase with parity `value` completed */
	TINYC_GS_TMA_LOAD,	/* cp.async.bulk.tensor.{n}d.shared::cluster.global.mbarrier:
				 * box at coord[0..n) of tensor map src.var into dst (shared),
				 * completing on the mbarrier src2; flag > 0: .multicast::cluster
				 * to the CTAs of mask `flag`, each at the same offsets */
	TINYC_GS_FENCE,		/* `fence` */
	TINYC_GS_COMMENT,	/* a comment line `text` */
	/* Hopper warpgroup operations (sm_90a; the four warps of a warpgroup execute them
	 * together; see tinyc_gs_wgmma) */
	TINYC_GS_WGMMA_FENCE,	/* wgmma.fence.sync.aligned */
	TINYC_GS_WGMMA,		/* wgmma.mma_async m64nNk16, fp32 accumulators, A and B from
				 * shared memory through matrix descriptors */
	TINYC_GS_WGMMA_COMMIT,	/* wgmma.commit_group.sync.aligned */
	TINYC_GS_WGMMA_WAIT,	/* wgmma.wait_group.sync.aligned n; dst (optional): the
				 * accumulator array whose registers the wait orders */
	TINYC_GS_SETMAXNREG,	/* setmaxnreg.{inc,dec}.sync.aligned.u32 n (flag 1: inc) */
	TINYC_GS_SYNCWARP,	/* __syncwarp(): the warp's shared-memory accesses before it
				 * are visible to its lanes after it */
	TINYC_GS_TMAP_PREFETCH,	/* prefetch.tensormap: fetch tensor map src.var (a kernel
				 * parameter) into the TMA unit's cache ahead of its loads */
	TINYC_GS_TMA_STORE,	/* cp.async.bulk.tensor.{n}d.global.shared::cta.bulk_group:
				 * the box at coord[0..n) of tensor map dst.var from shared
				 * src (its dense, swizzled layout); elements outside the
				 * tensor are not written */
	TINYC_GS_BULK_COMMIT,	/* cp.async.bulk.commit_group: the thread's TMA stores not
				 * yet in a group form one */
	TINYC_GS_BULK_WAIT,	/* cp.async.bulk.wait_group.read n: at most n of the
				 * thread's groups still read their shared memory */
	TINYC_GS_OP_COUNT,
} tinyc_gs_op;

/* Atomic operations. */
typedef enum tinyc_gatomic {
	TINYC_GA_ADD,
	TINYC_GA_MAX,
	TINYC_GA_MIN,
} tinyc_gatomic;

/* Warp shuffles (__shfl_*_sync with the full mask). */
typedef enum tinyc_gshfl {
	TINYC_GSHFL_IDX,	/* from lane `lane` */
	TINYC_GSHFL_UP,		/* from lane - lane */
	TINYC_GSHFL_DOWN,	/* from lane + lane */
	TINYC_GSHFL_XOR,	/* from lane ^ lane */
} tinyc_gshfl;

/* Fences. */
typedef enum tinyc_gfence {
	TINYC_GF_BLOCK,		/* __threadfence_block() */
	TINYC_GF_GLOBAL,	/* __threadfence() */
	TINYC_GF_PROXY_ASYNC,	/* fence.proxy.async.shared::cta (generic -> async proxy) */
	TINYC_GF_MBAR_INIT,	/* fence.mbarrier_init.release.cluster */
	TINYC_GF_GRID_WAIT,	/* griddepcontrol.wait: the previous grid's writes (sm_90) */
	TINYC_GF_GRID_LAUNCH,	/* griddepcontrol.launch_dependents: the next grid may
				 * launch once every CTA of this one ran it (sm_90) */
} tinyc_gfence;

/* A memory reference: var, and an element index where the statement needs one. */
typedef struct tinyc_gref {
	int var;		/* variable index, -1 when unused */
	struct tinyc_gexpr *index;	/* element index (NULL for scalars) */
} tinyc_gref;

/* How a WGMMA operand tile lies in shared memory (the canonical 128-byte swizzled layouts
 * that TMA writes with a 128-byte swizzle): rows of 64 16-bit elements (128 bytes), the
 * 16-byte chunks of row r stored at chunk ^ (r % 8), the tile 1024-byte aligned.
 *   k_major: rows run along M (A) or N (B), each row holds 64 consecutive k; the
 *            instruction's 16 k start `k_off` elements into the row;
 *   mn-major: rows run along k, each holds 64 consecutive m (n); `mn_block` bytes
 *            separate the blocks of 64 m (n); the instruction's k rows start at k_off.
 * The descriptor's start address is the operand's element reference (src/src2). */
typedef struct tinyc_gwg_layout {
	int k_major;		/* 1: K-major (no transpose), 0: MN-major (transposed) */
	int mn_block;		/* MN-major: bytes between blocks of 64 m (n) */
} tinyc_gwg_layout;

typedef struct tinyc_gstmt {
	tinyc_gs_op op;			/* the statement kind */
	tinyc_gref dst;			/* target (see tinyc_gs_op) */
	tinyc_gref src, src2, src3;	/* sources (COPY, LDMATRIX, MMA, TMA_LOAD) */
	tinyc_gexpr *value;		/* DECL/ASSIGN/STORE/ATOMIC/SHFL value, MBAR bytes/parity */
	tinyc_gexpr *pred;		/* STORE/ATOMIC/COPY predicate, NULL = always */
	tinyc_gexpr *init, *cond, *step;	/* FOR; IF uses cond; SHFL uses cond as lane */
	tinyc_gexpr *coord[5];		/* TMA_LOAD/STORE box coordinates (innermost first) */
	int n;				/* COPY elements, CP_WAIT groups, LDMATRIX matrices,
					 * SHFL width, MBAR_INIT count, TMA rank */
	int unroll;			/* FOR: 0 none, -1 full, k > 0 factor */
	int trans;			/* LDMATRIX: .trans */
	int async;			/* COPY: 1 cp.async (16 bytes: .cg, past L1), 2
					 * cp.async.ca (kept in L1: gathers that re-read) */
	int pipe;			/* CP_*, MBAR_*, TMA_LOAD: pipeline index, or -1 */
	tinyc_gatomic atomic_op;	/* ATOMIC */
	int old;			/* ATOMIC: register that receives the value before the
					 * operation, or -1 */
	tinyc_gshfl shfl;		/* SHFL */
	tinyc_gfence fence;		/* FENCE */
	int flag;			/* SETMAXNREG: 1 increase, 0 decrease; MBAR_EXPECT_TX: 1
					 * expect the bytes without arriving (mbarrier.expect_tx) */
	tinyc_gwg_layout wg_a, wg_b;	/* WGMMA: shared-memory layouts of A and B */
	struct tinyc_gstmt **stmts;	/* BLOCK children */
	int nstmts;			/* BLOCK: number of children */
	int cap;			/* BLOCK: allocated children */
	struct tinyc_gstmt *body;	/* FOR body, IF then */
	struct tinyc_gstmt *else_body;	/* IF else, or NULL */
	char *text;			/* COMMENT */
} tinyc_gstmt;

/* --------------------------------------------------------- kernels, module ---- */

/* How a pipeline's stages are filled. */
typedef enum tinyc_gpipe_kind {
	TINYC_GPIPE_CP_ASYNC,	/* cp.async groups, waited with cp.async.wait_group */
	TINYC_GPIPE_TMA,	/* TMA loads completing on one mbarrier per stage */
} tinyc_gpipe_kind;

/* A multi-stage software pipeline (a ring of shared buffers). */
typedef struct tinyc_gpipe {
	char *name;		/* for dumps */
	tinyc_gpipe_kind kind;	/* cp.async or TMA */
	int stages;		/* ring depth (2..8) */
	int mbar;		/* TMA: SHARED uint64 array of `stages` mbarriers, else -1 */
} tinyc_gpipe;

struct tinyc_gpu_module;

typedef struct tinyc_gkernel {
	struct tinyc_gpu_module *mod;	/* the module (arena, context) */
	char *name;			/* C identifier, unique in the module */
	int nvar;			/* number of variables */
	int capvar;			/* allocated variables */
	tinyc_gvar *vars;		/* variables, by index */
	int nparam;			/* number of parameters */
	int *params;			/* variable indices of the parameters, signature order */
	int npipe;			/* number of pipelines */
	tinyc_gpipe *pipes;		/* pipelines */
	tinyc_gstmt *body;		/* the kernel body (a BLOCK) */
	tinyc_gexpr *grid[3];		/* grid extents: module-level expressions (SYM, constants) */
	int block[3];			/* block extents */
	int64_t dyn_smem;		/* bytes of dynamic shared memory */
	int min_blocks_per_sm;		/* __launch_bounds__ second argument, 0 = none */
	int cluster_x;			/* CTAs per thread-block cluster along x
					 * (__cluster_dims__), 0 or 1 = none */
	int pdl;			/* programmatic dependent launch (sm_90+): the kernel
					 * waits for the previous grid (fence grid.wait) after
					 * its set-up and lets the next one launch (fence
					 * grid.launch); the runtime launches it with
					 * programmatic stream serialization */
	int wait_hint;			/* sm_90: each mbarrier try_wait may suspend the thread
					 * up to this many ns (its suspendTimeHint) before it
					 * tries again; 0: the hardware's own limit */
	tinyc_dtype index_dtype;	/* type of index arithmetic: int or long */
	char *comment;			/* what the kernel computes (dumped above it), or NULL */
	int first_var_scratch;		/* builder bookkeeping: next suffix for unique names */
	struct tinyc_gnames *names;	/* builder bookkeeping: variable names (hash) and the
					 * next suffix to try per base name */
	double build_ms;		/* time its GPU IR builder took (for -v), 0 if unknown */
} tinyc_gkernel;

/* What a module buffer is. */
typedef enum tinyc_gbuf_role {
	TINYC_GB_INPUT,		/* a BUFFER of the graph (slot) */
	TINYC_GB_OUTPUT,	/* an OUTPUT of the graph (output index, graph order) */
	TINYC_GB_TEMP,		/* an intermediate the schedule planned */
} tinyc_gbuf_role;

/* A device buffer the kernels of a module read or write. */
typedef struct tinyc_gbuf {
	char *name;		/* tensor name (BUFFER/OUTPUT name=) or "tN" for temporaries */
	tinyc_gbuf_role role;	/* input, output, temporary */
	int index;		/* INPUT: slot; OUTPUT: output index; TEMP: temp number */
	int node;		/* the UOp node it holds (BUFFER, OUTPUT, materialised node) */
	tinyc_dtype dtype;	/* element type */
	int rank;		/* logical rank */
	tinyc_dim shape[TINYC_MAX_RANK];	/* logical shape (constants or symbols) */
	int has_strides;	/* storage is strided (BUFFER/OUTPUT strides=) */
	tinyc_dim strides[TINYC_MAX_RANK];	/* element strides when has_strides */
} tinyc_gbuf;

typedef struct tinyc_gpu_module {
	tinyc_ctx *ctx;			/* diagnostics (kept) */
	struct tinyc_arena *arena;	/* owns every node, var table and string (ir/arena.h) */
	int nkernel;			/* number of kernels */
	int capkernel;			/* allocated kernels */
	tinyc_gkernel **kernels;	/* kernels in launch order */
	int nbuf;			/* number of buffers */
	int capbuf;			/* allocated buffers */
	tinyc_gbuf *bufs;		/* buffers */
	int nsym;			/* graph symbols */
	char **syms;			/* symbol names (arena copies) */
	int64_t *sym_bound;		/* compile-time value per symbol, -1 when unbound */
	char target[16];		/* "sm_80": the architecture the kernels are built for */
	int arch_major, arch_minor;	/* its compute capability */
} tinyc_gpu_module;

/* ------------------------------------------------------------------ builder ---- */

__tinyc_give tinyc_gpu_module *tinyc_gpu_module_alloc(tinyc_ctx *ctx);
void tinyc_gpu_module_free(__tinyc_take tinyc_gpu_module *m);
/* Copy the graph's symbol names (and compile-time values from b, may be NULL). */
int tinyc_gpu_set_symbols(tinyc_gpu_module *m, const tinyc_graph *g, const tinyc_bindings *b);
/* Add a buffer (fields copied; name copied); returns its index or -1. */
int tinyc_gpu_add_buf(tinyc_gpu_module *m, const tinyc_gbuf *buf);
/* Copy a string into the module's arena. */
char *tinyc_gpu_strdup(tinyc_gpu_module *m, const char *s);

/* A new kernel named `name` (sanitised and made unique), appended in launch order, with an
 * empty BLOCK body, block (1,1,1), grid (1,1,1) and index dtype int. */
__tinyc_keep tinyc_gkernel *tinyc_gk_alloc(tinyc_gpu_module *m, const char *name);

/* Variables.  Names are sanitised into C identifiers and made unique in the kernel.
 * Each returns the variable's index, or -1 (diagnostic on the context). */
int tinyc_gk_param_ptr(tinyc_gkernel *k, const char *name, tinyc_dtype dt, int is_const,
		       int buf);
int tinyc_gk_param_int(tinyc_gkernel *k, const char *name, tinyc_dtype dt, int sym);
int tinyc_gk_param_tmap(tinyc_gkernel *k, const char *name);
/* A tensor-map parameter with its description (copied into the module's arena). */
int tinyc_gk_param_tmap_desc(tinyc_gkernel *k, const char *name, const tinyc_gtmap *desc);
/* Shared array; align 0 means the element size (at least 16 for dynamic ones).  A dynamic
 * array is placed at the next suitably aligned offset of the dynamic segment, and the
 * kernel's dyn_smem grows to cover it. */
int tinyc_gk_shared(tinyc_gkernel *k, const char *name, tinyc_dtype dt, int64_t count,
		    int align, int dynamic);
int tinyc_gk_reg(tinyc_gkernel *k, const char *name, tinyc_dtype dt);
int tinyc_gk_reg_array(tinyc_gkernel *k, const char *name, tinyc_dtype dt, int64_t count);
/* A pipeline record; returns its index or -1. */
int tinyc_gk_pipe(tinyc_gkernel *k, const char *name, tinyc_gpipe_kind kind, int stages,
		  int mbar);
/* The variable of a PARAM_INT for graph symbol `sym`, created on first use (dtype: the
 * kernel's index dtype; name: the symbol's). */
int tinyc_gk_sym_param(tinyc_gkernel *k, int sym);
/* Put the parameters in the canonical order: pointers (as created), tensor maps, ints
 * (by symbol).  Call once the kernel is complete. */
void tinyc_gk_sort_params(tinyc_gkernel *k);
/* Bytes of static shared memory the kernel declares. */
int64_t tinyc_gk_static_smem(const tinyc_gkernel *k);

/* Expressions.  Binary/unary constructors fold constants and the identities x+0, x-0,
 * x*1, x*0, x/1 (integers only), 0+x, 1*x, and true/false in logical operators. */
tinyc_gexpr *tinyc_gx_int(tinyc_gkernel *k, tinyc_dtype dt, int64_t v);
tinyc_gexpr *tinyc_gx_float(tinyc_gkernel *k, tinyc_dtype dt, double v);
tinyc_gexpr *tinyc_gx_bool(tinyc_gkernel *k, int v);
tinyc_gexpr *tinyc_gx_var(tinyc_gkernel *k, int var);
tinyc_gexpr *tinyc_gx_sym(tinyc_gkernel *k, int sym);
tinyc_gexpr *tinyc_gx_special(tinyc_gkernel *k, tinyc_gspecial s);
tinyc_gexpr *tinyc_gx_load(tinyc_gkernel *k, int var, __tinyc_keep tinyc_gexpr *index,
			   __tinyc_keep tinyc_gexpr *pred);
tinyc_gexpr *tinyc_gx_unary(tinyc_gkernel *k, tinyc_gx_op op, tinyc_gexpr *a);
tinyc_gexpr *tinyc_gx_binary(tinyc_gkernel *k, tinyc_gx_op op, tinyc_gexpr *a, tinyc_gexpr *b);
tinyc_gexpr *tinyc_gx_select(tinyc_gkernel *k, tinyc_gexpr *c, tinyc_gexpr *a, tinyc_gexpr *b);
tinyc_gexpr *tinyc_gx_cast(tinyc_gkernel *k, tinyc_dtype dt, tinyc_gexpr *a);
tinyc_gexpr *tinyc_gx_bitcast(tinyc_gkernel *k, tinyc_dtype dt, tinyc_gexpr *a);
tinyc_gexpr *tinyc_gx_call(tinyc_gkernel *k, tinyc_gmath f, tinyc_gexpr *a, tinyc_gexpr *b,
			   tinyc_gexpr *c);
/* The GPU IR of an elementwise UOp op that every builder writes alike (math functions, NEG,
 * RECIPROCAL, arithmetic, comparisons, bitwise ops, shifts with the count masked to the
 * width, WHERE) on operand values x[]; isbool: bool operands; out: the dtype the result is
 * stored in (a RECIPROCAL computed in float for a 16-bit result is the approximate one: 2 ulp
 * of float, 2^-11 of half's ulp, no slow-path branch).  NULL for the others. */
tinyc_gexpr *tinyc_gx_uop(tinyc_gkernel *k, tinyc_op op, tinyc_gexpr **x, int isbool, tinyc_dtype out);
/* Integer helpers: ceil(a / b) for a >= 0, b > 0, and min/max of two. */
tinyc_gexpr *tinyc_gx_ceildiv(tinyc_gkernel *k, tinyc_gexpr *a, tinyc_gexpr *b);
/* Structural equality of two expressions. */
int tinyc_gx_equal(const tinyc_gexpr *a, const tinyc_gexpr *b);
/* Whether e is the integer constant v. */
int tinyc_gx_is_int(const tinyc_gexpr *e, int64_t v);

/* Statements.  A BLOCK grows with tinyc_gs_append. */
tinyc_gstmt *tinyc_gs_block(tinyc_gkernel *k);
/* Append s to block; returns 0, or -1 when either is NULL or on OOM. */
int tinyc_gs_append(tinyc_gkernel *k, tinyc_gstmt *block, tinyc_gstmt *s);
tinyc_gstmt *tinyc_gs_for(tinyc_gkernel *k, int var, tinyc_gexpr *init, tinyc_gexpr *cond,
			  tinyc_gexpr *step, int unroll, tinyc_gstmt *body);
/* for (var = lo; var < hi; var += step) */
tinyc_gstmt *tinyc_gs_for_range(tinyc_gkernel *k, int var, tinyc_gexpr *lo, tinyc_gexpr *hi,
				tinyc_gexpr *step, int unroll, tinyc_gstmt *body);
tinyc_gstmt *tinyc_gs_if(tinyc_gkernel *k, tinyc_gexpr *cond, tinyc_gstmt *then,
			 tinyc_gstmt *els);
tinyc_gstmt *tinyc_gs_decl(tinyc_gkernel *k, int var, tinyc_gexpr *init);
tinyc_gstmt *tinyc_gs_assign(tinyc_gkernel *k, int var, tinyc_gexpr *value);
tinyc_gstmt *tinyc_gs_store(tinyc_gkernel *k, int var, tinyc_gexpr *index, tinyc_gexpr *value,
			    tinyc_gexpr *pred);
tinyc_gstmt *tinyc_gs_atomic(tinyc_gkernel *k, tinyc_gatomic op, int var, tinyc_gexpr *index,
			     tinyc_gexpr *value, tinyc_gexpr *pred);
/* tinyc_gs_atomic that also sets register `old` to the value before the operation. */
tinyc_gstmt *tinyc_gs_atomic_old(tinyc_gkernel *k, tinyc_gatomic op, int old, int var,
				 tinyc_gexpr *index, tinyc_gexpr *value, tinyc_gexpr *pred);
tinyc_gstmt *tinyc_gs_barrier(tinyc_gkernel *k);
/* The cluster's barrier (every thread of every CTA of the cluster; sm_90). */
tinyc_gstmt *tinyc_gs_cluster_barrier(tinyc_gkernel *k);
tinyc_gstmt *tinyc_gs_shfl(tinyc_gkernel *k, tinyc_gshfl kind, int dst, tinyc_gexpr *value,
			   tinyc_gexpr *lane, int width);
/* Copy n elements; async selects cp.async (dst shared, src global). */
tinyc_gstmt *tinyc_gs_copy(tinyc_gkernel *k, int dst, tinyc_gexpr *dst_index, int src,
			   tinyc_gexpr *src_index, int n, tinyc_gexpr *pred, int async);
/* n 4-byte elements of SHARED src at src_index in the cluster CTA of rank `rank` into
 * REG_ARRAY dst at dst_index (distributed shared memory; n = 1, 2 or 4). */
tinyc_gstmt *tinyc_gs_copy_remote(tinyc_gkernel *k, int dst, tinyc_gexpr *dst_index, int src,
				  tinyc_gexpr *src_index, int n, tinyc_gexpr *rank);
tinyc_gstmt *tinyc_gs_cp_commit(tinyc_gkernel *k, int pipe);
tinyc_gstmt *tinyc_gs_cp_wait(tinyc_gkernel *k, int pipe, int pending);
/* ldmatrix: `num` (1, 2, 4) 8x8 b16 matrices; dst is a REG_ARRAY of uint (one register per
 * matrix, at register offset dst_off) or of half/bfloat16 (two elements per register, at
 * an even element offset). */
tinyc_gstmt *tinyc_gs_ldmatrix(tinyc_gkernel *k, int dst, tinyc_gexpr *dst_off, int src,
			       tinyc_gexpr *src_index, int num, int trans);
/* mma.sync m16n8k16 with fp32 accumulation: d, c are float REG_ARRAYs (4 elements from the
 * given offsets); a (4 registers) and b (2 registers) are uint REG_ARRAYs at register
 * offsets, or half/bfloat16 REG_ARRAYs at element offsets (8 and 4 elements); the
 * fragment layouts are PTX's for mma.m16n8k16 .row.col.  With float a and b (4 and 2
 * elements) it is mma.sync m16n8k8 .tf32: the operands' low 13 mantissa bits are ignored
 * (the builder rounds them to tf32 first), PTX's m16n8k8 .tf32 fragments:
 * a (g, q) (g + 8, q) (g, q + 4) (g + 8, q + 4), b (k q, n g) (k q + 4, n g), lane = 4g + q. */
tinyc_gstmt *tinyc_gs_mma(tinyc_gkernel *k, int d, tinyc_gexpr *d_off, int a, tinyc_gexpr *a_off,
			  int b, tinyc_gexpr *b_off, int c, tinyc_gexpr *c_off);
/* mbarriers: SHARED arrays of ulong; `index` selects the barrier. */
tinyc_gstmt *tinyc_gs_mbar_init(tinyc_gkernel *k, int pipe, int bar, tinyc_gexpr *index,
				int count);
tinyc_gstmt *tinyc_gs_mbar_expect_tx(tinyc_gkernel *k, int pipe, int bar, tinyc_gexpr *index,
				     tinyc_gexpr *bytes);
tinyc_gstmt *tinyc_gs_mbar_arrive(tinyc_gkernel *k, int pipe, int bar, tinyc_gexpr *index);
/* An arrival on the barrier at bar[index] of the cluster's CTA of rank `rank` (sm_90). */
tinyc_gstmt *tinyc_gs_mbar_arrive_remote(tinyc_gkernel *k, int pipe, int bar, tinyc_gexpr *index,
					 tinyc_gexpr *rank);
tinyc_gstmt *tinyc_gs_mbar_wait(tinyc_gkernel *k, int pipe, int bar, tinyc_gexpr *index,
				tinyc_gexpr *parity);
/* TMA: load the box at coords[0..rank) (innermost first, int) of tensor map `tmap` into
 * shared `dst` at element dst_index, completing on mbarrier bar[bar_index]. */
tinyc_gstmt *tinyc_gs_tma_load(tinyc_gkernel *k, int pipe, int dst, tinyc_gexpr *dst_index,
			       int tmap, int rank, tinyc_gexpr *const *coords, int bar,
			       tinyc_gexpr *bar_index);
tinyc_gstmt *tinyc_gs_fence(tinyc_gkernel *k, tinyc_gfence f);
tinyc_gstmt *tinyc_gs_comment(tinyc_gkernel *k, const char *text);
/* Hopper warpgroup MMA (sm_90a): wgmma.mma_async.sync.aligned.m64n{n}k16.f32.T.T with
 * T = the 16-bit dtype of the shared arrays a and b; float arrays give
 * m64n{n}k8.f32.tf32.tf32 (both K-major: tf32 has no transpose; the tensor cores read
 * the float bits as tf32).  d is a float REG_ARRAY: the n/2
 * accumulators of the thread from element d_off (constant), in PTX's D-fragment order
 * (register i: row 16 * (warp % 4) + lane / 4 + 8 * (i / 2 % 2), column 8 * (i / 4) +
 * 2 * (lane % 4) + i % 2).  a_index / b_index: element where the operand's descriptor
 * starts (1024-byte aligned tile plus the k offset); la / lb: their layouts.  scale_d: a
 * bool, false = D is overwritten (A*B), true or NULL = accumulated (D + A*B).
 * n: 8..256, a multiple of 8.  A may instead be a 16-bit REG_ARRAY (la unused): each warp's
 * m16k16 fragment of its 16 rows, 8 elements from the constant a_index in mma.sync's A
 * layout (wgmma with A from registers). */
tinyc_gstmt *tinyc_gs_wgmma(tinyc_gkernel *k, int d, tinyc_gexpr *d_off, int a,
			    tinyc_gexpr *a_index, tinyc_gwg_layout la, int b, tinyc_gexpr *b_index,
			    tinyc_gwg_layout lb, int n, tinyc_gexpr *scale_d);
tinyc_gstmt *tinyc_gs_wgmma_fence(tinyc_gkernel *k);
tinyc_gstmt *tinyc_gs_wgmma_commit(tinyc_gkernel *k);
/* wgmma.wait_group n; acc (or -1): the accumulator REG_ARRAY the wait orders (its
 * registers are not read or written across the wait). */
tinyc_gstmt *tinyc_gs_wgmma_wait(tinyc_gkernel *k, int pending, int acc);
/* setmaxnreg.inc/dec (inc = 1/0) to `regs` registers per thread (24..256, multiple of 8). */
tinyc_gstmt *tinyc_gs_setmaxnreg(tinyc_gkernel *k, int inc, int regs);
/* __syncwarp() (warp-uniform control only). */
tinyc_gstmt *tinyc_gs_syncwarp(tinyc_gkernel *k);
/* Insert s into block at index at (0..nstmts).  0 or -1. */
int tinyc_gs_insert(tinyc_gkernel *k, tinyc_gstmt *block, int at, tinyc_gstmt *s);
/* prefetch.tensormap of tensor map parameter `tmap` (sm_90). */
tinyc_gstmt *tinyc_gs_tmap_prefetch(tinyc_gkernel *k, int tmap);
/* TMA: store the box at coords[0..rank) (innermost first, int) of tensor map `tmap` from
 * shared `src` at element src_index (128-byte aligned; the box dense in shared memory
 * under the map's swizzle), in the issuing thread's current bulk group (sm_90).  The
 * shared memory may be written again only after a tinyc_gs_bulk_wait retired the group;
 * writes to shared memory before it need fence.proxy.async. */
tinyc_gstmt *tinyc_gs_tma_store(tinyc_gkernel *k, int tmap, int rank, tinyc_gexpr *const *coords,
				int src, tinyc_gexpr *src_index);
/* cp.async.bulk.commit_group; cp.async.bulk.wait_group.read `pending` (sm_90). */
tinyc_gstmt *tinyc_gs_bulk_commit(tinyc_gkernel *k);
tinyc_gstmt *tinyc_gs_bulk_wait(tinyc_gkernel *k, int pending);

/* ------------------------------------------------------- verify, print, names ---- */

/* Check every kernel: expression types, variable kinds, defined-before-use of registers
 * (lexical scopes), const-ness of stores, barriers and warp-collective operations not
 * under thread-dependent branches or loops (as far as a taint analysis sees), launch
 * limits (block size <= 1024, shared memory).  smem_limit (bytes, 0 = unchecked) bounds
 * static plus dynamic shared memory.  Returns 0, or -1 with GpuIrInvalid diagnostics. */
int tinyc_gpu_verify(tinyc_ctx *ctx, __tinyc_keep const tinyc_gpu_module *m, int64_t smem_limit);
/* The deterministic text dump (--dump-stage=gpuir). */
void tinyc_gpu_print(__tinyc_keep const tinyc_gpu_module *m, tinyc_buf *out);
/* Print one expression in the dump's syntax. */
void tinyc_gpu_print_expr(const tinyc_gkernel *k, const tinyc_gexpr *e, tinyc_buf *out);

const char *tinyc_gx_op_name(tinyc_gx_op op);
/* The C spelling of an infix or prefix operator, NULL for the others. */
const char *tinyc_gx_op_spelling(tinyc_gx_op op);
/* The C precedence of op (higher binds tighter; 13: a primary expression). */
int tinyc_gx_op_prec(tinyc_gx_op op);
/* The operands op requires (arg[0..n) non-NULL). */
int tinyc_gx_op_nargs(tinyc_gx_op op);
/* Whether op's result is bool whatever its operands (comparisons, !, &&, ||). */
int tinyc_gx_op_is_bool(tinyc_gx_op op);
const char *tinyc_gs_op_name(tinyc_gs_op op);
const char *tinyc_gspecial_name(tinyc_gspecial s);

/* -------------------------------------------------------------- interpreter ---- */

/* Memory for tinyc_gpu_interp: one host array per module buffer (dtype-native layout, as
 * tinyc_tensor stores elements), and a value per graph symbol. */
typedef struct tinyc_gpu_mem {
	void **buf;		/* per module buffer: storage (kept, not owned) */
	int64_t *buf_elems;	/* per module buffer: storage size in elements (bounds checks) */
	int64_t *sym;		/* per graph symbol: its value */
} tinyc_gpu_mem;

/* Run kernel k on the CPU: every block of the grid (the CTAs of a thread-block cluster
 * together), its threads interleaved at barriers, warp-collective operations (shuffles,
 * ldmatrix, mma), warpgroup operations (wgmma, setmaxnreg) and mbarrier waits the way a
 * GPU would order them; Hopper's TMA loads, mbarriers, wgmma and distributed shared
 * memory with the PTX semantics (ir/gpuir_interp.c).  Out-of-bounds accesses, reads of
 * uninitialised registers, barrier divergence, mbarrier misuse, races with asynchronous
 * operations (a TMA load read before a wait observed it, wgmma registers or operands
 * touched in flight) and deadlocks are GpuInterpError diagnostics.  Returns 0 or -1. */
int tinyc_gpu_interp(tinyc_ctx *ctx, const tinyc_gpu_module *m, const tinyc_gkernel *k,
		     const tinyc_gpu_mem *mem);
/* Evaluate a module-level integer expression (grid extents) under symbol values. */
int tinyc_gpu_eval_int(const tinyc_gexpr *e, const int64_t *sym, int64_t *out);

#endif
