/*
 * rmem_wire.c: the remote-memory control-message codec (proto-spec rmem.md
 * [RMEM-MSG-*]): one table of fields -- name, byte offset, width in bytes,
 * the ops whose request and whose reply carry it, struct rmem_msg member --
 * drives rmem_encode_* and rmem_decode_*. Pure encode/decode and names; the
 * memory node (user/bin/rmemd.c) and the clients (user/lib/rmem/,
 * kernel/rmem/rmem_client.c) own every state.
 */
#include "rmem_wire.h"

#define ALL ((1u << RMEM_OP_MAX) - 1)       /* every op */
#define OP(o) (1u << ((o) - 1))

struct rmem_field {
  const char *name;
  uint8_t offset, width;         /* bytes in the message */
  uint8_t req_ops, rep_ops;      /* OP() bits of the messages that carry it */
  uint16_t member, msize;        /* the member of struct rmem_msg */
};

#define F(name, off, width, req, rep) \
  { #name, off, width, req, rep, (uint16_t)offsetof(struct rmem_msg, name), \
    (uint16_t)sizeof(((struct rmem_msg *)0)->name) }

/* The one table of the control messages' fields [RMEM-MSG-2] [RMEM-MSG-3]. */
static const struct rmem_field fields[] = {
  F(magic, 0, 4, ALL, ALL),
  F(version, 4, 1, ALL, ALL),
  F(op, 5, 1, ALL, ALL),
  F(status, 6, 2, ALL, ALL),
  F(req_id, 8, 4, ALL, ALL),
  F(size, 16, 8, OP(RMEM_OP_ALLOC), 0),
  F(region, 12, 4, OP(RMEM_OP_FREE), OP(RMEM_OP_ALLOC) | OP(RMEM_OP_FREE)),
  F(addr, 16, 8, 0, OP(RMEM_OP_ALLOC)),
  F(length, 24, 8, 0, OP(RMEM_OP_ALLOC)),
  F(rkey, 32, 4, 0, OP(RMEM_OP_ALLOC)),
  F(nregions, 12, 4, 0, OP(RMEM_OP_STAT)),
  F(used, 16, 8, 0, OP(RMEM_OP_STAT)),
  F(limit, 24, 8, 0, OP(RMEM_OP_STAT)),
  F(pool_free, 32, 8, 0, OP(RMEM_OP_STAT)),
};
#define NFIELDS ((int)(sizeof(fields) / sizeof(fields[0])))

int rmem_field_count(void) { return NFIELDS; }

int rmem_field_info(int i, const char **name, uint8_t *offset, uint8_t *width,
                    uint8_t *req_ops, uint8_t *rep_ops)
{
  if (i < 0 || i >= NFIELDS)
    return -1;
  *name = fields[i].name;
  *offset = fields[i].offset;
  *width = fields[i].width;
  *req_ops = fields[i].req_ops;
  *rep_ops = fields[i].rep_ops;
  return 0;
}

/* The member's value, whatever its width (1, 2, 4 or 8 bytes). */
static uint64_t get_member(const struct rmem_msg *m, const struct rmem_field *f)
{
  const uint8_t *p = (const uint8_t *)m + f->member;
  switch (f->msize) {
  case 1: return *p;
  case 2: return *(const uint16_t *)p;
  case 4: return *(const uint32_t *)p;
  default: return *(const uint64_t *)p;
  }
}

static void set_member(struct rmem_msg *m, const struct rmem_field *f, uint64_t v)
{
  uint8_t *p = (uint8_t *)m + f->member;
  switch (f->msize) {
  case 1: *p = (uint8_t)v; break;
  case 2: *(uint16_t *)p = (uint16_t)v; break;
  case 4: *(uint32_t *)p = (uint32_t)v; break;
  default: *(uint64_t *)p = v; break;
  }
}

