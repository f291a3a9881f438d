/* Host tensors, NumPy .npy files and the reference evaluator.
 *
 * The reference evaluator runs a UOp DAG on the CPU with the numerics of DESIGN.md §2:
 * 16-bit floats are computed in float32 and rounded (to nearest even) only where a value is
 * materialised (a CAST to a 16-bit type, a 16-bit CONST, a 16-bit REDUCE result, an OUTPUT).
 * It is the oracle every later stage is checked against, so it is written to be obviously
 * right, not fast: every node is materialised densely, element by element.
 */
#ifndef TINYC_IR_TENSOR_H
#define TINYC_IR_TENSOR_H

#include <stdint.h>

#include "ir/ctx.h"
#include "ir/dtype.h"
#include "ir/uop.h"

/* A dense host tensor, C order (row-major), elements of `dtype` stored natively
 * (half and bfloat16 as their 16-bit patterns, bool as one byte 0/1). */
typedef struct tinyc_tensor {
	tinyc_dtype dtype;		/* element type */
	int rank;			/* number of dims, 0 for a scalar */
	int64_t shape[TINYC_MAX_RANK];	/* sizes */
	void *data;			/* numel * dtype size bytes, owned */
} tinyc_tensor;

__tinyc_give tinyc_tensor *tinyc_tensor_alloc(tinyc_ctx *ctx, tinyc_dtype dt, int rank,
					      const int64_t *shape);
void tinyc_tensor_free(__tinyc_take tinyc_tensor *t);
int64_t tinyc_tensor_numel(const tinyc_tensor *t);
/* Element i (flat C-order index) converted to double / stored from double. */
double tinyc_tensor_get(const tinyc_tensor *t, int64_t i);
void tinyc_tensor_set(tinyc_tensor *t, int64_t i, double v);
/* Element i as a 64-bit integer: signed types sign-extended, unsigned types as their bits
 * (a ulong above INT64_MAX comes back as its two's-complement pattern), bool 0/1, floats
 * converted like CAST (truncated toward zero, saturated, NaN -> 0). */
int64_t tinyc_tensor_get_int(const tinyc_tensor *t, int64_t i);
/* Store v: wrapped to the width of an integer dtype (two's complement), != 0 for bool,
 * rounded to nearest even for floats. */
void tinyc_tensor_set_int(tinyc_tensor *t, int64_t i, int64_t v);
/* x converted to dtype dt and back to double: floats round to nearest even (overflow to
 * inf, NaN stays NaN; half/bfloat16 directly from double, without double rounding);
 * integers truncate toward zero and saturate (NaN -> 0); bool is x != 0. */
double tinyc_round_to_dtype(tinyc_dtype dt, double x);
/* The integer v (as uint64 bits when from_unsigned) rounded once to the float dtype dt. */
double tinyc_int_to_float(tinyc_dtype dt, int64_t v, int from_unsigned);
/* Fill with seeded pseudo-random values: floats uniform in [-1,1), ints in a small range,
 * bools 0/1.  The same seed gives the same bytes on every machine. */
void tinyc_tensor_fill_random(tinyc_tensor *t, uint64_t seed);

/* Read a .npy file (format 1.0/2.0/3.0, C order, the dtypes of dtype.h that NumPy has).
 * Anything else (Fortran order, object arrays, big-endian) is a diagnostic naming the file. */
__tinyc_give tinyc_tensor *tinyc_npy_read(tinyc_ctx *ctx, const char *path);
/* The same from an open stream (closed by the call); path names it in diagnostics. */
__tinyc_give tinyc_tensor *tinyc_npy_read_stream(tinyc_ctx *ctx, FILE *f, const char *path);
/* Write a .npy file (format 1.0).  bfloat16 has no NumPy dtype: a diagnostic. */
int tinyc_npy_write(tinyc_ctx *ctx, const char *path, const tinyc_tensor *t);

/* Inputs and outputs of a graph run, by BUFFER slot and by OUTPUT order. */
typedef struct tinyc_io {
	int nin;			/* number of BUFFER slots (max slot + 1) */
	tinyc_tensor **in;		/* per slot (kept, not owned); NULL = missing */
	int nout;			/* number of OUTPUT nodes */
	tinyc_tensor **out;		/* per OUTPUT in graph order (filled by a run, owned) */
} tinyc_io;

/* Bind every unbound symbol from the shapes of the inputs present (a missing input is
 * skipped here, so a caller may generate it once its sizes are known; tinyc_eval reports
 * MissingInput).  Diagnostics: InconsistentBinding (M=4 from X, M=5 from Y, or M given as 4
 * and X has 5), InputMismatch (wrong dtype, rank or constant dim).  BUFFERs with strides=
 * only have their dtype checked.  Returns 0 or -1. */
int tinyc_bind_from_inputs(tinyc_ctx *ctx, const tinyc_graph *g, tinyc_bindings *b,
			   const tinyc_io *io);
/* Evaluate g (verified, every symbol bound: UnboundSymbol otherwise) on io->in, allocating
 * io->out (any previous outputs are freed first; on error there are none).  Numerics and
 * the choices DESIGN.md leaves open (integer division by zero gives 0, float -> int
 * saturates, MAX ignores NaN, ...) are listed at the top of ir/eval.c.  A node above 2^31
 * elements is TooLarge.
 * A BUFFER with strides= reads its tensor as flat storage at those strides; an OUTPUT with
 * strides= writes into flat storage of 1 + sum((shape-1)*stride) elements, zero elsewhere. */
int tinyc_eval(tinyc_ctx *ctx, const tinyc_graph *g, const tinyc_bindings *b, tinyc_io *io);
void tinyc_io_clear_outputs(tinyc_io *io);

/* Bytes of host memory available now: MemAvailable of /proc/meminfo, else the free pages;
 * -1 when neither is known. */
int64_t tinyc_host_memory_available(void);
/* The bytes the BUFFERs and OUTPUTs of g take under bindings b (strided ones: the storage
 * their strides span) into *bytes; -1 when a size is unbound.  Saturates at INT64_MAX. */
int tinyc_io_bytes(const tinyc_graph *g, const tinyc_bindings *b, int64_t *bytes);
/* Check that `need` bytes fit in what the machine has (and in limit, when limit >= 0):
 * OutOfMemory "WHAT needs N bytes, M available" otherwise.  0 or -1. */
int tinyc_memory_check(tinyc_ctx *ctx, const char *what, int64_t need, int64_t limit);

/* Compare two tensors of the same shape: max |a-b| and max |a-b|/(|b|+eps). */
typedef struct tinyc_cmp {
	double max_abs;		/* largest absolute difference */
	double max_rel;		/* largest relative difference */
	int64_t worst;		/* flat index of the largest absolute difference */
	int64_t mismatched;	/* elements outside atol + rtol*|b| */
} tinyc_cmp;
int tinyc_tensor_compare(tinyc_ctx *ctx, const tinyc_tensor *a, const tinyc_tensor *b,
			 double atol, double rtol, tinyc_cmp *res);

#endif
