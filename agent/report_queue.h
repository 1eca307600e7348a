/*
 * The device's report queue walk (private to eq_agent, and reached by
 * tests/fuzz/fuzz_report_queue.c): the queue folder survives power cuts
 * and a full disk, and nothing but eqota should write there, but what it
 * holds decides what leaves the device, so its names and files are read
 * as hostile input.
 */
#ifndef EQ_AGENT_REPORT_QUEUE_H
#define EQ_AGENT_REPORT_QUEUE_H

#include <stddef.h>

#include <eq/common.h>

/* Queue files: 20 decimal digits (a sequence number) and ".json". */
#define EQ_REPORT_NAME_DIGITS 20u
/* Sequence numbers start at 1 and grow by one per report: a name at or
 * above this was not written by eqota (planted, or a damaged directory
 * entry), and before the next number could wrap around to 0 the queue is
 * numbered again from 0, in its order. */
#define EQ_REPORT_SEQ_MAX (UINT64_C(1) << 62)

/* Sends one report: @body, @len bytes without its newline. *ret_status is
 * the answer's HTTP status, 0 without one. */
typedef eq_err (*eq_report_send_fn)(void *ctx, const char *body, size_t len, long *ret_status, struct eq_error *err);

/*
 * eq_report_flush() with the POST replaced by @send, for at most @max
 * reports (the queue's own bound; more than that were not queued by
 * eqota): oldest first, each removed once @send succeeded with a 2xx,
 * dropped when refused for what it is (400, 413, 415, 422); stops at any
 * other failure, leaving the rest queued. A queue entry that is not a
 * plain file (a symlink, which is not followed, a FIFO, a folder) or holds
 * more than EQ_REPORT_MAX_BYTES is dropped with a warning, never sent. @what names the destination in
 * messages. *ret_sent counts the reports sent.
 */
eq_err eq_report_drain(const char *dir, unsigned max, eq_report_send_fn send, void *ctx, const char *what,
		       size_t *ret_sent, struct eq_error *err) EQ_MUST_CHECK;

#endif
