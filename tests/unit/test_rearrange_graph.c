/* Rearrange through the pipeline: recognition of pure movements in UOp graphs
 * (sched/rearrange_graph.c), the schedule's rearrange candidates and dump, the GPU IR
 * kernels (codegen/rearrange_gpuir.c) run by the GPU IR interpreter, and their CUDA text
 * compiled by nvrtc.
 *
 * Oracles: descriptors worked out by hand; the reference evaluator (ir/eval.c, which applies
 * each movement op to dense tensors by its own index arithmetic) against a naive strided
 * copy written here from the recognised descriptors; and the evaluator against the GPU IR
 * interpreter's run of the generated kernels, bit for bit. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/gpu.h"
#include "driver/module.h"
#include "ir/tensor.h"
#include "lower/lower.h"
#include "runtime/runtime.h"
#include "sched/rearrange.h"
#include "driver/run.h"

/* ------------------------------------------------------------------ helpers ---- */

/* A parsed and verified graph. */
typedef struct fixture {
	tinyc_ctx *ctx;
	tinyc_source *src;
	tinyc_graph *g;
	tinyc_bindings *b;
} fixture;

/* Parse and verify text with optional bindings "M=4,N=6". */
static void load(fixture *f, const char *text, const char *bind)
{
	f->ctx = tinyc_ctx_alloc();
	f->src = tinyc_source_from_string("t.uop", text, strlen(text));
	f->g = tinyc_parse(f->ctx, f->src);
	cr_assert_not_null(f->g, "parse failed:\n%s", text);
	f->b = tinyc_bindings_alloc(f->ctx, f->g);
	if (bind)
		cr_assert_eq(tinyc_bindings_parse(f->ctx, f->g, bind, f->b), 0);
	cr_assert_eq(tinyc_verify(f->ctx, f->g, f->b), 0, "graph does not verify:\n%s", text);
}

/* Free a fixture. */
static void unload(fixture *f)
{
	tinyc_bindings_free(f->b);
	tinyc_graph_free(f->g);
	tinyc_source_free(f->src);
	tinyc_ctx_free(f->ctx);
}

/* Index of the n-th OUTPUT node. */
static int output_node(const tinyc_graph *g, int n)
{
	for (int i = 0; i < g->n; i++)
		if (g->nodes[i].op == TINYC_OP_OUTPUT && n-- == 0)
			return i;
	return -1;
}

/* Recognise the first OUTPUT of text; returns the result and fills c / why. */
static int recognize(const char *text, const char *bind, tinyc_rearrange_copy *c, char *why,
		     size_t why_size)
{
	fixture f;
	load(&f, text, bind);
	tinyc_buf w = {0};
	int r = tinyc_rearrange_recognize(f.g, f.b, output_node(f.g, 0), c, &w);
	snprintf(why, why_size, "%s", w.data ? w.data : "");
	tinyc_buf_free(&w);
	unload(&f);
	return r;
}

/* Assert n int64 values equal the expected list. */
static void expect_list(const char *what, int n, const int64_t *got, const int64_t *want)
{
	for (int i = 0; i < n; i++)
		cr_assert_eq(got[i], want[i], "%s[%d] = %lld, want %lld", what, i, (long long)got[i],
			     (long long)want[i]);
}

/* Storage elements of a strided layout (1 + sum (len-1)*|stride|). */
static int64_t span_of(int n, const int64_t *len, const int64_t *st)
{
	int64_t s = 1;
	for (int i = 0; i < n; i++)
		s += (len[i] - 1) * (st[i] < 0 ? -st[i] : st[i]);
	return s;
}

/* Random input tensors for every BUFFER of g (flat storage for strided ones); the tensors
 * go to io->in and owned[]. */
static void make_inputs(tinyc_ctx *ctx, const tinyc_graph *g, const tinyc_bindings *b,
			tinyc_io *io, tinyc_tensor **owned)
{
	for (int i = 0; i < g->n; i++) {
		const tinyc_uop *u = &g->nodes[i];
		if (u->op == TINYC_OP_BUFFER && u->slot + 1 > io->nin)
			io->nin = (int)u->slot + 1;
	}
	io->in = calloc((size_t)io->nin + 1, sizeof(*io->in));
	for (int i = 0; i < g->n; i++) {
		const tinyc_uop *u = &g->nodes[i];
		if (u->op != TINYC_OP_BUFFER)
			continue;
		int64_t len[TINYC_MAX_RANK], st[TINYC_MAX_RANK];
		for (int d = 0; d < u->rank; d++) {
			len[d] = tinyc_dim_value(&u->shape[d], b);
			st[d] = u->strides ? tinyc_dim_value(&u->strides[d], b) : 0;
		}
		tinyc_tensor *t;
		if (u->strides) {
			int64_t span = span_of(u->rank, len, st);
			t = tinyc_tensor_alloc(ctx, u->dtype, 1, &span);
		} else {
			t = tinyc_tensor_alloc(ctx, u->dtype, u->rank, len);
		}
		cr_assert_not_null(t);
		tinyc_tensor_fill_random(t, 1000 + (uint64_t)u->slot);
		owned[u->slot] = t;
		io->in[u->slot] = t;
	}
}

/* Bytes of a tensor. */
static size_t tbytes(const tinyc_tensor *t)
{
	return (size_t)tinyc_tensor_numel(t) * (size_t)tinyc_dtype_size(t->dtype);
}

/* ------------------------------------------------------------- recognition ---- */

