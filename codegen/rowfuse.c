/* The GPU IR builder of ROWFUSE plans (sched/rowfuse.h): a row group as one kernel.
 *
 * Block (TX, RY): RY rows per block, TX threads per row (a warp, or the whole block when
 * TX > 32 and RY = 1).  Row `row` = blockIdx.x * RY + threadIdx.y; its index over the
 * outer dims O... is decomposed once.  Thread x of the row owns the columns x + j * TX.
 * For each fused reduction, in graph order (a phase):
 *   - the reduction's operand is emitted at (row, column) for each owned column, and
 *     folded into an accumulator (columns past the row's end are skipped);
 *   - the accumulator is reduced over the row: xor shuffles across the warp, and when the
 *     row has several warps, each warp's total through shared memory (one array per
 *     reduction, so no second barrier) and a second round of shuffles; every thread ends
 *     with the row's value, converted as the reference converts the accumulator;
 *   - later phases read that value through the emitter's leaf hook wherever the reduction
 *     is needed at this row.
 * Then the value is emitted and stored for each owned column (or once per row, by thread 0
 * of the row, when the kernel's value has one element per row).
 * Register mode (the plan's tile[0] = columns per thread, C known): everything is emitted
 * unrolled into one scope, so the emitter's memo keeps every value it computed (the row's
 * loads included) in registers for the later phases: the row is read once.  Otherwise each
 * phase is a strided loop over the row; in shared mode (tile[1] > 1: the bytes staged) a
 * first loop copies the row's inputs into shared memory and the phases read them there,
 * else the phases re-read the row from global memory.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/gpu.h"
#include "sched/rowfuse.h"

/* State of one build. */
typedef struct rfb {
	tinyc_gkernel *k;	/* the kernel */
	tinyc_emit *em;		/* its emitter */
	int ro;			/* rank of the reductions' operands */
	int axis;		/* the reduced axis of the operands */
	tinyc_gexpr *ridx[TINYC_MAX_RANK];	/* the row's index over the outer dims */
	int nf;			/* fused reductions */
	int *reds;		/* their nodes */
	tinyc_gexpr **result;	/* per reduction: the row's value once reduced, else NULL */
	int nstage;		/* shared mode: row inputs staged in shared memory */
	int stage_node[8];	/* their nodes (what the emitter would load) */
	int stage_var[8];	/* their shared arrays, C elements each */
	int staged;		/* the staging loop is emitted: loads come from shared */
	tinyc_gexpr *curcol;	/* the column of the loop being emitted, or NULL */
} rfb;

/* Leaf hook: a fused reduction at this kernel's row is the value its phase computed; a
 * staged row input at this row and the loop's column is its shared-memory copy. */
static tinyc_gexpr *row_leaf(tinyc_emit *em, int node, tinyc_gexpr *const *idx, void *user)
{
	rfb *b = user;
	for (int i = 0; b->staged && b->curcol && i < b->nstage; i++) {
		if (b->stage_node[i] != node)
			continue;
		for (int d = 0; d < b->ro - 1; d++)
			if (!tinyc_gx_equal(idx[d], b->ridx[d]))
				return NULL;
		if (!tinyc_gx_equal(idx[b->ro - 1], b->curcol))
			return NULL;
		return tinyc_gx_load(b->k, b->stage_var[i], b->curcol, NULL);
	}
	for (int i = 0; i < b->nf; i++) {
		if (b->reds[i] != node || !b->result[i])
			continue;
		int keep = em->g->nodes[node].rank == b->ro;	/* keepdim: skip the reduced dim */
		for (int d = 0, n = 0; d < (keep ? b->ro : b->ro - 1); d++) {
			if (keep && d == b->axis)
				continue;
			if (!tinyc_gx_equal(idx[d], b->ridx[n++]))
				return NULL;	/* another row: the emitter computes it */
		}
		return b->result[i];
	}
	return NULL;
}

/* Bind e to a new register `name` (declared in block); its variable expression. */
static tinyc_gexpr *bind_reg(tinyc_gkernel *k, tinyc_gstmt *block, const char *name, tinyc_gexpr *e,
			     int *var)
{
	if (!e)
		return NULL;
	int v = tinyc_gk_reg(k, name, e->dtype);
	if (v < 0 || tinyc_gs_append(k, block, tinyc_gs_decl(k, v, e)) < 0)
		return NULL;
	if (var)
		*var = v;
	return tinyc_gx_var(k, v);
}

