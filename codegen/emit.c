/* The value emitter (see codegen/gpu.h): a UOp value at an index, as GPU IR.
 *
 * emit_value(node, idx, pred) walks the fused part of the graph below `node`:
 *   - a value the schedule materialised (an input, a temporary) is a load from its buffer
 *     at the row-major (or strided) offset of idx, predicated by pred (zero-filling);
 *   - movement ops map idx to their operand's index through the IndexBook's AxisMap; a PAD
 *     map's guard joins the predicate of the loads below it and selects 0 outside;
 *   - elementwise ops compute on their operands' values, with the reference semantics;
 *   - a REDUCE computed inline becomes an accumulator and a loop nest over the reduced
 *     axes (row-major order, as the reference folds), appended to the block.
 * Every computed value is bound to a register (a `decl`), and memoised by (node, index,
 * predicate) within the current loop scope, so a value used twice is computed once.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/gpu.h"
#include "ir/tensor.h"

/* One memoised value. */
struct emit_memo {
	int node;			/* the UOp node */
	int rank;			/* entries of idx */
	tinyc_gexpr *idx[TINYC_MAX_RANK];	/* the index it was computed at */
	tinyc_gexpr *pred;		/* the predicate it was computed under */
	tinyc_gexpr *value;		/* the register holding it */
	int depth;			/* loop scope it lives in */
	int prev;			/* the previous entry of the same node, or -1 */
};

/* One value being computed by the iterative walk of tinyc_emit_value. */
struct emit_frame {
	int node;			/* the UOp node */
	tinyc_gstmt *block;		/* where its statements go */
	tinyc_gexpr *idx[TINYC_MAX_RANK];	/* its index */
	tinyc_gexpr *pred;		/* the predicate it is needed under */
	int step;			/* operands asked for so far */
	tinyc_gexpr *a[3];		/* operand values */
	tinyc_gexpr *guard;		/* movement: the AxisMap's guard, or NULL */
	int acc;			/* REDUCE: the accumulator register */
	tinyc_dtype acc_dt;		/* REDUCE: its dtype */
	tinyc_gstmt *outer, *inner;	/* REDUCE: the loop nest and its innermost body */
};

tinyc_dtype tinyc_emit_compute_dtype(tinyc_dtype dt)
{
	return tinyc_dtype_is_16bit_float(dt) ? TINYC_FLOAT : dt;
}

/* Report a failure once. */
static tinyc_gexpr *emit_fail(tinyc_emit *em, const char *what)
{
	if (!em->error)
		tinyc_error(em->ctx, "CodegenError", "kernel %s: %s", em->k->name, what);
	em->error = 1;
	return NULL;
}

void tinyc_emit_set_nonneg(tinyc_emit *em, int v)
{
	if (v < 0)
		return;
	if (v >= em->capnonneg) {
		int nc = em->capnonneg ? em->capnonneg : 64;
		while (nc <= v)
			nc *= 2;
		unsigned char *nn = realloc(em->nonneg, (size_t)nc);
		if (!nn) {
			em->error = 1;
			return;
		}
		memset(nn + em->capnonneg, 0, (size_t)(nc - em->capnonneg));
		em->nonneg = nn;
		em->capnonneg = nc;
	}
	em->nonneg[v] = 1;
}

int tinyc_emit_is_nonneg(tinyc_emit *em, const tinyc_gexpr *e)
{
	if (!e)
		return 0;
	switch (e->op) {
	case TINYC_GX_INT:
		return e->ival >= 0;
	case TINYC_GX_VAR:
		return em->k->vars[e->var].kind == TINYC_GV_PARAM_INT ||
		       (e->var < em->capnonneg && em->nonneg[e->var]);
	case TINYC_GX_SPECIAL:
	case TINYC_GX_SYM:
		return 1;
	case TINYC_GX_ADD:
	case TINYC_GX_MUL:
	case TINYC_GX_DIV:
	case TINYC_GX_MOD:
	case TINYC_GX_FLOORDIV:
	case TINYC_GX_MIN:
		return tinyc_emit_is_nonneg(em, e->arg[0]) && tinyc_emit_is_nonneg(em, e->arg[1]);
	case TINYC_GX_MAX:
		return tinyc_emit_is_nonneg(em, e->arg[0]) || tinyc_emit_is_nonneg(em, e->arg[1]);
	case TINYC_GX_SELECT:
		return tinyc_emit_is_nonneg(em, e->arg[1]) && tinyc_emit_is_nonneg(em, e->arg[2]);
	default:
		return 0;
	}
}

