/* poly/: the polyhedral stages, built on isl.
 *
 * This folder holds IndexBook -> Poly-View (seed 002 §2: isl domains and access relations,
 * simplified, plus contraction detection), the Poly-Core analysis (seed 002 §4: parallel,
 * reduce and tail axes, isl dependences, buffer estimates, barrier hints) and the isl helpers
 * they share.
 *
 * One isl_ctx serves a module: the Poly-View creates it and owns it, later stages take
 * their isl objects from it (and so must be freed first, which the pipeline's reverse-order
 * free does).  isl runs with ISL_ON_ERROR_CONTINUE and a bound on its operations
 * (isl_ctx_set_max_operations): an isl error becomes an "IslError" diagnostic, an exhausted
 * budget an "IslBudgetExceeded" diagnostic, never a hang or an abort.
 *
 * Poly-View statements are the values that compute (elementwise ops, REDUCE, CONTIGUOUS,
 * OUTPUT).  Movement ops (RESHAPE, PERMUTE, EXPAND, PAD, SHRINK, FLIP) are not statements:
 * their AxisMaps are composed (isl pullbacks) into the access relations of the statements
 * that read through them, so an access names the buffer or the computed value actually read:
 * S6[m, n, k] -> X[m, k].  Size symbols are isl parameters.
 */
#ifndef TINYC_POLY_POLY_H
#define TINYC_POLY_POLY_H

#include <isl/aff.h>
#include <isl/ctx.h>
#include <isl/set.h>
#include <isl/union_map.h>
#include <isl/union_set.h>

#include "ir/ctx.h"
#include "ir/uop.h"
#include "lower/lower.h"

/* ---- isl helpers (poly/isl_util.c) ------------------------------------------------------- */

/* How an isl_ctx is set up. */
typedef struct tinyc_isl_opts {
	int abort_on_error;		/* tests: ISL_ON_ERROR_ABORT instead of CONTINUE */
	unsigned long max_operations;	/* isl's operation budget; 0: TINYC_ISL_MAX_OPERATIONS */
} tinyc_isl_opts;

#define TINYC_ISL_MAX_OPERATIONS 20000000UL	/* default budget; the Poly-View grants it
						 * to each statement afresh */
#define TINYC_ISL_SIMPLIFY_OPERATIONS 20000UL	/* budget of the optional rebuild in
						 * tinyc_isl_pma_simplify */

/* A new isl_ctx with the options applied (NULL and OutOfMemory on ctx on failure). */
__tinyc_give isl_ctx *tinyc_isl_ctx_alloc(tinyc_ctx *ctx, const tinyc_isl_opts *opts);
/* Turn isl's last error into a diagnostic at loc: IslBudgetExceeded when the operation
 * budget ran out, IslError otherwise; `what` says what was being done.  Resets the error and
 * the operation count.  Returns -1. */
int tinyc_isl_report(tinyc_ctx *ctx, isl_ctx *ictx, const tinyc_source *src, tinyc_loc loc,
		     const char *what);
/* The parameter space of a graph: one isl parameter per size symbol, in order. */
__tinyc_give isl_space *tinyc_isl_params(isl_ctx *ictx, __tinyc_keep const tinyc_graph *g);
/* The context of a graph: every symbol >= 1, bound symbols equal to their values. */
__tinyc_give isl_set *tinyc_isl_context(isl_ctx *ictx, __tinyc_keep const tinyc_graph *g,
					__tinyc_keep const tinyc_bindings *b);
/* The isl_aff of an index expression of value v, on the local space ls (v's axes as set
 * dims, the symbols as parameters). */
__tinyc_give isl_aff *tinyc_isl_aff_from_ix(__isl_keep isl_local_space *ls,
					    __tinyc_keep const tinyc_ix *e);
/* The set space [params] -> { name[axes of v] } with v's axis names. */
__tinyc_give isl_space *tinyc_isl_value_space(isl_ctx *ictx, const tinyc_graph *g,
					      const tinyc_ibval *v, const char *name);
/* The box 0 <= a < size of v's axes, over space (taken). */
__tinyc_give isl_set *tinyc_isl_axis_box(__isl_take isl_space *space, const tinyc_ibval *v);
/* Constraints as a set over space (which it takes). */
__tinyc_give isl_set *tinyc_isl_set_from_cons(__isl_take isl_space *space, int n,
					      const tinyc_ixcon *cons);
