/* Unit tests of the UOp verifier (ir/uop_verify.c): valid graphs pass, and every
 * diagnostic kind is reported with its exact line:col and message.  Expected positions and
 * messages are counted by hand from the sources below. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ir/uop.h"

#include "test_graphs.h"

/* One parsed test graph with its context, source and bindings. */
typedef struct fixture {
	tinyc_ctx *ctx;		/* diagnostics */
	tinyc_source *src;	/* the text */
	tinyc_graph *g;		/* the parsed graph */
	tinyc_bindings *b;	/* bindings, or NULL */
	int rc;			/* tinyc_verify's result */
} fixture;

/* Print every diagnostic on stderr, so a failing test shows what the verifier said. */
static void dump(const fixture *f)
{
	tinyc_ctx_print_diags(f->ctx, stderr);
}

/* The parser wants a graph to compute something: snippets without an OUTPUT get an
 * independent scalar one appended (after every line, so no position moves). */
static const char *tail = "%__c = CONST(0) : int[]\n%__o = OUTPUT(%__c, name=\"__o\") : int[]\n";

/* Parse text (which must parse), bind `bind` (NULL: no bindings) and verify. */
static fixture run(const char *text, const char *bind)
{
	fixture f = {0};
	char *full = strstr(text, "OUTPUT(") ? strdup(text) : tinyc_asprintf("%s%s", text, tail);
	cr_assert(full);
	f.ctx = tinyc_ctx_alloc();
	f.src = tinyc_source_from_string("t.uop", full, strlen(full));
	free(full);
	cr_assert(f.ctx && f.src);
	f.g = tinyc_parse(f.ctx, f.src);
	if (!f.g)
		dump(&f);
	cr_assert(f.g != NULL, "the test source must parse");
	if (bind) {
		f.b = tinyc_bindings_alloc(f.ctx, f.g);
		cr_assert(f.b && tinyc_bindings_parse(f.ctx, f.g, bind, f.b) == 0);
	}
	f.rc = tinyc_verify(f.ctx, f.g, f.b);
	return f;
}

static void done(fixture *f)
{
	tinyc_bindings_free(f->b);
	tinyc_graph_free(f->g);
	tinyc_source_free(f->src);
	tinyc_ctx_free(f->ctx);
}

/* The graph must verify without any diagnostic. */
static void expect_ok(const char *text, const char *bind)
{
	fixture f = run(text, bind);
	if (f.rc != 0 || tinyc_ctx_diag_count(f.ctx) != 0)
		dump(&f);
	cr_expect_eq(f.rc, 0);
	cr_expect_eq(tinyc_ctx_diag_count(f.ctx), 0);
	done(&f);
}

/* The graph must fail with exactly one error of `kind` at line:col; msg (if not NULL)
 * must be its whole message. */
static void expect_err(const char *text, const char *bind, const char *kind, int line,
		       int col, const char *msg)
{
	fixture f = run(text, bind);
	cr_expect_eq(f.rc, -1, "verify should fail with %s", kind);
	if (tinyc_ctx_error_count(f.ctx) != 1)
		dump(&f);
	cr_expect_eq(tinyc_ctx_error_count(f.ctx), 1, "exactly one error expected");
	const tinyc_diag *d = tinyc_ctx_diag(f.ctx, 0);
	cr_assert(d != NULL);
	cr_expect_str_eq(d->kind, kind);
	cr_expect_eq(d->loc.line, line, "line %d, expected %d (%s)", d->loc.line, line, d->msg);
	cr_expect_eq(d->loc.col, col, "col %d, expected %d (%s)", d->loc.col, col, d->msg);
	if (msg)
		cr_expect_str_eq(d->msg, msg);
	done(&f);
}

/* ---- valid graphs ---- */

static const char *matmul = TEST_MATMUL_BIAS_RELU;

Test(verify, matmul_bias_relu_symbolic)
{
	expect_ok(matmul, NULL);
}

Test(verify, matmul_bias_relu_bound)
{
	expect_ok(matmul, "M=4,N=8,K=16");
	expect_ok(matmul, "M=1,N=1,K=1");	/* all size 1: still consistent */
}

