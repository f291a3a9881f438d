/* The rearrange descriptor API (seed §3): create() validates and plans, calculate() picks
 * the plan for the pointers' real alignment, generates, compiles (through the kernel
 * cache), loads and launches its kernel, destroy() frees it all. */
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "driver/rearrange_desc.h"

#define ALIGN_BUCKETS 6		/* plans for base alignment 1, 2, 4, 8, 16, >= 32 bytes */
#define KERNEL_NAME "tinyc_rearrange"

struct tinyc_rearrange_desc {
	tinyc_ctx *ctx;				/* diagnostics (kept, may be NULL) */
	tinyc_dtype dtype;			/* element type */
	int ndim;				/* rank */
	int64_t shape[TINYC_REARRANGE_MAX_NDIM];	/* lengths */
	int64_t ys[TINYC_REARRANGE_MAX_NDIM];	/* destination strides, elements */
	int64_t xs[TINYC_REARRANGE_MAX_NDIM];	/* source strides, elements */
	tinyc_rearrange_plan plan;		/* the plan for 256-byte aligned pointers */
	int have[ALIGN_BUCKETS];		/* bucket k planned */
	tinyc_rearrange_plan by_align[ALIGN_BUCKETS];	/* plan for pointers aligned to 2^k */
	tinyc_cuda *cu;				/* the device the kernels were loaded on (kept) */
	tinyc_kernel *kernel[ALIGN_BUCKETS];	/* loaded kernel per bucket (owned) */
};


/* Copy t's strides into st, row-major when t has none. */
static void strides_of(const tinyc_tensor_desc *t, int64_t *st)
{
	int64_t s = 1;
	for (int i = t->ndim - 1; i >= 0; i--) {
		st[i] = t->strides ? t->strides[i] : s;
		s *= t->shape[i] > 1 ? t->shape[i] : 1;
	}
}

/* Bucket of an alignment: k with 2^k = the power of two in align, at most 5 (32 bytes). */
static int bucket_of(uint64_t align)
{
	int k = 0;
	while (k < ALIGN_BUCKETS - 1 && !(align & ((uint64_t)1 << k)))
		k++;
	return k;
}

/* Seed create(): validate and plan for cudaMalloc-aligned pointers. */
tinyc_rearrange_status tinyc_rearrange_create(tinyc_ctx *ctx, tinyc_rearrange_desc **desc,
					      const tinyc_tensor_desc *y,
					      const tinyc_tensor_desc *x)
{
	if (!desc)
		return tinyc_rearrange_fail(ctx, TINYC_REARRANGE_BAD_PARAM, "RearrangeBadParam", "desc is NULL");
	*desc = NULL;
	tinyc_rearrange_plan plan;
	tinyc_rearrange_status st = tinyc_rearrange_plan_build(ctx, y, x, NULL, &plan);
	if (st)
		return st;
	tinyc_rearrange_desc *d = calloc(1, sizeof(*d));
	if (!d)
		return tinyc_rearrange_fail(ctx, TINYC_REARRANGE_OUT_OF_MEMORY, "OutOfMemory",
			    "cannot allocate a rearrange descriptor");
	d->ctx = ctx;
	d->dtype = y->dtype;
	d->ndim = y->ndim;
	if (y->ndim)
		memcpy(d->shape, y->shape, sizeof(int64_t) * (size_t)y->ndim);
	strides_of(y, d->ys);
	strides_of(x, d->xs);
	d->plan = plan;
	d->have[ALIGN_BUCKETS - 1] = 1;
	d->by_align[ALIGN_BUCKETS - 1] = plan;
	*desc = d;
	return TINYC_REARRANGE_SUCCESS;
}

/* The default plan. */
const tinyc_rearrange_plan *tinyc_rearrange_desc_plan(const tinyc_rearrange_desc *d)
{
	return d ? &d->plan : NULL;
}

/* The plan for base pointers aligned to base_align, planned on first use. */
const tinyc_rearrange_plan *tinyc_rearrange_desc_plan_for(tinyc_rearrange_desc *d,
							   int base_align)
{
	if (!d || base_align < 1)
		return NULL;
	int k = bucket_of((uint64_t)base_align);
	if (!d->have[k]) {
		tinyc_tensor_desc y = {d->dtype, d->ndim, d->shape, d->ys};
		tinyc_tensor_desc x = {d->dtype, d->ndim, d->shape, d->xs};
		tinyc_rearrange_opts o;
		tinyc_rearrange_opts_default(&o);
		o.base_align = 1 << k;
		if (tinyc_rearrange_plan_build(d->ctx, &y, &x, &o, &d->by_align[k]))
			return NULL;
		d->have[k] = 1;
	}
	return &d->by_align[k];
}

