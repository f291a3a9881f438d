/* Poly-View -> Poly-Core (seed 002 §4): parallel / reduce / tail axes, isl dependences,
 * buffer estimates and barrier hints, before any schedule is chosen.
 *
 * Dump format (--dump-stage=polycore), deterministic, isl objects printed by isl:
 *
 *   # polycore: 8 statements, 1 contraction, 7 flow dependences
 *   S6 = MUL : [m:M, n:N, k:K]  contraction 0             statement, its axes
 *     parallel: [m, n, k]  reduce: []  serial: []          classes of the axes
 *     roles: m=[m] n=[n] k=[k] batch=[]                    contraction members only
 *     tail: [m:M%64, n:N%64, k:K%16]                       axes needing tile guards, with
 *                                                          the extent and the tile quantum
 *     halo: 1 read with a non-unit access                  only when some read has one
 *     acc: float, 4 B/element; smem 128 B/block; barriers: __syncthreads() per tree level
 *                                                          reduces outside contractions
 *   dependences:
 *     flow S6 -> S7: [M, K, N] -> { S6[m, n, k] -> S7[m, n, k] : ... }
 *     anti: none  output: none  (SSA)
 *   contraction 0: S8 sums S6 over [k]
 *     tile [64,64,32] x 2 stages: smem 2*(64*32*2 + 32*64*2) = 16384 B (limit 49152: fits)
 *     reg: acc float 64*64*4 = 16384 B per block
 *     barriers: sync: __syncthreads() after each k-tile's loads and before they are
 *       overwritten; async: cp.async groups, wait_group(stages-2) + __syncthreads()
 *
 * The analysis:
 *   classes  a statement's write relation W, composed with its inverse, relates the points
 *            that write the same element; its deltas say along which axes that happens.  An
 *            axis with a non-zero delta is carried: reduce for a REDUCE, serial otherwise;
 *            every other axis is parallel.  (Reads never conflict: arrays are SSA.)
 *   deps     isl dataflow analysis, array by array (the accesses grouped by the array they
 *            name), over the sequential schedule (statement order, then its axes).  An array
 *            written by one statement w and read by later statements r (the SSA case) needs
 *            no global analysis: the value r reads at instance y, element R(y), is the one
 *            the last instance of w writing that element stored, L(R(y)) with
 *            L = lexmax(W^-1) (W restricted to w's domain), so the flow dependence is
 *            { L(R(y)) -> y }: one lexmax per writer and one composition per edge, linear in
 *            the graph.  An array with several writers, or read by its own writer, goes to
 *            isl_union_access_info_compute_flow on its accesses alone (reads as sinks, writes
 *            as must sources).  Anti (a read, then another statement's write of an element
 *            it reads) and output (two statements writing one element) dependences are
 *            tested per array and counted by statement pair; they must be none.  Every isl
 *            step gets the operation budget afresh; a dependence is simplified for printing
 *            on a budget of its own and kept exact but unsimplified when that runs out.
 *   tail     the tile quantum of an axis is 64 for contraction m/n axes, 16 for k (the
 *            smallest BM/BN and BK the schedule considers), 1 for batch; 32 (a warp) for the
 *            reduce axes of other reduces and for a statement's innermost parallel axis; 1
 *            otherwise.  An axis is a tail axis when its quantum is above 1 and its extent
 *            is unknown at compile time or not a multiple of the quantum.
 *   buffers  a contraction's reference tile is the seed's MVP [64,64,32], 2 stages (1 where
 *            an m or n role is absent, as in 1-D x 2-D): smem = stages*(BM*BK*sizeof(lhs) +
 *            BK*BN*sizeof(rhs)), register accumulators BM*BN*sizeof(acc) per block.  Other
 *            reduces keep one accumulator per output element and 32 partials per block.
 *   halo     a read whose index along some array dim is not a single axis (coefficient +-1)
 *            or a constant, or uses floor division, has a halo; direct reads (gemm) have 0.
 */
#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/flow.h>
#include <isl/map.h>
#include <isl/options.h>
#include <isl/point.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/val.h>

#include "poly/poly.h"

#define PC_BM 64		/* reference contraction tile */
#define PC_BN 64
#define PC_BK 32
#define PC_STAGES 2
#define PC_SMEM_LIMIT 49152	/* static shared memory per block */
#define PC_WARP 32
#define PC_SIMPLIFY_OPERATIONS 1000000UL	/* isl budget of the optional simplification of a
						 * dependence for printing */

/* Builder state. */
typedef struct pcb {
	tinyc_ctx *ctx;
	const tinyc_polyview *pv;
	const tinyc_graph *g;
	tinyc_polycore *pc;
} pcb;

/* Report the isl error at statement i's source line.  Returns -1. */
static int isl_err(pcb *b, int i, const char *what)
{
	tinyc_loc loc = {0, 0};
	if (i >= 0)
		loc = b->g->nodes[b->pv->stmt[i].node].loc;
	return tinyc_isl_report(b->ctx, b->pv->ictx, b->g->src, loc, what);
}

/* Every isl step of the analysis gets the whole operation budget afresh. */
static void grant(pcb *b)
{
	isl_ctx_reset_operations(b->pv->ictx);
}

