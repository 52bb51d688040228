// echo.c: print the arguments separated by spaces, then a newline.
// Usage: echo [word...]
//
// The line leaves in one write() when it fits the buffer, so a background
// echo is not split by another process's output on the console.
#include "user.h"

#define LINE_BYTES 512

int main(int argc, char **argv)
{
  char line[LINE_BYTES];
  int used = 0;
  for (int i = 1; i < argc; i++) {
    int len = strlen(argv[i]);
    if (used + len + 1 > LINE_BYTES) {          // too long: flush what we have
      write(STDOUT, line, used);
      used = 0;
      if (len + 1 > LINE_BYTES) { write(STDOUT, argv[i], len); len = 0; }
    }
    memcpy(line + used, argv[i], len);
    used += len;
    line[used++] = i + 1 < argc ? ' ' : '\n';
  }
  if (argc < 2)
    line[used++] = '\n';
  write(STDOUT, line, used);
  return 0;
}
