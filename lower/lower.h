/* lower/: the lowering passes that turn the UOp DAG into index-level IRs.
 *
 * This folder holds UOp DAG -> IndexBook (seed 002 §1), Poly-View -> RB-SSA, the RB-SSA
 * interpreter and the epilogue extraction.  This header declares the IndexBook IR and its
 * pass; the RB-SSA declarations live beside it.
 *
 * The IndexBook gives every value v of the graph (one per UOp node, same index):
 *
 *   - axes: v's iteration axes {id, name, size, kind}.  For every op but REDUCE these are
 *     v's dims in order.  For REDUCE they are the operand's dims in order, the reduced ones
 *     marked TINYC_AXIS_REDUCE (they are summed away; `out` maps them to 0 or drops them).
 *     An axis carried through unchanged (PERMUTE, elementwise, a reshape that keeps a dim)
 *     keeps its id and name, so a logical axis can be followed through the graph.
 *   - out: where the element at an iteration point is stored in v (identity except REDUCE).
 *   - map[i]: the AxisMap of operand i, the operand's index as a function of v's axes
 *     (affine in the axes and size symbols, plus floor division and mod by constants),
 *     optionally guarded (PAD: outside the guard the value is the pad constant 0).
 *   - domain: the constraints on v's axes (0 <= a < size, and guards).
 *   - REDUCE: the reduce axes, reduce op and accumulation dtype.
 *
 * This is tinygrad's ref-compat view kept explicit: a matmul stays reshape -> permute ->
 * broadcast (size-1 axes read at index 0) -> MUL -> REDUCE, every step its own value.
 */
#ifndef TINYC_LOWER_LOWER_H
#define TINYC_LOWER_LOWER_H

#include <stdint.h>

#include "ir/ctx.h"
#include "ir/uop.h"

/* ---- index expressions ------------------------------------------------------------------ */

/* Operators of an index expression.  Divisors and factors are constants (isl's rule);
 * MOD is shorthand for a - q*floor(a/q), so every expression is affine + floordiv. */
typedef enum tinyc_ix_op {
	TINYC_IX_CONST,		/* c */
	TINYC_IX_AXIS,		/* the value's axis number `var` (a position in its axes) */
	TINYC_IX_SYM,		/* the graph's size symbol number `var` */
	TINYC_IX_ADD,		/* a + b */
	TINYC_IX_MUL,		/* c * a */
	TINYC_IX_FDIV,		/* floor(a / c), c > 0 */
	TINYC_IX_MOD,		/* a - c*floor(a / c), c > 0 */
} tinyc_ix_op;

/* An index expression: an immutable tree owned by its IndexBook (nodes may be shared). */
typedef struct tinyc_ix {
	tinyc_ix_op op;
	int64_t c;		/* CONST: value; MUL: factor; FDIV, MOD: divisor (> 0) */
	int var;		/* AXIS: axis position; SYM: symbol index */
	const struct tinyc_ix *a;	/* ADD, MUL, FDIV, MOD: first operand */
	const struct tinyc_ix *b;	/* ADD: second operand */
} tinyc_ix;

/* One constraint on a value's axes: e >= 0, or e == 0 when eq. */
typedef struct tinyc_ixcon {
	const tinyc_ix *e;	/* the expression */
	int eq;			/* 1: e == 0; 0: e >= 0 */
} tinyc_ixcon;

/* ---- the IndexBook ---------------------------------------------------------------------- */

typedef enum tinyc_axis_kind {
	TINYC_AXIS_ITER,	/* an ordinary axis */
	TINYC_AXIS_BROADCAST,	/* extent 1: every access along it is at index 0 */
	TINYC_AXIS_REDUCE,	/* summed away by a REDUCE (only in a REDUCE's axes) */
} tinyc_axis_kind;

/* One iteration axis of a value. */
typedef struct tinyc_axis {
	int id;			/* unique in the book; kept by axes that pass through unchanged */
	const char *name;	/* unique in the book per id ("m", "k", "a3"), owned by the book */
	tinyc_dim size;		/* extent: a constant or a size symbol */
	tinyc_axis_kind kind;	/* iter / broadcast / reduce */
} tinyc_axis;

/* The AxisMap of one operand: the operand's index as expressions of the value's axes. */
typedef struct tinyc_axismap {
	int src;		/* operand node index */
	int rank;		/* the operand's rank: entries in idx */
	const tinyc_ix **idx;	/* idx[d]: the operand's index along dim d */
	int nguard;		/* constraints under which the operand is read (PAD) */
	const tinyc_ixcon *guard;	/* outside them the element is `fill` (PAD: 0) */
	double fill;		/* the value where a guard fails */
} tinyc_axismap;

