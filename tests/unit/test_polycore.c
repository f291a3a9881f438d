/* Unit tests of the Poly-Core analysis (poly/polycore.c).
 *
 * Over every example and valid lit graph: the analysis builds and verifies, a REDUCE's
 * reduce axes (found from isl write conflicts) are the IndexBook's reduce_axes, no other
 * statement has reduce axes, and the flow dependences isl computes are exactly the
 * writer -> reader pairs read off the Poly-View's accesses (an independent derivation: which
 * statement writes the array each read names).  Each dependence relation is also compared with
 * isl's dataflow analysis run over the whole Poly-View at once (one global
 * isl_union_access_info_compute_flow, the reference the per-array analysis must reproduce).
 * isl runs with ISL_ON_ERROR_ABORT, so any isl misuse aborts the test.  Hand-computed estimates and tails, and the verifier on corrupted
 * analyses, follow.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <isl/flow.h>
#include <isl/id.h>
#include <isl/map.h>
#include <isl/options.h>

#include "lower/lower.h"
#include "poly/poly.h"

/* A graph and its IndexBook, Poly-View and Poly-Core. */
typedef struct chain {
	tinyc_ctx *ctx;
	tinyc_source *src;
	tinyc_graph *g;
	tinyc_bindings *b;
	tinyc_indexbook *ib;
	tinyc_polyview *pv;
	tinyc_polycore *pc;
} chain;

/* Build the chain from a source; 0, or -1 when some stage (before Poly-Core) fails. */
static int build_chain(chain *c, tinyc_source *src, const char *bind)
{
	tinyc_isl_opts opts = {1, 0};
	c->ctx = tinyc_ctx_alloc();
	c->src = src;
	c->g = tinyc_parse(c->ctx, src);
	if (!c->g)
		return -1;
	c->b = tinyc_bindings_alloc(c->ctx, c->g);
	if (bind && tinyc_bindings_parse(c->ctx, c->g, bind, c->b) < 0)
		return -1;
	if (tinyc_verify(c->ctx, c->g, c->b) < 0)
		return -1;
	if (!(c->ib = tinyc_indexbook_build(c->ctx, c->g, c->b)))
		return -1;
	if (!(c->pv = tinyc_polyview_build(c->ctx, c->ib, &opts)))
		return -1;
	c->pc = tinyc_polycore_build(c->ctx, c->pv);
	return 0;
}

static void free_chain(chain *c)
{
	tinyc_polycore_free(c->pc);
	tinyc_polyview_free(c->pv);
	tinyc_indexbook_free(c->ib);
	tinyc_bindings_free(c->b);
	tinyc_graph_free(c->g);
	tinyc_source_free(c->src);
	tinyc_ctx_free(c->ctx);
}

static void load(chain *c, const char *text, const char *bind)
{
	memset(c, 0, sizeof(*c));
	tinyc_source *src = tinyc_source_from_string("t.uop", text, strlen(text));
	cr_assert_eq(build_chain(c, src, bind), 0, "a stage before polycore failed");
	cr_assert_not_null(c->pc, "polycore failed");
	cr_assert_eq(tinyc_polycore_verify(c->ctx, c->pc), 0);
}

static int has_diag(tinyc_ctx *ctx, const char *kind)
{
	for (int i = 0; i < tinyc_ctx_diag_count(ctx); i++) {
		const tinyc_diag *d = tinyc_ctx_diag(ctx, i);
		if (d->kind && !strcmp(d->kind, kind))
			return 1;
	}
	return 0;
}

/* ---- the reference: one global dataflow analysis -------------------------------------- */

