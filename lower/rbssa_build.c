/* UOp DAG + IndexBook -> RB-SSA (seed 002 §3.2), the §3.3 IndexBook cross-check, and the
 * "rbssa" pass.
 *
 * The builder walks the verified graph in order and emits, per node, the RB-SSA
 * instruction of seed §3.2's vocabulary, keeping tinygrad's ref-compat order visible:
 *
 *   BUFFER -> read          RESHAPE -> reshape        PERMUTE -> transpose
 *   EXPAND -> broadcast_in_dim                         PAD -> pad   SHRINK -> slice
 *   FLIP -> reverse         CONTIGUOUS -> materialize CAST -> cast BITCAST -> bitcast
 *   CONST -> constant       CMPLT/CMPNE/CMPEQ -> compare lt/ne/eq   WHERE -> select
 *   unary and binary ops -> their lower-case mnemonics (FDIV -> div)
 *   REDUCE -> reduce_sum / reduce_max / reduce_prod with init and acc dtype
 *   OUTPUT -> yield
 *
 * An elementwise operand whose shape differs from the result's (tinygrad's right-aligned
 * broadcasting) first goes through an explicit broadcast_in_dim to the result shape, so a
 * matmul reads reshape -> transpose -> broadcast_in_dim -> mul -> reduce_sum.  The IndexBook
 * supplies the axis names (read, reduce and yield carry them, the header lists the yields'
 * parallel axes and the reduced axes); its reduce_axes are checked against the RB-SSA
 * reduces' dims (tinyc_rbssa_check_indexbook, seed §3.3).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/rbssa.h"
#include "lower/lower.h"

/* Builder state. */
typedef struct rbb {
	tinyc_ctx *ctx;			/* diagnostics */
	const tinyc_graph *g;		/* the graph */
	const tinyc_indexbook *ib;	/* its IndexBook */
	tinyc_rbssa *f;			/* the function being built */
	int *val;			/* per UOp node: its RB-SSA value, -1 none */
} rbb;

/* The RB-SSA op of an elementwise UOp (compare's predicate in *pred), TINYC_RB_NONE. */
static tinyc_rb_op ewise_op(tinyc_op op, tinyc_rb_pred *pred)
{
	switch (op) {
	case TINYC_OP_CMPLT: *pred = TINYC_RB_LT; return TINYC_RB_COMPARE;
	case TINYC_OP_CMPNE: *pred = TINYC_RB_NE; return TINYC_RB_COMPARE;
	case TINYC_OP_CMPEQ: *pred = TINYC_RB_EQ; return TINYC_RB_COMPARE;
	default: return tinyc_rb_op_of_uop(op);
	}
}

/* Append an instruction lowering UOp node n with n's dtype and shape; its index or -1. */
static int emit(rbb *s, tinyc_rb_op op, int n)
{
	const tinyc_uop *u = &s->g->nodes[n];
	int i = tinyc_rbssa_add(s->ctx, s->f, op, u->dtype, u->rank, u->shape);
	if (i < 0)
		return -1;
	s->f->inst[i].uop = n;
	s->f->inst[i].loc = u->loc;
	return i;
}

/* Copy the IndexBook names of node n's first `count` axes into names[]. */
static int copy_axis_names(rbb *s, int n, int count, char **names)
{
	const tinyc_ibval *v = &s->ib->val[n];
	for (int d = 0; d < count && d < v->naxes; d++)
		if (v->axes[d].name && !(names[d] = tinyc_strdup(s->ctx, v->axes[d].name)))
			return -1;
	return 0;
}

/* A read's or a yield's buffer facts from node n: its name, its strides if given, the
 * IndexBook names of its axes. */
static int set_buffer_info(rbb *s, tinyc_rb_inst *in, int n)
{
	const tinyc_uop *u = &s->g->nodes[n];
	if (!(in->name = tinyc_strdup(s->ctx, u->name ? u->name : "")))
		return -1;
	if (u->strides) {
		in->has_strides = 1;
		memcpy(in->strides, u->strides, sizeof(tinyc_dim) * (size_t)u->rank);
	}
	return copy_axis_names(s, n, u->rank, in->axis);
}

/* The value x broadcast to node n's shape: x itself when the shapes agree (and !force),
 * else a broadcast_in_dim whose dims are the result dims x supplies (right-aligned). */
