/* GPU tests of the rearrange kernels (seed 003), exact comparison against a naive host
 * strided copy written here.
 *
 *   rearrange_gpu [--sim] [--quick]
 *
 * Three parts:
 *   1. the descriptor API (create / calculate) on the layouts in fp16 and fp32,
 *      at cudaMalloc alignment and at misaligned base pointers (which re-plans with
 *      narrower units), plus every other applicable plan (elementwise, tiled with one and
 *      with two words per thread per row, forced) emitted, compiled with nvrtc, launched
 *      directly;
 *   2. random layouts (ranks 0..6, element sizes 1..8, gaps, broadcasts, offsets);
 *   3. the graph path: the .uop graphs of tests/gpu/rearrange through the pipeline (every
 *      output a rearrange kernel) and tinyc_gpu_run_cuda, against the reference evaluator, bit for
 *      bit.
 * Destination buffers start filled with a sentinel byte and carry guard bands; the whole
 * buffer must equal the naive copy's, so a missed, extra or misplaced store shows.
 *
 * --sim runs the same harness on the CPU: the plan's host simulation instead of the
 * kernel launch (parts 1, 2) and the GPU IR interpreter instead of the device (part 3),
 * so everything but the device calls is checked without a GPU.  --quick drops the
 * largest cases.  Without --sim and without a GPU it prints a SKIP line and exits 77
 * (ctest's SKIP_RETURN_CODE), never a pass.  Exit 0: all passed; 1: a failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/gpu.h"
#include "driver/module.h"
#include "ir/tensor.h"
#include "runtime/runtime.h"
#include "sched/rearrange.h"
#include "driver/run.h"
#include "driver/rearrange_desc.h"

#ifndef TINYC_SOURCE_DIR
#define TINYC_SOURCE_DIR "."
#endif

#define SENTINEL 0xA5
#define GUARD 256		/* bytes before and after each layout's extent */

static tinyc_ctx *ctx;		/* diagnostics of everything */
static tinyc_cuda *cu;		/* the device (NULL with --sim) */
static int sim;			/* --sim: host simulation / GPU IR interpreter */
static int nrun, nfail;		/* totals */

/* ------------------------------------------------------------------ helpers ---- */

/* xorshift64*: fixed-seed generator. */
static uint64_t rng = 0x9E3779B97F4A7C15ull;

/* Next pseudo-random value. */
static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [0, n). */
static int64_t rn(int64_t n)
{
	return (int64_t)(rnd() % (uint64_t)n);
}

/* Print and forget the context's diagnostics. */
static void print_diags(void)
{
	for (int i = 0; i < tinyc_ctx_diag_count(ctx); i++)
		printf("    %s: %s\n", tinyc_ctx_diag(ctx, i)->kind, tinyc_ctx_diag(ctx, i)->msg);
	tinyc_ctx_clear_diags(ctx);
}

/* The dtype of an element size (the kernels move bits: any dtype of the size will do). */
static tinyc_dtype dtype_of(int e)
{
	return e == 1 ? TINYC_UCHAR : e == 2 ? TINYC_HALF : e == 4 ? TINYC_FLOAT : TINYC_DOUBLE;
}

/* Row-major strides. */
static void contiguous(int n, const int64_t *shape, int64_t *st)
{
	int64_t s = 1;
	for (int i = n - 1; i >= 0; i--) {
		st[i] = s;
		s *= shape[i] > 1 ? shape[i] : 1;
	}
}

/* Byte range [lo, hi) of a layout relative to element 0 (empty for no elements). */
static void extent(int n, const int64_t *shape, const int64_t *st, int e, int64_t *lo,
		   int64_t *hi)
{
	*lo = 0;
	*hi = e;
	for (int i = 0; i < n; i++) {
		if (!shape[i]) {
			*lo = *hi = 0;
			return;
		}
		int64_t r = (shape[i] - 1) * st[i] * e;
		if (r < 0)
			*lo += r;
		else
			*hi += r;
	}
}

