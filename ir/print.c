/* Printers of the UOp DAG: the canonical tinyc-uop v0 text, and Graphviz.
 *
 * The canonical text is what `tinyc --dump-stage=uop` shows and what FileCheck tests
 * read: one node per line, ids as written, a single space after each item comma,
 * attributes in the order of enum tinyc_attr, defaults (keepdim=true, no acc=) left out,
 * dtypes by their canonical names.  Parsing it gives back an equal graph, and printing
 * that gives the same text.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ir/uop.h"

/* A double quoted string, with '"' and '\' escaped (the only escapes the parser knows). */
static void put_string(tinyc_buf *out, const char *s)
{
	tinyc_buf_putc(out, '"');
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			tinyc_buf_putc(out, '\\');
		tinyc_buf_putc(out, *s);
	}
	tinyc_buf_putc(out, '"');
}

/* A literal: integers and bools from their value, floats as written (so the digits stay
 * stable), or formatted when the node was built without a spelling. */
static void put_lit(tinyc_buf *out, const tinyc_lit *l)
{
	if (l->kind == TINYC_LIT_INT) {
		tinyc_buf_printf(out, "%lld", (long long)l->i);
	} else if (l->kind == TINYC_LIT_BOOL) {
		tinyc_buf_puts(out, l->i ? "true" : "false");
	} else if (l->text && l->text[0]) {
		tinyc_buf_puts(out, l->text);
	} else if (isnan(l->f)) {
		tinyc_buf_puts(out, "nan");
	} else if (isinf(l->f)) {
		tinyc_buf_puts(out, l->f < 0 ? "-inf" : "inf");
	} else {
		char buf[40];
		snprintf(buf, sizeof(buf), "%.17g", l->f);
		tinyc_buf_puts(out, buf);
		if (!strpbrk(buf, ".e"))	/* keep it a float literal */
			tinyc_buf_puts(out, ".0");
	}
}

static void put_ints(tinyc_buf *out, int n, const int64_t *x)
{
	tinyc_buf_putc(out, '[');
	for (int i = 0; i < n; i++)
		tinyc_buf_printf(out, "%s%lld", i ? "," : "", (long long)x[i]);
	tinyc_buf_putc(out, ']');
}

static void put_pairs(tinyc_buf *out, int n, const int64_t (*x)[2])
{
	tinyc_buf_putc(out, '[');
	for (int i = 0; i < n; i++)
		tinyc_buf_printf(out, "%s[%lld,%lld]", i ? "," : "", (long long)x[i][0],
				 (long long)x[i][1]);
	tinyc_buf_putc(out, ']');
}

/* Whether node u shows attribute a: required ones always, optional ones when set. */
static int shows_attr(const tinyc_uop *u, tinyc_attr a)
{
	int takes = tinyc_op_attr(u->op, a);
	if (takes == 2)
		return 1;
	if (takes == 0)
		return 0;
	switch (a) {
	case TINYC_ATTR_STRIDES:
		return u->strides != NULL;
	case TINYC_ATTR_KEEPDIM:
		return !u->keepdim;
	case TINYC_ATTR_ACC:
		return u->acc != TINYC_DTYPE_NONE;
	default:
		return 0;
	}
}

/* The value of attribute a of node u. */
static void put_attr(const tinyc_graph *g, const tinyc_uop *u, tinyc_attr a, tinyc_buf *out)
{
	switch (a) {
	case TINYC_ATTR_SLOT:
		tinyc_buf_printf(out, "%lld", (long long)u->slot);
		break;
	case TINYC_ATTR_NAME:
		put_string(out, u->name);
		break;
	case TINYC_ATTR_STRIDES:
		tinyc_print_shape(g, u->rank, u->strides, out);
		break;
	case TINYC_ATTR_SHAPE:
		tinyc_print_shape(g, u->nattr_shape, u->attr_shape, out);
		break;
	case TINYC_ATTR_PERM:
	case TINYC_ATTR_AXES:
		put_ints(out, u->naxes, u->axes);
		break;
	case TINYC_ATTR_OP:
		tinyc_buf_puts(out, tinyc_redop_name(u->redop));
		break;
	case TINYC_ATTR_KEEPDIM:
		tinyc_buf_puts(out, u->keepdim ? "true" : "false");
		break;
	case TINYC_ATTR_ACC:
		tinyc_buf_puts(out, tinyc_dtype_name(u->acc));
		break;
	case TINYC_ATTR_PADS:
	case TINYC_ATTR_BOUNDS:
		put_pairs(out, u->npairs, (const int64_t(*)[2])u->pairs);
		break;
	default:
		break;
	}
}