static int broadcast_to(rbb *s, int x, int n, int force)
{
	const tinyc_uop *u = &s->g->nodes[n];
	const tinyc_rb_inst *xi = &s->f->inst[x];
	int r = u->rank, p = xi->rank, same = p == r;
	for (int d = 0; same && d < r; d++)
		same = tinyc_rbssa_dim_equal(s->f, xi->shape[d], u->shape[d]);
	if (same && !force)
		return x;
	if (p > r)
		return tinyc_error_at(s->ctx, s->g->src, u->loc, "BroadcastMismatch",
				      "an operand of rank %d does not broadcast to rank %d", p, r);
	int dims[TINYC_MAX_RANK], nd = 0;
	for (int d = r - p; d < r; d++) {
		tinyc_dim od = xi->shape[d - (r - p)];
		if (tinyc_rbssa_dim_equal(s->f, od, u->shape[d])) {
			dims[nd++] = d;
		} else if (!tinyc_rbssa_dim_is1(s->f, od)) {
			tinyc_buf a = {0}, b = {0};
			tinyc_print_shape(s->g, p, xi->shape, &a);
			tinyc_print_shape(s->g, r, u->shape, &b);
			tinyc_error_at(s->ctx, s->g->src, u->loc, "BroadcastMismatch",
				       "%s does not broadcast to %s at axis %d (bind the symbols at "
				       "compile time if they are 1)", a.data ? a.data : "[]",
				       b.data ? b.data : "[]", d - r);
			tinyc_buf_free(&a);
			tinyc_buf_free(&b);
			return -1;
		}
	}
	int i = emit(s, TINYC_RB_BROADCAST_IN_DIM, n);
	if (i < 0)
		return -1;
	tinyc_rb_inst *in = &s->f->inst[i];
	in->dtype = s->f->inst[x].dtype;
	in->args[0] = x;
	in->ndims = nd;
	memcpy(in->dims, dims, sizeof(int) * (size_t)nd);
	return i;
}

/* Normalise and sort a list of axes of rank r (duplicates dropped); count, or -1. */
static int norm_axes(const int64_t *axes, int n, int r, int *out)
{
	char seen[TINYC_MAX_RANK] = {0};
	for (int k = 0; k < n; k++) {
		int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
		if (a < 0 || a >= r)
			return -1;
		seen[a] = 1;
	}
	int m = 0;
	for (int d = 0; d < r; d++)
		if (seen[d])
			out[m++] = d;
	return m;
}

/* The initial value of a reduce with op r accumulating in acc. */
static void set_init(tinyc_rb_inst *in, tinyc_redop r, tinyc_dtype acc)
{
	in->init_is_float = tinyc_dtype_is_float(acc);
	if (in->init_is_float) {
		in->init_f = r == TINYC_RED_ADD ? 0.0 : r == TINYC_RED_MUL ? 1.0 : -HUGE_VAL;
		return;
	}
	in->init_i = r == TINYC_RED_ADD ? 0 : r == TINYC_RED_MUL ? 1 : 0;
	if (r == TINYC_RED_MAX && acc != TINYC_BOOL && tinyc_dtype_is_signed(acc)) {
		int bits = 8 * tinyc_dtype_size(acc);
		in->init_i = bits == 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1));
	}
}

