// A C++ mapping loader of .pte programs, for comparing edgeload on this
// machine with a loader doing the work of ExecuTorch's C++ loader
// (Program::load over MmapDataLoader): that work, done with the
// C++ code flatc generates from the project's own schema
// (internal/schema/program.fbs). Each of N loads: open, fstat, mmap the
// whole file, check the headers, then a pointer to the bytes of every
// constant tensor (its size from its shape and scalar type, its offset from
// constant_segment.offsets, checked to lie in its segment), touching no
// weight (the legacy constant_buffer's storage for programs without a
// constant segment; external tensors are skipped: their data is in a .ptd);
// munmap, close. In modes minimal and verify the program's FlatBuffer is
// read through the mapping (page faults), as a mapping loader does.
//
// Modes:
//   minimal  the headers and the file identifier only: the FlatBuffer is
//            trusted, as by ExecuTorch's default (minimal) verification
//   verify   the same after flatbuffers::Verifier has checked the whole
//            program (every table, vector, string and offset in bounds):
//            structural verification in C++, a part of what edgeload's
//            Open checks
//   pread    verify's work, the headers and the FlatBuffer region read as
//            edgeload reads them (package loader/internal/region): the
//            first 4 KiB with pread into a buffer kept from load to load,
//            then the rest of the region [0, program_size) with a second
//            pread when it is longer (a region over 256 KiB is read through
//            the mapping, as edgeload reads it in place); the constants'
//            pointers still point into the mapping. No page of the mapping
//            is touched, so edgeload and this mode make the same system
//            calls but for the Go runtime's, and compare CPU work alone
//
// A benchmark tool for the project's generated files, not a loader: in
// minimal mode a malformed FlatBuffer is read unchecked.
//
// Build and run (bench/run.sh does this):
//
//   flatc --cpp -o /tmp/fbgen internal/schema/program.fbs
//   g++ -O2 -std=c++17 -I/tmp/fbgen -o /tmp/cxxload bench/cxxload/load.cc
//   /tmp/cxxload minimal|verify|pread FILE [N]
//   /tmp/cxxload minimal|verify|pread FILE serve
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

#include "program_generated.h"

