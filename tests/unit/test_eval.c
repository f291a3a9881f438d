/* Unit tests of the reference evaluator (ir/eval.c).
 *
 * Every expected value is worked out by hand (in the comments) from DESIGN.md §2 and the
 * choices listed at the top of ir/eval.c; float32 constants are written as float literals
 * (e.g. 0.4f) so the test states the rounded value instead of recomputing it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/tensor.h"

#include "test_graphs.h"

/* The state of one test (each Criterion test runs in its own process). */
static tinyc_ctx *ctx;
static tinyc_source *src;
static tinyc_graph *g;
static tinyc_bindings *b;
static tinyc_io io;
static tinyc_tensor *owned[64];	/* inputs made by the test, freed at the end */
static int nowned;

static void setup(void)
{
	ctx = tinyc_ctx_alloc();
}

/* Drop the current graph, its bindings and outputs (the inputs stay until teardown). */
static void reset(void)
{
	tinyc_io_clear_outputs(&io);
	free(io.in);
	memset(&io, 0, sizeof(io));
	tinyc_bindings_free(b);
	tinyc_graph_free(g);
	tinyc_source_free(src);
	b = NULL;
	g = NULL;
	src = NULL;
}

static void teardown(void)
{
	reset();
	for (int i = 0; i < nowned; i++)
		tinyc_tensor_free(owned[i]);
	tinyc_ctx_free(ctx);
}

TestSuite(eval, .init = setup, .fini = teardown);

#define SHAPE(...) ((int64_t[]){__VA_ARGS__}), (int)(sizeof((int64_t[]){__VA_ARGS__}) / 8)
#define SCALAR ((int64_t *)NULL), 0
#define V(...) ((double[]){__VA_ARGS__})
#define I(...) ((int64_t[]){__VA_ARGS__})

/* A tensor with the given values (doubles stored with tinyc_tensor_set); v NULL: zeros. */
static tinyc_tensor *mk(tinyc_dtype dt, const int64_t *shape, int rank, const double *v)
{
	tinyc_tensor *t = tinyc_tensor_alloc(ctx, dt, rank, shape);
	cr_assert(t && nowned < 64);
	owned[nowned++] = t;
	for (int64_t i = 0; v && i < tinyc_tensor_numel(t); i++)
		tinyc_tensor_set(t, i, v[i]);
	return t;
}

/* A tensor with the given integer values (stored with tinyc_tensor_set_int). */
static tinyc_tensor *mki(tinyc_dtype dt, const int64_t *shape, int rank, const int64_t *v)
{
	tinyc_tensor *t = tinyc_tensor_alloc(ctx, dt, rank, shape);
	cr_assert(t && nowned < 64);
	owned[nowned++] = t;
	for (int64_t i = 0; i < tinyc_tensor_numel(t); i++)
		tinyc_tensor_set_int(t, i, v[i]);
	return t;
}

/* Parse text; with `verify`, check it (the test graphs must be valid).  Then bind `bind`
 * (may be NULL) and the rest from the inputs, and evaluate.  Returns tinyc_eval's result
 * (or the binding's when that fails). */
static int run(const char *text, const char *bind, int nin, tinyc_tensor **in, int verify)
{
	reset();
	src = tinyc_source_from_string("t.uop", text, strlen(text));
	cr_assert(src);
	g = tinyc_parse(ctx, src);
	if (!g)
		tinyc_ctx_print_diags(ctx, stderr);
	cr_assert(g, "the test graph must parse");
	b = tinyc_bindings_alloc(ctx, g);
	cr_assert(b);
	if (bind)
		cr_assert(tinyc_bindings_parse(ctx, g, bind, b) == 0);
	io.nin = nin;
	io.in = calloc((size_t)nin + 1, sizeof(*io.in));
	for (int i = 0; i < nin; i++)
		io.in[i] = in[i];
	if (tinyc_bind_from_inputs(ctx, g, b, &io) < 0)
		return -1;
	if (verify && tinyc_verify(ctx, g, b) < 0) {
		tinyc_ctx_print_diags(ctx, stderr);
		cr_assert_fail("the test graph must verify");
	}
	int rc = tinyc_eval(ctx, g, b, &io);
	if (rc < 0 && verify)
		tinyc_ctx_print_diags(ctx, stderr);
	return rc;
}

/* Run a valid graph that must evaluate. */
static void run_ok(const char *text, const char *bind, int nin, tinyc_tensor **in)
{
	int rc = run(text, bind, nin, in, 1);
	const tinyc_diag *d = tinyc_ctx_diag_count(ctx) ? tinyc_ctx_diag(ctx, 0) : NULL;
	cr_assert(rc == 0, "evaluation failed: %s: %s", d ? d->kind : "?", d ? d->msg : "?");
}

/* Output k must have dtype dt, the given shape, and exactly these values (NaN == NaN,
 * -0 == +0). */
static void expect_f(int k, tinyc_dtype dt, const int64_t *shape, int rank, const double *v)
{
	cr_assert(k < io.nout && io.out[k]);
	const tinyc_tensor *t = io.out[k];
	cr_expect_eq(t->dtype, dt, "output %d dtype %s", k, tinyc_dtype_name(t->dtype));
	cr_assert_eq(t->rank, rank, "output %d rank", k);
	for (int i = 0; i < rank; i++)
		cr_assert_eq(t->shape[i], shape[i], "output %d dim %d", k, i);
	for (int64_t i = 0; i < tinyc_tensor_numel(t); i++) {
		double x = tinyc_tensor_get(t, i);
		cr_expect(x == v[i] || (isnan(x) && isnan(v[i])),
			  "output %d element %lld: got %.17g, want %.17g", k, (long long)i, x, v[i]);
	}
}

/* Output k must have dtype dt, the given shape and exactly these integer values. */
static void expect_i(int k, tinyc_dtype dt, const int64_t *shape, int rank, const int64_t *v)
{
	cr_assert(k < io.nout && io.out[k]);
	const tinyc_tensor *t = io.out[k];
	cr_expect_eq(t->dtype, dt, "output %d dtype %s", k, tinyc_dtype_name(t->dtype));
	cr_assert_eq(t->rank, rank, "output %d rank", k);
	for (int i = 0; i < rank; i++)
		cr_assert_eq(t->shape[i], shape[i], "output %d dim %d", k, i);
	for (int64_t i = 0; i < tinyc_tensor_numel(t); i++)
		cr_expect_eq(tinyc_tensor_get_int(t, i), v[i], "output %d element %lld: got %lld, "
			     "want %lld", k, (long long)i, (long long)tinyc_tensor_get_int(t, i),
			     (long long)v[i]);
}

/* Some diagnostic must be of `kind` with `part` in its message. */
static void expect_diag(const char *kind, const char *part)
{
	for (int i = 0; i < tinyc_ctx_diag_count(ctx); i++) {
		const tinyc_diag *d = tinyc_ctx_diag(ctx, i);
		if (!strcmp(d->kind, kind) && strstr(d->msg, part)) {
			tinyc_ctx_clear_diags(ctx);
			return;
		}
	}
	tinyc_ctx_print_diags(ctx, stderr);
	cr_expect_fail("no %s diagnostic saying '%s'", kind, part);
}

#define OUT(n, id, dt, shp) "%o" #n " = OUTPUT(%" #id ", name=\"o" #n "\") : " dt shp "\n"

