/* The epilogue graph (DESIGN.md §1 "Epilogue graph", seeds 000 and 001): what runs on a
 * contraction's accumulator, in registers, inside the matmul kernel.
 *
 * A graph is a list of nodes; each node lists its children (the nodes whose values it
 * takes, in order), seed 000's edge tuple: node i's entry is seq<child...>.  The graph is
 * acyclic; the nodes without parents are its roots and must be outputs (AuxStore, or one of
 * the reductions).  Every value is a function of the output coordinates (m, n, l): m the
 * row, n the column, l the batch (0 when the contraction has no batch axis).  Tensors are
 * addressed by element strides along m, n, l (seed 001's StrideMNL) plus an offset; a
 * stride is a polynomial of the size symbols, e.g. N or M*N.
 *
 *   AccFetch          the accumulator element at (m, n, l)                     no children
 *   SrcFetch          the C operand at (m, n, l) (a full tensor, like AuxLoad)  no children
 *   AuxLoad           a full [M, N] tensor at any strides                       no children
 *   RowBroadcast      a length-N vector, strides (0, dn, dl)                    no children
 *   ColBroadcast      a length-M vector, strides (dm, 0, dl)                    no children
 *   ScalarBroadcast   a constant, or a 1-element tensor (strides (0, 0, dl))    no children
 *   Compute(fn)       a UOp elementwise op (unary, binary, WHERE) on `compute` values
 *   Cast              value conversion to `dtype`                               1 child
 *   AuxStore          writes its child at (m, n, l), passes the value on        1 child
 *   RowReduction      over m, one value per (n, l): ADD or MAX                  1 child
 *   ColReduction      over n, one value per (m, l)                              1 child
 *   ScalarReduction   over m and n, one value per l                             1 child
 *
 * Types: a Compute's operands all have its `compute` type (WHERE: a bool condition and two
 * `compute` values); its result is `compute`, bool for comparisons, the target type for
 * BITCAST.  AuxStore's child has the stored tensor's type; a reduction's child has the
 * accumulation type (`compute`) and the result is converted to the tensor's type when it
 * is written.  The type pass (lower/evt_passes.c) inserts the Casts that make a graph
 * built through the C API obey these rules; the verifier checks them.
 *
 * Nodes own their strings.  Builders return the new node's index, or -1 with a diagnostic
 * on the context.  Nothing here prints or exits; malformed graphs are diagnostics
 * (EvtMalformed, EvtCycle, EvtTypeClash), never crashes.
 */
#ifndef TINYC_IR_EVT_H
#define TINYC_IR_EVT_H

#include <stdint.h>

#include "ir/ctx.h"
#include "ir/dtype.h"
#include "ir/uop.h"

/* ------------------------------------------------------------- polynomials ---- */

#define TINYC_EVT_MAXTERM 4	/* terms of a stride or offset polynomial */
#define TINYC_EVT_MAXFAC 3	/* symbols multiplied in one term */

/* One term: c * sym[0] * ... * sym[nsym-1]. */
typedef struct tinyc_evt_term {
	int64_t c;			/* integer coefficient (never 0 in a normalised poly) */
	int nsym;			/* symbols in the product */
	int sym[TINYC_EVT_MAXFAC];	/* graph symbol indices, sorted ascending */
} tinyc_evt_term;

/* A polynomial of size symbols with integer coefficients (a stride or an offset). */
typedef struct tinyc_evt_poly {
	int nterm;			/* 0 means the constant 0 */
	tinyc_evt_term t[TINYC_EVT_MAXTERM];	/* terms, normalised: sorted, merged, no zeros */
} tinyc_evt_poly;

