/* Flash-style attention (issue 16): recognising tinygrad's scaled dot-product attention in
 * the UOp graph and planning it as one kernel.
 *
 * tinygrad 0.14.0 exports `q.scaled_dot_product_attention(k, v)` as
 *   S  = f(REDUCE_ADD(Q * K))               scale (a MUL by a constant) and any additive
 *                                           mask (the causal WHERE(.., 0, -inf) or a bias)
 *   E  = EXP2((S - REDUCE_MAX(S)) * c)      c = log2(e)
 *   P  = E * RECIPROCAL(REDUCE_ADD(E))
 *   O  = REDUCE_ADD(P * V)
 * with casts to and from 16 bits in between.  Q, K and V are whatever views the graph
 * gives (heads split and transposed, K/V heads broadcast for GQA/MQA): the kernel reads
 * them through the emitter at the MUL's index, so any movement chain works.
 *
 * tinyc_attention_claim runs inside tinyc_partition, before the kernels are formed: for
 * every match it stops the three inner reductions from being materialised (they become
 * part of the kernel that computes O), so the partition yields one kernel per attention.
 * The attention provider (listed in plan.c) then proposes TINYC_PLAN_ATTENTION candidates
 * for that kernel and drops the generic ones; codegen/attention.c builds the kernel.
 */
#ifndef TINYC_SCHED_ATTENTION_H
#define TINYC_SCHED_ATTENTION_H

#include "sched/schedule.h"

/* One recognised attention. */
typedef struct tinyc_attn_match {
	int pv;			/* REDUCE ADD of P * V: the output O[P...,Tq,dv] */
	int pv_mul;		/* its MUL [P...,Tq,dv,Tk] */
	int v_side;		/* the MUL's operand that is V */
	int qk;			/* REDUCE ADD of Q * K: the raw scores [P...,Tq,Tk] */
	int qk_mul;		/* its MUL [P...,Tq,Tk,d] */
	int q_side, k_side;	/* the MUL's operands that are Q and K */
	int score;		/* S: the value softmax reads (scale and mask applied) */
	int rmax, rsum;		/* the softmax's REDUCE MAX and REDUCE ADD */
	double exp_scale;	/* c in EXP2((S - max) * c) */
	int bias;		/* B when S = ADD(Q*K [* const], B) with B free of Q*K (an
				 * additive mask: key tiles where B is -inf for every row of a
				 * block are skipped), else -1 */
	int rank;		/* rank of S: batch dims, then Tq, Tk */
	int64_t tq, tk, d, dv;	/* sizes (constants or bound symbols) */
	tinyc_dtype in_dtype;	/* dtype of the Q*K product (half, bfloat16 or float) */
} tinyc_attn_match;

/* Kind-specific data of a TINYC_PLAN_ATTENTION plan. */
typedef struct tinyc_attn_plan {
	tinyc_attn_match m;	/* the attention */
	int bm;			/* query rows per block (one thread each) */
	int bn;			/* keys per shared-memory tile */
	int stages;		/* K/V tiles in flight (cp.async ring depth, 1 = synchronous;
				 * the kernel falls back to 1 where a view is not 16-byte copyable) */
	int mma;		/* 1: tensor cores (mma.sync m16n8k16, bm / (16 mb) warps of 16 mb
				 * rows); 2: the same on fp32 inputs in 3xTF32 (m16n8k8 .tf32,
				 * codegen/attention_tf32.c); 3: S on wgmma (sm_90a, a warpgroup
				 * per 64 rows, codegen/attention_wgmma.c); 0: SIMT */
	int mb;			/* mma: 16-row blocks a warp owns (1, 2: the K and V fragments
				 * serve both, half the ldmatrix traffic a score) */
	int min_blocks;		/* mma: blocks per SM the registers are capped for (0: none) */
	int softmax;		/* mma (16-bit): TINYC_ATTN_LAZY | TINYC_ATTN_PSUM */
	int pvwg;		/* mma 3: P V on wgmma too (P from registers, V MN-major);
				 * 2: P's row sums before the P V wgmma's issue */
} tinyc_attn_plan;

/* tinyc_attn_plan.softmax: the online softmax's variants (16-bit tensor-core kernel) */
enum {
	TINYC_ATTN_LAZY = 1,	/* rescale O only when a row maximum grew by more than 8 / c */
	TINYC_ATTN_PSUM = 2,	/* the row sums of P by mma (P times ones), not by adds */
};

/* Whether REDUCE node pv is the P*V reduction of an attention; fills *m.  b: bindings
 * (sizes must be known).  Never reports diagnostics. */
int tinyc_attention_match(const tinyc_graph *g, const tinyc_bindings *b, int pv,
			  tinyc_attn_match *m);

/* Called by tinyc_partition once it has decided which values to materialise (mat, per
 * node) among the live ones (live, per node): un-materialises the inner reductions of
 * every attention and the integer reductions of a mask computed from constants, and
 * materialises O unless only elementwise ops lie between it and an OUTPUT; where the
 * partition materialised a value of O's output chain (tinyc_attn_out_step), the last such
 * value is stored instead of O.  TINYC_ATTENTION=0 in the environment turns this off.  Returns the number of
 * attentions claimed. */
int tinyc_attention_claim(const tinyc_graph *g, const tinyc_bindings *b,
			  const unsigned char *live, unsigned char *mat);

/* Whether node n may lie on the chain from O to the value the attention kernel stores:
 * a unary elementwise op, a PERMUTE, or a RESHAPE of known sizes (the kernel maps its
 * output index through them, codegen/attention_out.c). */
int tinyc_attn_out_step(const tinyc_graph *g, const tinyc_bindings *b, int n);

/* The attention provider (plan.c lists it). */
extern const tinyc_plan_provider tinyc_plan_attention;

#endif
