#include "harness.h"
Suite *suite_wire(void)
{
	Suite *s = suite_create("wire");
	return s;
}
