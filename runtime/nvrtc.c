/* nvrtc: CUDA text -> PTX or CUBIN.  nvrtc's log is turned into diagnostics located in the
 * CUDA text, so a bad kernel reads like any other compile error:
 *
 *   matmul.cu:4:17: error: CudaCompileError: identifier "y" is undefined
 *     x[i] = x[i] * y;
 *                   ^
 */
#define _GNU_SOURCE	/* dladdr */
#include "runtime/runtime.h"

#include <dlfcn.h>
#include <limits.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_COMPILE_DIAGS 50	/* CudaCompileError diagnostics reported per compile */
#define MAX_OPTIONS 64		/* nvrtc options, extras included */

/* Milliseconds on the monotonic clock. */
double tinyc_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Free the image and log of a blob. */
void tinyc_blob_clear(tinyc_blob *b)
{
	if (!b)
		return;
	free(b->data);
	free(b->log);
	*b = (tinyc_blob){0};
}

/* nvrtc's version, encoded like CUDA_VERSION. */
int tinyc_nvrtc_version(void)
{
	int major, minor;
	if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
		return -1;
	return major * 1000 + minor * 10;
}

static char include_dir[PATH_MAX];	/* found by find_include_dir, "" if none */
static pthread_once_t include_once = PTHREAD_ONCE_INIT;

/* Whether dir holds cuda_fp16.h; if so copy it into include_dir. */
static int try_include_dir(const char *dir)
{
	char path[PATH_MAX];
	if (!dir || !*dir || strlen(dir) + 16 >= sizeof(path))
		return 0;
	snprintf(path, sizeof(path), "%s/cuda_fp16.h", dir);
	if (access(path, R_OK) != 0)
		return 0;
	char *real = realpath(dir, NULL);
	snprintf(include_dir, sizeof(include_dir), "%s", real ? real : dir);
	free(real);
	return 1;
}

/* Try <env>/include for an environment variable naming a CUDA installation. */
static int try_env_root(const char *var)
{
	const char *root = getenv(var);
	char dir[PATH_MAX];
	if (!root || !*root || strlen(root) + 9 >= sizeof(dir))
		return 0;
	snprintf(dir, sizeof(dir), "%s/include", root);
	return try_include_dir(dir);
}

/* Try the include folder beside the loaded libnvrtc (<lib>/../include). */
static int try_beside_nvrtc(void)
{
	Dl_info info;
	if (!dladdr((void *)nvrtcVersion, &info) || !info.dli_fname)
		return 0;
	char *lib = realpath(info.dli_fname, NULL);
	if (!lib)
		return 0;
	char dir[PATH_MAX];
	char *slash = strrchr(lib, '/');
	int ok = 0;
	if (slash && (size_t)(slash - lib) + 12 < sizeof(dir)) {
		*slash = 0;
		snprintf(dir, sizeof(dir), "%s/../include", lib);
		ok = try_include_dir(dir);
	}
	free(lib);
	return ok;
}

/* Find the CUDA headers nvrtc needs for cuda_fp16.h and cuda_bf16.h (nvrtc 13 does not
 * search anywhere by itself). */
static void find_include_dir(void)
{
	if (try_env_root("CUDA_HOME") || try_env_root("CUDA_PATH") || try_beside_nvrtc())
		return;
#ifdef TINYC_CUDA_INCLUDE_DIR
	if (try_include_dir(TINYC_CUDA_INCLUDE_DIR))
		return;
#endif
	if (!try_include_dir("/usr/local/cuda/include"))
		include_dir[0] = 0;
}

const char *tinyc_nvrtc_include_dir(void)
{
	pthread_once(&include_once, find_include_dir);
	return include_dir[0] ? include_dir : NULL;
}

