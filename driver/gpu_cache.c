/* The compiled-module cache: a compilation whose every size is bound is stored, after its
 * first run, as a launch description (buffers, kernels with their grids, blocks, shared
 * memory and parameters, evaluated under the bound sizes) with each kernel's CUBIN and
 * plan line, in the kernel cache directory under a key of everything the compilation
 * depends on.  A repeated compilation parses the graph, finds the entry and launches from
 * it: none of tinyc's passes, no CUDA text, no nvrtc.
 *
 * Entry text (then the CUBINs, back to back):
 *   tinyc-module 2
 *   target TARGET MAJOR MINOR
 *   buf ROLE INDEX NODE DTYPE RANK HAS_STRIDES SHAPE... STRIDES... NAME
 *   kernel G0 G1 G2 B0 B1 B2 SMEM NPARAM IMAGE_BYTES NAME
 *   plan TEXT                                      (or "plan -")
 *   pdl                                            (only for a pdl kernel)
 *   ptr DTYPE IS_CONST BUF NAME | int DTYPE SYM NAME
 *   tmap BUF DTYPE RANK SWIZZLE OFFSET (DIM STRIDE BOX)... NAME
 *   end
 */
#define _GNU_SOURCE	/* dladdr */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "driver/run.h"
#include "driver/tune.h"

extern char **environ;

#define ENTRY_EXT "module"
#define FORMAT_NAME "tinyc-module 2"	/* 2: with the kernels' pdl lines */
#define FORMAT_LINE FORMAT_NAME "\n"

static void key_bytes(tinyc_sha256_ctx *s, const void *p, size_t n)
{
	uint64_t len = n;
	tinyc_sha256_update(s, &len, sizeof(len));	/* length-prefixed: no ambiguity */
	tinyc_sha256_update(s, p, n);
}

static void key_text(tinyc_sha256_ctx *s, const char *t)
{
	key_bytes(s, t ? t : "", t ? strlen(t) : 0);
}

/* strcmp for qsort over char *. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The TINYC_* settings that steer compilation (every one but the cache's and the thread
 * count's), sorted, into the key. */
static void key_env(tinyc_sha256_ctx *s)
{
	int n = 0;
	for (char **e = environ; e && *e; e++)
		n += !strncmp(*e, "TINYC_", 6);
	char **v = calloc((size_t)n + 1, sizeof(*v));
	if (!v) {
		key_text(s, "env: out of memory");	/* a key no other run gives */
		return;
	}
	n = 0;
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "TINYC_", 6) && strncmp(*e, "TINYC_CACHE_DIR=", 16) &&
		    strncmp(*e, "TINYC_JIT_THREADS=", 18))
			v[n++] = *e;
	qsort(v, (size_t)n, sizeof(*v), cmp_str);
	for (int i = 0; i < n; i++)
		key_text(s, v[i]);
	free(v);
}

/* The compiler's own identity: the file this code was loaded from (size, time, inode), so
 * that a rebuilt tinyc never reads another build's entries. */