tinyc_emit *tinyc_emit_alloc(tinyc_ctx *ctx, tinyc_gkernel *k, const tinyc_schedule *s,
			     const tinyc_indexbook *ib, int kernel)
{
	tinyc_emit *em = tinyc_calloc(ctx, 1, sizeof(*em));
	if (!em)
		return NULL;
	em->ctx = ctx;
	em->k = k;
	em->s = s;
	em->ib = ib;
	em->g = s->g;
	em->kernel = kernel;
	em->buf_param = tinyc_malloc(ctx, sizeof(int) * (size_t)(s->nbuf + 1));
	if (!em->buf_param) {
		free(em);
		return NULL;
	}
	for (int i = 0; i < s->nbuf; i++)
		em->buf_param[i] = -1;
	const tinyc_skernel *sk = &s->kerns[kernel];
	for (int b = 0; b < s->nbuf; b++) {
		int reads = 0;
		for (int j = 0; j < sk->nin; j++)
			reads |= sk->in_bufs[j] == b;
		if (reads && (em->buf_param[b] = tinyc_gk_param_ptr(k, s->bufs[b].name,
								     s->bufs[b].dtype, 1, b)) < 0)
			em->error = 1;
	}
	int ob = sk->out_buf;
	if ((em->buf_param[ob] = tinyc_gk_param_ptr(k, s->bufs[ob].name, s->bufs[ob].dtype, 0, ob)) < 0)
		em->error = 1;
	if (em->error) {
		tinyc_emit_free(em);
		return NULL;
	}
	return em;
}

void tinyc_emit_free(tinyc_emit *em)
{
	if (!em)
		return;
	free(em->buf_param);
	free(em->nonneg);
	free(em->memo);
	free(em->memo_head);
	free(em);
}

void tinyc_emit_scope_enter(tinyc_emit *em)
{
	em->depth++;
}

void tinyc_emit_scope_leave(tinyc_emit *em)
{
	while (em->nmemo > 0 && em->memo[em->nmemo - 1].depth >= em->depth) {
		struct emit_memo *m = &em->memo[--em->nmemo];
		em->memo_head[m->node] = m->prev;
	}
	em->depth--;
}

/* Look up a memoised value: the entries of node, newest first. */
static tinyc_gexpr *memo_find(tinyc_emit *em, int node, int rank, tinyc_gexpr *const *idx,
			      tinyc_gexpr *pred)
{
	if (!em->memo_head)
		return NULL;
	for (int i = em->memo_head[node]; i >= 0; i = em->memo[i].prev) {
		struct emit_memo *m = &em->memo[i];
		if (m->rank != rank || !tinyc_gx_equal(m->pred, pred))
			continue;
		int same = 1;
		for (int d = 0; d < rank && same; d++)
			same = tinyc_gx_equal(m->idx[d], idx[d]);
		if (same)
			return m->value;
	}
	return NULL;
}

/* Remember a value. */
static void memo_add(tinyc_emit *em, int node, int rank, tinyc_gexpr *const *idx,
		     tinyc_gexpr *pred, tinyc_gexpr *value)
{
	if (!em->memo_head) {
		em->memo_head = malloc(sizeof(int) * (size_t)(em->g->n > 0 ? em->g->n : 1));
		if (!em->memo_head)
			return;	/* not memoising is still correct */
		for (int i = 0; i < em->g->n; i++)
			em->memo_head[i] = -1;
	}
	if (em->nmemo == em->capmemo) {
		int nc = em->capmemo ? em->capmemo * 2 : 32;
		struct emit_memo *nm = realloc(em->memo, sizeof(*nm) * (size_t)nc);
		if (!nm)
			return;
		em->memo = nm;
		em->capmemo = nc;
	}
	struct emit_memo *m = &em->memo[em->nmemo];
	m->node = node;
	m->rank = rank;
	for (int d = 0; d < rank; d++)
		m->idx[d] = idx[d];
	m->pred = pred;
	m->value = value;
	m->depth = em->depth;
	m->prev = em->memo_head[node];
	em->memo_head[node] = em->nmemo++;
}

