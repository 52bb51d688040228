/*
 * test_mr_contract.c: the host MR backend (tests/host/host_mr.c) against
 * the rct_mr_ops contract: the shared case table (kernel/transport/mr_contract.h,
 * which the kernel's boot selftest runs through rdma_mr.c too) and the
 * registration rules of the table.
 */
#include "harness.h"
#include "mr_contract.h"

#define CONTRACT_PD 3u

struct host_side {
  struct mrc_side side;
  struct host_mr_table t;
  uint8_t *buf[MRC_NMR];
};

static uint8_t *host_addr(const struct mrc_side *s, int mr, uint64_t off)
{
  const struct host_side *h = (const struct host_side *)s;
  return h->buf[mr] + off;
}

/* The four MRs in CONTRACT_PD, keys 0x100 + 2i (lkey) and 0x101 + 2i (rkey). */
static void host_side_init(struct host_side *h)
{
  memset(h, 0, sizeof(*h));
  h->side = (struct mrc_side){ .ops = &host_mr_ops, .ctx = &h->t, .pd = CONTRACT_PD, .addr = host_addr };
  for (int i = 0; i < MRC_NMR; i++) {
    const struct mrc_mr *m = &mrc_mrs[i];
    h->buf[i] = malloc(m->len);
    h->side.lkey[i] = 0x100 + 2 * (uint32_t)i;
    h->side.rkey[i] = 0x101 + 2 * (uint32_t)i;
    ck_assert_ptr_nonnull(host_mr_reg(&h->t, h->side.lkey[i], h->side.rkey[i], CONTRACT_PD, m->va, m->len,
                                      m->access, h->buf[i]));
  }
}

static void host_side_free(struct host_side *h)
{
  for (int i = 0; i < MRC_NMR; i++)
    free(h->buf[i]);
}

START_TEST(test_mr_contract_cases)
{
  struct host_side h;
  host_side_init(&h);
  for (int i = 0; i < MRC_NCASES; i++) {
    const struct mrc_case *c = &mrc_cases[i];
    int got;
    const char *diff = mrc_run(&h.side, c, &got);
    ck_assert_msg(diff == NULL, "case %d \"%s\": %s differs (returned %d, expected %d)", i, c->what,
                  diff, got, c->expect);
  }
  host_side_free(&h);
}
END_TEST

/* The kernel's keys are unique among live keys and never 0; so are the table's. */
START_TEST(test_mr_contract_reg_refuses_bad_keys)
{
  struct host_side h;
  uint8_t b[16];
  host_side_init(&h);
  ck_assert_ptr_null(host_mr_reg(&h.t, 0, 0x900, CONTRACT_PD, 0x9000, 16, 0, b));
  ck_assert_ptr_null(host_mr_reg(&h.t, 0x900, 0x900, CONTRACT_PD, 0x9000, 16, 0, b));
  ck_assert_ptr_null(host_mr_reg(&h.t, 0x900, h.side.lkey[0], CONTRACT_PD, 0x9000, 16, 0, b));
  ck_assert_ptr_null(host_mr_reg(&h.t, h.side.rkey[1], 0x901, CONTRACT_PD, 0x9000, 16, 0, b));
  ck_assert_ptr_null(host_mr_reg(&h.t, 0x900, 0x901, CONTRACT_PD, 0x9000, 0, 0, b));
  ck_assert_ptr_null(host_mr_reg(&h.t, 0x900, 0x901, CONTRACT_PD, UINT64_MAX - 7, 16, 0, b));
  ck_assert_ptr_null(host_mr_reg(&h.t, 0x900, 0x901, CONTRACT_PD, 0x9000, 16, 0x10, b));
  ck_assert_ptr_nonnull(host_mr_reg(&h.t, 0x900, 0x901, CONTRACT_PD, 0x9000, 16, 0, b));
  host_side_free(&h);
}
END_TEST

/* A deregistered MR's keys are gone at once; the others still translate. */
START_TEST(test_mr_contract_dereg_forgets_keys)
{
  struct host_side h;
  struct rct_iov out[1];
  host_side_init(&h);
  ck_assert_int_eq(host_mr_dereg(&h.t, host_mr_find(&h.t, h.side.rkey[0], true)), 0);
  ck_assert_int_eq(host_mr_translate(&h.t, h.side.lkey[0], false, CONTRACT_PD, MRC_V0, 8, 0, out, 1),
                   RCT_MR_EKEY);
  ck_assert_int_eq(host_mr_translate(&h.t, h.side.rkey[0], true, CONTRACT_PD, MRC_V0, 8, 0, out, 1),
                   RCT_MR_EKEY);
  ck_assert_int_eq(host_mr_translate(&h.t, h.side.lkey[1], false, CONTRACT_PD, MRC_V1, 8, 0, out, 1), 1);
  ck_assert_int_eq(host_mr_dereg(&h.t, &h.t.mr[0]), -1);
  host_side_free(&h);
}
END_TEST

/* Every MR slot can be filled, and one more registration is refused. */
START_TEST(test_mr_contract_table_full)
{
  struct host_mr_table t;
  uint8_t b[16];
  host_mr_table_init(&t);
  for (uint32_t i = 0; i < HOST_MR_MAX; i++)
    ck_assert_ptr_nonnull(host_mr_reg(&t, 0x10 + 2 * i, 0x11 + 2 * i, 1, 0x1000 * i, 16, 0, b));
  ck_assert_ptr_null(host_mr_reg(&t, 0x900, 0x901, 1, 0x9000, 16, 0, b));
}
END_TEST

Suite *suite_mr_contract(void)
{
  Suite *s = suite_create("mr_contract");
  TCase *t = tcase_create("core");
  tcase_add_test(t, test_mr_contract_cases);
  tcase_add_test(t, test_mr_contract_reg_refuses_bad_keys);
  tcase_add_test(t, test_mr_contract_dereg_forgets_keys);
  tcase_add_test(t, test_mr_contract_table_full);
  suite_add_tcase(s, t);
  return s;
}
