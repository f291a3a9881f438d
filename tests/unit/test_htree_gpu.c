/* Unit tests of the htree GPU path (codegen/htree_cuda.c, driver/htree_run.c).
 *
 * Everywhere (no GPU needed):
 *  - htree_gpu_emit: the generated CUDA compiles with nvrtc to CUBIN for sm_80 and sm_90
 *    for several configurations; the configuration is folded into the text; bad
 *    configurations are diagnostics;
 *  - htree_gpu_tree: the tree-build UOp graph, run by the reference evaluator and by the
 *    pipeline's GPU IR interpreter, equals the CPU reference's pooling bit for bit;
 *  - htree_gpu_api: validation diagnostics of the C API (with no device).
 * On a GPU (htree_device, skipped with a message elsewhere; also the ctest entry gpu/htree):
 *  - every golden case through the GPU path (both tree builds): outputs by the manifest's
 *    rule, selections exactly;
 *  - random inputs at T = 20000 (default configuration) against the CPU reference;
 *  - half and bfloat16 inputs, query-position subsets, the device-tensor API (with k and v
 *    off 16-byte alignment: the tensor-core leaves' other staging).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "codegen/gpu.h"
#include "ir/ctx.h"
#include "ir/htree.h"
#include "driver/module.h"
#include "ir/tensor.h"
#include "driver/htree_run.h"
#include "runtime/runtime.h"
#include "sched/schedule.h"

#include "../common/htree_golden.h"
#include "driver/run.h"

/* The kind of the first diagnostic on ctx ("" when there is none). */
static const char *first_kind(tinyc_ctx *ctx)
{
	const tinyc_diag *d = tinyc_ctx_diag_count(ctx) > 0 ? tinyc_ctx_diag(ctx, 0) : NULL;
	return d && d->kind ? d->kind : "";
}

/* The benchmark configuration as kernel parameters. */
static tinyc_htree_kernel_config bench_kcfg(void)
{
	tinyc_htree_kernel_config c = {16, 512, 8192, 16, 16, 16, TINYC_FLOAT, 13, 0};
	return c;
}

/* ------------------------------------------------------------ generated CUDA ---- */

/* Emit the kernels for c and compile them to CUBIN for arch; fail with nvrtc's words. */
static void compile_for(const tinyc_htree_kernel_config *c, const char *arch)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_buf text = {0};
	cr_assert_eq(tinyc_htree_emit_cuda(ctx, c, &text), 0, "emit: %s", first_kind(ctx));
	tinyc_blob blob;
	memset(&blob, 0, sizeof blob);
	int rc = tinyc_nvrtc_compile(ctx, text.data, "htree.cu", arch, 1, &blob);
	if (rc < 0)
		tinyc_ctx_print_diags(ctx, stderr);
	cr_assert_eq(rc, 0, "nvrtc failed for %s", arch);
	cr_assert(blob.is_cubin && blob.size > 0);
	cr_assert_eq(tinyc_ctx_error_count(ctx), 0);
	tinyc_blob_clear(&blob);
	tinyc_buf_free(&text);
	tinyc_ctx_free(ctx);
}

/* The configurations the nvrtc tests compile, beyond the benchmark's. */
static const tinyc_htree_kernel_config more_cfgs[] = {
	{4, 8, 32, 4, 32, 32, TINYC_FLOAT, 13, 0},		/* the golden cases' shape */
	{16, 64, 1024, 8, 64, 64, TINYC_HALF, 13, 128},		/* half, 128 threads */
	{8, 64, 512, 3, 16, 6, TINYC_BFLOAT16, 13, 64},		/* bf16, G = 3, V = 6 */
	{16, 16, 256, 32, 16, 64, TINYC_FLOAT, 0, 0},		/* 2 accumulator items a thread */
	{16, 512, 8192, 16, 16, 16, TINYC_FLOAT, 13, 0, 1, 0},	/* the benchmark's, profiled */
	{16, 512, 8192, 16, 16, 16, TINYC_FLOAT, 13, 128, 0, 5},	/* 128 threads, 5 blocks */
	{16, 512, 8192, 16, 16, 16, TINYC_FLOAT, 13, 0, 0, 0, 1},	/* the leaves on FMA */
	{16, 512, 8192, 16, 16, 16, TINYC_FLOAT, 13, 512, 0, 0},	/* tensor cores, 16 warps */
	{16, 512, 8192, 16, 16, 16, TINYC_FLOAT, 13, 0, 0, 0, 0, 1},	/* pass 1 by ht_max_fast */
	{4, 8, 32, 4, 32, 32, TINYC_FLOAT, 13, 0, 0, 0, 0, 1},	/* ... G = 4, K = 32 */
	{16, 512, 8192, 16, 16, 16, TINYC_FLOAT, 13, 0, 0, 0, 0, 1, 3},	/* pass 2: 3 candidates a thread */
	{16, 512, 8192, 16, 16, 16, TINYC_FLOAT, 13, 0, 0, 0, 0, 1, 0, 1},	/* pass 3, top leaves: krot */
};

Test(htree_gpu_emit, benchmark_config_compiles_for_sm80, .timeout = 300)
{
	tinyc_htree_kernel_config c = bench_kcfg();
	compile_for(&c, "sm_80");
}

Test(htree_gpu_emit, benchmark_config_compiles_for_sm90, .timeout = 300)
{
	tinyc_htree_kernel_config c = bench_kcfg();
	compile_for(&c, "sm_90");
}

Test(htree_gpu_emit, other_configs_compile_for_sm80, .timeout = 600)
{
	for (size_t i = 0; i < sizeof more_cfgs / sizeof more_cfgs[0]; i++)
		compile_for(&more_cfgs[i], "sm_80");
}

Test(htree_gpu_emit, other_configs_compile_for_sm90, .timeout = 600)
{
	for (size_t i = 0; i < sizeof more_cfgs / sizeof more_cfgs[0]; i++)
		compile_for(&more_cfgs[i], "sm_90");
}

