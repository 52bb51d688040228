// infiniband/verbs.h: libibverbs' header name for xv6-rdma's verbs library (user/ibverbs.h).
#include "user/ibverbs.h"
