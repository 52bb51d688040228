#include "harness.h"
Suite *suite_qp(void)
{
	Suite *s = suite_create("qp");
	return s;
}
