/* Criterion tests of the back end (sched/, codegen/, ir/gpuir*):
 *
 *   - nvrtc: the CUDA text of every graph in examples/ and every tests/lit graph that is valid
 *     compiles to a CUBIN for sm_80 and for sm_90 (nvrtc needs no GPU);
 *   - interpreter: every such graph, on seeded random inputs and several binding sets (tail
 *     sizes 1, 7, 127, ...), compiled both with symbolic sizes and with the sizes bound,
 *     run kernel by kernel through the GPU IR interpreter, matches the reference evaluator
 *     (ir/eval.c, an independent implementation) within tolerance;
 *   - partition rules (softmax gets three kernels in the plain partition and one row-group
 *     kernel in the schedule, matmul+bias+relu one), the GPU IR
 *     builder's folding, the verifier's checks, and the interpreter's warp collectives
 *     (shuffles, ldmatrix, mma.m16n8k16 against a plain matrix product).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/gpu.h"
#include "ir/gpuir.h"
#include "ir/tensor.h"
#include "lower/lower.h"
#include "runtime/runtime.h"
#include "sched/schedule.h"

#include "../common/graph_harness.h"
#include "driver/run.h"

/* ------------------------------------------------------------- harness ---- */

/* Print the diagnostics of ctx (for a failing test) and clear them. */
static void dump_diags(tinyc_ctx *ctx)
{
	tinyc_ctx_print_diags(ctx, stderr);
	tinyc_ctx_clear_diags(ctx);
}


/* ------------------------------------------------------------------ nvrtc ---- */

enum { NVRTC_SHARDS = 4 };	/* the graphs are split over this many tests (i % NVRTC_SHARDS) */

/* nvrtc compiles the CUDA text of graph files shard, shard + NVRTC_SHARDS, ... for sm_80
 * and sm_90 (several tests, so that each stays far below its timeout on a loaded machine). */
static void nvrtc_compiles_graph_shard(int shard)
{
	if (tinyc_nvrtc_version() < 0)
		cr_skip_test("nvrtc is not available");
	char **files;
	int n = graph_files(TINYC_SOURCE_DIR, &files), compiled_ok = 0, examples = 0;
	int shard_files = 0, shard_examples = 0;
	const char *targets[] = {"sm_80", "sm_90"};
	for (int i = shard; i < n; i += NVRTC_SHARDS) {
		shard_files++;
		shard_examples += strstr(files[i], "/examples/") != NULL;
		for (int t = 0; t < 2; t++) {
			tinyc_ctx *ctx = tinyc_ctx_alloc();
			compiled c;
			int rc = compile(ctx, files[i], NULL, targets[t], &c);
			if (rc == 1) {	/* not a valid graph without bindings */
				compiled_free(&c);
				tinyc_ctx_free(ctx);
				break;
			}
			if (rc < 0)
				dump_diags(ctx);
			cr_expect_eq(rc, 0, "%s: the back end failed (%s)", files[i], targets[t]);
			if (rc == 0) {
				tinyc_buf text = {0};
				cr_assert_eq(tinyc_cuda_print(ctx, c.gm, &text), 0);
				tinyc_blob blob = {0};
				/* as the runtime: a module that needs sm_90a (wgmma) is built for it */
				const char *arch = strcmp(c.gm->target, "sm_90a") ? targets[t] : c.gm->target;
				int nrc = tinyc_nvrtc_compile(ctx, text.data, "graph.cu", arch, 1, &blob);
				if (nrc < 0) {
					dump_diags(ctx);
					fprintf(stderr, "%s\n", text.data);
				}
				cr_expect_eq(nrc, 0, "%s: nvrtc failed for %s", files[i], targets[t]);
				compiled_ok += nrc == 0;
				examples += nrc == 0 && strstr(files[i], "/examples/") != NULL;
				tinyc_blob_clear(&blob);
				tinyc_buf_free(&text);
			}
			compiled_free(&c);
			tinyc_ctx_free(ctx);
		}
	}
	graph_files_free(files, n);
	/* the shard's examples, and a good share of its lit graphs, must have been compiled */
	cr_expect_geq(shard_files, 20, "shard %d holds only %d graph files", shard, shard_files);
	cr_expect_eq(examples, 2 * shard_examples, "%d example compilations of %d files",
		     examples, shard_examples);
	cr_expect_geq(compiled_ok, shard_files / 2, "only %d graphs compiled", compiled_ok);
}

Test(codegen, nvrtc_compiles_graphs_shard0, .timeout = 900) { nvrtc_compiles_graph_shard(0); }
Test(codegen, nvrtc_compiles_graphs_shard1, .timeout = 900) { nvrtc_compiles_graph_shard(1); }
Test(codegen, nvrtc_compiles_graphs_shard2, .timeout = 900) { nvrtc_compiles_graph_shard(2); }
Test(codegen, nvrtc_compiles_graphs_shard3, .timeout = 900) { nvrtc_compiles_graph_shard(3); }

/* c's CUDA text, compiled with nvrtc for target (a failure is a test failure naming file);
 * the text stays in *text for the caller's checks. */
static void expect_nvrtc(tinyc_ctx *ctx, compiled *c, const char *file, const char *target,
			 tinyc_buf *text)
{
	cr_assert_eq(tinyc_cuda_print(ctx, c->gm, text), 0);
	tinyc_blob blob = {0};
	int nrc = tinyc_nvrtc_compile(ctx, text->data, file, target, 1, &blob);
	if (nrc < 0)
		dump_diags(ctx);
	cr_expect_eq(nrc, 0, "%s: nvrtc failed for %s", file, target);
	tinyc_blob_clear(&blob);
}

/* The flash-style attention kernels (tests/lit/attention) compile for sm_80 and for sm_90a,
 * and the schedule chose the attention plan for them. */