/* The option strings for one compile, written into storage; returns how many, or -1. */
static int build_options(tinyc_ctx *ctx, const char *arch, int want_cubin,
			 const char *const *extra, int n_extra, char *storage, size_t cap,
			 const char **opts)
{
	tinyc_arch a;
	if (tinyc_arch_from_target(ctx, arch, &a) < 0)
		return -1;
	if (n_extra < 0 || n_extra > MAX_OPTIONS - 4)
		return tinyc_error(ctx, "NvrtcError", "too many extra nvrtc options (%d)", n_extra);
	char name[32];
	const char *inc = tinyc_nvrtc_include_dir();
	int n = 0;
	size_t used = 0;
	opts[n++] = "-std=c++17";	/* no --use_fast_math: results must be exact */
	opts[n++] = "-default-device";
	int w = snprintf(storage, cap, "-arch=%s", tinyc_arch_name(a, want_cubin, name, sizeof(name)));
	opts[n++] = storage;
	used = (size_t)w + 1;
	if (inc) {
		snprintf(storage + used, cap - used, "-I%s", inc);
		opts[n++] = storage + used;
	}
	for (int i = 0; i < n_extra; i++) {
		if (!extra[i])
			return tinyc_error(ctx, "NvrtcError", "extra nvrtc option %d is NULL", i);
		opts[n++] = extra[i];
	}
	return n;
}

/* The nvrtc options, one per line. */
int tinyc_nvrtc_options(tinyc_ctx *ctx, const char *arch, int want_cubin,
			const char *const *extra, int n_extra, tinyc_buf *out)
{
	char storage[PATH_MAX + 64];
	const char *opts[MAX_OPTIONS];
	int n = build_options(ctx, arch, want_cubin, extra, n_extra, storage, sizeof(storage),
			      opts);
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		tinyc_buf_puts(out, opts[i]);
		tinyc_buf_putc(out, '\n');
	}
	return 0;
}

/* Report a failing nvrtc call. */
static int nvrtc_fail(tinyc_ctx *ctx, const char *call, nvrtcResult r, const char *log)
{
	if (log && *log) {
		size_t n = strlen(log);
		while (n && (log[n - 1] == '\n' || log[n - 1] == '\r'))
			n--;
		return tinyc_error(ctx, "NvrtcError", "%s failed: %s: %.*s", call,
				   nvrtcGetErrorString(r), (int)n, log);
	}
	return tinyc_error(ctx, "NvrtcError", "%s failed: %s", call, nvrtcGetErrorString(r));
}

/* Copy [p, end) of a log line into a new string (NULL on OOM). */
static char *copy_span(const char *p, const char *end)
{
	char *s = malloc((size_t)(end - p) + 1);
	if (s) {
		memcpy(s, p, (size_t)(end - p));
		s[end - p] = 0;
	}
	return s;
}

/* One parsed nvrtc log line "FILE(LINE): SEVERITY: MESSAGE". */
typedef struct log_entry {
	const char *file;	/* start of FILE in the log */
	size_t file_len;	/* its length */
	int line;		/* LINE */
	int is_error;		/* "error" or "catastrophic error" (not a warning or remark) */
	const char *msg;	/* start of MESSAGE */
	const char *msg_end;	/* end of MESSAGE (the line's end) */
} log_entry;

/* Parse one log line [p, end); returns 1 if it is a located diagnostic. */
static int parse_log_line(const char *p, const char *end, log_entry *e)
{
	/* The file name may itself contain parentheses: take the last "(digits): ". */
	const char *close = NULL;
	for (const char *q = p; q + 2 < end; q++) {
		if (q[0] != ')' || q[1] != ':' || q[2] != ' ')
			continue;
		const char *d = q;
		while (d > p && d[-1] >= '0' && d[-1] <= '9')
			d--;
		if (d < q && d > p && d[-1] == '(')
			close = q;
	}
	if (!close)
		return 0;
	const char *open = close;
	while (open[-1] != '(')
		open--;
	open--;
	long line = strtol(open + 1, NULL, 10);
	const char *sev = close + 3;
	const char *colon = NULL;
	for (const char *q = sev; q + 1 < end; q++)
		if (q[0] == ':' && q[1] == ' ') {
			colon = q;
			break;
		}
	if (!colon || line <= 0 || line > INT_MAX)
		return 0;
	size_t sev_len = (size_t)(colon - sev);
	e->file = p;
	e->file_len = (size_t)(open - p);
	e->line = (int)line;
	e->is_error = (sev_len >= 5 && strncmp(sev, "error", 5) == 0) ||
		      (sev_len >= 18 && strncmp(sev, "catastrophic error", 18) == 0);
	e->msg = colon + 2;
	e->msg_end = end;
	return 1;
}

