/* The two-stage fp32 SIMT tile (sched/matmul.h: variant simt, stages 2).
 *
 * CTA tile 128 x 128, k-step BK (16), 16 x 16 threads; thread (tx, ty) owns an 8 x 8
 * micro-tile split in four 4 x 4 quarters: rows ty*4 + i and 64 + ty*4 + i, columns
 * tx*4 + j and 64 + tx*4 + j (i, j < 4), so that its operands of one k are two 16-byte
 * shared loads each and a warp's loads are broadcasts (A) or consecutive (B).
 *
 *   shared As[2][BK][128 + 4] (k-major: A transposed on the way in), Bs[2][BK][128 + 4]
 *   registers ra[], rb[]: the thread's elements of the next k tile (element i = tid +
 *             j * 256 of the tile, consecutive threads along the operand's contiguous
 *             axis: coalesced; zero outside the matrices); 16-byte loads of 4 elements
 *             where the operand is contiguous without a tail and 16-byte aligned
 *
 *   load tile 0 into ra/rb; store them into stage 0; barrier
 *   for kt < tiles:
 *     load tile kt + 1 into ra/rb (in flight under the FMAs; predicated off past the
 *             last tile rather than branched over, so that the loads stay ahead)
 *     for kk < BK: a[0..3], a[4..7] = As[kt % 2][kk][ty*4 ..], [64 + ty*4 ..];
 *                  b likewise from Bs; acc[i][j] += a[i] * b[j] (64 FMAs)
 *     store ra/rb into stage (kt + 1) % 2
 *     barrier   (the stage just read is written again only after the next barrier)
 *
 * Then the epilogue of codegen/evt_emit.c on the 8 x 8 fragment.
 */
#include <string.h>

#include "codegen/matmul.h"

#define BM 128			/* CTA tile rows */
#define BN 128			/* CTA tile columns */
#define LDA (BM + TINYC_SIMT_TILE_PAD)	/* row length of As (k-major) */
#define LDB (BN + TINYC_SIMT_TILE_PAD)	/* row length of Bs */
#define THREADS 256

/* Shorthands for index arithmetic. */
static tinyc_gexpr *I(tinyc_mmk *b, int64_t v)
{
	return tinyc_gx_int(b->k, b->it, v);
}

static tinyc_gexpr *bin(tinyc_mmk *b, tinyc_gx_op op, tinyc_gexpr *x, tinyc_gexpr *y)
{
	return tinyc_gx_binary(b->k, op, x, y);
}

/* A register initialised to v (declared in block); its value. */
static tinyc_gexpr *let(tinyc_mmk *b, tinyc_gstmt *block, const char *name, tinyc_gexpr *v)
{
	int var = v ? tinyc_gk_reg(b->k, name, v->dtype) : -1;
	if (var < 0) {
		b->error = 1;
		return NULL;
	}
	tinyc_mmk_append(b, block, tinyc_gs_decl(b->k, var, v));
	return tinyc_gx_var(b->k, var);
}

/* The value of polynomial p under the module's bindings, or -1 when it has a free symbol. */
static int64_t bound_value(const tinyc_mmk *b, const tinyc_evt_poly *p)
{
	int64_t v;
	if (!b->gm->sym_bound || tinyc_evt_poly_eval(p, b->gm->sym_bound, b->gm->nsym, &v) < 0)
		return -1;
	return v;
}

/* Whether gathered operand io (a conv's A on its channels-last copy, sched/conv_nhwc.c)
 * can be loaded 4 elements at a time along k: the innermost column axis (the channels)
 * of stride 1 and extent a multiple of 4, every other stride and the offset multiples of
 * 4 (16-byte aligned vectors).  Then K is a multiple of 4 and the window's guards do not
 * involve the channels: a vector is wholly in or out of the tail and the padding. */