Test(codegen, nvrtc_compiles_attention_for_sm80_and_sm90a, .timeout = 600)
{
	if (tinyc_nvrtc_version() < 0)
		cr_skip_test("nvrtc is not available");
	const char *files[] = {"causal-gqa-fp16.uop", "bias-bf16.uop", "mqa-d128-fp32.uop",
			       "causal-skip-fp32.uop", "anticausal-fp16.uop", "causal-t2048-fp16.uop"};
	const char *targets[] = {"sm_80", "sm_90a"};
	for (int i = 0; i < 6; i++)
		for (int t = 0; t < 2; t++) {
			char path[1024];
			snprintf(path, sizeof(path), "%s/tests/lit/attention/%s", TINYC_SOURCE_DIR, files[i]);
			tinyc_ctx *ctx = tinyc_ctx_alloc();
			compiled c;
			int rc = compile(ctx, path, NULL, targets[t], &c);
			if (rc != 0)
				dump_diags(ctx);
			cr_assert_eq(rc, 0, "%s: compile failed for %s", files[i], targets[t]);
			int attn = 0;
			for (int k = 0; k < c.s->nkern; k++)
				attn += tinyc_skernel_plan(&c.s->kerns[k])->kind == TINYC_PLAN_ATTENTION;
			cr_expect_eq(attn, 1, "%s: %d attention kernels", files[i], attn);
			tinyc_buf text = {0};
			expect_nvrtc(ctx, &c, files[i], targets[t], &text);
			tinyc_buf_free(&text);
			compiled_free(&c);
			tinyc_ctx_free(ctx);
		}
}

/* The sm_90a attention variant with S on wgmma (TINYC_ATTN_WGMMA=1) compiles with nvrtc for
 * the 16-bit lit graphs with d = 64 (causal, GQA, the anticausal mask, T=2048 with 128-row
 * blocks of two warpgroups), with P V on mma.sync and on wgmma, and its kernels hold wgmma. */
Test(codegen, nvrtc_compiles_attention_wgmma_for_sm90a, .timeout = 600)
{
	if (tinyc_nvrtc_version() < 0)
		cr_skip_test("nvrtc is not available");
	const char *files[] = {"causal-gqa-fp16.uop", "anticausal-fp16.uop", "causal-t2048-fp16.uop",
			       "online-softmax-fp16.uop", "wgmma-fp16.uop"};
	for (int j = 0; j < 10; j++) {	/* P V on mma.sync (1), on wgmma (2) */
		int i = j % 5;
		setenv("TINYC_ATTN_WGMMA", j < 5 ? "1" : "2", 1);
		char path[1024];
		snprintf(path, sizeof(path), "%s/tests/lit/attention/%s", TINYC_SOURCE_DIR, files[i]);
		tinyc_ctx *ctx = tinyc_ctx_alloc();
		compiled c;
		int rc = compile(ctx, path, NULL, "sm_90a", &c);
		if (rc != 0)
			dump_diags(ctx);
		cr_assert_eq(rc, 0, "%s: compile failed", files[i]);
		tinyc_buf text = {0};
		expect_nvrtc(ctx, &c, files[i], "sm_90a", &text);
		cr_expect(strstr(text.data, "wgmma.mma_async.sync.aligned.m64n64k16") != NULL, "%s: no wgmma", files[i]);
		tinyc_buf_free(&text);
		compiled_free(&c);
		tinyc_ctx_free(ctx);
	}
	unsetenv("TINYC_ATTN_WGMMA");
}

/* TANH (the op added through the op table's checklist) compiles with nvrtc for sm_80 and
 * sm_90a, elementwise and in a matmul epilogue (the wgmma template on sm_90a, whose sizes
 * are bound), as a call of CUDA's tanhf. */
Test(codegen, nvrtc_compiles_tanh_for_sm80_and_sm90a, .timeout = 300)
{
	if (tinyc_nvrtc_version() < 0)
		cr_skip_test("nvrtc is not available");
	const char *files[] = {"run/tanh.uop", "evt/tanh-epilogue.uop"};
	const char *binds[] = {"N=1000", "M=128,N=256,K=192"};
	const char *targets[] = {"sm_80", "sm_90a"};
	for (int i = 0; i < 2; i++)
		for (int t = 0; t < 2; t++) {
			char path[1024];
			snprintf(path, sizeof(path), "%s/tests/lit/%s", TINYC_SOURCE_DIR, files[i]);
			tinyc_ctx *ctx = tinyc_ctx_alloc();
			compiled c;
			int rc = compile(ctx, path, binds[i], targets[t], &c);
			if (rc != 0)
				dump_diags(ctx);
			cr_assert_eq(rc, 0, "%s: compile failed for %s", files[i], targets[t]);
			tinyc_buf text = {0};
			expect_nvrtc(ctx, &c, files[i], targets[t], &text);
			cr_expect(strstr(text.data, "tanhf(") != NULL, "%s: no tanhf call", files[i]);
			if (i == 1 && t == 1)
				cr_expect(strstr(text.data, "wgmma") != NULL, "no wgmma kernel on sm_90a");
			tinyc_buf_free(&text);
			compiled_free(&c);
			tinyc_ctx_free(ctx);
		}
}

/* ------------------------------------------------------------ interpreter ---- */

/* Tolerances for comparing an output of dtype dt after a reduction of extent r. */
static void tolerance(tinyc_dtype dt, double *atol, double *rtol)
{
	switch (dt) {
	case TINYC_HALF: *atol = 2e-3, *rtol = 2e-3; break;
	case TINYC_BFLOAT16: *atol = 1.6e-2, *rtol = 1.6e-2; break;
	case TINYC_FLOAT: *atol = 1e-4, *rtol = 1e-4; break;
	case TINYC_DOUBLE: *atol = 1e-10, *rtol = 1e-10; break;
	default: *atol = 0, *rtol = 0; break;
	}
}

/* Elements of work the interpreter would do for schedule s (a cap keeps CI fast). */
static double work(const tinyc_schedule *s)
{
	double w = 0;
	for (int i = 0; i < s->nkern; i++) {
		const tinyc_skernel *k = &s->kerns[i];
		const tinyc_plan *p = tinyc_skernel_plan(k);
		/* a row group: each reduction once per row element (a row output has them all, one
		 * value per row has rows x C) */
		if (p && p->kind == TINYC_PLAN_ROWFUSE)
			w += (k->out_elems > k->red_elems ? k->out_elems : k->out_elems * k->red_elems) *
			     (k->nred + 1);
		else
			w += k->out_elems * k->red_elems;
	}
	return w;
}

/* Run path with symbol values `bind` ("M=7,N=3"): reference vs GPU IR interpreter, with the
 * sizes bound at compile time (bound = 1) or only at run time (bound = 0).
 * Returns 1 when checked, 0 when skipped (invalid binding, more than max_work elements of
 * work), -1 on failure. */
