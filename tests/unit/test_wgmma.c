/* Unit tests of the Hopper matmul path and the larger Ampere tiles (sched/matmul.c,
 * codegen/matmul.c build_wgmma, the GPU IR warpgroup statements, sched/tuned.c, driver/tune.c).  No GPU is
 * needed: the plans are made for the named targets sm_90a and sm_80, the CUDA is compiled
 * with nvrtc to CUBIN, and GPU runs are the ctest entries gpu/epilogue/NAME (label gpu).
 *
 *  - wgmma_plan: the schedule of relu(X @ W + bias) at 4096^3 on sm_90a chooses the wgmma
 *    template (128x256x64, 4 stages, 1 + 2 warpgroups, persistent over 132 SMs) and says so
 *    in the dump; it is not proposed for unbound sizes, epilogues with reductions, or sm_80;
 *    unaligned rows (K = 333, 4097^3) are copied by the producer or packed by a packing
 *    kernel into a padded workspace first (the model's choice), batch strides kept; the
 *    packing kernels, run on the GPU IR interpreter, give the layout computed by hand;
 *  - wgmma_gpuir: the GPU IR verifies and holds the ring (TMA loads, full/empty mbarriers,
 *    parity waits), setmaxnreg and m64n256k16 wgmma with the layouts; the tensor maps
 *    describe X (k contiguous, box 64 x 128) and W (n contiguous, boxes 64 x 64); a weight
 *    stored [N, K] gives a K-major B; the interpreter, given no buffers, names the
 *    missing one (it runs the kernel: test_hopper_interp) and the verifier refuses wgmma
 *    outside sm_90a;
 *  - wgmma_nvrtc: the CUDA of every epilogue graph through the wgmma template compiles to
 *    CUBIN for sm_90a without register-cap warnings, and the big mma tiles (dynamic shared
 *    memory) compile for sm_80;
 *  - tune: the shape class, the tuning file round trip and a stored configuration chosen
 *    over the model's estimate on a (pretended) real device;
 *  - stream_k_tail: the stream-K tail's candidates (TINYC_WGMMA_STREAMK) and its kernels
 *    compiled for sm_90a without spills (ptxas -v); their runs on the GPU IR interpreter
 *    are tests/lit/schedule/matmul-streamk.test.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/gpu.h"
#include "ir/ctx.h"
#include "driver/module.h"
#include "ir/tensor.h"
#include "lower/lower.h"
#include "runtime/runtime.h"
#include "sched/matmul.h"
#include "sched/schedule.h"
#include "driver/run.h"
#include "driver/tune.h"

#define EPI_DIR TINYC_SOURCE_DIR "/tests/gpu/epilogue"
#define BIAS_RELU TINYC_SOURCE_DIR "/examples/matmul_bias_relu.uop"
#define CONV_FP16 TINYC_SOURCE_DIR "/tests/lit/conv/Inputs/c2d_k5_s2_p2_fp16.uop"
#define BLOCK_FP16 TINYC_SOURCE_DIR "/tests/lit/conv/Inputs/resnet_block_fp16.uop"
#define NHWC_FP16 TINYC_SOURCE_DIR "/tests/lit/conv/Inputs/nhwc_c16_k3_s2_odd_fp16.uop"
#define BLOCK_ODD_FP16 TINYC_SOURCE_DIR "/tests/lit/conv/Inputs/resnet_block_c16_odd_fp16.uop"
#define DW_BIAS_FP16 TINYC_SOURCE_DIR "/tests/lit/conv/Inputs/sep_dw_bias_k3_s2_fp16.uop"

/* y = x @ w^T with w stored [N, K] (a torch Linear weight): B is k-contiguous */
static const char W_NK[] =
	"%0 = BUFFER(slot=0, name=\"X\") : half[M,K]\n"
	"%1 = BUFFER(slot=1, name=\"Wt\") : half[N,K]\n"
	"%2 = RESHAPE(%0, shape=[M,1,K]) : half[M,1,K]\n"
	"%3 = RESHAPE(%1, shape=[1,N,K]) : half[1,N,K]\n"
	"%4 = MUL(%2, %3) : half[M,N,K]\n"
	"%5 = CAST(%4) : float[M,N,K]\n"
	"%6 = REDUCE(%5, op=ADD, axes=[2], keepdim=false) : float[M,N]\n"
	"%7 = CAST(%6) : half[M,N]\n"
	"%8 = OUTPUT(%7, name=\"Y\") : half[M,N]\n";

/* A compiled module and what it needs. */
typedef struct compiled {
	tinyc_ctx *ctx;
	tinyc_source *src;
	tinyc_module *m;
} compiled;

/* The kind of the first diagnostic on ctx ("" when there is none). */
static const char *first_kind(tinyc_ctx *ctx)
{
	const tinyc_diag *d = tinyc_ctx_diag_count(ctx) > 0 ? tinyc_ctx_diag(ctx, 0) : NULL;
	return d && d->kind ? d->kind : "";
}

/* Run the pipeline of file (or text when file is NULL) up to stage for target and bind. */
static int compile_to(compiled *c, const char *file, const char *text, const char *target,
		      const char *bind, const char *stage)
{
	memset(c, 0, sizeof(*c));
	c->ctx = tinyc_ctx_alloc();
	c->src = file ? tinyc_source_read(c->ctx, file)
		      : tinyc_source_from_string("inline.uop", text, strlen(text));
	cr_assert(c->src, "read %s", file ? file : "text");
	tinyc_options opt;
	memset(&opt, 0, sizeof(opt));
	opt.target = target;
	opt.bind = bind;
	c->m = tinyc_module_alloc(c->ctx, c->src, &opt);
	cr_assert(c->m);
	return tinyc_module_run_until(c->m, tinyc_pass_find(stage), 0, NULL);
}

static void compiled_free(compiled *c)
{
	tinyc_module_free(c->m);
	tinyc_source_free(c->src);
	tinyc_ctx_free(c->ctx);
}

/* The MATMUL plan chosen for the first kernel. */
static const tinyc_mm_plan *chosen(const compiled *c)
{
	const tinyc_schedule *s = tinyc_module_schedule(c->m);
	const tinyc_plan *p = tinyc_skernel_plan(&s->kerns[0]);
	cr_assert(p && p->kind == TINYC_PLAN_MATMUL);
	return p->ext;
}

/* Whether any candidate of the first kernel is a wgmma plan. */
static int has_wgmma(const compiled *c)
{
	const tinyc_schedule *s = tinyc_module_schedule(c->m);
	for (int i = 0; i < s->kerns[0].ncand; i++) {
		const tinyc_mm_plan *mp = s->kerns[0].cands[i].ext;
		if (s->kerns[0].cands[i].kind == TINYC_PLAN_MATMUL && mp &&
		    mp->t.variant == TINYC_MM_WGMMA)
			return 1;
	}
	return 0;
}

/* Run the first n kernels of c's GPU IR module gm on the interpreter with io. */
static void run_first_kernels(compiled *c, tinyc_gpu_module *gm, int n, tinyc_io *io)
{
	const tinyc_schedule *s = tinyc_module_schedule(c->m);
	int saved = gm->nkernel;
	gm->nkernel = n;
	int rc = tinyc_gpu_run_interp(c->ctx, gm, s->bind ? s->bind->val : NULL, io);
	gm->nkernel = saved;
	if (rc < 0)
		tinyc_ctx_print_diags(c->ctx, stderr);
	cr_assert_eq(rc, 0);
}

/* The text dump of a stage. */
static char *dump(compiled *c, const char *stage)
{
	int n;
	const tinyc_pass *p = tinyc_pipeline(&n);
	tinyc_buf b = {0};
	cr_assert_eq(p[tinyc_pass_find(stage)].print(c->m, TINYC_FMT_TEXT, &b), 0);
	return b.data;
}

/* ------------------------------------------------------------------ plans ---- */

Test(wgmma_plan, chosen_on_sm90a_for_aligned_bound_sizes)
{
	unsetenv("TINYC_MATMUL");
	unsetenv("TINYC_MATMUL_TILE");
	unsetenv("TINYC_WGMMA_N");
	compiled c;
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=4096,N=4096,K=4096", "schedule"), 0,
		     "%s", first_kind(c.ctx));
	const tinyc_mm_plan *mp = chosen(&c);
	cr_assert_eq(mp->t.variant, TINYC_MM_WGMMA);
	cr_assert_eq(mp->t.bm, 128);
	cr_assert_eq(mp->t.bn, 256);
	cr_assert_eq(mp->t.bk, 64);
	cr_assert_eq(mp->t.stages, 4);
	cr_assert_eq(mp->t.consumers, 2);
	cr_assert_eq(mp->t.threads, 384);
	cr_assert_eq(mp->t.wgn, 256);
	cr_assert(mp->t.a_kmajor && !mp->t.b_kmajor, "X is k-contiguous, W n-contiguous");
	cr_assert_eq(mp->t.grid, 132, "512 tiles over the 132 SMs");
	/* 4 stages of (128 + 256) x 64 halves, 8 mbarriers, 8 staging buffers of 16 x 144 B */
	cr_assert_eq(mp->t.smem, 4 * (128 + 256) * 64 * 2 + 64 + 8 * 16 * 144);
	cr_assert(!mp->t.pred_m && !mp->t.pred_n && !mp->t.pred_k);
	char *d = dump(&c, "schedule");
	cr_assert(strstr(d, "matmul wgmma [128,256,64] stages 4 tma, 1+2 warpgroups, m64n256k16"), "%s", d);
	cr_assert(strstr(d, "(TMA ring: a full and an empty mbarrier per stage, phase parity as the "
			    "async token)"), "%s", d);
	cr_assert(strstr(d, "persistent grid of 132 CTAs"), "%s", d);
	cr_assert(strstr(d, "setmaxnreg 40/232"), "%s", d);
	cr_assert(strstr(d, "loads: A TMA box [64 k x BM m] (k-major), B TMA boxes [64 n x 64 k] "
			    "(n-major, transposed in the descriptor)"), "%s", d);
	free(d);
	cr_assert_eq(mp->t.raster, 8, "the k panels of 8 x 16.5 tiles (43 MB) fit the 50 MB L2");
	compiled_free(&c);
	/* at 8192^3 they do not (86 MB): groups of 32 m tiles */
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=8192,N=8192,K=8192", "schedule"), 0);
	cr_assert_eq(chosen(&c)->t.raster, 32);
	compiled_free(&c);
}

