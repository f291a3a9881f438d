/* Running a GPU IR module on host tensors: on the CPU through the GPU IR interpreter, or
 * on a CUDA device (compile each kernel with nvrtc through the cache, allocate buffers,
 * upload inputs, launch in order, download outputs, optionally time every kernel).
 *
 * Buffers: inputs come from io->in[slot] (their dtype and shape must be the BUFFER's, or
 * flat storage covering a strided BUFFER); outputs are allocated here, zero-filled (a
 * strided OUTPUT is a 1-D tensor of 1 + sum((shape-1)*stride) elements, zero where nothing
 * is written, as the reference evaluator does); temporaries live only during the run.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver/run.h"
#include "ir/tensor.h"

/* The value of a dim under the symbol values. */
static int64_t dimv(const tinyc_dim *d, const int64_t *sym)
{
	return d->sym < 0 ? d->val : sym[d->sym];
}

/* Storage elements of buffer b (strided: the span), or -1 when a symbol is unbound. */
static int64_t buf_storage(const tinyc_gbuf *b, const int64_t *sym)
{
	int64_t n = 1, span = 1;
	for (int d = 0; d < b->rank; d++) {
		int64_t v = dimv(&b->shape[d], sym);
		if (v < 0)
			return -1;
		n *= v;
		if (b->has_strides) {
			int64_t st = dimv(&b->strides[d], sym);
			if (st < 0)
				return -1;
			span += (v - 1) * st;
		}
	}
	if (b->has_strides)
		return n ? span : 0;
	return n;
}

/* Check the symbol values (every symbol bound). */
static int check_syms(tinyc_ctx *ctx, const tinyc_gpu_module *gm, const int64_t *sym)
{
	for (int i = 0; i < gm->nsym; i++)
		if (!sym || sym[i] < 0)
			return tinyc_error(ctx, "UnboundSymbol", "symbol %s has no value (give --bind or inputs)",
					   gm->syms[i]);
	return 0;
}

/* Allocate the output tensors into io->out (zero-filled). */
static int alloc_outputs(tinyc_ctx *ctx, const tinyc_gpu_module *gm, const int64_t *sym, tinyc_io *io)
{
	int nout = 0;
	for (int i = 0; i < gm->nbuf; i++)
		if (gm->bufs[i].role == TINYC_GB_OUTPUT && gm->bufs[i].index + 1 > nout)
			nout = gm->bufs[i].index + 1;
	tinyc_io_clear_outputs(io);
	io->out = tinyc_calloc(ctx, (size_t)(nout ? nout : 1), sizeof(*io->out));
	if (!io->out)
		return -1;
	io->nout = nout;
	for (int i = 0; i < gm->nbuf; i++) {
		const tinyc_gbuf *b = &gm->bufs[i];
		if (b->role != TINYC_GB_OUTPUT)
			continue;
		int64_t shape[TINYC_MAX_RANK];
		tinyc_tensor *t;
		if (b->has_strides) {
			int64_t span = buf_storage(b, sym);
			t = tinyc_tensor_alloc(ctx, b->dtype, 1, &span);
		} else {
			for (int d = 0; d < b->rank; d++)
				shape[d] = dimv(&b->shape[d], sym);
			t = tinyc_tensor_alloc(ctx, b->dtype, b->rank, shape);
		}
		if (!t)
			return -1;
		memset(t->data, 0, (size_t)(tinyc_tensor_numel(t) * tinyc_dtype_size(t->dtype)));
		io->out[b->index] = t;
	}
	return 0;
}

/* The input tensor of buffer b, checked against its dtype and shape; NULL on error. */
static tinyc_tensor *input_of(tinyc_ctx *ctx, const tinyc_gbuf *b, const int64_t *sym,
			      const tinyc_io *io)
{
	tinyc_tensor *t = b->index < io->nin ? io->in[b->index] : NULL;
	if (!t) {
		tinyc_error(ctx, "MissingInput", "no input for BUFFER '%s'", b->name);
		return NULL;
	}
	if (t->dtype != b->dtype) {
		tinyc_error(ctx, "InputMismatch", "input '%s' is %s, the graph says %s", b->name,
			    tinyc_dtype_name(t->dtype), tinyc_dtype_name(b->dtype));
		return NULL;
	}
	if (b->has_strides) {
		if (tinyc_tensor_numel(t) < buf_storage(b, sym)) {
			tinyc_error(ctx, "InputMismatch", "input '%s' has %" PRId64 " elements; its strides need %" PRId64,
				    b->name, tinyc_tensor_numel(t), buf_storage(b, sym));
			return NULL;
		}
		return t;
	}
	int ok = t->rank == b->rank;
	for (int d = 0; ok && d < b->rank; d++)
		ok = t->shape[d] == dimv(&b->shape[d], sym);
	if (!ok) {
		tinyc_error(ctx, "InputMismatch", "input '%s' does not have the shape the graph gives it",
			    b->name);
		return NULL;
	}
	return t;
}

