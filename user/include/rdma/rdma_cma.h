// rdma/rdma_cma.h: librdmacm's header name for xv6-rdma's connection library (user/rdma_cm.h).
#include "user/rdma_cm.h"
