// inet.c: IPv4 and IPv6 addresses and numeric names for user programs (the
// libc's <arpa/inet.h> and <netdb.h>).
//
// inet_parse("10.0.0.2") returns the address in host byte order, or 0 for
// anything that is not exactly four decimal parts of 0..255 (0.0.0.0 is not a
// usable peer address, so 0 doubles as the error value); inet_pton is the
// same parser with a separate error. inet_pton and inet_ntop know AF_INET6
// too: text in RFC 4291 section 2.2 forms in, RFC 5952's canonical form
// out (a GID prints as an IPv6 address). The network stack itself is IPv4. getaddrinfo knows numeric hosts and
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

// One to four hex digits -> 1, *word and *s past them.
static int parse_hex_group(const char **s, unsigned int *word)
{
  unsigned int v = 0;
  int digits = 0;
  for (; digits < 4 && isxdigit((unsigned char)**s); (*s)++, digits++)
    v = v << 4 | (unsigned int)(isdigit((unsigned char)**s) ? **s - '0' : (**s | 0x20) - 'a' + 10);
  *word = v;
  return digits > 0 && !isxdigit((unsigned char)**s);
}

// RFC 4291 2.2 text -> 1 and the 16 bytes: eight groups of hex digits
// separated by ':', at most one "::" for a run of zero groups, the last
// two groups optionally as a dotted IPv4 address.
static int parse_ipv6(const char *s, unsigned char out[16])
{
  unsigned int w[8], n = 0, v4;
  int gap = -1;
  if (s[0] == ':' && s[1] != ':') return 0;
  if (s[0] == ':') { gap = 0; s += 2; }
  while (*s && n < 8) {
    const char *dot = strchr(s, '.'), *colon = strchr(s, ':');
    if (dot && (!colon || dot < colon)) {             // a trailing dotted IPv4 part
      if (n > 6 || !parse_dotted(s, &v4)) return 0;
      w[n++] = v4 >> 16;
      w[n++] = v4 & 0xffff;
      s += strlen(s);
      break;
    }
    if (!parse_hex_group(&s, &w[n])) return 0;
    n++;
    if (*s == 0) break;
    if (*s++ != ':') return 0;
    if (*s == ':') {                                  // "::"
      if (gap >= 0) return 0;
      gap = (int)n;
      s++;
    } else if (*s == 0) {
      return 0;                                       // a trailing single ':'
    }
  }
  if (*s || (gap < 0 ? n != 8 : n > 7)) return 0;
  unsigned int full[8] = { 0 };
  unsigned int tail = gap < 0 ? 0 : n - (unsigned int)gap;
  for (unsigned int i = 0; i < n - tail; i++) full[i] = w[i];
  for (unsigned int i = 0; i < tail; i++) full[8 - tail + i] = w[(unsigned int)gap + i];
  for (int i = 0; i < 8; i++) {
    out[2 * i] = (unsigned char)(full[i] >> 8);
    out[2 * i + 1] = (unsigned char)full[i];
  }
  return 1;
}

// 1 on success, 0 for malformed text, -1 (EAFNOSUPPORT) for a family other
// than AF_INET and AF_INET6.
int inet_pton(int af, const char *src, void *dst)
{
  unsigned int ip;
  unsigned char a6[16];
  if (af == AF_INET6) {
    if (!parse_ipv6(src, a6))
      return 0;
    memcpy(dst, a6, sizeof a6);
    return 1;
  }
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

// RFC 5952 section 4: lowercase hex without leading zeros, the longest run
// of two or more zero groups (the first of equal runs) as "::"; section 5:
// an IPv4-mapped address as ::ffff:a.b.c.d. text holds INET6_ADDRSTRLEN.
static void format_ipv6(const unsigned char *b, char *text)
{
  unsigned int w[8];
  int best = -1, best_len = 1, n = 0;
  for (int i = 0; i < 8; i++) w[i] = (unsigned int)b[2 * i] << 8 | b[2 * i + 1];
  if (!w[0] && !w[1] && !w[2] && !w[3] && !w[4] && w[5] == 0xffff) {
    snprintf(text, INET6_ADDRSTRLEN, "::ffff:%u.%u.%u.%u", b[12], b[13], b[14], b[15]);
    return;
  }
  for (int i = 0, run = 0; i < 8; i++) {
    run = w[i] ? 0 : run + 1;
    if (run > best_len) { best_len = run; best = i - run + 1; }
  }
  for (int i = 0; i < 8; i++) {
    if (i == best) {
      n += snprintf(text + n, INET6_ADDRSTRLEN - n, "::");
      i += best_len - 1;
      continue;
    }
    n += snprintf(text + n, INET6_ADDRSTRLEN - n, "%s%x", n && text[n - 1] != ':' ? ":" : "", w[i]);
  }
}

const char *inet_ntop(int af, const void *src, char *dst, socklen_t size)
{
  const unsigned char *b = src;
  char text[INET6_ADDRSTRLEN];
  if (af == AF_INET6) {
    format_ipv6(b, text);
  } else if (af == AF_INET) {
    snprintf(text, sizeof text, "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
  } else {
    errno = EAFNOSUPPORT;
    return NULL;
  }
  size_t n = strlen(text);
  if (n >= size) {
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
