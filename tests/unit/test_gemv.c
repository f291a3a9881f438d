/* Unit tests of the small-M plans: gemv (sched/gemv.c, codegen/gemv.c) and split-K
 * (sched/splitk.c, codegen/splitk.c).  No GPU is needed: plans for the named targets, the
 * CUDA compiled to CUBIN with nvrtc.  The numerics are the lit tests
 * tests/lit/schedule/matmul-gemv.uop and matmul-splitk.uop (GPU IR interpreter against the
 * reference evaluator; the wgmma split plans on the GPU: docs/matmul-results.md).
 *
 *  - gemv_plan: chosen for decode shapes (M = 1, 4 against 4096 x 4096 / 11008 on sm_90a
 *    and sm_80), not for M = 8, 16 or 64, not for unbound sizes, not for a weight stored [N, K];
 *  - gemv_nvrtc: the CUDA of every column tile and unroll, at M = 1 and 4 with tails,
 *    compiles for sm_80 and sm_90a;
 *  - splitk: chosen for 16 x 4096 x 4096 on sm_90a (4 ways, two kernels), not for 16 x 11008
 *    x 4096 (86 tiles) nor 4096^3; the wgmma split plan compiles for sm_90a and the mma
 *    one for sm_80; a batched graph bound to B = 1 gets a wgmma plan that compiles;
 *  - splitk_dsmem: the split-K plan of 64 x 4096 x 4096 sums over a 2-CTA cluster (one
 *    kernel, codegen/splitk_dsmem.c) by default, that of 16 x 4096 x 4096 does not, nor
 *    either with TINYC_SPLITK_SUM=2; with TINYC_SPLITK_SUM=3 odd sizes (rows past M, 4-CTA
 *    clusters) do too, and every such plan compiles for sm_90a;
 *  - gemv_mma: the tensor-core gemv (sched/gemv_mma.c, not measured on a GPU) is never a
 *    candidate without TINYC_GEMV_MMA (M = 8 / 16 keep split-K wgmma), is one with it for
 *    2 <= M <= 32 (M = 1 only with TINYC_GEMV_MMA=2; not 33, not N % 8); its kernels, every slab width,
 *    warp count and unroll, fp16 and bf16, X by 8-byte or element loads, odd M, N and K,
 *    run on the GPU IR interpreter against the reference evaluator (a wrong A fragment,
 *    e.g. registers a2 a3 and a4 a5 exchanged, fails them) and compile with nvrtc for sm_80
 *    and sm_90a.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/gpu.h"
#include "ir/ctx.h"
#include "driver/module.h"
#include "driver/run.h"
#include "runtime/runtime.h"
#include "sched/matmul.h"
#include "sched/schedule.h"

#include "../common/graph_harness.h"

#define BIAS_RELU TINYC_SOURCE_DIR "/examples/matmul_bias_relu.uop"

/* A module of BIAS_RELU run up to `stage` for target and bind; 0 or -1. */
static int module_compile(tinyc_ctx *ctx, tinyc_source **src, tinyc_module **m, const char *target,
		   const char *bind, const char *stage)
{
	*src = tinyc_source_read(ctx, BIAS_RELU);
	cr_assert(*src);
	tinyc_options opt;
	memset(&opt, 0, sizeof(opt));
	opt.target = target;
	opt.bind = bind;
	*m = tinyc_module_alloc(ctx, *src, &opt);
	cr_assert(*m);
	return tinyc_module_run_until(*m, tinyc_pass_find(stage), 0, NULL);
}

/* Free a module of compile, its source and its context. */
static void module_free(tinyc_ctx *ctx, tinyc_source *src, tinyc_module *m)
{
	tinyc_module_free(m);
	tinyc_source_free(src);
	tinyc_ctx_free(ctx);
}

/* Compile m's CUDA text (m run up to "cuda") with nvrtc for target as file `name`; asserts
 * that it compiles (bind in the message).  The size of the binary. */
