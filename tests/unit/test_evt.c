/* Unit tests of the epilogue graph (ir/evt.h, lower/evt_passes.c, poly/evt_extract.c):
 *   - the C API: seed 000's D = C + X built from nodes and an edge tuple, its dump compared
 *     with hand-written text; polynomials; the visit order;
 *   - malformed graphs (children out of range or missing, cycles, type clashes, bad layouts,
 *     bad edge tuples): a diagnostic of the right kind with a message, never a crash;
 *   - each pass: cast insertion, CSE, dead-node elimination, the stable topological order;
 *   - extraction from UOp graphs (tests/gpu/epilogue and inline graphs): node kinds, strides,
 *     reductions, several outputs, values used twice, dead branches, consumers left out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "ir/evt.h"
#include "driver/module.h"
#include "lower/lower.h"

/* ------------------------------------------------------------------ helpers ---- */

/* Whether ctx holds a diagnostic of this kind whose message contains `text`. */
static int has_diag(tinyc_ctx *ctx, const char *kind, const char *text)
{
	for (int i = 0; i < tinyc_ctx_diag_count(ctx); i++) {
		const tinyc_diag *d = tinyc_ctx_diag(ctx, i);
		if (!strcmp(d->kind, kind) && (!text || strstr(d->msg, text)))
			return 1;
	}
	return 0;
}

/* The dump of g. */
static char *dump(const tinyc_evt *g)
{
	tinyc_buf b = {0};
	tinyc_evt_print(g, &b);
	return b.data;
}

/* A row-major [M, N] layout with M, N symbols 0, 1. */
static tinyc_evt_layout rowmajor(void)
{
	tinyc_dim m = {0, 0}, n = {0, 1};
	return tinyc_evt_layout_rowmajor(&m, &n);
}

/* A graph with symbols M, N and accumulator type acc. */
static tinyc_evt *graph(tinyc_ctx *ctx, tinyc_dtype acc)
{
	tinyc_evt *g = tinyc_evt_alloc(ctx, acc);
	const char *syms[2] = {"M", "N"};
	cr_assert(g && tinyc_evt_set_symbols(ctx, g, 2, syms) == 0);
	return g;
}

/* Count nodes of kind k. */
static int count_kind(const tinyc_evt *g, tinyc_evt_kind k)
{
	int n = 0;
	for (int i = 0; i < g->n; i++)
		n += g->nodes[i].kind == k;
	return n;
}

/* -------------------------------------------------------------- polynomials ---- */

Test(evt_poly, arithmetic_and_printing)
{
	char *syms[3] = {"M", "N", "K"};
	tinyc_evt_poly m = tinyc_evt_poly_sym(1, 0), n = tinyc_evt_poly_sym(1, 1);
	tinyc_evt_poly mn, s, t;
	cr_assert(tinyc_evt_poly_mul(&m, &n, &mn) == 0);
	tinyc_evt_poly two_n = tinyc_evt_poly_sym(2, 1), one = tinyc_evt_poly_const(1);
	cr_assert(tinyc_evt_poly_add(&mn, &two_n, &s) == 0);
	cr_assert(tinyc_evt_poly_add(&s, &one, &s) == 0);
	tinyc_buf b = {0};
	tinyc_evt_poly_print(&s, syms, 3, &b);
	cr_assert_str_eq(b.data, "M*N + 2*N + 1");
	tinyc_buf_free(&b);
	/* n*m normalises to the same term as m*n; subtracting cancels it */
	tinyc_evt_poly nm, neg = tinyc_evt_poly_const(-1), negnm;
	cr_assert(tinyc_evt_poly_mul(&n, &m, &nm) == 0);
	cr_assert(tinyc_evt_poly_equal(&nm, &mn));
	cr_assert(tinyc_evt_poly_mul(&neg, &nm, &negnm) == 0);
	cr_assert(tinyc_evt_poly_add(&mn, &negnm, &t) == 0);
	cr_assert(tinyc_evt_poly_is_zero(&t));
	int64_t sym[3] = {3, 5, -1}, v;
	cr_assert(tinyc_evt_poly_eval(&s, sym, 3, &v) == 0);
	cr_assert_eq(v, 3 * 5 + 2 * 5 + 1);
	tinyc_evt_poly k = tinyc_evt_poly_sym(1, 2);
	cr_assert(tinyc_evt_poly_eval(&k, sym, 3, &v) < 0, "K is unbound");
	b = (tinyc_buf){0};
	tinyc_evt_poly_print(&negnm, syms, 3, &b);
	cr_assert_str_eq(b.data, "-M*N");
	tinyc_buf_free(&b);
	cr_assert(tinyc_evt_poly_is_const(&one, 1) && !tinyc_evt_poly_is_const(&m, 1));
}

/* --------------------------------------------------------------- the C API ---- */

/* Seed 000's example: D = C + X, AccLoad, AuxLoad, Compute(Plus), Store, root last. */
Test(evt_api, seed000_d_equals_c_plus_x)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_evt *g = graph(ctx, TINYC_HALF);
	tinyc_evt_layout lay = rowmajor();
	cr_assert_eq(tinyc_evt_acc_fetch(ctx, g), 0);
	cr_assert_eq(tinyc_evt_load(ctx, g, TINYC_EVT_AUX_LOAD, "X", 7, TINYC_HALF, &lay), 1);
	cr_assert_eq(tinyc_evt_compute(ctx, g, TINYC_OP_ADD, TINYC_HALF), 2);
	cr_assert_eq(tinyc_evt_store(ctx, g, "D", 8, TINYC_HALF, &lay), 3);
	cr_assert_eq(tinyc_evt_set_edge_tuple(ctx, g, "tuple<seq<>, seq<>, seq<0, 1>, seq<2>>"), 0);
	cr_assert_eq(tinyc_evt_verify(ctx, g, 1), 0);
	cr_assert_eq(tinyc_evt_run_passes(ctx, g), 0);
	char *d = dump(g);
	cr_assert_str_eq(d,
			 "evt: acc half, 4 nodes, roots 3\n"
			 "  0: AccFetch : half  seq<>\n"
			 "  1: AuxLoad X:half strides (N, 1, M*N) : half  seq<>\n"
			 "  2: Compute ADD(half) : half  seq<0, 1>\n"
			 "  3: AuxStore D:half strides (N, 1, M*N) : half  seq<2>\n"
			 "  edges: tuple<seq<>, seq<>, seq<0, 1>, seq<2>>\n"
			 "  visit: 0 1 2 3\n");
	free(d);
	cr_assert_eq(g->log.len, 0, "nothing to change: %s", g->log.data);
	cr_assert_eq(tinyc_ctx_error_count(ctx), 0);
	tinyc_evt_free(g);
	tinyc_ctx_free(ctx);
}

