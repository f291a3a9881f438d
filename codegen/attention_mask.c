/* Recognising a causal attention mask exactly (codegen/attention.c uses it).
 *
 * The additive mask B of an attention is causal when, at score (P..., i, j), it is 0 for
 * j <= i + off and -inf elsewhere, for every batch index.  tinygrad spells it as a
 * WHERE over a comparison of two aranges, each a REDUCE ADD of a padded, reshaped
 * constant.  Instead of matching that spelling, the value emitter builds B at symbolic
 * (i, j) and the expression is interpreted abstractly: integers as affine forms in the
 * symbolic variables, booleans as conjunctions of `form < 0`, the mask as a selection
 * between two constants.  An integer REDUCE ADD inside B is replaced by an affine form of
 * its index once its operand, built at symbolic (r, x), is proven to count exactly that
 * many r for every x (a conjunction of unit bounds on r).  MOD and DIV by constants are
 * resolved from the variables' ranges.  Anything else (a load, a batch index, a
 * non-constant coefficient) gives up: the general mask path stays.
 */
#include <math.h>
#include <stdlib.h>

#include "codegen/attention_mask.h"
#include "sched/schedule.h"

enum { NVAR = 2, NATOM = 6, MAXSTACK = 1024 };

/* An affine form sum c[v] * var_v + k. */
typedef struct aform {
	int64_t c[NVAR];	/* coefficients */
	int64_t k;		/* constant */
} aform;

/* Kinds of abstract values. */
typedef enum {
	AV_INT,		/* an integer affine form */
	AV_BOOL,	/* a conjunction of atoms `form < 0` (none: true), or false */
	AV_NUM,		/* a numeric constant */
	AV_SEL,		/* pred ? a : b with numeric constants a, b (pred: the atoms) */
} avkind;

/* An abstract value. */
typedef struct aval {
	avkind kind;		/* what it is */
	aform f;		/* AV_INT */
	int nat;		/* AV_BOOL, AV_SEL: atoms of the conjunction */
	aform at[NATOM];	/* the atoms */
	int is_false;		/* AV_BOOL: the constant false */
	double a, b;		/* AV_NUM: a; AV_SEL: the two arms */
} aval;

/* The symbolic variables and their ranges [0, ext). */
typedef struct avars {
	int var[NVAR];		/* kernel variable indices */
	int64_t ext[NVAR];	/* extents */
	const tinyc_gstmt *lets;	/* the block of the emitter's lets (DECLs) */
} avars;

/* Minimum and maximum of f over the box of vs. */
static void form_range(const aform *f, const avars *vs, int64_t *lo, int64_t *hi)
{
	*lo = *hi = f->k;
	for (int v = 0; v < NVAR; v++) {
		int64_t e = f->c[v] * (vs->ext[v] - 1);
		if (e < 0)
			*lo += e;
		else
			*hi += e;
	}
}

/* The let of variable var in the lets block: its initial value, or NULL. */
static const tinyc_gexpr *let_value(const avars *vs, int var)
{
	for (int i = 0; vs->lets && i < vs->lets->nstmts; i++) {
		const tinyc_gstmt *s = vs->lets->stmts[i];
		if (s->op == TINYC_GS_DECL && s->dst.var == var)
			return s->value;
	}
	return NULL;
}

/* The negation of a one-atom predicate: !(f < 0) is (-f - 1 < 0). */
static int negate(aval *x)
{
	if (x->kind != AV_BOOL)
		return -1;
	if (x->is_false) {
		x->is_false = 0, x->nat = 0;
		return 0;
	}
	if (x->nat == 0) {
		x->is_false = 1;
		return 0;
	}
	if (x->nat != 1)
		return -1;
	for (int v = 0; v < NVAR; v++)
		x->at[0].c[v] = -x->at[0].c[v];
	x->at[0].k = -x->at[0].k - 1;
	return 0;
}

/* Append the atom f < 0 to boolean x. */
static int add_atom(aval *x, aform f)
{
	if (x->nat >= NATOM)
		return -1;
	x->at[x->nat++] = f;
	return 0;
}

/* a - b (sign -1) or a + b (sign 1). */
static aform form_add(aform a, aform b, int sign)
{
	for (int v = 0; v < NVAR; v++)
		a.c[v] += sign * b.c[v];
	a.k += sign * b.k;
	return a;
}

