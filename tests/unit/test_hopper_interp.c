/* Criterion tests of the GPU IR interpreter on Hopper (sm_90a) kernels (ir/gpuir_interp.c):
 *
 *   - hand: small kernels built here: wgmma m64n8k16 with a hand-computed product (few
 *     distinct values; K-major and MN-major B, scale-d), m64n8k8 .tf32 (the operands'
 *     low mantissa bits dropped), and the same tiles stored without the swizzle or read
 *     with the other layout give wrong values; a TMA load (128-byte swizzle, a box partly
 *     outside the tensor: zeros) against its image computed by hand; a missing mbarrier
 *     wait is a race, expect_tx of the wrong byte count a deadlock, an extra arrival an
 *     error;
 *   - patched: the generated wgmma matmul with a statement removed or changed (the
 *     consumers' full wait, the producer's empty wait, the consumers' release, the
 *     wgmma waits or fences, A's layout, the tensor maps' swizzle, the expected bytes):
 *     each one is a race, a deadlock, a diagnostic or a wrong result, never a pass;
 *   - templates: every sm_90a template against the reference evaluator at small odd
 *     shapes (the wgmma matmul with epilogue graphs, forced tiles, pingpong and
 *     cooperative, 2-CTA clusters with multicast, packed operands, a fitted width, split-K
 *     over a cluster (DSMEM), swap-AB wgmma (the weight as the transposed A, the tokens as
 *     a narrow N; split-K and the cluster sum), 3xTF32 wgmma, the wgmma attention with P from registers on
 *     causal, unmasked and GQA attention, T not a multiple of 64, NHWC convolutions, the
 *     small models, the TMA-store epilogue); each case also checks that the plan really
 *     is the template's.
 * The sanitizer build runs a subset of the template cases (TINYC_SANITIZED).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/graph_harness.h"
#include "driver/run.h"

/* ------------------------------------------------------------- helpers ---- */

/* Print the diagnostics of ctx (for a failing test) and clear them. */
static void dump_diags(tinyc_ctx *ctx)
{
	tinyc_ctx_print_diags(ctx, stderr);
	tinyc_ctx_clear_diags(ctx);
}

/* Whether some diagnostic on ctx contains text. */
static int diag_has(tinyc_ctx *ctx, const char *text)
{
	for (int i = 0; i < tinyc_ctx_diag_count(ctx); i++)
		if (strstr(tinyc_ctx_diag(ctx, i)->msg, text))
			return 1;
	return 0;
}

static tinyc_gexpr *I(tinyc_gkernel *k, int64_t v)
{
	return tinyc_gx_int(k, TINYC_INT, v);
}

static tinyc_gexpr *B2(tinyc_gkernel *k, tinyc_gx_op op, tinyc_gexpr *a, tinyc_gexpr *b)
{
	return tinyc_gx_binary(k, op, a, b);
}

/* A module for sm_90a. */
static tinyc_gpu_module *module_sm90a(tinyc_ctx *ctx)
{
	tinyc_gpu_module *m = tinyc_gpu_module_alloc(ctx);
	snprintf(m->target, sizeof(m->target), "sm_90a");
	m->arch_major = 9, m->arch_minor = 0;
	return m;
}

/* A 1-D buffer of n elements. */
static int add_buf(tinyc_gpu_module *m, const char *name, tinyc_gbuf_role role, int index,
		   tinyc_dtype dt, int64_t n)
{
	tinyc_gbuf b = {.name = (char *)name, .role = role, .index = index, .dtype = dt, .rank = 1,
			.shape = {{n, -1}}};
	return tinyc_gpu_add_buf(m, &b);
}

/* The byte offset of `off` under the 128-byte swizzle (swz), or unchanged. */
static int64_t swz128(int64_t off, int swz)
{
	return swz ? off ^ (((off >> 7) & 7) << 4) : off;
}

/* ------------------------------------------------------ hand: wgmma ---- */

/* The operand tiles of the hand wgmma kernel: As and Bs, 8 KiB each, copied from the
 * global images A and B by the 128 threads (then fence.proxy.async and a barrier), acc
 * filled with 100, one wgmma m64nNk16 (k8 for float) with scale-d false (so the 100s are
 * overwritten), or two with the second accumulating when twice; D stored row-major from
 * PTX's accumulator fragment. */
typedef struct wg_kernel {
	tinyc_dtype dt;		/* half or float (tf32) */
	int n;			/* wgmma N */
	tinyc_gwg_layout la, lb;	/* the layouts the statement names */
	int twice;		/* a second wgmma with scale-d true (D = 2 A B) */
	int no_fence;		/* leave out the wgmma.fence */
} wg_kernel;

/* Build the kernel of w into m; buffers A, B (inputs, 8 KiB images), D (64 x n floats). */
static tinyc_gkernel *build_wg(tinyc_gpu_module *m, const wg_kernel *w)
{
	int es = tinyc_dtype_size(w->dt), ne = 8192 / es;
	int ba = add_buf(m, "A", TINYC_GB_INPUT, 0, w->dt, ne), bb = add_buf(m, "B", TINYC_GB_INPUT, 1, w->dt, ne);
	int bd = add_buf(m, "D", TINYC_GB_OUTPUT, 0, TINYC_FLOAT, 64 * w->n);
	tinyc_gkernel *k = tinyc_gk_alloc(m, "wg");
	k->block[0] = 128;
	int pa = tinyc_gk_param_ptr(k, "A", w->dt, 1, ba), pb = tinyc_gk_param_ptr(k, "B", w->dt, 1, bb);
	int pd = tinyc_gk_param_ptr(k, "D", TINYC_FLOAT, 0, bd);
	int sa = tinyc_gk_shared(k, "As", w->dt, ne, 1024, 1), sb = tinyc_gk_shared(k, "Bs", w->dt, ne, 1024, 1);
	int i = tinyc_gk_reg(k, "i", TINYC_INT);
	int acc = tinyc_gk_reg_array(k, "acc", TINYC_FLOAT, w->n / 2);
	tinyc_gexpr *tid = tinyc_gx_special(k, TINYC_GSP_TID_X), *iv = tinyc_gx_var(k, i);
	tinyc_gstmt *cp = tinyc_gs_block(k);
	tinyc_gs_append(k, cp, tinyc_gs_store(k, sa, iv, tinyc_gx_load(k, pa, iv, NULL), NULL));
	tinyc_gs_append(k, cp, tinyc_gs_store(k, sb, iv, tinyc_gx_load(k, pb, iv, NULL), NULL));
	tinyc_gs_append(k, k->body, tinyc_gs_for_range(k, i, tid, I(k, ne), I(k, 128), 0, cp));
	tinyc_gs_append(k, k->body, tinyc_gs_fence(k, TINYC_GF_PROXY_ASYNC));
	tinyc_gs_append(k, k->body, tinyc_gs_barrier(k));
	tinyc_gs_append(k, k->body, tinyc_gs_decl(k, acc, tinyc_gx_float(k, TINYC_FLOAT, 100)));
	if (!w->no_fence)
		tinyc_gs_append(k, k->body, tinyc_gs_wgmma_fence(k));
	for (int r = 0; r < 1 + w->twice; r++)
		tinyc_gs_append(k, k->body, tinyc_gs_wgmma(k, acc, I(k, 0), sa, I(k, 0), w->la, sb, I(k, 0), w->lb,
							   w->n, tinyc_gx_bool(k, r > 0)));
	tinyc_gs_append(k, k->body, tinyc_gs_wgmma_commit(k));
	tinyc_gs_append(k, k->body, tinyc_gs_wgmma_wait(k, 0, acc));
	tinyc_gexpr *lane = tinyc_gx_special(k, TINYC_GSP_LANE), *warp = tinyc_gx_special(k, TINYC_GSP_WARP);
	for (int j = 0; j < w->n / 2; j++) {	/* PTX's D fragment */
		tinyc_gexpr *row = B2(k, TINYC_GX_ADD, B2(k, TINYC_GX_MUL, B2(k, TINYC_GX_MOD, warp, I(k, 4)), I(k, 16)),
				      B2(k, TINYC_GX_ADD, B2(k, TINYC_GX_DIV, lane, I(k, 4)), I(k, 8 * (j / 2 % 2))));
		tinyc_gexpr *col = B2(k, TINYC_GX_ADD, I(k, 8 * (j / 4) + j % 2),
				      B2(k, TINYC_GX_MUL, B2(k, TINYC_GX_MOD, lane, I(k, 4)), I(k, 2)));
		tinyc_gs_append(k, k->body, tinyc_gs_store(k, pd, B2(k, TINYC_GX_ADD, B2(k, TINYC_GX_MUL, row, I(k, w->n)), col),
							   tinyc_gx_load(k, acc, I(k, j), NULL), NULL));
	}
	return k;
}

