// badptr_ext.c: the bad-pointer and bad-handle contract for the network
// (SYS_socket..SYS_sendzc) and RDMA (SYS_rdma_*) system calls.
//
// uapi.h promises -1 for any bad pointer or handle. These tests hold the
// calls to that whether or not the guest has a network card: without one
// the calls may fail for other reasons, but they must still fail cleanly
// and never bring the kernel down.
#include "ut.h"
#include "user/lib/ibverbs/rdma_sys.h"

#define NBAD 9

static void bad_list(unsigned long *out)
{
  unsigned long brk = PGROUNDUP((unsigned long)sbrk(0));
  unsigned long list[NBAD] = {
    0, brk + 4 * PGSIZE, KERNBASE, KDEV_UART, KSTACK_TOP_PAGE, MAXVA - PGSIZE, MAXVA, 1UL << 63,
    0xfffffffffffff000UL,
  };
  memcpy(out, list, sizeof list);
}

static void test_badptr_net_calls_fail(void)
{
  unsigned long bad[NBAD];
  bad_list(bad);
  struct net_addr to = { 0x0a0000fe, 9, 0 };   // 10.0.0.254, discard port
  char buf[16] = "payload";
  int s = socket(SOCK_UDP);
  if (s >= 0)
    bind(s, 0);
  for (int i = 0; i < NBAD; i++) {
    void *p = (void *)bad[i];
    TR_CHECK(netinfo(p) == -1, "netinfo(%p)", p);
    TR_CHECK(netstat(p, 256) == -1, "netstat(%p, 256)", p);
    TR_CHECK(arpwait(0x0a0000fe, p, 0) < 0, "arpwait(ip, %p, 0)", p);
    if (s < 0)
      continue;
    TR_CHECK(sendto(s, p, 16, &to) == -1, "sendto(buf=%p)", p);
    TR_CHECK(sendto(s, buf, 16, p) == -1, "sendto(to=%p)", p);
    TR_CHECK(sendzc(s, p, 16, &to) == -1, "sendzc(buf=%p)", p);
    TR_CHECK(recvfrom(s, p, 16, NULL, 0) < 0, "recvfrom(buf=%p)", p);
  }
  int handles[] = { -1, 1000, 0x7fffffff };
  for (int i = 0; i < 3; i++) {
    TR_CHECK(sockclose(handles[i]) == -1, "sockclose(%d)", handles[i]);
    TR_CHECK(bind(handles[i], 0) == -1, "bind(%d)", handles[i]);
    TR_CHECK(sendto(handles[i], buf, 4, &to) == -1, "sendto(%d)", handles[i]);
  }
  TR_CHECK(socket(-1) == -1 && socket(0x7fffffff) == -1, "socket(bad type)");
  if (s >= 0)
    TR_CHECK(sockclose(s) == 0 && sockclose(s) == -1, "socket close twice");
}

static void test_badptr_rdma_calls_fail(void)
{
  unsigned long bad[NBAD];
  bad_list(bad);
  static char region[PGSIZE];
  struct rdma_mr_keys keys;
  int pd = rdma_alloc_pd();
  int cq = rdma_create_cq(16, -1, NULL);
  for (int i = 0; i < NBAD; i++) {
    void *p = (void *)bad[i];
    TR_CHECK(rdma_query_device(p) == -1, "rdma_query_device(%p)", p);
    TR_CHECK(rdma_query_port(1, p) == -1, "rdma_query_port(1, %p)", p);
    TR_CHECK(sys_rdma_create_qp(p) == -1, "rdma_create_qp(%p)", p);
    // 1 means "slot empty, nothing copied"; 0 would claim a copy to p.
    int r = rdma_qp_stats(0, p);
    TR_CHECK(r == -1 || r == 1, "rdma_qp_stats(0, %p) returned %d", p, r);
    TR_CHECK(rdma_set_neigh(0x0a0000fe, p) == -1, "rdma_set_neigh(ip, %p)", p);
    TR_CHECK(rdma_get_async(p, 0) < 0, "rdma_get_async(%p, 0)", p);
    if (pd >= 0) {
      TR_CHECK(rdma_reg_mr(pd, p, PGSIZE, 0, &keys) == -1,
               "rdma_reg_mr(addr=%p)", p);
      TR_CHECK(rdma_reg_mr(pd, region, sizeof region, 0, p) == -1,
               "rdma_reg_mr(keys=%p)", p);
    }
    if (cq >= 0)
      TR_CHECK(rdma_poll_cq(cq, 1, p) <= 0, "rdma_poll_cq(wc=%p)", p);
  }
  int handles[] = { -1, 1000, 0x7fffffff };
  for (int i = 0; i < 3; i++) {
    TR_CHECK(rdma_dealloc_pd(handles[i]) == -1, "dealloc_pd(%d)", handles[i]);
    TR_CHECK(rdma_destroy_cq(handles[i]) == -1, "destroy_cq(%d)", handles[i]);
    TR_CHECK(sys_rdma_destroy_qp(handles[i]) == -1, "destroy_qp(%d)", handles[i]);
    TR_CHECK(sys_rdma_dereg_mr(handles[i]) == -1, "dereg_mr(%d)", handles[i]);
  }
  if (cq >= 0)
    TR_CHECK(rdma_destroy_cq(cq) == 0, "destroy_cq of our own cq");
  if (pd >= 0)
    TR_CHECK(rdma_dealloc_pd(pd) == 0, "dealloc_pd of our own pd");
}

const struct tr_case ut_badptr_ext_tests[] = {
  { "badptr_net_calls_fail", test_badptr_net_calls_fail, TR_QUICK, 0 },
  { "badptr_rdma_calls_fail", test_badptr_rdma_calls_fail, TR_QUICK, 0 },
  { NULL },
};