/* Emit the instructions of node n. */
static int build_node(rbb *s, int n)
{
	const tinyc_uop *u = &s->g->nodes[n];
	int x = u->nsrc > 0 ? s->val[u->src[0]] : -1;
	int i;
	tinyc_rb_inst *in;
	switch (u->op) {
	case TINYC_OP_BUFFER:
		if ((i = emit(s, TINYC_RB_READ, n)) < 0)
			return -1;
		in = &s->f->inst[i];
		in->slot = u->slot;
		if (set_buffer_info(s, in, n) < 0)
			return -1;
		break;
	case TINYC_OP_CONST:
		if ((i = emit(s, TINYC_RB_CONSTANT, n)) < 0)
			return -1;
		in = &s->f->inst[i];
		in->lit_is_float = u->lit.kind == TINYC_LIT_FLOAT;
		in->lit_f = u->lit.f;
		in->lit_i = u->lit.i;
		if (u->lit.text && !(in->lit_text = tinyc_strdup(s->ctx, u->lit.text)))
			return -1;
		break;
	case TINYC_OP_RESHAPE:
	case TINYC_OP_PERMUTE:
	case TINYC_OP_PAD:
	case TINYC_OP_SHRINK:
	case TINYC_OP_FLIP: {
		tinyc_rb_op op = u->op == TINYC_OP_RESHAPE ? TINYC_RB_RESHAPE
				 : u->op == TINYC_OP_PERMUTE ? TINYC_RB_TRANSPOSE
				 : u->op == TINYC_OP_PAD ? TINYC_RB_PAD
				 : u->op == TINYC_OP_SHRINK ? TINYC_RB_SLICE : TINYC_RB_REVERSE;
		if ((i = emit(s, op, n)) < 0)
			return -1;
		in = &s->f->inst[i];
		in->args[0] = x;
		if (op == TINYC_RB_TRANSPOSE) {
			in->ndims = u->naxes < TINYC_MAX_RANK ? u->naxes : TINYC_MAX_RANK;
			for (int k = 0; k < in->ndims; k++)
				in->dims[k] = (int)u->axes[k];
		} else if (op == TINYC_RB_REVERSE) {
			if ((in->ndims = norm_axes(u->axes, u->naxes, u->rank, in->dims)) < 0)
				return tinyc_error_at(s->ctx, s->g->src, u->loc, "InvalidAttribute",
						      "FLIP axis out of range");
		} else if (op != TINYC_RB_RESHAPE) {
			for (int k = 0; k < u->npairs && k < TINYC_MAX_RANK; k++) {
				in->lo[k] = u->pairs[k][0];
				in->hi[k] = u->pairs[k][1];
			}
		}
		break;
	}
	case TINYC_OP_EXPAND:
		if ((i = broadcast_to(s, x, n, 1)) < 0)
			return -1;
		break;
	case TINYC_OP_REDUCE: {
		int r = s->g->nodes[u->src[0]].rank;
		if ((i = emit(s, TINYC_RB_REDUCE, n)) < 0)
			return -1;
		in = &s->f->inst[i];
		in->args[0] = x;
		if ((in->ndims = norm_axes(u->axes, u->naxes, r, in->dims)) < 0)
			return tinyc_error_at(s->ctx, s->g->src, u->loc, "InvalidAttribute",
					      "REDUCE axis out of range");
		in->redop = u->redop;
		in->acc = u->acc != TINYC_DTYPE_NONE ? u->acc : u->dtype;
		set_init(in, u->redop, in->acc);
		if (copy_axis_names(s, n, r, in->axis) < 0)
			return -1;
		break;
	}
	case TINYC_OP_OUTPUT:
		if ((i = emit(s, TINYC_RB_YIELD, n)) < 0)
			return -1;
		in = &s->f->inst[i];
		in->args[0] = x;
		if (set_buffer_info(s, in, n) < 0)
			return -1;
		break;
	default: {
		tinyc_rb_pred pred = TINYC_RB_LT;
		tinyc_rb_op op = ewise_op(u->op, &pred);
		int args[3], nargs = u->nsrc;
		int relu_x = tinyc_uop_relu_operand(s->g, n);
		int respelled = relu_x >= 0 && u->op != TINYC_OP_RELU;
		if (respelled) {	/* WHERE(CMPLT(0,x),x,0), MAX(x,0): relu */
			op = TINYC_RB_RELU;
			nargs = 1;
			if ((args[0] = broadcast_to(s, s->val[relu_x], n, 0)) < 0)
				return -1;
		}
		if (op == TINYC_RB_NONE)
			return tinyc_error_at(s->ctx, s->g->src, u->loc, "UnsupportedOp",
					      "%s has no RB-SSA form", tinyc_op_info(u->op)->name);
		for (int k = 0; k < nargs && !respelled; k++)	/* explicit broadcasts first */
			if ((args[k] = broadcast_to(s, s->val[u->src[k]], n, 0)) < 0)
				return -1;
		if ((i = emit(s, op, n)) < 0)
			return -1;
		in = &s->f->inst[i];
		in->pred = pred;
		for (int k = 0; k < nargs; k++)
			in->args[k] = args[k];
		break;
	}
	}
	s->val[n] = i;
	return 0;
}

/* Add an axis to the header unless one of the same id is there; ids[] tracks them. */
static int header_axis(rbb *s, int reduce, const tinyc_axis *a, int *ids, int *nids)
{
	for (int k = 0; k < *nids; k++)
		if (ids[k] == a->id)
			return 0;
	ids[(*nids)++] = a->id;
	return tinyc_rbssa_add_axis(s->ctx, s->f, reduce, a->name, a->size);
}

/* The header: the yields' iter axes (parallel), then the reduced axes, each once, in node
 * order. */
