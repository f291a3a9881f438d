/* The on-disk kernel cache (in the manner of tinygrad's): compiled images are stored under a
 * SHA-256 key of everything that determines them, written atomically, and checked when read.
 *
 * Entry file <dir>/<key hex>.cubin|.ptx, little-endian:
 *   "TINYCKC1"  u32 kind (1 CUBIN, 0 PTX)  u32 zero  u64 payload bytes
 *   key digest (32 bytes)  SHA-256 of the payload (32 bytes)  payload
 * An entry whose size, header, key or checksum does not match is ignored and rewritten.
 */
#include "runtime/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ENTRY_MAGIC "TINYCKC1"
#define ENTRY_HEADER 88			/* 8 + 4 + 4 + 8 + 32 + 32 */
#define ENTRY_OTHER 2			/* the kind field of a non-image entry (tinyc_cache_put) */
#define KEY_VERSION "tinyc-kernel-cache-v1"	/* bump when the key or entry layout changes */

/* ------------------------------------------------------------------- SHA-256 ---- */

static const uint32_t sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

/* Apply the compression function to one 64-byte block. */
static void sha256_block(uint32_t h[8], const unsigned char *p)
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
		uint32_t ch = (e & f) ^ (~e & g);
		uint32_t t1 = hh + S1 + ch + sha256_k[i] + w[i];
		uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
		uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
		uint32_t t2 = S0 + maj;
		hh = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a; h[1] += b; h[2] += c; h[3] += d;
	h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

/* Start a SHA-256 computation (FIPS 180-4 initial hash values). */
void tinyc_sha256_init(tinyc_sha256_ctx *s)
{
	static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(s->h, h0, sizeof(h0));
	s->nbytes = 0;
	s->fill = 0;
}

/* Hash n more bytes. */
void tinyc_sha256_update(tinyc_sha256_ctx *s, const void *data, size_t n)
{
	const unsigned char *p = data;
	s->nbytes += n;
	while (n > 0) {
		size_t take = 64 - s->fill < n ? 64 - s->fill : n;
		memcpy(s->block + s->fill, p, take);
		s->fill += take;
		p += take;
		n -= take;
		if (s->fill == 64) {
			sha256_block(s->h, s->block);
			s->fill = 0;
		}
	}
}

