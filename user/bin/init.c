// init.c: the first user process.
//
// Makes sure /console exists (creating the device node on a fresh disk),
// opens it as fds 0, 1 and 2, then keeps a shell running: it starts sh and
// starts a new one whenever the old one exits. While waiting it also reaps
// orphans, which the kernel hands to init.
#include "user.h"

static void open_console(void)
{
  if (open("console", O_RDWR) < 0) {
    mknod("console", DEV_CONSOLE, 0);
    if (open("console", O_RDWR) < 0)
      exit(1);   // nowhere to even report the failure
  }
  dup(0);   // stdout
  dup(0);   // stderr
}

static int start_shell(void)
{
  char *argv[] = { "sh", NULL };
  int pid = fork();
  if (pid == 0) {
    exec("sh", argv);
    fprintf(stderr, "init: exec sh failed\n");
    exit(1);
  }
  return pid;
}

int main(void)
{
  open_console();
  for (;;) {
    printf("init: starting sh\n");
    int shell = start_shell();
    if (shell < 0) {
      fprintf(stderr, "init: fork failed\n");
      sleep(100);
      continue;
    }
    int pid;
    while ((pid = wait(NULL)) != shell) {
      if (pid < 0) {   // should not happen: the shell is our child
        sleep(10);
        break;
      }
    }
  }
}
