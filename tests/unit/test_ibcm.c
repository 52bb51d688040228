/*
 * test_ibcm.c: the InfiniBand CM (kernel/cm/ibcm_mad.c, ibcm.c) of proto-spec
 * ibcm.md: the MAD codec and its field table, rdma_cm's IP mapping, and two
 * agents wired through a scripted network on virtual time that may drop,
 * repeat or forge MADs. [IBCM-MAD-*] [IBCM-CMA-*] [IBCM-STATE-*] [IBCM-TMO-*]
 */
#include "harness.h"
#include "ibcm.h"

#define MS 1000000ull
#define GUID_A 0x0002c9fffe000001ull
#define GUID_B 0x0002c9fffe000002ull
#define PORT 7174

static struct ibcm_agent ag_a, ag_b;
static struct ibcm_peer peer_a, peer_b, peer_c;   /* how each agent's MADs arrive */
static uint8_t mad[IBCM_MAD_LEN];

static void setup_peers(void)
{
  memset(&peer_a, 0, sizeof(peer_a));
  memset(&peer_b, 0, sizeof(peer_b));
  memset(&peer_c, 0, sizeof(peer_c));
  ibcm_gid_from_ipv4(peer_a.gid, IP_A);
  ibcm_gid_from_ipv4(peer_b.gid, IP_B);
  ibcm_gid_from_ipv4(peer_c.gid, 0x0a000003u);
  peer_a.qpn = peer_b.qpn = peer_c.qpn = IBCM_GSI_QPN;
}

static void req_param(struct ibcm_req_param *p, uint32_t caps)
{
  memset(p, 0, sizeof(*p));
  p->service_id = ibcm_service_id(IBCM_PS_TCP, PORT);
  p->qpn = QPN_A;
  p->starting_psn = 0x123456;
  p->qp_type = IBCM_QPT_RC;
  p->responder_resources = 4;
  p->initiator_depth = 2;
  p->path_mtu = RCT_MTU_1024;
  p->retry_count = 7;
  p->rnr_retry_count = 6;
  p->local_cm_response_timeout = 18;     /* 1.07 s */
  p->remote_cm_response_timeout = 18;
  p->max_cm_retries = 3;
  p->local_ack_timeout = 14;
  ibcm_gid_from_ipv4(p->sgid, IP_A);
  ibcm_gid_from_ipv4(p->dgid, IP_B);
  p->xv6_caps = caps;
  ibcm_cma_hdr_encode(p->private_data, IP_A, IP_B, 40000);
  memcpy(p->private_data + IBCM_CMA_HDR_LEN, "hello", 5);
  p->private_len = IBCM_CMA_HDR_LEN + 5;
}

static void rep_param(struct ibcm_rep_param *p, uint32_t caps)
{
  memset(p, 0, sizeof(*p));
  p->qpn = QPN_B;
  p->starting_psn = 0x654321;
  p->responder_resources = 2;
  p->initiator_depth = 3;
  p->rnr_retry_count = 5;
  p->target_ack_delay = 10;
  p->xv6_caps = caps;
  memcpy(p->private_data, "world", 5);
  p->private_len = 5;
}

/* The next MAD `from` sends: delivered to `to` (as coming from `src`) unless
 * drop. Returns its attribute ID, 0 if none was queued. */
static uint16_t hop(struct ibcm_agent *from, struct ibcm_agent *to, const struct ibcm_peer *src,
                    uint64_t now, bool drop)
{
  struct ibcm_peer dst;
  struct ibcm_msg m;
  int n = ibcm_poll_mad(from, mad, &dst);
  if (!n)
    return 0;
  ck_assert_int_eq(n, IBCM_MAD_LEN);
  ck_assert_int_eq(ibcm_parse(&m, mad, IBCM_MAD_LEN), 0);
  if (!drop)
    ibcm_recv(to, now, src, mad, IBCM_MAD_LEN);
  return m.attr_id;
}
static unsigned dreqs_to_b;                       /* DREQs A got through to B */
static uint16_t a_to_b(uint64_t now, bool drop)
{
  uint16_t attr = hop(&ag_a, &ag_b, &peer_a, now, drop);
  dreqs_to_b += attr == IBCM_ATTR_DREQ && !drop;
  return attr;
}
static uint16_t b_to_a(uint64_t now, bool drop) { return hop(&ag_b, &ag_a, &peer_b, now, drop); }

static struct ibcm_event ev;
static enum ibcm_event_type next_event(struct ibcm_agent *ag)
{
  ck_assert_msg(ibcm_poll_event(ag, &ev), "an event was expected");
  return ev.type;
}
static void no_event(struct ibcm_agent *ag)
{
  struct ibcm_event e;
  ck_assert_msg(!ibcm_poll_event(ag, &e), "unexpected event %d", e.type);
}

static int conn_a, conn_b, listener_b;
static int ctx_a = 1, ctx_b = 2;

/* Two fresh agents, B listening on PORT. */
static void agents(void)
{
  setup_peers();
  ibcm_agent_init(&ag_a, GUID_A, 1);
  ibcm_agent_init(&ag_b, GUID_B, 2);
  listener_b = ibcm_listen(&ag_b, ibcm_service_id(IBCM_PS_TCP, PORT), &ctx_b);
  ck_assert_int_ge(listener_b, 0);
}

/* A connects to B's listener; the REQ is queued at A. */
static void start(uint64_t now, uint32_t caps)
{
  struct ibcm_req_param p;
  agents();
  req_param(&p, caps);
  conn_a = ibcm_connect(&ag_a, now, &peer_b, &p, &ctx_a);
  ck_assert_int_ge(conn_a, 0);
}

/* B got the REQ: check the event and accept. */
static void accept_b(uint64_t now, uint32_t caps)
{
  struct ibcm_rep_param p;
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_REQ);
  ck_assert_ptr_eq(ev.ctx, &ctx_b);
  conn_b = ev.conn;
  rep_param(&p, caps);
  ck_assert_int_eq(ibcm_accept(&ag_b, now, conn_b, &p), 0);
}

/* A full exchange up to ESTABLISHED on both sides, nothing lost. */
static void establish(uint64_t now, uint32_t caps_a, uint32_t caps_b)
{
  start(now, caps_a);
  ck_assert_int_eq(a_to_b(now, false), IBCM_ATTR_REQ);
  accept_b(now, caps_b);
  ck_assert_int_eq(b_to_a(now, false), IBCM_ATTR_REP);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_REP);
  ck_assert_int_eq(ibcm_send_rtu(&ag_a, now, conn_a, 0, 0), 0);
  ck_assert_int_eq(a_to_b(now, false), IBCM_ATTR_RTU);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_ESTABLISHED);
  ck_assert_int_eq(ibcm_conn_state(&ag_a, conn_a), IBCM_ESTABLISHED);
  ck_assert_int_eq(ibcm_conn_state(&ag_b, conn_b), IBCM_ESTABLISHED);
}

/* ------------------------------------------------------------------ */
/* The codec                                                            */
/* ------------------------------------------------------------------ */

/* Every attribute with distinct values in every field: parse(encode(m)) == m
 * and encode(parse(bytes)) == bytes [IBCM-MAD-2] [IBCM-MAD-6]. */
START_TEST(test_ibcm_encode_parse_round_trip)
{
  static const uint16_t attrs[] = {
    IBCM_ATTR_REQ, IBCM_ATTR_MRA, IBCM_ATTR_REJ, IBCM_ATTR_REP, IBCM_ATTR_RTU,
    IBCM_ATTR_DREQ, IBCM_ATTR_DREP, IBCM_ATTR_SIDR_REQ, IBCM_ATTR_SIDR_REP,
  };
  for (size_t k = 0; k < sizeof(attrs) / sizeof(attrs[0]); k++) {
    struct ibcm_msg m, back;
    uint8_t b1[IBCM_MAD_LEN], b2[IBCM_MAD_LEN];
    uint8_t room = ibcm_private_room(attrs[k]);
    memset(&m, 0, sizeof(m));
    m.attr_id = attrs[k];
    m.tid = 0x0102030405060708ull + k;
    m.status = 0x1234;
    m.class_specific = 0x5678;
    m.attr_mod = 0x9abcdef0u;
    m.local_comm_id = 0x11223344u;
    m.remote_comm_id = 0x55667788u;
    m.service_id = ibcm_service_id(IBCM_PS_TCP, 0x1c06);
    m.local_ca_guid = 0x0a0b0c0d0e0f1011ull;
    m.local_qkey = 0x80010000u;
    m.local_qpn = 0xabcdef;
    m.local_eecn = 0x111111;
    m.remote_eecn = 0x222222;
    m.responder_resources = 9;
    m.initiator_depth = 8;
    m.remote_cm_response_timeout = 21;
    m.transport_service_type = 1;
    m.end_to_end_flow_control = 1;
    m.starting_psn = 0xfedcba;
    m.local_cm_response_timeout = 17;
    m.retry_count = 5;
    m.partition_key = 0xffff;
    m.path_mtu = 5;
    m.rdc_exists = 1;
    m.rnr_retry_count = 3;
    m.max_cm_retries = 15;
    m.srq = 1;
    m.extended_transport_type = 6;
    m.primary.local_lid = 0xffff;
    m.primary.remote_lid = 0xfffe;
    ibcm_gid_from_ipv4(m.primary.local_gid, IP_A);
    ibcm_gid_from_ipv4(m.primary.remote_gid, IP_B);
    m.primary.flow_label = 0xabcde;
    m.primary.packet_rate = 0x2a;
    m.primary.traffic_class = 0x44;
    m.primary.hop_limit = 64;
    m.primary.sl = 9;
    m.primary.subnet_local = 1;
    m.primary.local_ack_timeout = 19;
    m.alternate = m.primary;
    m.alternate.flow_label = 0x12345;
    m.target_ack_delay = 30;
    m.failover_accepted = 2;
    m.message_mraed = 1;
    m.service_timeout = 31;
    m.message_rejected = 2;
    m.ari_len = 72;
    m.reason = IBCM_REJ_STALE_CONN;
    for (int i = 0; i < IBCM_ARI_MAX; i++)
      m.ari[i] = (uint8_t)(0xa0 + i);
    m.remote_qpn_eecn = 0x777777;
    m.request_id = 0xcafef00du;
    m.sidr_status = 2;
    m.sidr_qpn = 0x3456;
    m.sidr_qkey = 0x11110000u;
    m.xv6_caps = RDMA_XV6_CAP_SR;
    for (int i = 0; i < room; i++)
      m.private_data[i] = (uint8_t)(i * 7 + 1);
    m.private_len = room;
    ck_assert_int_eq(ibcm_encode(&m, b1), IBCM_MAD_LEN);
    ck_assert_int_eq(ibcm_parse(&back, b1, sizeof(b1)), 0);
    ck_assert_int_eq(back.attr_id, m.attr_id);
    ck_assert_uint_eq(back.tid, m.tid);
    ck_assert_uint_eq(back.attr_mod, m.attr_mod);
    ck_assert_int_eq(back.private_len, room);
    ck_assert_mem_eq(back.private_data, m.private_data, room);
    ck_assert_int_eq(ibcm_encode(&back, b2), IBCM_MAD_LEN);
    ck_assert_mem_eq(b1, b2, IBCM_MAD_LEN);
    if (attrs[k] == IBCM_ATTR_REQ) {
      ck_assert_uint_eq(back.service_id, m.service_id);
      ck_assert_uint_eq(back.local_qpn, 0xabcdef);
      ck_assert_uint_eq(back.starting_psn, 0xfedcba);
      ck_assert_uint_eq(back.primary.flow_label, 0xabcde);
      ck_assert_uint_eq(back.primary.packet_rate, 0x2a);
      ck_assert_uint_eq(back.alternate.flow_label, 0x12345);
      ck_assert_uint_eq(back.extended_transport_type, 6);
      ck_assert_uint_eq(back.xv6_caps, RDMA_XV6_CAP_SR);
      ck_assert_mem_eq(back.primary.remote_gid, m.primary.remote_gid, 16);
    } else if (attrs[k] == IBCM_ATTR_REJ) {
      ck_assert_uint_eq(back.reason, IBCM_REJ_STALE_CONN);
      ck_assert_uint_eq(back.ari_len, 72);
      ck_assert_mem_eq(back.ari, m.ari, IBCM_ARI_MAX);
      ck_assert_uint_eq(back.message_rejected, 2);
    } else if (attrs[k] == IBCM_ATTR_REP) {
      ck_assert_uint_eq(back.target_ack_delay, 30);
      ck_assert_uint_eq(back.rnr_retry_count, 3);
      ck_assert_uint_eq(back.xv6_caps, RDMA_XV6_CAP_SR);
    }
  }
}
END_TEST

