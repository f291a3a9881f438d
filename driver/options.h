/* The driver's side of the options record (sched/options.h): resolving it once per
 * compilation from the --target, the device and the tuning cache (driver/options.c).
 */
#ifndef TINYC_DRIVER_OPTIONS_H
#define TINYC_DRIVER_OPTIONS_H

#include "sched/options.h"

/* Fill *o for target (a named target), or when target is NULL the first CUDA device if one
 * is present (its tuning cache entries too, unless TINYC_TUNE=0), else the default target
 * (sm_80).  *tune receives the entries o->tune points to (free() them after o's last use;
 * NULL when none).  0, or -1 with a diagnostic (UnknownTarget, OutOfMemory). */
int tinyc_options_resolve(tinyc_ctx *ctx, const char *target, tinyc_sched_options *o,
			  __tinyc_give tinyc_tune_entry **tune);

#endif
