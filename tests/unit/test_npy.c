/* Unit tests of host tensors (ir/tensor.c) and .npy I/O (ir/npy.c).
 *
 * The expected .npy bytes below are written by hand from the format description (and match
 * what NumPy 2.x's np.save writes byte for byte, checked when the tests were written); files
 * written by real NumPy come from the htree golden set beside the repository.  Rounding
 * expectations are worked out by hand in the comments. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/tensor.h"

static tinyc_ctx *ctx;
static char dir[64];

static void setup(void)
{
	ctx = tinyc_ctx_alloc();
	strcpy(dir, "/tmp/tinyc_npy_XXXXXX");
	cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
	tinyc_ctx_print_diags(ctx, stderr);
	tinyc_ctx_free(ctx);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert(system(cmd) == 0);
}

TestSuite(npy, .init = setup, .fini = teardown);
TestSuite(tensor, .init = setup, .fini = teardown);

/* A path in the test's directory (static storage: one at a time per expression). */
static const char *path(const char *name)
{
	static char p[128];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

/* Write raw bytes to a file. */
static void put(const char *p, const void *bytes, size_t n)
{
	FILE *f = fopen(p, "wb");
	cr_assert(f);
	cr_assert(fwrite(bytes, 1, n, f) == n);
	fclose(f);
}

/* Write a .npy of version major.0 with the given header text (padded as given) and data. */
static void put_npy(const char *p, int major, const char *header, const void *data, size_t n)
{
	unsigned char buf[4096];
	size_t hl = strlen(header), o = 0;
	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (unsigned char)major;
	buf[7] = 0;
	o = 8;
	if (major == 1) {
		buf[o++] = (unsigned char)(hl & 0xff);
		buf[o++] = (unsigned char)(hl >> 8);
	} else {
		for (int k = 0; k < 4; k++)
			buf[o++] = (unsigned char)(hl >> (8 * k));
	}
	memcpy(buf + o, header, hl);
	o += hl;
	cr_assert(o + n <= sizeof(buf));
	memcpy(buf + o, data, n);
	put(p, buf, o + n);
}

/* Read a whole file. */
static size_t slurp(const char *p, unsigned char *buf, size_t cap)
{
	FILE *f = fopen(p, "rb");
	cr_assert(f);
	size_t n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

/* The last diagnostic must be of `kind` and its message must contain `part`. */
static void expect_diag(const char *kind, const char *part)
{
	int n = tinyc_ctx_diag_count(ctx);
	cr_assert(n > 0, "expected a %s diagnostic", kind);
	const tinyc_diag *d = tinyc_ctx_diag(ctx, n - 1);
	cr_expect_str_eq(d->kind, kind);
	cr_expect(strstr(d->msg, part), "message '%s' lacks '%s'", d->msg, part);
	tinyc_ctx_clear_diags(ctx);
}

/* A header padded with spaces and '\n' so that 10 + its length is a multiple of 64. */
static char *padded(const char *dict)
{
	static char h[256];
	size_t n = strlen(dict);
	strcpy(h, dict);
	while ((10 + n + 1) % 64)
		h[n++] = ' ';
	h[n++] = '\n';
	h[n] = 0;
	return h;
}

Test(npy, read_v1_float32)
{
	float data[6] = {1, -2, 3.5f, 0.25f, -0.0f, 1e30f};
	put_npy(path("a.npy"), 1, padded("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"),
		data, sizeof(data));
	tinyc_tensor *t = tinyc_npy_read(ctx, path("a.npy"));
	cr_assert(t);
	cr_expect_eq(t->dtype, TINYC_FLOAT);
	cr_expect_eq(t->rank, 2);
	cr_expect_eq(t->shape[0], 2);
	cr_expect_eq(t->shape[1], 3);
	for (int i = 0; i < 6; i++)
		cr_expect_eq(tinyc_tensor_get(t, i), (double)data[i]);
	tinyc_tensor_free(t);
}

Test(npy, read_v2_scalar_long)
{
	int64_t v = -1234567890123LL;
	put_npy(path("s.npy"), 2, "{'descr': '<i8', 'fortran_order': False, 'shape': (), }\n", &v, 8);
	tinyc_tensor *t = tinyc_npy_read(ctx, path("s.npy"));
	cr_assert(t);
	cr_expect_eq(t->dtype, TINYC_LONG);
	cr_expect_eq(t->rank, 0);
	cr_expect_eq(tinyc_tensor_numel(t), 1);
	cr_expect_eq(tinyc_tensor_get_int(t, 0), -1234567890123LL);
	tinyc_tensor_free(t);
}

Test(npy, read_v3_and_spelling_variants)
{
	/* v3 (utf-8 header), double quotes, '=' byte order, no trailing comma, extra blanks */
	uint16_t d[3] = {1, 65535, 7};
	put_npy(path("u.npy"), 3, "{ \"descr\" : \"=u2\" , \"shape\" : ( 3 , ) , "
		"\"fortran_order\" : False }\n", d, sizeof(d));
	tinyc_tensor *t = tinyc_npy_read(ctx, path("u.npy"));
	cr_assert(t);
	cr_expect_eq(t->dtype, TINYC_USHORT);
	cr_expect_eq(t->rank, 1);
	cr_expect_eq(t->shape[0], 3);
	cr_expect_eq(tinyc_tensor_get(t, 1), 65535.0);
	tinyc_tensor_free(t);
	/* '|u1' and '<u1' both mean uchar; bool bytes other than 0/1 read as true */
	unsigned char b[4] = {0, 1, 2, 255};
	put_npy(path("b.npy"), 1, padded("{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }"), b, 4);
	t = tinyc_npy_read(ctx, path("b.npy"));
	cr_assert(t);
	cr_expect_eq(t->dtype, TINYC_BOOL);
	unsigned char *bd = t->data;
	cr_expect(bd[0] == 0 && bd[1] == 1 && bd[2] == 1 && bd[3] == 1);
	tinyc_tensor_free(t);
	put_npy(path("c.npy"), 1, padded("{'descr': '<u1', 'fortran_order': False, 'shape': (2, 2), }"), b, 4);
	t = tinyc_npy_read(ctx, path("c.npy"));
	cr_assert(t);
	cr_expect_eq(t->dtype, TINYC_UCHAR);
	cr_expect_eq(tinyc_tensor_get(t, 3), 255.0);
	tinyc_tensor_free(t);
}

Test(npy, write_matches_numpy_bytes)
{
	int64_t shape[2] = {2, 3};
	tinyc_tensor *t = tinyc_tensor_alloc(ctx, TINYC_FLOAT, 2, shape);
	cr_assert(t);
	for (int i = 0; i < 6; i++)
		tinyc_tensor_set(t, i, i * 0.5);
	cr_assert(tinyc_npy_write(ctx, path("w.npy"), t) == 0);
	unsigned char got[512];
	size_t n = slurp(path("w.npy"), got, sizeof(got));
	/* 10 bytes of preamble + 118 bytes of header = 128 = 2 * 64, then 24 bytes of data */
	const char *hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
	cr_assert_eq(n, 128 + 24);
	cr_expect(!memcmp(got, "\x93NUMPY\x01\x00\x76\x00", 10));
	cr_expect(!memcmp(got + 10, hdr, strlen(hdr)));
	for (size_t i = 10 + strlen(hdr); i < 127; i++)
		cr_expect_eq(got[i], ' ');
	cr_expect_eq(got[127], '\n');
	float f[6];
	memcpy(f, got + 128, 24);
	for (int i = 0; i < 6; i++)
		cr_expect_eq(f[i], i * 0.5f);
	tinyc_tensor_free(t);

	/* 1-D and 0-D shapes are written "(3,)" and "()" */
	int64_t three = 3;
	t = tinyc_tensor_alloc(ctx, TINYC_BOOL, 1, &three);
	cr_assert(tinyc_npy_write(ctx, path("b.npy"), t) == 0);
	n = slurp(path("b.npy"), got, sizeof(got));
	cr_expect_eq(n, 128 + 3);
	cr_expect(!memcmp(got + 10, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", 57));
	tinyc_tensor_free(t);
	t = tinyc_tensor_alloc(ctx, TINYC_LONG, 0, NULL);
	cr_assert(tinyc_npy_write(ctx, path("s.npy"), t) == 0);
	n = slurp(path("s.npy"), got, sizeof(got));
	cr_expect_eq(n, 128 + 8);
	cr_expect(!memcmp(got + 10, "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", 55));
	tinyc_tensor_free(t);
}

Test(npy, round_trip_every_dtype)
{
	int64_t shape[3] = {2, 1, 3};
	for (int dt = 0; dt < TINYC_DTYPE_COUNT; dt++) {
		if (!tinyc_dtype_npy_descr(dt))
			continue;
		tinyc_tensor *t = tinyc_tensor_alloc(ctx, dt, 3, shape);
		cr_assert(t);
		tinyc_tensor_fill_random(t, 42 + dt);
		cr_assert(tinyc_npy_write(ctx, path("r.npy"), t) == 0);
		tinyc_tensor *u = tinyc_npy_read(ctx, path("r.npy"));
		cr_assert(u, "dtype %s", tinyc_dtype_name(dt));
		cr_expect_eq(u->dtype, dt);
		cr_expect_eq(u->rank, 3);
		cr_expect(u->shape[0] == 2 && u->shape[1] == 1 && u->shape[2] == 3);
		cr_expect(!memcmp(t->data, u->data, 6 * (size_t)tinyc_dtype_size(dt)),
			  "dtype %s", tinyc_dtype_name(dt));
		tinyc_tensor_free(t);
		tinyc_tensor_free(u);
	}
}

Test(npy, bfloat16_cannot_be_written)
{
	int64_t two = 2;
	tinyc_tensor *t = tinyc_tensor_alloc(ctx, TINYC_BFLOAT16, 1, &two);
	cr_expect(tinyc_npy_write(ctx, path("x.npy"), t) == -1);
	expect_diag("NpyError", "bfloat16");
	tinyc_tensor_free(t);
}

/* Reading `bytes` must fail with `kind`, naming the file and saying `part`. */
static void expect_bad(const void *bytes, size_t n, const char *kind, const char *part)
{
	put(path("bad.npy"), bytes, n);
	cr_expect_null(tinyc_npy_read(ctx, path("bad.npy")));
	int nd = tinyc_ctx_diag_count(ctx);
	cr_assert(nd > 0);
	cr_expect(strstr(tinyc_ctx_diag(ctx, nd - 1)->msg, "bad.npy"), "the file is named");
	expect_diag(kind, part);
}

/* A v1 file with the given header (padded) and n data bytes of zeros. */
static size_t make(unsigned char *buf, const char *dict, size_t ndata)
{
	const char *h = padded(dict);
	size_t hl = strlen(h);
	memcpy(buf, "\x93NUMPY\x01\x00", 8);
	buf[8] = (unsigned char)hl;
	buf[9] = (unsigned char)(hl >> 8);
	memcpy(buf + 10, h, hl);
	memset(buf + 10 + hl, 0, ndata);
	return 10 + hl + ndata;
}

Test(npy, errors)
{
	unsigned char b[1024];
	size_t n;
	expect_bad("hello world, not numpy", 22, "NpyError", "bad magic");
	expect_bad("\x93NUMPY\x01", 7, "NpyError", "bad magic");
	expect_bad("\x93NUMPY\x04\x00\x10\x00", 10, "NpyError", "version 4.0");
	n = make(b, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24);
	expect_bad(b, 40, "NpyError", "truncated header");
	expect_bad(b, n - 1, "NpyError", "truncated data: expected 24 bytes, found 23");
	n = make(b, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24);
	expect_bad(b, n, "NpyError", "Fortran");
	n = make(b, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 24);
	expect_bad(b, n, "NpyError", "big-endian");
	n = make(b, "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", 16);
	expect_bad(b, n, "NpyError", "object arrays");
	n = make(b, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8);
	expect_bad(b, n, "NpyError", "structured");
	n = make(b, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16);
	expect_bad(b, n, "NpyError", "unsupported dtype '<c8'");
	n = make(b, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 0);
	expect_bad(b, n, "NpyError", "overflows");
	n = make(b, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 0);
	expect_bad(b, n, "NpyError", "too large");
	n = make(b, "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000,), }", 8);
	expect_bad(b, n, "NpyError", "truncated data: expected 4000000 bytes, found 8");
	n = make(b, "{'descr': '<f4', 'fortran_order': False}", 4);
	expect_bad(b, n, "NpyError", "lacks");
	n = make(b, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", 24);
	expect_bad(b, n, "NpyError", "unexpected header key 'x'");
	n = make(b, "{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }", 24);
	expect_bad(b, n, "NpyError", "not a tuple");
	n = make(b, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 3), }", 24);
	expect_bad(b, n, "NpyError", "not a bool");
	n = make(b, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } garbage", 24);
	expect_bad(b, n, "NpyError", "text after the dict");
	n = make(b, "\x01\x02\x03 binary junk", 0);
	expect_bad(b, n, "NpyError", "malformed header");
	n = make(b, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1), }", 4);
	expect_bad(b, n, "NpyError", "rank above 16");
	/* a header length beyond the file */
	memcpy(b, "\x93NUMPY\x02\x00\xff\xff\x00\x00{", 13);
	expect_bad(b, 13, "NpyError", "truncated header");
	memcpy(b, "\x93NUMPY\x02\x00\xff\xff\xff\x7f{", 13);
	expect_bad(b, 13, "NpyError", "longer than 1 MiB");

	cr_expect_null(tinyc_npy_read(ctx, path("does-not-exist.npy")));
	expect_diag("IOError", "does-not-exist.npy");
	int64_t one = 1;
	tinyc_tensor *t = tinyc_tensor_alloc(ctx, TINYC_FLOAT, 1, &one);
	cr_expect(tinyc_npy_write(ctx, "/nonexistent-dir/x.npy", t) == -1);
	expect_diag("IOError", "/nonexistent-dir/x.npy");
	tinyc_tensor_free(t);
}

/* Files written by real NumPy (1.24): the htree golden RoPE table, float32 [32,8] with
 * row p = cos(float32(p) * inv_freq), inv_freq_j = 1/10000^(2j/16), and an int32 index list. */
Test(npy, reads_numpy_written_files)
{
	tinyc_tensor *t = tinyc_npy_read(ctx, TINYC_GOLDEN_DIR "/rope_K16_N32_cos.npy");
	if (!t && access(TINYC_GOLDEN_DIR "/rope_K16_N32_cos.npy", R_OK) != 0)
		cr_skip_test("golden data not present at " TINYC_GOLDEN_DIR);
	cr_assert(t);
	cr_expect_eq(t->dtype, TINYC_FLOAT);
	cr_assert(t->rank == 2 && t->shape[0] == 32 && t->shape[1] == 8);
	for (int p = 0; p < 32; p++)
		for (int j = 0; j < 8; j++) {
			double inv = 1.0 / pow(10000.0, 2.0 * j / 16);
			cr_expect(fabs(tinyc_tensor_get(t, p * 8 + j) - cos(p * inv)) < 1e-5,
				  "cos[%d][%d]", p, j);
		}
	tinyc_tensor_free(t);
	t = tinyc_npy_read(ctx, TINYC_GOLDEN_DIR "/v2_multilevel_T640_sel_positions.npy");
	cr_assert(t);
	cr_expect_eq(t->dtype, TINYC_INT);
	cr_assert(t->rank == 1 && t->shape[0] == 12);
	static const int want[12] = {1, 2, 31, 32, 33, 213, 320, 426, 631, 635, 638, 639};
	for (int i = 0; i < 12; i++)
		cr_expect_eq(tinyc_tensor_get_int(t, i), want[i]);
	tinyc_tensor_free(t);
}

/* Rounding to each dtype, worked out by hand. */
Test(tensor, round_to_dtype)
{
	/* half: 11 significant bits; in [2048,4096) the spacing is 2, ties go to even */
	cr_expect_eq(tinyc_round_to_dtype(TINYC_HALF, 2049), 2048);
	cr_expect_eq(tinyc_round_to_dtype(TINYC_HALF, 2051), 2052);
	cr_expect_eq(tinyc_round_to_dtype(TINYC_HALF, 2049.0001), 2050);
	cr_expect_eq(tinyc_round_to_dtype(TINYC_HALF, 65504), 65504);
	cr_expect_eq(tinyc_round_to_dtype(TINYC_HALF, 65519.99), 65504);
	cr_expect(isinf(tinyc_round_to_dtype(TINYC_HALF, 65520)));	/* tie to even = 2^16 */
	cr_expect_eq(tinyc_round_to_dtype(TINYC_HALF, 0x1p-24), 0x1p-24);	/* smallest subnormal */
	cr_expect_eq(tinyc_round_to_dtype(TINYC_HALF, 0x1p-25), 0);	/* tie to even: 0 */
	cr_expect_eq(tinyc_round_to_dtype(TINYC_HALF, 0x1.8p-25), 0x1p-24);
	cr_expect_eq(tinyc_round_to_dtype(TINYC_HALF, 3 * 0x1p-25), 0x1p-23);	/* 1.5 ulp -> 2 */
	cr_expect(isnan(tinyc_round_to_dtype(TINYC_HALF, NAN)));
	/* bfloat16: 8 significant bits; in [256,512) the spacing is 2 */
	cr_expect_eq(tinyc_round_to_dtype(TINYC_BFLOAT16, 257), 256);
	cr_expect_eq(tinyc_round_to_dtype(TINYC_BFLOAT16, 259), 260);
	cr_expect_eq(tinyc_round_to_dtype(TINYC_BFLOAT16, 1 + 0x1p-8), 1);
	cr_expect_eq(tinyc_round_to_dtype(TINYC_BFLOAT16, 1 + 0x1p-8 + 0x1p-20), 1 + 0x1p-7);
	/* float: 1 + 2^-24 is a tie -> 1; a hair above rounds up */
	cr_expect_eq(tinyc_round_to_dtype(TINYC_FLOAT, 1 + 0x1p-24), 1);
	cr_expect_eq(tinyc_round_to_dtype(TINYC_FLOAT, 1 + 0x1p-24 + 0x1p-40), 1 + 0x1p-23);
	cr_expect(isinf(tinyc_round_to_dtype(TINYC_FLOAT, 1e39)));
	/* integers truncate toward zero and saturate; NaN -> 0 */
	cr_expect_eq(tinyc_round_to_dtype(TINYC_INT, -2.7), -2);
	cr_expect_eq(tinyc_round_to_dtype(TINYC_INT, 1e10), 2147483647.0);
	cr_expect_eq(tinyc_round_to_dtype(TINYC_UCHAR, -3), 0);
	cr_expect_eq(tinyc_round_to_dtype(TINYC_UCHAR, NAN), 0);
	cr_expect_eq(tinyc_round_to_dtype(TINYC_BOOL, -0.5), 1);
	/* int -> float rounds once: 2^60 + 2^52 + 1 in bfloat16 (spacing 2^53 there) is above
	 * the tie, so it goes up to 2^60 + 2^53; through double it would tie and go to 2^60 */
	cr_expect_eq(tinyc_int_to_float(TINYC_BFLOAT16, (INT64_C(1) << 60) + (INT64_C(1) << 52) + 1, 0),
		     0x1p60 + 0x1p53);
	cr_expect_eq(tinyc_int_to_float(TINYC_DOUBLE, (INT64_C(1) << 53) + 1, 0), 0x1p53);
	cr_expect_eq(tinyc_int_to_float(TINYC_DOUBLE, (INT64_C(1) << 53) + 3, 0), 0x1p53 + 4);
	cr_expect_eq(tinyc_int_to_float(TINYC_FLOAT, -1, 1), 0x1p64);	/* UINT64_MAX */
	cr_expect_eq(tinyc_int_to_float(TINYC_HALF, 70000, 0), INFINITY);
	cr_expect_eq(tinyc_int_to_float(TINYC_HALF, INT64_MIN, 0), -INFINITY);
}

Test(tensor, get_set_storage)
{
	int64_t four = 4;
	tinyc_tensor *t = tinyc_tensor_alloc(ctx, TINYC_HALF, 1, &four);
	tinyc_tensor_set(t, 0, 1.0);
	tinyc_tensor_set(t, 1, 2049);
	tinyc_tensor_set(t, 2, -65520);
	tinyc_tensor_set(t, 3, 0x1p-24);
	uint16_t *h = t->data;
	cr_expect_eq(h[0], 0x3c00);
	cr_expect_eq(h[1], 0x6800);	/* 2048 = 2^11: exponent 26, mantissa 0 */
	cr_expect_eq(h[2], 0xfc00);	/* -inf */
	cr_expect_eq(h[3], 0x0001);
	tinyc_tensor_free(t);
	t = tinyc_tensor_alloc(ctx, TINYC_BFLOAT16, 1, &four);
	tinyc_tensor_set(t, 0, 1.0);
	tinyc_tensor_set(t, 1, 257);
	h = t->data;
	cr_expect_eq(h[0], 0x3f80);
	cr_expect_eq(h[1], 0x4380);	/* 256 */
	cr_expect_eq(tinyc_tensor_get(t, 1), 256);
	tinyc_tensor_free(t);
	t = tinyc_tensor_alloc(ctx, TINYC_CHAR, 1, &four);
	tinyc_tensor_set_int(t, 0, 300);	/* wraps: 300 - 256 */
	tinyc_tensor_set(t, 1, 300);		/* saturates */
	tinyc_tensor_set(t, 2, -1e9);
	tinyc_tensor_set_int(t, 3, -129);
	cr_expect_eq(tinyc_tensor_get_int(t, 0), 44);
	cr_expect_eq(tinyc_tensor_get_int(t, 1), 127);
	cr_expect_eq(tinyc_tensor_get_int(t, 2), -128);
	cr_expect_eq(tinyc_tensor_get_int(t, 3), 127);
	tinyc_tensor_free(t);
	t = tinyc_tensor_alloc(ctx, TINYC_ULONG, 1, &four);
	tinyc_tensor_set(t, 0, 1e30);
	tinyc_tensor_set(t, 1, -5);
	tinyc_tensor_set_int(t, 2, -1);
	cr_expect_eq((uint64_t)tinyc_tensor_get_int(t, 0), UINT64_MAX);
	cr_expect_eq(tinyc_tensor_get_int(t, 1), 0);
	cr_expect_eq((uint64_t)tinyc_tensor_get_int(t, 2), UINT64_MAX);
	tinyc_tensor_free(t);
	t = tinyc_tensor_alloc(ctx, TINYC_LONG, 1, &four);
	tinyc_tensor_set(t, 0, 1e30);
	tinyc_tensor_set(t, 1, -1e30);
	tinyc_tensor_set(t, 2, NAN);
	tinyc_tensor_set_int(t, 3, INT64_MIN);
	cr_expect_eq(tinyc_tensor_get_int(t, 0), INT64_MAX);
	cr_expect_eq(tinyc_tensor_get_int(t, 1), INT64_MIN);
	cr_expect_eq(tinyc_tensor_get_int(t, 2), 0);
	cr_expect_eq(tinyc_tensor_get_int(t, 3), INT64_MIN);
	tinyc_tensor_free(t);
}

Test(tensor, alloc_errors)
{
	int64_t bad[2] = {3, -1};
	cr_expect_null(tinyc_tensor_alloc(ctx, TINYC_FLOAT, 2, bad));
	expect_diag("InvalidArgument", "negative");
	int64_t huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
	cr_expect_null(tinyc_tensor_alloc(ctx, TINYC_FLOAT, 2, huge));
	expect_diag("TooLarge", "2^46");
	cr_expect_null(tinyc_tensor_alloc(ctx, TINYC_FLOAT, 17, huge));
	expect_diag("TooLarge", "rank 17");
}

Test(tensor, fill_random_is_seeded_and_in_range)
{
	int64_t n = 1000;
	for (int dt = 0; dt < TINYC_DTYPE_COUNT; dt++) {
		tinyc_tensor *a = tinyc_tensor_alloc(ctx, dt, 1, &n);
		tinyc_tensor *b = tinyc_tensor_alloc(ctx, dt, 1, &n);
		tinyc_tensor *c = tinyc_tensor_alloc(ctx, dt, 1, &n);
		tinyc_tensor_fill_random(a, 7);
		tinyc_tensor_fill_random(b, 7);
		tinyc_tensor_fill_random(c, 8);
		size_t bytes = (size_t)n * (size_t)tinyc_dtype_size(dt);
		cr_expect(!memcmp(a->data, b->data, bytes), "same seed, same bytes");
		cr_expect(memcmp(a->data, c->data, bytes), "another seed, other bytes");
		double lo = 1e9, hi = -1e9;
		for (int64_t i = 0; i < n; i++) {
			double v = tinyc_tensor_get(a, i);
			lo = fmin(lo, v);
			hi = fmax(hi, v);
		}
		if (tinyc_dtype_is_float(dt))
			cr_expect(lo >= -1 && hi < 1 && lo < -0.9 && hi > 0.9, "%s", tinyc_dtype_name(dt));
		else if (dt == TINYC_BOOL)
			cr_expect(lo == 0 && hi == 1);
		else if (tinyc_dtype_is_signed(dt))
			cr_expect(lo == -8 && hi == 7, "%s", tinyc_dtype_name(dt));
		else
			cr_expect(lo == 0 && hi == 15, "%s", tinyc_dtype_name(dt));
		tinyc_tensor_free(a);
		tinyc_tensor_free(b);
		tinyc_tensor_free(c);
	}
}

Test(tensor, compare)
{
	int64_t n = 4;
	tinyc_tensor *a = tinyc_tensor_alloc(ctx, TINYC_FLOAT, 1, &n);
	tinyc_tensor *b = tinyc_tensor_alloc(ctx, TINYC_DOUBLE, 1, &n);
	double av[4] = {1, 2, NAN, INFINITY}, bv[4] = {1, 2.5, NAN, INFINITY};
	for (int i = 0; i < 4; i++) {
		tinyc_tensor_set(a, i, av[i]);
		tinyc_tensor_set(b, i, bv[i]);
	}
	tinyc_cmp r;
	cr_assert(tinyc_tensor_compare(ctx, a, b, 0.1, 0.1, &r) == 0);
	cr_expect_eq(r.max_abs, 0.5);
	cr_expect_eq(r.worst, 1);
	cr_expect(fabs(r.max_rel - 0.2) < 1e-9);
	cr_expect_eq(r.mismatched, 1);	/* 0.5 > 0.1 + 0.1 * 2.5 */
	cr_assert(tinyc_tensor_compare(ctx, a, b, 0.0, 0.2, &r) == 0);
	cr_expect_eq(r.mismatched, 0);	/* 0.5 <= 0.2 * 2.5 */
	tinyc_tensor_set(a, 3, -INFINITY);
	cr_assert(tinyc_tensor_compare(ctx, a, b, 1, 1, &r) == 0);
	cr_expect(isinf(r.max_abs) && r.worst == 3 && r.mismatched == 1);
	int64_t s2[2] = {2, 2};
	tinyc_tensor *c = tinyc_tensor_alloc(ctx, TINYC_FLOAT, 2, s2);
	cr_expect(tinyc_tensor_compare(ctx, a, c, 0, 0, &r) == -1);
	expect_diag("ShapeMismatch", "shapes");
	tinyc_tensor_free(a);
	tinyc_tensor_free(b);
	tinyc_tensor_free(c);
}
