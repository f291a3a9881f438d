/* GPU IR: the operator tables and the deterministic text dump (--dump-stage=gpuir).  See
 * ir/gpuir.h; the builder is ir/gpuir_build.c, the verifier ir/gpuir_verify.c.
 *
 * Dump format:
 *
 *   gpuir target sm_80
 *   bound M = 64                                  compile-time symbol values
 *   buffer X: input 0, half[M,K] (node 0)         module buffers: role, index, dtype, shape
 *
 *   // k0_Y: %13 -> Y (map tile [1x128] ...)      the kernel's comment
 *   kernel k0_Y(const half *X = X, ..., long M = M)   parameters (= buffer / = symbol)
 *     grid (E, E, E) block (128, 1, 1) smem S dyn D index long
 *     shared NAME: float[8] align 4 [dynamic @OFF]
 *     pipeline NAME: cp.async, 3 stages
 *   {
 *     decl v: float = E             decl a: uint[4] fill E      v = E
 *     for c: long = INIT while COND step STEP [unroll N] { ... }
 *     if COND { ... } else { ... }
 *     store A[E] = E [if P]         atomic.add A[E], E [if P]   barrier
 *     v = shfl.xor(E, LANE, WIDTH)  copy x4 S[E] <- G[E] if P else 0   cp.async x8 ...
 *     cp.async.commit   cp.async.wait N   ldmatrix.x4[.trans] R[E] <- S[E]
 *     mma.m16n8k16 D[E] = A[E] * B[E] + C[E]   mbarrier.init/expect_tx/arrive/wait ...
 *     tma.load.2d S[E] <- MAP(c0, c1) mbarrier B[E]   fence.proxy.async   // comment
 *   }
 *
 * Expressions print in C precedence with casts as cast<T>(E), predicated loads as
 * load(A[E] if P else 0), floor division / min / max as calls, constants of types other
 * than int, long, float and bool with a ":type" suffix. */
#include "ir/gpuir.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------- names ---- */

/* One row of the expression operator table. */
typedef struct gx_info {
	const char *name;	/* dump name */
	const char *spelling;	/* C infix/prefix spelling, or NULL */
	int prec;		/* C precedence */
	int nargs;		/* required operands */
} gx_info;

static const gx_info gx_table[TINYC_GX_OP_COUNT] = {
#define X(e, name, spelling, prec, nargs) {name, spelling, prec, nargs},
	TINYC_GX_OPS(X)
#undef X
};

static const char *const gs_names[TINYC_GS_OP_COUNT] = {
	"block", "for", "if", "decl", "assign", "store", "atomic", "barrier", "shfl", "copy",
	"cp.async.commit", "cp.async.wait", "ldmatrix", "mma", "mbarrier.init",
	"mbarrier.expect_tx", "mbarrier.arrive", "mbarrier.wait", "tma.load", "fence", "comment",
	"wgmma.fence", "wgmma", "wgmma.commit", "wgmma.wait", "setmaxnreg", "syncwarp",
	"tma.prefetch", "tma.store", "bulk.commit", "bulk.wait",
};

static const char *const special_names[TINYC_GSP_COUNT] = {
	"threadIdx.x", "threadIdx.y", "threadIdx.z", "blockIdx.x", "blockIdx.y", "blockIdx.z",
	"blockDim.x", "blockDim.y", "blockDim.z", "gridDim.x", "gridDim.y", "gridDim.z",
	"lane", "warp",
};

const char *tinyc_gx_op_name(tinyc_gx_op op)
{
	return op >= 0 && op < TINYC_GX_OP_COUNT ? gx_table[op].name : "?";
}

const char *tinyc_gx_op_spelling(tinyc_gx_op op)
{
	return op >= 0 && op < TINYC_GX_OP_COUNT ? gx_table[op].spelling : NULL;
}

int tinyc_gx_op_prec(tinyc_gx_op op)
{
	return op >= 0 && op < TINYC_GX_OP_COUNT ? gx_table[op].prec : 13;
}

int tinyc_gx_op_nargs(tinyc_gx_op op)
{
	return op >= 0 && op < TINYC_GX_OP_COUNT ? gx_table[op].nargs : 0;
}

const char *tinyc_gs_op_name(tinyc_gs_op op)
{
	return op >= 0 && op < TINYC_GS_OP_COUNT ? gs_names[op] : "?";
}

