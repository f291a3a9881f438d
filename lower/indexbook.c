/* UOp DAG -> IndexBook (seed 002 §1): axes, AxisMaps and domains of every value, the
 * per-UOp local checks, the final validation and the text dump.
 *
 * Dump format (--dump-stage=indexbook), deterministic, one block per value in node order:
 *
 *   # indexbook: <values> values, <ids> axis ids
 *   %8 = REDUCE(%7) : float[M,N,1]
 *     axes: [m:M:iter, n:N:iter, k:K:reduce]       name:size:kind of every iteration axis
 *     out: (m, n, k) -> (m, n, 0)                  where the value is stored; only printed
 *                                                  when it is not the identity (REDUCE)
 *     map %7: (m, n, k) -> (m, n, k)               one AxisMap per operand: the operand's
 *                                                  index from the value's axes; a guarded
 *                                                  map (PAD) ends "if G1, G2 else 0"
 *     domain: 0 <= m < M, 0 <= n < N, 0 <= k < K   the axis bounds (b = 0 for a size-1
 *                                                  axis), then guards "e >= 0" / "e <= c"
 *     reduce_axes: [k] op: ADD acc: float          REDUCE only
 *
 * Index expressions print as sums of terms: "3*a1 + a2", "floor(a4/3)", "(a4) mod 3",
 * "M - 1 - m".  Divisions and mods are simplified over the axes' ranges when they are built
 * (see "simplification" below): [M,4,6] -> [M,2,12] reads (m, 2*a3 + floor(a4/6), (a4) mod 6).  Axis names are unique per axis id across the book: a symbolic size S gives
 * the name s (then s1, s2, ...), a constant size the name a<id>, a size 1 the name b<id>.
 *
 * The rules (seed §1.3): a leaf numbers fresh iter axes; RESHAPE groups the dims into
 * runs of equal element count, keeps the axis of a run that is one identical dim on both
 * sides, and otherwise linearises the new index (constant strides) and re-decomposes it
 * with floor division and mod, each mod's range becoming a domain guard; PERMUTE permutes;
 * EXPAND and the right-aligned broadcast of elementwise ops read size-1 dims at the
 * constant 0; PAD, SHRINK and FLIP are affine maps (PAD's guarded, filling 0); REDUCE
 * marks its axes reduce, drops them from `out` and records the accumulator dtype.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ir/arena.h"
#include "lower/lower.h"

/* ---- build state --------------------------------------------------------------------------- */

/* One entry of the axis-name table: a name in use and the next suffix to try after it. */
typedef struct name_slot {
	const char *name;	/* NULL: empty slot */
	int next;		/* next numeric suffix for names built on this one */
} name_slot;

typedef struct ibb {
	tinyc_ctx *ctx;			/* diagnostics */
	tinyc_indexbook *ib;		/* the book being built */
	const tinyc_graph *g;		/* the graph */
	const tinyc_bindings *b;	/* symbol values, may be NULL */
	char *bad;			/* per node: failed, or reads a failed node */
	name_slot *names;		/* open-addressing set of axis and symbol names */
	size_t nname;			/* entries used */
	size_t capname;			/* slots (a power of two) */
	int oom;			/* an allocation failed */
	const int64_t *ext;		/* extents of the axes expressions are built over (for
					 * range-based simplification), -1 = unknown; or NULL */
} ibb;

/* Allocate from the book's arena; reports OutOfMemory once. */
static void *ialloc(ibb *s, size_t n)
{
	void *p = tinyc_arena_alloc(s->ib->arena, n);
	if (!p && !s->oom) {
		s->oom = 1;
		tinyc_error(s->ctx, "OutOfMemory", "out of memory building the IndexBook");
	}
	return p;
}

static const tinyc_source *src_of(const tinyc_graph *g)
{
	return g->src;
}

/* A diagnostic position on node u: l when known, else the start of u's line. */
static tinyc_loc at(const tinyc_uop *u, tinyc_loc l)
{
	return l.line ? l : u->loc;
}

/* ---- index expressions --------------------------------------------------------------------- */

static const tinyc_ix *ix_new(ibb *s, tinyc_ix_op op, int64_t c, int var, const tinyc_ix *a,
			      const tinyc_ix *b)
{
	tinyc_ix *e = ialloc(s, sizeof(*e));
	if (!e)
		return NULL;
	e->op = op;
	e->c = c;
	e->var = var;
	e->a = a;
	e->b = b;
	return e;
}

static const tinyc_ix *ix_const(ibb *s, int64_t c)
{
	return ix_new(s, TINYC_IX_CONST, c, 0, NULL, NULL);
}

static const tinyc_ix *ix_axis(ibb *s, int a)
{
	return ix_new(s, TINYC_IX_AXIS, 0, a, NULL, NULL);
}

static int is_const(const tinyc_ix *e, int64_t c)
{
	return e && e->op == TINYC_IX_CONST && e->c == c;
}

/* a + b, folding constants. */
static const tinyc_ix *ix_add(ibb *s, const tinyc_ix *a, const tinyc_ix *b)
{
	if (!a || !b)
		return NULL;
	if (a->op == TINYC_IX_CONST && b->op == TINYC_IX_CONST)
		return ix_const(s, a->c + b->c);
	if (is_const(a, 0))
		return b;
	if (is_const(b, 0))
		return a;
	/* keep constants last: c + x prints as x + c */
	if (a->op == TINYC_IX_CONST)
		return ix_new(s, TINYC_IX_ADD, 0, 0, b, a);
	/* (x + c1) + c2 = x + (c1 + c2) */
	if (b->op == TINYC_IX_CONST && a->op == TINYC_IX_ADD && a->b->op == TINYC_IX_CONST)
		return ix_add(s, a->a, ix_const(s, a->b->c + b->c));
	return ix_new(s, TINYC_IX_ADD, 0, 0, a, b);
}

/* c * a, folding constants. */
static const tinyc_ix *ix_mul(ibb *s, int64_t c, const tinyc_ix *a)
{
	if (!a)
		return NULL;
	if (c == 0)
		return ix_const(s, 0);
	if (c == 1)
		return a;
	if (a->op == TINYC_IX_CONST)
		return ix_const(s, c * a->c);
	if (a->op == TINYC_IX_MUL)
		return ix_mul(s, c * a->c, a->a);
	return ix_new(s, TINYC_IX_MUL, c, 0, a, NULL);
}

/* a - b. */
static const tinyc_ix *ix_sub(ibb *s, const tinyc_ix *a, const tinyc_ix *b)
{
	return ix_add(s, a, ix_mul(s, -1, b));
}

/* Floor division of a by c > 0 (of a constant: folded). */
static int64_t floordiv(int64_t a, int64_t c)
{
	int64_t q = a / c;
	return (a % c != 0 && (a < 0)) ? q - 1 : q;
}

/* ---- simplification: linear forms and ranges ---------------------------------------------
 *
 * floor(a/c) and a mod c are simplified the way a ShapeTracker merges views: a is flattened
 * into a linear form sum(c_i * atom_i) + k (atoms: axes, symbols, divisions, mods); the terms
 * whose coefficient c divides leave the division exactly, and when the range of the rest
 * (from the axes' extents) lies inside one multiple of c, the division disappears.  Nested
 * divisions merge (floor(floor(x/a)/c) = floor(x/(a*c))), mods of mods shrink
 * ((x mod a) mod c = x mod c when c divides a), common factors cancel.  Every rewrite is an
 * identity on integers, so the maps keep their meaning. */

#define LMAX 48			/* terms of a linear form; longer forms are left alone */
#define RINF (INT64_MAX / 4)	/* "unbounded" in ranges */

typedef struct lform {
	int n;				/* terms */
	int bad;			/* too many terms: not simplified */
	int64_t k;			/* constant */
	int64_t c[LMAX];		/* coefficients */
	const tinyc_ix *atom[LMAX];	/* atoms: AXIS, SYM, FDIV, MOD */
} lform;

/* Structural equality of expressions. */
static int ix_equal(const tinyc_ix *a, const tinyc_ix *b)
{
	if (a == b)
		return 1;
	if (!a || !b || a->op != b->op || a->c != b->c || a->var != b->var)
		return 0;
	return ix_equal(a->a, b->a) && ix_equal(a->b, b->b);
}

/* Add c*atom to f, merging equal atoms. */
static void lf_add(lform *f, int64_t c, const tinyc_ix *atom)
{
	for (int i = 0; i < f->n; i++)
		if (ix_equal(f->atom[i], atom)) {
			f->c[i] += c;
			return;
		}
	if (f->n == LMAX) {
		f->bad = 1;
		return;
	}
	f->c[f->n] = c;
	f->atom[f->n++] = atom;
}

/* Flatten scale*e into f. */
static void lf_of(lform *f, const tinyc_ix *e, int64_t scale)
{
	switch (e->op) {
	case TINYC_IX_CONST:
		f->k += scale * e->c;
		return;
	case TINYC_IX_ADD:
		lf_of(f, e->a, scale);
		lf_of(f, e->b, scale);
		return;
	case TINYC_IX_MUL:
		lf_of(f, e->a, scale * e->c);
		return;
	default:
		lf_add(f, scale, e);
		return;
	}
}

