// sh.c: the shell.
//
// Usage: sh [script]   Reads commands from the script or standard input and
// prints the prompt "$ " when input is the console.
//
// Grammar of a line (no nesting, no variables):
//   line     := job { (';' | '&') job } [ '&' ]
//   job      := stage { '|' stage }
//   stage    := word { word | '<' word | '>' word }
// Words may be quoted with '...' or "..."; '#' at a word start begins a
// comment. A job ending in '&' runs in the background. Builtins: cd, exit.
//
// A line is first split into tokens (lex_line), then each job is parsed
// into a struct job (parse_job) and run (run_job) before the next is read.
#include "user.h"

#define MAX_LINE   512
#define MAX_TOKENS 128
#define MAX_ARGS   32
#define MAX_STAGES 8

enum token_kind { TOK_WORD, TOK_PIPE, TOK_IN, TOK_OUT, TOK_SEQ, TOK_BG, TOK_END };

struct token {
  enum token_kind kind;
  char *word;   // TOK_WORD only; points into the lexer's word storage
};

struct stage {
  char *argv[MAX_ARGS + 1];
  int argc;
  char *in_path;    // '<' target or NULL
  char *out_path;   // '>' target or NULL
};

struct job {
  struct stage stages[MAX_STAGES];
  int nstages;
  int background;
};

// ---- lexing ---------------------------------------------------------------