const char *tinyc_gspecial_name(tinyc_gspecial s)
{
	return s >= 0 && s < TINYC_GSP_COUNT ? special_names[s] : "?";
}

/* ---------------------------------------------------------------- printing ---- */

/* Print a constant of dtype dt so that it reads back exactly (plus inf/nan spellings). */
static void print_double(tinyc_buf *out, double v, tinyc_dtype dt)
{
	if (isnan(v))
		tinyc_buf_puts(out, "nan");
	else if (isinf(v))
		tinyc_buf_puts(out, v < 0 ? "-inf" : "inf");
	else {
		char tmp[40];
		snprintf(tmp, sizeof(tmp), "%.9g", v);
		if (dt == TINYC_DOUBLE && strtod(tmp, NULL) != v)
			snprintf(tmp, sizeof(tmp), "%.17g", v);
		tinyc_buf_puts(out, tmp);
		if (!strpbrk(tmp, ".eE"))
			tinyc_buf_puts(out, ".0");
	}
}

/* Print e in the dump syntax; parenthesise when its precedence is below `outer`. */
static void print_expr_prec(const tinyc_gkernel *k, const tinyc_gexpr *e, int outer,
			    tinyc_buf *out)
{
	if (!e) {
		tinyc_buf_puts(out, "<null>");
		return;
	}
	int p = tinyc_gx_op_prec(e->op);
	int paren = p < outer;
	if (paren)
		tinyc_buf_putc(out, '(');
	const char *op = tinyc_gx_op_spelling(e->op);
	switch (e->op) {
	case TINYC_GX_INT:
		if (e->dtype == TINYC_BOOL)
			tinyc_buf_puts(out, e->ival ? "true" : "false");
		else if (e->dtype == TINYC_INT || e->dtype == TINYC_LONG)
			tinyc_buf_printf(out, "%" PRId64, e->ival);
		else if (!tinyc_dtype_is_signed(e->dtype))
			tinyc_buf_printf(out, "%" PRIu64 ":%s", (uint64_t)e->ival, tinyc_dtype_name(e->dtype));
		else
			tinyc_buf_printf(out, "%" PRId64 ":%s", e->ival, tinyc_dtype_name(e->dtype));
		break;
	case TINYC_GX_FLOAT:
		print_double(out, e->fval, e->dtype);
		if (e->dtype != TINYC_FLOAT)
			tinyc_buf_printf(out, ":%s", tinyc_dtype_name(e->dtype));
		break;
	case TINYC_GX_VAR:
		tinyc_buf_puts(out, k && e->var >= 0 && e->var < k->nvar ? k->vars[e->var].name : "?");
		break;
	case TINYC_GX_SYM:
		if (k && e->sym >= 0 && e->sym < k->mod->nsym)
			tinyc_buf_puts(out, k->mod->syms[e->sym]);
		else
			tinyc_buf_printf(out, "sym%d", e->sym);
		break;
	case TINYC_GX_SPECIAL:
		tinyc_buf_puts(out, tinyc_gspecial_name(e->special));
		break;
	case TINYC_GX_LOAD:
		if (e->arg[1]) {
			tinyc_buf_puts(out, "load(");
			tinyc_buf_puts(out, k && e->var >= 0 ? k->vars[e->var].name : "?");
			tinyc_buf_puts(out, "[");
			print_expr_prec(k, e->arg[0], 0, out);
			tinyc_buf_puts(out, "] if ");
			print_expr_prec(k, e->arg[1], 0, out);
			tinyc_buf_puts(out, " else 0)");
		} else {
			tinyc_buf_puts(out, k && e->var >= 0 ? k->vars[e->var].name : "?");
			tinyc_buf_putc(out, '[');
			print_expr_prec(k, e->arg[0], 0, out);
			tinyc_buf_putc(out, ']');
		}
		break;
	case TINYC_GX_NEG:
	case TINYC_GX_NOT:
	case TINYC_GX_BITNOT:
		tinyc_buf_puts(out, op);
		print_expr_prec(k, e->arg[0], p, out);
		break;
	case TINYC_GX_FLOORDIV:
	case TINYC_GX_MIN:
	case TINYC_GX_MAX:
		tinyc_buf_printf(out, "%s(", tinyc_gx_op_name(e->op));
		print_expr_prec(k, e->arg[0], 0, out);
		tinyc_buf_puts(out, ", ");
		print_expr_prec(k, e->arg[1], 0, out);
		tinyc_buf_putc(out, ')');
		break;
	case TINYC_GX_SELECT:
		print_expr_prec(k, e->arg[0], p + 1, out);
		tinyc_buf_puts(out, " ? ");
		print_expr_prec(k, e->arg[1], p + 1, out);
		tinyc_buf_puts(out, " : ");
		print_expr_prec(k, e->arg[2], p, out);
		break;
	case TINYC_GX_CAST:
	case TINYC_GX_BITCAST:
		tinyc_buf_printf(out, "%s<%s>(", e->op == TINYC_GX_CAST ? "cast" : "bitcast",
				 tinyc_dtype_name(e->dtype));
		print_expr_prec(k, e->arg[0], 0, out);
		tinyc_buf_putc(out, ')');
		break;
	case TINYC_GX_CALL:
		tinyc_buf_printf(out, "%s(", tinyc_gmath_name(e->math));
		for (int i = 0; i < 3 && e->arg[i]; i++) {
			if (i)
				tinyc_buf_puts(out, ", ");
			print_expr_prec(k, e->arg[i], 0, out);
		}
		tinyc_buf_putc(out, ')');
		break;
	default:
		if (op) {
			/* left-associative: the right operand needs parentheses at equal precedence */
			print_expr_prec(k, e->arg[0], p, out);
			tinyc_buf_printf(out, " %s ", op);
			print_expr_prec(k, e->arg[1], p + 1, out);
		} else {
			tinyc_buf_printf(out, "%s(?)", tinyc_gx_op_name(e->op));
		}
		break;
	}
	if (paren)
		tinyc_buf_putc(out, ')');
}