static size_t nvrtc_compile(tinyc_ctx *ctx, tinyc_module *m, const char *name, const char *target,
			    const char *bind)
{
	int n;
	tinyc_buf cu = {0};
	cr_assert_eq(tinyc_pipeline(&n)[tinyc_pass_find("cuda")].print(m, TINYC_FMT_TEXT, &cu), 0);
	tinyc_blob blob;
	memset(&blob, 0, sizeof(blob));
	int rc = tinyc_nvrtc_compile(ctx, cu.data, name, target, 1, &blob);
	if (rc < 0)
		tinyc_ctx_print_diags(ctx, stderr);
	cr_assert_eq(rc, 0, "%s for %s", bind, target);
	size_t size = blob.size;
	tinyc_blob_clear(&blob);
	tinyc_buf_free(&cu);
	return size;
}

/* The variant of the chosen plan of the first kernel, or -1 when it is not a matmul. */
static int chosen_variant(const char *target, const char *bind)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_source *src;
	tinyc_module *m;
	cr_assert_eq(module_compile(ctx, &src, &m, target, bind, "schedule"), 0, "%s", bind);
	const tinyc_schedule *s = tinyc_module_schedule(m);
	const tinyc_plan *p = tinyc_skernel_plan(&s->kerns[0]);
	int v = p && p->kind == TINYC_PLAN_MATMUL ? (int)((const tinyc_mm_plan *)p->ext)->t.variant : -1;
	module_free(ctx, src, m);
	return v;
}

Test(gemv_plan, chosen_for_decode_shapes)
{
	unsetenv("TINYC_MATMUL");
	unsetenv("TINYC_MATMUL_TILE");
	cr_assert_eq(chosen_variant("sm_90a", "M=1,N=4096,K=4096"), TINYC_MM_GEMV);
	/* 2 <= M <= 32 on sm_90a: the swap-AB wgmma plan (sched/swapab.c) since session 11 */
	cr_assert_eq(chosen_variant("sm_90a", "M=4,N=4096,K=11008"), TINYC_MM_WGMMA);
	cr_assert_eq(chosen_variant("sm_90a", "M=8,N=11008,K=4096"), TINYC_MM_WGMMA);
	cr_assert_eq(chosen_variant("sm_90a", "M=16,N=11008,K=4096"), TINYC_MM_WGMMA);
	cr_assert_eq(chosen_variant("sm_80", "M=1,N=4096,K=4096"), TINYC_MM_GEMV);
	cr_assert_eq(chosen_variant("sm_90a", "M=64,N=4096,K=4096"), TINYC_MM_WGMMA);
	/* N not a multiple of 8: no 16-byte vectors; M = 1 keeps the row reduction */
	cr_assert_eq(chosen_variant("sm_90a", "M=1,N=4095,K=4096"), -1);
	cr_assert_neq(chosen_variant("sm_90a", "M=2,N=4095,K=4096"), TINYC_MM_GEMV);
}

/* The tiles of the chosen plan of BIAS_RELU for target and bind (the current knobs), after
 * its CUDA compiled with nvrtc for the same target (asserted). */
static tinyc_mm_tiles compiled_tiles(const char *target, const char *bind)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_source *src;
	tinyc_module *m;
	cr_assert_eq(module_compile(ctx, &src, &m, target, bind, "cuda"), 0, "%s %s", bind, target);
	tinyc_mm_tiles t = ((const tinyc_mm_plan *)tinyc_skernel_plan(&tinyc_module_schedule(m)->kerns[0])->ext)->t;
	cr_assert(nvrtc_compile(ctx, m, "matmul.cu", target, bind) > 0);
	module_free(ctx, src, m);
	return t;
}

