#include "harness.h"
Suite *suite_rx(void)
{
	Suite *s = suite_create("rx");
	return s;
}