/* The map { space -> name[e_0, ..., e_{n-1}] } of n expressions, as a pw_multi_aff. */
__tinyc_give isl_pw_multi_aff *tinyc_isl_pma_from_ix(__isl_take isl_space *space,
						     const char *name, int n,
						     const tinyc_ix *const *e);
/* Simplify a set: coalesce, remove redundancies, gist against the context (kept). */
__tinyc_give isl_set *tinyc_isl_set_simplify(__isl_take isl_set *set,
					     __isl_keep isl_set *context);
/* Simplify an access relation: coalesce; with TINYC_SIMPLIFY_GIST gist it against the
 * domain it is read on (kept), for piecewise accesses; with TINYC_SIMPLIFY_REBUILD try
 * rebuilding it from its relation on a small budget (simpler divisions after reshape
 * chains; worth it only for a few divisions, as its cost grows fast with them). */
#define TINYC_SIMPLIFY_GIST 1
#define TINYC_SIMPLIFY_REBUILD 2
__tinyc_give isl_pw_multi_aff *tinyc_isl_pma_simplify(__isl_take isl_pw_multi_aff *pma,
						      __isl_keep isl_set *domain, int how);
/* Append isl's text form of an object (NULL prints "(null)"). */
void tinyc_isl_print_set(tinyc_buf *out, __isl_keep isl_set *set);
void tinyc_isl_print_pma(tinyc_buf *out, __isl_keep isl_pw_multi_aff *pma);
void tinyc_isl_print_union_map(tinyc_buf *out, __isl_keep isl_union_map *umap);
/* Does output dim `out` of pma (or any dim when out < 0) depend on input dim `in`? */
int tinyc_isl_pma_uses(__isl_keep isl_pw_multi_aff *pma, int out, int in);

/* ---- Poly-View (poly/polyview.c) ------------------------------------------------------- */

/* One read of a statement. */
typedef struct tinyc_pv_read {
	int src;			/* the operand node as written */
	int array;			/* the node read after folding movement: a BUFFER or a
					 * statement's value; -1 for a CONST (inlined scalar) */
	int cnode;			/* the CONST node when array < 0 */
	isl_pw_multi_aff *acc;		/* domain -> array index, simplified (owned); NULL
					 * for a CONST */
	int padded;			/* some domain points read the fill 0 (PAD) instead */
	int rank;			/* the array's rank: entries in idx */
	const tinyc_ix **idx;		/* the composed index over the statement's axes, in the
					 * IndexBook's expressions (array owned, expressions in
					 * the IndexBook's arena); NULL for a CONST */
	int nguard;			/* guards of the read (PAD), over the statement's axes */
	tinyc_ixcon *guard;		/* owned array; elsewhere the element is 0 */
} tinyc_pv_read;

/* Roles of a contraction's axes (seed §2.2 step 4). */
typedef enum tinyc_role {
	TINYC_ROLE_NONE,	/* extent 1, or not a contraction axis */
	TINYC_ROLE_M,		/* used by the left operand only */
	TINYC_ROLE_N,		/* used by the right operand only */
	TINYC_ROLE_K,		/* reduced, used by both */
	TINYC_ROLE_BATCH,	/* kept, used by both */
} tinyc_role;

/* A MUL under a REDUCE ADD (through CASTs): a matmul-like contraction. */
typedef struct tinyc_contraction {
	int reduce_stmt;		/* the REDUCE statement */
	int mul_stmt;			/* the MUL statement */
	int lhs, rhs;			/* the arrays the MUL reads (nodes; -1: a CONST) */
	isl_pw_multi_aff *lhs_acc;	/* reduce domain -> lhs index (owned) */
	isl_pw_multi_aff *rhs_acc;	/* reduce domain -> rhs index (owned) */
	int naxes;			/* axes of the reduce statement */
	tinyc_role *role;		/* per axis */
	int *lhs_dim, *rhs_dim;		/* per axis: the operand dim that uses it, or -1 */
	int nm, nn, nk, nbatch;		/* how many axes have each role */
	tinyc_dtype acc;		/* accumulator dtype */
	int lhs_padded, rhs_padded;	/* operand read through a PAD (guarded: 0 outside) */
} tinyc_contraction;

