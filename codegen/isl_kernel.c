/* MAP and ROWRED kernels through isl (PPCG-style binding, notes/isl.md).
 *
 * MAP: the statement S[i0..ir) writes one element of the kernel's value (reductions it
 * computes inline run as loops inside the statement, emit.c).  Its domain has the size
 * symbols as parameters; the schedule is one band over i, split so that the innermost
 * (up to) three dims form a band, which is tiled (tile loops count tiles, point loops start
 * at 0).  The tile band is bound to blocks with the filter { S : b = tile } (b = tile mod
 * 65535 where the grid may be too small, leaving a loop over the rest), the point band to
 * threads with { S : t = point mod blockDim }; a context node says 0 <= t < blockDim and
 * bounds b by the number of tiles.  isl's AST generator then produces the loop nest each
 * thread runs, and the AST is walked into GPU IR.
 *
 * ROWRED (one block per output element, the threads share its reduction): three statements,
 * I[i] (accumulator := identity), S[i, j] (accumulate the element at reduction index j)
 * and F[i] (reduce across the block, then thread 0 applies the rest of the expression and
 * stores), in sequence under a band over i bound to blocks (tile 1); S's band over j has
 * the filter { S : t = j_axis mod blockDim }, which isl turns into a strided loop.  F is
 * outside every thread-dependent condition, so its barriers are uniform.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/ast.h>
#include <isl/ast_build.h>
#include <isl/ctx.h>
#include <isl/id.h>
#include <isl/options.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include "codegen/gpu.h"

/* A name the AST may use, and the variable it stands for. */
typedef struct ast_name {
	char name[32];		/* isl's name */
	int var;		/* kernel variable */
} ast_name;

/* State of one kernel build. */
typedef struct kbuild {
	tinyc_ctx *ctx;
	const tinyc_schedule *s;
	const tinyc_skernel *sk;
	const tinyc_plan *p;
	tinyc_gkernel *k;
	tinyc_emit *em;
	isl_ctx *ictx;
	ast_name *names;	/* scope stack of AST names */
	int nnames, capnames;
	int rank;		/* dims of the domain (the value's rank, at least 1) */
	int real_rank;		/* the value's rank (0 for a scalar) */
	tinyc_dim dims[TINYC_MAX_RANK];	/* extents of the domain dims */
	/* ROWRED */
	int red;		/* the inline REDUCE node */
	int nj;			/* reduced axes */
	int jaxis[TINYC_MAX_RANK];	/* operand axis of each j dim */
	int jbind;		/* position (in j) of the axis the threads stride over */
	int path[256];		/* value, ..., red: the chain of nodes between them */
	int npath;
	int acc, tmp, shared;	/* accumulator, shuffle scratch, per-warp partials */
	tinyc_dtype acc_dt;	/* accumulator dtype (as the reference) */
	tinyc_dtype acd;	/* its compute dtype */
	tinyc_gexpr *result;	/* F: the block-reduced value (leaf hook) */
	unsigned char used[1024];	/* per graph symbol: an isl parameter of the domain */
	int failed;
} kbuild;

/* Report an isl failure. */
static int isl_fail(kbuild *b, const char *what)
{
	if (!b->failed) {
		const char *msg = b->ictx ? isl_ctx_last_error_msg(b->ictx) : NULL;
		tinyc_error(b->ctx, "IslError", "kernel %s: %s%s%s", b->k ? b->k->name : "?", what,
			    msg ? ": " : "", msg ? msg : "");
	}
	b->failed = 1;
	return -1;
}

/* Push an AST name. */
static int push_name(kbuild *b, const char *name, int var)
{
	if (b->nnames == b->capnames) {
		int nc = b->capnames ? b->capnames * 2 : 32;
		ast_name *nn = realloc(b->names, sizeof(*nn) * (size_t)nc);
		if (!nn)
			return -1;
		b->names = nn;
		b->capnames = nc;
	}
	snprintf(b->names[b->nnames].name, sizeof(b->names[0].name), "%s", name);
	b->names[b->nnames++].var = var;
	return 0;
}

/* The variable of an AST name (innermost binding), or -1. */
static int find_name(kbuild *b, const char *name)
{
	for (int i = b->nnames - 1; i >= 0; i--)
		if (!strcmp(b->names[i].name, name))
			return b->names[i].var;
	return -1;
}

/* ------------------------------------------------------------- isl input ---- */

/* Append the isl spelling of a dim extent ("64" or "p3") to out. */
static void isl_dim(kbuild *b, const tinyc_dim *d, tinyc_buf *out)
{
	int64_t v = tinyc_sched_dim(b->s, d);
	if (v >= 0)
		tinyc_buf_printf(out, "%" PRId64, v);
	else
		tinyc_buf_printf(out, "p%d", d->sym);
}

/* Mark the unbound symbols the domain uses (b->used). */
static void mark_used(kbuild *b)
{
	const tinyc_graph *g = b->s->g;
	memset(b->used, 0, sizeof(b->used));
	for (int d = 0; d < b->rank; d++)
		if (b->dims[d].sym >= 0 && b->dims[d].sym < 1024 && tinyc_sched_dim(b->s, &b->dims[d]) < 0)
			b->used[b->dims[d].sym] = 1;
	if (b->red >= 0) {
		const tinyc_uop *in = &g->nodes[g->nodes[b->red].src[0]];
		for (int j = 0; j < b->nj; j++) {
			const tinyc_dim *d = &in->shape[b->jaxis[j]];
			if (d->sym >= 0 && d->sym < 1024 && tinyc_sched_dim(b->s, d) < 0)
				b->used[d->sym] = 1;
		}
	}
}

/* The parameter list "[p0, p2, bx, tx]": the unbound symbols used, plus extra names. */
static void isl_params(kbuild *b, tinyc_buf *out, const char *extra)
{
	int first = 1;
	tinyc_buf_putc(out, '[');
	for (int i = 0; i < b->s->g->nsym && i < 1024; i++)
		if (b->used[i]) {
			tinyc_buf_printf(out, "%sp%d", first ? "" : ", ", i);
			first = 0;
		}
	if (extra && *extra)
		tinyc_buf_printf(out, "%s%s", first ? "" : ", ", extra);
	tinyc_buf_puts(out, "]");
}

