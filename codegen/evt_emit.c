/* The epilogue graph inside the matmul kernel (see codegen/matmul.h).
 *
 * Values are held in their compute representation: float for half and bfloat16 (the
 * reference evaluates 16-bit arithmetic in float and rounds only where it materialises a
 * value: a Cast to a 16-bit type rounds and widens again), the dtype itself otherwise.
 *
 * Code shape, after the k loop:
 *   - per broadcast node: a register array filled once per thread (row vectors by column,
 *     column vectors by row; vector copies where the elements are contiguous and aligned,
 *     element loads at the tile's tail), a register for a tensor scalar;
 *   - per reduction node: a register array of thread partials at the identity;
 *   - per accumulator value (a, b) of the thread, in the visit order: each node once into a
 *     register; loads and stores predicated by the tail test; reductions fold the value
 *     (the identity outside the matrix) into the thread partials;
 *   - per reduction: warp shuffles (xor over the lanes that share the reduced
 *     coordinate), one partial per warp group into shared memory, a barrier, the groups
 *     combined in order and the CTA's partial written to the workspace;
 *   - a final-pass kernel per reduction combines the CTA partials in tile order and writes
 *     the result.  Everything is in a fixed order: the result is deterministic.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/matmul.h"
#include "ir/tensor.h"

/* The dtype a value of dtype dt is held in. */
static tinyc_dtype rep(tinyc_dtype dt)
{
	return tinyc_dtype_is_16bit_float(dt) ? TINYC_FLOAT : dt;
}

/* A constant of dtype dt in its representation. */
static tinyc_gexpr *constant(tinyc_gkernel *k, tinyc_dtype dt, double f, int64_t i)
{
	if (tinyc_dtype_is_float(dt))
		return tinyc_gx_float(k, rep(dt), tinyc_round_to_dtype(dt, f));
	if (dt == TINYC_BOOL)
		return tinyc_gx_bool(k, i != 0);
	return tinyc_gx_int(k, dt, i);
}

/* The identity of a reduction in dtype dt. */
static tinyc_gexpr *identity(tinyc_gkernel *k, tinyc_redop op, tinyc_dtype dt)
{
	if (op == TINYC_RED_ADD)
		return tinyc_gx_int(k, dt, 0);
	if (tinyc_dtype_is_float(dt))
		return tinyc_gx_float(k, dt, -INFINITY);
	if (!tinyc_dtype_is_signed(dt))
		return tinyc_gx_int(k, dt, 0);
	int bits = 8 * tinyc_dtype_size(dt);
	return tinyc_gx_int(k, dt, bits >= 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1)));
}

/* acc op v (MAX ignores NaN on floats, as the reference). */
static tinyc_gexpr *combine(tinyc_gkernel *k, tinyc_redop op, tinyc_gexpr *acc, tinyc_gexpr *v)
{
	return tinyc_gx_binary(k, op == TINYC_RED_ADD ? TINYC_GX_ADD : TINYC_GX_MAX, acc, v);
}

/* Compute(fn) on operands x[] held in rep(ct); result in rep(result dtype). */
static tinyc_gexpr *compute(tinyc_gkernel *k, tinyc_op fn, tinyc_dtype ct, tinyc_dtype out,
			    tinyc_gexpr **x)
{
	tinyc_dtype r = rep(ct);
	int isbool = ct == TINYC_BOOL;
	tinyc_gexpr *zero = tinyc_gx_int(k, r, 0);
	tinyc_gexpr *e = tinyc_gx_uop(k, fn, x, isbool, out);	/* the ops every builder writes alike */
	if (e)
		return e;
	switch (fn) {
	case TINYC_OP_RELU:
		return tinyc_gx_select(k, tinyc_gx_binary(k, TINYC_GX_GT, x[0], zero), x[0], zero);
	case TINYC_OP_IDIV:
	case TINYC_OP_MOD: {
		tinyc_gexpr *nz = tinyc_gx_binary(k, TINYC_GX_NE, x[1], zero);
		tinyc_gexpr *safe = tinyc_gx_select(k, nz, x[1], tinyc_gx_int(k, r, 1));
		tinyc_gexpr *q = tinyc_gx_binary(k, fn == TINYC_OP_IDIV ? TINYC_GX_DIV : TINYC_GX_MOD,
						  x[0], safe);
		return tinyc_gx_select(k, nz, q, zero);
	}
	case TINYC_OP_BITCAST: {
		tinyc_gexpr *src = tinyc_dtype_is_16bit_float(ct) ? tinyc_gx_cast(k, ct, x[0]) : x[0];
		tinyc_gexpr *bits = tinyc_gx_bitcast(k, out, src);
		return tinyc_dtype_is_16bit_float(out) ? tinyc_gx_cast(k, TINYC_FLOAT, bits) : bits;
	}
	default:
		return NULL;
	}
}

/* The element offset offset + m*dm + n*dn + l*dl of a tensor layout (m or n may be NULL
 * when the stride along it is unused). */
static tinyc_gexpr *address(tinyc_mmk *b, const tinyc_evt_layout *lay, tinyc_gexpr *m,
			    tinyc_gexpr *n)
{
	tinyc_gkernel *k = b->k;
	tinyc_gexpr *e = tinyc_mmk_poly(b, &lay->offset);
	if (m && !tinyc_evt_poly_is_zero(&lay->stride[0]))
		e = tinyc_gx_binary(k, TINYC_GX_ADD, e,
				    tinyc_gx_binary(k, TINYC_GX_MUL, m, tinyc_mmk_poly(b, &lay->stride[0])));
	if (n && !tinyc_evt_poly_is_zero(&lay->stride[1]))
		e = tinyc_gx_binary(k, TINYC_GX_ADD, e,
				    tinyc_gx_binary(k, TINYC_GX_MUL, n, tinyc_mmk_poly(b, &lay->stride[1])));
	if (!tinyc_evt_poly_is_zero(&lay->stride[2]))
		e = tinyc_gx_binary(k, TINYC_GX_ADD, e,
				    tinyc_gx_binary(k, TINYC_GX_MUL, b->l, tinyc_mmk_poly(b, &lay->stride[2])));
	return e;
}

/* Whether every coefficient of p is a multiple of q. */
static int poly_multiple(const tinyc_evt_poly *p, int q)
{
	for (int i = 0; i < p->nterm; i++)
		if (p->t[i].c % q)
			return 0;
	return 1;
}

/* The state of one epilogue. */
typedef struct epi {
	tinyc_mmk *b;
	const tinyc_mm_frag *f;
	const tinyc_evt *g;
	int *vec;		/* per node: register array of a broadcast / partials, or -1 */
	tinyc_gexpr **val;	/* per node: its value at the current element */
	tinyc_gexpr *row[64];	/* global row of value a */
	tinyc_gexpr *col[64];	/* global column of value b */
	tinyc_gexpr *inrow[64];	/* row a inside the matrix (NULL: always) */
	tinyc_gexpr *incol[64];	/* column b inside the matrix (NULL: always) */
	int *pair;		/* per node: AUX_STORE written two columns at a time (4 bytes) */
	int *pair_param;	/* per node: its uint PARAM_PTR view of the buffer, or -1 */
	int *pair_lo;		/* per node: register holding the even column's value for the
				 * odd column's store (declared in `outer`), or -1 */
	tinyc_gstmt *outer;	/* the epilogue's block (around the per-value blocks) */
	int stage_node;		/* the AUX_STORE written through shared memory, or -1 */
	int stage_unit;		/* bytes each lane writes from the staging buffer: 16 (aligned
				 * runs of 8 columns), 4 (column pairs), 2 (odd row strides) */
	int stg;		/* its per-warp staging buffer (SHARED uint) */
	int cur_q;		/* the 64-column chunk being staged */
	int tma;		/* > 0: the buffers of f->tma_bufs, 128-byte swizzled; whole
				 * chunks leave by TMA stores through tmap */
	int cur_buf;		/* the buffer of the chunk being staged (tma) */
	int tmap;		/* the output's tensor map (tma) */
} epi;

