// pager.c: demand paging of user memory to a registered backing store
// (pager.h). This first version only records the store; eviction and
// faulting come next.
#include "lib/types.h"
#include "core/pager.h"

static const struct pager_store *store;

void pager_set_store(const struct pager_store *s) {
  store = s;
}