/* One statement: a value that computes. */
typedef struct tinyc_pv_stmt {
	int node;			/* the UOp node */
	char *name;			/* statement tuple name, "S8" */
	char *array;			/* the array it writes, "T8" or an OUTPUT's name */
	isl_set *domain;		/* [params] -> { S8[axes] : ... }, simplified (owned) */
	isl_pw_multi_aff *write;	/* domain -> the written element (owned) */
	int nread;			/* = the node's operand count */
	tinyc_pv_read read[3];		/* per operand */
	int contraction;		/* index in contr when this is a contraction's REDUCE */
} tinyc_pv_stmt;

/* The Poly-View of a module. */
typedef struct tinyc_polyview {
	isl_ctx *ictx;			/* owned; every isl object below belongs to it */
	const tinyc_indexbook *ib;	/* the IndexBook (kept) */
	isl_set *context;		/* parameter context (owned) */
	int nstmt;			/* statements */
	tinyc_pv_stmt *stmt;		/* in node order */
	int *stmt_of;			/* per node: its statement, or -1 */
	char **array_name;		/* per node: the tuple name of its value's array; a
					 * movement value's array is virtual (never stored, only
					 * composed away); NULL for CONSTs */
	int ncontr;			/* contractions found */
	tinyc_contraction *contr;	/* the contractions */
} tinyc_polyview;

/* Build the Poly-View of an IndexBook.  opts may be NULL (CONTINUE, default budget).
 * NULL with diagnostics (IslError, IslBudgetExceeded, ...) on failure. */
__tinyc_give tinyc_polyview *tinyc_polyview_build(tinyc_ctx *ctx,
						  __tinyc_keep const tinyc_indexbook *ib,
						  const tinyc_isl_opts *opts);
/* Check the Poly-View: every statement has a domain of its value's axes, reads and writes
 * are defined on the whole domain (apart from padding), contraction roles are consistent. */
int tinyc_polyview_verify(tinyc_ctx *ctx, __tinyc_keep const tinyc_polyview *pv);
/* The stable text dump (format documented in poly/polyview.c). */
void tinyc_polyview_print(__tinyc_keep const tinyc_polyview *pv, tinyc_buf *out);
/* Frees every isl object, then the isl_ctx. */
void tinyc_polyview_free(__tinyc_take tinyc_polyview *pv);

/* The union of the statements' domains, reads and writes (NULL on isl errors). */
__tinyc_give isl_union_set *tinyc_polyview_domains(__tinyc_keep const tinyc_polyview *pv);
__tinyc_give isl_union_map *tinyc_polyview_reads(__tinyc_keep const tinyc_polyview *pv);
__tinyc_give isl_union_map *tinyc_polyview_writes(__tinyc_keep const tinyc_polyview *pv);

/* ==== Poly-Core (poly/polycore.c): the pre-schedule analysis of seed 002 §4 ===============
 *
 * Per Poly-View statement: which axes are parallel, which are carried by the statement's own
 * writes (a REDUCE's reduce axes; "serial" for any other statement whose writes repeat), and
 * which are tail axes (extent not a known multiple of the tile quantum, so tiles need guards).
 * Dependences come from isl's dataflow analysis, array by array (flow: the last writer of each
 * element read, as L(R(y)) with L = lexmax(W^-1) when one statement writes the array, and
 * isl_union_access_info_compute_flow on the array's accesses when several do; anti and output
 * dependences between statements are checked to be absent: SSA), so its cost grows with the
 * graph's edges; every isl step gets the operation budget afresh.  Each
 * contraction gets buffer estimates (register accumulator, shared-memory tiles of a reference
 * tile) and barrier hints; other reduces get their cooperative-reduction hints.  The isl
 * objects belong to the Poly-View's isl_ctx. */

/* What an axis of a statement is. */
typedef enum tinyc_pc_class {
	TINYC_PC_PARALLEL,	/* no two points of the statement write the same element along it */
	TINYC_PC_REDUCE,	/* a REDUCE accumulates along it */
	TINYC_PC_SERIAL,	/* another statement's writes repeat along it (later wins) */
} tinyc_pc_class;

/* One axis of a statement. */
typedef struct tinyc_pc_axis {
	const char *name;	/* IndexBook name (kept: the book's) */
	tinyc_dim size;		/* extent */
	tinyc_pc_class cls;	/* parallel / reduce / serial */
	tinyc_role role;	/* role in the statement's contraction, or NONE */
	int quantum;		/* the tile quantum the tail test used */
	int tail;		/* extent unknown or not a multiple of quantum */
} tinyc_pc_axis;