/* The value of d under the IndexBook's compile-time bindings, or -1. */
static int64_t dim_known(const tinyc_polyview *pv, tinyc_dim d)
{
	if (d.sym < 0)
		return d.val;
	const tinyc_bindings *b = pv->ib->bind;
	return b && d.sym < b->n ? b->val[d.sym] : -1;
}

/* ---- per statement ------------------------------------------------------------------------ */

/* Classify statement i's axes from its self-conflicts (see the top of the file). */
static int classify(pcb *b, int i)
{
	const tinyc_pv_stmt *s = &b->pv->stmt[i];
	tinyc_pc_stmt *ps = &b->pc->stmt[i];
	int is_reduce = b->g->nodes[s->node].op == TINYC_OP_REDUCE;
	isl_map *w = isl_map_intersect_domain(isl_map_from_pw_multi_aff(
						      isl_pw_multi_aff_copy(s->write)),
					      isl_set_copy(s->domain));
	isl_map *wr = isl_map_reverse(isl_map_copy(w));
	isl_map *same = isl_map_apply_range(w, wr);
	isl_set *delta = isl_map_deltas(same);
	if (!delta)
		return isl_err(b, i, "computing the write conflicts");
	for (int d = 0; d < ps->naxes; d++) {
		isl_set *pos = isl_set_lower_bound_si(isl_set_copy(delta), isl_dim_set, (unsigned)d, 1);
		isl_bool empty = isl_set_is_empty(pos);
		isl_set_free(pos);
		if (empty < 0) {
			isl_set_free(delta);
			return isl_err(b, i, "classifying axes");
		}
		ps->axes[d].cls = empty ? TINYC_PC_PARALLEL
					: is_reduce ? TINYC_PC_REDUCE : TINYC_PC_SERIAL;
	}
	isl_set_free(delta);
	return 0;
}

/* isl_pw_multi_aff_foreach_piece callback: count non-direct index expressions. */
static isl_stat piece_direct(isl_set *set, isl_multi_aff *ma, void *user)
{
	int *nondirect = user;
	isl_size n = isl_multi_aff_size(ma);
	for (int i = 0; i < n; i++) {
		isl_aff *aff = isl_multi_aff_get_aff(ma, i);
		isl_size nin = isl_aff_dim(aff, isl_dim_in);
		int nz = 0, bad = isl_aff_dim(aff, isl_dim_div) > 0;
		for (int j = 0; j < nin && !bad; j++) {
			isl_val *v = isl_aff_get_coefficient_val(aff, isl_dim_in, j);
			if (!isl_val_is_zero(v)) {
				nz++;
				bad = !isl_val_is_one(v) && !isl_val_is_negone(v);
			}
			isl_val_free(v);
		}
		*nondirect |= bad || nz > 1;
		isl_aff_free(aff);
	}
	isl_set_free(set);
	isl_multi_aff_free(ma);
	return isl_stat_ok;
}

/* Mark the statements of each contraction: its REDUCE, its MUL and the CASTs between. */
static void mark_contractions(pcb *b)
{
	const tinyc_polyview *pv = b->pv;
	for (int c = 0; c < pv->ncontr; c++) {
		const tinyc_contraction *ct = &pv->contr[c];
		b->pc->stmt[ct->reduce_stmt].contraction = c;
		b->pc->stmt[ct->mul_stmt].contraction = c;
		int mul = pv->stmt[ct->mul_stmt].node;
		int n = b->g->nodes[pv->stmt[ct->reduce_stmt].node].src[0];
		while (n >= 0 && n != mul && b->g->nodes[n].op == TINYC_OP_CAST) {
			if (pv->stmt_of[n] >= 0)
				b->pc->stmt[pv->stmt_of[n]].contraction = c;
			n = b->g->nodes[n].src[0];
		}
	}
}

/* Axes, classes, roles, tails, halos and reduce buffers of statement i. */
static int build_stmt(pcb *b, int i)
{
	const tinyc_polyview *pv = b->pv;
	const tinyc_pv_stmt *s = &pv->stmt[i];
	tinyc_pc_stmt *ps = &b->pc->stmt[i];
	const tinyc_ibval *v = &pv->ib->val[s->node];
	isl_size nd = isl_set_dim(s->domain, isl_dim_set);
	if (nd < 0)
		return isl_err(b, i, "reading a domain");
	grant(b);
	ps->stmt = i;
	ps->node = s->node;
	ps->naxes = nd;
	ps->axes = tinyc_calloc(b->ctx, (size_t)(nd ? nd : 1), sizeof(tinyc_pc_axis));
	if (!ps->axes)
		return -1;
	for (int d = 0; d < nd; d++) {
		ps->axes[d].name = d < v->naxes ? v->axes[d].name : "?";
		ps->axes[d].size = d < v->naxes ? v->axes[d].size : (tinyc_dim){1, -1};
	}
	if (classify(b, i) < 0)
		return -1;
	const tinyc_contraction *ct = ps->contraction >= 0 ? &pv->contr[ps->contraction] : NULL;
	int inner = -1;
	for (int d = 0; d < nd; d++)
		if (ps->axes[d].cls == TINYC_PC_PARALLEL)
			inner = d;
	for (int d = 0; d < nd; d++) {
		tinyc_pc_axis *a = &ps->axes[d];
		a->role = ct && ct->naxes == nd ? ct->role[d] : TINYC_ROLE_NONE;
		if (ct)
			a->quantum = a->role == TINYC_ROLE_M || a->role == TINYC_ROLE_N ? PC_BM
				     : a->role == TINYC_ROLE_K ? 16 : 1;
		else
			a->quantum = a->cls == TINYC_PC_REDUCE || d == inner ? PC_WARP : 1;
		int64_t e = dim_known(pv, a->size);
		a->tail = a->quantum > 1 && (e < 0 || e % a->quantum != 0);
	}
	for (int k = 0; k < s->nread; k++) {
		int nondirect = 0;
		if (!s->read[k].acc)
			continue;
		if (isl_pw_multi_aff_foreach_piece(s->read[k].acc, piece_direct, &nondirect) < 0)
			return isl_err(b, i, "inspecting a read");
		ps->nonunit_reads += nondirect;
	}
	if (b->g->nodes[s->node].op == TINYC_OP_REDUCE) {
		int sz = v->acc >= 0 ? tinyc_dtype_size(v->acc) : 0;
		ps->reg_bytes = sz;
		ps->smem_bytes = ct ? 0 : (int64_t)PC_WARP * sz;
	}
	return 0;
}

