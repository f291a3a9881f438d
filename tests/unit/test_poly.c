/* Unit tests of the isl helpers (poly/isl_util.c) and the Poly-View (poly/polyview.c).
 *
 * isl runs with ISL_ON_ERROR_ABORT here (any isl misuse aborts the test), except in the
 * tests of the error paths.  Expected isl objects are written by hand as isl text and
 * compared with isl's own equality, not with the code under test; leaked isl objects are
 * caught by LeakSanitizer in the sanitizer build (isl_ctx_free leaves them allocated).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <isl/constraint.h>
#include <isl/local_space.h>
#include <isl/map.h>
#include <isl/space.h>

#include "poly/poly.h"

#include "test_graphs.h"

static const tinyc_isl_opts abort_opts = {1, 0};

typedef struct fixture {
	tinyc_ctx *ctx;
	tinyc_source *src;
	tinyc_graph *g;
	tinyc_bindings *b;
	tinyc_indexbook *ib;
	tinyc_polyview *pv;
} fixture;

/* Parse, verify, build the IndexBook and (with opts) the Poly-View. */
static void load(fixture *f, const char *text, const char *bind, const tinyc_isl_opts *opts)
{
	memset(f, 0, sizeof(*f));
	f->ctx = tinyc_ctx_alloc();
	f->src = tinyc_source_from_string("t.uop", text, strlen(text));
	f->g = tinyc_parse(f->ctx, f->src);
	cr_assert_not_null(f->g);
	f->b = tinyc_bindings_alloc(f->ctx, f->g);
	if (bind)
		cr_assert_eq(tinyc_bindings_parse(f->ctx, f->g, bind, f->b), 0);
	cr_assert_eq(tinyc_verify(f->ctx, f->g, f->b), 0);
	f->ib = tinyc_indexbook_build(f->ctx, f->g, f->b);
	cr_assert_not_null(f->ib);
	if (opts)
		f->pv = tinyc_polyview_build(f->ctx, f->ib, opts);
}

static void unload(fixture *f)
{
	tinyc_polyview_free(f->pv);
	tinyc_indexbook_free(f->ib);
	tinyc_bindings_free(f->b);
	tinyc_graph_free(f->g);
	tinyc_source_free(f->src);
	tinyc_ctx_free(f->ctx);
}

static int has_diag(tinyc_ctx *ctx, const char *kind)
{
	for (int i = 0; i < tinyc_ctx_diag_count(ctx); i++)
		if (!strcmp(tinyc_ctx_diag(ctx, i)->kind, kind))
			return 1;
	return 0;
}

/* The statement of node id `id`. */
static const tinyc_pv_stmt *stmt(const fixture *f, const char *id)
{
	int n = tinyc_graph_find(f->g, id);
	cr_assert(n >= 0 && f->pv->stmt_of[n] >= 0, "no statement %%%s", id);
	return &f->pv->stmt[f->pv->stmt_of[n]];
}

/* Is the access, restricted to the statement's domain, the relation written in isl text? */
static int access_is(const tinyc_pv_stmt *s, isl_pw_multi_aff *acc, const char *want)
{
	isl_ctx *ictx = isl_set_get_ctx(s->domain);
	isl_map *a = isl_map_intersect_domain(isl_map_from_pw_multi_aff(isl_pw_multi_aff_copy(acc)),
					      isl_set_copy(s->domain));
	isl_map *b = isl_map_intersect_domain(isl_map_read_from_str(ictx, want),
					      isl_set_copy(s->domain));
	isl_bool eq = isl_map_is_equal(a, b);
	isl_map_free(a);
	isl_map_free(b);
	return eq == isl_bool_true;
}

/* ---- isl helpers ---------------------------------------------------------------------- */