/* The table against the standard's sizes: every attribute's fields fit its
 * 232 bytes (the header's its 24), no two overlap, and the private data is
 * the last field, its room as IBTA gives it [IBCM-MAD-6]. */
START_TEST(test_ibcm_field_table_fits)
{
  static const struct { uint16_t attr; uint8_t room; } rooms[] = {
    { IBCM_ATTR_REQ, 92 }, { IBCM_ATTR_MRA, 222 }, { IBCM_ATTR_REJ, 148 }, { IBCM_ATTR_REP, 196 },
    { IBCM_ATTR_RTU, 224 }, { IBCM_ATTR_DREQ, 220 }, { IBCM_ATTR_DREP, 224 },
    { IBCM_ATTR_SIDR_REQ, 216 }, { IBCM_ATTR_SIDR_REP, 136 },
  };
  for (size_t k = 0; k < sizeof(rooms) / sizeof(rooms[0]); k++)
    ck_assert_int_eq(ibcm_private_room(rooms[k].attr), rooms[k].room);
  ck_assert_int_eq(ibcm_private_room(0x0019), 0);         /* LAP: not ours */
  for (uint16_t attr = 0; attr <= IBCM_ATTR_SIDR_REP; attr++) {
    uint8_t used[IBCM_DATA_LEN * 8];
    unsigned limit = attr ? IBCM_DATA_LEN * 8 : IBCM_MAD_HDR_LEN * 8, last_end = 0, n = 0;
    memset(used, 0, sizeof(used));
    for (int i = 0; i < ibcm_field_count(); i++) {
      uint16_t fa, byte, width;
      uint8_t bit;
      const char *name;
      ibcm_field_info(i, &fa, &name, &byte, &bit, &width);
      if (fa != attr)
        continue;
      n++;
      ck_assert_msg(bit < 8 && width > 0, "%s: bit %u width %u", name, bit, width);
      ck_assert_msg(byte * 8u + bit + width <= limit, "%s does not fit", name);
      for (unsigned b = byte * 8u + bit; b < byte * 8u + bit + width; b++) {
        ck_assert_msg(!used[b], "attr %#x: %s overlaps another field at bit %u", attr, name, b);
        used[b] = 1;
      }
      if (byte * 8u + bit + width > last_end)
        last_end = byte * 8u + bit + width;
    }
    if (attr == 0)
      ck_assert_uint_eq(n, 9);                             /* the common header */
    else if (ibcm_private_room(attr))
      ck_assert_uint_eq(last_end, limit);                  /* private data ends the MAD */
  }
}
END_TEST

/* Bytes the standard fixes, hand-checked against tshark's CM dissector:
 * header, REQ bit fields, REP and REJ fields [IBCM-MAD-2] [IBCM-MAD-6]. */
START_TEST(test_ibcm_known_bytes)
{
  struct ibcm_msg m;
  uint8_t b[IBCM_MAD_LEN];
  const uint8_t *d = b + IBCM_MAD_HDR_LEN;
  memset(&m, 0, sizeof(m));
  m.attr_id = IBCM_ATTR_REQ;
  m.tid = 0x1122334455667788ull;
  m.local_comm_id = 0xa1b2c3d4u;
  m.service_id = ibcm_service_id(IBCM_PS_TCP, 7174);
  m.local_qpn = 0x123456;
  m.responder_resources = 4;
  m.remote_cm_response_timeout = 20;
  m.end_to_end_flow_control = 1;
  m.starting_psn = 0xabcdef;
  m.local_cm_response_timeout = 19;
  m.retry_count = 7;
  m.partition_key = 0xffff;
  m.path_mtu = 3;
  m.rnr_retry_count = 6;
  m.max_cm_retries = 15;
  m.srq = 1;
  m.primary.flow_label = 0x12345;
  m.primary.packet_rate = 0x2a;
  m.primary.sl = 5;
  m.primary.subnet_local = 1;
  m.primary.local_ack_timeout = 18;
  ck_assert_int_eq(ibcm_encode(&m, b), IBCM_MAD_LEN);
  static const uint8_t hdr[24] = { 1, 7, 2, 3, 0, 0, 0, 0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66,
                                   0x77, 0x88, 0x00, 0x10, 0, 0, 0, 0, 0, 0 };
  ck_assert_mem_eq(b, hdr, 24);
  static const uint8_t sid[8] = { 0, 0, 0, 0, 1, 0x06, 0x1c, 0x06 };        /* [IBCM-CMA-1] */
  ck_assert_mem_eq(d + 8, sid, 8);
  ck_assert_uint_eq(d[32], 0x12);
  ck_assert_uint_eq(d[35], 4);
  ck_assert_uint_eq(d[43], (20 << 3) | 1);
  ck_assert_uint_eq(d[47], (19 << 3) | 7);
  ck_assert_uint_eq(d[50], (3 << 4) | 6);
  ck_assert_uint_eq(d[51], 0xf8);
  static const uint8_t flow[4] = { 0x12, 0x34, 0x50, 0x2a };
  ck_assert_mem_eq(d + 88, flow, 4);
  ck_assert_uint_eq(d[94], 0x58);
  ck_assert_uint_eq(d[95], 18 << 3);

  memset(&m, 0, sizeof(m));
  m.attr_id = IBCM_ATTR_REP;
  m.local_qpn = 0x11;
  m.target_ack_delay = 21;
  m.failover_accepted = 3;
  m.end_to_end_flow_control = 1;
  m.rnr_retry_count = 5;
  m.srq = 1;
  m.xv6_caps = 1;
  ck_assert_int_eq(ibcm_encode(&m, b), IBCM_MAD_LEN);
  ck_assert_uint_eq(b[17], 0x13);
  ck_assert_uint_eq(d[14], 0x11);
  ck_assert_uint_eq(d[15], 1);                                /* reserved byte [IBCM-XV6-1] */
  ck_assert_uint_eq(d[26], (21 << 3) | (3 << 1) | 1);
  ck_assert_uint_eq(d[27], (5 << 5) | (1 << 4));

  memset(&m, 0, sizeof(m));
  m.attr_id = IBCM_ATTR_REJ;
  m.message_rejected = 2;
  m.ari_len = 5;
  m.reason = IBCM_REJ_INVALID_SERVICE_ID;
  ck_assert_int_eq(ibcm_encode(&m, b), IBCM_MAD_LEN);
  ck_assert_uint_eq(d[8], 0x80);
  ck_assert_uint_eq(d[9], 5 << 1);
  ck_assert_uint_eq(d[10], 0);
  ck_assert_uint_eq(d[11], 8);

  m.path_mtu = 0;
  m.attr_id = IBCM_ATTR_REQ;
  m.retry_count = 8;                                          /* 3 bits */
  ck_assert_int_eq(ibcm_encode(&m, b), IBCM_E_INVAL);
  m.retry_count = 0;
  m.private_len = IBCM_REQ_PRIVATE + 1;
  ck_assert_int_eq(ibcm_encode(&m, b), IBCM_E_INVAL);
  m.attr_id = 0x0019;
  m.private_len = 0;
  ck_assert_int_eq(ibcm_encode(&m, b), IBCM_E_ATTR);
}
END_TEST

/* Each kind of bad MAD has its own reason [IBCM-MAD-1] [IBCM-MAD-2] [IBCM-MAD-3]
 * [IBCM-MAD-4] [IBCM-MAD-7]. */
