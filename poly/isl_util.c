/* isl helpers shared by the polyhedral stages: context set-up with an operation budget,
 * isl errors as diagnostics, IndexBook expressions and constraints as isl objects,
 * simplification and printing. */
#include <stdlib.h>
#include <string.h>

#include <isl/constraint.h>
#include <isl/local_space.h>
#include <isl/map.h>
#include <isl/options.h>
#include <isl/space.h>
#include <isl/val.h>

#include "poly/poly.h"

/* A new isl_ctx: errors continue (or abort, for tests), operations bounded. */
isl_ctx *tinyc_isl_ctx_alloc(tinyc_ctx *ctx, const tinyc_isl_opts *opts)
{
	isl_ctx *ictx = isl_ctx_alloc();
	if (!ictx) {
		tinyc_error(ctx, "OutOfMemory", "cannot allocate an isl context");
		return NULL;
	}
	int abort_ = opts && opts->abort_on_error;
	isl_options_set_on_error(ictx, abort_ ? ISL_ON_ERROR_ABORT : ISL_ON_ERROR_CONTINUE);
	unsigned long max = opts && opts->max_operations ? opts->max_operations
							 : TINYC_ISL_MAX_OPERATIONS;
	isl_ctx_set_max_operations(ictx, max);
	isl_ctx_reset_operations(ictx);
	return ictx;
}

/* Report isl's last error as a diagnostic (see poly.h). */
int tinyc_isl_report(tinyc_ctx *ctx, isl_ctx *ictx, const tinyc_source *src, tinyc_loc loc,
		     const char *what)
{
	enum isl_error e = isl_ctx_last_error(ictx);
	char *msg = isl_ctx_last_error_msg(ictx) ? strdup(isl_ctx_last_error_msg(ictx)) : NULL;
	if (e != isl_error_quota) {
		/* an exhausted budget often surfaces as a follow-on error ("invalid"); the
		 * budget stays exhausted until reset, so a tiny probe tells */
		isl_ctx_reset_error(ictx);
		isl_set *probe = isl_set_read_from_str(ictx, "{ [i] : 0 <= i <= 10 and i >= 3 }");
		isl_bool empty = isl_set_is_empty(probe);
		isl_set_free(probe);
		if (empty == isl_bool_error && isl_ctx_last_error(ictx) == isl_error_quota)
			e = isl_error_quota;
	}
	if (e == isl_error_quota) {
		tinyc_error_at(ctx, src, loc, "IslBudgetExceeded",
			       "isl ran out of its budget of %lu operations while %s",
			       isl_ctx_get_max_operations(ictx), what);
	} else {
		tinyc_error_at(ctx, src, loc, "IslError", "isl failed while %s%s%s", what,
			       msg ? ": " : "", msg ? msg : "");
	}
	free(msg);
	isl_ctx_reset_error(ictx);
	isl_ctx_reset_operations(ictx);
	return -1;
}

/* The parameter space: one parameter per size symbol. */
isl_space *tinyc_isl_params(isl_ctx *ictx, const tinyc_graph *g)
{
	isl_space *sp = isl_space_params_alloc(ictx, (unsigned)g->nsym);
	for (int i = 0; i < g->nsym; i++)
		sp = isl_space_set_dim_name(sp, isl_dim_param, (unsigned)i, g->syms[i]);
	return sp;
}

/* Every size >= 1; bound sizes fixed to their values. */
isl_set *tinyc_isl_context(isl_ctx *ictx, const tinyc_graph *g, const tinyc_bindings *b)
{
	isl_set *ctxset = isl_set_universe(tinyc_isl_params(ictx, g));
	for (int i = 0; i < g->nsym; i++) {
		ctxset = isl_set_lower_bound_si(ctxset, isl_dim_param, (unsigned)i, 1);
		if (b && b->n == g->nsym && b->val[i] >= 0)
			ctxset = isl_set_fix_val(ctxset, isl_dim_param, (unsigned)i,
						 isl_val_int_from_si(ictx, (long)b->val[i]));
	}
	return ctxset;
}

