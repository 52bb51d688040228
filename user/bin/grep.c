// grep.c: print lines that match a pattern.
// Usage: grep [-c] pattern [file...]
//
// The pattern is a small regular expression: '^' anchors at the start,
// '$' at the end, '.' matches any character and 'x*' matches zero or more
// of x. Anything else is literal, so a plain word is a substring search.
// -c prints the number of matching lines instead. Exit status: 0 if some
// line matched, 1 if none, 2 on error.
#include "user.h"

#define MAX_ATOMS 128
#define ANY_CHAR  (-1)

// The pattern compiled into atoms: each is a character (or ANY_CHAR) that
// may repeat (star).
struct pattern {
  int anchored_start;
  int anchored_end;
  int count;
  struct atom {
    int ch;
    int star;
  } atoms[MAX_ATOMS];
};

static int compile(const char *text, struct pattern *p)
{
  memset(p, 0, sizeof *p);
  if (*text == '^') {
    p->anchored_start = 1;
    text++;
  }
  for (; *text; text++) {
    if (text[0] == '$' && text[1] == 0) {
      p->anchored_end = 1;
      break;
    }
    if (*text == '*' && p->count > 0 && !p->atoms[p->count - 1].star) {
      p->atoms[p->count - 1].star = 1;
      continue;
    }
    if (p->count == MAX_ATOMS)
      return -1;
    p->atoms[p->count].ch = *text == '.' ? ANY_CHAR : *text;
    p->atoms[p->count].star = 0;
    p->count++;
  }
  return 0;
}

static int atom_accepts(const struct atom *a, char c)
{
  return c != 0 && (a->ch == ANY_CHAR || a->ch == c);
}

// Does atoms[i..] match a prefix of s (the whole rest if anchored_end)?
static int match_from(const struct pattern *p, int i, const char *s)
{
  if (i == p->count)
    return !p->anchored_end || *s == 0;
  const struct atom *a = &p->atoms[i];
  if (!a->star)
    return atom_accepts(a, *s) && match_from(p, i + 1, s + 1);
  // Star: try the longest run first, then shorter ones.
  int run = 0;
  while (atom_accepts(a, s[run]))
    run++;
  for (; run >= 0; run--) {
    if (match_from(p, i + 1, s + run))
      return 1;
  }
  return 0;
}

static int line_matches(const struct pattern *p, const char *line)
{
  if (p->anchored_start)
    return match_from(p, 0, line);
  for (const char *s = line;; s++) {
    if (match_from(p, 0, s))
      return 1;
    if (*s == 0)
      return 0;
  }
}

// Prints (or counts) the matching lines of fd; returns the match count.
static int grep_fd(const struct pattern *p, int fd, int count_only)
{
  char line[1024];
  int matches = 0;
  while (readline(fd, line, sizeof line) >= 0) {
    if (line_matches(p, line)) {
      matches++;
      if (!count_only)
        printf("%s\n", line);
    }
  }
  return matches;
}

int main(int argc, char **argv)
{
  int count_only = 0, arg = 1, matches = 0;
  struct pattern p;
  if (arg < argc && strcmp(argv[arg], "-c") == 0) {
    count_only = 1;
    arg++;
  }
  if (arg >= argc || compile(argv[arg], &p) < 0) {
    fprintf(stderr, "usage: grep [-c] pattern [file...]\n");
    return 2;
  }
  arg++;
  if (arg == argc)
    matches = grep_fd(&p, STDIN, count_only);
  for (; arg < argc; arg++) {
    int fd = open(argv[arg], O_RDONLY);
    if (fd < 0) {
      fprintf(stderr, "grep: cannot open %s\n", argv[arg]);
      return 2;
    }
    matches += grep_fd(&p, fd, count_only);
    close(fd);
  }
  if (count_only)
    printf("%d\n", matches);
  return matches > 0 ? 0 : 1;
}