START_TEST(test_ibcm_parse_rejects)
{
  struct ibcm_msg m;
  uint8_t good[IBCM_MAD_LEN], b[IBCM_MAD_LEN];
  memset(&m, 0, sizeof(m));
  m.attr_id = IBCM_ATTR_RTU;
  ck_assert_int_eq(ibcm_encode(&m, good), IBCM_MAD_LEN);
  ck_assert_int_eq(ibcm_parse(&m, good, IBCM_MAD_LEN), 0);
  ck_assert_int_eq(ibcm_parse(&m, good, IBCM_MAD_LEN - 1), IBCM_E_SHORT);
  ck_assert_int_eq(ibcm_parse(&m, good, 0), IBCM_E_SHORT);
  memcpy(b, good, sizeof(b)); b[0] = 2;
  ck_assert_int_eq(ibcm_parse(&m, b, sizeof(b)), IBCM_E_BASE_VERSION);
  memcpy(b, good, sizeof(b)); b[1] = 0x01;
  ck_assert_int_eq(ibcm_parse(&m, b, sizeof(b)), IBCM_E_CLASS);
  memcpy(b, good, sizeof(b)); b[2] = 1;
  ck_assert_int_eq(ibcm_parse(&m, b, sizeof(b)), IBCM_E_CLASS_VERSION);
  memcpy(b, good, sizeof(b)); b[3] = 0x01;                    /* Get */
  ck_assert_int_eq(ibcm_parse(&m, b, sizeof(b)), IBCM_E_METHOD);
  memcpy(b, good, sizeof(b)); b[3] = 0x83;                    /* Send with the response bit */
  ck_assert_int_eq(ibcm_parse(&m, b, sizeof(b)), IBCM_E_METHOD);
  memcpy(b, good, sizeof(b)); b[17] = 0x19;                   /* LAP */
  ck_assert_int_eq(ibcm_parse(&m, b, sizeof(b)), IBCM_E_ATTR);
  memcpy(b, good, sizeof(b)); b[16] = 0x01;                   /* 0x0114 */
  ck_assert_int_eq(ibcm_parse(&m, b, sizeof(b)), IBCM_E_ATTR);
}
END_TEST

/* rdma_cm's IP mapping [IBCM-CMA-1] [IBCM-CMA-2] [IBCM-CMA-3] [IBCM-CMA-4]. */
START_TEST(test_ibcm_cma_mapping)
{
  uint8_t h[IBCM_CMA_HDR_LEN], gid[16];
  uint32_t s, d, ip;
  uint16_t port;
  static const uint8_t want[IBCM_CMA_HDR_LEN] = {
    0x00, 0x40, 0x9c, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2 };
  static const uint8_t mapped[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2 };
  ck_assert_uint_eq(ibcm_service_id(IBCM_PS_TCP, 18515), 0x0000000001064853ull);
  ck_assert_uint_eq(ibcm_service_id(IBCM_PS_UDP, 1), 0x0000000001110001ull);
  ck_assert_int_eq(IBCM_CMA_REQ_PRIVATE, 56);
  ck_assert_int_eq(ibcm_cma_hdr_encode(h, IP_A, IP_B, 40000), 0);
  ck_assert_mem_eq(h, want, sizeof(want));
  ck_assert_int_eq(ibcm_cma_hdr_parse(h, sizeof(h), &s, &d, &port), 0);
  ck_assert_uint_eq(s, IP_A);
  ck_assert_uint_eq(d, IP_B);
  ck_assert_uint_eq(port, 40000);
  ck_assert_int_eq(ibcm_cma_hdr_parse(h, sizeof(h) - 1, &s, &d, &port), -1);
  h[1] = 0x60;                                                /* IPv6: not ours */
  ck_assert_int_eq(ibcm_cma_hdr_parse(h, sizeof(h), &s, &d, &port), -1);
  ibcm_gid_from_ipv4(gid, IP_B);
  ck_assert_mem_eq(gid, mapped, 16);
  ck_assert_int_eq(ibcm_gid_to_ipv4(gid, &ip), 0);
  ck_assert_uint_eq(ip, IP_B);
  gid[0] = 0xfe;
  ck_assert_int_eq(ibcm_gid_to_ipv4(gid, &ip), -1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The agents                                                           */
/* ------------------------------------------------------------------ */

/* connect / accept / RTU / DREQ / DREP / time wait, with the fields the
 * spec fixes and the QP attributes both sides derive [IBCM-STATE-1]
 * [IBCM-STATE-2] [IBCM-STATE-8] [IBCM-REQ-3] [IBCM-MAD-5] [IBCM-XV6-2]. */
START_TEST(test_ibcm_connect_accept_disconnect)
{
  struct ibcm_msg m;
  struct rct_qp_attr qa, qb;
  uint32_t rtr, rts;
  uint64_t req_tid, t;
  start(0, RDMA_XV6_CAP_SR);
  ck_assert_int_eq(ibcm_poll_mad(&ag_a, mad, &(struct ibcm_peer){ 0 }), IBCM_MAD_LEN);
  ck_assert_int_eq(ibcm_parse(&m, mad, IBCM_MAD_LEN), 0);
  ck_assert_int_eq(m.attr_id, IBCM_ATTR_REQ);
  ck_assert_uint_eq(m.local_ca_guid, GUID_A);
  ck_assert_uint_eq(m.remote_comm_id, 0);
  ck_assert_uint_eq(m.partition_key, IBCM_DEFAULT_PKEY);
  ck_assert_uint_eq(m.xv6_caps, RDMA_XV6_CAP_SR);
  req_tid = m.tid;
  ibcm_recv(&ag_b, 0, &peer_a, mad, IBCM_MAD_LEN);
  accept_b(0, RDMA_XV6_CAP_SR);
  ck_assert_uint_eq(ev.msg.service_id, ibcm_service_id(IBCM_PS_TCP, PORT));
  ck_assert_mem_eq(ev.msg.private_data + IBCM_CMA_HDR_LEN, "hello", 5);
  ck_assert_mem_eq(ev.peer.gid, peer_a.gid, 16);
  ck_assert_int_eq(ibcm_qp_attr(&ag_b, conn_b, &qb, &rtr, &rts), 0);
  ck_assert_int_eq(ibcm_poll_mad(&ag_b, mad, &(struct ibcm_peer){ 0 }), IBCM_MAD_LEN);
  ck_assert_int_eq(ibcm_parse(&m, mad, IBCM_MAD_LEN), 0);
  ck_assert_int_eq(m.attr_id, IBCM_ATTR_REP);
  ck_assert_uint_eq(m.tid, req_tid);                          /* [IBCM-MAD-5] */
  ck_assert_uint_eq(m.remote_comm_id, ag_a.conn[conn_a].local_id);
  ibcm_recv(&ag_a, 0, &peer_b, mad, IBCM_MAD_LEN);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_REP);
  ck_assert_ptr_eq(ev.ctx, &ctx_a);
  ck_assert_mem_eq(ev.msg.private_data, "world", 5);
  ck_assert_int_eq(ibcm_qp_attr(&ag_a, conn_a, &qa, &rtr, &rts), 0);
  ck_assert_uint_eq(qa.dest_qp_num, QPN_B);
  ck_assert_uint_eq(qb.dest_qp_num, QPN_A);
  ck_assert_uint_eq(qa.rq_psn, 0x123456);                     /* the REQ's: B sends with it */
  ck_assert_uint_eq(qb.sq_psn, 0x123456);
  ck_assert_uint_eq(qa.sq_psn, 0x654321);                     /* the REP's: A sends with it */
  ck_assert_uint_eq(qb.rq_psn, 0x654321);
  ck_assert_int_eq(qa.path_mtu, RCT_MTU_1024);
  ck_assert_int_eq(qb.path_mtu, RCT_MTU_1024);
  ck_assert_uint_eq(qa.max_rd_atomic, 2);                     /* min(A's depth 2, B's resources 2) */
  ck_assert_uint_eq(qa.max_dest_rd_atomic, 4);
  ck_assert_uint_eq(qb.max_rd_atomic, 3);                     /* min(B's depth 3, A's resources 4) */
  ck_assert_uint_eq(qb.max_dest_rd_atomic, 2);
  ck_assert_uint_eq(qa.rnr_retry, 5);                         /* the REP's, for A */
  ck_assert_uint_eq(qb.rnr_retry, 6);                         /* the REQ's, for B */
  ck_assert_uint_eq(qa.retry_cnt, 7);
  ck_assert_uint_eq(qa.timeout, 14);
  ck_assert_uint_eq(qa.ah.dipv4, IP_B);
  ck_assert_uint_eq(qb.ah.dipv4, IP_A);
  ck_assert(qa.sr_enable && qb.sr_enable);
  ck_assert(rtr & RCT_QP_DEST_QPN);
  ck_assert(rts & RCT_QP_SQ_PSN);
  ck_assert_int_eq(ibcm_send_rtu(&ag_a, 0, conn_a, 0, 0), 0);
  ck_assert_int_eq(ibcm_poll_mad(&ag_a, mad, &(struct ibcm_peer){ 0 }), IBCM_MAD_LEN);
  ck_assert_int_eq(ibcm_parse(&m, mad, IBCM_MAD_LEN), 0);
  ck_assert_int_eq(m.attr_id, IBCM_ATTR_RTU);
  ck_assert_uint_eq(m.tid, req_tid);
  ibcm_recv(&ag_b, 0, &peer_a, mad, IBCM_MAD_LEN);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_ESTABLISHED);
  ck_assert_uint_eq(ibcm_next_timeout(&ag_b), RCT_NEVER);
  ck_assert_uint_eq(ibcm_next_timeout(&ag_a), RCT_NEVER);

  /* A disconnects: DREQ (new TID), B answers after its consumer's DREP */
  ck_assert_int_eq(ibcm_disconnect(&ag_a, 10 * MS, conn_a), 0);
  ck_assert_int_eq(ibcm_poll_mad(&ag_a, mad, &(struct ibcm_peer){ 0 }), IBCM_MAD_LEN);
  ck_assert_int_eq(ibcm_parse(&m, mad, IBCM_MAD_LEN), 0);
  ck_assert_int_eq(m.attr_id, IBCM_ATTR_DREQ);
  ck_assert_uint_ne(m.tid, req_tid);
  ck_assert_uint_eq(m.remote_qpn_eecn, QPN_B);
  ibcm_recv(&ag_b, 10 * MS, &peer_a, mad, IBCM_MAD_LEN);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_DREQ);
  ck_assert_int_eq(ibcm_disconnect(&ag_b, 10 * MS, conn_b), 0);
  ck_assert_int_eq(b_to_a(10 * MS, false), IBCM_ATTR_DREP);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_DISCONNECTED);
  ck_assert_int_eq(ibcm_conn_state(&ag_a, conn_a), IBCM_TIMEWAIT);
  ck_assert_int_eq(ibcm_conn_state(&ag_b, conn_b), IBCM_TIMEWAIT);
  /* time wait: 2 packet lifetimes + the local ACK timeout [IBCM-TMO-5] */
  t = ibcm_next_timeout(&ag_a);
  ck_assert_uint_eq(t, 10 * MS + 2 * (4096ull << IBCM_PKT_LIFETIME) + (4096ull << 14));
  ibcm_timeout(&ag_a, t - 1);
  no_event(&ag_a);
  ibcm_timeout(&ag_a, t);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_TIMEWAIT_EXIT);
  ibcm_timeout(&ag_b, ibcm_next_timeout(&ag_b));
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_TIMEWAIT_EXIT);
  ibcm_release(&ag_a, t, conn_a);
  ibcm_release(&ag_b, t, conn_b);
  ck_assert_int_eq(ibcm_conn_state(&ag_a, conn_a), IBCM_FREE);
  ck_assert_int_eq(ibcm_conn_state(&ag_b, conn_b), IBCM_FREE);
  ck_assert_int_eq(ibcm_poll_mad(&ag_a, mad, &(struct ibcm_peer){ 0 }), 0);
  ck_assert_uint_eq(ibcm_counters(&ag_a)->retransmits, 0);
}
END_TEST

