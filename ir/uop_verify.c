/* The UOp verifier: infers every node's dtype and shape from its operands and attributes,
 * compares them with the dtype and shape written on the line, and validates the attributes
 * (DESIGN.md §2 typing rules; seed 002 §1 and §9).
 *
 * Diagnostic kinds reported here:
 *   TypeMismatch           binary operands of different dtypes; a dtype an op does not take
 *                          (float-only math on ints, IDIV/MOD/SHL/SHR on non-ints, bitwise
 *                          ops on floats, SUB/NEG/RELU on bool); WHERE condition not bool or
 *                          branches not of the line's dtype; BITCAST changing the item size;
 *                          declared dtype differing from the inferred one.
 *   ShapeMismatch          declared shape differs from the inferred one: rank, two different
 *                          constants, or two different symbols ("declared [M,N] but inferred
 *                          [M,K]").
 *   AxisAlignmentMismatch  a size named by a symbol disagrees with the value's size (seed §9):
 *                          declared vs inferred where one side is a symbol and the other a
 *                          constant (unbound: unprovable; bound: a different value); RESHAPE or
 *                          EXPAND shape= differing from the line's shape; EXPAND of an axis that
 *                          is not 1 to another size.
 *   BroadcastMismatch      right-aligned broadcasting fails: "[M,K] vs [K,N] at axis -1".
 *   AccDtypeMissing        REDUCE ADD/MUL accumulating (acc=, else the line's dtype) in a
 *                          16-bit float.
 *   InvalidReshape         RESHAPE element counts differ or cannot be shown equal.
 *   InvalidPermutation     perm is not a permutation of 0..r-1.
 *   InvalidAxis            REDUCE/FLIP axis outside -r..r-1, or repeated.
 *   InvalidAttribute       PAD/SHRINK pair count not the rank, negative pads, empty or
 *                          out-of-range bounds, EXPAND changing the rank, negative strides or
 *                          slots, duplicate BUFFER slots or names, duplicate OUTPUT names, acc=
 *                          that cannot hold the operand's values.
 *   InvalidConst           CONST literal that does not fit its dtype, or CONST of rank > 0.
 *   IntegerOverflow        element count, byte size or stride extent beyond int64.
 *   SizeTooLarge           a value of more than TINYC_MAX_BYTES (2^46) bytes, or strides
 *                          spanning more (the same cap on every device; docs/reliability.md).
 *   StrideOutOfRange       a stride beyond TINYC_MAX_DIM.
 *   OverlappingStrides     OUTPUT strides= that put two elements at one address.
 *   SlotOutOfRange         a BUFFER slot at or beyond TINYC_MAX_NODES (slots index arrays
 *                          the runner allocates).
 *   UnboundSymbol          PAD of a symbolic axis whose symbol is not bound (M+2 is not a
 *                          size the format can write).
 *   InvalidShape           malformed node built through the API: rank beyond TINYC_MAX_RANK,
 *                          a dim < 1 or beyond TINYC_MAX_DIM, an unknown symbol.
 *   InvalidOperand         operand count not the op's arity, or an operand not defined before.
 *   UnknownOp, UnknownDtype  op or dtype out of range (API-built graphs only).
 *
 * Decisions beyond DESIGN.md:
 *   - Sizes compare equal when they are the same constant, the same symbol, or their values
 *     under the bindings are equal.  A size-1 axis (a constant 1 or a symbol bound to 1)
 *     broadcasts; two different unbound symbols cannot be shown equal: BroadcastMismatch.
 *   - CONST: bool literals only for bool, and bool takes only true/false; integer dtypes take
 *     integer literals in range (no float literals, not even 2.0); float dtypes take integer
 *     and float literals whose finite values do not round to infinity; inf and nan are fine.
 *   - Arithmetic: ADD, MUL, MAX and comparisons take every dtype; SUB, NEG and RELU not bool;
 *     FDIV and the unary math ops floats only; IDIV, MOD, SHL, SHR integers only; AND, OR,
 *     XOR bool and integers.
 *   - REDUCE: the accumulator (acc=, else the line's dtype) must hold the operand's values:
 *     floats in a float at least as wide; integers in a wider-or-equal integer of a compatible
 *     sign, or any float; bool in anything for MAX/MUL and in a number for ADD.  With acc=
 *     given, the result is a float exactly when acc is.  axes=[] is the identity.
 *   - SHRINK bounds need start < end (a size-0 axis cannot be declared); an end beyond an
 *     unbound symbolic size cannot be checked and is accepted.
 *   - BUFFER names and OUTPUT names are two namespaces, each unique; slots are unique.
 *   - A node whose operand failed is skipped silently (no cascades); every other node is
 *     checked, so all independent errors are reported.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/uop.h"

/* State of one verifier run. */
typedef struct verifier {
	tinyc_ctx *ctx;			/* where diagnostics go */
	const tinyc_graph *g;		/* the graph checked */
	const tinyc_bindings *b;	/* symbol values, or NULL */
	const tinyc_uop *u;		/* the node being checked */
	int nerr;			/* errors reported so far */
} verifier;

/* An inferred shape. */
typedef struct shape {
	int rank;			/* number of axes */
	tinyc_dim d[TINYC_MAX_RANK];	/* sizes */
} shape;

/* Report an error of `kind` at loc (the node's own loc when loc is unknown). */
static void __attribute__((format(printf, 4, 5)))
err(verifier *v, tinyc_loc loc, const char *kind, const char *fmt, ...)
{
	va_list ap;
	if (loc.line <= 0)
		loc = v->u->loc;
	va_start(ap, fmt);
	tinyc_verror_at(v->ctx, v->g->src, loc, kind, fmt, ap);
	va_end(ap);
	v->nerr++;
}

/* Where attribute a of the current node is written (its first attribute, else the line). */
static tinyc_loc aloc(const verifier *v, tinyc_attr a)
{
	if (v->u->attr_locs[a].line > 0)
		return v->u->attr_locs[a];
	return v->u->attr_loc.line > 0 ? v->u->attr_loc : v->u->loc;
}

