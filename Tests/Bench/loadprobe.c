/* make bench: what loading one PAM module costs its host process, measured from inside it.
 *
 *   loadprobe MODULE.so    prints one line:  <dlopen ns> <Rss kB> <Private_Dirty kB> <Pss kB>
 *
 * The time is one dlopen(RTLD_NOW | RTLD_LOCAL) in a fresh process (the cold load libpam does
 * for every service), from CLOCK_MONOTONIC. The memory figures are the differences of
 * /proc/self/smaps_rollup before and after that dlopen: resident pages, private dirty pages
 * (relocations, .data, .bss, static initialisers) and the proportional set size. Run it many
 * times and take medians; one process measures one load. It is linked with libpam (as every
 * PAM application is), so only the module and what it adds are counted. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rollup { long rss, private_dirty, pss; };

static int read_rollup(struct rollup *out) {
    char line[256];
    FILE *file = fopen("/proc/self/smaps_rollup", "re");
    if (!file) return -1;
    memset(out, 0, sizeof *out);
    while (fgets(line, sizeof line, file)) {
        long value;
        if (sscanf(line, "Rss: %ld kB", &value) == 1) out->rss = value;
        else if (sscanf(line, "Private_Dirty: %ld kB", &value) == 1) out->private_dirty = value;
        else if (sscanf(line, "Pss: %ld kB", &value) == 1) out->pss = value;
    }
    fclose(file);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: loadprobe MODULE.so\n");
        return 2;
    }
    struct rollup before, after;
    struct timespec start, end;
    /* Touch the probe's own reading path once, so its first-use costs are not counted. */
    if (read_rollup(&before) != 0 || read_rollup(&before) != 0) { perror("smaps_rollup"); return 1; }
    clock_gettime(CLOCK_MONOTONIC, &start);
    void *handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    clock_gettime(CLOCK_MONOTONIC, &end);
    if (!handle) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    if (read_rollup(&after) != 0) { perror("smaps_rollup"); return 1; }
    long long ns = (long long)(end.tv_sec - start.tv_sec) * 1000000000LL + (end.tv_nsec - start.tv_nsec);
    printf("%lld %ld %ld %ld\n", ns, after.rss - before.rss, after.private_dirty - before.private_dirty,
           after.pss - before.pss);
    return 0;
}
