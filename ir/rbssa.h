/* RB-SSA, Region-Buffer SSA (seed 002 §3): the executable, non-materialising form of a graph.
 *
 * One function per graph: a list of instructions in SSA form (every operand is an earlier
 * instruction), each with a dtype and a shape (constants or the graph's size symbols).  The
 * vocabulary keeps tinygrad's ref-compat order visible: a matmul is
 *
 *   %x1 = reshape %x0 : half[M,1,K]
 *   %w2 = transpose %w1, perm=[0,2,1] : half[1,N,K]
 *   %xB = broadcast_in_dim %x1, dims=[0,2] : half[M,N,K]
 *   %wB = broadcast_in_dim %w2, dims=[1,2] : half[M,N,K]
 *   %p  = mul %xB, %wB : half[M,N,K]
 *   %ya = reduce_sum %p, axes=[k], dims=[2], init=0.0, acc=float : float[M,N,1]
 *
 * Elementwise ops never broadcast implicitly: every operand has the result's shape, and
 * tinygrad's right-aligned broadcasting is an explicit broadcast_in_dim.
 *
 * The op classes:
 *   leaf     read (an input buffer by slot, optionally strided), constant (a scalar)
 *   view     reshape, transpose, broadcast_in_dim, pad, slice, reverse: index maps only,
 *            nothing is computed or materialised
 *   ewise    materialize (CONTIGUOUS), cast, bitcast, unary and binary arithmetic, compare,
 *            select
 *   reduce   reduce_sum / reduce_max / reduce_prod over axes, with init and acc dtype
 *   yield    a function result (an OUTPUT), optionally strided
 *
 * The printer, the verifier (with seed §3.3's checks) and the text format are in
 * ir/rbssa.c; the builder (UOp DAG + IndexBook -> RB-SSA) and the CPU interpreter in lower/.
 */
#ifndef TINYC_IR_RBSSA_H
#define TINYC_IR_RBSSA_H

#include <stdint.h>

#include "ir/ctx.h"
#include "ir/dtype.h"
#include "ir/uop.h"

/* The op table: X(ENUM, mnemonic, operands, class, operand domain, UOp op).
 *   domain  the operand dtypes it accepts (TINYC_DOM_*, ir/scalar.h)
 *   UOp op  the UOp an elementwise op lowers from (lower/rbssa_build.c); for a unary op,
 *           its scalar semantics are that op's (tinyc_op_unary_f).  compare lowers from
 *           CMPLT/CMPNE/CMPEQ by predicate (NONE here). */
#define TINYC_RB_OPS(X)                                             \
	X(READ, "read", 0, LEAF, ANY, NONE)                         \
	X(CONSTANT, "constant", 0, LEAF, ANY, NONE)                 \
	X(RESHAPE, "reshape", 1, VIEW, ANY, NONE)                   \
	X(TRANSPOSE, "transpose", 1, VIEW, ANY, NONE)               \
	X(BROADCAST_IN_DIM, "broadcast_in_dim", 1, VIEW, ANY, NONE) \
	X(PAD, "pad", 1, VIEW, ANY, NONE)                           \
	X(SLICE, "slice", 1, VIEW, ANY, NONE)                       \
	X(REVERSE, "reverse", 1, VIEW, ANY, NONE)                   \
	X(MATERIALIZE, "materialize", 1, EWISE, ANY, CONTIGUOUS)    \
	X(CAST, "cast", 1, EWISE, ANY, CAST)                        \
	X(BITCAST, "bitcast", 1, EWISE, ANY, BITCAST)               \
	X(NEG, "neg", 1, EWISE, ANY, NEG)                           \
	X(RECIPROCAL, "reciprocal", 1, EWISE, FLOAT, RECIPROCAL)    \
	X(SQRT, "sqrt", 1, EWISE, FLOAT, SQRT)                      \
	X(EXP2, "exp2", 1, EWISE, FLOAT, EXP2)                      \
	X(LOG2, "log2", 1, EWISE, FLOAT, LOG2)                      \
	X(SIN, "sin", 1, EWISE, FLOAT, SIN)                         \
	X(TRUNC, "trunc", 1, EWISE, ANY, TRUNC)                     \
	X(RELU, "relu", 1, EWISE, ANY, RELU)                        \
	X(TANH, "tanh", 1, EWISE, FLOAT, TANH)                      \
	X(ADD, "add", 2, EWISE, ANY, ADD)                           \
	X(SUB, "sub", 2, EWISE, ANY, SUB)                           \
	X(MUL, "mul", 2, EWISE, ANY, MUL)                           \
	X(DIV, "div", 2, EWISE, FLOAT, FDIV)                        \
	X(IDIV, "idiv", 2, EWISE, NUM, IDIV)                        \
	X(MOD, "mod", 2, EWISE, NUM, MOD)                           \
	X(MAX, "max", 2, EWISE, ANY, MAX)                           \
	X(AND, "and", 2, EWISE, BITS, AND)                          \
	X(OR, "or", 2, EWISE, BITS, OR)                             \
	X(XOR, "xor", 2, EWISE, BITS, XOR)                          \
	X(SHL, "shl", 2, EWISE, INT, SHL)                           \
	X(SHR, "shr", 2, EWISE, INT, SHR)                           \
	X(COMPARE, "compare", 2, EWISE, ANY, NONE)                  \
	X(SELECT, "select", 3, EWISE, ANY, WHERE)                   \
	X(REDUCE, "reduce", 1, REDUCE, ANY, NONE)                   \
	X(YIELD, "yield", 1, YIELD, ANY, NONE)

