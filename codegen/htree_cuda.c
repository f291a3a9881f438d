/* htree forward (seed 004) -> CUDA text, with the configuration folded in as constants.
 *
 * One translation unit holds four kernels:
 *
 *   htree_pool_in, htree_pool_f32   one tree layer by valid-count mean pooling (the
 *        fallback tree build when the generic pipeline cannot run the pooling graph):
 *        y[o,i,e] = (sequential float32 sum of x[o,j,e], j in group i) / count.
 *   htree_rot_top   the top layer's keys rotated the reference's way, once a forward
 *        (node p's rotation uses table row p, its candidate position on the top layer, the
 *        same for every query): passes 1 and 2 (with krot_keys, HT_KROT_KEYS, an experiment
 *        not yet timed on a GPU: pass 3 and the top layer's tensor-core leaves too) read a
 *        64-byte row a candidate instead of the key, cos and sin rows (128 bytes) and the
 *        rotation (they are bound by those loads).
 *   htree_forward   one block per query group (b, t, h_kv), all layers top-down:
 *
 *   per layer l (candidates: the top layer's nodes 0..t>>(l*log2 r), or the children of
 *   the parents the layer above kept, in shared memory):
 *     qrot   = rope(q[h_kv*G+g], n-1) * scale                    (shared memory, G x K)
 *     l >= 1 (selection, computed in the CPU reference's float32 order so that the keys,
 *             and hence the selections, are the reference's):
 *       pass 1  mx_g = max_p s[g,p]            s = sequential dot, no FMA contraction: by
 *               the exact sweep, or (fast_max, the runner's default) from fast scores with
 *               exact rechecks of the candidates the bound leaves (ht_max_fast)
 *       pass 2  sum_g = sequential sum over p of exp(s - mx_g): tiles of exp values in
 *               shared memory, folded in candidate order by one thread per head (in warps
 *               of their own, CHW) while the other threads compute the next tile (double
 *               buffer)
 *       pass 3  imp[p] = sum over g, in order, of exp(s - lse_g) (flushed below FLT_MIN);
 *               key = float bits & KEYMASK; imp[n-1] forced to 1000.  Computed fast (FMA
 *               scores, __expf) with a bound on the distance from the reference's
 *               arithmetic; the keys the bound leaves open are recomputed exactly
 *       top-K   radix select of the TOPK-th largest key (8-bit digits, shared histogram,
 *               one add a warp where its keys share the digit), ties to the smaller
 *               position (a warp a run of positions: counts, one barrier, then its kept
 *               bits and nodes at their ranks); the kept candidates as a bitmask, their
 *               nodes, ascending, the next layer's parents
 *     pass 4 (leaves: the candidates not kept, all of them on layer 0), on tensor cores
 *             when G = K = V = 16 and the inputs are float (ht_leaves_mma: a warp per
 *             16 candidates, staged by cp.async as two chunks of 8, 3xTF32 mma.sync, a
 *             softmax state a warp, merged at the end), else: tiles of a
 *             candidate a thread: scores (FMA) and V rows (16-byte loads) into padded
 *             candidate-major tiles, weights exp(s - running max) with lazy rescaling
 *             (the tile max only when a score exceeds the running max by LAZY), weights
 *             times V accumulated in registers, GH heads x AE values a thread
 *   final: the per-slice partial states are summed and o = U / max(S, 1e-30).
 *
 * exp and log on the selection path are correctly rounded float results (computed in
 * double; exp by ht_exp_fast, codegen/htree_exp.h, the heads side by side, the library
 * where it cannot decide), the closest a GPU gets to the host libm the reference calls.
 * The keys share
 * their shared memory with the work area (they live from pass 3 to the top-K only).
 * Per-phase cycles (profile = 1): HT_MARK after each phase's barrier.
 */
#include "codegen/codegen.h"

#include <string.h>

#include "ir/htree.h"

/* Largest power of two <= x (x >= 1). */
static int pow2_floor(int x)
{
	int p = 1;
	while (p * 2 <= x)
		p *= 2;
	return p;
}

/* log2 of a power of two. */
static int ilog2(int64_t x)
{
	int l = 0;
	while (((int64_t)1 << l) < x)
		l++;
	return l;
}

/* Whether x is a power of two (x >= 1). */
static int is_pow2(int64_t x)
{
	return x >= 1 && (x & (x - 1)) == 0;
}

/* Every size the kernels and their launch derive from a configuration. */
typedef struct htree_layout {
	int nt;			/* threads per block */
	int nw;			/* warps per block */
	int64_t ncmax;		/* most candidates on any layer: max(max_top_nodes, top_k * r) */
	int ts;			/* row stride of the [G][ts] tiles: >= nt, 16-byte rows */
	int cpt;		/* pass 2: candidates a computing thread takes per tile (1 or 2) */
	int cw;			/* threads per head in the column reductions */
	int chw;		/* warps that only fold the pass-2 sums (0: every thread computes) */
	int ct;			/* pass-2 tile: exp values computed per step, nt - 32 * chw */
	int ae;			/* value elements per accumulator item (4 or 1) */
	int vq;			/* value chunks: V / ae */
	int gh;			/* heads per accumulator item (4 or 1) */
	int items;		/* (G / gh) * vq */
	int ss;			/* row stride of the leaf score tile [nt][ss] (G, padded) */
	int vs;			/* row stride of the leaf value tile [nt][vs] (V, padded) */
	int rw;			/* floats per item in the final reduction: gh * ae + gh */
	int js;			/* slices of the tile columns (items <= nt), else 1 */
	int ni;			/* items per thread */
	int mma;		/* 1: the leaves on tensor cores (3xTF32 mma.sync, a warp each) */
	int mst;		/* their ring stages a warp (even, >= 2) */
	int64_t off_keys, off_kept, off_par, off_qr, off_h, off_misc, off_etab, off_work;	/* bytes */
	int64_t work_floats;	/* floats of the work area */
	int64_t smem;		/* dynamic shared memory bytes */
} htree_layout;

/* The tensor-core leaves' ring of staged chunks, per warp: up to 6 stages (two chunks a
 * step, two steps in flight) of 8 candidates, each K rows (stride 24 floats), V rows
 * (stride 20) and the RoPE cos and sin rows (stride 8); the rings of a block within 96 KB. */
enum { HT_MMA_STAGES_MAX = 6, HT_MMA_STAGE_FLOATS = 8 * 24 + 8 * 20 + 2 * 8 * 8,
       HT_MMA_RING_FLOATS = 24576 };

/* Round n up to a multiple of 16. */
static int64_t align16(int64_t n)
{
	return (n + 15) & ~(int64_t)15;
}

/* The layout for a configuration with nt threads. */
static void layout_for(const tinyc_htree_kernel_config *c, int nt, htree_layout *lo)
{
	memset(lo, 0, sizeof *lo);
	lo->nt = nt;
	lo->nw = nt / 32;
	int64_t bottom = (int64_t)c->top_k * c->compression_rate;
	lo->ncmax = c->max_top_nodes > bottom ? c->max_top_nodes : bottom;
	int per = nt / c->G;
	lo->cw = per >= 32 ? 32 : pow2_floor(per >= 1 ? per : 1);
	/* pass 2 folds in warps of their own when at least two warps remain to compute */
	int fold_warps = (c->G + 31) / 32;
	lo->chw = lo->nw - fold_warps >= 2 ? fold_warps : 0;
	lo->ct = nt - 32 * lo->chw;
	lo->ae = c->V % 4 == 0 ? 4 : 1;
	lo->vq = c->V / lo->ae;
	lo->gh = c->G % 4 == 0 ? 4 : 1;
	lo->items = c->G / lo->gh * lo->vq;
	/* padded so that a quarter warp's 16-byte (or a warp's 4-byte) row accesses spread
	 * over the banks */
	lo->ss = lo->gh == 4 ? c->G + 4 : c->G + 1;
	lo->vs = lo->ae == 4 ? c->V + 4 : c->V + 1;
	lo->rw = lo->gh * lo->ae + lo->gh;
	if (lo->items <= nt) {
		lo->js = nt / lo->items;
		lo->ni = 1;
	} else {
		lo->js = 1;
		lo->ni = (lo->items + nt - 1) / nt;
	}
	int64_t g = c->G;
	int64_t w = (int64_t)nt * (lo->vs + lo->ss);		/* pass 4: V tile + score tile */
	int64_t wr = (int64_t)lo->js * lo->items * lo->rw;	/* final reduction */
	if (wr > w)
		w = wr;
	/* the tensor-core leaves: G = K = V = 16 (one m16 row per head, two k8 steps, two n8
	 * value tiles), float rows (16-byte cp.async) */
	lo->mma = !c->simt_leaves && c->G == 16 && c->K == 16 && c->V == 16 &&
		  c->dtype == TINYC_FLOAT;
	if (lo->mma) {
		/* three blocks an SM (min_blocks 3 or more) keep the rings within 64 KB */
		int64_t ring = c->min_blocks >= 3 ? HT_MMA_RING_FLOATS * 2 / 3 : HT_MMA_RING_FLOATS;
		lo->mst = HT_MMA_STAGES_MAX;
		while (lo->mst > 2 && lo->nw * lo->mst * HT_MMA_STAGE_FLOATS > ring)
			lo->mst -= 2;
		int64_t wm = (int64_t)lo->nw * lo->mst * HT_MMA_STAGE_FLOATS;	/* rings */
		int64_t wf = (int64_t)lo->nw * (2 * 16 + 16 * 16);		/* final merge */
		if (wm > w)
			w = wm;
		if (wf > w)
			w = wf;
	}
	/* pass 2's two exp tiles: two candidates a computing thread (fewer barriers, their
	 * loads together) where that fits the work area as it is, else one (or as asked:
	 * the work area grows); rows 16-byte aligned (the fold loads 16 bytes) and at least nt
	 * long (pass 1's per-thread maxima) */
	lo->cpt = c->pass2_cands > 0 ? c->pass2_cands : 2 * g * (2 * lo->ct + 4) <= w ? 2 : 1;
	lo->ts = lo->cpt * lo->ct + 4 > nt + 4 ? lo->cpt * lo->ct + 4 : nt + 4;
	if (2 * g * lo->ts > w)
		w = 2 * g * lo->ts;
	lo->work_floats = w;
	/* the keys live from pass 3 to the top-K, when the work area is free: they share it */
	int64_t off = 0;
	lo->off_work = off;
	lo->off_keys = off;
	off = align16(off + 4 * (w > lo->ncmax ? w : lo->ncmax));
	lo->off_kept = off;
	off = align16(off + 4 * ((lo->ncmax + 31) / 32 + lo->nw));
	lo->off_par = off;
	off = align16(off + 4 * 2 * (int64_t)c->top_k);
	lo->off_qr = off;
	off = align16(off + 4 * g * c->K);
	lo->off_h = off;
	off = align16(off + 4 * 5 * g);
	lo->off_misc = off;
	off = align16(off + 4 * (8 + lo->nw + 256));
	lo->off_etab = off;
	off = align16(off + 8 * 32);
	lo->smem = off;
}

/* The thread count for c: c->threads, else 256, halved while the shared memory does not
 * fit TINYC_HTREE_GPU_SMEM_MAX (down to 64). */
static int choose_threads(const tinyc_htree_kernel_config *c)
{
	if (c->threads > 0)
		return c->threads;
	int nt = 256;
	htree_layout lo;
	for (;;) {
		layout_for(c, nt, &lo);
		if (lo.smem <= TINYC_HTREE_GPU_SMEM_MAX || nt == 64)
			return nt;
		nt /= 2;
	}
}

/* Check a kernel configuration; 0 or -1 with a diagnostic. */
int tinyc_htree_kernel_check(tinyc_ctx *ctx, const tinyc_htree_kernel_config *c)
{
	if (c->compression_rate < 2 || !is_pow2(c->compression_rate))
		return tinyc_error(ctx, "HtreeInvalidConfig",
				   "compression_rate must be a power of two >= 2, got %d",
				   c->compression_rate);
	if (!is_pow2(c->top_k))
		return tinyc_error(ctx, "HtreeInvalidConfig",
				   "top_k must be a power of two >= 1, got %d", c->top_k);
	if (c->max_top_nodes < 1)
		return tinyc_error(ctx, "HtreeInvalidConfig", "max_top_nodes must be >= 1, got %lld",
				   (long long)c->max_top_nodes);
	if (c->key_drop_bits < 0 || c->key_drop_bits > 23)
		return tinyc_error(ctx, "HtreeInvalidConfig", "key_drop_bits must be in 0..23, got %d",
				   c->key_drop_bits);
	if (c->G < 1 || c->G > TINYC_HTREE_GPU_MAX_G)
		return tinyc_error(ctx, "HtreeUnsupportedConfig",
				   "the GPU path takes 1..%d query heads per KV head, got %d",
				   TINYC_HTREE_GPU_MAX_G, c->G);
	if (c->K < 2 || c->K % 2 || c->K > TINYC_HTREE_GPU_MAX_DIM)
		return tinyc_error(ctx, "HtreeUnsupportedConfig",
				   "the GPU path takes an even key dim of 2..%d, got %d",
				   TINYC_HTREE_GPU_MAX_DIM, c->K);
	if (c->V < 1 || c->V > TINYC_HTREE_GPU_MAX_DIM)
		return tinyc_error(ctx, "HtreeUnsupportedConfig",
				   "the GPU path takes a value dim of 1..%d, got %d",
				   TINYC_HTREE_GPU_MAX_DIM, c->V);
	if (c->dtype != TINYC_FLOAT && c->dtype != TINYC_HALF && c->dtype != TINYC_BFLOAT16)
		return tinyc_error(ctx, "HtreeUnsupportedDtype",
				   "htree takes float, half or bfloat16, not %s",
				   tinyc_dtype_name(c->dtype));
	if (c->min_blocks < 0 || c->min_blocks > 32)
		return tinyc_error(ctx, "HtreeInvalidConfig", "min_blocks must be in 0..32, got %d",
				   c->min_blocks);
	if (c->pass2_cands < 0 || c->pass2_cands > 3)
		return tinyc_error(ctx, "HtreeInvalidConfig", "pass2_cands must be in 0..3, got %d",
				   c->pass2_cands);
	if (c->threads && (!is_pow2(c->threads) || c->threads < 64 || c->threads > 1024))
		return tinyc_error(ctx, "HtreeInvalidConfig",
				   "threads must be a power of two in 64..1024, got %d", c->threads);
	int64_t bottom = (int64_t)c->top_k * c->compression_rate;
	int64_t ncmax = c->max_top_nodes > bottom ? c->max_top_nodes : bottom;
	if (ncmax > TINYC_HTREE_GPU_MAX_CAND)
		return tinyc_error(ctx, "HtreeUnsupportedConfig",
				   "the GPU path keeps up to %d candidates per layer in shared memory; "
				   "max(max_top_nodes, top_k * r) is %lld",
				   TINYC_HTREE_GPU_MAX_CAND, (long long)ncmax);
	int nt = choose_threads(c);
	if (c->G > nt)
		return tinyc_error(ctx, "HtreeUnsupportedConfig",
				   "%d query heads per KV head need more than %d threads", c->G, nt);
	htree_layout lo;
	layout_for(c, nt, &lo);
	if (lo.smem > TINYC_HTREE_GPU_SMEM_MAX)
		return tinyc_error(ctx, "HtreeUnsupportedConfig",
				   "the forward kernel would need %lld bytes of shared memory (at most "
				   "%d)",
				   (long long)lo.smem, TINYC_HTREE_GPU_SMEM_MAX);
	return 0;
}

/* Launch facts of the forward kernel. */
int tinyc_htree_kernel_launch_info(tinyc_ctx *ctx, const tinyc_htree_kernel_config *c,
				   int *threads, int64_t *smem_bytes, int64_t *table_rows)
{
	if (tinyc_htree_kernel_check(ctx, c) < 0)
		return -1;
	htree_layout lo;
	layout_for(c, choose_threads(c), &lo);
	if (threads)
		*threads = lo.nt;
	if (smem_bytes)
		*smem_bytes = lo.smem;
	if (table_rows)
		*table_rows = lo.ncmax;
	return 0;
}

