/* GPU IR verifier: operand types, variable kinds and scopes, divergence of barriers and warp
 * collectives, warpgroup rules, shared-memory limits (tinyc_gpu_verify, ir/gpuir.h). */
#include "ir/gpuir.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- verifier ---- */

/* Verifier state for one kernel. */
typedef struct vstate {
	tinyc_ctx *ctx;
	const tinyc_gpu_module *m;
	const tinyc_gkernel *k;
	unsigned char *defined;		/* per var: declared in an enclosing scope */
	int *scope;			/* stack of vars declared, for scope exit */
	int nscope, capscope;
	unsigned char *taint;		/* per var: 0 uniform, 1 warp-uniform, 2 per thread */
	int errors;			/* diagnostics reported (stop after a few) */
	int module_level;		/* checking a grid expression */
	int quiet;			/* taint-only pass over a loop body: report nothing */
} vstate;

/* Report a verifier error (at most 20 per kernel). */
static void verr(vstate *st, const char *fmt, const char *a, const char *b)
{
	if (st->quiet)
		return;
	if (st->errors++ < 20)
		tinyc_error(st->ctx, "GpuIrInvalid", "kernel %s: %s%s%s", st->k->name, fmt,
			    a ? a : "", b ? b : "");
}

static int is_memory(const tinyc_gvar *v)
{
	return v->kind == TINYC_GV_PARAM_PTR || v->kind == TINYC_GV_SHARED ||
	       v->kind == TINYC_GV_REG_ARRAY;
}

