/* Reading the htree golden vectors (shared/htree-golden: manifest.json and .npy files) in
 * the Criterion tests of the CPU reference (tests/unit/test_htree.c) and of the GPU path
 * (tests/unit/test_htree_gpu.c).  TINYC_GOLDEN_DIR names the folder.  Header-only: each
 * test program is one translation unit.  Failures fail the calling test. */
#ifndef TINYC_TESTS_HTREE_GOLDEN_H
#define TINYC_TESTS_HTREE_GOLDEN_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/tensor.h"

#ifndef TINYC_GOLDEN_DIR
#error "TINYC_GOLDEN_DIR must name the htree golden directory"
#endif

/* Read a whole text file into a new string; fails the test when it cannot. */
static inline char *golden_slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	cr_assert(s && fread(s, 1, (size_t)n, f) == (size_t)n);
	s[n] = 0;
	fclose(f);
	return s;
}

/* The manifest text of one case: from its "name" to the next case's (a new string). */
static inline char *golden_case_text(const char *name)
{
	char *text = golden_slurp(TINYC_GOLDEN_DIR "/manifest.json");
	char pat[256];
	snprintf(pat, sizeof pat, "\"name\": \"%s\"", name);
	char *start = strstr(text, pat);
	cr_assert_not_null(start, "case %s is not in %s/manifest.json", name, TINYC_GOLDEN_DIR);
	char *end = strstr(start + 1, "\"name\": \"");
	size_t len = end ? (size_t)(end - start) : strlen(start);
	char *c = malloc(len + 1);
	memcpy(c, start, len);
	c[len] = 0;
	free(text);
	return c;
}

/* The number after "key": in the case text (fails when missing). */
static inline double golden_num(const char *text, const char *key)
{
	char pat[128];
	snprintf(pat, sizeof pat, "\"%s\":", key);
	const char *p = strstr(text, pat);
	cr_assert_not_null(p, "manifest: no %s", key);
	return strtod(p + strlen(pat), NULL);
}

/* The string after "key": in the case text, copied into buf; 0 when missing. */
static inline int golden_str(const char *text, const char *key, char *buf, size_t size)
{
	char pat[128];
	snprintf(pat, sizeof pat, "\"%s\": \"", key);
	const char *p = strstr(text, pat);
	if (!p)
		return 0;
	p += strlen(pat);
	const char *e = strchr(p, '"');
	cr_assert(e && (size_t)(e - p) < size);
	memcpy(buf, p, (size_t)(e - p));
	buf[e - p] = 0;
	return 1;
}

/* Load the golden .npy the case's files entry `key` names (NULL when optional and absent). */
static inline tinyc_tensor *golden_file(tinyc_ctx *ctx, const char *text, const char *key,
					int required)
{
	char file[256], path[1024];
	if (!golden_str(text, key, file, sizeof file)) {
		cr_assert(!required, "manifest: case has no file %s", key);
		return NULL;
	}
	snprintf(path, sizeof path, "%s/%s", TINYC_GOLDEN_DIR, file);
	tinyc_tensor *t = tinyc_npy_read(ctx, path);
	if (!t)
		tinyc_ctx_print_diags(ctx, stderr);
	cr_assert_not_null(t, "cannot read %s", path);
	return t;
}

#endif
