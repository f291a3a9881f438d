/* Unit tests of runtime/: SHA-256, architectures and named targets, nvrtc (CUBIN, PTX,
 * compile errors located in the CUDA text), the on-disk kernel cache, and the CUDA driver
 * through dlopen.  GPU-only tests are skipped with a visible "SKIP: no GPU" where no device
 * is usable; a skipped test is reported as skipped, never as passed. */
#define _GNU_SOURCE	/* memmem, nftw */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/runtime.h"

/* ------------------------------------------------------------------ helpers ---- */

/* A small fp16 kernel: y = x * s + b in half arithmetic. */
static const char *half_kernel =
	"#include <cuda_fp16.h>\n"
	"#include <cuda_bf16.h>\n"
	"extern \"C\" __global__ void scale_add(const __half *x, __half *y, __half s,\n"
	"                                       __half b, int n)\n"
	"{\n"
	"\tint i = blockIdx.x * blockDim.x + threadIdx.x;\n"
	"\tif (i < n)\n"
	"\t\ty[i] = __hadd(__hmul(x[i], s), b);\n"
	"}\n";

/* The kernel above with an undeclared identifier on line 4 (column 19) and a missing ')' on
 * line 5. */
static const char *bad_kernel =
	"#include <cuda_fp16.h>\n"
	"extern \"C\" __global__ void bad(float *x) {\n"
	"  int i = threadIdx.x;\n"
	"  x[i] = x[i] * yy + 1.0f;\n"
	"  x[i] = foo(  3;\n"
	"}\n";

/* Kinds of the diagnostics collected so far, for failure messages. */
static const char *first_kind(tinyc_ctx *ctx)
{
	const tinyc_diag *d = tinyc_ctx_diag(ctx, 0);
	return d && d->kind ? d->kind : "(none)";
}

static const char *first_msg(tinyc_ctx *ctx)
{
	const tinyc_diag *d = tinyc_ctx_diag(ctx, 0);
	return d && d->msg ? d->msg : "(none)";
}

/* SHA-256 of a string as hex. */
static void sha_hex(const void *data, size_t n, char hex[65])
{
	unsigned char d[32];
	tinyc_sha256(data, n, d);
	tinyc_hex(d, 32, hex);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* A fresh directory under /tmp; removed (with everything in it) by rm_tree. */
static char *make_tmp_dir(void)
{
	char *dir = strdup("/tmp/tinyc-test-runtime-XXXXXX");
	cr_assert_not_null(dir);
	cr_assert_not_null(mkdtemp(dir), "mkdtemp failed");
	return dir;
}

static void rm_tree(char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

/* Whole contents of a file, or NULL. */
static unsigned char *read_all(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	*n = 0;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *p = malloc((size_t)len + 1);
	*n = fread(p, 1, (size_t)len, f);
	fclose(f);
	return p;
}

static void write_all(const char *path, const unsigned char *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f, "cannot rewrite %s", path);
	cr_assert_eq(fwrite(p, 1, n, f), n);
	fclose(f);
}

/* The regular files under dir, one per line (hidden ones too when `hidden`; none under
 * folders named `skip`), as a new string; *count receives how many. */
static char *list_files(const char *dir, int hidden, const char *skip, int *count)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "find '%s' -type f %s %s%s%s", dir,
		 hidden ? "" : "-not -name '.*'", skip ? "-not -path '*/" : "", skip ? skip : "",
		 skip ? "/*'" : "");
	FILE *p = popen(cmd, "r");
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	char line[1024];
	*count = 0;
	while (p && fgets(line, sizeof(line), p)) {
		fputs(line, out);
		(*count)++;
	}
	if (p)
		pclose(p);
	fclose(out);
	return text;
}

/* How many regular files are under dir. */
static int count_files(const char *dir, int hidden)
{
	int n;
	free(list_files(dir, hidden, NULL, &n));
	return n;
}

/* ------------------------------------------------------------------- SHA-256 ---- */

/* FIPS 180-2 examples ("", "abc", the 448-bit message, a million 'a') and, for the padding
 * boundaries, digests computed with Python's hashlib. */