typedef enum tinyc_rb_op {
#define X(e, name, nargs, cls, dom, uop) TINYC_RB_##e,
	TINYC_RB_OPS(X)
#undef X
	TINYC_RB_OP_COUNT,
	TINYC_RB_NONE = -1,
} tinyc_rb_op;

/* Op classes. */
typedef enum tinyc_rb_class {
	TINYC_RB_CLASS_LEAF,	/* read, constant */
	TINYC_RB_CLASS_VIEW,	/* index maps only */
	TINYC_RB_CLASS_EWISE,	/* computes one element per result element */
	TINYC_RB_CLASS_REDUCE,	/* folds axes */
	TINYC_RB_CLASS_YIELD,	/* a function result */
} tinyc_rb_class;

/* compare's predicate. */
typedef enum tinyc_rb_pred {
	TINYC_RB_LT,		/* a < b */
	TINYC_RB_NE,		/* a != b */
	TINYC_RB_EQ,		/* a == b */
} tinyc_rb_pred;

/* One instruction.  The attribute fields are used by the ops named in their comments. */
typedef struct tinyc_rb_inst {
	tinyc_rb_op op;
	tinyc_dtype dtype;		/* result dtype (yield: the output's) */
	int rank;			/* result rank */
	tinyc_dim shape[TINYC_MAX_RANK];	/* result shape */
	int nargs;			/* operands */
	int args[3];			/* operand instruction indices (< this one's) */
	int uop;			/* the UOp node it lowers, -1 if none */
	tinyc_loc loc;			/* the UOp's source position, for diagnostics */

	int ndims;			/* entries in dims */
	int dims[TINYC_MAX_RANK];	/* transpose: perm (result dim i = operand dim dims[i]);
					   broadcast_in_dim: the result dims the operand supplies
					   (increasing, right-aligned, others broadcast);
					   reverse: reversed dims; reduce: reduced operand dims
					   (increasing) */
	int64_t lo[TINYC_MAX_RANK];	/* pad: elements before; slice: start */
	int64_t hi[TINYC_MAX_RANK];	/* pad: elements after; slice: end (exclusive) */
	tinyc_rb_pred pred;		/* compare */
	tinyc_redop redop;		/* reduce: ADD (reduce_sum), MAX, MUL (reduce_prod) */
	tinyc_dtype acc;		/* reduce: accumulator dtype, TINYC_DTYPE_NONE = missing */
	int init_is_float;		/* reduce: init is init_f (float acc) or init_i */
	double init_f;			/* reduce: initial value of a float accumulator */
	int64_t init_i;			/* reduce: initial value of an int/bool accumulator
					   (unsigned: the bits) */
	int lit_is_float;		/* constant: the literal is lit_f (else lit_i) */
	double lit_f;			/* constant: float literal */
	int64_t lit_i;			/* constant: integer or bool literal */
	char *lit_text;			/* constant: the literal's spelling (owned) */
	int64_t slot;			/* read: input slot */
	char *name;			/* read, yield: tensor name (owned) */
	int has_strides;		/* read, yield: element strides given */
	tinyc_dim strides[TINYC_MAX_RANK];	/* read, yield: the strides */
	char *axis[TINYC_MAX_RANK];	/* read, yield: the IndexBook names of the result
					   dims; reduce: of the operand dims (owned, may be NULL) */
} tinyc_rb_inst;

