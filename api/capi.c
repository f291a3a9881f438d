/* The public C API (include/tinyc.h) over the pass pipeline.
 *
 * A tinyc_context wraps the internal diagnostics context; a tinyc_program owns the source
 * text, the compiled module (the pipeline run up to the stage its device needs: rbssa for
 * "cpu", uop for "ref", gpuir for "gpuir" and "cuda"), the run-time sizes and, on CUDA, the
 * loaded kernels and the workspace of the intermediates.  Every public call clears the
 * context's diagnostics first, so they always describe the last call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/tinyc.h"

#include "codegen/gpu.h"
#include "ir/ctx.h"
#include "driver/module.h"
#include "ir/tensor.h"
#include "lower/lower.h"
#include "runtime/runtime.h"
#include "driver/run.h"

#ifndef TINYC_VERSION
#define TINYC_VERSION "0.0.0"
#endif

struct tinyc_context {
	tinyc_ctx *ctx;		/* the diagnostics of the last call (owned) */
	char *text;		/* their rendering for tinyc_context_diagnostics (owned, or NULL) */
	int no_isolate;		/* tinyc_context_set_gpu_isolation(ctx, 0) */
	double gpu_timeout;	/* an isolated run's time limit, seconds (0: none) */
	tinyc_worker *worker;	/* the GPU worker of isolated runs (owned; NULL until used) */
};

struct tinyc_program {
	tinyc_context *c;		/* diagnostics (kept) */
	tinyc_source *src;		/* the graph text (owned) */
	char *bind;			/* options.bind copy (owned, or NULL) */
	char *target;			/* options.target copy (owned, or NULL) */
	char device[8];			/* "cpu", "ref", "gpuir", "cuda" */
	tinyc_options opt;		/* the pipeline's options (strings above) */
	tinyc_module *m;		/* the compiled module (owned) */
	int nin, nout;			/* inputs (BUFFER slots), outputs (OUTPUTs) */
	int *in_node;			/* per input: its BUFFER node, -1 for an unused slot */
	int *out_node;			/* per output: its OUTPUT node */
	tinyc_bindings *sizes;		/* run-time sizes (owned) */
	int64_t *sym;			/* sizes as the kernels take them (owned) */
	tinyc_cuda *cu;			/* the driver, once loaded (owned) */
	tinyc_gpu_loaded *loaded;	/* the loaded kernels (owned) */
	tinyc_devptr *work;		/* per GPU IR buffer: the temporary's device memory */
	int64_t *work_bytes;		/* bytes allocated in work[] */
	tinyc_devptr *dptr;		/* per GPU IR buffer: the address of the current launch */
};

/* Map the internal element types onto the public ones (same names as tinygrad's). */
static const struct {
	tinyc_type pub;		/* public type */
	tinyc_dtype dt;		/* internal dtype */
} type_map[] = {
	{TINYC_TYPE_BOOL, TINYC_BOOL},       {TINYC_TYPE_INT8, TINYC_CHAR},
	{TINYC_TYPE_UINT8, TINYC_UCHAR},     {TINYC_TYPE_INT16, TINYC_SHORT},
	{TINYC_TYPE_UINT16, TINYC_USHORT},   {TINYC_TYPE_INT32, TINYC_INT},
	{TINYC_TYPE_UINT32, TINYC_UINT},     {TINYC_TYPE_INT64, TINYC_LONG},
	{TINYC_TYPE_UINT64, TINYC_ULONG},    {TINYC_TYPE_FLOAT16, TINYC_HALF},
	{TINYC_TYPE_BFLOAT16, TINYC_BFLOAT16}, {TINYC_TYPE_FLOAT32, TINYC_FLOAT},
	{TINYC_TYPE_FLOAT64, TINYC_DOUBLE},
};

enum { NTYPES = sizeof(type_map) / sizeof(type_map[0]) };

/* The public type of an internal dtype. */
static tinyc_type public_type(tinyc_dtype dt)
{
	for (int i = 0; i < NTYPES; i++)
		if (type_map[i].dt == dt)
			return type_map[i].pub;
	return TINYC_TYPE_FLOAT32;
}

const char *tinyc_version(void)
{
	return TINYC_VERSION;
}

