// The bare floor of a mapping loader in C, for calibrating this machine
// against ExecuTorch's published measurements of the same steps: open,
// fstat, mmap the whole file, read the first byte (one page
// fault), munmap, close; N times; prints the median, minimum and 10th and
// 90th percentiles in us.
//
// With BASE STRIDE COUNT it reads COUNT bytes instead, at BASE, BASE+STRIDE,
// ...: the first byte of every tensor of a file whose tensors lie STRIDE
// apart (the reference's "touching one byte per tensor", in C on this
// machine; pte-4G: 98304 4194304 1024).
//
//   gcc -O2 -o /tmp/cfloor bench/cfloor/floor.c && /tmp/cfloor FILE [N [BASE STRIDE COUNT]]
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE [N [BASE STRIDE COUNT]]\n", argv[0]);
		return 2;
	}
	int n = argc > 2 ? atoi(argv[2]) : 2000;
	long long base = 0, stride = 0, count = 1;
	if (argc > 5) {
		base = atoll(argv[3]), stride = atoll(argv[4]), count = atoll(argv[5]);
	}
	if (n < 1 || base < 0 || stride < 0 || count < 1) {
		fprintf(stderr, "%s: N and COUNT must be positive, BASE and STRIDE not negative\n", argv[0]);
		return 2;
	}
	double *t = malloc(n * sizeof *t);
	volatile unsigned char sink = 0;
	for (int i = 0; i < n; i++) {
		double t0 = now_us();
		int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) != 0) {
			perror(argv[1]);
			return 1;
		}
		unsigned char *p = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		if (base + (count - 1) * stride >= st.st_size) {
			fprintf(stderr, "%s: byte %lld lies past the end (%lld bytes)\n", argv[1], base + (count - 1) * stride, (long long)st.st_size);
			return 2;
		}
		for (long long k = 0; k < count; k++)
			sink ^= p[base + k * stride];
		munmap(p, st.st_size);
		close(fd);
		t[i] = now_us() - t0;
	}
	qsort(t, n, sizeof *t, cmp);
	printf("{\"file\":\"%s\",\"iters\":%d,\"touched\":%lld,\"median_us\":%.1f,\"min_us\":%.1f,\"p10_us\":%.1f,\"p90_us\":%.1f}\n",
	       argv[1], n, count, t[n / 2], t[0], t[n / 10], t[n * 9 / 10]);
	return 0;
}
