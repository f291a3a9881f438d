// embed.cpp: tinyc's C API from C++, sizes given at run time.
//
// Compiles Y = relu(X @ W + bias) with symbolic sizes, reads M, K, N off the input
// shapes (tinyc_program_infer_sizes), runs it on the CPU, prints Y, then shows how a bad
// graph is reported.  Uses nothing but tinyc.h.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <tinyc.h>

namespace {

// Owning handles: the program must go before its context.
struct context_free {
	void operator()(tinyc_context *c) const { tinyc_context_free(c); }
};
struct program_free {
	void operator()(tinyc_program *p) const { tinyc_program_free(p); }
};
using context_ptr = std::unique_ptr<tinyc_context, context_free>;
using program_ptr = std::unique_ptr<tinyc_program, program_free>;

// The text of a file, or "" when it cannot be read.
std::string read_file(const char *path)
{
	std::ifstream f(path);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: embed_cpp linear_relu.uop\n");
		return 2;
	}
	std::string text = read_file(argv[1]);
	context_ptr ctx(tinyc_context_new());
	if (!ctx)
		return 1;
	tinyc_compile_options opt = {};
	opt.device = "cpu";
	tinyc_program *raw = nullptr;
	tinyc_status s = tinyc_program_compile(ctx.get(), text.c_str(), argv[1], &opt, &raw);
	program_ptr p(raw);
	if (s != TINYC_OK) {
		std::fprintf(stderr, "%s", tinyc_context_diagnostics(ctx.get()));
		return 1;
	}
	// X = I (3x3), W 3x2, bias 2: Y = relu(W + bias)
	std::vector<float> x = {1, 0, 0, 0, 1, 0, 0, 0, 1};
	std::vector<float> w = {1, -1, 0, 2, 1, 0};
	std::vector<float> bias = {0.5f, -0.5f};
	int64_t xs[] = {3, 3}, ws[] = {3, 2}, bs[] = {2};
	const int64_t *shapes[] = {xs, ws, bs};
	int ranks[] = {2, 2, 1};
	if (tinyc_program_infer_sizes(p.get(), 3, ranks, shapes) != TINYC_OK) {
		std::fprintf(stderr, "%s", tinyc_context_diagnostics(ctx.get()));
		return 1;
	}
	tinyc_tensor_info info;
	tinyc_program_output_info(p.get(), tinyc_program_find_output(p.get(), "Y"), &info);
	std::vector<float> y(static_cast<size_t>(info.storage));
	const void *in[] = {x.data(), w.data(), bias.data()};
	void *out[] = {y.data()};
	if (tinyc_program_run(p.get(), in, out) != TINYC_OK) {
		std::fprintf(stderr, "%s", tinyc_context_diagnostics(ctx.get()));
		return 1;
	}
	std::printf("Y[%lld,%lld] =", static_cast<long long>(info.shape[0]),
		    static_cast<long long>(info.shape[1]));
	for (float v : y)
		std::printf(" %g", v);
	std::printf("\n");

	// a graph with an error: the diagnostics name the line and the kind
	tinyc_program *bad = nullptr;
	s = tinyc_program_compile(ctx.get(), "%0 = BUFFER(slot=0, name=\"X\") : float[N]\n"
				  "%1 = FROB(%0) : float[N]\n", "bad.uop", nullptr, &bad);
	std::printf("bad graph: %s, kind %s\n", tinyc_status_name(s),
		    tinyc_context_error_kind(ctx.get()) ? tinyc_context_error_kind(ctx.get()) : "?");
	return 0;
}