static int gather_vec_loads(const tinyc_mmk *b, const tinyc_mm_tile_io *io)
{
	const tinyc_mm_operand *op = io->op;
	const tinyc_mm_gather *g = &op->gather;
	int nc = g->nax[1];
	if (op != &b->prob->a || !b->t->a_nhwc || nc < 1 || io->cols % 4 || g->stride[1][nc - 1] != 1 ||
	    g->ext[1][nc - 1] % 4)
		return 0;
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < g->nax[r]; i++)
			if (!(r == 1 && i == nc - 1) && g->stride[r][i] % 4)
				return 0;
	for (int q = 0; q < g->nguard; q++)
		if (g->gcoef[q][1][nc - 1])
			return 0;
	int64_t off = bound_value(b, &op->offset);
	int64_t sl = b->prob->evt && b->prob->evt->batched ? bound_value(b, &op->stride[2]) : 0;
	return off % 4 == 0 && sl >= 0 && sl % 4 == 0;
}

/* Whether io's operand can be loaded 4 elements at a time: contiguous along one tile axis
 * with no tail test on it, offset and the other strides multiples of 4 (16-byte aligned
 * vectors) under the bindings. */
static int vec_loads(const tinyc_mmk *b, const tinyc_mm_tile_io *io)
{
	const tinyc_mm_operand *op = io->op;
	if (op->gather.on)
		return gather_vec_loads(b, io);
	int c = tinyc_evt_poly_is_const(&op->stride[1], 1) ? 1
		: tinyc_evt_poly_is_const(&op->stride[0], 1) ? 0 : -1;
	if (c < 0 || op->gather.on || (c ? io->pc : io->pr) || (c ? io->cols : io->rows) % 4)
		return 0;
	int64_t off = bound_value(b, &op->offset), so = bound_value(b, &op->stride[1 - c]);
	int64_t sl = b->prob->evt && b->prob->evt->batched ? bound_value(b, &op->stride[2]) : 0;
	return off >= 0 && off % 4 == 0 && so >= 0 && so % 4 == 0 && sl >= 0 && sl % 4 == 0;
}

/* The tile coordinates (r, c) of the thread's element j (with io->vec: of element e of
 * its vector j / 4): consecutive threads along the operand's contiguous axis. */
static void elem_coords(tinyc_mmk *b, const tinyc_mm_tile_io *io, int j, tinyc_gexpr **r, tinyc_gexpr **c)
{
	int along_rows = !(io->vec && io->op->gather.on) &&	/* NHWC: along k */
			 !tinyc_evt_poly_is_const(&io->op->stride[1], 1) &&
			 tinyc_evt_poly_is_const(&io->op->stride[0], 1);
	int w = io->vec ? 4 : 1, e = j % w;
	tinyc_gexpr *i = bin(b, TINYC_GX_ADD, b->tid, I(b, (int64_t)(j / w) * THREADS));
	int line = (along_rows ? io->rows : io->cols) / w;	/* units along the line */
	tinyc_gexpr *along = bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, bin(b, TINYC_GX_MOD, i, I(b, line)),
						       I(b, w)), I(b, e));
	tinyc_gexpr *across = bin(b, TINYC_GX_DIV, i, I(b, line));
	*r = along_rows ? along : across;
	*c = along_rows ? across : along;
}

/* Load the thread's elements of the tile at (row0, col0) into io->reg (zero outside, and
 * everywhere when `live` (NULL: true) is false). */
void tinyc_mm_tile_load(tinyc_mmk *b, tinyc_gstmt *blk, const tinyc_mm_tile_io *io, tinyc_gexpr *row0,
			tinyc_gexpr *col0, tinyc_gexpr *live)
{
	tinyc_gkernel *k = b->k;
	int n = io->rows * io->cols / THREADS;
	int param = tinyc_mmk_param(b, io->op->buf, 0);
	for (int j = 0; j < n; j += io->vec ? 4 : 1) {
		tinyc_gexpr *r, *c;
		elem_coords(b, io, j, &r, &c);
		tinyc_gexpr *gr = bin(b, TINYC_GX_ADD, row0, r), *gc = bin(b, TINYC_GX_ADD, col0, c);
		tinyc_gexpr *in = live;
		if (io->pr) {
			tinyc_gexpr *t = bin(b, TINYC_GX_LT, gr, io->R);
			in = in ? bin(b, TINYC_GX_LAND, in, t) : t;
		}
		if (io->pc) {
			tinyc_gexpr *t = bin(b, TINYC_GX_LT, gc, io->C);
			in = in ? bin(b, TINYC_GX_LAND, in, t) : t;
		}
		tinyc_gexpr *addr, *guard = NULL;
		if (io->op->gather.on) {	/* im2col (a convolution): the window's guard too */
			addr = tinyc_conv_addr(b, io->op, gr, gc, &guard);
			if (guard)
				in = in ? bin(b, TINYC_GX_LAND, in, guard) : guard;
		} else {
			addr = tinyc_mmk_op_addr(b, io->op, gr, gc);
		}
		if (io->vec) {	/* the vector's tail test is its first element's */
			tinyc_mmk_append(b, blk, tinyc_gs_copy(k, io->reg, I(b, j), param, addr, 4, in, 0));
			continue;
		}
		tinyc_gexpr *v = tinyc_gx_load(k, param, addr, in);
		tinyc_mmk_append(b, blk, tinyc_gs_store(k, io->reg, I(b, j), v, NULL));
	}
}