Test(htree_gpu_emit, configuration_is_folded_in_and_text_is_deterministic)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_htree_kernel_config c = bench_kcfg();
	tinyc_buf a = {0}, b = {0}, h = {0};
	cr_assert_eq(tinyc_htree_emit_cuda(ctx, &c, &a), 0);
	cr_assert_eq(tinyc_htree_emit_cuda(ctx, &c, &b), 0);
	cr_assert_str_eq(a.data, b.data);
	cr_assert_not_null(strstr(a.data, "constexpr int R = 16, LOGR = 4, TOPK = 512;"));
	cr_assert_not_null(strstr(a.data, "constexpr int G = 16, KD = 16, HALF = 8, VD = 16;"));
	cr_assert_not_null(strstr(a.data, "constexpr unsigned KEYMASK = 0xFFFFE000u;"));
	cr_assert_not_null(strstr(a.data, "typedef float in_t;"));
	cr_assert_null(strstr(a.data, "cuda_fp16.h"));
	/* another configuration: other constants, the half loads */
	c.compression_rate = 4;
	c.top_k = 8;
	c.max_top_nodes = 32;
	c.G = 4;
	c.K = 32;
	c.dtype = TINYC_HALF;
	c.key_drop_bits = 0;
	cr_assert_eq(tinyc_htree_emit_cuda(ctx, &c, &h), 0);
	cr_assert_not_null(strstr(h.data, "constexpr int R = 4, LOGR = 2, TOPK = 8;"));
	cr_assert_not_null(strstr(h.data, "constexpr int G = 4, KD = 32, HALF = 16, VD = 16;"));
	cr_assert_not_null(strstr(h.data, "constexpr unsigned KEYMASK = 0xFFFFFFFFu;"));
	cr_assert_not_null(strstr(h.data, "typedef __half in_t;"));
	cr_assert_not_null(strstr(h.data, "__half2float"));
	/* launch facts: 256 threads, the table covers max(max_top_nodes, top_k * r) rows */
	int threads;
	int64_t smem, rows;
	c = bench_kcfg();
	cr_assert_eq(tinyc_htree_kernel_launch_info(ctx, &c, &threads, &smem, &rows), 0);
	cr_assert_eq(threads, 256);
	cr_assert_eq(rows, 8192);
	cr_assert(smem > 32768 && smem <= TINYC_HTREE_GPU_SMEM_MAX, "smem %lld", (long long)smem);
	tinyc_buf_free(&a);
	tinyc_buf_free(&b);
	tinyc_buf_free(&h);
	tinyc_ctx_free(ctx);
}

/* Emitting c fails with the diagnostic kind `kind`. */
static void emit_fails(tinyc_htree_kernel_config c, const char *kind)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_buf b = {0};
	cr_assert_eq(tinyc_htree_emit_cuda(ctx, &c, &b), -1);
	cr_assert_str_eq(first_kind(ctx), kind);
	tinyc_buf_free(&b);
	tinyc_ctx_free(ctx);
}

Test(htree_gpu_emit, bad_configurations_are_diagnostics)
{
	tinyc_htree_kernel_config c = bench_kcfg();
	c.compression_rate = 3;
	emit_fails(c, "HtreeInvalidConfig");
	c = bench_kcfg();
	c.top_k = 100;
	emit_fails(c, "HtreeInvalidConfig");
	c = bench_kcfg();
	c.G = TINYC_HTREE_GPU_MAX_G + 1;
	emit_fails(c, "HtreeUnsupportedConfig");
	c = bench_kcfg();
	c.K = 15;
	emit_fails(c, "HtreeUnsupportedConfig");
	c = bench_kcfg();
	c.dtype = TINYC_INT;
	emit_fails(c, "HtreeUnsupportedDtype");
	c = bench_kcfg();
	c.max_top_nodes = 100000;
	emit_fails(c, "HtreeUnsupportedConfig");
	c = bench_kcfg();
	c.threads = 96;
	emit_fails(c, "HtreeInvalidConfig");
	c = bench_kcfg();
	c.min_blocks = 33;
	emit_fails(c, "HtreeInvalidConfig");
}

/* ------------------------------------------------------------ tree-build graph ---- */

/* Fill t with seeded values in [-1, 1). */
static void fill(tinyc_tensor *t, uint64_t seed)
{
	tinyc_tensor_fill_random(t, seed);
}

/* The CPU reference's layers 1..L-1 of x ([B,T,Hkv,D] any float dtype): float arrays
 * [B,N_l,Hkv*D] in lay[1..L-1] (caller frees).  Returns L. */
static int reference_layers(const tinyc_tensor *x, int r, int64_t mtn, float **lay, int64_t *N)
{
	int64_t B = x->shape[0], T = x->shape[1], D = x->shape[2] * x->shape[3];
	int L = tinyc_htree_layer_sizes(T, r, mtn, N);
	cr_assert(L >= 2);
	float *x0 = malloc((size_t)(B * T * D) * sizeof(float));
	for (int64_t i = 0; i < B * T * D; i++)
		x0[i] = (float)tinyc_tensor_get(x, i);
	lay[0] = x0;
	for (int l = 1; l < L; l++) {
		lay[l] = malloc((size_t)(B * N[l] * D) * sizeof(float));
		tinyc_htree_pool(lay[l - 1], B, N[l - 1], D, r, lay[l]);
	}
	return L;
}

/* Outputs of the tree graph (io->out, graph order k1..k<L-1>, v1..v<L-1>) equal the
 * reference layers bit for bit. */
static void check_tree_outputs(const tinyc_io *io, int L, float **kl, float **vl)
{
	cr_assert_eq(io->nout, 2 * (L - 1));
	for (int i = 0; i < io->nout; i++) {
		int l = i % (L - 1) + 1;
		const float *want = i < L - 1 ? kl[l] : vl[l];
		const tinyc_tensor *t = io->out[i];
		cr_assert_eq(t->dtype, TINYC_FLOAT);
		const float *got = t->data;
		for (int64_t e = 0; e < tinyc_tensor_numel(t); e++)
			cr_assert(memcmp(&got[e], &want[e], sizeof(float)) == 0,
				  "output %d (layer %d) element %lld: %.9g, reference %.9g", i, l,
				  (long long)e, got[e], want[e]);
	}
}

