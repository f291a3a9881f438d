/* Attention plan -> GPU IR: the flash-style kernel of a TINYC_PLAN_ATTENTION schedule
 * kernel (sched/attention.h).
 *
 * A block owns `bm` query rows of one batch entry (grid x: query tiles, grid y: the batch
 * dims flattened; swapped for some causal tensor-core kernels, abuild.qy), one thread per
 * row.  The thread keeps its query row and its output accumulator in registers (its tile of
 * scores in its own column of a shared score tile); the block streams K and V through
 * shared memory `bn` keys at a time.  Per key tile every thread computes its row of scores
 * (the Q K^T dot product, then the graph's own scale and mask expression through the
 * emitter, with the dot product substituted for the Q*K reduction), takes the tile
 * maximum, rescales its running sum and accumulator once (online softmax, fp32 statistics)
 * and accumulates P V.  Keys past Tk score -inf; rows past Tq compute but do not store.  The
 * output is the accumulator divided by the running sum, passed through the elementwise ops
 * the graph applies to O before it is stored.  Q, K and V are read through the emitter at
 * the MUL operands' indices, so the graph's views (head splits, transposes, GQA
 * broadcasts) need no special case.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "codegen/attention_int.h"
#include "codegen/attention_mask.h"
#include "codegen/attention_out.h"


/* The emitter hook: the dot product for the Q*K reduction, the normalised accumulator
 * for the P*V reduction. */
static tinyc_gexpr *attn_leaf(tinyc_emit *em, int node, tinyc_gexpr *const *idx, void *user)
{
	abuild *b = user;
	(void)idx;
	if (node == b->m->qk)
		return b->dot;
	if (node == b->m->pv)
		return b->out;
	if (b->causal && node == b->m->bias)	/* applied as a key bound instead */
		return tinyc_gx_float(b->k, tinyc_emit_compute_dtype(em->g->nodes[node].dtype), 0.0);
	return NULL;
}

/* Whether dim d of node n is the constant 1. */
static int dim_is_one(const tinyc_graph *g, int n, int d)
{
	const tinyc_dim *x = &g->nodes[n].shape[d];
	return x->sym < 0 && x->val == 1;
}

/* The index of node n (rank nb + 2 or nb + 3) at batch index p[0..nb) followed by the
 * trailing indices t[0..nt): entries where n has size 1 are 0. */
static void view_index(abuild *b, int n, int nb, tinyc_gexpr *const *p, int nt,
		       tinyc_gexpr *const *t, tinyc_gexpr **out)
{
	const tinyc_graph *g = b->em->g;
	for (int d = 0; d < nb + nt; d++) {
		tinyc_gexpr *v = d < nb ? p[d] : t[d - nb];
		out[d] = dim_is_one(g, n, d) ? ic(b, 0) : v;
	}
}

/* The index of node n at the index full[0..srank) of S, right-aligned (n may have lower
 * rank, as an operand of a broadcasting elementwise op); size-1 dims get 0. */
static void right_index(abuild *b, int n, int srank, tinyc_gexpr *const *full, tinyc_gexpr **out)
{
	const tinyc_graph *g = b->em->g;
	int r = g->nodes[n].rank;
	for (int d = 0; d < r; d++)
		out[d] = dim_is_one(g, n, d) ? ic(b, 0) : full[d + srank - r];
}

/* Evaluate the mask over the (rows, keys) tile at (r0.., j0..) cooperatively and run `wb`
 * only when some element is not -inf; otherwise append wb to tb.  nrows rows from r0
 * (rows past Tq ignored), BN keys from J0. */
static void mask_skip(abuild *b, tinyc_gstmt *tb, tinyc_gstmt *wb, tinyc_gexpr *const *p,
		      tinyc_gexpr *r0, int nrows, tinyc_gexpr *J0, int BN, int threads)
{
	tinyc_gkernel *k = b->k;
	const tinyc_attn_match *m = b->m;
	const int nb = m->rank - 2;
	if (m->bias < 0 || b->causal) {	/* causal: the loop stops at the diagonal */
		app(b, tb, wb);
		return;
	}
	tinyc_gexpr *tx = tinyc_gx_cast(k, b->ix, tinyc_gx_special(k, TINYC_GSP_TID_X));
	int live = tinyc_gk_shared(k, "tile_live", TINYC_INT, 1, 4, b->dyn);
	int any = tinyc_gk_reg(k, "unmasked", TINYC_BOOL);
	int t = iter(b, "tm");
	if (live < 0 || any < 0 || t < 0) {
		b->failed = 1;
		return;
	}
	app(b, tb, tinyc_gs_store(k, live, ic(b, 0), tinyc_gx_int(k, TINYC_INT, 0),
				  bin(b, TINYC_GX_EQ, tx, ic(b, 0))));
	app(b, tb, tinyc_gs_barrier(k));
	app(b, tb, tinyc_gs_decl(k, any, tinyc_gx_bool(k, 0)));
	tinyc_gstmt *lb = tinyc_gs_block(k);
	tinyc_gexpr *T = tinyc_gx_var(k, t);
	tinyc_gexpr *row = bin(b, TINYC_GX_ADD, r0, bin(b, TINYC_GX_DIV, T, ic(b, BN)));
	tinyc_gexpr *j = bin(b, TINYC_GX_ADD, J0, bin(b, TINYC_GX_MOD, T, ic(b, BN)));
	tinyc_gexpr *ok = bin(b, TINYC_GX_LAND, bin(b, TINYC_GX_LT, row, ic(b, m->tq)),
			      bin(b, TINYC_GX_LT, j, ic(b, m->tk)));
	tinyc_gexpr *full[TINYC_MAX_RANK], *idx[TINYC_MAX_RANK];
	for (int d = 0; d < nb; d++)
		full[d] = p[d];
	full[nb] = row, full[nb + 1] = j;
	right_index(b, m->bias, m->rank, full, idx);
	tinyc_emit_scope_enter(b->em);
	tinyc_gexpr *bv = tinyc_emit_value(b->em, lb, m->bias, idx, ok);
	tinyc_emit_scope_leave(b->em);
	bv = tinyc_gx_cast(k, TINYC_FLOAT, bv);
	app(b, lb, tinyc_gs_assign(k, any, bin(b, TINYC_GX_OR, tinyc_gx_var(k, any),
		bin(b, TINYC_GX_LAND, ok, bin(b, TINYC_GX_NE, bv, fc(b, -INFINITY))))));
	app(b, tb, tinyc_gs_for_range(k, t, tx, ic(b, (int64_t)nrows * BN), ic(b, threads), 0, lb));
	app(b, tb, tinyc_gs_store(k, live, ic(b, 0), tinyc_gx_int(k, TINYC_INT, 1), tinyc_gx_var(k, any)));
	app(b, tb, tinyc_gs_barrier(k));
	app(b, tb, tinyc_gs_if(k, bin(b, TINYC_GX_NE, tinyc_gx_load(k, live, ic(b, 0), NULL),
				       tinyc_gx_int(k, TINYC_INT, 0)), wb, NULL));
}

/* The query tile of this block: under a causal mask the last tiles (the most keys) run
 * first, for balance. */
tinyc_gexpr *tinyc_attn_query_tile(abuild *b, int bm)
{
	tinyc_gkernel *k = b->k;
	tinyc_gexpr *bx = tinyc_gx_cast(k, b->ix, tinyc_gx_special(k, b->qy ? TINYC_GSP_BID_Y : TINYC_GSP_BID_X));
	if (!b->causal)
		return bx;
	return bin(b, TINYC_GX_SUB, ic(b, (b->m->tq + bm - 1) / bm - 1), bx);
}

/* Under a causal mask, the key loop's end: the keys the block's last row r0 + bm - 1 may
 * see, min(Tk, max(0, r0 + bm + coff)), as a register in body.  Otherwise Tk. */
tinyc_gexpr *tinyc_attn_key_end(abuild *b, tinyc_gstmt *body, tinyc_gexpr *r0, int bm)
{
	if (!b->causal)
		return ic(b, b->m->tk);
	tinyc_gexpr *last = bin(b, TINYC_GX_ADD, r0, ic(b, bm + b->coff));
	int v = reg(b, body, "kend", b->ix, bin(b, TINYC_GX_MIN, ic(b, b->m->tk),
						bin(b, TINYC_GX_MAX, ic(b, 0), last)));
	if (v < 0)
		return NULL;
	tinyc_emit_set_nonneg(b->em, v);
	return tinyc_gx_var(b->k, v);
}

/* Whether key col exists for row: below Tk, and under a causal mask col <= row + coff. */
static tinyc_gexpr *key_ok(abuild *b, tinyc_gexpr *row, tinyc_gexpr *col)
{
	tinyc_gexpr *ok = bin(b, TINYC_GX_LT, col, ic(b, b->m->tk));
	if (b->causal)
		ok = bin(b, TINYC_GX_LAND, ok, bin(b, TINYC_GX_LE, col, bin(b, TINYC_GX_ADD, row, ic(b, b->coff))));
	return ok;
}


/* The trailing index (3 entries) of a tile element at (row, column c) of operand `kind`:
 * 0 Q (row, 0, c), 1 K (0, row, c), 2 V (0, c, row). */
static void tile_trailing(abuild *b, int kind, tinyc_gexpr *row, tinyc_gexpr *c, tinyc_gexpr **tr)
{
	tr[0] = kind == 0 ? row : ic(b, 0);
	tr[1] = kind == 0 ? ic(b, 0) : kind == 1 ? row : c;
	tr[2] = kind == 2 ? row : c;
}

/* The iterator `name` of a block-strided loop over a tile's rows of `per_row` steps of
 * `unit` columns: its body block *lb, the step's row *rr = t / per_row and first column
 * *c = (t % per_row) * unit.  The iterator, or -1. */
static int tile_iter(abuild *b, const char *name, int64_t per_row, int64_t unit, tinyc_gstmt **lb,
		     tinyc_gexpr **rr, tinyc_gexpr **c)
{
	int t = iter(b, name);
	*lb = tinyc_gs_block(b->k);
	if (t < 0 || !*lb)
		return -1;
	tinyc_gexpr *T = tinyc_gx_var(b->k, t);
	*rr = bin(b, TINYC_GX_DIV, T, ic(b, per_row));
	*c = bin(b, TINYC_GX_MUL, bin(b, TINYC_GX_MOD, T, ic(b, per_row)), ic(b, unit));
	return t;
}

/* Load rows [r0, r0 + nrows) x cols [0, W) of view `node` (trailing index built by `kind`:
 * 0 Q (row, 0, c), 1 K (0, row, c), 2 V (0, c, row)) into shared `sh` (row stride S,
 * dtype dt), zero outside [0, limit). */
