// trap.h: trap entry from user and kernel mode (trap.c).
#ifndef TRAP_H
#define TRAP_H
void trap_hart_init(void);
void trap_set_syscall(void (*dispatch)(void));   // boot, once: where ecalls go
void user_trap_return(void) __attribute__((noreturn));
#endif