/* Store io->reg into stage `st` of the shared tile. */
void tinyc_mm_tile_store(tinyc_mmk *b, tinyc_gstmt *blk, const tinyc_mm_tile_io *io, tinyc_gexpr *st)
{
	tinyc_gkernel *k = b->k;
	int n = io->rows * io->cols / THREADS;
	int64_t stage = (int64_t)(io->kmajor_store ? io->cols : io->rows) * io->ld;
	for (int j = 0; j < n; j++) {
		tinyc_gexpr *r, *c;
		elem_coords(b, io, j, &r, &c);
		tinyc_gexpr *in = io->kmajor_store ? bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, c, I(b, io->ld)), r)
						   : bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, r, I(b, io->ld)), c);
		tinyc_gexpr *ix = bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, st, I(b, stage)), in);
		tinyc_mmk_append(b, blk, tinyc_gs_store(k, io->sh, ix, tinyc_gx_load(k, io->reg, I(b, j), NULL),
							NULL));
	}
}

/* The k loop's body for stage `st`: per kk, the fragments by 16-byte shared loads, then
 * the 64 FMAs. */
static void tile_compute(tinyc_mmk *b, tinyc_gstmt *blk, int As, int Bs, int afr, int bfr,
			 tinyc_gexpr *st, tinyc_gexpr *tx, tinyc_gexpr *ty, int bk)
{
	tinyc_gkernel *k = b->k;
	int kkv = tinyc_gk_reg(k, "kk", b->it);
	if (kkv < 0) {
		b->error = 1;
		return;
	}
	tinyc_gexpr *kk = tinyc_gx_var(k, kkv);
	tinyc_gstmt *inner = tinyc_gs_block(k);
	tinyc_gexpr *arow = bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, st, I(b, (int64_t)bk * LDA)),
				bin(b, TINYC_GX_MUL, kk, I(b, LDA)));
	tinyc_gexpr *brow = bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, st, I(b, (int64_t)bk * LDB)),
				bin(b, TINYC_GX_MUL, kk, I(b, LDB)));
	tinyc_gexpr *am = bin(b, TINYC_GX_MUL, ty, I(b, 4)), *bn = bin(b, TINYC_GX_MUL, tx, I(b, 4));
	for (int h = 0; h < 2; h++) {
		tinyc_gexpr *ai = bin(b, TINYC_GX_ADD, arow, bin(b, TINYC_GX_ADD, am, I(b, 64 * h)));
		tinyc_gexpr *bi = bin(b, TINYC_GX_ADD, brow, bin(b, TINYC_GX_ADD, bn, I(b, 64 * h)));
		tinyc_mmk_append(b, inner, tinyc_gs_copy(k, afr, I(b, 4 * h), As, ai, 4, NULL, 0));
		tinyc_mmk_append(b, inner, tinyc_gs_copy(k, bfr, I(b, 4 * h), Bs, bi, 4, NULL, 0));
	}
	for (int i = 0; i < 8; i++)
		for (int j = 0; j < 8; j++) {
			tinyc_gexpr *ix = I(b, i * 8 + j);
			tinyc_gexpr *p = bin(b, TINYC_GX_MUL, tinyc_gx_load(k, afr, I(b, i), NULL),
					     tinyc_gx_load(k, bfr, I(b, j), NULL));
			tinyc_mmk_append(b, inner, tinyc_gs_store(k, b->acc, ix,
				bin(b, TINYC_GX_ADD, tinyc_gx_load(k, b->acc, ix, NULL), p), NULL));
		}
	tinyc_mmk_append(b, blk, tinyc_gs_for_range(k, kkv, I(b, 0), I(b, bk), I(b, 1), -1, inner));
}

