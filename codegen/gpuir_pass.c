/* The "gpuir" pass: a planned schedule -> a GPU IR module.
 *
 * The module gets the schedule's buffers (same order, so buffer i is the schedule's buffer
 * i) and, in launch order, one kernel per schedule kernel, built by the builder of its plan
 * kind.  A new template (the contraction path) adds its builder to the table below.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/codegen.h"
#include "codegen/gpu.h"
#include "codegen/matmul.h"

/* GPU IR builders by plan kind. */
static const tinyc_gpu_builder builders[] = {
	{TINYC_PLAN_MAP, tinyc_isl_kernel_build},
	{TINYC_PLAN_ROWRED, tinyc_isl_kernel_build},
	{TINYC_PLAN_REARRANGE, tinyc_rearrange_gpuir_build},
	{TINYC_PLAN_MATMUL, tinyc_matmul_build},
	{TINYC_PLAN_ROWFUSE, tinyc_rowfuse_build},	/* row groups (codegen/rowfuse.c) */
	{TINYC_PLAN_ATTENTION, tinyc_attention_build},
	{TINYC_PLAN_CONV_DIRECT, tinyc_conv_direct_build},	/* codegen/conv_direct.c */
};

tinyc_gpu_module *tinyc_gpuir_build(tinyc_ctx *ctx, const tinyc_schedule *s,
				    const tinyc_indexbook *ib)
{
	tinyc_gpu_module *gm = tinyc_gpu_module_alloc(ctx);
	if (!gm)
		return NULL;
	if (tinyc_gpu_set_symbols(gm, s->g, s->bind) < 0)
		goto fail;
	snprintf(gm->target, sizeof(gm->target), "%s", s->dev.target);
	gm->arch_major = s->dev.arch.major;
	gm->arch_minor = s->dev.arch.minor;
	for (int i = 0; i < s->nbuf; i++) {
		const tinyc_sbuf *sb = &s->bufs[i];
		tinyc_gbuf gb = {0};
		gb.name = sb->name;
		gb.role = sb->role == TINYC_SB_INPUT ? TINYC_GB_INPUT
			  : sb->role == TINYC_SB_OUTPUT ? TINYC_GB_OUTPUT : TINYC_GB_TEMP;
		gb.index = sb->index;
		gb.node = sb->node;
		gb.dtype = sb->dtype;
		gb.rank = sb->rank;
		memcpy(gb.shape, sb->shape, sizeof(gb.shape));
		gb.has_strides = sb->has_strides;
		memcpy(gb.strides, sb->strides, sizeof(gb.strides));
		if (tinyc_gpu_add_buf(gm, &gb) < 0)
			goto fail;
	}
	for (int i = 0; i < s->nkern; i++) {
		const tinyc_plan *p = tinyc_skernel_plan(&s->kerns[i]);
		const tinyc_gpu_builder *b = NULL;
		for (size_t j = 0; p && j < sizeof(builders) / sizeof(*builders); j++)
			if (builders[j].kind == p->kind)
				b = &builders[j];
		if (!b) {
			tinyc_error(ctx, "CodegenError", "kernel %s: no GPU IR builder for plan kind %s",
				    s->kerns[i].name, p ? tinyc_plan_kind_name(p->kind) : "none");
			goto fail;
		}
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		int before = gm->nkernel;
		if (b->build(ctx, gm, s, ib, i) < 0)
			goto fail;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (gm->nkernel > before)
			gm->kernels[gm->nkernel - 1]->build_ms =
				(t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	}
	return gm;
fail:
	tinyc_gpu_module_free(gm);
	return NULL;
}

