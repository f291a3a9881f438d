/* GPU IR: the module and its arena, kernels and their variables (with unique C names), and
 * the expression (with integer constant folding) and statement builders.  See ir/gpuir.h;
 * the printer is ir/gpuir_print.c, the verifier ir/gpuir_verify.c. */
#include "ir/gpuir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/arena.h"

/* ------------------------------------------------------------------- arena ---- */

/* Allocate n zeroed bytes (16-aligned) from the module's arena; NULL and OutOfMemory. */
static void *galloc(tinyc_gpu_module *m, size_t n)
{
	if (!m)
		return NULL;
	void *p = tinyc_arena_alloc(m->arena, n);
	if (!p)
		tinyc_error(m->ctx, "OutOfMemory", "GPU IR arena: %zu bytes", n);
	return p;
}

/* Grow an arena array to hold at least need elements (old contents copied). */
static void *ggrow(tinyc_gpu_module *m, void *old, int *cap, int need, size_t elem)
{
	if (need <= *cap)
		return old;
	void *p = tinyc_arena_grow(m->arena, old, cap, need, elem);
	if (!p)
		tinyc_error(m->ctx, "OutOfMemory", "GPU IR arena: %d elements", need);
	return p;
}

char *tinyc_gpu_strdup(tinyc_gpu_module *m, const char *s)
{
	if (!s || !m)
		return NULL;
	char *p = tinyc_arena_strdup(m->arena, s);
	if (!p)
		tinyc_error(m->ctx, "OutOfMemory", "GPU IR arena: a string");
	return p;
}

/* ------------------------------------------------------------------ module ---- */

tinyc_gpu_module *tinyc_gpu_module_alloc(tinyc_ctx *ctx)
{
	tinyc_gpu_module *m = tinyc_calloc(ctx, 1, sizeof(*m));
	if (!m)
		return NULL;
	if (!(m->arena = tinyc_arena_new())) {
		tinyc_error(ctx, "OutOfMemory", "GPU IR arena");
		free(m);
		return NULL;
	}
	m->ctx = ctx;
	strcpy(m->target, "sm_80");
	m->arch_major = 8;
	return m;
}

void tinyc_gpu_module_free(tinyc_gpu_module *m)
{
	if (!m)
		return;
	tinyc_arena_free(m->arena);
	free(m);
}

int tinyc_gpu_set_symbols(tinyc_gpu_module *m, const tinyc_graph *g, const tinyc_bindings *b)
{
	m->nsym = g->nsym;
	m->syms = galloc(m, sizeof(char *) * (size_t)(g->nsym + 1));
	m->sym_bound = galloc(m, sizeof(int64_t) * (size_t)(g->nsym + 1));
	if (!m->syms || !m->sym_bound)
		return -1;
	for (int i = 0; i < g->nsym; i++) {
		if (!(m->syms[i] = tinyc_gpu_strdup(m, g->syms[i])))
			return -1;
		m->sym_bound[i] = b && i < b->n ? b->val[i] : -1;
	}
	return 0;
}

int tinyc_gpu_add_buf(tinyc_gpu_module *m, const tinyc_gbuf *buf)
{
	tinyc_gbuf *nb = ggrow(m, m->bufs, &m->capbuf, m->nbuf + 1, sizeof(*nb));
	if (!nb)
		return -1;
	m->bufs = nb;
	nb[m->nbuf] = *buf;
	if (!(nb[m->nbuf].name = tinyc_gpu_strdup(m, buf->name ? buf->name : "buf")))
		return -1;
	return m->nbuf++;
}

/* ------------------------------------------------------------------- names ---- */

/* Identifiers the CUDA text uses itself (C++ keywords, CUDA built-ins and types). */
static const char *const reserved_names[] = {
	"alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char",
	"class", "const", "constexpr", "continue", "decltype", "default", "delete", "do",
	"double", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
	"friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new",
	"noexcept", "not", "nullptr", "operator", "or", "private", "protected", "public",
	"register", "return", "short", "signed", "sizeof", "static", "struct", "switch",
	"template", "this", "throw", "true", "try", "typedef", "typeid", "typename", "union",
	"unsigned", "using", "virtual", "void", "volatile", "while", "xor", "half", "half2",
	"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "min", "max", "main",
	"abs", "exp", "exp2", "log", "log2", "sqrt", "sin", "cos", "floor", "ceil", "trunc",
	"fabs", "fmin", "fmax", "fma", "tanh", "rsqrt", "memcpy", "printf", "uint4", "int4",
	"float4", "float2", "int2", "uint2", "dim3", "assert", "NULL", "signed", "unsigned",
};

/* Make s a C identifier that is none of the reserved names, into buf. */
static void sanitise(const char *s, char *buf, size_t size)
{
	size_t n = 0;
	if (!s || !*s)
		s = "v";
	if (*s >= '0' && *s <= '9')
		buf[n++] = 'v';
	for (; *s && n + 2 < size; s++) {
		char c = *s;
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			 c == '_';
		buf[n++] = ok ? c : '_';
	}
	buf[n] = 0;
	/* reserved: leading "__", "_X" and tinyc's own helpers */
	if ((buf[0] == '_' && (buf[1] == '_' || (buf[1] >= 'A' && buf[1] <= 'Z'))) ||
	    !strncmp(buf, "tinyc_", 6)) {
		memmove(buf + 1, buf, n + 1 < size - 1 ? n + 1 : size - 2);
		buf[0] = 'v';
		buf[size - 1] = 0;
	}
	for (size_t i = 0; i < sizeof(reserved_names) / sizeof(*reserved_names); i++)
		if (!strcmp(buf, reserved_names[i])) {
			size_t l = strlen(buf);
			if (l + 2 < size)
				buf[l] = '_', buf[l + 1] = 0;
			break;
		}
}

/* The names of a kernel's variables (open addressing on the arena), and per base name the
 * suffix unique_name tries next: names are never removed, so every smaller suffix stays
 * taken and the search resumes there (the names are those of the plain linear search). */
typedef struct gname_slot {
	const char *name;	/* a variable's name, or a base name's key ("\1" + base) */
	int next;		/* base keys: next suffix to try */
} gname_slot;

struct tinyc_gnames {
	gname_slot *slot;	/* cap slots (a power of two), NULL names empty */
	int cap, n;		/* slots, used */
};

