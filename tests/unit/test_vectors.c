/*
 * test_vectors.c: our parser, encoder, ICRC and responder against real Linux
 * Soft-RoCE frames (the pcap files in tests/vectors/, relative to the repo root; the
 * directory can be overridden with RCT_VECTORS). A missing directory fails.
 *
 *  - every RoCE frame parses, its ICRC equals ours, its headers re-encode
 *    byte for byte, and the whole frame rebuilt by our encoder is identical;
 *  - responder replay: the requests of each capture are fed to one of our
 *    endpoints standing in for the responder, and every ACK / NAK / RNR NAK /
 *    READ response it sends equals rxe's frame byte for byte (IPv4 ID copied
 *    from the reference frame, as [ENC-IP-2] allows);
 *  - requester replay (rxe-imm-rnr-nak.pcap): our requester, given the same
 *    work requests, sends rxe's request frames byte for byte.
 */
#include "harness.h"
#include <dirent.h>

#define MAXF 4096

struct vframe {
  uint8_t *buf;
  uint32_t len;
  struct rct_pkt p;
};

static struct vframe vf[MAXF];
static int nvf;
static int vectors_frames_total, vectors_icrc_ok, vectors_hdr_ok, vectors_full_ok;
static int replay_matched, replay_expected;

static void report(void)
{
  if (vectors_frames_total)
    printf("vectors: %d RoCE frames, ICRC agreed %d, headers re-encoded %d, frames rebuilt %d; "
           "replayed frames matched %d/%d\n", vectors_frames_total, vectors_icrc_ok, vectors_hdr_ok,
           vectors_full_ok, replay_matched, replay_expected);
  fflush(stdout);
}


static uint32_t le32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

/* Tiny pcap reader: keeps RoCE frames only. Returns count of frames read. */
static int load_pcap(const char *path)
{
  FILE *f = fopen(path, "rb");
  uint8_t gh[24], rh[16];
  int total = 0;
  ck_assert_msg(f != NULL, "cannot open %s", path);
  ck_assert_int_eq(fread(gh, 1, 24, f), 24);
  ck_assert_msg(le32(gh) == 0xa1b2c3d4 || le32(gh) == 0xa1b23c4d, "not a little-endian pcap");
  ck_assert_uint_eq(le32(gh + 20), 1);      /* LINKTYPE_ETHERNET */
  nvf = 0;
  while (fread(rh, 1, 16, f) == 16) {
    uint32_t cl = le32(rh + 8);
    uint8_t *b = malloc(cl ? cl : 1);
    struct rct_pkt p;
    ck_assert_int_eq(fread(b, 1, cl, f), cl);
    total++;
    if (rct_wire_parse_base(&p, b, cl, false) == RCT_PARSE_NOT_ROCE) {
      free(b);
      continue;
    }
    ck_assert_int_lt(nvf, MAXF);
    ck_assert_int_eq(rct_wire_parse_ext(&p), RCT_PARSE_OK);
    vf[nvf].buf = b;
    vf[nvf].len = cl;
    vf[nvf].p = p;
    nvf++;
  }
  fclose(f);
  return total;
}

static void free_frames(void)
{
  for (int i = 0; i < nvf; i++)
    free(vf[i].buf);
  nvf = 0;
}

/* [RX-PARSE-1] [RX-PARSE-3] [ICRC-CALC-1] [ICRC-CALC-3] [HDR-BTH-1] [HDR-RETH-1]
 * [HDR-AETH-1] [HDR-IMM-1] [OPC-HDR-1] [ENC-ETH-1] [ENC-IP-1] [ENC-UDP-1] [ENC-UDP-2] [HDR-BTH-4] */