static int build_header(rbb *s)
{
	int *ids = tinyc_calloc(s->ctx, (size_t)s->ib->naxis_ids + 1, sizeof(int));
	int nids = 0, rc = 0;
	if (!ids)
		return -1;
	for (int n = 0; n < s->g->n && !rc; n++) {
		const tinyc_ibval *v = &s->ib->val[n];
		if (s->g->nodes[n].op != TINYC_OP_OUTPUT)
			continue;
		for (int d = 0; d < v->naxes && !rc && nids < s->ib->naxis_ids; d++)
			if (v->axes[d].kind == TINYC_AXIS_ITER)	/* size-1 axes are not parallel */
				rc = header_axis(s, 0, &v->axes[d], ids, &nids);
	}
	nids = 0;
	for (int n = 0; n < s->g->n && !rc; n++) {
		const tinyc_ibval *v = &s->ib->val[n];
		if (s->g->nodes[n].op != TINYC_OP_REDUCE)
			continue;
		for (int k = 0; k < v->nreduce && !rc && nids < s->ib->naxis_ids; k++)
			rc = header_axis(s, 1, &v->axes[v->reduce_axes[k]], ids, &nids);
	}
	free(ids);
	return rc;
}

/* Build the RB-SSA function of a verified graph (see lower.h). */
tinyc_rbssa *tinyc_rbssa_build(tinyc_ctx *ctx, const tinyc_graph *g, const tinyc_bindings *b,
			       const tinyc_indexbook *ib)
{
	if (!g)
		return NULL;
	tinyc_indexbook *own = NULL;
	if (!ib && !(ib = own = tinyc_indexbook_build(ctx, g, b)))
		return NULL;
	if (ib->n != g->n) {
		tinyc_indexbook_free(own);
		tinyc_error(ctx, "InvalidArgument", "the IndexBook is not the graph's");
		return NULL;
	}
	rbb s = {ctx, g, ib, NULL, NULL};
	s.f = tinyc_rbssa_alloc(ctx, g, b);
	s.val = tinyc_calloc(ctx, (size_t)(g->n ? g->n : 1), sizeof(int));
	int rc = s.f && s.val ? 0 : -1;
	for (int n = 0; n < g->n && !rc; n++) {
		const tinyc_uop *u = &g->nodes[n];
		s.val[n] = -1;
		for (int k = 0; k < u->nsrc && !rc; k++)
			if (u->src[k] < 0 || u->src[k] >= n || s.val[u->src[k]] < 0)
				rc = tinyc_error_at(ctx, g->src, u->loc, "InvalidGraph", "%%%s: an "
						    "operand is not an earlier value", u->id);
		if (!rc)
			rc = build_node(&s, n);
	}
	if (!rc)
		rc = build_header(&s);
	free(s.val);
	tinyc_indexbook_free(own);
	if (rc < 0) {
		tinyc_rbssa_free(s.f);
		return NULL;
	}
	return s.f;
}

/* Seed §3.3: every reduce reduces exactly the IndexBook's reduce_axes of its REDUCE node. */
int tinyc_rbssa_check_indexbook(tinyc_ctx *ctx, const tinyc_rbssa *f, const tinyc_indexbook *ib)
{
	int bad = 0;
	if (!f || !ib)
		return tinyc_error(ctx, "InvalidArgument", "no RB-SSA function or IndexBook");
	for (int i = 0; i < f->n; i++) {
		const tinyc_rb_inst *in = &f->inst[i];
		if (in->op != TINYC_RB_REDUCE)
			continue;
		const tinyc_ibval *v = in->uop >= 0 && in->uop < ib->n ? &ib->val[in->uop] : NULL;
		int ok = v && v->nreduce == in->ndims && ib->g &&
			 ib->g->nodes[in->uop].op == TINYC_OP_REDUCE;
		for (int k = 0; ok && k < in->ndims; k++)
			ok = v->reduce_axes[k] == in->dims[k];
		if (ok)
			continue;
		tinyc_buf have = {0}, want = {0};
		for (int k = 0; k < in->ndims; k++)
			tinyc_buf_printf(&have, "%s%d", k ? "," : "", in->dims[k]);
		for (int k = 0; v && k < v->nreduce; k++)
			tinyc_buf_printf(&want, "%s%d:%s", k ? "," : "", v->reduce_axes[k],
					 v->axes[v->reduce_axes[k]].name);
		bad = tinyc_error_at(ctx, f->g ? f->g->src : NULL, in->loc, "ReduceAxesMismatch",
				     "RB-SSA %%%d reduces dims [%s], the IndexBook's reduce_axes are "
				     "[%s]", i, have.data ? have.data : "",
				     want.data ? want.data : (v ? "" : "none: not a REDUCE"));
		tinyc_buf_free(&have);
		tinyc_buf_free(&want);
	}
	return bad;
}