/* FNV-1a of a string. */
static unsigned name_hash(const char *s)
{
	unsigned h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* The slot of name in k's table (an empty slot when absent), the table grown and allocated
 * on demand; NULL on OOM. */
static gname_slot *name_slot(tinyc_gkernel *k, const char *name)
{
	struct tinyc_gnames *t = k->names;
	if (!t) {
		if (!(t = k->names = galloc(k->mod, sizeof(*t))))
			return NULL;
		t->cap = t->n = 0;
		t->slot = NULL;
	}
	if (2 * (t->n + 1) > t->cap) {	/* grow: rehash into twice the slots */
		int cap = t->cap ? 2 * t->cap : 256;
		gname_slot *ns = galloc(k->mod, sizeof(*ns) * (size_t)cap);
		if (!ns)
			return NULL;
		memset(ns, 0, sizeof(*ns) * (size_t)cap);
		for (int i = 0; i < t->cap; i++) {
			if (!t->slot[i].name)
				continue;
			unsigned h = name_hash(t->slot[i].name) & (unsigned)(cap - 1);
			while (ns[h].name)
				h = (h + 1) & (unsigned)(cap - 1);
			ns[h] = t->slot[i];
		}
		t->slot = ns, t->cap = cap;
	}
	unsigned h = name_hash(name) & (unsigned)(t->cap - 1);
	while (t->slot[h].name && strcmp(t->slot[h].name, name))
		h = (h + 1) & (unsigned)(t->cap - 1);
	return &t->slot[h];
}

/* Whether a variable of k already has this name. */
static int name_taken(tinyc_gkernel *k, const char *name)
{
	gname_slot *sl = name_slot(k, name);
	if (sl)
		return sl->name != NULL;
	for (int i = 0; i < k->nvar; i++)	/* no table (OOM): the linear search */
		if (!strcmp(k->vars[i].name, name))
			return 1;
	return 0;
}

/* Record a name in the table (a copy in the arena), or a base key with its next suffix. */
static char *name_record(tinyc_gkernel *k, const char *name, int next)
{
	char *copy = tinyc_gpu_strdup(k->mod, name);
	gname_slot *sl = copy ? name_slot(k, name) : NULL;
	if (sl) {
		if (!sl->name)
			k->names->n++;
		sl->name = copy, sl->next = next;
	}
	return copy;
}

/* A sanitised, kernel-unique copy of name in the arena. */
static char *unique_name(tinyc_gkernel *k, const char *name)
{
	char base[96], buf[128], key[100];
	sanitise(name, base, sizeof(base));
	if (!name_taken(k, base))
		return name_record(k, base, 0);
	snprintf(key, sizeof(key), "\1%s", base);	/* no identifier starts with \1 */
	gname_slot *ks = name_slot(k, key);
	int first = ks && ks->name ? ks->next : 2;
	for (int i = first;; i++) {
		snprintf(buf, sizeof(buf), "%s_%d", base, i);
		if (!name_taken(k, buf)) {
			name_record(k, key, i + 1);
			return name_record(k, buf, 0);
		}
	}
}

/* ----------------------------------------------------------------- kernels ---- */

tinyc_gkernel *tinyc_gk_alloc(tinyc_gpu_module *m, const char *name)
{
	tinyc_gkernel **nk = ggrow(m, m->kernels, &m->capkernel, m->nkernel + 1, sizeof(*nk));
	if (!nk)
		return NULL;
	m->kernels = nk;
	tinyc_gkernel *k = galloc(m, sizeof(*k));
	if (!k)
		return NULL;
	k->mod = m;
	char base[96], buf[128];
	sanitise(name, base, sizeof(base));
	snprintf(buf, sizeof(buf), "%s", base);
	for (int i = 2;; i++) {
		int taken = 0;
		for (int j = 0; j < m->nkernel; j++)
			taken |= !strcmp(m->kernels[j]->name, buf);
		if (!taken)
			break;
		snprintf(buf, sizeof(buf), "%s_%d", base, i);
	}
	k->name = tinyc_gpu_strdup(m, buf);
	k->block[0] = k->block[1] = k->block[2] = 1;
	k->index_dtype = TINYC_INT;
	for (int d = 0; d < 3; d++)
		k->grid[d] = tinyc_gx_int(k, TINYC_LONG, 1);
	k->body = tinyc_gs_block(k);
	if (!k->name || !k->body || !k->grid[2])
		return NULL;
	nk[m->nkernel++] = k;
	return k;
}

/* Append a variable; returns its index or -1. */
static int add_var(tinyc_gkernel *k, tinyc_gvar_kind kind, const char *name, tinyc_dtype dt)
{
	if (!k)
		return -1;
	tinyc_gvar *nv = ggrow(k->mod, k->vars, &k->capvar, k->nvar + 1, sizeof(*nv));
	if (!nv)
		return -1;
	k->vars = nv;
	tinyc_gvar *v = &nv[k->nvar];
	memset(v, 0, sizeof(*v));
	v->kind = kind;
	v->dtype = dt;
	v->sym = v->buf = -1;
	v->is_param = kind == TINYC_GV_PARAM_PTR || kind == TINYC_GV_PARAM_INT ||
		      kind == TINYC_GV_PARAM_TMAP;
	if (!(v->name = unique_name(k, name)))
		return -1;
	if (v->is_param) {
		int cap = k->nparam;	/* params array is reallocated every time: small */
		int *np = galloc(k->mod, sizeof(int) * (size_t)(cap + 1));
		if (!np)
			return -1;
		if (k->params)
			memcpy(np, k->params, sizeof(int) * (size_t)k->nparam);
		np[k->nparam++] = k->nvar;
		k->params = np;
	}
	return k->nvar++;
}

int tinyc_gk_param_ptr(tinyc_gkernel *k, const char *name, tinyc_dtype dt, int is_const, int buf)
{
	int v = add_var(k, TINYC_GV_PARAM_PTR, name, dt);
	if (v >= 0) {
		k->vars[v].is_const = is_const;
		k->vars[v].buf = buf;
	}
	return v;
}

int tinyc_gk_param_int(tinyc_gkernel *k, const char *name, tinyc_dtype dt, int sym)
{
	int v = add_var(k, TINYC_GV_PARAM_INT, name, dt);
	if (v >= 0)
		k->vars[v].sym = sym;
	return v;
}

int tinyc_gk_param_tmap(tinyc_gkernel *k, const char *name)
{
	return add_var(k, TINYC_GV_PARAM_TMAP, name, TINYC_DTYPE_NONE);
}

int tinyc_gk_param_tmap_desc(tinyc_gkernel *k, const char *name, const tinyc_gtmap *desc)
{
	if (!k || !desc || desc->rank < 1 || desc->rank > 5 || !desc->offset)
		return -1;
	for (int i = 0; i < desc->rank; i++)
		if (!desc->dim[i] || !desc->stride[i])
			return -1;
	tinyc_gtmap *t = galloc(k->mod, sizeof(*t));
	if (!t)
		return -1;
	*t = *desc;
	int v = add_var(k, TINYC_GV_PARAM_TMAP, name, TINYC_DTYPE_NONE);
	if (v >= 0)
		k->vars[v].tmap = t;
	return v;
}

int tinyc_gk_shared(tinyc_gkernel *k, const char *name, tinyc_dtype dt, int64_t count,
		    int align, int dynamic)
{
	int v = add_var(k, TINYC_GV_SHARED, name, dt);
	if (v < 0)
		return -1;
	tinyc_gvar *x = &k->vars[v];
	int es = tinyc_dtype_size(dt);
	if (align < es)
		align = es;
	if (dynamic && align < 16)
		align = 16;
	x->count = count;
	x->align = align;
	x->dynamic = dynamic;
	if (dynamic) {
		int64_t off = (k->dyn_smem + align - 1) / align * align;
		x->offset = off;
		k->dyn_smem = off + count * es;
	}
	return v;
}

int tinyc_gk_reg(tinyc_gkernel *k, const char *name, tinyc_dtype dt)
{
	return add_var(k, TINYC_GV_REG, name, dt);
}

int tinyc_gk_reg_array(tinyc_gkernel *k, const char *name, tinyc_dtype dt, int64_t count)
{
	int v = add_var(k, TINYC_GV_REG_ARRAY, name, dt);
	if (v >= 0)
		k->vars[v].count = count;
	return v;
}

int tinyc_gk_pipe(tinyc_gkernel *k, const char *name, tinyc_gpipe_kind kind, int stages, int mbar)
{
	if (!k)
		return -1;
	int cap = k->npipe;
	tinyc_gpipe *np = galloc(k->mod, sizeof(*np) * (size_t)(cap + 1));
	if (!np)
		return -1;
	if (k->pipes)
		memcpy(np, k->pipes, sizeof(*np) * (size_t)k->npipe);
	np[k->npipe].name = tinyc_gpu_strdup(k->mod, name);
	np[k->npipe].kind = kind;
	np[k->npipe].stages = stages;
	np[k->npipe].mbar = mbar;
	k->pipes = np;
	return k->npipe++;
}

int tinyc_gk_sym_param(tinyc_gkernel *k, int sym)
{
	if (!k)
		return -1;
	for (int i = 0; i < k->nvar; i++)
		if (k->vars[i].kind == TINYC_GV_PARAM_INT && k->vars[i].sym == sym)
			return i;
	const char *name = sym >= 0 && sym < k->mod->nsym ? k->mod->syms[sym] : "sym";
	return tinyc_gk_param_int(k, name, k->index_dtype, sym);
}

/* Sort key of a parameter for the canonical order. */
static int param_rank(const tinyc_gkernel *k, int v, int pos)
{
	const tinyc_gvar *x = &k->vars[v];
	if (x->kind == TINYC_GV_PARAM_PTR)
		return pos;
	if (x->kind == TINYC_GV_PARAM_TMAP)
		return 100000 + pos;
	return 200000 + (x->sym >= 0 ? x->sym : 50000 + pos);
}

void tinyc_gk_sort_params(tinyc_gkernel *k)
{
	if (!k)
		return;
	int n = k->nparam;
	int *key = calloc((size_t)n + 1, sizeof(int));
	if (!key)
		return;
	for (int i = 0; i < n; i++)
		key[i] = param_rank(k, k->params[i], i);
	for (int i = 1; i < n; i++)	/* insertion sort: stable, tiny n */
		for (int j = i; j > 0 && key[j - 1] > key[j]; j--) {
			int t = key[j]; key[j] = key[j - 1]; key[j - 1] = t;
			t = k->params[j]; k->params[j] = k->params[j - 1]; k->params[j - 1] = t;
		}
	free(key);
}

int64_t tinyc_gk_static_smem(const tinyc_gkernel *k)
{
	int64_t bytes = 0;
	for (int i = 0; i < k->nvar; i++) {
		const tinyc_gvar *v = &k->vars[i];
		if (v->kind == TINYC_GV_SHARED && !v->dynamic) {
			bytes = (bytes + v->align - 1) / v->align * v->align;
			bytes += v->count * tinyc_dtype_size(v->dtype);
		}
	}
	return bytes;
}

/* ------------------------------------------------------------- expressions ---- */

/* A fresh expression node. */
static tinyc_gexpr *gx_new(tinyc_gkernel *k, tinyc_gx_op op, tinyc_dtype dt)
{
	if (!k)
		return NULL;
	tinyc_gexpr *e = galloc(k->mod, sizeof(*e));
	if (!e)
		return NULL;
	e->op = op;
	e->dtype = dt;
	e->var = -1;
	e->sym = -1;
	return e;
}

/* v wrapped to the width of integer dtype dt (two's complement); bool: v != 0. */
static int64_t wrap_int(tinyc_dtype dt, int64_t v)
{
	uint64_t u = (uint64_t)v;
	switch (dt) {
	case TINYC_BOOL: return v != 0;
	case TINYC_CHAR: return (int8_t)(uint8_t)u;
	case TINYC_UCHAR: return (uint8_t)u;
	case TINYC_SHORT: return (int16_t)(uint16_t)u;
	case TINYC_USHORT: return (uint16_t)u;
	case TINYC_INT: return (int32_t)(uint32_t)u;
	case TINYC_UINT: return (uint32_t)u;
	default: return v;
	}
}

tinyc_gexpr *tinyc_gx_int(tinyc_gkernel *k, tinyc_dtype dt, int64_t v)
{
	tinyc_gexpr *e = gx_new(k, TINYC_GX_INT, dt);
	if (e)
		e->ival = tinyc_dtype_is_float(dt) ? v : wrap_int(dt, v);
	if (e && tinyc_dtype_is_float(dt)) {
		e->op = TINYC_GX_FLOAT;
		e->fval = (double)v;
	}
	return e;
}

tinyc_gexpr *tinyc_gx_float(tinyc_gkernel *k, tinyc_dtype dt, double v)
{
	tinyc_gexpr *e = gx_new(k, TINYC_GX_FLOAT, dt);
	if (e)
		e->fval = v;
	return e;
}

tinyc_gexpr *tinyc_gx_bool(tinyc_gkernel *k, int v)
{
	return tinyc_gx_int(k, TINYC_BOOL, v != 0);
}

tinyc_gexpr *tinyc_gx_var(tinyc_gkernel *k, int var)
{
	if (!k || var < 0 || var >= k->nvar)
		return NULL;
	tinyc_gexpr *e = gx_new(k, TINYC_GX_VAR, k->vars[var].dtype);
	if (e)
		e->var = var;
	return e;
}

tinyc_gexpr *tinyc_gx_sym(tinyc_gkernel *k, int sym)
{
	tinyc_gexpr *e = gx_new(k, TINYC_GX_SYM, TINYC_LONG);
	if (e)
		e->sym = sym;
	return e;
}

tinyc_gexpr *tinyc_gx_special(tinyc_gkernel *k, tinyc_gspecial s)
{
	tinyc_gexpr *e = gx_new(k, TINYC_GX_SPECIAL, TINYC_INT);
	if (e)
		e->special = s;
	return e;
}

tinyc_gexpr *tinyc_gx_load(tinyc_gkernel *k, int var, tinyc_gexpr *index, tinyc_gexpr *pred)
{
	if (!k || !index || var < 0 || var >= k->nvar)
		return NULL;
	if (pred && pred->op == TINYC_GX_INT && pred->ival)
		pred = NULL;	/* always true */
	if (pred && pred->op == TINYC_GX_INT && !pred->ival)
		return tinyc_gx_int(k, k->vars[var].dtype, 0);	/* never loaded: zero */
	tinyc_gexpr *e = gx_new(k, TINYC_GX_LOAD, k->vars[var].dtype);
	if (e) {
		e->var = var;
		e->arg[0] = index;
		e->arg[1] = pred;
	}
	return e;
}

int tinyc_gx_is_int(const tinyc_gexpr *e, int64_t v)
{
	return e && e->op == TINYC_GX_INT && e->ival == v;
}

/* Whether op is a comparison or logical operator (bool result). */
int tinyc_gx_op_is_bool(tinyc_gx_op op)
{
	return op == TINYC_GX_LAND || op == TINYC_GX_LOR || (op >= TINYC_GX_LT && op <= TINYC_GX_NE) ||
	       op == TINYC_GX_NOT;
}

/* Fold a unary or binary operator on integer constants; 0 when it cannot. */
static int fold_int(tinyc_gx_op op, tinyc_dtype dt, int64_t a, int64_t b, int64_t *out)
{
	uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
	int uns = !tinyc_dtype_is_signed(dt);
	switch (op) {
	case TINYC_GX_NEG: *out = (int64_t)(0 - ua); return 1;
	case TINYC_GX_NOT: *out = !a; return 1;
	case TINYC_GX_BITNOT: *out = (int64_t)~ua; return 1;
	case TINYC_GX_ADD: *out = (int64_t)(ua + ub); return 1;
	case TINYC_GX_SUB: *out = (int64_t)(ua - ub); return 1;
	case TINYC_GX_MUL: *out = (int64_t)(ua * ub); return 1;
	case TINYC_GX_DIV:
		if (!b || (a == INT64_MIN && b == -1))
			return 0;
		*out = uns ? (int64_t)(ua / ub) : a / b;
		return 1;
	case TINYC_GX_MOD:
		if (!b || (a == INT64_MIN && b == -1))
			return 0;
		*out = uns ? (int64_t)(ua % ub) : a % b;
		return 1;
	case TINYC_GX_FLOORDIV:
		if (b <= 0)
			return 0;
		*out = a >= 0 ? a / b : -((-a + b - 1) / b);
		return 1;
	case TINYC_GX_MIN: *out = uns ? (ua < ub ? a : b) : (a < b ? a : b); return 1;
	case TINYC_GX_MAX: *out = uns ? (ua > ub ? a : b) : (a > b ? a : b); return 1;
	case TINYC_GX_AND: *out = a & b; return 1;
	case TINYC_GX_OR: *out = a | b; return 1;
	case TINYC_GX_XOR: *out = a ^ b; return 1;
	case TINYC_GX_LAND: *out = a && b; return 1;
	case TINYC_GX_LOR: *out = a || b; return 1;
	case TINYC_GX_LT: *out = uns ? ua < ub : a < b; return 1;
	case TINYC_GX_LE: *out = uns ? ua <= ub : a <= b; return 1;
	case TINYC_GX_GT: *out = uns ? ua > ub : a > b; return 1;
	case TINYC_GX_GE: *out = uns ? ua >= ub : a >= b; return 1;
	case TINYC_GX_EQ: *out = a == b; return 1;
	case TINYC_GX_NE: *out = a != b; return 1;
	default: return 0;
	}
}

tinyc_gexpr *tinyc_gx_unary(tinyc_gkernel *k, tinyc_gx_op op, tinyc_gexpr *a)
{
	if (!a)
		return NULL;
	tinyc_dtype dt = op == TINYC_GX_NOT ? TINYC_BOOL : a->dtype;
	int64_t v;
	if (a->op == TINYC_GX_INT && !tinyc_dtype_is_float(dt) && fold_int(op, dt, a->ival, 0, &v))
		return tinyc_gx_int(k, dt, v);
	if (op == TINYC_GX_NOT && a->op == TINYC_GX_NOT)
		return a->arg[0];
	tinyc_gexpr *e = gx_new(k, op, dt);
	if (e)
		e->arg[0] = a;
	return e;
}

/* Whether c1 + c2 is exact in the signed type dt and far from its limits (|c| < 2^30), so
 * that folding two constant offsets into one changes no value. */
static int offset_fits(tinyc_dtype dt, int64_t c1, int64_t c2)
{
	const int64_t lim = (int64_t)1 << 30;
	return tinyc_dtype_is_signed(dt) && c1 > -lim && c1 < lim && c2 > -lim && c2 < lim &&
	       wrap_int(dt, c1 + c2) == c1 + c2;
}

tinyc_gexpr *tinyc_gx_binary(tinyc_gkernel *k, tinyc_gx_op op, tinyc_gexpr *a, tinyc_gexpr *b)
{
	if (!a || !b)
		return NULL;
	tinyc_dtype dt = tinyc_gx_op_is_bool(op) ? TINYC_BOOL : a->dtype;
	int isint = !tinyc_dtype_is_float(a->dtype) && a->dtype == b->dtype;
	int64_t v;
	if (isint && a->op == TINYC_GX_INT && b->op == TINYC_GX_INT &&
	    fold_int(op, a->dtype, a->ival, b->ival, &v))
		return tinyc_gx_int(k, dt, v);
	if (isint && op != TINYC_GX_LAND && op != TINYC_GX_LOR) {
		switch (op) {
		case TINYC_GX_ADD:
			if (tinyc_gx_is_int(b, 0)) return a;
			if (tinyc_gx_is_int(a, 0)) return b;
			/* x + -c -> x - c (signed, c not the minimum) */
			if (b->op == TINYC_GX_INT && b->ival < 0 && tinyc_dtype_is_signed(dt) &&
			    wrap_int(dt, -b->ival) == -b->ival)
				return tinyc_gx_binary(k, TINYC_GX_SUB, a, tinyc_gx_int(k, dt, -b->ival));
			/* (x + c1) + c2 -> x + (c1 + c2) */
			if (b->op == TINYC_GX_INT && a->op == TINYC_GX_ADD && a->arg[1]->op == TINYC_GX_INT)
				return tinyc_gx_binary(k, op, a->arg[0],
						       tinyc_gx_int(k, dt, (int64_t)((uint64_t)a->arg[1]->ival + (uint64_t)b->ival)));
			/* (x - c1) + c2 -> x - (c1 - c2) (signed, no wrap: chains of PAD and SHRINK) */
			if (b->op == TINYC_GX_INT && a->op == TINYC_GX_SUB && a->arg[1]->op == TINYC_GX_INT &&
			    offset_fits(dt, a->arg[1]->ival, -b->ival))
				return tinyc_gx_binary(k, TINYC_GX_SUB, a->arg[0],
						       tinyc_gx_int(k, dt, a->arg[1]->ival - b->ival));
			break;
		case TINYC_GX_SUB:
			if (tinyc_gx_is_int(b, 0)) return a;
			if (tinyc_gx_equal(a, b)) return tinyc_gx_int(k, dt, 0);
			/* x - -c -> x + c (signed, c not the minimum) */
			if (b->op == TINYC_GX_INT && b->ival < 0 && tinyc_dtype_is_signed(dt) &&
			    wrap_int(dt, -b->ival) == -b->ival)
				return tinyc_gx_binary(k, TINYC_GX_ADD, a, tinyc_gx_int(k, dt, -b->ival));
			/* (x + c1) - c2 -> x + (c1 - c2), (x - c1) - c2 -> x - (c1 + c2) (signed, no wrap) */
			if (b->op == TINYC_GX_INT && (a->op == TINYC_GX_ADD || a->op == TINYC_GX_SUB) &&
			    a->arg[1]->op == TINYC_GX_INT) {
				int64_t c1 = a->arg[1]->ival, c2 = a->op == TINYC_GX_ADD ? -b->ival : b->ival;
				if (offset_fits(dt, c1, c2))
					return tinyc_gx_binary(k, a->op, a->arg[0], tinyc_gx_int(k, dt, c1 + c2));
			}
			break;
		case TINYC_GX_MUL:
			if (tinyc_gx_is_int(b, 1)) return a;
			if (tinyc_gx_is_int(a, 1)) return b;
			if (tinyc_gx_is_int(a, 0) || tinyc_gx_is_int(b, 0)) return tinyc_gx_int(k, dt, 0);
			break;
		case TINYC_GX_DIV:
		case TINYC_GX_FLOORDIV:
			if (tinyc_gx_is_int(b, 1)) return a;
			break;
		case TINYC_GX_MOD:
			if (tinyc_gx_is_int(b, 1)) return tinyc_gx_int(k, dt, 0);
			break;
		case TINYC_GX_MIN:
		case TINYC_GX_MAX:
			if (tinyc_gx_equal(a, b)) return a;
			break;
		default:
			break;
		}
	}
	if (a->dtype == TINYC_BOOL && b->dtype == TINYC_BOOL &&
	    (op == TINYC_GX_LAND || op == TINYC_GX_AND || op == TINYC_GX_LOR || op == TINYC_GX_OR)) {
		int and = op == TINYC_GX_LAND || op == TINYC_GX_AND;
		if (a->op == TINYC_GX_INT)
			return (a->ival != 0) == and ? b : a;
		if (b->op == TINYC_GX_INT)
			return (b->ival != 0) == and ? a : b;
	}
	tinyc_gexpr *e = gx_new(k, op, dt);
	if (e)
		e->arg[0] = a, e->arg[1] = b;
	return e;
}

tinyc_gexpr *tinyc_gx_select(tinyc_gkernel *k, tinyc_gexpr *c, tinyc_gexpr *a, tinyc_gexpr *b)
{
	if (!c || !a || !b)
		return NULL;
	if (c->op == TINYC_GX_INT)
		return c->ival ? a : b;
	if (tinyc_gx_equal(a, b))
		return a;
	tinyc_gexpr *e = gx_new(k, TINYC_GX_SELECT, a->dtype);
	if (e)
		e->arg[0] = c, e->arg[1] = a, e->arg[2] = b;
	return e;
}

tinyc_gexpr *tinyc_gx_cast(tinyc_gkernel *k, tinyc_dtype dt, tinyc_gexpr *a)
{
	if (!a)
		return NULL;
	if (a->dtype == dt)
		return a;
	if (a->op == TINYC_GX_INT && !tinyc_dtype_is_float(dt) && !tinyc_dtype_is_float(a->dtype))
		return tinyc_gx_int(k, dt, a->ival);
	/* a 16-bit float widened and narrowed back is itself (the widening is exact) */
	if (a->op == TINYC_GX_CAST && a->arg[0]->dtype == dt && tinyc_dtype_is_16bit_float(dt) &&
	    (a->dtype == TINYC_FLOAT || a->dtype == TINYC_DOUBLE))
		return a->arg[0];
	tinyc_gexpr *e = gx_new(k, TINYC_GX_CAST, dt);
	if (e)
		e->arg[0] = a;
	return e;
}

tinyc_gexpr *tinyc_gx_bitcast(tinyc_gkernel *k, tinyc_dtype dt, tinyc_gexpr *a)
{
	if (!a)
		return NULL;
	if (a->dtype == dt)
		return a;
	tinyc_gexpr *e = gx_new(k, TINYC_GX_BITCAST, dt);
	if (e)
		e->arg[0] = a;
	return e;
}

tinyc_gexpr *tinyc_gx_call(tinyc_gkernel *k, tinyc_gmath f, tinyc_gexpr *a, tinyc_gexpr *b,
			   tinyc_gexpr *c)
{
	if (!a || (f == TINYC_GM_FMA && (!b || !c)))
		return NULL;
	tinyc_gexpr *e = gx_new(k, TINYC_GX_CALL, a->dtype);
	if (e) {
		e->math = f;
		e->arg[0] = a;
		e->arg[1] = f == TINYC_GM_FMA ? b : NULL;
		e->arg[2] = f == TINYC_GM_FMA ? c : NULL;
	}
	return e;
}

/* The GPU IR of the elementwise UOp ops every builder writes alike, on operand values x[]
 * (bool operands: ADD and MAX are logical or, MUL logical and).  NULL for the ones each
 * builder writes itself (casts, RELU, IDIV, MOD). */
tinyc_gexpr *tinyc_gx_uop(tinyc_gkernel *k, tinyc_op op, tinyc_gexpr **x, int isbool, tinyc_dtype out)
{
	const tinyc_opinfo *in = tinyc_op_info(op);
	if (in && in->math != TINYC_GM_NONE)	/* a math function of the op table */
		return tinyc_gx_call(k, in->math, x[0], NULL, NULL);
	switch (op) {
	case TINYC_OP_NEG: return tinyc_gx_unary(k, TINYC_GX_NEG, x[0]);
	case TINYC_OP_RECIPROCAL:
		if (tinyc_dtype_is_16bit_float(out) && x[0]->dtype == TINYC_FLOAT)
			return tinyc_gx_call(k, TINYC_GM_RCP_APPROX, x[0], NULL, NULL);
		return tinyc_gx_binary(k, TINYC_GX_DIV, tinyc_gx_float(k, x[0]->dtype, 1), x[0]);
	case TINYC_OP_ADD: return tinyc_gx_binary(k, isbool ? TINYC_GX_OR : TINYC_GX_ADD, x[0], x[1]);
	case TINYC_OP_SUB: return tinyc_gx_binary(k, TINYC_GX_SUB, x[0], x[1]);
	case TINYC_OP_MUL: return tinyc_gx_binary(k, isbool ? TINYC_GX_AND : TINYC_GX_MUL, x[0], x[1]);
	case TINYC_OP_FDIV: return tinyc_gx_binary(k, TINYC_GX_DIV, x[0], x[1]);
	case TINYC_OP_MAX: return tinyc_gx_binary(k, isbool ? TINYC_GX_OR : TINYC_GX_MAX, x[0], x[1]);
	case TINYC_OP_CMPLT: return tinyc_gx_binary(k, TINYC_GX_LT, x[0], x[1]);
	case TINYC_OP_CMPNE: return tinyc_gx_binary(k, TINYC_GX_NE, x[0], x[1]);
	case TINYC_OP_CMPEQ: return tinyc_gx_binary(k, TINYC_GX_EQ, x[0], x[1]);
	case TINYC_OP_AND: return tinyc_gx_binary(k, TINYC_GX_AND, x[0], x[1]);
	case TINYC_OP_OR: return tinyc_gx_binary(k, TINYC_GX_OR, x[0], x[1]);
	case TINYC_OP_XOR: return tinyc_gx_binary(k, TINYC_GX_XOR, x[0], x[1]);
	case TINYC_OP_SHL:
	case TINYC_OP_SHR: {	/* the count masked to the width */
		int bits = 8 * tinyc_dtype_size(x[0]->dtype);
		tinyc_gexpr *cnt = tinyc_gx_binary(k, TINYC_GX_AND, x[1], tinyc_gx_int(k, x[1]->dtype, bits - 1));
		return tinyc_gx_binary(k, op == TINYC_OP_SHL ? TINYC_GX_SHL : TINYC_GX_SHR, x[0], cnt);
	}
	case TINYC_OP_WHERE: return tinyc_gx_select(k, x[0], x[1], x[2]);
	default: return NULL;
	}
}

tinyc_gexpr *tinyc_gx_ceildiv(tinyc_gkernel *k, tinyc_gexpr *a, tinyc_gexpr *b)
{
	if (!a || !b)
		return NULL;
	tinyc_gexpr *bm1 = tinyc_gx_binary(k, TINYC_GX_SUB, b, tinyc_gx_int(k, b->dtype, 1));
	return tinyc_gx_binary(k, TINYC_GX_DIV, tinyc_gx_binary(k, TINYC_GX_ADD, a, bm1), b);
}

int tinyc_gx_equal(const tinyc_gexpr *a, const tinyc_gexpr *b)
{
	if (a == b)
		return 1;
	if (!a || !b || a->op != b->op || a->dtype != b->dtype)
		return 0;
	switch (a->op) {
	case TINYC_GX_INT: return a->ival == b->ival;
	case TINYC_GX_FLOAT:
		return a->fval == b->fval ? signbit(a->fval) == signbit(b->fval)
					  : (isnan(a->fval) && isnan(b->fval));
	case TINYC_GX_VAR: return a->var == b->var;
	case TINYC_GX_SYM: return a->sym == b->sym;
	case TINYC_GX_SPECIAL: return a->special == b->special;
	case TINYC_GX_LOAD:
		if (a->var != b->var)
			return 0;
		break;
	case TINYC_GX_CALL:
		if (a->math != b->math)
			return 0;
		break;
	default:
		break;
	}
	for (int i = 0; i < 3; i++)
		if (!tinyc_gx_equal(a->arg[i], b->arg[i]))
			return 0;
	return 1;
}

/* -------------------------------------------------------------- statements ---- */

/* A fresh statement node. */
static tinyc_gstmt *gs_new(tinyc_gkernel *k, tinyc_gs_op op)
{
	if (!k)
		return NULL;
	tinyc_gstmt *s = galloc(k->mod, sizeof(*s));
	if (!s)
		return NULL;
	s->op = op;
	s->dst.var = s->src.var = s->src2.var = s->src3.var = -1;
	s->pipe = -1;
	s->old = -1;
	return s;
}

tinyc_gstmt *tinyc_gs_block(tinyc_gkernel *k)
{
	return gs_new(k, TINYC_GS_BLOCK);
}

int tinyc_gs_append(tinyc_gkernel *k, tinyc_gstmt *block, tinyc_gstmt *s)
{
	if (!k || !block || !s || block->op != TINYC_GS_BLOCK)
		return -1;
	tinyc_gstmt **ns = ggrow(k->mod, block->stmts, &block->cap, block->nstmts + 1, sizeof(*ns));
	if (!ns)
		return -1;
	block->stmts = ns;
	ns[block->nstmts++] = s;
	return 0;
}

int tinyc_gs_insert(tinyc_gkernel *k, tinyc_gstmt *block, int at, tinyc_gstmt *s)
{
	if (!block || at < 0 || at > block->nstmts || tinyc_gs_append(k, block, s) < 0)
		return -1;
	memmove(block->stmts + at + 1, block->stmts + at, sizeof(*block->stmts) * (size_t)(block->nstmts - 1 - at));
	block->stmts[at] = s;
	return 0;
}

tinyc_gstmt *tinyc_gs_for(tinyc_gkernel *k, int var, tinyc_gexpr *init, tinyc_gexpr *cond,
			  tinyc_gexpr *step, int unroll, tinyc_gstmt *body)
{
	if (!init || !cond || !step || !body)
		return NULL;
	tinyc_gstmt *s = gs_new(k, TINYC_GS_FOR);
	if (s) {
		s->dst.var = var;
		s->init = init, s->cond = cond, s->step = step;
		s->unroll = unroll;
		s->body = body;
	}
	return s;
}

tinyc_gstmt *tinyc_gs_for_range(tinyc_gkernel *k, int var, tinyc_gexpr *lo, tinyc_gexpr *hi,
				tinyc_gexpr *step, int unroll, tinyc_gstmt *body)
{
	tinyc_gexpr *cond = tinyc_gx_binary(k, TINYC_GX_LT, tinyc_gx_var(k, var), hi);
	return tinyc_gs_for(k, var, lo, cond, step, unroll, body);
}

tinyc_gstmt *tinyc_gs_if(tinyc_gkernel *k, tinyc_gexpr *cond, tinyc_gstmt *then, tinyc_gstmt *els)
{
	if (!cond || !then)
		return NULL;
	tinyc_gstmt *s = gs_new(k, TINYC_GS_IF);
	if (s)
		s->cond = cond, s->body = then, s->else_body = els;
	return s;
}

tinyc_gstmt *tinyc_gs_decl(tinyc_gkernel *k, int var, tinyc_gexpr *init)
{
	tinyc_gstmt *s = gs_new(k, TINYC_GS_DECL);
	if (s)
		s->dst.var = var, s->value = init;
	return s;
}

tinyc_gstmt *tinyc_gs_assign(tinyc_gkernel *k, int var, tinyc_gexpr *value)
{
	if (!value)
		return NULL;
	tinyc_gstmt *s = gs_new(k, TINYC_GS_ASSIGN);
	if (s)
		s->dst.var = var, s->value = value;
	return s;
}

tinyc_gstmt *tinyc_gs_store(tinyc_gkernel *k, int var, tinyc_gexpr *index, tinyc_gexpr *value,
			    tinyc_gexpr *pred)
{
	if (!index || !value)
		return NULL;
	if (pred && pred->op == TINYC_GX_INT && pred->ival)
		pred = NULL;
	tinyc_gstmt *s = gs_new(k, TINYC_GS_STORE);
	if (s)
		s->dst.var = var, s->dst.index = index, s->value = value, s->pred = pred;
	return s;
}

tinyc_gstmt *tinyc_gs_atomic(tinyc_gkernel *k, tinyc_gatomic op, int var, tinyc_gexpr *index,
			     tinyc_gexpr *value, tinyc_gexpr *pred)
{
	tinyc_gstmt *s = tinyc_gs_store(k, var, index, value, pred);
	if (s)
		s->op = TINYC_GS_ATOMIC, s->atomic_op = op;
	return s;
}

tinyc_gstmt *tinyc_gs_atomic_old(tinyc_gkernel *k, tinyc_gatomic op, int old, int var,
				 tinyc_gexpr *index, tinyc_gexpr *value, tinyc_gexpr *pred)
{
	tinyc_gstmt *s = tinyc_gs_atomic(k, op, var, index, value, pred);
	if (s)
		s->old = old;
	return s;
}

tinyc_gstmt *tinyc_gs_barrier(tinyc_gkernel *k)
{
	return gs_new(k, TINYC_GS_BARRIER);
}

tinyc_gstmt *tinyc_gs_cluster_barrier(tinyc_gkernel *k)
{
	tinyc_gstmt *s = gs_new(k, TINYC_GS_BARRIER);
	if (s)
		s->flag = 1;
	return s;
}

tinyc_gstmt *tinyc_gs_shfl(tinyc_gkernel *k, tinyc_gshfl kind, int dst, tinyc_gexpr *value,
			   tinyc_gexpr *lane, int width)
{
	if (!value || !lane)
		return NULL;
	tinyc_gstmt *s = gs_new(k, TINYC_GS_SHFL);
	if (s) {
		s->shfl = kind;
		s->dst.var = dst;
		s->value = value;
		s->cond = lane;
		s->n = width;
	}
	return s;
}

tinyc_gstmt *tinyc_gs_copy(tinyc_gkernel *k, int dst, tinyc_gexpr *dst_index, int src,
			   tinyc_gexpr *src_index, int n, tinyc_gexpr *pred, int async)
{
	if (!dst_index || !src_index)
		return NULL;
	if (pred && pred->op == TINYC_GX_INT && pred->ival)
		pred = NULL;
	tinyc_gstmt *s = gs_new(k, TINYC_GS_COPY);
	if (s) {
		s->dst.var = dst, s->dst.index = dst_index;
		s->src.var = src, s->src.index = src_index;
		s->n = n;
		s->pred = pred;
		s->async = async;
	}
	return s;
}

tinyc_gstmt *tinyc_gs_copy_remote(tinyc_gkernel *k, int dst, tinyc_gexpr *dst_index, int src,
				  tinyc_gexpr *src_index, int n, tinyc_gexpr *rank)
{
	if (!rank)
		return NULL;
	tinyc_gstmt *s = tinyc_gs_copy(k, dst, dst_index, src, src_index, n, NULL, 0);
	if (s)
		s->value = rank;
	return s;
}

tinyc_gstmt *tinyc_gs_cp_commit(tinyc_gkernel *k, int pipe)
{
	tinyc_gstmt *s = gs_new(k, TINYC_GS_CP_COMMIT);
	if (s)
		s->pipe = pipe;
	return s;
}

tinyc_gstmt *tinyc_gs_cp_wait(tinyc_gkernel *k, int pipe, int pending)
{
	tinyc_gstmt *s = gs_new(k, TINYC_GS_CP_WAIT);
	if (s)
		s->pipe = pipe, s->n = pending;
	return s;
}

tinyc_gstmt *tinyc_gs_ldmatrix(tinyc_gkernel *k, int dst, tinyc_gexpr *dst_off, int src,
			       tinyc_gexpr *src_index, int num, int trans)
{
	if (!dst_off || !src_index)
		return NULL;
	tinyc_gstmt *s = gs_new(k, TINYC_GS_LDMATRIX);
	if (s) {
		s->dst.var = dst, s->dst.index = dst_off;
		s->src.var = src, s->src.index = src_index;
		s->n = num;
		s->trans = trans;
	}
	return s;
}

tinyc_gstmt *tinyc_gs_mma(tinyc_gkernel *k, int d, tinyc_gexpr *d_off, int a, tinyc_gexpr *a_off,
			  int b, tinyc_gexpr *b_off, int c, tinyc_gexpr *c_off)
{
	if (!d_off || !a_off || !b_off || !c_off)
		return NULL;
	tinyc_gstmt *s = gs_new(k, TINYC_GS_MMA);
	if (s) {
		s->dst.var = d, s->dst.index = d_off;
		s->src.var = a, s->src.index = a_off;
		s->src2.var = b, s->src2.index = b_off;
		s->src3.var = c, s->src3.index = c_off;
	}
	return s;
}

/* A statement on mbarrier bar[index]. */
static tinyc_gstmt *mbar_stmt(tinyc_gkernel *k, tinyc_gs_op op, int pipe, int bar,
			      tinyc_gexpr *index)
{
	if (!index)
		return NULL;
	tinyc_gstmt *s = gs_new(k, op);
	if (s)
		s->pipe = pipe, s->dst.var = bar, s->dst.index = index;
	return s;
}

tinyc_gstmt *tinyc_gs_mbar_init(tinyc_gkernel *k, int pipe, int bar, tinyc_gexpr *index, int count)
{
	tinyc_gstmt *s = mbar_stmt(k, TINYC_GS_MBAR_INIT, pipe, bar, index);
	if (s)
		s->n = count;
	return s;
}

/* An mbarrier statement with its value (bytes, parity, a CTA's rank); NULL without one. */
static tinyc_gstmt *mbar_valued(tinyc_gkernel *k, tinyc_gs_op op, int pipe, int bar,
				tinyc_gexpr *index, tinyc_gexpr *value)
{
	if (!value)
		return NULL;
	tinyc_gstmt *s = mbar_stmt(k, op, pipe, bar, index);
	if (s)
		s->value = value;
	return s;
}

tinyc_gstmt *tinyc_gs_mbar_expect_tx(tinyc_gkernel *k, int pipe, int bar, tinyc_gexpr *index,
				     tinyc_gexpr *bytes)
{
	return mbar_valued(k, TINYC_GS_MBAR_EXPECT_TX, pipe, bar, index, bytes);
}

tinyc_gstmt *tinyc_gs_mbar_arrive(tinyc_gkernel *k, int pipe, int bar, tinyc_gexpr *index)
{
	return mbar_stmt(k, TINYC_GS_MBAR_ARRIVE, pipe, bar, index);
}

tinyc_gstmt *tinyc_gs_mbar_arrive_remote(tinyc_gkernel *k, int pipe, int bar, tinyc_gexpr *index,
					 tinyc_gexpr *rank)
{
	return mbar_valued(k, TINYC_GS_MBAR_ARRIVE, pipe, bar, index, rank);
}

tinyc_gstmt *tinyc_gs_mbar_wait(tinyc_gkernel *k, int pipe, int bar, tinyc_gexpr *index,
				tinyc_gexpr *parity)
{
	return mbar_valued(k, TINYC_GS_MBAR_WAIT, pipe, bar, index, parity);
}

tinyc_gstmt *tinyc_gs_tma_load(tinyc_gkernel *k, int pipe, int dst, tinyc_gexpr *dst_index,
			       int tmap, int rank, tinyc_gexpr *const *coords, int bar,
			       tinyc_gexpr *bar_index)
{
	if (!dst_index || !bar_index || rank < 1 || rank > 5)
		return NULL;
	for (int i = 0; i < rank; i++)
		if (!coords[i])
			return NULL;
	tinyc_gstmt *s = gs_new(k, TINYC_GS_TMA_LOAD);
	if (s) {
		s->pipe = pipe;
		s->dst.var = dst, s->dst.index = dst_index;
		s->src.var = tmap;
		s->src2.var = bar, s->src2.index = bar_index;
		s->n = rank;
		for (int i = 0; i < rank; i++)
			s->coord[i] = coords[i];
	}
	return s;
}

tinyc_gstmt *tinyc_gs_fence(tinyc_gkernel *k, tinyc_gfence f)
{
	tinyc_gstmt *s = gs_new(k, TINYC_GS_FENCE);
	if (s)
		s->fence = f;
	return s;
}

tinyc_gstmt *tinyc_gs_comment(tinyc_gkernel *k, const char *text)
{
	tinyc_gstmt *s = gs_new(k, TINYC_GS_COMMENT);
	if (s && !(s->text = tinyc_gpu_strdup(k->mod, text)))
		return NULL;
	return s;
}

tinyc_gstmt *tinyc_gs_wgmma(tinyc_gkernel *k, int d, tinyc_gexpr *d_off, int a,
			    tinyc_gexpr *a_index, tinyc_gwg_layout la, int b, tinyc_gexpr *b_index,
			    tinyc_gwg_layout lb, int n, tinyc_gexpr *scale_d)
{
	if (!d_off || !a_index || !b_index)
		return NULL;
	tinyc_gstmt *s = gs_new(k, TINYC_GS_WGMMA);
	if (s) {
		s->dst.var = d, s->dst.index = d_off;
		s->src.var = a, s->src.index = a_index;
		s->src2.var = b, s->src2.index = b_index;
		s->wg_a = la, s->wg_b = lb;
		s->n = n;
		s->value = scale_d;
	}
	return s;
}

tinyc_gstmt *tinyc_gs_wgmma_fence(tinyc_gkernel *k)
{
	return gs_new(k, TINYC_GS_WGMMA_FENCE);
}

tinyc_gstmt *tinyc_gs_wgmma_commit(tinyc_gkernel *k)
{
	return gs_new(k, TINYC_GS_WGMMA_COMMIT);
}

tinyc_gstmt *tinyc_gs_wgmma_wait(tinyc_gkernel *k, int pending, int acc)
{
	tinyc_gstmt *s = gs_new(k, TINYC_GS_WGMMA_WAIT);
	if (s)
		s->n = pending, s->dst.var = acc;
	return s;
}

tinyc_gstmt *tinyc_gs_syncwarp(tinyc_gkernel *k)
{
	return gs_new(k, TINYC_GS_SYNCWARP);
}

tinyc_gstmt *tinyc_gs_tmap_prefetch(tinyc_gkernel *k, int tmap)
{
	tinyc_gstmt *s = gs_new(k, TINYC_GS_TMAP_PREFETCH);
	if (s)
		s->src.var = tmap;
	return s;
}

tinyc_gstmt *tinyc_gs_tma_store(tinyc_gkernel *k, int tmap, int rank, tinyc_gexpr *const *coords,
				int src, tinyc_gexpr *src_index)
{
	if (!src_index || rank < 1 || rank > 5)
		return NULL;
	for (int i = 0; i < rank; i++)
		if (!coords[i])
			return NULL;
	tinyc_gstmt *s = gs_new(k, TINYC_GS_TMA_STORE);
	if (s) {
		s->dst.var = tmap;
		s->src.var = src, s->src.index = src_index;
		s->n = rank;
		for (int i = 0; i < rank; i++)
			s->coord[i] = coords[i];
	}
	return s;
}

tinyc_gstmt *tinyc_gs_bulk_commit(tinyc_gkernel *k)
{
	return gs_new(k, TINYC_GS_BULK_COMMIT);
}

tinyc_gstmt *tinyc_gs_bulk_wait(tinyc_gkernel *k, int pending)
{
	tinyc_gstmt *s = gs_new(k, TINYC_GS_BULK_WAIT);
	if (s)
		s->n = pending;
	return s;
}

tinyc_gstmt *tinyc_gs_setmaxnreg(tinyc_gkernel *k, int inc, int regs)
{
	tinyc_gstmt *s = gs_new(k, TINYC_GS_SETMAXNREG);
	if (s)
		s->flag = inc != 0, s->n = regs;
	return s;
}

/* ------------------------------------------------------------- evaluation ---- */

int tinyc_gpu_eval_int(const tinyc_gexpr *e, const int64_t *sym, int64_t *out)
{
	if (!e)
		return -1;
	int64_t a = 0, b = 0;
	switch (e->op) {
	case TINYC_GX_INT:
		*out = e->ival;
		return 0;
	case TINYC_GX_SYM:
		if (!sym || sym[e->sym] < 0)
			return -1;
		*out = sym[e->sym];
		return 0;
	case TINYC_GX_SELECT:
		if (tinyc_gpu_eval_int(e->arg[0], sym, &a) < 0)
			return -1;
		return tinyc_gpu_eval_int(e->arg[a ? 1 : 2], sym, out);
	case TINYC_GX_CAST:
		if (tinyc_gpu_eval_int(e->arg[0], sym, &a) < 0)
			return -1;
		*out = wrap_int(e->dtype, a);
		return 0;
	default:
		break;
	}
	if (!e->arg[0] || tinyc_gpu_eval_int(e->arg[0], sym, &a) < 0)
		return -1;
	if (e->arg[1] && tinyc_gpu_eval_int(e->arg[1], sym, &b) < 0)
		return -1;
	if (!fold_int(e->op, e->arg[0]->dtype, a, b, out))
		return -1;
	*out = wrap_int(e->dtype, *out);
	return 0;
}
