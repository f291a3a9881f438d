/* Rearrange plan -> GPU IR: the kernel of a TINYC_PLAN_REARRANGE schedule kernel (the graph
 * path of seed 003; the descriptor API emits CUDA text directly, codegen/rearrange_cuda.c).
 *
 * A rearrange moves bits, so the kernel's pointers are typed as unsigned words of its
 * access width, whatever the tensors' dtype: the elementwise kernel moves one unit per
 * thread as words of min(unit, 8) bytes (a 16- or 32-byte unit is one or two vector copies
 * of two 8-byte words); the tiled kernel reads and writes words of pack * elem bytes and
 * keeps single elements (unsigned integers of the element size) in the shared tile,
 * splitting and joining words with shifts.  Every stride of the plan is divided by the
 * word size when the builder runs (the planner made them multiples), so the kernel
 * computes word indices directly: index = view offset + sum of decomposed index * stride.
 * The decomposition of the block and thread indices by the plan's constant lengths, the
 * boundary constraints, the tile loops (T / ty rows per thread, unrolled) and the padded
 * tile are the planner's (sched/rearrange.c) and the host simulation's.
 */
#include <inttypes.h>
#include <string.h>

#include "codegen/codegen.h"

/* Unsigned integer dtype of n bytes (1, 2, 4, 8). */
static tinyc_dtype uint_of(int n)
{
	switch (n) {
	case 1: return TINYC_UCHAR;
	case 2: return TINYC_USHORT;
	case 4: return TINYC_UINT;
	default: return TINYC_ULONG;
	}
}

/* State of one build. */
typedef struct rbuild {
	tinyc_ctx *ctx;				/* diagnostics */
	tinyc_gkernel *k;			/* the kernel being built */
	const tinyc_rearrange_plan *p;		/* its plan */
	tinyc_dtype idx;			/* index dtype: int or long */
	tinyc_dtype lin;			/* linear indices of tile groups: uint or ulong */
	int failed;				/* an allocation failed */
} rbuild;

/* An integer constant of dtype dt. */
static tinyc_gexpr *cst(rbuild *b, tinyc_dtype dt, int64_t v)
{
	return tinyc_gx_int(b->k, dt, v);
}

/* a op b. */
static tinyc_gexpr *bin(rbuild *b, tinyc_gx_op op, tinyc_gexpr *x, tinyc_gexpr *y)
{
	return tinyc_gx_binary(b->k, op, x, y);
}

/* Declare a register `name` of dtype dt initialised to init in block; returns the
 * variable, or -1. */
static int decl(rbuild *b, tinyc_gstmt *block, const char *name, tinyc_dtype dt,
		tinyc_gexpr *init)
{
	int v = tinyc_gk_reg(b->k, name, dt);
	if (v < 0 || !init || tinyc_gs_append(b->k, block, tinyc_gs_decl(b->k, v, init)) < 0) {
		b->failed = 1;
		return -1;
	}
	return v;
}

/* Append s to block. */
static void append(rbuild *b, tinyc_gstmt *block, tinyc_gstmt *s)
{
	if (!s || tinyc_gs_append(b->k, block, s) < 0)
		b->failed = 1;
}

/* Decompose the unsigned value `from` (a special id) over dims d[0..n) (fastest first) into
 * registers prefix0.. of dtype uint: `% len`, `/ len` by constants, the last takes the
 * rest.  The variables go to vars[]. */
static void decompose(rbuild *b, tinyc_gstmt *block, tinyc_gspecial from, const char *prefix,
		      const tinyc_rearrange_dim *d, int n, int *vars)
{
	tinyc_gkernel *k = b->k;
	char name[16];
	snprintf(name, sizeof(name), "%s", prefix);
	int lin = decl(b, block, name, TINYC_UINT,
		       tinyc_gx_cast(k, TINYC_UINT, tinyc_gx_special(k, from)));
	if (lin < 0)
		return;
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%d", prefix, i);
		tinyc_gexpr *v = tinyc_gx_var(k, lin);
		if (i < n - 1)
			v = bin(b, TINYC_GX_MOD, v, cst(b, TINYC_UINT, d[i].len));
		vars[i] = decl(b, block, name, TINYC_UINT, v);
		if (i < n - 1)
			append(b, block, tinyc_gs_assign(k, lin, bin(b, TINYC_GX_DIV, tinyc_gx_var(k, lin),
								     cst(b, TINYC_UINT, d[i].len))));
	}
}