Test(verify, softmax)
{
	expect_ok("%x = BUFFER(slot=0, name=\"x\") : float[B,N]\n"
		  "%m = REDUCE(%x, op=MAX, axes=[-1]) : float[B,1]\n"
		  "%d = SUB(%x, %m) : float[B,N]\n"
		  "%c = CONST(1.4426950408889634) : float[]\n"
		  "%t = MUL(%d, %c) : float[B,N]\n"
		  "%e = EXP2(%t) : float[B,N]\n"
		  "%s = REDUCE(%e, op=ADD, axes=[1]) : float[B,1]\n"
		  "%r = RECIPROCAL(%s) : float[B,1]\n"
		  "%y = MUL(%e, %r) : float[B,N]\n"
		  "%o = OUTPUT(%y, name=\"y\") : float[B,N]\n", NULL);
}

Test(verify, mean_pooling)
{
	expect_ok("%0 = BUFFER(slot=0, name=\"x\") : half[N,C,4,4]\n"
		  "%1 = REDUCE(%0, op=ADD, axes=[2,-1], keepdim=false, acc=float) : half[N,C]\n"
		  "%2 = CAST(%1) : float[N,C]\n"
		  "%3 = CONST(0.0625) : float[]\n"
		  "%4 = MUL(%2, %3) : float[N,C]\n"
		  "%5 = OUTPUT(%4, name=\"y\") : float[N,C]\n", NULL);
}

Test(verify, transpose)
{
	expect_ok("%0 = BUFFER(slot=0, name=\"a\") : half[M,N]\n"
		  "%1 = PERMUTE(%0, perm=[1,0]) : half[N,M]\n"
		  "%2 = CONTIGUOUS(%1) : half[N,M]\n"
		  "%3 = OUTPUT(%2, name=\"b\") : half[N,M]\n", NULL);
}

Test(verify, tinygrad_relu_and_movement)
{
	expect_ok("%0 = BUFFER(slot=0, name=\"x\", strides=[1,M]) : float[M,3]\n"
		  "%1 = CONST(0) : float[]\n"
		  "%2 = CMPLT(%1, %0) : bool[M,3]\n"
		  "%3 = WHERE(%2, %0, %1) : float[M,3]\n"
		  "%4 = PAD(%3, pads=[[0,0],[1,2]]) : float[M,6]\n"
		  "%5 = SHRINK(%4, bounds=[[0,1],[2,5]]) : float[1,3]\n"
		  "%6 = FLIP(%5, axes=[0,-1]) : float[1,3]\n"
		  "%7 = EXPAND(%6, shape=[K,3]) : float[K,3]\n"
		  "%8 = BITCAST(%7) : int[K,3]\n"
		  "%9 = MOD(%8, %8) : int[K,3]\n"
		  "%10 = SHL(%9, %8) : int[K,3]\n"
		  "%11 = AND(%2, %2) : bool[M,3]\n"
		  "%12 = OUTPUT(%10, name=\"y\") : int[K,3]\n"
		  "%13 = OUTPUT(%11, name=\"z\") : bool[M,3]\n", NULL);
}

Test(verify, const_edges)
{
	expect_ok("%0 = CONST(255) : uchar[]\n"
		  "%1 = CONST(-128) : char[]\n"
		  "%2 = CONST(65504) : half[]\n"
		  "%3 = CONST(-inf) : half[]\n"
		  "%4 = CONST(nan) : bfloat16[]\n"
		  "%5 = CONST(true) : bool[]\n"
		  "%6 = CONST(-9223372036854775808) : long[]\n"
		  "%7 = CONST(3e38) : float[]\n"
		  "%8 = CONST(7) : double[]\n", NULL);
}

Test(verify, scalar_broadcasts_against_anything)
{
	expect_ok("%0 = BUFFER(slot=0, name=\"x\") : int[A,B,C]\n"
		  "%1 = CONST(2) : int[]\n"
		  "%2 = BUFFER(slot=1, name=\"y\") : int[B,1]\n"
		  "%3 = MUL(%1, %0) : int[A,B,C]\n"
		  "%4 = ADD(%3, %2) : int[A,B,C]\n", NULL);
}

Test(verify, reduce_of_ints_and_bools)
{
	expect_ok("%0 = BUFFER(slot=0, name=\"x\") : char[8]\n"
		  "%1 = REDUCE(%0, op=ADD, axes=[0], acc=int) : char[1]\n"
		  "%2 = REDUCE(%0, op=MAX, axes=[0]) : char[1]\n"
		  "%3 = BUFFER(slot=1, name=\"m\") : bool[8]\n"
		  "%4 = REDUCE(%3, op=ADD, axes=[0], keepdim=false) : int[]\n"
		  "%5 = REDUCE(%3, op=MAX, axes=[]) : bool[8]\n", NULL);
}