Test(wgmma_plan, not_proposed_where_it_cannot_run)
{
	unsetenv("TINYC_MATMUL");
	unsetenv("TINYC_MATMUL_TILE");
	compiled c;
	/* sizes unknown at compile time: TMA cannot prove the alignment */
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", NULL, "schedule"), 0);
	cr_assert(!has_wgmma(&c));
	compiled_free(&c);
	/* K = 333: the rows of X are 666 bytes apart, not a multiple of 16: TMA cannot load X;
	 * the producer's threads copy it, or a packing kernel packs it first; W (2000-byte
	 * rows) comes by TMA either way */
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=127,N=1000,K=333", "schedule"), 0);
	const tinyc_schedule *s = tinyc_module_schedule(c.m);
	int copies = 0, packs = 0;
	for (int i = 0; i < s->kerns[0].ncand; i++) {
		const tinyc_mm_plan *mp = s->kerns[0].cands[i].ext;
		if (mp->t.variant != TINYC_MM_WGMMA)
			continue;
		cr_assert(mp->t.b_tma && !mp->t.pack_b);
		if (mp->t.pack_a)
			packs += mp->t.a_tma;
		else
			copies += !mp->t.a_tma;
	}
	cr_assert_gt(copies, 0);
	cr_assert_eq(packs, copies, "every copying candidate has its packed twin");
	compiled_free(&c);
	/* epilogue reductions need block barriers: mma runs them */
	cr_assert_eq(compile_to(&c, EPI_DIR "/reductions.uop", NULL, "sm_90a", "M=256,N=256,K=256",
				"schedule"), 0);
	cr_assert(!has_wgmma(&c));
	compiled_free(&c);
	/* Ampere has no wgmma */
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_80", "M=4096,N=4096,K=4096", "schedule"), 0);
	cr_assert(!has_wgmma(&c));
	compiled_free(&c);
	/* a forced wgmma that cannot apply falls back to the other candidates */
	setenv("TINYC_MATMUL", "wgmma", 1);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", NULL, "schedule"), 0);
	cr_assert_neq(chosen(&c)->t.variant, TINYC_MM_WGMMA);
	compiled_free(&c);
	unsetenv("TINYC_MATMUL");
}

/* Rows that TMA cannot load are packed: a packing kernel before the matmul copies the
 * operand into a TEMP workspace with rows padded to 8 elements, the tensor map reads the
 * workspace with the operand's extents (the pad, zeros, is never read); the model prefers it to
 * the copying producer; a batched operand keeps its batch stride. */
Test(wgmma_plan, unaligned_rows_are_packed)
{
	unsetenv("TINYC_MATMUL");
	unsetenv("TINYC_MATMUL_TILE");
	unsetenv("TINYC_WGMMA_N");
	compiled c;
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=4097,N=4097,K=4097", "gpuir"), 0,
		     "%s", first_kind(c.ctx));
	const tinyc_mm_plan *mp = chosen(&c);
	cr_assert_eq(mp->t.variant, TINYC_MM_WGMMA);
	cr_assert(mp->t.pack_a && mp->t.pack_b && mp->t.a_tma && mp->t.b_tma);
	tinyc_mm_operand po;
	cr_assert_eq(tinyc_matmul_packed_operand(&mp->prob, &mp->t, tinyc_module_schedule(c.m)->bind->val,
						 0, &po), 4097 * 4104);
	cr_assert(tinyc_evt_poly_is_const(&po.stride[0], 4104) && tinyc_evt_poly_is_const(&po.stride[1], 1));
	cr_assert_eq(tinyc_matmul_packed_operand(&mp->prob, &mp->t, tinyc_module_schedule(c.m)->bind->val,
						 1, &po), 4097 * 4104);
	cr_assert(tinyc_evt_poly_is_const(&po.stride[0], 4104) && tinyc_evt_poly_is_const(&po.stride[1], 1),
		  "W stays n-contiguous");
	const tinyc_gpu_module *gm = tinyc_module_gpuir(c.m);
	cr_assert_eq(gm->nkernel, 3);
	cr_assert_str_eq(gm->kernels[0]->name, "k0_Y_packA");
	cr_assert_str_eq(gm->kernels[1]->name, "k0_Y_packB");
	cr_assert_str_eq(gm->kernels[2]->name, "k0_Y");
	int ws = 0;
	for (int i = 0; i < gm->nbuf; i++)
		if (gm->bufs[i].role == TINYC_GB_TEMP && !strncmp(gm->bufs[i].name, "pk", 2)) {
			cr_assert_eq(gm->bufs[i].rank, 1);
			cr_assert_eq(gm->bufs[i].shape[0].val, 4097 * 4104);
			ws++;
		}
	cr_assert_eq(ws, 2);
	char *d = dump(&c, "schedule");
	cr_assert(strstr(d, "pack: A (rows not 16-byte aligned) copied first by a packing kernel "
			    "into a workspace of strides (4104, 1, 0)"), "%s", d);
	free(d);
	compiled_free(&c);
	/* batched, odd K and N: both packed, each with its batch stride */
	setenv("TINYC_MATMUL", "wgmma", 1);
	cr_assert_eq(compile_to(&c, EPI_DIR "/batched.uop", NULL, "sm_90a", "B=3,M=130,N=77,K=75",
				"gpuir"), 0, "%s", first_kind(c.ctx));
	unsetenv("TINYC_MATMUL");
	mp = chosen(&c);
	cr_assert(mp->t.variant == TINYC_MM_WGMMA && mp->t.pack_a && mp->t.pack_b);
	const int64_t *sym = tinyc_module_schedule(c.m)->bind->val;
	cr_assert_eq(tinyc_matmul_packed_operand(&mp->prob, &mp->t, sym, 0, &po), 3 * 130 * 80);
	cr_assert(tinyc_evt_poly_is_const(&po.stride[2], 130 * 80));
	cr_assert_eq(tinyc_matmul_packed_operand(&mp->prob, &mp->t, sym, 1, &po), 3 * 75 * 80);
	cr_assert(tinyc_evt_poly_is_const(&po.stride[0], 80) && tinyc_evt_poly_is_const(&po.stride[2], 75 * 80));
	cr_assert_eq(tinyc_module_gpuir(c.m)->nkernel, 3);
	compiled_free(&c);
	/* aligned rows need no packing */
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=4096,N=4096,K=4096", "schedule"), 0);
	cr_assert(!chosen(&c)->t.pack_a && !chosen(&c)->t.pack_b);
	compiled_free(&c);
}

/* The packing kernels, run alone on the GPU IR interpreter with their workspaces read back
 * as outputs, against the layout computed here: X[13, 9] into rows of 16 (k contiguous),
 * W[9, 11] into rows of 16 (n contiguous), zeros in the pads. */
Test(wgmma_plan, packing_kernels_on_the_interpreter)
{
	setenv("TINYC_MATMUL", "wgmma", 1);
	compiled c;
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=13,N=11,K=9", "gpuir"), 0, "%s",
		     first_kind(c.ctx));
	unsetenv("TINYC_MATMUL");
	cr_assert(chosen(&c)->t.pack_a && chosen(&c)->t.pack_b);
	tinyc_gpu_module *gm = tinyc_module_gpuir(c.m);
	cr_assert_eq(gm->nkernel, 3);
	int ws[2] = {-1, -1};
	for (int i = 0; i < gm->nbuf; i++) {
		if (!strcmp(gm->bufs[i].name, "pkA_k0_Y"))
			ws[0] = i;
		if (!strcmp(gm->bufs[i].name, "pkB_k0_Y"))
			ws[1] = i;
	}
	cr_assert(ws[0] >= 0 && ws[1] >= 0);
	for (int w = 0; w < 2; w++) {
		gm->bufs[ws[w]].role = TINYC_GB_OUTPUT;
		gm->bufs[ws[w]].index = 1 + w;
	}
	int64_t xs[2] = {13, 9}, wsh[2] = {9, 11}, bs[1] = {11};
	tinyc_tensor *in[3] = {tinyc_tensor_alloc(c.ctx, TINYC_HALF, 2, xs),
			       tinyc_tensor_alloc(c.ctx, TINYC_HALF, 2, wsh),
			       tinyc_tensor_alloc(c.ctx, TINYC_HALF, 1, bs)};
	for (int t = 0; t < 3; t++)
		for (int64_t i = 0; i < tinyc_tensor_numel(in[t]); i++)
			tinyc_tensor_set(in[t], i, (double)(t * 200 + i + 1));	/* exact in half */
	tinyc_io io = {3, in, 0, NULL};
	run_first_kernels(&c, gm, 2, &io);	/* the packing kernels only */
	cr_assert_eq(io.nout, 3);
	for (int64_t r = 0; r < 13; r++)
		for (int64_t k = 0; k < 16; k++)
			cr_assert_eq(tinyc_tensor_get(io.out[1], r * 16 + k), k < 9 ? (double)(r * 9 + k + 1) : 0.0,
				     "A packed (%d, %d)", (int)r, (int)k);
	for (int64_t k = 0; k < 9; k++)
		for (int64_t n = 0; n < 16; n++)
			cr_assert_eq(tinyc_tensor_get(io.out[2], k * 16 + n),
				     n < 11 ? (double)(200 + k * 11 + n + 1) : 0.0, "B packed (%d, %d)", (int)k, (int)n);
	tinyc_io_clear_outputs(&io);
	for (int t = 0; t < 3; t++)
		tinyc_tensor_free(in[t]);
	compiled_free(&c);
}

/* Compile file to GPU IR for sm_90a with the wgmma template forced, TINYC_WGMMA_PACK=pack
 * and, unless NULL, TINYC_MATMUL_TILE=tile (the knobs are unset again). */
static void compile_wgmma_gpuir(compiled *c, const char *file, const char *tile, const char *pack)
{
	setenv("TINYC_MATMUL", "wgmma", 1);
	if (tile)
		setenv("TINYC_MATMUL_TILE", tile, 1);
	setenv("TINYC_WGMMA_PACK", pack, 1);
	int rc = compile_to(c, file, NULL, "sm_90a", NULL, "gpuir");
	unsetenv("TINYC_MATMUL");
	unsetenv("TINYC_MATMUL_TILE");
	unsetenv("TINYC_WGMMA_PACK");
	cr_assert_eq(rc, 0, "%s: %s", file, first_kind(c->ctx));
}

/* The im2col packing kernel of a convolution (sched/conv.h), run alone on the GPU IR
 * interpreter: conv2d x[1,3,11,9], 5x5, stride 2, padding 2 in half (OH = 6, OW = 5: M = 30,
 * K = 75) packs A M-major (m contiguous, rows of 32), each element the input pixel of the
 * window worked out here from the conv's parameters, 0 in the padding and in the pad. */