static void check_frames(const char *name)
{
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", vectors_dir(), name);
  load_pcap(path);
  ck_assert_msg(nvf > 0, "%s: no RoCE frames", path);
  for (int i = 0; i < nvf; i++) {
    struct rct_pkt *p = &vf[i].p;
    uint8_t out[8192];
    struct rct_hdr h;
    uint32_t hl, pad;
    struct rct_iov seg;
    uint8_t zeros[4] = { 0 };
    vectors_frames_total++;
    ck_assert_int_eq(rct_wire_parse_base(p, vf[i].buf, vf[i].len, false), RCT_PARSE_OK);
    ck_assert_msg(rct_wire_icrc_ok(p), "%s frame %d: ICRC mismatch", name, i);
    vectors_icrc_ok++;
    ck_assert_int_eq(rct_wire_parse_ext(p), RCT_PARSE_OK);
    ck_assert_uint_eq(p->udp_csum, 0);
    ck_assert(p->ip_flags_df);
    ck_assert_uint_eq(p->h.ttl, 64);
    /* re-encode the headers */
    h = p->h;
    hl = rct_wire_build(out, &h, p->paylen);
    ck_assert_uint_eq(hl, p->hdr_len);
    ck_assert_msg(memcmp(out, vf[i].buf, hl) == 0, "%s frame %d: header re-encode differs", name, i);
    vectors_hdr_ok++;
    /* rebuild the whole frame: payload, pad, our ICRC */
    pad = h.bth.padcnt;
    memcpy(out + hl, p->payload, p->paylen);
    memset(out + hl + p->paylen, 0, pad);
    seg.base = out + hl;
    seg.len = p->paylen;
    rct_wire_icrc_store(out + hl + p->paylen + pad,
                    rct_icrc_compute(out, hl, ETH_HLEN, RCT_ENCAP_V2, &seg, 1, zeros, pad));
    ck_assert_uint_eq(hl + p->paylen + pad + 4, p->frame_len);
    ck_assert_msg(memcmp(out, vf[i].buf, p->frame_len) == 0, "%s frame %d: rebuild differs", name, i);
    vectors_full_ok++;
    /* [ENC-UDP-2]: the source port is the flow label of the two QPNs */
    if (i + 1 < nvf && (p->opflags & OPF_REQ)) {
      for (int j = i + 1; j < nvf; j++)
        if (vf[j].p.h.sip == p->h.dip && (vf[j].p.opflags & OPF_RESP)) {
          ck_assert_uint_eq(p->h.sport, rct_udp_sport(p->h.bth.dqpn, vf[j].p.h.bth.dqpn));
          break;
        }
    }
  }
}

START_TEST(test_vectors_directory_present)
{
  DIR *d = opendir(vectors_dir());
  ck_assert_msg(d != NULL, "vectors directory %s is missing: run from the repository root "
                "or set RCT_VECTORS", vectors_dir());
  closedir(d);
}
END_TEST

START_TEST(test_vectors_perftest_frames)
{
  check_frames("rxe-perftest.pcap");
  ck_assert_int_eq(nvf, 240);
  report();
  free_frames();
}
END_TEST

START_TEST(test_vectors_imm_rnr_frames)
{
  check_frames("rxe-imm-rnr-nak.pcap");
  report();
  free_frames();
}
END_TEST

/* ---------------------------------------------------------------- */
/* Responder replay                                                  */
/* ---------------------------------------------------------------- */

/* Frames S sent as responder to the requester QP rq (ACK/NAK/READ response). */
static bool is_resp_from(const struct vframe *v, uint32_t s_ip, uint32_t r_qpn)
{
  return v->p.h.sip == s_ip && (v->p.opflags & OPF_RESP) && v->p.h.bth.dqpn == r_qpn;
}

static bool is_req_to(const struct vframe *v, uint32_t s_ip, uint32_t s_qpn)
{
  return v->p.h.dip == s_ip && (v->p.opflags & OPF_REQ) && v->p.h.bth.dqpn == s_qpn;
}

/* Is there a NAK remote access error at psn among the expected frames? */
static bool nak_acc_at(uint32_t s_ip, uint32_t r_qpn, uint32_t psn)
{
  for (int i = 0; i < nvf; i++)
    if (is_resp_from(&vf[i], s_ip, r_qpn) && (vf[i].p.opflags & OPF_ACK) &&
        vf[i].p.h.aeth.syndrome == AETH_NAK_REM_ACC && vf[i].p.h.bth.psn == psn)
      return true;
  return false;
}