void tinyc_mm_tile_io_init(tinyc_mmk *b, tinyc_mm_tile_io *io, int is_b, int rows, int cols,
			   int kmajor_store, int ld, int sh, int reg)
{
	const tinyc_mm_tiles *t = b->t;
	memset(io, 0, sizeof(*io));
	io->op = is_b ? &b->prob->b : &b->prob->a;
	io->rows = rows, io->cols = cols;
	io->kmajor_store = kmajor_store;
	io->ld = ld, io->sh = sh, io->reg = reg;
	io->R = is_b ? b->K : b->M;
	io->C = is_b ? b->N : b->K;
	io->pr = is_b ? t->pred_k : t->pred_m;
	io->pc = is_b ? t->pred_n : t->pred_k;
	io->vec = vec_loads(b, io);
}

int tinyc_mm_two_stage_loop(tinyc_mmk *b, tinyc_gstmt *body, const tinyc_mm_tile_io *ia,
			    const tinyc_mm_tile_io *ib, tinyc_mm_stage_fn compute, void *arg)
{
	tinyc_gkernel *k = b->k;
	int BK = ia->cols;
	int ktv = tinyc_gk_reg(k, "kt", b->it);
	if (ktv < 0 || b->error)
		return -1;
	tinyc_gexpr *tiles = let(b, body, "ktiles", tinyc_gx_ceildiv(k, b->K, I(b, BK)));
	tinyc_mmk_append(b, body, tinyc_gs_comment(k, "k tile 0 into stage 0"));
	tinyc_mm_tile_load(b, body, ia, b->m0, I(b, 0), NULL);
	tinyc_mm_tile_load(b, body, ib, I(b, 0), b->n0, NULL);
	tinyc_mm_tile_store(b, body, ia, I(b, 0));
	tinyc_mm_tile_store(b, body, ib, I(b, 0));
	tinyc_mmk_append(b, body, tinyc_gs_barrier(k));

	tinyc_gexpr *kt = tinyc_gx_var(k, ktv);
	tinyc_gstmt *loop = tinyc_gs_block(k);
	tinyc_gexpr *st = let(b, loop, "st", bin(b, TINYC_GX_AND, kt, I(b, 1)));
	tinyc_gexpr *more = let(b, loop, "more", bin(b, TINYC_GX_LT, bin(b, TINYC_GX_ADD, kt, I(b, 1)), tiles));
	tinyc_gexpr *k1 = let(b, loop, "k1", bin(b, TINYC_GX_MUL, bin(b, TINYC_GX_ADD, kt, I(b, 1)), I(b, BK)));
	/* predicated, not branched over: a conditional block would let the compiler sink
	 * the loads next to the stores, exposing their latency */
	tinyc_mmk_append(b, loop, tinyc_gs_comment(k, "the next k tile's loads (zero past the "
						       "last), in flight under the FMAs"));
	tinyc_mm_tile_load(b, loop, ia, b->m0, k1, more);
	tinyc_mm_tile_load(b, loop, ib, k1, b->n0, more);
	compute(b, loop, st, arg);
	tinyc_mmk_append(b, loop, tinyc_gs_comment(k, "into the other stage (after the last "
						       "tile: zeros nobody reads)"));
	tinyc_gexpr *other = bin(b, TINYC_GX_XOR, st, I(b, 1));
	tinyc_mm_tile_store(b, loop, ia, other);
	tinyc_mm_tile_store(b, loop, ib, other);
	tinyc_mmk_append(b, loop, tinyc_gs_barrier(k));
	tinyc_mmk_append(b, body, tinyc_gs_for_range(k, ktv, I(b, 0), tiles, I(b, 1), 0, loop));
	return b->error ? -1 : 0;
}

