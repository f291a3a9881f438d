/* The UOp graph: op table, attribute table, graph construction and equality, symbol
 * bindings, and the shape formatter shared by every printer. */
#include "ir/uop.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const tinyc_opinfo ops[] = {
#define X(name, arity, kind, rule, dom, math) \
	{#name, arity, TINYC_KIND_##kind, TINYC_DT_##rule, TINYC_DOM_##dom, TINYC_GM_##math},
	TINYC_OPS(X)
#undef X
};

/* The table entry of op, or NULL for an op out of range. */
const tinyc_opinfo *tinyc_op_info(tinyc_op op)
{
	return op >= 0 && op < TINYC_OP_COUNT ? &ops[op] : NULL;
}

/* Whether the len bytes at s spell the NUL-terminated word w exactly. */
static int spells(const char *s, int len, const char *w)
{
	return (int)strlen(w) == len && !memcmp(s, w, (size_t)len);
}

/* Look an op up by its upper-case name; VIEW is an alias of BUFFER.  len < 0: strlen. */
tinyc_op tinyc_op_from_name(const char *s, int len)
{
	if (!s)
		return TINYC_OP_NONE;
	if (len < 0)
		len = (int)strlen(s);
	if (spells(s, len, "VIEW"))
		return TINYC_OP_BUFFER;
	for (int i = 0; i < TINYC_OP_COUNT; i++)
		if (spells(s, len, ops[i].name))
			return (tinyc_op)i;
	return TINYC_OP_NONE;
}

/* Elementwise ops of one operand that compute something (not CAST or BITCAST). */
int tinyc_op_is_unary(tinyc_op op)
{
	const tinyc_opinfo *in = tinyc_op_info(op);
	return in && in->kind == TINYC_KIND_ELEMENTWISE && in->arity == 1 &&
	       op != TINYC_OP_CAST && op != TINYC_OP_BITCAST;
}

/* Elementwise ops of two operands (arithmetic, comparisons, bitwise). */
int tinyc_op_is_binary(tinyc_op op)
{
	const tinyc_opinfo *in = tinyc_op_info(op);
	return in && in->kind == TINYC_KIND_ELEMENTWISE && in->arity == 2;
}

/* The spelling of a REDUCE op= value. */
const char *tinyc_redop_name(tinyc_redop r)
{
	switch (r) {
	case TINYC_RED_ADD:
		return "ADD";
	case TINYC_RED_MAX:
		return "MAX";
	case TINYC_RED_MUL:
		return "MUL";
	}
	return "?";
}

static const char *const attr_names[TINYC_ATTR_COUNT] = {
	[TINYC_ATTR_SLOT] = "slot",	  [TINYC_ATTR_NAME] = "name",
	[TINYC_ATTR_STRIDES] = "strides", [TINYC_ATTR_SHAPE] = "shape",
	[TINYC_ATTR_PERM] = "perm",	  [TINYC_ATTR_OP] = "op",
	[TINYC_ATTR_AXES] = "axes",	  [TINYC_ATTR_KEEPDIM] = "keepdim",
	[TINYC_ATTR_ACC] = "acc",	  [TINYC_ATTR_PADS] = "pads",
	[TINYC_ATTR_BOUNDS] = "bounds",
};

/* The key spelling of an attribute. */
const char *tinyc_attr_name(tinyc_attr a)
{
	return a >= 0 && a < TINYC_ATTR_COUNT ? attr_names[a] : "?";
}

/* Look an attribute key up; len < 0: strlen. */
tinyc_attr tinyc_attr_from_name(const char *s, int len)
{
	if (!s)
		return TINYC_ATTR_NONE;
	if (len < 0)
		len = (int)strlen(s);
	for (int i = 0; i < TINYC_ATTR_COUNT; i++)
		if (spells(s, len, attr_names[i]))
			return (tinyc_attr)i;
	return TINYC_ATTR_NONE;
}