static int check_interp(const char *path, const char *bind, int bound, uint64_t seed,
			double max_work)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	compiled c;
	int rc = compile(ctx, path, bound ? bind : NULL, "sm_80", &c);
	int result = 0;
	tinyc_bindings *rb = NULL;
	tinyc_io ref = {0}, got = {0};
	tinyc_tensor **in = NULL;
	if (rc == 1)
		goto out;
	if (rc < 0) {
		dump_diags(ctx);
		result = -1;
		goto out;
	}
	/* the run-time values, checked as the reference needs them */
	rb = tinyc_bindings_alloc(ctx, c.g);
	if (!rb || tinyc_bindings_parse(ctx, c.g, bind, rb) < 0 || tinyc_verify(ctx, c.g, rb) < 0)
		goto out;
	for (int i = 0; i < rb->n; i++)
		if (rb->val[i] < 0)
			goto out;
	if (!bound) {	/* estimate the work with the run-time values */
		compiled w;
		tinyc_ctx *wctx = tinyc_ctx_alloc();
		int wrc = compile(wctx, path, bind, "sm_80", &w);
		double wk = wrc == 0 ? work(w.s) : 1e99;
		compiled_free(&w);
		tinyc_ctx_free(wctx);
		if (wk > max_work)
			goto out;
	} else if (work(c.s) > max_work) {
		goto out;
	}
	int nin = 0;
	if (!(in = graph_inputs(ctx, c.g, rb, seed, &nin)))
		goto out;
	ref.nin = got.nin = nin;
	ref.in = got.in = in;
	if (tinyc_eval(ctx, c.g, rb, &ref) < 0)
		goto out;	/* the reference refuses (too large, unsupported): nothing to compare */
	int64_t *sym = calloc((size_t)c.g->nsym + 1, sizeof(int64_t));
	for (int i = 0; i < c.g->nsym; i++)
		sym[i] = rb->val[i];
	int irc = tinyc_gpu_run_interp(ctx, c.gm, sym, &got);
	free(sym);
	if (irc < 0) {
		dump_diags(ctx);
		result = -1;
		goto out;
	}
	result = 1;
	for (int o = 0; o < ref.nout; o++) {
		double atol, rtol;
		tolerance(ref.out[o]->dtype, &atol, &rtol);
		tinyc_cmp cmp;
		if (tinyc_tensor_compare(ctx, got.out[o], ref.out[o], atol, rtol, &cmp) < 0 || cmp.mismatched) {
			fprintf(stderr, "%s [%s, %s]: output %d differs: %lld mismatched, max |diff| %g at %lld\n",
				path, bind, bound ? "bound" : "symbolic", o, (long long)cmp.mismatched,
				cmp.max_abs, (long long)cmp.worst);
			dump_diags(ctx);
			result = -1;
		}
	}
out:
	tinyc_io_clear_outputs(&ref);
	tinyc_io_clear_outputs(&got);
	for (int i = 0; in && i < ref.nin; i++)
		tinyc_tensor_free(in[i]);
	free(in);
	tinyc_bindings_free(rb);
	compiled_free(&c);
	tinyc_ctx_free(ctx);
	return result;
}

/* "A=v0,B=v1,..." for the graph's symbols, value i from vals (cycled). */
static int bind_string(const char *path, const int64_t *vals, int nv, char *out, size_t size,
		       int *nsym)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_source *src = tinyc_source_read(ctx, path);
	tinyc_graph *g = src ? tinyc_parse(ctx, src) : NULL;
	size_t len = 0;
	out[0] = 0;
	*nsym = g ? g->nsym : -1;
	for (int i = 0; g && i < g->nsym; i++)
		len += (size_t)snprintf(out + len, size - len, "%s%s=%lld", i ? "," : "", g->syms[i],
					(long long)vals[i % nv]);
	tinyc_graph_free(g);
	tinyc_source_free(src);
	tinyc_ctx_free(ctx);
	return *nsym >= 0 ? 0 : -1;
}

Test(codegen, interpreter_matches_reference_on_every_graph, .timeout = 1800)
{
	char **files;
	int n = graph_files(TINYC_SOURCE_DIR, &files), checked = 0, failed = 0, graphs = 0;
	/* binding sets: tails (1, 7, 127) on the first symbols, mixed sizes */
	static const int64_t sets[][4] = {
		{1, 1, 1, 1}, {7, 7, 7, 7}, {127, 5, 3, 2}, {3, 127, 5, 2}, {16, 9, 33, 4},
	};
	for (int i = 0; i < n; i++) {
		int any = 0;
		for (size_t s = 0; s < sizeof(sets) / sizeof(*sets); s++) {
			char bind[512];
			int nsym;
			if (bind_string(files[i], sets[s], 4, bind, sizeof(bind), &nsym) < 0)
				break;
			for (int bound = 0; bound < 2; bound++) {
				int r = check_interp(files[i], bind, bound, 17 + s, 2e5);
				checked += r > 0;
				failed += r < 0;
				any |= r > 0;
				cr_expect_geq(r, 0, "%s [%s] %s", files[i], bind, bound ? "bound" : "symbolic");
			}
			if (nsym == 0)
				break;	/* no symbols: one binding set is all there is */
		}
		graphs += any;
	}
	graph_files_free(files, n);
	fprintf(stderr, "interpreter: %d runs checked on %d graphs, %d failed\n", checked, graphs, failed);
	cr_expect_geq(graphs, 25, "only %d graphs checked", graphs);
}

/* Larger tails for the examples: 1000 and 4097 along one symbol. */
Test(codegen, interpreter_tails_on_examples, .timeout = 900)
{
	const char *cases[][2] = {
		{"softmax.uop", "N=3,C=4097"},
		{"softmax.uop", "N=1000,C=7"},
		{"transpose.uop", "M=1000,N=3"},
		{"mean_pool16.uop", "B=1000"},
		{"matmul_bias_relu.uop", "M=7,N=127,K=33"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/examples/%s", TINYC_SOURCE_DIR, cases[i][0]);
		for (int bound = 0; bound < 2; bound++)
			cr_expect_eq(check_interp(path, cases[i][1], bound, 5, 2e6), 1, "%s [%s] %s", cases[i][0],
				     cases[i][1], bound ? "bound" : "symbolic");
	}
}

/* ---------------------------------------------------------- partition ---- */

/* Compile a graph given as text; returns the schedule (caller frees with compiled_free). */
static int compile_text(tinyc_ctx *ctx, const char *text, const char *bind, compiled *c)
{
	char path[] = "/tmp/tinyc_test_codegen_XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	FILE *f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	int rc = compile(ctx, path, bind, "sm_80", c);
	remove(path);
	return rc;
}

Test(codegen, softmax_plain_partition_gets_three_kernels_and_two_temporaries)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	compiled c;
	cr_assert_eq(compile(ctx, TINYC_SOURCE_DIR "/examples/softmax.uop", NULL, "sm_80", &c), 0);
	tinyc_schedule *s = tinyc_partition(ctx, c.g, c.b);
	cr_assert(s);
	cr_assert_eq(tinyc_schedule_set_device(ctx, s, "sm_80"), 0);
	cr_assert_eq(tinyc_schedule_plan(ctx, s), 0);
	cr_assert_eq(s->nkern, 3);
	int temps = 0;
	for (int i = 0; i < s->nbuf; i++)
		temps += s->bufs[i].role == TINYC_SB_TEMP;
	cr_expect_eq(temps, 2);
	/* max, then sum (reads the max), then normalise (reads both) */
	cr_expect_eq(c.g->nodes[s->kerns[0].root].redop, TINYC_RED_MAX);
	cr_expect_eq(c.g->nodes[s->kerns[1].root].redop, TINYC_RED_ADD);
	cr_expect_eq(s->kerns[1].nin, 2);
	cr_expect_eq(s->kerns[2].nin, 3);
	/* a row reduction over a contiguous axis of 1024 is planned block-cooperative */
	cr_expect_eq(tinyc_skernel_plan(&s->kerns[0])->kind, TINYC_PLAN_ROWRED);
	tinyc_schedule_free(s);
	compiled_free(&c);
	tinyc_ctx_free(ctx);
}

