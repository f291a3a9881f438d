/* Split-K summed through distributed shared memory (tiles.split_fused = 2, sched/splitk.c):
 * the `split` CTAs of one output tile form a thread-block cluster, the CTA of rank r runs
 * the k range r (the split problem's batch l = r), and no workspace or second kernel is
 * needed.  After the wgmma main loop each consumer thread (one warpgroup, 128 threads)
 *
 *   red[(c * 128 + ctid) * 4 + e] = acc[4 c + e]       its fragment, 16 bytes a chunk
 *                                                      (warps whose rows lie past M skip
 *                                                      this and the sums)
 *   cluster barrier (release / acquire)
 *   for its rank's 1 / split of the fragment's chunks (columns r * BN / split ..):
 *     acc'[..] = red@0[..] + red@1[..] + ..            the peers' chunks, rank order
 *   the whole problem's epilogue graph on acc' (the sliced fragment)
 *   cluster barrier                                    peers done reading red
 *
 * The sum runs in l order, as the reduction kernel's (bit-identical results).  The
 * producer warpgroup takes part in both cluster barriers (tinyc_splitk_dsmem_barriers).
 */
#include "codegen/matmul.h"

/* Shorthands. */
static tinyc_gexpr *I(tinyc_mmk *b, int64_t v)
{
	return tinyc_gx_int(b->k, b->it, v);
}

static tinyc_gexpr *op2(tinyc_mmk *b, tinyc_gx_op op, tinyc_gexpr *x, tinyc_gexpr *y)
{
	return tinyc_gx_binary(b->k, op, x, y);
}

void tinyc_splitk_dsmem_barriers(tinyc_mmk *b, tinyc_gstmt *body)
{
	tinyc_mmk_append(b, body, tinyc_gs_comment(b->k, "split-K over the cluster: the "
						       "consumers' two cluster barriers"));
	tinyc_mmk_append(b, body, tinyc_gs_cluster_barrier(b->k));
	tinyc_mmk_append(b, body, tinyc_gs_cluster_barrier(b->k));
}

int tinyc_splitk_dsmem(tinyc_mmk *b, const tinyc_mm_frag *f, tinyc_gstmt *body)
{
	const tinyc_sk_fix *fx = b->fix;
	const tinyc_mm_tiles *t = b->t;
	tinyc_gkernel *k = b->k;
	int split = fx->split;
	int nacc = f->ni * 4;	/* one m64 fragment: 4 values per 8 columns */
	int chunks = f->ni / split;	/* 16-byte chunks (8 columns) of a rank's slice */
	if (f->tr != 2 || f->ni % split || t->bn % split || t->consumers != 1 || t->pingpong)
		return tinyc_error(b->ctx, "CodegenError", "split-K over a cluster needs one consumer "
				   "warpgroup of 64 rows and %d | %d columns", split, t->bn);
	int red = tinyc_gk_shared(k, "sk_red", TINYC_FLOAT, (int64_t)nacc * 128, 16, 1);
	int tmp = tinyc_gk_reg_array(k, "sk_part", TINYC_FLOAT, (int64_t)split * 4);
	if (red < 0 || tmp < 0)
		return -1;
	tinyc_mmk_append(b, body, tinyc_gs_comment(k, "split-K over the cluster: the fragment to "
						       "shared memory, each CTA sums its columns' "
						       "slice over the cluster in rank order"));
	tinyc_mmk_append(b, body, tinyc_gs_decl(k, tmp, NULL));
	tinyc_gexpr *ctid = tinyc_mmk_let(b, body, "sk_ctid", op2(b, TINYC_GX_SUB, b->tid, I(b, 128)));
	/* the CTA's rank in its cluster: consecutive blocks of `split` */
	tinyc_gexpr *rank = tinyc_mmk_let(b, body, "sk_rank", op2(b, TINYC_GX_MOD,
		tinyc_gx_cast(k, b->it, tinyc_gx_special(k, TINYC_GSP_BID_X)), I(b, split)));
	/* a warp whose 16 rows lie past M (decode: M < 64) neither stores nor sums: its peers'
	 * warp of the same rows skip alike (warp-uniform; the barriers stay outside) */
	tinyc_gstmt *outer = body, *stores = body, *sums = body;
	if (t->pred_m) {
		tinyc_gexpr *live = op2(b, TINYC_GX_LT, op2(b, TINYC_GX_ADD, b->m0, f->warp_row0), b->M);
		stores = tinyc_gs_block(k), sums = tinyc_gs_block(k);
		tinyc_mmk_append(b, outer, tinyc_gs_if(k, live, stores, NULL));
	}
	body = stores;
	for (int c = 0; c < nacc / 4; c++)
		for (int e = 0; e < 4; e++)
			tinyc_mmk_append(b, body, tinyc_gs_store(k, red,
				op2(b, TINYC_GX_ADD, op2(b, TINYC_GX_MUL, op2(b, TINYC_GX_ADD, I(b, (int64_t)c * 128), ctid),
						       I(b, 4)), I(b, e)),
				tinyc_gx_load(k, b->acc, I(b, 4 * c + e), NULL), NULL));
	tinyc_mmk_append(b, outer, tinyc_gs_cluster_barrier(k));
	if (t->pred_m)
		tinyc_mmk_append(b, outer, tinyc_gs_if(k, op2(b, TINYC_GX_LT, op2(b, TINYC_GX_ADD, b->m0,
									     f->warp_row0), b->M), sums, NULL));
	body = sums;
	for (int j = 0; j < chunks; j++) {
		tinyc_gexpr *chunk = op2(b, TINYC_GX_ADD, op2(b, TINYC_GX_MUL, rank, I(b, chunks)), I(b, j));
		tinyc_gexpr *at = op2(b, TINYC_GX_MUL, op2(b, TINYC_GX_ADD,
			op2(b, TINYC_GX_MUL, chunk, I(b, 128)), ctid), I(b, 4));
		for (int q = 0; q < split; q++)
			tinyc_mmk_append(b, body, tinyc_gs_copy_remote(k, tmp, I(b, 4 * q), red, at, 4,
								       tinyc_gx_int(k, TINYC_INT, q)));
		for (int e = 0; e < 4; e++) {
			tinyc_gexpr *sum = NULL;
			for (int q = 0; q < split; q++) {
				tinyc_gexpr *v = tinyc_gx_load(k, tmp, I(b, 4 * q + e), NULL);
				sum = sum ? op2(b, TINYC_GX_ADD, sum, v) : v;
			}
			tinyc_mmk_append(b, body, tinyc_gs_store(k, b->acc, I(b, 4 * j + e),
								tinyc_gx_cast(k, fx->whole->acc, sum), NULL));
		}
	}
	/* the slice as a fragment: ni / split n-blocks from column r * BN / split */
	tinyc_mm_frag s = *f;
	s.ni = chunks;
	s.tc = f->tc / split;
	s.col_base = op2(b, TINYC_GX_ADD, f->col_base, op2(b, TINYC_GX_MUL, rank, I(b, t->bn / split)));
	s.stage = 0;	/* the staged stores assume the whole 64-column slabs */
	if (tinyc_splitk_whole_epilogue(b, &s, body) < 0)
		return -1;
	tinyc_mmk_append(b, outer, tinyc_gs_comment(k, "the peers have read this CTA's partials"));
	tinyc_mmk_append(b, outer, tinyc_gs_cluster_barrier(k));
	return b->error ? -1 : 0;
}
