// random.c: random numbers for user programs, from the kernel's ChaCha20
// generator (getrandom, kernel/dev/random.c). There is no user-space
// generator: identifiers a peer must not guess (CM connection IDs,
// starting PSNs) take their bits straight from the kernel, so processes
// started together, or guests booted in the same second, share nothing.
#include "user.h"

unsigned int random_u32(void) {
  unsigned int v;
  if (getrandom(&v, sizeof v, 0) != sizeof v) {
    // Never with a valid buffer; a guessable fallback would be worse.
    fprintf(2, "random_u32: getrandom failed\n");
    exit(1);
  }
  return v;
}