const char *tinyc_status_name(tinyc_status s)
{
	static const char *names[] = {"TINYC_OK", "TINYC_ERROR_INPUT", "TINYC_ERROR_USAGE",
				      "TINYC_ERROR_NO_MEMORY", "TINYC_ERROR_NO_GPU",
				      "TINYC_ERROR_CUDA"};
	if ((int)s < 0 || (int)s >= (int)(sizeof(names) / sizeof(names[0])))
		return "TINYC_UNKNOWN_STATUS";
	return names[s];
}

const char *tinyc_type_name(tinyc_type t)
{
	for (int i = 0; i < NTYPES; i++)
		if (type_map[i].pub == t)
			return tinyc_dtype_name(type_map[i].dt);
	return NULL;
}

int tinyc_type_size(tinyc_type t)
{
	for (int i = 0; i < NTYPES; i++)
		if (type_map[i].pub == t)
			return tinyc_dtype_size(type_map[i].dt);
	return 0;
}

/* ---- context ---------------------------------------------------------------------- */

tinyc_context *tinyc_context_new(void)
{
	tinyc_context *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (!(c->ctx = tinyc_ctx_alloc())) {
		free(c);
		return NULL;
	}
	c->gpu_timeout = TINYC_GPU_TIMEOUT_DEFAULT;
	return c;
}

void tinyc_context_free(tinyc_context *c)
{
	if (!c)
		return;
	tinyc_worker_free(c->worker);
	tinyc_ctx_free(c->ctx);
	free(c->text);
	free(c);
}



/* Start a public call: forget the previous call's diagnostics. */
static void begin(tinyc_context *c)
{
	tinyc_ctx_clear_diags(c->ctx);
	free(c->text);
	c->text = NULL;
}

/* The status of a failed call, from the kind of its first error. */
static tinyc_status failure(tinyc_context *c)
{
	const char *kind = tinyc_context_error_kind(c);
	if (!kind)
		return TINYC_ERROR_INPUT;
	if (!strcmp(kind, "OutOfMemory"))
		return TINYC_ERROR_NO_MEMORY;
	if (!strcmp(kind, "NoGpu"))
		return TINYC_ERROR_NO_GPU;
	if (!strncmp(kind, "Cuda", 4) || !strncmp(kind, "Gpu", 3) || !strcmp(kind, "NvrtcError") ||
	    !strcmp(kind, "LaunchError"))
		return TINYC_ERROR_CUDA;
	return TINYC_ERROR_INPUT;
}

/* Report a misuse of the API on c (may be NULL: then only the status says it). */
static tinyc_status usage(tinyc_context *c, const char *fmt, const char *arg)
{
	if (c)
		tinyc_error(c->ctx, "UsageError", fmt, arg);
	return TINYC_ERROR_USAGE;
}

tinyc_status tinyc_context_set_gpu_isolation(tinyc_context *c, int on)
{
	if (!c)
		return TINYC_ERROR_USAGE;
	begin(c);
	c->no_isolate = !on;
	return TINYC_OK;
}

tinyc_status tinyc_context_set_gpu_timeout(tinyc_context *c, double seconds)
{
	if (!c)
		return TINYC_ERROR_USAGE;
	begin(c);
	if (!(seconds >= 0))
		return usage(c, "tinyc_context_set_gpu_timeout: %s", "the limit is 0 (none) or more seconds");
	c->gpu_timeout = seconds;
	return TINYC_OK;
}

const char *tinyc_context_diagnostics(tinyc_context *c)
{
	if (!c)
		return "";
	if (!c->text) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		if (!f)
			return "error: OutOfMemory: cannot render the diagnostics\n";
		tinyc_ctx_print_diags(c->ctx, f);
		if (fclose(f) != 0 || !buf) {
			free(buf);
			return "error: OutOfMemory: cannot render the diagnostics\n";
		}
		c->text = buf;
	}
	return c->text;
}

const char *tinyc_context_error_kind(tinyc_context *c)
{
	int n = c ? tinyc_ctx_diag_count(c->ctx) : 0;
	for (int i = 0; i < n; i++) {
		const tinyc_diag *d = tinyc_ctx_diag(c->ctx, i);
		if (d->severity == TINYC_ERROR)
			return d->kind;
	}
	return NULL;
}

void tinyc_string_free(char *s)
{
	free(s);
}

/* ---- compiling -------------------------------------------------------------------- */