/* ---- dependences --------------------------------------------------------------------------- */

/* One access of a statement, for grouping the accesses by the array they name. */
typedef struct pc_access {
	const char *array;	/* the array's tuple name (kept: the access relation's) */
	int rank;		/* the array's dims */
	int stmt;		/* the statement */
	int read;		/* its read index, or -1 for its write */
} pc_access;

/* Dependence state: the accesses by array, the last-writer maps, anti/output pairs. */
typedef struct pc_deps {
	pc_access *acc;			/* every write and read, sorted by (array, stmt, read) */
	int nacc;			/* entries in acc */
	isl_pw_multi_aff **last;	/* per statement: element -> its last instance writing it
					 * (built on first use) */
	int *pairs;			/* anti (kind 0) and output (kind 1) pairs: kind, x, y */
	int npairs;			/* triples in pairs */
} pc_deps;

/* qsort order of accesses: by array (name, rank), then statement, write first. */
static int cmp_access(const void *x, const void *y)
{
	const pc_access *a = x, *b = y;
	int c = strcmp(a->array, b->array);
	if (c)
		return c;
	if (a->rank != b->rank)
		return a->rank - b->rank;
	return a->stmt != b->stmt ? a->stmt - b->stmt : a->read - b->read;
}

/* qsort order of dependences: by (src, dst). */
static int cmp_dep(const void *x, const void *y)
{
	const tinyc_pc_dep *a = x, *b = y;
	return a->src != b->src ? a->src - b->src : a->dst - b->dst;
}

/* The access relation of an access, restricted to its statement's domain. */
static isl_map *access_map(const tinyc_polyview *pv, const pc_access *a)
{
	const tinyc_pv_stmt *s = &pv->stmt[a->stmt];
	isl_pw_multi_aff *acc = a->read < 0 ? s->write : s->read[a->read].acc;
	return isl_map_intersect_domain(isl_map_from_pw_multi_aff(isl_pw_multi_aff_copy(acc)),
					isl_set_copy(s->domain));
}

/* The sequential schedule of statement i: S_i[x] -> [i, x, 0...] padded to maxr axes. */
static isl_map *stmt_schedule(const tinyc_polyview *pv, int i, int maxr)
{
	int r = isl_set_dim(pv->stmt[i].domain, isl_dim_set);
	isl_map *m = isl_set_identity(isl_set_copy(pv->stmt[i].domain));
	m = isl_map_reset_tuple_id(m, isl_dim_out);
	m = isl_map_insert_dims(m, isl_dim_out, 0, 1);
	m = isl_map_fix_si(m, isl_dim_out, 0, i);
	m = isl_map_add_dims(m, isl_dim_out, (unsigned)(maxr - r));
	for (int j = 0; j < maxr - r; j++)
		m = isl_map_fix_si(m, isl_dim_out, (unsigned)(1 + r + j), 0);
	return m;
}

/* The statement whose tuple name is that of space's `type` tuple, or -1. */
static int stmt_by_name(const tinyc_polyview *pv, isl_map *m, enum isl_dim_type type)
{
	const char *name = isl_map_get_tuple_name(m, type);
	for (int i = 0; name && i < pv->nstmt; i++)
		if (!strcmp(pv->stmt[i].name, name))
			return i;
	return -1;
}

/* Append the flow dependence src -> dst (rel taken). */
static int add_flow(pcb *b, int src, int dst, isl_map *rel)
{
	tinyc_polycore *pc = b->pc;
	tinyc_pc_dep *nd = realloc(pc->dep, sizeof(*nd) * (size_t)(pc->ndep + 1));
	if (!nd) {
		isl_map_free(rel);
		return tinyc_error(b->ctx, "OutOfMemory", "out of memory");
	}
	pc->dep = nd;
	nd[pc->ndep++] = (tinyc_pc_dep){src, dst, rel};
	return 0;
}

