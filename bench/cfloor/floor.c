// The bare floor of a mapping loader in C, for calibrating this machine
// against the reference measurements (which give 14-28 us for the same
// steps): open, fstat, mmap the whole file, read the first byte (one page
// fault), munmap, close; N times; prints the median and minimum in us.
//
//   gcc -O2 -o /tmp/cfloor bench/cfloor/floor.c && /tmp/cfloor FILE [N]
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
		fprintf(stderr, "usage: %s FILE [N]\n", argv[0]);
		return 2;
	}
	int n = argc > 2 ? atoi(argv[2]) : 2000;
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
		sink ^= p[0];
		munmap(p, st.st_size);
		close(fd);
		t[i] = now_us() - t0;
	}
	qsort(t, n, sizeof *t, cmp);
	printf("{\"file\":\"%s\",\"iters\":%d,\"median_us\":%.1f,\"min_us\":%.1f}\n", argv[1], n, t[n / 2], t[0]);
	return 0;
}