/* The oracle: y[i] = x[i] element by element over the original shape. */
static void naive_copy(int n, const int64_t *shape, const int64_t *ys, const int64_t *xs, int e,
		       unsigned char *y, const unsigned char *x)
{
	int64_t idx[TINYC_REARRANGE_MAX_NDIM] = {0};
	for (int i = 0; i < n; i++)
		if (!shape[i])
			return;
	for (;;) {
		int64_t yo = 0, xo = 0;
		for (int i = 0; i < n; i++) {
			yo += idx[i] * ys[i];
			xo += idx[i] * xs[i];
		}
		memcpy(y + yo * e, x + xo * e, (size_t)e);
		int k = n - 1;
		while (k >= 0 && ++idx[k] == shape[k])
			idx[k--] = 0;
		if (k < 0)
			return;
	}
}

/* A layout's host image: `size` bytes, element 0 at byte `base` (base % 256 == want). */
typedef struct image {
	unsigned char *mem;	/* the bytes */
	size_t size;		/* their number */
	int64_t base;		/* offset of element 0 */
	int64_t lo, hi;		/* the layout's byte range around element 0 */
} image;

/* Size an image for a layout with element 0 at an address that is `off` bytes past a
 * 256-byte boundary. */
static void image_init(image *im, int n, const int64_t *shape, const int64_t *st, int e, int off)
{
	extent(n, shape, st, e, &im->lo, &im->hi);
	int64_t b = GUARD - im->lo;
	b = (b + 255) / 256 * 256 + off;
	im->base = b;
	im->size = (size_t)(b + im->hi + GUARD + 255) / 256 * 256;
	im->mem = aligned_alloc(256, im->size);	/* like cudaMalloc: 256-byte aligned */
}

/* Which plan a run uses. */
typedef enum runmode {
	VIA_CALCULATE,		/* the descriptor API (the plan for the pointers' alignment) */
	VIA_FORCED_ELEMENTWISE,	/* the elementwise plan, emitted and launched directly */
	VIA_FORCED_TILED,	/* the tiled plan (one word per thread per row), likewise */
	VIA_FORCED_TILED2,	/* the tiled plan with two words per thread per row */
	NMODES,
} runmode;

static const char *const mode_name[] = {"calculate", "elementwise", "tiled", "tiled_x2"};

/* Launch a plan's kernel on device buffers (forced-plan runs). */
static int launch_plan(const tinyc_rearrange_plan *p, tinyc_devptr y, tinyc_devptr x)
{
	tinyc_buf src = {0};
	if (tinyc_rearrange_emit_cuda(ctx, p, "rearrange_forced", &src)) {
		tinyc_buf_free(&src);
		return -1;
	}
	tinyc_compile_opts co = {0};
	co.driver_version = tinyc_cuda_device_info(cu)->driver_version;
	tinyc_compile_result cr = {0};
	int rc = tinyc_kernel_compile_cached(ctx, src.data, "rearrange_forced.cu",
					     tinyc_cuda_device_info(cu)->target, &co, &cr);
	tinyc_buf_free(&src);
	tinyc_kernel *k = rc ? NULL : tinyc_cuda_kernel_load(cu, &cr.blob, "rearrange_forced");
	tinyc_compile_result_clear(&cr);
	if (!k)
		return -1;
	unsigned g[3], b[3];
	tinyc_rearrange_launch_dims(p, g, b);
	void *args[] = {&y, &x};
	rc = tinyc_cuda_launch(cu, k, (tinyc_dim3){g[0], g[1], g[2]}, (tinyc_dim3){b[0], b[1], b[2]},
			       0, args);
	if (!rc)
		rc = tinyc_cuda_sync(cu);
	tinyc_kernel_free(k);
	return rc;
}

/* One copy y <- x of element size e at base offsets (bytes past 256-byte boundaries), by
 * `mode`; compares the whole destination image with the naive copy's.  Returns 1 when it
 * ran and matched, 0 when the forced plan does not apply, -1 on a failure (reported). */