/* The text of line `line` (1-based) of text, as [*start, *end); 0 if there is no such line. */
static int find_line(const char *text, int line, const char **start, const char **end)
{
	const char *p = text;
	for (int l = 1; l < line; l++) {
		p = strchr(p, '\n');
		if (!p)
			return 0;
		p++;
	}
	const char *q = p;
	while (*q && *q != '\n' && *q != '\r')
		q++;
	*start = p;
	*end = q;
	return 1;
}

/* The column of the caret nvrtc prints under its two-space-indented quote of the source
 * line, when the quote (lines quote..caret) matches the real line; 0 otherwise. */
static int caret_column(const char *quote, const char *quote_end, const char *caret,
			const char *caret_end, const char *src_line, const char *src_end)
{
	if (quote_end - quote < 2 || strncmp(quote, "  ", 2) != 0)
		return 0;
	if ((size_t)(quote_end - quote - 2) != (size_t)(src_end - src_line) ||
	    memcmp(quote + 2, src_line, (size_t)(src_end - src_line)) != 0)
		return 0;
	const char *hat = memchr(caret, '^', (size_t)(caret_end - caret));
	if (!hat || hat - caret < 2)
		return 0;
	for (const char *q = caret; q < hat; q++)
		if (*q != ' ' && *q != '\t')
			return 0;
	return (int)(hat - caret - 2) + 1;
}

/* Turn nvrtc's compile log into CudaCompileError diagnostics: errors in the program itself
 * are located in its text (line, quoted line, caret); errors in headers name the header. */
static void report_compile_log(tinyc_ctx *ctx, const char *cuda_src, const char *name,
			       const char *log)
{
	tinyc_source *src = tinyc_source_from_string(name, cuda_src, strlen(cuda_src));
	size_t name_len = strlen(name);
	int nreported = 0, nerrors = 0;
	const char *p = log ? log : "";
	while (*p) {
		const char *end = strchr(p, '\n');
		if (!end)
			end = p + strlen(p);
		const char *next = *end ? end + 1 : end;
		log_entry e;
		if (!parse_log_line(p, end, &e) || !e.is_error) {
			p = next;
			continue;
		}
		nerrors++;
		if (nreported >= MAX_COMPILE_DIAGS) {
			p = next;
			continue;
		}
		char *msg = copy_span(e.msg, e.msg_end);
		const char *sl, *se;
		if (e.file_len == name_len && strncmp(e.file, name, name_len) == 0 &&
		    find_line(cuda_src, e.line, &sl, &se)) {
			/* the two lines after an error quote the source line and mark the column */
			const char *q = next, *qe = strchr(q, '\n');
			int col = 0;
			if (qe) {
				const char *c = qe + 1, *ce = strchr(c, '\n');
				if (!ce)
					ce = c + strlen(c);
				col = caret_column(q, qe, c, ce, sl, se);
			}
			tinyc_error_at(ctx, src, (tinyc_loc){e.line, col}, "CudaCompileError",
				       "%s", msg ? msg : "(out of memory)");
		} else {
			tinyc_error(ctx, "CudaCompileError", "%.*s:%d: %s", (int)e.file_len, e.file,
				    e.line, msg ? msg : "(out of memory)");
		}
		free(msg);
		nreported++;
		p = next;
	}
	if (nerrors > nreported)
		tinyc_note_at(ctx, NULL, (tinyc_loc){0, 0}, "%d more CUDA compile errors not shown",
			      nerrors - nreported);
	if (nerrors == 0) {	/* a failure with no located error: show the whole log */
		size_t n = log ? strlen(log) : 0;
		while (n && (log[n - 1] == '\n' || log[n - 1] == '\r'))
			n--;
		tinyc_error(ctx, "CudaCompileError", "nvrtc could not compile '%s'%s%.*s", name,
			    n ? ":\n" : "", (int)n, n ? log : "");
	}
	tinyc_source_free(src);
}

