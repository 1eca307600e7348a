/*
 * What keeps a device from installing a release it may verify: a hold set
 * on the device for a maintenance window, and the staged rollout's choice
 * of devices (docs/fleet.md). The pin is a plain config value, applied in
 * agent.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <eq/agent.h>

#include "policy.h"

/* Times are capped like the manifest's, at year 9999. */
#define TIME_MAX INT64_C(253402300799)

eq_err eq_hold_load(const char *path, int64_t *ret_until, struct eq_error *err)
{
	uint8_t *d = NULL;
	size_t n = 0;
	eq_err r = eq_file_read_all(path, 64, &d, &n, err);
	if (r == EQ_ERR_NOTFOUND) {
		*ret_until = 0;
		return EQ_OK;
	}
	if (r)
		return eq_error_prefix(err, r, "hold file %s", path);
	/* Exactly what eq_hold_save() writes: "until=<seconds>\n". */
	int64_t until = 0;
	bool ok = n > 7 && memcmp(d, "until=", 6) == 0 && d[n - 1] == '\n' && n - 7 <= 12;
	for (size_t i = 6; ok && i < n - 1; i++) {
		ok = d[i] >= '0' && d[i] <= '9' && !(i == 6 && d[i] == '0' && n - 1 > 7);
		until = until * 10 + (d[i] - '0');
	}
	eq_free(d);
	if (!ok || until > TIME_MAX)
		return eq_error_set(err, EQ_ERR_PARSE,
				    "hold file %s: expected one line 'until=<seconds since 1970>' ('eqota hold --off' "
				    "removes it)",
				    path);
	*ret_until = until;
	return EQ_OK;
}

eq_err eq_hold_save(const char *path, int64_t until, struct eq_error *err)
{
	if (until <= 0) {
		if (remove(path) != 0 && errno != ENOENT)
			return eq_error_errno(err, EQ_ERR_IO, "cannot remove hold file %s", path);
		return EQ_OK;
	}
	if (until > TIME_MAX)
		return eq_error_set(err, EQ_ERR_INVAL, "hold until %" PRId64 ": after the year 9999", until);
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "until=%" PRId64 "\n", until);
	return eq_file_replace_atomic(path, buf, (size_t)n, 0644, err);
}

eq_err eq_device_id_read(const char *path, char out[EQ_DEVICE_ID_MAX + 1], struct eq_error *err)
{
	uint8_t *d = NULL;
	size_t n = 0;
	eq_err r = eq_file_read_all(path, 4096, &d, &n, err);
	if (r)
		return eq_error_prefix(err, r, "device id %s", path);
	/* machine-id(5): one line; surrounding white space is not the id. */
	size_t s = 0, e = n;
	while (s < e && (d[s] == ' ' || d[s] == '\t' || d[s] == '\n' || d[s] == '\r'))
		s++;
	while (e > s && (d[e - 1] == ' ' || d[e - 1] == '\t' || d[e - 1] == '\n' || d[e - 1] == '\r'))
		e--;
	bool ok = e > s && e - s <= EQ_DEVICE_ID_MAX;
	for (size_t i = s; ok && i < e; i++)
		ok = d[i] > 0x20 && d[i] < 0x7f;
	if (ok) {
		memcpy(out, d + s, e - s);
		out[e - s] = '\0';
	}
	eq_free(d);
	if (!ok)
		return eq_error_set(err, EQ_ERR_PARSE,
				    "device id %s: expected 1 to %u printable ASCII characters without spaces (such "
				    "as the 32 hex digits of /etc/machine-id)",
				    path, EQ_DEVICE_ID_MAX);
	return EQ_OK;
}

unsigned eq_rollout_bucket(const char *device_id, const char *board, const char *channel, uint64_t number)
{
	/* The release's identity (board, channel, number) in the hash makes
	 * the choice independent between releases, so the same devices are
	 * not always the first to take a new one; the device id makes it
	 * stable, so a device in the first 1 % stays in at 10 %. NUL bytes
	 * separate the fields: none of them contains one. */
	char num[24];
	int nl = snprintf(num, sizeof(num), "%" PRIu64, number);
	const char *parts[] = {"eqota-rollout-1", device_id, board, channel, num};
	uint8_t buf[16 + EQ_DEVICE_ID_MAX + 2 * 129 + 24 + 5];
	size_t len = 0;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t l = i == 4 ? (size_t)nl : strlen(parts[i]);
		if (len + l + 1 > sizeof(buf))
			l = sizeof(buf) - len - 1;
		memcpy(buf + len, parts[i], l);
		len += l;
		buf[len++] = 0;
	}
	uint8_t h[EQ_SHA256_LEN];
	eq_sha256(buf, len, h);
	/* 2^64 mod 10000 is far below 2^64: the bias is under 1e-15. */
	uint64_t x = 0;
	for (int i = 0; i < 8; i++)
		x = x << 8 | h[i];
	return (unsigned)(x % EQ_ROLLOUT_BUCKETS);
}

bool eq_rollout_selected(unsigned bucket, unsigned percent)
{
	return bucket < percent * (EQ_ROLLOUT_BUCKETS / 100u);
}
