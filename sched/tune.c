/* The tuning cache of contractions (see sched/matmul.h): the configuration `tinyc tune`
 * measured fastest for a (device, shape class, dtypes), kept in the cache directory and
 * chosen by later schedules of that class on that device.
 *
 * File <cache dir>/tune/<device>.txt (or $TINYC_TUNE_DIR/<device>.txt), one line per class, replaced in place (written to a
 * temporary file and renamed):
 *   CLASS|DTYPES|CONFIG|MICROSECONDS
 * CLASS is the shape class (tinyc_tune_class), DTYPES "A.B.acc", CONFIG the candidate's
 * key (tinyc_matmul_config_key).  A line that does not parse is ignored.
 *
 * Tuning applies to real devices only (a named --target never reads it) and not when the
 * environment says TINYC_TUNE=0, so that dumps of named targets stay deterministic.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sched/matmul.h"

#define LINE_MAX_BYTES 512	/* longest line kept */

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
static void dtypes_key(const tinyc_mm_problem *prob, char *buf, size_t size)
{
	snprintf(buf, size, "%s.%s.%s", tinyc_dtype_name(prob->a.dtype), tinyc_dtype_name(prob->b.dtype),
		 tinyc_dtype_name(prob->acc));
}

char *tinyc_tune_path(const tinyc_device_info *dev)
{
	const char *tdir = getenv("TINYC_TUNE_DIR");
	char *dir = tdir && *tdir ? tinyc_asprintf("%s", tdir) : NULL;
	if (!dir) {
		char *cache = tinyc_cache_dir();
		dir = cache ? tinyc_asprintf("%s/tune", cache) : NULL;
		free(cache);
	}
	if (!dir)
		return NULL;
	char name[160];
	size_t n = 0;
	for (const char *c = dev->name; *c && n + 1 < sizeof(name) - 24; c++)
		name[n++] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')
				    ? *c : '_';
	name[n] = 0;
	char *p = tinyc_asprintf("%s/%s_%s.txt", dir, name, dev->target);
	free(dir);
	return p;
}

/* Split a line "a|b|c|d" into its four fields (in place); 0 or -1. */
static int split_line(char *line, char **f)
{
	for (int i = 0; i < 4; i++) {
		f[i] = line;
		char *bar = strchr(line, i < 3 ? '|' : '\n');
		if (!bar) {
			if (i < 3)
				return -1;
		} else {
			*bar = 0;
			line = bar + 1;
		}
	}
	return 0;
}

int tinyc_tune_lookup(const tinyc_schedule *s, const tinyc_mm_problem *prob, char *config,
		      size_t size, double *us)
{
	char cls[96], dts[64];
	if (tinyc_tune_class(s, prob, cls, sizeof(cls)) < 0)
		return 0;
	dtypes_key(prob, dts, sizeof(dts));
	char *path = tinyc_tune_path(&s->dev);
	FILE *f = path ? fopen(path, "r") : NULL;
	free(path);
	if (!f)
		return 0;
	char line[LINE_MAX_BYTES];
	int found = 0;
	while (fgets(line, sizeof(line), f)) {
		char *fld[4];
		if (split_line(line, fld) < 0 || strcmp(fld[0], cls) || strcmp(fld[1], dts))
			continue;
		snprintf(config, size, "%s", fld[2]);
		*us = strtod(fld[3], NULL);
		found = 1;
	}
	fclose(f);
	return found;
}

/* mkdir -p for the tune directory of path (its parent); 0 or -1. */
static int make_parent(const char *path)
{
	char *dir = strdup(path);
	if (!dir)
		return -1;
	for (char *c = dir + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = 0;
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			free(dir);
			return -1;
		}
		*c = '/';
	}
	free(dir);
	return 0;
}

int tinyc_tune_store(tinyc_ctx *ctx, const tinyc_schedule *s, const tinyc_mm_problem *prob,
		     const char *config, double us)
{
	char cls[96], dts[64];
	if (tinyc_tune_class(s, prob, cls, sizeof(cls)) < 0)
		return tinyc_error(ctx, "TuneError", "tuning needs every size bound (--bind)");
	dtypes_key(prob, dts, sizeof(dts));
	char *path = tinyc_tune_path(&s->dev);
	if (!path)
		return tinyc_error(ctx, "TuneError", "no cache directory (TINYC_CACHE_DIR is empty and "
				   "HOME is unset)");
	char *tmp = tinyc_asprintf("%s.%ld.tmp", path, (long)getpid());
	if (!tmp || make_parent(path) < 0) {
		tinyc_error(ctx, "TuneError", "cannot create the directory of %s", path);
		free(tmp), free(path);
		return -1;
	}
	FILE *out = fopen(tmp, "w");
	if (!out) {
		tinyc_error(ctx, "TuneError", "cannot write %s: %s", tmp, strerror(errno));
		free(tmp), free(path);
		return -1;
	}
	FILE *in = fopen(path, "r");
	char line[LINE_MAX_BYTES];
	while (in && fgets(line, sizeof(line), in)) {
		char copy[LINE_MAX_BYTES], *fld[4];
		memcpy(copy, line, sizeof(copy));
		if (split_line(copy, fld) < 0 || (!strcmp(fld[0], cls) && !strcmp(fld[1], dts)))
			continue;	/* the entry replaced, or a broken line */
		fputs(line, out);
	}
	if (in)
		fclose(in);
	fprintf(out, "%s|%s|%s|%.3f\n", cls, dts, config, us);
	int bad = fclose(out) != 0 || rename(tmp, path) != 0;
	if (bad) {
		tinyc_error(ctx, "TuneError", "cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
	}
	free(tmp), free(path);
	return bad ? -1 : 0;
}

int tinyc_tune_apply(const tinyc_schedule *s, tinyc_skernel *k, int first)
{
	const char *env = getenv("TINYC_TUNE");
	if (!s->dev.is_real || (env && !strcmp(env, "0")) || first >= k->ncand)
		return 0;
	const tinyc_mm_plan *mp0 = k->cands[first].ext;
	char config[160];
	double us = 0;
	if (!mp0 || !tinyc_tune_lookup(s, &mp0->prob, config, sizeof(config), &us))
		return 0;
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