/* ---- BroadcastMismatch ---- */

Test(verify, broadcast_mismatch_message)
{
	expect_err("%a = BUFFER(slot=0, name=\"a\") : half[M,K]\n"
		   "%b = BUFFER(slot=1, name=\"b\") : half[K,N]\n"
		   "%c = MUL(%a, %b) : half[M,N]\n",
		   NULL, "BroadcastMismatch", 3, 10, "[M,K] vs [K,N] at axis -1");
}

Test(verify, broadcast_unbound_symbols)
{
	const char *t = "%a = BUFFER(slot=0, name=\"a\") : float[M,4]\n"
			"%b = BUFFER(slot=1, name=\"b\") : float[N,4]\n"
			"%c = ADD(%a, %b) : float[N,4]\n";
	expect_err(t, NULL, "BroadcastMismatch", 3, 10, "[M,4] vs [N,4] at axis -2");
	expect_ok(t, "M=1");		/* M bound to 1 broadcasts */
	expect_ok(t, "M=6,N=6");	/* equal values */
	expect_err(t, "M=5,N=6", "BroadcastMismatch", 3, 10, "[M,4] vs [N,4] at axis -2");
}

Test(verify, broadcast_constants_and_where)
{
	expect_err("%a = BUFFER(slot=0, name=\"a\") : float[3]\n"
		   "%b = BUFFER(slot=1, name=\"b\") : float[2,4]\n"
		   "%c = SUB(%b, %a) : float[2,4]\n",
		   NULL, "BroadcastMismatch", 3, 10, "[2,4] vs [3] at axis -1");
	/* the condition [1,4] broadcasts with [2,1]; the false branch [3] does not */
	expect_err("%c = BUFFER(slot=0, name=\"c\") : bool[1,4]\n"
		   "%t = BUFFER(slot=1, name=\"t\") : float[2,1]\n"
		   "%f = BUFFER(slot=2, name=\"f\") : float[3]\n"
		   "%w = WHERE(%c, %t, %f) : float[2,4]\n",
		   NULL, "BroadcastMismatch", 4, 12, "[1,4] vs [3] at axis -1");
}

/* ---- shapes ---- */

Test(verify, shape_mismatch)
{
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[M,K]\n"
		   "%1 = RELU(%0) : float[M,N]\n",
		   NULL, "ShapeMismatch", 2, 22, "declared [M,N] but inferred [M,K]");
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[M,K]\n"
		   "%1 = REDUCE(%0, op=MAX, axes=[1], keepdim=false) : float[M,1]\n",
		   NULL, "ShapeMismatch", 2, 57, "declared [M,1] but inferred [M]");
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[2,3]\n"
		   "%1 = PERMUTE(%0, perm=[1,0]) : float[2,3]\n",
		   NULL, "ShapeMismatch", 2, 37, "declared [2,3] but inferred [3,2]");
}

Test(verify, axis_alignment_declared_symbol_vs_size)
{
	const char *t = "%0 = BUFFER(slot=0, name=\"x\") : float[4,K]\n"
			"%1 = NEG(%0) : float[M,K]\n";
	expect_err(t, NULL, "AxisAlignmentMismatch", 2, 21,
		   "declared [M,K] but inferred [4,K]: M cannot be shown equal to 4 at axis 0");
	expect_ok(t, "M=4");
	expect_err(t, "M=5", "AxisAlignmentMismatch", 2, 21,
		   "declared [M,K] but inferred [4,K]: M = 5 differs from 4 at axis 0");
}

Test(verify, axis_alignment_reshape_and_expand)
{
	/* shape= says [M,N] but the line says [N,M] */
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[M,N]\n"
		   "%1 = RESHAPE(%0, shape=[M,N]) : float[N,M]\n",
		   NULL, "AxisAlignmentMismatch", 2, 24, "shape=[M,N] but the line declares [N,M]");
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[M,3]\n"
		   "%1 = EXPAND(%0, shape=[M,6]) : float[M,6]\n",
		   NULL, "AxisAlignmentMismatch", 2, 23,
		   "EXPAND cannot take axis 1 of size 3 to 6 (only size-1 axes expand)");
	const char *t = "%0 = BUFFER(slot=0, name=\"x\") : float[M,3]\n"
			"%1 = EXPAND(%0, shape=[N,3]) : float[N,3]\n";
	expect_err(t, NULL, "AxisAlignmentMismatch", 2, 23,
		   "EXPAND cannot take axis 0 of size M to N (only size-1 axes expand)");
	expect_ok(t, "M=1");
}

