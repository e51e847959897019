/* The one libm function the embedded module and helper reach: Swift's Dictionary and Set size
 * their tables with Double.rounded(.up), which is C's ceil. Defined here (hidden, so the
 * module's references bind to it and the host's ceil is untouched) so neither binary needs
 * libm.so.6: one library fewer to map, relocate and search for every login and every run of
 * the setuid helper. Built with -fno-builtin so the compiler cannot turn it back into a call
 * to ceil. */
#include <stdint.h>
#include <string.h>

__attribute__((visibility("hidden"))) double ceil(double value) {
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    int exponent = (int)((bits >> 52) & 0x7ff) - 1023;
    if (exponent >= 52) return value;               /* whole already, or inf / NaN */
    if (exponent < 0) {                             /* |value| < 1 */
        if (value > 0) return 1.0;
        return (bits >> 63) ? -0.0 : value;         /* (-1, 0] -> -0.0; +0.0 stays */
    }
    uint64_t fraction = (UINT64_C(1) << (52 - exponent)) - 1;
    if ((bits & fraction) == 0) return value;       /* whole */
    if (!(bits >> 63)) bits += fraction + 1;        /* positive: up to the next whole */
    bits &= ~fraction;                              /* negative: toward zero is up */
    memcpy(&value, &bits, sizeof value);
    return value;
}
