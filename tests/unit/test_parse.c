/* Unit tests of the tinyc-uop v0 front end (ir/parse.c, ir/print.c, ir/uop.c): the graph
 * the parser builds, the canonical text and Graphviz printers, round trips, every syntax
 * diagnostic with its exact line:col (counted by hand from the sources below), bindings,
 * and robustness on hostile input (garbage, NUL bytes, huge lines, deep nesting, random
 * mutations of a valid file). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/uop.h"

#include "test_graphs.h"

/* DESIGN.md §2's example, as written there (aligned '=', comments). */
static const char *design = TEST_MATMUL_BIAS_RELU;

/* The same graph in canonical form, written by hand. */
static const char *design_canonical =
	"# tinyc-uop v0\n"
	"%0 = BUFFER(slot=0, name=\"X\") : half[M,K]\n"
	"%1 = BUFFER(slot=1, name=\"W\") : half[K,N]\n"
	"%2 = BUFFER(slot=2, name=\"bias\") : half[N]\n"
	"%3 = RESHAPE(%0, shape=[M,1,K]) : half[M,1,K]\n"
	"%4 = RESHAPE(%1, shape=[1,K,N]) : half[1,K,N]\n"
	"%5 = PERMUTE(%4, perm=[0,2,1]) : half[1,N,K]\n"
	"%6 = MUL(%3, %5) : half[M,N,K]\n"
	"%7 = CAST(%6) : float[M,N,K]\n"
	"%8 = REDUCE(%7, op=ADD, axes=[2]) : float[M,N,1]\n"
	"%9 = RESHAPE(%8, shape=[M,N]) : float[M,N]\n"
	"%10 = CAST(%2) : float[N]\n"
	"%11 = ADD(%9, %10) : float[M,N]\n"
	"%12 = RELU(%11) : float[M,N]\n"
	"%13 = CAST(%12) : half[M,N]\n"
	"%14 = OUTPUT(%13, name=\"Y\") : half[M,N]\n";

/* A parse with everything it needs kept together. */
typedef struct parsed {
	tinyc_ctx *ctx;
	tinyc_source *src;
	tinyc_graph *g;		/* NULL when the parse failed */
} parsed;

static parsed parse_n(const char *text, size_t len)
{
	parsed p;
	p.ctx = tinyc_ctx_alloc();
	p.src = tinyc_source_from_string("t.uop", text, len);
	cr_assert(p.ctx && p.src);
	p.g = tinyc_parse(p.ctx, p.src);
	return p;
}

static parsed parse(const char *text)
{
	return parse_n(text, strlen(text));
}

static void done(parsed *p)
{
	tinyc_graph_free(p->g);
	tinyc_source_free(p->src);
	tinyc_ctx_free(p->ctx);
}

/* Parse text that must parse. */
static parsed parse_ok(const char *text)
{
	parsed p = parse(text);
	if (!p.g)
		tinyc_ctx_print_diags(p.ctx, stderr);
	cr_assert(p.g, "must parse: %s", text);
	cr_assert_eq(tinyc_ctx_diag_count(p.ctx), 0);
	return p;
}

/* The canonical text of g, as a new string. */
static char *print_str(const tinyc_graph *g)
{
	tinyc_buf b = {0};
	tinyc_print(g, &b);
	cr_assert(!b.oom && b.data);
	return b.data;
}

/* print(parse(text)) must be `want`, and print∘parse must be idempotent and preserve g. */
static void check_canonical(const char *text, const char *want)
{
	parsed p = parse_ok(text);
	char *once = print_str(p.g);
	if (want)
		cr_expect_str_eq(once, want);
	parsed q = parse_ok(once);
	cr_expect(tinyc_graph_equal(p.g, q.g), "parse(print(g)) differs from g:\n%s", once);
	char *twice = print_str(q.g);
	cr_expect_str_eq(twice, once);
	free(once);
	free(twice);
	done(&q);
	done(&p);
}

/* The expectation for a diagnostic. */
typedef struct want {
	const char *kind;
	int line, col;
} want;

/* Parse text that must fail; the first diagnostic must be w. */
static void expect_error_n(const char *text, size_t len, want w)
{
	parsed p = parse_n(text, len);
	cr_expect_null(p.g, "must not parse: %s", text);
	cr_assert_geq(tinyc_ctx_error_count(p.ctx), 1, "no error for: %s", text);
	const tinyc_diag *d = tinyc_ctx_diag(p.ctx, 0);
	if (strcmp(d->kind, w.kind) || d->loc.line != w.line || d->loc.col != w.col)
		tinyc_ctx_print_diags(p.ctx, stderr);
	cr_expect_str_eq(d->kind, w.kind, "for: %s", text);
	cr_expect_eq(d->loc.line, w.line, "line of %s in: %s", w.kind, text);
	cr_expect_eq(d->loc.col, w.col, "col of %s in: %s", w.kind, text);
	cr_expect_str_eq(d->file, "t.uop");
	done(&p);
}

static void expect_error(const char *text, want w)
{
	expect_error_n(text, strlen(text), w);
}

/* ------------------------------------------------------------------ the graph built */

Test(parse, design_example_graph)
{
	parsed p = parse_ok(design);
	tinyc_graph *g = p.g;
	cr_assert_eq(g->n, 15);
	cr_assert_eq(g->nsym, 3);
	cr_expect_str_eq(g->syms[0], "M");	/* order of first appearance */
	cr_expect_str_eq(g->syms[1], "K");
	cr_expect_str_eq(g->syms[2], "N");
	cr_expect_eq(g->src, p.src);

	tinyc_uop *x = &g->nodes[0];
	cr_expect_eq(x->op, TINYC_OP_BUFFER);
	cr_expect_eq(x->dtype, TINYC_HALF);
	cr_expect_str_eq(x->id, "0");
	cr_expect_str_eq(x->name, "X");
	cr_expect_eq(x->slot, 0);
	cr_expect_null(x->strides);
	cr_expect_eq(x->rank, 2);
	cr_expect(x->shape[0].sym == 0 && x->shape[1].sym == 1);
	cr_expect_eq(x->nsrc, 0);
	cr_expect(x->loc.line == 3 && x->loc.col == 1);
	cr_expect(x->op_loc.line == 3 && x->op_loc.col == 7);
	cr_expect(x->attr_loc.line == 3 && x->attr_loc.col == 14);	/* slot= */
	cr_expect(x->attr_locs[TINYC_ATTR_NAME].col == 27);	/* "X" */
	cr_expect(x->type_loc.col == 34 && x->shape_loc.col == 38);
	cr_expect_eq(g->nodes[2].slot, 2);

	tinyc_uop *r = &g->nodes[3];
	cr_expect_eq(r->op, TINYC_OP_RESHAPE);
	cr_expect_eq(r->nsrc, 1);
	cr_expect_eq(r->src[0], 0);
	cr_expect(r->src_loc[0].line == 6 && r->src_loc[0].col == 15);
	cr_assert_eq(r->nattr_shape, 3);
	cr_expect(r->attr_shape[0].sym == 0 && r->attr_shape[1].sym == -1 &&
		  r->attr_shape[1].val == 1 && r->attr_shape[2].sym == 1);

	tinyc_uop *pm = &g->nodes[5];
	cr_assert_eq(pm->naxes, 3);
	cr_expect(pm->axes[0] == 0 && pm->axes[1] == 2 && pm->axes[2] == 1);

	tinyc_uop *m = &g->nodes[6];
	cr_expect_eq(m->op, TINYC_OP_MUL);
	cr_expect(m->nsrc == 2 && m->src[0] == 3 && m->src[1] == 5);
	cr_expect(m->src_loc[0].col == 11 && m->src_loc[1].col == 15);

	tinyc_uop *red = &g->nodes[8];
	cr_expect_eq(red->op, TINYC_OP_REDUCE);
	cr_expect_eq(red->redop, TINYC_RED_ADD);
	cr_assert_eq(red->naxes, 1);
	cr_expect_eq(red->axes[0], 2);
	cr_expect_eq(red->keepdim, 1);
	cr_expect_eq(red->acc, TINYC_DTYPE_NONE);
	cr_expect(red->rank == 3 && red->shape[2].sym == -1 && red->shape[2].val == 1);

	cr_expect(g->nodes[11].src[0] == 9 && g->nodes[11].src[1] == 10);
	tinyc_uop *o = &g->nodes[14];
	cr_expect_eq(o->op, TINYC_OP_OUTPUT);
	cr_expect_str_eq(o->name, "Y");
	cr_expect_eq(o->src[0], 13);
	cr_expect_eq(tinyc_graph_find(g, "14"), 14);
	cr_expect_eq(tinyc_graph_find(g, "15"), -1);
	done(&p);
}