/* The expression of a linear form, terms in order of first appearance. */
static const tinyc_ix *lf_build(ibb *s, const lform *f)
{
	const tinyc_ix *e = ix_const(s, 0);
	for (int i = 0; i < f->n; i++)
		if (f->c[i])
			e = ix_add(s, e, ix_mul(s, f->c[i], f->atom[i]));
	return ix_add(s, e, ix_const(s, f->k));
}

static int64_t sat(int64_t x)
{
	return x > RINF ? RINF : x < -RINF ? -RINF : x;
}

static int64_t sat_mul(int64_t c, int64_t x)
{
	if (x >= RINF || x <= -RINF)
		return c == 0 ? 0 : ((c > 0) == (x > 0) ? RINF : -RINF);
	__int128 p = (__int128)c * x;
	return p > RINF ? RINF : p < -RINF ? -RINF : (int64_t)p;
}

/* Range [lo, hi] of e over axes of extents s->ext (unknown extents: unbounded). */
static void ix_range(const ibb *s, const tinyc_ix *e, int64_t *lo, int64_t *hi)
{
	int64_t l1, h1, l2, h2;
	switch (e->op) {
	case TINYC_IX_CONST:
		*lo = *hi = e->c;
		return;
	case TINYC_IX_AXIS:
		*lo = 0;
		*hi = (s->ext && s->ext[e->var] > 0) ? s->ext[e->var] - 1 : RINF;
		return;
	case TINYC_IX_SYM: {
		int64_t v = (s->b && e->var < s->b->n) ? s->b->val[e->var] : -1;
		*lo = v > 0 ? v : 1;
		*hi = v > 0 ? v : RINF;
		return;
	}
	case TINYC_IX_ADD:
		ix_range(s, e->a, &l1, &h1);
		ix_range(s, e->b, &l2, &h2);
		*lo = sat(l1 + l2);
		*hi = sat(h1 + h2);
		return;
	case TINYC_IX_MUL:
		ix_range(s, e->a, &l1, &h1);
		*lo = e->c >= 0 ? sat_mul(e->c, l1) : sat_mul(e->c, h1);
		*hi = e->c >= 0 ? sat_mul(e->c, h1) : sat_mul(e->c, l1);
		return;
	case TINYC_IX_FDIV:
		ix_range(s, e->a, &l1, &h1);
		*lo = l1 <= -RINF ? -RINF : floordiv(l1, e->c);
		*hi = h1 >= RINF ? RINF : floordiv(h1, e->c);
		return;
	case TINYC_IX_MOD:
		ix_range(s, e->a, &l1, &h1);
		if (l1 >= 0 && h1 < e->c)
			*lo = l1, *hi = h1;
		else
			*lo = 0, *hi = e->c - 1;
		return;
	}
	*lo = -RINF;
	*hi = RINF;
}

/* Range of a linear form. */
static void lf_range(const ibb *s, const lform *f, int64_t *lo, int64_t *hi)
{
	*lo = *hi = f->k;
	for (int i = 0; i < f->n; i++) {
		int64_t l, h;
		ix_range(s, f->atom[i], &l, &h);
		*lo = sat(*lo + (f->c[i] >= 0 ? sat_mul(f->c[i], l) : sat_mul(f->c[i], h)));
		*hi = sat(*hi + (f->c[i] >= 0 ? sat_mul(f->c[i], h) : sat_mul(f->c[i], l)));
	}
}