/* The value of a size under the bindings; -1 for an unbound symbol. */
static int64_t dim_val(const verifier *v, tinyc_dim d)
{
	if (d.sym < 0)
		return d.val;
	if (v->b && v->b->val && d.sym < v->b->n && v->b->val[d.sym] >= 0)
		return v->b->val[d.sym];
	return -1;
}

/* Whether two sizes are provably equal. */
static int dim_eq(const verifier *v, tinyc_dim a, tinyc_dim b)
{
	if (a.sym >= 0 && a.sym == b.sym)
		return 1;
	int64_t x = dim_val(v, a), y = dim_val(v, b);
	return x >= 0 && x == y;
}

/* Whether a size is provably 1. */
static int dim_is_one(const verifier *v, tinyc_dim d)
{
	return dim_val(v, d) == 1;
}

static tinyc_dim const_dim(int64_t n)
{
	return (tinyc_dim){n, -1};
}

/* Append one size ("M" or "4") to a buffer. */
static void put_dim(const verifier *v, tinyc_buf *out, tinyc_dim d)
{
	if (d.sym < 0)
		tinyc_buf_printf(out, "%" PRId64, d.val);
	else if (d.sym < v->g->nsym && v->g->syms && v->g->syms[d.sym])
		tinyc_buf_puts(out, v->g->syms[d.sym]);
	else
		tinyc_buf_printf(out, "?%d", d.sym);
}

/* Format a shape as "[M,1,K]" into a new string (the caller frees it). */
static char *fmt_shape(const verifier *v, int rank, const tinyc_dim *d)
{
	tinyc_buf out = {0};
	tinyc_buf_putc(&out, '[');
	for (int i = 0; i < rank; i++) {
		if (i)
			tinyc_buf_putc(&out, ',');
		put_dim(v, &out, d[i]);
	}
	tinyc_buf_putc(&out, ']');
	if (out.oom) {
		tinyc_buf_free(&out);
		return NULL;
	}
	return out.data;
}

/* A string for messages: s, or a placeholder when formatting ran out of memory. */
static const char *str(const char *s)
{
	return s ? s : "[?]";
}

/* The declared shape of node i. */
static shape node_shape(const verifier *v, int i)
{
	shape s;
	const tinyc_uop *n = &v->g->nodes[i];
	s.rank = n->rank;
	for (int k = 0; k < n->rank; k++)
		s.d[k] = n->shape[k];
	return s;
}

/* An element count: a constant product times unbound symbols (sorted). */
typedef struct count {
	int64_t c;			/* product of the known sizes */
	int nsym;			/* number of unbound symbols */
	int sym[TINYC_MAX_RANK];	/* their indices, sorted */
} count;

/* Compute the element count of a shape; -1 when the known product overflows int64. */
static int elem_count(const verifier *v, int rank, const tinyc_dim *d, count *out)
{
	out->c = 1;
	out->nsym = 0;
	for (int i = 0; i < rank; i++) {
		int64_t x = dim_val(v, d[i]);
		if (x < 0) {
			int k = out->nsym++;
			while (k > 0 && out->sym[k - 1] > d[i].sym) {	/* insertion sort */
				out->sym[k] = out->sym[k - 1];
				k--;
			}
			out->sym[k] = d[i].sym;
		} else if (__builtin_mul_overflow(out->c, x, &out->c)) {
			return -1;
		}
	}
	return 0;
}

/* Whether two element counts are provably equal. */
static int count_eq(const count *a, const count *b)
{
	if (a->c != b->c || a->nsym != b->nsym)
		return 0;
	for (int i = 0; i < a->nsym; i++)
		if (a->sym[i] != b->sym[i])
			return 0;
	return 1;
}

/* Format an element count as "2*M*K" (or "12") into a new string. */
static char *fmt_count(const verifier *v, const count *c)
{
	tinyc_buf out = {0};
	if (c->c != 1 || c->nsym == 0)
		tinyc_buf_printf(&out, "%" PRId64, c->c);
	for (int i = 0; i < c->nsym; i++) {
		if (i || c->c != 1)
			tinyc_buf_putc(&out, '*');
		put_dim(v, &out, (tinyc_dim){0, c->sym[i]});
	}
	if (out.oom) {
		tinyc_buf_free(&out);
		return NULL;
	}
	return out.data;
}

/* Check that a node's declared rank and dims are well formed (API-built graphs). */
static int check_declared(verifier *v)
{
	const tinyc_uop *u = v->u;
	if (u->rank < 0 || u->rank > TINYC_MAX_RANK || (u->rank > 0 && !u->shape)) {
		err(v, u->shape_loc, "InvalidShape",
		    "rank %d is outside 0..%d", u->rank, TINYC_MAX_RANK);
		return -1;
	}
	for (int k = 0; k < u->rank; k++) {
		tinyc_dim d = u->shape[k];
		if (d.sym >= v->g->nsym) {
			err(v, u->shape_loc, "InvalidShape", "axis %d names an unknown symbol", k);
			return -1;
		}
		if (d.sym < 0 && (d.val < 1 || d.val > TINYC_MAX_DIM)) {
			err(v, u->shape_loc, "InvalidShape", "axis %d has size %" PRId64
			    ", outside 1..%" PRId64, k, d.val, TINYC_MAX_DIM);
			return -1;
		}
	}
	return 0;
}

/* Check that the declared shape's element count and byte size fit in int64, and its bytes
 * (unbound symbols counted as 1) in TINYC_MAX_BYTES. */