/* Register MRs for every R_Key the requests use, READ contents from the responses. */
static void replay_mrs(struct ep *s, uint32_t s_ip, uint32_t s_qpn, uint32_t r_qpn)
{
  for (int i = 0; i < nvf; i++) {
    struct rct_pkt *p = &vf[i].p;
    struct host_mr *m;
    if (!is_req_to(&vf[i], s_ip, s_qpn) || !(p->opflags & OPF_RETH) || !p->h.reth.dmalen)
      continue;
    if (nak_acc_at(s_ip, r_qpn, p->h.bth.psn))
      continue;
    m = host_mr_find(&s->mrs, p->h.reth.rkey, true);
    if (!m)   /* the recorded R_Key; an lkey no frame carries */
      m = ep_reg_mr_keys(s, ~p->h.reth.rkey, p->h.reth.rkey, p->h.reth.va & ~0xfffull, 1 << 20,
                         RCT_ACCESS_REMOTE_WRITE | RCT_ACCESS_REMOTE_READ | RCT_ACCESS_LOCAL_WRITE);
    ck_assert(p->h.reth.va + p->h.reth.dmalen <= m->va + m->len);
    if (p->opflags & OPF_READ) {
      /* fill from the READ responses of this request */
      uint32_t n = (p->h.reth.dmalen + 1023) / 1024;
      for (int j = i + 1; j < nvf; j++) {
        struct rct_pkt *q = &vf[j].p;
        int32_t k = psn_diff(q->h.bth.psn, p->h.bth.psn);
        if (is_resp_from(&vf[j], s_ip, r_qpn) && (q->opflags & OPF_READ) && k >= 0 &&
            (uint32_t)k < n)
          memcpy(m->buf + (p->h.reth.va - m->va) + (uint32_t)k * 1024, q->payload, q->paylen);
      }
    }
  }
}

static void replay_responder(uint32_t s_ip, uint32_t s_qpn)
{
  struct ep s;
  struct conn_opts o;
  uint32_t r_ip = 0, r_qpn = 0, rq_psn = 0;
  int first = -1, exp_i = 0;
  uint8_t rmac[6], out[8192];
  struct host_mr *rbuf;
  for (int i = 0; i < nvf && first < 0; i++)
    if (is_req_to(&vf[i], s_ip, s_qpn))
      first = i;
  ck_assert_int_ge(first, 0);
  r_ip = vf[first].p.h.sip;
  memcpy(rmac, vf[first].p.h.smac, 6);
  rq_psn = vf[first].p.h.bth.psn;
  for (int i = first; i < nvf && !r_qpn; i++)
    if (vf[i].p.h.sip == s_ip && (vf[i].p.opflags & OPF_RESP))
      r_qpn = vf[i].p.h.bth.dqpn;
  ck_assert_uint_ne(r_qpn, 0);

  ep_init(&s, vf[first].p.h.dmac, s_ip, s_qpn, 0);
  conn_defaults(&o);
  o.rd_atomic = 16;
  o.min_rnr_timer = 12;
  ep_connect(&s, rmac, r_ip, r_qpn, rq_psn, 0x000001, &o);
  replay_mrs(&s, s_ip, s_qpn, r_qpn);
  rbuf = ep_reg_mr(&s, 0x7000000, 64 * 8192, RCT_ACCESS_LOCAL_WRITE);

  for (int i = first; i < nvf; i++) {
    int tries = 0;
    if (!is_req_to(&vf[i], s_ip, s_qpn))
      continue;
again:
    if (rct_handle_frame(&s.dev, 0, vf[i].buf, vf[i].len) != RCT_RX_OK)
      ck_assert_int_eq(s.qp.base.attr.qp_state, RCT_QPS_ERR);   /* after the NAK [QP-ERR-3] */
    for (;;) {
      struct rct_frame f;
      int n;
      while (exp_i < nvf && !is_resp_from(&vf[exp_i], s_ip, r_qpn))
        exp_i++;
      if (exp_i < nvf)
        s.dev.ip_id = vf[exp_i].p.h.ip_id;
      if (!rct_poll_transmit(&s.qp, 0, &f))
        break;
      n = rct_frame_linearize(&f, out, sizeof(out));
      ck_assert_msg(exp_i < nvf, "responder sent an extra frame (opcode %x psn %x)", f.opcode, f.psn);
      if ((out[54] & 0xe0) == 0x20 && f.opcode == OP_ACK &&
          (vf[exp_i].p.h.aeth.syndrome & 0xe0) != 0x20) {
        /* rxe's application had a receive posted here: post one, resend */
        ck_assert_int_lt(tries++, 1);
        ck_assert_int_eq(post_recv(&s, 0x1000 + (uint64_t)i, rbuf, (uint32_t)(i % 64) * 8192, 8192),
                         RCT_OK);
        s.qp.base.cnt.tx_rnr_nak--;
        goto again;
      }
      replay_expected++;
      ck_assert_msg((uint32_t)n == vf[exp_i].p.frame_len && memcmp(out, vf[exp_i].buf, (size_t)n) == 0,
                    "responder frame for request %d differs from capture (ours opcode %x psn %x "
                    "syn %x; rxe opcode %x psn %x syn %x msn %u)", i, f.opcode, f.psn, out[54],
                    vf[exp_i].p.h.bth.opcode, vf[exp_i].p.h.bth.psn, vf[exp_i].p.h.aeth.syndrome,
                    vf[exp_i].p.h.aeth.msn);
      replay_matched++;
      exp_i++;
    }
  }
  while (exp_i < nvf && !is_resp_from(&vf[exp_i], s_ip, r_qpn))
    exp_i++;
  ck_assert_msg(exp_i == nvf, "responder did not send every frame rxe sent (next expected #%d)", exp_i);
  ep_free(&s);
}

