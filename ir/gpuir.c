/* GPU IR: the arena, the builder (with integer constant folding), the verifier and the
 * deterministic text dump (--dump-stage=gpuir).  See ir/gpuir.h.
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

/* ------------------------------------------------------------------- arena ---- */

/* One chunk of the arena. */
typedef struct garena_chunk {
	struct garena_chunk *next;	/* older chunk */
	size_t used;			/* bytes handed out */
	size_t size;			/* bytes of data[] */
	_Alignas(16) unsigned char data[];	/* the memory */
} garena_chunk;

/* A bump allocator: everything of a module is freed at once. */
typedef struct tinyc_garena {
	garena_chunk *head;		/* newest chunk */
} tinyc_garena;

/* Allocate n zeroed bytes (16-aligned) from the module's arena; NULL and OutOfMemory. */
static void *galloc(tinyc_gpu_module *m, size_t n)
{
	if (!m)
		return NULL;
	n = (n + 15) & ~(size_t)15;
	garena_chunk *c = m->arena->head;
	if (!c || c->size - c->used < n) {
		size_t size = n > 65536 ? n : 65536;
		c = calloc(1, sizeof(*c) + size);
		if (!c) {
			tinyc_error(m->ctx, "OutOfMemory", "GPU IR arena: %zu bytes", n);
			return NULL;
		}
		c->size = size;
		c->next = m->arena->head;
		m->arena->head = c;
	}
	void *p = c->data + c->used;
	c->used += n;
	memset(p, 0, n);
	return p;
}

/* Grow an arena array to hold at least need elements (old contents copied). */
static void *ggrow(tinyc_gpu_module *m, void *old, int *cap, int need, size_t elem)
{
	if (need <= *cap)
		return old;
	int ncap = *cap ? *cap * 2 : 8;
	while (ncap < need)
		ncap *= 2;
	void *p = galloc(m, (size_t)ncap * elem);
	if (!p)
		return NULL;
	if (old)
		memcpy(p, old, (size_t)*cap * elem);
	*cap = ncap;
	return p;
}

char *tinyc_gpu_strdup(tinyc_gpu_module *m, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s);
	char *p = galloc(m, n + 1);
	if (p)
		memcpy(p, s, n + 1);
	return p;
}

/* ------------------------------------------------------------------ module ---- */

