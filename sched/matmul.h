/* The schedule plan of contractions (seed 002 §5): the tiled matrix template.
 *
 * A contraction (MUL under REDUCE ADD, tagged by the Poly-View) and the epilogue graph the
 * "evt" stage extracted for it become one kernel: C[l, m, n] = sum_k A[l, m, k] * B[l, k, n]
 * with the epilogue applied to the accumulator in registers.  The plan chooses among
 *
 *   simt  the seed's synchronous template: shared tiles As[BM x BK], Bs[BK x BN] filled by
 *         coalesced cooperative predicated (zero-filling) loads, a barrier, a k loop over the
 *         tile, TM x TN fp32 accumulators per thread (16 x 16 threads);
 *   mma   tensor cores (sm_80+, half or bfloat16 operands, fp32 accumulation): warps of
 *         mma.sync m16n8k16 fed by ldmatrix from padded shared tiles, filled by a cp.async
 *         multi-stage pipeline (16-byte chunks where alignment is provable, else
 *         synchronous loads); tiles up to 128x256 and 4 stages in dynamic shared memory;
 *   wgmma Hopper (sm_90, built for sm_90a): a persistent kernel of one producer warpgroup
 *         (one thread issues TMA tile loads into a ring of `stages` 128-byte-swizzled
 *         shared tiles, full/empty mbarriers per stage, phases as parity tokens) and
 *         `consumers` warpgroups (wgmma.mma_async m64nNk16 from shared memory through
 *         matrix descriptors, fp32 accumulators in registers, one wgmma group in flight,
 *         the epilogue graph on the accumulator fragments); setmaxnreg moves registers
 *         from the producer to the consumers; tiles visited in groups of `raster` m tiles
 *         (L2 reuse).  Tiles BM in {64, 128} x BN in {64, 128, 192, 256}, BK 64: the
 *         192-wide tiles fill the SMs where 256 leaves a partial round (4096 x 768:
 *         128 tiles against 96); no 128-row tile where M <= 64.  Proposed when every
 *         size is bound and the epilogue has no reductions.  An operand whose strides or origin are not 16-byte aligned (odd
 *         row lengths: 4097, 333) is either copied by the producer's threads (element
 *         loads) or packed: a packing kernel launched before the matmul copies it into a
 *         workspace whose rows are padded to 16 bytes (zeros in the pad), which TMA then
 *         loads (the tensor map's extents are the operand's).  With a stream-K tail
 *         (tail_split, TINYC_WGMMA_STREAMK; sched/splitk.c) the tiles of a partly idle
 *         last round are split along K into units walked after the whole ones, their
 *         fp32 partials summed in k order by each tile's last warp before the epilogue;
 *
 *         With tiles.swap (sched/swapab.c; decode M <= 32, only with TINYC_WGMMA_SWAP: not
 *         measured) the same kernel on the swapped problem C^T = B^T A^T: 64 or 128 of the
 *         weight's columns as wgmma's rows (its MN-major A), the tokens as its N = M rounded
 *         up to 8 (bn 8 .. 32, the K-major B), rings of up to 12 stages, unstaged stores;
 *
 *   tf32x3 fp32 operands on tensor cores (sm_80+): the two-stage register prefetch of the
 *         SIMT tile, 128x128 tiles of 8 warps, each fp32 value split into hi = tf32(x) and
 *         lo = tf32(x - hi) in registers, acc += a_lo b_hi + a_hi b_lo + a_hi b_hi by
 *         mma.sync m16n8k8 .tf32 (fp32 accuracy: docs/matmul-results.md);
 *
 *         With fp32 operands (sm_90a) the same kernel in the 3xTF32 form (tf32x3 set):
 *         both operands K-major and loaded by TMA, 128 x {128, 64} x 32 tiles, 3-4
 *         stages; the producer's threads split each landed stage into hi (in place) and
 *         lo tiles, the consumers issue three wgmma m64nNk8 .tf32 per k step into a fresh
 *         fragment added to the accumulators per k tile (codegen/tf32_wgmma.c);
 *
 *   gemv  small M (decode, bound M <= 4, B n-contiguous with 16-byte aligned rows): B read
 *         once in 16-byte vectors by k lanes x column lanes, fp32 CUDA-core products, the k
 *         lanes summed in a fixed order, the epilogue on the summed tile (sched/gemv.c);
 *
 * over the seed's candidate set BM, BN in {64, 128}, BK in {16, 32, 64}, stages in {2, 3}
 * (mma with cp.async; 1 otherwise), keeping those whose shared memory stays under 80% of a
 * block's and estimating time = max(FLOPs / peak, bytes / bandwidth) / efficiency, where
 * the efficiency folds in tile utilisation (tails), waves over the SMs at the occupancy
 * estimate (registers, threads and shared memory per CTA against the SM's limits) and the
 * pipeline.  Binding: n.o -> block.x, m.o -> block.y, l -> block.z.
 *
 * The kernels the partition made for the values the epilogue stores (the OUTPUTs, the
 * REDUCE's temporary) are taken over: the first gets the matmul plan, the others a "fused"
 * plan that emits nothing (their buffers are written by the first).
 *
 * The variant can be forced with the environment variable TINYC_MATMUL=simt|mma|wgmma|gemv|tf32x3
 * (tf32wg: wgmma, whose fp32 form is the 3xTF32 one), the
 * tile with TINYC_MATMUL_TILE=BMxBNxBK[xSTAGES] (tests, benchmarks; with it, TINYC_WGMMA_PP=0|1
 * pins the cooperative or the pingpong wgmma schedule); mma is only proposed
 * where the target and the dtypes allow it, and a forced choice that matches no valid
 * candidate is ignored.  A configuration measured by `tinyc tune` for this device, shape
 * class and dtypes (driver/tune.c, sched/tuned.c) is chosen over the model's estimate.
 */
