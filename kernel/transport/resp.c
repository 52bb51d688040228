#include "rct_int.h"
void resp_reset(struct rct_qp *qp) { (void)qp; }
void resp_handle(struct rct_qp *qp, uint64_t now, struct rct_pkt *p) { (void)qp; (void)now; (void)p; }
int resp_poll(struct rct_qp *qp, uint64_t now, struct rct_frame *f) { return 0; }
bool resp_has_work(const struct rct_qp *qp) { return false; }
void resp_flush(struct rct_qp *qp) { }
