// unistd.c: what a program asks of the system beyond the system calls:
// sysconf, the page size, the environment (there is none), abort.
#include "user.h"

#define PAGE_SIZE 4096   // the RISC-V Sv39 base page

static long page_size(void) { return PAGE_SIZE; }
static long clock_ticks(void) { return 1000000000L / TICK_NS; }

static long processors(void)
{
  struct sysinfo si;
  return sysinfo(&si) < 0 ? 1 : si.ncpu;
}

static const struct { int name; long (*value)(void); } sysconf_names[] = {
  { _SC_PAGESIZE, page_size },
  { _SC_CLK_TCK, clock_ticks },
  { _SC_NPROCESSORS_ONLN, processors },
};

// An unknown name gives -1 with errno EINVAL.
long sysconf(int name)
{
  for (size_t i = 0; i < sizeof sysconf_names / sizeof sysconf_names[0]; i++) {
    if (sysconf_names[i].name == name)
      return sysconf_names[i].value();
  }
  errno = EINVAL;
  return -1;
}

int getpagesize(void)
{
  return PAGE_SIZE;
}

// Processes have no environment: every name is unset.
char *getenv(const char *name)
{
  (void)name;
  return NULL;
}

// There are no signals: the process ends with status 134 (128 + SIGABRT).
void abort(void)
{
  exit(134);
}
