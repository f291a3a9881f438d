/* The epilogue graph: polynomials, builder, verifier, printer (see ir/evt.h).
 *
 * Dump format (--dump-stage=evt), one block per graph:
 *
 *   evt: acc float, 7 nodes, roots 6
 *     0: AccFetch : float  seq<>
 *     1: RowBroadcast bias:half strides (0, 1, 0) : half  seq<>          a vector load
 *     2: Cast : float  seq<1>
 *     3: Compute ADD(float) : float  seq<0, 2>
 *     4: Compute RELU(float) : float  seq<3>
 *     5: Cast : half  seq<4>
 *     6: AuxStore Y:half strides (N, 1, 0) : half  seq<5>
 *     edges: tuple<seq<>, seq<>, seq<1>, seq<0, 2>, seq<3>, seq<4>, seq<5>>
 *     visit: 0 1 2 3 4 5 6
 *
 * "batched" follows "acc" when the graph has a batch axis; an offset other than 0 prints as
 * "offset E" after the strides; a node extracted from a UOp prints its id ("= %11") when the
 * printer knows the graph.  The visit order is the depth-first post-order from the roots
 * (children in order, each node once): the order the emitter computes the values in.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ir/evt.h"

/* ------------------------------------------------------------- polynomials ---- */

/* Compare two terms' symbol lists: longer products first, then lexicographic. */
static int term_cmp(const tinyc_evt_term *a, const tinyc_evt_term *b)
{
	if (a->nsym != b->nsym)
		return a->nsym > b->nsym ? -1 : 1;
	for (int i = 0; i < a->nsym; i++)
		if (a->sym[i] != b->sym[i])
			return a->sym[i] < b->sym[i] ? -1 : 1;
	return 0;
}

/* Sort the symbols of each term, sort terms, merge equal ones and drop zeros.  Works on an
 * oversized scratch array; returns -1 when more than TINYC_EVT_MAXTERM terms remain. */
static int poly_normalise(tinyc_evt_term *t, int n, tinyc_evt_poly *out)
{
	for (int i = 0; i < n; i++)
		for (int a = 1; a < t[i].nsym; a++)
			for (int b = a; b > 0 && t[i].sym[b - 1] > t[i].sym[b]; b--) {
				int x = t[i].sym[b];
				t[i].sym[b] = t[i].sym[b - 1];
				t[i].sym[b - 1] = x;
			}
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && term_cmp(&t[j - 1], &t[j]) > 0; j--) {
			tinyc_evt_term x = t[j];
			t[j] = t[j - 1];
			t[j - 1] = x;
		}
	int m = 0;
	for (int i = 0; i < n; i++) {
		if (m > 0 && !term_cmp(&t[m - 1], &t[i]))
			t[m - 1].c += t[i].c;
		else
			t[m++] = t[i];
		if (t[m - 1].c == 0)
			m--;
	}
	if (m > TINYC_EVT_MAXTERM)
		return -1;
	memset(out, 0, sizeof(*out));
	out->nterm = m;
	for (int i = 0; i < m; i++)
		out->t[i] = t[i];
	return 0;
}

tinyc_evt_poly tinyc_evt_poly_const(int64_t c)
{
	tinyc_evt_poly p;
	memset(&p, 0, sizeof(p));
	if (c) {
		p.nterm = 1;
		p.t[0].c = c;
	}
	return p;
}

tinyc_evt_poly tinyc_evt_poly_sym(int64_t c, int sym)
{
	tinyc_evt_poly p = tinyc_evt_poly_const(c);
	if (c && sym >= 0) {
		p.t[0].nsym = 1;
		p.t[0].sym[0] = sym;
	}
	return p;
}

tinyc_evt_poly tinyc_evt_poly_dim(const tinyc_dim *d)
{
	return d->sym >= 0 ? tinyc_evt_poly_sym(1, d->sym) : tinyc_evt_poly_const(d->val);
}

int tinyc_evt_poly_add(const tinyc_evt_poly *a, const tinyc_evt_poly *b, tinyc_evt_poly *out)
{
	tinyc_evt_term t[2 * TINYC_EVT_MAXTERM];
	int n = 0;
	for (int i = 0; i < a->nterm; i++)
		t[n++] = a->t[i];
	for (int i = 0; i < b->nterm; i++)
		t[n++] = b->t[i];
	return poly_normalise(t, n, out);
}

int tinyc_evt_poly_mul(const tinyc_evt_poly *a, const tinyc_evt_poly *b, tinyc_evt_poly *out)
{
	tinyc_evt_term t[TINYC_EVT_MAXTERM * TINYC_EVT_MAXTERM];
	int n = 0;
	for (int i = 0; i < a->nterm; i++)
		for (int j = 0; j < b->nterm; j++) {
			const tinyc_evt_term *x = &a->t[i], *y = &b->t[j];
			if (x->nsym + y->nsym > TINYC_EVT_MAXFAC)
				return -1;
			tinyc_evt_term r;
			memset(&r, 0, sizeof(r));
			if (__builtin_mul_overflow(x->c, y->c, &r.c))
				return -1;
			for (int k = 0; k < x->nsym; k++)
				r.sym[r.nsym++] = x->sym[k];
			for (int k = 0; k < y->nsym; k++)
				r.sym[r.nsym++] = y->sym[k];
			t[n++] = r;
		}
	return poly_normalise(t, n, out);
}