/* The kernels' common code: loads, exact and fast rotations and dots, the reference exp
 * and log, the block scan and the column reductions. */
static const char *const htree_common =
	"__device__ __forceinline__ float ht_ld(const float *p) { return __ldg(p); }\n"
	"__device__ __forceinline__ long long ht_shr(long long t, int s) { return s >= 63 ? 0 : t >> s; }\n"
	"\n"
	"// exp and log correctly rounded to float (through double): the host libm's results\n"
	"// but for its rare misroundings.\n"
	"__device__ __forceinline__ float ht_exp_ref(float x) { return __double2float_rn(exp((double)x)); }\n"
	"__device__ __forceinline__ float ht_log_ref(float x) { return __double2float_rn(log((double)x)); }\n"
	"\n"
	"// e^x by ex2.approx.ftz of x log2(e): 0 below about -87.3 (FLT_MIN), else within\n"
	"// 2 ulp + the product's rounding (|x| 2^-24 relative).  Two instructions (__expf adds\n"
	"// the scaling for subnormal results).  The CPU emulation (tools/htree-emu) has its own.\n"
	"#ifdef __CUDA_ARCH__\n"
	"__device__ __forceinline__ float ht_exp_ftz(float x)\n"
	"{\n"
	"\tfloat y;\n"
	"\tasm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x * 1.4426950408889634f));\n"
	"\treturn y;\n"
	"}\n"
	"#endif\n"
	"\n"
	"// The bits of doubles and floats, for ht_exp_fast (codegen/htree_exp.h, below).\n"
	"#define HT_FN __device__ __forceinline__\n"
	"#define HT_TABLE __constant__\n"
	"__device__ __forceinline__ unsigned ht_hi(double d) { return (unsigned)__double2hiint(d); }\n"
	"__device__ __forceinline__ unsigned ht_lo(double d) { return (unsigned)__double2loint(d); }\n"
	"__device__ __forceinline__ float ht_bits_float(unsigned b) { return __uint_as_float(b); }\n"
	"\n";

/* ht_exp_fast and its table, the text of codegen/htree_exp.h (shared with its C test). */
#define HT_EXP_EMIT(...) static const char *const htree_exp_src = #__VA_ARGS__ "\n\n";
#include "codegen/htree_exp.h"
#undef HT_EXP_EMIT

/* The text both rope variants of htree_common2 begin with: x's row and the table's cos and
 * sin rows in registers, then the loop over the pairs (x1, x2). */
#define HT_ROPE_PROLOGUE \
	"\tfloat xv[KD], c[HALF], s[HALF];\n" \
	"\tht_row<KD>(x, xv, vec);\n" \
	"\tht_row<HALF>(cs, c, true);\n" \
	"\tht_row<HALF>(sn, s, true);\n" \
	"#pragma unroll\n" \
	"\tfor (int i = 0; i < HALF; i++) {\n" \
	"\t\tconst float x1 = xv[i], x2 = xv[i + HALF];\n"

/* What follows ht_exp_fast in the common code. */
static const char *const htree_common2 =
	"// The library path, out of line: ht_exp_fast's rare undecided arguments.\n"
	"__device__ __noinline__ float ht_exp_slow(float x) { return ht_exp_ref(x); }\n"
	"\n"
	"template <typename T> struct ht_is_f32 { static constexpr bool v = false; };\n"
	"template <> struct ht_is_f32<float> { static constexpr bool v = true; };\n"
	"\n"
	"// y[0..N) = x[0..N) as floats: 16-byte loads when T is float, N % 4 == 0 and vec (the\n"
	"// caller knows x is 16-byte aligned), else one element at a time.\n"
	"template <int N, typename T>\n"
	"__device__ __forceinline__ void ht_row(const T *x, float *y, bool vec)\n"
	"{\n"
	"\tif constexpr (ht_is_f32<T>::v && N % 4 == 0) {\n"
	"\t\tif (vec) {\n"
	"#pragma unroll\n"
	"\t\t\tfor (int i = 0; i < N / 4; i++) {\n"
	"\t\t\t\tconst float4 f = __ldg((const float4 *)x + i);\n"
	"\t\t\t\ty[4 * i] = f.x, y[4 * i + 1] = f.y, y[4 * i + 2] = f.z, y[4 * i + 3] = f.w;\n"
	"\t\t\t}\n"
	"\t\t\treturn;\n"
	"\t\t}\n"
	"\t}\n"
	"#pragma unroll\n"
	"\tfor (int i = 0; i < N; i++)\n"
	"\t\ty[i] = ht_ld(x + i);\n"
	"}\n"
	"\n"
	"// y = rope(x, table row) in the reference's order, without contraction.\n"
	"template <typename T>\n"
	"__device__ __forceinline__ void ht_rope_exact(const T *x, const float *cs, const float *sn, float *y, bool vec)\n"
	"{\n"
	HT_ROPE_PROLOGUE
	"\t\ty[i] = __fsub_rn(__fmul_rn(x1, c[i]), __fmul_rn(x2, s[i]));\n"
	"\t\ty[i + HALF] = __fadd_rn(__fmul_rn(x1, s[i]), __fmul_rn(x2, c[i]));\n"
	"\t}\n"
	"}\n"
	"\n"
	"// y = rope(x, table row), contraction allowed (leaf scores).\n"
	"template <typename T>\n"
	"__device__ __forceinline__ void ht_rope_fast(const T *x, const float *cs, const float *sn, float *y, bool vec)\n"
	"{\n"
	HT_ROPE_PROLOGUE
	"\t\ty[i] = fmaf(x1, c[i], -x2 * s[i]);\n"
	"\t\ty[i + HALF] = fmaf(x1, s[i], x2 * c[i]);\n"
	"\t}\n"
	"}\n"
	"\n"
	"// Sequential dot product in the reference's order, without contraction.\n"
	"__device__ __forceinline__ float ht_dot_exact(const float *q, const float *k)\n"
	"{\n"
	"\tfloat d = 0.0f;\n"
	"#pragma unroll\n"
	"\tfor (int i = 0; i < KD; i++)\n"
	"\t\td = __fadd_rn(d, __fmul_rn(q[i], k[i]));\n"
	"\treturn d;\n"
	"}\n"
	"\n"
	"// Dot product with FMA (leaf scores).\n"
	"__device__ __forceinline__ float ht_dot_fast(const float *q, const float *k)\n"
	"{\n"
	"\tfloat d = 0.0f;\n"
	"#pragma unroll\n"
	"\tfor (int i = 0; i < KD; i++)\n"
	"\t\td = fmaf(q[i], k[i], d);\n"
	"\treturn d;\n"
	"}\n"
	"\n"
	"// Max over the first ncols columns of each row g of tile (element (g, col) at\n"
	"// tile[g * gs + col * cs]), computed by CW threads per head; returns it in the threads\n"
	"// with (tid % CW) == 0 and tid < G*CW (others: junk).  Every thread of the first CWARPS\n"
	"// warps must call it.\n"
	"__device__ __forceinline__ float ht_colmax(const float *tile, int ncols, int gs, int cs)\n"
	"{\n"
	"\tconst int tid = threadIdx.x, g = tid / CW, c = tid % CW;\n"
	"\tfloat m = NEG_INF;\n"
	"\tif (g < G)\n"
	"\t\tfor (int col = c; col < ncols; col += CW)\n"
	"\t\t\tm = fmaxf(m, tile[g * gs + col * cs]);\n"
	"#pragma unroll\n"
	"\tfor (int o = CW / 2; o > 0; o >>= 1)\n"
	"\t\tm = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));\n"
	"\treturn m;\n"
	"}\n"
	"\n"
	"// One tree layer by valid-count mean pooling, a thread per output element.\n"
	"template <typename T>\n"
	"__device__ __forceinline__ void ht_pool(const T *x, float *y, long long outer, long long n, long long inner)\n"
	"{\n"
	"\tconst long long m = (n + R - 1) / R, total = outer * m * inner;\n"
	"\tfor (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;\n"
	"\t     idx += (long long)gridDim.x * blockDim.x) {\n"
	"\t\tconst long long e = idx % inner, i = (idx / inner) % m, o = idx / (inner * m);\n"
	"\t\tconst long long first = i * R, end = first + R < n ? first + R : n;\n"
	"\t\tfloat sum = 0.0f;\n"
	"\t\tfor (long long j = first; j < end; j++)\n"
	"\t\t\tsum = __fadd_rn(sum, ht_ld(x + (o * n + j) * inner + e));\n"
	"\t\ty[idx] = __fdiv_rn(sum, (float)(end - first));\n"
	"\t}\n"
	"}\n"
	"\n"
	"extern \"C\" __global__ void htree_pool_in(const in_t *x, float *y, long long outer, long long n, long long inner)\n"
	"{\n"
	"\tht_pool(x, y, outer, n, inner);\n"
	"}\n"
	"\n"
	"extern \"C\" __global__ void htree_pool_f32(const float *x, float *y, long long outer, long long n, long long inner)\n"
	"{\n"
	"\tht_pool(x, y, outer, n, inner);\n"
	"}\n"
	"\n"
	"// The top layer's keys rotated the reference's way (ht_rope_exact with the table row of\n"
	"// their node p, which is their candidate position on the top layer), a thread a row:\n"
	"// y[b, p, h, :] for the bn * hkv rows of x, y [B, n, Hkv, KD].\n"
	"extern \"C\" __global__ void htree_rot_top(const float *x, float *y, const float *cos_tab, const float *sin_tab, long long bn, long long n, long long hkv)\n"
	"{\n"
	"\tfor (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < bn * hkv;\n"
	"\t     r += (long long)gridDim.x * blockDim.x) {\n"
	"\t\tconst long long p = (r / hkv) % n;\n"
	"\t\tfloat kr[KD];\n"
	"\t\tht_rope_exact(x + r * KD, cos_tab + p * HALF, sin_tab + p * HALF, kr, true);\n"
	"#pragma unroll\n"
	"\t\tfor (int i = 0; i < KD; i++)\n"
	"\t\t\ty[r * KD + i] = kr[i];\n"
	"\t}\n"
	"}\n"
	"\n";