/* The id of operand k of u, or "?" when it points nowhere. */
static const char *src_id(const tinyc_graph *g, const tinyc_uop *u, int k)
{
	int s = u->src[k];
	return s >= 0 && s < g->n && g->nodes[s].id ? g->nodes[s].id : "?";
}

/* One node: "%ID = OP(operands, literal, attrs) : dtype[dims]". */
static void print_node(const tinyc_graph *g, const tinyc_uop *u, tinyc_buf *out)
{
	const tinyc_opinfo *in = tinyc_op_info(u->op);
	tinyc_buf_printf(out, "%%%s = %s(", u->id ? u->id : "?", in ? in->name : "?");
	int items = 0;
	for (int k = 0; k < u->nsrc && k < 3; k++)
		tinyc_buf_printf(out, "%s%%%s", items++ ? ", " : "", src_id(g, u, k));
	if (u->op == TINYC_OP_CONST) {
		if (items++)
			tinyc_buf_puts(out, ", ");
		put_lit(out, &u->lit);
	}
	for (int a = 0; a < TINYC_ATTR_COUNT; a++) {
		if (!shows_attr(u, (tinyc_attr)a))
			continue;
		tinyc_buf_printf(out, "%s%s=", items++ ? ", " : "", tinyc_attr_name((tinyc_attr)a));
		put_attr(g, u, (tinyc_attr)a, out);
	}
	tinyc_buf_printf(out, ") : %s", tinyc_dtype_name(u->dtype));
	tinyc_print_shape(g, u->rank, u->shape, out);
	tinyc_buf_putc(out, '\n');
}

/* The canonical text of the whole graph, headed by "# tinyc-uop v0". */
void tinyc_print(const tinyc_graph *g, tinyc_buf *out)
{
	tinyc_buf_puts(out, "# tinyc-uop v0\n");
	if (!g)
		return;
	for (int i = 0; i < g->n; i++)
		print_node(g, &g->nodes[i], out);
}

/* Text inside a Graphviz double-quoted string: '"' and '\' escaped. */
static void put_dot_text(tinyc_buf *out, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			tinyc_buf_putc(out, '\\');
		tinyc_buf_putc(out, *s);
	}
}

/* The graph for Graphviz: node nI per UOp labelled "%id OP\ndtype[shape]", and an edge
 * from each operand to its user labelled with the operand position. */
void tinyc_print_dot(const tinyc_graph *g, tinyc_buf *out)
{
	tinyc_buf_puts(out, "digraph uop {\n");
	tinyc_buf_puts(out, "  node [shape=box, fontname=\"monospace\"];\n");
	for (int i = 0; g && i < g->n; i++) {
		const tinyc_uop *u = &g->nodes[i];
		const tinyc_opinfo *in = tinyc_op_info(u->op);
		tinyc_buf shape = {0};
		tinyc_print_shape(g, u->rank, u->shape, &shape);
		tinyc_buf_printf(out, "  n%d [label=\"%%", i);
		put_dot_text(out, u->id ? u->id : "?");
		tinyc_buf_printf(out, " %s\\n%s", in ? in->name : "?", tinyc_dtype_name(u->dtype));
		put_dot_text(out, shape.data ? shape.data : "");
		tinyc_buf_puts(out, "\"];\n");
		tinyc_buf_free(&shape);
	}
	for (int i = 0; g && i < g->n; i++) {
		const tinyc_uop *u = &g->nodes[i];
		for (int k = 0; k < u->nsrc && k < 3; k++)
			if (u->src[k] >= 0 && u->src[k] < g->n)
				tinyc_buf_printf(out, "  n%d -> n%d [label=\"%d\"];\n", u->src[k], i, k);
	}
	tinyc_buf_puts(out, "}\n");
}