static int run_case(const char *name, int n, const int64_t *shape, const int64_t *ys,
		    const int64_t *xs, int e, int xoff, int yoff, runmode mode)
{
	image xi, yi, ri;
	image_init(&xi, n, shape, xs, e, xoff);
	image_init(&yi, n, shape, ys, e, yoff);
	image_init(&ri, n, shape, ys, e, yoff);
	tinyc_tensor_desc y = {dtype_of(e), n, shape, ys}, x = {dtype_of(e), n, shape, xs};
	int result = -1;
	const char *why = "";
	tinyc_rearrange_desc *d = NULL;
	tinyc_rearrange_plan fp;
	const tinyc_rearrange_plan *p = NULL;
	tinyc_devptr dx = 0, dy = 0;
	if (!xi.mem || !yi.mem || !ri.mem) {
		why = "out of host memory";
		goto out;
	}
	for (size_t i = 0; i < xi.size; i++) {
		xi.mem[i] = (unsigned char)rnd();
		if (xi.mem[i] == SENTINEL)
			xi.mem[i] = 0x5A;
	}
	memset(yi.mem, SENTINEL, yi.size);
	memset(ri.mem, SENTINEL, ri.size);
	naive_copy(n, shape, ys, xs, e, ri.mem + ri.base, xi.mem + xi.base);
	/* the plan */
	int align = (xoff | yoff | 256) & -(xoff | yoff | 256);
	if (mode == VIA_CALCULATE) {
		if (tinyc_rearrange_create(ctx, &d, &y, &x)) {
			why = "create failed";
			goto out;
		}
		p = tinyc_rearrange_desc_plan_for(d, align);
	} else {
		tinyc_rearrange_opts o;
		tinyc_rearrange_opts_default(&o);
		o.base_align = align;
		o.force = mode == VIA_FORCED_ELEMENTWISE ? TINYC_REARRANGE_FORCE_ELEMENTWISE
							 : TINYC_REARRANGE_FORCE_TILED;
		o.tile_repeat = mode == VIA_FORCED_TILED ? 1 : mode == VIA_FORCED_TILED2 ? 2 : 0;
		if (tinyc_rearrange_plan_build(NULL, &y, &x, &o, &fp) ||
		    (fp.kind != TINYC_REARRANGE_ELEMENTWISE && fp.kind != TINYC_REARRANGE_TILED)) {
			result = 0;	/* the plan does not apply: nothing to test */
			goto out;
		}
		p = &fp;
	}
	if (!p) {
		why = "no plan";
		goto out;
	}
	if (sim) {
		tinyc_rearrange_buffer yb = {yi.mem + yi.base, -yi.base, (int64_t)yi.size - yi.base};
		tinyc_rearrange_buffer xb = {xi.mem + xi.base, -xi.base, (int64_t)xi.size - xi.base};
		if (tinyc_rearrange_simulate(ctx, p, yb, xb, NULL)) {
			why = "simulation failed";
			goto out;
		}
	} else {
		if (tinyc_cuda_alloc(cu, xi.size, &dx) || tinyc_cuda_alloc(cu, yi.size, &dy) ||
		    tinyc_cuda_upload(cu, dx, xi.mem, xi.size) ||
		    tinyc_cuda_memset8(cu, dy, SENTINEL, yi.size)) {
			why = "device memory";
			goto out;
		}
		int rc = mode == VIA_CALCULATE
				 ? (int)tinyc_rearrange_calculate(d, dy + (uint64_t)yi.base,
								  dx + (uint64_t)xi.base, cu)
				 : launch_plan(p, dy + (uint64_t)yi.base, dx + (uint64_t)xi.base);
		if (rc || tinyc_cuda_sync(cu) || tinyc_cuda_download(cu, yi.mem, dy, yi.size)) {
			why = "launch failed";
			goto out;
		}
	}
	if (memcmp(yi.mem, ri.mem, yi.size)) {
		size_t i = 0;
		while (yi.mem[i] == ri.mem[i])
			i++;
		printf("FAIL %s e%d x+%d y+%d %s: first wrong byte at %lld from y's element 0 "
		       "(got 0x%02x, want 0x%02x)\n", name, e, xoff, yoff, mode_name[mode],
		       (long long)((int64_t)i - yi.base), yi.mem[i], ri.mem[i]);
		tinyc_buf b = {0};
		tinyc_rearrange_plan_print(p, &b);
		printf("%s", b.data);
		tinyc_buf_free(&b);
		result = -1;
		why = NULL;
		goto out;
	}
	result = 1;
out:
	if (result < 0 && why) {
		printf("FAIL %s e%d x+%d y+%d %s: %s\n", name, e, xoff, yoff, mode_name[mode], why);
		print_diags();
	}
	if (result != 0) {
		nrun++;
		nfail += result < 0;
	}
	if (result > 0 && p)
		printf("ok   %-16s e%d x+%-3d y+%-3d %-11s -> %s (unit %d, pack %d)\n", name, e, xoff,
		       yoff, mode_name[mode], tinyc_rearrange_kind_name(p->kind), p->unit, p->pack);
	if (dx)
		tinyc_cuda_free(cu, dx);
	if (dy)
		tinyc_cuda_free(cu, dy);
	tinyc_rearrange_destroy(d);
	free(xi.mem);
	free(yi.mem);
	free(ri.mem);
	return result;
}

