#include "harness.h"
Suite *suite_resp(void)
{
	Suite *s = suite_create("resp");
	return s;
}
