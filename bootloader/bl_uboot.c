/*
 * The "uboot" backend: the boot variables in a U-Boot environment, read and
 * written with libubootenv (the library behind fw_printenv and fw_setenv)
 * where a standard fw_env.config says (bl->path, default /etc/fw_env.config).
 *
 * Storage model. fw_env.config lists one or two copies of the environment,
 * "DEVICE OFFSET SIZE" per line; the device may be a file, a partition, an
 * MTD or a UBI volume. A copy is SIZE bytes: the CRC32 of the rest, with two
 * copies a flag byte, then NAME=value strings and an empty one: the layout
 * of U-Boot's `env import -c`/`env export -c` and of mkenvimage.
 * libubootenv 0.3.2 (src/uboot_env.c) reads both copies, drops those whose
 * CRC fails and of two good ones takes the newer by the flag, as U-Boot
 * does: a counter on files, block devices, NAND and UBI (0 after 255 is
 * newer), active/obsolete on NOR flash. A write builds the whole
 * environment, writes it to the OTHER copy with the next flag and fsyncs
 * it; the copy it was read from is not touched (on NOR it is marked
 * obsolete afterwards).
 *
 * Power cuts. With two copies every write is atomic: until the new copy is
 * completely on the device it fails its CRC (or still holds older content)
 * and the old copy stays the one chosen; once it is complete, its flag makes
 * it the newer one. A torn write loses the update, never the environment.
 * With one copy the write is in place, and a cut in the middle leaves no
 * valid environment (EQ_ERR_NOTFOUND): boards should configure two copies.
 *
 * No valid copy (a blank or erased device, or both copies corrupt) is
 * EQ_ERR_NOTFOUND, so eq_bl_mark_good() writes a fresh environment (that is
 * how provisioning initialises an erased partition) while the transitions
 * that need a state refuse. Other variables are lost then, as with
 * fw_setenv: there was nothing readable to keep.
 *
 * U-Boot deletes a variable whose value is empty when it imports an
 * environment (lib/hashtable.c, himport_r), so an empty BOOT_ORDER would
 * reach the boot script as a missing one, which scripts default to "A B":
 * a device whose every slot was rejected would boot them again. An empty
 * order is therefore stored as one space: U-Boot keeps it, `for s in
 * ${BOOT_ORDER}` sees no slot, and bl.c reads it as the empty order. An empty
 * BOOT_TRIAL is stored empty; missing and empty both mean no trial.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libuboot.h>

#include "bl_priv.h"

/* fw_env.config files are a few lines; anything larger is not one. */
#define CONFIG_MAX (64u * 1024u)
/*
 * libubootenv serialises fw_printenv, fw_setenv and us with flock() on this
 * file, from libuboot_open() to libuboot_close(). Version 0.3.2 silently goes
 * on unlocked when it cannot create the file, and an unlocked read-change-
 * write can undo another writer's change, so writes check first and refuse.
 * Reads go on: with two copies, one being rewritten fails its CRC and the
 * other is read.
 */
#define LOCK_FILE "/var/lock/fw_printenv.lock"

struct env_copy {
	char dev[DEVNAME_MAX_LENGTH];
	long long offset;
	size_t size;
};

struct uboot {
	struct uboot_ctx *ctx;
	unsigned n_copies;
	struct env_copy copy[2];
	char where[EQ_ERROR_MSG_MAX / 2]; /* the copies, for messages */
};

/*
 * One line of fw_env.config, with libubootenv's grammar ("%s %lli %zx", a
 * '#' line is a comment). It silently skips lines it cannot parse and copies
 * after the second, so a typo would quietly cost the redundant copy; here
 * they are errors naming the line.
 */
