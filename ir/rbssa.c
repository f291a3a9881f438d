/* RB-SSA: the op table, construction, the text dump and the verifier.
 *
 * Dump format (--dump-stage=rbssa), deterministic, one instruction per line:
 *
 *   # rbssa: 17 instructions, 3 reads, 1 yield
 *   iters: [m:M, n:N]                   parallel axes of the yields (IndexBook names:size)
 *   reduce: [k:K]                       axes folded by reduces ("reduce: []" when none)
 *   %0 = read "X", slot=0, axes=[m,k] : half[M,K]                          # %0
 *   %3 = reshape %0 : half[M,1,K]                                          # %3
 *   %5 = transpose %4, perm=[0,2,1] : half[1,N,K]                          # %5
 *   %6 = broadcast_in_dim %3, dims=[0,2] : half[M,N,K]                     # %6
 *   %8 = mul %6, %7 : half[M,N,K]                                          # %6
 *   %10 = reduce_sum %9, axes=[k], dims=[2], init=0.0, acc=float : float[M,N,1]  # %8
 *   yield %16 -> "Y", axes=[m,n] : half[M,N]                               # %14
 *
 * Instructions are numbered %0, %1, ... in order (a yield defines no value but keeps its
 * number); the trailing "# %id" names the UOp node an instruction lowers (an inserted
 * broadcast_in_dim names the elementwise node that needed it).  Other forms:
 *
 *   %i = read "W", slot=1, strides=[1,K], axes=[..] : T[..]   a strided BUFFER
 *   %i = constant 1.5 : float[]                                 a scalar (the literal as written)
 *   %i = pad %a, low=[1,0], high=[0,2] : T[..]                  zero padding
 *   %i = slice %a, start=[0,1], end=[3,4] : T[..]               [start, end) per dim
 *   %i = reverse %a, dims=[1] : T[..]
 *   %i = materialize %a : T[..]                                 CONTIGUOUS
 *   %i = cast %a : T[..]            %i = bitcast %a : T[..]
 *   %i = compare lt, %a, %b : bool[..]                          lt, ne, eq
 *   %i = select %c, %a, %b : T[..]
 *   %i = reduce_max %a, axes=[..], dims=[..], init=-inf, acc=T : T[..]   (also reduce_prod)
 *   yield %a -> "Y", strides=[..], axes=[..] : T[..]            a strided OUTPUT
 *
 * broadcast_in_dim's dims are the result dims the operand supplies; the operand is aligned
 * to the right of the result (numpy's rule made explicit) and every other result dim is a
 * broadcast dim, read at index 0 of the operand (whose dim there is 1, or absent).
 * reduce's axes are IndexBook names of the reduced operand dims listed in dims; the result
 * keeps them as size 1 or drops them, as its shape says.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/rbssa.h"

/* One entry of the op table. */
typedef struct rb_opinfo {
	const char *name;	/* mnemonic */
	int nargs;		/* operands */
	tinyc_rb_class cls;	/* leaf / view / ewise / reduce / yield */
	tinyc_opdom dom;	/* operand domain */
	tinyc_op uop;		/* the UOp it lowers from, TINYC_OP_NONE */
} rb_opinfo;

