/*
 * test_psn.c: 24-bit PSN arithmetic (psn.h), especially at the wrap.
 */
#include "harness.h"

/* [PSN-ARITH-1] addition is modulo 2^24 */
START_TEST(test_psn_add_wraps)
{
  ck_assert_uint_eq(psn_add(0xffffff, 1), 0);
  ck_assert_uint_eq(psn_add(0xfffffe, 5), 3);
  ck_assert_uint_eq(psn_add(5, PSN_MASK), 4);      /* + (2^24 - 1) is - 1 */
}
END_TEST

/* [PSN-ARITH-1] psn_prev is the PSN before, modulo 2^24 */
START_TEST(test_psn_prev_wraps)
{
  ck_assert_uint_eq(psn_prev(5), 4);
  ck_assert_uint_eq(psn_prev(0), 0xffffff);
  ck_assert_uint_eq(psn_add(psn_prev(0x123456), 1), 0x123456);
  ck_assert_int_eq(psn_diff(psn_prev(0), 0), -1);
}
END_TEST

/* [PSN-ARITH-2] psn_diff is the signed distance in [-2^23, 2^23) */
START_TEST(test_psn_diff_range)
{
  ck_assert_int_eq(psn_diff(0, 0xffffff), 1);
  ck_assert_int_eq(psn_diff(0xffffff, 0), -1);
  ck_assert_int_eq(psn_diff(0x7fffff, 0), 0x7fffff);
  ck_assert_int_eq(psn_diff(0x800000, 0), -0x800000);
  ck_assert_int_eq(psn_diff(2, 0xfffffd), 5);
  for (uint32_t a = 0xfffff0; a != 0x10; a = psn_add(a, 1))
    for (int32_t n = -100; n <= 100; n++)
      ck_assert_int_eq(psn_diff(psn_add(a, (uint32_t)n), a), n);
}
END_TEST

/* [PSN-ARITH-3] ordering only through psn_diff, across the wrap */
START_TEST(test_psn_compare_across_wrap)
{
  ck_assert(psn_lt(0xfffffe, 1));
  ck_assert(psn_gt(1, 0xfffffe));
  ck_assert(psn_le(7, 7) && psn_ge(7, 7));
  ck_assert(!psn_lt(0x000001, 0xfffffe));
  ck_assert(psn_in_window(0x000002, 0xfffffe, 8));
  ck_assert(!psn_in_window(0xfffffd, 0xfffffe, 8));
}
END_TEST

/* [PSN-WIN-1] the default window is far below 2^23 */
START_TEST(test_psn_window_below_half)
{
  ck_assert_uint_lt(RCT_MAX_INFLIGHT_DEFAULT, PSN_HALF);
  ck_assert_uint_lt(RCT_SR_WINDOW, RCT_MAX_INFLIGHT_DEFAULT + 1);
}
END_TEST

Suite *suite_psn(void)
{
  Suite *s = suite_create("psn");
  TCase *t = tcase_create("arith");
  tcase_add_test(t, test_psn_add_wraps);
  tcase_add_test(t, test_psn_prev_wraps);
  tcase_add_test(t, test_psn_diff_range);
  tcase_add_test(t, test_psn_compare_across_wrap);
  tcase_add_test(t, test_psn_window_below_half);
  suite_add_tcase(s, t);
  return s;
}