/* Each movement op's view, worked out by hand. */
Test(rearrange_graph, recognise_each_op)
{
	tinyc_rearrange_copy c;
	char why[512];
	/* PERMUTE: x[4,6] row-major (6,1), y = x^T [6,4] */
	cr_assert_eq(recognize("%0 = BUFFER(slot=0, name=\"X\") : float[4,6]\n"
			       "%1 = PERMUTE(%0, perm=[1,0]) : float[6,4]\n"
			       "%2 = OUTPUT(%1, name=\"Y\") : float[6,4]\n", NULL, &c, why,
			       sizeof(why)), 1, "%s", why);
	cr_assert_eq(c.ndim, 2);
	cr_assert_eq(c.dtype, TINYC_FLOAT);
	expect_list("shape", 2, c.shape, (int64_t[]){6, 4});
	expect_list("xs", 2, c.xs, (int64_t[]){1, 6});
	expect_list("ys", 2, c.ys, (int64_t[]){4, 1});
	cr_assert_eq(c.x_offset, 0);
	cr_assert_eq(c.y_offset, 0);

	/* FLIP axis 0 (and -1 = 1): element 0 is x[3][5] = 23, strides negated */
	cr_assert_eq(recognize("%0 = BUFFER(slot=0, name=\"X\") : half[4,6]\n"
			       "%1 = FLIP(%0, axes=[0,-1]) : half[4,6]\n"
			       "%2 = OUTPUT(%1, name=\"Y\") : half[4,6]\n", NULL, &c, why,
			       sizeof(why)), 1, "%s", why);
	expect_list("xs", 2, c.xs, (int64_t[]){-6, -1});
	cr_assert_eq(c.x_offset, 23);

	/* SHRINK [[1,3],[2,5]]: x[1][2] = 8 first, lengths 2 and 3, strides kept */
	cr_assert_eq(recognize("%0 = BUFFER(slot=0, name=\"X\") : float[4,6]\n"
			       "%1 = SHRINK(%0, bounds=[[1,3],[2,5]]) : float[2,3]\n"
			       "%2 = OUTPUT(%1, name=\"Y\") : float[2,3]\n", NULL, &c, why,
			       sizeof(why)), 1, "%s", why);
	expect_list("shape", 2, c.shape, (int64_t[]){2, 3});
	expect_list("xs", 2, c.xs, (int64_t[]){6, 1});
	expect_list("ys", 2, c.ys, (int64_t[]){3, 1});
	cr_assert_eq(c.x_offset, 8);

	/* EXPAND [1,5] -> [3,5]: stride 0 on the broadcast dim */
	cr_assert_eq(recognize("%0 = BUFFER(slot=0, name=\"X\") : float[1,5]\n"
			       "%1 = EXPAND(%0, shape=[3,5]) : float[3,5]\n"
			       "%2 = OUTPUT(%1, name=\"Y\") : float[3,5]\n", NULL, &c, why,
			       sizeof(why)), 1, "%s", why);
	expect_list("xs", 2, c.xs, (int64_t[]){0, 1});

	/* RESHAPE of a transposed view that stays a view: [6,4] strides (1,6) -> [2,3,4]
	 * splits the stride-1 dim: (3,1,6) */
	cr_assert_eq(recognize("%0 = BUFFER(slot=0, name=\"X\") : float[4,6]\n"
			       "%1 = PERMUTE(%0, perm=[1,0]) : float[6,4]\n"
			       "%2 = RESHAPE(%1, shape=[2,3,4]) : float[2,3,4]\n"
			       "%3 = CONTIGUOUS(%2) : float[2,3,4]\n"
			       "%4 = OUTPUT(%3, name=\"Y\") : float[2,3,4]\n", NULL, &c, why,
			       sizeof(why)), 1, "%s", why);
	expect_list("xs", 3, c.xs, (int64_t[]){3, 1, 6});
	expect_list("ys", 3, c.ys, (int64_t[]){12, 4, 1});

	/* RESHAPE merging two dims that are contiguous in each other, with size-1 dims around:
	 * x[2,3,4] permuted to [4,2,3] strides (1,12,4); dims 1,2 merge (12 = 4*3) */
	cr_assert_eq(recognize("%0 = BUFFER(slot=0, name=\"X\") : float[2,3,4]\n"
			       "%1 = PERMUTE(%0, perm=[2,0,1]) : float[4,2,3]\n"
			       "%2 = RESHAPE(%1, shape=[1,4,6,1]) : float[1,4,6,1]\n"
			       "%3 = OUTPUT(%2, name=\"Y\") : float[1,4,6,1]\n", NULL, &c, why,
			       sizeof(why)), 1, "%s", why);
	expect_list("xs", 2, c.xs + 1, (int64_t[]){1, 4});

	/* strided BUFFER and OUTPUT: the strides are the descriptors */
	cr_assert_eq(recognize("%0 = BUFFER(slot=0, name=\"X\", strides=[64,256,1]) : float[4,6,64]\n"
			       "%1 = OUTPUT(%0, name=\"Y\", strides=[1,4,24]) : float[4,6,64]\n",
			       NULL, &c, why, sizeof(why)), 1, "%s", why);
	expect_list("xs", 3, c.xs, (int64_t[]){64, 256, 1});
	expect_list("ys", 3, c.ys, (int64_t[]){1, 4, 24});

	/* symbols: unbound is no rearrange (the reason names the symbol), bound is */
	const char *sym = "%0 = BUFFER(slot=0, name=\"X\") : float[M,N]\n"
			  "%1 = PERMUTE(%0, perm=[1,0]) : float[N,M]\n"
			  "%2 = OUTPUT(%1, name=\"Y\") : float[N,M]\n";
	cr_assert_eq(recognize(sym, NULL, &c, why, sizeof(why)), 0);
	cr_assert(strstr(why, "unbound symbol") && strstr(why, "bind"), "%s", why);
	cr_assert_eq(recognize(sym, "M=3,N=5", &c, why, sizeof(why)), 1, "%s", why);
	expect_list("xs", 2, c.xs, (int64_t[]){1, 5});
	expect_list("shape", 2, c.shape, (int64_t[]){5, 3});
}