Test(verify, expand_rank_change)
{
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[3]\n"
		   "%1 = EXPAND(%0, shape=[2,3]) : float[2,3]\n",
		   NULL, "InvalidAttribute", 2, 23,
		   "EXPAND keeps the rank: shape= has 2 sizes for an operand of rank 1");
}

Test(verify, invalid_reshape)
{
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[2,3]\n"
		   "%1 = RESHAPE(%0, shape=[5]) : float[5]\n",
		   NULL, "InvalidReshape", 2, 24, "[2,3] (6 elements) cannot become [5] (5 elements)");
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[M,K]\n"
		   "%1 = RESHAPE(%0, shape=[M,1,N]) : float[M,1,N]\n",
		   NULL, "InvalidReshape", 2, 24,
		   "[M,K] (M*K elements) cannot become [M,1,N] (M*N elements)");
	/* symbols permuted and constants regrouped: same element count */
	expect_ok("%0 = BUFFER(slot=0, name=\"x\") : float[M,6,K]\n"
		  "%1 = RESHAPE(%0, shape=[K,2,M,3]) : float[K,2,M,3]\n", NULL);
	/* depends on M's value */
	const char *t = "%0 = BUFFER(slot=0, name=\"x\") : float[M,2]\n"
			"%1 = RESHAPE(%0, shape=[8]) : float[8]\n";
	expect_err(t, NULL, "InvalidReshape", 2, 24,
		   "[M,2] (2*M elements) cannot become [8] (8 elements)");
	expect_ok(t, "M=4");
	expect_err(t, "M=5", "InvalidReshape", 2, 24,
		   "[M,2] (10 elements) cannot become [8] (8 elements)");
}

Test(verify, integer_overflow)
{
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[4294967296,4294967296,16]\n",
		   NULL, "IntegerOverflow", 1, 38,
		   "the element count of [4294967296,4294967296,16] does not fit in int64");
	/* 2^61 elements fit, 2^63 bytes do not */
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[1073741824,1073741824,2]\n",
		   NULL, "IntegerOverflow", 1, 38,
		   "the byte size of float[1073741824,1073741824,2] does not fit in int64");
	/* fits unbound; overflows once M is known */
	const char *t = "%0 = BUFFER(slot=0, name=\"x\") : char[M,1099511627776]\n";
	expect_ok(t, NULL);
	expect_ok(t, "M=1");
	expect_err(t, "M=1099511627776", "IntegerOverflow", 1, 37,
		   "the element count of [M,1099511627776] does not fit in int64");
}

/* Size caps the same on every device: 2^46 bytes per value and per strided buffer. */
Test(verify, size_too_large)
{
	const char *t = "%0 = BUFFER(slot=0, name=\"x\") : char[M,1099511627776]\n";
	expect_ok(t, "M=64");
	expect_err(t, "M=65", "SizeTooLarge", 1, 37,
		   "char[M,1099511627776] takes 71468255805440 bytes; a value holds at most 2^46 "
		   "bytes on every device");
	expect_ok("%0 = BUFFER(slot=0, name=\"x\") : float[4194304,4194304]\n", NULL);
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[4194304,4194305]\n", NULL,
		   "SizeTooLarge", 1, 38, "float[4194304,4194305] takes 70368760954880 bytes; a "
		   "value holds at most 2^46 bytes on every device");
	expect_err("%0 = BUFFER(slot=0, name=\"x\", strides=[2000000000000]) : float[4]\n", NULL,
		   "StrideOutOfRange", 1, 39, "stride 2000000000000 of axis 0 is beyond 2^40");
	expect_err("%0 = BUFFER(slot=0, name=\"x\", strides=[1099511627776,1]) : float[65,4]\n",
		   NULL, "SizeTooLarge", 1, 39, "the strides span 70368744177668 elements of float; "
		   "a buffer holds at most 2^46 bytes on every device");
}

