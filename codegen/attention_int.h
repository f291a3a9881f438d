/* The attention kernel builders' shared state and helpers (codegen/attention.c, used by the
 * 3xTF32 variant in codegen/attention_tf32.c).  Internal to the codegen library. */
#ifndef TINYC_CODEGEN_ATTENTION_INT_H
#define TINYC_CODEGEN_ATTENTION_INT_H

#include "codegen/codegen.h"
#include "codegen/gpu.h"
#include "sched/attention.h"

/* State of one kernel build. */
typedef struct abuild {
	tinyc_ctx *ctx;			/* diagnostics */
	tinyc_gkernel *k;		/* the kernel */
	tinyc_emit *em;			/* its value emitter */
	const tinyc_attn_match *m;	/* the attention */
	tinyc_dtype ix;			/* index dtype */
	tinyc_gexpr *dot;		/* value substituted for the Q*K reduction, or NULL */
	tinyc_gexpr *out;		/* value substituted for the P*V reduction, or NULL */
	int failed;			/* a builder call failed */
	int stages;			/* K/V ring depth the kernel got (1: synchronous) */
	int causal;			/* the mask is proven `j <= i + coff` (attention_mask.c) */
	int64_t coff;			/* its diagonal offset */
	int dyn;			/* every shared array in dynamic shared memory (above
					 * 48 KiB: the runtime opts in when the dynamic part
					 * alone is that large) */
	int qy;				/* query tiles on grid y, the batch on grid x (the
					 * causal tensor-core kernels: every batch entry's
					 * longest tiles start in the first wave) */
	int lazy;			/* online softmax: rescale only when a row maximum grew
					 * by more than 8 / c (P stays below 2^8) */
	int psum;			/* row sums of P by mma with a ones B fragment into
					 * lacc (4 floats a 16-row block), not by adds */
	int lacc, ones;			/* psum: the sum fragments and the ones fragment */
	int swz;			/* swz_sh[0..2] hold 64-element rows in wgmma's 128-byte
					 * swizzle (tinyc_attn_load_tile_async) */
	int swz_sh[3];			/* swz: the swizzled shared arrays (Q, K, V or Q again) */
} abuild;

/* The thread roles of a tensor-core kernel (tinyc_attn_warp_roles). */
typedef struct tinyc_attn_warps {
	tinyc_gexpr *lane, *warp;	/* lane and warp registers */
	tinyc_gexpr *r0;		/* the block's first query row */
	tinyc_gexpr *gq, *tq2;		/* accumulator row group lane / 4, column pair 2 (lane % 4) */
	tinyc_gexpr *p[TINYC_MAX_RANK];	/* batch indices (from blockIdx.y, x under qy; innermost fastest) */
} tinyc_attn_warps;

/* Append s to block, recording failure. */
static inline void app(abuild *b, tinyc_gstmt *block, tinyc_gstmt *s)
{
	if (!s || tinyc_gs_append(b->k, block, s) < 0)
		b->failed = 1;
}

/* An index constant. */
static inline tinyc_gexpr *ic(abuild *b, int64_t v)
{
	return tinyc_gx_int(b->k, b->ix, v);
}

/* A float constant. */
static inline tinyc_gexpr *fc(abuild *b, double v)
{
	return tinyc_gx_float(b->k, TINYC_FLOAT, v);
}

/* A binary expression. */
static inline tinyc_gexpr *bin(abuild *b, tinyc_gx_op op, tinyc_gexpr *x, tinyc_gexpr *y)
{
	return tinyc_gx_binary(b->k, op, x, y);
}

/* Declare a register `name` of dtype dt initialised to init in block; its index or -1. */
static inline int reg(abuild *b, tinyc_gstmt *block, const char *name, tinyc_dtype dt, tinyc_gexpr *init)
{
	int v = tinyc_gk_reg(b->k, name, dt);
	if (v < 0) {
		b->failed = 1;
		return -1;
	}
	app(b, block, tinyc_gs_decl(b->k, v, init));
	return v;
}

/* A loop iterator register (non-negative). */
static inline int iter(abuild *b, const char *name)
{
	int v = tinyc_gk_reg(b->k, name, b->ix);
	if (v < 0)
		b->failed = 1;
	else
		tinyc_emit_set_nonneg(b->em, v);
	return v;
}

/* The shared tiles, register arrays and lane roles of the 16-bit tensor-core kernel. */
typedef struct mma_tiles {
	int MB, BN, NS, NO, NQ;		/* 16-row blocks a warp, keys a tile, fragment values of
					 * a block's scores, accumulators, Q */
	int64_t D, DV, QS, VS;		/* head sizes, K (and Q) and V row strides in shared */
	int ks, vs;			/* shared K (Q) and V rings */
	int qa, kb, vb, pa, sacc, oacc;	/* Q, K, V, P fragments, scores, accumulators */
	tinyc_gexpr *kn, *kc;		/* K ldmatrix row and column of the lane */
	tinyc_gexpr *lr, *lc;		/* A / V.trans ldmatrix row and column of the lane */
} mma_tiles;