/* Selective repeat only when both announce it [IBCM-XV6-2]. */
START_TEST(test_ibcm_xv6_caps_negotiated)
{
  struct rct_qp_attr q;
  uint32_t rtr, rts;
  establish(0, RDMA_XV6_CAP_SR, 0);                             /* B (a Linux peer) says nothing */
  ck_assert_int_eq(ibcm_qp_attr(&ag_a, conn_a, &q, &rtr, &rts), 0);
  ck_assert(!q.sr_enable);
  ck_assert_int_eq(ibcm_qp_attr(&ag_b, conn_b, &q, &rtr, &rts), 0);
  ck_assert(!q.sr_enable);
  establish(0, 0, RDMA_XV6_CAP_SR);
  ck_assert_int_eq(ibcm_qp_attr(&ag_a, conn_a, &q, &rtr, &rts), 0);
  ck_assert(!q.sr_enable);
  /* The REP to a REQ that offered nothing (Linux's) carries no bit in its
   * reserved byte 15 either: Linux's active side fails such a REP
   * (RDMA_CM_EVENT_CONNECT_ERROR). [SR-NEG-1] */
  struct ibcm_msg rep;
  start(0, 0);
  ck_assert_int_eq(a_to_b(0, false), IBCM_ATTR_REQ);
  accept_b(0, RDMA_XV6_CAP_SR);
  ck_assert_int_eq(b_to_a(0, false), IBCM_ATTR_REP);
  ck_assert_int_eq(ibcm_parse(&rep, mad, IBCM_MAD_LEN), 0);
  ck_assert_uint_eq(rep.xv6_caps, 0);
  ck_assert_uint_eq(mad[IBCM_MAD_HDR_LEN + 15], 0);
}
END_TEST

/* A REQ for a service nobody listens on: REJ 8, invalid service ID, which
 * Linux's rdma_cm reports as REJECTED status 8 [IBCM-REJ-2]. */
START_TEST(test_ibcm_rej_no_listener)
{
  start(0, 0);
  ibcm_unlisten(&ag_b, listener_b);
  ck_assert_int_eq(a_to_b(0, false), IBCM_ATTR_REQ);
  no_event(&ag_b);
  ck_assert_int_eq(b_to_a(0, false), IBCM_ATTR_REJ);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_REJ);
  ck_assert_int_eq(ev.msg.reason, IBCM_REJ_INVALID_SERVICE_ID);
  ck_assert_int_eq(ev.msg.reason, 8);
  ck_assert_int_eq(ev.msg.message_rejected, IBCM_MSG_REQ);
  ck_assert_int_eq(ev.msg.local_comm_id, 0);
  ck_assert_int_eq(ibcm_conn_state(&ag_a, conn_a), IBCM_IDLE);
  ck_assert_uint_eq(ibcm_next_timeout(&ag_a), RCT_NEVER);
  ck_assert_uint_eq(ibcm_counters(&ag_b)->rej_no_listener, 1);
  ck_assert_uint_eq(ibcm_counters(&ag_b)->rej_sent, 1);
  ibcm_release(&ag_a, 0, conn_a);
  ck_assert_int_eq(ibcm_conn_state(&ag_a, conn_a), IBCM_FREE);
}
END_TEST

/* The consumer rejects; a duplicate REQ gets the same REJ again [IBCM-REJ-1]
 * [IBCM-STATE-3] [IBCM-STATE-4] [IBCM-STATE-12]. */
START_TEST(test_ibcm_consumer_reject)
{
  start(0, 0);
  ck_assert_int_eq(a_to_b(0, false), IBCM_ATTR_REQ);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_REQ);
  conn_b = ev.conn;
  ck_assert_int_eq(ibcm_reject(&ag_b, 0, conn_b, IBCM_REJ_CONSUMER, "no", 2), 0);
  ck_assert_int_eq(b_to_a(0, true), IBCM_ATTR_REJ);            /* lost */
  ibcm_timeout(&ag_a, ibcm_next_timeout(&ag_a));
  ck_assert_int_eq(a_to_b(1, false), IBCM_ATTR_REQ);
  no_event(&ag_b);
  ck_assert_int_eq(b_to_a(1, false), IBCM_ATTR_REJ);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_REJ);
  ck_assert_int_eq(ev.msg.reason, IBCM_REJ_CONSUMER);
  ck_assert_mem_eq(ev.msg.private_data, "no", 2);
}
END_TEST

/* The REQ is lost: A resends it after remote CM response timeout + 2
 * packet lifetimes, 4.096 us * 2^x each [IBCM-TMO-1] [IBCM-TMO-2] [IBCM-TMO-3]. */
START_TEST(test_ibcm_lost_req)
{
  uint64_t t, rto = (4096ull << 18) + 2 * (4096ull << IBCM_PKT_LIFETIME);
  start(0, 0);
  ck_assert_int_eq(a_to_b(0, true), IBCM_ATTR_REQ);
  t = ibcm_next_timeout(&ag_a);
  ck_assert_uint_eq(t, rto);
  ibcm_timeout(&ag_a, t - 1);
  ck_assert_int_eq(a_to_b(t - 1, false), 0);
  ibcm_timeout(&ag_a, t);
  ck_assert_int_eq(a_to_b(t, false), IBCM_ATTR_REQ);
  ck_assert_uint_eq(ibcm_counters(&ag_a)->retransmits, 1);
  accept_b(t, 0);
  ck_assert_int_eq(b_to_a(t, false), IBCM_ATTR_REP);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_REP);
  ck_assert_uint_eq(ibcm_next_timeout(&ag_a), RCT_NEVER);
}
END_TEST

/* The REP is lost: A's repeated REQ is a duplicate at B, which resends its
 * REP; no second REQ event [IBCM-STATE-4]. */
START_TEST(test_ibcm_lost_rep)
{
  uint64_t t;
  start(0, 0);
  ck_assert_int_eq(a_to_b(0, false), IBCM_ATTR_REQ);
  accept_b(0, 0);
  ck_assert_int_eq(b_to_a(0, true), IBCM_ATTR_REP);
  t = ibcm_next_timeout(&ag_a);
  ibcm_timeout(&ag_a, t);
  ck_assert_int_eq(a_to_b(t, false), IBCM_ATTR_REQ);
  no_event(&ag_b);
  ck_assert_uint_eq(ibcm_counters(&ag_b)->duplicates, 1);
  ck_assert_int_eq(b_to_a(t, false), IBCM_ATTR_REP);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_REP);
  ck_assert_int_eq(ibcm_send_rtu(&ag_a, t, conn_a, 0, 0), 0);
  ck_assert_int_eq(a_to_b(t, false), IBCM_ATTR_RTU);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_ESTABLISHED);
}
END_TEST

/* The RTU is lost: B's REP timer resends the REP; A, established, answers
 * the repeated REP with its RTU again [IBCM-STATE-6]. */
START_TEST(test_ibcm_lost_rtu_repeated_rep_answered)
{
  uint64_t t, rto = (4096ull << 18) + 2 * (4096ull << IBCM_PKT_LIFETIME);
  start(0, 0);
  ck_assert_int_eq(a_to_b(0, false), IBCM_ATTR_REQ);
  accept_b(0, 0);
  ck_assert_int_eq(b_to_a(0, false), IBCM_ATTR_REP);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_REP);
  ck_assert_int_eq(ibcm_send_rtu(&ag_a, 0, conn_a, 0, 0), 0);
  ck_assert_int_eq(a_to_b(0, true), IBCM_ATTR_RTU);
  t = ibcm_next_timeout(&ag_b);
  ck_assert_uint_eq(t, rto);                                  /* the REQ's local CM response timeout */
  ibcm_timeout(&ag_b, t);
  ck_assert_int_eq(b_to_a(t, false), IBCM_ATTR_REP);
  no_event(&ag_a);
  ck_assert_int_eq(a_to_b(t, false), IBCM_ATTR_RTU);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_ESTABLISHED);
  ck_assert_uint_eq(ibcm_counters(&ag_a)->retransmits, 1);
  ck_assert_uint_eq(ibcm_next_timeout(&ag_b), RCT_NEVER);
}
END_TEST