#ifndef TINYC_SCHED_MATMUL_H
#define TINYC_SCHED_MATMUL_H

#include "ir/evt.h"
#include "sched/schedule.h"
#include "sched/conv.h"

typedef enum tinyc_mm_variant {
	TINYC_MM_SIMT,		/* CUDA cores, synchronous shared tiles */
	TINYC_MM_MMA,		/* tensor cores: ldmatrix + mma.sync, cp.async pipeline */
	TINYC_MM_WGMMA,		/* Hopper: TMA + mbarrier ring, warp-specialised wgmma */
	TINYC_MM_GEMV,		/* small M (decode): B streamed once in 16-byte vectors,
				 * fp32 CUDA cores (sched/gemv.c, codegen/gemv.c) */
	TINYC_MM_TF32X3,	/* fp32 on tensor cores (sm_80+): operands split into tf32
				 * hi + lo, three mma.sync m16n8k8 .tf32 per step
				 * (codegen/tf32_tile.c) */
} tinyc_mm_variant;

/* tinyc_mm_problem.tma_ok bits. */
enum {
	TINYC_MM_TMA_A = 1,		/* A can be loaded by TMA */
	TINYC_MM_TMA_B = 2,		/* B can be loaded by TMA */
	TINYC_MM_SIZES_BOUND = 4,	/* M, N, K, L known at compile time */
};

/* One operand: A (rows m, cols k) or B (rows k, cols n). */
typedef struct tinyc_mm_operand {
	int node;			/* the array node read (BUFFER or a materialised value) */
	int buf;			/* its buffer: schedule / GPU module buffer index */
	tinyc_dtype dtype;		/* element type in memory */
	tinyc_evt_poly stride[3];	/* element strides along (row, col, l) */
	tinyc_evt_poly offset;		/* element offset of (0, 0, 0) */
	tinyc_mm_gather gather;		/* on: im2col addressing of (row, col) instead of
					 * stride[0..1] (a convolution's window, sched/conv.h) */
} tinyc_mm_operand;