/* Build the tree graph for k, v, run it with the reference evaluator (and, when interp,
 * through the pipeline to GPU IR and its interpreter), compare with tinyc_htree_pool. */
static void tree_graph_case(tinyc_dtype dt, int64_t B, int64_t T, int64_t Hkv, int64_t K,
			    int64_t V, int r, int64_t mtn, int interp)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	int64_t sk[4] = {B, T, Hkv, K}, sv[4] = {B, T, Hkv, V};
	tinyc_tensor *k = tinyc_tensor_alloc(ctx, dt, 4, sk), *v = tinyc_tensor_alloc(ctx, dt, 4, sv);
	fill(k, 7);
	fill(v, 8);
	float *kl[TINYC_HTREE_MAX_LAYERS] = {0}, *vl[TINYC_HTREE_MAX_LAYERS] = {0};
	int64_t N[TINYC_HTREE_MAX_LAYERS];
	int L = reference_layers(k, r, mtn, kl, N);
	cr_assert_eq(reference_layers(v, r, mtn, vl, N), L);
	tinyc_buf text = {0};
	cr_assert_eq(tinyc_htree_pool_graph_text(ctx, dt, B, T, Hkv, K, V, r, mtn, &text), 0);
	tinyc_source *src = tinyc_source_from_string("tree.uop", text.data, text.len);
	tinyc_graph *g = tinyc_parse(ctx, src);
	if (!g)
		tinyc_ctx_print_diags(ctx, stderr);
	cr_assert_not_null(g);
	cr_assert_eq(tinyc_verify(ctx, g, NULL), 0, "verify: %s", first_kind(ctx));
	tinyc_tensor *in[2] = {k, v};
	tinyc_io io = {2, in, 0, NULL};
	cr_assert_eq(tinyc_eval(ctx, g, NULL, &io), 0, "eval: %s", first_kind(ctx));
	check_tree_outputs(&io, L, kl, vl);
	tinyc_io_clear_outputs(&io);
	if (interp) {
		tinyc_options opt;
		memset(&opt, 0, sizeof opt);
		opt.target = "sm_90";
		tinyc_module *m = tinyc_module_alloc(ctx, src, &opt);
		cr_assert_eq(tinyc_module_run_until(m, tinyc_pass_find("gpuir"), 0, NULL), 0,
			     "pipeline: %s", first_kind(ctx));
		const tinyc_gpu_module *gm = tinyc_module_gpuir(m);
		cr_assert_not_null(gm);
		int64_t nosym[1] = {0};
		tinyc_io io2 = {2, in, 0, NULL};
		cr_assert_eq(tinyc_gpu_run_interp(ctx, gm, nosym, &io2), 0, "interp: %s",
			     first_kind(ctx));
		check_tree_outputs(&io2, L, kl, vl);
		tinyc_io_clear_outputs(&io2);
		tinyc_module_free(m);
	}
	for (int l = 0; l < L; l++) {
		free(kl[l]);
		free(vl[l]);
	}
	tinyc_graph_free(g);
	tinyc_source_free(src);
	tinyc_buf_free(&text);
	tinyc_tensor_free(k);
	tinyc_tensor_free(v);
	cr_assert_eq(tinyc_ctx_error_count(ctx), 0);
	tinyc_ctx_free(ctx);
}

Test(htree_gpu_tree, graph_equals_reference_pooling_partial_groups)
{
	/* 700 -> 175 -> 44 (partial) -> 11 (partial): v3's tree, with B = 2, H_kv = 2 */
	tree_graph_case(TINYC_FLOAT, 2, 700, 2, 8, 4, 4, 32, 0);
}

Test(htree_gpu_tree, graph_equals_reference_pooling_half_and_bf16)
{
	tree_graph_case(TINYC_HALF, 1, 1000, 1, 16, 16, 16, 8, 0);	/* 1000 -> 63 -> 4 */
	tree_graph_case(TINYC_BFLOAT16, 1, 257, 1, 16, 8, 16, 16, 0);	/* 257 -> 17 -> 2 */
}

Test(htree_gpu_tree, pipeline_gpuir_equals_reference_pooling, .timeout = 300)
{
	tree_graph_case(TINYC_FLOAT, 1, 700, 1, 16, 16, 4, 32, 1);
	tree_graph_case(TINYC_HALF, 2, 520, 2, 8, 8, 4, 32, 1);
}

