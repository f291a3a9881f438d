/* The htree selection's exp (codegen/htree_exp.h) against the C library.
 *
 * The header's text is compiled here as C, the same arithmetic the GPU kernels run
 * (codegen/htree_cuda.c compiles it as CUDA): where ht_exp_fast decides, its float must be
 * exp((double)x) rounded to float, for every 7th float in (-110, 100); where it does not,
 * the kernels call that library path.  The table is checked against exp2.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define HT_FN static inline
#define HT_TABLE static const
#define HT_EXP_EMIT(...) __VA_ARGS__

/* The high and low words of a double's bits. */
static inline unsigned ht_hi(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof u);
	return (unsigned)(u >> 32);
}

static inline unsigned ht_lo(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof u);
	return (unsigned)u;
}

/* The float with bits b. */
static inline float ht_bits_float(unsigned b)
{
	float f;
	memcpy(&f, &b, sizeof f);
	return f;
}

#include "codegen/htree_exp.h"

/* Check every stride-th float from bits first up (by magnitude) while inside (-110, 100);
 * the numbers of decided and undecided arguments are added to *ok, *bad. */
static void sweep(uint32_t first, int stride, int64_t *ok, int64_t *bad)
{
	for (uint64_t b = first; b <= (first | 0x7fffffffu); b += (uint64_t)stride) {
		float x = ht_bits_float((uint32_t)b);
		if (!(x > -110.0f && x < 100.0f))
			break;
		unsigned undecided = 0;
		float y = ht_exp_fast(x, ht_etab_init, &undecided);
		if (undecided) {
			(*bad)++;
			/* the kernels decide these by the library: the fast path may be off only
			 * near a midpoint or off the range */
			cr_assert(!(x > -87.0f && x < 88.0f) ||
				  fabs((double)y - exp((double)x)) <= 0x1p-23 * exp((double)x),
				  "x = %a: undecided and far off", (double)x);
			continue;
		}
		(*ok)++;
		float want = (float)exp((double)x);
		if (memcmp(&y, &want, sizeof y) != 0)
			cr_assert_fail("x = %a: exp fast %a, library %a", (double)x, (double)y, (double)want);
	}
}

Test(htree_exp, table)
{
	for (int j = 0; j < 32; j++)
		cr_assert_eq(ht_etab_init[j], exp2(j / 32.0), "2^(%d/32)", j);
}

Test(htree_exp, every_7th_float, .timeout = 600)
{
	int64_t ok = 0, bad = 0;
	sweep(0x00000000u, 7, &ok, &bad);	/* [0, 100) */
	sweep(0x80000000u, 7, &ok, &bad);	/* (-110, -0] */
	cr_log_info("decided %lld, undecided %lld", (long long)ok, (long long)bad);
	/* every float in (-87, 88) but about 2 in 10^5 (midpoints) is decided */
	cr_assert_gt(ok, 300000000);
	cr_assert_lt(bad, ok / 1000 + 15000000);
}

Test(htree_exp, range_edges)
{
	const float xs[] = {-87.5f, -87.0f, 88.0f, 88.7f, 100.0f, INFINITY, -INFINITY, NAN};
	for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
		unsigned undecided = 0;
		(void)ht_exp_fast(xs[i], ht_etab_init, &undecided);
		cr_assert(undecided, "x = %a must go to the library", (double)xs[i]);
	}
	unsigned undecided = 0;
	float y = ht_exp_fast(0.0f, ht_etab_init, &undecided);
	cr_assert(!undecided && y == 1.0f);
	y = ht_exp_fast(-86.99f, ht_etab_init, &undecided);
	cr_assert(!undecided && y == (float)exp((double)-86.99f));
}