static void key_self(tinyc_sha256_ctx *s)
{
	Dl_info info;
	struct stat st;
	const char *file = dladdr((void *)key_self, &info) && info.dli_fname && *info.dli_fname
			   ? info.dli_fname : "/proc/self/exe";
	if (stat(file, &st) == 0) {
		int64_t id[5] = {(int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec,
				 (int64_t)st.st_mtim.tv_nsec, (int64_t)st.st_ino, (int64_t)st.st_dev};
		key_bytes(s, id, sizeof(id));
	} else {
		key_text(s, "self: unknown");
	}
}

void tinyc_gpu_cache_key(const char *graph_text, const char *bind, const char *target,
			 const tinyc_device_info *dev, unsigned char key[32])
{
	tinyc_sha256_ctx s;
	tinyc_sha256_init(&s);
	key_text(&s, FORMAT_LINE);
	key_self(&s);
	key_text(&s, graph_text);
	key_text(&s, bind);
	key_text(&s, target);
	char drv[256];
	snprintf(drv, sizeof(drv), "%s %s driver=%d nvrtc=%d sms=%d", dev->name, dev->target,
		 dev->driver_version, tinyc_nvrtc_version(), dev->sm_count);
	key_text(&s, drv);
	key_env(&s);
	/* the tuning records this device's compilations read */
	char *tp = tinyc_tune_path(dev);
	FILE *f = tp ? fopen(tp, "rb") : NULL;
	char chunk[4096];
	size_t got;
	key_text(&s, f ? "tuning" : "no tuning");
	while (f && (got = fread(chunk, 1, sizeof(chunk), f)) > 0)
		tinyc_sha256_update(&s, chunk, got);
	if (f)
		fclose(f);
	free(tp);
	tinyc_sha256_final(&s, key);
}

/* ------------------------------------------------------------------ store ---- */

int tinyc_gpu_cache_store(const unsigned char key[32], const tinyc_gpu_module *gm,
			  const int64_t *sym, const tinyc_blob *images, const char *const *plans)
{
	tinyc_buf b = {0};
	int64_t v;
	tinyc_buf_puts(&b, FORMAT_LINE);
	tinyc_buf_printf(&b, "target %s %d %d\n", gm->target[0] ? gm->target : "-", gm->arch_major,
			 gm->arch_minor);
	for (int i = 0; i < gm->nbuf; i++) {
		const tinyc_gbuf *u = &gm->bufs[i];
		tinyc_buf_printf(&b, "buf %d %d %d %d %d %d", (int)u->role, u->index, u->node,
				 (int)u->dtype, u->rank, u->has_strides);
		for (int d = 0; d < u->rank; d++)
			tinyc_buf_printf(&b, " %" PRId64, u->shape[d].sym < 0 ? u->shape[d].val : sym[u->shape[d].sym]);
		for (int d = 0; u->has_strides && d < u->rank; d++)
			tinyc_buf_printf(&b, " %" PRId64, u->strides[d].sym < 0 ? u->strides[d].val
							 : sym[u->strides[d].sym]);
		tinyc_buf_printf(&b, " %s\n", u->name);
	}
	for (int i = 0; i < gm->nkernel; i++) {
		const tinyc_gkernel *k = gm->kernels[i];
		int64_t g[3];
		for (int d = 0; d < 3; d++)
			if (tinyc_gpu_eval_int(k->grid[d], sym, &g[d]) < 0)
				goto fail;
		tinyc_buf_printf(&b, "kernel %" PRId64 " %" PRId64 " %" PRId64 " %d %d %d %" PRId64
				 " %d %zu %s\n", g[0], g[1], g[2], k->block[0], k->block[1], k->block[2],
				 k->dyn_smem, k->nparam, images[i].size, k->name);
		tinyc_buf_printf(&b, "plan %s\n", plans && plans[i] && *plans[i] ? plans[i] : "-");
		if (k->pdl)
			tinyc_buf_puts(&b, "pdl\n");
		for (int p = 0; p < k->nparam; p++) {
			const tinyc_gvar *x = &k->vars[k->params[p]];
			if (x->kind == TINYC_GV_PARAM_PTR) {
				tinyc_buf_printf(&b, "ptr %d %d %d %s\n", (int)x->dtype, x->is_const, x->buf,
						 x->name);
			} else if (x->kind == TINYC_GV_PARAM_INT) {
				tinyc_buf_printf(&b, "int %d %d %s\n", (int)x->dtype, x->sym, x->name);
			} else if (x->tmap) {
				const tinyc_gtmap *t = x->tmap;
				if (tinyc_gpu_eval_int(t->offset, sym, &v) < 0)
					goto fail;
				tinyc_buf_printf(&b, "tmap %d %d %d %d %" PRId64, t->buf, (int)t->dtype, t->rank,
						 t->swizzle, v);
				for (int d = 0; d < t->rank; d++) {
					int64_t dv, sv;
					if (tinyc_gpu_eval_int(t->dim[d], sym, &dv) < 0 ||
					    tinyc_gpu_eval_int(t->stride[d], sym, &sv) < 0)
						goto fail;
					tinyc_buf_printf(&b, " %" PRId64 " %" PRId64 " %d", dv, sv, t->box[d]);
				}
				tinyc_buf_printf(&b, " %s\n", x->name);
			} else {
				goto fail;	/* a tensor map without a description: not launchable */
			}
		}
	}
	tinyc_buf_puts(&b, "end\n");
	for (int i = 0; i < gm->nkernel; i++)
		tinyc_buf_append(&b, images[i].data, images[i].size);
	if (b.oom)
		goto fail;
	int rc = tinyc_cache_put(key, ENTRY_EXT, b.data, b.len);
	tinyc_buf_free(&b);
	return rc;
fail:
	tinyc_buf_free(&b);
	return -1;
}

/* ------------------------------------------------------------------- load ---- */

void tinyc_gpu_cached_clear(tinyc_gpu_cached *c)
{
	if (!c)
		return;
	for (int i = 0; c->images && i < c->nkernel; i++)
		free(c->images[i].data);
	for (int i = 0; c->plans && i < c->nkernel; i++)
		free(c->plans[i]);
	free(c->images);
	free(c->plans);
	tinyc_gpu_module_free(c->gm);
	memset(c, 0, sizeof(*c));
}

/* The next line of the entry text at *p (up to end): NUL-terminated in place; NULL at the
 * end of the text. */
static char *next_line(char **p, char *end)
{
	if (*p >= end)
		return NULL;
	char *line = *p, *nl = memchr(line, '\n', (size_t)(end - line));
	if (!nl)
		return NULL;
	*nl = 0;
	*p = nl + 1;
	return line;
}

/* Read n integers from s (advancing it); 0 or -1. */
static int read_ints(char **s, int64_t *out, int n)
{
	for (int i = 0; i < n; i++) {
		char *e;
		out[i] = strtoll(*s, &e, 10);
		if (e == *s || (*e != ' ' && *e != 0))
			return -1;
		*s = e;
	}
	return 0;
}

/* The rest of the line after one space: a name. */
static const char *rest(const char *s)
{
	return *s == ' ' && s[1] ? s + 1 : NULL;
}

/* Rebuild the module and images of the entry text [p, end); 0 or -1 (a bad entry). */
static int parse_entry(tinyc_ctx *ctx, char *p, char *end, const tinyc_graph *g,
		       const tinyc_bindings *bind, tinyc_gpu_cached *c)
{
	char *line = next_line(&p, end);
	int64_t x[64];
	if (!line || strcmp(line, FORMAT_NAME))
		return -1;
	if (!(c->gm = tinyc_gpu_module_alloc(ctx)) || tinyc_gpu_set_symbols(c->gm, g, bind) < 0)
		return -1;
	tinyc_gpu_module *gm = c->gm;
	int cap = 0;
	size_t image_bytes = 0;
	size_t *sizes = NULL;
	int ok = 0;
	while ((line = next_line(&p, end))) {
		char *s = line;
		if (!strcmp(s, "end")) {
			ok = 1;
			break;
		}
		if (!strncmp(s, "target ", 7)) {
			char t[16];
			if (sscanf(s + 7, "%15s %d %d", t, &gm->arch_major, &gm->arch_minor) != 3)
				break;
			snprintf(gm->target, sizeof(gm->target), "%s", strcmp(t, "-") ? t : "");
		} else if (!strncmp(s, "buf ", 4)) {
			s += 3;
			tinyc_gbuf u = {0};
			if (read_ints(&s, x, 6) < 0 || x[4] < 0 || x[4] > TINYC_MAX_RANK)
				break;
			u.role = (tinyc_gbuf_role)x[0], u.index = (int)x[1], u.node = (int)x[2];
			u.dtype = (tinyc_dtype)x[3], u.rank = (int)x[4], u.has_strides = (int)x[5];
			if (read_ints(&s, x, u.rank * (u.has_strides ? 2 : 1)) < 0)
				break;
			for (int d = 0; d < u.rank; d++) {
				u.shape[d] = (tinyc_dim){x[d], -1};
				if (u.has_strides)
					u.strides[d] = (tinyc_dim){x[u.rank + d], -1};
			}
			if (!(u.name = (char *)rest(s)) || tinyc_gpu_add_buf(gm, &u) < 0)
				break;
		} else if (!strncmp(s, "kernel ", 7)) {
			s += 6;
			const char *name;
			if (read_ints(&s, x, 9) < 0 || !(name = rest(s)))
				break;
			tinyc_gkernel *k = tinyc_gk_alloc(gm, name);
			if (!k || strcmp(k->name, name))
				break;
			for (int d = 0; d < 3; d++) {
				k->grid[d] = tinyc_gx_int(k, TINYC_LONG, x[d]);
				k->block[d] = (int)x[3 + d];
			}
			k->dyn_smem = x[6];
			if (gm->nkernel > cap) {
				cap = 2 * gm->nkernel;
				size_t *ns = realloc(sizes, sizeof(*sizes) * (size_t)cap);
				char **np = realloc(c->plans, sizeof(*np) * (size_t)cap);
				if (ns)
					sizes = ns;
				if (np)
					c->plans = np;
				if (!ns || !np)
					break;
			}
			sizes[gm->nkernel - 1] = (size_t)x[8];
			c->plans[gm->nkernel - 1] = NULL;
			c->nkernel = gm->nkernel;
			image_bytes += (size_t)x[8];
		} else if (!strncmp(s, "plan ", 5) && gm->nkernel > 0) {
			if (strcmp(s + 5, "-") && !(c->plans[gm->nkernel - 1] = strdup(s + 5)))
				break;
		} else if (!strcmp(s, "pdl") && gm->nkernel > 0) {
			gm->kernels[gm->nkernel - 1]->pdl = 1;
		} else if (!strncmp(s, "ptr ", 4) && gm->nkernel > 0) {
			s += 3;
			const char *name;
			if (read_ints(&s, x, 3) < 0 || !(name = rest(s)) ||
			    tinyc_gk_param_ptr(gm->kernels[gm->nkernel - 1], name, (tinyc_dtype)x[0],
					       (int)x[1], (int)x[2]) < 0)
				break;
		} else if (!strncmp(s, "int ", 4) && gm->nkernel > 0) {
			s += 3;
			const char *name;
			if (read_ints(&s, x, 2) < 0 || !(name = rest(s)) || x[1] < 0 || x[1] >= gm->nsym ||
			    tinyc_gk_param_int(gm->kernels[gm->nkernel - 1], name, (tinyc_dtype)x[0],
					       (int)x[1]) < 0)
				break;
		} else if (!strncmp(s, "tmap ", 5) && gm->nkernel > 0) {
			s += 4;
			tinyc_gkernel *k = gm->kernels[gm->nkernel - 1];
			tinyc_gtmap t = {0};
			const char *name;
			if (read_ints(&s, x, 5) < 0 || x[2] < 1 || x[2] > 5)
				break;
			t.buf = (int)x[0], t.dtype = (tinyc_dtype)x[1], t.rank = (int)x[2];
			t.swizzle = (int)x[3];
			t.offset = tinyc_gx_int(k, TINYC_LONG, x[4]);
			if (read_ints(&s, x, 3 * t.rank) < 0 || !(name = rest(s)))
				break;
			for (int d = 0; d < t.rank; d++) {
				t.dim[d] = tinyc_gx_int(k, TINYC_LONG, x[3 * d]);
				t.stride[d] = tinyc_gx_int(k, TINYC_LONG, x[3 * d + 1]);
				t.box[d] = (int)x[3 * d + 2];
			}
			if (tinyc_gk_param_tmap_desc(k, name, &t) < 0)
				break;
		} else {
			break;
		}
	}
	if (!ok || (size_t)(end - p) != image_bytes || !(c->images = calloc((size_t)c->nkernel + 1,
									    sizeof(*c->images)))) {
		free(sizes);
		return -1;
	}
	for (int i = 0; i < c->nkernel; i++) {
		if (!(c->images[i].data = malloc(sizes[i] + 1))) {
			free(sizes);
			return -1;
		}
		memcpy(c->images[i].data, p, sizes[i]);
		c->images[i].size = sizes[i];
		c->images[i].is_cubin = 1;
		p += sizes[i];
	}
	free(sizes);
	return 0;
}

int tinyc_gpu_cache_load(tinyc_ctx *ctx, const unsigned char key[32], const tinyc_graph *g,
			 const tinyc_bindings *bind, tinyc_gpu_cached *out)
{
	memset(out, 0, sizeof(*out));
	tinyc_blob b;
	if (tinyc_cache_get(key, ENTRY_EXT, &b) != 1)
		return 0;
	/* a bad entry is a miss (it is rewritten): its builder diagnostics are not the user's */
	tinyc_ctx *quiet = tinyc_ctx_alloc();
	int rc = quiet ? parse_entry(quiet, (char *)b.data, (char *)b.data + b.size, g, bind, out) : -1;
	free(b.data);
	if (rc < 0) {
		tinyc_gpu_cached_clear(out);
		tinyc_ctx_free(quiet);
		return 0;
	}
	out->gm->ctx = ctx;	/* from now on the module reports to the caller */
	tinyc_ctx_free(quiet);
	return 1;
}
