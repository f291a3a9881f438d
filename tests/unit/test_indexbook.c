/* Unit tests of the IndexBook (lower/indexbook.c).
 *
 * The maps are checked against an independent oracle: the reference evaluator (ir/eval.c)
 * runs each graph on inputs whose elements are distinct, and a small interpreter here walks
 * the IndexBook's AxisMaps from every output element back to the input element it must
 * equal (or to the pad value 0, or a sum for REDUCE).  The local checks are exercised on
 * graphs that are parsed but not verified, so the IndexBook's own diagnostics (not the UOp
 * verifier's) are the ones tested; the final validation is exercised on corrupted books.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/tensor.h"
#include "lower/lower.h"

/* A parsed graph with its context and source. */
typedef struct fixture {
	tinyc_ctx *ctx;
	tinyc_source *src;
	tinyc_graph *g;
	tinyc_bindings *b;
} fixture;

/* Parse text (and verify it when `verify`), binding "M=..,N=.." when bind is not NULL. */
static void load(fixture *f, const char *text, const char *bind, int verify)
{
	f->ctx = tinyc_ctx_alloc();
	f->src = tinyc_source_from_string("t.uop", text, strlen(text));
	f->g = tinyc_parse(f->ctx, f->src);
	cr_assert_not_null(f->g, "parse failed");
	f->b = tinyc_bindings_alloc(f->ctx, f->g);
	cr_assert_not_null(f->b);
	if (bind)
		cr_assert_eq(tinyc_bindings_parse(f->ctx, f->g, bind, f->b), 0);
	if (verify)
		cr_assert_eq(tinyc_verify(f->ctx, f->g, f->b), 0, "graph does not verify");
}

static void unload(fixture *f)
{
	tinyc_bindings_free(f->b);
	tinyc_graph_free(f->g);
	tinyc_source_free(f->src);
	tinyc_ctx_free(f->ctx);
}

/* Does the context hold an error of this kind at this line? */
static int has_diag(tinyc_ctx *ctx, const char *kind, int line)
{
	for (int i = 0; i < tinyc_ctx_diag_count(ctx); i++) {
		const tinyc_diag *d = tinyc_ctx_diag(ctx, i);
		if (d->kind && !strcmp(d->kind, kind) && (line < 0 || d->loc.line == line))
			return 1;
	}
	return 0;
}

/* ---- an interpreter of the IndexBook -------------------------------------------------- */

typedef struct interp {
	const tinyc_indexbook *ib;
	const tinyc_graph *g;
	int64_t *sym;			/* symbol values */
	tinyc_tensor **in;		/* inputs by slot */
} interp;

static int64_t dim_val(const interp *it, tinyc_dim d)
{
	return d.sym < 0 ? d.val : it->sym[d.sym];
}

/* Row-major flat index of idx in a tensor of node u's shape. */
static int64_t flat(const interp *it, const tinyc_uop *u, const int64_t *idx)
{
	int64_t f = 0;
	for (int d = 0; d < u->rank; d++)
		f = f * dim_val(it, u->shape[d]) + idx[d];
	return f;
}

static double value_at(const interp *it, int node, const int64_t *idx);

/* The value of operand k of value v at v's axis point ax. */
static double operand_at(const interp *it, const tinyc_ibval *v, int k, const int64_t *ax)
{
	const tinyc_axismap *m = &v->map[k];
	int64_t oi[TINYC_MAX_RANK], e;
	for (int gi = 0; gi < m->nguard; gi++) {
		cr_assert_eq(tinyc_ix_eval(m->guard[gi].e, ax, it->sym, &e), 0);
		if (m->guard[gi].eq ? e != 0 : e < 0)
			return m->fill;
	}
	for (int d = 0; d < m->rank; d++)
		cr_assert_eq(tinyc_ix_eval(m->idx[d], ax, it->sym, &oi[d]), 0);
	return value_at(it, m->src, oi);
}

/* Check that v's domain constraints hold at ax (the guards are implied by the bounds). */
static void check_domain(const interp *it, const tinyc_ibval *v, const int64_t *ax)
{
	for (int c = 0; c < v->ndom; c++) {
		int64_t e;
		cr_assert_eq(tinyc_ix_eval(v->domain[c].e, ax, it->sym, &e), 0);
		cr_assert(v->domain[c].eq ? e == 0 : e >= 0, "domain constraint %d of %%%s fails", c,
			  it->g->nodes[v->node].id);
	}
}