Test(eval, float_binary_and_broadcasting)
{
	tinyc_tensor *in[3] = {
		mk(TINYC_FLOAT, SHAPE(2, 3), V(1, 2, 3, 4, 5, 6)),
		mk(TINYC_FLOAT, SHAPE(3), V(10, -1, 0.5)),
		mk(TINYC_FLOAT, SHAPE(2, 1), V(100, 200)),
	};
	run_ok("%a = BUFFER(slot=0, name=\"a\") : float[2,3]\n"
	       "%b = BUFFER(slot=1, name=\"b\") : float[3]\n"
	       "%c = BUFFER(slot=2, name=\"c\") : float[2,1]\n"
	       "%two = CONST(2) : float[]\n"
	       "%0 = ADD(%a, %b) : float[2,3]\n"
	       "%1 = SUB(%a, %b) : float[2,3]\n"
	       "%2 = MUL(%a, %b) : float[2,3]\n"
	       "%3 = FDIV(%a, %b) : float[2,3]\n"
	       "%4 = MAX(%a, %b) : float[2,3]\n"
	       "%5 = MUL(%a, %two) : float[2,3]\n"
	       "%6 = ADD(%a, %c) : float[2,3]\n"
	       "%7 = ADD(%b, %c) : float[2,3]\n"
	       OUT(0, 0, "float", "[2,3]") OUT(1, 1, "float", "[2,3]") OUT(2, 2, "float", "[2,3]")
	       OUT(3, 3, "float", "[2,3]") OUT(4, 4, "float", "[2,3]") OUT(5, 5, "float", "[2,3]")
	       OUT(6, 6, "float", "[2,3]") OUT(7, 7, "float", "[2,3]"),
	       NULL, 3, in);
	expect_f(0, TINYC_FLOAT, SHAPE(2, 3), V(11, 1, 3.5, 14, 4, 6.5));
	expect_f(1, TINYC_FLOAT, SHAPE(2, 3), V(-9, 3, 2.5, -6, 6, 5.5));
	expect_f(2, TINYC_FLOAT, SHAPE(2, 3), V(10, -2, 1.5, 40, -5, 3));
	/* 1/10 and 4/10 are rounded to float32 */
	expect_f(3, TINYC_FLOAT, SHAPE(2, 3), V(0.1f, -2, 6, 0.4f, -5, 12));
	expect_f(4, TINYC_FLOAT, SHAPE(2, 3), V(10, 2, 3, 10, 5, 6));
	expect_f(5, TINYC_FLOAT, SHAPE(2, 3), V(2, 4, 6, 8, 10, 12));
	expect_f(6, TINYC_FLOAT, SHAPE(2, 3), V(101, 102, 103, 204, 205, 206));
	/* [3] + [2,1]: both broadcast */
	expect_f(7, TINYC_FLOAT, SHAPE(2, 3), V(110, 99, 100.5, 210, 199, 200.5));
}

Test(eval, float_unary)
{
	tinyc_tensor *in[2] = {
		mk(TINYC_FLOAT, SHAPE(4), V(4, -2.5, 0.5, 8)),
		mk(TINYC_DOUBLE, SHAPE(2), V(2, 0.5)),
	};
	run_ok("%x = BUFFER(slot=0, name=\"x\") : float[4]\n"
	       "%d = BUFFER(slot=1, name=\"d\") : double[2]\n"
	       "%0 = NEG(%x) : float[4]\n"
	       "%1 = RECIPROCAL(%x) : float[4]\n"
	       "%2 = SQRT(%x) : float[4]\n"
	       "%3 = EXP2(%x) : float[4]\n"
	       "%4 = LOG2(%x) : float[4]\n"
	       "%5 = TRUNC(%x) : float[4]\n"
	       "%6 = RELU(%x) : float[4]\n"
	       "%7 = SQRT(%d) : double[2]\n"
	       "%8 = SIN(%x) : float[4]\n"
	       OUT(0, 0, "float", "[4]") OUT(1, 1, "float", "[4]") OUT(2, 2, "float", "[4]")
	       OUT(3, 3, "float", "[4]") OUT(4, 4, "float", "[4]") OUT(5, 5, "float", "[4]")
	       OUT(6, 6, "float", "[4]") OUT(7, 7, "double", "[2]") OUT(8, 8, "float", "[4]"),
	       NULL, 2, in);
	expect_f(0, TINYC_FLOAT, SHAPE(4), V(-4, 2.5, -0.5, -8));
	expect_f(1, TINYC_FLOAT, SHAPE(4), V(0.25, -0.4f, 2, 0.125));
	expect_f(2, TINYC_FLOAT, SHAPE(4), V(2, NAN, 0.70710677f, 2.828427125f));
	/* 2^-2.5 = 0.17677669529..., as float32 0.17677669 */
	expect_f(3, TINYC_FLOAT, SHAPE(4), V(16, 0.17677669f, 1.41421356f, 256));
	expect_f(4, TINYC_FLOAT, SHAPE(4), V(2, NAN, -1, 3));
	expect_f(5, TINYC_FLOAT, SHAPE(4), V(4, -2, 0, 8));
	expect_f(6, TINYC_FLOAT, SHAPE(4), V(4, 0, 0.5, 8));
	/* double stays double: sqrt(2) to 17 digits, sqrt(0.5) = sqrt(2)/2 */
	expect_f(7, TINYC_DOUBLE, SHAPE(2), V(1.4142135623730951, 0.70710678118654757));
	/* sin(4) = -0.7568024953079282, sin(-2.5) = -0.5984721441039565,
	 * sin(0.5) = 0.479425538604203, sin(8) = 0.9893582466233818, each as float32 */
	expect_f(8, TINYC_FLOAT, SHAPE(4),
		 V(-0.7568025f, -0.59847214f, 0.47942555f, 0.98935825f));
}

/* TANH against hand-checked values (math.tanh in double, then rounded to float32 by hand):
 * tanh(4) = 0.999329299739067, tanh(-2.5) = -0.9866142981514303, tanh(0.5) =
 * 0.46211715726000974, tanh(8) = 0.9999997749296758; it saturates to +-1, keeps the sign of
 * zero and NaN; half rounds the float32 result once more. */
Test(eval, tanh)
{
	tinyc_tensor *in[3] = {
		mk(TINYC_FLOAT, SHAPE(8), V(4, -2.5, 0.5, 8, 20, -0.0, INFINITY, NAN)),
		mk(TINYC_DOUBLE, SHAPE(2), V(2, 0.5)),
		mk(TINYC_HALF, SHAPE(2), V(0.5, -1)),
	};
	run_ok("%x = BUFFER(slot=0, name=\"x\") : float[8]\n"
	       "%d = BUFFER(slot=1, name=\"d\") : double[2]\n"
	       "%h = BUFFER(slot=2, name=\"h\") : half[2]\n"
	       "%0 = TANH(%x) : float[8]\n"
	       "%1 = TANH(%d) : double[2]\n"
	       "%2 = TANH(%h) : half[2]\n"
	       OUT(0, 0, "float", "[8]") OUT(1, 1, "double", "[2]") OUT(2, 2, "half", "[2]"),
	       NULL, 3, in);
	expect_f(0, TINYC_FLOAT, SHAPE(8),
		 V(0.9993293f, -0.9866143f, 0.46211717f, 0.99999976f, 1, -0.0, 1, NAN));
	cr_expect(signbit(tinyc_tensor_get(io.out[0], 5)), "tanh(-0) = -0");
	/* double stays double: tanh(2) = 0.9640275800758169 */
	expect_f(1, TINYC_DOUBLE, SHAPE(2), V(0.9640275800758169, 0.46211715726000974));
	/* half: 0.46211717 -> 0.462158203125 (0x3765), tanh(-1) = -0.7615942 -> -0.76171875 (0xba18) */
	expect_f(2, TINYC_HALF, SHAPE(2), V(0.462158203125, -0.76171875));
}