void tinyc_attn_load_tile(abuild *b, tinyc_gstmt *blk, int sh, int64_t S, int node, int kind,
		      tinyc_gexpr *const *p, tinyc_gexpr *r0, int nrows, int64_t W, int64_t limit,
		      int threads, tinyc_dtype dt)
{
	tinyc_gkernel *k = b->k;
	const int nb = b->m->rank - 2;
	tinyc_gexpr *tx = tinyc_gx_cast(k, b->ix, tinyc_gx_special(k, TINYC_GSP_TID_X)), *rr, *c;
	tinyc_gstmt *lb;
	int t = tile_iter(b, "tl", W, 1, &lb, &rr, &c);
	if (t < 0)
		return;
	tinyc_gexpr *row = bin(b, TINYC_GX_ADD, r0, rr);
	tinyc_gexpr *tr[3], *idx[TINYC_MAX_RANK];
	tile_trailing(b, kind, row, c, tr);
	view_index(b, node, nb, p, 3, tr, idx);
	tinyc_emit_scope_enter(b->em);
	tinyc_gexpr *v = tinyc_emit_value(b->em, lb, node, idx, bin(b, TINYC_GX_LT, row, ic(b, limit)));
	tinyc_emit_scope_leave(b->em);
	app(b, lb, tinyc_gs_store(k, sh, bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, rr, ic(b, S)), c),
				  tinyc_gx_cast(k, dt, v), NULL));
	app(b, blk, tinyc_gs_for_range(k, t, tx, ic(b, (int64_t)nrows * W), ic(b, threads), 0, lb));
}

/* ------------------------------------------------ cp.async tile loads (16-bit) ---- */

/* Walk view `node` at index idx (its rank entries) down through movement ops to the
 * buffer it reads: *buf (schedule buffer) and *off (element offset expression).  -1 when
 * the chain holds something else (a PAD guard, an elementwise op) or the buffer's dtype
 * is not dt. */
static int view_source(abuild *b, int node, tinyc_gexpr *const *idx, tinyc_dtype dt, int *buf,
		       tinyc_gexpr **off)
{
	tinyc_emit *em = b->em;
	const tinyc_graph *g = em->g;
	tinyc_gexpr *cur[TINYC_MAX_RANK], *nxt[TINYC_MAX_RANK];
	for (int d = 0; d < g->nodes[node].rank; d++)
		cur[d] = idx[d];
	while (em->s->node_buf[node] < 0) {
		const tinyc_uop *u = &g->nodes[node];
		tinyc_gexpr *guard;
		if (tinyc_op_info(u->op)->kind != TINYC_KIND_MOVEMENT || u->nsrc != 1 ||
		    tinyc_emit_operand_index(em, node, 0, cur, nxt, &guard) < 0 || guard)
			return -1;
		node = u->src[0];
		for (int d = 0; d < g->nodes[node].rank; d++)
			cur[d] = nxt[d];
	}
	*buf = em->s->node_buf[node];
	if (em->s->bufs[*buf].dtype != dt || em->buf_param[*buf] < 0)
		return -1;
	*off = tinyc_emit_buf_offset(em, *buf, cur);
	return *off ? 0 : -1;
}

/* Greatest common divisor of two non-negative numbers. */
static int64_t gcd64(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;
		a = b, b = t;
	}
	return a;
}

/* Whether expression e reads one of the variables xv[0..nx) (an explicit walk). */
static int mentions(const tinyc_gexpr *e, const int *xv, int nx)
{
	enum { MAXN = 512 };
	const tinyc_gexpr *st[MAXN];
	int ns = 0;
	st[ns++] = e;
	while (ns > 0) {
		const tinyc_gexpr *x = st[--ns];
		for (int i = 0; i < nx; i++)
			if (x->op == TINYC_GX_VAR && x->var == xv[i])
				return 1;
		for (int a = 0; a < 3; a++)
			if (x->arg[a]) {
				if (ns >= MAXN)
					return 1;	/* too large to tell: assume it does */
				st[ns++] = x->arg[a];
			}
	}
	return 0;
}

/* Whether integer expression e is affine in the variables xv[0..nx) with constant
 * coefficients: *coef receives them, *div a divisor of the rest (the terms free of xv).
 * An explicit post-order walk; 0 or -1. */
static int affine_form(const tinyc_gexpr *e, const int *xv, int nx, int64_t *coef, int64_t *div)
{
	enum { MAXN = 512, NX = 2 };
	struct frame { const tinyc_gexpr *e; int step; } st[MAXN];
	struct form { int64_t c[NX], div, konst; int is_const; } val[MAXN];
	int ns = 0, nv = 0;
	if (nx > NX)
		return -1;
	st[ns++] = (struct frame){e, 0};
	while (ns > 0) {
		struct frame *f = &st[ns - 1];
		const tinyc_gexpr *x = f->e;
		int nargs = x->op == TINYC_GX_ADD || x->op == TINYC_GX_SUB || x->op == TINYC_GX_MUL ? 2 :
			    x->op == TINYC_GX_CAST || x->op == TINYC_GX_NEG ? 1 : 0;
		int mine = 0;
		for (int i = 0; i < nx; i++)
			mine |= x->op == TINYC_GX_VAR && x->var == xv[i];
		/* operands of the affine operators first; anything else is a leaf */
		if (f->step < nargs) {
			if (ns >= MAXN)
				return -1;
			st[ns++] = (struct frame){x->arg[f->step++], 0};
			continue;
		}
		ns--;
		struct form r = {{0}, 0, 0, 0};
		if (x->op == TINYC_GX_INT) {
			r.is_const = 1, r.konst = x->ival, r.div = x->ival < 0 ? -x->ival : x->ival;
		} else if (mine) {
			for (int i = 0; i < nx; i++)
				r.c[i] = x->var == xv[i];
		} else if (nargs == 0) {
			r.div = 1;	/* another variable, a division...: no known divisor */
			if (mentions(x, xv, nx))
				return -1;
		} else if (nargs == 1) {
			r = val[--nv];
			if (x->op == TINYC_GX_NEG) {
				for (int i = 0; i < nx; i++)
					r.c[i] = -r.c[i];
				r.konst = -r.konst;
			} else if (!tinyc_dtype_is_int(x->dtype)) {
				return -1;
			}
		} else {
			struct form y = val[--nv], a = val[--nv];
			if (x->op == TINYC_GX_MUL) {
				int ay = 0, aa = 0;
				for (int i = 0; i < nx; i++)
					ay |= y.c[i] != 0, aa |= a.c[i] != 0;
				if (ay && aa)
					return -1;
				if (ay || aa) {	/* affine times a constant */
					struct form lin = ay ? y : a, k = ay ? a : y;
					if (!k.is_const)
						return -1;
					for (int i = 0; i < nx; i++)
						r.c[i] = lin.c[i] * k.konst;
					r.div = lin.div * (k.konst < 0 ? -k.konst : k.konst);
					r.is_const = lin.is_const, r.konst = lin.konst * k.konst;
				} else {
					r.div = a.div * y.div;
					r.is_const = a.is_const && y.is_const, r.konst = a.konst * y.konst;
				}
			} else {
				int sg = x->op == TINYC_GX_SUB ? -1 : 1;
				for (int i = 0; i < nx; i++)
					r.c[i] = a.c[i] + sg * y.c[i];
				r.div = gcd64(a.div, y.div);
				r.is_const = a.is_const && y.is_const, r.konst = a.konst + sg * y.konst;
			}
		}
		val[nv++] = r;
	}
	for (int i = 0; i < nx; i++)
		coef[i] = val[0].c[i];
	*div = val[0].div;
	return 0;
}

/* Whether the tile rows of view `node` (trailing index built by `kind` as in load_tile)
 * can be copied in 16-byte cp.async chunks: the offset affine in (row, column) with
 * column stride 1, row stride and origin multiples of 8 elements. */
int tinyc_attn_tile_async_ok(abuild *b, int node, int kind, tinyc_gexpr *const *p)
{
	tinyc_gkernel *k = b->k;
	const int nb = b->m->rank - 2;
	int xr = tinyc_gk_reg(k, "xrow", b->ix), xc = tinyc_gk_reg(k, "xcol", b->ix);
	if (xr < 0 || xc < 0)
		return 0;
	tinyc_emit_set_nonneg(b->em, xr);
	tinyc_emit_set_nonneg(b->em, xc);
	tinyc_gexpr *row = tinyc_gx_var(k, xr), *c = tinyc_gx_var(k, xc);
	tinyc_gexpr *tr[3], *idx[TINYC_MAX_RANK], *off;
	tile_trailing(b, kind, row, c, tr);
	view_index(b, node, nb, p, 3, tr, idx);
	int buf, xv[2] = {xr, xc};
	int64_t coef[2], div;
	if (view_source(b, node, idx, b->m->in_dtype, &buf, &off) < 0 ||
	    affine_form(off, xv, 2, coef, &div) < 0)
		return 0;
	const int64_t ce = 16 / tinyc_dtype_size(b->m->in_dtype);	/* elements per copy */
	return coef[1] == 1 && coef[0] % ce == 0 && div % ce == 0;
}

/* Issue the cp.async copies of rows [r0, r0 + nrows) x cols [0, W) of view `node` (as in
 * load_tile; tile_async_ok holds) into shared `sh` from element `base` (row stride S);
 * rows at or past `limit` are zero-filled (their source row clamped to 0).  r0 is a
 * multiple of nrows below limit, so when nrows divides limit no row needs the guard.  The
 * loop has a constant trip count (copies / threads, unrolled), and when the block covers
 * whole rows per step a thread's row and column are tid / CW + step and a constant
 * column: no per-copy division, no remainder loop. */
void tinyc_attn_load_tile_async(abuild *b, tinyc_gstmt *blk, int sh, tinyc_gexpr *base, int64_t S,
			    int node, int kind, tinyc_gexpr *const *p, tinyc_gexpr *r0, int nrows,
			    int64_t W, int64_t limit, int threads)
{
	tinyc_gkernel *k = b->k;
	const int nb = b->m->rank - 2;
	const int ce = 16 / tinyc_dtype_size(b->m->in_dtype);	/* elements per 16-byte copy */
	const int64_t CW = W / ce;	/* copies per row */
	const int64_t total = (int64_t)nrows * CW, steps = (total + threads - 1) / threads;
	tinyc_gexpr *tx = tinyc_gx_cast(k, b->ix, tinyc_gx_special(k, TINYC_GSP_TID_X));
	int it = iter(b, "cs");
	tinyc_gstmt *lb = tinyc_gs_block(k);
	if (it < 0 || !lb)
		return;
	tinyc_gexpr *I = tinyc_gx_var(k, it), *rr, *c;
	tinyc_gexpr *t = bin(b, TINYC_GX_ADD, tx, bin(b, TINYC_GX_MUL, I, ic(b, threads)));
	if (threads % CW == 0) {
		rr = bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_DIV, tx, ic(b, CW)), bin(b, TINYC_GX_MUL, I, ic(b, threads / CW)));
		c = bin(b, TINYC_GX_MUL, bin(b, TINYC_GX_MOD, tx, ic(b, CW)), ic(b, ce));
	} else {
		rr = bin(b, TINYC_GX_DIV, t, ic(b, CW));
		c = bin(b, TINYC_GX_MUL, bin(b, TINYC_GX_MOD, t, ic(b, CW)), ic(b, ce));
	}
	tinyc_gexpr *row = bin(b, TINYC_GX_ADD, r0, rr);
	tinyc_gexpr *in = limit % nrows ? bin(b, TINYC_GX_LT, row, ic(b, limit)) : NULL;
	tinyc_gexpr *srow = in ? tinyc_gx_select(k, in, row, ic(b, 0)) : row;
	tinyc_gexpr *tr[3], *idx[TINYC_MAX_RANK], *off;
	tile_trailing(b, kind, srow, c, tr);
	view_index(b, node, nb, p, 3, tr, idx);
	int buf;
	if (view_source(b, node, idx, b->m->in_dtype, &buf, &off) < 0) {
		b->failed = 1;
		return;
	}
	tinyc_gexpr *dst = bin(b, TINYC_GX_ADD, base, bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, rr, ic(b, S)), c));
	if (b->swz && (sh == b->swz_sh[0] || sh == b->swz_sh[1] || sh == b->swz_sh[2]))	/* wgmma's swizzle */
		dst = bin(b, TINYC_GX_ADD, base, bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, rr, ic(b, S)),
			  bin(b, TINYC_GX_MUL, bin(b, TINYC_GX_XOR, bin(b, TINYC_GX_DIV, c, ic(b, ce)),
					       bin(b, TINYC_GX_MOD, rr, ic(b, 8))), ic(b, ce))));
	tinyc_gstmt *cp = tinyc_gs_copy(k, sh, dst, b->em->buf_param[buf], off, ce, in, 1);
	if (total % threads) {	/* the last step: only the threads with a copy left */
		tinyc_gstmt *g = tinyc_gs_block(k);
		app(b, g, cp);
		cp = tinyc_gs_if(k, bin(b, TINYC_GX_LT, t, ic(b, total)), g, NULL);
	}
	app(b, lb, cp);
	app(b, blk, tinyc_gs_for_range(k, it, ic(b, 0), ic(b, steps), ic(b, 1), -1, lb));
}