Test(parse, attributes_of_every_op)
{
	parsed p = parse_ok(
		"%a = VIEW(slot=3, name=\"A\", strides=[S,1,0]) : f32[2,3,S]\n"
		"%b = EXPAND(%a, shape=[4,3,S]) : float[4,3,S]\n"
		"%c = PAD(%b, pads=[[1,2],[0,0],[3,4]]) : float[7,3,S]\n"
		"%d = SHRINK(%c, bounds=[[0,1],[1,3],[0,2]]) : float[1,2,S]\n"
		"%e = FLIP(%d, axes=[-1,0]) : float[1,2,S]\n"
		"%f = REDUCE(%e, op=MAX, axes=[-1], keepdim=false, acc=f64) : float[1,2]\n"
		"%g = REDUCE(%f, op=MUL, axes=[0], keepdim=true) : float[1,2]\n"
		"%h = CONST(-2e-3) : float[]\n"
		"%i = CONST(-9223372036854775808) : long[]\n"
		"%j = CONST(true) : bool[]\n"
		"%k = CONST(-inf) : float[]\n"
		"%l = CONST(nan) : float[]\n"
		"%m = CONST(inf) : float[]\n"
		"%n = WHERE(%j, %h, %k) : float[]\n"
		"%o = OUTPUT(%g, name=\"o\", strides=[2,1]) : float[1,2]\n");
	tinyc_graph *g = p.g;
	cr_assert_eq(g->n, 15);
	tinyc_uop *a = &g->nodes[0];
	cr_expect_eq(a->op, TINYC_OP_BUFFER);	/* VIEW is BUFFER */
	cr_expect_eq(a->dtype, TINYC_FLOAT);	/* f32 is float */
	cr_expect_eq(a->slot, 3);
	cr_assert_not_null(a->strides);
	cr_expect(a->strides[0].sym == 0 && a->strides[1].val == 1 && a->strides[1].sym < 0 &&
		  a->strides[2].val == 0 && a->strides[2].sym < 0);
	cr_expect_eq(g->nsym, 1);
	cr_expect_eq(a->attr_locs[TINYC_ATTR_STRIDES].col, 37);
	cr_expect_eq(g->nodes[1].nattr_shape, 3);
	tinyc_uop *c = &g->nodes[2];
	cr_assert_eq(c->npairs, 3);
	cr_expect(c->pairs[0][0] == 1 && c->pairs[0][1] == 2 && c->pairs[2][0] == 3 &&
		  c->pairs[2][1] == 4);
	tinyc_uop *d = &g->nodes[3];
	cr_assert_eq(d->npairs, 3);
	cr_expect(d->pairs[1][0] == 1 && d->pairs[1][1] == 3);
	tinyc_uop *e = &g->nodes[4];
	cr_assert_eq(e->naxes, 2);
	cr_expect(e->axes[0] == -1 && e->axes[1] == 0);
	tinyc_uop *f = &g->nodes[5];
	cr_expect(f->redop == TINYC_RED_MAX && f->keepdim == 0 && f->acc == TINYC_DOUBLE);
	cr_expect(g->nodes[6].redop == TINYC_RED_MUL && g->nodes[6].keepdim == 1);
	cr_expect(g->nodes[7].lit.kind == TINYC_LIT_FLOAT && g->nodes[7].lit.f == -2e-3);
	cr_expect_str_eq(g->nodes[7].lit.text, "-2e-3");
	cr_expect(g->nodes[7].attr_loc.col == 12);
	cr_expect(g->nodes[8].lit.kind == TINYC_LIT_INT && g->nodes[8].lit.i == INT64_MIN);
	cr_expect(g->nodes[9].lit.kind == TINYC_LIT_BOOL && g->nodes[9].lit.i == 1);
	cr_expect(isinf(g->nodes[10].lit.f) && g->nodes[10].lit.f < 0);
	cr_expect(isnan(g->nodes[11].lit.f));
	cr_expect(isinf(g->nodes[12].lit.f) && g->nodes[12].lit.f > 0);
	cr_expect_eq(g->nodes[12].rank, 0);
	tinyc_uop *n = &g->nodes[13];
	cr_expect(n->nsrc == 3 && n->src[0] == 9 && n->src[1] == 7 && n->src[2] == 10);
	tinyc_uop *o = &g->nodes[14];
	cr_assert_not_null(o->strides);
	cr_expect(o->strides[0].val == 2 && o->strides[1].val == 1);
	done(&p);
}

Test(parse, whitespace_comments_crlf)
{
	const char *lf = "%0 = BUFFER(slot=0, name=\"a\") : float[N]\n"
			 "%1 = OUTPUT(%0, name=\"b\") : float[N]\n";
	const char *odd = "\n  # a comment line\n\n"
			  "\t%0=BUFFER ( slot = 0 ,name=\"a\" ) :float [ N ]   # trailing comment\r\n"
			  "%1 =OUTPUT(%0,name = \"b\"):float[N]#\r\n"
			  "   \r\n";
	parsed a = parse_ok(lf), b = parse_ok(odd);
	cr_expect(tinyc_graph_equal(a.g, b.g));
	cr_expect_eq(b.g->nodes[0].loc.line, 4);
	cr_expect_eq(b.g->nodes[0].loc.col, 2);	/* after the tab */
	done(&a);
	done(&b);
	/* a file without a final newline, and one with a UTF-8 byte order mark */
	parsed c = parse_ok("%0 = CONST(1) : int[]\n%1 = OUTPUT(%0, name=\"o\") : int[]");
	cr_expect_eq(c.g->n, 2);
	done(&c);
	parsed d = parse_ok("\xEF\xBB\xBF%0 = CONST(1) : int[]\n%1 = OUTPUT(%0, name=\"o\") : int[]\n");
	cr_expect_eq(d.g->n, 2);
	done(&d);
	/* '#' inside a string is not a comment */
	parsed e = parse_ok("%0 = CONST(1) : int[] # c\n%1 = OUTPUT(%0, name=\"a#b\") : int[] # \"x\n");
	cr_expect_str_eq(e.g->nodes[1].name, "a#b");
	done(&e);
}

