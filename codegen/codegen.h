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
 *
 * Errors go to the tinyc_ctx; functions return -1.
 */
#ifndef TINYC_CODEGEN_CODEGEN_H
#define TINYC_CODEGEN_CODEGEN_H

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

#endif
