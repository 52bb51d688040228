// random.c: random numbers for user programs.
//
// random_u32 takes its bits from the kernel's ChaCha20 generator
// (getrandom, kernel/dev/random.c): identifiers a peer must not guess (CM
// connection IDs, starting PSNs) come from there, so processes started
// together, or guests booted in the same second, share nothing.
//
// rand/srand and the drand48 family are the seeded generators C and POSIX
// define, for programs that want a repeatable sequence: POSIX's 48-bit
// linear congruence X' = (a X + c) mod 2^48 (a = 0x5DEECE66D, c = 11,
// srand48 sets the high 32 bits of X to the seed and the low 16 to
// 0x330E). rand has a state of its own, seeded the same way, default 1.
#include "user.h"

#define LCG_A 0x5DEECE66DULL
#define LCG_C 0xBULL
#define LCG_MASK ((1ULL << 48) - 1)
#define LCG_LOW 0x330EULL

unsigned int random_u32(void) {
  unsigned int v;
  if (getrandom(&v, sizeof v, 0) != sizeof v) {
    // Never with a valid buffer; a guessable fallback would be worse.
    dprintf(STDERR, "random_u32: getrandom failed\n");
    exit(1);
  }
  return v;
}

static unsigned long long seed48(long seed)
{
  return ((unsigned long long)(unsigned int)seed << 16 | LCG_LOW) & LCG_MASK;
}

static unsigned long long rand48_state = 0x1234ABCD330EULL;   // POSIX's default
static unsigned long long rand_state = (1ULL << 16) | LCG_LOW;   // srand(1)

static unsigned long long lcg_next(unsigned long long *x)
{
  *x = (LCG_A * *x + LCG_C) & LCG_MASK;
  return *x;
}

void srand48(long seed) { rand48_state = seed48(seed); }
long lrand48(void) { return (long)(lcg_next(&rand48_state) >> 17); }          // [0, 2^31)
long mrand48(void) { return (long)(int)(lcg_next(&rand48_state) >> 16); }     // [-2^31, 2^31)
double drand48(void) { return (double)lcg_next(&rand48_state) / (double)(1ULL << 48); }
void srand(unsigned int seed) { rand_state = seed48(seed); }
int rand(void) { return (int)(lcg_next(&rand_state) >> 17); }