/* The constant c. */
tinyc_evt_poly tinyc_evt_poly_const(int64_t c);
/* c * sym (sym < 0: the constant c). */
tinyc_evt_poly tinyc_evt_poly_sym(int64_t c, int sym);
/* The value of a dim (a constant or a symbol). */
tinyc_evt_poly tinyc_evt_poly_dim(const tinyc_dim *d);
/* a + b and a * b into *out; -1 when the result has too many terms or factors. */
int tinyc_evt_poly_add(const tinyc_evt_poly *a, const tinyc_evt_poly *b, tinyc_evt_poly *out);
int tinyc_evt_poly_mul(const tinyc_evt_poly *a, const tinyc_evt_poly *b, tinyc_evt_poly *out);
int tinyc_evt_poly_is_zero(const tinyc_evt_poly *p);
/* Whether p is the constant c. */
int tinyc_evt_poly_is_const(const tinyc_evt_poly *p, int64_t c);
int tinyc_evt_poly_equal(const tinyc_evt_poly *a, const tinyc_evt_poly *b);
/* Evaluate under symbol values sym[] (-1 when a needed symbol is negative/unbound). */
int tinyc_evt_poly_eval(const tinyc_evt_poly *p, const int64_t *sym, int nsym, int64_t *out);
/* Print as "M*N + 2*N + 1" with the given symbol names ("0" for the zero poly). */
void tinyc_evt_poly_print(const tinyc_evt_poly *p, char *const *syms, int nsym, tinyc_buf *out);

/* ------------------------------------------------------------------- nodes ---- */

typedef enum tinyc_evt_kind {
	TINYC_EVT_ACC_FETCH,
	TINYC_EVT_SRC_FETCH,
	TINYC_EVT_AUX_LOAD,
	TINYC_EVT_ROW_BCAST,
	TINYC_EVT_COL_BCAST,
	TINYC_EVT_SCALAR_BCAST,
	TINYC_EVT_COMPUTE,
	TINYC_EVT_CAST,
	TINYC_EVT_AUX_STORE,
	TINYC_EVT_ROW_RED,
	TINYC_EVT_COL_RED,
	TINYC_EVT_SCALAR_RED,
	TINYC_EVT_KIND_COUNT,
} tinyc_evt_kind;

/* The coordinates tensors are addressed by. */
enum { TINYC_EVT_AXIS_M, TINYC_EVT_AXIS_N, TINYC_EVT_AXIS_L };

/* Where a tensor's elements are: element (m, n, l) at offset + m*stride[0] + n*stride[1]
 * + l*stride[2] (a vector or scalar simply has zero strides along the axes it lacks). */
typedef struct tinyc_evt_layout {
	tinyc_evt_poly stride[3];	/* element strides along m, n, l */
	tinyc_evt_poly offset;		/* element offset of (0, 0, 0) */
} tinyc_evt_layout;

/* A tensor in device memory that a node reads or writes. */
typedef struct tinyc_evt_tensor {
	char *name;		/* tensor name (owned), e.g. the BUFFER's or OUTPUT's name= */
	int buf;		/* who it is: the UOp node (BUFFER/OUTPUT) for extracted graphs,
				 * the caller's buffer number for graphs built by hand */
	tinyc_dtype dtype;	/* element type in memory */
	tinyc_evt_layout lay;	/* strides and offset */
} tinyc_evt_tensor;

/* One node. */
typedef struct tinyc_evt_node {
	tinyc_evt_kind kind;	/* what it is */
	tinyc_dtype dtype;	/* the type of the value it passes on */
	tinyc_dtype compute;	/* COMPUTE: operand type; reductions: accumulation type;
				 * TINYC_DTYPE_NONE elsewhere */
	tinyc_op fn;		/* COMPUTE: the elementwise UOp op; TINYC_OP_NONE elsewhere */
	tinyc_redop redop;	/* reductions: TINYC_RED_ADD or TINYC_RED_MAX */
	int has_tensor;		/* t is used: loads, stores, reductions, tensor scalars */
	tinyc_evt_tensor t;	/* the tensor read or written */
	double fval;		/* SCALAR_BCAST constant (float types) */
	int64_t ival;		/* SCALAR_BCAST constant (integer and bool types) */
	int nchild;		/* children (edges) */
	int child[3];		/* child node indices, in operand order */
	int uop;		/* the UOp node this node stands for, or -1 */
} tinyc_evt_node;