/* isl_union_map_foreach_map callback: collect one flow dependence of compute_flow. */
static isl_stat add_flow_map(isl_map *m, void *user)
{
	pcb *b = user;
	int src = stmt_by_name(b->pv, m, isl_dim_in), dst = stmt_by_name(b->pv, m, isl_dim_out);
	if (src < 0 || dst < 0) {
		isl_map_free(m);
		return isl_stat_error;
	}
	m = isl_map_coalesce(m);
	if (!m)
		return isl_stat_error;
	return add_flow(b, src, dst, m) < 0 ? isl_stat_error : isl_stat_ok;
}

/* Note an anti (kind 0) or output (kind 1) dependence from statement x to statement y, once
 * per pair. */
static int add_pair(pcb *b, pc_deps *d, int kind, int x, int y)
{
	for (int k = 0; k < d->npairs; k++)
		if (d->pairs[3 * k] == kind && d->pairs[3 * k + 1] == x && d->pairs[3 * k + 2] == y)
			return 0;
	int *np = realloc(d->pairs, sizeof(int) * 3 * (size_t)(d->npairs + 1));
	if (!np)
		return tinyc_error(b->ctx, "OutOfMemory", "out of memory");
	d->pairs = np;
	np[3 * d->npairs] = kind;
	np[3 * d->npairs + 1] = x;
	np[3 * d->npairs + 2] = y;
	d->npairs++;
	if (kind)
		b->pc->noutput++;
	else
		b->pc->nanti++;
	return 0;
}

/* Do accesses a and c of one array touch a common element?  1, 0, or -1 on isl errors. */
static int overlap(pcb *b, const pc_access *a, const pc_access *c)
{
	grant(b);
	isl_set *ra = isl_map_range(access_map(b->pv, a));
	isl_set *both = isl_set_intersect(ra, isl_map_range(access_map(b->pv, c)));
	isl_bool empty = isl_set_is_empty(both);
	isl_set_free(both);
	return empty < 0 ? -1 : !empty;
}

/* Anti and output dependences among the accesses acc[0..n) of one array: a read followed by
 * another statement's write of an element it reads, two statements writing one element. */
static int anti_output(pcb *b, pc_deps *d, const pc_access *acc, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			const pc_access *x = &acc[i], *y = &acc[j];
			if (y->read >= 0 || x->stmt == y->stmt)
				continue;	/* y must be another statement's write */
			int output = x->read < 0;
			if (!output && y->stmt < x->stmt)
				continue;	/* a write before the read: flow, not anti */
			int o = overlap(b, x, y);
			if (o < 0)
				return isl_err(b, x->stmt, "checking for anti and output dependences");
			if (o && add_pair(b, d, output, x->stmt, y->stmt) < 0)
				return -1;
		}
	return 0;
}

/* The map simplified for printing (coalesced, redundant constraints removed) on a budget of
 * its own, PC_SIMPLIFY_OPERATIONS: the dependences of long reshape chains carry many
 * divisions, and simplifying them is optional; when the budget runs out the exact relation
 * is kept as it is.  Takes map; NULL only when map is NULL. */
static isl_map *simplify(pcb *b, isl_map *map)
{
	isl_ctx *ictx = b->pv->ictx;
	unsigned long max = isl_ctx_get_max_operations(ictx);
	int on_error = isl_options_get_on_error(ictx);
	isl_ctx_reset_operations(ictx);
	isl_ctx_set_max_operations(ictx, max && max < PC_SIMPLIFY_OPERATIONS
					      ? max : PC_SIMPLIFY_OPERATIONS);
	isl_options_set_on_error(ictx, ISL_ON_ERROR_CONTINUE);
	isl_map *simple = isl_map_remove_redundancies(isl_map_coalesce(isl_map_copy(map)));
	if (!simple && map)
		isl_ctx_reset_error(ictx);
	isl_options_set_on_error(ictx, on_error);
	isl_ctx_set_max_operations(ictx, max);
	isl_ctx_reset_operations(ictx);
	if (!simple)
		return map;
	isl_map_free(map);
	return simple;
}

/* isl_map_foreach_basic_map callback: does some basic map have divisions? */
static isl_stat has_div(isl_basic_map *bmap, void *user)
{
	*(int *)user |= isl_basic_map_dim(bmap, isl_dim_div) > 0;
	isl_basic_map_free(bmap);
	return isl_stat_ok;
}

/* Is dep (writer -> reader) empty?  When its pieces have divisions (reshape chains), one
 * sample point of the reader's domain that reads a written element shows that it is not,
 * at a fraction of the cost of a full emptiness test; otherwise isl decides on the whole. */
static isl_bool dep_is_empty(isl_map *dep, isl_set *rdom)
{
	int divs = 0;
	if (isl_map_foreach_basic_map(dep, has_div, &divs) < 0)
		return isl_bool_error;
	if (divs) {
		isl_point *pt = isl_set_sample_point(isl_set_copy(rdom));
		isl_map *at = isl_map_intersect_range(isl_map_copy(dep), isl_set_from_point(pt));
		isl_bool empty = isl_map_is_empty(at);
		isl_map_free(at);
		if (empty != isl_bool_true)
			return empty;
	}
	return isl_map_is_empty(dep);
}