/* Pad, process the last block(s) and write the big-endian digest. */
void tinyc_sha256_final(tinyc_sha256_ctx *s, unsigned char digest[32])
{
	uint64_t bits = s->nbytes * 8;
	s->block[s->fill++] = 0x80;
	if (s->fill > 56) {
		memset(s->block + s->fill, 0, 64 - s->fill);
		sha256_block(s->h, s->block);
		s->fill = 0;
	}
	memset(s->block + s->fill, 0, 56 - s->fill);
	for (int i = 0; i < 8; i++)
		s->block[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
	sha256_block(s->h, s->block);
	for (int i = 0; i < 8; i++) {
		digest[4 * i] = (unsigned char)(s->h[i] >> 24);
		digest[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
		digest[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
		digest[4 * i + 3] = (unsigned char)s->h[i];
	}
}

/* SHA-256 of one buffer. */
void tinyc_sha256(const void *data, size_t n, unsigned char digest[32])
{
	tinyc_sha256_ctx s;
	tinyc_sha256_init(&s);
	tinyc_sha256_update(&s, data, n);
	tinyc_sha256_final(&s, digest);
}

/* Lowercase hex of n bytes, NUL-terminated. */
void tinyc_hex(const unsigned char *bytes, size_t n, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[bytes[i] >> 4];
		hex[2 * i + 1] = digits[bytes[i] & 15];
	}
	hex[2 * n] = 0;
}

/* --------------------------------------------------------------------- cache ---- */

/* The cache directory from the environment (see runtime.h). */
char *tinyc_cache_dir(void)
{
	const char *dir = getenv("TINYC_CACHE_DIR");
	if (dir)
		return *dir ? strdup(dir) : NULL;
	const char *xdg = getenv("XDG_CACHE_HOME");
	if (xdg && *xdg)
		return tinyc_asprintf("%s/tinyc", xdg);
	const char *home = getenv("HOME");
	if (home && *home)
		return tinyc_asprintf("%s/.cache/tinyc", home);
	return NULL;
}

/* Free what a compile result holds and zero it. */
void tinyc_compile_result_clear(tinyc_compile_result *r)
{
	if (!r)
		return;
	tinyc_blob_clear(&r->blob);
	free(r->cache_path);
	free(r->cache_note);
	*r = (tinyc_compile_result){0};
}

/* Hash one key field, prefixed by its length so that fields cannot run together. */
static void key_field(tinyc_sha256_ctx *s, const void *data, size_t n)
{
	unsigned char len[8];
	for (int i = 0; i < 8; i++)
		len[i] = (unsigned char)((uint64_t)n >> (8 * i));
	tinyc_sha256_update(s, len, 8);
	tinyc_sha256_update(s, data, n);
}

/* Hash a string field. */
static void key_str(tinyc_sha256_ctx *s, const char *str)
{
	key_field(s, str, strlen(str));
}

/* Create dir and its parents (mkdir -p); 0 or -1 with errno set. */
static int make_dirs(const char *dir)
{
	char *path = strdup(dir);
	if (!path)
		return -1;
	int ret = 0;
	for (char *p = path + 1; ; p++) {
		if (*p != '/' && *p != 0)
			continue;
		char c = *p;
		*p = 0;
		if (mkdir(path, 0755) != 0 && errno != EEXIST) {
			ret = -1;
			break;
		}
		*p = c;
		if (!c)
			break;
	}
	int saved = errno;
	free(path);
	errno = saved;
	if (ret == 0) {
		struct stat st;
		if (stat(dir, &st) != 0)
			return -1;
		if (!S_ISDIR(st.st_mode)) {
			errno = ENOTDIR;
			return -1;
		}
	}
	return ret;
}

static void put_u32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The check sum of an entry's bytes: SHA-256 for kernel images; for other entries (read
 * on the module cache's hot path) a 64-bit multiply-xor hash over 8-byte words in the
 * first 8 bytes, zeros after: it detects damage (a flipped bit, a cut file) at memory
 * speed, where SHA-256 costs milliseconds per 100 KB. */
static void entry_sum(const unsigned char *data, size_t n, int kind, unsigned char sum[32])
{
	if (kind != ENTRY_OTHER) {
		tinyc_sha256(data, n, sum);
		return;
	}
	uint64_t h = 0x9e3779b97f4a7c15u ^ n, w;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, data + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdu;
		h ^= h >> 32;
	}
	for (; i < n; i++)
		h = (h ^ data[i]) * 0x100000001b3u;
	memset(sum, 0, 32);
	put_u64(sum, h);
}

/* Read and check a cache entry.  Returns 1 and fills blob on a good entry, 0 when there is
 * no entry, -1 when the entry is corrupt, short or for another key. */
static int entry_read(const char *path, const unsigned char key[32], int is_cubin,
		      tinyc_blob *blob)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	struct stat st;
	unsigned char head[ENTRY_HEADER];
	int ret = -1;
	unsigned char *data = NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < ENTRY_HEADER ||
	    read(fd, head, ENTRY_HEADER) != ENTRY_HEADER)
		goto done;
	uint64_t size = get_u64(head + 16);
	if (memcmp(head, ENTRY_MAGIC, 8) != 0 || get_u32(head + 8) != (uint32_t)is_cubin ||
	    get_u32(head + 12) != 0 || size != (uint64_t)st.st_size - ENTRY_HEADER ||
	    memcmp(head + 24, key, 32) != 0 || size > SIZE_MAX - 1)
		goto done;
	data = malloc((size_t)size + 1);
	if (!data)
		goto done;
	size_t got = 0;
	while (got < size) {
		ssize_t n = read(fd, data + got, (size_t)size - got);
		if (n <= 0)
			goto done;
		got += (size_t)n;
	}
	unsigned char sum[32];
	entry_sum(data, (size_t)size, is_cubin, sum);
	if (memcmp(sum, head + 56, 32) != 0)
		goto done;
	data[size] = 0;
	*blob = (tinyc_blob){.data = data, .size = (size_t)size, .is_cubin = is_cubin};
	data = NULL;
	ret = 1;
done:
	free(data);
	close(fd);
	return ret;
}