static int is_blank(char c)
{
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int is_operator(char c)
{
  return c != 0 && strchr("|<>;&", c) != NULL;
}

static enum token_kind operator_kind(char c)
{
  switch (c) {
  case '|': return TOK_PIPE;
  case '<': return TOK_IN;
  case '>': return TOK_OUT;
  case ';': return TOK_SEQ;
  default:  return TOK_BG;
  }
}

// Copies one word starting at *src into *store, removing quotes. Returns
// -1 on an unterminated quote.
static int lex_word(const char **src, char **store)
{
  const char *s = *src;
  char *out = *store;
  while (*s && !is_blank(*s) && !is_operator(*s)) {
    if (*s == '\'' || *s == '"') {
      char quote = *s++;
      while (*s && *s != quote)
        *out++ = *s++;
      if (*s != quote)
        return -1;
      s++;
    } else {
      *out++ = *s++;
    }
  }
  *out++ = 0;
  *src = s;
  *store = out;
  return 0;
}

// Splits line into tokens ending with TOK_END. storage must be at least
// twice as long as line. Returns the token count, or -1 on a syntax error.
static int lex_line(const char *line, struct token *toks, char *storage)
{
  int n = 0;
  for (;;) {
    while (is_blank(*line))
      line++;
    if (n == MAX_TOKENS - 1)
      return -1;
    if (*line == 0 || *line == '#') {
      toks[n].kind = TOK_END;
      return n + 1;
    }
    if (is_operator(*line)) {
      toks[n++].kind = operator_kind(*line++);
      continue;
    }
    toks[n].kind = TOK_WORD;
    toks[n].word = storage;
    if (lex_word(&line, &storage) < 0)
      return -1;
    n++;
  }
}

// ---- parsing --------------------------------------------------------------

static int syntax_error(const char *why)
{
  fprintf(stderr, "sh: syntax error: %s\n", why);
  return -1;
}

// Parses words and redirections up to the next operator.
static int parse_stage(struct token *toks, int *pos, struct stage *st)
{
  memset(st, 0, sizeof *st);
  for (;; (*pos)++) {
    struct token *t = &toks[*pos];
    if (t->kind == TOK_WORD) {
      if (st->argc == MAX_ARGS)
        return syntax_error("too many arguments");
      st->argv[st->argc++] = t->word;
    } else if (t->kind == TOK_IN || t->kind == TOK_OUT) {
      if (toks[*pos + 1].kind != TOK_WORD)
        return syntax_error("redirection needs a file name");
      (*pos)++;
      if (t->kind == TOK_IN)
        st->in_path = toks[*pos].word;
      else
        st->out_path = toks[*pos].word;
    } else {
      break;
    }
  }
  return st->argc > 0 ? 0 : syntax_error("missing command");
}

// Parses one job at toks[*pos]; leaves *pos after its ';' or '&'.
static int parse_job(struct token *toks, int *pos, struct job *job)
{
  job->nstages = 0;
  job->background = 0;
  for (;;) {
    if (job->nstages == MAX_STAGES)
      return syntax_error("pipeline too long");
    if (parse_stage(toks, pos, &job->stages[job->nstages++]) < 0)
      return -1;
    enum token_kind k = toks[*pos].kind;
    if (k != TOK_END)
      (*pos)++;
    if (k == TOK_PIPE)
      continue;
    job->background = k == TOK_BG;
    return 0;
  }
}

// ---- running --------------------------------------------------------------

// Makes fd `target` (0 or 1) refer to what `fd` refers to, then closes fd.
static void move_fd(int fd, int target)
{
  if (fd == target)
    return;
  close(target);
  dup(fd);   // the lowest free fd is target
  close(fd);
}

static void exec_stage(struct stage *st)
{
  if (st->in_path) {
    close(STDIN);
    if (open(st->in_path, O_RDONLY) != STDIN) {
      fprintf(stderr, "sh: cannot open %s\n", st->in_path);
      exit(1);
    }
  }
  if (st->out_path) {
    close(STDOUT);
    if (open(st->out_path, O_WRONLY | O_CREATE | O_TRUNC) != STDOUT) {
      fprintf(stderr, "sh: cannot create %s\n", st->out_path);
      exit(1);
    }
  }
  exec(st->argv[0], st->argv);
  if (st->argv[0][0] != '/') {   // fall back to the root directory
    char path[MAX_LINE];
    snprintf(path, sizeof path, "/%s", st->argv[0]);
    exec(path, st->argv);
  }
  fprintf(stderr, "sh: %s: not found\n", st->argv[0]);
  exit(127);
}

// Forks stage st with stdin from in_fd and stdout to out_fd (-1: keep the
// shell's own); the child also closes close_fd, the pipe end it must not
// hold. Returns the pid, or -1.
static int start_stage(struct stage *st, int in_fd, int out_fd, int close_fd)
{
  int pid = fork();
  if (pid == 0) {
    if (close_fd >= 0)
      close(close_fd);
    if (in_fd >= 0)
      move_fd(in_fd, STDIN);
    if (out_fd >= 0)
      move_fd(out_fd, STDOUT);
    exec_stage(st);
  }
  if (pid < 0)
    fprintf(stderr, "sh: fork failed\n");
  return pid;
}

// Waits until every pid in pids has exited; returns the status of `last`.
// Background jobs that finish meanwhile are reaped along the way.
static int wait_for_all(int *pids, int n, int last)
{
  int status = 0, last_status = 0, left = 0;
  for (int i = 0; i < n; i++)
    left += pids[i] > 0;
  while (left > 0) {
    int pid = wait(&status);
    if (pid < 0)
      break;
    if (pid == last)
      last_status = status;
    for (int i = 0; i < n; i++)
      left -= pids[i] == pid;
  }
  return last_status;
}

// Runs the stages connected by pipes; returns the last stage's status.
static int run_pipeline(struct job *job)
{
  int pids[MAX_STAGES], prev_read = -1, n = 0;
  for (; n < job->nstages; n++) {
    int p[2] = { -1, -1 };
    if (n + 1 < job->nstages && pipe(p) < 0) {
      fprintf(stderr, "sh: pipe failed\n");
      break;
    }
    pids[n] = start_stage(&job->stages[n], prev_read, p[1], p[0]);
    if (prev_read >= 0)
      close(prev_read);
    if (p[1] >= 0)
      close(p[1]);
    prev_read = p[0];
  }
  if (prev_read >= 0)
    close(prev_read);
  return wait_for_all(pids, n, n > 0 ? pids[n - 1] : -1);
}

// Returns 1 if the job was a builtin (and ran it).
static int run_builtin(struct job *job)
{
  struct stage *st = &job->stages[0];
  if (job->nstages != 1)
    return 0;
  if (strcmp(st->argv[0], "cd") == 0) {
    const char *dir = st->argc > 1 ? st->argv[1] : "/";
    if (chdir(dir) < 0)
      fprintf(stderr, "sh: cd: cannot change to %s\n", dir);
    return 1;
  }
  if (strcmp(st->argv[0], "exit") == 0)
    exit(st->argc > 1 ? atoi(st->argv[1]) : 0);
  return 0;
}

static void run_job(struct job *job)
{
  if (run_builtin(job))
    return;
  if (!job->background) {
    run_pipeline(job);
    return;
  }
  int pid = fork();
  if (pid == 0)
    exit(run_pipeline(job));
  if (pid > 0)
    printf("[%d]\n", pid);
}

static void run_line(const char *line)
{
  static struct token toks[MAX_TOKENS];
  static char storage[2 * MAX_LINE];
  struct job job;
  int pos = 0;
  if (lex_line(line, toks, storage) < 0) {
    syntax_error("bad quoting or too many tokens");
    return;
  }
  while (toks[pos].kind != TOK_END) {
    if (parse_job(toks, &pos, &job) < 0)
      return;
    run_job(&job);
  }
}

static int is_console(int fd)
{
  struct stat st;
  return fstat(fd, &st) == 0 && st.type == T_DEVICE;
}

int main(int argc, char **argv)
{
  char line[MAX_LINE];
  int in = STDIN;
  if (argc > 1 && (in = open(argv[1], O_RDONLY)) < 0) {
    fprintf(stderr, "sh: cannot open %s\n", argv[1]);
    return 1;
  }
  int interactive = in == STDIN && is_console(in);
  for (;;) {
    if (interactive)
      write(STDOUT, "$ ", 2);
    if (readline(in, line, sizeof line) < 0)
      break;
    run_line(line);
  }
  return 0;
}
