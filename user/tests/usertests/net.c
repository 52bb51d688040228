// net.c: netblast, the kernel-side burst sender (SYS_netblast).
//
// The argument contract holds with or without a network card: a bad
// handle, pointer, size or count gives -1. With a card and an address,
// a valid call returns exactly count; the bursts go to the subnet
// broadcast address, so no peer and no ARP answer is needed (test-net
// runs these tests in a guest on a link; test-kernel's guest has no card,
// where a valid call must fail cleanly instead).
#include "ut.h"

#define MAX_COUNT (1 << 20)       // uapi.h: count 1..2^20

static struct net_addr broadcast_to(int *have_net)
{
  struct net_info ni;
  TR_CHECK(netinfo(&ni) == 0, "netinfo failed");
  *have_net = ni.present && ni.ip;
  struct net_addr to = { ni.ip | ~ni.netmask, 9, 0 };   // discard port
  return to;
}

static void test_netblast_rejects_bad_args(void)
{
  int have_net;
  struct net_addr to = broadcast_to(&have_net);
  static char buf[NET_MAX_UDP_PAYLOAD];
  int s = socket(SOCK_UDP), icmp = socket(SOCK_ICMP);
  TR_CHECK(s >= 0 && icmp >= 0, "socket failed");
  int counts[] = { 0, -1, MAX_COUNT + 1, 0x7fffffff };
  for (int i = 0; i < 4; i++)
    TR_CHECK(netblast(s, buf, 64, &to, counts[i]) == -1, "count %d accepted", counts[i]);
  int sizes[] = { -1, NET_MAX_UDP_PAYLOAD + 1, 1 << 30 };
  for (int i = 0; i < 3; i++)
    TR_CHECK(netblast(s, buf, sizes[i], &to, 1) == -1, "size %d accepted", sizes[i]);
  int handles[] = { -1, 1000, icmp };
  for (int i = 0; i < 3; i++)
    TR_CHECK(netblast(handles[i], buf, 64, &to, 1) == -1, "socket %d accepted", handles[i]);
  unsigned long brk = PGROUNDUP((unsigned long)sbrk(0));
  unsigned long bad[] = { 0, brk + 4 * PGSIZE, KERNBASE, MAXVA - 8, 1UL << 63 };
  for (int i = 0; i < 5; i++) {
    void *p = (void *)bad[i];
    TR_CHECK(netblast(s, p, 64, &to, 1) == -1, "netblast(buf=%p)", p);
    TR_CHECK(netblast(s, buf, 64, p, 1) == -1, "netblast(to=%p)", p);
  }
  char *edge = (char *)brk;       // the last mapped page ends here
  TR_CHECK(netblast(s, edge - 8, 64, &to, 1) == -1, "buffer running past the break");
  struct net_addr roce = { to.ip, NET_ROCE_SINK_PORT, 0 };   // too short for BTH + ICRC
  TR_CHECK(netblast(s, buf, 15, &roce, 1) == -1, "15-byte RoCE frame body accepted");
}

static void test_netblast_sends_count(void)
{
  int have_net;
  struct net_addr to = broadcast_to(&have_net);
  char *buf = malloc(NET_MAX_UDP_PAYLOAD + PGSIZE);
  char *odd = buf + PGSIZE - 100;  // a jumbo payload over three page pieces
  ut_fill_pattern((unsigned char *)buf, NET_MAX_UDP_PAYLOAD + PGSIZE, 7);
  int s = socket(SOCK_UDP);
  TR_CHECK(s >= 0, "socket failed");
  struct { char *p; int n, count; } cases[] = {
    { buf, 1040, 300 }, { buf, 0, 10 }, { odd, NET_MAX_UDP_PAYLOAD, 40 }, { buf, 22, 1 },
  };
  for (int i = 0; i < 4; i++) {
    int r = netblast(s, cases[i].p, cases[i].n, &to, cases[i].count);
    int want = have_net ? cases[i].count : -1;
    TR_CHECK(r == want, "netblast(%d bytes, count %d) returned %d, expected %d", cases[i].n,
             cases[i].count, r, want);
  }
  TR_CHECK(sockclose(s) == 0, "sockclose after netblast");
}

const struct tr_case ut_net_tests[] = {
  { "netblast_rejects_bad_args", test_netblast_rejects_bad_args, TR_QUICK, 0 },
  { "netblast_sends_count", test_netblast_sends_count, TR_QUICK, 0 },
  { NULL },
};