int tinyc_gpu_run_interp(tinyc_ctx *ctx, const tinyc_gpu_module *gm, const int64_t *sym,
			 tinyc_io *io)
{
	if (check_syms(ctx, gm, sym) < 0 || alloc_outputs(ctx, gm, sym, io) < 0)
		return -1;
	int rc = -1;
	tinyc_gpu_mem mem = {0};
	mem.buf = calloc((size_t)gm->nbuf + 1, sizeof(void *));
	mem.buf_elems = calloc((size_t)gm->nbuf + 1, sizeof(int64_t));
	void **temp = calloc((size_t)gm->nbuf + 1, sizeof(void *));
	mem.sym = (int64_t *)sym;
	if (!mem.buf || !mem.buf_elems || !temp) {
		tinyc_error(ctx, "OutOfMemory", "interpreter buffers");
		goto done;
	}
	for (int i = 0; i < gm->nbuf; i++) {
		const tinyc_gbuf *b = &gm->bufs[i];
		int64_t n = buf_storage(b, sym);
		if (b->role == TINYC_GB_INPUT) {
			tinyc_tensor *t = input_of(ctx, b, sym, io);
			if (!t)
				goto done;
			mem.buf[i] = t->data;
			mem.buf_elems[i] = tinyc_tensor_numel(t);
		} else if (b->role == TINYC_GB_OUTPUT) {
			mem.buf[i] = io->out[b->index]->data;
			mem.buf_elems[i] = tinyc_tensor_numel(io->out[b->index]);
		} else {
			if (!(temp[i] = calloc((size_t)(n ? n : 1), (size_t)tinyc_dtype_size(b->dtype)))) {
				tinyc_error(ctx, "OutOfMemory", "temporary %s", b->name);
				goto done;
			}
			mem.buf[i] = temp[i];
			mem.buf_elems[i] = n;
		}
	}
	for (int i = 0; i < gm->nkernel; i++)
		if (tinyc_gpu_interp(ctx, gm, gm->kernels[i], &mem) < 0)
			goto done;
	rc = 0;
done:
	for (int i = 0; temp && i < gm->nbuf; i++)
		free(temp[i]);
	free(temp);
	free(mem.buf);
	free(mem.buf_elems);
	if (rc < 0)
		tinyc_io_clear_outputs(io);
	return rc;
}

/* ------------------------------------------------------------------- CUDA ---- */

void tinyc_gpu_run_stats_clear(tinyc_gpu_run_stats *st)
{
	if (!st)
		return;
	free(st->k);
	st->k = NULL;
	st->nkernel = 0;
	st->plan_graph_ms = st->plan_run_ms = st->print_ms = st->compile_wall_ms = 0;
}

/* One launch: the kernel, its grid and its arguments (with their storage). */
typedef struct launch {
	tinyc_kernel *k;	/* the loaded kernel */
	tinyc_dim3 grid, block;	/* launch extents */
	unsigned grid_v[3];	/* the grid as evaluated (0 extents: nothing to launch) */
	unsigned smem;		/* dynamic shared memory, bytes */
	int empty;		/* a zero grid extent: the kernel is skipped */
	void **args;		/* kernelParams, pointing into the storage below */
	int64_t *vals;		/* 64-bit integer parameters */
	int32_t *vals32;	/* 32-bit integer parameters */
	void *maps;		/* tensor maps (tmap_storage[nparam]) */
} launch;

/* Every launch of a plan in order, for the plan-level timings. */
typedef struct plan_launches {
	launch *ls;	/* the launches */
	int n;		/* how many */
} plan_launches;

static int launch_once(tinyc_cuda *cu, void *arg)
{
	launch *l = arg;
	return tinyc_cuda_launch(cu, l->k, l->grid, l->block, l->smem, l->args);
}

