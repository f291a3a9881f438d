/* The tinyc-uop v0 parser (DESIGN.md §2): text in, UOp DAG out.
 *
 * The text is read line by line; each line is one node,
 *
 *   %ID = OP(operands, literals, KEY=VALUE, ...) : DTYPE[dims]   # comment
 *
 * A problem on a line is reported and parsing goes on with the next line, so one run shows
 * several errors (at most MAX_ERRORS, then TooManyErrors ends the parse).  Nothing here
 * recurses more than MAX_DEPTH deep or does more than linear work in the size of the input.
 *
 * Diagnostic kinds reported by the parser, each at the file:line:col of the offending token:
 *   SyntaxError         the line does not follow the grammar (missing '=', '(', ')', ':',
 *                       '[', ']', ',', a malformed number or id, an unterminated string, an
 *                       unknown string escape, text after the shape, an operand after
 *                       attributes)
 *   InvalidCharacter    a NUL, control or non-ASCII byte outside comments and strings, or a
 *                       control byte inside a string
 *   UnknownOp           the op name is not in the op table (ops are upper case)
 *   UnknownDtype        the dtype after ':' or in acc= is not a dtype name or alias
 *   UndefinedValue      an operand %id is not defined on an earlier line
 *   DuplicateId         %id is defined twice
 *   InvalidAttribute    an attribute key the op does not take, a value of the wrong kind
 *                       (slot= a non-negative integer, name= a non-empty string, ...), a
 *                       required attribute missing, a literal where none belongs, CONST
 *                       without exactly one literal, strides= not matching the rank
 *   DuplicateAttribute  the same KEY= given twice on one line
 *   ArityMismatch       the number of operands differs from the op's arity
 *   InvalidDim          a dim < 1, larger than TINYC_MAX_DIM, not an integer or symbol,
 *                       or more than TINYC_MAX_RANK dims
 *   IntegerOverflow     an integer literal that does not fit in int64
 *   FloatOverflow       a float literal beyond the range of double
 *   NestingTooDeep      lists nested more than MAX_DEPTH deep
 *   ListTooLong         a list of more than MAX_LIST values
 *   GraphTooLarge       more than TINYC_MAX_NODES nodes (reported at the first node
 *                       beyond; parsing stops there)
 *   EmptyGraph          the text holds no node at all
 *   NoOutput            the graph has no OUTPUT node
 *   TooManyErrors       more than MAX_ERRORS errors: parsing stops
 * (OutOfMemory may come from the allocation helpers of ctx.c.)
 */
#include "ir/uop.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
	MAX_ERRORS = 20,	/* errors reported before TooManyErrors */
	MAX_DEPTH = 8,		/* deepest list nesting accepted */
	MAX_LIST = 4096,	/* longest list accepted */
	MAX_SHOW = 40,		/* bytes of a token quoted in a message */
};

/* Quote at most MAX_SHOW bytes of a token: use with "%.*s%s". */
#define SHOW(s, len) (int)((len) > MAX_SHOW ? MAX_SHOW : (len)), (s), ((len) > MAX_SHOW ? "..." : "")

typedef enum tokkind {
	T_EOL,			/* end of line, or a comment (which runs to the end of the line) */
	T_ID,			/* %id; s/len is the id without '%' */
	T_WORD,			/* an identifier: op, dtype, key, symbol, true/false/inf/nan */
	T_INT,			/* an integer literal */
	T_FLOAT,		/* a float literal with digits, or -inf */
	T_STRING,		/* "..."; s/len are the bytes between the quotes, still escaped */
	T_PUNCT,		/* one of = ( ) , : [ ] */
} tokkind;

typedef struct token {
	tokkind kind;
	const char *s;		/* spelling (see tokkind) */
	int len;		/* bytes in s */
	tinyc_loc loc;		/* first byte of the token */
	int64_t i;		/* T_INT */
	double f;		/* T_FLOAT */
} token;

/* An attribute value, parsed before it is checked against what the key wants. */
typedef struct value {
	enum { V_INT, V_FLOAT, V_BOOL, V_WORD, V_STRING, V_LIST } kind;
	tinyc_loc loc;		/* first token of the value */
	const char *s;		/* spelling: V_WORD, V_STRING (escaped), V_FLOAT */
	int len;		/* bytes in s */
	int64_t i;		/* V_INT, V_BOOL */
	double f;		/* V_FLOAT */
	int n;			/* V_LIST: entries */
	struct value *items;	/* V_LIST: the entries */
} value;

/* An entry of a string-keyed hash table. */
typedef struct entry {
	const char *key;	/* NULL: empty slot */
	int len;		/* bytes in key */
	int val;		/* ids: node index or -1 (defined on a bad line); syms: symbol */
	int line;		/* ids: line of the definition */
} entry;

/* Open-addressing hash table; keeps lookups linear-time over a whole file. */
typedef struct table {
	entry *e;		/* cap slots */
	size_t cap;		/* a power of two, or 0 */
	size_t n;		/* used slots */
	int owns;		/* keys are copies to free */
} table;