namespace {

double now_us() {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

uint32_t le32(const uint8_t *p) {
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

uint64_t le64(const uint8_t *p) {
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

// elemSize is the element size of an ExecuTorch ScalarType (FORMATS.md), 0
// for the reserved and unknown ones.
int elemSize(int8_t st) {
	switch (st) {
	case 0: case 1: case 11: case 12: case 13: case 16: case 17:
	case 23: case 24: case 25: case 26:
		return 1;
	case 2: case 5: case 15: case 22: case 27:
		return 2;
	case 3: case 6: case 14: case 28:
		return 4;
	case 4: case 7: case 29:
		return 8;
	}
	return 0;
}

// Mode is what a load does (see the modes above).
enum Mode { kMinimal, kVerify, kPread };

// regionLen returns the program_size the headers in b (n bytes of a file of
// size bytes) declare, or the file size without an extended header; 0 when
// the headers are bad.
uint64_t regionLen(const uint8_t *b, uint64_t n, uint64_t size) {
	if (n < 8 || !flatbuffers::BufferHasIdentifier(b, ptefb::ProgramIdentifier())) {
		return 0;
	}
	if (n >= 32 && memcmp(b + 8, "eh00", 4) == 0) {
		if (le32(b + 12) < 24) {
			return 0;
		}
		uint64_t progSize = le64(b + 16), segBase = le64(b + 24);
		if (progSize > size || segBase > size || progSize < 8) {
			return 0;
		}
		return progSize;
	}
	return size;
}

// load is one load of the program in the file mapped at file (size bytes),
// its FlatBuffer region read from b (the mapping itself, or a copy of the
// region [0, program_size) in pread mode); it appends a pointer into the
// mapping per constant tensor to ptrs and returns false when the file is
// not one it can read.
bool load(const uint8_t *b, const uint8_t *file, uint64_t size, bool verify, std::vector<const uint8_t *> &ptrs) {
	if (size < 8 || !flatbuffers::BufferHasIdentifier(b, ptefb::ProgramIdentifier())) {
		return false;
	}
	uint64_t progSize = size, segBase = 0;
	if (size >= 32 && memcmp(b + 8, "eh00", 4) == 0) {
		if (le32(b + 12) < 24) {
			return false;
		}
		progSize = le64(b + 16), segBase = le64(b + 24);
		if (progSize > size || segBase > size) {
			return false;
		}
	}
	if (verify) {
		flatbuffers::Verifier v(b, progSize);
		if (!ptefb::VerifyProgramBuffer(v)) {
			return false;
		}
	}
	const ptefb::Program *p = ptefb::GetProgram(b);
	const ptefb::SubsegmentOffsets *cs = p->constant_segment();
	const uint8_t *seg = nullptr;
	uint64_t segLen = 0;
	const flatbuffers::Vector<uint64_t> *offs = nullptr;
	if (cs != nullptr && cs->offsets() != nullptr && cs->offsets()->size() > 0 && p->segments() != nullptr) {
		if (cs->segment_index() >= p->segments()->size()) {
			return false;
		}
		const ptefb::DataSegment *s = p->segments()->Get(cs->segment_index());
		if (s->offset() > size - segBase || s->size() > size - segBase - s->offset()) {
			return false;
		}
		seg = file + segBase + s->offset(), segLen = s->size(), offs = cs->offsets();
	}
	if (p->execution_plan() == nullptr) {
		return true;
	}
	for (const ptefb::ExecutionPlan *plan : *p->execution_plan()) {
		if (plan->values() == nullptr) {
			continue;
		}
		for (const ptefb::EValue *v : *plan->values()) {
			const ptefb::Tensor *t = v->val_as_Tensor();
			if (t == nullptr || t->data_buffer_idx() == 0 || t->allocation_info() != nullptr) {
				continue;
			}
			// External data lives in a .ptd, resolved by name later.
			if (t->extra_tensor_info() != nullptr && t->extra_tensor_info()->location() == 1) {
				continue;
			}
			uint64_t n = elemSize(t->scalar_type());
			const flatbuffers::Vector<uint8_t> *legacy = nullptr;
			if (offs == nullptr && p->constant_buffer() != nullptr && t->data_buffer_idx() < p->constant_buffer()->size()) {
				legacy = p->constant_buffer()->Get(t->data_buffer_idx())->storage();
			}
			if (n == 0 || (legacy == nullptr && (offs == nullptr || t->data_buffer_idx() >= offs->size()))) {
				return false;
			}
			if (t->sizes() != nullptr) {
				for (int32_t d : *t->sizes()) {
					if (d < 0) {
						return false;
					}
					n *= uint64_t(d); // the generated shapes do not overflow
				}
			}
			if (legacy != nullptr) { // the legacy inline constant_buffer
				if (n > legacy->size()) {
					return false;
				}
				ptrs.push_back(file + (legacy->data() - b)); // the same bytes in the mapping
				continue;
			}
			uint64_t off = offs->Get(t->data_buffer_idx());
			if (off > segLen || n > segLen - off) {
				return false;
			}
			ptrs.push_back(seg + off);
		}
	}
	return true;
}

} // namespace

// regionMax is the largest region pread mode reads into its buffer
// (edgeload's region.Max); headLen is what its first read asks for
// (region.HeadLen).
const uint64_t regionMax = 256 << 10, headLen = 4 << 10;

// readRegion reads the headers and the FlatBuffer region of fd (size bytes,
// mapped at m) as edgeload does: the first min(4 KiB, size) bytes into buf,
// then the rest of [0, program_size) when it is longer. It returns the
// region's bytes (buf's, or the mapping's for a region over regionMax), or
// nullptr.
const uint8_t *readRegion(int fd, const uint8_t *m, uint64_t size, std::vector<uint8_t> &buf) {
	uint64_t n = std::min(size, headLen);
	if (buf.size() < n) {
		buf.resize(std::max<uint64_t>(n, 64 << 10));
	}
	if (pread(fd, buf.data(), n, 0) != ssize_t(n)) {
		return nullptr;
	}
	uint64_t len = regionLen(buf.data(), n, size);
	if (len == 0) {
		return nullptr;
	}
	if (len <= n) {
		return buf.data();
	}
	if (len > regionMax) {
		return m;
	}
	if (buf.size() < len) {
		std::vector<uint8_t> big(std::max<uint64_t>(len, 64 << 10));
		memcpy(big.data(), buf.data(), n);
		buf.swap(big);
	}
	if (pread(fd, buf.data() + n, len - n, off_t(n)) != ssize_t(len - n)) {
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
			fprintf(stderr, "%s: not a program this tool reads\n", path);
			return -1;
		}
		ptrs.clear();
		if (!load(b, file, uint64_t(st.st_size), mode != kMinimal, ptrs)) {
			fprintf(stderr, "%s: not a program this tool reads\n", path);
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

int main(int argc, char **argv) {
	Mode mode = kMinimal;
	if (argc >= 3 && strcmp(argv[1], "verify") == 0) {
		mode = kVerify;
	} else if (argc >= 3 && strcmp(argv[1], "pread") == 0) {
		mode = kPread;
	} else if (argc < 3 || strcmp(argv[1], "minimal") != 0) {
		fprintf(stderr, "usage: %s minimal|verify|pread FILE [N|serve]\n", argv[0]);
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
