/* GPU IR -> CUDA C text (seed 002 §7), and the "cuda" pass.
 *
 * The text starts with the headers (cuda_fp16.h, cuda_bf16.h) and a few helpers (floor
 * division, saturating float -> 8/16-bit integer conversions, lane/warp ids, atomic max
 * on floats); then every kernel, preceded by
 *   // kernel NAME: grid (gx, gy, gz), block (bx, by, bz), smem N bytes
 * and declared extern "C" __global__ with __launch_bounds__.  Arithmetic on 8/16-bit
 * integers is wrapped back to its type (C promotes it to int); 16-bit floats convert with
 * the round-to-nearest intrinsics; warp-level and asynchronous operations are inline PTX.
 * Output is deterministic: the same module gives the same bytes.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/gpu.h"

/* The CUDA spelling of a dtype. */
static const char *ctype(tinyc_dtype t)
{
	switch (t) {
	case TINYC_BOOL: return "bool";
	case TINYC_CHAR: return "signed char";
	case TINYC_UCHAR: return "unsigned char";
	case TINYC_SHORT: return "short";
	case TINYC_USHORT: return "unsigned short";
	case TINYC_INT: return "int";
	case TINYC_UINT: return "unsigned int";
	case TINYC_LONG: return "long long";
	case TINYC_ULONG: return "unsigned long long";
	case TINYC_HALF: return "__half";
	case TINYC_BFLOAT16: return "__nv_bfloat16";
	case TINYC_FLOAT: return "float";
	case TINYC_DOUBLE: return "double";
	default: return "void";
	}
}

/* Whether C arithmetic on t promotes (8/16-bit integers and bool). */
static int narrow_int(tinyc_dtype t)
{
	return t == TINYC_CHAR || t == TINYC_UCHAR || t == TINYC_SHORT || t == TINYC_USHORT ||
	       t == TINYC_BOOL;
}

static int is16f(tinyc_dtype t)
{
	return t == TINYC_HALF || t == TINYC_BFLOAT16;
}

/* Printer state. */
typedef struct cprint {
	const tinyc_gpu_module *m;
	const tinyc_gkernel *k;
	tinyc_buf *out;
	int tmp;		/* counter for unique local names */
} cprint;

static void cexpr(cprint *p, const tinyc_gexpr *e);

