#include <cstdio>
#include <string>
#include <vector>
#include <omp.h>
struct Counted {
    static int copies;
    std::vector<int> v;
    alignas(32) double pad[4];
    Counted() : v(100, 1) { for (auto &p : pad) p = 1.5; }
    Counted(const Counted &o) : v(o.v) { for (int i = 0; i < 4; i++) pad[i] = o.pad[i]; __atomic_add_fetch(&copies, 1, __ATOMIC_RELAXED); }
};
int Counted::copies = 0;
int main() {
    long total = 0, looped = 0, reduced = 0;
    std::string s = "hello";
    Counted c;
    #pragma omp parallel
    #pragma omp single
    {
        for (int i = 0; i < 64; i++) {
            #pragma omp task firstprivate(c, s, i) shared(total)
            {
                long sum = 0;
                for (int x : c.v) sum += x;
                __atomic_add_fetch(&total, sum + (long)s.size() + (long)c.pad[3] * 2 + i, __ATOMIC_RELAXED);
            }
        }
        #pragma omp taskloop shared(looped) grainsize(4)
        for (int i = 0; i < 100; i++)
            __atomic_add_fetch(&looped, i, __ATOMIC_RELAXED);
        #pragma omp taskgroup task_reduction(+: reduced)
        {
            for (int i = 0; i < 10; i++) {
                #pragma omp task in_reduction(+: reduced)
                reduced += i;
            }
        }
        omp_event_handle_t ev;
        #pragma omp task detach(ev) shared(total)
        { __atomic_add_fetch(&total, 1, __ATOMIC_RELAXED); omp_fulfill_event(ev); }
        #pragma omp taskwait
    }
    std::printf("total %ld looped %ld reduced %ld copies>=64 %d\n", total, looped, reduced, Counted::copies >= 64);
    return 0;
}