static eq_err config_line(const char *path, unsigned no, const char *line, struct uboot *u, struct eq_error *err)
{
	char q[48];
	const char *s = line + strspn(line, " \t\r");
	if (!*s || *s == '#')
		return EQ_OK;
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 && *c != '\t' && *c != '\r')
			return eq_error_set(err, EQ_ERR_PARSE, "%s: line %u: binary data (byte 0x%02x)", path, no,
					    (unsigned char)*c);
	struct env_copy c = {.size = 0};
	/* fw_env.config is the device's own root-owned configuration, read
	 * the way libubootenv reads it. */
	// NOLINTNEXTLINE(cert-err34-c)
	if (sscanf(s, "%255s %lli %zx", c.dev, &c.offset, &c.size) < 3)
		return eq_error_set(err, EQ_ERR_PARSE, "%s: line %u: expected 'DEVICE OFFSET SIZE', got '%s'", path, no,
				    eq_quote(q, sizeof(q), s));
	if (c.size == 0)
		return eq_error_set(err, EQ_ERR_PARSE, "%s: line %u: environment size 0", path, no);
	if (u->n_copies == 2)
		return eq_error_set(err, EQ_ERR_PARSE, "%s: line %u: a third environment copy (at most two)", path, no);
	if (u->n_copies == 1 && c.size != u->copy[0].size)
		return eq_error_set(err, EQ_ERR_PARSE, "%s: line %u: size 0x%zx differs from the first copy's 0x%zx",
				    path, no, c.size, u->copy[0].size);
	/* Two copies in one place would make every write an in-place one. */
	if (u->n_copies == 1 && strcmp(c.dev, u->copy[0].dev) == 0 &&
	    (c.offset > u->copy[0].offset ? c.offset - u->copy[0].offset : u->copy[0].offset - c.offset) <
		    (long long)c.size)
		return eq_error_set(err, EQ_ERR_PARSE, "%s: line %u: the second copy overlaps the first", path, no);
	/* UBI devices may name a volume after a ':'; the rest is a path. */
	char dev[DEVNAME_MAX_LENGTH];
	snprintf(dev, sizeof(dev), "%s", c.dev);
	if (strncmp(dev, "/dev/ubi", 8) == 0 && strchr(dev, ':'))
		*strchr(dev, ':') = '\0';
	struct stat st;
	if (stat(dev, &st) < 0)
		return eq_error_errno(err, EQ_ERR_IO, "%s: line %u: environment device '%s'", path, no, dev);
	u->copy[u->n_copies++] = c;
	return EQ_OK;
}

static eq_err read_config(const char *path, struct uboot *u, struct eq_error *err)
{
	uint8_t *data;
	size_t len;
	struct eq_error e;
	eq_err r = eq_file_read_all(path, CONFIG_MAX, &data, &len, &e);
	if (r)
		return eq_error_set(err,
				    r == EQ_ERR_LIMIT   ? EQ_ERR_PARSE
				    : r == EQ_ERR_NOMEM ? r
							: EQ_ERR_IO,
				    "U-Boot environment config (fw_env.config): %s", e.msg);
	char *p = (char *)data, *end = p + len;
	for (unsigned no = 1; !r && p < end; no++) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		if (nl)
			*nl = '\0';
		if (strlen(p) != (size_t)((nl ? nl : end) - p))
			r = eq_error_set(err, EQ_ERR_PARSE, "%s: line %u: binary data (byte 0x00)", path, no);
		else
			r = config_line(path, no, p, u, err);
		p = nl ? nl + 1 : end;
	}
	eq_free(data);
	if (!r && u->n_copies == 0)
		r = eq_error_set(err, EQ_ERR_PARSE,
				 "%s: no environment copy (expected lines 'DEVICE OFFSET SIZE', e.g. '/dev/mmcblk0 "
				 "0x3f0000 0x4000')",
				 path);
	if (r)
		return r;
	size_t off = 0;
	for (unsigned i = 0; i < u->n_copies && off < sizeof(u->where); i++) {
		/* config_line() let no control characters through */
		const struct env_copy *c = &u->copy[i];
		off += (size_t)snprintf(u->where + off, sizeof(u->where) - off, "%s'%s' at %s0x%llx", i ? " and " : "",
					c->dev, c->offset < 0 ? "-" : "",
					(unsigned long long)(c->offset < 0 ? -c->offset : c->offset));
	}
	return EQ_OK;
}