/* "i0, i1, ..." */
static void isl_iters(tinyc_buf *out, const char *v, int n)
{
	for (int d = 0; d < n; d++)
		tinyc_buf_printf(out, "%s%s%d", d ? ", " : "", v, d);
}

/* "0 <= i0 < D0 and ..." */
static void isl_bounds(kbuild *b, tinyc_buf *out, const char *v, int n, const tinyc_dim *dims)
{
	for (int d = 0; d < n; d++) {
		tinyc_buf_printf(out, "%s0 <= %s%d < ", d ? " and " : "", v, d);
		isl_dim(b, &dims[d], out);
	}
	if (!n)
		tinyc_buf_puts(out, "true");
}

/* Filter { stmts : name_q = member_q [mod m_q] } binding band members to parameters. */
static isl_union_set *bind_filter(isl_schedule_node *band, int n, const int *member,
				  const char *const *pname, const int64_t *mod)
{
	isl_ctx *ctx = isl_schedule_node_get_ctx(band);
	isl_multi_union_pw_aff *mupa = isl_schedule_node_band_get_partial_schedule(band);
	isl_union_set *dom = isl_schedule_node_get_universe_domain(band);
	isl_union_set *filter = isl_union_set_copy(dom);
	for (int i = 0; i < n; i++) {
		isl_union_pw_aff *upa = isl_multi_union_pw_aff_get_union_pw_aff(mupa, member[i]);
		if (mod && mod[i] > 0)
			upa = isl_union_pw_aff_mod_val(upa, isl_val_int_from_si(ctx, mod[i]));
		isl_union_pw_aff *par = isl_union_pw_aff_param_on_domain_id(
			isl_union_set_copy(dom), isl_id_alloc(ctx, pname[i], NULL));
		upa = isl_union_pw_aff_sub(upa, par);
		filter = isl_union_set_intersect(filter, isl_union_pw_aff_zero_union_set(upa));
	}
	isl_union_set_free(dom);
	isl_multi_union_pw_aff_free(mupa);
	return filter;
}

/* ------------------------------------------------------------ AST -> GPU IR ---- */

static tinyc_gexpr *ast_expr(kbuild *b, isl_ast_expr *e);

/* Fold an n-ary isl operator over its arguments. */
static tinyc_gexpr *ast_fold(kbuild *b, isl_ast_expr *e, tinyc_gx_op op)
{
	isl_size n = isl_ast_expr_op_get_n_arg(e);
	tinyc_gexpr *acc = NULL;
	for (int i = 0; i < n; i++) {
		isl_ast_expr *a = isl_ast_expr_op_get_arg(e, i);
		tinyc_gexpr *x = ast_expr(b, a);
		isl_ast_expr_free(a);
		if (!x)
			return NULL;
		acc = acc ? tinyc_gx_binary(b->k, op, acc, x) : x;
	}
	return acc;
}

/* An isl AST expression as GPU IR (integers in the kernel's index dtype). */
static tinyc_gexpr *ast_expr(kbuild *b, isl_ast_expr *e)
{
	tinyc_gkernel *k = b->k;
	tinyc_dtype it = k->index_dtype;
	switch (isl_ast_expr_get_type(e)) {
	case isl_ast_expr_int: {
		isl_val *v = isl_ast_expr_get_val(e);
		if (!v || !isl_val_is_int(v)) {
			isl_val_free(v);
			return NULL;
		}
		int64_t x = isl_val_get_num_si(v);
		isl_val_free(v);
		return tinyc_gx_int(k, it, x);
	}
	case isl_ast_expr_id: {
		isl_id *id = isl_ast_expr_get_id(e);
		const char *name = isl_id_get_name(id);
		int v = name ? find_name(b, name) : -1;
		isl_id_free(id);
		if (v < 0) {
			tinyc_error(b->ctx, "CodegenError", "kernel %s: unknown AST name %s", k->name,
				    name ? name : "?");
			b->failed = 1;
			return NULL;
		}
		tinyc_gexpr *x = tinyc_gx_var(k, v);
		return x && x->dtype != it ? tinyc_gx_cast(k, it, x) : x;
	}
	case isl_ast_expr_op:
		break;
	default:
		return NULL;
	}
	enum isl_ast_expr_op_type t = isl_ast_expr_op_get_type(e);
	isl_size n = isl_ast_expr_op_get_n_arg(e);
	tinyc_gexpr *a[3] = {0};
	if (t != isl_ast_expr_op_max && t != isl_ast_expr_op_min) {
		for (int i = 0; i < n && i < 3; i++) {
			isl_ast_expr *x = isl_ast_expr_op_get_arg(e, i);
			a[i] = ast_expr(b, x);
			isl_ast_expr_free(x);
			if (!a[i])
				return NULL;
		}
	}
	switch (t) {
	case isl_ast_expr_op_and:
	case isl_ast_expr_op_and_then: return tinyc_gx_binary(k, TINYC_GX_LAND, a[0], a[1]);
	case isl_ast_expr_op_or:
	case isl_ast_expr_op_or_else: return tinyc_gx_binary(k, TINYC_GX_LOR, a[0], a[1]);
	case isl_ast_expr_op_max: return ast_fold(b, e, TINYC_GX_MAX);
	case isl_ast_expr_op_min: return ast_fold(b, e, TINYC_GX_MIN);
	case isl_ast_expr_op_minus: return tinyc_gx_unary(k, TINYC_GX_NEG, a[0]);
	case isl_ast_expr_op_add: return tinyc_gx_binary(k, TINYC_GX_ADD, a[0], a[1]);
	case isl_ast_expr_op_sub: return tinyc_gx_binary(k, TINYC_GX_SUB, a[0], a[1]);
	case isl_ast_expr_op_mul: return tinyc_gx_binary(k, TINYC_GX_MUL, a[0], a[1]);
	case isl_ast_expr_op_div:
	case isl_ast_expr_op_pdiv_q: return tinyc_gx_binary(k, TINYC_GX_DIV, a[0], a[1]);
	case isl_ast_expr_op_fdiv_q:
		return tinyc_gx_binary(k, tinyc_emit_is_nonneg(b->em, a[0]) ? TINYC_GX_DIV
									   : TINYC_GX_FLOORDIV, a[0], a[1]);
	case isl_ast_expr_op_pdiv_r:
	case isl_ast_expr_op_zdiv_r: return tinyc_gx_binary(k, TINYC_GX_MOD, a[0], a[1]);
	case isl_ast_expr_op_cond:
	case isl_ast_expr_op_select: return tinyc_gx_select(k, a[0], a[1], a[2]);
	case isl_ast_expr_op_eq: return tinyc_gx_binary(k, TINYC_GX_EQ, a[0], a[1]);
	case isl_ast_expr_op_le: return tinyc_gx_binary(k, TINYC_GX_LE, a[0], a[1]);
	case isl_ast_expr_op_lt: return tinyc_gx_binary(k, TINYC_GX_LT, a[0], a[1]);
	case isl_ast_expr_op_ge: return tinyc_gx_binary(k, TINYC_GX_GE, a[0], a[1]);
	case isl_ast_expr_op_gt: return tinyc_gx_binary(k, TINYC_GX_GT, a[0], a[1]);
	default:
		tinyc_error(b->ctx, "CodegenError", "kernel %s: unexpected isl AST operator %d",
			    k->name, (int)t);
		b->failed = 1;
		return NULL;
	}
}