Test(isl_util, aff_from_ix_matches_isl_text)
{
	isl_ctx *ictx = tinyc_isl_ctx_alloc(NULL, &abort_opts);
	isl_space *sp = isl_space_set_alloc(ictx, 1, 2);
	sp = isl_space_set_dim_name(sp, isl_dim_param, 0, "M");
	sp = isl_space_set_tuple_name(sp, isl_dim_set, "S");
	isl_local_space *ls = isl_local_space_from_space(sp);
	/* floor((3*i + j)/4) + (j mod 5) - M */
	tinyc_ix i = {TINYC_IX_AXIS, 0, 0, NULL, NULL}, j = {TINYC_IX_AXIS, 0, 1, NULL, NULL};
	tinyc_ix m = {TINYC_IX_SYM, 0, 0, NULL, NULL};
	tinyc_ix i3 = {TINYC_IX_MUL, 3, 0, &i, NULL};
	tinyc_ix sum = {TINYC_IX_ADD, 0, 0, &i3, &j};
	tinyc_ix fd = {TINYC_IX_FDIV, 4, 0, &sum, NULL};
	tinyc_ix md = {TINYC_IX_MOD, 5, 0, &j, NULL};
	tinyc_ix negm = {TINYC_IX_MUL, -1, 0, &m, NULL};
	tinyc_ix t1 = {TINYC_IX_ADD, 0, 0, &fd, &md};
	tinyc_ix e = {TINYC_IX_ADD, 0, 0, &t1, &negm};
	isl_aff *got = tinyc_isl_aff_from_ix(ls, &e);
	isl_map *a = isl_map_from_aff(got);
	isl_map *b = isl_map_read_from_str(ictx,
		"[M] -> { S[i, j] -> [floor((3i + j)/4) + (j mod 5) - M] }");
	cr_assert_eq(isl_map_is_equal(a, b), isl_bool_true);
	isl_map_free(a);
	isl_map_free(b);
	isl_local_space_free(ls);
	isl_ctx_free(ictx);
}

Test(isl_util, simplify_removes_redundant_constraints)
{
	isl_ctx *ictx = tinyc_isl_ctx_alloc(NULL, &abort_opts);
	isl_set *ctxset = isl_set_read_from_str(ictx, "[N] -> { : N > 0 }");
	/* coalesce alone keeps i < 2N (notes/isl.md pitfall 5); the helper must drop it */
	isl_set *s = isl_set_read_from_str(ictx, "[N] -> { S[i] : 0 <= i < N and i < 2N }");
	s = tinyc_isl_set_simplify(s, ctxset);
	isl_set *want = isl_set_read_from_str(ictx, "[N] -> { S[i] : 0 <= i < N }");
	cr_assert_eq(isl_set_is_equal(s, want), isl_bool_true);
	isl_size n = isl_set_n_basic_set(s);
	cr_assert_eq(n, 1);
	isl_basic_set_list *l = isl_set_get_basic_set_list(s);
	isl_basic_set *bs = isl_basic_set_list_get_at(l, 0);
	cr_assert_eq(isl_basic_set_n_constraint(bs), 2, "0 <= i and i < N only");
	isl_basic_set_free(bs);
	isl_basic_set_list_free(l);
	isl_set_free(want);
	isl_set_free(s);
	isl_set_free(ctxset);
	isl_ctx_free(ictx);
}

Test(isl_util, context_of_bound_and_free_symbols)
{
	fixture f;
	load(&f, "%0 = BUFFER(slot=0, name=\"X\") : float[M,N]\n"
		 "%1 = OUTPUT(%0, name=\"Y\") : float[M,N]\n", "M=4", NULL);
	isl_ctx *ictx = tinyc_isl_ctx_alloc(f.ctx, &abort_opts);
	isl_set *c = tinyc_isl_context(ictx, f.g, f.b);
	isl_set *want = isl_set_read_from_str(ictx, "[M, N] -> { : M = 4 and N >= 1 }");
	cr_assert_eq(isl_set_is_equal(c, want), isl_bool_true);
	isl_set_free(c);
	isl_set_free(want);
	isl_ctx_free(ictx);
	unload(&f);
}