/* OUTPUT strides that write two elements to one address; BUFFER views may overlap. */
Test(verify, overlapping_strides)
{
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[8,4,20,64]\n"
		   "%1 = OUTPUT(%0, name=\"y\", strides=[524288,262144,64,1]) : float[8,4,20,64]\n",
		   NULL, "OverlappingStrides", 2, 35, "axis 0 (size 8, stride 524288) overlaps the "
		   "787712 elements spanned by the axes of smaller stride: two elements of the "
		   "OUTPUT would be written to one address");
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[4,6]\n"
		   "%1 = OUTPUT(%0, name=\"y\", strides=[1,1]) : float[4,6]\n",
		   NULL, "OverlappingStrides", 2, 35, "axis 1 (size 6, stride 1) overlaps the 4 "
		   "elements spanned by the axes of smaller stride: two elements of the OUTPUT "
		   "would be written to one address");
	const char *t = "%0 = BUFFER(slot=0, name=\"x\") : float[4,M]\n"
			"%1 = OUTPUT(%0, name=\"y\", strides=[8,1]) : float[4,M]\n";
	expect_ok(t, NULL);	/* unknown until M is bound */
	expect_ok(t, "M=8");
	expect_err(t, "M=9", "OverlappingStrides", 2, 35, "axis 0 (size 4, stride 8) overlaps "
		   "the 9 elements spanned by the axes of smaller stride: two elements of the "
		   "OUTPUT would be written to one address");
	expect_ok("%0 = BUFFER(slot=0, name=\"x\", strides=[0,1]) : float[4,6]\n"
		  "%1 = OUTPUT(%0, name=\"y\", strides=[1,4]) : float[4,6]\n", NULL);
}

/* BUFFER slots index the runner's input arrays: at most TINYC_MAX_NODES - 1. */
Test(verify, slot_out_of_range)
{
	expect_err("%0 = BUFFER(slot=2147483647, name=\"x\") : float[4]\n", NULL,
		   "SlotOutOfRange", 1, 18, "slot=2147483647 is beyond the largest slot 262143");
	expect_ok("%0 = BUFFER(slot=262143, name=\"x\") : float[4]\n", NULL);
}

Test(verify, invalid_permutation)
{
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[2,3,4]\n"
		   "%1 = PERMUTE(%0, perm=[0,2,2]) : float[2,4,4]\n",
		   NULL, "InvalidPermutation", 2, 23,
		   "perm= is not a permutation of 0..2 (entry 2 is 2)");
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[2,3,4]\n"
		   "%1 = PERMUTE(%0, perm=[1,0]) : float[3,2]\n",
		   NULL, "InvalidPermutation", 2, 23, "perm= has 2 entries for an operand of rank 3");
}

Test(verify, invalid_axis)
{
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[2,3]\n"
		   "%1 = REDUCE(%0, op=MAX, axes=[2]) : float[2,1]\n",
		   NULL, "InvalidAxis", 2, 30, "axis 2 is out of range for rank 2 (-2..1)");
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[2,3]\n"
		   "%1 = FLIP(%0, axes=[1,-1]) : float[2,3]\n",
		   NULL, "InvalidAxis", 2, 20, "axis -1 is repeated");
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[2,3]\n"
		   "%1 = FLIP(%0, axes=[-3]) : float[2,3]\n",
		   NULL, "InvalidAxis", 2, 20, "axis -3 is out of range for rank 2 (-2..1)");
}

Test(verify, pad_and_shrink_attributes)
{
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[2,3]\n"
		   "%1 = PAD(%0, pads=[[1,1]]) : float[4,3]\n",
		   NULL, "InvalidAttribute", 2, 19, "pads= has 1 pairs for an operand of rank 2");
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[2,3]\n"
		   "%1 = PAD(%0, pads=[[0,0],[-1,2]]) : float[2,4]\n",
		   NULL, "InvalidAttribute", 2, 19, "pads=[-1,2] of axis 1 is negative");
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[2,3]\n"
		   "%1 = SHRINK(%0, bounds=[[0,2],[1,4]]) : float[2,3]\n",
		   NULL, "InvalidAttribute", 2, 24,
		   "bounds=[1,4] of axis 1 ends beyond its size 3");
	expect_err("%0 = BUFFER(slot=0, name=\"x\") : float[2,3]\n"
		   "%1 = SHRINK(%0, bounds=[[1,1],[0,3]]) : float[1,3]\n",
		   NULL, "InvalidAttribute", 2, 24,
		   "bounds=[1,1] of axis 0 is empty (start must be below end)");
	/* the end of a symbolic axis is checked once M is known */
	const char *t = "%0 = BUFFER(slot=0, name=\"x\") : float[M]\n"
			"%1 = SHRINK(%0, bounds=[[2,6]]) : float[4]\n";
	expect_ok(t, NULL);
	expect_ok(t, "M=6");
	expect_err(t, "M=5", "InvalidAttribute", 2, 24,
		   "bounds=[2,6] of axis 0 ends beyond its size 5");
}

