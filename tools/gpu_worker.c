/* tinyc-gpu-worker: the process that runs isolated GPU work for tinyc (runtime/worker.h).
 * Started by the library, never by hand:
 *
 *   tinyc-gpu-worker --fd N [--fake]
 *
 * N is its end of the socket to the library; --fake runs the fake device (tests). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/worker.h"

int main(int argc, char **argv)
{
	int fd = -1, fake = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--fd") && i + 1 < argc)
			fd = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--fake"))
			fake = 1;
		else
			fd = -2;
	}
	if (fd < 0) {
		fprintf(stderr, "usage: tinyc-gpu-worker --fd N [--fake]  (started by the tinyc "
			"library for isolated GPU runs)\n");
		return 2;
	}
	return tinyc_worker_main(fd, fake);
}