/* What the SIMT tile's k-loop body reads: its shared tiles and fragment arrays. */
typedef struct simt_stage {
	int As, Bs, afr, bfr;	/* shared tiles, fragment register arrays */
	tinyc_gexpr *tx, *ty;	/* the thread's coordinates */
	int bk;			/* k-step */
} simt_stage;

/* tinyc_mm_stage_fn of the SIMT tile. */
static void simt_stage_compute(tinyc_mmk *b, tinyc_gstmt *blk, tinyc_gexpr *st, void *arg)
{
	const simt_stage *c = arg;
	tile_compute(b, blk, c->As, c->Bs, c->afr, c->bfr, st, c->tx, c->ty, c->bk);
}

int tinyc_simt_tile_build(tinyc_mmk *b, const char *name)
{
	const tinyc_mm_tiles *t = b->t;
	int BK = t->bk;
	if (t->bm != BM || t->bn != BN || (int64_t)BM * BK % THREADS || (int64_t)BN * BK % THREADS)
		return tinyc_error(b->ctx, "CodegenError", "matmul %s: the two-stage SIMT tile is "
				   "128x128 with BK a multiple of 2 (got %dx%dx%d)", name, t->bm, t->bn, BK);
	tinyc_gkernel *k = tinyc_mmk_begin(b, name, 64);
	if (!k || b->error)
		return -1;
	tinyc_gstmt *body = k->body;
	tinyc_gexpr *tx = let(b, body, "tx", tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_TID_X)));
	tinyc_gexpr *ty = let(b, body, "ty", tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_TID_Y)));
	b->tid = let(b, body, "tid", bin(b, TINYC_GX_ADD, bin(b, TINYC_GX_MUL, ty, I(b, 16)), tx));
	int As = tinyc_gk_shared(k, "As", TINYC_FLOAT, 2 * (int64_t)BK * LDA, 16, 0);
	int Bs = tinyc_gk_shared(k, "Bs", TINYC_FLOAT, 2 * (int64_t)BK * LDB, 16, 0);
	int ra = tinyc_gk_reg_array(k, "ra", TINYC_FLOAT, (int64_t)BM * BK / THREADS);
	int rb = tinyc_gk_reg_array(k, "rb", TINYC_FLOAT, (int64_t)BN * BK / THREADS);
	int afr = tinyc_gk_reg_array(k, "a", TINYC_FLOAT, 8), bfr = tinyc_gk_reg_array(k, "b", TINYC_FLOAT, 8);
	if (As < 0 || Bs < 0 || ra < 0 || rb < 0 || afr < 0 || bfr < 0 || b->error)
		return -1;
	for (int v = 0; v < 4; v++)
		tinyc_mmk_append(b, body, tinyc_gs_decl(k, (int[]){ra, rb, afr, bfr}[v], NULL));
	tinyc_mm_tile_io ia, ib;
	tinyc_mm_tile_io_init(b, &ia, 0, BM, BK, 1, LDA, As, ra);
	tinyc_mm_tile_io_init(b, &ib, 1, BK, BN, 0, LDB, Bs, rb);
	/* with vector loads the kernel fits 128 registers (ptxas: 127): two CTAs per SM;
	 * element loads need about 160 (capped at 128 they spill) */
	if (ia.vec && ib.vec)
		k->min_blocks_per_sm = 2;
	simt_stage c = {As, Bs, afr, bfr, tx, ty, BK};
	if (tinyc_mm_two_stage_loop(b, body, &ia, &ib, simt_stage_compute, &c) < 0)
		return -1;

	/* the fragment: value (a, c) at tile row ty*4 + row_off[a], column tx*4 + col_off[c] */
	tinyc_mm_frag f;
	memset(&f, 0, sizeof(f));
	f.tr = 8, f.tc = 8;
	f.row_run = 4, f.col_run = 4;
	f.row_base = bin(b, TINYC_GX_MUL, ty, I(b, 4));
	f.col_base = bin(b, TINYC_GX_MUL, tx, I(b, 4));
	for (int i = 0; i < 8; i++)
		f.row_off[i] = f.col_off[i] = (i / 4) * 64 + i % 4;
	tinyc_mmk_simt_lanes(b, &f, tx);
	return tinyc_evt_emit_epilogue(b, &f, body);
}
