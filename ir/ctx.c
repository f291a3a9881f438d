/* The tinyc context: diagnostics collection and clang-style printing, sources, buffers. */
#include "ir/ctx.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct tinyc_ctx {
	int ndiag;		/* diagnostics collected */
	int cap;		/* allocated entries in diag */
	tinyc_diag *diag;	/* the diagnostics, in order of report */
	int nerr;		/* how many of them are errors */
	int oom;		/* an allocation failed while reporting */
	int no_color;		/* never print in colour (the CLI sets it from NO_COLOR) */
};

/* Allocate a context with no diagnostics. */
tinyc_ctx *tinyc_ctx_alloc(void)
{
	return calloc(1, sizeof(tinyc_ctx));
}

static void diag_clear(tinyc_diag *d)
{
	free(d->kind);
	free(d->msg);
	free(d->file);
	free(d->line_text);
}

/* Free a context and every diagnostic it holds. */
void tinyc_ctx_free(tinyc_ctx *ctx)
{
	if (!ctx)
		return;
	tinyc_ctx_clear_diags(ctx);
	free(ctx->diag);
	free(ctx);
}

void tinyc_ctx_clear_diags(tinyc_ctx *ctx)
{
	for (int i = 0; i < ctx->ndiag; i++)
		diag_clear(&ctx->diag[i]);
	ctx->ndiag = 0;
	ctx->nerr = 0;
}

/* Move every diagnostic of src to the end of dst's (src is left empty). */
int tinyc_ctx_take_diags(tinyc_ctx *dst, tinyc_ctx *src)
{
	if (src->ndiag == 0)
		return 0;
	if (src->ndiag > dst->cap - dst->ndiag) {
		int cap = dst->ndiag + src->ndiag;
		tinyc_diag *d = realloc(dst->diag, (size_t)cap * sizeof(*d));
		if (!d) {
			dst->oom = 1;
			tinyc_ctx_clear_diags(src);
			return -1;
		}
		dst->diag = d;
		dst->cap = cap;
	}
	memcpy(dst->diag + dst->ndiag, src->diag, (size_t)src->ndiag * sizeof(*src->diag));
	dst->ndiag += src->ndiag;
	dst->nerr += src->nerr;
	dst->oom |= src->oom;
	src->ndiag = src->nerr = 0;
	return 0;
}

char *tinyc_asprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	char *s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

static char *vasprintf_(const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return NULL;
	char *s = malloc((size_t)n + 1);
	if (s)
		vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Copy the line of src that contains loc (without its newline), or NULL. */
static char *source_line(const tinyc_source *src, tinyc_loc loc)
{
	if (!src || !src->text || loc.line <= 0)
		return NULL;
	const char *p = src->text, *end = src->text + src->len;
	for (int l = 1; l < loc.line && p < end; p++)
		if (*p == '\n')
			l++;
	if (p > end)
		return NULL;
	const char *q = p;
	while (q < end && *q != '\n' && *q != '\r')
		q++;
	size_t n = (size_t)(q - p);
	if (n > 4096)	/* quote at most 4 KiB of a very long line */
		n = 4096;
	char *s = malloc(n + 1);
	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++)	/* keep the quote printable */
		s[i] = (p[i] == '\t' || ((unsigned char)p[i] >= 32 && p[i] != 127)) ? p[i] : '?';
	s[n] = 0;
	return s;
}

static void push_diag(tinyc_ctx *ctx, tinyc_severity sev, const tinyc_source *src,
		      tinyc_loc loc, const char *kind, char *msg)
{
	if (!ctx) {
		free(msg);
		return;
	}
	if (ctx->ndiag == ctx->cap) {
		int cap = ctx->cap ? 2 * ctx->cap : 8;
		tinyc_diag *d = realloc(ctx->diag, (size_t)cap * sizeof(*d));
		if (!d) {
			ctx->oom = 1;
			free(msg);
			if (sev == TINYC_ERROR)
				ctx->nerr++;
			return;
		}
		ctx->diag = d;
		ctx->cap = cap;
	}
	tinyc_diag *d = &ctx->diag[ctx->ndiag++];
	d->severity = sev;
	d->kind = dup_or_null(kind);
	d->msg = msg;
	d->file = src ? dup_or_null(src->name) : NULL;
	d->loc = loc;
	d->line_text = source_line(src, loc);
	if (sev == TINYC_ERROR)
		ctx->nerr++;
}