void tinyc_program_free(tinyc_program *p)
{
	if (!p)
		return;
	if (p->cu) {
		tinyc_cuda_sync(p->cu);	/* the workspace may be in use by enqueued kernels */
		for (int i = 0; p->work && p->m && i < tinyc_module_gpuir(p->m)->nbuf; i++)
			tinyc_cuda_free(p->cu, p->work[i]);
		tinyc_gpu_loaded_free(p->loaded);
		tinyc_cuda_close(p->cu);
	}
	free(p->work);
	free(p->work_bytes);
	free(p->dptr);
	tinyc_module_free(p->m);
	tinyc_bindings_free(p->sizes);
	free(p->sym);
	free(p->in_node);
	free(p->out_node);
	tinyc_source_free(p->src);
	free(p->bind);
	free(p->target);
	free(p);
}

/* The stage the pipeline runs to for a device. */
static const char *device_stage(const char *device)
{
	if (!strcmp(device, "cpu"))
		return "rbssa";
	if (!strcmp(device, "ref"))
		return "uop";
	return "gpuir";
}

/* Number the inputs (BUFFER slots) and outputs (OUTPUTs) of the compiled graph. */
static int index_tensors(tinyc_program *p)
{
	const tinyc_graph *g = p->m->uop;
	tinyc_ctx *ctx = p->c->ctx;
	for (int i = 0; i < g->n; i++) {
		if (g->nodes[i].op == TINYC_OP_BUFFER && g->nodes[i].slot + 1 > p->nin)
			p->nin = (int)g->nodes[i].slot + 1;
		p->nout += g->nodes[i].op == TINYC_OP_OUTPUT;
	}
	p->in_node = tinyc_calloc(ctx, (size_t)p->nin + 1, sizeof(int));
	p->out_node = tinyc_calloc(ctx, (size_t)p->nout + 1, sizeof(int));
	if (!p->in_node || !p->out_node)
		return -1;
	for (int i = 0; i < p->nin; i++)
		p->in_node[i] = -1;
	for (int i = 0, o = 0; i < g->n; i++) {
		const tinyc_uop *u = &g->nodes[i];
		if (u->op == TINYC_OP_BUFFER && p->in_node[u->slot] < 0)
			p->in_node[u->slot] = i;
		if (u->op == TINYC_OP_OUTPUT)
			p->out_node[o++] = i;
	}
	return 0;
}

tinyc_status tinyc_program_compile(tinyc_context *c, const char *text, const char *file_name,
				   const tinyc_compile_options *opt, tinyc_program **out)
{
	if (out)
		*out = NULL;
	if (!c || !text || !out)
		return usage(c, "%s", "tinyc_program_compile needs a context, text and a result pointer");
	begin(c);
	tinyc_compile_options none = {0};
	if (!opt)
		opt = &none;
	const char *device = opt->device ? opt->device : "cpu";
	if (strcmp(device, "cpu") && strcmp(device, "ref") && strcmp(device, "gpuir") &&
	    strcmp(device, "cuda"))
		return usage(c, "unknown device '%s' (known: cpu, ref, gpuir, cuda)", device);
	tinyc_program *p = tinyc_calloc(c->ctx, 1, sizeof(*p));
	if (!p)
		return TINYC_ERROR_NO_MEMORY;
	p->c = c;
	snprintf(p->device, sizeof(p->device), "%s", device);
	p->src = tinyc_source_from_string(file_name ? file_name : "<input>", text, strlen(text));
	p->bind = opt->bind ? tinyc_strdup(c->ctx, opt->bind) : NULL;
	p->target = opt->target ? tinyc_strdup(c->ctx, opt->target) : NULL;
	if (!p->src || (opt->bind && !p->bind) || (opt->target && !p->target)) {
		tinyc_program_free(p);
		return TINYC_ERROR_NO_MEMORY;
	}
	p->opt.target = p->target;
	p->opt.verify_each = opt->verify_each;
	p->opt.bind = opt->runtime_sizes ? NULL : p->bind;	/* run time: set below */
	p->opt.kernels_only = !strcmp(device, "gpuir") || !strcmp(device, "cuda");
	int last = tinyc_pass_find(device_stage(device));
	if (!(p->m = tinyc_module_alloc(c->ctx, p->src, &p->opt)) ||
	    tinyc_module_run_until(p->m, last, 0, NULL) < 0 || index_tensors(p) < 0 ||
	    !(p->sizes = tinyc_bindings_alloc(c->ctx, p->m->uop)) ||
	    !(p->sym = tinyc_calloc(c->ctx, (size_t)p->m->uop->nsym + 1, sizeof(int64_t)))) {
		tinyc_status s = failure(c);
		tinyc_program_free(p);
		return s;
	}
	if (tinyc_program_set_sizes(p, opt->runtime_sizes ? p->bind : NULL) != TINYC_OK) {
		tinyc_program_free(p);
		return TINYC_ERROR_INPUT;
	}
	*out = p;
	return TINYC_OK;
}

