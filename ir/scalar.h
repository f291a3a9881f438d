/* Scalar semantics shared by every layer: the math functions (their spellings in the GPU IR
 * dump and in CUDA) and the operand domains of the ops, with the one implementation of each
 * function that the three interpreters (ir/eval.c, lower/rbssa_interp.c, ir/gpuir_interp.c)
 * call.  The op tables (ir/uop.h, ir/rbssa.h) name a domain and a math function per op.
 */
#ifndef TINYC_IR_SCALAR_H
#define TINYC_IR_SCALAR_H

#include "ir/dtype.h"

/* The math function table.  X(ENUM, spelling, arity): the spelling is the GPU IR dump's
 * name and CUDA's double function (the float one adds 'f'). */
#define TINYC_GMATH(X)                 \
	X(SQRT, "sqrt", 1)             \
	X(RSQRT, "rsqrt", 1)           \
	X(EXP2, "exp2", 1)             \
	X(LOG2, "log2", 1)             \
	X(EXP, "exp", 1)               \
	X(LOG, "log", 1)               \
	X(SIN, "sin", 1)               \
	X(COS, "cos", 1)               \
	X(TRUNC, "trunc", 1)           \
	X(FLOOR, "floor", 1)           \
	X(CEIL, "ceil", 1)             \
	X(FABS, "fabs", 1)             \
	X(TANH, "tanh", 1)             \
	X(FMA, "fma", 3)	/* a * b + c, rounded once */ \
	X(RCP_APPROX, "rcp_approx", 1)	/* 1 / a within 2 ulp of float, no slow path
					 * (__fdividef): only for 16-bit float results */ \
	X(EXP2_APPROX, "exp2_approx", 1)	/* 2^a by ex2.approx.ftz (2 ulp, results below \
						 * 2^-126 flushed to 0): softmax weights */

/* Math functions (float/double; the result has the argument's dtype). */
typedef enum tinyc_gmath {
#define X(e, name, arity) TINYC_GM_##e,
	TINYC_GMATH(X)
#undef X
	TINYC_GM_COUNT,
	TINYC_GM_NONE = -1,	/* an op that is not a math call */
} tinyc_gmath;

/* The dtypes an op's operands may have (beyond the same-dtype rules). */
typedef enum tinyc_opdom {
	TINYC_DOM_ANY,		/* every dtype */
	TINYC_DOM_FLOAT,	/* float dtypes */
	TINYC_DOM_INT,		/* integers */
	TINYC_DOM_BITS,		/* bool and integers */
	TINYC_DOM_NUM,		/* numbers: not bool */
} tinyc_opdom;

/* Whether dtype t lies in domain d. */
int tinyc_dom_accepts(tinyc_opdom d, tinyc_dtype t);
/* What domain d asks for, as a diagnostic phrase ("a float"), NULL for ANY. */
const char *tinyc_dom_phrase(tinyc_opdom d);

const char *tinyc_gmath_name(tinyc_gmath f);
int tinyc_gmath_arity(tinyc_gmath f);
/* f applied to x (and y, z for three-argument functions), computed in double. */
double tinyc_gmath_apply(tinyc_gmath f, double x, double y, double z);

/* MAX (max = 1) or MIN (max = 0) of floats: a NaN operand is ignored, +0 beats -0 in MAX. */
double tinyc_fminmax(double a, double b, int max);

#endif