/* Bind e to a fresh register named after node, declared in block; returns the register.
 * Constants and plain variables are returned as they are. */
static tinyc_gexpr *let(tinyc_emit *em, tinyc_gstmt *block, int node, tinyc_gexpr *e)
{
	if (!e)
		return emit_fail(em, "expression construction failed");
	if (e->op == TINYC_GX_INT || e->op == TINYC_GX_FLOAT || e->op == TINYC_GX_VAR)
		return e;
	char name[64];
	snprintf(name, sizeof(name), "v%s", node >= 0 ? em->g->nodes[node].id : "");
	int v = tinyc_gk_reg(em->k, name, e->dtype);
	if (v < 0 || tinyc_gs_append(em->k, block, tinyc_gs_decl(em->k, v, e)) < 0)
		return emit_fail(em, "out of memory");
	return tinyc_gx_var(em->k, v);
}

enum { BIND_NODES = 48 };	/* a larger index or predicate of a movement is bound to a register */

/* Whether expression e has more than limit (<= BIND_NODES) nodes, counted as a tree (a
 * shared subexpression once per use), with an explicit stack. */
static int gx_larger_than(const tinyc_gexpr *e, int limit)
{
	const tinyc_gexpr *stack[2 * BIND_NODES + 3];
	int n = 0, count = 0;
	if (e)
		stack[n++] = e;
	while (n > 0) {
		const tinyc_gexpr *x = stack[--n];
		if (++count > limit)
			return 1;
		for (int i = 0; i < 3; i++)
			if (x->arg[i])
				stack[n++] = x->arg[i];
	}
	return 0;
}

/* Bind a large index or predicate expression to a register declared in block, so that
 * chains of movements (RESHAPE's div/mod, PAD's guards) grow the GPU IR linearly instead of
 * copying the whole expression at each step.  Small expressions are returned as they are. */
static tinyc_gexpr *bind_large(tinyc_emit *em, tinyc_gstmt *block, const char *prefix, int node,
			       tinyc_gexpr *e)
{
	if (!e || !gx_larger_than(e, BIND_NODES))
		return e;
	char name[64];
	snprintf(name, sizeof(name), "%s%s", prefix, em->g->nodes[node].id);
	int v = tinyc_gk_reg(em->k, name, e->dtype);
	if (v < 0 || tinyc_gs_append(em->k, block, tinyc_gs_decl(em->k, v, e)) < 0)
		return emit_fail(em, "out of memory");
	if (tinyc_emit_is_nonneg(em, e))
		tinyc_emit_set_nonneg(em, v);
	return tinyc_gx_var(em->k, v);
}

tinyc_gexpr *tinyc_emit_dim(tinyc_emit *em, const tinyc_dim *d)
{
	tinyc_dtype it = em->k->index_dtype;
	int64_t v = tinyc_sched_dim(em->s, d);
	if (v >= 0)
		return tinyc_gx_int(em->k, it, v);
	int p = tinyc_gk_sym_param(em->k, d->sym);
	if (p < 0)
		return emit_fail(em, "cannot add a size parameter");
	return tinyc_gx_var(em->k, p);
}

tinyc_gexpr *tinyc_emit_dim_sym(tinyc_emit *em, const tinyc_dim *d)
{
	int64_t v = tinyc_sched_dim(em->s, d);
	if (v >= 0)
		return tinyc_gx_int(em->k, TINYC_LONG, v);
	return tinyc_gx_sym(em->k, d->sym);
}

tinyc_gexpr *tinyc_emit_buf_offset(tinyc_emit *em, int buf, tinyc_gexpr *const *idx)
{
	const tinyc_sbuf *b = &em->s->bufs[buf];
	tinyc_gkernel *k = em->k;
	tinyc_gexpr *off = tinyc_gx_int(k, k->index_dtype, 0);
	for (int d = 0; d < b->rank; d++) {
		if (b->has_strides)
			off = tinyc_gx_binary(k, TINYC_GX_ADD, off,
					      tinyc_gx_binary(k, TINYC_GX_MUL, idx[d],
							      tinyc_emit_dim(em, &b->strides[d])));
		else
			off = tinyc_gx_binary(k, TINYC_GX_ADD,
					      tinyc_gx_binary(k, TINYC_GX_MUL, off,
							      tinyc_emit_dim(em, &b->shape[d])),
					      idx[d]);
	}
	return off ? off : emit_fail(em, "out of memory");
}

