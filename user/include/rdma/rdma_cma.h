// rdma/rdma_cma.h: librdmacm's header name for xv6-rdma's connection library (user/lib/rdmacm/rdma_cm.h).
#include "user/lib/rdmacm/rdma_cm.h"
