/*
 * main.c: the runner of the transport core's Check suites. Exit status is
 * the number of failed tests (0 = all passed), which drives `make test-core`.
 */
#include "harness.h"

int main(void)
{
  Suite *(*suites[])(void) = { suite_psn, suite_wire, suite_vectors, suite_opcode, suite_qp,
                               suite_req, suite_resp, suite_comp, suite_sr,
                               suite_ibcm, suite_ibcm_linux, suite_rx, suite_mr_contract,
                               suite_event, suite_ud, suite_atomic, suite_rmem_wire };
  SRunner *sr = srunner_create(suites[0]());
  int failed;
  for (size_t i = 1; i < sizeof(suites) / sizeof(suites[0]); i++)
    srunner_add_suite(sr, suites[i]());
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