int tinyc_evt_poly_is_zero(const tinyc_evt_poly *p)
{
	return p->nterm == 0;
}

int tinyc_evt_poly_is_const(const tinyc_evt_poly *p, int64_t c)
{
	if (c == 0)
		return p->nterm == 0;
	return p->nterm == 1 && p->t[0].nsym == 0 && p->t[0].c == c;
}

int tinyc_evt_poly_equal(const tinyc_evt_poly *a, const tinyc_evt_poly *b)
{
	if (a->nterm != b->nterm)
		return 0;
	for (int i = 0; i < a->nterm; i++)
		if (a->t[i].c != b->t[i].c || term_cmp(&a->t[i], &b->t[i]))
			return 0;
	return 1;
}

int tinyc_evt_poly_eval(const tinyc_evt_poly *p, const int64_t *sym, int nsym, int64_t *out)
{
	int64_t v = 0;
	for (int i = 0; i < p->nterm; i++) {
		int64_t t = p->t[i].c;
		for (int k = 0; k < p->t[i].nsym; k++) {
			int s = p->t[i].sym[k];
			if (!sym || s < 0 || s >= nsym || sym[s] < 0)
				return -1;
			t *= sym[s];
		}
		v += t;
	}
	*out = v;
	return 0;
}

void tinyc_evt_poly_print(const tinyc_evt_poly *p, char *const *syms, int nsym, tinyc_buf *out)
{
	if (!p->nterm) {
		tinyc_buf_putc(out, '0');
		return;
	}
	for (int i = 0; i < p->nterm; i++) {
		const tinyc_evt_term *t = &p->t[i];
		int64_t c = t->c;
		if (i)
			tinyc_buf_puts(out, c < 0 ? " - " : " + ");
		else if (c < 0)
			tinyc_buf_putc(out, '-');
		uint64_t mag = c < 0 ? (uint64_t)0 - (uint64_t)c : (uint64_t)c;
		if (mag != 1 || !t->nsym)
			tinyc_buf_printf(out, "%" PRIu64 "%s", mag, t->nsym ? "*" : "");
		for (int k = 0; k < t->nsym; k++) {
			int s = t->sym[k];
			if (syms && s >= 0 && s < nsym)
				tinyc_buf_printf(out, "%s%s", k ? "*" : "", syms[s]);
			else
				tinyc_buf_printf(out, "%s$%d", k ? "*" : "", s);
		}
	}
}

/* ------------------------------------------------------------------- nodes ---- */

static const char *const kind_names[TINYC_EVT_KIND_COUNT] = {
	"AccFetch",     "SrcFetch",     "AuxLoad",         "RowBroadcast",
	"ColBroadcast", "ScalarBroadcast", "Compute",      "Cast",
	"AuxStore",     "RowReduction", "ColReduction",    "ScalarReduction",
};

const char *tinyc_evt_kind_name(tinyc_evt_kind k)
{
	return k >= 0 && k < TINYC_EVT_KIND_COUNT ? kind_names[k] : "?";
}

int tinyc_evt_is_leaf(tinyc_evt_kind k)
{
	return k >= TINYC_EVT_ACC_FETCH && k <= TINYC_EVT_SCALAR_BCAST;
}

int tinyc_evt_is_reduction(tinyc_evt_kind k)
{
	return k == TINYC_EVT_ROW_RED || k == TINYC_EVT_COL_RED || k == TINYC_EVT_SCALAR_RED;
}

int tinyc_evt_is_output(tinyc_evt_kind k)
{
	return k == TINYC_EVT_AUX_STORE || tinyc_evt_is_reduction(k);
}

int tinyc_evt_arity(const tinyc_evt_node *nd)
{
	if (tinyc_evt_is_leaf(nd->kind))
		return 0;
	if (nd->kind == TINYC_EVT_COMPUTE) {
		if (nd->fn < 0 || nd->fn >= TINYC_OP_COUNT)
			return -1;
		const tinyc_opinfo *oi = tinyc_op_info(nd->fn);
		if (oi->kind != TINYC_KIND_ELEMENTWISE || nd->fn == TINYC_OP_CAST)
			return -1;
		return oi->arity;
	}
	if (nd->kind >= 0 && nd->kind < TINYC_EVT_KIND_COUNT)
		return 1;
	return -1;
}

/* ----------------------------------------------------------------- builder ---- */

tinyc_evt *tinyc_evt_alloc(tinyc_ctx *ctx, tinyc_dtype acc)
{
	tinyc_evt *g = tinyc_calloc(ctx, 1, sizeof(*g));
	if (!g)
		return NULL;
	g->acc = acc;
	g->reduce_uop = -1;
	return g;
}

/* Free what a node owns. */
static void node_clear(tinyc_evt_node *nd)
{
	free(nd->t.name);
	nd->t.name = NULL;
}