Test(wgmma_plan, conv_im2col_packed_m_major_on_the_interpreter)
{
	compiled c;
	compile_wgmma_gpuir(&c, CONV_FP16, "64x64x64", "1");	/* the model takes the NHWC copy */
	const tinyc_mm_plan *mp = chosen(&c);
	cr_assert(mp->prob.a.gather.on && mp->t.pack_a && !mp->t.a_kmajor, "A gathered, packed m-major");
	tinyc_gpu_module *gm = tinyc_module_gpuir(c.m);
	int ws = -1;
	for (int i = 0; i < gm->nbuf; i++)
		if (!strcmp(gm->bufs[i].name, "pkA_k0_y"))
			ws = i;
	cr_assert(ws >= 0 && gm->nkernel == 3);
	gm->bufs[ws].role = TINYC_GB_OUTPUT;
	gm->bufs[ws].index = 1;
	int64_t xs[4] = {1, 3, 11, 9}, wsh[4] = {4, 3, 5, 5}, bs[1] = {4};
	tinyc_tensor *in[3] = {tinyc_tensor_alloc(c.ctx, TINYC_HALF, 4, xs),
			       tinyc_tensor_alloc(c.ctx, TINYC_HALF, 4, wsh),
			       tinyc_tensor_alloc(c.ctx, TINYC_HALF, 1, bs)};
	for (int64_t i = 0; i < tinyc_tensor_numel(in[0]); i++)
		tinyc_tensor_set(in[0], i, (double)(i + 1));	/* exact in half */
	tinyc_io io = {3, in, 0, NULL};
	run_first_kernels(&c, gm, 1, &io);	/* the packing kernel of A only */
	cr_assert_eq(io.nout, 2);
	for (int64_t k = 0; k < 75; k++)
		for (int64_t m = 0; m < 32; m++) {
			int64_t ci = k / 25, kh = k / 5 % 5, kw = k % 5, oh = m / 5, ow = m % 5;
			int64_t ih = oh * 2 + kh - 2, iw = ow * 2 + kw - 2;
			double want = m < 30 && ih >= 0 && ih < 11 && iw >= 0 && iw < 9
					      ? (double)(ci * 99 + ih * 9 + iw + 1) : 0.0;
			cr_assert_eq(tinyc_tensor_get(io.out[1], k * 32 + m), want, "A packed (k %d, m %d)",
				     (int)k, (int)m);
		}
	tinyc_io_clear_outputs(&io);
	for (int t = 0; t < 3; t++)
		tinyc_tensor_free(in[t]);
	compiled_free(&c);
}

/* Check the channels-last copy of x[L][C][P] (element i holding (i * mul + add) % mod + 1):
 * x'[l][p][ci] with ci < Cp, zeros for ci >= C. */
static void expect_nhwc_copy(const tinyc_tensor *xc, int64_t L, int64_t C, int64_t P, int64_t Cp,
			     int64_t mul, int64_t add, int64_t mod)
{
	for (int64_t l = 0; l < L; l++)
		for (int64_t p = 0; p < P; p++)
			for (int64_t ch = 0; ch < Cp; ch++) {
				int64_t i = (l * C + ch) * P + p;
				cr_assert_eq(tinyc_tensor_get(xc, (l * P + p) * Cp + ch),
					     ch < C ? (double)((i * mul + add) % mod + 1) : 0.0,
					     "x' (l %d, p %d, c %d)", (int)l, (int)p, (int)ch);
			}
}

/* Check the weight w[N][C][KH][KW] (element i holding (i * mul + add) % mod + 1) packed
 * K-major for the NHWC path: row n, k = (kh, kw, ci) with ci < Cp, zeros for ci >= C. */
static void expect_nhwc_weight(const tinyc_tensor *pk, int64_t N, int64_t C, int64_t KH, int64_t KW,
			       int64_t Cp, int64_t mul, int64_t add, int64_t mod)
{
	int64_t K = KH * KW * Cp;
	for (int64_t n = 0; n < N; n++)
		for (int64_t k = 0; k < K; k++) {
			int64_t kh = k / (KW * Cp), kw = k / Cp % KW, ch = k % Cp;
			int64_t i = ((n * C + ch) * KH + kh) * KW + kw;
			cr_assert_eq(tinyc_tensor_get(pk, n * K + k), ch < C ? (double)((i * mul + add) % mod + 1) : 0.0,
				     "B packed (k %d, n %d)", (int)k, (int)n);
		}
}

/* The first kernel of a conv forced onto the NHWC path (file: conv2d x[L][C][H][W] with
 * N filters KH x KW and a bias of N), run alone on the GPU IR interpreter: the transpose
 * writes x'[l][p][c] (Cp channels, zeros past C) and its blocks past the transpose's pack
 * B K-major with k = (kh, kw, ci), both worked out here from the shapes. */
static void nhwc_first_kernel(const char *file, int64_t L, int64_t C, int64_t H, int64_t W, int64_t N,
			      int64_t KH, int64_t KW, int64_t Cp, int64_t P)
{
	compiled c;
	compile_wgmma_gpuir(&c, file, "64x64x64x4", "2");
	const tinyc_mm_plan *mp = chosen(&c);
	cr_assert(mp->t.a_nhwc && mp->t.pack_b && !mp->t.pack_a, "A nhwc, B packed");
	cr_assert(mp->t.nhwc.c == Cp && mp->t.nhwc.c_in == C && mp->t.nhwc.p == P && mp->t.nhwc.l == L);
	cr_assert(mp->prob.k.sym < 0 && mp->prob.k.val == KH * KW * Cp, "K = KH KW Cp");
	tinyc_gpu_module *gm = tinyc_module_gpuir(c.m);
	int wx = -1, wb = -1;
	for (int i = 0; i < gm->nbuf; i++) {
		if (!strcmp(gm->bufs[i].name, "nhwc_k0_y"))
			wx = i;
		if (!strcmp(gm->bufs[i].name, "pkB_k0_y"))
			wb = i;
	}
	cr_assert(wx >= 0 && wb >= 0 && gm->nkernel == 2, "the transpose kernel packs the weight too");
	gm->bufs[wx].role = TINYC_GB_OUTPUT, gm->bufs[wx].index = 1;
	gm->bufs[wb].role = TINYC_GB_OUTPUT, gm->bufs[wb].index = 2;
	int64_t xs[4] = {L, C, H, W}, wsh[4] = {N, C, KH, KW}, bs[1] = {N};
	tinyc_tensor *in[3] = {tinyc_tensor_alloc(c.ctx, TINYC_HALF, 4, xs),
			       tinyc_tensor_alloc(c.ctx, TINYC_HALF, 4, wsh),
			       tinyc_tensor_alloc(c.ctx, TINYC_HALF, 1, bs)};
	for (int t = 0; t < 3; t++)
		for (int64_t i = 0; i < tinyc_tensor_numel(in[t]); i++)
			tinyc_tensor_set(in[t], i, (double)(i % 2000 + 1));	/* exact in half */
	tinyc_io io = {3, in, 0, NULL};
	run_first_kernels(&c, gm, 1, &io);	/* the transpose and the weight's packing */
	cr_assert_eq(io.nout, 3);
	expect_nhwc_copy(io.out[1], L, C, P, Cp, 1, 0, 2000);
	expect_nhwc_weight(io.out[2], N, C, KH, KW, Cp, 1, 0, 2000);
	tinyc_io_clear_outputs(&io);
	for (int t = 0; t < 3; t++)
		tinyc_tensor_free(in[t]);
	compiled_free(&c);
}

/* conv2d x[2,16,9,7], 24 filters 3x3, stride 2, padding 1 in half (sched/conv_nhwc.c). */
Test(wgmma_plan, conv_nhwc_copy_and_weight_on_the_interpreter)
{
	nhwc_first_kernel(NHWC_FP16, 2, 16, 9, 7, 24, 3, 3, 16, 63);
}

/* A conv whose channels are not a multiple of 8 (the stem's 3): conv2d x[1,3,11,9], 4
 * filters 5x5, stride 2, padding 2 in half.  The copy has 8 channels (the last 5 zeros),
 * K = 5*5*8 = 200, and B's rows for the padded channels are zeros (a guard ci < 3 in its
 * gather). */
Test(wgmma_plan, conv_nhwc_padded_channels_on_the_interpreter)
{
	nhwc_first_kernel(CONV_FP16, 1, 3, 11, 9, 4, 5, 5, 8, 99);
}

/* The channels-last hand-off (sched/conv_chain.c) on a BasicBlock x[3,16,7,7] in half,
 * both convs forced onto the NHWC path: the first conv's epilogue stores t0 as
 * [l][p][c] (strides along m, n, l: 16, 1, 784), the second gathers it with no transpose
 * kernel of its own, and the first conv's transpose kernel packs both weights: 3 kernels.
 * That kernel, run alone on the GPU IR interpreter, packs the second weight K-major with
 * k = (kh, kw, ci), worked out here from the shapes. */
Test(wgmma_plan, conv_chain_nhwc_store_and_both_weights_in_one_kernel)
{
	compiled c;
	compile_wgmma_gpuir(&c, BLOCK_ODD_FP16, "64x64x64x4", "2");
	const tinyc_schedule *s = tinyc_module_schedule(c.m);
	cr_assert_eq(s->nkern, 2);
	const tinyc_mm_plan *m0 = tinyc_skernel_plan(&s->kerns[0])->ext;
	const tinyc_mm_plan *m1 = tinyc_skernel_plan(&s->kerns[1])->ext;
	cr_assert(m0->t.a_nhwc && m1->t.a_nhwc, "both convs NHWC");
	cr_assert(m0->t.nhwc.feeds == 2 && !m0->t.nhwc.stored_by, "k0 stores t0 for k1");
	cr_assert(m1->t.nhwc.stored_by == 1 && !m1->t.nhwc.feeds, "k1 reads t0 as stored");
	int stores = 0;
	for (int i = 0; i < m0->prob.evt->n; i++) {
		const tinyc_evt_node *nd = &m0->prob.evt->nodes[i];
		if (nd->kind != TINYC_EVT_AUX_STORE)
			continue;
		stores++;
		cr_assert(tinyc_evt_poly_is_const(&nd->t.lay.stride[0], 16) &&
			  tinyc_evt_poly_is_const(&nd->t.lay.stride[1], 1) &&
			  tinyc_evt_poly_is_const(&nd->t.lay.stride[2], 784), "t0 stored [l][p][c]");
	}
	cr_assert_eq(stores, 1);
	tinyc_gpu_module *gm = tinyc_module_gpuir(c.m);
	cr_assert_eq(gm->nkernel, 3, "transpose + both packs, conv1, conv2");
	cr_assert_str_eq(gm->kernels[0]->name, "k0_where_nhwc");
	int wb = -1;
	for (int i = 0; i < gm->nbuf; i++)
		if (!strcmp(gm->bufs[i].name, "pkB_k1_y"))
			wb = i;
	cr_assert(wb >= 0);
	gm->bufs[wb].role = TINYC_GB_OUTPUT, gm->bufs[wb].index = 1;
	int64_t xs[4] = {3, 16, 7, 7}, wsh[4] = {16, 16, 3, 3}, vs[1] = {16};
	tinyc_tensor *in[11];
	for (int t = 0; t < 11; t++) {
		in[t] = t == 0 ? tinyc_tensor_alloc(c.ctx, TINYC_HALF, 4, xs)
			: t == 1 || t == 6 ? tinyc_tensor_alloc(c.ctx, TINYC_HALF, 4, wsh)
					   : tinyc_tensor_alloc(c.ctx, TINYC_HALF, 1, vs);
		for (int64_t i = 0; i < tinyc_tensor_numel(in[t]); i++)
			tinyc_tensor_set(in[t], i, (double)((i * 7 + t) % 1000 + 1));	/* exact in half */
	}
	tinyc_io io = {11, in, 0, NULL};
	run_first_kernels(&c, gm, 1, &io);
	cr_assert_eq(io.nout, 2);
	expect_nhwc_weight(io.out[1], 16, 16, 3, 3, 16, 7, 6, 1000);	/* conv2.weight: input 6 */
	tinyc_io_clear_outputs(&io);
	for (int t = 0; t < 11; t++)
		tinyc_tensor_free(in[t]);
	compiled_free(&c);
}

