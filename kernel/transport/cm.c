#include "rct_int.h"
int rct_cm_encode(const struct rct_cm_msg *m, uint8_t *buf, size_t cap) { return RCT_ENOTSUP; }
int rct_cm_parse(struct rct_cm_msg *m, const uint8_t *buf, size_t len) { return RCT_ENOTSUP; }