Test(parse, symbols_shared_and_named_ids)
{
	parsed p = parse_ok("%in = BUFFER(slot=0, name=\"x\") : int[seq_len, B2]\n"
			    "%r = RESHAPE(%in, shape=[B2, seq_len]) : int[B2,seq_len]\n"
			    "%out_1 = OUTPUT(%r, name=\"y\") : int[B2,seq_len]\n");
	cr_assert_eq(p.g->nsym, 2);
	cr_expect_str_eq(p.g->syms[0], "seq_len");
	cr_expect_str_eq(p.g->syms[1], "B2");
	cr_expect_eq(p.g->nodes[1].attr_shape[0].sym, 1);
	cr_expect_eq(p.g->nodes[2].src[0], 1);
	cr_expect_str_eq(p.g->nodes[2].id, "out_1");
	cr_expect_eq(tinyc_graph_find(p.g, "in"), 0);
	done(&p);
}

/* ---------------------------------------------------------------- printing */

Test(print, design_example_canonical)
{
	check_canonical(design, design_canonical);
}

Test(print, canonical_form)
{
	const char *in =
		"# comment\n"
		"   %x =   VIEW( name = \"in\\\"q\\\\\" , slot=0 ,strides=[S, 1] )   :   f16 [ 4 , S ]  # c\n"
		"%c=CONST(-2e-3):f32[]\n"
		"%k = CONST(007) : i64[]\n"
		"%t = CONST(false) : bool[]\n"
		"%1 = CAST(%x) : f32[4,S]\n"
		"%r = REDUCE(%1, axes=[-1], op=MAX, keepdim=true) : float[4,1]\n"
		"%r2 = REDUCE(%1, acc=f64, keepdim=false, axes=[1], op=ADD) : float[4]\n"
		"%p = PAD(%r2, pads=[[0, 1]]) : float[5]\n"
		"%o = OUTPUT(%p, strides=[1], name=\"y\") : float[5]\n";
	const char *want =
		"# tinyc-uop v0\n"
		"%x = BUFFER(slot=0, name=\"in\\\"q\\\\\", strides=[S,1]) : half[4,S]\n"
		"%c = CONST(-2e-3) : float[]\n"
		"%k = CONST(7) : long[]\n"
		"%t = CONST(false) : bool[]\n"
		"%1 = CAST(%x) : float[4,S]\n"
		"%r = REDUCE(%1, op=MAX, axes=[-1]) : float[4,1]\n"
		"%r2 = REDUCE(%1, op=ADD, axes=[1], keepdim=false, acc=double) : float[4]\n"
		"%p = PAD(%r2, pads=[[0,1]]) : float[5]\n"
		"%o = OUTPUT(%p, name=\"y\", strides=[1]) : float[5]\n";
	check_canonical(in, want);
	parsed p = parse_ok(in);
	cr_expect_str_eq(p.g->nodes[0].name, "in\"q\\");
	done(&p);
}

Test(print, round_trips)
{
	static const char *texts[] = {
		"%0 = CONST(1.50) : float[]\n%1 = CONST(-0.0) : float[]\n"
		"%2 = ADD(%0, %1) : float[]\n%3 = OUTPUT(%2, name=\"s\") : float[]\n",
		"%a = BUFFER(slot=0, name=\"a\") : uchar[2,3]\n%b = BUFFER(slot=1, name=\"b\") : u8[3]\n"
		"%c = CMPLT(%a, %b) : bool[2,3]\n%d = WHERE(%c, %a, %a) : uchar[2,3]\n"
		"%e = SHRINK(%d, bounds=[[0,2],[1,3]]) : uchar[2,2]\n%f = FLIP(%e, axes=[0]) : uchar[2,2]\n"
		"%g = CONTIGUOUS(%f) : uchar[2,2]\n%h = BITCAST(%g) : char[2,2]\n"
		"%i = OUTPUT(%h, name=\"h\") : char[2,2]\n",
		"%0 = CONST(9223372036854775807) : long[]\n%1 = CONST(nan) : double[]\n"
		"%2 = CONST(-inf) : f64[]\n%3 = CONST(1e300) : double[]\n%4 = OUTPUT(%0, name=\"z\") : long[]\n",
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		check_canonical(texts[i], NULL);
	check_canonical(texts[0], "# tinyc-uop v0\n%0 = CONST(1.50) : float[]\n%1 = CONST(-0.0) : float[]\n"
				  "%2 = ADD(%0, %1) : float[]\n%3 = OUTPUT(%2, name=\"s\") : float[]\n");
}

/* Graphs built by hand print as expected too (a float literal without a spelling). */
Test(print, built_graph)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_graph *g = tinyc_graph_alloc(ctx);
	int c = tinyc_graph_add(ctx, g, TINYC_OP_CONST, TINYC_FLOAT);
	cr_assert_eq(c, 0);
	g->nodes[c].id = strdup("c");
	g->nodes[c].lit.kind = TINYC_LIT_FLOAT;
	g->nodes[c].lit.f = 2.0;
	g->nodes[c].shape = calloc(1, sizeof(tinyc_dim));
	int o = tinyc_graph_add(ctx, g, TINYC_OP_OUTPUT, TINYC_FLOAT);
	cr_assert_eq(o, 1);
	tinyc_uop *u = &g->nodes[o];
	cr_expect(u->keepdim == 1 && u->acc == TINYC_DTYPE_NONE && u->src[0] == -1);
	u->id = strdup("o");
	u->nsrc = 1;
	u->src[0] = c;
	u->name = strdup("out");
	int s = tinyc_graph_symbol(ctx, g, "N", -1);
	cr_expect_eq(s, 0);
	cr_expect_eq(tinyc_graph_symbol(ctx, g, "N", 1), 0);
	cr_expect_eq(tinyc_graph_symbol(ctx, g, "Mx", 1), 1);	/* "M" */
	cr_expect_str_eq(g->syms[1], "M");
	char *text = print_str(g);
	cr_expect_str_eq(text, "# tinyc-uop v0\n%c = CONST(2.0) : float[]\n"
			       "%o = OUTPUT(%c, name=\"out\") : float[]\n");
	free(text);
	tinyc_graph_free(g);
	tinyc_ctx_free(ctx);
}

Test(print, dot)
{
	parsed p = parse_ok("%0 = BUFFER(slot=0, name=\"x\") : half[M,4]\n"
			    "%w = BUFFER(slot=1, name=\"w\") : half[4]\n"
			    "%1 = MUL(%0, %w) : half[M,4]\n"
			    "%2 = OUTPUT(%1, name=\"y\") : half[M,4]\n");
	tinyc_buf b = {0};
	tinyc_print_dot(p.g, &b);
	cr_expect_str_eq(b.data,
			 "digraph uop {\n"
			 "  node [shape=box, fontname=\"monospace\"];\n"
			 "  n0 [label=\"%0 BUFFER\\nhalf[M,4]\"];\n"
			 "  n1 [label=\"%w BUFFER\\nhalf[4]\"];\n"
			 "  n2 [label=\"%1 MUL\\nhalf[M,4]\"];\n"
			 "  n3 [label=\"%2 OUTPUT\\nhalf[M,4]\"];\n"
			 "  n0 -> n2 [label=\"0\"];\n"
			 "  n1 -> n2 [label=\"1\"];\n"
			 "  n2 -> n3 [label=\"0\"];\n"
			 "}\n");
	tinyc_buf_free(&b);
	done(&p);
}

