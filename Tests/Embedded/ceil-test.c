/* Embedded/Glibc/ceil.c against libm's ceil, bit for bit: edge values (signed zeros, halves,
 * the 2^52 boundary, infinities, NaN, subnormals) and ten million random bit patterns and
 * decimals. Run by `make test` before the Swift suites; exits 1 on the first mismatches. */
#define ceil puff_ceil
#include "../../Embedded/Glibc/ceil.c"
#undef ceil
#include <math.h>
#include <stdio.h>

static int mismatches;

static void check(double value) {
    double ours = puff_ceil(value), theirs = ceil(value);
    uint64_t a, b;
    memcpy(&a, &ours, sizeof a);
    memcpy(&b, &theirs, sizeof b);
    if (a == b || (isnan(ours) && isnan(theirs))) return;
    if (mismatches++ < 5) fprintf(stderr, "ceil(%a): %a, libm %a\n", value, ours, theirs);
}

int main(void) {
    const double edges[] = {0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.0000001, -2.0000001, 1e300, -1e300,
                            4503599627370495.5, -4503599627370495.5, 4503599627370496.0, -4503599627370496.0,
                            INFINITY, -INFINITY, NAN, -NAN, 0.9999999999999999, -0.9999999999999999, 1e-310, -1e-310,
                            5e-324, -5e-324, 123456.789, -123456.789};
    for (unsigned i = 0; i < sizeof edges / sizeof edges[0]; i++) check(edges[i]);
    uint64_t state = 88172645463325252u;
    for (int i = 0; i < 10000000; i++) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        double pattern;
        memcpy(&pattern, &state, sizeof pattern);
        check(pattern);
        check((double)(int64_t)(state % 2000001) / 1000.0 - 1000.0);
    }
    printf("ceil.c: %d mismatches against libm\n", mismatches);
    return mismatches != 0;
}
