// example.c: rmem_example, the complete librmem program of docs/rmem.md:
// connect to a memory node, ALLOC a region, WRITE a message and 64 KiB of
// pattern into it (the pattern as 16 accesses in flight), READ both back,
// check them, FREE the region. Builds for xv6 (user/_rmem_example) and
// Linux (tests/rdma/rmem.mk); tests/rdma/run_rmem.py runs it.
//
//   rmem_example SERVER [PORT]
// Prints "rmem_example: OK" or which call failed and why.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "user/lib/rmem/rmem.h"

#define PIECE 4096
#define NPIECES 16

static void die(struct rmem *m, const char *what) {
  printf("rmem_example: %s: %s\n", what, rmem_last_error(m));
  exit(1);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    printf("usage: rmem_example SERVER [PORT]\n");
    return 2;
  }
  struct rmem *m = rmem_connect(argv[1], argc > 2 ? atoi(argv[2]) : 0);
  if (!m) die(0, "connect");

  struct rmem_region r;                       // id, rkey, addr, length
  if (rmem_alloc(m, 1 + NPIECES * PIECE, &r)) die(m, "alloc");
  printf("rmem_example: region %u: %llu bytes\n", r.id, (unsigned long long)r.length);

  // Synchronous: write a message after the pattern's room, read it back.
  char msg[] = "hello, remote memory", back[sizeof msg];
  if (rmem_write(m, &r, NPIECES * PIECE, msg, sizeof msg)) die(m, "write");
  if (rmem_read(m, &r, NPIECES * PIECE, back, sizeof back)) die(m, "read");

  // Asynchronous: NPIECES writes in flight, then NPIECES reads.
  static char out[NPIECES * PIECE], in[NPIECES * PIECE];
  for (int i = 0; i < (int)sizeof out; i++) out[i] = (char)(i * 7 + i / PIECE);
  if (rmem_reg(m, out, sizeof out) || rmem_reg(m, in, sizeof in)) die(m, "reg");
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < NPIECES; i++) {
      int rc = pass == 0 ? rmem_post_write(m, &r, i * PIECE, out + i * PIECE, PIECE, i)
                         : rmem_post_read(m, &r, i * PIECE, in + i * PIECE, PIECE, i);
      if (rc) die(m, "post");
    }
    for (int done = 0; done < NPIECES;) {
      struct rmem_comp c[NPIECES];
      int n = rmem_wait(m, c, NPIECES, 30000);
      if (n < 0) die(m, "wait");
      for (int k = 0; k < n; k++)
        if (c[k].error) die(m, "an access");
      done += n;
    }
  }
  int same = strcmp(back, msg) == 0 && memcmp(in, out, sizeof in) == 0;
  printf("rmem_example: read back \"%s\", %d bytes %s\n", back, (int)sizeof in,
         same ? "intact" : "DIFFER");
  if (rmem_free(m, r.id)) die(m, "free");
  rmem_close(m);
  printf(same ? "rmem_example: OK\n" : "rmem_example: FAILED\n");
  return same ? 0 : 1;
}
