/* Rearrange plan -> CUDA text: the elementwise block/grid kernel and the tiled transpose,
 * with every length and stride of the plan folded in as a constant.  The arithmetic is the
 * one sched/rearrange_sim.c executes; keep the two in step. */
#include "codegen/codegen.h"

#include <ctype.h>
#include <string.h>

/* The CUDA type of an access of n bytes (n a power of two, 1..32). */
static const char *unit_type(int n)
{
	switch (n) {
	case 1: return "unsigned char";
	case 2: return "unsigned short";
	case 4: return "unsigned int";
	case 8: return "uint2";
	case 16: return "uint4";
	default: return "tinyc_unit32";
	}
}

/* The integer type of an element of n bytes, for the tile. */
static const char *elem_type(int n)
{
	switch (n) {
	case 1: return "unsigned char";
	case 2: return "unsigned short";
	case 4: return "unsigned int";
	default: return "unsigned long long";
	}
}

/* A stride or length literal of the index type. */
static void lit(tinyc_buf *b, int bits, int64_t v)
{
	if (bits == 64)
		tinyc_buf_printf(b, "(%lldLL)", (long long)v);
	else
		tinyc_buf_printf(b, "(%lld)", (long long)v);
}

/* "so += (idx)i * S; dof += (idx)i * D;" for one loop index, skipping zero strides. */
static void emit_offsets(tinyc_buf *b, int bits, const char *i, const tinyc_rearrange_dim *d)
{
	const char *idx = bits == 64 ? "long long" : "int";
	if (d->src) {
		tinyc_buf_printf(b, "\tso += (%s)%s * ", idx, i);
		lit(b, bits, d->src);
		tinyc_buf_puts(b, ";\n");
	}
	if (d->dst) {
		tinyc_buf_printf(b, "\tdof += (%s)%s * ", idx, i);
		lit(b, bits, d->dst);
		tinyc_buf_puts(b, ";\n");
	}
}

/* Decompose variable `lin` over dims (fastest first) into constants prefix0, prefix1, ...:
 * `% len` and `/ len` by constants, the last dim takes the rest. */
static void emit_decompose(tinyc_buf *b, int bits, const char *lin, const char *prefix,
			   const tinyc_rearrange_dim *d, int n)
{
	for (int k = 0; k < n; k++) {
		char i[16];
		snprintf(i, sizeof(i), "%s%d", prefix, k);
		if (k == n - 1) {
			tinyc_buf_printf(b, "\tconst unsigned int %s = %s;\n", i, lin);
		} else {
			tinyc_buf_printf(b, "\tconst unsigned int %s = %s %% %lluu;\n", i, lin,
					 (unsigned long long)d[k].len);
			tinyc_buf_printf(b, "\t%s /= %lluu;\n", lin, (unsigned long long)d[k].len);
		}
		emit_offsets(b, bits, i, &d[k]);
	}
}

/* The comment line that heads every kernel: what the plan is. */
static void emit_header(tinyc_buf *b, const tinyc_rearrange_plan *p)
{
	tinyc_buf_printf(b, "/* tinyc rearrange, %s plan: %lld %s elements, %lld blocks of %lld "
			 "threads, %d-bit index */\n", tinyc_rearrange_kind_name(p->kind),
			 (long long)p->numel, tinyc_dtype_name(p->dtype), (long long)p->blocks,
			 (long long)p->threads, p->index_bits);
}

/* The elementwise kernel: grid index -> grid dims, thread index -> block dims, constraint,
 * one unit copied. */
