/* Resolving the options record (sched/options.h) in the driver: the only place that asks
 * the CUDA driver for the device planned for, reads the tuning cache and reads the
 * environment's knobs on behalf of the passes. */
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

int tinyc_options_resolve(tinyc_ctx *ctx, const char *target, tinyc_sched_options *o,
			  tinyc_tune_entry **tune)
{
	*tune = NULL;
	tinyc_device_info dev;
	if (target || !real_device(&dev))
		return tinyc_sched_options_for_target(ctx, target, o);
	memset(o, 0, sizeof(*o));
	o->dev = dev;
	o->dev_origin = "driver";
	const char *env = getenv("TINYC_TUNE");	/* 0: ignore the tuning cache */
	if (env && !strcmp(env, "0"))
		return 0;
	if (tinyc_tune_load(&o->dev, tune, &o->ntune) < 0)
		return tinyc_error(ctx, "OutOfMemory", "cannot read the tuning cache");
	o->tune = *tune;
	return 0;
}