/* A float accumulator added to a half tensor: the type pass inserts Casts. */
Test(evt_api, cast_insertion)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_evt *g = graph(ctx, TINYC_FLOAT);
	tinyc_evt_layout lay = rowmajor();
	tinyc_evt_acc_fetch(ctx, g);
	tinyc_evt_load(ctx, g, TINYC_EVT_AUX_LOAD, "X", 0, TINYC_HALF, &lay);
	tinyc_evt_compute(ctx, g, TINYC_OP_ADD, TINYC_FLOAT);
	tinyc_evt_store(ctx, g, "D", 1, TINYC_HALF, &lay);
	cr_assert_eq(tinyc_evt_set_edge_tuple(ctx, g, "{}, {}, {0, 1}, {2}"), 0);
	/* before the pass the types clash: X is half, the ADD computes in float */
	cr_assert_eq(tinyc_evt_verify(ctx, g, 1), -1);
	cr_assert(has_diag(ctx, "EvtTypeClash", "operand 1 is half"));
	tinyc_ctx_clear_diags(ctx);
	cr_assert_eq(tinyc_evt_run_passes(ctx, g), 0);
	cr_assert_eq(g->n, 6);
	cr_assert_eq(count_kind(g, TINYC_EVT_CAST), 2);
	/* sorted: the casts come right after what they convert */
	char *d = dump(g);
	cr_assert_str_eq(d,
			 "evt: acc float, 6 nodes, roots 5\n"
			 "  0: AccFetch : float  seq<>\n"
			 "  1: AuxLoad X:half strides (N, 1, M*N) : half  seq<>\n"
			 "  2: Cast : float  seq<1>\n"
			 "  3: Compute ADD(float) : float  seq<0, 2>\n"
			 "  4: Cast : half  seq<3>\n"
			 "  5: AuxStore D:half strides (N, 1, M*N) : half  seq<4>\n"
			 "  edges: tuple<seq<>, seq<>, seq<1>, seq<0, 2>, seq<3>, seq<4>>\n"
			 "  visit: 0 1 2 3 4 5\n");
	free(d);
	cr_assert(strstr(g->log.data, "types: node 4 = Cast(float) of node 1 (half), operand 1 of node 2"));
	cr_assert(strstr(g->log.data, "types: node 5 = Cast(half) of node 2 (float), operand 0 of node 3"));
	cr_assert(strstr(g->log.data, "sort: new order (old numbers): 0 1 4 2 5 3"));
	tinyc_evt_free(g);
	tinyc_ctx_free(ctx);
}

/* A compute type left open is taken from the operands; comparisons yield bool; a reduction's
 * input is cast to its accumulation type. */
Test(evt_api, type_propagation)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_evt *g = graph(ctx, TINYC_FLOAT);
	tinyc_evt_layout lay = rowmajor(), row = lay;
	row.stride[0] = tinyc_evt_poly_const(0);
	tinyc_evt_acc_fetch(ctx, g);				/* 0 */
	tinyc_evt_scalar(ctx, g, TINYC_FLOAT, 0.5);		/* 1 */
	tinyc_evt_compute(ctx, g, TINYC_OP_CMPLT, TINYC_DTYPE_NONE);	/* 2: acc < 0.5 */
	tinyc_evt_compute(ctx, g, TINYC_OP_WHERE, TINYC_DTYPE_NONE);	/* 3 */
	tinyc_evt_reduction(ctx, g, TINYC_EVT_ROW_RED, TINYC_RED_ADD, TINYC_DOUBLE, "rs", 2,
			    TINYC_FLOAT, &row);			/* 4 */
	cr_assert_eq(tinyc_evt_set_edge_tuple(ctx, g, "{}, {}, {0, 1}, {2, 0, 1}, {3}"), 0);
	cr_assert_eq(tinyc_evt_run_passes(ctx, g), 0);
	cr_assert_eq(g->nodes[2].dtype, TINYC_BOOL);
	cr_assert_eq(g->nodes[2].compute, TINYC_FLOAT);
	cr_assert_eq(g->nodes[3].dtype, TINYC_FLOAT);
	cr_assert_eq(count_kind(g, TINYC_EVT_CAST), 1, "the WHERE's float result cast to double");
	int red = g->n - 1;
	cr_assert_eq(g->nodes[red].kind, TINYC_EVT_ROW_RED);
	cr_assert_eq(g->nodes[g->nodes[red].child[0]].kind, TINYC_EVT_CAST);
	cr_assert_eq(g->nodes[g->nodes[red].child[0]].dtype, TINYC_DOUBLE);
	tinyc_evt_free(g);
	tinyc_ctx_free(ctx);
}

/* ------------------------------------------------------------ malformed graphs ---- */

/* Build acc -> ADD(acc, ?) -> store with the given edge tuple; returns the graph. */
static tinyc_evt *small(tinyc_ctx *ctx, const char *edges, int *rc)
{
	tinyc_evt *g = graph(ctx, TINYC_FLOAT);
	tinyc_evt_layout lay = rowmajor();
	tinyc_evt_acc_fetch(ctx, g);
	tinyc_evt_compute(ctx, g, TINYC_OP_ADD, TINYC_FLOAT);
	tinyc_evt_store(ctx, g, "D", 0, TINYC_FLOAT, &lay);
	*rc = tinyc_evt_set_edge_tuple(ctx, g, edges);
	return g;
}

