/* codegen/ (contraction part): a MATMUL plan -> GPU IR kernels.
 *
 *   matmul.c    the tiled templates of sched/matmul.h as GPU IR: the synchronous SIMT
 *               template (shared tiles, cooperative coalesced predicated loads, barrier,
 *               k loop, TM x TN fp32 accumulators per thread), the tensor-core template
 *               (ldmatrix + mma.sync m16n8k16, cp.async multi-stage ring; the batch is
 *               blockIdx.z) and the Hopper template (TMA / copying producer warpgroup,
 *               mbarrier ring, wgmma consumers, persistent tiles).  Then the epilogue,
 *               then one final-pass kernel per reduction.
 *   simt_tile.c the two-stage fp32 SIMT tile (128x128x16, 8x8 micro-tiles in 4x4 quarters,
 *               A k-major in shared memory, register prefetch of the next k tile); its k
 *               loop and operand movement are shared with
 *   tf32_tile.c the 3xTF32 tile: fp32 on tensor cores, fragments split into tf32 hi + lo,
 *               three mma.sync m16n8k8 .tf32 per step.
 *   evt_emit.c  the epilogue graph on the accumulator fragment in registers: broadcast
 *               vectors and scalars loaded once per thread (vector loads where contiguous
 *               and aligned), every node computed once into a register in the visit
 *               order, one predicated global write per stored element, reductions
 *               thread -> warp shuffle -> shared memory -> per-CTA workspace partials ->
 *               a final pass that combines them in tile order (deterministic).
 *
 * Stores of 16-bit outputs go two columns at a time (4 bytes) where the layout allows, and
 * in the wgmma template through per-warp shared buffers as coalesced 16-byte stores; the
 * environment variables TINYC_NO_PAIR and TINYC_NO_STAGE switch these off (diagnostics).
 *
 * Both templates describe their accumulator layout to the epilogue with a tinyc_mm_frag:
 * each thread holds tr x tc values, value (a, b) at tile row row(a) and tile column col(b),
 * so the epilogue and its reductions are written once for both.
 */
#ifndef TINYC_CODEGEN_MATMUL_H
#define TINYC_CODEGEN_MATMUL_H

#include "ir/gpuir.h"
#include "lower/lower.h"
#include "sched/matmul.h"

/* The GPU IR builder of MATMUL plans (register it in gpuir_pass.c's builders table):
 * kernel `kernel` of s.  A "fused" plan emits nothing (its buffer is written by the kernel
 * named in its plan).  0 or -1. */
int tinyc_matmul_build(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_schedule *s,
		       const tinyc_indexbook *ib, int kernel);

/* The C API: emit the kernels of prob with tiles t into gm: the matmul kernel `name`, then
 * one final-pass kernel per reduction of the epilogue (their workspaces are added to gm as
 * TEMP buffers).  prob's operands and every tensor of prob->evt name buffers of gm (buf =
 * index in gm->bufs); sizes are gm's symbols (tinyc_gpu_set_symbols) or constants; the
 * epilogue graph must have passed tinyc_evt_run_passes.  0 or -1 with a diagnostic. */
int tinyc_matmul_emit(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_mm_problem *prob,
		      const tinyc_mm_tiles *t, const char *name);

/* ------------------------------------------------ shared by matmul.c and evt_emit.c ---- */

