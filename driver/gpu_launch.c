/* Launching a GPU IR module on the caller's device pointers and stream (the C API's
 * tinyc_program_launch): compile and load the kernels once, then enqueue them as often as
 * asked, with no host copies and no synchronisation.
 *
 * tinyc_gpu_run_cuda (gpu_run.c) is the host-array path: it allocates every buffer, copies
 * the inputs in and the outputs out, and waits.  Here every buffer is the caller's (the
 * program's workspace for temporaries), and the launch only enqueues: a zero fill of the
 * outputs and temporaries (as tinyc_gpu_run_cuda gives them), then every kernel in order.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "driver/run.h"

/* The kernels of one GPU IR module, loaded on one device. */
struct tinyc_gpu_loaded {
	int nkernel;		/* = the module's kernels */
	tinyc_kernel **kern;	/* per kernel, launch order (owned) */
};

/* The architecture kernel `gm` is built for on `dev`: the module's arch-specific target
 * (wgmma: sm_90a) when the device is of that architecture, else the device's. */
static const char *kernel_arch(const tinyc_gpu_module *gm, const tinyc_device_info *dev)
{
	tinyc_arch ga;
	if (gm->target[0] && tinyc_arch_from_target(NULL, gm->target, &ga) == 0 && ga.suffix &&
	    ga.major == dev->arch.major && ga.minor == dev->arch.minor)
		return gm->target;
	return dev->target;
}

tinyc_gpu_loaded *tinyc_gpu_load(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_gpu_module *gm,
				 const tinyc_gpu_run_opts *opt)
{
	const tinyc_device_info *dev = tinyc_cuda_device_info(cu);
	tinyc_gpu_loaded *l = tinyc_calloc(ctx, 1, sizeof(*l));
	if (!l)
		return NULL;
	l->nkernel = gm->nkernel;
	if (!(l->kern = tinyc_calloc(ctx, (size_t)gm->nkernel + 1, sizeof(*l->kern)))) {
		tinyc_gpu_loaded_free(l);
		return NULL;
	}
	/* each kernel its own translation unit through the kernel cache, as gpu_run.c does */
	for (int i = 0; i < gm->nkernel; i++) {
		tinyc_buf text = {0};
		tinyc_compile_opts co = {0};
		tinyc_compile_result cr = {0};
		char unit[160];
		co.no_cache = opt ? opt->no_cache : 0;
		co.driver_version = dev->driver_version;
		snprintf(unit, sizeof(unit), "%s.cu", gm->kernels[i]->name);
		int rc = tinyc_cuda_print_kernel(ctx, gm, i, &text);
		if (rc == 0)
			rc = tinyc_kernel_compile_cached(ctx, text.data, unit, kernel_arch(gm, dev), &co, &cr);
		if (rc == 0 && !(l->kern[i] = tinyc_cuda_kernel_load(cu, &cr.blob, gm->kernels[i]->name)))
			rc = -1;
		if (rc == 0)
			tinyc_kernel_set_pdl(l->kern[i], gm->kernels[i]->pdl);
		tinyc_buf_free(&text);
		tinyc_compile_result_clear(&cr);
		if (rc < 0) {
			tinyc_gpu_loaded_free(l);
			return NULL;
		}
	}
	return l;
}

void tinyc_gpu_loaded_free(tinyc_gpu_loaded *l)
{
	if (!l)
		return;
	for (int i = 0; l->kern && i < l->nkernel; i++)
		tinyc_kernel_free(l->kern[i]);
	free(l->kern);
	free(l);
}

/* The argument storage of one launch: kernelParams and the values they point at. */
typedef struct kargs {
	void **args;		/* one pointer per parameter (cuLaunchKernel's kernelParams) */
	int64_t *vals;		/* 64-bit integer parameters */
	int32_t *vals32;	/* 32-bit integer parameters */
	unsigned char *maps;	/* tensor maps, 128 bytes each, 64-byte aligned */
} kargs;

static void kargs_free(kargs *a)
{
	free(a->args), free(a->vals), free(a->vals32), free(a->maps);
}

