/* Host tensors: allocation, element access, rounding to a dtype, seeded random fill,
 * comparison.  Elements are stored natively (half and bfloat16 as their bit patterns,
 * bool as one byte 0/1) so that .npy files and device buffers are plain copies. */
#include "ir/tensor.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The largest byte size a tensor may have: well inside size_t and int64. */
#define TENSOR_MAX_BYTES TINYC_MAX_BYTES	/* the uop verifier's cap */

/* Allocate a zero-filled tensor.  Negative dims, a rank outside 0..TINYC_MAX_RANK or a
 * size beyond TENSOR_MAX_BYTES are diagnostics. */
tinyc_tensor *tinyc_tensor_alloc(tinyc_ctx *ctx, tinyc_dtype dt, int rank, const int64_t *shape)
{
	if (dt < 0 || dt >= TINYC_DTYPE_COUNT) {
		tinyc_error(ctx, "InvalidArgument", "tensor of an unknown dtype (%d)", (int)dt);
		return NULL;
	}
	if (rank < 0 || rank > TINYC_MAX_RANK) {
		tinyc_error(ctx, "TooLarge", "tensor rank %d is outside 0..%d", rank, TINYC_MAX_RANK);
		return NULL;
	}
	int64_t size = tinyc_dtype_size(dt);
	for (int i = 0; i < rank; i++) {
		if (shape[i] < 0) {
			tinyc_error(ctx, "InvalidArgument", "tensor dim %d is negative (%lld)", i,
				    (long long)shape[i]);
			return NULL;
		}
		if (shape[i] > 0 && size > TENSOR_MAX_BYTES / shape[i]) {
			tinyc_error(ctx, "TooLarge", "tensor of more than 2^46 bytes");
			return NULL;
		}
		size *= shape[i];
	}
	tinyc_tensor *t = tinyc_calloc(ctx, 1, sizeof(*t));
	if (!t)
		return NULL;
	t->dtype = dt;
	t->rank = rank;
	for (int i = 0; i < rank; i++)
		t->shape[i] = shape[i];
	t->data = tinyc_calloc(ctx, 1, size ? (size_t)size : 1);
	if (!t->data) {
		free(t);
		return NULL;
	}
	return t;
}

void tinyc_tensor_free(tinyc_tensor *t)
{
	if (!t)
		return;
	free(t->data);
	free(t);
}

/* Number of elements: the product of the dims (1 for a scalar). */
int64_t tinyc_tensor_numel(const tinyc_tensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->rank; i++)
		n *= t->shape[i];
	return n;
}

/* Round x to a binary floating format with p significant bits, smallest normal exponent
 * emin and largest finite value maxfin: the ulp of x is 2^(e-p) for |x| in [2^(e-1), 2^e),
 * never below the subnormal ulp 2^(emin-p+1); nearbyint rounds to nearest even. */
static double round_format(double x, int p, int emin, double maxfin)
{
	if (x == 0 || isnan(x) || isinf(x))
		return x;
	int e;
	frexp(x, &e);
	int q = e - p;
	if (q < emin - p + 1)
		q = emin - p + 1;
	double r = ldexp(nearbyint(ldexp(x, -q)), q);
	if (fabs(r) > maxfin)
		return copysign(INFINITY, x);
	return r;
}

/* Truncate toward zero and saturate to [lo, hi]; NaN gives 0.  lo and hi are exact
 * doubles (powers of two, or bounds of narrow types). */
static double trunc_saturate(double x, double lo, double hi)
{
	if (isnan(x))
		return 0;
	x = trunc(x);
	if (x < lo)
		return lo;
	if (x > hi)
		return hi;
	return x;
}

/* The value x takes when stored as dt (see tensor.h).  For long/ulong the result is the
 * nearest double: saturation gives 2^63 / 2^64, which double_to_i64/u64 map to
 * INT64_MAX / UINT64_MAX. */
