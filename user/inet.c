// inet.c: dotted-quad IPv4 addresses for user programs (part of the libc).
//
// inet_parse("10.0.0.2") returns the address in host byte order, or 0 for
// anything that is not exactly four decimal parts of 0..255 (0.0.0.0 is not a
// usable peer address, so 0 doubles as the error value).
#include "user.h"

unsigned int inet_parse(const char *s) {
  unsigned int ip = 0;
  for (int part = 0; part < 4; part++) {
    int v = 0, digits = 0;
    for (; *s >= '0' && *s <= '9' && digits < 4; s++, digits++) v = v * 10 + (*s - '0');
    if (!digits || v > 255 || (part < 3 && *s++ != '.')) return 0;
    ip = ip << 8 | v;
  }
  return *s ? 0 : ip;
}