Test(sha256, known_vectors)
{
	char hex[65];
	sha_hex("", 0, hex);
	cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha_hex("abc", 3, hex);
	cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	sha_hex(m448, strlen(m448), hex);
	cr_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");

	static const struct {
		size_t n;
		const char *hex;
	} as[] = {
		{55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
		{56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
		{64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
		{119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
	};
	char buf[128];
	memset(buf, 'a', sizeof(buf));
	for (size_t i = 0; i < sizeof(as) / sizeof(as[0]); i++) {
		sha_hex(buf, as[i].n, hex);
		cr_expect_str_eq(hex, as[i].hex, "sha256('a' x %zu)", as[i].n);
	}
}

/* A million 'a' fed in uneven pieces gives the FIPS digest (exercises the incremental API). */
Test(sha256, incremental_million_a)
{
	char chunk[997];
	memset(chunk, 'a', sizeof(chunk));
	tinyc_sha256_ctx s;
	tinyc_sha256_init(&s);
	size_t left = 1000000, step = 1;
	while (left) {
		size_t n = step < left ? step : left;
		tinyc_sha256_update(&s, chunk, n);
		left -= n;
		step = (step + 13) % sizeof(chunk) + 1;	/* 1 .. sizeof(chunk) */
	}
	unsigned char d[32];
	char hex[65];
	tinyc_sha256_final(&s, d);
	tinyc_hex(d, 32, hex);
	cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* ------------------------------------------------------- targets and arches ---- */

Test(target, parse_arch)
{
	tinyc_arch a;
	cr_assert_eq(tinyc_arch_from_target(NULL, "sm_90a", &a), 0);
	cr_expect(a.major == 9 && a.minor == 0 && a.suffix == 'a');
	cr_assert_eq(tinyc_arch_from_target(NULL, "compute_80", &a), 0);
	cr_expect(a.major == 8 && a.minor == 0 && a.suffix == 0);
	cr_assert_eq(tinyc_arch_from_target(NULL, "8.6", &a), 0);
	cr_expect(a.major == 8 && a.minor == 6 && a.suffix == 0);
	cr_assert_eq(tinyc_arch_from_target(NULL, "89", &a), 0);
	cr_expect(a.major == 8 && a.minor == 9);
	cr_assert_eq(tinyc_arch_from_target(NULL, "sm_100f", &a), 0);
	cr_expect(a.major == 10 && a.minor == 0 && a.suffix == 'f');

	char name[16];
	a = (tinyc_arch){9, 0, 'a'};
	cr_expect_str_eq(tinyc_arch_name(a, 1, name, sizeof(name)), "sm_90a");
	cr_expect_str_eq(tinyc_arch_name(a, 0, name, sizeof(name)), "compute_90a");

	const char *bad[] = {"", "sm_", "sm_9", "gfx90a", "sm_90x", "sm_90aa", "9.", "sm90", NULL};
	for (int i = 0; bad[i]; i++) {
		tinyc_ctx *ctx = tinyc_ctx_alloc();
		cr_expect_eq(tinyc_arch_from_target(ctx, bad[i], &a), -1, "'%s' accepted", bad[i]);
		cr_expect_str_eq(first_kind(ctx), "InvalidTarget", "'%s'", bad[i]);
		tinyc_ctx_free(ctx);
	}
}

/* The nominal table holds the data-sheet values the scheduler is promised. */
Test(target, named_table)
{
	static const struct {
		const char *name;
		int sms, smem_kb;
		double tflops, gbs;
	} want[] = {
		{"sm_80", 108, 163, 312, 1555},
		{"sm_86", 72, 99, 125, 600},
		{"sm_89", 142, 99, 181, 864},
		{"sm_90", 132, 227, 989, 3350},
		{"sm_90a", 132, 227, 989, 3350},
	};
	int n;
	tinyc_target_table(&n);
	cr_assert_eq(n, 5);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const tinyc_device_info *d = tinyc_target_info(NULL, want[i].name);
		cr_assert_not_null(d, "%s missing", want[i].name);
		cr_expect_str_eq(d->target, want[i].name);
		cr_expect_eq(d->sm_count, want[i].sms, "%s", want[i].name);
		cr_expect_eq(d->smem_per_block_optin, want[i].smem_kb * 1024, "%s", want[i].name);
		cr_expect_eq(d->peak_fp16_tflops, want[i].tflops, "%s", want[i].name);
		cr_expect_eq(d->peak_bandwidth_gbs, want[i].gbs, "%s", want[i].name);
		cr_expect_eq(d->is_real, 0);
		cr_expect_eq(d->warp_size, 32);
		/* the memory clock and bus width agree with the bandwidth (DDR) within 1% */
		double bw = 2.0 * d->mem_clock_khz * 1e3 * d->mem_bus_width / 8 / 1e9;
		cr_expect(bw > 0.99 * want[i].gbs && bw < 1.01 * want[i].gbs, "%s: %.1f GB/s",
			  want[i].name, bw);
		cr_expect(d->smem_per_block_optin <= d->smem_per_sm);
	}
	/* aliases of the same architecture find the same entry */
	cr_expect_eq(tinyc_target_info(NULL, "compute_90"), tinyc_target_info(NULL, "sm_90"));
	cr_expect_eq(tinyc_target_info(NULL, "8.0"), tinyc_target_info(NULL, "sm_80"));
	cr_expect_neq(tinyc_target_info(NULL, "sm_90a"), tinyc_target_info(NULL, "sm_90"));

	tinyc_ctx *ctx = tinyc_ctx_alloc();
	cr_expect_null(tinyc_target_info(ctx, "sm_75"));
	cr_expect_str_eq(first_kind(ctx), "UnknownTarget");
	tinyc_ctx_free(ctx);
}

/* ---------------------------------------------------------------------- nvrtc ---- */

/* Check a CUBIN: an ELF for NVIDIA's EM_CUDA machine built for sm, holding the kernel. */
static void check_cubin(const tinyc_blob *b, int sm)
{
	cr_assert(b->is_cubin);
	cr_assert_gt(b->size, 64);
	cr_expect(memcmp(b->data, "\177ELF", 4) == 0, "not an ELF file");
	cr_expect_eq(b->data[4], 2, "not ELF64");
	unsigned machine = b->data[18] | b->data[19] << 8;
	cr_expect_eq(machine, 190, "e_machine %u is not EM_CUDA", machine);
	/* nvrtc 13 writes CUDA ELF ABI version 8, which keeps the SM number in e_flags bits
	 * 8..15 (0x50 = 80, 0x5a = 90, as cuobjdump decodes them) */
	uint32_t flags = (uint32_t)b->data[48] | (uint32_t)b->data[49] << 8 |
			 (uint32_t)b->data[50] << 16 | (uint32_t)b->data[51] << 24;
	if (b->data[8] == 8)
		cr_expect_eq((flags >> 8) & 0xff, (uint32_t)sm, "e_flags 0x%x not for sm_%d",
			     flags, sm);
	else
		cr_log_warn("CUDA ELF ABI version %d: SM number in e_flags not checked",
			    b->data[8]);
	cr_expect_not_null(memmem(b->data, b->size, "scale_add", 9), "kernel symbol missing");
}

Test(nvrtc, version_and_include_dir)
{
	int v = tinyc_nvrtc_version();
	cr_assert_geq(v, 11000, "nvrtc version %d", v);
	cr_log_info("nvrtc %d.%d, headers from %s", v / 1000, v % 1000 / 10,
		    tinyc_nvrtc_include_dir() ? tinyc_nvrtc_include_dir() : "(none)");
	const char *inc = tinyc_nvrtc_include_dir();
	cr_assert_not_null(inc, "no directory with cuda_fp16.h found");
	char path[4200];
	snprintf(path, sizeof(path), "%s/cuda_bf16.h", inc);
	cr_expect_eq(access(path, R_OK), 0, "%s not readable", path);

	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_buf opts = {0};
	cr_assert_eq(tinyc_nvrtc_options(ctx, "sm_90", 1, NULL, 0, &opts), 0);
	cr_expect_not_null(strstr(opts.data, "-arch=sm_90\n"));
	cr_expect_not_null(strstr(opts.data, "-std=c++17\n"));
	cr_expect_null(strstr(opts.data, "fast_math"), "fast math must not be on by default");
	tinyc_buf_free(&opts);
	cr_assert_eq(tinyc_nvrtc_options(ctx, "sm_90a", 0, NULL, 0, &opts), 0);
	cr_expect_not_null(strstr(opts.data, "-arch=compute_90a\n"));
	tinyc_buf_free(&opts);
	tinyc_ctx_free(ctx);
}

Test(nvrtc, cubin_sm80_sm90)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_blob b80, b90;
	cr_assert_eq(tinyc_nvrtc_compile(ctx, half_kernel, "scale_add.cu", "sm_80", 1, &b80), 0,
		     "%s: %s", first_kind(ctx), first_msg(ctx));
	check_cubin(&b80, 80);
	cr_assert_eq(tinyc_nvrtc_compile(ctx, half_kernel, "scale_add.cu", "sm_90", 1, &b90), 0,
		     "%s: %s", first_kind(ctx), first_msg(ctx));
	check_cubin(&b90, 90);
	cr_expect(b80.size != b90.size || memcmp(b80.data, b90.data, b80.size) != 0);
	cr_expect_gt(b90.compile_ms, 0);
	cr_log_info("nvrtc compile of the fp16 kernel: sm_80 %.1f ms, sm_90 %.1f ms",
		    b80.compile_ms, b90.compile_ms);
	cr_expect_eq(tinyc_ctx_error_count(ctx), 0);
	tinyc_blob_clear(&b80);
	tinyc_blob_clear(&b90);
	tinyc_ctx_free(ctx);
}

Test(nvrtc, ptx)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_blob b;
	cr_assert_eq(tinyc_nvrtc_compile(ctx, half_kernel, "scale_add.cu", "sm_90", 0, &b), 0,
		     "%s: %s", first_kind(ctx), first_msg(ctx));
	cr_expect_eq(b.is_cubin, 0);
	const char *ptx = (const char *)b.data;
	cr_expect_eq(strlen(ptx), b.size, "PTX size must exclude the NUL");
	cr_expect_not_null(strstr(ptx, ".version "));
	cr_expect_not_null(strstr(ptx, ".target sm_90"));
	cr_expect_not_null(strstr(ptx, ".entry scale_add("), "extern \"C\" entry missing");
	cr_expect_not_null(strstr(ptx, "f16"), "no half instructions");
	tinyc_blob_clear(&b);
	tinyc_ctx_free(ctx);
}

/* A compile error is a CudaCompileError at the CUDA line, quoting it, with the column. */
Test(nvrtc, compile_error_located)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_blob b;
	cr_assert_eq(tinyc_nvrtc_compile(ctx, bad_kernel, "bad.cu", "sm_90", 1, &b), -1);
	cr_assert_null(b.data);
	cr_assert_geq(tinyc_ctx_error_count(ctx), 2);
	const tinyc_diag *d = tinyc_ctx_diag(ctx, 0);
	cr_expect_str_eq(d->kind, "CudaCompileError");
	cr_expect_str_eq(d->file, "bad.cu");
	cr_expect_eq(d->loc.line, 4);
	cr_expect_eq(d->loc.col, 17, "column %d", d->loc.col);	/* the 'y' of "yy" */
	cr_expect_str_eq(d->line_text, "  x[i] = x[i] * yy + 1.0f;");
	cr_expect_not_null(strstr(d->msg, "identifier \"yy\" is undefined"), "%s", d->msg);

	int saw_line5 = 0;
	for (int i = 1; i < tinyc_ctx_diag_count(ctx); i++) {
		const tinyc_diag *e = tinyc_ctx_diag(ctx, i);
		if (e->loc.line == 5 && e->line_text &&
		    strcmp(e->line_text, "  x[i] = foo(  3;") == 0)
			saw_line5 = 1;
	}
	cr_expect(saw_line5, "no diagnostic for line 5");

	/* printed clang-style: location, kind, the line, a caret under column 17 */
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	tinyc_diag_print(d, f);
	fclose(f);
	cr_expect_not_null(strstr(text, "bad.cu:4:17: error: CudaCompileError: "), "%s", text);
	cr_expect_not_null(strstr(text, "\n    x[i] = x[i] * yy + 1.0f;\n"
					"                  ^\n"), "%s", text);
	free(text);
	tinyc_ctx_free(ctx);
}

/* An invalid nvrtc option is an NvrtcError; an invalid arch an InvalidTarget. */
Test(nvrtc, api_errors)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_blob b;
	const char *extra[] = {"--no-such-option"};
	cr_assert_eq(tinyc_nvrtc_compile_opts(ctx, half_kernel, "k.cu", "sm_90", 1, extra, 1, &b),
		     -1);
	cr_expect_str_eq(first_kind(ctx), "NvrtcError");
	cr_expect_not_null(strstr(first_msg(ctx), "nvrtcCompileProgram failed: NVRTC_ERROR_INVALID_OPTION"),
			   "%s", first_msg(ctx));
	tinyc_ctx_clear_diags(ctx);
	cr_assert_eq(tinyc_nvrtc_compile(ctx, half_kernel, "k.cu", "sm_x", 1, &b), -1);
	cr_expect_str_eq(first_kind(ctx), "InvalidTarget");
	tinyc_ctx_free(ctx);
}