/* The accumulator layout over the threads of a CTA. */
typedef struct tinyc_mm_frag {
	int tr, tc;			/* values per thread: rows x columns */
	int row_run, col_run;		/* consecutive a (b) with consecutive rows (columns) */
	tinyc_gexpr *row_base;		/* tile row of value a = row_base + row_off(a) */
	tinyc_gexpr *col_base;		/* tile column of value b = col_base + col_off(b) */
	int row_off[64];		/* per a: offset from row_base */
	int col_off[64];		/* per b: offset from col_base */
	int mma;			/* 1: mma fragment indexing, 0: a * tc + b */
	int ni;				/* mma: n-tiles per warp */
	int row_xor[5], nrow_xor;	/* lane masks joining lanes that share columns */
	int col_xor[5], ncol_xor;	/* lane masks joining lanes that share rows */
	tinyc_gexpr *row_lead;		/* this lane holds its warp's column partials */
	tinyc_gexpr *col_lead;		/* this lane holds its warp's row partials */
	int groups_m;			/* warp groups holding partials of the same columns */
	tinyc_gexpr *group_m;		/* this thread's group */
	int groups_n;			/* warp groups holding partials of the same rows */
	tinyc_gexpr *group_n;
	int pair_stores;		/* 16-bit stores of columns (2j, 2j+1) may be one 4-byte
					 * store where the layout allows (evt_emit.c) */
	/* staged stores (evt_emit.c): each warp owns slabs of 16 rows, value a at row
	 * warp_row0 + (a / 2) * stage_stride + (a % 2) * 8 + lane_row and columns as above
	 * (col_base = 2 * (lane % 4)); a 16-bit output is then written through a per-warp
	 * shared buffer, 64 columns at a time, as coalesced 16-byte stores */
	int stage;			/* staged stores allowed */
	tinyc_gexpr *lane_row;		/* the lane's row in an 8-row half (lane / 4) */
	tinyc_gexpr *warp_row0;		/* tile row of the warp's first slab */
	int stage_stride;		/* rows between the slabs of a / 2 and a / 2 + 1 */
	tinyc_gexpr *stage_warp;	/* the warp's staging buffer, 0 .. stage_warps - 1 */
	int stage_warps;		/* warps that run the epilogue */
	int hoist;			/* the prelude (coordinates, broadcast and scalar loads)
					 * inserted into the epilogue's block at index hoist_at
					 * (before the main loop: its loads overlap it) */
	int hoist_at;
	int tma_bufs;			/* > 0: an aligned staged output leaves by TMA stores of
					 * whole 16 x 64 slabs, through this many 2 KB buffers a
					 * warp (128-byte swizzled, 1024-byte aligned); the
					 * kernel ends with a bulk wait (tinyc_mmk.bulk) */
} tinyc_mm_frag;

/* The state of building one matmul kernel. */
typedef struct tinyc_mmk {
	tinyc_ctx *ctx;			/* diagnostics */
	tinyc_gpu_module *gm;		/* the module */
	tinyc_gkernel *k;		/* the matmul kernel */
	const tinyc_mm_problem *prob;	/* what it computes */
	const tinyc_mm_tiles *t;	/* how */
	tinyc_dtype it;			/* index dtype */
	int *param;			/* per module buffer: its PARAM_PTR, or -1 */
	int nparam_cap;			/* entries of param */
	tinyc_gexpr *M, *N, *K;		/* extents (index dtype) */
	tinyc_gexpr *m0, *n0, *l;	/* tile origin and batch index */
	tinyc_gexpr *tid, *lane, *warp;	/* thread coordinates (index dtype) */
	int threads;			/* threads per CTA */
	int acc;			/* the accumulator REG_ARRAY (prob->acc) */
	int *ws;			/* per epilogue node: workspace buffer of a reduction, or -1 */
	int error;			/* something failed (diagnostic reported) */
	int bulk;			/* the epilogue issued TMA stores: each warp's lane 0
					 * must wait for them before the kernel ends */
	const struct tinyc_sk_fix *fix;	/* split-K summed in this kernel (codegen/splitk.c), or
					 * NULL */
} tinyc_mmk;

/* A split-K plan whose partials the kernel itself sums (codegen/splitk.c): the kernel
 * computes the split problem (batch l = the k range) and stores its fp32 partials; each
 * warp then counts its arrival on its tile's counter, and the warp that arrives last sums
 * the `split` partials of its fragment in l order and runs the whole problem's epilogue. */
typedef struct tinyc_sk_fix {
	const tinyc_mm_problem *whole;	/* the unsplit problem (its epilogue graph) */
	int ws;				/* the partials' buffer, fp32 [split, M, N] */
	int cnt;			/* the arrival counters, int [tiles x warps per tile], zero
					 * between launches (the last warp resets its counter) */
	int split;			/* partials per element */
	int64_t M, N;			/* bound sizes */
	int dsmem;			/* 1: no workspace, no counters: the split CTAs of a tile
					 * form a cluster and sum through distributed shared
					 * memory (codegen/splitk_dsmem.c) */
	int tail_tiles;			/* > 0: a stream-K tail (tiles.tail_split; whole is the
					 * kernel's own problem): the kernel walks whole tiles,
					 * then these tiles (clusters: pairs) in `split` k ranges
					 * each; ws holds [tiles x CTAs a pair][split][the tile's
					 * warps][accumulators][32 lanes] partials, cnt a counter
					 * per tile slot and warp (tinyc_streamk_epilogue) */
} tinyc_sk_fix;