/* The image of a K-major tile (rows of 128 bytes: 64 16-bit or 32 float k) holding
 * v[r * kc + c] at (r, c) for r < rows, c < kc; swz: with the 128-byte swizzle. */
static void kmajor_image(unsigned char *img, tinyc_dtype dt, int rows, int kc, const double *v, int swz)
{
	int es = tinyc_dtype_size(dt);
	memset(img, 0, 8192);
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < kc; c++) {
			int64_t off = swz128((int64_t)r * 128 + c * es, swz);
			uint64_t bits = tinyc_float_to_bits(dt, v[r * kc + c]);
			memcpy(img + off, &bits, (size_t)es);
		}
}

/* The image of an MN-major 16-bit tile (rows of 64 n, one a k; 8-k groups 1024 bytes
 * apart) holding v[k * nc + n] at (k, n). */
static void mnmajor_image(unsigned char *img, int krows, int nc, const double *v, int swz)
{
	memset(img, 0, 8192);
	for (int kk = 0; kk < krows; kk++)
		for (int n = 0; n < nc; n++) {
			uint16_t h = tinyc_f32_to_f16((float)v[kk * nc + n]);
			memcpy(img + swz128((int64_t)kk * 128 + n * 2, swz), &h, 2);
		}
}

/* Run kernel k of m on images a, b into d (64 x n floats).  The interpreter's result. */
static int run_wg(tinyc_ctx *ctx, tinyc_gpu_module *m, tinyc_gkernel *k, unsigned char *a,
		  unsigned char *b, float *d, int n, tinyc_dtype dt)
{
	int ne = 8192 / tinyc_dtype_size(dt);
	void *bufs[3] = {a, b, d};
	int64_t elems[3] = {ne, ne, 64 * n};
	tinyc_gpu_mem mem = {bufs, elems, NULL};
	int vrc = tinyc_gpu_verify(ctx, m, 0);
	if (vrc < 0)
		dump_diags(ctx);
	cr_assert_eq(vrc, 0);
	return tinyc_gpu_interp(ctx, m, k, &mem);
}

/* D = A B with A[m][k] = (k == m % 16) and B[k][n] = k + 16 n: D[m][n] = m % 16 + 16 n,
 * checked at hand-computed entries and everywhere; B K-major and MN-major. */
Test(hand, wgmma_m64n8k16_hand_computed)
{
	double A[64 * 16], Bt[8 * 16], Bk[16 * 8];
	for (int r = 0; r < 64; r++)
		for (int c = 0; c < 16; c++)
			A[r * 16 + c] = c == r % 16;
	for (int kk = 0; kk < 16; kk++)
		for (int n = 0; n < 8; n++)
			Bt[n * 16 + kk] = Bk[kk * 8 + n] = kk + 16 * n;
	for (int mn = 0; mn < 2; mn++) {
		tinyc_ctx *ctx = tinyc_ctx_alloc();
		tinyc_gpu_module *m = module_sm90a(ctx);
		wg_kernel w = {TINYC_HALF, 8, {1, 0}, {!mn, mn ? 8192 : 0}, mn, 0};
		tinyc_gkernel *k = build_wg(m, &w);
		static unsigned char ia[8192], ib[8192];
		float D[64 * 8];
		kmajor_image(ia, TINYC_HALF, 64, 16, A, 1);
		if (mn)
			mnmajor_image(ib, 16, 8, Bk, 1);
		else
			kmajor_image(ib, TINYC_HALF, 8, 16, Bt, 1);
		int rc = run_wg(ctx, m, k, ia, ib, D, 8, TINYC_HALF);
		if (rc < 0)
			dump_diags(ctx);
		cr_assert_eq(rc, 0);
		double f = mn ? 2 : 1;	/* the MN-major case runs it twice (scale-d on the second) */
		cr_expect_eq(D[0 * 8 + 0], 0 * f);
		cr_expect_eq(D[17 * 8 + 3], 49 * f, "D[17][3] = 1 + 48");
		cr_expect_eq(D[40 * 8 + 5], 88 * f, "D[40][5] = 8 + 80");
		cr_expect_eq(D[63 * 8 + 7], 127 * f, "D[63][7] = 15 + 112");
		for (int r = 0; r < 64; r++)
			for (int n = 0; n < 8; n++)
				cr_expect_eq(D[r * 8 + n], f * (r % 16 + 16 * n), "D[%d][%d] (%s B)", r, n,
					     mn ? "MN-major" : "K-major");
		tinyc_gpu_module_free(m);
		tinyc_ctx_free(ctx);
	}
}

/* m64n8k8 .tf32: the operands' bits below tf32's 10-bit mantissa are dropped:
 * (1 + 2^-11) (1 + 2^-12) is read as 1 * 1, so D = 8 where the fp32 product sums to
 * 8.0059; 1.5 * 3 stays exact. */