void tinyc_evt_free(tinyc_evt *g)
{
	if (!g)
		return;
	for (int i = 0; i < g->n; i++)
		node_clear(&g->nodes[i]);
	free(g->nodes);
	for (int i = 0; i < g->nsym; i++)
		free(g->syms[i]);
	free(g->syms);
	tinyc_buf_free(&g->log);
	free(g);
}

int tinyc_evt_set_symbols(tinyc_ctx *ctx, tinyc_evt *g, int nsym, const char *const *names)
{
	char **s = nsym ? tinyc_calloc(ctx, (size_t)nsym, sizeof(char *)) : NULL;
	if (nsym && !s)
		return -1;
	for (int i = 0; i < nsym; i++)
		if (!(s[i] = tinyc_strdup(ctx, names[i] ? names[i] : "?"))) {
			for (int j = 0; j < i; j++)
				free(s[j]);
			free(s);
			return -1;
		}
	for (int i = 0; i < g->nsym; i++)
		free(g->syms[i]);
	free(g->syms);
	g->syms = s;
	g->nsym = nsym;
	return 0;
}

int tinyc_evt_add(tinyc_ctx *ctx, tinyc_evt *g, const tinyc_evt_node *proto)
{
	if (!g || !proto)
		return -1;
	if (g->n == g->cap) {
		int nc = g->cap ? 2 * g->cap : 8;
		tinyc_evt_node *nn = tinyc_realloc(ctx, g->nodes, sizeof(*nn) * (size_t)nc);
		if (!nn)
			return -1;
		g->nodes = nn;
		g->cap = nc;
	}
	tinyc_evt_node *nd = &g->nodes[g->n];
	*nd = *proto;
	nd->t.name = NULL;
	if (proto->t.name && !(nd->t.name = tinyc_strdup(ctx, proto->t.name)))
		return -1;
	if (nd->nchild < 0 || nd->nchild > 3)
		nd->nchild = 0;
	return g->n++;
}

tinyc_evt *tinyc_evt_copy(tinyc_ctx *ctx, const tinyc_evt *g)
{
	tinyc_evt *c = tinyc_evt_alloc(ctx, g->acc);
	if (!c)
		return NULL;
	c->batched = g->batched;
	c->reduce_uop = g->reduce_uop;
	if (tinyc_evt_set_symbols(ctx, c, g->nsym, (const char *const *)g->syms) < 0)
		goto fail;
	for (int i = 0; i < g->n; i++)
		if (tinyc_evt_add(ctx, c, &g->nodes[i]) < 0)
			goto fail;
	if (g->log.len)
		tinyc_buf_puts(&c->log, g->log.data);
	return c;
fail:
	tinyc_evt_free(c);
	return NULL;
}

int tinyc_evt_set_edges(tinyc_ctx *ctx, tinyc_evt *g, int i, int n, const int *children)
{
	if (!g)
		return -1;
	if (i < 0 || i >= g->n)
		return tinyc_error(ctx, "EvtMalformed", "edges of node %d: no such node (graph has %d)",
				   i, g->n);
	if (n < 0 || n > 3)
		return tinyc_error(ctx, "EvtMalformed", "node %d: %d children (at most 3)", i, n);
	g->nodes[i].nchild = n;
	for (int k = 0; k < n; k++)
		g->nodes[i].child[k] = children[k];
	return 0;
}

/* Skip blanks. */
static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

int tinyc_evt_set_edge_tuple(tinyc_ctx *ctx, tinyc_evt *g, const char *text)
{
	const char *p = skip_ws(text);
	int node = 0;
	if (!strncmp(p, "tuple<", 6)) {
		p = skip_ws(p + 6);
	}
	while (*p && *p != '>') {
		int close;
		if (*p == '{')
			close = '}', p++;
		else if (!strncmp(p, "seq<", 4))
			close = '>', p += 4;
		else
			return tinyc_error(ctx, "EvtMalformed", "edge tuple: expected '{' or 'seq<' at "
					   "offset %d", (int)(p - text));
		int ch[4], n = 0;
		p = skip_ws(p);
		while (*p != close) {
			char *end;
			long v = strtol(p, &end, 10);
			if (end == p)
				return tinyc_error(ctx, "EvtMalformed", "edge tuple: expected a child index "
						   "at offset %d", (int)(p - text));
			if (n == 3)
				return tinyc_error(ctx, "EvtMalformed", "edge tuple: node %d has more than "
						   "3 children", node);
			ch[n++] = v < -1000000 ? -1000000 : v > 1000000 ? 1000000 : (int)v;
			p = skip_ws(end);
			if (*p == ',')
				p = skip_ws(p + 1);
			else if (*p != close)
				return tinyc_error(ctx, "EvtMalformed", "edge tuple: expected ',' at offset %d",
						   (int)(p - text));
		}
		p = skip_ws(p + 1);
		if (node >= g->n)
			return tinyc_error(ctx, "EvtMalformed", "edge tuple has more entries than the "
					   "graph's %d nodes", g->n);
		if (tinyc_evt_set_edges(ctx, g, node, n, ch) < 0)
			return -1;
		node++;
		if (*p == ',')
			p = skip_ws(p + 1);
	}
	if (node != g->n)
		return tinyc_error(ctx, "EvtMalformed", "edge tuple has %d entries for %d nodes", node,
				   g->n);
	return 0;
}