Test(print, shape)
{
	tinyc_graph g = {0};
	char *syms[] = {"M"};
	g.nsym = 1;
	g.syms = syms;
	tinyc_dim d[3] = {{4, -1}, {0, 0}, {1, -1}};
	tinyc_buf b = {0};
	tinyc_print_shape(&g, 3, d, &b);
	tinyc_print_shape(&g, 0, NULL, &b);
	cr_expect_str_eq(b.data, "[4,M,1][]");
	tinyc_buf_free(&b);
}

/* ---------------------------------------------------------------- equality */

Test(graph, equality)
{
	const char *base = "%0 = CONST(1.5) : float[]\n%1 = OUTPUT(%0, name=\"o\") : float[]\n";
	parsed a = parse_ok(base);
	parsed same = parse_ok("%0 = CONST(1.50) : f32[]  # other spelling\n"
			       "%1 = OUTPUT(%0, name=\"o\") : float[]\n");
	cr_expect(tinyc_graph_equal(a.g, same.g));
	static const char *other[] = {
		"%0 = CONST(2.5) : float[]\n%1 = OUTPUT(%0, name=\"o\") : float[]\n",
		"%0 = CONST(1.5) : double[]\n%1 = OUTPUT(%0, name=\"o\") : float[]\n",
		"%0 = CONST(1.5) : float[]\n%1 = OUTPUT(%0, name=\"p\") : float[]\n",
		"%x = CONST(1.5) : float[]\n%1 = OUTPUT(%x, name=\"o\") : float[]\n",
		"%0 = CONST(1.5) : float[]\n%1 = OUTPUT(%0, name=\"o\", strides=[]) : float[]\n",
		"%0 = CONST(1.5) : float[]\n%1 = OUTPUT(%0, name=\"o\") : float[1]\n",
		"%0 = CONST(1.5) : float[]\n%2 = OUTPUT(%0, name=\"o\") : float[]\n"
		"%1 = OUTPUT(%0, name=\"q\") : float[]\n",
	};
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		parsed b = parse_ok(other[i]);
		cr_expect(!tinyc_graph_equal(a.g, b.g), "equal to: %s", other[i]);
		done(&b);
	}
	/* symbols by name; attribute differences */
	parsed m = parse_ok("%0 = BUFFER(slot=0, name=\"x\") : float[M]\n%1 = OUTPUT(%0, name=\"y\") : float[M]\n");
	parsed n = parse_ok("%0 = BUFFER(slot=0, name=\"x\") : float[N]\n%1 = OUTPUT(%0, name=\"y\") : float[N]\n");
	parsed s = parse_ok("%0 = BUFFER(slot=1, name=\"x\") : float[M]\n%1 = OUTPUT(%0, name=\"y\") : float[M]\n");
	cr_expect(!tinyc_graph_equal(m.g, n.g));
	cr_expect(!tinyc_graph_equal(m.g, s.g));
	parsed r1 = parse_ok("%0 = BUFFER(slot=0, name=\"x\") : float[4]\n"
			     "%1 = REDUCE(%0, op=ADD, axes=[0]) : float[1]\n%2 = OUTPUT(%1, name=\"y\") : float[1]\n");
	parsed r2 = parse_ok("%0 = BUFFER(slot=0, name=\"x\") : float[4]\n"
			     "%1 = REDUCE(%0, op=ADD, axes=[0], acc=double) : float[1]\n%2 = OUTPUT(%1, name=\"y\") : float[1]\n");
	cr_expect(!tinyc_graph_equal(r1.g, r2.g));
	cr_expect(tinyc_graph_equal(r1.g, r1.g));
	parsed n1 = parse_ok("%0 = CONST(nan) : float[]\n%1 = OUTPUT(%0, name=\"o\") : float[]\n");
	parsed n2 = parse_ok("%0 = CONST(nan) : float[]\n%1 = OUTPUT(%0, name=\"o\") : float[]\n");
	cr_expect(tinyc_graph_equal(n1.g, n2.g));
	done(&n1), done(&n2), done(&r1), done(&r2), done(&m), done(&n), done(&s);
	done(&a);
	done(&same);
}

/* ---------------------------------------------------------------- tables, bindings */

Test(table, ops)
{
	cr_expect_eq(tinyc_op_from_name("VIEW", 4), TINYC_OP_BUFFER);
	cr_expect_eq(tinyc_op_from_name("BUFFER", -1), TINYC_OP_BUFFER);
	cr_expect_eq(tinyc_op_from_name("WHERE", 5), TINYC_OP_WHERE);
	cr_expect_eq(tinyc_op_from_name("ADDX", 3), TINYC_OP_ADD);
	cr_expect_eq(tinyc_op_from_name("add", 3), TINYC_OP_NONE);
	cr_expect_eq(tinyc_op_from_name("ADD", 2), TINYC_OP_NONE);
	cr_expect_str_eq(tinyc_op_info(TINYC_OP_SHR)->name, "SHR");
	cr_expect_eq(tinyc_op_info(TINYC_OP_WHERE)->arity, 3);
	cr_expect_eq(tinyc_op_info(TINYC_OP_BUFFER)->arity, 0);
	cr_expect_null(tinyc_op_info(TINYC_OP_COUNT));
	cr_expect_null(tinyc_op_info(TINYC_OP_NONE));
	cr_expect(tinyc_op_is_unary(TINYC_OP_RELU) && tinyc_op_is_unary(TINYC_OP_NEG));
	cr_expect(!tinyc_op_is_unary(TINYC_OP_CAST) && !tinyc_op_is_unary(TINYC_OP_ADD));
	cr_expect(!tinyc_op_is_unary(TINYC_OP_RESHAPE));
	cr_expect(tinyc_op_is_binary(TINYC_OP_CMPEQ) && tinyc_op_is_binary(TINYC_OP_SHL));
	cr_expect(!tinyc_op_is_binary(TINYC_OP_WHERE) && !tinyc_op_is_binary(TINYC_OP_NEG));
	cr_expect_str_eq(tinyc_redop_name(TINYC_RED_MAX), "MAX");
	cr_expect_str_eq(tinyc_attr_name(TINYC_ATTR_KEEPDIM), "keepdim");
	cr_expect_eq(tinyc_attr_from_name("bounds", -1), TINYC_ATTR_BOUNDS);
	cr_expect_eq(tinyc_attr_from_name("bound", -1), TINYC_ATTR_NONE);
	cr_expect_eq(tinyc_op_attr(TINYC_OP_REDUCE, TINYC_ATTR_ACC), 1);
	cr_expect_eq(tinyc_op_attr(TINYC_OP_REDUCE, TINYC_ATTR_AXES), 2);
	cr_expect_eq(tinyc_op_attr(TINYC_OP_ADD, TINYC_ATTR_AXES), 0);
	cr_expect_eq(tinyc_op_attr(TINYC_OP_OUTPUT, TINYC_ATTR_STRIDES), 1);
}