/* The value of node `node` at index idx, computed from the IndexBook alone. */
static double value_at(const interp *it, int node, const int64_t *idx)
{
	const tinyc_uop *u = &it->g->nodes[node];
	const tinyc_ibval *v = &it->ib->val[node];
	for (int d = 0; d < u->rank; d++)
		cr_assert(idx[d] >= 0 && idx[d] < dim_val(it, u->shape[d]),
			  "index %lld out of range at dim %d of %%%s", (long long)idx[d], d, u->id);
	if (u->op == TINYC_OP_BUFFER)
		return tinyc_tensor_get(it->in[u->slot], flat(it, u, idx));
	if (u->op == TINYC_OP_CONST)
		return u->lit.kind == TINYC_LIT_FLOAT ? u->lit.f : (double)u->lit.i;
	int64_t ax[TINYC_MAX_RANK] = {0};
	if (u->op != TINYC_OP_REDUCE) {	/* out is the identity */
		cr_assert_eq(v->naxes, u->rank);
		memcpy(ax, idx, sizeof(int64_t) * (size_t)u->rank);
		check_domain(it, v, ax);
	}
	switch (u->op) {
	case TINYC_OP_ADD:
		return operand_at(it, v, 0, ax) + operand_at(it, v, 1, ax);
	case TINYC_OP_MUL:
		return operand_at(it, v, 0, ax) * operand_at(it, v, 1, ax);
	case TINYC_OP_NEG:
		return -operand_at(it, v, 0, ax);
	case TINYC_OP_CAST:
		return operand_at(it, v, 0, ax);
	case TINYC_OP_REDUCE: {
		/* the non-reduce axes come from out; the reduce axes are summed over */
		int o = 0;
		for (int a = 0; a < v->naxes; a++)
			if (v->axes[a].kind != TINYC_AXIS_REDUCE) {
				while (v->out[o]->op != TINYC_IX_AXIS)
					o++;
				cr_assert_eq(v->out[o]->var, a);
				ax[a] = idx[o++];
			}
		double acc = 0;
		for (;;) {
			check_domain(it, v, ax);
			acc += operand_at(it, v, 0, ax);
			int k = v->nreduce - 1;
			for (; k >= 0; k--) {
				int a = v->reduce_axes[k];
				if (++ax[a] < dim_val(it, v->axes[a].size))
					break;
				ax[a] = 0;
			}
			if (k < 0)
				return acc;
		}
	}
	default:	/* movement ops, OUTPUT */
		cr_assert(tinyc_op_info(u->op)->kind == TINYC_KIND_MOVEMENT ||
			  u->op == TINYC_OP_OUTPUT, "op %s not interpreted", tinyc_op_info(u->op)->name);
		return operand_at(it, v, 0, ax);
	}
}

/* Run the reference evaluator on distinct inputs and compare every output element with
 * the IndexBook interpreter.  The book is built with the bindings only when bind_book (else
 * its symbols stay symbolic); the evaluator always runs bound. */