/* Which attributes each op takes (DESIGN.md §2): 0 no, 1 optional, 2 required. */
int tinyc_op_attr(tinyc_op op, tinyc_attr a)
{
	if (a < 0 || a >= TINYC_ATTR_COUNT)
		return 0;
	switch (op) {
	case TINYC_OP_BUFFER:
		return a == TINYC_ATTR_SLOT || a == TINYC_ATTR_NAME ? 2 : a == TINYC_ATTR_STRIDES;
	case TINYC_OP_OUTPUT:
		return a == TINYC_ATTR_NAME ? 2 : a == TINYC_ATTR_STRIDES;
	case TINYC_OP_RESHAPE:
	case TINYC_OP_EXPAND:
		return a == TINYC_ATTR_SHAPE ? 2 : 0;
	case TINYC_OP_PERMUTE:
		return a == TINYC_ATTR_PERM ? 2 : 0;
	case TINYC_OP_PAD:
		return a == TINYC_ATTR_PADS ? 2 : 0;
	case TINYC_OP_SHRINK:
		return a == TINYC_ATTR_BOUNDS ? 2 : 0;
	case TINYC_OP_FLIP:
		return a == TINYC_ATTR_AXES ? 2 : 0;
	case TINYC_OP_REDUCE:
		if (a == TINYC_ATTR_OP || a == TINYC_ATTR_AXES)
			return 2;
		return a == TINYC_ATTR_KEEPDIM || a == TINYC_ATTR_ACC;
	default:
		return 0;
	}
}

/* A graph with no nodes and no symbols. */
tinyc_graph *tinyc_graph_alloc(tinyc_ctx *ctx)
{
	return tinyc_calloc(ctx, 1, sizeof(tinyc_graph));
}

/* Append a node with default attributes; returns its index. */
int tinyc_graph_add(tinyc_ctx *ctx, tinyc_graph *g, tinyc_op op, tinyc_dtype dt)
{
	if (g->n == g->cap) {
		if (g->cap > (1 << 29))
			return tinyc_error(ctx, "OutOfMemory", "too many nodes");
		int cap = g->cap ? 2 * g->cap : 16;
		tinyc_uop *nodes = tinyc_realloc(ctx, g->nodes, (size_t)cap * sizeof(*nodes));
		if (!nodes)
			return -1;
		g->nodes = nodes;
		g->cap = cap;
	}
	tinyc_uop *u = &g->nodes[g->n];
	memset(u, 0, sizeof(*u));
	u->op = op;
	u->dtype = dt;
	u->keepdim = 1;
	u->acc = TINYC_DTYPE_NONE;
	u->src[0] = u->src[1] = u->src[2] = -1;
	return g->n++;
}

/* Append a symbol without looking for it; the array grows by powers of two. */
int tinyc_graph_symbol_new(tinyc_ctx *ctx, tinyc_graph *g, const char *name, int len)
{
	if (len < 0)
		len = (int)strlen(name);
	int n = g->nsym;
	if (n > (1 << 29))
		return tinyc_error(ctx, "OutOfMemory", "too many symbols");
	if (n == 0 || (n & (n - 1)) == 0) {	/* full at 0, 1, 2, 4, ... */
		char **syms = tinyc_realloc(ctx, g->syms, (size_t)(n ? 2 * n : 1) * sizeof(*syms));
		if (!syms)
			return -1;
		g->syms = syms;
	}
	char *s = tinyc_malloc(ctx, (size_t)len + 1);
	if (!s)
		return -1;
	memcpy(s, name, (size_t)len);
	s[len] = 0;
	g->syms[n] = s;
	return g->nsym++;
}

/* Find a size symbol by name, adding it when new. */
int tinyc_graph_symbol(tinyc_ctx *ctx, tinyc_graph *g, const char *name, int len)
{
	if (len < 0)
		len = (int)strlen(name);
	for (int i = 0; i < g->nsym; i++)
		if (spells(name, len, g->syms[i]))
			return i;
	return tinyc_graph_symbol_new(ctx, g, name, len);
}

