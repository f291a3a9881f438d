/* The compiled-module cache (driver/gpu_cache.c): a stored module reads back as the
 * launch description the pipeline built (buffers, grids, blocks, shared memory, every
 * parameter and tensor map evaluated under the bound sizes), with its images and plans;
 * the key separates what must not share an entry; a damaged entry is a miss.  No GPU
 * needed: the description is compared with the GPU IR the pipeline built. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/gpu.h"
#include "ir/ctx.h"
#include "driver/module.h"
#include "lower/lower.h"
#include "runtime/runtime.h"
#include "sched/schedule.h"

#include "../common/graph_harness.h"
#include "driver/run.h"

#define BIAS_RELU TINYC_SOURCE_DIR "/examples/matmul_bias_relu.uop"

/* A fresh cache directory for this test process. */
static char *use_tmp_cache(void)
{
	char *dir = strdup("/tmp/tinyc-modcache-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	setenv("TINYC_CACHE_DIR", dir, 1);
	return dir;
}

static void rm_cache(char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
	free(dir);
}

/* A device as the key sees it. */
static tinyc_device_info fake_device(const char *name)
{
	tinyc_device_info d;
	memset(&d, 0, sizeof(d));
	snprintf(d.name, sizeof(d.name), "%s", name);
	snprintf(d.target, sizeof(d.target), "sm_90");
	d.sm_count = 132;
	d.driver_version = 13000;
	return d;
}

/* The value of a module-level expression under sym. */
static int64_t ev(const tinyc_gexpr *e, const int64_t *sym)
{
	int64_t v = -1;
	cr_assert_eq(tinyc_gpu_eval_int(e, sym, &v), 0);
	return v;
}

/* The packed Hopper plan at odd sizes (a packing kernel and the matmul, tensor maps) and a
 * two-kernel softmax read back exactly. */
Test(modcache, store_load_roundtrip)
{
	char *dir = use_tmp_cache();
	const char *cases[][3] = {
		{BIAS_RELU, "M=130,N=77,K=75", "sm_90a"},
		{BIAS_RELU, "M=256,N=128,K=64", "sm_80"},
		{TINYC_SOURCE_DIR "/examples/softmax.uop", "N=33,C=100", "sm_90"},
	};
	tinyc_device_info dev = fake_device("test device");
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		tinyc_ctx *ctx = tinyc_ctx_alloc();
		compiled cp;
		cr_assert_eq(compile(ctx, cases[c][0], cases[c][1], cases[c][2], &cp), 0, "%s",
			     tinyc_ctx_diag_count(ctx) ? tinyc_ctx_diag(ctx, 0)->msg : "");
		const tinyc_gpu_module *gm = cp.gm;
		int64_t *sym = cp.b->val;
		int nk = gm->nkernel;
		tinyc_blob *img = calloc((size_t)nk, sizeof(*img));
		const char **plans = calloc((size_t)nk, sizeof(*plans));
		for (int i = 0; i < nk; i++) {	/* distinct bytes, NULs included */
			img[i].size = 1000 + 37 * (size_t)i;
			img[i].data = malloc(img[i].size);
			for (size_t b = 0; b < img[i].size; b++)
				img[i].data[b] = (unsigned char)(b * 7 + (size_t)i);
			img[i].is_cubin = 1;
			plans[i] = i % 2 ? NULL : "a plan, with spaces [1,2,3]";
		}
		if (c == 0)	/* the Hopper matmul as a pdl kernel: its "pdl" line read back */
			gm->kernels[nk - 1]->pdl = 1;
		unsigned char key[32];
		tinyc_gpu_cache_key("graph text", cases[c][1], cases[c][2], &dev, key);
		tinyc_gpu_cached got;
		cr_expect_eq(tinyc_gpu_cache_load(ctx, key, cp.g, cp.b, &got), 0, "hit before store");
		cr_assert_eq(tinyc_gpu_cache_store(key, gm, sym, img, plans), 0);
		cr_assert_eq(tinyc_gpu_cache_load(ctx, key, cp.g, cp.b, &got), 1, "%s: no hit", cases[c][1]);
		const tinyc_gpu_module *lm = got.gm;
		cr_assert_eq(lm->nkernel, nk);
		cr_assert_eq(got.nkernel, nk);
		cr_expect_str_eq(lm->target, gm->target);
		cr_assert_eq(lm->nbuf, gm->nbuf);
		for (int i = 0; i < gm->nbuf; i++) {
			const tinyc_gbuf *a = &gm->bufs[i], *b = &lm->bufs[i];
			cr_expect_str_eq(b->name, a->name);
			cr_expect(a->role == b->role && a->index == b->index && a->dtype == b->dtype &&
				  a->rank == b->rank && a->has_strides == b->has_strides, "buffer %d", i);
			for (int d = 0; d < a->rank; d++)
				cr_expect_eq(b->shape[d].val, a->shape[d].sym < 0 ? a->shape[d].val
										 : sym[a->shape[d].sym]);
		}
		for (int i = 0; i < nk; i++) {
			const tinyc_gkernel *a = gm->kernels[i], *b = lm->kernels[i];
			cr_expect_str_eq(b->name, a->name);
			for (int d = 0; d < 3; d++) {
				cr_expect_eq(ev(b->grid[d], sym), ev(a->grid[d], sym), "%s grid %d", a->name, d);
				cr_expect_eq(b->block[d], a->block[d]);
			}
			cr_expect_eq(b->dyn_smem, a->dyn_smem);
			cr_expect_eq(b->pdl, a->pdl, "%s pdl", a->name);
			cr_assert_eq(b->nparam, a->nparam);
			for (int p = 0; p < a->nparam; p++) {
				const tinyc_gvar *x = &a->vars[a->params[p]], *y = &b->vars[b->params[p]];
				cr_expect_str_eq(y->name, x->name);
				cr_expect(x->kind == y->kind && x->dtype == y->dtype, "%s param %d", a->name, p);
				if (x->kind == TINYC_GV_PARAM_PTR)
					cr_expect(x->buf == y->buf && x->is_const == y->is_const);
				if (x->kind == TINYC_GV_PARAM_INT)
					cr_expect_eq(x->sym, y->sym);
				if (x->kind != TINYC_GV_PARAM_TMAP)
					continue;
				const tinyc_gtmap *s = x->tmap, *t = y->tmap;
				cr_assert(s && t);
				cr_expect(s->buf == t->buf && s->dtype == t->dtype && s->rank == t->rank &&
					  s->swizzle == t->swizzle);
				cr_expect_eq(ev(t->offset, sym), ev(s->offset, sym));
				for (int d = 0; d < s->rank; d++) {
					cr_expect_eq(ev(t->dim[d], sym), ev(s->dim[d], sym));
					cr_expect_eq(ev(t->stride[d], sym), ev(s->stride[d], sym));
					cr_expect_eq(t->box[d], s->box[d]);
				}
			}
			cr_assert_eq(got.images[i].size, img[i].size);
			cr_expect(!memcmp(got.images[i].data, img[i].data, img[i].size), "image %d", i);
			if (plans[i])
				cr_expect_str_eq(got.plans[i], plans[i]);
			else
				cr_expect_null(got.plans[i]);
		}
		tinyc_gpu_cached_clear(&got);
		for (int i = 0; i < nk; i++)
			free(img[i].data);
		free(img);
		free(plans);
		compiled_free(&cp);
		tinyc_ctx_free(ctx);
	}
	rm_cache(dir);
}