void tinyc_gpu_print_expr(const tinyc_gkernel *k, const tinyc_gexpr *e, tinyc_buf *out)
{
	print_expr_prec(k, e, 0, out);
}

static void indent(tinyc_buf *out, int depth)
{
	for (int i = 0; i < depth; i++)
		tinyc_buf_puts(out, "  ");
}

/* Name of variable v, or "?" */
static const char *vname(const tinyc_gkernel *k, int v)
{
	return v >= 0 && v < k->nvar ? k->vars[v].name : "?";
}

/* Print "var[index]". */
static void print_ref(const tinyc_gkernel *k, const tinyc_gref *r, tinyc_buf *out)
{
	tinyc_buf_puts(out, vname(k, r->var));
	if (r->index) {
		tinyc_buf_putc(out, '[');
		tinyc_gpu_print_expr(k, r->index, out);
		tinyc_buf_putc(out, ']');
	}
}

/* The box coordinates of a TMA statement, comma-separated. */
static void print_coords(const tinyc_gkernel *k, const tinyc_gstmt *s, tinyc_buf *out)
{
	for (int i = 0; i < s->n; i++) {
		if (i)
			tinyc_buf_puts(out, ", ");
		tinyc_gpu_print_expr(k, s->coord[i], out);
	}
}

static const char *atomic_name(tinyc_gatomic a)
{
	return a == TINYC_GA_ADD ? "add" : a == TINYC_GA_MAX ? "max" : "min";
}

static const char *shfl_name(tinyc_gshfl s)
{
	static const char *const n[] = {"idx", "up", "down", "xor"};
	return s >= 0 && s <= TINYC_GSHFL_XOR ? n[s] : "?";
}

static const char *fence_name(tinyc_gfence f)
{
	static const char *const n[] = {"block", "global", "proxy.async", "mbarrier_init",
					"grid.wait", "grid.launch"};
	return f >= 0 && f <= TINYC_GF_GRID_LAUNCH ? n[f] : "?";
}