Test(gemv_nvrtc, every_tile_compiles, .timeout = 600)
{
	if (tinyc_nvrtc_version() < 0) {
		cr_skip_test("nvrtc is not available");
		return;
	}
	static const char *const tiles[] = {"0x16x0x2", "0x32x0x8", "0x64x0x4", "0x128x0x4"};
	static const char *const binds[] = {"M=1,N=200,K=333", "M=4,N=136,K=1001"};
	static const char *const archs[] = {"sm_80", "sm_90a"};
	setenv("TINYC_MATMUL", "gemv", 1);
	for (int t = 0; t < 4; t++)
		for (int b = 0; b < 2; b++)
			for (int a = 0; a < 2; a++) {
				setenv("TINYC_MATMUL_TILE", tiles[t], 1);
				cr_assert_eq(compiled_tiles(archs[a], binds[b]).variant, TINYC_MM_GEMV,
					     "%s %s", tiles[t], binds[b]);
			}
	unsetenv("TINYC_MATMUL");
	unsetenv("TINYC_MATMUL_TILE");
}

/* The number of the first kernel's matmul candidates (BIAS_RELU for target and bind, the
 * current knobs) whose tiles `is` accepts. */
static int count_candidates(const char *target, const char *bind, int (*is)(const tinyc_mm_tiles *))
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_source *src;
	tinyc_module *m;
	cr_assert_eq(module_compile(ctx, &src, &m, target, bind, "schedule"), 0, "%s", bind);
	const tinyc_skernel *k = &tinyc_module_schedule(m)->kerns[0];
	int n = 0;
	for (int i = 0; i < k->ncand; i++)
		n += k->cands[i].kind == TINYC_PLAN_MATMUL && is(&((const tinyc_mm_plan *)k->cands[i].ext)->t);
	module_free(ctx, src, m);
	return n;
}

/* The split of the chosen plan of the first kernel (0: none) and the module's kernels;
 * *fused (when not NULL) its tiles' split_fused. */
static int chosen_split_fused(const char *target, const char *bind, int *kernels, int nvrtc,
			      int *fused)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_source *src;
	tinyc_module *m;
	cr_assert_eq(module_compile(ctx, &src, &m, target, bind, nvrtc ? "cuda" : "gpuir"), 0, "%s", bind);
	const tinyc_schedule *s = tinyc_module_schedule(m);
	const tinyc_plan *p = tinyc_skernel_plan(&s->kerns[0]);
	cr_assert(p && p->kind == TINYC_PLAN_MATMUL);
	int split = ((const tinyc_mm_plan *)p->ext)->t.split;
	if (fused)
		*fused = ((const tinyc_mm_plan *)p->ext)->t.split_fused;
	int n;
	const tinyc_pass *pipe = tinyc_pipeline(&n);
	tinyc_buf ir = {0};
	cr_assert_eq(pipe[tinyc_pass_find("gpuir")].print(m, TINYC_FMT_TEXT, &ir), 0);
	*kernels = 0;
	for (const char *q = ir.data; (q = strstr(q, "\nkernel ")); q++)
		(*kernels)++;
	tinyc_buf_free(&ir);
	if (nvrtc)
		nvrtc_compile(ctx, m, "splitk.cu", target, bind);
	module_free(ctx, src, m);
	return split;
}

/* chosen_split_fused without the fused form. */
static int chosen_split(const char *target, const char *bind, int *kernels, int nvrtc)
{
	return chosen_split_fused(target, bind, kernels, nvrtc, NULL);
}

Test(splitk, dsmem_cluster, .timeout = 600)
{
	unsetenv("TINYC_MATMUL");
	unsetenv("TINYC_MATMUL_TILE");
	int kernels, fused;
	int nv = tinyc_nvrtc_version() >= 0;
	cr_assert_eq(chosen_split_fused("sm_90a", "M=64,N=4096,K=4096", &kernels, nv, &fused), 2);
	cr_expect_eq(fused, 2, "64 x 4096 x 4096: split-K over a cluster by default");
	cr_expect_eq(kernels, 1);
	cr_assert_eq(chosen_split_fused("sm_90a", "M=16,N=4096,K=4096", &kernels, 0, &fused), 4);
	cr_expect_eq(fused, 0, "16 x 4096 x 4096: the reduction kernel by default");
	cr_expect_eq(kernels, 2);
	setenv("TINYC_SPLITK_SUM", "2", 1);
	cr_assert_eq(chosen_split_fused("sm_90a", "M=64,N=4096,K=4096", &kernels, 0, &fused), 2);
	cr_expect_eq(fused, 0, "TINYC_SPLITK_SUM=2: the reduction kernel");
	setenv("TINYC_SPLITK_SUM", "3", 1);
	static const char *binds[] = {"M=16,N=4096,K=4096", "M=64,N=4096,K=4096", "M=5,N=136,K=1024",
				      "M=37,N=200,K=2048"};
	for (int i = 0; i < 4; i++) {
		cr_assert_gt(chosen_split_fused("sm_90a", binds[i], &kernels, nv, &fused), 1, "%s", binds[i]);
		cr_expect_eq(fused, 2, "%s", binds[i]);
		cr_expect_eq(kernels, 1, "%s", binds[i]);
	}
	unsetenv("TINYC_SPLITK_SUM");
	if (!nv)
		cr_skip_test("nvrtc is not available");
}