Test(htree_gpu_tree, pipeline_kernels_compile_with_nvrtc, .timeout = 300)
{
	/* the benchmark's tree (120000 -> 7500) and a half-input three-layer one, as the GPU
	 * path compiles them: one translation unit per kernel, CUBIN for sm_80 and sm_90 */
	static const struct { tinyc_dtype dt; int64_t T, Hkv; int r; int64_t mtn; } cases[] = {
		{TINYC_FLOAT, 120000, 1, 16, 8192},
		{TINYC_HALF, 9000, 2, 16, 16},
	};
	static const char *const archs[2] = {"sm_80", "sm_90"};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
		for (int a = 0; a < 2; a++) {
			tinyc_ctx *ctx = tinyc_ctx_alloc();
			tinyc_buf text = {0};
			cr_assert_eq(tinyc_htree_pool_graph_text(ctx, cases[c].dt, 1, cases[c].T,
								 cases[c].Hkv, 16, 16, cases[c].r,
								 cases[c].mtn, &text), 0);
			tinyc_source *src = tinyc_source_from_string("tree.uop", text.data, text.len);
			tinyc_options opt;
			memset(&opt, 0, sizeof opt);
			opt.target = archs[a];
			tinyc_module *m = tinyc_module_alloc(ctx, src, &opt);
			cr_assert_eq(tinyc_module_run_until(m, tinyc_pass_find("gpuir"), 0, NULL), 0,
				     "pipeline: %s", first_kind(ctx));
			const tinyc_gpu_module *gm = tinyc_module_gpuir(m);
			cr_assert(gm && gm->nkernel >= 2);
			/* sums folded by one thread in child order (the GPU path checks it too) */
			const tinyc_schedule *sc = tinyc_module_schedule(m);
			for (int i = 0; i < sc->nkern; i++)
				cr_assert_neq(tinyc_skernel_plan(&sc->kerns[i])->kind, TINYC_PLAN_ROWRED,
					      "tree kernel %s reduces across threads", sc->kerns[i].name);
			for (int i = 0; i < gm->nkernel; i++) {
				tinyc_buf kt = {0};
				cr_assert_eq(tinyc_cuda_print_kernel(ctx, gm, i, &kt), 0);
				tinyc_blob blob;
				memset(&blob, 0, sizeof blob);
				int rc = tinyc_nvrtc_compile(ctx, kt.data, "tree.cu", archs[a], 1, &blob);
				if (rc < 0)
					tinyc_ctx_print_diags(ctx, stderr);
				cr_assert_eq(rc, 0, "tree kernel %d for %s", i, archs[a]);
				tinyc_blob_clear(&blob);
				tinyc_buf_free(&kt);
			}
			tinyc_module_free(m);
			tinyc_source_free(src);
			tinyc_buf_free(&text);
			tinyc_ctx_free(ctx);
		}
}

Test(htree_gpu_tree, one_layer_has_no_tree)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_buf text = {0};
	cr_assert_eq(tinyc_htree_pool_graph_text(ctx, TINYC_FLOAT, 1, 256, 1, 16, 16, 16, 256, &text), -1);
	cr_assert_str_eq(first_kind(ctx), "HtreeNoTree");
	tinyc_buf_free(&text);
	tinyc_ctx_free(ctx);
}

/* -------------------------------------------------------------- API validation ---- */

/* tinyc_htree_forward_cuda with no device on tensors of these shapes fails with `kind`. */
static void api_fails(const tinyc_htree_config *cfg, tinyc_dtype dt, const int64_t *sq,
		      const int64_t *sk, const int64_t *sv, const char *kind)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_tensor *q = tinyc_tensor_alloc(ctx, dt, 4, sq), *k = tinyc_tensor_alloc(ctx, dt, 4, sk);
	tinyc_tensor *v = tinyc_tensor_alloc(ctx, dt, 4, sv), *o = (tinyc_tensor *)1;
	cr_assert_eq(tinyc_htree_forward_cuda(ctx, NULL, cfg, NULL, q, k, v, &o, NULL), -1);
	cr_assert_null(o);
	cr_assert_str_eq(first_kind(ctx), kind, "got %s, want %s", first_kind(ctx), kind);
	tinyc_tensor_free(q);
	tinyc_tensor_free(k);
	tinyc_tensor_free(v);
	tinyc_ctx_free(ctx);
}

Test(htree_gpu_api, validation_diagnostics)
{
	tinyc_htree_config cfg;
	tinyc_htree_config_default(&cfg);
	int64_t sq[4] = {1, 64, 4, 16}, sk[4] = {1, 64, 2, 16}, sv[4] = {1, 64, 2, 16};
	/* a valid call without a device: NoGpu after the checks */
	api_fails(&cfg, TINYC_FLOAT, sq, sk, sv, "NoGpu");
	/* H not a multiple of H_kv */
	int64_t sk3[4] = {1, 64, 3, 16}, sv3[4] = {1, 64, 3, 16};
	api_fails(&cfg, TINYC_FLOAT, sq, sk3, sv3, "HtreeShapeMismatch");
	/* shapes that disagree: T, K, the heads of k and v */
	int64_t skT[4] = {1, 63, 2, 16}, skK[4] = {1, 64, 2, 8}, svH[4] = {1, 64, 1, 16};
	api_fails(&cfg, TINYC_FLOAT, sq, skT, sv, "HtreeShapeMismatch");
	api_fails(&cfg, TINYC_FLOAT, sq, skK, sv, "HtreeShapeMismatch");
	api_fails(&cfg, TINYC_FLOAT, sq, sk, svH, "HtreeShapeMismatch");
	/* r and top_k must be powers of two */
	cfg.compression_rate = 12;
	api_fails(&cfg, TINYC_FLOAT, sq, sk, sv, "HtreeInvalidConfig");
	tinyc_htree_config_default(&cfg);
	cfg.top_k = 500;
	api_fails(&cfg, TINYC_FLOAT, sq, sk, sv, "HtreeInvalidConfig");
	tinyc_htree_config_default(&cfg);
	cfg.max_top_nodes = 0;
	api_fails(&cfg, TINYC_FLOAT, sq, sk, sv, "HtreeInvalidConfig");
	/* dtype */
	tinyc_htree_config_default(&cfg);
	api_fails(&cfg, TINYC_INT, sq, sk, sv, "HtreeUnsupportedDtype");
	/* beyond the GPU kernels: 128 query heads per KV head */
	int64_t sqG[4] = {1, 64, 128, 16}, sk1[4] = {1, 64, 1, 16};
	api_fails(&cfg, TINYC_FLOAT, sqG, sk1, sk1, "HtreeUnsupportedConfig");
	/* query positions outside [0, T) */
	int64_t bad[1] = {64};
	cfg.query_positions = bad;
	cfg.num_query_positions = 1;
	api_fails(&cfg, TINYC_FLOAT, sq, sk, sv, "HtreeInvalidConfig");
}