/* x (compute dtype of the operand's dtype in_dt) converted to the accumulator dtype, as the
 * reference folds it. */
static tinyc_gexpr *to_acc(tinyc_emit *em, tinyc_gexpr *x, tinyc_dtype in_dt, tinyc_dtype acc_dt)
{
	tinyc_gkernel *k = em->k;
	if (!x || in_dt == acc_dt)
		return x;
	tinyc_dtype acd = tinyc_emit_compute_dtype(acc_dt);
	if (acc_dt == TINYC_BOOL)
		return tinyc_gx_binary(k, TINYC_GX_NE, x, tinyc_emit_red_identity(em, TINYC_RED_ADD, x->dtype));
	if (tinyc_dtype_is_16bit_float(acc_dt))
		return tinyc_gx_cast(k, TINYC_FLOAT, tinyc_gx_cast(k, acc_dt, x));
	return tinyc_gx_cast(k, acd, x);
}

/* The reduced accumulator (dtype acc_dt) as the REDUCE's value (dtype dt), in compute dtype. */
static tinyc_gexpr *from_acc(tinyc_emit *em, tinyc_gexpr *acc, tinyc_dtype acc_dt, tinyc_dtype dt)
{
	tinyc_gkernel *k = em->k;
	if (acc_dt != dt) {
		if (tinyc_dtype_is_16bit_float(dt))
			return tinyc_gx_cast(k, TINYC_FLOAT, tinyc_gx_cast(k, dt, acc));
		if (dt == TINYC_BOOL)
			return tinyc_gx_binary(k, TINYC_GX_NE, acc, tinyc_emit_red_identity(em, TINYC_RED_ADD, acc->dtype));
		return tinyc_gx_cast(k, tinyc_emit_compute_dtype(dt), acc);
	}
	if (tinyc_dtype_is_16bit_float(dt))
		return tinyc_gx_cast(k, TINYC_FLOAT, tinyc_gx_cast(k, dt, acc));
	return acc;
}

/* Append the xor-shuffle butterfly of acc over the offsets below `width` (a power of two). */
static int butterfly(tinyc_emit *em, tinyc_gstmt *block, tinyc_redop op, int acc, int tmp,
		     int width)
{
	tinyc_gkernel *k = em->k;
	int rc = 0;
	for (int off = 16; off >= 1; off /= 2) {
		if (off >= width)
			continue;
		rc |= tinyc_gs_append(k, block, tinyc_gs_shfl(k, TINYC_GSHFL_XOR, tmp, tinyc_gx_var(k, acc),
							     tinyc_gx_int(k, TINYC_INT, off), 32));
		rc |= tinyc_gs_append(k, block, tinyc_gs_assign(k, acc,
			tinyc_emit_red_combine(em, op, tinyc_gx_var(k, acc), tinyc_gx_var(k, tmp))));
	}
	return rc;
}

/* The reduction of acc over the TX threads of the row: every thread ends with the total. */
static int row_reduce(tinyc_emit *em, tinyc_gstmt *block, tinyc_redop op, int acc, int TX,
		      const char *name)
{
	tinyc_gkernel *k = em->k;
	tinyc_dtype dt = k->vars[acc].dtype;
	int tmp = tinyc_gk_reg(k, "other", dt);
	if (tmp < 0 || tinyc_gs_append(k, block, tinyc_gs_decl(k, tmp, NULL)) < 0)
		return -1;
	int rc = butterfly(em, block, op, acc, tmp, 32);
	if (TX <= 32)
		return rc;
	int nw = TX / 32;
	int part = tinyc_gk_shared(k, name, dt, nw, 0, 0);
	if (part < 0)
		return -1;
	tinyc_gexpr *lane = tinyc_gx_special(k, TINYC_GSP_LANE);
	tinyc_gexpr *warp = tinyc_gx_special(k, TINYC_GSP_WARP);
	tinyc_gexpr *lane0 = tinyc_gx_binary(k, TINYC_GX_EQ, lane, tinyc_gx_int(k, TINYC_INT, 0));
	rc |= tinyc_gs_append(k, block, tinyc_gs_store(k, part, warp, tinyc_gx_var(k, acc), lane0));
	rc |= tinyc_gs_append(k, block, tinyc_gs_barrier(k));
	tinyc_gexpr *in = tinyc_gx_binary(k, TINYC_GX_LT, lane, tinyc_gx_int(k, TINYC_INT, nw));
	rc |= tinyc_gs_append(k, block, tinyc_gs_assign(k, acc,
		tinyc_gx_select(k, in, tinyc_gx_load(k, part, lane, in), tinyc_emit_red_identity(em, op, dt))));
	rc |= butterfly(em, block, op, acc, tmp, 32);	/* all lanes: every thread needs it */
	return rc;
}