const char *tinyc_program_device(const tinyc_program *p)
{
	return p ? p->device : NULL;
}

int tinyc_program_num_inputs(const tinyc_program *p)
{
	return p ? p->nin : 0;
}

int tinyc_program_num_outputs(const tinyc_program *p)
{
	return p ? p->nout : 0;
}

/* Describe graph node `node` (a BUFFER or OUTPUT, or -1 for an unused slot). */
static void describe(const tinyc_program *p, int node, tinyc_tensor_info *out)
{
	memset(out, 0, sizeof(*out));
	if (node < 0) {		/* a slot no BUFFER reads */
		out->name = "";
		out->storage = 0;
		return;
	}
	const tinyc_graph *g = p->m->uop;
	const tinyc_uop *u = &g->nodes[node];
	out->name = u->name;
	out->type = public_type(u->dtype);
	out->elem_size = tinyc_dtype_size(u->dtype);
	out->rank = u->rank;
	out->strided = u->strides != NULL;
	int64_t numel = 1, span = 1;
	int known = 1;
	for (int d = 0; d < u->rank && d < TINYC_MAX_DIMS; d++) {
		out->shape[d] = tinyc_dim_value(&u->shape[d], p->sizes);
		out->dim_symbol[d] = u->shape[d].sym >= 0 ? g->syms[u->shape[d].sym] : NULL;
		if (out->shape[d] < 0) {
			known = 0;
			continue;
		}
		numel *= out->shape[d];
		if (u->strides) {
			int64_t st = tinyc_dim_value(&u->strides[d], p->sizes);
			if (st < 0)
				known = 0;
			else
				span += (out->shape[d] - 1) * st;
		}
	}
	out->storage = !known ? -1 : !u->strides ? numel : numel ? span : 0;
}

tinyc_status tinyc_program_input_info(const tinyc_program *p, int i, tinyc_tensor_info *out)
{
	if (!p || !out || i < 0 || i >= p->nin)
		return TINYC_ERROR_USAGE;
	describe(p, p->in_node[i], out);
	return TINYC_OK;
}

tinyc_status tinyc_program_output_info(const tinyc_program *p, int i, tinyc_tensor_info *out)
{
	if (!p || !out || i < 0 || i >= p->nout)
		return TINYC_ERROR_USAGE;
	describe(p, p->out_node[i], out);
	return TINYC_OK;
}

int tinyc_program_find_input(const tinyc_program *p, const char *name)
{
	for (int i = 0; p && name && i < p->nin; i++)
		if (p->in_node[i] >= 0 && !strcmp(p->m->uop->nodes[p->in_node[i]].name, name))
			return i;
	return -1;
}

int tinyc_program_find_output(const tinyc_program *p, const char *name)
{
	for (int i = 0; p && name && i < p->nout; i++)
		if (!strcmp(p->m->uop->nodes[p->out_node[i]].name, name))
			return i;
	return -1;
}

/* ---- sizes ------------------------------------------------------------------------ */

/* Reset the run-time sizes to the compile-time bindings. */
static void reset_sizes(tinyc_program *p)
{
	memcpy(p->sizes->val, p->m->bind->val, (size_t)p->sizes->n * sizeof(int64_t));
}

tinyc_status tinyc_program_set_sizes(tinyc_program *p, const char *bind)
{
	if (!p)
		return TINYC_ERROR_USAGE;
	begin(p->c);
	reset_sizes(p);
	if (bind && *bind && (tinyc_bindings_parse(p->c->ctx, p->m->uop, bind, p->sizes) < 0 ||
			      tinyc_verify(p->c->ctx, p->m->uop, p->sizes) < 0)) {
		reset_sizes(p);
		return failure(p->c);
	}
	return TINYC_OK;
}