/* The cp.async copies of the K and V tiles of keys [J, J + BN) into ring stage `stage`
 * of ks (row stride KS) and vs (VS), appended to blk. */
void tinyc_attn_kv_copy(abuild *b, tinyc_gstmt *blk, int ks, int64_t KS, int vs, int64_t VS, tinyc_gexpr *stage,
			tinyc_gexpr *const *p, tinyc_gexpr *J, int BN, int threads)
{
	const tinyc_attn_match *m = b->m;
	tinyc_attn_load_tile_async(b, blk, ks, bin(b, TINYC_GX_MUL, stage, ic(b, BN * KS)), KS, m->k_side, 1, p, J,
				   BN, m->d, m->tk, threads);
	tinyc_attn_load_tile_async(b, blk, vs, bin(b, TINYC_GX_MUL, stage, ic(b, BN * VS)), VS, m->v_side, 2, p, J,
				   BN, m->dv, m->tk, threads);
}

/* The per-tile K/V traffic of the key loop (body tb, J0 its first key, work block wb
 * under the mask's skip test): with pipeline cp (>= 0) tile 0's copies go into body
 * before the loop, and each tile first starts the next tile's copies (keys below kend)
 * into the other stage, which the previous tile finished reading before its closing
 * barrier, then waits for its own; *kbase, *vbase: where this tile's stage starts.
 * Without, synchronous loads into the one stage.  Rows of stride KS (VS) in ks (vs),
 * element type dt; threads: the block size. */
void tinyc_attn_kv_stream(abuild *b, tinyc_gstmt *body, tinyc_gstmt *tb, tinyc_gstmt *wb, int cp,
		      int ks, int64_t KS, int vs, int64_t VS, tinyc_gexpr *const *p, tinyc_gexpr *r0,
		      int BM, tinyc_gexpr *J0, int BN, tinyc_gexpr *kend, int threads, tinyc_dtype dt,
		      tinyc_gexpr **kbase, tinyc_gexpr **vbase)
{
	tinyc_gkernel *k = b->k;
	const tinyc_attn_match *m = b->m;
	*kbase = *vbase = ic(b, 0);
	if (cp < 0) {
		app(b, tb, tinyc_gs_barrier(k));
		mask_skip(b, tb, wb, p, r0, BM, J0, BN, threads);
		tinyc_attn_load_tile(b, wb, ks, KS, m->k_side, 1, p, J0, BN, m->d, m->tk, threads, dt);
		tinyc_attn_load_tile(b, wb, vs, VS, m->v_side, 2, p, J0, BN, m->dv, m->tk, threads, dt);
		app(b, wb, tinyc_gs_barrier(k));
		return;
	}
	tinyc_attn_kv_copy(b, body, ks, KS, vs, VS, ic(b, 0), p, ic(b, 0), BN, threads);
	app(b, body, tinyc_gs_cp_commit(k, cp));
	int st = reg(b, tb, "stage", b->ix, bin(b, TINYC_GX_MOD, bin(b, TINYC_GX_DIV, J0, ic(b, BN)), ic(b, 2)));
	if (st < 0)
		return;
	tinyc_emit_set_nonneg(b->em, st);
	tinyc_gexpr *S = tinyc_gx_var(k, st), *O = bin(b, TINYC_GX_SUB, ic(b, 1), S);
	tinyc_gstmt *next = tinyc_gs_block(k);
	tinyc_gexpr *J1 = bin(b, TINYC_GX_ADD, J0, ic(b, BN));
	tinyc_attn_kv_copy(b, next, ks, KS, vs, VS, O, p, J1, BN, threads);
	app(b, tb, tinyc_gs_if(k, bin(b, TINYC_GX_LT, J1, kend), next, NULL));
	app(b, tb, tinyc_gs_cp_commit(k, cp));
	app(b, tb, tinyc_gs_cp_wait(k, cp, 1));
	app(b, tb, tinyc_gs_barrier(k));
	*kbase = bin(b, TINYC_GX_MUL, S, ic(b, BN * KS));
	*vbase = bin(b, TINYC_GX_MUL, S, ic(b, BN * VS));
	mask_skip(b, tb, wb, p, r0, BM, J0, BN, threads);
}

/* The K/V traffic of the key loop through a cp.async ring of ns >= 3 stages (pipeline
 * cp; body tb, J0 its first key, work block wb): tiles 0 .. ns-2 start before the loop;
 * each tile waits for its own copies, then one barrier makes them visible and tells that
 * every warp is done with the previous tile, whose stage then receives tile + ns - 1
 * (keys below kend).  One barrier a tile instead of kv_stream's two.  *kbase, *vbase:
 * where this tile's stage starts. */
static void kv_ring(abuild *b, tinyc_gstmt *body, tinyc_gstmt *tb, tinyc_gstmt *wb, int cp, int ns,
		    int ks, int64_t KS, int vs, int64_t VS, tinyc_gexpr *const *p, tinyc_gexpr *r0,
		    int BM, tinyc_gexpr *J0, int BN, tinyc_gexpr *kend, int threads,
		    tinyc_gexpr **kbase, tinyc_gexpr **vbase)
{
	tinyc_gkernel *k = b->k;
	*kbase = *vbase = ic(b, 0);
	for (int t = 0; t < ns - 1; t++) {
		tinyc_gstmt *blk = t ? tinyc_gs_block(k) : body;
		tinyc_attn_kv_copy(b, blk, ks, KS, vs, VS, ic(b, t), p, ic(b, t * BN), BN, threads);
		if (t)
			app(b, body, tinyc_gs_if(k, bin(b, TINYC_GX_LT, ic(b, t * BN), kend), blk, NULL));
		app(b, body, tinyc_gs_cp_commit(k, cp));
	}
	int st = reg(b, tb, "stage", b->ix, bin(b, TINYC_GX_MOD, bin(b, TINYC_GX_DIV, J0, ic(b, BN)), ic(b, ns)));
	if (st < 0)
		return;
	tinyc_emit_set_nonneg(b->em, st);
	app(b, tb, tinyc_gs_cp_wait(k, cp, ns - 2));
	app(b, tb, tinyc_gs_barrier(k));
	tinyc_gexpr *S = tinyc_gx_var(k, st);
	tinyc_gexpr *O = bin(b, TINYC_GX_MOD, bin(b, TINYC_GX_ADD, S, ic(b, ns - 1)), ic(b, ns));
	tinyc_gexpr *JN = bin(b, TINYC_GX_ADD, J0, ic(b, (ns - 1) * BN));
	tinyc_gstmt *next = tinyc_gs_block(k);
	tinyc_attn_kv_copy(b, next, ks, KS, vs, VS, O, p, JN, BN, threads);
	app(b, tb, tinyc_gs_if(k, bin(b, TINYC_GX_LT, JN, kend), next, NULL));
	app(b, tb, tinyc_gs_cp_commit(k, cp));
	*kbase = bin(b, TINYC_GX_MUL, S, ic(b, BN * KS));
	*vbase = bin(b, TINYC_GX_MUL, S, ic(b, BN * VS));
	mask_skip(b, tb, wb, p, r0, BM, J0, BN, threads);
}

/* Store the kernel's value for O = b->out at O's index idx (pred: the row exists): the
 * value's ops applied, at the value's own index (a cast and a head merge after O go
 * straight into the consumer's layout, attention_out.c). */
static void store_out(abuild *b, tinyc_gstmt *eb, const tinyc_skernel *sk, tinyc_gexpr *const *idx,
		      tinyc_gexpr *pred)
{
	tinyc_gexpr *vidx[TINYC_MAX_RANK];
	if (tinyc_attn_out_index(b->em, sk->value, b->m->pv, idx, vidx) < 0) {
		b->failed = 1;
		return;
	}
	tinyc_emit_scope_enter(b->em);
	tinyc_gexpr *ov = tinyc_emit_value(b->em, eb, sk->value, vidx, pred);
	tinyc_emit_scope_leave(b->em);
	b->out = NULL;
	app(b, eb, tinyc_emit_store(b->em, sk->out_buf, vidx, ov, pred));
}

/* The dot product of the register row q with the D floats of shared `ks` from `base`, as
 * a register declared in lb: four independent FMA chains (D a multiple of 4), summed at
 * the end, so that consecutive FMAs do not wait on each other.  The register or -1. */
static int simt_dot(abuild *b, tinyc_gstmt *lb, int q, int ks, tinyc_gexpr *base, int64_t D)
{
	tinyc_gkernel *k = b->k;
	const int nch = D % 4 == 0 ? 4 : 1;
	int part = tinyc_gk_reg_array(k, "dotp", TINYC_FLOAT, nch);
	int c = iter(b, "c");
	if (part < 0 || c < 0) {
		b->failed = 1;
		return -1;
	}
	app(b, lb, tinyc_gs_decl(k, part, fc(b, 0)));
	tinyc_gstmt *cb = tinyc_gs_block(k);
	for (int r = 0; r < nch; r++) {
		tinyc_gexpr *col = bin(b, TINYC_GX_ADD, tinyc_gx_var(k, c), ic(b, r));
		tinyc_gexpr *kv = tinyc_gx_load(k, ks, bin(b, TINYC_GX_ADD, base, col), NULL);
		app(b, cb, tinyc_gs_store(k, part, ic(b, r), tinyc_gx_call(k, TINYC_GM_FMA,
			tinyc_gx_load(k, q, col, NULL), kv, tinyc_gx_load(k, part, ic(b, r), NULL)), NULL));
	}
	app(b, lb, tinyc_gs_for_range(k, c, ic(b, 0), ic(b, D), ic(b, nch), -1, cb));
	tinyc_gexpr *sum = tinyc_gx_load(k, part, ic(b, 0), NULL);
	if (nch == 4)
		sum = bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_ADD, sum, tinyc_gx_load(k, part, ic(b, 1), NULL)),
			  bin(b, TINYC_GX_ADD, tinyc_gx_load(k, part, ic(b, 2), NULL), tinyc_gx_load(k, part, ic(b, 3), NULL)));
	return reg(b, lb, "dot", TINYC_FLOAT, sum);
}