/* Fill the arguments of kernel k for buffers at dptr[] and symbol values sym[]: pointers,
 * size symbols (32-bit where the kernel takes int), tensor maps.  0 or -1. */
static int kargs_build(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_gpu_module *gm,
		       const tinyc_gkernel *k, const int64_t *sym, const tinyc_devptr *dptr,
		       kargs *a)
{
	a->args = calloc((size_t)k->nparam + 1, sizeof(void *));
	a->vals = calloc((size_t)k->nparam + 1, sizeof(int64_t));
	a->vals32 = calloc((size_t)k->nparam + 1, sizeof(int32_t));
	a->maps = aligned_alloc(64, 128 * ((size_t)k->nparam + 1));
	if (!a->args || !a->vals || !a->vals32 || !a->maps)
		return tinyc_error(ctx, "OutOfMemory", "kernel arguments");
	for (int p = 0; p < k->nparam; p++) {
		const tinyc_gvar *v = &k->vars[k->params[p]];
		if (v->kind == TINYC_GV_PARAM_PTR) {
			a->args[p] = (void *)&dptr[v->buf];
		} else if (v->kind == TINYC_GV_PARAM_INT) {
			a->vals[p] = sym[v->sym];
			if (v->dtype != TINYC_INT) {
				a->args[p] = &a->vals[p];
				continue;
			}
			if (a->vals[p] > INT32_MAX)
				return tinyc_error(ctx, "LaunchError", "kernel %s: %s = %" PRId64 " does not fit int",
						   k->name, v->name, a->vals[p]);
			a->vals32[p] = (int32_t)a->vals[p];
			a->args[p] = &a->vals32[p];
		} else {
			if (tinyc_gpu_tmap_arg(ctx, cu, gm, k, v, sym, dptr, a->maps + 128 * (size_t)p) < 0)
				return -1;
			a->args[p] = a->maps + 128 * (size_t)p;
		}
	}
	return 0;
}

int tinyc_gpu_launch_async(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_gpu_module *gm,
			   const tinyc_gpu_loaded *l, const int64_t *sym, const tinyc_devptr *dptr,
			   void *stream)
{
	for (int i = 0; i < gm->nsym; i++)
		if (!sym || sym[i] < 0)
			return tinyc_error(ctx, "UnboundSymbol", "symbol %s has no value", gm->syms[i]);
	/* the outputs and temporaries start as zeros, as in tinyc_gpu_run_cuda (strided
	 * outputs are zero where nothing is written; atomic reductions add into them) */
	for (int i = 0; i < gm->nbuf; i++) {
		const tinyc_gbuf *b = &gm->bufs[i];
		int64_t n = b->role == TINYC_GB_INPUT ? 0 : tinyc_gpu_buf_storage(b, sym);
		if (n > 0 && tinyc_cuda_memset8_async(cu, dptr[i], 0,
						       (size_t)n * (size_t)tinyc_dtype_size(b->dtype), stream) < 0)
			return -1;
	}
	for (int i = 0; i < gm->nkernel && i < l->nkernel; i++) {
		const tinyc_gkernel *k = gm->kernels[i];
		int64_t grid[3];
		for (int d = 0; d < 3; d++)
			if (tinyc_gpu_eval_int(k->grid[d], sym, &grid[d]) < 0)
				return tinyc_error(ctx, "LaunchError", "kernel %s: grid extent needs a symbol value",
						   k->name);
		if (grid[0] <= 0 || grid[1] <= 0 || grid[2] <= 0)
			continue;	/* nothing to compute */
		kargs ka = {0};
		int rc = kargs_build(ctx, cu, gm, k, sym, dptr, &ka);
		if (rc == 0) {
			tinyc_dim3 g = {(unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2]};
			tinyc_dim3 b = {(unsigned)k->block[0], (unsigned)k->block[1], (unsigned)k->block[2]};
			rc = tinyc_cuda_launch_async(cu, l->kern[i], g, b, (unsigned)k->dyn_smem, ka.args, stream);
		}
		kargs_free(&ka);	/* the driver copied the parameters at the launch */
		if (rc < 0)
			return -1;
	}
	return 0;
}