Test(wgmma_plan, ampere_big_tiles_in_dynamic_shared_memory)
{
	unsetenv("TINYC_MATMUL");
	setenv("TINYC_MATMUL_TILE", "128x256x32x4", 1);
	compiled c;
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_80", "M=512,N=512,K=512", "cuda"), 0, "%s",
		     first_kind(c.ctx));
	unsetenv("TINYC_MATMUL_TILE");
	const tinyc_mm_plan *mp = chosen(&c);
	cr_assert_eq(mp->t.variant, TINYC_MM_MMA);
	cr_assert_eq(mp->t.stages, 4);
	cr_assert(mp->t.dyn_smem);
	/* 4 stages of As[128][32 + 8] and Bs[32][256 + 8] halves */
	cr_assert_eq(mp->t.smem, 4 * (128 * 40 + 32 * 264) * 2);
	char *d = dump(&c, "cuda");
	cr_assert(strstr(d, "extern __shared__ __align__(128) unsigned char tinyc_dyn_smem[];"), "%s", d);
	free(d);
	compiled_free(&c);
}

/* ----------------------------------------------------------------- GPU IR ---- */

Test(wgmma_gpuir, ring_barriers_and_warpgroups)
{
	unsetenv("TINYC_MATMUL");
	unsetenv("TINYC_MATMUL_TILE");
	setenv("TINYC_WGMMA_CLUSTER", "1", 1);	/* the single-CTA ring (clusters: below) */
	compiled c;
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=4096,N=4096,K=4096", "gpuir"), 0,
		     "%s", first_kind(c.ctx));
	tinyc_gpu_module *gm = tinyc_module_gpuir(c.m);
	cr_assert_str_eq(gm->target, "sm_90a");
	cr_assert_eq(gm->nkernel, 1);
	const tinyc_gkernel *k = gm->kernels[0];
	cr_assert_eq(k->block[0], 384);
	cr_assert_eq(k->min_blocks_per_sm, 1, "setmaxnreg needs the register cap at entry");
	cr_assert_eq(k->dyn_smem, 4 * (128 + 256) * 64 * 2);
	int tmaps = 0;
	for (int v = 0; v < k->nvar; v++) {
		const tinyc_gvar *x = &k->vars[v];
		if (x->kind == TINYC_GV_SHARED && x->dynamic)
			cr_assert(x->align == 1024 && x->offset % 1024 == 0, "%s", x->name);
		if (x->kind != TINYC_GV_PARAM_TMAP)
			continue;
		tmaps++;
		cr_assert(x->tmap);
		cr_assert_eq(x->tmap->rank, 2);
		cr_assert_eq(x->tmap->swizzle, 128);
		cr_assert_eq(x->tmap->box[0], 64);
		cr_assert_eq(x->tmap->box[1], !strcmp(gm->bufs[x->tmap->buf].name, "X") ? 128 : 64);
	}
	cr_assert_eq(tmaps, 2);
	char *d = dump(&c, "gpuir");
	const char *want[] = {
		"tensormap tmA = X half[K, M] strides [1, K] box [64, 128] swizzle 128",
		"tensormap tmB = W half[N, K] strides [1, N] box [64, 64] swizzle 128",
		"grid (132, 1, 1) block (384, 1, 1)",
		"pipeline ring: tma, 4 stages",
		"mbarrier.init full[0], 1 [pipe ring]",
		"mbarrier.init empty[0], 256 [pipe ring]",
		"setmaxnreg.dec 40",
		"setmaxnreg.inc 232",
		"mbarrier.wait empty[ps], parity pph ^ 1 [pipe ring]",
		"mbarrier.expect_tx full[ps], bytes 49152 [pipe ring]",
		"tma.load.2d As[ps * 8192] <- tmA(kt * 64, m0p) mbarrier full[ps] [pipe ring]",
		"tma.load.2d Bs[ps * 16384 + 12288] <- tmB(n0p + 192, kt * 64) mbarrier full[ps] [pipe ring]",
		"mbarrier.wait full[cs], parity cph [pipe ring]",
		"wgmma.fence",
		"wgmma.m64n256k16 acc[0] = As[cs * 8192 + cw * 4096] (k-major, swizzle 128 B) * Bs[cs * "
		"16384] (n-major, blocks 8192 B, swizzle 128 B) + (ckt > 0 ? acc[0] : 0)",
		"wgmma.m64n256k16 acc[0] += As[cs * 8192 + cw * 4096 + 48] (k-major, swizzle 128 B) * "
		"Bs[cs * 16384 + 3072]",
		"wgmma.commit",
		"wgmma.wait 1 (orders acc)",
		"mbarrier.arrive empty[(itc + 3) % 4] [pipe ring]",
		"wgmma.wait 0 (orders acc)",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++)
		cr_assert(strstr(d, want[i]), "missing: %s", want[i]);
	free(d);
	/* the interpreter runs it (tests/unit/test_hopper_interp.c); without buffers, the
	 * producer's first TMA load says which one is missing */
	int64_t sym[3] = {4096, 4096, 4096};
	tinyc_gpu_mem mem = {NULL, NULL, sym};
	cr_assert_eq(tinyc_gpu_interp(c.ctx, gm, k, &mem), -1);
	cr_assert_str_eq(first_kind(c.ctx), "GpuInterpError");
	cr_assert(strstr(tinyc_ctx_diag(c.ctx, 0)->msg, "tensor map tmA has no buffer"), "%s",
		  tinyc_ctx_diag(c.ctx, 0)->msg);
	/* the verifier refuses warpgroup statements outside sm_90a */
	tinyc_ctx_clear_diags(c.ctx);
	snprintf(gm->target, sizeof(gm->target), "sm_90");
	cr_assert_eq(tinyc_gpu_verify(c.ctx, gm, 232448), -1);
	cr_assert_str_eq(first_kind(c.ctx), "GpuIrInvalid");
	snprintf(gm->target, sizeof(gm->target), "sm_90a");
	compiled_free(&c);
	unsetenv("TINYC_WGMMA_CLUSTER");
}

Test(wgmma_gpuir, verifier_checks_operand_alignment)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_gpu_module *gm = tinyc_gpu_module_alloc(ctx);
	snprintf(gm->target, sizeof(gm->target), "sm_90a");
	gm->arch_major = 9;
	tinyc_gkernel *k = tinyc_gk_alloc(gm, "k");
	k->block[0] = 128;
	int pad = tinyc_gk_shared(k, "pad", TINYC_HALF, 8, 16, 1);
	int a = tinyc_gk_shared(k, "a", TINYC_HALF, 64 * 64, 16, 1);	/* at byte 16: misaligned */
	int b = tinyc_gk_shared(k, "b", TINYC_HALF, 64 * 64, 1024, 1);
	int acc = tinyc_gk_reg_array(k, "acc", TINYC_FLOAT, 32);
	cr_assert(pad >= 0 && a >= 0 && b >= 0 && acc >= 0);
	tinyc_gwg_layout km = {1, 0};
	tinyc_gs_append(k, k->body, tinyc_gs_decl(k, acc, tinyc_gx_float(k, TINYC_FLOAT, 0)));
	tinyc_gs_append(k, k->body, tinyc_gs_wgmma_fence(k));
	tinyc_gs_append(k, k->body, tinyc_gs_wgmma(k, acc, tinyc_gx_int(k, TINYC_INT, 0), a,
						   tinyc_gx_int(k, TINYC_INT, 0), km, b,
						   tinyc_gx_int(k, TINYC_INT, 0), km, 64, NULL));
	tinyc_gs_append(k, k->body, tinyc_gs_wgmma_commit(k));
	tinyc_gs_append(k, k->body, tinyc_gs_wgmma_wait(k, 0, acc));
	cr_assert_eq(tinyc_gpu_verify(ctx, gm, 0), -1);
	int found = 0;
	for (int i = 0; i < tinyc_ctx_diag_count(ctx); i++)
		found |= strstr(tinyc_ctx_diag(ctx, i)->msg, "1024-byte alignment") != NULL;
	cr_assert(found, "the misaligned tile is named");
	tinyc_gpu_module_free(gm);
	tinyc_ctx_free(ctx);
}

/* Whether a diagnostic of ctx holds text. */
static int diag_holds(tinyc_ctx *ctx, const char *text)
{
	for (int i = 0; i < tinyc_ctx_diag_count(ctx); i++)
		if (strstr(tinyc_ctx_diag(ctx, i)->msg, text))
			return 1;
	return 0;
}

/* TMA stores and bulk groups: the verifier names a source outside shared memory, a
 * destination that is no tensor map, a rank other than the map's, a wait count out of
 * range and, for sm_80, the missing TMA. */