/* What a matmul kernel computes. */
typedef struct tinyc_mm_problem {
	int reduce;			/* the contraction's REDUCE node (-1 for the C API) */
	tinyc_dim m, n, k, l;		/* extents ({1, -1} where a role is absent) */
	tinyc_mm_operand a, b;		/* A[m, k], B[k, n] */
	tinyc_dtype mul;		/* the MUL's dtype (16-bit: exact products in float) */
	tinyc_dtype acc;		/* accumulation dtype */
	tinyc_evt *evt;			/* the epilogue graph (owned); tensors' buf = buffer index */
	int tma_ok;			/* TINYC_MM_TMA_* bits: every size bound (wgmma needs it),
					 * operand A / B strides and origin 16-byte aligned (TMA) */
	int unit_axis;			/* the m or n axis is bound to extent 1 and was dropped
					 * (decode's M = 1): only the gemv template, else no
					 * matmul plan (a unit batch axis is no obstacle) */
} tinyc_mm_problem;

/* The two-stage fp32 SIMT tile (variant simt, stages 2; codegen/simt_tile.c): shared
 * A[2][bk][bm + PAD] (k-major: a thread's 4 rows are one 16-byte load) and
 * B[2][bk][bn + PAD]; its bytes. */
#define TINYC_SIMT_TILE_PAD 4
static inline int64_t tinyc_simt_tile_smem(int bm, int bn, int bk)
{
	return 2 * (int64_t)bk * (bm + bn + 2 * TINYC_SIMT_TILE_PAD) * 4;
}

/* Tiles and mapping of one candidate. */
typedef struct tinyc_mm_tiles {
	tinyc_mm_variant variant;	/* simt or mma */
	int bm, bn, bk;			/* CTA tile */
	int stages;			/* shared-memory ring depth (1: synchronous) */
	int threads;			/* threads per CTA */
	int tm, tn;			/* simt: accumulators per thread (rows x cols) */
	int warps_m, warps_n;		/* mma: warp grid; warp tile (bm/warps_m) x (bn/warps_n) */
	int async_a, async_b;		/* mma: operand loaded by cp.async 16-byte chunks */
	int pred_m, pred_n, pred_k;	/* tails: the axis needs predicates */
	int64_t smem;			/* bytes of shared memory (tiles + reduction scratch) */
	int regs;			/* estimated registers per thread */
	int ctas_per_sm;		/* occupancy estimate */
	tinyc_dtype index_dtype;	/* int or long index arithmetic */
	int dyn_smem;			/* mma: the tiles live in dynamic shared memory (> 48 KiB) */
	/* wgmma only */
	int consumers;			/* consumer warpgroups (each owns 64 rows of the tile) */
	int wgn;			/* N of one wgmma instruction (divides bn) */
	int a_kmajor, b_kmajor;		/* operand layouts: 1 k contiguous, 0 m (n) contiguous */
	int raster;			/* m tiles per rasterisation group (L2 reuse) */
	int pingpong;			/* the consumers alternate whole tiles (one's epilogue
					 * overlaps the other's main loop); else they split a tile */
	int a_tma, b_tma;		/* operand loaded by TMA; else by the producer warpgroup's
					 * threads (element loads into the swizzled layout) */
	int pack_a, pack_b;		/* operand whose rows TMA cannot load (not 16-byte
					 * aligned) first copied by a packing kernel into a
					 * workspace with rows padded to 16 bytes, then TMA */
	int a_nhwc;			/* A is a conv input rearranged channels-last first
					 * (sched/conv_nhwc.c) and gathered by the producer's
					 * threads in 16-byte cp.async chunks; B packed */
	tinyc_conv_nhwc nhwc;		/* a_nhwc: the rearranged input's shape */
	int grid;			/* persistent CTAs (<= SMs) */
	int cluster;			/* 2: clusters of 2 CTAs on consecutive m tiles of one n
					 * tile, each CTA loading half of the B stage by a TMA
					 * multicast to both (codegen/matmul.c); 0: none */
	int regs_producer, regs_consumer;	/* setmaxnreg per role */
	int no_stage;			/* 16-bit outputs not staged (options record: TINYC_NO_STAGE) */
	int no_pair;			/* no paired epilogue stores (options record: TINYC_NO_PAIR) */
	int pdl;			/* wgmma: programmatic dependent launch (options record:
					 * TINYC_PDL) */
	int wait_hint;			/* wgmma: the kernel's mbarrier wait hint in ns (options
					 * record: TINYC_WAIT_HINT), 0 none */
	int epi_preload;		/* wgmma: the epilogue's broadcast loads before the main
					 * loop (options record: TINYC_EPI_PRELOAD) */
	int tma_store;			/* wgmma: a staged 16-bit output leaves by TMA stores
					 * through this many 2 KB buffers per consumer warp (1, 2;
					 * options record: TINYC_TMA_STORE); 0: 16-byte stores */
	int tf32x3;			/* wgmma on fp32 operands: 3xTF32 (codegen/tf32_wgmma.c;
					 * K-major TMA operands, BK 32, lo stages beside the ring) */
	int split;			/* split-K (> 1): the tiles are those of the split problem
					 * (sched/splitk.c), whose fp32 partials a reduction kernel
					 * sums in order and then runs the epilogue; 0: none */
	int gemv_mma;			/* gemv: 0 the FMA form; 1 the tensor-core form
					 * (sched/gemv_mma.c: threads / 32 warps splitting K,
					 * mma.sync on W^T x X^T) reading X element by element,
					 * 2 the same reading X 4 k at a time (8-byte loads) */
	int split_fused;		/* split-K: 1 the matmul kernel's last warp of each tile
					 * sums the partials (codegen/splitk.c); 2 a tile's k
					 * ranges are the CTAs of a cluster, summed through
					 * distributed shared memory (codegen/splitk_dsmem.c);
					 * 0 a reduction kernel */
	int tail_split;			/* stream-K tail (> 1; wgmma, sched/splitk.c
					 * tinyc_streamk_tiles): the tail_tiles tiles past the
					 * last full round of the `grid` persistent CTAs are split
					 * along K into this many units each, whose fp32 partials
					 * the tile's last warp sums in k order before the
					 * epilogue (codegen/splitk.c); 0: none */
	int tail_tiles;			/* the tail's tiles (with clusters: pairs of tiles) */
	int swap;			/* wgmma: the tiles are those of the swapped problem
					 * C^T = B^T A^T (sched/swapab.c: m and n exchanged, the
					 * weight's columns on wgmma's rows, the tokens its N;
					 * split-K splits the problem first, then swaps); bm, bn,
					 * the tails and the operand layouts are the swapped
					 * problem's */
} tinyc_mm_tiles;