static int user_stmt(kbuild *b, tinyc_gstmt *block, const char *name, tinyc_gexpr **args,
		     int nargs);

static int ast_node(kbuild *b, isl_ast_node *node, tinyc_gstmt *block);

/* Walk a list of AST nodes into block. */
static int ast_list(kbuild *b, isl_ast_node_list *list, tinyc_gstmt *block)
{
	int rc = 0;
	isl_size n = isl_ast_node_list_n_ast_node(list);
	for (int i = 0; i < n && rc == 0; i++) {
		isl_ast_node *c = isl_ast_node_list_get_at(list, i);
		rc = ast_node(b, c, block);
		isl_ast_node_free(c);
	}
	return rc;
}

/* The unroll hint of a loop with step inc: a loop striding by a block extent over a tile
 * (MAP: tile / block points per thread) is unrolled that many times, a ROWRED thread's
 * strided walk over the reduction 4 times, so that each thread keeps several independent
 * loads in flight (one 4-byte load per thread leaves HBM half idle). */
static int loop_unroll(kbuild *b, const tinyc_gexpr *inc)
{
	if (!inc || inc->op != TINYC_GX_INT)
		return 0;
	const tinyc_plan *p = b->p;
	if (b->red >= 0)
		return inc->ival == p->block[0] && p->block[0] > 1 ? 4 : 0;
	for (int i = 0; i < p->ntile; i++) {
		int64_t r = p->block[i] > 0 ? p->tile[i] / p->block[i] : 0;
		if (p->block[i] > 1 && inc->ival == p->block[i] && r > 1)
			return r > 8 ? 8 : (int)r;
	}
	return 0;
}

/* Walk a for node. */
static int ast_for(kbuild *b, isl_ast_node *node, tinyc_gstmt *block)
{
	tinyc_gkernel *k = b->k;
	isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
	isl_id *id = isl_ast_expr_get_id(it);
	char name[32];
	snprintf(name, sizeof(name), "%s", isl_id_get_name(id));
	isl_id_free(id);
	isl_ast_expr_free(it);
	isl_ast_expr *init_e = isl_ast_node_for_get_init(node);
	tinyc_gexpr *init = ast_expr(b, init_e);
	isl_ast_expr_free(init_e);
	int var = tinyc_gk_reg(k, name, k->index_dtype);
	if (!init || var < 0)
		return -1;
	tinyc_emit_set_nonneg(b->em, var);
	int mark = b->nnames;
	if (push_name(b, name, var) < 0)
		return -1;
	tinyc_gstmt *body = tinyc_gs_block(k);
	isl_ast_node *bn = isl_ast_node_for_get_body(node);
	int rc;
	if (isl_ast_node_for_is_degenerate(node) == isl_bool_true) {
		rc = tinyc_gs_append(k, body, tinyc_gs_decl(k, var, init));
		rc = rc < 0 ? -1 : ast_node(b, bn, body);
		isl_ast_node_free(bn);
		b->nnames = mark;
		return rc < 0 ? -1 : tinyc_gs_append(k, block, body);
	}
	isl_ast_expr *ce = isl_ast_node_for_get_cond(node), *ie = isl_ast_node_for_get_inc(node);
	tinyc_gexpr *cond = ast_expr(b, ce), *inc = ast_expr(b, ie);
	isl_ast_expr_free(ce);
	isl_ast_expr_free(ie);
	rc = cond && inc ? ast_node(b, bn, body) : -1;
	isl_ast_node_free(bn);
	b->nnames = mark;
	if (rc < 0)
		return -1;
	return tinyc_gs_append(k, block, tinyc_gs_for(k, var, init, cond, inc, loop_unroll(b, inc), body));
}

/* Walk one AST node, appending its statements to block. */
static int ast_node(kbuild *b, isl_ast_node *node, tinyc_gstmt *block)
{
	tinyc_gkernel *k = b->k;
	if (b->failed || !node)
		return -1;
	switch (isl_ast_node_get_type(node)) {
	case isl_ast_node_for:
		return ast_for(b, node, block);
	case isl_ast_node_if: {
		isl_ast_expr *ce = isl_ast_node_if_get_cond(node);
		tinyc_gexpr *cond = ast_expr(b, ce);
		isl_ast_expr_free(ce);
		tinyc_gstmt *then = tinyc_gs_block(k), *els = NULL;
		isl_ast_node *tn = isl_ast_node_if_get_then_node(node);
		int rc = cond ? ast_node(b, tn, then) : -1;
		isl_ast_node_free(tn);
		if (rc == 0 && isl_ast_node_if_has_else_node(node) == isl_bool_true) {
			isl_ast_node *en = isl_ast_node_if_get_else_node(node);
			els = tinyc_gs_block(k);
			rc = ast_node(b, en, els);
			isl_ast_node_free(en);
		}
		if (rc < 0)
			return -1;
		return tinyc_gs_append(k, block, tinyc_gs_if(k, cond, then, els));
	}
	case isl_ast_node_block: {
		isl_ast_node_list *list = isl_ast_node_block_get_children(node);
		int rc = ast_list(b, list, block);
		isl_ast_node_list_free(list);
		return rc;
	}
	case isl_ast_node_mark: {
		isl_ast_node *c = isl_ast_node_mark_get_node(node);
		int rc = ast_node(b, c, block);
		isl_ast_node_free(c);
		return rc;
	}
	case isl_ast_node_user: {
		isl_ast_expr *call = isl_ast_node_user_get_expr(node);
		isl_ast_expr *fn = isl_ast_expr_op_get_arg(call, 0);
		isl_id *id = isl_ast_expr_get_id(fn);
		char name[16];
		snprintf(name, sizeof(name), "%s", id ? isl_id_get_name(id) : "?");
		isl_id_free(id);
		isl_ast_expr_free(fn);
		isl_size n = isl_ast_expr_op_get_n_arg(call);
		tinyc_gexpr *args[2 * TINYC_MAX_RANK + 2];
		int rc = 0;
		for (int i = 1; i < n && i - 1 < 2 * TINYC_MAX_RANK + 2 && rc == 0; i++) {
			isl_ast_expr *a = isl_ast_expr_op_get_arg(call, i);
			if (!(args[i - 1] = ast_expr(b, a)))
				rc = -1;
			isl_ast_expr_free(a);
		}
		isl_ast_expr_free(call);
		if (rc < 0)
			return isl_fail(b, "AST expression");
		return user_stmt(b, block, name, args, n - 1);
	}
	default:
		return isl_fail(b, "unexpected AST node");
	}
}