/* An IndexBook expression as GPU IR, with axis values ax[] (by axis position). */
static tinyc_gexpr *emit_ix(tinyc_emit *em, const tinyc_ix *e, tinyc_gexpr *const *ax)
{
	tinyc_gkernel *k = em->k;
	tinyc_dtype it = k->index_dtype;
	if (!e)
		return emit_fail(em, "missing index expression");
	switch (e->op) {
	case TINYC_IX_CONST:
		return tinyc_gx_int(k, it, e->c);
	case TINYC_IX_AXIS:
		return ax[e->var];
	case TINYC_IX_SYM: {
		tinyc_dim d = {0, e->var};
		return tinyc_emit_dim(em, &d);
	}
	case TINYC_IX_ADD:
		return tinyc_gx_binary(k, TINYC_GX_ADD, emit_ix(em, e->a, ax), emit_ix(em, e->b, ax));
	case TINYC_IX_MUL:
		return tinyc_gx_binary(k, TINYC_GX_MUL, tinyc_gx_int(k, it, e->c), emit_ix(em, e->a, ax));
	case TINYC_IX_FDIV:
	case TINYC_IX_MOD: {
		tinyc_gexpr *a = emit_ix(em, e->a, ax), *c = tinyc_gx_int(k, it, e->c);
		if (!a)
			return NULL;
		if (tinyc_emit_is_nonneg(em, a))
			return tinyc_gx_binary(k, e->op == TINYC_IX_FDIV ? TINYC_GX_DIV : TINYC_GX_MOD, a, c);
		tinyc_gexpr *q = tinyc_gx_binary(k, TINYC_GX_FLOORDIV, a, c);
		if (e->op == TINYC_IX_FDIV)
			return q;
		return tinyc_gx_binary(k, TINYC_GX_SUB, a, tinyc_gx_binary(k, TINYC_GX_MUL, c, q));
	}
	}
	return emit_fail(em, "unknown index expression");
}

int tinyc_emit_operand_index(tinyc_emit *em, int node, int operand, tinyc_gexpr *const *idx,
			     tinyc_gexpr **out, tinyc_gexpr **guard)
{
	const tinyc_ibval *v = &em->ib->val[node];
	const tinyc_axismap *m = &v->map[operand];
	tinyc_gkernel *k = em->k;
	*guard = NULL;
	for (int d = 0; d < m->rank; d++)
		if (!(out[d] = emit_ix(em, m->idx[d], idx)))
			return -1;
	for (int i = 0; i < m->nguard; i++) {
		tinyc_gexpr *e = emit_ix(em, m->guard[i].e, idx);
		tinyc_gexpr *c = tinyc_gx_binary(k, m->guard[i].eq ? TINYC_GX_EQ : TINYC_GX_GE, e,
						 tinyc_gx_int(k, k->index_dtype, 0));
		*guard = *guard ? tinyc_gx_binary(k, TINYC_GX_LAND, *guard, c) : c;
		if (!*guard)
			return -1;
	}
	return 0;
}

/* Convert x (compute dtype of `from`) to the compute dtype of `to`, with CAST semantics
 * (16-bit targets are rounded to their format and widened back to float). */
static tinyc_gexpr *convert(tinyc_emit *em, tinyc_gexpr *x, tinyc_dtype from, tinyc_dtype to)
{
	tinyc_gkernel *k = em->k;
	if (!x)
		return NULL;
	if (from == to)
		return x;
	if (to == TINYC_BOOL) {
		tinyc_gexpr *zero = tinyc_dtype_is_float(x->dtype) ? tinyc_gx_float(k, x->dtype, 0)
								   : tinyc_gx_int(k, x->dtype, 0);
		return tinyc_gx_binary(k, TINYC_GX_NE, x, zero);
	}
	if (tinyc_dtype_is_16bit_float(to))
		return tinyc_gx_cast(k, TINYC_FLOAT, tinyc_gx_cast(k, to, x));
	return tinyc_gx_cast(k, to, x);
}