static void check_against_eval(const char *text, const char *bind, int bind_book)
{
	fixture f;
	load(&f, text, bind, 1);
	tinyc_indexbook *ib = tinyc_indexbook_build(f.ctx, f.g, bind_book ? f.b : NULL);
	cr_assert_not_null(ib, "IndexBook failed");
	cr_assert_eq(tinyc_indexbook_verify(f.ctx, ib), 0);

	int nslot = 0;
	for (int i = 0; i < f.g->n; i++)
		if (f.g->nodes[i].op == TINYC_OP_BUFFER && f.g->nodes[i].slot + 1 > nslot)
			nslot = (int)f.g->nodes[i].slot + 1;
	tinyc_tensor *in[8] = {0};
	interp it = {ib, f.g, f.b->val, in};
	for (int i = 0; i < f.g->n; i++) {
		const tinyc_uop *u = &f.g->nodes[i];
		if (u->op != TINYC_OP_BUFFER)
			continue;
		int64_t shape[TINYC_MAX_RANK];
		for (int d = 0; d < u->rank; d++)
			shape[d] = dim_val(&it, u->shape[d]);
		in[u->slot] = tinyc_tensor_alloc(f.ctx, u->dtype, u->rank, shape);
		cr_assert_not_null(in[u->slot]);
		/* distinct small integers, exact in every float type used here */
		int64_t n = tinyc_tensor_numel(in[u->slot]);
		for (int64_t e = 0; e < n; e++)
			tinyc_tensor_set(in[u->slot], e, (double)(1 + e + 100 * u->slot));
	}
	tinyc_io io = {nslot, in, 0, NULL};
	cr_assert_eq(tinyc_eval(f.ctx, f.g, f.b, &io), 0, "reference evaluator failed");
	int o = 0;
	for (int i = 0; i < f.g->n; i++) {
		const tinyc_uop *u = &f.g->nodes[i];
		if (u->op != TINYC_OP_OUTPUT)
			continue;
		tinyc_tensor *t = io.out[o++];
		int64_t idx[TINYC_MAX_RANK] = {0}, n = tinyc_tensor_numel(t);
		for (int64_t e = 0; e < n; e++) {
			double want = tinyc_tensor_get(t, e);
			double got = value_at(&it, i, idx);
			cr_assert(fabs(want - got) <= 1e-6 * (1 + fabs(want)),
				  "output %%%s element %lld: evaluator %g, IndexBook %g", u->id,
				  (long long)e, want, got);
			for (int d = u->rank - 1; d >= 0; d--) {
				if (++idx[d] < t->shape[d])
					break;
				idx[d] = 0;
			}
		}
	}
	tinyc_io_clear_outputs(&io);
	for (int s = 0; s < 8; s++)
		tinyc_tensor_free(in[s]);
	tinyc_indexbook_free(ib);
	unload(&f);
}

Test(indexbook, matmul_bias)
{
	/* the interpreter covers ADD, MUL, NEG, CAST, REDUCE ADD and movement */
	check_against_eval("%0 = BUFFER(slot=0, name=\"X\") : float[M,K]\n"
			   "%1 = BUFFER(slot=1, name=\"W\") : float[K,N]\n"
			   "%2 = BUFFER(slot=2, name=\"bias\") : float[N]\n"
			   "%3 = RESHAPE(%0, shape=[M,1,K]) : float[M,1,K]\n"
			   "%4 = RESHAPE(%1, shape=[1,K,N]) : float[1,K,N]\n"
			   "%5 = PERMUTE(%4, perm=[0,2,1]) : float[1,N,K]\n"
			   "%6 = MUL(%3, %5) : float[M,N,K]\n"
			   "%7 = REDUCE(%6, op=ADD, axes=[2]) : float[M,N,1]\n"
			   "%8 = RESHAPE(%7, shape=[M,N]) : float[M,N]\n"
			   "%9 = ADD(%8, %2) : float[M,N]\n"
			   "%10 = OUTPUT(%9, name=\"Y\") : float[M,N]\n",
			   "M=3,N=5,K=4", 0);
}

Test(indexbook, batched_and_vector_matmuls)
{
	check_against_eval("%0 = BUFFER(slot=0, name=\"X\") : float[B,M,K]\n"
			   "%1 = BUFFER(slot=1, name=\"W\") : float[B,K,N]\n"
			   "%2 = RESHAPE(%0, shape=[B,M,1,K]) : float[B,M,1,K]\n"
			   "%3 = RESHAPE(%1, shape=[B,1,K,N]) : float[B,1,K,N]\n"
			   "%4 = PERMUTE(%3, perm=[0,1,3,2]) : float[B,1,N,K]\n"
			   "%5 = MUL(%2, %4) : float[B,M,N,K]\n"
			   "%6 = REDUCE(%5, op=ADD, axes=[-1], keepdim=false) : float[B,M,N]\n"
			   "%7 = OUTPUT(%6, name=\"Y\") : float[B,M,N]\n",
			   "B=2,M=3,N=2,K=5", 0);
	check_against_eval("%0 = BUFFER(slot=0, name=\"x\") : float[K]\n"
			   "%1 = BUFFER(slot=1, name=\"W\") : float[K,N]\n"
			   "%2 = PERMUTE(%1, perm=[1,0]) : float[N,K]\n"
			   "%3 = MUL(%0, %2) : float[N,K]\n"
			   "%4 = REDUCE(%3, op=ADD, axes=[-1], keepdim=false) : float[N]\n"
			   "%5 = OUTPUT(%4, name=\"y\") : float[N]\n",
			   "K=4,N=3", 0);
}

