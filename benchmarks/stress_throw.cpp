/* The C++ host of benchmarks/stress.py: OpenMP threads throw and catch exceptions in a loop
 * (the unwinder looks objects up through the loader: _dl_find_object, or dl_iterate_phdr,
 * which the preload library wraps, when linked with libunwind); writes out.txt.
 *
 *   g++ -O2 -fopenmp benchmarks/stress_throw.cpp -o stress_throw
 *   ./stress_throw [THROWS]     (default 20000; prints a sum that is the same whatever the team)
 */
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

struct Thrown : std::runtime_error {
    long value;
    explicit Thrown(long v) : std::runtime_error("thrown"), value(v) {}
};

/* A few frames between the throw and its catch, each with a destructor to run. */
struct Guard {
    long *count;
    ~Guard() { ++*count; }
};

__attribute__((noinline)) static long dive(long i, int depth, long *unwound) {
    Guard g{unwound};
    if (depth == 0) {
        if (i % 7 != 3) throw Thrown(i * 3 + 1);
        return i;
    }
    return dive(i, depth - 1, unwound) + 1;
}

int main(int argc, char **argv) {
    long throws = argc > 1 ? std::atol(argv[1]) : 20000;
    long caught = 0, returned = 0, unwound = 0;
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : caught, returned, unwound)
    for (long i = 0; i < throws; i++) {
        try {
            returned += dive(i, 4, &unwound);
        } catch (const Thrown &e) {
            caught += e.value;
        }
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "caught %ld returned %ld unwound %ld\n", caught, returned, unwound);
    if (FILE *f = std::fopen("out.txt", "w")) {
        std::fputs(buf, f);
        std::fclose(f);
    }
    std::fputs(buf, stdout);
    return 0;
}