Test(evt_malformed, child_out_of_range)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	int rc;
	tinyc_evt *g = small(ctx, "{}, {0, 7}, {1}", &rc);
	cr_assert_eq(rc, 0);
	cr_assert_eq(tinyc_evt_verify(ctx, g, 0), -1);
	cr_assert(has_diag(ctx, "EvtMalformed", "child 1 is 7, out of range 0..2"));
	tinyc_ctx_clear_diags(ctx);
	cr_assert_eq(tinyc_evt_run_passes(ctx, g), -1);
	int ch = -3;
	cr_assert_eq(tinyc_evt_set_edges(ctx, g, 1, 1, &ch), 0);
	cr_assert_eq(tinyc_evt_verify(ctx, g, 0), -1);
	cr_assert(has_diag(ctx, "EvtMalformed", "takes 2 children, has 1"));
	cr_assert(has_diag(ctx, "EvtMalformed", "child 0 is -3"));
	tinyc_evt_free(g);
	tinyc_ctx_free(ctx);
}

Test(evt_malformed, missing_children)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	int rc;
	tinyc_evt *g = small(ctx, "{}, {0}, {}", &rc);
	cr_assert_eq(rc, 0);
	cr_assert_eq(tinyc_evt_verify(ctx, g, 0), -1);
	cr_assert(has_diag(ctx, "EvtMalformed", "node 1 (Compute ADD) takes 2 children, has 1"));
	cr_assert(has_diag(ctx, "EvtMalformed", "node 2 (AuxStore) takes 1 children, has 0"));
	tinyc_evt_free(g);
	tinyc_ctx_free(ctx);
}

Test(evt_malformed, cycle)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	int rc;
	tinyc_evt *g = small(ctx, "{}, {0, 2}, {1}", &rc);	/* 1 -> 2 -> 1 */
	cr_assert_eq(rc, 0);
	cr_assert_eq(tinyc_evt_verify(ctx, g, 0), -1);
	cr_assert(has_diag(ctx, "EvtCycle", "1 -> 2 -> 1"));
	tinyc_ctx_clear_diags(ctx);
	cr_assert_eq(tinyc_evt_run_passes(ctx, g), -1);
	cr_assert(has_diag(ctx, "EvtCycle", NULL));
	tinyc_ctx_clear_diags(ctx);
	/* a node that is its own child */
	int self[2] = {0, 1};
	tinyc_evt_set_edges(ctx, g, 1, 2, self);
	int one = 1;
	tinyc_evt_set_edges(ctx, g, 2, 1, &one);
	cr_assert_eq(tinyc_evt_verify(ctx, g, 0), -1);
	cr_assert(has_diag(ctx, "EvtCycle", "1 -> 1"));
	/* the passes refuse it too, without looping */
	cr_assert_eq(tinyc_evt_pass_sort(ctx, g), -1);
	cr_assert_eq(tinyc_evt_pass_cse(ctx, g), -1);
	tinyc_evt_free(g);
	tinyc_ctx_free(ctx);
}

Test(evt_malformed, type_clashes)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	/* WHERE with a float condition: no cast can make it bool */
	tinyc_evt *g = graph(ctx, TINYC_FLOAT);
	tinyc_evt_layout lay = rowmajor();
	tinyc_evt_acc_fetch(ctx, g);
	tinyc_evt_compute(ctx, g, TINYC_OP_WHERE, TINYC_FLOAT);
	tinyc_evt_store(ctx, g, "D", 0, TINYC_FLOAT, &lay);
	tinyc_evt_set_edge_tuple(ctx, g, "{}, {0, 0, 0}, {1}");
	cr_assert_eq(tinyc_evt_run_passes(ctx, g), -1);
	cr_assert(has_diag(ctx, "EvtTypeClash", "the condition is float, not bool"));
	tinyc_evt_free(g);
	tinyc_ctx_clear_diags(ctx);
	/* a bitwise op on floats */
	g = graph(ctx, TINYC_FLOAT);
	tinyc_evt_acc_fetch(ctx, g);
	tinyc_evt_compute(ctx, g, TINYC_OP_XOR, TINYC_FLOAT);
	tinyc_evt_store(ctx, g, "D", 0, TINYC_FLOAT, &lay);
	tinyc_evt_set_edge_tuple(ctx, g, "{}, {0, 0}, {1}");
	cr_assert_eq(tinyc_evt_run_passes(ctx, g), -1);
	cr_assert(has_diag(ctx, "EvtTypeClash", "cannot compute in float"));
	tinyc_evt_free(g);
	tinyc_ctx_clear_diags(ctx);
	/* a bitcast that changes the size */
	g = graph(ctx, TINYC_FLOAT);
	tinyc_evt_acc_fetch(ctx, g);
	tinyc_evt_bitcast(ctx, g, TINYC_FLOAT, TINYC_HALF);
	tinyc_evt_store(ctx, g, "D", 0, TINYC_HALF, &lay);
	tinyc_evt_set_edge_tuple(ctx, g, "{}, {0}, {1}");
	cr_assert_eq(tinyc_evt_run_passes(ctx, g), -1);
	cr_assert(has_diag(ctx, "EvtTypeClash", "changes the size"));
	tinyc_evt_free(g);
	tinyc_ctx_clear_diags(ctx);
	/* verify with types: a store fed the wrong type without the pass */
	g = graph(ctx, TINYC_FLOAT);
	tinyc_evt_acc_fetch(ctx, g);
	tinyc_evt_store(ctx, g, "D", 0, TINYC_HALF, &lay);
	tinyc_evt_set_edge_tuple(ctx, g, "{}, {0}");
	cr_assert_eq(tinyc_evt_verify(ctx, g, 0), 0);
	cr_assert_eq(tinyc_evt_verify(ctx, g, 1), -1);
	cr_assert(has_diag(ctx, "EvtTypeClash", "stores float into half tensor D"));
	tinyc_evt_free(g);
	tinyc_ctx_free(ctx);
}