/* The sequential schedule S_i[x] -> [i, x, 0...] of every statement, padded to the deepest. */
static isl_union_map *sequential_schedule(const tinyc_polyview *pv)
{
	int maxr = 0;
	for (int i = 0; i < pv->nstmt; i++) {
		int r = isl_set_dim(pv->stmt[i].domain, isl_dim_set);
		maxr = r > maxr ? r : maxr;
	}
	isl_union_map *u = isl_union_map_empty(isl_set_get_space(pv->context));
	for (int i = 0; i < pv->nstmt; i++) {
		int r = isl_set_dim(pv->stmt[i].domain, isl_dim_set);
		isl_map *m = isl_set_identity(isl_set_copy(pv->stmt[i].domain));
		m = isl_map_reset_tuple_id(m, isl_dim_out);
		m = isl_map_insert_dims(m, isl_dim_out, 0, 1);
		m = isl_map_fix_si(m, isl_dim_out, 0, i);
		m = isl_map_add_dims(m, isl_dim_out, (unsigned)(maxr - r));
		for (int j = r; j < maxr; j++)
			m = isl_map_fix_si(m, isl_dim_out, (unsigned)(1 + j), 0);
		u = isl_union_map_add_map(u, m);
	}
	return u;
}

/* isl's flow dependences of the whole Poly-View: reads as sinks, writes as must sources. */
static isl_union_map *global_flow(const tinyc_polyview *pv)
{
	isl_union_access_info *ai = isl_union_access_info_from_sink(tinyc_polyview_reads(pv));
	ai = isl_union_access_info_set_must_source(ai, tinyc_polyview_writes(pv));
	ai = isl_union_access_info_set_schedule_map(ai, sequential_schedule(pv));
	isl_union_flow *flow = isl_union_access_info_compute_flow(ai);
	isl_union_map *dep = isl_union_flow_get_must_dependence(flow);
	isl_union_flow_free(flow);
	return dep;
}

/* isl_union_map_foreach_map callback: count the non-empty maps. */
static isl_stat count_nonempty(isl_map *m, void *user)
{
	*(int *)user += isl_map_is_empty(m) == isl_bool_false;
	isl_map_free(m);
	return isl_stat_ok;
}

/* Every dependence of pc equals the reference's map between its statements, and the reference
 * has no other (non-empty) map. */
static void check_against_global_flow(const char *path, const tinyc_polycore *pc)
{
	isl_union_map *ref = global_flow(pc->pv);
	cr_assert_not_null(ref);
	int nref = 0;
	isl_union_map_foreach_map(ref, count_nonempty, &nref);
	cr_expect_eq(pc->ndep, nref, "%s: %d dependences, the global analysis has %d", path,
		     pc->ndep, nref);
	for (int k = 0; k < pc->ndep; k++) {
		isl_map *want = isl_union_map_extract_map(ref, isl_map_get_space(pc->dep[k].rel));
		cr_expect_eq(isl_map_is_equal(pc->dep[k].rel, want), isl_bool_true,
			     "%s: flow %s -> %s differs from the global analysis", path,
			     pc->pv->stmt[pc->dep[k].src].name, pc->pv->stmt[pc->dep[k].dst].name);
		isl_map_free(want);
	}
	isl_union_map_free(ref);
}

/* ---- the sweep ---------------------------------------------------------------------------- */

static void collect(const char *dir, char ***list, int *n)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char *p = tinyc_asprintf("%s/%s", dir, e->d_name);
		struct stat st;
		size_t len = strlen(e->d_name);
		if (p && !stat(p, &st) && S_ISDIR(st.st_mode)) {
			collect(p, list, n);
			free(p);
		} else if (p && len > 4 && !strcmp(e->d_name + len - 4, ".uop")) {
			*list = realloc(*list, sizeof(char *) * (size_t)(*n + 1));
			(*list)[(*n)++] = p;
		} else {
			free(p);
		}
	}
	closedir(d);
}

