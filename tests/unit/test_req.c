#include "harness.h"
Suite *suite_req(void)
{
	Suite *s = suite_create("req");
	return s;
}