/* The columns of one phase: register mode visits the owned columns unrolled, loop mode
 * one strided loop.  f is called with the column index and the predicate of its loads. */
typedef struct cols {
	int slots;		/* register mode: columns per thread; 0: loop mode */
	tinyc_gexpr *lane;	/* thread x */
	tinyc_gexpr *rowok;	/* row < rows, or NULL when always */
	tinyc_gexpr *C;		/* row length (index expression) */
	int64_t Cknown;		/* its value, -1 when unknown */
	int TX;			/* threads per row */
	tinyc_gexpr **col;	/* register mode: per slot, the column */
	tinyc_gexpr **colok;	/* per slot: column < C, or NULL when always */
	tinyc_gexpr **pred;	/* per slot: rowok && colok (or NULL) */
} cols;

/* Emit x at (row, column) for the reduction phase of reduction i into acc. */
static int reduce_at(rfb *b, tinyc_gstmt *block, int i, int acc, tinyc_gexpr *col,
		     tinyc_gexpr *colok, tinyc_gexpr *pred)
{
	tinyc_emit *em = b->em;
	tinyc_gkernel *k = b->k;
	const tinyc_graph *g = em->g;
	const tinyc_uop *r = &g->nodes[b->reds[i]];
	const tinyc_ibval *rv = &em->ib->val[b->reds[i]];
	tinyc_dtype acc_dt = rv->acc != TINYC_DTYPE_NONE ? rv->acc : r->dtype;
	tinyc_gexpr *ax[TINYC_MAX_RANK];
	for (int d = 0, n = 0; d < b->ro; d++)
		ax[d] = d == b->axis ? col : b->ridx[n++];
	tinyc_gexpr *x = tinyc_emit_value(em, block, r->src[0], ax, pred);
	x = to_acc(em, x, g->nodes[r->src[0]].dtype, acc_dt);
	tinyc_gexpr *upd = tinyc_emit_red_combine(em, r->redop, tinyc_gx_var(k, acc), x);
	if (colok)
		upd = tinyc_gx_select(k, colok, upd, tinyc_gx_var(k, acc));
	if (!upd)
		return -1;
	return tinyc_gs_append(k, block, tinyc_gs_assign(k, acc, upd));
}

/* Emit the value at (row, column) and store it. */
static int store_at(rfb *b, const tinyc_skernel *sk, tinyc_gstmt *block, tinyc_gexpr *col,
		    tinyc_gexpr *pred)
{
	tinyc_emit *em = b->em;
	tinyc_gexpr *idx[TINYC_MAX_RANK];
	for (int d = 0; d < b->ro - 1; d++)
		idx[d] = b->ridx[d];
	idx[b->ro - 1] = col;
	tinyc_gexpr *v = tinyc_emit_value(em, block, sk->value, idx, pred);
	return tinyc_gs_append(b->k, block, tinyc_emit_store(em, sk->out_buf, idx, v, pred));
}

/* A strided loop over the row's columns from lane; *colv receives its variable. */
static tinyc_gstmt *row_loop(rfb *b, const struct cols *cs, tinyc_gstmt *body, tinyc_gexpr **colv);

/* Shared mode: copy the row's inputs (buffers of shape [O..., C]) into shared arrays, each
 * thread the columns it owns in every later loop, so it reads back only what it wrote and
 * no barrier is needed; later loads of them at this row are shared-memory loads. */