int tinyc_verror_at(tinyc_ctx *ctx, const tinyc_source *src, tinyc_loc loc,
		    const char *kind, const char *fmt, va_list ap)
{
	push_diag(ctx, TINYC_ERROR, src, loc, kind, vasprintf_(fmt, ap));
	return -1;
}

/* Report an error of the given kind at loc in src. */
int tinyc_error_at(tinyc_ctx *ctx, const tinyc_source *src, tinyc_loc loc,
		   const char *kind, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tinyc_verror_at(ctx, src, loc, kind, fmt, ap);
	va_end(ap);
	return -1;
}

/* Report an error that has no source position. */
int tinyc_error(tinyc_ctx *ctx, const char *kind, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tinyc_verror_at(ctx, NULL, (tinyc_loc){0, 0}, kind, fmt, ap);
	va_end(ap);
	return -1;
}

void tinyc_note_at(tinyc_ctx *ctx, const tinyc_source *src, tinyc_loc loc,
		   const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	push_diag(ctx, TINYC_NOTE, src, loc, NULL, vasprintf_(fmt, ap));
	va_end(ap);
}

int tinyc_ctx_error_count(const tinyc_ctx *ctx)
{
	return ctx->nerr;
}

int tinyc_ctx_diag_count(const tinyc_ctx *ctx)
{
	return ctx->ndiag;
}

const tinyc_diag *tinyc_ctx_diag(const tinyc_ctx *ctx, int i)
{
	return i >= 0 && i < ctx->ndiag ? &ctx->diag[i] : NULL;
}

/* Print one diagnostic: "file:line:col: error: Kind: message", the line and a caret. */
/* Print one diagnostic, with clang's colours when color: the location bold, the severity
 * red/magenta/cyan and bold, the message bold, the caret green. */
static void diag_print(const tinyc_diag *d, FILE *out, int color)
{
	static const char *sev[] = {"error", "warning", "note"};
	static const char *sev_color[] = {"\033[1;31m", "\033[1;35m", "\033[1;36m"};
	const char *bold = color ? "\033[1m" : "", *reset = color ? "\033[0m" : "";
	fputs(bold, out);
	if (d->file) {
		fputs(d->file, out);
		if (d->loc.line > 0) {
			fprintf(out, ":%d", d->loc.line);
			if (d->loc.col > 0)
				fprintf(out, ":%d", d->loc.col);
		}
		fputs(": ", out);
	} else {
		fputs("tinyc: ", out);
	}
	fprintf(out, "%s%s%s: %s", color ? sev_color[d->severity] : "", sev[d->severity], reset, bold);
	if (d->kind)
		fprintf(out, "%s: ", d->kind);
	fprintf(out, "%s%s\n", d->msg ? d->msg : "(out of memory)", reset);
	if (d->line_text) {
		fprintf(out, "  %s\n", d->line_text);
		if (d->loc.col > 0) {
			fputs("  ", out);
			size_t n = strlen(d->line_text);
			for (int i = 1; i < d->loc.col; i++)	/* keep tabs so the caret lines up */
				fputc((size_t)(i - 1) < n && d->line_text[i - 1] == '\t' ? '\t' : ' ', out);
			fprintf(out, "%s^%s\n", color ? "\033[1;32m" : "", reset);
		}
	}
}

void tinyc_diag_print(const tinyc_diag *d, FILE *out)
{
	diag_print(d, out, 0);
}

void tinyc_ctx_set_no_color(tinyc_ctx *ctx, int no_color)
{
	ctx->no_color = no_color;
}

/* Colour only on a terminal, and never when the context says not to. */
static int use_color(const tinyc_ctx *ctx, FILE *out)
{
	int fd = fileno(out);
	return fd >= 0 && isatty(fd) && !ctx->no_color;
}

void tinyc_ctx_print_diags(const tinyc_ctx *ctx, FILE *out)
{
	int color = use_color(ctx, out);
	for (int i = 0; i < ctx->ndiag; i++)
		diag_print(&ctx->diag[i], out, color);
	if (ctx->oom)
		fputs("tinyc: error: OutOfMemory: some diagnostics were lost\n", out);
}