Test(evt_malformed, layouts_kinds_and_outputs)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_evt *g = graph(ctx, TINYC_FLOAT);
	tinyc_evt_layout lay = rowmajor();
	tinyc_evt_acc_fetch(ctx, g);
	/* a row vector with an m stride */
	tinyc_evt_load(ctx, g, TINYC_EVT_ROW_BCAST, "bias", 0, TINYC_FLOAT, &lay);
	tinyc_evt_compute(ctx, g, TINYC_OP_ADD, TINYC_FLOAT);
	tinyc_evt_set_edge_tuple(ctx, g, "{}, {}, {0, 1}");
	cr_assert_eq(tinyc_evt_verify(ctx, g, 0), -1);
	cr_assert(has_diag(ctx, "EvtMalformed", "a row vector has no m stride"));
	cr_assert(has_diag(ctx, "EvtMalformed", "no output") ||
		  tinyc_ctx_error_count(ctx) == 1);
	tinyc_evt_free(g);
	tinyc_ctx_clear_diags(ctx);
	/* no output at all */
	g = graph(ctx, TINYC_FLOAT);
	tinyc_evt_acc_fetch(ctx, g);
	cr_assert_eq(tinyc_evt_verify(ctx, g, 0), -1);
	cr_assert(has_diag(ctx, "EvtMalformed", "no output"));
	tinyc_ctx_clear_diags(ctx);
	/* an unknown kind, a CAST as a Compute op, a MUL reduction */
	tinyc_evt_node nd;
	memset(&nd, 0, sizeof(nd));
	nd.kind = (tinyc_evt_kind)42;
	nd.dtype = TINYC_FLOAT;
	tinyc_evt_add(ctx, g, &nd);
	nd.kind = TINYC_EVT_COMPUTE;
	nd.fn = TINYC_OP_CAST;
	tinyc_evt_add(ctx, g, &nd);
	tinyc_evt_layout row = lay;
	row.stride[0] = tinyc_evt_poly_const(0);
	int r = tinyc_evt_reduction(ctx, g, TINYC_EVT_ROW_RED, TINYC_RED_MUL, TINYC_FLOAT, "p", 0,
				    TINYC_FLOAT, &row);
	tinyc_evt_set_edges(ctx, g, r, 1, (int[]){0});
	cr_assert_eq(tinyc_evt_verify(ctx, g, 0), -1);
	cr_assert(has_diag(ctx, "EvtMalformed", "unknown kind 42"));
	cr_assert(has_diag(ctx, "EvtMalformed", "is not an elementwise op"));
	cr_assert(has_diag(ctx, "EvtMalformed", "reductions are ADD or MAX"));
	/* builders refuse what they cannot build */
	cr_assert_eq(tinyc_evt_load(ctx, g, TINYC_EVT_COMPUTE, "x", 0, TINYC_FLOAT, &lay), -1);
	cr_assert_eq(tinyc_evt_reduction(ctx, g, TINYC_EVT_AUX_STORE, TINYC_RED_ADD, TINYC_FLOAT, "x", 0,
					 TINYC_FLOAT, &lay), -1);
	cr_assert_eq(tinyc_evt_set_edges(ctx, g, 99, 0, NULL), -1);
	cr_assert_eq(tinyc_evt_set_edges(ctx, g, 0, 4, (int[]){0, 0, 0, 0}), -1);
	cr_assert(has_diag(ctx, "EvtMalformed", "at most 3"));
	cr_assert_eq(tinyc_evt_verify(ctx, NULL, 0), -1);
	tinyc_evt_free(g);
	tinyc_ctx_free(ctx);
}

Test(evt_malformed, edge_tuple_syntax)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	int rc;
	tinyc_evt *g = small(ctx, "{}, {0 1}, {1}", &rc);
	cr_assert_eq(rc, -1);
	cr_assert(has_diag(ctx, "EvtMalformed", "expected ','"));
	tinyc_evt_free(g);
	tinyc_ctx_clear_diags(ctx);
	g = small(ctx, "{}, {0, 1}", &rc);
	cr_assert_eq(rc, -1);
	cr_assert(has_diag(ctx, "EvtMalformed", "2 entries for 3 nodes"));
	tinyc_evt_free(g);
	tinyc_ctx_clear_diags(ctx);
	g = small(ctx, "{}, {0, 1}, {1}, {2}", &rc);
	cr_assert_eq(rc, -1);
	cr_assert(has_diag(ctx, "EvtMalformed", "more entries"));
	tinyc_evt_free(g);
	tinyc_ctx_clear_diags(ctx);
	g = small(ctx, "{}, {0, x}, {1}", &rc);
	cr_assert_eq(rc, -1);
	cr_assert(has_diag(ctx, "EvtMalformed", "expected a child index"));
	tinyc_evt_free(g);
	tinyc_ctx_clear_diags(ctx);
	g = small(ctx, "[], {0, 1}, {1}", &rc);
	cr_assert_eq(rc, -1);
	tinyc_evt_free(g);
	tinyc_ctx_clear_diags(ctx);
	g = small(ctx, "{}, {0, 0, 0, 0}, {1}", &rc);
	cr_assert_eq(rc, -1);
	cr_assert(has_diag(ctx, "EvtMalformed", "more than 3 children"));
	tinyc_evt_free(g);
	tinyc_ctx_free(ctx);
}

/* ------------------------------------------------------------------- passes ---- */