#define STAGE_ROW_WORDS 36	/* a staged row: 64 halves + 16 bytes of padding (no bank
				 * conflicts for the pair stores nor the 16-byte reads) */

/* a && b where NULL means true. */
static tinyc_gexpr *both(tinyc_gkernel *k, tinyc_gexpr *a, tinyc_gexpr *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return tinyc_gx_binary(k, TINYC_GX_LAND, a, b);
}

/* Fill register array arr (dtype of the tensor) with the elements of a broadcast vector
 * along the thread's rows (along_m) or columns, vectorised by runs where possible. */
static void preload_vector(epi *E, tinyc_gstmt *body, const tinyc_evt_node *nd, int arr,
			   int along_m)
{
	tinyc_mmk *b = E->b;
	tinyc_gkernel *k = b->k;
	const tinyc_mm_frag *f = E->f;
	int cnt = along_m ? f->tr : f->tc;
	int run = along_m ? f->row_run : f->col_run;
	const tinyc_evt_poly *st = &nd->t.lay.stride[along_m ? 0 : 1];
	int es = tinyc_dtype_size(nd->t.dtype);
	int vec = run > 1 && tinyc_evt_poly_is_const(st, 1) && (run * es == 4 || run * es == 8 ||
								run * es == 16) &&
		  poly_multiple(&nd->t.lay.offset, run) &&
		  (!b->prob->evt->batched || poly_multiple(&nd->t.lay.stride[2], run));
	int param = tinyc_mmk_param(b, nd->t.buf, 0);
	tinyc_gexpr *lim = along_m ? b->M : b->N;
	int pred = along_m ? b->t->pred_m : b->t->pred_n;
	tinyc_gstmt *inside = NULL;	/* with a tail: the thread's runs when all are in range */
	if (pred && vec && cnt > run) {
		const int *off = along_m ? f->row_off : f->col_off;
		int last = 0;
		for (int q = 1; q < cnt; q++)
			if (off[q] > off[last])
				last = q;
		tinyc_gexpr *pos = (along_m ? E->row : E->col)[last];
		tinyc_gstmt *edge = tinyc_gs_block(k);
		inside = tinyc_gs_block(k);
		tinyc_mmk_append(b, body, tinyc_gs_if(k, tinyc_gx_binary(k, TINYC_GX_LT, pos, lim),
						      inside, edge));
		body = edge;
	}
	for (int q = 0; q < cnt; q += vec ? run : 1) {
		tinyc_gexpr **pos = along_m ? E->row : E->col;
		if (vec) {
			tinyc_gexpr *addr = address(b, &nd->t.lay, along_m ? pos[q] : NULL,
						    along_m ? NULL : pos[q]);
			tinyc_gstmt *v = tinyc_gs_copy(k, arr, tinyc_gx_int(k, b->it, q), param, addr, run,
						       NULL, 0);
			if (inside)
				tinyc_mmk_append(b, inside, tinyc_gs_copy(k, arr, tinyc_gx_int(k, b->it, q),
									  param, addr, run, NULL, 0));
			if (!pred) {
				tinyc_mmk_append(b, body, v);
				continue;
			}
			tinyc_gstmt *tail = tinyc_gs_block(k);
			for (int e = 0; e < run; e++) {
				tinyc_gexpr *p = tinyc_gx_binary(k, TINYC_GX_LT, pos[q + e], lim);
				tinyc_gexpr *a = address(b, &nd->t.lay, along_m ? pos[q + e] : NULL,
							 along_m ? NULL : pos[q + e]);
				tinyc_mmk_append(b, tail, tinyc_gs_store(k, arr, tinyc_gx_int(k, b->it, q + e),
									 tinyc_gx_load(k, param, a, p), NULL));
			}
			tinyc_gexpr *full = tinyc_gx_binary(
				k, TINYC_GX_LE,
				tinyc_gx_binary(k, TINYC_GX_ADD, pos[q], tinyc_gx_int(k, b->it, run)), lim);
			tinyc_gstmt *thn = tinyc_gs_block(k);
			tinyc_mmk_append(b, thn, v);
			tinyc_mmk_append(b, body, tinyc_gs_if(k, full, thn, tail));
		} else {
			tinyc_gexpr *p = pred ? tinyc_gx_binary(k, TINYC_GX_LT, pos[q], lim) : NULL;
			tinyc_gexpr *a = address(b, &nd->t.lay, along_m ? pos[q] : NULL,
						 along_m ? NULL : pos[q]);
			tinyc_mmk_append(b, body, tinyc_gs_store(k, arr, tinyc_gx_int(k, b->it, q),
								 tinyc_gx_load(k, param, a, p), NULL));
		}
	}
}

/* The value of a polynomial under the module's compile-time bindings; -1 when unknown. */
static int64_t bound_poly(const tinyc_mmk *b, const tinyc_evt_poly *p)
{
	const tinyc_gpu_module *gm = b->gm;
	int64_t v = 0;
	if (!gm->sym_bound || tinyc_evt_poly_eval(p, gm->sym_bound, gm->nsym, &v) < 0)
		return -1;
	return v;
}

/* Whether the thread holds the 16-bit output node nd in column pairs (2j, 2j + 1) of a
 * row-contiguous layout: its values can be joined into 32-bit words (for a global store
 * or for the staging buffer). */
static int pair_layout(const tinyc_mm_frag *f, const tinyc_evt_node *nd)
{
	if (nd->kind != TINYC_EVT_AUX_STORE || tinyc_dtype_size(nd->t.dtype) != 2 || f->col_run < 2 ||
	    f->tc % 2 || !tinyc_evt_poly_is_const(&nd->t.lay.stride[1], 1))
		return 0;
	for (int c = 0; c < f->tc; c += 2)
		if (f->col_off[c] % 2 || f->col_off[c + 1] != f->col_off[c] + 1)
			return 0;
	return 1;
}

/* Whether the 16-bit AUX_STORE nd can write columns (2j, 2j+1) of the fragment as one
 * 4-byte store: pairs of consecutive columns in the fragment, contiguous along n, every
 * pair 4-byte aligned (offset, row and batch strides even under the bindings) and, with
 * a tail along n, N even (a pair is wholly inside or outside). */
static int pairable(const tinyc_mmk *b, const tinyc_mm_frag *f, const tinyc_evt_node *nd)
{
	if (!pair_layout(f, nd))
		return 0;
	int64_t off = bound_poly(b, &nd->t.lay.offset), rs = bound_poly(b, &nd->t.lay.stride[0]);
	int64_t ls = b->prob->evt->batched ? bound_poly(b, &nd->t.lay.stride[2]) : 0;
	tinyc_evt_poly pn = tinyc_evt_poly_dim(&b->prob->n);
	int64_t n = bound_poly(b, &pn);
	return off >= 0 && off % 2 == 0 && rs >= 0 && rs % 2 == 0 && ls >= 0 && ls % 2 == 0 &&
	       (!b->t->pred_n || (n > 0 && n % 2 == 0));
}

/* Whether the pairable node nd can also go through the staging buffer: 16-byte aligned
 * runs of 8 columns (offset, row and batch strides multiples of 8; N too with a tail) and
 * whole 8-column runs per thread (64-column chunks, the last one of a fitted wgmma width
 * partial). */
static int stageable(const tinyc_mmk *b, const tinyc_mm_frag *f, const tinyc_evt_node *nd)
{
	if (!f->stage || f->tc % 2 || f->tr % 2)
		return 0;
	int64_t off = bound_poly(b, &nd->t.lay.offset), rs = bound_poly(b, &nd->t.lay.stride[0]);
	int64_t ls = b->prob->evt->batched ? bound_poly(b, &nd->t.lay.stride[2]) : 0;
	tinyc_evt_poly pn = tinyc_evt_poly_dim(&b->prob->n);
	int64_t n = bound_poly(b, &pn);
	return off % 8 == 0 && rs % 8 == 0 && ls % 8 == 0 && (!b->t->pred_n || n % 8 == 0);
}

