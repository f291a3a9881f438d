/* dtype table and 16-bit float conversions. */
#include "ir/dtype.h"

#include <math.h>
#include <string.h>

static const struct {
	const char *name, *alias, *npy;
	int bytes;
	char cls;
} dtypes[] = {
#define X(e, name, bytes, cls, alias, npy) {name, alias, npy, bytes, cls},
	TINYC_DTYPES(X)
#undef X
};

static int valid(tinyc_dtype t)
{
	return t >= 0 && t < TINYC_DTYPE_COUNT;
}

const char *tinyc_dtype_name(tinyc_dtype t)
{
	return valid(t) ? dtypes[t].name : "?";
}

/* Look a dtype up by its name or its alias (f16, i32, ...). */
tinyc_dtype tinyc_dtype_from_name(const char *s, int len)
{
	for (int i = 0; i < TINYC_DTYPE_COUNT; i++) {
		const char *a = dtypes[i].alias;
		if ((int)strlen(dtypes[i].name) == len && !strncmp(s, dtypes[i].name, len))
			return i;
		if (a && (int)strlen(a) == len && !strncmp(s, a, len))
			return i;
	}
	return TINYC_DTYPE_NONE;
}

int tinyc_dtype_size(tinyc_dtype t)
{
	return valid(t) ? dtypes[t].bytes : 0;
}

int tinyc_dtype_is_float(tinyc_dtype t)
{
	return valid(t) && dtypes[t].cls == 'f';
}

int tinyc_dtype_is_int(tinyc_dtype t)
{
	return valid(t) && (dtypes[t].cls == 's' || dtypes[t].cls == 'u');
}

int tinyc_dtype_is_signed(tinyc_dtype t)
{
	return valid(t) && (dtypes[t].cls == 's' || dtypes[t].cls == 'f');
}

int tinyc_dtype_is_16bit_float(tinyc_dtype t)
{
	return t == TINYC_HALF || t == TINYC_BFLOAT16;
}

const char *tinyc_dtype_npy_descr(tinyc_dtype t)
{
	return valid(t) ? dtypes[t].npy : NULL;
}

static uint32_t f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static float bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* float32 -> binary16, round to nearest even; overflow gives inf, NaN stays NaN. */
uint16_t tinyc_f32_to_f16(float f)
{
	uint32_t u = f32_bits(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
	uint32_t absu = u & 0x7fffffff;
	if (absu > 0x7f800000)			/* NaN: keep a quiet NaN */
		return sign | 0x7e00;
	if (absu >= 0x477ff000)			/* >= 65520 rounds to inf */
		return sign | 0x7c00;
	if (absu < 0x38800000) {		/* subnormal half (or zero) */
		/* value = absu as float; half subnormal unit is 2^-24 */
		float a = bits_f32(absu);
		float scaled = a * 16777216.0f;	/* a / 2^-24, exact in float */
		/* round half to even */
		float r = nearbyintf(scaled);
		return sign | (uint16_t)r;
	}
	uint32_t mant = absu & 0x7fffff;
	int exp = (int)(absu >> 23) - 127 + 15;
	uint32_t h = ((uint32_t)exp << 10) | (mant >> 13);
	uint32_t rest = mant & 0x1fff;
	if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
		h++;				/* may carry into the exponent: still right */
	return sign | (uint16_t)h;
}

float tinyc_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
	if (exp == 0) {
		float v = ldexpf((float)mant, -24);
		return sign ? -v : v;
	}
	if (exp == 31)
		return bits_f32(sign | 0x7f800000 | (mant << 13));
	return bits_f32(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

/* float32 -> bfloat16, round to nearest even; NaN stays NaN. */
uint16_t tinyc_f32_to_bf16(float f)
{
	uint32_t u = f32_bits(f);
	if ((u & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

float tinyc_bf16_to_f32(uint16_t h)
{
	return bits_f32((uint32_t)h << 16);
}

/* Stored bits of a float value (see dtype.h). */
uint64_t tinyc_float_to_bits(tinyc_dtype t, double x)
{
	if (t == TINYC_HALF)
		return tinyc_f32_to_f16((float)x);
	if (t == TINYC_BFLOAT16)
		return tinyc_f32_to_bf16((float)x);
	if (t == TINYC_FLOAT)
		return f32_bits((float)x);
	uint64_t u;
	memcpy(&u, &x, 8);
	return u;
}

/* The float value whose stored bits are u (see dtype.h). */
double tinyc_bits_to_float(tinyc_dtype t, uint64_t u)
{
	if (t == TINYC_HALF)
		return tinyc_f16_to_f32((uint16_t)u);
	if (t == TINYC_BFLOAT16)
		return tinyc_bf16_to_f32((uint16_t)u);
	if (t == TINYC_FLOAT)
		return bits_f32((uint32_t)u);
	double d;
	memcpy(&d, &u, 8);
	return d;
}
