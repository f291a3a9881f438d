/* Element types of tinyc (tinygrad's names) and their properties. */
#ifndef TINYC_IR_DTYPE_H
#define TINYC_IR_DTYPE_H

#include <stdint.h>

/* X(ENUM, name, bytes, class, alias, npy-descr)
 * class: 'b' bool, 's' signed int, 'u' unsigned int, 'f' float. */
#define TINYC_DTYPES(X)                                 \
	X(BOOL, "bool", 1, 'b', NULL, "|b1")            \
	X(CHAR, "char", 1, 's', "i8", "|i1")            \
	X(UCHAR, "uchar", 1, 'u', "u8", "|u1")          \
	X(SHORT, "short", 2, 's', "i16", "<i2")         \
	X(USHORT, "ushort", 2, 'u', "u16", "<u2")       \
	X(INT, "int", 4, 's', "i32", "<i4")             \
	X(UINT, "uint", 4, 'u', "u32", "<u4")           \
	X(LONG, "long", 8, 's', "i64", "<i8")           \
	X(ULONG, "ulong", 8, 'u', "u64", "<u8")         \
	X(HALF, "half", 2, 'f', "f16", "<f2")           \
	X(BFLOAT16, "bfloat16", 2, 'f', "bf16", NULL)   \
	X(FLOAT, "float", 4, 'f', "f32", "<f4")         \
	X(DOUBLE, "double", 8, 'f', "f64", "<f8")

typedef enum tinyc_dtype {
#define X(e, name, bytes, cls, alias, npy) TINYC_##e,
	TINYC_DTYPES(X)
#undef X
	TINYC_DTYPE_COUNT,
	TINYC_DTYPE_NONE = -1,
} tinyc_dtype;

const char *tinyc_dtype_name(tinyc_dtype t);
/* Parse a dtype name or alias; TINYC_DTYPE_NONE if unknown. */
tinyc_dtype tinyc_dtype_from_name(const char *s, int len);
int tinyc_dtype_size(tinyc_dtype t);
int tinyc_dtype_is_float(tinyc_dtype t);
int tinyc_dtype_is_int(tinyc_dtype t);		/* signed or unsigned integer */
int tinyc_dtype_is_signed(tinyc_dtype t);	/* signed integers and floats */
int tinyc_dtype_is_16bit_float(tinyc_dtype t);	/* half, bfloat16 */
/* NumPy descr ("<f4"), NULL if NumPy has none. */
const char *tinyc_dtype_npy_descr(tinyc_dtype t);

/* The stored bits of a float value x of float dtype t (x converted to t's format; for the
 * 16-bit types through float32, so give a value already representable in t to avoid double
 * rounding), and the value whose stored bits are u. */
uint64_t tinyc_float_to_bits(tinyc_dtype t, double x);
double tinyc_bits_to_float(tinyc_dtype t, uint64_t u);

/* IEEE binary16 and bfloat16 conversions, round-to-nearest-even. */
uint16_t tinyc_f32_to_f16(float f);
float tinyc_f16_to_f32(uint16_t h);
uint16_t tinyc_f32_to_bf16(float f);
float tinyc_bf16_to_f32(uint16_t h);

#endif
