// rmem.h: librmem, the client library of a memory node (rmemd; protocol in
// proto-spec/rmem.md, guide in docs/rmem.md). A thin layer over libibverbs
// and librdmacm that builds for xv6 and for Linux's rdma-core alike.
//
// A connection (struct rmem) is one RC connection to one memory node. Its
// regions are asked for with rmem_alloc and given back with rmem_free;
// their bytes are read and written with one-sided RDMA READ / WRITE, either
// synchronously (rmem_read, rmem_write) or with many in flight
// (rmem_post_read / rmem_post_write, then rmem_poll or rmem_wait for the
// completions). Calls on one connection are for one thread at a time.
//
// Every call that can fail returns -1 (or NULL) with errno set, and leaves
// a sentence saying what was tried and why in rmem_last_error(m):
//   ENOENT      no such region of this client (FREE of a bad id)  [RMEM-OP-3]
//   ERANGE      a size of 0 or above RMEM_MAX_REGION; an access outside the region
//   ENOMEM      the memory node's pool (or MR table) has no room
//   ENOSPC      over this client's limit on the memory node
//   EINVAL      a bad argument, or the memory node called the request malformed
//   EACCES      the memory node's device refused an access (a forged or stale
//               rkey, another client's region): the connection is dead after it
//   ECONNRESET  the memory node is gone (disconnected, or the QP failed)
//   ETIMEDOUT   no reply or completion within the call's time
//   EAGAIN      rmem_post_*: RMEM_MAX_INFLIGHT accesses already in flight
//   EBUSY       rmem_read / rmem_write while posted accesses are in flight
#ifndef RMEM_H
#define RMEM_H

#include <stdint.h>
#include <stddef.h>
#include "kernel/rmem/rmem_wire.h"

#define RMEM_MAX_INFLIGHT 64          // data accesses posted and not yet completed
#define RMEM_TIMEOUT_MS 15000         // a control request's reply, a connection's setup

struct rmem;                          // a connection to a memory node

// A region as ALLOC returned it [RMEM-OP-1]. A caller may build one by
// hand (e.g. to try a forged rkey): the library checks only the range.
struct rmem_region {
  uint32_t id;
  uint32_t rkey;
  uint64_t addr;                      // the memory node's address of byte 0
  uint64_t length;                    // bytes, a multiple of RMEM_PAGE
};

struct rmem_stat {                    // [RMEM-OP-4]
  uint32_t nregions;
  uint64_t used, limit, pool_free;
};

struct rmem_comp {                    // one finished access
  uint64_t tag;                       // the post's tag
  int error;                          // 0 or an errno value (above)
};

// Connects to the memory node at host (dotted IPv4) and port (0: RMEM_PORT).
struct rmem *rmem_connect(const char *host, int port);
// The same with options (NULL: the defaults).
struct rmem_opts {
  int sr;                             // offer xv6's selective repeat [SR-NEG-1]
                                      // (a named extension: Linux builds ignore it)
};
struct rmem *rmem_connect_opts(const char *host, int port, const struct rmem_opts *o);
// Disconnects and frees everything; the memory node frees the regions [RMEM-LIFE-1].
void rmem_close(struct rmem *m);

int rmem_alloc(struct rmem *m, uint64_t size, struct rmem_region *r);
int rmem_free(struct rmem *m, uint32_t id);
int rmem_stat(struct rmem *m, struct rmem_stat *st);

// Reads / writes len bytes at byte off of region r and waits for it.
int rmem_read(struct rmem *m, const struct rmem_region *r, uint64_t off, void *buf, size_t len);
int rmem_write(struct rmem *m, const struct rmem_region *r, uint64_t off, const void *buf,
               size_t len);

// The same, posted: returns at once; the completion carries tag. buf must
// stay untouched until then. A buffer registered with rmem_reg is used as
// it is; any other is registered for the one access.
int rmem_post_read(struct rmem *m, const struct rmem_region *r, uint64_t off, void *buf,
                   size_t len, uint64_t tag);
int rmem_post_write(struct rmem *m, const struct rmem_region *r, uint64_t off, const void *buf,
                    size_t len, uint64_t tag);
// Up to max finished accesses into c: rmem_poll returns at once (0: none),
// rmem_wait sleeps until at least one (timeout_ms < 0: no limit).
int rmem_poll(struct rmem *m, struct rmem_comp *c, int max);
int rmem_wait(struct rmem *m, struct rmem_comp *c, int max, int timeout_ms);
int rmem_inflight(struct rmem *m);

// Registers [buf, buf+len) once for many accesses (at most RMEM_MAX_BUFS).
#define RMEM_MAX_BUFS 8
int rmem_reg(struct rmem *m, void *buf, size_t len);
int rmem_dereg(struct rmem *m, void *buf);

const char *rmem_last_error(struct rmem *m);

// For tests of the memory node: sends n (1..RMEM_MAX_OUTSTANDING) copies
// of len bytes of req at once, as they are but for bytes 8..11, which get
// fresh consecutive req_ids (n must be 1 when len does not reach them), and
// waits for every reply, in any order; rep[i] is the reply to copy i,
// decoded whatever its status. 0, or -1 with errno if replies are missing.
int rmem_call_raw(struct rmem *m, const uint8_t *req, size_t len, int n, struct rmem_msg *rep);

#endif
