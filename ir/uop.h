/* The UOp DAG: tinyc's input IR (DESIGN.md §2, "tinyc-uop v0").
 *
 * A graph is a list of nodes in topological order (operands before users).  Every node
 * carries the dtype and shape written on its line; the verifier (uop_verify.c) infers both
 * from the operands and reports any disagreement.  Sizes are either constants or symbols
 * (size parameters of the kernel, e.g. M), shared through the graph's symbol table.
 */
#ifndef TINYC_IR_UOP_H
#define TINYC_IR_UOP_H

#include <stdint.h>
#include <stdio.h>

#include "ir/ctx.h"
#include "ir/dtype.h"
#include "ir/scalar.h"

#define TINYC_MAX_RANK 16		/* highest tensor rank accepted */
#define TINYC_MAX_DIM  (INT64_C(1) << 40)	/* largest single dim accepted */
#define TINYC_MAX_NODES (1 << 18)	/* most nodes a graph may have; BUFFER slots are below */
#define TINYC_MAX_BYTES (INT64_C(1) << 46)	/* largest value or strided buffer, in bytes */

struct tinyc_bindings;

/* Op kinds. */
typedef enum tinyc_opkind {
	TINYC_KIND_LEAF,	/* BUFFER, CONST */
	TINYC_KIND_MOVEMENT,	/* RESHAPE, PERMUTE, EXPAND, PAD, SHRINK, FLIP, CONTIGUOUS */
	TINYC_KIND_ELEMENTWISE,	/* unary, binary, ternary, casts */
	TINYC_KIND_REDUCE,	/* REDUCE */
	TINYC_KIND_SINK,	/* OUTPUT */
} tinyc_opkind;

/* How a node's dtype follows from its operands. */
typedef enum tinyc_dtrule {
	TINYC_DT_DECLARED,	/* the line's dtype is the result (BUFFER, CONST, CAST, BITCAST) */
	TINYC_DT_SAME,		/* all operands and the result share one dtype */
	TINYC_DT_BOOL,		/* operands share a dtype; the result is bool (comparisons) */
	TINYC_DT_SELECT,	/* WHERE: bool condition, two values of the result dtype */
	TINYC_DT_ACC,		/* REDUCE: result is the line's dtype, operand may differ (acc) */
} tinyc_dtrule;

/* The op table: X(NAME, arity, kind, dtype rule, operand domain, math function).
 *   arity      operands; -1: checked by hand
 *   domain     the operand dtypes the op accepts (TINYC_DOM_*, ir/scalar.h)
 *   math       the TINYC_GM_* function that computes a float unary op in every layer: its
 *              scalar semantics (tinyc_op_unary_f), GPU IR call and CUDA spelling
 *              (NONE: written out by each layer, e.g. NEG, RECIPROCAL, RELU) */