Test(hand, wgmma_tf32_drops_low_mantissa_bits)
{
	double A[64 * 8], Bt[8 * 8];
	for (int i = 0; i < 64 * 8; i++)
		A[i] = i / 8 < 32 ? 1 + ldexp(1, -11) : 1.5;
	for (int i = 0; i < 64; i++)
		Bt[i] = i / 8 < 4 ? 1 + ldexp(1, -12) : 3;
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_gpu_module *m = module_sm90a(ctx);
	wg_kernel w = {TINYC_FLOAT, 8, {1, 0}, {1, 0}, 0, 0};
	tinyc_gkernel *k = build_wg(m, &w);
	static unsigned char ia[8192], ib[8192];
	float D[64 * 8];
	kmajor_image(ia, TINYC_FLOAT, 64, 8, A, 1);
	kmajor_image(ib, TINYC_FLOAT, 8, 8, Bt, 1);
	int rc = run_wg(ctx, m, k, ia, ib, D, 8, TINYC_FLOAT);
	if (rc < 0)
		dump_diags(ctx);
	cr_assert_eq(rc, 0);
	cr_expect_eq(D[0 * 8 + 0], 8.0f, "tf32(1 + 2^-11) * tf32(1 + 2^-12) * 8 = 8 (got %.9g)", D[0]);
	cr_expect_eq(D[0 * 8 + 7], 24.0f, "1 * 3 * 8");
	cr_expect_eq(D[40 * 8 + 0], 12.0f, "1.5 * 1 * 8");
	cr_expect_eq(D[63 * 8 + 6], 36.0f, "1.5 * 3 * 8");
	tinyc_gpu_module_free(m);
	tinyc_ctx_free(ctx);
}

/* Random small integers (exact in fp32): the right images give the exact product; the
 * same tiles stored without the swizzle, or read as MN-major, give wrong values (the
 * interpreter reads where the tensor cores would, it does not guess). */
Test(hand, wgmma_wrong_swizzle_or_layout_gives_wrong_values)
{
	double A[64 * 16], Bt[64 * 16], want[64 * 64];
	unsigned seed = 12345;
	for (int i = 0; i < 64 * 16; i++) {
		seed = seed * 1103515245u + 12345u;
		A[i] = (int)(seed >> 16) % 7 - 3;
		seed = seed * 1103515245u + 12345u;
		Bt[i] = (int)(seed >> 16) % 5 - 2;
	}
	for (int r = 0; r < 64; r++)
		for (int n = 0; n < 64; n++) {
			want[r * 64 + n] = 0;
			for (int kk = 0; kk < 16; kk++)
				want[r * 64 + n] += A[r * 16 + kk] * Bt[n * 16 + kk];
		}
	/* case 0: right; 1: A and B stored unswizzled; 2: A read as MN-major */
	for (int cs = 0; cs < 3; cs++) {
		tinyc_ctx *ctx = tinyc_ctx_alloc();
		tinyc_gpu_module *m = module_sm90a(ctx);
		wg_kernel w = {TINYC_HALF, 64, {cs != 2, cs == 2 ? 8192 : 0}, {1, 0}, 0, 0};
		tinyc_gkernel *k = build_wg(m, &w);
		static unsigned char ia[8192], ib[8192];
		static float D[64 * 64];
		kmajor_image(ia, TINYC_HALF, 64, 16, A, cs != 1);
		kmajor_image(ib, TINYC_HALF, 64, 16, Bt, cs != 1);
		int rc = run_wg(ctx, m, k, ia, ib, D, 64, TINYC_HALF);
		if (rc < 0)
			dump_diags(ctx);
		cr_assert_eq(rc, 0);
		int bad = 0;
		for (int i = 0; i < 64 * 64; i++)
			bad += D[i] != want[i];
		if (cs == 0)
			cr_expect_eq(bad, 0, "the swizzled K-major tiles give A B exactly");
		else
			cr_expect_gt(bad, 1000, "case %d (%s): %d of 4096 values wrong", cs,
				     cs == 1 ? "unswizzled tiles" : "K-major A read as MN-major", bad);
		tinyc_gpu_module_free(m);
		tinyc_ctx_free(ctx);
	}
}

/* A wgmma whose accumulators were written (the fill) without a wgmma.fence after. */
Test(hand, wgmma_without_fence_is_an_error)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_gpu_module *m = module_sm90a(ctx);
	wg_kernel w = {TINYC_HALF, 8, {1, 0}, {1, 0}, 0, 1};
	tinyc_gkernel *k = build_wg(m, &w);
	static unsigned char ia[8192], ib[8192];
	float D[64 * 8];
	memset(ia, 0, sizeof(ia));
	memset(ib, 0, sizeof(ib));
	cr_assert_eq(run_wg(ctx, m, k, ia, ib, D, 8, TINYC_HALF), -1);
	cr_expect(diag_has(ctx, "since the warpgroup's last wgmma.fence"));
	tinyc_gpu_module_free(m);
	tinyc_ctx_free(ctx);
}

/* -------------------------------------------------------- hand: TMA ---- */

enum { TR = 10, TC = 70, TBOX0 = 64, TBOX1 = 8, TC0 = 20, TR0 = 5 };

/* The variants of the TMA kernel. */
typedef enum { TMA_OK, TMA_NO_WAIT, TMA_WRONG_BYTES, TMA_EXTRA_ARRIVE } tma_variant;

/* X: half[TR, TC] row-major; a tensor map over it (box 64 x 8, 128-byte swizzle); thread
 * 0 initialises the barrier, expects the box's bytes and issues the load at (TC0, TR0);
 * every thread waits for phase 0 and copies the raw shared tile to out. */
static tinyc_gkernel *build_tma(tinyc_gpu_module *m, tma_variant var)
{
	int bx = add_buf(m, "X", TINYC_GB_INPUT, 0, TINYC_HALF, TR * TC);
	int bo = add_buf(m, "out", TINYC_GB_OUTPUT, 0, TINYC_HALF, TBOX0 * TBOX1);
	tinyc_gkernel *k = tinyc_gk_alloc(m, "tma");
	k->block[0] = 128;
	tinyc_gtmap d;
	memset(&d, 0, sizeof(d));
	d.buf = bx, d.dtype = TINYC_HALF, d.rank = 2;
	d.dim[0] = tinyc_gx_int(k, TINYC_LONG, TC), d.dim[1] = tinyc_gx_int(k, TINYC_LONG, TR);
	d.stride[0] = tinyc_gx_int(k, TINYC_LONG, 1), d.stride[1] = tinyc_gx_int(k, TINYC_LONG, TC);
	d.offset = tinyc_gx_int(k, TINYC_LONG, 0);
	d.box[0] = TBOX0, d.box[1] = TBOX1, d.swizzle = 128;
	int po = tinyc_gk_param_ptr(k, "out", TINYC_HALF, 0, bo);
	int tm = tinyc_gk_param_tmap_desc(k, "tmX", &d);
	int s = tinyc_gk_shared(k, "S", TINYC_HALF, TBOX0 * TBOX1, 1024, 1);
	int bar = tinyc_gk_shared(k, "bar", TINYC_ULONG, 1, 8, 0);
	int i = tinyc_gk_reg(k, "i", TINYC_INT);
	tinyc_gexpr *tid = tinyc_gx_special(k, TINYC_GSP_TID_X), *is0 = B2(k, TINYC_GX_EQ, tid, I(k, 0));
	tinyc_gstmt *init = tinyc_gs_block(k);
	tinyc_gs_append(k, init, tinyc_gs_mbar_init(k, -1, bar, I(k, 0), 1));
	tinyc_gs_append(k, init, tinyc_gs_fence(k, TINYC_GF_MBAR_INIT));
	tinyc_gs_append(k, k->body, tinyc_gs_if(k, is0, init, NULL));
	tinyc_gs_append(k, k->body, tinyc_gs_barrier(k));
	tinyc_gstmt *issue = tinyc_gs_block(k);
	int bytes = TBOX0 * TBOX1 * 2;
	tinyc_gs_append(k, issue, tinyc_gs_mbar_expect_tx(k, -1, bar, I(k, 0),
							  I(k, var == TMA_WRONG_BYTES ? 2 * bytes : bytes)));
	if (var == TMA_EXTRA_ARRIVE)
		tinyc_gs_append(k, issue, tinyc_gs_mbar_arrive(k, -1, bar, I(k, 0)));
	tinyc_gexpr *crd[2] = {I(k, TC0), I(k, TR0)};
	tinyc_gs_append(k, issue, tinyc_gs_tma_load(k, -1, s, I(k, 0), tm, 2, crd, bar, I(k, 0)));
	tinyc_gs_append(k, k->body, tinyc_gs_if(k, is0, issue, NULL));
	if (var != TMA_NO_WAIT)
		tinyc_gs_append(k, k->body, tinyc_gs_mbar_wait(k, -1, bar, I(k, 0), I(k, 0)));
	tinyc_gstmt *cp = tinyc_gs_block(k);
	tinyc_gexpr *iv = tinyc_gx_var(k, i);
	tinyc_gs_append(k, cp, tinyc_gs_store(k, po, iv, tinyc_gx_load(k, s, iv, NULL), NULL));
	tinyc_gs_append(k, k->body, tinyc_gs_for_range(k, i, tid, I(k, TBOX0 * TBOX1), I(k, 128), 0, cp));
	return k;
}

