// A C++ loader of .tflite models, for comparing edgeload on this machine
// with a loader doing what LiteRT does at load
// (FlatBufferModel::VerifyAndBuildFromFile: map the file, then run
// flatbuffers::Verifier over the whole model), with the C++ code flatc
// generates from the project's own schema (internal/schema/tflite.fbs and
// the tflite_options.fbs it includes), which has every table, field and
// union member of LiteRT's (loader/tflite's TestSchemaIsLiteRTs): this
// Verifier checks what LiteRT's does, every operator's options table
// included.
//
// Each of N loads: open, fstat, mmap the whole file, check the identifier,
// flatbuffers::Verifier over the region [0, min(size, 2 GiB - 1)), then a
// pointer to the bytes of every constant tensor (every tensor of every
// subgraph whose buffer holds bytes: Buffer.data inline, or [offset,
// offset+size) of the file in the large-model layout, checked to lie in the
// file), touching no weight; munmap, close.
//
// Modes:
//   verify  the FlatBuffer is verified and read through the mapping (page
//           faults), as LiteRT does
//   pread   verify's work, the region read as edgeload's other FlatBuffer
//           formats read theirs (package loader/internal/region): a file of
//           at most 256 KiB is read whole with pread into a buffer kept from
//           load to load (its first 4 KiB, then the rest), and verified
//           there; a larger file is verified through the mapping. The
//           constants' pointers still point into the mapping
//
// A benchmark tool for the project's files, not a loader.
//
// Build and run:
//
//   flatc --cpp -o /tmp/fbgen internal/schema/tflite.fbs internal/schema/tflite_options.fbs
//   g++ -O2 -std=c++17 -I/tmp/fbgen -o /tmp/cxxtflite bench/cxxtflite/load.cc
//   /tmp/cxxtflite verify|pread FILE [N]
//   /tmp/cxxtflite verify|pread FILE serve
//
// It prints one JSON line: {"file", "mode", "iters", "tensors",
// "median_us", "min_us", "p10_us", "p90_us"}. With serve it instead reads
// counts from stdin and answers each count N with one line of the times of
// N loads in nanoseconds (bench/cmd/pairbench drives this, interleaving it
// with loadbench -serve).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tflite_generated.h"

namespace {

double now_us() {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

// Mode is what a load does (see the modes above).
enum Mode { kVerify, kPread };

// maxVerify is the most flatbuffers::Verifier accepts (FlatBuffers are
// under 2 GiB; the large-model layout's buffers lie past them).
const uint64_t maxVerify = FLATBUFFERS_MAX_BUFFER_SIZE - 1;

// load is one load of the model in the file mapped at file (size bytes),
// its FlatBuffer read from b (the mapping itself, or a copy of the file in
// pread mode); it appends a pointer into the mapping per constant tensor to
// ptrs and returns false when the file is not one it can read.
bool load(const uint8_t *b, const uint8_t *file, uint64_t size, std::vector<const uint8_t *> &ptrs) {
	if (size < 8 || !flatbuffers::BufferHasIdentifier(b, tflitefb::ModelIdentifier())) {
		return false;
	}
	flatbuffers::Verifier v(b, std::min(size, maxVerify));
	if (!tflitefb::VerifyModelBuffer(v)) {
		return false;
	}
	const tflitefb::Model *m = tflitefb::GetModel(b);
	const auto *bufs = m->buffers();
	if (m->subgraphs() == nullptr || bufs == nullptr) {
		return m->subgraphs() != nullptr;
	}
	for (const tflitefb::SubGraph *sg : *m->subgraphs()) {
		if (sg->tensors() == nullptr) {
			continue;
		}
		for (const tflitefb::Tensor *t : *sg->tensors()) {
			uint32_t i = t->buffer();
			if (i == 0) {
				continue;
			}
			if (i >= bufs->size()) {
				return false;
			}
			const tflitefb::Buffer *buf = bufs->Get(i);
			const flatbuffers::Vector<uint8_t> *data = buf->data();
			uint64_t off = buf->offset(), n = buf->size();
			if (data != nullptr && data->size() > 0) {
				if (off > 1) {
					return false; // both inline data and an offset
				}
				ptrs.push_back(file + (data->data() - b)); // the same bytes in the mapping
			} else if (off > 1 && n > 0) {
				if (n > size || off > size - n) {
					return false;
				}
				ptrs.push_back(file + off);
			}
		}
	}
	return true;
}

// regionMax is the largest file pread mode reads into its buffer
// (edgeload's region.Max); headLen is what its first read asks for
// (region.HeadLen).
const uint64_t regionMax = 256 << 10, headLen = 4 << 10;

// readRegion reads a file of at most regionMax bytes into buf as edgeload's
// package region does (the first 4 KiB, then the rest) and returns its
// bytes; a larger file is read through the mapping m. It returns nullptr
// when a read fails.
const uint8_t *readRegion(int fd, const uint8_t *m, uint64_t size, std::vector<uint8_t> &buf) {
	if (size > regionMax) {
		return m;
	}
	if (buf.size() < regionMax) {
		buf.resize(regionMax);
	}
	uint64_t n = std::min(size, headLen);
	if (pread(fd, buf.data(), n, 0) != ssize_t(n)) {
		return nullptr;
	}
	if (size > n && pread(fd, buf.data() + n, size - n, off_t(n)) != ssize_t(size - n)) {
		return nullptr;
	}
	return buf.data();
}

// timed runs n loads of the file at path, storing each one's time in
// microseconds in t[0..n), and returns the number of constants of the last
// load, or -1 after printing why a load failed.
long timed(const char *path, Mode mode, int n, double *t, std::vector<const uint8_t *> &ptrs) {
	static std::vector<uint8_t> buf; // pread mode's region, kept from load to load
	for (int i = 0; i < n; i++) {
		double t0 = now_us();
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) != 0) {
			perror(path);
			return -1;
		}
		void *m = mmap(nullptr, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			perror("mmap");
			return -1;
		}
		const uint8_t *file = static_cast<const uint8_t *>(m), *b = file;
		if (mode == kPread && (b = readRegion(fd, file, uint64_t(st.st_size), buf)) == nullptr) {
			fprintf(stderr, "%s: reading the file failed\n", path);
			return -1;
		}
		ptrs.clear();
		if (!load(b, file, uint64_t(st.st_size), ptrs)) {
			fprintf(stderr, "%s: not a model this tool reads (the Verifier refused it)\n", path);
			return -1;
		}
		munmap(m, st.st_size);
		close(fd);
		t[i] = now_us() - t0;
	}
	return long(ptrs.size());
}

