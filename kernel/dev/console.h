// console.h: the console device (major DEV_CONSOLE) and its line
// discipline. console.c owns the input line buffer.
#ifndef CONSOLE_H
#define CONSOLE_H
void console_init(void);
void console_input(int c);   // from the UART interrupt, one byte at a time
#endif