/* Run the TMA kernel variant; out receives the shared tile.  The interpreter's result. */
static int run_tma(tinyc_ctx *ctx, tma_variant var, uint16_t *out)
{
	tinyc_gpu_module *m = module_sm90a(ctx);
	tinyc_gkernel *k = build_tma(m, var);
	int vrc = tinyc_gpu_verify(ctx, m, 0);
	if (vrc < 0)
		dump_diags(ctx);
	cr_assert_eq(vrc, 0);
	static uint16_t X[TR * TC];
	for (int r = 0; r < TR; r++)
		for (int c = 0; c < TC; c++)
			X[r * TC + c] = tinyc_f32_to_f16((float)(r * 100 + c));
	memset(out, 0xff, TBOX0 * TBOX1 * 2);
	void *bufs[2] = {X, out};
	int64_t elems[2] = {TR * TC, TBOX0 * TBOX1};
	tinyc_gpu_mem mem = {bufs, elems, NULL};
	int rc = tinyc_gpu_interp(ctx, m, k, &mem);
	tinyc_gpu_module_free(m);
	return rc;
}

/* The box at (column 20, row 5) of a 10 x 70 tensor: rows 10.. and columns 70.. are
 * outside (zeros); element (r, c) of the box at byte 128 r + 2 c with the 16-byte chunk
 * XORed with r % 8.  Hand-computed: (0, 0) = X[5][20] = 520 at element 0; (1, 0) =
 * X[6][20] = 620 at byte 128 + 16 (element 72); (2, 49) = X[7][69] = 769 at byte 256 +
 * (6 ^ 2) * 16 + 2 (element 161); (7, 63) is X[12][83], outside: 0. */
Test(hand, tma_load_swizzles_and_zero_fills)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	uint16_t out[TBOX0 * TBOX1];
	int rc = run_tma(ctx, TMA_OK, out);
	if (rc < 0)
		dump_diags(ctx);
	cr_assert_eq(rc, 0);
	cr_expect_eq(tinyc_f16_to_f32(out[0]), 520.0f);
	cr_expect_eq(tinyc_f16_to_f32(out[72]), 620.0f);
	cr_expect_eq(tinyc_f16_to_f32(out[161]), 769.0f);
	for (int r = 0; r < TBOX1; r++)
		for (int c = 0; c < TBOX0; c++) {
			int gr = TR0 + r, gc = TC0 + c;
			float want = gr < TR && gc < TC ? (float)(gr * 100 + gc) : 0.0f;
			int64_t at = swz128((int64_t)r * 128 + c * 2, 1) / 2;
			cr_expect_eq(tinyc_f16_to_f32(out[at]), want, "box (%d, %d) at element %lld", r, c,
				     (long long)at);
		}
	tinyc_ctx_free(ctx);
}

/* The TMA kernel variant var fails, its first diagnostic holding want[0..n). */
static void expect_tma_failure(tma_variant var, int n, const char *const *want)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	uint16_t out[TBOX0 * TBOX1];
	cr_assert_eq(run_tma(ctx, var, out), -1);
	for (int i = 0; i < n; i++)
		cr_expect(strstr(tinyc_ctx_diag(ctx, 0)->msg, want[i]), "want \"%s\" in: %s", want[i],
			  tinyc_ctx_diag(ctx, 0)->msg);
	tinyc_ctx_free(ctx);
}

/* Without the wait, the threads read the tile before any observed the load's completion:
 * a race (the data has not landed; on the GPU it may not have either). */
Test(hand, tma_read_without_mbarrier_wait_is_a_race)
{
	expect_tma_failure(TMA_NO_WAIT, 2, (const char *[]){"race: read of S[", "no mbarrier wait observed"});
}

/* Twice the box's bytes expected: the phase never completes, every thread waits. */
Test(hand, tma_wrong_expect_tx_deadlocks)
{
	expect_tma_failure(TMA_WRONG_BYTES, 2, (const char *[]){"deadlock", "1024 transaction bytes pending"});
}

/* Two arrivals on a barrier of count 1 in one phase. */
Test(hand, mbarrier_extra_arrival_is_an_error)
{
	expect_tma_failure(TMA_EXTRA_ARRIVE, 1, (const char *[]){"more arrivals in phase 0 than its count 1"});
}

/* ------------------------------------------------ running graphs ---- */

/* The statements of kernel k's tree s that fn changes (it returns 1 for a change). */
static int patch(tinyc_gkernel *k, tinyc_gstmt *s, int (*fn)(tinyc_gkernel *, tinyc_gstmt *))
{
	if (!s)
		return 0;
	int n = fn(k, s);
	for (int i = 0; s->op == TINYC_GS_BLOCK && i < s->nstmts; i++)
		n += patch(k, s->stmts[i], fn);
	if (s->op == TINYC_GS_FOR || s->op == TINYC_GS_IF)
		n += patch(k, s->body, fn) + patch(k, s->else_body, fn);
	return n;
}

/* Whether statement tree s holds a statement of kind op. */
static int holds(const tinyc_gstmt *s, tinyc_gs_op op)
{
	if (!s)
		return 0;
	if (s->op == op)
		return 1;
	for (int i = 0; s->op == TINYC_GS_BLOCK && i < s->nstmts; i++)
		if (holds(s->stmts[i], op))
			return 1;
	return (s->op == TINYC_GS_FOR || s->op == TINYC_GS_IF) && (holds(s->body, op) || holds(s->else_body, op));
}