/* Check one analysed graph against the independent oracles. */
static void check_analysis(const char *path, chain *c)
{
	const tinyc_polyview *pv = c->pv;
	const tinyc_polycore *pc = c->pc;
	cr_expect_eq(tinyc_polycore_verify(c->ctx, pc), 0, "%s: verify", path);
	for (int i = 0; i < pc->nstmt; i++) {
		const tinyc_pc_stmt *ps = &pc->stmt[i];
		const tinyc_ibval *v = &c->ib->val[ps->node];
		int is_reduce = c->g->nodes[ps->node].op == TINYC_OP_REDUCE;
		for (int d = 0; d < ps->naxes; d++) {
			int in_book = 0;
			for (int k = 0; is_reduce && k < v->nreduce; k++)
				in_book |= v->reduce_axes[k] == d;
			cr_expect_eq(ps->axes[d].cls == TINYC_PC_REDUCE, in_book,
				     "%s: %s axis %d: reduce class vs the IndexBook", path,
				     pv->stmt[i].name, d);
		}
	}
	/* expected flow pairs: the statement writing each array a read names */
	int n = pc->nstmt;
	char *want = calloc((size_t)(n * n + 1), 1), *have = calloc((size_t)(n * n + 1), 1);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < pv->stmt[i].nread; k++) {
			int a = pv->stmt[i].read[k].array;
			if (pv->stmt[i].read[k].acc && a >= 0 && pv->stmt_of[a] >= 0)
				want[pv->stmt_of[a] * n + i] = 1;
		}
	for (int k = 0; k < pc->ndep; k++)
		have[pc->dep[k].src * n + pc->dep[k].dst]++;
	for (int s = 0; s < n; s++)
		for (int t = 0; t < n; t++)
			cr_expect_eq(have[s * n + t], want[s * n + t], "%s: flow %s -> %s: isl says %d, "
				     "the accesses say %d", path, pv->stmt[s].name, pv->stmt[t].name,
				     have[s * n + t], want[s * n + t]);
	free(want);
	free(have);
	check_against_global_flow(path, pc);
	cr_expect_eq(pc->nanti, 0, "%s", path);
	cr_expect_eq(pc->noutput, 0, "%s", path);
}

Test(polycore, every_valid_graph_analyses_consistently, .timeout = 600)
{
	char **files = NULL;
	int n = 0, analysed = 0, deps = 0, contr = 0;
	collect(TINYC_SOURCE_DIR "/examples", &files, &n);
	collect(TINYC_SOURCE_DIR "/tests/lit", &files, &n);
	for (int i = 0; i < n; i++) {
		chain c = {0};
		tinyc_ctx *rctx = tinyc_ctx_alloc();
		tinyc_source *src = tinyc_source_read(rctx, files[i]);
		tinyc_ctx_free(rctx);
		if (src && build_chain(&c, src, NULL) == 0) {	/* c owns src from here */
			cr_expect_not_null(c.pc, "%s: polycore failed where polyview built", files[i]);
			if (c.pc) {
				check_analysis(files[i], &c);
				analysed++;
				deps += c.pc->ndep;
				contr += c.pc->ncontr;
			}
		}
		if (src)
			free_chain(&c);
		free(files[i]);
	}
	free(files);
	cr_log_info("polycore sweep: %d graphs analysed, %d flow dependences, %d contractions",
		    analysed, deps, contr);
	cr_expect_geq(analysed, 20);
	cr_expect_geq(contr, 5);
}

/* ---- hand-computed results ---------------------------------------------------------------- */

static const char *matmul_text =
	"%0  = BUFFER(slot=0, name=\"X\") : half[M,K]\n"
	"%1  = BUFFER(slot=1, name=\"W\") : half[K,N]\n"
	"%3  = RESHAPE(%0, shape=[M,1,K]) : half[M,1,K]\n"
	"%4  = RESHAPE(%1, shape=[1,K,N]) : half[1,K,N]\n"
	"%5  = PERMUTE(%4, perm=[0,2,1]) : half[1,N,K]\n"
	"%6  = MUL(%3, %5) : half[M,N,K]\n"
	"%7  = CAST(%6) : float[M,N,K]\n"
	"%8  = REDUCE(%7, op=ADD, axes=[2], keepdim=false) : float[M,N]\n"
	"%9  = OUTPUT(%8, name=\"Y\") : float[M,N]\n";

/* The Poly-Core statement of UOp node id. */
static const tinyc_pc_stmt *stmt_of(chain *c, const char *id)
{
	int n = tinyc_graph_find(c->g, id);
	cr_assert_geq(n, 0);
	int s = c->pv->stmt_of[n];
	cr_assert_geq(s, 0, "%%%s is not a statement", id);
	return &c->pc->stmt[s];
}