/* Print a statement (and its children) at the given depth. */
static void print_stmt(const tinyc_gkernel *k, const tinyc_gstmt *s, int depth, tinyc_buf *out)
{
	if (!s) {
		indent(out, depth);
		tinyc_buf_puts(out, "<null>\n");
		return;
	}
	if (s->op != TINYC_GS_BLOCK)
		indent(out, depth);
	switch (s->op) {
	case TINYC_GS_BLOCK:
		for (int i = 0; i < s->nstmts; i++)
			print_stmt(k, s->stmts[i], depth, out);
		return;
	case TINYC_GS_FOR:
		tinyc_buf_printf(out, "for %s: %s = ", vname(k, s->dst.var),
				 s->dst.var >= 0 && s->dst.var < k->nvar
					 ? tinyc_dtype_name(k->vars[s->dst.var].dtype) : "?");
		tinyc_gpu_print_expr(k, s->init, out);
		tinyc_buf_puts(out, " while ");
		tinyc_gpu_print_expr(k, s->cond, out);
		tinyc_buf_puts(out, " step ");
		tinyc_gpu_print_expr(k, s->step, out);
		if (s->unroll == -1)
			tinyc_buf_puts(out, " unroll");
		else if (s->unroll > 0)
			tinyc_buf_printf(out, " unroll %d", s->unroll);
		tinyc_buf_puts(out, " {\n");
		print_stmt(k, s->body, depth + 1, out);
		indent(out, depth);
		tinyc_buf_puts(out, "}\n");
		return;
	case TINYC_GS_IF:
		tinyc_buf_puts(out, "if ");
		tinyc_gpu_print_expr(k, s->cond, out);
		tinyc_buf_puts(out, " {\n");
		print_stmt(k, s->body, depth + 1, out);
		if (s->else_body) {
			indent(out, depth);
			tinyc_buf_puts(out, "} else {\n");
			print_stmt(k, s->else_body, depth + 1, out);
		}
		indent(out, depth);
		tinyc_buf_puts(out, "}\n");
		return;
	case TINYC_GS_DECL: {
		const tinyc_gvar *v = s->dst.var >= 0 && s->dst.var < k->nvar ? &k->vars[s->dst.var] : NULL;
		tinyc_buf_printf(out, "decl %s: %s", vname(k, s->dst.var),
				 v ? tinyc_dtype_name(v->dtype) : "?");
		if (v && v->kind == TINYC_GV_REG_ARRAY)
			tinyc_buf_printf(out, "[%" PRId64 "]", v->count);
		if (s->value) {
			tinyc_buf_puts(out, v && v->kind == TINYC_GV_REG_ARRAY ? " fill " : " = ");
			tinyc_gpu_print_expr(k, s->value, out);
		}
		break;
	}
	case TINYC_GS_ASSIGN:
		tinyc_buf_printf(out, "%s = ", vname(k, s->dst.var));
		tinyc_gpu_print_expr(k, s->value, out);
		break;
	case TINYC_GS_STORE:
	case TINYC_GS_ATOMIC:
		if (s->op == TINYC_GS_STORE)
			tinyc_buf_puts(out, "store ");
		else if (s->old >= 0)
			tinyc_buf_printf(out, "%s = atomic.%s ", vname(k, s->old), atomic_name(s->atomic_op));
		else
			tinyc_buf_printf(out, "atomic.%s ", atomic_name(s->atomic_op));
		print_ref(k, &s->dst, out);
		tinyc_buf_puts(out, s->op == TINYC_GS_STORE ? " = " : ", ");
		tinyc_gpu_print_expr(k, s->value, out);
		if (s->pred) {
			tinyc_buf_puts(out, " if ");
			tinyc_gpu_print_expr(k, s->pred, out);
		}
		break;
	case TINYC_GS_BARRIER:
		tinyc_buf_puts(out, s->flag ? "cluster.barrier" : "barrier");
		break;
	case TINYC_GS_SHFL:
		tinyc_buf_printf(out, "%s = shfl.%s(", vname(k, s->dst.var), shfl_name(s->shfl));
		tinyc_gpu_print_expr(k, s->value, out);
		tinyc_buf_puts(out, ", ");
		tinyc_gpu_print_expr(k, s->cond, out);
		tinyc_buf_printf(out, ", %d)", s->n);
		break;
	case TINYC_GS_COPY:
		tinyc_buf_printf(out, "%s x%d ", s->async == 2 ? "cp.async.ca" : s->async ? "cp.async" : "copy", s->n);
		print_ref(k, &s->dst, out);
		tinyc_buf_puts(out, " <- ");
		print_ref(k, &s->src, out);
		if (s->value) {
			tinyc_buf_puts(out, " of cta ");
			tinyc_gpu_print_expr(k, s->value, out);
		}
		if (s->pred) {
			tinyc_buf_puts(out, " if ");
			tinyc_gpu_print_expr(k, s->pred, out);
			tinyc_buf_puts(out, " else 0");
		}
		break;
	case TINYC_GS_CP_COMMIT:
		tinyc_buf_puts(out, "cp.async.commit");
		break;
	case TINYC_GS_CP_WAIT:
		tinyc_buf_printf(out, "cp.async.wait %d", s->n);
		break;
	case TINYC_GS_LDMATRIX:
		tinyc_buf_printf(out, "ldmatrix.x%d%s ", s->n, s->trans ? ".trans" : "");
		print_ref(k, &s->dst, out);
		tinyc_buf_puts(out, " <- ");
		print_ref(k, &s->src, out);
		break;
	case TINYC_GS_MMA:
		tinyc_buf_puts(out, s->src.var >= 0 && s->src.var < k->nvar &&
					    k->vars[s->src.var].dtype == TINYC_FLOAT ? "mma.m16n8k8.tf32 "
										  : "mma.m16n8k16 ");
		print_ref(k, &s->dst, out);
		tinyc_buf_puts(out, " = ");
		print_ref(k, &s->src, out);
		tinyc_buf_puts(out, " * ");
		print_ref(k, &s->src2, out);
		tinyc_buf_puts(out, " + ");
		print_ref(k, &s->src3, out);
		break;
	case TINYC_GS_MBAR_INIT:
		tinyc_buf_puts(out, "mbarrier.init ");
		print_ref(k, &s->dst, out);
		tinyc_buf_printf(out, ", %d", s->n);
		break;
	case TINYC_GS_MBAR_EXPECT_TX:
	case TINYC_GS_MBAR_WAIT:
		tinyc_buf_printf(out, "%s ", tinyc_gs_op_name(s->op));
		print_ref(k, &s->dst, out);
		tinyc_buf_puts(out, s->op == TINYC_GS_MBAR_WAIT ? ", parity " : ", bytes ");
		tinyc_gpu_print_expr(k, s->value, out);
		if (s->op == TINYC_GS_MBAR_EXPECT_TX && s->flag)
			tinyc_buf_puts(out, " (no arrival)");
		break;
	case TINYC_GS_MBAR_ARRIVE:
		tinyc_buf_puts(out, "mbarrier.arrive ");
		print_ref(k, &s->dst, out);
		if (s->value) {
			tinyc_buf_puts(out, " of cta ");
			tinyc_gpu_print_expr(k, s->value, out);
		}
		break;
	case TINYC_GS_TMA_LOAD:
		tinyc_buf_printf(out, "tma.load.%dd ", s->n);
		print_ref(k, &s->dst, out);
		tinyc_buf_printf(out, " <- %s(", vname(k, s->src.var));
		print_coords(k, s, out);
		tinyc_buf_puts(out, ") mbarrier ");
		print_ref(k, &s->src2, out);
		if (s->flag)
			tinyc_buf_printf(out, " multicast 0x%x", (unsigned)s->flag);
		break;
	case TINYC_GS_FENCE:
		tinyc_buf_printf(out, "fence.%s", fence_name(s->fence));
		break;
	case TINYC_GS_TMAP_PREFETCH:
		tinyc_buf_printf(out, "tma.prefetch %s", vname(k, s->src.var));
		break;
	case TINYC_GS_TMA_STORE:
		tinyc_buf_printf(out, "tma.store.%dd %s(", s->n, vname(k, s->dst.var));
		print_coords(k, s, out);
		tinyc_buf_puts(out, ") <- ");
		print_ref(k, &s->src, out);
		break;
	case TINYC_GS_BULK_COMMIT:
		tinyc_buf_puts(out, "bulk.commit");
		break;
	case TINYC_GS_BULK_WAIT:
		tinyc_buf_printf(out, "bulk.wait.read %d", s->n);
		break;
	case TINYC_GS_COMMENT:
		tinyc_buf_printf(out, "// %s", s->text ? s->text : "");
		break;
	case TINYC_GS_WGMMA_FENCE:
	case TINYC_GS_WGMMA_COMMIT:
	case TINYC_GS_SYNCWARP:
		tinyc_buf_puts(out, tinyc_gs_op_name(s->op));
		break;
	case TINYC_GS_WGMMA_WAIT:
		tinyc_buf_printf(out, "wgmma.wait %d", s->n);
		if (s->dst.var >= 0)
			tinyc_buf_printf(out, " (orders %s)", vname(k, s->dst.var));
		break;
	case TINYC_GS_SETMAXNREG:
		tinyc_buf_printf(out, "setmaxnreg.%s %d", s->flag ? "inc" : "dec", s->n);
		break;
	case TINYC_GS_WGMMA:
		tinyc_buf_printf(out, "wgmma.m64n%dk16 ", s->n);
		print_ref(k, &s->dst, out);
		tinyc_buf_puts(out, s->value ? " = " : " += ");
		print_ref(k, &s->src, out);
		if (s->src.var >= 0 && k->vars[s->src.var].kind == TINYC_GV_REG_ARRAY) {
			tinyc_buf_puts(out, " (registers) * ");
		} else {
			tinyc_buf_printf(out, " (%s", s->wg_a.k_major ? "k-major" : "m-major");
			if (!s->wg_a.k_major)
				tinyc_buf_printf(out, ", blocks %d B", s->wg_a.mn_block);
			tinyc_buf_puts(out, ", swizzle 128 B) * ");
		}
		print_ref(k, &s->src2, out);
		tinyc_buf_printf(out, " (%s", s->wg_b.k_major ? "k-major" : "n-major");
		if (!s->wg_b.k_major)
			tinyc_buf_printf(out, ", blocks %d B", s->wg_b.mn_block);
		tinyc_buf_puts(out, ", swizzle 128 B)");
		if (s->value) {
			tinyc_buf_puts(out, " + (");
			tinyc_gpu_print_expr(k, s->value, out);
			tinyc_buf_puts(out, " ? ");
			print_ref(k, &s->dst, out);
			tinyc_buf_puts(out, " : 0)");
		}
		break;
	default:
		tinyc_buf_printf(out, "<stmt %d>", (int)s->op);
		break;
	}
	if (s->pipe >= 0 && s->pipe < k->npipe)
		tinyc_buf_printf(out, " [pipe %s]", k->pipes[s->pipe].name);
	tinyc_buf_putc(out, '\n');
}