/* sum + (idx)var * stride (nothing for a zero stride). */
static tinyc_gexpr *add_term(rbuild *b, tinyc_gexpr *sum, int var, int64_t stride)
{
	if (!stride || var < 0)
		return sum;
	tinyc_gexpr *t = bin(b, TINYC_GX_MUL, tinyc_gx_cast(b->k, b->idx, tinyc_gx_var(b->k, var)),
			     cst(b, b->idx, stride));
	return bin(b, TINYC_GX_ADD, sum, t);
}

/* Bound on |offset| (elements or words: scale divides the strides) over dims d[0..n). */
static int64_t reach(const tinyc_rearrange_dim *d, int n, int use_dst)
{
	int64_t r = 0;
	for (int i = 0; i < n; i++) {
		int64_t s = use_dst ? d[i].dst : d[i].src;
		r += (d[i].len - 1) * (s < 0 ? -s : s);
	}
	return r;
}

/* The elementwise kernel: y[dof] = x[so], one unit per thread. */
static void build_elementwise(rbuild *b, int yv, int xv, int64_t x_w, int64_t y_w, int ws)
{
	tinyc_gkernel *k = b->k;
	const tinyc_rearrange_plan *p = b->p;
	int64_t m = p->unit / ws;	/* words per unit */
	int gv[TINYC_REARRANGE_PLAN_DIMS], bv[TINYC_REARRANGE_PLAN_DIMS];
	for (int i = 0; i < TINYC_REARRANGE_PLAN_DIMS; i++)
		gv[i] = bv[i] = -1;
	if (p->ngrid)
		decompose(b, k->body, TINYC_GSP_BID_X, "g", p->grid, p->ngrid, gv);
	if (p->nblock)
		decompose(b, k->body, TINYC_GSP_TID_X, "t", p->block, p->nblock, bv);
	tinyc_gexpr *so = cst(b, b->idx, x_w), *dof = cst(b, b->idx, y_w);
	for (int i = 0; i < p->ngrid; i++) {
		so = add_term(b, so, gv[i], p->grid[i].src * m);
		dof = add_term(b, dof, gv[i], p->grid[i].dst * m);
	}
	for (int i = 0; i < p->nblock; i++) {
		so = add_term(b, so, bv[i], p->block[i].src * m);
		dof = add_term(b, dof, bv[i], p->block[i].dst * m);
	}
	int sv = decl(b, k->body, "so", b->idx, so);
	int dv = decl(b, k->body, "dof", b->idx, dof);
	if (b->failed)
		return;
	/* the unit: copies of at most 16 bytes */
	tinyc_gstmt *body = tinyc_gs_block(k);
	int per = ws == 8 && m >= 2 ? 2 : 1;	/* words per copy */
	for (int64_t q = 0; q < m; q += per) {
		tinyc_gexpr *di = bin(b, TINYC_GX_ADD, tinyc_gx_var(k, dv), cst(b, b->idx, q));
		tinyc_gexpr *si = bin(b, TINYC_GX_ADD, tinyc_gx_var(k, sv), cst(b, b->idx, q));
		append(b, body, tinyc_gs_copy(k, yv, di, xv, si, per, NULL, 0));
	}
	/* the constraint of an uneven split: outer * per_block + inner < len */
	tinyc_gexpr *cond = NULL;
	for (int c = 0; c < p->ncons; c++) {
		const tinyc_rearrange_constraint *q = &p->cons[c];
		tinyc_dtype t = q->len > INT32_MAX ? TINYC_ULONG : TINYC_UINT;
		tinyc_gexpr *e = bin(b, TINYC_GX_ADD,
				     bin(b, TINYC_GX_MUL, tinyc_gx_cast(k, t, tinyc_gx_var(k, gv[q->grid])),
					 cst(b, t, q->per_block)),
				     tinyc_gx_cast(k, t, tinyc_gx_var(k, bv[q->inner])));
		e = bin(b, TINYC_GX_LT, e, cst(b, t, q->len));
		cond = cond ? bin(b, TINYC_GX_LAND, cond, e) : e;
	}
	append(b, k->body, cond ? tinyc_gs_if(k, cond, body, NULL) : body);
}

