/*
 * rmem_wire.h: the remote-memory protocol's constants and control-message
 * codec (proto-spec rmem.md [RMEM-*]).
 *
 * Owns: every constant of the protocol (port, magic, version, message
 * lengths, limits, ops, status codes) and struct rmem_msg, the decoded
 * form of a request or a reply. One table of fields (rmem_wire.c) drives
 * rmem_encode and rmem_decode.
 *
 * Sans-IO portable C99: includes only <stdint.h> and <stddef.h>, no
 * allocator, no libc call, so the same file builds into the xv6 kernel
 * (kernel/rmem/rmem_client.c), xv6 user programs (rmemd, librmem), Linux
 * programs (rmemd, librmem against rdma-core) and the host Check suite
 * (tests/unit/test_rmem_wire.c).
 */
#ifndef RMEM_WIRE_H
#define RMEM_WIRE_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RMEM_PORT            7471          /* default rdma_cm port [RMEM-CONN-1] */
#define RMEM_MAGIC           0x524d454du   /* "RMEM" [RMEM-MSG-2] */
#define RMEM_VERSION         1
#define RMEM_REQ_LEN         32            /* every request [RMEM-MSG-1] */
#define RMEM_REP_LEN         48            /* every reply */
#define RMEM_HDR_LEN         12            /* magic, version, op, status, req_id */
#define RMEM_MAX_OUTSTANDING 16            /* requests in flight per client [RMEM-CONN-3] */
#define RMEM_PAGE            4096u         /* region granularity [RMEM-OP-1] */
#define RMEM_MAX_REGION      (64ull << 20) /* largest region: xv6's max_mr_size */
#define RMEM_MAX_REGIONS     64            /* live regions per client [RMEM-OP-2] */

/* Operations [RMEM-MSG-3]. */
enum rmem_op {
  RMEM_OP_ALLOC = 1,
  RMEM_OP_FREE = 2,
  RMEM_OP_STAT = 3,
};
#define RMEM_OP_MAX RMEM_OP_STAT

/* Status codes [RMEM-ERR-1]. */
enum rmem_status {
  RMEM_OK = 0,
  RMEM_EBADREQ = 1,   /* malformed request */
  RMEM_EBADVER = 2,   /* unsupported version */
  RMEM_EBADID = 3,    /* no such region of this client */
  RMEM_ERANGE = 4,    /* size 0 or above RMEM_MAX_REGION */
  RMEM_ENOMEM = 5,    /* no room in the pool or the MR table */
  RMEM_ELIMIT = 6,    /* over the client's limit */
};
#define RMEM_STATUS_MAX RMEM_ELIMIT

/* A request or a reply, decoded. Fields a message's layout does not carry
 * are 0 after rmem_decode_* and ignored by rmem_encode_*. */
struct rmem_msg {
  uint32_t magic;      /* header [RMEM-MSG-2] */
  uint8_t version;
  uint8_t op;          /* enum rmem_op */
  uint16_t status;     /* enum rmem_status (requests: 0) */
  uint32_t req_id;
  uint32_t region;     /* FREE request; ALLOC and FREE reply */
  uint64_t size;       /* ALLOC request */
  uint64_t addr;       /* ALLOC reply */
  uint64_t length;     /* ALLOC reply: size rounded up to RMEM_PAGE */
  uint32_t rkey;       /* ALLOC reply */
  uint32_t nregions;   /* STAT reply */
  uint64_t used;       /* STAT reply */
  uint64_t limit;      /* STAT reply */
  uint64_t pool_free;  /* STAT reply */
};

/* A request of op with req_id, everything else 0 (magic and version set). */
struct rmem_msg rmem_request(uint8_t op, uint32_t req_id);
/* The reply to req with status (magic and version set, op, req_id and, for
 * FREE, region echoed; the op's other reply fields 0). */
struct rmem_msg rmem_reply(const struct rmem_msg *req, uint16_t status);

/* Encodes m into buf (RMEM_REQ_LEN / RMEM_REP_LEN bytes, reserved bytes 0).
 * Returns the length written; a request with an unknown op is -1 (buf
 * untouched); a reply with one (an error reply echoing it) is the header. */
int rmem_encode_req(const struct rmem_msg *m, uint8_t buf[RMEM_REQ_LEN]);
int rmem_encode_rep(const struct rmem_msg *m, uint8_t buf[RMEM_REP_LEN]);

/* Decodes a request of len bytes as a memory node must [RMEM-MSG-5].
 * Returns RMEM_OK, or the status to answer with (RMEM_EBADREQ,
 * RMEM_EBADVER); m->req_id is set whenever len reaches byte 11, and
 * m->op whenever len reaches byte 5, so the error reply can echo them. */
int rmem_decode_req(const uint8_t *buf, size_t len, struct rmem_msg *m);
/* Decodes a reply of len bytes as a client must [RMEM-MSG-5]: 0, or -1 for
 * a wrong length, magic, version, or an unknown op with status RMEM_OK
 * (drop and count it). */
int rmem_decode_rep(const uint8_t *buf, size_t len, struct rmem_msg *m);

/* Rounds size up to a multiple of RMEM_PAGE; 0 for 0 or above RMEM_MAX_REGION. */
uint64_t rmem_round_len(uint64_t size);

/* Names for messages: "ALLOC", "no such region", ...; "?" if unknown. */
const char *rmem_op_name(int op);
const char *rmem_status_name(int status);  /* "RMEM_EBADID" */
const char *rmem_strerror(int status);     /* "no such region of this client" */

/* The field table, for tests and tools: field i's name, offset and width
 * in bytes, and which messages carry it (bit (op - 1) of req_ops: in that
 * op's request; of rep_ops: in its reply). -1 past the end. */
int rmem_field_count(void);
int rmem_field_info(int i, const char **name, uint8_t *offset, uint8_t *width,
                    uint8_t *req_ops, uint8_t *rep_ops);

#ifdef __cplusplus
}
#endif

#endif /* RMEM_WIRE_H */