/* A float constant of dtype t. */
static void cfloat(cprint *p, tinyc_dtype t, double v)
{
	tinyc_buf *o = p->out;
	if (is16f(t)) {
		tinyc_buf_puts(o, t == TINYC_HALF ? "__float2half_rn(" : "__float2bfloat16_rn(");
		cfloat(p, TINYC_FLOAT, v);
		tinyc_buf_putc(o, ')');
		return;
	}
	int dbl = t == TINYC_DOUBLE;
	if (isnan(v)) {
		tinyc_buf_puts(o, dbl ? "__longlong_as_double(0x7ff8000000000000ll)" : "__int_as_float(0x7fc00000)");
	} else if (isinf(v)) {
		if (dbl)
			tinyc_buf_puts(o, v > 0 ? "__longlong_as_double(0x7ff0000000000000ll)"
						: "__longlong_as_double((long long)0xfff0000000000000ull)");
		else
			tinyc_buf_puts(o, v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float((int)0xff800000u)");
	} else {
		char tmp[48];
		if (dbl)
			snprintf(tmp, sizeof(tmp), "%.17g", v);
		else
			snprintf(tmp, sizeof(tmp), "%.9g", (double)(float)v);
		if (!strpbrk(tmp, ".eEn"))
			strcat(tmp, ".0");
		if (v < 0 || (v == 0 && signbit(v)))
			tinyc_buf_printf(o, "(%s%s)", tmp, dbl ? "" : "f");
		else
			tinyc_buf_printf(o, "%s%s", tmp, dbl ? "" : "f");
	}
}

/* An integer constant of dtype t. */
static void cint(cprint *p, tinyc_dtype t, int64_t v)
{
	tinyc_buf *o = p->out;
	switch (t) {
	case TINYC_BOOL:
		tinyc_buf_puts(o, v ? "true" : "false");
		break;
	case TINYC_INT:
		if (v == INT32_MIN)
			tinyc_buf_puts(o, "(-2147483647 - 1)");
		else if (v < 0)
			tinyc_buf_printf(o, "(%" PRId64 ")", v);
		else
			tinyc_buf_printf(o, "%" PRId64, v);
		break;
	case TINYC_LONG:
		if (v == INT64_MIN)
			tinyc_buf_puts(o, "(-9223372036854775807ll - 1)");
		else if (v < 0)
			tinyc_buf_printf(o, "(%" PRId64 "ll)", v);
		else
			tinyc_buf_printf(o, "%" PRId64 "ll", v);
		break;
	case TINYC_UINT:
		tinyc_buf_printf(o, "%" PRIu64 "u", (uint64_t)v & 0xffffffffu);
		break;
	case TINYC_ULONG:
		tinyc_buf_printf(o, "%" PRIu64 "ull", (uint64_t)v);
		break;
	default:
		if (tinyc_dtype_is_float(t))
			cfloat(p, t, (double)v);
		else
			tinyc_buf_printf(o, "((%s)%" PRId64 ")", ctype(t), v);
		break;
	}
}

/* The zero of dtype t. */
static void czero(cprint *p, tinyc_dtype t)
{
	if (tinyc_dtype_is_float(t))
		cfloat(p, t, 0.0);
	else
		cint(p, t, 0);
}

/* Print e as an operand: atoms as they are, anything else in parentheses. */
static void coperand(cprint *p, const tinyc_gexpr *e)
{
	int atom = e && (e->op == TINYC_GX_VAR || e->op == TINYC_GX_LOAD || e->op == TINYC_GX_CALL ||
			 (e->op == TINYC_GX_FLOAT && (e->dtype == TINYC_FLOAT || e->dtype == TINYC_DOUBLE) &&
			  isfinite(e->fval) && !signbit(e->fval)) ||
			 (e->op == TINYC_GX_INT && e->ival >= 0 && e->dtype != TINYC_CHAR &&
			  e->dtype != TINYC_SHORT && e->dtype != TINYC_UCHAR && e->dtype != TINYC_USHORT));
	if (atom) {
		cexpr(p, e);
	} else {
		tinyc_buf_putc(p->out, '(');
		cexpr(p, e);
		tinyc_buf_putc(p->out, ')');
	}
}

/* A conversion of a (of dtype `from`) to dtype `to`. */
static void ccast(cprint *p, tinyc_dtype to, const tinyc_gexpr *a)
{
	tinyc_buf *o = p->out;
	tinyc_dtype from = a->dtype;
	if (from == to) {
		cexpr(p, a);
		return;
	}
	if (is16f(to)) {
		int h = to == TINYC_HALF;
		const char *fn;
		switch (from) {
		case TINYC_FLOAT: fn = h ? "__float2half_rn(" : "__float2bfloat16_rn("; break;
		case TINYC_DOUBLE: fn = h ? "__double2half(" : "__double2bfloat16("; break;
		case TINYC_LONG: fn = h ? "__ll2half_rn(" : "__ll2bfloat16_rn("; break;
		case TINYC_ULONG: fn = h ? "__ull2half_rn(" : "__ull2bfloat16_rn("; break;
		case TINYC_UINT: case TINYC_UCHAR: case TINYC_USHORT:
			fn = h ? "__uint2half_rn((unsigned int)" : "__uint2bfloat16_rn((unsigned int)"; break;
		case TINYC_HALF: case TINYC_BFLOAT16:
			tinyc_buf_puts(o, h ? "__float2half_rn(" : "__float2bfloat16_rn(");
			tinyc_buf_puts(o, from == TINYC_HALF ? "__half2float(" : "__bfloat162float(");
			cexpr(p, a);
			tinyc_buf_puts(o, "))");
			return;
		case TINYC_BOOL:
			fn = h ? "__float2half_rn((float)" : "__float2bfloat16_rn((float)"; break;
		default:
			fn = h ? "__int2half_rn((int)" : "__int2bfloat16_rn((int)"; break;
		}
		tinyc_buf_puts(o, fn);
		coperand(p, a);
		tinyc_buf_putc(o, ')');
		return;
	}
	if (is16f(from)) {
		const char *w = from == TINYC_HALF ? "__half2float(" : "__bfloat162float(";
		if (to == TINYC_FLOAT) {
			tinyc_buf_puts(o, w);
			cexpr(p, a);
			tinyc_buf_putc(o, ')');
			return;
		}
		if (to == TINYC_CHAR || to == TINYC_UCHAR || to == TINYC_SHORT || to == TINYC_USHORT) {
			static const char *const cv[] = {"tinyc_cvt_s8(", "tinyc_cvt_u8(", "tinyc_cvt_s16(", "tinyc_cvt_u16("};
			int i = to == TINYC_CHAR ? 0 : to == TINYC_UCHAR ? 1 : to == TINYC_SHORT ? 2 : 3;
			tinyc_buf_printf(o, "%s(double)%s", cv[i], w);
			cexpr(p, a);
			tinyc_buf_puts(o, "))");
			return;
		}
		tinyc_buf_printf(o, "((%s)%s", ctype(to), w);
		cexpr(p, a);
		tinyc_buf_puts(o, "))");
		return;
	}
	if (tinyc_dtype_is_float(from) && (to == TINYC_CHAR || to == TINYC_UCHAR || to == TINYC_SHORT ||
					   to == TINYC_USHORT)) {
		static const char *const cv[] = {"tinyc_cvt_s8(", "tinyc_cvt_u8(", "tinyc_cvt_s16(", "tinyc_cvt_u16("};
		int i = to == TINYC_CHAR ? 0 : to == TINYC_UCHAR ? 1 : to == TINYC_SHORT ? 2 : 3;
		tinyc_buf_printf(o, "%s(double)", cv[i]);
		coperand(p, a);
		tinyc_buf_putc(o, ')');
		return;
	}
	if (to == TINYC_BOOL) {
		tinyc_buf_puts(o, "(");
		coperand(p, a);
		tinyc_buf_puts(o, " != ");
		czero(p, from);
		tinyc_buf_puts(o, ")");
		return;
	}
	tinyc_buf_printf(o, "((%s)", ctype(to));
	coperand(p, a);
	tinyc_buf_putc(o, ')');
}

/* A bit reinterpretation of a as dtype to (same size). */
static void cbitcast(cprint *p, tinyc_dtype to, const tinyc_gexpr *a)
{
	tinyc_buf *o = p->out;
	tinyc_dtype from = a->dtype;
	const char *pre = NULL, *post = ")";
	if (from == TINYC_FLOAT)
		pre = to == TINYC_UINT ? "__float_as_uint(" : "__float_as_int(";
	else if (to == TINYC_FLOAT)
		pre = from == TINYC_UINT ? "__uint_as_float(" : "__int_as_float((int)";
	else if (from == TINYC_DOUBLE)
		pre = to == TINYC_ULONG ? "((unsigned long long)__double_as_longlong(" : "__double_as_longlong(",
		post = to == TINYC_ULONG ? "))" : ")";
	else if (to == TINYC_DOUBLE)
		pre = "__longlong_as_double((long long)";
	else if (from == TINYC_HALF && to == TINYC_BFLOAT16)
		pre = "__ushort_as_bfloat16(__half_as_ushort(", post = "))";
	else if (from == TINYC_BFLOAT16 && to == TINYC_HALF)
		pre = "__ushort_as_half(__bfloat16_as_ushort(", post = "))";
	else if (from == TINYC_HALF)
		pre = to == TINYC_USHORT ? "__half_as_ushort(" : "__half_as_short(";
	else if (from == TINYC_BFLOAT16)
		pre = to == TINYC_USHORT ? "__bfloat16_as_ushort(" : "__bfloat16_as_short(";
	else if (to == TINYC_HALF)
		pre = "__ushort_as_half((unsigned short)";
	else if (to == TINYC_BFLOAT16)
		pre = "__ushort_as_bfloat16((unsigned short)";
	if (pre) {
		tinyc_buf_puts(o, pre);
		cexpr(p, a);
		tinyc_buf_puts(o, post);
		return;
	}
	if (to == TINYC_BOOL) {	/* a byte as bool: nonzero */
		tinyc_buf_puts(o, "(");
		coperand(p, a);
		tinyc_buf_puts(o, " != 0)");
		return;
	}
	tinyc_buf_printf(o, "((%s)", ctype(to));	/* integers of one size: same bits */
	coperand(p, a);
	tinyc_buf_putc(o, ')');
}

/* Name of a variable. */
static const char *cvar(cprint *p, int v)
{
	return v >= 0 && v < p->k->nvar ? p->k->vars[v].name : "tinyc_bad_var";
}

/* Print a math call of dtype t. */
static void ccall(cprint *p, const tinyc_gexpr *e)
{
	tinyc_buf *o = p->out;
	tinyc_dtype t = e->dtype;
	const char *fn = e->math >= 0 && e->math < TINYC_GM_COUNT ? tinyc_gmath_name(e->math)
								  : "tinyc_bad_fn";
	if (e->math == TINYC_GM_RCP_APPROX) {	/* MUFU.RCP with its denormal scaling, no branch */
		if (is16f(t))
			tinyc_buf_puts(o, t == TINYC_HALF ? "__float2half_rn(" : "__float2bfloat16_rn(");
		tinyc_buf_puts(o, t == TINYC_DOUBLE ? "(1.0 / " : "__fdividef(1.0f, ");
		ccast(p, t == TINYC_DOUBLE ? TINYC_DOUBLE : TINYC_FLOAT, e->arg[0]);
		tinyc_buf_puts(o, is16f(t) ? "))" : ")");
		return;
	}
	if (e->math == TINYC_GM_EXP2_APPROX && t == TINYC_FLOAT) {	/* MUFU.EX2 alone */
		tinyc_buf_puts(o, "[](float x) { float y; asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x)); return y; }(");
		cexpr(p, e->arg[0]);
		tinyc_buf_putc(o, ')');
		return;
	}
	if (e->math == TINYC_GM_EXP2_APPROX)	/* other dtypes: the exact function */
		fn = "exp2";
	if (is16f(t)) {	/* through float */
		tinyc_buf_puts(o, t == TINYC_HALF ? "__float2half_rn(" : "__float2bfloat16_rn(");
		tinyc_buf_printf(o, "%sf(", fn);
		for (int i = 0; i < 3 && e->arg[i]; i++) {
			if (i)
				tinyc_buf_puts(o, ", ");
			ccast(p, TINYC_FLOAT, e->arg[i]);
		}
		tinyc_buf_puts(o, "))");
		return;
	}
	tinyc_buf_printf(o, "%s%s(", fn, t == TINYC_FLOAT ? "f" : "");
	for (int i = 0; i < 3 && e->arg[i]; i++) {
		if (i)
			tinyc_buf_puts(o, ", ");
		cexpr(p, e->arg[i]);
	}
	tinyc_buf_putc(o, ')');
}

/* Print an expression (C++ expression syntax, the value of dtype e->dtype). */
static void cexpr(cprint *p, const tinyc_gexpr *e)
{
	tinyc_buf *o = p->out;
	if (!e) {
		tinyc_buf_puts(o, "tinyc_null_expr");
		return;
	}
	const tinyc_gexpr *a = e->arg[0], *b = e->arg[1];
	switch (e->op) {
	case TINYC_GX_INT:
		cint(p, e->dtype, e->ival);
		return;
	case TINYC_GX_FLOAT:
		cfloat(p, e->dtype, e->fval);
		return;
	case TINYC_GX_VAR:
		tinyc_buf_puts(o, cvar(p, e->var));
		return;
	case TINYC_GX_SYM:
		if (e->sym >= 0 && e->sym < p->m->nsym)
			tinyc_buf_puts(o, p->m->syms[e->sym]);
		else
			tinyc_buf_puts(o, "tinyc_bad_sym");
		return;
	case TINYC_GX_SPECIAL: {
		static const char *const sp[TINYC_GSP_COUNT] = {
			"(int)threadIdx.x", "(int)threadIdx.y", "(int)threadIdx.z", "(int)blockIdx.x",
			"(int)blockIdx.y", "(int)blockIdx.z", "(int)blockDim.x", "(int)blockDim.y",
			"(int)blockDim.z", "(int)gridDim.x", "(int)gridDim.y", "(int)gridDim.z",
			"tinyc_lane()", "tinyc_warp()",
		};
		tinyc_buf_puts(o, e->special >= 0 && e->special < TINYC_GSP_COUNT ? sp[e->special] : "0");
		return;
	}
	case TINYC_GX_LOAD:
		if (b) {
			tinyc_buf_puts(o, "(");
			coperand(p, b);
			tinyc_buf_printf(o, " ? %s[", cvar(p, e->var));
			cexpr(p, a);
			tinyc_buf_puts(o, "] : ");
			czero(p, e->dtype);
			tinyc_buf_puts(o, ")");
		} else {
			tinyc_buf_printf(o, "%s[", cvar(p, e->var));
			cexpr(p, a);
			tinyc_buf_putc(o, ']');
		}
		return;
	case TINYC_GX_NEG:
	case TINYC_GX_BITNOT:
		if (narrow_int(e->dtype))
			tinyc_buf_printf(o, "(%s)", ctype(e->dtype));
		tinyc_buf_printf(o, "(%s", tinyc_gx_op_spelling(e->op));
		coperand(p, a);
		tinyc_buf_putc(o, ')');
		return;
	case TINYC_GX_NOT:
		tinyc_buf_puts(o, tinyc_gx_op_spelling(e->op));
		coperand(p, a);
		return;
	case TINYC_GX_FLOORDIV:
		tinyc_buf_puts(o, "tinyc_floordiv(");
		cexpr(p, a);
		tinyc_buf_puts(o, ", ");
		cexpr(p, b);
		tinyc_buf_putc(o, ')');
		return;
	case TINYC_GX_MIN:
	case TINYC_GX_MAX: {
		int mx = e->op == TINYC_GX_MAX;
		tinyc_dtype t = a->dtype;
		if (t == TINYC_BOOL) {
			coperand(p, a);
			tinyc_buf_puts(o, mx ? " || " : " && ");
			coperand(p, b);
			return;
		}
		const char *fn = t == TINYC_FLOAT ? (mx ? "fmaxf(" : "fminf(")
			       : t == TINYC_DOUBLE ? (mx ? "fmax(" : "fmin(")
			       : t == TINYC_HALF ? (mx ? "__hmax(" : "__hmin(")
			       : t == TINYC_BFLOAT16 ? (mx ? "__hmax(" : "__hmin(")
			       : (mx ? "max(" : "min(");
		if (narrow_int(t))
			tinyc_buf_printf(o, "(%s)%s(int)", ctype(t), fn);
		else
			tinyc_buf_puts(o, fn);
		coperand(p, a);
		tinyc_buf_puts(o, narrow_int(t) ? ", (int)" : ", ");
		coperand(p, b);
		tinyc_buf_putc(o, ')');
		return;
	}
	case TINYC_GX_SELECT:
		coperand(p, a);
		tinyc_buf_puts(o, " ? ");
		coperand(p, b);
		tinyc_buf_puts(o, " : ");
		coperand(p, e->arg[2]);
		return;
	case TINYC_GX_CAST:
		ccast(p, e->dtype, a);
		return;
	case TINYC_GX_BITCAST:
		cbitcast(p, e->dtype, a);
		return;
	case TINYC_GX_CALL:
		ccall(p, e);
		return;
	default:
		break;
	}
	const char *op = tinyc_gx_op_nargs(e->op) == 2 ? tinyc_gx_op_spelling(e->op) : NULL;
	if (!op) {
		tinyc_buf_puts(o, "tinyc_bad_op");
		return;
	}
	int wrap = narrow_int(e->dtype) && e->dtype != TINYC_BOOL;
	int bwrap = e->dtype == TINYC_BOOL && (e->op == TINYC_GX_AND || e->op == TINYC_GX_OR ||
					       e->op == TINYC_GX_XOR);
	if (wrap || bwrap)
		tinyc_buf_printf(o, "(%s)(", ctype(e->dtype));
	coperand(p, a);
	tinyc_buf_printf(o, " %s ", op);
	coperand(p, b);
	if (wrap || bwrap)
		tinyc_buf_putc(o, ')');
}

static void cindent(cprint *p, int depth)
{
	for (int i = 0; i < depth; i++)
		tinyc_buf_puts(p->out, "  ");
}

/* "&var[index]" (index 0 when the reference has none) */
static void caddr(cprint *p, const tinyc_gref *r)
{
	tinyc_buf_printf(p->out, "&%s[", cvar(p, r->var));
	if (r->index)
		cexpr(p, r->index);
	else
		tinyc_buf_putc(p->out, '0');
	tinyc_buf_putc(p->out, ']');
}

/* "(unsigned)__cvta_generic_to_shared(&var[index])" */
static void csmem_addr(cprint *p, const tinyc_gref *r)
{
	tinyc_buf_puts(p->out, "(unsigned)__cvta_generic_to_shared(");
	caddr(p, r);
	tinyc_buf_putc(p->out, ')');
}

/* The box coordinates of a TMA statement as asm operands: `, "r"((int)(c))` each. */
static void tma_coords(cprint *p, const tinyc_gstmt *s)
{
	for (int i = 0; i < s->n; i++) {
		tinyc_buf_puts(p->out, ", \"r\"((int)(");
		cexpr(p, s->coord[i]);
		tinyc_buf_puts(p->out, "))");
	}
}

/* The last operands of an asm statement whose operand list is open at "r"(: the shared
 * address of r, then value as an unsigned; closes the statement. */
static void csmem_value_tail(cprint *p, const tinyc_gref *r, const tinyc_gexpr *value)
{
	csmem_addr(p, r);
	tinyc_buf_puts(p->out, "), \"r\"((unsigned)(");
	cexpr(p, value);
	tinyc_buf_puts(p->out, ")) : \"memory\");\n");
}

/* The dtype of a kernel variable. */
static tinyc_dtype vtype(cprint *p, int v)
{
	return v >= 0 && v < p->k->nvar ? p->k->vars[v].dtype : TINYC_DTYPE_NONE;
}

static void cstmt(cprint *p, const tinyc_gstmt *s, int depth);

/* Print the statements of a block (without braces). */
static void cblock_body(cprint *p, const tinyc_gstmt *s, int depth)
{
	if (s && s->op == TINYC_GS_BLOCK) {
		for (int i = 0; i < s->nstmts; i++)
			cstmt(p, s->stmts[i], depth);
	} else {
		cstmt(p, s, depth);
	}
}

/* wgmma.wait_group n, with the accumulator registers it orders as in/out operands so
 * that the compiler keeps their uses after the wait (they are written asynchronously). */
static void cwgmma_wait(cprint *p, const tinyc_gstmt *s)
{
	tinyc_buf *o = p->out;
	tinyc_buf_printf(o, "asm volatile(\"wgmma.wait_group.sync.aligned %d;\\n\"", s->n);
	int64_t n = s->dst.var >= 0 && s->dst.var < p->k->nvar ? p->k->vars[s->dst.var].count : 0;
	if (n > 0) {
		tinyc_buf_puts(o, " :");
		for (int64_t i = 0; i < n; i++)
			tinyc_buf_printf(o, "%s \"+f\"(%s[%" PRId64 "])", i ? "," : "", cvar(p, s->dst.var), i);
		tinyc_buf_puts(o, " :: \"memory\");\n");
	} else {
		tinyc_buf_puts(o, " ::: \"memory\");\n");
	}
}

/* The shared-memory matrix descriptor of a WGMMA operand (see tinyc_gwg_layout):
 * "tinyc_wg_desc(&var[index], LBO, SBO)" with the 128-byte swizzle. */
static void cwg_desc(cprint *p, const tinyc_gref *r, tinyc_gwg_layout l)
{
	tinyc_buf_puts(p->out, "tinyc_wg_desc(");
	caddr(p, r);
	/* K-major: the leading offset is unused (1); 8-row groups 1024 bytes apart.
	 * MN-major: blocks of 64 m (n) mn_block bytes apart; 8-k groups 1024 bytes apart. */
	tinyc_buf_printf(p->out, ", %du, 1024u)", l.k_major ? 16 : l.mn_block);
}

/* wgmma.mma_async m64nNk16 (tf32: k8) with descriptors for A and B and the accumulators in registers. */
static void cwgmma(cprint *p, const tinyc_gstmt *s, int depth)
{
	tinyc_buf *o = p->out;
	int n = s->n, nreg = s->n / 2;
	int64_t off = s->dst.index && s->dst.index->op == TINYC_GX_INT ? s->dst.index->ival : 0;
	tinyc_dtype t = vtype(p, s->src.var);
	const char *ty = t == TINYC_BFLOAT16 ? "bf16" : t == TINYC_FLOAT ? "tf32" : "f16";
	int kk = t == TINYC_FLOAT ? 8 : 16;	/* tf32: k8, K-major only (no transpose) */
	int areg = s->src.var >= 0 && p->k->vars[s->src.var].kind == TINYC_GV_REG_ARRAY;	/* A in registers */
	tinyc_buf_puts(o, "{\n");
	cindent(p, depth + 1);
	if (areg) {	/* the m16k16 A fragment of each warp: 4 registers of two 16-bit values */
		tinyc_buf_puts(o, "const unsigned *tinyc_a = (const unsigned *)");
		caddr(p, &s->src);
	} else {
		tinyc_buf_puts(o, "unsigned long long tinyc_da = ");
		cwg_desc(p, &s->src, s->wg_a);
	}
	tinyc_buf_puts(o, ";\n");
	cindent(p, depth + 1);
	tinyc_buf_puts(o, "unsigned long long tinyc_db = ");
	cwg_desc(p, &s->src2, s->wg_b);
	tinyc_buf_puts(o, ";\n");
	cindent(p, depth + 1);
	tinyc_buf_puts(o, "int tinyc_sd = ");
	if (s->value) {
		tinyc_buf_puts(o, "(");
		cexpr(p, s->value);
		tinyc_buf_puts(o, ") ? 1 : 0");
	} else {
		tinyc_buf_puts(o, "1");
	}
	tinyc_buf_puts(o, ";\n");
	cindent(p, depth + 1);
	tinyc_buf_printf(o, "asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n"
			 "wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s.%s {", nreg + (areg ? 5 : 2), n, kk, ty, ty);
	for (int i = 0; i < nreg; i++)
		tinyc_buf_printf(o, "%s%%%d", i ? ", " : "", i);
	if (areg)
		tinyc_buf_printf(o, "}, {%%%d, %%%d, %%%d, %%%d}, %%%d, p, 1, 1, %d;\\n}\\n\"\n", nreg, nreg + 1,
				 nreg + 2, nreg + 3, nreg + 4, s->wg_b.k_major ? 0 : 1);
	else if (t == TINYC_FLOAT)
		tinyc_buf_printf(o, "}, %%%d, %%%d, p, 1, 1;\\n}\\n\"\n", nreg, nreg + 1);
	else
		tinyc_buf_printf(o, "}, %%%d, %%%d, p, 1, 1, %d, %d;\\n}\\n\"\n", nreg, nreg + 1,
				 s->wg_a.k_major ? 0 : 1, s->wg_b.k_major ? 0 : 1);
	cindent(p, depth + 2);
	tinyc_buf_puts(o, ":");
	for (int i = 0; i < nreg; i++) {
		tinyc_buf_printf(o, "%s \"+f\"(%s[%" PRId64 "])", i ? "," : "", cvar(p, s->dst.var), off + i);
		if (i % 8 == 7 && i + 1 < nreg) {
			tinyc_buf_puts(o, "\n");
			cindent(p, depth + 2);
		}
	}
	tinyc_buf_puts(o, "\n");
	cindent(p, depth + 2);
	if (areg)
		tinyc_buf_puts(o, ": \"r\"(tinyc_a[0]), \"r\"(tinyc_a[1]), \"r\"(tinyc_a[2]), \"r\"(tinyc_a[3]), "
			       "\"l\"(tinyc_db), \"r\"(tinyc_sd) : \"memory\");\n");
	else
		tinyc_buf_puts(o, ": \"l\"(tinyc_da), \"l\"(tinyc_db), \"r\"(tinyc_sd) : \"memory\");\n");
	cindent(p, depth);
	tinyc_buf_puts(o, "}\n");
}

/* mma.sync m16n8k8 .tf32 (float A and B arrays: their bits are the tf32 operands). */
static void cmma_tf32(cprint *p, const tinyc_gstmt *s, int depth)
{
	tinyc_buf *o = p->out;
	static const char *const names[] = {"tinyc_a", "tinyc_b", "tinyc_c", "tinyc_d"};
	const tinyc_gref *refs[] = {&s->src, &s->src2, &s->src3, &s->dst};
	tinyc_buf_puts(o, "{\n");
	for (int i = 0; i < 4; i++) {
		cindent(p, depth + 1);
		tinyc_buf_printf(o, "%sfloat *%s = ", i < 3 ? "const " : "", names[i]);
		caddr(p, refs[i]);
		tinyc_buf_puts(o, ";\n");
	}
	cindent(p, depth + 1);
	tinyc_buf_puts(o, "asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
		       "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\\n\" : "
		       "\"=f\"(tinyc_d[0]), \"=f\"(tinyc_d[1]), \"=f\"(tinyc_d[2]), \"=f\"(tinyc_d[3]) : "
		       "\"r\"(__float_as_uint(tinyc_a[0])), \"r\"(__float_as_uint(tinyc_a[1])), "
		       "\"r\"(__float_as_uint(tinyc_a[2])), \"r\"(__float_as_uint(tinyc_a[3])), "
		       "\"r\"(__float_as_uint(tinyc_b[0])), \"r\"(__float_as_uint(tinyc_b[1])), "
		       "\"f\"(tinyc_c[0]), \"f\"(tinyc_c[1]), \"f\"(tinyc_c[2]), \"f\"(tinyc_c[3]));\n");
	cindent(p, depth);
	tinyc_buf_puts(o, "}\n");
}

/* Print one statement. */
static void cstmt(cprint *p, const tinyc_gstmt *s, int depth)
{
	tinyc_buf *o = p->out;
	if (!s)
		return;
	cindent(p, depth);
	switch (s->op) {
	case TINYC_GS_BLOCK:
		tinyc_buf_puts(o, "{\n");
		cblock_body(p, s, depth + 1);
		cindent(p, depth);
		tinyc_buf_puts(o, "}\n");
		return;
	case TINYC_GS_FOR:
		if (s->unroll == -1)
			tinyc_buf_puts(o, "#pragma unroll\n");
		else if (s->unroll > 0)
			tinyc_buf_printf(o, "#pragma unroll %d\n", s->unroll);
		if (s->unroll)
			cindent(p, depth);
		tinyc_buf_printf(o, "for (%s %s = ", ctype(vtype(p, s->dst.var)), cvar(p, s->dst.var));
		cexpr(p, s->init);
		tinyc_buf_puts(o, "; ");
		cexpr(p, s->cond);
		tinyc_buf_printf(o, "; %s += ", cvar(p, s->dst.var));
		cexpr(p, s->step);
		tinyc_buf_puts(o, ") {\n");
		cblock_body(p, s->body, depth + 1);
		cindent(p, depth);
		tinyc_buf_puts(o, "}\n");
		return;
	case TINYC_GS_IF:
		tinyc_buf_puts(o, "if (");
		cexpr(p, s->cond);
		tinyc_buf_puts(o, ") {\n");
		cblock_body(p, s->body, depth + 1);
		cindent(p, depth);
		if (s->else_body) {
			tinyc_buf_puts(o, "} else {\n");
			cblock_body(p, s->else_body, depth + 1);
			cindent(p, depth);
		}
		tinyc_buf_puts(o, "}\n");
		return;
	case TINYC_GS_DECL: {
		const tinyc_gvar *v = &p->k->vars[s->dst.var];
		if (v->kind == TINYC_GV_REG_ARRAY) {
			if (v->align > 0)	/* read as a vector (16-byte copies) */
				tinyc_buf_printf(o, "__align__(%d) ", v->align);
			tinyc_buf_printf(o, "%s %s[%" PRId64 "];\n", ctype(v->dtype), v->name, v->count);
			if (s->value) {
				cindent(p, depth);
				tinyc_buf_printf(o, "#pragma unroll\n");
				cindent(p, depth);
				tinyc_buf_printf(o, "for (int tinyc_i = 0; tinyc_i < %" PRId64 "; ++tinyc_i) %s[tinyc_i] = ",
						 v->count, v->name);
				cexpr(p, s->value);
				tinyc_buf_puts(o, ";\n");
			}
			return;
		}
		tinyc_buf_printf(o, "%s %s", ctype(v->dtype), v->name);
		if (s->value) {
			tinyc_buf_puts(o, " = ");
			cexpr(p, s->value);
		}
		tinyc_buf_puts(o, ";\n");
		return;
	}
	case TINYC_GS_ASSIGN:
		tinyc_buf_printf(o, "%s = ", cvar(p, s->dst.var));
		cexpr(p, s->value);
		tinyc_buf_puts(o, ";\n");
		return;
	case TINYC_GS_STORE:
		if (s->pred) {
			tinyc_buf_puts(o, "if (");
			cexpr(p, s->pred);
			tinyc_buf_puts(o, ") ");
		}
		tinyc_buf_printf(o, "%s[", cvar(p, s->dst.var));
		cexpr(p, s->dst.index);
		tinyc_buf_puts(o, "] = ");
		cexpr(p, s->value);
		tinyc_buf_puts(o, ";\n");
		return;
	case TINYC_GS_ATOMIC: {
		tinyc_dtype t = vtype(p, s->dst.var);
		if (s->pred) {
			tinyc_buf_puts(o, "if (");
			cexpr(p, s->pred);
			tinyc_buf_puts(o, ") ");
		}
		const char *fn = s->atomic_op == TINYC_GA_ADD ? "atomicAdd("
			       : tinyc_dtype_is_float(t) ? (s->atomic_op == TINYC_GA_MAX ? "tinyc_atomic_max("
											 : "tinyc_atomic_min(")
			       : s->atomic_op == TINYC_GA_MAX ? "atomicMax(" : "atomicMin(";
		if (s->old >= 0)
			tinyc_buf_printf(o, "%s = ", cvar(p, s->old));
		tinyc_buf_puts(o, fn);
		caddr(p, &s->dst);
		tinyc_buf_puts(o, ", ");
		cexpr(p, s->value);
		tinyc_buf_puts(o, ");\n");
		return;
	}
	case TINYC_GS_BARRIER:
		if (s->flag)	/* every thread of the cluster: its barriers and stages exist */
			tinyc_buf_puts(o, "asm volatile(\"barrier.cluster.arrive.release;\\n"
					  "barrier.cluster.wait.acquire;\\n\" ::: \"memory\");\n");
		else
			tinyc_buf_puts(o, "__syncthreads();\n");
		return;
	case TINYC_GS_SHFL: {
		static const char *const fn[] = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
						 "__shfl_xor_sync"};
		tinyc_dtype t = vtype(p, s->dst.var);
		tinyc_buf_printf(o, "%s = ", cvar(p, s->dst.var));
		if (narrow_int(t))
			tinyc_buf_printf(o, "(%s)%s(0xffffffffu, (int)", ctype(t), fn[s->shfl]);
		else
			tinyc_buf_printf(o, "%s(0xffffffffu, ", fn[s->shfl]);
		coperand(p, s->value);
		tinyc_buf_puts(o, ", ");
		cexpr(p, s->cond);
		tinyc_buf_printf(o, ", %d);\n", s->n);
		return;
	}
	case TINYC_GS_COPY: {
		tinyc_dtype t = vtype(p, s->dst.var);
		int bytes = s->n * tinyc_dtype_size(t);
		if (s->value) {	/* a peer CTA's shared memory: mapa, then one vector load */
			const char *c = t == TINYC_FLOAT ? "f" : "r";
			tinyc_buf_printf(o, "asm volatile(\"{ .reg .b32 ra; mapa.shared::cluster.u32 ra, %%%d, %%%d; "
					 "ld.shared::cluster%s.%s32 {", s->n, s->n + 1,
					 s->n > 1 ? (s->n == 2 ? ".v2" : ".v4") : "", t == TINYC_FLOAT ? "f" : "b");
			for (int i = 0; i < s->n; i++)
				tinyc_buf_printf(o, "%s%%%d", i ? ", " : "", i);
			tinyc_buf_puts(o, "}, [ra]; }\\n\" : ");
			for (int i = 0; i < s->n; i++) {
				tinyc_buf_printf(o, "%s\"=%s\"(%s[(", i ? ", " : "", c, cvar(p, s->dst.var));
				cexpr(p, s->dst.index);
				tinyc_buf_printf(o, ") + %d])", i);
			}
			tinyc_buf_puts(o, " : \"r\"(");
			csmem_value_tail(p, &s->src, s->value);
			return;
		}
		if (s->async) {
			tinyc_buf_printf(o, "asm volatile(\"cp.async.%s.shared.global [%%0], [%%1], %d, %%2;\\n\" :: \"r\"(",
					 bytes == 16 && s->async == 1 ? "cg" : "ca", bytes);
			csmem_addr(p, &s->dst);
			tinyc_buf_puts(o, "), \"l\"(");
			caddr(p, &s->src);
			tinyc_buf_puts(o, "), \"r\"(");
			if (s->pred) {
				tinyc_buf_puts(o, "(");
				cexpr(p, s->pred);
				tinyc_buf_printf(o, ") ? %d : 0", bytes);
			} else {
				tinyc_buf_printf(o, "%d", bytes);
			}
			tinyc_buf_puts(o, ") : \"memory\");\n");
			return;
		}
		if (s->n == 1) {
			tinyc_buf_printf(o, "%s[", cvar(p, s->dst.var));
			cexpr(p, s->dst.index);
			tinyc_buf_puts(o, "] = ");
			if (s->pred) {
				coperand(p, s->pred);
				tinyc_buf_puts(o, " ? ");
			}
			tinyc_buf_printf(o, "%s[", cvar(p, s->src.var));
			cexpr(p, s->src.index);
			tinyc_buf_puts(o, "]");
			if (s->pred) {
				tinyc_buf_puts(o, " : ");
				czero(p, t);
			}
			tinyc_buf_puts(o, ";\n");
			return;
		}
		const char *vt = bytes == 16 ? "uint4" : bytes == 8 ? "uint2" : "unsigned int";
		const char *zero = bytes == 16 ? "make_uint4(0u, 0u, 0u, 0u)" : bytes == 8 ? "make_uint2(0u, 0u)" : "0u";
		tinyc_buf_printf(o, "*(%s *)", vt);
		caddr(p, &s->dst);
		tinyc_buf_puts(o, " = ");
		if (s->pred) {
			coperand(p, s->pred);
			tinyc_buf_puts(o, " ? ");
		}
		tinyc_buf_printf(o, "*(const %s *)", vt);
		caddr(p, &s->src);
		if (s->pred)
			tinyc_buf_printf(o, " : %s", zero);
		tinyc_buf_puts(o, ";\n");
		return;
	}
	case TINYC_GS_CP_COMMIT:
		tinyc_buf_puts(o, "asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");\n");
		return;
	case TINYC_GS_CP_WAIT:
		tinyc_buf_printf(o, "asm volatile(\"cp.async.wait_group %d;\\n\" ::: \"memory\");\n", s->n);
		return;
	case TINYC_GS_LDMATRIX: {
		int n = s->n;
		tinyc_buf_puts(o, "{\n");
		cindent(p, depth + 1);
		tinyc_buf_puts(o, "unsigned *tinyc_r = (unsigned *)");
		caddr(p, &s->dst);
		tinyc_buf_puts(o, ";\n");
		cindent(p, depth + 1);
		tinyc_buf_printf(o, "asm volatile(\"ldmatrix.sync.aligned.m8n8.x%d%s.shared.b16 {", n,
				 s->trans ? ".trans" : "");
		for (int i = 0; i < n; i++)
			tinyc_buf_printf(o, "%s%%%d", i ? ", " : "", i);
		tinyc_buf_printf(o, "}, [%%%d];\\n\" : ", n);
		for (int i = 0; i < n; i++)
			tinyc_buf_printf(o, "%s\"=r\"(tinyc_r[%d])", i ? ", " : "", i);
		tinyc_buf_puts(o, " : \"r\"(");
		csmem_addr(p, &s->src);
		tinyc_buf_puts(o, "));\n");
		cindent(p, depth);
		tinyc_buf_puts(o, "}\n");
		return;
	}
	case TINYC_GS_MMA: {
		tinyc_dtype at = vtype(p, s->src.var), bt = vtype(p, s->src2.var);
		if (at == TINYC_FLOAT) {
			cmma_tf32(p, s, depth);
			return;
		}
		tinyc_dtype ab = at == TINYC_BFLOAT16 || (at == TINYC_UINT && bt == TINYC_BFLOAT16)
					 ? TINYC_BFLOAT16 : TINYC_HALF;
		const char *ty = ab == TINYC_BFLOAT16 ? "bf16" : "f16";
		tinyc_buf_puts(o, "{\n");
		cindent(p, depth + 1);
		tinyc_buf_puts(o, "const unsigned *tinyc_a = (const unsigned *)");
		caddr(p, &s->src);
		tinyc_buf_puts(o, ";\n");
		cindent(p, depth + 1);
		tinyc_buf_puts(o, "const unsigned *tinyc_b = (const unsigned *)");
		caddr(p, &s->src2);
		tinyc_buf_puts(o, ";\n");
		cindent(p, depth + 1);
		tinyc_buf_puts(o, "const float *tinyc_c = ");
		caddr(p, &s->src3);
		tinyc_buf_puts(o, ";\n");
		cindent(p, depth + 1);
		tinyc_buf_puts(o, "float *tinyc_d = ");
		caddr(p, &s->dst);
		tinyc_buf_puts(o, ";\n");
		cindent(p, depth + 1);
		tinyc_buf_printf(o, "asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 "
				 "{%%0, %%1, %%2, %%3}, {%%4, %%5, %%6, %%7}, {%%8, %%9}, "
				 "{%%10, %%11, %%12, %%13};\\n\" : \"=f\"(tinyc_d[0]), \"=f\"(tinyc_d[1]), "
				 "\"=f\"(tinyc_d[2]), \"=f\"(tinyc_d[3]) : \"r\"(tinyc_a[0]), \"r\"(tinyc_a[1]), "
				 "\"r\"(tinyc_a[2]), \"r\"(tinyc_a[3]), \"r\"(tinyc_b[0]), \"r\"(tinyc_b[1]), "
				 "\"f\"(tinyc_c[0]), \"f\"(tinyc_c[1]), \"f\"(tinyc_c[2]), \"f\"(tinyc_c[3]));\n",
				 ty, ty);
		cindent(p, depth);
		tinyc_buf_puts(o, "}\n");
		return;
	}
	case TINYC_GS_MBAR_INIT:
		tinyc_buf_puts(o, "asm volatile(\"mbarrier.init.shared.b64 [%0], %1;\\n\" :: \"r\"(");
		csmem_addr(p, &s->dst);
		tinyc_buf_printf(o, "), \"r\"(%d) : \"memory\");\n", s->n);
		return;
	case TINYC_GS_MBAR_EXPECT_TX:
		if (s->flag)	/* expect the bytes without arriving */
			tinyc_buf_puts(o, "asm volatile(\"mbarrier.expect_tx.shared::cta.b64 [%0], %1;\\n\" :: \"r\"(");
		else
			tinyc_buf_puts(o, "asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n\" :: \"r\"(");
		csmem_value_tail(p, &s->dst, s->value);
		return;
	case TINYC_GS_MBAR_ARRIVE:
		/* the barrier at the same offset in the CTA of rank value, with the default
		 * .release.cta: the arrival only says that this CTA's reads of a stage are done
		 * (a write-after-read order, as CUTLASS's ClusterBarrier); .release.cluster
		 * waits for every outstanding memory operation of the thread first (ncu: 46% of
		 * the cycles stalled on a memory barrier, 2.7x the time at 512x4096x4096) */
		if (s->value) {
			tinyc_buf_puts(o, "asm volatile(\"{ .reg .b32 ra; mapa.shared::cluster.u32 ra, %0, %1; "
					  "mbarrier.arrive.shared::cluster.b64 _, [ra]; }\\n\" :: \"r\"(");
			csmem_value_tail(p, &s->dst, s->value);
			return;
		}
		tinyc_buf_puts(o, "asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\\n\" :: \"r\"(");
		csmem_addr(p, &s->dst);
		tinyc_buf_puts(o, ") : \"memory\");\n");
		return;
	case TINYC_GS_MBAR_WAIT: {
		int sm90 = p->m->arch_major >= 9;
		tinyc_buf_puts(o, "{\n");
		cindent(p, depth + 1);
		tinyc_buf_puts(o, "unsigned tinyc_bar = ");
		csmem_addr(p, &s->dst);
		tinyc_buf_puts(o, ", tinyc_par = (unsigned)(");
		cexpr(p, s->value);
		tinyc_buf_puts(o, "), tinyc_done = 0;\n");
		cindent(p, depth + 1);
		if (sm90 && p->k->wait_hint)	/* suspended up to the hint between tries */
			tinyc_buf_printf(o, "do { asm volatile(\"{ .reg .pred P; mbarrier.try_wait.parity.shared::cta.b64 P, "
					 "[%%1], %%2, %%3; selp.u32 %%0, 1, 0, P; }\\n\" : \"=r\"(tinyc_done) : \"r\"(tinyc_bar), "
					 "\"r\"(tinyc_par), \"r\"(%du) : \"memory\"); } while (!tinyc_done);\n", p->k->wait_hint);
		else
			tinyc_buf_printf(o, "do { asm volatile(\"{ .reg .pred P; mbarrier.%s.parity.shared::cta.b64 P, [%%1], %%2; "
					 "selp.u32 %%0, 1, 0, P; }\\n\" : \"=r\"(tinyc_done) : \"r\"(tinyc_bar), \"r\"(tinyc_par) : "
					 "\"memory\"); } while (!tinyc_done);\n", sm90 ? "try_wait" : "test_wait");
		cindent(p, depth);
		tinyc_buf_puts(o, "}\n");
		return;
	}
	case TINYC_GS_TMA_LOAD: {
		tinyc_buf_printf(o, "asm volatile(\"cp.async.bulk.tensor.%dd.shared::cluster.global.mbarrier::complete_tx::bytes%s "
				 "[%%0], [%%1, {", s->n, s->flag ? ".multicast::cluster" : "");
		for (int i = 0; i < s->n; i++)
			tinyc_buf_printf(o, "%s%%%d", i ? ", " : "", i + 2);
		tinyc_buf_printf(o, "}], [%%%d]", s->n + 2);
		if (s->flag)	/* the CTAs' mask, a 16-bit operand */
			tinyc_buf_printf(o, ", %%%d", s->n + 3);
		tinyc_buf_puts(o, ";\\n\" :: \"r\"(");
		csmem_addr(p, &s->dst);
		tinyc_buf_printf(o, "), \"l\"(&%s)", cvar(p, s->src.var));
		tma_coords(p, s);
		tinyc_buf_puts(o, ", \"r\"(");
		csmem_addr(p, &s->src2);
		if (s->flag)
			tinyc_buf_printf(o, "), \"h\"((unsigned short)%u", (unsigned)s->flag);
		tinyc_buf_puts(o, ") : \"memory\");\n");
		return;
	}
	case TINYC_GS_TMA_STORE: {
		tinyc_buf_printf(o, "asm volatile(\"cp.async.bulk.tensor.%dd.global.shared::cta.bulk_group [%%0, {", s->n);
		for (int i = 0; i < s->n; i++)
			tinyc_buf_printf(o, "%s%%%d", i ? ", " : "", i + 1);
		tinyc_buf_printf(o, "}], [%%%d];\\n\" :: \"l\"(&%s)", s->n + 1, cvar(p, s->dst.var));
		tma_coords(p, s);
		tinyc_buf_puts(o, ", \"r\"(");
		csmem_addr(p, &s->src);
		tinyc_buf_puts(o, ") : \"memory\");\n");
		return;
	}
	case TINYC_GS_BULK_COMMIT:
		tinyc_buf_puts(o, "asm volatile(\"cp.async.bulk.commit_group;\\n\" ::: \"memory\");\n");
		return;
	case TINYC_GS_BULK_WAIT:
		tinyc_buf_printf(o, "asm volatile(\"cp.async.bulk.wait_group.read %d;\\n\" ::: \"memory\");\n", s->n);
		return;
	case TINYC_GS_FENCE: {
		static const char *const ptx[] = {	/* the fences that are one PTX instruction */
			[TINYC_GF_PROXY_ASYNC] = "fence.proxy.async.shared::cta",
			[TINYC_GF_MBAR_INIT] = "fence.mbarrier_init.release.cluster",
			[TINYC_GF_GRID_WAIT] = "griddepcontrol.wait",
			[TINYC_GF_GRID_LAUNCH] = "griddepcontrol.launch_dependents",
		};
		if (s->fence == TINYC_GF_BLOCK)
			tinyc_buf_puts(o, "__threadfence_block();\n");
		else if (s->fence == TINYC_GF_GLOBAL)
			tinyc_buf_puts(o, "__threadfence();\n");
		else
			tinyc_buf_printf(o, "asm volatile(\"%s;\\n\" ::: \"memory\");\n", ptx[s->fence]);
		return;
	}
	case TINYC_GS_WGMMA_FENCE:
		tinyc_buf_puts(o, "asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");\n");
		return;
	case TINYC_GS_WGMMA_COMMIT:
		tinyc_buf_puts(o, "asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\");\n");
		return;
	case TINYC_GS_WGMMA_WAIT:
		cwgmma_wait(p, s);
		return;
	case TINYC_GS_SYNCWARP:
		tinyc_buf_puts(o, "__syncwarp();\n");
		return;
	case TINYC_GS_TMAP_PREFETCH:
		tinyc_buf_printf(o, "asm volatile(\"prefetch.tensormap [%%0];\\n\" :: \"l\"(&%s) : \"memory\");\n",
				 cvar(p, s->src.var));
		return;
	case TINYC_GS_SETMAXNREG:
		tinyc_buf_printf(o, "asm volatile(\"setmaxnreg.%s.sync.aligned.u32 %d;\\n\" ::: \"memory\");\n",
				 s->flag ? "inc" : "dec", s->n);
		return;
	case TINYC_GS_WGMMA:
		cwgmma(p, s, depth);
		return;
	case TINYC_GS_COMMENT:
		tinyc_buf_puts(o, "// ");
		for (const char *c = s->text ? s->text : ""; *c; c++)
			tinyc_buf_putc(o, *c == '\n' ? ' ' : *c);
		tinyc_buf_putc(o, '\n');
		return;
	default:
		tinyc_buf_puts(o, "#error unknown GPU IR statement\n");
		return;
	}
}