/* The IndexBook entry of one value (UOp node). */
typedef struct tinyc_ibval {
	int node;		/* the UOp node index (= position in the book) */
	int naxes;		/* iteration axes */
	tinyc_axis *axes;	/* the axes, see the header comment */
	int rank;		/* the value's rank: entries in out */
	const tinyc_ix **out;	/* out[d]: v's index along dim d at an iteration point */
	int nmap;		/* operand maps (= the node's nsrc) */
	tinyc_axismap map[3];	/* per operand */
	int ndom;		/* constraints in domain */
	tinyc_ixcon *domain;	/* bounds 0 <= a < size of every axis, then guards */
	int nreduce;		/* REDUCE: number of reduce axes */
	int *reduce_axes;	/* REDUCE: positions (in axes) of the reduce axes */
	tinyc_redop redop;	/* REDUCE: combining op */
	tinyc_dtype acc;	/* REDUCE: accumulation dtype (acc= or the line's), else NONE */
} tinyc_ibval;

/* The IndexBook of a graph. */
typedef struct tinyc_indexbook {
	const tinyc_graph *g;		/* the UOp graph (kept) */
	const tinyc_bindings *bind;	/* compile-time symbol values (kept, may be NULL) */
	int n;				/* values: = g->n */
	tinyc_ibval *val;		/* per node */
	int naxis_ids;			/* axis ids handed out: 0..naxis_ids-1 */
	struct tinyc_arena *arena;	/* owns every expression, name and array (ir/arena.h) */
} tinyc_indexbook;

/* Build the IndexBook of a verified graph, running the per-UOp local checks
 * (BroadcastMismatch, AxisAlignmentMismatch, AccDtypeMissing, TypeMismatch,
 * SymbolicReshape, ...) at the source line of the offending node.  b may be NULL.
 * O(|V|*R) apart from reshapes, which cost O(R) per dim.  NULL with diagnostics on error. */
__tinyc_give tinyc_indexbook *tinyc_indexbook_build(tinyc_ctx *ctx,
						    __tinyc_keep const tinyc_graph *g,
						    __tinyc_keep const tinyc_bindings *b);
/* The final validation: axes agree with the node shapes, maps have the operands' ranks and
 * name existing axes, broadcast dims are read at 0, reductions carry an accumulator dtype.
 * 0, or -1 with diagnostics. */
int tinyc_indexbook_verify(tinyc_ctx *ctx, __tinyc_keep const tinyc_indexbook *ib);
/* The stable text dump (format documented in lower/indexbook.c). */
void tinyc_indexbook_print(__tinyc_keep const tinyc_indexbook *ib, tinyc_buf *out);
void tinyc_indexbook_free(__tinyc_take tinyc_indexbook *ib);

/* Print e with v's axis names and the graph's symbol names ("floor((m + 4)/8)"). */
void tinyc_ix_print(__tinyc_keep const tinyc_indexbook *ib, __tinyc_keep const tinyc_ibval *v,
		    __tinyc_keep const tinyc_ix *e, tinyc_buf *out);
/* Evaluate e at axis values ax[] (by position) and symbol values sym[] (by index).
 * Returns 0, or -1 if e needs an unbound symbol (sym[i] < 0) or sym is NULL. */
int tinyc_ix_eval(__tinyc_keep const tinyc_ix *e, const int64_t *ax, const int64_t *sym,
		  int64_t *res);

/* Compose: e (over some value's axes) with every axis a replaced by sub[a] (expressions
 * over another value's axes, of extents ext[], -1 when unknown; ext may be NULL), simplified
 * by linear forms and ranges (divisions that the ranges decide vanish, nested divisions
 * merge).  The result is allocated in ib's arena; NULL when out of memory. */
const tinyc_ix *tinyc_ix_substitute(tinyc_indexbook *ib, __tinyc_keep const tinyc_ix *e,
				    const tinyc_ix *const *sub, const int64_t *ext);
/* The range [lo, hi] of e over axes of extents ext[] (-1 unknown; ext may be NULL) and the
 * bound symbols.  Returns a mask: 1 when lo is finite, 2 when hi is finite. */
int tinyc_ix_range(__tinyc_keep const tinyc_indexbook *ib, __tinyc_keep const tinyc_ix *e,
		   const int64_t *ext, int64_t *lo, int64_t *hi);

/* ==== RB-SSA: builder, IndexBook cross-check, pass (lower/rbssa_build.c) and CPU
 * interpreter (lower/rbssa_interp.c).  The IR itself is ir/rbssa.h. ======================== */

struct tinyc_rbssa;
struct tinyc_io;

/* Build the RB-SSA function of a verified graph g (seed 002 §3.2): tinygrad's ref-compat
 * order kept (reshape -> transpose -> explicit broadcast_in_dim -> elementwise -> reduce),
 * implicit broadcasts made explicit, axis names from ib (built here when ib is NULL).
 * b: compile-time symbol values (may be NULL).  NULL with diagnostics on error. */
__tinyc_give struct tinyc_rbssa *tinyc_rbssa_build(tinyc_ctx *ctx,
						   __tinyc_keep const tinyc_graph *g,
						   __tinyc_keep const tinyc_bindings *b,
						   __tinyc_keep const tinyc_indexbook *ib);