tinyc_evt_layout tinyc_evt_layout_rowmajor(const tinyc_dim *m, const tinyc_dim *n)
{
	tinyc_evt_layout l;
	memset(&l, 0, sizeof(l));
	tinyc_evt_poly pm = tinyc_evt_poly_dim(m), pn = tinyc_evt_poly_dim(n);
	l.stride[0] = pn;
	l.stride[1] = tinyc_evt_poly_const(1);
	if (tinyc_evt_poly_mul(&pm, &pn, &l.stride[2]) < 0)
		l.stride[2] = tinyc_evt_poly_const(0);
	l.offset = tinyc_evt_poly_const(0);
	return l;
}

/* A node prototype of kind k with defaults. */
static tinyc_evt_node proto_of(tinyc_evt_kind k, tinyc_dtype dt)
{
	tinyc_evt_node nd;
	memset(&nd, 0, sizeof(nd));
	nd.kind = k;
	nd.dtype = dt;
	nd.compute = TINYC_DTYPE_NONE;
	nd.fn = TINYC_OP_NONE;
	nd.redop = TINYC_RED_ADD;
	nd.uop = -1;
	nd.t.buf = -1;
	nd.t.dtype = TINYC_DTYPE_NONE;
	return nd;
}

int tinyc_evt_acc_fetch(tinyc_ctx *ctx, tinyc_evt *g)
{
	tinyc_evt_node nd = proto_of(TINYC_EVT_ACC_FETCH, g ? g->acc : TINYC_FLOAT);
	return tinyc_evt_add(ctx, g, &nd);
}

/* Fill a node's tensor. */
static void set_tensor(tinyc_evt_node *nd, const char *name, int buf, tinyc_dtype dt,
		       const tinyc_evt_layout *lay)
{
	nd->has_tensor = 1;
	nd->t.name = (char *)name;	/* copied by tinyc_evt_add */
	nd->t.buf = buf;
	nd->t.dtype = dt;
	if (lay)
		nd->t.lay = *lay;
}

int tinyc_evt_load(tinyc_ctx *ctx, tinyc_evt *g, tinyc_evt_kind kind, const char *name, int buf,
		   tinyc_dtype dt, const tinyc_evt_layout *lay)
{
	if (kind < TINYC_EVT_SRC_FETCH || kind > TINYC_EVT_SCALAR_BCAST)
		return tinyc_error(ctx, "EvtMalformed", "%s is not a load", tinyc_evt_kind_name(kind));
	tinyc_evt_node nd = proto_of(kind, dt);
	set_tensor(&nd, name ? name : "?", buf, dt, lay);
	return tinyc_evt_add(ctx, g, &nd);
}

int tinyc_evt_scalar(tinyc_ctx *ctx, tinyc_evt *g, tinyc_dtype dt, double v)
{
	tinyc_evt_node nd = proto_of(TINYC_EVT_SCALAR_BCAST, dt);
	nd.fval = v;
	nd.ival = (int64_t)(v >= 9.2e18 ? 9.2e18 : v <= -9.2e18 ? -9.2e18 : v == v ? v : 0);
	return tinyc_evt_add(ctx, g, &nd);
}

/* The result type of fn on `compute` operands. */
static tinyc_dtype compute_result(tinyc_op fn, tinyc_dtype compute)
{
	if (fn == TINYC_OP_CMPLT || fn == TINYC_OP_CMPNE || fn == TINYC_OP_CMPEQ)
		return TINYC_BOOL;
	return compute;
}

int tinyc_evt_compute(tinyc_ctx *ctx, tinyc_evt *g, tinyc_op fn, tinyc_dtype compute)
{
	tinyc_evt_node nd = proto_of(TINYC_EVT_COMPUTE, compute_result(fn, compute));
	nd.fn = fn;
	nd.compute = compute;
	return tinyc_evt_add(ctx, g, &nd);
}

int tinyc_evt_bitcast(tinyc_ctx *ctx, tinyc_evt *g, tinyc_dtype from, tinyc_dtype to)
{
	tinyc_evt_node nd = proto_of(TINYC_EVT_COMPUTE, to);
	nd.fn = TINYC_OP_BITCAST;
	nd.compute = from;
	return tinyc_evt_add(ctx, g, &nd);
}

int tinyc_evt_cast(tinyc_ctx *ctx, tinyc_evt *g, tinyc_dtype to)
{
	tinyc_evt_node nd = proto_of(TINYC_EVT_CAST, to);
	return tinyc_evt_add(ctx, g, &nd);
}

int tinyc_evt_store(tinyc_ctx *ctx, tinyc_evt *g, const char *name, int buf, tinyc_dtype dt,
		    const tinyc_evt_layout *lay)
{
	tinyc_evt_node nd = proto_of(TINYC_EVT_AUX_STORE, dt);
	set_tensor(&nd, name ? name : "?", buf, dt, lay);
	return tinyc_evt_add(ctx, g, &nd);
}