Test(eval, nan_semantics)
{
	tinyc_tensor *in[2] = {
		mk(TINYC_FLOAT, SHAPE(3), V(NAN, 1, NAN)),
		mk(TINYC_FLOAT, SHAPE(3), V(2, NAN, NAN)),
	};
	run_ok("%x = BUFFER(slot=0, name=\"x\") : float[3]\n"
	       "%y = BUFFER(slot=1, name=\"y\") : float[3]\n"
	       "%0 = MAX(%x, %y) : float[3]\n"
	       "%1 = CMPLT(%x, %y) : bool[3]\n"
	       "%2 = CMPNE(%x, %y) : bool[3]\n"
	       "%3 = CMPEQ(%x, %y) : bool[3]\n"
	       "%4 = RELU(%x) : float[3]\n"
	       "%5 = CAST(%x) : int[3]\n"
	       "%6 = CAST(%x) : bool[3]\n"
	       OUT(0, 0, "float", "[3]") OUT(1, 1, "bool", "[3]") OUT(2, 2, "bool", "[3]")
	       OUT(3, 3, "bool", "[3]") OUT(4, 4, "float", "[3]") OUT(5, 5, "int", "[3]")
	       OUT(6, 6, "bool", "[3]"),
	       NULL, 2, in);
	expect_f(0, TINYC_FLOAT, SHAPE(3), V(2, 1, NAN));	/* a NaN operand is ignored */
	expect_i(1, TINYC_BOOL, SHAPE(3), I(0, 0, 0));
	expect_i(2, TINYC_BOOL, SHAPE(3), I(1, 1, 1));
	expect_i(3, TINYC_BOOL, SHAPE(3), I(0, 0, 0));
	expect_f(4, TINYC_FLOAT, SHAPE(3), V(0, 1, 0));	/* RELU(NaN) = 0 */
	expect_i(5, TINYC_INT, SHAPE(3), I(0, 1, 0));	/* NaN -> 0 */
	expect_i(6, TINYC_BOOL, SHAPE(3), I(1, 1, 1));	/* NaN != 0 */
}

Test(eval, integer_wraparound)
{
	tinyc_tensor *in[8] = {
		mki(TINYC_CHAR, SHAPE(3), I(100, -128, 127)),
		mki(TINYC_CHAR, SHAPE(3), I(100, -1, 1)),
		mki(TINYC_UCHAR, SHAPE(2), I(250, 0)),
		mki(TINYC_UCHAR, SHAPE(2), I(10, 1)),
		mki(TINYC_INT, SHAPE(2), I(65536, 2147483647)),
		mki(TINYC_INT, SHAPE(2), I(65536, 1)),
		mki(TINYC_LONG, SHAPE(1), I(INT64_MAX)),
		mki(TINYC_UINT, SHAPE(1), I(0)),
	};
	run_ok("%a = BUFFER(slot=0, name=\"a\") : char[3]\n"
	       "%b = BUFFER(slot=1, name=\"b\") : char[3]\n"
	       "%c = BUFFER(slot=2, name=\"c\") : uchar[2]\n"
	       "%d = BUFFER(slot=3, name=\"d\") : uchar[2]\n"
	       "%e = BUFFER(slot=4, name=\"e\") : int[2]\n"
	       "%f = BUFFER(slot=5, name=\"f\") : int[2]\n"
	       "%l = BUFFER(slot=6, name=\"l\") : long[1]\n"
	       "%u = BUFFER(slot=7, name=\"u\") : uint[1]\n"
	       "%one = CONST(1) : long[]\n"
	       "%uone = CONST(1) : uint[]\n"
	       "%0 = ADD(%a, %b) : char[3]\n"
	       "%1 = SUB(%a, %b) : char[3]\n"
	       "%2 = MUL(%a, %b) : char[3]\n"
	       "%3 = NEG(%a) : char[3]\n"
	       "%4 = ADD(%c, %d) : uchar[2]\n"
	       "%5 = SUB(%c, %d) : uchar[2]\n"
	       "%6 = NEG(%c) : uchar[2]\n"
	       "%7 = MUL(%e, %f) : int[2]\n"
	       "%8 = ADD(%e, %f) : int[2]\n"
	       "%9 = ADD(%l, %one) : long[1]\n"
	       "%10 = SUB(%u, %uone) : uint[1]\n"
	       "%11 = RELU(%a) : char[3]\n"
	       OUT(0, 0, "char", "[3]") OUT(1, 1, "char", "[3]") OUT(2, 2, "char", "[3]")
	       OUT(3, 3, "char", "[3]") OUT(4, 4, "uchar", "[2]") OUT(5, 5, "uchar", "[2]")
	       OUT(6, 6, "uchar", "[2]") OUT(7, 7, "int", "[2]") OUT(8, 8, "int", "[2]")
	       OUT(9, 9, "long", "[1]") OUT(10, 10, "uint", "[1]") OUT(11, 11, "char", "[3]"),
	       NULL, 8, in);
	expect_i(0, TINYC_CHAR, SHAPE(3), I(-56, 127, -128));	/* 200-256, -129+256, 128-256 */
	expect_i(1, TINYC_CHAR, SHAPE(3), I(0, -127, 126));
	expect_i(2, TINYC_CHAR, SHAPE(3), I(16, -128, 127));	/* 10000 = 39*256+16; 128-256 */
	expect_i(3, TINYC_CHAR, SHAPE(3), I(-100, -128, -127));	/* -(-128) wraps to -128 */
	expect_i(4, TINYC_UCHAR, SHAPE(2), I(4, 1));
	expect_i(5, TINYC_UCHAR, SHAPE(2), I(240, 255));
	expect_i(6, TINYC_UCHAR, SHAPE(2), I(6, 0));
	expect_i(7, TINYC_INT, SHAPE(2), I(0, 2147483647));	/* 2^32 wraps to 0 */
	expect_i(8, TINYC_INT, SHAPE(2), I(131072, INT32_MIN));
	expect_i(9, TINYC_LONG, SHAPE(1), I(INT64_MIN));
	expect_i(10, TINYC_UINT, SHAPE(1), I(4294967295));
	expect_i(11, TINYC_CHAR, SHAPE(3), I(100, 0, 127));
}

Test(eval, idiv_mod_truncate_and_divide_by_zero)
{
	tinyc_tensor *in[8] = {
		mki(TINYC_INT, SHAPE(8), I(-7, 7, 7, -7, 5, INT32_MIN, 3, -1)),
		mki(TINYC_INT, SHAPE(8), I(2, -2, 2, -2, 0, -1, 0, 5)),
		mki(TINYC_LONG, SHAPE(2), I(INT64_MIN, -9)),
		mki(TINYC_LONG, SHAPE(2), I(-1, 4)),
		mki(TINYC_UINT, SHAPE(3), I(7, 7, 4294967295)),
		mki(TINYC_UINT, SHAPE(3), I(0, 2, 10)),
		mki(TINYC_CHAR, SHAPE(1), I(-128)),
		mki(TINYC_CHAR, SHAPE(1), I(-1)),
	};
	run_ok("%a = BUFFER(slot=0, name=\"a\") : int[8]\n"
	       "%b = BUFFER(slot=1, name=\"b\") : int[8]\n"
	       "%c = BUFFER(slot=2, name=\"c\") : long[2]\n"
	       "%d = BUFFER(slot=3, name=\"d\") : long[2]\n"
	       "%e = BUFFER(slot=4, name=\"e\") : uint[3]\n"
	       "%f = BUFFER(slot=5, name=\"f\") : uint[3]\n"
	       "%g = BUFFER(slot=6, name=\"g\") : char[1]\n"
	       "%h = BUFFER(slot=7, name=\"h\") : char[1]\n"
	       "%0 = IDIV(%a, %b) : int[8]\n"
	       "%1 = MOD(%a, %b) : int[8]\n"
	       "%2 = IDIV(%c, %d) : long[2]\n"
	       "%3 = MOD(%c, %d) : long[2]\n"
	       "%4 = IDIV(%e, %f) : uint[3]\n"
	       "%5 = MOD(%e, %f) : uint[3]\n"
	       "%6 = IDIV(%g, %h) : char[1]\n"
	       OUT(0, 0, "int", "[8]") OUT(1, 1, "int", "[8]") OUT(2, 2, "long", "[2]")
	       OUT(3, 3, "long", "[2]") OUT(4, 4, "uint", "[3]") OUT(5, 5, "uint", "[3]")
	       OUT(6, 6, "char", "[1]"),
	       NULL, 8, in);
	/* C truncation: -7/2 = -3 r -1, 7/-2 = -3 r 1, -7/-2 = 3 r -1; x/0 = 0 and x%0 = 0;
	 * INT_MIN / -1 wraps to INT_MIN with remainder 0; -1/5 = 0 r -1 */
	expect_i(0, TINYC_INT, SHAPE(8), I(-3, -3, 3, 3, 0, INT32_MIN, 0, 0));
	expect_i(1, TINYC_INT, SHAPE(8), I(-1, 1, 1, -1, 0, 0, 0, -1));
	expect_i(2, TINYC_LONG, SHAPE(2), I(INT64_MIN, -2));
	expect_i(3, TINYC_LONG, SHAPE(2), I(0, -1));
	expect_i(4, TINYC_UINT, SHAPE(3), I(0, 3, 429496729));
	expect_i(5, TINYC_UINT, SHAPE(3), I(0, 1, 5));
	expect_i(6, TINYC_CHAR, SHAPE(1), I(-128));
}

