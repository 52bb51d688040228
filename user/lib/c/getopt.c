// getopt.c: command-line options, POSIX getopt and GNU getopt_long.
//
// Options are taken until the first operand ("--" ends them too): argv is
// not permuted, unlike GNU's default. Setting optind to 1 (or 0, as GNU
// allows) starts a new scan. A leading ':' in optstring makes a missing
// argument return ':' and silences the messages; a leading '+' is taken and
// ignored (it asks for this order anyway).
#include "user.h"

char *optarg;
int optind = 1, opterr = 1, optopt;

static const char *next_char;  // rest of a group of short options ("-abc")
static int next_index;         // the optind next_char belongs to

static int report(const char *optstring, const char *argv0, const char *what,
                  const char *name, int name_len)
{
  if (opterr && optstring[0] != ':')
    dprintf(STDERR, "%s: %s '%.*s'\n", argv0, what, name_len, name);
  return '?';
}

// The value of a missing argument: ':' when optstring asks, else '?'.
static int missing(const char *optstring, const char *argv0, const char *name, int len)
{
  report(optstring, argv0, "option requires an argument --", name, len);
  return optstring[0] == ':' ? ':' : '?';
}

// Precondition: argv[optind] is "--name[=value]".
static int take_long(int argc, char *const argv[], const char *optstring,
                     const struct option *longopts, int *longindex)
{
  const char *name = argv[optind] + 2;
  int len = strcspn(name, "=");
  const char *value = name[len] == '=' ? name + len + 1 : NULL;
  int found = -1, exact = 0, ambiguous = 0;
  for (int i = 0; longopts[i].name; i++) {
    if (strncmp(longopts[i].name, name, len) != 0)
      continue;
    if ((int)strlen(longopts[i].name) == len) {
      found = i;
      exact = 1;
      break;
    }
    ambiguous = found >= 0;
    found = i;
  }
  optind++;
  optopt = 0;
  if (found < 0 || (ambiguous && !exact))
    return report(optstring, argv[0], found < 0 ? "unrecognized option" :
                  "ambiguous option", name - 2, len + 2);
  const struct option *o = &longopts[found];
  optarg = NULL;
  if (o->has_arg == no_argument && value) {
    optopt = o->val;
    return report(optstring, argv[0], "option doesn't allow an argument",
                  name - 2, len + 2);
  }
  if (o->has_arg != no_argument)
    optarg = (char *)value;
  if (o->has_arg == required_argument && !value) {
    if (optind >= argc) {
      optopt = o->val;
      return missing(optstring, argv[0], name - 2, len + 2);
    }
    optarg = argv[optind++];
  }
  if (longindex)
    *longindex = found;
  if (o->flag) {
    *o->flag = o->val;
    return 0;
  }
  return o->val;
}

static int take_short(int argc, char *const argv[], const char *optstring)
{
  const char *opts = optstring + (optstring[0] == '+' || optstring[0] == '-');
  opts += opts[0] == ':';
  int c = (unsigned char)*next_char++;
  const char *spec = c == ':' ? NULL : strchr(opts, c);
  int at_end = *next_char == 0;
  optarg = NULL;
  if (spec == NULL || c == 0) {
    optopt = c;
    if (at_end)
      optind++;
    return report(optstring, argv[0], "invalid option --", (char *)&c, 1);
  }
  if (spec[1] != ':') {
    if (at_end)
      optind++;
    return c;
  }
  optind++;
  if (!at_end)
    optarg = (char *)next_char;        // "-ofile" or "-o" "file"
  else if (spec[2] != ':' && optind < argc)
    optarg = argv[optind++];
  else if (spec[2] != ':') {
    optopt = c;
    return missing(optstring, argv[0], (char *)&c, 1);
  }
  next_char = "";
  return c;
}

int getopt_long(int argc, char *const argv[], const char *optstring,
                const struct option *longopts, int *longindex)
{
  if (optind == 0)
    optind = 1;
  if (next_index != optind || next_char == NULL || *next_char == 0) {
    next_char = NULL;
    if (optind >= argc || argv[optind][0] != '-' || argv[optind][1] == 0)
      return -1;
    if (strcmp(argv[optind], "--") == 0) {
      optind++;
      return -1;
    }
    if (longopts && argv[optind][1] == '-')
      return take_long(argc, argv, optstring, longopts, longindex);
    next_char = argv[optind] + 1;
  }
  int c = take_short(argc, argv, optstring);
  next_index = optind;
  return c;
}

int getopt(int argc, char *const argv[], const char *optstring)
{
  return getopt_long(argc, argv, optstring, NULL, NULL);
}