static int stage_inputs(rfb *b, const tinyc_schedule *s, const tinyc_skernel *sk,
			const struct cols *cs, const tinyc_dim *o, const tinyc_dim *c)
{
	tinyc_gkernel *k = b->k;
	tinyc_emit *em = b->em;
	tinyc_gstmt *lb = tinyc_gs_block(k);
	tinyc_gexpr *col;
	tinyc_gstmt *loop = row_loop(b, cs, lb, &col);
	if (!loop)
		return -1;
	tinyc_gs_append(k, k->body, tinyc_gs_comment(k, "the row's inputs into shared memory"));
	tinyc_emit_scope_enter(em);
	for (int j = 0; j < sk->nin && b->nstage < 8; j++) {
		const tinyc_sbuf *sb = &s->bufs[sk->in_bufs[j]];
		int same = sb->rank == b->ro && !sb->has_strides;
		for (int d = 0; d < b->ro && same; d++) {
			const tinyc_dim *want = d < b->ro - 1 ? &o[d] : c;
			int64_t v = tinyc_sched_dim(s, want);
			same = (want->sym >= 0 && want->sym == sb->shape[d].sym) ||
			       (v >= 0 && v == tinyc_sched_dim(s, &sb->shape[d]));
		}
		if (!same)
			continue;
		tinyc_gexpr *idx[TINYC_MAX_RANK];
		for (int d = 0; d < b->ro - 1; d++)
			idx[d] = b->ridx[d];
		idx[b->ro - 1] = col;
		tinyc_gexpr *v = tinyc_emit_value(em, lb, sb->node, idx, cs->rowok);
		char name[64];
		snprintf(name, sizeof(name), "row_%s", sb->name);
		int var = v ? tinyc_gk_shared(k, name, v->dtype, cs->Cknown, 16, 1) : -1;
		if (var < 0 || tinyc_gs_append(k, lb, tinyc_gs_store(k, var, col, v, NULL)) < 0) {
			tinyc_emit_scope_leave(em);
			return -1;
		}
		b->stage_node[b->nstage] = sb->node;
		b->stage_var[b->nstage++] = var;
	}
	tinyc_emit_scope_leave(em);
	b->staged = 1;
	return tinyc_gs_append(k, k->body, loop);
}

static tinyc_gstmt *row_loop(rfb *b, const struct cols *cs, tinyc_gstmt *body, tinyc_gexpr **colv)
{
	tinyc_gkernel *k = b->k;
	int v = tinyc_gk_reg(k, "col", k->index_dtype);
	if (v < 0)
		return NULL;
	tinyc_emit_set_nonneg(b->em, v);
	*colv = tinyc_gx_var(k, v);
	return tinyc_gs_for_range(k, v, cs->lane, cs->C, tinyc_gx_int(k, k->index_dtype, cs->TX), 4,
				  body);
}

/* Open a loop over the row's columns for one phase: *lb its body, *colv its column (what
 * row_leaf's shared loads match), the emitter's scope entered.  The loop, or NULL. */
static tinyc_gstmt *col_loop_open(rfb *b, const struct cols *cs, tinyc_gstmt **lb, tinyc_gexpr **colv)
{
	*lb = tinyc_gs_block(b->k);
	*colv = NULL;
	tinyc_gstmt *loop = row_loop(b, cs, *lb, colv);
	tinyc_emit_scope_enter(b->em);
	b->curcol = *colv;
	return loop;
}

/* Close the loop col_loop_open opened and append it to body unless its phase failed
 * (e < 0).  0 or -1. */
static int col_loop_close(rfb *b, tinyc_gstmt *body, tinyc_gstmt *loop, int e)
{
	b->curcol = NULL;
	tinyc_emit_scope_leave(b->em);
	if (e < 0)
		return -1;
	return tinyc_gs_append(b->k, body, loop);
}