Test(eval, shifts_and_bitwise)
{
	tinyc_tensor *in[6] = {
		mki(TINYC_INT, SHAPE(4), I(1, -8, 1, 3)),
		mki(TINYC_INT, SHAPE(4), I(33, 1, 31, -1)),
		mki(TINYC_UCHAR, SHAPE(2), I(0x80, 1)),
		mki(TINYC_UCHAR, SHAPE(2), I(7, 9)),
		mki(TINYC_CHAR, SHAPE(2), I(-128, 64)),
		mki(TINYC_CHAR, SHAPE(2), I(7, 1)),
	};
	run_ok("%a = BUFFER(slot=0, name=\"a\") : int[4]\n"
	       "%b = BUFFER(slot=1, name=\"b\") : int[4]\n"
	       "%c = BUFFER(slot=2, name=\"c\") : uchar[2]\n"
	       "%d = BUFFER(slot=3, name=\"d\") : uchar[2]\n"
	       "%e = BUFFER(slot=4, name=\"e\") : char[2]\n"
	       "%f = BUFFER(slot=5, name=\"f\") : char[2]\n"
	       "%0 = SHL(%a, %b) : int[4]\n"
	       "%1 = SHR(%a, %b) : int[4]\n"
	       "%2 = SHL(%c, %d) : uchar[2]\n"
	       "%3 = SHR(%c, %d) : uchar[2]\n"
	       "%4 = SHR(%e, %f) : char[2]\n"
	       "%5 = SHL(%e, %f) : char[2]\n"
	       "%6 = AND(%a, %b) : int[4]\n"
	       "%7 = OR(%a, %b) : int[4]\n"
	       "%8 = XOR(%a, %b) : int[4]\n"
	       OUT(0, 0, "int", "[4]") OUT(1, 1, "int", "[4]") OUT(2, 2, "uchar", "[2]")
	       OUT(3, 3, "uchar", "[2]") OUT(4, 4, "char", "[2]") OUT(5, 5, "char", "[2]")
	       OUT(6, 6, "int", "[4]") OUT(7, 7, "int", "[4]") OUT(8, 8, "int", "[4]"),
	       NULL, 6, in);
	/* counts masked to 5 bits: 33 -> 1, -1 -> 31; 1<<31 and 3<<31 wrap to INT_MIN */
	expect_i(0, TINYC_INT, SHAPE(4), I(2, -16, INT32_MIN, INT32_MIN));
	expect_i(1, TINYC_INT, SHAPE(4), I(0, -4, 0, 0));	/* arithmetic: -8>>1 = -4 */
	/* uchar: 0x80<<7 = 0x4000 wraps to 0; count 9 masked to 1 */
	expect_i(2, TINYC_UCHAR, SHAPE(2), I(0, 2));
	expect_i(3, TINYC_UCHAR, SHAPE(2), I(1, 0));
	expect_i(4, TINYC_CHAR, SHAPE(2), I(-1, 32));
	expect_i(5, TINYC_CHAR, SHAPE(2), I(0, -128));	/* -128<<7 = -16384 wraps to 0 */
	/* 1&33 = 1, -8&1 = 0, 1&31 = 1, 3&-1 = 3; OR: 33, -7, 31, -1; XOR: 32, -7, 30, -4 */
	expect_i(6, TINYC_INT, SHAPE(4), I(1, 0, 1, 3));
	expect_i(7, TINYC_INT, SHAPE(4), I(33, -7, 31, -1));
	expect_i(8, TINYC_INT, SHAPE(4), I(32, -7, 30, -4));
}

Test(eval, bool_and_comparisons)
{
	tinyc_tensor *in[6] = {
		mki(TINYC_BOOL, SHAPE(4), I(0, 0, 1, 1)),
		mki(TINYC_BOOL, SHAPE(4), I(0, 1, 0, 1)),
		mki(TINYC_UINT, SHAPE(2), I(1, 4294967295)),
		mki(TINYC_UINT, SHAPE(2), I(2, 0)),
		mki(TINYC_INT, SHAPE(2), I(-1, 5)),
		mki(TINYC_INT, SHAPE(2), I(0, 5)),
	};
	run_ok("%a = BUFFER(slot=0, name=\"a\") : bool[4]\n"
	       "%b = BUFFER(slot=1, name=\"b\") : bool[4]\n"
	       "%c = BUFFER(slot=2, name=\"c\") : uint[2]\n"
	       "%d = BUFFER(slot=3, name=\"d\") : uint[2]\n"
	       "%e = BUFFER(slot=4, name=\"e\") : int[2]\n"
	       "%f = BUFFER(slot=5, name=\"f\") : int[2]\n"
	       "%0 = AND(%a, %b) : bool[4]\n"
	       "%1 = OR(%a, %b) : bool[4]\n"
	       "%2 = XOR(%a, %b) : bool[4]\n"
	       "%3 = ADD(%a, %b) : bool[4]\n"
	       "%4 = MUL(%a, %b) : bool[4]\n"
	       "%5 = MAX(%a, %b) : bool[4]\n"
	       "%6 = CMPLT(%a, %b) : bool[4]\n"
	       "%7 = CMPLT(%c, %d) : bool[2]\n"
	       "%8 = CMPLT(%e, %f) : bool[2]\n"
	       "%9 = CMPEQ(%e, %f) : bool[2]\n"
	       "%10 = CMPNE(%c, %d) : bool[2]\n"
	       "%11 = MAX(%c, %d) : uint[2]\n"
	       "%12 = MAX(%e, %f) : int[2]\n"
	       OUT(0, 0, "bool", "[4]") OUT(1, 1, "bool", "[4]") OUT(2, 2, "bool", "[4]")
	       OUT(3, 3, "bool", "[4]") OUT(4, 4, "bool", "[4]") OUT(5, 5, "bool", "[4]")
	       OUT(6, 6, "bool", "[4]") OUT(7, 7, "bool", "[2]") OUT(8, 8, "bool", "[2]")
	       OUT(9, 9, "bool", "[2]") OUT(10, 10, "bool", "[2]") OUT(11, 11, "uint", "[2]")
	       OUT(12, 12, "int", "[2]"),
	       NULL, 6, in);
	expect_i(0, TINYC_BOOL, SHAPE(4), I(0, 0, 0, 1));
	expect_i(1, TINYC_BOOL, SHAPE(4), I(0, 1, 1, 1));
	expect_i(2, TINYC_BOOL, SHAPE(4), I(0, 1, 1, 0));
	expect_i(3, TINYC_BOOL, SHAPE(4), I(0, 1, 1, 1));	/* ADD is OR */
	expect_i(4, TINYC_BOOL, SHAPE(4), I(0, 0, 0, 1));	/* MUL is AND */
	expect_i(5, TINYC_BOOL, SHAPE(4), I(0, 1, 1, 1));
	expect_i(6, TINYC_BOOL, SHAPE(4), I(0, 1, 0, 0));	/* false < true */
	expect_i(7, TINYC_BOOL, SHAPE(2), I(1, 0));	/* unsigned: 4294967295 > 0 */
	expect_i(8, TINYC_BOOL, SHAPE(2), I(1, 0));
	expect_i(9, TINYC_BOOL, SHAPE(2), I(0, 1));
	expect_i(10, TINYC_BOOL, SHAPE(2), I(1, 1));
	expect_i(11, TINYC_UINT, SHAPE(2), I(2, 4294967295));
	expect_i(12, TINYC_INT, SHAPE(2), I(0, 5));
}