/* tma: the first word of the warp's buffer cur_buf. */
static tinyc_gexpr *tma_buffer(epi *E)
{
	tinyc_gkernel *k = E->b->k;
	tinyc_dtype it = E->b->it;
	return tinyc_gx_binary(k, TINYC_GX_ADD,
		tinyc_gx_binary(k, TINYC_GX_MUL, E->f->stage_warp, tinyc_gx_int(k, it, 512 * E->tma)),
		tinyc_gx_int(k, it, 512 * E->cur_buf));
}

/* The index of word `word` of row `row` (0..15) in the warp's staging buffer (tma: in
 * buffer cur_buf, the 16-byte chunk w / 4 of row r at (w / 4) ^ (r % 8): TMA's 128-byte
 * swizzle, which also keeps the pair stores free of bank conflicts). */
static tinyc_gexpr *stage_index(epi *E, tinyc_gexpr *row, tinyc_gexpr *word)
{
	tinyc_gkernel *k = E->b->k;
	tinyc_dtype it = E->b->it;
	if (E->tma) {
		tinyc_gexpr *base = tma_buffer(E);
		tinyc_gexpr *chunk = tinyc_gx_binary(k, TINYC_GX_XOR,
			tinyc_gx_binary(k, TINYC_GX_DIV, word, tinyc_gx_int(k, it, 4)),
			tinyc_gx_binary(k, TINYC_GX_MOD, row, tinyc_gx_int(k, it, 8)));
		return tinyc_gx_binary(k, TINYC_GX_ADD, base,
			tinyc_gx_binary(k, TINYC_GX_ADD, tinyc_gx_binary(k, TINYC_GX_MUL, row, tinyc_gx_int(k, it, 32)),
				tinyc_gx_binary(k, TINYC_GX_ADD, tinyc_gx_binary(k, TINYC_GX_MUL, chunk, tinyc_gx_int(k, it, 4)),
						tinyc_gx_binary(k, TINYC_GX_MOD, word, tinyc_gx_int(k, it, 4)))));
	}
	return tinyc_gx_binary(k, TINYC_GX_ADD,
		tinyc_gx_binary(k, TINYC_GX_MUL, E->f->stage_warp, tinyc_gx_int(k, it, 16 * STAGE_ROW_WORDS)),
		tinyc_gx_binary(k, TINYC_GX_ADD,
				tinyc_gx_binary(k, TINYC_GX_MUL, row, tinyc_gx_int(k, it, STAGE_ROW_WORDS)),
				word));
}

/* The 32-bit view of output node i's buffer (column pairs), created on first use. */
static int pair_param(epi *E, int i)
{
	tinyc_mmk *b = E->b;
	const tinyc_evt_node *nd = &E->g->nodes[i];
	if (E->pair_param[i] < 0) {
		char pn[64];
		snprintf(pn, sizeof(pn), "%s_x2", b->gm->bufs[nd->t.buf].name);
		E->pair_param[i] = tinyc_gk_param_ptr(b->k, pn, TINYC_UINT, 0, nd->t.buf);
		if (E->pair_param[i] < 0)
			b->error = 1;
	}
	return E->pair_param[i];
}

/* The value of node i at element (a, b); appended code goes to body. */
static tinyc_gexpr *node_value(epi *E, tinyc_gstmt *body, int i, int a, int bb,
			       tinyc_gexpr *inb)
{
	tinyc_mmk *b = E->b;
	tinyc_gkernel *k = b->k;
	const tinyc_evt_node *nd = &E->g->nodes[i];
	char name[32];
	snprintf(name, sizeof(name), "e%d", i);
	tinyc_gexpr *x[3] = {NULL, NULL, NULL};
	for (int c = 0; c < nd->nchild; c++)
		x[c] = E->val[nd->child[c]];
	switch (nd->kind) {
	case TINYC_EVT_ACC_FETCH:
		return tinyc_gx_load(k, b->acc, tinyc_gx_int(k, b->it, tinyc_mm_frag_acc(E->f, a, bb)),
				     NULL);
	case TINYC_EVT_SRC_FETCH:
	case TINYC_EVT_AUX_LOAD: {
		int param = tinyc_mmk_param(b, nd->t.buf, 0);
		tinyc_gexpr *addr = address(b, &nd->t.lay, E->row[a], E->col[bb]);
		tinyc_gexpr *v = tinyc_gx_load(k, param, addr, inb);
		return tinyc_mmk_let(b, body, name, tinyc_gx_cast(k, rep(nd->dtype), v));
	}
	case TINYC_EVT_ROW_BCAST:
		return tinyc_gx_cast(k, rep(nd->dtype),
				     tinyc_gx_load(k, E->vec[i], tinyc_gx_int(k, b->it, bb), NULL));
	case TINYC_EVT_COL_BCAST:
		return tinyc_gx_cast(k, rep(nd->dtype),
				     tinyc_gx_load(k, E->vec[i], tinyc_gx_int(k, b->it, a), NULL));
	case TINYC_EVT_SCALAR_BCAST:
		if (nd->has_tensor)
			return tinyc_gx_cast(k, rep(nd->dtype), tinyc_gx_var(k, E->vec[i]));
		return constant(k, nd->dtype, nd->fval, nd->ival);
	case TINYC_EVT_COMPUTE:
		return tinyc_mmk_let(b, body, name, compute(k, nd->fn, nd->compute, nd->dtype, x));
	case TINYC_EVT_CAST:
		if (tinyc_dtype_is_16bit_float(nd->dtype) && x[0]) {
			/* the rounded value held in its own dtype: a store of that dtype takes it as
			 * it is (no float round trip), other users widen it */
			tinyc_gexpr *h = tinyc_mmk_let(b, body, name, tinyc_gx_cast(k, nd->dtype, x[0]));
			return tinyc_gx_cast(k, TINYC_FLOAT, h);
		}
		return tinyc_mmk_let(b, body, name, tinyc_gx_cast(k, nd->dtype, x[0]));
	case TINYC_EVT_AUX_STORE: {
		if (E->pair[i] && bb % 2 == 0) {	/* held for the odd column's store */
			if (E->pair_lo[i] < 0) {
				snprintf(name, sizeof(name), "p%d", i);
				if ((E->pair_lo[i] = tinyc_gk_reg(k, name, nd->t.dtype)) < 0) {
					b->error = 1;
					return NULL;
				}
				tinyc_mmk_append(b, E->outer, tinyc_gs_decl(k, E->pair_lo[i], NULL));
			}
			tinyc_mmk_append(b, body, tinyc_gs_assign(k, E->pair_lo[i],
								  tinyc_gx_cast(k, nd->t.dtype, x[0])));
			return x[0];
		}
		if (E->pair[i]) {	/* both halves as one 4-byte store */
			if (i != E->stage_node && pair_param(E, i) < 0)
				return NULL;
			tinyc_gexpr *lo = tinyc_gx_cast(k, TINYC_UINT,
							tinyc_gx_bitcast(k, TINYC_USHORT,
									 tinyc_gx_var(k, E->pair_lo[i])));
			tinyc_gexpr *hi = tinyc_gx_cast(k, TINYC_UINT,
							tinyc_gx_bitcast(k, TINYC_USHORT,
									 tinyc_gx_cast(k, nd->t.dtype, x[0])));
			tinyc_gexpr *word = tinyc_gx_binary(k, TINYC_GX_OR, lo,
				tinyc_gx_binary(k, TINYC_GX_SHL, hi, tinyc_gx_int(k, TINYC_UINT, 16)));
			if (i == E->stage_node) {	/* into the warp's staging buffer */
				const tinyc_mm_frag *f = E->f;
				tinyc_dtype it = b->it;
				tinyc_gexpr *row = tinyc_gx_binary(k, TINYC_GX_ADD, f->lane_row,
								   tinyc_gx_int(k, it, (a % 2) * 8));
				tinyc_gexpr *col2 = tinyc_gx_binary(k, TINYC_GX_ADD,
					tinyc_gx_binary(k, TINYC_GX_DIV, f->col_base, tinyc_gx_int(k, it, 2)),
					tinyc_gx_int(k, it, (f->col_off[bb - 1] - 64 * E->cur_q) / 2));
				tinyc_mmk_append(b, body, tinyc_gs_store(k, E->stg, stage_index(E, row, col2),
									 word, NULL));
				return x[0];
			}
			tinyc_gexpr *addr = address(b, &nd->t.lay, E->row[a], E->col[bb - 1]);
			tinyc_gexpr *widx = tinyc_gx_binary(k, TINYC_GX_DIV, addr, tinyc_gx_int(k, b->it, 2));
			tinyc_gexpr *ip = both(k, E->inrow[a], E->incol[bb - 1]);
			tinyc_mmk_append(b, body, tinyc_gs_store(k, E->pair_param[i], widx, word, ip));
			return x[0];
		}
		int param = tinyc_mmk_param(b, nd->t.buf, 1);
		tinyc_gexpr *addr = address(b, &nd->t.lay, E->row[a], E->col[bb]);
		tinyc_mmk_append(b, body, tinyc_gs_store(k, param, addr,
							 tinyc_gx_cast(k, nd->t.dtype, x[0]), inb));
		return x[0];
	}
	case TINYC_EVT_ROW_RED:
	case TINYC_EVT_COL_RED:
	case TINYC_EVT_SCALAR_RED: {
		int slot = nd->kind == TINYC_EVT_ROW_RED ? bb : nd->kind == TINYC_EVT_COL_RED ? a : 0;
		tinyc_dtype ct = rep(nd->compute);
		tinyc_gexpr *v = inb ? tinyc_gx_select(k, inb, x[0], identity(k, nd->redop, ct)) : x[0];
		tinyc_gexpr *ix = tinyc_gx_int(k, b->it, slot);
		tinyc_gexpr *old = tinyc_gx_load(k, E->vec[i], ix, NULL);
		tinyc_mmk_append(b, body, tinyc_gs_store(k, E->vec[i], ix, combine(k, nd->redop, old, v),
							 NULL));
		return x[0];
	}
	default:
		b->error = 1;
		return NULL;
	}
}