Test(polycore, matmul_axes_tails_and_estimates)
{
	chain c;
	load(&c, matmul_text, "M=128,N=100,K=64");
	const tinyc_pc_stmt *r = stmt_of(&c, "8");
	cr_assert_eq(r->naxes, 3);
	tinyc_pc_class cls[] = {TINYC_PC_PARALLEL, TINYC_PC_PARALLEL, TINYC_PC_REDUCE};
	tinyc_role role[] = {TINYC_ROLE_M, TINYC_ROLE_N, TINYC_ROLE_K};
	int quantum[] = {64, 64, 16}, tail[] = {0, 1, 0};	/* 128%64, 100%64, 64%16 */
	for (int d = 0; d < 3; d++) {
		cr_expect_eq(r->axes[d].cls, cls[d], "axis %d class", d);
		cr_expect_eq(r->axes[d].role, role[d], "axis %d role", d);
		cr_expect_eq(r->axes[d].quantum, quantum[d], "axis %d quantum", d);
		cr_expect_eq(r->axes[d].tail, tail[d], "axis %d tail", d);
	}
	cr_expect_eq(r->contraction, 0);
	cr_expect_eq(stmt_of(&c, "6")->contraction, 0, "the MUL is part of the contraction");
	cr_expect_eq(stmt_of(&c, "7")->contraction, 0, "so is the CAST between");
	cr_expect_eq(stmt_of(&c, "9")->contraction, -1);
	cr_assert_eq(c.pc->ncontr, 1);
	/* 2 stages * (64*32 + 32*64) halves = 16384 B; 64*64 floats = 16384 B */
	cr_expect_eq(c.pc->contr[0].smem_bytes, 16384);
	cr_expect_eq(c.pc->contr[0].reg_bytes, 16384);
	/* S6 -> S7 -> S8 -> S9 */
	cr_expect_eq(c.pc->ndep, 3);
	free_chain(&c);
}

Test(polycore, row_reduction_hints)
{
	chain c;
	load(&c,
	     "%0 = BUFFER(slot=0, name=\"X\") : double[R,33]\n"
	     "%1 = REDUCE(%0, op=MAX, axes=[1], keepdim=false) : double[R]\n"
	     "%2 = OUTPUT(%1, name=\"Y\") : double[R]\n",
	     NULL);
	const tinyc_pc_stmt *r = stmt_of(&c, "1");
	cr_expect_eq(r->axes[0].cls, TINYC_PC_PARALLEL);
	cr_expect_eq(r->axes[1].cls, TINYC_PC_REDUCE);
	cr_expect_eq(r->axes[1].quantum, 32);
	cr_expect_eq(r->axes[1].tail, 1, "33 is not a multiple of a warp");
	cr_expect_eq(r->axes[0].tail, 1, "R is unknown");
	cr_expect_eq(r->reg_bytes, 8);
	cr_expect_eq(r->smem_bytes, 32 * 8);
	cr_expect_eq(c.pc->ncontr, 0);
	tinyc_buf out = {0};
	tinyc_polycore_print(c.pc, &out);
	cr_expect(strstr(out.data, "  acc: double, 8 B/element; smem 256 B/block;") != NULL, "%s",
		  out.data);
	tinyc_buf_free(&out);
	free_chain(&c);
}

/* ---- the verifier on corrupted analyses --------------------------------------------------- */

