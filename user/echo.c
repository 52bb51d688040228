// echo.c: print the arguments separated by spaces, then a newline.
// Usage: echo [word...]
#include "user.h"

int main(int argc, char **argv)
{
  for (int i = 1; i < argc; i++) {
    write(STDOUT, argv[i], strlen(argv[i]));
    write(STDOUT, i + 1 < argc ? " " : "\n", 1);
  }
  if (argc < 2)
    write(STDOUT, "\n", 1);
  return 0;
}