typedef struct parser {
	tinyc_ctx *ctx;
	const tinyc_source *src;
	tinyc_graph *g;		/* the graph being built */
	const char *bol;	/* first byte of the current line */
	const char *eol;	/* end of the current line (its '\n', "\r\n" or the end) */
	const char *cur;	/* lexer position within the line */
	int line;		/* 1-based number of the current line */
	token tok;		/* the lookahead token */
	int nerr;		/* errors reported by this parse */
	int stopped;		/* TooManyErrors was reported */
	int line_bad;		/* the current line had a problem: it makes no node */
	int nstrides;		/* entries of the current line's strides= */
	table ids;		/* %id -> node */
	table syms;		/* symbol name -> index in g->syms */
} parser;

/* Report an error at loc; after MAX_ERRORS of them, report TooManyErrors and stop.
 * Always returns -1. */
static int perr(parser *p, tinyc_loc loc, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int perr(parser *p, tinyc_loc loc, const char *kind, const char *fmt, ...)
{
	p->line_bad = 1;
	if (p->stopped)
		return -1;
	if (p->nerr >= MAX_ERRORS) {
		tinyc_error_at(p->ctx, p->src, loc, "TooManyErrors",
			       "more than %d errors, giving up", MAX_ERRORS);
		p->stopped = 1;
		return -1;
	}
	va_list ap;
	va_start(ap, fmt);
	tinyc_verror_at(p->ctx, p->src, loc, kind, fmt, ap);
	va_end(ap);
	p->nerr++;
	return -1;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_alpha(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static int is_ident(char c)
{
	return is_alpha(c) || is_digit(c);
}

static int spells(const char *s, int len, const char *w)
{
	return (int)strlen(w) == len && !memcmp(s, w, (size_t)len);
}

/* The location of byte s of the current line. */
static tinyc_loc at(const parser *p, const char *s)
{
	ptrdiff_t col = s - p->bol + 1;
	return (tinyc_loc){p->line, col > INT32_MAX ? INT32_MAX : (int)col};
}

/* FNV-1a. */
static size_t hash(const char *s, int len)
{
	uint64_t h = 1469598103934665603u;
	for (int i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211u;
	return (size_t)h;
}

/* The entry for key, or NULL. */
static entry *table_find(const table *t, const char *s, int len)
{
	if (!t->cap)
		return NULL;
	for (size_t i = hash(s, len) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		entry *e = &t->e[i];
		if (!e->key)
			return NULL;
		if (e->len == len && !memcmp(e->key, s, (size_t)len))
			return e;
	}
}

/* Insert key (known to be absent); copies it when the table owns its keys. */
static int table_add(parser *p, table *t, const char *s, int len, int val, int line)
{
	if (2 * (t->n + 1) > t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		entry *e = tinyc_calloc(p->ctx, cap, sizeof(*e));
		if (!e)
			return -1;
		for (size_t k = 0; k < t->cap; k++) {
			if (!t->e[k].key)
				continue;
			size_t i = hash(t->e[k].key, t->e[k].len) & (cap - 1);
			while (e[i].key)
				i = (i + 1) & (cap - 1);
			e[i] = t->e[k];
		}
		free(t->e);
		t->e = e;
		t->cap = cap;
	}
	const char *key = s;
	if (t->owns) {
		char *k = tinyc_malloc(p->ctx, (size_t)len + 1);
		if (!k)
			return -1;
		memcpy(k, s, (size_t)len);
		k[len] = 0;
		key = k;
	}
	size_t i = hash(s, len) & (t->cap - 1);
	while (t->e[i].key)
		i = (i + 1) & (t->cap - 1);
	t->e[i] = (entry){key, len, val, line};
	t->n++;
	return 0;
}

static void table_free(table *t)
{
	if (t->owns)
		for (size_t i = 0; i < t->cap; i++)
			free((char *)t->e[i].key);
	free(t->e);
}

/* The index of size symbol name, added to the graph when new. */
static int intern_symbol(parser *p, const char *s, int len)
{
	entry *e = table_find(&p->syms, s, len);
	if (e)
		return e->val;
	int sym = tinyc_graph_symbol_new(p->ctx, p->g, s, len);
	if (sym < 0 || table_add(p, &p->syms, p->g->syms[sym], len, sym, 0) < 0) {
		p->line_bad = 1;
		return -1;
	}
	return sym;
}

/* Lex a number starting at s: [-]digits[.digits][(e|E)[+-]digits], or -inf. */
static int lex_number(parser *p, token *t, const char *s)
{
	const char *q = s, *e = p->eol;
	int neg = 0;
	if (*q == '-') {
		neg = 1;
		q++;
		if (q < e && is_alpha(*q)) {
			const char *w = q;
			while (q < e && is_ident(*q))
				q++;
			if (!spells(w, (int)(q - w), "inf"))
				return perr(p, t->loc, "SyntaxError", "expected a number after '-'");
			t->kind = T_FLOAT;
			t->f = -INFINITY;
			t->len = (int)(q - s);
			p->cur = q;
			return 0;
		}
		if (q == e || !is_digit(*q))
			return perr(p, t->loc, "SyntaxError", "expected a number after '-'");
	}
	uint64_t mag = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	int overflow = 0, isfloat = 0;
	for (; q < e && is_digit(*q); q++) {
		unsigned d = (unsigned)(*q - '0');
		if (mag > (limit - d) / 10)
			overflow = 1;
		else
			mag = mag * 10 + d;
	}
	int bad = 0;
	if (q < e && *q == '.') {
		isfloat = 1;
		q++;
		if (q == e || !is_digit(*q))
			bad = 1;
		while (q < e && is_digit(*q))
			q++;
	}
	if (!bad && q < e && (*q == 'e' || *q == 'E')) {
		isfloat = 1;
		q++;
		if (q < e && (*q == '+' || *q == '-'))
			q++;
		if (q == e || !is_digit(*q))
			bad = 1;
		while (q < e && is_digit(*q))
			q++;
	}
	if (bad || (q < e && (is_ident(*q) || *q == '.'))) {
		while (q < e && (is_ident(*q) || *q == '.' || *q == '+' || *q == '-'))
			q++;
		return perr(p, t->loc, "SyntaxError", "malformed number '%.*s%s'",
			    SHOW(s, q - s));
	}
	t->len = (int)(q - s);
	p->cur = q;
	if (isfloat) {
		char small[64], *buf = small;
		if ((size_t)t->len >= sizeof(small) &&
		    !(buf = tinyc_malloc(p->ctx, (size_t)t->len + 1))) {
			p->line_bad = 1;
			return -1;
		}
		memcpy(buf, s, (size_t)t->len);
		buf[t->len] = 0;
		errno = 0;
		t->f = strtod(buf, NULL);
		int range = errno == ERANGE && isinf(t->f);
		if (buf != small)
			free(buf);
		if (range)
			return perr(p, t->loc, "FloatOverflow", "%.*s%s is beyond the range of a double",
				    SHOW(s, t->len));
		t->kind = T_FLOAT;
		return 0;
	}
	if (overflow)
		return perr(p, t->loc, "IntegerOverflow", "%.*s%s does not fit in a 64-bit integer",
			    SHOW(s, t->len));
	t->kind = T_INT;
	t->i = neg ? (mag > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
	return 0;
}

/* Lex a string starting at the '"' at s.  Escapes: \" and \\. */
static int lex_string(parser *p, token *t, const char *s)
{
	const char *q = s + 1, *e = p->eol;
	while (q < e && *q != '"') {
		unsigned char c = (unsigned char)*q;
		if (c == '\\') {
			if (q + 1 < e && (q[1] == '"' || q[1] == '\\')) {
				q += 2;
				continue;
			}
			return perr(p, at(p, q), "SyntaxError",
				    "unknown escape in a string (only \\\" and \\\\ are known)");
		}
		if (c < 0x20 || c == 0x7f)
			return perr(p, at(p, q), "InvalidCharacter",
				    "control byte 0x%02x in a string", c);
		q++;
	}
	if (q == e)
		return perr(p, t->loc, "SyntaxError", "unterminated string");
	t->kind = T_STRING;
	t->s = s + 1;
	t->len = (int)(q - s - 1);
	p->cur = q + 1;
	return 0;
}

/* Read the next token of the line into p->tok.  -1: an error was reported. */
static int next(parser *p)
{
	token *t = &p->tok;
	const char *s = p->cur, *e = p->eol;
	while (s < e && (*s == ' ' || *s == '\t' || *s == '\r'))
		s++;
	*t = (token){0};
	t->loc = at(p, s);
	t->s = s;
	t->len = 1;
	if (s == e || *s == '#') {
		t->kind = T_EOL;
		t->len = 0;
		p->cur = s;
		return 0;
	}
	unsigned char c = (unsigned char)*s;
	if (c == '%') {
		const char *q = s + 1;
		if (q < e && is_digit(*q)) {
			while (q < e && is_digit(*q))
				q++;
			if (q < e && is_alpha(*q)) {
				while (q < e && is_ident(*q))
					q++;
				return perr(p, t->loc, "SyntaxError",
					    "invalid id '%.*s%s': an id is all digits or starts with a letter",
					    SHOW(s, q - s));
			}
		} else if (q < e && is_alpha(*q)) {
			while (q < e && is_ident(*q))
				q++;
		} else {
			return perr(p, t->loc, "SyntaxError", "expected an id after '%%'");
		}
		t->kind = T_ID;
		t->s = s + 1;
		t->len = (int)(q - s - 1);
		p->cur = q;
		return 0;
	}
	if (is_alpha((char)c)) {
		const char *q = s;
		while (q < e && is_ident(*q))
			q++;
		t->kind = T_WORD;
		t->len = (int)(q - s);
		p->cur = q;
		return 0;
	}
	if (is_digit((char)c) || c == '-')
		return lex_number(p, t, s);
	if (c == '"')
		return lex_string(p, t, s);
	if (c && strchr("=(),:[]", c)) {
		t->kind = T_PUNCT;
		p->cur = s + 1;
		return 0;
	}
	if (c == 0)
		return perr(p, t->loc, "InvalidCharacter", "NUL byte in the text");
	if (c < 0x20 || c >= 0x7f)
		return perr(p, t->loc, "InvalidCharacter", "byte 0x%02x is not allowed here", c);
	return perr(p, t->loc, "SyntaxError", "unexpected character '%c'", c);
}

/* Whether the lookahead is the punctuation c. */
static int is_punct(const parser *p, char c)
{
	return p->tok.kind == T_PUNCT && *p->tok.s == c;
}

/* A short description of the lookahead for "expected X, got Y" messages. */
static int describe(const parser *p, char *buf, size_t n)
{
	const token *t = &p->tok;
	if (t->kind == T_EOL)
		return snprintf(buf, n, "the end of the line");
	if (t->kind == T_STRING)
		return snprintf(buf, n, "a string");
	int len = t->kind == T_ID ? t->len + 1 : t->len;
	const char *s = t->kind == T_ID ? t->s - 1 : t->s;
	return snprintf(buf, n, "'%.*s%s'", SHOW(s, len));
}

/* Report "expected WHAT, got ..." at the lookahead. */
static int expected(parser *p, const char *what)
{
	char got[64];
	describe(p, got, sizeof(got));
	return perr(p, p->tok.loc, "SyntaxError", "expected %s, got %s", what, got);
}

/* Consume the punctuation c, or report what was expected. */
static int expect(parser *p, char c, const char *what)
{
	if (!is_punct(p, c))
		return expected(p, what);
	return next(p);
}

static void value_free(value *v)
{
	if (v->kind == V_LIST) {
		for (int i = 0; i < v->n; i++)
			value_free(&v->items[i]);
		free(v->items);
	}
	*v = (value){0};
}

/* Turn a literal token (or the word true/false/inf/nan) into a value; 0 if it is none. */
static int literal_value(const token *t, value *v)
{
	v->loc = t->loc;
	v->s = t->s;
	v->len = t->len;
	if (t->kind == T_INT) {
		v->kind = V_INT;
		v->i = t->i;
		v->f = (double)t->i;
		return 1;
	}
	if (t->kind == T_FLOAT) {
		v->kind = V_FLOAT;
		v->f = t->f;
		return 1;
	}
	if (t->kind != T_WORD)
		return 0;
	if (spells(t->s, t->len, "true") || spells(t->s, t->len, "false")) {
		v->kind = V_BOOL;
		v->i = *t->s == 't';
		return 1;
	}
	if (spells(t->s, t->len, "inf") || spells(t->s, t->len, "nan")) {
		v->kind = V_FLOAT;
		v->f = *t->s == 'i' ? INFINITY : NAN;
		return 1;
	}
	return 0;
}

/* How a list that is too long is reported. */
typedef struct listcap {
	int max;		/* most entries accepted */
	const char *kind;	/* diagnostic kind */
	const char *what;	/* "rank exceeds 16" etc. */
} listcap;

static const listcap generic_cap = {MAX_LIST, "ListTooLong", "a list holds at most 4096 values"};

/* VALUE := LITERAL | IDENT | STRING | '[' [VALUE {',' VALUE}] ']'.  The top-level list
 * is bounded by cap, nested ones by generic_cap; nesting by MAX_DEPTH. */
static int parse_value(parser *p, value *v, int depth, const listcap *cap)
{
	token *t = &p->tok;
	*v = (value){0};
	v->loc = t->loc;
	if (literal_value(t, v))
		return next(p);
	if (t->kind == T_WORD || t->kind == T_STRING) {
		v->kind = t->kind == T_WORD ? V_WORD : V_STRING;
		v->s = t->s;
		v->len = t->len;
		return next(p);
	}
	if (!is_punct(p, '['))
		return expected(p, "a value");
	if (depth >= MAX_DEPTH)
		return perr(p, t->loc, "NestingTooDeep", "lists nest at most %d deep", MAX_DEPTH);
	v->kind = V_LIST;
	if (next(p) < 0)
		return -1;
	if (is_punct(p, ']'))
		return next(p);
	int room = 0;
	for (;;) {
		if (v->n >= cap->max)
			return perr(p, p->tok.loc, cap->kind, "%s", cap->what);
		if (v->n == room) {
			room = room ? 2 * room : 4;
			value *items = tinyc_realloc(p->ctx, v->items, (size_t)room * sizeof(*items));
			if (!items) {
				p->line_bad = 1;
				return -1;
			}
			v->items = items;
		}
		value *item = &v->items[v->n++];
		if (parse_value(p, item, depth + 1, &generic_cap) < 0)
			return -1;
		if (is_punct(p, ']'))
			return next(p);
		if (expect(p, ',', "',' or ']'") < 0)
			return -1;
	}
}

/* A dim: an integer in [1, TINYC_MAX_DIM] or a symbol. */
static int to_dim(parser *p, const value *v, tinyc_dim *d)
{
	d->sym = -1;
	d->val = 0;
	if (v->kind == V_INT) {
		if (v->i < 1)
			return perr(p, v->loc, "InvalidDim", "dim %lld is not a size (sizes are >= 1)",
				    (long long)v->i);
		if (v->i > TINYC_MAX_DIM)
			return perr(p, v->loc, "InvalidDim",
				    "dim %lld is larger than the largest size 2^40", (long long)v->i);
		d->val = v->i;
		return 0;
	}
	if (v->kind == V_WORD) {
		d->sym = intern_symbol(p, v->s, v->len);
		return d->sym < 0 ? -1 : 0;
	}
	return perr(p, v->loc, "InvalidDim", "a dim is an integer >= 1 or a symbol");
}

/* A list of dims (the line's shape, or shape=). */
static int to_dims(parser *p, const value *v, tinyc_dim **out, int *n)
{
	if (v->kind != V_LIST)
		return perr(p, v->loc, "InvalidDim", "expected a list of dims like [M,4]");
	tinyc_dim *d = tinyc_calloc(p->ctx, (size_t)v->n, sizeof(*d));
	if (!d) {
		p->line_bad = 1;
		return -1;
	}
	for (int i = 0; i < v->n; i++)
		if (to_dim(p, &v->items[i], &d[i]) < 0) {
			free(d);
			return -1;
		}
	*out = d;
	*n = v->n;
	return 0;
}

/* Report that attribute a has a value of the wrong kind. */
static int bad_kind(parser *p, const value *v, tinyc_attr a, const char *want)
{
	return perr(p, v->loc, "InvalidAttribute", "%s= takes %s", tinyc_attr_name(a), want);
}

/* A list of integers (perm=, axes=). */
static int to_ints(parser *p, const value *v, tinyc_attr a, int64_t **out, int *n)
{
	if (v->kind != V_LIST)
		return bad_kind(p, v, a, "a list of integers");
	for (int i = 0; i < v->n; i++)
		if (v->items[i].kind != V_INT)
			return bad_kind(p, &v->items[i], a, "a list of integers");
	int64_t *x = tinyc_calloc(p->ctx, (size_t)v->n, sizeof(*x));
	if (!x) {
		p->line_bad = 1;
		return -1;
	}
	for (int i = 0; i < v->n; i++)
		x[i] = v->items[i].i;
	*out = x;
	*n = v->n;
	return 0;
}

/* A list of integer pairs (pads=, bounds=). */
static int to_pairs(parser *p, const value *v, tinyc_attr a, int64_t (**out)[2], int *n)
{
	const char *want = a == TINYC_ATTR_PADS ? "a list of [before,after] pairs"
						: "a list of [start,end] pairs";
	if (v->kind != V_LIST)
		return bad_kind(p, v, a, want);
	for (int i = 0; i < v->n; i++) {
		const value *e = &v->items[i];
		if (e->kind != V_LIST || e->n != 2 || e->items[0].kind != V_INT ||
		    e->items[1].kind != V_INT)
			return bad_kind(p, e, a, want);
	}
	int64_t(*x)[2] = tinyc_calloc(p->ctx, (size_t)v->n, sizeof(*x));
	if (!x) {
		p->line_bad = 1;
		return -1;
	}
	for (int i = 0; i < v->n; i++) {
		x[i][0] = v->items[i].items[0].i;
		x[i][1] = v->items[i].items[1].i;
	}
	*out = x;
	*n = v->n;
	return 0;
}

/* The contents of a string value with its escapes resolved. */
static char *unescape(parser *p, const value *v)
{
	char *s = tinyc_malloc(p->ctx, (size_t)v->len + 1);
	if (!s) {
		p->line_bad = 1;
		return NULL;
	}
	int k = 0;
	for (int i = 0; i < v->len; i++) {
		if (v->s[i] == '\\')
			i++;
		s[k++] = v->s[i];
	}
	s[k] = 0;
	return s;
}

/* Check the value of attribute a and store it in u. */
static int apply_attr(parser *p, tinyc_uop *u, tinyc_attr a, const value *v)
{
	switch (a) {
	case TINYC_ATTR_SLOT:
		if (v->kind != V_INT || v->i < 0 || v->i > INT32_MAX)
			return bad_kind(p, v, a, "an integer from 0 to 2^31-1");
		u->slot = v->i;
		return 0;
	case TINYC_ATTR_NAME:
		if (v->kind != V_STRING || v->len == 0)
			return bad_kind(p, v, a, "a non-empty string");
		return (u->name = unescape(p, v)) ? 0 : -1;
	case TINYC_ATTR_STRIDES: {
		if (v->kind != V_LIST)
			return bad_kind(p, v, a, "a list of strides like [N,1]");
		for (int i = 0; i < v->n; i++)
			if (v->items[i].kind == V_INT ? v->items[i].i < 0
						      : v->items[i].kind != V_WORD)
				return bad_kind(p, &v->items[i], a,
						"non-negative integers or symbols");
		tinyc_dim *d = tinyc_calloc(p->ctx, (size_t)v->n, sizeof(*d));
		if (!d) {
			p->line_bad = 1;
			return -1;
		}
		for (int i = 0; i < v->n; i++) {
			const value *e = &v->items[i];
			d[i].sym = e->kind == V_WORD ? intern_symbol(p, e->s, e->len) : -1;
			d[i].val = e->kind == V_INT ? e->i : 0;
		}
		u->strides = d;
		p->nstrides = v->n;
		return 0;
	}
	case TINYC_ATTR_SHAPE:
		return to_dims(p, v, &u->attr_shape, &u->nattr_shape);
	case TINYC_ATTR_PERM:
	case TINYC_ATTR_AXES:
		return to_ints(p, v, a, &u->axes, &u->naxes);
	case TINYC_ATTR_PADS:
	case TINYC_ATTR_BOUNDS:
		return to_pairs(p, v, a, &u->pairs, &u->npairs);
	case TINYC_ATTR_OP:
		if (v->kind == V_WORD) {
			static const tinyc_redop r[] = {TINYC_RED_ADD, TINYC_RED_MAX, TINYC_RED_MUL};
			for (int i = 0; i < 3; i++)
				if (spells(v->s, v->len, tinyc_redop_name(r[i]))) {
					u->redop = r[i];
					return 0;
				}
		}
		return bad_kind(p, v, a, "ADD, MAX or MUL");
	case TINYC_ATTR_KEEPDIM:
		if (v->kind != V_BOOL)
			return bad_kind(p, v, a, "true or false");
		u->keepdim = (int)v->i;
		return 0;
	case TINYC_ATTR_ACC:
		if (v->kind != V_WORD)
			return bad_kind(p, v, a, "a dtype");
		u->acc = tinyc_dtype_from_name(v->s, v->len);
		if (u->acc == TINYC_DTYPE_NONE)
			return perr(p, v->loc, "UnknownDtype", "unknown dtype '%.*s%s'",
				    SHOW(v->s, v->len));
		return 0;
	default:
		return perr(p, v->loc, "InvalidAttribute", "unknown attribute");
	}
}

/* The list of attribute keys op takes, for messages ("shape" or "nothing"). */
static void attr_list(tinyc_op op, char *buf, size_t n)
{
	size_t k = 0;
	buf[0] = 0;
	for (int a = 0; a < TINYC_ATTR_COUNT; a++)
		if (tinyc_op_attr(op, (tinyc_attr)a) && k < n)
			k += (size_t)snprintf(buf + k, n - k, "%s%s=", k ? ", " : "",
					      tinyc_attr_name((tinyc_attr)a));
	if (!buf[0])
		snprintf(buf, n, "no attributes");
}

/* How long a list attribute a may be, and how an overlong one is reported. */
static const listcap *attr_cap(tinyc_attr a)
{
	static const listcap dims = {TINYC_MAX_RANK, "InvalidDim", "rank exceeds 16"};
	static const listcap ents = {TINYC_MAX_RANK, "InvalidAttribute",
				     "more than 16 entries (the highest rank is 16)"};
	switch (a) {
	case TINYC_ATTR_SHAPE:
	case TINYC_ATTR_STRIDES:
		return &dims;
	case TINYC_ATTR_PERM:
	case TINYC_ATTR_AXES:
	case TINYC_ATTR_PADS:
	case TINYC_ATTR_BOUNDS:
		return &ents;
	default:
		return &generic_cap;
	}
}

/* Progress through the items of one line. */
typedef struct items {
	int nops;		/* operands seen */
	int nlit;		/* literals seen */
	int seen_attr;		/* a literal or attribute was seen: no more operands */
	unsigned keys;		/* bit per tinyc_attr given */
	tinyc_loc extra;	/* the first operand beyond the op's arity */
} items;

/* KEY '=' VALUE; the key word has been consumed, the lookahead is '='. */
static int parse_attr(parser *p, tinyc_uop *u, items *it, const token *key)
{
	if (next(p) < 0)
		return -1;
	tinyc_attr a = tinyc_attr_from_name(key->s, key->len);
	int takes = a == TINYC_ATTR_NONE ? 0 : tinyc_op_attr(u->op, a);
	value v;
	int rc = parse_value(p, &v, 0, takes ? attr_cap(a) : &generic_cap);
	if (rc == 0) {
		const char *op = tinyc_op_info(u->op)->name;
		if (!takes) {
			char list[128];
			attr_list(u->op, list, sizeof(list));
			perr(p, key->loc, "InvalidAttribute", "%s has no attribute '%.*s%s' (it takes %s)",
			     op, SHOW(key->s, key->len), list);
		} else if (it->keys & (1u << a)) {
			perr(p, key->loc, "DuplicateAttribute", "%s= is given twice",
			     tinyc_attr_name(a));
		} else {
			it->keys |= 1u << a;
			u->attr_locs[a] = v.loc;
			apply_attr(p, u, a, &v);
		}
	}
	value_free(&v);
	return rc;
}

/* A positional literal: CONST's value.  The caller consumes its token. */
static int parse_literal(parser *p, tinyc_uop *u, items *it, const value *v)
{
	if (!u->attr_loc.line)
		u->attr_loc = v->loc;
	it->seen_attr = 1;
	it->nlit++;
	if (u->op != TINYC_OP_CONST)
		return perr(p, v->loc, "InvalidAttribute", "%s takes no literal (only CONST does)",
			    tinyc_op_info(u->op)->name);
	if (it->nlit > 1)
		return perr(p, v->loc, "InvalidAttribute", "CONST takes exactly one literal");
	u->lit.kind = v->kind == V_INT ? TINYC_LIT_INT
		      : v->kind == V_BOOL ? TINYC_LIT_BOOL : TINYC_LIT_FLOAT;
	u->lit.i = v->i;
	u->lit.f = v->kind == V_BOOL ? (double)v->i : v->f;
	if (!(u->lit.text = tinyc_malloc(p->ctx, (size_t)v->len + 1))) {
		p->line_bad = 1;
		return -1;
	}
	memcpy(u->lit.text, v->s, (size_t)v->len);
	u->lit.text[v->len] = 0;
	return 0;
}

/* An operand %id. */
static void parse_operand(parser *p, tinyc_uop *u, items *it)
{
	token *t = &p->tok;
	if (it->seen_attr)
		perr(p, t->loc, "SyntaxError", "operands come before literals and attributes");
	entry *e = table_find(&p->ids, t->s, t->len);
	if (!e)
		perr(p, t->loc, "UndefinedValue", "%%%.*s%s is not defined before this line",
		     SHOW(t->s, t->len));
	else if (e->val < 0)
		p->line_bad = 1;	/* its own line was bad and said so */
	if (it->nops < 3) {
		u->src[it->nops] = e ? e->val : -1;
		u->src_loc[it->nops] = t->loc;
	}
	if (it->nops == tinyc_op_info(u->op)->arity)
		it->extra = t->loc;
	it->nops++;
}

/* '(' [item {',' item}] ')'; the lookahead is the '('. */
static int parse_items(parser *p, tinyc_uop *u, items *it)
{
	if (next(p) < 0)
		return -1;
	if (is_punct(p, ')'))
		return next(p);
	for (;;) {
		token t = p->tok;
		value v;
		if (t.kind == T_ID) {
			parse_operand(p, u, it);
			if (next(p) < 0)
				return -1;
		} else if (t.kind == T_WORD) {
			if (next(p) < 0)
				return -1;
			if (is_punct(p, '=')) {
				if (!u->attr_loc.line)
					u->attr_loc = t.loc;
				it->seen_attr = 1;
				if (parse_attr(p, u, it, &t) < 0)
					return -1;
			} else if (literal_value(&t, &v)) {
				parse_literal(p, u, it, &v);
			} else {
				return perr(p, t.loc, "SyntaxError", "expected '=' after '%.*s%s'",
					    SHOW(t.s, t.len));
			}
		} else if (literal_value(&t, &v)) {
			parse_literal(p, u, it, &v);
			if (next(p) < 0)
				return -1;
		} else {
			return expected(p, "an operand %id, a literal or KEY=VALUE");
		}
		if (is_punct(p, ')'))
			return next(p);
		if (expect(p, ',', "',' or ')'") < 0)
			return -1;
		if (is_punct(p, ')'))
			return expected(p, "an item after ','");
	}
}

/* The checks that need the whole line: arity, CONST's literal, required attributes,
 * strides= against the rank. */
static void check_line(parser *p, tinyc_uop *u, const items *it)
{
	const tinyc_opinfo *in = tinyc_op_info(u->op);
	if (it->nops > in->arity)
		perr(p, it->extra, "ArityMismatch", "%s takes %d operand%s, got %d", in->name,
		     in->arity, in->arity == 1 ? "" : "s", it->nops);
	else if (it->nops < in->arity)
		perr(p, u->op_loc, "ArityMismatch", "%s takes %d operand%s, got %d", in->name,
		     in->arity, in->arity == 1 ? "" : "s", it->nops);
	u->nsrc = it->nops < 3 ? it->nops : 3;
	if (u->op == TINYC_OP_CONST && it->nlit == 0)
		perr(p, u->op_loc, "InvalidAttribute", "CONST needs its value, e.g. CONST(1.5)");
	for (int a = 0; a < TINYC_ATTR_COUNT; a++)
		if (tinyc_op_attr(u->op, (tinyc_attr)a) == 2 && !(it->keys & (1u << a)))
			perr(p, u->op_loc, "InvalidAttribute", "%s needs %s=", in->name,
			     tinyc_attr_name((tinyc_attr)a));
	if (u->strides && p->nstrides != u->rank)
		perr(p, u->attr_locs[TINYC_ATTR_STRIDES], "InvalidAttribute",
		     "strides= has %d entr%s but the shape has rank %d", p->nstrides,
		     p->nstrides == 1 ? "y" : "ies", u->rank);
}

/* Everything after "%ID": '=' OP '(' items ')' ':' DTYPE '[' dims ']'. */
static int parse_node(parser *p, tinyc_uop *u)
{
	if (next(p) < 0 || expect(p, '=', "'=' after the id") < 0)
		return -1;
	if (p->tok.kind != T_WORD)
		return expected(p, "an op name");
	token t = p->tok;
	u->op_loc = t.loc;
	u->op = tinyc_op_from_name(t.s, t.len);
	if (u->op == TINYC_OP_NONE) {
		int lower = 0;
		for (int i = 0; i < t.len; i++)
			lower |= t.s[i] >= 'a' && t.s[i] <= 'z';
		return perr(p, t.loc, "UnknownOp", "unknown op '%.*s%s'%s", SHOW(t.s, t.len),
			    lower ? " (ops are upper case)" : "");
	}
	if (next(p) < 0)
		return -1;
	if (!is_punct(p, '('))
		return expected(p, "'(' after the op name");
	items it = {0};
	if (parse_items(p, u, &it) < 0 || expect(p, ':', "':' and a dtype after ')'") < 0)
		return -1;
	if (p->tok.kind != T_WORD)
		return expected(p, "a dtype after ':'");
	t = p->tok;
	u->type_loc = t.loc;
	u->dtype = tinyc_dtype_from_name(t.s, t.len);
	if (u->dtype == TINYC_DTYPE_NONE)
		perr(p, t.loc, "UnknownDtype", "unknown dtype '%.*s%s'", SHOW(t.s, t.len));
	if (next(p) < 0)
		return -1;
	if (!is_punct(p, '['))
		return expected(p, "'[' and the shape after the dtype");
	u->shape_loc = p->tok.loc;
	static const listcap rank_cap = {TINYC_MAX_RANK, "InvalidDim", "rank exceeds 16"};
	value v;
	int rc = parse_value(p, &v, 0, &rank_cap);
	if (rc == 0)
		rc = to_dims(p, &v, &u->shape, &u->rank);
	value_free(&v);
	if (rc < 0)
		return -1;
	if (p->tok.kind != T_EOL)
		return expected(p, "the end of the line after the shape");
	check_line(p, u, &it);
	return 0;
}

/* Parse the current line; a good line becomes a node of the graph. */
static void parse_line(parser *p)
{
	p->line_bad = 0;
	p->nstrides = 0;
	if (next(p) < 0 || p->tok.kind == T_EOL)
		return;
	if (p->tok.kind != T_ID) {
		expected(p, "a node '%ID = OP(...) : DTYPE[dims]'");
		return;
	}
	token id = p->tok;
	if (p->g->n >= TINYC_MAX_NODES) {
		perr(p, id.loc, "GraphTooLarge", "a graph holds at most %d nodes", TINYC_MAX_NODES);
		p->stopped = 1;	/* every later line would say the same */
		return;
	}
	tinyc_uop u;
	memset(&u, 0, sizeof(u));
	u.op = TINYC_OP_NONE;
	u.dtype = TINYC_DTYPE_NONE;
	u.keepdim = 1;
	u.acc = TINYC_DTYPE_NONE;
	u.src[0] = u.src[1] = u.src[2] = -1;
	u.loc = id.loc;
	entry *dup = table_find(&p->ids, id.s, id.len);
	if (dup)
		perr(p, id.loc, "DuplicateId", "%%%.*s%s is already defined on line %d",
		     SHOW(id.s, id.len), dup->line);
	parse_node(p, &u);
	int node = -1;
	if (!p->line_bad && !p->stopped && (u.id = tinyc_malloc(p->ctx, (size_t)id.len + 1))) {
		memcpy(u.id, id.s, (size_t)id.len);
		u.id[id.len] = 0;
		node = tinyc_graph_add(p->ctx, p->g, u.op, u.dtype);
	}
	if (node >= 0)
		p->g->nodes[node] = u;
	else
		tinyc_uop_clear(&u);
	if (!dup && table_add(p, &p->ids, id.s, id.len, node, p->line) < 0)
		p->line_bad = 1;
}

/* Parse a whole tinyc-uop v0 text. */
tinyc_graph *tinyc_parse(tinyc_ctx *ctx, const tinyc_source *src)
{
	if (!src || !src->text) {
		tinyc_error(ctx, "InvalidArgument", "tinyc_parse: no source");
		return NULL;
	}
	int errs0 = tinyc_ctx_error_count(ctx);
	parser p = {0};
	p.ctx = ctx;
	p.src = src;
	p.ids.owns = 1;
	if (!(p.g = tinyc_graph_alloc(ctx)))
		return NULL;
	p.g->src = src;
	const char *s = src->text, *end = src->text + src->len;
	if (src->len >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3))	/* a UTF-8 byte order mark */
		s += 3;
	for (int line = 1; !p.stopped; line++) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *le = nl ? nl : end;
		p.bol = line == 1 ? src->text : s;
		p.cur = s;
		p.eol = le > s && le[-1] == '\r' ? le - 1 : le;
		p.line = line;
		parse_line(&p);
		if (!nl)
			break;
		s = nl + 1;
	}
	if (!p.nerr && !p.stopped) {
		int out = 0;
		for (int i = 0; i < p.g->n; i++)
			out |= p.g->nodes[i].op == TINYC_OP_OUTPUT;
		if (p.g->n == 0)
			perr(&p, (tinyc_loc){1, 1}, "EmptyGraph",
			     "no nodes: a graph needs at least one BUFFER or CONST and an OUTPUT");
		else if (!out)
			perr(&p, p.g->nodes[p.g->n - 1].loc, "NoOutput",
			     "the graph has no OUTPUT node, so it computes nothing");
	}
	table_free(&p.ids);
	table_free(&p.syms);
	if (p.nerr || p.stopped || tinyc_ctx_error_count(ctx) > errs0) {
		tinyc_graph_free(p.g);
		return NULL;
	}
	return p.g;
}