Test(indexbook, reshape_split_merge_and_transposes)
{
	check_against_eval("%0 = BUFFER(slot=0, name=\"X\") : float[M,12]\n"
			   "%1 = RESHAPE(%0, shape=[M,3,4]) : float[M,3,4]\n"
			   "%2 = PERMUTE(%1, perm=[0,2,1]) : float[M,4,3]\n"
			   "%3 = RESHAPE(%2, shape=[M,2,6]) : float[M,2,6]\n"
			   "%4 = RESHAPE(%3, shape=[1,M,2,6]) : float[1,M,2,6]\n"
			   "%5 = RESHAPE(%4, shape=[M,12]) : float[M,12]\n"
			   "%6 = OUTPUT(%5, name=\"Y\") : float[M,12]\n"
			   "%7 = RESHAPE(%2, shape=[M,3,2,2]) : float[M,3,2,2]\n"
			   "%8 = PERMUTE(%7, perm=[3,1,0,2]) : float[2,3,M,2]\n"
			   "%9 = RESHAPE(%8, shape=[6,M,2]) : float[6,M,2]\n"
			   "%10 = OUTPUT(%9, name=\"Z\") : float[6,M,2]\n",
			   "M=2", 0);	/* M stays symbolic in the book: its axis is only kept */
}

Test(indexbook, six_d_reshape_permute_chain)
{
	check_against_eval("%0 = BUFFER(slot=0, name=\"X\") : float[2,3,4,5,2,3]\n"
			   "%1 = PERMUTE(%0, perm=[5,3,1,0,4,2]) : float[3,5,3,2,2,4]\n"
			   "%2 = RESHAPE(%1, shape=[15,6,8]) : float[15,6,8]\n"
			   "%3 = PERMUTE(%2, perm=[2,0,1]) : float[8,15,6]\n"
			   "%4 = RESHAPE(%3, shape=[4,2,3,5,3,2]) : float[4,2,3,5,3,2]\n"
			   "%5 = PERMUTE(%4, perm=[1,3,5,0,2,4]) : float[2,5,2,4,3,3]\n"
			   "%6 = RESHAPE(%5, shape=[720]) : float[720]\n"
			   "%7 = OUTPUT(%6, name=\"Y\") : float[720]\n",
			   NULL, 0);
}

Test(indexbook, symbolic_reshape_once_bound)
{
	check_against_eval("%0 = BUFFER(slot=0, name=\"X\") : float[M,N]\n"
			   "%1 = RESHAPE(%0, shape=[N,M]) : float[N,M]\n"
			   "%2 = OUTPUT(%1, name=\"Y\") : float[N,M]\n",
			   "M=3,N=4", 1);
}

Test(indexbook, pad_shrink_flip_expand)
{
	check_against_eval("%0 = BUFFER(slot=0, name=\"X\") : float[M,6]\n"
			   "%1 = PAD(%0, pads=[[1,2],[2,2]]) : float[5,10]\n"
			   "%2 = FLIP(%1, axes=[0,-1]) : float[5,10]\n"
			   "%3 = SHRINK(%2, bounds=[[1,4],[3,9]]) : float[3,6]\n"
			   "%4 = OUTPUT(%3, name=\"Y\") : float[3,6]\n"
			   "%5 = FLIP(%0, axes=[0]) : float[M,6]\n"
			   "%6 = RESHAPE(%5, shape=[M,1,6]) : float[M,1,6]\n"
			   "%7 = EXPAND(%6, shape=[M,4,6]) : float[M,4,6]\n"
			   "%8 = NEG(%7) : float[M,4,6]\n"
			   "%9 = OUTPUT(%8, name=\"Z\") : float[M,4,6]\n",
			   "M=2", 1);
}