static int check_size(verifier *v)
{
	const tinyc_uop *u = v->u;
	count c;
	int64_t bytes;
	if (elem_count(v, u->rank, u->shape, &c) == 0 &&
	    !__builtin_mul_overflow(c.c, (int64_t)tinyc_dtype_size(u->dtype), &bytes)) {
		if (bytes <= TINYC_MAX_BYTES)
			return 0;
		char *s = fmt_shape(v, u->rank, u->shape);
		err(v, u->shape_loc, "SizeTooLarge", "%s%s takes %" PRId64 " bytes; a value "
		    "holds at most 2^46 bytes on every device", tinyc_dtype_name(u->dtype),
		    str(s), bytes);
		free(s);
		return -1;
	}
	char *s = fmt_shape(v, u->rank, u->shape);
	if (elem_count(v, u->rank, u->shape, &c) < 0)
		err(v, u->shape_loc, "IntegerOverflow",
		    "the element count of %s does not fit in int64",
		    str(s));
	else
		err(v, u->shape_loc, "IntegerOverflow",
		    "the byte size of %s%s does not fit in int64",
		    tinyc_dtype_name(u->dtype), str(s));
	free(s);
	return -1;
}

/* Check that an OUTPUT's strides give every element its own address (otherwise the result
 * depends on the order of the writes: a race on the GPU).  The rule is the nested one: with
 * the axes of size > 1 sorted by stride, each stride is beyond the span of the axes before
 * it.  A few exotic layouts that are one-to-one without nesting are refused too. */
static int check_overlap(verifier *v)
{
	const tinyc_uop *u = v->u;
	int ax[TINYC_MAX_RANK], na = 0;
	for (int k = 0; k < u->rank; k++) {
		int64_t st = dim_val(v, u->strides[k]), n = dim_val(v, u->shape[k]);
		if (st < 0 || n < 0)
			return 0;	/* not known: checked once bound */
		if (n == 1)
			continue;
		int j = na++;
		while (j > 0 && dim_val(v, u->strides[ax[j - 1]]) > st) {	/* insertion sort */
			ax[j] = ax[j - 1];
			j--;
		}
		ax[j] = k;
	}
	int64_t span = 1;	/* elements spanned by the axes so far */
	for (int j = 0; j < na; j++) {
		int k = ax[j];
		int64_t st = dim_val(v, u->strides[k]), n = dim_val(v, u->shape[k]);
		if (st < span) {
			err(v, aloc(v, TINYC_ATTR_STRIDES), "OverlappingStrides",
			    "axis %d (size %" PRId64 ", stride %" PRId64 ") overlaps the %" PRId64
			    " elements spanned by the axes of smaller stride: two elements of the "
			    "OUTPUT would be written to one address", k, n, st, span);
			return -1;
		}
		span = st * (n - 1) + span;	/* no overflow: check_strides bounded the extent */
	}
	return 0;
}

/* Check explicit strides (BUFFER, OUTPUT): non-negative, each at most TINYC_MAX_DIM, the
 * storage they span (bytes) within TINYC_MAX_BYTES, and for an OUTPUT no two elements at
 * one address (see check_overlap).  Unbound symbols are not checked. */
static int check_strides(verifier *v)
{
	const tinyc_uop *u = v->u;
	int64_t extent = 0, bytes;
	if (!u->strides)
		return 0;
	for (int k = 0; k < u->rank; k++) {
		int64_t st = dim_val(v, u->strides[k]), n = dim_val(v, u->shape[k]), t;
		if (u->strides[k].sym < 0 && st < 0) {
			err(v, aloc(v, TINYC_ATTR_STRIDES), "InvalidAttribute",
			    "stride %" PRId64 " of axis %d is negative", st, k);
			return -1;
		}
		if (st > TINYC_MAX_DIM) {
			err(v, aloc(v, TINYC_ATTR_STRIDES), "StrideOutOfRange",
			    "stride %" PRId64 " of axis %d is beyond 2^40", st, k);
			return -1;
		}
		if (st < 0 || n < 0)
			continue;
		if (__builtin_mul_overflow(n - 1, st, &t) ||
		    __builtin_add_overflow(extent, t, &extent)) {
			err(v, aloc(v, TINYC_ATTR_STRIDES), "IntegerOverflow",
			    "the extent of the strides does not fit in int64");
			return -1;
		}
	}
	if (__builtin_mul_overflow(extent + 1, (int64_t)tinyc_dtype_size(u->dtype), &bytes) ||
	    bytes > TINYC_MAX_BYTES) {
		err(v, aloc(v, TINYC_ATTR_STRIDES), "SizeTooLarge", "the strides span %" PRId64
		    " elements of %s; a buffer holds at most 2^46 bytes on every device",
		    extent + 1, tinyc_dtype_name(u->dtype));
		return -1;
	}
	return u->op == TINYC_OP_OUTPUT ? check_overlap(v) : 0;
}

/* Check a CONST: shape [] and a literal that fits the line's dtype. */
static int check_const(verifier *v)
{
	const tinyc_uop *u = v->u;
	const tinyc_lit *l = &u->lit;
	tinyc_dtype t = u->dtype;
	const char *text = l->text ? l->text : "";
	int bad = 0;
	if (u->rank != 0) {
		char *s = fmt_shape(v, u->rank, u->shape);
		err(v, u->shape_loc, "InvalidConst",
		    "CONST is a scalar: its shape must be [], not %s",
		    str(s));
		free(s);
		bad = -1;
	}
	tinyc_loc at = u->src_loc[0].line > 0 ? u->src_loc[0] : u->attr_loc;
	if (t == TINYC_BOOL) {
		if (l->kind != TINYC_LIT_BOOL) {
			err(v, at, "InvalidConst", "bool takes true or false, not %s", text);
			return -1;
		}
		return bad;
	}
	if (l->kind == TINYC_LIT_BOOL) {
		err(v, at, "InvalidConst", "%s takes a number, not %s", tinyc_dtype_name(t), text);
		return -1;
	}
	if (tinyc_dtype_is_int(t)) {
		int bits = 8 * tinyc_dtype_size(t);
		if (l->kind != TINYC_LIT_INT) {
			err(v, at, "InvalidConst", "%s takes an integer literal, not %s",
			    tinyc_dtype_name(t), text);
			return -1;
		}
		int64_t lo = 0, hi = INT64_MAX;	/* ulong: only negatives fail */
		if (tinyc_dtype_is_signed(t) && bits < 64) {
			lo = -(INT64_C(1) << (bits - 1));
			hi = (INT64_C(1) << (bits - 1)) - 1;
		} else if (tinyc_dtype_is_signed(t)) {
			lo = INT64_MIN;
		} else if (bits < 64) {
			hi = (INT64_C(1) << bits) - 1;
		}
		uint64_t top = !tinyc_dtype_is_signed(t) && bits == 64 ? UINT64_MAX : (uint64_t)hi;
		if (l->i < lo || l->i > hi) {
			err(v, at, "InvalidConst", "%" PRId64 " does not fit in %s (%" PRId64
			    "..%" PRIu64 ")", l->i, tinyc_dtype_name(t), lo, top);
			return -1;
		}
		return bad;
	}
	/* Float dtypes: a finite value must not round to infinity. */
	double x = l->kind == TINYC_LIT_INT ? (double)l->i : l->f;
	if (l->kind == TINYC_LIT_FLOAT && isinf(x) && !strstr(text, "inf") &&
	    !strstr(text, "INF")) {
		err(v, at, "InvalidConst", "%s is out of the range of double", text);
		return -1;
	}
	double limit = INFINITY;	/* smallest magnitude that rounds to infinity */
	if (t == TINYC_HALF)
		limit = 65520.0;
	else if (t == TINYC_BFLOAT16)
		limit = 0x1.ffp127;
	else if (t == TINYC_FLOAT)
		limit = 0x1.ffffffp127;
	if (isfinite(x) && fabs(x) >= limit) {
		err(v, at, "InvalidConst", "%s is out of the range of %s", text,
		    tinyc_dtype_name(t));
		return -1;
	}
	return bad;
}