tinyc_gexpr *tinyc_emit_red_identity(tinyc_emit *em, tinyc_redop op, tinyc_dtype dt)
{
	tinyc_gkernel *k = em->k;
	if (dt == TINYC_BOOL)
		return tinyc_gx_bool(k, op == TINYC_RED_MUL);
	if (op == TINYC_RED_ADD)
		return tinyc_gx_int(k, dt, 0);
	if (op == TINYC_RED_MUL)
		return tinyc_gx_int(k, dt, 1);
	if (tinyc_dtype_is_float(dt))
		return tinyc_gx_float(k, dt, -INFINITY);
	if (!tinyc_dtype_is_signed(dt))
		return tinyc_gx_int(k, dt, 0);
	int bits = 8 * tinyc_dtype_size(dt);
	return tinyc_gx_int(k, dt, bits == 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1)));
}

tinyc_gexpr *tinyc_emit_red_combine(tinyc_emit *em, tinyc_redop op, tinyc_gexpr *acc,
				    tinyc_gexpr *v)
{
	tinyc_gkernel *k = em->k;
	if (!acc || !v)
		return NULL;
	if (acc->dtype == TINYC_BOOL)
		return tinyc_gx_binary(k, op == TINYC_RED_MUL ? TINYC_GX_AND : TINYC_GX_OR, acc, v);
	tinyc_gx_op o = op == TINYC_RED_ADD ? TINYC_GX_ADD : op == TINYC_RED_MUL ? TINYC_GX_MUL
									  : TINYC_GX_MAX;
	return tinyc_gx_binary(k, o, acc, v);
}

/* A constant node's value in its compute dtype (16-bit and float rounded as the reference). */
static tinyc_gexpr *emit_const(tinyc_emit *em, const tinyc_uop *u)
{
	tinyc_gkernel *k = em->k;
	tinyc_dtype dt = u->dtype;
	if (dt == TINYC_BOOL)
		return tinyc_gx_bool(k, u->lit.kind == TINYC_LIT_FLOAT ? u->lit.f != 0 : u->lit.i != 0);
	if (!tinyc_dtype_is_float(dt))
		return tinyc_gx_int(k, dt, u->lit.kind == TINYC_LIT_FLOAT ? (int64_t)u->lit.f : u->lit.i);
	double v = u->lit.kind == TINYC_LIT_FLOAT ? u->lit.f : (double)u->lit.i;
	v = tinyc_round_to_dtype(dt, v);
	return tinyc_gx_float(k, tinyc_emit_compute_dtype(dt), v);
}

/* The elementwise op of u on operand values a[] (compute dtypes). */
static tinyc_gexpr *emit_elementwise(tinyc_emit *em, const tinyc_uop *u, tinyc_gexpr **a)
{
	tinyc_gkernel *k = em->k;
	const tinyc_uop *s0 = &em->g->nodes[u->src[0]];
	tinyc_dtype dt = s0->dtype;	/* operand dtype */
	tinyc_dtype cd = a[0]->dtype;	/* its compute dtype */
	int fl = tinyc_dtype_is_float(dt), bl = dt == TINYC_BOOL;
	tinyc_gexpr *zero = fl ? tinyc_gx_float(k, cd, 0) : tinyc_gx_int(k, cd, 0);
	tinyc_gexpr *e = tinyc_gx_uop(k, u->op, a, bl, u->dtype);	/* the ops every builder writes alike */
	if (e)
		return e;
	switch (u->op) {
	case TINYC_OP_CAST:
		return convert(em, a[0], dt, u->dtype);
	case TINYC_OP_BITCAST: {
		tinyc_gexpr *x = a[0];
		if (tinyc_dtype_is_16bit_float(dt))
			x = tinyc_gx_cast(k, dt, x);	/* the stored 16-bit pattern */
		x = tinyc_gx_bitcast(k, u->dtype, x);
		return tinyc_dtype_is_16bit_float(u->dtype) ? tinyc_gx_cast(k, TINYC_FLOAT, x) : x;
	}
	case TINYC_OP_RELU:
		if (!fl && !tinyc_dtype_is_signed(dt))
			return a[0];
		return tinyc_gx_select(k, tinyc_gx_binary(k, TINYC_GX_GT, a[0], zero), a[0], zero);
	case TINYC_OP_IDIV:
	case TINYC_OP_MOD: {
		/* x / 0 = x % 0 = 0; signed MIN / -1 wraps, MIN % -1 = 0 (the reference's rules) */
		tinyc_gexpr *bz = tinyc_gx_binary(k, TINYC_GX_EQ, a[1], zero);
		int sg = tinyc_dtype_is_signed(dt);
		tinyc_gexpr *m1 = sg ? tinyc_gx_binary(k, TINYC_GX_EQ, a[1], tinyc_gx_int(k, cd, -1)) : NULL;
		if (u->op == TINYC_OP_IDIV) {
			tinyc_gexpr *q = tinyc_gx_binary(k, TINYC_GX_DIV, a[0], a[1]);
			if (sg)
				q = tinyc_gx_select(k, m1, tinyc_gx_unary(k, TINYC_GX_NEG, a[0]), q);
			return tinyc_gx_select(k, bz, zero, q);
		}
		tinyc_gexpr *r = tinyc_gx_binary(k, TINYC_GX_MOD, a[0], a[1]);
		return tinyc_gx_select(k, sg ? tinyc_gx_binary(k, TINYC_GX_LOR, bz, m1) : bz, zero, r);
	}
	default:
		return emit_fail(em, "unsupported elementwise op");
	}
}