Test(htree_gpu_api, device_tensors_need_one_dtype_and_arguments)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_htree_config cfg;
	tinyc_htree_config_default(&cfg);
	tinyc_htree_dev_tensor q = {0, TINYC_FLOAT, {1, 64, 4, 16}};
	tinyc_htree_dev_tensor k = {0, TINYC_HALF, {1, 64, 1, 16}};
	tinyc_htree_dev_tensor v = {0, TINYC_FLOAT, {1, 64, 1, 16}};
	cr_assert_eq(tinyc_htree_forward_cuda_dev(ctx, NULL, &cfg, NULL, &q, &k, &v, 0, NULL), -1);
	cr_assert_str_eq(first_kind(ctx), "HtreeUnsupportedDtype");
	tinyc_ctx_clear_diags(ctx);
	cr_assert_eq(tinyc_htree_forward_cuda_dev(ctx, NULL, &cfg, NULL, &q, NULL, &v, 0, NULL), -1);
	cr_assert_str_eq(first_kind(ctx), "HtreeInvalidArgument");
	tinyc_ctx_clear_diags(ctx);
	k.dtype = TINYC_FLOAT;
	cr_assert_null(tinyc_htree_gpu_alloc(ctx, NULL, &cfg, NULL, TINYC_FLOAT, 1, 64, 4, 1, 16, 16));
	cr_assert_str_eq(first_kind(ctx), "NoGpu");
	tinyc_ctx_free(ctx);
}

/* ------------------------------------------------------------------ on a GPU ---- */

/* The device, or NULL after marking the test skipped (with the reason). */
static tinyc_cuda *device_or_skip(tinyc_ctx *ctx)
{
	if (!tinyc_cuda_available()) {
		cr_skip_test("no CUDA device: the htree GPU tests run on a GPU machine "
			     "(ctest -L gpu)");
		return NULL;
	}
	tinyc_cuda *cu = tinyc_cuda_open(ctx, 0);
	if (!cu)
		tinyc_ctx_print_diags(ctx, stderr);
	cr_assert_not_null(cu);
	return cu;
}

/* Element i of an int32/int64 tensor. */
static int64_t ival(const tinyc_tensor *t, int64_t i)
{
	return t->dtype == TINYC_INT ? ((const int32_t *)t->data)[i] : ((const int64_t *)t->data)[i];
}

/* Query groups (b, row, h_kv) of o whose values differ from want by more than atol, and
 * the largest difference.  o and want are float [B,rows,H,V]. */
static int64_t groups_over(const tinyc_tensor *o, const tinyc_tensor *want, int64_t Hkv,
			   double atol, double *max_abs)
{
	int64_t B = o->shape[0], rows = o->shape[1], H = o->shape[2], V = o->shape[3];
	int64_t per = H / Hkv * V, over = 0;
	const float *a = o->data, *b = want->data;
	*max_abs = 0;
	for (int64_t gi = 0; gi < B * rows * Hkv; gi++) {
		double ge = 0;
		for (int64_t e = 0; e < per; e++) {
			double d = fabs((double)a[gi * per + e] - (double)b[gi * per + e]);
			if (!(d <= ge))
				ge = isnan(d) ? INFINITY : d;
		}
		if (ge > *max_abs)
			*max_abs = ge;
		over += ge > atol;
	}
	return over;
}

/* One golden case through the GPU path (tree by the pipeline or the pooling kernels):
 * outputs by the manifest's per-group rule, selections exactly. */
static void golden_gpu(const char *name, int tree_kernels)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_cuda *cu = device_or_skip(ctx);
	if (!cu) {
		tinyc_ctx_free(ctx);
		return;
	}
	char *cas = golden_case_text(name);
	tinyc_htree_config cfg;
	tinyc_htree_config_default(&cfg);
	cfg.compression_rate = (int)golden_num(cas, "compression_rate");
	cfg.top_k = (int)golden_num(cas, "top_k_per_layer");
	cfg.max_top_nodes = (int64_t)golden_num(cas, "max_top_nodes");
	cfg.scale = (float)golden_num(cas, "scale_fp32");
	tinyc_tensor *q = golden_file(ctx, cas, "q", 1), *k = golden_file(ctx, cas, "k", 1);
	tinyc_tensor *v = golden_file(ctx, cas, "v", 1), *og = golden_file(ctx, cas, "o", 1);
	tinyc_tensor *rc = golden_file(ctx, cas, "rope_cos", 1), *rs = golden_file(ctx, cas, "rope_sin", 1);
	tinyc_tensor *qp = golden_file(ctx, cas, "query_positions", 0);
	tinyc_tensor *sp = golden_file(ctx, cas, "sel_positions", 0);
	tinyc_tensor *sn = golden_file(ctx, cas, "sel_nodes", 0);
	cfg.rope_cos = rc;
	cfg.rope_sin = rs;
	int64_t *qpos = NULL, *spos = NULL;
	if (qp) {
		qpos = malloc((size_t)tinyc_tensor_numel(qp) * sizeof *qpos);
		for (int64_t i = 0; i < tinyc_tensor_numel(qp); i++)
			qpos[i] = ival(qp, i);
		cfg.query_positions = qpos;
		cfg.num_query_positions = (int)tinyc_tensor_numel(qp);
	}
	tinyc_htree_trace tr;
	memset(&tr, 0, sizeof tr);
	if (sp) {
		spos = malloc((size_t)tinyc_tensor_numel(sp) * sizeof *spos);
		for (int64_t i = 0; i < tinyc_tensor_numel(sp); i++)
			spos[i] = ival(sp, i);
		tr.positions = spos;
		tr.num_positions = (int)tinyc_tensor_numel(sp);
	}
	tinyc_htree_gpu_opts opts = {tree_kernels, 0, 0};
	tinyc_tensor *o = NULL;
	int r = tinyc_htree_forward_cuda(ctx, cu, &cfg, &opts, q, k, v, &o, sp ? &tr : NULL);
	if (r < 0)
		tinyc_ctx_print_diags(ctx, stderr);
	cr_assert_eq(r, 0);
	for (int d = 0; d < 4; d++)
		cr_assert_eq(o->shape[d], og->shape[d]);
	double max_abs;
	int64_t over = groups_over(o, og, k->shape[2], golden_num(cas, "atol"), &max_abs);
	int64_t allowed = (int64_t)golden_num(cas, "max_groups_over_atol");
	fprintf(stderr, "htree GPU golden %-20s (tree: %s): max |err| %.3g, groups over atol %lld "
		"(allowed %lld)\n", name, tree_kernels ? "kernels" : "pipeline", max_abs,
		(long long)over, (long long)allowed);
	cr_assert(over <= allowed, "%s: %lld query groups over atol (max |err| %g)", name,
		  (long long)over, max_abs);
	if (sn) {
		int64_t n = tinyc_tensor_numel(sn), bad = 0;
		for (int64_t i = 0; i < n; i++)
			bad += tr.sel_nodes[i] != ival(sn, i);
		cr_assert_eq(bad, 0, "%s: %lld of %lld selected nodes differ", name, (long long)bad,
			     (long long)n);
	}
	tinyc_htree_trace_clear(&tr);
	free(qpos);
	free(spos);
	free(cas);
	tinyc_tensor *ts[] = {q, k, v, og, rc, rs, qp, sp, sn, o};
	for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
		tinyc_tensor_free(ts[i]);
	tinyc_cuda_close(cu);
	tinyc_ctx_free(ctx);
}