/* The width of the wgmma template's B stage: a fitted tile's bn (a multiple of 8 that is
 * not one of 64: sched/matmul.c fitted_bn) rounded up to whole 64-column TMA boxes of an
 * n-major B; else bn. */
static inline int tinyc_wgmma_stage_n(const tinyc_mm_tiles *t)
{
	return t->b_kmajor ? t->bn : (t->bn + 63) / 64 * 64;
}

/* sched/tf32wg.c: whether the wgmma 3xTF32 form rejects the tile (prob has fp32
 * operands): it takes 128 x {128, 64} x 32 tiles of 3 or 4 stages, cooperative, both
 * operands K-major and loaded by TMA as they are (no packing, no gather). */
int tinyc_tf32wg_rejects(const tinyc_mm_problem *prob, int bm, int bn, int bk, int stages,
			 int pingpong, int pack);

/* A MATMUL plan's ext. */
typedef struct tinyc_mm_plan {
	tinyc_mm_tiles t;		/* the candidate's tiles */
	double tuned_us;		/* measured by `tinyc tune` (tuning cache), 0 when not */
	tinyc_mm_problem prob;		/* the problem (evt owned) */
	int fused_into;			/* -1: this kernel runs the matmul; else the schedule kernel
					 * that writes this kernel's buffer */
	double flops, bytes;		/* the estimate's inputs */
	double t_compute_us, t_memory_us;	/* its two terms */
} tinyc_mm_plan;