/* Tile group offset: `lin` (a fresh register holding the linear index within the group)
 * decomposed by the group's lengths, each index times its stride divided by P. */
static tinyc_gexpr *group_offset(rbuild *b, tinyc_gstmt *block, const char *name,
				 tinyc_gexpr *lin, const tinyc_rearrange_dim *g, int n, int use_dst,
				 int P, tinyc_gexpr *sum)
{
	tinyc_gkernel *k = b->k;
	int lv = decl(b, block, name, b->lin, lin);
	if (lv < 0)
		return NULL;
	for (int i = 0; i < n; i++) {
		int64_t st = (use_dst ? g[i].dst : g[i].src) / P;
		tinyc_gexpr *v = tinyc_gx_var(k, lv);
		if (i < n - 1) {	/* this dim's index, before the division */
			char iname[24];
			snprintf(iname, sizeof(iname), "%s%d", name, i);
			int iv = decl(b, block, iname, b->lin,
				      bin(b, TINYC_GX_MOD, v, cst(b, b->lin, g[i].len)));
			if (iv < 0)
				return NULL;
			v = tinyc_gx_var(k, iv);
		}
		if (st)
			sum = bin(b, TINYC_GX_ADD, sum,
				  bin(b, TINYC_GX_MUL, tinyc_gx_cast(k, b->idx, v), cst(b, b->idx, st)));
		if (i < n - 1)
			append(b, block, tinyc_gs_assign(k, lv, bin(b, TINYC_GX_DIV, tinyc_gx_var(k, lv),
								    cst(b, b->lin, g[i].len))));
	}
	return sum;
}

/* The tiled kernel: a T x T tile (rows: group A, columns: group B) read along B into
 * shared memory, a barrier, written along A; words of P elements, `repeat` words per
 * thread per row (word columns tx + 32 j); a thread's loads go to a register array first,
 * then to the tile, so they are all in flight at once. */
