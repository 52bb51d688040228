/*
 * test_rmem_wire.c: the remote-memory control-message codec
 * (kernel/rmem/rmem_wire.c) of proto-spec rmem.md: the field table, known
 * bytes of each message, round trips, what a memory node answers to a
 * malformed request and what a client drops. [RMEM-MSG-*] [RMEM-ERR-1]
 */
#include "harness.h"
#include "rmem_wire.h"

/* Every field lies inside its messages, and no two fields one message
 * carries overlap. [RMEM-MSG-1] [RMEM-MSG-3] */
START_TEST(test_rmem_field_table_fits)
{
  for (int reply = 0; reply < 2; reply++)
    for (int op = 1; op <= RMEM_OP_MAX; op++) {
      uint8_t used[RMEM_REP_LEN] = { 0 };
      unsigned len = reply ? RMEM_REP_LEN : RMEM_REQ_LEN;
      for (int i = 0; i < rmem_field_count(); i++) {
        const char *name;
        uint8_t off, width, rq, rp;
        ck_assert_int_eq(rmem_field_info(i, &name, &off, &width, &rq, &rp), 0);
        if (!((reply ? rp : rq) & (1u << (op - 1))))
          continue;
        ck_assert_msg(off + width <= len, "%s outside the %s", name, reply ? "reply" : "request");
        for (int b = off; b < off + width; b++) {
          ck_assert_msg(!used[b], "%s overlaps at byte %d of op %d", name, b, op);
          used[b] = 1;
        }
      }
    }
  const char *name;
  uint8_t a, b, c, d;
  ck_assert_int_eq(rmem_field_info(rmem_field_count(), &name, &a, &b, &c, &d), -1);
}
END_TEST

/* The bytes of an ALLOC request and its reply, by hand. [RMEM-MSG-2] [RMEM-MSG-3] */
START_TEST(test_rmem_known_bytes)
{
  uint8_t req[RMEM_REQ_LEN], rep[RMEM_REP_LEN];
  struct rmem_msg m = rmem_request(RMEM_OP_ALLOC, 0x01020304);
  m.size = 0x1122334455667788ull;
  ck_assert_int_eq(rmem_encode_req(&m, req), RMEM_REQ_LEN);
  static const uint8_t want_req[RMEM_REQ_LEN] = {
    'R', 'M', 'E', 'M', 1, 1, 0, 0, 1, 2, 3, 4, 0, 0, 0, 0,
    0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
  };
  ck_assert_mem_eq(req, want_req, RMEM_REQ_LEN);

  struct rmem_msg r = rmem_reply(&m, RMEM_OK);
  r.region = 7;
  r.addr = 0x0000003fc0001000ull;
  r.length = 0x2000;
  r.rkey = 0xdeadbeef;
  ck_assert_int_eq(rmem_encode_rep(&r, rep), RMEM_REP_LEN);
  static const uint8_t want_rep[RMEM_REP_LEN] = {
    'R', 'M', 'E', 'M', 1, 1, 0, 0, 1, 2, 3, 4, 0, 0, 0, 7,
    0, 0, 0, 0x3f, 0xc0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0x20, 0,
    0xde, 0xad, 0xbe, 0xef,
  };
  ck_assert_mem_eq(rep, want_rep, RMEM_REP_LEN);
}
END_TEST

/* Each op's request and reply decode to what was encoded; fields another
 * op carries do not travel (reserved bytes are 0). [RMEM-MSG-1] [RMEM-MSG-3] [RMEM-MSG-4] */
START_TEST(test_rmem_round_trip)
{
  for (int op = 1; op <= RMEM_OP_MAX; op++) {
    uint8_t req[RMEM_REQ_LEN], rep[RMEM_REP_LEN];
    struct rmem_msg m = rmem_request((uint8_t)op, 0xfedcba98u + (uint32_t)op), d;
    m.size = 12345;
    m.region = 42;
    ck_assert_int_eq(rmem_encode_req(&m, req), RMEM_REQ_LEN);
    ck_assert_int_eq(rmem_decode_req(req, sizeof(req), &d), RMEM_OK);
    ck_assert_uint_eq(d.op, op);
    ck_assert_uint_eq(d.req_id, m.req_id);
    ck_assert_uint_eq(d.size, op == RMEM_OP_ALLOC ? 12345 : 0);
    ck_assert_uint_eq(d.region, op == RMEM_OP_FREE ? 42 : 0);

    struct rmem_msg r = rmem_reply(&d, RMEM_OK), e;
    r.region = 9, r.addr = 0x1000, r.length = 0x3000, r.rkey = 0x89abcdefu;
    r.nregions = 3, r.used = 1 << 20, r.limit = 8 << 20, r.pool_free = 5 << 20;
    ck_assert_int_eq(rmem_encode_rep(&r, rep), RMEM_REP_LEN);
    ck_assert_int_eq(rmem_decode_rep(rep, sizeof(rep), &e), 0);
    ck_assert_uint_eq(e.req_id, m.req_id);
    ck_assert_uint_eq(e.op, op);
    ck_assert_uint_eq(e.status, RMEM_OK);
    ck_assert_uint_eq(e.rkey, op == RMEM_OP_ALLOC ? 0x89abcdefu : 0);
    ck_assert_uint_eq(e.addr, op == RMEM_OP_ALLOC ? 0x1000 : 0);
    ck_assert_uint_eq(e.region, op == RMEM_OP_STAT ? 0 : 9);
    ck_assert_uint_eq(e.nregions, op == RMEM_OP_STAT ? 3 : 0);
    ck_assert_uint_eq(e.pool_free, op == RMEM_OP_STAT ? 5 << 20 : 0);
  }
}
END_TEST