/* [RESP-ACK-1] [RESP-MSN-1] [RESP-READ-1] [RESP-RECV-2] [RESP-OOS-1]
 * [RESP-OOS-3] [HDR-AETH-2] [HDR-AETH-3] [HDR-AETH-4] [RESP-ACC-1] [ENC-UDP-2] [ENC-IP-1] */
START_TEST(test_vectors_responder_replay_perftest)
{
  char path[512];
  uint32_t qpns[8];
  int nq = 0;
  snprintf(path, sizeof(path), "%s/rxe-perftest.pcap", vectors_dir());
  load_pcap(path);
  for (int i = 0; i < nvf; i++) {
    bool seen = false;
    if (!(vf[i].p.opflags & OPF_REQ))
      continue;
    for (int k = 0; k < nq; k++)
      seen |= qpns[k] == vf[i].p.h.bth.dqpn;
    if (!seen)
      qpns[nq++] = vf[i].p.h.bth.dqpn;
  }
  ck_assert_int_eq(nq, 3);
  for (int k = 0; k < nq; k++)
    replay_responder(IP_B, qpns[k]);
  report();
  free_frames();
}
END_TEST

START_TEST(test_vectors_responder_replay_imm_rnr)
{
  char path[512];
  snprintf(path, sizeof(path), "%s/rxe-imm-rnr-nak.pcap", vectors_dir());
  load_pcap(path);
  replay_responder(IP_B, 0x11);
  report();
  free_frames();
}
END_TEST

/* ---------------------------------------------------------------- */
/* Requester replay (rxe-imm-rnr-nak.pcap)                           */
/* ---------------------------------------------------------------- */

/* [REQ-PSN-1] [REQ-FRAG-1] [OPC-SEQ-1] [REQ-ACKREQ-1] [REQ-PSN-3] [REQ-RNR-1] [REQ-RNR-3]
 * [HDR-IMM-1] [HDR-RETH-1] [ENC-UDP-2] */