/* A workspace buffer for reduction node nd: TEMP, compute dtype, with enough elements for
 * one partial per CTA tile (rows: m tiles or M; cols: n tiles or N). */
static int add_workspace(tinyc_mmk *b, const tinyc_evt_node *nd, int idx)
{
	tinyc_gpu_module *gm = b->gm;
	const tinyc_mm_problem *pr = b->prob;
	tinyc_gbuf gbf;
	memset(&gbf, 0, sizeof(gbf));
	char name[96];
	snprintf(name, sizeof(name), "ws_%s", nd->t.name ? nd->t.name : "red");
	int ntemp = 0;
	for (int i = 0; i < gm->nbuf; i++)
		ntemp += gm->bufs[i].role == TINYC_GB_TEMP;
	gbf.name = name;
	gbf.role = TINYC_GB_TEMP;
	gbf.index = ntemp;
	gbf.node = -1;
	gbf.dtype = rep(nd->compute);
	tinyc_dim tiles_m = pr->m, tiles_n = pr->n;
	if (pr->m.sym < 0)
		tiles_m.val = (pr->m.val + b->t->bm - 1) / b->t->bm;
	if (pr->n.sym < 0)
		tiles_n.val = (pr->n.val + b->t->bn - 1) / b->t->bn;
	int r = 0;
	if (pr->evt->batched)
		gbf.shape[r++] = pr->l;
	if (nd->kind == TINYC_EVT_ROW_RED) {
		gbf.shape[r++] = tiles_m;
		gbf.shape[r++] = pr->n;
	} else if (nd->kind == TINYC_EVT_COL_RED) {
		gbf.shape[r++] = tiles_n;
		gbf.shape[r++] = pr->m;
	} else {
		gbf.shape[r++] = tiles_m;
		gbf.shape[r++] = tiles_n;
	}
	gbf.rank = r;
	(void)idx;
	int w = tinyc_gpu_add_buf(gm, &gbf);
	if (w < 0)
		b->error = 1;
	return w;
}

/* The in-CTA part of reduction node i: shuffles, shared memory, the CTA's partial into the
 * workspace. */
static void finish_reduction(epi *E, tinyc_gstmt *body, int i)
{
	tinyc_mmk *b = E->b;
	tinyc_gkernel *k = b->k;
	const tinyc_mm_frag *f = E->f;
	const tinyc_evt_node *nd = &E->g->nodes[i];
	tinyc_dtype ct = rep(nd->compute);
	int kind = nd->kind;
	int n = kind == TINYC_EVT_ROW_RED ? f->tc : kind == TINYC_EVT_COL_RED ? f->tr : 1;
	const int *xs = kind == TINYC_EVT_ROW_RED ? f->row_xor : f->col_xor;
	int nx = kind == TINYC_EVT_ROW_RED ? f->nrow_xor : f->ncol_xor;
	static const int all[5] = {16, 8, 4, 2, 1};
	if (kind == TINYC_EVT_SCALAR_RED)
		xs = all, nx = 5;
	char name[32];
	snprintf(name, sizeof(name), "sh%d", i);
	int tmp = tinyc_gk_reg(k, name, ct);
	if (tmp < 0) {
		b->error = 1;
		return;
	}
	tinyc_mmk_append(b, body, tinyc_gs_decl(k, tmp, NULL));
	for (int s = 0; s < n; s++) {
		tinyc_gexpr *ix = tinyc_gx_int(k, b->it, s);
		for (int x = 0; x < nx; x++) {
			tinyc_mmk_append(b, body, tinyc_gs_shfl(k, TINYC_GSHFL_XOR, tmp,
								tinyc_gx_load(k, E->vec[i], ix, NULL),
								tinyc_gx_int(k, TINYC_INT, xs[x]), 32));
			tinyc_mmk_append(b, body,
					 tinyc_gs_store(k, E->vec[i], ix,
							combine(k, nd->redop, tinyc_gx_load(k, E->vec[i], ix, NULL),
								tinyc_gx_var(k, tmp)),
							NULL));
		}
	}
	/* one partial per group of warps into shared memory */
	int groups, width;
	tinyc_gexpr *group, *lead;
	int warps = b->threads / 32;
	if (kind == TINYC_EVT_ROW_RED)
		groups = f->groups_m, group = f->group_m, lead = f->row_lead, width = b->t->bn;
	else if (kind == TINYC_EVT_COL_RED)
		groups = f->groups_n, group = f->group_n, lead = f->col_lead, width = b->t->bm;
	else
		groups = warps, group = b->warp,
		lead = tinyc_gx_binary(k, TINYC_GX_EQ, b->lane, tinyc_gx_int(k, b->it, 0)), width = 1;
	snprintf(name, sizeof(name), "red%d", i);
	int red = tinyc_gk_shared(k, name, ct, (int64_t)groups * width, 0, 0);
	if (red < 0) {
		b->error = 1;
		return;
	}
	for (int s = 0; s < n; s++) {
		tinyc_gexpr *pos = kind == TINYC_EVT_ROW_RED
					   ? tinyc_gx_binary(k, TINYC_GX_ADD, f->col_base,
							     tinyc_gx_int(k, b->it, f->col_off[s]))
				   : kind == TINYC_EVT_COL_RED
					   ? tinyc_gx_binary(k, TINYC_GX_ADD, f->row_base,
							     tinyc_gx_int(k, b->it, f->row_off[s]))
					   : tinyc_gx_int(k, b->it, 0);
		tinyc_gexpr *at = tinyc_gx_binary(
			k, TINYC_GX_ADD,
			tinyc_gx_binary(k, TINYC_GX_MUL, group, tinyc_gx_int(k, b->it, width)), pos);
		tinyc_mmk_append(b, body, tinyc_gs_store(k, red, at,
							 tinyc_gx_load(k, E->vec[i], tinyc_gx_int(k, b->it, s), NULL),
							 lead));
	}
	tinyc_mmk_append(b, body, tinyc_gs_barrier(k));
	/* combine the groups in order and write the CTA's partial */
	int ws = b->ws[i];
	int wsp = tinyc_mmk_param(b, ws, 1);
	tinyc_gexpr *bx = tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_BID_X));
	tinyc_gexpr *by = tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_BID_Y));
	tinyc_gexpr *gx = tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_NBID_X));
	tinyc_gexpr *gy = tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_NBID_Y));
	snprintf(name, sizeof(name), "ri%d", i);
	int iv = tinyc_gk_reg(k, name, b->it);
	snprintf(name, sizeof(name), "rv%d", i);
	int vv = tinyc_gk_reg(k, name, ct);
	if (iv < 0 || vv < 0) {
		b->error = 1;
		return;
	}
	tinyc_gstmt *loop = tinyc_gs_block(k);
	tinyc_gexpr *I = tinyc_gx_var(k, iv);
	tinyc_mmk_append(b, loop, tinyc_gs_decl(k, vv, identity(k, nd->redop, ct)));
	for (int gi = 0; gi < groups; gi++)
		tinyc_mmk_append(b, loop, tinyc_gs_assign(k, vv, combine(k, nd->redop, tinyc_gx_var(k, vv),
			tinyc_gx_load(k, red, tinyc_gx_binary(k, TINYC_GX_ADD, tinyc_gx_int(k, b->it, gi * width), I), NULL))));
	tinyc_gexpr *widx, *wpred = NULL;
	if (kind == TINYC_EVT_ROW_RED) {
		tinyc_gexpr *col = tinyc_gx_binary(k, TINYC_GX_ADD, b->n0, I);
		widx = tinyc_gx_binary(k, TINYC_GX_ADD,
				       tinyc_gx_binary(k, TINYC_GX_MUL,
						       tinyc_gx_binary(k, TINYC_GX_ADD,
								       tinyc_gx_binary(k, TINYC_GX_MUL, b->l, gy), by),
						       b->N),
				       col);
		if (b->t->pred_n)
			wpred = tinyc_gx_binary(k, TINYC_GX_LT, col, b->N);
	} else if (kind == TINYC_EVT_COL_RED) {
		tinyc_gexpr *row = tinyc_gx_binary(k, TINYC_GX_ADD, b->m0, I);
		widx = tinyc_gx_binary(k, TINYC_GX_ADD,
				       tinyc_gx_binary(k, TINYC_GX_MUL,
						       tinyc_gx_binary(k, TINYC_GX_ADD,
								       tinyc_gx_binary(k, TINYC_GX_MUL, b->l, gx), bx),
						       b->M),
				       row);
		if (b->t->pred_m)
			wpred = tinyc_gx_binary(k, TINYC_GX_LT, row, b->M);
	} else {
		widx = tinyc_gx_binary(k, TINYC_GX_ADD,
				       tinyc_gx_binary(k, TINYC_GX_MUL,
						       tinyc_gx_binary(k, TINYC_GX_ADD,
								       tinyc_gx_binary(k, TINYC_GX_MUL, b->l, gy), by),
						       gx),
				       bx);
	}
	tinyc_mmk_append(b, loop, tinyc_gs_store(k, wsp, widx, tinyc_gx_var(k, vv), wpred));
	tinyc_mmk_append(b, body, tinyc_gs_for_range(k, iv, b->tid, tinyc_gx_int(k, b->it, width),
						     tinyc_gx_int(k, b->it, b->threads), 0, loop));
}