/* What dtype t lacks to be an operand of op (the op table's domain), NULL if it fits. */
static const char *dtype_restriction(tinyc_op op, tinyc_dtype t)
{
	tinyc_opdom d = tinyc_op_info(op)->dom;
	return tinyc_dom_accepts(d, t) ? NULL : tinyc_dom_phrase(d);
}

/* Whether an accumulator of dtype acc holds the values of dtype t under REDUCE op r. */
static int acc_holds(tinyc_dtype acc, tinyc_dtype t, tinyc_redop r)
{
	int sa = tinyc_dtype_size(acc), st = tinyc_dtype_size(t);
	if (t == TINYC_BOOL)
		return r == TINYC_RED_ADD ? acc != TINYC_BOOL : 1;
	if (tinyc_dtype_is_float(t))
		return tinyc_dtype_is_float(acc) && (acc == t || sa > st);
	if (tinyc_dtype_is_float(acc))
		return 1;
	if (!tinyc_dtype_is_int(acc))
		return 0;
	if (acc == t)
		return 1;
	if (tinyc_dtype_is_signed(t))	/* signed values need a signed accumulator */
		return tinyc_dtype_is_signed(acc) && sa >= st;
	return tinyc_dtype_is_signed(acc) ? sa > st : sa >= st;
}

/* Infer node u's dtype into *out; report operand dtype errors. */
static int infer_dtype(verifier *v, tinyc_dtype *out)
{
	const tinyc_uop *u = v->u;
	const tinyc_uop *n = v->g->nodes;
	tinyc_dtype d0 = u->nsrc > 0 ? n[u->src[0]].dtype : TINYC_DTYPE_NONE;
	const char *opname = tinyc_op_info(u->op)->name;
	const char *need;

	switch (u->op) {
	case TINYC_OP_BUFFER:
	case TINYC_OP_CONST:
	case TINYC_OP_CAST:
		*out = u->dtype;
		return 0;
	case TINYC_OP_BITCAST:
		if (tinyc_dtype_size(d0) != tinyc_dtype_size(u->dtype)) {
			err(v, u->type_loc, "TypeMismatch",
			    "BITCAST from %s (%d bytes) to %s (%d bytes) "
			    "changes the item size", tinyc_dtype_name(d0), tinyc_dtype_size(d0),
			    tinyc_dtype_name(u->dtype), tinyc_dtype_size(u->dtype));
			return -1;
		}
		*out = u->dtype;
		return 0;
	case TINYC_OP_WHERE: {
		int bad = 0;
		if (d0 != TINYC_BOOL) {
			err(v, u->src_loc[0], "TypeMismatch",
			    "WHERE needs a bool condition, not %s", tinyc_dtype_name(d0));
			bad = -1;
		}
		for (int k = 1; k < 3; k++) {
			tinyc_dtype dk = n[u->src[k]].dtype;
			if (dk != u->dtype) {
				err(v, u->src_loc[k], "TypeMismatch",
				    "WHERE value has dtype %s but the line says %s",
				    tinyc_dtype_name(dk), tinyc_dtype_name(u->dtype));
				bad = -1;
			}
		}
		*out = u->dtype;
		return bad;
	}
	case TINYC_OP_REDUCE: {
		tinyc_dtype acc = u->acc != TINYC_DTYPE_NONE ? u->acc : u->dtype;
		const char *r = tinyc_redop_name(u->redop);
		*out = u->dtype;
		if (u->acc != TINYC_DTYPE_NONE && (u->acc < 0 || u->acc >= TINYC_DTYPE_COUNT)) {
			err(v, aloc(v, TINYC_ATTR_ACC), "InvalidAttribute", "acc= is not a dtype");
			return -1;
		}
		if ((u->redop == TINYC_RED_ADD || u->redop == TINYC_RED_MUL) &&
		    tinyc_dtype_is_16bit_float(acc)) {
			if (u->acc != TINYC_DTYPE_NONE)
				err(v, aloc(v, TINYC_ATTR_ACC), "AccDtypeMissing",
				    "REDUCE %s accumulates in %s; "
				    "accumulate in float (acc=float)", r, tinyc_dtype_name(acc));
			else
				err(v, u->type_loc, "AccDtypeMissing",
				    "REDUCE %s would accumulate in %s; "
				    "give acc=float", r, tinyc_dtype_name(acc));
			return -1;
		}
		if (!acc_holds(acc, d0, u->redop)) {
			if (u->acc != TINYC_DTYPE_NONE)
				err(v, aloc(v, TINYC_ATTR_ACC), "InvalidAttribute",
				    "acc=%s cannot accumulate %s values under %s",
				    tinyc_dtype_name(acc), tinyc_dtype_name(d0), r);
			else
				err(v, u->type_loc, "TypeMismatch", "REDUCE %s of %s values cannot "
				    "accumulate in %s (the line's dtype); CAST or give acc=",
				    r, tinyc_dtype_name(d0), tinyc_dtype_name(acc));
			return -1;
		}
		if (u->acc != TINYC_DTYPE_NONE &&
		    tinyc_dtype_is_float(u->acc) != tinyc_dtype_is_float(u->dtype)) {
			err(v, u->type_loc, "TypeMismatch",
			    "REDUCE accumulating in %s cannot produce %s; CAST explicitly",
			    tinyc_dtype_name(u->acc), tinyc_dtype_name(u->dtype));
			return -1;
		}
		return 0;
	}
	default:
		break;
	}
	if (tinyc_op_is_binary(u->op)) {
		tinyc_dtype d1 = n[u->src[1]].dtype;
		if (d0 != d1) {
			err(v, u->src_loc[1], "TypeMismatch", "%s operands have dtypes %s and %s "
			    "(no implicit promotion: CAST explicitly)", opname,
			    tinyc_dtype_name(d0), tinyc_dtype_name(d1));
			return -1;
		}
	}
	if ((need = dtype_restriction(u->op, d0))) {
		err(v, u->src_loc[0], "TypeMismatch", "%s needs %s operand, not %s", opname, need,
		    tinyc_dtype_name(d0));
		return -1;
	}
	*out = tinyc_op_info(u->op)->dtrule == TINYC_DT_BOOL ? TINYC_BOOL : d0;
	return 0;
}