/* ---------------------------------------------------------- statement bodies ---- */

/* The index of b->red from the value's index idx, through the chain b->path. */
static int red_index(kbuild *b, tinyc_gexpr *const *idx, tinyc_gexpr **out)
{
	const tinyc_graph *g = b->s->g;
	tinyc_gexpr *cur[TINYC_MAX_RANK], *nxt[TINYC_MAX_RANK];
	int rank = g->nodes[b->path[0]].rank;
	for (int d = 0; d < rank; d++)
		cur[d] = idx[d];
	for (int i = 0; i + 1 < b->npath; i++) {
		const tinyc_uop *u = &g->nodes[b->path[i]];
		int which = 0;
		for (int j = 0; j < u->nsrc; j++)
			if (u->src[j] == b->path[i + 1])
				which = j;
		tinyc_gexpr *guard;
		if (tinyc_emit_operand_index(b->em, b->path[i], which, cur, nxt, &guard) < 0)
			return -1;
		rank = g->nodes[b->path[i + 1]].rank;
		for (int d = 0; d < rank; d++)
			cur[d] = nxt[d];
	}
	for (int d = 0; d < rank; d++)
		out[d] = cur[d];
	return 0;
}

/* Leaf hook of F: the block-reduced accumulator stands for the REDUCE. */
static tinyc_gexpr *rowred_leaf(tinyc_emit *em, int node, tinyc_gexpr *const *idx, void *user)
{
	kbuild *b = user;
	(void)idx;
	(void)em;
	return node == b->red ? b->result : NULL;
}

/* ROWRED F: the block-wide reduction of acc, then the epilogue by thread 0. */
static int rowred_final(kbuild *b, tinyc_gstmt *block, tinyc_gexpr **idx)
{
	tinyc_gkernel *k = b->k;
	tinyc_emit *em = b->em;
	const tinyc_uop *r = &b->s->g->nodes[b->red];
	int T = b->p->block[0];
	int rc = 0;
	/* butterfly over the warp: every lane ends with the warp's total */
	for (int off = 16; off >= 1; off /= 2) {
		rc |= tinyc_gs_append(k, block, tinyc_gs_shfl(k, TINYC_GSHFL_XOR, b->tmp,
							     tinyc_gx_var(k, b->acc),
							     tinyc_gx_int(k, TINYC_INT, off), 32));
		rc |= tinyc_gs_append(k, block, tinyc_gs_assign(k, b->acc,
			tinyc_emit_red_combine(em, r->redop, tinyc_gx_var(k, b->acc), tinyc_gx_var(k, b->tmp))));
	}
	if (T > 32) {
		int nw = T / 32;
		tinyc_gexpr *lane = tinyc_gx_special(k, TINYC_GSP_LANE);
		tinyc_gexpr *warp = tinyc_gx_special(k, TINYC_GSP_WARP);
		tinyc_gexpr *lane0 = tinyc_gx_binary(k, TINYC_GX_EQ, lane, tinyc_gx_int(k, TINYC_INT, 0));
		rc |= tinyc_gs_append(k, block, tinyc_gs_store(k, b->shared, warp, tinyc_gx_var(k, b->acc), lane0));
		rc |= tinyc_gs_append(k, block, tinyc_gs_barrier(k));
		tinyc_gexpr *in = tinyc_gx_binary(k, TINYC_GX_LT, lane, tinyc_gx_int(k, TINYC_INT, nw));
		tinyc_gexpr *part = tinyc_gx_select(k, in, tinyc_gx_load(k, b->shared, lane, in),
						    tinyc_emit_red_identity(em, r->redop, b->acd));
		rc |= tinyc_gs_append(k, block, tinyc_gs_assign(k, b->acc, part));
		for (int off = 16; off >= 1; off /= 2) {
			if (off >= nw)
				continue;	/* lanes >= nw hold the identity */
			rc |= tinyc_gs_append(k, block, tinyc_gs_shfl(k, TINYC_GSHFL_XOR, b->tmp,
								     tinyc_gx_var(k, b->acc),
								     tinyc_gx_int(k, TINYC_INT, off), 32));
			rc |= tinyc_gs_append(k, block, tinyc_gs_assign(k, b->acc,
				tinyc_emit_red_combine(em, r->redop, tinyc_gx_var(k, b->acc), tinyc_gx_var(k, b->tmp))));
		}
		/* the partials may be overwritten by the next row only after everyone read them */
		rc |= tinyc_gs_append(k, block, tinyc_gs_barrier(k));
	}
	if (rc)
		return -1;
	/* thread 0: the rest of the expression, on the reduced value, and the store */
	tinyc_gstmt *epi = tinyc_gs_block(k);
	const tinyc_ibval *rv = &b->em->ib->val[b->red];
	tinyc_dtype acc_dt = rv->acc != TINYC_DTYPE_NONE ? rv->acc : r->dtype;
	tinyc_gexpr *res = tinyc_gx_var(k, b->acc);
	if (acc_dt != r->dtype) {	/* the reference converts the accumulator to the line's dtype */
		tinyc_dtype cd = tinyc_emit_compute_dtype(r->dtype);
		res = tinyc_dtype_is_16bit_float(r->dtype)
			      ? tinyc_gx_cast(k, TINYC_FLOAT, tinyc_gx_cast(k, r->dtype, res))
			      : r->dtype == TINYC_BOOL
					? tinyc_gx_binary(k, TINYC_GX_NE, res, tinyc_emit_red_identity(em, TINYC_RED_ADD, res->dtype))
					: tinyc_gx_cast(k, cd, res);
	} else if (tinyc_dtype_is_16bit_float(r->dtype)) {
		res = tinyc_gx_cast(k, TINYC_FLOAT, tinyc_gx_cast(k, r->dtype, res));
	}
	b->result = res;
	em->leaf = rowred_leaf;
	em->leaf_user = b;
	tinyc_emit_scope_enter(em);
	tinyc_gexpr *v = tinyc_emit_value(em, epi, b->sk->value, idx, NULL);
	tinyc_gstmt *st = tinyc_emit_store(em, b->sk->out_buf, idx, v, NULL);
	tinyc_emit_scope_leave(em);
	em->leaf = NULL;
	if (!st || tinyc_gs_append(k, epi, st) < 0)
		return -1;
	tinyc_gexpr *t0 = tinyc_gx_binary(k, TINYC_GX_EQ, tinyc_gx_special(k, TINYC_GSP_TID_X),
					  tinyc_gx_int(k, TINYC_INT, 0));
	return tinyc_gs_append(k, block, tinyc_gs_if(k, t0, epi, NULL));
}