static const rb_opinfo rb_ops[] = {
#define X(e, name, nargs, cls, dom, uop) \
	{name, nargs, TINYC_RB_CLASS_##cls, TINYC_DOM_##dom, TINYC_OP_##uop},
	TINYC_RB_OPS(X)
#undef X
};

const char *tinyc_rb_op_name(tinyc_rb_op op)
{
	return op >= 0 && op < TINYC_RB_OP_COUNT ? rb_ops[op].name : "?";
}

int tinyc_rb_op_nargs(tinyc_rb_op op)
{
	return op >= 0 && op < TINYC_RB_OP_COUNT ? rb_ops[op].nargs : -1;
}

tinyc_rb_class tinyc_rb_op_class(tinyc_rb_op op)
{
	return op >= 0 && op < TINYC_RB_OP_COUNT ? rb_ops[op].cls : TINYC_RB_CLASS_LEAF;
}

tinyc_opdom tinyc_rb_op_dom(tinyc_rb_op op)
{
	return op >= 0 && op < TINYC_RB_OP_COUNT ? rb_ops[op].dom : TINYC_DOM_ANY;
}

tinyc_op tinyc_rb_op_uop(tinyc_rb_op op)
{
	return op >= 0 && op < TINYC_RB_OP_COUNT ? rb_ops[op].uop : TINYC_OP_NONE;
}

/* The inverse of the table's UOp column. */
tinyc_rb_op tinyc_rb_op_of_uop(tinyc_op op)
{
	for (int i = 0; op != TINYC_OP_NONE && i < TINYC_RB_OP_COUNT; i++)
		if (rb_ops[i].uop == op)
			return (tinyc_rb_op)i;
	return TINYC_RB_NONE;
}

const char *tinyc_rb_pred_name(tinyc_rb_pred p)
{
	switch (p) {
	case TINYC_RB_LT: return "lt";
	case TINYC_RB_NE: return "ne";
	case TINYC_RB_EQ: return "eq";
	}
	return "?";
}

/* ---- construction ---------------------------------------------------------------------- */

/* A new empty function over g, with b's values copied. */
tinyc_rbssa *tinyc_rbssa_alloc(tinyc_ctx *ctx, const tinyc_graph *g, const tinyc_bindings *b)
{
	tinyc_rbssa *f = tinyc_calloc(ctx, 1, sizeof(*f));
	if (!f)
		return NULL;
	f->g = g;
	f->nsym = g ? g->nsym : 0;
	f->bind = tinyc_calloc(ctx, (size_t)(f->nsym ? f->nsym : 1), sizeof(int64_t));
	if (!f->bind) {
		free(f);
		return NULL;
	}
	for (int i = 0; i < f->nsym; i++)
		f->bind[i] = b && i < b->n ? b->val[i] : -1;
	return f;
}

/* Free what one instruction owns. */
static void inst_clear(tinyc_rb_inst *in)
{
	free(in->lit_text);
	free(in->name);
	for (int d = 0; d < TINYC_MAX_RANK; d++)
		free(in->axis[d]);
}

void tinyc_rbssa_free(tinyc_rbssa *f)
{
	if (!f)
		return;
	for (int i = 0; i < f->n; i++)
		inst_clear(&f->inst[i]);
	for (int i = 0; i < f->niters; i++)
		free(f->iters[i].name);
	for (int i = 0; i < f->nred; i++)
		free(f->red[i].name);
	free(f->iters);
	free(f->red);
	free(f->inst);
	free(f->bind);
	free(f);
}

/* Append an instruction (see rbssa.h). */
int tinyc_rbssa_add(tinyc_ctx *ctx, tinyc_rbssa *f, tinyc_rb_op op, tinyc_dtype dt, int rank,
		    const tinyc_dim *shape)
{
	if (rank < 0 || rank > TINYC_MAX_RANK)
		return tinyc_error(ctx, "InvalidArgument", "RB-SSA rank %d out of range", rank);
	if (f->n == f->cap) {
		int cap = f->cap ? 2 * f->cap : 16;
		tinyc_rb_inst *ni = tinyc_realloc(ctx, f->inst, (size_t)cap * sizeof(*ni));
		if (!ni)
			return -1;
		f->inst = ni;
		f->cap = cap;
	}
	tinyc_rb_inst *in = &f->inst[f->n];
	memset(in, 0, sizeof(*in));
	in->op = op;
	in->dtype = dt;
	in->rank = rank;
	for (int d = 0; d < rank; d++)
		in->shape[d] = shape[d];
	in->args[0] = in->args[1] = in->args[2] = -1;
	in->nargs = tinyc_rb_op_nargs(op);
	in->uop = -1;
	in->acc = TINYC_DTYPE_NONE;
	return f->n++;
}

/* Append a header axis. */
int tinyc_rbssa_add_axis(tinyc_ctx *ctx, tinyc_rbssa *f, int reduce, const char *name,
			 tinyc_dim size)
{
	tinyc_rb_axis **v = reduce ? &f->red : &f->iters;
	int *n = reduce ? &f->nred : &f->niters;
	tinyc_rb_axis *nv = tinyc_realloc(ctx, *v, (size_t)(*n + 1) * sizeof(**v));
	if (!nv)
		return -1;
	*v = nv;
	nv[*n].name = tinyc_strdup(ctx, name ? name : "?");
	if (!nv[*n].name)
		return -1;
	nv[*n].size = size;
	(*n)++;
	return 0;
}

/* ---- dims ------------------------------------------------------------------------------ */

int64_t tinyc_rbssa_dim_value(const tinyc_rbssa *f, tinyc_dim d)
{
	if (d.sym < 0)
		return d.val;
	if (d.sym >= f->nsym)
		return -1;
	return f->bind[d.sym];
}

int tinyc_rbssa_dim_equal(const tinyc_rbssa *f, tinyc_dim a, tinyc_dim b)
{
	int64_t x = tinyc_rbssa_dim_value(f, a), y = tinyc_rbssa_dim_value(f, b);
	if (x >= 0 && y >= 0)
		return x == y;
	return a.sym >= 0 && a.sym == b.sym;
}

int tinyc_rbssa_dim_is1(const tinyc_rbssa *f, tinyc_dim d)
{
	return tinyc_rbssa_dim_value(f, d) == 1;
}

/* ---- printer --------------------------------------------------------------------------- */

static void put_ints(tinyc_buf *out, int n, const int *v)
{
	tinyc_buf_putc(out, '[');
	for (int i = 0; i < n; i++)
		tinyc_buf_printf(out, i ? ",%d" : "%d", v[i]);
	tinyc_buf_putc(out, ']');
}

static void put_i64s(tinyc_buf *out, int n, const int64_t *v)
{
	tinyc_buf_putc(out, '[');
	for (int i = 0; i < n; i++)
		tinyc_buf_printf(out, i ? ",%lld" : "%lld", (long long)v[i]);
	tinyc_buf_putc(out, ']');
}

/* A float the way the dump writes it: "0.0", "-inf", "1.5", "nan". */
static void put_float(tinyc_buf *out, double x)
{
	if (isnan(x)) {
		tinyc_buf_puts(out, "nan");
		return;
	}
	if (isinf(x)) {
		tinyc_buf_puts(out, x < 0 ? "-inf" : "inf");
		return;
	}
	char s[64];
	snprintf(s, sizeof(s), "%.17g", x);
	tinyc_buf_puts(out, s);
	if (!strpbrk(s, ".e"))
		tinyc_buf_puts(out, ".0");
}

/* "[m,k]" from a list of axis names (NULL names print as "_"). */
static void put_names(tinyc_buf *out, int n, char *const *names, const int *pick)
{
	tinyc_buf_putc(out, '[');
	for (int i = 0; i < n; i++) {
		const char *s = names[pick ? pick[i] : i];
		tinyc_buf_printf(out, "%s%s", i ? "," : "", s ? s : "_");
	}
	tinyc_buf_putc(out, ']');
}

/* "[m:M, n:N]" for a header line. */
static void put_axes(const tinyc_rbssa *f, tinyc_buf *out, int n, const tinyc_rb_axis *ax)
{
	tinyc_buf_putc(out, '[');
	for (int i = 0; i < n; i++) {
		tinyc_buf_printf(out, "%s%s:", i ? ", " : "", ax[i].name);
		if (ax[i].size.sym >= 0 && f->g && ax[i].size.sym < f->g->nsym)
			tinyc_buf_puts(out, f->g->syms[ax[i].size.sym]);
		else
			tinyc_buf_printf(out, "%lld", (long long)ax[i].size.val);
	}
	tinyc_buf_puts(out, "]\n");
}

static const char *reduce_name(tinyc_redop r)
{
	return r == TINYC_RED_ADD ? "reduce_sum" : r == TINYC_RED_MAX ? "reduce_max" : "reduce_prod";
}

/* Print one instruction (without the newline). */
static void print_inst(const tinyc_rbssa *f, int i, tinyc_buf *out)
{
	const tinyc_rb_inst *in = &f->inst[i];
	if (in->op == TINYC_RB_YIELD)
		tinyc_buf_printf(out, "yield %%%d -> \"%s\"", in->args[0], in->name ? in->name : "");
	else if (in->op == TINYC_RB_REDUCE)
		tinyc_buf_printf(out, "%%%d = %s", i, reduce_name(in->redop));
	else
		tinyc_buf_printf(out, "%%%d = %s", i, tinyc_rb_op_name(in->op));
	switch (in->op) {
	case TINYC_RB_READ:
		tinyc_buf_printf(out, " \"%s\", slot=%lld", in->name ? in->name : "",
				 (long long)in->slot);
		break;
	case TINYC_RB_CONSTANT:
		if (in->lit_text)
			tinyc_buf_printf(out, " %s", in->lit_text);
		else if (in->lit_is_float)
			tinyc_buf_putc(out, ' '), put_float(out, in->lit_f);
		else
			tinyc_buf_printf(out, " %lld", (long long)in->lit_i);
		break;
	case TINYC_RB_COMPARE:
		tinyc_buf_printf(out, " %s,", tinyc_rb_pred_name(in->pred));
		/* fall through */
	default:
		if (in->op == TINYC_RB_YIELD)
			break;
		for (int a = 0; a < in->nargs; a++)
			tinyc_buf_printf(out, "%s %%%d", a ? "," : "", in->args[a]);
		break;
	}
	switch (in->op) {
	case TINYC_RB_TRANSPOSE:
		tinyc_buf_puts(out, ", perm=");
		put_ints(out, in->ndims, in->dims);
		break;
	case TINYC_RB_BROADCAST_IN_DIM:
	case TINYC_RB_REVERSE:
		tinyc_buf_puts(out, ", dims=");
		put_ints(out, in->ndims, in->dims);
		break;
	case TINYC_RB_PAD:
		tinyc_buf_puts(out, ", low=");
		put_i64s(out, in->rank, in->lo);
		tinyc_buf_puts(out, ", high=");
		put_i64s(out, in->rank, in->hi);
		break;
	case TINYC_RB_SLICE:
		tinyc_buf_puts(out, ", start=");
		put_i64s(out, in->rank, in->lo);
		tinyc_buf_puts(out, ", end=");
		put_i64s(out, in->rank, in->hi);
		break;
	case TINYC_RB_REDUCE:
		tinyc_buf_puts(out, ", axes=");
		put_names(out, in->ndims, in->axis, in->dims);
		tinyc_buf_puts(out, ", dims=");
		put_ints(out, in->ndims, in->dims);
		tinyc_buf_puts(out, ", init=");
		if (in->init_is_float)
			put_float(out, in->init_f);
		else
			tinyc_buf_printf(out, "%lld", (long long)in->init_i);
		tinyc_buf_printf(out, ", acc=%s", in->acc == TINYC_DTYPE_NONE ? "none"
				 : tinyc_dtype_name(in->acc));
		break;
	case TINYC_RB_READ:
	case TINYC_RB_YIELD:
		if (in->has_strides) {
			tinyc_buf_puts(out, ", strides=");
			tinyc_print_shape(f->g, in->rank, in->strides, out);
		}
		tinyc_buf_puts(out, ", axes=");
		put_names(out, in->rank, in->axis, NULL);
		break;
	default:
		break;
	}
	tinyc_buf_printf(out, " : %s", tinyc_dtype_name(in->dtype));
	tinyc_print_shape(f->g, in->rank, in->shape, out);
	if (f->g && in->uop >= 0 && in->uop < f->g->n && f->g->nodes[in->uop].id)
		tinyc_buf_printf(out, "  # %%%s", f->g->nodes[in->uop].id);
}

/* The text dump (format at the top of this file). */
void tinyc_rbssa_print(const tinyc_rbssa *f, tinyc_buf *out)
{
	if (!f) {
		tinyc_buf_puts(out, "# rbssa: (none)\n");
		return;
	}
	int nread = 0, nyield = 0;
	for (int i = 0; i < f->n; i++) {
		nread += f->inst[i].op == TINYC_RB_READ;
		nyield += f->inst[i].op == TINYC_RB_YIELD;
	}
	tinyc_buf_printf(out, "# rbssa: %d instructions, %d read%s, %d yield%s\n", f->n, nread,
			 nread == 1 ? "" : "s", nyield, nyield == 1 ? "" : "s");
	tinyc_buf_puts(out, "iters: ");
	put_axes(f, out, f->niters, f->iters);
	tinyc_buf_puts(out, "reduce: ");
	put_axes(f, out, f->nred, f->red);
	for (int i = 0; i < f->n; i++) {
		print_inst(f, i, out);
		tinyc_buf_putc(out, '\n');
	}
}

/* ---- verifier -------------------------------------------------------------------------- */

/* Report a problem with instruction i at its UOp's source line.  Returns -1. */
static int inst_err(tinyc_ctx *ctx, const tinyc_rbssa *f, int i, const char *kind,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int inst_err(tinyc_ctx *ctx, const tinyc_rbssa *f, int i, const char *kind,
		    const char *fmt, ...)
{
	tinyc_buf msg = {0};
	va_list ap;
	va_start(ap, fmt);
	char tmp[512];
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	tinyc_buf_printf(&msg, "RB-SSA %%%d (%s): %s", i, tinyc_rb_op_name(f->inst[i].op), tmp);
	tinyc_error_at(ctx, f->g ? f->g->src : NULL, f->inst[i].loc, kind, "%s",
		       msg.data ? msg.data : tmp);
	tinyc_buf_free(&msg);
	return -1;
}

/* A shape as text, in a caller's buffer. */
static const char *shape_text(const tinyc_rbssa *f, int rank, const tinyc_dim *shape,
			      tinyc_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = 0;
	tinyc_print_shape(f->g, rank, shape, b);
	return b->data ? b->data : "[]";
}

/* Whether two shapes are provably the same. */
static int same_shape(const tinyc_rbssa *f, int ra, const tinyc_dim *a, int rb,
		      const tinyc_dim *b)
{
	if (ra != rb)
		return 0;
	for (int d = 0; d < ra; d++)
		if (!tinyc_rbssa_dim_equal(f, a[d], b[d]))
			return 0;
	return 1;
}

/* Element-count check of a reshape: -1 provably different, 1 provably equal, 0 unknown. */
static int reshape_count(const tinyc_rbssa *f, const tinyc_rb_inst *in, const tinyc_rb_inst *x)
{
	int64_t ca = 1, cb = 1;
	int known = 1;
	int symcount[64] = {0};
	int nsym = f->nsym < 64 ? f->nsym : 64;
	for (int pass = 0; pass < 2; pass++) {
		const tinyc_rb_inst *v = pass ? x : in;
		int64_t *c = pass ? &cb : &ca;
		for (int d = 0; d < v->rank; d++) {
			int64_t s = tinyc_rbssa_dim_value(f, v->shape[d]);
			if (s < 0) {
				if (v->shape[d].sym >= nsym)
					return 0;	/* beyond the table: undecided */
				known = 0;
				symcount[v->shape[d].sym] += pass ? -1 : 1;
				continue;
			}
			if (s > 0 && *c > INT64_MAX / s)
				return 0;
			*c *= s;
		}
	}
	if (known)
		return ca == cb ? 1 : -1;
	for (int s = 0; s < nsym; s++)
		if (symcount[s])
			return 0;
	return ca == cb ? 1 : -1;
}

/* Check the view op at i against its operand x. */
static int verify_view(tinyc_ctx *ctx, const tinyc_rbssa *f, int i, const tinyc_rb_inst *x)
{
	const tinyc_rb_inst *in = &f->inst[i];
	tinyc_buf b1 = {0}, b2 = {0};
	int rc = 0;
	if (in->dtype != x->dtype)
		return inst_err(ctx, f, i, "TypeMismatch", "a view of %s cannot be %s",
				tinyc_dtype_name(x->dtype), tinyc_dtype_name(in->dtype));
	switch (in->op) {
	case TINYC_RB_RESHAPE:
		if (reshape_count(f, in, x) < 0)
			rc = inst_err(ctx, f, i, "ShapeMismatch", "reshape of %s to %s changes the "
				      "element count", shape_text(f, x->rank, x->shape, &b1),
				      shape_text(f, in->rank, in->shape, &b2));
		break;
	case TINYC_RB_TRANSPOSE: {
		int seen[TINYC_MAX_RANK] = {0};
		int ok = in->ndims == in->rank && in->rank == x->rank;
		for (int d = 0; ok && d < in->rank; d++) {
			int p = in->dims[d];
			ok = p >= 0 && p < x->rank && !seen[p]++ &&
			     tinyc_rbssa_dim_equal(f, in->shape[d], x->shape[p]);
		}
		if (!ok)
			rc = inst_err(ctx, f, i, "InvalidAttribute", "perm is not a permutation taking "
				      "%s to %s", shape_text(f, x->rank, x->shape, &b1),
				      shape_text(f, in->rank, in->shape, &b2));
		break;
	}
	case TINYC_RB_BROADCAST_IN_DIM: {
		int r = in->rank, p = x->rank;
		if (p > r) {
			rc = inst_err(ctx, f, i, "BroadcastMismatch", "operand %s has a higher rank "
				      "than the result %s", shape_text(f, p, x->shape, &b1),
				      shape_text(f, r, in->shape, &b2));
			break;
		}
		int supplied[TINYC_MAX_RANK] = {0};
		for (int k = 0; k < in->ndims && !rc; k++) {
			int d = in->dims[k];
			if (d < r - p || d >= r || (k && d <= in->dims[k - 1]))
				rc = inst_err(ctx, f, i, "BroadcastMismatch", "dims must be increasing "
					      "result dims aligned with the operand (from %d to %d); "
					      "got %d", r - p, r - 1, d);
			else
				supplied[d] = 1;
		}
		for (int d = r - p; d < r && !rc; d++) {
			tinyc_dim od = x->shape[d - (r - p)];
			int ok = supplied[d] ? tinyc_rbssa_dim_equal(f, od, in->shape[d])
					     : tinyc_rbssa_dim_is1(f, od);
			if (!ok)
				rc = inst_err(ctx, f, i, "BroadcastMismatch", "operand %s does not "
					      "broadcast to %s at result dim %d (%s)",
					      shape_text(f, p, x->shape, &b1),
					      shape_text(f, r, in->shape, &b2), d,
					      supplied[d] ? "a supplied dim must equal the result's"
							  : "a broadcast dim must be 1");
		}
		break;
	}
	case TINYC_RB_PAD:
	case TINYC_RB_SLICE:
	case TINYC_RB_REVERSE: {
		if (in->rank != x->rank) {
			rc = inst_err(ctx, f, i, "ShapeMismatch", "changes the rank (%d to %d)",
				      x->rank, in->rank);
			break;
		}
		int seen[TINYC_MAX_RANK] = {0};
		for (int k = 0; in->op == TINYC_RB_REVERSE && k < in->ndims && !rc; k++)
			if (in->dims[k] < 0 || in->dims[k] >= in->rank || seen[in->dims[k]]++)
				rc = inst_err(ctx, f, i, "InvalidAttribute", "reversed dim %d out of "
					      "range or repeated", in->dims[k]);
		for (int d = 0; d < in->rank && !rc; d++) {
			int64_t xs = tinyc_rbssa_dim_value(f, x->shape[d]);
			int64_t rs = tinyc_rbssa_dim_value(f, in->shape[d]);
			int64_t lo = in->lo[d], hi = in->hi[d];
			int ok = 1;
			if (in->op == TINYC_RB_REVERSE)
				ok = tinyc_rbssa_dim_equal(f, x->shape[d], in->shape[d]);
			else if (in->op == TINYC_RB_PAD)
				ok = lo >= 0 && hi >= 0 && lo <= TINYC_MAX_DIM && hi <= TINYC_MAX_DIM &&
				     (lo + hi == 0 ? tinyc_rbssa_dim_equal(f, x->shape[d], in->shape[d])
						   : xs < 0 || rs < 0 || rs == xs + lo + hi);
			else
				ok = lo >= 0 && lo <= hi && (xs < 0 || hi <= xs) && rs == hi - lo;
			if (!ok)
				rc = inst_err(ctx, f, i, "ShapeMismatch", "dim %d: %s of %s does not "
					      "give %s", d, tinyc_rb_op_name(in->op),
					      shape_text(f, x->rank, x->shape, &b1),
					      shape_text(f, in->rank, in->shape, &b2));
		}
		break;
	}
	default:
		break;
	}
	tinyc_buf_free(&b1);
	tinyc_buf_free(&b2);
	return rc;
}

/* Check an elementwise instruction: operand shapes (no implicit broadcast) and dtypes. */
static int verify_ewise(tinyc_ctx *ctx, const tinyc_rbssa *f, int i)
{
	const tinyc_rb_inst *in = &f->inst[i];
	const tinyc_rb_inst *a = &f->inst[in->args[0]];
	for (int k = 0; k < in->nargs; k++) {
		const tinyc_rb_inst *x = &f->inst[in->args[k]];
		if (!same_shape(f, x->rank, x->shape, in->rank, in->shape)) {
			tinyc_buf b1 = {0}, b2 = {0};
			inst_err(ctx, f, i, "BroadcastMismatch", "operand %d (%%%d) has shape %s, the "
				 "result %s: both sides of an elementwise op must have the result's "
				 "shape (broadcast_in_dim it)", k + 1, in->args[k],
				 shape_text(f, x->rank, x->shape, &b1),
				 shape_text(f, in->rank, in->shape, &b2));
			tinyc_buf_free(&b1);
			tinyc_buf_free(&b2);
			return -1;
		}
	}
	switch (in->op) {
	case TINYC_RB_CAST:
		return 0;
	case TINYC_RB_BITCAST:
		if (tinyc_dtype_size(a->dtype) != tinyc_dtype_size(in->dtype))
			return inst_err(ctx, f, i, "TypeMismatch", "bitcast from %s to %s changes "
					"the item size", tinyc_dtype_name(a->dtype),
					tinyc_dtype_name(in->dtype));
		return 0;
	case TINYC_RB_SELECT:
		if (a->dtype != TINYC_BOOL)
			return inst_err(ctx, f, i, "TypeMismatch", "select condition is %s, not bool",
					tinyc_dtype_name(a->dtype));
		for (int k = 1; k < 3; k++)
			if (f->inst[in->args[k]].dtype != in->dtype)
				return inst_err(ctx, f, i, "TypeMismatch", "operand %d is %s, the "
						"result %s", k + 1,
						tinyc_dtype_name(f->inst[in->args[k]].dtype),
						tinyc_dtype_name(in->dtype));
		return 0;
	default:
		break;
	}
	for (int k = 1; k < in->nargs; k++)
		if (f->inst[in->args[k]].dtype != a->dtype)
			return inst_err(ctx, f, i, "TypeMismatch", "operands are %s and %s",
					tinyc_dtype_name(a->dtype),
					tinyc_dtype_name(f->inst[in->args[k]].dtype));
	tinyc_dtype want = in->op == TINYC_RB_COMPARE ? TINYC_BOOL : a->dtype;
	if (in->dtype != want)
		return inst_err(ctx, f, i, "TypeMismatch", "%s of %s gives %s, not %s",
				tinyc_rb_op_name(in->op), tinyc_dtype_name(a->dtype),
				tinyc_dtype_name(want), tinyc_dtype_name(in->dtype));
	if (in->op == TINYC_RB_COMPARE && (in->pred < TINYC_RB_LT || in->pred > TINYC_RB_EQ))
		return inst_err(ctx, f, i, "InvalidAttribute", "unknown predicate");
	if (!tinyc_dom_accepts(tinyc_rb_op_dom(in->op), a->dtype))
		return inst_err(ctx, f, i, "UnsupportedOp", "%s is not defined on %s",
				tinyc_rb_op_name(in->op), tinyc_dtype_name(a->dtype));
	return 0;
}

/* Check a reduce: axes, result shape, accumulator dtype (seed §3.3) and init. */
static int verify_reduce(tinyc_ctx *ctx, const tinyc_rbssa *f, int i)
{
	const tinyc_rb_inst *in = &f->inst[i];
	const tinyc_rb_inst *x = &f->inst[in->args[0]];
	if (in->acc == TINYC_DTYPE_NONE)
		return inst_err(ctx, f, i, "AccDtypeMissing", "%s has no accumulator dtype",
				reduce_name(in->redop));
	if (in->acc < 0 || in->acc >= TINYC_DTYPE_COUNT)
		return inst_err(ctx, f, i, "InvalidAttribute", "bad accumulator dtype");
	if (in->redop == TINYC_RED_ADD && tinyc_dtype_is_16bit_float(in->acc))
		return inst_err(ctx, f, i, "AccDtypeMissing", "reduce_sum would accumulate in %s; "
				"it needs a float accumulator", tinyc_dtype_name(in->acc));
	if (in->redop != TINYC_RED_ADD && in->redop != TINYC_RED_MAX && in->redop != TINYC_RED_MUL)
		return inst_err(ctx, f, i, "InvalidAttribute", "unknown reduce op");
	if (in->init_is_float != tinyc_dtype_is_float(in->acc))
		return inst_err(ctx, f, i, "TypeMismatch", "init is not a %s value",
				tinyc_dtype_name(in->acc));
	int red[TINYC_MAX_RANK] = {0};
	for (int k = 0; k < in->ndims; k++) {
		int d = in->dims[k];
		if (d < 0 || d >= x->rank || (k && d <= in->dims[k - 1]))
			return inst_err(ctx, f, i, "InvalidAttribute", "reduced dims must be "
					"increasing operand dims (rank %d); got %d", x->rank, d);
		red[d] = 1;
	}
	int keep = in->rank == x->rank;
	int ok = keep || in->rank == x->rank - in->ndims;
	for (int d = 0, o = 0; ok && d < x->rank; d++) {
		if (red[d] && !keep)
			continue;
		ok = red[d] ? tinyc_rbssa_dim_is1(f, in->shape[o])
			    : tinyc_rbssa_dim_equal(f, in->shape[o], x->shape[d]);
		o++;
	}
	if (!ok) {
		tinyc_buf b1 = {0}, b2 = {0};
		inst_err(ctx, f, i, "ShapeMismatch", "reducing dims of %s cannot give %s",
			 shape_text(f, x->rank, x->shape, &b1), shape_text(f, in->rank, in->shape, &b2));
		tinyc_buf_free(&b1);
		tinyc_buf_free(&b2);
		return -1;
	}
	return 0;
}

/* Check a shape and stride list: constant dims in range, symbols of the graph. */
static int dims_ok(const tinyc_rbssa *f, int rank, const tinyc_dim *d, int allow0)
{
	for (int k = 0; k < rank; k++) {
		if (d[k].sym >= f->nsym)
			return 0;
		if (d[k].sym < 0 && (d[k].val < (allow0 ? 0 : 1) || d[k].val > TINYC_MAX_DIM))
			return 0;
	}
	return 1;
}

/* Verify the function (see rbssa.h). */
int tinyc_rbssa_verify(tinyc_ctx *ctx, const tinyc_rbssa *f)
{
	if (!f)
		return tinyc_error(ctx, "InvalidArgument", "no RB-SSA function");
	int bad = 0;
	for (int i = 0; i < f->n; i++) {
		const tinyc_rb_inst *in = &f->inst[i];
		if (in->op < 0 || in->op >= TINYC_RB_OP_COUNT || in->nargs != tinyc_rb_op_nargs(in->op))
			return inst_err(ctx, f, i, "InvalidGraph", "unknown op or operand count");
		if (in->dtype < 0 || in->dtype >= TINYC_DTYPE_COUNT || in->rank < 0 ||
		    in->rank > TINYC_MAX_RANK || !dims_ok(f, in->rank, in->shape, 0) ||
		    (in->has_strides && !dims_ok(f, in->rank, in->strides, 1)))
			return inst_err(ctx, f, i, "InvalidGraph", "bad dtype, rank, shape or strides");
		int args_ok = 1;
		for (int k = 0; k < in->nargs; k++)
			args_ok &= in->args[k] >= 0 && in->args[k] < i &&
				   f->inst[in->args[k]].op != TINYC_RB_YIELD;
		if (!args_ok) {
			bad = inst_err(ctx, f, i, "UndefinedValue", "an operand is not an earlier "
				       "value");
			continue;
		}
		int rc = 0;
		switch (tinyc_rb_op_class(in->op)) {
		case TINYC_RB_CLASS_LEAF:
			if (in->op == TINYC_RB_CONSTANT && in->rank != 0)
				rc = inst_err(ctx, f, i, "ShapeMismatch", "a constant is a scalar");
			if (in->op == TINYC_RB_READ && (in->slot < 0 || !in->name))
				rc = inst_err(ctx, f, i, "InvalidAttribute", "read needs a slot and a "
					      "name");
			break;
		case TINYC_RB_CLASS_VIEW:
			rc = verify_view(ctx, f, i, &f->inst[in->args[0]]);
			break;
		case TINYC_RB_CLASS_EWISE:
			rc = verify_ewise(ctx, f, i);
			break;
		case TINYC_RB_CLASS_REDUCE:
			rc = verify_reduce(ctx, f, i);
			break;
		case TINYC_RB_CLASS_YIELD: {
			const tinyc_rb_inst *x = &f->inst[in->args[0]];
			if (!in->name)
				rc = inst_err(ctx, f, i, "InvalidAttribute", "yield needs a name");
			else if (x->dtype != in->dtype ||
				 !same_shape(f, x->rank, x->shape, in->rank, in->shape))
				rc = inst_err(ctx, f, i, "TypeMismatch", "yield of %%%d changes its "
					      "dtype or shape", in->args[0]);
			for (int j = 0; !rc && j < i; j++)
				if (f->inst[j].op == TINYC_RB_YIELD && f->inst[j].name &&
				    !strcmp(f->inst[j].name, in->name))
					rc = inst_err(ctx, f, i, "DuplicateName", "two yields named "
						      "\"%s\"", in->name);
			break;
		}
		}
		if (rc < 0)
			bad = -1;
	}
	return bad;
}
