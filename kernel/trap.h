// trap.h: trap entry from user and kernel mode (trap.c).
#ifndef TRAP_H
#define TRAP_H
void trap_hart_init(void);
void user_trap_return(void) __attribute__((noreturn));
#endif