/* Right-aligned broadcast of node u's operands into *out. */
static int broadcast(verifier *v, shape *out)
{
	const tinyc_uop *u = v->u;
	shape in[3];
	out->rank = 0;
	for (int k = 0; k < u->nsrc; k++) {
		in[k] = node_shape(v, u->src[k]);
		if (in[k].rank > out->rank)
			out->rank = in[k].rank;
	}
	for (int ax = 1; ax <= out->rank; ax++) {
		int who = -1;
		tinyc_dim r = const_dim(1);
		for (int k = 0; k < u->nsrc; k++) {
			if (in[k].rank < ax)
				continue;
			tinyc_dim d = in[k].d[in[k].rank - ax];
			if (who < 0 || (dim_is_one(v, r) && !dim_is_one(v, d))) {
				r = d;
				who = k;
			} else if (!dim_eq(v, r, d) && !dim_is_one(v, d)) {
				char *a = fmt_shape(v, in[who].rank, in[who].d);
				char *b = fmt_shape(v, in[k].rank, in[k].d);
				err(v, u->src_loc[who], "BroadcastMismatch", "%s vs %s at axis -%d",
				    str(a), str(b), ax);
				free(a);
				free(b);
				return -1;
			}
		}
		out->d[out->rank - ax] = r;
	}
	return 0;
}

/* Normalise an axis list (REDUCE, FLIP) for rank r into seen[]; InvalidAxis on error. */
static int check_axes(verifier *v, int r, int seen[TINYC_MAX_RANK])
{
	const tinyc_uop *u = v->u;
	memset(seen, 0, TINYC_MAX_RANK * sizeof(int));
	if (u->naxes < 0 || (u->naxes > 0 && !u->axes)) {
		err(v, aloc(v, TINYC_ATTR_AXES), "InvalidAttribute", "axes= is malformed");
		return -1;
	}
	for (int k = 0; k < u->naxes; k++) {
		int64_t a = u->axes[k];
		if (a < -r || a >= r) {
			err(v, aloc(v, TINYC_ATTR_AXES), "InvalidAxis",
			    "axis %" PRId64 " is out of range for "
			    "rank %d (%d..%d)", a, r, -r, r - 1);
			return -1;
		}
		if (a < 0)
			a += r;
		if (seen[a]) {
			err(v, aloc(v, TINYC_ATTR_AXES), "InvalidAxis",
			    "axis %" PRId64 " is repeated",
			    u->axes[k]);
			return -1;
		}
		seen[a] = 1;
	}
	return 0;
}

/* Compare a shape attribute (RESHAPE, EXPAND shape=) with the line's shape. */
static int check_attr_vs_line(verifier *v, const char *what, int rank, const tinyc_dim *d)
{
	const tinyc_uop *u = v->u;
	int same = rank == u->rank;
	for (int k = 0; same && k < rank; k++)
		same = dim_eq(v, d[k], u->shape[k]);
	if (same)
		return 0;
	char *a = fmt_shape(v, rank, d), *b = fmt_shape(v, u->rank, u->shape);
	err(v, aloc(v, TINYC_ATTR_SHAPE), "AxisAlignmentMismatch",
	    "%s=%s but the line declares %s", what,
	    str(a), str(b));
	free(a);
	free(b);
	return -1;
}

/* Check a shape= attribute's own sizes (API-built graphs may hold anything). */
static int check_attr_shape(verifier *v)
{
	const tinyc_uop *u = v->u;
	if (u->nattr_shape < 0 || u->nattr_shape > TINYC_MAX_RANK ||
	    (u->nattr_shape > 0 && !u->attr_shape)) {
		err(v, aloc(v, TINYC_ATTR_SHAPE), "InvalidAttribute",
		    "shape= must have 0..%d sizes",
		    TINYC_MAX_RANK);
		return -1;
	}
	for (int k = 0; k < u->nattr_shape; k++) {
		tinyc_dim d = u->attr_shape[k];
		if (d.sym >= v->g->nsym || (d.sym < 0 && (d.val < 1 || d.val > TINYC_MAX_DIM))) {
			err(v, aloc(v, TINYC_ATTR_SHAPE), "InvalidAttribute",
			    "shape= has an invalid size at position %d", k);
			return -1;
		}
	}
	return 0;
}