/* ---------------------------------------------------------------------- cache ---- */

Test(cache, dir_from_environment)
{
	setenv("TINYC_CACHE_DIR", "/tmp/somewhere", 1);
	char *d = tinyc_cache_dir();
	cr_expect_str_eq(d, "/tmp/somewhere");
	free(d);
	setenv("TINYC_CACHE_DIR", "", 1);
	cr_expect_null(tinyc_cache_dir(), "empty TINYC_CACHE_DIR disables the cache");
	unsetenv("TINYC_CACHE_DIR");
	setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
	d = tinyc_cache_dir();
	cr_expect_str_eq(d, "/tmp/xdg/tinyc");
	free(d);
	unsetenv("XDG_CACHE_HOME");
	setenv("HOME", "/tmp/home", 1);
	d = tinyc_cache_dir();
	cr_expect_str_eq(d, "/tmp/home/.cache/tinyc");
	free(d);
}

/* Miss, then a hit with the same bytes; other inputs miss; corrupt entries are redone. */
Test(cache, miss_hit_corrupt)
{
	char *tmp = make_tmp_dir();
	char *dir = tinyc_asprintf("%s/nested/cache", tmp);	/* created on first store */
	setenv("TINYC_CACHE_DIR", dir, 1);
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_compile_result r1, r2, r;

	cr_assert_eq(tinyc_kernel_compile_cached(ctx, half_kernel, "scale_add.cu", "sm_90", NULL,
						 &r1), 0, "%s", first_msg(ctx));
	cr_expect_eq(r1.cache_hit, 0);
	cr_expect_eq(r1.cache_stored, 1, "%s", r1.cache_note ? r1.cache_note : "");
	cr_assert_not_null(r1.cache_path);
	cr_expect_eq(strncmp(r1.cache_path, dir, strlen(dir)), 0, "entry %s not in %s",
		     r1.cache_path, dir);
	cr_expect_eq(access(r1.cache_path, R_OK), 0);
	cr_expect_eq(strlen(r1.key), 64);
	check_cubin(&r1.blob, 90);
	cr_expect_eq(count_files(dir, 1), 1, "temporary files left behind");

	cr_assert_eq(tinyc_kernel_compile_cached(ctx, half_kernel, "scale_add.cu", "sm_90", NULL,
						 &r2), 0);
	cr_expect_eq(r2.cache_hit, 1);
	cr_expect_eq(r2.compile_ms, 0);
	cr_expect_str_eq(r2.key, r1.key);
	cr_assert_eq(r2.blob.size, r1.blob.size);
	cr_expect(memcmp(r2.blob.data, r1.blob.data, r1.blob.size) == 0, "hit returned other bytes");
	cr_log_info("cache miss (nvrtc) %.1f ms total, %.1f ms compile; cache hit %.3f ms",
		    r1.total_ms, r1.compile_ms, r2.total_ms);

	/* a different text, arch, output kind, option or driver gives a different key */
	tinyc_compile_opts ptx = {.want_ptx = 1}, fast = {0}, drv = {.driver_version = 13000};
	const char *fm[] = {"--use_fast_math"};
	fast.extra = fm;
	fast.n_extra = 1;
	struct {
		const char *src, *arch;
		const tinyc_compile_opts *opt;
	} other[] = {
		{NULL, "sm_90", NULL}, {half_kernel, "sm_80", NULL},
		{half_kernel, "sm_90", &ptx}, {half_kernel, "sm_90", &fast},
		{half_kernel, "sm_90", &drv},
	};
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		if (!other[i].src) {	/* a text that differs only by a comment */
			char *src = tinyc_asprintf("// v2\n%s", half_kernel);
			cr_assert_eq(tinyc_kernel_compile_cached(ctx, src, "scale_add.cu", "sm_90",
								 NULL, &r), 0);
			free(src);
		} else {
			cr_assert_eq(tinyc_kernel_compile_cached(ctx, other[i].src, "scale_add.cu",
								 other[i].arch, other[i].opt, &r),
				     0, "%s", first_msg(ctx));
		}
		cr_expect_eq(r.cache_hit, 0, "variant %zu hit", i);
		cr_expect_str_neq(r.key, r1.key, "variant %zu has the same key", i);
		tinyc_compile_result_clear(&r);
	}

	/* flip one payload byte: the entry is rejected, recompiled, rewritten */
	size_t n = 0;
	unsigned char *bytes = read_all(r1.cache_path, &n);
	cr_assert_not_null(bytes);
	cr_assert_gt(n, r1.blob.size);
	bytes[n - 100] ^= 0x40;
	write_all(r1.cache_path, bytes, n);
	cr_assert_eq(tinyc_kernel_compile_cached(ctx, half_kernel, "scale_add.cu", "sm_90", NULL,
						 &r), 0);
	cr_expect_eq(r.cache_hit, 0, "corrupt entry used");
	cr_expect_eq(r.cache_rejected, 1);
	cr_expect_eq(r.cache_stored, 1);
	cr_assert_eq(r.blob.size, r1.blob.size);
	cr_expect(memcmp(r.blob.data, r1.blob.data, r1.blob.size) == 0);
	tinyc_compile_result_clear(&r);
	cr_assert_eq(tinyc_kernel_compile_cached(ctx, half_kernel, "scale_add.cu", "sm_90", NULL,
						 &r), 0);
	cr_expect_eq(r.cache_hit, 1, "rewritten entry not used");
	tinyc_compile_result_clear(&r);

	/* a truncated entry, and an empty one, are rejected too */
	bytes[n - 100] ^= 0x40;
	write_all(r1.cache_path, bytes, n / 2);
	cr_assert_eq(tinyc_kernel_compile_cached(ctx, half_kernel, "scale_add.cu", "sm_90", NULL,
						 &r), 0);
	cr_expect(!r.cache_hit && r.cache_rejected, "short entry used");
	tinyc_compile_result_clear(&r);
	write_all(r1.cache_path, bytes, 0);
	cr_assert_eq(tinyc_kernel_compile_cached(ctx, half_kernel, "scale_add.cu", "sm_90", NULL,
						 &r), 0);
	cr_expect(!r.cache_hit && r.cache_rejected, "empty entry used");
	tinyc_compile_result_clear(&r);
	free(bytes);

	/* opting out per call */
	tinyc_compile_opts off = {.no_cache = 1};
	cr_assert_eq(tinyc_kernel_compile_cached(ctx, half_kernel, "scale_add.cu", "sm_90", &off,
						 &r), 0);
	cr_expect(!r.cache_hit && !r.cache_stored && r.cache_path == NULL);
	cr_expect_not_null(r.cache_note);
	tinyc_compile_result_clear(&r);

	cr_expect_eq(tinyc_ctx_error_count(ctx), 0);
	tinyc_compile_result_clear(&r1);
	tinyc_compile_result_clear(&r2);
	tinyc_ctx_free(ctx);
	free(dir);
	rm_tree(tmp);
}

