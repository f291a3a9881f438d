/* IndexBook -> Poly-View (seed 002 §2): isl domains and access relations of the statements,
 * simplified, and the contraction (matmul) pattern.
 *
 * Dump format (--dump-stage=polyview), deterministic, objects printed by isl:
 *
 *   # polyview: <statements> statements, <contractions> contractions
 *   context: [M, N, K] -> {  : M > 0 and N > 0 and K > 0 }
 *   S6 = MUL(%3, %5) : half[M,N,K]
 *     domain: [M, N, K] -> { S6[m, n, k] : 0 <= m < M and 0 <= n < N and 0 <= k < K }
 *     write: [M, N, K] -> { S6[m, n, k] -> T6[m, n, k] }
 *     read %3: [M, N, K] -> { S6[m, n, k] -> X[m, k] }      movement folded: the array read
 *     read %5: [M, N, K] -> { S6[m, n, k] -> W[k, n] }
 *     read %9: const 0                                      an inlined CONST
 *     read %4: ... padded                                   PAD: elsewhere the value is 0
 *   S8 = REDUCE(%7) : float[M,N,1]
 *     ...
 *     contraction: matmul lhs=%0 rhs=%1 m=[m@%0.0] n=[n@%1.1] k=[k@%0.1,%1.0] batch=[] acc=float
 *
 * Domains are the boxes of the IndexBook's axes plus the guards that range analysis cannot
 * discharge, simplified with coalesce, remove_redundancies and gist against the context.
 * Accesses are the AxisMaps composed through the movement ops: every movement value gets a
 * view (its AxisMap composed with its operand's view, simplified by tinyc_ix_substitute), so
 * each reader composes once; a view that would hold more than MAX_VIEW_DIVS divisions is not
 * composed, and its operand becomes a statement of its own instead ("S3 = PERMUTE(%2)": a
 * stored copy, as tinygrad realises a view it cannot merge).  The composed index is handed to
 * isl once, as a pw_multi_aff (guards: its domain), coalesced, gisted against the domain when
 * piecewise, and rebuilt from its relation when it has a few divisions, so it prints without
 * the domain's constraints and with isl's simplest divisions.  Each statement gets the whole
 * isl operation budget.  In a contraction tag each role lists the
 * reduce statement's axes having it, as name@refs where %A.d is dim d of the array A that the
 * axis indexes (lhs first); the roles follow from which operand's access uses the axis (seed
 * §2.2 step 4): m lhs only, n rhs only, k reduced and both, batch kept and both.
 */
#include <stdlib.h>
#include <string.h>

#include <isl/id.h>
#include <isl/map.h>
#include <isl/point.h>
#include <isl/space.h>

#include "poly/poly.h"

/* Is node u a movement op that Poly-View folds into accesses? */
static int is_movement(const tinyc_uop *u)
{
	return tinyc_op_info(u->op)->kind == TINYC_KIND_MOVEMENT && u->op != TINYC_OP_CONTIGUOUS;
}

/* Is node u a statement (a value that computes)? */
static int is_statement(const tinyc_uop *u)
{
	tinyc_opkind k = tinyc_op_info(u->op)->kind;
	return k == TINYC_KIND_ELEMENTWISE || k == TINYC_KIND_REDUCE || k == TINYC_KIND_SINK ||
	       u->op == TINYC_OP_CONTIGUOUS;
}

/* Is s a C identifier (usable as an isl tuple name)? */
static int is_ident(const char *s)
{
	if (!s || !*s || (*s >= '0' && *s <= '9'))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return 0;
	return 1;
}

/* prefix + id, with '_' between when the id is a name ("S8", "S_x"). */
static char *id_name(const char *prefix, const char *id)
{
	int digits = id[0] >= '0' && id[0] <= '9';
	return tinyc_asprintf("%s%s%s", prefix, digits ? "" : "_", id);
}

/* A tiny set of names, to keep tuple names unique. */
typedef struct nameset {
	char **v;		/* names (borrowed) */
	size_t cap;		/* slots, a power of two */
	size_t n;		/* used */
} nameset;