/* ------------------------------------------------------- part 1: the list ---- */

/* A layout pair; {0} strides mean row-major. */
typedef struct lcase {
	const char *name;
	int n;
	int64_t shape[6], ys[6], xs[6];
	int big;		/* dropped by --quick */
} lcase;

static const lcase cases[] = {
	{"t100", 2, {100, 100}, {1, 100}, {0}, 0},
	{"t2000", 2, {2000, 2000}, {1, 2000}, {0}, 1},
	{"t2001", 2, {2001, 2001}, {1, 2001}, {0}, 1},
	{"in4x6x64", 3, {4, 6, 64}, {0}, {64, 256, 1}, 0},
	{"out2x2x2x4", 4, {2, 2, 2, 4}, {16, 8, 1, 2}, {0}, 0},
	{"rev5", 5, {3, 4, 7, 53, 9}, {1, 3, 12, 84, 4452}, {0}, 0},
	{"rev6", 6, {3, 4, 50, 50, 5, 7}, {1, 3, 12, 600, 30000, 150000}, {0}, 1},
	{"bcast15x10752", 2, {15, 10752}, {0}, {0, 1}, 0},
	{"gaps2^6", 6, {2, 2, 2, 2, 2, 2}, {243, 81, 27, 9, 3, 1}, {100, 40, 16, 8, 4, 2}, 0},
	{"heads_contig", 4, {8, 4, 20, 64}, {0}, {5120, 64, 256, 1}, 0},
	{"heads_gapped", 4, {8, 4, 20, 64}, {1048576, 262144, 64, 1}, {5120, 64, 256, 1}, 0},
};

/* Every case in fp16 and fp32: by the descriptor API at aligned and misaligned bases (the
 * plan for each alignment), and by every applicable plan forced at aligned bases. */
static void part_list(int quick)
{
	static const int offs[][2] = {{0, 0}, {1, 0}, {0, 3}};	/* in elements */
	for (size_t c = 0; c < sizeof(cases) / sizeof(*cases); c++) {
		const lcase *k = &cases[c];
		if (quick && k->big)
			continue;
		int64_t ys[6], xs[6];
		if (k->ys[0] == 0 && k->ys[1] == 0)
			contiguous(k->n, k->shape, ys);
		else
			memcpy(ys, k->ys, sizeof(ys));
		if (k->xs[0] == 0 && k->xs[1] == 0 && k->xs[k->n - 1] == 0)
			contiguous(k->n, k->shape, xs);
		else
			memcpy(xs, k->xs, sizeof(xs));
		for (int e = 2; e <= 4; e += 2)
			for (int o = 0; o < 3; o++)
				for (int m = 0; m < NMODES; m++) {
					if (m && o)	/* forced plans at aligned bases only */
						continue;
					run_case(k->name, k->n, k->shape, ys, xs, e, offs[o][0] * e,
						 offs[o][1] * e, (runmode)m);
				}
	}
}

/* ---------------------------------------------------- part 2: random layouts ---- */