Test(eval, casts)
{
	tinyc_tensor *in[5] = {
		mk(TINYC_FLOAT, SHAPE(9), V(1e10, -1e10, NAN, -2.7, 2.7, 300, -1, 0.5, 0)),
		mki(TINYC_INT, SHAPE(4), I(300, -129, 127, 16777217)),
		mki(TINYC_UINT, SHAPE(1), I(4294967295)),
		mk(TINYC_FLOAT, SHAPE(6), V(2049, 2051, 65520, 1e-8, 257, 259)),
		mki(TINYC_BOOL, SHAPE(2), I(0, 1)),
	};
	run_ok("%x = BUFFER(slot=0, name=\"x\") : float[9]\n"
	       "%i = BUFFER(slot=1, name=\"i\") : int[4]\n"
	       "%u = BUFFER(slot=2, name=\"u\") : uint[1]\n"
	       "%h = BUFFER(slot=3, name=\"h\") : float[6]\n"
	       "%b = BUFFER(slot=4, name=\"b\") : bool[2]\n"
	       "%0 = CAST(%x) : int[9]\n"
	       "%1 = CAST(%x) : uchar[9]\n"
	       "%2 = CAST(%x) : bool[9]\n"
	       "%3 = CAST(%i) : char[4]\n"
	       "%4 = CAST(%i) : uint[4]\n"
	       "%5 = CAST(%i) : float[4]\n"
	       "%6 = CAST(%u) : float[1]\n"
	       "%7 = CAST(%h) : half[6]\n"
	       "%8 = CAST(%h) : bfloat16[6]\n"
	       "%9 = CAST(%b) : float[2]\n"
	       "%10 = CAST(%i) : bool[4]\n"
	       "%11 = CAST(%x) : long[9]\n"
	       "%12 = CAST(%x) : ulong[9]\n"
	       "%13 = CAST(%8) : float[6]\n"
	       OUT(0, 0, "int", "[9]") OUT(1, 1, "uchar", "[9]") OUT(2, 2, "bool", "[9]")
	       OUT(3, 3, "char", "[4]") OUT(4, 4, "uint", "[4]") OUT(5, 5, "float", "[4]")
	       OUT(6, 6, "float", "[1]") OUT(7, 7, "half", "[6]") OUT(8, 13, "float", "[6]")
	       OUT(9, 9, "float", "[2]") OUT(10, 10, "bool", "[4]") OUT(11, 11, "long", "[9]")
	       OUT(12, 12, "ulong", "[9]"),
	       NULL, 5, in);
	/* float -> int: truncate toward zero, saturate, NaN -> 0 */
	expect_i(0, TINYC_INT, SHAPE(9), I(2147483647, INT32_MIN, 0, -2, 2, 300, -1, 0, 0));
	expect_i(1, TINYC_UCHAR, SHAPE(9), I(255, 0, 0, 0, 2, 255, 0, 0, 0));
	expect_i(2, TINYC_BOOL, SHAPE(9), I(1, 1, 1, 1, 1, 1, 1, 1, 0));
	/* int -> int wraps: 300 -> 44, -129 -> 127; 16777217 = 0x1000001 -> 1 */
	expect_i(3, TINYC_CHAR, SHAPE(4), I(44, 127, 127, 1));
	expect_i(4, TINYC_UINT, SHAPE(4), I(300, 4294967167, 127, 16777217));
	/* 2^24 + 1 is a tie in float32 -> 2^24 */
	expect_f(5, TINYC_FLOAT, SHAPE(4), V(300, -129, 127, 16777216));
	expect_f(6, TINYC_FLOAT, SHAPE(1), V(4294967296.0));
	/* half: 2049 and 2051 are ties (spacing 2) -> even 2048, 2052; 65520 -> inf; 1e-8 is
	 * below half the smallest subnormal 2^-24 -> 0; in [256,512) the spacing is 0.25, so
	 * 257 and 259 are exact */
	expect_f(7, TINYC_HALF, SHAPE(6), V(2048, 2052, INFINITY, 0, 257, 259));
	/* bfloat16: in [2048,4096) spacing 16: 2049 -> 2048, 2051 -> 2048; 65520 -> 65536;
	 * 1e-8 = 171.8 * 2^-34 (ulp 2^-34 in [2^-27,2^-26)) -> 172 * 2^-34; 257 -> 256 and
	 * 259 -> 260 (spacing 2, ties to even) */
	expect_f(8, TINYC_FLOAT, SHAPE(6), V(2048, 2048, 65536, 172 * 0x1p-34, 256, 260));
	expect_f(9, TINYC_FLOAT, SHAPE(2), V(0, 1));
	expect_i(10, TINYC_BOOL, SHAPE(4), I(1, 1, 1, 1));
	expect_i(11, TINYC_LONG, SHAPE(9), I(10000000000, -10000000000, 0, -2, 2, 300, -1, 0, 0));
	expect_i(12, TINYC_ULONG, SHAPE(9), I(10000000000, 0, 0, 0, 2, 300, 0, 0, 0));
}

Test(eval, double_rounding_is_avoided)
{
	/* 2049 + 2^-30 lies above the half tie 2049: direct rounding gives 2050; through
	 * float32 it would first become 2049 and then tie to 2048.  2^60 + 2^52 + 1 lies above
	 * the bfloat16 tie 2^60 + 2^52: direct rounding gives 2^60 + 2^53; through double it would
	 * become 2^60 + 2^52 and tie to 2^60. */
	run_ok("%0 = CONST(2049.0000000009313) : double[]\n"
	       "%1 = CAST(%0) : half[]\n"
	       "%2 = CONST(1157425104234217473) : long[]\n"
	       "%3 = CAST(%2) : bfloat16[]\n"
	       "%4 = CAST(%3) : float[]\n"
	       "%5 = CAST(%0) : float[]\n"
	       OUT(0, 1, "half", "[]") OUT(1, 4, "float", "[]") OUT(2, 5, "float", "[]"),
	       NULL, 0, NULL);
	expect_f(0, TINYC_HALF, SCALAR, V(2050));
	expect_f(1, TINYC_FLOAT, SCALAR, V(1161928703861587968.0));
	expect_f(2, TINYC_FLOAT, SCALAR, V(2049));
}