/* Build the SIMT kernel body into k (see the top of the file). */
static void build_body(abuild *b, const tinyc_schedule *s, const tinyc_skernel *sk,
		       const tinyc_attn_plan *ap)
{
	tinyc_gkernel *k = b->k;
	tinyc_emit *em = b->em;
	const tinyc_attn_match *m = b->m;
	const tinyc_graph *g = s->g;
	const tinyc_uop *su = &g->nodes[m->score];
	const int nb = m->rank - 2, BM = ap->bm, BN = ap->bn;
	const int64_t D = m->d, DV = m->dv;
	tinyc_gstmt *body = k->body;
	tinyc_gexpr *ninf = fc(b, -INFINITY);

	int tid = reg(b, body, "tid", b->ix, tinyc_gx_cast(k, b->ix, tinyc_gx_special(k, TINYC_GSP_TID_X)));
	int bx = reg(b, body, "qtile", b->ix, tinyc_attn_query_tile(b, BM));
	if (b->failed)
		return;
	tinyc_emit_set_nonneg(em, tid);
	tinyc_emit_set_nonneg(em, bx);
	tinyc_gexpr *tx = tinyc_gx_var(k, tid);
	int iv = reg(b, body, "row", b->ix, bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, tinyc_gx_var(k, bx), ic(b, BM)), tx));
	if (iv < 0)
		return;
	tinyc_emit_set_nonneg(em, iv);
	tinyc_gexpr *row = tinyc_gx_var(k, iv);
	tinyc_gexpr *vrow = bin(b, TINYC_GX_LT, row, ic(b, m->tq));
	/* the batch indices from blockIdx.y, innermost dim fastest */
	tinyc_gexpr *p[TINYC_MAX_RANK];
	int pb = reg(b, body, "batch", b->ix, tinyc_gx_cast(k, b->ix, tinyc_gx_special(k, TINYC_GSP_BID_Y)));
	if (pb < 0)
		return;
	tinyc_emit_set_nonneg(em, pb);
	tinyc_gexpr *rest = tinyc_gx_var(k, pb);
	for (int d = nb - 1; d >= 0; d--) {
		int64_t ext = tinyc_dim_value(&su->shape[d], s->bind);
		if (su->shape[d].sym < 0)
			ext = su->shape[d].val;
		char name[16];
		snprintf(name, sizeof(name), "b%d", d);
		int v = reg(b, body, name, b->ix, bin(b, TINYC_GX_MOD, rest, ic(b, ext)));
		if (v < 0)
			return;
		tinyc_emit_set_nonneg(em, v);
		p[d] = tinyc_gx_var(k, v);
		rest = bin(b, TINYC_GX_DIV, rest, ic(b, ext));
	}

	/* the query row in registers */
	int q = tinyc_gk_reg_array(k, "q", TINYC_FLOAT, D);
	int acc = tinyc_gk_reg_array(k, "acc", TINYC_FLOAT, DV);
	/* fp32 inputs on sm_80+: K and V through 2-stage cp.async rings of 4-float copies
	 * (dynamic shared memory above the static limit) */
	const int pipe = ap->stages > 1 && m->in_dtype == TINYC_FLOAT && s->dev.arch.major >= 8 &&
			 D % 4 == 0 && DV % 4 == 0 && tinyc_attn_tile_async_ok(b, m->k_side, 1, p) &&
			 tinyc_attn_tile_async_ok(b, m->v_side, 2, p);
	b->stages = pipe ? 2 : 1;
	const int64_t ring = (pipe ? 2 : 1) * (int64_t)BN * (D + DV);
	b->dyn = (ring + (int64_t)BN * BM) * 4 + 16 > 48 * 1024;
	const int dyn = b->dyn;
	int sc = tinyc_gk_shared(k, "stile", TINYC_FLOAT, (int64_t)BN * BM, 16, dyn);
	int ks = tinyc_gk_shared(k, "ktile", TINYC_FLOAT, (pipe ? 2 : 1) * (int64_t)BN * D, 16, dyn);
	int vs = tinyc_gk_shared(k, "vtile", TINYC_FLOAT, (pipe ? 2 : 1) * (int64_t)BN * DV, 16, dyn);
	int cp = pipe ? tinyc_gk_pipe(k, "kv", TINYC_GPIPE_CP_ASYNC, 2, -1) : 0;
	if (q < 0 || acc < 0 || sc < 0 || ks < 0 || vs < 0 || cp < 0) {
		b->failed = 1;
		return;
	}
	app(b, body, tinyc_gs_decl(k, q, NULL));
	app(b, body, tinyc_gs_decl(k, acc, fc(b, 0)));
	{
		int c = iter(b, "c");
		tinyc_gstmt *lb = tinyc_gs_block(k);
		tinyc_gexpr *t[3] = {row, ic(b, 0), tinyc_gx_var(k, c)}, *idx[TINYC_MAX_RANK];
		view_index(b, m->q_side, nb, p, 3, t, idx);
		tinyc_emit_scope_enter(em);
		tinyc_gexpr *v = tinyc_emit_value(em, lb, m->q_side, idx, vrow);
		tinyc_emit_scope_leave(em);
		app(b, lb, tinyc_gs_store(k, q, tinyc_gx_var(k, c), tinyc_gx_cast(k, TINYC_FLOAT, v), NULL));
		app(b, body, tinyc_gs_for_range(k, c, ic(b, 0), ic(b, D), ic(b, 1), -1, lb));
	}
	int mv = reg(b, body, "m", TINYC_FLOAT, ninf);
	int lv = reg(b, body, "l", TINYC_FLOAT, fc(b, 0));
	if (b->failed)
		return;

	/* the key tiles */
	tinyc_gexpr *kend = tinyc_attn_key_end(b, body, bin(b, TINYC_GX_MUL, tinyc_gx_var(k, bx), ic(b, BM)), BM);
	int j0 = iter(b, "j0");
	if (!kend)
		return;
	tinyc_gstmt *tb = tinyc_gs_block(k);
	tinyc_gexpr *J0 = tinyc_gx_var(k, j0);
	/* with an additive mask: skip the tile when the mask is -inf at every (row, key) of
	 * the block (exact: a finite score plus -inf is -inf, whose weight is 0) */
	tinyc_gstmt *wb = tinyc_gs_block(k);
	tinyc_gexpr *kbase, *vbase;
	tinyc_attn_kv_stream(b, body, tb, wb, pipe ? cp : -1, ks, D, vs, DV, p,
		  bin(b, TINYC_GX_MUL, tinyc_gx_var(k, bx), ic(b, BM)), BM, J0, BN, kend, BM, TINYC_FLOAT,
		  &kbase, &vbase);
	if (b->failed)
		return;
	/* this row's scores of the tile (column tid of the score tile), and their maximum */
	int mt = reg(b, wb, "mtile", TINYC_FLOAT, tinyc_gx_var(k, mv));
	{
		int jj = iter(b, "jj");
		tinyc_gstmt *lb = tinyc_gs_block(k);
		tinyc_gexpr *JJ = tinyc_gx_var(k, jj);
		tinyc_gexpr *j = bin(b, TINYC_GX_ADD, J0, JJ);
		tinyc_gexpr *vj = bin(b, TINYC_GX_LT, j, ic(b, m->tk));
		int dot = simt_dot(b, lb, q, ks, bin(b, TINYC_GX_ADD, kbase, bin(b, TINYC_GX_MUL, JJ, ic(b, D))), D);
		if (dot < 0)
			return;
		/* the graph's scale and mask on the dot product */
		tinyc_gexpr *t[2] = {row, j}, *idx[TINYC_MAX_RANK];
		view_index(b, m->score, nb, p, 2, t, idx);
		b->dot = tinyc_gx_var(k, dot);
		tinyc_emit_scope_enter(em);
		tinyc_gexpr *sv = tinyc_emit_value(em, lb, m->score, idx, bin(b, TINYC_GX_LAND, vrow, vj));
		tinyc_emit_scope_leave(em);
		b->dot = NULL;
		sv = tinyc_gx_select(k, key_ok(b, row, j), tinyc_gx_cast(k, TINYC_FLOAT, sv), ninf);
		int svv = reg(b, lb, "score", TINYC_FLOAT, sv);
		if (svv < 0)
			return;
		app(b, lb, tinyc_gs_store(k, sc, bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, JJ, ic(b, BM)), tx),
					  tinyc_gx_var(k, svv), NULL));
		app(b, lb, tinyc_gs_assign(k, mt, bin(b, TINYC_GX_MAX, tinyc_gx_var(k, mt),
						       tinyc_gx_var(k, svv))));
		app(b, wb, tinyc_gs_for_range(k, jj, ic(b, 0), ic(b, BN), ic(b, 1), 2, lb));
	}
	/* online softmax: rescale by exp2(c * (m_old - m_new)); an all -inf row uses 0 */
	tinyc_gexpr *C = fc(b, m->exp_scale);
	int mu = reg(b, wb, "mref", TINYC_FLOAT,
		     tinyc_gx_select(k, bin(b, TINYC_GX_EQ, tinyc_gx_var(k, mt), ninf), fc(b, 0),
				     tinyc_gx_var(k, mt)));
	int al = reg(b, wb, "alpha", TINYC_FLOAT,
		     tinyc_gx_call(k, TINYC_GM_EXP2, bin(b, TINYC_GX_MUL, bin(b, TINYC_GX_SUB,
				   tinyc_gx_var(k, mv), tinyc_gx_var(k, mu)), C), NULL, NULL));
	if (b->failed)
		return;
	app(b, wb, tinyc_gs_assign(k, lv, bin(b, TINYC_GX_MUL, tinyc_gx_var(k, lv), tinyc_gx_var(k, al))));
	{
		int e = iter(b, "e");
		tinyc_gstmt *eb = tinyc_gs_block(k);
		tinyc_gexpr *E = tinyc_gx_var(k, e);
		app(b, eb, tinyc_gs_store(k, acc, E, bin(b, TINYC_GX_MUL, tinyc_gx_load(k, acc, E, NULL),
							 tinyc_gx_var(k, al)), NULL));
		app(b, wb, tinyc_gs_for_range(k, e, ic(b, 0), ic(b, DV), ic(b, 1), -1, eb));
	}
	{
		int jj = iter(b, "jj");
		tinyc_gstmt *lb = tinyc_gs_block(k);
		tinyc_gexpr *JJ = tinyc_gx_var(k, jj);
		int pv = reg(b, lb, "p", TINYC_FLOAT,
			     tinyc_gx_call(k, TINYC_GM_EXP2, bin(b, TINYC_GX_MUL, bin(b, TINYC_GX_SUB,
					   tinyc_gx_load(k, sc, bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, JJ, ic(b, BM)), tx), NULL),
					   tinyc_gx_var(k, mu)), C), NULL, NULL));
		if (pv < 0)
			return;
		app(b, lb, tinyc_gs_assign(k, lv, bin(b, TINYC_GX_ADD, tinyc_gx_var(k, lv), tinyc_gx_var(k, pv))));
		int e = iter(b, "e");
		tinyc_gstmt *eb = tinyc_gs_block(k);
		tinyc_gexpr *E = tinyc_gx_var(k, e);
		tinyc_gexpr *vv = tinyc_gx_load(k, vs, bin(b, TINYC_GX_ADD, vbase, bin(b, TINYC_GX_ADD,
			bin(b, TINYC_GX_MUL, JJ, ic(b, DV)), E)), NULL);
		app(b, eb, tinyc_gs_store(k, acc, E, tinyc_gx_call(k, TINYC_GM_FMA, tinyc_gx_var(k, pv), vv,
								 tinyc_gx_load(k, acc, E, NULL)), NULL));
		app(b, lb, tinyc_gs_for_range(k, e, ic(b, 0), ic(b, DV), ic(b, 1), -1, eb));
		app(b, wb, tinyc_gs_for_range(k, jj, ic(b, 0), ic(b, BN), ic(b, 1), 2, lb));
	}
	app(b, wb, tinyc_gs_assign(k, mv, tinyc_gx_var(k, mt)));

	tinyc_attn_close_key_loop(b, body, tb, j0, kend, BN, pipe, pipe, cp);

	/* O = acc / l through the graph's elementwise ops after the P*V reduction */
	int linv = reg(b, body, "linv", TINYC_FLOAT, bin(b, TINYC_GX_DIV, fc(b, 1), tinyc_gx_var(k, lv)));
	int e = iter(b, "e");
	if (linv < 0 || e < 0)
		return;
	tinyc_gstmt *eb = tinyc_gs_block(k);
	tinyc_gexpr *E = tinyc_gx_var(k, e);
	tinyc_gexpr *t[2] = {row, E}, *idx[TINYC_MAX_RANK];
	view_index(b, m->pv, nb, p, 2, t, idx);
	b->out = bin(b, TINYC_GX_MUL, tinyc_gx_load(k, acc, E, NULL), tinyc_gx_var(k, linv));
	store_out(b, eb, sk, idx, vrow);
	app(b, body, tinyc_gs_for_range(k, e, ic(b, 0), ic(b, DV), ic(b, 1), -1, eb));
}