Test(isl_util, isl_errors_become_diagnostics)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	isl_ctx *ictx = tinyc_isl_ctx_alloc(ctx, NULL);	/* CONTINUE */
	isl_set *a = isl_set_read_from_str(ictx, "{ A[i] : 0 <= i < 4 }");
	isl_set *b = isl_set_read_from_str(ictx, "{ B[i, j] : 0 <= i < 4 }");
	isl_set *c = isl_set_intersect(a, b);	/* spaces do not match */
	cr_assert_null(c);
	cr_assert_eq(tinyc_isl_report(ctx, ictx, NULL, (tinyc_loc){0, 0}, "testing"), -1);
	cr_assert(has_diag(ctx, "IslError"));
	cr_assert_eq(isl_ctx_last_error(ictx), isl_error_none, "the error is reset");
	isl_ctx_free(ictx);
	tinyc_ctx_free(ctx);
}

/* ---- Poly-View ---------------------------------------------------------------------------- */

static const char *matmul_text = TEST_MATMUL_BIAS_RELU;

Test(polyview, matmul_accesses_and_roles)
{
	fixture f;
	load(&f, matmul_text, NULL, &abort_opts);
	cr_assert_not_null(f.pv);
	cr_assert_eq(tinyc_polyview_verify(f.ctx, f.pv), 0);
	const tinyc_pv_stmt *mul = stmt(&f, "6"), *red = stmt(&f, "8"), *add = stmt(&f, "11");
	cr_assert_eq(mul->read[0].array, 0);
	cr_assert_eq(mul->read[1].array, 1);
	cr_assert(access_is(mul, mul->read[0].acc, "[M, K, N] -> { S6[m, n, k] -> X[m, k] }"));
	cr_assert(access_is(mul, mul->read[1].acc, "[M, K, N] -> { S6[m, n, k] -> W[k, n] }"));
	cr_assert(access_is(red, red->write, "[M, K, N] -> { S8[m, n, k] -> T8[m, n, 0] }"));
	cr_assert(access_is(add, add->read[0].acc, "[M, K, N] -> { S11[m, n] -> T8[m, n, 0] }"));
	cr_assert(access_is(add, add->read[1].acc, "[M, K, N] -> { S11[m, n] -> T10[n] }"));
	/* one contraction, at the REDUCE: m from X dim 0, n from W dim 1, k both */
	cr_assert_eq(f.pv->ncontr, 1);
	cr_assert_geq(red->contraction, 0);
	const tinyc_contraction *c = &f.pv->contr[red->contraction];
	cr_assert_eq(c->lhs, 0);
	cr_assert_eq(c->rhs, 1);
	cr_assert_eq(c->acc, TINYC_FLOAT);
	tinyc_role want[3] = {TINYC_ROLE_M, TINYC_ROLE_N, TINYC_ROLE_K};
	int lhs_dim[3] = {0, -1, 1}, rhs_dim[3] = {-1, 1, 0};
	for (int a = 0; a < 3; a++) {
		cr_assert_eq(c->role[a], want[a], "axis %d", a);
		cr_assert_eq(c->lhs_dim[a], lhs_dim[a], "axis %d", a);
		cr_assert_eq(c->rhs_dim[a], rhs_dim[a], "axis %d", a);
	}
	cr_assert_eq(c->nm + c->nn + c->nk + c->nbatch, 3);
	cr_assert_eq(mul->contraction, -1);
	unload(&f);
}

