#include "harness.h"
Suite *suite_sr(void)
{
	Suite *s = suite_create("sr");
	return s;
}
