// types.h: fixed-width integer names used throughout the kernel.
// Freestanding build: no libc headers, so the kernel names its own types.
#ifndef TYPES_H
#define TYPES_H

typedef unsigned char      uint8;
typedef unsigned short     uint16;
typedef unsigned int       uint32;
typedef unsigned long      uint64;   // same type as uint64_t on LP64
typedef signed char        int8;
typedef short              int16;
typedef int                int32;
typedef long               int64;
typedef uint64             pte_t;
typedef uint64            *pagetable_t;   // one 4 KiB page of 512 PTEs

#define NULL ((void *)0)
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