/* Passive: the first RC frame came before the RTU [IBCM-STATE-7]. */
START_TEST(test_ibcm_established_before_rtu)
{
  start(0, 0);
  ck_assert_int_eq(a_to_b(0, false), IBCM_ATTR_REQ);
  accept_b(0, 0);
  ck_assert_int_eq(ibcm_established(&ag_b, conn_b), 0);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_ESTABLISHED);
  ck_assert_uint_eq(ibcm_next_timeout(&ag_b), RCT_NEVER);
  ck_assert_int_eq(ibcm_established(&ag_b, conn_b), IBCM_ERR_STATE);
}
END_TEST

/* Duplicate REQs: while the consumer decides, dropped; after the REP,
 * answered with it; once established, dropped [IBCM-STATE-4]. */
START_TEST(test_ibcm_duplicate_req)
{
  uint8_t req[IBCM_MAD_LEN];
  struct ibcm_peer to;
  start(0, 0);
  ck_assert_int_eq(ibcm_poll_mad(&ag_a, req, &to), IBCM_MAD_LEN);
  ibcm_recv(&ag_b, 0, &peer_a, req, IBCM_MAD_LEN);
  ibcm_recv(&ag_b, 0, &peer_a, req, IBCM_MAD_LEN);
  accept_b(0, 0);
  no_event(&ag_b);
  ck_assert_int_eq(b_to_a(0, true), IBCM_ATTR_REP);
  ck_assert_int_eq(b_to_a(0, true), 0);
  ibcm_recv(&ag_b, 1, &peer_a, req, IBCM_MAD_LEN);
  ck_assert_int_eq(b_to_a(1, false), IBCM_ATTR_REP);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_REP);
  ck_assert_int_eq(ibcm_send_rtu(&ag_a, 1, conn_a, 0, 0), 0);
  ck_assert_int_eq(a_to_b(1, false), IBCM_ATTR_RTU);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_ESTABLISHED);
  ibcm_recv(&ag_b, 2, &peer_a, req, IBCM_MAD_LEN);
  ck_assert_int_eq(b_to_a(2, false), 0);
  no_event(&ag_b);
  ck_assert_uint_eq(ibcm_counters(&ag_b)->duplicates, 3);
  ck_assert_int_eq(ibcm_conn_state(&ag_b, conn_b), IBCM_ESTABLISHED);
}
END_TEST

/* Both sides send DREQ at once: each answers the other's with a DREP, both
 * end in time wait with one DISCONNECTED each [IBCM-STATE-13]. */
START_TEST(test_ibcm_crossing_dreqs)
{
  establish(0, 0, 0);
  ck_assert_int_eq(ibcm_disconnect(&ag_a, 1, conn_a), 0);
  ck_assert_int_eq(ibcm_disconnect(&ag_b, 1, conn_b), 0);
  ck_assert_int_eq(a_to_b(1, false), IBCM_ATTR_DREQ);
  ck_assert_int_eq(b_to_a(1, false), IBCM_ATTR_DREQ);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_DISCONNECTED);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_DISCONNECTED);
  ck_assert_int_eq(a_to_b(1, false), IBCM_ATTR_DREP);
  ck_assert_int_eq(b_to_a(1, false), IBCM_ATTR_DREP);
  no_event(&ag_a);
  no_event(&ag_b);
  ck_assert_int_eq(ibcm_conn_state(&ag_a, conn_a), IBCM_TIMEWAIT);
  ck_assert_int_eq(ibcm_conn_state(&ag_b, conn_b), IBCM_TIMEWAIT);
  ibcm_timeout(&ag_a, ibcm_next_timeout(&ag_a));
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_TIMEWAIT_EXIT);
  ck_assert_int_eq(a_to_b(2, false), 0);                      /* nothing resent */
}
END_TEST

/* The DREP is lost: the DREQ is resent, B in time wait answers again; and
 * a DREQ nobody answers ends after max CM retries [IBCM-TMO-3]. */
START_TEST(test_ibcm_lost_drep_and_silent_peer)
{
  uint64_t t;
  establish(0, 0, 0);
  ck_assert_int_eq(ibcm_disconnect(&ag_a, 0, conn_a), 0);
  ck_assert_int_eq(a_to_b(0, false), IBCM_ATTR_DREQ);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_DREQ);
  ck_assert_int_eq(ibcm_disconnect(&ag_b, 0, conn_b), 0);
  ck_assert_int_eq(b_to_a(0, true), IBCM_ATTR_DREP);
  t = ibcm_next_timeout(&ag_a);
  ibcm_timeout(&ag_a, t);
  ck_assert_int_eq(a_to_b(t, false), IBCM_ATTR_DREQ);
  no_event(&ag_b);
  ck_assert_int_eq(b_to_a(t, false), IBCM_ATTR_DREP);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_DISCONNECTED);

  establish(0, 0, 0);
  ck_assert_int_eq(ibcm_disconnect(&ag_a, 0, conn_a), 0);
  for (int i = 0; i <= 3; i++) {                              /* max_cm_retries = 3 */
    ck_assert_int_eq(a_to_b(t, true), IBCM_ATTR_DREQ);
    no_event(&ag_a);
    t = ibcm_next_timeout(&ag_a);
    ibcm_timeout(&ag_a, t);
  }
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_DISCONNECTED);
  ck_assert_int_eq(ibcm_conn_state(&ag_a, conn_a), IBCM_TIMEWAIT);
  ck_assert_uint_eq(ibcm_counters(&ag_a)->retransmits, 3);
}
END_TEST

/* A silent passive side: the REQ is sent 1 + max_cm_retries times, each
 * after the negotiated timeout, then TIMEOUT (Linux: UNREACHABLE) [IBCM-TMO-3]. */
START_TEST(test_ibcm_req_retries_exhausted)
{
  uint64_t rto = (4096ull << 18) + 2 * (4096ull << IBCM_PKT_LIFETIME), t = 0;
  start(0, 0);
  for (int i = 0; i <= 3; i++) {
    ck_assert_int_eq(a_to_b(t, true), IBCM_ATTR_REQ);
    ck_assert_uint_eq(ibcm_next_timeout(&ag_a), t + rto);
    t += rto;
    no_event(&ag_a);
    ibcm_timeout(&ag_a, t);
  }
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_TIMEOUT);
  ck_assert_ptr_eq(ev.ctx, &ctx_a);
  ck_assert_int_eq(a_to_b(t, true), 0);
  ck_assert_uint_eq(ibcm_next_timeout(&ag_a), RCT_NEVER);
  ck_assert_int_eq(ibcm_conn_state(&ag_a, conn_a), IBCM_IDLE);
}
END_TEST

/* No RTU ever: B's REP retries run out, it rejects (timeout) and reports
 * TIMEOUT; an MRA stretches the wait to its service timeout [IBCM-TMO-4]. */
START_TEST(test_ibcm_rep_retries_exhausted_and_mra)
{
  struct ibcm_msg m;
  uint64_t t = 0;
  start(0, 0);
  ck_assert_int_eq(a_to_b(0, false), IBCM_ATTR_REQ);
  accept_b(0, 0);
  for (int i = 0; i <= 3; i++) {
    ck_assert_int_eq(b_to_a(t, true), IBCM_ATTR_REP);
    t = ibcm_next_timeout(&ag_b);
    ibcm_timeout(&ag_b, t);
  }
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_TIMEOUT);
  ck_assert_int_eq(b_to_a(t, false), IBCM_ATTR_REJ);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_REJ);
  ck_assert_int_eq(ev.msg.reason, IBCM_REJ_TIMEOUT);
  ck_assert_int_eq(ibcm_conn_state(&ag_b, conn_b), IBCM_TIMEWAIT);

  /* the same while A's consumer holds the REP without an RTU: A gets the REJ [IBCM-STATE-12] */
  start(0, 0);
  ck_assert_int_eq(a_to_b(0, false), IBCM_ATTR_REQ);
  accept_b(0, 0);
  t = 0;
  for (int i = 0; i <= 3; i++) {
    ck_assert_int_eq(b_to_a(t, false), IBCM_ATTR_REP);
    t = ibcm_next_timeout(&ag_b);
    ibcm_timeout(&ag_b, t);
  }
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_REP);
  no_event(&ag_a);                                            /* the repeated REPs: dropped */
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_TIMEOUT);
  ck_assert_int_eq(b_to_a(t, false), IBCM_ATTR_REJ);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_REJ);
  ck_assert_int_eq(ibcm_conn_state(&ag_a, conn_a), IBCM_IDLE);
  ck_assert_int_eq(ibcm_send_rtu(&ag_a, t, conn_a, 0, 0), IBCM_ERR_STATE);

  /* MRA: A stops resending its REQ and waits service timeout + 2 lifetimes */
  start(0, 0);
  ck_assert_int_eq(a_to_b(0, false), IBCM_ATTR_REQ);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_REQ);
  memset(&m, 0, sizeof(m));
  m.attr_id = IBCM_ATTR_MRA;
  m.local_comm_id = ag_b.conn[ev.conn].local_id;
  m.remote_comm_id = ag_a.conn[conn_a].local_id;
  m.message_mraed = IBCM_MSG_REQ;
  m.service_timeout = 24;
  ck_assert_int_eq(ibcm_encode(&m, mad), IBCM_MAD_LEN);
  ibcm_recv(&ag_a, 5, &peer_b, mad, IBCM_MAD_LEN);
  ck_assert_int_eq(ibcm_conn_state(&ag_a, conn_a), IBCM_MRA_REQ_RCVD);
  t = ibcm_next_timeout(&ag_a);
  ck_assert_uint_eq(t, 5 + (4096ull << 24) + 2 * (4096ull << IBCM_PKT_LIFETIME));
  ibcm_timeout(&ag_a, t);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_TIMEOUT);
  ck_assert_int_eq(a_to_b(t, true), 0);
}
END_TEST

/* A REQ naming a connection of ours in time wait (the peer's comm ID and
 * CA GUID) is stale: REJ 10 [IBCM-STATE-5]. */