/* Check an expression; returns its divergence level (0, 1, 2). */
static int vexpr(vstate *st, const tinyc_gexpr *e)
{
	const tinyc_gkernel *k = st->k;
	if (!e) {
		verr(st, "missing expression", NULL, NULL);
		return 0;
	}
	int lvl = 0;
	for (int i = 0; i < 3; i++)
		if (e->arg[i]) {
			int l = vexpr(st, e->arg[i]);
			lvl = l > lvl ? l : lvl;
		}
	const tinyc_gexpr *a = e->arg[0], *b = e->arg[1];
	int nargs = e->op == TINYC_GX_CALL ? tinyc_gmath_arity(e->math) : tinyc_gx_op_nargs(e->op);
	for (int i = 0; i < nargs; i++)
		if (!e->arg[i]) {
			verr(st, "missing operand of ", e->op == TINYC_GX_CALL ?
			     tinyc_gmath_name(e->math) : tinyc_gx_op_name(e->op), NULL);
			return lvl;
		}
	switch (e->op) {
	case TINYC_GX_INT:
	case TINYC_GX_FLOAT:
		break;
	case TINYC_GX_VAR: {
		if (st->module_level) {
			verr(st, "grid expression uses a variable", NULL, NULL);
			break;
		}
		if (e->var < 0 || e->var >= k->nvar) {
			verr(st, "bad variable index", NULL, NULL);
			break;
		}
		const tinyc_gvar *v = &k->vars[e->var];
		if (v->kind != TINYC_GV_REG && v->kind != TINYC_GV_PARAM_INT)
			verr(st, "variable used as a scalar: ", v->name, NULL);
		else if (v->kind == TINYC_GV_REG && !st->defined[e->var])
			verr(st, "use before definition of ", v->name, NULL);
		if (e->dtype != v->dtype)
			verr(st, "dtype of a variable reference differs: ", v->name, NULL);
		lvl = st->taint[e->var];
		break;
	}
	case TINYC_GX_SYM:
		if (!st->module_level)
			verr(st, "size symbol inside a kernel body (use a PARAM_INT)", NULL, NULL);
		break;
	case TINYC_GX_SPECIAL:
		if (st->module_level)
			verr(st, "grid expression uses a thread coordinate", NULL, NULL);
		if (e->special <= TINYC_GSP_TID_Z || e->special == TINYC_GSP_LANE)
			lvl = 2;
		else if (e->special == TINYC_GSP_WARP)
			lvl = 1;
		break;
	case TINYC_GX_LOAD: {
		if (e->var < 0 || e->var >= k->nvar || !is_memory(&k->vars[e->var])) {
			verr(st, "load from something that is not an array", NULL, NULL);
			break;
		}
		const tinyc_gvar *v = &k->vars[e->var];
		if (v->kind == TINYC_GV_REG_ARRAY && !st->defined[e->var])
			verr(st, "use before definition of ", v->name, NULL);
		if (!a || tinyc_dtype_is_float(a->dtype) || a->dtype == TINYC_BOOL)
			verr(st, "load index is not an integer: ", v->name, NULL);
		if (b && b->dtype != TINYC_BOOL)
			verr(st, "load predicate is not bool: ", v->name, NULL);
		if (e->dtype != v->dtype)
			verr(st, "load dtype differs from the array's: ", v->name, NULL);
		if (v->kind == TINYC_GV_SHARED || v->kind == TINYC_GV_PARAM_PTR)
			lvl = lvl > 0 ? lvl : 0;
		break;
	}
	case TINYC_GX_NEG:
	case TINYC_GX_BITNOT:
		if (e->dtype != a->dtype)
			verr(st, "unary result dtype differs from operand", NULL, NULL);
		if (e->op == TINYC_GX_BITNOT && tinyc_dtype_is_float(a->dtype))
			verr(st, "~ on a float", NULL, NULL);
		break;
	case TINYC_GX_NOT:
		if (a->dtype != TINYC_BOOL)
			verr(st, "! on a non-bool", NULL, NULL);
		break;
	case TINYC_GX_SELECT:
		if (a->dtype != TINYC_BOOL)
			verr(st, "select condition is not bool", NULL, NULL);
		if (e->arg[1]->dtype != e->arg[2]->dtype || e->dtype != e->arg[1]->dtype)
			verr(st, "select arms differ in dtype", NULL, NULL);
		break;
	case TINYC_GX_CAST:
		break;
	case TINYC_GX_BITCAST:
		if (tinyc_dtype_size(a->dtype) != tinyc_dtype_size(e->dtype))
			verr(st, "bitcast between sizes: ", tinyc_dtype_name(a->dtype),
			     tinyc_dtype_name(e->dtype));
		break;
	case TINYC_GX_CALL:
		if (!nargs)
			verr(st, "unknown math function", NULL, NULL);
		else if (!tinyc_dtype_is_float(a->dtype))
			verr(st, "math function on a non-float: ", tinyc_gmath_name(e->math), NULL);
		if (e->math == TINYC_GM_FMA && (b->dtype != a->dtype || e->arg[2]->dtype != a->dtype))
			verr(st, "fma operands differ in dtype", NULL, NULL);
		break;
	default:
		if (e->op >= TINYC_GX_ADD && e->op <= TINYC_GX_NE) {
			if (a->dtype != b->dtype)
				verr(st, "operands differ in dtype: ", tinyc_dtype_name(a->dtype),
				     tinyc_dtype_name(b->dtype));
			int fl = tinyc_dtype_is_float(a->dtype);
			if (fl && (e->op == TINYC_GX_MOD || e->op == TINYC_GX_FLOORDIV ||
				   (e->op >= TINYC_GX_AND && e->op <= TINYC_GX_SHR)))
				verr(st, "integer operator on floats: ", tinyc_gx_op_name(e->op), NULL);
			if ((e->op == TINYC_GX_LAND || e->op == TINYC_GX_LOR) && a->dtype != TINYC_BOOL)
				verr(st, "logical operator on non-bool", NULL, NULL);
			if (tinyc_gx_op_is_bool(e->op) ? e->dtype != TINYC_BOOL : e->dtype != a->dtype)
				verr(st, "result dtype of ", tinyc_gx_op_name(e->op), " is wrong");
		} else {
			verr(st, "unknown expression operator", NULL, NULL);
		}
		break;
	}
	return lvl;
}

/* Declare var in the current scope. */
static void vdefine(vstate *st, int var)
{
	if (var < 0 || var >= st->k->nvar)
		return;
	if (st->nscope == st->capscope) {
		int nc = st->capscope ? st->capscope * 2 : 64;
		int *ns = realloc(st->scope, sizeof(int) * (size_t)nc);
		if (!ns)
			return;
		st->scope = ns;
		st->capscope = nc;
	}
	st->scope[st->nscope++] = var;
	st->defined[var] = 1;
}

/* Leave scopes down to `mark`. */
static void vleave(vstate *st, int mark)
{
	while (st->nscope > mark)
		st->defined[st->scope[--st->nscope]] = 0;
}

/* Require var to be a defined REG / REG_ARRAY / memory of the right kind. */
static const tinyc_gvar *vvar(vstate *st, int var, const char *what)
{
	if (var < 0 || var >= st->k->nvar) {
		verr(st, "bad variable in ", what, NULL);
		return NULL;
	}
	return &st->k->vars[var];
}