Test(wgmma_gpuir, verifier_checks_tma_stores)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_gpu_module *gm = tinyc_gpu_module_alloc(ctx);
	snprintf(gm->target, sizeof(gm->target), "sm_90a");
	gm->arch_major = 9;
	tinyc_gbuf yb = {.name = "Y", .role = TINYC_GB_OUTPUT, .dtype = TINYC_HALF, .rank = 1,
			 .shape = {{64 * 64, -1}}};
	cr_assert(tinyc_gpu_add_buf(gm, &yb) >= 0);
	tinyc_gkernel *k = tinyc_gk_alloc(gm, "k");
	k->block[0] = 32;
	tinyc_gtmap d;
	memset(&d, 0, sizeof(d));
	d.buf = 0, d.dtype = TINYC_HALF, d.rank = 2, d.swizzle = 128;
	d.box[0] = 64, d.box[1] = 16;
	for (int i = 0; i < 2; i++) {
		d.dim[i] = tinyc_gx_int(k, TINYC_LONG, 64);
		d.stride[i] = tinyc_gx_int(k, TINYC_LONG, i ? 64 : 1);
	}
	d.offset = tinyc_gx_int(k, TINYC_LONG, 0);
	int tm = tinyc_gk_param_tmap_desc(k, "tm", &d);
	int sh = tinyc_gk_shared(k, "sh", TINYC_UINT, 512, 1024, 0);
	int ra = tinyc_gk_reg_array(k, "ra", TINYC_UINT, 4);
	cr_assert(tm >= 0 && sh >= 0 && ra >= 0);
	tinyc_gexpr *c2[2] = {tinyc_gx_int(k, TINYC_INT, 0), tinyc_gx_int(k, TINYC_INT, 0)};
	tinyc_gexpr *z = tinyc_gx_int(k, TINYC_INT, 0);
	tinyc_gs_append(k, k->body, tinyc_gs_decl(k, ra, tinyc_gx_int(k, TINYC_UINT, 0)));
	tinyc_gs_append(k, k->body, tinyc_gs_tma_store(k, tm, 2, c2, sh, z));	/* fine */
	tinyc_gs_append(k, k->body, tinyc_gs_tma_store(k, tm, 2, c2, ra, z));	/* from registers */
	tinyc_gs_append(k, k->body, tinyc_gs_tma_store(k, sh, 2, c2, sh, z));	/* to no map */
	tinyc_gs_append(k, k->body, tinyc_gs_tma_store(k, tm, 1, c2, sh, z));	/* rank 1 */
	tinyc_gs_append(k, k->body, tinyc_gs_bulk_commit(k));
	tinyc_gs_append(k, k->body, tinyc_gs_bulk_wait(k, 9));
	cr_assert_eq(tinyc_gpu_verify(ctx, gm, 0), -1);
	cr_assert(diag_holds(ctx, "tma.store source must be shared: ra"));
	cr_assert(diag_holds(ctx, "tma.store destination must be a tensor map: sh"));
	cr_assert(diag_holds(ctx, "tma.store rank differs from its tensor map's: tm"));
	cr_assert(diag_holds(ctx, "cp.async.bulk.wait_group count out of range"));
	cr_assert(!diag_holds(ctx, "TMA needs sm_90"));
	tinyc_ctx_clear_diags(ctx);
	snprintf(gm->target, sizeof(gm->target), "sm_80");
	gm->arch_major = 8;
	cr_assert_eq(tinyc_gpu_verify(ctx, gm, 0), -1);
	cr_assert(diag_holds(ctx, "TMA needs sm_90"));
	cr_assert(diag_holds(ctx, "bulk groups need sm_90"));
	tinyc_gpu_module_free(gm);
	tinyc_ctx_free(ctx);
}

Test(wgmma_gpuir, weight_stored_n_by_k_is_k_major)
{
	unsetenv("TINYC_MATMUL");
	unsetenv("TINYC_MATMUL_TILE");
	compiled c;
	cr_assert_eq(compile_to(&c, NULL, W_NK, "sm_90a", "M=1024,N=1024,K=512", "gpuir"), 0, "%s",
		     first_kind(c.ctx));
	const tinyc_mm_plan *mp = chosen(&c);
	cr_assert_eq(mp->t.variant, TINYC_MM_WGMMA);
	cr_assert(mp->t.a_kmajor && mp->t.b_kmajor);
	char *d = dump(&c, "gpuir");
	cr_assert(strstr(d, "tensormap tmB = Wt half[K, N] strides [1, K]"), "%s", d);
	cr_assert(strstr(d, "(k-major, swizzle 128 B) * Bs[cs * "), "%s", d);
	free(d);
	compiled_free(&c);
}

/* ------------------------------------------------------------------ nvrtc ---- */

/* Compile the CUDA of c to CUBIN for arch; the log must not report an ignored register
 * cap (C7508) or serialised wgmma. */
static void nvrtc_ok(compiled *c, const char *arch, const char *what)
{
	char *cuda = dump(c, "cuda");
	tinyc_blob blob;
	memset(&blob, 0, sizeof(blob));
	int rc = tinyc_nvrtc_compile(c->ctx, cuda, "wgmma.cu", arch, 1, &blob);
	if (rc < 0)
		tinyc_ctx_print_diags(c->ctx, stderr);
	cr_assert_eq(rc, 0, "%s: nvrtc for %s", what, arch);
	cr_assert(blob.is_cubin && blob.size > 0);
	cr_assert(!blob.log || (!strstr(blob.log, "C7508") && !strstr(blob.log, "serializ")),
		  "%s: %s", what, blob.log);
	tinyc_blob_clear(&blob);
	free(cuda);
}

/* The CUDA of c holds texts t1 and t2 (`why` says what they show), and nvrtc compiles it
 * for sm_90a. */
static void cuda_has_and_compiles(compiled *c, const char *t1, const char *t2, const char *why,
				  const char *what)
{
	char *cu = dump(c, "cuda");
	cr_assert(strstr(cu, t1) && strstr(cu, t2), "%s: %s", what, why);
	free(cu);
	nvrtc_ok(c, "sm_90a", what);
}

Test(wgmma_nvrtc, every_epilogue_graph_compiles_for_sm90a, .timeout = 600)
{
	if (tinyc_nvrtc_version() < 0) {
		cr_skip_test("nvrtc is not available");
		return;
	}
	static const char *const graphs[] = {
		"alpha_beta", "aux_twice", "batched", "beta_c_alpha_aux", "bias_relu", "clamp",
		"col_bias", "dead_branch", "gelu_tanh", "pre_and_act", "relu_twice", "scalar_tensor",
		"sigmoid",
	};
	setenv("TINYC_MATMUL", "wgmma", 1);
	for (size_t i = 0; i < sizeof(graphs) / sizeof(*graphs); i++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s.uop", EPI_DIR, graphs[i]);
		compiled c;
		const char *bind = !strcmp(graphs[i], "batched") ? "B=3,M=200,N=136,K=72" : "M=200,N=136,K=72";
		cr_assert_eq(compile_to(&c, path, NULL, "sm_90a", bind, "cuda"), 0, "%s: %s", graphs[i],
			     first_kind(c.ctx));
		cr_assert_eq(chosen(&c)->t.variant, TINYC_MM_WGMMA, "%s", graphs[i]);
		nvrtc_ok(&c, "sm_90a", graphs[i]);
		compiled_free(&c);
	}
	unsetenv("TINYC_MATMUL");
	/* the benchmark's kernel: 128x256 tiles, 128 accumulators per consumer thread; its
	 * odd-sized tails with packed operands (the packing kernels in the same text) */
	compiled c;
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=4096,N=4096,K=4096", "cuda"), 0);
	nvrtc_ok(&c, "sm_90a", "bias_relu 4096^3");
	compiled_free(&c);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=4097,N=4097,K=4097", "cuda"), 0);
	cr_assert(chosen(&c)->t.pack_a && chosen(&c)->t.pack_b);
	nvrtc_ok(&c, "sm_90a", "bias_relu 4097^3 packed");
	compiled_free(&c);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=127,N=1000,K=333", "cuda"), 0);
	cr_assert(chosen(&c)->t.pack_a && !chosen(&c)->t.pack_b);
	nvrtc_ok(&c, "sm_90a", "bias_relu 127x1000x333 packed");
	compiled_free(&c);
	/* rows of Y 1012 bytes apart (N = 506): staged, written out a word per lane; N = 4097
	 * above: a half per lane */
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=509,N=506,K=121", "cuda"), 0);
	cuda_has_and_compiles(&c, "Y_x2[", "= stage[", "the staged rows as words",
			      "bias_relu 509x506x121 staged words");
	compiled_free(&c);
	/* convolutions: the fp16 BasicBlock (A from the NHWC copy by cp.async; forced: A packed
	 * m-major by the im2col kernel), an odd strided conv with 16 channels on the NHWC path,
	 * and one of 3 channels (M = 30, K = 75: both operands packed) */
	cr_assert_eq(compile_to(&c, BLOCK_FP16, NULL, "sm_90a", NULL, "cuda"), 0);
	cr_assert(chosen(&c)->t.a_nhwc && chosen(&c)->t.pack_b && !chosen(&c)->t.pack_a);
	nvrtc_ok(&c, "sm_90a", "resnet_block_fp16 nhwc");
	compiled_free(&c);
	setenv("TINYC_MATMUL_TILE", "64x64x64x4", 1);
	setenv("TINYC_WGMMA_PACK", "1", 1);
	cr_assert_eq(compile_to(&c, BLOCK_FP16, NULL, "sm_90a", NULL, "cuda"), 0);
	cr_assert(chosen(&c)->t.pack_a && !chosen(&c)->t.a_kmajor && !chosen(&c)->t.a_nhwc);
	nvrtc_ok(&c, "sm_90a", "resnet_block_fp16 packed");
	compiled_free(&c);
	/* the NHWC producer with 3 stages: 64-row tiles on the odd conv (M = 20: a 128-row tile
	 * is not offered when M <= 64), 128-row tiles on the BasicBlock */
	setenv("TINYC_WGMMA_PACK", "2", 1);
	setenv("TINYC_MATMUL_TILE", "64x64x64x3", 1);
	cr_assert_eq(compile_to(&c, NHWC_FP16, NULL, "sm_90a", NULL, "cuda"), 0);
	cr_assert(chosen(&c)->t.a_nhwc && chosen(&c)->t.bm == 64 && chosen(&c)->t.stages == 3);
	nvrtc_ok(&c, "sm_90a", "nhwc_c16_k3_s2_odd_fp16 64x64x64x3");
	compiled_free(&c);
	setenv("TINYC_MATMUL_TILE", "128x64x64x3", 1);
	cr_assert_eq(compile_to(&c, BLOCK_FP16, NULL, "sm_90a", NULL, "cuda"), 0);
	cr_assert(chosen(&c)->t.a_nhwc && chosen(&c)->t.bm == 128 && chosen(&c)->t.stages == 3);
	nvrtc_ok(&c, "sm_90a", "resnet_block_fp16 nhwc 128x64x64x3");
	compiled_free(&c);
	/* 3 channels padded to 8 in the copy, B's padded rows zero by a guard */
	setenv("TINYC_MATMUL_TILE", "64x64x64x4", 1);
	cr_assert_eq(compile_to(&c, CONV_FP16, NULL, "sm_90a", NULL, "cuda"), 0);
	cr_assert(chosen(&c)->t.a_nhwc && chosen(&c)->t.nhwc.c_in == 3);
	nvrtc_ok(&c, "sm_90a", "c2d_k5_s2_p2_fp16 nhwc, channels padded");
	compiled_free(&c);
	unsetenv("TINYC_MATMUL_TILE");
	unsetenv("TINYC_WGMMA_PACK");
	/* a depthwise conv with a half bias on the direct kernel */
	cr_assert_eq(compile_to(&c, DW_BIAS_FP16, NULL, "sm_90a", NULL, "cuda"), 0);
	nvrtc_ok(&c, "sm_90a", "sep_dw_bias_k3_s2_fp16 direct");
	compiled_free(&c);
	/* the model's own plan: the NHWC copy, 3 channels padded to 8 */
	cr_assert_eq(compile_to(&c, CONV_FP16, NULL, "sm_90a", NULL, "cuda"), 0);
	cr_assert(chosen(&c)->t.a_nhwc && chosen(&c)->t.nhwc.c_in == 3);
	nvrtc_ok(&c, "sm_90a", "c2d_k5_s2_p2_fp16");
	compiled_free(&c);
}

/* Wave quantisation: 4096 x 768 x 3072 (GPT-2's MLP down-projection) has 96 tiles of
 * 128 x 256 on 132 SMs but 128 of 128 x 192; the plan takes them, and the n192 kernels
 * (cooperative; pingpong 64 x 192 at odd sizes, B n-major and k-major) compile. */
