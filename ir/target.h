/* Targets: GPU architectures ("sm_90a" -> {9,0,'a'}) and the device description the
 * scheduler plans for, either the nominal data sheet of a named target (the table in
 * ir/target.c) or a real device's properties (runtime/cuda.c fills one).  Pure data: no
 * driver, no environment.
 */
#ifndef TINYC_IR_TARGET_H
#define TINYC_IR_TARGET_H

#include <stddef.h>

#include "ir/ctx.h"

/* ---------------------------------------------------------------- architectures ---- */

/* A GPU architecture as nvrtc names it: sm_<major><minor>[suffix]. */
typedef struct tinyc_arch {
	int major;		/* compute capability major, e.g. 9 */
	int minor;		/* compute capability minor, e.g. 0 */
	char suffix;		/* 'a' or 'f' for arch-specific features (sm_90a), 0 otherwise */
} tinyc_arch;

/* Parse "sm_90", "sm_90a", "compute_80" (also "90" and "9.0") into *out.  Returns 0, or -1
 * with an InvalidTarget diagnostic (ctx may be NULL to only test the string). */
int tinyc_arch_from_target(tinyc_ctx *ctx, const char *target, tinyc_arch *out);
/* Write "sm_XY[s]" (want_real) or "compute_XY[s]" into buf (at least 16 bytes); returns buf. */
char *tinyc_arch_name(tinyc_arch arch, int want_real, char *buf, size_t size);

/* What the scheduler knows about a device: measured from a real one (tinyc_cuda_open) or
 * the nominal data sheet of a named target (tinyc_target_info). */
typedef struct tinyc_device_info {
	char name[128];			/* "NVIDIA H100 80GB HBM3", or the nominal board name */
	char target[16];		/* "sm_90": the nvrtc architecture for this device */
	tinyc_arch arch;		/* compute capability (+ suffix for named targets like sm_90a) */
	int sm_count;			/* streaming multiprocessors */
	int warp_size;			/* threads per warp (32) */
	int max_threads_per_block;	/* launch limit on block size */
	int max_threads_per_sm;		/* resident threads per SM */
	int smem_per_block;		/* bytes a block gets without opting in (48 KiB) */
	int smem_per_block_optin;	/* bytes a block may use after cuFuncSetAttribute */
	int smem_per_sm;		/* bytes of shared memory per SM */
	int regs_per_block;		/* 32-bit registers per block */
	int regs_per_sm;		/* 32-bit registers per SM */
	int clock_khz;			/* SM clock (boost), kHz */
	int mem_clock_khz;		/* memory clock, kHz (0 when unknown) */
	int mem_bus_width;		/* memory bus width, bits (0 when unknown) */
	int l2_bytes;			/* L2 cache size, bytes */
	size_t global_mem_bytes;	/* device memory, bytes (0 for named targets) */
	double peak_bandwidth_gbs;	/* DRAM bandwidth, GB/s (2 * mem clock * bus width / 8) */
	double peak_fp16_tflops;	/* dense fp16 tensor-core TFLOP/s with fp32 accumulation */
	int driver_version;		/* cuDriverGetVersion (13000 = 13.0), 0 for named targets */
	int is_real;			/* 1: read from a device; 0: nominal values of a named target */
} tinyc_device_info;

/* The named targets (sm_80, sm_86, sm_89, sm_90, sm_90a): *n receives how many. */
const tinyc_device_info *tinyc_target_table(int *n);
/* Nominal description of a named target; NULL and an UnknownTarget diagnostic (ctx may be
 * NULL) when the name is not in the table.  The result is static: do not free it. */
__tinyc_keep const tinyc_device_info *tinyc_target_info(tinyc_ctx *ctx, const char *target);
/* Dense fp16 tensor-core FLOPs per SM per clock for a compute capability (0 if unknown);
 * the real-device path multiplies it by SMs and clock to estimate peak_fp16_tflops. */
int tinyc_fp16_flops_per_sm_clock(tinyc_arch arch);

#endif