int tinyc_evt_reduction(tinyc_ctx *ctx, tinyc_evt *g, tinyc_evt_kind kind, tinyc_redop redop,
			tinyc_dtype compute, const char *name, int buf, tinyc_dtype dt,
			const tinyc_evt_layout *lay)
{
	if (!tinyc_evt_is_reduction(kind))
		return tinyc_error(ctx, "EvtMalformed", "%s is not a reduction",
				   tinyc_evt_kind_name(kind));
	tinyc_evt_node nd = proto_of(kind, compute);
	nd.redop = redop;
	nd.compute = compute;
	set_tensor(&nd, name ? name : "?", buf, dt, lay);
	return tinyc_evt_add(ctx, g, &nd);
}

/* ---------------------------------------------------------------- verifier ---- */

/* "node 3 (Compute ADD)" into buf. */
static const char *node_desc(const tinyc_evt *g, int i, char *buf, size_t size)
{
	const tinyc_evt_node *nd = &g->nodes[i];
	if (nd->kind == TINYC_EVT_COMPUTE && nd->fn >= 0 && nd->fn < TINYC_OP_COUNT)
		snprintf(buf, size, "node %d (Compute %s)", i, tinyc_op_info(nd->fn)->name);
	else
		snprintf(buf, size, "node %d (%s)", i, tinyc_evt_kind_name(nd->kind));
	return buf;
}

static int dtype_ok(tinyc_dtype t)
{
	return t >= 0 && t < TINYC_DTYPE_COUNT;
}

/* Whether op fn accepts operands of type t (the op table's domain). */
static int op_accepts(tinyc_op fn, tinyc_dtype t)
{
	const tinyc_opinfo *in = tinyc_op_info(fn);
	return !in || tinyc_dom_accepts(in->dom, t);
}

/* Check the typing rules of node i; reports and returns the number of problems. */
static int verify_types(tinyc_ctx *ctx, const tinyc_evt *g, int i)
{
	const tinyc_evt_node *nd = &g->nodes[i];
	char d[64], cd[64];
	int bad = 0;
	node_desc(g, i, d, sizeof(d));
	switch (nd->kind) {
	case TINYC_EVT_ACC_FETCH:
		if (nd->dtype != g->acc)
			bad++, tinyc_error(ctx, "EvtTypeClash", "%s is %s, the accumulator is %s", d,
					   tinyc_dtype_name(nd->dtype), tinyc_dtype_name(g->acc));
		break;
	case TINYC_EVT_SRC_FETCH:
	case TINYC_EVT_AUX_LOAD:
	case TINYC_EVT_ROW_BCAST:
	case TINYC_EVT_COL_BCAST:
	case TINYC_EVT_SCALAR_BCAST:
		if (nd->has_tensor && nd->dtype != nd->t.dtype)
			bad++, tinyc_error(ctx, "EvtTypeClash", "%s is %s, its tensor %s holds %s", d,
					   tinyc_dtype_name(nd->dtype), nd->t.name ? nd->t.name : "?",
					   tinyc_dtype_name(nd->t.dtype));
		break;
	case TINYC_EVT_COMPUTE: {
		if (!dtype_ok(nd->compute)) {
			bad++, tinyc_error(ctx, "EvtTypeClash", "%s has no compute type", d);
			break;
		}
		if (!op_accepts(nd->fn, nd->compute))
			bad++, tinyc_error(ctx, "EvtTypeClash", "%s cannot compute in %s", d,
					   tinyc_dtype_name(nd->compute));
		tinyc_dtype want = compute_result(nd->fn, nd->compute);
		if (nd->fn == TINYC_OP_BITCAST) {
			want = nd->dtype;
			if (tinyc_dtype_size(nd->dtype) != tinyc_dtype_size(nd->compute))
				bad++, tinyc_error(ctx, "EvtTypeClash", "%s: bitcast %s to %s changes the "
						   "size", d, tinyc_dtype_name(nd->compute),
						   tinyc_dtype_name(nd->dtype));
		}
		if (nd->dtype != want)
			bad++, tinyc_error(ctx, "EvtTypeClash", "%s yields %s, should be %s", d,
					   tinyc_dtype_name(nd->dtype), tinyc_dtype_name(want));
		for (int k = 0; k < nd->nchild; k++) {
			const tinyc_evt_node *c = &g->nodes[nd->child[k]];
			tinyc_dtype need = nd->fn == TINYC_OP_WHERE && k == 0 ? TINYC_BOOL : nd->compute;
			if (c->dtype != need)
				bad++, tinyc_error(ctx, "EvtTypeClash", "%s operand %d is %s (%s), needs %s",
						   d, k, tinyc_dtype_name(c->dtype),
						   node_desc(g, nd->child[k], cd, sizeof(cd)),
						   tinyc_dtype_name(need));
		}
		break;
	}
	case TINYC_EVT_CAST:
		break;
	case TINYC_EVT_AUX_STORE: {
		const tinyc_evt_node *c = &g->nodes[nd->child[0]];
		if (c->dtype != nd->t.dtype || nd->dtype != nd->t.dtype)
			bad++, tinyc_error(ctx, "EvtTypeClash", "%s stores %s into %s tensor %s", d,
					   tinyc_dtype_name(c->dtype), tinyc_dtype_name(nd->t.dtype),
					   nd->t.name ? nd->t.name : "?");
		break;
	}
	case TINYC_EVT_ROW_RED:
	case TINYC_EVT_COL_RED:
	case TINYC_EVT_SCALAR_RED: {
		const tinyc_evt_node *c = &g->nodes[nd->child[0]];
		if (!dtype_ok(nd->compute) || nd->compute == TINYC_BOOL)
			bad++, tinyc_error(ctx, "EvtTypeClash", "%s accumulates in %s", d,
					   dtype_ok(nd->compute) ? tinyc_dtype_name(nd->compute) : "no type");
		else if (c->dtype != nd->compute || nd->dtype != nd->compute)
			bad++, tinyc_error(ctx, "EvtTypeClash", "%s accumulates %s values in %s", d,
					   tinyc_dtype_name(c->dtype), tinyc_dtype_name(nd->compute));
		break;
	}
	default:
		break;
	}
	return bad;
}

