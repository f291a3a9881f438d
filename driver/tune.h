/* The tuning cache on disk (driver/tune.c): where a device's file is, reading its entries
 * into the options record, and storing a measured best (`tinyc tune`).
 */
#ifndef TINYC_DRIVER_TUNE_H
#define TINYC_DRIVER_TUNE_H

#include "sched/matmul.h"

/* The tuning file of a device: <cache dir>/tune/<name>_<target>.txt, or in $TINYC_TUNE_DIR
 * when set (NULL: no cache dir). */
__tinyc_give char *tinyc_tune_path(const tinyc_device_info *dev);
/* Every parsable entry of dev's file into *out (malloc'ed, *n entries; none when there is
 * no file).  0, or -1 when out of memory. */
int tinyc_tune_load(const tinyc_device_info *dev, __tinyc_give tinyc_tune_entry **out, int *n);
/* Store config (measured us) as the best of prob's class on s's device (replacing the
 * previous one).  0, or -1 with a TuneError. */
int tinyc_tune_store(tinyc_ctx *ctx, const tinyc_schedule *s, const tinyc_mm_problem *prob,
		     const char *config, double us);

#endif