/* Write all n bytes to fd; 0 or -1. */
static int write_all(int fd, const void *p, size_t n)
{
	const unsigned char *b = p;
	while (n > 0) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Store a cache entry atomically: write a temporary file in dir, then rename it over path.
 * Returns NULL on success, else a new string saying what failed. */
static char *entry_write(const char *dir, const char *path, const char *hex,
			 const unsigned char key[32], const tinyc_blob *blob)
{
	if (make_dirs(dir) != 0)
		return tinyc_asprintf("cannot create cache directory '%s': %s", dir,
				      strerror(errno));
	char *tmp = tinyc_asprintf("%s/.%s.tmp.XXXXXX", dir, hex);
	if (!tmp)
		return tinyc_asprintf("out of memory");
	int fd = mkstemp(tmp);
	if (fd < 0) {
		char *why = tinyc_asprintf("cannot create a file in '%s': %s", dir,
					   strerror(errno));
		free(tmp);
		return why;
	}
	unsigned char head[ENTRY_HEADER];
	memcpy(head, ENTRY_MAGIC, 8);
	put_u32(head + 8, (uint32_t)blob->is_cubin);
	put_u32(head + 12, 0);
	put_u64(head + 16, (uint64_t)blob->size);
	memcpy(head + 24, key, 32);
	entry_sum(blob->data, blob->size, blob->is_cubin, head + 56);
	char *why = NULL;
	if (fchmod(fd, 0644) != 0 || write_all(fd, head, ENTRY_HEADER) != 0 ||
	    write_all(fd, blob->data, blob->size) != 0)
		why = tinyc_asprintf("cannot write '%s': %s", tmp, strerror(errno));
	if (close(fd) != 0 && !why)
		why = tinyc_asprintf("cannot write '%s': %s", tmp, strerror(errno));
	if (!why && rename(tmp, path) != 0)
		why = tinyc_asprintf("cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
	if (why)
		unlink(tmp);
	free(tmp);
	return why;
}

/* Compile CUDA text through the on-disk cache. */
int tinyc_kernel_compile_cached(tinyc_ctx *ctx, const char *cuda_src, const char *name,
				const char *arch, const tinyc_compile_opts *opt,
				tinyc_compile_result *r)
{
	static const tinyc_compile_opts defaults = {0};
	double t0 = tinyc_now_ms();
	*r = (tinyc_compile_result){0};
	if (!opt)
		opt = &defaults;
	if (!cuda_src)
		return tinyc_error(ctx, "NvrtcError", "no CUDA text to compile");
	if (!name || !*name)
		name = "kernel.cu";
	int want_cubin = !opt->want_ptx;

	/* The key: everything the image depends on. */
	tinyc_buf opts = {0};
	if (tinyc_nvrtc_options(ctx, arch, want_cubin, opt->extra, opt->n_extra, &opts) < 0) {
		tinyc_buf_free(&opts);
		return -1;
	}
	char versions[64];
	snprintf(versions, sizeof(versions), "nvrtc=%d driver=%d kind=%s",
		 tinyc_nvrtc_version(), opt->driver_version, want_cubin ? "cubin" : "ptx");
	tinyc_sha256_ctx s;
	tinyc_sha256_init(&s);
	key_str(&s, KEY_VERSION);
	key_str(&s, cuda_src);
	key_str(&s, name);
	key_str(&s, arch);
	key_str(&s, opts.data ? opts.data : "");
	key_str(&s, versions);
	unsigned char key[32];
	tinyc_sha256_final(&s, key);
	tinyc_hex(key, 32, r->key);
	int oom = opts.oom;
	tinyc_buf_free(&opts);
	if (oom)
		return tinyc_error(ctx, "OutOfMemory", "cannot hold the nvrtc options");

	char *dir = NULL;
	if (opt->no_cache)
		r->cache_note = tinyc_asprintf("cache disabled by option");
	else if (opt->cache_dir)
		dir = *opt->cache_dir ? strdup(opt->cache_dir) : NULL;
	else
		dir = tinyc_cache_dir();
	if (!dir && !r->cache_note)
		r->cache_note = tinyc_asprintf("cache disabled (TINYC_CACHE_DIR is empty or no home)");
	if (dir) {
		r->cache_path = tinyc_asprintf("%s/%s.%s", dir, r->key, want_cubin ? "cubin" : "ptx");
		if (!r->cache_path) {
			free(dir);
			dir = NULL;
		}
	}

	if (dir) {
		int got = entry_read(r->cache_path, key, want_cubin, &r->blob);
		if (got == 1) {
			free(dir);
			r->cache_hit = 1;
			r->lookup_ms = tinyc_now_ms() - t0;
			r->total_ms = r->lookup_ms;
			return 0;
		}
		if (got < 0)
			r->cache_rejected = 1;
	}
	r->lookup_ms = tinyc_now_ms() - t0;

	if (tinyc_nvrtc_compile_opts(ctx, cuda_src, name, arch, want_cubin, opt->extra,
				     opt->n_extra, &r->blob) < 0) {
		free(dir);
		tinyc_compile_result_clear(r);
		return -1;
	}
	r->compile_ms = r->blob.compile_ms;
	if (dir) {
		char *why = entry_write(dir, r->cache_path, r->key, key, &r->blob);
		if (why)
			r->cache_note = why;
		else
			r->cache_stored = 1;
		free(dir);
	}
	r->total_ms = tinyc_now_ms() - t0;
	return 0;
}

/* ------------------------------------------------------------ other entries ---- */

/* The path of entry key.ext in the cache directory, or NULL when the cache is off. */
static char *entry_path(const unsigned char key[32], const char *ext, char **dir_out)
{
	char *dir = tinyc_cache_dir();
	if (!dir)
		return NULL;
	char hex[65];
	tinyc_hex(key, 32, hex);
	char *path = tinyc_asprintf("%s/%s.%s", dir, hex, ext);
	if (!path || !dir_out)
		free(dir);
	else
		*dir_out = dir;
	return path;
}

int tinyc_cache_get(const unsigned char key[32], const char *ext, tinyc_blob *out)
{
	*out = (tinyc_blob){0};
	char *path = entry_path(key, ext, NULL);
	if (!path)
		return 0;
	int got = entry_read(path, key, ENTRY_OTHER, out);
	free(path);
	return got;
}

int tinyc_cache_put(const unsigned char key[32], const char *ext, const void *data, size_t size)
{
	char *dir = NULL, *path = entry_path(key, ext, &dir);
	if (!path)
		return -1;
	char hex[65];
	tinyc_hex(key, 32, hex);
	tinyc_blob b = {.data = (unsigned char *)data, .size = size, .is_cubin = ENTRY_OTHER};
	char *why = entry_write(dir, path, hex, key, &b);
	free(why);
	free(dir);
	free(path);
	return why ? -1 : 0;
}

/* ------------------------------------------------------- parallel compiles ---- */

/* The shared state of the compile workers: the next job to take. */
typedef struct compile_pool {
	pthread_mutex_t lock;			/* guards next */
	int next;				/* the next job index */
	int n;					/* jobs */
	const tinyc_compile_job *jobs;		/* the jobs */
	tinyc_compile_result *results;		/* one per job */
	tinyc_ctx **ctxs;			/* one context per job (its diagnostics) */
	int *rcs;				/* each job's return code */
} compile_pool;

/* A worker: take jobs until none is left, each into its own context. */
static void *compile_worker(void *arg)
{
	compile_pool *p = arg;
	for (;;) {
		pthread_mutex_lock(&p->lock);
		int i = p->next < p->n ? p->next++ : -1;
		pthread_mutex_unlock(&p->lock);
		if (i < 0)
			return NULL;
		const tinyc_compile_job *j = &p->jobs[i];
		p->rcs[i] = tinyc_kernel_compile_cached(p->ctxs[i], j->src, j->name, j->arch, j->opt,
							&p->results[i]);
	}
}

/* How many compile threads: $TINYC_JIT_THREADS, else the online CPUs, at most 16 and n. */
static int compile_threads(int n)
{
	const char *e = getenv("TINYC_JIT_THREADS");
	long t = e && atoi(e) > 0 ? atoi(e) : sysconf(_SC_NPROCESSORS_ONLN);
	if (t > 16)
		t = 16;
	if (t > n)
		t = n;
	return t < 1 ? 1 : (int)t;
}

int tinyc_kernel_compile_many(tinyc_ctx *ctx, int n, const tinyc_compile_job *jobs,
			      tinyc_compile_result *results, double *wall_ms)
{
	double t0 = tinyc_now_ms();
	if (wall_ms)
		*wall_ms = 0;
	for (int i = 0; i < n; i++)
		results[i] = (tinyc_compile_result){0};
	if (n <= 0)
		return 0;
	compile_pool p = {.next = 0, .n = n, .jobs = jobs, .results = results};
	p.ctxs = calloc((size_t)n, sizeof(*p.ctxs));
	p.rcs = calloc((size_t)n, sizeof(*p.rcs));
	int nt = compile_threads(n), started = 0, rc = 0;
	pthread_t *th = calloc((size_t)nt, sizeof(*th));
	int ok = p.ctxs && p.rcs && th && pthread_mutex_init(&p.lock, NULL) == 0;
	for (int i = 0; ok && i < n; i++)
		ok = (p.ctxs[i] = tinyc_ctx_alloc()) != NULL;
	if (!ok) {
		rc = tinyc_error(ctx, "OutOfMemory", "parallel compile");
		goto done;
	}
	/* the calling thread works too: nt - 1 helpers (none when a thread cannot start) */
	for (int t = 1; t < nt; t++) {
		if (pthread_create(&th[t], NULL, compile_worker, &p) != 0)
			break;
		started++;
	}
	compile_worker(&p);
	for (int t = 1; t <= started; t++)
		pthread_join(th[t], NULL);
	pthread_mutex_destroy(&p.lock);
	/* the diagnostics in job order, as a serial loop would have reported them */
	for (int i = 0; i < n; i++) {
		if (p.rcs[i] < 0)
			rc = -1;
		if (tinyc_ctx_take_diags(ctx, p.ctxs[i]) < 0)
			rc = -1;
	}
done:
	for (int i = 0; p.ctxs && i < n; i++)
		tinyc_ctx_free(p.ctxs[i]);
	free(p.ctxs);
	free(p.rcs);
	free(th);
	if (rc < 0)
		for (int i = 0; i < n; i++)
			tinyc_compile_result_clear(&results[i]);
	if (wall_ms)
		*wall_ms = tinyc_now_ms() - t0;
	return rc;
}