/* The whole plan once: every non-empty launch in order. */
static int plan_once(tinyc_cuda *cu, void *arg)
{
	plan_launches *p = arg;
	for (int i = 0; i < p->n; i++)
		if (!p->ls[i].empty && launch_once(cu, &p->ls[i]) < 0)
			return -1;
	return 0;
}

static void launch_clear(launch *l)
{
	free(l->args), free(l->vals), free(l->vals32), free(l->maps);
	memset(l, 0, sizeof(*l));
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1e3 + (t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* A CUtensorMap's storage (passed by value as a __grid_constant__ parameter). */
typedef struct tmap_storage {
	_Alignas(64) unsigned char bytes[128];	/* the opaque map */
} tmap_storage;

/* Describe the tensor map of parameter v (a PARAM_TMAP with its description) for this launch:
 * dims, strides and offset under the symbol values.  The hardware needs 16-byte aligned
 * addresses (checked at encoding) and byte strides that are multiples of 16. */
static int tmap_desc(tinyc_ctx *ctx, const tinyc_gpu_module *gm, const tinyc_gkernel *k,
		     const tinyc_gvar *v, const int64_t *sym, tinyc_wparam *out)
{
	const tinyc_gtmap *t = v->tmap;
	if (!t || t->buf < 0 || t->buf >= gm->nbuf)
		return tinyc_error(ctx, "LaunchError", "kernel %s: tensor map %s has no description",
				   k->name, v->name);
	int es = tinyc_dtype_size(t->dtype);
	tinyc_wtmap *m = &out->tmap;
	int64_t off, x;
	if (tinyc_gpu_eval_int(t->offset, sym, &off) < 0 || off < 0)
		return tinyc_error(ctx, "LaunchError", "kernel %s: tensor map %s: offset needs a symbol value",
				   k->name, v->name);
	for (int d = 0; d < t->rank; d++) {
		if (tinyc_gpu_eval_int(t->dim[d], sym, &x) < 0 || x < 1)
			return tinyc_error(ctx, "LaunchError", "kernel %s: tensor map %s: extent %d is not "
					   "a positive value", k->name, v->name, d);
		m->dims[d] = (uint64_t)x;
		if (tinyc_gpu_eval_int(t->stride[d], sym, &x) < 0 || x < 0)
			return tinyc_error(ctx, "LaunchError", "kernel %s: tensor map %s: stride %d needs "
					   "a symbol value", k->name, v->name, d);
		if (d > 0) {
			m->strides[d - 1] = (uint64_t)x * (uint64_t)es;
			if (m->strides[d - 1] % 16)
				return tinyc_error(ctx, "LaunchError", "kernel %s: tensor map %s: the byte stride "
						   "%" PRIu64 " of dim %d is not a multiple of 16 (TMA)", k->name,
						   v->name, m->strides[d - 1], d);
		}
		m->box[d] = (uint32_t)t->box[d];
	}
	out->kind = TINYC_WP_TMAP;
	out->buf = t->buf;
	m->offset_bytes = (uint64_t)off * (uint64_t)es;
	m->elem = t->dtype == TINYC_BFLOAT16 ? TINYC_TMAP_BF16
		  : t->dtype == TINYC_FLOAT ? TINYC_TMAP_F32 : TINYC_TMAP_F16;
	m->rank = t->rank;
	m->swizzle = t->swizzle;
	return 0;
}

/* Encode a described tensor map over the buffers at dptr[] into map (128 bytes, 64-byte
 * aligned). */
static int tmap_encode(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_gkernel *k, const tinyc_gvar *v,
		       const tinyc_wparam *w, const tinyc_devptr *dptr, void *map)
{
	const tinyc_wtmap *m = &w->tmap;
	tinyc_devptr base = dptr[w->buf] + m->offset_bytes;
	if (base % 16)
		return tinyc_error(ctx, "LaunchError", "kernel %s: tensor map %s: the origin is not 16-byte "
				   "aligned (TMA)", k->name, v->name);
	return tinyc_cuda_tensor_map(cu, map, (tinyc_tmap_elem)m->elem, m->rank, base, m->dims,
				     m->strides, m->box, m->swizzle);
}

int tinyc_gpu_kernel_plan(tinyc_ctx *ctx, const tinyc_gpu_module *gm, int i, const int64_t *sym,
			  tinyc_wkernel *wk)
{
	const tinyc_gkernel *k = gm->kernels[i];
	memset(wk, 0, sizeof(*wk));
	snprintf(wk->name, sizeof(wk->name), "%s", k->name);
	for (int d = 0; d < 3; d++) {
		int64_t g;
		if (tinyc_gpu_eval_int(k->grid[d], sym, &g) < 0)
			return tinyc_error(ctx, "LaunchError", "kernel %s: grid extent needs a symbol value", k->name);
		wk->grid[d] = g > 0 ? (unsigned)g : 0;	/* 0: nothing to compute */
		wk->block[d] = (unsigned)k->block[d];
	}
	wk->smem = (unsigned)k->dyn_smem;
	wk->pdl = k->pdl;
	if (!wk->grid[0] || !wk->grid[1] || !wk->grid[2])
		return 0;
	if (!(wk->params = tinyc_calloc(ctx, (size_t)k->nparam + 1, sizeof(*wk->params))))
		return -1;
	wk->nparam = k->nparam;
	for (int p = 0; p < k->nparam; p++) {
		const tinyc_gvar *v = &k->vars[k->params[p]];
		tinyc_wparam *w = &wk->params[p];
		if (v->kind == TINYC_GV_PARAM_PTR) {
			w->kind = TINYC_WP_PTR;
			w->buf = v->buf;
		} else if (v->kind == TINYC_GV_PARAM_INT) {
			w->val = sym[v->sym];
			w->kind = v->dtype == TINYC_INT ? TINYC_WP_I32 : TINYC_WP_I64;
			if (v->dtype == TINYC_INT && w->val > INT32_MAX)
				return tinyc_error(ctx, "LaunchError", "kernel %s: %s = %" PRId64 " does not fit int",
						   k->name, v->name, w->val);
		} else if (tmap_desc(ctx, gm, k, v, sym, w) < 0) {
			return -1;
		}
	}
	return 0;
}

/* Evaluate kernel i's grid and build its arguments (pointers, integers, tensor maps). */
static int launch_prepare(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_gpu_module *gm, int i,
			  tinyc_kernel *kern, const int64_t *sym, const tinyc_devptr *dptr, launch *l)
{
	const tinyc_gkernel *k = gm->kernels[i];
	tinyc_wkernel wk;
	int rc = tinyc_gpu_kernel_plan(ctx, gm, i, sym, &wk);
	memcpy(l->grid_v, wk.grid, sizeof(l->grid_v));
	l->empty = !wk.grid[0] || !wk.grid[1] || !wk.grid[2];
	if (rc < 0 || l->empty) {
		free(wk.params);
		return rc;
	}
	l->args = calloc((size_t)k->nparam + 1, sizeof(void *));
	l->vals = calloc((size_t)k->nparam + 1, sizeof(int64_t));
	l->vals32 = calloc((size_t)k->nparam + 1, sizeof(int32_t));
	l->maps = aligned_alloc(64, sizeof(tmap_storage) * ((size_t)k->nparam + 1));
	if (!l->args || !l->vals || !l->vals32 || !l->maps) {
		free(wk.params);
		return tinyc_error(ctx, "OutOfMemory", "kernel arguments");
	}
	tmap_storage *maps = l->maps;
	for (int p = 0; p < k->nparam && rc == 0; p++) {
		const tinyc_wparam *w = &wk.params[p];
		if (w->kind == TINYC_WP_PTR) {
			l->args[p] = (void *)&dptr[w->buf];
		} else if (w->kind == TINYC_WP_I32) {
			l->vals32[p] = (int32_t)w->val;
			l->args[p] = &l->vals32[p];
		} else if (w->kind == TINYC_WP_I64) {
			l->vals[p] = w->val;
			l->args[p] = &l->vals[p];
		} else if ((rc = tmap_encode(ctx, cu, k, &k->vars[k->params[p]], w, dptr, &maps[p])) == 0) {
			l->args[p] = &maps[p];
		}
	}
	free(wk.params);
	l->k = kern;
	l->grid = (tinyc_dim3){l->grid_v[0], l->grid_v[1], l->grid_v[2]};
	l->block = (tinyc_dim3){(unsigned)k->block[0], (unsigned)k->block[1], (unsigned)k->block[2]};
	l->smem = (unsigned)k->dyn_smem;
	return rc;
}

/* The timings of a bench run (the launches already ran once).  Per kernel: the median of
 * opt->iters launches each between two events, the CUDA-graph replay time per launch (iters
 * launches captured into one graph, median of TIME_REPLAYS replays / iters), and the host
 * wall time per launch of iters back-to-back launches.  The whole plan (every kernel in
 * order): graph replay and back-to-back event time per execution. */
#define TIME_REPLAYS 7
static int time_launches(tinyc_cuda *cu, launch *ls, int nk, const tinyc_gpu_run_opts *opt,
			 tinyc_gpu_run_stats *st)
{
	int graphs = tinyc_cuda_has_graphs(cu);
	for (int i = 0; i < nk; i++) {
		if (ls[i].empty)
			continue;
		double med = 0, g = 0;
		if (tinyc_cuda_time(cu, launch_once, &ls[i], opt->warmup, opt->iters, &med, NULL) < 0)
			return -1;
		if (graphs && tinyc_cuda_time_graph(cu, launch_once, &ls[i], opt->iters, TIME_REPLAYS, &g) < 0)
			return -1;
		/* launch-inclusive: host time of back-to-back launches, one sync at the end */
		struct timespec t0;
		if (tinyc_cuda_sync(cu) < 0)
			return -1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int r = 0; r < opt->iters; r++)
			if (launch_once(cu, &ls[i]) < 0)
				return -1;
		if (tinyc_cuda_sync(cu) < 0)
			return -1;
		if (st) {
			st->k[i].wall_ms = ms_since(&t0) / opt->iters;
			st->k[i].median_ms = med;
			st->k[i].graph_ms = g;
		}
	}
	plan_launches p = {ls, nk};
	double run = 0, g = 0;
	if (tinyc_cuda_time_run(cu, plan_once, &p, opt->warmup, opt->iters, &run) < 0)
		return -1;
	if (graphs && tinyc_cuda_time_graph(cu, plan_once, &p, opt->iters, TIME_REPLAYS, &g) < 0)
		return -1;
	if (st) {
		st->plan_run_ms = run;
		st->plan_graph_ms = g;
	}
	return tinyc_cuda_sync(cu);
}

/* Print every kernel's CUDA and compile them all through the cache (nvrtc on several
 * threads: tinyc_kernel_compile_many); results[i] holds kernel i's image. */
static int compile_all(tinyc_ctx *ctx, const tinyc_gpu_module *gm, const tinyc_device_info *dev,
		       const tinyc_gpu_run_opts *opt, tinyc_compile_result *results,
		       tinyc_gpu_run_stats *stats)
{
	int nk = gm->nkernel, rc = -1;
	tinyc_buf *texts = calloc((size_t)nk + 1, sizeof(*texts));
	char (*units)[160] = calloc((size_t)nk + 1, sizeof(*units));
	tinyc_compile_job *jobs = calloc((size_t)nk + 1, sizeof(*jobs));
	tinyc_compile_opts co = {0};
	co.no_cache = opt->no_cache;
	co.driver_version = dev->driver_version;
	/* arch-specific kernels (wgmma: sm_90a) are built for the module's target when the
	 * device is of that architecture */
	const char *arch = dev->target;
	tinyc_arch ga;
	if (gm->target[0] && tinyc_arch_from_target(NULL, gm->target, &ga) == 0 && ga.suffix &&
	    ga.major == dev->arch.major && ga.minor == dev->arch.minor)
		arch = gm->target;
	if (!texts || !units || !jobs) {
		tinyc_error(ctx, "OutOfMemory", "kernel texts");
		goto done;
	}
	double t_print = tinyc_now_ms();
	for (int i = 0; i < nk; i++) {
		if (tinyc_cuda_print_kernel(ctx, gm, i, &texts[i]) < 0)
			goto done;
		snprintf(units[i], sizeof(units[i]), "%s.cu", gm->kernels[i]->name);
		jobs[i] = (tinyc_compile_job){texts[i].data, units[i], arch, &co};
	}
	if (stats)
		stats->print_ms = tinyc_now_ms() - t_print;
	double wall = 0;
	if (tinyc_kernel_compile_many(ctx, nk, jobs, results, &wall) < 0)
		goto done;
	for (int i = 0; stats && i < nk; i++) {
		snprintf(stats->k[i].name, sizeof(stats->k[i].name), "%s", gm->kernels[i]->name);
		stats->k[i].nvrtc_ms = results[i].compile_ms;
		stats->k[i].cache_hit = results[i].cache_hit;
		stats->k[i].compile_ms = results[i].total_ms;
	}
	if (stats)
		stats->compile_wall_ms = wall;
	rc = 0;
done:
	for (int i = 0; texts && i < nk; i++)
		tinyc_buf_free(&texts[i]);
	free(texts);
	free(units);
	free(jobs);
	return rc;
}

/* Check that every buffer of the run (inputs, outputs, intermediates) fits in the device's
 * free memory before anything is compiled or allocated: OutOfMemory otherwise. */
static int device_memory_check(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_gpu_module *gm,
			       const int64_t *sym)
{
	int64_t need = 0;
	for (int i = 0; i < gm->nbuf; i++) {
		int64_t n = buf_storage(&gm->bufs[i], sym), b;
		if (n < 1)
			n = 1;
		if (__builtin_mul_overflow(n, (int64_t)tinyc_dtype_size(gm->bufs[i].dtype), &b) ||
		    __builtin_add_overflow(need, b, &need))
			need = INT64_MAX;
	}
	return tinyc_cuda_memory_check(ctx, cu, "running on the GPU (inputs, outputs and intermediates)",
				       need);
}

/* Copy kernel i's image into opt->keep[i] when the caller keeps them (the module cache). */
static int keep_image(tinyc_ctx *ctx, const tinyc_gpu_run_opts *opt, int i, const tinyc_blob *img)
{
	if (!opt->keep)
		return 0;
	if (!(opt->keep[i].data = malloc(img->size + 1)))
		return tinyc_error(ctx, "OutOfMemory", "kernel image copy");
	memcpy(opt->keep[i].data, img->data, img->size);
	opt->keep[i].size = img->size;
	opt->keep[i].is_cubin = img->is_cubin;
	return 0;
}

int tinyc_gpu_run_cuda(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_gpu_module *gm,
		       const int64_t *sym, tinyc_io *io, const tinyc_gpu_run_opts *opt,
		       tinyc_gpu_run_stats *stats)
{
	tinyc_gpu_run_opts defaults = {0};
	if (!opt)
		opt = &defaults;
	if (check_syms(ctx, gm, sym) < 0 || tinyc_cuda_renew(cu) < 0 ||
	    device_memory_check(ctx, cu, gm, sym) < 0 || alloc_outputs(ctx, gm, sym, io) < 0)
		return -1;
	const tinyc_device_info *dev = tinyc_cuda_device_info(cu);
	int rc = -1, nk = gm->nkernel;
	tinyc_devptr *dptr = calloc((size_t)gm->nbuf + 1, sizeof(*dptr));
	tinyc_kernel **kern = calloc((size_t)nk + 1, sizeof(*kern));
	launch *ls = NULL;
	tinyc_compile_result *kern_texts = calloc((size_t)nk + 1, sizeof(*kern_texts));
	if (stats) {
		tinyc_gpu_run_stats_clear(stats);
		stats->k = calloc((size_t)nk + 1, sizeof(*stats->k));
		stats->nkernel = nk;
	}
	if (!dptr || !kern || !kern_texts || (stats && !stats->k)) {
		tinyc_error(ctx, "OutOfMemory", "CUDA run");
		goto done;
	}
	/* compile every kernel (each its own translation unit, through the cache, nvrtc on
	 * several threads), then load them in order */
	if (!opt->images && compile_all(ctx, gm, dev, opt, kern_texts, stats) < 0)
		goto done;
	for (int i = 0; i < nk; i++) {
		const tinyc_gkernel *k = gm->kernels[i];
		const tinyc_blob *img = opt->images ? &opt->images[i] : &kern_texts[i].blob;
		if (stats && opt->images) {
			snprintf(stats->k[i].name, sizeof(stats->k[i].name), "%s", k->name);
			stats->k[i].cache_hit = 1;
		}
		if (keep_image(ctx, opt, i, img) < 0)
			goto done;
		double t_load = tinyc_now_ms();
		kern[i] = tinyc_cuda_kernel_load(cu, img, k->name);
		if (kern[i])
			tinyc_kernel_set_pdl(kern[i], k->pdl);
		if (stats)
			stats->k[i].load_ms = tinyc_now_ms() - t_load;
		tinyc_compile_result_clear(&kern_texts[i]);
		if (!kern[i])
			goto done;
		if (stats) {
			tinyc_kernel_attrs at = {0};
			if (tinyc_kernel_get_attrs(cu, kern[i], &at) == 0) {
				stats->k[i].regs = at.num_regs;
				stats->k[i].local_bytes = at.local_bytes;
				stats->k[i].smem_bytes = at.static_smem_bytes + (int)k->dyn_smem;
			}
		}
	}
	/* buffers */
	for (int i = 0; i < gm->nbuf; i++) {
		const tinyc_gbuf *b = &gm->bufs[i];
		int64_t n = buf_storage(b, sym);
		size_t bytes = (size_t)(n > 0 ? n : 1) * (size_t)tinyc_dtype_size(b->dtype);
		const tinyc_tensor *t = NULL;
		if (b->role == TINYC_GB_INPUT) {
			if (!(t = input_of(ctx, b, sym, io)))
				goto done;
			bytes = (size_t)tinyc_tensor_numel(t) * (size_t)tinyc_dtype_size(b->dtype);
			if (!bytes)
				bytes = 1;
		}
		if (tinyc_cuda_alloc(cu, bytes, &dptr[i]) < 0)
			goto done;
		if (t && tinyc_tensor_numel(t) > 0 &&
		    tinyc_cuda_upload(cu, dptr[i], t->data, (size_t)tinyc_tensor_numel(t) * (size_t)tinyc_dtype_size(b->dtype)) < 0)
			goto done;
		if (!t && tinyc_cuda_memset8(cu, dptr[i], 0, bytes) < 0)
			goto done;
	}
	/* every launch's grid and arguments, then the launches in order */
	if (!(ls = calloc((size_t)nk + 1, sizeof(*ls)))) {
		tinyc_error(ctx, "OutOfMemory", "kernel launches");
		goto done;
	}
	for (int i = 0; i < nk; i++)
		if (launch_prepare(ctx, cu, gm, i, kern[i], sym, dptr, &ls[i]) < 0)
			goto done;
	for (int i = 0; i < nk; i++) {
		struct timespec t0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (!ls[i].empty && (launch_once(cu, &ls[i]) < 0 ||
				     tinyc_cuda_sync_kernel(cu, gm->kernels[i]->name) < 0))
			goto done;
		if (stats) {
			stats->k[i].median_ms = ms_since(&t0);
			for (int d = 0; d < 3; d++)
				stats->k[i].grid[d] = ls[i].grid_v[d], stats->k[i].block[d] = (unsigned)gm->kernels[i]->block[d];
		}
	}
	if (opt->iters > 0 && time_launches(cu, ls, nk, opt, stats) < 0)
		goto done;
	if (tinyc_cuda_sync(cu) < 0)
		goto done;
	/* outputs back (the timed runs repeat the same launches: same results) */
	for (int i = 0; i < gm->nbuf; i++) {
		const tinyc_gbuf *b = &gm->bufs[i];
		if (b->role != TINYC_GB_OUTPUT)
			continue;
		tinyc_tensor *t = io->out[b->index];
		size_t bytes = (size_t)tinyc_tensor_numel(t) * (size_t)tinyc_dtype_size(t->dtype);
		if (bytes && tinyc_cuda_download(cu, t->data, dptr[i], bytes) < 0)
			goto done;
	}
	rc = 0;
done:
	for (int i = 0; dptr && i < gm->nbuf; i++)
		if (dptr[i])
			tinyc_cuda_free(cu, dptr[i]);
	for (int i = 0; kern_texts && i < nk; i++)
		tinyc_compile_result_clear(&kern_texts[i]);
	free(kern_texts);
	for (int i = 0; ls && i < nk; i++)
		launch_clear(&ls[i]);
	free(ls);
	for (int i = 0; kern && i < nk; i++)
		tinyc_kernel_free(kern[i]);
	free(dptr);
	free(kern);
	if (rc < 0)
		tinyc_io_clear_outputs(io);
	return rc;
}

/* ------------------------------------------------------ in a worker process ---- */

int tinyc_gpu_run_isolated(tinyc_ctx *ctx, tinyc_worker *w, const tinyc_gpu_module *gm,
			   const int64_t *sym, tinyc_io *io, const tinyc_gpu_run_opts *opt,
			   double timeout_s, tinyc_gpu_run_stats *stats)
{
	tinyc_gpu_run_opts defaults = {0};
	if (!opt)
		opt = &defaults;
	const tinyc_device_info *dev = NULL;
	if (check_syms(ctx, gm, sym) < 0 || !(dev = tinyc_worker_device(ctx, w)) ||
	    alloc_outputs(ctx, gm, sym, io) < 0)
		return -1;
	int rc = -1, nk = gm->nkernel, nw = 0;
	tinyc_compile_result *results = calloc((size_t)nk + 1, sizeof(*results));
	tinyc_wkernel *wks = calloc((size_t)nk + 1, sizeof(*wks));
	tinyc_wbuf *wbs = calloc((size_t)gm->nbuf + 1, sizeof(*wbs));
	const void **in = calloc((size_t)gm->nbuf + 1, sizeof(*in));
	void **out = calloc((size_t)gm->nbuf + 1, sizeof(*out));
	if (stats) {
		tinyc_gpu_run_stats_clear(stats);
		stats->k = calloc((size_t)nk + 1, sizeof(*stats->k));
		stats->nkernel = nk;
	}
	if (!results || !wks || !wbs || !in || !out || (stats && !stats->k)) {
		tinyc_error(ctx, "OutOfMemory", "isolated CUDA run");
		goto done;
	}
	if (!opt->images && compile_all(ctx, gm, dev, opt, results, stats) < 0)
		goto done;
	/* the buffers: inputs and outputs travel through shared memory, temporaries stay there */
	for (int i = 0; i < gm->nbuf; i++) {
		const tinyc_gbuf *b = &gm->bufs[i];
		int64_t n = buf_storage(b, sym), es = tinyc_dtype_size(b->dtype);
		const tinyc_tensor *t = NULL;
		wbs[i].bytes = (uint64_t)(n > 0 ? n : 1) * (uint64_t)es;
		if (b->role == TINYC_GB_INPUT) {
			if (!(t = input_of(ctx, b, sym, io)))
				goto done;
			wbs[i].role = TINYC_WB_INPUT;
			in[i] = t->data;
		} else if (b->role == TINYC_GB_OUTPUT) {
			t = io->out[b->index];
			wbs[i].role = TINYC_WB_OUTPUT;
			out[i] = t->data;
		}
		if (t) {
			wbs[i].io_bytes = (uint64_t)tinyc_tensor_numel(t) * (uint64_t)es;
			wbs[i].bytes = wbs[i].io_bytes ? wbs[i].io_bytes : 1;
		}
	}
	/* the launches, evaluated here; kernels with an empty grid are left out */
	for (int i = 0; i < nk; i++) {
		const tinyc_blob *img = opt->images ? &opt->images[i] : &results[i].blob;
		if (keep_image(ctx, opt, i, img) < 0 || tinyc_gpu_kernel_plan(ctx, gm, i, sym, &wks[nw]) < 0) {
			free(wks[nw].params);
			goto done;
		}
		if (stats)
			memcpy(stats->k[i].grid, wks[nw].grid, sizeof(stats->k[i].grid)),
			memcpy(stats->k[i].block, wks[nw].block, sizeof(stats->k[i].block));
		wks[nw].image = img;
		if (wks[nw].params)
			nw++;
	}
	tinyc_wplan plan = {gm->nbuf, wbs, nw, wks};
	rc = tinyc_worker_run(ctx, w, &plan, in, out, timeout_s);
done:
	for (int i = 0; results && i < nk; i++)
		tinyc_compile_result_clear(&results[i]);
	for (int i = 0; wks && i < nw; i++)
		free(wks[i].params);
	free(results), free(wks), free(wbs), free(in), free(out);
	if (rc < 0)
		tinyc_io_clear_outputs(io);
	return rc;
}

/* ---- shared with gpu_launch.c (launches on the caller's device pointers) ---- */

int64_t tinyc_gpu_buf_storage(const tinyc_gbuf *b, const int64_t *sym)
{
	return buf_storage(b, sym);
}

int tinyc_gpu_tmap_arg(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_gpu_module *gm,
		       const tinyc_gkernel *k, const tinyc_gvar *v, const int64_t *sym,
		       const tinyc_devptr *dptr, void *map)
{
	tinyc_wparam w = {0};
	if (tmap_desc(ctx, gm, k, v, sym, &w) < 0)
		return -1;
	return tmap_encode(ctx, cu, k, v, &w, dptr, map);
}