Test(splitk, chosen_for_few_tiles, .timeout = 600)
{
	unsetenv("TINYC_MATMUL");
	unsetenv("TINYC_MATMUL_TILE");
	setenv("TINYC_WGMMA_SWAP", "0", 1);	/* the split-K plans, not the swap-AB ones */
	int kernels;
	cr_assert_eq(chosen_split("sm_90a", "M=16,N=4096,K=4096", &kernels, 0), 4);
	cr_assert_eq(kernels, 2);
	cr_assert_eq(chosen_split("sm_90a", "M=16,N=11008,K=4096", &kernels, 0), 0);
	cr_assert_eq(chosen_split("sm_90a", "M=4096,N=4096,K=4096", &kernels, 0), 0);
	cr_assert_eq(kernels, 1);
	unsetenv("TINYC_WGMMA_SWAP");
	if (tinyc_nvrtc_version() < 0) {
		cr_skip_test("nvrtc is not available");
		return;
	}
	cr_assert_gt(chosen_split("sm_90a", "M=64,N=4096,K=11008", &kernels, 1), 1);
	/* B = 1: the wgmma plan of a batched graph whose batch axis is bound to 1 */
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_source *src = tinyc_source_read(ctx, TINYC_SOURCE_DIR "/tests/gpu/epilogue/batched.uop");
	cr_assert(src);
	tinyc_options opt;
	memset(&opt, 0, sizeof(opt));
	opt.target = "sm_90a";
	opt.bind = "B=1,M=200,N=136,K=72";
	tinyc_module *m = tinyc_module_alloc(ctx, src, &opt);
	cr_assert(m && tinyc_module_run_until(m, tinyc_pass_find("cuda"), 0, NULL) == 0);
	const tinyc_plan *bp = tinyc_skernel_plan(&tinyc_module_schedule(m)->kerns[0]);
	cr_assert(bp && bp->kind == TINYC_PLAN_MATMUL &&
		  ((const tinyc_mm_plan *)bp->ext)->t.variant == TINYC_MM_WGMMA);
	nvrtc_compile(ctx, m, "b1.cu", "sm_90a", opt.bind);
	module_free(ctx, src, m);
	setenv("TINYC_MATMUL", "mma", 1);
	setenv("TINYC_MATMUL_TILE", "64x64x32x3x4", 1);
	cr_assert_eq(chosen_split("sm_80", "M=37,N=72,K=1024", &kernels, 1), 4);
	unsetenv("TINYC_MATMUL");
	unsetenv("TINYC_MATMUL_TILE");
}

/* Whether tiles t are the tensor-core gemv's. */
static int is_gemv_mma(const tinyc_mm_tiles *t)
{
	return t->gemv_mma > 0;
}

/* The number of the first kernel's candidates that are tensor-core gemv tiles. */
static int gemv_mma_candidates(const char *target, const char *bind)
{
	return count_candidates(target, bind, is_gemv_mma);
}