/* Whether a tensor's layout fits the node kind (zero strides where the kind has no axis). */
static const char *layout_problem(const tinyc_evt_node *nd)
{
	const tinyc_evt_poly *s = nd->t.lay.stride;
	switch (nd->kind) {
	case TINYC_EVT_ROW_BCAST:
	case TINYC_EVT_ROW_RED:
		return tinyc_evt_poly_is_zero(&s[0]) ? NULL : "a row vector has no m stride";
	case TINYC_EVT_COL_BCAST:
	case TINYC_EVT_COL_RED:
		return tinyc_evt_poly_is_zero(&s[1]) ? NULL : "a column vector has no n stride";
	case TINYC_EVT_SCALAR_BCAST:
	case TINYC_EVT_SCALAR_RED:
		return tinyc_evt_poly_is_zero(&s[0]) && tinyc_evt_poly_is_zero(&s[1])
			       ? NULL
			       : "a scalar has no m or n stride";
	default:
		return NULL;
	}
}

int tinyc_evt_verify(tinyc_ctx *ctx, const tinyc_evt *g, int types)
{
	if (!g)
		return tinyc_error(ctx, "EvtMalformed", "no epilogue graph");
	int bad = 0, outputs = 0;
	char d[64];
	if (!dtype_ok(g->acc))
		bad++, tinyc_error(ctx, "EvtMalformed", "the accumulator has no valid type");
	for (int i = 0; i < g->n; i++) {
		const tinyc_evt_node *nd = &g->nodes[i];
		if (nd->kind < 0 || nd->kind >= TINYC_EVT_KIND_COUNT) {
			bad++, tinyc_error(ctx, "EvtMalformed", "node %d has an unknown kind %d", i,
					   (int)nd->kind);
			continue;
		}
		node_desc(g, i, d, sizeof(d));
		int ar = tinyc_evt_arity(nd);
		if (ar < 0) {
			bad++, tinyc_error(ctx, "EvtMalformed", "%s: op %d is not an elementwise op", d,
					   (int)nd->fn);
			continue;
		}
		if (nd->nchild != ar)
			bad++, tinyc_error(ctx, "EvtMalformed", "%s takes %d children, has %d", d, ar,
					   nd->nchild);
		for (int k = 0; k < nd->nchild; k++)
			if (nd->child[k] < 0 || nd->child[k] >= g->n)
				bad++, tinyc_error(ctx, "EvtMalformed", "%s: child %d is %d, out of range "
						   "0..%d", d, k, nd->child[k], g->n - 1);
		if (!dtype_ok(nd->dtype) &&
		    (types || (nd->kind != TINYC_EVT_COMPUTE && !tinyc_evt_is_reduction(nd->kind))))
			bad++, tinyc_error(ctx, "EvtMalformed", "%s has no valid type", d);
		int need = nd->kind == TINYC_EVT_ACC_FETCH || nd->kind == TINYC_EVT_COMPUTE ||
				   nd->kind == TINYC_EVT_CAST
			       ? 0
			   : nd->kind == TINYC_EVT_SCALAR_BCAST ? nd->has_tensor
								: 1;
		if (nd->has_tensor != need)
			bad++, tinyc_error(ctx, "EvtMalformed", "%s %s a tensor", d,
					   nd->has_tensor ? "must not have" : "needs");
		if (nd->has_tensor) {
			if (!nd->t.name || !*nd->t.name)
				bad++, tinyc_error(ctx, "EvtMalformed", "%s: its tensor has no name", d);
			if (!dtype_ok(nd->t.dtype))
				bad++, tinyc_error(ctx, "EvtMalformed", "%s: its tensor has no valid type", d);
			const char *lp = layout_problem(nd);
			if (lp)
				bad++, tinyc_error(ctx, "EvtMalformed", "%s: %s", d, lp);
		}
		if (tinyc_evt_is_reduction(nd->kind) && nd->redop != TINYC_RED_ADD &&
		    nd->redop != TINYC_RED_MAX)
			bad++, tinyc_error(ctx, "EvtMalformed", "%s: reductions are ADD or MAX", d);
		outputs += tinyc_evt_is_output(nd->kind);
	}
	if (bad)
		return -1;
	if (!outputs)
		bad++, tinyc_error(ctx, "EvtMalformed", "the graph has no output (AuxStore or "
				   "reduction)");
	/* cycles: iterative depth-first search with colours */
	unsigned char *col = tinyc_calloc(ctx, (size_t)g->n + 1, 1);
	int *stack = tinyc_malloc(ctx, sizeof(int) * 2 * ((size_t)g->n + 1));
	if (!col || !stack) {
		free(col), free(stack);
		return -1;
	}
	for (int r = 0; r < g->n && !bad; r++) {
		if (col[r])
			continue;
		int sp = 0;
		stack[0] = r, stack[1] = 0, sp = 1, col[r] = 1;
		while (sp > 0 && !bad) {
			int v = stack[2 * (sp - 1)], *k = &stack[2 * (sp - 1) + 1];
			if (*k < g->nodes[v].nchild) {
				int c = g->nodes[v].child[(*k)++];
				if (col[c] == 1) {
					tinyc_buf path = {0};
					for (int s = 0; s < sp; s++)
						if (stack[2 * s] == c || path.len)
							tinyc_buf_printf(&path, "%d -> ", stack[2 * s]);
					tinyc_buf_printf(&path, "%d", c);
					bad++, tinyc_error(ctx, "EvtCycle", "the edges form a cycle: %s "
							   "(children point back to a parent)",
							   path.data ? path.data : "?");
					tinyc_buf_free(&path);
				} else if (!col[c]) {
					col[c] = 1;
					stack[2 * sp] = c, stack[2 * sp + 1] = 0, sp++;
				}
			} else {
				col[v] = 2;
				sp--;
			}
		}
	}
	free(col);
	free(stack);
	if (!bad && types)
		for (int i = 0; i < g->n; i++)
			bad += verify_types(ctx, g, i);
	return bad ? -1 : 0;
}

