// matrix_atomic.h: the values of the opcode x size matrix's atomic cases,
// one definition for both ends: xv6's rdmanet_test --matrix
// (user/tests/rdmanet_test.c) and the Linux peer's (tests/linux/peer/matrix.c).
// host_a puts matrix_atomic_old(round) at its buffer's start; host_b's
// CMP_AND_SWP compares it and swaps in matrix_atomic_new, its FETCH_AND_ADD
// adds matrix_atomic_add; either must return the old value and leave the
// new one. Header only, C99, no includes: the includer provides uint64_t,
// uint32_t, uint8_t, enum ibv_wr_opcode and
// struct ibv_send_wr (libibverbs' or user/lib/ibverbs' verbs header).
#ifndef MATRIX_ATOMIC_H
#define MATRIX_ATOMIC_H

static inline int matrix_is_atomic(enum ibv_wr_opcode op) {
  return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static inline uint64_t matrix_atomic_old(uint32_t round) {
  return 0x8877665544332211ULL ^ ((uint64_t)round << 40);
}

static inline uint64_t matrix_atomic_add(uint32_t round) {
  return 0x0000000100000001ULL * round + 0xff;
}

static inline uint64_t matrix_atomic_new(enum ibv_wr_opcode op, uint32_t round) {
  return op == IBV_WR_ATOMIC_FETCH_AND_ADD ? matrix_atomic_old(round) + matrix_atomic_add(round)
                                           : ~matrix_atomic_old(round);
}

// host_b's WR w of the case: its atomic fields (remote_addr, rkey and the
// operands); the rest of w is the caller's.
static inline void matrix_atomic_wr(struct ibv_send_wr *w, enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
                                    uint32_t round) {
  w->wr.atomic.remote_addr = raddr;
  w->wr.atomic.rkey = rkey;
  w->wr.atomic.compare_add = op == IBV_WR_ATOMIC_CMP_AND_SWP ? matrix_atomic_old(round) : matrix_atomic_add(round);
  w->wr.atomic.swap = matrix_atomic_new(op, round);
}

// host_a's check after the case: 0 if buf holds the new value and the
// guard bytes after it are intact; 1 for the value, 2 for the guard.
static inline int matrix_atomic_check(const uint8_t *buf, enum ibv_wr_opcode op, uint32_t round, int guard,
                                      uint8_t guard_byte) {
  uint64_t v;
  __builtin_memcpy(&v, buf, 8);
  if (v != matrix_atomic_new(op, round)) return 1;
  for (int i = 0; i < guard; i++)
    if (buf[8 + i] != guard_byte) return 2;
  return 0;
}

#endif