/* TINYC_CACHE_DIR="" turns the cache off: nothing is read or written. */
Test(cache, disabled_by_empty_env)
{
	char *tmp = make_tmp_dir();
	setenv("HOME", tmp, 1);			/* where the cache would go otherwise */
	unsetenv("XDG_CACHE_HOME");
	setenv("TINYC_CACHE_DIR", "", 1);
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_compile_result r;
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(tinyc_kernel_compile_cached(ctx, half_kernel, "scale_add.cu", "sm_80",
							 NULL, &r), 0);
		cr_expect(!r.cache_hit && !r.cache_stored && r.cache_path == NULL);
		cr_expect_not_null(r.cache_note);
		check_cubin(&r.blob, 80);
		tinyc_compile_result_clear(&r);
	}
	/* (on GPU machines nvrtc fills the driver's own $HOME/.nv/ComputeCache: not ours) */
	int nfiles;
	char *files = list_files(tmp, 1, ".nv", &nfiles);
	cr_expect_eq(nfiles, 0, "something was written under $HOME:\n%s", files);
	free(files);
	/* and without TINYC_CACHE_DIR the entry goes to $HOME/.cache/tinyc */
	unsetenv("TINYC_CACHE_DIR");
	cr_assert_eq(tinyc_kernel_compile_cached(ctx, half_kernel, "scale_add.cu", "sm_80", NULL,
						 &r), 0);
	char *want = tinyc_asprintf("%s/.cache/tinyc/", tmp);
	cr_expect_eq(strncmp(r.cache_path, want, strlen(want)), 0, "%s", r.cache_path);
	cr_expect_eq(r.cache_stored, 1);
	free(want);
	tinyc_compile_result_clear(&r);
	tinyc_ctx_free(ctx);
	rm_tree(tmp);
}