/* Emit the GPU IR of user statement `name` at domain point args[0..nargs). */
static int user_stmt(kbuild *b, tinyc_gstmt *block, const char *name, tinyc_gexpr **args,
		     int nargs)
{
	tinyc_gkernel *k = b->k;
	tinyc_emit *em = b->em;
	tinyc_gexpr **idx = args;	/* the value's index (a scalar's dummy dim dropped) */
	int rc = 0;
	if (nargs < b->rank)
		return isl_fail(b, "user statement with too few arguments");
	if (!strcmp(name, "S") && b->red < 0) {	/* MAP */
		tinyc_gstmt *body = tinyc_gs_block(k);
		tinyc_emit_scope_enter(em);
		tinyc_gexpr *v = tinyc_emit_value(em, body, b->sk->value, idx, NULL);
		tinyc_gstmt *st = tinyc_emit_store(em, b->sk->out_buf, idx, v, NULL);
		tinyc_emit_scope_leave(em);
		if (!st || tinyc_gs_append(k, body, st) < 0)
			return -1;
		return tinyc_gs_append(k, block, body);
	}
	if (!strcmp(name, "I"))
		return tinyc_gs_append(k, block, tinyc_gs_assign(k, b->acc,
			tinyc_emit_red_identity(em, b->s->g->nodes[b->red].redop, b->acd)));
	if (!strcmp(name, "S")) {	/* ROWRED accumulation */
		const tinyc_graph *g = b->s->g;
		const tinyc_uop *r = &g->nodes[b->red];
		const tinyc_ibval *rv = &em->ib->val[b->red];
		tinyc_gexpr *ridx[TINYC_MAX_RANK], *ax[TINYC_MAX_RANK] = {0};
		if (red_index(b, idx, ridx) < 0)
			return -1;
		for (int d = 0; d < rv->rank; d++)
			if (rv->out[d]->op == TINYC_IX_AXIS)
				ax[rv->out[d]->var] = ridx[d];
		for (int j = 0; j < b->nj; j++)
			ax[b->jaxis[j]] = args[b->rank + j];
		tinyc_gstmt *body = tinyc_gs_block(k);
		tinyc_emit_scope_enter(em);
		tinyc_gexpr *x = tinyc_emit_value(em, body, r->src[0], ax, NULL);
		tinyc_dtype in_dt = g->nodes[r->src[0]].dtype;
		if (x && in_dt != b->acc_dt) {
			if (b->acc_dt == TINYC_BOOL)
				x = tinyc_gx_binary(k, TINYC_GX_NE, x, tinyc_emit_red_identity(em, TINYC_RED_ADD, x->dtype));
			else if (tinyc_dtype_is_16bit_float(b->acc_dt))
				x = tinyc_gx_cast(k, TINYC_FLOAT, tinyc_gx_cast(k, b->acc_dt, x));
			else
				x = tinyc_gx_cast(k, b->acd, x);
		}
		rc = tinyc_gs_append(k, body, tinyc_gs_assign(k, b->acc,
			tinyc_emit_red_combine(em, r->redop, tinyc_gx_var(k, b->acc), x)));
		tinyc_emit_scope_leave(em);
		return rc < 0 ? -1 : tinyc_gs_append(k, block, body);
	}
	if (!strcmp(name, "F")) {
		tinyc_gstmt *body = tinyc_gs_block(k);
		if (rowred_final(b, body, idx) < 0)
			return -1;
		return tinyc_gs_append(k, block, body);
	}
	return isl_fail(b, "unknown user statement");
}

/* ------------------------------------------------------------ the schedule ---- */

/* Grid dim i (x = 0) is bound to domain dim rank-1-i; its AST names. */
static const char *const bname[3] = {"bx", "by", "bz"};
static const char *const tname[3] = {"tx", "ty", "tz"};
static const tinyc_gspecial bid[3] = {TINYC_GSP_BID_X, TINYC_GSP_BID_Y, TINYC_GSP_BID_Z};
static const tinyc_gspecial tid[3] = {TINYC_GSP_TID_X, TINYC_GSP_TID_Y, TINYC_GSP_TID_Z};