Test(verify, pad_of_symbolic_axis)
{
	const char *t = "%0 = BUFFER(slot=0, name=\"x\") : float[M]\n"
			"%1 = PAD(%0, pads=[[1,1]]) : float[6]\n";
	expect_err(t, NULL, "UnboundSymbol", 2, 19,
		   "PAD of axis 0 (size M) by [1,1] needs M bound (--bind)");
	expect_ok(t, "M=4");
}

/* ---- dtypes ---- */

Test(verify, type_mismatch_binary)
{
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : half[4]\n"
		   "%1 = BUFFER(slot=1, name=\"b\") : float[4]\n"
		   "%2 = ADD(%0, %1) : float[4]\n",
		   NULL, "TypeMismatch", 3, 14,
		   "ADD operands have dtypes half and float (no implicit promotion: CAST explicitly)");
}

Test(verify, type_mismatch_declared)
{
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : half[4]\n"
		   "%1 = RELU(%0) : float[4]\n",
		   NULL, "TypeMismatch", 2, 17, "declared float but inferred half");
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : int[4]\n"
		   "%1 = CMPLT(%0, %0) : int[4]\n",
		   NULL, "TypeMismatch", 2, 22, "CMPLT produces bool, but the line says int");
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : int[4]\n"
		   "%1 = OUTPUT(%0, name=\"y\") : long[4]\n",
		   NULL, "TypeMismatch", 2, 29, "declared long but inferred int");
}

Test(verify, type_mismatch_where)
{
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : float[4]\n"
		   "%1 = WHERE(%0, %0, %0) : float[4]\n",
		   NULL, "TypeMismatch", 2, 12, "WHERE needs a bool condition, not float");
	expect_err("%0 = BUFFER(slot=0, name=\"c\") : bool[4]\n"
		   "%1 = BUFFER(slot=1, name=\"a\") : half[4]\n"
		   "%2 = BUFFER(slot=2, name=\"b\") : float[4]\n"
		   "%3 = WHERE(%0, %2, %1) : float[4]\n",
		   NULL, "TypeMismatch", 4, 20, "WHERE value has dtype half but the line says float");
}

Test(verify, type_mismatch_op_dtypes)
{
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : int[4]\n"
		   "%1 = SQRT(%0) : int[4]\n",
		   NULL, "TypeMismatch", 2, 11, "SQRT needs a float operand, not int");
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : short[4]\n"
		   "%1 = TANH(%0) : short[4]\n",
		   NULL, "TypeMismatch", 2, 11, "TANH needs a float operand, not short");
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : float[4]\n"
		   "%1 = XOR(%0, %0) : float[4]\n",
		   NULL, "TypeMismatch", 2, 10, "XOR needs a bool or integer operand, not float");
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : half[4]\n"
		   "%1 = MOD(%0, %0) : half[4]\n",
		   NULL, "TypeMismatch", 2, 10, "MOD needs an integer operand, not half");
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : bool[4]\n"
		   "%1 = SHR(%0, %0) : bool[4]\n",
		   NULL, "TypeMismatch", 2, 10, "SHR needs an integer operand, not bool");
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : bool[4]\n"
		   "%1 = NEG(%0) : bool[4]\n",
		   NULL, "TypeMismatch", 2, 10, "NEG needs a number (not bool) operand, not bool");
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : half[4]\n"
		   "%1 = BITCAST(%0) : float[4]\n",
		   NULL, "TypeMismatch", 2, 20,
		   "BITCAST from half (2 bytes) to float (4 bytes) changes the item size");
}

Test(verify, acc_dtype_missing)
{
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : half[M,K]\n"
		   "%1 = REDUCE(%0, op=ADD, axes=[1]) : half[M,1]\n",
		   NULL, "AccDtypeMissing", 2, 37, "REDUCE ADD would accumulate in half; give acc=float");
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : bfloat16[M,K]\n"
		   "%1 = REDUCE(%0, op=MUL, axes=[1], acc=half) : bfloat16[M,1]\n",
		   NULL, "AccDtypeMissing", 2, 39,
		   "REDUCE MUL accumulates in half; accumulate in float (acc=float)");
	/* a float operand reduced straight into a half result also accumulates in half */
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : float[8]\n"
		   "%1 = REDUCE(%0, op=ADD, axes=[0]) : half[1]\n",
		   NULL, "AccDtypeMissing", 2, 37, NULL);
	/* MAX is exact in any dtype */
	expect_ok("%0 = BUFFER(slot=0, name=\"a\") : half[8]\n"
		  "%1 = REDUCE(%0, op=MAX, axes=[0]) : half[1]\n", NULL);
}