/* The schedule keeps softmax as one row group: one ROWFUSE kernel reading X once, no
 * temporaries, both reductions in it. */
Test(codegen, softmax_row_group_is_one_kernel)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	compiled c;
	cr_assert_eq(compile(ctx, TINYC_SOURCE_DIR "/examples/softmax.uop", NULL, "sm_80", &c), 0);
	cr_assert_eq(c.s->nkern, 1);
	cr_expect_eq(c.s->nbuf, 2);
	cr_expect_eq(c.s->kerns[0].nin, 1);
	cr_expect_eq(c.s->kerns[0].nred, 2);
	cr_expect_eq(tinyc_skernel_plan(&c.s->kerns[0])->kind, TINYC_PLAN_ROWFUSE);
	cr_assert(c.s->rowfuse);
	cr_assert_eq(c.s->rowfuse->ngroup, 1);
	cr_expect(c.s->rowfuse->groups[0].fused);
	cr_expect_lt(c.s->rowfuse->groups[0].fused_us, c.s->rowfuse->groups[0].split_us);
	compiled_free(&c);
	tinyc_ctx_free(ctx);
}

/* Row-group kernels compile with nvrtc for sm_80 and sm_90a: softmax (rows in registers,
 * and re-read with symbolic sizes), LayerNorm+softmax (four reductions), and the half
 * LayerNorm+softmax with float sums. */
Test(codegen, rowfuse_kernels_compile_for_sm80_and_sm90a, .timeout = 300)
{
	if (tinyc_nvrtc_version() < 0)
		cr_skip_test("nvrtc is not available");
	const char *cases[][2] = {
		{TINYC_SOURCE_DIR "/examples/softmax.uop", "N=64,C=1000"},
		{TINYC_SOURCE_DIR "/examples/softmax.uop", NULL},
		{TINYC_SOURCE_DIR "/examples/layernorm_softmax.uop", "N=16384"},
		{TINYC_SOURCE_DIR "/tests/lit/run/rowfuse-layernorm-softmax-half.uop", "N=9"},
	};
	const char *targets[] = {"sm_80", "sm_90a"};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
		for (int t = 0; t < 2; t++) {
			tinyc_ctx *ctx = tinyc_ctx_alloc();
			compiled c;
			int rc = compile(ctx, cases[i][0], cases[i][1], targets[t], &c);
			if (rc)
				dump_diags(ctx);
			cr_assert_eq(rc, 0, "%s [%s]", cases[i][0], targets[t]);
			cr_assert_eq(c.s->nkern, 1, "%s: one row-group kernel", cases[i][0]);
			cr_expect_eq(tinyc_skernel_plan(&c.s->kerns[0])->kind, TINYC_PLAN_ROWFUSE);
			tinyc_buf text = {0};
			cr_assert_eq(tinyc_cuda_print(ctx, c.gm, &text), 0);
			tinyc_blob blob = {0};
			int nrc = tinyc_nvrtc_compile(ctx, text.data, "rowfuse.cu", targets[t], 1, &blob);
			if (nrc < 0) {
				dump_diags(ctx);
				fprintf(stderr, "%s\n", text.data);
			}
			cr_expect_eq(nrc, 0, "%s: nvrtc failed for %s", cases[i][0], targets[t]);
			tinyc_blob_clear(&blob);
			tinyc_buf_free(&text);
			compiled_free(&c);
			tinyc_ctx_free(ctx);
		}
}

Test(codegen, matmul_bias_relu_is_one_fused_kernel)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	compiled c;
	cr_assert_eq(compile(ctx, TINYC_SOURCE_DIR "/examples/matmul_bias_relu.uop", NULL, "sm_80", &c), 0);
	cr_assert_eq(c.s->nkern, 1);
	cr_expect_eq(c.s->kerns[0].nred, 1);
	cr_expect_eq(c.s->kerns[0].nin, 3);
	compiled_free(&c);
	tinyc_ctx_free(ctx);
}

Test(codegen, reduce_used_twice_is_materialised)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	compiled c;
	const char *text =
		"%0 = BUFFER(slot=0, name=\"X\") : float[M,N]\n"
		"%1 = REDUCE(%0, op=ADD, axes=[1], keepdim=false) : float[M]\n"
		"%2 = MUL(%1, %1) : float[M]\n"
		"%3 = OUTPUT(%2, name=\"Y\") : float[M]\n"
		"%4 = OUTPUT(%1, name=\"S\") : float[M]\n";
	cr_assert_eq(compile_text(ctx, text, NULL, &c), 0);
	cr_expect_eq(c.s->nkern, 3, "the reduction, Y, and S");
	cr_expect_geq(c.s->node_buf[1], 0);
	compiled_free(&c);
	tinyc_ctx_free(ctx);
}

/* 65536 column sums of 16 rows: a thread per column reads coalesced rows; a block per
 * column would read one element per sector and leave half its lanes idle. */
