#include "harness.h"
Suite *suite_cm(void)
{
	Suite *s = suite_create("cm");
	return s;
}
