/* The compile options record: everything besides the graph and its bindings that decides
 * the schedule and the code.  The driver resolves it once per compilation
 * (driver/options.c: the device's properties or the --target's, the tuning cache entries
 * of that device, the knobs it reads from the environment) and hands it to the schedule
 * pass; the schedule keeps a copy (tinyc_schedule.opt) that the code generators read.  The
 * passes read no environment and open no device themselves, so the same graph and record
 * always give the same CUDA.
 */
#ifndef TINYC_SCHED_OPTIONS_H
#define TINYC_SCHED_OPTIONS_H

#include "ir/target.h"

/* One tuning cache entry: the configuration `tinyc tune` measured fastest for a shape
 * class and dtypes on the record's device (driver/tune.c reads and writes the file). */
typedef struct tinyc_tune_entry {
	char cls[96];		/* shape class (tinyc_tune_class) */
	char dtypes[64];	/* "half.half.float" (tinyc_tune_dtypes) */
	char config[160];	/* the candidate's key (tinyc_matmul_config_key) */
	double us;		/* its measured time, microseconds */
} tinyc_tune_entry;

/* The record. */
typedef struct tinyc_sched_options {
	tinyc_device_info dev;		/* the device planned for */
	const char *dev_origin;		/* "--target", "driver", or "default target (...)" */
	const tinyc_tune_entry *tune;	/* tuning entries of dev (kept; NULL: none) */
	int ntune;			/* entries in tune */
} tinyc_sched_options;

/* The record of a named target (NULL: the default, sm_80), no tuning: what the driver
 * resolves when no GPU is asked.  0, or -1 with an UnknownTarget diagnostic. */
int tinyc_sched_options_for_target(tinyc_ctx *ctx, const char *target, tinyc_sched_options *o);

#endif