Test(indexbook, mean_pool_and_keepdim_broadcast)
{
	check_against_eval("%0 = BUFFER(slot=0, name=\"X\") : float[N,C,4,6]\n"
			   "%1 = RESHAPE(%0, shape=[N,C,2,2,3,2]) : float[N,C,2,2,3,2]\n"
			   "%2 = PERMUTE(%1, perm=[0,1,2,4,3,5]) : float[N,C,2,3,2,2]\n"
			   "%3 = RESHAPE(%2, shape=[N,C,2,3,4]) : float[N,C,2,3,4]\n"
			   "%4 = REDUCE(%3, op=ADD, axes=[4], keepdim=false) : float[N,C,2,3]\n"
			   "%5 = CONST(0.25) : float[]\n"
			   "%6 = MUL(%4, %5) : float[N,C,2,3]\n"
			   "%7 = OUTPUT(%6, name=\"Y\") : float[N,C,2,3]\n"
			   "%8 = REDUCE(%0, op=ADD, axes=[1,3]) : float[N,1,4,1]\n"
			   "%9 = ADD(%0, %8) : float[N,C,4,6]\n"
			   "%10 = OUTPUT(%9, name=\"Z\") : float[N,C,4,6]\n",
			   "N=2,C=3", 0);
}

/* ---- structure and printing --------------------------------------------------------------- */

Test(indexbook, matmul_axes_and_roles_of_ids)
{
	fixture f;
	load(&f,
	     "%0 = BUFFER(slot=0, name=\"X\") : half[M,K]\n"
	     "%1 = BUFFER(slot=1, name=\"W\") : half[K,N]\n"
	     "%2 = RESHAPE(%0, shape=[M,1,K]) : half[M,1,K]\n"
	     "%3 = RESHAPE(%1, shape=[1,K,N]) : half[1,K,N]\n"
	     "%4 = PERMUTE(%3, perm=[0,2,1]) : half[1,N,K]\n"
	     "%5 = MUL(%2, %4) : half[M,N,K]\n"
	     "%6 = CAST(%5) : float[M,N,K]\n"
	     "%7 = REDUCE(%6, op=ADD, axes=[2]) : float[M,N,1]\n"
	     "%8 = OUTPUT(%7, name=\"Y\") : float[M,N,1]\n",
	     NULL, 1);
	tinyc_indexbook *ib = tinyc_indexbook_build(f.ctx, f.g, f.b);
	cr_assert_not_null(ib);
	const tinyc_ibval *x = &ib->val[0], *w = &ib->val[1], *mul = &ib->val[5], *red = &ib->val[7];
	/* m comes from X, n from W, k is X's k (the left operand wins) */
	cr_assert_eq(mul->axes[0].id, x->axes[0].id);
	cr_assert_eq(mul->axes[1].id, w->axes[1].id);
	cr_assert_eq(mul->axes[2].id, x->axes[1].id);
	cr_assert_neq(x->axes[1].id, w->axes[0].id);
	cr_assert_eq(ib->val[2].axes[1].kind, TINYC_AXIS_BROADCAST);
	/* the broadcast operand dims are read at the constant 0 */
	cr_assert_eq(mul->map[0].idx[1]->op, TINYC_IX_CONST);
	cr_assert_eq(mul->map[0].idx[1]->c, 0);
	cr_assert_eq(mul->map[1].idx[0]->op, TINYC_IX_CONST);
	/* REDUCE: axes m, n, k with k reduce; out (m, n, 0) */
	cr_assert_eq(red->naxes, 3);
	cr_assert_eq(red->nreduce, 1);
	cr_assert_eq(red->reduce_axes[0], 2);
	cr_assert_eq(red->axes[2].kind, TINYC_AXIS_REDUCE);
	cr_assert_eq(red->axes[2].id, x->axes[1].id);
	cr_assert_eq(red->acc, TINYC_FLOAT);
	cr_assert_eq(red->out[2]->op, TINYC_IX_CONST);
	cr_assert_str_eq(red->axes[0].name, "m");
	cr_assert_str_eq(red->axes[2].name, "k");
	tinyc_indexbook_free(ib);
	unload(&f);
}