Test(wgmma_nvrtc, n192_tiles_against_wave_quantisation, .timeout = 300)
{
	compiled c;
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=4096,N=768,K=3072", "schedule"), 0);
	const tinyc_mm_plan *mp = chosen(&c);
	cr_assert_eq(mp->t.variant, TINYC_MM_WGMMA);
	cr_assert(mp->t.bm == 128 && mp->t.bn == 192 && mp->t.wgn == 192 && mp->t.grid == 128,
		  "[%d,%d] n%d grid %d", mp->t.bm, mp->t.bn, mp->t.wgn, mp->t.grid);
	compiled_free(&c);
	/* where 128 x 256 fills the SMs it stays */
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=4096,N=3072,K=768", "schedule"), 0);
	cr_assert_eq(chosen(&c)->t.bn, 256);
	compiled_free(&c);
	if (tinyc_nvrtc_version() < 0) {
		cr_skip_test("nvrtc is not available");
		return;
	}
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=4096,N=768,K=3072", "cuda"), 0);
	nvrtc_ok(&c, "sm_90a", "bias_relu 4096x768x3072 n192");
	compiled_free(&c);
	setenv("TINYC_MATMUL", "wgmma", 1);
	setenv("TINYC_MATMUL_TILE", "64x192x64x4", 1);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=509,N=506,K=121", "cuda"), 0);
	mp = chosen(&c);
	cr_assert(mp->t.bn == 192 && mp->t.pingpong, "[%d,%d] pp %d", mp->t.bm, mp->t.bn, mp->t.pingpong);
	nvrtc_ok(&c, "sm_90a", "bias_relu 509x506x121 64x192 pingpong");
	compiled_free(&c);
	setenv("TINYC_MATMUL_TILE", "128x192x64x4", 1);
	cr_assert_eq(compile_to(&c, NULL, W_NK, "sm_90a", "M=300,N=200,K=256", "cuda"), 0);
	mp = chosen(&c);
	cr_assert(mp->t.bn == 192 && mp->t.b_kmajor, "[%d,%d] b k-major %d", mp->t.bm, mp->t.bn,
		  mp->t.b_kmajor);
	nvrtc_ok(&c, "sm_90a", "W[N,K] 128x192");
	compiled_free(&c);
	unsetenv("TINYC_MATMUL");
	unsetenv("TINYC_MATMUL_TILE");
}

Test(wgmma_nvrtc, ampere_big_tiles_compile_for_sm80, .timeout = 300)
{
	if (tinyc_nvrtc_version() < 0) {
		cr_skip_test("nvrtc is not available");
		return;
	}
	static const char *const tiles[] = {"128x256x32x4", "256x128x64x3", "128x128x64x4"};
	for (size_t i = 0; i < sizeof(tiles) / sizeof(*tiles); i++) {
		setenv("TINYC_MATMUL", "mma", 1);
		setenv("TINYC_MATMUL_TILE", tiles[i], 1);
		compiled c;
		cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_80", "M=1000,N=1000,K=1000", "cuda"), 0);
		const tinyc_mm_plan *mp = chosen(&c);
		cr_assert(mp->t.variant == TINYC_MM_MMA && mp->t.dyn_smem, "%s", tiles[i]);
		nvrtc_ok(&c, "sm_80", tiles[i]);
		compiled_free(&c);
	}
	unsetenv("TINYC_MATMUL");
	unsetenv("TINYC_MATMUL_TILE");
}

/* ------------------------------------------------------------------- tune ---- */

Test(tune, class_store_lookup_and_choice)
{
	setenv("TINYC_WGMMA_CLUSTER", "1", 1);	/* the key of a single-CTA plan */
	unsetenv("TINYC_MATMUL");
	unsetenv("TINYC_MATMUL_TILE");
	char dir[] = "/tmp/tinyc-tune-XXXXXX";
	cr_assert(mkdtemp(dir));
	setenv("TINYC_CACHE_DIR", dir, 1);
	unsetenv("TINYC_TUNE");
	compiled c;
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=4096,N=4096,K=4096", "schedule"), 0);
	tinyc_schedule *s = tinyc_module_schedule(c.m);
	const tinyc_mm_plan *mp = chosen(&c);
	char cls[96];
	cr_assert_eq(tinyc_tune_class(s, &mp->prob, cls, sizeof(cls)), 0);
	cr_assert_str_eq(cls, "M12a.N12a.K12a.L0u.kn");
	char key[160];
	tinyc_matmul_config_key(&mp->t, key, sizeof(key));
	cr_assert_str_eq(key, "wgmma 128x256x64 s4 c2 n256");
	/* nothing stored yet; then a record for another configuration */
	tinyc_tune_entry *e = NULL;
	int n = -1;
	cr_assert_eq(tinyc_tune_load(&s->dev, &e, &n), 0);
	cr_assert_eq(n, 0);
	cr_assert_eq(tinyc_tune_store(c.ctx, s, &mp->prob, "wgmma 128x128x64 s5 c2 n128", 150.5), 0);
	cr_assert_eq(tinyc_tune_store(c.ctx, s, &mp->prob, "wgmma 128x128x64 s6 c2 n128", 149.25), 0);
	cr_assert_eq(tinyc_tune_load(&s->dev, &e, &n), 0);
	cr_assert_eq(n, 1, "the record is replaced");
	s->opt.tune = e;
	s->opt.ntune = n;
	const tinyc_tune_entry *got = tinyc_tune_find(s, &mp->prob);
	cr_assert(got);
	cr_assert_str_eq(got->config, "wgmma 128x128x64 s6 c2 n128");
	cr_assert_float_eq(got->us, 149.25, 1e-6);
	s->opt.tune = NULL;
	s->opt.ntune = 0;
	char *path = tinyc_tune_path(&s->dev);
	FILE *f = fopen(path, "r");
	cr_assert(f, "%s", path);
	char line[512];
	int lines = 0;
	while (fgets(line, sizeof(line), f))
		lines++;
	fclose(f);
	cr_assert_eq(lines, 1, "one line per class");
	/* a named target's options record has no tuning entries */
	cr_assert_eq(c.m->sched_opt.ntune, 0);
	tinyc_skernel *k = &s->kerns[0];
	cr_assert_eq(tinyc_tune_apply(s, k, 0), 0);
	cr_assert_eq(((tinyc_mm_plan *)tinyc_skernel_plan(k)->ext)->tuned_us, 0);
	/* a real device's record has them (driver/options.c): the stored configuration is chosen */
	s->opt.tune = e;
	s->opt.ntune = n;
	cr_assert_eq(tinyc_tune_apply(s, k, 0), 0);
	int tuned = -1;
	for (int i = 0; i < k->ncand; i++)
		if (((tinyc_mm_plan *)k->cands[i].ext)->tuned_us > 0)
			tuned = i;
	cr_assert_geq(tuned, 0);
	char tk[160];
	tinyc_matmul_config_key(&((tinyc_mm_plan *)k->cands[tuned].ext)->t, tk, sizeof(tk));
	cr_assert_str_eq(tk, "wgmma 128x128x64 s6 c2 n128");
	cr_assert(strstr(k->cands[tuned].desc, "(tuned)"));
	for (int i = 0; i < k->ncand; i++)
		cr_assert(i == tuned || k->cands[i].est_us > k->cands[tuned].est_us);
	s->opt.tune = NULL;
	s->opt.ntune = 0;
	free(e);
	unlink(path);
	free(path);
	char sub[512];
	snprintf(sub, sizeof(sub), "%s/tune", dir);
	rmdir(sub);
	rmdir(dir);
	unsetenv("TINYC_CACHE_DIR");
	compiled_free(&c);
	unsetenv("TINYC_WGMMA_CLUSTER");
}

/* ------------------------------------------------------------- 3xTF32 ---- */

#define LINEAR_FP32 TINYC_SOURCE_DIR "/examples/linear_fp32.uop"
#define GELU_RES_FP32 TINYC_SOURCE_DIR "/tests/gpu/tf32wg/linear_gelu_res_fp32.uop"

/* fp32 Linears (both operands k-contiguous) on sm_90a take the wgmma 3xTF32 form by the
 * cost model at GPT-2's shapes and when forced at odd sizes (tails in m, n and k; bias,
 * GELU and a residual in the epilogue); the CUDA compiles for sm_90a with three
 * m64nNk8 .tf32 wgmma per k step; sm_80 keeps the mma.sync 3xTF32 tile. */
Test(wgmma_nvrtc, tf32x3_wgmma_odd_shapes, .timeout = 600)
{
	if (tinyc_nvrtc_version() < 0) {
		cr_skip_test("nvrtc is not available");
		return;
	}
	unsetenv("TINYC_MATMUL");
	unsetenv("TINYC_MATMUL_TILE");
	compiled c;
	cr_assert_eq(compile_to(&c, LINEAR_FP32, NULL, "sm_90a", "M=4096,N=768,K=3072", "cuda"), 0);
	cr_assert(chosen(&c)->t.variant == TINYC_MM_WGMMA && chosen(&c)->t.tf32x3);
	char *cu = dump(&c, "cuda");
	cr_assert(strstr(cu, "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32"), "the tf32 wgmma");
	free(cu);
	nvrtc_ok(&c, "sm_90a", "linear_fp32 4096x768x3072");
	compiled_free(&c);
	setenv("TINYC_MATMUL", "tf32wg", 1);
	static const char *const odd[][2] = {
		{GELU_RES_FP32, "M=200,N=136,K=100"}, {GELU_RES_FP32, "M=333,N=257,K=3072"},
		{LINEAR_FP32, "M=97,N=45,K=68"},
	};
	for (size_t i = 0; i < sizeof(odd) / sizeof(*odd); i++) {
		cr_assert_eq(compile_to(&c, odd[i][0], NULL, "sm_90a", odd[i][1], "cuda"), 0, "%s", odd[i][1]);
		const tinyc_mm_plan *mp = chosen(&c);
		cr_assert(mp->t.variant == TINYC_MM_WGMMA && mp->t.tf32x3 && mp->t.bk == 32, "%s", odd[i][1]);
		nvrtc_ok(&c, "sm_90a", odd[i][1]);
		compiled_free(&c);
	}
	/* a K whose rows TMA cannot load (K = 70: 280-byte rows) is no wgmma 3xTF32 candidate */
	cr_assert_eq(compile_to(&c, LINEAR_FP32, NULL, "sm_90a", "M=37,N=45,K=70", "schedule"), 0);
	cr_assert(!chosen(&c)->t.tf32x3);
	compiled_free(&c);
	/* sm_80: the forced wgmma form matches no candidate (ignored); the mma.sync tile */
	cr_assert_eq(compile_to(&c, GELU_RES_FP32, NULL, "sm_80", "M=333,N=257,K=3072", "schedule"), 0);
	cr_assert_neq(chosen(&c)->t.variant, TINYC_MM_WGMMA);
	compiled_free(&c);
	setenv("TINYC_MATMUL", "tf32x3", 1);
	cr_assert_eq(compile_to(&c, GELU_RES_FP32, NULL, "sm_80", "M=333,N=257,K=3072", "cuda"), 0);
	unsetenv("TINYC_MATMUL");
	cr_assert_eq(chosen(&c)->t.variant, TINYC_MM_TF32X3);
	nvrtc_ok(&c, "sm_80", "linear_gelu_res_fp32 sm_80");
	compiled_free(&c);
}