/* The isl_aff of an index expression (see poly.h). */
isl_aff *tinyc_isl_aff_from_ix(isl_local_space *ls, const tinyc_ix *e)
{
	isl_ctx *ictx = isl_local_space_get_ctx(ls);
	isl_aff *a;
	if (!e)
		return NULL;
	switch (e->op) {
	case TINYC_IX_CONST:
		return isl_aff_val_on_domain(isl_local_space_copy(ls), isl_val_int_from_si(ictx, e->c));
	case TINYC_IX_AXIS:
		return isl_aff_var_on_domain(isl_local_space_copy(ls), isl_dim_set, (unsigned)e->var);
	case TINYC_IX_SYM:
		return isl_aff_var_on_domain(isl_local_space_copy(ls), isl_dim_param, (unsigned)e->var);
	case TINYC_IX_ADD:
		return isl_aff_add(tinyc_isl_aff_from_ix(ls, e->a), tinyc_isl_aff_from_ix(ls, e->b));
	case TINYC_IX_MUL:
		return isl_aff_scale_val(tinyc_isl_aff_from_ix(ls, e->a), isl_val_int_from_si(ictx, e->c));
	case TINYC_IX_FDIV:
		a = isl_aff_scale_down_val(tinyc_isl_aff_from_ix(ls, e->a),
					   isl_val_int_from_si(ictx, e->c));
		return isl_aff_floor(a);
	case TINYC_IX_MOD:
		return isl_aff_mod_val(tinyc_isl_aff_from_ix(ls, e->a), isl_val_int_from_si(ictx, e->c));
	}
	return NULL;
}

/* [params] -> { name[axes] } with the axis names of v. */
isl_space *tinyc_isl_value_space(isl_ctx *ictx, const tinyc_graph *g, const tinyc_ibval *v,
				 const char *name)
{
	isl_space *sp = isl_space_add_dims(tinyc_isl_params(ictx, g), isl_dim_set,
					   (unsigned)v->naxes);
	for (int a = 0; a < v->naxes; a++)
		sp = isl_space_set_dim_name(sp, isl_dim_set, (unsigned)a, v->axes[a].name);
	return isl_space_set_tuple_name(sp, isl_dim_set, name);
}

/* The box of v's axes, 0 <= a < size, over space (taken): one basic set built constraint by
 * constraint, with no set operations. */
isl_set *tinyc_isl_axis_box(isl_space *space, const tinyc_ibval *v)
{
	isl_local_space *ls = isl_local_space_from_space(isl_space_copy(space));
	isl_basic_set *bs = isl_basic_set_universe(space);
	for (int a = 0; a < v->naxes; a++) {
		isl_constraint *lo = isl_constraint_alloc_inequality(isl_local_space_copy(ls));
		lo = isl_constraint_set_coefficient_si(lo, isl_dim_set, a, 1);
		bs = isl_basic_set_add_constraint(bs, lo);
		isl_constraint *hi = isl_constraint_alloc_inequality(isl_local_space_copy(ls));
		hi = isl_constraint_set_coefficient_si(hi, isl_dim_set, a, -1);
		tinyc_dim d = v->axes[a].size;
		if (d.sym >= 0) {
			hi = isl_constraint_set_coefficient_si(hi, isl_dim_param, d.sym, 1);
			hi = isl_constraint_set_constant_si(hi, -1);
		} else {
			hi = isl_constraint_set_constant_val(hi,
				isl_val_int_from_si(isl_local_space_get_ctx(ls), d.val - 1));
		}
		bs = isl_basic_set_add_constraint(bs, hi);
	}
	isl_local_space_free(ls);
	return isl_set_from_basic_set(isl_basic_set_detect_equalities(bs));
}

/* The set of points of space satisfying every constraint. */
isl_set *tinyc_isl_set_from_cons(isl_space *space, int n, const tinyc_ixcon *cons)
{
	isl_local_space *ls = isl_local_space_from_space(isl_space_copy(space));
	isl_set *set = isl_set_universe(space);
	for (int i = 0; i < n && set; i++) {
		isl_aff *a = tinyc_isl_aff_from_ix(ls, cons[i].e);
		isl_pw_aff *pa = isl_pw_aff_from_aff(a);
		set = isl_set_intersect(set, cons[i].eq ? isl_pw_aff_zero_set(pa)
							: isl_pw_aff_nonneg_set(pa));
	}
	isl_local_space_free(ls);
	return set;
}

/* { space -> name[e...] } as a pw_multi_aff. */
isl_pw_multi_aff *tinyc_isl_pma_from_ix(isl_space *space, const char *name, int n,
					const tinyc_ix *const *e)
{
	isl_ctx *ictx = isl_space_get_ctx(space);
	isl_local_space *ls = isl_local_space_from_space(isl_space_copy(space));
	isl_space *range = isl_space_add_dims(isl_space_params(isl_space_copy(space)),
					      isl_dim_set, (unsigned)n);
	range = isl_space_set_tuple_name(range, isl_dim_set, name);
	isl_space *mspace = isl_space_map_from_domain_and_range(space, range);
	isl_aff_list *list = isl_aff_list_alloc(ictx, n);
	for (int i = 0; i < n; i++)
		list = isl_aff_list_add(list, tinyc_isl_aff_from_ix(ls, e[i]));
	isl_local_space_free(ls);
	return isl_pw_multi_aff_from_multi_aff(isl_multi_aff_from_aff_list(mspace, list));
}

