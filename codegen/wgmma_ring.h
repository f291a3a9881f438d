/* What the warp roles of the Hopper matmul kernel share (codegen/matmul.c: build_wgmma),
 * and the hooks of its 3xTF32 form (codegen/tf32_wgmma.c). */
#ifndef TINYC_CODEGEN_WGMMA_RING_H
#define TINYC_CODEGEN_WGMMA_RING_H

#include "codegen/matmul.h"

/* What the warp roles of the Hopper kernel share (build_wgmma). */
typedef struct wgmma_ring {
	tinyc_mmk *b;			/* the builder (kernel, problem, tiles) */
	int generic;			/* an operand is copied by the producer's threads */
	int batched;			/* the tiles run over the batch too */
	int64_t tiles_m, tiles_n;	/* output tiles along m and n */
	int64_t ntiles, ktiles;		/* tiles the CTAs walk; k tiles of one tile */
	int64_t full_units, nunits;	/* the units the CTAs walk: the first full_units whole
					 * tiles, then (a stream-K tail, b->fix->tail_tiles) the
					 * tail's tiles in split k ranges each; nunits in all */
	tinyc_gexpr *kb, *ke;		/* the consumer's unit: its k tiles [kb, ke) */
	tinyc_gexpr *tail, *slot, *part;	/* stream-K: the unit is one of the tail's, its
						 * tile's workspace slot and k range; else NULL */
	int64_t tma_bytes;		/* bytes the TMA loads of one stage bring */
	int As, Bs;			/* the ring's operand stages (shared) */
	int full, empty, turn;		/* the ring's barriers; pingpong's turns (shared) */
	int pipe;			/* the ring's pipeline */
	int cpipe;			/* a_nhwc: the cp.async groups of A (one per stage) */
	int ta, tb;			/* tensor maps of A and B, -2 when copied */
	int tilev, ktv, itp;		/* producer registers: tile, k tile, ring position */
	int ctilev, cktv, itc, ntv;	/* consumer registers: the same and tiles so far */
	tinyc_gexpr *wg;		/* warpgroup index */
	tinyc_gexpr *bid, *nbid;	/* blockIdx.x, gridDim.x (clusters: the cluster's index
					 * and count, blockIdx.x / 2, gridDim.x / 2) */
	tinyc_gexpr *rank;		/* clusters: the CTA's rank in its pair, else NULL */
	tinyc_gexpr *is0;		/* thread 0 of the CTA */
	tinyc_gexpr *cw, *g, *t4;	/* consumer index; the lane's row group, column pair */
	int hoist_at;			/* index in the consumer's tile block of its main loop */
	int tf32;			/* 3xTF32 (fp32 operands): the producer splits */
	int alo, blo;			/* tf32: the lo parts of the ring's stages (shared) */
	int ready;			/* tf32: ready[s], the stage's split is done (shared) */
} wgmma_ring;

/* codegen/tf32_wgmma.c.  The shared lo stages and the ready barriers of the 3xTF32 ring
 * (the barriers' init appended to init).  0 or -1. */
int tinyc_tf32wg_ring_init(wgmma_ring *w, tinyc_gstmt *init);
/* The producer's split of ring position P (appended to blk). */
void tinyc_tf32wg_split(wgmma_ring *w, tinyc_gstmt *blk, tinyc_gexpr *P);
/* A consumer's main loop over the k tiles of a tile (appended to ctile). */
void tinyc_tf32wg_kloop(wgmma_ring *w, tinyc_gstmt *ctile);

#endif