/* Read a whole file; a missing or unreadable file is an IOError diagnostic. */
tinyc_source *tinyc_source_read(tinyc_ctx *ctx, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		tinyc_error(ctx, "IOError", "cannot open '%s': %s", path, strerror(errno));
		return NULL;
	}
	size_t cap = 4096, len = 0;
	char *text = malloc(cap);
	while (text) {
		if (len + 1 >= cap) {
			char *t = realloc(text, cap * 2);
			if (!t) {
				free(text);
				text = NULL;
				break;
			}
			text = t;
			cap *= 2;
		}
		size_t n = fread(text + len, 1, cap - len - 1, f);
		len += n;
		if (n == 0)
			break;
	}
	int err = ferror(f);
	fclose(f);
	if (!text) {
		tinyc_error(ctx, "OutOfMemory", "cannot hold '%s' in memory", path);
		return NULL;
	}
	if (err) {
		free(text);
		tinyc_error(ctx, "IOError", "cannot read '%s'", path);
		return NULL;
	}
	text[len] = 0;
	tinyc_source *src = calloc(1, sizeof(*src));
	if (!src || !(src->name = strdup(path))) {
		free(src);
		free(text);
		tinyc_error(ctx, "OutOfMemory", "cannot hold '%s' in memory", path);
		return NULL;
	}
	src->text = text;
	src->len = len;
	return src;
}

tinyc_source *tinyc_source_from_string(const char *name, const char *text, size_t len)
{
	tinyc_source *src = calloc(1, sizeof(*src));
	if (!src)
		return NULL;
	src->name = strdup(name ? name : "<string>");
	src->text = malloc(len + 1);
	if (!src->name || !src->text) {
		tinyc_source_free(src);
		return NULL;
	}
	memcpy(src->text, text, len);
	src->text[len] = 0;
	src->len = len;
	return src;
}

void tinyc_source_free(tinyc_source *src)
{
	if (!src)
		return;
	free(src->name);
	free(src->text);
	free(src);
}

void *tinyc_malloc(tinyc_ctx *ctx, size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		tinyc_error(ctx, "OutOfMemory", "cannot allocate %zu bytes", n);
	return p;
}

void *tinyc_calloc(tinyc_ctx *ctx, size_t count, size_t size)
{
	void *p = calloc(count ? count : 1, size ? size : 1);
	if (!p)
		tinyc_error(ctx, "OutOfMemory", "cannot allocate %zu x %zu bytes", count, size);
	return p;
}

void *tinyc_realloc(tinyc_ctx *ctx, void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		tinyc_error(ctx, "OutOfMemory", "cannot allocate %zu bytes", n);
	return q;
}

char *tinyc_strdup(tinyc_ctx *ctx, const char *s)
{
	char *d = strdup(s);
	if (!d)
		tinyc_error(ctx, "OutOfMemory", "cannot allocate a string");
	return d;
}

static int buf_reserve(tinyc_buf *b, size_t extra)
{
	if (b->oom)
		return -1;
	if (b->len + extra + 1 <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + extra + 1)
		cap *= 2;
	char *d = realloc(b->data, cap);
	if (!d) {
		b->oom = 1;
		return -1;
	}
	b->data = d;
	b->cap = cap;
	return 0;
}

/* Append formatted text to a buffer: formatted straight into the free space, and once more
 * after growing the buffer when it did not fit. */
void tinyc_buf_printf(tinyc_buf *b, const char *fmt, ...)
{
	va_list ap;
	if (buf_reserve(b, 64) < 0)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->data[b->len] = '\0';
		return;
	}
	if ((size_t)n >= b->cap - b->len) {
		if (buf_reserve(b, (size_t)n) < 0) {
			b->data[b->len] = '\0';
			return;
		}
		va_start(ap, fmt);
		vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

void tinyc_buf_puts(tinyc_buf *b, const char *s)
{
	size_t n = strlen(s);
	if (buf_reserve(b, n) < 0)
		return;
	memcpy(b->data + b->len, s, n + 1);
	b->len += n;
}

void tinyc_buf_append(tinyc_buf *b, const void *data, size_t n)
{
	if (buf_reserve(b, n) < 0)
		return;
	memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = 0;
}

void tinyc_buf_putc(tinyc_buf *b, char c)
{
	if (buf_reserve(b, 1) < 0)
		return;
	b->data[b->len++] = c;
	b->data[b->len] = 0;
}

void tinyc_buf_free(tinyc_buf *b)
{
	free(b->data);
	*b = (tinyc_buf){0};
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double tinyc_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
