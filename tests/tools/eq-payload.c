/*
 * eq-payload: test-only front end to the payload code, used by the
 * integration tests (never installed).
 *   eq-payload create DIR OUT     prints "<sha256> <size>"
 *   eq-payload list FILE          one line per entry
 *   eq-payload extract FILE DIR   prints the sha256 of the bytes read
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <eq/delta.h>

static int fail(const struct eq_error *e)
{
	fprintf(stderr, "eq-payload: %s (%s)\n", eq_error_msg(e), eq_err_str(e->code));
	return 1;
}

static int cmd_create(const char *dir, const char *out)
{
	struct eq_error e;
	struct eq_payload_builder *b = NULL;
	eq_error_clear(&e);
	eq_err r = eq_payload_builder_new(NULL, &b, &e);
	if (!r)
		r = eq_payload_builder_add_tree(b, dir, &e);
	int fd = -1;
	if (!r) {
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			r = eq_error_errno(&e, EQ_ERR_IO, "open '%s'", out);
	}
	uint8_t sha[EQ_SHA256_LEN];
	uint64_t size = 0;
	if (!r)
		r = eq_payload_builder_write(b, eq_fd_write, &fd, sha, &size, &e);
	if (fd >= 0 && close(fd) < 0 && !r)
		r = eq_error_errno(&e, EQ_ERR_IO, "close '%s'", out);
	eq_payload_builder_free(b);
	if (r)
		return fail(&e);
	char hex[EQ_SHA256_HEX_LEN + 1];
	eq_hex_encode(sha, sizeof(sha), hex);
	printf("%s %" PRIu64 "\n", hex, size);
	return 0;
}

static const char *type_name(enum eq_entry_type t)
{
	switch (t) {
	case EQ_ENTRY_FILE: return "file";
	case EQ_ENTRY_DIR: return "dir";
	case EQ_ENTRY_SYMLINK: return "symlink";
	case EQ_ENTRY_HARDLINK: return "hardlink";
	case EQ_ENTRY_CHR: return "chr";
	case EQ_ENTRY_BLK: return "blk";
	case EQ_ENTRY_FIFO: return "fifo";
	}
	return "?";
}

static int cmd_list(const char *file)
{
	struct eq_error e;
	eq_error_clear(&e);
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		(void)eq_error_errno(&e, EQ_ERR_IO, "open '%s'", file);
		return fail(&e);
	}
	struct eq_payload_reader *rd = NULL;
	eq_err r = eq_payload_reader_new(eq_fd_read, &fd, NULL, &rd, &e);
	while (!r) {
		const struct eq_payload_entry *ent;
		r = eq_payload_reader_next(rd, &ent, &e);
		if (r || !ent)
			break;
		printf("%-8s %04o %u/%u %" PRIu64 " %s", type_name(ent->type), ent->mode, ent->uid, ent->gid, ent->size,
		       ent->path);
		if (ent->link)
			printf(" -> %s", ent->link);
		if (ent->type == EQ_ENTRY_CHR || ent->type == EQ_ENTRY_BLK)
			printf(" [%u,%u]", ent->devmajor, ent->devminor);
		for (size_t i = 0; i < ent->n_xattrs; i++)
			printf(" {%s:%zu}", ent->xattrs[i].name, ent->xattrs[i].len);
		printf("\n");
	}
	eq_payload_reader_free(rd);
	close(fd);
	return r ? fail(&e) : 0;
}

static int cmd_extract(const char *file, const char *dir)
{
	struct eq_error e;
	eq_error_clear(&e);
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		(void)eq_error_errno(&e, EQ_ERR_IO, "open '%s'", file);
		return fail(&e);
	}
	uint8_t sha[EQ_SHA256_LEN];
	unsigned flags = geteuid() == 0 ? EQ_EXTRACT_OWNERS : 0;
	eq_err r = eq_payload_extract(eq_fd_read, &fd, dir, NULL, flags, sha, &e);
	close(fd);
	if (r)
		return fail(&e);
	char hex[EQ_SHA256_HEX_LEN + 1];
	eq_hex_encode(sha, sizeof(sha), hex);
	printf("%s\n", hex);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "create"))
		return cmd_create(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "list"))
		return cmd_list(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "extract"))
		return cmd_extract(argv[2], argv[3]);
	fprintf(stderr, "usage: eq-payload create DIR OUT | list FILE | extract FILE DIR\n");
	return 2;
}