/* The block computing every node at value (a, c), appended to body. */
static void value_block(epi *E, tinyc_gstmt *body, const int *order, int nord, int a, int c)
{
	tinyc_mmk *b = E->b;
	tinyc_gkernel *k = b->k;
	char text[64];
	snprintf(text, sizeof(text), "value (%d, %d)", a, c);
	tinyc_gstmt *blk = tinyc_gs_block(k);
	tinyc_mmk_append(b, blk, tinyc_gs_comment(k, text));
	tinyc_gexpr *inb = both(k, E->inrow[a], E->incol[c]);
	for (int j = 0; j < nord && !b->error; j++) {
		int i = order[j];
		E->val[i] = node_value(E, blk, i, a, c, inb);
		if (!E->val[i])
			b->error = 1;
	}
	tinyc_mmk_append(b, body, blk);
}

/* The copy-out of slab s, chunk q (its first `cols` columns) of the staging buffer row by
 * row where the output's rows are not 16-byte aligned: unit 4, lane l writes columns 2l,
 * 2l + 1 of a row as one word (128 contiguous bytes per instruction); unit 2, lanes write
 * columns l and l + 32 one half each (64 contiguous bytes per instruction), instead of the
 * fragment's scattered 2-byte stores. */
static void staged_rows(epi *E, tinyc_gstmt *body, int s, int q, int cols, tinyc_gexpr *lane)
{
	tinyc_mmk *b = E->b;
	tinyc_gkernel *k = b->k;
	const tinyc_mm_frag *f = E->f;
	const tinyc_evt_node *nd = &E->g->nodes[E->stage_node];
	tinyc_dtype it = b->it;
	int wide = E->stage_unit == 4;
	int param = wide ? pair_param(E, E->stage_node) : tinyc_mmk_param(b, nd->t.buf, 1);
	if (param < 0) {
		b->error = 1;
		return;
	}
	for (int r = 0; r < 16; r++)
		for (int h = 0; h < (wide ? 1 : 2); h++) {
			/* the lane's column in the 64-column chunk, and its word in the row */
			tinyc_gexpr *col = wide ? tinyc_gx_binary(k, TINYC_GX_MUL, lane, tinyc_gx_int(k, it, 2))
						: tinyc_gx_binary(k, TINYC_GX_ADD, lane, tinyc_gx_int(k, it, 32 * h));
			tinyc_gexpr *word = tinyc_gx_binary(k, TINYC_GX_DIV, col, tinyc_gx_int(k, it, 2));
			tinyc_gexpr *gm = tinyc_gx_binary(k, TINYC_GX_ADD, b->m0,
				tinyc_gx_binary(k, TINYC_GX_ADD, f->warp_row0,
						tinyc_gx_int(k, it, (int64_t)s * f->stage_stride + r)));
			tinyc_gexpr *gn = tinyc_gx_binary(k, TINYC_GX_ADD, b->n0,
				tinyc_gx_binary(k, TINYC_GX_ADD, tinyc_gx_int(k, it, 64 * q), col));
			tinyc_gexpr *in = both(k, b->t->pred_m ? tinyc_gx_binary(k, TINYC_GX_LT, gm, b->M) : NULL,
					       b->t->pred_n ? tinyc_gx_binary(k, TINYC_GX_LT, gn, b->N) : NULL);
			if (cols < 64)	/* a partial chunk: the lanes past its columns */
				in = both(k, in, tinyc_gx_binary(k, TINYC_GX_LT, col, tinyc_gx_int(k, it, cols)));
			tinyc_gexpr *w = tinyc_gx_load(k, E->stg, stage_index(E, tinyc_gx_int(k, it, r), word),
						       NULL);
			tinyc_gexpr *addr = address(b, &nd->t.lay, gm, gn);
			tinyc_gstmt *st;
			if (wide) {
				st = tinyc_gs_store(k, param, tinyc_gx_binary(k, TINYC_GX_DIV, addr,
									      tinyc_gx_int(k, it, 2)), w, in);
			} else {
				/* the lane's half of the word: low for even columns (lane parity) */
				tinyc_gexpr *sh = tinyc_gx_binary(k, TINYC_GX_MUL,
					tinyc_gx_cast(k, TINYC_UINT, tinyc_gx_binary(k, TINYC_GX_MOD, lane,
										   tinyc_gx_int(k, it, 2))),
					tinyc_gx_int(k, TINYC_UINT, 16));
				tinyc_gexpr *v = tinyc_gx_bitcast(k, nd->t.dtype, tinyc_gx_cast(k, TINYC_USHORT,
					tinyc_gx_binary(k, TINYC_GX_SHR, w, sh)));
				st = tinyc_gs_store(k, param, addr, v, in);
			}
			tinyc_mmk_append(b, body, st);
		}
}

