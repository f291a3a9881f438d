/* Tuned configurations in planning (see sched/matmul.h): the shape class of a contraction
 * and, among its candidates, the one the options record's tuning entries name.  The
 * entries come from the tuning cache file the driver reads (driver/tune.c); here nothing
 * touches the disk or the environment.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sched/matmul.h"

/* One dim's class: round(log2(v)) and its alignment (a: multiple of 128, e: of 8, u: other). */
static void dim_class(int64_t v, char *buf, size_t size)
{
	int lg = v > 0 ? (int)lround(log2((double)v)) : 0;
	snprintf(buf, size, "%d%c", lg, v % 128 == 0 ? 'a' : v % 8 == 0 ? 'e' : 'u');
}

int tinyc_tune_class(const tinyc_schedule *s, const tinyc_mm_problem *prob, char *buf,
		     size_t size)
{
	const tinyc_dim *d[4] = {&prob->m, &prob->n, &prob->k, &prob->l};
	char part[4][24];
	for (int i = 0; i < 4; i++) {
		int64_t v = tinyc_sched_dim(s, d[i]);
		if (v < 1)
			return -1;	/* an unbound size: no class */
		dim_class(v, part[i], sizeof(part[i]));
	}
	int ak = tinyc_evt_poly_is_const(&prob->a.stride[1], 1);
	int bk = tinyc_evt_poly_is_const(&prob->b.stride[0], 1);
	snprintf(buf, size, "M%s.N%s.K%s.L%s.%c%c", part[0], part[1], part[2], part[3], ak ? 'k' : 'm',
		 bk ? 'k' : 'n');
	return 0;
}

/* "half.half.float" */
void tinyc_tune_dtypes(const tinyc_mm_problem *prob, char *buf, size_t size)
{
	snprintf(buf, size, "%s.%s.%s", tinyc_dtype_name(prob->a.dtype), tinyc_dtype_name(prob->b.dtype),
		 tinyc_dtype_name(prob->acc));
}

const tinyc_tune_entry *tinyc_tune_find(const tinyc_schedule *s, const tinyc_mm_problem *prob)
{
	char cls[96], dts[64];
	if (tinyc_tune_class(s, prob, cls, sizeof(cls)) < 0)
		return NULL;
	tinyc_tune_dtypes(prob, dts, sizeof(dts));
	const tinyc_tune_entry *found = NULL;
	for (int i = 0; i < s->opt.ntune; i++)	/* the last entry of a class wins */
		if (!strcmp(s->opt.tune[i].cls, cls) && !strcmp(s->opt.tune[i].dtypes, dts))
			found = &s->opt.tune[i];
	return found;
}

int tinyc_tune_apply(const tinyc_schedule *s, tinyc_skernel *k, int first)
{
	if (!s->opt.ntune || first >= k->ncand)
		return 0;
	const tinyc_mm_plan *mp0 = k->cands[first].ext;
	const tinyc_tune_entry *e = mp0 ? tinyc_tune_find(s, &mp0->prob) : NULL;
	if (!e)
		return 0;
	const char *config = e->config;
	double us = e->us;
	double best = -1;
	for (int c = 0; c < k->ncand; c++)
		if (best < 0 || k->cands[c].est_us < best)
			best = k->cands[c].est_us;
	for (int c = first; c < k->ncand; c++) {
		tinyc_mm_plan *mp = k->cands[c].ext;
		char key[160];
		if (!mp || k->cands[c].kind != TINYC_PLAN_MATMUL)
			continue;
		tinyc_matmul_config_key(&mp->t, key, sizeof(key));
		if (strcmp(key, config))
			continue;
		mp->tuned_us = us > 0 ? us : 1e-3;
		/* the measurement outranks every estimate */
		k->cands[c].est_us = best * 0.999 < mp->tuned_us ? best * 0.999 : mp->tuned_us;
		size_t n = strlen(k->cands[c].desc);
		if (n + 9 < sizeof(k->cands[c].desc))
			memcpy(k->cands[c].desc + n, " (tuned)", 9);
		return 0;
	}
	return 0;
}