/* Compile with the default options. */
int tinyc_nvrtc_compile(tinyc_ctx *ctx, const char *cuda_src, const char *name,
			const char *arch, int want_cubin, tinyc_blob *out)
{
	return tinyc_nvrtc_compile_opts(ctx, cuda_src, name, arch, want_cubin, NULL, 0, out);
}

/* Compile CUDA text to PTX or CUBIN with nvrtc. */
int tinyc_nvrtc_compile_opts(tinyc_ctx *ctx, const char *cuda_src, const char *name,
			     const char *arch, int want_cubin, const char *const *extra,
			     int n_extra, tinyc_blob *out)
{
	*out = (tinyc_blob){0};
	if (!cuda_src)
		return tinyc_error(ctx, "NvrtcError", "no CUDA text to compile");
	if (!name || !*name)
		name = "kernel.cu";
	char storage[PATH_MAX + 64];
	const char *opts[MAX_OPTIONS];
	int nopt = build_options(ctx, arch, want_cubin, extra, n_extra, storage,
				 sizeof(storage), opts);
	if (nopt < 0)
		return -1;

	nvrtcProgram prog;
	nvrtcResult r = nvrtcCreateProgram(&prog, cuda_src, name, 0, NULL, NULL);
	if (r != NVRTC_SUCCESS)
		return nvrtc_fail(ctx, "nvrtcCreateProgram", r, NULL);
	double t0 = tinyc_now_ms();
	nvrtcResult rc = nvrtcCompileProgram(prog, nopt, opts);
	double t1 = tinyc_now_ms();

	size_t log_size = 0;
	char *log = NULL;
	if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
		log = malloc(log_size);
		if (log && nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) {
			free(log);
			log = NULL;
		}
	}
	int ret = -1;
	if (rc == NVRTC_ERROR_COMPILATION) {
		report_compile_log(ctx, cuda_src, name, log);
		goto done;
	}
	if (rc != NVRTC_SUCCESS) {
		nvrtc_fail(ctx, "nvrtcCompileProgram", rc, log);
		goto done;
	}

	size_t size = 0;
	r = want_cubin ? nvrtcGetCUBINSize(prog, &size) : nvrtcGetPTXSize(prog, &size);
	if (r != NVRTC_SUCCESS) {
		nvrtc_fail(ctx, want_cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize", r, NULL);
		goto done;
	}
	unsigned char *data = tinyc_malloc(ctx, size + 1);
	if (!data)
		goto done;
	r = want_cubin ? nvrtcGetCUBIN(prog, (char *)data) : nvrtcGetPTX(prog, (char *)data);
	if (r != NVRTC_SUCCESS) {
		free(data);
		nvrtc_fail(ctx, want_cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX", r, NULL);
		goto done;
	}
	data[size] = 0;
	if (!want_cubin && size > 0 && data[size - 1] == 0)	/* PTX size counts its NUL */
		size--;
	out->data = data;
	out->size = size;
	out->is_cubin = want_cubin != 0;
	out->log = log;
	out->compile_ms = t1 - t0;
	log = NULL;
	ret = 0;
done:
	free(log);
	nvrtcDestroyProgram(&prog);
	return ret;
}