Test(htree_device, golden_v1_dense_T256) { golden_gpu("v1_dense_T256", 0); }
Test(htree_device, golden_v2_multilevel_T640) { golden_gpu("v2_multilevel_T640", 0); }
Test(htree_device, golden_v3_partial_T700) { golden_gpu("v3_partial_T700", 0); }
Test(htree_device, golden_v4_gqa_B2_T520) { golden_gpu("v4_gqa_B2_T520", 0); }
Test(htree_device, golden_v3_partial_T700_tree_kernels) { golden_gpu("v3_partial_T700", 1); }
Test(htree_device, golden_v4_gqa_B2_T520_tree_kernels) { golden_gpu("v4_gqa_B2_T520", 1); }

/* Fill t with standard-normal values (Box-Muller on a fixed LCG). */
static void fill_normal(tinyc_tensor *t, uint64_t seed)
{
	uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
	for (int64_t i = 0; i < tinyc_tensor_numel(t); i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		double u1 = (double)((s >> 11) + 1) * (1.0 / 9007199254740993.0);
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		double u2 = (double)(s >> 11) * (1.0 / 9007199254740992.0);
		tinyc_tensor_set(t, i, sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
	}
}

/* Random q, k, v of dtype dt: the GPU forward at every position against the CPU reference
 * at npos positions (spread, plus the last ones), and the selections at ntr positions.
 * At most `allowed` query groups may be over 1e-4 or select differently (selection flips
 * at truncation-bucket edges: the host libm's exp and the device's differ in rare
 * roundings). */
static void random_vs_cpu(tinyc_dtype dt, int64_t B, int64_t T, int64_t H, int64_t Hkv,
			  int64_t K, int64_t V, int r, int top_k, int64_t mtn, int npos, int ntr,
			  int exact_max, int rotate_keys)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_cuda *cu = device_or_skip(ctx);
	if (!cu) {
		tinyc_ctx_free(ctx);
		return;
	}
	int64_t sq[4] = {B, T, H, K}, sk[4] = {B, T, Hkv, K}, sv[4] = {B, T, Hkv, V};
	tinyc_tensor *q = tinyc_tensor_alloc(ctx, dt, 4, sq), *k = tinyc_tensor_alloc(ctx, dt, 4, sk);
	tinyc_tensor *v = tinyc_tensor_alloc(ctx, dt, 4, sv);
	fill_normal(q, (uint64_t)T + 1);
	fill_normal(k, (uint64_t)T + 2);
	fill_normal(v, (uint64_t)T + 3);
	tinyc_htree_config cfg;
	tinyc_htree_config_default(&cfg);
	cfg.compression_rate = r;
	cfg.top_k = top_k;
	cfg.max_top_nodes = mtn;
	int64_t *pos = malloc((size_t)npos * sizeof *pos), *tpos = malloc((size_t)ntr * sizeof *tpos);
	for (int i = 0; i < npos; i++)
		pos[i] = i < npos - 8 ? (T - 9) * i / (npos - 8) : T - (npos - i);
	for (int i = 0; i < ntr; i++)
		tpos[i] = T - 1 - (T - 1) * i / ntr;
	tinyc_htree_trace tg, tc;
	memset(&tg, 0, sizeof tg);
	memset(&tc, 0, sizeof tc);
	tg.positions = tc.positions = tpos;
	tg.num_positions = tc.num_positions = ntr;
	tinyc_tensor *o = NULL, *oref = NULL;
	tinyc_htree_gpu_opts opts;
	memset(&opts, 0, sizeof opts);
	opts.exact_max = exact_max;
	opts.rotate_keys = rotate_keys;
	cr_assert_eq(tinyc_htree_forward_cuda(ctx, cu, &cfg, &opts, q, k, v, &o, &tg), 0);
	tinyc_htree_config cc = cfg;
	cc.query_positions = pos;
	cc.num_query_positions = npos;
	cr_assert_eq(tinyc_htree_forward_cpu(ctx, &cc, q, k, v, &oref, &tc), 0);
	/* the GPU rows at the checked positions */
	int64_t so[4] = {B, npos, H, V};
	tinyc_tensor *sub = tinyc_tensor_alloc(ctx, TINYC_FLOAT, 4, so);
	for (int64_t b = 0; b < B; b++)
		for (int i = 0; i < npos; i++)
			memcpy((float *)sub->data + (b * npos + i) * H * V,
			       (const float *)o->data + (b * T + pos[i]) * H * V,
			       (size_t)(H * V) * sizeof(float));
	double max_abs;
	int64_t over = groups_over(sub, oref, Hkv, 1e-4, &max_abs);
	int64_t groups = B * npos * Hkv, tgroups = B * ntr * Hkv;
	int64_t allowed = groups / 4000 > 1 ? groups / 4000 : 1;
	int64_t selbad = 0, L = tg.num_layers, row = (L - 1) * tg.top_k;
	cr_assert_eq(tc.num_layers, L);
	for (int64_t gi = 0; gi < tgroups; gi++) {
		int bad = 0;
		for (int64_t x = 0; x < row; x++)
			bad |= tg.sel_nodes[gi * row + x] != tc.sel_nodes[gi * row + x];
		for (int64_t l = 0; l < L; l++)
			cr_assert_eq(tg.num_candidates[gi * L + l], tc.num_candidates[gi * L + l]);
		selbad += bad;
	}
	fprintf(stderr, "htree GPU vs CPU, %s T=%lld (%lld layers%s%s): max |diff| %.3g over %lld "
		"groups, %lld over 1e-4 (allowed %lld); selections differ in %lld of %lld groups\n",
		tinyc_dtype_name(dt), (long long)T, (long long)L, exact_max ? ", exact max" : "", rotate_keys ? ", keys rotated" : "", max_abs, (long long)groups,
		(long long)over, (long long)allowed, (long long)selbad, (long long)tgroups);
	cr_assert(over <= allowed, "%lld query groups over 1e-4 (max |diff| %g)", (long long)over,
		  max_abs);
	cr_assert(selbad <= (tgroups / 4000 > 1 ? tgroups / 4000 : 1),
		  "selections differ in %lld of %lld groups", (long long)selbad, (long long)tgroups);
	tinyc_htree_trace_clear(&tg);
	tinyc_htree_trace_clear(&tc);
	free(pos);
	free(tpos);
	tinyc_tensor *ts[] = {q, k, v, o, oref, sub};
	for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
		tinyc_tensor_free(ts[i]);
	tinyc_cuda_close(cu);
	tinyc_ctx_free(ctx);
}