/* A FREE's error reply echoes the region and req_id and carries nothing
 * else. [RMEM-MSG-3] [RMEM-MSG-4] */
START_TEST(test_rmem_error_reply_echoes)
{
  struct rmem_msg m = rmem_request(RMEM_OP_FREE, 77), e;
  m.region = 5;
  struct rmem_msg r = rmem_reply(&m, RMEM_EBADID);
  uint8_t rep[RMEM_REP_LEN];
  ck_assert_int_eq(rmem_encode_rep(&r, rep), RMEM_REP_LEN);
  ck_assert_int_eq(rmem_decode_rep(rep, sizeof(rep), &e), 0);
  ck_assert_uint_eq(e.status, RMEM_EBADID);
  ck_assert_uint_eq(e.req_id, 77);
  ck_assert_uint_eq(e.region, 5);
  for (int i = 16; i < RMEM_REP_LEN; i++)
    ck_assert_uint_eq(rep[i], 0);
}
END_TEST

/* What a memory node answers to a malformed request, with req_id echoed
 * where the bytes hold it. [RMEM-MSG-5] */
START_TEST(test_rmem_decode_req_rejects)
{
  uint8_t good[RMEM_REQ_LEN], bad[RMEM_REQ_LEN + 1];
  struct rmem_msg m = rmem_request(RMEM_OP_STAT, 0x55aa55aa), d;
  ck_assert_int_eq(rmem_encode_req(&m, good), RMEM_REQ_LEN);

  memcpy(bad, good, sizeof(good));
  ck_assert_int_eq(rmem_decode_req(bad, RMEM_REQ_LEN - 1, &d), RMEM_EBADREQ);   /* short */
  ck_assert_uint_eq(d.req_id, 0x55aa55aa);
  bad[RMEM_REQ_LEN] = 0;
  ck_assert_int_eq(rmem_decode_req(bad, RMEM_REQ_LEN + 1, &d), RMEM_EBADREQ);   /* long */
  ck_assert_int_eq(rmem_decode_req(bad, 6, &d), RMEM_EBADREQ);   /* no req_id */
  ck_assert_uint_eq(d.req_id, 0);
  ck_assert_uint_eq(d.op, RMEM_OP_STAT);
  ck_assert_int_eq(rmem_decode_req(bad, 0, &d), RMEM_EBADREQ);

  bad[0] ^= 1;                                                   /* magic */
  ck_assert_int_eq(rmem_decode_req(bad, RMEM_REQ_LEN, &d), RMEM_EBADREQ);
  memcpy(bad, good, sizeof(good));
  bad[4] = 2;                                                    /* version */
  ck_assert_int_eq(rmem_decode_req(bad, RMEM_REQ_LEN, &d), RMEM_EBADVER);
  ck_assert_uint_eq(d.req_id, 0x55aa55aa);
  memcpy(bad, good, sizeof(good));
  bad[5] = 0;                                                    /* op */
  ck_assert_int_eq(rmem_decode_req(bad, RMEM_REQ_LEN, &d), RMEM_EBADREQ);
  bad[5] = RMEM_OP_MAX + 1;
  ck_assert_int_eq(rmem_decode_req(bad, RMEM_REQ_LEN, &d), RMEM_EBADREQ);
  memcpy(bad, good, sizeof(good));
  bad[7] = 1;                                                    /* status */
  ck_assert_int_eq(rmem_decode_req(bad, RMEM_REQ_LEN, &d), RMEM_EBADREQ);
  memcpy(bad, good, sizeof(good));
  bad[31] = 0xff;                                                /* reserved: ignored */
  ck_assert_int_eq(rmem_decode_req(bad, RMEM_REQ_LEN, &d), RMEM_OK);

  struct rmem_msg unknown = rmem_request(RMEM_OP_MAX + 1, 1);
  ck_assert_int_eq(rmem_encode_req(&unknown, bad), -1);
}
END_TEST

/* A client drops a reply of another length, magic, version, or an unknown
 * op with RMEM_OK; an error reply echoing an unknown op is the header
 * alone and decodes. [RMEM-MSG-5] */