double tinyc_round_to_dtype(tinyc_dtype dt, double x)
{
	switch (dt) {
	case TINYC_BOOL: return x != 0;
	case TINYC_CHAR: return trunc_saturate(x, -128, 127);
	case TINYC_UCHAR: return trunc_saturate(x, 0, 255);
	case TINYC_SHORT: return trunc_saturate(x, -32768, 32767);
	case TINYC_USHORT: return trunc_saturate(x, 0, 65535);
	case TINYC_INT: return trunc_saturate(x, -2147483648.0, 2147483647.0);
	case TINYC_UINT: return trunc_saturate(x, 0, 4294967295.0);
	case TINYC_LONG: return trunc_saturate(x, -0x1p63, 0x1p63);
	case TINYC_ULONG: return trunc_saturate(x, 0, 0x1p64);
	case TINYC_HALF: return round_format(x, 11, -14, 65504.0);
	case TINYC_BFLOAT16: return round_format(x, 8, -126, 0x1.fep127);
	case TINYC_FLOAT: return round_format(x, 24, -126, FLT_MAX);
	case TINYC_DOUBLE: return x;
	default: return x;
	}
}

/* Convert a saturated in-range double to int64, mapping the long saturation bounds so that
 * 2^63 and above give INT64_MAX. */
static int64_t double_to_i64(double x)
{
	if (isnan(x))
		return 0;
	if (x >= 0x1p63)
		return INT64_MAX;
	if (x <= -0x1p63)
		return INT64_MIN;
	return (int64_t)trunc(x);
}

/* Same for uint64 (negative values give 0). */
static uint64_t double_to_u64(double x)
{
	if (isnan(x) || x <= 0)
		return 0;
	if (x >= 0x1p64)
		return UINT64_MAX;
	return (uint64_t)trunc(x);
}

/* Element i as double. */
double tinyc_tensor_get(const tinyc_tensor *t, int64_t i)
{
	const unsigned char *p = (const unsigned char *)t->data + i * tinyc_dtype_size(t->dtype);
	switch (t->dtype) {
	case TINYC_BOOL: return *p != 0;
	case TINYC_CHAR: { int8_t v; memcpy(&v, p, 1); return v; }
	case TINYC_UCHAR: return *p;
	case TINYC_SHORT: { int16_t v; memcpy(&v, p, 2); return v; }
	case TINYC_USHORT: { uint16_t v; memcpy(&v, p, 2); return v; }
	case TINYC_INT: { int32_t v; memcpy(&v, p, 4); return v; }
	case TINYC_UINT: { uint32_t v; memcpy(&v, p, 4); return v; }
	case TINYC_LONG: { int64_t v; memcpy(&v, p, 8); return (double)v; }
	case TINYC_ULONG: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
	case TINYC_HALF: { uint16_t v; memcpy(&v, p, 2); return tinyc_f16_to_f32(v); }
	case TINYC_BFLOAT16: { uint16_t v; memcpy(&v, p, 2); return tinyc_bf16_to_f32(v); }
	case TINYC_FLOAT: { float v; memcpy(&v, p, 4); return v; }
	case TINYC_DOUBLE: { double v; memcpy(&v, p, 8); return v; }
	default: return 0;
	}
}

/* Store the low bytes of the 64-bit pattern u (little-endian host: the first bytes). */
static void store_bits(tinyc_tensor *t, int64_t i, uint64_t u)
{
	int size = tinyc_dtype_size(t->dtype);
	unsigned char *p = (unsigned char *)t->data + i * size;
	switch (size) {
	case 1: { uint8_t v = (uint8_t)u; memcpy(p, &v, 1); break; }
	case 2: { uint16_t v = (uint16_t)u; memcpy(p, &v, 2); break; }
	case 4: { uint32_t v = (uint32_t)u; memcpy(p, &v, 4); break; }
	default: memcpy(p, &u, 8); break;
	}
}

/* Store v: floats rounded to the dtype, integers truncated and saturated, bool v != 0. */
void tinyc_tensor_set(tinyc_tensor *t, int64_t i, double v)
{
	double r = tinyc_round_to_dtype(t->dtype, v);
	unsigned char *p = (unsigned char *)t->data + i * tinyc_dtype_size(t->dtype);
	switch (t->dtype) {
	case TINYC_HALF: { uint16_t h = tinyc_f32_to_f16((float)r); memcpy(p, &h, 2); break; }
	case TINYC_BFLOAT16: { uint16_t h = tinyc_f32_to_bf16((float)r); memcpy(p, &h, 2); break; }
	case TINYC_FLOAT: { float f = (float)r; memcpy(p, &f, 4); break; }
	case TINYC_DOUBLE: memcpy(p, &r, 8); break;
	case TINYC_ULONG: store_bits(t, i, double_to_u64(r)); break;
	default: store_bits(t, i, (uint64_t)double_to_i64(r)); break;
	}
}