Test(eval, half_and_bf16_materialisation)
{
	tinyc_tensor *in[4] = {
		mk(TINYC_HALF, SHAPE(1), V(2048)),
		mk(TINYC_HALF, SHAPE(3), V(2048, 1, 1)),
		mk(TINYC_HALF, SHAPE(2), V(1 + 0x1p-10, 1 + 0x1p-10)),
		mk(TINYC_BFLOAT16, SHAPE(1), V(256)),
	};
	run_ok("%x = BUFFER(slot=0, name=\"x\") : half[1]\n"
	       "%r = BUFFER(slot=1, name=\"r\") : half[3]\n"
	       "%p = BUFFER(slot=2, name=\"p\") : half[2]\n"
	       "%bb = BUFFER(slot=3, name=\"bb\") : bfloat16[1]\n"
	       "%one = CONST(1) : half[]\n"
	       "%0 = ADD(%x, %one) : half[1]\n"		/* 2049 in float32 */
	       "%1 = ADD(%0, %one) : half[1]\n"		/* 2050: not 2048 + 1 + 1 in half */
	       "%2 = CAST(%0) : float[1]\n"		/* not materialised: 2049 */
	       "%3 = CONST(2049) : half[]\n"		/* materialised: 2048 */
	       "%4 = CAST(%3) : float[]\n"
	       "%5 = REDUCE(%r, op=ADD, axes=[0], acc=float) : half[1]\n"	/* 2050 */
	       "%6 = SHRINK(%r, bounds=[[0,2]]) : half[2]\n"
	       "%7 = REDUCE(%6, op=ADD, axes=[0], acc=float) : half[1]\n"	/* 2049 -> 2048 */
	       "%8 = RESHAPE(%p, shape=[1,2]) : half[1,2]\n"
	       "%9 = RESHAPE(%p, shape=[2,1]) : half[2,1]\n"
	       "%10 = MUL(%8, %9) : half[2,2]\n"
	       "%11 = CAST(%10) : float[2,2]\n"
	       "%12 = REDUCE(%11, op=ADD, axes=[1]) : float[2,1]\n"
	       "%bone = CONST(1) : bfloat16[]\n"
	       "%13 = ADD(%bb, %bone) : bfloat16[1]\n"
	       OUT(0, 1, "half", "[1]") OUT(1, 0, "half", "[1]") OUT(2, 2, "float", "[1]")
	       OUT(3, 4, "float", "[]") OUT(4, 5, "half", "[1]") OUT(5, 7, "half", "[1]")
	       OUT(6, 11, "float", "[2,2]") OUT(7, 12, "float", "[2,1]")
	       OUT(8, 13, "bfloat16", "[1]"),
	       NULL, 4, in);
	expect_f(0, TINYC_HALF, SHAPE(1), V(2050));
	expect_f(1, TINYC_HALF, SHAPE(1), V(2048));	/* 2049 rounded at the OUTPUT */
	expect_f(2, TINYC_FLOAT, SHAPE(1), V(2049));
	expect_f(3, TINYC_FLOAT, SCALAR, V(2048));
	expect_f(4, TINYC_HALF, SHAPE(1), V(2050));
	expect_f(5, TINYC_HALF, SHAPE(1), V(2048));
	/* (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20 exactly (in half it would be 1 + 2^-9) */
	double sq = 1 + 0x1p-9 + 0x1p-20;
	expect_f(6, TINYC_FLOAT, SHAPE(2, 2), V(sq, sq, sq, sq));
	expect_f(7, TINYC_FLOAT, SHAPE(2, 1), V(2 * sq, 2 * sq));
	expect_f(8, TINYC_BFLOAT16, SHAPE(1), V(256));	/* 257 ties to 256 in bfloat16 */
}

Test(eval, reduce)
{
	tinyc_tensor *in[7] = {
		mk(TINYC_FLOAT, SHAPE(2, 3), V(1, 2, 3, 4, 5, 6)),
		mki(TINYC_INT, SHAPE(2), I(2147483647, 1)),
		mki(TINYC_INT, SHAPE(2), I(-5, -7)),
		mki(TINYC_UINT, SHAPE(2), I(3, 9)),
		mk(TINYC_FLOAT, SHAPE(2), V(NAN, 1)),
		mki(TINYC_BOOL, SHAPE(3), I(1, 1, 0)),
		mki(TINYC_CHAR, SHAPE(3), I(100, 100, 100)),
	};
	run_ok("%x = BUFFER(slot=0, name=\"x\") : float[2,3]\n"
	       "%i = BUFFER(slot=1, name=\"i\") : int[2]\n"
	       "%n = BUFFER(slot=2, name=\"n\") : int[2]\n"
	       "%u = BUFFER(slot=3, name=\"u\") : uint[2]\n"
	       "%f = BUFFER(slot=4, name=\"f\") : float[2]\n"
	       "%b = BUFFER(slot=5, name=\"b\") : bool[3]\n"
	       "%c = BUFFER(slot=6, name=\"c\") : char[3]\n"
	       "%0 = REDUCE(%x, op=ADD, axes=[1]) : float[2,1]\n"
	       "%1 = REDUCE(%x, op=ADD, axes=[-1], keepdim=false) : float[2]\n"
	       "%2 = REDUCE(%x, op=ADD, axes=[0]) : float[1,3]\n"
	       "%3 = REDUCE(%x, op=ADD, axes=[0,1], keepdim=false) : float[]\n"
	       "%4 = REDUCE(%x, op=MAX, axes=[1]) : float[2,1]\n"
	       "%5 = REDUCE(%x, op=MUL, axes=[-2]) : float[1,3]\n"
	       "%6 = REDUCE(%i, op=ADD, axes=[0]) : int[1]\n"
	       "%7 = REDUCE(%n, op=MAX, axes=[0]) : int[1]\n"
	       "%8 = REDUCE(%u, op=MAX, axes=[0]) : uint[1]\n"
	       "%9 = REDUCE(%f, op=MAX, axes=[0]) : float[1]\n"
	       "%10 = REDUCE(%b, op=ADD, axes=[0], acc=int) : int[1]\n"
	       "%11 = REDUCE(%b, op=MAX, axes=[0]) : bool[1]\n"
	       "%12 = REDUCE(%b, op=MUL, axes=[0]) : bool[1]\n"
	       "%13 = REDUCE(%c, op=ADD, axes=[0], acc=int) : char[1]\n"
	       "%14 = REDUCE(%c, op=ADD, axes=[0], acc=int) : int[1]\n"
	       "%15 = REDUCE(%x, op=ADD, axes=[]) : float[2,3]\n"
	       OUT(0, 0, "float", "[2,1]") OUT(1, 1, "float", "[2]") OUT(2, 2, "float", "[1,3]")
	       OUT(3, 3, "float", "[]") OUT(4, 4, "float", "[2,1]") OUT(5, 5, "float", "[1,3]")
	       OUT(6, 6, "int", "[1]") OUT(7, 7, "int", "[1]") OUT(8, 8, "uint", "[1]")
	       OUT(9, 9, "float", "[1]") OUT(10, 10, "int", "[1]") OUT(11, 11, "bool", "[1]")
	       OUT(12, 12, "bool", "[1]") OUT(13, 13, "char", "[1]") OUT(14, 14, "int", "[1]")
	       OUT(15, 15, "float", "[2,3]"),
	       NULL, 7, in);
	expect_f(0, TINYC_FLOAT, SHAPE(2, 1), V(6, 15));
	expect_f(1, TINYC_FLOAT, SHAPE(2), V(6, 15));
	expect_f(2, TINYC_FLOAT, SHAPE(1, 3), V(5, 7, 9));
	expect_f(3, TINYC_FLOAT, SCALAR, V(21));
	expect_f(4, TINYC_FLOAT, SHAPE(2, 1), V(3, 6));
	expect_f(5, TINYC_FLOAT, SHAPE(1, 3), V(4, 10, 18));
	expect_i(6, TINYC_INT, SHAPE(1), I(INT32_MIN));	/* wraps in int */
	expect_i(7, TINYC_INT, SHAPE(1), I(-5));	/* identity is INT_MIN, not 0 */
	expect_i(8, TINYC_UINT, SHAPE(1), I(9));
	expect_f(9, TINYC_FLOAT, SHAPE(1), V(1));	/* NaN ignored by MAX */
	expect_i(10, TINYC_INT, SHAPE(1), I(2));
	expect_i(11, TINYC_BOOL, SHAPE(1), I(1));
	expect_i(12, TINYC_BOOL, SHAPE(1), I(0));
	expect_i(13, TINYC_CHAR, SHAPE(1), I(44));	/* 300 in int, then wrapped to char */
	expect_i(14, TINYC_INT, SHAPE(1), I(300));
	expect_f(15, TINYC_FLOAT, SHAPE(2, 3), V(1, 2, 3, 4, 5, 6));
}

