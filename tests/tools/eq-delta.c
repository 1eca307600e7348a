/*
 * eq-delta: test and bench CLI over eq_delta's objects and deltas.
 *   eq-delta create [-l LEVEL] [-w WINDOWLOG] [-F] [-m METHODS] OLD NEW OUT
 *     (-F: no exec filter; -m: mask of methods to try, 1 = zstd, 2 = bsdiff-class)
 *   eq-delta apply [-w MAXWINDOWLOG] REF DELTA OUT
 *   eq-delta compress [-l LEVEL] IN OUT
 *   eq-delta decompress IN OUT
 *   eq-delta info DELTA
 *   eq-delta filter IN OUT | unfilter IN OUT   (whole-payload executable filter)
 *   eq-delta membound REF_SIZE WINDOWLOG
 * Writes go to OUT.tmp, renamed to OUT on success, as the installer does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <eq/delta.h>

#include "../../delta/exec_filter.h"

static eq_err fd_write(void *ctx, const void *data, size_t len, struct eq_error *err)
{
	return eq_write_all(*(int *)ctx, data, len, err);
}

static eq_err fd_read(void *ctx, void *buf, size_t len, size_t *ret_n, struct eq_error *err)
{
	for (;;) {
		ssize_t n = read(*(int *)ctx, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return eq_error_errno(err, EQ_ERR_IO, "read");
		*ret_n = (size_t)n;
		return EQ_OK;
	}
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: eq-delta create [-l LEVEL] [-w WLOG] [-F] [-Z] [-m METHODS] OLD NEW OUT | apply [-w MAXWLOG] REF DELTA OUT |\n"
		"       compress [-l LEVEL] IN OUT | decompress IN OUT | info DELTA | filter IN OUT |\n"
		"       unfilter IN OUT | membound REF_SIZE WLOG\n");
	return 2;
}

static int fail(const struct eq_error *e)
{
	fprintf(stderr, "eq-delta: %s: %s\n", eq_err_str(e->code), eq_error_msg(e));
	return 1;
}

struct out_file {
	int fd;
	char *tmp;
	const char *path;
};

static int out_open(struct out_file *o, const char *path)
{
	o->path = path;
	o->tmp = eq_asprintf("%s.tmp", path);
	o->fd = o->tmp ? open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
	if (o->fd < 0) {
		fprintf(stderr, "eq-delta: cannot create '%s': %s\n", o->tmp ? o->tmp : path, strerror(errno));
		eq_free(o->tmp);
		return -1;
	}
	return 0;
}

static int out_close(struct out_file *o, bool ok)
{
	int rc = close(o->fd);
	if (ok && rc == 0)
		rc = rename(o->tmp, o->path);
	else
		(void)unlink(o->tmp);
	eq_free(o->tmp);
	return ok && rc == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	const char *cmd = argv[1];
	struct eq_delta_params p;
	eq_delta_params_default(&p);
	struct eq_delta_limits lim;
	eq_delta_limits_default(&lim);
	int level = 19;
	optind = 2;
	int c;
	while ((c = getopt(argc, argv, "l:w:FZm:")) != -1) {
		switch (c) {
		case 'l': level = p.level = (int)strtol(optarg, NULL, 10); break;
		case 'w': p.window_log = lim.max_window_log = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'F': p.exec_filter = false; break;
		case 'Z': p.deflate = false; break;
		case 'm': p.methods = (unsigned)strtoul(optarg, NULL, 0); break;
		default: return usage();
		}
	}
	char **a = argv + optind;
	int na = argc - optind;
	struct eq_error e;
	eq_error_clear(&e);

	if (strcmp(cmd, "membound") == 0 && na == 2) {
		printf("%llu\n", (unsigned long long)eq_delta_apply_mem_bound(strtoull(a[0], NULL, 10),
									      (unsigned)strtoul(a[1], NULL, 10)));
		return 0;
	}
	if (strcmp(cmd, "info") == 0 && na == 1) {
		uint8_t *d;
		size_t len;
		struct eq_delta_info info;
		if (eq_file_read_all(a[0], (size_t)1 << 32, &d, &len, &e) || eq_delta_info_parse(d, len, &info, &e))
			return fail(&e);
		char rh[65], nh[65];
		eq_hex_encode(info.ref_sha256, 32, rh);
		eq_hex_encode(info.result_sha256, 32, nh);
		uint64_t bound = eq_delta_apply_mem_bound(info.ref_size, info.window_log);
		printf("version %u\nmethod %u\nfilter %u\nwindow_log %u\nref_size %llu\nref_sha256 %s\nresult_size %llu\n"
		       "result_sha256 %s\n",
		       info.version, info.method, info.filter, info.window_log, (unsigned long long)info.ref_size, rh,
		       (unsigned long long)info.result_size, nh);
		if ((info.filter & EQ_DELTA_FILTER_DEFLATE) && len >= EQ_DELTA_HEADER_SIZE + 56) {
			const uint8_t *pre = d + EQ_DELTA_HEADER_SIZE;
			uint64_t xref = le64(pre), xres = le64(pre + 8), n = le64(pre + 48);
			printf("expanded_ref_size %llu\nexpanded_result_size %llu\ngzip_regions %llu\n",
			       (unsigned long long)xref, (unsigned long long)xres, (unsigned long long)n);
			bound = eq_delta_apply_mem_bound_deflate(info.ref_size, xref, n, info.window_log);
		}
		printf("mem_bound %llu\n", (unsigned long long)bound);
		eq_free(d);
		return 0;
	}
	if ((strcmp(cmd, "filter") == 0 || strcmp(cmd, "unfilter") == 0) && na == 2) {
		uint8_t *d;
		size_t len;
		if (eq_file_read_all(a[0], (size_t)1 << 34, &d, &len, &e))
			return fail(&e);
		struct eq_xf_stats st;
		eq_xf_buffer(d, len, cmd[0] == 'f', EQ_XF_BRANCH | EQ_XF_DATA, &st);
		fprintf(stderr, "entries %llu x86-64 %llu arm64 %llu converted %llu\n", (unsigned long long)st.entries,
			(unsigned long long)st.elf_x86_64, (unsigned long long)st.elf_arm64,
			(unsigned long long)st.converted);
		eq_err r = eq_file_replace_atomic(a[1], d, len, 0644, &e);
		eq_free(d);
		return r ? fail(&e) : 0;
	}
	struct out_file o;
	eq_err r;
	if (strcmp(cmd, "create") == 0 && na == 3) {
		if (out_open(&o, a[2]))
			return 1;
		uint64_t size = 0;
		r = eq_delta_create(a[0], a[1], &p, fd_write, &o.fd, &size, &e);
		if (!r)
			printf("%llu\n", (unsigned long long)size);
	} else if ((strcmp(cmd, "apply") == 0 && na == 3) ||
		   ((strcmp(cmd, "compress") == 0 || strcmp(cmd, "decompress") == 0) && na == 2)) {
		const char *in_path = cmd[0] == 'a' ? a[1] : a[0];
		int in = open(in_path, O_RDONLY | O_CLOEXEC);
		if (in < 0) {
			fprintf(stderr, "eq-delta: cannot open '%s': %s\n", in_path, strerror(errno));
			return 1;
		}
		if (out_open(&o, a[na - 1])) {
			close(in);
			return 1;
		}
		if (cmd[0] == 'a')
			r = eq_delta_apply_limited(a[0], fd_read, &in, fd_write, &o.fd, NULL, &lim, &e);
		else if (cmd[0] == 'c')
			r = eq_object_compress(fd_read, &in, fd_write, &o.fd, level, &e);
		else
			r = eq_object_decompress(fd_read, &in, fd_write, &o.fd, (uint64_t)1 << 36, 0, &e);
		close(in);
	} else {
		return usage();
	}
	if (out_close(&o, r == EQ_OK) && r == EQ_OK)
		return 1;
	return r ? fail(&e) : 0;
}