/* The comparison op of integer forms a, b as a boolean. */
static int compare(tinyc_gx_op op, const aval *a, const aval *b, aval *r)
{
	if (a->kind != AV_INT || b->kind != AV_INT)
		return -1;
	aform d = form_add(a->f, b->f, -1), e = form_add(b->f, a->f, -1);
	r->kind = AV_BOOL;
	switch (op) {
	case TINYC_GX_LT:	/* a - b < 0 */
		return add_atom(r, d);
	case TINYC_GX_GT:	/* b - a < 0 */
		return add_atom(r, e);
	case TINYC_GX_LE:	/* a - b - 1 < 0 */
		d.k -= 1;
		return add_atom(r, d);
	case TINYC_GX_GE:
		e.k -= 1;
		return add_atom(r, e);
	case TINYC_GX_EQ:	/* both of the above */
		d.k -= 1, e.k -= 1;
		return add_atom(r, d) < 0 ? -1 : add_atom(r, e);
	default:
		return -1;
	}
}

/* Integer MOD or DIV of form f by the constant m > 0, resolved from the ranges. */
static int divmod(tinyc_gx_op op, const aval *a, int64_t m, const avars *vs, aval *r)
{
	int64_t lo, hi;
	if (a->kind != AV_INT || m <= 0)
		return -1;
	form_range(&a->f, vs, &lo, &hi);
	if (lo < 0)
		return -1;
	r->kind = AV_INT;
	if (op == TINYC_GX_MOD) {
		/* a non-negative form congruent to f modulo m: the same remainder */
		aform g = a->f;
		for (int v = 0; v < NVAR; v++)
			g.c[v] = ((g.c[v] % m) + m) % m;
		g.k = ((g.k % m) + m) % m;
		form_range(&g, vs, &lo, &hi);
		if (hi >= m)
			return -1;
		r->f = g;
		return 0;
	}
	if (lo / m != hi / m)
		return -1;
	r->f = (aform){{0}, lo / m};
	return 0;
}