#define TINYC_OPS(X)                                     \
	X(BUFFER, 0, LEAF, DECLARED, ANY, NONE)          \
	X(CONST, 0, LEAF, DECLARED, ANY, NONE)           \
	X(RESHAPE, 1, MOVEMENT, SAME, ANY, NONE)         \
	X(PERMUTE, 1, MOVEMENT, SAME, ANY, NONE)         \
	X(EXPAND, 1, MOVEMENT, SAME, ANY, NONE)          \
	X(PAD, 1, MOVEMENT, SAME, ANY, NONE)             \
	X(SHRINK, 1, MOVEMENT, SAME, ANY, NONE)          \
	X(FLIP, 1, MOVEMENT, SAME, ANY, NONE)            \
	X(CONTIGUOUS, 1, MOVEMENT, SAME, ANY, NONE)      \
	X(REDUCE, 1, REDUCE, ACC, ANY, NONE)             \
	X(CAST, 1, ELEMENTWISE, DECLARED, ANY, NONE)     \
	X(BITCAST, 1, ELEMENTWISE, DECLARED, ANY, NONE)  \
	X(NEG, 1, ELEMENTWISE, SAME, NUM, NONE)          \
	X(RECIPROCAL, 1, ELEMENTWISE, SAME, FLOAT, NONE) \
	X(SQRT, 1, ELEMENTWISE, SAME, FLOAT, SQRT)       \
	X(EXP2, 1, ELEMENTWISE, SAME, FLOAT, EXP2)       \
	X(LOG2, 1, ELEMENTWISE, SAME, FLOAT, LOG2)       \
	X(SIN, 1, ELEMENTWISE, SAME, FLOAT, SIN)         \
	X(TRUNC, 1, ELEMENTWISE, SAME, FLOAT, TRUNC)     \
	X(RELU, 1, ELEMENTWISE, SAME, NUM, NONE)         \
	X(TANH, 1, ELEMENTWISE, SAME, FLOAT, TANH)       \
	X(ADD, 2, ELEMENTWISE, SAME, ANY, NONE)          \
	X(SUB, 2, ELEMENTWISE, SAME, NUM, NONE)          \
	X(MUL, 2, ELEMENTWISE, SAME, ANY, NONE)          \
	X(FDIV, 2, ELEMENTWISE, SAME, FLOAT, NONE)       \
	X(IDIV, 2, ELEMENTWISE, SAME, INT, NONE)         \
	X(MOD, 2, ELEMENTWISE, SAME, INT, NONE)          \
	X(MAX, 2, ELEMENTWISE, SAME, ANY, NONE)          \
	X(CMPLT, 2, ELEMENTWISE, BOOL, ANY, NONE)        \
	X(CMPNE, 2, ELEMENTWISE, BOOL, ANY, NONE)        \
	X(CMPEQ, 2, ELEMENTWISE, BOOL, ANY, NONE)        \
	X(AND, 2, ELEMENTWISE, SAME, BITS, NONE)         \
	X(OR, 2, ELEMENTWISE, SAME, BITS, NONE)          \
	X(XOR, 2, ELEMENTWISE, SAME, BITS, NONE)         \
	X(SHL, 2, ELEMENTWISE, SAME, INT, NONE)          \
	X(SHR, 2, ELEMENTWISE, SAME, INT, NONE)          \
	X(WHERE, 3, ELEMENTWISE, SELECT, ANY, NONE)      \
	X(OUTPUT, 1, SINK, SAME, ANY, NONE)

typedef enum tinyc_op {
#define X(name, arity, kind, rule, dom, math) TINYC_OP_##name,
	TINYC_OPS(X)
#undef X
	TINYC_OP_COUNT,
	TINYC_OP_NONE = -1,
} tinyc_op;

typedef struct tinyc_opinfo {
	const char *name;	/* upper-case spelling */
	int arity;		/* number of operands */
	tinyc_opkind kind;	/* leaf / movement / elementwise / reduce / sink */
	tinyc_dtrule dtrule;	/* dtype rule */
	tinyc_opdom dom;	/* operand domain */
	tinyc_gmath math;	/* the math function of a float unary op, or TINYC_GM_NONE */
} tinyc_opinfo;

const tinyc_opinfo *tinyc_op_info(tinyc_op op);
/* Parse an op name (VIEW is an alias of BUFFER); TINYC_OP_NONE if unknown. */
tinyc_op tinyc_op_from_name(const char *s, int len);
int tinyc_op_is_unary(tinyc_op op);	/* elementwise with one operand, not a cast */
int tinyc_op_is_binary(tinyc_op op);
/* The float semantics of a unary op (tinyc_op_is_unary) on x, computed in double: the one
 * definition the reference evaluator and the RB-SSA and GPU IR interpreters share. */
double tinyc_op_unary_f(tinyc_op op, double x);

/* REDUCE's combining operation. */
typedef enum tinyc_redop {
	TINYC_RED_ADD,
	TINYC_RED_MAX,
	TINYC_RED_MUL,
} tinyc_redop;
const char *tinyc_redop_name(tinyc_redop r);

