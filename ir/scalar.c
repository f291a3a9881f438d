/* Scalar semantics shared by every layer: math functions, operand domains and the float
 * semantics of the unary ops, for the three interpreters (see ir/scalar.h). */
#include "ir/scalar.h"

#include <math.h>

#include "ir/uop.h"

/* One row of the math function table. */
typedef struct gmath_info {
	const char *name;	/* dump and CUDA spelling */
	int arity;		/* arguments */
} gmath_info;

static const gmath_info gmath_table[TINYC_GM_COUNT] = {
#define X(e, name, arity) {name, arity},
	TINYC_GMATH(X)
#undef X
};

/* Whether dtype t lies in domain d. */
int tinyc_dom_accepts(tinyc_opdom d, tinyc_dtype t)
{
	switch (d) {
	case TINYC_DOM_FLOAT: return tinyc_dtype_is_float(t);
	case TINYC_DOM_INT: return tinyc_dtype_is_int(t);
	case TINYC_DOM_BITS: return tinyc_dtype_is_int(t) || t == TINYC_BOOL;
	case TINYC_DOM_NUM: return t != TINYC_BOOL;
	default: return 1;
	}
}

/* What domain d asks for, as the verifiers phrase it. */
const char *tinyc_dom_phrase(tinyc_opdom d)
{
	switch (d) {
	case TINYC_DOM_FLOAT: return "a float";
	case TINYC_DOM_INT: return "an integer";
	case TINYC_DOM_BITS: return "a bool or integer";
	case TINYC_DOM_NUM: return "a number (not bool)";
	default: return NULL;
	}
}

/* The spelling of math function f ("?" out of range). */
const char *tinyc_gmath_name(tinyc_gmath f)
{
	return f >= 0 && f < TINYC_GM_COUNT ? gmath_table[f].name : "?";
}

/* The number of arguments of math function f (0 out of range). */
int tinyc_gmath_arity(tinyc_gmath f)
{
	return f >= 0 && f < TINYC_GM_COUNT ? gmath_table[f].arity : 0;
}

/* f(x[, y, z]) in double: the semantics every interpreter rounds to its dtype. */
double tinyc_gmath_apply(tinyc_gmath f, double x, double y, double z)
{
	switch (f) {
	case TINYC_GM_SQRT: return sqrt(x);
	case TINYC_GM_RSQRT: return 1.0 / sqrt(x);
	case TINYC_GM_EXP2: return exp2(x);
	case TINYC_GM_LOG2: return log2(x);
	case TINYC_GM_EXP: return exp(x);
	case TINYC_GM_LOG: return log(x);
	case TINYC_GM_SIN: return sin(x);
	case TINYC_GM_COS: return cos(x);
	case TINYC_GM_TRUNC: return trunc(x);
	case TINYC_GM_FLOOR: return floor(x);
	case TINYC_GM_CEIL: return ceil(x);
	case TINYC_GM_FABS: return fabs(x);
	case TINYC_GM_TANH: return tanh(x);
	case TINYC_GM_FMA: return fma(x, y, z);
	case TINYC_GM_RCP_APPROX: return 1.0 / x;
	case TINYC_GM_EXP2_APPROX: return exp2(x) < 0x1p-126 ? 0.0 : exp2(x);
	default: return NAN;
	}
}

/* MAX (max = 1) or MIN (0) on floats: a NaN operand is ignored (C fmax, CUDA fmaxf), and
 * MAX(+0,-0) = +0, MIN(+0,-0) = -0. */
double tinyc_fminmax(double a, double b, int max)
{
	if (isnan(a))
		return b;
	if (isnan(b))
		return a;
	if (a == b)
		return (signbit(a) != 0) == max ? b : a;
	return (a > b) == max ? a : b;
}

/* The float semantics of a unary op: its math function, or NEG, RECIPROCAL, RELU (RELU(NaN)
 * is 0, like tinygrad's WHERE(CMPLT(0,x), x, 0)). */
double tinyc_op_unary_f(tinyc_op op, double x)
{
	const tinyc_opinfo *in = tinyc_op_info(op);
	if (in && in->math != TINYC_GM_NONE)
		return tinyc_gmath_apply(in->math, x, 0, 0);
	switch (op) {
	case TINYC_OP_NEG: return -x;
	case TINYC_OP_RECIPROCAL: return 1.0 / x;
	case TINYC_OP_RELU: return x > 0 ? x : 0;
	default: return x;
	}
}