/* Seed §3.3: every reduce's dims equal the IndexBook's reduce_axes of its REDUCE node
 * (ReduceAxesMismatch otherwise).  0 or -1. */
int tinyc_rbssa_check_indexbook(tinyc_ctx *ctx, __tinyc_keep const struct tinyc_rbssa *f,
				__tinyc_keep const tinyc_indexbook *ib);
/* Execute f on the CPU: io->in by BUFFER slot (kept), io->out allocated, one per yield in
 * order (previous outputs freed first; none on error).  b binds every symbol f's shapes use
 * (runtime values; they must agree with f's compile-time ones).  Numerics of DESIGN.md §2,
 * implemented independently of the reference evaluator (see lower/rbssa_interp.c).
 * 0, or -1 with diagnostics (MissingInput, InputMismatch, UnboundSymbol, ...). */
int tinyc_rbssa_run(tinyc_ctx *ctx, __tinyc_keep const struct tinyc_rbssa *f,
		    __tinyc_keep const tinyc_bindings *b, struct tinyc_io *io);

/* ---- epilogue graphs (poly/evt_extract.c, lower/evt_passes.c) --------------------------
 *
 * The "evt" stage: for every contraction the Poly-View tagged, the region of the UOp DAG
 * that consumes its REDUCE becomes an epilogue graph (ir/evt.h) that runs on the
 * accumulator in registers inside the matmul kernel.  Extraction classifies every leaf by
 * its strides along (m, n, l) (seed 001: (0,1,0) row vector, (1,0,0) column vector,
 * (0,0,0) scalar, otherwise AuxLoad), makes each OUTPUT an AuxStore and each REDUCE over
 * m and/or n a reduction node; a consumer that cannot run in the epilogue stays a separate
 * kernel, with the reason in the dump (poly/poly.h: tinyc_evt_extract).  Then the graph
 * passes below run (types, cse, dce, sort).
 */
#include "ir/evt.h"

/* Passes on one graph; each logs its changes in g->log.  The graph must verify
 * structurally (tinyc_evt_verify with types = 0) first.
 *   types: fill dtypes from the kinds' rules, insert a Cast where a Compute's operand, a
 *          store's or a reduction's input has another type (EvtTypeClash where no Cast can
 *          help: a WHERE condition that is not bool);
 *   cse:   a node equal to an earlier one (kind, type, op, tensor, children) is replaced by
 *          it everywhere, so it is computed once and kept in a register (outputs are never
 *          merged);
 *   dce:   nodes that reach no output are removed;
 *   sort:  a stable topological order (children first; among ready nodes the lowest index).
 * tinyc_evt_run_passes verifies, runs all four in that order and verifies the types. */
int tinyc_evt_pass_types(tinyc_ctx *ctx, tinyc_evt *g);
int tinyc_evt_pass_cse(tinyc_ctx *ctx, tinyc_evt *g);
int tinyc_evt_pass_dce(tinyc_ctx *ctx, tinyc_evt *g);
int tinyc_evt_pass_sort(tinyc_ctx *ctx, tinyc_evt *g);
int tinyc_evt_run_passes(tinyc_ctx *ctx, tinyc_evt *g);

/* ---- producers.c: what a contraction reads (a UOp graph analysis) ---- */

/* Whether operand `which` of node u is used without broadcasting (each element of u reads
 * a distinct element of the operand). */
int tinyc_operand_injective(const tinyc_graph *g, const tinyc_bindings *b, int u, int which);
/* The MUL of contraction r (a REDUCE ADD over, through CASTs and movement, a MUL), or -1
 * when r is not one. */
int tinyc_contraction_mul(const tinyc_graph *g, int r);
/* mark[i] = 1 for every computed value (not a BUFFER or CONST below movement and CASTs)
 * that a contraction's MUL reads with broadcasting: it is materialised instead of being
 * recomputed inside the contraction's k loop.  mark has g->n entries; b may be NULL. */
void tinyc_contraction_producers(const tinyc_graph *g, const tinyc_bindings *b,
				 unsigned char *mark);
/* mark[i] = 1 for the value that ends a contraction's epilogue chain when several
 * consumers read it: the chain is the contraction's REDUCE under same-shaped elementwise
 * ops, one user each, whose other operands are loads (a cast, a bias, a residual add:
 * GPT-2's attention projection + bias + x, read by LayerNorm 2 and the MLP's residual).
 * The contraction's epilogue stores it in its own dtype, once; its readers load one
 * buffer instead of the raw reduction, the bias and the residual.  Not for a chain ending
 * at an OUTPUT or at a value prod (tinyc_contraction_producers) already stores.  0, or
 * -1 out of memory (nothing marked). */
int tinyc_contraction_store_ends(const tinyc_graph *g, const unsigned char *prod,
				 unsigned char *mark);

#endif