Test(codegen, short_column_reduction_prefers_thread_per_output)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	compiled c;
	const char *text =
		"%0 = BUFFER(slot=0, name=\"X\") : float[16,65536]\n"
		"%1 = REDUCE(%0, op=ADD, axes=[0]) : float[1,65536]\n"
		"%2 = OUTPUT(%1, name=\"Y\") : float[1,65536]\n";
	cr_assert_eq(compile_text(ctx, text, NULL, &c), 0);
	cr_assert_eq(c.s->nkern, 1);
	cr_expect_eq(tinyc_skernel_plan(&c.s->kerns[0])->kind, TINYC_PLAN_MAP);
	cr_expect_eq(tinyc_skernel_plan(&c.s->kerns[0])->index_dtype, TINYC_INT);
	compiled_free(&c);
	tinyc_ctx_free(ctx);
}

/* ------------------------------------------------------------ GPU IR ---- */

Test(gpuir, builder_folds_integer_constants_and_identities)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_gpu_module *m = tinyc_gpu_module_alloc(ctx);
	tinyc_gkernel *k = tinyc_gk_alloc(m, "k");
	int v = tinyc_gk_reg(k, "x", TINYC_INT);
	tinyc_gexpr *x = tinyc_gx_var(k, v);
	tinyc_gexpr *e = tinyc_gx_binary(k, TINYC_GX_ADD, tinyc_gx_int(k, TINYC_INT, 2),
					 tinyc_gx_int(k, TINYC_INT, 3));
	cr_expect(tinyc_gx_is_int(e, 5));
	cr_expect_eq(tinyc_gx_binary(k, TINYC_GX_MUL, x, tinyc_gx_int(k, TINYC_INT, 1)), x);
	cr_expect(tinyc_gx_is_int(tinyc_gx_binary(k, TINYC_GX_MUL, x, tinyc_gx_int(k, TINYC_INT, 0)), 0));
	cr_expect(tinyc_gx_is_int(tinyc_gx_binary(k, TINYC_GX_FLOORDIV, tinyc_gx_int(k, TINYC_INT, -7),
						  tinyc_gx_int(k, TINYC_INT, 2)), -4));
	cr_expect(tinyc_gx_is_int(tinyc_gx_int(k, TINYC_CHAR, 200), -56), "wrapped to char");
	/* floats are not folded: x + 0.0 is not x for x = -0.0 */
	int f = tinyc_gk_reg(k, "f", TINYC_FLOAT);
	tinyc_gexpr *fx = tinyc_gx_var(k, f);
	cr_expect_neq(tinyc_gx_binary(k, TINYC_GX_ADD, fx, tinyc_gx_float(k, TINYC_FLOAT, 0)), fx);
	/* names are sanitised and unique */
	int a = tinyc_gk_reg(k, "int", TINYC_INT), b = tinyc_gk_reg(k, "x", TINYC_INT);
	cr_expect_str_eq(k->vars[a].name, "int_");
	cr_expect_str_eq(k->vars[b].name, "x_2");
	int c = tinyc_gk_reg(k, "my tensor!", TINYC_INT);
	cr_expect_str_eq(k->vars[c].name, "my_tensor_");
	tinyc_gpu_module_free(m);
	tinyc_ctx_free(ctx);
}

/* A kernel with a barrier under a thread-dependent branch. */
Test(gpuir, verifier_rejects_divergent_barrier_and_bad_types)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_gpu_module *m = tinyc_gpu_module_alloc(ctx);
	tinyc_gkernel *k = tinyc_gk_alloc(m, "k");
	k->block[0] = 64;
	tinyc_gstmt *then = tinyc_gs_block(k);
	tinyc_gs_append(k, then, tinyc_gs_barrier(k));
	tinyc_gexpr *c = tinyc_gx_binary(k, TINYC_GX_LT, tinyc_gx_special(k, TINYC_GSP_TID_X),
					 tinyc_gx_int(k, TINYC_INT, 5));
	tinyc_gs_append(k, k->body, tinyc_gs_if(k, c, then, NULL));
	cr_expect_eq(tinyc_gpu_verify(ctx, m, 0), -1);
	cr_expect_eq(tinyc_ctx_error_count(ctx), 1);
	cr_expect(strstr(tinyc_ctx_diag(ctx, 0)->msg, "barrier") != NULL);
	tinyc_ctx_clear_diags(ctx);

	/* the same barrier under a block-uniform condition is fine */
	tinyc_gpu_module *m2 = tinyc_gpu_module_alloc(ctx);
	tinyc_gkernel *k2 = tinyc_gk_alloc(m2, "k2");
	tinyc_gstmt *then2 = tinyc_gs_block(k2);
	tinyc_gs_append(k2, then2, tinyc_gs_barrier(k2));
	tinyc_gexpr *c2 = tinyc_gx_binary(k2, TINYC_GX_LT, tinyc_gx_special(k2, TINYC_GSP_BID_X),
					  tinyc_gx_int(k2, TINYC_INT, 5));
	tinyc_gs_append(k2, k2->body, tinyc_gs_if(k2, c2, then2, NULL));
	cr_expect_eq(tinyc_gpu_verify(ctx, m2, 0), 0);

	/* mixed dtypes, use before definition, store through a const pointer */
	tinyc_gpu_module *m3 = tinyc_gpu_module_alloc(ctx);
	tinyc_gkernel *k3 = tinyc_gk_alloc(m3, "k3");
	int p = tinyc_gk_param_ptr(k3, "X", TINYC_FLOAT, 1, -1);
	int r = tinyc_gk_reg(k3, "r", TINYC_FLOAT);
	tinyc_gs_append(k3, k3->body, tinyc_gs_store(k3, p, tinyc_gx_int(k3, TINYC_INT, 0),
						     tinyc_gx_binary(k3, TINYC_GX_ADD, tinyc_gx_var(k3, r),
								     tinyc_gx_int(k3, TINYC_INT, 1)), NULL));
	cr_expect_eq(tinyc_gpu_verify(ctx, m3, 0), -1);
	int n = tinyc_ctx_error_count(ctx), dt = 0, def = 0, cst = 0;
	for (int i = 0; i < n; i++) {
		const char *msg = tinyc_ctx_diag(ctx, i)->msg;
		dt |= strstr(msg, "differ in dtype") != NULL;
		def |= strstr(msg, "before definition") != NULL;
		cst |= strstr(msg, "const pointer") != NULL;
	}
	cr_expect(dt && def && cst, "dtype %d, definition %d, const %d", dt, def, cst);
	tinyc_gpu_module_free(m);
	tinyc_gpu_module_free(m2);
	tinyc_gpu_module_free(m3);
	tinyc_ctx_free(ctx);
}

/* Clusters (sm_90): a cluster barrier may sit under a warp-uniform branch, not under a
 * lane-dependent one; a copy from a peer CTA's shared memory (mapa + ld.shared::cluster)
 * goes into a register array, unpredicated, and needs a kernel of clusters. */