START_TEST(test_ibcm_stale_connection)
{
  uint8_t req[IBCM_MAD_LEN];
  struct ibcm_peer to;
  struct ibcm_req_param p;
  agents();
  req_param(&p, 0);
  conn_a = ibcm_connect(&ag_a, 0, &peer_b, &p, &ctx_a);
  ck_assert_int_eq(ibcm_poll_mad(&ag_a, req, &to), IBCM_MAD_LEN);
  ibcm_recv(&ag_b, 0, &peer_a, req, IBCM_MAD_LEN);
  accept_b(0, 0);
  ck_assert_int_eq(b_to_a(0, false), IBCM_ATTR_REP);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_REP);
  ck_assert_int_eq(ibcm_send_rtu(&ag_a, 0, conn_a, 0, 0), 0);
  ck_assert_int_eq(a_to_b(0, false), IBCM_ATTR_RTU);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_ESTABLISHED);
  ck_assert_int_eq(ibcm_disconnect(&ag_b, 0, conn_b), 0);
  ck_assert_int_eq(b_to_a(0, false), IBCM_ATTR_DREQ);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_DREQ);
  ck_assert_int_eq(ibcm_disconnect(&ag_a, 0, conn_a), 0);
  ck_assert_int_eq(a_to_b(0, false), IBCM_ATTR_DREP);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_DISCONNECTED);
  ck_assert_int_eq(ibcm_conn_state(&ag_b, conn_b), IBCM_TIMEWAIT);
  ibcm_recv(&ag_b, 1, &peer_a, req, IBCM_MAD_LEN);            /* the old REQ again */
  ck_assert_int_eq(b_to_a(1, false), IBCM_ATTR_REJ);
  ck_assert_uint_eq(ibcm_counters(&ag_b)->stale, 1);
  no_event(&ag_b);
  ck_assert_int_eq(ibcm_conn_state(&ag_b, conn_b), IBCM_TIMEWAIT);
  ibcm_parse(&ev.msg, mad, IBCM_MAD_LEN);
  ck_assert_int_eq(ev.msg.reason, IBCM_REJ_STALE_CONN);
  ck_assert_int_eq(ev.msg.reason, 10);
  /* after the time wait, the same IDs are a new connection */
  ibcm_timeout(&ag_b, ibcm_next_timeout(&ag_b));
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_TIMEWAIT_EXIT);
  ibcm_recv(&ag_b, RCT_NEVER - 1, &peer_a, req, IBCM_MAD_LEN);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_REQ);
}
END_TEST

/* The peer lost its connection and connects again from the same QP (new
 * comm ID, same QPN and CA GUID): the new REQ is stale (REJ 10) and the
 * old, established connection is disconnected [IBCM-STATE-15]. */
START_TEST(test_ibcm_stale_qp)
{
  static struct ibcm_agent ag_a2;                 /* A after losing its state */
  struct ibcm_req_param p;
  struct ibcm_msg m;
  struct ibcm_event e;
  int c2;
  establish(0, 0, 0);
  ibcm_agent_init(&ag_a2, GUID_A, 99);
  req_param(&p, 0);                               /* the same QPN */
  c2 = ibcm_connect(&ag_a2, 1, &peer_b, &p, 0);
  ck_assert_int_eq(hop(&ag_a2, &ag_b, &peer_a, 1, false), IBCM_ATTR_REQ);
  no_event(&ag_b);
  ck_assert_uint_eq(ibcm_counters(&ag_b)->stale, 1);
  ck_assert_int_eq(hop(&ag_b, &ag_a2, &peer_b, 1, false), IBCM_ATTR_REJ);
  ck_assert(ibcm_poll_event(&ag_a2, &e));
  ck_assert_int_eq(e.type, IBCM_EV_REJ);
  ck_assert_int_eq(e.msg.reason, IBCM_REJ_STALE_CONN);
  ck_assert_int_eq(ibcm_conn_state(&ag_a2, c2), IBCM_IDLE);
  ck_assert_int_eq(ibcm_conn_state(&ag_b, conn_b), IBCM_DREQ_SENT);
  ck_assert_int_eq(ibcm_poll_mad(&ag_b, mad, &(struct ibcm_peer){ 0 }), IBCM_MAD_LEN);
  ck_assert_int_eq(ibcm_parse(&m, mad, IBCM_MAD_LEN), 0);
  ck_assert_int_eq(m.attr_id, IBCM_ATTR_DREQ);
  ck_assert_uint_eq(m.remote_comm_id, ag_a.conn[conn_a].local_id);
  /* once the old connection is in time wait, the QP is free for a new one */
  ibcm_recv(&ag_a, 2, &peer_b, mad, IBCM_MAD_LEN);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_DREQ);
  ck_assert_int_eq(ibcm_disconnect(&ag_a, 2, conn_a), 0);
  ck_assert_int_eq(a_to_b(2, false), IBCM_ATTR_DREP);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_DISCONNECTED);
  c2 = ibcm_connect(&ag_a2, 3, &peer_b, &p, 0);
  ck_assert_int_eq(hop(&ag_a2, &ag_b, &peer_a, 3, false), IBCM_ATTR_REQ);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_REQ);
}
END_TEST

/* Bad input is dropped and counted and changes no connection [IBCM-MAD-7]
 * [IBCM-STATE-10]; forged MADs with unknown IDs or from a stranger's GID
 * change nothing [SEC-FORGE-6] [SEC-FORGE-7]. */
START_TEST(test_ibcm_bad_input_dropped)
{
  struct ibcm_msg m;
  uint8_t b[IBCM_MAD_LEN];
  const struct ibcm_counters *cb;
  struct ibcm_conn before_a, before_b;
  establish(0, 0, 0);
  cb = ibcm_counters(&ag_b);
  memcpy(&before_a, &ag_a.conn[conn_a], sizeof(before_a));
  memcpy(&before_b, &ag_b.conn[conn_b], sizeof(before_b));
  memset(&m, 0, sizeof(m));
  m.attr_id = IBCM_ATTR_DREQ;
  m.local_comm_id = ag_a.conn[conn_a].local_id;
  m.remote_comm_id = ag_b.conn[conn_b].local_id;
  ck_assert_int_eq(ibcm_encode(&m, b), IBCM_MAD_LEN);
  ibcm_recv(&ag_b, 1, &peer_a, b, 100);                      /* truncated */
  ck_assert_uint_eq(cb->dropped_malformed, 1);
  b[0] = 2;
  ibcm_recv(&ag_b, 1, &peer_a, b, IBCM_MAD_LEN);
  b[0] = 1; b[2] = 1;
  ibcm_recv(&ag_b, 1, &peer_a, b, IBCM_MAD_LEN);
  ck_assert_uint_eq(cb->dropped_version, 2);
  b[2] = 2; b[1] = 0x04;
  ibcm_recv(&ag_b, 1, &peer_a, b, IBCM_MAD_LEN);
  ck_assert_uint_eq(cb->dropped_class, 1);
  b[1] = 0x07; b[3] = 0x81;
  ibcm_recv(&ag_b, 1, &peer_a, b, IBCM_MAD_LEN);
  ck_assert_uint_eq(cb->dropped_method, 1);
  b[3] = 0x03; b[17] = 0x1a;
  ibcm_recv(&ag_b, 1, &peer_a, b, IBCM_MAD_LEN);
  ck_assert_uint_eq(cb->dropped_unknown_attr, 1);
  /* the right DREQ from another peer's GID */
  ibcm_recv(&ag_b, 1, &peer_c, (ibcm_encode(&m, b), b), IBCM_MAD_LEN);
  ck_assert_uint_eq(cb->dropped_unknown_conn, 1);
  /* a DREQ naming B's connection with another remote ID */
  m.local_comm_id ^= 0x100000;
  ibcm_encode(&m, b);
  ibcm_recv(&ag_b, 1, &peer_a, b, IBCM_MAD_LEN);
  ck_assert_uint_eq(cb->dropped_unknown_conn, 2);
  /* REP and RTU for an unknown connection; a DREQ for one gets a DREP */
  m.attr_id = IBCM_ATTR_REP;
  m.remote_comm_id = 0x12345678;
  ibcm_encode(&m, b);
  ibcm_recv(&ag_b, 1, &peer_a, b, IBCM_MAD_LEN);
  m.attr_id = IBCM_ATTR_RTU;
  ibcm_encode(&m, b);
  ibcm_recv(&ag_b, 1, &peer_a, b, IBCM_MAD_LEN);
  ck_assert_uint_eq(cb->dropped_unknown_conn, 4);
  ck_assert_int_eq(b_to_a(1, true), 0);
  m.attr_id = IBCM_ATTR_DREQ;
  ibcm_encode(&m, b);
  ibcm_recv(&ag_b, 1, &peer_c, b, IBCM_MAD_LEN);
  ck_assert_uint_eq(cb->dropped_unknown_conn, 5);
  ck_assert_int_eq(ibcm_poll_mad(&ag_b, mad, &(struct ibcm_peer){ 0 }), IBCM_MAD_LEN);
  ck_assert_int_eq(ibcm_parse(&m, mad, IBCM_MAD_LEN), 0);
  ck_assert_int_eq(m.attr_id, IBCM_ATTR_DREP);
  ck_assert_uint_eq(m.remote_comm_id, ag_a.conn[conn_a].local_id ^ 0x100000);
  /* a REJ and an MRA for B's connection from a stranger */
  m.attr_id = IBCM_ATTR_REJ;
  m.remote_comm_id = ag_b.conn[conn_b].local_id;
  ibcm_encode(&m, b);
  ibcm_recv(&ag_b, 1, &peer_c, b, IBCM_MAD_LEN);
  ck_assert_uint_eq(cb->dropped_unknown_conn, 6);
  no_event(&ag_b);
  ck_assert_mem_eq(&ag_b.conn[conn_b], &before_b, sizeof(before_b));
  ck_assert_mem_eq(&ag_a.conn[conn_a], &before_a, sizeof(before_a));
  ck_assert_int_eq(ibcm_conn_state(&ag_b, conn_b), IBCM_ESTABLISHED);
  /* bad handles */
  ck_assert_int_eq(ibcm_accept(&ag_b, 1, -1, 0), IBCM_ERR_HANDLE);
  ck_assert_int_eq(ibcm_disconnect(&ag_b, 1, IBCM_MAX_CONN), IBCM_ERR_HANDLE);
  ck_assert_int_eq(ibcm_send_rtu(&ag_b, 1, conn_b, 0, 0), IBCM_ERR_STATE);
  ck_assert_int_eq(ibcm_listen(&ag_b, ibcm_service_id(IBCM_PS_TCP, PORT), 0), IBCM_ERR_INUSE);
}
END_TEST