/* `if (lane == 0) blk` appended to body. */
static void lane0(tinyc_mmk *b, tinyc_gstmt *body, tinyc_gstmt *blk)
{
	tinyc_gkernel *k = b->k;
	tinyc_mmk_append(b, body, tinyc_gs_if(k, tinyc_gx_binary(k, TINYC_GX_EQ, b->lane, tinyc_gx_int(k, b->it, 0)),
					      blk, NULL));
}

/* Lane 0 waits until at most `pending` of its TMA stores still read their staging
 * buffers; then the warp's lanes may write them. */
static void tma_wait(epi *E, tinyc_gstmt *body, int pending)
{
	tinyc_mmk *b = E->b;
	tinyc_gkernel *k = b->k;
	tinyc_gstmt *w = tinyc_gs_block(k);
	tinyc_mmk_append(b, w, tinyc_gs_bulk_wait(k, pending));
	lane0(b, body, w);
	tinyc_mmk_append(b, body, tinyc_gs_syncwarp(k));
}

/* The staged chunk (slab s, columns 64 q ..) of buffer cur_buf out by a TMA store: every
 * lane's shared writes made visible to the async proxy, then lane 0 stores the 64 x 16
 * box (rows and columns outside the output are not written) and commits its group. */
static void tma_store(epi *E, tinyc_gstmt *body, int s, int q)
{
	tinyc_mmk *b = E->b;
	tinyc_gkernel *k = b->k;
	const tinyc_mm_frag *f = E->f;
	tinyc_dtype it = b->it;
	tinyc_mmk_append(b, body, tinyc_gs_fence(k, TINYC_GF_PROXY_ASYNC));
	tinyc_mmk_append(b, body, tinyc_gs_syncwarp(k));
	tinyc_gexpr *crd[3];
	crd[0] = tinyc_gx_binary(k, TINYC_GX_ADD, b->n0, tinyc_gx_int(k, it, 64 * q));
	crd[1] = tinyc_gx_binary(k, TINYC_GX_ADD, b->m0, tinyc_gx_binary(k, TINYC_GX_ADD, f->warp_row0,
		tinyc_gx_int(k, it, (int64_t)s * f->stage_stride)));
	crd[2] = b->l;
	tinyc_gstmt *st = tinyc_gs_block(k);
	tinyc_mmk_append(b, st, tinyc_gs_tma_store(k, E->tmap, E->g->batched ? 3 : 2, crd, E->stg, tma_buffer(E)));
	tinyc_mmk_append(b, st, tinyc_gs_bulk_commit(k));
	lane0(b, body, st);
	b->bulk = 1;
}

/* The values slab by slab and 64 columns at a time: the staged output's pairs go to the
 * warp's buffer (16 rows x 64 columns), then each lane writes 16 bytes of a row: four rows
 * per instruction, whole 128-byte lines, predicated by the tails (a run of 8 columns is
 * wholly inside or outside).  A fitted width's last chunk has fewer columns: the lanes
 * past them write nothing. */
static void staged_values(epi *E, tinyc_gstmt *body, const int *order, int nord)
{
	tinyc_mmk *b = E->b;
	tinyc_gkernel *k = b->k;
	const tinyc_mm_frag *f = E->f;
	const tinyc_evt_node *nd = &E->g->nodes[E->stage_node];
	tinyc_dtype it = b->it;
	int hist[64], nhist = 0;	/* tma: the buffers of this tile's bulk groups, in order */
	int j = 0;			/* the chunk's place in the tile */
	for (int s = 0; s < f->tr / 2 && !b->error; s++)
		for (int q = 0; 16 * q < f->tc && !b->error; q++, j++) {
			E->cur_q = q;
			int cend = 16 * q + 16 < f->tc ? 16 * q + 16 : f->tc;
			int cols = (cend - 16 * q) / 2 * 8;	/* the chunk's columns */
			if (E->tma) {	/* the chunk's buffer, once no TMA store reads it */
				E->cur_buf = j % E->tma;
				int newer = 0;	/* groups since the last one that read it */
				while (newer < nhist && hist[nhist - 1 - newer] != E->cur_buf)
					newer++;
				if (j == 0 || newer < nhist)
					tma_wait(E, body, j == 0 ? 0 : newer);
			}
			for (int a = 2 * s; a < 2 * s + 2; a++)
				for (int c = 16 * q; c < cend; c++)
					value_block(E, body, order, nord, a, c);
			char text[80];
			snprintf(text, sizeof(text), "%s: slab %d, columns %d..%d from the staging buffer",
				 nd->t.name ? nd->t.name : "store", s, 64 * q, 64 * q + cols - 1);
			tinyc_mmk_append(b, body, tinyc_gs_comment(k, text));
			if (E->tma && cols == 64) {	/* the whole slab by one TMA store */
				tma_store(E, body, s, q);
				if (nhist < 64)
					hist[nhist++] = E->cur_buf;
				continue;
			}
			tinyc_mmk_append(b, body, tinyc_gs_syncwarp(k));
			tinyc_gexpr *lane = tinyc_gx_cast(k, it, tinyc_gx_special(k, TINYC_GSP_LANE));
			if (E->stage_unit != 16) {
				staged_rows(E, body, s, q, cols, lane);
				tinyc_mmk_append(b, body, tinyc_gs_syncwarp(k));
				continue;
			}
			for (int r4 = 0; r4 < 4; r4++) {
				tinyc_gexpr *row = tinyc_gx_binary(k, TINYC_GX_ADD, tinyc_gx_int(k, it, 4 * r4),
					tinyc_gx_binary(k, TINYC_GX_DIV, lane, tinyc_gx_int(k, it, 8)));
				tinyc_gexpr *ch = tinyc_gx_binary(k, TINYC_GX_MOD, lane, tinyc_gx_int(k, it, 8));
				tinyc_gexpr *gm = tinyc_gx_binary(k, TINYC_GX_ADD, b->m0,
					tinyc_gx_binary(k, TINYC_GX_ADD, f->warp_row0,
						tinyc_gx_binary(k, TINYC_GX_ADD,
								tinyc_gx_int(k, it, (int64_t)s * f->stage_stride), row)));
				tinyc_gexpr *gn = tinyc_gx_binary(k, TINYC_GX_ADD, b->n0,
					tinyc_gx_binary(k, TINYC_GX_ADD, tinyc_gx_int(k, it, 64 * q),
							tinyc_gx_binary(k, TINYC_GX_MUL, ch, tinyc_gx_int(k, it, 8))));
				tinyc_gexpr *in = both(k, b->t->pred_m ? tinyc_gx_binary(k, TINYC_GX_LT, gm, b->M) : NULL,
						       b->t->pred_n ? tinyc_gx_binary(k, TINYC_GX_LT, gn, b->N) : NULL);
				if (cols < 64)	/* a partial chunk: its runs of 8 columns */
					in = both(k, in, tinyc_gx_binary(k, TINYC_GX_LT, ch, tinyc_gx_int(k, it, cols / 8)));
				tinyc_gexpr *src = stage_index(E, row, tinyc_gx_binary(k, TINYC_GX_MUL, ch,
										tinyc_gx_int(k, it, 4)));
				tinyc_gexpr *dst = tinyc_gx_binary(k, TINYC_GX_DIV, address(b, &nd->t.lay, gm, gn),
								   tinyc_gx_int(k, it, 2));
				tinyc_gstmt *cp = tinyc_gs_copy(k, pair_param(E, E->stage_node), dst, E->stg, src, 4,
								NULL, 0);
				if (in) {
					tinyc_gstmt *blk = tinyc_gs_block(k);
					tinyc_mmk_append(b, blk, cp);
					tinyc_mmk_append(b, body, tinyc_gs_if(k, in, blk, NULL));
				} else {
					tinyc_mmk_append(b, body, cp);
				}
			}
			tinyc_mmk_append(b, body, tinyc_gs_syncwarp(k));
		}
}