Test(eval, movement)
{
	tinyc_tensor *in[3] = {
		mk(TINYC_FLOAT, SHAPE(2, 3), V(0, 1, 2, 3, 4, 5)),
		mk(TINYC_FLOAT, SHAPE(2, 1), V(7, 8)),
		NULL,
	};
	double v24[24];
	for (int i = 0; i < 24; i++)
		v24[i] = i;
	in[2] = mk(TINYC_FLOAT, SHAPE(2, 3, 4), v24);
	run_ok("%x = BUFFER(slot=0, name=\"x\") : float[2,3]\n"
	       "%y = BUFFER(slot=1, name=\"y\") : float[2,1]\n"
	       "%z = BUFFER(slot=2, name=\"z\") : float[2,3,4]\n"
	       "%0 = PERMUTE(%x, perm=[1,0]) : float[3,2]\n"
	       "%1 = RESHAPE(%x, shape=[3,2]) : float[3,2]\n"
	       "%2 = EXPAND(%y, shape=[2,3]) : float[2,3]\n"
	       "%3 = PAD(%x, pads=[[1,0],[0,2]]) : float[3,5]\n"
	       "%4 = SHRINK(%x, bounds=[[1,2],[0,2]]) : float[1,2]\n"
	       "%5 = FLIP(%x, axes=[-1]) : float[2,3]\n"
	       "%6 = FLIP(%x, axes=[0,1]) : float[2,3]\n"
	       "%7 = CONTIGUOUS(%x) : float[2,3]\n"
	       "%8 = PERMUTE(%z, perm=[2,0,1]) : float[4,2,3]\n"
	       "%9 = SHRINK(%z, bounds=[[1,2],[1,3],[2,4]]) : float[1,2,2]\n"
	       OUT(0, 0, "float", "[3,2]") OUT(1, 1, "float", "[3,2]") OUT(2, 2, "float", "[2,3]")
	       OUT(3, 3, "float", "[3,5]") OUT(4, 4, "float", "[1,2]") OUT(5, 5, "float", "[2,3]")
	       OUT(6, 6, "float", "[2,3]") OUT(7, 7, "float", "[2,3]") OUT(8, 8, "float", "[4,2,3]")
	       OUT(9, 9, "float", "[1,2,2]"),
	       NULL, 3, in);
	expect_f(0, TINYC_FLOAT, SHAPE(3, 2), V(0, 3, 1, 4, 2, 5));
	expect_f(1, TINYC_FLOAT, SHAPE(3, 2), V(0, 1, 2, 3, 4, 5));
	expect_f(2, TINYC_FLOAT, SHAPE(2, 3), V(7, 7, 7, 8, 8, 8));
	expect_f(3, TINYC_FLOAT, SHAPE(3, 5), V(0, 0, 0, 0, 0,
						 0, 1, 2, 0, 0,
						 3, 4, 5, 0, 0));
	expect_f(4, TINYC_FLOAT, SHAPE(1, 2), V(3, 4));
	expect_f(5, TINYC_FLOAT, SHAPE(2, 3), V(2, 1, 0, 5, 4, 3));
	expect_f(6, TINYC_FLOAT, SHAPE(2, 3), V(5, 4, 3, 2, 1, 0));
	expect_f(7, TINYC_FLOAT, SHAPE(2, 3), V(0, 1, 2, 3, 4, 5));
	/* out[i][j][k] = z[j][k][i] = 12j + 4k + i */
	double p[24];
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 2; j++)
			for (int k = 0; k < 3; k++)
				p[i * 6 + j * 3 + k] = 12 * j + 4 * k + i;
	expect_f(8, TINYC_FLOAT, SHAPE(4, 2, 3), p);
	/* z[1][1..2][2..3] = 12+4+2, 12+4+3, 12+8+2, 12+8+3 */
	expect_f(9, TINYC_FLOAT, SHAPE(1, 2, 2), V(18, 19, 22, 23));
}

Test(eval, where_and_const)
{
	tinyc_tensor *in[2] = {
		mki(TINYC_BOOL, SHAPE(2, 1), I(1, 0)),
		mk(TINYC_FLOAT, SHAPE(3), V(1, 2, 3)),
	};
	run_ok("%c = BUFFER(slot=0, name=\"c\") : bool[2,1]\n"
	       "%t = BUFFER(slot=1, name=\"t\") : float[3]\n"
	       "%f = CONST(-1) : float[]\n"
	       "%0 = WHERE(%c, %t, %f) : float[2,3]\n"
	       "%1 = CONST(65504) : half[]\n"
	       "%2 = CONST(-inf) : half[]\n"
	       "%3 = CONST(nan) : bfloat16[]\n"
	       "%4 = CONST(true) : bool[]\n"
	       "%5 = CONST(-9223372036854775808) : long[]\n"
	       "%6 = CONST(0.1) : float[]\n"
	       "%7 = CONST(0.1) : half[]\n"
	       "%8 = CONST(0.1) : double[]\n"
	       "%9 = CONST(255) : uchar[]\n"
	       OUT(0, 0, "float", "[2,3]") OUT(1, 1, "half", "[]") OUT(2, 2, "half", "[]")
	       OUT(3, 3, "bfloat16", "[]") OUT(4, 4, "bool", "[]") OUT(5, 5, "long", "[]")
	       OUT(6, 6, "float", "[]") OUT(7, 7, "half", "[]") OUT(8, 8, "double", "[]")
	       OUT(9, 9, "uchar", "[]"),
	       NULL, 2, in);
	expect_f(0, TINYC_FLOAT, SHAPE(2, 3), V(1, 2, 3, -1, -1, -1));
	expect_f(1, TINYC_HALF, SCALAR, V(65504));
	expect_f(2, TINYC_HALF, SCALAR, V(-INFINITY));
	expect_f(3, TINYC_BFLOAT16, SCALAR, V(NAN));
	expect_i(4, TINYC_BOOL, SCALAR, I(1));
	expect_i(5, TINYC_LONG, SCALAR, I(INT64_MIN));
	expect_f(6, TINYC_FLOAT, SCALAR, V(0.1f));
	expect_f(7, TINYC_HALF, SCALAR, V(0.0999755859375));	/* 1638/1024 * 2^-4 */
	expect_f(8, TINYC_DOUBLE, SCALAR, V(0.1));
	expect_i(9, TINYC_UCHAR, SCALAR, I(255));
}

Test(eval, bitcast)
{
	tinyc_tensor *in[4] = {
		mk(TINYC_FLOAT, SHAPE(2), V(1.0, -2.0)),
		mk(TINYC_HALF, SHAPE(2), V(1.0, 2048)),
		mki(TINYC_INT, SHAPE(1), I(-1)),
		mki(TINYC_UINT, SHAPE(1), I(0x7f800000)),
	};
	run_ok("%f = BUFFER(slot=0, name=\"f\") : float[2]\n"
	       "%h = BUFFER(slot=1, name=\"h\") : half[2]\n"
	       "%i = BUFFER(slot=2, name=\"i\") : int[1]\n"
	       "%u = BUFFER(slot=3, name=\"u\") : uint[1]\n"
	       "%one = CONST(1) : half[]\n"
	       "%0 = BITCAST(%f) : int[2]\n"
	       "%1 = BITCAST(%h) : short[2]\n"
	       "%2 = BITCAST(%i) : uint[1]\n"
	       "%3 = BITCAST(%u) : float[1]\n"
	       "%4 = ADD(%h, %one) : half[2]\n"		/* 2, 2049 (float32) */
	       "%5 = BITCAST(%4) : ushort[2]\n"		/* rounded to half first: 2048 */
	       OUT(0, 0, "int", "[2]") OUT(1, 1, "short", "[2]") OUT(2, 2, "uint", "[1]")
	       OUT(3, 3, "float", "[1]") OUT(4, 5, "ushort", "[2]"),
	       NULL, 4, in);
	expect_i(0, TINYC_INT, SHAPE(2), I(0x3f800000, -1073741824));	/* 0xc0000000 */
	expect_i(1, TINYC_SHORT, SHAPE(2), I(0x3c00, 0x6800));
	expect_i(2, TINYC_UINT, SHAPE(1), I(4294967295));
	expect_f(3, TINYC_FLOAT, SHAPE(1), V(INFINITY));
	expect_i(4, TINYC_USHORT, SHAPE(2), I(0x4000, 0x6800));
}