/* The forced wgmma tile `tile` on the three epilogue graphs at `bind`, single CTAs and 2-CTA
 * clusters: each plan the tile (bm x bn) in the asked form, and nvrtc compiles its CUDA for
 * sm_90a.  Returns with the knobs unset. */
static void forced_tile_graphs(const char *tile, const char *bind, int bm, int bn)
{
	compiled c;
	setenv("TINYC_MATMUL", "wgmma", 1);
	setenv("TINYC_MATMUL_TILE", tile, 1);
	static const char *const graphs[] = {"bias_relu", "gelu_tanh", "aux_twice"};
	for (int cl = 1; cl <= 2; cl++) {
		setenv("TINYC_WGMMA_CLUSTER", cl == 2 ? "2" : "1", 1);
		for (size_t i = 0; i < sizeof(graphs) / sizeof(*graphs); i++) {
			char path[512];
			snprintf(path, sizeof(path), "%s/%s.uop", EPI_DIR, graphs[i]);
			cr_assert_eq(compile_to(&c, path, NULL, "sm_90a", bind, "cuda"), 0,
				     "%s: %s", graphs[i], first_kind(c.ctx));
			const tinyc_mm_plan *mp = chosen(&c);
			cr_assert(mp->t.bm == bm && mp->t.bn == bn && (mp->t.cluster == 2) == (cl == 2),
				  "%s: [%d,%d] cluster %d", graphs[i], mp->t.bm, mp->t.bn, mp->t.cluster);
			nvrtc_ok(&c, "sm_90a", graphs[i]);
			compiled_free(&c);
		}
	}
	unsetenv("TINYC_WGMMA_CLUSTER");
	unsetenv("TINYC_MATMUL_TILE");
	unsetenv("TINYC_MATMUL");
}

/* Fitted widths (sched/matmul.c fitted_bn): where 128 x 256 tiles leave the last round
 * partly idle and B's rows straddle L2 lines anyway, a width that is a multiple of 8 fills
 * whole rounds (3000 x 5000 x 2000, a 10000-byte pitch, in clusters: 264 pairs of
 * 128 x 232, 4 rounds); the B stage is whole 64-column boxes, the last chunk of the staged
 * epilogue partial.  Not where B's rows are aligned (2048 x 11008 x 4096: the fitted tiles'
 * boxes would straddle; measured 1.5x slower on an H100).  TINYC_WGMMA_FIT=0 drops them;
 * a forced tile of such a width is honoured at any size (odd sizes below, cluster and
 * single). */
Test(wgmma_nvrtc, fitted_width_tiles, .timeout = 300)
{
	compiled c;
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=3000,N=5000,K=2000", "schedule"), 0);
	const tinyc_mm_plan *mp = chosen(&c);
	cr_assert(mp->t.variant == TINYC_MM_WGMMA && mp->t.bm == 128 && mp->t.bn == 232 &&
		  mp->t.wgn == 232 && mp->t.cluster == 2 && mp->t.grid == 132 && mp->t.smem == 215104,
		  "[%d,%d] n%d cluster %d grid %d smem %lld", mp->t.bm, mp->t.bn, mp->t.wgn,
		  mp->t.cluster, mp->t.grid, (long long)mp->t.smem);
	compiled_free(&c);
	/* B's rows aligned: no fitted width.  2048 x 11008 x 4096 (688 tiles of 128 x 256, 5.2
	 * rounds) takes 192 x 192 (638 tiles, 4.8 rounds), 4096^3 keeps 128 x 256 */
	static const char *const aligned[] = {"M=2048,N=11008,K=4096", "M=4096,N=4096,K=4096"};
	static const int bm[] = {192, 128}, bn[] = {192, 256};
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", aligned[i], "schedule"), 0);
		cr_assert(chosen(&c)->t.bm == bm[i] && chosen(&c)->t.bn == bn[i], "%s: [%d,%d]", aligned[i],
			  chosen(&c)->t.bm, chosen(&c)->t.bn);
		compiled_free(&c);
	}
	setenv("TINYC_WGMMA_FIT", "0", 1);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=3000,N=5000,K=2000", "schedule"), 0);
	cr_assert(chosen(&c)->t.bn == 192 && chosen(&c)->t.cluster == 2);
	compiled_free(&c);
	unsetenv("TINYC_WGMMA_FIT");
	if (tinyc_nvrtc_version() < 0) {
		cr_skip_test("nvrtc is not available");
		return;
	}
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=3000,N=5000,K=2000", "cuda"), 0);
	cuda_has_and_compiles(&c, "m64n232k16", "columns 192..231", "n232, a partial chunk",
			      "bias_relu 3000x5000x2000 128x232 cluster");
	compiled_free(&c);
	forced_tile_graphs("128x232x64x4", "M=333,N=600,K=200", 128, 232);
}

/* 192-row tiles (three consumer warpgroups, 512 threads, setmaxnreg 32 / 160): proposed
 * only where they fill rounds better than 128 x 256 and 128 x 192 (2048 x 11008 x 4096,
 * not 8192^3 or 8192 x 4096 x 4096, measured slower there); forced ones compile for sm_90a
 * at odd sizes, single CTAs and clusters, on the epilogue graphs. */
Test(wgmma_nvrtc, rows192_tiles, .timeout = 300)
{
	compiled c;
	static const char *const slower[] = {"M=8192,N=8192,K=8192", "M=8192,N=4096,K=4096",
					     "M=4096,N=2304,K=768"};
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", slower[i], "schedule"), 0);
		cr_assert_neq(chosen(&c)->t.bm, 192, "%s", slower[i]);
		compiled_free(&c);
	}
	if (tinyc_nvrtc_version() < 0) {
		cr_skip_test("nvrtc is not available");
		return;
	}
	forced_tile_graphs("192x192x64x4", "M=520,N=600,K=200", 192, 192);
	/* the three consumers and the register split */
	setenv("TINYC_MATMUL", "wgmma", 1);
	setenv("TINYC_MATMUL_TILE", "192x192x64x4", 1);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=520,N=600,K=200", "schedule"), 0);
	unsetenv("TINYC_MATMUL_TILE");
	unsetenv("TINYC_MATMUL");
	const tinyc_mm_plan *mp = chosen(&c);
	cr_assert(mp->t.consumers == 3 && mp->t.threads == 512 && mp->t.regs_producer == 32 &&
		  mp->t.regs_consumer == 160);
	compiled_free(&c);
}

/* Clusters of 2 CTAs with B multicast (sched/matmul.c wgmma_cluster): the plan's pairs
 * and grid, the kernel's cluster attribute, multicast loads split by rank, arrivals on
 * both CTAs' empty barriers and the producer's tail; compiled for sm_90a at odd
 * sizes (an odd count of m tiles: the last pair's second tile predicated), cooperative and
 * pingpong.  Not offered where B is k-major or the operands are packed. */
Test(wgmma_nvrtc, cluster_2x1_b_multicast, .timeout = 300)
{
	compiled c;
	setenv("TINYC_MATMUL", "wgmma", 1);
	setenv("TINYC_WGMMA_CLUSTER", "2", 1);
	setenv("TINYC_MATMUL_TILE", "128x256x64x4", 1);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=1100,N=1000,K=1000", "cuda"), 0);
	const tinyc_mm_plan *mp = chosen(&c);
	/* 9 m tiles (5 pairs, the last half past M) x 4 n tiles: 20 pairs, 40 CTAs */
	cr_assert(mp->t.cluster == 2 && mp->t.grid == 40 && mp->t.pred_m && !mp->t.pingpong,
		  "cluster %d grid %d pred_m %d", mp->t.cluster, mp->t.grid, mp->t.pred_m);
	char *cu = dump(&c, "cuda");
	cr_assert(strstr(cu, "__cluster_dims__(2, 1, 1)"));
	cr_assert(strstr(cu, ".multicast::cluster"));
	cr_assert(strstr(cu, "mapa.shared::cluster"));
	cr_assert(strstr(cu, "barrier.cluster.arrive"));
	cr_assert(strstr(cu, "the producer's tail"));
	/* thread 0 prefetches both tensor maps before it sets up the barriers */
	const char *pf = strstr(cu, "asm volatile(\"prefetch.tensormap [%0];\\n\" :: \"l\"(&tmB)");
	cr_assert(pf && strstr(cu, "prefetch.tensormap") < pf && pf < strstr(cu, "mbarrier.init"));
	free(cu);
	char *gi = dump(&c, "gpuir");
	cr_assert(strstr(gi, "cluster (2, 1, 1)"));
	cr_assert(strstr(gi, "multicast 0x3"));
	cr_assert(strstr(gi, "tma.prefetch tmA") && strstr(gi, "tma.prefetch tmB"));
	free(gi);
	int nv = tinyc_nvrtc_version() >= 0;
	if (nv)
		nvrtc_ok(&c, "sm_90a", "bias_relu 1100x1000x1000 128x256 cluster 2x1");
	compiled_free(&c);
	setenv("TINYC_MATMUL_TILE", "64x128x64x6", 1);
	setenv("TINYC_WGMMA_PP", "1", 1);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=1000,N=1000,K=1000", "cuda"), 0);
	mp = chosen(&c);
	cr_assert(mp->t.cluster == 2 && mp->t.pingpong && mp->t.grid == 128, "cluster %d pp %d grid %d",
		  mp->t.cluster, mp->t.pingpong, mp->t.grid);
	if (nv)
		nvrtc_ok(&c, "sm_90a", "bias_relu 1000^3 64x128 pingpong cluster 2x1");
	compiled_free(&c);
	unsetenv("TINYC_WGMMA_PP");
	/* B k-major (W[N,K]): no cluster plan, so the forced cluster leaves none of wgmma */
	setenv("TINYC_MATMUL_TILE", "128x128x64x4", 1);
	cr_assert_eq(compile_to(&c, NULL, W_NK, "sm_90a", "M=300,N=256,K=256", "schedule"), 0);
	mp = chosen(&c);
	cr_assert(!mp || mp->t.variant != TINYC_MM_WGMMA || mp->t.cluster == 0);
	compiled_free(&c);
	unsetenv("TINYC_WGMMA_CLUSTER");
	unsetenv("TINYC_MATMUL_TILE");
	unsetenv("TINYC_MATMUL");
	if (!nv)
		cr_skip_test("nvrtc is not available");
}

