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

/* The channels-last internal layout of a gathered A (sched/conv_nhwc.c): the input
 * x[l][c][p] (l < l, c < c, p < p) is rearranged into x'[l][p][c] first. */
typedef struct tinyc_conv_nhwc {
	int64_t c;			/* channels of the copy (a multiple of 8 halves or
					 * 4 floats) */
	int64_t c_in;			/* channels of x (c_in < c: the copy's last c - c_in
					 * channels are zeros, B's rows for them too) */
	int64_t p;			/* pixels per channel: the channel stride of x */
	int64_t l;			/* images (1 when A has no batch stride) */
	int stored_by;			/* 1 + the kernel whose epilogue already stored x
					 * channels-last (sched/conv_chain.c): no transpose
					 * kernel; 0: x is NCHW, transposed first */
	int feeds;			/* 1 + the kernel whose NHWC gather reads this
					 * matmul's output, stored channels-last; 0: none */
} tinyc_conv_nhwc;

/* The implicit GEMM of prob on the NHWC copy of its gathered A: *out is prob (shallow,
 * its evt prob's) with A's gather rescaled to x'[l][p][c] and its k axes reordered so
 * that the channels are innermost (16-byte runs of 8 channels per pixel), and B gathered
 * in the same k order; *nh the copy's shape.  -1 when prob does not fit (A not gathered
 * or not 16- or 32-bit, channels not a multiple of 16 bytes or in a guard, unbound
 * sizes). */
struct tinyc_mm_problem;
int tinyc_conv_nhwc_problem(const struct tinyc_mm_problem *prob, const int64_t *sym, int nsym,
			    struct tinyc_mm_problem *out, tinyc_conv_nhwc *nh);

/* Channels-last hand-off (sched/conv_chain.c), run once the plans are chosen: where the
 * NHWC implicit GEMM of kernel k2 gathers a temporary that only it reads and that the
 * epilogue of matmul kernel k1 stores NCHW ([l][c][p], the whole tensor), k1 stores it
 * [l][p][c] instead and k2 reads it without its transpose kernel (the estimate drops
 * the transpose's time).  0, or -1 on an internal error. */
struct tinyc_schedule;
struct tinyc_skernel;
int tinyc_conv_chain(struct tinyc_schedule *s);
/* The transpose kernel's estimated time (bytes moved at 60% of the bandwidth, without
 * the launch) for the NHWC copy nh of 2-byte elements on s's device. */
double tinyc_conv_nhwc_copy_us(const struct tinyc_schedule *s, const tinyc_conv_nhwc *nh);
/* The dump's line for a matmul kernel's tiles t when the chain applies to them. */
struct tinyc_mm_tiles;
void tinyc_conv_chain_print(const struct tinyc_schedule *s, const struct tinyc_mm_tiles *t,
			    struct tinyc_buf *out);

/* A direct convolution (sched/conv_direct.c, plan kind TINYC_PLAN_CONV_DIRECT): a
 * windowed contraction without n axes (depthwise), one thread per output element o
 * summing x[o, t] * w[o, t] over the window's taps t.  The output axes (outer first, in
 * the output's order) are the row axes and the window's axes the column axes of three
 * im2col addressings: x with its strides and padding guards, w and y with theirs. */
typedef struct tinyc_conv_direct {
	tinyc_mm_gather x;		/* the input: rows = output axes, cols = taps */
	tinyc_mm_gather w;		/* the weight (no guards) */
	tinyc_mm_gather y;		/* the output (column strides 0, no guards) */
	int64_t xoff, woff;		/* element offsets of x (the padding) and w */
	int64_t outputs, taps;		/* output elements, taps per output */
	int vaxis;			/* the innermost output axis of extent > 1 */
	int per_thread;			/* consecutive outputs along it per thread (4, 2, 1:
					 * the largest that divides its extent) */
	int x_buf, w_buf, y_buf;	/* schedule buffers */
	int acc;			/* the accumulator's tinyc_dtype */
	int ncast;			/* the stored value: acc cast to cast[0] (the REDUCE's
					 * dtype), then to cast[1..ncast) (its CASTs) */
	int cast[8];			/* tinyc_dtype each */
	int add_at;			/* -1, or a bias added after cast[add_at] (the value's
					 * dtype then): y = casts(cast(acc) + bias) */
	int b_buf;			/* add_at >= 0: the bias's schedule buffer */
	tinyc_mm_gather b;		/* its addressing: rows = the output axes (stride 0
					 * where it broadcasts), no columns' strides */
} tinyc_conv_direct;

/* The direct convolution provider (listed in sched/plan.c after the matmul provider). */
struct tinyc_plan_provider;
extern const struct tinyc_plan_provider tinyc_plan_conv_direct;

#endif
