// libc_impl.h: what the C library's own files share and programs do not
// call: the length modifiers of printf.c's and scanf.c's conversions.
#ifndef LIBC_IMPL_H
#define LIBC_IMPL_H

// Reads a length modifier (hh h l ll j z t L) at f into *size: 'H' hh,
// 'h' h, 'l' l z t, 'L' ll j L, 0 none. Returns f past it.
const char *fmt_length(const char *f, char *size);

#endif