static void build_tiled(rbuild *b, int yv, int xv, int64_t x_w, int64_t y_w)
{
	tinyc_gkernel *k = b->k;
	const tinyc_rearrange_plan *p = b->p;
	const int T = p->tile, P = p->pack, E = p->elem, W = p->tile + p->tile_pad;
	tinyc_dtype edt = uint_of(E), wdt = uint_of(P * E);
	int tile = tinyc_gk_shared(k, "tile", edt, (int64_t)T * W, 0, 0);
	if (tile < 0) {
		b->failed = 1;
		return;
	}
	int gv[TINYC_REARRANGE_PLAN_DIMS];
	decompose(b, k->body, TINYC_GSP_BID_X, "g", p->grid, p->ngrid, gv);
	/* the view offsets plus the batch dims (grid 2..): tile origin in x and y, in words */
	tinyc_gexpr *xb = cst(b, b->idx, x_w), *ya = cst(b, b->idx, y_w);
	for (int i = 2; i < p->ngrid; i++) {
		xb = add_term(b, xb, gv[i], p->grid[i].src / P);
		ya = add_term(b, ya, gv[i], p->grid[i].dst / P);
	}
	xb = add_term(b, xb, gv[1], T / P);
	ya = add_term(b, ya, gv[0], T / P);
	int xbv = decl(b, k->body, "xb", b->idx, xb);
	int yav = decl(b, k->body, "ya", b->idx, ya);
	int txv = decl(b, k->body, "tx", TINYC_INT, tinyc_gx_special(k, TINYC_GSP_TID_X));
	int tyv = decl(b, k->body, "ty", TINYC_INT, tinyc_gx_special(k, TINYC_GSP_TID_Y));
	/* rows (A) and columns (B) left in this tile */
	int left[2] = {-1, -1};
	tinyc_dtype ldt[2] = {TINYC_INT, TINYC_INT};	/* long where a length needs it */
	for (int c = 0; c < p->ncons; c++) {
		const tinyc_rearrange_constraint *q = &p->cons[c];
		tinyc_dtype t = ldt[q->inner] = q->len > INT32_MAX ? TINYC_LONG : TINYC_INT;
		tinyc_gexpr *e = bin(b, TINYC_GX_SUB, cst(b, t, q->len),
				     bin(b, TINYC_GX_MUL, tinyc_gx_cast(k, t, tinyc_gx_var(k, gv[q->grid])),
					 cst(b, t, q->per_block)));
		left[q->inner] = decl(b, k->body, q->inner ? "left_b" : "left_a", t, e);
	}
	if (b->failed)
		return;
	const int K = T / p->ty, R = p->repeat;
	int vv = tinyc_gk_reg_array(k, "v", wdt, (int64_t)K * R);	/* [row k][word j] */
	if (vv < 0) {
		b->failed = 1;
		return;
	}
	append(b, k->body, tinyc_gs_decl(k, vv, NULL));
	/* step 0: loads into v; 1: v into the tile; barrier; 2: the tile to y */
	for (int step = 0; step < 3; step++) {
		int phase = step == 2;	/* rows: A in steps 0, 1; B in step 2 */
		int kv = tinyc_gk_reg(k, "k", TINYC_INT);
		if (kv < 0) {
			b->failed = 1;
			return;
		}
		tinyc_gstmt *kbody = tinyc_gs_block(k);
		tinyc_gexpr *kx = tinyc_gx_var(k, kv), *tx = tinyc_gx_var(k, txv);
		int rv = decl(b, kbody, "r", TINYC_INT,
			      bin(b, TINYC_GX_ADD, tinyc_gx_var(k, tyv),
				  bin(b, TINYC_GX_MUL, kx, cst(b, TINYC_INT, p->ty))));
		if (rv < 0)
			return;
		tinyc_gexpr *r = tinyc_gx_var(k, rv);
		int rl = left[phase], cl = left[1 - phase];
		tinyc_gstmt *body = tinyc_gs_block(k);
		int atv = -1;
		if (step != 1) {
			/* the row's first word in x (A's source offsets) or y (B's destination) */
			tinyc_gexpr *row = bin(b, TINYC_GX_ADD,
					       bin(b, TINYC_GX_MUL,
						   tinyc_gx_cast(k, b->lin, tinyc_gx_var(k, gv[phase])),
						   cst(b, b->lin, T)),
					       tinyc_gx_cast(k, b->lin, r));
			tinyc_gexpr *base = bin(b, TINYC_GX_ADD, tinyc_gx_var(k, phase ? yav : xbv),
						tinyc_gx_cast(k, b->idx, tx));
			tinyc_gexpr *at = phase
				? group_offset(b, body, "c", row, p->tile_b, p->ntile_b, 1, P, base)
				: group_offset(b, body, "a", row, p->tile_a, p->ntile_a, 0, P, base);
			atv = decl(b, body, phase ? "o" : "i", b->idx, at);
			if (b->failed)
				return;
		}
		/* the row's words: word columns cw = tx + 32 j, at word index at + 32 j */
		for (int j = 0; j < R; j++) {
			tinyc_gstmt *jb = tinyc_gs_block(k);
			tinyc_gexpr *cw = bin(b, TINYC_GX_ADD, tx, cst(b, TINYC_INT, 32 * j));
			tinyc_gexpr *cwp = bin(b, TINYC_GX_MUL, cw, cst(b, TINYC_INT, P));
			tinyc_gexpr *vi = bin(b, TINYC_GX_ADD,
					      bin(b, TINYC_GX_MUL, kx, cst(b, TINYC_INT, R)),
					      cst(b, TINYC_INT, j));
			tinyc_gexpr *gi = atv < 0 ? NULL
				: bin(b, TINYC_GX_ADD, tinyc_gx_var(k, atv), cst(b, b->idx, 32 * j));
			if (step == 0) {
				append(b, jb, tinyc_gs_store(k, vv, vi, tinyc_gx_load(k, xv, gi, NULL),
							     NULL));
			} else if (step == 1) {
				/* tile[r][cw * P + q] = element q of the word */
				for (int q = 0; q < P; q++) {
					tinyc_gexpr *ti = bin(b, TINYC_GX_ADD,
							      bin(b, TINYC_GX_MUL, r, cst(b, TINYC_INT, W)),
							      bin(b, TINYC_GX_ADD, cwp, cst(b, TINYC_INT, q)));
					tinyc_gexpr *w = tinyc_gx_load(k, vv, vi, NULL);
					tinyc_gexpr *e = P > 1
						? tinyc_gx_cast(k, edt, bin(b, TINYC_GX_SHR, w,
									    cst(b, wdt, 8 * E * q)))
						: w;
					append(b, jb, tinyc_gs_store(k, tile, ti, e, NULL));
				}
			} else {
				/* y's word = elements tile[cw * P + q][r], q = 0..P-1, little-endian */
				tinyc_gexpr *w = NULL;
				for (int q = 0; q < P; q++) {
					tinyc_gexpr *ti = bin(b, TINYC_GX_ADD,
							      bin(b, TINYC_GX_MUL,
								  bin(b, TINYC_GX_ADD, cwp,
								      cst(b, TINYC_INT, q)),
								  cst(b, TINYC_INT, W)),
							      r);
					tinyc_gexpr *e = tinyc_gx_cast(k, wdt,
								       tinyc_gx_load(k, tile, ti, NULL));
					if (q)
						e = bin(b, TINYC_GX_SHL, e, cst(b, wdt, 8 * E * q));
					w = w ? bin(b, TINYC_GX_OR, w, e) : e;
				}
				append(b, jb, tinyc_gs_store(k, yv, gi, w, NULL));
			}
			/* columns left in this tile */
			tinyc_gexpr *ccond = cl < 0 ? NULL
				: bin(b, TINYC_GX_LT, tinyc_gx_cast(k, ldt[1 - phase], cwp),
				      tinyc_gx_var(k, cl));
			append(b, body, ccond ? tinyc_gs_if(k, ccond, jb, NULL) : jb);
		}
		/* rows left in this tile */
		tinyc_gexpr *rcond = rl < 0 ? NULL
			: bin(b, TINYC_GX_LT, tinyc_gx_cast(k, ldt[phase], r), tinyc_gx_var(k, rl));
		append(b, kbody, rcond ? tinyc_gs_if(k, rcond, body, NULL) : body);
		append(b, k->body, tinyc_gs_for(k, kv, cst(b, TINYC_INT, 0),
						bin(b, TINYC_GX_LT, tinyc_gx_var(k, kv),
						    cst(b, TINYC_INT, K)),
						cst(b, TINYC_INT, 1), -1, kbody));
		if (step == 1)
			append(b, k->body, tinyc_gs_barrier(k));
	}
}