/* Row and column of element i of a warp's m16n8 accumulator fragments (i / 4: the 8-wide
 * column block, i % 4: the lane's four values) in the tile at rows r0 + wrow, keys J0. */
static void frag_pos(abuild *b, tinyc_gexpr *r0, tinyc_gexpr *wrow, tinyc_gexpr *gq, tinyc_gexpr *tq2,
		     tinyc_gexpr *J0, int i, tinyc_gexpr **row, tinyc_gexpr **col)
{
	int nt = i / 4, r = i % 4;
	*row = bin(b, TINYC_GX_ADD, r0, bin(b, TINYC_GX_ADD, wrow, bin(b, TINYC_GX_ADD, gq, ic(b, 8 * (r / 2)))));
	*col = bin(b, TINYC_GX_ADD, J0, bin(b, TINYC_GX_ADD, tq2, ic(b, nt * 8 + r % 2)));
}

/* Scores of keys a row may not see (past Tk; under a causal mask past row + coff) to -inf
 * (the NS fragment values from sacc[so]), only in the tiles that hold such keys: the warp-uniform test is whether the tile's last
 * key passes Tk or the diagonal of the warp's first row.  Nothing when neither can. */
void tinyc_attn_mask_keys(abuild *b, tinyc_gstmt *wb, int sacc, int so, int NS, tinyc_gexpr *r0,
			  tinyc_gexpr *wrow, tinyc_gexpr *gq, tinyc_gexpr *tq2, tinyc_gexpr *J0, int BN)
{
	tinyc_gkernel *k = b->k;
	const int partial = b->m->tk % BN != 0;
	if (!partial && !b->causal)
		return;
	tinyc_gexpr *last = bin(b, TINYC_GX_ADD, J0, ic(b, BN - 1));
	tinyc_gexpr *need = partial ? bin(b, TINYC_GX_GE, last, ic(b, b->m->tk)) : NULL;
	if (b->causal) {
		tinyc_gexpr *diag = bin(b, TINYC_GX_GT, last, bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_ADD, r0, wrow),
								   ic(b, b->coff)));
		need = need ? bin(b, TINYC_GX_LOR, need, diag) : diag;
	}
	tinyc_gstmt *mb = tinyc_gs_block(k);
	for (int i = 0; i < NS; i++) {
		tinyc_gexpr *row, *col;
		frag_pos(b, r0, wrow, gq, tq2, J0, i, &row, &col);
		app(b, mb, tinyc_gs_store(k, sacc, ic(b, so + i), tinyc_gx_select(k, key_ok(b, row, col),
			tinyc_gx_load(k, sacc, ic(b, so + i), NULL), fc(b, -INFINITY)), NULL));
	}
	app(b, wb, tinyc_gs_if(k, need, mb, NULL));
}

/* op (MAX or ADD) over the fragment values arr[so + i] of row half h ((i % 4) / 2 == h,
 * i < NS <= 128) as a balanced tree: depth log2 instead of a chain of NS / 2. */
static tinyc_gexpr *row_tree(abuild *b, tinyc_gx_op op, int arr, int so, int NS, int h)
{
	tinyc_gexpr *t[64];
	int n = 0;
	for (int i = 0; i < NS && n < 64; i++)
		if ((i % 4) / 2 == h)
			t[n++] = tinyc_gx_load(b->k, arr, ic(b, so + i), NULL);
	for (; n > 1; n = (n + 1) / 2) {
		for (int i = 0; i < n / 2; i++)
			t[i] = bin(b, op, t[2 * i], t[2 * i + 1]);
		if (n % 2)	/* the odd one out moves up a level */
			t[n / 2] = t[n - 1];
	}
	return t[0];
}

/* oacc[oo + i] *= alpha of the lane's row half ((i % 4) / 2), for i < NO (appended to blk). */
static void rescale_acc(abuild *b, tinyc_gstmt *blk, int oacc, int oo, int NO, const int *al)
{
	tinyc_gkernel *k = b->k;
	for (int i = 0; i < NO; i++)
		app(b, blk, tinyc_gs_store(k, oacc, ic(b, oo + i), bin(b, TINYC_GX_MUL, tinyc_gx_load(k, oacc, ic(b, oo + i), NULL),
								   tinyc_gx_var(k, al[(i % 4) / 2])), NULL));
}

/* sacc[i] = 2^(sacc[i] c - m c), mc the register holding m c (appended to blk). */
static void exp_score(abuild *b, tinyc_gstmt *blk, int sacc, int i, tinyc_gexpr *C, int mc)
{
	tinyc_gkernel *k = b->k;
	tinyc_gexpr *pe = tinyc_gx_call(k, TINYC_GM_EXP2_APPROX, tinyc_gx_call(k, TINYC_GM_FMA,
		tinyc_gx_load(k, sacc, ic(b, i), NULL), C, tinyc_gx_unary(k, TINYC_GX_NEG, tinyc_gx_var(k, mc))),
		NULL, NULL);
	app(b, blk, tinyc_gs_store(k, sacc, ic(b, i), pe, NULL));
}

/* The row maximum in register m times c as the exponent's reference; 0 for a row still
 * at -inf (all its keys masked so far). */
static tinyc_gexpr *scaled_max(abuild *b, int m)
{
	tinyc_gkernel *k = b->k;
	return bin(b, TINYC_GX_MUL, tinyc_gx_select(k, bin(b, TINYC_GX_EQ, tinyc_gx_var(k, m), fc(b, -INFINITY)),
						     fc(b, 0), tinyc_gx_var(k, m)), fc(b, b->m->exp_scale));
}

/* The running sum of row half h of 16-row block mb times alpha (register al): the lane's
 * register l, or under psum the block's two sum fragment values of that row. */
static void scale_sums(abuild *b, tinyc_gstmt *blk, int l, int mb, int h, int al)
{
	tinyc_gkernel *k = b->k;
	if (!b->psum) {
		app(b, blk, tinyc_gs_assign(k, l, bin(b, TINYC_GX_MUL, tinyc_gx_var(k, l), tinyc_gx_var(k, al))));
		return;
	}
	for (int e = 0; e < 2; e++) {
		tinyc_gexpr *i = ic(b, mb * 4 + 2 * h + e);
		app(b, blk, tinyc_gs_store(k, b->lacc, i, bin(b, TINYC_GX_MUL, tinyc_gx_load(k, b->lacc, i, NULL),
								tinyc_gx_var(k, al)), NULL));
	}
}

/* The online-softmax step of one key tile on a 16-row block's score fragments sacc[so..]
 * (NS values, two rows per lane: h = (i % 4) / 2): new row maxima m over the 4 lanes of a
 * row, the rescale alpha = 2^((m_old - m) c) of the running sums lv and accumulators
 * oacc[oo..] (NO), then P = 2^(s c - m c) (one FMA and MUFU.EX2 a score) as dtype dt into
 * the A fragment pa[so..] and into the sums.  A row whose maximum is still -inf uses 0 as
 * its reference.  trees (the 16-bit kernel, where it was measured): the row maxima and
 * sums by balanced trees and, without a causal mask, the rescale only when a maximum
 * moved; else (the 3xTF32 kernel, as it was measured) chains and an unconditional
 * rescale. */