Test(verify, acc_dtype_invalid)
{
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : float[8]\n"
		   "%1 = REDUCE(%0, op=ADD, axes=[0], acc=int) : float[1]\n",
		   NULL, "InvalidAttribute", 2, 39, "acc=int cannot accumulate float values under ADD");
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : int[8]\n"
		   "%1 = REDUCE(%0, op=ADD, axes=[0]) : char[1]\n",
		   NULL, "TypeMismatch", 2, 37,
		   "REDUCE ADD of int values cannot accumulate in char (the line's dtype); CAST or give acc=");
}

/* ---- CONST ---- */

Test(verify, invalid_const)
{
	expect_err("%0 = CONST(300) : uchar[]\n", NULL, "InvalidConst", 1, 12,
		   "300 does not fit in uchar (0..255)");
	expect_err("%0 = CONST(-1) : ulong[]\n", NULL, "InvalidConst", 1, 12,
		   "-1 does not fit in ulong (0..18446744073709551615)");
	expect_err("%0 = CONST(1.5) : int[]\n", NULL, "InvalidConst", 1, 12,
		   "int takes an integer literal, not 1.5");
	expect_err("%0 = CONST(true) : float[]\n", NULL, "InvalidConst", 1, 12,
		   "float takes a number, not true");
	expect_err("%0 = CONST(1) : bool[]\n", NULL, "InvalidConst", 1, 12,
		   "bool takes true or false, not 1");
	expect_err("%0 = CONST(70000) : half[]\n", NULL, "InvalidConst", 1, 12,
		   "70000 is out of the range of half");
	expect_err("%0 = CONST(1e39) : float[]\n", NULL, "InvalidConst", 1, 12,
		   "1e39 is out of the range of float");
	expect_err("%0 = CONST(2) : float[4]\n", NULL, "InvalidConst", 1, 22,
		   "CONST is a scalar: its shape must be [], not [4]");
}

/* ---- BUFFER / OUTPUT ---- */

Test(verify, duplicate_slots_and_names)
{
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : float[4]\n"
		   "%1 = BUFFER(slot=0, name=\"b\") : float[4]\n",
		   NULL, "InvalidAttribute", 2, 18, "slot=0 is already used by %0 (line 1)");
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : float[4]\n"
		   "%1 = BUFFER(slot=1, name=\"a\") : float[4]\n",
		   NULL, "InvalidAttribute", 2, 26, "BUFFER name \"a\" is already used by %0 (line 1)");
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : float[4]\n"
		   "%1 = OUTPUT(%0, name=\"y\") : float[4]\n"
		   "%2 = OUTPUT(%0, name=\"y\") : float[4]\n",
		   NULL, "InvalidAttribute", 3, 22, "OUTPUT name \"y\" is already used by %1 (line 2)");
	/* an input and an output may share a name */
	expect_ok("%0 = BUFFER(slot=0, name=\"a\") : float[4]\n"
		  "%1 = OUTPUT(%0, name=\"a\") : float[4]\n", NULL);
}

Test(verify, output_shape)
{
	expect_err("%0 = BUFFER(slot=0, name=\"a\") : float[M]\n"
		   "%1 = OUTPUT(%0, name=\"y\") : float[N]\n",
		   NULL, "ShapeMismatch", 2, 34, "declared [N] but inferred [M]");
}

/* ---- reporting ---- */

Test(verify, no_cascade_but_all_independent_errors)
{
	fixture f = run("%0 = BUFFER(slot=0, name=\"a\") : half[M,K]\n"
			"%1 = BUFFER(slot=1, name=\"b\") : half[K,N]\n"
			"%2 = MUL(%0, %1) : half[M,N]\n"	/* BroadcastMismatch */
			"%3 = RELU(%2) : float[M,N]\n"		/* skipped: its operand failed */
			"%4 = OUTPUT(%3, name=\"y\") : float[M,N]\n"
			"%5 = SQRT(%0) : half[M,N]\n",	/* ShapeMismatch, independent */
			NULL);
	cr_expect_eq(f.rc, -1);
	cr_assert_eq(tinyc_ctx_error_count(f.ctx), 2);
	cr_expect_str_eq(tinyc_ctx_diag(f.ctx, 0)->kind, "BroadcastMismatch");
	cr_expect_eq(tinyc_ctx_diag(f.ctx, 0)->loc.line, 3);
	cr_expect_str_eq(tinyc_ctx_diag(f.ctx, 1)->kind, "ShapeMismatch");
	cr_expect_eq(tinyc_ctx_diag(f.ctx, 1)->loc.line, 6);
	done(&f);
}

