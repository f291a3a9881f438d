/* codegen/: plan -> CUDA text.
 *
 * Each emitter takes a finished plan (a schedule of sched/, or GPU IR) and writes the
 * `extern "C" __global__` CUDA C text that runtime/ hands to nvrtc.  Emitters specialise:
 * every length, stride and tile size the plan fixes is folded into the text as a constant,
 * so divisions and remainders are by constants and nvrtc strength-reduces them.  The text
 * is deterministic (same plan, same bytes), which is what the kernel cache keys on.
 *
 *   rearrange_cuda.c   the rearrange kernels of seed 003 (sched/rearrange.h): the
 *                      elementwise block/grid kernel and the shared-memory tiled transpose.
 *   rearrange_gpuir.c  the same two kernels as GPU IR, for schedule kernels with a
 *                      TINYC_PLAN_REARRANGE plan (the graph path: gpuir -> cuda stages).
 *
 * Errors go to the tinyc_ctx; functions return -1.
 */
#ifndef TINYC_CODEGEN_CODEGEN_H
#define TINYC_CODEGEN_CODEGEN_H

#include "codegen/gpu.h"
#include "ir/ctx.h"
#include "sched/rearrange.h"

/* The kernel a rearrange plan launches, as CUDA text appended to *out:
 *
 *   extern "C" __global__ void NAME(unsigned char *y, const unsigned char *x)
 *
 * y and x are the addresses of element 0 of the destination and the source (aligned to
 * plan->align bytes).  Launch it with plan->blocks blocks of plan->threads threads
 * (elementwise: blockDim = (threads, 1, 1); tiled: blockDim = (tx, ty, 1)) and no dynamic
 * shared memory.  The index arithmetic is exactly the one tinyc_rearrange_simulate
 * executes.  EMPTY and COPY plans have no kernel: -1 with a RearrangeNoKernel diagnostic.
 * name must be a C identifier. */
int tinyc_rearrange_emit_cuda(tinyc_ctx *ctx, const tinyc_rearrange_plan *plan,
			      const char *name, tinyc_buf *out);

/* The launch geometry of a rearrange kernel: grid and block extents (x, y, z). */
void tinyc_rearrange_launch_dims(const tinyc_rearrange_plan *plan, unsigned grid[3],
				 unsigned block[3]);

/* The GPU IR builder of TINYC_PLAN_ATTENTION plans (codegen/attention.c, listed in
 * gpuir_pass.c): the flash-style attention kernel of schedule kernel `kernel`. */
int tinyc_attention_build(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_schedule *s,
			  const tinyc_indexbook *ib, int kernel);

/* The GPU IR builder of TINYC_PLAN_CONV_DIRECT plans (codegen/conv_direct.c, listed in
 * gpuir_pass.c): a thread per output of a depthwise convolution. */
int tinyc_conv_direct_build(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_schedule *s,
			    const tinyc_indexbook *ib, int kernel);

/* The GPU IR builder of TINYC_PLAN_REARRANGE plans (listed in gpuir_pass.c): kernel
 * `kernel` of s, whose plan ext is a tinyc_rearrange_kplan, as a GPU IR kernel of gm with
 * two pointer parameters (the source buffer, const, and the destination buffer, typed as
 * unsigned words of the kernel's access width), the plan's block and grid, and the plan's
 * arithmetic in word units.  0, or -1 with a CodegenError diagnostic. */
int tinyc_rearrange_gpuir_build(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_schedule *s,
				const tinyc_indexbook *ib, int kernel);

/* The same for plan p alone, into any module: copy buffer
 * x_buf of gm, view starting x_offset elements in, into y_buf at y_offset, as kernel `name`
 * (appended to gm in launch order) with `comment`.  0, or -1 with a diagnostic. */
int tinyc_rearrange_gpuir_emit(tinyc_ctx *ctx, tinyc_gpu_module *gm, const tinyc_rearrange_plan *p,
			       int x_buf, int64_t x_offset, int y_buf, int64_t y_offset,
			       const char *name, const char *comment);

/* ================================================================ htree_cuda.c ====
 * The htree forward kernels (seed 004; semantics in ir/htree.h), emitted as one CUDA
 * translation unit per configuration with every size of the configuration folded in:
 *
 *   htree_pool_in(const in_t *x, float *y, long long outer, long long n, long long inner)
 *   htree_pool_f32(const float *x, float *y, long long outer, long long n, long long inner)
 *        one tree layer by valid-count mean pooling (x [outer,n,inner] -> y
 *        [outer,ceil(n/r),inner]), a thread per output element, any grid;
 *   htree_forward(const ht_params P)
 *        the whole forward of one query group (b, t, h_kv) per block: every layer
 *        top-down (scores, shared top-K selection, leaves into an online softmax), then
 *        o = U / max(S, 1e-30).  Launch B*rows*Hkv blocks of `threads` threads with
 *        `smem_bytes` of dynamic shared memory; P is a tinyc_htree_kparams.
 * The selection path (max, sums, importances, keys) is computed in the CPU reference's
 * float32 order without contraction, so that the selections are the reference's.
 */