Test(polyview, transposed_and_batched_operands)
{
	/* X^T @ W with X:[K,M]: m is X's dim 1; batch dims in both */
	fixture f;
	load(&f, "%0 = BUFFER(slot=0, name=\"X\") : float[B,K,M]\n"
		 "%1 = BUFFER(slot=1, name=\"W\") : float[B,K,N]\n"
		 "%2 = PERMUTE(%0, perm=[0,2,1]) : float[B,M,K]\n"
		 "%3 = RESHAPE(%2, shape=[B,M,1,K]) : float[B,M,1,K]\n"
		 "%4 = PERMUTE(%1, perm=[0,2,1]) : float[B,N,K]\n"
		 "%5 = RESHAPE(%4, shape=[B,1,N,K]) : float[B,1,N,K]\n"
		 "%6 = MUL(%3, %5) : float[B,M,N,K]\n"
		 "%7 = REDUCE(%6, op=ADD, axes=[3], keepdim=false) : float[B,M,N]\n"
		 "%8 = OUTPUT(%7, name=\"Y\") : float[B,M,N]\n", NULL, &abort_opts);
	cr_assert_not_null(f.pv);
	cr_assert_eq(f.pv->ncontr, 1);
	const tinyc_contraction *c = &f.pv->contr[0];
	tinyc_role want[4] = {TINYC_ROLE_BATCH, TINYC_ROLE_M, TINYC_ROLE_N, TINYC_ROLE_K};
	int lhs_dim[4] = {0, 2, -1, 1}, rhs_dim[4] = {0, -1, 2, 1};
	for (int a = 0; a < 4; a++) {
		cr_assert_eq(c->role[a], want[a], "axis %d", a);
		cr_assert_eq(c->lhs_dim[a], lhs_dim[a], "axis %d", a);
		cr_assert_eq(c->rhs_dim[a], rhs_dim[a], "axis %d", a);
	}
	cr_assert_eq(c->nbatch, 1);
	unload(&f);
}

Test(polyview, not_contractions)
{
	const char *texts[] = {
		/* MAX instead of ADD */
		"%0 = BUFFER(slot=0, name=\"A\") : float[M,K]\n"
		"%1 = BUFFER(slot=1, name=\"B\") : float[K]\n"
		"%2 = MUL(%0, %1) : float[M,K]\n"
		"%3 = REDUCE(%2, op=MAX, axes=[1]) : float[M,1]\n"
		"%4 = OUTPUT(%3, name=\"Y\") : float[M,1]\n",
		/* the reduced axis is read by one operand only: sum_k A[m,k] * b[m] */
		"%0 = BUFFER(slot=0, name=\"A\") : float[M,K]\n"
		"%1 = BUFFER(slot=1, name=\"b\") : float[M,1]\n"
		"%2 = MUL(%0, %1) : float[M,K]\n"
		"%3 = REDUCE(%2, op=ADD, axes=[1]) : float[M,1]\n"
		"%4 = OUTPUT(%3, name=\"Y\") : float[M,1]\n",
		/* a product with a constant */
		"%0 = BUFFER(slot=0, name=\"A\") : float[M,K]\n"
		"%1 = CONST(2.0) : float[]\n"
		"%2 = MUL(%0, %1) : float[M,K]\n"
		"%3 = REDUCE(%2, op=ADD, axes=[1]) : float[M,1]\n"
		"%4 = OUTPUT(%3, name=\"Y\") : float[M,1]\n",
		/* something between MUL and REDUCE that is not a cast */
		"%0 = BUFFER(slot=0, name=\"A\") : float[M,K]\n"
		"%1 = BUFFER(slot=1, name=\"B\") : float[K]\n"
		"%2 = MUL(%0, %1) : float[M,K]\n"
		"%3 = EXP2(%2) : float[M,K]\n"
		"%4 = REDUCE(%3, op=ADD, axes=[1]) : float[M,1]\n"
		"%5 = OUTPUT(%4, name=\"Y\") : float[M,1]\n",
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		fixture f;
		load(&f, texts[i], NULL, &abort_opts);
		cr_assert_not_null(f.pv);
		cr_assert_eq(f.pv->ncontr, 0, "graph %zu is not a contraction", i);
		unload(&f);
	}
}