/* RESHAPE: same element count; the result is shape=, which must be the line's shape. */
static int infer_reshape(verifier *v, const shape *in, shape *out)
{
	const tinyc_uop *u = v->u;
	count a, b;
	int bad = 0;
	if (check_attr_shape(v) < 0)
		return -1;
	if (elem_count(v, in->rank, in->d, &a) < 0 ||
	    elem_count(v, u->nattr_shape, u->attr_shape, &b) < 0) {
		err(v, aloc(v, TINYC_ATTR_SHAPE), "IntegerOverflow",
		    "the element count does not fit in int64");
		return -1;
	}
	if (!count_eq(&a, &b)) {
		char *sa = fmt_shape(v, in->rank, in->d);
		char *sb = fmt_shape(v, u->nattr_shape, u->attr_shape);
		char *ca = fmt_count(v, &a), *cb = fmt_count(v, &b);
		err(v, aloc(v, TINYC_ATTR_SHAPE), "InvalidReshape",
		    "%s (%s elements) cannot become %s "
		    "(%s elements)", str(sa), ca ? ca : "?", str(sb), cb ? cb : "?");
		free(sa);
		free(sb);
		free(ca);
		free(cb);
		bad = -1;
	}
	if (check_attr_vs_line(v, "shape", u->nattr_shape, u->attr_shape) < 0)
		bad = -1;
	out->rank = u->rank;
	memcpy(out->d, u->shape, (size_t)u->rank * sizeof(tinyc_dim));
	return bad;
}

/* EXPAND: same rank; size-1 axes take any size, others keep theirs. */
static int infer_expand(verifier *v, const shape *in, shape *out)
{
	const tinyc_uop *u = v->u;
	if (check_attr_shape(v) < 0)
		return -1;
	if (u->nattr_shape != in->rank) {
		err(v, aloc(v, TINYC_ATTR_SHAPE), "InvalidAttribute",
		    "EXPAND keeps the rank: shape= has %d "
		    "sizes for an operand of rank %d", u->nattr_shape, in->rank);
		return -1;
	}
	for (int k = 0; k < in->rank; k++) {
		tinyc_dim s = in->d[k], t = u->attr_shape[k];
		if (dim_eq(v, s, t) || dim_is_one(v, s))
			continue;
		tinyc_buf a = {0}, b = {0};
		put_dim(v, &a, s);
		put_dim(v, &b, t);
		err(v, aloc(v, TINYC_ATTR_SHAPE), "AxisAlignmentMismatch",
		    "EXPAND cannot take axis %d of "
		    "size %s to %s (only size-1 axes expand)", k, a.data ? a.data : "?",
		    b.data ? b.data : "?");
		tinyc_buf_free(&a);
		tinyc_buf_free(&b);
		return -1;
	}
	if (check_attr_vs_line(v, "shape", u->nattr_shape, u->attr_shape) < 0)
		return -1;
	out->rank = u->rank;
	memcpy(out->d, u->shape, (size_t)u->rank * sizeof(tinyc_dim));
	return 0;
}

/* PERMUTE: perm must be a permutation of 0..r-1; out[i] = in[perm[i]]. */
static int infer_permute(verifier *v, const shape *in, shape *out)
{
	const tinyc_uop *u = v->u;
	int seen[TINYC_MAX_RANK] = {0};
	if (u->naxes != in->rank || (u->naxes > 0 && !u->axes)) {
		err(v, aloc(v, TINYC_ATTR_PERM), "InvalidPermutation",
		    "perm= has %d entries for an operand of rank %d", u->naxes, in->rank);
		return -1;
	}
	for (int k = 0; k < u->naxes; k++) {
		int64_t p = u->axes[k];
		if (p < 0 || p >= in->rank || seen[p]) {
			err(v, aloc(v, TINYC_ATTR_PERM), "InvalidPermutation",
			    "perm= is not a permutation of "
			    "0..%d (entry %d is %" PRId64 ")", in->rank - 1, k, p);
			return -1;
		}
		seen[p] = 1;
		out->d[k] = in->d[p];
	}
	out->rank = in->rank;
	return 0;
}

/* PAD and SHRINK: one [a,b] pair per axis. */
static int infer_pad_shrink(verifier *v, const shape *in, shape *out)
{
	const tinyc_uop *u = v->u;
	int pad = u->op == TINYC_OP_PAD;
	const char *what = pad ? "pads" : "bounds";
	tinyc_loc at = aloc(v, pad ? TINYC_ATTR_PADS : TINYC_ATTR_BOUNDS);
	if (u->npairs != in->rank || (u->npairs > 0 && !u->pairs)) {
		err(v, at, "InvalidAttribute", "%s= has %d pairs for an operand of "
		    "rank %d", what, u->npairs, in->rank);
		return -1;
	}
	out->rank = in->rank;
	for (int k = 0; k < in->rank; k++) {
		int64_t a = u->pairs[k][0], b = u->pairs[k][1], n = dim_val(v, in->d[k]), r;
		if (a < 0 || b < 0) {
			err(v, at, "InvalidAttribute", "%s=[%" PRId64 ",%" PRId64 "] of "
			    "axis %d is negative", what, a, b, k);
			return -1;
		}
		if (pad) {
			out->d[k] = in->d[k];
			if (a == 0 && b == 0)
				continue;
			if (n < 0) {
				tinyc_buf s = {0};
				put_dim(v, &s, in->d[k]);
				err(v, at, "UnboundSymbol", "PAD of axis %d (size %s) by "
				    "[%" PRId64 ",%" PRId64 "] needs %s bound (--bind)", k,
				    s.data ? s.data : "?", a, b, s.data ? s.data : "?");
				tinyc_buf_free(&s);
				return -1;
			}
			if (__builtin_add_overflow(n, a, &r) || __builtin_add_overflow(r, b, &r)) {
				err(v, at, "IntegerOverflow", "padded size of axis %d does "
				    "not fit in int64", k);
				return -1;
			}
			out->d[k] = const_dim(r);
			continue;
		}
		if (a >= b) {
			err(v, at, "InvalidAttribute", "bounds=[%" PRId64 ",%" PRId64 "] "
			    "of axis %d is empty (start must be below end)", a, b, k);
			return -1;
		}
		if (n >= 0 && b > n) {
			err(v, at, "InvalidAttribute", "bounds=[%" PRId64 ",%" PRId64 "] "
			    "of axis %d ends beyond its size %" PRId64, a, b, k, n);
			return -1;
		}
		out->d[k] = dim_eq(v, const_dim(b - a), in->d[k]) ? in->d[k] : const_dim(b - a);
	}
	return 0;
}