Test(gpuir, cluster_barrier_and_remote_copy)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_gpu_module *m = tinyc_gpu_module_alloc(ctx);
	m->arch_major = 9;
	tinyc_gkernel *k = tinyc_gk_alloc(m, "k");
	k->block[0] = 64;
	k->cluster_x = 2;
	int red = tinyc_gk_shared(k, "red", TINYC_FLOAT, 256, 16, 0);
	int part = tinyc_gk_reg_array(k, "part", TINYC_FLOAT, 4);
	tinyc_gexpr *tid = tinyc_gx_special(k, TINYC_GSP_TID_X);
	tinyc_gexpr *warp0 = tinyc_gx_binary(k, TINYC_GX_EQ, tinyc_gx_special(k, TINYC_GSP_WARP),
					     tinyc_gx_int(k, TINYC_INT, 0));
	tinyc_gstmt *w0 = tinyc_gs_block(k), *w1 = tinyc_gs_block(k);
	tinyc_gs_append(k, w0, tinyc_gs_cluster_barrier(k));
	tinyc_gs_append(k, w1, tinyc_gs_cluster_barrier(k));
	tinyc_gs_append(k, k->body, tinyc_gs_decl(k, part, NULL));
	tinyc_gs_append(k, k->body, tinyc_gs_if(k, warp0, w0, w1));
	tinyc_gs_append(k, k->body, tinyc_gs_copy_remote(k, part, tinyc_gx_int(k, TINYC_INT, 0), red,
							 tinyc_gx_binary(k, TINYC_GX_MUL, tid,
									 tinyc_gx_int(k, TINYC_INT, 4)),
							 4, tinyc_gx_int(k, TINYC_INT, 1)));
	cr_expect_eq(tinyc_gpu_verify(ctx, m, 0), 0);
	tinyc_buf text = {0};
	cr_assert_eq(tinyc_cuda_print(ctx, m, &text), 0);
	cr_expect(strstr(text.data, "mapa.shared::cluster.u32 ra, %4, %5; ld.shared::cluster.v4.f32 "
			 "{%0, %1, %2, %3}, [ra];") != NULL, "%s", text.data);
	tinyc_buf_free(&text);
	/* lane-dependent: refused; a remote copy without clusters: refused */
	tinyc_gpu_module *m2 = tinyc_gpu_module_alloc(ctx);
	m2->arch_major = 9;
	tinyc_gkernel *k2 = tinyc_gk_alloc(m2, "k2");
	k2->block[0] = 64;
	int red2 = tinyc_gk_shared(k2, "red", TINYC_FLOAT, 256, 16, 0);
	int part2 = tinyc_gk_reg_array(k2, "part", TINYC_FLOAT, 4);
	tinyc_gstmt *lane = tinyc_gs_block(k2);
	tinyc_gs_append(k2, lane, tinyc_gs_cluster_barrier(k2));
	tinyc_gs_append(k2, k2->body, tinyc_gs_decl(k2, part2, NULL));
	tinyc_gs_append(k2, k2->body, tinyc_gs_if(k2, tinyc_gx_binary(k2, TINYC_GX_LT,
		tinyc_gx_special(k2, TINYC_GSP_LANE), tinyc_gx_int(k2, TINYC_INT, 3)), lane, NULL));
	tinyc_gs_append(k2, k2->body, tinyc_gs_copy_remote(k2, part2, tinyc_gx_int(k2, TINYC_INT, 0), red2,
							   tinyc_gx_int(k2, TINYC_INT, 0), 4,
							   tinyc_gx_int(k2, TINYC_INT, 1)));
	cr_expect_eq(tinyc_gpu_verify(ctx, m2, 0), -1);
	int lanes = 0, nocl = 0;
	for (int i = 0; i < tinyc_ctx_error_count(ctx); i++) {
		const char *msg = tinyc_ctx_diag(ctx, i)->msg;
		lanes |= strstr(msg, "cluster barrier under a lane-dependent branch") != NULL;
		nocl |= strstr(msg, "remote copy needs sm_90 and a cluster") != NULL;
	}
	cr_expect(lanes && nocl, "lane-dependent %d, no cluster %d", lanes, nocl);
	tinyc_gpu_module_free(m);
	tinyc_gpu_module_free(m2);
	tinyc_ctx_free(ctx);
}

/* Shuffles: a warp-wide xor butterfly sums 0..31 in every lane; up/down/idx move values. */
Test(gpuir, interpreter_shuffles)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_gpu_module *m = tinyc_gpu_module_alloc(ctx);
	tinyc_gbuf gb = {.name = "out", .role = TINYC_GB_OUTPUT, .dtype = TINYC_INT, .rank = 1,
			 .shape = {{128, -1}}};
	int buf = tinyc_gpu_add_buf(m, &gb);
	tinyc_gkernel *k = tinyc_gk_alloc(m, "k");
	k->block[0] = 32;
	int out = tinyc_gk_param_ptr(k, "out", TINYC_INT, 0, buf);
	int a = tinyc_gk_reg(k, "a", TINYC_INT), t = tinyc_gk_reg(k, "t", TINYC_INT);
	tinyc_gexpr *lane = tinyc_gx_special(k, TINYC_GSP_LANE);
	tinyc_gs_append(k, k->body, tinyc_gs_decl(k, a, lane));
	tinyc_gs_append(k, k->body, tinyc_gs_decl(k, t, NULL));
	for (int off = 16; off; off /= 2) {
		tinyc_gs_append(k, k->body, tinyc_gs_shfl(k, TINYC_GSHFL_XOR, t, tinyc_gx_var(k, a),
							  tinyc_gx_int(k, TINYC_INT, off), 32));
		tinyc_gs_append(k, k->body, tinyc_gs_assign(k, a, tinyc_gx_binary(k, TINYC_GX_ADD,
				tinyc_gx_var(k, a), tinyc_gx_var(k, t))));
	}
	tinyc_gs_append(k, k->body, tinyc_gs_store(k, out, lane, tinyc_gx_var(k, a), NULL));
	const tinyc_gshfl kinds[3] = {TINYC_GSHFL_UP, TINYC_GSHFL_DOWN, TINYC_GSHFL_IDX};
	for (int j = 0; j < 3; j++) {
		tinyc_gs_append(k, k->body, tinyc_gs_shfl(k, kinds[j], t, lane,
							  tinyc_gx_int(k, TINYC_INT, 3), 8));
		tinyc_gs_append(k, k->body, tinyc_gs_store(k, out,
				tinyc_gx_binary(k, TINYC_GX_ADD, lane, tinyc_gx_int(k, TINYC_INT, 32 * (j + 1))),
				tinyc_gx_var(k, t), NULL));
	}
	cr_assert_eq(tinyc_gpu_verify(ctx, m, 0), 0);
	int32_t data[128] = {0};
	void *bufs[1] = {data};
	int64_t elems[1] = {128};
	tinyc_gpu_mem mem = {bufs, elems, NULL};
	cr_assert_eq(tinyc_gpu_interp(ctx, m, k, &mem), 0);
	for (int i = 0; i < 32; i++) {
		cr_expect_eq(data[i], 496, "lane %d sum", i);
		int seg = i & ~7, w = i - seg;
		cr_expect_eq(data[32 + i], w >= 3 ? i - 3 : i, "up, lane %d", i);
		cr_expect_eq(data[64 + i], w + 3 < 8 ? i + 3 : i, "down, lane %d", i);
		cr_expect_eq(data[96 + i], seg + 3, "idx, lane %d", i);
	}
	tinyc_gpu_module_free(m);
	tinyc_ctx_free(ctx);
}

