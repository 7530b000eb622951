#include <thread>
#include <mutex>
#include <vector>
#include <cstdio>
#include <cstdlib>
std::mutex m; long counter=0;
int main(int argc,char**argv){ int nt=argc>1?atoi(argv[1]):2; long n=argc>2?atol(argv[2]):2000000;
 std::vector<std::thread> ts; for(int t=0;t<nt;t++) ts.emplace_back([n,nt]{ for(long i=0;i<n/nt;i++){ std::lock_guard<std::mutex> g(m); counter++; } });
 for(auto&t:ts) t.join(); printf("%ld\n", counter); return 0; }