/* A cache location that cannot be created does not fail the compile. */
Test(cache, unwritable_dir_is_not_an_error)
{
	char *tmp = make_tmp_dir();
	char *file = tinyc_asprintf("%s/plain-file", tmp);
	write_all(file, (const unsigned char *)"x", 1);
	char *dir = tinyc_asprintf("%s/sub", file);	/* under a regular file: impossible */
	tinyc_compile_opts opt = {.cache_dir = dir};
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_compile_result r;
	cr_assert_eq(tinyc_kernel_compile_cached(ctx, half_kernel, "scale_add.cu", "sm_90", &opt,
						 &r), 0);
	cr_expect_eq(r.cache_stored, 0);
	cr_expect_not_null(r.cache_note);
	cr_expect_eq(tinyc_ctx_error_count(ctx), 0);
	check_cubin(&r.blob, 90);
	tinyc_compile_result_clear(&r);
	tinyc_ctx_free(ctx);
	free(dir);
	free(file);
	rm_tree(tmp);
}

/* A compile error through the cache is reported and nothing is stored. */
Test(cache, compile_error_not_stored)
{
	char *tmp = make_tmp_dir();
	tinyc_compile_opts opt = {.cache_dir = tmp};
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_compile_result r;
	cr_assert_eq(tinyc_kernel_compile_cached(ctx, bad_kernel, "bad.cu", "sm_90", &opt, &r),
		     -1);
	cr_expect_str_eq(first_kind(ctx), "CudaCompileError");
	cr_expect_null(r.blob.data);
	cr_expect_eq(count_files(tmp, 1), 0);
	tinyc_ctx_free(ctx);
	rm_tree(tmp);
}

/* Several compiles on threads: each result is the one a serial compile gives (same key, a
 * CUBIN for the arch), on 1 thread and on 4; a failing job is reported, with its CUDA
 * diagnostic, and every result is cleared. */
