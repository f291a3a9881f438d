/* htree: hierarchical tree sparse attention, forward pass (seed 004), CPU reference.
 *
 * For every query position t, htree attends not to all T tokens but to a set of "leaves"
 * taken from a tree of mean-pooled keys/values, refined from the top layer down:
 *
 *   Tree.   N_0 = T; while N_l > max_top_nodes: N_{l+1} = ceil(N_l / r).  Node i of layer
 *           l+1 is the valid-count mean of its existing children i*r .. min((i+1)*r,N_l)-1
 *           (sequential float32 sum in child order, divided by the count), per (b, h_kv),
 *           separately for K and V.
 *   Candidates, per (b, t, h_kv), layer l = L-1 .. 0:
 *           top layer: nodes 0 .. t / r^(L-1); lower layer: the children p*r+c of the
 *           selected parents p (ascending), kept while the index is <= t / r^l.  The last
 *           candidate is always node t / r^l; their number is (P-1)*r + c* + 1 with
 *           c* = (t / r^l) mod r and P the number of parents.
 *   Scores. s[g,p] = dot(rope(q[h_kv*G+g], n_cand-1) * scale, rope(K_l[cand[p]], p)):
 *           RoPE positions are local to the candidate list (half-split pairing,
 *           y = [x1*cos - x2*sin, x1*sin + x2*cos], table row p = angle float32(p)*inv_freq,
 *           inv_freq = 1 / base^(2i/K) in float32).
 *   Selection (layers l >= 1, shared by the G query heads of one KV head):
 *           lse_g = logsumexp_p s[g,p]; imp[p] = sum_g exp(s[g,p] - lse_g) (terms below
 *           FLT_MIN flushed to 0); imp[n_cand-1] = 1000; sort key = float32 bits of imp with
 *           the `key_drop_bits` (13) low bits cleared; the min(top_k, n_cand) largest keys
 *           win, ties to the smaller candidate position.  The selected nodes, ascending,
 *           are the parents of layer l-1.
 *   Leaves. the non-selected candidates of layers >= 1 and all candidates of layer 0.
 *           o[h] = sum_leaves exp(s) V_l[node] / max(sum_leaves exp(s), 1e-30), accumulated
 *           with a float32 online softmax, one partial state per layer, merged top-down.
 *
 * These are the conventions of the htree golden vectors (shared/htree-golden/README.md),
 * which fix what the seed leaves open.  The reference is written to be obviously right,
 * not fast: it is the oracle of the GPU path.
 *
 * Layouts: q [B,T,H,K], k [B,T,H_kv,K], v [B,T,H_kv,V], o [B,T,H,V] (or [B,P,H,V] when
 * query positions are given); query head h uses KV head h / G, G = H / H_kv.
 * Inputs may be float, half or bfloat16; everything is computed in float32, o is float.
 *
 * Diagnostics: HtreeInvalidArgument (NULL inputs), HtreeInvalidConfig, HtreeShapeMismatch,
 * HtreeUnsupportedDtype, HtreeRopeTable (a given table too small or not float32).
 */
#ifndef TINYC_IR_HTREE_H
#define TINYC_IR_HTREE_H

#include <stdint.h>

#include "ir/ctx.h"
#include "ir/tensor.h"

#define TINYC_HTREE_MAX_LAYERS 64	/* more than enough: r >= 2 and T <= 2^40 give <= 42 */
#define TINYC_HTREE_IMP_FORCED 1000.0f	/* importance forced on the rightmost candidate */
#define TINYC_HTREE_SUM_EPS 1e-30f	/* o = U / max(S, eps) */

/* Parameters of the operation. */
typedef struct tinyc_htree_config {
	int compression_rate;		/* r: children per node, power of two >= 2 (16) */
	int top_k;			/* parents kept per layer, power of two >= 1 (512) */
	int64_t max_top_nodes;		/* the top layer has at most this many nodes (8192) */
	float scale;			/* score scale; <= 0 means float32(K^-1/2) */
	float rope_base;		/* RoPE base (10000) */
	int key_drop_bits;		/* low bits cleared from the importance key, 0..23 (13) */
	const tinyc_tensor *rope_cos;	/* optional float [rows, K/2] table (kept), else computed */
	const tinyc_tensor *rope_sin;	/* the matching sin table (kept); both or neither */
	const int64_t *query_positions;	/* optional (kept): compute o only at these t */
	int num_query_positions;	/* 0: o at every t ([B,T,H,V]); else o is [B,P,H,V] */
} tinyc_htree_config;

/* Optional record of the selections at some query positions (for debugging and tests).
 * The caller fills the inputs; the forward fills the outputs, which
 * tinyc_htree_trace_clear frees. */
typedef struct tinyc_htree_trace {
	const int64_t *positions;	/* in (kept): query positions t to record */
	int num_positions;		/* in: how many */
	int num_layers;			/* out: L */
	int64_t layer_sizes[TINYC_HTREE_MAX_LAYERS];	/* out: N_l */
	int top_k;			/* out: row length of sel_nodes */
	int64_t *sel_nodes;		/* out (owned): [B,P,H_kv,L-1,top_k]; entry [..,l-1,:] holds
					   the selected layer-l nodes, ascending, padded with -1 */
	int64_t *num_candidates;	/* out (owned): [B,P,H_kv,L]; n_cand of layer l at index l */
} tinyc_htree_trace;

/* Fill c with the defaults (r=16, top_k=512, max_top_nodes=8192, scale=K^-1/2, base 10000,
 * 13 dropped key bits, computed RoPE table, every query position). */
void tinyc_htree_config_default(tinyc_htree_config *c);
/* Check a configuration (powers of two, finite scale and rope base, ...); 0, or -1 with an
 * HtreeInvalidConfig / HtreeRopeTable diagnostic.  Every htree entry point calls it. */