/* Every input of the key separates entries; equal inputs give equal keys. */
Test(modcache, key_inputs)
{
	tinyc_device_info d1 = fake_device("one"), d2 = fake_device("two");
	unsigned char k[8][32];
	unsetenv("TINYC_MATMUL");
	tinyc_gpu_cache_key("g", "M=1", "sm_90", &d1, k[0]);
	tinyc_gpu_cache_key("g", "M=1", "sm_90", &d1, k[1]);
	tinyc_gpu_cache_key("h", "M=1", "sm_90", &d1, k[2]);
	tinyc_gpu_cache_key("g", "M=2", "sm_90", &d1, k[3]);
	tinyc_gpu_cache_key("g", "M=1", "sm_90a", &d1, k[4]);
	tinyc_gpu_cache_key("g", "M=1", "sm_90", &d2, k[5]);
	setenv("TINYC_MATMUL", "mma", 1);
	tinyc_gpu_cache_key("g", "M=1", "sm_90", &d1, k[6]);
	unsetenv("TINYC_MATMUL");
	setenv("TINYC_JIT_THREADS", "3", 1);	/* not a compilation setting */
	tinyc_gpu_cache_key("g", "M=1", "sm_90", &d1, k[7]);
	unsetenv("TINYC_JIT_THREADS");
	cr_expect(!memcmp(k[0], k[1], 32));
	cr_expect(!memcmp(k[0], k[7], 32), "TINYC_JIT_THREADS changed the key");
	for (int i = 2; i < 7; i++)
		cr_expect(memcmp(k[0], k[i], 32), "key input %d made no difference", i);
}

/* A damaged entry (one byte flipped, or cut short) is a miss, not an error. */
Test(modcache, damaged_entry_is_a_miss)
{
	char *dir = use_tmp_cache();
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	compiled cp;
	cr_assert_eq(compile(ctx, BIAS_RELU, "M=64,N=64,K=64", "sm_80", &cp), 0);
	tinyc_device_info dev = fake_device("x");
	unsigned char key[32];
	tinyc_gpu_cache_key("t", "M=64,N=64,K=64", "sm_80", &dev, key);
	tinyc_blob img = {.data = (unsigned char *)"image", .size = 5, .is_cubin = 1};
	cr_assert_eq(tinyc_gpu_cache_store(key, cp.gm, cp.b->val, &img, NULL), 0);
	char hex[65], path[512];
	tinyc_hex(key, 32, hex);
	snprintf(path, sizeof(path), "%s/%s.module", dir, hex);
	FILE *f = fopen(path, "r+b");
	cr_assert_not_null(f);
	fseek(f, 120, SEEK_SET);
	int ch = fgetc(f);
	fseek(f, 120, SEEK_SET);
	fputc(ch ^ 1, f);
	fclose(f);
	tinyc_gpu_cached got;
	cr_expect_eq(tinyc_gpu_cache_load(ctx, key, cp.g, cp.b, &got), 0);
	cr_expect_eq(tinyc_ctx_diag_count(ctx), 0);
	cr_assert_eq(truncate(path, 100), 0);
	cr_expect_eq(tinyc_gpu_cache_load(ctx, key, cp.g, cp.b, &got), 0);
	cr_expect_eq(tinyc_ctx_diag_count(ctx), 0);
	compiled_free(&cp);
	tinyc_ctx_free(ctx);
	rm_cache(dir);
}
