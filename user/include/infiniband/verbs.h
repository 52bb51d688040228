// infiniband/verbs.h: libibverbs' header name for xv6-rdma's verbs library (user/lib/ibverbs/ibverbs.h).
#include "user/lib/ibverbs/ibverbs.h"
