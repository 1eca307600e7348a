/*
 * libcurl, opened with dlopen() at the first fetcher instead of at program
 * start. `eqota daemon` waits between polls in a process that never fetches,
 * so it never maps libcurl and its TLS stack (libcrypto, gnutls, krb5, ...),
 * which alone would hold several MiB resident. Builds that link libcurl
 * statically define EQ_CURL_LINKED and call it directly.
 */
#ifndef EQ_CURL_DL_H
#define EQ_CURL_DL_H

#include <curl/curl.h>

#include <eq/common.h>

#ifndef EQ_CURL_LINKED
struct eq_curl_api {
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	void (*easy_cleanup)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
};
/* Filled by eq_curl_load(); read-only afterwards. */
extern struct eq_curl_api eq_curl;

/* curl.h's type-checking macros would call the real symbols. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_easy_init eq_curl.easy_init
#define curl_easy_setopt eq_curl.easy_setopt
#define curl_easy_perform eq_curl.easy_perform
#define curl_easy_getinfo eq_curl.easy_getinfo
#define curl_easy_cleanup eq_curl.easy_cleanup
#define curl_easy_strerror eq_curl.easy_strerror
#define curl_slist_append eq_curl.slist_append
#define curl_slist_free_all eq_curl.slist_free_all
#endif

/* Opens libcurl once (a no-op when linked); EQ_ERR_UNSUPPORTED naming the
 * library when it or a symbol is missing. */
eq_err eq_curl_load(struct eq_error *err) EQ_MUST_CHECK;

#endif