/* The flow dependence of statement r on statement w, the only writer of the array that r's
 * accesses acc[0..n) read (w before r in the sequential schedule).  Every element r reads at
 * instance y, R(y), holds the value of the last instance of w writing it, L(R(y)), where
 * L = lexmax((W restricted to w's domain)^-1): w's instances run in lexicographic order, all
 * before r's.  So the dependence is { L(R(y)) -> y : y in r's domain }: the result of isl's
 * dataflow analysis on this pair, computed as one composition per read. */
static int flow_single(pcb *b, pc_deps *d, int w, int r, const pc_access *acc, int n)
{
	const tinyc_polyview *pv = b->pv;
	const tinyc_pv_stmt *s = &pv->stmt[r];
	grant(b);
	if (!d->last[w]) {
		pc_access wa = {NULL, 0, w, -1};
		d->last[w] = isl_map_lexmax_pw_multi_aff(isl_map_reverse(access_map(pv, &wa)));
		if (!d->last[w])
			return isl_err(b, w, "computing the last writer of each element");
		grant(b);
	}
	isl_map *dep = NULL;
	for (int k = 0; k < n; k++) {
		if (acc[k].stmt != r || acc[k].read < 0)
			continue;
		isl_pw_multi_aff *src = isl_pw_multi_aff_pullback_pw_multi_aff(
			isl_pw_multi_aff_copy(d->last[w]),
			isl_pw_multi_aff_copy(s->read[acc[k].read].acc));
		isl_map *m = isl_map_intersect_domain(isl_map_from_pw_multi_aff(src),
						      isl_set_copy(s->domain));
		dep = dep ? isl_map_union(dep, m) : m;
	}
	dep = simplify(b, isl_map_reverse(dep));
	isl_bool empty = dep_is_empty(dep, s->domain);
	if (empty < 0) {
		isl_map_free(dep);
		return isl_err(b, r, "computing flow dependences");
	}
	if (empty) {
		isl_map_free(dep);
		return 0;
	}
	return add_flow(b, w, r, dep);
}

/* Flow dependences of one array with several writers (or a statement reading what it
 * writes): isl_union_access_info_compute_flow on the accesses acc[0..n), the reads as sinks,
 * the writes as must sources, the sequential schedule of the statements involved. */
static int flow_group(pcb *b, const pc_access *acc, int n)
{
	const tinyc_polyview *pv = b->pv;
	isl_space *params = isl_set_get_space(pv->context);
	isl_union_map *sink = isl_union_map_empty(isl_space_copy(params));
	isl_union_map *source = isl_union_map_empty(isl_space_copy(params));
	isl_union_map *sched = isl_union_map_empty(params);
	int maxr = 0;
	grant(b);
	for (int k = 0; k < n; k++) {
		int r = isl_set_dim(pv->stmt[acc[k].stmt].domain, isl_dim_set);
		maxr = r > maxr ? r : maxr;
	}
	for (int k = 0; k < n; k++) {
		if (acc[k].read < 0)
			source = isl_union_map_add_map(source, access_map(pv, &acc[k]));
		else
			sink = isl_union_map_add_map(sink, access_map(pv, &acc[k]));
		if (k == 0 || acc[k].stmt != acc[k - 1].stmt)
			sched = isl_union_map_add_map(sched, stmt_schedule(pv, acc[k].stmt, maxr));
	}
	isl_union_access_info *ai = isl_union_access_info_from_sink(sink);
	ai = isl_union_access_info_set_must_source(ai, source);
	ai = isl_union_access_info_set_schedule_map(ai, sched);
	isl_union_flow *flow = isl_union_access_info_compute_flow(ai);
	isl_union_map *dep = isl_union_flow_get_must_dependence(flow);
	isl_union_flow_free(flow);
	int rc = dep && isl_union_map_foreach_map(dep, add_flow_map, b) >= 0 ? 0 : -1;
	isl_union_map_free(dep);
	return rc < 0 ? isl_err(b, acc[n - 1].stmt, "computing flow dependences") : 0;
}

/* The dependences of the accesses acc[0..n) of one array. */
static int array_deps(pcb *b, pc_deps *d, const pc_access *acc, int n)
{
	int nw = 0, w = -1, self = 0;
	for (int k = 0; k < n; k++)
		if (acc[k].read < 0) {
			nw++;
			w = acc[k].stmt;
		}
	if (!nw)
		return 0;	/* an input buffer: nothing flows into its reads */
	for (int k = 0; k < n; k++)
		self |= acc[k].read >= 0 && acc[k].stmt == w;
	if (anti_output(b, d, acc, n) < 0)
		return -1;
	if (nw > 1 || self)
		return flow_group(b, acc, n);
	for (int k = 0; k < n; k++)
		if (acc[k].read >= 0 && acc[k].stmt > w && (k == 0 || acc[k].stmt != acc[k - 1].stmt))
			if (flow_single(b, d, w, acc[k].stmt, acc, n) < 0)
				return -1;
	return 0;
}