Test(cache, compile_many_parallel)
{
	char *tmp = make_tmp_dir();
	tinyc_compile_opts opt = {.cache_dir = tmp};
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	const char *archs[4] = {"sm_80", "sm_90", "sm_86", "sm_89"};
	tinyc_compile_job jobs[4];
	tinyc_compile_result serial[4], many[4];
	for (int i = 0; i < 4; i++) {
		jobs[i] = (tinyc_compile_job){half_kernel, "scale_add.cu", archs[i], &opt};
		cr_assert_eq(tinyc_kernel_compile_cached(ctx, half_kernel, "scale_add.cu", archs[i],
							 &(tinyc_compile_opts){.no_cache = 1}, &serial[i]),
			     0, "%s", first_msg(ctx));
	}
	const char *threads[2] = {"1", "4"};
	for (int t = 0; t < 2; t++) {
		setenv("TINYC_JIT_THREADS", threads[t], 1);
		double wall = -1;
		cr_assert_eq(tinyc_kernel_compile_many(ctx, 4, jobs, many, &wall), 0, "%s", first_msg(ctx));
		cr_expect_geq(wall, 0);
		for (int i = 0; i < 4; i++) {
			cr_expect_str_eq(many[i].key, serial[i].key, "job %d on %s threads", i, threads[t]);
			cr_expect_eq(many[i].cache_hit, t == 1, "job %d: the second round hits", i);
			check_cubin(&many[i].blob, atoi(archs[i] + 3));
			tinyc_compile_result_clear(&many[i]);
		}
	}
	unsetenv("TINYC_JIT_THREADS");
	jobs[2].src = bad_kernel;
	jobs[2].name = "bad.cu";
	cr_assert_eq(tinyc_kernel_compile_many(ctx, 4, jobs, many, NULL), -1);
	cr_expect_str_eq(first_kind(ctx), "CudaCompileError");
	for (int i = 0; i < 4; i++) {
		cr_expect_null(many[i].blob.data, "job %d kept its image after a failure", i);
		tinyc_compile_result_clear(&serial[i]);
	}
	tinyc_ctx_free(ctx);
	rm_tree(tmp);
}

/* ------------------------------------------------------------------ CUDA driver ---- */

#define SKIP_WITHOUT_GPU() \
	do { \
		if (!tinyc_cuda_available()) { \
			fprintf(stderr, "SKIP: no GPU (%s)\n", __func__); \
			cr_skip_test("SKIP: no GPU"); \
		} \
	} while (0)

/* Without a GPU, opening the driver fails plainly; with one, it reports sane properties. */
Test(cuda, open_or_no_gpu)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_cuda *cu = tinyc_cuda_open(ctx, 0);
	if (!tinyc_cuda_available()) {
		fprintf(stderr, "no GPU here: checking the NoGpu diagnostic instead of the device\n");
		cr_assert_null(cu);
		cr_assert_eq(tinyc_ctx_error_count(ctx), 1);
		cr_expect_str_eq(first_kind(ctx), "NoGpu");
		const char *m = first_msg(ctx);
		cr_expect(strcmp(m, "no CUDA driver (libcuda.so.1 not found); this command needs an NVIDIA GPU") == 0 ||
			  strcmp(m, "no CUDA device") == 0, "message: %s", m);
		tinyc_ctx_free(ctx);
		return;
	}
	cr_assert_not_null(cu, "%s: %s", first_kind(ctx), first_msg(ctx));
	const tinyc_device_info *d = tinyc_cuda_device_info(cu);
	cr_log_info("%s (%s): %d SMs, %d KiB smem/block opt-in, %.0f GB/s, %.0f TFLOP/s fp16, driver %d",
		    d->name, d->target, d->sm_count, d->smem_per_block_optin / 1024,
		    d->peak_bandwidth_gbs, d->peak_fp16_tflops, d->driver_version);
	cr_expect(d->is_real);
	cr_expect_gt(strlen(d->name), 0);
	cr_expect(d->arch.major >= 7 && d->arch.major <= 12);
	cr_expect(d->sm_count >= 1 && d->sm_count <= 1024);
	cr_expect_eq(d->warp_size, 32);
	cr_expect_eq(d->max_threads_per_block, 1024);
	cr_expect_eq(d->smem_per_block, 48 * 1024);
	cr_expect(d->smem_per_block_optin >= 48 * 1024 && d->smem_per_block_optin <= d->smem_per_sm);
	cr_expect_eq(d->regs_per_sm, 65536);
	cr_expect(d->l2_bytes >= (1 << 20));
	cr_expect(d->global_mem_bytes >= ((size_t)1 << 30));
	cr_expect(d->driver_version >= 11000);
	char want[16];
	snprintf(want, sizeof(want), "sm_%d%d", d->arch.major, d->arch.minor);
	cr_expect_str_eq(d->target, want);
	/* an H100 agrees with the nominal sm_90 description */
	if (d->arch.major == 9 && d->arch.minor == 0 && d->sm_count == 132) {
		cr_expect_eq(d->smem_per_block_optin, 227 * 1024);
		cr_expect(d->peak_bandwidth_gbs > 3000 && d->peak_bandwidth_gbs < 3500,
			  "%.0f GB/s", d->peak_bandwidth_gbs);
	}
	tinyc_cuda_close(cu);
	tinyc_ctx_free(ctx);
}