/* The abstract value of one node from its operands' values ops[]. */
static int combine(const tinyc_gexpr *x, aval *ops, const avars *vs, aval *r)
{
	aval *a = &ops[0], *b = &ops[1], *c = &ops[2];
	switch (x->op) {
	case TINYC_GX_NEG:
		if (a->kind == AV_INT) {
			*r = *a;
			r->f = form_add((aform){{0}, 0}, a->f, -1);
			return 0;
		}
		if (a->kind == AV_NUM) {
			*r = *a;
			r->a = -a->a;
			return 0;
		}
		return -1;
	case TINYC_GX_NOT:
		*r = *a;
		return negate(r);
	case TINYC_GX_ADD:
	case TINYC_GX_SUB:
		if (a->kind == AV_INT && b->kind == AV_INT) {
			r->kind = AV_INT;
			r->f = form_add(a->f, b->f, x->op == TINYC_GX_SUB ? -1 : 1);
			return 0;
		}
		if (a->kind == AV_NUM && b->kind == AV_NUM) {
			r->kind = AV_NUM;
			r->a = x->op == TINYC_GX_SUB ? a->a - b->a : a->a + b->a;
			return 0;
		}
		return -1;
	case TINYC_GX_MUL:
		if (a->kind == AV_INT && b->kind == AV_INT) {
			int ca = 1, cb = 1;
			for (int v = 0; v < NVAR; v++)
				ca &= a->f.c[v] == 0, cb &= b->f.c[v] == 0;
			if (!ca && !cb)
				return -1;
			const aform *lin = ca ? &b->f : &a->f;
			int64_t s = ca ? a->f.k : b->f.k;
			r->kind = AV_INT;
			for (int v = 0; v < NVAR; v++)
				r->f.c[v] = lin->c[v] * s;
			r->f.k = lin->k * s;
			return 0;
		}
		return -1;
	case TINYC_GX_DIV:
	case TINYC_GX_FLOORDIV:
	case TINYC_GX_MOD:
		if (b->kind != AV_INT || b->f.c[0] || b->f.c[1])
			return -1;
		return divmod(x->op == TINYC_GX_MOD ? TINYC_GX_MOD : TINYC_GX_DIV, a, b->f.k, vs, r);
	case TINYC_GX_LAND:
	case TINYC_GX_AND:
		if (a->kind != AV_BOOL || b->kind != AV_BOOL)
			return -1;
		*r = *a;
		r->is_false |= b->is_false;
		for (int i = 0; i < b->nat; i++)
			if (add_atom(r, b->at[i]) < 0)
				return -1;
		return 0;
	case TINYC_GX_LT:
	case TINYC_GX_LE:
	case TINYC_GX_GT:
	case TINYC_GX_GE:
		return compare(x->op, a, b, r);
	case TINYC_GX_EQ:
	case TINYC_GX_NE:
		if (a->kind == AV_BOOL && b->kind == AV_BOOL && (b->is_false || b->nat == 0)) {
			/* p == true, p != false: p; p == false, p != true: !p */
			*r = *a;
			int keep = (x->op == TINYC_GX_EQ) == (b->nat == 0 && !b->is_false);
			return keep ? 0 : negate(r);
		}
		if (x->op == TINYC_GX_EQ)
			return compare(x->op, a, b, r);
		return -1;
	case TINYC_GX_SELECT:
		if (a->kind != AV_BOOL)
			return -1;
		if (b->kind == AV_BOOL && c->kind == AV_BOOL && !b->nat && !c->nat &&
		    b->is_false != c->is_false) {
			/* p ? true : false is p, p ? false : true is !p */
			*r = *a;
			return b->is_false ? negate(r) : 0;
		}
		if (b->kind == AV_NUM && c->kind == AV_NUM) {
			if (a->is_false) {
				*r = *c;
				return 0;
			}
			*r = *a;
			r->kind = AV_SEL, r->a = b->a, r->b = c->a;
			return 0;
		}
		if (b->kind == AV_INT && c->kind == AV_INT && !b->f.c[0] && !b->f.c[1] &&
		    !c->f.c[0] && !c->f.c[1]) {
			*r = *a;
			r->kind = AV_SEL, r->a = (double)b->f.k, r->b = (double)c->f.k;
			return 0;
		}
		return -1;
	case TINYC_GX_CAST:
		*r = *a;
		if (tinyc_dtype_is_float(x->dtype)) {
			if (a->kind == AV_INT && !a->f.c[0] && !a->f.c[1]) {
				r->kind = AV_NUM, r->a = (double)a->f.k;
				return 0;
			}
			/* 0, 1 and -inf are exact in every float type */
			return a->kind == AV_NUM || a->kind == AV_SEL ? 0 : -1;
		}
		if (x->dtype == TINYC_BOOL)
			return a->kind == AV_BOOL ? 0 : -1;
		if (a->kind == AV_BOOL) {	/* a predicate as 0 or 1 */
			if (a->is_false) {
				r->kind = AV_INT, r->f = (aform){{0}, 0};
				return 0;
			}
			r->kind = AV_SEL, r->a = 1, r->b = 0;
			return 0;
		}
		if (a->kind == AV_SEL && (r->a == 0 || r->a == 1) && (r->b == 0 || r->b == 1))
			return 0;	/* an indicator as an integer */
		return a->kind == AV_INT ? 0 : -1;
	default:
		return -1;
	}
}

/* Number of operands the walk visits for x. */
static int nargs(const tinyc_gexpr *x)
{
	switch (x->op) {
	case TINYC_GX_NEG: case TINYC_GX_NOT: case TINYC_GX_CAST:
		return 1;
	case TINYC_GX_SELECT:
		return 3;
	case TINYC_GX_ADD: case TINYC_GX_SUB: case TINYC_GX_MUL: case TINYC_GX_DIV:
	case TINYC_GX_FLOORDIV: case TINYC_GX_MOD: case TINYC_GX_LAND: case TINYC_GX_AND:
	case TINYC_GX_LT: case TINYC_GX_LE: case TINYC_GX_GT: case TINYC_GX_GE:
	case TINYC_GX_EQ: case TINYC_GX_NE:
		return 2;
	default:
		return 0;
	}
}

/* The abstract value of expression e over vs (an explicit post-order walk; lets are
 * followed to their values).  0 or -1 when e is outside the domain. */