/* Attribute keys, in the order the canonical printer writes them. */
typedef enum tinyc_attr {
	TINYC_ATTR_SLOT,	/* slot=     BUFFER */
	TINYC_ATTR_NAME,	/* name=     BUFFER, OUTPUT */
	TINYC_ATTR_STRIDES,	/* strides=  BUFFER, OUTPUT */
	TINYC_ATTR_SHAPE,	/* shape=    RESHAPE, EXPAND */
	TINYC_ATTR_PERM,	/* perm=     PERMUTE */
	TINYC_ATTR_OP,		/* op=       REDUCE */
	TINYC_ATTR_AXES,	/* axes=     REDUCE, FLIP */
	TINYC_ATTR_KEEPDIM,	/* keepdim=  REDUCE */
	TINYC_ATTR_ACC,		/* acc=      REDUCE */
	TINYC_ATTR_PADS,	/* pads=     PAD */
	TINYC_ATTR_BOUNDS,	/* bounds=   SHRINK */
	TINYC_ATTR_COUNT,
	TINYC_ATTR_NONE = -1,
} tinyc_attr;
const char *tinyc_attr_name(tinyc_attr a);
/* Parse an attribute key; TINYC_ATTR_NONE if unknown. */
tinyc_attr tinyc_attr_from_name(const char *s, int len);
/* Whether op takes attribute a: 0 no, 1 optional, 2 required. */
int tinyc_op_attr(tinyc_op op, tinyc_attr a);

/* A size: a constant (sym < 0) or a symbol of the graph (sym >= 0). */
typedef struct tinyc_dim {
	int64_t val;		/* the size when sym < 0 */
	int sym;		/* index into the graph's symbols, or -1 */
} tinyc_dim;

/* A literal (CONST's value). */
typedef struct tinyc_lit {
	enum { TINYC_LIT_INT, TINYC_LIT_FLOAT, TINYC_LIT_BOOL } kind;
	int64_t i;		/* integer and bool literals */
	double f;		/* float literals (inf, -inf, nan allowed) */
	char *text;		/* the spelling, for the printer (floats keep their digits) */
} tinyc_lit;

/* One node of the DAG.  Attribute fields are used by the ops named in their comments. */
typedef struct tinyc_uop {
	tinyc_op op;
	tinyc_dtype dtype;	/* the line's dtype */
	int rank;		/* the line's rank (0 = scalar) */
	tinyc_dim *shape;	/* the line's shape, rank entries */
	int nsrc;		/* number of operands */
	int src[3];		/* operand node indices */
	char *id;		/* the name after '%' */
	tinyc_loc loc;		/* position of the '%' that starts the line */
	tinyc_loc src_loc[3];	/* positions of the operands, for diagnostics */
	tinyc_loc attr_loc;	/* position of the first attribute, for diagnostics */
	tinyc_loc op_loc;	/* position of the op name */
	tinyc_loc type_loc;	/* position of the dtype after ':' */
	tinyc_loc shape_loc;	/* position of the '[' of the line's shape */
	tinyc_loc attr_locs[TINYC_ATTR_COUNT];	/* each attribute's value, {0,0} if absent */

	/* attributes */
	int64_t slot;		/* BUFFER: input slot */
	char *name;		/* BUFFER, OUTPUT: tensor name */
	tinyc_dim *strides;	/* BUFFER, OUTPUT: explicit strides (rank entries) or NULL */
	int nattr_shape;	/* RESHAPE, EXPAND: entries in attr_shape */
	tinyc_dim *attr_shape;	/* RESHAPE, EXPAND: the shape= attribute */
	int naxes;		/* PERMUTE (perm), REDUCE, FLIP: entries in axes */
	int64_t *axes;		/* PERMUTE: perm=; REDUCE, FLIP: axes= (as written) */
	int npairs;		/* PAD, SHRINK: entries in pairs */
	int64_t (*pairs)[2];	/* PAD: pads=[[before,after],..]; SHRINK: bounds=[[start,end],..] */
	tinyc_redop redop;	/* REDUCE: op= */
	int keepdim;		/* REDUCE: keepdim= (default 1) */
	tinyc_dtype acc;	/* REDUCE: acc= or TINYC_DTYPE_NONE */
	tinyc_lit lit;		/* CONST: the literal */
} tinyc_uop;