Test(htree_device, random_T20000_default_config, .timeout = 1200)
{
	random_vs_cpu(TINYC_FLOAT, 1, 20000, 16, 1, 16, 16, 16, 512, 8192, 1000, 256, 0, 0);
}

/* Pass 3 and the top layer's tensor-core leaves rotating each key themselves (--rotate-keys;
 * the default reads the top layer's rotated keys): the benchmark's shape (the top layer's
 * leaves on tensor cores) and G = 4, three layers. */
Test(htree_device, random_rotate_keys, .timeout = 1200)
{
	random_vs_cpu(TINYC_FLOAT, 1, 20000, 16, 1, 16, 16, 16, 512, 8192, 300, 256, 0, 1);
	random_vs_cpu(TINYC_FLOAT, 2, 9000, 8, 2, 32, 32, 16, 32, 16, 100, 64, 0, 1);
}

/* Pass 1 by the exact sweep (--exact-max): the selections are the reference's. */
Test(htree_device, random_exact_max, .timeout = 1200)
{
	random_vs_cpu(TINYC_FLOAT, 1, 20000, 16, 1, 16, 16, 16, 512, 8192, 300, 256, 1, 0);
	random_vs_cpu(TINYC_FLOAT, 2, 9000, 8, 2, 32, 32, 16, 32, 16, 100, 64, 1, 0);
}

Test(htree_device, random_T9000_gqa_three_layers, .timeout = 600)
{
	/* 9000 -> 563 -> 36 -> 3 with r = 16, top_k = 32, max_top_nodes = 16; B = 2, G = 4 */
	random_vs_cpu(TINYC_FLOAT, 2, 9000, 8, 2, 32, 32, 16, 32, 16, 400, 64, 0, 0);
}

Test(htree_device, random_half_and_bf16_inputs, .timeout = 600)
{
	random_vs_cpu(TINYC_HALF, 1, 3000, 4, 1, 32, 32, 16, 16, 256, 300, 64, 0, 0);
	random_vs_cpu(TINYC_BFLOAT16, 1, 3000, 4, 1, 32, 32, 16, 16, 256, 300, 64, 0, 0);
}

/* The device-API tests' set-up: a context (*ctx) and the device (NULL, the context freed:
 * none, skip), random float q [1,T,H,16], k and v [1,T,1,16] (seeds seed, seed + 1, seed +
 * 2), the default configuration with top_k 32 and max_top_nodes 512. */
static tinyc_cuda *small_case(tinyc_ctx **ctx, int64_t T, int64_t H, uint64_t seed, tinyc_tensor **q,
			      tinyc_tensor **k, tinyc_tensor **v, tinyc_htree_config *cfg)
{
	*ctx = tinyc_ctx_alloc();
	tinyc_cuda *cu = device_or_skip(*ctx);
	if (!cu) {
		tinyc_ctx_free(*ctx);
		return NULL;
	}
	int64_t sq[4] = {1, T, H, 16}, sk[4] = {1, T, 1, 16};
	*q = tinyc_tensor_alloc(*ctx, TINYC_FLOAT, 4, sq);
	*k = tinyc_tensor_alloc(*ctx, TINYC_FLOAT, 4, sk);
	*v = tinyc_tensor_alloc(*ctx, TINYC_FLOAT, 4, sk);
	fill_normal(*q, seed);
	fill_normal(*k, seed + 1);
	fill_normal(*v, seed + 2);
	tinyc_htree_config_default(cfg);
	cfg->top_k = 32;
	cfg->max_top_nodes = 512;
	return cu;
}