static int interpret(const tinyc_gexpr *e, const avars *vs, aval *out)
{
	struct frame { const tinyc_gexpr *e; int step; } *st = malloc(sizeof(*st) * MAXSTACK);
	aval *val = malloc(sizeof(*val) * MAXSTACK);
	int ns = 0, nv = 0, rc = -1;
	if (!st || !val)
		goto out;
	st[ns++] = (struct frame){e, 0};
	while (ns > 0) {
		struct frame *f = &st[ns - 1];
		const tinyc_gexpr *x = f->e;
		if (x->op == TINYC_GX_VAR && f->step == 0) {
			int sym = -1;
			for (int v = 0; v < NVAR; v++)
				if (vs->var[v] == x->var)
					sym = v;
			if (sym < 0) {	/* a let: its value instead */
				const tinyc_gexpr *l = let_value(vs, x->var);
				if (!l)
					goto out;
				f->e = l;
				continue;
			}
		}
		int n = x->op == TINYC_GX_VAR ? 0 : nargs(x);
		if (f->step < n) {
			if (ns >= MAXSTACK)
				goto out;
			st[ns++] = (struct frame){x->arg[f->step++], 0};
			continue;
		}
		ns--;
		aval r = {0};
		if (x->op == TINYC_GX_VAR) {
			r.kind = AV_INT;
			for (int v = 0; v < NVAR; v++)
				r.f.c[v] = vs->var[v] == x->var;
		} else if (x->op == TINYC_GX_INT && x->dtype == TINYC_BOOL) {
			r.kind = AV_BOOL, r.is_false = x->ival == 0;
		} else if (x->op == TINYC_GX_INT) {
			r.kind = AV_INT, r.f.k = x->ival;
		} else if (x->op == TINYC_GX_FLOAT) {
			r.kind = AV_NUM, r.a = x->fval;
		} else if (n == 0) {
			goto out;	/* a load, a special register, a call */
		} else {
			nv -= n;
			if (combine(x, &val[nv], vs, &r) < 0)
				goto out;
		}
		val[nv++] = r;
	}
	*out = val[0];
	rc = 0;
out:
	free(st);
	free(val);
	return rc;
}

/* ----------------------------------------------------------- aranges ---- */

/* Affine forms proven for integer REDUCE nodes: value at index x = c * x + k. */
typedef struct arange {
	int node;		/* the REDUCE */
	int64_t c, k;		/* its value */
} arange;

/* State of one recognition. */
typedef struct mstate {
	arange *ar;		/* proven reductions */
	int nar, capar;		/* entries */
	int zero_node;		/* a node the hook replaces by 0, or -1 */
} mstate;

/* The emitter hook: proven reductions as their affine forms of the (1-D) index. */
static tinyc_gexpr *mask_leaf(tinyc_emit *em, int node, tinyc_gexpr *const *idx, void *user)
{
	mstate *ms = user;
	tinyc_gkernel *k = em->k;
	for (int i = 0; i < ms->nar; i++)
		if (ms->ar[i].node == node) {
			tinyc_gexpr *v = tinyc_gx_binary(k, TINYC_GX_ADD, tinyc_gx_binary(k, TINYC_GX_MUL,
				tinyc_gx_int(k, k->index_dtype, ms->ar[i].c), idx[0]),
				tinyc_gx_int(k, k->index_dtype, ms->ar[i].k));
			return tinyc_gx_cast(k, em->g->nodes[node].dtype, v);
		}
	return NULL;
}

/* Two fresh non-negative symbolic variables (never declared: only analysed). */
static int sym_vars(tinyc_emit *em, avars *vs, int64_t e0, int64_t e1)
{
	vs->var[0] = tinyc_gk_reg(em->k, "sym_a", em->k->index_dtype);
	vs->var[1] = tinyc_gk_reg(em->k, "sym_b", em->k->index_dtype);
	if (vs->var[0] < 0 || vs->var[1] < 0)
		return -1;
	tinyc_emit_set_nonneg(em, vs->var[0]);
	tinyc_emit_set_nonneg(em, vs->var[1]);
	vs->ext[0] = e0, vs->ext[1] = e1;
	return 0;
}