/* What a module's kernels use. */
enum { F_WGMMA = 1, F_TMA = 2, F_CLUSTER = 4, F_MULTICAST = 8, F_REMOTE = 16, F_AREG = 32, F_SWAP = 64,
       F_TMA_STORE = 128 };

/* Whether tree s holds a statement for which pred holds. */
static int holds_if(const tinyc_gkernel *k, const tinyc_gstmt *s, int (*pred)(const tinyc_gkernel *, const tinyc_gstmt *))
{
	if (!s)
		return 0;
	if (pred(k, s))
		return 1;
	for (int i = 0; s->op == TINYC_GS_BLOCK && i < s->nstmts; i++)
		if (holds_if(k, s->stmts[i], pred))
			return 1;
	return (s->op == TINYC_GS_FOR || s->op == TINYC_GS_IF) &&
	       (holds_if(k, s->body, pred) || holds_if(k, s->else_body, pred));
}

static int is_multicast(const tinyc_gkernel *k, const tinyc_gstmt *s)
{
	(void)k;
	return s->op == TINYC_GS_TMA_LOAD && s->flag;
}

static int is_remote(const tinyc_gkernel *k, const tinyc_gstmt *s)
{
	(void)k;
	return (s->op == TINYC_GS_COPY || s->op == TINYC_GS_MBAR_ARRIVE) && s->value;
}

static int is_areg(const tinyc_gkernel *k, const tinyc_gstmt *s)
{
	return s->op == TINYC_GS_WGMMA && k->vars[s->src.var].kind == TINYC_GV_REG_ARRAY;
}

/* A swap-AB wgmma (sched/swapab.c): the weight as the transposed (MN-major) A from shared
 * memory, the tokens as a narrow N below 64. */
static int is_swapped(const tinyc_gkernel *k, const tinyc_gstmt *s)
{
	return s->op == TINYC_GS_WGMMA && k->vars[s->src.var].kind == TINYC_GV_SHARED &&
	       !s->wg_a.k_major && s->n < 64;
}

static int features(const tinyc_gpu_module *gm)
{
	int f = 0;
	for (int i = 0; i < gm->nkernel; i++) {
		const tinyc_gkernel *k = gm->kernels[i];
		f |= holds(k->body, TINYC_GS_WGMMA) ? F_WGMMA : 0;
		f |= holds(k->body, TINYC_GS_TMA_LOAD) ? F_TMA : 0;
		f |= k->cluster_x > 1 ? F_CLUSTER : 0;
		f |= holds_if(k, k->body, is_multicast) ? F_MULTICAST : 0;
		f |= holds_if(k, k->body, is_remote) ? F_REMOTE : 0;
		f |= holds_if(k, k->body, is_areg) ? F_AREG : 0;
		f |= holds_if(k, k->body, is_swapped) ? F_SWAP : 0;
		f |= holds(k->body, TINYC_GS_TMA_STORE) ? F_TMA_STORE : 0;
	}
	return f;
}

/* Tolerances of an output of dtype dt (test_codegen's). */
static void tolerance(tinyc_dtype dt, double *atol, double *rtol)
{
	switch (dt) {
	case TINYC_HALF: *atol = 2e-3, *rtol = 2e-3; break;
	case TINYC_BFLOAT16: *atol = 1.6e-2, *rtol = 1.6e-2; break;
	default: *atol = 1e-4, *rtol = 1e-4; break;
	}
}

/* Compile path for sm_90a under bind (with the TINYC_* settings of env, "A=1 B=2"),
 * check that its kernels have the features `want`, apply fn to the kernels (may be NULL),
 * run them on the interpreter against the reference evaluator.  Returns the number of
 * mismatched outputs (0: a pass), or -1 when the interpreter reported an error (left on
 * ctx). */
static int run_graph(tinyc_ctx *ctx, const char *path, const char *bind, const char *env, int want,
		     int (*fn)(tinyc_gkernel *, tinyc_gstmt *), double atol_min)
{
	char envs[256];
	snprintf(envs, sizeof(envs), "%s", env ? env : "");
	char *save = NULL;
	for (char *e = strtok_r(envs, " ", &save); e; e = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(e, '=');
		cr_assert(eq);
		*eq = 0;
		setenv(e, eq + 1, 1);
	}
	char full[1024];
	snprintf(full, sizeof(full), "%s/%s", TINYC_SOURCE_DIR, path);
	compiled c;
	int rc = compile(ctx, full, bind, "sm_90a", &c);
	if (rc)
		dump_diags(ctx);
	cr_assert_eq(rc, 0, "%s [%s] %s: compile", path, bind, env ? env : "");
	int f = features(c.gm);
	cr_assert_eq(f & want, want, "%s [%s] %s: the plan lacks features 0x%x (has 0x%x)", path, bind,
		     env ? env : "", want, f);
	int patched = 0;
	for (int i = 0; fn && i < c.gm->nkernel; i++)
		patched += patch(c.gm->kernels[i], c.gm->kernels[i]->body, fn);
	cr_assert(!fn || patched, "%s: nothing to patch", path);
	tinyc_bindings *rb = c.b;
	int nin = 0;
	tinyc_tensor **in = graph_inputs(ctx, c.g, rb, 7, &nin);
	cr_assert(in);
	tinyc_io ref = {0}, got = {0};
	ref.nin = got.nin = nin;
	ref.in = got.in = in;
	cr_assert_eq(tinyc_eval(ctx, c.g, rb, &ref), 0, "%s: the reference evaluator", path);
	int64_t *sym = calloc((size_t)c.g->nsym + 1, sizeof(int64_t));
	for (int i = 0; i < c.g->nsym; i++)
		sym[i] = rb->val[i];
	int result = 0;
	if (tinyc_gpu_run_interp(ctx, c.gm, sym, &got) < 0) {
		result = -1;
	} else {
		for (int o = 0; o < ref.nout; o++) {
			double atol, rtol;
			tolerance(ref.out[o]->dtype, &atol, &rtol);
			atol = atol > atol_min ? atol : atol_min;
			tinyc_cmp cmp;
			if (tinyc_tensor_compare(ctx, got.out[o], ref.out[o], atol, rtol, &cmp) < 0 || cmp.mismatched) {
				if (!fn)
					fprintf(stderr, "%s [%s] %s: output %d: %lld mismatched, max |diff| %g at %lld\n",
						path, bind, env ? env : "", o, (long long)cmp.mismatched, cmp.max_abs,
						(long long)cmp.worst);
				result++;
			}
		}
	}
	free(sym);
	checked_run_free(&c, &ref, &got, in, nin);
	snprintf(envs, sizeof(envs), "%s", env ? env : "");
	for (char *e = strtok_r(envs, " ", &save); e; e = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(e, '=');
		*eq = 0;
		unsetenv(e);
	}
	return result;
}

/* ---------------------------------------- patched generated kernels ---- */

#define MM "examples/matmul_bias_relu.uop"

/* The name of statement s's variable dst (a shared barrier array). */
static const char *dst_name(const tinyc_gkernel *k, const tinyc_gstmt *s)
{
	return s->dst.var >= 0 ? k->vars[s->dst.var].name : "";
}