Test(bindings, parse_and_values)
{
	parsed p = parse_ok("%0 = BUFFER(slot=0, name=\"x\") : float[M,N,K]\n"
			    "%1 = OUTPUT(%0, name=\"y\") : float[M,N,K]\n");
	tinyc_bindings *b = tinyc_bindings_alloc(p.ctx, p.g);
	cr_assert(b && b->n == 3 && b->val[0] == -1 && b->val[2] == -1);
	cr_expect_eq(tinyc_bindings_parse(p.ctx, p.g, "M=4, K = 8", b), 0);
	cr_expect(b->val[0] == 4 && b->val[1] == -1 && b->val[2] == 8);
	const tinyc_dim *s = p.g->nodes[0].shape;
	cr_expect_eq(tinyc_dim_value(&s[0], b), 4);
	cr_expect_eq(tinyc_dim_value(&s[1], b), -1);
	cr_expect_eq(tinyc_dim_value(&s[1], NULL), -1);
	tinyc_dim four = {4, -1};
	cr_expect_eq(tinyc_dim_value(&four, NULL), 4);
	cr_expect_eq(tinyc_ctx_error_count(p.ctx), 0);

	static const struct {
		const char *text, *kind;
	} bad[] = {
		{"Q=3", "UnknownSymbol"},       {"M=0", "InvalidBinding"},
		{"M=-1", "InvalidBinding"},     {"M=x", "InvalidBinding"},
		{"M=", "InvalidBinding"},       {"M", "InvalidBinding"},
		{"M=4,,N=2", "InvalidBinding"}, {"M=99999999999999999999", "InvalidBinding"},
		{"M=5", "InvalidBinding"},	/* M is already 4 */
		{"", "InvalidBinding"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tinyc_ctx_clear_diags(p.ctx);
		cr_expect_eq(tinyc_bindings_parse(p.ctx, p.g, bad[i].text, b), -1, "%s", bad[i].text);
		const tinyc_diag *d = tinyc_ctx_diag(p.ctx, 0);
		cr_assert_not_null(d, "%s", bad[i].text);
		cr_expect_str_eq(d->kind, bad[i].kind, "%s", bad[i].text);
	}
	cr_expect_eq(b->val[0], 4);
	tinyc_bindings_free(b);
	done(&p);
}

/* ---------------------------------------------------------------- diagnostics */

#define BUF0 "%0 = BUFFER(slot=0, name=\"a\") : float[1]\n"
#define OUT1 "%9 = OUTPUT(%0, name=\"o\") : float[1]\n"

Test(diag, syntax_errors)
{
	expect_error("%0 BUFFER(slot=0, name=\"a\") : float[1]\n", (want){"SyntaxError", 1, 4});
	expect_error("%0 = BUFFER(slot=0, name=\"a\" : float[1]\n", (want){"SyntaxError", 1, 30});
	expect_error("%0 = BUFFER(slot=0, name=\"a) : float[1]\n", (want){"SyntaxError", 1, 26});
	expect_error("%0 = BUFFER(slot=0, name=\"a\") : float[1] x\n", (want){"SyntaxError", 1, 42});
	expect_error("%0 = BUFFER(slot=0, name=\"a\") float[1]\n", (want){"SyntaxError", 1, 31});
	expect_error("%0 = BUFFER(slot=0, name=\"a\") : float\n", (want){"SyntaxError", 1, 38});
	expect_error("%0 = BUFFER(slot=0, name=\"a\") : float[1\n", (want){"SyntaxError", 1, 40});
	expect_error("%0 = BUFFER slot=0\n", (want){"SyntaxError", 1, 13});
	expect_error("0 = CONST(1) : int[]\n", (want){"SyntaxError", 1, 1});
	expect_error("% 0 = CONST(1) : int[]\n", (want){"SyntaxError", 1, 1});
	expect_error("%0a = CONST(1) : int[]\n", (want){"SyntaxError", 1, 1});
	expect_error("%0 = CONST(1.) : float[]\n", (want){"SyntaxError", 1, 12});
	expect_error("%0 = CONST(1e) : float[]\n", (want){"SyntaxError", 1, 12});
	expect_error("%0 = CONST(12ab) : float[]\n", (want){"SyntaxError", 1, 12});
	expect_error("%0 = CONST(-) : float[]\n", (want){"SyntaxError", 1, 12});
	expect_error("%0 = CONST(-nan) : float[]\n", (want){"SyntaxError", 1, 12});
	expect_error("%0 = CONST(+1) : float[]\n", (want){"SyntaxError", 1, 12});
	expect_error("%0 = = CONST(1) : int[]\n", (want){"SyntaxError", 1, 6});
	expect_error(BUF0 "%1 = NEG(%0,) : float[1]\n", (want){"SyntaxError", 2, 13});
	expect_error(BUF0 "%1 = NEG(,%0) : float[1]\n", (want){"SyntaxError", 2, 10});
	expect_error(BUF0 "%1 = RESHAPE(shape=[1], %0) : float[1]\n", (want){"SyntaxError", 2, 25});
	expect_error("%0 = BUFFER(slot=0, name=\"a\\n\") : float[1]\n", (want){"SyntaxError", 1, 28});
	expect_error("%0 = BUFFER(slot=0, name) : float[1]\n", (want){"SyntaxError", 1, 21});
	expect_error("%0 = BUFFER(slot=0, \"a\") : float[1]\n", (want){"SyntaxError", 1, 21});
	expect_error("%0 = BUFFER(slot=0, name=\"a\", strides=[1 2]) : float[1]\n",
		     (want){"SyntaxError", 1, 42});
	expect_error("%0 = CONST(1) : int[] ]\n", (want){"SyntaxError", 1, 23});
}

Test(diag, names_and_ids)
{
	expect_error("%0 = BUFER(slot=0, name=\"a\") : float[1]\n", (want){"UnknownOp", 1, 6});
	expect_error(BUF0 "%1 = add(%0, %0) : float[1]\n", (want){"UnknownOp", 2, 6});
	expect_error("%0 = BUFFER(slot=0, name=\"a\") : flaot[1]\n", (want){"UnknownDtype", 1, 33});
	expect_error("%0 = BUFFER(slot=0, name=\"a\") : Float[1]\n", (want){"UnknownDtype", 1, 33});
	expect_error(BUF0 "%1 = REDUCE(%0, op=ADD, axes=[0], acc=f128) : float[1]\n",
		     (want){"UnknownDtype", 2, 39});
	expect_error(BUF0 "%1 = NEG(%9) : float[1]\n" OUT1, (want){"UndefinedValue", 2, 10});
	expect_error(BUF0 "%1 = NEG(%1) : float[1]\n" OUT1, (want){"UndefinedValue", 2, 10});
	expect_error(BUF0 "%1 = NEG(%2) : float[1]\n%2 = NEG(%0) : float[1]\n" OUT1,
		     (want){"UndefinedValue", 2, 10});
	expect_error(BUF0 "%0 = NEG(%0) : float[1]\n" OUT1, (want){"DuplicateId", 2, 1});
	expect_error(BUF0 "%x = NEG(%0) : float[1]\n  %x = NEG(%0) : float[1]\n" OUT1,
		     (want){"DuplicateId", 3, 3});
}

Test(diag, attributes)
{
	expect_error("%0 = BUFFER(slot=0, name=\"a\", bogus=1) : float[1]\n",
		     (want){"InvalidAttribute", 1, 31});
	expect_error(BUF0 "%1 = RESHAPE(%0, axes=[0]) : float[1]\n", (want){"InvalidAttribute", 2, 18});
	expect_error("%0 = BUFFER(slot=\"0\", name=\"a\") : float[1]\n", (want){"InvalidAttribute", 1, 18});
	expect_error("%0 = BUFFER(slot=-1, name=\"a\") : float[1]\n", (want){"InvalidAttribute", 1, 18});
	expect_error("%0 = BUFFER(slot=0, name=\"\") : float[1]\n", (want){"InvalidAttribute", 1, 26});
	expect_error("%0 = BUFFER(slot=0, name=a) : float[1]\n", (want){"InvalidAttribute", 1, 26});
	expect_error("%0 = BUFFER(slot=0) : float[1]\n", (want){"InvalidAttribute", 1, 6});
	expect_error("%0 = BUFFER(name=\"a\") : float[1]\n", (want){"InvalidAttribute", 1, 6});
	expect_error(BUF0 "%1 = OUTPUT(%0) : float[1]\n", (want){"InvalidAttribute", 2, 6});
	expect_error(BUF0 "%1 = RESHAPE(%0) : float[1]\n", (want){"InvalidAttribute", 2, 6});
	expect_error(BUF0 "%1 = PERMUTE(%0) : float[1]\n", (want){"InvalidAttribute", 2, 6});
	expect_error(BUF0 "%1 = REDUCE(%0, axes=[0]) : float[1]\n", (want){"InvalidAttribute", 2, 6});
	expect_error(BUF0 "%1 = REDUCE(%0, op=ADD) : float[1]\n", (want){"InvalidAttribute", 2, 6});
	expect_error(BUF0 "%1 = REDUCE(%0, op=SUB, axes=[0]) : float[1]\n", (want){"InvalidAttribute", 2, 20});
	expect_error(BUF0 "%1 = REDUCE(%0, op=ADD, axes=[0], keepdim=1) : float[1]\n",
		     (want){"InvalidAttribute", 2, 43});
	expect_error(BUF0 "%1 = REDUCE(%0, op=ADD, axes=0) : float[1]\n", (want){"InvalidAttribute", 2, 30});
	expect_error(BUF0 "%1 = PERMUTE(%0, perm=[0,x]) : float[1]\n", (want){"InvalidAttribute", 2, 26});
	expect_error(BUF0 "%1 = PAD(%0, pads=[[1,2,3]]) : float[1]\n", (want){"InvalidAttribute", 2, 20});
	expect_error(BUF0 "%1 = PAD(%0, pads=[1,2]) : float[1]\n", (want){"InvalidAttribute", 2, 20});
	expect_error(BUF0 "%1 = SHRINK(%0) : float[1]\n", (want){"InvalidAttribute", 2, 6});
	expect_error(BUF0 "%1 = FLIP(%0) : float[1]\n", (want){"InvalidAttribute", 2, 6});
	expect_error(BUF0 "%1 = PAD(%0) : float[1]\n", (want){"InvalidAttribute", 2, 6});
	expect_error(BUF0 "%1 = EXPAND(%0, shape=[x, \"s\"]) : float[1]\n", (want){"InvalidDim", 2, 27});
	expect_error("%0 = BUFFER(slot=0, name=\"a\", strides=[1,-1]) : float[2,2]\n",
		     (want){"InvalidAttribute", 1, 42});
	expect_error("%0 = BUFFER(slot=0, name=\"a\", strides=[1]) : float[2,2]\n",
		     (want){"InvalidAttribute", 1, 39});
	expect_error("%0 = CONST() : float[]\n", (want){"InvalidAttribute", 1, 6});
	expect_error("%0 = CONST(1, 2) : float[]\n", (want){"InvalidAttribute", 1, 15});
	expect_error("%0 = CONST(1, name=\"x\") : float[]\n", (want){"InvalidAttribute", 1, 15});
	expect_error(BUF0 "%1 = NEG(%0, 3) : float[1]\n", (want){"InvalidAttribute", 2, 14});
	expect_error(BUF0 "%1 = NEG(%0, true) : float[1]\n", (want){"InvalidAttribute", 2, 14});
	expect_error("%0 = BUFFER(slot=0, slot=1, name=\"a\") : float[1]\n",
		     (want){"DuplicateAttribute", 1, 21});
}

Test(diag, arity)
{
	expect_error(BUF0 "%1 = NEG(%0, %0) : float[1]\n", (want){"ArityMismatch", 2, 14});
	expect_error(BUF0 "%1 = ADD(%0) : float[1]\n", (want){"ArityMismatch", 2, 6});
	expect_error(BUF0 "%1 = WHERE(%0, %0, %0, %0, %0) : float[1]\n", (want){"ArityMismatch", 2, 24});
	expect_error(BUF0 "%1 = CONST(%0, 1) : float[1]\n", (want){"ArityMismatch", 2, 12});
	expect_error(BUF0 "%1 = OUTPUT(name=\"o\") : float[1]\n", (want){"ArityMismatch", 2, 6});
	/* the message names the counts */
	parsed p = parse(BUF0 "%1 = ADD(%0) : float[1]\n");
	cr_expect_str_eq(tinyc_ctx_diag(p.ctx, 0)->msg, "ADD takes 2 operands, got 1");
	done(&p);
}

Test(diag, dims_and_numbers)
{
	expect_error("%0 = BUFFER(slot=0, name=\"a\") : float[0]\n", (want){"InvalidDim", 1, 39});
	expect_error("%0 = BUFFER(slot=0, name=\"a\") : float[2,-3]\n", (want){"InvalidDim", 1, 41});
	expect_error("%0 = BUFFER(slot=0, name=\"a\") : float[1099511627777]\n",
		     (want){"InvalidDim", 1, 39});
	expect_error("%0 = BUFFER(slot=0, name=\"a\") : float[1.5]\n", (want){"InvalidDim", 1, 39});
	expect_error("%0 = BUFFER(slot=0, name=\"a\") : float[true]\n", (want){"InvalidDim", 1, 39});
	expect_error("%0 = BUFFER(slot=0, name=\"a\") : float[[2]]\n", (want){"InvalidDim", 1, 39});
	expect_error("%0 = BUFFER(slot=0, name=\"a\") : float[\"M\"]\n", (want){"InvalidDim", 1, 39});
	/* rank 17: the 17th dim (col 39 + 2*16) */
	expect_error("%0 = BUFFER(slot=0, name=\"a\") : float[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]\n",
		     (want){"InvalidDim", 1, 71});
	expect_error("%0 = BUFFER(slot=9223372036854775808, name=\"a\") : float[1]\n",
		     (want){"IntegerOverflow", 1, 18});
	expect_error("%0 = CONST(-9223372036854775809) : long[]\n", (want){"IntegerOverflow", 1, 12});
	expect_error("%0 = BUFFER(slot=0, name=\"a\") : float[99999999999999999999999999999]\n",
		     (want){"IntegerOverflow", 1, 39});
	expect_error("%0 = CONST(1e999) : double[]\n", (want){"FloatOverflow", 1, 12});
	expect_error("%0 = CONST(-1.5e400) : double[]\n", (want){"FloatOverflow", 1, 12});
	/* the largest size and the extreme integers are fine */
	parsed p = parse_ok("%0 = BUFFER(slot=0, name=\"a\") : float[1099511627776]\n"
			    "%1 = CONST(9223372036854775807) : long[]\n"
			    "%2 = CONST(1e-400) : double[]\n"
			    "%3 = OUTPUT(%0, name=\"o\") : float[1099511627776]\n");
	cr_expect_eq(p.g->nodes[0].shape[0].val, INT64_C(1) << 40);
	cr_expect_eq(p.g->nodes[1].lit.i, INT64_MAX);
	done(&p);
}

Test(diag, whole_file)
{
	expect_error("", (want){"EmptyGraph", 1, 1});
	expect_error("\n\n   \n", (want){"EmptyGraph", 1, 1});
	expect_error("# tinyc-uop v0\n# nothing here\n", (want){"EmptyGraph", 1, 1});
	expect_error("# x\n%0 = CONST(1) : int[]\n%1 = NEG(%0) : int[]\n", (want){"NoOutput", 3, 1});
}

Test(diag, characters)
{
	expect_error_n("%0 = CONST(1) : int[]\0\n", 23, (want){"InvalidCharacter", 1, 22});
	expect_error_n("%0 = CONST(\0) : int[]\n", 22, (want){"InvalidCharacter", 1, 12});
	expect_error("%0 = CONST(1) : int[] \x01\n", (want){"InvalidCharacter", 1, 23});
	expect_error("%0 = CONST(1) : \xc3\xa9[]\n", (want){"InvalidCharacter", 1, 17});
	expect_error("%0 = BUFFER(slot=0, name=\"a\tb\") : float[1]\n", (want){"InvalidCharacter", 1, 28});
	expect_error("%0 = CONST(1) : int[] $\n", (want){"SyntaxError", 1, 23});
	/* NUL bytes and any byte inside a comment are fine; UTF-8 inside a string is fine */
	const char ok[] = "# \0\xff\x01 comment\n%0 = BUFFER(slot=0, name=\"\xc3\xa9\") : float[1] # \0\n"
			  "%1 = OUTPUT(%0, name=\"o\") : float[1]\n";
	parsed p = parse_n(ok, sizeof(ok) - 1);
	cr_assert_not_null(p.g);
	cr_expect_str_eq(p.g->nodes[0].name, "\xc3\xa9");
	done(&p);
}

Test(diag, nesting_and_lengths)
{
	expect_error(BUF0 "%1 = REDUCE(%0, op=ADD, axes=[[[[[[[[[[1]]]]]]]]]]) : float[1]\n",
		     (want){"NestingTooDeep", 2, 38});
	/* 8 levels are accepted syntactically (then the value has the wrong kind) */
	expect_error(BUF0 "%1 = REDUCE(%0, op=ADD, axes=[[[[[[[[1]]]]]]]]) : float[1]\n",
		     (want){"InvalidAttribute", 2, 31});
	/* 17 axes */
	expect_error(BUF0 "%1 = FLIP(%0, axes=[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]) : float[1]\n",
		     (want){"InvalidAttribute", 2, 53});
	/* 5000 values in an unknown attribute */
	size_t n = 5000;
	char *t = malloc(64 + 2 * n);
	cr_assert(t);
	char *q = t + sprintf(t, "%%0 = CONST(1, x=[");
	for (size_t i = 0; i < n; i++)
		q += sprintf(q, i ? ",1" : "1");
	sprintf(q, "]) : int[]\n");
	expect_error(t, (want){"ListTooLong", 1, 18 + 2 * 4096});
	free(t);
}

Test(diag, recovery_reports_several_errors)
{
	const char *text = "%0 = BUFFER(slot=0, name=\"a\") : float[4]\n"	/* 1 ok */
			   "%1 = FOO(%0) : float[4]\n"			/* 2 UnknownOp 6 */
			   "%2 = NEG(%1) : float[4]\n"			/* 3 silent: %1 was bad */
			   "%3 = NEG(%0) : flt[4]\n"			/* 4 UnknownDtype 16 */
			   "%4 = NEG(%0 : float[4]\n"			/* 5 SyntaxError 13 */
			   "%5 = ADD(%0, %9) : float[0]\n"		/* 6 UndefinedValue 14, InvalidDim 26 */
			   "%6 = OUTPUT(%0, name=\"o\") : float[4]\n";	/* 7 ok */
	parsed p = parse(text);
	cr_expect_null(p.g);
	static const want w[] = {{"UnknownOp", 2, 6},      {"UnknownDtype", 4, 16},
				 {"SyntaxError", 5, 13},   {"UndefinedValue", 6, 14},
				 {"InvalidDim", 6, 26}};
	int n = (int)(sizeof(w) / sizeof(w[0]));
	if (tinyc_ctx_diag_count(p.ctx) != n)
		tinyc_ctx_print_diags(p.ctx, stderr);
	cr_assert_eq(tinyc_ctx_diag_count(p.ctx), n);
	for (int i = 0; i < n; i++) {
		const tinyc_diag *d = tinyc_ctx_diag(p.ctx, i);
		cr_expect_str_eq(d->kind, w[i].kind);
		cr_expect(d->loc.line == w[i].line && d->loc.col == w[i].col, "%s at %d:%d", d->kind,
			  d->loc.line, d->loc.col);
	}
	cr_expect_str_eq(tinyc_ctx_diag(p.ctx, 0)->line_text, "%1 = FOO(%0) : float[4]");
	done(&p);
}

Test(diag, too_many_errors)
{
	tinyc_buf b = {0};
	for (int i = 0; i < 50; i++)
		tinyc_buf_printf(&b, "%%%d = NOPE() : float[1]\n", i);
	parsed p = parse(b.data);
	tinyc_buf_free(&b);
	cr_expect_null(p.g);
	cr_assert_eq(tinyc_ctx_diag_count(p.ctx), 21);
	cr_expect_str_eq(tinyc_ctx_diag(p.ctx, 19)->kind, "UnknownOp");
	const tinyc_diag *d = tinyc_ctx_diag(p.ctx, 20);
	cr_expect_str_eq(d->kind, "TooManyErrors");
	cr_expect(d->loc.line == 21 && d->loc.col == 7);
	done(&p);
}

/* ---------------------------------------------------------------- robustness */

/* Parse hostile text: must not crash, and must fail with an error of kind `kind`
 * (NULL: any kind) as the first diagnostic. */
static void hostile(const char *text, size_t len, const char *kind)
{
	parsed p = parse_n(text, len);
	cr_expect_null(p.g);
	cr_assert_geq(tinyc_ctx_error_count(p.ctx), 1);
	cr_expect_leq(tinyc_ctx_diag_count(p.ctx), 21);
	if (kind)
		cr_expect_str_eq(tinyc_ctx_diag(p.ctx, 0)->kind, kind);
	done(&p);
}

Test(robust, binary_garbage, .timeout = 30)
{
	uint64_t s = 0x9E3779B97F4A7C15u;
	size_t n = 1 << 16;
	char *t = malloc(n);
	cr_assert(t);
	for (size_t i = 0; i < n; i++) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		t[i] = (char)(s >> 24);
	}
	hostile(t, n, NULL);
	memset(t, 0, n);
	hostile(t, n, "InvalidCharacter");
	free(t);
}