/* Flow dependences (isl dataflow, array by array), and the anti/output counts. */
static int build_deps(pcb *b)
{
	const tinyc_polyview *pv = b->pv;
	pc_deps d = {0};
	int n = 0, rc = 0;
	for (int i = 0; i < pv->nstmt; i++)
		n += 1 + pv->stmt[i].nread;
	d.acc = tinyc_calloc(b->ctx, (size_t)(n ? n : 1), sizeof(pc_access));
	d.last = tinyc_calloc(b->ctx, (size_t)(pv->nstmt ? pv->nstmt : 1), sizeof(*d.last));
	if (!d.acc || !d.last)
		rc = -1;
	for (int i = 0; !rc && i < pv->nstmt; i++) {
		const tinyc_pv_stmt *s = &pv->stmt[i];
		for (int k = -1; k < s->nread; k++) {
			isl_pw_multi_aff *acc = k < 0 ? s->write : s->read[k].acc;
			if (!acc)
				continue;	/* an inlined CONST */
			const char *name = isl_pw_multi_aff_get_tuple_name(acc, isl_dim_out);
			isl_size rank = isl_pw_multi_aff_dim(acc, isl_dim_out);
			if (rank < 0) {
				rc = isl_err(b, i, "reading an access relation");
				break;
			}
			d.acc[d.nacc++] = (pc_access){name ? name : "", rank, i, k};
		}
	}
	if (!rc && d.nacc > 1)
		qsort(d.acc, (size_t)d.nacc, sizeof(pc_access), cmp_access);
	for (int g = 0, e; !rc && g < d.nacc; g = e) {
		for (e = g + 1; e < d.nacc && !strcmp(d.acc[e].array, d.acc[g].array) &&
				d.acc[e].rank == d.acc[g].rank; e++)
			;
		rc = array_deps(b, &d, &d.acc[g], e - g);
	}
	for (int i = 0; d.last && i < pv->nstmt; i++)
		isl_pw_multi_aff_free(d.last[i]);
	free(d.last);
	free(d.acc);
	free(d.pairs);
	if (!rc && b->pc->ndep > 1)
		qsort(b->pc->dep, (size_t)b->pc->ndep, sizeof(tinyc_pc_dep), cmp_dep);
	return rc;
}

/* ---- contractions -------------------------------------------------------------------------- */

/* The reference-tile estimates of contraction c. */
static void build_contr(pcb *b, int c)
{
	const tinyc_contraction *ct = &b->pv->contr[c];
	tinyc_pc_contr *e = &b->pc->contr[c];
	e->bm = ct->nm ? PC_BM : 1;
	e->bn = ct->nn ? PC_BN : 1;
	e->bk = ct->nk ? PC_BK : 1;
	e->stages = PC_STAGES;
	int sl = ct->lhs >= 0 ? tinyc_dtype_size(b->g->nodes[ct->lhs].dtype) : 0;
	int sr = ct->rhs >= 0 ? tinyc_dtype_size(b->g->nodes[ct->rhs].dtype) : 0;
	e->smem_bytes = (int64_t)e->stages * ((int64_t)e->bm * e->bk * sl + (int64_t)e->bk * e->bn * sr);
	e->reg_bytes = (int64_t)e->bm * e->bn * tinyc_dtype_size(ct->acc);
	e->smem_limit = PC_SMEM_LIMIT;
}

/* ---- build / free -------------------------------------------------------------------------- */

tinyc_polycore *tinyc_polycore_build(tinyc_ctx *ctx, const tinyc_polyview *pv)
{
	if (!pv) {
		tinyc_error(ctx, "InvalidArgument", "Poly-Core needs a Poly-View");
		return NULL;
	}
	tinyc_polycore *pc = tinyc_calloc(ctx, 1, sizeof(*pc));
	if (!pc)
		return NULL;
	pc->pv = pv;
	pc->nstmt = pv->nstmt;
	pc->ncontr = pv->ncontr;
	pc->stmt = tinyc_calloc(ctx, (size_t)(pv->nstmt ? pv->nstmt : 1), sizeof(tinyc_pc_stmt));
	pc->contr = tinyc_calloc(ctx, (size_t)(pv->ncontr ? pv->ncontr : 1), sizeof(tinyc_pc_contr));
	pcb b = {ctx, pv, pv->ib->g, pc};
	int rc = pc->stmt && pc->contr ? 0 : -1;
	for (int i = 0; !rc && i < pv->nstmt; i++)
		pc->stmt[i].contraction = -1;
	if (!rc)
		mark_contractions(&b);
	for (int i = 0; !rc && i < pv->nstmt; i++)
		rc = build_stmt(&b, i);
	if (!rc)
		rc = build_deps(&b);
	for (int c = 0; !rc && c < pv->ncontr; c++)
		build_contr(&b, c);
	if (rc < 0) {
		tinyc_polycore_free(pc);
		return NULL;
	}
	return pc;
}

void tinyc_polycore_free(tinyc_polycore *pc)
{
	if (!pc)
		return;
	for (int i = 0; pc->stmt && i < pc->nstmt; i++)
		free(pc->stmt[i].axes);
	for (int i = 0; i < pc->ndep; i++)
		isl_map_free(pc->dep[i].rel);
	free(pc->stmt);
	free(pc->dep);
	free(pc->contr);
	free(pc);
}

/* ---- verifier ------------------------------------------------------------------------------ */