/* What is not a rearrange, and the reason given. */
Test(rearrange_graph, recognise_rejects)
{
	tinyc_rearrange_copy c;
	char why[512];
	/* merging the two dims of a transposed view is no strided view */
	cr_assert_eq(recognize("%0 = BUFFER(slot=0, name=\"X\") : float[4,6]\n"
			       "%1 = PERMUTE(%0, perm=[1,0]) : float[6,4]\n"
			       "%2 = RESHAPE(%1, shape=[24]) : float[24]\n"
			       "%3 = OUTPUT(%2, name=\"Y\") : float[24]\n", NULL, &c, why,
			       sizeof(why)), 0);
	cr_assert(strstr(why, "%2 = RESHAPE") && strstr(why, "not a strided view") &&
		  strstr(why, "[6,4] with strides [1,6] to [24]"), "%s", why);
	/* a split that straddles: [6,4] strides (1,6) -> [3,8] */
	cr_assert_eq(recognize("%0 = BUFFER(slot=0, name=\"X\") : float[4,6]\n"
			       "%1 = PERMUTE(%0, perm=[1,0]) : float[6,4]\n"
			       "%2 = RESHAPE(%1, shape=[3,8]) : float[3,8]\n"
			       "%3 = OUTPUT(%2, name=\"Y\") : float[3,8]\n", NULL, &c, why,
			       sizeof(why)), 0);
	cr_assert(strstr(why, "not a strided view"), "%s", why);
	/* PAD writes zeros */
	cr_assert_eq(recognize("%0 = BUFFER(slot=0, name=\"X\") : float[4]\n"
			       "%1 = PAD(%0, pads=[[1,1]]) : float[6]\n"
			       "%2 = OUTPUT(%1, name=\"Y\") : float[6]\n", NULL, &c, why,
			       sizeof(why)), 0);
	cr_assert(strstr(why, "%1 = PAD") && strstr(why, "zeros"), "%s", why);
	/* arithmetic and casts */
	cr_assert_eq(recognize("%0 = BUFFER(slot=0, name=\"X\") : half[4]\n"
			       "%1 = CAST(%0) : float[4]\n"
			       "%2 = OUTPUT(%1, name=\"Y\") : float[4]\n", NULL, &c, why,
			       sizeof(why)), 0);
	cr_assert(strstr(why, "%1 = CAST: not a movement op"), "%s", why);
	cr_assert_eq(recognize("%0 = BUFFER(slot=0, name=\"X\") : float[4]\n"
			       "%1 = NEG(%0) : float[4]\n"
			       "%2 = PERMUTE(%1, perm=[0]) : float[4]\n"
			       "%3 = OUTPUT(%2, name=\"Y\") : float[4]\n", NULL, &c, why,
			       sizeof(why)), 0);
	cr_assert(strstr(why, "%1 = NEG"), "%s", why);
	/* a symbolic stride */
	cr_assert_eq(recognize("%0 = BUFFER(slot=0, name=\"X\", strides=[S,1]) : float[2,3]\n"
			       "%1 = OUTPUT(%0, name=\"Y\") : float[2,3]\n", NULL, &c, why,
			       sizeof(why)), 0);
	cr_assert(strstr(why, "stride 0 is the unbound symbol S"), "%s", why);
}

/* Graphs the evaluator and the recognised descriptors must agree on. */
static const char *const semantic_graphs[] = {
	/* flips, shrinks, permutes, a viewable reshape and a broadcast in one chain */
	"%0 = BUFFER(slot=0, name=\"X\") : float[5,6,7]\n"
	"%1 = FLIP(%0, axes=[2,0]) : float[5,6,7]\n"
	"%2 = SHRINK(%1, bounds=[[1,4],[0,6],[2,7]]) : float[3,6,5]\n"
	"%3 = PERMUTE(%2, perm=[1,0,2]) : float[6,3,5]\n"
	"%4 = RESHAPE(%3, shape=[2,3,3,5,1]) : float[2,3,3,5,1]\n"
	"%5 = EXPAND(%4, shape=[2,3,3,5,4]) : float[2,3,3,5,4]\n"
	"%6 = OUTPUT(%5, name=\"Y\") : float[2,3,3,5,4]\n",
	/* a strided, shrunk, flipped source into a gapped destination */
	"%0 = BUFFER(slot=0, name=\"X\", strides=[40,1,8]) : half[3,8,5]\n"
	"%1 = FLIP(%0, axes=[1]) : half[3,8,5]\n"
	"%2 = SHRINK(%1, bounds=[[1,3],[1,7],[0,5]]) : half[2,6,5]\n"
	"%3 = PERMUTE(%2, perm=[2,0,1]) : half[5,2,6]\n"
	"%4 = OUTPUT(%3, name=\"Y\", strides=[1,100,7]) : half[5,2,6]\n",
	/* a reshape that merges contiguous runs after a permute, then splits again */
	"%0 = BUFFER(slot=0, name=\"X\") : uchar[2,3,4,5]\n"
	"%1 = PERMUTE(%0, perm=[2,3,0,1]) : uchar[4,5,2,3]\n"
	"%2 = RESHAPE(%1, shape=[20,6]) : uchar[20,6]\n"
	"%3 = RESHAPE(%2, shape=[2,10,3,2]) : uchar[2,10,3,2]\n"
	"%4 = CONTIGUOUS(%3) : uchar[2,10,3,2]\n"
	"%5 = OUTPUT(%4, name=\"Y\") : uchar[2,10,3,2]\n",
	/* two outputs of one buffer, a scalar, doubles */
	"%0 = BUFFER(slot=0, name=\"X\") : double[3,4]\n"
	"%1 = PERMUTE(%0, perm=[1,0]) : double[4,3]\n"
	"%2 = OUTPUT(%1, name=\"Y\") : double[4,3]\n"
	"%3 = SHRINK(%0, bounds=[[2,3],[1,2]]) : double[1,1]\n"
	"%4 = RESHAPE(%3, shape=[]) : double[]\n"
	"%5 = OUTPUT(%4, name=\"Z\") : double[]\n",
};