Test(verify, dtype_and_shape_errors_on_one_line)
{
	fixture f = run("%0 = BUFFER(slot=0, name=\"a\") : half[4]\n"
			"%1 = NEG(%0) : float[5]\n", NULL);
	cr_expect_eq(f.rc, -1);
	cr_assert_eq(tinyc_ctx_error_count(f.ctx), 2);
	cr_expect_str_eq(tinyc_ctx_diag(f.ctx, 0)->kind, "TypeMismatch");
	cr_expect_str_eq(tinyc_ctx_diag(f.ctx, 1)->kind, "ShapeMismatch");
	done(&f);
}

/* ---- graphs built through the API ---- */

/* Add a node of rank r with constant sizes. */
static int add(tinyc_ctx *ctx, tinyc_graph *g, tinyc_op op, tinyc_dtype dt, int r,
	       const int64_t *sizes)
{
	int i = tinyc_graph_add(ctx, g, op, dt);
	cr_assert(i >= 0);
	tinyc_uop *u = &g->nodes[i];
	u->rank = r;
	u->shape = calloc((size_t)(r ? r : 1), sizeof(tinyc_dim));
	for (int k = 0; k < r; k++)
		u->shape[k] = (tinyc_dim){sizes[k], -1};
	u->loc = (tinyc_loc){i + 1, 1};
	return i;
}

Test(verify, api_graph)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_graph *g = tinyc_graph_alloc(ctx);
	int64_t s[2] = {2, 3};
	int a = add(ctx, g, TINYC_OP_BUFFER, TINYC_FLOAT, 2, s);
	g->nodes[a].name = strdup("a");
	int r = add(ctx, g, TINYC_OP_REDUCE, TINYC_FLOAT, 2, (int64_t[]){2, 1});
	g->nodes[r].nsrc = 1;
	g->nodes[r].src[0] = a;
	g->nodes[r].naxes = 1;
	g->nodes[r].axes = malloc(sizeof(int64_t));
	g->nodes[r].axes[0] = -1;
	cr_expect_eq(tinyc_verify(ctx, g, NULL), 0);
	cr_expect_eq(tinyc_ctx_diag_count(ctx), 0);

	/* an operand that is not defined before its user */
	g->nodes[r].src[0] = r;
	cr_expect_eq(tinyc_verify(ctx, g, NULL), -1);
	cr_assert_eq(tinyc_ctx_error_count(ctx), 1);
	cr_expect_str_eq(tinyc_ctx_diag(ctx, 0)->kind, "InvalidOperand");
	tinyc_ctx_clear_diags(ctx);

	/* a negative stride (the parser refuses one; the API does not) */
	g->nodes[r].src[0] = a;
	g->nodes[a].strides = calloc(2, sizeof(tinyc_dim));
	g->nodes[a].strides[0] = (tinyc_dim){-3, -1};
	g->nodes[a].strides[1] = (tinyc_dim){1, -1};
	cr_expect_eq(tinyc_verify(ctx, g, NULL), -1);
	cr_assert_eq(tinyc_ctx_error_count(ctx), 1);
	cr_expect_str_eq(tinyc_ctx_diag(ctx, 0)->kind, "InvalidAttribute");
	cr_expect_str_eq(tinyc_ctx_diag(ctx, 0)->msg, "stride -3 of axis 0 is negative");
	cr_expect_eq(tinyc_ctx_diag(ctx, 0)->loc.line, 1);
	tinyc_ctx_clear_diags(ctx);
	g->nodes[a].strides[0].val = 3;
	cr_expect_eq(tinyc_verify(ctx, g, NULL), 0);

	/* a size 0 on the line */
	g->nodes[a].shape[1].val = 0;
	cr_expect_eq(tinyc_verify(ctx, g, NULL), -1);
	cr_expect_str_eq(tinyc_ctx_diag(ctx, 0)->kind, "InvalidShape");
	cr_expect_eq(tinyc_ctx_error_count(ctx), 1);	/* the REDUCE is not blamed */
	tinyc_graph_free(g);
	tinyc_ctx_free(ctx);
}
