/* The rearrange descriptor API (seed §3) over the planner of sched/rearrange.h: create()
 * validates and plans, calculate() generates, compiles (through the kernel cache), loads
 * and launches the kernel for the pointers' alignment, destroy() frees it all.
 */
#ifndef TINYC_DRIVER_REARRANGE_DESC_H
#define TINYC_DRIVER_REARRANGE_DESC_H

#include "runtime/runtime.h"
#include "sched/rearrange.h"

/* ------------------------------------------------------------ descriptor API ---- */

/* A validated rearrange y <- x: the layouts, their plan, and (once calculate ran) the
 * compiled kernels per base-pointer alignment. */
typedef struct tinyc_rearrange_desc tinyc_rearrange_desc;

/* Seed §3 create(): check dtype and shape agreement and the layouts, plan the copy for
 * base pointers aligned to 256 bytes.  ctx (kept; it must outlive the descriptor) receives
 * diagnostics and may be NULL.  On success *desc is a new descriptor. */
tinyc_rearrange_status tinyc_rearrange_create(__tinyc_keep tinyc_ctx *ctx,
					      __tinyc_give tinyc_rearrange_desc **desc,
					      __tinyc_keep const tinyc_tensor_desc *y,
					      __tinyc_keep const tinyc_tensor_desc *x);

/* The plan create() made (for base pointers aligned to 256 bytes). */
__tinyc_keep const tinyc_rearrange_plan *tinyc_rearrange_desc_plan(const tinyc_rearrange_desc *d);

/* The plan for base pointers with the given alignment (bytes, >= 1), made on first use and
 * kept in the descriptor.  NULL with a diagnostic on failure. */
__tinyc_keep const tinyc_rearrange_plan *tinyc_rearrange_desc_plan_for(tinyc_rearrange_desc *d,
									int base_align);

/* Seed §3 calculate(): y <- x on the device.  y and x are the device addresses of element
 * 0 of each tensor; cu is the device and its stream (the runtime launches on the context's
 * default stream, asynchronously).  The plan is the one for the alignment the two addresses
 * actually have; its kernel is generated, compiled through the kernel cache and loaded on
 * first use, then kept in the descriptor (kernels belong to the first cu used: a descriptor
 * serves one tinyc_cuda).  EMPTY plans launch nothing; COPY plans are one device-to-device
 * copy.  Returns SUCCESS, BAD_PARAM (NULL argument or address, another cu) or DEVICE_ERROR
 * (nvrtc, module load or launch failed; the runtime's diagnostics are on the context). */
tinyc_rearrange_status tinyc_rearrange_calculate(tinyc_rearrange_desc *desc, tinyc_devptr y,
						 tinyc_devptr x, tinyc_cuda *cu);

/* Free a descriptor (and the kernels it loaded: call it before closing their tinyc_cuda). */
void tinyc_rearrange_destroy(__tinyc_take tinyc_rearrange_desc *desc);

#endif