/* An epilogue graph. */
typedef struct tinyc_evt {
	tinyc_dtype acc;	/* the accumulator type (AccFetch's dtype) */
	int batched;		/* the contraction has a batch axis l */
	int n;			/* nodes */
	int cap;		/* allocated nodes */
	tinyc_evt_node *nodes;	/* nodes; after tinyc_evt_sort, children before parents */
	int nsym;		/* size symbols (for printing and evaluating polynomials) */
	char **syms;		/* their names (owned) */
	int reduce_uop;		/* extracted graphs: the contraction's REDUCE node, else -1 */
	tinyc_buf log;		/* what the passes did, one line each (part of the dump) */
} tinyc_evt;

const char *tinyc_evt_kind_name(tinyc_evt_kind k);
/* Number of children a node of this kind takes (COMPUTE: its op's arity); -1 unknown. */
int tinyc_evt_arity(const tinyc_evt_node *nd);
/* Loads: nodes whose value comes from memory or a constant (no children). */
int tinyc_evt_is_leaf(tinyc_evt_kind k);
/* Outputs: AuxStore and the reductions (the allowed roots). */
int tinyc_evt_is_output(tinyc_evt_kind k);
int tinyc_evt_is_reduction(tinyc_evt_kind k);

/* ----------------------------------------------------------------- builder ---- */

/* A new empty graph for an accumulator of type acc. */
__tinyc_give tinyc_evt *tinyc_evt_alloc(tinyc_ctx *ctx, tinyc_dtype acc);
void tinyc_evt_free(__tinyc_take tinyc_evt *g);
/* A deep copy (the log included). */
__tinyc_give tinyc_evt *tinyc_evt_copy(tinyc_ctx *ctx, __tinyc_keep const tinyc_evt *g);
/* Name the size symbols the strides use (copied); replaces earlier names. */
int tinyc_evt_set_symbols(tinyc_ctx *ctx, tinyc_evt *g, int nsym, const char *const *names);

/* Append a copy of *proto (its tensor name copied, children copied); returns its index.
 * The children may be set later with tinyc_evt_set_edges. */
int tinyc_evt_add(tinyc_ctx *ctx, tinyc_evt *g, const tinyc_evt_node *proto);
/* Node i's children: seq<children[0], ...> (n <= 3).  Indices are checked by the
 * verifier, not here, so a malformed edge list is reported with the whole graph. */
int tinyc_evt_set_edges(tinyc_ctx *ctx, tinyc_evt *g, int i, int n, const int *children);
/* Set every node's children from a seed-000 edge tuple in text form, one seq per node:
 * "{}, {}, {0, 1}, {2}" (braces or seq<...>).  EvtMalformed on a syntax error or a count
 * that differs from the number of nodes. */
int tinyc_evt_set_edge_tuple(tinyc_ctx *ctx, tinyc_evt *g, const char *text);

/* Convenience constructors (children are set with tinyc_evt_set_edges).  A row-major
 * [M, N] tensor (batch stride M*N) has the layout tinyc_evt_layout_rowmajor. */
tinyc_evt_layout tinyc_evt_layout_rowmajor(const tinyc_dim *m, const tinyc_dim *n);
int tinyc_evt_acc_fetch(tinyc_ctx *ctx, tinyc_evt *g);
/* Loads: kind is SRC_FETCH, AUX_LOAD, ROW_BCAST, COL_BCAST or SCALAR_BCAST. */
int tinyc_evt_load(tinyc_ctx *ctx, tinyc_evt *g, tinyc_evt_kind kind, const char *name, int buf,
		   tinyc_dtype dt, const tinyc_evt_layout *lay);
/* A constant scalar of type dt (value v converted to dt when used). */
int tinyc_evt_scalar(tinyc_ctx *ctx, tinyc_evt *g, tinyc_dtype dt, double v);
/* Compute(fn) on `compute` operands (TINYC_DTYPE_NONE: the type of its first value
 * operand, filled by the type pass); result type by the rules above (BITCAST: dt). */