// serve is the serve protocol (bench/cmd/pairbench drives it): for each
// count N read from stdin, N loads, and one line of their times in
// nanoseconds separated by spaces; it returns at the end of stdin.
int serve(const char *path, Mode mode, std::vector<const uint8_t *> &ptrs) {
	long n;
	std::vector<double> t;
	while (scanf("%ld", &n) == 1) {
		if (n < 1 || n > 1000000) {
			fprintf(stderr, "serve: want a count from 1 to 1000000, got %ld\n", n);
			return 2;
		}
		t.resize(n);
		if (timed(path, mode, int(n), t.data(), ptrs) < 0) {
			return 1;
		}
		for (long i = 0; i < n; i++) {
			printf(i > 0 ? " %.0f" : "%.0f", t[i] * 1e3);
		}
		printf("\n");
		fflush(stdout);
	}
	return 0;
}

} // namespace

int main(int argc, char **argv) {
	Mode mode = kVerify;
	if (argc >= 3 && strcmp(argv[1], "pread") == 0) {
		mode = kPread;
	} else if (argc < 3 || strcmp(argv[1], "verify") != 0) {
		fprintf(stderr, "usage: %s verify|pread FILE [N|serve]\n", argv[0]);
		return 2;
	}
	const char *path = argv[2];
	std::vector<const uint8_t *> ptrs;
	ptrs.reserve(1 << 20);
	if (argc > 3 && strcmp(argv[3], "serve") == 0) {
		return serve(path, mode, ptrs);
	}
	int n = argc > 3 ? atoi(argv[3]) : 2000;
	if (n < 1) {
		fprintf(stderr, "%s: N must be positive\n", argv[0]);
		return 2;
	}
	std::vector<double> t(n);
	long tensors = timed(path, mode, n, t.data(), ptrs);
	if (tensors < 0) {
		return 1;
	}
	std::sort(t.begin(), t.end());
	printf("{\"file\":\"%s\",\"mode\":\"cxx-%s\",\"iters\":%d,\"tensors\":%ld,\"median_us\":%.1f,\"min_us\":%.1f,"
	       "\"p10_us\":%.1f,\"p90_us\":%.1f}\n",
	       path, argv[1], n, tensors, t[n / 2], t[0], t[n / 10], t[n * 9 / 10]);
	return 0;
}
