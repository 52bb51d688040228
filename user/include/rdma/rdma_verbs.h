// rdma/rdma_verbs.h: librdmacm's header name for the rdma_cm_id verbs helpers (user/lib/rdmacm/rdma_verbs.h).
#include "user/lib/rdmacm/rdma_verbs.h"