/* The helpers every translation unit gets. */
static const char prelude[] =
	"#include <cuda_fp16.h>\n"
	"#include <cuda_bf16.h>\n"
	"\n"
	"// floor division (b > 0)\n"
	"static __device__ __forceinline__ int tinyc_floordiv(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }\n"
	"static __device__ __forceinline__ long long tinyc_floordiv(long long a, long long b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }\n"
	"// float -> narrow integer: truncate toward zero, saturate, NaN -> 0 (as the reference)\n"
	"static __device__ __forceinline__ signed char tinyc_cvt_s8(double x) { return x != x ? 0 : x <= -128.0 ? -128 : x >= 127.0 ? 127 : (signed char)x; }\n"
	"static __device__ __forceinline__ unsigned char tinyc_cvt_u8(double x) { return x != x ? 0 : x <= 0.0 ? 0 : x >= 255.0 ? 255 : (unsigned char)x; }\n"
	"static __device__ __forceinline__ short tinyc_cvt_s16(double x) { return x != x ? 0 : x <= -32768.0 ? -32768 : x >= 32767.0 ? 32767 : (short)x; }\n"
	"static __device__ __forceinline__ unsigned short tinyc_cvt_u16(double x) { return x != x ? 0 : x <= 0.0 ? 0 : x >= 65535.0 ? 65535 : (unsigned short)x; }\n"
	"// linear thread index within the block: lane and warp\n"
	"static __device__ __forceinline__ int tinyc_tid() { return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); }\n"
	"static __device__ __forceinline__ int tinyc_lane() { return tinyc_tid() & 31; }\n"
	"static __device__ __forceinline__ int tinyc_warp() { return tinyc_tid() >> 5; }\n"
	"// atomic max/min on floats (compare-and-swap)\n"
	"static __device__ __forceinline__ void tinyc_atomic_max(float *p, float v) { int *q = (int *)p; int old = *q, assumed; do { assumed = old; if (!(v > __int_as_float(assumed))) break; old = atomicCAS(q, assumed, __float_as_int(v)); } while (old != assumed); }\n"
	"static __device__ __forceinline__ void tinyc_atomic_min(float *p, float v) { int *q = (int *)p; int old = *q, assumed; do { assumed = old; if (!(v < __int_as_float(assumed))) break; old = atomicCAS(q, assumed, __float_as_int(v)); } while (old != assumed); }\n"
	"// a TMA descriptor (CUtensorMap) passed by value\n"
	"struct __align__(64) tinyc_tmap { unsigned long long opaque[16]; };\n"
	"// a wgmma shared-memory matrix descriptor: start, leading and stride byte offsets, 128-byte swizzle\n"
	"static __device__ __forceinline__ unsigned long long tinyc_wg_desc(const void *p, unsigned lbo, unsigned sbo) { unsigned a = (unsigned)__cvta_generic_to_shared(p); return (unsigned long long)((a & 0x3FFFFu) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFFu) << 16) | ((unsigned long long)((sbo >> 4) & 0x3FFFu) << 32) | (1ull << 62); }\n";