/* Build the schedule tree of the kernel (MAP or ROWRED), bound to blocks and threads. */
static isl_schedule *build_schedule(kbuild *b)
{
	const tinyc_plan *p = b->p;
	int rowred = b->red >= 0;
	int nb = p->ntile;		/* bound dims */
	int nout = b->rank - nb;	/* outer serial dims */
	int perm[TINYC_MAX_RANK], np = 0;	/* band member -> domain dim: unbound, then bound */
	for (int d = 0; d < b->rank; d++) {
		int bound = 0;
		for (int i = 0; i < nb; i++)
			bound |= p->bind_dim[i] == d;
		if (!bound)
			perm[np++] = d;
	}
	for (int i = nb - 1; i >= 0; i--)
		perm[np++] = p->bind_dim[i];
	tinyc_buf str = {0};
	/* the block and thread coordinates are parameters of every piece, so that the
	 * binding filters live in the same parameter space as the domain */
	char extra[128] = "";
	size_t el = 0;
	for (int i = 0; i < nb; i++)
		el += (size_t)snprintf(extra + el, sizeof(extra) - el, "%s%s", i ? ", " : "", bname[i]);
	for (int i = 0; i < 3; i++)
		if ((rowred && i == 0) || (!rowred && i < nb && p->block[i] > 1))
			el += (size_t)snprintf(extra + el, sizeof(extra) - el, ", %s", tname[i]);
	/* ---- domain */
	isl_params(b, &str, extra);
	tinyc_buf_puts(&str, " -> { ");
	if (rowred) {
		const tinyc_uop *in = &b->s->g->nodes[b->s->g->nodes[b->red].src[0]];
		tinyc_dim jd[TINYC_MAX_RANK];
		for (int j = 0; j < b->nj; j++)
			jd[j] = in->shape[b->jaxis[j]];
		const char *st[3] = {"I", "S", "F"};
		for (int s = 0; s < 3; s++) {
			tinyc_buf_printf(&str, "%s%s[", s ? "; " : "", st[s]);
			isl_iters(&str, "i", b->rank);
			if (s == 1 && b->nj) {
				tinyc_buf_puts(&str, ", ");
				isl_iters(&str, "j", b->nj);
			}
			tinyc_buf_puts(&str, "] : ");
			isl_bounds(b, &str, "i", b->rank, b->dims);
			if (s == 1 && b->nj) {
				tinyc_buf_puts(&str, " and ");
				isl_bounds(b, &str, "j", b->nj, jd);
			}
		}
	} else {
		tinyc_buf_puts(&str, "S[");
		isl_iters(&str, "i", b->rank);
		tinyc_buf_puts(&str, "] : ");
		isl_bounds(b, &str, "i", b->rank, b->dims);
	}
	tinyc_buf_puts(&str, " }");
	if (str.oom) {
		tinyc_buf_free(&str);
		return NULL;
	}
	isl_union_set *dom = isl_union_set_read_from_str(b->ictx, str.data);
	tinyc_buf_free(&str);
	if (!dom)
		return NULL;
	/* ---- the band over i (all statements) */
	str = (tinyc_buf){0};
	isl_params(b, &str, extra);
	tinyc_buf_puts(&str, " -> [");
	for (int q = 0; q < b->rank; q++) {
		int d = perm[q];
		tinyc_buf_printf(&str, "%s{ ", q ? ", " : "");
		const char *st[3] = {"I", "S", "F"};
		for (int s = rowred ? 0 : 1; s < (rowred ? 3 : 2); s++) {
			tinyc_buf_printf(&str, "%s%s[", s > (rowred ? 0 : 1) ? "; " : "", st[s]);
			isl_iters(&str, "i", b->rank);
			if (s == 1 && rowred && b->nj) {
				tinyc_buf_puts(&str, ", ");
				isl_iters(&str, "j", b->nj);
			}
			tinyc_buf_printf(&str, "] -> [(i%d)]", d);
		}
		tinyc_buf_puts(&str, " }");
	}
	tinyc_buf_puts(&str, "]");
	isl_multi_union_pw_aff *band = str.oom ? NULL
					       : isl_multi_union_pw_aff_read_from_str(b->ictx, str.data);
	tinyc_buf_free(&str);
	if (!band) {
		isl_union_set_free(dom);
		return NULL;
	}
	isl_schedule *sched = isl_schedule_insert_partial_schedule(isl_schedule_from_domain(dom), band);
	isl_schedule_node *node = isl_schedule_node_child(isl_schedule_get_root(sched), 0);
	isl_schedule_free(sched);
	if (nout > 0) {	/* outer dims stay serial loops */
		node = isl_schedule_node_band_split(node, nout);
		node = isl_schedule_node_child(node, 0);
	}
	/* ---- blocks (and, for MAP, the tiling and threads) */
	int member[3] = {0};
	const char *pn[3] = {NULL};
	int64_t mods[3] = {0};
	for (int q = 0; q < nb; q++) {
		int i = nb - 1 - q;	/* grid dim of band member q */
		member[q] = q;
		pn[q] = bname[i];
		mods[q] = p->grid_mod[i] ? (i == 0 ? INT64_C(2147483647) : 65535) : 0;
	}
	if (!rowred) {
		isl_multi_val *sizes = isl_multi_val_zero(isl_space_set_alloc(b->ictx, 0, nb));
		for (int q = 0; q < nb; q++)
			sizes = isl_multi_val_set_val(sizes, q, isl_val_int_from_si(b->ictx, p->tile[nb - 1 - q]));
		isl_options_set_tile_scale_tile_loops(b->ictx, 0);
		isl_options_set_tile_shift_point_loops(b->ictx, 1);
		node = isl_schedule_node_band_tile(node, sizes);
		isl_union_set *bf = bind_filter(node, nb, member, pn, mods);
		isl_schedule_node *point = isl_schedule_node_child(isl_schedule_node_copy(node), 0);
		int tm[3], nt = 0;
		const char *tn[3];
		int64_t tmod[3];
		for (int q = 0; q < nb; q++) {
			int i = nb - 1 - q;
			if (p->block[i] > 1) {
				tm[nt] = q;
				tn[nt] = tname[i];
				tmod[nt++] = p->block[i];
			}
		}
		isl_union_set *tf = nt ? bind_filter(point, nt, tm, tn, tmod) : NULL;
		isl_schedule_node_free(point);
		node = isl_schedule_node_insert_filter(node, bf);
		node = isl_schedule_node_child(node, 0);	/* tile band */
		node = isl_schedule_node_child(node, 0);	/* point band */
		if (tf)
			node = isl_schedule_node_insert_filter(node, tf);
	} else {
		isl_union_set *bf = bind_filter(node, nb, member, pn, mods);
		node = isl_schedule_node_insert_filter(node, bf);
		node = isl_schedule_node_child(node, 0);	/* the band over i */
		node = isl_schedule_node_child(node, 0);	/* below it: the statements */
		/* sequence I; S; F */
		isl_union_set_list *fl = isl_union_set_list_alloc(b->ictx, 3);
		const char *st[3] = {"I", "S", "F"};
		isl_union_set *all = isl_schedule_node_get_domain(node);
		for (int s = 0; s < 3; s++) {
			char name[8];
			snprintf(name, sizeof(name), "%s", st[s]);
			isl_space *sp = NULL;
			isl_union_set *one = NULL;
			isl_set_list *sets = isl_union_set_get_set_list(all);
			for (int e = 0; e < isl_set_list_n_set(sets); e++) {
				isl_set *set = isl_set_list_get_set(sets, e);
				if (!strcmp(isl_set_get_tuple_name(set), name)) {
					sp = isl_set_get_space(set);
					one = isl_union_set_from_set(isl_set_universe(isl_space_copy(sp)));
				}
				isl_set_free(set);
			}
			isl_set_list_free(sets);
			isl_space_free(sp);
			fl = isl_union_set_list_add(fl, one);
		}
		isl_union_set_free(all);
		node = isl_schedule_node_insert_sequence(node, fl);
		if (b->nj) {
			/* the band over j under S, its thread-bound member filtered */
			node = isl_schedule_node_child(node, 1);	/* filter S */
			node = isl_schedule_node_child(node, 0);
			str = (tinyc_buf){0};
			isl_params(b, &str, extra);
			tinyc_buf_puts(&str, " -> [");
			for (int j = 0; j < b->nj; j++) {
				tinyc_buf_printf(&str, "%s{ S[", j ? ", " : "");
				isl_iters(&str, "i", b->rank);
				tinyc_buf_puts(&str, ", ");
				isl_iters(&str, "j", b->nj);
				tinyc_buf_printf(&str, "] -> [(j%d)] }", j);
			}
			tinyc_buf_puts(&str, "]");
			isl_multi_union_pw_aff *jb = str.oom ? NULL
				: isl_multi_union_pw_aff_read_from_str(b->ictx, str.data);
			tinyc_buf_free(&str);
			node = isl_schedule_node_insert_partial_schedule(node, jb);
			int m = b->jbind;
			const char *tn = tname[0];
			int64_t tm = p->block[0];
			isl_union_set *tf = bind_filter(node, 1, &m, &tn, &tm);
			node = isl_schedule_node_insert_filter(node, tf);
		}
	}
	/* ---- the context: 0 <= t < blockDim, blocks within the grid, sizes >= 1 */
	str = (tinyc_buf){0};
	isl_params(b, &str, extra);
	tinyc_buf_puts(&str, " -> { [] : ");
	int first = 1;
	for (int sy = 0; sy < b->s->g->nsym && sy < 1024; sy++)
		if (b->used[sy]) {
			tinyc_buf_printf(&str, "%sp%d >= 1", first ? "" : " and ", sy);
			first = 0;
		}
	for (int i = 0; i < nb; i++) {
		int d = p->bind_dim[i];
		int64_t T = rowred ? 1 : p->tile[i];
		tinyc_buf_printf(&str, "%s0 <= %s and %" PRId64 " * %s <= ", first ? "" : " and ",
				 bname[i], T, bname[i]);
		isl_dim(b, &b->dims[d], &str);
		tinyc_buf_puts(&str, " - 1");
		if (p->grid_mod[i])
			tinyc_buf_printf(&str, " and %s < %d", bname[i], i == 0 ? 2147483647 : 65535);
		first = 0;
	}
	for (int i = 0; i < 3; i++)
		if ((rowred && i == 0) || (!rowred && i < nb && p->block[i] > 1)) {
			tinyc_buf_printf(&str, " and 0 <= %s < %d", tname[i], p->block[i]);
		}
	tinyc_buf_puts(&str, " }");
	isl_set *context = str.oom ? NULL : isl_set_read_from_str(b->ictx, str.data);
	tinyc_buf_free(&str);
	/* back to the root: the context goes above everything */
	node = isl_schedule_node_root(node);
	node = isl_schedule_node_child(node, 0);
	node = isl_schedule_node_insert_context(node, context);
	sched = isl_schedule_node_get_schedule(node);
	isl_schedule_node_free(node);
	return sched;
}