int tinyc_polycore_verify(tinyc_ctx *ctx, const tinyc_polycore *pc)
{
	if (!pc)
		return tinyc_error(ctx, "InvalidArgument", "no Poly-Core analysis");
	const tinyc_polyview *pv = pc->pv;
	const tinyc_graph *g = pv->ib->g;
	int bad = 0;
	if (pc->nstmt != pv->nstmt || pc->ncontr != pv->ncontr)
		return tinyc_error(ctx, "PolyCoreMismatch", "the analysis is not the Poly-View's");
	for (int i = 0; i < pc->nstmt; i++) {
		const tinyc_pc_stmt *ps = &pc->stmt[i];
		const tinyc_ibval *v = &pv->ib->val[ps->node];
		const tinyc_uop *u = &g->nodes[ps->node];
		isl_size nd = isl_set_dim(pv->stmt[i].domain, isl_dim_set);
		if (ps->node != pv->stmt[i].node || nd != ps->naxes) {
			bad = tinyc_error_at(ctx, g->src, u->loc, "PolyCoreMismatch", "statement %s: "
					     "axes do not match its domain", pv->stmt[i].name);
			continue;
		}
		/* a REDUCE reduces exactly the IndexBook's reduce_axes; nothing else reduces */
		int nred = 0, ok = 1;
		for (int d = 0; d < ps->naxes; d++) {
			if (ps->axes[d].cls != TINYC_PC_REDUCE)
				continue;
			int in_book = 0;
			for (int k = 0; k < v->nreduce; k++)
				in_book |= v->reduce_axes[k] == d;
			ok &= in_book;
			nred++;
		}
		if (u->op == TINYC_OP_REDUCE)
			ok &= nred == v->nreduce;
		if (!ok)
			bad = tinyc_error_at(ctx, g->src, u->loc, "PolyCoreMismatch", "statement %s: "
					     "reduce axes from its dependences (%d) differ from the "
					     "IndexBook's reduce_axes (%d)", pv->stmt[i].name, nred,
					     v->nreduce);
	}
	for (int k = 0; k < pc->ndep; k++)
		if (pc->dep[k].src < 0 || pc->dep[k].src >= pc->nstmt || pc->dep[k].dst < 0 ||
		    pc->dep[k].dst >= pc->nstmt || pc->dep[k].src >= pc->dep[k].dst)
			bad = tinyc_error(ctx, "PolyCoreMismatch", "a flow dependence does not go "
					  "forward in statement order");
	if (pc->nanti || pc->noutput)
		bad = tinyc_error(ctx, "PolyCoreMismatch", "%d anti and %d output dependences "
				  "between statements: the graph is not single-assignment",
				  pc->nanti, pc->noutput);
	return bad;
}

/* ---- printer ------------------------------------------------------------------------------- */

/* The dump's name of an axis class. */
static const char *cls_name(tinyc_pc_class c)
{
	return c == TINYC_PC_PARALLEL ? "parallel" : c == TINYC_PC_REDUCE ? "reduce" : "serial";
}

/* A dim as text: its symbol or its value. */
static void put_dim(const tinyc_graph *g, tinyc_dim d, tinyc_buf *out)
{
	if (d.sym >= 0 && d.sym < g->nsym)
		tinyc_buf_puts(out, g->syms[d.sym]);
	else
		tinyc_buf_printf(out, "%lld", (long long)d.val);
}

/* "[m, n]": the axes of class c. */
static void put_class(const tinyc_pc_stmt *ps, tinyc_pc_class c, tinyc_buf *out)
{
	int first = 1;
	tinyc_buf_printf(out, "%s: [", cls_name(c));
	for (int d = 0; d < ps->naxes; d++)
		if (ps->axes[d].cls == c) {
			tinyc_buf_printf(out, "%s%s", first ? "" : ", ", ps->axes[d].name);
			first = 0;
		}
	tinyc_buf_putc(out, ']');
}

/* " label=[a,b]": the axes with role r. */
static void put_role(const tinyc_pc_stmt *ps, tinyc_role r, const char *label, tinyc_buf *out)
{
	int first = 1;
	tinyc_buf_printf(out, " %s=[", label);
	for (int d = 0; d < ps->naxes; d++)
		if (ps->axes[d].role == r) {
			tinyc_buf_printf(out, "%s%s", first ? "" : ",", ps->axes[d].name);
			first = 0;
		}
	tinyc_buf_putc(out, ']');
}

/* isl's text of a map ("(null)" for NULL). */
static void put_isl_map(tinyc_buf *out, isl_map *m)
{
	char *s = m ? isl_map_to_str(m) : NULL;
	tinyc_buf_puts(out, s ? s : "(null)");
	free(s);
}