/* An axis listed in the function header. */
typedef struct tinyc_rb_axis {
	char *name;			/* IndexBook name (owned) */
	tinyc_dim size;			/* extent */
} tinyc_rb_axis;

/* An RB-SSA function. */
typedef struct tinyc_rbssa {
	const tinyc_graph *g;		/* the UOp graph: symbol names, source (kept) */
	int n;				/* instructions */
	int cap;			/* allocated instructions */
	tinyc_rb_inst *inst;		/* the instructions, operands first */
	int nsym;			/* = g->nsym */
	int64_t *bind;			/* compile-time symbol values, -1 unbound (owned) */
	int niters;			/* header: parallel axes of the yields */
	tinyc_rb_axis *iters;		/* (owned) */
	int nred;			/* header: reduced axes */
	tinyc_rb_axis *red;		/* (owned) */
} tinyc_rbssa;

/* The op's mnemonic ("broadcast_in_dim"); reduce prints as reduce_sum/max/prod. */
const char *tinyc_rb_op_name(tinyc_rb_op op);
int tinyc_rb_op_nargs(tinyc_rb_op op);
tinyc_rb_class tinyc_rb_op_class(tinyc_rb_op op);
tinyc_opdom tinyc_rb_op_dom(tinyc_rb_op op);	/* operand domain */
tinyc_op tinyc_rb_op_uop(tinyc_rb_op op);	/* the UOp it lowers from, TINYC_OP_NONE */
/* The RB-SSA op that elementwise UOp op (or CONTIGUOUS) lowers to, TINYC_RB_NONE if none
 * (compare's ops are the caller's: they also pick a predicate). */
tinyc_rb_op tinyc_rb_op_of_uop(tinyc_op op);
const char *tinyc_rb_pred_name(tinyc_rb_pred p);

/* An empty function over g, with compile-time bindings b copied (b may be NULL). */
__tinyc_give tinyc_rbssa *tinyc_rbssa_alloc(tinyc_ctx *ctx, __tinyc_keep const tinyc_graph *g,
					    __tinyc_keep const tinyc_bindings *b);
void tinyc_rbssa_free(__tinyc_take tinyc_rbssa *f);
/* Append a zeroed instruction (args -1, uop -1, acc NONE); its index, or -1 (OutOfMemory). */
int tinyc_rbssa_add(tinyc_ctx *ctx, tinyc_rbssa *f, tinyc_rb_op op, tinyc_dtype dt, int rank,
		    const tinyc_dim *shape);
/* Append a header axis (copies name); 0 or -1. */
int tinyc_rbssa_add_axis(tinyc_ctx *ctx, tinyc_rbssa *f, int reduce, const char *name,
			 tinyc_dim size);

/* The value of d under the function's compile-time bindings, or -1 when unknown. */
int64_t tinyc_rbssa_dim_value(const tinyc_rbssa *f, tinyc_dim d);
/* Whether two dims are provably equal (same known value, or the same unbound symbol). */
int tinyc_rbssa_dim_equal(const tinyc_rbssa *f, tinyc_dim a, tinyc_dim b);
/* Whether d is provably 1. */
int tinyc_rbssa_dim_is1(const tinyc_rbssa *f, tinyc_dim d);

/* The stable text dump (format documented at the top of ir/rbssa.c). */
void tinyc_rbssa_print(__tinyc_keep const tinyc_rbssa *f, tinyc_buf *out);
/* Structural and type checks, including seed §3.3: broadcast_in_dim result shapes agree
 * with their operands and with the elementwise ops that use them (BroadcastMismatch), every
 * reduce has an accumulator dtype, a wide one for reduce_sum of 16-bit floats
 * (AccDtypeMissing).  (The third check, reduce axes against the IndexBook's reduce_axes, needs
 * the IndexBook: tinyc_rbssa_check_indexbook in lower/.)  0, or -1 with diagnostics. */
int tinyc_rbssa_verify(tinyc_ctx *ctx, __tinyc_keep const tinyc_rbssa *f);

#endif
