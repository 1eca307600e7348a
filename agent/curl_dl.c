#include <dlfcn.h>
#include <string.h>

#include "curl_dl.h"

#ifdef EQ_CURL_LINKED
eq_err eq_curl_load(struct eq_error *err)
{
	(void)err;
	return EQ_OK;
}
#else
/* The process-wide table of a library loaded once; written only by
 * eq_curl_load() before any fetcher exists. */
struct eq_curl_api eq_curl;

#define SONAME "libcurl.so.4"

eq_err eq_curl_load(struct eq_error *err)
{
	if (eq_curl.easy_init)
		return EQ_OK;
	void *h = dlopen(SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return eq_error_set(err, EQ_ERR_UNSUPPORTED, "cannot load %s: %s", SONAME, dlerror());
	struct eq_curl_api api = {0};
	/* dlsym returns void *; POSIX guarantees the conversion to a function
	 * pointer works, ISO C does not, hence the memcpy. */
	static const char *const names[] = {"curl_easy_init",    "curl_easy_setopt",   "curl_easy_perform",
					    "curl_easy_getinfo", "curl_easy_cleanup",  "curl_easy_strerror",
					    "curl_slist_append", "curl_slist_free_all"};
	/* cppcheck-suppress uninitvar ; the addresses of api's members, filled below */
	void (**slots[])(void) = {
		(void (**)(void))(void *)&api.easy_init,    (void (**)(void))(void *)&api.easy_setopt,
		(void (**)(void))(void *)&api.easy_perform, (void (**)(void))(void *)&api.easy_getinfo,
		(void (**)(void))(void *)&api.easy_cleanup, (void (**)(void))(void *)&api.easy_strerror,
		(void (**)(void))(void *)&api.slist_append, (void (**)(void))(void *)&api.slist_free_all,
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		void *sym = dlsym(h, names[i]);
		if (!sym) {
			dlclose(h);
			return eq_error_set(err, EQ_ERR_UNSUPPORTED, "%s has no symbol %s", SONAME, names[i]);
		}
		memcpy(slots[i], &sym, sizeof(sym));
	}
	eq_curl = api;
	return EQ_OK;
}
#endif