Test(robust, huge_lines, .timeout = 30)
{
	size_t n = 1 << 20;
	char *t = malloc(n + 200);
	cr_assert(t);
	/* 1 MB of '[' */
	int k = sprintf(t, "%%0 = BUFFER(slot=0, name=\"a\", strides=");
	memset(t + k, '[', n);
	hostile(t, k + n, "NestingTooDeep");
	/* 1 MB id, 1 MB symbol, 1 MB string, 1 MB of dims, 1 MB number, 1 MB comment */
	t[0] = '%';
	memset(t + 1, 'a', n);
	hostile(t, n + 1, "SyntaxError");
	k = sprintf(t, "%%0 = BUFFER(slot=0, name=\"a\") : float[");
	memset(t + k, 'M', n);
	strcpy(t + k + n, "]\n");
	hostile(t, strlen(t), "NoOutput");
	k = sprintf(t, "%%0 = BUFFER(slot=0, name=\"");
	memset(t + k, 'x', n);
	hostile(t, k + n, "SyntaxError");	/* unterminated string */
	k = sprintf(t, "%%0 = BUFFER(slot=0, name=\"a\") : float[");
	for (size_t i = 0; i + 2 < n; i += 2)
		t[k + i] = '1', t[k + i + 1] = ',';
	hostile(t, k + n - 2, "InvalidDim");
	k = sprintf(t, "%%0 = CONST(");
	memset(t + k, '9', n);
	strcpy(t + k + n, ") : long[]\n");
	hostile(t, strlen(t), "IntegerOverflow");
	memset(t + k, '1', n);
	t[k + n - 2] = '.';	/* 1e1048574 */
	strcpy(t + k + n, ") : double[]\n");
	hostile(t, strlen(t), "FloatOverflow");
	t[0] = '#';
	memset(t + 1, '[', n);
	hostile(t, n + 1, "EmptyGraph");
	/* 1 MB of spaces before a good line, and a 1 MB name */
	memset(t, ' ', n);
	k = sprintf(t + n, "%%0 = CONST(1) : int[]\n%%1 = OUTPUT(%%0, name=\"o\") : int[]\n");
	parsed p = parse_n(t, n + k);
	cr_expect_not_null(p.g);
	cr_expect_eq(p.g->nodes[0].loc.col, (int)n + 1);
	done(&p);
	free(t);
}

