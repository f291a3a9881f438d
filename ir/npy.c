/* NumPy .npy files: reading format 1.0/2.0/3.0 and writing format 1.0.
 *
 * A .npy file is the magic "\x93NUMPY", a major and a minor version byte, the header
 * length (uint16 little-endian in 1.0, uint32 in 2.0 and 3.0), a header that is a Python
 * dict literal such as
 *
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 *
 * padded with spaces and ended by '\n', then the raw data.  Only C-order arrays of the
 * dtypes of dtype.h are accepted; everything else is an NpyError naming the file.  The host
 * is little-endian, so '<', '=' and '|' all mean native order here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ir/tensor.h"

#define NPY_MAX_HEADER (1 << 20)	/* refuse headers above 1 MiB */

/* What a header says. */
typedef struct npy_header {
	tinyc_dtype dtype;		/* element type */
	int fortran;			/* fortran_order */
	int rank;			/* number of dims */
	int64_t shape[TINYC_MAX_RANK];	/* dims */
	int have_descr, have_fortran, have_shape;	/* which keys were seen */
} npy_header;

/* A cursor over the header text. */
typedef struct npy_lexer {
	const char *p, *end;		/* current position, end of the header */
	tinyc_ctx *ctx;
	const char *path;		/* for diagnostics */
} npy_lexer;

/* Report a format error naming the file; returns -1. */
static int npy_err(npy_lexer *lx, const char *what)
{
	return tinyc_error(lx->ctx, "NpyError", "%s: %s", lx->path, what);
}

static void skip_ws(npy_lexer *lx)
{
	while (lx->p < lx->end && (*lx->p == ' ' || *lx->p == '\t' || *lx->p == '\n' ||
				   *lx->p == '\r'))
		lx->p++;
}

/* Accept the character c (after blanks). */
static int accept(npy_lexer *lx, char c)
{
	skip_ws(lx);
	if (lx->p < lx->end && *lx->p == c) {
		lx->p++;
		return 1;
	}
	return 0;
}

/* A quoted Python string ('..' or "..", no escapes); its bytes into buf (NUL-terminated). */
static int parse_string(npy_lexer *lx, char *buf, size_t cap)
{
	skip_ws(lx);
	if (lx->p >= lx->end || (*lx->p != '\'' && *lx->p != '"'))
		return npy_err(lx, "malformed header: expected a quoted string");
	char q = *lx->p++;
	size_t n = 0;
	while (lx->p < lx->end && *lx->p != q) {
		if (!*lx->p)
			return npy_err(lx, "malformed header: a NUL byte inside a string");
		if (*lx->p == '\\' || n + 1 >= cap)
			return npy_err(lx, "malformed header: unsupported string");
		buf[n++] = *lx->p++;
	}
	if (lx->p >= lx->end)
		return npy_err(lx, "malformed header: unterminated string");
	lx->p++;
	buf[n] = 0;
	return 0;
}

/* Map a descr such as '<f4' to a dtype. */
static int parse_descr(npy_lexer *lx, const char *d, tinyc_dtype *dt)
{
	static const struct { char kind; int size; tinyc_dtype dt; } map[] = {
		{'b', 1, TINYC_BOOL}, {'?', 1, TINYC_BOOL},
		{'i', 1, TINYC_CHAR}, {'u', 1, TINYC_UCHAR},
		{'i', 2, TINYC_SHORT}, {'u', 2, TINYC_USHORT},
		{'i', 4, TINYC_INT}, {'u', 4, TINYC_UINT},
		{'i', 8, TINYC_LONG}, {'u', 8, TINYC_ULONG},
		{'f', 2, TINYC_HALF}, {'f', 4, TINYC_FLOAT}, {'f', 8, TINYC_DOUBLE},
	};
	char order = 0;
	const char *s = d;
	if (*s == '<' || *s == '>' || *s == '=' || *s == '|')
		order = *s++;
	if (!*s)
		return npy_err(lx, d[0] ? "malformed header: a dtype with a byte order but no type"
					: "malformed header: an empty dtype");
	char kind = *s++;
	int size = 0;
	if (kind == '?' && !*s)
		size = 1;
	while (*s >= '0' && *s <= '9' && size < 1000)
		size = size * 10 + (*s++ - '0');
	char msg[160];
	if (kind == 'O') {
		snprintf(msg, sizeof(msg), "object arrays ('%s') are not supported", d);
		return npy_err(lx, msg);
	}
	for (size_t i = 0; !*s && i < sizeof(map) / sizeof(map[0]); i++) {
		if (map[i].kind != kind || map[i].size != size)
			continue;
		if (order == '>' && size > 1) {
			snprintf(msg, sizeof(msg), "big-endian data ('%s') is not supported", d);
			return npy_err(lx, msg);
		}
		*dt = map[i].dt;
		return 0;
	}
	snprintf(msg, sizeof(msg), "unsupported dtype '%s'", d);
	return npy_err(lx, msg);
}