Test(polyview, reshape_chain_and_padding)
{
	fixture f;
	load(&f, "%0 = BUFFER(slot=0, name=\"X\") : float[M,12]\n"
		 "%1 = RESHAPE(%0, shape=[M,3,4]) : float[M,3,4]\n"
		 "%2 = PERMUTE(%1, perm=[0,2,1]) : float[M,4,3]\n"
		 "%3 = RESHAPE(%2, shape=[M,2,6]) : float[M,2,6]\n"
		 "%4 = NEG(%3) : float[M,2,6]\n"
		 "%5 = OUTPUT(%4, name=\"Y\") : float[M,2,6]\n"
		 "%6 = PAD(%0, pads=[[0,0],[3,1]]) : float[M,16]\n"
		 "%7 = FLIP(%6, axes=[1]) : float[M,16]\n"
		 "%8 = OUTPUT(%7, name=\"Z\") : float[M,16]\n", NULL, &abort_opts);
	cr_assert_not_null(f.pv);
	cr_assert_eq(tinyc_polyview_verify(f.ctx, f.pv), 0);
	/* Y[m,p,q] = X[m, 4*(L mod 3) + floor(L/3)] with L = 6p + q (hand-derived) */
	const tinyc_pv_stmt *neg = stmt(&f, "4");
	cr_assert(access_is(neg, neg->read[0].acc,
			    "[M] -> { S4[m, p, q] -> X[m, 4*((6p + q) mod 3) + floor((6p + q)/3)] }"));
	cr_assert_eq(neg->read[0].padded, 0);
	/* Z[m, j] = X[m, 15 - j - 3] where 0 <= 12 - j < 12, else 0 */
	const tinyc_pv_stmt *z = stmt(&f, "8");
	cr_assert_eq(z->read[0].padded, 1);
	cr_assert(access_is(z, z->read[0].acc, "[M] -> { S8[m, j] -> X[m, 12 - j] : 1 <= j <= 12 }"));
	unload(&f);
}

Test(polyview, deterministic_dump)
{
	fixture f1, f2;
	load(&f1, matmul_text, NULL, &abort_opts);
	load(&f2, matmul_text, NULL, &abort_opts);
	tinyc_buf a = {0}, b = {0};
	tinyc_polyview_print(f1.pv, &a);
	tinyc_polyview_print(f2.pv, &b);
	cr_assert_str_eq(a.data, b.data);
	cr_assert_not_null(strstr(a.data, "contraction: matmul lhs=%0 rhs=%1 m=[m@%0.0] n=[n@%1.1] "
					  "k=[k@%0.1,%1.0] batch=[] acc=float\n"));
	tinyc_buf_free(&a);
	tinyc_buf_free(&b);
	unload(&f1);
	unload(&f2);
}

Test(polyview, budget_exceeded_is_a_diagnostic)
{
	tinyc_isl_opts tiny = {0, 50};	/* CONTINUE, 50 operations */
	fixture f;
	load(&f, matmul_text, NULL, &tiny);
	cr_assert_null(f.pv, "a budget of 50 operations cannot build the matmul");
	cr_assert(has_diag(f.ctx, "IslBudgetExceeded"));
	const tinyc_diag *d = tinyc_ctx_diag(f.ctx, 0);
	cr_assert_gt(d->loc.line, 0, "reported at a node");
	unload(&f);
	/* and the default budget is enough */
	tinyc_isl_opts dflt = {1, 0};
	load(&f, matmul_text, NULL, &dflt);
	cr_assert_not_null(f.pv);
	unload(&f);
}

Test(polyview, verifier_catches_out_of_bounds_accesses)
{
	fixture f;
	load(&f, matmul_text, NULL, &abort_opts);
	cr_assert_not_null(f.pv);
	tinyc_pv_stmt *mul = &f.pv->stmt[f.pv->stmt_of[6]];
	isl_pw_multi_aff *good = mul->read[0].acc;
	/* X[m, k + 1] reads past K */
	mul->read[0].acc = isl_pw_multi_aff_read_from_str(f.pv->ictx,
		"[M, K, N] -> { S6[m, n, k] -> X[m, k + 1] }");
	cr_assert_eq(tinyc_polyview_verify(f.ctx, f.pv), -1);
	cr_assert(has_diag(f.ctx, "AccessOutOfBounds"));
	isl_pw_multi_aff_free(mul->read[0].acc);
	mul->read[0].acc = good;
	tinyc_ctx_clear_diags(f.ctx);
	cr_assert_eq(tinyc_polyview_verify(f.ctx, f.pv), 0);
	unload(&f);
}