START_TEST(test_vectors_requester_replay_imm_rnr)
{
  char path[512];
  struct ep a;
  struct conn_opts o;
  struct host_mr *src;
  uint8_t out[8192];
  int next = 0, msgs = 0;
  uint64_t now = 0;
  snprintf(path, sizeof(path), "%s/rxe-imm-rnr-nak.pcap", vectors_dir());
  load_pcap(path);
  ep_init(&a, MAC_A, IP_A, 0x11, 0);
  conn_defaults(&o);
  o.timeout = 14;
  ep_connect(&a, MAC_B, IP_B, 0x11, 0x123456, 0x123456, &o);
  src = ep_reg_mr(&a, 0x10000, 1 << 16, RCT_ACCESS_LOCAL_WRITE);
  /* Walk the capture: when A starts a new message, post the same WR. */
  while (next < nvf) {
    struct vframe *v = &vf[next];
    struct rct_pkt *p = &v->p;
    if (p->h.sip == IP_B) {                       /* B's answer: give it to A */
      rct_handle_frame(&a.dev, now, v->buf, v->len);
      next++;
      continue;
    }
    if (p->opflags & OPF_FIRST && psn_ge(p->h.bth.psn, a.qp.req.next_psn)) {
      /* new message: reconstruct its WR from the capture */
      uint32_t len = 0, op = p->h.bth.opcode;
      enum rct_wr_opcode wop;
      for (int j = next; j < nvf; j++) {
        if (vf[j].p.h.sip != IP_A)
          continue;
        memcpy(src->buf + len, vf[j].p.payload, vf[j].p.paylen);
        len += vf[j].p.paylen;
        if (vf[j].p.opflags & OPF_LAST) {
          if (vf[j].p.opflags & OPF_IMM)
            wop = (vf[j].p.opflags & OPF_SEND) ? RCT_WR_SEND_WITH_IMM : RCT_WR_RDMA_WRITE_WITH_IMM;
          else
            wop = (vf[j].p.opflags & OPF_SEND) ? RCT_WR_SEND : RCT_WR_RDMA_WRITE;
          if (op == OP_READ_REQ) {
            wop = RCT_WR_RDMA_READ;
            len = p->h.reth.dmalen;
          }
          ck_assert_int_eq(post_send(&a, (uint64_t)msgs, wop, src, 0, len, p->h.reth.va,
                                     p->h.reth.rkey, vf[j].p.h.imm), RCT_OK);
          break;
        }
      }
      msgs++;
    }
    /* A must now send exactly this frame (maybe after its RNR timer) */
    a.dev.ip_id = p->h.ip_id;
    {
      struct rct_frame f;
      int got = rct_poll_transmit(&a.qp, now, &f), n;
      if (!got) {
        uint64_t t = rct_next_timeout(&a.qp);
        ck_assert_msg(t != RCT_NEVER, "A idle but capture frame %d expected", next);
        now = t;
        rct_handle_timeout(&a.qp, now);
        a.dev.ip_id = p->h.ip_id;
        got = rct_poll_transmit(&a.qp, now, &f);
      }
      ck_assert_msg(got, "A sent nothing for capture frame %d", next);
      n = rct_frame_linearize(&f, out, sizeof(out));
      ck_assert_msg((uint32_t)n == p->frame_len && memcmp(out, v->buf, (size_t)n) == 0,
                    "requester frame %d differs (ours opcode %x psn %x, rxe opcode %x psn %x)",
                    next, f.opcode, f.psn, p->h.bth.opcode, p->h.bth.psn);
      replay_matched++;
      replay_expected++;
    }
    next++;
  }
  ck_assert_int_eq(msgs, 5);
  /* the wrong-rkey WRITE: REM_ACCESS_ERR, QP in ERR */
  {
    struct rct_wc wc;
    int ok = 0, err = 0;
    while (cq_pop(&a.scq, &wc)) {
      if (wc.status == RCT_WC_SUCCESS)
        ok++;
      else {
        ck_assert_int_eq(wc.status, RCT_WC_REM_ACCESS_ERR);
        err++;
      }
    }
    ck_assert_int_eq(ok, 4);
    ck_assert_int_eq(err, 1);
    ck_assert_int_eq(a.qp.base.attr.qp_state, RCT_QPS_ERR);
  }
  ep_free(&a);
  report();
  free_frames();
}
END_TEST

/* ---------------------------------------------------------------- */
/* UD (ud/rxe-ud.pcap: Linux rxe UD SENDs between two guests; the     */
/* frame table is in tests/vectors/README.md)                         */
/* ---------------------------------------------------------------- */

#define UD_PCAP "ud/rxe-ud.pcap"
#define UD_FRAME(n) (&vf[(n) - 3])   /* the README's frame n (1, 2 are ARP) */

/* [UD-WIRE-1] [UD-PSN-1] [UD-QKEY-1]: every frame parses, its ICRC agrees and our encoder
 * rebuilds its bytes from the parsed fields (check_frames); the DETH fields are the README's. */
