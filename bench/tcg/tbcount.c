/* tbcount.c: a QEMU TCG plugin (QEMU 7.2, plugin API version 1) that counts
 * the guest's work per translated block: how often each block ran, its
 * guest instructions, its memory accesses, and how the block after it was
 * reached. bench/tcg/frame_cost.py turns the counts into work per frame.
 *
 * Under TCG a jump to a block on the same guest page is chained (a direct
 * host jump); any other way into a block is a lookup in QEMU's C code: an
 * indirect jump (jalr: every return), a direct jump or fall-through to
 * another page, or a return to the main loop after an instruction that
 * ends the block (CSR accesses, ecall, fences). A lookup costs about as
 * much as tens of guest instructions, so the counts split block exits
 * into those kinds.
 *
 * Arguments: out=PATH (default tbcount.out). Creating PATH.snap asks for a
 * snapshot: the next vCPU that goes idle writes PATH.N (N = 0, 1, ...) and
 * removes PATH.snap; the totals so far also go to PATH at exit. Lines:
 *   idle <idle entries of vCPU 0> <vCPU 1> <vCPU 2>
 *   <block vaddr hex> <insns> <runs> <memory accesses> <exits: direct
 *   off-page> <indirect> <system> <other off-page>
 * Counters are updated without atomics: vCPUs racing on one block may lose
 * an increment, which a profile of millions does not notice.
 *
 * The declarations below are the plugin API's, written from its
 * documentation (QEMU's qemu-plugin.h is not packaged); QEMU resolves the
 * functions in its own binary when it loads this library. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct {
  const char *target_name;
  struct { int min, cur; } version;
  bool system_emulation;
  union { struct { int smp_vcpus, max_vcpus; } system; };
} qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, void (*)(qemu_plugin_id_t, struct qemu_plugin_tb *));
void qemu_plugin_register_vcpu_idle_cb(qemu_plugin_id_t, void (*)(qemu_plugin_id_t, unsigned int));
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, void (*)(qemu_plugin_id_t, void *), void *);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *, enum qemu_plugin_op, void *, uint64_t);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *, void (*)(unsigned int, void *),
                                          enum qemu_plugin_cb_flags, void *);
void qemu_plugin_register_vcpu_mem_inline(struct qemu_plugin_insn *, enum qemu_plugin_mem_rw,
                                          enum qemu_plugin_op, void *, uint64_t);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define PAGE_SHIFT 12
#define MAX_VCPUS 64
#define TABLE_SIZE (1u << 20)        /* blocks; a kernel and a few programs have ~10^4 */

/* How a block ends: which way the next block is reached. */
enum exit_kind { EXIT_DIRECT, EXIT_INDIRECT, EXIT_SYSTEM, EXIT_NONE, EXIT_KINDS };

struct block {
  uint64_t key;                      /* vaddr | 1 (0: free slot) */
  uint64_t insns, runs, mem;
  uint64_t lookups[EXIT_KINDS];      /* exits that were not chained, by kind */
  int exit_kind;
};

static struct block *table;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block *last_block[MAX_VCPUS];
static uint64_t idle_entries[MAX_VCPUS];
static char out_path[512], snap_path[600];
static int snapshots;

/* table_lock held. */
static struct block *block_for(uint64_t vaddr) {
  uint64_t key = vaddr | 1;
  for (uint64_t h = (key * 0x9E3779B97F4A7C15ull) >> 44;; h++) {
    struct block *b = &table[h & (TABLE_SIZE - 1)];
    if (b->key == key) return b;
    if (b->key == 0) { b->key = key; return b; }
  }
}