/* REDUCE: reduced axes become 1, or disappear with keepdim=false. */
static int infer_reduce(verifier *v, const shape *in, shape *out)
{
	int seen[TINYC_MAX_RANK];
	if (check_axes(v, in->rank, seen) < 0)
		return -1;
	out->rank = 0;
	for (int k = 0; k < in->rank; k++) {
		if (!seen[k])
			out->d[out->rank++] = in->d[k];
		else if (v->u->keepdim)
			out->d[out->rank++] = const_dim(1);
	}
	return 0;
}

/* Infer node u's shape into *out, validating its attributes.  *done is set when the
 * comparison with the line's shape has already been made (RESHAPE, EXPAND, CONST). */
static int infer_shape(verifier *v, shape *out, int *done)
{
	const tinyc_uop *u = v->u;
	shape in = {0};
	int seen[TINYC_MAX_RANK];
	*done = 0;
	if (u->nsrc > 0)
		in = node_shape(v, u->src[0]);
	switch (u->op) {
	case TINYC_OP_BUFFER:
		*done = 1;
		return check_strides(v);
	case TINYC_OP_CONST:
		*done = 1;
		return check_const(v);
	case TINYC_OP_RESHAPE:
		*done = 1;
		return infer_reshape(v, &in, out);
	case TINYC_OP_EXPAND:
		*done = 1;
		return infer_expand(v, &in, out);
	case TINYC_OP_PERMUTE:
		return infer_permute(v, &in, out);
	case TINYC_OP_PAD:
	case TINYC_OP_SHRINK:
		return infer_pad_shrink(v, &in, out);
	case TINYC_OP_FLIP:
		*out = in;
		return check_axes(v, in.rank, seen);
	case TINYC_OP_REDUCE:
		return infer_reduce(v, &in, out);
	case TINYC_OP_OUTPUT:
		*out = in;
		return check_strides(v);
	default:
		break;
	}
	if (u->nsrc > 1)
		return broadcast(v, out);
	*out = in;	/* unary, casts, CONTIGUOUS */
	return 0;
}

/* Compare the inferred shape with the line's: ShapeMismatch or AxisAlignmentMismatch. */
static int compare_shape(verifier *v, const shape *s)
{
	const tinyc_uop *u = v->u;
	int k = 0;
	if (s->rank == u->rank)
		for (k = 0; k < s->rank && dim_eq(v, s->d[k], u->shape[k]); k++)
			;
	if (s->rank == u->rank && k == s->rank)
		return 0;
	char *a = fmt_shape(v, u->rank, u->shape), *b = fmt_shape(v, s->rank, s->d);
	if (s->rank == u->rank && (s->d[k].sym < 0) != (u->shape[k].sym < 0)) {
		/* a symbol against a constant: the seed's signature-vs-size check */
		tinyc_dim sym = s->d[k].sym >= 0 ? s->d[k] : u->shape[k];
		tinyc_dim num = s->d[k].sym >= 0 ? u->shape[k] : s->d[k];
		tinyc_buf name = {0};
		put_dim(v, &name, sym);
		const char *nm = name.data ? name.data : "?";
		if (dim_val(v, sym) >= 0)
			err(v, u->shape_loc, "AxisAlignmentMismatch",
			    "declared %s but inferred %s: "
			    "%s = %" PRId64 " differs from %" PRId64 " at axis %d", str(a), str(b),
			    nm, dim_val(v, sym), num.val, k);
		else
			err(v, u->shape_loc, "AxisAlignmentMismatch",
			    "declared %s but inferred %s: "
			    "%s cannot be shown equal to %" PRId64 " at axis %d", str(a), str(b),
			    nm, num.val, k);
		tinyc_buf_free(&name);
	} else {
		err(v, u->shape_loc, "ShapeMismatch",
		    "declared %s but inferred %s", str(a), str(b));
	}
	free(a);
	free(b);
	return -1;
}

/* Check operand count and indices of node i. */
static int check_operands(verifier *v, int i)
{
	const tinyc_uop *u = v->u;
	int arity = tinyc_op_info(u->op)->arity;
	if (u->nsrc != arity) {
		err(v, u->loc, "InvalidOperand", "%s takes %d operand%s, not %d",
		    tinyc_op_info(u->op)->name, arity, arity == 1 ? "" : "s", u->nsrc);
		return -1;
	}
	for (int k = 0; k < u->nsrc; k++)
		if (u->src[k] < 0 || u->src[k] >= i) {
			err(v, u->src_loc[k], "InvalidOperand", "operand %d is not defined before "
			    "its use", k);
			return -1;
		}
	return 0;
}

/* A BUFFER/OUTPUT node as sorted for the uniqueness checks. */
typedef struct keyed {
	const tinyc_uop *u;	/* the node */
	int i;			/* its index */
} keyed;

/* Order by slot, then index. */
static int by_slot(const void *pa, const void *pb)
{
	const keyed *a = pa, *b = pb;
	if (a->u->slot != b->u->slot)
		return a->u->slot < b->u->slot ? -1 : 1;
	return a->i - b->i;
}

/* Order by name, then index. */
static int by_name(const void *pa, const void *pb)
{
	const keyed *a = pa, *b = pb;
	int c = strcmp(a->u->name, b->u->name);
	return c ? c : a->i - b->i;
}

/* For every BUFFER/OUTPUT that repeats an earlier slot or name (BUFFER names and OUTPUT
 * names are separate namespaces), record the first such node in dup_slot[i] / dup_name[i]
 * (else -1).  Sorting keeps this O(n log n). */