/* coalesce + remove_redundancies + gist against the parameter context. */
isl_set *tinyc_isl_set_simplify(isl_set *set, isl_set *context)
{
	set = isl_set_coalesce(set);
	set = isl_set_remove_redundancies(set);
	if (context)
		set = isl_set_gist_params(set, isl_set_copy(context));
	return isl_set_coalesce(set);
}

/* coalesce, gist against the domain the access is evaluated on (GIST), and rebuild
 * from the relation restricted to the domain (coalesced, redundancies removed; REBUILD),
 * which lets isl find simpler divisions for chains of reshapes; the rebuilt form is kept
 * when it has no more pieces.  Rebuilding can be costly when many divisions are nested, so
 * it runs on a budget of its own (TINYC_ISL_SIMPLIFY_OPERATIONS) and is skipped when that
 * runs out; the context's budget then starts afresh. */
isl_pw_multi_aff *tinyc_isl_pma_simplify(isl_pw_multi_aff *pma, isl_set *domain, int how)
{
	pma = isl_pw_multi_aff_coalesce(pma);
	if (!domain || !pma)
		return pma;
	if (how & TINYC_SIMPLIFY_GIST)
		pma = isl_pw_multi_aff_coalesce(isl_pw_multi_aff_gist(pma, isl_set_copy(domain)));
	if (!pma || !(how & TINYC_SIMPLIFY_REBUILD))
		return pma;
	isl_ctx *ictx = isl_pw_multi_aff_get_ctx(pma);
	unsigned long max = isl_ctx_get_max_operations(ictx);
	int on_error = isl_options_get_on_error(ictx);
	isl_ctx_reset_operations(ictx);
	isl_ctx_set_max_operations(ictx, max && max < TINYC_ISL_SIMPLIFY_OPERATIONS
					      ? max : TINYC_ISL_SIMPLIFY_OPERATIONS);
	isl_options_set_on_error(ictx, ISL_ON_ERROR_CONTINUE);
	isl_map *m = isl_map_from_pw_multi_aff(isl_pw_multi_aff_copy(pma));
	m = isl_map_intersect_domain(m, isl_set_copy(domain));
	m = isl_map_remove_redundancies(isl_map_coalesce(m));
	isl_pw_multi_aff *alt = isl_pw_multi_aff_from_map(m);
	alt = isl_pw_multi_aff_coalesce(isl_pw_multi_aff_gist(alt, isl_set_copy(domain)));
	if (!alt)
		isl_ctx_reset_error(ictx);
	isl_options_set_on_error(ictx, on_error);
	isl_ctx_set_max_operations(ictx, max);
	isl_ctx_reset_operations(ictx);
	if (alt && isl_pw_multi_aff_n_piece(alt) <= isl_pw_multi_aff_n_piece(pma)) {
		isl_pw_multi_aff_free(pma);
		return alt;
	}
	isl_pw_multi_aff_free(alt);
	return pma;
}

/* Append a heap string from isl and free it. */
static void put_isl_str(tinyc_buf *out, char *s)
{
	tinyc_buf_puts(out, s ? s : "(null)");
	free(s);
}

void tinyc_isl_print_set(tinyc_buf *out, isl_set *set)
{
	put_isl_str(out, set ? isl_set_to_str(set) : NULL);
}

void tinyc_isl_print_pma(tinyc_buf *out, isl_pw_multi_aff *pma)
{
	put_isl_str(out, pma ? isl_pw_multi_aff_to_str(pma) : NULL);
}

void tinyc_isl_print_union_map(tinyc_buf *out, isl_union_map *umap)
{
	put_isl_str(out, umap ? isl_union_map_to_str(umap) : NULL);
}

/* Does output dim `out` (any when out < 0) of pma depend on input dim `in`? */
int tinyc_isl_pma_uses(isl_pw_multi_aff *pma, int out, int in)
{
	if (!pma)
		return 0;
	if (out < 0)
		return isl_pw_multi_aff_involves_dims(pma, isl_dim_in, (unsigned)in, 1) == isl_bool_true;
	isl_pw_aff *pa = isl_pw_multi_aff_get_pw_aff(pma, out);
	int r = isl_pw_aff_involves_dims(pa, isl_dim_in, (unsigned)in, 1) == isl_bool_true;
	isl_pw_aff_free(pa);
	return r;
}