/* The matmul provider (list it in plan.c's providers after the generic one): for the
 * first kernel of a schedule it analyses the graph (IndexBook, Poly-View, epilogue
 * extraction), takes over the kernels a fusable contraction covers and gives them MATMUL
 * candidates; for every kernel that has MATMUL candidates it drops the generic ones. */
extern const tinyc_plan_provider tinyc_plan_matmul;

/* Take over the kernels of s that contraction entry e covers and add their candidates;
 * pv is the module's Poly-View.  0 (also when nothing applies: then s is unchanged), or -1
 * on an internal error. */
struct tinyc_polyview;
int tinyc_matmul_fuse(tinyc_ctx *ctx, tinyc_schedule *s, const struct tinyc_polyview *pv,
		      const tinyc_evt_entry *e);

/* The candidate tilings of a problem on s's device: appended to k (descriptions, estimates;
 * each candidate's ext a tinyc_mm_plan with a copy of prob).  force: -1 any variant, else
 * only that one.  Returns the number added, or -1. */
int tinyc_matmul_candidates(tinyc_ctx *ctx, const tinyc_schedule *s, tinyc_skernel *k,
			    const tinyc_mm_problem *prob, int force);

/* Fill tiles t for (variant, bm, bn, bk, stages) and prob on device dev: threads, micro
 * tiles, cp.async use, shared memory, registers, occupancy, tails.  -1 when the
 * combination is not valid for the problem (dtypes, target, alignment). */
int tinyc_matmul_tiles(const tinyc_mm_problem *prob, const tinyc_device_info *dev,
		       const int64_t *sym, tinyc_mm_variant v, int bm, int bn, int bk, int stages,
		       tinyc_mm_tiles *t);

/* The packed layout of operand A (is_b 0) or B (is_b 1) of prob for tiles t (t->pack_a /
 * pack_b): the contiguous axis of the tile layout (k for a K-major operand, else m or n)
 * stride 1, the other padded to a multiple of 8 elements, the batch (when the operand
 * has one) after them; buf -1, offset 0.  sym: the bound sizes.  Returns the workspace's
 * elements, or -1 when a size is unbound. */
int64_t tinyc_matmul_packed_operand(const tinyc_mm_problem *prob, const tinyc_mm_tiles *t,
				    const int64_t *sym, int is_b, tinyc_mm_operand *out);

/* A new MATMUL plan for tiles t of prob (a copy) in *p (kind, block, index dtype, ext);
 * its estimate and description are the caller's.  The plan's ext, or NULL (OutOfMemory). */
tinyc_mm_plan *tinyc_matmul_plan_new(tinyc_ctx *ctx, const tinyc_mm_problem *prob,
				     const tinyc_mm_tiles *t, tinyc_plan *p);

/* The configuration key of a candidate ("wgmma 128x256x64 s4 c2 n256"), for tuning. */
void tinyc_matmul_config_key(const tinyc_mm_tiles *t, char *buf, size_t size);

/* Multi-line description of a chosen MATMUL plan for the schedule dump: tiles, stages,
 * binding, micro-tiles, tails, epilogue placement and reduction strategy (with its
 * determinism), the estimate.  Each line starts with two spaces. */
void tinyc_matmul_plan_print(const tinyc_schedule *s, const tinyc_plan *p, tinyc_buf *out);

/* ---- tuned.c: tuned configurations (the options record's tuning entries) ---- */

/* The shape class of prob on s: per size round(log2) and alignment (multiple of 128, of 8,
 * other), and the operand layouts, e.g. "M12a.N12a.K12a.L0a.kn".  -1 when a size is
 * unbound. */
int tinyc_tune_class(const tinyc_schedule *s, const tinyc_mm_problem *prob, char *buf,
		     size_t size);
/* The dtypes key of prob, "half.half.float" (A, B, accumulator). */
void tinyc_tune_dtypes(const tinyc_mm_problem *prob, char *buf, size_t size);
/* The entry of s->opt's tuning entries for prob's class and dtypes (the last one), or NULL. */
const tinyc_tune_entry *tinyc_tune_find(const tinyc_schedule *s, const tinyc_mm_problem *prob);
/* Among k's candidates from index `first`, mark the configuration the tuning entries name
 * as tuned (its tuned_us, an estimate below every other so that the choice takes it).
 * 0 (also when there is no entry) or -1. */