static void find_duplicates(const tinyc_graph *g, keyed *key, int *dup_slot, int *dup_name)
{
	static const tinyc_op ops[2] = {TINYC_OP_BUFFER, TINYC_OP_OUTPUT};
	int n = 0;
	for (int i = 0; i < g->n; i++)
		dup_slot[i] = dup_name[i] = -1;
	for (int i = 0; i < g->n; i++)
		if (g->nodes[i].op == TINYC_OP_BUFFER)
			key[n++] = (keyed){&g->nodes[i], i};
	qsort(key, (size_t)n, sizeof(keyed), by_slot);
	for (int k = 1, first = 0; k < n; k++) {
		if (key[k].u->slot != key[first].u->slot)
			first = k;
		else
			dup_slot[key[k].i] = key[first].i;
	}
	for (int o = 0; o < 2; o++) {
		n = 0;
		for (int i = 0; i < g->n; i++)
			if (g->nodes[i].op == ops[o] && g->nodes[i].name)
				key[n++] = (keyed){&g->nodes[i], i};
		qsort(key, (size_t)n, sizeof(keyed), by_name);
		for (int k = 1, first = 0; k < n; k++) {
			if (strcmp(key[k].u->name, key[first].u->name))
				first = k;
			else
				dup_name[key[k].i] = key[first].i;
		}
	}
}

/* Check BUFFER/OUTPUT naming: slot non-negative, slots and names unique. */
static void check_names(verifier *v, int i, const int *dup_slot, const int *dup_name)
{
	const tinyc_uop *u = v->u;
	const tinyc_uop *n = v->g->nodes;
	if (u->op == TINYC_OP_BUFFER && u->slot < 0)
		err(v, aloc(v, TINYC_ATTR_SLOT), "InvalidAttribute",
		    "slot=%" PRId64 " is negative", u->slot);
	else if (u->op == TINYC_OP_BUFFER && u->slot >= TINYC_MAX_NODES)
		err(v, aloc(v, TINYC_ATTR_SLOT), "SlotOutOfRange",
		    "slot=%" PRId64 " is beyond the largest slot %d", u->slot, TINYC_MAX_NODES - 1);
	if (dup_slot[i] >= 0)
		err(v, aloc(v, TINYC_ATTR_SLOT), "InvalidAttribute",
		    "slot=%" PRId64 " is already used by %%%s "
		    "(line %d)", u->slot, n[dup_slot[i]].id ? n[dup_slot[i]].id : "?",
		    n[dup_slot[i]].loc.line);
	if (dup_name[i] >= 0)
		err(v, aloc(v, TINYC_ATTR_NAME), "InvalidAttribute",
		    "%s name \"%s\" is already used by %%%s "
		    "(line %d)", tinyc_op_info(u->op)->name, u->name,
		    n[dup_name[i]].id ? n[dup_name[i]].id : "?", n[dup_name[i]].loc.line);
}

/* Check one node; returns 0 when it is valid. */
static int verify_node(verifier *v, int i, const char *bad, const int *dup_slot,
		       const int *dup_name)
{
	const tinyc_uop *u = v->u;
	int before = v->nerr, done;
	tinyc_dtype dt;
	shape s;

	if (u->op < 0 || u->op >= TINYC_OP_COUNT) {
		err(v, u->loc, "UnknownOp", "op %d is not a tinyc op", (int)u->op);
		return -1;
	}
	if (u->dtype < 0 || u->dtype >= TINYC_DTYPE_COUNT) {
		err(v, u->loc, "UnknownDtype", "dtype %d is not a tinyc dtype", (int)u->dtype);
		return -1;
	}
	if (check_declared(v) < 0 || check_operands(v, i) < 0)
		return -1;
	for (int k = 0; k < u->nsrc; k++)
		if (bad[u->src[k]])
			return -1;	/* already reported at the operand: no cascade */
	if (check_size(v) < 0)
		return -1;
	if (u->op == TINYC_OP_BUFFER || u->op == TINYC_OP_OUTPUT)
		check_names(v, i, dup_slot, dup_name);
	if (infer_dtype(v, &dt) == 0 && dt != u->dtype) {
		if (tinyc_op_info(u->op)->dtrule == TINYC_DT_BOOL)
			err(v, u->type_loc, "TypeMismatch",
			    "%s produces bool, but the line says %s",
			    tinyc_op_info(u->op)->name, tinyc_dtype_name(u->dtype));
		else
			err(v, u->type_loc, "TypeMismatch", "declared %s but inferred %s",
			    tinyc_dtype_name(u->dtype), tinyc_dtype_name(dt));
	}
	if (infer_shape(v, &s, &done) == 0 && !done)
		compare_shape(v, &s);
	return v->nerr > before ? -1 : 0;
}

/* Verify a whole graph (see uop.h). */
int tinyc_verify(tinyc_ctx *ctx, const tinyc_graph *g, const tinyc_bindings *b)
{
	verifier v = {ctx, g, b, NULL, 0};
	if (!g)
		return tinyc_error(ctx, "InvalidArgument", "tinyc_verify: no graph");
	if (g->n <= 0)
		return 0;
	char *bad = tinyc_calloc(ctx, (size_t)g->n, 1);
	keyed *key = tinyc_calloc(ctx, (size_t)g->n, sizeof(keyed));
	int *dup_slot = tinyc_calloc(ctx, (size_t)g->n, sizeof(int));
	int *dup_name = tinyc_calloc(ctx, (size_t)g->n, sizeof(int));
	if (bad && key && dup_slot && dup_name) {
		find_duplicates(g, key, dup_slot, dup_name);
		for (int i = 0; i < g->n; i++) {
			v.u = &g->nodes[i];
			bad[i] = verify_node(&v, i, bad, dup_slot, dup_name) < 0;
		}
	} else {
		v.nerr++;
	}
	free(bad);
	free(key);
	free(dup_slot);
	free(dup_name);
	return v.nerr ? -1 : 0;
}