/* codegen/attention.c: see each definition. */
tinyc_gexpr *tinyc_attn_query_tile(abuild *b, int bm);
tinyc_gexpr *tinyc_attn_key_end(abuild *b, tinyc_gstmt *body, tinyc_gexpr *r0, int bm);
int tinyc_attn_warp_roles(abuild *b, const tinyc_schedule *s, int BM, tinyc_attn_warps *w);
void tinyc_attn_load_tile(abuild *b, tinyc_gstmt *blk, int sh, int64_t S, int node, int kind,
			  tinyc_gexpr *const *p, tinyc_gexpr *r0, int nrows, int64_t W, int64_t limit,
			  int threads, tinyc_dtype dt);
int tinyc_attn_tile_async_ok(abuild *b, int node, int kind, tinyc_gexpr *const *p);
void tinyc_attn_load_tile_async(abuild *b, tinyc_gstmt *blk, int sh, tinyc_gexpr *base, int64_t S,
				int node, int kind, tinyc_gexpr *const *p, tinyc_gexpr *r0, int nrows,
				int64_t W, int64_t limit, int threads);
void tinyc_attn_kv_stream(abuild *b, tinyc_gstmt *body, tinyc_gstmt *tb, tinyc_gstmt *wb, int cp,
			  int ks, int64_t KS, int vs, int64_t VS, tinyc_gexpr *const *p, tinyc_gexpr *r0,
			  int BM, tinyc_gexpr *J0, int BN, tinyc_gexpr *kend, int threads, tinyc_dtype dt,
			  tinyc_gexpr **kbase, tinyc_gexpr **vbase);
void tinyc_attn_load_q(abuild *b, tinyc_gstmt *body, int qs, int64_t S, tinyc_gexpr *const *p,
		       tinyc_gexpr *r0, int BM, int threads, int cp, tinyc_dtype dt);
int tinyc_attn_row_state(abuild *b, tinyc_gstmt *body, int oacc, int MB, int *mv, int *lv);
int tinyc_attn_key_loop(abuild *b, tinyc_gstmt **tb, tinyc_gstmt **wb, tinyc_gexpr **J0);
void tinyc_attn_close_key_loop(abuild *b, tinyc_gstmt *body, tinyc_gstmt *tb, int j0, tinyc_gexpr *kend,
			       int BN, int barrier, int wait, int cp);
tinyc_gexpr *tinyc_attn_loop_setup(abuild *b, tinyc_gstmt *body, int oacc, int MB, int *mv, int *lv,
				   tinyc_gexpr *r0, int BM, int pipe);
void tinyc_attn_scores(abuild *b, tinyc_gstmt *wb, int sacc, int i0, int n, int NS, const tinyc_attn_warps *w,
		       tinyc_gexpr *const *wrow, tinyc_gexpr *J0);
void tinyc_attn_mask_keys(abuild *b, tinyc_gstmt *wb, int sacc, int so, int NS, tinyc_gexpr *r0,
			  tinyc_gexpr *wrow, tinyc_gexpr *gq, tinyc_gexpr *tq2, tinyc_gexpr *J0, int BN);
void tinyc_attn_online_softmax(abuild *b, tinyc_gstmt *wb, int sacc, int pa, int so, int oacc, int oo,
			       int NS, int NO, const int *mv, const int *lv, tinyc_dtype dt, int trees);
void tinyc_attn_store_output(abuild *b, tinyc_gstmt *body, const tinyc_skernel *sk, int oacc, int oo,
			     int NO, const int *lv, tinyc_gexpr *r0, tinyc_gexpr *wrow, tinyc_gexpr *gq,
			     tinyc_gexpr *tq2, tinyc_gexpr *const *p);

void tinyc_attn_kv_copy(abuild *b, tinyc_gstmt *blk, int ks, int64_t KS, int vs, int64_t VS, tinyc_gexpr *stage,
			tinyc_gexpr *const *p, tinyc_gexpr *J, int BN, int threads);
void tinyc_attn_pv_mma(abuild *b, tinyc_gstmt *wb, const mma_tiles *t, tinyc_gexpr *vbase, int mb0, int mb1);
int tinyc_attn_softmax_variant(abuild *b, tinyc_gstmt *body, const tinyc_attn_plan *ap, int MB);
void tinyc_attn_row_sums(abuild *b, tinyc_gstmt *wb, const mma_tiles *t, int mb0, int mb1);
void tinyc_attn_build_mma(abuild *b, const tinyc_schedule *s, const tinyc_skernel *sk,
			  const tinyc_attn_plan *ap, const tinyc_attn_warps *roles);

/* codegen/attention_wgmma.c: the sm_90a body with S = Q K^T on wgmma. */
void tinyc_attn_build_wgmma(abuild *b, const tinyc_schedule *s, const tinyc_skernel *sk,
			    const tinyc_attn_plan *ap);

/* codegen/attention_tf32.c: the 3xTF32 tensor-core body for fp32 inputs. */
void tinyc_attn_build_tf32(abuild *b, const tinyc_schedule *s, const tinyc_skernel *sk,
			   const tinyc_attn_plan *ap);

#endif