int tinyc_rowfuse_build(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_schedule *s,
			const tinyc_indexbook *ib, int kernel)
{
	const tinyc_skernel *sk = &s->kerns[kernel];
	const tinyc_plan *p = tinyc_skernel_plan(sk);
	const tinyc_graph *g = s->g;
	if (!p || p->kind != TINYC_PLAN_ROWFUSE)
		return tinyc_error(ctx, "CodegenError", "kernel %s: not a ROWFUSE plan", sk->name);
	int TX = p->block[0], RY = p->block[1];
	if (TX % 32 || (TX > 32 && RY != 1))
		return tinyc_error(ctx, "CodegenError", "kernel %s: ROWFUSE block (%d, %d)", sk->name,
				   TX, RY);
	rfb b = {0};
	int reds[sk->nred + 1];
	b.nf = tinyc_rowfuse_kernel_reds(s, sk, reds);
	b.reds = reds;
	tinyc_dim o[TINYC_MAX_RANK], cdim;
	if (!b.nf || !tinyc_rowfuse_row_space(s, reds[0], &b.ro, o, &cdim, &b.axis))
		return tinyc_error(ctx, "CodegenError", "kernel %s: no row reductions", sk->name);
	tinyc_gexpr *results[sk->nred + 1];
	memset(results, 0, sizeof(results));
	b.result = results;
	tinyc_gkernel *k = tinyc_gk_alloc(gm, sk->name);
	if (!k)
		return -1;
	b.k = k;
	k->index_dtype = p->index_dtype;
	k->block[0] = TX, k->block[1] = RY, k->block[2] = 1;
	char text[256];
	snprintf(text, sizeof(text), "%s: %%%s -> %s (%s)", sk->name, g->nodes[sk->value].id,
		 s->bufs[sk->out_buf].name, p->desc);
	k->comment = tinyc_gpu_strdup(gm, text);
	tinyc_emit *em = b.em = tinyc_emit_alloc(ctx, k, s, ib, kernel);
	if (!em)
		return -1;
	tinyc_dtype it = k->index_dtype;
	tinyc_gstmt *body = k->body;
	int rc = -1, var;
	/* the row, and its index over the outer dims */
	tinyc_gexpr *rows = tinyc_gx_int(k, it, 1), *grows = tinyc_gx_int(k, TINYC_LONG, 1);
	for (int d = 0; d < b.ro - 1; d++) {
		rows = tinyc_gx_binary(k, TINYC_GX_MUL, rows, tinyc_emit_dim(em, &o[d]));
		grows = tinyc_gx_binary(k, TINYC_GX_MUL, grows, tinyc_emit_dim_sym(em, &o[d]));
	}
	tinyc_gexpr *row = tinyc_gx_cast(k, it, tinyc_gx_special(k, TINYC_GSP_BID_X));
	if (RY > 1)
		row = tinyc_gx_binary(k, TINYC_GX_ADD,
				      tinyc_gx_binary(k, TINYC_GX_MUL, row, tinyc_gx_int(k, it, RY)),
				      tinyc_gx_cast(k, it, tinyc_gx_special(k, TINYC_GSP_TID_Y)));
	row = bind_reg(k, body, "row", row, &var);
	if (!row)
		goto done;
	tinyc_emit_set_nonneg(em, var);
	cols cs = {0};
	cs.rowok = RY > 1 ? tinyc_gx_binary(k, TINYC_GX_LT, row, rows) : NULL;
	tinyc_gexpr *rem = row;
	for (int d = b.ro - 2; d >= 0; d--) {
		char name[16];
		snprintf(name, sizeof(name), "i%d", d);
		tinyc_gexpr *e = d == 0 ? rem : tinyc_gx_binary(k, TINYC_GX_MOD, rem, tinyc_emit_dim(em, &o[d]));
		if (!(b.ridx[d] = bind_reg(k, body, name, e, &var)))
			goto done;
		tinyc_emit_set_nonneg(em, var);
		if (d > 0)
			rem = tinyc_gx_binary(k, TINYC_GX_DIV, rem, tinyc_emit_dim(em, &o[d]));
	}
	if (!(cs.lane = bind_reg(k, body, "lane", tinyc_gx_cast(k, it, tinyc_gx_special(k, TINYC_GSP_TID_X)), &var)))
		goto done;
	tinyc_emit_set_nonneg(em, var);
	cs.C = tinyc_emit_dim(em, &cdim);
	cs.Cknown = tinyc_sched_dim(s, &cdim);
	cs.TX = TX;
	cs.slots = cs.Cknown > 0 ? (int)p->tile[0] : 0;
	tinyc_gexpr *colv[64], *colokv[64], *predv[64];
	if (cs.slots > 64)
		cs.slots = 0;
	cs.col = colv, cs.colok = colokv, cs.pred = predv;
	for (int j = 0; j < cs.slots; j++) {
		colv[j] = tinyc_gx_binary(k, TINYC_GX_ADD, cs.lane, tinyc_gx_int(k, it, (int64_t)j * TX));
		colokv[j] = (int64_t)(j + 1) * TX <= cs.Cknown ? NULL
			    : tinyc_gx_binary(k, TINYC_GX_LT, colv[j], cs.C);
		predv[j] = !colokv[j] ? cs.rowok : !cs.rowok ? colokv[j]
			   : tinyc_gx_binary(k, TINYC_GX_LAND, cs.rowok, colokv[j]);
	}
	em->leaf = row_leaf;
	em->leaf_user = &b;
	if (!cs.slots && p->tile[1] > 1 && stage_inputs(&b, s, sk, &cs, o, &cdim) < 0)
		goto done;
	/* one phase per fused reduction */
	for (int i = 0; i < b.nf; i++) {
		const tinyc_uop *r = &g->nodes[reds[i]];
		const tinyc_ibval *rv = &ib->val[reds[i]];
		tinyc_dtype acc_dt = rv->acc != TINYC_DTYPE_NONE ? rv->acc : r->dtype;
		tinyc_dtype acd = tinyc_emit_compute_dtype(acc_dt);
		char name[64];
		snprintf(text, sizeof(text), "row reduction %%%s (%s)", r->id, tinyc_redop_name(r->redop));
		tinyc_gs_append(k, body, tinyc_gs_comment(k, text));
		snprintf(name, sizeof(name), "acc%s", r->id);
		int acc = tinyc_gk_reg(k, name, acd);
		if (acc < 0 || tinyc_gs_append(k, body, tinyc_gs_decl(k, acc, tinyc_emit_red_identity(em, r->redop, acd))) < 0)
			goto done;
		if (cs.slots) {
			for (int j = 0; j < cs.slots; j++)
				if (reduce_at(&b, body, i, acc, colv[j], colokv[j], predv[j]) < 0)
					goto done;
		} else {
			tinyc_gstmt *lb;
			tinyc_gexpr *col;
			tinyc_gstmt *loop = col_loop_open(&b, &cs, &lb, &col);
			int e = reduce_at(&b, lb, i, acc, col, NULL, cs.rowok);
			if (col_loop_close(&b, body, loop, e) < 0)
				goto done;
		}
		snprintf(name, sizeof(name), "partial%s", r->id);
		if (row_reduce(em, body, r->redop, acc, TX, name) < 0)
			goto done;
		snprintf(name, sizeof(name), "row%s", r->id);
		if (!(results[i] = bind_reg(k, body, name, from_acc(em, tinyc_gx_var(k, acc), acc_dt, r->dtype), NULL)))
			goto done;
	}
	/* the output: a row, or one value per row */
	tinyc_gs_append(k, body, tinyc_gs_comment(k, "output"));
	const tinyc_uop *v = &g->nodes[sk->value];
	if (v->rank < b.ro || tinyc_sched_dim(s, &v->shape[b.ro - 1]) == 1) {
		tinyc_gexpr *idx[TINYC_MAX_RANK];
		for (int d = 0; d < b.ro - 1; d++)
			idx[d] = b.ridx[d];
		idx[b.ro - 1] = tinyc_gx_int(k, it, 0);
		tinyc_gexpr *first = tinyc_gx_binary(k, TINYC_GX_EQ, cs.lane, tinyc_gx_int(k, it, 0));
		tinyc_gexpr *pred = cs.rowok ? tinyc_gx_binary(k, TINYC_GX_LAND, cs.rowok, first) : first;
		tinyc_gstmt *one = tinyc_gs_block(k);
		tinyc_emit_scope_enter(em);
		tinyc_gexpr *val = tinyc_emit_value(em, one, sk->value, idx, pred);
		tinyc_gstmt *st = tinyc_emit_store(em, sk->out_buf, idx, val, NULL);
		tinyc_emit_scope_leave(em);
		if (!st || tinyc_gs_append(k, one, st) < 0 ||
		    tinyc_gs_append(k, body, tinyc_gs_if(k, pred, one, NULL)) < 0)
			goto done;
	} else if (cs.slots) {
		for (int j = 0; j < cs.slots; j++)
			if (store_at(&b, sk, body, colv[j], predv[j]) < 0)
				goto done;
	} else {
		tinyc_gstmt *lb;
		tinyc_gexpr *col;
		tinyc_gstmt *loop = col_loop_open(&b, &cs, &lb, &col);
		int e = store_at(&b, sk, lb, col, cs.rowok);
		if (col_loop_close(&b, body, loop, e) < 0)
			goto done;
	}
	if (em->error)
		goto done;
	k->grid[0] = tinyc_gx_ceildiv(k, grows, tinyc_gx_int(k, TINYC_LONG, RY));
	k->grid[1] = tinyc_gx_int(k, TINYC_LONG, 1);
	k->grid[2] = tinyc_gx_int(k, TINYC_LONG, 1);
	tinyc_gk_sort_params(k);
	rc = 0;
done:
	if (rc < 0 && !em->error)
		tinyc_error(ctx, "CodegenError", "kernel %s: building the row kernel failed", sk->name);
	tinyc_emit_free(em);
	return rc;
}