/* Random layouts: permuted, gapped, broadcast source dims, random offsets. */
static void part_random(int count)
{
	for (int t = 0; t < count; t++) {
		int n = (int)rn(7), e = 1 << rn(4);
		int64_t sh[6], ys[6], xs[6], tot = 1;
		for (int i = 0; i < n; i++) {
			sh[i] = 1 + rn(rn(3) ? 12 : 300);
			tot *= sh[i];
		}
		while (tot > 2000000) {
			int i = (int)rn(n);
			tot /= sh[i];
			sh[i] = (sh[i] + 1) / 2;
			tot *= sh[i];
		}
		int pd[6], ps[6];
		for (int k = 0; k < 2; k++) {
			int *p = k ? ps : pd;
			for (int i = 0; i < n; i++)
				p[i] = i;
			for (int i = n - 1; i > 0; i--) {
				int j = (int)rn(i + 1), q = p[i];
				p[i] = p[j];
				p[j] = q;
			}
		}
		int64_t cur = 1;
		for (int k = 0; k < n; k++) {
			ys[pd[k]] = cur;
			cur = cur * sh[pd[k]] + (rn(4) ? 0 : rn(3));
		}
		cur = rn(4) ? 1 : 2;
		for (int k = 0; k < n; k++) {
			xs[ps[k]] = cur;
			cur = cur * sh[ps[k]] + (rn(4) ? 0 : rn(3));
		}
		for (int i = 0; i < n; i++)
			if (!rn(8))
				xs[i] = 0;
		char name[32];
		snprintf(name, sizeof(name), "random%d", t);
		run_case(name, n, sh, ys, xs, e, (int)(e * rn(4)), (int)(e * rn(4)), VIA_CALCULATE);
	}
}

/* -------------------------------------------------------- part 3: graph path ---- */

/* Compile path with bindings to GPU IR for target, run it (device or interpreter) and the
 * reference evaluator on the same inputs; outputs must match byte for byte. */
static void run_graph(const char *file, const char *bind, int want_kernels, const char *target)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/gpu/rearrange/%s", TINYC_SOURCE_DIR, file);
	tinyc_source *src = tinyc_source_read(ctx, path);
	tinyc_options o = {0};
	o.target = target;
	o.bind = bind;
	tinyc_module *m = src ? tinyc_module_alloc(ctx, src, &o) : NULL;
	tinyc_io io = {0}, ref = {0};
	tinyc_tensor *in[8] = {0};
	int ok = 0;
	nrun++;
	if (!m || tinyc_module_run_until(m, tinyc_pass_find("gpuir"), 0, NULL)) {
		printf("FAIL graph %s [%s]: does not compile\n", file, bind ? bind : "");
		goto out;
	}
	const tinyc_schedule *s = tinyc_module_schedule(m);
	int nr = 0;
	for (int i = 0; i < s->nkern; i++)
		nr += tinyc_skernel_plan(&s->kerns[i])->kind == TINYC_PLAN_REARRANGE;
	if (nr != want_kernels || s->nkern != want_kernels) {
		printf("FAIL graph %s [%s]: %d rearrange kernels of %d, want %d\n", file,
		       bind ? bind : "", nr, s->nkern, want_kernels);
		goto out;
	}
	const tinyc_graph *g = m->uop;
	for (int i = 0; i < g->n; i++) {
		const tinyc_uop *u = &g->nodes[i];
		if (u->op != TINYC_OP_BUFFER)
			continue;
		int64_t len[TINYC_MAX_RANK], span = 1;
		for (int d = 0; d < u->rank; d++) {
			len[d] = tinyc_dim_value(&u->shape[d], m->bind);
			if (u->strides)
				span += (len[d] - 1) * tinyc_dim_value(&u->strides[d], m->bind);
		}
		in[u->slot] = u->strides ? tinyc_tensor_alloc(ctx, u->dtype, 1, &span)
					 : tinyc_tensor_alloc(ctx, u->dtype, u->rank, len);
		if (!in[u->slot])
			goto out;
		tinyc_tensor_fill_random(in[u->slot], 77 + (uint64_t)u->slot);
		if (u->slot + 1 > io.nin)
			io.nin = (int)u->slot + 1;
	}
	io.in = ref.in = in;
	ref.nin = io.nin;
	int64_t sym[16] = {0};
	for (int i = 0; i < g->nsym && i < 16; i++)
		sym[i] = m->bind->val[i];
	const tinyc_gpu_module *gm = tinyc_module_gpuir(m);
	int rc = sim ? tinyc_gpu_run_interp(ctx, gm, sym, &io)
		     : tinyc_gpu_run_cuda(ctx, cu, gm, sym, &io, NULL, NULL);
	if (rc || tinyc_eval(ctx, g, m->bind, &ref)) {
		printf("FAIL graph %s [%s]: the %s run or the evaluator failed\n", file,
		       bind ? bind : "", sim ? "interpreter" : "GPU");
		goto out;
	}
	ok = io.nout == ref.nout && io.nout > 0;
	for (int k = 0; ok && k < io.nout; k++) {
		size_t bytes = (size_t)tinyc_tensor_numel(ref.out[k]) *
			       (size_t)tinyc_dtype_size(ref.out[k]->dtype);
		if (tinyc_tensor_numel(io.out[k]) != tinyc_tensor_numel(ref.out[k]) ||
		    memcmp(io.out[k]->data, ref.out[k]->data, bytes)) {
			printf("FAIL graph %s [%s]: output %d differs from the evaluator\n", file,
			       bind ? bind : "", k);
			ok = 0;
		}
	}
	if (ok)
		printf("ok   graph %-16s %-14s %d rearrange kernels\n", file, bind ? bind : "",
		       nr);
