/* The compile options record: everything besides the graph and its bindings that decides
 * the schedule and the code.  The driver resolves it once per compilation
 * (driver/options.c: the device's properties or the --target's, the tuning cache entries
 * of that device, the knobs it reads from the environment) and hands it to the schedule
 * pass; the schedule keeps a copy (tinyc_schedule.opt) that the code generators read.  The
 * passes read no environment and open no device themselves, so the same graph and record
 * always give the same CUDA.
 */
#ifndef TINYC_SCHED_OPTIONS_H
#define TINYC_SCHED_OPTIONS_H

#include "ir/target.h"

/* One tuning cache entry: the configuration `tinyc tune` measured fastest for a shape
 * class and dtypes on the record's device (driver/tune.c reads and writes the file). */
typedef struct tinyc_tune_entry {
	char cls[96];		/* shape class (tinyc_tune_class) */
	char dtypes[64];	/* "half.half.float" (tinyc_tune_dtypes) */
	char config[160];	/* the candidate's key (tinyc_matmul_config_key) */
	double us;		/* its measured time, microseconds */
} tinyc_tune_entry;

/* The record.  The knobs are diagnostics and pins for tests and measurements; each says
 * which environment variable the driver fills it from (driver/options.c). */
typedef struct tinyc_sched_options {
	tinyc_device_info dev;		/* the device planned for */
	const char *dev_origin;		/* "--target", "driver", or "default target (...)" */
	const tinyc_tune_entry *tune;	/* tuning entries of dev (kept; NULL: none) */
	int ntune;			/* entries in tune */
	int tune_off;			/* TINYC_TUNE=0: the tuning cache is not read */
	const char *matmul;		/* TINYC_MATMUL: "simt", "mma", "wgmma", "gemv", "tf32x3",
					 * "tf32wg" (wgmma: its fp32 form is 3xTF32)
					 * forces the contraction template; NULL: the cost
					 * model chooses */
	int tile[5];			/* TINYC_MATMUL_TILE=BMxBNxBK[xSTAGES[xSPLIT]]: the only
					 * tile kept (all 0: none forced; a 0 field: any, except
					 * tile[4] = 0: no split-K) */
	int wgmma_n;			/* TINYC_WGMMA_N: wgmma instruction N (0: the tile's) */
	int wgmma_raster;		/* TINYC_WGMMA_RASTER: m tiles per raster group (0: model) */
	int wgmma_pp;			/* TINYC_WGMMA_PP: with a forced tile, only pingpong (1)
					 * or cooperative (0) schedules; -1: both */
	int wgmma_pack;			/* TINYC_WGMMA_PACK: with a forced tile, only packing (1),
					 * copying (0) or NHWC conv (2) operands; -1: any */
	int wgmma_cluster;		/* TINYC_WGMMA_CLUSTER: only plans without clusters (1) or
					 * of 2-CTA clusters (2); -1: both */
	int wgmma_fit;			/* TINYC_WGMMA_FIT=0: no fitted-width wgmma tiles (bn a
					 * multiple of 8 that fills the last round of tiles;
					 * sched/matmul.c fitted_bn); 1 or -1 (default): proposed */
	int wgmma_streamk;		/* TINYC_WGMMA_STREAMK: the stream-K tail of the persistent
					 * wgmma kernel (sched/splitk.c tinyc_streamk_tiles): 1
					 * proposes it beside the plain candidates where the model
					 * applies it (the last round of tiles at most half full);
					 * S >= 2 (the form S or SxG) forces a tail split S ways on
					 * every wgmma candidate that takes one, at any size, and
					 * drops their plain twins (tests); 0 (default): never
					 * (measured no faster on an H100) */
	int wgmma_streamk_grid;		/* TINYC_WGMMA_STREAMK=SxG: with a forced split, G
					 * persistent CTAs (0: the tiles' own grid), so that small
					 * problems have a tail */
	int gemv_mma;			/* TINYC_GEMV_MMA: 1 propose the tensor-core gemv
					 * (sched/gemv_mma.c) for bound 2 <= M <= 32 beside the
					 * other candidates, 2 for M <= 32 and it alone among the
					 * gemv forms (the FMA gemv not proposed: sweeps); 0 (the
					 * default): never (measured slower than swap-AB) */
	int wgmma_swap;			/* TINYC_WGMMA_SWAP: 1 propose the swapped-operand wgmma
					 * plans (C^T = B^T A^T, sched/swapab.c) for bound 2 <= M
					 * <= 32 beside the other candidates, 2 for M <= 32 and
					 * only them where they apply (sweeps); 0 never; default 1
					 * (H100: 7.50 against 10.89 us at 8 x 4096 x 4096) */
	int no_stage;			/* TINYC_NO_STAGE (set): 16-bit outputs are not staged */
	int no_pair;			/* TINYC_NO_PAIR (set): no paired epilogue stores */
	int pdl;			/* TINYC_PDL: the persistent wgmma matmul kernels wait
					 * for the previous grid after their set-up
					 * (griddepcontrol) and are launched with programmatic
					 * stream serialization, so that a launch and set-up
					 * overlap the end of the previous kernel; 1 every
					 * wgmma kernel, 0 none, -1 (the default) those of
					 * 64-row tiles (H100, session 14: 1000^3 9.01 -> 8.54
					 * us, 64 x 4096 x 4096 9.48 -> 9.08; 128-row tiles
					 * 1-2% slower) */
	int wait_hint;			/* TINYC_WAIT_HINT: ns the wgmma matmul kernels' mbarrier
					 * waits may suspend a thread before it tries again
					 * (try_wait's suspendTimeHint; CUTLASS passes 10^7);
					 * 0 (the default) none: the hardware's own limit */
	int epi_preload;		/* TINYC_EPI_PRELOAD: the wgmma epilogue's coordinates and
					 * broadcast loads (the bias) issued before the tile's
					 * main loop, not after it; 1 on, 0 off, -1 the default
					 * (on for the unswapped plans: 4% at 1000^3 on the
					 * H100, neutral elsewhere; off for swap-AB, whose wgmma
					 * ptxas may then serialise) */
	int tma_store;			/* TINYC_TMA_STORE: the wgmma epilogue writes its staged
					 * 16-bit output by TMA stores of each warp's 16 x 64
					 * slabs (cp.async.bulk.tensor from 128-byte swizzled
					 * buffers, two per warp where shared memory allows)
					 * instead of 16-byte stores; 1 on, 0 off, -1 the
					 * default (off) */
	int splitk_sum;			/* TINYC_SPLITK_SUM: split-K partials summed 1 in the
					 * matmul kernel (mma, wgmma), 2 by a reduction kernel
					 * only, 3 over a cluster wherever it applies (every
					 * candidate of sched/splitk.c's cluster sum); 0 (the
					 * default): a reduction kernel, or the cluster sum where
					 * it measured faster */
	int no_rowfuse;			/* TINYC_ROWFUSE=0: no row groups */
	int rowfuse_threads;		/* TINYC_ROWFUSE_THREADS: the only row width (0: any) */
	int no_attention;		/* TINYC_ATTENTION=0: attention left to the generic path */
	int attn_simt;			/* TINYC_ATTENTION=simt: fp32 attention on the SIMT kernel
					 * (no 3xTF32 candidate) */
	int attn_tile[5];		/* TINYC_ATTN_TILE=BMxBN[xMINBLOCKS[xROWBLOCKS[xSTAGES]]]:
					 * the attention mma tile, blocks per SM (default 2),
					 * 16-row blocks a warp (1, 2) and K/V ring stages (2,
					 * 3; 0: the model's); [0] = 0: the model's */
	int attn_softmax;		/* TINYC_ATTN_SOFTMAX: the 16-bit online softmax's
					 * variants (bits: 1 lazy rescale, 2 row sums by
					 * mma); -1: the model's */
	int attn_wgmma;			/* TINYC_ATTN_WGMMA: 16-bit attention on wgmma (sm_90a,
					 * d = 64) proposed and chosen with S on wgmma (1), S
					 * and P V on wgmma (2), never (0); -1: the model's */
} tinyc_sched_options;

/* Whether o forces a matmul tile (TINYC_MATMUL_TILE). */
static inline int tinyc_sched_options_tile_forced(const tinyc_sched_options *o)
{
	return o->tile[0] || o->tile[1] || o->tile[2] || o->tile[3] || o->tile[4];
}

/* Every knob of o at its default (the one place the defaults are set); no device. */
void tinyc_sched_options_defaults(tinyc_sched_options *o);
/* The record of a named target (NULL: the default, sm_80) with every knob at its default
 * and no tuning entries.  0, or -1 with an UnknownTarget diagnostic. */
int tinyc_sched_options_for_target(tinyc_ctx *ctx, const char *target, tinyc_sched_options *o);
/* The record's knobs as dump lines ("# options: ..."), for the top of the schedule dump. */
void tinyc_sched_options_print(const tinyc_sched_options *o, tinyc_buf *out);

#endif