tinyc_status tinyc_program_infer_sizes(tinyc_program *p, int n, const int *ranks,
				       const int64_t *const *shapes)
{
	if (!p)
		return TINYC_ERROR_USAGE;
	begin(p->c);
	if (n < 0 || n > p->nin || (n && (!ranks || !shapes)))
		return usage(p->c, "tinyc_program_infer_sizes: %s", "n, ranks or shapes out of range");
	reset_sizes(p);
	tinyc_tensor *t = tinyc_calloc(p->c->ctx, (size_t)p->nin + 1, sizeof(*t));
	tinyc_tensor **in = tinyc_calloc(p->c->ctx, (size_t)p->nin + 1, sizeof(*in));
	tinyc_status s = TINYC_OK;
	if (!t || !in) {
		s = TINYC_ERROR_NO_MEMORY;
		goto done;
	}
	for (int i = 0; i < n; i++) {
		if (!shapes[i] || p->in_node[i] < 0)
			continue;
		if (ranks[i] < 0 || ranks[i] > TINYC_MAX_RANK) {
			s = usage(p->c, "tinyc_program_infer_sizes: %s", "rank out of range");
			goto done;
		}
		t[i].dtype = p->m->uop->nodes[p->in_node[i]].dtype;	/* shapes only */
		t[i].rank = ranks[i];
		memcpy(t[i].shape, shapes[i], (size_t)ranks[i] * sizeof(int64_t));
		in[i] = &t[i];
	}
	tinyc_io io = {p->nin, in, 0, NULL};
	if (tinyc_bind_from_inputs(p->c->ctx, p->m->uop, p->sizes, &io) < 0 ||
	    tinyc_verify(p->c->ctx, p->m->uop, p->sizes) < 0) {
		reset_sizes(p);
		s = failure(p->c);
	}
done:
	free(t);
	free(in);
	return s;
}

/* Copy the sizes into p->sym; -1 with UnboundSymbol when one has no value. */
static int all_sizes(tinyc_program *p)
{
	const tinyc_graph *g = p->m->uop;
	for (int i = 0; i < g->nsym; i++) {
		if (p->sizes->val[i] < 0)
			return tinyc_error(p->c->ctx, "UnboundSymbol", "size %s has no value (bind it when "
					   "compiling, or call tinyc_program_set_sizes / infer_sizes)",
					   g->syms[i]);
		p->sym[i] = p->sizes->val[i];
	}
	return 0;
}

/* ---- running ---------------------------------------------------------------------- */

/* Forget the kernels and the workspace of a context that a fault reset (they are gone
 * with it: nothing is unloaded or freed), and start using the new context. */
static void drop_device_state(tinyc_program *p)
{
	tinyc_gpu_loaded_free(p->loaded);	/* stale kernels: freed, not unloaded */
	p->loaded = NULL;
	for (int i = 0; p->work && p->m && i < tinyc_module_gpuir(p->m)->nbuf; i++)
		p->work[i] = 0, p->work_bytes[i] = 0;
	tinyc_cuda_renew(p->cu);
}

/* Open the driver and load the kernels (device "cuda"), once. */
static int load(tinyc_program *p)
{
	if (p->cu && tinyc_cuda_stale(p->cu))
		drop_device_state(p);	/* a fault reset the context: load again */
	if (p->loaded)
		return 0;
	tinyc_ctx *ctx = p->c->ctx;
	tinyc_gpu_module *gm = tinyc_module_gpuir(p->m);
	if (!gm)
		return tinyc_error(ctx, "PipelineError", "no GPU IR to run");
	if (!p->cu && !(p->cu = tinyc_cuda_open(ctx, 0)))
		return -1;
	if (!p->work) {
		p->work = tinyc_calloc(ctx, (size_t)gm->nbuf + 1, sizeof(*p->work));
		p->work_bytes = tinyc_calloc(ctx, (size_t)gm->nbuf + 1, sizeof(*p->work_bytes));
		p->dptr = tinyc_calloc(ctx, (size_t)gm->nbuf + 1, sizeof(*p->dptr));
		if (!p->work || !p->work_bytes || !p->dptr)
			return -1;
	}
	return (p->loaded = tinyc_gpu_load(ctx, p->cu, gm, NULL)) ? 0 : -1;
}

