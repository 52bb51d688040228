// readline.c: line-at-a-time input for the shell and tools.
//
// Reads one byte per read() call so that nothing past the newline is
// consumed; that matters when a parent and a child share an input fd.
#include "user.h"

int readline(int fd, char *buf, int size)
{
  int len = 0;
  char c;
  while (len + 1 < size) {
    int n = read(fd, &c, 1);
    if (n <= 0) {
      if (len == 0)
        return -1;
      break;
    }
    if (c == '\n' || c == '\r')
      break;
    buf[len++] = c;
  }
  buf[len] = 0;
  return len;
}

// Line from standard input; NULL at end of input.
char *gets(char *buf, int size)
{
  return readline(STDIN, buf, size) < 0 ? NULL : buf;
}