/* The index of the node named %id (a linear search). */
int tinyc_graph_find(const tinyc_graph *g, const char *id)
{
	if (!g || !id)
		return -1;
	for (int i = 0; i < g->n; i++)
		if (g->nodes[i].id && !strcmp(g->nodes[i].id, id))
			return i;
	return -1;
}

/* Release a node's heap parts. */
void tinyc_uop_clear(tinyc_uop *u)
{
	if (!u)
		return;
	free(u->shape);
	free(u->id);
	free(u->name);
	free(u->strides);
	free(u->attr_shape);
	free(u->axes);
	free(u->pairs);
	free(u->lit.text);
	memset(u, 0, sizeof(*u));
}

/* Free a graph, its nodes and its symbols (not the source it points to). */
void tinyc_graph_free(tinyc_graph *g)
{
	if (!g)
		return;
	for (int i = 0; i < g->n; i++)
		tinyc_uop_clear(&g->nodes[i]);
	free(g->nodes);
	for (int i = 0; i < g->nsym; i++)
		free(g->syms[i]);
	free(g->syms);
	free(g);
}

/* Two dims are equal when both are the same constant or symbols of the same name. */
static int dim_equal(const tinyc_graph *a, const tinyc_dim *x, const tinyc_graph *b,
		     const tinyc_dim *y)
{
	if ((x->sym < 0) != (y->sym < 0))
		return 0;
	if (x->sym < 0)
		return x->val == y->val;
	if (x->sym >= a->nsym || y->sym >= b->nsym)
		return 0;
	return !strcmp(a->syms[x->sym], b->syms[y->sym]);
}

static int dims_equal(const tinyc_graph *a, const tinyc_dim *x, const tinyc_graph *b,
		      const tinyc_dim *y, int n)
{
	if (n > 0 && (!x || !y))
		return !x && !y;
	for (int i = 0; i < n; i++)
		if (!dim_equal(a, &x[i], b, &y[i]))
			return 0;
	return 1;
}

static int str_equal(const char *x, const char *y)
{
	return x == y || (x && y && !strcmp(x, y));
}

/* Literals compare by value; floats bit for bit, except that any two NaNs are equal. */
static int lit_equal(const tinyc_lit *x, const tinyc_lit *y)
{
	if (x->kind != y->kind)
		return 0;
	if (x->kind != TINYC_LIT_FLOAT)
		return x->i == y->i;
	if (isnan(x->f) || isnan(y->f))
		return isnan(x->f) && isnan(y->f);
	return memcmp(&x->f, &y->f, sizeof(double)) == 0;
}

static int node_equal(const tinyc_graph *a, const tinyc_uop *x, const tinyc_graph *b,
		      const tinyc_uop *y)
{
	if (x->op != y->op || x->dtype != y->dtype || x->rank != y->rank || x->nsrc != y->nsrc ||
	    !str_equal(x->id, y->id))
		return 0;
	if (!dims_equal(a, x->shape, b, y->shape, x->rank))
		return 0;
	for (int k = 0; k < x->nsrc && k < 3; k++)
		if (x->src[k] != y->src[k])
			return 0;
	if (x->slot != y->slot || !str_equal(x->name, y->name))
		return 0;
	if (!x->strides != !y->strides || !dims_equal(a, x->strides, b, y->strides, x->rank))
		return 0;
	if (x->nattr_shape != y->nattr_shape ||
	    !dims_equal(a, x->attr_shape, b, y->attr_shape, x->nattr_shape))
		return 0;
	if (x->naxes != y->naxes ||
	    (x->naxes && memcmp(x->axes, y->axes, (size_t)x->naxes * sizeof(int64_t))))
		return 0;
	if (x->npairs != y->npairs ||
	    (x->npairs && memcmp(x->pairs, y->pairs, (size_t)x->npairs * sizeof(*x->pairs))))
		return 0;
	if (x->redop != y->redop || x->keepdim != y->keepdim || x->acc != y->acc)
		return 0;
	return x->op != TINYC_OP_CONST || lit_equal(&x->lit, &y->lit);
}

