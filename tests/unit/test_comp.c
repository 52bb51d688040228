#include "harness.h"
Suite *suite_comp(void)
{
	Suite *s = suite_create("comp");
	return s;
}