/* Start a matmul kernel (grid over n, m, l tiles; block (16, 16) for SIMT, else
 * t->threads): tile origin b->m0, b->n0, b->l, b->lane, b->warp, the accumulator array of
 * acc_count elements at zero.  The kernel (b->error set on failure), or NULL. */
tinyc_gkernel *tinyc_mmk_begin(tinyc_mmk *b, const char *name, int acc_count);
/* tinyc_mmk_begin for a 1-D block of warps (warps_m x warps_n): then b->tid, the warp's
 * place *wm, *wn and the lane's place in an mma fragment *g = lane / 4, *t4 = lane % 4. */
tinyc_gkernel *tinyc_mmk_begin_warps(tinyc_mmk *b, const char *name, int acc_count, tinyc_gexpr **wm,
				     tinyc_gexpr **wn, tinyc_gexpr **g, tinyc_gexpr **t4);
/* The element offset of (row, col) of operand op (rows m or k, columns k or n). */
tinyc_gexpr *tinyc_mmk_op_addr(tinyc_mmk *b, const tinyc_mm_operand *op, tinyc_gexpr *row,
			       tinyc_gexpr *col);
/* The lanes of a SIMT fragment over block (16, 16), tid = ty * 16 + tx: shuffle masks,
 * lead lanes, warp groups of its reductions (the rows and columns are the caller's). */
void tinyc_mmk_simt_lanes(tinyc_mmk *b, tinyc_mm_frag *f, tinyc_gexpr *tx);
/* codegen/simt_tile.c: the two-stage fp32 SIMT tile (variant simt, stages 2).  0 or -1. */
int tinyc_simt_tile_build(tinyc_mmk *b, const char *name);

/* One operand's tile movement through registers into shared memory (codegen/simt_tile.c,
 * 256 threads): rows x cols of op (A: m x k, B: k x n). */
typedef struct tinyc_mm_tile_io {
	const tinyc_mm_operand *op;	/* the operand */
	int rows, cols;		/* tile extent */
	int kmajor_store;	/* 1: shared index col * ld + row, 0: row * ld + col */
	int ld;			/* shared row length */
	int sh;			/* the shared array */
	int reg;		/* the staging register array (rows * cols / 256) */
	tinyc_gexpr *R, *C;	/* extents for the tail tests */
	int pr, pc;		/* rows / columns need the tail test */
	int vec;		/* 16-byte loads of 4 elements along the contiguous axis */
} tinyc_mm_tile_io;
/* io for operand A (is_b 0) or B of b's problem and tiles: tails, vector loads. */
void tinyc_mm_tile_io_init(tinyc_mmk *b, tinyc_mm_tile_io *io, int is_b, int rows, int cols,
			   int kmajor_store, int ld, int sh, int reg);
/* Load the thread's elements of the tile at (row0, col0) into io->reg (zero outside, and
 * everywhere when `live` (NULL: true) is false); store them into stage st of io->sh. */
void tinyc_mm_tile_load(tinyc_mmk *b, tinyc_gstmt *blk, const tinyc_mm_tile_io *io, tinyc_gexpr *row0,
			tinyc_gexpr *col0, tinyc_gexpr *live);
void tinyc_mm_tile_store(tinyc_mmk *b, tinyc_gstmt *blk, const tinyc_mm_tile_io *io, tinyc_gexpr *st);
/* The k-loop body on shared stage st (appended to blk). */
typedef void (*tinyc_mm_stage_fn)(tinyc_mmk *b, tinyc_gstmt *blk, tinyc_gexpr *st, void *arg);
/* The two-stage k loop (k-step ia->cols): tile 0 into stage 0, then per k tile the next
 * tile's loads into registers, compute(stage), their stores into the other stage, one
 * barrier.  0 or -1. */
int tinyc_mm_two_stage_loop(tinyc_mmk *b, tinyc_gstmt *body, const tinyc_mm_tile_io *ia,
			    const tinyc_mm_tile_io *ib, tinyc_mm_stage_fn compute, void *arg);
/* codegen/tf32_tile.c: the 3xTF32 tensor-core tile for fp32 (variant tf32x3).  0 or -1. */
int tinyc_tf32_tile_build(tinyc_mmk *b, const char *name);
/* hi[dst] = tf32(raw[src]), lo[dst] = tf32(raw[src] - hi[dst]) on register arrays
 * (round to nearest, ties away; appended to blk). */