Test(indexbook, exact_dump)
{
	fixture f;
	load(&f,
	     "%0 = BUFFER(slot=0, name=\"X\") : float[2,6]\n"
	     "%1 = RESHAPE(%0, shape=[3,4]) : float[3,4]\n"
	     "%2 = PAD(%1, pads=[[0,0],[1,0]]) : float[3,5]\n"
	     "%3 = OUTPUT(%2, name=\"Y\") : float[3,5]\n",
	     NULL, 1);
	tinyc_indexbook *ib = tinyc_indexbook_build(f.ctx, f.g, f.b);
	cr_assert_not_null(ib);
	tinyc_buf out = {0};
	tinyc_indexbook_print(ib, &out);
	/* L = 4*a2 + a3 over [2,6]: (floor(L/6), L mod 6); hand-derived */
	cr_assert_str_eq(out.data,
			 "# indexbook: 4 values, 5 axis ids\n"
			 "%0 = BUFFER(name=\"X\") : float[2,6]\n"
			 "  axes: [a0:2:iter, a1:6:iter]\n"
			 "  domain: 0 <= a0 < 2, 0 <= a1 < 6\n"
			 "%1 = RESHAPE(%0) : float[3,4]\n"
			 "  axes: [a2:3:iter, a3:4:iter]\n"
			 "  map %0: (a2, a3) -> (floor((4*a2 + a3)/6), (4*a2 + a3) mod 6)\n"
			 "  domain: 0 <= a2 < 3, 0 <= a3 < 4, (4*a2 + a3) mod 6 >= 0, "
			 "(4*a2 + a3) mod 6 <= 5\n"
			 "%2 = PAD(%1) : float[3,5]\n"
			 "  axes: [a2:3:iter, a4:5:iter]\n"
			 "  map %1: (a2, a4) -> (a2, a4 - 1) if a4 - 1 >= 0, a4 - 1 <= 3 else 0\n"
			 "  domain: 0 <= a2 < 3, 0 <= a4 < 5\n"
			 "%3 = OUTPUT(%2, name=\"Y\") : float[3,5]\n"
			 "  axes: [a2:3:iter, a4:5:iter]\n"
			 "  map %2: (a2, a4) -> (a2, a4)\n"
			 "  domain: 0 <= a2 < 3, 0 <= a4 < 5\n");
	tinyc_buf out2 = {0};
	tinyc_indexbook_print(ib, &out2);
	cr_assert_str_eq(out.data, out2.data, "the dump is deterministic");
	tinyc_buf_free(&out);
	tinyc_buf_free(&out2);
	tinyc_indexbook_free(ib);
	unload(&f);
}

Test(indexbook, ix_eval_floor_and_mod_of_negatives)
{
	tinyc_ix ax = {TINYC_IX_AXIS, 0, 0, NULL, NULL};
	tinyc_ix fd = {TINYC_IX_FDIV, 4, 0, &ax, NULL};
	tinyc_ix md = {TINYC_IX_MOD, 4, 0, &ax, NULL};
	tinyc_ix sym = {TINYC_IX_SYM, 0, 0, NULL, NULL};
	int64_t v, a[1] = {-5}, s[1] = {-1};
	cr_assert_eq(tinyc_ix_eval(&fd, a, NULL, &v), 0);
	cr_assert_eq(v, -2);	/* floor(-5/4) */
	cr_assert_eq(tinyc_ix_eval(&md, a, NULL, &v), 0);
	cr_assert_eq(v, 3);	/* -5 - 4*(-2) */
	cr_assert_eq(tinyc_ix_eval(&sym, a, NULL, &v), -1, "no symbol values");
	cr_assert_eq(tinyc_ix_eval(&sym, a, s, &v), -1, "unbound symbol");
}

/* ---- local checks (graphs not verified: the IndexBook's own diagnostics) ----------------- */

/* Build the IndexBook of an unverified graph; expect failure with kind at line. */
static void expect_local(const char *text, const char *bind, const char *kind, int line)
{
	fixture f;
	load(&f, text, bind, 0);
	tinyc_indexbook *ib = tinyc_indexbook_build(f.ctx, f.g, f.b);
	cr_assert_null(ib, "expected %s", kind);
	cr_assert(has_diag(f.ctx, kind, line), "no %s at line %d", kind, line);
	unload(&f);
}