/* The analysis of one statement. */
typedef struct tinyc_pc_stmt {
	int stmt;		/* Poly-View statement index */
	int node;		/* its UOp node */
	int contraction;	/* the contraction it belongs to (MUL, CASTs, REDUCE), or -1 */
	int naxes;		/* axes (= its domain's dims) */
	tinyc_pc_axis *axes;	/* owned */
	int nonunit_reads;	/* reads whose index is not one axis (or constant) per dim:
				   their tiles have a halo */
	int64_t reg_bytes;	/* accumulator bytes per output element (reduces), else 0 */
	int64_t smem_bytes;	/* cooperative-reduction scratch per block (reduces), else 0 */
} tinyc_pc_stmt;

/* One flow dependence between two statements. */
typedef struct tinyc_pc_dep {
	int src, dst;		/* statement indices (writer, reader) */
	isl_map *rel;		/* src instance -> dst instance (owned) */
} tinyc_pc_dep;

/* Estimates of one contraction (seed §4: a reference tile; the schedule picks the real one). */
typedef struct tinyc_pc_contr {
	int bm, bn, bk;		/* the reference tile (1 where the role is absent) */
	int stages;		/* smem ring depth */
	int64_t smem_bytes;	/* stages * (bm*bk*sizeof(lhs) + bk*bn*sizeof(rhs)) */
	int64_t reg_bytes;	/* bm*bn*sizeof(acc): the block's accumulators */
	int64_t smem_limit;	/* static shared memory per block assumed (48 KiB) */
} tinyc_pc_contr;

/* The Poly-Core analysis of a Poly-View. */
typedef struct tinyc_polycore {
	const tinyc_polyview *pv;	/* kept */
	int nstmt;			/* = pv->nstmt */
	tinyc_pc_stmt *stmt;		/* per statement (owned) */
	int ndep;			/* flow dependences, sorted by (src, dst) */
	tinyc_pc_dep *dep;		/* (owned) */
	int ncontr;			/* = pv->ncontr */
	tinyc_pc_contr *contr;		/* per contraction (owned) */
	int nanti;			/* statement pairs with an anti dependence (SSA: 0) */
	int noutput;			/* statement pairs writing one element (SSA: 0) */
} tinyc_polycore;

/* Analyse a Poly-View; NULL with diagnostics (IslError, ...) on failure. */
__tinyc_give tinyc_polycore *tinyc_polycore_build(tinyc_ctx *ctx,
						  __tinyc_keep const tinyc_polyview *pv);
/* Check the analysis: axes agree with the statements' domains; a REDUCE's reduce axes are
 * the IndexBook's reduce_axes and no other statement has any (PolyCoreMismatch); no anti or
 * output dependence between statements.  0 or -1. */
int tinyc_polycore_verify(tinyc_ctx *ctx, __tinyc_keep const tinyc_polycore *pc);
/* The stable text dump (format documented in poly/polycore.c). */
void tinyc_polycore_print(__tinyc_keep const tinyc_polycore *pc, tinyc_buf *out);
void tinyc_polycore_free(__tinyc_take tinyc_polycore *pc);

/* ---- evt_extract.c: the "evt" stage (see lower/lower.h) ---- */

/* The epilogue graphs of a Poly-View (one entry per contraction). */
__tinyc_give tinyc_evt_set *tinyc_evt_extract(tinyc_ctx *ctx,
					      __tinyc_keep const tinyc_polyview *pv);

/* The strides and offset of an affine access acc (from an nin-dimensional space, restricted
 * to dom, may be NULL) into array node `array` (a BUFFER/OUTPUT, strided or row-major, or any
 * value stored row-major): strides[i] is the element stride along input dim i, *offset the
 * element offset of the origin.  -1 with *why (a new string) when the access is piecewise,
 * divides, or the polynomials overflow. */
struct isl_pw_multi_aff;
struct isl_set;
int tinyc_evt_access_layout(const tinyc_graph *g, struct isl_pw_multi_aff *acc,
			    struct isl_set *dom, const tinyc_uop *array, int nin,
			    tinyc_evt_poly *strides, tinyc_evt_poly *offset, char **why);

/* Verify every graph of an extracted set (dtypes included).  0 or -1. */
int tinyc_evt_set_verify(tinyc_ctx *ctx, __tinyc_keep const tinyc_evt_set *s);

#endif