tinyc_gpu_module *tinyc_gpu_module_alloc(tinyc_ctx *ctx)
{
	tinyc_gpu_module *m = tinyc_calloc(ctx, 1, sizeof(*m));
	if (!m)
		return NULL;
	m->arena = tinyc_calloc(ctx, 1, sizeof(*m->arena));
	if (!m->arena) {
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
	for (garena_chunk *c = m->arena->head, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	free(m->arena);
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
static int is_bool_op(tinyc_gx_op op)
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

tinyc_gexpr *tinyc_gx_binary(tinyc_gkernel *k, tinyc_gx_op op, tinyc_gexpr *a, tinyc_gexpr *b)
{
	if (!a || !b)
		return NULL;
	tinyc_dtype dt = is_bool_op(op) ? TINYC_BOOL : a->dtype;
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
			break;
		case TINYC_GX_SUB:
			if (tinyc_gx_is_int(b, 0)) return a;
			if (tinyc_gx_equal(a, b)) return tinyc_gx_int(k, dt, 0);
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

tinyc_gstmt *tinyc_gs_barrier(tinyc_gkernel *k)
{
	return gs_new(k, TINYC_GS_BARRIER);
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

tinyc_gstmt *tinyc_gs_mbar_expect_tx(tinyc_gkernel *k, int pipe, int bar, tinyc_gexpr *index,
				     tinyc_gexpr *bytes)
{
	if (!bytes)
		return NULL;
	tinyc_gstmt *s = mbar_stmt(k, TINYC_GS_MBAR_EXPECT_TX, pipe, bar, index);
	if (s)
		s->value = bytes;
	return s;
}

tinyc_gstmt *tinyc_gs_mbar_arrive(tinyc_gkernel *k, int pipe, int bar, tinyc_gexpr *index)
{
	return mbar_stmt(k, TINYC_GS_MBAR_ARRIVE, pipe, bar, index);
}

tinyc_gstmt *tinyc_gs_mbar_wait(tinyc_gkernel *k, int pipe, int bar, tinyc_gexpr *index,
				tinyc_gexpr *parity)
{
	if (!parity)
		return NULL;
	tinyc_gstmt *s = mbar_stmt(k, TINYC_GS_MBAR_WAIT, pipe, bar, index);
	if (s)
		s->value = parity;
	return s;
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

tinyc_gstmt *tinyc_gs_setmaxnreg(tinyc_gkernel *k, int inc, int regs)
{
	tinyc_gstmt *s = gs_new(k, TINYC_GS_SETMAXNREG);
	if (s)
		s->flag = inc != 0, s->n = regs;
	return s;
}

/* ------------------------------------------------------------------- names ---- */

static const char *const gx_names[TINYC_GX_OP_COUNT] = {
	"int", "float", "var", "sym", "special", "load", "neg", "not", "bitnot", "add", "sub",
	"mul", "div", "mod", "floordiv", "min", "max", "and", "or", "xor", "shl", "shr", "land",
	"lor", "lt", "le", "gt", "ge", "eq", "ne", "select", "cast", "bitcast", "call",
};

static const char *const gs_names[TINYC_GS_OP_COUNT] = {
	"block", "for", "if", "decl", "assign", "store", "atomic", "barrier", "shfl", "copy",
	"cp.async.commit", "cp.async.wait", "ldmatrix", "mma", "mbarrier.init",
	"mbarrier.expect_tx", "mbarrier.arrive", "mbarrier.wait", "tma.load", "fence", "comment",
	"wgmma.fence", "wgmma", "wgmma.commit", "wgmma.wait", "setmaxnreg", "syncwarp",
};

static const char *const special_names[TINYC_GSP_COUNT] = {
	"threadIdx.x", "threadIdx.y", "threadIdx.z", "blockIdx.x", "blockIdx.y", "blockIdx.z",
	"blockDim.x", "blockDim.y", "blockDim.z", "gridDim.x", "gridDim.y", "gridDim.z",
	"lane", "warp",
};

const char *tinyc_gx_op_name(tinyc_gx_op op)
{
	return op >= 0 && op < TINYC_GX_OP_COUNT ? gx_names[op] : "?";
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

/* Operator precedence for minimal parentheses (higher binds tighter). */
static int prec(const tinyc_gexpr *e)
{
	switch (e->op) {
	case TINYC_GX_SELECT: return 1;
	case TINYC_GX_LOR: return 2;
	case TINYC_GX_LAND: return 3;
	case TINYC_GX_OR: return 4;
	case TINYC_GX_XOR: return 5;
	case TINYC_GX_AND: return 6;
	case TINYC_GX_EQ: case TINYC_GX_NE: return 7;
	case TINYC_GX_LT: case TINYC_GX_LE: case TINYC_GX_GT: case TINYC_GX_GE: return 8;
	case TINYC_GX_SHL: case TINYC_GX_SHR: return 9;
	case TINYC_GX_ADD: case TINYC_GX_SUB: return 10;
	case TINYC_GX_MUL: case TINYC_GX_DIV: case TINYC_GX_MOD: return 11;
	case TINYC_GX_NEG: case TINYC_GX_NOT: case TINYC_GX_BITNOT: return 12;
	default: return 13;
	}
}

static const char *infix(tinyc_gx_op op)
{
	switch (op) {
	case TINYC_GX_ADD: return "+";
	case TINYC_GX_SUB: return "-";
	case TINYC_GX_MUL: return "*";
	case TINYC_GX_DIV: return "/";
	case TINYC_GX_MOD: return "%";
	case TINYC_GX_AND: return "&";
	case TINYC_GX_OR: return "|";
	case TINYC_GX_XOR: return "^";
	case TINYC_GX_SHL: return "<<";
	case TINYC_GX_SHR: return ">>";
	case TINYC_GX_LAND: return "&&";
	case TINYC_GX_LOR: return "||";
	case TINYC_GX_LT: return "<";
	case TINYC_GX_LE: return "<=";
	case TINYC_GX_GT: return ">";
	case TINYC_GX_GE: return ">=";
	case TINYC_GX_EQ: return "==";
	case TINYC_GX_NE: return "!=";
	default: return NULL;
	}
}

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
	int p = prec(e);
	int paren = p < outer;
	if (paren)
		tinyc_buf_putc(out, '(');
	const char *op = infix(e->op);
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
		tinyc_buf_puts(out, e->op == TINYC_GX_NEG ? "-" : e->op == TINYC_GX_NOT ? "!" : "~");
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
	static const char *const n[] = {"block", "global", "proxy.async", "mbarrier_init"};
	return f >= 0 && f <= TINYC_GF_MBAR_INIT ? n[f] : "?";
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
		tinyc_buf_puts(out, "barrier");
		break;
	case TINYC_GS_SHFL:
		tinyc_buf_printf(out, "%s = shfl.%s(", vname(k, s->dst.var), shfl_name(s->shfl));
		tinyc_gpu_print_expr(k, s->value, out);
		tinyc_buf_puts(out, ", ");
		tinyc_gpu_print_expr(k, s->cond, out);
		tinyc_buf_printf(out, ", %d)", s->n);
		break;
	case TINYC_GS_COPY:
		tinyc_buf_printf(out, "%s x%d ", s->async ? "cp.async" : "copy", s->n);
		print_ref(k, &s->dst, out);
		tinyc_buf_puts(out, " <- ");
		print_ref(k, &s->src, out);
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
		tinyc_buf_puts(out, "mma.m16n8k16 ");
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
		break;
	case TINYC_GS_TMA_LOAD:
		tinyc_buf_printf(out, "tma.load.%dd ", s->n);
		print_ref(k, &s->dst, out);
		tinyc_buf_printf(out, " <- %s(", vname(k, s->src.var));
		for (int i = 0; i < s->n; i++) {
			if (i)
				tinyc_buf_puts(out, ", ");
			tinyc_gpu_print_expr(k, s->coord[i], out);
		}
		tinyc_buf_puts(out, ") mbarrier ");
		print_ref(k, &s->src2, out);
		break;
	case TINYC_GS_FENCE:
		tinyc_buf_printf(out, "fence.%s", fence_name(s->fence));
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
		tinyc_buf_printf(out, " (%s", s->wg_a.k_major ? "k-major" : "m-major");
		if (!s->wg_a.k_major)
			tinyc_buf_printf(out, ", blocks %d B", s->wg_a.mn_block);
		tinyc_buf_puts(out, ", swizzle 128 B) * ");
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
		if (!tinyc_dtype_is_float(a->dtype))
			verr(st, "math function on a non-float: ", tinyc_gmath_name(e->math), NULL);
		if (e->math == TINYC_GM_FMA && (b->dtype != a->dtype || e->arg[2]->dtype != a->dtype))
			verr(st, "fma operands differ in dtype", NULL, NULL);
		break;
	default:
		if (e->op >= TINYC_GX_ADD && e->op <= TINYC_GX_NE) {
			if (!a || !b) {
				verr(st, "binary operator without operands", NULL, NULL);
				break;
			}
			if (a->dtype != b->dtype)
				verr(st, "operands differ in dtype: ", tinyc_dtype_name(a->dtype),
				     tinyc_dtype_name(b->dtype));
			int fl = tinyc_dtype_is_float(a->dtype);
			if (fl && (e->op == TINYC_GX_MOD || e->op == TINYC_GX_FLOORDIV ||
				   (e->op >= TINYC_GX_AND && e->op <= TINYC_GX_SHR)))
				verr(st, "integer operator on floats: ", tinyc_gx_op_name(e->op), NULL);
			if ((e->op == TINYC_GX_LAND || e->op == TINYC_GX_LOR) && a->dtype != TINYC_BOOL)
				verr(st, "logical operator on non-bool", NULL, NULL);
			if (is_bool_op(e->op) ? e->dtype != TINYC_BOOL : e->dtype != a->dtype)
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
		if (o->kind != TINYC_GV_SHARED || (o->dtype != TINYC_HALF && o->dtype != TINYC_BFLOAT16))
			verr(st, "wgmma operands are half or bfloat16 shared arrays: ", o->name, NULL);
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
		break;
	case TINYC_GS_BARRIER:
		if (ctl > 0)
			verr(st, "barrier under a thread-dependent branch or loop", NULL, NULL);
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
		break;
	}
	case TINYC_GS_FENCE:
	case TINYC_GS_COMMENT:
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