/* The forward kernel's parameter block and body. */
static const char *const htree_forward_src =
	"// The kernel's parameters (the host mirror is tinyc_htree_kparams).\n"
	"struct ht_params {\n"
	"\tconst in_t *q, *k0, *v0;\t\t// [B,T,H,K], [B,T,Hkv,K], [B,T,Hkv,V]\n"
	"\tconst float *kl[MAXL];\t\t// pooled keys of layer l >= 1: [B,N_l,Hkv,K]\n"
	"\tconst float *vl[MAXL];\t\t// pooled values of layer l >= 1: [B,N_l,Hkv,V]\n"
	"\tlong long N[MAXL];\t\t// layer sizes (N[0] = T)\n"
	"\tconst float *cos_tab, *sin_tab;\t// RoPE table [rows, K/2]\n"
	"\tconst int *positions;\t\t// query row -> t, or null (t = row)\n"
	"\tfloat *o;\t\t\t// [B,rows,H,V]\n"
	"\tint *trace_sel;\t\t\t// [groups, L-1, TOPK] selections, or null\n"
	"\tint *trace_ncand;\t\t// [groups, L] candidate counts, or null\n"
	"\tlong long T, B, Hkv, L, rows, table_rows;\n"
	"\tfloat scale, unused;\n"
	"\tunsigned long long *prof;\t// [NPHASES] cycles of thread 0, or null\n"
	"\tconst float *krot;\t\t// the top layer's keys rotated the reference's way: [B,N_top,Hkv,K]\n"
	"};\n"
	"static_assert(sizeof(ht_params) == HT_PARAMS_BYTES, \"ht_params must match tinyc_htree_kparams\");\n"
	"\n"
	"// The profile: thread 0 adds the cycles since the last mark to phase ph (after a barrier,\n"
	"// so they are the block's).\n"
	"#if HT_PROF\n"
	"#define HT_MARK(ph) do { if (threadIdx.x == 0) { const long long now_ = clock64(); \\\n"
	"\tprof_c[ph] += now_ - prof_c[NPHASES]; prof_c[NPHASES] = now_; } } while (0)\n"
	"#else\n"
	"#define HT_MARK(ph) do { } while (0)\n"
	"#endif\n"
	"\n"
	"// Candidate at list position p: p itself on the top layer, else child p % R of parent\n"
	"// p / R.\n"
	"__device__ __forceinline__ long long ht_cand(const int *par, bool top, int p)\n"
	"{\n"
	"\treturn top ? (long long)p : (long long)par[p >> LOGR] * R + (p & (R - 1));\n"
	"}\n"
	"\n"
	"// kr = candidate p's key rotated the reference's way: its row of the top layer's rotated keys\n"
	"// kt (htree_rot_top) on the top layer where they are given, else ht_rope_exact.\n"
	"__device__ __forceinline__ void ht_key_rot(const float *kbase, const float *kt, long long rowk, const int *par, bool top,\n"
	"\tint p, const float *cos_tab, const float *sin_tab, float *kr)\n"
	"{\n"
	"\tif (top && kt)\n"
	"\t\tht_row<KD>(kt + (long long)p * rowk, kr, true);\n"
	"\telse\n"
	"\t\tht_rope_exact(kbase + ht_cand(par, top, p) * rowk, cos_tab + (long long)p * HALF, sin_tab + (long long)p * HALF,\n"
	"\t\t\t      kr, true);\n"
	"}\n"
	"\n"
	"// hmax[g] = the max over the block's threads of m[g] (every thread calls it; two\n"
	"// barriers; work holds G rows of TS floats).\n"
	"__device__ __forceinline__ void ht_block_max(const float (&m)[G], float *work, float *hmax)\n"
	"{\n"
	"\tconst int tid = threadIdx.x;\n"
	"#pragma unroll\n"
	"\tfor (int g = 0; g < G; g++)\n"
	"\t\twork[g * TS + tid] = m[g];\n"
	"\t__syncthreads();\n"
	"\tif (tid < CWARPS * 32) {\n"
	"\t\tconst float mx = ht_colmax(work, NT, TS, 1);\n"
	"\t\tif (tid < G * CW && tid % CW == 0)\n"
	"\t\t\thmax[tid / CW] = mx;\n"
	"\t}\n"
	"\t__syncthreads();\n"
	"}\n"
	"\n"
	"// e[g * es] = ht_exp_ref(s_g - sub[g]) for the G heads, s_g = ht_dot_exact(qr + g KD, kr):\n"
	"// the exps by ht_exp_fast side by side (no branch between the heads), then the library\n"
	"// for the heads it left undecided (scores recomputed: rare).  e is shared or local memory.\n"
	"__device__ __forceinline__ void ht_exps_exact(const float *qr, const float *kr, const float *sub, const double *etab,\n"
	"\tfloat *e, int es = TS)\n"
	"{\n"
	"\tfloat v[G];\n"
	"\tunsigned long long badm = 0;\n"
	"#pragma unroll\n"
	"\tfor (int g = 0; g < G; g++) {\n"
	"\t\tunsigned bad = 0;\n"
	"\t\tv[g] = ht_exp_fast(__fsub_rn(ht_dot_exact(qr + g * KD, kr), sub[g]), etab, &bad);\n"
	"\t\tbadm |= (unsigned long long)bad << g;\n"
	"\t}\n"
	"#pragma unroll\n"
	"\tfor (int g = 0; g < G; g++)\n"
	"\t\te[g * es] = v[g];\n"
	"\t// one rolled loop (small code: instruction cache)\n"
	"#pragma unroll 1\n"
	"\tfor (; badm; badm &= badm - 1) {\n"
	"\t\tconst int g = __ffsll((long long)badm) - 1;\n"
	"\t\te[g * es] = ht_exp_slow(__fsub_rn(ht_dot_exact(qr + g * KD, kr), sub[g]));\n"
	"\t}\n"
	"}\n"
	"\n"
	"// The importance key of candidate p the reference's way: exact rotation (kt's row on the\n"
	"// top layer, see ht_key_rot) and dots, correctly rounded exps, terms below FLT_MIN\n"
	"// flushed, summed over the heads in order.\n"
	"__device__ __noinline__ unsigned ht_key_exact(const float *kbase, const float *kt, long long rowk, const int *par, bool top,\n"
	"\tint p, const float *qr, const float *hlse, const float *cos_tab, const float *sin_tab, const double *etab)\n"
	"{\n"
	"\tfloat kr[KD];\n"
	"\tht_key_rot(kbase, kt, rowk, par, top, p, cos_tab, sin_tab, kr);\n"
	"\tfloat e[G];\n"
	"\tht_exps_exact(qr, kr, hlse, etab, e, 1);\n"
	"\tfloat imp = 0.0f;\n"
	"#pragma unroll\n"
	"\tfor (int g = 0; g < G; g++)\n"
	"\t\timp = __fadd_rn(imp, e[g] < 1.17549435e-38f ? 0.0f : e[g]);\n"
	"\treturn __float_as_uint(imp) & KEYMASK;\n"
	"}\n"
	"\n"
	"#if HT_FAST_MAX\n"
	"// A float's bits as an int that orders as the float does (NaN aside); its own inverse.\n"
	"__device__ __forceinline__ int ht_ord(float x)\n"
	"{\n"
	"\tconst int i = __float_as_int(x);\n"
	"\treturn i >= 0 ? i : i ^ 0x7fffffff;\n"
	"}\n"
	"\n"
	"// Pass 1: hmax[g] = the max over the candidates p of the reference's score s[g,p] (exact\n"
	"// rotation and dots), from fast scores f (FMA rotation and dots, pass 3's) and pass 3's\n"
	"// bound |f - s| <= |q_g| |k_p| DOT_BOUND (the margin EXTRA covers this function's roundings):\n"
	"//   F_g = max_p f[g,p] (each thread's best f1[g], then the block's) and B_g = |q_g| KM\n"
	"//   DOT_BOUND EXTRA (KM the block's largest |k|): the exact max s* >= s(argmax f) >= F_g - B_g,\n"
	"//   and the candidate of s* has f >= s* - B_g >= F_g - 2 B_g, so its thread passes\n"
	"//   f1[g] >= F_g - 2 B_g.  The (thread, head) pairs that pass are listed (after\n"
	"//   ht_block_max's rows of the work area) and a warp a pair computes the exact scores of that\n"
	"//   thread's candidates for that head, a lane a candidate: their max is s*.\n"
	"// Where |q| KM passes 1e37 or is NaN (scores could overflow), every thread's pair of that head\n"
	"// is listed (the exact sweep).  exo holds G ints ht_ord(-inf), kmx and cnt an int 0 each.  The\n"
	"// reference skips NaN scores (s > m); so does this.  Two candidates a thread at a time, so\n"
	"// that each shared-memory load of the query serves two.\n"
	"__device__ __forceinline__ void ht_max_fast(const float *kbase, const float *kt, long long rowk, const int *par, bool top, int n,\n"
	"\tconst float *qr, const float *qn, const float *cos_tab, const float *sin_tab, float *work, float *hmax, int *exo,\n"
	"\tint *kmx, int *cnt)\n"
	"{\n"
	"\tconstexpr float EXTRA = 1.25f;\n"
	"\tconst int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;\n"
	"\tint *list = (int *)work + G * TS;\t// past ht_block_max's rows: pairs tid * G + g\n"
	"\tfloat f1[G], km = 0.0f;\n"
	"#pragma unroll\n"
	"\tfor (int g = 0; g < G; g++)\n"
	"\t\tf1[g] = NEG_INF;\n"
	"\tfor (int p0 = tid; p0 < n; p0 += 2 * NT) {\n"
	"\t\tconst int pc[2] = {p0, p0 + NT < n ? p0 + NT : p0};\n"
	"\t\tfloat kr[2][KD];\n"
	"#pragma unroll\n"
	"\t\tfor (int h = 0; h < 2; h++) {\n"
	"\t\t\tif (top && kt)\t// exact rotations: a bound as fast rotations' or below\n"
	"\t\t\t\tht_row<KD>(kt + (long long)pc[h] * rowk, kr[h], true);\n"
	"\t\t\telse\n"
	"\t\t\t\tht_rope_fast(kbase + ht_cand(par, top, pc[h]) * rowk, cos_tab + (long long)pc[h] * HALF,\n"
	"\t\t\t\t\t     sin_tab + (long long)pc[h] * HALF, kr[h], true);\n"
	"\t\t\tfloat kn = 0.0f;\n"
	"#pragma unroll\n"
	"\t\t\tfor (int i = 0; i < KD; i++)\n"
	"\t\t\t\tkn = fmaf(kr[h][i], kr[h][i], kn);\n"
	"\t\t\tkm = kn <= 1e37f ? fmaxf(km, kn) : __int_as_float(0x7f800000);\t// NaN or near overflow: inf\n"
	"\t\t}\n"
	"#pragma unroll\n"
	"\t\tfor (int g = 0; g < G; g++) {\n"
	"\t\t\tfloat d0 = 0.0f, d1 = 0.0f;\n"
	"#pragma unroll\n"
	"\t\t\tfor (int i = 0; i < KD; i++) {\n"
	"\t\t\t\tconst float qv = qr[g * KD + i];\n"
	"\t\t\t\td0 = fmaf(qv, kr[0][i], d0);\n"
	"\t\t\t\td1 = fmaf(qv, kr[1][i], d1);\n"
	"\t\t\t}\n"
	"\t\t\tf1[g] = fmaxf(f1[g], fmaxf(d0, d1));\n"
	"\t\t}\n"
	"\t}\n"
	"\tatomicMax(kmx, __float_as_int(km));\n"
	"\tht_block_max(f1, work, hmax);\t// two barriers: kmx final after them\n"
	"\tconst float kmb = sqrtf(__int_as_float(*kmx));\n"
	"#pragma unroll\n"
	"\tfor (int g = 0; g < G; g++) {\n"
	"\t\tconst float qk = qn[g] * kmb;\n"
	"\t\tif (!(qk <= 1e37f) || f1[g] >= hmax[g] - qk * (2.0f * DOT_BOUND * EXTRA))\n"
	"\t\t\tlist[atomicAdd(cnt, 1)] = tid * G + g;\n"
	"\t}\n"
	"\t__syncthreads();\n"
	"\tconst int npairs = *cnt;\n"
	"\t// rolled (small code: instruction cache)\n"
	"#pragma unroll 1\n"
	"\tfor (int i = warp; i < npairs; i += NW) {\n"
	"\t\tconst int tau = list[i] / G, g = list[i] % G;\n"
	"\t\tfloat best = NEG_INF, kr[KD];\n"
	"#pragma unroll 1\n"
	"\t\tfor (int p = tau + lane * NT; p < n; p += 32 * NT) {\n"
	"\t\t\tht_key_rot(kbase, kt, rowk, par, top, p, cos_tab, sin_tab, kr);\n"
	"\t\t\tconst float s = ht_dot_exact(qr + g * KD, kr);\n"
	"\t\t\tif (s > best)\n"
	"\t\t\t\tbest = s;\n"
	"\t\t}\n"
	"#pragma unroll\n"
	"\t\tfor (int o = 16; o > 0; o >>= 1)\n"
	"\t\t\tbest = fmaxf(best, __shfl_xor_sync(0xffffffffu, best, o));\n"
	"\t\tif (lane == 0)\n"
	"\t\t\tatomicMax(exo + g, ht_ord(best));\n"
	"\t}\n"
	"\t__syncthreads();\n"
	"\tif (tid < G)\n"
	"\t\thmax[tid] = __int_as_float(ht_ord(__int_as_float(exo[tid])));\n"
	"\t__syncthreads();\n"
	"}\n"
	"#endif\n"
	"\n"
	"// Copy the row x[0..N) to shared memory y as floats: 16-byte global loads when T is\n"
	"// float, N % 4 == 0 and vec; 16-byte shared stores when N % 4 == 0 (y 16-byte aligned).\n"
	"template <int N, typename T>\n"
	"__device__ __forceinline__ void ht_copy_row(const T *x, float *y, bool vec)\n"
	"{\n"
	"\tif constexpr (N % 4 == 0) {\n"
	"#pragma unroll\n"
	"\t\tfor (int i = 0; i < N / 4; i++) {\n"
	"\t\t\tfloat f[4];\n"
	"\t\t\tht_row<4>(x + 4 * i, f, vec);\n"
	"\t\t\t*(float4 *)(y + 4 * i) = make_float4(f[0], f[1], f[2], f[3]);\n"
	"\t\t}\n"
	"\t} else {\n"
	"#pragma unroll\n"
	"\t\tfor (int i = 0; i < N; i++)\n"
	"\t\t\ty[i] = ht_ld(x + i);\n"
	"\t}\n"
	"}\n"
	"\n"
	"// Store the weights exp(s[g] - m[g]) (0 where s is -inf) to the row y, 16 bytes at a time\n"
	"// when GH == 4.\n"
	"__device__ __forceinline__ void ht_store_weights(float *y, const float (&s)[G], const float *m)\n"
	"{\n"
	"#pragma unroll\n"
	"\tfor (int g0 = 0; g0 < G; g0 += GH) {\n"
	"\t\tfloat w[GH];\n"
	"#pragma unroll\n"
	"\t\tfor (int h = 0; h < GH; h++)\n"
	"\t\t\tw[h] = s[g0 + h] == NEG_INF ? 0.0f : __expf(s[g0 + h] - m[g0 + h]);\n"
	"\t\tif constexpr (GH == 4)\n"
	"\t\t\t*(float4 *)(y + g0) = make_float4(w[0], w[1], w[2], w[3]);\n"
	"\t\telse\n"
	"\t\t\ty[g0] = w[0];\n"
	"\t}\n"
	"}\n"
	"\n"
	"// Store the G values v to the row y (16 bytes at a time when GH == 4).\n"
	"__device__ __forceinline__ void ht_store_row(float *y, const float (&v)[G])\n"
	"{\n"
	"#pragma unroll\n"
	"\tfor (int g0 = 0; g0 < G; g0 += GH) {\n"
	"\t\tif constexpr (GH == 4)\n"
	"\t\t\t*(float4 *)(y + g0) = make_float4(v[g0], v[g0 + 1], v[g0 + 2], v[g0 + 3]);\n"
	"\t\telse\n"
	"\t\t\ty[g0] = v[g0];\n"
	"\t}\n"
	"}\n"
	"\n"
	"// Pass 4: merge the leaves of one layer (all candidates, or those whose bit in kept is 0\n"
	"// when masked) into the running softmax state.  A tile of NT candidates, a thread each, writes\n"
	"// its values Vt[u][0..VD) and weights S[u][0..G) (rows padded to VS and SS floats against\n"
	"// bank conflicts); then each thread accumulates weights x V for one item (GH heads x AE\n"
	"// value elements) over its slice of the tile's candidates, in registers.  The weights are\n"
	"// exp(s - mrun) against the running max as it is (lazy rescaling): only when a score\n"
	"// exceeds it by more than LAZY (or on the first tile) does the block take the tile max,\n"
	"// raise mrun and rescale the accumulators.\n"
	"template <typename T>\n"
	"__device__ __forceinline__ void ht_leaves(const ht_params &P, const T *Kl, const T *Vl, long long Nl,\n"
	"\tlong long b, int hkv, bool top, bool masked, bool vec, int n, const int *par, const unsigned *kept,\n"
	"\tconst float *qr, float *mrun, float *alpha, float *work, float (&acc)[NI][GH][AE], float (&rs)[NI][GH])\n"
	"{\n"
	"\tconst int tid = threadIdx.x;\n"
	"\tfloat *Vt = work, *S = work + NT * VS;\n"
	"\tfloat *Srow = S + tid * SS;\n"
	"\tconst long long rowk = P.Hkv * KD, rowv = P.Hkv * VD;\n"
	"\tfor (int base = 0; base < n; base += NT) {\n"
	"\t\tconst int p = base + tid, tlen = n - base < NT ? n - base : NT;\n"
	"\t\tfloat sv[G];\n"
	"\t\tif (p < n && !(masked && (kept[p >> 5] >> (p & 31) & 1u))) {\n"
	"\t\t\tconst long long c = ht_cand(par, top, p);\n"
	"\t\t\tfloat kr[KD];\n"
	"\t\t\tht_rope_fast(Kl + (b * Nl + c) * rowk + (long long)hkv * KD, P.cos_tab + (long long)p * HALF,\n"
	"\t\t\t\t     P.sin_tab + (long long)p * HALF, kr, vec);\n"
	"#pragma unroll\n"
	"\t\t\tfor (int g = 0; g < G; g++)\n"
	"\t\t\t\tsv[g] = ht_dot_fast(qr + g * KD, kr);\n"
	"\t\t\tht_copy_row<VD>(Vl + (b * Nl + c) * rowv + (long long)hkv * VD, Vt + tid * VS, vec);\n"
	"\t\t} else {\n"
	"#pragma unroll\n"
	"\t\t\tfor (int g = 0; g < G; g++)\n"
	"\t\t\t\tsv[g] = NEG_INF;\n"
	"#pragma unroll\n"
	"\t\t\tfor (int e = 0; e < VD; e++)\n"
	"\t\t\t\tVt[tid * VS + e] = 0.0f;\n"
	"\t\t}\n"
	"\t\t// the weights against the running max; raise: some score is far above it\n"
	"\t\tbool raise = false;\n"
	"#pragma unroll\n"
	"\t\tfor (int g = 0; g < G; g++)\n"
	"\t\t\traise |= sv[g] > mrun[g] + LAZY;\n"
	"\t\tht_store_weights(Srow, sv, mrun);\n"
	"\t\tconst bool raised = __syncthreads_or(raise);\n"
	"\t\tif (raised) {\n"
	"\t\t\t// the tile max of the scores; mrun raised to it, the weights again\n"
	"\t\t\tht_store_row(Srow, sv);\n"
	"\t\t\t__syncthreads();\n"
	"\t\t\tif (tid < CWARPS * 32) {\n"
	"\t\t\t\tconst float tm = ht_colmax(S, tlen, 1, SS);\n"
	"\t\t\t\tif (tid < G * CW && tid % CW == 0) {\n"
	"\t\t\t\t\tconst int g = tid / CW;\n"
	"\t\t\t\t\tconst float mo = mrun[g], mn = fmaxf(mo, tm);\n"
	"\t\t\t\t\talpha[g] = mo == NEG_INF ? 0.0f : __expf(mo - mn);\n"
	"\t\t\t\t\tmrun[g] = mn;\n"
	"\t\t\t\t}\n"
	"\t\t\t}\n"
	"\t\t\t__syncthreads();\n"
	"\t\t\tht_store_weights(Srow, sv, mrun);\n"
	"\t\t\t__syncthreads();\n"
	"\t\t}\n"
	"#pragma unroll\n"
	"\t\tfor (int it = 0; it < NI; it++) {\n"
	"\t\t\tconst int item = NI == 1 ? tid % ITEMS : tid + it * NT;\n"
	"\t\t\tconst int slice = NI == 1 ? tid / ITEMS : 0;\n"
	"\t\t\tif (item < ITEMS && slice < JS) {\n"
	"\t\t\t\tconst int g0 = (item / VQ) * GH, e0 = (item % VQ) * AE;\n"
	"\t\t\t\tif (raised) {\n"
	"#pragma unroll\n"
	"\t\t\t\t\tfor (int h = 0; h < GH; h++) {\n"
	"\t\t\t\t\t\tconst float a = alpha[g0 + h];\n"
	"\t\t\t\t\t\trs[it][h] *= a;\n"
	"#pragma unroll\n"
	"\t\t\t\t\t\tfor (int x = 0; x < AE; x++)\n"
	"\t\t\t\t\t\t\tacc[it][h][x] *= a;\n"
	"\t\t\t\t\t}\n"
	"\t\t\t\t}\n"
	"\t\t\t\tfor (int u = slice; u < tlen; u += JS) {\n"
	"\t\t\t\t\tfloat wu[GH], v[AE];\n"
	"\t\t\t\t\tif constexpr (GH == 4) {\n"
	"\t\t\t\t\t\tconst float4 w4 = *(const float4 *)(S + u * SS + g0);\n"
	"\t\t\t\t\t\twu[0] = w4.x, wu[1] = w4.y, wu[2] = w4.z, wu[3] = w4.w;\n"
	"\t\t\t\t\t} else {\n"
	"\t\t\t\t\t\twu[0] = S[u * SS + g0];\n"
	"\t\t\t\t\t}\n"
	"\t\t\t\t\tif constexpr (AE == 4) {\n"
	"\t\t\t\t\t\tconst float4 v4 = *(const float4 *)(Vt + u * VS + e0);\n"
	"\t\t\t\t\t\tv[0] = v4.x, v[1] = v4.y, v[2] = v4.z, v[3] = v4.w;\n"
	"\t\t\t\t\t} else {\n"
	"\t\t\t\t\t\tv[0] = Vt[u * VS + e0];\n"
	"\t\t\t\t\t}\n"
	"#pragma unroll\n"
	"\t\t\t\t\tfor (int h = 0; h < GH; h++) {\n"
	"\t\t\t\t\t\trs[it][h] += wu[h];\n"
	"#pragma unroll\n"
	"\t\t\t\t\t\tfor (int x = 0; x < AE; x++)\n"
	"\t\t\t\t\t\t\tacc[it][h][x] = fmaf(wu[h], v[x], acc[it][h][x]);\n"
	"\t\t\t\t\t}\n"
	"\t\t\t\t}\n"
	"\t\t\t}\n"
	"\t\t}\n"
	"\t\t__syncthreads();\n"
	"\t}\n"
	"}\n"
	"\n"
	"#if HT_MMA\n"
	"// The leaves on tensor cores (G = KD = VD = 16): each warp merges its own chunks of 8\n"
	"// candidates into its own online-softmax state, in mma fragments.  Scores S = Q Kr^T are\n"
	"// one m16n8 tile (heads x candidates, two k8 steps; base 2: Q log2 e), weights P = 2^(S - m),\n"
	"// (P V)^T = V^T P^T two m16n8 tiles (values x heads 0..7 and 8..15, the candidates as k),\n"
	"// each product in 3xTF32: hi*hi + hi*lo + lo*hi of x = hi + lo, hi = tf32(x), lo = x - hi\n"
	"// (read as tf32).  The chunks' K, V,\n"
	"// cos and sin rows are staged by cp.async in a ring of MST stages a warp, two chunks a step.\n"
	"// A stage: 8 K rows (stride MKS), 8 V rows (stride MVS), 8 cos and 8 sin rows (stride MCS);\n"
	"// the strides make the fragments' 8-byte loads free of bank conflicts.\n"
	"constexpr int MST = HT_MMA_STAGES_, MPAIR = MST / 2, MKS = 24, MVS = 20, MCS = 8;\n"
	"constexpr int MOFF_V = 8 * MKS, MOFF_C = MOFF_V + 8 * MVS, MSTAGE = MOFF_C + 2 * 8 * MCS;\n"
	"// log2(e); a warp's running max before its first leaf (finite: no -inf - -inf).\n"
	"constexpr float LOG2E = 1.4426950408889634f, M_NONE = -1e30f;\n"
	"\n"
	"// tf32(x): the bits of x rounded to 10 mantissa bits (nearest, ties away), as\n"
	"// cvt.rna.tf32.f32 rounds finite x, in two integer operations (the cvt is four on sm_90:\n"
	"// its inf/NaN test and select were a third of the leaves' instructions).\n"
	"__device__ __forceinline__ unsigned ht_tf32(float x)\n"
	"{\n"
	"\treturn (__float_as_uint(x) + 0x1000u) & 0xffffe000u;\n"
	"}\n"
	"\n"
	"// x = hi + lo: hi = tf32(x), lo = x - hi (exact) as a float; the mma reads lo's top 19\n"
	"// bits (the tensor cores truncate), an error of 2^-21 |x| at most, and saves its rounding.\n"
	"// For the query fragments, split once a layer.\n"
	"__device__ __forceinline__ void ht_split(float x, unsigned &hi, unsigned &lo)\n"
	"{\n"
	"\thi = ht_tf32(x);\n"
	"\tlo = __float_as_uint(x - __uint_as_float(hi));\n"
	"}\n"
	"\n"
	"// x = hi + lo in two operations, for the operands split a chunk: hi is x's own bits (the\n"
	"// tensor cores read their top 19, x truncated to tf32), lo = x - trunc(x) exact, |lo| <\n"
	"// 2^-10 |x|, read truncated: an error below 2^-20 |x|; with the dropped lo*lo term a\n"
	"// product's relative error stays below 3 2^-20.\n"
	"__device__ __forceinline__ void ht_split_tz(float x, unsigned &hi, unsigned &lo)\n"
	"{\n"
	"\thi = __float_as_uint(x);\n"
	"\tlo = __float_as_uint(x - __uint_as_float(hi & 0xffffe000u));\n"
	"}\n"
	"\n"
	"#ifdef __CUDA_ARCH__\n"
	"// d += a b, one mma.sync m16n8k8 tf32 with fp32 accumulation.\n"
	"__device__ __forceinline__ void ht_mma(float &d0, float &d1, float &d2, float &d3, const unsigned (&a)[4], unsigned b0, unsigned b1)\n"
	"{\n"
	"\tasm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\\n\"\n"
	"\t\t     : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3)\n"
	"\t\t     : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b0), \"r\"(b1));\n"
	"}\n"
	"\n"
	"// 16 bytes global -> shared, asynchronously; zeros when !ok (src is not read then).\n"
	"__device__ __forceinline__ void ht_cp16(float *dst, const float *src, bool ok)\n"
	"{\n"
	"\tconst unsigned d = (unsigned)__cvta_generic_to_shared(dst);\n"
	"\tasm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\" ::\"r\"(d), \"l\"(src), \"r\"(ok ? 16 : 0) : \"memory\");\n"
	"}\n"
	"\n"
	"// a b + c as one wide multiply-add (64-bit c and result).\n"
	"__device__ __forceinline__ unsigned long long ht_madw(unsigned a, unsigned b, unsigned long long c)\n"
	"{\n"
	"\tunsigned long long d;\n"
	"\tasm(\"mad.wide.u32 %0, %1, %2, %3;\" : \"=l\"(d) : \"r\"(a), \"r\"(b), \"l\"(c));\n"
	"\treturn d;\n"
	"}\n"
	"\n"
	"// 2^x, one ex2.approx.ftz: 0 for x = -inf and below -126.\n"
	"__device__ __forceinline__ float ht_ex2(float x)\n"
	"{\n"
	"\tfloat y;\n"
	"\tasm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x));\n"
	"\treturn y;\n"
	"}\n"
	"\n"
	"__device__ __forceinline__ void ht_cp_commit() { asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\"); }\n"
	"\n"
	"// Wait until at most MPAIR - 1 of this thread's cp.async groups are pending.\n"
	"__device__ __forceinline__ void ht_cp_wait() { asm volatile(\"cp.async.wait_group %0;\\n\" ::\"n\"(MPAIR - 1) : \"memory\"); }\n"
	"\n"
	"// Wait until all of this thread's cp.async groups are complete.\n"
	"__device__ __forceinline__ void ht_cp_wait_all() { asm volatile(\"cp.async.wait_all;\\n\" ::: \"memory\"); }\n"
	"#else\n"
	"// The CPU emulation's (tools/htree-emu, cuda_emu.h): the warp's mma, synchronous copies.\n"
	"__device__ __forceinline__ void ht_mma(float &d0, float &d1, float &d2, float &d3, const unsigned (&a)[4], unsigned b0, unsigned b1)\n"
	"{\n"
	"\tht_emu_mma(d0, d1, d2, d3, a, b0, b1);\n"
	"}\n"
	"__device__ __forceinline__ void ht_cp16(float *dst, const float *src, bool ok) { ht_emu_copy(dst, src, ok); }\n"
	"__device__ __forceinline__ unsigned long long ht_madw(unsigned a, unsigned b, unsigned long long c)\n"
	"{\n"
	"\treturn (unsigned long long)a * b + c;\n"
	"}\n"
	"__device__ __forceinline__ float ht_ex2(float x) { return ht_emu_ex2(x); }\n"
	"__device__ __forceinline__ void ht_cp_commit() {}\n"
	"__device__ __forceinline__ void ht_cp_wait() {}\n"
	"__device__ __forceinline__ void ht_cp_wait_all() {}\n"
	"#endif\n"
	"\n"
	"// A lane's part of the staging, fixed for a layer: lane (r, q) copies 4 floats (16 bytes)\n"
	"// of the K and V rows of candidate r of a chunk, lanes 0..15 (16..31) half a cos (sin) row\n"
	"// of candidate tr.  Global addresses as bytes: a node's row is one wide multiply-add.\n"
	"struct ht_stager {\n"
	"\tunsigned long long kq, vq;\t// the lane's 16 bytes of node 0's K and V rows\n"
	"\tunsigned long long tq;\t\t// the lane's 16 bytes of table row 0 (cos or sin)\n"
	"\tunsigned rkb, rvb;\t\t// bytes between two nodes' K (V) rows\n"
	"\tint r, tr;\t\t\t// the lane's candidate in the chunk: K/V rows, table rows\n"
	"\tunsigned dk, dv, dt;\t\t// its destinations in the ring's first stage (shared addresses): K, V, table\n"
	"};\n"
	"\n"
	"// The stager of this lane for K rows kb, V rows vb (node 0 of this group), rk (rv) floats\n"
	"// between two nodes' rows, and the ring at shared address ring.\n"
	"__device__ __forceinline__ ht_stager ht_stager_for(const float *kb, const float *vb, int rk, int rv, const float *cos_tab,\n"
	"\tconst float *sin_tab, unsigned ring)\n"
	"{\n"
	"\tconst int lane = threadIdx.x & 31, q = lane & 3, th = lane & 1;\n"
	"\tht_stager sg;\n"
	"\tsg.r = lane >> 2, sg.tr = (lane & 15) >> 1;\n"
	"\tsg.kq = (unsigned long long)(kb + 4 * q), sg.vq = (unsigned long long)(vb + 4 * q);\n"
	"\tsg.tq = (unsigned long long)((lane < 16 ? cos_tab : sin_tab) + 4 * th);\n"
	"\tsg.rkb = 4u * (unsigned)rk, sg.rvb = 4u * (unsigned)rv;\n"
	"\tsg.dk = ring + 4u * (unsigned)(sg.r * MKS + 4 * q);\n"
	"\tsg.dv = ring + 4u * (unsigned)(MOFF_V + sg.r * MVS + 4 * q);\n"
	"\tsg.dt = ring + 4u * (unsigned)(MOFF_C + (lane < 16 ? 0 : 8 * MCS) + sg.tr * MCS + 4 * th);\n"
	"\treturn sg;\n"
	"}\n"
	"\n"
	"// This lane's cp.async copies of two chunks (K, V and table rows from k0, v0, t0 and k1,\n"
	"// v1, t1; K and V zeros when !ok0, !ok1; no table rows when ROT) into the stage s bytes\n"
	"// past the ring's first and MSTAGE floats on: one asm statement, the copies issued together.\n"
	"template <bool ROT>\n"
	"__device__ __forceinline__ void ht_cp_chunks(unsigned s, const ht_stager &sg, unsigned long long k0, unsigned long long v0,\n"
	"\tunsigned long long t0, bool ok0, unsigned long long k1, unsigned long long v1, unsigned long long t1, bool ok1)\n"
	"{\n"
	"#ifdef __CUDA_ARCH__\n"
	"\tif constexpr (ROT) {\n"
	"\t\tasm volatile(\"cp.async.cg.shared.global [%0], [%2], 16, %6;\\n\"\n"
	"\t\t\t     \"cp.async.cg.shared.global [%1], [%3], 16, %6;\\n\"\n"
	"\t\t\t     \"cp.async.cg.shared.global [%0+%8], [%4], 16, %7;\\n\"\n"
	"\t\t\t     \"cp.async.cg.shared.global [%1+%8], [%5], 16, %7;\\n\"\n"
	"\t\t\t     ::\"r\"(sg.dk + s), \"r\"(sg.dv + s), \"l\"(k0), \"l\"(v0), \"l\"(k1), \"l\"(v1), \"r\"(ok0 ? 16 : 0),\n"
	"\t\t\t     \"r\"(ok1 ? 16 : 0), \"n\"(4 * MSTAGE) : \"memory\");\n"
	"\t\treturn;\n"
	"\t}\n"
	"\tasm volatile(\"cp.async.cg.shared.global [%0], [%3], 16, %9;\\n\"\n"
	"\t\t     \"cp.async.cg.shared.global [%1], [%4], 16, %9;\\n\"\n"
	"\t\t     \"cp.async.cg.shared.global [%2], [%5], 16;\\n\"\n"
	"\t\t     \"cp.async.cg.shared.global [%0+%11], [%6], 16, %10;\\n\"\n"
	"\t\t     \"cp.async.cg.shared.global [%1+%11], [%7], 16, %10;\\n\"\n"
	"\t\t     \"cp.async.cg.shared.global [%2+%11], [%8], 16;\\n\"\n"
	"\t\t     ::\"r\"(sg.dk + s), \"r\"(sg.dv + s), \"r\"(sg.dt + s), \"l\"(k0), \"l\"(v0), \"l\"(t0), \"l\"(k1), \"l\"(v1), \"l\"(t1),\n"
	"\t\t     \"r\"(ok0 ? 16 : 0), \"r\"(ok1 ? 16 : 0), \"n\"(4 * MSTAGE) : \"memory\");\n"
	"#else\n"
	"\tconst unsigned dst[3] = {sg.dk + s, sg.dv + s, sg.dt + s};\n"
	"\tconst unsigned long long src[6] = {k0, v0, t0, k1, v1, t1};\n"
	"\tfor (int i = 0; i < 6; i++)\n"
	"\t\tif (!ROT || i % 3 != 2)\n"
	"\t\t\tht_emu_copy(ht_emu_shared(dst[i % 3] + (i < 3 ? 0 : 4 * MSTAGE)), (const float *)src[i], i % 3 == 2 || (i < 3 ? ok0 : ok1));\n"
	"#endif\n"
	"}\n"
	"\n"
	"// Stage the candidates cb..cb+15 (cb % 16 == 0, cb < n) as two chunks of 8, cb..cb+7 into\n"
	"// the stage st (s bytes past the ring's first) and cb+8..cb+15 MSTAGE floats on (see\n"
	"// ht_stager); K and V zeros for the candidates that are not leaves, whose table rows are\n"
	"// row n - 1's (the table has n rows at least).  The 16 are one parent's children (R >= 16)\n"
	"// or top nodes, so this lane's two candidates are nodes node and node + 8: one parent load\n"
	"// for both (R < 16: one each).  Candidates that are not leaves name node 0 (zero bytes\n"
	"// read).  TOP: the candidates are the nodes 0..n-1, else children of par; MASKED: the kept\n"
	"// ones are not leaves (their 16 bits one word); VEC: K and V rows are 16-byte aligned\n"
	"// (else loads and shared stores); ROT: the K rows are rotated keys (top layer, VEC), no\n"
	"// table rows staged.\n"
	"template <bool MASKED, bool TOP, bool VEC, bool ROT>\n"
	"__device__ __forceinline__ void ht_mma_stage(float *st, unsigned s, const ht_stager &sg, int n, const int *par,\n"
	"\tconst unsigned *kept, int cb)\n"
	"{\n"
	"\tconst int p = cb + sg.r;\n"
	"\tconst unsigned kw = MASKED ? kept[cb >> 5] >> (cb & 31) : 0u;\n"
	"\tconst bool ok0 = p < n && !(kw >> sg.r & 1u), ok1 = p + 8 < n && !(kw >> (sg.r + 8) & 1u);\n"
	"\tunsigned n0, n1;\n"
	"\tif constexpr (TOP || R >= 16) {\n"
	"\t\tconst unsigned node = TOP ? p : par[cb >> LOGR] * R + (p & (R - 1));\t// cb < n: a parent\n"
	"\t\tn0 = ok0 ? node : 0u;\n"
	"\t\tn1 = ok1 ? node + 8 : 0u;\n"
	"\t} else {\t// R < 16: the 16 span 16 / R parents\n"
	"\t\tn0 = ok0 ? par[p >> LOGR] * R + (p & (R - 1)) : 0u;\n"
	"\t\tn1 = ok1 ? par[(p + 8) >> LOGR] * R + ((p + 8) & (R - 1)) : 0u;\n"
	"\t}\n"
	"\tconst unsigned long long k0 = ht_madw(n0, sg.rkb, sg.kq), v0 = ht_madw(n0, sg.rvb, sg.vq);\n"
	"\tconst unsigned long long k1 = ht_madw(n1, sg.rkb, sg.kq), v1 = ht_madw(n1, sg.rvb, sg.vq);\n"
	"\tconst int pt = cb + sg.tr;\n"
	"\tconst unsigned long long t0 = ht_madw((unsigned)min(pt, n - 1), 4u * HALF, sg.tq);\n"
	"\tconst unsigned long long t1 = ht_madw((unsigned)min(pt + 8, n - 1), 4u * HALF, sg.tq);\n"
	"\tif constexpr (VEC) {\n"
	"\t\tht_cp_chunks<ROT>(s, sg, k0, v0, t0, ok0, k1, v1, t1, ok1);\n"
	"\t} else {\n"
	"#pragma unroll\n"
	"\t\tfor (int c = 0; c < 2; c++) {\n"
	"\t\t\tfloat f[4] = {0.0f, 0.0f, 0.0f, 0.0f}, g[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n"
	"\t\t\tif (c ? ok1 : ok0) {\n"
	"\t\t\t\tht_row<4>((const float *)(c ? k1 : k0), f, false);\n"
	"\t\t\t\tht_row<4>((const float *)(c ? v1 : v0), g, false);\n"
	"\t\t\t}\n"
	"\t\t\t// this lane's offsets in the stage (floats)\n"
	"\t\t\tconst int r = sg.r, q = threadIdx.x & 3, lane = threadIdx.x & 31;\n"
	"\t\t\tfloat *d = st + c * MSTAGE;\n"
	"\t\t\t*(float4 *)(d + r * MKS + 4 * q) = make_float4(f[0], f[1], f[2], f[3]);\n"
	"\t\t\t*(float4 *)(d + MOFF_V + r * MVS + 4 * q) = make_float4(g[0], g[1], g[2], g[3]);\n"
	"\t\t\tif constexpr (!ROT)\n"
	"\t\t\t\tht_cp16(d + MOFF_C + (lane < 16 ? 0 : 8 * MCS) + sg.tr * MCS + 4 * (lane & 1), (const float *)(c ? t1 : t0), true);\n"
	"\t\t}\n"
	"\t}\n"
	"}\n"
	"\n"
	"// The query fragments of k step s, hi and lo: A[g][k] = qr[g][8 s + 2 q + (k >= 4)] log2(e)\n"
	"// for k = q, q + 4 (a lane's keys hold dims 2q, 2q + 1 in step 0 and 2q + 8, 2q + 9 in\n"
	"// step 1: RoPE pairs (i, i + 8)), so that the leaves' scores are in base 2 (their weights\n"
	"// one ex2 each).\n"
	"__device__ __forceinline__ void ht_mma_query(const float *qr, int s, unsigned (&qh)[4], unsigned (&ql)[4])\n"
	"{\n"
	"\tconst int lane = threadIdx.x & 31, gr = lane >> 2, q = lane & 3, d = 8 * s + 2 * q;\n"
	"\tht_split(qr[gr * KD + d] * LOG2E, qh[0], ql[0]);\n"
	"\tht_split(qr[(gr + 8) * KD + d] * LOG2E, qh[1], ql[1]);\n"
	"\tht_split(qr[gr * KD + d + 1] * LOG2E, qh[2], ql[2]);\n"
	"\tht_split(qr[(gr + 8) * KD + d + 1] * LOG2E, qh[3], ql[3]);\n"
	"}\n"
	"\n"
	"// The scores of one staged chunk (st): sc[0], sc[1] head gr, candidates cb + 2q, + 1;\n"
	"// sc[2], sc[3] head gr + 8 (-inf for the candidates that are not leaves; kw: the chunk's\n"
	"// kept bits, when MASKED).  The rotated key of candidate gr at dims 2q, 2q + 1 (k step 0)\n"
	"// and 2q + 8, 2q + 9 (step 1) from two 8-byte loads of its K row and one of its cos and\n"
	"// sin rows (ROT: the K row is rotated, the same two loads its dims); 3xTF32 in one\n"
	"// accumulator, the small terms first.\n"
	"template <bool MASKED, bool ROT>\n"
	"__device__ __forceinline__ void ht_mma_scores(const float *st, int cb, int n, unsigned kw,\n"
	"\tconst unsigned (&qh)[2][4], const unsigned (&ql)[2][4], float (&sc)[4])\n"
	"{\n"
	"\tconst int lane = threadIdx.x & 31, gr = lane >> 2, q = lane & 3;\n"
	"\tconst float2 xa = *(const float2 *)(st + gr * MKS + 2 * q), xb = *(const float2 *)(st + gr * MKS + 8 + 2 * q);\n"
	"\tunsigned kh[4], kl[4];\n"
	"\tif constexpr (ROT) {\n"
	"\t\tht_split_tz(xa.x, kh[0], kl[0]);\n"
	"\t\tht_split_tz(xa.y, kh[1], kl[1]);\n"
	"\t\tht_split_tz(xb.x, kh[2], kl[2]);\n"
	"\t\tht_split_tz(xb.y, kh[3], kl[3]);\n"
	"\t} else {\n"
	"\t\tconst float2 c = *(const float2 *)(st + MOFF_C + gr * MCS + 2 * q);\n"
	"\t\tconst float2 s = *(const float2 *)(st + MOFF_C + 8 * MCS + gr * MCS + 2 * q);\n"
	"\t\tht_split_tz(fmaf(xa.x, c.x, -xb.x * s.x), kh[0], kl[0]);\n"
	"\t\tht_split_tz(fmaf(xa.y, c.y, -xb.y * s.y), kh[1], kl[1]);\n"
	"\t\tht_split_tz(fmaf(xa.x, s.x, xb.x * c.x), kh[2], kl[2]);\n"
	"\t\tht_split_tz(fmaf(xa.y, s.y, xb.y * c.y), kh[3], kl[3]);\n"
	"\t}\n"
	"\tsc[0] = sc[1] = sc[2] = sc[3] = 0.0f;\n"
	"\tht_mma(sc[0], sc[1], sc[2], sc[3], ql[0], kh[0], kh[1]);\n"
	"\tht_mma(sc[0], sc[1], sc[2], sc[3], qh[0], kl[0], kl[1]);\n"
	"\tht_mma(sc[0], sc[1], sc[2], sc[3], ql[1], kh[2], kh[3]);\n"
	"\tht_mma(sc[0], sc[1], sc[2], sc[3], qh[1], kl[2], kl[3]);\n"
	"\tht_mma(sc[0], sc[1], sc[2], sc[3], qh[0], kh[0], kh[1]);\n"
	"\tht_mma(sc[0], sc[1], sc[2], sc[3], qh[1], kh[2], kh[3]);\n"
	"\t// unmasked, only a warp's last chunk can pass n (the test is the warp's: cb is)\n"
	"\tif (MASKED || cb + 8 > n) {\n"
	"\t\tif (cb + 2 * q >= n || (kw >> (2 * q) & 1u))\n"
	"\t\t\tsc[0] = sc[2] = NEG_INF;\n"
	"\t\tif (cb + 2 * q + 1 >= n || (kw >> (2 * q + 1) & 1u))\n"
	"\t\t\tsc[1] = sc[3] = NEG_INF;\n"
	"\t}\n"
	"}\n"
	"\n"
	"// Merge NC staged chunks (chunk c at st + c * MSTAGE, candidates cb + 8 c on) into\n"
	"// the warp's state: their scores side by side (independent mma chains), one lazy max\n"
	"// check, the weights, P V (as O^T = V^T P^T: V's fragments are 8-byte loads).\n"
	"template <int NC, bool MASKED, bool ROT>\n"
	"__device__ __forceinline__ void ht_mma_chunks(const float *st, int cb, int n, const unsigned *kept,\n"
	"\tconst unsigned (&qh)[2][4], const unsigned (&ql)[2][4], float (&ofr)[8], float (&m)[2], float (&l)[2])\n"
	"{\n"
	"\tconst int lane = threadIdx.x & 31, gr = lane >> 2, q = lane & 3;\n"
	"\t// the pair's 16 kept bits share one word (cb % 16 == 0, cb < n)\n"
	"\tconst unsigned kw = MASKED ? kept[cb >> 5] >> (cb & 31) : 0u;\n"
	"\tfloat sc[NC][4];\n"
	"#pragma unroll\n"
	"\tfor (int c = 0; c < NC; c++)\n"
	"\t\tht_mma_scores<MASKED, ROT>(st + c * MSTAGE, cb + 8 * c, n, kw >> (8 * c), qh, ql, sc[c]);\n"
	"\tbool raise = false;\n"
	"#pragma unroll\n"
	"\tfor (int c = 0; c < NC; c++)\n"
	"\t\traise |= sc[c][0] > m[0] + LAZY || sc[c][1] > m[0] + LAZY || sc[c][2] > m[1] + LAZY || sc[c][3] > m[1] + LAZY;\n"
	"\tif (__any_sync(0xffffffffu, raise)) {\n"
	"\t\tfloat al[2];\n"
	"#pragma unroll\n"
	"\t\tfor (int h = 0; h < 2; h++) {\n"
	"\t\t\tfloat tm = NEG_INF;\n"
	"#pragma unroll\n"
	"\t\t\tfor (int c = 0; c < NC; c++)\n"
	"\t\t\t\ttm = fmaxf(tm, fmaxf(sc[c][2 * h], sc[c][2 * h + 1]));\n"
	"\t\t\ttm = fmaxf(tm, __shfl_xor_sync(0xffffffffu, tm, 1));\n"
	"\t\t\ttm = fmaxf(tm, __shfl_xor_sync(0xffffffffu, tm, 2));\n"
	"\t\t\tconst float mn = fmaxf(m[h], tm);\n"
	"\t\t\tconst float a = ht_ex2(m[h] - mn);\t// 0 from M_NONE\n"
	"\t\t\tm[h] = mn;\n"
	"\t\t\tl[h] *= a;\n"
	"\t\t\tal[h] = a;\n"
	"\t\t}\n"
	"\t\t// the accumulators' heads 2q, 2q + 1 (tile 0) and 8 + 2q, 9 + 2q (tile 1) are lanes\n"
	"\t\t// 8q's and 8q + 4's heads gr, gr + 8\n"
	"\t\tconst float a0 = __shfl_sync(0xffffffffu, al[0], 8 * q), a1 = __shfl_sync(0xffffffffu, al[0], 8 * q + 4);\n"
	"\t\tconst float a2 = __shfl_sync(0xffffffffu, al[1], 8 * q), a3 = __shfl_sync(0xffffffffu, al[1], 8 * q + 4);\n"
	"\t\tofr[0] *= a0, ofr[1] *= a1, ofr[2] *= a0, ofr[3] *= a1;\n"
	"\t\tofr[4] *= a2, ofr[5] *= a3, ofr[6] *= a2, ofr[7] *= a3;\n"
	"\t}\n"
	"#pragma unroll\n"
	"\tfor (int c = 0; c < NC; c++) {\n"
	"\t\tfloat w[4];\n"
	"#pragma unroll\n"
	"\t\tfor (int j = 0; j < 4; j++)\n"
	"\t\t\tw[j] = ht_ex2(sc[c][j] - m[j >> 1]);\t// 0 for -inf (m is finite)\n"
	"\t\tl[0] += w[0] + w[1];\n"
	"\t\tl[1] += w[2] + w[3];\n"
	"\t\t// O^T += V^T P^T: A = V^T, rows gr and gr + 8 values 2 gr and 2 gr + 1, the\n"
	"\t\t// candidates as k in the order 2q, 2q + 1 of k = q, q + 4 (two 8-byte loads); B = P^T\n"
	"\t\t// of heads 0..7 (w[0], w[1]: head gr) and 8..15 (w[2], w[3])\n"
	"\t\tconst float *Vs = st + c * MSTAGE + MOFF_V + 2 * gr;\n"
	"\t\tconst float2 va = *(const float2 *)(Vs + 2 * q * MVS), vb = *(const float2 *)(Vs + (2 * q + 1) * MVS);\n"
	"\t\tunsigned vh[4], vl[4], ph[4], pl[4];\n"
	"\t\tht_split_tz(va.x, vh[0], vl[0]);\n"
	"\t\tht_split_tz(va.y, vh[1], vl[1]);\n"
	"\t\tht_split_tz(vb.x, vh[2], vl[2]);\n"
	"\t\tht_split_tz(vb.y, vh[3], vl[3]);\n"
	"#pragma unroll\n"
	"\t\tfor (int j = 0; j < 4; j++)\n"
	"\t\t\tht_split_tz(w[j], ph[j], pl[j]);\n"
	"#pragma unroll\n"
	"\t\tfor (int t = 0; t < 2; t++) {\n"
	"\t\t\tfloat *d = ofr + 4 * t;\n"
	"\t\t\tht_mma(d[0], d[1], d[2], d[3], vl, ph[2 * t], ph[2 * t + 1]);\n"
	"\t\t\tht_mma(d[0], d[1], d[2], d[3], vh, pl[2 * t], pl[2 * t + 1]);\n"
	"\t\t\tht_mma(d[0], d[1], d[2], d[3], vh, ph[2 * t], ph[2 * t + 1]);\n"
	"\t\t}\n"
	"\t}\n"
	"}\n"
	"\n"
	"// Stage the pair of chunks cb..cb+15 (if cb < n) into the stages at st (s bytes past the\n"
	"// ring's first), and commit them as one cp.async group.\n"
	"template <bool MASKED, bool TOP, bool VEC, bool ROT>\n"
	"__device__ __forceinline__ void ht_mma_stage_pair(float *st, unsigned s, const ht_stager &sg, int n, const int *par,\n"
	"\tconst unsigned *kept, int cb)\n"
	"{\n"
	"\tif (cb < n)\n"
	"\t\tht_mma_stage<MASKED, TOP, VEC, ROT>(st, s, sg, n, par, kept, cb);\n"
	"\tht_cp_commit();\n"
	"}\n"
	"\n"
	"// Pass 4 on tensor cores: merge the leaves of one layer into this warp's state: ofr, the\n"
	"// (P V)^T fragments (head tile t: ofr[4t + i] is value 2 gr + (i >> 1) of head\n"
	"// 8 t + 2 q + (i & 1)), m and l the running max and this lane's part of the sum of heads gr\n"
	"// and gr + 8.  The warp takes the pairs of chunks (16 candidates) warp, warp + NW, ... (pair k\n"
	"// in the stages of pair slot k % MPAIR; MPAIR - 1 pairs in flight).  The weights are\n"
	"// exp(s - m) against the running max (lazy: raised to the chunks' max only when a score\n"
	"// exceeds it by more than LAZY).  MASKED, TOP, VEC and ROT as in ht_mma_stage (ROT: Kl\n"
	"// is the top layer's rotated keys, P.krot).\n"
	"template <bool MASKED, bool TOP, bool VEC, bool ROT = false>\n"
	"__device__ __forceinline__ void ht_leaves_mma(const ht_params &P, const float *Kl, const float *Vl, long long Nl,\n"
	"\tlong long b, int hkv, int n, const int *par, const unsigned *kept,\n"
	"\tconst float *qr, float *work, float (&ofr)[8], float (&m)[2], float (&l)[2])\n"
	"{\n"
	"\tconst int warp = threadIdx.x >> 5;\n"
	"\tfloat *ring = work + warp * (MST * MSTAGE);\n"
	"\tconst ht_stager sg = ht_stager_for(Kl + (b * Nl * P.Hkv + hkv) * KD, Vl + (b * Nl * P.Hkv + hkv) * VD,\n"
	"\t\t\t\t\t    (int)P.Hkv * KD, (int)P.Hkv * VD, P.cos_tab, P.sin_tab,\n"
	"\t\t\t\t\t    (unsigned)__cvta_generic_to_shared(ring));\n"
	"\tunsigned qh[2][4], ql[2][4];\n"
	"\tht_mma_query(qr, 0, qh[0], ql[0]);\n"
	"\tht_mma_query(qr, 1, qh[1], ql[1]);\n"
	"#pragma unroll\n"
	"\tfor (int k = 0; k < MPAIR - 1; k++)\n"
	"\t\tht_mma_stage_pair<MASKED, TOP, VEC, ROT>(ring + 2 * k * MSTAGE, 8 * k * MSTAGE, sg, n, par, kept, (warp + k * NW) * 16);\n"
	"\t// the pair slots read and written (floats past ring): the one read last is written next\n"
	"\tint so = 0, sw = (MPAIR - 1) * 2 * MSTAGE;\n"
	"\tfor (int cb = warp * 16; cb < n; cb += 16 * NW) {\n"
	"\t\tht_mma_stage_pair<MASKED, TOP, VEC, ROT>(ring + sw, 4 * sw, sg, n, par, kept, cb + (MPAIR - 1) * 16 * NW);\n"
	"\t\tht_cp_wait();\n"
	"\t\t__syncwarp();\n"
	"\t\tif (cb + 8 < n)\n"
	"\t\t\tht_mma_chunks<2, MASKED, ROT>(ring + so, cb, n, kept, qh, ql, ofr, m, l);\n"
	"\t\telse\n"
	"\t\t\tht_mma_chunks<1, MASKED, ROT>(ring + so, cb, n, kept, qh, ql, ofr, m, l);\n"
	"\t\t__syncwarp();\n"
	"\t\tsw = so;\n"
	"\t\tso = so == (MPAIR - 1) * 2 * MSTAGE ? 0 : so + 2 * MSTAGE;\n"
	"\t}\n"
	"\tht_cp_wait_all();\n"
	"\t__syncwarp();\n"
	"}\n"
	"\n"
	"// The end of the tensor-core path: the warps' states merged (rescaled to the common max)\n"
	"// and o = U / max(S, eps).  work holds NW x (16 maxima, 16 sums, 16 x 16 values).\n"
	"__device__ __forceinline__ void ht_final_mma(const ht_params &P, float *work, const float (&ofr)[8], const float (&m)[2],\n"
	"\tfloat (&l)[2], long long b, long long row, int hkv)\n"
	"{\n"
	"\tconst int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, gr = lane >> 2, q = lane & 3;\n"
	"\tfloat *wm = work, *wl = work + NW * 16, *wo = work + NW * 32;\n"
	"#pragma unroll\n"
	"\tfor (int h = 0; h < 2; h++) {\n"
	"\t\tl[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);\n"
	"\t\tl[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);\n"
	"\t}\n"
	"\tif (q == 0) {\n"
	"\t\twm[warp * 16 + gr] = m[0], wm[warp * 16 + gr + 8] = m[1];\n"
	"\t\twl[warp * 16 + gr] = l[0], wl[warp * 16 + gr + 8] = l[1];\n"
	"\t}\n"
	"\t// values 2 gr, 2 gr + 1 of heads 8 t + 2 q and 8 t + 2 q + 1 (see ht_leaves_mma)\n"
	"#pragma unroll\n"
	"\tfor (int t = 0; t < 2; t++) {\n"
	"\t\tfloat *o = wo + warp * 256 + (8 * t + 2 * q) * 16 + 2 * gr;\n"
	"\t\t*(float2 *)o = make_float2(ofr[4 * t], ofr[4 * t + 2]);\n"
	"\t\t*(float2 *)(o + 16) = make_float2(ofr[4 * t + 1], ofr[4 * t + 3]);\n"
	"\t}\n"
	"\t__syncthreads();\n"
	"\tconst long long H = P.Hkv * G;\n"
	"\tfor (int x = tid; x < G * VD; x += NT) {\n"
	"\t\tconst int g = x / VD, e = x % VD;\n"
	"\t\tfloat mx = NEG_INF;\n"
	"\t\tfor (int w = 0; w < NW; w++)\n"
	"\t\t\tmx = fmaxf(mx, wm[w * 16 + g]);\n"
	"\t\tfloat num = 0.0f, den = 0.0f;\n"
	"\t\tfor (int w = 0; w < NW; w++) {\t// maxima in base 2, M_NONE when no leaf\n"
	"\t\t\tconst float a = exp2f(wm[w * 16 + g] - mx);\n"
	"\t\t\tden = fmaf(a, wl[w * 16 + g], den);\n"
	"\t\t\tnum = fmaf(a, wo[w * 256 + x], num);\n"
	"\t\t}\n"
	"\t\tP.o[((b * P.rows + row) * H + (long long)hkv * G + g) * VD + e] = num / fmaxf(den, SUM_EPS);\n"
	"\t}\n"
	"}\n"
	"#endif\n"
	"\n"
	"// The whole forward of one query group (b, t, h_kv): every layer, top-down.\n"
	"extern \"C\" __global__ void __launch_bounds__(NT, MINB) htree_forward(const ht_params P)\n"
	"{\n"
	"\textern __shared__ __align__(16) unsigned char ht_smem[];\n"
	"\tfloat *work = (float *)(ht_smem + OFF_WORK);\n"
	"\tunsigned *keys = (unsigned *)(ht_smem + OFF_KEYS);\t// shares its bytes with work\n"
	"\tunsigned *kept = (unsigned *)(ht_smem + OFF_KEPT);\t// bit p: candidate p kept\n"
	"\tint *par = (int *)(ht_smem + OFF_PAR), *nxt = par + TOPK;\n"
	"\tfloat *qr = (float *)(ht_smem + OFF_QR);\n"
	"\tfloat *hmax = (float *)(ht_smem + OFF_H), *hlse = hmax + G, *mrun = hlse + G, *alpha = mrun + G, *qn = alpha + G;\n"
	"\tint *misc = (int *)(ht_smem + OFF_MISC);\n"
	"\tunsigned *hist = (unsigned *)(misc + 8 + NW);\n"
	"\tdouble *etab = (double *)(ht_smem + OFF_ETAB);\t// 2^(j/32), j < 32\n"
	"\tif (threadIdx.x < 32)\n"
	"\t\tetab[threadIdx.x] = ht_etab_init[threadIdx.x];\n"
	"\tconst int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;\n"
	"\t// the latest positions (the most candidates) first, for a short tail of the grid\n"
	"\tconst long long bid = blockIdx.x;\n"
	"\tconst int hkv = (int)(bid % P.Hkv);\n"
	"\tconst long long row = P.rows - 1 - (bid / P.Hkv) % P.rows, b = bid / (P.Hkv * P.rows);\n"
	"\tconst long long gi = (b * P.rows + row) * P.Hkv + hkv;\t// the group's index in o and traces\n"
	"\tconst long long t = P.positions ? (long long)P.positions[row] : row;\n"
	"\tconst int L = (int)P.L;\n"
	"\tconst long long H = P.Hkv * G;\n"
	"#if HT_MMA\n"
	"\tfloat ofr[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, mwarp[2] = {M_NONE, M_NONE}, lwarp[2] = {0.0f, 0.0f};\n"
	"#else\n"
	"\tfloat acc[NI][GH][AE], rs[NI][GH];\n"
	"#pragma unroll\n"
	"\tfor (int it = 0; it < NI; it++)\n"
	"#pragma unroll\n"
	"\t\tfor (int h = 0; h < GH; h++) {\n"
	"\t\t\trs[it][h] = 0.0f;\n"
	"#pragma unroll\n"
	"\t\t\tfor (int x = 0; x < AE; x++)\n"
	"\t\t\t\tacc[it][h][x] = 0.0f;\n"
	"\t\t}\n"
	"#endif\n"
	"\t// layer 0 reads the caller's k and v: 16-byte loads only when both are aligned\n"
	"\tconst bool vec0 = (((unsigned long long)P.k0 | (unsigned long long)P.v0) & 15u) == 0;\n"
	"\tif (tid < G)\n"
	"\t\tmrun[tid] = NEG_INF;\n"
	"#if HT_PROF\n"
	"\t// the phases' cycles and (last) the time of the last mark, in shared memory: no\n"
	"\t// registers held across the phases\n"
	"\t__shared__ long long prof_c[NPHASES + 1];\n"
	"\tif (tid < NPHASES)\n"
	"\t\tprof_c[tid] = 0;\n"
	"\tif (tid == 0)\n"
	"\t\tprof_c[NPHASES] = clock64();\n"
	"#endif\n"
	"\tint npar = 0;\n"
	"\tfor (int l = L - 1; l >= 0; l--) {\n"
	"\t\tconst bool top = l == L - 1;\n"
	"\t\tconst long long node = ht_shr(t, LOGR * l);\n"
	"\t\tconst int n = top ? (int)(node + 1) : (npar - 1) * R + (int)(node & (R - 1)) + 1;\n"
	"#if HT_FAST_MAX\n"
	"\t\t// pass 1's exact maxima (as ht_ord, in alpha: free until the leaves), largest |k|^2 and\n"
	"\t\t// pair count\n"
	"\t\tif (tid < G)\n"
	"\t\t\t((int *)alpha)[tid] = ht_ord(NEG_INF);\n"
	"\t\tif (tid == 0)\n"
	"\t\t\tmisc[3] = misc[4] = 0;\n"
	"#endif\n"
	"\t\t// the rotated, scaled query at row n - 1\n"
	"\t\tfor (int x = tid; x < G * HALF; x += NT) {\n"
	"\t\t\tconst int g = x / HALF, i = x % HALF;\n"
	"\t\t\tconst in_t *qv = P.q + ((b * P.T + t) * H + (long long)hkv * G + g) * KD;\n"
	"\t\t\tconst float x1 = ht_ld(qv + i), x2 = ht_ld(qv + i + HALF);\n"
	"\t\t\tconst float c = P.cos_tab[(long long)(n - 1) * HALF + i], s = P.sin_tab[(long long)(n - 1) * HALF + i];\n"
	"\t\t\tqr[g * KD + i] = __fmul_rn(__fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, s)), P.scale);\n"
	"\t\t\tqr[g * KD + i + HALF] = __fmul_rn(__fadd_rn(__fmul_rn(x1, s), __fmul_rn(x2, c)), P.scale);\n"
	"\t\t}\n"
	"\t\t__syncthreads();\n"
	"\t\tHT_MARK(0);\n"
	"\t\tint nsel = 0;\n"
	"\t\tif (l > 0) {\n"
	"\t\t\tconst float *Kl = P.kl[l];\n"
	"\t\t\tconst long long Nl = P.N[l], rowk = P.Hkv * KD;\n"
	"\t\t\tconst float *kbase = Kl + b * Nl * rowk + (long long)hkv * KD;\n"
	"\t\t\t// the top layer's rotated keys (passes 1 and 2 read them; pass 3 with HT_KROT_KEYS), or null\n"
	"\t\t\tconst float *kt = P.krot ? P.krot + b * Nl * rowk + (long long)hkv * KD : nullptr;\n"
	"\t\t\t// pass 1: the per-head max of the reference's scores (exact rotations and dots, or\n"
	"\t\t\t// ht_max_fast); the norms of the rotated queries (pass 3's bound, ht_max_fast's)\n"
	"\t\t\t{\n"
	"\t\t\t\tif (tid < G) {\n"
	"\t\t\t\t\tfloat a = 0.0f;\n"
	"#pragma unroll\n"
	"\t\t\t\t\tfor (int i = 0; i < KD; i++)\n"
	"\t\t\t\t\t\ta = fmaf(qr[tid * KD + i], qr[tid * KD + i], a);\n"
	"\t\t\t\t\tqn[tid] = sqrtf(a);\n"
	"\t\t\t\t}\n"
	"#if HT_FAST_MAX\n"
	"\t\t\t\tht_max_fast(kbase, kt, rowk, par, top, n, qr, qn, P.cos_tab, P.sin_tab, work, hmax, (int *)alpha, misc + 3,\n"
	"\t\t\t\t\t    misc + 4);\n"
	"#else\n"
	"\t\t\t\tfloat m[G];\n"
	"#pragma unroll\n"
	"\t\t\t\tfor (int g = 0; g < G; g++)\n"
	"\t\t\t\t\tm[g] = NEG_INF;\n"
	"\t\t\t\tfor (int p = tid; p < n; p += NT) {\n"
	"\t\t\t\t\tfloat kr[KD];\n"
	"\t\t\t\t\tht_key_rot(kbase, kt, rowk, par, top, p, P.cos_tab, P.sin_tab, kr);\n"
	"#pragma unroll\n"
	"\t\t\t\t\tfor (int g = 0; g < G; g++) {\n"
	"\t\t\t\t\t\tconst float s = ht_dot_exact(qr + g * KD, kr);\n"
	"\t\t\t\t\t\tif (s > m[g])\n"
	"\t\t\t\t\t\t\tm[g] = s;\n"
	"\t\t\t\t\t}\n"
	"\t\t\t\t}\n"
	"\t\t\t\tht_block_max(m, work, hmax);\n"
	"#endif\n"
	"\t\t\t\tHT_MARK(1);\n"
	"\t\t\t}\n"
	"\t\t\t// pass 2: sum_g = sequential sum of exp(s - mx_g) in candidate order.  The\n"
	"\t\t\t// threads from CHW*32 on compute tiles of CTILE = CT * CPT exp values (double buffer) while\n"
	"\t\t\t// the first G threads fold the previous tile; with CHW > 0 the folding warps\n"
	"\t\t\t// compute nothing, so a tile costs the longer of the two, not their sum.\n"
	"\t\t\t{\n"
	"\t\t\t\tfloat chain = 0.0f;\n"
	"\t\t\t\tconst int ntile = (n + CTILE - 1) / CTILE;\n"
	"\t\t\t\tconst int ct = tid - CHW * 32;\t// this thread's column in a tile\n"
	"\t\t\t\tfor (int j = 0; j <= ntile; j++) {\n"
	"\t\t\t\t\tif (j > 0 && tid < G) {\n"
	"\t\t\t\t\t\tconst float *E = work + ((j - 1) & 1) * (G * TS) + tid * TS;\n"
	"\t\t\t\t\t\tconst int len = n - (j - 1) * CTILE < CTILE ? n - (j - 1) * CTILE : CTILE;\n"
	"\t\t\t\t\t\t// 8 values a step, their loads (unrolled) ahead of the dependent adds\n"
	"\t\t\t\t\t\tint u = 0;\n"
	"#pragma unroll 4\n"
	"\t\t\t\t\t\tfor (; u + 8 <= len; u += 8) {\n"
	"\t\t\t\t\t\t\tconst float4 a = *(const float4 *)(E + u), c = *(const float4 *)(E + u + 4);\n"
	"\t\t\t\t\t\t\tchain = __fadd_rn(__fadd_rn(__fadd_rn(__fadd_rn(chain, a.x), a.y), a.z), a.w);\n"
	"\t\t\t\t\t\t\tchain = __fadd_rn(__fadd_rn(__fadd_rn(__fadd_rn(chain, c.x), c.y), c.z), c.w);\n"
	"\t\t\t\t\t\t}\n"
	"\t\t\t\t\t\tfor (; u < len; u++)\n"
	"\t\t\t\t\t\t\tchain = __fadd_rn(chain, E[u]);\n"
	"\t\t\t\t\t}\n"
	"\t\t\t\t\t// columns ct + h * CT of the tile, h < CPT: all their rows loaded first\n"
	"\t\t\t\t\tif (ct >= 0 && j < ntile) {\n"
	"\t\t\t\t\t\tfloat kr[CPT][KD];\n"
	"#pragma unroll\n"
	"\t\t\t\t\t\tfor (int h = 0; h < CPT; h++) {\n"
	"\t\t\t\t\t\t\tconst int p = j * CTILE + ct + h * CT;\n"
	"\t\t\t\t\t\t\tif (p < n)\n"
	"\t\t\t\t\t\t\t\tht_key_rot(kbase, kt, rowk, par, top, p, P.cos_tab, P.sin_tab, kr[h]);\n"
	"\t\t\t\t\t\t}\n"
	"#pragma unroll\n"
	"\t\t\t\t\t\tfor (int h = 0; h < CPT; h++) {\n"
	"\t\t\t\t\t\t\tfloat *E = work + (j & 1) * (G * TS) + ct + h * CT;\n"
	"\t\t\t\t\t\t\tif (j * CTILE + ct + h * CT < n)\n"
	"\t\t\t\t\t\t\t\tht_exps_exact(qr, kr[h], hmax, etab, E);\n"
	"\t\t\t\t\t\t}\n"
	"\t\t\t\t\t}\n"
	"\t\t\t\t\t__syncthreads();\n"
	"\t\t\t\t}\n"
	"\t\t\t\tif (tid < G)\n"
	"\t\t\t\t\thlse[tid] = __fadd_rn(hmax[tid], ht_log_ref(chain));\n"
	"\t\t\t\tif (tid == 0)\n"
	"\t\t\t\t\tmisc[2] = 0;\t// pass 3's open keys\n"
	"\t\t\t\t__syncthreads();\n"
	"\t\t\t\tHT_MARK(2);\n"
	"\t\t\t}\n"
	"\t\t\t// pass 3: shared importance keys, fast: FMA scores and expf, with a bound on their\n"
	"\t\t\t// distance from the reference's arithmetic; a candidate whose key the bound leaves\n"
	"\t\t\t// open (its truncation could differ, or a term is near the flush) is listed (in\n"
	"\t\t\t// nxt, free until the top-K) and its key computed the reference's way.\n"
	"\t\t\t// Two candidates a thread (p and p + NT, or p twice), their rows loaded first.\n"
	"\t\t\t// The error bound is linear in the terms' exponent errors: a candidate whose\n"
	"\t\t\t// scores' bound could pass 0.05 is open.\n"
	"\t\t\tfloat qmax = 0.0f;\n"
	"#pragma unroll\n"
	"\t\t\tfor (int g = 0; g < G; g++)\n"
	"\t\t\t\tqmax = fmaxf(qmax, qn[g]);\n"
	"\t\t\tfor (int p0 = tid; p0 < n; p0 += 2 * NT) {\n"
	"\t\t\t\tconst int pc[2] = {p0, p0 + NT < n ? p0 + NT : p0};\n"
	"\t\t\t\tfloat kr[2][KD], kn[2], imp[2] = {0.0f, 0.0f};\n"
	"\t\t\t\t// the terms weighted by |q_g| and by |x|: imp's error bound (below)\n"
	"\t\t\t\tfloat eq[2] = {0.0f, 0.0f}, ex_x[2] = {0.0f, 0.0f};\n"
	"\t\t\t\tfloat near[2];\t// min over the heads of |x + 87.5|: open below 1.5 (a term near the flush)\n"
	"\t\t\t\tbool open[2];\n"
	"#pragma unroll\n"
	"\t\t\t\tfor (int h = 0; h < 2; h++) {\n"
	"\t\t\t\t\tif (HT_KROT_KEYS && top && kt)\t// the exact rotations: within the bound as the fast ones are\n"
	"\t\t\t\t\t\tht_row<KD>(kt + (long long)pc[h] * rowk, kr[h], true);\n"
	"\t\t\t\t\telse\n"
	"\t\t\t\t\t\tht_rope_fast(kbase + ht_cand(par, top, pc[h]) * rowk, P.cos_tab + (long long)pc[h] * HALF,\n"
	"\t\t\t\t\t\t\t     P.sin_tab + (long long)pc[h] * HALF, kr[h], true);\n"
	"\t\t\t\t\tkn[h] = 0.0f;\n"
	"#pragma unroll\n"
	"\t\t\t\t\tfor (int i = 0; i < KD; i++)\n"
	"\t\t\t\t\t\tkn[h] = fmaf(kr[h][i], kr[h][i], kn[h]);\n"
	"\t\t\t\t\tkn[h] = sqrtf(kn[h]) * DOT_BOUND;\n"
	"\t\t\t\t\topen[h] = qmax * kn[h] > 0.05f;\n"
	"\t\t\t\t\tnear[h] = 2.0f;\n"
	"\t\t\t\t}\n"
	"#pragma unroll\n"
	"\t\t\t\tfor (int g = 0; g < G; g++)\n"
	"#pragma unroll\n"
	"\t\t\t\t\tfor (int h = 0; h < 2; h++) {\n"
	"\t\t\t\t\t\tconst float x = ht_dot_fast(qr + g * KD, kr[h]) - hlse[g];\n"
	"\t\t\t\t\t\tnear[h] = fminf(near[h], fabsf(x + 87.5f));\t// exact in the window\n"
	"\t\t\t\t\t\t// no branch: the heads side by side; 0 below -87.3 (open or 0 both sides)\n"
	"\t\t\t\t\t\tconst float ex = ht_exp_ftz(x);\n"
	"\t\t\t\t\t\t// the term's relative error: the scores' bound |q_g| kn, x's two roundings\n"
	"\t\t\t\t\t\t// (|x| 2^-23) and ht_exp_ftz's (< 2^-22 + |x| 2^-23); weighted by the term,\n"
	"\t\t\t\t\t\t// summed in its parts (err, below, bounds imp's error)\n"
	"\t\t\t\t\t\teq[h] = fmaf(ex, qn[g], eq[h]);\n"
	"\t\t\t\t\t\tex_x[h] = fmaf(ex, fabsf(x), ex_x[h]);\n"
	"\t\t\t\t\t\timp[h] += ex;\n"
	"\t\t\t\t\t}\n"
	"#pragma unroll\n"
	"\t\t\t\tfor (int h = 0; h < 2; h++) {\n"
	"\t\t\t\t\tconst int p = p0 + h * NT;\n"
	"\t\t\t\t\tif (p >= n)\n"
	"\t\t\t\t\t\tbreak;\n"
	"\t\t\t\t\tunsigned key = __float_as_uint(IMP_FORCED) & KEYMASK;\n"
	"\t\t\t\t\tif (p < n - 1) {\n"
	"\t\t\t\t\t\t// sum over g of e_g (|q_g| kn + (|x_g| + 1) 2^-21)\n"
	"\t\t\t\t\t\tconst float err = fmaf(kn[h], eq[h], (ex_x[h] + imp[h]) * 0x1p-21f);\n"
	"\t\t\t\t\t\t// e^d - 1 <= 1.1 d for the terms' errors d; relative: the exps' and the sums'\n"
	"\t\t\t\t\t\t// roundings (both sides)\n"
	"\t\t\t\t\t\tkey = __float_as_uint(fmaf(err, 1.1f, imp[h]) * (1.0f + SUM_BOUND)) & KEYMASK;\n"
	"\t\t\t\t\t\tif (open[h] || near[h] < 1.5f || key != (__float_as_uint(fmaf(err, -1.1f, imp[h]) * (1.0f - SUM_BOUND)) & KEYMASK)) {\n"
	"\t\t\t\t\t\t\tkey = KEY_OPEN;\n"
	"\t\t\t\t\t\t\tconst int at = atomicAdd(&misc[2], 1);\n"
	"\t\t\t\t\t\t\tif (at < TOPK)\n"
	"\t\t\t\t\t\t\t\tnxt[at] = p;\n"
	"\t\t\t\t\t\t}\n"
	"\t\t\t\t\t}\n"
	"\t\t\t\t\tkeys[p] = key;\n"
	"\t\t\t\t}\n"
	"\t\t\t}\n"
	"\t\t\t__syncthreads();\n"
	"\t\t\t{\n"
	"\t\t\t\tconst int nopen = misc[2];\n"
	"\t\t\t\tif (nopen <= TOPK) {\n"
	"\t\t\t\t\tfor (int i = tid; i < nopen; i += NT)\n"
	"\t\t\t\t\t\tkeys[nxt[i]] = ht_key_exact(kbase, HT_KROT_KEYS ? kt : nullptr, rowk, par, top, nxt[i], qr, hlse, P.cos_tab, P.sin_tab,\n"
	"\t\t\t\t\t\t\t\t\t    etab);\n"
	"\t\t\t\t} else {\n"
	"\t\t\t\t\tfor (int p = tid; p < n; p += NT)\n"
	"\t\t\t\t\t\tif (keys[p] == KEY_OPEN)\n"
	"\t\t\t\t\t\t\tkeys[p] = ht_key_exact(kbase, HT_KROT_KEYS ? kt : nullptr, rowk, par, top, p, qr, hlse, P.cos_tab,\n"
	"\t\t\t\t\t\t\t\t\t\t\t    P.sin_tab, etab);\n"
	"\t\t\t\t}\n"
	"\t\t\t}\n"
	"\t\t\t__syncthreads();\n"
	"\t\t\tHT_MARK(3);\n"
	"\t\t\t// shared top-K: the kept candidates' bits in kept (the leaves need them only when\n"
	"\t\t\t// n > TOPK), their nodes ascending in nxt\n"
	"\t\t\tif (n <= TOPK) {\n"
	"\t\t\t\tfor (int p = tid; p < n; p += NT)\n"
	"\t\t\t\t\tnxt[p] = (int)ht_cand(par, top, p);\n"
	"\t\t\t\tnsel = n;\n"
	"\t\t\t} else {\n"
	"\t\t\t\tunsigned prefix = 0u, pmask = 0u;\n"
	"\t\t\t\tint kleft = TOPK;\n"
	"#pragma unroll\n"
	"\t\t\t\tfor (int d = 0; d < NDIGITS; d++) {\n"
	"\t\t\t\t\tconst int shift = 24 - 8 * d;\n"
	"\t\t\t\t\tfor (int x = tid; x < 256; x += NT)\n"
	"\t\t\t\t\t\thist[x] = 0u;\n"
	"\t\t\t\t\t__syncthreads();\n"
	"\t\t\t\t\t// a warp step's keys in the prefix mostly share their digit (the keys\n"
	"\t\t\t\t\t// cluster): then one add for the warp, else an add a key\n"
	"\t\t\t\t\tfor (int p0 = 0; p0 < n; p0 += NT) {\n"
	"\t\t\t\t\t\tconst int p = p0 + tid;\n"
	"\t\t\t\t\t\tconst unsigned k = p < n ? keys[p] : 0u, dg = (k >> shift) & 255u;\n"
	"\t\t\t\t\t\tconst bool in = p < n && (k & pmask) == prefix;\n"
	"\t\t\t\t\t\tconst unsigned inw = __ballot_sync(0xffffffffu, in);\n"
	"\t\t\t\t\t\tif (inw) {\n"
	"\t\t\t\t\t\t\tconst unsigned d0 = __shfl_sync(0xffffffffu, dg, __ffs(inw) - 1);\n"
	"\t\t\t\t\t\t\tif (__all_sync(0xffffffffu, !in || dg == d0)) {\n"
	"\t\t\t\t\t\t\t\tif (lane == 0)\n"
	"\t\t\t\t\t\t\t\t\tatomicAdd(&hist[d0], (unsigned)__popc(inw));\n"
	"\t\t\t\t\t\t\t} else if (in) {\n"
	"\t\t\t\t\t\t\t\tatomicAdd(&hist[dg], 1u);\n"
	"\t\t\t\t\t\t\t}\n"
	"\t\t\t\t\t\t}\n"
	"\t\t\t\t\t}\n"
	"\t\t\t\t\t__syncthreads();\n"
	"\t\t\t\t\tif (warp == 0) {\n"
	"\t\t\t\t\t\t// lane owns bins 255-8*lane down to 248-8*lane (lane 0: the largest)\n"
	"\t\t\t\t\t\tunsigned c[8], tot = 0u;\n"
	"#pragma unroll\n"
	"\t\t\t\t\t\tfor (int i = 0; i < 8; i++) {\n"
	"\t\t\t\t\t\t\tc[i] = hist[255 - 8 * lane - i];\n"
	"\t\t\t\t\t\t\ttot += c[i];\n"
	"\t\t\t\t\t\t}\n"
	"\t\t\t\t\t\tunsigned inc = tot;\n"
	"#pragma unroll\n"
	"\t\t\t\t\t\tfor (int o = 1; o < 32; o <<= 1) {\n"
	"\t\t\t\t\t\t\tconst unsigned y = __shfl_up_sync(0xffffffffu, inc, o);\n"
	"\t\t\t\t\t\t\tif (lane >= o)\n"
	"\t\t\t\t\t\t\t\tinc += y;\n"
	"\t\t\t\t\t\t}\n"
	"\t\t\t\t\t\tunsigned a = inc - tot;\n"
	"\t\t\t\t\t\tif (a < (unsigned)kleft && (unsigned)kleft <= inc) {\n"
	"\t\t\t\t\t\t\tfor (int i = 0; i < 8; i++) {\n"
	"\t\t\t\t\t\t\t\tif (a + c[i] >= (unsigned)kleft) {\n"
	"\t\t\t\t\t\t\t\t\tmisc[0] = 255 - 8 * lane - i;\n"
	"\t\t\t\t\t\t\t\t\tmisc[1] = kleft - (int)a;\n"
	"\t\t\t\t\t\t\t\t\tbreak;\n"
	"\t\t\t\t\t\t\t\t}\n"
	"\t\t\t\t\t\t\t\ta += c[i];\n"
	"\t\t\t\t\t\t\t}\n"
	"\t\t\t\t\t\t}\n"
	"\t\t\t\t\t}\n"
	"\t\t\t\t\t__syncthreads();\n"
	"\t\t\t\t\tprefix |= (unsigned)misc[0] << shift;\n"
	"\t\t\t\t\tpmask |= 255u << shift;\n"
	"\t\t\t\t\tkleft = misc[1];\n"
	"\t\t\t\t\t__syncthreads();\n"
	"\t\t\t\t}\n"
	"\t\t\t\t// keys > kth are kept; of the keys == kth the first kleft in position order.\n"
	"\t\t\t\t// Warp w takes the positions [w SEG, (w + 1) SEG) (SEG a multiple of 32, so\n"
	"\t\t\t\t// that a warp step writes one word of kept): it counts its keys > kth and\n"
	"\t\t\t\t// == kth (hist[w], hist[NW + w]: free after the digits); after one barrier\n"
	"\t\t\t\t// every warp knows the counts before it, so it writes its kept words and its\n"
	"\t\t\t\t// nodes (at their ranks in nxt) in one more walk, with no barrier between.\n"
	"\t\t\t\tconst unsigned kth = prefix;\n"
	"\t\t\t\tconst int seg = (n + NW * 32 - 1) / (NW * 32) * 32, s0 = warp * seg, s1 = s0 + seg < n ? s0 + seg : n;\n"
	"\t\t\t\tconst unsigned lt = (1u << lane) - 1u;\n"
	"\t\t\t\t{\n"
	"\t\t\t\t\tunsigned gt = 0u, eq = 0u;\n"
	"\t\t\t\t\tfor (int base = s0; base < s1; base += 32) {\n"
	"\t\t\t\t\t\tconst int p = base + lane;\n"
	"\t\t\t\t\t\tconst unsigned k = p < s1 ? keys[p] : 0u;\n"
	"\t\t\t\t\t\tgt += __popc(__ballot_sync(0xffffffffu, p < s1 && k > kth));\n"
	"\t\t\t\t\t\teq += __popc(__ballot_sync(0xffffffffu, p < s1 && k == kth));\n"
	"\t\t\t\t\t}\n"
	"\t\t\t\t\tif (lane == 0) {\n"
	"\t\t\t\t\t\thist[warp] = gt;\n"
	"\t\t\t\t\t\thist[NW + warp] = eq;\n"
	"\t\t\t\t\t}\n"
	"\t\t\t\t}\n"
	"\t\t\t\t__syncthreads();\n"
	"\t\t\t\t// the keys == kth and the kept keys before this warp's (eqbase, selbase; they\n"
	"\t\t\t\t// advance as its walk goes); nsel the kept keys in all\n"
	"\t\t\t\tint eqbase = 0, selbase = 0, eb = 0;\n"
	"\t\t\t\tnsel = 0;\n"
	"\t\t\t\tfor (int w = 0; w < NW; w++) {\n"
	"\t\t\t\t\tconst int e = (int)hist[NW + w], left = kleft - eb;\n"
	"\t\t\t\t\tif (w == warp) {\n"
	"\t\t\t\t\t\teqbase = eb;\n"
	"\t\t\t\t\t\tselbase = nsel;\n"
	"\t\t\t\t\t}\n"
	"\t\t\t\t\tnsel += (int)hist[w] + (left <= 0 ? 0 : left < e ? left : e);\n"
	"\t\t\t\t\teb += e;\n"
	"\t\t\t\t}\n"
	"\t\t\t\tfor (int base = s0; base < s1; base += 32) {\n"
	"\t\t\t\t\tconst int p = base + lane;\n"
	"\t\t\t\t\tconst unsigned k = p < s1 ? keys[p] : 0u;\n"
	"\t\t\t\t\tconst bool eqf = p < s1 && k == kth;\n"
	"\t\t\t\t\tconst unsigned eqw = __ballot_sync(0xffffffffu, eqf);\n"
	"\t\t\t\t\tconst bool sel = p < s1 && (k > kth || (eqf && eqbase + __popc(eqw & lt) < kleft));\n"
	"\t\t\t\t\tconst unsigned selw = __ballot_sync(0xffffffffu, sel);\n"
	"\t\t\t\t\tif (lane == 0)\n"
	"\t\t\t\t\t\tkept[base >> 5] = selw;\n"
	"\t\t\t\t\tif (sel)\n"
	"\t\t\t\t\t\tnxt[selbase + __popc(selw & lt)] = (int)ht_cand(par, top, p);\n"
	"\t\t\t\t\teqbase += __popc(eqw);\n"
	"\t\t\t\t\tselbase += __popc(selw);\n"
	"\t\t\t\t}\n"
	"\t\t\t}\n"
	"\t\t\t__syncthreads();\n"
	"\t\t\tif (P.trace_sel)\n"
	"\t\t\t\tfor (int x = tid; x < TOPK; x += NT)\n"
	"\t\t\t\t\tP.trace_sel[(gi * (L - 1) + (l - 1)) * TOPK + x] = x < nsel ? nxt[x] : -1;\n"
	"\t\t\tHT_MARK(4);\n"
	"\t\t}\n"
	"\t\tif (P.trace_ncand && tid == 0)\n"
	"\t\t\tP.trace_ncand[gi * L + l] = n;\n"
	"#if HT_MMA\n"
	"\t\tif (l == 0 && vec0 && !top)\n"
	"\t\t\tht_leaves_mma<false, false, true>(P, P.k0, P.v0, P.T, b, hkv, n, par, kept, qr, work, ofr, mwarp, lwarp);\n"
	"\t\telse if (l == 0 && vec0)\n"
	"\t\t\tht_leaves_mma<false, true, true>(P, P.k0, P.v0, P.T, b, hkv, n, par, kept, qr, work, ofr, mwarp, lwarp);\n"
	"\t\telse if (l == 0 && !top)\t// k or v not 16-byte aligned\n"
	"\t\t\tht_leaves_mma<false, false, false>(P, P.k0, P.v0, P.T, b, hkv, n, par, kept, qr, work, ofr, mwarp, lwarp);\n"
	"\t\telse if (l == 0)\n"
	"\t\t\tht_leaves_mma<false, true, false>(P, P.k0, P.v0, P.T, b, hkv, n, par, kept, qr, work, ofr, mwarp, lwarp);\n"
	"#if HT_KROT_KEYS\n"
	"\t\telse if (n > TOPK && top && P.krot)\t// the top layer's keys rotated once a forward\n"
	"\t\t\tht_leaves_mma<true, true, true, true>(P, P.krot, P.vl[l], P.N[l], b, hkv, n, par, kept, qr, work, ofr, mwarp,\n"
	"\t\t\t\t\t\t\t       lwarp);\n"
	"#endif\n"
	"\t\telse if (n > TOPK && top)\n"
	"\t\t\tht_leaves_mma<true, true, true>(P, P.kl[l], P.vl[l], P.N[l], b, hkv, n, par, kept, qr, work, ofr, mwarp,\n"
	"\t\t\t\t\t\t\t lwarp);\n"
	"\t\telse if (n > TOPK)\n"
	"\t\t\tht_leaves_mma<true, false, true>(P, P.kl[l], P.vl[l], P.N[l], b, hkv, n, par, kept, qr, work, ofr, mwarp,\n"
	"\t\t\t\t\t\t\t  lwarp);\n"
	"#else\n"
	"\t\tif (l == 0)\n"
	"\t\t\tht_leaves<in_t>(P, P.k0, P.v0, P.T, b, hkv, top, false, vec0, n, par, kept, qr, mrun, alpha, work, acc, rs);\n"
	"\t\telse if (n > TOPK)\n"
	"\t\t\tht_leaves<float>(P, P.kl[l], P.vl[l], P.N[l], b, hkv, top, true, true, n, par, kept, qr, mrun, alpha,\n"
	"\t\t\t\t\t work, acc, rs);\n"
	"#endif\n"
	"\t\tint *tmp = par;\n"
	"\t\tpar = nxt;\n"
	"\t\tnxt = tmp;\n"
	"\t\tnpar = nsel;\n"
	"\t\t__syncthreads();\n"
	"\t\tHT_MARK(l == 0 ? 6 : 5);\n"
	"\t}\n"
	"#if HT_MMA\n"
	"\tht_final_mma(P, work, ofr, mwarp, lwarp, b, row, hkv);\n"
	"#else\n"
	"\t// the partial states of the slices, summed in slice order; o = U / max(S, eps)\n"
	"#pragma unroll\n"
	"\tfor (int it = 0; it < NI; it++) {\n"
	"\t\tconst int item = NI == 1 ? tid % ITEMS : tid + it * NT;\n"
	"\t\tconst int slice = NI == 1 ? tid / ITEMS : 0;\n"
	"\t\tif (item < ITEMS && slice < JS) {\n"
	"\t\t\tfloat *red = work + (slice * ITEMS + item) * RW;\n"
	"#pragma unroll\n"
	"\t\t\tfor (int h = 0; h < GH; h++) {\n"
	"#pragma unroll\n"
	"\t\t\t\tfor (int x = 0; x < AE; x++)\n"
	"\t\t\t\t\tred[h * AE + x] = acc[it][h][x];\n"
	"\t\t\t\tred[GH * AE + h] = rs[it][h];\n"
	"\t\t\t}\n"
	"\t\t}\n"
	"\t}\n"
	"\t__syncthreads();\n"
	"\tfor (int item = tid; item < ITEMS; item += NT) {\n"
	"\t\tfloat u[GH][AE], s[GH];\n"
	"#pragma unroll\n"
	"\t\tfor (int h = 0; h < GH; h++) {\n"
	"\t\t\ts[h] = 0.0f;\n"
	"#pragma unroll\n"
	"\t\t\tfor (int x = 0; x < AE; x++)\n"
	"\t\t\t\tu[h][x] = 0.0f;\n"
	"\t\t}\n"
	"\t\tfor (int sl = 0; sl < JS; sl++) {\n"
	"\t\t\tconst float *red = work + (sl * ITEMS + item) * RW;\n"
	"#pragma unroll\n"
	"\t\t\tfor (int h = 0; h < GH; h++) {\n"
	"#pragma unroll\n"
	"\t\t\t\tfor (int x = 0; x < AE; x++)\n"
	"\t\t\t\t\tu[h][x] += red[h * AE + x];\n"
	"\t\t\t\ts[h] += red[GH * AE + h];\n"
	"\t\t\t}\n"
	"\t\t}\n"
	"\t\tconst int g0 = (item / VQ) * GH, e0 = (item % VQ) * AE;\n"
	"#pragma unroll\n"
	"\t\tfor (int h = 0; h < GH; h++) {\n"
	"\t\t\tconst float den = fmaxf(s[h], SUM_EPS);\n"
	"\t\t\tfloat *orow = P.o + ((b * P.rows + row) * H + (long long)hkv * G + g0 + h) * VD + e0;\n"
	"#pragma unroll\n"
	"\t\t\tfor (int x = 0; x < AE; x++)\n"
	"\t\t\t\torow[x] = u[h][x] / den;\n"
	"\t\t}\n"
	"\t}\n"
	"#endif\n"
	"#if HT_PROF\n"
	"\tHT_MARK(7);\n"
	"\tif (tid == 0 && P.prof)\n"
	"\t\tfor (int ph = 0; ph < NPHASES; ph++)\n"
	"\t\t\tatomicAdd(P.prof + ph, (unsigned long long)prof_c[ph]);\n"
	"#endif\n"
	"}\n";