/* Print a shape with symbol names. */
static void print_dims(const tinyc_gpu_module *m, int rank, const tinyc_dim *d, tinyc_buf *out)
{
	tinyc_buf_putc(out, '[');
	for (int i = 0; i < rank; i++) {
		if (i)
			tinyc_buf_putc(out, ',');
		if (d[i].sym >= 0 && d[i].sym < m->nsym)
			tinyc_buf_puts(out, m->syms[d[i].sym]);
		else
			tinyc_buf_printf(out, "%" PRId64, d[i].val);
	}
	tinyc_buf_putc(out, ']');
}

static const char *role_name(tinyc_gbuf_role r)
{
	return r == TINYC_GB_INPUT ? "input" : r == TINYC_GB_OUTPUT ? "output" : "temp";
}

/* Print one variable declaration line of the kernel header. */
static void print_var_decl(const tinyc_gpu_module *m, const tinyc_gvar *v, tinyc_buf *out)
{
	switch (v->kind) {
	case TINYC_GV_PARAM_PTR:
		tinyc_buf_printf(out, "%s%s *%s", v->is_const ? "const " : "", tinyc_dtype_name(v->dtype),
				 v->name);
		if (v->buf >= 0 && v->buf < m->nbuf)
			tinyc_buf_printf(out, " = %s", m->bufs[v->buf].name);
		break;
	case TINYC_GV_PARAM_INT:
		tinyc_buf_printf(out, "%s %s", tinyc_dtype_name(v->dtype), v->name);
		if (v->sym >= 0 && v->sym < m->nsym)
			tinyc_buf_printf(out, " = %s", m->syms[v->sym]);
		break;
	case TINYC_GV_PARAM_TMAP:
		tinyc_buf_printf(out, "tensormap %s", v->name);
		if (v->tmap) {
			const tinyc_gtmap *t = v->tmap;
			const tinyc_gkernel *k0 = m->nkernel ? m->kernels[0] : NULL;
			if (t->buf >= 0 && t->buf < m->nbuf)
				tinyc_buf_printf(out, " = %s", m->bufs[t->buf].name);
			tinyc_buf_printf(out, " %s[", tinyc_dtype_name(t->dtype));
			for (int i = 0; k0 && i < t->rank; i++) {
				if (i)
					tinyc_buf_puts(out, ", ");
				tinyc_gpu_print_expr(k0, t->dim[i], out);
			}
			tinyc_buf_puts(out, "] strides [");
			for (int i = 0; k0 && i < t->rank; i++) {
				if (i)
					tinyc_buf_puts(out, ", ");
				tinyc_gpu_print_expr(k0, t->stride[i], out);
			}
			tinyc_buf_puts(out, "] box [");
			for (int i = 0; i < t->rank; i++)
				tinyc_buf_printf(out, "%s%d", i ? ", " : "", t->box[i]);
			tinyc_buf_printf(out, "] swizzle %d", t->swizzle);
			if (k0 && !tinyc_gx_is_int(t->offset, 0)) {
				tinyc_buf_puts(out, " offset ");
				tinyc_gpu_print_expr(k0, t->offset, out);
			}
		}
		break;
	default:
		break;
	}
}