/* A REQ flood from many comm IDs fills the table, then each further REQ
 * gets REJ "no resources" and nothing else changes [IBCM-STATE-11]. */
START_TEST(test_ibcm_req_flood_bounded)
{
  struct ibcm_msg m;
  struct ibcm_req_param p;
  struct ibcm_event e;
  int reqs = 0, rejs = 0;
  start(0, 0);
  ck_assert_int_eq(a_to_b(0, false), IBCM_ATTR_REQ);          /* one real connection */
  accept_b(0, 0);
  ck_assert_int_eq(b_to_a(0, false), IBCM_ATTR_REP);
  req_param(&p, 0);
  for (uint32_t i = 0; i < IBCM_MAX_CONN + 20; i++) {
    memset(&m, 0, sizeof(m));
    m.attr_id = IBCM_ATTR_REQ;
    m.local_comm_id = 0x40000000u + i;
    m.local_ca_guid = 0xbad;
    m.service_id = p.service_id;
    m.path_mtu = RCT_MTU_1024;
    m.local_qpn = i;
    ck_assert_int_eq(ibcm_encode(&m, mad), IBCM_MAD_LEN);
    ibcm_recv(&ag_b, 1, &peer_c, mad, IBCM_MAD_LEN);
    while (ibcm_poll_event(&ag_b, &e))
      reqs += e.type == IBCM_EV_REQ;
    while (ibcm_poll_mad(&ag_b, mad, &(struct ibcm_peer){ 0 })) {
      ck_assert_int_eq(ibcm_parse(&m, mad, IBCM_MAD_LEN), 0);
      ck_assert_int_eq(m.attr_id, IBCM_ATTR_REJ);
      ck_assert_int_eq(m.reason, IBCM_REJ_NO_RESOURCES);
      rejs++;
    }
  }
  ck_assert_int_eq(reqs, IBCM_MAX_CONN - 1);
  ck_assert_int_eq(rejs, 21);
  ck_assert_int_eq(ibcm_conn_state(&ag_b, conn_b), IBCM_REP_SENT);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_REP);            /* the real one goes on */
  ck_assert_int_eq(ibcm_send_rtu(&ag_a, 1, conn_a, 0, 0), 0);
  ck_assert_int_eq(a_to_b(1, false), IBCM_ATTR_RTU);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_ESTABLISHED);
}
END_TEST

/* The consumer destroys its id mid-connection: what the peer must hear goes
 * out, the entry is freed after time wait, no event follows [IBCM-STATE-14]. */
START_TEST(test_ibcm_release_established)
{
  establish(0, 0, 0);
  ibcm_release(&ag_a, 0, conn_a);
  ck_assert_int_eq(a_to_b(0, false), IBCM_ATTR_DREQ);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_DREQ);
  ck_assert_int_eq(ibcm_disconnect(&ag_b, 0, conn_b), 0);
  ck_assert_int_eq(b_to_a(0, false), IBCM_ATTR_DREP);
  no_event(&ag_a);
  ck_assert_int_eq(ibcm_conn_state(&ag_a, conn_a), IBCM_TIMEWAIT);
  ck_assert_int_eq(ibcm_disconnect(&ag_a, 0, conn_a), IBCM_ERR_HANDLE);
  ibcm_timeout(&ag_a, ibcm_next_timeout(&ag_a));
  no_event(&ag_a);
  ck_assert_int_eq(ibcm_conn_state(&ag_a, conn_a), IBCM_FREE);
}
END_TEST

/* 300 connections with timeouts in random order: every REQ is sent
 * 1 + max_cm_retries times, each at its own timeout, and each ends with
 * TIMEOUT exactly then; the agent's next deadline is always the earliest
 * [IBCM-TMO-2] [IBCM-TMO-3]. */
START_TEST(test_ibcm_many_timers_in_order)
{
  static uint64_t rto[300], sends[300];
  struct ibcm_req_param p;
  struct ibcm_event e;
  uint64_t now = 0, last = 0;
  int timeouts = 0;
  agents();
  req_param(&p, 0);
  for (int i = 0; i < 300; i++) {
    p.remote_cm_response_timeout = (uint8_t)(8 + (i * 7919) % 13);
    p.max_cm_retries = (uint8_t)(i % 4);
    rto[i] = (4096ull << p.remote_cm_response_timeout) + 2 * (4096ull << IBCM_PKT_LIFETIME);
    ck_assert_int_eq(ibcm_connect(&ag_a, 0, &peer_b, &p, 0), i);
    ck_assert_int_eq(ibcm_poll_mad(&ag_a, mad, &(struct ibcm_peer){ 0 }), IBCM_MAD_LEN);
    sends[i] = 1;
  }
  now = ibcm_next_timeout(&ag_a);
  ibcm_timeout(&ag_a, now);
  while (now != RCT_NEVER) {
    struct ibcm_peer to;
    struct ibcm_msg m;
    while (ibcm_poll_mad(&ag_a, mad, &to)) {
      ck_assert_int_eq(ibcm_parse(&m, mad, IBCM_MAD_LEN), 0);
      int i = (int)(m.local_comm_id & ((1u << IBCM_CONN_BITS) - 1));
      ck_assert_uint_eq(now, sends[i] * rto[i]);              /* k-th send at k * rto */
      sends[i]++;
    }
    while (ibcm_poll_event(&ag_a, &e)) {
      ck_assert_int_eq(e.type, IBCM_EV_TIMEOUT);
      ck_assert_uint_eq(sends[e.conn], 1 + e.conn % 4);
      ck_assert_uint_eq(now, sends[e.conn] * rto[e.conn]);
      timeouts++;
    }
    now = ibcm_next_timeout(&ag_a);
    ck_assert_uint_ge(now, last);
    last = now;
    if (now != RCT_NEVER)
      ibcm_timeout(&ag_a, now);
  }
  ck_assert_int_eq(timeouts, 300);
  ck_assert_uint_eq(ibcm_counters(&ag_a)->dropped_queue_full, 0);
}
END_TEST

/* SIDR for UD services: request, lost reply resent on the repeated
 * request, the reply's QPN and Q_Key; no listener: status 1; a silent
 * peer: TIMEOUT after the retries [IBCM-SIDR-1] [IBCM-SIDR-2] [IBCM-SIDR-3]. */
START_TEST(test_ibcm_sidr_exchange)
{
  uint8_t hdr[IBCM_CMA_HDR_LEN];
  uint64_t t;
  int c, n;
  agents();
  ibcm_cma_hdr_encode(hdr, IP_A, IP_B, 5000);
  c = ibcm_sidr_req(&ag_a, 0, &peer_b, ibcm_service_id(IBCM_PS_TCP, PORT), hdr, sizeof(hdr), &ctx_a);
  ck_assert_int_ge(c, 0);
  ck_assert_int_eq(a_to_b(0, false), IBCM_ATTR_SIDR_REQ);
  ck_assert_int_eq(next_event(&ag_b), IBCM_EV_SIDR_REQ);
  ck_assert_ptr_eq(ev.ctx, &ctx_b);
  ck_assert_mem_eq(ev.msg.private_data, hdr, sizeof(hdr));
  ck_assert_int_eq(ibcm_sidr_rep(&ag_b, 0, ev.conn, IBCM_SIDR_SUCCESS, QPN_B, 0x01234567u, 0, 0), 0);
  ck_assert_int_eq(ibcm_sidr_rep(&ag_b, 0, ev.conn, IBCM_SIDR_SUCCESS, QPN_B, 1, 0, 0), IBCM_ERR_STATE);
  ck_assert_int_eq(b_to_a(0, true), IBCM_ATTR_SIDR_REP);       /* lost */
  t = ibcm_next_timeout(&ag_a);
  ck_assert_uint_eq(t, (4096ull << IBCM_SIDR_RESPONSE_TIMEOUT) + 2 * (4096ull << IBCM_PKT_LIFETIME));
  ibcm_timeout(&ag_a, t);
  ck_assert_int_eq(a_to_b(t, false), IBCM_ATTR_SIDR_REQ);
  no_event(&ag_b);
  ck_assert_int_eq(b_to_a(t, false), IBCM_ATTR_SIDR_REP);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_SIDR_REP);
  ck_assert_int_eq(ev.conn, c);
  ck_assert_int_eq(ev.msg.sidr_status, IBCM_SIDR_SUCCESS);
  ck_assert_uint_eq(ev.msg.sidr_qpn, QPN_B);
  ck_assert_uint_eq(ev.msg.sidr_qkey, 0x01234567u);
  ck_assert_uint_eq(ibcm_next_timeout(&ag_a), RCT_NEVER);
  ibcm_release(&ag_a, t, c);
  ck_assert_int_eq(ibcm_conn_state(&ag_a, c), IBCM_FREE);
  /* no listener */
  c = ibcm_sidr_req(&ag_a, t, &peer_b, ibcm_service_id(IBCM_PS_UDP, 9), 0, 0, &ctx_a);
  ck_assert_int_eq(a_to_b(t, false), IBCM_ATTR_SIDR_REQ);
  ck_assert_int_eq(b_to_a(t, false), IBCM_ATTR_SIDR_REP);
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_SIDR_REP);
  ck_assert_int_eq(ev.msg.sidr_status, IBCM_SIDR_UNSUPPORTED);
  ibcm_release(&ag_a, t, c);
  /* nobody answers */
  c = ibcm_sidr_req(&ag_a, t, &peer_b, ibcm_service_id(IBCM_PS_UDP, 9), 0, 0, &ctx_a);
  for (n = 0; n <= IBCM_SIDR_MAX_RETRIES; n++) {
    ck_assert_int_eq(a_to_b(t, true), IBCM_ATTR_SIDR_REQ);
    no_event(&ag_a);
    t = ibcm_next_timeout(&ag_a);
    ibcm_timeout(&ag_a, t);
  }
  ck_assert_int_eq(next_event(&ag_a), IBCM_EV_TIMEOUT);
  ck_assert_int_eq(ibcm_conn_state(&ag_a, c), IBCM_IDLE);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Seeded races: a network that loses, duplicates and reorders MADs    */