int tinyc_tune_apply(const tinyc_schedule *s, tinyc_skernel *k, int first);

/* ---- gemv.c: the small-M plan (variant gemv) ---- */

/* Whether prob fits the gemv template on s: every size bound, M <= 4, B half or bfloat16
 * stored n-contiguous with 16-byte aligned rows, N a multiple of 8, no epilogue reduction. */
int tinyc_gemv_applies(const tinyc_schedule *s, const tinyc_mm_problem *prob);
/* What both gemv forms need: M, N, K bound and at least 1, L bound in 1 .. 65535, fp32
 * accumulation, no gather, B stored n-contiguous with its rows, origin and batch stride
 * multiples of 8 elements and N a multiple of 8 (every 16-byte vector of 8 columns aligned
 * and wholly inside or outside the matrix), no epilogue reduction (the tile is summed once). */
int tinyc_gemv_b_fits(const tinyc_schedule *s, const tinyc_mm_problem *prob);
/* The CTAs per SM of gemv tiles t (t->threads, regs and smem against the SM's limits) and
 * their tails (pred_m, pred_n, pred_k: bm, bn, bk x stages); -1 when no CTA fits. */
int tinyc_gemv_occupancy(const tinyc_schedule *s, const tinyc_mm_problem *prob, tinyc_mm_tiles *t);
/* The share of DRAM bandwidth that gemv tiles t (either form) sustain over `ctas` CTAs
 * with inflight_thread bytes of loads in flight a thread (over the loaded-latency factor):
 * Little's law (tinyc_plan_inflight_eff) capped by the SMs in use, times the last wave's
 * fill and the use of the 128-byte lines of B's rows; *waves: the waves of CTAs. */
double tinyc_gemv_stream_eff(const tinyc_schedule *s, const tinyc_mm_problem *prob,
			     const tinyc_mm_tiles *t, double ctas, double inflight_thread, double *waves);
/* Tiles t of prob as a candidate of k: a new MATMUL plan, its estimate by `estimate`, its
 * description desc.  0 or -1. */
int tinyc_gemv_add(tinyc_ctx *ctx, const tinyc_schedule *s, tinyc_skernel *k,
		   const tinyc_mm_problem *prob, const tinyc_mm_tiles *t,
		   void (*estimate)(const tinyc_schedule *s, tinyc_mm_plan *mp, tinyc_plan *p),
		   const char *desc);
/* The value of a size polynomial under s's bindings, or -1. */
int64_t tinyc_sched_poly_value(const tinyc_schedule *s, const tinyc_evt_poly *p);
/* Fill t for gemv tiles of bn columns and `unroll` k rows in flight; -1 when not valid. */
int tinyc_gemv_tiles(const tinyc_schedule *s, const tinyc_mm_problem *prob, int bn, int unroll,
		     tinyc_mm_tiles *t);
/* Append prob's gemv candidates to k (index dtype idx; ft: the forced tile's bn and
 * stages, or NULL).  Returns the number added, or -1. */
int tinyc_gemv_candidates(tinyc_ctx *ctx, const tinyc_schedule *s, tinyc_skernel *k,
			  const tinyc_mm_problem *prob, tinyc_dtype idx, const int *ft);
/* Bytes of the epilogue's tensors each read or written once (vectors along a row or a
 * column, full M x N tensors, scalars), for L batches (the small-M plans' estimates). */
double tinyc_mm_epilogue_once_bytes(const tinyc_mm_problem *prob, double M, double N, double L);
/* The schedule dump's lines of a gemv plan after its tile line. */
void tinyc_gemv_plan_print(const tinyc_mm_tiles *t, tinyc_buf *out);

/* ---- gemv_mma.c: the tensor-core form of the gemv plan (variant gemv, gemv_mma) ---- */