START_TEST(test_vectors_ud_frames)
{
  static const struct { int n; uint8_t op; uint32_t dqpn, qkey, srcqp, len; } t[] = {
    { 3, 0x64, 0x11, 0x11111111, 0x21, 16 }, { 4, 0x64, 0x21, 0x11111111, 0x11, 16 },
    { 7, 0x64, 0x11, 0x11111111, 0x22, 1024 }, { 11, 0x65, 0x11, 0x11111111, 0x23, 64 },
    { 15, 0x64, 0x12, 0x22222222, 0x24, 32 }, { 19, 0x64, 0x25, 0x0badcafe, 0x12, 32 },
  };
  check_frames(UD_PCAP);
  ck_assert_int_eq(nvf, 17);
  for (int i = 0; i < nvf; i++)
    ck_assert_msg(vf[i].p.opflags & OPF_UD, "frame %d: not UD", i + 3);
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    const struct rct_pkt *p = &UD_FRAME(t[i].n)->p;
    ck_assert_uint_eq(p->h.bth.opcode, t[i].op);
    ck_assert_uint_eq(p->h.bth.dqpn, t[i].dqpn);
    ck_assert_uint_eq(p->h.deth.qkey, t[i].qkey);
    ck_assert_uint_eq(p->h.deth.srcqp, t[i].srcqp);
    ck_assert_uint_eq(p->h.deth.resv, 0);
    ck_assert_uint_eq(p->paylen, t[i].len);
  }
  ck_assert_uint_eq(UD_FRAME(11)->p.h.imm, 0xc0de0000);
  ck_assert_uint_eq(UD_FRAME(5)->p.h.bth.psn, (UD_FRAME(3)->p.h.bth.psn + 1) & 0xffffff);
  report();
  free_frames();
}
END_TEST

/* ---------------------------------------------------------------- */
/* Atomics (atomic/rxe-atomic.pcap: rxe's atomic frames of the interop */
/* matrix, tests/vectors/README.md)                                    */
/* ---------------------------------------------------------------- */

/* The matrix's values (user/lib/ibverbs/matrix_atomic.h): round 36 is its
 * CMP_AND_SWP case, 37 its FETCH_AND_ADD. */
#define MX_OLD(r) (0x8877665544332211ull ^ ((uint64_t)(r) << 40))
#define MX_ADD(r) (0x0000000100000001ull * (r) + 0xff)

/* [HDR-ATOM-1] [HDR-ATOM-2] [HDR-ATOM-3] [OPC-HDR-1]: rxe's COMPARE SWAP, FETCH ADD and
 * ATOMIC ACKNOWLEDGEs parse, their ICRCs agree, our encoder rebuilds them byte for byte
 * (check_frames), and the fields hold the matrix's values: the operands as the requester's
 * integers, the original value as the responder's. */
START_TEST(test_vectors_atomic_frames)
{
  const struct rct_pkt *cas, *faa;
  check_frames("atomic/rxe-atomic.pcap");
  ck_assert_int_eq(nvf, 4);
  cas = &vf[0].p;
  faa = &vf[1].p;
  ck_assert_uint_eq(cas->h.bth.opcode, OP_CMP_SWAP);
  ck_assert_uint_eq(faa->h.bth.opcode, OP_FETCH_ADD);
  ck_assert(cas->h.atom.compare == MX_OLD(36) && cas->h.atom.swap_add == ~MX_OLD(36));
  ck_assert(faa->h.atom.swap_add == MX_ADD(37) && faa->h.atom.compare == 0);
  ck_assert(cas->h.atom.va == faa->h.atom.va && (cas->h.atom.va & 7) == 0 && cas->h.atom.rkey == faa->h.atom.rkey);
  ck_assert(cas->h.bth.ackreq && faa->h.bth.ackreq);
  for (int i = 2; i < 4; i++) {
    const struct rct_pkt *a = &vf[i].p;
    ck_assert_uint_eq(a->h.bth.opcode, OP_ATOMIC_ACK);
    ck_assert_uint_eq(a->h.aeth.syndrome & AETH_KIND_MASK, AETH_ACK);
    ck_assert(a->h.atom_orig == MX_OLD(34 + i));
    ck_assert_uint_eq(a->paylen, 0);
  }
  report();
  free_frames();
}
END_TEST

static struct rct_qp_base *ud_vec_lookup(void *ctx, uint32_t qpn)
{
  struct rct_ud_qp *qp = ctx;
  return qpn == qp->base.init.qpn ? &qp->base : NULL;
}

/* [UD-QKEY-1] [UD-RECV-2] [UD-RX-1]: rxe's frames to A's second server (QPN 0x12, Q_Key
 * 0x0badcafe) taken by a UD QP of ours in its place: the wrong Q_Key dropped and counted, the
 * right one received with its GRH area, source QPN and payload. */