Test(gemv_mma, off_by_default)
{
	unsetenv("TINYC_MATMUL");
	unsetenv("TINYC_MATMUL_TILE");
	unsetenv("TINYC_GEMV_MMA");
	cr_assert_eq(gemv_mma_candidates("sm_90a", "M=16,N=4096,K=4096"), 0);
	cr_assert_eq(gemv_mma_candidates("sm_80", "M=8,N=4096,K=4096"), 0);
	cr_assert_eq(chosen_variant("sm_90a", "M=16,N=4096,K=4096"), TINYC_MM_WGMMA);
	setenv("TINYC_GEMV_MMA", "1", 1);
	cr_assert_gt(gemv_mma_candidates("sm_90a", "M=16,N=4096,K=4096"), 0);
	cr_assert_gt(gemv_mma_candidates("sm_80", "M=32,N=4096,K=11008"), 0);
	cr_assert_eq(gemv_mma_candidates("sm_90a", "M=1,N=4096,K=4096"), 0);	/* the FMA gemv */
	cr_assert_eq(chosen_variant("sm_90a", "M=1,N=4096,K=4096"), TINYC_MM_GEMV);
	setenv("TINYC_GEMV_MMA", "2", 1);	/* measurements: M = 1 too */
	cr_assert_gt(gemv_mma_candidates("sm_90a", "M=1,N=4096,K=4096"), 0);
	setenv("TINYC_GEMV_MMA", "1", 1);
	cr_assert_eq(gemv_mma_candidates("sm_90a", "M=33,N=4096,K=4096"), 0);	/* M > 32 */
	cr_assert_eq(gemv_mma_candidates("sm_90a", "M=16,N=4092,K=4096"), 0);	/* N % 8 */
	unsetenv("TINYC_GEMV_MMA");
}

/* BIAS_RELU with bfloat16 for half, written to a temporary file whose path goes to path
 * (size bytes); remove it after use. */
static void bf16_graph(char *path, size_t size)
{
	snprintf(path, size, "/tmp/tinyc_gemv_mma_bf16_XXXXXX");
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	FILE *in = fopen(BIAS_RELU, "r"), *out = fdopen(fd, "w");
	cr_assert(in && out);
	char line[512];
	while (fgets(line, sizeof(line), in)) {
		for (char *h; (h = strstr(line, "half"));) {	/* "half" -> "bfloat16" */
			char rest[512];
			snprintf(rest, sizeof(rest), "%s", h + 4);
			snprintf(h, sizeof(line) - (size_t)(h - line), "bfloat16%s", rest);
		}
		fputs(line, out);
	}
	fclose(in);
	fclose(out);
}

/* The tensor-core gemv of graph `path` with the forced tile (TINYC_GEMV_MMA=2, TINYC_MATMUL
 * =gemv, TINYC_MATMUL_TILE=tile) for target at bind, run by the GPU IR interpreter against
 * the reference evaluator on seeded inputs.  Asserts that the chosen plan is that tile;
 * with nvrtc (when present) its CUDA compiles for target.  Returns the mismatched output
 * elements. */
