/* The htree selection's exp, one source for two compilers.
 *
 * The selection needs exp(x) for float x correctly rounded to float (the CPU reference's
 * expf; see ir/htree_ref.c).  ht_exp_fast computes it in double without conversions but
 * the first (float -> double) and without branches, so that the kernels can interleave
 * the 16 heads' exps:
 *
 *   t = fma(x, 32/ln2, 0x1.8p52)       k = rint(32 x / ln2) in the low bits of t
 *   r = x - k ln2/32                    |r| <= ln2/64, ln2/32 in two parts (Cody-Waite)
 *   y = 2^(k%32 / 32) (1 + r + ... + r^5/120) 2^(k/32)      relative error < 2^-47
 *   float bits of y rounded to nearest: (double bits >> 29) + round bit, rebiased
 *
 * The integer rounding is the correct one unless y lies within 2^-41 (relative) of a float
 * rounding midpoint; then, and for x off (-87, 88) (results near or past the float range),
 * *bad is set and the caller takes the library path (double exp rounded to float).
 *
 * The text between HT_EXP_EMIT( ... ) is both: codegen/htree_cuda.c defines HT_EXP_EMIT to
 * make it a string of CUDA source, the unit test tests/unit/test_htree_exp.c to compile it
 * as C (with its own HT_FN, HT_TABLE, ht_hi, ht_lo and ht_bits_float), so that the CPU
 * check runs the very arithmetic the GPU runs.  No '#' directives may appear inside.
 */
HT_EXP_EMIT(
/* 2^(j/32), j < 32, correctly rounded */
HT_TABLE double ht_etab_init[32] = {
	0x1.0000000000000p+0, 0x1.059b0d3158574p+0, 0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0,
	0x1.172b83c7d517bp+0, 0x1.1d4873168b9aap+0, 0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0,
	0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0, 0x1.3dea64c123422p+0, 0x1.44e086061892dp+0,
	0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0, 0x1.5ab07dd485429p+0, 0x1.6247eb03a5585p+0,
	0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0, 0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
	0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0, 0x1.9c49182a3f090p+0, 0x1.a5503b23e255dp+0,
	0x1.ae89f995ad3adp+0, 0x1.b7f76f2fb5e47p+0, 0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0,
	0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0, 0x1.ea4afa2a490dap+0, 0x1.f50765b6e4540p+0,
};

/* exp(x) correctly rounded to float, with etab = ht_etab_init (in shared memory on the
 * GPU); *bad |= 1 where this cannot decide (then the result is not to be used). */
HT_FN float ht_exp_fast(float x, const double *etab, unsigned *bad)
{
	const double xd = (double)x;
	const double t = fma(xd, 0x1.71547652b82fep+5, 0x1.8p52);
	const int k = (int)ht_lo(t);
	const double kd = t - 0x1.8p52;
	double r = fma(kd, -0x1.62e42fefa39efp-6, xd);
	r = fma(kd, -0x1.abc9e3b39803fp-61, r);
	double p = fma(r, 0x1.1111111111111p-7, 0x1.5555555555555p-5);
	p = fma(p, r, 0x1.5555555555555p-3);
	p = fma(p, r, 0.5);
	p = fma(p, r, 1.0);
	p = fma(p, r, 1.0);
	const double y = etab[k & 31] * p;
	const unsigned lo = ht_lo(y), hi = ht_hi(y) + ((unsigned)(k >> 5) << 20);
	*bad |= (unsigned)!(x > -87.0f && x < 88.0f) |
		(unsigned)((lo & 0x1fffffffu) - (0x10000000u - 2048u) <= 4096u);
	return ht_bits_float((hi << 3 | lo >> 29) + (lo >> 28 & 1u) - (896u << 23));
}
)