static eq_err uboot_open(struct eq_bl *bl, struct eq_error *err)
{
	struct uboot *u = eq_calloc(1, sizeof(*u));
	if (!u)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	bl->priv = u;
	eq_err r = read_config(bl->path, u, err);
	if (r)
		return r;
	int ret = libuboot_initialize(&u->ctx, NULL);
	if (ret < 0)
		return eq_error_set(err, ret == -ENOMEM ? EQ_ERR_NOMEM : EQ_ERR_IO, "libubootenv: %s", strerror(-ret));
	/* Our own reading accepted the file; what is left is the device check
	 * (e.g. an MTD device that is no NOR or NAND flash). */
	ret = libuboot_read_config(u->ctx, bl->path);
	if (ret < 0)
		return eq_error_set(err, ret == -ENOMEM ? EQ_ERR_NOMEM : EQ_ERR_PARSE,
				    "%s: libubootenv rejects it (devices %s): %s", bl->path, u->where, strerror(-ret));
	return EQ_OK;
}

static void uboot_close(struct eq_bl *bl)
{
	struct uboot *u = bl->priv;
	if (!u)
		return;
	if (u->ctx)
		libuboot_exit(u->ctx);
	eq_free(u);
	bl->priv = NULL;
}

/*
 * libubootenv 0.3.2 walks the variables of a copy whose CRC holds with
 * strlen() and strdup() and no bound, so a copy whose strings are not ended
 * by an empty one inside it makes it read past its buffer (found by
 * fuzz_uboot_env; such a copy can only come from a broken or hostile
 * writer, never from a torn write, whose CRC fails). Such a copy is refused
 * here before libubootenv reads it. A copy that cannot be read or whose CRC
 * fails is left to libubootenv, which skips it.
 */
static eq_err check_copies_ended(const struct eq_bl *bl, const struct uboot *u, struct eq_error *err)
{
	size_t hdr = u->n_copies == 2 ? 5u : 4u;
	for (unsigned i = 0; i < u->n_copies; i++) {
		const struct env_copy *c = &u->copy[i];
		if (c->size <= hdr || c->offset < 0)
			continue;
		int fd = open(c->dev, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		uint8_t *b = eq_malloc(c->size);
		if (!b) {
			close(fd);
			return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
		}
		ssize_t got = pread(fd, b, c->size, (off_t)c->offset);
		close(fd);
		bool ended = true;
		if (got == (ssize_t)c->size && ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
						(uint32_t)b[3] << 24) == eq_crc32(b + hdr, c->size - hdr)) {
			ended = false;
			for (const uint8_t *p = b + hdr, *end = b + c->size; p < end;) {
				if (*p == 0) {
					ended = true;
					break;
				}
				const uint8_t *nul = memchr(p, 0, (size_t)(end - p));
				if (!nul)
					break;
				p = nul + 1;
			}
		}
		eq_free(b);
		if (!ended)
			return eq_error_set(
				err, EQ_ERR_PARSE,
				"%s: copy %u (%s at offset %lld): its CRC holds but its variables do not end "
				"with an empty one; refused (erase the environment to start afresh)",
				bl->path, i + 1, c->dev, c->offset);
	}
	return EQ_OK;
}

/* libuboot_open(): takes the lock and reads the valid copy. Whatever it
 * returns, the caller calls libuboot_close(), which drops lock and data. */
static eq_err load(struct eq_bl *bl, struct eq_error *err)
{
	struct uboot *u = bl->priv;
	eq_err r = check_copies_ended(bl, u, err);
	if (r)
		return r;
	int ret = libuboot_open(u->ctx);
	if (ret == 0)
		return EQ_OK;
	if (ret == -ENODATA)
		return eq_error_set(
			err, EQ_ERR_NOTFOUND, "%s: no valid environment: %s (%s; a blank or erased device reads so)",
			bl->path, u->n_copies == 2 ? "both copies fail their CRC" : "the copy fails its CRC", u->where);
	if (ret == -ENOMEM)
		return eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	return eq_error_set(err, EQ_ERR_IO,
			    "%s: cannot read the environment at %s: %s (a device unreadable or shorter than offset "
			    "+ size?)",
			    bl->path, u->where, strerror(-ret));
}