/* Compile for the device, run the fp16 kernel, compare with the values computed by hand. */
static void run_scale_add(int want_cubin)
{
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_cuda *cu = tinyc_cuda_open(ctx, 0);
	cr_assert_not_null(cu, "%s", first_msg(ctx));
	const tinyc_device_info *d = tinyc_cuda_device_info(cu);
	tinyc_blob img;
	cr_assert_eq(tinyc_nvrtc_compile(ctx, half_kernel, "scale_add.cu", d->target, want_cubin,
					 &img), 0, "%s", first_msg(ctx));
	tinyc_kernel *k = tinyc_cuda_kernel_load(cu, &img, "scale_add");
	cr_assert_not_null(k, "%s", first_msg(ctx));
	tinyc_kernel_attrs at;
	cr_assert_eq(tinyc_kernel_get_attrs(cu, k, &at), 0);
	cr_expect(at.num_regs > 0 && at.max_threads_per_block > 0);

	/* x[i] = i/2 in fp16 bits; y = x * 2 + 1 = i + 1, exact in fp16 for i < 2048 */
	enum { N = 1000 };
	uint16_t x[N], y[N];
	for (int i = 0; i < N; i++) {
		float f = i * 0.5f;
		uint32_t u;
		memcpy(&u, &f, 4);
		/* fp32 -> fp16 for these small exact values: rebias exponent, drop low bits */
		x[i] = f == 0 ? 0 : (uint16_t)(((u >> 16) & 0x8000) | ((((u >> 23) & 0xff) - 112) << 10) |
					       ((u >> 13) & 0x3ff));
	}
	uint16_t two = 0x4000, one = 0x3c00;	/* 2.0 and 1.0 in fp16 */
	int n = N;
	tinyc_devptr dx, dy;
	cr_assert_eq(tinyc_cuda_alloc(cu, sizeof(x), &dx), 0);
	cr_assert_eq(tinyc_cuda_alloc(cu, sizeof(y), &dy), 0);
	cr_assert_eq(tinyc_cuda_upload(cu, dx, x, sizeof(x)), 0);
	cr_assert_eq(tinyc_cuda_memset8(cu, dy, 0xff, sizeof(y)), 0);
	void *args[] = {&dx, &dy, &two, &one, &n};
	cr_assert_eq(tinyc_cuda_launch(cu, k, (tinyc_dim3){(N + 127) / 128, 1, 1},
				       (tinyc_dim3){128, 1, 1}, 0, args), 0, "%s", first_msg(ctx));
	cr_assert_eq(tinyc_cuda_sync(cu), 0, "%s", first_msg(ctx));
	cr_assert_eq(tinyc_cuda_download(cu, y, dy, sizeof(y)), 0);
	for (int i = 0; i < N; i++) {
		/* i + 1 in fp16: exponent e with 2^e <= i+1 < 2^(e+1), mantissa exact */
		int v = i + 1, e = 0;
		while ((v >> (e + 1)) != 0)
			e++;
		uint16_t want = (uint16_t)(((e + 15) << 10) | ((v << (10 - e)) & 0x3ff));
		cr_assert_eq(y[i], want, "y[%d] = 0x%04x, want 0x%04x", i, y[i], want);
	}
	double ms;
	cr_assert_eq(tinyc_cuda_time_launch(cu, k, (tinyc_dim3){(N + 127) / 128, 1, 1},
					    (tinyc_dim3){128, 1, 1}, 0, args, 3, 11, &ms), 0);
	cr_expect(ms > 0 && ms < 100, "median %.4f ms", ms);
	cr_log_info("scale_add (%s): median %.4f ms", want_cubin ? "cubin" : "ptx", ms);
	cr_expect_eq(tinyc_cuda_free(cu, dx), 0);
	cr_expect_eq(tinyc_cuda_free(cu, dy), 0);
	tinyc_kernel_free(k);
	tinyc_blob_clear(&img);
	cr_expect_eq(tinyc_ctx_error_count(ctx), 0, "%s", first_msg(ctx));
	tinyc_cuda_close(cu);
	tinyc_ctx_free(ctx);
}

Test(cuda, launch_cubin, .description = "gpu")
{
	SKIP_WITHOUT_GPU();
	run_scale_add(1);
}

Test(cuda, launch_ptx, .description = "gpu")
{
	SKIP_WITHOUT_GPU();
	run_scale_add(0);
}

/* One launch of the counting kernel, for the timing functions. */
typedef struct bump_launch {
	tinyc_kernel *k;	/* bump */
	void **args;		/* its arguments */
} bump_launch;

static int bump_once(tinyc_cuda *cu, void *arg)
{
	bump_launch *b = arg;
	return tinyc_cuda_launch(cu, b->k, (tinyc_dim3){4, 1, 1}, (tinyc_dim3){256, 1, 1}, 0, b->args);
}

/* Graph-replay and back-to-back timing run exactly the launches they say: a kernel that adds
 * 1 to every element counts them (graph: per_graph x (replays + 1 untimed); run: warmup +
 * iters), and a plain launch afterwards still goes to the default stream. */
Test(cuda, time_graph_and_run_count_launches, .description = "gpu")
{
	SKIP_WITHOUT_GPU();
	static const char *src = "extern \"C\" __global__ void bump(int *y, int n)\n"
				 "{\n\tint i = blockIdx.x * blockDim.x + threadIdx.x;\n"
				 "\tif (i < n)\n\t\ty[i] += 1;\n}\n";
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_cuda *cu = tinyc_cuda_open(ctx, 0);
	cr_assert_not_null(cu, "%s", first_msg(ctx));
	cr_assert(tinyc_cuda_has_graphs(cu), "a CUDA 12+ driver has stream capture");
	tinyc_blob img;
	cr_assert_eq(tinyc_nvrtc_compile(ctx, src, "bump.cu", tinyc_cuda_device_info(cu)->target, 1,
					 &img), 0, "%s", first_msg(ctx));
	tinyc_kernel *k = tinyc_cuda_kernel_load(cu, &img, "bump");
	cr_assert_not_null(k, "%s", first_msg(ctx));
	enum { N = 1000 };
	int y[N], n = N;
	tinyc_devptr dy;
	cr_assert_eq(tinyc_cuda_alloc(cu, sizeof(y), &dy), 0);
	cr_assert_eq(tinyc_cuda_memset8(cu, dy, 0, sizeof(y)), 0);
	void *args[] = {&dy, &n};
	bump_launch b = {k, args};
	double g = 0, r = 0;
	cr_assert_eq(tinyc_cuda_time_graph(cu, bump_once, &b, 5, 7, &g), 0, "%s", first_msg(ctx));
	cr_assert_eq(tinyc_cuda_time_run(cu, bump_once, &b, 2, 10, &r), 0, "%s", first_msg(ctx));
	cr_assert_eq(bump_once(cu, &b), 0);
	cr_assert_eq(tinyc_cuda_sync(cu), 0);
	cr_assert_eq(tinyc_cuda_download(cu, y, dy, sizeof(y)), 0);
	for (int i = 0; i < N; i++)
		cr_assert_eq(y[i], 5 * (7 + 1) + 2 + 10 + 1, "y[%d] = %d", i, y[i]);
	cr_expect(g > 0 && g < 1 && r > 0 && r < 1, "graph %.5f ms, run %.5f ms per launch", g, r);
	cr_log_info("bump: graph %.2f us, back-to-back %.2f us per launch", g * 1e3, r * 1e3);
	cr_expect_eq(tinyc_cuda_free(cu, dy), 0);
	tinyc_kernel_free(k);
	tinyc_blob_clear(&img);
	tinyc_cuda_close(cu);
	tinyc_ctx_free(ctx);
}