/* Many lines with distinct ids and symbols: the parser must stay linear. */
Test(robust, many_lines, .timeout = 30)
{
	tinyc_buf b = {0};
	int n = 40000;
	tinyc_buf_printf(&b, "%%0 = BUFFER(slot=0, name=\"x\") : float[S0,1]\n");
	for (int i = 1; i < n; i++)
		tinyc_buf_printf(&b, "%%%d = RESHAPE(%%%d, shape=[S%d,1]) : float[S%d,1]\n", i, i - 1, i, i);
	tinyc_buf_printf(&b, "%%o = OUTPUT(%%%d, name=\"y\") : float[S%d,1]\n", n - 1, n - 1);
	parsed p = parse_ok(b.data);
	cr_expect_eq(p.g->n, n + 1);
	cr_expect_eq(p.g->nsym, n);
	cr_expect_str_eq(p.g->syms[n - 1], "S39999");
	cr_expect_eq(p.g->nodes[n].src[0], n - 1);
	char *again = print_str(p.g);
	parsed q = parse_ok(again);
	cr_expect(tinyc_graph_equal(p.g, q.g));
	free(again);
	done(&q);
	done(&p);
	tinyc_buf_free(&b);
}

Test(robust, random_mutations, .timeout = 120)
{
	size_t n0 = strlen(design);
	char *t = malloc(n0 + 64);
	cr_assert(t);
	uint64_t s = 12345;
	int parsed_ok = 0, failed = 0;
	static const char alphabet[] = "%=(),:[]#\"\\-.0123456789eEMNKadfhilnorstx \t\n\r\0\x80\xff";
	for (int iter = 0; iter < 3000; iter++) {
		memcpy(t, design, n0);
		size_t n = n0;
		int edits = 1 + (int)(s % 4);
		for (int e = 0; e < edits; e++) {
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			size_t at = (size_t)(s >> 8) % n;
			char c = alphabet[(s >> 40) % (sizeof(alphabet) - 1)];
			switch (s % 3) {
			case 0:	/* replace */
				t[at] = c;
				break;
			case 1:	/* insert */
				memmove(t + at + 1, t + at, n - at);
				t[at] = c;
				n++;
				break;
			default:	/* delete */
				if (n > 1) {
					memmove(t + at, t + at + 1, n - at - 1);
					n--;
				}
			}
		}
		parsed p = parse_n(t, n);
		if (p.g) {
			parsed_ok++;
			cr_expect_eq(tinyc_ctx_error_count(p.ctx), 0);
			char *text = print_str(p.g);
			parsed q = parse_ok(text);
			cr_expect(tinyc_graph_equal(p.g, q.g), "round trip of mutation %d", iter);
			free(text);
			done(&q);
		} else {
			failed++;
			cr_expect_geq(tinyc_ctx_error_count(p.ctx), 1, "mutation %d failed silently", iter);
			const tinyc_diag *d = tinyc_ctx_diag(p.ctx, 0);
			cr_expect(d && d->kind && d->loc.line >= 1 && d->loc.col >= 1);
		}
		done(&p);
	}
	cr_log_info("mutations: %d parsed, %d rejected", parsed_ok, failed);
	cr_expect_gt(failed, 1000);
	cr_expect_gt(parsed_ok, 10);
	free(t);
}