#define TINYC_HTREE_GPU_SMEM_MAX 163840	/* dynamic shared memory the forward may use */
#define TINYC_HTREE_GPU_MAX_G 64	/* query heads per KV head */
#define TINYC_HTREE_GPU_MAX_DIM 256	/* K and V */
#define TINYC_HTREE_GPU_MAX_CAND 32768	/* max(max_top_nodes, top_k * r) */

/* What the htree kernels are specialised for. */
typedef struct tinyc_htree_kernel_config {
	int compression_rate;	/* r: power of two >= 2 */
	int top_k;		/* parents kept per layer: power of two */
	int64_t max_top_nodes;	/* the top layer has at most this many nodes */
	int G;			/* query heads per KV head (H / H_kv) */
	int K;			/* key dim (even) */
	int V;			/* value dim */
	tinyc_dtype dtype;	/* q, k, v elements: float, half or bfloat16 (fp32 compute) */
	int key_drop_bits;	/* low bits cleared from the importance keys (13) */
	int threads;		/* threads per block: power of two 64..1024, 0 = chosen */
	int profile;		/* 1: htree_forward adds per-phase clock64 cycles to P.prof */
	int min_blocks;		/* blocks an SM should hold (launch bounds), 0 = as many as 128
				   registers a thread allow */
	int simt_leaves;	/* 1: the leaves on FMA even where the tensor-core path applies */
	int fast_max;		/* 1: pass 1's max by ht_max_fast (fast scores, exact rechecks) */
	int pass2_cands;	/* pass 2's candidates a computing thread takes a tile, 1..3;
				   0 = chosen (2 where the tiles fit the work area, else 1) */
	int krot_keys;		/* 1: pass 3 and the top layer's tensor-core leaves read the top
				   layer's rotated keys (P.krot), not key, cos and sin rows */
} tinyc_htree_kernel_config;

/* The phases htree_forward's profile counts (cycles of thread 0, summed over blocks). */
enum {
	TINYC_HTREE_PH_QROT,	/* the rotated query */
	TINYC_HTREE_PH_MAX,	/* selection pass 1: per-head max */
	TINYC_HTREE_PH_SUM,	/* selection pass 2: sums of exp */
	TINYC_HTREE_PH_KEYS,	/* selection pass 3: importance keys */
	TINYC_HTREE_PH_TOPK,	/* the radix select and the next parents */
	TINYC_HTREE_PH_LEAVES,	/* the leaves of layers >= 1 */
	TINYC_HTREE_PH_LEAVES0,	/* layer 0 */
	TINYC_HTREE_PH_FINAL,	/* the final reduction and o */
	TINYC_HTREE_NPHASES
};

/* The parameter block of htree_forward, laid out as the kernel's ht_params (8-byte
 * fields).  Pointers are device addresses; 0 is null. */
typedef struct tinyc_htree_kparams {
	uint64_t q, k0, v0;			/* [B,T,H,K], [B,T,Hkv,K], [B,T,Hkv,V], in dtype */
	uint64_t kl[64];			/* float [B,N_l,Hkv,K] for layers l >= 1 */
	uint64_t vl[64];			/* float [B,N_l,Hkv,V] for layers l >= 1 */
	int64_t N[64];				/* layer sizes, N[0] = T */
	uint64_t cos_tab, sin_tab;		/* float [table_rows, K/2] */
	uint64_t positions;			/* int [rows]: row -> t, or 0 (t = row) */
	uint64_t o;				/* float [B,rows,H,V] */
	uint64_t trace_sel;			/* int [B*rows*Hkv, L-1, top_k], or 0 */
	uint64_t trace_ncand;			/* int [B*rows*Hkv, L], or 0 */
	int64_t T, B, Hkv, L, rows, table_rows;	/* sizes */
	float scale;				/* score scale */
	float unused;				/* padding */
	uint64_t prof;				/* u64 [TINYC_HTREE_NPHASES] cycles, or 0 */
	uint64_t krot;				/* float [B,N_top,Hkv,K]: the top layer's keys
						 * rotated the reference's way, or 0 */
} tinyc_htree_kparams;

/* Check a kernel configuration (powers of two, dims, dtype, shared memory).  0 or -1
 * with HtreeInvalidConfig / HtreeUnsupportedConfig / HtreeUnsupportedDtype. */
int tinyc_htree_kernel_check(tinyc_ctx *ctx, const tinyc_htree_kernel_config *c);
/* Threads per block and dynamic shared memory of htree_forward, and the RoPE table rows
 * the kernels may read (max(max_top_nodes, top_k * r)).  Any output may be NULL. */
int tinyc_htree_kernel_launch_info(tinyc_ctx *ctx, const tinyc_htree_kernel_config *c,
				   int *threads, int64_t *smem_bytes, int64_t *table_rows);
/* Append the CUDA text of the three kernels for c to out.  0 or -1. */
int tinyc_htree_emit_cuda(tinyc_ctx *ctx, const tinyc_htree_kernel_config *c, tinyc_buf *out);

#endif