/* Whether prob fits the tensor-core gemv on s: every size bound, M <= 32, half or
 * bfloat16 operands of one dtype with fp32 accumulation, sm_80+, B as the gemv plan wants
 * it (tinyc_gemv_b_fits). */
int tinyc_gemv_mma_applies(const tinyc_schedule *s, const tinyc_mm_problem *prob);
/* Fill t for a CTA of `warps` warps splitting K over a slab of bn (32 or 64) columns,
 * `unroll` 16-row k blocks per warp and step; -1 when not valid. */
int tinyc_gemv_mma_tiles(const tinyc_schedule *s, const tinyc_mm_problem *prob, int bn, int warps,
			 int unroll, tinyc_mm_tiles *t);
/* Append prob's tensor-core gemv candidates to k (index dtype idx; ft: the forced tile's
 * bn, bk = 16 x warps and stages = unroll, 0 fields any; or NULL).  The number added, or
 * -1. */
int tinyc_gemv_mma_candidates(tinyc_ctx *ctx, const tinyc_schedule *s, tinyc_skernel *k,
			      const tinyc_mm_problem *prob, tinyc_dtype idx, const int *ft);
/* The schedule dump's lines of a tensor-core gemv plan after its tile line. */
void tinyc_gemv_mma_plan_print(const tinyc_mm_tiles *t, tinyc_buf *out);
/* The token rows of the tensor-core gemv's mma tiles (and the wgmma N of the swap-AB
 * tiles, sched/swapab.c): M rounded up to 8. */
int tinyc_gemv_mma_tokens(int64_t M);

/* ---- splitk.c: split-K for few-tile shapes ---- */

/* The split problem of prob (L = 1, bound sizes, no gather, K a multiple of split * 64):
 * K / split per batch element l < split (A and B offset by l * K / split along k), the
 * epilogue an fp32 store of the accumulator into workspace buffer ws_buf at (m, n, l)
 * (strides N, 1, M * N).  0; -1 when prob cannot be split so (no diagnostic); -2 on an
 * error (diagnostic). */
int tinyc_splitk_problem(tinyc_ctx *ctx, const tinyc_mm_problem *prob, const int64_t *sym,
			 int split, int ws_buf, tinyc_mm_problem *out);
/* Microseconds of the reduction of a split-K plan with tiles t: a reduction kernel (the
 * partials read once, the epilogue's tensors, a launch) or, tinyc_splitk_fused, the last
 * warps' sums in the matmul kernel (the partials read from L2, a serial tail). */
double tinyc_splitk_reduce_us(const tinyc_schedule *s, const tinyc_mm_problem *prob,
			      const tinyc_mm_tiles *t);
/* Whether split-K tiles t sum their partials in the matmul kernel (the mma and wgmma
 * templates: per-warp arrival counters, the last warp of a tile sums in l order) rather
 * than in a reduction kernel. */
int tinyc_splitk_fused(const tinyc_mm_tiles *t);
/* Split-K over a cluster (tiles.split_fused = 2, codegen/splitk_dsmem.c): t (wgmma tiles
 * of the split problem of `split`) made so when they allow it (one 64-row consumer
 * warpgroup, TMA operands, one tile a CTA: the split problem's tiles at most the SMs, a
 * cluster of `split` <= 8 CTAs), with the partials' buffer in shared memory.  0, or -1
 * where they do not. */
int tinyc_splitk_dsmem_tiles(const tinyc_device_info *dev, double smem_limit, int split,
			     tinyc_mm_tiles *t);
/* Whether split-K candidates are worth proposing for prob: every size bound, L = 1, no
 * epilogue reduction, at most half the SMs' count of 64 x 128 tiles, K a multiple of 128
 * and at least 1024. */
int tinyc_splitk_wanted(const tinyc_schedule *s, const tinyc_mm_problem *prob);