/* The alignment of the dynamic segment: 128 bytes, or the largest a dynamic array asks. */
static int dyn_align(const tinyc_gkernel *k)
{
	int a = 128;
	for (int i = 0; i < k->nvar; i++)
		if (k->vars[i].kind == TINYC_GV_SHARED && k->vars[i].dynamic && k->vars[i].align > a)
			a = k->vars[i].align;
	return a;
}

/* Print one kernel. */
static void ckernel(cprint *p, const tinyc_gkernel *k)
{
	tinyc_buf *o = p->out;
	p->k = k;
	int threads = k->block[0] * k->block[1] * k->block[2];
	tinyc_buf_printf(o, "\n// kernel %s: grid (", k->name);
	for (int d = 0; d < 3; d++) {
		if (d)
			tinyc_buf_puts(o, ", ");
		tinyc_gpu_print_expr(k, k->grid[d], o);
	}
	tinyc_buf_printf(o, "), block (%d, %d, %d), smem %" PRId64 " bytes%s\n", k->block[0], k->block[1],
			 k->block[2], tinyc_gk_static_smem(k) + k->dyn_smem, k->pdl ? ", pdl" : "");
	if (k->comment && *k->comment)
		tinyc_buf_printf(o, "// %s\n", k->comment);
	tinyc_buf_printf(o, "extern \"C\" __global__ void __launch_bounds__(%d", threads);
	if (k->min_blocks_per_sm > 0)
		tinyc_buf_printf(o, ", %d", k->min_blocks_per_sm);
	tinyc_buf_puts(o, ")");
	if (k->cluster_x > 1)
		tinyc_buf_printf(o, " __cluster_dims__(%d, 1, 1)", k->cluster_x);
	tinyc_buf_printf(o, " %s(", k->name);
	for (int i = 0; i < k->nparam; i++) {
		const tinyc_gvar *v = &k->vars[k->params[i]];
		if (i)
			tinyc_buf_puts(o, ", ");
		if (v->kind == TINYC_GV_PARAM_PTR)
			tinyc_buf_printf(o, "%s%s *__restrict__ %s", v->is_const ? "const " : "", ctype(v->dtype),
					 v->name);
		else if (v->kind == TINYC_GV_PARAM_INT)
			tinyc_buf_printf(o, "%s %s", ctype(v->dtype), v->name);
		else
			tinyc_buf_printf(o, "const __grid_constant__ tinyc_tmap %s", v->name);
	}
	tinyc_buf_puts(o, ")\n{\n");
	int dyn = 0;
	for (int i = 0; i < k->nvar; i++) {
		const tinyc_gvar *v = &k->vars[i];
		if (v->kind != TINYC_GV_SHARED)
			continue;
		if (v->dynamic) {
			if (!dyn++)
				tinyc_buf_printf(o, "  extern __shared__ __align__(%d) unsigned char tinyc_dyn_smem[];\n",
						 dyn_align(k));
			tinyc_buf_printf(o, "  %s *%s = (%s *)(tinyc_dyn_smem + %" PRId64 ");\n", ctype(v->dtype),
					 v->name, ctype(v->dtype), v->offset);
		} else {
			tinyc_buf_printf(o, "  __shared__ __align__(%d) %s %s[%" PRId64 "];\n", v->align,
					 ctype(v->dtype), v->name, v->count);
		}
	}
	cblock_body(p, k->body, 1);
	tinyc_buf_puts(o, "}\n");
}

