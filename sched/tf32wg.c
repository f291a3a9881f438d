/* The tiles the wgmma 3xTF32 form takes (sched/matmul.h, codegen/tf32_wgmma.c). */
#include "sched/matmul.h"

/* Whether operand op is K-major (k contiguous) for the side is_b (A: stride[1] is k's,
 * B: stride[0] is k's). */
static int k_major(const tinyc_mm_operand *op, int is_b)
{
	return tinyc_evt_poly_is_const(&op->stride[is_b ? 0 : 1], 1) && !op->gather.on;
}

int tinyc_tf32wg_rejects(const tinyc_mm_problem *prob, int bm, int bn, int bk, int stages,
			 int pingpong, int pack)
{
	/* tf32 wgmma reads both operands K-major (no transpose); TMA loads them as they are;
	 * the producer splits a stage one position behind its load: 3 stages at least, and
	 * 4 of 128 x 128 x 32 exceed the shared memory (64 KiB a stage with the lo parts) */
	if (bm != 128 || (bn != 128 && bn != 64) || bk != 32 || pingpong || pack)
		return 1;
	if (stages < 3 || stages > (bn == 64 ? 4 : 3))
		return 1;
	if (!k_major(&prob->a, 0) || !k_major(&prob->b, 1))
		return 1;
	return !(prob->tma_ok & TINYC_MM_TMA_A) || !(prob->tma_ok & TINYC_MM_TMA_B);
}