Test(polycore, verifier_rejects_wrong_classes_and_dependences)
{
	chain c;
	load(&c, matmul_text, NULL);
	tinyc_pc_stmt *r = (tinyc_pc_stmt *)stmt_of(&c, "8");
	r->axes[1].cls = TINYC_PC_REDUCE;	/* n is not reduced */
	cr_expect_eq(tinyc_polycore_verify(c.ctx, c.pc), -1);
	cr_expect(has_diag(c.ctx, "PolyCoreMismatch"));
	r->axes[1].cls = TINYC_PC_PARALLEL;
	r->axes[2].cls = TINYC_PC_PARALLEL;	/* k lost */
	tinyc_ctx_clear_diags(c.ctx);
	cr_expect_eq(tinyc_polycore_verify(c.ctx, c.pc), -1);
	cr_expect(has_diag(c.ctx, "PolyCoreMismatch"));
	r->axes[2].cls = TINYC_PC_REDUCE;
	tinyc_ctx_clear_diags(c.ctx);
	cr_expect_eq(tinyc_polycore_verify(c.ctx, c.pc), 0);
	c.pc->noutput = 1;
	cr_expect_eq(tinyc_polycore_verify(c.ctx, c.pc), -1);
	c.pc->noutput = 0;
	tinyc_ctx_clear_diags(c.ctx);
	int s = c.pc->dep[0].src;
	c.pc->dep[0].src = c.pc->dep[0].dst;	/* a backward dependence */
	cr_expect_eq(tinyc_polycore_verify(c.ctx, c.pc), -1);
	c.pc->dep[0].src = s;
	free_chain(&c);
}

/* ---- arrays that are not single-assignment ------------------------------------------------ */

/* Make the statement of node `id` write the array that the statement of node `as` writes
 * (or, with as NULL, the array named `name`), and analyse the changed Poly-View afresh. */
static void rewrite_and_reanalyse(chain *c, const char *id, const char *as, const char *name)
{
	tinyc_pv_stmt *s = &c->pv->stmt[c->pv->stmt_of[tinyc_graph_find(c->g, id)]];
	isl_id *array = as ? isl_pw_multi_aff_get_tuple_id(
				     c->pv->stmt[c->pv->stmt_of[tinyc_graph_find(c->g, as)]].write,
				     isl_dim_out)
			   : isl_id_alloc(c->pv->ictx, name, NULL);
	s->write = isl_pw_multi_aff_set_tuple_id(s->write, isl_dim_out, array);
	tinyc_polycore_free(c->pc);
	c->pc = tinyc_polycore_build(c->ctx, c->pv);
	cr_assert_not_null(c->pc);
}

/* The dependence src -> dst of the analysis, or NULL. */
static isl_map *dep_between(chain *c, const char *src, const char *dst)
{
	int s = c->pv->stmt_of[tinyc_graph_find(c->g, src)];
	int d = c->pv->stmt_of[tinyc_graph_find(c->g, dst)];
	for (int k = 0; k < c->pc->ndep; k++)
		if (c->pc->dep[k].src == s && c->pc->dep[k].dst == d)
			return c->pc->dep[k].rel;
	return NULL;
}

Test(polycore, two_writers_of_one_array_the_last_one_flows)
{
	chain c;
	load(&c,
	     "%0 = BUFFER(slot=0, name=\"X\") : float[4,3]\n"
	     "%1 = NEG(%0) : float[4,3]\n"
	     "%2 = SHRINK(%0, bounds=[[0,2],[0,3]]) : float[2,3]\n"
	     "%3 = EXP2(%2) : float[2,3]\n"
	     "%4 = ADD(%1, %0) : float[4,3]\n"
	     "%5 = OUTPUT(%4, name=\"Y\") : float[4,3]\n",
	     NULL);
	cr_expect_eq(c.pc->ndep, 2, "S1 -> S4, S4 -> S5 while single-assignment (S3 is dead)");
	/* S3 now overwrites rows 0 and 1 of S1's array: S4 reads those rows from S3, rows 2
	 * and 3 still from S1 */
	rewrite_and_reanalyse(&c, "3", "1", NULL);
	cr_expect_eq(c.pc->ndep, 3);
	isl_map *d14 = dep_between(&c, "1", "4"), *d34 = dep_between(&c, "3", "4");
	cr_assert_not_null(d14);
	cr_assert_not_null(d34);
	isl_map *want14 = isl_map_read_from_str(c.pv->ictx, "{ S1[i, j] -> S4[i, j] : 2 <= i < 4 "
							  "and 0 <= j < 3 }");
	isl_map *want34 = isl_map_read_from_str(c.pv->ictx, "{ S3[i, j] -> S4[i, j] : 0 <= i < 2 "
							  "and 0 <= j < 3 }");
	cr_expect_eq(isl_map_is_equal(d14, want14), isl_bool_true);
	cr_expect_eq(isl_map_is_equal(d34, want34), isl_bool_true);
	isl_map_free(want14);
	isl_map_free(want34);
	cr_expect_not_null(dep_between(&c, "4", "5"));
	cr_expect_eq(c.pc->noutput, 2, "(S1, S3) and (S3, S1) write the same elements");
	cr_expect_eq(c.pc->nanti, 0);
	check_against_global_flow("two writers", c.pc);
	cr_expect_eq(tinyc_polycore_verify(c.ctx, c.pc), -1);
	cr_expect(has_diag(c.ctx, "PolyCoreMismatch"));
	free_chain(&c);
}