/* A UOp graph. */
typedef struct tinyc_graph {
	int n;			/* number of nodes */
	int cap;		/* allocated nodes */
	tinyc_uop *nodes;	/* nodes in topological order */
	int nsym;		/* number of size symbols */
	char **syms;		/* symbol names, in order of first appearance */
	const tinyc_source *src;	/* the text it was parsed from (kept, not owned), or NULL */
} tinyc_graph;

/* Parse a tinyc-uop v0 text.  Reports every problem on ctx and returns NULL on error.
 * The graph keeps a pointer to src for later diagnostics: src must outlive it. */
__tinyc_give tinyc_graph *tinyc_parse(tinyc_ctx *ctx, __tinyc_keep const tinyc_source *src);
/* Check the graph: infer every node's dtype and shape, compare with the declared ones,
 * validate attributes; with bindings b (may be NULL), also the facts that depend on
 * symbol values (a broadcast of a dim bound to 1, a reshape's element count).
 * Returns 0 when valid, -1 with diagnostics on ctx otherwise. */
int tinyc_verify(tinyc_ctx *ctx, __tinyc_keep const tinyc_graph *g,
		 __tinyc_keep const struct tinyc_bindings *b);
/* Print the canonical text form. */
void tinyc_print(__tinyc_keep const tinyc_graph *g, tinyc_buf *out);
/* Print the DAG for Graphviz. */
void tinyc_print_dot(__tinyc_keep const tinyc_graph *g, tinyc_buf *out);
/* Structural equality (used to check parse(print(g)) == g). */
int tinyc_graph_equal(const tinyc_graph *a, const tinyc_graph *b);
void tinyc_graph_free(__tinyc_take tinyc_graph *g);

/* Graph construction, for the parser and for users who embed the library. */
__tinyc_give tinyc_graph *tinyc_graph_alloc(tinyc_ctx *ctx);
/* Append a zeroed node (except keepdim = 1, acc = TINYC_DTYPE_NONE, src[] = -1);
 * returns its index or -1 (OutOfMemory on ctx). */
int tinyc_graph_add(tinyc_ctx *ctx, tinyc_graph *g, tinyc_op op, tinyc_dtype dt);
/* Find or add a size symbol; returns its index or -1. */
int tinyc_graph_symbol(tinyc_ctx *ctx, tinyc_graph *g, const char *name, int len);
/* Append a symbol the caller knows is new (no search); returns its index or -1. */
int tinyc_graph_symbol_new(tinyc_ctx *ctx, tinyc_graph *g, const char *name, int len);
/* Free what a node owns (id, shape, attribute arrays, strings) and zero it. */
void tinyc_uop_clear(tinyc_uop *u);
/* Index of the node whose id is `id`, or -1. */
int tinyc_graph_find(const tinyc_graph *g, const char *id);

/* If node n computes relu(x) -- RELU(x), tinygrad's WHERE(CMPLT(0,x), x, 0), or MAX(x,0) /
 * MAX(0,x), where 0 is a CONST 0 seen through RESHAPE/EXPAND -- return x's index, else -1.
 * Stages that have a relu of their own (RB-SSA, the epilogue graph) use it so that every
 * spelling lowers alike. */
int tinyc_uop_relu_operand(const tinyc_graph *g, int n);

/* Format a shape as "[M,1,K]". */
void tinyc_print_shape(const tinyc_graph *g, int rank, const tinyc_dim *shape, tinyc_buf *out);

/* Values for the size symbols (e.g. from --bind).  val[i] < 0: unbound. */
typedef struct tinyc_bindings {
	int n;			/* = graph's nsym */
	int64_t *val;		/* per symbol, -1 when unbound */
} tinyc_bindings;

/* Parse "M=4,N=8" into bindings for g.  Unknown symbols and bad values are diagnostics. */
int tinyc_bindings_parse(tinyc_ctx *ctx, const tinyc_graph *g, const char *text,
			 tinyc_bindings *b);
__tinyc_give tinyc_bindings *tinyc_bindings_alloc(tinyc_ctx *ctx, const tinyc_graph *g);
void tinyc_bindings_free(__tinyc_take tinyc_bindings *b);
/* The value of a dim under b, or -1 when its symbol is unbound. */
int64_t tinyc_dim_value(const tinyc_dim *d, const tinyc_bindings *b);

#endif