START_TEST(test_rmem_decode_rep_rejects)
{
  uint8_t good[RMEM_REP_LEN], bad[RMEM_REP_LEN];
  struct rmem_msg m = rmem_request(RMEM_OP_ALLOC, 3), d;
  struct rmem_msg r = rmem_reply(&m, RMEM_ENOMEM);
  ck_assert_int_eq(rmem_encode_rep(&r, good), RMEM_REP_LEN);
  ck_assert_int_eq(rmem_decode_rep(good, RMEM_REP_LEN, &d), 0);
  ck_assert_uint_eq(d.status, RMEM_ENOMEM);
  ck_assert_int_eq(rmem_decode_rep(good, RMEM_REP_LEN - 1, &d), -1);
  ck_assert_int_eq(rmem_decode_rep(good, RMEM_REQ_LEN, &d), -1);
  r.status = RMEM_OK;
  ck_assert_int_eq(rmem_encode_rep(&r, good), RMEM_REP_LEN);
  const int at[] = { 0, 4, 5 };
  for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
    memcpy(bad, good, sizeof(good));
    bad[at[i]] = 0x7f;
    ck_assert_int_eq(rmem_decode_rep(bad, RMEM_REP_LEN, &d), -1);
  }

  struct rmem_msg unknown = rmem_request(0x7f, 99);
  unknown.size = 1;
  struct rmem_msg e = rmem_reply(&unknown, RMEM_EBADREQ);
  e.addr = 0x1234;                                     /* no field of an unknown op travels */
  ck_assert_int_eq(rmem_encode_rep(&e, bad), RMEM_REP_LEN);
  for (int i = RMEM_HDR_LEN; i < RMEM_REP_LEN; i++)
    ck_assert_uint_eq(bad[i], 0);
  ck_assert_int_eq(rmem_decode_rep(bad, RMEM_REP_LEN, &d), 0);
  ck_assert_uint_eq(d.op, 0x7f);
  ck_assert_uint_eq(d.req_id, 99);
  ck_assert_uint_eq(d.status, RMEM_EBADREQ);
}
END_TEST

/* Lengths round up to whole pages; 0 and above the largest region are out
 * of range. [RMEM-OP-1] */
START_TEST(test_rmem_round_len)
{
  ck_assert_uint_eq(rmem_round_len(0), 0);
  ck_assert_uint_eq(rmem_round_len(1), RMEM_PAGE);
  ck_assert_uint_eq(rmem_round_len(RMEM_PAGE), RMEM_PAGE);
  ck_assert_uint_eq(rmem_round_len(RMEM_PAGE + 1), 2 * RMEM_PAGE);
  ck_assert_uint_eq(rmem_round_len(RMEM_MAX_REGION), RMEM_MAX_REGION);
  ck_assert_uint_eq(rmem_round_len(RMEM_MAX_REGION + 1), 0);
  ck_assert_uint_eq(rmem_round_len(UINT64_MAX), 0);
}
END_TEST

/* Every status and op has a name; the values are the spec's. [RMEM-ERR-1] */
START_TEST(test_rmem_status_names)
{
  static const struct { int status; const char *name; } want[] = {
    { 0, "RMEM_OK" }, { 1, "RMEM_EBADREQ" }, { 2, "RMEM_EBADVER" }, { 3, "RMEM_EBADID" },
    { 4, "RMEM_ERANGE" }, { 5, "RMEM_ENOMEM" }, { 6, "RMEM_ELIMIT" },
  };
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    ck_assert_str_eq(rmem_status_name(want[i].status), want[i].name);
    ck_assert_str_ne(rmem_strerror(want[i].status), "unknown status");
  }
  ck_assert_str_eq(rmem_status_name(RMEM_STATUS_MAX + 1), "?");
  ck_assert_str_eq(rmem_strerror(-1), "unknown status");
  ck_assert_str_eq(rmem_op_name(RMEM_OP_ALLOC), "ALLOC");
  ck_assert_str_eq(rmem_op_name(RMEM_OP_FREE), "FREE");
  ck_assert_str_eq(rmem_op_name(RMEM_OP_STAT), "STAT");
  ck_assert_str_eq(rmem_op_name(0), "?");
}
END_TEST

Suite *suite_rmem_wire(void)
{
  Suite *s = suite_create("rmem_wire");
  TCase *t = tcase_create("rmem_wire");
  tcase_add_test(t, test_rmem_field_table_fits);
  tcase_add_test(t, test_rmem_known_bytes);
  tcase_add_test(t, test_rmem_round_trip);
  tcase_add_test(t, test_rmem_error_reply_echoes);
  tcase_add_test(t, test_rmem_decode_req_rejects);
  tcase_add_test(t, test_rmem_decode_rep_rejects);
  tcase_add_test(t, test_rmem_round_len);
  tcase_add_test(t, test_rmem_status_names);
  suite_add_tcase(s, t);
  return s;
}