static void emit_elementwise(tinyc_buf *b, const tinyc_rearrange_plan *p, const char *name)
{
	int bits = p->index_bits;
	const char *idx = bits == 64 ? "long long" : "int";
	if (p->unit == 32)
		tinyc_buf_puts(b, "#ifndef TINYC_UNIT32\n#define TINYC_UNIT32\n"
			       "struct __align__(32) tinyc_unit32 { uint4 lo, hi; };\n#endif\n");
	tinyc_buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%lld)\n",
			 (long long)p->threads);
	tinyc_buf_printf(b, "%s(unsigned char *__restrict__ y_bytes, "
			 "const unsigned char *__restrict__ x_bytes)\n{\n", name);
	tinyc_buf_printf(b, "\ttypedef %s unit_t;\t/* %d bytes */\n", unit_type(p->unit), p->unit);
	tinyc_buf_puts(b, "\tunit_t *__restrict__ y = (unit_t *)y_bytes;\n");
	tinyc_buf_puts(b, "\tconst unit_t *__restrict__ x = (const unit_t *)x_bytes;\n");
	tinyc_buf_printf(b, "\t%s so = 0, dof = 0;\n", idx);
	if (p->ngrid) {
		tinyc_buf_puts(b, "\tunsigned int g = blockIdx.x;\n");
		emit_decompose(b, bits, "g", "g", p->grid, p->ngrid);
	}
	if (p->nblock) {
		tinyc_buf_puts(b, "\tunsigned int t = threadIdx.x;\n");
		emit_decompose(b, bits, "t", "b", p->block, p->nblock);
	}
	for (int c = 0; c < p->ncons; c++) {
		const tinyc_rearrange_constraint *k = &p->cons[c];
		if (k->len > INT32_MAX)
			tinyc_buf_printf(b, "\tif ((unsigned long long)g%d * %lldULL + b%d >= "
					 "%lldULL)\n\t\treturn;\n", k->grid, (long long)k->per_block,
					 k->inner, (long long)k->len);
		else
			tinyc_buf_printf(b, "\tif (g%d * %lldu + b%d >= %lldu)\n\t\treturn;\n",
					 k->grid, (long long)k->per_block, k->inner,
					 (long long)k->len);
	}
	tinyc_buf_puts(b, "\ty[dof] = x[so];\n}\n");
}

/* Offsets of a tile group: `var += (idx)i * stride` for linear index `lin` decomposed by the
 * group's constant lengths (fastest first); use_dst picks the destination strides. */
static void emit_group(tinyc_buf *b, int bits, const char *lin, const char *var,
		       const tinyc_rearrange_dim *g, int n, int use_dst)
{
	const char *idx = bits == 64 ? "long long" : "int";
	for (int k = 0; k < n; k++) {
		int64_t st = use_dst ? g[k].dst : g[k].src;
		if (k == n - 1) {
			tinyc_buf_printf(b, "\t\t\t%s += (%s)%s * ", var, idx, lin);
		} else {
			tinyc_buf_printf(b, "\t\t\t%s += (%s)(%s %% %lldu) * ", var, idx, lin,
					 (long long)g[k].len);
		}
		lit(b, bits, st);
		tinyc_buf_puts(b, ";\n");
		if (k < n - 1)
			tinyc_buf_printf(b, "\t\t\t%s /= %lldu;\n", lin, (long long)g[k].len);
	}
}

/* Open the loop over a thread's K tile rows (r = ty + k * ty_n) and, when the tile may be
 * cut short, the check of the rows left (`lim`, or NULL).  Closed by the caller. */
static void rows_open(tinyc_buf *b, int K, int ty, const char *lim)
{
	tinyc_buf_printf(b, "#pragma unroll\n\tfor (int k = 0; k < %d; k++) {\n"
			 "\t\tconst int r = ty + k * %d;\n", K, ty);
	if (lim)
		tinyc_buf_printf(b, "\t\tif (r < %s)\n", lim);
	tinyc_buf_puts(b, "\t\t{\n");
}

/* Open the loop over a row's R words (word column cw = tx + 32 j, declared when the body
 * or the check needs it) and the check of the columns left (`lim`, or NULL): the next
 * statement is the body. */
static void words_open(tinyc_buf *b, int R, int P, const char *lim, int need_cw)
{
	tinyc_buf_printf(b, "#pragma unroll\n\t\t\tfor (int j = 0; j < %d; j++) {\n", R);
	if (lim || need_cw)
		tinyc_buf_puts(b, "\t\t\t\tconst int cw = tx + 32 * j;\n");
	if (lim)
		tinyc_buf_printf(b, "\t\t\t\tif (cw * %d < %s)\n", P, lim);
}