/* A naive strided copy from the recognised descriptors reproduces the evaluator's output. */
Test(rearrange_graph, recognised_views_match_the_evaluator)
{
	for (size_t gi = 0; gi < sizeof(semantic_graphs) / sizeof(*semantic_graphs); gi++) {
		fixture f;
		load(&f, semantic_graphs[gi], NULL);
		tinyc_io io = {0};
		tinyc_tensor *owned[4] = {0};
		make_inputs(f.ctx, f.g, f.b, &io, owned);
		cr_assert_eq(tinyc_eval(f.ctx, f.g, f.b, &io), 0, "eval of graph %zu", gi);
		for (int o = 0; o < io.nout; o++) {
			tinyc_rearrange_copy c;
			tinyc_buf why = {0};
			int node = output_node(f.g, o);
			cr_assert_eq(tinyc_rearrange_recognize(f.g, f.b, node, &c, &why), 1,
				     "graph %zu output %d: %s", gi, o, why.data);
			tinyc_buf_free(&why);
			cr_assert_eq(f.g->nodes[c.src].op, TINYC_OP_BUFFER);
			const tinyc_tensor *x = io.in[f.g->nodes[c.src].slot], *ref = io.out[o];
			int e = tinyc_dtype_size(c.dtype);
			unsigned char *y = calloc((size_t)tinyc_tensor_numel(ref) + 1, (size_t)e);
			int64_t idx[TINYC_MAX_RANK] = {0}, n = 1;
			for (int d = 0; d < c.ndim; d++)
				n *= c.shape[d];
			for (int64_t t = 0; t < n; t++) {
				int64_t xo = c.x_offset, yo = c.y_offset;
				for (int d = 0; d < c.ndim; d++) {
					xo += idx[d] * c.xs[d];
					yo += idx[d] * c.ys[d];
				}
				cr_assert(xo >= 0 && xo < tinyc_tensor_numel(x) && yo >= 0 &&
					  yo < tinyc_tensor_numel(ref), "graph %zu: offset outside", gi);
				memcpy(y + yo * e, (const unsigned char *)x->data + xo * e, (size_t)e);
				for (int d = c.ndim - 1; d >= 0 && ++idx[d] == c.shape[d]; d--)
					idx[d] = 0;
			}
			cr_assert_eq(memcmp(y, ref->data, tbytes(ref)), 0, "graph %zu output %d differs",
				     gi, o);
			free(y);
		}
		tinyc_io_clear_outputs(&io);
		for (int i = 0; i < 4; i++)
			tinyc_tensor_free(owned[i]);
		free(io.in);
		unload(&f);
	}
}

/* ---------------------------------------------------------------- pipeline ---- */

/* A module compiled up to the cuda stage for sm_90 (no GPU needed). */
typedef struct compiled {
	tinyc_ctx *ctx;
	tinyc_source *src;
	tinyc_module *m;
	tinyc_buf sched;	/* the schedule dump */
} compiled;

/* Compile text (bindings `bind`) to CUDA text. */
static void compile(compiled *c, const char *name, const char *text, const char *bind)
{
	c->ctx = tinyc_ctx_alloc();
	c->src = tinyc_source_from_string(name, text, strlen(text));
	tinyc_options o = {0};
	o.target = "sm_90";
	o.bind = bind;
	c->m = tinyc_module_alloc(c->ctx, c->src, &o);
	int rc = tinyc_module_run_until(c->m, tinyc_pass_find("cuda"), 0, NULL);
	tinyc_buf d = {0};
	for (int i = 0; i < tinyc_ctx_diag_count(c->ctx); i++)
		tinyc_buf_printf(&d, "%s: %s\n", tinyc_ctx_diag(c->ctx, i)->kind,
				 tinyc_ctx_diag(c->ctx, i)->msg);
	cr_assert_eq(rc, 0, "%s does not compile:\n%s", name, d.data ? d.data : "");
	tinyc_buf_free(&d);
	memset(&c->sched, 0, sizeof(c->sched));
	tinyc_schedule_print(tinyc_module_schedule(c->m), &c->sched);
}