static int64_t gcd64(int64_t a, int64_t b)
{
	if (a < 0)
		a = -a;
	if (b < 0)
		b = -b;
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* gcd of c and every coefficient and the constant of f. */
static int64_t lf_gcd(const lform *f, int64_t c)
{
	int64_t g = gcd64(c, f->k);
	for (int i = 0; i < f->n && g > 1; i++)
		g = gcd64(g, f->c[i]);
	return g;
}

static void lf_div_exact(lform *f, int64_t g)
{
	f->k /= g;
	for (int i = 0; i < f->n; i++)
		f->c[i] /= g;
}

/* floor(a / c), c > 0, simplified. */
static const tinyc_ix *ix_fdiv(ibb *s, const tinyc_ix *a, int64_t c)
{
	if (!a)
		return NULL;
	if (c == 1)
		return a;
	if (a->op == TINYC_IX_CONST)
		return ix_const(s, floordiv(a->c, c));
	lform f = {0}, q = {0}, r = {0};
	lf_of(&f, a, 1);
	if (f.bad)
		return ix_new(s, TINYC_IX_FDIV, c, 0, a, NULL);
	/* a = c*q + r: the terms c divides, and floor(k/c), go to q */
	for (int i = 0; i < f.n; i++)
		if (f.c[i] % c == 0)
			lf_add(&q, f.c[i] / c, f.atom[i]);
		else
			lf_add(&r, f.c[i], f.atom[i]);
	q.k = floordiv(f.k, c);
	r.k = f.k - c * q.k;
	int64_t lo, hi;
	lf_range(s, &r, &lo, &hi);
	if (lo > -RINF && hi < RINF && floordiv(lo, c) == floordiv(hi, c)) {
		q.k += floordiv(lo, c);	/* floor(r/c) is one constant */
		return lf_build(s, &q);
	}
	const tinyc_ix *rest;
	if (r.n == 1 && r.c[0] == 1 && r.k == 0 && r.atom[0]->op == TINYC_IX_FDIV &&
	    r.atom[0]->c <= INT64_MAX / c) {	/* floor(floor(x/a)/c) = floor(x/(a*c)) */
		rest = ix_new(s, TINYC_IX_FDIV, r.atom[0]->c * c, 0, r.atom[0]->a, NULL);
	} else {
		int64_t g = lf_gcd(&r, c);	/* floor(g*x / (g*c)) = floor(x/c) */
		lf_div_exact(&r, g);
		rest = ix_new(s, TINYC_IX_FDIV, c / g, 0, lf_build(s, &r), NULL);
		if (c / g == 1)
			rest = lf_build(s, &r);
	}
	lf_add(&q, 1, rest);
	return q.bad ? ix_new(s, TINYC_IX_FDIV, c, 0, a, NULL) : lf_build(s, &q);
}

/* a mod c (= a - c*floor(a/c)), c > 0, simplified. */
static const tinyc_ix *ix_mod(ibb *s, const tinyc_ix *a, int64_t c)
{
	if (!a)
		return NULL;
	if (c == 1)
		return ix_const(s, 0);
	if (a->op == TINYC_IX_CONST)
		return ix_const(s, a->c - c * floordiv(a->c, c));
	lform f = {0}, r = {0};
	lf_of(&f, a, 1);
	if (f.bad)
		return ix_new(s, TINYC_IX_MOD, c, 0, a, NULL);
	/* (sum c_i x_i + k) mod c = (sum (c_i mod c) x_i + k mod c) mod c */
	for (int i = 0; i < f.n; i++) {
		int64_t ci = f.c[i] - c * floordiv(f.c[i], c);
		if (ci)
			lf_add(&r, ci, f.atom[i]);
	}
	r.k = f.k - c * floordiv(f.k, c);
	int64_t lo, hi;
	lf_range(s, &r, &lo, &hi);
	if (lo >= 0 && hi < c)
		return lf_build(s, &r);
	if (r.n == 1 && r.c[0] == 1 && r.k == 0 && r.atom[0]->op == TINYC_IX_MOD &&
	    r.atom[0]->c % c == 0)	/* (x mod a) mod c = x mod c when c | a */
		return ix_new(s, TINYC_IX_MOD, c, 0, r.atom[0]->a, NULL);
	int64_t g = lf_gcd(&r, c);	/* (g*x) mod (g*c) = g*(x mod c) */
	lf_div_exact(&r, g);
	return ix_mul(s, g, ix_new(s, TINYC_IX_MOD, c / g, 0, lf_build(s, &r), NULL));
}

/* e with every axis a replaced by sub[a], simplified over axes of extents s->ext. */
static const tinyc_ix *ix_subst(ibb *s, const tinyc_ix *e, const tinyc_ix *const *sub)
{
	if (!e)
		return NULL;
	switch (e->op) {
	case TINYC_IX_CONST:
	case TINYC_IX_SYM:
		return e;
	case TINYC_IX_AXIS:
		return sub[e->var];
	case TINYC_IX_ADD:
		return ix_add(s, ix_subst(s, e->a, sub), ix_subst(s, e->b, sub));
	case TINYC_IX_MUL:
		return ix_mul(s, e->c, ix_subst(s, e->a, sub));
	case TINYC_IX_FDIV:
		return ix_fdiv(s, ix_subst(s, e->a, sub), e->c);
	case TINYC_IX_MOD:
		return ix_mod(s, ix_subst(s, e->a, sub), e->c);
	}
	return NULL;
}

/* Normalise an expression into its linear form (sums collected). */
static const tinyc_ix *ix_norm(ibb *s, const tinyc_ix *e)
{
	lform f = {0};
	if (!e)
		return NULL;
	lf_of(&f, e, 1);
	return f.bad ? e : lf_build(s, &f);
}

/* A dim as an expression: the constant or the symbol. */
static const tinyc_ix *ix_dim(ibb *s, tinyc_dim d)
{
	return d.sym < 0 ? ix_const(s, d.val) : ix_new(s, TINYC_IX_SYM, 0, d.sym, NULL, NULL);
}

/* Evaluate an index expression (see lower.h). */
int tinyc_ix_eval(const tinyc_ix *e, const int64_t *ax, const int64_t *sym, int64_t *res)
{
	int64_t a, b;
	switch (e->op) {
	case TINYC_IX_CONST:
		*res = e->c;
		return 0;
	case TINYC_IX_AXIS:
		*res = ax[e->var];
		return 0;
	case TINYC_IX_SYM:
		if (!sym || sym[e->var] < 0)
			return -1;
		*res = sym[e->var];
		return 0;
	case TINYC_IX_ADD:
		if (tinyc_ix_eval(e->a, ax, sym, &a) < 0 || tinyc_ix_eval(e->b, ax, sym, &b) < 0)
			return -1;
		*res = a + b;
		return 0;
	case TINYC_IX_MUL:
		if (tinyc_ix_eval(e->a, ax, sym, &a) < 0)
			return -1;
		*res = e->c * a;
		return 0;
	case TINYC_IX_FDIV:
		if (tinyc_ix_eval(e->a, ax, sym, &a) < 0)
			return -1;
		*res = floordiv(a, e->c);
		return 0;
	case TINYC_IX_MOD:
		if (tinyc_ix_eval(e->a, ax, sym, &a) < 0)
			return -1;
		*res = a - e->c * floordiv(a, e->c);
		return 0;
	}
	return -1;
}

/* ---- dims ---------------------------------------------------------------------------------- */

/* The value of a dim: the constant, the bound value of its symbol, or -1. */
static int64_t dimv(const ibb *s, tinyc_dim d)
{
	if (d.sym < 0)
		return d.val;
	if (s->b && d.sym < s->b->n && s->b->val)
		return s->b->val[d.sym];
	return -1;
}

/* Same dim written the same way (same symbol or equal constants). */
static int dim_ident(tinyc_dim a, tinyc_dim b)
{
	return a.sym >= 0 ? a.sym == b.sym : (b.sym < 0 && a.val == b.val);
}

/* Same extent: identical, or equal values under the bindings. */
static int dim_same(const ibb *s, tinyc_dim a, tinyc_dim b)
{
	if (dim_ident(a, b))
		return 1;
	int64_t va = dimv(s, a), vb = dimv(s, b);
	return va >= 0 && va == vb;
}

/* Extent 1 (a constant 1, or a symbol bound to 1). */
static int dim_is1(const ibb *s, tinyc_dim d)
{
	return dimv(s, d) == 1;
}

/* A shape as "[M,1,K]" into a fresh heap string (for messages). */
static char *shape_str(const tinyc_graph *g, int rank, const tinyc_dim *shape)
{
	tinyc_buf b = {0};
	tinyc_print_shape(g, rank, shape, &b);
	if (!b.data)
		return strdup("[]");
	return b.data;
}

/* ---- axis names ---------------------------------------------------------------------------- */

static size_t name_hash(const char *s)
{
	size_t h = 1469598103934665603u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

/* The slot of name (existing, or the empty slot where it would go). */
static name_slot *name_find(ibb *s, const char *name)
{
	size_t mask = s->capname - 1;
	for (size_t i = name_hash(name) & mask;; i = (i + 1) & mask)
		if (!s->names[i].name || !strcmp(s->names[i].name, name))
			return &s->names[i];
}

/* Add a name (copied into the arena) to the set; returns its slot or NULL. */
static name_slot *name_add(ibb *s, const char *name)
{
	if (2 * (s->nname + 1) > s->capname) {
		size_t cap = s->capname ? 2 * s->capname : 64;
		name_slot *old = s->names;
		size_t oldcap = s->capname;
		s->names = calloc(cap, sizeof(name_slot));
		if (!s->names) {
			s->names = old;
			ialloc(s, (size_t)1 << 62);	/* reports OutOfMemory */
			return NULL;
		}
		s->capname = cap;
		for (size_t i = 0; i < oldcap; i++)
			if (old[i].name)
				*name_find(s, old[i].name) = old[i];
		free(old);
	}
	name_slot *slot = name_find(s, name);
	if (!slot->name) {
		size_t n = strlen(name) + 1;
		char *copy = ialloc(s, n);
		if (!copy)
			return NULL;
		memcpy(copy, name, n);
		slot->name = copy;
		slot->next = 1;
		s->nname++;
	}
	return slot;
}

/* A fresh name built on base: base itself if free, else base<k> for the next free k. */
static const char *name_fresh(ibb *s, const char *base)
{
	if (!s->capname || !name_find(s, base)->name) {
		name_slot *slot = name_add(s, base);
		return slot ? slot->name : NULL;
	}
	char buf[160];
	for (;;) {
		name_slot *bslot = name_find(s, base);
		snprintf(buf, sizeof(buf), "%s%s%d", base,
			 (base[strlen(base) - 1] >= '0' && base[strlen(base) - 1] <= '9') ? "_" : "",
			 bslot->next++);
		if (!name_find(s, buf)->name) {
			name_slot *slot = name_add(s, buf);
			return slot ? slot->name : NULL;
		}
	}
}

/* ---- values and axes ----------------------------------------------------------------------- */

/* Number a fresh axis of the given extent: iter, or broadcast for a constant 1. */
static int axis_new(ibb *s, tinyc_axis *ax, tinyc_dim size)
{
	char base[128];
	ax->id = s->ib->naxis_ids++;
	ax->size = size;
	ax->kind = (size.sym < 0 && size.val == 1) ? TINYC_AXIS_BROADCAST : TINYC_AXIS_ITER;
	if (size.sym >= 0) {
		const char *sym = s->g->syms[size.sym];
		size_t i = 0;
		for (; sym[i] && i < 100; i++)
			base[i] = (sym[i] >= 'A' && sym[i] <= 'Z') ? (char)(sym[i] - 'A' + 'a') : sym[i];
		base[i] = 0;
	} else {
		snprintf(base, sizeof(base), "%c%d", size.val == 1 ? 'b' : 'a', ax->id);
	}
	ax->name = name_fresh(s, base);
	return ax->name ? 0 : -1;
}

/* The axis that indexes dim d of value v (out[d] is a plain axis), or NULL. */
static const tinyc_axis *dim_axis(const tinyc_ibval *v, int d)
{
	const tinyc_ix *e = v->out[d];
	if (e && e->op == TINYC_IX_AXIS && v->axes[e->var].kind != TINYC_AXIS_REDUCE)
		return &v->axes[e->var];
	return NULL;
}

/* Axis `ax` of a new value: the operand's axis along dim d if it has one, else fresh. */
static int axis_from(ibb *s, tinyc_axis *ax, const tinyc_ibval *x, int d, tinyc_dim size)
{
	const tinyc_axis *src = x ? dim_axis(x, d) : NULL;
	if (src && dim_ident(src->size, size)) {
		*ax = *src;
		return 0;
	}
	return axis_new(s, ax, size);
}

/* Allocate v's arrays: naxes axes, the node's rank of out entries, maps for each operand. */
static int val_init(ibb *s, tinyc_ibval *v, int node, int naxes)
{
	const tinyc_uop *u = &s->g->nodes[node];
	v->node = node;
	v->naxes = naxes;
	v->rank = u->rank;
	v->acc = TINYC_DTYPE_NONE;
	v->axes = ialloc(s, sizeof(tinyc_axis) * (size_t)(naxes ? naxes : 1));
	v->out = ialloc(s, sizeof(tinyc_ix *) * (size_t)(u->rank ? u->rank : 1));
	if (!v->axes || !v->out)
		return -1;
	v->nmap = u->nsrc;
	for (int k = 0; k < u->nsrc; k++) {
		const tinyc_uop *x = &s->g->nodes[u->src[k]];
		v->map[k].src = u->src[k];
		v->map[k].rank = x->rank;
		v->map[k].idx = ialloc(s, sizeof(tinyc_ix *) * (size_t)(x->rank ? x->rank : 1));
		if (!v->map[k].idx)
			return -1;
	}
	return 0;
}

/* out = identity (every op but REDUCE). */
static int out_identity(ibb *s, tinyc_ibval *v)
{
	for (int d = 0; d < v->rank; d++)
		if (!(v->out[d] = ix_axis(s, d)))
			return -1;
	return 0;
}

/* A growable list of constraints while a value is built. */
typedef struct conlist {
	int n, cap;		/* used, allocated */
	tinyc_ixcon *c;		/* the constraints (heap; copied to the arena at the end) */
} conlist;

static int con_push(ibb *s, conlist *l, const tinyc_ix *e, int eq)
{
	if (!e)
		return -1;
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 8;
		tinyc_ixcon *c = realloc(l->c, sizeof(*c) * (size_t)cap);
		if (!c) {
			ialloc(s, (size_t)1 << 62);
			return -1;
		}
		l->c = c;
		l->cap = cap;
	}
	l->c[l->n].e = e;
	l->c[l->n].eq = eq;
	l->n++;
	return 0;
}

/* lo <= e <= hi as two constraints (hi an expression). */
static int con_range(ibb *s, conlist *l, const tinyc_ix *e, const tinyc_ix *hi)
{
	if (con_push(s, l, e, 0) < 0)
		return -1;
	return con_push(s, l, ix_sub(s, hi, e), 0);
}

/* Copy a constraint list into the arena. */
static tinyc_ixcon *con_commit(ibb *s, const conlist *l)
{
	tinyc_ixcon *c = ialloc(s, sizeof(*c) * (size_t)(l->n ? l->n : 1));
	if (c && l->n)
		memcpy(c, l->c, sizeof(*c) * (size_t)l->n);
	return c;
}

/* Set v's domain: the bounds of every axis, then the guards in `guards`. */
static int domain_set(ibb *s, tinyc_ibval *v, const conlist *guards)
{
	conlist l = {0};
	int rc = 0;
	for (int a = 0; a < v->naxes && !rc; a++) {
		const tinyc_ix *x = ix_axis(s, a);
		rc = con_range(s, &l, x, ix_add(s, ix_dim(s, v->axes[a].size), ix_const(s, -1)));
	}
	for (int i = 0; guards && i < guards->n && !rc; i++)
		rc = con_push(s, &l, guards->c[i].e, guards->c[i].eq);
	if (!rc) {
		v->ndom = l.n;
		v->domain = con_commit(s, &l);
		rc = v->domain ? 0 : -1;
	}
	free(l.c);
	return rc;
}

/* Finish a value whose output is its own axes in order: out = identity, domain = the axes'
 * bounds and `guards` (may be NULL). */
static int val_finish(ibb *s, tinyc_ibval *v, const conlist *guards)
{
	if (out_identity(s, v) < 0)
		return -1;
	return domain_set(s, v, guards);
}

/* ---- local checks -------------------------------------------------------------------------- */

/* The value's shape from its axes and `out` agrees with the node's declared shape. */
static int check_alignment(ibb *s, const tinyc_ibval *v)
{
	const tinyc_uop *u = &s->g->nodes[v->node];
	if (v->rank != u->rank)
		return tinyc_error_at(s->ctx, src_of(s->g), u->loc, "AxisAlignmentMismatch",
				      "%%%s: the IndexBook gives rank %d, the node says %d", u->id,
				      v->rank, u->rank);
	for (int d = 0; d < u->rank; d++) {
		const tinyc_ix *e = v->out[d];
		tinyc_dim got = {1, -1};
		if (e->op == TINYC_IX_AXIS)
			got = v->axes[e->var].size;
		else if (!is_const(e, 0))
			return tinyc_error_at(s->ctx, src_of(s->g), u->loc, "AxisAlignmentMismatch",
					      "%%%s: dim %d is not stored along one axis", u->id, d);
		if (!dim_same(s, got, u->shape[d])) {
			char *a = shape_str(s->g, 1, &got), *b = shape_str(s->g, 1, &u->shape[d]);
			tinyc_error_at(s->ctx, src_of(s->g), at(u, u->shape_loc), "AxisAlignmentMismatch",
				       "%%%s: dim %d has size %s from its axes but %s in the signature",
				       u->id, d, a ? a : "?", b ? b : "?");
			free(a);
			free(b);
			return -1;
		}
	}
	return 0;
}

/* Typing rules of DESIGN.md §2 (the verifier checks them too; this is the safety net). */
static int check_types(ibb *s, const tinyc_uop *u)
{
	const tinyc_opinfo *info = tinyc_op_info(u->op);
	const tinyc_uop *x[3] = {0};
	for (int k = 0; k < u->nsrc; k++)
		x[k] = &s->g->nodes[u->src[k]];
	const char *why = NULL;
	int at = 0;
	switch (info->dtrule) {
	case TINYC_DT_SAME:
		for (int k = 0; k < u->nsrc && !why; k++)
			if (x[k]->dtype != u->dtype)
				why = "operand and result dtypes differ", at = k;
		break;
	case TINYC_DT_BOOL:
		if (u->dtype != TINYC_BOOL)
			why = "a comparison produces bool";
		else if (u->nsrc == 2 && x[0]->dtype != x[1]->dtype)
			why = "operands of a comparison have different dtypes", at = 1;
		break;
	case TINYC_DT_SELECT:
		if (x[0]->dtype != TINYC_BOOL)
			why = "WHERE needs a bool condition";
		else if (x[1]->dtype != u->dtype)
			why = "WHERE's value has another dtype", at = 1;
		else if (x[2]->dtype != u->dtype)
			why = "WHERE's value has another dtype", at = 2;
		break;
	case TINYC_DT_DECLARED:
		if (u->op == TINYC_OP_BITCAST && tinyc_dtype_size(x[0]->dtype) != tinyc_dtype_size(u->dtype))
			why = "BITCAST must keep the item size";
		break;
	case TINYC_DT_ACC:
		break;
	}
	if (!why)
		return 0;
	tinyc_loc loc = u->nsrc && u->src_loc[at].line ? u->src_loc[at] : u->loc;
	return tinyc_error_at(s->ctx, src_of(s->g), loc, "TypeMismatch", "%s (%%%s: %s)", why, u->id,
			      tinyc_op_info(u->op)->name);
}

/* ---- per-op rules -------------------------------------------------------------------------- */

/* (A) a leaf: fresh axes, one per dim. */
static int build_leaf(ibb *s, tinyc_ibval *v, const tinyc_uop *u)
{
	if (val_init(s, v, v->node, u->rank) < 0)
		return -1;
	for (int d = 0; d < u->rank; d++)
		if (axis_new(s, &v->axes[d], u->shape[d]) < 0)
			return -1;
	return val_finish(s, v, NULL);
}

/* (B) RESHAPE: runs of equal element count; one identical dim keeps its axis, any other run
 * is linearised (L = sum of new index * constant stride) and re-decomposed
 * (old index = floor(L / stride) mod size, the mod's range a domain guard). */
static int build_reshape(ibb *s, tinyc_ibval *v, const tinyc_uop *u)
{
	const tinyc_ibval *x = &s->ib->val[u->src[0]];
	const tinyc_uop *xu = &s->g->nodes[u->src[0]];
	const tinyc_dim *in = xu->shape, *out = u->shape;
	int rin = xu->rank, rout = u->rank;
	const tinyc_ix **idx;
	conlist guards = {0};
	int rc = -1;

	if (val_init(s, v, v->node, rout) < 0)
		return -1;
	int64_t *ext = malloc(sizeof(int64_t) * (size_t)(rout ? rout : 1));
	if (!ext)
		return tinyc_error(s->ctx, "OutOfMemory", "out of memory");
	for (int d = 0; d < rout; d++)
		ext[d] = dimv(s, out[d]);
	s->ext = ext;	/* the decomposition simplifies over the new axes' extents */
	idx = v->map[0].idx;
	int i = 0, j = 0;
	for (;;) {
		while (i < rin && dim_is1(s, in[i]) && in[i].sym < 0)
			if (!(idx[i++] = ix_const(s, 0)))
				goto done;
		for (; j < rout && dim_is1(s, out[j]) && out[j].sym < 0; j++)
			if (axis_new(s, &v->axes[j], out[j]) < 0)
				goto done;
		if (i == rin && j == rout)
			break;
		if (i == rin || j == rout) {
			char *a = shape_str(s->g, rin, in), *b = shape_str(s->g, rout, out);
			tinyc_error_at(s->ctx, src_of(s->g), at(u, u->attr_locs[TINYC_ATTR_SHAPE]), "InvalidReshape",
				       "%s and %s have different element counts", a, b);
			free(a);
			free(b);
			goto done;
		}
		if (dim_ident(in[i], out[j])) {	/* a dim kept as it is */
			if (axis_from(s, &v->axes[j], x, i, out[j]) < 0 || !(idx[i] = ix_axis(s, j)))
				goto done;
			i++, j++;
			continue;
		}
		/* a run of dims that split or merge: every size must be known */
		int i1 = i, j1 = j;
		int64_t pin = 1, pout = 1;
		do {
			int use_in = pin <= pout;
			if ((use_in && i1 >= rin) || (!use_in && j1 >= rout)) {
				char *a = shape_str(s->g, rin, in), *b = shape_str(s->g, rout, out);
				tinyc_error_at(s->ctx, src_of(s->g), at(u, u->attr_locs[TINYC_ATTR_SHAPE]), "InvalidReshape",
					       "%s and %s have different element counts", a, b);
				free(a);
				free(b);
				goto done;
			}
			const tinyc_dim *d = use_in ? &in[i1++] : &out[j1++];
			int64_t dv = dimv(s, *d);
			if (dv < 0) {
				char *a = shape_str(s->g, rin, in), *b = shape_str(s->g, rout, out);
				tinyc_error_at(s->ctx, src_of(s->g), at(u, u->attr_locs[TINYC_ATTR_SHAPE]), "SymbolicReshape",
					       "reshaping %s to %s splits or merges the symbolic dim %s: "
					       "isl needs constant divisors, bind it with --bind %s=...",
					       a, b, s->g->syms[d->sym], s->g->syms[d->sym]);
				free(a);
				free(b);
				goto done;
			}
			int64_t *p = use_in ? &pin : &pout;
			if (__builtin_mul_overflow(*p, dv, p)) {
				tinyc_error_at(s->ctx, src_of(s->g), u->loc, "SizeOverflow",
					       "element count of a reshape overflows int64");
				goto done;
			}
		} while (pin != pout);
		/* new axes for the run's output dims; L = sum_j axis_j * stride_j */
		const tinyc_ix *L = ix_const(s, 0);
		int64_t stride = 1;
		for (int jj = j; jj < j1; jj++)
			if (axis_new(s, &v->axes[jj], out[jj]) < 0)
				goto done;
		for (int jj = j1 - 1; jj >= j; jj--) {
			int64_t dv = dimv(s, out[jj]);
			if (dv != 1)
				L = ix_add(s, ix_mul(s, stride, ix_axis(s, jj)), L);
			stride *= dv;
		}
		/* old index = floor(L / stride) mod size; the outermost needs no mod (L < count) */
		int outermost = i;
		while (outermost < i1 && dimv(s, in[outermost]) == 1)
			outermost++;
		stride = 1;
		for (int ii = i1 - 1; ii >= i; ii--) {
			int64_t dv = dimv(s, in[ii]);
			if (dv == 1) {
				idx[ii] = ix_const(s, 0);
			} else if (ii == outermost) {
				idx[ii] = ix_fdiv(s, L, stride);
			} else {
				idx[ii] = ix_mod(s, ix_fdiv(s, L, stride), dv);
				/* the %-born condition 0 <= (..) mod size < size, as a guard */
				if (idx[ii]->op == TINYC_IX_MOD &&
				    con_range(s, &guards, idx[ii], ix_const(s, dv - 1)) < 0)
					goto done;
			}
			if (!idx[ii])
				goto done;
			stride *= dv;
		}
		i = i1, j = j1;
	}
	rc = val_finish(s, v, &guards);
done:
	s->ext = NULL;
	free(ext);
	free(guards.c);
	return rc;
}

/* Normalise an axis number that may be negative; -1 when out of range. */
static int norm_axis(int64_t a, int rank)
{
	if (a < 0)
		a += rank;
	return (a < 0 || a >= rank) ? -1 : (int)a;
}

/* (C) PERMUTE: out dim i is operand dim perm[i]. */
static int build_permute(ibb *s, tinyc_ibval *v, const tinyc_uop *u)
{
	const tinyc_ibval *x = &s->ib->val[u->src[0]];
	int r = u->rank;
	char seen[TINYC_MAX_RANK] = {0};
	if (u->naxes != r || r > TINYC_MAX_RANK)
		return tinyc_error_at(s->ctx, src_of(s->g), u->attr_loc, "InvalidAttribute",
				      "perm must list every axis once");
	if (val_init(s, v, v->node, r) < 0)
		return -1;
	for (int i = 0; i < r; i++) {
		int p = norm_axis(u->axes[i], r);
		if (p < 0 || seen[p])
			return tinyc_error_at(s->ctx, src_of(s->g), u->attr_loc, "InvalidAttribute",
					      "perm must be a permutation of 0..%d", r - 1);
		seen[p] = 1;
		if (axis_from(s, &v->axes[i], x, p, s->g->nodes[u->src[0]].shape[p]) < 0 ||
		    !(v->map[0].idx[p] = ix_axis(s, i)))
			return -1;
	}
	return val_finish(s, v, NULL);
}

/* BroadcastMismatch between two shapes at output dim d (reported as a negative axis). */
static int broadcast_mismatch(ibb *s, const tinyc_uop *u, int k, const tinyc_uop *a,
			      const tinyc_uop *b, int d)
{
	char *sa = shape_str(s->g, a->rank, a->shape), *sb = shape_str(s->g, b->rank, b->shape);
	tinyc_loc loc = u->src_loc[k].line ? u->src_loc[k] : u->loc;
	tinyc_error_at(s->ctx, src_of(s->g), loc, "BroadcastMismatch", "%s vs %s at axis %d",
		       sa ? sa : "?", sb ? sb : "?", d - u->rank);
	free(sa);
	free(sb);
	return -1;
}

/* (D) EXPAND: size-1 dims become new axes read at the constant 0. */
static int build_expand(ibb *s, tinyc_ibval *v, const tinyc_uop *u)
{
	const tinyc_ibval *x = &s->ib->val[u->src[0]];
	const tinyc_uop *xu = &s->g->nodes[u->src[0]];
	if (xu->rank != u->rank)
		return tinyc_error_at(s->ctx, src_of(s->g), u->loc, "AxisAlignmentMismatch",
				      "EXPAND keeps the rank (%d), got %d", xu->rank, u->rank);
	if (val_init(s, v, v->node, u->rank) < 0)
		return -1;
	for (int d = 0; d < u->rank; d++) {
		const tinyc_ix **e = &v->map[0].idx[d];
		if (dim_ident(xu->shape[d], u->shape[d])) {
			if (axis_from(s, &v->axes[d], x, d, u->shape[d]) < 0 || !(*e = ix_axis(s, d)))
				return -1;
		} else if (dim_is1(s, xu->shape[d])) {
			if (axis_new(s, &v->axes[d], u->shape[d]) < 0 || !(*e = ix_const(s, 0)))
				return -1;
		} else if (dim_same(s, xu->shape[d], u->shape[d])) {
			if (axis_new(s, &v->axes[d], u->shape[d]) < 0 || !(*e = ix_axis(s, d)))
				return -1;
		} else {
			return broadcast_mismatch(s, u, 0, xu, u, d);
		}
	}
	return val_finish(s, v, NULL);
}

/* (E) PAD, SHRINK, FLIP: affine maps; PAD's map is guarded (outside: 0). */
static int build_affine(ibb *s, tinyc_ibval *v, const tinyc_uop *u)
{
	const tinyc_ibval *x = &s->ib->val[u->src[0]];
	const tinyc_uop *xu = &s->g->nodes[u->src[0]];
	int r = u->rank;
	char flip[TINYC_MAX_RANK] = {0};
	conlist guards = {0};
	int rc = -1;

	if (xu->rank != r || r > TINYC_MAX_RANK)
		return tinyc_error_at(s->ctx, src_of(s->g), u->loc, "AxisAlignmentMismatch",
				      "%s keeps the rank (%d), got %d", tinyc_op_info(u->op)->name,
				      xu->rank, r);
	if ((u->op == TINYC_OP_PAD || u->op == TINYC_OP_SHRINK) && u->npairs != r)
		return tinyc_error_at(s->ctx, src_of(s->g), u->attr_loc, "InvalidAttribute",
				      "%s needs one pair per axis", tinyc_op_info(u->op)->name);
	if (u->op == TINYC_OP_FLIP)
		for (int i = 0; i < u->naxes; i++) {
			int a = norm_axis(u->axes[i], r);
			if (a < 0)
				return tinyc_error_at(s->ctx, src_of(s->g), u->attr_loc, "InvalidAttribute",
						      "FLIP axis %lld out of range", (long long)u->axes[i]);
			flip[a] = 1;
		}
	if (val_init(s, v, v->node, r) < 0)
		return -1;
	for (int d = 0; d < r; d++) {
		const tinyc_ix **e = &v->map[0].idx[d];
		int64_t lo = 0, hi = 0;
		if (u->op == TINYC_OP_PAD || u->op == TINYC_OP_SHRINK)
			lo = u->pairs[d][0], hi = u->pairs[d][1];
		int keep = (u->op == TINYC_OP_FLIP) ? !flip[d]
			 : (u->op == TINYC_OP_PAD) ? (lo == 0 && hi == 0)
			 : (lo == 0 && dim_ident(xu->shape[d], u->shape[d]));
		if (keep) {
			if (axis_from(s, &v->axes[d], x, d, xu->shape[d]) < 0 || !(*e = ix_axis(s, d)))
				goto done;
			continue;
		}
		if (axis_new(s, &v->axes[d], u->shape[d]) < 0)
			goto done;
		const tinyc_ix *ax = ix_axis(s, d);
		if (u->op == TINYC_OP_PAD) {	/* in = out - before, read where 0 <= in < size */
			*e = ix_add(s, ax, ix_const(s, -lo));
			if (con_range(s, &guards, *e, ix_add(s, ix_dim(s, xu->shape[d]), ix_const(s, -1))) < 0)
				goto done;
		} else if (u->op == TINYC_OP_SHRINK) {	/* in = out + start */
			*e = ix_add(s, ax, ix_const(s, lo));
		} else {	/* FLIP: in = size - 1 - out */
			*e = ix_sub(s, ix_add(s, ix_dim(s, xu->shape[d]), ix_const(s, -1)), ax);
		}
		if (!*e)
			goto done;
	}
	if (guards.n) {
		v->map[0].nguard = guards.n;
		v->map[0].guard = con_commit(s, &guards);
		v->map[0].fill = 0.0;
		if (!v->map[0].guard)
			goto done;
	}
	rc = val_finish(s, v, NULL);
done:
	free(guards.c);
	return rc;
}

/* CONTIGUOUS and OUTPUT: the identity. */
static int build_identity(ibb *s, tinyc_ibval *v, const tinyc_uop *u)
{
	const tinyc_ibval *x = &s->ib->val[u->src[0]];
	if (s->g->nodes[u->src[0]].rank != u->rank)
		return tinyc_error_at(s->ctx, src_of(s->g), u->loc, "AxisAlignmentMismatch",
				      "%s keeps the rank", tinyc_op_info(u->op)->name);
	if (val_init(s, v, v->node, u->rank) < 0)
		return -1;
	for (int d = 0; d < u->rank; d++)
		if (axis_from(s, &v->axes[d], x, d, s->g->nodes[u->src[0]].shape[d]) < 0 ||
		    !(v->map[0].idx[d] = ix_axis(s, d)))
			return -1;
	return val_finish(s, v, NULL);
}

/* (E) REDUCE: the operand's axes, the reduced ones marked reduce and dropped from out
 * (kept as index 0 with keepdim); reduce_axes and the accumulator dtype recorded. */
static int build_reduce(ibb *s, tinyc_ibval *v, const tinyc_uop *u)
{
	const tinyc_ibval *x = &s->ib->val[u->src[0]];
	const tinyc_uop *xu = &s->g->nodes[u->src[0]];
	int r = xu->rank;
	char red[TINYC_MAX_RANK] = {0};
	int nred = 0;
	if (r > TINYC_MAX_RANK)
		return -1;
	for (int i = 0; i < u->naxes; i++) {
		int a = norm_axis(u->axes[i], r);
		if (a < 0)
			return tinyc_error_at(s->ctx, src_of(s->g), u->attr_loc, "InvalidAttribute",
					      "REDUCE axis %lld out of range for rank %d",
					      (long long)u->axes[i], r);
		nred += !red[a];
		red[a] = 1;
	}
	int rank_out = u->keepdim ? r : r - nred;
	if (rank_out != u->rank)
		return tinyc_error_at(s->ctx, src_of(s->g), u->loc, "AxisAlignmentMismatch",
				      "REDUCE of rank %d over %d axes gives rank %d, the node says %d",
				      r, nred, rank_out, u->rank);
	if (val_init(s, v, v->node, r) < 0)
		return -1;
	v->nreduce = nred;
	v->reduce_axes = ialloc(s, sizeof(int) * (size_t)(nred ? nred : 1));
	if (!v->reduce_axes)
		return -1;
	int o = 0, k = 0;
	for (int d = 0; d < r; d++) {
		if (axis_from(s, &v->axes[d], x, d, xu->shape[d]) < 0 ||
		    !(v->map[0].idx[d] = ix_axis(s, d)))
			return -1;
		if (red[d]) {
			v->axes[d].kind = TINYC_AXIS_REDUCE;
			v->reduce_axes[k++] = d;
			if (u->keepdim && !(v->out[o++] = ix_const(s, 0)))
				return -1;
		} else if (!(v->out[o++] = ix_axis(s, d))) {
			return -1;
		}
	}
	v->redop = u->redop;
	v->acc = u->acc != TINYC_DTYPE_NONE ? u->acc : u->dtype;
	if ((u->redop == TINYC_RED_ADD || u->redop == TINYC_RED_MUL) &&
	    tinyc_dtype_is_16bit_float(v->acc))
		return tinyc_error_at(s->ctx, src_of(s->g),
				      at(u, u->acc != TINYC_DTYPE_NONE ? u->attr_locs[TINYC_ATTR_ACC]
								     : u->type_loc),
				      "AccDtypeMissing", "REDUCE %s would accumulate in %s: give acc=float",
				      tinyc_redop_name(u->redop), tinyc_dtype_name(v->acc));
	return domain_set(s, v, NULL);
}

/* (F) elementwise ops: right-aligned broadcasting; a size-1 or missing operand dim is read
 * at the constant 0, two different sizes > 1 are a BroadcastMismatch. */
static int build_elementwise(ibb *s, tinyc_ibval *v, const tinyc_uop *u)
{
	int r = u->rank;
	if (val_init(s, v, v->node, r) < 0)
		return -1;
	for (int k = 0; k < u->nsrc; k++)
		if (s->g->nodes[u->src[k]].rank > r)
			return tinyc_error_at(s->ctx, src_of(s->g),
					      u->src_loc[k].line ? u->src_loc[k] : u->loc,
					      "AxisAlignmentMismatch",
					      "operand %d has rank %d, more than the result's %d", k,
					      s->g->nodes[u->src[k]].rank, r);
	for (int d = 0; d < r; d++) {
		int chosen = -1, first = -1;
		for (int k = 0; k < u->nsrc; k++) {
			const tinyc_uop *xu = &s->g->nodes[u->src[k]];
			int dk = d - (r - xu->rank);
			if (dk < 0)
				continue;
			if (first < 0)
				first = k;
			if (dim_is1(s, xu->shape[dk]))
				continue;
			if (chosen < 0) {
				chosen = k;
				continue;
			}
			const tinyc_uop *cu = &s->g->nodes[u->src[chosen]];
			if (!dim_same(s, cu->shape[d - (r - cu->rank)], xu->shape[dk]))
				return broadcast_mismatch(s, u, k, cu, xu, d);
		}
		int from = chosen >= 0 ? chosen : first;
		if (from >= 0) {
			const tinyc_uop *fu = &s->g->nodes[u->src[from]];
			if (axis_from(s, &v->axes[d], &s->ib->val[u->src[from]], d - (r - fu->rank),
				      fu->shape[d - (r - fu->rank)]) < 0)
				return -1;
		} else if (axis_new(s, &v->axes[d], u->shape[d]) < 0) {
			return -1;
		}
		for (int k = 0; k < u->nsrc; k++) {
			const tinyc_uop *xu = &s->g->nodes[u->src[k]];
			int dk = d - (r - xu->rank);
			if (dk < 0)
				continue;
			v->map[k].idx[dk] = dim_is1(s, xu->shape[dk]) ? ix_const(s, 0) : ix_axis(s, d);
			if (!v->map[k].idx[dk])
				return -1;
		}
	}
	return val_finish(s, v, NULL);
}

/* Build the entry of node i (its operands are built). */
static int build_node(ibb *s, int i)
{
	const tinyc_uop *u = &s->g->nodes[i];
	tinyc_ibval *v = &s->ib->val[i];
	v->node = i;
	v->acc = TINYC_DTYPE_NONE;
	if (check_types(s, u) < 0)
		return -1;
	int rc;
	switch (u->op) {
	case TINYC_OP_BUFFER:
	case TINYC_OP_CONST:
		rc = build_leaf(s, v, u);
		break;
	case TINYC_OP_RESHAPE:
		rc = build_reshape(s, v, u);
		break;
	case TINYC_OP_PERMUTE:
		rc = build_permute(s, v, u);
		break;
	case TINYC_OP_EXPAND:
		rc = build_expand(s, v, u);
		break;
	case TINYC_OP_PAD:
	case TINYC_OP_SHRINK:
	case TINYC_OP_FLIP:
		rc = build_affine(s, v, u);
		break;
	case TINYC_OP_CONTIGUOUS:
	case TINYC_OP_OUTPUT:
		rc = build_identity(s, v, u);
		break;
	case TINYC_OP_REDUCE:
		rc = build_reduce(s, v, u);
		break;
	default:
		rc = build_elementwise(s, v, u);
		break;
	}
	if (rc < 0)
		return -1;
	return check_alignment(s, v);
}

/* Build the IndexBook (see lower.h). */
tinyc_indexbook *tinyc_indexbook_build(tinyc_ctx *ctx, const tinyc_graph *g,
				       const tinyc_bindings *b)
{
	ibb s = {0};
	int nerr = 0;
	if (!g)
		return NULL;
	tinyc_indexbook *ib = tinyc_calloc(ctx, 1, sizeof(*ib));
	if (!ib)
		return NULL;
	ib->g = g;
	ib->bind = b;
	ib->n = g->n;
	if (!(ib->arena = tinyc_arena_new()))
		tinyc_error(ctx, "OutOfMemory", "out of memory building the IndexBook");
	s.ctx = ctx;
	s.ib = ib;
	s.g = g;
	s.b = (b && b->n == g->nsym) ? b : NULL;
	s.bad = tinyc_calloc(ctx, (size_t)(g->n ? g->n : 1), 1);
	if (!ib->arena || !s.bad)
		goto fail;
	ib->val = ialloc(&s, sizeof(tinyc_ibval) * (size_t)(g->n ? g->n : 1));
	if (!ib->val)
		goto fail;
	for (int k = 0; k < g->nsym; k++)	/* axis names never equal a symbol's */
		if (!name_add(&s, g->syms[k]))
			goto fail;
	for (int i = 0; i < g->n && !s.oom; i++) {
		const tinyc_uop *u = &g->nodes[i];
		int ok = u->op >= 0 && u->op < TINYC_OP_COUNT &&
			 u->nsrc == tinyc_op_info(u->op)->arity && u->rank <= TINYC_MAX_RANK;
		for (int k = 0; ok && k < u->nsrc; k++) {
			ok = u->src[k] >= 0 && u->src[k] < i;
			if (ok && s.bad[u->src[k]])
				s.bad[i] = 1;	/* already reported at the operand */
		}
		if (!ok) {
			tinyc_error_at(ctx, src_of(g), u->loc, "InvalidGraph",
				       "%%%s: operands must be defined before use", u->id);
			s.bad[i] = 1;
			nerr++;
			continue;
		}
		if (s.bad[i])
			continue;
		if (build_node(&s, i) < 0) {
			s.bad[i] = 1;
			nerr++;
		}
	}
	if (nerr || s.oom)
		goto fail;
	free(s.bad);
	free(s.names);
	return ib;
fail:
	free(s.bad);
	free(s.names);
	tinyc_indexbook_free(ib);
	return NULL;
}

void tinyc_indexbook_free(tinyc_indexbook *ib)
{
	if (!ib)
		return;
	tinyc_arena_free(ib->arena);
	free(ib);
}

/* Substitute and simplify (see lower.h). */
const tinyc_ix *tinyc_ix_substitute(tinyc_indexbook *ib, const tinyc_ix *e,
				    const tinyc_ix *const *sub, const int64_t *ext)
{
	ibb s = {0};
	s.ib = ib;
	s.g = ib->g;
	s.b = (ib->bind && ib->bind->n == ib->g->nsym) ? ib->bind : NULL;
	s.ext = ext;
	return ix_norm(&s, ix_subst(&s, e, sub));
}

/* Range of an expression (see lower.h). */
int tinyc_ix_range(const tinyc_indexbook *ib, const tinyc_ix *e, const int64_t *ext,
		   int64_t *lo, int64_t *hi)
{
	ibb s = {0};
	s.ib = (tinyc_indexbook *)ib;
	s.g = ib->g;
	s.b = (ib->bind && ib->bind->n == ib->g->nsym) ? ib->bind : NULL;
	s.ext = ext;
	ix_range(&s, e, lo, hi);
	return (*lo > -RINF ? 1 : 0) | (*hi < RINF ? 2 : 0);
}

/* ---- the final validation -------------------------------------------------------------- */

/* Does e name only axes below naxes and symbols below nsym? */
static int ix_well_formed(const tinyc_ix *e, int naxes, int nsym)
{
	if (!e)
		return 0;
	switch (e->op) {
	case TINYC_IX_CONST:
		return 1;
	case TINYC_IX_AXIS:
		return e->var >= 0 && e->var < naxes;
	case TINYC_IX_SYM:
		return e->var >= 0 && e->var < nsym;
	case TINYC_IX_ADD:
		return ix_well_formed(e->a, naxes, nsym) && ix_well_formed(e->b, naxes, nsym);
	case TINYC_IX_MUL:
		return ix_well_formed(e->a, naxes, nsym);
	case TINYC_IX_FDIV:
	case TINYC_IX_MOD:
		return e->c > 0 && ix_well_formed(e->a, naxes, nsym);
	}
	return 0;
}

/* Check one value (seed §9's final pass); 0 or -1. */
static int verify_val(ibb *s, const tinyc_ibval *v, tinyc_dim *id_size)
{
	const tinyc_uop *u = &s->g->nodes[v->node];
	const tinyc_source *src = src_of(s->g);
	int nsym = s->g->nsym;
	for (int a = 0; a < v->naxes; a++) {
		const tinyc_axis *ax = &v->axes[a];
		if (ax->id < 0 || ax->id >= s->ib->naxis_ids || !ax->name)
			return tinyc_error_at(s->ctx, src, u->loc, "InvalidIndexBook",
					      "%%%s: axis %d has no valid id", u->id, a);
		tinyc_dim *seen = &id_size[ax->id];
		if (seen->val == 0 && seen->sym < 0)
			*seen = ax->size;
		else if (!dim_ident(*seen, ax->size))
			return tinyc_error_at(s->ctx, src, u->loc, "AxisAlignmentMismatch",
					      "%%%s: axis %s changes size along the graph", u->id,
					      ax->name);
		if (ax->kind == TINYC_AXIS_REDUCE && u->op != TINYC_OP_REDUCE)
			return tinyc_error_at(s->ctx, src, u->loc, "InvalidIndexBook",
					      "%%%s: reduce axis %s outside a REDUCE", u->id, ax->name);
	}
	if (v->rank != u->rank)
		return check_alignment(s, v);
	for (int d = 0; d < v->rank; d++)
		if (!ix_well_formed(v->out[d], v->naxes, nsym))
			return tinyc_error_at(s->ctx, src, u->loc, "InvalidIndexBook",
					      "%%%s: malformed out expression", u->id);
	if (check_alignment(s, v) < 0)
		return -1;
	if (v->nmap != u->nsrc)
		return tinyc_error_at(s->ctx, src, u->loc, "InvalidIndexBook",
				      "%%%s: %d maps for %d operands", u->id, v->nmap, u->nsrc);
	for (int k = 0; k < v->nmap; k++) {
		const tinyc_axismap *m = &v->map[k];
		const tinyc_uop *xu = &s->g->nodes[u->src[k]];
		if (m->src != u->src[k] || m->rank != xu->rank)
			return tinyc_error_at(s->ctx, src, u->loc, "AxisAlignmentMismatch",
					      "%%%s: the map of operand %%%s has %d indices for rank %d",
					      u->id, xu->id, m->rank, xu->rank);
		for (int d = 0; d < m->rank; d++) {
			const tinyc_ix *e = m->idx[d];
			if (!ix_well_formed(e, v->naxes, nsym))
				return tinyc_error_at(s->ctx, src, u->loc, "InvalidIndexBook",
						      "%%%s: malformed map of %%%s", u->id, xu->id);
			/* a size-1 dim is read at 0: the constant, or a size-1 axis */
			if (dim_is1(s, xu->shape[d]) && xu->shape[d].sym < 0 && !is_const(e, 0) &&
			    !(e->op == TINYC_IX_AXIS && dim_is1(s, v->axes[e->var].size)))
				return tinyc_error_at(s->ctx, src, u->loc, "BroadcastMismatch",
						      "%%%s: size-1 dim %d of %%%s is not read at 0",
						      u->id, d, xu->id);
			/* a plain axis reads an operand dim of the same extent (PAD/SHRINK shift) */
			if (e->op == TINYC_IX_AXIS && !dim_is1(s, xu->shape[d]) &&
			    u->op != TINYC_OP_PAD && u->op != TINYC_OP_SHRINK &&
			    !dim_same(s, v->axes[e->var].size, xu->shape[d]))
				return tinyc_error_at(s->ctx, src, u->loc, "AxisAlignmentMismatch",
						      "%%%s: axis %s reads dim %d of %%%s with another size",
						      u->id, v->axes[e->var].name, d, xu->id);
		}
		for (int gi = 0; gi < m->nguard; gi++)
			if (!ix_well_formed(m->guard[gi].e, v->naxes, nsym))
				return tinyc_error_at(s->ctx, src, u->loc, "InvalidIndexBook",
						      "%%%s: malformed guard", u->id);
	}
	if (v->ndom < 2 * v->naxes)
		return tinyc_error_at(s->ctx, src, u->loc, "InvalidIndexBook",
				      "%%%s: the domain lacks axis bounds", u->id);
	for (int c = 0; c < v->ndom; c++)
		if (!ix_well_formed(v->domain[c].e, v->naxes, nsym))
			return tinyc_error_at(s->ctx, src, u->loc, "InvalidIndexBook",
					      "%%%s: malformed domain", u->id);
	if (u->op == TINYC_OP_REDUCE) {
		if (v->acc == TINYC_DTYPE_NONE)
			return tinyc_error_at(s->ctx, src, u->loc, "AccDtypeMissing",
					      "%%%s: REDUCE without an accumulator dtype", u->id);
		if ((v->redop == TINYC_RED_ADD || v->redop == TINYC_RED_MUL) &&
		    tinyc_dtype_is_16bit_float(v->acc))
			return tinyc_error_at(s->ctx, src, u->loc, "AccDtypeMissing",
					      "%%%s: REDUCE %s accumulates in %s", u->id,
					      tinyc_redop_name(v->redop), tinyc_dtype_name(v->acc));
		for (int k = 0; k < v->nreduce; k++)
			if (v->reduce_axes[k] < 0 || v->reduce_axes[k] >= v->naxes ||
			    v->axes[v->reduce_axes[k]].kind != TINYC_AXIS_REDUCE)
				return tinyc_error_at(s->ctx, src, u->loc, "InvalidIndexBook",
						      "%%%s: reduce_axes names a non-reduce axis", u->id);
	}
	return 0;
}

/* The final validation (see lower.h). */
int tinyc_indexbook_verify(tinyc_ctx *ctx, const tinyc_indexbook *ib)
{
	if (!ib || !ib->g || ib->n != ib->g->n)
		return tinyc_error(ctx, "InvalidIndexBook", "the IndexBook does not match its graph");
	ibb s = {0};
	s.ctx = ctx;
	s.ib = (tinyc_indexbook *)ib;
	s.g = ib->g;
	s.b = (ib->bind && ib->bind->n == ib->g->nsym) ? ib->bind : NULL;
	tinyc_dim *id_size = calloc((size_t)(ib->naxis_ids ? ib->naxis_ids : 1), sizeof(tinyc_dim));
	if (!id_size)
		return tinyc_error(ctx, "OutOfMemory", "out of memory verifying the IndexBook");
	for (int i = 0; i < ib->naxis_ids; i++)
		id_size[i].sym = -1;
	int rc = 0;
	for (int i = 0; i < ib->n; i++)
		if (verify_val(&s, &ib->val[i], id_size) < 0)
			rc = -1;
	free(id_size);
	return rc;
}

/* ---- printer ------------------------------------------------------------------------------- */

/* Print e; `paren` asks for parentheses around a sum. */
static void ix_print(const tinyc_indexbook *ib, const tinyc_ibval *v, const tinyc_ix *e,
		     int paren, tinyc_buf *out)
{
	switch (e->op) {
	case TINYC_IX_CONST:
		tinyc_buf_printf(out, "%lld", (long long)e->c);
		return;
	case TINYC_IX_AXIS:
		tinyc_buf_puts(out, v && e->var < v->naxes ? v->axes[e->var].name : "?");
		return;
	case TINYC_IX_SYM:
		tinyc_buf_puts(out, e->var < ib->g->nsym ? ib->g->syms[e->var] : "?");
		return;
	case TINYC_IX_ADD: {
		if (paren)
			tinyc_buf_putc(out, '(');
		if (e->a->op == TINYC_IX_MUL && e->a->c < 0 && e->b->op == TINYC_IX_CONST &&
		    e->b->c > 0) {	/* -x + c prints as c - x */
			tinyc_buf_printf(out, "%lld - ", (long long)e->b->c);
			if (e->a->c != -1)
				tinyc_buf_printf(out, "%lld*", -(long long)e->a->c);
			ix_print(ib, v, e->a->a, 1, out);
			if (paren)
				tinyc_buf_putc(out, ')');
			return;
		}
		ix_print(ib, v, e->a, 0, out);
		const tinyc_ix *b = e->b;
		if (b->op == TINYC_IX_CONST && b->c < 0) {
			tinyc_buf_printf(out, " - %lld", -(long long)b->c);
		} else if (b->op == TINYC_IX_MUL && b->c < 0) {
			tinyc_buf_puts(out, " - ");
			if (b->c != -1)
				tinyc_buf_printf(out, "%lld*", -(long long)b->c);
			ix_print(ib, v, b->a, b->c != -1 || b->a->op == TINYC_IX_ADD, out);
		} else {
			tinyc_buf_puts(out, " + ");
			ix_print(ib, v, b, b->op == TINYC_IX_ADD, out);
		}
		if (paren)
			tinyc_buf_putc(out, ')');
		return;
	}
	case TINYC_IX_MUL:
		if (e->c == -1)
			tinyc_buf_putc(out, '-');
		else
			tinyc_buf_printf(out, "%lld*", (long long)e->c);
		ix_print(ib, v, e->a, 1, out);
		return;
	case TINYC_IX_FDIV:
		tinyc_buf_puts(out, "floor(");
		ix_print(ib, v, e->a, 1, out);
		tinyc_buf_printf(out, "/%lld)", (long long)e->c);
		return;
	case TINYC_IX_MOD:
		tinyc_buf_putc(out, '(');
		ix_print(ib, v, e->a, 0, out);
		tinyc_buf_printf(out, ") mod %lld", (long long)e->c);
		return;
	}
}

void tinyc_ix_print(const tinyc_indexbook *ib, const tinyc_ibval *v, const tinyc_ix *e,
		    tinyc_buf *out)
{
	ix_print(ib, v, e, 0, out);
}

/* Print a constraint: "e >= 0", "e = 0", or "x <= c" for c - x >= 0. */
static void con_print(const tinyc_indexbook *ib, const tinyc_ibval *v, const tinyc_ixcon *c,
		      tinyc_buf *out)
{
	const tinyc_ix *e = c->e;
	if (!c->eq && e->op == TINYC_IX_ADD && e->a->op == TINYC_IX_MUL && e->a->c == -1 &&
	    e->b->op == TINYC_IX_CONST) {	/* -x + c >= 0 */
		ix_print(ib, v, e->a->a, 0, out);
		tinyc_buf_printf(out, " <= %lld", (long long)e->b->c);
		return;
	}
	if (!c->eq && e->op == TINYC_IX_ADD && e->b->op == TINYC_IX_MUL && e->b->c == -1 &&
	    e->a->op == TINYC_IX_CONST) {	/* c - x >= 0 */
		ix_print(ib, v, e->b->a, 0, out);
		tinyc_buf_printf(out, " <= %lld", (long long)e->a->c);
		return;
	}
	ix_print(ib, v, e, 0, out);
	tinyc_buf_puts(out, c->eq ? " = 0" : " >= 0");
}

/* "(m, n, k)": the value's axis names. */
static void print_axes_tuple(const tinyc_ibval *v, tinyc_buf *out)
{
	tinyc_buf_putc(out, '(');
	for (int a = 0; a < v->naxes; a++)
		tinyc_buf_printf(out, "%s%s", a ? ", " : "", v->axes[a].name);
	tinyc_buf_putc(out, ')');
}

/* Is v's out the identity on its axes? */
static int out_is_identity(const tinyc_ibval *v)
{
	if (v->rank != v->naxes)
		return 0;
	for (int d = 0; d < v->rank; d++)
		if (v->out[d]->op != TINYC_IX_AXIS || v->out[d]->var != d)
			return 0;
	return 1;
}

static const char *kind_name(tinyc_axis_kind k)
{
	return k == TINYC_AXIS_ITER ? "iter" : k == TINYC_AXIS_BROADCAST ? "broadcast" : "reduce";
}

/* Print one value's block. */
static void print_val(const tinyc_indexbook *ib, const tinyc_ibval *v, tinyc_buf *out)
{
	const tinyc_graph *g = ib->g;
	const tinyc_uop *u = &g->nodes[v->node];
	tinyc_buf_printf(out, "%%%s = %s(", u->id, tinyc_op_info(u->op)->name);
	for (int k = 0; k < u->nsrc; k++)
		tinyc_buf_printf(out, "%s%%%s", k ? ", " : "", g->nodes[u->src[k]].id);
	if (u->op == TINYC_OP_CONST && u->lit.text)
		tinyc_buf_puts(out, u->lit.text);
	if ((u->op == TINYC_OP_BUFFER || u->op == TINYC_OP_OUTPUT) && u->name)
		tinyc_buf_printf(out, "%sname=\"%s\"", u->nsrc ? ", " : "", u->name);
	tinyc_buf_printf(out, ") : %s", tinyc_dtype_name(u->dtype));
	tinyc_print_shape(g, u->rank, u->shape, out);
	tinyc_buf_puts(out, "\n  axes: [");
	for (int a = 0; a < v->naxes; a++) {
		const tinyc_axis *ax = &v->axes[a];
		tinyc_buf_printf(out, "%s%s:", a ? ", " : "", ax->name);
		if (ax->size.sym >= 0)
			tinyc_buf_puts(out, g->syms[ax->size.sym]);
		else
			tinyc_buf_printf(out, "%lld", (long long)ax->size.val);
		tinyc_buf_printf(out, ":%s", kind_name(ax->kind));
	}
	tinyc_buf_puts(out, "]\n");
	if (!out_is_identity(v)) {
		tinyc_buf_puts(out, "  out: ");
		print_axes_tuple(v, out);
		tinyc_buf_puts(out, " -> (");
		for (int d = 0; d < v->rank; d++) {
			if (d)
				tinyc_buf_puts(out, ", ");
			ix_print(ib, v, v->out[d], 0, out);
		}
		tinyc_buf_puts(out, ")\n");
	}
	for (int k = 0; k < v->nmap; k++) {
		const tinyc_axismap *m = &v->map[k];
		tinyc_buf_printf(out, "  map %%%s: ", g->nodes[m->src].id);
		print_axes_tuple(v, out);
		tinyc_buf_puts(out, " -> (");
		for (int d = 0; d < m->rank; d++) {
			if (d)
				tinyc_buf_puts(out, ", ");
			ix_print(ib, v, m->idx[d], 0, out);
		}
		tinyc_buf_putc(out, ')');
		for (int gi = 0; gi < m->nguard; gi++) {
			tinyc_buf_puts(out, gi ? ", " : " if ");
			con_print(ib, v, &m->guard[gi], out);
		}
		if (m->nguard)
			tinyc_buf_printf(out, " else %g", m->fill);
		tinyc_buf_putc(out, '\n');
	}
	tinyc_buf_puts(out, "  domain: ");
	if (!v->ndom)
		tinyc_buf_puts(out, "{}");
	for (int a = 0; a < v->naxes; a++) {
		const tinyc_axis *ax = &v->axes[a];
		tinyc_buf_puts(out, a ? ", " : "");
		if (ax->size.sym < 0 && ax->size.val == 1)
			tinyc_buf_printf(out, "%s = 0", ax->name);
		else if (ax->size.sym >= 0)
			tinyc_buf_printf(out, "0 <= %s < %s", ax->name, g->syms[ax->size.sym]);
		else
			tinyc_buf_printf(out, "0 <= %s < %lld", ax->name, (long long)ax->size.val);
	}
	for (int c = 2 * v->naxes; c < v->ndom; c++) {
		tinyc_buf_puts(out, c ? ", " : "");
		con_print(ib, v, &v->domain[c], out);
	}
	tinyc_buf_putc(out, '\n');
	if (u->op == TINYC_OP_REDUCE) {
		tinyc_buf_puts(out, "  reduce_axes: [");
		for (int k = 0; k < v->nreduce; k++)
			tinyc_buf_printf(out, "%s%s", k ? ", " : "", v->axes[v->reduce_axes[k]].name);
		tinyc_buf_printf(out, "] op: %s acc: %s\n", tinyc_redop_name(v->redop),
				 tinyc_dtype_name(v->acc));
	}
}

/* The text dump (format at the top of this file). */
void tinyc_indexbook_print(const tinyc_indexbook *ib, tinyc_buf *out)
{
	tinyc_buf_printf(out, "# indexbook: %d values, %d axis ids\n", ib->n, ib->naxis_ids);
	for (int i = 0; i < ib->n; i++)
		print_val(ib, &ib->val[i], out);
}