int tinyc_cuda_print(tinyc_ctx *ctx, const tinyc_gpu_module *m, tinyc_buf *out)
{
	cprint p = {m, NULL, out, 0};
	tinyc_buf_printf(out, "// generated by tinyc for %s\n", m->target);
	tinyc_buf_puts(out, prelude);
	for (int i = 0; i < m->nkernel; i++)
		ckernel(&p, m->kernels[i]);
	if (out->oom)
		return tinyc_error(ctx, "OutOfMemory", "CUDA text");
	return 0;
}

int tinyc_cuda_print_kernel(tinyc_ctx *ctx, const tinyc_gpu_module *m, int i, tinyc_buf *out)
{
	if (i < 0 || i >= m->nkernel)
		return tinyc_error(ctx, "InvalidArgument", "no kernel %d", i);
	cprint p = {m, NULL, out, 0};
	tinyc_buf_printf(out, "// generated by tinyc for %s\n", m->target);
	tinyc_buf_puts(out, prelude);
	ckernel(&p, m->kernels[i]);
	if (out->oom)
		return tinyc_error(ctx, "OutOfMemory", "CUDA text");
	return 0;
}

/* ------------------------------------------------------------------- stage ---- */

/* The "cuda" stage: the whole module's CUDA text. */
tinyc_cuda_text *tinyc_cuda_text_build(tinyc_ctx *ctx, const tinyc_gpu_module *gm)
{
	tinyc_buf b = {0};
	if (tinyc_cuda_print(ctx, gm, &b) < 0) {
		tinyc_buf_free(&b);
		return NULL;
	}
	tinyc_cuda_text *t = tinyc_calloc(ctx, 1, sizeof(*t));
	if (!t) {
		tinyc_buf_free(&b);
		return NULL;
	}
	t->text = b.data;
	t->len = b.len;
	return t;
}