/* RISC-V: the kind of exit an instruction that ends a block makes. */
static int exit_kind_of(const struct qemu_plugin_insn *insn) {
  const uint8_t *p = qemu_plugin_insn_data(insn);
  uint32_t w = p[0] | (uint32_t)p[1] << 8;
  if (qemu_plugin_insn_size(insn) == 2) {
    uint32_t op = w & 3, funct3 = w >> 13, rs2 = (w >> 2) & 31, rs1 = (w >> 7) & 31;
    if (op == 2 && funct3 == 4 && rs2 == 0 && rs1 != 0) return EXIT_INDIRECT;   /* c.jr, c.jalr */
    if (op == 1 && funct3 >= 5) return EXIT_DIRECT;                             /* c.j, c.beqz, c.bnez */
    return EXIT_NONE;
  }
  w |= (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  switch (w & 0x7f) {
  case 0x67: return EXIT_INDIRECT;                  /* jalr */
  case 0x6f: case 0x63: return EXIT_DIRECT;         /* jal, branches */
  case 0x73: case 0x0f: return EXIT_SYSTEM;         /* CSR, ecall, sret, wfi, fences */
  default: return EXIT_NONE;
  }
}

/* Runs before every block: counts how the previous block of this vCPU
 * left, unless the jump was chained (direct or fall-through, same page). */
static void on_block(unsigned int vcpu, void *arg) {
  struct block *b = arg, *prev = last_block[vcpu % MAX_VCPUS];
  if (prev) {
    int k = prev->exit_kind;
    bool same_page = ((prev->key ^ b->key) >> PAGE_SHIFT) == 0;
    if (!((k == EXIT_DIRECT || k == EXIT_NONE) && same_page)) prev->lookups[k]++;
  }
  last_block[vcpu % MAX_VCPUS] = b;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  size_t n = qemu_plugin_tb_n_insns(tb);
  pthread_mutex_lock(&table_lock);
  struct block *b = block_for(qemu_plugin_tb_vaddr(tb));
  if (n > b->insns) b->insns = n;
  b->exit_kind = exit_kind_of(qemu_plugin_tb_get_insn(tb, n - 1));
  pthread_mutex_unlock(&table_lock);
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->runs, 1);
  qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, b);
  for (size_t i = 0; i < n; i++)
    qemu_plugin_register_vcpu_mem_inline(qemu_plugin_tb_get_insn(tb, i), QEMU_PLUGIN_MEM_RW,
                                         QEMU_PLUGIN_INLINE_ADD_U64, &b->mem, 1);
}

/* Writes the counts to path (through a temporary file, then rename). */
static void dump(const char *path) {
  char tmp[700];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return;
  fprintf(f, "idle %llu %llu %llu\n", (unsigned long long)idle_entries[0],
          (unsigned long long)idle_entries[1], (unsigned long long)idle_entries[2]);
  for (uint32_t i = 0; i < TABLE_SIZE; i++) {
    struct block *b = &table[i];
    if (!b->key || !b->runs) continue;
    fprintf(f, "%llx %llu %llu %llu %llu %llu %llu %llu\n", (unsigned long long)(b->key & ~1ull),
            (unsigned long long)b->insns, (unsigned long long)b->runs, (unsigned long long)b->mem,
            (unsigned long long)b->lookups[EXIT_DIRECT], (unsigned long long)b->lookups[EXIT_INDIRECT],
            (unsigned long long)b->lookups[EXIT_SYSTEM], (unsigned long long)b->lookups[EXIT_NONE]);
  }
  fclose(f);
  rename(tmp, path);
}

static void on_idle(qemu_plugin_id_t id, unsigned int vcpu) {
  idle_entries[vcpu % MAX_VCPUS]++;
  if (access(snap_path, F_OK) != 0) return;
  pthread_mutex_lock(&table_lock);
  if (access(snap_path, F_OK) == 0) {
    char path[700];
    snprintf(path, sizeof path, "%s.%d", out_path, snapshots++);
    unlink(snap_path);
    dump(path);
  }
  pthread_mutex_unlock(&table_lock);
}

static void on_exit_qemu(qemu_plugin_id_t id, void *arg) { dump(out_path); }

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
  const char *out = "tbcount.out";
  for (int i = 0; i < argc; i++)
    if (strncmp(argv[i], "out=", 4) == 0) out = argv[i] + 4;
  snprintf(out_path, sizeof out_path, "%s", out);
  snprintf(snap_path, sizeof snap_path, "%s.snap", out);
  table = calloc(TABLE_SIZE, sizeof *table);
  if (!table) return -1;
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_vcpu_idle_cb(id, on_idle);
  qemu_plugin_register_atexit_cb(id, on_exit_qemu, NULL);
  return 0;
}
