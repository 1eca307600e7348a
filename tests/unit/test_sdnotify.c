/*
 * Unit tests for eq_sd_notify() (agent/sdnotify.c): the datagram reaches
 * a socket at a path and at an abstract name, nothing happens without
 * NOTIFY_SOCKET, and bad names are refused with a message naming them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "eq_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <eq/agent.h>

/* A datagram socket bound to @name ('@' = abstract); returns its fd. */
static int listener(const char *name)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(name);
	memcpy(sa.sun_path, name, len);
	socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	if (name[0] == '@')
		sa.sun_path[0] = '\0';
	else
		salen++;
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, salen), 0);
	return fd;
}

static void expect_datagram(int fd, const char *want)
{
	char buf[512];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, want);
}

static void test_path_socket(void **state)
{
	(void)state;
	char dir[] = "/tmp/eq-sdnotify.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/notify", dir);
	int fd = listener(path);
	setenv("NOTIFY_SOCKET", path, 1);
	struct eq_error e;
	assert_int_equal(eq_sd_notify("READY=1\nSTATUS=polling", &e), EQ_OK);
	expect_datagram(fd, "READY=1\nSTATUS=polling");
	close(fd);
	unlink(path);
	rmdir(dir);
	/* Nobody listens any more: an error naming the socket. */
	assert_int_equal(eq_sd_notify("STOPPING=1", &e), EQ_ERR_IO);
	assert_non_null(strstr(eq_error_msg(&e), path));
	unsetenv("NOTIFY_SOCKET");
}

static void test_abstract_socket(void **state)
{
	(void)state;
	char name[64];
	snprintf(name, sizeof(name), "@eq-sdnotify-test-%ld", (long)getpid());
	int fd = listener(name);
	setenv("NOTIFY_SOCKET", name, 1);
	struct eq_error e;
	assert_int_equal(eq_sd_notify("STOPPING=1", &e), EQ_OK);
	expect_datagram(fd, "STOPPING=1");
	close(fd);
	unsetenv("NOTIFY_SOCKET");
}

static void test_unset_and_bad(void **state)
{
	(void)state;
	struct eq_error e;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(eq_sd_notify("READY=1", &e), EQ_OK);
	setenv("NOTIFY_SOCKET", "", 1);
	assert_int_equal(eq_sd_notify("READY=1", &e), EQ_OK);
	setenv("NOTIFY_SOCKET", "run/notify", 1);
	assert_int_equal(eq_sd_notify("READY=1", &e), EQ_ERR_INVAL);
	assert_non_null(strstr(eq_error_msg(&e), "'run/notify' is neither an absolute path"));
	setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
	assert_int_equal(eq_sd_notify("READY=1", &e), EQ_ERR_INVAL);
	char longname[200];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[0] = '/';
	longname[sizeof(longname) - 1] = '\0';
	setenv("NOTIFY_SOCKET", longname, 1);
	assert_int_equal(eq_sd_notify("READY=1", &e), EQ_ERR_INVAL);
	assert_non_null(strstr(eq_error_msg(&e), "NOTIFY_SOCKET is 199 bytes long"));
	unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_socket),
		cmocka_unit_test(test_abstract_socket),
		cmocka_unit_test(test_unset_and_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