/* Find the chain value -> ... -> red (each node's operand is the next). */
static int find_path(kbuild *b)
{
	const tinyc_graph *g = b->s->g;
	int rev[256], n = 0, cur = b->red;
	rev[n++] = cur;
	while (cur != b->sk->value) {
		int user = -1;
		for (int i = cur + 1; i < g->n && user < 0; i++)
			for (int j = 0; j < g->nodes[i].nsrc; j++)
				if (g->nodes[i].src[j] == cur)
					user = i;
		if (user < 0 || n >= 256)
			return -1;
		rev[n++] = cur = user;
	}
	for (int i = 0; i < n; i++)
		b->path[i] = rev[n - 1 - i];
	b->npath = n;
	return 0;
}

/* Fill the grid extents: tiles per bound dim (capped when the dim loops). */
static void set_grid(kbuild *b)
{
	tinyc_gkernel *k = b->k;
	const tinyc_plan *p = b->p;
	for (int i = 0; i < 3; i++) {
		if (i >= p->ntile) {
			k->grid[i] = tinyc_gx_int(k, TINYC_LONG, 1);
			continue;
		}
		int d = p->bind_dim[i];
		int64_t T = b->red >= 0 ? 1 : p->tile[i];
		tinyc_gexpr *n = tinyc_gx_ceildiv(k, tinyc_emit_dim_sym(b->em, &b->dims[d]),
						  tinyc_gx_int(k, TINYC_LONG, T));
		if (p->grid_mod[i])
			n = tinyc_gx_binary(k, TINYC_GX_MIN, n,
					    tinyc_gx_int(k, TINYC_LONG, i == 0 ? 2147483647 : 65535));
		k->grid[i] = n;
	}
}