Test(polycore, a_write_after_a_read_is_an_anti_dependence)
{
	chain c;
	load(&c,
	     "%0 = BUFFER(slot=0, name=\"X\") : float[4]\n"
	     "%1 = NEG(%0) : float[4]\n"
	     "%2 = OUTPUT(%1, name=\"Y\") : float[4]\n",
	     NULL);
	rewrite_and_reanalyse(&c, "2", NULL, "X");	/* the output overwrites the input */
	cr_expect_eq(c.pc->nanti, 1, "S1 reads X, then S2 writes it");
	cr_expect_eq(c.pc->noutput, 0);
	cr_expect_eq(c.pc->ndep, 1, "S1 -> S2 only: X's values come from outside");
	cr_expect_not_null(dep_between(&c, "1", "2"));
	check_against_global_flow("anti", c.pc);
	cr_expect_eq(tinyc_polycore_verify(c.ctx, c.pc), -1);
	free_chain(&c);
}

Test(polycore, a_statement_reading_its_own_array)
{
	chain c;
	load(&c,
	     "%0 = BUFFER(slot=0, name=\"X\") : float[5]\n"
	     "%1 = NEG(%0) : float[5]\n"
	     "%2 = EXP2(%1) : float[5]\n"
	     "%3 = OUTPUT(%2, name=\"Y\") : float[5]\n",
	     NULL);
	/* S2 reads T1[i] and now writes T1[i] itself: the value it reads is still S1's (an
	 * instance does not precede itself) */
	rewrite_and_reanalyse(&c, "2", "1", NULL);
	isl_map *d12 = dep_between(&c, "1", "2");
	cr_assert_not_null(d12);
	isl_map *want = isl_map_read_from_str(c.pv->ictx, "{ S1[i] -> S2[i] : 0 <= i < 5 }");
	cr_expect_eq(isl_map_is_equal(d12, want), isl_bool_true);
	isl_map_free(want);
	cr_expect_eq(c.pc->noutput, 2);
	check_against_global_flow("self", c.pc);
	free_chain(&c);
}

/* ---- the isl budget ----------------------------------------------------------------------- */

Test(polycore, an_exhausted_budget_is_a_diagnostic)
{
	chain c;
	load(&c, matmul_text, NULL);
	isl_ctx *ictx = c.pv->ictx;
	isl_options_set_on_error(ictx, ISL_ON_ERROR_CONTINUE);
	isl_ctx_set_max_operations(ictx, 5);	/* far too few for any isl step */
	tinyc_polycore *pc = tinyc_polycore_build(c.ctx, c.pv);
	cr_expect_null(pc);
	cr_expect(has_diag(c.ctx, "IslBudgetExceeded"));
	tinyc_polycore_free(pc);
	/* with the budget back, the same Poly-View analyses */
	isl_ctx_set_max_operations(ictx, TINYC_ISL_MAX_OPERATIONS);
	tinyc_ctx_clear_diags(c.ctx);
	pc = tinyc_polycore_build(c.ctx, c.pv);
	cr_expect_not_null(pc);
	cr_expect_eq(pc ? pc->ndep : -1, 3);
	tinyc_polycore_free(pc);
	free_chain(&c);
}
