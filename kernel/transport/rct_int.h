/*
 * rct_int.h: every private interface of the transport core in one include,
 * for the files outside the core's layers that need them all (the CM in
 * kernel/cm and the host tests). The core's own files include only their layer's
 * header: core_int.h (the generic layers) or rc_int.h (the RC type).
 */
#ifndef RCT_INT_H
#define RCT_INT_H

#include "rct.h"
#include "core_int.h"
#include "rc_int.h"

#endif /* RCT_INT_H */