/* The dump (format at the top of the file). */
void tinyc_polycore_print(const tinyc_polycore *pc, tinyc_buf *out)
{
	if (!pc) {
		tinyc_buf_puts(out, "# polycore: (none)\n");
		return;
	}
	const tinyc_polyview *pv = pc->pv;
	const tinyc_graph *g = pv->ib->g;
	tinyc_buf_printf(out, "# polycore: %d statement%s, %d contraction%s, %d flow dependence%s\n",
			 pc->nstmt, pc->nstmt == 1 ? "" : "s", pc->ncontr, pc->ncontr == 1 ? "" : "s",
			 pc->ndep, pc->ndep == 1 ? "" : "s");
	for (int i = 0; i < pc->nstmt; i++) {
		const tinyc_pc_stmt *ps = &pc->stmt[i];
		const tinyc_uop *u = &g->nodes[ps->node];
		tinyc_buf_printf(out, "%s = %s : [", pv->stmt[i].name, tinyc_op_info(u->op)->name);
		for (int d = 0; d < ps->naxes; d++) {
			tinyc_buf_printf(out, "%s%s:", d ? ", " : "", ps->axes[d].name);
			put_dim(g, ps->axes[d].size, out);
		}
		tinyc_buf_putc(out, ']');
		if (ps->contraction >= 0)
			tinyc_buf_printf(out, "  contraction %d", ps->contraction);
		tinyc_buf_puts(out, "\n  ");
		put_class(ps, TINYC_PC_PARALLEL, out);
		tinyc_buf_puts(out, "  ");
		put_class(ps, TINYC_PC_REDUCE, out);
		tinyc_buf_puts(out, "  ");
		put_class(ps, TINYC_PC_SERIAL, out);
		tinyc_buf_putc(out, '\n');
		if (ps->contraction >= 0 && pv->contr[ps->contraction].naxes == ps->naxes) {
			tinyc_buf_puts(out, "  roles:");
			put_role(ps, TINYC_ROLE_M, "m", out);
			put_role(ps, TINYC_ROLE_N, "n", out);
			put_role(ps, TINYC_ROLE_K, "k", out);
			put_role(ps, TINYC_ROLE_BATCH, "batch", out);
			tinyc_buf_putc(out, '\n');
		}
		tinyc_buf_puts(out, "  tail: [");
		for (int d = 0, first = 1; d < ps->naxes; d++) {
			if (!ps->axes[d].tail)
				continue;
			tinyc_buf_printf(out, "%s%s:", first ? "" : ", ", ps->axes[d].name);
			put_dim(g, ps->axes[d].size, out);
			tinyc_buf_printf(out, "%%%d", ps->axes[d].quantum);
			first = 0;
		}
		tinyc_buf_puts(out, "]\n");
		if (ps->nonunit_reads)
			tinyc_buf_printf(out, "  halo: %d read%s with a non-unit access\n",
					 ps->nonunit_reads, ps->nonunit_reads == 1 ? "" : "s");
		if (u->op == TINYC_OP_REDUCE && ps->contraction < 0)
			tinyc_buf_printf(out, "  acc: %s, %lld B/element; smem %lld B/block; barriers: "
					 "__syncthreads() per tree level (warp shuffles need none)\n",
					 tinyc_dtype_name(pv->ib->val[ps->node].acc),
					 (long long)ps->reg_bytes, (long long)ps->smem_bytes);
	}
	tinyc_buf_puts(out, "dependences:\n");
	for (int k = 0; k < pc->ndep; k++) {
		tinyc_buf_printf(out, "  flow %s -> %s: ", pv->stmt[pc->dep[k].src].name,
				 pv->stmt[pc->dep[k].dst].name);
		put_isl_map(out, pc->dep[k].rel);
		tinyc_buf_putc(out, '\n');
	}
	tinyc_buf_printf(out, "  anti: %s  output: %s%s\n",
			 pc->nanti ? "PRESENT" : "none", pc->noutput ? "PRESENT" : "none",
			 pc->nanti || pc->noutput ? "" : "  (SSA)");
	for (int c = 0; c < pc->ncontr; c++) {
		const tinyc_contraction *ct = &pv->contr[c];
		const tinyc_pc_contr *e = &pc->contr[c];
		const tinyc_pc_stmt *rs = &pc->stmt[ct->reduce_stmt];
		tinyc_buf_printf(out, "contraction %d: %s sums %s over [", c,
				 pv->stmt[ct->reduce_stmt].name, pv->stmt[ct->mul_stmt].name);
		for (int d = 0, first = 1; d < rs->naxes; d++)
			if (rs->axes[d].cls == TINYC_PC_REDUCE) {
				tinyc_buf_printf(out, "%s%s", first ? "" : ", ", rs->axes[d].name);
				first = 0;
			}
		int sl = ct->lhs >= 0 ? tinyc_dtype_size(g->nodes[ct->lhs].dtype) : 0;
		int sr = ct->rhs >= 0 ? tinyc_dtype_size(g->nodes[ct->rhs].dtype) : 0;
		tinyc_buf_printf(out, "]\n  tile [%d,%d,%d] x %d stages: smem %d*(%d*%d*%d + %d*%d*%d) "
				 "= %lld B (limit %lld: %s)\n", e->bm, e->bn, e->bk, e->stages,
				 e->stages, e->bm, e->bk, sl, e->bk, e->bn, sr,
				 (long long)e->smem_bytes, (long long)e->smem_limit,
				 e->smem_bytes <= e->smem_limit ? "fits" : "too large");
		tinyc_buf_printf(out, "  reg: acc %s %d*%d*%d = %lld B per block\n",
				 tinyc_dtype_name(ct->acc), e->bm, e->bn, tinyc_dtype_size(ct->acc),
				 (long long)e->reg_bytes);
		tinyc_buf_puts(out, "  barriers: sync: __syncthreads() after each k-tile's loads and "
			       "before they are overwritten; async: cp.async groups, "
			       "wait_group(stages-2) + __syncthreads()\n");
	}
}