tinyc_status tinyc_program_run(tinyc_program *p, const void *const *inputs, void *const *outputs)
{
	if (!p)
		return TINYC_ERROR_USAGE;
	begin(p->c);
	tinyc_ctx *ctx = p->c->ctx;
	if ((p->nin && !inputs) || (p->nout && !outputs))
		return usage(p->c, "tinyc_program_run: %s", "inputs or outputs missing");
	if (all_sizes(p) < 0)
		return failure(p->c);
	tinyc_tensor *t = tinyc_calloc(ctx, (size_t)p->nin + 1, sizeof(*t));
	tinyc_tensor **in = tinyc_calloc(ctx, (size_t)p->nin + 1, sizeof(*in));
	tinyc_io io = {p->nin, in, 0, NULL};
	tinyc_status s = TINYC_OK;
	int rc = -1;
	if (!t || !in) {
		s = TINYC_ERROR_NO_MEMORY;
		goto done;
	}
	/* the caller's arrays, wrapped (borrowed: never freed here) */
	for (int i = 0; i < p->nin; i++) {
		tinyc_tensor_info info;
		tinyc_program_input_info(p, i, &info);
		if (p->in_node[i] < 0)
			continue;
		if (!inputs[i]) {
			s = usage(p->c, "tinyc_program_run: input '%s' is NULL", info.name);
			goto done;
		}
		t[i].dtype = p->m->uop->nodes[p->in_node[i]].dtype;
		t[i].data = (void *)inputs[i];
		if (info.strided) {
			t[i].rank = 1;
			t[i].shape[0] = info.storage;
		} else {
			t[i].rank = info.rank;
			memcpy(t[i].shape, info.shape, (size_t)info.rank * sizeof(int64_t));
		}
		in[i] = &t[i];
	}
	if (!strcmp(p->device, "cpu")) {
		rc = tinyc_rbssa_run(ctx, tinyc_module_rbssa(p->m), p->sizes, &io);
	} else if (!strcmp(p->device, "ref")) {
		rc = tinyc_eval(ctx, p->m->uop, p->sizes, &io);
	} else if (!strcmp(p->device, "gpuir")) {
		rc = tinyc_gpu_run_interp(ctx, tinyc_module_gpuir(p->m), p->sym, &io);
	} else if (!p->c->no_isolate) {	/* in the context's GPU worker */
		if (p->c->worker || (p->c->worker = tinyc_gpu_worker_new(ctx)))
			rc = tinyc_gpu_run_isolated(ctx, p->c->worker, tinyc_module_gpuir(p->m), p->sym,
						    &io, NULL, p->c->gpu_timeout, NULL);
	} else if (load(p) == 0) {
		rc = tinyc_cuda_make_current(p->cu);
		if (rc == 0)
			rc = tinyc_gpu_run_cuda(ctx, p->cu, tinyc_module_gpuir(p->m), p->sym, &io, NULL, NULL);
	}
	if (rc < 0) {
		s = failure(p->c);
		goto done;
	}
	for (int k = 0; k < p->nout; k++) {
		tinyc_tensor_info info;
		tinyc_program_output_info(p, k, &info);
		const tinyc_tensor *o = k < io.nout ? io.out[k] : NULL;
		if (!o || tinyc_tensor_numel(o) != info.storage) {
			tinyc_error(ctx, "PipelineError", "output '%s' came back with another size", info.name);
			s = TINYC_ERROR_INPUT;
			goto done;
		}
		if (!outputs[k]) {
			s = usage(p->c, "tinyc_program_run: output '%s' is NULL", info.name);
			goto done;
		}
		memcpy(outputs[k], o->data, (size_t)info.storage * (size_t)info.elem_size);
	}
done:
	tinyc_io_clear_outputs(&io);
	free(t);
	free(in);
	return s;
}

tinyc_status tinyc_program_load(tinyc_program *p)
{
	if (!p)
		return TINYC_ERROR_USAGE;
	begin(p->c);
	if (strcmp(p->device, "cuda"))
		return usage(p->c, "tinyc_program_load: the program was compiled for device '%s', "
			     "not cuda", p->device);
	return load(p) < 0 ? failure(p->c) : TINYC_OK;
}

int tinyc_program_num_kernels(const tinyc_program *p)
{
	return p && p->loaded ? tinyc_module_gpuir(p->m)->nkernel : 0;
}

