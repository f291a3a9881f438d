/* tinyc context and diagnostics.
 *
 * A tinyc_ctx is the object every library call takes (in the manner of isl_ctx): it
 * collects diagnostics instead of printing or exiting, so the library never calls exit()
 * or abort() on user input.  The CLI prints what was collected, clang-style:
 *
 *   model.uop:7:12: error: BroadcastMismatch: [M,K] vs [K,N] at axis -1
 *     %6 = MUL(%3, %5) : half[M,N,K]
 *              ^
 *
 * Ownership follows isl: __tinyc_give returns a new reference the caller must free,
 * __tinyc_take consumes its argument, __tinyc_keep only borrows it.
 */
#ifndef TINYC_IR_CTX_H
#define TINYC_IR_CTX_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#define __tinyc_give
#define __tinyc_take
#define __tinyc_keep

/* A position in a source file; line and col are 1-based, 0 means "unknown". */
typedef struct tinyc_loc {
	int line;		/* 1-based line, 0 when unknown */
	int col;		/* 1-based byte column, 0 when unknown */
} tinyc_loc;

typedef enum tinyc_severity {
	TINYC_ERROR,
	TINYC_WARNING,
	TINYC_NOTE,
} tinyc_severity;

/* One diagnostic, as collected by the context. */
typedef struct tinyc_diag {
	tinyc_severity severity;
	char *kind;		/* CamelCase kind, e.g. "BroadcastMismatch" */
	char *msg;		/* the message, without kind or location */
	char *file;		/* file name, NULL for diagnostics without a file */
	tinyc_loc loc;		/* where; {0,0} when not tied to a source position */
	char *line_text;	/* copy of the source line (no newline), or NULL */
} tinyc_diag;

/* A source file registered with the context so diagnostics can quote its lines. */
typedef struct tinyc_source {
	char *name;		/* as given on the command line */
	char *text;		/* whole contents, NUL-terminated */
	size_t len;		/* bytes, excluding the terminating NUL */
} tinyc_source;

typedef struct tinyc_ctx tinyc_ctx;

__tinyc_give tinyc_ctx *tinyc_ctx_alloc(void);
void tinyc_ctx_free(__tinyc_take tinyc_ctx *ctx);

/* Report an error; loc may be {0,0}.  Returns -1 so callers can "return tinyc_error(...)". */
int tinyc_error_at(tinyc_ctx *ctx, const tinyc_source *src, tinyc_loc loc,
		   const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
int tinyc_verror_at(tinyc_ctx *ctx, const tinyc_source *src, tinyc_loc loc,
		    const char *kind, const char *fmt, va_list ap);
/* An error without a source position (I/O, runtime, usage of the library). */
int tinyc_error(tinyc_ctx *ctx, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A note attached after the previous diagnostic. */
void tinyc_note_at(tinyc_ctx *ctx, const tinyc_source *src, tinyc_loc loc,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

int tinyc_ctx_error_count(const tinyc_ctx *ctx);
int tinyc_ctx_diag_count(const tinyc_ctx *ctx);
const tinyc_diag *tinyc_ctx_diag(const tinyc_ctx *ctx, int i);
/* Move every diagnostic of src to the end of dst's (a worker thread's context into the
 * caller's); -1 when out of memory (src's are dropped then). */
int tinyc_ctx_take_diags(tinyc_ctx *dst, tinyc_ctx *src);
/* Forget all diagnostics collected so far. */
void tinyc_ctx_clear_diags(tinyc_ctx *ctx);
/* Print every diagnostic clang-style (location, kind, message, source line, caret); in
 * colour when out is a terminal, unless tinyc_ctx_set_no_color said not to. */
void tinyc_ctx_print_diags(const tinyc_ctx *ctx, FILE *out);
/* Never print ctx's diagnostics in colour (no_color != 0); the CLI sets it when the
 * NO_COLOR environment variable is set (https://no-color.org). */
void tinyc_ctx_set_no_color(tinyc_ctx *ctx, int no_color);
/* Print one diagnostic (no colour). */
void tinyc_diag_print(const tinyc_diag *d, FILE *out);

/* Read a whole file into a new source (NULL and a diagnostic on failure). */
__tinyc_give tinyc_source *tinyc_source_read(tinyc_ctx *ctx, const char *path);
/* Wrap a string as a source (copies both). */
__tinyc_give tinyc_source *tinyc_source_from_string(const char *name, const char *text,
						    size_t len);
void tinyc_source_free(__tinyc_take tinyc_source *src);

/* Checked allocation helpers: on failure they report OutOfMemory on ctx and return NULL. */
void *tinyc_malloc(tinyc_ctx *ctx, size_t n);
void *tinyc_calloc(tinyc_ctx *ctx, size_t count, size_t size);
void *tinyc_realloc(tinyc_ctx *ctx, void *p, size_t n);
char *tinyc_strdup(tinyc_ctx *ctx, const char *s);

/* printf into a new heap string (NULL on failure). */
char *tinyc_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A growable text buffer; every printer writes into one. */
typedef struct tinyc_buf {
	char *data;		/* NUL-terminated contents */
	size_t len;		/* bytes used, excluding the NUL */
	size_t cap;		/* bytes allocated */
	int oom;		/* set once an allocation failed */
} tinyc_buf;

void tinyc_buf_printf(tinyc_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tinyc_buf_puts(tinyc_buf *b, const char *s);
void tinyc_buf_putc(tinyc_buf *b, char c);
/* Append n bytes (any bytes; the contents stay NUL-terminated after them). */
void tinyc_buf_append(tinyc_buf *b, const void *data, size_t n);
void tinyc_buf_free(tinyc_buf *b);

/* The median of v[0..n) (n >= 1; sorts v): the timers' statistic. */
double tinyc_median(double *v, int n);

#endif