/* Declare the block and thread coordinates the AST uses, at the top of the body. */
static int declare_coords(kbuild *b)
{
	tinyc_gkernel *k = b->k;
	const tinyc_plan *p = b->p;
	for (int i = 0; i < p->ntile; i++) {
		int v = tinyc_gk_reg(k, bname[i], k->index_dtype);
		if (v < 0 || push_name(b, bname[i], v) < 0 ||
		    tinyc_gs_append(k, k->body, tinyc_gs_decl(k, v, tinyc_gx_cast(k, k->index_dtype,
								    tinyc_gx_special(k, bid[i])))) < 0)
			return -1;
		tinyc_emit_set_nonneg(b->em, v);
	}
	for (int i = 0; i < 3; i++) {
		if (!((b->red >= 0 && i == 0) || (b->red < 0 && i < p->ntile && p->block[i] > 1)))
			continue;
		int v = tinyc_gk_reg(k, tname[i], k->index_dtype);
		if (v < 0 || push_name(b, tname[i], v) < 0 ||
		    tinyc_gs_append(k, k->body, tinyc_gs_decl(k, v, tinyc_gx_cast(k, k->index_dtype,
								    tinyc_gx_special(k, tid[i])))) < 0)
			return -1;
		tinyc_emit_set_nonneg(b->em, v);
	}
	/* the size symbols of the domain */
	for (int sy = 0; sy < b->s->g->nsym && sy < 1024; sy++) {
		char name[16];
		snprintf(name, sizeof(name), "p%d", sy);
		if (!b->used[sy])
			continue;
		int v = tinyc_gk_sym_param(k, sy);
		if (v < 0 || push_name(b, name, v) < 0)
			return -1;
	}
	return 0;
}

int tinyc_isl_kernel_build(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_schedule *s,
			   const tinyc_indexbook *ib, int kernel)
{
	const tinyc_skernel *sk = &s->kerns[kernel];
	const tinyc_plan *p = tinyc_skernel_plan(sk);
	const tinyc_graph *g = s->g;
	kbuild b = {0};
	b.ctx = ctx;
	b.s = s;
	b.sk = sk;
	b.p = p;
	b.red = -1;
	b.acc = b.tmp = b.shared = -1;
	if (!p || (p->kind != TINYC_PLAN_MAP && p->kind != TINYC_PLAN_ROWRED))
		return tinyc_error(ctx, "CodegenError", "kernel %s: not a MAP/ROWRED plan", sk->name);
	tinyc_gkernel *k = tinyc_gk_alloc(gm, sk->name);
	if (!k)
		return -1;
	b.k = k;
	k->index_dtype = p->index_dtype;
	for (int i = 0; i < 3; i++)
		k->block[i] = p->block[i];
	const tinyc_uop *v = &g->nodes[sk->value];
	b.real_rank = v->rank;
	b.rank = v->rank > 0 ? v->rank : 1;
	for (int d = 0; d < v->rank; d++)
		b.dims[d] = v->shape[d];
	if (!v->rank)
		b.dims[0] = (tinyc_dim){1, -1};
	k->comment = tinyc_gpu_strdup(gm, "");
	{
		char buf[256];
		snprintf(buf, sizeof(buf), "%s: %%%s -> %s (%s)", sk->name, g->nodes[sk->value].id,
			 s->bufs[sk->out_buf].name, p->desc);
		k->comment = tinyc_gpu_strdup(gm, buf);
	}
	b.em = tinyc_emit_alloc(ctx, k, s, ib, kernel);
	if (!b.em)
		return -1;
	int rc = -1;
	isl_ast_build *build = NULL;
	isl_ast_node *ast = NULL;
	isl_schedule *sched = NULL;
	b.ictx = isl_ctx_alloc();
	if (!b.ictx) {
		tinyc_error(ctx, "OutOfMemory", "isl context");
		goto done;
	}
	isl_options_set_on_error(b.ictx, ISL_ON_ERROR_CONTINUE);
	if (p->kind == TINYC_PLAN_ROWRED) {
		b.red = sk->reds[0];
		const tinyc_uop *r = &g->nodes[b.red];
		const tinyc_ibval *rv = &ib->val[b.red];
		b.nj = rv->nreduce;
		b.jbind = 0;
		for (int j = 0; j < b.nj; j++) {
			b.jaxis[j] = rv->reduce_axes[j];
			if (b.jaxis[j] == p->red_axis)
				b.jbind = j;
		}
		b.acc_dt = rv->acc != TINYC_DTYPE_NONE ? rv->acc : r->dtype;
		b.acd = tinyc_emit_compute_dtype(b.acc_dt);
		if (find_path(&b) < 0) {
			tinyc_error(ctx, "CodegenError", "kernel %s: no chain to the reduction", k->name);
			goto done;
		}
		b.acc = tinyc_gk_reg(k, "acc", b.acd);
		b.tmp = tinyc_gk_reg(k, "other", b.acd);
		if (p->block[0] > 32)
			b.shared = tinyc_gk_shared(k, "partial", b.acd, p->block[0] / 32, 0, 0);
		if (b.acc < 0 || b.tmp < 0 || (p->block[0] > 32 && b.shared < 0))
			goto done;
		tinyc_gs_append(k, k->body, tinyc_gs_decl(k, b.acc, NULL));
		tinyc_gs_append(k, k->body, tinyc_gs_decl(k, b.tmp, NULL));
	}
	mark_used(&b);
	if (declare_coords(&b) < 0)
		goto done;
	sched = build_schedule(&b);
	if (!sched) {
		isl_fail(&b, "schedule tree");
		goto done;
	}
	build = isl_ast_build_alloc(b.ictx);
	ast = isl_ast_build_node_from_schedule(build, sched);
	sched = NULL;
	if (!ast) {
		isl_fail(&b, "AST generation");
		goto done;
	}
	if (ast_node(&b, ast, k->body) < 0 || b.em->error) {
		if (!b.failed && !b.em->error)
			tinyc_error(ctx, "CodegenError", "kernel %s: building the body failed", k->name);
		goto done;
	}
	set_grid(&b);
	tinyc_gk_sort_params(k);
	rc = 0;
done:
	isl_ast_node_free(ast);
	isl_ast_build_free(build);
	isl_schedule_free(sched);
	if (b.ictx)
		isl_ctx_free(b.ictx);
	tinyc_emit_free(b.em);
	free(b.names);
	return rc;
}