/* Emit node at idx into a scratch block and interpret it over vs.  0 or -1. */
static int emit_interpret(tinyc_emit *em, int node, tinyc_gexpr *const *idx, avars *vs, aval *out)
{
	tinyc_gstmt *blk = tinyc_gs_block(em->k);
	if (!blk)
		return -1;
	tinyc_emit_scope_enter(em);
	tinyc_gexpr *v = tinyc_emit_value(em, blk, node, idx, NULL);
	tinyc_emit_scope_leave(em);
	if (!v || em->error)
		return -1;
	for (int i = 0; i < blk->nstmts; i++)
		if (blk->stmts[i]->op != TINYC_GS_DECL)
			return -1;	/* a loop: something not resolved */
	vs->lets = blk;
	return interpret(v, vs, out);
}

/* max(lower) or min(upper) over x of the bounds fs[0..n) (forms in x = var 1): the one
 * that dominates the others over the whole range of x, or -1. */
static int dominant(const aform *fs, int n, int want_max, const avars *vs)
{
	for (int i = 0; i < n; i++) {
		int ok = 1;
		for (int j = 0; j < n && ok; j++) {
			aform d = form_add(fs[i], fs[j], -1);
			int64_t lo, hi;
			form_range(&d, vs, &lo, &hi);
			ok = want_max ? lo >= 0 : hi <= 0;
		}
		if (ok)
			return i;
	}
	return -1;
}

/* Prove integer REDUCE ADD node r (one reduced axis of its rank-2 operand, rank-1 result)
 * affine in its index; record it in ms.  0 or -1. */
static int prove_arange(tinyc_emit *em, mstate *ms, int r)
{
	const tinyc_graph *g = em->g;
	const tinyc_uop *u = &g->nodes[r];
	int axes[TINYC_MAX_RANK];
	if (u->redop != TINYC_RED_ADD || u->keepdim || u->rank != 1 || !tinyc_dtype_is_int(u->dtype) ||
	    tinyc_reduce_axes(g, r, axes) != 1 || g->nodes[u->src[0]].rank != 2)
		return -1;
	const tinyc_uop *o = &g->nodes[u->src[0]];
	int ra = axes[0], xa = 1 - axes[0];
	int64_t tr = tinyc_sched_dim(em->s, &o->shape[ra]), tx = tinyc_sched_dim(em->s, &o->shape[xa]);
	avars vs = {{0}, {0}, NULL};
	if (tr < 1 || tx < 1 || sym_vars(em, &vs, tr, tx) < 0)
		return -1;
	tinyc_gexpr *idx[2];
	idx[ra] = tinyc_gx_var(em->k, vs.var[0]);
	idx[xa] = tinyc_gx_var(em->k, vs.var[1]);
	aval a;
	if (emit_interpret(em, u->src[0], idx, &vs, &a) < 0)
		return -1;
	/* the operand is 1 where the conjunction holds, else 0; count the r that satisfy it */
	if (a.kind != AV_SEL || a.a != 1 || a.b != 0)
		return -1;
	aform lo[NATOM + 1], hi[NATOM + 1];
	int nlo = 0, nhi = 0;
	lo[nlo++] = (aform){{0}, 0};		/* r >= 0 */
	hi[nhi++] = (aform){{0}, tr - 1};	/* r <= tr - 1 */
	for (int i = 0; i < a.nat; i++) {
		aform f = a.at[i];
		int64_t cr = f.c[0];
		aform rest = f;
		rest.c[0] = 0;
		if (cr == 0) {	/* a condition on x alone: must hold everywhere */
			int64_t l, h;
			form_range(&rest, &vs, &l, &h);
			if (h >= 0)
				return -1;
		} else if (cr == 1) {	/* r + rest < 0: r <= -rest - 1 */
			aform b = form_add((aform){{0}, -1}, rest, -1);
			hi[nhi++] = b;
		} else if (cr == -1) {	/* -r + rest < 0: r >= rest + 1 */
			rest.k += 1;
			lo[nlo++] = rest;
		} else {
			return -1;
		}
	}
	int il = dominant(lo, nlo, 1, &vs), ih = dominant(hi, nhi, 0, &vs);
	if (il < 0 || ih < 0)
		return -1;
	aform cnt = form_add(hi[ih], lo[il], -1);
	cnt.k += 1;
	int64_t l, h;
	form_range(&cnt, &vs, &l, &h);
	if (l < 0)
		return -1;
	if (ms->nar == ms->capar) {
		int cap = ms->capar ? 2 * ms->capar : 4;
		arange *n = realloc(ms->ar, sizeof(*n) * (size_t)cap);
		if (!n)
			return -1;
		ms->ar = n, ms->capar = cap;
	}
	ms->ar[ms->nar++] = (arange){r, cnt.c[1], cnt.k};
	return 0;
}