/* A non-negative Python int (an old 'L' suffix is allowed). */
static int parse_dim(npy_lexer *lx, int64_t *v)
{
	skip_ws(lx);
	if (lx->p >= lx->end || *lx->p < '0' || *lx->p > '9')
		return npy_err(lx, "malformed header: expected a dimension in 'shape'");
	int64_t x = 0;
	while (lx->p < lx->end && *lx->p >= '0' && *lx->p <= '9') {
		if (x > (INT64_MAX - 9) / 10)
			return npy_err(lx, "shape dimension overflows int64");
		x = x * 10 + (*lx->p++ - '0');
	}
	if (lx->p < lx->end && *lx->p == 'L')
		lx->p++;
	*v = x;
	return 0;
}

/* A shape tuple: (), (3,), (2, 3) or (2, 3,). */
static int parse_shape(npy_lexer *lx, npy_header *h)
{
	if (!accept(lx, '('))
		return npy_err(lx, "malformed header: 'shape' is not a tuple");
	h->rank = 0;
	while (!accept(lx, ')')) {
		if (h->rank == TINYC_MAX_RANK)
			return npy_err(lx, "rank above 16 is not supported");
		if (parse_dim(lx, &h->shape[h->rank]) < 0)
			return -1;
		h->rank++;
		if (!accept(lx, ',')) {
			if (!accept(lx, ')'))
				return npy_err(lx, "malformed header: bad 'shape' tuple");
			break;
		}
	}
	return 0;
}

/* Parse the header dict into h. */
static int parse_header(npy_lexer *lx, npy_header *h)
{
	char key[32], val[64];
	if (!accept(lx, '{'))
		return npy_err(lx, "malformed header: expected '{'");
	while (!accept(lx, '}')) {
		if (parse_string(lx, key, sizeof(key)) < 0)
			return -1;
		if (!accept(lx, ':'))
			return npy_err(lx, "malformed header: expected ':'");
		if (!strcmp(key, "descr")) {
			skip_ws(lx);
			if (lx->p < lx->end && *lx->p == '[')
				return npy_err(lx, "structured dtypes are not supported");
			if (parse_string(lx, val, sizeof(val)) < 0 ||
			    parse_descr(lx, val, &h->dtype) < 0)
				return -1;
			h->have_descr = 1;
		} else if (!strcmp(key, "fortran_order")) {
			skip_ws(lx);
			size_t left = (size_t)(lx->end - lx->p);
			if (left >= 4 && !memcmp(lx->p, "True", 4)) {
				h->fortran = 1;
				lx->p += 4;
			} else if (left >= 5 && !memcmp(lx->p, "False", 5)) {
				h->fortran = 0;
				lx->p += 5;
			} else {
				return npy_err(lx, "malformed header: 'fortran_order' is not a bool");
			}
			h->have_fortran = 1;
		} else if (!strcmp(key, "shape")) {
			if (parse_shape(lx, h) < 0)
				return -1;
			h->have_shape = 1;
		} else {
			char msg[96];
			snprintf(msg, sizeof(msg), "unexpected header key '%s'", key);
			return npy_err(lx, msg);
		}
		if (!accept(lx, ',')) {
			if (!accept(lx, '}'))
				return npy_err(lx, "malformed header: expected ',' or '}'");
			break;
		}
	}
	skip_ws(lx);
	if (lx->p != lx->end)
		return npy_err(lx, "malformed header: text after the dict");
	if (!h->have_descr || !h->have_fortran || !h->have_shape)
		return npy_err(lx, "header lacks 'descr', 'fortran_order' or 'shape'");
	if (h->fortran)
		return npy_err(lx, "Fortran-order arrays are not supported (save a C-order copy)");
	return 0;
}

/* Read a .npy file into a new tensor. */
tinyc_tensor *tinyc_npy_read(tinyc_ctx *ctx, const char *path)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		tinyc_error(ctx, "IOError", "cannot read '%s': it is a directory", path);
		return NULL;
	}
	FILE *f = fopen(path, "rb");
	if (!f) {
		tinyc_error(ctx, "IOError", "cannot open '%s': %s", path, strerror(errno));
		return NULL;
	}
	return tinyc_npy_read_stream(ctx, f, path);
}