/* A REDUCE computed inline, first half: the accumulator and the loop nest over the reduced
 * axes; fills f's reduction fields and ax (the axis values the operand is read at). */
static int reduce_open(tinyc_emit *em, struct emit_frame *f, tinyc_gexpr **ax)
{
	tinyc_gkernel *k = em->k;
	const tinyc_uop *u = &em->g->nodes[f->node];
	const tinyc_ibval *v = &em->ib->val[f->node];
	const tinyc_uop *in = &em->g->nodes[u->src[0]];
	for (int d = 0; d < TINYC_MAX_RANK; d++)
		ax[d] = NULL;
	for (int d = 0; d < v->rank; d++)
		if (v->out[d]->op == TINYC_IX_AXIS)
			ax[v->out[d]->var] = f->idx[d];
	f->acc_dt = v->acc != TINYC_DTYPE_NONE ? v->acc : u->dtype;
	tinyc_dtype acd = tinyc_emit_compute_dtype(f->acc_dt);
	char name[64];
	snprintf(name, sizeof(name), "acc%s", u->id);
	int acc = tinyc_gk_reg(k, name, acd);
	if (acc < 0 || tinyc_gs_append(k, f->block, tinyc_gs_decl(k, acc, tinyc_emit_red_identity(em, u->redop, acd))) < 0)
		return emit_fail(em, "out of memory"), -1;
	f->acc = acc;
	/* loops over the reduced axes, outermost first */
	tinyc_gstmt *outer = NULL, *inner = NULL;
	for (int r = 0; r < v->nreduce; r++) {
		int a = v->reduce_axes[r];
		snprintf(name, sizeof(name), "r%d", a);
		int iv = tinyc_gk_reg(k, name, k->index_dtype);
		if (iv < 0)
			return emit_fail(em, "out of memory"), -1;
		tinyc_emit_set_nonneg(em, iv);
		ax[a] = tinyc_gx_var(k, iv);
		tinyc_gstmt *body = tinyc_gs_block(k);
		tinyc_gstmt *loop = tinyc_gs_for_range(k, iv, tinyc_gx_int(k, k->index_dtype, 0),
						       tinyc_emit_dim(em, &in->shape[a]),
						       tinyc_gx_int(k, k->index_dtype, 1),
						       r == v->nreduce - 1 ? 4 : 0, body);
		if (!loop)
			return emit_fail(em, "out of memory"), -1;
		if (inner)
			tinyc_gs_append(k, inner, loop);
		else
			outer = loop;
		inner = body;
	}
	if (!inner) {	/* no reduced axis: the loop body runs once */
		inner = tinyc_gs_block(k);
		outer = inner;
	}
	f->outer = outer;
	f->inner = inner;
	tinyc_emit_scope_enter(em);
	return 0;
}

/* A REDUCE computed inline, second half: fold the operand's value x into the accumulator,
 * close the loop nest and append it to the block; the converted accumulator. */