/* Two loads of the same tensor and two equal computes collapse; outputs never merge. */
Test(evt_passes, cse)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_evt *g = graph(ctx, TINYC_FLOAT);
	tinyc_evt_layout lay = rowmajor(), row = lay;
	row.stride[0] = tinyc_evt_poly_const(0);
	tinyc_evt_acc_fetch(ctx, g);						/* 0 */
	tinyc_evt_load(ctx, g, TINYC_EVT_ROW_BCAST, "bias", 3, TINYC_FLOAT, &row);	/* 1 */
	tinyc_evt_load(ctx, g, TINYC_EVT_ROW_BCAST, "bias", 3, TINYC_FLOAT, &row);	/* 2 */
	tinyc_evt_compute(ctx, g, TINYC_OP_ADD, TINYC_FLOAT);			/* 3: acc + bias */
	tinyc_evt_compute(ctx, g, TINYC_OP_ADD, TINYC_FLOAT);			/* 4: acc + bias' */
	tinyc_evt_compute(ctx, g, TINYC_OP_MUL, TINYC_FLOAT);			/* 5: 3 * 4 */
	tinyc_evt_store(ctx, g, "D", 4, TINYC_FLOAT, &lay);			/* 6 */
	tinyc_evt_store(ctx, g, "D", 4, TINYC_FLOAT, &lay);			/* 7: a second store */
	cr_assert_eq(tinyc_evt_set_edge_tuple(ctx, g, "{}, {}, {}, {0, 1}, {0, 2}, {3, 4}, {5}, {5}"), 0);
	cr_assert_eq(tinyc_evt_run_passes(ctx, g), 0);
	cr_assert_eq(g->n, 6);
	cr_assert_eq(count_kind(g, TINYC_EVT_ROW_BCAST), 1);
	cr_assert_eq(count_kind(g, TINYC_EVT_AUX_STORE), 2, "stores are side effects");
	/* the MUL squares one value */
	int mul = -1;
	for (int i = 0; i < g->n; i++)
		if (g->nodes[i].kind == TINYC_EVT_COMPUTE && g->nodes[i].fn == TINYC_OP_MUL)
			mul = i;
	cr_assert(mul >= 0);
	cr_assert_eq(g->nodes[mul].child[0], g->nodes[mul].child[1]);
	cr_assert(strstr(g->log.data, "cse: node 2 (RowBroadcast bias) is node 1"));
	cr_assert(strstr(g->log.data, "cse: node 4 (Compute ADD) is node 3"));
	cr_assert(strstr(g->log.data, "dce: node 2 (RowBroadcast bias) removed"));
	/* a different constant or layout is not the same node */
	tinyc_evt *h = graph(ctx, TINYC_FLOAT);
	tinyc_evt_acc_fetch(ctx, h);
	tinyc_evt_scalar(ctx, h, TINYC_FLOAT, 1.0);
	tinyc_evt_scalar(ctx, h, TINYC_FLOAT, 2.0);
	tinyc_evt_compute(ctx, h, TINYC_OP_WHERE, TINYC_FLOAT);
	tinyc_evt_compute(ctx, h, TINYC_OP_CMPLT, TINYC_FLOAT);
	tinyc_evt_store(ctx, h, "D", 4, TINYC_FLOAT, &lay);
	cr_assert_eq(tinyc_evt_set_edge_tuple(ctx, h, "{}, {}, {}, {4, 1, 2}, {0, 1}, {3}"), 0);
	cr_assert_eq(tinyc_evt_run_passes(ctx, h), 0);
	cr_assert_eq(count_kind(h, TINYC_EVT_SCALAR_BCAST), 2);
	tinyc_evt_free(h);
	tinyc_evt_free(g);
	tinyc_ctx_free(ctx);
}

/* A branch that reaches no output is removed, whatever its position. */
Test(evt_passes, dead_nodes)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_evt *g = graph(ctx, TINYC_FLOAT);
	tinyc_evt_layout lay = rowmajor();
	tinyc_evt_acc_fetch(ctx, g);				/* 0 */
	tinyc_evt_compute(ctx, g, TINYC_OP_EXP2, TINYC_FLOAT);	/* 1: dead */
	tinyc_evt_compute(ctx, g, TINYC_OP_MUL, TINYC_FLOAT);	/* 2: dead */
	tinyc_evt_compute(ctx, g, TINYC_OP_RELU, TINYC_FLOAT);	/* 3 */
	tinyc_evt_store(ctx, g, "D", 0, TINYC_FLOAT, &lay);	/* 4 */
	tinyc_evt_set_edge_tuple(ctx, g, "{}, {0}, {1, 1}, {0}, {3}");
	cr_assert_eq(tinyc_evt_run_passes(ctx, g), 0);
	cr_assert_eq(g->n, 3);
	for (int i = 0; i < g->n; i++)
		cr_assert(g->nodes[i].fn != TINYC_OP_EXP2 && g->nodes[i].fn != TINYC_OP_MUL);
	cr_assert(strstr(g->log.data, "dce: node 1 (Compute EXP2) removed: reaches no output"));
	cr_assert(strstr(g->log.data, "dce: node 2 (Compute MUL) removed"));
	char *d = dump(g);
	cr_assert(strstr(d, "edges: tuple<seq<>, seq<0>, seq<1>>"), "%s", d);
	free(d);
	tinyc_evt_free(g);
	tinyc_ctx_free(ctx);
}

/* Nodes given parents first come out children first, stably, deterministically. */
Test(evt_passes, stable_topological_order)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_evt *g = graph(ctx, TINYC_FLOAT);
	tinyc_evt_layout lay = rowmajor(), col = lay;
	col.stride[1] = tinyc_evt_poly_const(0);
	tinyc_evt_store(ctx, g, "D", 0, TINYC_FLOAT, &lay);		/* 0 */
	tinyc_evt_compute(ctx, g, TINYC_OP_ADD, TINYC_FLOAT);		/* 1 */
	tinyc_evt_load(ctx, g, TINYC_EVT_COL_BCAST, "rb", 1, TINYC_FLOAT, &col);	/* 2 */
	tinyc_evt_acc_fetch(ctx, g);					/* 3 */
	tinyc_evt_set_edge_tuple(ctx, g, "{1}, {3, 2}, {}, {}");
	tinyc_evt *h = tinyc_evt_copy(ctx, g);
	cr_assert_eq(tinyc_evt_run_passes(ctx, g), 0);
	char *d = dump(g);
	cr_assert_str_eq(d,
			 "evt: acc float, 4 nodes, roots 3\n"
			 "  0: ColBroadcast rb:float strides (N, 0, M*N) : float  seq<>\n"
			 "  1: AccFetch : float  seq<>\n"
			 "  2: Compute ADD(float) : float  seq<1, 0>\n"
			 "  3: AuxStore D:float strides (N, 1, M*N) : float  seq<2>\n"
			 "  edges: tuple<seq<>, seq<>, seq<1, 0>, seq<2>>\n"
			 "  visit: 1 0 2 3\n");
	/* the same input gives the same bytes; sorting again changes nothing */
	cr_assert_eq(tinyc_evt_run_passes(ctx, h), 0);
	char *e = dump(h);
	cr_assert_str_eq(d, e);
	size_t len = g->log.len;
	cr_assert_eq(tinyc_evt_pass_sort(ctx, g), 0);
	cr_assert_eq(g->log.len, len);
	free(d), free(e);
	tinyc_evt_free(g);
	tinyc_evt_free(h);
	tinyc_ctx_free(ctx);
}

