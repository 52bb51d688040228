// malloc.c: the user heap, carved out of memory obtained with sbrk.
//
// Free memory is a singly linked list of chunks kept in address order, so
// free() can merge a chunk with its neighbours and the heap does not
// fragment into slivers. Every chunk starts with a header holding its size
// in bytes (header included); malloc returns the byte after the header.
// Allocation is first fit; the heap grows by at least HEAP_GROW bytes.
// Aligned blocks (posix_memalign) are carved from a larger block: the
// bytes before the aligned start become a free chunk of their own.
#include "user.h"

struct chunk {
  size_t size;          // bytes, including this header
  struct chunk *next;   // next free chunk by address (free chunks only)
};

#define HEAP_GROW (64 * 1024)
#define ALIGN 16

static struct chunk *free_list;

static size_t round_up(size_t n, size_t to)
{
  return (n + to - 1) / to * to;
}

// Put c back into the address-ordered free list, merging with neighbours.
static void insert_free(struct chunk *c)
{
  struct chunk **link = &free_list;
  while (*link && *link < c)
    link = &(*link)->next;
  c->next = *link;
  *link = c;
  if (c->next && (char *)c + c->size == (char *)c->next) {
    c->size += c->next->size;
    c->next = c->next->next;
  }
  // Merge with the predecessor: find it again (the list is short).
  for (struct chunk *p = free_list; p && p != c; p = p->next) {
    if (p->next == c && (char *)p + p->size == (char *)c) {
      p->size += c->size;
      p->next = c->next;
      break;
    }
  }
}

static int grow_heap(size_t need)
{
  size_t n = need > HEAP_GROW ? round_up(need, 4096) : HEAP_GROW;
  if (n > 0x7fffffff)
    return -1;
  char *mem = sbrk((int)n);
  if (mem == (char *)-1)
    return -1;
  // sbrk keeps whatever alignment the break had; skip to ALIGN.
  size_t skew = round_up((size_t)mem, ALIGN) - (size_t)mem;
  struct chunk *c = (struct chunk *)(mem + skew);
  c->size = n - skew;
  insert_free(c);
  return 0;
}

// Take `size` bytes from the first chunk big enough; split off the rest.
static void *take_first_fit(size_t size)
{
  for (struct chunk **link = &free_list; *link; link = &(*link)->next) {
    struct chunk *c = *link;
    if (c->size < size)
      continue;
    if (c->size - size >= sizeof(struct chunk) + ALIGN) {
      struct chunk *rest = (struct chunk *)((char *)c + size);
      rest->size = c->size - size;
      rest->next = c->next;
      c->size = size;
      *link = rest;
    } else {
      *link = c->next;
    }
    return (char *)c + ALIGN;
  }
  return NULL;
}

// malloc(0) returns NULL (C allows it); errno ENOMEM when memory runs out.
void *malloc(size_t n)
{
  if (n == 0)
    return NULL;
  if (n > 0x7fff0000) {
    errno = ENOMEM;
    return NULL;
  }
  size_t size = round_up(n, ALIGN) + ALIGN;   // header padded to ALIGN
  void *p = take_first_fit(size);
  if (p == NULL && grow_heap(size) == 0)
    p = take_first_fit(size);
  if (p == NULL)
    errno = ENOMEM;
  return p;
}

// align: a power of two that is a multiple of sizeof(void *) (POSIX);
// returns EINVAL or ENOMEM without touching *out on failure.
int posix_memalign(void **out, size_t align, size_t n)
{
  if (align == 0 || (align & (align - 1)) || align % sizeof(void *))
    return EINVAL;
  if (align <= ALIGN) {
    void *p = malloc(n);
    if (p == NULL)
      return ENOMEM;
    *out = p;
    return 0;
  }
  if (n > 0x7fff0000 - align)
    return ENOMEM;
  // Room for the block, the worst skew, and a chunk header before the skew.
  char *p = malloc(n + align + sizeof(struct chunk) + ALIGN);
  if (p == NULL)
    return ENOMEM;
  struct chunk *c = (struct chunk *)(p - ALIGN);
  char *start = (char *)round_up((size_t)p + sizeof(struct chunk) + ALIGN, align);
  struct chunk *aligned = (struct chunk *)(start - ALIGN);
  aligned->size = c->size - (size_t)((char *)aligned - (char *)c);
  c->size = (char *)aligned - (char *)c;   // at least one header + ALIGN
  insert_free(c);
  *out = start;
  return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
  void *p = NULL;
  int err = posix_memalign(&p, align, n);
  if (err)
    errno = err;
  return err ? NULL : p;
}

void *memalign(size_t align, size_t n)
{
  return aligned_alloc(align, n);
}

void free(void *p)
{
  if (p)
    insert_free((struct chunk *)((char *)p - ALIGN));
}

void *calloc(size_t count, size_t size)
{
  if (size != 0 && count > 0x7fff0000 / size) {
    errno = ENOMEM;
    return NULL;
  }
  void *p = malloc(count * size);
  if (p)
    memset(p, 0, count * size);
  return p;
}

void *realloc(void *p, size_t n)
{
  if (p == NULL)
    return malloc(n);
  size_t have = ((struct chunk *)((char *)p - ALIGN))->size - ALIGN;
  if (n <= have)
    return p;
  void *q = malloc(n);
  if (q) {
    memcpy(q, p, have);
    free(p);
  }
  return q;
}

// The string functions that allocate (<string.h>): here, so that a program
// using only string.c does not link the heap.
char *strndup(const char *s, size_t n)
{
  size_t len = strnlen(s, n);
  char *d = malloc(len + 1);
  if (d == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  memcpy(d, s, len);
  d[len] = 0;
  return d;
}

char *strdup(const char *s)
{
  return strndup(s, (size_t)-1);
}
