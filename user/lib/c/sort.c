// sort.c: qsort (a heap sort: in place, O(n log n), not stable) and
// bsearch (<stdlib.h>).
#include "user.h"

static void swap_bytes(char *a, char *b, size_t size)
{
  for (size_t i = 0; i < size; i++) {
    char t = a[i];
    a[i] = b[i];
    b[i] = t;
  }
}

// Moves element `root` down the max-heap of the first n elements.
static void sift_down(char *base, size_t root, size_t n, size_t size,
                      int (*cmp)(const void *, const void *))
{
  for (size_t child; (child = 2 * root + 1) < n; root = child) {
    if (child + 1 < n && cmp(base + child * size, base + (child + 1) * size) < 0)
      child++;
    if (cmp(base + root * size, base + child * size) >= 0)
      return;
    swap_bytes(base + root * size, base + child * size, size);
  }
}

void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
  char *b = base;
  for (size_t i = n / 2; i-- > 0; )
    sift_down(b, i, n, size, cmp);
  for (size_t end = n; end-- > 1; ) {
    swap_bytes(b, b + end * size, size);
    sift_down(b, 0, end, size, cmp);
  }
}

// Precondition: base is sorted by cmp.
void *bsearch(const void *key, const void *base, size_t n, size_t size,
              int (*cmp)(const void *, const void *))
{
  const char *b = base;
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = cmp(key, b + mid * size);
    if (c == 0)
      return (void *)(b + mid * size);
    if (c < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  return NULL;
}