Test(indexbook_diag, broadcast_mismatch)
{
	expect_local("%0 = BUFFER(slot=0, name=\"X\") : half[M,K]\n"
		     "%1 = BUFFER(slot=1, name=\"W\") : half[K,N]\n"
		     "%2 = MUL(%0, %1) : half[M,N]\n"
		     "%o = OUTPUT(%2, name=\"out\") : half[M,N]\n",
		     NULL, "BroadcastMismatch", 3);
	/* equal only under bindings: fine when bound equal, a mismatch when bound apart */
	expect_local("%0 = BUFFER(slot=0, name=\"X\") : float[M]\n"
		     "%1 = BUFFER(slot=1, name=\"W\") : float[N]\n"
		     "%2 = ADD(%0, %1) : float[M]\n"
		     "%o = OUTPUT(%2, name=\"out\") : float[M]\n",
		     "M=3,N=4", "BroadcastMismatch", 3);
	expect_local("%0 = BUFFER(slot=0, name=\"X\") : float[4,3]\n"
		     "%1 = RESHAPE(%0, shape=[4,1,3]) : float[4,1,3]\n"
		     "%2 = EXPAND(%1, shape=[4,5,2]) : float[4,5,2]\n"
		     "%o = OUTPUT(%2, name=\"out\") : float[4,5,2]\n",
		     NULL, "BroadcastMismatch", 3);
}

Test(indexbook_diag, axis_alignment_mismatch)
{
	expect_local("%0 = BUFFER(slot=0, name=\"X\") : float[M,K]\n"
		     "%1 = RESHAPE(%0, shape=[M,1,K]) : float[M,1,K]\n"
		     "%2 = EXPAND(%1, shape=[M,N,K]) : float[M,N,K]\n"
		     "%3 = OUTPUT(%2, name=\"Y\") : float[M,4,K]\n",
		     NULL, "AxisAlignmentMismatch", 4);
	expect_local("%0 = BUFFER(slot=0, name=\"X\") : float[M,K]\n"
		     "%1 = NEG(%0) : float[K,M]\n"
		     "%o = OUTPUT(%1, name=\"out\") : float[K,M]\n",
		     NULL, "AxisAlignmentMismatch", 2);
	expect_local("%0 = BUFFER(slot=0, name=\"X\") : float[M,K]\n"
		     "%1 = REDUCE(%0, op=ADD, axes=[1]) : float[M]\n"
		     "%o = OUTPUT(%1, name=\"out\") : float[M]\n",
		     NULL, "AxisAlignmentMismatch", 2);
	/* bound: M=3 is not 4 */
	expect_local("%0 = BUFFER(slot=0, name=\"X\") : float[M]\n"
		     "%1 = NEG(%0) : float[4]\n"
		     "%o = OUTPUT(%1, name=\"out\") : float[4]\n",
		     "M=3", "AxisAlignmentMismatch", 2);
}

Test(indexbook_diag, acc_dtype_missing)
{
	expect_local("%0 = BUFFER(slot=0, name=\"X\") : half[M,K]\n"
		     "%1 = REDUCE(%0, op=ADD, axes=[1]) : half[M,1]\n"
		     "%o = OUTPUT(%1, name=\"out\") : half[M,1]\n",
		     NULL, "AccDtypeMissing", 2);
	expect_local("%0 = BUFFER(slot=0, name=\"X\") : bfloat16[8]\n"
		     "\n"
		     "%1 = REDUCE(%0, op=ADD, axes=[0], acc=bfloat16) : bfloat16[1]\n"
		     "%o = OUTPUT(%1, name=\"out\") : bfloat16[1]\n",
		     NULL, "AccDtypeMissing", 3);
}