/* Element i as a 64-bit integer (see tensor.h). */
int64_t tinyc_tensor_get_int(const tinyc_tensor *t, int64_t i)
{
	const unsigned char *p = (const unsigned char *)t->data + i * tinyc_dtype_size(t->dtype);
	switch (t->dtype) {
	case TINYC_LONG: { int64_t v; memcpy(&v, p, 8); return v; }
	case TINYC_ULONG: { int64_t v; memcpy(&v, p, 8); return v; }	/* the bits */
	case TINYC_HALF: case TINYC_BFLOAT16: case TINYC_FLOAT: case TINYC_DOUBLE:
		return double_to_i64(tinyc_round_to_dtype(TINYC_LONG, tinyc_tensor_get(t, i)));
	default: return (int64_t)tinyc_tensor_get(t, i);	/* exact for narrow ints */
	}
}

/* The integer v (its bits read as uint64 when from_unsigned) rounded once, to nearest even,
 * to the float dtype dt.  Below 2^53 the double is exact and rounds once; above, the
 * significand is rounded here in integer arithmetic so no double rounding happens. */
double tinyc_int_to_float(tinyc_dtype dt, int64_t v, int from_unsigned)
{
	int neg = !from_unsigned && v < 0;
	uint64_t mag = neg ? UINT64_C(0) - (uint64_t)v : (uint64_t)v;
	double r;
	if (mag < (UINT64_C(1) << 53)) {
		r = (double)mag;
	} else {
		int p = dt == TINYC_HALF ? 11 : dt == TINYC_BFLOAT16 ? 8 : dt == TINYC_FLOAT ? 24 : 53;
		int msb = 63;
		while (!(mag >> msb))
			msb--;
		int s = msb + 1 - p;	/* bits dropped, >= 1 */
		uint64_t q = mag >> s, rem = mag & ((UINT64_C(1) << s) - 1);
		uint64_t halfway = UINT64_C(1) << (s - 1);
		if (rem > halfway || (rem == halfway && (q & 1)))
			q++;
		r = ldexp((double)q, s);
	}
	return tinyc_round_to_dtype(dt, neg ? -r : r);
}

/* Store an integer (see tensor.h). */
void tinyc_tensor_set_int(tinyc_tensor *t, int64_t i, int64_t v)
{
	if (tinyc_dtype_is_float(t->dtype)) {
		tinyc_tensor_set(t, i, tinyc_int_to_float(t->dtype, v, 0));
		return;
	}
	if (t->dtype == TINYC_BOOL)
		v = v != 0;
	store_bits(t, i, (uint64_t)v);
}

/* splitmix64: a small, well-mixed 64-bit generator, identical on every machine. */
static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Fill with seeded values: floats k * 2^-(p-1) - 1 for k < 2^p with p the significand
 * bits of the dtype (so every value is exact and in [-1,1)), signed ints in [-8,8),
 * unsigned ints in [0,16), bools 0/1. */
void tinyc_tensor_fill_random(tinyc_tensor *t, uint64_t seed)
{
	uint64_t state = seed;
	int64_t n = tinyc_tensor_numel(t);
	int p = t->dtype == TINYC_HALF ? 11 : t->dtype == TINYC_BFLOAT16 ? 8
		: t->dtype == TINYC_FLOAT ? 24 : 53;
	for (int64_t i = 0; i < n; i++) {
		uint64_t r = splitmix64(&state);
		if (tinyc_dtype_is_float(t->dtype))
			tinyc_tensor_set(t, i, ldexp((double)(r >> (64 - p)), -(p - 1)) - 1.0);
		else if (t->dtype == TINYC_BOOL)
			tinyc_tensor_set_int(t, i, (int64_t)(r >> 63));
		else if (tinyc_dtype_is_signed(t->dtype))
			tinyc_tensor_set_int(t, i, (int64_t)(r >> 60) - 8);
		else
			tinyc_tensor_set_int(t, i, (int64_t)(r >> 60));
	}
}

