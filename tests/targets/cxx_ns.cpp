// cxx_ns SECONDS (default 1.5): main -> vision::Filter::apply(int), which
// burns CPU for SECONDS of wall time.  The test expects the demangled name
// `vision::Filter::apply` (with or without `(int)`) and no `_Z` names.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sys/resource.h>

namespace vision {

class Filter {
public:
	explicit Filter(double secs) : secs_(secs) {}
	__attribute__((noipa)) std::uint64_t apply(int rounds);

private:
	double secs_;
	volatile std::uint64_t state_ = 1;
};

static double now()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

std::uint64_t Filter::apply(int rounds)
{
	double end = now() + secs_;
	std::uint64_t x = state_;
	do {
		for (int i = 0; i < rounds; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			x ^= x >> 29;
			__asm__ volatile("" : "+r"(x));
		}
	} while (now() < end);
	state_ = x;
	return x;
}

} // namespace vision

int main(int argc, char **argv)
{
	double secs = argc > 1 ? std::atof(argv[1]) : 1.5;
	vision::Filter f(secs);
	std::uint64_t r = f.apply(20000);
	rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	std::printf("result=%llu\ncpu_seconds=%.3f\n", (unsigned long long)r,
		    (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
			    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6);
	return 0;
}