/* ldmatrix + mma.m16n8k16 on a 16x16 A (row-major in shared) and 16x8 B (stored as B^T,
 * 8x16 row-major, so ldmatrix without .trans gives the column fragment), plus C, against
 * a plain triple loop. */
Test(gpuir, interpreter_ldmatrix_mma_matches_a_matrix_product)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_gpu_module *m = tinyc_gpu_module_alloc(ctx);
	tinyc_gbuf ga = {.name = "A", .role = TINYC_GB_INPUT, .dtype = TINYC_HALF, .rank = 1, .shape = {{256, -1}}};
	tinyc_gbuf gbt = {.name = "Bt", .role = TINYC_GB_INPUT, .index = 1, .dtype = TINYC_HALF, .rank = 1,
			  .shape = {{128, -1}}};
	tinyc_gbuf gd = {.name = "D", .role = TINYC_GB_OUTPUT, .dtype = TINYC_FLOAT, .rank = 1, .shape = {{128, -1}}};
	int ba = tinyc_gpu_add_buf(m, &ga), bb = tinyc_gpu_add_buf(m, &gbt), bd = tinyc_gpu_add_buf(m, &gd);
	tinyc_gkernel *k = tinyc_gk_alloc(m, "mma");
	k->block[0] = 32;
	int pa = tinyc_gk_param_ptr(k, "A", TINYC_HALF, 1, ba);
	int pb = tinyc_gk_param_ptr(k, "Bt", TINYC_HALF, 1, bb);
	int pd = tinyc_gk_param_ptr(k, "D", TINYC_FLOAT, 0, bd);
	int sa = tinyc_gk_shared(k, "As", TINYC_HALF, 256, 16, 0);
	int sb = tinyc_gk_shared(k, "Bs", TINYC_HALF, 128, 16, 1);
	int fa = tinyc_gk_reg_array(k, "fa", TINYC_UINT, 4);
	int fb = tinyc_gk_reg_array(k, "fb", TINYC_HALF, 4);
	int fc = tinyc_gk_reg_array(k, "fc", TINYC_FLOAT, 4);
	int i = tinyc_gk_reg(k, "i", TINYC_INT);
	tinyc_gexpr *lane = tinyc_gx_special(k, TINYC_GSP_LANE);
	tinyc_gexpr *I = tinyc_gx_var(k, i);
	/* cooperative copy into shared memory: 8 + 4 elements per lane */
	tinyc_gstmt *cp = tinyc_gs_block(k);
	tinyc_gexpr *ia = tinyc_gx_binary(k, TINYC_GX_ADD, tinyc_gx_binary(k, TINYC_GX_MUL, lane,
				tinyc_gx_int(k, TINYC_INT, 8)), I);
	tinyc_gs_append(k, cp, tinyc_gs_copy(k, sa, ia, pa, ia, 1, NULL, 0));
	tinyc_gs_append(k, k->body, tinyc_gs_for_range(k, i, tinyc_gx_int(k, TINYC_INT, 0),
						       tinyc_gx_int(k, TINYC_INT, 8),
						       tinyc_gx_int(k, TINYC_INT, 1), -1, cp));
	tinyc_gexpr *ib4 = tinyc_gx_binary(k, TINYC_GX_MUL, lane, tinyc_gx_int(k, TINYC_INT, 4));
	tinyc_gs_append(k, k->body, tinyc_gs_copy(k, sb, ib4, pb, ib4, 4, NULL, 0));
	tinyc_gs_append(k, k->body, tinyc_gs_barrier(k));
	tinyc_gs_append(k, k->body, tinyc_gs_decl(k, fa, NULL));
	tinyc_gs_append(k, k->body, tinyc_gs_decl(k, fb, NULL));
	/* A: x4; lane l addresses row (l % 16), column block 8 * (l / 16) */
	tinyc_gexpr *row = tinyc_gx_binary(k, TINYC_GX_MOD, lane, tinyc_gx_int(k, TINYC_INT, 16));
	tinyc_gexpr *colb = tinyc_gx_binary(k, TINYC_GX_MUL, tinyc_gx_binary(k, TINYC_GX_DIV, lane,
					     tinyc_gx_int(k, TINYC_INT, 16)), tinyc_gx_int(k, TINYC_INT, 8));
	tinyc_gs_append(k, k->body, tinyc_gs_ldmatrix(k, fa, tinyc_gx_int(k, TINYC_INT, 0), sa,
			tinyc_gx_binary(k, TINYC_GX_ADD, tinyc_gx_binary(k, TINYC_GX_MUL, row,
					tinyc_gx_int(k, TINYC_INT, 16)), colb), 4, 0));
	/* B^T (8 x 16): x2; lane l < 16 addresses row (l % 8), column block 8 * (l / 8) */
	tinyc_gexpr *rowb = tinyc_gx_binary(k, TINYC_GX_MOD, lane, tinyc_gx_int(k, TINYC_INT, 8));
	tinyc_gexpr *colbb = tinyc_gx_binary(k, TINYC_GX_MUL, tinyc_gx_binary(k, TINYC_GX_MOD,
				tinyc_gx_binary(k, TINYC_GX_DIV, lane, tinyc_gx_int(k, TINYC_INT, 8)),
				tinyc_gx_int(k, TINYC_INT, 2)), tinyc_gx_int(k, TINYC_INT, 8));
	tinyc_gs_append(k, k->body, tinyc_gs_ldmatrix(k, fb, tinyc_gx_int(k, TINYC_INT, 0), sb,
			tinyc_gx_binary(k, TINYC_GX_ADD, tinyc_gx_binary(k, TINYC_GX_MUL, rowb,
					tinyc_gx_int(k, TINYC_INT, 16)), colbb), 2, 0));
	tinyc_gs_append(k, k->body, tinyc_gs_decl(k, fc, tinyc_gx_float(k, TINYC_FLOAT, 0.5)));
	tinyc_gs_append(k, k->body, tinyc_gs_mma(k, fc, tinyc_gx_int(k, TINYC_INT, 0), fa,
			tinyc_gx_int(k, TINYC_INT, 0), fb, tinyc_gx_int(k, TINYC_INT, 0), fc,
			tinyc_gx_int(k, TINYC_INT, 0)));
	/* D row-major 16 x 8 from the accumulator fragment */
	tinyc_gexpr *g = tinyc_gx_binary(k, TINYC_GX_DIV, lane, tinyc_gx_int(k, TINYC_INT, 4));
	tinyc_gexpr *q2 = tinyc_gx_binary(k, TINYC_GX_MUL, tinyc_gx_binary(k, TINYC_GX_MOD, lane,
				tinyc_gx_int(k, TINYC_INT, 4)), tinyc_gx_int(k, TINYC_INT, 2));
	for (int e = 0; e < 4; e++) {
		tinyc_gexpr *r = tinyc_gx_binary(k, TINYC_GX_ADD, g, tinyc_gx_int(k, TINYC_INT, e >= 2 ? 8 : 0));
		tinyc_gexpr *cc = tinyc_gx_binary(k, TINYC_GX_ADD, q2, tinyc_gx_int(k, TINYC_INT, e % 2));
		tinyc_gexpr *off = tinyc_gx_binary(k, TINYC_GX_ADD, tinyc_gx_binary(k, TINYC_GX_MUL, r,
					tinyc_gx_int(k, TINYC_INT, 8)), cc);
		tinyc_gs_append(k, k->body, tinyc_gs_store(k, pd, off,
				tinyc_gx_load(k, fc, tinyc_gx_int(k, TINYC_INT, e), NULL), NULL));
	}
	int vrc = tinyc_gpu_verify(ctx, m, 0);
	if (vrc < 0)
		dump_diags(ctx);
	cr_assert_eq(vrc, 0);
	uint16_t A[256], Bt[128];
	float D[128], Af[256], Bf[128];
	for (int x = 0; x < 256; x++) {
		Af[x] = (float)((x * 7) % 13 - 6) / 4.0f;
		A[x] = tinyc_f32_to_f16(Af[x]);
	}
	for (int x = 0; x < 128; x++) {
		Bf[x] = (float)((x * 5) % 11 - 5) / 8.0f;
		Bt[x] = tinyc_f32_to_f16(Bf[x]);
	}
	void *bufs[3] = {A, Bt, D};
	int64_t elems[3] = {256, 128, 128};
	tinyc_gpu_mem mem = {bufs, elems, NULL};
	cr_assert_eq(tinyc_gpu_interp(ctx, m, k, &mem), 0);
	if (tinyc_ctx_error_count(ctx))
		dump_diags(ctx);
	for (int r = 0; r < 16; r++)
		for (int c = 0; c < 8; c++) {
			double want = 0.5;
			for (int kk = 0; kk < 16; kk++)
				want += (double)Af[r * 16 + kk] * Bf[c * 16 + kk];
			cr_expect_float_eq(D[r * 8 + c], want, 1e-6, "D[%d][%d]", r, c);
		}
	tinyc_buf text = {0};
	cr_assert_eq(tinyc_cuda_print(ctx, m, &text), 0);
	if (tinyc_nvrtc_version() >= 0) {
		tinyc_blob blob = {0};
		int rc = tinyc_nvrtc_compile(ctx, text.data, "mma.cu", "sm_80", 1, &blob);
		if (rc < 0) {
			dump_diags(ctx);
			fprintf(stderr, "%s", text.data);
		}
		cr_expect_eq(rc, 0, "the mma kernel compiles for sm_80");
		tinyc_blob_clear(&blob);
	}
	tinyc_buf_free(&text);
	tinyc_gpu_module_free(m);
	tinyc_ctx_free(ctx);
}