/* Compare a (result) with b (reference), elementwise as doubles.  Equal values (including
 * two infinities of one sign and two NaNs) differ by 0; a NaN or infinity against anything
 * else differs by infinity.  Shapes must agree (ShapeMismatch otherwise); dtypes may differ. */
int tinyc_tensor_compare(tinyc_ctx *ctx, const tinyc_tensor *a, const tinyc_tensor *b,
			 double atol, double rtol, tinyc_cmp *res)
{
	int same = a->rank == b->rank;
	for (int i = 0; same && i < a->rank; i++)
		same = a->shape[i] == b->shape[i];
	if (!same) {
		tinyc_error(ctx, "ShapeMismatch", "cannot compare tensors of different shapes "
			    "(rank %d vs rank %d)", a->rank, b->rank);
		return -1;
	}
	memset(res, 0, sizeof(*res));
	int64_t n = tinyc_tensor_numel(a);
	for (int64_t i = 0; i < n; i++) {
		double x = tinyc_tensor_get(a, i), y = tinyc_tensor_get(b, i);
		double d;
		if (x == y || (isnan(x) && isnan(y)))
			d = 0;
		else if (!isfinite(x) || !isfinite(y))
			d = INFINITY;
		else
			d = fabs(x - y);
		double rel = d == 0 ? 0 : isinf(d) ? INFINITY : d / (fabs(y) + 1e-12);
		if (d > res->max_abs) {
			res->max_abs = d;
			res->worst = i;
		}
		if (rel > res->max_rel)
			res->max_rel = rel;
		if (d > 0 && (isinf(d) || !(d <= atol + rtol * fabs(y))))
			res->mismatched++;
	}
	return 0;
}

int64_t tinyc_host_memory_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (f) {
		char line[256];
		long long kb;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) {
				fclose(f);
				return kb > INT64_MAX / 1024 ? INT64_MAX : (int64_t)kb * 1024;
			}
		fclose(f);
	}
	long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	if (pages < 0 || size <= 0)
		return -1;
	return (int64_t)pages > INT64_MAX / size ? INT64_MAX : (int64_t)pages * size;
}

/* a + b, saturating at INT64_MAX (both non-negative). */
static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

int tinyc_io_bytes(const tinyc_graph *g, const tinyc_bindings *b, int64_t *bytes)
{
	int64_t total = 0;
	for (int i = 0; i < g->n; i++) {
		const tinyc_uop *u = &g->nodes[i];
		if (u->op != TINYC_OP_BUFFER && u->op != TINYC_OP_OUTPUT)
			continue;
		int64_t elems = 1, t;
		for (int d = 0; d < u->rank; d++) {
			int64_t n = tinyc_dim_value(&u->shape[d], b);
			if (n < 0)
				return -1;
			if (u->strides) {	/* the span of the strided storage */
				int64_t st = tinyc_dim_value(&u->strides[d], b);
				if (st < 0)
					return -1;
				if (__builtin_mul_overflow(n - 1, st, &t) ||
				    __builtin_add_overflow(elems, t, &elems))
					elems = INT64_MAX;
			} else if (__builtin_mul_overflow(elems, n, &elems)) {
				elems = INT64_MAX;
			}
		}
		if (__builtin_mul_overflow(elems, (int64_t)tinyc_dtype_size(u->dtype), &t))
			t = INT64_MAX;
		total = sat_add(total, t);
	}
	*bytes = total;
	return 0;
}

int tinyc_memory_check(tinyc_ctx *ctx, const char *what, int64_t need, int64_t limit)
{
	int64_t avail = tinyc_host_memory_available();
	if (limit >= 0 && (avail < 0 || limit < avail))
		avail = limit;
	if (avail < 0 || need <= avail)
		return 0;
	return tinyc_error(ctx, "OutOfMemory", "%s needs %" PRId64 " bytes, %" PRId64 " available%s",
			   what, need, avail, limit >= 0 && avail == limit ? " (--max-memory)" : "");
}