/* ---------------------------------------------------------------- examples/ */

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), k = strlen(suf);
	return n >= k && !strcmp(s + n - k, suf);
}

/* Every .uop file in examples/ parses and round-trips (the folder may still be empty). */
Test(examples, parse_and_round_trip)
{
	DIR *dir = opendir(TINYC_SOURCE_DIR "/examples");
	int count = 0;
	struct dirent *e;
	while (dir && (e = readdir(dir))) {
		if (!has_suffix(e->d_name, ".uop"))
			continue;
		char *path = tinyc_asprintf("%s/examples/%s", TINYC_SOURCE_DIR, e->d_name);
		tinyc_ctx *ctx = tinyc_ctx_alloc();
		tinyc_source *src = tinyc_source_read(ctx, path);
		cr_assert_not_null(src, "%s", path);
		tinyc_graph *g = tinyc_parse(ctx, src);
		if (!g)
			tinyc_ctx_print_diags(ctx, stderr);
		cr_expect_not_null(g, "%s must parse", path);
		if (g) {
			char *text = print_str(g);
			parsed q = parse_ok(text);
			cr_expect(tinyc_graph_equal(g, q.g), "%s round trip", path);
			char *twice = print_str(q.g);
			cr_expect_str_eq(twice, text);
			free(twice);
			free(text);
			done(&q);
		}
		tinyc_graph_free(g);
		tinyc_source_free(src);
		tinyc_ctx_free(ctx);
		free(path);
		count++;
	}
	if (dir)
		closedir(dir);
	cr_log_info("%d example files", count);
}