Test(htree_device, device_api_and_query_positions_match_the_full_run, .timeout = 300)
{
	int64_t B = 1, T = 5000, H = 8, Hkv = 1, D = 16;
	tinyc_ctx *ctx;
	tinyc_tensor *q, *k, *v;
	tinyc_htree_config cfg;
	tinyc_cuda *cu = small_case(&ctx, T, H, 1, &q, &k, &v, &cfg);
	if (!cu)
		return;
	tinyc_tensor *o = NULL, *op = NULL;
	cr_assert_eq(tinyc_htree_forward_cuda(ctx, cu, &cfg, NULL, q, k, v, &o, NULL), 0);
	/* the device-tensor API: the same kernels, the same bits */
	tinyc_devptr d[3], dout;
	const tinyc_tensor *in[3] = {q, k, v};
	for (int i = 0; i < 3; i++) {
		size_t bytes = (size_t)tinyc_tensor_numel(in[i]) * sizeof(float);
		cr_assert_eq(tinyc_cuda_alloc(cu, bytes, &d[i]), 0);
		cr_assert_eq(tinyc_cuda_upload(cu, d[i], in[i]->data, bytes), 0);
	}
	size_t obytes = (size_t)tinyc_tensor_numel(o) * sizeof(float);
	cr_assert_eq(tinyc_cuda_alloc(cu, obytes, &dout), 0);
	tinyc_htree_dev_tensor dq = {d[0], TINYC_FLOAT, {B, T, H, D}};
	tinyc_htree_dev_tensor dk = {d[1], TINYC_FLOAT, {B, T, Hkv, D}};
	tinyc_htree_dev_tensor dv = {d[2], TINYC_FLOAT, {B, T, Hkv, D}};
	cr_assert_eq(tinyc_htree_forward_cuda_dev(ctx, cu, &cfg, NULL, &dq, &dk, &dv, dout, NULL), 0);
	float *od = malloc(obytes);
	cr_assert_eq(tinyc_cuda_download(cu, od, dout, obytes), 0);
	cr_assert(memcmp(od, o->data, obytes) == 0, "device API result differs from the host API");
	/* a subset of query positions: the same rows */
	int64_t pos[5] = {0, 511, 512, 4095, 4999};
	cfg.query_positions = pos;
	cfg.num_query_positions = 5;
	cr_assert_eq(tinyc_htree_forward_cuda(ctx, cu, &cfg, NULL, q, k, v, &op, NULL), 0);
	cr_assert_eq(op->shape[1], 5);
	for (int i = 0; i < 5; i++)
		cr_assert(memcmp((float *)op->data + i * H * D, (float *)o->data + pos[i] * H * D,
				 (size_t)(H * D) * sizeof(float)) == 0, "row %lld differs", (long long)pos[i]);
	for (int i = 0; i < 3; i++)
		tinyc_cuda_free(cu, d[i]);
	tinyc_cuda_free(cu, dout);
	free(od);
	tinyc_tensor *ts[] = {q, k, v, o, op};
	for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
		tinyc_tensor_free(ts[i]);
	tinyc_cuda_close(cu);
	tinyc_ctx_free(ctx);
}

/* k and v 4 bytes past 16-byte alignment (device API): layer 0's tensor-core leaves stage
 * their rows by loads and shared stores instead of cp.async.  Against the CPU reference at
 * every position, and the same bits as the aligned run. */
Test(htree_device, unaligned_k_v_match_the_cpu_reference, .timeout = 300)
{
	int64_t B = 1, T = 3001, H = 16, Hkv = 1, D = 16;
	tinyc_ctx *ctx;
	tinyc_tensor *q, *k, *v;
	tinyc_htree_config cfg;
	tinyc_cuda *cu = small_case(&ctx, T, H, 11, &q, &k, &v, &cfg);
	if (!cu)
		return;
	tinyc_htree_gpu_opts opts;
	memset(&opts, 0, sizeof opts);
	opts.tree_kernels = 1;	/* element loads: any alignment */
	tinyc_tensor *o = NULL, *oref = NULL;
	cr_assert_eq(tinyc_htree_forward_cuda(ctx, cu, &cfg, &opts, q, k, v, &o, NULL), 0);
	cr_assert_eq(tinyc_htree_forward_cpu(ctx, &cfg, q, k, v, &oref, NULL), 0);
	tinyc_devptr d[3], dout;
	const tinyc_tensor *in[3] = {q, k, v};
	for (int i = 0; i < 3; i++) {
		size_t bytes = (size_t)tinyc_tensor_numel(in[i]) * sizeof(float);
		cr_assert_eq(tinyc_cuda_alloc(cu, bytes + 16, &d[i]), 0);
		cr_assert_eq(tinyc_cuda_upload(cu, d[i] + (i ? 4 : 0), in[i]->data, bytes), 0);
	}
	size_t obytes = (size_t)tinyc_tensor_numel(o) * sizeof(float);
	cr_assert_eq(tinyc_cuda_alloc(cu, obytes, &dout), 0);
	tinyc_htree_dev_tensor dq = {d[0], TINYC_FLOAT, {B, T, H, D}};
	tinyc_htree_dev_tensor dk = {d[1] + 4, TINYC_FLOAT, {B, T, Hkv, D}};
	tinyc_htree_dev_tensor dv = {d[2] + 4, TINYC_FLOAT, {B, T, Hkv, D}};
	cr_assert_eq(tinyc_htree_forward_cuda_dev(ctx, cu, &cfg, &opts, &dq, &dk, &dv, dout, NULL), 0);
	int64_t so[4] = {B, T, H, D};
	tinyc_tensor *ou = tinyc_tensor_alloc(ctx, TINYC_FLOAT, 4, so);
	cr_assert_eq(tinyc_cuda_download(cu, ou->data, dout, obytes), 0);
	double max_abs;
	int64_t over = groups_over(ou, oref, Hkv, 1e-4, &max_abs);
	fprintf(stderr, "htree GPU unaligned k, v T=%lld: max |diff| %.3g, %lld groups over 1e-4\n",
		(long long)T, max_abs, (long long)over);
	cr_assert_eq(over, 0, "%lld query groups over 1e-4 (max |diff| %g)", (long long)over, max_abs);
	cr_assert(memcmp(ou->data, o->data, obytes) == 0, "unaligned k, v: not the aligned run's bits");
	for (int i = 0; i < 3; i++)
		tinyc_cuda_free(cu, d[i]);
	tinyc_cuda_free(cu, dout);
	tinyc_tensor *ts[] = {q, k, v, o, oref, ou};
	for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
		tinyc_tensor_free(ts[i]);
	tinyc_cuda_close(cu);
	tinyc_ctx_free(ctx);
}