START_TEST(test_vectors_ud_receive)
{
  static struct rct_ud_qp qp;
  static struct rct_send_wqe sq[4];
  static struct rct_recv_wqe rq[4];
  static struct rct_wc wcs[8];
  static uint8_t mem[4096];
  struct host_mr_table mrs;
  struct rct_dev dev;
  struct rct_cq cq;
  struct rct_wc wc;
  struct rct_dev_attr da = { .mac = { 0x52, 0x54, 0, 0, 0, 0x02 }, .ipv4 = 0x0a000002, .ip_mtu = 1500,
                             .mr_ops = &host_mr_ops, .mr_ctx = &mrs, .qp_lookup_any = ud_vec_lookup,
                             .lookup_ctx = &qp };
  struct rct_qp_init_attr ia = { .qpn = 0x12, .pd = 1, .sq = sq, .sq_size = 4, .rq = rq, .rq_size = 4,
                                 .send_cq = &cq, .recv_cq = &cq };
  struct rct_qp_attr a = { .qp_state = RCT_QPS_INIT, .port_num = RCT_PORT_NUM, .pkey_index = RCT_PKEY_INDEX,
                           .qkey = 0x0badcafe };
  struct rct_sge sge = { .addr = 0, .length = sizeof(mem), .lkey = 0x10 };
  struct rct_recv_wr rwr = { .wr_id = 77, .sg_list = &sge, .num_sge = 1 };
  struct vframe *bad, *good;
  char path[512];
  memset(&mrs, 0, sizeof(mrs));
  ck_assert_ptr_nonnull(host_mr_reg(&mrs, 0x10, 0x20, 1, 0, sizeof(mem), RCT_ACCESS_LOCAL_WRITE, mem));
  rct_dev_init(&dev, &da);
  rct_cq_init(&cq, wcs, 8);
  ck_assert_int_eq(rct_ud_qp_init(&dev, &qp, &ia), RCT_OK);
  ck_assert_int_eq(rct_qpb_modify(&qp.base, &a, RCT_QP_STATE | RCT_QP_PORT | RCT_QP_PKEY_INDEX | RCT_QP_QKEY),
                   RCT_OK);
  a.qp_state = RCT_QPS_RTR;
  ck_assert_int_eq(rct_qpb_modify(&qp.base, &a, RCT_QP_STATE), RCT_OK);
  ck_assert_int_eq(rct_qpb_post_recv(&qp.base, &rwr), RCT_OK);
  snprintf(path, sizeof(path), "%s/%s", vectors_dir(), UD_PCAP);
  load_pcap(path);
  bad = UD_FRAME(15);
  good = UD_FRAME(16);
  ck_assert_int_eq(rct_handle_frame(&dev, 0, bad->buf, bad->len), RCT_RX_DROPPED);
  ck_assert_uint_eq(qp.base.cnt.rx_bad_qkey, 1);
  ck_assert_int_eq(rct_handle_frame(&dev, 0, good->buf, good->len), RCT_RX_OK);   /* ICRC checked */
  ck_assert_int_eq(rct_poll_cq(&cq, &wc, 1), 1);
  ck_assert_int_eq(wc.status, RCT_WC_SUCCESS);
  ck_assert_uint_eq(wc.wr_id, 77);
  ck_assert_uint_eq(wc.src_qp, 0x25);
  ck_assert_uint_eq(wc.byte_len, 40 + 32);
  ck_assert_uint_eq(wc.wc_flags, RCT_WC_GRH);
  ck_assert_mem_eq(mem + 20, good->buf + ETH_HLEN, IPV4_HLEN);
  ck_assert_mem_eq(mem + 40, good->p.payload, 32);
  free_frames();
}
END_TEST

Suite *suite_vectors(void)
{
  Suite *s = suite_create("vectors");
  TCase *t = tcase_create("rxe");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, test_vectors_directory_present);
  tcase_add_test(t, test_vectors_perftest_frames);
  tcase_add_test(t, test_vectors_imm_rnr_frames);
  tcase_add_test(t, test_vectors_responder_replay_perftest);
  tcase_add_test(t, test_vectors_responder_replay_imm_rnr);
  tcase_add_test(t, test_vectors_requester_replay_imm_rnr);
  tcase_add_test(t, test_vectors_ud_frames);
  tcase_add_test(t, test_vectors_ud_receive);
  tcase_add_test(t, test_vectors_atomic_frames);
  suite_add_tcase(s, t);
  return s;
}