/* Structural equality: same nodes in the same order with the same attributes, same
 * symbols; source locations and the spelling of float literals do not matter. */
int tinyc_graph_equal(const tinyc_graph *a, const tinyc_graph *b)
{
	if (!a || !b)
		return a == b;
	if (a->n != b->n || a->nsym != b->nsym)
		return 0;
	for (int i = 0; i < a->nsym; i++)
		if (!str_equal(a->syms[i], b->syms[i]))
			return 0;
	for (int i = 0; i < a->n; i++)
		if (!node_equal(a, &a->nodes[i], b, &b->nodes[i]))
			return 0;
	return 1;
}

/* Format a shape as "[M,1,K]" (no spaces); an unknown symbol prints as "?". */
void tinyc_print_shape(const tinyc_graph *g, int rank, const tinyc_dim *shape, tinyc_buf *out)
{
	tinyc_buf_putc(out, '[');
	for (int i = 0; i < rank; i++) {
		if (i)
			tinyc_buf_putc(out, ',');
		const tinyc_dim *d = &shape[i];
		if (d->sym < 0)
			tinyc_buf_printf(out, "%lld", (long long)d->val);
		else if (g && d->sym < g->nsym)
			tinyc_buf_puts(out, g->syms[d->sym]);
		else
			tinyc_buf_putc(out, '?');
	}
	tinyc_buf_putc(out, ']');
}

/* Bindings for g's symbols, all unbound. */
tinyc_bindings *tinyc_bindings_alloc(tinyc_ctx *ctx, const tinyc_graph *g)
{
	tinyc_bindings *b = tinyc_calloc(ctx, 1, sizeof(*b));
	if (!b)
		return NULL;
	b->n = g ? g->nsym : 0;
	b->val = tinyc_malloc(ctx, (size_t)(b->n ? b->n : 1) * sizeof(int64_t));
	if (!b->val) {
		free(b);
		return NULL;
	}
	for (int i = 0; i < b->n; i++)
		b->val[i] = -1;
	return b;
}

void tinyc_bindings_free(tinyc_bindings *b)
{
	if (!b)
		return;
	free(b->val);
	free(b);
}

/* Whether c may appear in a symbol name at position `first` or later. */
static int is_ident_char(char c, int first)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

/* Parse one "NAME=VALUE" of a binding list (the bytes [s, e)) into b. */
static int bind_one(tinyc_ctx *ctx, const tinyc_graph *g, const char *s, const char *e,
		    tinyc_bindings *b)
{
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	const char *n = s;
	while (s < e && is_ident_char(*s, s == n))
		s++;
	int nlen = (int)(s - n);
	const char *ne = s;
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	if (nlen == 0 || s == e || *s != '=')
		return tinyc_error(ctx, "InvalidBinding", "expected NAME=VALUE, got '%.*s'",
				   (int)(e - n > 64 ? 64 : e - n), n);
	s++;
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	int sym = -1;
	for (int i = 0; i < g->nsym && sym < 0; i++)
		if (spells(n, (int)(ne - n), g->syms[i]))
			sym = i;
	if (sym < 0)
		return tinyc_error(ctx, "UnknownSymbol", "the graph has no size symbol '%.*s'",
				   nlen > 64 ? 64 : nlen, n);
	if (s == e)
		return tinyc_error(ctx, "InvalidBinding", "%s= needs a value", g->syms[sym]);
	int64_t v = 0;
	for (const char *p = s; p < e; p++) {
		if (*p < '0' || *p > '9')
			return tinyc_error(ctx, "InvalidBinding",
					   "%s= needs a positive integer, got '%.*s'",
					   g->syms[sym], (int)(e - s > 64 ? 64 : e - s), s);
		if (v > (TINYC_MAX_DIM - (*p - '0')) / 10)
			return tinyc_error(ctx, "InvalidBinding", "%s=%.*s is larger than %lld",
					   g->syms[sym], (int)(e - s > 64 ? 64 : e - s), s,
					   (long long)TINYC_MAX_DIM);
		v = v * 10 + (*p - '0');
	}
	if (v < 1)
		return tinyc_error(ctx, "InvalidBinding", "%s= must be at least 1",
				   g->syms[sym]);
	if (b->val[sym] >= 0 && b->val[sym] != v)
		return tinyc_error(ctx, "InvalidBinding", "%s is bound to both %lld and %lld",
				   g->syms[sym], (long long)b->val[sym], (long long)v);
	b->val[sym] = v;
	return 0;
}

