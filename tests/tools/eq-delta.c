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
#include "../../delta/gz_puff.h"

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

static int fail(const struct eq_error *e);

/* gzstat: gzip files of a payload, by content hash. */
struct gz_file {
	uint8_t sha[EQ_SHA256_LEN];
	uint64_t start, size;
};

struct gz_list {
	const uint8_t *data;
	struct gz_file *f;
	size_t n, cap;
};

static eq_err gz_collect(void *ctx, uint64_t start, uint64_t size, struct eq_error *err)
{
	struct gz_list *l = ctx;
	const uint8_t *d = l->data + start;
	if (size < 3 || d[0] != 0x1f || d[1] != 0x8b || d[2] != 8)
		return EQ_OK;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->f = eq_realloc(l->f, l->cap * sizeof(*l->f));
		if (!l->f)
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	}
	struct gz_file *f = &l->f[l->n++];
	eq_sha256(d, (size_t)size, f->sha);
	f->start = start;
	f->size = size;
	return EQ_OK;
}

/* Changed gzip files of NEW (content not in OLD) and how many
 * eq_gzx_expand() puffs, with the reasons for the rest. */
static int gzstat(const char *old_path, const char *new_path, struct eq_error *e)
{
	uint8_t *od, *nd;
	size_t ol, nl;
	struct gz_list o = {0}, n = {0};
	if (eq_file_read_all(old_path, (size_t)1 << 34, &od, &ol, e) ||
	    eq_file_read_all(new_path, (size_t)1 << 34, &nd, &nl, e))
		return fail(e);
	o.data = od;
	n.data = nd;
	if (eq_xf_each_file(od, ol, gz_collect, &o, e) || eq_xf_each_file(nd, nl, gz_collect, &n, e))
		return fail(e);
	unsigned long long changed = 0, reproduced = 0, cbytes = 0, rbytes = 0;
	const char *whys[16];
	unsigned long long why_n[16] = {0};
	size_t nwhy = 0;
	for (size_t i = 0; i < n.n; i++) {
		bool same = false;
		for (size_t j = 0; j < o.n && !same; j++)
			same = memcmp(n.f[i].sha, o.f[j].sha, EQ_SHA256_LEN) == 0;
		if (same)
			continue;
		changed++;
		cbytes += n.f[i].size;
		const char *why = NULL;
		if (eq_puff_check(nd + n.f[i].start, (size_t)n.f[i].size, &why)) {
			reproduced++;
			rbytes += n.f[i].size;
			continue;
		}
		size_t k = 0;
		while (k < nwhy && strcmp(whys[k], why) != 0)
			k++;
		if (k == nwhy && nwhy < 16)
			whys[nwhy++] = why;
		if (k < 16)
			why_n[k]++;
	}
	printf("gz_files %zu\ngz_changed %llu\ngz_changed_bytes %llu\ngz_reproduced %llu\ngz_reproduced_bytes %llu\n",
	       n.n, changed, cbytes, reproduced, rbytes);
	for (size_t k = 0; k < nwhy; k++)
		printf("not_reproduced %llu %s\n", why_n[k], whys[k]);
	eq_free(o.f);
	eq_free(n.f);
	eq_free(od);
	eq_free(nd);
	return 0;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: eq-delta create [-l LEVEL] [-w WLOG] [-F] [-Z] [-W MAXWLOG] [-m METHODS] [-T THREADS] OLD NEW OUT | apply [-w MAXWLOG] REF DELTA OUT |\n"
		"       compress [-l LEVEL] IN OUT | decompress IN OUT | info DELTA | filter IN OUT |\n"
		"       unfilter IN OUT | membound REF_SIZE WLOG | gzstat OLD NEW\n");
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
	/* Each candidate's size, for tuning the trials. */
	if (getenv("EQ_DELTA_DEBUG"))
		eq_log_set_level(EQ_LOG_DEBUG);
	const char *cmd = argv[1];
	struct eq_delta_params p;
	eq_delta_params_default(&p);
	struct eq_delta_limits lim;
	eq_delta_limits_default(&lim);
	int level = 19;
	optind = 2;
	int c;
	while ((c = getopt(argc, argv, "l:w:W:FZm:T:")) != -1) {
		switch (c) {
		case 'l': level = p.level = (int)strtol(optarg, NULL, 10); break;
		case 'w': p.window_log = lim.max_window_log = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'F': p.exec_filter = false; break;
		case 'Z': p.deflate = false; break;
		case 'W': p.max_window_log = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'm': p.methods = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'T': p.threads = (unsigned)strtoul(optarg, NULL, 10); break;
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
			uint64_t xref = le64(pre), xres = le64(pre + 8), n = le64(pre + 48) & 0xffffffffu;
			printf("expanded_ref_size %llu\nexpanded_result_size %llu\ngzip_regions %llu\n",
			       (unsigned long long)xref, (unsigned long long)xres, (unsigned long long)n);
			bound = eq_delta_apply_mem_bound_deflate(info.ref_size, xref, n, info.window_log);
		}
		printf("mem_bound %llu\n", (unsigned long long)bound);
		eq_free(d);
		return 0;
	}
	if (strcmp(cmd, "gzstat") == 0 && na == 2)
		return gzstat(a[0], a[1], &e);
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
			r = eq_object_compress(fd_read, &in, EQ_OBJECT_SIZE_UNKNOWN, fd_write, &o.fd, level, &e);
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