/* The stream-K tail of the persistent wgmma kernel (the options record's wgmma_streamk):
 * the tiles t->grid CTAs walk (clusters: pairs of m tiles, grid / 2 walkers) fill R full
 * rounds and a last one of T < walkers tiles; those T are split along K into s units each
 * (k tiles [p kt / s, (p + 1) kt / s) of unit p), walked after the R rounds.  The model
 * (wgmma_streamk 1) takes the s in 2..8 with at least 4 k tiles a unit that minimises the
 * tail's rounds ceil(T s / walkers) * ceil(kt / s) (k tiles), where the last round is at
 * most half full and that beats kt; a forced split (>= 2) takes it wherever kt >= s and
 * the tiles have a tail, on the forced grid if any.  For wgmma tiles without 3xTF32, NHWC
 * gathers or split-K, L = 1.  0 and t->tail_split, tail_tiles (and grid) set, or -1. */
int tinyc_streamk_tiles(const tinyc_schedule *s, const tinyc_mm_problem *prob, tinyc_mm_tiles *t);
/* The persistent rounds of stream-K tiles t (in whole tiles' k loops): R + ceil(T s /
 * walkers) * ceil(kt / s) / kt, kt the k tiles of a tile (bound sizes of prob on s). */
double tinyc_streamk_rounds(const tinyc_schedule *s, const tinyc_mm_problem *prob,
			    const tinyc_mm_tiles *t);
/* Microseconds the tail of stream-K tiles t adds: every unit's fp32 partial tile stored,
 * the s - 1 others loaded by the tile's last warps (L2, at the share of the SMs the tail
 * keeps busy), and a fix-up latency (fence, counter, dependent loads). */
double tinyc_streamk_fixup_us(const tinyc_schedule *s, const tinyc_mm_tiles *t);
/* The schedule dump's line of stream-K tiles t (prob's bound sizes on s). */
void tinyc_streamk_print(const tinyc_schedule *s, const tinyc_mm_problem *prob,
			 const tinyc_mm_tiles *t, tinyc_buf *out);
/* ---- swapab.c: swapped-operand wgmma plans for small M (tiles.swap) ---- */

/* The swapped problem of prob: C^T[n, m] = sum_k B^T[n, k] A^T[k, m], i.e. m and n
 * exchanged, A' = B transposed (strides (B's n, B's k, l)), B' = A transposed, the TMA
 * bits exchanged, and in the epilogue graph every tensor's m and n strides exchanged
 * with row and column broadcasts (and reductions) exchanged: a pure data transformation,
 * every index the templates and the epilogue emission compute follows from the strides.
 * A unit axis of zero stride (decode's M = 1 dropped) gets the stride of a K-long row
 * (padded to 8 elements: TMA's strides), never used (its only index is 0).  sym: the bound
 * sizes.  0; -1 when prob cannot be swapped (a gathered operand); -2 on an error. */
int tinyc_mm_problem_swap(tinyc_ctx *ctx, const tinyc_mm_problem *prob, const int64_t *sym,
			  tinyc_mm_problem *out);
/* Whether prob (its tma_ok bits set) takes the swapped wgmma plans on s: sm_90a, every
 * size bound, 1 <= M <= 32 < N, L = 1, half or bfloat16 operands with fp32 accumulation,
 * both operands TMA-loadable as they are, no epilogue reduction. */
int tinyc_swapab_applies(const tinyc_schedule *s, const tinyc_mm_problem *prob);
/* The pipeline factor of swapped tiles t (their estimate, sched/matmul.c) over ktiles k
 * tiles: the SM's one CTA keeps its ring's stages in flight (Little's law against the
 * DRAM latency under load). */
double tinyc_swapab_pipe(const tinyc_schedule *s, const tinyc_mm_tiles *t, double ktiles);
/* The schedule dump's line of a swapped plan (after its tile line). */
void tinyc_swapab_plan_print(const tinyc_mm_tiles *t, tinyc_buf *out);

/* Copy / free a problem (deep: the evt graph). */
int tinyc_mm_problem_copy(tinyc_ctx *ctx, const tinyc_mm_problem *src, tinyc_mm_problem *dst);
void tinyc_mm_problem_clear(tinyc_mm_problem *p);
/* ext_free of MATMUL plans. */
void tinyc_mm_plan_free(void *ext);

#endif