/* Free a compiled module. */
static void release(compiled *c)
{
	tinyc_buf_free(&c->sched);
	tinyc_module_free(c->m);
	tinyc_source_free(c->src);
	tinyc_ctx_free(c->ctx);
}

/* Kernels of the schedule whose chosen plan is a rearrange of kind `kind` (-1: any). */
static int count_rearrange(const tinyc_schedule *s, int kind)
{
	int n = 0;
	for (int i = 0; i < s->nkern; i++) {
		const tinyc_plan *p = tinyc_skernel_plan(&s->kerns[i]);
		if (p && p->kind == TINYC_PLAN_REARRANGE &&
		    (kind < 0 || (int)((const tinyc_rearrange_kplan *)p->ext)->plan.kind == kind))
			n++;
	}
	return n;
}

/* Run the module's GPU IR with the interpreter and the graph with the evaluator on the
 * same random inputs; every output must agree byte for byte (and not be all zero). */
static void interp_matches_eval(compiled *c, const char *name)
{
	tinyc_graph *g = c->m->uop;
	tinyc_io io = {0}, ref = {0};
	tinyc_tensor *owned[8] = {0};
	make_inputs(c->ctx, g, c->m->bind, &io, owned);
	int64_t sym[16] = {0};
	for (int i = 0; i < g->nsym && i < 16; i++)
		sym[i] = c->m->bind->val[i];
	cr_assert_eq(tinyc_gpu_run_interp(c->ctx, tinyc_module_gpuir(c->m), sym, &io), 0,
		     "%s: interpreter: %s", name,
		     tinyc_ctx_diag_count(c->ctx) ? tinyc_ctx_diag(c->ctx, 0)->msg : "");
	ref.nin = io.nin;
	ref.in = io.in;
	cr_assert_eq(tinyc_eval(c->ctx, g, c->m->bind, &ref), 0);
	cr_assert_eq(io.nout, ref.nout);
	for (int o = 0; o < io.nout; o++) {
		cr_assert_eq(tinyc_tensor_numel(io.out[o]), tinyc_tensor_numel(ref.out[o]));
		cr_assert_eq(memcmp(io.out[o]->data, ref.out[o]->data, tbytes(ref.out[o])), 0,
			     "%s: output %d differs from the evaluator", name, o);
		int nonzero = 0;
		for (size_t i = 0; i < tbytes(ref.out[o]) && !nonzero; i++)
			nonzero = ((unsigned char *)ref.out[o]->data)[i] != 0;
		cr_assert(nonzero, "%s: output %d is all zero", name, o);
	}
	tinyc_io_clear_outputs(&io);
	tinyc_io_clear_outputs(&ref);
	for (int i = 0; i < 8; i++)
		tinyc_tensor_free(owned[i]);
	free(io.in);
}

/* Read a file of the source tree into a new string. */
static char *read_text(const char *rel)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", TINYC_SOURCE_DIR, rel);
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = calloc((size_t)n + 1, 1);
	cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return s;
}

/* The GPU test graphs at sizes the interpreter runs quickly: every output becomes one
 * rearrange kernel, of the kind the cost model should pick, and computes what the
 * evaluator computes. */