static int64_t gemv_mma_check(const char *path, const char *target, const char *bind, const char *tile,
			      int nvrtc)
{
	setenv("TINYC_GEMV_MMA", "2", 1);
	setenv("TINYC_MATMUL", "gemv", 1);
	setenv("TINYC_MATMUL_TILE", tile, 1);
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	compiled c;
	int rc = compile(ctx, path, bind, target, &c);
	if (rc)
		tinyc_ctx_print_diags(ctx, stderr);
	cr_assert_eq(rc, 0, "%s %s %s", bind, tile, target);
	const tinyc_plan *p = tinyc_skernel_plan(&c.s->kerns[0]);
	cr_assert(p && p->kind == TINYC_PLAN_MATMUL);
	const tinyc_mm_tiles *t = &((const tinyc_mm_plan *)p->ext)->t;
	int ft[4] = {0};
	cr_assert_eq(sscanf(tile, "%dx%dx%dx%d", &ft[0], &ft[1], &ft[2], &ft[3]), 4);
	cr_assert(t->gemv_mma && t->bn == ft[1] && t->bk == ft[2] && t->stages == ft[3],
		  "%s %s: not the forced tensor-core gemv tile", bind, tile);
	int nin = 0;
	tinyc_tensor **in = graph_inputs(ctx, c.g, c.b, 11, &nin);
	cr_assert(in);
	tinyc_io ref = {0}, got = {0};
	ref.nin = got.nin = nin;
	ref.in = got.in = in;
	cr_assert_eq(tinyc_eval(ctx, c.g, c.b, &ref), 0);
	int64_t *sym = calloc((size_t)c.g->nsym + 1, sizeof(int64_t));
	for (int i = 0; i < c.g->nsym; i++)
		sym[i] = c.b->val[i];
	rc = tinyc_gpu_run_interp(ctx, c.gm, sym, &got);
	free(sym);
	if (rc < 0)
		tinyc_ctx_print_diags(ctx, stderr);
	cr_assert_eq(rc, 0, "%s %s %s: the interpreter failed", bind, tile, target);
	int64_t bad = 0;
	for (int o = 0; o < ref.nout; o++) {
		tinyc_dtype dt = ref.out[o]->dtype;
		double tol = dt == TINYC_BFLOAT16 ? 1.6e-2 : dt == TINYC_HALF ? 2e-3 : 1e-4;
		tinyc_cmp cmp;
		cr_assert_eq(tinyc_tensor_compare(ctx, got.out[o], ref.out[o], tol, tol, &cmp), 0);
		if (cmp.mismatched)
			fprintf(stderr, "gemv_mma %s %s %s: %lld of Y mismatched, max |diff| %g at %lld\n",
				bind, tile, target, (long long)cmp.mismatched, cmp.max_abs, (long long)cmp.worst);
		bad += cmp.mismatched;
	}
	if (nvrtc && tinyc_nvrtc_version() >= 0) {
		tinyc_buf text = {0};
		cr_assert_eq(tinyc_cuda_print(ctx, c.gm, &text), 0);
		tinyc_blob blob = {0};
		int nrc = tinyc_nvrtc_compile(ctx, text.data, "gemv_mma.cu", target, 1, &blob);
		if (nrc < 0)
			tinyc_ctx_print_diags(ctx, stderr);
		cr_assert_eq(nrc, 0, "%s %s: nvrtc for %s", bind, tile, target);
		tinyc_blob_clear(&blob);
		tinyc_buf_free(&text);
	}
	checked_run_free(&c, &ref, &got, in, nin);
	tinyc_ctx_free(ctx);
	unsetenv("TINYC_GEMV_MMA");
	unsetenv("TINYC_MATMUL");
	unsetenv("TINYC_MATMUL_TILE");
	return bad;
}

Test(gemv_mma, matches_reference_and_compiles, .timeout = 900)
{
	/* slab 64 / 32 columns, 4 / 8 / 16 warps, unroll 1 / 2 / 4; M odd, past 8 and 16, 32;
	 * N not a multiple of the slab; K not a multiple of 16 nor of a step, odd (X by element
	 * loads); the last steps predicated */
	static const struct {
		const char *target, *bind, *tile;
	} cases[] = {
		{"sm_90a", "M=3,N=200,K=136", "0x64x128x2"},
		{"sm_80", "M=16,N=72,K=1000", "0x32x64x4"},
		{"sm_90a", "M=13,N=40,K=333", "0x64x256x1"},
		{"sm_80", "M=32,N=72,K=200", "0x32x128x2"},
		{"sm_90a", "M=9,N=520,K=1032", "0x64x64x4"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect_eq(gemv_mma_check(BIAS_RELU, cases[i].target, cases[i].bind, cases[i].tile, 1), 0,
			     "%s %s %s", cases[i].bind, cases[i].tile, cases[i].target);
	char bf[64];
	bf16_graph(bf, sizeof(bf));
	cr_expect_eq(gemv_mma_check(bf, "sm_80", "M=8,N=136,K=264", "0x64x128x2", 1), 0, "bf16");
	cr_expect_eq(gemv_mma_check(bf, "sm_90a", "M=5,N=200,K=1000", "0x32x256x1", 1), 0, "bf16");
	remove(bf);
}
