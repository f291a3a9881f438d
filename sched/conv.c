/* Convolutions as implicit GEMM: the im2col addressing of a gathered operand (see
 * sched/conv.h). */
#include "sched/conv.h"
#include "ir/ctx.h"

#include <isl/aff.h>
#include <isl/constraint.h>
#include <isl/set.h>
#include <isl/val.h>
#include <stdio.h>
#include <string.h>

/* State of the walk over the guards' constraints. */
typedef struct guard_walk {
	tinyc_mm_gather *g;		/* filled */
	int role[64];			/* per set dim: 0 row, 1 column, -1 neither */
	int pos[64];			/* per set dim: its place among the role's axes */
	int ndim;			/* set dims */
	const char *fail;		/* why the guards do not fit */
} guard_walk;

/* The integer value of v (freed), or *bad = 1. */
static int64_t take_int(isl_val *v, int *bad)
{
	int64_t r = 0;
	if (!v || !isl_val_is_int(v))
		*bad = 1;
	else
		r = isl_val_get_num_si(v);
	isl_val_free(v);
	return r;
}

/* Record one constraint of the guard set as a guard. */
static isl_stat add_guard(isl_constraint *c, void *user)
{
	guard_walk *w = user;
	tinyc_mm_gather *g = w->g;
	int bad = 0;
	if (g->nguard == TINYC_GATHER_GUARDS) {
		w->fail = "too many guards";
		isl_constraint_free(c);
		return isl_stat_error;
	}
	int q = g->nguard;
	memset(g->gcoef[q], 0, sizeof(g->gcoef[q]));
	isl_size np = isl_constraint_dim(c, isl_dim_param);
	isl_size nd = isl_constraint_dim(c, isl_dim_div);
	if (np < 0 || nd < 0 || (np && isl_constraint_involves_dims(c, isl_dim_param, 0, (unsigned)np)) ||
	    (nd && isl_constraint_involves_dims(c, isl_dim_div, 0, (unsigned)nd))) {
		w->fail = "a guard with a symbolic size or a division";
		isl_constraint_free(c);
		return isl_stat_error;
	}
	for (int d = 0; d < w->ndim; d++) {
		int64_t v = take_int(isl_constraint_get_coefficient_val(c, isl_dim_set, d), &bad);
		if (!v)
			continue;
		if (w->role[d] < 0) {
			w->fail = "a guard on an axis that is neither a row nor a column";
			isl_constraint_free(c);
			return isl_stat_error;
		}
		g->gcoef[q][w->role[d]][w->pos[d]] = v;
	}
	g->g0[q] = take_int(isl_constraint_get_constant_val(c), &bad);
	g->geq[q] = isl_constraint_is_equality(c) == isl_bool_true;
	isl_constraint_free(c);
	if (bad) {
		w->fail = "a guard with a rational coefficient";
		return isl_stat_error;
	}
	g->nguard++;
	return isl_stat_ok;
}

/* Record the constraints of basic set bs (freed) as guards. */
static isl_stat add_guards(isl_basic_set *bs, void *user)
{
	isl_stat st = isl_basic_set_foreach_constraint(bs, add_guard, user);
	isl_basic_set_free(bs);
	return st;
}

int tinyc_conv_gather(struct isl_pw_multi_aff *acc, struct isl_set *dom, const int *rows,
		      int nrow, const int *cols, int ncol, const int64_t *ext,
		      const int64_t *stride, tinyc_mm_gather *g, char *why, size_t wsize)
{
	memset(g, 0, sizeof(*g));
	if (nrow > TINYC_GATHER_AXES || ncol > TINYC_GATHER_AXES) {
		snprintf(why, wsize, "more than %d axes of one role", TINYC_GATHER_AXES);
		return -1;
	}
	guard_walk w = {.g = g, .fail = NULL};
	isl_set *gs = isl_pw_multi_aff_domain(isl_pw_multi_aff_copy(acc));
	isl_size ndim = isl_set_dim(gs, isl_dim_set);
	if (ndim < 0 || ndim > 64) {
		isl_set_free(gs);
		snprintf(why, wsize, "the access's domain has %d axes", (int)ndim);
		return -1;
	}
	w.ndim = ndim;
	for (int d = 0; d < ndim; d++)
		w.role[d] = -1, w.pos[d] = 0;
	const int *ax[2] = {rows, cols};
	int n[2] = {nrow, ncol};
	for (int r = 0; r < 2; r++) {
		g->nax[r] = n[r];
		for (int i = 0; i < n[r]; i++) {
			int a = ax[r][i];
			if (ext[a] < 1 || stride[a] < 0 || a >= ndim) {
				isl_set_free(gs);
				snprintf(why, wsize, "an axis of unbound size or stride");
				return -1;
			}
			g->ext[r][i] = ext[a];
			g->stride[r][i] = stride[a];
			w.role[a] = r, w.pos[a] = i;
		}
	}
	/* the guards: what the access's domain adds to the reduce domain */
	gs = isl_set_coalesce(isl_set_gist(gs, isl_set_copy(dom)));
	isl_size nb = isl_set_n_basic_set(gs);
	int rc = 0;
	if (nb < 0) {
		snprintf(why, wsize, "isl error");
		rc = -1;
	} else if (nb > 1) {
		snprintf(why, wsize, "the window's guard is a union");
		rc = -1;
	} else if (nb == 1 && isl_set_foreach_basic_set(gs, add_guards, &w) < 0) {
		snprintf(why, wsize, "%s", w.fail ? w.fail : "isl error");
		rc = -1;
	}
	isl_set_free(gs);
	if (rc == 0)
		g->on = 1;
	return rc;
}

int tinyc_conv_pack_m_major(const tinyc_mm_gather *g)
{
	if (!g->on || g->nax[0] < 1)
		return 0;
	int64_t st = g->stride[0][g->nax[0] - 1];
	return st == 1 || st == 2;
}

void tinyc_conv_print_gather(const tinyc_mm_gather *g, struct tinyc_buf *out)
{
	if (!g->on)
		return;
	tinyc_buf_puts(out, " gathered (im2col):");
	for (int r = 0; r < 2; r++) {
		tinyc_buf_puts(out, r ? " cols (" : " rows (");
		for (int i = 0; i < g->nax[r]; i++)
			tinyc_buf_printf(out, "%s%lld:%lld", i ? " " : "", (long long)g->ext[r][i],
					 (long long)g->stride[r][i]);
		tinyc_buf_putc(out, ')');
	}
	tinyc_buf_printf(out, " guards %d", g->nguard);
}
