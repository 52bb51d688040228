// crt0.c: the entry point of every user program.
//
// The kernel's exec starts a program at _start with argc in a0 and argv in
// a1 and a valid stack. _start calls main and hands its return value to
// exit, so returning from main ends the process like calling exit does.
#include "user.h"

int main(int argc, char **argv);

__attribute__((section(".text._start"), noreturn))
void _start(int argc, char **argv)
{
  exit(main(argc, argv));
}