/* Parse "M=4,N=8" into b (which must have been made for g). */
int tinyc_bindings_parse(tinyc_ctx *ctx, const tinyc_graph *g, const char *text,
			 tinyc_bindings *b)
{
	if (!g || !b || !text || b->n != g->nsym)
		return tinyc_error(ctx, "InvalidArgument",
				   "tinyc_bindings_parse: bindings do not match the graph");
	int rc = 0;
	const char *p = text;
	for (;;) {
		const char *e = strchr(p, ',');
		if (!e)
			e = p + strlen(p);
		if (bind_one(ctx, g, p, e, b) < 0)
			rc = -1;
		if (!*e)
			break;
		p = e + 1;
	}
	return rc;
}

/* The value of d: its constant, or its symbol's binding (-1 when unbound). */
int64_t tinyc_dim_value(const tinyc_dim *d, const tinyc_bindings *b)
{
	if (d->sym < 0)
		return d->val;
	if (!b || d->sym >= b->n)
		return -1;
	return b->val[d->sym];
}

/* Whether node i is a CONST 0 (integer or float), looking through RESHAPE and EXPAND. */
static int is_zero_const(const tinyc_graph *g, int i)
{
	while (i >= 0 && i < g->n &&
	       (g->nodes[i].op == TINYC_OP_RESHAPE || g->nodes[i].op == TINYC_OP_EXPAND))
		i = g->nodes[i].src[0];
	if (i < 0 || i >= g->n || g->nodes[i].op != TINYC_OP_CONST)
		return 0;
	const tinyc_lit *l = &g->nodes[i].lit;
	return l->kind == TINYC_LIT_FLOAT ? l->f == 0.0 : l->kind == TINYC_LIT_INT && l->i == 0;
}

/* Recognise the spellings of relu (see uop.h). */
int tinyc_uop_relu_operand(const tinyc_graph *g, int n)
{
	if (!g || n < 0 || n >= g->n)
		return -1;
	const tinyc_uop *u = &g->nodes[n];
	if (u->op == TINYC_OP_RELU)
		return u->src[0];
	if (u->op == TINYC_OP_MAX && u->nsrc == 2) {
		if (is_zero_const(g, u->src[1]))
			return u->src[0];
		if (is_zero_const(g, u->src[0]))
			return u->src[1];
		return -1;
	}
	if (u->op != TINYC_OP_WHERE || u->nsrc != 3 || !is_zero_const(g, u->src[2]))
		return -1;
	const tinyc_uop *c = &g->nodes[u->src[0]];
	if (c->op != TINYC_OP_CMPLT || !is_zero_const(g, c->src[0]) || c->src[1] != u->src[1])
		return -1;
	/* the shapes must agree, or the select broadcasts x beyond relu's meaning */
	const tinyc_uop *x = &g->nodes[u->src[1]];
	if (x->rank != u->rank)
		return -1;
	for (int d = 0; d < u->rank; d++)
		if (x->shape[d].sym != u->shape[d].sym || x->shape[d].val != u->shape[d].val)
			return -1;
	return u->src[1];
}