void tinyc_attn_online_softmax(abuild *b, tinyc_gstmt *wb, int sacc, int pa, int so, int oacc, int oo,
			       int NS, int NO, const int *mv, const int *lv, tinyc_dtype dt, int trees)
{
	tinyc_gkernel *k = b->k;
	tinyc_gexpr *C = fc(b, b->m->exp_scale);
	int mt[2], mc[2], al[2];
	for (int h = 0; h < 2; h++)
		mt[h] = reg(b, wb, h ? "mt1" : "mt0", TINYC_FLOAT, tinyc_gx_var(k, mv[h]));
	int tmp = reg(b, wb, "other", TINYC_FLOAT, NULL);
	if (b->failed)
		return;
	if (trees)
		for (int h = 0; h < 2; h++)
			app(b, wb, tinyc_gs_assign(k, mt[h], bin(b, TINYC_GX_MAX, tinyc_gx_var(k, mt[h]),
								 row_tree(b, TINYC_GX_MAX, sacc, so, NS, h))));
	else
		for (int i = 0; i < NS; i++) {
			int h = (i % 4) / 2;
			app(b, wb, tinyc_gs_assign(k, mt[h], bin(b, TINYC_GX_MAX, tinyc_gx_var(k, mt[h]),
								 tinyc_gx_load(k, sacc, ic(b, so + i), NULL))));
		}
	for (int h = 0; h < 2; h++) {
		for (int off = 1; off <= 2; off *= 2) {
			app(b, wb, tinyc_gs_shfl(k, TINYC_GSHFL_XOR, tmp, tinyc_gx_var(k, mt[h]), tinyc_gx_int(k, TINYC_INT, off), 32));
			app(b, wb, tinyc_gs_assign(k, mt[h], bin(b, TINYC_GX_MAX, tinyc_gx_var(k, mt[h]), tinyc_gx_var(k, tmp))));
		}
		if (trees && b->lazy)	/* the reference moves in the branch below */
			continue;
		mc[h] = reg(b, wb, h ? "mscaled1" : "mscaled0", TINYC_FLOAT, scaled_max(b, mt[h]));
		al[h] = reg(b, wb, h ? "alpha1" : "alpha0", TINYC_FLOAT,
			    tinyc_gx_call(k, TINYC_GM_EXP2_APPROX, tinyc_gx_call(k, TINYC_GM_FMA, tinyc_gx_var(k, mv[h]), C,
				tinyc_gx_unary(k, TINYC_GX_NEG, tinyc_gx_var(k, mc[h]))), NULL, NULL));
		if (b->failed)
			return;
		if (!trees) {
			app(b, wb, tinyc_gs_assign(k, lv[h], bin(b, TINYC_GX_MUL, tinyc_gx_var(k, lv[h]), tinyc_gx_var(k, al[h]))));
			app(b, wb, tinyc_gs_assign(k, mv[h], tinyc_gx_var(k, mt[h])));
		}
	}
	if (!trees) {
		rescale_acc(b, wb, oacc, oo, NO, al);
		for (int i = 0; i < NS; i++) {
			int h = (i % 4) / 2;
			exp_score(b, wb, sacc, so + i, C, mc[h]);
			app(b, wb, tinyc_gs_assign(k, lv[h], bin(b, TINYC_GX_ADD, tinyc_gx_var(k, lv[h]),
								 tinyc_gx_load(k, sacc, ic(b, so + i), NULL))));
			app(b, wb, tinyc_gs_store(k, pa, ic(b, so + i), tinyc_gx_cast(k, dt, tinyc_gx_load(k, sacc, ic(b, so + i), NULL)), NULL));
		}
		return;
	}
	/* without a causal mask, the rescale only where a row maximum moved (alpha is 1 but
	 * for rounding otherwise): past the first tiles most key tiles skip NO multiplies a
	 * lane (H100, T=8192: 5463 vs 5651 us); under a causal mask the branch cost more than
	 * it saved (2980 vs 3137 us), so there it is unconditional.  Lazy: only where a
	 * maximum grew by more than 8 / c, under either mask (the reference stays behind by
	 * at most that, so P < 2^8; O / l does not depend on the reference) */
	tinyc_gstmt *rb = tinyc_gs_block(k);
	tinyc_gexpr *moved = NULL;
	for (int h = 0; h < 2; h++) {
		tinyc_gexpr *ne = NULL;
		if (b->lazy) {
			ne = bin(b, TINYC_GX_GT, tinyc_gx_var(k, mt[h]), bin(b, TINYC_GX_ADD, tinyc_gx_var(k, mv[h]),
									     fc(b, 8.0 / b->m->exp_scale)));
			int mn = reg(b, rb, h ? "mnew1" : "mnew0", TINYC_FLOAT, scaled_max(b, mt[h]));
			al[h] = reg(b, rb, h ? "alpha1" : "alpha0", TINYC_FLOAT,
				    tinyc_gx_call(k, TINYC_GM_EXP2_APPROX, tinyc_gx_call(k, TINYC_GM_FMA, tinyc_gx_var(k, mv[h]),
					C, tinyc_gx_unary(k, TINYC_GX_NEG, tinyc_gx_var(k, mn))), NULL, NULL));
			if (b->failed)
				return;
		} else if (!b->causal) {
			ne = bin(b, TINYC_GX_NE, tinyc_gx_var(k, mt[h]), tinyc_gx_var(k, mv[h]));
		}
		if (ne)
			moved = moved ? bin(b, TINYC_GX_LOR, moved, ne) : ne;
		scale_sums(b, rb, lv[h], so / NS, h, al[h]);
	}
	rescale_acc(b, rb, oacc, oo, NO, al);
	if (b->lazy)
		for (int h = 0; h < 2; h++)
			app(b, rb, tinyc_gs_assign(k, mv[h], tinyc_gx_var(k, mt[h])));
	app(b, wb, moved ? tinyc_gs_if(k, moved, rb, NULL) : rb);
	for (int h = 0; h < 2; h++) {
		if (b->lazy)
			mc[h] = reg(b, wb, h ? "mscaled1" : "mscaled0", TINYC_FLOAT, scaled_max(b, mv[h]));
		else
			app(b, wb, tinyc_gs_assign(k, mv[h], tinyc_gx_var(k, mt[h])));
	}
	if (b->failed)
		return;
	for (int i = 0; i < NS; i++) {
		exp_score(b, wb, sacc, so + i, C, mc[(i % 4) / 2]);
		app(b, wb, tinyc_gs_store(k, pa, ic(b, so + i), tinyc_gx_cast(k, dt, tinyc_gx_load(k, sacc, ic(b, so + i), NULL)), NULL));
	}
	if (!b->psum)	/* else the P V step sums P by mma */
		for (int h = 0; h < 2; h++)
			app(b, wb, tinyc_gs_assign(k, lv[h], bin(b, TINYC_GX_ADD, tinyc_gx_var(k, lv[h]),
								 row_tree(b, TINYC_GX_ADD, sacc, so, NS, h))));
}

/* The output of a 16-row block of the tensor-core kernel: the row sums lv completed over
 * the 4 lanes of a row, then each accumulator element oacc[oo + i] (NO of them, in the m16n8 fragment layout)
 * times 1 / l through the graph's elementwise ops after the P*V reduction, stored at its
 * (row, column) of the output view (rows past Tq not stored). */
void tinyc_attn_store_output(abuild *b, tinyc_gstmt *body, const tinyc_skernel *sk, int oacc, int oo, int NO,
			     const int *lv, tinyc_gexpr *r0, tinyc_gexpr *wrow, tinyc_gexpr *gq,
			     tinyc_gexpr *tq2, tinyc_gexpr *const *p)
{
	tinyc_gkernel *k = b->k;
	const tinyc_attn_match *m = b->m;
	const int nb = m->rank - 2;
	int tmp = reg(b, body, "other", TINYC_FLOAT, NULL);
	if (tmp < 0)
		return;
	int linv[2];
	for (int h = 0; h < 2; h++) {
		if (b->psum)	/* the mma summed over the row's 4 lanes already */
			app(b, body, tinyc_gs_assign(k, lv[h], tinyc_gx_load(k, b->lacc, ic(b, oo / NO * 4 + 2 * h), NULL)));
		for (int off = 1; off <= 2 && !b->psum; off *= 2) {
			app(b, body, tinyc_gs_shfl(k, TINYC_GSHFL_XOR, tmp, tinyc_gx_var(k, lv[h]), tinyc_gx_int(k, TINYC_INT, off), 32));
			app(b, body, tinyc_gs_assign(k, lv[h], bin(b, TINYC_GX_ADD, tinyc_gx_var(k, lv[h]), tinyc_gx_var(k, tmp))));
		}
		linv[h] = reg(b, body, h ? "linv1" : "linv0", TINYC_FLOAT,
			      bin(b, TINYC_GX_DIV, fc(b, 1), tinyc_gx_var(k, lv[h])));
		if (linv[h] < 0)
			return;
	}
	for (int i = 0; i < NO; i++) {
		int h = (i % 4) / 2;
		tinyc_gexpr *row, *col;
		frag_pos(b, r0, wrow, gq, tq2, ic(b, 0), i, &row, &col);
		tinyc_gexpr *vr = bin(b, TINYC_GX_LT, row, ic(b, m->tq));
		tinyc_gexpr *t[2] = {row, col}, *idx[TINYC_MAX_RANK];
		view_index(b, m->pv, nb, p, 2, t, idx);
		tinyc_gstmt *eb = tinyc_gs_block(k);
		b->out = bin(b, TINYC_GX_MUL, tinyc_gx_load(k, oacc, ic(b, oo + i), NULL), tinyc_gx_var(k, linv[h]));
		store_out(b, eb, sk, idx, vr);
		app(b, body, eb);
	}
}

/* The thread roles of a tensor-core kernel with BM query rows a block, declared at the top
 * of the body: lane, warp, the query tile (its first row r0), the batch indices from
 * blockIdx.y (blockIdx.x under b->qy, the query tiles then on y: tinyc_attn_query_tile;
 * both tensor-core kernels), the accumulator fragment's row group and column pair.  0 or
 * -1. */
int tinyc_attn_warp_roles(abuild *b, const tinyc_schedule *s, int BM, tinyc_attn_warps *w)
{
	tinyc_gkernel *k = b->k;
	const tinyc_uop *su = &s->g->nodes[b->m->score];
	const int nb = b->m->rank - 2;
	tinyc_gstmt *body = k->body;
	int tid = reg(b, body, "tid", b->ix, tinyc_gx_cast(k, b->ix, tinyc_gx_special(k, TINYC_GSP_TID_X)));
	int lane = reg(b, body, "lane", b->ix, tinyc_gx_cast(k, b->ix, tinyc_gx_special(k, TINYC_GSP_LANE)));
	int warp = reg(b, body, "warp", b->ix, tinyc_gx_cast(k, b->ix, tinyc_gx_special(k, TINYC_GSP_WARP)));
	int bx = reg(b, body, "qtile", b->ix, tinyc_attn_query_tile(b, BM));
	/* the batch on grid y, or on x where the query tiles are on y (b->qy) */
	int pb = reg(b, body, "batch", b->ix, tinyc_gx_cast(k, b->ix, tinyc_gx_special(k, b->qy ? TINYC_GSP_BID_X :
												  TINYC_GSP_BID_Y)));
	if (b->failed)
		return -1;
	int nn[] = {tid, lane, warp, bx, pb};
	for (int i = 0; i < 5; i++)
		tinyc_emit_set_nonneg(b->em, nn[i]);
	w->lane = tinyc_gx_var(k, lane), w->warp = tinyc_gx_var(k, warp);
	w->r0 = bin(b, TINYC_GX_MUL, tinyc_gx_var(k, bx), ic(b, BM));
	tinyc_gexpr *rest = tinyc_gx_var(k, pb);
	for (int d = nb - 1; d >= 0; d--) {
		int64_t ext = su->shape[d].sym < 0 ? su->shape[d].val : tinyc_dim_value(&su->shape[d], s->bind);
		char name[16];
		snprintf(name, sizeof(name), "b%d", d);
		int v = reg(b, body, name, b->ix, bin(b, TINYC_GX_MOD, rest, ic(b, ext)));
		if (v < 0)
			return -1;
		tinyc_emit_set_nonneg(b->em, v);
		w->p[d] = tinyc_gx_var(k, v);
		rest = bin(b, TINYC_GX_DIV, rest, ic(b, ext));
	}
	w->gq = bin(b, TINYC_GX_DIV, w->lane, ic(b, 4));
	w->tq2 = bin(b, TINYC_GX_MUL, bin(b, TINYC_GX_MOD, w->lane, ic(b, 4)), ic(b, 2));
	return 0;
}

/* The block's Q tile (BM rows from r0) into shared qs (row stride S, element type dt): by
 * cp.async through pipeline cp (>= 0) where the view allows, else by element loads; then a
 * barrier. */
void tinyc_attn_load_q(abuild *b, tinyc_gstmt *body, int qs, int64_t S, tinyc_gexpr *const *p,
		       tinyc_gexpr *r0, int BM, int threads, int cp, tinyc_dtype dt)
{
	const tinyc_attn_match *m = b->m;
	if (cp >= 0 && tinyc_attn_tile_async_ok(b, m->q_side, 0, p)) {
		tinyc_attn_load_tile_async(b, body, qs, ic(b, 0), S, m->q_side, 0, p, r0, BM, m->d, m->tq, threads);
		app(b, body, tinyc_gs_cp_commit(b->k, cp));
		app(b, body, tinyc_gs_cp_wait(b->k, cp, 0));
	} else {
		tinyc_attn_load_tile(b, body, qs, S, m->q_side, 0, p, r0, BM, m->d, m->tq, threads, dt);
	}
	app(b, body, tinyc_gs_barrier(b->k));
}

