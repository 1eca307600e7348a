#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <eq/agent.h>

eq_err eq_sd_notify(const char *state, struct eq_error *err)
{
	const char *name = getenv("NOTIFY_SOCKET");
	if (!name || !*name)
		return EQ_OK;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(name);
	/* Only the two forms systemd hands out; a vsock address (vsock:CID:PORT)
	 * is for virtual machines' managers, not a device's init. */
	if (name[0] != '/' && name[0] != '@')
		return eq_error_set(
			err, EQ_ERR_INVAL,
			"NOTIFY_SOCKET '%s' is neither an absolute path nor an abstract socket name ('@...')", name);
	if (len >= sizeof(sa.sun_path))
		return eq_error_set(err, EQ_ERR_INVAL, "NOTIFY_SOCKET is %zu bytes long, a socket name has at most %zu",
				    len, sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, name, len);
	socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	if (name[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract: no terminating NUL counted */
	else
		salen++;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return eq_error_errno(err, EQ_ERR_IO, "NOTIFY_SOCKET: socket");
	eq_err r = EQ_OK;
	ssize_t n;
	do
		n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (const struct sockaddr *)&sa, salen);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		r = eq_error_errno(err, EQ_ERR_IO, "cannot tell the service manager '%s' through %s", state, name);
	close(fd);
	return r;
}