Test(indexbook_diag, symbolic_reshape_type_mismatch_and_no_cascade)
{
	expect_local("%0 = BUFFER(slot=0, name=\"X\") : float[M,N]\n"
		     "%1 = RESHAPE(%0, shape=[N,M]) : float[N,M]\n"
		     "%o = OUTPUT(%1, name=\"out\") : float[N,M]\n",
		     NULL, "SymbolicReshape", 2);
	expect_local("%0 = BUFFER(slot=0, name=\"X\") : float[4,M]\n"
		     "%1 = RESHAPE(%0, shape=[2,2,M]) : float[2,2,M]\n"
		     "%2 = RESHAPE(%1, shape=[2,M,2]) : float[2,M,2]\n"
		     "%o = OUTPUT(%2, name=\"out\") : float[2,M,2]\n",
		     NULL, "SymbolicReshape", 3);
	expect_local("%0 = BUFFER(slot=0, name=\"X\") : half[4]\n"
		     "%1 = BUFFER(slot=1, name=\"Y\") : float[4]\n"
		     "%2 = ADD(%0, %1) : float[4]\n"
		     "%o = OUTPUT(%2, name=\"out\") : float[4]\n",
		     NULL, "TypeMismatch", 3);
	/* one error per root cause: users of a failed node are not reported again */
	fixture f;
	load(&f,
	     "%0 = BUFFER(slot=0, name=\"X\") : half[M,K]\n"
	     "%1 = BUFFER(slot=1, name=\"W\") : half[K,N]\n"
	     "%2 = MUL(%0, %1) : half[M,N]\n"
	     "%3 = NEG(%2) : half[M,N]\n"
	     "%4 = REDUCE(%0, op=ADD, axes=[1]) : half[M,1]\n"
	     "%5 = OUTPUT(%3, name=\"out\") : half[M,N]\n",
	     NULL, 0);
	cr_assert_null(tinyc_indexbook_build(f.ctx, f.g, f.b));
	cr_assert_eq(tinyc_ctx_error_count(f.ctx), 2);
	cr_assert(has_diag(f.ctx, "BroadcastMismatch", 3));
	cr_assert(has_diag(f.ctx, "AccDtypeMissing", 5));
	unload(&f);
}

/* ---- the final validation on corrupted books ----------------------------------------------- */

static const char *small_matmul =
	"%0 = BUFFER(slot=0, name=\"X\") : half[M,K]\n"
	"%1 = BUFFER(slot=1, name=\"W\") : half[K,N]\n"
	"%2 = RESHAPE(%0, shape=[M,1,K]) : half[M,1,K]\n"
	"%3 = RESHAPE(%1, shape=[1,K,N]) : half[1,K,N]\n"
	"%4 = PERMUTE(%3, perm=[0,2,1]) : half[1,N,K]\n"
	"%5 = MUL(%2, %4) : half[M,N,K]\n"
	"%6 = CAST(%5) : float[M,N,K]\n"
	"%7 = REDUCE(%6, op=ADD, axes=[2]) : float[M,N,1]\n"
	"%8 = OUTPUT(%7, name=\"Y\") : float[M,N,1]\n";

Test(indexbook_verify, accepts_a_good_book_and_catches_corruption)
{
	fixture f;
	load(&f, small_matmul, NULL, 1);
	tinyc_indexbook *ib = tinyc_indexbook_build(f.ctx, f.g, f.b);
	cr_assert_not_null(ib);
	cr_assert_eq(tinyc_indexbook_verify(f.ctx, ib), 0);

	/* a reduction that lost its accumulator dtype */
	ib->val[7].acc = TINYC_DTYPE_NONE;
	cr_assert_eq(tinyc_indexbook_verify(f.ctx, ib), -1);
	cr_assert(has_diag(f.ctx, "AccDtypeMissing", 8));
	ib->val[7].acc = TINYC_HALF;
	tinyc_ctx_clear_diags(f.ctx);
	cr_assert_eq(tinyc_indexbook_verify(f.ctx, ib), -1);
	cr_assert(has_diag(f.ctx, "AccDtypeMissing", 8));
	ib->val[7].acc = TINYC_FLOAT;

	/* a broadcast dim read along a real axis instead of at 0 */
	tinyc_ctx_clear_diags(f.ctx);
	const tinyc_ix *saved = ib->val[5].map[0].idx[1];
	ib->val[5].map[0].idx[1] = ib->val[5].out[1];	/* the n axis */
	cr_assert_eq(tinyc_indexbook_verify(f.ctx, ib), -1);
	cr_assert(has_diag(f.ctx, "BroadcastMismatch", 6));
	ib->val[5].map[0].idx[1] = saved;

	/* an axis whose size disagrees with the signature */
	tinyc_ctx_clear_diags(f.ctx);
	tinyc_dim n = ib->val[6].axes[1].size;
	ib->val[6].axes[1].size = (tinyc_dim){7, -1};
	cr_assert_eq(tinyc_indexbook_verify(f.ctx, ib), -1);
	cr_assert(has_diag(f.ctx, "AxisAlignmentMismatch", 7));
	ib->val[6].axes[1].size = n;

	tinyc_ctx_clear_diags(f.ctx);
	cr_assert_eq(tinyc_indexbook_verify(f.ctx, ib), 0, "restored book verifies again");
	tinyc_indexbook_free(ib);
	unload(&f);
}
