/*
 * The replay main shared by every fuzz target when it is not built for
 * libFuzzer: runs each file given, and each file of each folder given,
 * through LLVMFuzzerTestOneInput() once, so the corpus runs as a ctest
 * (label fuzz) with gcc and the sanitizers. A target whose corpus files need
 * a transformation (fuzz_delta's selector byte) defines
 * eq_fuzz_replay_file() itself.
 */
#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>

#include <eq/common.h>

#define REPLAY_MAX_BYTES (64u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void eq_fuzz_replay_file(const char *path, const uint8_t *data, size_t size);

__attribute__((weak)) void eq_fuzz_replay_file(const char *path, const uint8_t *data, size_t size)
{
	(void)path;
	(void)LLVMFuzzerTestOneInput(data, size);
}

static int run_file(const char *prog, const char *path, unsigned long *count)
{
	uint8_t *data = NULL;
	size_t len = 0;
	struct eq_error e;
	if (eq_file_read_all(path, REPLAY_MAX_BYTES, &data, &len, &e) != EQ_OK) {
		fprintf(stderr, "%s: %s\n", prog, eq_error_msg(&e));
		return 1;
	}
	eq_fuzz_replay_file(path, data, len);
	eq_free(data);
	(*count)++;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long count = 0;
	int failed = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "%s: cannot stat %s\n", argv[0], argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			failed |= run_file(argv[0], argv[i], &count);
			continue;
		}
		DIR *d = opendir(argv[i]);
		if (!d) {
			fprintf(stderr, "%s: cannot open %s\n", argv[0], argv[i]);
			return 1;
		}
		struct dirent *de;
		while ((de = readdir(d))) {
			char path[4096];
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			failed |= run_file(argv[0], path, &count);
		}
		closedir(d);
	}
	printf("%s: ran %lu inputs\n", argv[0], count);
	return failed || count == 0;
}