int tinyc_evt_emit_epilogue(tinyc_mmk *b, const tinyc_mm_frag *f, tinyc_gstmt *body)
{
	tinyc_gkernel *k = b->k;
	const tinyc_evt *g = b->prob->evt;
	epi E;
	memset(&E, 0, sizeof(E));
	E.b = b;
	E.f = f;
	E.g = g;
	E.vec = calloc((size_t)g->n + 1, sizeof(int));
	E.val = calloc((size_t)g->n + 1, sizeof(*E.val));
	E.pair = calloc((size_t)g->n + 1, sizeof(int));
	E.pair_param = calloc((size_t)g->n + 1, sizeof(int));
	E.pair_lo = calloc((size_t)g->n + 1, sizeof(int));
	int *order = malloc(sizeof(int) * ((size_t)g->n + 1));
	b->ws = malloc(sizeof(int) * ((size_t)g->n + 1));
	if (!E.vec || !E.val || !order || !b->ws || !E.pair || !E.pair_param || !E.pair_lo) {
		free(E.vec), free(E.val), free(order), free(E.pair), free(E.pair_param), free(E.pair_lo);
		return tinyc_error(b->ctx, "OutOfMemory", "epilogue emission");
	}
	for (int i = 0; i < g->n; i++) {
		E.pair[i] = f->pair_stores && !b->t->no_pair && pairable(b, f, &g->nodes[i]);
		E.pair_param[i] = E.pair_lo[i] = -1;
	}
	E.outer = body;
	int nord = tinyc_evt_visit_order(g, order);
	tinyc_mmk_append(b, body, tinyc_gs_comment(k, "epilogue: the epilogue graph on the accumulator "
						       "in registers"));
	/* the prelude (hoisted: a block spliced in before the main loop at the end) */
	tinyc_gstmt *pro = f->hoist ? tinyc_gs_block(k) : body;
	if (f->hoist)
		tinyc_mmk_append(b, pro, tinyc_gs_comment(k, "the epilogue's coordinates and loads, "
							      "before the main loop"));
	/* global rows and columns of the thread's values, and their tail tests */
	for (int a = 0; a < f->tr; a++) {
		char name[16];
		snprintf(name, sizeof(name), "gm%d", a);
		E.row[a] = tinyc_mmk_let(b, pro, name, tinyc_gx_binary(k, TINYC_GX_ADD, b->m0,
				tinyc_gx_binary(k, TINYC_GX_ADD, f->row_base, tinyc_gx_int(k, b->it, f->row_off[a]))));
		if (b->t->pred_m) {
			snprintf(name, sizeof(name), "im%d", a);
			E.inrow[a] = tinyc_mmk_let(b, pro, name, tinyc_gx_binary(k, TINYC_GX_LT, E.row[a], b->M));
		}
	}
	for (int c = 0; c < f->tc; c++) {
		char name[16];
		snprintf(name, sizeof(name), "gn%d", c);
		E.col[c] = tinyc_mmk_let(b, pro, name, tinyc_gx_binary(k, TINYC_GX_ADD, b->n0,
				tinyc_gx_binary(k, TINYC_GX_ADD, f->col_base, tinyc_gx_int(k, b->it, f->col_off[c]))));
		if (b->t->pred_n) {
			snprintf(name, sizeof(name), "in%d", c);
			E.incol[c] = tinyc_mmk_let(b, pro, name, tinyc_gx_binary(k, TINYC_GX_LT, E.col[c], b->N));
		}
	}
	/* broadcasts loaded once, reduction partials at the identity */
	for (int i = 0; i < g->n && !b->error; i++) {
		const tinyc_evt_node *nd = &g->nodes[i];
		char name[32];
		b->ws[i] = -1;
		E.vec[i] = -1;
		if (nd->kind == TINYC_EVT_ROW_BCAST || nd->kind == TINYC_EVT_COL_BCAST) {
			int along_m = nd->kind == TINYC_EVT_COL_BCAST;
			snprintf(name, sizeof(name), "bc%d", i);
			E.vec[i] = tinyc_gk_reg_array(k, name, nd->t.dtype, along_m ? f->tr : f->tc);
			if (E.vec[i] < 0) {
				b->error = 1;
				break;
			}
			tinyc_mmk_append(b, pro, tinyc_gs_decl(k, E.vec[i], NULL));
			preload_vector(&E, pro, nd, E.vec[i], along_m);
		} else if (nd->kind == TINYC_EVT_SCALAR_BCAST && nd->has_tensor) {
			int param = tinyc_mmk_param(b, nd->t.buf, 0);
			snprintf(name, sizeof(name), "sc%d", i);
			E.vec[i] = tinyc_gk_reg(k, name, nd->t.dtype);
			if (E.vec[i] < 0) {
				b->error = 1;
				break;
			}
			tinyc_mmk_append(b, pro, tinyc_gs_decl(k, E.vec[i],
				tinyc_gx_load(k, param, address(b, &nd->t.lay, NULL, NULL), NULL)));
		} else if (tinyc_evt_is_reduction(nd->kind)) {
			int n = nd->kind == TINYC_EVT_ROW_RED ? f->tc : nd->kind == TINYC_EVT_COL_RED ? f->tr : 1;
			snprintf(name, sizeof(name), "part%d", i);
			E.vec[i] = tinyc_gk_reg_array(k, name, rep(nd->compute), n);
			if (E.vec[i] < 0) {
				b->error = 1;
				break;
			}
			tinyc_mmk_append(b, body, tinyc_gs_decl(k, E.vec[i],
								identity(k, nd->redop, rep(nd->compute))));
			b->ws[i] = add_workspace(b, nd, i);
		}
	}
	/* every value of the thread, each node once per value */
	E.stage_node = -1;
	E.stage_unit = 16;
	for (int i = 0; i < g->n && E.stage_node < 0; i++)
		if (E.pair[i] && stageable(b, f, &g->nodes[i]))
			E.stage_node = i;
	/* rows not 16-byte aligned (odd N, N = 2 mod 8...): staged all the same, written out
	 * row by row in words or halves */
	for (int i = 0; i < g->n && E.stage_node < 0; i++)
		if (f->stage && f->tc % 2 == 0 && f->tr % 2 == 0 && f->pair_stores &&
		    !b->t->no_pair && pair_layout(f, &g->nodes[i])) {
			E.stage_node = i;
			E.stage_unit = E.pair[i] ? 4 : 2;
			E.pair[i] = 1;	/* the staging buffer holds column pairs */
		}
	if (E.stage_node >= 0 && E.stage_unit == 16 && f->tma_bufs > 0 &&
	    tinyc_dtype_size(g->nodes[E.stage_node].t.dtype) == 2) {
		const tinyc_evt_node *nd = &g->nodes[E.stage_node];
		E.tma = f->tma_bufs;
		E.tmap = tinyc_mmk_out_tmap(b, nd->t.buf, nd->t.dtype, &nd->t.lay, 16, g->batched);
	}
	if (E.stage_node >= 0) {
		/* (the TMA buffers in the dynamic segment: 16 warps' pairs pass static memory's 48 KB) */
		E.stg = E.tma ? tinyc_gk_shared(k, "stage", TINYC_UINT, (int64_t)f->stage_warps * 512 * E.tma,
						1024, 1)
			      : tinyc_gk_shared(k, "stage", TINYC_UINT,
						(int64_t)f->stage_warps * 16 * STAGE_ROW_WORDS, 16, 0);
		if (E.stg < 0)
			b->error = 1;
		staged_values(&E, body, order, nord);
	} else {
		for (int a = 0; a < f->tr && !b->error; a++)
			for (int c = 0; c < f->tc && !b->error; c++)
				value_block(&E, body, order, nord, a, c);
	}
	for (int i = 0; i < g->n && !b->error; i++)
		if (tinyc_evt_is_reduction(g->nodes[i].kind))
			finish_reduction(&E, body, i);
	for (int i = 0; f->hoist && i < pro->nstmts && !b->error; i++)
		if (tinyc_gs_insert(k, body, f->hoist_at + i, pro->stmts[i]) < 0)
			b->error = 1;
	free(E.vec), free(E.val), free(order), free(E.pair), free(E.pair_param), free(E.pair_lo);
	if (b->error)
		return tinyc_error(b->ctx, "CodegenError", "kernel %s: the epilogue could not be emitted",
				   k->name);
	return 0;
}

