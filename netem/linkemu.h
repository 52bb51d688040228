/*
 * linkemu.h: shared state of linkemu, the real-time lossy relay between QEMU
 * guests (netem/linkemu.c: options and the relay loop; netem/linkemu_ctl.c:
 * pcap capture, JSON statistics and the control socket).
 *
 * Each guest's NIC is a QEMU `-netdev dgram` whose remote is one of our UDP
 * ports on 127.0.0.1: one datagram = one Ethernet frame. linkemu is a learning
 * switch over those ports; each ingress port has its own impairment engine
 * (for two guests: port 0 is a->b, port 1 is b->a).
 */
#ifndef LINKEMU_H
#define LINKEMU_H

#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>

#include "impair.h"

#define LE_MAX_PORTS 16
#define LE_MAX_FRAME 65536
#define LE_MAC_TABLE 256

struct le_port {
  int fd;                        /* UDP socket bound to 127.0.0.1:listen */
  uint16_t listen;
  struct sockaddr_in guest;      /* where the guest listens (given or learned) */
  int guest_known;
  struct impair im;              /* impairments of frames entering here */
  char spec[1024];               /* the spec in force, as given */
  uint64_t index;                /* next ingress frame index */
  uint64_t rx, tx, tx_errors, flooded;
  FILE *pcap;
};

struct le_mac { uint8_t mac[6]; int port; int used; };

struct le_pending {              /* a frame waiting for its departure time */
  uint64_t depart, seq;
  int ingress;
  uint32_t len;
  uint8_t *data;
};

struct linkemu {
  int nports;
  struct le_port port[LE_MAX_PORTS];
  struct le_mac mac[LE_MAC_TABLE];
  struct le_pending *heap;
  uint32_t nheap, capheap;
  uint64_t seq, start_ns;
  uint64_t pending_max;          /* cap on queued frames (memory bound) */
  uint64_t overflow;             /* frames dropped because the heap was full */
  const char *stats_path;
  const char *pcap_dir;
  int ctl_fd;                    /* control UDP socket, -1 if none */
  int verbose;
};

uint64_t le_now(void);

/* linkemu_ctl.c */
int le_pcap_open(struct linkemu *le, int port);
void le_pcap_write(struct le_port *p, const uint8_t *frame, uint32_t len);
int le_stats_write(const struct linkemu *le);
/* Format the stats JSON into buf; returns its length (truncated to cap-1). */
size_t le_stats_json(const struct linkemu *le, char *buf, size_t cap);
int le_ctl_open(struct linkemu *le, uint16_t port);
void le_ctl_handle(struct linkemu *le);
/* Set the impairments of frames entering `port` (-1 = every port) now. */
int le_set_spec(struct linkemu *le, int port, const char *spec, char *err, size_t errlen);

#endif
