/* The tuning cache of contractions (see driver/tune.h): the configuration `tinyc tune`
 * measured fastest for a (device, shape class, dtypes), kept in the cache directory; the
 * driver loads a device's entries into the options record (driver/options.c) and the
 * schedule pass picks them from there (sched/tuned.c).
 *
 * File <cache dir>/tune/<device>.txt (or $TINYC_TUNE_DIR/<device>.txt), one line per class,
 * replaced in place (written to a temporary file and renamed):
 *   CLASS|DTYPES|CONFIG|MICROSECONDS
 * CLASS is the shape class (tinyc_tune_class), DTYPES "A.B.acc", CONFIG the candidate's
 * key (tinyc_matmul_config_key).  A line that does not parse is ignored.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver/tune.h"
#include "runtime/runtime.h"

#define LINE_MAX_BYTES 512	/* longest line kept */

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

int tinyc_tune_load(const tinyc_device_info *dev, tinyc_tune_entry **out, int *n)
{
	*out = NULL;
	*n = 0;
	char *path = tinyc_tune_path(dev);
	FILE *f = path ? fopen(path, "r") : NULL;
	free(path);
	if (!f)
		return 0;
	char line[LINE_MAX_BYTES];
	int cap = 0, bad = 0;
	while (!bad && fgets(line, sizeof(line), f)) {
		char *fld[4];
		if (split_line(line, fld) < 0)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			tinyc_tune_entry *grown = realloc(*out, sizeof(**out) * (size_t)cap);
			if (!grown) {
				bad = 1;
				break;
			}
			*out = grown;
		}
		tinyc_tune_entry *e = &(*out)[(*n)++];
		snprintf(e->cls, sizeof(e->cls), "%s", fld[0]);
		snprintf(e->dtypes, sizeof(e->dtypes), "%s", fld[1]);
		snprintf(e->config, sizeof(e->config), "%s", fld[2]);
		e->us = strtod(fld[3], NULL);
	}
	fclose(f);
	if (bad) {
		free(*out);
		*out = NULL;
		*n = 0;
		return -1;
	}
	return 0;
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
	tinyc_tune_dtypes(prob, dts, sizeof(dts));
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