/* Check a memory reference's index (integer) and that the array exists. */
static const tinyc_gvar *vref(vstate *st, const tinyc_gref *r, const char *what, int *lvl)
{
	const tinyc_gvar *v = vvar(st, r->var, what);
	if (!v)
		return NULL;
	if (!is_memory(v) && v->kind != TINYC_GV_PARAM_TMAP)
		verr(st, what, " on a non-array ", v->name);
	if (v->kind == TINYC_GV_REG_ARRAY && !st->defined[r->var])
		verr(st, "use before definition of ", v->name, NULL);
	if (r->index) {
		int l = vexpr(st, r->index);
		if (lvl && l > *lvl)
			*lvl = l;
		if (tinyc_dtype_is_float(r->index->dtype) || r->index->dtype == TINYC_BOOL)
			verr(st, "non-integer index in ", what, NULL);
	}
	return v;
}

/* Check a statement under control divergence level `ctl`. */
/* Check a Hopper warpgroup statement (wgmma, setmaxnreg): sm_90a, warp-uniform control
 * (a warpgroup executes it together), operand kinds and shapes. */
static void vwarpgroup(vstate *st, const tinyc_gstmt *s, int ctl)
{
	const tinyc_gpu_module *m = st->m;
	if (m->arch_major != 9 || !strchr(m->target, 'a'))
		verr(st, tinyc_gs_op_name(s->op), " needs the sm_90a target, the module targets ",
		     m->target);
	if (ctl > 1)
		verr(st, tinyc_gs_op_name(s->op), " under a lane-dependent branch or loop", NULL);
	if (s->op == TINYC_GS_SETMAXNREG && (s->n < 24 || s->n > 256 || s->n % 8))
		verr(st, "setmaxnreg count must be a multiple of 8 in 24..256", NULL, NULL);
	if (s->op == TINYC_GS_WGMMA_WAIT) {
		if (s->n < 0 || s->n > 7)
			verr(st, "wgmma.wait_group count out of range", NULL, NULL);
		if (s->dst.var >= 0) {
			const tinyc_gvar *v = vvar(st, s->dst.var, "wgmma.wait");
			if (v && (v->kind != TINYC_GV_REG_ARRAY || v->dtype != TINYC_FLOAT))
				verr(st, "wgmma.wait orders a float register array, not ", v->name, NULL);
		}
	}
	if (s->op != TINYC_GS_WGMMA)
		return;
	const tinyc_gvar *d = vref(st, &s->dst, "wgmma", NULL);
	const tinyc_gvar *a = vref(st, &s->src, "wgmma", NULL);
	const tinyc_gvar *b = vref(st, &s->src2, "wgmma", NULL);
	if (s->value && vexpr(st, s->value) >= 0 && s->value->dtype != TINYC_BOOL)
		verr(st, "wgmma scale-d is not bool", NULL, NULL);
	if (s->n < 8 || s->n > 256 || s->n % 8)
		verr(st, "wgmma N must be a multiple of 8 in 8..256", NULL, NULL);
	if (d && (d->kind != TINYC_GV_REG_ARRAY || d->dtype != TINYC_FLOAT))
		verr(st, "wgmma D must be a float register array: ", d->name, NULL);
	if (d && s->dst.index && s->dst.index->op != TINYC_GX_INT)
		verr(st, "wgmma D offset must be a constant", NULL, NULL);
	else if (d && s->dst.index && s->dst.index->ival + s->n / 2 > d->count)
		verr(st, "wgmma D runs past the end of ", d->name, NULL);
	const tinyc_gvar *ops[2] = {a, b};
	for (int i = 0; i < 2; i++) {
		const tinyc_gvar *o = ops[i];
		if (!o)
			continue;
		if (i == 0 && o->kind == TINYC_GV_REG_ARRAY) {	/* A from registers (16-bit) */
			if (o->dtype != TINYC_HALF && o->dtype != TINYC_BFLOAT16)
				verr(st, "wgmma A in registers must be half or bfloat16: ", o->name, NULL);
			else if (!s->src.index || s->src.index->op != TINYC_GX_INT ||
				 s->src.index->ival % 2 || s->src.index->ival + 8 > o->count)
				verr(st, "wgmma A in registers needs a constant even offset and 8 elements in ",
				     o->name, NULL);
			continue;
		}
		if (o->kind != TINYC_GV_SHARED ||
		    (o->dtype != TINYC_HALF && o->dtype != TINYC_BFLOAT16 && o->dtype != TINYC_FLOAT))
			verr(st, "wgmma operands are half, bfloat16 or float (tf32) shared arrays: ",
			     o->name, NULL);
		else if (o->dtype == TINYC_FLOAT && !(i ? s->wg_b.k_major : s->wg_a.k_major))
			verr(st, "wgmma tf32 operands must be K-major: ", o->name, NULL);
		else if (!o->dynamic || o->align < 1024 || o->offset % 1024)
			verr(st, "wgmma operand tiles need 1024-byte alignment (swizzled layout): ",
			     o->name, NULL);
	}
	if (a && b && a->dtype != b->dtype)
		verr(st, "wgmma A and B differ in dtype", NULL, NULL);
	if ((!s->wg_a.k_major && (s->wg_a.mn_block <= 0 || s->wg_a.mn_block % 1024)) ||
	    (!s->wg_b.k_major && (s->wg_b.mn_block <= 0 || s->wg_b.mn_block % 1024)))
		verr(st, "wgmma MN-major blocks must be a positive multiple of 1024 bytes", NULL, NULL);
}

