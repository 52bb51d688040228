// klib.h: the few string and memory routines the kernel needs (klib.c).
// gcc may also emit calls to memset/memcpy/memmove on its own.
#ifndef KLIB_H
#define KLIB_H
#include "lib/types.h"

// The per-byte loops go on one page of their own (kernel.ld): under
// QEMU's TCG a loop across a page boundary pays a lookup per iteration.
#define HOT_LOOP __attribute__((section(".text.hot_loops")))

void *memset(void *dst, int c, uint64 n);
void *memcpy(void *dst, const void *src, uint64 n);
void *memmove(void *dst, const void *src, uint64 n);
int   memcmp(const void *a, const void *b, uint64 n);
uint64 strlen(const char *s);
int   strncmp(const char *a, const char *b, uint64 n);
// Copies at most n-1 bytes and always NUL-terminates (n > 0).
void  str_copy(char *dst, const char *src, uint64 n);

#endif
