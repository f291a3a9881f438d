/* Resolving the options record (sched/options.h) in the driver: the only place that asks
 * the CUDA driver for the device planned for, reads the tuning cache and reads the
 * environment's knobs on behalf of the passes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/options.h"
#include "driver/tune.h"
#include "runtime/runtime.h"

/* The first CUDA device's description into *dev: 1, or 0 when there is none (silently). */
static int real_device(tinyc_device_info *dev)
{
	if (!tinyc_cuda_available())
		return 0;
	tinyc_ctx *quiet = tinyc_ctx_alloc();	/* a failure here falls back, silently */
	tinyc_cuda *cu = quiet ? tinyc_cuda_open(quiet, 0) : NULL;
	if (cu)
		*dev = *tinyc_cuda_device_info(cu);
	tinyc_cuda_close(cu);
	tinyc_ctx_free(quiet);
	return cu != NULL;
}

/* An integer knob: the variable's value (atoi), or dflt when it is not set. */
static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);
	return v ? atoi(v) : dflt;
}

/* Whether the variable is set to "0". */
static int env_zero(const char *name)
{
	const char *v = getenv(name);
	return v && !strcmp(v, "0");
}

/* The knobs of o from the environment (the variables docs/architecture.md lists); a knob
 * not set keeps o's value (tinyc_sched_options_defaults). */
static void read_knobs(tinyc_sched_options *o)
{
	static const char *const variants[] = {"simt", "mma", "wgmma", "gemv", "tf32x3", "tf32wg"};
	const char *v = getenv("TINYC_MATMUL");
	for (int i = 0; v && i < 6; i++)
		if (!strcmp(v, variants[i]))
			o->matmul = variants[i];
	const char *tile = getenv("TINYC_MATMUL_TILE");
	int t[5] = {0, 0, 0, 0, 0};
	if (tile && sscanf(tile, "%dx%dx%dx%dx%d", &t[0], &t[1], &t[2], &t[3], &t[4]) >= 3 &&
	    (t[0] || t[1] || t[2] || t[3] || t[4]))
		memcpy(o->tile, t, sizeof(t));
	o->wgmma_n = env_int("TINYC_WGMMA_N", 0);
	o->wgmma_raster = env_int("TINYC_WGMMA_RASTER", 0);
	o->wgmma_pp = env_int("TINYC_WGMMA_PP", o->wgmma_pp);
	o->wgmma_pack = env_int("TINYC_WGMMA_PACK", o->wgmma_pack);
	o->wgmma_cluster = env_int("TINYC_WGMMA_CLUSTER", o->wgmma_cluster);
	o->wgmma_fit = env_int("TINYC_WGMMA_FIT", o->wgmma_fit);
	const char *sk = getenv("TINYC_WGMMA_STREAMK");
	int skv[2] = {0, 0};
	if (sk && sscanf(sk, "%dx%d", &skv[0], &skv[1]) >= 1 && skv[0] >= 1 && skv[0] <= 64 &&
	    skv[1] >= 0 && (skv[0] >= 2 || skv[1] == 0))
		o->wgmma_streamk = skv[0], o->wgmma_streamk_grid = skv[1];
	o->gemv_mma = env_int("TINYC_GEMV_MMA", 0);
	if (o->gemv_mma < 0 || o->gemv_mma > 2)
		o->gemv_mma = 0;
	int dflt = o->wgmma_swap;
	o->wgmma_swap = env_int("TINYC_WGMMA_SWAP", dflt);
	if (o->wgmma_swap < 0 || o->wgmma_swap > 2)
		o->wgmma_swap = dflt;
	o->no_stage = getenv("TINYC_NO_STAGE") != NULL;
	o->no_pair = getenv("TINYC_NO_PAIR") != NULL;
	o->pdl = env_int("TINYC_PDL", o->pdl);
	if (o->pdl < -1 || o->pdl > 1)
		o->pdl = -1;
	o->wait_hint = env_int("TINYC_WAIT_HINT", 0);
	if (o->wait_hint < 0 || o->wait_hint > 1000000000)
		o->wait_hint = 0;
	o->epi_preload = env_int("TINYC_EPI_PRELOAD", o->epi_preload);
	if (o->epi_preload < -1 || o->epi_preload > 1)
		o->epi_preload = -1;
	o->tma_store = env_int("TINYC_TMA_STORE", o->tma_store);
	if (o->tma_store < -1 || o->tma_store > 1)
		o->tma_store = -1;
	o->splitk_sum = env_int("TINYC_SPLITK_SUM", 0);
	o->no_rowfuse = env_zero("TINYC_ROWFUSE");
	o->rowfuse_threads = env_int("TINYC_ROWFUSE_THREADS", 0);
	o->no_attention = env_zero("TINYC_ATTENTION");
	const char *av = getenv("TINYC_ATTENTION");
	o->attn_simt = av && !strcmp(av, "simt");
	const char *at = getenv("TINYC_ATTN_TILE");
	int a[5] = {0, 0, 2, 0, 0};
	if (at && sscanf(at, "%dx%dx%dx%dx%d", &a[0], &a[1], &a[2], &a[3], &a[4]) >= 2 && a[2] >= 0 &&
	    a[2] <= 8 && a[3] >= 0 && a[3] <= 2 && a[4] >= 0 && a[4] <= 3)
		memcpy(o->attn_tile, a, sizeof(a));
	o->attn_softmax = env_int("TINYC_ATTN_SOFTMAX", o->attn_softmax);
	dflt = o->attn_wgmma;
	o->attn_wgmma = env_int("TINYC_ATTN_WGMMA", dflt);
	if (o->attn_wgmma < -1 || o->attn_wgmma > 3)	/* not a documented value: the model's */
		o->attn_wgmma = dflt;
	o->tune_off = env_zero("TINYC_TUNE");
}

int tinyc_options_resolve(tinyc_ctx *ctx, const char *target, tinyc_sched_options *o,
			  tinyc_tune_entry **tune)
{
	*tune = NULL;
	tinyc_device_info dev;
	if (target || !real_device(&dev)) {
		if (tinyc_sched_options_for_target(ctx, target, o) < 0)
			return -1;
		read_knobs(o);
		return 0;	/* a named target never reads the tuning cache */
	}
	tinyc_sched_options_defaults(o);
	o->dev = dev;
	o->dev_origin = "driver";
	read_knobs(o);
	if (o->tune_off)
		return 0;
	if (tinyc_tune_load(&o->dev, tune, &o->ntune) < 0)
		return tinyc_error(ctx, "OutOfMemory", "cannot read the tuning cache");
	o->tune = *tune;
	return 0;
}
