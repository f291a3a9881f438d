/* A bump allocator: zeroed, 16-byte aligned blocks in 64 KiB chunks (larger requests get a
 * chunk of their own), all freed at once.  The GPU IR module and the IndexBook hold one
 * each: what they build lives exactly as long as they do. */
#ifndef TINYC_IR_ARENA_H
#define TINYC_IR_ARENA_H

#include <stddef.h>

typedef struct tinyc_arena tinyc_arena;

/* An empty arena, NULL when out of memory. */
tinyc_arena *tinyc_arena_new(void);
/* n zeroed bytes (at least 16, 16-aligned), NULL when out of memory. */
void *tinyc_arena_alloc(tinyc_arena *a, size_t n);
/* An array of at least need elements of elem bytes replacing old (its *cap elements
 * copied); *cap becomes the new capacity.  old itself when it is large enough, NULL when
 * out of memory (old untouched). */
void *tinyc_arena_grow(tinyc_arena *a, void *old, int *cap, int need, size_t elem);
/* A copy of s in the arena (NULL for NULL or out of memory). */
char *tinyc_arena_strdup(tinyc_arena *a, const char *s);
/* Free every block and the arena (NULL is fine). */
void tinyc_arena_free(tinyc_arena *a);

#endif