/* Several outputs; the visit order computes a shared node once, before both users. */
Test(evt_passes, visit_order_several_roots)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_evt *g = graph(ctx, TINYC_FLOAT);
	tinyc_evt_layout lay = rowmajor(), sc = lay;
	sc.stride[0] = sc.stride[1] = tinyc_evt_poly_const(0);
	tinyc_evt_acc_fetch(ctx, g);					/* 0 */
	tinyc_evt_compute(ctx, g, TINYC_OP_RELU, TINYC_FLOAT);		/* 1 */
	tinyc_evt_store(ctx, g, "Z", 0, TINYC_FLOAT, &lay);		/* 2 */
	tinyc_evt_reduction(ctx, g, TINYC_EVT_SCALAR_RED, TINYC_RED_MAX, TINYC_FLOAT, "mx", 1,
			    TINYC_FLOAT, &sc);				/* 3 */
	tinyc_evt_set_edge_tuple(ctx, g, "{}, {0}, {1}, {1}");
	cr_assert_eq(tinyc_evt_run_passes(ctx, g), 0);
	int order[8];
	int n = tinyc_evt_visit_order(g, order);
	cr_assert_eq(n, 4);
	cr_assert(order[0] == 0 && order[1] == 1 && order[2] == 2 && order[3] == 3);
	char *d = dump(g);
	cr_assert(strstr(d, "roots 2 3\n"), "%s", d);
	cr_assert(strstr(d, "3: ScalarReduction MAX(float) mx:float strides (0, 0, M*N) : float  seq<1>"), "%s", d);
	free(d);
	tinyc_evt_free(g);
	tinyc_ctx_free(ctx);
}

/* ---------------------------------------------------------------- extraction ---- */

/* The evt stage of a graph text (the pipeline up to "evt"); NULL on failure. */
static tinyc_module *run_evt(tinyc_ctx *ctx, const char *name, const char *text, const char *bind,
			     tinyc_source **srcp)
{
	tinyc_source *src = tinyc_source_from_string(name, text, strlen(text));
	*srcp = src;
	tinyc_options opt = {0};
	opt.bind = bind;
	tinyc_module *m = tinyc_module_alloc(ctx, src, &opt);
	int last = tinyc_pass_find("evt");
	cr_assert(last >= 0);
	if (tinyc_module_run_until(m, last, 0, NULL) < 0) {
		tinyc_ctx_print_diags(ctx, stderr);
		cr_assert_fail("pipeline failed on %s", name);
	}
	return m;
}

/* The evt stage of a file of tests/gpu/epilogue. */
static tinyc_module *run_evt_file(tinyc_ctx *ctx, const char *file, tinyc_source **src)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/gpu/epilogue/%s", TINYC_SOURCE_DIR, file);
	*src = tinyc_source_read(ctx, path);
	cr_assert(*src, "cannot read %s", path);
	tinyc_module *m = tinyc_module_alloc(ctx, *src, NULL);
	if (tinyc_module_run_until(m, tinyc_pass_find("evt"), 0, NULL) < 0) {
		tinyc_ctx_print_diags(ctx, stderr);
		cr_assert_fail("pipeline failed on %s", file);
	}
	return m;
}

/* The only graph of a module's evt stage. */
static const tinyc_evt *only_graph(tinyc_module *m)
{
	tinyc_evt_set *s = tinyc_module_evt(m);
	cr_assert(s && s->n == 1, "expected one contraction");
	cr_assert(s->e[0].g, "no graph: %s", s->e[0].why_none ? s->e[0].why_none : "?");
	return s->e[0].g;
}

/* The node of UOp id `id`, or -1. */
static int node_of(tinyc_module *m, const tinyc_evt *g, const char *id)
{
	int u = tinyc_graph_find(m->uop, id);
	for (int i = 0; i < g->n; i++)
		if (g->nodes[i].uop == u)
			return i;
	return -1;
}

Test(evt_extract, bias_relu_kinds_and_dump)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_source *src;
	tinyc_module *m = run_evt_file(ctx, "bias_relu.uop", &src);
	const tinyc_evt *g = only_graph(m);
	static const tinyc_evt_kind want[] = {TINYC_EVT_ACC_FETCH, TINYC_EVT_ROW_BCAST, TINYC_EVT_CAST,
					      TINYC_EVT_COMPUTE, TINYC_EVT_COMPUTE, TINYC_EVT_CAST,
					      TINYC_EVT_AUX_STORE};
	cr_assert_eq(g->n, 7);
	for (int i = 0; i < 7; i++)
		cr_assert_eq(g->nodes[i].kind, want[i], "node %d", i);
	cr_assert_eq(g->nodes[3].fn, TINYC_OP_ADD);
	cr_assert_eq(g->nodes[4].fn, TINYC_OP_RELU);
	cr_assert_eq(g->nodes[6].t.dtype, TINYC_HALF);
	tinyc_buf b = {0};
	tinyc_evt_set_print(m->evt, &b);
	cr_assert(strstr(b.data, "  6: AuxStore Y:half strides (N, 1, 0) : half  seq<5>  = %y\n"), "%s",
		  b.data);
	cr_assert(strstr(b.data, "  1: RowBroadcast bias:half strides (0, 1, 0) : half  seq<>  = %b\n"));
	cr_assert(strstr(b.data, "  edges: tuple<seq<>, seq<>, seq<1>, seq<0, 2>, seq<3>, seq<4>, seq<5>>\n"));
	cr_assert(strstr(b.data, "  region: %7 %bf %s %r %h %y\n"));
	tinyc_buf_free(&b);
	tinyc_module_free(m);
	tinyc_source_free(src);
	tinyc_ctx_free(ctx);
}

