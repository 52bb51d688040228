// gsi.h: QP1, the GSI QP (gsi.c): MADs in and out for the CM thread (cma.c).
// One caller, the CM's kernel thread; see gsi.c for the rules.
#ifndef GSI_H
#define GSI_H
#include "lib/types.h"
#include "lib/uapi.h"

int    gsi_start(void (*wake)(void));      // 0, or -1: no QP1 (and no CM)
int    gsi_recv(uint8 mad[RDMA_MAD_LEN], uint32 *src_ip, uint32 *src_qp);   // 1 a MAD, 0 none
int    gsi_send(uint32 ip, uint32 qpn, const uint8 mad[RDMA_MAD_LEN], uint64 now);  // 0, or -1 dropped
uint64 gsi_work(uint64 now);               // reap sends, ARP waits; next look (~0: none)
int    gsi_peer_known(uint32 ip);          // 1: ip's MAC is known now; 0: ARP asked
void   gsi_stats(struct rdma_dev_stats *s);
#endif
