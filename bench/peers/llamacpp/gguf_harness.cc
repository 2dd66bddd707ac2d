// gguf_harness times llama.cpp's GGUF reader on one file: each load is
// gguf_init_from_file(no_alloc=true, no ggml context) + gguf_find_tensor of
// one name + gguf_free. With "parse" the file is mapped once and each load
// is gguf_init_from_buffer over the mapping instead.
//
// Usage:
//
//	gguf_harness FILE TENSOR N [parse]       N loads; prints one JSON line (median, min in µs)
//	gguf_harness FILE TENSOR serve [parse]   for each line N on stdin, N loads; one line of ns times
//	gguf_harness FILE TENSOR stat [parse]    resident memory and allocations of one load, as JSON
//
// Allocations are calls of the global operator new (what std::vector and
// std::string use), counted by this file's replacement.
#include <gguf.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <new>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

static std::atomic<long> g_news{0};

void *operator new(size_t n) {
	g_news.fetch_add(1, std::memory_order_relaxed);
	if (void *p = std::malloc(n ? n : 1)) return p;
	throw std::bad_alloc();
}
void *operator new[](size_t n) { return operator new(n); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }
void operator delete[](void *p, size_t) noexcept { std::free(p); }

static double now_ns() {
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// rss_kib returns the process's Rss from /proc/self/smaps_rollup.
static long rss_kib() {
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	if (!f) return -1;
	char line[256];
	long v = -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "Rss: %ld kB", &v) == 1) break;
	fclose(f);
	return v;
}

struct mapping {
	void *p = nullptr;
	size_t n = 0;
};

static const char *g_file, *g_name;
static bool g_parse;
static mapping g_map;

// open_ctx opens the file (or parses the mapping) without freeing it.
static gguf_context *open_ctx() {
	gguf_init_params params = {/*no_alloc=*/true, /*ctx=*/nullptr};
	if (g_parse) return gguf_init_from_buffer(g_map.p, g_map.n, params);
	return gguf_init_from_file(g_file, params);
}

static void load_once() {
	gguf_context *ctx = open_ctx();
	if (!ctx) {
		fprintf(stderr, "gguf_harness: cannot open %s\n", g_file);
		exit(1);
	}
	if (gguf_find_tensor(ctx, g_name) < 0) {
		fprintf(stderr, "gguf_harness: no tensor %s\n", g_name);
		exit(1);
	}
	gguf_free(ctx);
}

static std::vector<double> run(int n) {
	std::vector<double> t(n);
	for (int i = 0; i < n; i++) {
		double t0 = now_ns();
		load_once();
		t[i] = now_ns() - t0;
	}
	return t;
}

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: gguf_harness FILE TENSOR N|serve|stat [parse]\n");
		return 2;
	}
	g_file = argv[1];
	g_name = argv[2];
	g_parse = argc > 4 && strcmp(argv[4], "parse") == 0;
	long rss0 = rss_kib();
	if (g_parse) {
		int fd = open(g_file, O_RDONLY);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) != 0) return 1;
		g_map.n = st.st_size;
		g_map.p = mmap(nullptr, g_map.n, PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		if (g_map.p == MAP_FAILED) return 1;
	}
	const char *mode = argv[3];
	if (strcmp(mode, "stat") == 0) {
		long news0 = g_news.load();
		gguf_context *ctx = open_ctx();
		if (!ctx) return 1;
		long news1 = g_news.load();
		long rss1 = rss_kib();
		int64_t id = 0;
		for (int i = 0; i < 1000; i++) id = gguf_find_tensor(ctx, g_name);
		long news2 = g_news.load();
		if (id < 0) return 1;
		printf("{\"peer\":\"llama.cpp%s\",\"rss_before_kib\":%ld,\"rss_after_open_kib\":%ld,"
		       "\"allocs_per_open\":%ld,\"allocs_per_lookup\":%g,\"tensors\":%lld}\n",
		       g_parse ? "-buffer" : "", rss0, rss1, news1 - news0, (news2 - news1) / 1000.0,
		       (long long)gguf_get_n_tensors(ctx));
		gguf_free(ctx);
		return 0;
	}
	if (strcmp(mode, "serve") == 0) {
		char line[64];
		std::string out;
		while (fgets(line, sizeof line, stdin)) {
			int n = atoi(line);
			if (n <= 0) {
				fprintf(stderr, "gguf_harness: want a positive count, got %s", line);
				return 1;
			}
			std::vector<double> t = run(n);
			out.clear();
			for (int i = 0; i < n; i++) {
				if (i) out += ' ';
				out += std::to_string((long long)t[i]);
			}
			out += '\n';
			fputs(out.c_str(), stdout);
			fflush(stdout);
		}
		return 0;
	}
	int n = atoi(mode);
	if (n <= 0) return 2;
	run(std::min(n, 10));
	std::vector<double> t = run(n);
	std::sort(t.begin(), t.end());
	printf("{\"peer\":\"llama.cpp%s\",\"iters\":%d,\"median_us\":%.2f,\"min_us\":%.2f}\n", g_parse ? "-buffer" : "", n,
	       t[n / 2] / 1e3, t[0] / 1e3);
	return 0;
}