/* Generate, compile (through the cache) and load the kernel of bucket k. */
static tinyc_rearrange_status load_kernel(tinyc_rearrange_desc *d, int k, tinyc_cuda *cu)
{
	tinyc_buf text = {0};
	if (tinyc_rearrange_emit_cuda(d->ctx, &d->by_align[k], KERNEL_NAME, &text)) {
		tinyc_buf_free(&text);
		return TINYC_REARRANGE_BAD_PARAM;
	}
	const tinyc_device_info *info = tinyc_cuda_device_info(cu);
	tinyc_compile_opts opts = {0};
	opts.driver_version = info->driver_version;
	tinyc_compile_result res;
	int rc = tinyc_kernel_compile_cached(d->ctx, text.data, "rearrange.cu", info->target,
					     &opts, &res);
	tinyc_buf_free(&text);
	if (rc) {
		tinyc_compile_result_clear(&res);
		return TINYC_REARRANGE_DEVICE_ERROR;
	}
	d->kernel[k] = tinyc_cuda_kernel_load(cu, &res.blob, KERNEL_NAME);
	tinyc_compile_result_clear(&res);
	return d->kernel[k] ? TINYC_REARRANGE_SUCCESS : TINYC_REARRANGE_DEVICE_ERROR;
}

/* Seed calculate(): launch the plan for the addresses' alignment. */
tinyc_rearrange_status tinyc_rearrange_calculate(tinyc_rearrange_desc *d, tinyc_devptr y,
						 tinyc_devptr x, tinyc_cuda *cu)
{
	if (!d || !cu)
		return tinyc_rearrange_fail(d ? d->ctx : NULL, TINYC_REARRANGE_BAD_PARAM, "RearrangeBadParam",
			    "calculate: %s is NULL", d ? "the device" : "the descriptor");
	if (d->plan.kind == TINYC_REARRANGE_EMPTY)
		return TINYC_REARRANGE_SUCCESS;
	if (!y || !x)
		return tinyc_rearrange_fail(d->ctx, TINYC_REARRANGE_BAD_PARAM, "RearrangeBadParam",
			    "calculate: the %s address is 0", y ? "source" : "destination");
	if (d->cu && d->cu != cu)
		return tinyc_rearrange_fail(d->ctx, TINYC_REARRANGE_BAD_PARAM, "RearrangeBadParam",
			    "calculate: this descriptor's kernels were loaded on another device "
			    "context");
	int k = bucket_of(x | y);
	const tinyc_rearrange_plan *p = tinyc_rearrange_desc_plan_for(d, 1 << k);
	if (!p)
		return TINYC_REARRANGE_BAD_PARAM;
	if (p->kind == TINYC_REARRANGE_COPY) {
		if (tinyc_cuda_copy(cu, y + (uint64_t)p->copy_offset, x + (uint64_t)p->copy_offset,
				    (size_t)p->copy_bytes))
			return TINYC_REARRANGE_DEVICE_ERROR;
		return TINYC_REARRANGE_SUCCESS;
	}
	d->cu = cu;
	if (!d->kernel[k]) {
		tinyc_rearrange_status st = load_kernel(d, k, cu);
		if (st)
			return st;
	}
	unsigned g[3], b[3];
	tinyc_rearrange_launch_dims(p, g, b);
	void *args[] = {&y, &x};
	if (tinyc_cuda_launch(cu, d->kernel[k], (tinyc_dim3){g[0], g[1], g[2]},
			      (tinyc_dim3){b[0], b[1], b[2]}, 0, args))
		return TINYC_REARRANGE_DEVICE_ERROR;
	return TINYC_REARRANGE_SUCCESS;
}

/* Free a descriptor and its kernels. */
void tinyc_rearrange_destroy(tinyc_rearrange_desc *d)
{
	if (!d)
		return;
	for (int k = 0; k < ALIGN_BUCKETS; k++)
		tinyc_kernel_free(d->kernel[k]);
	free(d);
}
