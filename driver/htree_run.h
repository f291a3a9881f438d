/* htree forward on the GPU: the host side (driver/htree_run.c).
 *
 * The semantics are those of the CPU reference (ir/htree.h), which is the oracle; the
 * configuration is the same tinyc_htree_config (tinyc_htree_config_default: r = 16,
 * top_k = 512, max_top_nodes = 8192, scale = K^-1/2, rope_base = 10000, 13 dropped key
 * bits).  What runs on the device:
 *
 *   tree build   the mean-pooling layers 1..L-1.  The pooling is a UOp graph
 *                (tinyc_htree_pool_graph_text); it runs through the generic pipeline
 *                (schedule -> GPU IR -> CUDA) when that path is available, else through
 *                the pooling kernels of codegen/htree_cuda.c.
 *   forward      htree_forward of codegen/htree_cuda.c: one block per query group, every
 *                layer top-down, specialised for (r, top_k, max_top_nodes, G, K, V, dtype)
 *                and compiled by nvrtc at run time through the kernel cache.
 *
 * Tensors: q [B,T,H,K], k [B,T,H_kv,K], v [B,T,H_kv,V] (float, half or bfloat16; one dtype
 * on the device; fp32 arithmetic), o [B,T,H,V] float, or [B,P,H,V] when
 * cfg->query_positions lists P positions.
 *
 * Diagnostics: HtreeInvalidArgument, HtreeInvalidConfig (r or top_k not a power of two,
 * ...), HtreeShapeMismatch (H not a multiple of H_kv, shapes that disagree),
 * HtreeUnsupportedDtype, HtreeUnsupportedConfig (beyond the GPU kernels' limits),
 * HtreeRopeTable, NoGpu (cu is NULL), and the runtime's CudaError / CudaCompileError.
 */
#ifndef TINYC_DRIVER_HTREE_RUN_H
#define TINYC_DRIVER_HTREE_RUN_H

#include <stdint.h>

#include "ir/ctx.h"
#include "ir/htree.h"
#include "ir/tensor.h"
#include "runtime/runtime.h"

/* A q, k or v tensor already in device memory (contiguous, C order). */
typedef struct tinyc_htree_dev_tensor {
	tinyc_devptr ptr;		/* address of element 0 */
	tinyc_dtype dtype;		/* float, half or bfloat16 */
	int64_t shape[4];		/* [B,T,heads,dim] */
} tinyc_htree_dev_tensor;

/* A forward prepared for one set of shapes: compiled kernels, tree layers, RoPE table,
 * query positions.  Reusable for any q, k, v of those shapes. */
typedef struct tinyc_htree_gpu tinyc_htree_gpu;

/* How the tree of a prepared forward is built. */
typedef enum tinyc_htree_tree_path {
	TINYC_HTREE_TREE_PIPELINE,	/* the pooling UOp graph through the generic pipeline */
	TINYC_HTREE_TREE_KERNELS,	/* the pooling kernels of codegen/htree_cuda.c */
} tinyc_htree_tree_path;

/* Choices a caller may make (all zero: the defaults). */
typedef struct tinyc_htree_gpu_opts {
	int tree_kernels;	/* 1: build the tree with the pooling kernels, not the pipeline */
	int threads;		/* htree_forward block size (power of two 64..1024), 0: chosen */
	int profile;		/* 1: count per-phase cycles (tinyc_htree_gpu_profile) */
	int min_blocks;		/* htree_forward launch bounds: blocks an SM should hold, 0: chosen */
	int simt_leaves;	/* 1: leaves on FMA, not the 3xTF32 tensor-core path */
	int exact_max;		/* 1: pass 1's max by the exact sweep, not from fast scores with
				 * exact rechecks (ht_max_fast) */
	int pass2_cands;	/* pass 2's candidates a computing thread takes a tile (1..3), 0:
				 * chosen (an experiment: pass 2 is latency-bound) */
	int rotate_keys;	/* 1: pass 3 and the top layer's tensor-core leaves rotate each
				 * candidate's key themselves; 0 (default): they read the top
				 * layer's rotated keys (H100, T=120000: 97.6 against 101.1 ms) */
} tinyc_htree_gpu_opts;

/* Prepare a forward: validate the configuration and shapes (q [B,T,H,K], k [B,T,Hkv,K],
 * v [B,T,Hkv,V] of `dtype`), emit and compile the kernels for cu's device, allocate the
 * tree and upload the RoPE table and query positions (cfg is read now, not kept).
 * opts may be NULL.  cu may be NULL only to validate: the result is then NULL with a
 * NoGpu diagnostic after the validation diagnostics, if any. */
