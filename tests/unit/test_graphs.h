/* Graph texts shared by the unit tests. */
#ifndef TINYC_TEST_GRAPHS_H
#define TINYC_TEST_GRAPHS_H

/* DESIGN.md §2's example, as written there (aligned '=', comments):
 * Y = relu(X @ W + bias), fp16 in, fp32 accumulation, fp16 out. */
#define TEST_MATMUL_BIAS_RELU \
	"# tinyc-uop v0\n" \
	"# Y = relu(X @ W + bias): fp16 in, fp32 accumulate, fp16 out\n" \
	"%0  = BUFFER(slot=0, name=\"X\") : half[M,K]\n" \
	"%1  = BUFFER(slot=1, name=\"W\") : half[K,N]\n" \
	"%2  = BUFFER(slot=2, name=\"bias\") : half[N]\n" \
	"%3  = RESHAPE(%0, shape=[M,1,K]) : half[M,1,K]\n" \
	"%4  = RESHAPE(%1, shape=[1,K,N]) : half[1,K,N]\n" \
	"%5  = PERMUTE(%4, perm=[0,2,1]) : half[1,N,K]\n" \
	"%6  = MUL(%3, %5) : half[M,N,K]\n" \
	"%7  = CAST(%6) : float[M,N,K]\n" \
	"%8  = REDUCE(%7, op=ADD, axes=[2]) : float[M,N,1]\n" \
	"%9  = RESHAPE(%8, shape=[M,N]) : float[M,N]\n" \
	"%10 = CAST(%2) : float[N]\n" \
	"%11 = ADD(%9, %10) : float[M,N]\n" \
	"%12 = RELU(%11) : float[M,N]\n" \
	"%13 = CAST(%12) : half[M,N]\n" \
	"%14 = OUTPUT(%13, name=\"Y\") : half[M,N]\n"

#endif