Test(rearrange_graph, gpu_graphs_through_the_pipeline, .timeout = 600)
{
	static const struct {
		const char *file;	/* under tests/gpu/rearrange */
		const char *bind;	/* bindings */
		int kernels;		/* rearrange kernels */
		int tiled;		/* of which tiled */
		int run;		/* small enough for the interpreter */
	} cases[] = {
		{"transpose.uop", "M=100,N=100", 2, 2, 1},
		{"transpose.uop", "M=67,N=5", 2, 0, 1},	/* skinny: elementwise */
		{"transpose.uop", "M=2001,N=2001", 2, 2, 0},
		{"strided_in.uop", NULL, 2, 0, 1},
		{"strided_out.uop", NULL, 2, 0, 1},
		{"reverse5.uop", NULL, 2, 2, 1},
		{"reverse6.uop", NULL, 2, 2, 1},
		{"broadcast.uop", NULL, 2, 0, 1},
		{"gaps.uop", NULL, 2, 0, 1},
		{"heads.uop", NULL, 4, 0, 1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char rel[128];
		snprintf(rel, sizeof(rel), "tests/gpu/rearrange/%s", cases[i].file);
		char *text = read_text(rel);
		compiled c;
		compile(&c, rel, text, cases[i].bind);
		const tinyc_schedule *s = tinyc_module_schedule(c.m);
		cr_assert_eq(count_rearrange(s, -1), cases[i].kernels, "%s: rearrange kernels\n%s",
			     rel, c.sched.data);
		cr_assert_eq(count_rearrange(s, TINYC_REARRANGE_TILED), cases[i].tiled,
			     "%s %s: tiled kernels\n%s", rel, cases[i].bind ? cases[i].bind : "",
			     c.sched.data);
		cr_assert_eq(s->nkern, cases[i].kernels);
		cr_assert(strstr(c.sched.data, "(rearrange)") && strstr(c.sched.data, "  plan "),
			  "%s", c.sched.data);
		if (cases[i].run)
			interp_matches_eval(&c, rel);
		cr_log_info("%s %s: %d kernels, %d tiled%s", rel, cases[i].bind ? cases[i].bind : "",
			    cases[i].kernels, cases[i].tiled, cases[i].run ? ", interpreted" : "");
		release(&c);
		free(text);
	}
}

/* More layouts through the interpreter: every element size, packed words, odd lengths,
 * offsets from SHRINK and FLIP (which lower the base alignment), and an uneven split. */
Test(rearrange_graph, interpreter_layouts, .timeout = 600)
{
	static const char *const graphs[] = {
		/* bytes: pack 4 words (tile 128) */
		"%0 = BUFFER(slot=0, name=\"X\") : uchar[132,136]\n"
		"%1 = PERMUTE(%0, perm=[1,0]) : uchar[136,132]\n"
		"%2 = OUTPUT(%1, name=\"Y\") : uchar[136,132]\n",
		/* a shrink at an odd offset: 1-byte alignment, no packing */
		"%0 = BUFFER(slot=0, name=\"X\") : uchar[131,140]\n"
		"%1 = SHRINK(%0, bounds=[[1,131],[1,129]]) : uchar[130,128]\n"
		"%2 = PERMUTE(%1, perm=[1,0]) : uchar[128,130]\n"
		"%3 = OUTPUT(%2, name=\"Y\") : uchar[128,130]\n",
		/* doubles, a batch dim, a flip */
		"%0 = BUFFER(slot=0, name=\"X\") : double[3,40,36]\n"
		"%1 = FLIP(%0, axes=[1]) : double[3,40,36]\n"
		"%2 = PERMUTE(%1, perm=[0,2,1]) : double[3,36,40]\n"
		"%3 = OUTPUT(%2, name=\"Y\") : double[3,36,40]\n",
		/* bfloat16 NCHW -> NHWC */
		"%0 = BUFFER(slot=0, name=\"X\") : bfloat16[2,64,9,10]\n"
		"%1 = PERMUTE(%0, perm=[0,2,3,1]) : bfloat16[2,9,10,64]\n"
		"%2 = OUTPUT(%1, name=\"Y\") : bfloat16[2,9,10,64]\n",
		/* a copy (contiguous) and a 1025-long row: an uneven split of the block */
		"%0 = BUFFER(slot=0, name=\"X\") : int[3,1025]\n"
		"%1 = CONTIGUOUS(%0) : int[3,1025]\n"
		"%2 = OUTPUT(%1, name=\"Y\") : int[3,1025]\n"
		"%3 = FLIP(%0, axes=[1]) : int[3,1025]\n"
		"%4 = OUTPUT(%3, name=\"Z\") : int[3,1025]\n",
		/* a scalar */
		"%0 = BUFFER(slot=0, name=\"X\") : short[]\n"
		"%1 = OUTPUT(%0, name=\"Y\") : short[]\n",
		/* bool BSHD -> BHSD */
		"%0 = BUFFER(slot=0, name=\"X\") : bool[2,5,3,8]\n"
		"%1 = PERMUTE(%0, perm=[0,2,1,3]) : bool[2,3,5,8]\n"
		"%2 = OUTPUT(%1, name=\"Y\") : bool[2,3,5,8]\n",
	};
	int kinds[4] = {0}, packs[5] = {0};
	for (size_t i = 0; i < sizeof(graphs) / sizeof(*graphs); i++) {
		char name[32];
		snprintf(name, sizeof(name), "layout%zu.uop", i);
		compiled c;
		compile(&c, name, graphs[i], NULL);
		const tinyc_schedule *s = tinyc_module_schedule(c.m);
		cr_assert_eq(count_rearrange(s, -1), s->nkern, "%s\n%s", name, c.sched.data);
		for (int k = 0; k < s->nkern; k++) {
			const tinyc_rearrange_kplan *kp = tinyc_skernel_plan(&s->kerns[k])->ext;
			kinds[kp->plan.kind]++;
			if (kp->plan.kind == TINYC_REARRANGE_TILED)
				packs[kp->plan.pack]++;
		}
		interp_matches_eval(&c, name);
		release(&c);
	}
	cr_assert(kinds[TINYC_REARRANGE_TILED] >= 4 && kinds[TINYC_REARRANGE_ELEMENTWISE] >= 4,
		  "tiled %d, elementwise %d", kinds[TINYC_REARRANGE_TILED],
		  kinds[TINYC_REARRANGE_ELEMENTWISE]);
	cr_assert(packs[1] && packs[2] && packs[4], "packs 1:%d 2:%d 4:%d", packs[1], packs[2],
		  packs[4]);
}

/* Tiled kernels with two words per thread per row (which the cost model takes only for
 * large tensors) through GPU IR: each chosen plan is re-made with repeat 2, the GPU IR
 * rebuilt from the schedule and interpreted. */
Test(rearrange_graph, interpreter_two_words_per_row, .timeout = 600)
{
	static const char *const graphs[] = {
		"%0 = BUFFER(slot=0, name=\"X\") : half[130,200]\n"
		"%1 = PERMUTE(%0, perm=[1,0]) : half[200,130]\n"
		"%2 = OUTPUT(%1, name=\"Y\") : half[200,130]\n"
		"%3 = BUFFER(slot=1, name=\"F\") : float[100,70]\n"
		"%4 = FLIP(%3, axes=[0]) : float[100,70]\n"
		"%5 = PERMUTE(%4, perm=[1,0]) : float[70,100]\n"
		"%6 = OUTPUT(%5, name=\"Z\") : float[70,100]\n",
		"%0 = BUFFER(slot=0, name=\"X\") : bfloat16[2,64,9,30]\n"
		"%1 = PERMUTE(%0, perm=[0,2,3,1]) : bfloat16[2,9,30,64]\n"
		"%2 = OUTPUT(%1, name=\"Y\") : bfloat16[2,9,30,64]\n"
		"%3 = BUFFER(slot=1, name=\"D\") : double[3,4,7,53,9]\n"
		"%4 = PERMUTE(%3, perm=[4,3,2,1,0]) : double[9,53,7,4,3]\n"
		"%5 = OUTPUT(%4, name=\"Z\") : double[9,53,7,4,3]\n",
	};
	for (size_t i = 0; i < sizeof(graphs) / sizeof(*graphs); i++) {
		char name[32];
		snprintf(name, sizeof(name), "wide%zu.uop", i);
		compiled c;
		compile(&c, name, graphs[i], NULL);
		tinyc_schedule *s = tinyc_module_schedule(c.m);
		for (int k = 0; k < s->nkern; k++) {
			tinyc_plan *p = &s->kerns[k].cands[s->kerns[k].choice];
			cr_assert_eq(p->kind, TINYC_PLAN_REARRANGE, "%s", c.sched.data);
			tinyc_rearrange_kplan *kp = p->ext;
			tinyc_rearrange_copy *cp = &kp->copy;
			tinyc_tensor_desc y = {cp->dtype, cp->ndim, cp->shape, cp->ys};
			tinyc_tensor_desc x = {cp->dtype, cp->ndim, cp->shape, cp->xs};
			tinyc_rearrange_opts o;
			tinyc_rearrange_opts_default(&o);
			o.force = TINYC_REARRANGE_FORCE_TILED;
			o.tile_repeat = 2;
			o.no_copy = 1;
			cr_assert_eq(tinyc_rearrange_plan_build(NULL, &y, &x, &o, &kp->plan), 0);
			cr_assert_eq(kp->plan.repeat, 2);
			p->block[0] = kp->plan.tx;
			p->block[1] = kp->plan.ty;
			p->block[2] = 1;
		}
		tinyc_gpu_module *gm = tinyc_gpuir_build(c.ctx, s, tinyc_module_indexbook(c.m));
		cr_assert_not_null(gm, "%s: %s", name,
				   tinyc_ctx_diag_count(c.ctx) ? tinyc_ctx_diag(c.ctx, 0)->msg : "");
		cr_assert_eq(tinyc_gpu_verify(c.ctx, gm, s->dev.smem_per_block_optin), 0);
		/* run it in place of the module's own GPU IR */
		tinyc_gpu_module_free(c.m->gpuir);
		c.m->gpuir = gm;
		tinyc_buf text = {0};
		tinyc_gpu_print(gm, &text);
		cr_assert(strstr(text.data, "tile"), "%s", text.data);
		tinyc_buf_free(&text);
		interp_matches_eval(&c, name);
		/* and nvrtc takes it */
		tinyc_buf cu = {0};
		cr_assert_eq(tinyc_cuda_print(c.ctx, gm, &cu), 0);
		tinyc_blob blob;
		cr_assert_eq(tinyc_nvrtc_compile(c.ctx, cu.data, "wide.cu", "sm_90", 1, &blob), 0,
			     "%s", cu.data);
		tinyc_blob_clear(&blob);
		tinyc_buf_free(&cu);
		release(&c);
	}
}

/* Kernels that are not pure movements keep the generic plans, and the dump says why. */
Test(rearrange_graph, fallback_to_generic)
{
	compiled c;
	compile(&c, "reshape.uop",
		"%0 = BUFFER(slot=0, name=\"X\") : float[4,6]\n"
		"%1 = PERMUTE(%0, perm=[1,0]) : float[6,4]\n"
		"%2 = RESHAPE(%1, shape=[24]) : float[24]\n"
		"%3 = OUTPUT(%2, name=\"Y\") : float[24]\n", NULL);
	cr_assert_eq(count_rearrange(tinyc_module_schedule(c.m), -1), 0);
	cr_assert(strstr(c.sched.data, "(map)") &&
		  strstr(c.sched.data, "rearrange: not applicable: %2 = RESHAPE") &&
		  strstr(c.sched.data, "not a strided view"), "%s", c.sched.data);
	interp_matches_eval(&c, "reshape.uop");
	release(&c);

	/* overlapping OUTPUT strides never get here: the uop verifier refuses them
	 * (OverlappingStrides, test_verify.c) */

	/* arithmetic: no rearrange line at all */
	compile(&c, "neg.uop",
		"%0 = BUFFER(slot=0, name=\"X\") : float[4,6]\n"
		"%1 = NEG(%0) : float[4,6]\n"
		"%2 = OUTPUT(%1, name=\"Y\") : float[4,6]\n", NULL);
	cr_assert(!strstr(c.sched.data, "rearrange"), "%s", c.sched.data);
	release(&c);
}

/* The schedule dump of a bound transpose: both candidates with the cost model's numbers,
 * the choice, and the plan (checked against the planner's own dump of the same layouts). */
Test(rearrange_graph, schedule_dump)
{
	compiled c;
	compile(&c, "t.uop",
		"%0 = BUFFER(slot=0, name=\"X\") : float[100,100]\n"
		"%1 = PERMUTE(%0, perm=[1,0]) : float[100,100]\n"
		"%2 = OUTPUT(%1, name=\"Y\") : float[100,100]\n", NULL);
	const char *d = c.sched.data;
	cr_assert(strstr(d, "  candidate 0: rearrange elementwise: unit 4 bytes, 10 blocks of 1000, "
			    "cost 11970.0;"), "%s", d);
	cr_assert(strstr(d, "  candidate 1: rearrange tiled: tile 32x32, pack 1, 16 blocks of "
			    "32x8, cost 4356.0;"), "%s", d);
	cr_assert(strstr(d, "  choice: 1 (rearrange), block (32, 8, 1), index int\n"
			    "  rearrange Y <- %0: shape [100,100], y strides [100,1] offset 0, "
			    "x (X) strides [1,100] offset 0\n"), "%s", d);
	cr_assert(strstr(d, "    plan tiled: tile 32x32 (smem 32x33), pack 1, align 4, "
			    "32-bit index\n"), "%s", d);
	cr_assert(!strstr(d, "map tile"), "generic candidates must be gone:\n%s", d);
	/* the same text as the planner's dump of the layouts, indented */
	int64_t sh[] = {100, 100}, ys[] = {100, 1}, xs[] = {1, 100};
	tinyc_tensor_desc y = {TINYC_FLOAT, 2, sh, ys}, x = {TINYC_FLOAT, 2, sh, xs};
	tinyc_rearrange_opts o;
	tinyc_rearrange_opts_default(&o);
	o.no_copy = 1;
	tinyc_rearrange_plan p;
	cr_assert_eq(tinyc_rearrange_plan_build(NULL, &y, &x, &o, &p), 0);
	tinyc_buf b = {0};
	tinyc_rearrange_plan_print(&p, &b);
	char *line = strtok(b.data, "\n");
	for (; line; line = strtok(NULL, "\n")) {
		char want[256];
		snprintf(want, sizeof(want), "\n  %s\n", line);
		cr_assert(strstr(d, want), "missing %s in\n%s", want, d);
	}
	tinyc_buf_free(&b);
	/* GPU IR: word-typed pointers, the tile, one barrier */
	tinyc_buf g = {0};
	tinyc_gpu_print(tinyc_module_gpuir(c.m), &g);
	cr_assert(strstr(g.data, "tile"), "%s", g.data);
	tinyc_buf_free(&g);
	const char *cu = tinyc_module_cuda(c.m)->text;
	cr_assert(strstr(cu, "const unsigned int *__restrict__ X, unsigned int *__restrict__ Y"),
		  "%s", cu);
	cr_assert(strstr(cu, "__shared__ __align__(4) unsigned int tile[1056];"), "%s", cu);
	cr_assert(strstr(cu, "__syncthreads();"), "%s", cu);
	release(&c);
}

/* The CUDA text of rearrange graphs compiles with nvrtc (no GPU needed), 64-bit indexing
 * included. */
Test(rearrange_graph, cuda_compiles_with_nvrtc, .timeout = 300)
{
	static const char *const graphs[] = {
		"%0 = BUFFER(slot=0, name=\"X\") : half[2000,2000]\n"
		"%1 = PERMUTE(%0, perm=[1,0]) : half[2000,2000]\n"
		"%2 = OUTPUT(%1, name=\"Y\") : half[2000,2000]\n"
		"%3 = BUFFER(slot=1, name=\"B\") : uchar[2001,2000]\n"
		"%4 = PERMUTE(%3, perm=[1,0]) : uchar[2000,2001]\n"
		"%5 = OUTPUT(%4, name=\"Z\") : uchar[2000,2001]\n",
		/* 64-bit: a source stride beyond 2^31 elements */
		"%0 = BUFFER(slot=0, name=\"X\", strides=[2147483649,1]) : float[4,8]\n"
		"%1 = OUTPUT(%0, name=\"Y\") : float[4,8]\n"
		"%2 = BUFFER(slot=1, name=\"W\", strides=[1073741825,40,1]) : double[3,70,40]\n"
		"%3 = PERMUTE(%2, perm=[0,2,1]) : double[3,40,70]\n"
		"%4 = OUTPUT(%3, name=\"Z\") : double[3,40,70]\n",
		"%0 = BUFFER(slot=0, name=\"X\") : float[8,2048,32,128]\n"
		"%1 = PERMUTE(%0, perm=[0,2,1,3]) : float[8,32,2048,128]\n"
		"%2 = OUTPUT(%1, name=\"Y\") : float[8,32,2048,128]\n",
	};
	int longs = 0;
	for (size_t i = 0; i < sizeof(graphs) / sizeof(*graphs); i++) {
		compiled c;
		compile(&c, "nvrtc.uop", graphs[i], NULL);
		const tinyc_schedule *s = tinyc_module_schedule(c.m);
		cr_assert_eq(count_rearrange(s, -1), s->nkern, "%s", c.sched.data);
		const tinyc_gpu_module *gm = tinyc_module_gpuir(c.m);
		for (int k = 0; k < gm->nkernel; k++)
			longs += gm->kernels[k]->index_dtype == TINYC_LONG;
		tinyc_blob blob;
		int rc = tinyc_nvrtc_compile(c.ctx, tinyc_module_cuda(c.m)->text, "r.cu", "sm_90", 1,
					     &blob);
		cr_assert_eq(rc, 0, "nvrtc: %s\n%s",
			     tinyc_ctx_diag_count(c.ctx) ? tinyc_ctx_diag(c.ctx, 0)->msg : "",
			     tinyc_module_cuda(c.m)->text);
		cr_assert(blob.is_cubin && blob.size > 1000);
		tinyc_blob_clear(&blob);
		release(&c);
	}
	cr_assert_eq(longs, 2, "the strided graphs need 64-bit indices");
}