/* (each delayed up to 60 ms, under the packet lifetime), both sides   */
/* sometimes disconnecting at once. Every run must end with no timer   */
/* left, one connection at most on B (a retried or repeated REQ never  */
/* makes a second), and either connected-then-disconnected or the error */
/* the standard gives [IBCM-STATE-4] [IBCM-STATE-6] [IBCM-STATE-13]     */
/* [IBCM-TMO-3] [IBCM-TMO-5].                                          */
/* ------------------------------------------------------------------ */

#define NET_MAX 512
struct flight { uint64_t at; bool to_b; uint8_t mad[IBCM_MAD_LEN]; };
static struct flight net[NET_MAX];
static unsigned net_n;
static uint32_t lcg;

static unsigned rnd100(void)
{
  lcg = lcg * 1103515245u + 12345u;
  return (lcg >> 16) % 100;
}

/* Take what the agents sent at `now` into the network. */
static void net_take(uint64_t now, unsigned loss, unsigned dup)
{
  for (int side = 0; side < 2; side++) {
    struct ibcm_peer to;
    uint8_t m[IBCM_MAD_LEN];
    while (ibcm_poll_mad(side ? &ag_b : &ag_a, m, &to)) {
      unsigned copies = rnd100() < loss ? 0 : rnd100() < dup ? 2 : 1;
      for (unsigned k = 0; k < copies; k++) {
        ck_assert_uint_lt(net_n, NET_MAX);
        net[net_n].at = now + rnd100() * 600 * 1000ull;          /* 0..60 ms */
        net[net_n].to_b = side == 0;
        memcpy(net[net_n].mad, m, IBCM_MAD_LEN);
        net_n++;
      }
    }
  }
}

static uint64_t net_next(void)
{
  uint64_t t = RCT_NEVER;
  for (unsigned i = 0; i < net_n; i++)
    if (net[i].at < t)
      t = net[i].at;
  return t;
}

/* Deliver everything due at `now`. */
static void net_deliver(uint64_t now)
{
  for (unsigned i = 0; i < net_n;) {
    if (net[i].at > now) {
      i++;
      continue;
    }
    struct flight f = net[i];
    net[i] = net[--net_n];
    if (f.to_b)
      ibcm_recv(&ag_b, now, &peer_a, f.mad, IBCM_MAD_LEN);
    else
      ibcm_recv(&ag_a, now, &peer_b, f.mad, IBCM_MAD_LEN);
  }
}

struct run { unsigned seen_a, seen_b, reqs_b; bool b_closes; };

/* The consumers: accept every REQ, RTU on every REP, DREP on every DREQ;
 * A disconnects right after its RTU, and in a third of the runs B as soon
 * as it is established. */
static void consumers(uint64_t now, struct run *r)
{
  struct ibcm_event e;
  struct ibcm_rep_param rp;
  while (ibcm_poll_event(&ag_a, &e)) {
    r->seen_a |= 1u << e.type;
    if (e.type == IBCM_EV_REP) {
      ck_assert_int_eq(ibcm_send_rtu(&ag_a, now, e.conn, 0, 0), 0);
      ck_assert_int_eq(ibcm_disconnect(&ag_a, now, e.conn), 0);
    }
    if (e.type == IBCM_EV_DREQ)
      ck_assert_int_eq(ibcm_disconnect(&ag_a, now, e.conn), 0);
  }
  while (ibcm_poll_event(&ag_b, &e)) {
    r->seen_b |= 1u << e.type;
    if (e.type == IBCM_EV_REQ) {
      r->reqs_b++;
      conn_b = e.conn;
      rep_param(&rp, 0);
      ck_assert_int_eq(ibcm_accept(&ag_b, now, e.conn, &rp), 0);
    }
    if (e.type == IBCM_EV_DREQ)
      ck_assert_int_eq(ibcm_disconnect(&ag_b, now, e.conn), 0);
    if (e.type == IBCM_EV_ESTABLISHED && r->b_closes &&       /* (a DREQ may have come since) */
        ibcm_conn_state(&ag_b, e.conn) == IBCM_ESTABLISHED)
      ck_assert_int_eq(ibcm_disconnect(&ag_b, now, e.conn), 0);  /* may cross A's DREQ */
  }
}

static void race_run(uint32_t seed, struct run *r)
{
  struct ibcm_req_param p;
  uint64_t now = 0;
  unsigned loss = seed % 31, dup = seed % 17;
  memset(r, 0, sizeof(*r));
  lcg = seed;
  net_n = 0;
  r->b_closes = seed % 3 == 0;
  agents();
  req_param(&p, 0);
  p.local_cm_response_timeout = p.remote_cm_response_timeout = 8;  /* 1 ms + 2 lifetimes */
  conn_a = ibcm_connect(&ag_a, 0, &peer_b, &p, &ctx_a);
  for (int step = 0; step < 5000; step++) {
    uint64_t ta, tb, tn;
    net_take(now, loss, dup);
    consumers(now, r);
    net_take(now, loss, dup);
    ta = ibcm_next_timeout(&ag_a);
    tb = ibcm_next_timeout(&ag_b);
    tn = net_next();
    now = ta < tb ? ta : tb;
    now = tn < now ? tn : now;
    if (now == RCT_NEVER)
      return;
    net_deliver(now);
    ibcm_timeout(&ag_a, now);
    ibcm_timeout(&ag_b, now);
  }
  ck_abort_msg("seed %u: no end after 5000 steps", seed);
}

START_TEST(test_ibcm_seeded_races)
{
  unsigned connected = 0, failed = 0;
  uint64_t dups = 0, crossed = 0;
  for (uint32_t seed = 1; seed <= 400; seed++) {
    struct run r;
    race_run(seed, &r);
    dups += ibcm_counters(&ag_b)->duplicates;
    crossed += (r.seen_a & r.seen_b & (1u << IBCM_EV_DISCONNECTED)) && !(r.seen_a & (1u << IBCM_EV_DREQ)) &&
               !(r.seen_b & (1u << IBCM_EV_DREQ));
    ck_assert_msg(r.reqs_b <= 1, "seed %u: B made %u connections of one REQ", seed, r.reqs_b);
    ck_assert_uint_eq(ibcm_next_timeout(&ag_a), RCT_NEVER);
    ck_assert_uint_eq(ibcm_next_timeout(&ag_b), RCT_NEVER);
    if (r.seen_a & (1u << IBCM_EV_REP)) {
      /* A connected and disconnected; B connected or gave up on the RTU */
      ck_assert_msg(r.seen_a & (1u << IBCM_EV_TIMEWAIT_EXIT), "seed %u: A %#x", seed, r.seen_a);
      ck_assert_int_eq(r.reqs_b, 1);
      if (ibcm_conn_state(&ag_b, conn_b) != IBCM_ESTABLISHED)
        ck_assert_msg(r.seen_b & ((1u << IBCM_EV_TIMEWAIT_EXIT) | (1u << IBCM_EV_TIMEOUT)),
                      "seed %u: B %#x in %s", seed, r.seen_b,
                      ibcm_state_name(ibcm_conn_state(&ag_b, conn_b)));
      connected++;
    } else {
      ck_assert_msg(r.seen_a & ((1u << IBCM_EV_TIMEOUT) | (1u << IBCM_EV_REJ)),
                    "seed %u: A %#x B %#x", seed, r.seen_a, r.seen_b);
      failed++;
    }
  }
  printf("ibcm seeded races: %u connected and disconnected, %u ended in an error, %llu duplicates "
         "at B, %llu runs with crossing DREQs\n", connected, failed, (unsigned long long)dups,
         (unsigned long long)crossed);
  ck_assert_uint_gt(dups, 0);
  ck_assert_uint_gt(crossed, 0);
  ck_assert_uint_gt(connected, 350);                         /* loss 0..30 %, 3 retries */
  ck_assert_uint_gt(failed, 0);                              /* the error path ran too */
}
END_TEST

Suite *suite_ibcm(void)
{
  Suite *s = suite_create("ibcm");
  TCase *t = tcase_create("ibcm");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, test_ibcm_encode_parse_round_trip);
  tcase_add_test(t, test_ibcm_field_table_fits);
  tcase_add_test(t, test_ibcm_known_bytes);
  tcase_add_test(t, test_ibcm_parse_rejects);
  tcase_add_test(t, test_ibcm_cma_mapping);
  tcase_add_test(t, test_ibcm_connect_accept_disconnect);
  tcase_add_test(t, test_ibcm_xv6_caps_negotiated);
  tcase_add_test(t, test_ibcm_rej_no_listener);
  tcase_add_test(t, test_ibcm_consumer_reject);
  tcase_add_test(t, test_ibcm_lost_req);
  tcase_add_test(t, test_ibcm_lost_rep);
  tcase_add_test(t, test_ibcm_lost_rtu_repeated_rep_answered);
  tcase_add_test(t, test_ibcm_established_before_rtu);
  tcase_add_test(t, test_ibcm_duplicate_req);
  tcase_add_test(t, test_ibcm_crossing_dreqs);
  tcase_add_test(t, test_ibcm_lost_drep_and_silent_peer);
  tcase_add_test(t, test_ibcm_req_retries_exhausted);
  tcase_add_test(t, test_ibcm_rep_retries_exhausted_and_mra);
  tcase_add_test(t, test_ibcm_stale_connection);
  tcase_add_test(t, test_ibcm_stale_qp);
  tcase_add_test(t, test_ibcm_bad_input_dropped);
  tcase_add_test(t, test_ibcm_req_flood_bounded);
  tcase_add_test(t, test_ibcm_release_established);
  tcase_add_test(t, test_ibcm_sidr_exchange);
  tcase_add_test(t, test_ibcm_many_timers_in_order);
  tcase_add_test(t, test_ibcm_seeded_races);
  suite_add_tcase(s, t);
  return s;
}