/* The tiled transpose: load a T x T tile (rows: group A, columns: group B, read along B)
 * into padded shared memory, barrier, store it transposed (written along A); P elements
 * per global access (a word of P * E <= 4 bytes), `repeat` words per thread per tile row
 * (word columns tx + 32 j: each warp access stays one contiguous run).  A thread's loads
 * all go to registers first, then to the tile, so they are all in flight at once. */
static void emit_tiled(tinyc_buf *b, const tinyc_rearrange_plan *p, const char *name)
{
	int bits = p->index_bits, T = p->tile, P = p->pack, E = p->elem;
	const char *idx = bits == 64 ? "long long" : "int";
	const char *lin = bits == 64 ? "unsigned long long" : "unsigned int";
	tinyc_buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%d)\n", p->tx * p->ty);
	tinyc_buf_printf(b, "%s(unsigned char *__restrict__ y_bytes, "
			 "const unsigned char *__restrict__ x_bytes)\n{\n", name);
	tinyc_buf_printf(b, "\ttypedef %s elem_t;\t/* %d bytes */\n", elem_type(E), E);
	if (P > 1)
		tinyc_buf_printf(b, "\ttypedef %s word_t;\t/* %d elements packed */\n",
				 unit_type(P * E), P);
	else
		tinyc_buf_puts(b, "\ttypedef elem_t word_t;\t/* one element per access */\n");
	tinyc_buf_printf(b, "\t__shared__ elem_t tile[%d][%d];\t/* [row: A][column: B], padded */\n",
			 T, T + p->tile_pad);
	tinyc_buf_puts(b, "\telem_t *__restrict__ y = (elem_t *)y_bytes;\n");
	tinyc_buf_puts(b, "\tconst elem_t *__restrict__ x = (const elem_t *)x_bytes;\n");
	tinyc_buf_printf(b, "\t%s so = 0, dof = 0;\n", idx);
	tinyc_buf_puts(b, "\tunsigned int g = blockIdx.x;\n");
	emit_decompose(b, bits, "g", "g", p->grid, p->ngrid);
	tinyc_buf_puts(b, "\tconst int tx = threadIdx.x, ty = threadIdx.y;\n");
	tinyc_buf_printf(b, "\tconst %s xb = so + (%s)g1 * %d;\t/* first column (B) in x */\n",
			 idx, idx, T);
	tinyc_buf_printf(b, "\tconst %s ya = dof + (%s)g0 * %d;\t/* first row's column (A) in y */\n",
			 idx, idx, T);
	/* how many rows (A) and columns (B) of this tile exist */
	const char *lim[2] = {NULL, NULL};
	for (int c = 0; c < p->ncons; c++) {
		const tinyc_rearrange_constraint *k = &p->cons[c];
		const char *v = k->inner ? "left_b" : "left_a";
		if (k->len <= INT32_MAX)	/* 32-bit compares where the length allows */
			tinyc_buf_printf(b, "\tconst int %s = %lld - (int)g%d * %lld;\n", v,
					 (long long)k->len, k->grid, (long long)k->per_block);
		else
			tinyc_buf_printf(b, "\tconst long long %s = %lldLL - (long long)g%d * %lldLL;\n",
					 v, (long long)k->len, k->grid, (long long)k->per_block);
		lim[k->inner] = v;
	}
	const int K = T / p->ty, R = p->repeat;
	/* phase 0a: the thread's rows of A (ty, ty + ty_n, ...: a constant trip count, so the
	 * loops unroll fully), each at its source offset, and R words per row, loaded into
	 * registers before any of them is stored to shared memory */
	tinyc_buf_printf(b, "\tword_t v[%d];\t/* the thread's words, [row k][word j] */\n", K * R);
	rows_open(b, K, p->ty, lim[0]);
	tinyc_buf_printf(b, "\t\t\t%s i = xb + tx * %d;\n", idx, P);
	tinyc_buf_printf(b, "\t\t\t%s a = (%s)g0 * %du + r;\n", lin, lin, T);
	emit_group(b, bits, "a", "i", p->tile_a, p->ntile_a, 0);
	words_open(b, R, P, lim[1], 0);
	tinyc_buf_printf(b, "\t\t\t\t\tv[k * %d + j] = *(const word_t *)(x + (i + j * %d));\n",
			 R, 32 * P);
	tinyc_buf_puts(b, "\t\t\t}\n\t\t}\n\t}\n");
	/* phase 0b: the words' elements into the tile, row r, columns cw * P + q */
	rows_open(b, K, p->ty, lim[0]);
	words_open(b, R, P, lim[1], 1);
	tinyc_buf_puts(b, "\t\t\t\t{\n");
	if (P == 1)
		tinyc_buf_printf(b, "\t\t\t\t\ttile[r][cw] = v[k * %d + j];\n", R);
	for (int q = 0; P > 1 && q < P; q++)
		tinyc_buf_printf(b, "\t\t\t\t\ttile[r][cw * %d + %d] = (elem_t)(v[k * %d + j] >> %d);\n",
				 P, q, R, 8 * E * q);
	tinyc_buf_puts(b, "\t\t\t\t}\n\t\t\t}\n\t\t}\n\t}\n");
	tinyc_buf_puts(b, "\t__syncthreads();\n");
	/* phase 1: the thread's rows of B, each at its destination offset; R words per row,
	 * gathered from tile column r */
	rows_open(b, K, p->ty, lim[1]);
	tinyc_buf_printf(b, "\t\t\t%s o = ya + tx * %d;\n", idx, P);
	tinyc_buf_printf(b, "\t\t\t%s c = (%s)g1 * %du + r;\n", lin, lin, T);
	emit_group(b, bits, "c", "o", p->tile_b, p->ntile_b, 1);
	words_open(b, R, P, lim[0], 1);
	tinyc_buf_puts(b, "\t\t\t\t{\n\t\t\t\t\tconst word_t w = (word_t)(");
	if (P == 1)
		tinyc_buf_puts(b, "tile[cw][r]");
	for (int q = 0; P > 1 && q < P; q++)
		tinyc_buf_printf(b, "%s((unsigned int)tile[cw * %d + %d][r] << %d)",
				 q ? "\n\t\t\t\t\t\t| " : "", P, q, 8 * E * q);
	tinyc_buf_printf(b, ");\n\t\t\t\t\t*(word_t *)(y + (o + j * %d)) = w;\n"
			 "\t\t\t\t}\n\t\t\t}\n\t\t}\n\t}\n", 32 * P);
	tinyc_buf_puts(b, "}\n");
}