void tinyc_tf32_split_mmk(tinyc_mmk *b, tinyc_gstmt *blk, int raw, int src, int hi, int lo, int dst);
/* The accumulator fragment of mma m16n8 tiles: warp (wm, wn) of a warp tile WM x WN, mi x
 * ni fragments, lane (g, t4) (codegen/matmul.c). */
void tinyc_mm_frag_mma(tinyc_mmk *b, tinyc_mm_frag *f, tinyc_gexpr *wm, tinyc_gexpr *wn,
		       tinyc_gexpr *g, tinyc_gexpr *t4, int WM, int WN);
/* A register initialised to v, declared in block; its value. */
tinyc_gexpr *tinyc_mmk_let(tinyc_mmk *b, tinyc_gstmt *block, const char *name, tinyc_gexpr *v);
/* codegen/splitk.c: a split-K plan (t->split > 1): a workspace, the split problem's
 * kernels through tinyc_matmul_emit, then either the reduction kernel NAME_sk that sums the
 * partials in order and runs prob's epilogue, or (tinyc_splitk_fused) the same done by
 * the last warp of each tile in the matmul kernel.  0 or -1. */
int tinyc_splitk_emit(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_mm_problem *prob,
		      const tinyc_mm_tiles *t, const char *name);
/* Warps of one tile that hold disjoint parts of it (one arrival counter each). */
int tinyc_splitk_tile_warps(const tinyc_mm_tiles *t);
/* After the split problem's epilogue (the partials stored from fragment f), in body: the
 * arrival of the warp (warp_in_tile of the tile's tinyc_splitk_tile_warps) and, for the
 * last, the sum of the partials and b->fix->whole's epilogue.  0 or -1. */
int tinyc_splitk_fixup(tinyc_mmk *b, const tinyc_mm_frag *f, tinyc_gstmt *body,
		       tinyc_gexpr *warp_in_tile);
/* codegen/splitk.c: a wgmma plan with a stream-K tail (t->tail_split > 1): the partials'
 * workspace and the counters, then the kernel through tinyc_matmul_emit_fixed.  0 or -1. */
int tinyc_streamk_emit(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_mm_problem *prob,
		       const tinyc_mm_tiles *t, const char *name);
/* codegen/splitk.c: the epilogue of a stream-K kernel's unit on fragment f (appended to
 * body; b->fix->tail_tiles > 0): when `tail` (bool, CTA-uniform) the unit's fp32
 * accumulators go to its k range `part` of workspace slot `slot` (the thread's values at
 * consecutive warps' lanes: coalesced), the warp (warp_in_tile) counts its arrival, and the
 * last of the slot's `split` sums the partials in k order (its own from its registers)
 * into its accumulators; then whole tiles and those last warps run the epilogue graph.
 * 0 or -1. */
int tinyc_streamk_epilogue(tinyc_mmk *b, const tinyc_mm_frag *f, tinyc_gstmt *body,
			   tinyc_gexpr *tail, tinyc_gexpr *slot, tinyc_gexpr *part,
			   tinyc_gexpr *warp_in_tile);
/* codegen/splitk_dsmem.c: split-K over a cluster (b->fix->dsmem; the wgmma template, one
 * consumer warpgroup, one tile per CTA, the CTA of cluster rank r the k range r): after
 * the main loop (fragment f, appended to body) the accumulators go to shared memory; after
 * a cluster barrier each CTA sums its 1 / split of the tile's columns over the cluster's
 * CTAs in rank order (distributed shared memory) and runs b->fix->whole's epilogue on
 * them; a second cluster barrier keeps every CTA's shared memory until its peers read
 * it.  0 or -1. */
int tinyc_splitk_dsmem(tinyc_mmk *b, const tinyc_mm_frag *f, tinyc_gstmt *body);
/* The cluster barrier statement of the other threads of such a kernel (the producer's), as
 * many as tinyc_splitk_dsmem's: appended to body. */
void tinyc_splitk_dsmem_barriers(tinyc_mmk *b, tinyc_gstmt *body);
/* b->fix->whole's epilogue graph (no batch: l = 0) on fragment f, appended to body.  0 or
 * -1. */
