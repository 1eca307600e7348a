/*
 * Update policy (policy.c): the hold file, the device id and the staged
 * rollout's buckets; private to eq_agent and reached by its tests.
 */
#ifndef EQ_AGENT_POLICY_H
#define EQ_AGENT_POLICY_H

#include <eq/agent.h>

/*
 * The hold `eqota hold` sets, "<data_dir>/hold": one line
 * "until=<seconds since 1970>". A missing file is no hold (*ret_until 0);
 * anything else than what eq_hold_save() writes is EQ_ERR_PARSE naming the
 * file. eq_hold_save() with @until 0 removes the file.
 */
eq_err eq_hold_load(const char *path, int64_t *ret_until, struct eq_error *err) EQ_MUST_CHECK;
eq_err eq_hold_save(const char *path, int64_t until, struct eq_error *err) EQ_MUST_CHECK;

#define EQ_DEVICE_ID_MAX 128u
/* Reads the stable device id from @path (/etc/machine-id by default):
 * surrounding white space dropped, 1..EQ_DEVICE_ID_MAX printable ASCII
 * characters without spaces; else EQ_ERR_PARSE naming the file. */
eq_err eq_device_id_read(const char *path, char out[EQ_DEVICE_ID_MAX + 1], struct eq_error *err) EQ_MUST_CHECK;

/*
 * The device's place in the staged rollout of release @number of @board
 * and @channel: 0..EQ_ROLLOUT_BUCKETS-1, from SHA-256 over the device id
 * and the release, so the same for every poll, independent between
 * releases. eq_rollout_selected() says whether a rollout of @percent
 * includes it; a device in at p % stays in at any higher percentage.
 */
#define EQ_ROLLOUT_BUCKETS 10000u
unsigned eq_rollout_bucket(const char *device_id, const char *board, const char *channel, uint64_t number);
bool eq_rollout_selected(unsigned bucket, unsigned percent);

#endif
