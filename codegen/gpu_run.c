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

#include "codegen/gpu.h"
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
}

/* One launch: the kernel and its arguments (for tinyc_cuda_time). */
typedef struct launch {
	tinyc_kernel *k;
	tinyc_dim3 grid, block;
	unsigned smem;
	void **args;
} launch;

static int launch_once(tinyc_cuda *cu, void *arg)
{
	launch *l = arg;
	return tinyc_cuda_launch(cu, l->k, l->grid, l->block, l->smem, l->args);
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

/* Build the tensor map of parameter v (a PARAM_TMAP with its description) for this launch:
 * dims, strides and offset under the symbol values, the buffer's device address.  The
 * hardware needs 16-byte aligned addresses and byte strides that are multiples of 16. */
static int tmap_arg(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_gpu_module *gm,
		    const tinyc_gkernel *k, const tinyc_gvar *v, const int64_t *sym,
		    const tinyc_devptr *dptr, tmap_storage *out)
{
	const tinyc_gtmap *t = v->tmap;
	if (!t || t->buf < 0 || t->buf >= gm->nbuf)
		return tinyc_error(ctx, "LaunchError", "kernel %s: tensor map %s has no description",
				   k->name, v->name);
	int es = tinyc_dtype_size(t->dtype);
	uint64_t dims[5], strides[5];
	uint32_t box[5];
	int64_t off, x;
	if (tinyc_gpu_eval_int(t->offset, sym, &off) < 0 || off < 0)
		return tinyc_error(ctx, "LaunchError", "kernel %s: tensor map %s: offset needs a symbol value",
				   k->name, v->name);
	for (int d = 0; d < t->rank; d++) {
		if (tinyc_gpu_eval_int(t->dim[d], sym, &x) < 0 || x < 1)
			return tinyc_error(ctx, "LaunchError", "kernel %s: tensor map %s: extent %d is not "
					   "a positive value", k->name, v->name, d);
		dims[d] = (uint64_t)x;
		if (tinyc_gpu_eval_int(t->stride[d], sym, &x) < 0 || x < 0)
			return tinyc_error(ctx, "LaunchError", "kernel %s: tensor map %s: stride %d needs "
					   "a symbol value", k->name, v->name, d);
		if (d > 0) {
			strides[d - 1] = (uint64_t)x * (uint64_t)es;
			if (strides[d - 1] % 16)
				return tinyc_error(ctx, "LaunchError", "kernel %s: tensor map %s: the byte stride "
						   "%" PRIu64 " of dim %d is not a multiple of 16 (TMA)", k->name,
						   v->name, strides[d - 1], d);
		}
		box[d] = (uint32_t)t->box[d];
	}
	tinyc_devptr base = dptr[t->buf] + (tinyc_devptr)off * (tinyc_devptr)es;
	if (base % 16)
		return tinyc_error(ctx, "LaunchError", "kernel %s: tensor map %s: the origin is not 16-byte "
				   "aligned (TMA)", k->name, v->name);
	tinyc_tmap_elem el = t->dtype == TINYC_BFLOAT16 ? TINYC_TMAP_BF16
			     : t->dtype == TINYC_FLOAT ? TINYC_TMAP_F32 : TINYC_TMAP_F16;
	return tinyc_cuda_tensor_map(cu, out->bytes, el, t->rank, base, dims, strides, box, t->swizzle);
}

int tinyc_gpu_run_cuda(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_gpu_module *gm,
		       const int64_t *sym, tinyc_io *io, const tinyc_gpu_run_opts *opt,
		       tinyc_gpu_run_stats *stats)
{
	tinyc_gpu_run_opts defaults = {0};
	if (!opt)
		opt = &defaults;
	if (check_syms(ctx, gm, sym) < 0 || alloc_outputs(ctx, gm, sym, io) < 0)
		return -1;
	const tinyc_device_info *dev = tinyc_cuda_device_info(cu);
	int rc = -1, nk = gm->nkernel;
	tinyc_devptr *dptr = calloc((size_t)gm->nbuf + 1, sizeof(*dptr));
	tinyc_kernel **kern = calloc((size_t)nk + 1, sizeof(*kern));
	if (stats) {
		tinyc_gpu_run_stats_clear(stats);
		stats->k = calloc((size_t)nk + 1, sizeof(*stats->k));
		stats->nkernel = nk;
	}
	if (!dptr || !kern || (stats && !stats->k)) {
		tinyc_error(ctx, "OutOfMemory", "CUDA run");
		goto done;
	}
	/* compile and load every kernel (each its own translation unit, through the cache) */
	for (int i = 0; i < nk; i++) {
		const tinyc_gkernel *k = gm->kernels[i];
		tinyc_buf text = {0};
		if (tinyc_cuda_print_kernel(ctx, gm, i, &text) < 0) {
			tinyc_buf_free(&text);
			goto done;
		}
		tinyc_compile_opts co = {0};
		co.no_cache = opt->no_cache;
		co.driver_version = dev->driver_version;
		tinyc_compile_result cr = {0};
		char unit[160];
		snprintf(unit, sizeof(unit), "%s.cu", k->name);
		/* arch-specific kernels (wgmma: sm_90a) are built for the module's target when the
		 * device is of that architecture */
		const char *arch = dev->target;
		tinyc_arch ga;
		if (gm->target[0] && tinyc_arch_from_target(NULL, gm->target, &ga) == 0 && ga.suffix &&
		    ga.major == dev->arch.major && ga.minor == dev->arch.minor)
			arch = gm->target;
		int crc = tinyc_kernel_compile_cached(ctx, text.data, unit, arch, &co, &cr);
		tinyc_buf_free(&text);
		if (crc < 0) {
			tinyc_compile_result_clear(&cr);
			goto done;
		}
		if (stats) {
			snprintf(stats->k[i].name, sizeof(stats->k[i].name), "%s", k->name);
			stats->k[i].nvrtc_ms = cr.compile_ms;
			stats->k[i].cache_hit = cr.cache_hit;
			stats->k[i].compile_ms = cr.total_ms;
		}
		double t_load = tinyc_now_ms();
		kern[i] = tinyc_cuda_kernel_load(cu, &cr.blob, k->name);
		if (stats)
			stats->k[i].load_ms = tinyc_now_ms() - t_load;
		tinyc_compile_result_clear(&cr);
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
	/* launch in order, timing each kernel when asked */
	for (int i = 0; i < nk; i++) {
		const tinyc_gkernel *k = gm->kernels[i];
		int64_t grid[3];
		for (int d = 0; d < 3; d++)
			if (tinyc_gpu_eval_int(k->grid[d], sym, &grid[d]) < 0) {
				tinyc_error(ctx, "LaunchError", "kernel %s: grid extent needs a symbol value", k->name);
				goto done;
			}
		if (grid[0] <= 0 || grid[1] <= 0 || grid[2] <= 0)
			continue;	/* nothing to compute */
		/* argument storage: pointers and integers by parameter */
		void **args = calloc((size_t)k->nparam + 1, sizeof(void *));
		int64_t *vals = calloc((size_t)k->nparam + 1, sizeof(int64_t));
		int32_t *vals32 = calloc((size_t)k->nparam + 1, sizeof(int32_t));
		tmap_storage *maps = aligned_alloc(64, sizeof(tmap_storage) * ((size_t)k->nparam + 1));
		if (!args || !vals || !vals32 || !maps) {
			free(args), free(vals), free(vals32), free(maps);
			tinyc_error(ctx, "OutOfMemory", "kernel arguments");
			goto done;
		}
		int bad = 0;
		for (int p = 0; p < k->nparam; p++) {
			const tinyc_gvar *v = &k->vars[k->params[p]];
			if (v->kind == TINYC_GV_PARAM_PTR) {
				args[p] = &dptr[v->buf];
			} else if (v->kind == TINYC_GV_PARAM_INT) {
				vals[p] = sym[v->sym];
				if (v->dtype == TINYC_INT) {
					if (vals[p] > INT32_MAX) {
						tinyc_error(ctx, "LaunchError", "kernel %s: %s = %" PRId64 " does not fit int",
							    k->name, v->name, vals[p]);
						bad = 1;
					}
					vals32[p] = (int32_t)vals[p];
					args[p] = &vals32[p];
				} else {
					args[p] = &vals[p];
				}
			} else if (tmap_arg(ctx, cu, gm, k, v, sym, dptr, &maps[p]) == 0) {
				args[p] = &maps[p];
			} else {
				bad = 1;
			}
		}
		launch l = {kern[i], {(unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2]},
			    {(unsigned)k->block[0], (unsigned)k->block[1], (unsigned)k->block[2]},
			    (unsigned)k->dyn_smem, args};
		int lrc = bad ? -1 : 0;
		if (!bad && opt->iters > 0) {
			double med = 0;
			lrc = tinyc_cuda_time(cu, launch_once, &l, opt->warmup, opt->iters, &med, NULL);
			if (stats)
				stats->k[i].median_ms = med;
			/* launch-inclusive: host time of back-to-back launches, one sync at the end */
			if (lrc == 0 && stats && (lrc = tinyc_cuda_sync(cu)) == 0) {
				struct timespec t0;
				clock_gettime(CLOCK_MONOTONIC, &t0);
				for (int r = 0; r < opt->iters && lrc == 0; r++)
					lrc = launch_once(cu, &l);
				if (lrc == 0)
					lrc = tinyc_cuda_sync(cu);
				stats->k[i].wall_ms = ms_since(&t0) / opt->iters;
			}
		} else if (!bad) {
			struct timespec t0;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			lrc = launch_once(cu, &l);
			if (lrc == 0)
				lrc = tinyc_cuda_sync(cu);
			if (stats)
				stats->k[i].median_ms = ms_since(&t0);
		}
		if (stats)
			for (int d = 0; d < 3; d++)
				stats->k[i].grid[d] = (unsigned)grid[d], stats->k[i].block[d] = (unsigned)k->block[d];
		free(args), free(vals), free(vals32), free(maps);
		if (lrc < 0)
			goto done;
	}
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
	for (int i = 0; kern && i < nk; i++)
		tinyc_kernel_free(kern[i]);
	free(dptr);
	free(kern);
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
	return tmap_arg(ctx, cu, gm, k, v, sym, dptr, map);
}