static tinyc_gexpr *reduce_close(tinyc_emit *em, struct emit_frame *f, tinyc_gexpr *x)
{
	tinyc_gkernel *k = em->k;
	const tinyc_uop *u = &em->g->nodes[f->node];
	const tinyc_uop *in = &em->g->nodes[u->src[0]];
	x = convert(em, x, in->dtype, f->acc_dt);
	tinyc_gstmt *upd = tinyc_gs_assign(k, f->acc, tinyc_emit_red_combine(em, u->redop,
									      tinyc_gx_var(k, f->acc), x));
	tinyc_emit_scope_leave(em);
	if (!upd || tinyc_gs_append(k, f->inner, upd) < 0)
		return emit_fail(em, "reduction body");
	/* a reduction under a PAD guard runs only where its value is used */
	tinyc_gstmt *nest = f->pred ? tinyc_gs_if(k, f->pred, f->outer, NULL) : f->outer;
	if (tinyc_gs_append(k, f->block, nest) < 0)
		return emit_fail(em, "out of memory");
	return convert(em, tinyc_gx_var(k, f->acc), f->acc_dt, u->dtype);
}

/* Whether node's value is read from a buffer in this kernel. */
static int is_loaded(tinyc_emit *em, int node)
{
	const tinyc_skernel *sk = &em->s->kerns[em->kernel];
	if (em->s->node_buf[node] < 0)
		return 0;
	return !(node == sk->value && sk->value == sk->root);
}

/* The value of node at idx when it needs no operand (a hook's, a constant, a memoised or a
 * loaded value); NULL with *done = 0 when its operands must be computed first. */
static tinyc_gexpr *value_leaf(tinyc_emit *em, tinyc_gstmt *block, int node,
			       tinyc_gexpr *const *idx, tinyc_gexpr *pred, int *done)
{
	tinyc_gkernel *k = em->k;
	const tinyc_uop *u = &em->g->nodes[node];
	*done = 1;
	if (em->error)
		return NULL;
	if (em->leaf) {
		tinyc_gexpr *e = em->leaf(em, node, idx, em->leaf_user);
		if (e)
			return e;
	}
	if (u->op == TINYC_OP_CONST)
		return emit_const(em, u);
	tinyc_gexpr *m = memo_find(em, node, u->rank, idx, pred);
	if (m)
		return m;
	if (is_loaded(em, node)) {
		int b = em->s->node_buf[node];
		const tinyc_sbuf *sb = &em->s->bufs[b];
		tinyc_gexpr *ld = tinyc_gx_load(k, em->buf_param[b], tinyc_emit_buf_offset(em, b, idx), pred);
		/* 16-bit storage widens exactly to float; a float temporary of a 16-bit value
		 * already holds it in its compute dtype */
		tinyc_dtype cd = tinyc_emit_compute_dtype(u->dtype);
		tinyc_gexpr *e = let(em, block, node, sb->dtype == cd ? ld : tinyc_gx_cast(k, cd, ld));
		if (e)
			memo_add(em, node, u->rank, idx, pred, e);
		return e;
	}
	switch (tinyc_op_info(u->op)->kind) {
	case TINYC_KIND_MOVEMENT:
	case TINYC_KIND_SINK:
	case TINYC_KIND_ELEMENTWISE:
	case TINYC_KIND_REDUCE:
		*done = 0;
		return NULL;
	default:
		return emit_fail(em, "a BUFFER without a buffer");
	}
}

/* Set up frame f for node at idx under pred, appending to block. */
static void frame_init(struct emit_frame *f, tinyc_gstmt *block, int node,
		       tinyc_gexpr *const *idx, int rank, tinyc_gexpr *pred)
{
	memset(f, 0, sizeof(*f));
	f->node = node;
	f->block = block;
	for (int d = 0; d < rank; d++)
		f->idx[d] = idx[d];
	f->pred = pred;
}

/* The walk is a depth-first post-order over an explicit stack of frames (a chain of a
 * million fused values must not overflow the C stack).  A frame's step counts the operands
 * it has asked for; operands are emitted in order, each completely before the next, so the
 * GPU IR is the same as a recursive walk's. */