/* The forward's launch bounds: blocks an SM should hold with nt threads (c->min_blocks,
 * else as many as 128 registers a thread allow). */
static int min_blocks(const tinyc_htree_kernel_config *c, int nt)
{
	if (c->min_blocks > 0)
		return c->min_blocks;
	return nt >= 512 ? 1 : 512 / nt;
}

/* Append the CUDA text of the htree kernels for configuration c to out. */
int tinyc_htree_emit_cuda(tinyc_ctx *ctx, const tinyc_htree_kernel_config *c, tinyc_buf *out)
{
	if (tinyc_htree_kernel_check(ctx, c) < 0)
		return -1;
	htree_layout lo;
	layout_for(c, choose_threads(c), &lo);
	const char *in_t = c->dtype == TINYC_HALF ? "__half"
			   : c->dtype == TINYC_BFLOAT16 ? "__nv_bfloat16" : "float";
	uint32_t keymask = c->key_drop_bits >= 32 ? 0u
			   : ~((UINT32_C(1) << c->key_drop_bits) - 1u);
	/* the radix digits (from the top) that hold kept key bits */
	int ndigits = 0;
	for (int d = 0; d < 4; d++)
		if ((keymask >> (24 - 8 * d)) & 255u)
			ndigits = d + 1;
	tinyc_buf_printf(out,
			 "// htree forward kernels, generated by tinyc (codegen/htree_cuda.c).\n"
			 "// r=%d top_k=%d max_top_nodes=%lld G=%d K=%d V=%d dtype=%s key_drop_bits=%d "
			 "threads=%d\n",
			 c->compression_rate, c->top_k, (long long)c->max_top_nodes, c->G, c->K, c->V,
			 tinyc_dtype_name(c->dtype), c->key_drop_bits, lo.nt);
	tinyc_buf_printf(out, "// launch htree_forward with %d threads and %lld bytes of dynamic "
			 "shared memory, one block per query group\n\n", lo.nt, (long long)lo.smem);
	if (c->dtype == TINYC_HALF)
		tinyc_buf_puts(out, "#include <cuda_fp16.h>\n");
	if (c->dtype == TINYC_BFLOAT16)
		tinyc_buf_puts(out, "#include <cuda_bf16.h>\n");
	tinyc_buf_printf(out, "typedef %s in_t;\n", in_t);
	if (c->dtype == TINYC_HALF)
		tinyc_buf_puts(out, "__device__ __forceinline__ float ht_ld(const __half *p) "
			       "{ return __half2float(*p); }\n");
	if (c->dtype == TINYC_BFLOAT16)
		tinyc_buf_puts(out, "__device__ __forceinline__ float ht_ld(const __nv_bfloat16 *p) "
			       "{ return __bfloat162float(*p); }\n");
	tinyc_buf_printf(out,
			 "constexpr int R = %d, LOGR = %d, TOPK = %d;\n"
			 "constexpr int G = %d, KD = %d, HALF = %d, VD = %d;\n"
			 "constexpr int NT = %d, NW = %d, MINB = %d, TS = %d, CW = %d, CWARPS = %d, CHW = %d, CT = %d;\n"
			 "constexpr int CPT = %d, CTILE = CT * CPT;\n"
			 "constexpr int AE = %d, VQ = %d, GH = %d, ITEMS = %d, JS = %d, NI = %d;\n"
			 "constexpr int SS = %d, VS = %d, RW = %d;\n"
			 "constexpr int MAXL = %d, NDIGITS = %d, HT_PARAMS_BYTES = %d, NPHASES = %d;\n"
			 "#define HT_PROF %d\n"
			 "#define HT_MMA %d\n"
			 "#define HT_FAST_MAX %d\n"
			 "#define HT_KROT_KEYS %d\n"
			 "constexpr int HT_MMA_STAGES_ = %d;\n"
			 "constexpr unsigned KEYMASK = 0x%08Xu;\n"
			 "constexpr float IMP_FORCED = %.1ff, SUM_EPS = 1e-30f, LAZY = 8.0f;\n"
			 "// pass 3's bound on |fast - reference score| / (|q| |k|), and its open-key mark\n"
			 "constexpr float DOT_BOUND = (KD + 8) * 0x1p-22f;\n"
			 "// ... and on the relative error of the exps (2 ulp, a margin for the rounding of the\n"
			 "// terms' errors) and the sums over G heads of\n"
			 "// both sides: (2 G + 16) 2^-24 (a margin in), at least 2^-18\n"
			 "constexpr float SUM_BOUND = (2 * G + 16 > 64 ? 2 * G + 16 : 64) * 0x1p-24f;\n"
			 "constexpr unsigned KEY_OPEN = 0xFFFFFFFFu;\n"
			 "#define NEG_INF __int_as_float(0xff800000)\n"
			 "constexpr int OFF_WORK = %lld, OFF_KEYS = %lld, OFF_KEPT = %lld, OFF_PAR = %lld, OFF_QR = %lld, "
			 "OFF_H = %lld, OFF_MISC = %lld, OFF_ETAB = %lld;\n"
			 "\n",
			 c->compression_rate, ilog2(c->compression_rate), c->top_k, c->G, c->K,
			 c->K / 2, c->V, lo.nt, lo.nw, min_blocks(c, lo.nt), lo.ts, lo.cw,
			 (c->G * lo.cw + 31) / 32, lo.chw, lo.ct, lo.cpt, lo.ae, lo.vq, lo.gh, lo.items,
			 lo.js, lo.ni, lo.ss, lo.vs, lo.rw, TINYC_HTREE_MAX_LAYERS, ndigits, (int)sizeof(tinyc_htree_kparams),
			 TINYC_HTREE_NPHASES, c->profile ? 1 : 0, lo.mma, c->fast_max ? 1 : 0, c->krot_keys ? 1 : 0, lo.mma ? lo.mst : 2,
			 (unsigned)keymask, (double)TINYC_HTREE_IMP_FORCED, (long long)lo.off_work,
			 (long long)lo.off_keys, (long long)lo.off_kept, (long long)lo.off_par, (long long)lo.off_qr,
			 (long long)lo.off_h, (long long)lo.off_misc, (long long)lo.off_etab);
	tinyc_buf_puts(out, htree_common);
	tinyc_buf_puts(out, htree_exp_src);
	tinyc_buf_puts(out, htree_common2);
	tinyc_buf_puts(out, htree_forward_src);
	if (out->oom)
		return tinyc_error(ctx, "OutOfMemory", "no memory for the htree kernel text");
	return 0;
}
_Static_assert(TINYC_HTREE_MAX_LAYERS == 64, "tinyc_htree_kparams has 64 layer slots");
_Static_assert(sizeof(tinyc_htree_kparams) == 1680, "tinyc_htree_kparams: 8-byte fields, no padding");