/* The cuda stage's check: every kernel appears with its launch comment, braces balance.
 * (nvrtc itself is the real check; tests compile the text for sm_80 and sm_90.) */
int tinyc_cuda_text_verify(tinyc_ctx *ctx, const tinyc_cuda_text *t, const tinyc_gpu_module *gm)
{
	if (!t || !t->text || !gm)
		return tinyc_error(ctx, "CudaTextInvalid", "no CUDA text");
	long depth = 0;
	for (const char *c = t->text; *c; c++) {
		if (c[0] == '/' && c[1] == '/') {	/* comments quote user names: skip them */
			while (c[1] && c[1] != '\n')
				c++;
			continue;
		}
		depth += *c == '{' ? 1 : *c == '}' ? -1 : 0;
	}
	if (depth)
		return tinyc_error(ctx, "CudaTextInvalid", "unbalanced braces in the CUDA text");
	for (int i = 0; i < gm->nkernel; i++) {
		char want[160];
		snprintf(want, sizeof(want), "// kernel %s: grid", gm->kernels[i]->name);
		if (!strstr(t->text, want))
			return tinyc_error(ctx, "CudaTextInvalid", "kernel %s missing from the CUDA text",
					   gm->kernels[i]->name);
	}
	return 0;
}

void tinyc_cuda_text_free(tinyc_cuda_text *t)
{
	if (!t)
		return;
	free(t->text);
	free(t);
}