int tinyc_htree_config_check(tinyc_ctx *ctx, const tinyc_htree_config *cfg);
/* Whether htree takes a tensor of this dtype (float, half, bfloat16). */
int tinyc_htree_dtype_ok(tinyc_dtype dt);
/* Check q, k, v given as (dtype, rank, shape): rank 4 [B,T,heads,dim], the same B and T,
 * v's heads those of k, q's heads a multiple of them, equal even key dims; 0, or -1 with an
 * HtreeUnsupportedDtype / HtreeShapeMismatch diagnostic. */
int tinyc_htree_check_shapes(tinyc_ctx *ctx, const tinyc_dtype dt[3], const int rank[3],
			     const int64_t *const shape[3]);
/* Check that every position in pos[0..n) lies in [0, T); `what` names them in the
 * HtreeInvalidConfig diagnostic.  0 or -1. */
int tinyc_htree_check_positions(tinyc_ctx *ctx, const int64_t *pos, int n, int64_t T,
				const char *what);

/* Run the htree forward on the CPU.  On success *o is a new float tensor [B,T,H,V]
 * (or [B,P,H,V]) and the result is 0; on error -1 with a diagnostic on ctx and *o NULL.
 * trace may be NULL. */
int tinyc_htree_forward_cpu(tinyc_ctx *ctx, const tinyc_htree_config *cfg,
			    __tinyc_keep const tinyc_tensor *q, __tinyc_keep const tinyc_tensor *k,
			    __tinyc_keep const tinyc_tensor *v, __tinyc_give tinyc_tensor **o,
			    tinyc_htree_trace *trace);

/* Free what the forward stored in trace (the inputs are left alone). */
void tinyc_htree_trace_clear(tinyc_htree_trace *trace);

/* ---- The pieces, exposed for unit tests and for the GPU path to share. ---- */

/* Number of tree layers for T tokens, storing N_0..N_{L-1} into sizes (room for
 * TINYC_HTREE_MAX_LAYERS) when sizes is not NULL; -1 if T < 1, r < 2, max_top_nodes < 1
 * or the tree would be deeper than TINYC_HTREE_MAX_LAYERS. */
int tinyc_htree_layer_sizes(int64_t T, int r, int64_t max_top_nodes, int64_t *sizes);

/* One tree layer by valid-count mean pooling: x is [outer, n, inner], y is
 * [outer, ceil(n/r), inner]; y[o,i,:] = (sum_{j=i*r}^{min((i+1)r,n)-1} x[o,j,:]) / count,
 * summed sequentially in float32. */
void tinyc_htree_pool(const float *x, int64_t outer, int64_t n, int64_t inner, int r, float *y);

/* n_cand = (P-1)*r + c* + 1, c* = (t / r^level) mod r: the candidates on `level` when P
 * parents (the last containing t) are expanded.  On the top layer use P = 1 + t / r^(level+1)
 * "virtual parents", which gives t / r^level + 1. */
int64_t tinyc_htree_num_candidates(int64_t num_parents, int r, int64_t t, int level);

/* The candidate list on `level` from the ascending parents of the layer above: children
 * p*r+c, ascending, kept while <= t / r^level.  Writes them to cand and returns how many. */
int64_t tinyc_htree_expand(const int64_t *parents, int64_t num_parents, int r, int64_t t,
			   int level, int64_t *cand);

/* Importance sort key: the float32 bit pattern of imp with the drop_bits low bits cleared. */
uint32_t tinyc_htree_key(float imp, int drop_bits);

/* Stable top-K: the positions of the min(k, n) largest keys of imp (key descending, ties to
 * the smaller position), written to pos in that order.  Returns how many, or -1 when the
 * scratch allocation fails (reported on ctx). */
int64_t tinyc_htree_topk(tinyc_ctx *ctx, const float *imp, int64_t n, int64_t k, int drop_bits,
			 int64_t *pos);

/* A partial softmax state over some set of scores s_j with vectors v_j:
 * max = max_j s_j, sum = sum_j exp(s_j - max), acc = sum_j exp(s_j - max) v_j.
 * The empty state is max = -inf, sum = 0, acc = 0. */
typedef struct tinyc_htree_smax {
	float max;			/* running max score, -inf when empty */
	float sum;			/* sum of exp(s - max) */
	float *acc;			/* [V]: sum of exp(s - max) * v (caller's storage) */
} tinyc_htree_smax;

/* Reset st to the empty state (acc has V elements). */
void tinyc_htree_smax_init(tinyc_htree_smax *st, int64_t V);
/* Add n scores s with vectors vs[j*V..] to st (one batch: one rescale). */
void tinyc_htree_smax_add(tinyc_htree_smax *st, const float *s, const float *vs, int64_t n,
			  int64_t V);
/* Merge the partial state b into a: the result is the state of the union of their sets. */
void tinyc_htree_smax_merge(tinyc_htree_smax *a, const tinyc_htree_smax *b, int64_t V);
/* The normalised output: out = acc / max(sum, TINYC_HTREE_SUM_EPS). */
void tinyc_htree_smax_finish(const tinyc_htree_smax *st, int64_t V, float *out);

/* The RoPE table: rows x K/2, row p, column i = cos/sin(float32(p) * inv_freq[i]) with
 * inv_freq[i] = 1 / base^(float32(2i)/K), all float32.  K must be even. */
void tinyc_htree_rope_table(int64_t K, int64_t rows, float base, float *cos_tab, float *sin_tab);
/* Rotate x (K floats, half-split pairing) by one table row: y = [x1*c - x2*s, x1*s + x2*c]. */
void tinyc_htree_rope(const float *x, int64_t K, const float *cos_row, const float *sin_row,
		      float *y);

#endif
