/* Epilogue extraction (DESIGN.md §1, seeds 000/001/002 §8): for every contraction of the
 * Poly-View, the region of the UOp DAG that consumes its REDUCE becomes an epilogue graph.
 *
 * The epilogue runs over the contraction's output coordinates C = (l, m, n): the REDUCE
 * statement's axes with roles batch, m and n (an absent role is a coordinate fixed at 0).
 * The extraction works with isl maps from C:
 *
 *   1. Forward, in statement order, every statement u that (transitively) reads the REDUCE
 *      gets its point map P_u : C -> S_u (which point of u the thread at c computes):
 *      P_u = read_u^-1 . E_v, where E_v = write_v . P_v is the element of v computed at c.
 *      An ordinary consumer must be one-to-one with C (P_u a bijection onto u's domain):
 *      otherwise it broadcasts, slices or shifts the accumulator and stays a separate
 *      kernel.  A REDUCE over m and/or n of such a value is a reduction node (its domain
 *      is one-to-one with C; the reduced axes say row, column or scalar); its users may
 *      only be a CAST and an OUTPUT, since everything else needs the completed reduction.
 *   2. Backward, from every OUTPUT found in step 1, the graph is built by demand:
 *      build(x, A) makes the node for the value of array x at element A(c):
 *        the REDUCE itself      AccFetch, if A is the accumulator's own element
 *                               (then a Cast when the REDUCE rounds to its line dtype);
 *        a BUFFER               a load: A's coefficients times the buffer's strides give
 *                               the strides along (m, n, l): (0,1,0) RowBroadcast,
 *                               (1,0,0) ColBroadcast, (0,0,0) ScalarBroadcast, else the
 *                               first full tensor is SrcFetch (the C operand) and later
 *                               ones AuxLoad;
 *        a CONST                ScalarBroadcast of the constant;
 *        an elementwise value   Compute / Cast with its operands built at
 *                               read_j . write_v^-1 . A (movement is folded in reads).
 *      Each OUTPUT is an AuxStore (its layout from write_o . P_o) and each reduction an
 *      Row/Col/ScalarReduction node.  An OUTPUT whose build fails is left out, with why.
 *      A value that another contraction reads with broadcasting (the schedule stores it,
 *      tinyc_contraction_producers) is stored too when it is PLAIN: an AuxStore to its
 *      own buffer, in its own dtype (the first Linear's bias + GELU for the second).
 *   3. If a consumer outside the graph still reads the accumulator (or a value computed
 *      from it), the graph also stores the REDUCE's value to its buffer.
 *   4. The graph passes run (types, cse, dce, sort).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/local_space.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/val.h>

#include "lower/lower.h"
#include "poly/poly.h"

/* What a node is with respect to the contraction being extracted. */
enum {
	ST_NONE,	/* does not depend on the accumulator */
	ST_ACC,		/* the contraction's REDUCE */
	ST_PLAIN,	/* one-to-one with C: can run in the epilogue */
	ST_RED,		/* a REDUCE over m and/or n of a PLAIN value: a reduction node */
	ST_REDOUT,	/* a CAST of a reduction result (feeds an OUTPUT) */
	ST_BAD,		/* depends on the accumulator but cannot run in the epilogue */
};

/* A value already built: node `node` read at A is evt node idx. */
typedef struct memo {
	int node;			/* UOp node (or CONST node) */
	isl_pw_multi_aff *A;		/* C -> its array (owned) */
	int idx;			/* the evt node */
} memo;

/* The state of one extraction. */
typedef struct ex {
	tinyc_ctx *ctx;
	const tinyc_polyview *pv;
	const tinyc_graph *g;
	const tinyc_indexbook *ib;
	isl_ctx *ictx;
	const tinyc_contraction *c;	/* the contraction */
	int r;				/* its REDUCE node */
	isl_set *cdom;			/* { C[l, m, n] : in range } with the context's params */
	tinyc_dim ext[3];		/* extents of l, m, n */
	isl_pw_multi_aff *Wr;		/* C -> T_r: the accumulator element of c */
	int *state;			/* per node */
	isl_pw_multi_aff **P;		/* per node: C -> S_v (PLAIN, RED, REDOUT) */
	isl_pw_multi_aff **E;		/* per node: C -> T_v, the element computed at c */
	int *redkind;			/* per ST_RED node: ROW_RED, COL_RED or SCALAR_RED */
	unsigned char *covered;		/* nodes the graph computes */
	unsigned char *live;		/* nodes that reach an OUTPUT */
	unsigned char *prod;		/* values the schedule stores for another contraction
					 * (tinyc_contraction_producers) or for several readers
					 * (tinyc_contraction_store_ends) */
	unsigned char *stored;		/* prod values this graph stores */
	tinyc_evt *gr;			/* the graph being built */
	memo *memo;			/* built values */
	int nmemo, capmemo;
	int have_src;			/* a SrcFetch was designated */
	char *fail;			/* why the current build failed (owned) */
	tinyc_evt_entry *e;		/* the entry being filled */
	const tinyc_evt_set *set;	/* the entries filled so far */
	int oom;			/* an allocation or isl call failed */
} ex;

