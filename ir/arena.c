/* The bump allocator shared by the GPU IR module and the IndexBook (see ir/arena.h). */
#include "ir/arena.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_CHUNK 65536	/* bytes of an ordinary chunk */

/* One chunk: a block of memory handed out front to back. */
typedef struct arena_chunk {
	struct arena_chunk *next;	/* older chunk */
	size_t used;			/* bytes handed out */
	size_t size;			/* bytes of data[] */
	_Alignas(16) unsigned char data[];	/* the memory */
} arena_chunk;

struct tinyc_arena {
	arena_chunk *head;		/* newest chunk, the one being filled */
};

tinyc_arena *tinyc_arena_new(void)
{
	return calloc(1, sizeof(tinyc_arena));
}

/* Hand out n bytes from the newest chunk, starting a chunk when it has no room. */
void *tinyc_arena_alloc(tinyc_arena *a, size_t n)
{
	if (!a)
		return NULL;
	n = n ? (n + 15) & ~(size_t)15 : 16;
	arena_chunk *c = a->head;
	if (!c || c->size - c->used < n) {
		size_t size = n > ARENA_CHUNK ? n : ARENA_CHUNK;
		if (!(c = calloc(1, sizeof(*c) + size)))
			return NULL;
		c->size = size;
		c->next = a->head;
		a->head = c;
	}
	void *p = c->data + c->used;
	c->used += n;
	return p;	/* zero: chunks come from calloc and are never reused */
}

/* Double the capacity until it holds need elements; copy the old ones. */
void *tinyc_arena_grow(tinyc_arena *a, void *old, int *cap, int need, size_t elem)
{
	if (need <= *cap)
		return old;
	int ncap = *cap ? *cap * 2 : 8;
	while (ncap < need)
		ncap *= 2;
	void *p = tinyc_arena_alloc(a, (size_t)ncap * elem);
	if (!p)
		return NULL;
	if (old)
		memcpy(p, old, (size_t)*cap * elem);
	*cap = ncap;
	return p;
}

char *tinyc_arena_strdup(tinyc_arena *a, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s);
	char *p = tinyc_arena_alloc(a, n + 1);
	if (p)
		memcpy(p, s, n + 1);
	return p;
}

void tinyc_arena_free(tinyc_arena *a)
{
	if (!a)
		return;
	for (arena_chunk *c = a->head, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	free(a);
}