/* Read a .npy image from stream f (closed here); path names it in diagnostics. */
tinyc_tensor *tinyc_npy_read_stream(tinyc_ctx *ctx, FILE *f, const char *path)
{
	npy_lexer lx = {NULL, NULL, ctx, path};
	npy_header h;
	memset(&h, 0, sizeof(h));
	tinyc_tensor *t = NULL;
	char *text = NULL;
	unsigned char pre[12];
	if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6)) {
		npy_err(&lx, "not a .npy file (bad magic)");
		goto out;
	}
	size_t hlen;
	if (pre[6] == 1 && pre[7] == 0) {
		hlen = pre[8] | (size_t)pre[9] << 8;
	} else if ((pre[6] == 2 || pre[6] == 3) && pre[7] == 0) {
		if (fread(pre + 10, 1, 2, f) != 2) {
			npy_err(&lx, "truncated header");
			goto out;
		}
		hlen = pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
	} else {
		char msg[64];
		snprintf(msg, sizeof(msg), "unsupported format version %d.%d", pre[6], pre[7]);
		npy_err(&lx, msg);
		goto out;
	}
	if (hlen > NPY_MAX_HEADER) {
		npy_err(&lx, "header longer than 1 MiB");
		goto out;
	}
	text = tinyc_malloc(ctx, hlen + 1);
	if (!text)
		goto out;
	if (fread(text, 1, hlen, f) != hlen) {
		npy_err(&lx, "truncated header");
		goto out;
	}
	text[hlen] = 0;
	lx.p = text;
	lx.end = text + hlen;
	if (parse_header(&lx, &h) < 0)
		goto out;
	int64_t size = tinyc_dtype_size(h.dtype);
	for (int i = 0; i < h.rank; i++) {
		if (h.shape[i] > 0 && size > (INT64_C(1) << 46) / h.shape[i]) {
			npy_err(&lx, "array too large (more than 2^46 bytes)");
			goto out;
		}
		size *= h.shape[i];
	}
	/* Check the file size before allocating, so a lying header cannot ask for terabytes. */
	long pos = ftell(f);
	if (pos >= 0 && fseek(f, 0, SEEK_END) == 0) {
		long end = ftell(f);
		if (end >= 0 && end - pos < size) {
			char msg[128];
			snprintf(msg, sizeof(msg), "truncated data: expected %lld bytes, found %lld",
				 (long long)size, (long long)(end - pos));
			npy_err(&lx, msg);
			goto out;
		}
		if (fseek(f, pos, SEEK_SET) != 0) {
			tinyc_error(ctx, "IOError", "cannot seek in '%s'", path);
			goto out;
		}
	}
	t = tinyc_tensor_alloc(ctx, h.dtype, h.rank, h.shape);
	if (!t)
		goto out;
	size_t got = fread(t->data, 1, (size_t)size, f);
	if (got != (size_t)size) {
		char msg[128];
		snprintf(msg, sizeof(msg), "truncated data: expected %lld bytes, found %llu",
			 (long long)size, (unsigned long long)got);
		npy_err(&lx, msg);
		tinyc_tensor_free(t);
		t = NULL;
		goto out;
	}
	if (h.dtype == TINYC_BOOL) {	/* keep the 0/1 invariant of bool tensors */
		unsigned char *b = t->data;
		for (int64_t i = 0; i < size; i++)
			b[i] = b[i] != 0;
	}
out:
	free(text);
	fclose(f);
	return t;
}

/* Write t as a format 1.0 .npy file whose preamble + header is padded with spaces to a
 * multiple of 64 bytes and ends in '\n', as NumPy does. */
int tinyc_npy_write(tinyc_ctx *ctx, const char *path, const tinyc_tensor *t)
{
	const char *descr = tinyc_dtype_npy_descr(t->dtype);
	if (!descr)
		return tinyc_error(ctx, "NpyError", "%s: %s has no NumPy dtype; CAST it first", path,
				   tinyc_dtype_name(t->dtype));
	tinyc_buf h = {0};
	tinyc_buf_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
	for (int i = 0; i < t->rank; i++)
		tinyc_buf_printf(&h, i ? ", %lld" : "%lld", (long long)t->shape[i]);
	tinyc_buf_puts(&h, t->rank == 1 ? ",), }" : "), }");
	while ((10 + h.len + 1) % 64)
		tinyc_buf_putc(&h, ' ');
	tinyc_buf_putc(&h, '\n');
	if (h.oom) {
		tinyc_buf_free(&h);
		return tinyc_error(ctx, "OutOfMemory", "%s: cannot build the header", path);
	}
	FILE *f = fopen(path, "wb");
	if (!f) {
		tinyc_buf_free(&h);
		return tinyc_error(ctx, "IOError", "cannot create '%s': %s", path, strerror(errno));
	}
	unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
				 (unsigned char)(h.len & 0xff), (unsigned char)(h.len >> 8)};
	size_t size = (size_t)tinyc_tensor_numel(t) * (size_t)tinyc_dtype_size(t->dtype);
	int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(h.data, 1, h.len, f) == h.len &&
		 fwrite(t->data, 1, size, f) == size;
	ok &= fclose(f) == 0;
	tinyc_buf_free(&h);
	if (!ok)
		return tinyc_error(ctx, "IOError", "cannot write '%s'", path);
	return 0;
}