/* Leaf classification by strides: row, column, scalar (tensor and constant), full tensors. */
Test(evt_extract, leaf_classification)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_source *src;
	tinyc_module *m = run_evt_file(ctx, "col_bias.uop", &src);
	const tinyc_evt *g = only_graph(m);
	int rb = node_of(m, g, "rb");
	cr_assert(rb >= 0 && g->nodes[rb].kind == TINYC_EVT_COL_BCAST);
	cr_assert(tinyc_evt_poly_is_const(&g->nodes[rb].t.lay.stride[0], 1));
	tinyc_module_free(m);
	tinyc_source_free(src);

	m = run_evt_file(ctx, "scalar_tensor.uop", &src);
	g = only_graph(m);
	int sc = node_of(m, g, "sc"), q = node_of(m, g, "q");
	cr_assert(sc >= 0 && g->nodes[sc].kind == TINYC_EVT_SCALAR_BCAST && g->nodes[sc].has_tensor);
	cr_assert(q >= 0 && g->nodes[q].kind == TINYC_EVT_SCALAR_BCAST && !g->nodes[q].has_tensor);
	cr_assert_float_eq(g->nodes[q].fval, 0.25, 0);
	tinyc_module_free(m);
	tinyc_source_free(src);

	m = run_evt_file(ctx, "beta_c_alpha_aux.uop", &src);
	g = only_graph(m);
	cr_assert_eq(g->nodes[node_of(m, g, "c")].kind, TINYC_EVT_SRC_FETCH);
	cr_assert_eq(g->nodes[node_of(m, g, "aux")].kind, TINYC_EVT_AUX_LOAD);
	tinyc_module_free(m);
	tinyc_source_free(src);
	tinyc_ctx_free(ctx);
}

/* Several outputs, a value used twice, a tensor used twice, a dead branch. */
Test(evt_extract, outputs_sharing_and_dead_branches)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_source *src;
	tinyc_module *m = run_evt_file(ctx, "pre_and_act.uop", &src);
	const tinyc_evt *g = only_graph(m);
	cr_assert_eq(count_kind(g, TINYC_EVT_AUX_STORE), 2);
	int z = node_of(m, g, "z");
	int users = 0;
	for (int i = 0; i < g->n; i++)
		for (int k = 0; k < g->nodes[i].nchild; k++)
			users += g->nodes[i].child[k] == z;
	cr_assert_eq(users, 2, "Z feeds its store and the RELU");
	tinyc_module_free(m);
	tinyc_source_free(src);

	m = run_evt_file(ctx, "relu_twice.uop", &src);
	g = only_graph(m);
	int d = node_of(m, g, "d"), zz = node_of(m, g, "z");
	cr_assert(d >= 0 && zz >= 0);
	cr_assert(g->nodes[d].child[0] == zz && g->nodes[d].child[1] == zz);
	cr_assert_eq(count_kind(g, TINYC_EVT_COMPUTE), 2);
	tinyc_module_free(m);
	tinyc_source_free(src);

	m = run_evt_file(ctx, "aux_twice.uop", &src);
	g = only_graph(m);
	cr_assert_eq(count_kind(g, TINYC_EVT_AUX_LOAD) + count_kind(g, TINYC_EVT_SRC_FETCH), 2,
		     "C and aux, aux loaded once");
	tinyc_module_free(m);
	tinyc_source_free(src);

	m = run_evt_file(ctx, "dead_branch.uop", &src);
	g = only_graph(m);
	cr_assert_eq(g->n, 4);
	cr_assert_eq(node_of(m, g, "e"), -1);
	cr_assert_eq(node_of(m, g, "e2"), -1);
	tinyc_module_free(m);
	tinyc_source_free(src);
	tinyc_ctx_free(ctx);
}

Test(evt_extract, reductions_and_batch)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_source *src;
	tinyc_module *m = run_evt_file(ctx, "reductions.uop", &src);
	const tinyc_evt *g = only_graph(m);
	int rs = node_of(m, g, "rs"), cm = node_of(m, g, "cm"), sm = node_of(m, g, "sm");
	cr_assert(rs >= 0 && cm >= 0 && sm >= 0);
	cr_assert_eq(g->nodes[rs].kind, TINYC_EVT_ROW_RED);
	cr_assert_eq(g->nodes[rs].redop, TINYC_RED_ADD);
	cr_assert_eq(g->nodes[cm].kind, TINYC_EVT_COL_RED);
	cr_assert_eq(g->nodes[cm].redop, TINYC_RED_MAX);
	cr_assert_eq(g->nodes[sm].kind, TINYC_EVT_SCALAR_RED);
	cr_assert_str_eq(g->nodes[rs].t.name, "rowsum");
	cr_assert(tinyc_evt_poly_is_const(&g->nodes[rs].t.lay.stride[1], 1));
	cr_assert(tinyc_evt_poly_is_const(&g->nodes[cm].t.lay.stride[0], 1));
	cr_assert_eq(tinyc_module_evt(m)->e[0].nnote, 0);
	tinyc_module_free(m);
	tinyc_source_free(src);

	m = run_evt_file(ctx, "batched.uop", &src);
	g = only_graph(m);
	cr_assert(g->batched);
	int y = node_of(m, g, "y");
	tinyc_buf b = {0};
	tinyc_evt_poly_print(&g->nodes[y].t.lay.stride[2], g->syms, g->nsym, &b);
	cr_assert_str_eq(b.data, "M*N");
	tinyc_buf_free(&b);
	tinyc_module_free(m);
	tinyc_source_free(src);
	tinyc_ctx_free(ctx);
}

static const char *const mm_prefix =
	"%0 = BUFFER(slot=0, name=\"X\") : half[M,K]\n"
	"%1 = BUFFER(slot=1, name=\"W\") : half[K,N]\n"
	"%2 = RESHAPE(%0, shape=[M,1,K]) : half[M,1,K]\n"
	"%3 = RESHAPE(%1, shape=[1,K,N]) : half[1,K,N]\n"
	"%4 = PERMUTE(%3, perm=[0,2,1]) : half[1,N,K]\n"
	"%5 = MUL(%2, %4) : half[M,N,K]\n"
	"%6 = CAST(%5) : float[M,N,K]\n"
	"%7 = REDUCE(%6, op=ADD, axes=[2]) : float[M,N,1]\n"
	"%acc = RESHAPE(%7, shape=[M,N]) : float[M,N]\n";