void tinyc_gpu_print(const tinyc_gpu_module *m, tinyc_buf *out)
{
	tinyc_buf_printf(out, "gpuir target %s\n", m->target);
	for (int s = 0; s < m->nsym; s++)
		if (m->sym_bound && m->sym_bound[s] >= 0)
			tinyc_buf_printf(out, "bound %s = %" PRId64 "\n", m->syms[s], m->sym_bound[s]);
	for (int i = 0; i < m->nbuf; i++) {
		const tinyc_gbuf *b = &m->bufs[i];
		tinyc_buf_printf(out, "buffer %s: %s %d, %s", b->name, role_name(b->role), b->index,
				 tinyc_dtype_name(b->dtype));
		print_dims(m, b->rank, b->shape, out);
		if (b->has_strides) {
			tinyc_buf_puts(out, " strides ");
			print_dims(m, b->rank, b->strides, out);
		}
		if (b->node >= 0)
			tinyc_buf_printf(out, " (node %d)", b->node);
		tinyc_buf_putc(out, '\n');
	}
	for (int i = 0; i < m->nkernel; i++) {
		const tinyc_gkernel *k = m->kernels[i];
		tinyc_buf_putc(out, '\n');
		if (k->comment)
			tinyc_buf_printf(out, "// %s\n", k->comment);
		tinyc_buf_printf(out, "kernel %s(", k->name);
		for (int p = 0; p < k->nparam; p++) {
			if (p)
				tinyc_buf_puts(out, ", ");
			print_var_decl(m, &k->vars[k->params[p]], out);
		}
		tinyc_buf_puts(out, ")\n  grid (");
		for (int d = 0; d < 3; d++) {
			if (d)
				tinyc_buf_puts(out, ", ");
			tinyc_gpu_print_expr(k, k->grid[d], out);
		}
		tinyc_buf_printf(out, ") block (%d, %d, %d) smem %" PRId64 " dyn %" PRId64 " index %s\n",
				 k->block[0], k->block[1], k->block[2], tinyc_gk_static_smem(k),
				 k->dyn_smem, tinyc_dtype_name(k->index_dtype));
		if (k->cluster_x > 1)
			tinyc_buf_printf(out, "  cluster (%d, 1, 1)\n", k->cluster_x);
		if (k->pdl)
			tinyc_buf_puts(out, "  pdl\n");
		if (k->wait_hint)
			tinyc_buf_printf(out, "  wait_hint %d ns\n", k->wait_hint);
		for (int v = 0; v < k->nvar; v++) {
			const tinyc_gvar *x = &k->vars[v];
			if (x->kind != TINYC_GV_SHARED)
				continue;
			tinyc_buf_printf(out, "  shared %s: %s[%" PRId64 "] align %d", x->name,
					 tinyc_dtype_name(x->dtype), x->count, x->align);
			if (x->dynamic)
				tinyc_buf_printf(out, " dynamic @%" PRId64, x->offset);
			tinyc_buf_putc(out, '\n');
		}
		for (int p = 0; p < k->npipe; p++)
			tinyc_buf_printf(out, "  pipeline %s: %s, %d stages\n", k->pipes[p].name,
					 k->pipes[p].kind == TINYC_GPIPE_TMA ? "tma" : "cp.async",
					 k->pipes[p].stages);
		tinyc_buf_puts(out, "{\n");
		print_stmt(k, k->body, 1, out);
		tinyc_buf_puts(out, "}\n");
	}
}