/* Turn s into a comment. */
static int drop(tinyc_gkernel *k, tinyc_gstmt *s)
{
	s->op = TINYC_GS_COMMENT;
	s->text = tinyc_gpu_strdup(k->mod, "removed by the test");
	return 1;
}

static int drop_full_wait(tinyc_gkernel *k, tinyc_gstmt *s)
{
	return s->op == TINYC_GS_MBAR_WAIT && !strcmp(dst_name(k, s), "full") ? drop(k, s) : 0;
}

static int drop_empty_wait(tinyc_gkernel *k, tinyc_gstmt *s)
{
	return s->op == TINYC_GS_MBAR_WAIT && !strcmp(dst_name(k, s), "empty") ? drop(k, s) : 0;
}

static int drop_empty_arrive(tinyc_gkernel *k, tinyc_gstmt *s)
{
	return s->op == TINYC_GS_MBAR_ARRIVE && !strcmp(dst_name(k, s), "empty") ? drop(k, s) : 0;
}

static int drop_wgmma_wait(tinyc_gkernel *k, tinyc_gstmt *s)
{
	return s->op == TINYC_GS_WGMMA_WAIT ? drop(k, s) : 0;
}

static int drop_wgmma_fence(tinyc_gkernel *k, tinyc_gstmt *s)
{
	return s->op == TINYC_GS_WGMMA_FENCE ? drop(k, s) : 0;
}

static int a_as_mn_major(tinyc_gkernel *k, tinyc_gstmt *s)
{
	(void)k;
	if (s->op != TINYC_GS_WGMMA)
		return 0;
	s->wg_a.k_major = 0, s->wg_a.mn_block = 8192;
	return 1;
}

static int no_tma_swizzle(tinyc_gkernel *k, tinyc_gstmt *s)
{
	if (s != k->body)
		return 0;
	int n = 0;
	for (int v = 0; v < k->nvar; v++)
		if (k->vars[v].kind == TINYC_GV_PARAM_TMAP && k->vars[v].tmap) {
			k->vars[v].tmap->swizzle = 0;
			n++;
		}
	return n > 0;
}

static int half_the_bytes(tinyc_gkernel *k, tinyc_gstmt *s)
{
	if (s->op != TINYC_GS_MBAR_EXPECT_TX)
		return 0;
	s->value = tinyc_gx_binary(k, TINYC_GX_DIV, s->value, I(k, 2));
	return 1;
}

/* The unpatched kernel passes (so that what follows is the patch's doing). */
Test(patched, baseline_passes, .timeout = 300)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	int r = run_graph(ctx, MM, "M=130,N=72,K=400", NULL, F_WGMMA | F_TMA, NULL, 0);
	if (r)
		dump_diags(ctx);
	cr_expect_eq(r, 0);
	tinyc_ctx_free(ctx);
}

/* The matmul at bind under env (its plan with features feats) patched by fn fails on the
 * interpreter, its first diagnostic holding every string of want[0..n) (a string "a|b": a
 * or b). */
static void expect_failure_at(const char *bind, const char *env, int feats,
			      int (*fn)(tinyc_gkernel *, tinyc_gstmt *),
			      int n, const char *const *want)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	cr_assert_eq(run_graph(ctx, MM, bind, env, feats, fn, 0), -1);
	const char *msg = tinyc_ctx_diag(ctx, 0)->msg;
	for (int i = 0; i < n; i++) {
		char alt[128];
		snprintf(alt, sizeof(alt), "%s", want[i]);
		int found = 0;
		char *save = NULL;
		for (char *a = strtok_r(alt, "|", &save); a; a = strtok_r(NULL, "|", &save))
			found |= strstr(msg, a) != NULL;
		cr_expect(found, "want \"%s\" in: %s", want[i], msg);
	}
	tinyc_ctx_free(ctx);
}

/* The default matmul (7 k tiles, 4 stages) patched by fn fails (see expect_failure_at). */
static void expect_failure(int (*fn)(tinyc_gkernel *, tinyc_gstmt *), int n, const char *const *want)
{
	expect_failure_at("M=130,N=72,K=400", NULL, F_WGMMA, fn, n, want);
}

/* The consumers read the stage without waiting for it: a race on the unlanded tiles. */
Test(patched, missing_full_wait_is_a_race, .timeout = 300)
{
	expect_failure(drop_full_wait, 2, (const char *[]){"race: read of ", "before the TMA load into"});
}

/* The producer refills a stage without waiting for its release: its TMA load writes bytes
 * an earlier load has not landed in yet. */
Test(patched, missing_empty_wait_is_a_race, .timeout = 300)
{
	expect_failure(drop_empty_wait, 1, (const char *[]){"race: write of As["});
}

/* The consumers never release a stage: the producer waits forever. */
Test(patched, missing_release_deadlocks, .timeout = 300)
{
	expect_failure(drop_empty_arrive, 2, (const char *[]){"deadlock: thread (0,0,0)", "waits on mbarrier empty["});
}

/* Half the bytes expected: the phase completes when A's box lands and B's counts into the
 * next phase (its tx-count negative): B is read unlanded (a race) or a phase never
 * completes (a deadlock), never a pass. */
Test(patched, wrong_expected_bytes_fail, .timeout = 300)
{
	expect_failure(half_the_bytes, 1, (const char *[]){"deadlock|race"});
}

/* No wgmma.wait_group: the consumers release a stage (and read their accumulators) while
 * the wgmma reading it is in flight, and the producer's next load writes it: a race. */
Test(patched, missing_wgmma_wait_is_a_race, .timeout = 300)
{
	expect_failure(drop_wgmma_wait, 2, (const char *[]){"race: ", "wgmma"});
}

/* No wgmma.fence: the accumulators were written (their fill) since. */
Test(patched, missing_wgmma_fence_is_an_error, .timeout = 300)
{
	expect_failure(drop_wgmma_fence, 1, (const char *[]){"since the warpgroup's last wgmma.fence"});
}

static int drop_bulk_wait(tinyc_gkernel *k, tinyc_gstmt *s)
{
	return s->op == TINYC_GS_BULK_WAIT ? drop(k, s) : 0;
}

/* The last bulk wait only (the consumer's, after its tiles). */
static int drop_final_bulk_wait(tinyc_gkernel *k, tinyc_gstmt *s)
{
	(void)k;
	if (s->op != TINYC_GS_BLOCK)
		return 0;
	for (int i = 1; i < s->nstmts; i++) {	/* lane 0's wait right after the tile loop */
		const tinyc_gstmt *c = s->stmts[i];
		if (s->stmts[i - 1]->op == TINYC_GS_FOR && c->op == TINYC_GS_IF && c->body &&
		    c->body->op == TINYC_GS_BLOCK && c->body->nstmts == 1 &&
		    c->body->stmts[0]->op == TINYC_GS_BULK_WAIT)
			return drop(k, c->body->stmts[0]);
	}
	return 0;
}

/* The TMA-store epilogue (TINYC_TMA_STORE=1, 128 x 256 tiles: three whole 64-column
 * slabs a warp through two buffers, then 8 columns by 16-byte stores) patched by fn fails
 * with a diagnostic holding want. */