Test(polyview, unions_for_dependence_analysis)
{
	fixture f;
	load(&f, matmul_text, NULL, &abort_opts);
	isl_union_set *d = tinyc_polyview_domains(f.pv);
	isl_union_map *r = tinyc_polyview_reads(f.pv), *w = tinyc_polyview_writes(f.pv);
	cr_assert_eq(isl_union_set_n_set(d), f.pv->nstmt);
	/* every write stays inside its statement's domain */
	isl_union_set *wd = isl_union_map_domain(isl_union_map_copy(w));
	cr_assert_eq(isl_union_set_is_subset(wd, d), isl_bool_true);
	isl_union_map *want = isl_union_map_read_from_str(f.pv->ictx,
		"[M, K, N] -> { S6[m, n, k] -> X[m, k] : 0 <= m < M and 0 <= n < N and 0 <= k < K;"
		" S6[m, n, k] -> W[k, n] : 0 <= m < M and 0 <= n < N and 0 <= k < K }");
	cr_assert_eq(isl_union_map_is_subset(want, r), isl_bool_true);
	isl_union_map_free(want);
	isl_union_set_free(wd);
	isl_union_set_free(d);
	isl_union_map_free(r);
	isl_union_map_free(w);
	unload(&f);
}

/* ---- composed accesses against the reference evaluator ------------------------------------ */

#include "ir/tensor.h"

typedef struct pvinterp {
	const fixture *f;
	tinyc_tensor **in;
} pvinterp;

/* The value of node n at idx, from the Poly-View's composed reads (r->idx) alone: a buffer
 * element, or a statement (OUTPUT, NEG, a stored movement copy) applied to its reads. */
static double pv_value(const pvinterp *it, int n, const int64_t *idx)
{
	const tinyc_uop *u = &it->f->g->nodes[n];
	if (u->op == TINYC_OP_BUFFER) {
		int64_t flat = 0;
		for (int d = 0; d < u->rank; d++)
			flat = flat * u->shape[d].val + idx[d];
		return tinyc_tensor_get(it->in[u->slot], flat);
	}
	int si = it->f->pv->stmt_of[n];
	cr_assert_geq(si, 0, "%%%s is neither a buffer nor a statement", u->id);
	const tinyc_pv_stmt *s = &it->f->pv->stmt[si];
	cr_assert_eq(s->nread, 1);
	const tinyc_pv_read *r = &s->read[0];
	for (int gi = 0; gi < r->nguard; gi++) {
		int64_t e;
		cr_assert_eq(tinyc_ix_eval(r->guard[gi].e, idx, NULL, &e), 0);
		if (e < 0)
			return 0.0;
	}
	int64_t src[TINYC_MAX_RANK];
	for (int d = 0; d < r->rank; d++)
		cr_assert_eq(tinyc_ix_eval(r->idx[d], idx, NULL, &src[d]), 0);
	/* the isl access agrees with the composed index at this point */
	char p[512], q[512];
	int o = snprintf(p, sizeof(p), "{ %s[", s->name);
	for (int d = 0; d < u->rank; d++)
		o += snprintf(p + o, sizeof(p) - (size_t)o, "%s%lld", d ? "," : "", (long long)idx[d]);
	snprintf(p + o, sizeof(p) - (size_t)o, "] }");
	o = snprintf(q, sizeof(q), "{ %s[", it->f->pv->array_name[r->array]);
	for (int d = 0; d < r->rank; d++)
		o += snprintf(q + o, sizeof(q) - (size_t)o, "%s%lld", d ? "," : "", (long long)src[d]);
	snprintf(q + o, sizeof(q) - (size_t)o, "] }");
	isl_ctx *ictx = it->f->pv->ictx;
	isl_set *pt = isl_set_read_from_str(ictx, p);
	isl_set *img = isl_set_apply(pt, isl_map_from_pw_multi_aff(isl_pw_multi_aff_copy(r->acc)));
	isl_set *want = isl_set_read_from_str(ictx, q);
	cr_assert_eq(isl_set_is_equal(img, want), isl_bool_true, "isl access of %s at %s", s->name, p);
	isl_set_free(img);
	isl_set_free(want);
	double x = pv_value(it, r->array, src);
	return u->op == TINYC_OP_NEG ? -x : x;
}