/* Fill the final-pass kernel of reduction node i. */
static int final_pass(tinyc_mmk *b, int i, const char *name)
{
	const tinyc_evt_node *nd = &b->prob->evt->nodes[i];
	const tinyc_mm_problem *pr = b->prob;
	char kname[128];
	snprintf(kname, sizeof(kname), "%s_%s_final", name, nd->t.name ? nd->t.name : "red");
	tinyc_gkernel *k = tinyc_gk_alloc(b->gm, kname);
	if (!k)
		return -1;
	k->index_dtype = b->it;
	tinyc_mmk fb = *b;	/* same problem and buffers, a new kernel */
	fb.k = k;
	fb.param = calloc((size_t)b->gm->nbuf + 1, sizeof(int));
	if (!fb.param)
		return tinyc_error(b->ctx, "OutOfMemory", "final pass");
	for (int j = 0; j < b->gm->nbuf; j++)
		fb.param[j] = -1;
	fb.nparam_cap = b->gm->nbuf;
	fb.error = 0;
	tinyc_dtype it = b->it;
	tinyc_dtype ct = rep(nd->compute);
	fb.M = tinyc_mmk_dim(&fb, &pr->m);
	fb.N = tinyc_mmk_dim(&fb, &pr->n);
	int bx_ = 0;
	const int T = 256;
	int kind = nd->kind;
	k->block[0] = kind == TINYC_EVT_SCALAR_RED ? 1 : T;
	k->block[1] = k->block[2] = 1;
	tinyc_gexpr *one = tinyc_gx_int(k, TINYC_LONG, 1);
	tinyc_gexpr *ext_sym = kind == TINYC_EVT_ROW_RED   ? (pr->n.sym >= 0 ? tinyc_gx_sym(k, pr->n.sym)
									: tinyc_gx_int(k, TINYC_LONG, pr->n.val))
			       : kind == TINYC_EVT_COL_RED ? (pr->m.sym >= 0 ? tinyc_gx_sym(k, pr->m.sym)
									: tinyc_gx_int(k, TINYC_LONG, pr->m.val))
							   : one;
	k->grid[0] = kind == TINYC_EVT_SCALAR_RED ? one : tinyc_gx_ceildiv(k, ext_sym, tinyc_gx_int(k, TINYC_LONG, T));
	k->grid[1] = pr->evt->batched ? (pr->l.sym >= 0 ? tinyc_gx_sym(k, pr->l.sym)
							 : tinyc_gx_int(k, TINYC_LONG, pr->l.val))
				      : one;
	k->grid[2] = one;
	(void)bx_;
	tinyc_gstmt *body = k->body;
	fb.l = pr->evt->batched ? tinyc_mmk_let(&fb, body, "l", tinyc_gx_cast(k, it, tinyc_gx_special(k, TINYC_GSP_BID_Y)))
				: tinyc_gx_int(k, it, 0);
	tinyc_gexpr *idx = tinyc_mmk_let(&fb, body, "i",
		tinyc_gx_binary(k, TINYC_GX_ADD,
				tinyc_gx_binary(k, TINYC_GX_MUL, tinyc_gx_cast(k, it, tinyc_gx_special(k, TINYC_GSP_BID_X)),
						tinyc_gx_int(k, it, T)),
				tinyc_gx_cast(k, it, tinyc_gx_special(k, TINYC_GSP_TID_X))));
	tinyc_gexpr *gy = tinyc_mmk_let(&fb, body, "tiles_m", tinyc_gx_ceildiv(k, fb.M, tinyc_gx_int(k, it, b->t->bm)));
	tinyc_gexpr *gx = tinyc_mmk_let(&fb, body, "tiles_n", tinyc_gx_ceildiv(k, fb.N, tinyc_gx_int(k, it, b->t->bn)));
	int ws = tinyc_mmk_param(&fb, b->ws[i], 0);
	int out = tinyc_mmk_param(&fb, nd->t.buf, 1);
	int acc = tinyc_gk_reg(k, "acc", ct), it_v = tinyc_gk_reg(k, "t", it);
	if (acc < 0 || it_v < 0 || fb.error) {
		free(fb.param);
		return -1;
	}
	tinyc_gexpr *lim = kind == TINYC_EVT_ROW_RED ? fb.N : kind == TINYC_EVT_COL_RED ? fb.M : tinyc_gx_int(k, it, 1);
	tinyc_gexpr *ok = tinyc_gx_binary(k, TINYC_GX_LT, idx, lim);
	tinyc_gexpr *count = kind == TINYC_EVT_ROW_RED ? gy
			     : kind == TINYC_EVT_COL_RED ? gx
							 : tinyc_gx_binary(k, TINYC_GX_MUL, gy, gx);
	tinyc_mmk_append(&fb, body, tinyc_gs_decl(k, acc, identity(k, nd->redop, ct)));
	tinyc_gexpr *T_ = tinyc_gx_var(k, it_v);
	tinyc_gexpr *src;
	if (kind == TINYC_EVT_SCALAR_RED)
		src = tinyc_gx_binary(k, TINYC_GX_ADD, tinyc_gx_binary(k, TINYC_GX_MUL, fb.l, count), T_);
	else
		src = tinyc_gx_binary(k, TINYC_GX_ADD,
				      tinyc_gx_binary(k, TINYC_GX_MUL,
						      tinyc_gx_binary(k, TINYC_GX_ADD,
								      tinyc_gx_binary(k, TINYC_GX_MUL, fb.l, count), T_),
						      lim),
				      idx);
	tinyc_gstmt *lb = tinyc_gs_block(k);
	tinyc_mmk_append(&fb, lb, tinyc_gs_assign(k, acc, combine(k, nd->redop, tinyc_gx_var(k, acc),
								tinyc_gx_load(k, ws, src, ok))));
	tinyc_mmk_append(&fb, body, tinyc_gs_for_range(k, it_v, tinyc_gx_int(k, it, 0), count,
						       tinyc_gx_int(k, it, 1), 0, lb));
	tinyc_gexpr *addr = address(&fb, &nd->t.lay, kind == TINYC_EVT_COL_RED ? idx : NULL,
				    kind == TINYC_EVT_ROW_RED ? idx : NULL);
	tinyc_mmk_append(&fb, body, tinyc_gs_store(k, out, addr,
						   tinyc_gx_cast(k, nd->t.dtype, tinyc_gx_var(k, acc)),
						   kind == TINYC_EVT_SCALAR_RED ? NULL : ok));
	char comment[256];
	snprintf(comment, sizeof(comment), "%s: final pass of %s %s: combines the per-CTA partials in "
		 "tile order (deterministic)", kname, tinyc_evt_kind_name(nd->kind),
		 nd->t.name ? nd->t.name : "");
	k->comment = tinyc_gpu_strdup(b->gm, comment);
	tinyc_gk_sort_params(k);
	free(fb.param);
	return fb.error ? tinyc_error(b->ctx, "CodegenError", "kernel %s could not be built", kname) : 0;
}

int tinyc_evt_emit_final_passes(tinyc_mmk *b, const char *name)
{
	const tinyc_evt *g = b->prob->evt;
	for (int i = 0; i < g->n; i++)
		if (tinyc_evt_is_reduction(g->nodes[i].kind) && final_pass(b, i, name) < 0)
			return -1;
	return 0;
}