static void expect_store_failure(int (*fn)(tinyc_gkernel *, tinyc_gstmt *), const char *want)
{
	expect_failure_at("M=130,N=200,K=72", "TINYC_MATMUL=wgmma TINYC_TMA_STORE=1 TINYC_MATMUL_TILE=128x256x64x4",
			  F_WGMMA | F_TMA_STORE, fn, 1, &want);
}

/* No bulk waits: the third slab overwrites the buffer the first slab's TMA store still
 * reads. */
Test(patched, missing_bulk_wait_is_a_race, .timeout = 300)
{
	expect_store_failure(drop_bulk_wait, "race: write of stage[");
}

/* No wait after the last tile: the kernel would end while a TMA store reads shared memory. */
Test(patched, missing_final_bulk_wait_is_an_error, .timeout = 300)
{
	expect_store_failure(drop_final_bulk_wait, "ends with a TMA store that still reads stage");
}

/* A's K-major tiles described as MN-major, the tensor maps without their swizzle: the
 * tensor cores would read other elements, and so does the interpreter: wrong results. */
Test(patched, wrong_layout_or_swizzle_gives_wrong_results, .timeout = 300)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	int r = run_graph(ctx, MM, "M=130,N=72,K=400", NULL, F_WGMMA, a_as_mn_major, 0);
	cr_expect_gt(r, 0, "A as MN-major: %d", r);
	tinyc_ctx_clear_diags(ctx);
	r = run_graph(ctx, MM, "M=130,N=72,K=400", NULL, F_WGMMA, no_tma_swizzle, 0);
	cr_expect_gt(r, 0, "no TMA swizzle: %d", r);
	tinyc_ctx_free(ctx);
}

/* ------------------------------------------- the sm_90a templates ---- */

/* One template case: a graph, its sizes, the knobs, the features its plan must have. */
typedef struct tcase {
	const char *path, *bind, *env;
	int want;
	double atol;		/* at least this absolute tolerance (0: the dtype's) */
	int quick;		/* also under the sanitizers */
} tcase;

#define EPI "tests/gpu/epilogue/"
#define ATT "tests/lit/attention/"
#define MOD "tests/lit/models/Inputs/"
#define WG F_WGMMA | F_TMA

static const tcase matmul_cases[] = {
	{MM, "M=130,N=72,K=129", "TINYC_MATMUL=wgmma", WG, 0, 1},	/* A packed (K = 129) */
	{EPI "alpha_beta.uop", "M=130,N=77,K=75", "TINYC_MATMUL=wgmma", WG, 0, 0},
	{EPI "aux_twice.uop", "M=130,N=77,K=75", "TINYC_MATMUL=wgmma", WG, 0, 0},
	{EPI "batched.uop", "B=3,M=70,N=77,K=75", "TINYC_MATMUL=wgmma", WG, 0, 0},
	{EPI "beta_c_alpha_aux.uop", "M=130,N=77,K=75", "TINYC_MATMUL=wgmma", WG, 0, 0},
	{EPI "clamp.uop", "M=130,N=77,K=75", "TINYC_MATMUL=wgmma", WG, 0, 0},
	{EPI "col_bias.uop", "M=130,N=77,K=75", "TINYC_MATMUL=wgmma", WG, 0, 0},
	{EPI "dead_branch.uop", "M=130,N=77,K=75", "TINYC_MATMUL=wgmma", WG, 0, 0},
	{EPI "gelu_tanh.uop", "M=130,N=77,K=75", "TINYC_MATMUL=wgmma", WG, 0, 1},
	{EPI "pre_and_act.uop", "M=130,N=77,K=75", "TINYC_MATMUL=wgmma", WG, 0, 0},
	{EPI "relu_twice.uop", "M=130,N=77,K=75", "TINYC_MATMUL=wgmma", WG, 0, 0},
	{EPI "scalar_tensor.uop", "M=130,N=77,K=75", "TINYC_MATMUL=wgmma", WG, 0, 0},
	{EPI "sigmoid.uop", "M=130,N=77,K=75", "TINYC_MATMUL=wgmma", WG, 0, 0},
	/* forced tiles: pingpong, cooperative, N = 256, 7 stages */
	{MM, "M=200,N=136,K=72", "TINYC_MATMUL=wgmma TINYC_MATMUL_TILE=128x128x64x4 TINYC_WGMMA_PP=1", WG, 0, 0},
	{MM, "M=200,N=136,K=72", "TINYC_MATMUL=wgmma TINYC_MATMUL_TILE=128x128x64x4 TINYC_WGMMA_PP=0", WG, 0, 1},
	{MM, "M=136,N=264,K=72", "TINYC_MATMUL=wgmma TINYC_MATMUL_TILE=128x256x64x3 TINYC_WGMMA_PP=0", WG, 0, 0},
	{MM, "M=100,N=104,K=600", "TINYC_MATMUL=wgmma TINYC_MATMUL_TILE=64x64x64x7", WG, 0, 0},
	/* the TMA-store epilogue: cooperative and pingpong, 3 consumers, a fitted width
	 * (its last 40 columns by 16-byte stores), the batch (rank-3 map), rows past M */
	{EPI "bias_relu.uop", "M=130,N=200,K=72", "TINYC_MATMUL=wgmma TINYC_TMA_STORE=1 TINYC_MATMUL_TILE=128x256x64x4",
	 WG | F_TMA_STORE, 0, 1},
	{MM, "M=200,N=136,K=72", "TINYC_MATMUL=wgmma TINYC_TMA_STORE=1 TINYC_MATMUL_TILE=128x128x64x4 TINYC_WGMMA_PP=1",
	 WG | F_TMA_STORE, 0, 0},
	{MM, "M=200,N=200,K=64", "TINYC_MATMUL=wgmma TINYC_TMA_STORE=1 TINYC_MATMUL_TILE=192x192x64x4", WG | F_TMA_STORE, 0, 0},
	{MM, "M=200,N=464,K=64", "TINYC_MATMUL=wgmma TINYC_TMA_STORE=1 TINYC_MATMUL_TILE=128x232x64x4", WG | F_TMA_STORE, 0, 0},
	{EPI "batched.uop", "B=3,M=70,N=136,K=75", "TINYC_MATMUL=wgmma TINYC_TMA_STORE=1", WG | F_TMA_STORE, 0, 0},
	{EPI "gelu_tanh.uop", "M=200,N=136,K=72", "TINYC_MATMUL=wgmma TINYC_TMA_STORE=1 TINYC_WGMMA_CLUSTER=2",
	 WG | F_TMA_STORE | F_CLUSTER, 0, 0},
	/* the epilogue's loads before the main loop (TINYC_EPI_PRELOAD), a row and a column
	 * broadcast */
	{EPI "beta_c_alpha_aux.uop", "M=130,N=136,K=200", "TINYC_MATMUL=wgmma TINYC_EPI_PRELOAD=1", WG, 0, 1},
	{EPI "col_bias.uop", "M=200,N=136,K=72", "TINYC_MATMUL=wgmma TINYC_EPI_PRELOAD=1 TINYC_TMA_STORE=1", WG, 0, 0},
	/* the producer's threads copy both operands into the swizzled layout (no packing) */
	{MM, "M=130,N=77,K=75", "TINYC_MATMUL=wgmma TINYC_WGMMA_PACK=0 TINYC_MATMUL_TILE=128x128x64x4", F_WGMMA, 0, 0},
};

