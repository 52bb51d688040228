// inet.c: IPv4 addresses and numeric names for user programs (the libc's
// <arpa/inet.h> and <netdb.h>).
//
// inet_parse("10.0.0.2") returns the address in host byte order, or 0 for
// anything that is not exactly four decimal parts of 0..255 (0.0.0.0 is not a
// usable peer address, so 0 doubles as the error value); inet_pton is the
// same parser with a separate error. getaddrinfo knows numeric hosts and
// services only: there is no resolver, so any other name is EAI_NONAME.
// netstat_text takes a snapshot of netstat()'s "name value" lines and
// netstat_value reads one counter out of it.
#include "user.h"

// A fresh netstat() snapshot, NUL-terminated (empty on error); the next
// call overwrites it.
const char *netstat_text(void)
{
  static char buf[4096];
  int n = netstat(buf, sizeof buf - 1);
  buf[n < 0 ? 0 : n] = 0;
  return buf;
}

// The value of the line "name value" of netstat text, or 0 when absent.
unsigned long netstat_value(const char *text, const char *name)
{
  int len = strlen(name);
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : 0)
    if (!strncmp(p, name, len) && p[len] == ' ')
      return strtoul(p + len + 1, 0, 10);
  return 0;
}

// Four decimal parts of 0..255 and nothing else -> 1 and *ip (host order).
static int parse_dotted(const char *s, unsigned int *ip)
{
  unsigned int v4 = 0;
  for (int part = 0; part < 4; part++) {
    int v = 0, digits = 0;
    for (; *s >= '0' && *s <= '9' && digits < 4; s++, digits++) v = v * 10 + (*s - '0');
    if (!digits || v > 255 || (part < 3 && *s++ != '.')) return 0;
    v4 = v4 << 8 | v;
  }
  *ip = v4;
  return *s == 0;
}

unsigned int inet_parse(const char *s) {
  unsigned int ip;
  return parse_dotted(s, &ip) ? ip : 0;
}

// AF_INET only: 1 on success, 0 for a malformed address, -1 (EAFNOSUPPORT)
// for another family.
int inet_pton(int af, const char *src, void *dst)
{
  unsigned int ip;
  if (af != AF_INET) {
    errno = EAFNOSUPPORT;
    return -1;
  }
  if (!parse_dotted(src, &ip))
    return 0;
  ip = htonl(ip);
  memcpy(dst, &ip, sizeof ip);
  return 1;
}

const char *inet_ntop(int af, const void *src, char *dst, socklen_t size)
{
  const unsigned char *b = src;
  char text[INET_ADDRSTRLEN];
  if (af != AF_INET) {
    errno = EAFNOSUPPORT;
    return NULL;
  }
  int n = snprintf(text, sizeof text, "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
  if ((socklen_t)n >= size) {
    errno = ENOSPC;
    return NULL;
  }
  memcpy(dst, text, n + 1);
  return dst;
}

int inet_aton(const char *src, struct in_addr *dst)
{
  return inet_pton(AF_INET, src, &dst->s_addr) == 1;
}

in_addr_t inet_addr(const char *src)
{
  struct in_addr a;
  return inet_aton(src, &a) ? a.s_addr : INADDR_NONE;
}

// The text lives in a static buffer, overwritten by the next call.
char *inet_ntoa(struct in_addr in)
{
  static char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &in.s_addr, text, sizeof text);
  return text;
}

// A service is a decimal port 0..65535.
static int parse_port(const char *service, int *port)
{
  char *end;
  long v = strtol(service, &end, 10);
  if (*service == 0 || *end || v < 0 || v > 65535)
    return 0;
  *port = (int)v;
  return 1;
}

// One result: AF_INET, the address and port of node and service (a NULL
// node is INADDR_ANY with AI_PASSIVE, the loopback without it). hints may
// be NULL; ai_socktype and ai_protocol are copied from it.
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
  struct addrinfo none = { 0 };
  const struct addrinfo *h = hints ? hints : &none;
  unsigned int ip = (h->ai_flags & AI_PASSIVE) ? INADDR_ANY : INADDR_LOOPBACK;
  int port = 0;
  if (h->ai_family != AF_UNSPEC && h->ai_family != AF_INET)
    return EAI_FAMILY;
  if (node == NULL && service == NULL)
    return EAI_NONAME;
  if (node && !parse_dotted(node, &ip))
    return EAI_NONAME;   // not numeric: there is no resolver
  if (service && !parse_port(service, &port))
    return EAI_SERVICE;
  struct {
    struct addrinfo ai;
    struct sockaddr_in sin;
  } *r = calloc(1, sizeof *r);   // one block: freeaddrinfo frees both
  if (r == NULL)
    return EAI_MEMORY;
  r->sin.sin_family = AF_INET;
  r->sin.sin_port = htons(port);
  r->sin.sin_addr.s_addr = htonl(ip);
  r->ai.ai_family = AF_INET;
  r->ai.ai_socktype = h->ai_socktype;
  r->ai.ai_protocol = h->ai_protocol;
  r->ai.ai_flags = h->ai_flags;
  r->ai.ai_addrlen = sizeof r->sin;
  r->ai.ai_addr = (struct sockaddr *)&r->sin;
  *res = &r->ai;
  return 0;
}

void freeaddrinfo(struct addrinfo *res)
{
  while (res) {
    struct addrinfo *next = res->ai_next;
    free(res);
    res = next;
  }
}

static const struct { int err; const char *text; } gai_messages[] = {
  { 0, "Success" },
  { EAI_BADFLAGS, "Bad value for ai_flags" },
  { EAI_NONAME, "Name or service not known" },
  { EAI_FAMILY, "ai_family not supported" },
  { EAI_SOCKTYPE, "ai_socktype not supported" },
  { EAI_SERVICE, "Servname not supported for ai_socktype" },
  { EAI_MEMORY, "Memory allocation failure" },
  { EAI_SYSTEM, "System error" },
};

const char *gai_strerror(int err)
{
  for (size_t i = 0; i < sizeof gai_messages / sizeof gai_messages[0]; i++) {
    if (gai_messages[i].err == err)
      return gai_messages[i].text;
  }
  return "Unknown error";
}
