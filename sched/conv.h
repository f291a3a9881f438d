/* Convolutions as implicit GEMM (issue 15).
 *
 * A convolution reaches the contraction templates as a REDUCE ADD over the MUL of a
 * window of its input (tinygrad's PAD, RESHAPE, EXPAND, PERMUTE, SHRINK chain) and its
 * weight.  The Poly-View tags it as a contraction whose image axis is a batch (one GEMM
 * per image), m = the output's spatial axes, n = the output channels, k = the input
 * channels and the kernel window: M = OH*OW, N = C_out, K = C_in*KH*KW (per group).
 * The window's addresses are affine in the m and k axes but do not merge into one row
 * stride and one column stride: such an operand is *gathered* (im2col addressing in
 * the template's loads): the tile coordinate (row, col) is split into the axes of its
 * role (mixed radix, outer first), each weighted by its element stride, and the load is
 * predicated by the window's guards (a padded input reads 0 outside the image).
 */
#ifndef TINYC_SCHED_CONV_H
#define TINYC_SCHED_CONV_H

#include <stdint.h>
#include <stddef.h>

#define TINYC_GATHER_AXES 8		/* axes per role of a gathered operand */
#define TINYC_GATHER_GUARDS 16		/* guards of a gathered operand */

/* The im2col addressing of an operand (in tinyc_mm_operand; on = 0: plain strides). */
typedef struct tinyc_mm_gather {
	int on;					/* the operand is gathered */
	int nax[2];				/* axes of the row / column coordinate */
	int64_t ext[2][TINYC_GATHER_AXES];	/* their extents, outer first */
	int64_t stride[2][TINYC_GATHER_AXES];	/* their element strides */
	int nguard;				/* guards: sum coef * axis + c0 >= 0 (== 0) */
	int64_t gcoef[TINYC_GATHER_GUARDS][2][TINYC_GATHER_AXES];	/* per role and axis */
	int64_t g0[TINYC_GATHER_GUARDS];	/* constant term */
	int geq[TINYC_GATHER_GUARDS];		/* 1: an equality */
} tinyc_mm_gather;

struct isl_pw_multi_aff;
struct isl_set;

/* Fill g for an operand read through access acc (reduce domain dom -> the array): the
 * row axes rows[0..nrow) and column axes cols[0..ncol) (contraction axes, outer first)
 * with their bound extents ext[] and element strides stride[] (indexed by axis), and the
 * guards of acc's domain beyond dom.  0, or -1 with why (not an error: the operand does
 * not fit: a guard on another axis, a guard with a division or a symbolic size). */
int tinyc_conv_gather(struct isl_pw_multi_aff *acc, struct isl_set *dom, const int *rows,
		      int nrow, const int *cols, int ncol, const int64_t *ext,
		      const int64_t *stride, tinyc_mm_gather *g, char *why, size_t wsize);

/* 1 when the packing kernel of gathered operand g (an A: rows m, columns k) should write
 * it M-major: its innermost row axis steps 1 or 2 elements (a convolution of stride 1 or
 * 2 along the output's innermost spatial axis), so that reads along m are coalesced. */
int tinyc_conv_pack_m_major(const tinyc_mm_gather *g);

/* " gathered (im2col): rows (2:8 8:1) cols (8:64 3:8 3:1) guards 3": the axes of each
 * coordinate as extent:stride, outer first (nothing when g is off). */
struct tinyc_buf;
void tinyc_conv_print_gather(const tinyc_mm_gather *g, struct tinyc_buf *out);

#endif