static eq_err uboot_get_vars(struct eq_bl *bl, struct eq_bl_vars *ret, struct eq_error *err)
{
	struct uboot *u = bl->priv;
	eq_err r = load(bl, err);
	for (int i = 0; !r && i < EQ_BL_VAR__COUNT; i++) {
		/* libubootenv's copy is malloc'ed; ours comes from eq_base so
		 * eq_bl_vars_done() owns it. */
		char *v = libuboot_get_env(u->ctx, eq_bl_var_name(bl, (enum eq_bl_var)i));
		if (!v)
			continue;
		ret->val[i] = eq_strdup(v);
		free(v);
		if (!ret->val[i])
			r = eq_error_set(err, EQ_ERR_NOMEM, "out of memory");
	}
	libuboot_close(u->ctx);
	if (r)
		eq_bl_vars_done(ret);
	return r;
}

static eq_err check_lock(struct eq_error *err)
{
	int fd = open(LOCK_FILE, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0) {
		int e = errno;
		eq_error_set(err, EQ_ERR_IO,
			     "cannot create libubootenv's lock file '%s': %s; refusing to write the environment "
			     "unlocked (fw_setenv and eqota could undo each other's changes): /var/lock must be a "
			     "writable directory",
			     LOCK_FILE, strerror(e));
		if (err)
			err->sys_errno = e;
		return EQ_ERR_IO;
	}
	close(fd);
	return EQ_OK;
}

/* libuboot_env_store() reports variables that do not fit as -ENOMEM (and
 * leaks its buffer then); checking first names the real reason. */
static eq_err check_fits(const struct eq_bl *bl, struct eq_error *err)
{
	const struct uboot *u = bl->priv;
	size_t need = 1; /* the empty string that ends the list */
	for (void *e = libuboot_iterator(u->ctx, NULL); e; e = libuboot_iterator(u->ctx, e))
		need += strlen(libuboot_getname(e)) + strlen(libuboot_getvalue(e)) + 2;
	size_t room = u->copy[0].size - (u->n_copies == 2 ? 5u : 4u);
	if (u->copy[0].size < 5 || need > room)
		return eq_error_set(err, EQ_ERR_LIMIT, "%s: the variables need %zu bytes, the environment holds %zu",
				    bl->path, need, u->copy[0].size < 5 ? 0 : room);
	return EQ_OK;
}

static eq_err uboot_set_vars(struct eq_bl *bl, const struct eq_bl_vars *vars, struct eq_error *err)
{
	struct uboot *u = bl->priv;
	eq_err r = check_lock(err);
	if (r)
		return r;
	struct eq_error lerr;
	r = load(bl, &lerr);
	if (r == EQ_ERR_NOTFOUND)
		r = EQ_OK; /* no valid copy: a fresh environment */
	else if (r && err)
		*err = lerr; /* never write over what could not be read */
	for (int i = 0; !r && i < EQ_BL_VAR__COUNT; i++) {
		const char *name = eq_bl_var_name(bl, (enum eq_bl_var)i);
		const char *v = vars->val[i] ? vars->val[i] : "";
		if (!*v && i == EQ_BL_VAR_ORDER)
			v = " "; /* see the top of the file */
		int ret = libuboot_set_env(u->ctx, name, v);
		if (ret < 0)
			r = eq_error_set(err, ret == -ENOMEM ? EQ_ERR_NOMEM : EQ_ERR_IO, "%s: cannot set %s: %s",
					 bl->path, name, strerror(-ret));
	}
	if (!r)
		r = check_fits(bl, err);
	if (!r) {
		int ret = libuboot_env_store(u->ctx);
		if (ret != 0)
			r = eq_error_set(err, EQ_ERR_IO, "%s: cannot write the environment at %s: %s", bl->path,
					 u->where, ret < 0 && ret != -1 ? strerror(-ret) : "write failed");
	}
	libuboot_close(u->ctx);
	return r;
}

const struct eq_bl_ops eq_bl_uboot_ops = {
	.name = "uboot",
	.default_path = "/etc/fw_env.config",
	.open = uboot_open,
	.close = uboot_close,
	.get_vars = uboot_get_vars,
	.set_vars = uboot_set_vars,
};