/* Dynamic shared memory above 48 KiB is opted in; a device-to-device copy moves the data. */
Test(cuda, large_dynamic_smem, .description = "gpu")
{
	SKIP_WITHOUT_GPU();
	static const char *src =
		"extern \"C\" __global__ void reverse(const int *in, int *out, int n)\n"
		"{\n"
		"\textern __shared__ int buf[];\n"
		"\tfor (int i = threadIdx.x; i < n; i += blockDim.x)\n"
		"\t\tbuf[i] = in[i];\n"
		"\t__syncthreads();\n"
		"\tfor (int i = threadIdx.x; i < n; i += blockDim.x)\n"
		"\t\tout[i] = buf[n - 1 - i];\n"
		"}\n";
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_cuda *cu = tinyc_cuda_open(ctx, 0);
	cr_assert_not_null(cu, "%s", first_msg(ctx));
	const tinyc_device_info *d = tinyc_cuda_device_info(cu);
	int n = 24 * 1024;		/* 96 KiB of ints */
	if (d->smem_per_block_optin < n * 4) {
		tinyc_cuda_close(cu);
		tinyc_ctx_free(ctx);
		cr_skip_test("device has only %d bytes of opt-in shared memory",
			     d->smem_per_block_optin);
	}
	tinyc_compile_result r;
	tinyc_compile_opts opt = {.no_cache = 1};
	cr_assert_eq(tinyc_kernel_compile_cached(ctx, src, "reverse.cu", d->target, &opt, &r), 0,
		     "%s", first_msg(ctx));
	tinyc_kernel *k = tinyc_cuda_kernel_load(cu, &r.blob, "reverse");
	cr_assert_not_null(k, "%s", first_msg(ctx));
	int *h = malloc((size_t)n * 4), *o = malloc((size_t)n * 4);
	for (int i = 0; i < n; i++)
		h[i] = i * 7 + 3;
	tinyc_devptr a, b, c;
	cr_assert_eq(tinyc_cuda_alloc(cu, (size_t)n * 4, &a), 0);
	cr_assert_eq(tinyc_cuda_alloc(cu, (size_t)n * 4, &b), 0);
	cr_assert_eq(tinyc_cuda_alloc(cu, (size_t)n * 4, &c), 0);
	cr_assert_eq(tinyc_cuda_upload(cu, a, h, (size_t)n * 4), 0);
	void *args[] = {&a, &b, &n};
	cr_assert_eq(tinyc_cuda_launch(cu, k, (tinyc_dim3){1, 1, 1}, (tinyc_dim3){256, 1, 1},
				       (unsigned)n * 4, args), 0, "%s", first_msg(ctx));
	cr_assert_eq(tinyc_cuda_copy(cu, c, b, (size_t)n * 4), 0);
	cr_assert_eq(tinyc_cuda_download(cu, o, c, (size_t)n * 4), 0, "%s", first_msg(ctx));
	for (int i = 0; i < n; i++)
		cr_assert_eq(o[i], (n - 1 - i) * 7 + 3, "out[%d] = %d", i, o[i]);
	tinyc_cuda_free(cu, a);
	tinyc_cuda_free(cu, b);
	tinyc_cuda_free(cu, c);
	free(h);
	free(o);
	tinyc_kernel_free(k);
	tinyc_compile_result_clear(&r);
	tinyc_cuda_close(cu);
	tinyc_ctx_free(ctx);
}

/* Driver errors are CudaError diagnostics naming the call and the error. */
Test(cuda, driver_errors, .description = "gpu")
{
	SKIP_WITHOUT_GPU();
	tinyc_ctx *ctx = tinyc_ctx_alloc();
	tinyc_cuda *cu = tinyc_cuda_open(ctx, 0);
	cr_assert_not_null(cu, "%s", first_msg(ctx));
	tinyc_blob img;
	cr_assert_eq(tinyc_nvrtc_compile(ctx, half_kernel, "scale_add.cu",
					 tinyc_cuda_device_info(cu)->target, 1, &img), 0);
	cr_expect_null(tinyc_cuda_kernel_load(cu, &img, "no_such_kernel"));
	cr_expect_str_eq(first_kind(ctx), "CudaError");
	cr_expect_not_null(strstr(first_msg(ctx), "cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND: "),
			   "%s", first_msg(ctx));
	tinyc_ctx_clear_diags(ctx);
	tinyc_blob junk = {.data = (unsigned char *)"not a module", .size = 12};
	cr_expect_null(tinyc_cuda_kernel_load(cu, &junk, "scale_add"));
	cr_expect_not_null(strstr(first_msg(ctx), "cuModuleLoadDataEx failed: CUDA_ERROR_"),
			   "%s", first_msg(ctx));
	tinyc_ctx_clear_diags(ctx);
	tinyc_devptr p;
	cr_expect_eq(tinyc_cuda_alloc(cu, (size_t)1 << 50, &p), -1);	/* a petabyte */
	cr_expect_not_null(strstr(first_msg(ctx), "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY"),
			   "%s", first_msg(ctx));
	tinyc_blob_clear(&img);
	tinyc_cuda_close(cu);
	tinyc_ctx_free(ctx);

	tinyc_ctx *c2 = tinyc_ctx_alloc();
	cr_expect_null(tinyc_cuda_open(c2, 4096));
	cr_expect_str_eq(first_kind(c2), "NoGpu");
	tinyc_ctx_free(c2);
}
