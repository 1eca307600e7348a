/*
 * Fuzz target for the bitbake-hashserv client (gen/gen_hashserv.c):
 * the input is everything a server sends on one connection, read by a
 * client that opens (handshake, ping), gets three taskhashes in stream mode
 * and reports two. The bytes go through a socketpair, as from a real peer,
 * then the peer shuts its side.
 *
 * Beyond "no crash": every unihash the client hands back is "" or 64
 * lower-case hex digits, and a report's answer is only accepted for its
 * own taskhash.
 * Built for libFuzzer with EQ_LIBFUZZER, else with the replay main.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <eq/gen_hashserv.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define M "eqota-payload-v1"

static const char *const th[3] = {
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
	"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc",
};

static void check_hash(const char *u, bool empty_ok)
{
	if ((!empty_ok || *u) && !eq_is_sha256_hex(u))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return 0;
	/* What fits in the socket buffer is the server's whole say. */
	(void)fcntl(sv[1], F_SETFL, O_NONBLOCK);
	size_t off = 0;
	while (off < size) {
		ssize_t w = send(sv[1], data + off, size - off, MSG_NOSIGNAL);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	shutdown(sv[1], SHUT_WR);
	struct eq_hashserv_opts o = {.timeout_ms = 200};
	struct eq_hashserv *h = NULL;
	struct eq_error e;
	if (eq_hashserv_open_fd(sv[0], &o, &h, &e) == EQ_OK) {
		char got[3][EQ_SHA256_HEX_LEN + 1];
		if (eq_hashserv_get_many(h, M, th, 3, got, &e) == EQ_OK)
			for (int i = 0; i < 3; i++)
				check_hash(got[i], true);
		struct eq_hashserv_report v[2] = {{.taskhash = th[0], .outhash = th[1], .pn = "p"},
						  {.taskhash = th[2], .outhash = th[1], .unihash = th[0]}};
		if (eq_hashserv_report_many(h, M, v, 2, &e) == EQ_OK) {
			check_hash(v[0].ret_unihash, false);
			check_hash(v[1].ret_unihash, false);
		}
		eq_hashserv_close(h);
	}
	close(sv[0]);
	close(sv[1]);
	return 0;
}