int tinyc_attn_causal_offset(tinyc_emit *em, const tinyc_attn_match *m, int64_t *off)
{
	const tinyc_graph *g = em->g;
	if (m->bias < 0)
		return 0;
	mstate ms = {NULL, 0, 0, -1};
	tinyc_emit_leaf_fn saved = em->leaf;
	void *saved_user = em->leaf_user;
	int found = 0;
	unsigned char *seen = calloc((size_t)g->n + 1, 1);
	int *work = malloc(sizeof(int) * (size_t)(g->n + 1));
	if (!seen || !work)
		goto out;
	em->leaf = mask_leaf, em->leaf_user = &ms;
	/* the integer reductions under B (without looking below them), proven one by one */
	int nw = 0;
	work[nw++] = m->bias;
	seen[m->bias] = 1;
	while (nw > 0) {
		int n = work[--nw];
		const tinyc_uop *u = &g->nodes[n];
		if (u->op == TINYC_OP_REDUCE) {
			if (prove_arange(em, &ms, n) < 0)
				goto out;
			continue;
		}
		if (u->op == TINYC_OP_BUFFER)
			goto out;	/* a mask read from memory: not known at compile time */
		for (int j = 0; j < u->nsrc; j++)
			if (!seen[u->src[j]]) {
				seen[u->src[j]] = 1;
				work[nw++] = u->src[j];
			}
	}
	/* B at (P..., i, j) with symbolic i, j: 0 where j <= i + off, -inf elsewhere */
	const int r = g->nodes[m->bias].rank, nb = m->rank - 2;
	avars vs = {{0}, {0}, NULL};
	if (r < 2 || sym_vars(em, &vs, m->tq, m->tk) < 0)
		goto out;
	tinyc_gexpr *full[TINYC_MAX_RANK], *idx[TINYC_MAX_RANK];
	for (int d = 0; d < nb; d++) {	/* batch indices: symbols the forms may not use */
		int v = tinyc_gk_reg(em->k, "sym_p", em->k->index_dtype);
		if (v < 0)
			goto out;
		tinyc_emit_set_nonneg(em, v);
		full[d] = tinyc_gx_var(em->k, v);
	}
	full[nb] = tinyc_gx_var(em->k, vs.var[0]);
	full[nb + 1] = tinyc_gx_var(em->k, vs.var[1]);
	for (int d = 0; d < r; d++) {
		const tinyc_dim *x = &g->nodes[m->bias].shape[d];
		idx[d] = x->sym < 0 && x->val == 1 ? tinyc_gx_int(em->k, em->k->index_dtype, 0)
						   : full[d + m->rank - r];
	}
	aval a;
	if (emit_interpret(em, m->bias, idx, &vs, &a) < 0 || a.kind != AV_SEL || a.nat != 1)
		goto out;
	aform f = a.at[0];
	if (a.a == -INFINITY && a.b == 0) {	/* allowed where the atom fails */
		aval t = a;
		t.kind = AV_BOOL;
		if (negate(&t) < 0)
			goto out;
		f = t.at[0];
	} else if (!(a.a == 0 && a.b == -INFINITY)) {
		goto out;
	}
	/* allowed iff q (j - i) + k < 0 with q > 0, i.e. j - i <= ceil(-k / q) - 1 */
	int64_t q = f.c[1];
	if (q <= 0 || f.c[0] != -q)
		goto out;
	int64_t num = -f.k;	/* j - i < num / q */
	int64_t ce = num >= 0 ? (num + q - 1) / q : -((-num) / q);
	*off = ce - 1;
	found = 1;
out:
	em->leaf = saved, em->leaf_user = saved_user;
	free(ms.ar);
	free(seen);
	free(work);
	return found;
}