Test(eval, strided_buffer_and_output)
{
	double v[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	tinyc_tensor *in[2] = {
		mk(TINYC_FLOAT, SHAPE(10), v),
		mk(TINYC_FLOAT, SHAPE(2, 2), V(1, 2, 3, 4)),
	};
	run_ok("%x = BUFFER(slot=0, name=\"x\", strides=[1,M]) : float[M,2]\n"
	       "%y = BUFFER(slot=1, name=\"y\") : float[2,2]\n"
	       "%0 = CONTIGUOUS(%x) : float[M,2]\n"
	       "%o0 = OUTPUT(%0, name=\"o0\") : float[M,2]\n"
	       "%o1 = OUTPUT(%y, name=\"o1\", strides=[3,1]) : float[2,2]\n",
	       "M=3", 2, in);
	/* (i,j) = x[i + 3j] */
	expect_f(0, TINYC_FLOAT, SHAPE(3, 2), V(0, 3, 1, 4, 2, 5));
	/* storage 1 + 1*3 + 1*1 = 5 elements: offsets 0,1,3,4; offset 2 stays 0 */
	expect_f(1, TINYC_FLOAT, SHAPE(5), V(1, 2, 0, 3, 4));
	/* overlapping OUTPUT strides ([1,0]) are refused by the verifier (test_verify.c) */

	/* stride 0 reads broadcast one row */
	in[0] = mk(TINYC_FLOAT, SHAPE(3), V(5, 6, 7));
	run_ok("%x = BUFFER(slot=0, name=\"x\", strides=[0,1]) : float[2,3]\n"
	       OUT(0, x, "float", "[2,3]"), NULL, 1, in);
	expect_f(0, TINYC_FLOAT, SHAPE(2, 3), V(5, 6, 7, 5, 6, 7));
}

/* The graph of DESIGN.md §2 on inputs small enough to multiply by hand. */
Test(eval, matmul_bias_relu)
{
	tinyc_tensor *in[3] = {
		mk(TINYC_HALF, SHAPE(2, 3), V(1, 2, 3, 4, 5, 6)),
		mk(TINYC_HALF, SHAPE(3, 2), V(1, 0, 0, 1, 1, -1)),
		mk(TINYC_HALF, SHAPE(2), V(0.5, 0.25)),
	};
	run_ok(TEST_MATMUL_BIAS_RELU,
	       NULL, 3, in);
	/* X@W = [[1+3, 2-3], [4+6, 5-6]] = [[4,-1],[10,-1]]; + bias; relu */
	expect_f(0, TINYC_HALF, SHAPE(2, 2), V(4.5, 0, 10.5, 0));
	cr_expect(b->val[0] == 2 && b->val[1] == 3 && b->val[2] == 2, "M, K, N bound from inputs");
}

Test(eval, binding_errors)
{
	const char *mm = "%x = BUFFER(slot=0, name=\"X\") : float[M,K]\n"
			 "%w = BUFFER(slot=1, name=\"W\") : float[K,N]\n"
			 "%o = OUTPUT(%w, name=\"Y\") : float[K,N]\n";
	tinyc_tensor *in[2] = {
		mk(TINYC_FLOAT, SHAPE(2, 5), NULL),
		mk(TINYC_FLOAT, SHAPE(6, 3), NULL),
	};
	cr_expect(run(mm, NULL, 2, in, 0) == -1);
	expect_diag("InconsistentBinding", "K = 5 from input 'X' but 6 from input 'W'");
	in[1] = mk(TINYC_FLOAT, SHAPE(5, 3), NULL);
	cr_expect(run(mm, "M=3", 2, in, 0) == -1);
	expect_diag("InconsistentBinding", "M = 3 is given but input 'X' has 2 at axis 0");
	in[1] = mk(TINYC_INT, SHAPE(5, 3), NULL);
	cr_expect(run(mm, NULL, 2, in, 0) == -1);
	expect_diag("InputMismatch", "input 'W' is int, the graph expects float");
	in[1] = mk(TINYC_FLOAT, SHAPE(5, 3, 1), NULL);
	cr_expect(run(mm, NULL, 2, in, 0) == -1);
	expect_diag("InputMismatch", "input 'W' has rank 3, the graph expects 2");
	cr_expect(run("%x = BUFFER(slot=0, name=\"X\") : float[2,3]\n" OUT(0, x, "float", "[2,3]"),
		      NULL, 1, in, 0) == -1);
	expect_diag("InputMismatch", "input 'X' has 5 at axis 1, the graph expects 3");
	/* missing inputs are left to tinyc_eval, which reports them */
	in[1] = NULL;
	cr_expect(run(mm, NULL, 2, in, 0) == -1);
	expect_diag("MissingInput", "no input tensor for BUFFER 'W' (slot 1)");
	cr_expect(io.nout == 0 && io.out == NULL, "no outputs after an error");
}

Test(eval, eval_errors)
{
	/* every symbol must be bound */
	cr_expect(run("%x = CONST(1) : float[]\n"
		      "%0 = RESHAPE(%x, shape=[1,1]) : float[1,1]\n"
		      "%1 = EXPAND(%0, shape=[M,N]) : float[M,N]\n"
		      OUT(0, 1, "float", "[M,N]"), "N=2", 0, NULL, 0) == -1);
	expect_diag("UnboundSymbol", "symbol M has no value");
	/* a node above 2^31 elements is refused before any allocation */
	tinyc_tensor *in[1] = {mk(TINYC_FLOAT, SHAPE(1), V(1))};
	cr_expect(run("%x = BUFFER(slot=0, name=\"x\", strides=[0,0]) : float[M,N]\n"
		      "%0 = REDUCE(%x, op=ADD, axes=[0,1]) : float[1,1]\n"
		      OUT(0, 0, "float", "[1,1]"), "M=65536,N=65536", 1, in, 0) == -1);
	expect_diag("TooLarge", "more than 2^31 elements");
	/* a strided BUFFER whose storage is too small */
	in[0] = mk(TINYC_FLOAT, SHAPE(5), V(1, 2, 3, 4, 5));
	cr_expect(run("%x = BUFFER(slot=0, name=\"x\", strides=[1,3]) : float[3,2]\n"
		      OUT(0, x, "float", "[3,2]"), NULL, 1, in, 0) == -1);
	expect_diag("InputMismatch", "input 'x' has 5 elements; its strides need at least 6");
	/* a shape that does not match the input, found by the evaluator itself */
	in[0] = mk(TINYC_FLOAT, SHAPE(2, 2), V(1, 2, 3, 4));
	cr_expect(run("%x = BUFFER(slot=0, name=\"x\") : float[2,2]\n"
		      OUT(0, x, "float", "[2,2]"), NULL, 1, in, 0) == 0);
	in[0] = mk(TINYC_FLOAT, SHAPE(4), V(1, 2, 3, 4));
	io.in[0] = in[0];
	cr_expect(tinyc_eval(ctx, g, b, &io) == -1);
	expect_diag("InputMismatch", "input 'x' has shape [4], the graph expects [2,2]");
	/* an unverified graph with an op on a dtype it does not take */
	in[0] = mki(TINYC_INT, SHAPE(2), I(4, 9));
	cr_expect(run("%x = BUFFER(slot=0, name=\"x\") : int[2]\n"
		      "%0 = SQRT(%x) : int[2]\n" OUT(0, 0, "int", "[2]"), NULL, 1, in, 0) == -1);
	expect_diag("UnsupportedOp", "SQRT is not defined on int");
	/* an unverified RESHAPE whose element counts differ under the bindings */
	in[0] = mk(TINYC_FLOAT, SHAPE(6), V(1, 2, 3, 4, 5, 6));
	cr_expect(run("%x = BUFFER(slot=0, name=\"x\") : float[M]\n"
		      "%0 = RESHAPE(%x, shape=[2,N]) : float[2,N]\n"
		      OUT(0, 0, "float", "[2,N]"), "N=4", 1, in, 0) == -1);
	expect_diag("ShapeMismatch", "RESHAPE from 6 to 8 elements");
}

Test(eval, reuses_io)
{
	tinyc_tensor *in[1] = {mk(TINYC_FLOAT, SHAPE(2), V(1, 2))};
	run_ok("%x = BUFFER(slot=0, name=\"x\") : float[N]\n"
	       "%0 = NEG(%x) : float[N]\n" OUT(0, 0, "float", "[N]"), NULL, 1, in);
	/* a second run on the same io frees the first outputs (LSan checks) */
	cr_assert(tinyc_eval(ctx, g, b, &io) == 0);
	expect_f(0, TINYC_FLOAT, SHAPE(2), V(-1, -2));
}