static const tcase cluster_cases[] = {
	/* 2-CTA clusters, B multicast, remote releases; a fitted width with and without */
	{EPI "bias_relu.uop", "M=200,N=136,K=72", "TINYC_MATMUL=wgmma TINYC_WGMMA_CLUSTER=2",
	 WG | F_CLUSTER | F_MULTICAST | F_REMOTE, 0, 1},
	{MM, "M=130,N=240,K=72", "TINYC_MATMUL_TILE=128x232x64x4 TINYC_WGMMA_CLUSTER=2",
	 WG | F_CLUSTER | F_MULTICAST, 0, 0},
	{MM, "M=200,N=304,K=72", "TINYC_MATMUL_TILE=128x232x64x4 TINYC_WGMMA_CLUSTER=1", WG, 0, 0},
	/* split-K over a cluster (DSMEM): the default at M = 64, 4-CTA clusters under
	 * TINYC_SPLITK_SUM=3 with rows past M */
	{MM, "M=64,N=128,K=1024", "TINYC_SPLITK_SUM=3", WG | F_CLUSTER | F_REMOTE, 0, 1},
	{MM, "M=16,N=128,K=1024", "TINYC_SPLITK_SUM=3", WG | F_CLUSTER | F_REMOTE, 0, 0},
	/* the reduction-kernel split-K keeps wgmma */
	{MM, "M=64,N=128,K=1024", "TINYC_SPLITK_SUM=2", WG, 0, 0},
};

/* swap-AB (TINYC_WGMMA_SWAP, sched/swapab.c): the weight's columns on wgmma's rows, the
 * tokens its N = M rounded up to 8; M = 1, 13, 32, N and K not multiples of the tile, split-K
 * by the reduction kernel and over a cluster (tests/lit/schedule/matmul-swapab.test runs
 * more, bf16 among them) */
static const tcase swap_cases[] = {
	{MM, "M=13,N=200,K=1000", "TINYC_WGMMA_SWAP=2 TINYC_MATMUL=wgmma TINYC_MATMUL_TILE=128x0x64x11", WG | F_SWAP, 0, 1},
	{MM, "M=1,N=520,K=1024", "TINYC_WGMMA_SWAP=2 TINYC_MATMUL=wgmma TINYC_MATMUL_TILE=64x0x64x6x4", WG | F_SWAP, 0, 0},
	{EPI "aux_twice.uop", "M=32,N=200,K=1024", "TINYC_WGMMA_SWAP=2 TINYC_MATMUL=wgmma TINYC_MATMUL_TILE=128x0x64x8x2", WG | F_SWAP, 0, 0},
	{EPI "bias_relu.uop", "M=16,N=200,K=1024", "TINYC_SPLITK_SUM=3 TINYC_WGMMA_SWAP=2 TINYC_MATMUL=wgmma TINYC_MATMUL_TILE=64x0x64x6x2",
	 WG | F_SWAP | F_CLUSTER | F_REMOTE, 0, 0},
};

static const tcase tf32_cases[] = {
	{"tests/gpu/tf32wg/linear_gelu_res_fp32.uop", "M=200,N=136,K=100", "TINYC_MATMUL=tf32wg", WG, 0, 1},
	{"examples/linear_fp32.uop", "M=130,N=72,K=260", "TINYC_MATMUL=tf32wg", WG, 0, 0},
};

static const tcase attention_cases[] = {
	/* causal GQA, T = 37; causal T = 150 (three query tiles); unmasked T = 200; masks
	 * with an offset and mirrored; P V on mma.sync (1) or on wgmma with P from
	 * registers (2) */
	{ATT "causal-gqa-fp16.uop", NULL, "TINYC_ATTN_WGMMA=2", F_WGMMA | F_AREG, 0, 1},
	{ATT "causal-gqa-fp16.uop", NULL, "TINYC_ATTN_WGMMA=1", F_WGMMA, 0, 0},
	{ATT "causal-t150-fp16.uop", NULL, "TINYC_ATTN_WGMMA=2", F_WGMMA | F_AREG, 0, 0},
	{ATT "online-softmax-fp16.uop", NULL, "TINYC_ATTN_WGMMA=2", F_WGMMA | F_AREG, 0, 0},
	{ATT "causal-offset-fp16.uop", NULL, "TINYC_ATTN_WGMMA=2", F_WGMMA | F_AREG, 0, 0},
	{ATT "anticausal-fp16.uop", NULL, "TINYC_ATTN_WGMMA=1", F_WGMMA, 0, 0},
};

static const tcase model_cases[] = {
	/* whole models and convolutions on their default sm_90a plans */
	{MOD "gpt2_block_fp16_small.uop", NULL, NULL, WG, 0.05, 0},
	{MOD "mlp_fp16_small.uop", NULL, NULL, WG, 0.01, 1},	/* the CLI's default */
	{"tests/lit/conv/Inputs/resnet_block_c16_odd_fp16.uop", NULL, NULL, F_WGMMA, 0, 0},
	{"tests/lit/conv/Inputs/nhwc_c16_k3_s2_odd_fp16.uop", NULL, NULL, F_WGMMA, 0, 0},
};

/* Run the cases (the quick ones only under the sanitizers). */
static void run_cases(const tcase *cs, size_t n)
{
#ifdef TINYC_SANITIZED
	int quick_only = 1;
#else
	int quick_only = 0;
#endif
	int failed = 0, ran = 0;
	for (size_t i = 0; i < n; i++) {
		if (quick_only && !cs[i].quick)
			continue;
		tinyc_ctx *ctx = tinyc_ctx_alloc();
		int r = run_graph(ctx, cs[i].path, cs[i].bind, cs[i].env, cs[i].want, NULL, cs[i].atol);
		if (r)
			dump_diags(ctx);
		cr_expect_eq(r, 0, "%s [%s] %s", cs[i].path, cs[i].bind ? cs[i].bind : "", cs[i].env ? cs[i].env : "");
		failed += r != 0;
		ran++;
		tinyc_ctx_free(ctx);
	}
	fprintf(stderr, "%d cases, %d failed\n", ran, failed);
}

#define N_OF(a) (sizeof(a) / sizeof(*(a)))

Test(templates, wgmma_matmul_epilogues_tiles_schedules, .timeout = 900) { run_cases(matmul_cases, N_OF(matmul_cases)); }
Test(templates, clusters_multicast_fitted_splitk_dsmem, .timeout = 900) { run_cases(cluster_cases, N_OF(cluster_cases)); }
Test(templates, tf32_wgmma, .timeout = 900) { run_cases(tf32_cases, N_OF(tf32_cases)); }
Test(templates, swap_ab_wgmma, .timeout = 900) { run_cases(swap_cases, N_OF(swap_cases)); }
Test(templates, wgmma_attention, .timeout = 900) { run_cases(attention_cases, N_OF(attention_cases)); }
Test(templates, models_and_convolutions, .timeout = 900) { run_cases(model_cases, N_OF(model_cases)); }