__tinyc_give tinyc_htree_gpu *tinyc_htree_gpu_alloc(tinyc_ctx *ctx, tinyc_cuda *cu,
						    const tinyc_htree_config *cfg,
						    const tinyc_htree_gpu_opts *opts,
						    tinyc_dtype dtype, int64_t B, int64_t T,
						    int64_t H, int64_t Hkv, int64_t K, int64_t V);
void tinyc_htree_gpu_free(__tinyc_take tinyc_htree_gpu *h);

/* Enqueue one forward on device memory: q, k, v as the shapes given at preparation, o a
 * float buffer of B*rows*H*V elements.  Asynchronous (default stream).  0 or -1. */
int tinyc_htree_gpu_run(tinyc_htree_gpu *h, tinyc_devptr q, tinyc_devptr k, tinyc_devptr v,
			tinyc_devptr o);

/* Record the selections at trace->positions (as tinyc_htree_forward_cpu does), using the
 * tree of the last tinyc_htree_gpu_run (or building it from k, v first when build_tree).
 * Synchronous.  0 or -1. */
int tinyc_htree_gpu_trace(tinyc_htree_gpu *h, tinyc_devptr q, tinyc_devptr k, tinyc_devptr v,
			  int build_tree, tinyc_htree_trace *trace);

/* Facts about a prepared forward, for reports. */
typedef struct tinyc_htree_gpu_info {
	int num_layers;			/* L */
	int64_t layer_sizes[TINYC_HTREE_MAX_LAYERS];	/* N_l */
	int64_t rows;			/* query rows: T or P */
	int threads;			/* htree_forward block size */
	int64_t smem_bytes;		/* its dynamic shared memory */
	int regs;			/* its registers per thread (driver) */
	tinyc_htree_tree_path tree_path;	/* how the tree is built */
	char tree_note[256];		/* why the pipeline was not used, or "" */
	int cache_hit;			/* the forward kernels came from the kernel cache */
	double compile_ms;		/* nvrtc time of the forward kernels (0 on a hit) */
	char target[16];		/* sm_XY the kernels were built for */
} tinyc_htree_gpu_info;

void tinyc_htree_gpu_get_info(const tinyc_htree_gpu *h, tinyc_htree_gpu_info *info);

/* The per-phase cycles (thread 0 of every block, summed; TINYC_HTREE_PH_*) of the forwards
 * run since the last call into cycles[TINYC_HTREE_NPHASES], when prepared with
 * opts->profile; then zeroes them.  Synchronous.  0, or -1 (no profile: diagnostic). */
int tinyc_htree_gpu_profile(tinyc_htree_gpu *h, uint64_t *cycles);

/* The whole forward on host tensors, like tinyc_htree_forward_cpu: upload, run, download.
 * q, k, v may have different dtypes (converted to float on the host then).  *o is a new
 * float tensor.  opts and trace may be NULL.  0 or -1. */
int tinyc_htree_forward_cuda(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_htree_config *cfg,
			     const tinyc_htree_gpu_opts *opts, __tinyc_keep const tinyc_tensor *q, __tinyc_keep const tinyc_tensor *k,
			     __tinyc_keep const tinyc_tensor *v, __tinyc_give tinyc_tensor **o,
			     tinyc_htree_trace *trace);

/* The whole forward on device tensors (one dtype): o is a float device buffer
 * [B,T,H,V] (or [B,P,H,V]).  Synchronous.  opts and trace may be NULL.  0 or -1. */
int tinyc_htree_forward_cuda_dev(tinyc_ctx *ctx, tinyc_cuda *cu, const tinyc_htree_config *cfg,
				 const tinyc_htree_gpu_opts *opts, const tinyc_htree_dev_tensor *q, const tinyc_htree_dev_tensor *k,
				 const tinyc_htree_dev_tensor *v, tinyc_devptr o,
				 tinyc_htree_trace *trace);

/* The tree build as a tinyc-uop v0 graph: BUFFERs "k" (slot 0, dtype [B,T,Hkv,K]) and
 * "v" (slot 1), OUTPUTs "k1", "v1", ..., "k<L-1>", "v<L-1>" (float [B,N_l,Hkv*K] and
 * [B,N_l,Hkv*V]), each layer the valid-count mean of groups of r rows of the one below
 * (PAD to a multiple of r, RESHAPE, REDUCE ADD, FDIV by the count).  Every size is a
 * constant.  Appends the text to out; 0, or -1 when there is no layer to build (L = 1)
 * or the sizes are invalid (diagnostic). */
int tinyc_htree_pool_graph_text(tinyc_ctx *ctx, tinyc_dtype dtype, int64_t B, int64_t T,
				int64_t Hkv, int64_t K, int64_t V, int r, int64_t max_top_nodes,
				tinyc_buf *out);

#endif