static size_t hash_str(const char *s)
{
	size_t h = 1469598103934665603u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

/* Insert name; 1 if inserted, 0 if present, -1 on allocation failure. */
static int nameset_add(nameset *ns, char *name)
{
	if (2 * (ns->n + 1) > ns->cap) {
		size_t cap = ns->cap ? 2 * ns->cap : 64;
		char **v = calloc(cap, sizeof(char *));
		if (!v)
			return -1;
		for (size_t i = 0; i < ns->cap; i++)
			if (ns->v[i]) {
				size_t j = hash_str(ns->v[i]) & (cap - 1);
				while (v[j])
					j = (j + 1) & (cap - 1);
				v[j] = ns->v[i];
			}
		free(ns->v);
		ns->v = v;
		ns->cap = cap;
	}
	size_t j = hash_str(name) & (ns->cap - 1);
	for (; ns->v[j]; j = (j + 1) & (ns->cap - 1))
		if (!strcmp(ns->v[j], name))
			return 0;
	ns->v[j] = name;
	ns->n++;
	return 1;
}

/* Make *name unique in ns (appending "_<node>" on a clash) and record it. */
static int unique_name(nameset *ns, char **name, const char *id)
{
	for (int tries = 0; *name; tries++) {
		int r = nameset_add(ns, *name);
		if (r < 0)
			return -1;
		if (r == 1)
			return 0;
		char *alt = tries ? tinyc_asprintf("%s_%d", *name, tries)
				  : tinyc_asprintf("%s_%s", *name, id);
		free(*name);
		*name = alt;
	}
	return -1;
}

/* Build state. */
/* The view of a movement value: the element of `src` it shows, over its own axes (the
 * AxisMaps of a movement chain composed). */
typedef struct view {
	int src;			/* the node read: a buffer, a statement, a CONST */
	int rank;			/* src's rank */
	const tinyc_ix **idx;		/* src's index (heap array; expressions in the book) */
	int nguard;			/* guards (PAD) */
	tinyc_ixcon *guard;		/* heap array */
} view;

typedef struct pvb {
	tinyc_ctx *ctx;			/* diagnostics */
	tinyc_polyview *pv;		/* being built */
	const tinyc_graph *g;		/* the graph */
	const tinyc_indexbook *ib;	/* the IndexBook */
	view **views;			/* per node: its view when a folded movement value */
	char *stored;			/* per node: a movement value stored by a statement of
					 * its own, because its composed view grew too complex */
} pvb;

#define MAX_VIEW_DIVS 12	/* divisions a composed view may hold before it is stored */

/* Report isl's error at node i. */
static int isl_fail(pvb *b, int i, const char *what)
{
	return tinyc_isl_report(b->ctx, b->pv->ictx, b->g->src, b->g->nodes[i].loc, what);
}

/* Extents of v's axes (-1 when symbolic and unbound), for range-based simplification. */
static int64_t *axis_extents(const pvb *b, const tinyc_ibval *v)
{
	int64_t *ext = malloc(sizeof(int64_t) * (size_t)(v->naxes ? v->naxes : 1));
	if (!ext)
		return NULL;
	for (int a = 0; a < v->naxes; a++) {
		tinyc_dim d = v->axes[a].size;
		const tinyc_bindings *bd = b->ib->bind;
		ext[a] = d.sym < 0 ? d.val
		       : (bd && bd->n == b->g->nsym && bd->val[d.sym] > 0) ? bd->val[d.sym] : -1;
	}
	return ext;
}

#define MAX_REBUILD_DIVS 4	/* accesses with more divisions are not rebuilt by isl */

/* Number of divisions and mods in e. */
static int count_divs(const tinyc_ix *e)
{
	if (!e)
		return 0;
	return (e->op == TINYC_IX_FDIV || e->op == TINYC_IX_MOD) + count_divs(e->a) +
	       count_divs(e->b);
}

/* Is constraint c (e >= 0) implied by the axes' extents alone? */
static int implied(const pvb *b, const tinyc_ixcon *c, const int64_t *ext)
{
	int64_t lo, hi;
	int fin = tinyc_ix_range(b->ib, c->e, ext, &lo, &hi);
	return c->eq ? (fin == 3 && lo == 0 && hi == 0) : ((fin & 1) && lo >= 0);
}

/* Compose map m (over the axes of a value of extents ext) with what its operand shows: the
 * view of a folded movement operand, else the operand itself.  Fills *out (heap arrays). */
static int compose(pvb *b, const tinyc_axismap *m, const int64_t *ext, view *out)
{
	tinyc_indexbook *ib = (tinyc_indexbook *)b->ib;	/* new expressions go to its arena */
	const view *x = b->views[m->src];
	int rank = x ? x->rank : m->rank, nx = x ? x->nguard : 0;
	out->src = x ? x->src : m->src;
	out->rank = rank;
	out->nguard = 0;
	out->idx = malloc(sizeof(*out->idx) * (size_t)(rank ? rank : 1));
	out->guard = malloc(sizeof(*out->guard) * (size_t)(m->nguard + nx ? m->nguard + nx : 1));
	if (!out->idx || !out->guard)
		return tinyc_error(b->ctx, "OutOfMemory", "out of memory composing an access");
	for (int d = 0; d < rank; d++) {
		out->idx[d] = x ? tinyc_ix_substitute(ib, x->idx[d], m->idx, ext) : m->idx[d];
		if (!out->idx[d])
			return tinyc_error(b->ctx, "OutOfMemory", "out of memory composing an access");
	}
	for (int gi = 0; gi < m->nguard + nx; gi++) {
		tinyc_ixcon c = gi < m->nguard ? m->guard[gi] : x->guard[gi - m->nguard];
		if (gi >= m->nguard && !(c.e = tinyc_ix_substitute(ib, c.e, m->idx, ext)))
			return tinyc_error(b->ctx, "OutOfMemory", "out of memory composing an access");
		if (!implied(b, &c, ext))
			out->guard[out->nguard++] = c;
	}
	return 0;
}

static void view_free(view *v)
{
	if (!v)
		return;
	free(v->idx);
	free(v->guard);
	free(v);
}

/* Divisions in a view. */
static int view_divs(const view *v)
{
	int n = 0;
	for (int d = 0; d < v->rank; d++)
		n += count_divs(v->idx[d]);
	for (int gi = 0; gi < v->nguard; gi++)
		n += count_divs(v->guard[gi].e);
	return n;
}

/* The views of the movement values, in node order: each composes its own AxisMap with its
 * operand's view, once, so every reader composes with one view (O(|V|) compositions).  A
 * view that would hold more than MAX_VIEW_DIVS divisions is not composed: its operand is
 * stored instead (a statement of its own), as tinygrad realises a view it cannot merge;
 * this keeps the divisions handed to isl few. */
static int build_views(pvb *b)
{
	/* a view a contraction reads with broadcasting is stored (lower/producers.c) */
	tinyc_contraction_producers(b->g, b->ib->bind, (unsigned char *)b->stored);
	for (int u = 0; u < b->g->n; u++) {
		if (!is_movement(&b->g->nodes[u]))
			b->stored[u] = 0;
	}
	for (int u = 0; u < b->g->n; u++) {
		if (!is_movement(&b->g->nodes[u]) || b->stored[u])
			continue;
		const tinyc_ibval *uv = &b->ib->val[u];
		int64_t *ext = axis_extents(b, uv);
		view *w = calloc(1, sizeof(*w));
		if (!ext || !w) {
			free(ext);
			free(w);
			return tinyc_error(b->ctx, "OutOfMemory", "out of memory");
		}
		int x = uv->map[0].src;
		int rc = compose(b, &uv->map[0], ext, w);
		if (!rc && b->views[x] && view_divs(w) > MAX_VIEW_DIVS) {
			/* store the operand (its statement reads through its own map composed
			 * with its operand's view); this view starts afresh from it */
			b->stored[x] = 1;
			view_free(b->views[x]);
			b->views[x] = NULL;
			view_free(w);
			w = calloc(1, sizeof(*w));
			rc = w ? compose(b, &uv->map[0], ext, w) : -1;
		}
		free(ext);
		if (rc < 0) {
			view_free(w);
			return -1;
		}
		b->views[u] = w;
	}
	return 0;
}

/* The read of operand k of statement s: its AxisMap composed with the operand's view (a
 * stored operand is read directly), then one isl access; guards (PAD) become the domain of
 * the access. */
static int build_read(pvb *b, tinyc_pv_stmt *s, int k)
{
	const tinyc_ibval *v = &b->ib->val[s->node];
	tinyc_pv_read *r = &s->read[k];
	int64_t *ext = axis_extents(b, v);
	view w = {0};
	int rc = -1;
	r->src = v->map[k].src;
	r->array = -1;
	r->cnode = -1;
	if (!ext)
		return tinyc_error(b->ctx, "OutOfMemory", "out of memory");
	rc = compose(b, &v->map[k], ext, &w);	/* a stored operand has no view */
	if (rc < 0)
		goto out;
	int u = w.src;
	if (b->g->nodes[u].op == TINYC_OP_CONST) {
		r->cnode = u;
		goto out;
	}
	r->array = u;
	isl_space *sp = tinyc_isl_value_space(b->pv->ictx, b->g, v, s->name);
	isl_pw_multi_aff *acc = tinyc_isl_pma_from_ix(isl_space_copy(sp), b->pv->array_name[u],
						      w.rank, (const tinyc_ix *const *)w.idx);
	if (w.nguard)
		acc = isl_pw_multi_aff_intersect_domain(acc,
			tinyc_isl_set_from_cons(isl_space_copy(sp), w.nguard, w.guard));
	isl_space_free(sp);
	if (!acc) {
		rc = isl_fail(b, s->node, "building an access relation");
		goto out;
	}
	isl_bool all = isl_bool_true;
	if (w.nguard) {
		isl_set *where = isl_pw_multi_aff_domain(isl_pw_multi_aff_copy(acc));
		all = isl_set_is_subset(s->domain, where);
		isl_set_free(where);
	}
	if (all == isl_bool_error) {
		isl_pw_multi_aff_free(acc);
		rc = isl_fail(b, s->node, "checking where an access is defined");
		goto out;
	}
	r->padded = all == isl_bool_false;
	int ndiv = view_divs(&w);
	r->acc = tinyc_isl_pma_simplify(acc, s->domain,
					(w.nguard ? TINYC_SIMPLIFY_GIST : 0) |
					(ndiv && ndiv <= MAX_REBUILD_DIVS ? TINYC_SIMPLIFY_REBUILD : 0));
	if (!r->acc) {
		rc = isl_fail(b, s->node, "simplifying an access relation");
		goto out;
	}
	r->rank = w.rank;	/* keep the composed index for later stages */
	r->idx = w.idx;
	r->nguard = w.nguard;
	r->guard = w.guard;
	w.idx = NULL;
	w.guard = NULL;
out:
	free(ext);
	free(w.idx);
	free(w.guard);
	return rc;
}

/* Statement of node i: domain, write, reads. */
static int build_stmt(pvb *b, int i, tinyc_pv_stmt *s)
{
	const tinyc_ibval *v = &b->ib->val[i];
	isl_ctx *ictx = b->pv->ictx;
	s->node = i;
	s->contraction = -1;
	s->array = strdup(b->pv->array_name[i]);
	if (!s->array)
		return tinyc_error(b->ctx, "OutOfMemory", "out of memory");
	/* each statement gets the whole operation budget */
	isl_ctx_reset_operations(ictx);
	isl_space *sp = tinyc_isl_value_space(ictx, b->g, v, s->name);
	/* the bounds, and the guards the extents do not already imply (isl would remove them
	 * as redundant, at a cost that grows with their divisions) */
	int64_t *ext = axis_extents(b, v);
	tinyc_ixcon *cons = malloc(sizeof(*cons) * (size_t)(v->ndom ? v->ndom : 1));
	int ncons = 0;
	if (!ext || !cons) {
		free(ext);
		free(cons);
		isl_space_free(sp);
		return tinyc_error(b->ctx, "OutOfMemory", "out of memory");
	}
	for (int c = 2 * v->naxes; c < v->ndom; c++)	/* guards after the 2*naxes bounds */
		if (!implied(b, &v->domain[c], ext))
			cons[ncons++] = v->domain[c];
	isl_set *dom = tinyc_isl_axis_box(isl_space_copy(sp), v);
	if (ncons) {	/* guards the ranges cannot discharge: isl simplifies them */
		dom = isl_set_intersect(dom, tinyc_isl_set_from_cons(isl_space_copy(sp), ncons, cons));
		dom = tinyc_isl_set_simplify(dom, b->pv->context);
	}
	free(ext);
	free(cons);
	s->domain = dom;
	s->write = tinyc_isl_pma_from_ix(sp, s->array, v->rank, (const tinyc_ix *const *)v->out);
	s->write = tinyc_isl_pma_simplify(s->write, s->domain, 0);
	if (!s->domain || !s->write)
		return isl_fail(b, i, "building a statement's domain");
	s->nread = v->nmap;
	for (int k = 0; k < v->nmap; k++)
		if (build_read(b, s, k) < 0)
			return -1;
	return 0;
}

/* The statement's domain tuple as an isl_id (for renaming an access range to it). */
static isl_pw_multi_aff *range_as_stmt(pvb *b, isl_pw_multi_aff *acc, const tinyc_pv_stmt *s)
{
	isl_id *id = isl_id_alloc(b->pv->ictx, s->name, NULL);
	return isl_pw_multi_aff_set_tuple_id(acc, isl_dim_out, id);
}

/* Record whether a piece's output dim (user: {dim, axis, result}) involves the axis. */
static isl_stat piece_uses(isl_set *set, isl_multi_aff *ma, void *user)
{
	int *q = user;
	isl_aff *af = isl_multi_aff_get_aff(ma, q[0]);
	q[2] |= af && isl_aff_involves_dims(af, isl_dim_in, (unsigned)q[1], 1) == isl_bool_true;
	isl_aff_free(af);
	isl_multi_aff_free(ma);
	isl_set_free(set);
	return isl_stat_ok;
}

/* Whether the expression of output dim d of pma uses input axis a (its domain's
 * constraints, a padded access's guards, aside). */
static int expr_uses(isl_pw_multi_aff *pma, int d, int a)
{
	int q[3] = {d, a, 0};
	if (!pma || isl_pw_multi_aff_foreach_piece(pma, piece_uses, q) < 0)
		return 0;
	return q[2];
}

/* Contraction detection at REDUCE statement ri: REDUCE ADD over CASTs over a MUL whose two
 * operands are arrays; roles from which operand's access (pulled back to the reduce
 * domain) uses each axis.  0: recorded or not a contraction; -1: isl error. */
static int detect_contraction(pvb *b, int ri)
{
	tinyc_polyview *pv = b->pv;
	tinyc_pv_stmt *r = &pv->stmt[ri];
	const tinyc_ibval *v = &b->ib->val[r->node];
	if (b->g->nodes[r->node].op != TINYC_OP_REDUCE || v->redop != TINYC_RED_ADD ||
	    r->read[0].array < 0 || r->read[0].padded)
		return 0;
	isl_pw_multi_aff *chain = isl_pw_multi_aff_copy(r->read[0].acc);
	int x = r->read[0].array;
	isl_pw_multi_aff *acc[2] = {NULL, NULL};
	int arr[2] = {-1, -1}, padded[2] = {0, 0};
	for (;;) {
		int xs = pv->stmt_of[x];
		const tinyc_uop *xu = &b->g->nodes[x];
		if (xs < 0 || xu->op == TINYC_OP_REDUCE)
			break;
		const tinyc_pv_stmt *st = &pv->stmt[xs];
		chain = range_as_stmt(b, chain, st);
		if (xu->op == TINYC_OP_MUL) {
			/* a padded operand (a convolution's window over a PAD) is gathered
			 * with its guards (sched/conv.c) */
			if (st->read[0].array >= 0 && st->read[1].array >= 0) {
				for (int k = 0; k < 2; k++) {
					padded[k] = st->read[k].padded;
					acc[k] = isl_pw_multi_aff_pullback_pw_multi_aff(
						isl_pw_multi_aff_copy(st->read[k].acc),
						isl_pw_multi_aff_copy(chain));
					arr[k] = st->read[k].array;
				}
			}
			break;
		}
		if ((xu->op != TINYC_OP_CAST && xu->op != TINYC_OP_CONTIGUOUS) ||
		    st->read[0].array < 0 || st->read[0].padded)
			break;
		chain = isl_pw_multi_aff_pullback_pw_multi_aff(isl_pw_multi_aff_copy(st->read[0].acc),
							       chain);
		x = st->read[0].array;
	}
	isl_pw_multi_aff_free(chain);
	if (!acc[0] || !acc[1]) {
		isl_pw_multi_aff_free(acc[0]);
		isl_pw_multi_aff_free(acc[1]);
		return arr[0] >= 0 ? isl_fail(b, r->node, "pulling back a contraction's operands") : 0;
	}
	for (int k = 0; k < 2; k++)
		acc[k] = tinyc_isl_pma_simplify(acc[k], r->domain, 0);
	tinyc_contraction c = {0};
	c.reduce_stmt = ri;
	c.mul_stmt = pv->stmt_of[x];
	c.lhs = arr[0];
	c.rhs = arr[1];
	c.lhs_acc = acc[0];
	c.rhs_acc = acc[1];
	c.lhs_padded = padded[0];
	c.rhs_padded = padded[1];
	c.naxes = v->naxes;
	c.acc = v->acc;
	c.role = calloc((size_t)(v->naxes ? v->naxes : 1), sizeof(tinyc_role));
	c.lhs_dim = calloc((size_t)(v->naxes ? v->naxes : 1), sizeof(int));
	c.rhs_dim = calloc((size_t)(v->naxes ? v->naxes : 1), sizeof(int));
	int ok = c.role && c.lhs_dim && c.rhs_dim && acc[0] && acc[1];
	for (int a = 0; ok && a < v->naxes; a++) {
		const tinyc_axis *ax = &v->axes[a];
		c.lhs_dim[a] = c.rhs_dim[a] = -1;
		for (int k = 0; k < 2; k++) {
			isl_size n = isl_pw_multi_aff_dim(acc[k], isl_dim_out);
			for (int d = 0; d < n; d++)
				if (tinyc_isl_pma_uses(acc[k], d, a)) {
					(k ? c.rhs_dim : c.lhs_dim)[a] = d;
					break;
				}
		}
		int ul = c.lhs_dim[a] >= 0, ur = c.rhs_dim[a] >= 0;
		/* an axis of extent 1 (a bound M = 1: decode's matrix-vector product) reads
		 * no operand after simplification: it has no role, like a broadcast */
		const tinyc_bindings *bd = b->ib->bind;
		int64_t one = ax->size.sym < 0 ? ax->size.val
			      : bd && bd->n == b->g->nsym ? bd->val[ax->size.sym] : -1;
		if ((ax->kind == TINYC_AXIS_BROADCAST || (ax->kind != TINYC_AXIS_REDUCE && one == 1)) &&
		    !ul && !ur)
			c.role[a] = TINYC_ROLE_NONE;
		else if (ax->kind == TINYC_AXIS_REDUCE)
			ok = ul && ur, c.role[a] = TINYC_ROLE_K, c.nk++;
		else if (ul && ur)
			c.role[a] = TINYC_ROLE_BATCH, c.nbatch++;
		else if (ul)
			c.role[a] = TINYC_ROLE_M, c.nm++;
		else if (ur)
			c.role[a] = TINYC_ROLE_N, c.nn++;
		else
			ok = 0;	/* an axis of size > 1 that neither operand reads */
	}
	/* a convolution (an operand's dim indexed by an m and a k axis: a window, or a
	 * padded operand) computes one GEMM per image: its outermost m axis is a batch, so
	 * that the remaining m axes (the output's spatial ones) compose in the output */
	int window = padded[0] || padded[1], image = -1;
	for (int a = 0; ok && a < v->naxes; a++) {
		if (c.role[a] != TINYC_ROLE_M)
			continue;
		int in_window = 0;	/* a dim of an operand indexed by a and a k axis */
		for (int k = 0; k < 2; k++) {
			isl_size n = isl_pw_multi_aff_dim(acc[k], isl_dim_out);
			for (int d = 0; d < n; d++) {
				if (!expr_uses(acc[k], d, a))
					continue;
				for (int j = 0; j < v->naxes; j++)
					in_window |= c.role[j] == TINYC_ROLE_K && expr_uses(acc[k], d, j);
			}
		}
		window |= in_window;
		if (!in_window && image < 0)
			image = a;
	}
	/* a 1x1 convolution has no window, but its input's dims interleave m and k axes
	 * (n, c, h, w): an m axis in a dim before a k dim before another m axis's dim is the
	 * image axis */
	for (int k = 0; ok && !window && k < 2; k++) {
		isl_size n = isl_pw_multi_aff_dim(acc[k], isl_dim_out);
		int first_m = -1, seen_k = 0;
		for (int d = 0; d < n && !window; d++) {
			int am = -1, uk = 0;
			for (int a = 0; a < v->naxes; a++) {
				if (!expr_uses(acc[k], d, a))
					continue;
				if (c.role[a] == TINYC_ROLE_M && am < 0)
					am = a;
				uk |= c.role[a] == TINYC_ROLE_K;
			}
			if (am >= 0 && first_m >= 0 && seen_k)
				window = 1, image = first_m;
			if (am >= 0 && first_m < 0)
				first_m = am;
			seen_k |= uk && first_m >= 0;
		}
	}
	if (ok && window && c.nm >= 2 && !c.nbatch && image >= 0) {
		c.role[image] = TINYC_ROLE_BATCH;
		c.nm--, c.nbatch++;
	}
	if (!ok || !c.nk) {
		free(c.role);
		free(c.lhs_dim);
		free(c.rhs_dim);
		isl_pw_multi_aff_free(acc[0]);
		isl_pw_multi_aff_free(acc[1]);
		return 0;
	}
	tinyc_contraction *nc = realloc(pv->contr, sizeof(*nc) * (size_t)(pv->ncontr + 1));
	if (!nc) {
		free(c.role);
		free(c.lhs_dim);
		free(c.rhs_dim);
		isl_pw_multi_aff_free(acc[0]);
		isl_pw_multi_aff_free(acc[1]);
		return tinyc_error(b->ctx, "OutOfMemory", "out of memory");
	}
	pv->contr = nc;
	r->contraction = pv->ncontr;
	pv->contr[pv->ncontr++] = c;
	return 0;
}

/* The array name of every node: buffers and outputs by their names, other values T<id>. */
static int name_arrays(pvb *b, nameset *ns)
{
	const tinyc_graph *g = b->g;
	tinyc_polyview *pv = b->pv;
	/* statement names first: they are fixed (S<id>) and unique by construction */
	for (int i = 0; i < g->n; i++) {
		const tinyc_uop *u = &g->nodes[i];
		char *name = NULL;
		if (u->op == TINYC_OP_CONST)
			continue;
		if ((u->op == TINYC_OP_BUFFER || u->op == TINYC_OP_OUTPUT) && is_ident(u->name))
			name = strdup(u->name);
		else if (u->op == TINYC_OP_BUFFER)
			name = tinyc_asprintf("in%lld", (long long)u->slot);
		else if (u->op == TINYC_OP_OUTPUT)
			name = id_name("out", u->id);
		else
			name = id_name("T", u->id);
		if (!name || unique_name(ns, &name, u->id) < 0) {
			free(name);
			return tinyc_error(b->ctx, "OutOfMemory", "out of memory");
		}
		pv->array_name[i] = name;
	}
	return 0;
}

static void pvb_free(pvb *b)
{
	for (int i = 0; b->views && i < b->g->n; i++)
		view_free(b->views[i]);
	free(b->views);
	free(b->stored);
}

/* Build the Poly-View (see poly.h). */
tinyc_polyview *tinyc_polyview_build(tinyc_ctx *ctx, const tinyc_indexbook *ib,
				     const tinyc_isl_opts *opts)
{
	if (!ib)
		return NULL;
	const tinyc_graph *g = ib->g;
	tinyc_polyview *pv = tinyc_calloc(ctx, 1, sizeof(*pv));
	if (!pv)
		return NULL;
	pvb b = {ctx, pv, g, ib, NULL, NULL};
	nameset ns = {0};
	pv->ib = ib;
	pv->ictx = tinyc_isl_ctx_alloc(ctx, opts);
	pv->stmt_of = tinyc_calloc(ctx, (size_t)(g->n ? g->n : 1), sizeof(int));
	pv->array_name = tinyc_calloc(ctx, (size_t)(g->n ? g->n : 1), sizeof(char *));
	pv->stmt = tinyc_calloc(ctx, (size_t)(g->n ? g->n : 1), sizeof(tinyc_pv_stmt));
	if (!pv->ictx || !pv->stmt_of || !pv->array_name || !pv->stmt)
		goto fail;
	b.views = tinyc_calloc(ctx, (size_t)(g->n ? g->n : 1), sizeof(view *));
	b.stored = tinyc_calloc(ctx, (size_t)(g->n ? g->n : 1), 1);
	if (!b.views || !b.stored || build_views(&b) < 0)
		goto fail;
	pv->context = tinyc_isl_context(pv->ictx, g, ib->bind);
	if (!pv->context) {
		tinyc_isl_report(ctx, pv->ictx, g->src, (tinyc_loc){0, 0}, "building the context");
		goto fail;
	}
	/* statement names S<id> go in first so array names never take them */
	for (int i = 0; i < g->n; i++) {
		pv->stmt_of[i] = -1;
		if (!is_statement(&g->nodes[i]) && !b.stored[i])
			continue;
		char *sn = id_name("S", g->nodes[i].id);
		pv->stmt[pv->nstmt].name = sn;	/* owned by the statement */
		pv->stmt[pv->nstmt].contraction = -1;
		pv->stmt_of[i] = pv->nstmt++;
		if (!sn || nameset_add(&ns, sn) < 0) {
			tinyc_error(ctx, "OutOfMemory", "out of memory");
			goto fail;
		}
	}
	if (name_arrays(&b, &ns) < 0)
		goto fail;
	for (int i = 0; i < g->n; i++)
		if (pv->stmt_of[i] >= 0 && build_stmt(&b, i, &pv->stmt[pv->stmt_of[i]]) < 0)
			goto fail;
	for (int si = 0; si < pv->nstmt; si++)
		if (detect_contraction(&b, si) < 0)
			goto fail;
	free(ns.v);
	pvb_free(&b);
	return pv;
fail:
	free(ns.v);
	pvb_free(&b);
	tinyc_polyview_free(pv);
	return NULL;
}

void tinyc_polyview_free(tinyc_polyview *pv)
{
	if (!pv)
		return;
	for (int i = 0; i < pv->nstmt; i++) {
		tinyc_pv_stmt *s = &pv->stmt[i];
		free(s->name);
		free(s->array);
		isl_set_free(s->domain);
		isl_pw_multi_aff_free(s->write);
		for (int k = 0; k < s->nread; k++) {
			isl_pw_multi_aff_free(s->read[k].acc);
			free(s->read[k].idx);
			free(s->read[k].guard);
		}
	}
	for (int i = 0; i < pv->ncontr; i++) {
		isl_pw_multi_aff_free(pv->contr[i].lhs_acc);
		isl_pw_multi_aff_free(pv->contr[i].rhs_acc);
		free(pv->contr[i].role);
		free(pv->contr[i].lhs_dim);
		free(pv->contr[i].rhs_dim);
	}
	free(pv->contr);
	if (pv->array_name && pv->ib)
		for (int i = 0; i < pv->ib->g->n; i++)
			free(pv->array_name[i]);
	free(pv->array_name);
	free(pv->stmt_of);
	free(pv->stmt);
	isl_set_free(pv->context);
	if (pv->ictx)
		isl_ctx_free(pv->ictx);
	free(pv);
}

/* ---- verifier ------------------------------------------------------------------------------ */

/* The extent of the array of node a: { A[i] : 0 <= i_d < size_d }. */
static isl_set *array_extent(const tinyc_polyview *pv, int a)
{
	const tinyc_graph *g = pv->ib->g;
	const tinyc_uop *u = &g->nodes[a];
	isl_space *sp = isl_space_add_dims(tinyc_isl_params(pv->ictx, g), isl_dim_set,
					   (unsigned)u->rank);
	sp = isl_space_set_tuple_name(sp, isl_dim_set, pv->array_name[a]);
	isl_local_space *ls = isl_local_space_from_space(isl_space_copy(sp));
	isl_set *set = isl_set_universe(sp);
	for (int d = 0; d < u->rank; d++) {
		set = isl_set_lower_bound_si(set, isl_dim_set, (unsigned)d, 0);
		isl_aff *hi = u->shape[d].sym >= 0
			? isl_aff_var_on_domain(isl_local_space_copy(ls), isl_dim_param,
						(unsigned)u->shape[d].sym)
			: isl_aff_val_on_domain(isl_local_space_copy(ls),
						isl_val_int_from_si(pv->ictx, u->shape[d].val));
		hi = isl_aff_sub(hi, isl_aff_var_on_domain(isl_local_space_copy(ls), isl_dim_set,
							   (unsigned)d));
		hi = isl_aff_add_constant_si(hi, -1);
		set = isl_set_intersect(set, isl_pw_aff_nonneg_set(isl_pw_aff_from_aff(hi)));
	}
	isl_local_space_free(ls);
	return set;
}

/* Does acc, on dom (under the context), stay inside the array's extent?  1, 0 (with an
 * element read out of bounds, as isl prints a point, in *witness), or -1. */
static int access_in_bounds(const tinyc_polyview *pv, isl_set *dom, isl_pw_multi_aff *acc,
			    int array, char **witness)
{
	isl_set *d = isl_set_intersect_params(isl_set_copy(dom), isl_set_copy(pv->context));
	isl_map *m = isl_map_from_pw_multi_aff(isl_pw_multi_aff_copy(acc));
	isl_set *img = isl_map_range(isl_map_intersect_domain(m, d));
	isl_set *ext = isl_set_intersect_params(array_extent(pv, array),
						isl_set_copy(pv->context));
	isl_bool ok = isl_set_is_subset(img, ext);
	*witness = NULL;
	if (ok == isl_bool_false) {
		isl_point *pt = isl_set_sample_point(isl_set_subtract(img, ext));
		*witness = pt ? isl_point_to_str(pt) : NULL;
		isl_point_free(pt);
	} else {
		isl_set_free(img);
		isl_set_free(ext);
	}
	return ok == isl_bool_true ? 1 : ok == isl_bool_false ? 0 : -1;
}

/* Does the range analysis alone prove idx (over v's axes) inside the extent of node
 * `array`?  (A plain axis indexing a dim of the same symbolic size counts as proven.) */
static int proven_in_bounds(const tinyc_polyview *pv, const tinyc_ibval *v, int rank,
			    const tinyc_ix *const *idx, int array)
{
	const tinyc_graph *g = pv->ib->g;
	const tinyc_uop *a = &g->nodes[array];
	const tinyc_bindings *bd = pv->ib->bind;
	int64_t ext[TINYC_MAX_RANK + 1];
	if (rank != a->rank || v->naxes > TINYC_MAX_RANK)
		return 0;
	for (int i = 0; i < v->naxes; i++) {
		tinyc_dim d = v->axes[i].size;
		ext[i] = d.sym < 0 ? d.val : (bd && bd->n == g->nsym && bd->val[d.sym] > 0)
						     ? bd->val[d.sym] : -1;
	}
	for (int d = 0; d < rank; d++) {
		tinyc_dim n = a->shape[d];
		if (idx[d]->op == TINYC_IX_AXIS && n.sym >= 0 && v->axes[idx[d]->var].size.sym == n.sym)
			continue;
		int64_t size = n.sym < 0 ? n.val : (bd && bd->n == g->nsym && bd->val[n.sym] > 0)
							 ? bd->val[n.sym] : -1;
		int64_t lo, hi;
		if (size < 0 || tinyc_ix_range(pv->ib, idx[d], ext, &lo, &hi) != 3 || lo < 0 ||
		    hi >= size)
			return 0;
	}
	return 1;
}

/* Is the read's isl access, as stored, plainly the map of its composed index? (Then the
 * range proof on the index speaks for the access.) */
static int same_access(const tinyc_polyview *pv, const tinyc_pv_stmt *s, const tinyc_pv_read *r)
{
	const tinyc_ibval *v = &pv->ib->val[s->node];
	isl_space *sp = tinyc_isl_value_space(pv->ictx, pv->ib->g, v, s->name);
	isl_pw_multi_aff *p = tinyc_isl_pma_from_ix(sp, pv->array_name[r->array], r->rank,
						    (const tinyc_ix *const *)r->idx);
	isl_bool eq = isl_pw_multi_aff_plain_is_equal(p, r->acc);
	isl_pw_multi_aff_free(p);
	return eq == isl_bool_true;
}

/* Report an access that leaves its array (or could not be checked). */
static int report_bounds(tinyc_ctx *ctx, const tinyc_polyview *pv, const tinyc_pv_stmt *s,
			 const char *what, int array, int r, char *witness)
{
	const tinyc_graph *g = pv->ib->g;
	if (r < 0)
		tinyc_isl_report(ctx, pv->ictx, g->src, g->nodes[s->node].loc, "checking bounds");
	else
		tinyc_error_at(ctx, g->src, g->nodes[s->node].loc, "AccessOutOfBounds",
			       "%s: %s can leave %s's extent, e.g. at %s", s->name, what,
			       pv->array_name[array], witness ? witness : "?");
	free(witness);
	return -1;
}

/* Check the Poly-View (see poly.h). */
int tinyc_polyview_verify(tinyc_ctx *ctx, const tinyc_polyview *pv)
{
	if (!pv || !pv->ib)
		return tinyc_error(ctx, "InvalidPolyView", "no Poly-View");
	const tinyc_graph *g = pv->ib->g;
	int rc = 0;
	for (int i = 0; i < pv->nstmt; i++) {
		const tinyc_pv_stmt *s = &pv->stmt[i];
		const tinyc_uop *u = &g->nodes[s->node];
		const tinyc_ibval *v = &pv->ib->val[s->node];
		if (!s->domain || !s->write ||
		    isl_set_dim(s->domain, isl_dim_set) != v->naxes) {
			rc = tinyc_error_at(ctx, g->src, u->loc, "InvalidPolyView",
					    "%s: domain does not have the value's %d axes", s->name,
					    v->naxes);
			continue;
		}
		isl_set *wd = isl_pw_multi_aff_domain(isl_pw_multi_aff_copy(s->write));
		isl_bool all = isl_set_is_subset(s->domain, wd);
		isl_set_free(wd);
		if (all != isl_bool_true)
			rc = tinyc_error_at(ctx, g->src, u->loc, "InvalidPolyView",
					    "%s: the write is not defined on the whole domain", s->name);
		char *w = NULL;
		int ib = all != isl_bool_true ||
			 proven_in_bounds(pv, v, v->rank, (const tinyc_ix *const *)v->out, s->node)
			 ? 1 : access_in_bounds(pv, s->domain, s->write, s->node, &w);
		if (ib != 1)
			rc = report_bounds(ctx, pv, s, "the write", s->node, ib, w);
		for (int k = 0; k < s->nread; k++) {
			const tinyc_pv_read *r = &s->read[k];
			if (r->array < 0)
				continue;
			char *w = NULL;
			/* isl checks the relation itself; accesses with many divisions, which
			 * isl checks slowly, are proven from their ranges */
			int ndiv = 0;
			for (int d = 0; r->idx && d < r->rank; d++)
				ndiv += count_divs(r->idx[d]);
			int ib = (!r->nguard && r->idx &&
				  (ndiv > MAX_REBUILD_DIVS || same_access(pv, s, r)) &&
				  proven_in_bounds(pv, v, r->rank, (const tinyc_ix *const *)r->idx,
						   r->array))
				 ? 1 : access_in_bounds(pv, s->domain, r->acc, r->array, &w);
			if (ib != 1) {
				char *what = tinyc_asprintf("the read of %%%s", g->nodes[r->src].id);
				rc = report_bounds(ctx, pv, s, what ? what : "a read", r->array, ib, w);
				free(what);
			}
		}
	}
	for (int c = 0; c < pv->ncontr; c++) {
		const tinyc_contraction *ct = &pv->contr[c];
		int n = 0;
		for (int a = 0; a < ct->naxes; a++)
			n += ct->role[a] != TINYC_ROLE_NONE;
		if (!ct->nk || n != ct->nm + ct->nn + ct->nk + ct->nbatch)
			rc = tinyc_error_at(ctx, g->src, g->nodes[pv->stmt[ct->reduce_stmt].node].loc,
					    "InvalidPolyView", "inconsistent contraction roles");
	}
	return rc;
}

/* ---- printer ------------------------------------------------------------------------------- */

static const char *role_name[] = {"", "m", "n", "k", "batch"};

/* "[m@%0.0 j@%0.1]": the axes of contraction c having role r, with the dims they index. */
static void print_role(const tinyc_polyview *pv, const tinyc_contraction *c, tinyc_role r,
		       tinyc_buf *out)
{
	const tinyc_graph *g = pv->ib->g;
	const tinyc_ibval *v = &pv->ib->val[pv->stmt[c->reduce_stmt].node];
	int first = 1;
	tinyc_buf_printf(out, " %s=[", role_name[r]);
	for (int a = 0; a < c->naxes; a++) {
		if (c->role[a] != r)
			continue;
		tinyc_buf_printf(out, "%s%s@", first ? "" : " ", v->axes[a].name);
		first = 0;
		int sep = 0;
		if (c->lhs_dim[a] >= 0)
			tinyc_buf_printf(out, "%%%s.%d", g->nodes[c->lhs].id, c->lhs_dim[a]), sep = 1;
		if (c->rhs_dim[a] >= 0)
			tinyc_buf_printf(out, "%s%%%s.%d", sep ? "," : "", g->nodes[c->rhs].id,
					 c->rhs_dim[a]);
	}
	tinyc_buf_putc(out, ']');
}

/* The text dump (format at the top of this file). */
void tinyc_polyview_print(const tinyc_polyview *pv, tinyc_buf *out)
{
	const tinyc_graph *g = pv->ib->g;
	tinyc_buf_printf(out, "# polyview: %d statements, %d contractions\ncontext: ", pv->nstmt,
			 pv->ncontr);
	tinyc_isl_print_set(out, pv->context);
	tinyc_buf_putc(out, '\n');
	for (int i = 0; i < pv->nstmt; i++) {
		const tinyc_pv_stmt *s = &pv->stmt[i];
		const tinyc_uop *u = &g->nodes[s->node];
		tinyc_buf_printf(out, "%s = %s(", s->name, tinyc_op_info(u->op)->name);
		for (int k = 0; k < u->nsrc; k++)
			tinyc_buf_printf(out, "%s%%%s", k ? ", " : "", g->nodes[u->src[k]].id);
		tinyc_buf_printf(out, ") : %s", tinyc_dtype_name(u->dtype));
		tinyc_print_shape(g, u->rank, u->shape, out);
		tinyc_buf_puts(out, "\n  domain: ");
		tinyc_isl_print_set(out, s->domain);
		tinyc_buf_puts(out, "\n  write: ");
		tinyc_isl_print_pma(out, s->write);
		tinyc_buf_putc(out, '\n');
		for (int k = 0; k < s->nread; k++) {
			const tinyc_pv_read *r = &s->read[k];
			tinyc_buf_printf(out, "  read %%%s: ", g->nodes[r->src].id);
			if (r->array < 0) {
				const tinyc_uop *c = &g->nodes[r->cnode];
				if (c->lit.text)
					tinyc_buf_printf(out, "const %s\n", c->lit.text);
				else if (c->lit.kind == TINYC_LIT_FLOAT)
					tinyc_buf_printf(out, "const %.17g\n", c->lit.f);
				else
					tinyc_buf_printf(out, "const %lld\n", (long long)c->lit.i);
				continue;
			}
			tinyc_isl_print_pma(out, r->acc);
			tinyc_buf_puts(out, r->padded ? " padded\n" : "\n");
		}
		if (s->contraction >= 0) {
			const tinyc_contraction *c = &pv->contr[s->contraction];
			tinyc_buf_printf(out, "  contraction: matmul lhs=%%%s rhs=%%%s", g->nodes[c->lhs].id,
					 g->nodes[c->rhs].id);
			print_role(pv, c, TINYC_ROLE_M, out);
			print_role(pv, c, TINYC_ROLE_N, out);
			print_role(pv, c, TINYC_ROLE_K, out);
			print_role(pv, c, TINYC_ROLE_BATCH, out);
			tinyc_buf_printf(out, " acc=%s", tinyc_dtype_name(c->acc));
			if (c->lhs_padded || c->rhs_padded)
				tinyc_buf_printf(out, " padded=%s", !c->rhs_padded ? "lhs"
								     : c->lhs_padded ? "both" : "rhs");
			tinyc_buf_putc(out, '\n');
		}
	}
}

/* ---- unions for later stages --------------------------------------------------------------- */

isl_union_set *tinyc_polyview_domains(const tinyc_polyview *pv)
{
	isl_union_set *u = isl_union_set_empty(isl_set_get_space(pv->context));
	for (int i = 0; i < pv->nstmt; i++)
		u = isl_union_set_add_set(u, isl_set_copy(pv->stmt[i].domain));
	return u;
}

/* A statement's access restricted to its domain, as a map. */
static isl_map *access_map(const tinyc_pv_stmt *s, isl_pw_multi_aff *acc)
{
	isl_map *m = isl_map_from_pw_multi_aff(isl_pw_multi_aff_copy(acc));
	return isl_map_intersect_domain(m, isl_set_copy(s->domain));
}

isl_union_map *tinyc_polyview_reads(const tinyc_polyview *pv)
{
	isl_union_map *u = isl_union_map_empty(isl_set_get_space(pv->context));
	for (int i = 0; i < pv->nstmt; i++)
		for (int k = 0; k < pv->stmt[i].nread; k++)
			if (pv->stmt[i].read[k].acc)
				u = isl_union_map_add_map(u, access_map(&pv->stmt[i],
									pv->stmt[i].read[k].acc));
	return u;
}

isl_union_map *tinyc_polyview_writes(const tinyc_polyview *pv)
{
	isl_union_map *u = isl_union_map_empty(isl_set_get_space(pv->context));
	for (int i = 0; i < pv->nstmt; i++)
		u = isl_union_map_add_map(u, access_map(&pv->stmt[i], pv->stmt[i].write));
	return u;
}