Test(polyview, six_d_chain_with_stored_views_matches_evaluator)
{
	/* every reshape regroups all six dims (no aligned runs): the composed views grow and
	 * some movement values are stored as statements of their own */
	const char *text =
		"%0 = BUFFER(slot=0, name=\"X\") : float[2,3,4,5,2,3]\n"
		"%1 = PERMUTE(%0, perm=[2,3,5,0,4,1]) : float[4,5,3,2,2,3]\n"
		"%2 = RESHAPE(%1, shape=[6,10,2,2,3,1]) : float[6,10,2,2,3,1]\n"
		"%3 = PERMUTE(%2, perm=[2,4,1,5,0,3]) : float[2,3,10,1,6,2]\n"
		"%4 = RESHAPE(%3, shape=[9,10,4,2,1,1]) : float[9,10,4,2,1,1]\n"
		"%5 = PERMUTE(%4, perm=[2,3,1,4,5,0]) : float[4,2,10,1,1,9]\n"
		"%6 = RESHAPE(%5, shape=[6,6,5,2,2,1]) : float[6,6,5,2,2,1]\n"
		"%7 = PERMUTE(%6, perm=[5,3,0,2,1,4]) : float[1,2,6,5,6,2]\n"
		"%8 = RESHAPE(%7, shape=[5,4,3,2,3,2]) : float[5,4,3,2,3,2]\n"
		"%9 = NEG(%8) : float[5,4,3,2,3,2]\n"
		"%10 = OUTPUT(%9, name=\"Y\") : float[5,4,3,2,3,2]\n";
	fixture f;
	load(&f, text, NULL, &abort_opts);
	cr_assert_not_null(f.pv);
	cr_assert_eq(tinyc_polyview_verify(f.ctx, f.pv), 0);
	int stored = 0;
	for (int i = 0; i < f.pv->nstmt; i++)
		stored += tinyc_op_info(f.g->nodes[f.pv->stmt[i].node].op)->kind == TINYC_KIND_MOVEMENT;
	cr_assert_gt(stored, 0, "the chain is too entangled to fold into one access");
	int64_t shape[6] = {2, 3, 4, 5, 2, 3};
	tinyc_tensor *x = tinyc_tensor_alloc(f.ctx, TINYC_FLOAT, 6, shape);
	for (int64_t e = 0; e < 720; e++)
		tinyc_tensor_set(x, e, (double)(e + 1));
	tinyc_tensor *in[1] = {x};
	tinyc_io io = {1, in, 0, NULL};
	cr_assert_eq(tinyc_eval(f.ctx, f.g, f.b, &io), 0);
	pvinterp it = {&f, in};
	int64_t idx[6] = {0};
	const tinyc_tensor *y = io.out[0];
	for (int64_t e = 0; e < 720; e += 7) {	/* a sample of the elements */
		int64_t rem = e;
		for (int d = 5; d >= 0; d--) {
			idx[d] = rem % y->shape[d];
			rem /= y->shape[d];
		}
		double want = tinyc_tensor_get(y, e), got = pv_value(&it, 10, idx);
		cr_assert_eq(want, got, "element %lld: evaluator %g, Poly-View %g", (long long)e,
			     want, got);
	}
	tinyc_io_clear_outputs(&io);
	tinyc_tensor_free(x);
	unload(&f);
}