/* An out-of-bounds store and a divergent barrier are caught at run time. */
Test(gpuir, interpreter_reports_out_of_bounds_and_barrier_divergence)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_gpu_module *m = tinyc_gpu_module_alloc(ctx);
	tinyc_gbuf gb = {.name = "out", .role = TINYC_GB_OUTPUT, .dtype = TINYC_FLOAT, .rank = 1,
			 .shape = {{16, -1}}};
	int buf = tinyc_gpu_add_buf(m, &gb);
	tinyc_gkernel *k = tinyc_gk_alloc(m, "oob");
	k->block[0] = 32;
	int out = tinyc_gk_param_ptr(k, "out", TINYC_FLOAT, 0, buf);
	tinyc_gs_append(k, k->body, tinyc_gs_store(k, out, tinyc_gx_special(k, TINYC_GSP_TID_X),
						   tinyc_gx_float(k, TINYC_FLOAT, 1), NULL));
	float data[16];
	void *bufs[1] = {data};
	int64_t elems[1] = {16};
	tinyc_gpu_mem mem = {bufs, elems, NULL};
	cr_expect_eq(tinyc_gpu_interp(ctx, m, k, &mem), -1);
	cr_expect(strstr(tinyc_ctx_diag(ctx, 0)->msg, "out of bounds") != NULL);
	tinyc_ctx_clear_diags(ctx);

	tinyc_gkernel *k2 = tinyc_gk_alloc(m, "div");
	k2->block[0] = 64;
	tinyc_gstmt *then = tinyc_gs_block(k2);
	tinyc_gs_append(k2, then, tinyc_gs_barrier(k2));
	tinyc_gs_append(k2, k2->body, tinyc_gs_if(k2, tinyc_gx_binary(k2, TINYC_GX_LT,
			tinyc_gx_special(k2, TINYC_GSP_TID_X), tinyc_gx_int(k2, TINYC_INT, 40)), then, NULL));
	cr_expect_eq(tinyc_gpu_interp(ctx, m, k2, &mem), -1);
	cr_expect(strstr(tinyc_ctx_diag(ctx, 0)->msg, "barrier") != NULL);
	tinyc_gpu_module_free(m);
	tinyc_ctx_free(ctx);
}