/* ----------------------------------------------------------------- printer ---- */

/* "C:half strides (N, 1, 0)[ offset E]" */
static void print_tensor(const tinyc_evt *g, const tinyc_evt_tensor *t, tinyc_buf *out)
{
	tinyc_buf_printf(out, "%s:%s strides (", t->name ? t->name : "?", tinyc_dtype_name(t->dtype));
	for (int a = 0; a < 3; a++) {
		if (a)
			tinyc_buf_puts(out, ", ");
		tinyc_evt_poly_print(&t->lay.stride[a], g->syms, g->nsym, out);
	}
	tinyc_buf_putc(out, ')');
	if (!tinyc_evt_poly_is_zero(&t->lay.offset)) {
		tinyc_buf_puts(out, " offset ");
		tinyc_evt_poly_print(&t->lay.offset, g->syms, g->nsym, out);
	}
}

/* Print a constant of type dt. */
static void print_const(const tinyc_evt_node *nd, tinyc_buf *out)
{
	if (tinyc_dtype_is_float(nd->dtype))
		tinyc_buf_printf(out, "%.9g", nd->fval);
	else
		tinyc_buf_printf(out, "%" PRId64, nd->ival);
}

/* One node line, with the UOp id when uop is given. */
static void print_node(const tinyc_evt *g, int i, const tinyc_graph *uop, tinyc_buf *out)
{
	const tinyc_evt_node *nd = &g->nodes[i];
	tinyc_buf_printf(out, "  %d: %s", i, tinyc_evt_kind_name(nd->kind));
	if (nd->kind == TINYC_EVT_COMPUTE)
		tinyc_buf_printf(out, " %s(%s)",
				 nd->fn >= 0 && nd->fn < TINYC_OP_COUNT ? tinyc_op_info(nd->fn)->name : "?",
				 dtype_ok(nd->compute) ? tinyc_dtype_name(nd->compute) : "?");
	if (tinyc_evt_is_reduction(nd->kind))
		tinyc_buf_printf(out, " %s(%s)", tinyc_redop_name(nd->redop),
				 dtype_ok(nd->compute) ? tinyc_dtype_name(nd->compute) : "?");
	if (nd->kind == TINYC_EVT_SCALAR_BCAST && !nd->has_tensor) {
		tinyc_buf_putc(out, ' ');
		print_const(nd, out);
	}
	if (nd->has_tensor) {
		tinyc_buf_putc(out, ' ');
		print_tensor(g, &nd->t, out);
	}
	tinyc_buf_printf(out, " : %s  seq<", dtype_ok(nd->dtype) ? tinyc_dtype_name(nd->dtype) : "?");
	for (int k = 0; k < nd->nchild; k++)
		tinyc_buf_printf(out, "%s%d", k ? ", " : "", nd->child[k]);
	tinyc_buf_putc(out, '>');
	if (uop && nd->uop >= 0 && nd->uop < uop->n)
		tinyc_buf_printf(out, "  = %%%s", uop->nodes[nd->uop].id);
	tinyc_buf_putc(out, '\n');
}