tinyc_status tinyc_program_launch(tinyc_program *p, const uint64_t *inputs,
				  const uint64_t *outputs, void *stream)
{
	if (!p)
		return TINYC_ERROR_USAGE;
	begin(p->c);
	tinyc_ctx *ctx = p->c->ctx;
	if (strcmp(p->device, "cuda"))
		return usage(p->c, "tinyc_program_launch: the program was compiled for device '%s', "
			     "not cuda", p->device);
	if ((p->nin && !inputs) || (p->nout && !outputs))
		return usage(p->c, "tinyc_program_launch: %s", "inputs or outputs missing");
	if (all_sizes(p) < 0 || load(p) < 0 || tinyc_cuda_make_current(p->cu) < 0)
		return failure(p->c);
	const tinyc_gpu_module *gm = tinyc_module_gpuir(p->m);
	for (int i = 0; i < gm->nbuf; i++) {
		const tinyc_gbuf *b = &gm->bufs[i];
		if (b->role == TINYC_GB_INPUT || b->role == TINYC_GB_OUTPUT) {
			int in = b->role == TINYC_GB_INPUT;
			if (b->index < 0 || b->index >= (in ? p->nin : p->nout))
				return tinyc_error(ctx, "PipelineError", "buffer %s has no argument", b->name),
				       TINYC_ERROR_INPUT;
			p->dptr[i] = in ? inputs[b->index] : outputs[b->index];
			if (!p->dptr[i])
				return usage(p->c, "tinyc_program_launch: no device pointer for '%s'", b->name);
			continue;
		}
		/* an intermediate: the workspace, grown when the sizes need more */
		int64_t bytes = tinyc_gpu_buf_storage(b, p->sym) * tinyc_dtype_size(b->dtype);
		if (bytes < 1)
			bytes = 1;
		if (bytes > p->work_bytes[i]) {
			if (p->work[i] && (tinyc_cuda_sync(p->cu) < 0 || tinyc_cuda_free(p->cu, p->work[i]) < 0))
				return failure(p->c);
			p->work[i] = 0;
			p->work_bytes[i] = 0;
			if (tinyc_cuda_memory_check(ctx, p->cu, "the program's workspace (intermediates)",
						    bytes) < 0 ||
			    tinyc_cuda_alloc(p->cu, (size_t)bytes, &p->work[i]) < 0)
				return failure(p->c);
			p->work_bytes[i] = bytes;
		}
		p->dptr[i] = p->work[i];
	}
	if (tinyc_gpu_launch_async(ctx, p->cu, gm, p->loaded, p->sym, p->dptr, stream) < 0)
		return failure(p->c);
	return TINYC_OK;
}

/* ---- text ------------------------------------------------------------------------- */

tinyc_status tinyc_program_dump(tinyc_program *p, const char *stage, char **out)
{
	if (out)
		*out = NULL;
	if (!p || !stage || !out)
		return TINYC_ERROR_USAGE;
	begin(p->c);
	int last = tinyc_pass_find(stage);
	if (last < 0)
		return usage(p->c, "unknown stage '%s' (uop, indexbook, polyview, rbssa, polycore, "
			     "evt, schedule, gpuir, cuda)", stage);
	/* a module of its own, every stage up to this one (as tinyc --dump-stage does) */
	tinyc_options opt = p->opt;
	opt.kernels_only = 0;
	tinyc_module *m = tinyc_module_alloc(p->c->ctx, p->src, &opt);
	tinyc_buf buf = {0};
	int n;
	const tinyc_pass *passes = tinyc_pipeline(&n);
	int rc = !m ? -1 : tinyc_module_run_until(m, last, 0, NULL);
	if (rc == 0)
		rc = passes[last].print(m, TINYC_FMT_TEXT, &buf);
	tinyc_module_free(m);
	if (rc == 0 && buf.oom)
		rc = tinyc_error(p->c->ctx, "OutOfMemory", "the %s dump", stage);
	if (rc < 0) {
		tinyc_buf_free(&buf);
		return failure(p->c);
	}
	*out = buf.data ? buf.data : tinyc_strdup(p->c->ctx, "");
	return *out ? TINYC_OK : TINYC_ERROR_NO_MEMORY;
}

tinyc_status tinyc_program_cuda_source(tinyc_program *p, char **out)
{
	return tinyc_program_dump(p, "cuda", out);
}