static void put_be(uint8_t *p, unsigned width, uint64_t v)
{
  for (unsigned i = width; i-- > 0; v >>= 8)
    p[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, unsigned width)
{
  uint64_t v = 0;
  for (unsigned i = 0; i < width; i++)
    v = (v << 8) | p[i];
  return v;
}

static int op_known(unsigned op) { return op >= 1 && op <= RMEM_OP_MAX; }

/* The table's fields of op's request (reply == 0) or reply into buf. A
 * reply may echo an unknown op (the answer to a request that named one):
 * then it carries the header alone. */
static int encode(const struct rmem_msg *m, uint8_t *buf, unsigned len, int reply)
{
  if (!reply && !op_known(m->op))
    return -1;
  for (unsigned i = 0; i < len; i++)
    buf[i] = 0;                      /* reserved bytes [RMEM-MSG-1] */
  for (int i = 0; i < NFIELDS; i++) {
    const struct rmem_field *f = &fields[i];
    unsigned ops = reply ? f->rep_ops : f->req_ops;
    if (ops == ALL || (op_known(m->op) && (ops & OP(m->op))))
      put_be(buf + f->offset, f->width, get_member(m, f));
  }
  return (int)len;
}

int rmem_encode_req(const struct rmem_msg *m, uint8_t buf[RMEM_REQ_LEN])
{
  return encode(m, buf, RMEM_REQ_LEN, 0);
}

int rmem_encode_rep(const struct rmem_msg *m, uint8_t buf[RMEM_REP_LEN])
{
  return encode(m, buf, RMEM_REP_LEN, 1);
}

static void clear(struct rmem_msg *m)
{
  uint8_t *p = (uint8_t *)m;
  for (size_t i = 0; i < sizeof(*m); i++)
    p[i] = 0;
}

/* Every field of the table that op's message carries and len covers. */
static void decode(const uint8_t *buf, size_t len, struct rmem_msg *m, unsigned op, int reply)
{
  for (int i = 0; i < NFIELDS; i++) {
    const struct rmem_field *f = &fields[i];
    unsigned ops = reply ? f->rep_ops : f->req_ops;
    if ((ops == ALL || (op_known(op) && (ops & OP(op)))) && f->offset + f->width <= len)
      set_member(m, f, get_be(buf + f->offset, f->width));
  }
}

int rmem_decode_req(const uint8_t *buf, size_t len, struct rmem_msg *m)
{
  clear(m);
  decode(buf, len, m, len > 5 ? buf[5] : 0, 0);
  if (len != RMEM_REQ_LEN || m->magic != RMEM_MAGIC)       /* [RMEM-MSG-5] */
    return RMEM_EBADREQ;
  if (m->version != RMEM_VERSION)
    return RMEM_EBADVER;
  if (!op_known(m->op) || m->status != 0)
    return RMEM_EBADREQ;
  return RMEM_OK;
}

int rmem_decode_rep(const uint8_t *buf, size_t len, struct rmem_msg *m)
{
  clear(m);
  if (len != RMEM_REP_LEN)                                 /* [RMEM-MSG-5] */
    return -1;
  decode(buf, len, m, buf[5], 1);
  if (m->magic != RMEM_MAGIC || m->version != RMEM_VERSION ||
      (!op_known(m->op) && m->status == RMEM_OK))
    return -1;
  return 0;
}

struct rmem_msg rmem_request(uint8_t op, uint32_t req_id)
{
  struct rmem_msg m;
  clear(&m);
  m.magic = RMEM_MAGIC;
  m.version = RMEM_VERSION;
  m.op = op;
  m.req_id = req_id;
  return m;
}

struct rmem_msg rmem_reply(const struct rmem_msg *req, uint16_t status)
{
  struct rmem_msg m = rmem_request(req->op, req->req_id);
  m.status = status;
  if (req->op == RMEM_OP_FREE)
    m.region = req->region;          /* [RMEM-MSG-3] */
  return m;
}

uint64_t rmem_round_len(uint64_t size)
{
  if (size == 0 || size > RMEM_MAX_REGION)                 /* [RMEM-OP-1] */
    return 0;
  return (size + RMEM_PAGE - 1) & ~(uint64_t)(RMEM_PAGE - 1);
}

static const char *const op_names[RMEM_OP_MAX + 1] = {
  [RMEM_OP_ALLOC] = "ALLOC", [RMEM_OP_FREE] = "FREE", [RMEM_OP_STAT] = "STAT",
};

/* [RMEM-ERR-1] */
static const struct { const char *name, *text; } statuses[RMEM_STATUS_MAX + 1] = {
  [RMEM_OK] = { "RMEM_OK", "done" },
  [RMEM_EBADREQ] = { "RMEM_EBADREQ", "malformed request" },
  [RMEM_EBADVER] = { "RMEM_EBADVER", "unsupported protocol version" },
  [RMEM_EBADID] = { "RMEM_EBADID", "no such region of this client" },
  [RMEM_ERANGE] = { "RMEM_ERANGE", "size 0 or above the largest region" },
  [RMEM_ENOMEM] = { "RMEM_ENOMEM", "memory node out of memory" },
  [RMEM_ELIMIT] = { "RMEM_ELIMIT", "over the client's limit" },
};

const char *rmem_op_name(int op)
{
  return op_known((unsigned)op) ? op_names[op] : "?";
}

const char *rmem_status_name(int status)
{
  return status >= 0 && status <= RMEM_STATUS_MAX ? statuses[status].name : "?";
}

const char *rmem_strerror(int status)
{
  return status >= 0 && status <= RMEM_STATUS_MAX ? statuses[status].text : "unknown status";
}
