// rmem_client.h: the kernel's own client of a memory node (rmem_client.c),
// the pager's backing store (core/pager.h's struct pager_store).
#ifndef RMEM_CLIENT_H
#define RMEM_CLIENT_H
#include "lib/types.h"
#include "lib/uapi.h"

// Boot: rmem_client_init reads the boot arguments (rmem=IP[:PORT]: the
// node). rmem_client_start then lets the client's thread run (now, or when
// rmemctl names a node): it connects (retrying with backoff while the node
// is absent; boot does not wait) and registers the store with the pager
// once connected. Boot calls it after the kverbs self-test, whose counts
// of the device's live objects must see no other kernel consumer.
void rmem_client_init(void);
void rmem_client_start(void);

// rmemctl's calls (kernel/sys/sysrmem.c). 0, or a negated errno.
int rmem_client_connect(uint32 ip, uint16 port);      // -EBUSY: a node is configured already
void rmem_client_status(struct rmemctl_status *out);
void rmem_client_lat(struct rmemctl_lat *out, int reset);    // then zeroed if reset
// The self-test: t->pages pages of patterns written to slots t->first_slot
// on and read back through the store's io(), compared byte by byte; the
// rest of *t says what happened.
int rmem_client_test(struct rmemctl_test *t);

#endif