tinyc_gexpr *tinyc_emit_value(tinyc_emit *em, tinyc_gstmt *block, int node,
			      tinyc_gexpr *const *idx, tinyc_gexpr *pred)
{
	tinyc_gkernel *k = em->k;
	if (em->error)
		return NULL;
	int done;
	tinyc_gexpr *r = value_leaf(em, block, node, idx, pred, &done);
	if (done)
		return r;
	int n = 0, cap = 16;
	struct emit_frame *st = malloc(sizeof(*st) * (size_t)cap);
	if (!st)
		return emit_fail(em, "out of memory");
	frame_init(&st[n++], block, node, idx, em->g->nodes[node].rank, pred);
	r = NULL;
	while (n > 0) {
		struct emit_frame *f = &st[n - 1];
		const tinyc_uop *u = &em->g->nodes[f->node];
		const tinyc_opinfo *info = tinyc_op_info(u->op);
		tinyc_gexpr *e = NULL;
		/* the operand to compute next: its node, index and predicate */
		int child = -1;
		tinyc_gexpr *ci[TINYC_MAX_RANK], *cpred = NULL;
		tinyc_gstmt *cblock = f->block;
		if (em->error)
			break;
		if (info->kind == TINYC_KIND_REDUCE) {
			if (f->step == 0) {
				if (reduce_open(em, f, ci) < 0)
					break;
				child = u->src[0];
				cblock = f->inner;
			} else {
				e = let(em, f->block, f->node, reduce_close(em, f, f->a[0]));
			}
		} else if (info->kind == TINYC_KIND_ELEMENTWISE) {
			if (f->step < u->nsrc) {
				tinyc_gexpr *guard;
				if (tinyc_emit_operand_index(em, f->node, f->step, f->idx, ci, &guard) < 0) {
					emit_fail(em, "operand index");
					break;
				}
				child = u->src[f->step];
				cpred = f->pred;
			} else {
				e = let(em, f->block, f->node, emit_elementwise(em, u, f->a));
			}
		} else if (f->step == 0) {	/* movement or sink: one operand */
			if (tinyc_emit_operand_index(em, f->node, 0, f->idx, ci, &f->guard) < 0) {
				emit_fail(em, "operand index");
				break;
			}
			for (int d = 0; d < em->g->nodes[u->src[0]].rank; d++)
				ci[d] = bind_large(em, f->block, "i", f->node, ci[d]);
			f->guard = bind_large(em, f->block, "g", f->node, f->guard);
			tinyc_gexpr *g = f->guard, *p = f->pred;
			cpred = g ? (p ? tinyc_gx_binary(k, TINYC_GX_LAND, p, g) : g) : p;
			cpred = bind_large(em, f->block, "p", f->node, cpred);
			if (em->error)
				break;
			child = u->src[0];
		} else {
			tinyc_gexpr *x = f->a[0];
			if (!f->guard) {
				e = x;	/* a pure index map: the operand's register */
			} else {
				tinyc_gexpr *fill = tinyc_dtype_is_float(x->dtype)
					? tinyc_gx_float(k, x->dtype, em->ib->val[f->node].map[0].fill)
					: tinyc_gx_int(k, x->dtype, (int64_t)em->ib->val[f->node].map[0].fill);
				e = let(em, f->block, f->node, tinyc_gx_select(k, f->guard, x, fill));
			}
		}
		if (child >= 0) {
			tinyc_gexpr *x = value_leaf(em, cblock, child, ci, cpred, &done);
			if (done) {
				if (!x)
					break;
				f->a[f->step++] = x;
				continue;
			}
			if (n == cap) {
				struct emit_frame *ns = realloc(st, sizeof(*st) * (size_t)cap * 2);
				if (!ns) {
					emit_fail(em, "out of memory");
					break;
				}
				st = ns;
				cap *= 2;
				f = &st[n - 1];
			}
			f->step++;
			frame_init(&st[n++], cblock, child, ci, em->g->nodes[child].rank, cpred);
			continue;
		}
		/* the frame is complete: memoise its value and hand it to the parent */
		if (!e)
			break;
		memo_add(em, f->node, u->rank, f->idx, f->pred, e);
		n--;
		if (n == 0)
			r = e;
		else
			st[n - 1].a[st[n - 1].step - 1] = e;
	}
	free(st);
	return em->error ? NULL : r;
}

tinyc_gstmt *tinyc_emit_store(tinyc_emit *em, int buf, tinyc_gexpr *const *idx,
			      tinyc_gexpr *value, tinyc_gexpr *pred)
{
	tinyc_gkernel *k = em->k;
	const tinyc_sbuf *b = &em->s->bufs[buf];
	if (!value)
		return NULL;
	tinyc_gexpr *v = value;
	if (v->dtype != b->dtype)
		v = tinyc_gx_cast(k, b->dtype, v);
	return tinyc_gs_store(k, em->buf_param[buf], tinyc_emit_buf_offset(em, buf, idx), v, pred);
}
