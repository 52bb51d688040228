// errno.c: errno and the text of its values (strerror; perror is
// stdio.c's). Nothing here formats with printf, so a program that only
// sets errno (through malloc, say) does not link the formatter.
#include "user.h"

int errno;

// Linux's wording for the values user.h defines.
static const struct { int err; const char *text; } messages[] = {
  { 0, "Success" },
  { EPERM, "Operation not permitted" },
  { ENOENT, "No such file or directory" },
  { EINTR, "Interrupted system call" },
  { EIO, "Input/output error" },
  { EBADF, "Bad file descriptor" },
  { EAGAIN, "Resource temporarily unavailable" },
  { ENOMEM, "Cannot allocate memory" },
  { EACCES, "Permission denied" },
  { EFAULT, "Bad address" },
  { EBUSY, "Device or resource busy" },
  { EEXIST, "File exists" },
  { ENODEV, "No such device" },
  { ENOTDIR, "Not a directory" },
  { EISDIR, "Is a directory" },
  { EINVAL, "Invalid argument" },
  { EMFILE, "Too many open files" },
  { ENOSPC, "No space left on device" },
  { ESPIPE, "Illegal seek" },
  { EPIPE, "Broken pipe" },
  { EDOM, "Numerical argument out of domain" },
  { ERANGE, "Numerical result out of range" },
  { ENAMETOOLONG, "File name too long" },
  { ENOSYS, "Function not implemented" },
  { EAFNOSUPPORT, "Address family not supported by protocol" },
  { EADDRINUSE, "Address already in use" },
  { ECONNRESET, "Connection reset by peer" },
  { EISCONN, "Transport endpoint is already connected" },
  { ETIMEDOUT, "Connection timed out" },
  { ECONNREFUSED, "Connection refused" },
  { EHOSTUNREACH, "No route to host" },
};

char *strerror(int err)
{
  static char unknown[32];
  for (size_t i = 0; i < sizeof messages / sizeof messages[0]; i++) {
    if (messages[i].err == err)
      return (char *)messages[i].text;
  }
  strcpy(unknown, "Unknown error ");
  itoa(err, unknown + strlen(unknown), 10);
  return unknown;
}
