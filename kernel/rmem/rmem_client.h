// rmem_client.h: the kernel's own client of a memory node (rmem_client.c),
// the pager's backing store (core/pager.h's struct pager_store).
#ifndef RMEM_CLIENT_H
#define RMEM_CLIENT_H
#include "lib/types.h"
#include "lib/uapi.h"

// Boot: with the boot argument rmem=IP:PORT, starts the client's thread,
// which connects (retrying with backoff while the node is absent; boot does
// not wait) and registers the store with the pager once connected.
void rmem_client_init(void);

// rmemctl's calls (kernel/sys/sysrmem.c). 0, or a negated errno.
int rmem_client_connect(uint32 ip, uint16 port);      // -EBUSY: a node is configured already
void rmem_client_status(struct rmemctl_status *out);
void rmem_client_lat(struct rmemctl_lat *out, int reset);    // then zeroed if reset
// The self-test: t->pages pages of patterns written to slots t->first_slot
// on and read back through the store's io(), compared byte by byte; the
// rest of *t says what happened.
int rmem_client_test(struct rmemctl_test *t);

#endif