int tinyc_splitk_whole_epilogue(tinyc_mmk *b, const tinyc_mm_frag *f, tinyc_gstmt *body);
/* tinyc_matmul_emit of a split problem whose kernel sums its partials (fix). */
int tinyc_matmul_emit_fixed(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_mm_problem *prob,
			    const tinyc_mm_tiles *t, const char *name, const tinyc_sk_fix *fix);
/* A TEMP buffer of gm (a workspace) of elems elements; its index or -1. */
int tinyc_mm_add_temp(tinyc_gpu_module *gm, const char *name, tinyc_dtype dt, int64_t elems);
/* codegen/gemv.c: the fragment of a tile summed into registers one column per thread:
 * tr values, at rows row_base + a * rows (a < tr) of column col_base (no reductions). */
void tinyc_mm_frag_column(tinyc_mmk *b, tinyc_mm_frag *f, int tr, int rows,
			  tinyc_gexpr *row_base, tinyc_gexpr *col_base);
/* codegen/gemv.c: the body of a gemv plan's kernel (variant gemv, the FMA form). 0 or -1. */
int tinyc_gemv_build(tinyc_mmk *b, const char *name);
/* codegen/gemv_mma.c: the body of a gemv plan's kernel in the tensor-core form (variant
 * gemv, t->gemv_mma). 0 or -1. */
int tinyc_gemv_mma_build(tinyc_mmk *b, const char *name);

/* The steps of a gemv kernel's pipelined k loop (codegen/gemv.c, codegen/gemv_mma.c): a
 * step covers `rows` k rows of B; loads() issues the step at k0 into half h of the
 * kernel's two-half register ring, products() consumes half h; pk: the step's rows may
 * cross K (predicate them, zero past K).  Both append to blk; arg is the kernel's. */
typedef struct tinyc_gemv_steps {
	void (*loads)(tinyc_mmk *b, tinyc_gstmt *blk, int h, tinyc_gexpr *k0, int pk, void *arg);
	void (*products)(tinyc_mmk *b, tinyc_gstmt *blk, int h, tinyc_gexpr *k0, int pk, void *arg);
	void *arg;		/* the kernel's registers */
	int64_t rows;		/* k rows of one step (S) */
	int unroll;		/* the main loop's unroll hint (GPU IR FOR: 0 the compiler's
				 * choice, 1 not unrolled: nvcc unrolled a 3-trip loop into
				 * straight-line code in which ptxas issued each load just
				 * before its use) */
} tinyc_gemv_steps;
/* codegen/gemv.c: the k loop, software-pipelined over the two halves of the ring: the next
 * step's loads are issued before the current step's products, so a step's loads stay in
 * flight while the thread multiplies (an unpipelined loop drains them every step).
 *
 *   loads(0, 0)
 *   for k0 = 0; k0 < K; k0 += 2S:  loads(1, k0 + S); products(0, k0);
 *                                  loads(0, k0 + 2S); products(1, k0 + S)
 *
 * The trips whose rows all lie below K (k0 + 3S <= K) run without k predicates (their
 * loads are not branches).  With K bound, the 1 to 3 steps left are unrolled, predicated
 * only where their rows cross K (a trip's prefetch of the step past K is dropped: H100,
 * K = 4 S, the predicated trip was half the loop); else a predicated loop runs them.
 * k0v: the loop's register. */
void tinyc_gemv_k_loop(tinyc_mmk *b, tinyc_gstmt *body, int k0v, const tinyc_gemv_steps *st);
/* codegen/gemv.c: the shared array of the warps' fp32 partial tiles, [warps][rows][t->bn]
 * (dynamic shared memory past 48 KiB); its variable, or -1 (b->error set). */
int tinyc_gemv_red(tinyc_mmk *b, int64_t rows);
/* codegen/gemv.c: after every warp stored its partial tile in red (rows_red rows a warp,
 * rows t->bm and above unread, rows past M zero below t->bm): a barrier, each thread's
 * t->bm / (threads / bn) values of column tid % bn summed over the warps in warp order
 * (deterministic) into b->acc, then the epilogue graph on that column fragment (appended
 * to body).  0 or -1. */
int tinyc_gemv_sum_epilogue(tinyc_mmk *b, tinyc_gstmt *body, int red, int64_t rows_red);
/* The value of a dim under gm's compile-time bindings, or -1 (codegen/matmul.c). */
int64_t tinyc_mmk_bound(const tinyc_gpu_module *gm, const tinyc_dim *d);

