// exec.h: replace the current process's program with an ELF64 file.
// argv is a NULL-terminated array of kernel strings. On success the
// process returns to user mode at the ELF entry with a0 = argc and
// a1 = argv; on failure (-1) the old program is untouched.
#ifndef EXEC_H
#define EXEC_H
int exec_program(const char *path, char **argv);
#endif