void tinyc_evt_print_edges(const tinyc_evt *g, tinyc_buf *out)
{
	tinyc_buf_puts(out, "tuple<");
	for (int i = 0; i < g->n; i++) {
		tinyc_buf_printf(out, "%sseq<", i ? ", " : "");
		for (int k = 0; k < g->nodes[i].nchild; k++)
			tinyc_buf_printf(out, "%s%d", k ? ", " : "", g->nodes[i].child[k]);
		tinyc_buf_putc(out, '>');
	}
	tinyc_buf_putc(out, '>');
}

/* Whether node i has a parent. */
static int has_parent(const tinyc_evt *g, int i)
{
	for (int j = 0; j < g->n; j++)
		for (int k = 0; k < g->nodes[j].nchild; k++)
			if (g->nodes[j].child[k] == i)
				return 1;
	return 0;
}

int tinyc_evt_visit_order(const tinyc_evt *g, int *order)
{
	int n = 0;
	unsigned char *seen = calloc((size_t)g->n + 1, 1);
	int *stack = malloc(sizeof(int) * 2 * ((size_t)g->n + 1));
	if (!seen || !stack) {
		free(seen), free(stack);
		return 0;
	}
	for (int r = 0; r < g->n; r++) {
		if (seen[r] || has_parent(g, r))
			continue;
		int sp = 1;
		stack[0] = r, stack[1] = 0, seen[r] = 1;
		while (sp > 0) {
			int v = stack[2 * (sp - 1)], *k = &stack[2 * (sp - 1) + 1];
			const tinyc_evt_node *nd = &g->nodes[v];
			if (*k < nd->nchild) {
				int c = nd->child[(*k)++];
				if (c >= 0 && c < g->n && !seen[c]) {
					seen[c] = 1;
					stack[2 * sp] = c, stack[2 * sp + 1] = 0, sp++;
				}
			} else {
				order[n++] = v;
				sp--;
			}
		}
	}
	free(seen);
	free(stack);
	return n;
}

/* The graph dump, with UOp ids when uop is given. */
static void print_graph(const tinyc_evt *g, const tinyc_graph *uop, tinyc_buf *out)
{
	tinyc_buf_printf(out, "evt: acc %s%s, %d nodes, roots", tinyc_dtype_name(g->acc),
			 g->batched ? ", batched" : "", g->n);
	for (int i = 0; i < g->n; i++)
		if (!has_parent(g, i))
			tinyc_buf_printf(out, " %d", i);
	tinyc_buf_putc(out, '\n');
	for (int i = 0; i < g->n; i++)
		print_node(g, i, uop, out);
	tinyc_buf_puts(out, "  edges: ");
	tinyc_evt_print_edges(g, out);
	tinyc_buf_puts(out, "\n  visit:");
	int *order = malloc(sizeof(int) * ((size_t)g->n + 1));
	int n = order ? tinyc_evt_visit_order(g, order) : 0;
	for (int i = 0; i < n; i++)
		tinyc_buf_printf(out, " %d", order[i]);
	free(order);
	tinyc_buf_putc(out, '\n');
}

void tinyc_evt_print(const tinyc_evt *g, tinyc_buf *out)
{
	print_graph(g, NULL, out);
}

/* ---------------------------------------------------------------- the stage ---- */

void tinyc_evt_set_free(tinyc_evt_set *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n; i++) {
		tinyc_evt_entry *e = &s->e[i];
		tinyc_evt_free(e->g);
		free(e->region);
		for (int k = 0; k < e->nnote; k++)
			free(e->note[k].why);
		free(e->note);
		free(e->why_none);
	}
	free(s->e);
	free(s);
}

void tinyc_evt_set_print(const tinyc_evt_set *s, tinyc_buf *out)
{
	const tinyc_graph *u = s->uop;
	tinyc_buf_printf(out, "# evt: %d contraction%s\n", s->n, s->n == 1 ? "" : "s");
	for (int i = 0; i < s->n; i++) {
		const tinyc_evt_entry *e = &s->e[i];
		tinyc_buf_printf(out, "contraction %d: %%%s\n", i, u->nodes[e->reduce].id);
		if (!e->g) {
			tinyc_buf_printf(out, "  no epilogue graph: %s\n",
					 e->why_none ? e->why_none : "?");
		} else {
			tinyc_buf_puts(out, "  region:");
			for (int k = 0; k < e->nregion; k++)
				tinyc_buf_printf(out, " %%%s", u->nodes[e->region[k]].id);
			tinyc_buf_putc(out, '\n');
			print_graph(e->g, u, out);
			if (e->g->log.len)
				tinyc_buf_puts(out, e->g->log.data);
		}
		for (int k = 0; k < e->nnote; k++)
			tinyc_buf_printf(out, "  separate kernel: %%%s: %s\n",
					 u->nodes[e->note[k].uop].id, e->note[k].why);
	}
}

const tinyc_evt_entry *tinyc_evt_set_find(const tinyc_evt_set *s, int u)
{
	for (int i = 0; s && i < s->n; i++) {
		const tinyc_evt_entry *e = &s->e[i];
		if (e->reduce == u && e->g)
			return e;
		for (int k = 0; e->g && k < e->nregion; k++)
			if (e->region[k] == u)
				return e;
	}
	return NULL;
}