int tinyc_evt_compute(tinyc_ctx *ctx, tinyc_evt *g, tinyc_op fn, tinyc_dtype compute);
int tinyc_evt_bitcast(tinyc_ctx *ctx, tinyc_evt *g, tinyc_dtype from, tinyc_dtype to);
int tinyc_evt_cast(tinyc_ctx *ctx, tinyc_evt *g, tinyc_dtype to);
int tinyc_evt_store(tinyc_ctx *ctx, tinyc_evt *g, const char *name, int buf, tinyc_dtype dt,
		    const tinyc_evt_layout *lay);
/* kind is ROW_RED, COL_RED or SCALAR_RED; redop ADD or MAX; compute the accumulation type;
 * the result tensor has type dt and layout lay (strides along the reduced axes unused). */
int tinyc_evt_reduction(tinyc_ctx *ctx, tinyc_evt *g, tinyc_evt_kind kind, tinyc_redop redop,
			tinyc_dtype compute, const char *name, int buf, tinyc_dtype dt,
			const tinyc_evt_layout *lay);

/* --------------------------------------------------------- verify, print ---- */

/* Check the graph: arities, child indices in range, no cycle, roots are outputs, at least
 * one output, tensor layouts fit the kinds (a row vector has no m stride, ...), reduction
 * ops and types.  With types != 0, also every typing rule above (what the type pass
 * establishes).  Returns 0, or -1 with EvtMalformed / EvtCycle / EvtTypeClash diagnostics
 * (all problems found are reported). */
int tinyc_evt_verify(tinyc_ctx *ctx, __tinyc_keep const tinyc_evt *g, int types);

/* The text dump (--dump-stage=evt, format at the top of ir/evt.c). */
void tinyc_evt_print(__tinyc_keep const tinyc_evt *g, tinyc_buf *out);
/* The seed-000 edge tuple "tuple<seq<>, seq<0, 1>, ...>". */
void tinyc_evt_print_edges(__tinyc_keep const tinyc_evt *g, tinyc_buf *out);
/* The visit order: a depth-first post-order from the roots (in index order), children in
 * order, every node once (a node used by several parents is computed once and kept).
 * order[] receives g->n entries at most; returns how many (the live nodes). */
int tinyc_evt_visit_order(__tinyc_keep const tinyc_evt *g, int *order);

/* ------------------------------------------------------------ the stage ---- */

/* Why a contraction's consumer did not join its epilogue graph. */
typedef struct tinyc_evt_note {
	int uop;		/* the UOp node left out */
	char *why;		/* the reason (owned) */
} tinyc_evt_note;

/* One contraction and its epilogue. */
typedef struct tinyc_evt_entry {
	int reduce;		/* the contraction's REDUCE node */
	int contraction;	/* its index in the Poly-View's contractions */
	tinyc_evt *g;		/* the epilogue graph (owned), NULL when none could be built */
	int nregion;		/* UOp nodes the graph covers (computed inside the kernel) */
	int *region;		/* their indices, ascending (owned) */
	int nnote;		/* consumers left to separate kernels */
	tinyc_evt_note *note;	/* and why (owned) */
	char *why_none;		/* when g is NULL: why the contraction has no epilogue graph */
} tinyc_evt_entry;

/* The "evt" stage: the epilogue graphs of a module. */
typedef struct tinyc_evt_set {
	int n;			/* contractions */
	tinyc_evt_entry *e;	/* one per contraction, in graph order (owned) */
	const tinyc_graph *uop;	/* the UOp graph (kept), for printing node ids */
} tinyc_evt_set;

void tinyc_evt_set_free(__tinyc_take tinyc_evt_set *s);
/* The stage dump: every entry's graph, the nodes it covers and the consumers left out. */
void tinyc_evt_set_print(__tinyc_keep const tinyc_evt_set *s, tinyc_buf *out);
/* The entry whose region holds UOp node u (or whose REDUCE is u), or NULL. */
const tinyc_evt_entry *tinyc_evt_set_find(__tinyc_keep const tinyc_evt_set *s, int u);

#endif