out:
	if (!ok) {
		nfail++;
		print_diags();
	}
	tinyc_io_clear_outputs(&io);
	tinyc_io_clear_outputs(&ref);
	for (int i = 0; i < 8; i++)
		tinyc_tensor_free(in[i]);
	tinyc_module_free(m);
	tinyc_source_free(src);
}

/* The test graphs at the sizes. */
static void part_graphs(int quick, const char *target)
{
	run_graph("transpose.uop", "M=100,N=100", 2, target);
	if (!quick) {
		run_graph("transpose.uop", "M=2000,N=2000", 2, target);
		run_graph("transpose.uop", "M=2001,N=2001", 2, target);
		run_graph("reverse6.uop", NULL, 2, target);
	}
	run_graph("transpose.uop", "M=3,N=1000", 2, target);
	run_graph("strided_in.uop", NULL, 2, target);
	run_graph("strided_out.uop", NULL, 2, target);
	run_graph("reverse5.uop", NULL, 2, target);
	run_graph("broadcast.uop", NULL, 2, target);
	run_graph("gaps.uop", NULL, 2, target);
	run_graph("heads.uop", NULL, 4, target);
}

/* Parse options, find the device, run the three parts. */
int main(int argc, char **argv)
{
	int quick = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--sim")) {
			sim = 1;
		} else if (!strcmp(argv[i], "--quick")) {
			quick = 1;
		} else {
			fprintf(stderr, "usage: rearrange_gpu [--sim] [--quick]\n");
			return 2;
		}
	}
	ctx = tinyc_ctx_alloc();
	const char *target = "sm_90";
	if (!sim) {
		if (!tinyc_cuda_available()) {
			printf("SKIP: no CUDA GPU here: the rearrange GPU tests did not run\n");
			tinyc_ctx_free(ctx);
			return 77;
		}
		if (!(cu = tinyc_cuda_open(ctx, 0))) {
			printf("FAIL: the CUDA device does not open\n");
			print_diags();
			tinyc_ctx_free(ctx);
			return 1;
		}
		const tinyc_device_info *info = tinyc_cuda_device_info(cu);
		target = info->target;
		printf("device: %s (%s)\n", info->name, info->target);
	} else {
		printf("device: none (--sim: host simulation and GPU IR interpreter)\n");
	}
	part_list(quick);
	int before = nfail;
	part_random(quick ? 40 : 100);
	printf("random layouts: %d failures\n", nfail - before);
	part_graphs(quick, target);
	printf("rearrange-gpu: %d runs, %d failed%s\n", nrun, nfail, sim ? " (simulated)" : "");
	if (cu)
		tinyc_cuda_close(cu);
	tinyc_ctx_free(ctx);
	return nfail ? 1 : 0;
}