/* The running state of a warp's MB 16-row blocks, declared in body: the accumulator
 * fragments oacc at 0, and per block the maxima mv (-inf) and sums lv (0) of rows g and
 * g + 8.  0 or -1. */
int tinyc_attn_row_state(abuild *b, tinyc_gstmt *body, int oacc, int MB, int *mv, int *lv)
{
	app(b, body, tinyc_gs_decl(b->k, oacc, fc(b, 0)));
	for (int h = 0; h < 2 * MB; h++) {
		mv[h] = reg(b, body, h % 2 ? "m1" : "m0", TINYC_FLOAT, fc(b, -INFINITY));
		lv[h] = reg(b, body, h % 2 ? "l1" : "l0", TINYC_FLOAT, fc(b, 0));
	}
	return b->failed ? -1 : 0;
}

/* The key loop's variable j0 (iterating BN-key tiles), its expression *J0 and the loop's two
 * bodies: *tb for the tile's copies, *wb for its warp work. j0, or -1 on failure. */
int tinyc_attn_key_loop(abuild *b, tinyc_gstmt **tb, tinyc_gstmt **wb, tinyc_gexpr **J0)
{
	int j0 = iter(b, "j0");
	*tb = tinyc_gs_block(b->k);
	*wb = tinyc_gs_block(b->k);
	*J0 = j0 < 0 ? NULL : tinyc_gx_var(b->k, j0);
	return j0;
}

/* Close the key loop: with barrier, a barrier at the end of the tile body tb (the next
 * tile's copies overwrite this stage); the loop of j0 over [0, kend) in BN steps appended to
 * body; with wait, a wait for every copy in flight after it. */
void tinyc_attn_close_key_loop(abuild *b, tinyc_gstmt *body, tinyc_gstmt *tb, int j0, tinyc_gexpr *kend,
			       int BN, int barrier, int wait, int cp)
{
	tinyc_gkernel *k = b->k;
	if (barrier)
		app(b, tb, tinyc_gs_barrier(k));
	app(b, body, tinyc_gs_for_range(k, j0, ic(b, 0), kend, ic(b, BN), 0, tb));
	if (wait)
		app(b, body, tinyc_gs_cp_wait(k, cp, 0));
}

/* The set-up before the key loop of the tensor-core kernels: the row state of
 * tinyc_attn_row_state, the key end of the query tile at r0 (tinyc_attn_key_end) and, with
 * pipe (K/V tiles land where Q was), a barrier so every warp has its Q fragments first.
 * The key end, or NULL on failure. */
tinyc_gexpr *tinyc_attn_loop_setup(abuild *b, tinyc_gstmt *body, int oacc, int MB, int *mv, int *lv,
				   tinyc_gexpr *r0, int BM, int pipe)
{
	if (tinyc_attn_row_state(b, body, oacc, MB, mv, lv) < 0)
		return NULL;
	tinyc_gexpr *kend = tinyc_attn_key_end(b, body, r0, BM);
	if (kend && pipe)
		app(b, body, tinyc_gs_barrier(b->k));
	return kend;
}

/* The graph's scale (and an additive mask) on the raw score fragment values sacc[i0..n)
 * (NS a 16-row block; wrow[i / NS] its first row), in place, through the emitter. */
void tinyc_attn_scores(abuild *b, tinyc_gstmt *wb, int sacc, int i0, int n, int NS, const tinyc_attn_warps *w,
		       tinyc_gexpr *const *wrow, tinyc_gexpr *J0)
{
	tinyc_gkernel *k = b->k;
	const tinyc_attn_match *m = b->m;
	for (int i = i0; i < n; i++) {
		tinyc_gexpr *row, *col;
		frag_pos(b, w->r0, wrow[i / NS], w->gq, w->tq2, J0, i % NS, &row, &col);
		tinyc_gexpr *vj = bin(b, TINYC_GX_LT, col, ic(b, m->tk));
		tinyc_gexpr *t[2] = {row, col}, *idx[TINYC_MAX_RANK];
		view_index(b, m->score, m->rank - 2, w->p, 2, t, idx);
		tinyc_gstmt *eb = tinyc_gs_block(k);
		b->dot = tinyc_gx_load(k, sacc, ic(b, i), NULL);
		tinyc_emit_scope_enter(b->em);
		tinyc_gexpr *sv = tinyc_emit_value(b->em, eb, m->score, idx,
			bin(b, TINYC_GX_LAND, bin(b, TINYC_GX_LT, row, ic(b, m->tq)), vj));
		tinyc_emit_scope_leave(b->em);
		b->dot = NULL;
		app(b, eb, tinyc_gs_store(k, sacc, ic(b, i), tinyc_gx_cast(k, TINYC_FLOAT, sv), NULL));
		app(b, wb, eb);
	}
}

/* acc += A B for the 16-row blocks [mb0, mb1) of the warp: for each 16-wide step x of
 * the contraction (nx of them) and 16-wide column pair y of the result (ny), B's
 * fragment by ldmatrix (trans) from shared sh at base + row * S + col, where the row is
 * 16 y + rr and the column 16 x + cc (row_x: the row 16 x + rr and the column 16 y + cc),
 * then two mma a block: A at a[mb * na + 8 x], acc at acc[mb * nacc + (2 y + h) * 4]. */
static void frag_mma(abuild *b, tinyc_gstmt *wb, int acc, int nacc, int a, int na, int frag, int sh,
		     tinyc_gexpr *base, int64_t S, int nx, int ny, int row_x, tinyc_gexpr *rr, tinyc_gexpr *cc,
		     int trans, int mb0, int mb1)
{
	tinyc_gkernel *k = b->k;
	for (int x = 0; x < nx; x++)
		for (int y = 0; y < ny; y++) {
			int r = row_x ? x : y, c = row_x ? y : x;
			tinyc_gexpr *src = bin(b, TINYC_GX_ADD, base, bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL,
				bin(b, TINYC_GX_ADD, ic(b, r * 16), rr), ic(b, S)), bin(b, TINYC_GX_ADD, ic(b, c * 16), cc)));
			app(b, wb, tinyc_gs_ldmatrix(k, frag, ic(b, 0), sh, src, 4, trans));
			for (int mb = mb0; mb < mb1; mb++)
				for (int h = 0; h < 2; h++) {
					int o = mb * nacc + (2 * y + h) * 4;
					app(b, wb, tinyc_gs_mma(k, acc, ic(b, o), a, ic(b, mb * na + x * 8), frag, ic(b, h * 4),
								acc, ic(b, o)));
				}
		}
}

/* S = Q K^T of the 16-row blocks [mb0, mb1) of the warp into their score fragments (added
 * to what they hold), K from the stage at kbase (appended to wb). */
static void qk_mma(abuild *b, tinyc_gstmt *wb, const mma_tiles *t, tinyc_gexpr *kbase, int mb0, int mb1)
{
	frag_mma(b, wb, t->sacc, t->NS, t->qa, t->NQ, t->kb, t->ks, kbase, t->QS, (int)(t->D / 16), t->BN / 16, 0,
		 t->kn, t->kc, 0, mb0, mb1);
}

/* O += P V of the 16-row blocks [mb0, mb1) of the warp, V from the stage at vbase by
 * ldmatrix.trans (appended to wb); under psum also the row sums of P. */
void tinyc_attn_pv_mma(abuild *b, tinyc_gstmt *wb, const mma_tiles *t, tinyc_gexpr *vbase, int mb0, int mb1)
{
	frag_mma(b, wb, t->oacc, t->NO, t->pa, t->NS, t->vb, t->vs, vbase, t->VS, t->BN / 16, (int)(t->DV / 16), 1,
		 t->lr, t->lc, 1, mb0, mb1);
	tinyc_attn_row_sums(b, wb, t, mb0, mb1);
}

/* Under psum, the row sums of P of the 16-row blocks [mb0, mb1) of the warp: P times a
 * column block of ones, accumulated in lacc (appended to wb). */
void tinyc_attn_row_sums(abuild *b, tinyc_gstmt *wb, const mma_tiles *t, int mb0, int mb1)
{
	if (b->psum)
		for (int mb = mb0; mb < mb1; mb++)
			for (int kk = 0; kk < t->BN / 16; kk++)
				app(b, wb, tinyc_gs_mma(b->k, b->lacc, ic(b, mb * 4), t->pa, ic(b, mb * t->NS + kk * 8), b->ones,
							ic(b, 0), b->lacc, ic(b, mb * 4)));
}

/* The online softmax's variant of plan ap (b->lazy, b->psum); under psum the row-sum
 * fragments lacc (4 floats for each of the warp's MB 16-row blocks, zero) and the ones
 * fragment, declared in body.  0 or -1. */
int tinyc_attn_softmax_variant(abuild *b, tinyc_gstmt *body, const tinyc_attn_plan *ap, int MB)
{
	tinyc_gkernel *k = b->k;
	const tinyc_dtype dt = b->m->in_dtype;
	b->lazy = (ap->softmax & TINYC_ATTN_LAZY) != 0;
	b->psum = (ap->softmax & TINYC_ATTN_PSUM) != 0;
	if (!b->psum)
		return 0;
	b->lacc = tinyc_gk_reg_array(k, "lacc", TINYC_FLOAT, MB * 4);
	b->ones = tinyc_gk_reg_array(k, "ones", dt, 4);
	if (b->lacc < 0 || b->ones < 0) {
		b->failed = 1;
		return -1;
	}
	app(b, body, tinyc_gs_decl(k, b->lacc, fc(b, 0)));
	app(b, body, tinyc_gs_decl(k, b->ones, tinyc_gx_cast(k, dt, fc(b, 1))));
	return 0;
}

/* The tensor-core variant (16-bit inputs): bm / 16 warps, each owning 16 query rows; Q K^T
 * and P V on mma.sync m16n8k16 with fp32 accumulators, fragments from padded shared tiles
 * by ldmatrix (V transposed); the score fragment becomes P's A fragment in registers.  K
 * and V stream through cp.async rings of ap->stages (2: kv_stream, 3: kv_ring) when the
 * views allow 16-byte copies (the next tiles' copies in flight while this one is
 * computed), else through synchronous element loads. */