/* Whether s is a C identifier. */
static int is_ident(const char *s)
{
	if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return 0;
	return 1;
}

/* The CUDA text of a plan's kernel. */
int tinyc_rearrange_emit_cuda(tinyc_ctx *ctx, const tinyc_rearrange_plan *p, const char *name,
			      tinyc_buf *out)
{
	if (!p || !out)
		return tinyc_error(ctx, "RearrangeBadParam", "emit: no plan or output buffer");
	if (!is_ident(name))
		return tinyc_error(ctx, "RearrangeBadParam", "kernel name '%s' is not an identifier",
				   name ? name : "(null)");
	if (p->kind != TINYC_REARRANGE_ELEMENTWISE && p->kind != TINYC_REARRANGE_TILED)
		return tinyc_error(ctx, "RearrangeNoKernel",
				   "a %s plan launches no kernel", tinyc_rearrange_kind_name(p->kind));
	emit_header(out, p);
	if (p->kind == TINYC_REARRANGE_ELEMENTWISE)
		emit_elementwise(out, p, name);
	else
		emit_tiled(out, p, name);
	if (out->oom)
		return tinyc_error(ctx, "OutOfMemory", "emit: out of memory");
	return 0;
}

/* Launch geometry of the plan's kernel. */
void tinyc_rearrange_launch_dims(const tinyc_rearrange_plan *p, unsigned grid[3],
				 unsigned block[3])
{
	grid[0] = (unsigned)p->blocks;
	grid[1] = grid[2] = 1;
	if (p->kind == TINYC_REARRANGE_TILED) {
		block[0] = (unsigned)p->tx;
		block[1] = (unsigned)p->ty;
	} else {
		block[0] = (unsigned)p->threads;
		block[1] = 1;
	}
	block[2] = 1;
}