int tinyc_rearrange_gpuir_emit(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_rearrange_plan *p,
			       int x_buf, int64_t x_offset, int y_buf, int64_t y_offset,
			       const char *name, const char *comment)
{
	if (p->kind != TINYC_REARRANGE_ELEMENTWISE && p->kind != TINYC_REARRANGE_TILED)
		return tinyc_error(ctx, "CodegenError", "kernel %s: a %s rearrange plan has no kernel",
				   name, tinyc_rearrange_kind_name(p->kind));
	tinyc_gkernel *k = tinyc_gk_alloc(gm, name);
	if (!k)
		return -1;
	rbuild b = {ctx, k, p, TINYC_INT, TINYC_UINT, 0};
	int tiled = p->kind == TINYC_REARRANGE_TILED;
	int ws = tiled ? p->pack * p->elem : (p->unit < 8 ? p->unit : 8);	/* word bytes */
	int64_t x_off = x_offset * p->elem, y_off = y_offset * p->elem;
	if (x_off % ws || y_off % ws)
		return tinyc_error(ctx, "CodegenError", "kernel %s: view offsets %" PRId64 " and %"
				   PRId64 " bytes are not multiples of the %d-byte word", name,
				   x_off, y_off, ws);
	/* index width: word offsets, view offsets included, must fit int */
	int64_t rx, ry;
	if (tiled) {
		rx = reach(p->grid, p->ngrid, 0) + reach(p->tile_a, p->ntile_a, 0) +
		     p->grid[1].len * p->tile;
		ry = reach(p->grid, p->ngrid, 1) + reach(p->tile_b, p->ntile_b, 1) +
		     p->grid[0].len * p->tile;
	} else {
		int64_t m = p->unit / ws;
		rx = (reach(p->grid, p->ngrid, 0) + reach(p->block, p->nblock, 0) + 1) * m;
		ry = (reach(p->grid, p->ngrid, 1) + reach(p->block, p->nblock, 1) + 1) * m;
	}
	int wide = p->index_bits == 64 || x_off / ws + rx > INT32_MAX || y_off / ws + ry > INT32_MAX;
	b.idx = wide ? TINYC_LONG : TINYC_INT;
	b.lin = wide ? TINYC_ULONG : TINYC_UINT;
	k->index_dtype = b.idx;
	if (tiled) {
		k->block[0] = p->tx;
		k->block[1] = p->ty;
	} else {
		k->block[0] = (int)p->threads;
		k->block[1] = 1;
	}
	k->block[2] = 1;
	k->grid[0] = tinyc_gx_int(k, TINYC_LONG, p->blocks);
	k->grid[1] = tinyc_gx_int(k, TINYC_LONG, 1);
	k->grid[2] = tinyc_gx_int(k, TINYC_LONG, 1);
	k->comment = tinyc_gpu_strdup(gm, comment);
	tinyc_dtype wdt = uint_of(ws);
	int xv = tinyc_gk_param_ptr(k, gm->bufs[x_buf].name, wdt, 1, x_buf);
	int yv = tinyc_gk_param_ptr(k, gm->bufs[y_buf].name, wdt, 0, y_buf);
	if (xv < 0 || yv < 0)
		return -1;
	if (tiled)
		build_tiled(&b, yv, xv, x_off / ws, y_off / ws);
	else
		build_elementwise(&b, yv, xv, x_off / ws, y_off / ws, ws);
	if (b.failed)
		return tinyc_error(ctx, "CodegenError", "kernel %s: building the rearrange kernel "
				   "failed", name);
	tinyc_gk_sort_params(k);
	return 0;
}

/* Build kernel `kernel` of s (a REARRANGE plan) into gm (see codegen.h). */
int tinyc_rearrange_gpuir_build(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_schedule *s,
				const tinyc_indexbook *ib, int kernel)
{
	(void)ib;
	const tinyc_skernel *sk = &s->kerns[kernel];
	const tinyc_plan *sp = tinyc_skernel_plan(sk);
	if (!sp || sp->kind != TINYC_PLAN_REARRANGE || !sp->ext)
		return tinyc_error(ctx, "CodegenError", "kernel %s: not a rearrange plan", sk->name);
	const tinyc_rearrange_kplan *kp = sp->ext;
	const tinyc_rearrange_plan *p = &kp->plan;
	char comment[256];
	snprintf(comment, sizeof(comment), "%s: %%%s -> %s, rearrange %s (%s)", sk->name,
		 s->g->nodes[sk->value].id, s->bufs[kp->y_buf].name,
		 tinyc_rearrange_kind_name(p->kind), sp->desc);
	return tinyc_rearrange_gpuir_emit(ctx, gm, p, kp->x_buf, kp->copy.x_offset, kp->y_buf,
					  kp->copy.y_offset, sk->name, comment);
}
