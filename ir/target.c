/* Architectures and named targets: parse "sm_90a", print it back, and the table of nominal
 * device descriptions the scheduler uses when no GPU is present. */
#include "ir/target.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Nominal data-sheet values of the named targets.  Bandwidth and fp16 tensor throughput
 * (dense, fp32 accumulation) are the vendor's figures; memory clocks are the values the
 * driver reports for these boards, so 2 * clock * bus / 8 reproduces the bandwidth. */
/* The fields every NVIDIA target since sm_80 shares. */
#define NV_COMMON                                                                           \
	.warp_size = 32, .max_threads_per_block = 1024, .smem_per_block = 48 * 1024,         \
	.regs_per_block = 65536, .regs_per_sm = 65536

/* The H100 SXM5's data sheet, for sm_90 and sm_90a alike. */
#define H100_SXM5                                                                           \
	NV_COMMON, .sm_count = 132, .max_threads_per_sm = 2048,                              \
	.smem_per_block_optin = 227 * 1024, .smem_per_sm = 228 * 1024, .clock_khz = 1980000, \
	.mem_clock_khz = 2619000, .mem_bus_width = 5120, .l2_bytes = 50 << 20,               \
	.peak_bandwidth_gbs = 3350.0, .peak_fp16_tflops = 989.0

static const tinyc_device_info targets[] = {
	{
		.name = "NVIDIA A100-SXM4 (nominal)", .target = "sm_80", .arch = {8, 0, 0},
		NV_COMMON, .sm_count = 108, .max_threads_per_sm = 2048,
		.smem_per_block_optin = 163 * 1024, .smem_per_sm = 164 * 1024, .clock_khz = 1410000,
		.mem_clock_khz = 1215000, .mem_bus_width = 5120, .l2_bytes = 40 << 20,
		.peak_bandwidth_gbs = 1555.0, .peak_fp16_tflops = 312.0,
	},
	{
		.name = "NVIDIA A10 (nominal)", .target = "sm_86", .arch = {8, 6, 0},
		NV_COMMON, .sm_count = 72, .max_threads_per_sm = 1536,
		.smem_per_block_optin = 99 * 1024, .smem_per_sm = 100 * 1024, .clock_khz = 1695000,
		.mem_clock_khz = 6251000, .mem_bus_width = 384, .l2_bytes = 6 << 20,
		.peak_bandwidth_gbs = 600.0, .peak_fp16_tflops = 125.0,
	},
	{
		.name = "NVIDIA L40 (nominal)", .target = "sm_89", .arch = {8, 9, 0},
		NV_COMMON, .sm_count = 142, .max_threads_per_sm = 1536,
		.smem_per_block_optin = 99 * 1024, .smem_per_sm = 100 * 1024, .clock_khz = 2490000,
		.mem_clock_khz = 9001000, .mem_bus_width = 384, .l2_bytes = 96 << 20,
		.peak_bandwidth_gbs = 864.0, .peak_fp16_tflops = 181.0,
	},
	{
		.name = "NVIDIA H100 SXM5 (nominal)", .target = "sm_90", .arch = {9, 0, 0},
		H100_SXM5,
	},
	{
		.name = "NVIDIA H100 SXM5, sm_90a features (nominal)", .target = "sm_90a",
		.arch = {9, 0, 'a'}, H100_SXM5,
	},
};

/* Parse an unsigned decimal of 1..3 digits at *p, advancing *p; -1 if none. */
static int parse_digits(const char **p, int *ndigits)
{
	int v = 0, n = 0;
	while (isdigit((unsigned char)**p) && n < 4) {
		v = 10 * v + (**p - '0');
		(*p)++;
		n++;
	}
	*ndigits = n;
	return n == 0 || n > 3 ? -1 : v;
}

/* Parse a target name: sm_XY[a|f], compute_XY[a|f], XY, or X.Y. */
int tinyc_arch_from_target(tinyc_ctx *ctx, const char *target, tinyc_arch *out)
{
	tinyc_arch a = {0, 0, 0};
	const char *p = target ? target : "";
	int nd, ok = 0;
	if (strncmp(p, "sm_", 3) == 0)
		p += 3;
	else if (strncmp(p, "compute_", 8) == 0)
		p += 8;
	int v = parse_digits(&p, &nd);
	if (v >= 0 && *p == '.' && nd <= 2) {		/* "9.0" */
		p++;
		int minor = parse_digits(&p, &nd);
		if (minor >= 0 && nd == 1 && *p == 0 && v > 0) {
			a.major = v;
			a.minor = minor;
			ok = 1;
		}
	} else if (v >= 10 && nd >= 2) {		/* "90", "90a", "100f" */
		a.major = v / 10;
		a.minor = v % 10;
		if (*p == 'a' || *p == 'f')
			a.suffix = *p++;
		ok = *p == 0;
	}
	if (!ok) {
		if (ctx)
			tinyc_error(ctx, "InvalidTarget",
				    "'%s' is not a GPU architecture (expected sm_XY, e.g. sm_80, sm_90, sm_90a)",
				    target ? target : "(null)");
		return -1;
	}
	*out = a;
	return 0;
}

/* Print an architecture the way nvrtc's -arch option spells it. */
char *tinyc_arch_name(tinyc_arch arch, int want_real, char *buf, size_t size)
{
	char sfx[2] = {arch.suffix, 0};
	snprintf(buf, size, "%s_%d%d%s", want_real ? "sm" : "compute", arch.major, arch.minor,
		 sfx);
	return buf;
}

/* The named-target table. */
const tinyc_device_info *tinyc_target_table(int *n)
{
	*n = (int)(sizeof(targets) / sizeof(targets[0]));
	return targets;
}

/* Look up a named target by architecture (so "sm_90", "compute_90" and "9.0" agree). */
const tinyc_device_info *tinyc_target_info(tinyc_ctx *ctx, const char *target)
{
	tinyc_arch a;
	if (tinyc_arch_from_target(ctx, target, &a) < 0)
		return NULL;
	int n;
	const tinyc_device_info *t = tinyc_target_table(&n);
	for (int i = 0; i < n; i++)
		if (t[i].arch.major == a.major && t[i].arch.minor == a.minor &&
		    t[i].arch.suffix == a.suffix)
			return &t[i];
	if (ctx)
		tinyc_error(ctx, "UnknownTarget",
			    "no nominal description of '%s' (named targets: sm_80, sm_86, sm_89, sm_90, sm_90a)",
			    target);
	return NULL;
}

/* Dense fp16 tensor-core FLOPs per SM per clock with fp32 accumulation, by generation
 * (V100/T4 1024, A100 2048, GA10x 1024, Ada 512, Hopper 4096, Blackwell DC 8192). */
int tinyc_fp16_flops_per_sm_clock(tinyc_arch arch)
{
	int cc = 10 * arch.major + arch.minor;
	switch (cc) {
	case 70: case 72: case 75: return 1024;
	case 80: return 2048;
	case 86: case 87: return 1024;
	case 89: return 512;
	case 90: return 4096;
	case 100: return 8192;
	default: return 0;
	}
}