/* Compile the CUDA of c for sm_90a with ptxas's report: no spills. */
static void nvrtc_no_spills(compiled *c, const char *what)
{
	char *cuda = dump(c, "cuda");
	tinyc_blob blob;
	memset(&blob, 0, sizeof(blob));
	static const char *const v[] = {"--ptxas-options=-v"};
	int rc = tinyc_nvrtc_compile_opts(c->ctx, cuda, "wgmma.cu", "sm_90a", 1, v, 1, &blob);
	if (rc < 0)
		tinyc_ctx_print_diags(c->ctx, stderr);
	cr_assert_eq(rc, 0, "%s: nvrtc", what);
	cr_assert(blob.log && strstr(blob.log, "0 bytes spill stores, 0 bytes spill loads") &&
		  !strstr(blob.log, "C7508"), "%s: %s", what, blob.log ? blob.log : "(no log)");
	tinyc_blob_clear(&blob);
	free(cuda);
}

/* Candidates of the first kernel whose tiles have a stream-K tail. */
static int tail_candidates(const compiled *c)
{
	const tinyc_schedule *s = tinyc_module_schedule(c->m);
	int n = 0;
	for (int i = 0; i < s->kerns[0].ncand; i++) {
		const tinyc_mm_plan *mp = s->kerns[0].cands[i].ext;
		n += s->kerns[0].cands[i].kind == TINYC_PLAN_MATMUL && mp && mp->t.tail_split > 1;
	}
	return n;
}

/* The stream-K tail (TINYC_WGMMA_STREAMK; sched/splitk.c tinyc_streamk_tiles): off by
 * default; the model's pick at 2048 x 11008 x 4096 (688 tiles of 128 x 256 on 132 SMs: the
 * last 28 split 4 ways, 5.25 rounds) and at decode 8 x 11008 x 4096 (172 tiles of 64 x 64:
 * the last 40 split 3 ways); not at 4096^3 (128 x 256: the last round 88% full; other
 * tiles' twins lose), none for fp32 operands (3xTF32) or where a forced split exceeds the k tiles; a forced split
 * on a forced grid at a small size.  The kernels compile for sm_90a without spills:
 * cooperative 128 x 256 (the benchmark's), pingpong and 2-CTA clusters. */
Test(wgmma_nvrtc, stream_k_tail, .timeout = 600)
{
	compiled c;
	const char *big = "M=2048,N=11008,K=4096";
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", big, "schedule"), 0);
	cr_assert_eq(tail_candidates(&c), 0, "off by default");
	compiled_free(&c);
	setenv("TINYC_WGMMA_STREAMK", "1", 1);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", big, "schedule"), 0);
	const tinyc_mm_plan *mp = chosen(&c);
	cr_assert(mp->t.variant == TINYC_MM_WGMMA && mp->t.bm == 128 && mp->t.bn == 256 &&
		  mp->t.tail_split == 4 && mp->t.tail_tiles == 28 && mp->t.grid == 132 && !mp->t.pingpong &&
		  !mp->t.cluster, "[%d,%d] tail %d x %d grid %d", mp->t.bm, mp->t.bn, mp->t.tail_tiles,
		  mp->t.tail_split, mp->t.grid);
	const tinyc_schedule *s = tinyc_module_schedule(c.m);
	cr_assert_float_eq(tinyc_streamk_rounds(s, &mp->prob, &mp->t), 5.25, 1e-9);
	char key[160];
	tinyc_matmul_config_key(&mp->t, key, sizeof(key));
	cr_assert_str_eq(key, "wgmma 128x256x64 s4 c2 n256 tail28x4 g132");
	compiled_free(&c);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=4096,N=4096,K=4096", "schedule"), 0);
	cr_assert_eq(chosen(&c)->t.tail_split, 0, "4096^3: 128 x 256, the last round 88%% full");
	compiled_free(&c);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=8,N=11008,K=4096", "schedule"), 0);
	mp = chosen(&c);
	cr_assert(mp->t.bm == 64 && mp->t.bn == 64 && mp->t.tail_split == 3 && mp->t.tail_tiles == 40,
		  "[%d,%d] tail %d x %d", mp->t.bm, mp->t.bn, mp->t.tail_tiles, mp->t.tail_split);
	compiled_free(&c);
	cr_assert_eq(compile_to(&c, TINYC_SOURCE_DIR "/examples/linear_fp32.uop", NULL, "sm_90a",
				"M=2048,N=11008,K=4096", "schedule"), 0);
	cr_assert_eq(tail_candidates(&c), 0, "3xTF32: no tail");
	compiled_free(&c);
	/* forced: 4 tiles of 128 x 128 on 3 CTAs, the last one split 3 ways; no tail where
	 * K has fewer k tiles than the split (the plain plans stay) */
	setenv("TINYC_WGMMA_STREAMK", "3x3", 1);
	setenv("TINYC_MATMUL", "wgmma", 1);
	setenv("TINYC_MATMUL_TILE", "128x128x64x4", 1);
	setenv("TINYC_WGMMA_CLUSTER", "1", 1);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=200,N=136,K=400", "schedule"), 0);
	mp = chosen(&c);
	cr_assert(mp->t.tail_split == 3 && mp->t.tail_tiles == 1 && mp->t.grid == 3,
		  "tail %d x %d grid %d", mp->t.tail_tiles, mp->t.tail_split, mp->t.grid);
	compiled_free(&c);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=200,N=136,K=128", "schedule"), 0);
	cr_assert(tail_candidates(&c) == 0 && chosen(&c)->t.variant == TINYC_MM_WGMMA);
	compiled_free(&c);
	if (tinyc_nvrtc_version() < 0) {
		unsetenv("TINYC_WGMMA_CLUSTER");
		unsetenv("TINYC_MATMUL_TILE");
		unsetenv("TINYC_MATMUL");
		unsetenv("TINYC_WGMMA_STREAMK");
		cr_skip_test("nvrtc is not available");
		return;
	}
	/* pingpong 64 x 128 with a tail at odd sizes; 2-CTA clusters of 128 x 128 */
	setenv("TINYC_WGMMA_STREAMK", "2x5", 1);
	setenv("TINYC_MATMUL_TILE", "64x128x64x4", 1);
	setenv("TINYC_WGMMA_PP", "1", 1);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=200,N=136,K=300", "cuda"), 0);
	cr_assert(chosen(&c)->t.pingpong && chosen(&c)->t.tail_split == 2);
	nvrtc_no_spills(&c, "pingpong 64x128 stream-K");
	compiled_free(&c);
	unsetenv("TINYC_WGMMA_PP");
	setenv("TINYC_WGMMA_STREAMK", "2x6", 1);
	setenv("TINYC_MATMUL_TILE", "128x128x64x4", 1);
	setenv("TINYC_WGMMA_CLUSTER", "2", 1);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=300,N=136,K=200", "cuda"), 0);
	cr_assert(chosen(&c)->t.cluster == 2 && chosen(&c)->t.tail_split == 2);
	nvrtc_no_spills(&c, "cluster 2x1 stream-K");
	compiled_free(&c);
	unsetenv("TINYC_WGMMA_CLUSTER");
	unsetenv("TINYC_MATMUL_TILE");
	unsetenv("TINYC_MATMUL");
	/* the benchmark's kernel: 128 x 256, 128 accumulators a consumer thread */
	setenv("TINYC_WGMMA_STREAMK", "1", 1);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", big, "cuda"), 0);
	cr_assert_eq(chosen(&c)->t.tail_split, 4);
	nvrtc_no_spills(&c, "bias_relu 2048x11008x4096 stream-K");
	compiled_free(&c);
	unsetenv("TINYC_WGMMA_STREAMK");
}

/* Swap-AB (sched/swapab.c): not proposed with TINYC_WGMMA_SWAP=0 (every candidate of 16 x
 * 4096 x 4096 unswapped); by default (= 1) the decode shape picks the swapped split-K plan (128
 * weight columns x 16 tokens, the weight MN-major as wgmma's A, the tokens K-major as its
 * B, 11 stages, split 4 over 128 CTAs), M = 1 keeps the gemv, a torch Linear weight [N, K]
 * is a K-major A; the kernels at M = 8, 16, 32 and the [N, K] weight compile for sm_90a. */
Test(wgmma_nvrtc, swap_ab_decode_plans, .timeout = 300)
{
	compiled c;
	setenv("TINYC_WGMMA_SWAP", "0", 1);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=16,N=4096,K=4096", "schedule"), 0);
	const tinyc_schedule *s = tinyc_module_schedule(c.m);
	for (int i = 0; i < s->kerns[0].ncand; i++) {
		const tinyc_mm_plan *mp = s->kerns[0].cands[i].ext;
		cr_assert(s->kerns[0].cands[i].kind != TINYC_PLAN_MATMUL || !mp->t.swap,
			  "candidate %d swapped with the knob off", i);
	}
	compiled_free(&c);
	unsetenv("TINYC_WGMMA_SWAP");
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=16,N=4096,K=4096", "schedule"), 0);
	const tinyc_mm_plan *mp = chosen(&c);
	cr_assert(mp->t.swap && mp->t.variant == TINYC_MM_WGMMA && mp->t.bm == 128 && mp->t.bn == 16 &&
		  mp->t.stages == 11 && mp->t.split == 4 && mp->t.grid == 128 && mp->t.consumers == 2 &&
		  !mp->t.a_kmajor && mp->t.b_kmajor && mp->t.wgn == 16 && !mp->t.split_fused,
		  "swap %d [%d,%d] s%d split %d grid %d", mp->t.swap, mp->t.bm, mp->t.bn, mp->t.stages,
		  mp->t.split, mp->t.grid);
	compiled_free(&c);
	cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", "M=1,N=4096,K=4096", "schedule"), 0);
	cr_assert(chosen(&c)->t.variant == TINYC_MM_GEMV && !chosen(&c)->t.swap);
	compiled_free(&c);
	cr_assert_eq(compile_to(&c, NULL, W_NK, "sm_90a", "M=8,N=4096,K=4096", "schedule"), 0);
	mp = chosen(&c);
	cr_assert(mp->t.swap && mp->t.bn == 8 && mp->t.a_kmajor && mp->t.b_kmajor, "swap %d bn %d",
		  mp->t.swap, mp->t.bn);
	compiled_free(&c);
	if (tinyc_nvrtc_version() < 0) {
		cr_skip_test("nvrtc is not available");
		return;
	}
	static const char *const binds[] = {"M=8,N=4096,K=4096", "M=16,N=4096,K=11008", "M=32,N=11008,K=4096"};
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(compile_to(&c, BIAS_RELU, NULL, "sm_90a", binds[i], "cuda"), 0);
		cr_assert(chosen(&c)->t.swap, "%s", binds[i]);
		nvrtc_ok(&c, "sm_90a", binds[i]);
		compiled_free(&c);
	}
	cr_assert_eq(compile_to(&c, NULL, W_NK, "sm_90a", "M=13,N=520,K=1000", "cuda"), 0);
	cuda_has_and_compiles(&c, "m64n16k16", "p, 1, 1, 0, 0;", "both operands K-major",
			      "[N, K] weight 13x520x1000 swapped");
	compiled_free(&c);
}