static void vstmt(vstate *st, const tinyc_gstmt *s, int ctl)
{
	const tinyc_gkernel *k = st->k;
	if (!s) {
		verr(st, "missing statement", NULL, NULL);
		return;
	}
	int lvl = 0;
	const tinyc_gvar *v;
	switch (s->op) {
	case TINYC_GS_BLOCK: {
		int mark = st->nscope;
		for (int i = 0; i < s->nstmts; i++)
			vstmt(st, s->stmts[i], ctl);
		vleave(st, mark);
		break;
	}
	case TINYC_GS_FOR: {
		int l0 = vexpr(st, s->init);
		v = vvar(st, s->dst.var, "for");
		if (!v)
			break;
		if (v->kind != TINYC_GV_REG || tinyc_dtype_is_float(v->dtype))
			verr(st, "loop variable must be an integer register: ", v->name, NULL);
		if (s->init->dtype != v->dtype || s->step->dtype != v->dtype)
			verr(st, "loop bounds differ in dtype from ", v->name, NULL);
		int mark = st->nscope;
		vdefine(st, s->dst.var);
		/* the iterator is as divergent as its bounds and step, which may depend on what
		 * the body assigns: a quiet first pass computes the taint, the second reports */
		int quiet = st->quiet;
		for (int pass = 0; pass < 2; pass++) {
			st->quiet = pass == 0 ? 1 : quiet;
			int l1 = vexpr(st, s->cond), l2 = vexpr(st, s->step);
			int l = l0 > l1 ? l0 : l1;
			l = l > l2 ? l : l2;
			l = l > ctl ? l : ctl;
			st->taint[s->dst.var] = (unsigned char)l;
			if (pass == 1 && s->cond->dtype != TINYC_BOOL)
				verr(st, "loop condition is not bool", NULL, NULL);
			vstmt(st, s->body, l);
		}
		st->quiet = quiet;
		vleave(st, mark);
		break;
	}
	case TINYC_GS_IF: {
		int l = vexpr(st, s->cond);
		if (s->cond->dtype != TINYC_BOOL)
			verr(st, "if condition is not bool", NULL, NULL);
		l = l > ctl ? l : ctl;
		vstmt(st, s->body, l);
		if (s->else_body)
			vstmt(st, s->else_body, l);
		break;
	}
	case TINYC_GS_DECL:
		v = vvar(st, s->dst.var, "decl");
		if (!v)
			break;
		if (v->kind != TINYC_GV_REG && v->kind != TINYC_GV_REG_ARRAY)
			verr(st, "decl of a non-register: ", v->name, NULL);
		if (s->value) {
			lvl = vexpr(st, s->value);
			if (s->value->dtype != v->dtype)
				verr(st, "initial value differs in dtype from ", v->name, NULL);
		}
		vdefine(st, s->dst.var);
		st->taint[s->dst.var] = (unsigned char)(lvl > ctl ? lvl : ctl);
		break;
	case TINYC_GS_ASSIGN:
		v = vvar(st, s->dst.var, "assign");
		if (!v)
			break;
		lvl = vexpr(st, s->value);
		if (v->kind != TINYC_GV_REG)
			verr(st, "assignment to a non-register: ", v->name, NULL);
		else if (!st->defined[s->dst.var])
			verr(st, "assignment before declaration of ", v->name, NULL);
		if (s->value->dtype != v->dtype)
			verr(st, "assigned value differs in dtype from ", v->name, NULL);
		lvl = lvl > ctl ? lvl : ctl;
		if (lvl > st->taint[s->dst.var])
			st->taint[s->dst.var] = (unsigned char)lvl;
		break;
	case TINYC_GS_STORE:
	case TINYC_GS_ATOMIC:
		v = vref(st, &s->dst, tinyc_gs_op_name(s->op), NULL);
		vexpr(st, s->value);
		if (s->pred) {
			vexpr(st, s->pred);
			if (s->pred->dtype != TINYC_BOOL)
				verr(st, "store predicate is not bool", NULL, NULL);
		}
		if (!v)
			break;
		if (v->kind == TINYC_GV_PARAM_PTR && v->is_const)
			verr(st, "store through a const pointer: ", v->name, NULL);
		if (s->value->dtype != v->dtype)
			verr(st, "stored value differs in dtype from ", v->name, NULL);
		if (s->op == TINYC_GS_ATOMIC && v->kind == TINYC_GV_REG_ARRAY)
			verr(st, "atomic on a register array: ", v->name, NULL);
		if (s->op == TINYC_GS_ATOMIC && s->old >= 0) {	/* the value before */
			const tinyc_gvar *ov = vvar(st, s->old, "atomic");
			if (ov && (ov->kind != TINYC_GV_REG || !st->defined[s->old]))
				verr(st, "atomic's old value into an undeclared register: ", ov->name, NULL);
			else if (ov && ov->dtype != v->dtype)
				verr(st, "atomic's old value differs in dtype from ", v->name, NULL);
			st->taint[s->old] = 2;
		}
		break;
	case TINYC_GS_BARRIER:
		/* a cluster barrier (barrier.cluster without .aligned) counts threads: warps may
		 * reach it at different statements (the roles of a warp-specialised kernel), each
		 * as often as the others; its lanes together */
		if (ctl > (s->flag ? 1 : 0))
			verr(st, s->flag ? "cluster barrier under a lane-dependent branch or loop"
					 : "barrier under a thread-dependent branch or loop", NULL, NULL);
		if (s->flag && (st->m->arch_major < 9 || st->k->cluster_x < 2))
			verr(st, "a cluster barrier needs sm_90 and a kernel of clusters", NULL, NULL);
		break;
	case TINYC_GS_SHFL:
		v = vvar(st, s->dst.var, "shfl");
		lvl = 2;
		vexpr(st, s->value);
		vexpr(st, s->cond);
		if (ctl > 1)
			verr(st, "warp shuffle under a lane-dependent branch or loop", NULL, NULL);
		if (!v)
			break;
		if (v->kind != TINYC_GV_REG || !st->defined[s->dst.var])
			verr(st, "shuffle into an undeclared register: ", v->name, NULL);
		if (s->value->dtype != v->dtype)
			verr(st, "shuffled value differs in dtype from ", v->name, NULL);
		if (s->n < 1 || s->n > 32 || (s->n & (s->n - 1)))
			verr(st, "shuffle width must be a power of two <= 32", NULL, NULL);
		st->taint[s->dst.var] = 2;
		break;
	case TINYC_GS_COPY: {
		const tinyc_gvar *d = vref(st, &s->dst, "copy", NULL);
		const tinyc_gvar *sv = vref(st, &s->src, "copy", NULL);
		if (s->pred)
			vexpr(st, s->pred);
		if (!d || !sv)
			break;
		if (d->dtype != sv->dtype)
			verr(st, "copy between dtypes: ", d->name, sv->name);
		if (d->kind == TINYC_GV_PARAM_PTR && d->is_const)
			verr(st, "copy into a const pointer: ", d->name, NULL);
		int bytes = s->n * tinyc_dtype_size(d->dtype);
		if (s->n < 1 || (s->n > 1 && bytes != 4 && bytes != 8 && bytes != 16))
			verr(st, "copy width must be 1 element or 4, 8, 16 bytes", NULL, NULL);
		if (s->async && (d->kind != TINYC_GV_SHARED || sv->kind != TINYC_GV_PARAM_PTR ||
				 (bytes != 4 && bytes != 8 && bytes != 16)))
			verr(st, "cp.async copies 4, 8 or 16 bytes from global to shared", NULL, NULL);
		if (s->async && (st->m->arch_major < 8))
			verr(st, "cp.async needs sm_80", NULL, NULL);
		if (s->value) {	/* distributed shared memory: a peer CTA's src */
			if (vexpr(st, s->value) >= 0 && !tinyc_dtype_is_int(s->value->dtype))
				verr(st, "remote copy: the CTA rank must be an integer", NULL, NULL);
			if (st->m->arch_major < 9 || st->k->cluster_x < 2)
				verr(st, "remote copy needs sm_90 and a cluster", NULL, NULL);
			if (sv->kind != TINYC_GV_SHARED || d->kind != TINYC_GV_REG_ARRAY || s->pred ||
			    s->async || tinyc_dtype_size(d->dtype) != 4 || (s->n != 1 && s->n != 2 && s->n != 4))
				verr(st, "remote copy: 1, 2 or 4 4-byte elements from shared memory into "
				     "a register array, unpredicated", NULL, NULL);
		}
		break;
	}
	case TINYC_GS_CP_COMMIT:
	case TINYC_GS_CP_WAIT:
		if (s->op == TINYC_GS_CP_WAIT && (s->n < 0 || s->n > 8))
			verr(st, "cp.async.wait_group count out of range", NULL, NULL);
		if (s->pipe >= 0 && s->pipe < k->npipe && s->op == TINYC_GS_CP_WAIT &&
		    s->n >= k->pipes[s->pipe].stages)
			verr(st, "wait leaves more groups pending than the pipeline has stages", NULL, NULL);
		break;
	case TINYC_GS_LDMATRIX: {
		const tinyc_gvar *d = vref(st, &s->dst, "ldmatrix", NULL);
		const tinyc_gvar *sv = vref(st, &s->src, "ldmatrix", NULL);
		if (ctl > 1)
			verr(st, "ldmatrix under a lane-dependent branch", NULL, NULL);
		if (s->n != 1 && s->n != 2 && s->n != 4)
			verr(st, "ldmatrix loads 1, 2 or 4 matrices", NULL, NULL);
		if (d && d->kind != TINYC_GV_REG_ARRAY)
			verr(st, "ldmatrix destination must be a register array: ", d->name, NULL);
		if (sv && (sv->kind != TINYC_GV_SHARED || tinyc_dtype_size(sv->dtype) != 2))
			verr(st, "ldmatrix source must be a 16-bit shared array: ", sv->name, NULL);
		break;
	}
	case TINYC_GS_MMA: {
		const tinyc_gvar *d = vref(st, &s->dst, "mma", NULL);
		const tinyc_gvar *a = vref(st, &s->src, "mma", NULL);
		const tinyc_gvar *b = vref(st, &s->src2, "mma", NULL);
		const tinyc_gvar *c = vref(st, &s->src3, "mma", NULL);
		if (ctl > 1)
			verr(st, "mma under a lane-dependent branch", NULL, NULL);
		if (d && (d->kind != TINYC_GV_REG_ARRAY || d->dtype != TINYC_FLOAT))
			verr(st, "mma D must be a float register array", NULL, NULL);
		if (c && (c->kind != TINYC_GV_REG_ARRAY || c->dtype != TINYC_FLOAT))
			verr(st, "mma C must be a float register array", NULL, NULL);
		if (a && b && (a->kind != TINYC_GV_REG_ARRAY || b->kind != TINYC_GV_REG_ARRAY))
			verr(st, "mma A and B must be register arrays", NULL, NULL);
		if (a && b && a->dtype != b->dtype && a->dtype != TINYC_UINT && b->dtype != TINYC_UINT)
			verr(st, "mma A and B differ in dtype", NULL, NULL);
		if (a && b && (a->dtype == TINYC_FLOAT) != (b->dtype == TINYC_FLOAT))
			verr(st, "mma.m16n8k8.tf32 needs float A and B", NULL, NULL);
		if (st->m->arch_major < 8)
			verr(st, "mma.m16n8k16 needs sm_80", NULL, NULL);
		break;
	}
	case TINYC_GS_MBAR_INIT:
	case TINYC_GS_MBAR_EXPECT_TX:
	case TINYC_GS_MBAR_ARRIVE:
	case TINYC_GS_MBAR_WAIT:
		v = vref(st, &s->dst, tinyc_gs_op_name(s->op), NULL);
		if (s->value)
			vexpr(st, s->value);
		if (v && (v->kind != TINYC_GV_SHARED || tinyc_dtype_size(v->dtype) != 8))
			verr(st, "an mbarrier is a 64-bit shared word: ", v->name, NULL);
		if (st->m->arch_major < 9 && s->op != TINYC_GS_MBAR_INIT && s->op != TINYC_GS_MBAR_ARRIVE &&
		    s->op != TINYC_GS_MBAR_WAIT)
			verr(st, "mbarrier transaction counts need sm_90", NULL, NULL);
		if (s->op == TINYC_GS_MBAR_ARRIVE && s->value && (st->m->arch_major < 9 || st->k->cluster_x < 2))
			verr(st, "an arrival on another CTA's mbarrier needs sm_90 and a kernel of clusters",
			     NULL, NULL);
		break;
	case TINYC_GS_TMA_LOAD: {
		const tinyc_gvar *d = vref(st, &s->dst, "tma.load", NULL);
		const tinyc_gvar *t = vvar(st, s->src.var, "tma.load");
		vref(st, &s->src2, "tma.load", NULL);
		for (int i = 0; i < s->n; i++)
			vexpr(st, s->coord[i]);
		if (d && d->kind != TINYC_GV_SHARED)
			verr(st, "tma.load destination must be shared: ", d->name, NULL);
		if (t && t->kind != TINYC_GV_PARAM_TMAP)
			verr(st, "tma.load source must be a tensor map: ", t->name, NULL);
		if (st->m->arch_major < 9)
			verr(st, "TMA needs sm_90", NULL, NULL);
		if (s->flag && (st->k->cluster_x < 2 || s->flag >= 1 << st->k->cluster_x))
			verr(st, "a TMA multicast needs a kernel of clusters holding its CTAs", NULL, NULL);
		break;
	}
	case TINYC_GS_FENCE:
		if ((s->fence == TINYC_GF_GRID_WAIT || s->fence == TINYC_GF_GRID_LAUNCH) &&
		    st->m->arch_major < 9)
			verr(st, "griddepcontrol (pdl) needs sm_90 or later", NULL, NULL);
		break;
	case TINYC_GS_COMMENT:
		break;
	case TINYC_GS_TMAP_PREFETCH: {
		const tinyc_gvar *t = vvar(st, s->src.var, "tma.prefetch");
		if (t && t->kind != TINYC_GV_PARAM_TMAP)
			verr(st, "tma.prefetch needs a tensor map: ", t->name, NULL);
		if (st->m->arch_major < 9)
			verr(st, "TMA needs sm_90", NULL, NULL);
		break;
	}
	case TINYC_GS_TMA_STORE: {
		const tinyc_gvar *t = vvar(st, s->dst.var, "tma.store");
		const tinyc_gvar *src = vref(st, &s->src, "tma.store", NULL);
		for (int i = 0; i < s->n; i++)
			vexpr(st, s->coord[i]);
		if (src && src->kind != TINYC_GV_SHARED)
			verr(st, "tma.store source must be shared: ", src->name, NULL);
		if (t && t->kind != TINYC_GV_PARAM_TMAP)
			verr(st, "tma.store destination must be a tensor map: ", t->name, NULL);
		if (t && t->kind == TINYC_GV_PARAM_TMAP && t->tmap && t->tmap->rank != s->n)
			verr(st, "tma.store rank differs from its tensor map's: ", t->name, NULL);
		if (st->m->arch_major < 9)
			verr(st, "TMA needs sm_90", NULL, NULL);
		break;
	}
	case TINYC_GS_BULK_COMMIT:
	case TINYC_GS_BULK_WAIT:
		if (s->op == TINYC_GS_BULK_WAIT && (s->n < 0 || s->n > 8))
			verr(st, "cp.async.bulk.wait_group count out of range", NULL, NULL);
		if (st->m->arch_major < 9)
			verr(st, "bulk groups need sm_90", NULL, NULL);
		break;
	case TINYC_GS_SYNCWARP:
		if (ctl > 1)
			verr(st, "syncwarp under a lane-dependent branch or loop", NULL, NULL);
		break;
	case TINYC_GS_WGMMA_FENCE:
	case TINYC_GS_WGMMA_COMMIT:
	case TINYC_GS_WGMMA_WAIT:
	case TINYC_GS_SETMAXNREG:
	case TINYC_GS_WGMMA:
		vwarpgroup(st, s, ctl);
		break;
	default:
		verr(st, "unknown statement", NULL, NULL);
		break;
	}
}