/* Record why the current build fails (the first reason wins); returns -1. */
static int failf(ex *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int failf(ex *x, const char *fmt, ...)
{
	if (x->fail)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	char buf[512];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	x->fail = strdup(buf);
	if (!x->fail)
		x->oom = 1;
	return -1;
}

/* The id of node i ("12" for "%12"). */
static const char *nid(const ex *x, int i)
{
	return x->g->nodes[i].id;
}

/* Add a note "node u stays a separate kernel: why". */
static void add_note(ex *x, int u, const char *why)
{
	tinyc_evt_entry *e = x->e;
	for (int k = 0; k < e->nnote; k++)
		if (e->note[k].uop == u)
			return;
	tinyc_evt_note *nn = realloc(e->note, sizeof(*nn) * (size_t)(e->nnote + 1));
	char *w = strdup(why ? why : "?");
	if (!nn || !w) {
		free(w);
		if (nn)
			e->note = nn;
		x->oom = 1;
		return;
	}
	e->note = nn;
	nn[e->nnote].uop = u;
	nn[e->nnote].why = w;
	e->nnote++;
}

/* ---------------------------------------------------------- isl helpers ---- */

/* pma as a map restricted to dom (both kept). */
static isl_map *as_map(isl_pw_multi_aff *pma, isl_set *dom)
{
	isl_map *m = isl_map_from_pw_multi_aff(isl_pw_multi_aff_copy(pma));
	return dom ? isl_map_intersect_domain(m, isl_set_copy(dom)) : m;
}

/* P = read^-1 . E : C -> S_u, for statement u reading (by `read`, on dom_u) the array that
 * E : C -> T gives elements of.  Requires P single-valued and defined on all of C; with
 * bij, also one-to-one and onto dom_u.  NULL with a reason on failure. */
static isl_pw_multi_aff *invert_through(ex *x, isl_pw_multi_aff *E, isl_pw_multi_aff *read,
					isl_set *dom_u, int bij, int u)
{
	isl_map *em = as_map(E, x->cdom);
	isl_map *rm = as_map(read, dom_u);
	isl_map *pm = isl_map_apply_range(em, isl_map_reverse(rm));
	pm = isl_map_intersect_params(pm, isl_set_copy(x->pv->context));
	pm = isl_map_coalesce(pm);
	if (!pm) {
		x->oom = 1;
		failf(x, "isl error");
		return NULL;
	}
	isl_bool sv = isl_map_is_single_valued(pm);
	isl_set *dom = isl_map_domain(isl_map_copy(pm));
	isl_bool covers = isl_set_is_subset(x->cdom, dom);
	isl_set_free(dom);
	isl_bool ok = sv == isl_bool_true && covers == isl_bool_true ? isl_bool_true : isl_bool_false;
	if (sv != isl_bool_true)
		failf(x, "%%%s reads one element at several points (a broadcast of the accumulator)",
		      nid(x, u));
	else if (covers != isl_bool_true)
		failf(x, "%%%s does not read every element of the accumulator (a slice or shift)",
		      nid(x, u));
	if (ok == isl_bool_true && bij) {
		isl_bool inj = isl_map_is_injective(pm);
		isl_set *rng = isl_map_range(isl_map_copy(pm));
		isl_set *du = isl_set_intersect_params(isl_set_copy(dom_u), isl_set_copy(x->pv->context));
		isl_bool onto = isl_set_is_subset(du, rng);
		isl_set_free(rng);
		isl_set_free(du);
		if (inj != isl_bool_true)
			failf(x, "%%%s reads two accumulator elements into one", nid(x, u));
		else if (onto != isl_bool_true)
			failf(x, "%%%s has elements that no accumulator element feeds (broadcast or "
			      "padding)", nid(x, u));
		ok = inj == isl_bool_true && onto == isl_bool_true ? isl_bool_true : isl_bool_false;
	}
	if (ok != isl_bool_true) {
		isl_map_free(pm);
		return NULL;
	}
	isl_pw_multi_aff *p = isl_pw_multi_aff_from_map(pm);
	p = isl_pw_multi_aff_coalesce(p);
	if (!p)
		x->oom = 1, failf(x, "isl error");
	return p;
}

/* Whether two maps from C agree on all of C. */
static int same_on_cdom(ex *x, isl_pw_multi_aff *a, isl_pw_multi_aff *b)
{
	isl_map *ma = isl_map_intersect_params(as_map(a, x->cdom), isl_set_copy(x->pv->context));
	isl_map *mb = isl_map_intersect_params(as_map(b, x->cdom), isl_set_copy(x->pv->context));
	isl_bool eq = isl_map_is_equal(ma, mb);
	isl_map_free(ma);
	isl_map_free(mb);
	return eq == isl_bool_true;
}

/* Callback of isl_pw_multi_aff_foreach_piece: keep the (only) piece. */
static isl_stat take_piece(isl_set *set, isl_multi_aff *ma, void *user)
{
	isl_multi_aff **out = user;
	isl_set_free(set);
	isl_multi_aff_free(*out);
	*out = ma;
	return isl_stat_ok;
}

/* The element strides of an array node (BUFFER/OUTPUT strides=, else row-major). */
static int array_strides(const tinyc_uop *u, tinyc_evt_poly *bs)
{
	if (u->strides && (u->op == TINYC_OP_BUFFER || u->op == TINYC_OP_OUTPUT)) {
		for (int d = 0; d < u->rank; d++)
			bs[d] = tinyc_evt_poly_dim(&u->strides[d]);
		return 0;
	}
	tinyc_evt_poly s = tinyc_evt_poly_const(1);
	for (int d = u->rank - 1; d >= 0; d--) {
		bs[d] = s;
		tinyc_evt_poly dim = tinyc_evt_poly_dim(&u->shape[d]);
		if (tinyc_evt_poly_mul(&s, &dim, &s) < 0)
			return -1;
	}
	return 0;
}

/* Whether af uses an integer division (a floor or mod) with a nonzero coefficient. */
static int divs_used(isl_aff *af)
{
	isl_size nd = isl_aff_dim(af, isl_dim_div);
	for (int i = 0; i < nd; i++) {
		isl_val *v = isl_aff_get_coefficient_val(af, isl_dim_div, i);
		int used = !v || !isl_val_is_zero(v);
		isl_val_free(v);
		if (used)
			return 1;
	}
	return nd < 0;
}

/* sum_d ma[d] * bs[d] as one affine expression without divisions, when every stride
 * bs[d] is a constant and the divisions cancel (floor(m / T) * T + m mod T = m); else
 * NULL. */
static isl_aff *linearise(isl_multi_aff *ma, const tinyc_evt_poly *bs, int nout)
{
	isl_aff *sum = NULL;
	for (int d = 0; d < nout; d++) {
		int64_t st;
		if (tinyc_evt_poly_eval(&bs[d], NULL, 0, &st) < 0) {
			isl_aff_free(sum);
			return NULL;
		}
		isl_aff *af = isl_multi_aff_get_aff(ma, d);
		af = isl_aff_scale_val(af, isl_val_int_from_si(isl_multi_aff_get_ctx(ma), (long)st));
		sum = sum ? isl_aff_add(sum, af) : af;
	}
	if (!sum || divs_used(sum)) {
		isl_aff_free(sum);
		return NULL;
	}
	return sum;
}

int tinyc_evt_access_layout(const tinyc_graph *g, isl_pw_multi_aff *acc, isl_set *dom,
			    const tinyc_uop *array, int nin, tinyc_evt_poly *strides,
			    tinyc_evt_poly *offset, char **why)
{
	*why = NULL;
	isl_pw_multi_aff *a = isl_pw_multi_aff_copy(acc);
	if (dom)
		a = isl_pw_multi_aff_intersect_domain(a, isl_set_copy(dom));
	a = isl_pw_multi_aff_coalesce(a);
	if (!a)
		return (*why = strdup("isl error")), -1;
	isl_multi_aff *ma = NULL;
	if (isl_pw_multi_aff_n_piece(a) != 1 ||
	    isl_pw_multi_aff_foreach_piece(a, take_piece, &ma) < 0 || !ma) {
		isl_pw_multi_aff_free(a);
		isl_multi_aff_free(ma);
		*why = strdup("the access is piecewise");
		return -1;
	}
	isl_pw_multi_aff_free(a);
	tinyc_evt_poly bs[TINYC_MAX_RANK];
	int rc = 0;
	if (array_strides(array, bs) < 0) {
		*why = strdup("the tensor's strides are too complex");
		rc = -1;
	}
	for (int i = 0; i < nin; i++)
		strides[i] = tinyc_evt_poly_const(0);
	*offset = tinyc_evt_poly_const(0);
	isl_size nout = isl_multi_aff_dim(ma, isl_dim_out);
	isl_size npar = isl_multi_aff_dim(ma, isl_dim_param);
	isl_size nin_ma = isl_multi_aff_dim(ma, isl_dim_in);
	if (nout != array->rank || nin_ma != nin) {
		*why = strdup("the access does not match the tensor's rank");
		rc = -1;
	}
	/* an access that divides (a merged coordinate split back into the tensor's axes)
	 * is linear again once the axes are weighted by constant strides */
	isl_aff *lin = NULL;
	int divides = 0;
	for (int d = 0; rc == 0 && d < nout; d++) {
		isl_aff *af = isl_multi_aff_get_aff(ma, d);
		divides |= !af || divs_used(af);
		isl_aff_free(af);
	}
	if (rc == 0 && divides && !(lin = linearise(ma, bs, nout))) {
		*why = strdup("the access divides (a reshape that splits an axis)");
		rc = -1;
	}
	if (lin) {
		nout = 1;
		bs[0] = tinyc_evt_poly_const(1);
	}
	for (int d = 0; rc == 0 && d < nout; d++) {
		isl_aff *af = lin ? isl_aff_copy(lin) : isl_multi_aff_get_aff(ma, d);
		if (!af) {
			*why = strdup("isl error");
			rc = -1;
		}
		isl_val *v;
		for (int i = 0; rc == 0 && i <= nin + npar; i++) {
			int64_t coef;
			if (i < nin)
				v = isl_aff_get_coefficient_val(af, isl_dim_in, i);
			else if (i < nin + npar)
				v = isl_aff_get_coefficient_val(af, isl_dim_param, i - nin);
			else
				v = isl_aff_get_constant_val(af);
			if (!v || !isl_val_is_int(v)) {
				isl_val_free(v);
				*why = strdup("the access has a rational coefficient");
				rc = -1;
				break;
			}
			coef = isl_val_get_num_si(v);
			isl_val_free(v);
			if (!coef)
				continue;
			tinyc_evt_poly term;
			if (i < nin) {
				term = tinyc_evt_poly_const(coef);
			} else if (i < nin + npar) {
				const char *pn = isl_aff_get_dim_name(af, isl_dim_param, i - nin);
				int sym = -1;
				for (int s = 0; pn && s < g->nsym; s++)
					if (!strcmp(g->syms[s], pn))
						sym = s;
				if (sym < 0) {
					*why = strdup("the access uses an unknown parameter");
					rc = -1;
					break;
				}
				term = tinyc_evt_poly_sym(coef, sym);
			} else {
				term = tinyc_evt_poly_const(coef);
			}
			tinyc_evt_poly prod;
			tinyc_evt_poly *dst = i < nin ? &strides[i] : offset;
			if (tinyc_evt_poly_mul(&term, &bs[d], &prod) < 0 ||
			    tinyc_evt_poly_add(dst, &prod, dst) < 0) {
				*why = strdup("the strides are too complex");
				rc = -1;
			}
		}
		isl_aff_free(af);
	}
	isl_aff_free(lin);
	isl_multi_aff_free(ma);
	if (rc < 0 && !*why)
		*why = strdup("?");
	return rc;
}

/* ----------------------------------------------------------------- build ---- */

/* The memoised node for (node, A), or -1. */
static int memo_find(ex *x, int node, isl_pw_multi_aff *A)
{
	for (int i = 0; i < x->nmemo; i++)
		if (x->memo[i].node == node && same_on_cdom(x, x->memo[i].A, A))
			return x->memo[i].idx;
	return -1;
}

static void memo_add(ex *x, int node, isl_pw_multi_aff *A, int idx)
{
	if (x->nmemo == x->capmemo) {
		int nc = x->capmemo ? 2 * x->capmemo : 16;
		memo *nm = realloc(x->memo, sizeof(*nm) * (size_t)nc);
		if (!nm) {
			x->oom = 1;
			return;
		}
		x->memo = nm;
		x->capmemo = nc;
	}
	x->memo[x->nmemo].node = node;
	x->memo[x->nmemo].A = isl_pw_multi_aff_copy(A);
	x->memo[x->nmemo].idx = idx;
	x->nmemo++;
}

/* Forget the graph nodes from index n on (a failed build) and their memo entries. */
static void rollback(ex *x, int n)
{
	for (int i = n; i < x->gr->n; i++)
		free(x->gr->nodes[i].t.name);
	x->gr->n = n;
	int k = 0;
	for (int i = 0; i < x->nmemo; i++) {
		if (x->memo[i].idx >= n)
			isl_pw_multi_aff_free(x->memo[i].A);
		else
			x->memo[k++] = x->memo[i];
	}
	x->nmemo = k;
}

/* Set node i's children. */
static void link(ex *x, int i, int n, const int *ch)
{
	x->gr->nodes[i].nchild = n;
	for (int k = 0; k < n; k++)
		x->gr->nodes[i].child[k] = ch[k];
}

/* A CONST as a ScalarBroadcast. */
static int build_const(ex *x, int cn)
{
	const tinyc_uop *u = &x->g->nodes[cn];
	int i = tinyc_evt_scalar(x->ctx, x->gr, u->dtype, 0);
	if (i < 0)
		return x->oom = 1, failf(x, "out of memory");
	tinyc_evt_node *nd = &x->gr->nodes[i];
	if (u->lit.kind == TINYC_LIT_FLOAT)
		nd->fval = u->lit.f, nd->ival = (int64_t)u->lit.f;
	else
		nd->ival = u->lit.i, nd->fval = (double)u->lit.i;
	nd->uop = cn;
	return i;
}

/* A BUFFER read at A: a load classified by its strides. */
static int build_load(ex *x, int b, isl_pw_multi_aff *A)
{
	const tinyc_uop *u = &x->g->nodes[b];
	tinyc_evt_layout lay;
	char *why = NULL;
	if (tinyc_evt_access_layout(x->g, A, x->cdom, u, 3, lay.stride, &lay.offset, &why) < 0) {
		failf(x, "%%%s (%s): %s", nid(x, b), u->name ? u->name : "?", why ? why : "?");
		free(why);
		return -1;
	}
	/* C's dims are (l, m, n); the layout is (m, n, l) */
	tinyc_evt_poly sl = lay.stride[0];
	lay.stride[0] = lay.stride[1];
	lay.stride[1] = lay.stride[2];
	lay.stride[2] = sl;
	int zm = tinyc_evt_poly_is_zero(&lay.stride[0]), zn = tinyc_evt_poly_is_zero(&lay.stride[1]);
	tinyc_evt_kind k = zm && zn ? TINYC_EVT_SCALAR_BCAST
			   : zm     ? TINYC_EVT_ROW_BCAST
			   : zn     ? TINYC_EVT_COL_BCAST
				    : TINYC_EVT_AUX_LOAD;
	if (k == TINYC_EVT_AUX_LOAD && !x->have_src) {
		k = TINYC_EVT_SRC_FETCH;
		x->have_src = 1;
	}
	int i = tinyc_evt_load(x->ctx, x->gr, k, u->name ? u->name : nid(x, b), b, u->dtype, &lay);
	if (i < 0)
		return x->oom = 1, failf(x, "out of memory");
	x->gr->nodes[i].uop = b;
	return i;
}

static int build(ex *x, int node, int cnode, isl_pw_multi_aff *A, int padded);

/* Statement v's value at A: Compute, Cast, or its operand for CONTIGUOUS. */
static int build_stmt(ex *x, int v, isl_pw_multi_aff *A)
{
	const tinyc_polyview *pv = x->pv;
	const tinyc_pv_stmt *st = &pv->stmt[pv->stmt_of[v]];
	const tinyc_uop *u = &x->g->nodes[v];
	if (x->state[v] == ST_RED || x->state[v] == ST_REDOUT)
		return failf(x, "needs %%%s, the result of a reduction over the whole tile grid",
			     nid(x, v));
	if (u->op == TINYC_OP_REDUCE)
		return failf(x, "needs %%%s, a reduction computed by another kernel", nid(x, v));
	int view = tinyc_op_info(u->op)->kind == TINYC_KIND_MOVEMENT;	/* CONTIGUOUS, stored view */
	if (u->op == TINYC_OP_OUTPUT || tinyc_op_info(u->op)->kind != TINYC_KIND_ELEMENTWISE) {
		if (!view)
			return failf(x, "%%%s (%s) cannot run in an epilogue", nid(x, v),
				     tinyc_op_info(u->op)->name);
	}
	isl_pw_multi_aff *P = invert_through(x, A, st->write, st->domain, 0, v);
	if (!P)
		return -1;
	int ch[3], n = st->nread;
	for (int j = 0; j < n; j++) {
		const tinyc_pv_read *rd = &st->read[j];
		isl_pw_multi_aff *Aj = NULL;
		if (rd->array >= 0)
			Aj = isl_pw_multi_aff_pullback_pw_multi_aff(isl_pw_multi_aff_copy(rd->acc),
								    isl_pw_multi_aff_copy(P));
		ch[j] = build(x, rd->array, rd->cnode, Aj, rd->padded);
		isl_pw_multi_aff_free(Aj);
		if (ch[j] < 0) {
			isl_pw_multi_aff_free(P);
			return -1;
		}
	}
	isl_pw_multi_aff_free(P);
	x->covered[v] = 1;
	if (view)
		return ch[0];
	int i;
	if (u->op == TINYC_OP_CAST) {
		i = tinyc_evt_cast(x->ctx, x->gr, u->dtype);
	} else if (u->op == TINYC_OP_BITCAST) {
		i = tinyc_evt_bitcast(x->ctx, x->gr, x->gr->nodes[ch[0]].dtype, u->dtype);
	} else {
		int first = u->op == TINYC_OP_WHERE ? 1 : 0;
		i = tinyc_evt_compute(x->ctx, x->gr, u->op, x->gr->nodes[ch[first]].dtype);
	}
	if (i < 0)
		return x->oom = 1, failf(x, "out of memory");
	link(x, i, n, ch);
	x->gr->nodes[i].uop = v;
	return i;
}

/* Whether the epilogue of an earlier contraction stores node v (its accumulator or a
 * value another contraction reads): then this epilogue loads it instead of recomputing. */
static int stored_before(const ex *x, int v)
{
	for (int j = 0; j < x->set->n; j++) {
		const tinyc_evt *g = x->set->e[j].g;
		if (&x->set->e[j] == x->e || !g)
			continue;
		for (int i = 0; i < g->n; i++)
			if (tinyc_evt_is_output(g->nodes[i].kind) && g->nodes[i].t.buf == v &&
			    g->nodes[i].kind == TINYC_EVT_AUX_STORE)
				return 1;
	}
	return 0;
}

/* The node for the value of array `node` at element A(c) (or of CONST cnode). */
static int build(ex *x, int node, int cnode, isl_pw_multi_aff *A, int padded)
{
	if (node < 0) {
		if (cnode < 0)
			return failf(x, "a read of nothing");
		for (int k = 0; k < x->nmemo; k++)
			if (x->memo[k].node == cnode)
				return x->memo[k].idx;
		int ci = build_const(x, cnode);
		if (ci >= 0)
			memo_add(x, cnode, NULL, ci);
		return ci;
	}
	if (padded)
		return failf(x, "reads %%%s through a PAD (zero outside its bounds)", nid(x, node));
	if (!A)
		return x->oom = 1, failf(x, "isl error");
	int i = memo_find(x, node, A);
	if (i >= 0)
		return i;
	const tinyc_uop *u = &x->g->nodes[node];
	if (node == x->r) {
		if (!same_on_cdom(x, A, x->Wr))
			return failf(x, "reads the accumulator at another element than its own "
				     "(a transpose or shift of the contraction result)");
		i = tinyc_evt_acc_fetch(x->ctx, x->gr);
		if (i >= 0)
			x->gr->nodes[i].uop = node;
		if (i >= 0 && u->dtype != x->gr->acc) {
			/* the REDUCE result is rounded to its line dtype */
			int c = tinyc_evt_cast(x->ctx, x->gr, u->dtype);
			if (c >= 0)
				link(x, c, 1, &i), x->gr->nodes[c].uop = node;
			i = c;
		}
		if (i < 0)
			return x->oom = 1, failf(x, "out of memory");
		x->covered[node] = 1;
	} else if (u->op == TINYC_OP_BUFFER || stored_before(x, node)) {
		i = build_load(x, node, A);
	} else if (x->pv->stmt_of[node] >= 0) {
		i = build_stmt(x, node, A);
	} else {
		return failf(x, "%%%s cannot be read in an epilogue", nid(x, node));
	}
	if (i >= 0)
		memo_add(x, node, A, i);
	return i;
}

/* ----------------------------------------------------------- forward pass ---- */

/* Whether output dim `out` of P's expression (not its domain) uses input dim `in`; every
 * piece counts. */
static isl_stat piece_uses(isl_set *set, isl_multi_aff *ma, void *user)
{
	int *q = user;	/* {out, in, result} */
	isl_aff *a = isl_multi_aff_get_aff(ma, q[0]);
	if (isl_aff_involves_dims(a, isl_dim_in, (unsigned)q[1], 1) == isl_bool_true)
		q[2] = 1;
	isl_aff_free(a);
	isl_set_free(set);
	isl_multi_aff_free(ma);
	return isl_stat_ok;
}

static int expr_uses(isl_pw_multi_aff *P, int out, int in)
{
	int q[3] = {out, in, 0};
	isl_pw_multi_aff_foreach_piece(P, piece_uses, q);
	return q[2];
}

/* The C dims (0 l, 1 m, 2 n) that the reduced axes of REDUCE statement st come from,
 * as a bit set; -1 when one of them is not a single C dim. */
static int reduced_cdims(ex *x, int v, isl_pw_multi_aff *P)
{
	const tinyc_ibval *iv = &x->ib->val[v];
	int set = 0;
	for (int k = 0; k < iv->nreduce; k++) {
		int a = iv->reduce_axes[k], found = 0;
		for (int d = 0; d < 3; d++)
			if (!(x->ext[d].sym < 0 && x->ext[d].val == 1) && expr_uses(P, a, d))
				set |= 1 << d, found++;
		if (found > 1)
			return -1;
	}
	return set;
}

/* Classify statement u (node order, after the REDUCE) and compute its point map. */
static void forward(ex *x, int u)
{
	const tinyc_polyview *pv = x->pv;
	const tinyc_pv_stmt *st = &pv->stmt[pv->stmt_of[u]];
	const tinyc_uop *un = &x->g->nodes[u];
	int first = -1, nf = 0, bad = -1, after_red = 0, red = -1;
	for (int j = 0; j < st->nread; j++) {
		int a = st->read[j].array;
		if (a < 0 || x->state[a] == ST_NONE)
			continue;
		nf++;
		if (x->state[a] == ST_BAD)
			bad = a;
		if (x->state[a] == ST_RED || x->state[a] == ST_REDOUT)
			after_red = 1, red = a;
		if (first < 0)
			first = j;
	}
	if (!nf)
		return;
	x->state[u] = ST_BAD;
	if (bad >= 0)
		return;	/* the cause is noted where it happened */
	if (x->fail)
		free(x->fail), x->fail = NULL;
	const tinyc_pv_read *rd = &st->read[first];
	if (rd->padded) {
		add_note(x, u, "reads the accumulator through a PAD");
		return;
	}
	if (after_red) {
		if (nf != 1 || (un->op != TINYC_OP_CAST && un->op != TINYC_OP_OUTPUT)) {
			char why[256];
			snprintf(why, sizeof(why), "needs the completed reduction %%%s (a dependence "
				 "across the whole grid of tiles)", nid(x, red));
			add_note(x, u, why);
			return;
		}
		if (un->op == TINYC_OP_CAST && x->state[rd->array] == ST_REDOUT) {
			add_note(x, u, "a second CAST of a reduction result (double rounding)");
			return;
		}
		x->P[u] = invert_through(x, x->E[rd->array], rd->acc, st->domain, 0, u);
		if (!x->P[u]) {
			add_note(x, u, x->fail);
			return;
		}
		x->E[u] = isl_pw_multi_aff_pullback_pw_multi_aff(isl_pw_multi_aff_copy(st->write),
								 isl_pw_multi_aff_copy(x->P[u]));
		x->state[u] = un->op == TINYC_OP_CAST ? ST_REDOUT : ST_PLAIN;
		if (un->op == TINYC_OP_OUTPUT)
			x->state[u] = ST_REDOUT;
		return;
	}
	if (un->op == TINYC_OP_CONTIGUOUS) {
		int users = 0, only_output = 1;
		for (int i = u + 1; i < x->g->n; i++)
			for (int k = 0; k < x->g->nodes[i].nsrc; k++)
				if (x->g->nodes[i].src[k] == u && x->live[i])
					users++, only_output &= x->g->nodes[i].op == TINYC_OP_OUTPUT;
		if (users != 1 || !only_output) {
			add_note(x, u, "CONTIGUOUS materialises its value for several users");
			return;
		}
	}
	if (un->op == TINYC_OP_REDUCE && un->redop != TINYC_RED_ADD && un->redop != TINYC_RED_MAX) {
		add_note(x, u, "REDUCE MUL has no epilogue reduction (ADD and MAX do)");
		return;
	}
	x->P[u] = invert_through(x, x->E[rd->array], rd->acc, st->domain, 1, u);
	if (!x->P[u]) {
		add_note(x, u, x->fail);
		return;
	}
	/* every other read of a value computed from the accumulator must be its own element */
	for (int j = first + 1; j < st->nread; j++) {
		int a = st->read[j].array;
		if (a < 0 || x->state[a] == ST_NONE)
			continue;
		isl_pw_multi_aff *Aj = isl_pw_multi_aff_pullback_pw_multi_aff(
			isl_pw_multi_aff_copy(st->read[j].acc), isl_pw_multi_aff_copy(x->P[u]));
		int same = !st->read[j].padded && same_on_cdom(x, Aj, x->E[a]);
		isl_pw_multi_aff_free(Aj);
		if (!same) {
			char why[256];
			snprintf(why, sizeof(why), "reads %%%s at another element than the one computed "
				 "with it (a transpose or shift inside the epilogue)", nid(x, a));
			add_note(x, u, why);
			isl_pw_multi_aff_free(x->P[u]);
			x->P[u] = NULL;
			return;
		}
	}
	x->E[u] = isl_pw_multi_aff_pullback_pw_multi_aff(isl_pw_multi_aff_copy(st->write),
							 isl_pw_multi_aff_copy(x->P[u]));
	if (un->op == TINYC_OP_REDUCE) {
		int rs = reduced_cdims(x, u, x->P[u]);
		if (rs < 0 || (rs & 1) || !(rs & 6)) {
			add_note(x, u, rs < 0 ? "reduces over an axis that is not m or n"
				       : (rs & 1) ? "reduces over the batch axis"
						  : "reduces over no axis of the epilogue");
			return;
		}
		x->redkind[u] = rs == 2   ? TINYC_EVT_ROW_RED
				: rs == 4 ? TINYC_EVT_COL_RED
					  : TINYC_EVT_SCALAR_RED;
		x->state[u] = ST_RED;
		return;
	}
	x->state[u] = ST_PLAIN;
}

/* ---------------------------------------------------------------- outputs ---- */

/* The layout of the element E(c) of array node `arr` (an OUTPUT or the REDUCE's value). */
static int out_layout(ex *x, isl_pw_multi_aff *E, const tinyc_uop *arr, tinyc_evt_layout *lay)
{
	char *why = NULL;
	if (tinyc_evt_access_layout(x->g, E, x->cdom, arr, 3, lay->stride, &lay->offset, &why) < 0) {
		failf(x, "its layout: %s", why ? why : "?");
		free(why);
		return -1;
	}
	tinyc_evt_poly sl = lay->stride[0];
	lay->stride[0] = lay->stride[1];
	lay->stride[1] = lay->stride[2];
	lay->stride[2] = sl;
	return 0;
}

/* Build OUTPUT o (state PLAIN: an AuxStore; REDOUT: a reduction node).  0 or -1. */
static int build_output(ex *x, int o)
{
	const tinyc_polyview *pv = x->pv;
	const tinyc_pv_stmt *so = &pv->stmt[pv->stmt_of[o]];
	const tinyc_uop *ou = &x->g->nodes[o];
	const tinyc_pv_read *rd = &so->read[0];
	tinyc_evt_layout lay;
	if (out_layout(x, x->E[o], ou, &lay) < 0)
		return -1;
	if (x->state[o] == ST_PLAIN) {
		isl_pw_multi_aff *A = NULL;
		if (rd->array >= 0)
			A = isl_pw_multi_aff_pullback_pw_multi_aff(isl_pw_multi_aff_copy(rd->acc),
								   isl_pw_multi_aff_copy(x->P[o]));
		int ch = build(x, rd->array, rd->cnode, A, rd->padded);
		isl_pw_multi_aff_free(A);
		if (ch < 0)
			return -1;
		int s = tinyc_evt_store(x->ctx, x->gr, ou->name ? ou->name : nid(x, o), o, ou->dtype,
					&lay);
		if (s < 0)
			return x->oom = 1, failf(x, "out of memory");
		link(x, s, 1, &ch);
		x->gr->nodes[s].uop = o;
		x->covered[o] = 1;
		return 0;
	}
	/* a reduction: OUTPUT <- [CAST <-] REDUCE */
	int v = rd->array, cast = -1;
	if (x->state[v] == ST_REDOUT) {
		cast = v;
		v = pv->stmt[pv->stmt_of[cast]].read[0].array;
	}
	const tinyc_uop *ru = &x->g->nodes[v];
	const tinyc_ibval *iv = &x->ib->val[v];
	tinyc_dtype acc = iv->acc != TINYC_DTYPE_NONE ? iv->acc : ru->dtype;
	if (cast >= 0 && ru->dtype != acc)
		return failf(x, "the reduction %%%s is rounded to %s and cast again (double rounding)",
			     nid(x, v), tinyc_dtype_name(ru->dtype));
	const tinyc_pv_stmt *sr = &pv->stmt[pv->stmt_of[v]];
	const tinyc_pv_read *rr = &sr->read[0];
	isl_pw_multi_aff *A = NULL;
	if (rr->array >= 0)
		A = isl_pw_multi_aff_pullback_pw_multi_aff(isl_pw_multi_aff_copy(rr->acc),
							   isl_pw_multi_aff_copy(x->P[v]));
	int ch = build(x, rr->array, rr->cnode, A, rr->padded);
	isl_pw_multi_aff_free(A);
	if (ch < 0)
		return -1;
	/* the stored tensor has no stride along the reduced axes: zero them */
	if (x->redkind[v] != TINYC_EVT_COL_RED)
		lay.stride[0] = tinyc_evt_poly_const(0);
	if (x->redkind[v] != TINYC_EVT_ROW_RED)
		lay.stride[1] = tinyc_evt_poly_const(0);
	int s = tinyc_evt_reduction(x->ctx, x->gr, (tinyc_evt_kind)x->redkind[v], ru->redop, acc,
				    ou->name ? ou->name : nid(x, o), o, ou->dtype, &lay);
	if (s < 0)
		return x->oom = 1, failf(x, "out of memory");
	link(x, s, 1, &ch);
	x->gr->nodes[s].uop = v;
	x->covered[o] = x->covered[v] = 1;
	if (cast >= 0)
		x->covered[cast] = 1;
	return 0;
}

/* Build the store of producer v (PLAIN) to its own buffer: v's value at the element
 * computed at c, laid out like v's array.  0 or -1. */
static int build_producer(ex *x, int v)
{
	const tinyc_uop *u = &x->g->nodes[v];
	tinyc_evt_layout lay;
	if (out_layout(x, x->E[v], u, &lay) < 0)
		return -1;
	int ch = build(x, v, -1, x->E[v], 0);
	if (ch < 0)
		return -1;
	const char *name = x->pv->array_name[v];
	int s = tinyc_evt_store(x->ctx, x->gr, name ? name : nid(x, v), v, u->dtype, &lay);
	if (s < 0)
		return x->oom = 1, failf(x, "out of memory");
	link(x, s, 1, &ch);
	x->gr->nodes[s].uop = v;
	x->covered[v] = x->stored[v] = 1;
	return 0;
}

/* ------------------------------------------------------------ one entry ---- */

/* The C space [params] -> { C[l, m, n] } and its domain. */
static isl_set *c_domain(ex *x, const tinyc_dim ext[3])
{
	isl_space *sp = isl_space_params(isl_set_get_space(x->pv->context));
	sp = isl_space_add_dims(sp, isl_dim_set, 3);
	sp = isl_space_set_tuple_name(sp, isl_dim_set, "C");
	static const char *const names[3] = {"l", "m", "n"};
	for (int d = 0; d < 3; d++)
		sp = isl_space_set_dim_name(sp, isl_dim_set, (unsigned)d, names[d]);
	isl_set *dom = isl_set_universe(isl_space_copy(sp));
	isl_local_space *ls = isl_local_space_from_space(sp);
	for (int d = 0; d < 3; d++) {
		isl_aff *v = isl_aff_var_on_domain(isl_local_space_copy(ls), isl_dim_set, (unsigned)d);
		isl_aff *e = ext[d].sym >= 0
				     ? isl_aff_var_on_domain(isl_local_space_copy(ls), isl_dim_param,
							     (unsigned)ext[d].sym)
				     : isl_aff_val_on_domain(isl_local_space_copy(ls),
							     isl_val_int_from_si(x->ictx, (long)ext[d].val));
		isl_aff *z = isl_aff_zero_on_domain(isl_local_space_copy(ls));
		dom = isl_set_intersect(dom, isl_aff_ge_set(isl_aff_copy(v), z));
		dom = isl_set_intersect(dom, isl_aff_lt_set(v, e));
	}
	isl_local_space_free(ls);
	return isl_set_intersect_params(dom, isl_set_copy(x->pv->context));
}

/* C -> S_r: role axes from C's dims, k and role-less axes at 0.  Several axes of one role
 * share their C dim, outer axes first: axis a is floor(c / inner[a]) mod size[a], the
 * outermost without the mod (size[a] <= 0). */
static isl_pw_multi_aff *c_to_reduce(ex *x, const int *cdim, const int64_t *inner,
				     const int64_t *size, const tinyc_pv_stmt *sr)
{
	isl_space *cs = isl_set_get_space(x->cdom);
	isl_space *rs = isl_set_get_space(sr->domain);
	isl_space *ms = isl_space_map_from_domain_and_range(isl_space_copy(cs), rs);
	isl_multi_aff *ma = isl_multi_aff_zero(ms);
	isl_local_space *ls = isl_local_space_from_space(cs);
	for (int a = 0; a < x->c->naxes; a++) {
		isl_aff *af = cdim[a] >= 0 ? isl_aff_var_on_domain(isl_local_space_copy(ls), isl_dim_set,
								   (unsigned)cdim[a])
					   : isl_aff_zero_on_domain(isl_local_space_copy(ls));
		if (cdim[a] >= 0 && inner[a] > 1) {
			af = isl_aff_scale_down_ui(af, (unsigned)inner[a]);
			af = isl_aff_floor(af);
		}
		if (cdim[a] >= 0 && size[a] > 0)
			af = isl_aff_mod_val(af, isl_val_int_from_si(x->ictx, (long)size[a]));
		ma = isl_multi_aff_set_aff(ma, a, af);
	}
	isl_local_space_free(ls);
	return isl_pw_multi_aff_from_multi_aff(ma);
}

/* Fill entry e for contraction ci.  0, or -1 on an internal failure (OOM, isl). */
static int extract_one(ex *x, int ci)
{
	const tinyc_polyview *pv = x->pv;
	const tinyc_contraction *c = &pv->contr[ci];
	const tinyc_pv_stmt *sr = &pv->stmt[c->reduce_stmt];
	tinyc_evt_entry *e = x->e;
	x->c = c;
	x->r = sr->node;
	e->reduce = x->r;
	e->contraction = ci;
	const tinyc_ibval *rv = &x->ib->val[x->r];
	int cdim[TINYC_MAX_RANK + 1], count[3] = {0, 0, 0};
	tinyc_dim ext[3] = {{1, -1}, {1, -1}, {1, -1}};
	for (int a = 0; a < c->naxes; a++) {
		cdim[a] = c->role[a] == TINYC_ROLE_BATCH ? 0
			  : c->role[a] == TINYC_ROLE_M   ? 1
			  : c->role[a] == TINYC_ROLE_N   ? 2
							 : -1;
		if (cdim[a] >= 0) {
			count[cdim[a]]++;
			ext[cdim[a]] = rv->axes[a].size;
		}
	}
	/* several axes of one role (Linear on [B,T,D]: m = (b, t)) merge into one C dim when
	 * every extent is known: outer axes first */
	int64_t inner[TINYC_MAX_RANK + 1], size[TINYC_MAX_RANK + 1];
	for (int d = 0; d < 3; d++) {
		if (count[d] < 2)
			continue;
		int64_t prod = 1;
		for (int a = c->naxes - 1; a >= 0; a--) {
			if (cdim[a] != d)
				continue;
			int64_t v = rv->axes[a].size.sym < 0 ? rv->axes[a].size.val
				    : x->ib->bind ? tinyc_dim_value(&rv->axes[a].size, x->ib->bind) : -1;
			if (v < 1) {
				e->why_none = tinyc_asprintf("the contraction has %d %s axes and one of "
							     "them has an unbound size", count[d],
							     (const char *[]){"batch", "m", "n"}[d]);
				return e->why_none ? 0 : -1;
			}
			inner[a] = prod;
			prod *= v;
		}
		ext[d] = (tinyc_dim){prod, -1};
	}
	int seen[3] = {0, 0, 0};
	for (int a = 0; a < c->naxes; a++) {
		int d = cdim[a];
		if (d < 0 || count[d] < 2) {
			inner[a] = 1, size[a] = 0;
			continue;
		}
		/* the outermost axis of the role needs no mod */
		int64_t v = rv->axes[a].size.sym < 0 ? rv->axes[a].size.val
			    : tinyc_dim_value(&rv->axes[a].size, x->ib->bind);
		size[a] = seen[d]++ ? v : 0;
	}
	memcpy(x->ext, ext, sizeof(ext));
	x->cdom = c_domain(x, ext);
	isl_pw_multi_aff *c2r = c_to_reduce(x, cdim, inner, size, sr);
	x->Wr = isl_pw_multi_aff_pullback_pw_multi_aff(isl_pw_multi_aff_copy(sr->write), c2r);
	x->Wr = isl_pw_multi_aff_intersect_domain(x->Wr, isl_set_copy(x->cdom));
	if (!x->cdom || !x->Wr)
		return tinyc_isl_report(x->ctx, x->ictx, NULL, (tinyc_loc){0, 0},
					"setting up the epilogue's coordinates");
	if (count[0] > 1 || count[1] > 1 || count[2] > 1) {
		/* merged axes must be one stride apart in the accumulator's own array too */
		tinyc_evt_layout lay;
		if (out_layout(x, x->Wr, &x->g->nodes[x->r], &lay) < 0) {
			free(x->fail), x->fail = NULL;
			e->why_none = tinyc_asprintf("the contraction has %d batch, %d m and %d n axes "
						     "that do not merge in its result's layout",
						     count[0], count[1], count[2]);
			return e->why_none ? 0 : -1;
		}
	}
	x->gr = tinyc_evt_alloc(x->ctx, c->acc);
	if (!x->gr || tinyc_evt_set_symbols(x->ctx, x->gr, x->g->nsym,
					    (const char *const *)x->g->syms) < 0)
		return -1;
	x->gr->batched = count[0] > 0;
	x->gr->reduce_uop = x->r;
	x->state[x->r] = ST_ACC;
	x->E[x->r] = isl_pw_multi_aff_copy(x->Wr);
	for (int s = c->reduce_stmt + 1; s < pv->nstmt; s++) {
		int u = pv->stmt[s].node;
		if (x->live[u])
			forward(x, u);
		if (x->oom)
			return tinyc_error(x->ctx, "OutOfMemory", "epilogue extraction");
	}
	/* outputs and the stored producers, in graph order */
	int built = 0;
	for (int o = x->r + 1; o < x->g->n; o++) {
		if (x->prod[o] && x->live[o] && x->state[o] == ST_PLAIN) {
			int n0 = x->gr->n;
			free(x->fail), x->fail = NULL;
			if (build_producer(x, o) < 0) {
				if (x->oom)
					return tinyc_error(x->ctx, "OutOfMemory", "epilogue extraction");
				rollback(x, n0);
				add_note(x, o, x->fail);
				continue;
			}
			built++;
			continue;
		}
		if (x->g->nodes[o].op != TINYC_OP_OUTPUT || x->state[o] == ST_NONE)
			continue;
		if (x->state[o] == ST_BAD) {
			if (!x->e->nnote)
				add_note(x, o, "depends on a value that cannot run in the epilogue");
			else {
				int found = 0;
				for (int k = 0; k < e->nnote; k++)
					found |= e->note[k].uop == o;
				if (!found)
					add_note(x, o, "depends on a value left to a separate kernel");
			}
			continue;
		}
		int n0 = x->gr->n;
		free(x->fail), x->fail = NULL;
		if (build_output(x, o) < 0) {
			if (x->oom)
				return tinyc_error(x->ctx, "OutOfMemory", "epilogue extraction");
			rollback(x, n0);
			add_note(x, o, x->fail);
			x->state[o] = ST_BAD;
			continue;
		}
		built++;
	}
	/* a consumer left to another kernel reads the accumulator from its buffer */
	int outside = 0;
	for (int u = x->r + 1; u < x->g->n && !outside; u++) {
		if (!x->live[u] || x->covered[u] || x->pv->stmt_of[u] < 0)
			continue;
		const tinyc_pv_stmt *st = &pv->stmt[pv->stmt_of[u]];
		for (int j = 0; j < st->nread; j++)
			if (st->read[j].array >= 0 && !x->stored[st->read[j].array] &&
			    (x->covered[st->read[j].array] || st->read[j].array == x->r))
				outside = 1;
	}
	if (!built && !outside) {
		e->why_none = strdup(e->nnote ? "no consumer of the accumulator can run in an epilogue"
					      : "the contraction's result reaches no output");
		tinyc_evt_free(x->gr);
		x->gr = NULL;
		return e->why_none ? 0 : -1;
	}
	if (outside) {
		tinyc_evt_layout lay;
		free(x->fail), x->fail = NULL;
		if (out_layout(x, x->Wr, &x->g->nodes[x->r], &lay) < 0) {
			/* no epilogue (the contraction stays a separate kernel): an accumulator
			 * whose layout does not fold into (m, n, l) strides, e.g. a convolution's
			 * output with its image axis among the m axes */
			char msg[200];
			snprintf(msg, sizeof(msg), "the accumulator's layout: %.150s", x->fail ? x->fail : "?");
			e->why_none = strdup(msg);
			tinyc_evt_free(x->gr);
			x->gr = NULL;
			return e->why_none ? 0 : tinyc_error(x->ctx, "OutOfMemory", "epilogue extraction");
		}
		int a = build(x, x->r, -1, x->Wr, 0);
		int s = a < 0 ? -1
			      : tinyc_evt_store(x->ctx, x->gr, pv->array_name[x->r], x->r,
						x->g->nodes[x->r].dtype, &lay);
		if (s < 0)
			return tinyc_error(x->ctx, "EvtInternal", "storing the accumulator");
		link(x, s, 1, &a);
		x->gr->nodes[s].uop = x->r;
		tinyc_buf_printf(&x->gr->log, "  extract: node %d stores the accumulator to %s for "
				 "the consumers left to separate kernels\n", s, pv->array_name[x->r]);
	}
	x->covered[x->r] = 1;
	int nreg = 0;
	for (int i = 0; i < x->g->n; i++)
		nreg += x->covered[i];
	e->region = malloc(sizeof(int) * (size_t)(nreg ? nreg : 1));
	if (!e->region)
		return tinyc_error(x->ctx, "OutOfMemory", "epilogue extraction");
	for (int i = 0; i < x->g->n; i++)
		if (x->covered[i])
			e->region[e->nregion++] = i;
	if (tinyc_evt_run_passes(x->ctx, x->gr) < 0)
		return tinyc_error(x->ctx, "EvtInternal", "the extracted epilogue graph of %%%s is "
				   "invalid", nid(x, x->r));
	e->g = x->gr;
	x->gr = NULL;
	return 0;
}

/* Free the per-entry state of x. */
static void ex_reset(ex *x)
{
	for (int i = 0; i < x->g->n; i++) {
		isl_pw_multi_aff_free(x->P[i]);
		isl_pw_multi_aff_free(x->E[i]);
		x->P[i] = x->E[i] = NULL;
		x->state[i] = ST_NONE;
		x->redkind[i] = 0;
		x->covered[i] = x->stored[i] = 0;
	}
	for (int i = 0; i < x->nmemo; i++)
		isl_pw_multi_aff_free(x->memo[i].A);
	x->nmemo = 0;
	isl_set_free(x->cdom);
	isl_pw_multi_aff_free(x->Wr);
	x->cdom = NULL;
	x->Wr = NULL;
	tinyc_evt_free(x->gr);
	x->gr = NULL;
	free(x->fail);
	x->fail = NULL;
	x->have_src = 0;
	x->oom = 0;
}

tinyc_evt_set *tinyc_evt_extract(tinyc_ctx *ctx, const tinyc_polyview *pv)
{
	const tinyc_graph *g = pv->ib->g;
	tinyc_evt_set *set = tinyc_calloc(ctx, 1, sizeof(*set));
	if (!set)
		return NULL;
	set->uop = g;
	if (!pv->ncontr)
		return set;
	ex x;
	memset(&x, 0, sizeof(x));
	x.ctx = ctx;
	x.pv = pv;
	x.g = g;
	x.ib = pv->ib;
	x.ictx = pv->ictx;
	x.set = set;
	size_t n = (size_t)g->n + 1;
	x.state = tinyc_calloc(ctx, n, sizeof(int));
	x.redkind = tinyc_calloc(ctx, n, sizeof(int));
	x.P = tinyc_calloc(ctx, n, sizeof(*x.P));
	x.E = tinyc_calloc(ctx, n, sizeof(*x.E));
	x.covered = tinyc_calloc(ctx, n, 1);
	x.live = tinyc_calloc(ctx, n, 1);
	x.prod = tinyc_calloc(ctx, n, 1);
	x.stored = tinyc_calloc(ctx, n, 1);
	set->e = tinyc_calloc(ctx, (size_t)pv->ncontr, sizeof(*set->e));
	int rc = 0;
	if (!x.state || !x.redkind || !x.P || !x.E || !x.covered || !x.live || !x.prod ||
	    !x.stored || !set->e)
		rc = -1;
	else
		tinyc_contraction_producers(g, pv->ib->bind, x.prod);
	/* the ends of epilogue chains that several consumers read are stored the same way */
	unsigned char *ends = rc == 0 ? tinyc_calloc(ctx, n, 1) : NULL;
	if (rc == 0 && (!ends || tinyc_contraction_store_ends(g, x.prod, ends) < 0))
		rc = -1;
	for (int i = 0; rc == 0 && i < g->n; i++)
		x.prod[i] |= ends[i];
	free(ends);
	for (int i = g->n - 1; rc == 0 && i >= 0; i--) {
		if (g->nodes[i].op == TINYC_OP_OUTPUT)
			x.live[i] = 1;
		if (x.live[i])
			for (int k = 0; k < g->nodes[i].nsrc; k++)
				x.live[g->nodes[i].src[k]] = 1;
	}
	for (int ci = 0; rc == 0 && ci < pv->ncontr; ci++) {
		x.e = &set->e[set->n++];
		x.e->reduce = pv->stmt[pv->contr[ci].reduce_stmt].node;
		x.e->contraction = ci;
		rc = extract_one(&x, ci);
		ex_reset(&x);
	}
	free(x.state), free(x.redkind), free(x.P), free(x.E), free(x.covered), free(x.live);
	free(x.prod), free(x.stored), free(x.memo);
	if (rc < 0) {
		tinyc_evt_set_free(set);
		return NULL;
	}
	return set;
}

/* ------------------------------------------------------------------ verify ---- */

/* Verify every epilogue graph of the set, dtypes included. */
int tinyc_evt_set_verify(tinyc_ctx *ctx, const tinyc_evt_set *s)
{
	for (int i = 0; i < s->n; i++)
		if (s->e[i].g && tinyc_evt_verify(ctx, s->e[i].g, 1) < 0)
			return -1;
	return 0;
}