/* The accumulator element of value (a, b) (a constant index). */
int tinyc_mm_frag_acc(const tinyc_mm_frag *f, int a, int b);
/* The index expression of a polynomial of size symbols / of a dim. */
tinyc_gexpr *tinyc_mmk_poly(tinyc_mmk *b, const tinyc_evt_poly *p);
tinyc_gexpr *tinyc_mmk_dim(tinyc_mmk *b, const tinyc_dim *d);
/* The tensor map (128-byte swizzle, boxes of 64 columns x `box_rows` rows (x 1 batch))
 * of a 16-bit M x N output of layout lay in module buffer buf, for TMA stores; the
 * variable, or -1 (b->error set). */
int tinyc_mmk_out_tmap(tinyc_mmk *b, int buf, tinyc_dtype dt, const tinyc_evt_layout *lay,
		       int box_rows, int batched);
/* The PARAM_PTR of module buffer buf (created on first use; const unless written). */
int tinyc_mmk_param(tinyc_mmk *b, int buf, int written);
/* Append s to block (records a failure in b->error). */
void tinyc_mmk_append(tinyc_mmk *b, tinyc_gstmt *block, tinyc_gstmt *s);

/* codegen/conv.c: the axes of coordinate x (extents ext[0..n), outer first) into out[]:
 * axis i is x / (ext[i+1] * .. * ext[n-1]) % ext[i] (no remainder for the outermost). */
void tinyc_conv_split(tinyc_gkernel *k, tinyc_dtype it, tinyc_gexpr *x, const int64_t *ext, int n,
		      tinyc_gexpr **out);
/* codegen/conv.c: the element offset of (row, col) of gathered operand op (im2col, see
 * sched/conv.h); *guard: the window's predicate (NULL: none). */
tinyc_gexpr *tinyc_conv_addr(tinyc_mmk *b, const tinyc_mm_operand *op, tinyc_gexpr *row,
			     tinyc_gexpr *col, tinyc_gexpr **guard);

/* codegen/conv.c: the kernel "NAME_nhwc" (appended to gm, *kernel) that copies the NCHW
 * input of operand op (a conv's gathered A) into a new TEMP workspace x'[l][p][c]
 * (sched/conv.h, tinyc_conv_nhwc): per block a tile of 64 pixels x up to 64 channels
 * through shared memory, loads along the pixels, 16-byte stores along the channels; its
 * code runs in the blocks below its grid, so that more blocks may be added for other
 * work (the weight's packing).  The workspace's buffer index, or -1 with a diagnostic. */
int tinyc_conv_nhwc_emit(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_mm_operand *op,
			 const tinyc_conv_nhwc *nh, const char *name, tinyc_gkernel **kernel);

/* codegen/conv.c: the copy of A's k tile (K-major, BM rows of 64 k) from the channels-last
 * copy of a conv's input (t->a_nhwc) into shared array sh at element base: 8 consecutive
 * k of a row are 8 channels of one input pixel, one 16-byte cp.async each, zero-filled
 * where the window's guards (which do not involve the channels) or the tails fail.
 * Thread ptid takes chunk ptid % 8 of rows ptid / 8 + 16 j, at chunk (ptid % 8) ^ (row %
 * 8) of the 128-byte-swizzled row.  The rows' addresses and guard terms are computed once
 * per tile (appended to ptile, whose m0 and l are b's), the columns' once per k tile, the
 * copies appended to blk.  0 or -1. */
int tinyc_conv_cp16(tinyc_mmk *b, tinyc_gstmt *ptile, tinyc_gstmt *blk, int sh, tinyc_gexpr *base,
		    tinyc_gexpr *m0, tinyc_gexpr *k0, tinyc_gexpr *ptid);

/* The epilogue: append to `body` (after the k loop) the code that applies prob->evt to
 * the accumulator fragment f, including the in-CTA part of the reductions; workspaces are
 * created in b->gm and recorded in b->ws.  0 or -1. */
int tinyc_evt_emit_epilogue(tinyc_mmk *b, const tinyc_mm_frag *f, tinyc_gstmt *body);
/* The final-pass kernels of the reductions (after the matmul kernel, in launch order). */
int tinyc_evt_emit_final_passes(tinyc_mmk *b, const char *name);

#endif