/* Check a module-level (grid) expression. */
static void vgrid(vstate *st, const tinyc_gexpr *e)
{
	st->module_level = 1;
	vexpr(st, e);
	if (e && (tinyc_dtype_is_float(e->dtype) || e->dtype == TINYC_BOOL))
		verr(st, "grid extent is not an integer", NULL, NULL);
	st->module_level = 0;
}

int tinyc_gpu_verify(tinyc_ctx *ctx, const tinyc_gpu_module *m, int64_t smem_limit)
{
	int bad = 0;
	for (int i = 0; i < m->nkernel; i++) {
		const tinyc_gkernel *k = m->kernels[i];
		vstate st = {ctx, m, k, NULL, NULL, 0, 0, NULL, 0, 0, 0};
		st.defined = calloc((size_t)k->nvar + 1, 1);
		st.taint = calloc((size_t)k->nvar + 1, 1);
		if (!st.defined || !st.taint) {
			free(st.defined), free(st.taint);
			return tinyc_error(ctx, "OutOfMemory", "GPU IR verifier");
		}
		int64_t threads = (int64_t)k->block[0] * k->block[1] * k->block[2];
		if (k->block[0] < 1 || k->block[1] < 1 || k->block[2] < 1 || threads > 1024 ||
		    k->block[2] > 64)
			verr(&st, "block extents out of range", NULL, NULL);
		for (int d = 0; d < 3; d++)
			vgrid(&st, k->grid[d]);
		if (k->wait_hint < 0 || (k->wait_hint && m->arch_major < 9))
			verr(&st, "an mbarrier wait hint needs sm_90 and a positive value", NULL, NULL);
		if (k->pdl && m->arch_major < 9)
			verr(&st, "programmatic dependent launch (pdl) needs sm_90 or later", NULL, NULL);
		if (tinyc_gk_static_smem(k) > 48 * 1024)	/* CUDA's limit on static arrays */
			verr(&st, "static shared memory above 48 KiB (use the dynamic segment)", NULL, NULL);
		int64_t smem = tinyc_gk_static_smem(k) + k->dyn_smem;
		if (smem_limit > 0 && smem > smem_limit) {
			char a[64];
			snprintf(a, sizeof(a), "%" PRId64 " bytes", smem);
			verr(&st, "shared memory exceeds the device limit: ", a, NULL);
		}
		for (int p = 0; p < k->nparam; p++)
			if (k->params[p] < 0 || k->params[p] >= k->nvar || !k->vars[k->params[p]].is_param)
				verr(&st, "parameter list names a non-parameter", NULL, NULL);
		for (int v = 0; v < k->nvar; v++) {
			const tinyc_gvar *x = &k->vars[v];
			if (x->kind == TINYC_GV_PARAM_INT && tinyc_dtype_is_float(x->dtype))
				verr(&st, "integer parameter with a float dtype: ", x->name, NULL);
			if (x->kind == TINYC_GV_SHARED && (x->count < 1 || (x->align & (x->align - 1))))
				verr(&st, "bad shared array: ", x->name, NULL);
			if (x->kind == TINYC_GV_PARAM_PTR && x->buf >= m->nbuf)
				verr(&st, "pointer parameter names no buffer: ", x->name, NULL);
			if (x->kind == TINYC_GV_PARAM_TMAP && x->tmap) {
				const tinyc_gtmap *t = x->tmap;
				if (t->rank < 1 || t->rank > 5 || t->buf < 0 || t->buf >= m->nbuf)
					verr(&st, "tensor map with a bad rank or buffer: ", x->name, NULL);
				else if (!tinyc_gx_is_int(t->stride[0], 1))
					verr(&st, "tensor map's innermost stride is not 1: ", x->name, NULL);
				if (t->swizzle != 0 && t->swizzle != 32 && t->swizzle != 64 && t->swizzle != 128)
					verr(&st, "tensor map swizzle must be 0, 32, 64 or 128 bytes: ", x->name, NULL);
				for (int d = 0; d < t->rank && d < 5; d++) {
					vgrid(&st, t->dim[d]);
					vgrid(&st, t->stride[d]);
					if (t->box[d] < 1 || t->box[d] > 256)
						verr(&st, "tensor map box extents are 1..256: ", x->name, NULL);
				}
				vgrid(&st, t->offset);
				if (t->rank >= 1 && t->swizzle && t->box[0] * tinyc_dtype_size(t->dtype) > t->swizzle)
					verr(&st, "tensor map box row is wider than its swizzle span: ", x->name, NULL);
			}
		}
		if (!k->body || k->body->op != TINYC_GS_BLOCK)
			verr(&st, "kernel body is not a block", NULL, NULL);
		else
			vstmt(&st, k->body, 0);
		free(st.defined);
		free(st.taint);
		free(st.scope);
		bad |= st.errors > 0;
	}
	return bad ? -1 : 0;
}