void tinyc_attn_build_mma(abuild *b, const tinyc_schedule *s, const tinyc_skernel *sk,
			  const tinyc_attn_plan *ap, const tinyc_attn_warps *roles)
{
	tinyc_gkernel *k = b->k;
	const tinyc_attn_match *m = b->m;
	mma_tiles t;
	t.MB = ap->mb > 1 ? 2 : 1;	/* 16-row blocks a warp (wrow, mv, lv hold 2) */
	const int MB = t.MB, BM = ap->bm, BN = ap->bn, NT = BM * 2 / MB;
	t.BN = BN, t.D = m->d, t.DV = m->dv, t.QS = t.D + 8, t.VS = t.DV + 8;
	t.NS = BN / 8 * 4, t.NO = (int)(t.DV / 8) * 4, t.NQ = (int)(t.D / 16) * 8;
	const int64_t D = t.D, QS = t.QS, VS = t.VS;
	const int NS = t.NS, NO = t.NO, NQ = t.NQ;
	const tinyc_dtype dt = m->in_dtype;
	tinyc_gstmt *body = k->body;

	tinyc_attn_warps w;
	if (roles)
		w = *roles;
	else if (tinyc_attn_warp_roles(b, s, BM, &w) < 0)
		return;
	tinyc_gexpr *L = w.lane, *Wp = w.warp, *r0 = w.r0, *const *p = w.p;
	/* lane roles: A / V.trans ldmatrix rows and columns, K (non-trans) rows and columns,
	 * accumulator row group and column pair */
	t.lr = bin(b, TINYC_GX_MOD, L, ic(b, 16));
	t.lc = bin(b, TINYC_GX_MUL, bin(b, TINYC_GX_DIV, L, ic(b, 16)), ic(b, 8));
	t.kn = bin(b, TINYC_GX_ADD, t.lc, bin(b, TINYC_GX_MOD, L, ic(b, 8)));
	t.kc = bin(b, TINYC_GX_MUL, bin(b, TINYC_GX_MOD, bin(b, TINYC_GX_DIV, L, ic(b, 8)), ic(b, 2)), ic(b, 8));
	tinyc_gexpr *lr = t.lr, *lc = t.lc, *gq = w.gq, *tq2 = w.tq2;
	/* the first row of each 16-row block of the warp */
	tinyc_gexpr *wrow[2];
	for (int mb = 0; mb < MB; mb++)
		wrow[mb] = bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, Wp, ic(b, 16 * MB)), ic(b, 16 * mb));

	/* pipelined: K and V through 2-stage cp.async rings (the Q tile passes through the
	 * K ring before the loop); else one synchronous tile each and a Q tile */
	const int pipe = ap->stages > 1 && tinyc_attn_tile_async_ok(b, m->k_side, 1, p) &&
			 tinyc_attn_tile_async_ok(b, m->v_side, 2, p);
	const int NR = pipe ? (ap->stages > 2 ? ap->stages : 2) : 1;	/* ring stages */
	b->stages = NR;
	const int64_t kring = pipe ? (NR * BN * QS > BM * QS ? NR * BN * QS : BM * QS) : BN * QS;
	int qs = pipe ? -1 : tinyc_gk_shared(k, "qtile_s", dt, BM * QS, 16, 0);
	const int64_t vring = (int64_t)NR * BN * VS;
	b->dyn = (kring + vring) * 2 + 16 > 48 * 1024;	/* above the static limit */
	const int dyn = b->dyn;
	int ks = tinyc_gk_shared(k, "ktile", dt, kring, 16, dyn);
	int vs = tinyc_gk_shared(k, "vtile", dt, vring, 16, dyn);
	int cp = pipe ? tinyc_gk_pipe(k, "kv", TINYC_GPIPE_CP_ASYNC, NR, -1) : 0;
	if (pipe)
		qs = ks;
	int qa = tinyc_gk_reg_array(k, "qa", dt, MB * NQ);
	int kb = tinyc_gk_reg_array(k, "kb", dt, 8);
	int vb = tinyc_gk_reg_array(k, "vb", dt, 8);
	int pa = tinyc_gk_reg_array(k, "pa", dt, MB * NS);
	int sacc = tinyc_gk_reg_array(k, "sacc", TINYC_FLOAT, MB * NS);
	int oacc = tinyc_gk_reg_array(k, "oacc", TINYC_FLOAT, MB * NO);
	if (qs < 0 || ks < 0 || vs < 0 || cp < 0 || qa < 0 || kb < 0 || vb < 0 || pa < 0 || sacc < 0 ||
	    oacc < 0) {
		b->failed = 1;
		return;
	}
	t.ks = ks, t.vs = vs, t.qa = qa, t.kb = kb, t.vb = vb, t.pa = pa, t.sacc = sacc, t.oacc = oacc;
	if (tinyc_attn_softmax_variant(b, body, ap, MB) < 0)
		return;
	tinyc_attn_load_q(b, body, qs, QS, p, r0, BM, NT, pipe ? cp : -1, dt);
	app(b, body, tinyc_gs_decl(k, qa, NULL));
	for (int mb = 0; mb < MB; mb++)
		for (int kk = 0; kk < D / 16; kk++)
			app(b, body, tinyc_gs_ldmatrix(k, qa, ic(b, mb * NQ + kk * 8), qs,
				bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, bin(b, TINYC_GX_ADD, wrow[mb], lr), ic(b, QS)),
				    bin(b, TINYC_GX_ADD, ic(b, kk * 16), lc)), 4, 0));
	int mv[4], lv[4];	/* row maximum and sum of rows gq and gq + 8 of each block */
	tinyc_gexpr *kend = tinyc_attn_loop_setup(b, body, oacc, MB, mv, lv, r0, BM, pipe);
	if (!kend)
		return;
	tinyc_gstmt *tb, *wb;
	tinyc_gexpr *J0;
	int j0 = tinyc_attn_key_loop(b, &tb, &wb, &J0);
	if (j0 < 0)
		return;
	tinyc_gexpr *kbase, *vbase;
	if (NR > 2)
		kv_ring(b, body, tb, wb, cp, NR, ks, QS, vs, VS, p, r0, BM, J0, BN, kend, NT, &kbase, &vbase);
	else
		tinyc_attn_kv_stream(b, body, tb, wb, pipe ? cp : -1, ks, QS, vs, VS, p, r0, BM, J0, BN, kend,
				     NT, dt, &kbase, &vbase);
	if (b->failed)
		return;
	app(b, wb, tinyc_gs_decl(k, sacc, fc(b, 0)));
	app(b, wb, tinyc_gs_decl(k, kb, NULL));
	qk_mma(b, wb, &t, kbase, 0, MB);
	/* scale (and an additive mask) through the graph, then the key bounds, row
	 * maxima, the online-softmax update and P */
	tinyc_attn_scores(b, wb, sacc, 0, MB * NS, NS, &w, wrow, J0);
	app(b, wb, tinyc_gs_decl(k, pa, NULL));
	for (int mb = 0; mb < MB; mb++) {
		tinyc_attn_mask_keys(b, wb, sacc, mb * NS, NS, r0, wrow[mb], gq, tq2, J0, BN);
		tinyc_attn_online_softmax(b, wb, sacc, pa, mb * NS, oacc, mb * NO, NS, NO, mv + 2 * mb,
					  lv + 2 * mb, dt, 1);
	}
	app(b, wb, tinyc_gs_decl(k, vb, NULL));
	tinyc_attn_pv_mma(b, wb, &t, vbase, 0, MB);
	tinyc_attn_close_key_loop(b, body, tb, j0, kend, BN, NR == 2, pipe, cp);
	for (int mb = 0; mb < MB; mb++)
		tinyc_attn_store_output(b, body, sk, oacc, mb * NO, NO, lv + 2 * mb, r0, wrow[mb], gq, tq2, p);
}

int tinyc_attention_build(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_schedule *s,
			  const tinyc_indexbook *ib, int kernel)
{
	const tinyc_skernel *sk = &s->kerns[kernel];
	const tinyc_plan *p = tinyc_skernel_plan(sk);
	if (!p || p->kind != TINYC_PLAN_ATTENTION || !p->ext)
		return tinyc_error(ctx, "CodegenError", "kernel %s: not an ATTENTION plan", sk->name);
	const tinyc_attn_plan *ap = p->ext;
	tinyc_gkernel *k = tinyc_gk_alloc(gm, sk->name);
	if (!k)
		return -1;
	/* int indices when every buffer the kernel touches is below 2^31 elements */
	tinyc_dtype ix = TINYC_INT;
	for (int j = -1; j < sk->nin; j++) {
		const tinyc_sbuf *sb = &s->bufs[j < 0 ? sk->out_buf : sk->in_bufs[j]];
		double n = 1;
		for (int d = 0; d < sb->rank; d++)
			n *= tinyc_sched_dim_est(s, &sb->shape[d]);
		if (n >= 2147483647.0 / 2)
			ix = TINYC_LONG;
	}
	k->index_dtype = ix;
	tinyc_emit *em = tinyc_emit_alloc(ctx, k, s, ib, kernel);
	if (!em)
		return -1;
	abuild b = {ctx, k, em, &ap->m, ix, NULL, NULL, 0, 1, 0, 0, 0};
	em->leaf = attn_leaf;
	em->leaf_user = &b;
	const tinyc_uop *su = &s->g->nodes[ap->m.score];
	double batch = 1;
	for (int d = 0; d < ap->m.rank - 2; d++)
		batch *= tinyc_sched_dim_est(s, &su->shape[d]);
	k->block[0] = ap->mma ? 2 * ap->bm / (ap->mb > 1 ? 2 : 1) : ap->bm, k->block[1] = k->block[2] = 1;
	b.causal = tinyc_attn_causal_offset(em, &ap->m, &b.coff) == 1;
	/* causal 128-row blocks whose batch's K and V fit in L2 (H100, B*H=96, T=2048: 246.5
	 * -> 234.7 us); beyond, a head's blocks run together and share its K/V in L2 */
	double kv_bytes = batch * (double)ap->m.tk * (double)(ap->m.d + ap->m.dv) *
			  tinyc_dtype_size(ap->m.in_dtype);
	b.qy = b.causal && ap->mma && ap->bm == 128 && kv_bytes <= s->dev.l2_bytes &&
	       (ap->m.tq + ap->bm - 1) / ap->bm <= 65535;	/* grid y limit */
	k->grid[b.qy] = tinyc_gx_int(k, TINYC_LONG, (ap->m.tq + ap->bm - 1) / ap->bm);
	k->grid[!b.qy] = tinyc_gx_int(k, TINYC_LONG, (int64_t)batch);
	k->grid[2] = tinyc_gx_int(k, TINYC_LONG, 1);
	if (ap->mma)	/* 2 blocks per SM by default: at most 128 registers a thread */
		k->min_blocks_per_sm = ap->min_blocks;
	if (ap->mma == 2)
		tinyc_attn_build_tf32(&b, s, sk, ap);
	else if (ap->mma == 3) {
		snprintf(gm->target, sizeof(gm->target), "sm_90a");	/* wgmma (planned on sm_90 only) */
		tinyc_attn_build_wgmma(&b, s, sk, ap);
	}
	else if (ap->mma)
		tinyc_attn_build_mma(&b, s, sk, ap, NULL);
	else
		build_body(&b, s, sk, ap);
	int failed = b.failed || em->error;
	tinyc_emit_free(em);
	if (failed) {
		if (!tinyc_ctx_error_count(ctx))
			tinyc_error(ctx, "CodegenError", "attention %s: building the kernel failed", sk->name);
		return -1;
	}
	char comment[384];
	snprintf(comment, sizeof(comment), "%s: flash attention (%s, fp32 statistics), %d query "
		 "rows per block, %d keys per shared tile, %d stage%s%s%s, Tq=%lld Tk=%lld d=%lld dv=%lld",
		 sk->name, ap->mma == 2 ? "3xTF32 mma.sync m16n8k8" : ap->mma == 3 && b.swz ? (ap->pvwg ? "S on wgmma m64n64k16 a key tile ahead, P V on wgmma with P from registers" : "S on wgmma m64n64k16 a key tile ahead, P V on mma.sync m16n8k16") : ap->mma ? "mma.sync m16n8k16" : "SIMT", ap->bm, ap->bn, b.stages,
		 b.stages > 1 ? "s (cp.async)" : "",
		 b.lazy ? ", lazy rescale" : "", b.psum ? ", row sums by mma" : "", (long long)ap->m.tq, (long long)ap->m.tk, (long long)ap->m.d,
		 (long long)ap->m.dv);
	k->comment = tinyc_gpu_strdup(gm, comment);
	tinyc_gk_sort_params(k);
	return 0;
}