/* What cannot run in an epilogue stays a separate kernel, and the dump says why. */
Test(evt_extract, consumers_left_out)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_source *src;
	char text[4096];
	/* the row max broadcast back over the row (softmax-like): needs the completed reduction */
	snprintf(text, sizeof(text), "%s%s", mm_prefix,
		 "%mx = REDUCE(%acc, op=MAX, axes=[1]) : float[M,1]\n"
		 "%d = SUB(%acc, %mx) : float[M,N]\n"
		 "%y = OUTPUT(%d, name=\"Y\") : float[M,N]\n"
		 "%z = OUTPUT(%acc, name=\"Z\") : float[M,N]\n");
	tinyc_module *m = run_evt(ctx, "softmaxish.uop", text, NULL, &src);
	tinyc_evt_set *s = tinyc_module_evt(m);
	const tinyc_evt *g = only_graph(m);
	cr_assert_eq(count_kind(g, TINYC_EVT_AUX_STORE), 2, "Z and the accumulator for the rest");
	tinyc_buf b = {0};
	tinyc_evt_set_print(s, &b);
	cr_assert(strstr(b.data, "separate kernel: %d: needs the completed reduction %mx"), "%s", b.data);
	cr_assert(strstr(b.data, "separate kernel: %y: depends on a value left to a separate kernel"),
		  "%s", b.data);
	cr_assert(strstr(b.data, "stores the accumulator to T7"), "%s", b.data);
	tinyc_buf_free(&b);
	tinyc_module_free(m);
	tinyc_source_free(src);
	/* a transpose of the accumulator is a store with swapped strides, not a problem */
	snprintf(text, sizeof(text), "%s%s", mm_prefix,
		 "%t = PERMUTE(%acc, perm=[1,0]) : float[N,M]\n"
		 "%y = OUTPUT(%t, name=\"YT\") : float[N,M]\n");
	m = run_evt(ctx, "transposed.uop", text, NULL, &src);
	g = only_graph(m);
	int st = g->n - 1;
	cr_assert_eq(g->nodes[st].kind, TINYC_EVT_AUX_STORE);
	cr_assert(tinyc_evt_poly_is_const(&g->nodes[st].t.lay.stride[0], 1));
	cr_assert(tinyc_evt_poly_equal(&g->nodes[st].t.lay.stride[1],
				       &(tinyc_evt_poly){1, {{1, 1, {0}}}}), "n stride M");
	tinyc_module_free(m);
	tinyc_source_free(src);
	/* an accumulator broadcast to a wider tensor cannot be stored element by element */
	snprintf(text, sizeof(text), "%s%s", mm_prefix,
		 "%r = RESHAPE(%acc, shape=[M,N,1]) : float[M,N,1]\n"
		 "%e = EXPAND(%r, shape=[M,N,2]) : float[M,N,2]\n"
		 "%y = OUTPUT(%e, name=\"Y\") : float[M,N,2]\n");
	m = run_evt(ctx, "broadcast.uop", text, NULL, &src);
	s = tinyc_module_evt(m);
	cr_assert_eq(s->n, 1);
	g = only_graph(m);
	cr_assert_eq(g->n, 2, "the kernel only stores the accumulator for the consumer");
	cr_assert_eq(g->nodes[1].kind, TINYC_EVT_AUX_STORE);
	cr_assert_str_eq(g->nodes[1].t.name, "T7");
	b = (tinyc_buf){0};
	tinyc_evt_set_print(s, &b);
	cr_assert(strstr(b.data, "separate kernel: %y: %y reads one element at several points (a "
			 "broadcast of the accumulator)"), "%s", b.data);
	tinyc_buf_free(&b);
	tinyc_module_free(m);
	tinyc_source_free(src);
	/* a tinygrad-style relu WHERE(CMPLT(0,x), x, 0) and a half cast before the bias */
	snprintf(text, sizeof(text), "%s%s", mm_prefix,
		 "%h = CAST(%acc) : half[M,N]\n"
		 "%b = BUFFER(slot=2, name=\"bias\") : half[N]\n"
		 "%s = ADD(%h, %b) : half[M,N]\n"
		 "%zero = CONST(0) : half[]\n"
		 "%c = CMPLT(%zero, %s) : bool[M,N]\n"
		 "%r = WHERE(%c, %s, %zero) : half[M,N]\n"
		 "%y = OUTPUT(%r, name=\"Y\") : half[M,N]\n");
	m = run_evt(ctx, "tinygrad.uop", text, NULL, &src);
	g = only_graph(m);
	cr_assert_eq(count_kind(g, TINYC_EVT_SCALAR_BCAST), 1, "one zero constant");
	int w = node_of(m, g, "r");
	cr_assert(w >= 0 && g->nodes[w].fn == TINYC_OP_WHERE && g->nodes[w].compute == TINYC_HALF);
	tinyc_module_free(m);
	tinyc_source_free(src);
	tinyc_ctx_free(ctx);
}

/* A REDUCE that rounds the accumulator to half gets a Cast right after the AccFetch. */
Test(evt_extract, half_reduce_result)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	const char *text =
		"%0 = BUFFER(slot=0, name=\"X\") : half[M,K]\n"
		"%1 = BUFFER(slot=1, name=\"W\") : half[K,N]\n"
		"%2 = RESHAPE(%0, shape=[M,1,K]) : half[M,1,K]\n"
		"%3 = RESHAPE(%1, shape=[1,K,N]) : half[1,K,N]\n"
		"%4 = PERMUTE(%3, perm=[0,2,1]) : half[1,N,K]\n"
		"%5 = MUL(%2, %4) : half[M,N,K]\n"
		"%7 = REDUCE(%5, op=ADD, axes=[2], keepdim=false, acc=float) : half[M,N]\n"
		"%y = OUTPUT(%7, name=\"Y\") : half[M,N]\n";
	tinyc_source *src;
	tinyc_module *m = run_evt(ctx, "halfred.uop", text, NULL, &src);
	const tinyc_evt *g = only_graph(m);
	cr_assert_eq(g->n, 3);
	cr_assert_eq(g->nodes[0].kind, TINYC_EVT_ACC_FETCH);
	cr_assert_eq(g->nodes[0].dtype, TINYC_FLOAT);
	cr_assert_eq(g->nodes[1].kind, TINYC_EVT_CAST);
	cr_assert_eq(g->nodes[1].dtype, TINYC_HALF);
	tinyc_module_free(m);
	tinyc_source_free(src);
	tinyc_ctx_free(ctx);
}
